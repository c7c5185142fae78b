//! `plan`: what a run of the declarations would do, with nothing written: the family with
//! its rows and fan-out, the tables released beside it and left out, every column's fate,
//! the `-- review` lines still present, personal-looking values a column would publish
//! unchanged, and a rough estimate of the run.

use std::collections::BTreeMap;

use anyhow::Result;
use arrow::array::RecordBatch;
use serde::Serialize;

use super::{prepare, Request};
use crate::budget::{self, Budget, Size};
use crate::hierarchy::Hierarchy;
use crate::init::{Profile, REVIEW};
use crate::plan::{ColumnRole, Plan, PlannedColumn};
use crate::progress::Progress;
use crate::report::ROWS_KEPT_WARNING;
use crate::warehouse::{numeric_value, quote_ident as q, render_value, Warehouse};

/// The plan as a person reads it (and `--json` prints).
#[derive(Debug, Serialize)]
pub struct DryRun {
    pub entity: String,
    pub algorithm: String,
    pub model: String,
    pub tables: Vec<TableView>,
    pub dimensions: Vec<TableView>,
    pub left_out: Vec<String>,
    /// `line: text` of every line still marked `-- review:`.
    pub review: Vec<String>,
    pub warnings: Vec<String>,
    pub estimate: Estimate,
    /// How the release is laid out when it is not the family's tables (a vertical
    /// fragmentation's fragments).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct TableView {
    pub name: String,
    /// The parent table (family tables below the entity table).
    pub parent: Option<String>,
    pub rows: usize,
    /// Rows per parent row: mean and most.
    pub fan_out: Option<(f64, usize)>,
    /// `KEEP n PERCENT OF` this table: the percentage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keep: Option<f64>,
    /// The most rows of this family table any release can keep (see [`most_kept_sorted`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at_most: Option<usize>,
    pub columns: Vec<ColumnView>,
}

#[derive(Debug, Serialize)]
pub struct ColumnView {
    pub name: String,
    /// What happens to it: dropped, generalized, published unchanged, pseudonymized key.
    pub fate: String,
}

#[derive(Debug, Serialize)]
pub struct Estimate {
    pub entities: usize,
    /// Rows of the family: the vertices of the entity trees.
    pub vertices: usize,
    /// A rough class of the run's time, and what it is based on.
    pub time: String,
    /// What the run would hold whole, and what the memory budget decides (whole, or how
    /// many shards), or why the budget is refused.
    pub memory: String,
}

/// What a vertical fragmentation releases in place of the entity table (docs/fragmentation.md):
/// which columns go to which fragment is chosen from the data when it runs.
fn fragments_layout(plan: &Plan) -> String {
    let entity = &plan.tables[0].name;
    let class = match plan.params.algorithm.written("class") {
        Some(crate::policy::Value::Text(c)) => c.trim().to_string(),
        _ => "?".to_string(),
    };
    let (f1, f2) = (
        crate::release::fragment_table_name(entity, 0),
        crate::release::fragment_table_name(entity, 1),
    );
    let children = plan.child_tables();
    let anchor = if children.is_empty() {
        format!("{f1} and {f2}, both without a key")
    } else {
        format!(
            "{f1}, which keeps the entity key and the child tables ({}), and {f2}, without a key",
            children.join(", ")
        )
    };
    format!("{entity} is released as {anchor}, sharing only the class '{class}'; which QI columns go to which fragment is chosen from the data when it runs (the report's fragmentation section lists them)")
}

