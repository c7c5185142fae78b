//! The `anonymize` and `verify` commands end to end: declarations -> plan -> forest ->
//! algorithm -> release -> (staged write, self-verify) -> commit, report. The one place that
//! sequences the phases and times them; each phase lives in its own module.
//!
//! Also `attack` and `generated_forest` (the forest of a generated warehouse, for benches and
//! tests). Each command reports through the [`Progress`] it is handed: the phase it is in
//! (the report's timing names), the algorithm's count while clustering, and warnings. It
//! prints nothing; the binary draws the `Progress` and prints the warnings.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};

use crate::algo::Configured;
use crate::budget::{self, Budget, Decision};
use crate::keymap::KeyMap;
use crate::outputs::{self, Input, Kind as OutputKind, Output};
use crate::plan::{KeyPolicy, Plan};
use crate::policy::{Policy, Pos};
use crate::progress::Progress;
use crate::report::Report;
use crate::verify::{self, Keys, Verdict};
use crate::warehouse::staging::{self, Pending};
use crate::warehouse::{
    quote_ident, write_staged, ReleaseSet, ReleaseTable, SourceOptions, Staged, TargetKind,
    Warehouse,
};
use crate::{algo, decl, forest, plan, release, report, sensitive, utility, views};

/// Where the declarations come from and what the command line overrides.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// The declarations text.
    pub text: String,
    /// Relative paths in the declarations resolve against this directory.
    pub base: PathBuf,
    /// Shown in errors (the declarations file's path).
    pub origin: String,
    pub source: Option<PathBuf>,
    pub target: Option<PathBuf>,
    pub overwrite: bool,
    /// `--key-map PATH`: also write the released -> source key map there (mode 0600).
    pub key_map: Option<PathBuf>,
    /// `--allow-unverified`: commit a release that fails verification (to study the
    /// single-table baselines, which are meant to fail it) instead of refusing it.
    pub allow_unverified: bool,
    /// The declarations file, when they come from one: never written over.
    pub path: Option<PathBuf>,
    /// `--report PATH`: the HTML page the caller writes after the run, checked with the other
    /// outputs before any work is done.
    pub page: Option<PathBuf>,
    /// `--with 'k = 10, algorithm = ...'`: `ANONYMIZE` options that replace the file's
    /// options of the same name (the others stay), so one declarations file serves a sweep.
    pub with: Option<String>,
    /// `--shards N`: split the entities into N shards anonymized one at a time (None or 1:
    /// one run over every entity).
    pub shards: Option<usize>,
    /// `--memory-budget SIZE`: what the run may hold (None: half the machine's memory).
    pub memory_budget: Option<Budget>,
    /// `--cluster URL`: anonymize the shards on this cluster instead of one at a time here.
    #[cfg(feature = "distributed")]
    pub cluster: Option<cluster::Cluster>,
    /// `--cluster-scratch DIR`: where the cluster writes each shard's rows, on storage every
    /// executor shares (None: beside the warehouse).
    #[cfg(feature = "distributed")]
    pub cluster_scratch: Option<PathBuf>,
}

impl Request {
    /// A request for the declarations file at `path`.
    pub fn from_file(path: &Path) -> Result<Request> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read declarations '{}'", path.display()))?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Ok(Request {
            text,
            base,
            origin: path.display().to_string(),
            path: Some(path.to_path_buf()),
            ..Request::default()
        })
    }
}

/// What a successful `anonymize` produced.
pub struct Outcome {
    pub report: Report,
    pub target: PathBuf,
    pub report_path: PathBuf,
    pub verdict: Verdict,
}

/// Options that belong to one privacy model.
const MODEL_PARAMETERS: [&str; 4] = ["k", "l", "diversity", "variant"];

/// Replaces the `ANONYMIZE` options of `policy` named in `with` (an option list as written
/// inside `WITH (...)`), parsed by the declarations parser itself so values mean the same.
/// Naming a model other than the file's also drops the file's `k`, `l`, `diversity` and
/// `variant`, and its `algorithm` (with that algorithm's options) when that algorithm does not
/// serve the model named; naming `algorithm` drops the file's options that algorithm does not
/// read.
fn override_options(policy: &mut Policy, with: &str, origin: &str) -> Result<()> {
    let Some(anonymize) = policy.anonymize.as_mut() else {
        bail!("{origin}: --with needs an ANONYMIZE statement to override; add `ANONYMIZE <entity> WITH (...);`");
    };
    let text = format!(
        "ANONYMIZE {} WITH ({with});",
        quote_ident(&anonymize.entity)
    );
    let parsed = decl::parse(&text).map_err(|e| {
        anyhow!("--with '{with}':{e}; write options as in WITH (...), e.g. --with \"k = 10, algorithm = 'miraclex'\"")
    })?;
    let mut options = parsed
        .anonymize
        .expect("the text parsed is an ANONYMIZE statement")
        .options;
    // Positions in the --with text, so messages about these options point there.
    let prefix = text.chars().count() - with.chars().count() - 2;
    for o in options.values_mut() {
        o.pos = Pos {
            line: Pos::WITH,
            column: o.pos.column.saturating_sub(prefix as u64),
        };
    }
    // A new model makes the file's model parameters meaningless (l under k-anonymity is an
    // error), so they go unless --with gives them again. Naming the model the file already
    // has changes nothing.
    let new_model = option_text(&options, "model");
    if new_model.is_some() && new_model != Some(model_of_file(&anonymize.options)) {
        anonymize
            .options
            .retain(|name, _| !MODEL_PARAMETERS.contains(&name.as_str()));
        // The file's algorithm for another model would be refused (miraclex under anatomy):
        // the model named runs its default algorithm instead, unless --with names one.
        let file_algorithm = anonymize
            .options
            .get("algorithm")
            .and_then(|o| match &o.value {
                crate::policy::Value::Text(t) => algo::find(&t.to_ascii_lowercase()),
                crate::policy::Value::Number(_) => None,
            });
        if let (Some(spec), Some(model), false) = (
            file_algorithm,
            model_named(&options),
            options.contains_key("algorithm"),
        ) {
            if (spec.serves)(&model).is_err() {
                anonymize.options.retain(|name, _| {
                    plan::SHARED_OPTIONS.contains(&name.as_str()) && name != "algorithm"
                });
            }
        }
    }
    // A new algorithm makes the file's options of another algorithm meaningless (they would
    // be refused), so they go too unless --with gives them again.
    let named = options.get("algorithm").and_then(|o| match &o.value {
        crate::policy::Value::Text(t) => algo::find(&t.to_ascii_lowercase()),
        crate::policy::Value::Number(_) => None,
    });
    if let Some(spec) = named {
        anonymize.options.retain(|name, _| {
            plan::SHARED_OPTIONS.contains(&name.as_str())
                || spec.options.iter().any(|o| o.answers_to(name))
        });
    }
    anonymize.options.extend(options);
    Ok(())
}

