//! `warren import --object`: one live object (or those an address's globs
//! name) as files' text, to add to a topology that exists.

use crate::diff::target::Target;
use crate::model::{ObjectKey, Topology};

/// `live` with only the objects `targets` name that `declared` does not
/// hold yet: what `import --object` adds. Their vhosts stay, emptied of
/// the rest; a vhost none of whose objects is named goes.
pub fn named(live: &Topology, targets: &[Target], declared: &Topology) -> Topology {
    let wanted = |k: &ObjectKey| targets.iter().any(|t| t.names(k)) && !declared.has(k);
    let mut out = live.clone();
    out.objects.retain(|name, _| wanted(&ObjectKey::Object { vhost: None, name: name.clone() }));
    out.removed.clear();
    for (v, vh) in &mut out.vhosts {
        let vhost = || v.clone();
        vh.exchanges.retain(|n, _| wanted(&ObjectKey::Exchange { vhost: vhost(), name: n.clone() }));
        vh.queues.retain(|n, _| wanted(&ObjectKey::Queue { vhost: vhost(), name: n.clone() }));
        vh.bindings.retain(|b| wanted(&ObjectKey::Binding { vhost: vhost(), binding: b.clone() }));
        vh.objects.retain(|name, _| wanted(&ObjectKey::Object { vhost: Some(vhost()), name: name.clone() }));
        vh.settings = Default::default();
    }
    out.vhosts.retain(|_, vh| {
        !(vh.exchanges.is_empty() && vh.queues.is_empty() && vh.bindings.is_empty() && vh.objects.is_empty())
    });
    out
}

/// The declarations of an imported vhost file without its head (the
/// comment naming the source, and `vhosts = [...]`), to append to a file
/// that declares the vhost already.
pub fn body(file_text: &str) -> &str {
    match file_text.find("\nvhosts = ") {
        Some(at) => {
            let after = &file_text[at + 1..];
            after.find('\n').map_or("", |end| after[end..].trim_start_matches('\n'))
        }
        None => file_text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_is_what_follows_the_vhosts_line() {
        let text = "# vhost \"/\", as read.\n\nvhosts = [\"/\"]\n\n[queues.a]\ntype = \"classic\"\n";
        assert_eq!(body(text), "[queues.a]\ntype = \"classic\"\n");
    }

    #[test]
    fn only_the_named_objects_not_declared_yet_are_kept() {
        let live = crate::testing::large_topology(20, 3, 10);
        let v = live.vhosts.keys().next().unwrap().clone();
        let first = live.vhosts[&v].queues.keys().next().unwrap().clone();
        let t = Target::parse(&format!("queue:{v}/{first}")).unwrap();
        let got = named(&live, std::slice::from_ref(&t), &Topology::default());
        assert_eq!(got.vhosts[&v].queues.keys().collect::<Vec<_>>(), [&first]);
        assert!(got.vhosts[&v].exchanges.is_empty() && got.vhosts[&v].bindings.is_empty());
        // Declared already: nothing to add.
        assert!(named(&live, &[t], &live).vhosts.is_empty());
    }
}
