use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    warren::run(warren::cli::Cli::parse()).into()
}