/// The text option `name` of `options`, lowercased, if written.
fn option_text(
    options: &std::collections::BTreeMap<String, crate::policy::OptionValue>,
    name: &str,
) -> Option<String> {
    options.get(name).and_then(|o| match &o.value {
        crate::policy::Value::Text(t) => Some(t.to_ascii_lowercase()),
        crate::policy::Value::Number(_) => None,
    })
}

/// The model a file's `ANONYMIZE` options declare: the one it names, else l-diversity where
/// it gives `l` and no `k` (as the planner reads it), else k-anonymity.
fn model_of_file(
    options: &std::collections::BTreeMap<String, crate::policy::OptionValue>,
) -> String {
    option_text(options, "model").unwrap_or_else(|| {
        if options.contains_key("l") && !options.contains_key("k") {
            "l-diversity".to_string()
        } else {
            "k-anonymity".to_string()
        }
    })
}

/// The kind of model `options` name (`model = '...'`, with `diversity` as given), with the
/// smallest parameters it takes: enough to ask an algorithm whether it serves it.
fn model_named(
    options: &std::collections::BTreeMap<String, crate::policy::OptionValue>,
) -> Option<plan::Model> {
    let text = |name: &str| match options.get(name).map(|o| &o.value) {
        Some(crate::policy::Value::Text(t)) => Some(t.to_ascii_lowercase()),
        _ => None,
    };
    match text("model")?.as_str() {
        "k-anonymity" => Some(plan::Model::KAnonymity { k: 2 }),
        "l-diversity" => Some(plan::Model::LDiversity {
            l: 2,
            diversity: if text("diversity").as_deref() == Some("distinct") {
                plan::Diversity::Distinct
            } else {
                plan::Diversity::Probabilistic
            },
        }),
        "anatomy" => Some(plan::Model::Anatomy {
            l: 2,
            variant: plan::Variant::TreeTree,
            rules: Vec::new(),
        }),
        _ => None,
    }
}

/// Parses, opens the source and plans: the shared first half of anonymize and verify.
pub async fn prepare(req: &Request, progress: &Progress) -> Result<(Plan, Configured, Warehouse)> {
    progress.phase("load", "reading the declarations");
    let mut policy = decl::parse(&req.text).map_err(|e| anyhow!("{}:{e}", req.origin))?;
    if let Some(with) = &req.with {
        override_options(&mut policy, with, &req.origin)?;
    }
    let source = source_of(req, &policy)?;
    progress.phase("load", "opening the source");
    let options = SourceOptions {
        csv_delimiter: policy
            .csv_delimiter
            .map_or(SourceOptions::default().csv_delimiter, |d| d.byte),
    };
    let mut wh = Warehouse::open_with(&source, &options).await?;
    for w in wh.warnings() {
        progress.warn(w.clone());
    }
    progress.phase("load", "planning");
    let mut plan = plan::build(&policy, &mut wh, &req.base)
        .await
        .map_err(|e| located(req, e.pos(), e))?;
    plan.source = source;
    if let Some(t) = &req.target {
        plan.target = Some(t.clone());
    }
    let algorithm = algo::configure(&plan).map_err(|e| located(req, Some(e.pos), e))?;
    Ok((plan, algorithm, wh))
}

/// The source a request reads: `--source`, or `SET source` relative to the declarations.
fn source_of(req: &Request, policy: &Policy) -> Result<PathBuf> {
    match (&req.source, &policy.source) {
        (Some(s), _) => Ok(s.clone()),
        (None, Some(s)) => Ok(req.base.join(&s.value)),
        (None, None) => bail!(
            "{}: no source; add SET source = '<file.sqlite or directory>' (or pass --source)",
            req.origin
        ),
    }
}

/// An error about the declarations, prefixed with the file it is in: `decl.sql:3:5: ...`,
/// `decl.sql: ...` without a position; an option given with `--with` is not in the file.
fn located(req: &Request, pos: Option<Pos>, e: impl std::fmt::Display) -> anyhow::Error {
    match pos {
        Some(p) if p.in_with() => anyhow!("{e}"),
        Some(_) => anyhow!("{}:{e}", req.origin),
        None => anyhow!("{}: {e}", req.origin),
    }
}

