//! One function per subcommand; each returns the process exit code or an error for main.

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use relanon::pipeline::{self, Request};
use relanon::warehouse::write_staged;

use crate::{Command, Experiment, ExperimentArgs, Generated};

/// The demo's declarations: the bundled university warehouse, k = 5.
const DEMO_DECLARATIONS: &str = include_str!("../sql/university.sql");
/// The hierarchy files those declarations read, bundled so the demo runs from anywhere.
const DEMO_HIERARCHIES: [(&str, &str); 2] = [
    (
        "university_course.csv",
        include_str!("../fixtures/hierarchies/university_course.csv"),
    ),
    (
        "university_book.csv",
        include_str!("../fixtures/hierarchies/university_book.csv"),
    ),
];

/// The thesis experiment's declarations and the hierarchy files they read.
const SYNTHETIC_S: &str = include_str!("../sql/synthetic_s.sql");
const SYNTHETIC_T: &str = include_str!("../sql/synthetic_t.sql");

pub async fn run(command: Command, quiet: bool) -> Result<ExitCode> {
    match command {
        Command::Experiment(args) => experiment(&args, quiet).await,
        Command::Demo { out, parquet } => demo(&out, parquet, quiet).await,
        Command::Anonymize {
            declarations,
            source,
            target,
            overwrite,
            with,
            key_map,
            json,
            report: report_html,
            allow_unverified,
        } => {
            let mut req = Request::from_file(&declarations)?;
            req.source = source;
            req.target = target;
            req.overwrite = overwrite;
            req.with = with;
            req.key_map = key_map;
            req.allow_unverified = allow_unverified;
            req.progress = show_progress(quiet);
            let outcome = pipeline::anonymize(&req).await?;
            if let Some(path) = &report_html {
                write_page(path, &relanon::html::report_page(&outcome.report)?)?;
            }
            let verified = outcome.verdict.passed();
            if json {
                println!("{}", serde_json::to_string_pretty(&outcome.report)?);
            } else if !quiet {
                println!("{}", outcome.report.summary());
                if verified {
                    println!("verify: passed ({} checks)", outcome.verdict.checks.len());
                }
                println!(
                    "release written to {} (report: {})",
                    outcome.target.display(),
                    outcome.report_path.display()
                );
            }
            if verified {
                return Ok(ExitCode::SUCCESS);
            }
            // Written on request only; the failure is said even with --quiet or --json.
            eprintln!(
                "warning: this release FAILED verification and must not be published:\n{}",
                outcome.verdict.summary()
            );
            Ok(ExitCode::from(1))
        }
        Command::Verify {
            declarations,
            source,
            with,
            release,
            key_map,
        } => {
            let mut req = Request::from_file(&declarations)?;
            req.source = source;
            req.with = with;
            req.progress = show_progress(quiet);
            let verdict =
                pipeline::verify_release(&req, release.as_deref(), key_map.as_deref()).await?;
            if !quiet || !verdict.passed() {
                println!("{}", verdict.summary());
            }
            Ok(if verdict.passed() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Command::Attack {
            declarations,
            source,
            release,
            facts,
            json,
        } => {
            let mut req = Request::from_file(&declarations)?;
            req.source = source;
            req.progress = show_progress(quiet);
            let findings = pipeline::attack(&req, release.as_deref(), &facts).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&findings)?);
            } else if !quiet {
                print!("{}", findings.summary());
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Report { report, out } => {
            let out = out.unwrap_or_else(|| report.with_extension("html"));
            let parsed = relanon::report::read(&report)?;
            write_page(&out, &relanon::html::report_page(&parsed)?)?;
            if !quiet {
                println!("wrote {}", out.display());
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Generate {
            kind,
            out,
            students,
            seed,
            sf,
            overwrite,
        } => {
            let set = match kind {
                Generated::University => relanon::generate::university(students, seed),
                Generated::Table2 => relanon::generate::table2(),
                Generated::SyntheticS => relanon::generate::synthetic(students, seed, false),
                Generated::SyntheticT => relanon::generate::synthetic(students, seed, true),
                Generated::Tpch => relanon::generate::tpch(sf)?,
            };
            let path = write_staged(&out, &set, overwrite)?.commit()?;
            if !quiet {
                println!("wrote {}", path.display());
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Writes the university warehouse (001 Sec. V) under `out` with the bundled declarations and
/// hierarchies beside it (pointing at their neighbours); returns the declarations' and the
/// warehouse's paths.
fn write_university(
    out: &Path,
    parquet: bool,
    students: usize,
    seed: u64,
) -> Result<(std::path::PathBuf, std::path::PathBuf)> {
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
async fn demo(out: &Path, parquet: bool, quiet: bool) -> Result<ExitCode> {
    let (decl, source) = write_university(out, parquet, 1000, 42)?;
    let mut req = Request::from_file(&decl)?;
    req.overwrite = true;
    req.progress = show_progress(quiet);
    let outcome = pipeline::anonymize(&req).await?;
    if !quiet {
        println!(
            "relanon demo: 1000 generated students (001 Sec. V) in {}",
            source.display()
        );
        println!("{}", outcome.report.summary());
        println!("verify: passed ({} checks)", outcome.verdict.checks.len());
        println!(
            "release: {}\nreport:  {}\ndeclarations: {}",
            outcome.target.display(),
            outcome.report_path.display(),
            decl.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `relanon experiment`: writes the dataset, its declarations and hierarchies under `out`
/// (like `demo`), runs the table and prints it as Markdown.
async fn experiment(args: &ExperimentArgs, quiet: bool) -> Result<ExitCode> {
    use relanon::experiment::{self, THESIS_VARIANTS};
    use relanon::generate;
    let (out, students, seed) = (args.out.as_path(), args.students, args.seed);
    let (json, html) = (args.json.as_deref(), args.html.as_deref());
    let (ls, only) = (&args.l, &args.only);
    let (name, text, years, title) = match args.which {
        Experiment::ThesisS => (
            "synthetic_s",
            SYNTHETIC_S,
            false,
            "000 Sec. 2.4, Fig. 2.3: l-diversity on syntheticS",
        ),
        Experiment::ThesisT => (
            "synthetic_t",
            SYNTHETIC_T,
            true,
            "000 Sec. 2.4, Fig. 2.4: l-diversity on syntheticT",
        ),
        Experiment::Miracle => {
            return miracle_experiment(args, quiet).await;
        }
    };
    let hierarchies = out.join("hierarchies");
    std::fs::create_dir_all(&hierarchies)
        .with_context(|| format!("cannot create '{}'", hierarchies.display()))?;
    let files = [
        (
            "synthetic_course.csv",
            generate::synthetic_course_hierarchy_csv(),
        ),
        (
            "synthetic_book.csv",
            generate::synthetic_book_hierarchy_csv(),
        ),
        (
            "synthetic_major.csv",
            generate::synthetic_major_hierarchy_csv(),
        ),
        (
            "synthetic_year.csv",
            generate::synthetic_year_hierarchy_csv(),
        ),
    ];
    for (file, csv) in files {
        std::fs::write(hierarchies.join(file), csv)
            .with_context(|| format!("cannot write '{}'", hierarchies.join(file).display()))?;
    }
    let source = format!("{name}.sqlite");
    let text = text
        .replace(&format!("'../out/{name}.sqlite'"), &format!("'{source}'"))
        .replace(
            &format!("'../out/{name}-release.sqlite'"),
            &format!("'releases/{name}-release.sqlite'"),
        )
        .replace("'../fixtures/hierarchies/", "'hierarchies/");
    let decl = out.join(format!("{name}.sql"));
    std::fs::write(&decl, &text).with_context(|| format!("cannot write '{}'", decl.display()))?;
    write_staged(
        &out.join(&source),
        &generate::synthetic(students, seed, years),
        true,
    )?
    .commit()?;
    let work = experiment::work_dir(out);
    std::fs::create_dir_all(&work)
        .with_context(|| format!("cannot create '{}'", work.display()))?;
    let variants: Vec<_> = THESIS_VARIANTS
        .iter()
        .copied()
        .filter(|v| only.is_empty() || only.iter().any(|o| o.eq_ignore_ascii_case(v.name)))
        .collect();
    if variants.is_empty() {
        anyhow::bail!(
            "--only matches no algorithm; choose from {}",
            THESIS_VARIANTS.map(|v| v.name).join(", ")
        );
    }
    let progress = |line: &str| {
        if !quiet {
            eprintln!("{line}");
        }
    };
    let table =
        experiment::thesis(&decl, &work, ls, &variants, &progress, show_progress(quiet)).await?;
    let rows = &table.rows;
    if let Some(path) = json {
        std::fs::write(path, serde_json::to_string_pretty(rows)?)
            .with_context(|| format!("cannot write '{}'", path.display()))?;
    }
    if let Some(path) = html {
        let title = format!("{title} ({students} students, seed {seed})");
        write_page(path, &relanon::html::experiment_page(&title, rows)?)?;
    }
    println!("{}", experiment::markdown(rows));
    Ok(failures(&table.failed))
}

/// `relanon experiment miracle` (001 Sec. V): the university warehouse under `out`; LM, DM
/// and time for MiRaCle, MiRaCleX and both bitmaps versus k (threshold 0.3, the default:
/// the paper names none) and versus threshold at `--sweep-k` (50 in the paper); climit 150
/// as in the paper.
async fn miracle_experiment(args: &ExperimentArgs, quiet: bool) -> Result<ExitCode> {
    use relanon::experiment::{self, MIRACLE_VARIANTS};
    let out = args.out.as_path();
    let (decl, _) = write_university(out, false, args.students, args.seed)?;
    let work = experiment::work_dir(out);
    std::fs::create_dir_all(&work)
        .with_context(|| format!("cannot create '{}'", work.display()))?;
    let mut settings: Vec<(usize, f64)> = args.k.iter().map(|&k| (k, 0.3)).collect();
    // The sweep k at the default threshold may already be in the k sweep: run it once.
    for &th in &args.thresholds {
        if !settings.contains(&(args.sweep_k, th)) {
            settings.push((args.sweep_k, th));
        }
    }
    let progress = |line: &str| {
        if !quiet {
            eprintln!("{line}");
        }
    };
    let table = experiment::miracle(
        &decl,
        &work,
        &settings,
        &MIRACLE_VARIANTS,
        &progress,
        show_progress(quiet),
    )
    .await?;
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&table.rows)?)
            .with_context(|| format!("cannot write '{}'", path.display()))?;
    }
    if let Some(path) = &args.html {
        write_page(
            path,
            &relanon::html::miracle_page(&table.rows, args.sweep_k)?,
        )?;
    }
    println!("{}", experiment::k_markdown(&table.rows));
    Ok(failures(&table.failed))
}

/// Whether to draw the phases of a run: only for a person watching a terminal (bars in a log
/// file or a pipe are noise) who did not pass `--quiet`.
fn show_progress(quiet: bool) -> bool {
    !quiet && std::io::stderr().is_terminal()
}

/// An experiment's exit: 0 when every run succeeded; else each failure said on stderr (even
/// with --quiet) and 1, the table above being incomplete.
fn failures(failed: &[String]) -> ExitCode {
    if failed.is_empty() {
        return ExitCode::SUCCESS;
    }
    for f in failed {
        eprintln!("error: left out of the table: {f}");
    }
    ExitCode::from(1)
}

/// Writes an HTML page (`relanon report`, `anonymize --report`, `experiment --html`).
fn write_page(path: &Path, html: &str) -> Result<()> {
    std::fs::write(path, html).with_context(|| {
        format!(
            "cannot write the HTML page '{}'; check that its directory exists and is writable",
            path.display()
        )
    })
}
