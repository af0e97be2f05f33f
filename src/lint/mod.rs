//! Checks over the whole merged topology: references between objects, what
//! the broker would refuse, and the rules (`rules.rs`) for what it would
//! accept and quietly do otherwise than the files mean. Each finding has a
//! stable code; a rule's finding takes the level the project sets
//! (`[lint]`), or is allowed by an exception on its object (`lint_allow`).

mod access;
mod dead_letters;
mod exchanges;
pub mod live;
mod live_services;
mod policies;
mod queues;
mod references;
pub mod rules;
mod services;
mod settings;
pub(crate) mod view;

use view::View;

pub use settings::{LintSettings, unknown_rule};

use std::collections::BTreeMap;

use crate::diagnostic::Diagnostic;
use crate::model::{ObjectKey, Topology};
use crate::routing::Version;
use crate::source::{Location, Locations};

/// What the checks found: the findings to show, and those an exception
/// allows (shown by `lint --format json`, so suppressions stay visible).
#[derive(Debug, Clone, Default)]
pub struct Findings {
    pub shown: Vec<Diagnostic>,
    pub allowed: Vec<Allowed>,
}

/// A finding an exception allows, and where that exception is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allowed {
    pub finding: Diagnostic,
    pub by: Location,
}

impl Findings {
    /// Only the findings of checks that are not rules: for files with
    /// errors, which are not what they mean. The rules would judge the
    /// topology without the objects that failed (an exchange whose one
    /// binding did not parse, as routing nothing).
    pub fn without_rules(mut self) -> Findings {
        self.shown.retain(|d| rules::rule_of(d.code).is_none());
        self.allowed.clear();
        self
    }

    fn add(&mut self, other: Findings) {
        self.shown.extend(other.shown);
        self.allowed.extend(other.allowed);
    }
}

/// Every finding about `topology`.
pub fn check(topology: &Topology, locations: &Locations, settings: &LintSettings) -> Findings {
    check_for(topology, locations, settings, None)
}

/// [`check`] for a broker of `version` (major, minor): the rules whose
/// finding the version makes worse, or harmless, say so at that severity.
pub fn check_for(
    topology: &Topology,
    locations: &Locations,
    settings: &LintSettings,
    version: Option<(u32, u32)>,
) -> Findings {
    checked(topology, locations, settings, version, true)
}

/// [`check`] without the rules that ask where messages go (`dlx-unroutable`,
/// `dlx-cycle`, `ae-missing`, `unroutable-exchange`, the services'
/// contract): the baseline of the
/// lint benchmark (docs/development.md), nothing more.
#[doc(hidden)]
pub fn check_without_routing(topology: &Topology, locations: &Locations, settings: &LintSettings) -> Findings {
    checked(topology, locations, settings, None, false)
}

fn checked(
    topology: &Topology,
    locations: &Locations,
    settings: &LintSettings,
    version: Option<(u32, u32)>,
    routing: bool,
) -> Findings {
    let run = |views: &BTreeMap<&str, View>, checks: &[fn(&mut Context)]| {
        let mut ctx = Context::new(topology, locations, settings, version, views);
        ctx.routing = routing;
        ctx.repeats = Some(Repeats::default());
        for check in checks {
            check(&mut ctx);
        }
        let counted = ctx.repeats.map(|r| r.more).unwrap_or_default();
        (ctx.out, counted)
    };
    // Four parts at once, their findings kept in the order of the checks:
    // the dead letters' routes take about as long as the other checks of
    // the views; the services' contract, which routes every publish and
    // every queue's dead letters again, as long as those with many
    // services; the policy checks match on their own, without the views.
    let ((first, second, contract), third) = rayon::join(
        || {
            let views: BTreeMap<&str, View> = topology
                .vhosts
                .iter()
                .map(|(name, v)| {
                    (
                        name.as_str(),
                        View::new(name, v, locations, version.map_or(Version::NEWEST, |(a, b)| Version::new(a, b))),
                    )
                })
                .collect();
            let ((first, second), contract) = rayon::join(
                || {
                    rayon::join(
                        || run(&views, &[references::check, queues::check]),
                        || run(&views, &[dead_letters::check, exchanges::check, access::check]),
                    )
                },
                || run(&views, &[services::check]),
            );
            (first, second, contract)
        },
        || run(&BTreeMap::new(), &[policies::check]),
    );
    let (mut out, mut counted) = first;
    for (rest, rest_counted) in [second, contract, third] {
        out.add(rest);
        counted.extend(rest_counted);
    }
    out.shown = grouped(out.shown, counted);
    out.allowed.dedup();
    out
}

/// One finding per place and code: a policy key that makes the same
/// finding on ten thousand queues is one line to fix, said once, with how
/// many more queues it reaches. `counted` gives, for each finding, how many
/// more the checks counted at its place without keeping them.
fn grouped(found: Vec<Diagnostic>, counted: Vec<usize>) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = Vec::with_capacity(found.len());
    let mut more: Vec<usize> = Vec::with_capacity(found.len());
    let mut at: rustc_hash::FxHashMap<(&'static str, Location), usize> = rustc_hash::FxHashMap::default();
    for (d, extra) in found.into_iter().zip(counted.into_iter().chain(std::iter::repeat(0))) {
        let Some(l) = d.location.clone().filter(|_| rules::rule_of(d.code).is_some()) else {
            if out.last() != Some(&d) {
                out.push(d);
                more.push(0);
            }
            continue;
        };
        match at.entry((d.code, l)) {
            std::collections::hash_map::Entry::Occupied(e) => more[*e.get()] += 1 + extra,
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(out.len());
                out.push(d);
                more.push(extra);
            }
        }
    }
    for (d, n) in out.iter_mut().zip(more) {
        if n > 0 {
            d.message += &format!(" (and the same for {n} more queue(s) this sets it on)");
        }
    }
    out
}