fn target_of(plan: &Plan, origin: &str) -> Result<PathBuf> {
    plan.target.clone().ok_or_else(|| anyhow!("{origin}: no target; add SET target = '<release.sqlite or directory>' (or pass --target)"))
}

/// The entity forest `anonymize` would cluster for a generated warehouse: `set` is written to
/// a temporary SQLite source, which the declarations file at `declarations` then describes
/// (its `SET source` is overridden). For benches and tests that drive an algorithm directly.
pub fn generated_forest(set: &ReleaseSet, declarations: &Path) -> Result<forest::Forest> {
    let dir = tempfile::tempdir().context("cannot create a temporary directory")?;
    let source = dir.path().join("source.sqlite");
    write_staged(&source, set, true)?.commit()?;
    let mut req = Request::from_file(declarations)?;
    req.source = Some(source);
    let rt = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    rt.block_on(async {
        let (plan, _, wh) = prepare(&req, &Progress::new()).await?;
        Ok(forest::load(&plan, &wh).await?)
    })
}

pub use crate::outputs::report_path;

/// Refuses, before any work is done, an output that is (or holds) what the run reads, two
/// outputs on one path, a key map inside the release, and an existing file without
/// `--overwrite` or not written by relanon (see [`crate::outputs`]).
fn check_target(req: &Request, plan: &Plan, target: &Path) -> Result<()> {
    let tgt_abs = outputs::absolute(target);
    if let Some(km) = &req.key_map {
        let km_abs = outputs::absolute(km);
        if km_abs.starts_with(&tgt_abs) || km_abs == outputs::absolute(&report_path(target)) {
            bail!(
                "key map '{}' is inside the release; write it outside, analysts must never get it",
                km.display()
            );
        }
    }
    let mut written = vec![
        Output {
            kind: OutputKind::Release,
            path: target.to_path_buf(),
            option: "target",
        },
        Output {
            kind: OutputKind::ReportJson,
            path: report_path(target),
            option: "report.json",
        },
    ];
    if let Some(km) = &req.key_map {
        written.push(Output {
            kind: OutputKind::KeyMap,
            path: km.clone(),
            option: "--key-map",
        });
    }
    if let Some(page) = &req.page {
        written.push(Output {
            kind: OutputKind::Page,
            path: page.clone(),
            option: "--report",
        });
    }
    outputs::check(&written, &inputs(req, plan), req.overwrite)?;
    Ok(())
}

/// The files a run reads: the source, the declarations, the hierarchy files.
fn inputs(req: &Request, plan: &Plan) -> Vec<Input> {
    let mut read = vec![Input {
        path: plan.source.clone(),
        what: "the source",
    }];
    if let Some(p) = &req.path {
        read.push(Input {
            path: p.clone(),
            what: "the declarations",
        });
    }
    read.extend(plan.hierarchy_files.iter().map(|p| Input {
        path: p.clone(),
        what: "a hierarchy file",
    }));
    read
}

/// One warning per family table with rows left out for having no parent, saying why.
fn parentless_warnings(plan: &Plan, no_parent: &[usize]) -> Vec<String> {
    let mut out = Vec::new();
    for (ft, &count) in plan.tables.iter().zip(no_parent) {
        if count > 0 {
            let second: Vec<String> = ft
                .redundant
                .iter()
                .map(|r| format!("({})", r.columns.join(", ")))
                .collect();
            let caveat = if second.is_empty() {
                format!(": they are about no {}", plan.entity)
            } else {
                format!(
                    "; the second path {} may name their {}, but a row hangs on one path",
                    second.join(", "),
                    plan.tables[0].name
                )
            };
            out.push(format!(
                "{}: {} row(s) have no parent (NULL in ({}), or under such a row) and are left out of the release{caveat}",
                ft.name,
                count,
                ft.parent_fk.join(", "),
            ));
        }
    }
    out
}

/// The release set: the family's tables, the declared dimensions (their released columns,
/// by key or by every column, never in source order) and the views rewritten onto them.
async fn assemble(
    plan: &Plan,
    wh: &Warehouse,
    mut tables: Vec<ReleaseTable>,
    fragments: Option<&release::FragmentSummary>,
) -> Result<ReleaseSet> {
    for d in &plan.dimensions {
        let columns = d.released_columns();
        let kept_pk = d.primary_key.iter().all(|c| columns.contains(c));
        // Rows by key, or by every column when the key is left out: never in source order.
        let order = if kept_pk && !d.primary_key.is_empty() {
            d.primary_key.clone()
        } else {
            columns.clone()
        };
        let batch = wh.read_table(&d.name, Some(&columns), &order).await?;
        tables.push(ReleaseTable {
            name: d.name.clone(),
            batch,
            primary_key: if kept_pk {
                d.primary_key.clone()
            } else {
                Vec::new()
            },
            foreign_keys: d.links.clone(),
        });
    }
    let names: Vec<String> = tables.iter().map(|t| t.name.clone()).collect();
    let views = match fragments {
        None => plan
            .views
            .iter()
            .map(|v| (v.name.clone(), views::rewrite(v, &names)))
            .collect(),
        Some(f) => fragment_views(plan, &names, f)?,
    };
    Ok(ReleaseSet { tables, views })
}

