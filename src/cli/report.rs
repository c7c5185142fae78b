//! `relanon report`: a report.json drawn as one HTML page.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use relanon::outputs::Input;

use super::write_page;

#[derive(Args)]
pub struct ReportArgs {
    /// The report.json to draw.
    report: PathBuf,
    /// Where to write the page (default: beside the JSON, same stem, .html).
    #[arg(long, value_name = "PATH")]
    out: Option<PathBuf>,
}

/// Reads the report and writes the page.
pub fn report(args: ReportArgs, quiet: bool) -> Result<ExitCode> {
    let out = args
        .out
        .unwrap_or_else(|| args.report.with_extension("html"));
    let parsed = relanon::report::read(&args.report)?;
    let reads = [Input {
        path: args.report.clone(),
        what: "the report.json it draws",
    }];
    write_page(&out, &relanon::html::report_page(&parsed)?, &reads)?;
    if !quiet {
        outln!("wrote {}", out.display());
    }
    Ok(ExitCode::SUCCESS)
}
