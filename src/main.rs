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
    match runtime.block_on(cli::run(args.command, args.quiet)) {
        Ok(code) => code,
        Err(e) => {
            errln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
