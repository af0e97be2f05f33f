//! `warren graph`: a topology's routing graph, for a diagram.

use std::path::Path;

use crate::desired;
use crate::error::{self, Done, Error};
use crate::render::graph::{self, GraphFormat};
use crate::writer::Writer;

/// Draws the files' topology, with their services when `services`; files
/// with errors are said, and drawn not.
pub fn run(path: &Path, vhost: Option<&str>, format: GraphFormat, services: bool, out: &Writer) -> error::Result {
    let d = desired::load(path);
    if d.has_errors() {
        let errors: Vec<_> = d.diagnostics.iter().filter(|d| d.is_error()).cloned().collect();
        super::findings::shown(&errors, &d.sources, out);
        return Err(Error::invalid().line(format!("{} is not valid: no graph was drawn.", path.display())));
    }
    if let Some(v) = vhost.filter(|v| !d.topology.vhosts.contains_key(*v)) {
        let known: Vec<&str> = d.topology.vhosts.keys().map(String::as_str).collect();
        return Err(Error::invalid()
            .line(format!("error: the files declare no vhost \"{v}\"\n  help: they declare {}", known.join(", "))));
    }
    out.out(graph::render(&d.topology, vhost, format, services));
    Ok(Done::Ok)
}