/// Names listed in a message before "and N more".
const LISTED: usize = 3;

fn describe_exchange(exchange: &str) -> String {
    if exchange.is_empty() { "the default exchange".to_string() } else { format!("exchange \"{exchange}\"") }
}

fn listed(names: &[&str]) -> String {
    let mut out = names.iter().take(LISTED).map(|n| format!("\"{n}\"")).collect::<Vec<_>>().join(", ");
    if names.len() > LISTED {
        out += &format!(" and {} more", names.len() - LISTED);
    }
    out
}

/// A rule's finding, at its default severity.
fn finding(code: &'static str, message: impl Into<String>) -> Diagnostic {
    let rule = rules::rule_of(code);
    debug_assert!(rule.is_some(), "{code} is in rules::RULES");
    let mut d = Diagnostic::warning(code, message);
    if let Some(r) = rule {
        d.severity = r.severity;
    }
    d
}

/// `d` at the level the project sets for its rule, else at the one the
/// broker's `version` calls for: `Err` when an exception allows it (`allow`,
/// the object's `lint_allow` entry for the code), or when the project turns
/// the rule off. Findings of checks that are not rules pass unchanged.
fn settle(
    mut d: Diagnostic,
    allow: Option<Location>,
    settings: &LintSettings,
    version: Option<(u32, u32)>,
) -> Result<Diagnostic, Allowed> {
    if rules::rule_of(d.code).is_none() {
        return Ok(d);
    }
    if let Some(by) = allow {
        return Err(Allowed { finding: d, by });
    }
    match settings.level(d.code) {
        None => {
            if let Some((severity, why)) = version.and_then(|v| live::for_version(d.code, v)) {
                d.severity = severity;
                d.help = Some(match d.help {
                    Some(h) => format!("{h} ({why})"),
                    None => why,
                });
            }
            Ok(d)
        }
        Some((level, at)) => match level.severity() {
            Some(severity) => {
                d.severity = severity;
                Ok(d)
            }
            None => Err(Allowed { finding: d, by: at.clone() }),
        },
    }
}

/// The `lint_allow` entry of the object `key` for `code`, if it has one.
fn allowance(locations: &Locations, key: &ObjectKey, code: &str) -> Option<Location> {
    locations.site(key)?.fields.get(&format!("lint_allow.{code}"))
}

struct Context<'a> {
    topology: &'a Topology,
    locations: &'a Locations,
    settings: &'a LintSettings,
    version: Option<(u32, u32)>,
    /// Each vhost as the rules ask about it, made once.
    views: &'a BTreeMap<&'a str, View<'a>>,
    out: Findings,
    /// When `Some`, a rule's finding at a place and code already shown is
    /// counted, not kept: for [`grouped`], which says each once.
    repeats: Option<Repeats>,
    /// Whether the rules that ask where messages go run (see
    /// [`check_without_routing`]).
    routing: bool,
}

/// The rule findings shown so far, by code and place (their index in the
/// shown findings), and how many more of each were found.
#[derive(Default)]
struct Repeats {
    at: rustc_hash::FxHashMap<(&'static str, Location), usize>,
    more: Vec<usize>,
}

impl<'a> Context<'a> {
    fn new(
        topology: &'a Topology,
        locations: &'a Locations,
        settings: &'a LintSettings,
        version: Option<(u32, u32)>,
        views: &'a BTreeMap<&'a str, View<'a>>,
    ) -> Self {
        Context {
            topology,
            locations,
            settings,
            version,
            views,
            out: Findings::default(),
            repeats: None,
            routing: true,
        }
    }

    /// Adds `d` at the object's (or its field's) declaration, at the level
    /// the project sets, or as allowed.
    fn report(&mut self, key: &ObjectKey, field: Option<&str>, d: Diagnostic) {
        let d = match self.locate(key, field) {
            Some(l) => d.at(l),
            None => d,
        };
        let allow = allowance(self.locations, key, d.code);
        match settle(d, allow, self.settings, self.version) {
            Ok(d) => self.show(d),
            Err(a) => self.out.allowed.push(a),
        }
    }

    /// [`Context::report`] for a finding at `field` of service `service`
    /// (its declaration when the field has no place), allowed by the
    /// service's own `lint_allow`.
    fn report_service(&mut self, vhost: &str, service: &str, field: &str, d: Diagnostic) {
        let site = self.locations.services.get(&(vhost.to_string(), service.to_string()));
        let d = match site {
            Some(s) => d.at(s.fields.get(field).unwrap_or_else(|| s.at.clone())),
            None => d,
        };
        let allow = site.and_then(|s| s.fields.get(&format!("lint_allow.{}", d.code)));
        match settle(d, allow, self.settings, self.version) {
            Ok(d) => self.show(d),
            Err(a) => self.out.allowed.push(a),
        }
    }

    fn show(&mut self, d: Diagnostic) {
        if let Some(r) = &mut self.repeats {
            if let Some(l) = d.location.clone().filter(|_| rules::rule_of(d.code).is_some()) {
                match r.at.entry((d.code, l)) {
                    std::collections::hash_map::Entry::Occupied(e) => {
                        r.more[*e.get()] += 1;
                        return;
                    }
                    std::collections::hash_map::Entry::Vacant(e) => _ = e.insert(self.out.shown.len()),
                }
            }
            r.more.push(0);
        }
        self.out.shown.push(d);
    }

    fn locate(&self, key: &ObjectKey, field: Option<&str>) -> Option<Location> {
        self.locations.locate(key, field)
    }
}
