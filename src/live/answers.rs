//! A broker's answers for some vhosts ([`Answers`]) into one definitions
//! document, each answer parsed once, straight into the items warren reads.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value as Json};

use super::definitions::{
    self, BindingDef, Definitions, ExchangeDef, GlobalParameterDef, ParameterDef, PermissionDef, PolicyDef, QueueDef,
    UserDef, VhostDef,
};
use crate::broker::{Answers, Listing};
use crate::diagnostic::Diagnostic;
use crate::model::kinds::{KINDS, Kind};

/// A queue as a listing gives it: an exclusive one is a connection's own,
/// and exports leave it out.
#[derive(Deserialize)]
struct ListedQueue {
    #[serde(flatten)]
    queue: QueueDef,
    #[serde(default)]
    exclusive: bool,
}

/// An operator policy as its listing gives it: exports carry it as a
/// parameter whose value is the policy's body.
#[derive(Deserialize)]
struct ListedOperatorPolicy {
    name: String,
    #[serde(flatten)]
    body: Map<String, Json>,
}

pub(super) fn read(mut a: Answers, origin: &str) -> Result<Definitions, Diagnostic> {
    let mut defs = Definitions {
        vhosts: Some(parse::<Vec<VhostDef>>(&a.vhosts, "the vhost listing", origin)?),
        ..Definitions::default()
    };
    if let Some(users) = &a.users {
        defs.users = parse::<Vec<UserDef>>(users, "the user listing", origin)?;
    }
    if let Some(permissions) = &a.permissions {
        defs.permissions = parse::<Vec<PermissionDef>>(permissions, "the permission listing", origin)?;
    }
    for r in &a.records {
        defs.global_parameters.push(parse::<GlobalParameterDef>(r, "warren's records", origin)?);
    }
    // Each text is dropped once parsed: a large vhost's export is tens of
    // MB, and the plan's peak memory is the parsed side's.
    kind_listings(&mut defs, std::mem::take(&mut a.objects), origin)?;
    // Before the listings are parsed beside them.
    super::normalise::drop_stale_parts(&mut defs.global_parameters);
    for (v, text) in std::mem::take(&mut a.exports) {
        let export = definitions::parse(&text, &format!("{origin} (vhost \"{v}\")"))?;
        drop(text);
        let vhost = || Some(v.clone());
        defs.queues.extend(export.queues.into_iter().map(|q| QueueDef { vhost: vhost(), ..q }));
        defs.exchanges.extend(export.exchanges.into_iter().map(|x| ExchangeDef { vhost: vhost(), ..x }));
        defs.bindings.extend(export.bindings.into_iter().map(|b| BindingDef { vhost: vhost(), ..b }));
        defs.policies.extend(export.policies.into_iter().map(|p| PolicyDef { vhost: vhost(), ..p }));
        defs.parameters.extend(export.parameters.into_iter().map(|p| ParameterDef { vhost: vhost(), ..p }));
    }
    for (v, text) in &a.vhost_parameters {
        let what = format!("the runtime parameters of vhost \"{v}\"");
        defs.parameters.extend(parse::<Vec<ParameterDef>>(text, &what, origin)?);
    }
    parameter_listing(&mut defs, &a, origin)?;
    // Each text dropped once parsed, as exports are: a large vhost's
    // bindings listing is tens of MB.
    for (v, listing, text) in std::mem::take(&mut a.listings) {
        let what = format!("the {} of vhost \"{v}\"", listing.what());
        let vhost = || Some(v.clone());
        // What an export leaves out: the default exchange and its
        // bindings, and exclusive queues.
        match listing {
            Listing::Exchanges => parse_into(&text, &what, origin, &mut defs.exchanges, |x: ExchangeDef| {
                (!x.name.is_empty()).then(|| ExchangeDef { vhost: vhost(), ..x })
            })?,
            Listing::Queues => parse_into(&text, &what, origin, &mut defs.queues, |q: ListedQueue| {
                (!q.exclusive).then(|| QueueDef { vhost: vhost(), ..q.queue })
            })?,
            Listing::Bindings => parse_into(&text, &what, origin, &mut defs.bindings, |b: BindingDef| {
                (!b.source.is_empty()).then(|| BindingDef { vhost: vhost(), ..b })
            })?,
            Listing::Policies => defs.policies.extend(
                parse::<Vec<PolicyDef>>(&text, &what, origin)?.into_iter().map(|p| PolicyDef { vhost: vhost(), ..p }),
            ),
            Listing::OperatorPolicies => {
                for p in parse::<Vec<ListedOperatorPolicy>>(&text, &what, origin)? {
                    let body = ["pattern", "apply-to", "definition", "priority"]
                        .into_iter()
                        .filter_map(|k| Some((k.to_string(), p.body.get(k)?.clone())))
                        .collect();
                    defs.parameters.push(ParameterDef {
                        vhost: vhost(),
                        component: "operator_policy".into(),
                        name: p.name,
                        value: Json::Object(body),
                    });
                }
            }
        }
    }
    Ok(defs)
}

