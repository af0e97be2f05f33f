//! warren: RabbitMQ topology as code.
//!
//! Data flows one way: files (`desired`) become a [`model::Topology`];
//! `lint` checks it. See the README's architecture section.

pub mod cli;
pub mod commands;
pub mod desired;
pub mod diagnostic;
pub mod exit;
pub mod export;
pub mod lint;
pub mod model;
pub mod output;
pub mod source;
#[doc(hidden)]
pub mod testing;

use cli::{Cli, Command};
use exit::Exit;
use output::Output;

/// Runs one command line and returns how it ended.
pub fn run(cli: Cli) -> Exit {
    let out = Output::new(cli.color, cli.quiet, cli.verbose);
    match cli.command {
        Command::Validate { path } => commands::validate::run(&path, out),
        Command::Export { path, out: file } => commands::export::run(&path, file.as_deref(), out),
    }
}