/// Plans the declarations against the source and describes the result.
pub async fn dry_run(req: &Request) -> Result<DryRun> {
    let progress = Progress::new();
    let (plan, configured, wh) = prepare(req, &progress).await?;
    let batches = read_released(&plan, &wh)?;
    let mut warnings = plan.warnings.clone();
    let mut tables = family_views(&plan, &wh, &batches, &mut warnings).await?;
    if plan.params.model.anatomy().is_none() {
        bound_rows(&batches, &plan, &mut tables, &mut warnings);
        twins(&batches, &plan, &mut warnings);
    }
    let dimensions = plan
        .dimensions
        .iter()
        .map(|d| TableView {
            name: d.name.clone(),
            parent: None,
            rows: row_count(&wh, &d.name),
            fan_out: None,
            keep: None,
            at_most: None,
            columns: columns(
                batches.get(&d.name),
                &d.name,
                &d.columns,
                &plan.hierarchies,
                &mut warnings,
                false,
            ),
        })
        .collect();
    let review = req
        .text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(&format!("{REVIEW}:")))
        .map(|(i, l)| format!("{}: {}", i + 1, l.trim()))
        .collect();
    let entities = tables.first().map_or(0, |t| t.rows);
    let vertices = tables.iter().map(|t| t.rows).sum();
    let linear = configured
        .options
        .iter()
        .any(|(n, v)| n == "candidates" && v != crate::algo::OptionValue::Unset);
    let time = estimate(configured.spec.name, linear, entities, vertices);
    let memory = memory_estimate(req, &plan, &wh)?;
    let layout = (configured.spec.name == "fragment").then(|| fragments_layout(&plan));
    Ok(DryRun {
        layout,
        entity: plan.entity.clone(),
        algorithm: configured.spec.name.to_string(),
        model: model_name(&plan.params.model),
        tables,
        dimensions,
        left_out: plan.left_out.clone(),
        review,
        warnings,
        estimate: Estimate {
            entities,
            vertices,
            time,
            memory,
        },
    })
}

/// What `anonymize` with the same budget would hold whole, and what the budget decides.
fn memory_estimate(req: &Request, plan: &Plan, wh: &Warehouse) -> Result<String> {
    let family = super::family_size(plan, wh)?;
    let budget = Budget::or_default(req.memory_budget);
    let shown = Size(budget.bytes);
    Ok(match budget::decide(budget, family, req.shards) {
        Ok(d) if d.shards == 1 => format!(
            "about {} at its peak, within the memory budget of {shown}: the family in one run",
            Size(d.whole)
        ),
        Ok(d) => format!(
            "about {} whole, more than the memory budget of {shown}: {} shards of whole trees",
            Size(d.whole),
            d.shards
        ),
        Err(e) => format!("refused: {e}"),
    })
}

/// Every released table read once, in source order: its columns' fates, the owners of
/// its rows and its twins all look at the same rows.
fn read_released(plan: &Plan, wh: &Warehouse) -> Result<BTreeMap<String, RecordBatch>> {
    let mut batches: BTreeMap<String, RecordBatch> = BTreeMap::new();
    let released = plan.tables.iter().map(|t| &t.name);
    for name in released.chain(plan.dimensions.iter().map(|d| &d.name)) {
        if !batches.contains_key(name) {
            batches.insert(name.clone(), wh.table_in_source_order(name)?);
        }
    }
    Ok(batches)
}

/// One view per family table, each once (a split table has two plan entries), in plan
/// order: its rows, its fan-out under its parent, its columns' fates and its `KEEP`.
async fn family_views(
    plan: &Plan,
    wh: &Warehouse,
    batches: &BTreeMap<String, RecordBatch>,
    warnings: &mut Vec<String>,
) -> Result<Vec<TableView>> {
    let mut tables = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for ft in &plan.tables {
        if !seen.insert(ft.name.clone()) {
            continue;
        }
        let rows = row_count(wh, &ft.name);
        let parent = ft.parent.map(|p| plan.tables[p].name.clone());
        let fan_out = match &parent {
            Some(p) => fan_out(wh, &ft.name, &ft.parent_fk, row_count(wh, p)).await?,
            None => None,
        };
        let mut columns = columns(
            batches.get(&ft.name),
            &ft.name,
            &ft.columns,
            &plan.hierarchies,
            warnings,
            true,
        );
        if let Some((_, variant)) = plan.params.model.anatomy() {
            anatomy_fates(ft, variant, &mut columns);
        }
        let keep = plan
            .params
            .keep
            .iter()
            .find(|k| k.name == ft.name)
            .map(|k| k.percent);
        tables.push(TableView {
            name: ft.name.clone(),
            parent,
            rows,
            fan_out,
            keep,
            at_most: None,
            columns,
        });
    }
    Ok(tables)
}

/// The privacy model as the plan's header names it, with its parameters.
fn model_name(model: &crate::plan::Model) -> String {
    match model {
        crate::plan::Model::KAnonymity { k } => format!("k-anonymity, k = {k}"),
        crate::plan::Model::LDiversity { l, diversity } => {
            format!("l-diversity ({diversity:?}), l = {l}")
        }
        crate::plan::Model::Anatomy { l, variant, rules } => {
            format!(
                "anatomy ({}), l = {l}, {} rule(s)",
                variant.name(),
                rules.len()
            )
        }
    }
}

