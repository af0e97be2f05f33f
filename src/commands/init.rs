//! `warren init`: a new project's directory, with its project file and a
//! first topology file, or the topology a broker or an export holds now.
//! It writes into a directory without topology files only: a project that
//! exists is never changed by it.

use std::fs;
use std::path::Path;

use super::import;
use crate::cli::Connection;
use crate::diagnostic::Diagnostic;
use crate::error::{self, Done, Error};
use crate::writer::Writer;

/// Where the first topology comes from.
pub enum From {
    /// A commented example declaring the vhosts.
    Example,
    /// A definitions export, imported.
    State(std::path::PathBuf),
    /// The broker, imported.
    Broker,
}

/// The first file's name, without `--state` or `--import`.
const FIRST_FILE: &str = "main.toml";

pub fn run(path: &Path, vhosts: &[String], from: From, connection: &Connection, out: &Writer) -> error::Result {
    let name = project_name(connection)?;
    match from {
        From::State(file) => import::with_project(Some(&file), vhosts, path, &name, connection, out),
        From::Broker => import::with_project(None, vhosts, path, &name, connection, out),
        From::Example => {
            example(path, vhosts, &name, out).map_err(|d| Error::invalid().drawn([d], &Default::default()))
        }
    }
}

/// The project's name, from --project or WARREN_PROJECT: init writes it
/// into the project file, where every later command reads it.
fn project_name(connection: &Connection) -> Result<String, Error> {
    let Some(given) = connection.project.as_deref() else {
        return Err(Error::invalid().line(
            "warren init needs the project's name: --project NAME (or WARREN_PROJECT). The project owns what \
             its applies create on a broker, and warren destroys only what its own project created; name it \
             after the team or the application these topology files belong to.",
        ));
    };
    import::project_named(given)
}

/// Writes the project file and a commented first topology file.
fn example(dir: &Path, vhosts: &[String], name: &str, out: &Writer) -> Result<Done, Diagnostic> {
    import::refuse_existing(dir)?;
    let vhosts: Vec<String> = if vhosts.is_empty() { vec!["/".into()] } else { vhosts.to_vec() };
    fs::create_dir_all(dir).map_err(|e| cannot(dir, &e))?;
    import::write_project_file(dir, name, out)?;
    let first = dir.join(FIRST_FILE);
    fs::write(&first, first_file(&vhosts)).map_err(|e| cannot(&first, &e))?;
    let shown: Vec<String> = vhosts.iter().map(|v| format!("\"{v}\"")).collect();
    if out.quiet() {
        return Ok(Done::Ok);
    }
    out.outln(format!("Wrote {}: vhosts {}, and commented examples", first.display(), shown.join(", ")));
    let d = dir.display();
    out.outln(format!(
        "Next: declare the topology in {}, then `warren validate {d}`, and `warren plan {d}` with the broker \
         in --url or WARREN_URL (or `warren plan {d} --state EXPORT` against a definitions export).",
        first.display()
    ));
    Ok(Done::Ok)
}

fn cannot(what: &Path, e: &std::io::Error) -> Diagnostic {
    Diagnostic::error("init", format!("cannot write {}: {e}", what.display()))
        .help("check the directory's permissions and free space")
}

/// The first topology file's text: the vhosts, and one of each common
/// object, commented out.
fn first_file(vhosts: &[String]) -> String {
    let list: Vec<String> = vhosts.iter().map(|v| toml::Value::String(v.clone()).to_string()).collect();
    format!(
        r#"# warren reads every *.toml file below this directory as one topology.
# Every key is in docs/format.md; `warren validate` checks the files.
vhosts = [{}]

# [exchanges."orders"]
# type = "topic"
#
# [queues."orders.work"]
# type = "quorum"
#
# [[bindings]]
# source = "orders"
# queue = "orders.work"
# routing_key = "order.#"
"#,
        list.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_files_init_writes_are_valid_and_name_the_project() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(crate::project::FILE_NAME), crate::project::template("orders.api")).unwrap();
        fs::write(dir.path().join(FIRST_FILE), first_file(&["/".into(), "a\"b".into()])).unwrap();
        let desired = crate::desired::load(dir.path());
        assert!(desired.diagnostics.is_empty(), "{:?}", desired.diagnostics);
        assert_eq!(desired.project.name.as_deref(), Some("orders.api"));
        let names: Vec<&String> = desired.topology.vhosts.keys().collect();
        assert_eq!(names, ["/", "a\"b"]);
    }
}
