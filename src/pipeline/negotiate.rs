//! `relanon lattice` and `relanon negotiate`: the annotated lattice of a warehouse built
//! (declarations -> plan -> forest -> [`annotate`]) with a fingerprint of what it was built
//! from, written and read back through [`crate::lattice_file`], checked fresh, and the nodes a
//! partial lattice lacks computed for a request. The answers are [`super::answers`]'.
//!
//! A persisted lattice is refused when its declarations, source or hierarchy files changed
//! since it was built (their contents are hashed): answers over stale histograms would
//! promise suppressions the data no longer has.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};

use super::{load, prepare, source_of, Request};
use crate::algo::kernel::annotate::{annotate, estimated_work, tree_rows};
use crate::algo::kernel::lattice::Lattice;
use crate::algo::kernel::partial::{annotate_partial, node_histograms};
use crate::forest::Forest;
use crate::lattice_file::{self, ColumnMeta, Declared, Fingerprint, LevelMeta};
use crate::outputs::{self, Input, Kind, Output};
use crate::plan::{Diversity, Model, Plan};
use crate::progress::Progress;
use crate::warehouse::staging;

pub use super::answers::{
    answer, top_acceptable, AnswerJson, Answered, Ask, AskedJson, LatticeJson, RelaxationJson,
    StatsJson, SuppressedJson,
};
pub use crate::lattice_file::{read, Built, Meta};

/// The most nodes annotated in full (memory: one histogram each).
pub const NODE_LIMIT: usize = 1_000_000;
/// The most row visits an annotation may take (a few minutes on two cores).
pub const WORK_LIMIT: f64 = 2e10;
/// The most nodes a partial lattice scores (its estimator is computed for every node).
pub const PARTIAL_NODE_LIMIT: usize = 20_000_000;

/// Builds the annotated lattice of the declarations' warehouse.
/// With `partial` (a share in (0, 1]), only that share of each height's nodes is annotated
/// (002 Ch. 5).
pub async fn build(req: &Request, partial: Option<f64>, progress: &Progress) -> Result<Built> {
    let started = Instant::now();
    let (plan, _, wh) = prepare(req, progress).await?;
    if plan.params.model.anatomy().is_some() {
        bail!("the lattice generalizes QI values, and the declarations ask for model = 'anatomy', which publishes them exactly; negotiate a k-anonymity or l-diversity model (or anonymize with the anatomy as declared)");
    }
    let forest = load(&plan, &wh, 1, progress).await?;
    let lattice = Lattice::new(&forest);
    check_size(&lattice, &forest, partial)?;
    let (sensitive, no_distinct) = distinct_measure(&plan, &forest);
    progress.phase("cluster", "annotating the lattice");
    let annotated = match partial {
        None => annotate(&lattice, no_distinct.is_none(), progress),
        Some(p) => annotate_partial(&lattice, no_distinct.is_none(), p, progress),
    };
    let columns = column_meta(&plan, &lattice);
    let declared = declared(&plan.params.model)?;
    let mut inputs = vec![plan.source.clone()];
    inputs.extend(plan.hierarchy_files.iter().cloned());
    let fingerprint = Fingerprint::of(&req.text, &plan.source, &inputs)?;
    let meta = Meta {
        relanon_version: env!("CARGO_PKG_VERSION").to_string(),
        entity: plan.entity.clone(),
        tables: plan.tables.iter().map(|t| t.name.clone()).collect(),
        rows: annotated.rows.clone(),
        columns,
        sensitive,
        no_distinct,
        declared,
        fingerprint,
        build_seconds: started.elapsed().as_secs_f64(),
        partial,
    };
    Ok(Built {
        lattice: annotated,
        meta,
    })
}

