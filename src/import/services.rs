//! The services an import proposes (issue 31, part 6): for each user with
//! permissions in a vhost, a service that consumes every declared queue
//! its `read` lets it consume and publishes to every declared exchange its
//! `write` lets it publish to (the default exchange when `amq.default` is
//! among them), declaring server-named queues when its `configure` lets
//! it. RabbitMQ matches a permission's expression anywhere in a name
//! (`re:run`, unanchored), and so does the proposal: it proposes what the
//! user may do today, not what its expression seems to mean.
//!
//! From a live broker, a user seen consuming is proposed the queues it
//! consumes (`/api/consumers/{vhost}`), those its `read` matches and the
//! files declare, rather than all its `read` matches.
//!
//! A proposal to review, never declared: written commented out at the end
//! of the vhost's file, below the permissions it would replace, so that
//! the files as imported still read as the broker is.

use std::collections::{BTreeMap, BTreeSet};

use regex::Regex;

use crate::model::services::{DEFAULT_EXCHANGE, Declares, Publish, Service};
use crate::model::{User, Vhost};
use crate::toml_text::{path, string};

/// The widest line of a list before it is written one item a line.
const WIDTH: usize = 100;

/// The queues each user was seen consuming, by vhost and user.
pub type Consumed = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

/// What the import proposes for one user of a vhost.
pub(super) enum Proposal {
    /// A service; with, for a user seen consuming, how many queues its
    /// `read` matches.
    Service(Service, Option<usize>),
    /// Its permissions use an expression warren's regex engine does not
    /// read (RabbitMQ's is PCRE): no proposal, and why.
    Unread { user: String, why: String },
}

/// The proposals of `v`, one for each user of `users` with permissions in
/// it that let it consume, publish or declare anything.
pub(super) fn proposed(
    v: &Vhost,
    users: &BTreeMap<String, User>,
    consumed: Option<&BTreeMap<String, BTreeSet<String>>>,
) -> Vec<Proposal> {
    let mut out = Vec::new();
    for (user, p) in v.permissions().iter().filter(|(u, _)| users.contains_key(*u)) {
        let compiled = [&p.configure, &p.write, &p.read].map(|e| Regex::new(e).map_err(|_| e.clone()));
        let [configure, write, read] = match compiled {
            [Ok(c), Ok(w), Ok(r)] => [c, w, r],
            [c, w, r] => {
                let bad = [c, w, r].into_iter().filter_map(Result::err).next().unwrap_or_default();
                out.push(Proposal::Unread { user: user.clone(), why: format!("its expression {}", string(&bad)) });
                continue;
            }
        };
        let mut publishes: Vec<Publish> = Vec::new();
        // The default exchange reaches queues by name: in a vhost without
        // queues, what the permission allows reaches nothing.
        if write.is_match(DEFAULT_EXCHANGE) && !v.queues.is_empty() {
            publishes.push(Publish { exchange: String::new(), keys: Vec::new(), headers: Vec::new() });
        }
        let exchanges = v.exchanges.keys().filter(|x| write.is_match(x));
        publishes.extend(exchanges.map(|x| Publish { exchange: x.clone(), keys: Vec::new(), headers: Vec::new() }));
        let mut consumes: Vec<String> = v.queues.keys().filter(|q| read.is_match(q)).cloned().collect();
        let seen = consumed.and_then(|c| c.get(user)).filter(|seen| !seen.is_empty());
        let readable = seen.map(|seen| {
            let readable = consumes.len();
            consumes.retain(|q| seen.contains(q));
            readable
        });
        // A name the broker gives a queue it names itself.
        let server_named = configure.is_match("amq.gen-JzTY20BRgKO-HjmUJj0wLg");
        if publishes.is_empty() && consumes.is_empty() && !server_named {
            continue;
        }
        let declares = Declares { server_named, prefixes: Vec::new() };
        let service = Service { name: user.clone(), user: user.clone(), publishes, consumes, declares };
        out.push(Proposal::Service(service, readable));
    }
    out
}

