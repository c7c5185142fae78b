//! `relanon lattice` (build and persist the annotated lattice) and `relanon negotiate`
//! (answer a request over it, and release an answer on `--accept`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, bail, Result};
use clap::Args;
use relanon::pipeline::negotiate::{self as nego, AnswerJson, Answered, Ask, Built};
use relanon::pipeline::{self, Request};

use super::answer_text::{child_rows, node};
use super::progress::Watch;
use super::Declared;

#[derive(Args)]
pub struct LatticeArgs {
    #[command(flatten)]
    declared: Declared,
    /// Where to write the annotated lattice.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Annotate only this share of each height's nodes (the thesis's partial lattice, e.g.
    /// 5%), chosen by how much their levels group the entities.
    #[arg(long, value_name = "P%")]
    partial: Option<String>,
    /// Replace a lattice relanon wrote before.
    #[arg(long)]
    overwrite: bool,
    /// Print what was built as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct NegotiateArgs {
    #[command(flatten)]
    declared: Declared,
    /// The least class size asked for (default: the declarations' k).
    #[arg(long)]
    k: Option<u32>,
    /// The least number of distinct sensitive values per class asked for (distinct
    /// l-diversity over the entity table's sensitive columns).
    #[arg(long)]
    l: Option<u32>,
    /// The most entities that may be suppressed: a number, or a share such as 1%.
    #[arg(
        long,
        value_name = "N|P%",
        default_value = "0",
        allow_hyphen_values = true
    )]
    max_suppression: String,
    /// The highest level accepted for a QI column, COLUMN=LEVEL (repeatable; columns not
    /// named may reach their top level).
    #[arg(long = "max-level", value_name = "COLUMN=LEVEL")]
    max_level: Vec<String>,
    /// A lattice `relanon lattice` built from these declarations (refused if stale);
    /// without it the lattice is built first.
    #[arg(long, value_name = "FILE")]
    lattice: Option<PathBuf>,
    /// Without --lattice: build a partial lattice (this share of each height's nodes).
    #[arg(long, value_name = "P%", conflicts_with = "lattice")]
    partial: Option<String>,
    /// Print the answers as JSON.
    #[arg(long)]
    json: bool,
    /// Exit 1 when there is no exact answer.
    #[arg(long)]
    require_exact: bool,
    /// Release an answer: `exact`, or a relaxation by number (1 suppression, 2 levels,
    /// 3 k or l) or by name. Writes to --target through the whole pipeline and verify.
    #[arg(long, value_name = "ANSWER")]
    accept: Option<String>,
    /// Negotiate interactively: the lattice by height for each request, the answers, and a
    /// prompt to change k, the budget or a level, adopt a relaxation, look into a height.
    #[arg(long, conflicts_with_all = ["json", "accept", "require_exact"])]
    explore: bool,
    /// Where --accept writes the release (default: the declarations' SET target).
    #[arg(long)]
    target: Option<PathBuf>,
    /// Replace an existing release.
    #[arg(long)]
    overwrite: bool,
}

