//! The secret attributes of objects (a shovel's or an upstream's URI with
//! its password), which the files give as `{ env = "VARIABLE" }`: read from
//! the environment when warren plans against a broker and when it applies,
//! never written to a file, a saved plan or a record, and shown in plans
//! as a digest.

use std::borrow::Cow;
use std::ffi::OsString;

use crate::model::kinds::{Name, env_var, env_vars, users};
use crate::model::{Table, Topology, Value};

/// A secret whose variable is not set (or empty, or not Unicode).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unset {
    /// The object, as plans name it: `shovel "orders" in vhost "v"`.
    pub object: String,
    pub attribute: String,
    pub variable: String,
}

/// `topology` with each secret read from its variable, borrowed when it
/// names none. A secret whose variable is unset takes the value `live` has
/// for it, so that it does not show as a change nobody asked for; one the
/// broker lacks too is left naming its variable (apply refuses to write it:
/// see [`unread`]). Each unset one is reported. A user's password is not
/// read here: `password.rs` and the plan's own facts take it.
pub fn resolve<'t>(
    topology: &'t Topology,
    live: &Topology,
    lookup: impl Fn(&str) -> Option<OsString>,
) -> (Cow<'t, Topology>, Vec<Unset>) {
    let users = |name: &Name| name.kind == &users::KIND;
    if !topology.kind_objects().any(|(_, name, body)| !users(name) && unread(body).is_some()) {
        return (Cow::Borrowed(topology), Vec::new());
    }
    let read = |var: &str| lookup(var).and_then(|v| v.into_string().ok()).filter(|v| !v.is_empty());
    let mut resolved = topology.clone();
    let mut unset = Vec::new();
    let mut each = |vhost: Option<&str>, name: &Name, body: &mut Table, have: Option<&Table>| {
        for (attribute, value) in body.iter_mut() {
            let vars: Vec<String> = env_vars(value).into_iter().map(str::to_string).collect();
            if vars.is_empty() {
                continue;
            }
            let missing: Vec<&String> = vars.iter().filter(|v| read(v).is_none()).collect();
            if missing.is_empty() {
                *value = substituted(value, &read);
                continue;
            }
            for variable in missing {
                unset.push(Unset { object: name.at(vhost), attribute: attribute.clone(), variable: variable.clone() });
            }
            if let Some(live) = have.and_then(|h| h.get(attribute)) {
                *value = live.clone();
            }
        }
    };
    for (v, vhost) in resolved.vhosts.iter_mut() {
        let have = live.vhosts.get(v).map(|l| &l.objects);
        for (name, body) in vhost.objects.iter_mut() {
            each(Some(v), name, body, have.and_then(|h| h.get(name)));
        }
    }
    for (name, body) in resolved.objects.iter_mut().filter(|(name, _)| !users(name)) {
        each(None, name, body, live.objects.get(name));
    }
    (Cow::Owned(resolved), unset)
}

fn substituted(value: &Value, read: &impl Fn(&str) -> Option<String>) -> Value {
    match value {
        Value::List(items) => Value::List(items.iter().map(|i| substituted(i, read)).collect()),
        other => match env_var(other) {
            Some(var) => Value::String(read(var).expect("checked set")),
            None => other.clone(),
        },
    }
}

/// The first variable an object's body still names: its secret was not
/// read, and writing the object would send the variable's name instead.
pub fn unread(body: &Table) -> Option<&str> {
    body.values().find_map(|v| env_vars(v).first().copied())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Vhost;
    use crate::model::kinds::by_table;

    fn shovel(uri: Value) -> (Name, Table) {
        let name = Name { kind: by_table("shovels").unwrap(), id: vec!["s".into()] };
        (name, [("src-uri".to_string(), uri)].into_iter().collect())
    }

    fn env(var: &str) -> Value {
        Value::Table([("env".to_string(), Value::String(var.into()))].into_iter().collect())
    }

    fn with(objects: &[(Name, Table)]) -> Topology {
        let mut v = Vhost::new("v");
        v.objects = objects.iter().cloned().collect();
        Topology { vhosts: [("v".to_string(), v)].into(), ..Topology::default() }
    }

    fn uri(t: &Topology) -> Value {
        t.vhosts["v"].objects.values().next().unwrap().get("src-uri").unwrap().clone()
    }

    #[test]
    fn a_secret_is_read_from_its_variable_and_an_unset_one_keeps_the_live_value() {
        let desired = with(&[shovel(Value::List(vec![env("A"), Value::String("amqp://b".into())]))]);
        let lookup = |v: &str| (v == "A").then(|| OsString::from("amqp://u:p@a"));
        let (resolved, unset) = resolve(&desired, &Topology::default(), lookup);
        assert!(unset.is_empty());
        assert_eq!(
            uri(&resolved),
            Value::List(vec![Value::String("amqp://u:p@a".into()), Value::String("amqp://b".into())])
        );

        let desired = with(&[shovel(env("B"))]);
        let live = with(&[shovel(Value::String("amqp://live".into()))]);
        let (resolved, unset) = resolve(&desired, &live, |_| None);
        assert_eq!(uri(&resolved), Value::String("amqp://live".into()), "unset: compared as it is live");
        assert_eq!(unset[0].variable, "B");
        assert_eq!(unset[0].object, "shovel \"s\" in vhost \"v\"");

        let (resolved, _) = resolve(&desired, &Topology::default(), |_| Some(OsString::new()));
        assert_eq!(unread(&resolved.vhosts["v"].objects.values().next().unwrap().clone()), Some("B"), "empty is unset");
    }

    #[test]
    fn a_topology_naming_no_variable_is_borrowed() {
        let desired = with(&[shovel(Value::String("amqp://".into()))]);
        assert!(matches!(resolve(&desired, &Topology::default(), |_| None).0, Cow::Borrowed(_)));
    }
}
