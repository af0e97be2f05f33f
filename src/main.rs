use std::process::ExitCode;

use clap::Parser;

/// A plan of a large topology makes hundreds of thousands of small
/// allocations, which glibc's allocator spends a quarter of the run on.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    warren::run(warren::cli::Cli::parse()).into()
}