/// Builds the lattice and writes it.
pub async fn lattice(args: LatticeArgs, quiet: bool) -> Result<ExitCode> {
    let req = args.declared.request()?;
    let partial = share(args.partial.as_deref())?;
    let watch = Watch::start(quiet);
    let built = nego::build(&req, partial, watch.progress()).await?;
    drop(watch);
    nego::write(&built, &args.out, &req, args.overwrite)?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&built.meta)?);
    } else if !quiet {
        outln!("{}", describe_lattice(&built));
        outln!("lattice written to {}", args.out.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// `--partial P%` as a share in (0, 1].
fn share(text: Option<&str>) -> Result<Option<f64>> {
    let Some(text) = text else {
        return Ok(None);
    };
    let p: f64 = text
        .trim()
        .trim_end_matches('%')
        .trim()
        .parse()
        .map_err(|_| anyhow!("--partial '{text}': give a share of the nodes such as 5%"))?;
    if !(p > 0.0 && p <= 100.0) {
        bail!("--partial {text} is outside (0%, 100%]: give a share of the nodes such as 5%");
    }
    Ok(Some(p / 100.0))
}

/// What a lattice holds: its columns and levels, its size, the shape floor.
fn describe_lattice(built: &Built) -> String {
    let a = &built.lattice;
    let m = &built.meta;
    let computed = match &a.computed {
        Some(c) => format!(
            "{} of them annotated (the partial lattice at {}%)",
            c.iter().filter(|&&x| x).count(),
            m.partial.unwrap_or(0.0) * 100.0
        ),
        None => "annotated".to_string(),
    };
    let mut out = format!(
        "lattice of {} ({} entities): {} nodes over {} QI column(s), {computed} in {:.2} s\n",
        m.entity,
        a.entities,
        a.nodes(),
        m.columns.len(),
        m.build_seconds
    );
    for c in &m.columns {
        let levels: Vec<String> = c
            .levels
            .iter()
            .enumerate()
            .map(|(i, l)| match &l.example {
                Some(e) if i > 0 => format!("{i}: {} labels, e.g. '{e}'", l.labels),
                _ => format!("{i}: {} labels", l.labels),
            })
            .collect();
        out.push_str(&format!(
            "  {} ({}): {}\n",
            c.name,
            c.hierarchy,
            levels.join("; ")
        ));
    }
    let top = a.index(&a.top());
    let floor: Vec<String> = [2u32, 5, 10, 20]
        .iter()
        .filter(|&&k| k as u64 <= a.entities)
        .map(|&k| format!("{} at k = {k}", a.size.get(top).entities(k)))
        .collect();
    out.push_str(&format!(
        "shape floor (entities suppressed even with every column at '*'): {}\n",
        floor.join(", ")
    ));
    match &m.no_distinct {
        Some(why) => out.push_str(&format!("l-diversity: not annotated ({why})\n")),
        None => out.push_str(&format!(
            "l-diversity (distinct) annotated over {}\n",
            m.sensitive.join(", ")
        )),
    }
    out.trim_end().to_string()
}

/// Answers a request, prints it, and releases an accepted answer.
pub async fn negotiate(args: NegotiateArgs, quiet: bool) -> Result<ExitCode> {
    let req = args.declared.request()?;
    let ask = Ask {
        k: args.k,
        l: args.l,
        max_suppression: Some(args.max_suppression.clone()),
        max_levels: args.max_level.clone(),
    };
    let mut built = match &args.lattice {
        Some(path) => {
            let built = nego::read(path)?;
            nego::check_fresh(&built, &req, path)?;
            built
        }
        None => {
            let partial = share(args.partial.as_deref())?;
            let watch = Watch::start(quiet || args.json);
            let built = nego::build(&req, partial, watch.progress()).await?;
            drop(watch);
            built
        }
    };
    // Over a partial lattice, the top acceptable node is computed from the data when it is
    // missing (002 Fig. 5.23): relaxing the suppression and k then read it.
    if built.lattice.computed.is_some() && !args.explore {
        if let Some(top) = nego::top_acceptable(&built, &ask) {
            let watch = Watch::start(quiet || args.json);
            nego::compute_nodes(&mut built, &req, &[top], watch.progress()).await?;
        }
    }
    if args.explore {
        super::explore::explore(&built, ask, &mut std::io::stdin().lock())?;
        return Ok(ExitCode::SUCCESS);
    }
    let answered = nego::answer(&built, &ask)?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&answered)?);
    } else if !quiet {
        outln!("{}", describe(&answered));
    }
    if let Some(which) = &args.accept {
        let chosen = pick(&answered, which)?;
        return accept(req, &args, chosen, quiet || args.json).await;
    }
    if args.require_exact && answered.exact.is_none() {
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// The answer `--accept` names.
fn pick<'a>(answered: &'a Answered, which: &str) -> Result<&'a AnswerJson> {
    let w = which.trim().to_ascii_lowercase();
    if w == "exact" || w == "0" {
        return answered.exact.as_ref().ok_or_else(|| {
            anyhow!(
                "--accept exact: this request has no exact answer; accept a relaxation (1, 2 or 3)"
            )
        });
    }
    let index = match w.as_str() {
        "1" | "suppression" => 0,
        "2" | "levels" => 1,
        "3" | "k" | "l" => 2,
        _ => bail!("--accept '{which}': give exact, 1 (suppression), 2 (levels) or 3 (k or l)"),
    };
    if answered.exact.is_some() {
        bail!("--accept {which}: the request has an exact answer and no relaxations; use --accept exact");
    }
    let r = &answered.relaxations[index];
    r.answer.as_ref().ok_or_else(|| {
        anyhow!(
            "--accept {which}: relaxing {} has no answer ({})",
            r.relaxes,
            r.reason.as_deref().unwrap_or("none")
        )
    })
}

