//! The command line: clap's types, one module and one function per subcommand, and the
//! argument groups the subcommands share. Each function returns the process exit code, or an
//! error that `main` reports once with exit code 2.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};
use relanon::outputs::{self, Input, Kind, Output};
use relanon::pipeline::Request;
use relanon::warehouse::staging;

mod anonymize;
mod answer_text;
mod attack;
#[cfg(feature = "distributed")]
mod cluster;
mod demo;
mod experiment;
mod explore;
mod generate;
mod init;
mod negotiate;
mod plan;
mod progress;
mod report;
mod verify;

#[derive(Parser)]
#[command(
    name = "relanon",
    version,
    about = "Anonymize a relational warehouse so every person's whole record hides among k others"
)]
pub struct Cli {
    /// Print nothing but errors.
    #[arg(long, global = true)]
    pub quiet: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Propose a declarations file from the data: the entity, keys, a role with its reason
    /// for every column, and hierarchies; ready to review, and runnable as it is.
    Init(init::InitArgs),
    /// A dry run: the family with row counts and fan-out, every column's fate, the lines
    /// still marked `-- review`, warnings and a rough time estimate; nothing is written.
    Plan(plan::PlanArgs),
    /// Build the annotated generalization lattice (every node's suppression per k, and per
    /// l when the entity table has sensitive columns) and write it for `negotiate`.
    Lattice(negotiate::LatticeArgs),
    /// Ask for k (or l), a suppression budget and the most generalization accepted per
    /// column: the exact answer over the lattice, or three relaxations; --accept releases one.
    Negotiate(negotiate::NegotiateArgs),
    /// Generate the bundled university warehouse, anonymize it (k = 5) into ./out/, verify it, print a summary.
    Demo(demo::DemoArgs),
    /// Anonymize the warehouse a declarations file describes.
    Anonymize(anonymize::AnonymizeArgs),
    /// Independently re-check a release: exit 0 only if the declared model holds (k-anonymity, l-diversity or anatomy), it is truthful, key-atomic and every column has a declared role.
    Verify(verify::VerifyArgs),
    /// What an adversary who knows QI facts about one entity learns from a release: how many
    /// released entities fit every fact (1 = singled out) and the posterior of each sensitive
    /// column.
    Attack(attack::AttackArgs),
    /// Reproduce a paper's experiment: generate its data under --out, run every algorithm and
    /// parameter through the whole pipeline (every release verified), print the table.
    Experiment(experiment::ExperimentArgs),
    /// Draw a report.json (written by anonymize) as a self-contained HTML page a person can read.
    Report(report::ReportArgs),
    /// Write a seeded synthetic warehouse or TPC-H (SQLite file, or Parquet directory).
    Generate(generate::GenerateArgs),
    /// Run a scheduler or an executor of a relanon cluster (Apache DataFusion Ballista with
    /// relanon's shard operator), for `anonymize --cluster`.
    #[cfg(feature = "distributed")]
    #[command(subcommand)]
    Cluster(cluster::ClusterCommand),
}

/// Runs one subcommand.
pub async fn run(command: Command, quiet: bool) -> Result<ExitCode> {
    match command {
        Command::Init(args) => init::init(args, quiet).await,
        Command::Plan(args) => plan::plan(args, quiet).await,
        Command::Lattice(args) => negotiate::lattice(args, quiet).await,
        Command::Negotiate(args) => negotiate::negotiate(args, quiet).await,
        Command::Demo(args) => demo::demo(&args, quiet).await,
        Command::Anonymize(args) => anonymize::anonymize(args, quiet).await,
        Command::Verify(args) => verify::verify(args, quiet).await,
        Command::Attack(args) => attack::attack(args, quiet).await,
        Command::Experiment(args) => experiment::experiment(&args, quiet).await,
        Command::Report(args) => report::report(args, quiet),
        Command::Generate(args) => generate::generate(args, quiet),
        #[cfg(feature = "distributed")]
        Command::Cluster(command) => cluster::cluster(command).await,
    }
}

/// The declarations a run reads, and where its source is (anonymize, verify, attack).
#[derive(Args)]
pub struct Declared {
    /// The declarations file (SQL).
    pub declarations: PathBuf,
    /// Override SET source.
    #[arg(long)]
    pub source: Option<PathBuf>,
}

impl Declared {
    /// The request these arguments make.
    fn request(&self) -> Result<Request> {
        let mut req = Request::from_file(&self.declarations)?;
        req.source = self.source.clone();
        Ok(req)
    }
}

/// ANONYMIZE options given on the command line (anonymize, verify).
#[derive(Args)]
pub struct Overrides {
    /// Override ANONYMIZE options of the same name, written as inside WITH (...), e.g.
    /// --with "k = 10, algorithm = 'miraclex'".
    #[arg(long, value_name = "OPTIONS")]
    pub with: Option<String>,
}

/// The synthetic warehouses `generate` writes.
#[derive(Clone, Copy, ValueEnum)]
pub enum Generated {
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

/// Writes an HTML page (`relanon report`, `anonymize --report`, `experiment --html`) through
/// a temporary file and a rename, so a full disk never leaves half a page; `reads` are the
/// files the command read, never written over, and an existing file is replaced only if it
/// is a page relanon drew.
fn write_page(path: &Path, html: &str, reads: &[Input]) -> Result<()> {
    let page = Output {
        kind: Kind::Page,
        path: path.to_path_buf(),
        option: "the page",
    };
    outputs::check(&[page], reads, true)?;
    let context = || {
        format!(
            "cannot write the HTML page '{}'; check that its directory exists and is writable",
            path.display()
        )
    };
    let staged = staging::stage_file(path, html.as_bytes(), None).with_context(context)?;
    staging::commit_all(vec![staged], path, true).with_context(context)
}