/// Refuses a lattice too large to annotate (in full, or the `partial` share), offering the
/// partial lattice when it would fit.
fn check_size(lattice: &Lattice, forest: &Forest, partial: Option<f64>) -> Result<()> {
    let shape = lattice
        .columns
        .iter()
        .map(|c| (c.height + 1).to_string())
        .collect::<Vec<_>>()
        .join(" x ");
    let nodes: f64 = lattice
        .columns
        .iter()
        .map(|c| c.height as f64 + 1.0)
        .product();
    let rows: usize = forest.tables.iter().map(|t| t.rows()).sum();
    let heights_sum: f64 = lattice.columns.iter().map(|c| c.height as f64).sum();
    // A partial lattice computes each chosen node on its own: one pass over the rows each,
    // about p of the nodes (at least two per height) plus one axis node per column level.
    let partial_work = |p: f64| {
        let axes: f64 = lattice.columns.iter().map(|c| c.height as f64 + 1.0).sum();
        ((p * nodes).max(2.0 * (heights_sum + 1.0)).min(nodes) + axes) * rows as f64
    };
    match partial {
        None => {
            let work = estimated_work(lattice);
            if nodes > NODE_LIMIT as f64 || work > WORK_LIMIT {
                let offer = if nodes <= PARTIAL_NODE_LIMIT as f64
                    && partial_work(0.05) <= WORK_LIMIT
                {
                    format!(", or annotate part of it with --partial 5% (about {:.0} nodes, {:.1e} row visits)", (0.05 * nodes).max(2.0 * (heights_sum + 1.0)).min(nodes), partial_work(0.05))
                } else {
                    String::new()
                };
                bail!(
                    "the lattice of the {} QI column(s) has {nodes:.0} nodes ({shape} levels); annotating every node would take about {work:.1e} row visits over {rows} family rows, more than the {WORK_LIMIT:.0e} (or {NODE_LIMIT} nodes) relanon annotates; declare fewer quasi-identifiers or hierarchies with fewer levels{offer}, or let `anonymize` with algorithm = 'lattice' search it with pruning",
                    lattice.columns.len(),
                );
            }
        }
        Some(p) => {
            if nodes > PARTIAL_NODE_LIMIT as f64 || partial_work(p) > WORK_LIMIT {
                bail!(
                    "the lattice of the {} QI column(s) has {nodes:.0} nodes ({shape} levels); annotating {:.1}% of them would take about {:.1e} row visits over {rows} family rows, more than the {WORK_LIMIT:.0e} (or {PARTIAL_NODE_LIMIT} nodes) relanon annotates; declare fewer quasi-identifiers or hierarchies with fewer levels, or a smaller share",
                    lattice.columns.len(),
                    p * 100.0,
                    partial_work(p)
                );
            }
        }
    }
    Ok(())
}

/// The entity table's sensitive columns whose distinct values are annotated, or why the
/// distinct measure is not.
fn distinct_measure(plan: &Plan, forest: &Forest) -> (Vec<String>, Option<String>) {
    let below = plan.sensitive_below_entity();
    let sensitive: Vec<String> = forest.tables[0]
        .sensitive
        .iter()
        .map(|s| s.column.clone())
        .collect();
    let no_distinct = if !below.is_empty() {
        Some(format!("{} is sensitive and lies below the entity table; l is measured on the entity table's sensitive columns only", below.join(", ")))
    } else if sensitive.is_empty() {
        Some(format!(
            "the entity table {} has no SENSITIVE column",
            plan.tables[0].name
        ))
    } else {
        None
    };
    if no_distinct.is_some() {
        return (Vec::new(), no_distinct);
    }
    (sensitive, None)
}

/// The declarations' model as the lattice records it.
fn declared(model: &Model) -> Result<Declared> {
    Ok(match model.clone() {
        Model::Anatomy { .. } => {
            bail!("anatomy has no lattice; negotiate a k-anonymity or l-diversity model")
        }
        Model::KAnonymity { k } => Declared {
            measure: "k".into(),
            value: k as u32,
            diversity: None,
        },
        Model::LDiversity { l, diversity } => Declared {
            measure: "l".into(),
            value: l as u32,
            diversity: Some(
                match diversity {
                    Diversity::Probabilistic => "probabilistic",
                    Diversity::Distinct => "distinct",
                }
                .into(),
            ),
        },
    })
}

