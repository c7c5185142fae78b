//! `relanon experiment`: the papers' experiments reproduced, every release verified (000
//! Sec. 2.4 on syntheticS / syntheticT; 001 Sec. V on the university).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use relanon::warehouse::write_staged;

use super::demo::write_university;
use super::progress::Watch;
use super::write_page;

/// The thesis experiment's declarations and the hierarchy files they read.
const SYNTHETIC_S: &str = include_str!("../../sql/synthetic_s.sql");
const SYNTHETIC_T: &str = include_str!("../../sql/synthetic_t.sql");

/// `experiment miracle`'s k sweep when --k is not given (001 Sec. V's settings).
const MIRACLE_KS: [usize; 6] = [2, 5, 10, 25, 50, 100];

/// `experiment hybrid`'s k where p varies, and p (percent) where k varies: 003 Sec. 5's.
const HYBRID_K: usize = 10;
const HYBRID_P: f64 = 1.0;

/// `experiment frontier`'s k when --k is not given.
const FRONTIER_K: usize = 5;

/// `relanon experiment`'s arguments.
#[derive(Args)]
pub struct ExperimentArgs {
    #[arg(value_enum)]
    which: Experiment,
    #[arg(long, default_value = "out/experiment")]
    out: PathBuf,
    #[arg(long, default_value_t = 1000)]
    students: usize,
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// thesis-s / thesis-t (default 2,3,4,5) and anatomy (default 2,3,4): the l values,
    /// comma-separated.
    #[arg(long, value_delimiter = ',')]
    l: Vec<usize>,
    /// anatomy: the partition counts of the sweep (Figs. 3.15-3.16), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2,3,4,5,6,7,8,9,10")]
    partitions: Vec<usize>,
    /// thesis-s / thesis-t: only these algorithms (names as printed, e.g. CToff-LSAP);
    /// frontier: only these lines (e.g. 'MiRaCleX (shape)') or algorithms (e.g. MiRaCleX,
    /// both orders); comma-separated.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// miracle: the k values swept at threshold 0.3, comma-separated (default
    /// 2,5,10,25,50,100); hybrid: the k values swept at p = 1 (the same default);
    /// frontier: the one k (default 5).
    #[arg(long, value_delimiter = ',')]
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
    /// frontier: the suppression prices swept, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "0.25,0.5,1,2,4,8,16,32")]
    prices: Vec<f64>,
    /// frontier: the declarations file of the warehouse to sweep (default: the university
    /// warehouse written under --out, as `experiment miracle` writes it).
    #[arg(long, value_name = "PATH")]
    decl: Option<PathBuf>,
    /// negotiation, hybrid: the directory holding UCI Adult as ARX distributes it (adult.csv and
    /// adult_hierarchy_*.csv).
    #[arg(long, value_name = "DIR")]
    data: Option<PathBuf>,
    /// hybrid: the p values swept at k = 10, in percent, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "0,0.5,1,2,5")]
    p: Vec<f64>,
    /// hybrid: the statistical variants' significance level.
    #[arg(long, default_value_t = 0.05)]
    alpha: f64,
    /// hybrid: the suppression budget of its third setting (a share of the people).
    #[arg(long, default_value_t = 0.05)]
    max_suppression: f64,
    /// fragmentation: the QI columns of the wide tables, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "10,20,30,40")]
    dims: Vec<usize>,
    /// fragmentation: the rows of each wide table.
    #[arg(long, default_value_t = 30_000)]
    rows: usize,
    /// Also write the table as JSON here.
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
    /// Also write the table and its plots as a self-contained HTML page here.
    #[arg(long, value_name = "PATH")]
    html: Option<PathBuf>,
}