/// The views over a fragmentation: each onto the one fragment holding the entity columns
/// it reads (the anchor holds the entity key too), refused when it reads two.
fn fragment_views(
    plan: &Plan,
    names: &[String],
    f: &release::FragmentSummary,
) -> Result<Vec<(String, String)>> {
    let key = plan.tables[0].released_pk();
    let fragments = views::Fragments {
        entity: &plan.tables[0].name,
        fragments: f
            .fragments
            .iter()
            .map(|x| {
                let mut columns: Vec<&str> = x
                    .qi_columns
                    .iter()
                    .chain(&x.other_columns)
                    .map(String::as_str)
                    .collect();
                if !x.child_tables.is_empty() {
                    columns.extend(key.iter().map(String::as_str));
                }
                (x.table.as_str(), columns)
            })
            .collect(),
        class: &f.class,
    };
    plan.views
        .iter()
        .map(|v| {
            views::rewrite_fragmented(v, names, &fragments)
                .map(|sql| (v.name.clone(), sql))
                .map_err(|e| anyhow!("{e}"))
        })
        .collect()
}

/// `relanon anonymize`.
pub async fn anonymize(req: &Request, progress: &Progress) -> Result<Outcome> {
    let mut clock = Clock::start();
    let (plan, mut algorithm, mut wh) = prepare(req, progress).await?;
    for w in &plan.warnings {
        progress.warn(w.clone());
    }
    if req.key_map.is_some() && algorithm.spec.name == "fragment" && plan.tables.len() == 1 {
        bail!("--key-map: algorithm = 'fragment' on a single table releases no key, and a map from its rows back to the source would re-link its fragments row by row; drop --key-map");
    }
    if req.key_map.is_some() && plan.params.model.anatomy().is_some() {
        progress.warn("the key map leads each released row back to its source row, and so to its sensitive values, which anatomy publishes apart from it: keep the key map with the source, never with the release");
    }
    let memory = shard(req, &plan, &wh, &mut algorithm, progress)?;
    #[cfg(feature = "distributed")]
    if req.cluster.is_some() {
        cluster::check(&plan, &wh, &algorithm, sharded::applies(&plan, &algorithm))?;
    }
    let target = target_of(&plan, &req.origin)?;
    check_target(req, &plan, &target)?;
    // Held to the end: no other run writes or reads this target meanwhile. What the checks
    // saw is checked again under it, after finishing a commit an interrupted run left.
    let _lock = staging::lock(&target, true)?;
    if let Some(done) = staging::recover(&target)? {
        progress.warn(done);
    }
    check_target(req, &plan, &target)?;
    clean_debris(req, &target, progress)?;
    // Dropped after the commit (or the error that ends the run): lists every temporary.
    let _manifest = staging::Manifest::begin(&target)?;
    // The queries that read the source hold what the budget leaves them, their sorts
    // spilling beside the target (listed in the manifest, like every temporary).
    let _spill = wh.bound_queries(&target, memory.query_memory)?;
    #[cfg(feature = "distributed")]
    let url = match &req.cluster {
        Some(cluster) => Some(cluster::reach(cluster).await?),
        None => None,
    };
    let to = Staging {
        target: &target,
        overwrite: req.overwrite,
        sort_memory: memory.sort_memory,
        #[cfg(feature = "distributed")]
        cluster: url.as_deref().map(|url| (url, req)),
    };
    // Staged, then checked: a release no one has verified is never committed.
    let (staged, materialized, utility, sections) =
        staged_release(&plan, &mut algorithm, &wh, &to, progress, &mut clock).await?;
    return_free_heap();
    let mut report = report::build(
        &plan,
        &algorithm,
        &materialized,
        utility,
        clock.laps.clone(),
        sections.anatomy,
        sections.rejoin,
    );
    let checker = Checker {
        memory: memory.verify_memory,
        #[cfg(feature = "distributed")]
        cluster: to.cluster.map(|(url, req)| (url, req, algorithm.shards)),
        #[cfg(not(feature = "distributed"))]
        cluster: std::marker::PhantomData,
    };
    let staged_at = (staged.path(), &materialized);
    let verdict = self_verify(&plan, &wh, staged_at, &report, checker, progress).await?;
    if !verdict.passed() && !req.allow_unverified {
        let hint = if algorithm.spec.baseline {
            "\n(the single-table baselines are not multi-relationally k-anonymous; pass --allow-unverified to write such a release for study, never for publication)"
        } else {
            ""
        };
        bail!(
            "the release failed verification and was not written:\n{}{hint}",
            verdict.summary()
        );
    }
    report.verified = verdict.passed();
    report.recount_classes(&verdict.class_sizes);
    clock.lap("verify");
    report.timings_ms = clock.total();
    wh.unchanged()?;
    let report_path = report_path(&target);
    let outputs = stage_beside(req, staged, &report, &materialized)?;
    staging::failpoint("staged");
    staging::commit_all(outputs, &target, req.overwrite)?;
    // Only a released key can link back; a family without keys releases none.
    let has_keys = plan.tables.iter().any(|t| !t.primary_key.is_empty());
    if plan.params.keys == KeyPolicy::Preserve && has_keys {
        progress.warn("keys = 'preserve': released keys are the source's and can link rows back to other systems");
    }
    Ok(Outcome {
        report,
        target,
        report_path,
        verdict,
    })
}

