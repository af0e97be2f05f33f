//! Objects of the kinds of `model::kinds`, compared the same way for every
//! kind: by identity, then attribute by attribute, an immutable attribute's
//! change making the object deleted and made again.

use super::attributes;
use super::change::{Action, Change, Declared};
use super::differ::Differ;
use crate::model::ObjectKey;
use crate::model::kinds::{Name, Object, Objects};

impl Differ<'_> {
    /// The objects of one scope: a vhost's, or with `vhost` `None` the broker's.
    pub(super) fn objects(&mut self, vhost: Option<&str>, want: &Objects, have: &Objects) {
        let key = |name: &Name| ObjectKey::Object { vhost: vhost.map(str::to_string), name: name.clone() };
        for (name, w) in want {
            let after = attributes::object(name.kind, w);
            let declared = || Some(Declared::Object(Object { id: name.id.clone(), body: w.clone() }));
            let Some(h) = have.get(name) else {
                self.created(key(name), after, "declared in the files", declared());
                continue;
            };
            if h == w {
                continue;
            }
            let before = attributes::object(name.kind, h);
            let fixed: Vec<&str> = (name.kind.attributes.iter())
                .filter(|a| a.immutable && h.get(a.name) != w.get(a.name))
                .map(|a| a.name)
                .collect();
            if fixed.is_empty() {
                self.updated(key(name), before, after, declared().expect("made above"));
                continue;
            }
            let reason = format!("{} cannot change in place: it is deleted and made again", fixed.join(", "));
            let mut c = Change::new(key(name), Action::Replace, reason);
            c.requires_allow_destroy = name.kind.destroy_loses.is_some();
            (c.before, c.after, c.declared) = (Some(before), Some(after), declared());
            self.push(c);
        }
        for (name, h) in have.iter().filter(|(n, _)| !want.contains_key(*n)) {
            self.absent(key(name), attributes::object(name.kind, h), name.kind.destroy_loses.is_some());
            if let Some(loses) = name.kind.destroy_loses {
                self.explain_last(&format!("removed from the files; {loses}"));
            }
        }
    }
}