fn row_count(wh: &Warehouse, table: &str) -> usize {
    wh.row_count(table).unwrap_or(0)
}

/// Mean and largest number of rows per parent row.
async fn fan_out(
    wh: &Warehouse,
    table: &str,
    fk: &[String],
    parent_rows: usize,
) -> Result<Option<(f64, usize)>> {
    if fk.is_empty() || parent_rows == 0 {
        return Ok(None);
    }
    let cols = fk.iter().map(|c| q(c)).collect::<Vec<_>>().join(", ");
    let sql = format!(
        "SELECT COUNT(*) AS n FROM {} WHERE {} GROUP BY {cols} ORDER BY n DESC LIMIT 1",
        q(table),
        fk.iter()
            .map(|c| format!("{} IS NOT NULL", q(c)))
            .collect::<Vec<_>>()
            .join(" AND ")
    );
    let batches = wh.sql(&sql).await?;
    let most = batches
        .first()
        .filter(|b| b.num_rows() > 0)
        .and_then(|b| numeric_value(b.column(0).as_ref(), 0))
        .map_or(0, |n| n as usize);
    Ok(Some((
        row_count(wh, table) as f64 / parent_rows as f64,
        most,
    )))
}

/// Under anatomy QI values are published exactly, and sensitive ones on the SA side.
fn anatomy_fates(
    ft: &crate::plan::FamilyTable,
    variant: crate::plan::Variant,
    columns: &mut [ColumnView],
) {
    let side = match variant {
        crate::plan::Variant::TreeTree => format!("{}__sa", ft.name),
        crate::plan::Variant::VertexVertex => format!("{}__sag", ft.name),
    };
    for (view, c) in columns.iter_mut().zip(&ft.columns) {
        match c.role {
            ColumnRole::QuasiIdentifier { .. } => {
                view.fate =
                    "published exactly (QUASI IDENTIFIER; anatomy generalizes nothing)".to_string();
            }
            ColumnRole::Sensitive { .. } => {
                view.fate = format!(
                    "published apart from its rows, in {side}, linked only by slot (SENSITIVE)"
                );
            }
            _ => {}
        }
    }
}

/// Each column's fate; a column published unchanged whose values look like personal data
/// adds a warning.
fn columns(
    batch: Option<&RecordBatch>,
    table: &str,
    planned: &[PlannedColumn],
    hierarchies: &BTreeMap<String, crate::plan::HierarchyDef>,
    warnings: &mut Vec<String>,
    family: bool,
) -> Vec<ColumnView> {
    let array = |name: &str| {
        batch.and_then(|b| b.schema().index_of(name).ok().map(|i| b.column(i).clone()))
    };
    planned
        .iter()
        .map(|c| {
            let fate = match &c.role {
                ColumnRole::Key if family => "join key, pseudonymized".to_string(),
                ColumnRole::Key => "key, published as the source holds it".to_string(),
                ColumnRole::Identifier => "dropped (IDENTIFIER)".to_string(),
                ColumnRole::QuasiIdentifier { hierarchy } => {
                    let built = array(&c.name).zip(hierarchies.get(hierarchy)).map(|(a, def)| {
                        let texts: Vec<Option<String>> =
                            (0..a.len()).map(|r| render_value(a.as_ref(), r)).collect();
                        let numbers: Vec<Option<f64>> =
                            (0..a.len()).map(|r| numeric_value(a.as_ref(), r)).collect();
                        let column = format!("{table}.{}", c.name);
                        Hierarchy::build(hierarchy, def, &column, &texts, &numbers)
                    });
                    match built {
                        Some(Ok(b)) => format!(
                            "generalized through {hierarchy} (height {}, {} leaves)",
                            b.hierarchy.height(),
                            b.hierarchy.total_leaves()
                        ),
                        Some(Err(e)) => {
                            // The run would stop here: say so before it is started.
                            warnings.push(format!("anonymize will refuse: {e}"));
                            format!("generalized through {hierarchy} (which does not fit the data: see the warning)")
                        }
                        None => format!("generalized through {hierarchy}"),
                    }
                }
                ColumnRole::Sensitive { .. } => "published unchanged (SENSITIVE)".to_string(),
                ColumnRole::Insensitive => "published unchanged (INSENSITIVE)".to_string(),
            };
            let unchanged = matches!(
                c.role,
                ColumnRole::Sensitive { .. } | ColumnRole::Insensitive
            );
            if unchanged {
                if let Some(a) = array(&c.name) {
                    let p = Profile::of(a.as_ref());
                    if let Some((pattern, n)) = p.dominant_pattern() {
                        warnings.push(format!(
                            "{table}.{} is published unchanged but its values look like {} ({n} of {} sampled): label it IDENTIFIER unless they are not about people",
                            c.name,
                            pattern.describe(),
                            p.sampled
                        ));
                    }
                }
            }
            ColumnView {
                name: c.name.clone(),
                fate,
            }
        })
        .collect()
}

