//! One function per subcommand; each returns the process exit code or an error for main.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use relanon::pipeline::{self, Request};
use relanon::warehouse::write_staged;

use crate::{Command, Generated};

/// The demo's declarations: the bundled university warehouse, k = 5.
const DEMO_DECLARATIONS: &str = include_str!("../sql/university.sql");

pub async fn run(command: Command, quiet: bool) -> Result<ExitCode> {
    match command {
        Command::Demo { out, parquet } => demo(&out, parquet, quiet).await,
        Command::Anonymize { declarations, source, target, overwrite, key_map, json } => {
            let mut req = Request::from_file(&declarations)?;
            req.source = source;
            req.target = target;
            req.overwrite = overwrite;
            req.key_map = key_map;
            let outcome = pipeline::anonymize(&req).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&outcome.report)?);
            } else if !quiet {
                println!("{}", outcome.report.summary());
                println!("verify: passed ({} checks)", outcome.verdict.checks.len());
                println!("release written to {} (report: {})", outcome.target.display(), outcome.report_path.display());
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Verify { declarations, source, release, key_map } => {
            let mut req = Request::from_file(&declarations)?;
            req.source = source;
            let verdict = pipeline::verify_release(&req, release.as_deref(), key_map.as_deref()).await?;
            if !quiet || !verdict.passed() {
                println!("{}", verdict.summary());
            }
            Ok(if verdict.passed() { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
        Command::Generate { kind, out, students, seed, overwrite } => {
            let set = match kind {
                Generated::University => relanon::generate::university(students, seed),
                Generated::Table2 => relanon::generate::table2(),
            };
            let path = write_staged(&out, &set, overwrite)?.commit()?;
            if !quiet {
                println!("wrote {}", path.display());
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Generates the university warehouse (001 Sec. V, 1000 students, seed 42) under `out`,
/// anonymizes it with the bundled declarations and prints what happened.
async fn demo(out: &Path, parquet: bool, quiet: bool) -> Result<ExitCode> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create '{}'", out.display()))?;
    let (source, target): (PathBuf, PathBuf) = if parquet {
        (out.join("university-parquet"), out.join("university-parquet-release"))
    } else {
        (out.join("university.sqlite"), out.join("university-release.sqlite"))
    };
    write_staged(&source, &relanon::generate::university(1000, 42), true)?.commit()?;
    let text = DEMO_DECLARATIONS.to_string();
    let req = Request {
        text,
        base: PathBuf::from("."),
        origin: "sql/university.sql".to_string(),
        source: Some(source.clone()),
        target: Some(target),
        overwrite: true,
        key_map: None,
    };
    let outcome = pipeline::anonymize(&req).await?;
    if !quiet {
        println!("relanon demo: 1000 generated students (001 Sec. V) in {}", source.display());
        println!("{}", outcome.report.summary());
        println!("verify: passed ({} checks)", outcome.verdict.checks.len());
        println!("release: {}\nreport:  {}", outcome.target.display(), outcome.report_path.display());
    }
    Ok(ExitCode::SUCCESS)
}