/// The papers' experiments `experiment` reproduces.
#[derive(Clone, Copy, ValueEnum)]
pub enum Experiment {
    /// 000 Sec. 2.4, Fig. 2.3: LM, query accuracy, KL and time for l = 2..5 on syntheticS.
    ThesisS,
    /// 000 Sec. 2.4, Fig. 2.4: the same on syntheticT (a college-year level added).
    ThesisT,
    /// 001 Sec. V, Fig. 4-8: LM, DM and time of MiRaCle, MiRaCleX and the bitmap baselines
    /// versus k and versus threshold on the university warehouse.
    Miracle,
    /// 000 Sec. 3.5: anatomy (t-t, v-v) on syntheticS against l, p and m, against
    /// l-diverse generalization, and over partitions.
    Anatomy,
    /// 002 Ch. 3-4: the annotated lattice of UCI Adult for |QI| = 3..6 (ARX's hierarchies),
    /// its build time, and the thesis's request grid answered over it beside its answers.
    Negotiation,
    /// 003 Sec. 5: LM and query error of the lattice (Incognito) and the hybrid variants on
    /// UCI Adult against k at p = 1%, against p at k = 10, and with a suppression budget.
    Hybrid,
    /// 004 Sec. 6: vertical fragmentation against whole-table TopDown and lattice on UCI
    /// Adult (with --data) and on seeded wide tables of --dims QI columns: query accuracy, LM,
    /// the class cells each repair changed, time.
    Fragmentation,
    /// Rows kept per family table against QI loss (LM) and query accuracy as the suppression
    /// price rises, for MiRaCle, MiRaCleX, ClusTree and CToff in key and shape order, beside
    /// the shape-only grouping.
    Frontier,
}