/// The run's release, staged: a shard at a time from the source where `sharded` applies,
/// else holding the whole forest (load, cluster, in shards cut from the forest where asked,
/// materialize, measure, stage).
async fn staged_release(
    plan: &Plan,
    algorithm: &mut Configured,
    wh: &Warehouse,
    to: &Staging<'_>,
    progress: &Progress,
    clock: &mut Clock,
) -> Result<(Staged, release::Materialized, utility::Utility, Sections)> {
    if sharded::applies(plan, algorithm) {
        let p = sharded::release(plan, algorithm, wh, to, progress, clock).await?;
        let none = Sections {
            anatomy: None,
            rejoin: None,
        };
        return Ok((p.staged, p.materialized, p.utility, none));
    }
    let forest = load(plan, wh, algorithm.shards, progress).await?;
    clock.lap("load");
    progress.phase("cluster", "clustering");
    let output = algorithm
        .run(&forest, &plan.params.model, progress)
        .map_err(|e| anyhow!("algorithm = '{}': {e}", algorithm.spec.name))?;
    return_free_heap();
    clock.lap("cluster");
    progress.phase("materialize", "building the released tables");
    let mut materialized = release::materialize(plan, &forest, &output)?;
    determination_warning(&materialized, progress);
    let rejoin = rejoin_attack(plan, &materialized, progress);
    clock.lap("materialize");
    progress.phase(
        "utility",
        "count queries and divergences, source and release",
    );
    let utility = utility::measure(plan, &forest, &output, &materialized).await?;
    let anatomy = anatomy_report(plan, &forest, &output, &materialized);
    clock.lap("utility");
    // The forest holds a copy of every family table; verify reads the source and the release
    // again, so letting it go here lowers the peak (a third of it at TPC-H SF 1).
    drop(output);
    drop(forest);
    progress.phase("assemble", "dimension tables and views");
    // Written, then let go: verify reads the staged copy; the report needs keys and stats.
    let tables = std::mem::take(&mut materialized.tables);
    let set = assemble(plan, wh, tables, materialized.fragmentation.as_ref()).await?;
    clock.lap("assemble");
    progress.phase("write", "staging the release");
    let staged = write_staged(to.target, &set, to.overwrite)?;
    drop(set);
    clock.lap("write");
    Ok((staged, materialized, utility, Sections { anatomy, rejoin }))
}

/// The report's sections that only a run on one machine computes.
struct Sections {
    anatomy: Option<report::AnatomyReport>,
    rejoin: Option<crate::attack::Rejoin>,
}

/// A warning when a fragmentation holds apart two columns one of which determines the
/// other (`FragmentSummary::cross_determined`).
fn determination_warning(m: &release::Materialized, progress: &Progress) {
    let Some(summary) = &m.fragmentation else {
        return;
    };
    if summary.cross_determined.is_empty() {
        return;
    }
    let pairs: Vec<String> = summary
        .cross_determined
        .iter()
        .map(|(a, b)| format!("{a} determines {b}"))
        .collect();
    progress.warn(format!("in the source {}, and the fragments hold them apart: the first, published precisely enough, names the second: a join column beside the class that the k bound does not count (report: fragmentation.cross_determined); leave one of them out (a determined QI's values are often a level of the other's hierarchy), or fragment other columns", pairs.join(", ")));
}

/// The re-join attack on a fragmentation's fragments, scored by the release's provenance;
/// a warning when it recovers records beyond chance.
fn rejoin_attack(
    plan: &Plan,
    m: &release::Materialized,
    progress: &Progress,
) -> Option<crate::attack::Rejoin> {
    use crate::attack::rejoin::{assess, Child, Fragment};
    let summary = m.fragmentation.as_ref()?;
    progress.phase(
        "re-join",
        "pairing the fragments' rows as an adversary would",
    );
    // Layout A's anchor holds the child tables: their QI columns, and the released name of
    // each one's parent.
    let qi: Vec<Vec<String>> = plan
        .tables
        .iter()
        .map(|t| t.qi_columns().map(|(c, _)| c.to_string()).collect())
        .collect();
    let parents: Vec<String> = plan
        .tables
        .iter()
        .map(|t| match t.parent {
            Some(0) => release::fragment_table_name(&plan.tables[0].name, 0),
            Some(p) => plan.tables[p].name.clone(),
            None => String::new(),
        })
        .collect();
    let children: Vec<Child> = (1..plan.tables.len())
        .map(|t| Child {
            table: &plan.tables[t].name,
            parent: &parents[t],
            qi_columns: &qi[t],
        })
        .collect();
    let fragments: Vec<Fragment> = summary
        .fragments
        .iter()
        .map(|f| Fragment {
            table: &f.table,
            qi_columns: &f.qi_columns,
            class_sets: f.class_sets.as_deref(),
            children: if f.child_tables.is_empty() {
                &[]
            } else {
                &children
            },
        })
        .collect();
    let k = plan.params.model.min_group();
    let found = assess(&m.tables, &fragments, &summary.class, &m.fragment_rows, k)?;
    if let Some(warning) = found.warning() {
        progress.warn(warning);
    }
    Some(found)
}

/// Where a run's release is staged, and what its final sort may hold.
pub(super) struct Staging<'a> {
    pub target: &'a Path,
    pub overwrite: bool,
    /// Bytes the final sort of a run in shards holds before it spills (the budget's).
    pub sort_memory: usize,
    /// The scheduler's URL of the cluster a run in shards anonymizes them on, and the
    /// request the cluster prepares from.
    #[cfg(feature = "distributed")]
    pub cluster: Option<(&'a str, &'a Request)>,
}