/// Each lattice column's name, hierarchy and what its levels release.
fn column_meta(plan: &Plan, lattice: &Lattice) -> Vec<ColumnMeta> {
    let forest = lattice.forest();
    let mut out = Vec::new();
    for (t, (ft, table)) in plan.tables.iter().zip(&forest.tables).enumerate() {
        for ((q, (name, _)), &c) in ft.qi_columns().enumerate().zip(lattice.columns_of(t)) {
            let h = &table.hierarchies[q];
            let height = lattice.columns[c].height;
            let levels = (0..=height)
                .map(|level| {
                    let mut counts: BTreeMap<u32, u64> = BTreeMap::new();
                    let mut generalized: BTreeMap<u32, u64> = BTreeMap::new();
                    for r in 0..table.rows() {
                        let leaf = table.qi[r * table.nqi() + q];
                        let g = lattice.generalize(c, level, leaf);
                        *counts.entry(g).or_insert(0) += 1;
                        if g != leaf {
                            *generalized.entry(g).or_insert(0) += 1;
                        }
                    }
                    let example = generalized
                        .iter()
                        .max_by_key(|(&g, &n)| (n, std::cmp::Reverse(g)))
                        .and_then(|(&g, _)| h.label(g).map(str::to_string));
                    LevelMeta {
                        labels: counts.len() as u64,
                        example,
                        loss: lattice.level_loss(c, level),
                    }
                })
                .collect();
            out.push(ColumnMeta {
                name: format!("{}.{name}", ft.name),
                hierarchy: h.name().to_string(),
                height,
                cells: table.rows() as u64,
                levels,
            });
        }
    }
    out
}

/// Writes `built` to `path` (refusing an input, or an existing file without `overwrite` or
/// not a lattice relanon wrote), staged and committed whole.
pub fn write(built: &Built, path: &Path, req: &Request, overwrite: bool) -> Result<()> {
    let mut read = vec![Input {
        path: built.meta.fingerprint.source.clone(),
        what: "the source",
    }];
    if let Some(p) = &req.path {
        read.push(Input {
            path: p.clone(),
            what: "the declarations",
        });
    }
    outputs::check(
        &[Output {
            kind: Kind::Lattice,
            path: path.to_path_buf(),
            option: "--out",
        }],
        &read,
        overwrite,
    )?;
    let bytes = lattice_file::encode(built)?;
    let context = || {
        format!(
            "cannot write '{}'; check that its directory exists and is writable",
            path.display()
        )
    };
    let pending = staging::stage_file(path, &bytes, None).with_context(context)?;
    staging::commit_all(vec![pending], path, overwrite).with_context(context)?;
    Ok(())
}

/// Refuses a persisted lattice built from other declarations, data or hierarchy files.
pub fn check_fresh(built: &Built, req: &Request, path: &Path) -> Result<()> {
    let f = &built.meta.fingerprint;
    let rebuild = format!(
        "rebuild it with `relanon lattice {} --out {} --overwrite`",
        req.origin,
        path.display()
    );
    if !f.same_declarations(&req.text) {
        bail!(
            "the lattice '{}' was built from other declarations than {}; {rebuild}",
            path.display(),
            req.origin
        );
    }
    let policy = crate::decl::parse(&req.text).map_err(|e| anyhow!("{}:{e}", req.origin))?;
    let source = source_of(req, &policy)?;
    let source = std::path::absolute(&source).unwrap_or(source);
    if source != f.source {
        bail!(
            "the lattice '{}' was built from the source '{}', not '{}'; {rebuild}",
            path.display(),
            f.source.display(),
            source.display()
        );
    }
    if let Some(changed) = f.changed_input() {
        bail!(
            "the lattice '{}' is stale: '{}' changed since it was built; {rebuild}",
            path.display(),
            changed.display()
        );
    }
    Ok(())
}

/// Computes, from the data, the histograms of a partial lattice's nodes at `levels` that it
/// lacks (the thesis's third variant, Fig. 5.23: the top acceptable node at query time, so
/// relaxing the suppression and k are answered as over the full lattice).
pub async fn compute_nodes(
    built: &mut Built,
    req: &Request,
    nodes: &[Vec<u16>],
    progress: &Progress,
) -> Result<()> {
    let missing: Vec<&Vec<u16>> = nodes
        .iter()
        .filter(|l| !built.lattice.is_computed(built.lattice.index(l)))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let (plan, _, wh) = prepare(req, progress).await?;
    let forest = load(&plan, &wh, 1, progress).await?;
    let lattice = Lattice::new(&forest);
    let rows = tree_rows(&forest);
    let distinct = built.meta.no_distinct.is_none();
    for levels in missing {
        let (size, by_distinct) = node_histograms(&lattice, levels, distinct, &rows);
        let index = built.lattice.index(levels);
        built.lattice.extra.push((index, size, by_distinct));
    }
    Ok(())
}