/// `relanon experiment`: writes the dataset, its declarations and hierarchies under `out`
/// (like `demo`), runs the table and prints it as Markdown.
pub async fn experiment(args: &ExperimentArgs, quiet: bool) -> Result<ExitCode> {
    use relanon::experiment::{self, THESIS_VARIANTS};
    let (out, students, seed) = (args.out.as_path(), args.students, args.seed);
    let (json, html) = (args.json.as_deref(), args.html.as_deref());
    if matches!(args.which, Experiment::Anatomy) && html.is_some() {
        anyhow::bail!("experiment anatomy prints tables only; drop --html");
    }
    let default_ls = match args.which {
        Experiment::Anatomy => vec![2, 3, 4],
        _ => vec![2, 3, 4, 5],
    };
    let ls = if args.l.is_empty() {
        &default_ls
    } else {
        &args.l
    };
    let only = &args.only;
    let (name, text, years, title) = match args.which {
        Experiment::ThesisS | Experiment::Anatomy => (
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
        Experiment::Negotiation => {
            return negotiation_experiment(args, quiet).await;
        }
        Experiment::Hybrid => {
            return hybrid_experiment(args, quiet).await;
        }
        Experiment::Fragmentation => {
            return fragmentation_experiment(args, quiet).await;
        }
        Experiment::Frontier => {
            return frontier_experiment(args, quiet).await;
        }
    };
    let decl = write_synthetic(out, name, text, students, seed, years)?;
    let work = experiment::work_dir(out);
    std::fs::create_dir_all(&work)
        .with_context(|| format!("cannot create '{}'", work.display()))?;
    if let Experiment::Anatomy = args.which {
        return anatomy_experiment(args, &decl, &work, ls, quiet).await;
    }
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
    let watch = Watch::start(quiet);
    let say = |line: &str| {
        if !quiet {
            errln!("{line}");
        }
    };
    let table = experiment::thesis(&decl, &work, ls, &variants, &say, watch.progress()).await?;
    let rows = &table.rows;
    if let Some(path) = json {
        std::fs::write(path, serde_json::to_string_pretty(rows)?)
            .with_context(|| format!("cannot write '{}'", path.display()))?;
    }
    if let Some(path) = html {
        let title = format!("{title} ({students} students, seed {seed})");
        write_page(
            path,
            &relanon::experiment::pages::experiment_page(&title, rows)?,
            &[],
        )?;
    }
    outln!("{}", experiment::markdown(rows));
    Ok(failures(&table.failed))
}

/// Writes the synthetic warehouse `name` under `out`: its hierarchy files, its declarations
/// (`text`, its paths made relative to `out`, so the directory runs on its own) and its
/// source; returns the declarations file.
fn write_synthetic(
    out: &Path,
    name: &str,
    text: &str,
    students: usize,
    seed: u64,
    years: bool,
) -> Result<PathBuf> {
    use relanon::generate;
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
    Ok(decl)
}

/// `relanon experiment anatomy` (000 Sec. 3.5) on the synthetic warehouse already written:
/// its rows are anatomy's own (no HTML page), so it shares only the data with the thesis table.
async fn anatomy_experiment(
    args: &ExperimentArgs,
    decl: &Path,
    work: &Path,
    ls: &[usize],
    quiet: bool,
) -> Result<ExitCode> {
    use relanon::experiment;
    let json = args.json.as_deref();
    let watch = Watch::start(quiet);
    let say = |line: &str| {
        if !quiet {
            errln!("{line}");
        }
    };
    let table =
        experiment::anatomy::anatomy(decl, work, ls, &args.partitions, &say, watch.progress())
            .await?;
    drop(watch);
    if let Some(path) = json {
        std::fs::write(path, serde_json::to_string_pretty(&table.rows)?)
            .with_context(|| format!("cannot write '{}'", path.display()))?;
    }
    for r in &table.rows {
        outln!("{}", experiment::anatomy::markdown(r));
    }
    Ok(failures(&table.failed))
}

/// `relanon experiment negotiation` (002 Ch. 3-4) on the Adult files in `--data`.
async fn negotiation_experiment(args: &ExperimentArgs, quiet: bool) -> Result<ExitCode> {
    use relanon::experiment::negotiation;
    let data = args.data.as_deref().ok_or_else(|| {
        anyhow::anyhow!("experiment negotiation needs --data DIR: the directory holding UCI Adult as ARX distributes it (adult.csv and adult_hierarchy_*.csv)")
    })?;
    let watch = Watch::start(quiet);
    let say = |line: &str| {
        if !quiet {
            errln!("{line}");
        }
    };
    let (lattices, requests) = negotiation::negotiation(data, &say, watch.progress()).await?;
    drop(watch);
    if let Some(path) = &args.json {
        let both = serde_json::json!({"lattices": lattices, "requests": requests});
        std::fs::write(path, serde_json::to_string_pretty(&both)?)
            .with_context(|| format!("cannot write '{}'", path.display()))?;
    }
    if args.html.is_some() {
        anyhow::bail!("experiment negotiation prints tables only; drop --html");
    }
    outln!("{}", negotiation::markdown(&lattices, &requests));
    Ok(ExitCode::SUCCESS)
}

/// `relanon experiment hybrid` (003 Sec. 5) on the Adult files in `--data`.
async fn hybrid_experiment(args: &ExperimentArgs, quiet: bool) -> Result<ExitCode> {
    use relanon::experiment::{self, hybrid};
    let data = args.data.as_deref().ok_or_else(|| {
        anyhow::anyhow!("experiment hybrid needs --data DIR: the directory holding UCI Adult as ARX distributes it (adult.csv and adult_hierarchy_*.csv)")
    })?;
    if !(args.alpha > 0.0 && args.alpha < 1.0) {
        anyhow::bail!(
            "--alpha must be strictly between 0 and 1, found {}; write e.g. --alpha 0.05",
            args.alpha
        );
    }
    if args.p.is_empty() || args.p.iter().any(|p| !(0.0..=100.0).contains(p)) {
        anyhow::bail!("--p takes percents in [0, 100], e.g. --p 0,0.5,1,2,5");
    }
    let settings = hybrid::Settings {
        ks: if args.k.is_empty() {
            MIRACLE_KS.to_vec()
        } else {
            args.k.clone()
        },
        ps: args.p.clone(),
        k: HYBRID_K,
        p: HYBRID_P,
        alpha: args.alpha,
        suppression: args.max_suppression,
        seed: args.seed,
    };
    let work = experiment::work_dir(&args.out);
    std::fs::create_dir_all(&work)
        .with_context(|| format!("cannot create '{}'", work.display()))?;
    let watch = Watch::start(quiet);
    let say = |line: &str| {
        if !quiet {
            errln!("{line}");
        }
    };
    let table = hybrid::hybrid(data, &work, &settings, &say, watch.progress()).await?;
    drop(watch);
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&table.rows)?)
            .with_context(|| format!("cannot write '{}'", path.display()))?;
    }
    let markdown = hybrid::markdown(&table.rows);
    if let Some(path) = &args.html {
        let title = "003 Sec. 5: hybrid k-anonymization on UCI Adult";
        write_page(
            path,
            &experiment::pages::hybrid_page(title, &table.rows, &markdown)?,
            &[],
        )?;
    }
    outln!("{markdown}");
    Ok(failures(&table.failed))
}

