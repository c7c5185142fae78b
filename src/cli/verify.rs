//! `relanon verify`: the independent checker on a committed release.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use relanon::budget::Budget;
use relanon::pipeline;

use super::progress::Watch;
use super::{Declared, Overrides};

#[derive(Args)]
pub struct VerifyArgs {
    #[command(flatten)]
    declared: Declared,
    #[command(flatten)]
    overrides: Overrides,
    /// The release to check (default: SET target).
    #[arg(long)]
    release: Option<PathBuf>,
    /// The key map `anonymize --key-map` wrote (needed unless keys = 'preserve').
    #[arg(long, value_name = "PATH")]
    key_map: Option<PathBuf>,
    /// What the check may hold in memory, such as 8GiB (default: half this machine's
    /// memory): a release larger than that is checked a partition at a time.
    #[arg(long, value_name = "SIZE")]
    memory_budget: Option<Budget>,
}

/// Prints the verdict (always when it fails); exits 0 only if every check passed.
pub async fn verify(args: VerifyArgs, quiet: bool) -> Result<ExitCode> {
    let mut req = args.declared.request()?;
    req.with = args.overrides.with;
    req.memory_budget = args.memory_budget;
    let watch = Watch::start(quiet);
    let verdict = pipeline::verify_release(
        &req,
        args.release.as_deref(),
        args.key_map.as_deref(),
        watch.progress(),
    )
    .await?;
    drop(watch);
    if !quiet || !verdict.passed() {
        outln!("{}", verdict.summary());
    }
    Ok(if verdict.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
