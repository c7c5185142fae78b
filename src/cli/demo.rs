//! `relanon demo`: the bundled university warehouse generated, anonymized at k = 5 and
//! verified in one step; and the university under an `--out` folder, which the MiRaCle
//! experiment reuses.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use relanon::pipeline::{self, Request};
use relanon::warehouse::write_staged;

use super::progress::Watch;

#[derive(Args)]
pub struct DemoArgs {
    /// Where to write the demo's warehouse and release.
    #[arg(long, default_value = "out")]
    out: PathBuf,
    /// Read the generated warehouse from Parquet instead of SQLite.
    #[arg(long)]
    parquet: bool,
}

/// The demo's declarations: the bundled university warehouse, k = 5.
const DEMO_DECLARATIONS: &str = include_str!("../../sql/university.sql");
/// The hierarchy files those declarations read, bundled so the demo runs from anywhere.
const DEMO_HIERARCHIES: [(&str, &str); 2] = [
    (
        "university_course.csv",
        include_str!("../../fixtures/hierarchies/university_course.csv"),
    ),
    (
        "university_book.csv",
        include_str!("../../fixtures/hierarchies/university_book.csv"),
    ),
];

/// Writes the university warehouse (001 Sec. V) under `out` with the bundled declarations and
/// hierarchies beside it (pointing at their neighbours); returns the declarations' and the
/// warehouse's paths.
pub(super) fn write_university(
    out: &Path,
    parquet: bool,
    students: usize,
    seed: u64,
) -> Result<(PathBuf, PathBuf)> {
    let hierarchies = out.join("hierarchies");
    std::fs::create_dir_all(&hierarchies)
        .with_context(|| format!("cannot create '{}'", hierarchies.display()))?;
    for (name, text) in DEMO_HIERARCHIES {
        std::fs::write(hierarchies.join(name), text)
            .with_context(|| format!("cannot write '{}'", hierarchies.join(name).display()))?;
    }
    // The repository's declarations live in sql/ and point at ../out and ../fixtures; the copy
    // in `out` points at its neighbours instead.
    let (source_name, target_name) = if parquet {
        ("university-parquet", "university-parquet-release")
    } else {
        ("university.sqlite", "university-release.sqlite")
    };
    let text = DEMO_DECLARATIONS
        .replace("'../out/university.sqlite'", &format!("'{source_name}'"))
        .replace(
            "'../out/university-release.sqlite'",
            &format!("'{target_name}'"),
        )
        .replace("'../fixtures/hierarchies/", "'hierarchies/");
    let decl = out.join(if parquet {
        "university-parquet.sql"
    } else {
        "university.sql"
    });
    std::fs::write(&decl, &text).with_context(|| format!("cannot write '{}'", decl.display()))?;
    let source = out.join(source_name);
    write_staged(
        &source,
        &relanon::generate::university(students, seed),
        true,
    )?
    .commit()?;
    Ok((decl, source))
}

/// Generates the university warehouse (001 Sec. V, 1000 students, seed 42) under `out`,
/// writes the bundled declarations and hierarchies beside it (`out/university.sql`, runnable
/// again with `relanon anonymize`), anonymizes, verifies and prints what happened.
pub async fn demo(args: &DemoArgs, quiet: bool) -> Result<ExitCode> {
    let (decl, source) = write_university(&args.out, args.parquet, 1000, 42)?;
    let mut req = Request::from_file(&decl)?;
    req.overwrite = true;
    let watch = Watch::start(quiet);
    let outcome = pipeline::anonymize(&req, watch.progress()).await?;
    drop(watch);
    if !quiet {
        outln!(
            "relanon demo: 1000 generated students (001 Sec. V) in {}",
            source.display()
        );
        outln!("{}", outcome.report.summary());
        outln!("verify: passed ({} checks)", outcome.verdict.checks.len());
        outln!(
            "release: {}\nreport:  {}\ndeclarations: {}",
            outcome.target.display(),
            outcome.report_path.display(),
            decl.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