/// `relanon experiment fragmentation` (004 Sec. 6): Adult when --data is given, and a wide
/// table per --dims, at the first --k (10 by default).
async fn fragmentation_experiment(args: &ExperimentArgs, quiet: bool) -> Result<ExitCode> {
    use relanon::experiment::{self, fragmentation};
    if args.html.is_some() {
        anyhow::bail!("experiment fragmentation prints tables only; drop --html");
    }
    if args.dims.iter().any(|&d| d < 2) || args.rows == 0 {
        anyhow::bail!("--dims takes QI column counts of 2 or more and --rows a row count above 0, e.g. --dims 10,20 --rows 30000");
    }
    let settings = fragmentation::Settings {
        k: args.k.first().copied().unwrap_or(10),
        dims: args.dims.clone(),
        rows: args.rows,
        seed: args.seed,
    };
    let work = experiment::work_dir(&args.out);
    std::fs::create_dir_all(&work)
        .with_context(|| format!("cannot create '{}'", work.display()))?;
    let watch = Watch::start(quiet);
    let say = |line: &str| {
        if !quiet {
            errln!("{line}");
        }
    };
    let data = args.data.as_deref();
    let table =
        fragmentation::fragmentation(data, &work, &settings, &say, watch.progress()).await?;
    drop(watch);
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&table.rows)?)
            .with_context(|| format!("cannot write '{}'", path.display()))?;
    }
    outln!("{}", fragmentation::markdown(&table.rows));
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
    let ks = if args.k.is_empty() {
        &MIRACLE_KS[..]
    } else {
        &args.k
    };
    let mut settings: Vec<(usize, f64)> = ks.iter().map(|&k| (k, 0.3)).collect();
    // The sweep k at the default threshold may already be in the k sweep: run it once.
    for &th in &args.thresholds {
        if !settings.contains(&(args.sweep_k, th)) {
            settings.push((args.sweep_k, th));
        }
    }
    let watch = Watch::start(quiet);
    let say = |line: &str| {
        if !quiet {
            errln!("{line}");
        }
    };
    let table = experiment::miracle(
        &decl,
        &work,
        &settings,
        &MIRACLE_VARIANTS,
        &say,
        watch.progress(),
    )
    .await?;
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&table.rows)?)
            .with_context(|| format!("cannot write '{}'", path.display()))?;
    }
    if let Some(path) = &args.html {
        write_page(
            path,
            &relanon::experiment::pages::miracle_page(&table.rows, args.sweep_k)?,
            &[],
        )?;
    }
    outln!("{}", experiment::k_markdown(&table.rows));
    Ok(failures(&table.failed))
}

/// `relanon experiment frontier`: every line at every price of `--prices` at one k, and the
/// shape-only reference, over `--decl` (or the university warehouse under `out`).
async fn frontier_experiment(args: &ExperimentArgs, quiet: bool) -> Result<ExitCode> {
    use relanon::experiment::{self, frontier};
    let k = match args.k.as_slice() {
        [] => FRONTIER_K,
        [k] => *k,
        _ => anyhow::bail!("experiment frontier runs at one k; give --k once with one value"),
    };
    if let Some(p) = args.prices.iter().find(|p| !(p.is_finite() && **p > 0.0)) {
        anyhow::bail!("--prices: {p} is not a price; give positive numbers such as 0.5,1,4");
    }
    let lines = frontier::select(&args.only);
    if lines.is_empty() {
        anyhow::bail!(
            "--only matches no frontier line; choose from {} (or an algorithm's name for both orders)",
            frontier::lines()
                .iter()
                .map(|l| l.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let out = args.out.as_path();
    std::fs::create_dir_all(out).with_context(|| format!("cannot create '{}'", out.display()))?;
    let decl = match &args.decl {
        Some(decl) => decl.clone(),
        None => write_university(out, false, args.students, args.seed)?.0,
    };
    let work = experiment::work_dir(out);
    std::fs::create_dir_all(&work)
        .with_context(|| format!("cannot create '{}'", work.display()))?;
    let watch = Watch::start(quiet);
    let say = |line: &str| {
        if !quiet {
            errln!("{line}");
        }
    };
    let table = frontier::frontier(
        &decl,
        &work,
        k,
        &args.prices,
        &lines,
        &say,
        watch.progress(),
    )
    .await?;
    drop(watch);
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&table.rows)?)
            .with_context(|| format!("cannot write '{}'", path.display()))?;
    }
    if let Some(path) = &args.html {
        let title = format!("Frontier at k = {k}: {}", decl.display());
        write_page(
            path,
            &relanon::experiment::pages::frontier_page(&title, &table.rows)?,
            &[],
        )?;
    }
    outln!("{}", frontier::markdown(&table.rows));
    Ok(failures(&table.failed))
}

/// An experiment's exit: 0 when every run succeeded; else each failure said on stderr (even
/// with --quiet) and 1, the table above being incomplete.
fn failures(failed: &[String]) -> ExitCode {
    if failed.is_empty() {
        return ExitCode::SUCCESS;
    }
    for f in failed {
        errln!("error: left out of the table: {f}");
    }
    ExitCode::from(1)
}