/// The memory budget's decision (`budget::decide`), its shards (or those `--shards` asks
/// for) set on the algorithm: refused where the algorithm cannot be split, said where it
/// runs whole anyway.
fn shard(
    req: &Request,
    plan: &Plan,
    wh: &Warehouse,
    algorithm: &mut Configured,
    progress: &Progress,
) -> Result<Decision> {
    if req.shards == Some(0) {
        bail!("--shards 0: a run needs at least one shard; give a count of 1 or more");
    }
    let budget = Budget::or_default(req.memory_budget);
    let decision = budget::decide(budget, family_size(plan, wh)?, req.shards)?;
    algorithm.shards = decision.shards;
    if decision.shards == 1 {
        return Ok(decision);
    }
    let n = decision.shards;
    let why = match algorithm.sharding() {
        Err(e) if req.shards.is_some() => bail!(e),
        Err(_) => "forms its groups over the whole population",
        Ok(algo::Sharding::Whole) => "recodes the whole population globally",
        Ok(algo::Sharding::Split) => return Ok(decision),
    };
    let name = &algorithm.spec.name;
    progress.warn(match req.shards {
        Some(_) => format!("--shards {n}: algorithm = '{name}' {why}, so it runs over every entity at once"),
        None => format!(
            "this family needs about {} whole, more than the memory budget of {} allows; algorithm = '{name}' {why}, so it runs over every entity at once and may hold more",
            budget::Size(decision.whole),
            budget::Size(budget.bytes)
        ),
    });
    algorithm.shards = 1;
    Ok(decision)
}

/// The family as the budget sees it: rows of every family table (a table on two paths
/// loads twice), entities and the smallest group.
fn family_size(plan: &Plan, wh: &Warehouse) -> Result<budget::Family> {
    let mut rows = 0u64;
    for t in &plan.tables {
        rows += wh.row_count(&t.name)? as u64;
    }
    Ok(budget::Family {
        rows,
        entities: wh.row_count(&plan.tables[0].name)? as u64,
        min_group: plan.params.model.min_group() as u64,
        verify_least: verify::least_memory(rows, 2 * rows),
    })
}

/// The report's anatomy section, for an anatomy: its groups and rules, and the SA side's
/// tables (the released tables that are no family table).
fn anatomy_report(
    plan: &Plan,
    forest: &forest::Forest,
    output: &crate::algo::Output,
    materialized: &release::Materialized,
) -> Option<report::AnatomyReport> {
    match output {
        crate::algo::Output::Anatomized(a) => {
            let sa_tables = materialized
                .tables
                .iter()
                .filter(|t| !plan.tables.iter().any(|f| f.name == t.name))
                .map(|t| t.name.clone())
                .collect();
            report::anatomy_report(plan, forest, a, sa_tables)
        }
        crate::algo::Output::Generalized(_) | crate::algo::Output::Fragmented(_) => None,
    }
}

/// The report's timings: each phase from the end of the one before, and the total.
struct Clock {
    started: Instant,
    lap: Instant,
    laps: BTreeMap<String, f64>,
}

impl Clock {
    fn start() -> Clock {
        let now = Instant::now();
        Clock {
            started: now,
            lap: now,
            laps: BTreeMap::new(),
        }
    }

    /// Phase `name` ended now.
    fn lap(&mut self, name: &str) {
        self.laps.insert(name.to_string(), ms(self.lap));
        self.lap = Instant::now();
    }

    /// Every phase and the total so far.
    fn total(mut self) -> BTreeMap<String, f64> {
        self.laps.insert("total".to_string(), ms(self.started));
        self.laps
    }
}

/// The entity forest, with what the data owner should know about it, refused when it holds
/// fewer entities than a class needs, or than `shards` classes need.
async fn load(
    plan: &Plan,
    wh: &Warehouse,
    shards: usize,
    progress: &Progress,
) -> Result<forest::Forest> {
    progress.phase("load", "loading the entity forest");
    let forest = forest::load(plan, wh).await?;
    let no_parent: Vec<usize> = forest.tables.iter().map(|t| t.no_parent).collect();
    for w in parentless_warnings(plan, &no_parent) {
        progress.warn(w);
    }
    // Loading renders every QI cell on every thread; what it freed there goes back too.
    return_free_heap();
    population(plan, forest.entities(), shards)?;
    for w in diversity_warnings(plan, &forest)? {
        progress.warn(w);
    }
    Ok(forest)
}

/// Refuses a family of fewer `entities` than a class needs, or than `shards` classes need.
fn population(plan: &Plan, entities: usize, shards: usize) -> Result<()> {
    let k = plan.params.model.min_group();
    let letter = if plan.params.model.diversity().is_some() || plan.params.model.anatomy().is_some()
    {
        "l"
    } else {
        "k"
    };
    if k > entities {
        bail!(
            "{letter} = {k} but the source has only {entities} {} entities (rows of {}): lower {letter}, or anonymize a larger population",
            plan.entity,
            plan.tables[0].name
        );
    }
    if shards > 1 {
        algo::shards::check(entities, shards, k).map_err(|e| anyhow!(e))?;
    }
    Ok(())
}

/// Where a run's self-verify checks the staged release.
struct Checker<'a> {
    /// What verify may hold here (bytes).
    memory: u64,
    /// The cluster's URL, the request its executors prepare from and the run's shards: a
    /// release checked a partition a task on the cluster.
    #[cfg(feature = "distributed")]
    cluster: Option<(&'a str, &'a Request, usize)>,
    #[cfg(not(feature = "distributed"))]
    cluster: std::marker::PhantomData<&'a ()>,
}

