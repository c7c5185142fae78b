//! The `relanon` command line: a thin entry point that parses the arguments, starts the
//! runtime and dispatches to [`cli`]. Errors are reported once, here, with exit code 2; a
//! release that fails verification exits 1.

use std::process::ExitCode;

use clap::Parser;

/// `println!` that never panics: on a closed or full stdout (`| head`, `> /dev/full`) the
/// text is lost, never the run's outcome.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// `print!` that never panics, for the same reason.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// `eprintln!` that never panics, for the same reason.
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

mod cli;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    // One thread count for every phase: rayon's (RAYON_NUM_THREADS, else one per core)
    // sizes the async runtime too, and the warehouse's DataFusion partitions follow it.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(rayon::current_num_threads())
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            errln!("error: cannot start the runtime: {e}");
            return ExitCode::from(2);
        }
    };
    runtime.spawn(on_signal());
    match runtime.block_on(cli::run(args.command, args.quiet)) {
        Ok(code) => code,
        Err(e) => {
            errln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// Ctrl-C (SIGINT) or SIGTERM: removes what this run was writing and exits 130 or 143 with a
/// message. Nothing staged reaches a target: a commit under way is completed by the next run
/// on that target (`warehouse::staging`).
async fn on_signal() {
    let code = wait_for_signal().await;
    let removed = relanon::warehouse::staging::remove_in_flight();
    errln!(
        "interrupted: removed {} staged file(s) of this run; a commit already under way is completed by the next run on its target",
        removed.len()
    );
    std::process::exit(code);
}

#[cfg(unix)]
async fn wait_for_signal() -> i32 {
    use tokio::signal::unix::{signal, SignalKind};
    // A file-size limit reached (SIGXFSZ) is caught rather than left to kill the process: the
    // write then fails (EFBIG) and the run ends with its error and removes what it staged, as
    // on a full disk. Held for the life of the process.
    let _file_size = signal(SignalKind::from_raw(libc::SIGXFSZ));
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        // Without handlers the default actions stay: the process dies, staged files remain
        // and the next run on the target removes them.
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => 130,
        _ = term.recv() => 143,
    }
}

#[cfg(not(unix))]
async fn wait_for_signal() -> i32 {
    match tokio::signal::ctrl_c().await {
        Ok(()) => 130,
        Err(_) => std::future::pending().await,
    }
}
