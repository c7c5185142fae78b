//! `relanon init`: a declarations file proposed from the data, with its hierarchy files.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Args;
use relanon::init::{Fate, Options, Role};
use relanon::outputs::{self, Input, Kind, Output};
use relanon::pipeline::{self, Initialized};
use relanon::warehouse::{staging, SourceOptions};

use super::progress::Watch;

#[derive(Args)]
pub struct InitArgs {
    /// The warehouse: a SQLite file, a CSV or Parquet file, or a directory of them.
    source: PathBuf,
    /// The table with one row per person (proposed from the schema if not given).
    #[arg(long, value_name = "TABLE")]
    entity: Option<String>,
    /// Where to write the declarations (default: <source name>.decl.sql here); hierarchy
    /// files go beside it, in <name>-hierarchies/.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// The k written into ANONYMIZE.
    #[arg(long, default_value_t = 5)]
    k: usize,
    /// The character between CSV fields (`;`, `|`, `tab`, ...), if not a comma.
    #[arg(long, value_name = "CHAR")]
    csv_delimiter: Option<String>,
    /// Replace a declarations file (and its hierarchy files) that init wrote before.
    #[arg(long)]
    overwrite: bool,
}

/// Proposes, checks and writes the declarations, and says what to do next.
pub async fn init(args: InitArgs, quiet: bool) -> Result<ExitCode> {
    if args.k < 2 {
        bail!("--k {} protects no one: k must be at least 2", args.k);
    }
    let out = match &args.out {
        Some(o) => o.clone(),
        None => {
            let stem = args
                .source
                .file_stem()
                .map(|s| s.to_string_lossy().to_string())
                .unwrap_or_else(|| "source".into());
            PathBuf::from(format!("{stem}.decl.sql"))
        }
    };
    let mut source_options = SourceOptions::default();
    if let Some(d) = &args.csv_delimiter {
        source_options.csv_delimiter = match d.as_str() {
            "tab" | "\\t" => b'\t',
            d if d.len() == 1 && d.is_ascii() => d.as_bytes()[0],
            d => bail!("--csv-delimiter '{d}': give one character (';', '|') or 'tab'"),
        };
    }
    let options = Options {
        entity: args.entity.clone(),
        k: args.k,
    };
    let declarations = Output {
        kind: Kind::Declarations,
        path: out.clone(),
        option: "--out",
    };
    let source = Input {
        path: args.source.clone(),
        what: "the source",
    };
    outputs::check(
        std::slice::from_ref(&declarations),
        std::slice::from_ref(&source),
        args.overwrite,
    )?;
    let watch = Watch::start(quiet);
    let made = pipeline::init(
        &args.source,
        &out,
        &options,
        &source_options,
        watch.progress(),
    )
    .await?;
    drop(watch);
    write(&made, &out, declarations, source, args.overwrite)?;
    if !quiet {
        summary(&made, &out);
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes the declarations and their hierarchy files together, staged and committed as
/// one, after checking the hierarchy files too: their names are known only once the
/// proposal is made, and a half-written set would not run.
fn write(
    made: &Initialized,
    out: &Path,
    declarations: Output,
    source: Input,
    overwrite: bool,
) -> Result<()> {
    let mut all = vec![declarations];
    all.extend(made.files.iter().map(|(p, _)| Output {
        kind: Kind::HierarchyFile,
        path: p.clone(),
        option: "a hierarchy file",
    }));
    outputs::check(&all, &[source], overwrite)?;
    let context = || {
        format!(
            "cannot write '{}'; check that its directory exists and is writable",
            out.display()
        )
    };
    let mut pending =
        vec![staging::stage_file(out, made.text.as_bytes(), None).with_context(context)?];
    for (path, content) in &made.files {
        pending.push(staging::stage_file(path, content.as_bytes(), None).with_context(context)?);
    }
    staging::commit_all(pending, out, overwrite).with_context(context)?;
    Ok(())
}

/// What was written, counted by fate and role, and the next commands: the owner's review
/// starts from these counts, above all the lines marked for review.
fn summary(made: &Initialized, out: &Path) {
    let p = &made.proposal;
    let count = |f: &dyn Fn(&Fate) -> bool| p.tables.iter().filter(|t| f(&t.fate)).count();
    let family = count(&|f| matches!(f, Fate::Entity | Fate::Family { .. }));
    let dimensions = count(&|f| matches!(f, Fate::Dimension { .. }));
    let left_out = count(&|f| matches!(f, Fate::LeftOut { .. }));
    let decisions: Vec<_> = p
        .tables
        .iter()
        .flat_map(|t| t.columns.iter())
        .filter_map(|c| c.decision.as_ref())
        .collect();
    let role = |f: &dyn Fn(&Role) -> bool| decisions.iter().filter(|d| f(&d.role)).count();
    outln!(
        "wrote {} (entity {}: {family} table(s) in the family, {dimensions} dimension(s), {left_out} left out; roles: {} IDENTIFIER, {} QUASI IDENTIFIER, {} SENSITIVE, {} INSENSITIVE; {} line(s) marked -- review){}",
        out.display(),
        p.entity,
        role(&|r| matches!(r, Role::Identifier)),
        role(&|r| matches!(r, Role::Qi(_))),
        role(&|r| matches!(r, Role::Sensitive)),
        role(&|r| matches!(r, Role::Insensitive)),
        made.text
            .lines()
            .filter(|l| l.contains(&format!("{}:", relanon::init::REVIEW)))
            .count(),
        if made.files.is_empty() {
            String::new()
        } else {
            format!(" and {} hierarchy file(s)", made.files.len())
        }
    );
    outln!(
        "next: read it, then `relanon plan {}` to see every column's fate, then `relanon anonymize {}`",
        out.display(),
        out.display()
    );
}
