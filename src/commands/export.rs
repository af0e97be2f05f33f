//! `warren export`: the files as a RabbitMQ definitions document, on
//! standard output or in a file. Needs no broker.

use std::io::Write;
use std::path::Path;

use super::validate::{show, summary};
use crate::desired::{self, Desired};
use crate::diagnostic::Diagnostic;
use crate::error::{self, Done, Error};
use crate::export;
use crate::password;
use crate::writer::Writer;

/// Exports the topology at `path` or, with `envs`, that of the one
/// environment they pick.
pub fn run(path: &Path, envs: &[String], out_file: Option<&Path>, out: &Writer) -> error::Result {
    let (desired, what) = if envs.is_empty() {
        let desired = desired::load(path);
        show(&desired.diagnostics, &desired.sources, out);
        (desired, path.display().to_string())
    } else {
        let (env, desired) = super::fleet::one(path, envs, out)?;
        (desired, format!("environment {}", env.name))
    };
    if desired.has_errors() {
        return Err(Error::invalid().line(format!("{what} is not valid: nothing exported.")));
    }
    let topology = match password::resolve(&desired.topology, |v| std::env::var_os(v)) {
        Ok(t) => t,
        Err(problems) => {
            let found: Vec<Diagnostic> = problems.iter().map(|p| unresolved(&desired, p)).collect();
            show(&found, &desired.sources, out);
            return Err(Error::invalid().line("Nothing exported: a password could not be read."));
        }
    };
    // The URIs of shovels and upstreams cannot be hashed as passwords are:
    // the definitions carry them as they are, so never to a terminal or a log.
    let (topology, unset) =
        crate::secrets::resolve(&topology, &crate::model::Topology::default(), |v| std::env::var_os(v));
    if let Some(u) = unset.first() {
        return Err(Error::invalid().line(format!(
            "Nothing exported: the `{}` of {} comes from ${}, which is not set.",
            u.attribute, u.object, u.variable
        )));
    }
    if out_file.is_none() && matches!(topology, std::borrow::Cow::Owned(_)) {
        return Err(Error::invalid().line(
            "Nothing exported: the definitions would hold secrets read from the environment (URIs with passwords); \
             write them to a file with --out FILE, which warren makes readable by you alone.",
        ));
    }
    let text = export::to_text(&export::definitions(&topology));
    let written = match out_file {
        None => std::io::stdout().lock().write_all(text.as_bytes()),
        Some(file) => write_private(file, &text),
    };
    if let Err(e) = written {
        let target = out_file.map_or("standard output".into(), |f| f.display().to_string());
        let d = Diagnostic::error("write", format!("cannot write {target}: {e}"))
            .help("check the path and its permissions");
        return Err(Error::invalid().drawn([d], &desired.sources));
    }
    if let Some(file) = out_file.filter(|_| !out.quiet()) {
        out.errln(format!("Exported {what} to {}: {}.", file.display(), summary(&topology)));
    }
    Ok(Done::Ok)
}

/// The diagnostic for a user whose password variable gave no password,
/// pointing at its `password_env`. It names the variable, never a value.
fn unresolved(desired: &Desired, p: &password::Unresolved) -> Diagnostic {
    let (user, var) = (&p.user, &p.variable);
    let what = match &p.problem {
        password::Problem::Unset => "is not set".to_string(),
        password::Problem::Empty => "is empty".to_string(),
        password::Problem::NotUnicode => "is not valid UTF-8".to_string(),
        password::Problem::NoRandomness(e) => {
            format!("could not be hashed: no random salt ({e})")
        }
    };
    let d = Diagnostic::error(
        "password-env",
        format!("the password of user \"{user}\" comes from ${var}, which {what}"),
    )
    .label("read when exporting")
    .help(format!(
        "set {var} to the user's password in the environment of `warren export`; only its salted hash is written"
    ));
    match desired.locations.locate(&crate::model::kinds::users::key(user), Some("password_env")) {
        Some(at) => d.at(at),
        None => d,
    }
}

/// Writes the file readable by its owner only: it holds password hashes.
fn write_private(file: &Path, text: &str) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(file)?.write_all(text.as_bytes())
}
