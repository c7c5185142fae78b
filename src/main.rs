//! The `relanon` command line: a thin entry point that dispatches to the library. Errors are
//! reported once, here, with exit code 2; a release that fails verification exits 1.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args as ClapArgs, Parser, Subcommand, ValueEnum};

mod commands;

#[derive(Parser)]
#[command(
    name = "relanon",
    version,
    about = "Anonymize a relational warehouse so every person's whole record hides among k others"
)]
struct Args {
    /// Print nothing but errors.
    #[arg(long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Generate the bundled university warehouse, anonymize it (k = 5) into ./out/, verify it, print a summary.
    Demo {
        /// Where to write the demo's warehouse and release.
        #[arg(long, default_value = "out")]
        out: PathBuf,
        /// Read the generated warehouse from Parquet instead of SQLite.
        #[arg(long)]
        parquet: bool,
    },
    /// Anonymize the warehouse a declarations file describes.
    Anonymize {
        /// The declarations file (SQL).
        declarations: PathBuf,
        /// Override SET source.
        #[arg(long)]
        source: Option<PathBuf>,
        /// Override SET target.
        #[arg(long)]
        target: Option<PathBuf>,
        /// Replace an existing target.
        #[arg(long)]
        overwrite: bool,
        /// Override ANONYMIZE options of the same name, written as inside WITH (...), e.g.
        /// --with "k = 10, algorithm = 'miraclex'".
        #[arg(long, value_name = "OPTIONS")]
        with: Option<String>,
        /// Also write the released-to-source key map here (mode 0600; never inside the release).
        #[arg(long, value_name = "PATH")]
        key_map: Option<PathBuf>,
        /// Print the report as JSON instead of the summary.
        #[arg(long)]
        json: bool,
        /// Also write the report as a self-contained HTML page here.
        #[arg(long, value_name = "PATH")]
        report: Option<PathBuf>,
        /// Write the release even if it fails verification, and exit 1 (to study the
        /// single-table baselines; such a release must never be published).
        #[arg(long)]
        allow_unverified: bool,
    },
    /// Independently re-check a release: exit 0 only if it is k-anonymous, truthful and key-atomic.
    Verify {
        /// The declarations file the release was made from.
        declarations: PathBuf,
        /// Override SET source.
        #[arg(long)]
        source: Option<PathBuf>,
        /// Override ANONYMIZE options of the same name, written as inside WITH (...), e.g.
        /// --with "k = 10, algorithm = 'miraclex'".
        #[arg(long, value_name = "OPTIONS")]
        with: Option<String>,
        /// The release to check (default: SET target).
        #[arg(long)]
        release: Option<PathBuf>,
        /// The key map `anonymize --key-map` wrote (needed unless keys = 'preserve').
        #[arg(long, value_name = "PATH")]
        key_map: Option<PathBuf>,
    },
    /// What an adversary who knows QI facts about one entity learns from a release: how many
    /// released entities fit every fact (1 = singled out) and the posterior of each sensitive
    /// column.
    Attack {
        /// The declarations file the release was made from.
        declarations: PathBuf,
        /// Override SET source (it supplies the QIs' leaves and hierarchies).
        #[arg(long)]
        source: Option<PathBuf>,
        /// The release to attack (default: SET target).
        #[arg(long)]
        release: Option<PathBuf>,
        /// A SQL boolean expression over the QI columns of one family table, columns written
        /// table.column, e.g. "courses.course = 'Physics'". Repeat for more facts; facts on
        /// one child table describe distinct rows.
        #[arg(long = "fact", value_name = "SQL", required = true)]
        facts: Vec<String>,
        /// Print the findings as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Reproduce a paper's experiment: generate its data under --out, run every algorithm and
    /// parameter through the whole pipeline (every release verified), print the table.
    Experiment(ExperimentArgs),
    /// Draw a report.json (written by anonymize) as a self-contained HTML page a person can read.
    Report {
        /// The report.json to draw.
        report: PathBuf,
        /// Where to write the page (default: beside the JSON, same stem, .html).
        #[arg(long, value_name = "PATH")]
        out: Option<PathBuf>,
    },
    /// Write a seeded synthetic warehouse or TPC-H (SQLite file, or Parquet directory).
    Generate {
        #[arg(value_enum)]
        kind: Generated,
        /// Output: a .sqlite file or a directory for Parquet.
        #[arg(long)]
        out: PathBuf,
        /// Number of students (university, synthetic-s, synthetic-t).
        #[arg(long, default_value_t = 1000)]
        students: usize,
        #[arg(long, default_value_t = 42)]
        seed: u64,
        /// TPC-H scale factor (tpch only): 1 is 150 000 customers, 1.5 M orders, ~6 M line items.
        #[arg(long, default_value_t = 0.01)]
        sf: f64,
        #[arg(long)]
        overwrite: bool,
    },
}

/// `relanon experiment`'s arguments.
#[derive(ClapArgs)]
struct ExperimentArgs {
    #[arg(value_enum)]
    which: Experiment,
    #[arg(long, default_value = "out/experiment")]
    out: PathBuf,
    #[arg(long, default_value_t = 1000)]
    students: usize,
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// thesis-s / thesis-t: the l values, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "2,3,4,5")]
    l: Vec<usize>,
    /// thesis-s / thesis-t: only these algorithms (names as printed, e.g. CToff-LSAP),
    /// comma-separated.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// miracle: the k values swept at threshold 0.3, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "2,5,10,25,50,100")]
    k: Vec<usize>,
    /// miracle: the k at which the thresholds are swept.
    #[arg(long, default_value_t = 50)]
    sweep_k: usize,
    /// miracle: the thresholds swept at --sweep-k, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1"
    )]
    thresholds: Vec<f64>,
    /// Also write the table as JSON here.
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
    /// Also write the table and its plots as a self-contained HTML page here.
    #[arg(long, value_name = "PATH")]
    html: Option<PathBuf>,
}

/// The papers' experiments `experiment` reproduces.
#[derive(Clone, Copy, ValueEnum)]
enum Experiment {
    /// 000 Sec. 2.4, Fig. 2.3: LM, query accuracy, KL and time for l = 2..5 on syntheticS.
    ThesisS,
    /// 000 Sec. 2.4, Fig. 2.4: the same on syntheticT (a college-year level added).
    ThesisT,
    /// 001 Sec. V, Fig. 4-8: LM, DM and time of MiRaCle, MiRaCleX and the bitmap baselines
    /// versus k and versus threshold on the university warehouse.
    Miracle,
}

/// The synthetic warehouses `generate` writes.
#[derive(Clone, Copy, ValueEnum)]
enum Generated {
    /// 001 Sec. V: students, courses, books.
    University,
    /// 001 Table II: the paper's four students.
    Table2,
    /// 000 Sec. 2.4 syntheticS: students, enrollments, purchases.
    SyntheticS,
    /// 000 Sec. 2.4 syntheticT: students, years, enrollments, purchases.
    SyntheticT,
    /// TPC-H at --sf: customer, orders, lineitem, with nation, region, part, supplier.
    Tpch,
}

fn main() -> ExitCode {
    let args = Args::parse();
    // One thread count for every phase: rayon's (RAYON_NUM_THREADS, else one per core)
    // sizes the async runtime too, and the warehouse's DataFusion partitions follow it.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(rayon::current_num_threads())
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(commands::run(args.command, args.quiet)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
