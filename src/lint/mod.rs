//! Checks over the whole merged topology: references between objects, and
//! what the broker would refuse or quietly do differently than the files say.
//! Each finding has a stable code (see the README's list).

mod policies;
mod queues;
mod references;

use crate::diagnostic::Diagnostic;
use crate::model::{ObjectKey, Topology};
use crate::source::Location;
use crate::source::Locations;

/// Every finding about `topology`, errors and warnings.
pub fn check(topology: &Topology, locations: &Locations) -> Vec<Diagnostic> {
    let run = |checks: &[fn(&mut Context)]| {
        let mut out = Vec::new();
        let mut ctx = Context { topology, locations, out: &mut out };
        for check in checks {
            check(&mut ctx);
        }
        out
    };
    // Matching every policy to every queue takes about as long as the rest:
    // both at once, found in the same order.
    let (mut out, rest) = std::thread::scope(|s| {
        let rest = s.spawn(|| run(&[policies::check]));
        (run(&[references::check, queues::check]), rest.join().expect("the checks do not panic"))
    });
    out.extend(rest);
    out.dedup();
    out
}

struct Context<'a> {
    topology: &'a Topology,
    locations: &'a Locations,
    out: &'a mut Vec<Diagnostic>,
}

impl Context<'_> {
    /// Adds `d` at the object's (or its field's) declaration.
    fn report(&mut self, key: &ObjectKey, field: Option<&str>, d: Diagnostic) {
        let d = match self.locate(key, field) {
            Some(l) => d.at(l),
            None => d,
        };
        self.out.push(d);
    }

    fn locate(&self, key: &ObjectKey, field: Option<&str>) -> Option<Location> {
        self.locations.locate(key, field)
    }
}