/// A non-administrator's runtime parameter listing: only the listed
/// vhosts' (the listing is broker-wide), and only what a kind reads, since
/// vhost limits and operator policies come in listings of their own.
fn parameter_listing(defs: &mut Definitions, a: &Answers, origin: &str) -> Result<(), Diagnostic> {
    let Some(text) = &a.parameters else { return Ok(()) };
    let listed: std::collections::BTreeSet<&str> = a.listings.iter().map(|(v, _, _)| v.as_str()).collect();
    for p in parse::<Vec<ParameterDef>>(text, "the runtime parameter listing", origin)? {
        let item = serde_json::json!({ "component": p.component, "name": p.name, "value": p.value });
        let read = KINDS.iter().any(|k| k.definitions == "parameters" && (k.read)(&item).is_some());
        if read && p.vhost.as_deref().is_some_and(|v| listed.contains(v)) {
            defs.parameters.push(p);
        }
    }
    Ok(())
}

/// The listing of each kind that has one, into the definitions list its
/// items belong to.
fn kind_listings(defs: &mut Definitions, listed: Vec<(&Kind, String)>, origin: &str) -> Result<(), Diagnostic> {
    for (kind, text) in listed {
        let what = format!("the {} listing", kind.table.replace('_', " "));
        match kind.definitions {
            "topic_permissions" => defs.topic_permissions.extend(parse::<Vec<Json>>(&text, &what, origin)?),
            "global_parameters" => {
                defs.global_parameters.extend(parse::<Vec<GlobalParameterDef>>(&text, &what, origin)?)
            }
            list => unreachable!("kind {} lists {list} items, which no listing gives", kind.table),
        }
    }
    Ok(())
}

fn parse<T: DeserializeOwned>(text: &str, what: &str, origin: &str) -> Result<T, Diagnostic> {
    serde_json::from_str(text).map_err(|e| unreadable(&e, what, origin))
}

/// Where and why the answer `what` does not parse.
fn unreadable(e: &serde_json::Error, what: &str, origin: &str) -> Diagnostic {
    definitions::shape_error(&format!("{origin}: {what}"), String::new(), e)
}

/// Parses the list `text` item by item into `into`, each item as `keep`
/// makes it, or left out: the list is never held whole beside `into`. A
/// vhost of 100,000 queues lists 300,000 bindings, a third of them the
/// default exchange's, which an export leaves out.
fn parse_into<T: DeserializeOwned, U>(
    text: &str,
    what: &str,
    origin: &str,
    into: &mut Vec<U>,
    keep: impl FnMut(T) -> Option<U>,
) -> Result<(), Diagnostic> {
    let mut de = serde_json::Deserializer::from_str(text);
    let seed = Kept { into, keep, item: std::marker::PhantomData };
    serde::de::DeserializeSeed::deserialize(seed, &mut de)
        .and_then(|()| de.end())
        .map_err(|e| unreadable(&e, what, origin))
}

/// A list's items, each pushed as it is read ([`parse_into`]).
struct Kept<'v, T, U, F> {
    into: &'v mut Vec<U>,
    keep: F,
    item: std::marker::PhantomData<T>,
}

