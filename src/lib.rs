//! warren: RabbitMQ topology as code.
//!
//! Data flows one way: files (`desired`) become a [`model::Topology`];
//! `lint` checks it. See docs/development.md, "Layout and data flow".

pub mod apply;
pub mod broker;
pub mod cli;
pub mod commands;
pub mod desired;
pub mod diagnostic;
pub mod diff;
pub mod error;
pub mod exit;
pub mod export;
pub mod fingerprint;
pub mod format;
pub mod import;
pub mod journal;
pub mod lint;
pub mod live;
pub mod model;
pub mod output;
pub mod password;
pub mod plan;
pub mod progress;
pub mod project;
pub mod render;
pub mod route_test;
pub mod routing;
pub mod saved_plan;
pub mod secrets;
pub mod source;
#[doc(hidden)]
pub mod testing;
pub(crate) mod toml_text;
pub mod writer;

use cli::{Cli, Command};
use commands::live_side::StateFile;
use exit::Exit;
use output::Output;
use writer::Writer;

/// Runs one command line and returns how it ended: the one place where a
/// run's error is said and its exit code picked.
pub fn run(cli: Cli) -> Exit {
    let (lint, documented) = commands::findings::lint_command(&cli.command);
    let out = Writer::terminal(Output::new(cli.color, cli.quiet, cli.verbose).for_findings(lint, documented));
    // The one runtime of the run: every broker call of every command, and
    // of every environment of a fleet, runs on it. Broker calls wait on the
    // network; two workers keep one busy with a large answer from holding
    // up the others.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime can be started");
    let _entered = runtime.enter();
    // Dropped before the runtime, whose connections the clients pool.
    let _clients = broker::ClientsShared::start();
    let result = command(cli.command, &cli.connection, &out);
    if let Err(e) = &result {
        out.error(e);
    }
    error::exit(&result)
}

/// Runs one command; what it ends with.
// A match of one arm per command, each handing its arguments on: one piece.
fn command(command: Command, connection: &cli::Connection, out: &Writer) -> error::Result {
    match command {
        Command::Plan { path, state, vhost, out: file, envs, targets, output } => {
            let envs = if state.is_none() { commands::fleet::against_broker(&path, envs, out)? } else { envs };
            let show = commands::Show { targets, ..show(output) };
            if envs.is_empty() {
                let state = state.as_deref().map(|path| StateFile { path, vhost: vhost.as_deref() });
                commands::plan::plan_command(&path, state, file.as_deref(), &show, connection, out)
            } else {
                commands::fleet::plan(&path, &envs, file.as_deref(), &show, connection, out)
            }
        }
        Command::Apply {
            path,
            auto_approve,
            allow_destroy,
            allow_lockout,
            replace,
            drain_timeout,
            lock_timeout,
            envs,
            targets,
        } => {
            let options = commands::apply::Options {
                auto_approve,
                allow_destroy,
                allow_lockout,
                replace,
                drain_timeout,
                lock_timeout,
                destroy: false,
                targets,
            };
            let saved = commands::saved_plan::is_saved_plan(&path);
            let envs = if saved { envs } else { commands::fleet::against_broker(&path, envs, out)? };
            // A saved plan of several environments is rolled out as they are.
            if envs.is_empty() && !commands::saved_plan::is_saved_plans(&path) {
                commands::apply::run(&path, &options, connection, out)
            } else {
                commands::rollout::run(&path, &envs, &options, connection, out)
            }
        }
        Command::Destroy { path, auto_approve, allow_destroy, allow_lockout, lock_timeout, env } => {
            let options = commands::apply::Options {
                auto_approve,
                allow_destroy,
                allow_lockout,
                lock_timeout,
                destroy: true,
                ..commands::apply::Options::default()
            };
            commands::destroy::run(&path, env, &options, connection, out)
        }
        Command::Status { path, path_option, envs } => {
            let path = path.or(path_option).unwrap_or_else(|| "topology".into());
            if envs.is_empty() {
                commands::status::status(connection, out)
            } else {
                commands::fleet::status(&path, &envs, connection, out)
            }
        }
        Command::History { path, vhosts, envs } => {
            if envs.is_empty() {
                commands::status::history(&vhosts, connection, out)
            } else {
                let path = path.unwrap_or_else(|| "topology".into());
                commands::fleet::history(&path, &envs, &vhosts, connection, out)
            }
        }
        Command::Abort { id, auto_approve, lock_timeout } => {
            commands::abort::run(&id, auto_approve, lock_timeout, connection, out)
        }
        Command::Adopt { path, from, auto_approve, lock_timeout } => {
            commands::adopt::run(&path, &from, auto_approve, lock_timeout, connection, out)
        }
        Command::Validate { path, envs, format } => commands::validate::run(&path, &envs, format, out),
        Command::Fmt { path, check } => commands::fmt::run(&path, check, out),
        Command::Lint { rules: true, format, .. } => commands::lint::rules(format, out),
        Command::Completions { shell } => {
            out.out(cli::completions(shell));
            Ok(error::Done::Ok)
        }
        Command::Show { plan, format } => commands::show::run(&plan, format, out),
        Command::Graph { path, vhost, format, services } => {
            commands::graph::run(&path, vhost.as_deref(), format, services, out)
        }
        Command::Lint { path, live, envs, format, deny, rules: false } => {
            let envs = if live { commands::fleet::against_broker(&path, envs, out)? } else { envs };
            let options = commands::lint::Options { live, format, deny_warnings: deny.is_some() };
            commands::lint::run(&path, &envs, &options, connection, out)
        }
        Command::Test { path, envs, live, format } => commands::test::given(&path, envs, live, format, connection, out),
        Command::Route(args) => commands::route::run(&args, connection, out),
        Command::Diff { paths, envs, output } => commands::plan::diff_command(&paths, &envs, &show(output), out),
        Command::Export { path, out: file, envs } => commands::export::run(&path, &envs, file.as_deref(), out),
        Command::Init { path, vhosts, state, import } => {
            let from = match (state, import) {
                (Some(file), _) => commands::init::From::State(file),
                (None, true) => commands::init::From::Broker,
                (None, false) => commands::init::From::Example,
            };
            commands::init::run(&path, &vhosts, from, connection, out)
        }
        Command::Import { state, vhosts, out: dir, objects, into } => match (dir, into) {
            (_, Some(into)) => commands::import_object::run(state.as_deref(), &objects, &into, connection, out),
            (Some(dir), None) => commands::import::run(state.as_deref(), &vhosts, &dir, connection, out),
            (None, None) => {
                Err(error::Error::invalid().line("warren import needs --out DIR, or --object with --into DIR."))
            }
        },
    }
}

fn show(o: cli::PlanOutput) -> commands::Show {
    commands::Show { format: o.format, detailed_exitcode: o.detailed_exitcode, replace: o.replace, targets: Vec::new() }
}