/// The independent verifier on the staged release, tracing keys through the key map in
/// memory and checking the report's figures against the release.
async fn self_verify(
    plan: &Plan,
    wh: &Warehouse,
    (staged, materialized): (&Path, &release::Materialized),
    report: &Report,
    checker: Checker<'_>,
    progress: &Progress,
) -> Result<Verdict> {
    progress.phase("verify", "checking the staged release independently");
    let report_json = serde_json::to_value(report)?;
    let released = Warehouse::open(staged)
        .await
        .context("re-reading the staged release")?;
    let keys = Keys::Map(&materialized.keys);
    let report = Some(&report_json);
    #[cfg(feature = "distributed")]
    if let Some((url, req, shards)) = checker.cluster {
        progress.phase(
            "verify",
            "checking the staged release independently, a partition a task on the cluster",
        );
        let on = cluster::OnExecutors {
            url,
            req,
            source: &plan.source,
            release: staged,
            keys: &materialized.keys,
            shards,
        };
        let on = Some(&on as &dyn verify::Tasks);
        let checked = verify::verify_on(plan, wh, &released, keys, report, checker.memory, on);
        return Ok(checked.await?);
    }
    Ok(verify::verify(plan, wh, &released, keys, report, checker.memory).await?)
}

/// Every output of the run staged beside its path, the release last: report.json (inside a
/// staged Parquet release, else beside it), the key map and the report page where asked.
fn stage_beside(
    req: &Request,
    staged: Staged,
    report: &Report,
    materialized: &release::Materialized,
) -> Result<Vec<Pending>> {
    let json = serde_json::to_string_pretty(report)?;
    let mut outputs = Vec::new();
    match staged.kind() {
        TargetKind::Parquet => {
            // Synced like every staged output: the journal may be written next.
            let inside = staged.path().join("report.json");
            std::fs::File::create_new(&inside)
                .and_then(|mut f| {
                    std::io::Write::write_all(&mut f, json.as_bytes())?;
                    f.sync_all()
                })
                .with_context(|| format!("cannot write '{}'", inside.display()))?;
        }
        TargetKind::Sqlite => outputs.push(staging::stage_file(
            &report_path(staged.target()),
            json.as_bytes(),
            None,
        )?),
    }
    if let Some(km) = &req.key_map {
        // A pair at a time: at TPC-H SF 1 the text is 0.4 GB.
        outputs.push(staging::stage_written(km, Some(0o600), |w| {
            serde_json::to_writer(w, &materialized.keys).map_err(std::io::Error::other)
        })?);
    }
    if let Some(page) = &req.page {
        let html = crate::html::report_page(report)?;
        outputs.push(staging::stage_file(page, html.as_bytes(), None)?);
    }
    outputs.push(staged.into_pending());
    Ok(outputs)
}

/// Removes what an interrupted run left beside this run's outputs, and says so.
fn clean_debris(req: &Request, target: &Path, progress: &Progress) -> Result<()> {
    let report = report_path(target);
    let mut outputs: Vec<&Path> = vec![target, &report];
    outputs.extend(req.key_map.as_deref());
    outputs.extend(req.page.as_deref());
    let removed = staging::clean(&outputs)?;
    if !removed.is_empty() {
        let names: Vec<String> = removed.iter().map(|p| p.display().to_string()).collect();
        progress.warn(format!(
            "removed {} staged file(s) an interrupted run left: {}",
            removed.len(),
            names.join(", ")
        ));
    }
    Ok(())
}

/// The plan, the source, an existing release and its path (`release_path`, default: SET
/// target), for the commands that read a release back.
async fn open_release(
    req: &Request,
    release_path: Option<&Path>,
    progress: &Progress,
) -> Result<(Plan, Warehouse, Warehouse, PathBuf, staging::TargetLock)> {
    let (plan, _, wh) = prepare(req, progress).await?;
    let target = match release_path {
        Some(p) => p.to_path_buf(),
        None => target_of(&plan, &req.origin)?,
    };
    // Shared with other readers; a run writing the target makes this fail fast. A commit an
    // interrupted run left half done is completed first (under the exclusive lock), so what
    // is read is one run's whole set.
    let mut lock = staging::lock(&target, false)?;
    if staging::interrupted(&target) {
        drop(lock);
        lock = staging::lock(&target, true)?;
        if let Some(done) = staging::recover(&target)? {
            progress.warn(done);
        }
    }
    let released = Warehouse::open(&target)
        .await
        .with_context(|| format!("cannot open the release '{}'", target.display()))?;
    Ok((plan, wh, released, target, lock))
}

/// `relanon attack`: what an adversary knowing `facts` about one entity learns from the
/// release (default: SET target); see [`crate::attack`].
pub async fn attack(
    req: &Request,
    release_path: Option<&Path>,
    facts: &[String],
    progress: &Progress,
) -> Result<crate::attack::Findings> {
    let (plan, wh, released, _, _lock) = open_release(req, release_path, progress).await?;
    progress.phase("attack", "matching the facts against the release");
    Ok(crate::attack::run(&plan, &wh, &released, facts).await?)
}