impl<'de, T: DeserializeOwned, U, F: FnMut(T) -> Option<U>> serde::de::DeserializeSeed<'de> for Kept<'_, T, U, F> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, T: DeserializeOwned, U, F: FnMut(T) -> Option<U>> serde::de::Visitor<'de> for Kept<'_, T, U, F> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        while let Some(item) = seq.next_element::<T>()? {
            self.into.extend((self.keep)(item));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A user without the administrator tag: listings as the management API
    /// gives them, with fields an export does not have.
    #[test]
    fn listings_read_as_an_export_of_the_vhost_would() {
        let listing = |kind, text: &str| ("v".to_string(), kind, text.to_string());
        let answers = Answers {
            vhosts: r#"[{"name": "v", "description": "", "tags": []}]"#.into(),
            listings: vec![
                listing(
                    Listing::Exchanges,
                    r#"[{"name": "", "type": "direct", "durable": true, "auto_delete": false, "internal": false, "arguments": {}},
                        {"name": "x", "type": "topic", "durable": true, "auto_delete": false, "internal": false, "arguments": {}}]"#,
                ),
                listing(
                    Listing::Queues,
                    r#"[{"name": "q", "type": "classic", "durable": true, "auto_delete": false, "exclusive": false, "arguments": {}},
                        {"name": "amq.gen-1", "type": "classic", "durable": false, "auto_delete": true, "exclusive": true, "arguments": {}}]"#,
                ),
                listing(
                    Listing::Bindings,
                    r#"[{"source": "", "vhost": "v", "destination": "q", "destination_type": "queue", "routing_key": "q", "arguments": {}, "properties_key": "q"},
                        {"source": "x", "vhost": "v", "destination": "q", "destination_type": "queue", "routing_key": "k", "arguments": {}, "properties_key": "k"}]"#,
                ),
                listing(
                    Listing::Policies,
                    r#"[{"vhost": "v", "name": "p", "pattern": "^q$", "apply-to": "queues", "definition": {"max-length": 10}, "priority": 0}]"#,
                ),
                listing(
                    Listing::OperatorPolicies,
                    r#"[{"vhost": "v", "name": "op", "pattern": ".*", "apply-to": "queues", "definition": {"max-length": 99}, "priority": 0}]"#,
                ),
            ],
            ..Answers::default()
        };
        let defs = read(answers, "test").unwrap();
        assert_eq!(defs.exchanges.iter().map(|x| x.name.as_str()).collect::<Vec<_>>(), ["x"]);
        assert_eq!(defs.queues.iter().map(|q| q.name.as_str()).collect::<Vec<_>>(), ["q"]);
        assert_eq!(defs.bindings.iter().map(|b| b.source.as_str()).collect::<Vec<_>>(), ["x"]);
        assert!(defs.exchanges.iter().all(|x| x.vhost.as_deref() == Some("v")));
        assert_eq!(defs.policies.len(), 1);
        let op = &defs.parameters[0];
        assert_eq!(
            (op.component.as_str(), op.name.as_str(), op.vhost.as_deref()),
            ("operator_policy", "op", Some("v"))
        );
        assert_eq!(op.value["definition"]["max-length"], 99);
        assert!(op.value.get("vhost").is_none(), "only the policy's body: {}", op.value);

        let bad = Answers { vhosts: "[]".into(), users: Some("{not json".into()), ..Answers::default() };
        let e = read(bad, "http://broker").unwrap_err();
        assert!(e.message.contains("the user listing"), "{}", e.message);
        // A listing read item by item says where it stopped, as a whole one did.
        for text in [r#"[{"source": 1}]"#, r#"{"source": "x"}"#, "[] []"] {
            let bad =
                Answers { vhosts: "[]".into(), listings: vec![listing(Listing::Bindings, text)], ..Answers::default() };
            let e = read(bad, "http://broker").unwrap_err();
            assert!(e.message.starts_with("http://broker: the bindings of vhost \"v\":1:"), "{}", e.message);
        }
    }
}