/// The proposal's lines, uncommented; none when it proposes nothing.
pub(super) fn lines(proposals: &[Proposal]) -> Vec<String> {
    if proposals.is_empty() {
        return Vec::new();
    }
    let mut out: Vec<String> = PREFACE.lines().map(str::to_string).collect();
    for p in proposals {
        out.push(String::new());
        match p {
            Proposal::Unread { user, why } => out.push(format!(
                "# No service for user {}: {why} is not one warren reads (RabbitMQ's are PCRE).",
                string(user)
            )),
            Proposal::Service(s, readable) => {
                if let Some(n) = readable {
                    out.push(format!(
                        "# consumes: the queues it consumed when imported (its `read` matches {n} of the vhost's)"
                    ));
                }
                out.extend(service(s))
            }
        }
    }
    out
}

const PREFACE: &str = "\
Proposed services (`warren import`, docs/services.md): what each user's
permissions let it do in this vhost today. It consumes every queue its
`read` matches and publishes to every exchange its `write` matches (\"\",
the default exchange, when `amq.default` matches), as RabbitMQ matches
them: anywhere in the name. A proposal, commented out so that nothing
changes: review each, narrow it to what the service does (and add the
routing `keys` it publishes with, and the `headers` to a headers
exchange), uncomment it, and remove its user's [permissions] above;
warren then makes them from the service, the least that lets it.
`warren validate` says if one of the two is left.";

fn service(s: &Service) -> Vec<String> {
    let mut out = vec![format!("[{}]", path(&["services", &s.name])), format!("user = {}", string(&s.user))];
    let publishes: Vec<String> =
        s.publishes.iter().map(|p| format!("{{ exchange = {} }}", string(&p.exchange))).collect();
    out.extend(list("publishes", &publishes));
    let consumes: Vec<String> = s.consumes.iter().map(|q| string(q)).collect();
    out.extend(list("consumes", &consumes));
    if s.declares.server_named {
        out.push("declares = { server_named = true }".to_string());
    }
    out
}

/// `name = [items]`, one item a line when long; nothing when empty.
fn list(name: &str, items: &[String]) -> Vec<String> {
    if items.is_empty() {
        return Vec::new();
    }
    let one = format!("{name} = [{}]", items.join(", "));
    if one.len() <= WIDTH {
        return vec![one];
    }
    let mut out = vec![format!("{name} = [")];
    out.extend(items.iter().map(|i| format!("    {i},")));
    out.push("]".to_string());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Password, Permission};

    #[test]
    fn a_user_whose_expression_warren_cannot_read_is_said_and_proposed_nothing() {
        let mut v = Vhost::new("v");
        v.queues.insert(
            "work".into(),
            crate::testing::objects::queue("work", crate::model::QueueType::Classic, Default::default()),
        );
        let users: BTreeMap<String, User> = ["app", "pcre"]
            .map(|n| {
                let user = User { name: n.into(), password: Password::None, tags: Default::default(), limits: None };
                (n.to_string(), user)
            })
            .into();
        let permission = |user: &str, read: &str| Permission {
            user: user.into(),
            configure: "^$".into(),
            write: "^$".into(),
            read: read.into(),
        };
        // PCRE's lookahead, which RabbitMQ reads and Rust's regex does not.
        v.set_permission(&permission("pcre", "^(?!amq\\.).*"));
        v.set_permission(&permission("app", "^work$"));
        // A user the files do not declare: its service could not be.
        v.set_permission(&permission("ghost", ".*"));
        let text = lines(&proposed(&v, &users, None)).join("\n");
        assert!(text.contains("[services.app]\nuser = \"app\"\nconsumes = [\"work\"]"), "{text}");
        assert!(text.contains(r#"# No service for user "pcre": its expression '^(?!amq\.).*'"#), "{text}");
        assert!(!text.contains("ghost"), "{text}");
    }
}