/// `relanon verify`: an independent re-check of an existing release.
pub async fn verify_release(
    req: &Request,
    release_path: Option<&Path>,
    key_map: Option<&Path>,
    progress: &Progress,
) -> Result<Verdict> {
    let (plan, wh, released, target, _lock) = open_release(req, release_path, progress).await?;
    let map: Option<KeyMap> =
        match key_map {
            Some(p) => {
                let file = std::fs::File::open(p)
                    .with_context(|| format!("cannot read key map '{}'", p.display()))?;
                // Read a pair at a time into columns, never held as text.
                let reader = std::io::BufReader::new(file);
                Some(serde_json::from_reader(reader).with_context(|| {
                    format!("key map '{}' is not a relanon key map", p.display())
                })?)
            }
            None => None,
        };
    // Without any key (a single key-less table, or a single table's fragments, which
    // release none) there is nothing to pseudonymize or map. Fragments of entity trees keep
    // the entity key in the anchor.
    let fragments =
        matches!(&plan.params.algorithm.name, Some((n, _)) if n.eq_ignore_ascii_case("fragment"));
    let keyless = (fragments && plan.tables.len() == 1)
        || plan.tables.iter().all(|t| t.primary_key.is_empty());
    let keys = match (&map, plan.params.keys) {
        (Some(m), _) => Keys::Map(m),
        (None, KeyPolicy::Preserve) => Keys::Preserved,
        (None, KeyPolicy::Pseudonymize) if keyless => Keys::Preserved,
        (None, KeyPolicy::Pseudonymize) => bail!(
            "this release has pseudonymized keys, so verify needs the key map: pass --key-map PATH (written by anonymize --key-map PATH)"
        ),
    };
    let report_file = report_path(&target);
    let report: Option<serde_json::Value> = match std::fs::read_to_string(&report_file) {
        Ok(text) => Some(
            serde_json::from_str(&text)
                .with_context(|| format!("'{}' is not valid JSON", report_file.display()))?,
        ),
        Err(_) => None,
    };
    let made_with = report
        .as_ref()
        .and_then(|r| r.get("key_map_digest"))
        .and_then(serde_json::Value::as_str);
    if let (Some(m), Some(expected), Some(path)) = (&map, made_with, key_map) {
        let found = m.digest();
        if found != expected {
            bail!(
                "the key map '{}' was written by another anonymize run than the one that made this release (its fingerprint is {found}, {} names {expected}): its keys would trace every row to the wrong source row; pass the key map written with this release",
                path.display(),
                report_file.display()
            );
        }
    }
    // What this process holds beside verify: the key map.
    let held = map.as_ref().map_or(0, |m| m.pairs() * budget::HELD_PER_ROW);
    let memory = Budget::or_default(req.memory_budget).beside(held);
    progress.phase("verify", "checking the release independently");
    let verdict = verify::verify(&plan, &wh, &released, keys, report.as_ref(), memory).await?;
    // Each check read the source again: a verdict over two versions of it is no verdict.
    wh.unchanged()?;
    released.unchanged()?;
    Ok(verdict)
}

/// What l-diversity must suppress whatever the algorithm does (see
/// [`sensitive::release_ceiling`]): a warning per sensitive column that cannot keep all its
/// rows, and an error when not one entity can be released.
fn diversity_warnings(plan: &Plan, forest: &forest::Forest) -> Result<Vec<String>> {
    let Some((l, diversity)) = plan.params.model.diversity() else {
        return Ok(Vec::new());
    };
    let mut warnings = Vec::new();
    for (ti, t) in forest.tables.iter().enumerate() {
        for col in &t.sensitive {
            let rows = col.codes.len();
            // Distinct l-diversity bounds no value's share: a group holding l values takes
            // any number of rows of the commonest, so every row can be kept or none.
            let keep = match diversity {
                plan::Diversity::Distinct if col.distinct() >= l => rows,
                plan::Diversity::Distinct => 0,
                plan::Diversity::Probabilistic => sensitive::release_ceiling(col, l),
            };
            if keep == rows {
                continue;
            }
            let (value, n) = sensitive::most_frequent(col).unwrap_or(("", 0));
            let share = |x: usize| 100.0 * x as f64 / rows.max(1) as f64;
            if ti == 0 && keep == 0 {
                bail!(
                    "{}: with l = {l} no entity can be released: the column has {} distinct value(s) and every l-diverse group needs at least {l}; lower l, use coarser BUCKETS, or drop the SENSITIVE label if the column is not sensitive",
                    col.column,
                    col.distinct()
                );
            }
            warnings.push(format!(
                "{}: with l = {l} at least {} of {rows} rows ({:.1}%) will be suppressed: '{value}' is {:.1}% of the rows, more than 1/l; lower l or use coarser BUCKETS to keep them",
                col.column,
                rows - keep,
                share(rows - keep),
                share(n)
            ));
        }
    }
    Ok(warnings)
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

/// Gives the heap's free pages back to the system. Clustering allocates on every thread, and
/// glibc keeps what a thread frees in that thread's arena, where the phases after it (all on
/// this thread) cannot reuse it. At TPC-H SF 1 the peak was 8.03 GiB without this, 7.34 GiB
/// with it.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub(super) fn return_free_heap() {
    // SAFETY: malloc_trim takes no pointers and only releases pages no allocation uses.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(super) fn return_free_heap() {}

pub mod answers;
#[cfg(feature = "distributed")]
pub mod cluster;
mod dry_run;
mod init;
pub mod negotiate;
mod piece;
// Cut by a cluster (`--features distributed`); its tests run in every build.
#[cfg_attr(not(feature = "distributed"), allow(dead_code))]
mod shard_files;
mod sharded;
#[cfg(any(feature = "distributed", test))]
mod wire;
pub use dry_run::{dry_run, DryRun};
pub use init::{init, Initialized};