/// A rough time class, from the measured rates in docs/performance.md: MiRaCleX, TopDown,
/// the baselines and any search with candidate blocking grow about linearly with the
/// entities (about 1,500 entities a second on two cores); the exact searches of MiRaCle,
/// CToff, dMiRaCle and ClusTree quadratically (1,000 entities: about 1.6, 2.6, 3 and 27 s).
fn estimate(algorithm: &str, blocked: bool, entities: usize, vertices: usize) -> String {
    let n = entities as f64 / 1000.0;
    let per_thousand_squared = match algorithm {
        "miracle" => Some(1.6),
        "ctoff" => Some(2.6),
        "dmiracle" => Some(3.0),
        "clustree" => Some(27.0),
        _ => None,
    };
    let seconds = match per_thousand_squared {
        Some(c) if !blocked => c * n * n + vertices as f64 / 100_000.0,
        _ => n / 1.5 + vertices as f64 / 100_000.0,
    };
    let class = if seconds < 10.0 {
        "seconds"
    } else if seconds < 120.0 {
        "about a minute or two"
    } else if seconds < 1800.0 {
        "minutes"
    } else {
        "an hour or more (consider candidates = 50, or algorithm = 'miraclex')"
    };
    format!("{class} (rough: {algorithm} on {entities} entities and {vertices} rows, from the rates in docs/performance.md)")
}

/// Fills each family table's `at_most` and warns where it is under half the rows, or where
/// the tables below the entity hold many quasi-identifiers. QI-isomorphic trees hold equally
/// many rows of every table, so whatever the algorithm and the hierarchies, a class keeps
/// of a table at most its size times the fewest rows any of its people has there.
fn bound_rows(
    batches: &BTreeMap<String, RecordBatch>,
    plan: &crate::plan::Plan,
    tables: &mut [TableView],
    warnings: &mut Vec<String>,
) {
    let group = plan.params.model.min_group();
    let owners = crate::init::owners(&plan.tables, batches);
    let entities = tables.first().map_or(0, |t| t.rows);
    for view in tables.iter_mut().skip(1) {
        let Some(rows) = owners.get(&view.name) else {
            continue;
        };
        let mut per_entity = vec![0usize; entities];
        for e in rows.iter().flatten() {
            if let Some(n) = per_entity.get_mut(*e as usize) {
                *n += 1;
            }
        }
        per_entity.sort_unstable_by(|a, b| b.cmp(a));
        let most = most_kept_sorted(&per_entity, group);
        view.at_most = Some(most);
        if view.rows > 0 && (most as f64) < ROWS_KEPT_WARNING * view.rows as f64 {
            let smaller = smaller_group(&per_entity, group, view.rows)
                .map_or(String::new(), |offer| format!("{offer}, or "));
            warnings.push(format!(
                "{}: at most {most} of its {} rows ({:.0}%) can be released: the people of a class of {group} must hold equally many of its rows, and they hold very different numbers; expect the rest suppressed ({smaller}leave the table out of the family, to keep more)",
                view.name,
                view.rows,
                100.0 * most as f64 / view.rows as f64,
            ));
        }
    }
    let mut below: Vec<String> = Vec::new();
    for t in plan.tables.iter().skip(1) {
        let qis = t
            .columns
            .iter()
            .filter(|c| matches!(c.role, ColumnRole::QuasiIdentifier { .. }));
        for c in qis {
            // A table split over two plan entries lists its columns twice.
            let name = format!("{}.{}", t.name, c.name);
            if !below.contains(&name) {
                below.push(name);
            }
        }
    }
    if below.len() > HEAVY_QIS {
        warnings.push(format!(
            "{} quasi-identifiers below the entity ({}): a class must agree on every one of them in every row its people share, so heavy generalization or suppression is likely; keep as QUASI IDENTIFIER only what an adversary could know, and prefer coarse date parts (year) below the entity",
            below.len(),
            below.join(", ")
        ));
    }
}

