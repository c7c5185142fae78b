//! `relanon anonymize`: a release, verified, with its report.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use relanon::budget::Budget;
use relanon::pipeline;

use super::progress::Watch;
use super::{Declared, Overrides};

#[derive(Args)]
pub struct AnonymizeArgs {
    #[command(flatten)]
    declared: Declared,
    #[command(flatten)]
    overrides: Overrides,
    /// Override SET target.
    #[arg(long)]
    target: Option<PathBuf>,
    /// Replace an existing target.
    #[arg(long)]
    overwrite: bool,
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
    /// Split the entities into N shards, each with its whole tree, read from the source and
    /// anonymized one at a time (contiguous ranges of the shape order; each shard holds at
    /// least k entities), for a family larger than memory.
    #[arg(long, value_name = "N")]
    shards: Option<usize>,
    /// What the run may hold in memory, such as 8GiB or 1500MiB (default: half this
    /// machine's memory). A family larger than that is anonymized in the fewest shards that
    /// fit; verify and the final sort keep within it too. Refused, saying how much is
    /// needed, when not even a shard of k entities fits.
    #[arg(long, value_name = "SIZE")]
    memory_budget: Option<Budget>,
    /// Anonymize the shards on a relanon cluster: its scheduler as df://HOST:PORT, or
    /// `standalone` for a scheduler and an executor in this process. Needs --shards and a
    /// Parquet source every executor reads at the same path.
    #[cfg(feature = "distributed")]
    #[arg(long, value_name = "URL")]
    cluster: Option<String>,
    /// Where the cluster writes each shard's rows before anonymizing it: a directory that
    /// does not exist yet, on storage every executor reads and writes at this path; removed
    /// after the run (default: a new directory beside the warehouse).
    #[cfg(feature = "distributed")]
    #[arg(long, value_name = "DIR", requires = "cluster")]
    cluster_scratch: Option<std::path::PathBuf>,
}

/// Anonymizes, prints the summary (or the report as JSON) and says where the release went;
/// exits 1 for a release written with `--allow-unverified` that failed verification.
pub async fn anonymize(args: AnonymizeArgs, quiet: bool) -> Result<ExitCode> {
    let mut req = args.declared.request()?;
    req.target = args.target;
    req.overwrite = args.overwrite;
    req.with = args.overrides.with;
    req.key_map = args.key_map;
    req.allow_unverified = args.allow_unverified;
    req.shards = args.shards;
    req.memory_budget = args.memory_budget;
    #[cfg(feature = "distributed")]
    {
        req.cluster = args
            .cluster
            .as_deref()
            .map(pipeline::cluster::Cluster::parse)
            .transpose()?;
        req.cluster_scratch = args.cluster_scratch;
    }
    // Written with the release, as one set.
    req.page = args.report.clone();
    let watch = Watch::start(quiet);
    let outcome = pipeline::anonymize(&req, watch.progress()).await?;
    drop(watch);
    let verified = outcome.verdict.passed();
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&outcome.report)?);
    } else if !quiet {
        outln!("{}", outcome.report.summary());
        if verified {
            let (checks, how) = (outcome.verdict.checks.len(), outcome.verdict.read_as());
            outln!("verify: passed ({checks} checks{how})");
        }
        outln!(
            "release written to {} (report: {})",
            outcome.target.display(),
            outcome.report_path.display()
        );
    }
    if verified {
        return Ok(ExitCode::SUCCESS);
    }
    // Written on request only; the failure is said even with --quiet or --json.
    errln!(
        "warning: this release FAILED verification and must not be published:\n{}",
        outcome.verdict.summary()
    );
    Ok(ExitCode::from(1))
}
