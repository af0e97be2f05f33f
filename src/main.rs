use std::process::ExitCode;

use clap::Parser;

/// A plan of a large topology makes hundreds of thousands of small
/// allocations, which glibc's allocator spends a quarter of the run on.
/// mimalloc v3 rather than v2: v2 keeps each thread's freed memory for that
/// thread, so what the threads that read the files freed stood idle while
/// the broker's answers were parsed on others. With the purge delay below,
/// a live plan of 100,000 queues peaked at 413 MB resident with v3 and
/// 575 MB with v2, in the same time; `plan --state` of 10,000 queues takes
/// about 30 ms more (docs/development.md, Benchmarks).
#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    give_back_freed_memory();
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

/// A plan parses the files and the broker's answers, dropping each once
/// read, so its peak should be what it holds at once, not what it freed
/// and the allocator kept: mimalloc keeps freed memory a while before
/// giving it back (v2 10 ms, v3 a second), and the kernel may back its
/// arena with transparent huge pages, which a page given back only splits.
/// Huge pages off and a delay of 1 ms, a live plan of 10,000 queues peaked
/// at 81 MB resident instead of 105 MB, and `plan --state` of the same at
/// 52 MB instead of 69 MB, in the same time (with v2). A delay of 0 saved
/// 12 MB more but made every page freed a system call: `plan --state` took
/// half as long again.
/// (docs/development.md, Benchmarks.) Called first in `main`: an option is
/// read when first needed, and the flag holds for the pages touched after.
fn give_back_freed_memory() {
    // `mi_option_purge_delay` of mimalloc v3's `mi_option_e`
    // (include/mimalloc.h; the same number in v2), which the Rust bindings
    // do not name; the version is the lock file's. v3's own delay is a
    // second: the whole of most plans.
    const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
    // SAFETY: mi_option_set only stores a value mimalloc reads later; it
    // is called on the main thread before any other thread exists.
    unsafe {
        libmimalloc_sys::mi_option_set(PURGE_DELAY, 1);
    }
    #[cfg(target_os = "linux")]
    let _ = nix::sys::prctl::set_thp_disable(true);
}