/// More quasi-identifiers than this below the entity makes `plan` warn.
const HEAVY_QIS: usize = 10;

/// The most rows of a table a release in classes of at least `group` entities can keep,
/// given each entity's number of rows (`counts`, sorted largest first): cut into runs
/// of `group` to `2 * group - 1` (a larger run splits without loss), each run keeping its
/// size times its smallest count, and any entity may be suppressed; exact, by dynamic
/// programming over the sorted counts.
fn most_kept_sorted(counts: &[usize], group: usize) -> usize {
    let group = group.max(1);
    let n = counts.len();
    let mut best: Vec<Option<usize>> = vec![None; n + 1];
    best[0] = Some(0);
    for i in 1..=n {
        let mut here = best[i - 1];
        for size in group..=(2 * group - 1).min(i) {
            if let Some(before) = best[i - size] {
                let kept = before + size * counts[i - 1];
                here = Some(here.map_or(kept, |h| h.max(kept)));
            }
        }
        best[i] = here;
    }
    best[n].unwrap_or(0)
}

/// The offer of a smaller class size with the rows it would let a release keep
/// (`per_entity` sorted largest first): the largest size under `group` whose bound reaches
/// [`ROWS_KEPT_WARNING`] of `rows`, else the bound at classes of 2; none below 3.
fn smaller_group(per_entity: &[usize], group: usize, rows: usize) -> Option<String> {
    let share = |most: usize| 100.0 * most as f64 / rows.max(1) as f64;
    let mut last = None;
    for size in (2..group).rev() {
        let most = most_kept_sorted(per_entity, size);
        if most as f64 >= ROWS_KEPT_WARNING * rows as f64 {
            return Some(format!(
                "classes of {size} could keep up to {most} ({:.0}%)",
                share(most)
            ));
        }
        last = Some(most);
    }
    last.map(|most| {
        format!(
            "even classes of 2 could keep only {most} ({:.0}%)",
            share(most)
        )
    })
}

/// Warns of every column published unchanged that determines a quasi-identifier of its
/// table (a code beside its description): it undoes that column's generalization.
fn twins(
    batches: &BTreeMap<String, RecordBatch>,
    plan: &crate::plan::Plan,
    warnings: &mut Vec<String>,
) {
    let mut seen = std::collections::BTreeSet::new();
    for ft in &plan.tables {
        if !seen.insert(ft.name.clone()) {
            continue;
        }
        let Some(batch) = batches.get(&ft.name) else {
            continue;
        };
        let named = |unchanged: bool| -> Vec<&str> {
            ft.columns
                .iter()
                .filter(|c| match c.role {
                    ColumnRole::Sensitive { .. } | ColumnRole::Insensitive => unchanged,
                    ColumnRole::QuasiIdentifier { .. } => !unchanged,
                    _ => false,
                })
                .map(|c| c.name.as_str())
                .collect()
        };
        for (c, q) in crate::init::twin_pairs(batch, &named(true), &named(false)) {
            warnings.push(format!(
                "{t}.{c} is published unchanged but determines {t}.{q}, a quasi-identifier (each value of {c} comes with one value of {q}): it undoes {q}'s generalization; give {c} the role of {q} (QUASI IDENTIFIER with a hierarchy whose groups follow {q}'s) or leave it out (IDENTIFIER)",
                t = ft.name
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::most_kept_sorted;

    fn most_kept(mut counts: Vec<usize>, group: usize) -> usize {
        counts.sort_unstable_by(|a, b| b.cmp(a));
        most_kept_sorted(&counts, group)
    }

    #[test]
    fn the_rows_a_class_can_keep() {
        // Classes of 2: {5, 5} keep 10, {1, 1} keep 2.
        assert_eq!(most_kept(vec![5, 1, 5, 1], 2), 12);
        // {9, 3} keeps 6, or suppressing 9 and keeping {3, 3} keeps 6 too; {9, 3, 3} keeps 9.
        assert_eq!(most_kept(vec![9, 3, 3], 2), 9);
        // Fewer entities than a class: nothing can be released.
        assert_eq!(most_kept(vec![4], 2), 0);
        assert_eq!(most_kept(vec![], 5), 0);
        // Equal counts keep everything.
        assert_eq!(most_kept(vec![3; 10], 5), 30);
    }
}
