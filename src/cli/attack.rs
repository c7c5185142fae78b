//! `relanon attack`: what an adversary knowing QI facts (or facts beyond the model) learns
//! from a release.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use relanon::pipeline;

use super::progress::Watch;
use super::Declared;

#[derive(Args)]
pub struct AttackArgs {
    /// The declarations and the source (it supplies the QIs' leaves and hierarchies).
    #[command(flatten)]
    declared: Declared,
    /// The release to attack (default: SET target).
    #[arg(long)]
    release: Option<PathBuf>,
    /// A SQL boolean expression over the QI columns of one family table, columns written
    /// table.column, e.g. "courses.course = 'Physics'" (a column published unchanged may be
    /// named too: an adversary beyond the declared model). Repeat for more facts; facts on
    /// one child table describe distinct rows.
    #[arg(long = "fact", value_name = "SQL", required = true)]
    facts: Vec<String>,
    /// Print the findings as JSON.
    #[arg(long)]
    json: bool,
}

/// Prints the candidates and posteriors; exits 0 whatever the adversary finds.
pub async fn attack(args: AttackArgs, quiet: bool) -> Result<ExitCode> {
    let req = args.declared.request()?;
    let watch = Watch::start(quiet);
    let findings =
        pipeline::attack(&req, args.release.as_deref(), &args.facts, watch.progress()).await?;
    drop(watch);
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&findings)?);
    } else if !quiet {
        out!("{}", findings.summary());
    }
    Ok(ExitCode::SUCCESS)
}