/// Releases `chosen` through the whole pipeline (staged write, verify, commit).
async fn accept(
    mut req: Request,
    args: &NegotiateArgs,
    chosen: &AnswerJson,
    quiet: bool,
) -> Result<ExitCode> {
    req.with = Some(chosen.with.clone());
    req.target = args.target.clone();
    req.overwrite = args.overwrite;
    let watch = Watch::start(quiet);
    let outcome = pipeline::anonymize(&req, watch.progress()).await?;
    drop(watch);
    if !quiet {
        outln!("\n{}", outcome.report.summary());
        outln!("verify: passed ({} checks)", outcome.verdict.checks.len());
        outln!(
            "release written to {} (report: {})",
            outcome.target.display(),
            outcome.report_path.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The answers as text.
fn describe(a: &Answered) -> String {
    let mut out = describe_request(a);
    match &a.exact {
        Some(e) => describe_exact(a, e, &mut out),
        None => describe_relaxations(a, &mut out),
    }
    out
}

/// A count of entities as a percentage of the request's population (of at least one, so an
/// empty table reads 0% rather than NaN).
fn percent(a: &Answered, entities: u64) -> f64 {
    100.0 * entities as f64 / a.request.entities.max(1) as f64
}

/// `, rows: ...` when the answer suppresses child rows, else nothing: an entity table
/// alone has no child rows worth a word.
fn rows_suffix(x: &AnswerJson) -> String {
    let r = child_rows(x);
    if r.is_empty() {
        String::new()
    } else {
        format!(", rows: {r}")
    }
}

/// The request as it was understood and the lattice that answered it, first, so every
/// number below can be read against them.
fn describe_request(a: &Answered) -> String {
    let q = &a.request;
    // In the lattice's column order, those below their top level.
    let constrained: Vec<String> = a
        .lattice
        .columns
        .iter()
        .zip(&a.lattice.heights)
        .filter_map(|(c, &h)| {
            let l = *q.max_levels.get(c)?;
            (l < h).then(|| format!("{c} {l}"))
        })
        .collect();
    let levels = if constrained.is_empty() {
        "any levels".to_string()
    } else {
        format!("levels <= {} (others any)", constrained.join(", "))
    };
    let mut out = format!(
        "request  {} >= {}, suppress <= {} entities ({:.2}% of {}), {levels}\n",
        q.measure,
        q.value,
        q.max_suppression,
        percent(a, q.max_suppression),
        q.entities
    );
    out.push_str(&format!(
        "lattice  {} nodes over {}; answered in {:.2} ms, {} nodes visited\n",
        a.lattice.nodes,
        a.lattice.columns.join(", "),
        a.stats.microseconds as f64 / 1000.0,
        a.stats.visited
    ));
    if let Some(p) = a.lattice.partial {
        out.push_str(&format!(
            "partial  {} of the nodes annotated ({}%): every answer is the best computed node, not proven optimal\n",
            a.lattice.computed,
            p * 100.0
        ));
    }
    out
}

/// The exact answer and how to release it.
fn describe_exact(a: &Answered, e: &AnswerJson, out: &mut String) {
    out.push_str(&format!(
        "exact    {} height {} LM {:.4} {} {} suppresses {} entities ({:.2}%){}\n",
        node(&e.levels),
        e.height,
        e.lm,
        e.measure,
        e.value,
        e.suppressed.entities,
        percent(a, e.suppressed.entities),
        rows_suffix(e)
    ));
    out.push_str(&format!(
        "release it: --accept exact, or anonymize --with \"{}\"",
        e.with
    ));
}

/// No exact answer: why not (the top acceptable node falls short), then one relaxation per
/// line, numbered as `--accept` takes them.
fn describe_relaxations(a: &Answered, out: &mut String) {
    let q = &a.request;
    let v = &a.v_max;
    out.push_str(&format!(
        "top acceptable node {} height {} suppresses {}{} entities at {} = {}: no exact answer\n\n",
        node(&v.levels),
        v.height,
        if a.lattice.v_max_computed {
            ""
        } else {
            "at least "
        },
        v.suppressed.entities,
        q.measure,
        q.value
    ));
    out.push_str(&format!(
        "  {:<12} {:<18} {:>6} {:>7} {:>4} {:>18}  deviation\n",
        "relaxes", "levels", "height", "LM", q.measure, "suppressed"
    ));
    for (i, r) in a.relaxations.iter().enumerate() {
        match &r.answer {
            Some(x) => out.push_str(&format!(
                "{} {:<12} {:<18} {:>6} {:>7.4} {:>4} {:>18}  {}{}\n",
                i + 1,
                r.relaxes,
                node(&x.levels),
                x.height,
                x.lm,
                x.value,
                format!(
                    "{} ({:.2}%)",
                    x.suppressed.entities,
                    percent(a, x.suppressed.entities)
                ),
                x.deviation,
                rows_suffix(x)
            )),
            None => out.push_str(&format!(
                "{} {:<12} none: {}\n",
                i + 1,
                r.relaxes,
                r.reason.as_deref().unwrap_or("")
            )),
        }
    }
    out.push_str("release one: --accept 1, 2 or 3");
}
