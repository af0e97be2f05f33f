//! Command-line arguments. Only this module knows about clap; the rest of
//! warren sees the plain [`Command`] values it converts to.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "warren",
    version,
    about = "RabbitMQ topology as code: validate, plan and apply"
)]
pub struct Cli {
    /// When to use colour in output (NO_COLOR is honoured with `auto`).
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// Print more detail.
    #[arg(short, long, global = true, conflicts_with = "quiet")]
    pub verbose: bool,
    /// Print only errors and the final summary.
    #[arg(short, long, global = true)]
    pub quiet: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Parse and check topology files; no broker needed.
    Validate {
        /// A topology file, or a directory of them (every *.toml below it).
        #[arg(default_value = "topology")]
        path: PathBuf,
    },
    /// Write topology files (one per vhost, and users.toml) for what a
    /// definitions export holds.
    Import {
        /// A definitions export (required until broker support lands).
        #[arg(long, value_name = "FILE")]
        state: PathBuf,
        /// Import only this vhost; repeat for more. Default: every vhost.
        #[arg(long = "vhost", value_name = "VHOST")]
        vhosts: Vec<String>,
        /// The directory to write to; it must not hold *.toml files yet.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
}
