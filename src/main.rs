use std::process::ExitCode;

use clap::Parser;

/// A plan of a large topology makes hundreds of thousands of small
/// allocations, which glibc's allocator spends a quarter of the run on.
/// mimalloc v2 rather than v3: v3 keeps freed memory for a second before
/// giving it back, the whole of a plan's run, which made a plan of 100,000
/// queues peak 70 MB higher (see docs/development.md, Benchmarks).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // The completion scripts' question, asked before clap parses anything.
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if args.first().is_some_and(|a| a == warren::cli::COMPLETE_ENVS) {
        print!("{}", warren::cli::complete_envs(args.get(1).map(std::path::Path::new)));
        return ExitCode::SUCCESS;
    }
    match warren::cli::Cli::try_parse() {
        Ok(cli) => warren::run(cli).into(),
        // --help and --version end well; a wrong argument is an error (exit
        // 1), never clap's 2, which warren's contract gives to "changes".
        Err(e) => {
            let _ = e.print();
            if e.use_stderr() { warren::exit::Exit::Error.into() } else { ExitCode::SUCCESS }
        }
    }
}
