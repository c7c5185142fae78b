//! The family described by queries, for a run in shards: per entity its key, its root QI
//! codes, its tree's rows per table and a hash of the tree's shape; per table the rows read,
//! kept and left out. Nothing but one short record per entity reaches this process: the
//! trees are summed bottom-up by the queries (a child table grouped by its FK, joined to its
//! parent), so an [`Engine`] that runs them on a cluster leaves the family there.
//!
//! What the whole load checks is checked here by queries too, with the same verdicts: NULL
//! or duplicated keys refused; orphans refused or counted as `SET orphans` says; rows whose
//! FK is NULL (or under such a row) counted apart; a second FK path that names another
//! ancestor row than the parent chain refused.
//!
//! The shape hash stands for the canonical form `algo::kernel::shape` compares (children in
//! any order): a node hashes its table, its number of children and the sum of its
//! children's mixed hashes modulo the prime 2^31 - 1, so equal trees hash alike whatever
//! their sibling order. Two different shapes may share a hash; the hash only orders the
//! cut (`algo::shards`), so such a pair is interleaved there, and nothing else depends on it.

use arrow::array::{Array, AsArray};
use arrow::datatypes::Int64Type;
use arrow::record_batch::RecordBatch;
use futures::StreamExt;

use super::{equal, paths_disagree, texts, ForestError};
use crate::hierarchy::Hierarchy;
use crate::plan::{FamilyTable, OrphanPolicy, Plan, RedundantFk};
use crate::warehouse::{collect_on, quote_ident as quote, render_value, Engine};

/// The prime the shape hash is taken modulo: products of two residues fit an `i64`.
const P: i64 = 2_147_483_647;
/// The mixing polynomial's coefficients (any residues; these are odd and unrelated).
const MIX: [i64; 3] = [1_103_515_245, 506_952_114, 40_503];

/// Rows of one family table (its entry's share, for a split table) as the load counts them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counted {
    /// Rows with a place in the forest.
    pub loaded: usize,
    /// Rows the source holds.
    pub rows_in: usize,
    /// Rows left out as orphans (an FK to a missing parent, or under one).
    pub orphans_dropped: usize,
    /// Rows left out without a parent (a NULL FK, or under such a row).
    pub no_parent: usize,
}

/// One short record per entity, in key order, and each table's counts.
#[derive(Debug)]
pub struct Outline {
    /// The entity table's key columns, one row per entity, in key order.
    pub keys: RecordBatch,
    /// Rows of every family table under each entity, its own included.
    pub rows: Vec<u64>,
    /// The tree's shape hash per entity.
    pub shape: Vec<u32>,
    /// Per entity, its rows in each child table (plan order, the entity table left out).
    counts: Vec<u32>,
    /// Per entity, its QI codes in the entity table's hierarchies.
    codes: Vec<u32>,
    /// Per family table (plan order), its rows as the load counts them.
    pub tables: Vec<Counted>,
    width: usize,
    nqi: usize,
}

impl Outline {
    pub fn entities(&self) -> usize {
        self.rows.len()
    }

    /// Entity `e`'s rows per child table.
    pub fn counts(&self, e: u32) -> &[u32] {
        let at = e as usize * self.width;
        &self.counts[at..at + self.width]
    }

    /// An outline of one child table and one QI, keyless, from its arrays (for tests).
    #[cfg(test)]
    pub(crate) fn from_parts(
        rows: Vec<u64>,
        shape: Vec<u32>,
        counts: Vec<u32>,
        codes: Vec<u32>,
    ) -> Outline {
        Outline {
            keys: RecordBatch::new_empty(std::sync::Arc::new(arrow::datatypes::Schema::empty())),
            rows,
            shape,
            counts,
            codes,
            tables: Vec::new(),
            width: 1,
            nqi: 1,
        }
    }

    /// Entity `e`'s QI codes.
    pub fn codes(&self, e: u32) -> &[u32] {
        let at = e as usize * self.nqi;
        &self.codes[at..at + self.nqi]
    }
}

/// The family outlined by queries `engine` runs; `root` are the entity table's hierarchies
/// (built over the whole family) its QI codes are given in.
pub async fn outline(
    plan: &Plan,
    engine: &dyn Engine,
    root: &[Hierarchy],
) -> Result<Outline, ForestError> {
    let mut tables = Vec::with_capacity(plan.tables.len());
    for (ti, ft) in plan.tables.iter().enumerate() {
        super::check_key(engine, &ft.name, &ft.primary_key).await?;
        tables.push(counted(plan, engine, ti).await?);
    }
    for (ti, ft) in plan.tables.iter().enumerate() {
        for r in &ft.redundant {
            second_path(plan, engine, ti, r).await?;
        }
    }
    let mut out = entities(plan, engine, root).await?;
    out.tables = tables;
    Ok(out)
}

/// `x mod P` mixed by a quadratic polynomial: a residue again. `x` must lie in `[0, P)`.
fn mix(x: &str) -> String {
    let [a, b, c] = MIX;
    format!("((((({x}) * ({x})) % {P}) * {a} % {P} + ({x}) * {b} % {P} + {c}) % {P})")
}

/// `s.c AS {prefix}{j}` for each column `c` of `columns`, `j` its place.
fn aliased<'a>(columns: &'a [String], prefix: &'a str) -> impl Iterator<Item = String> + 'a {
    columns
        .iter()
        .enumerate()
        .map(move |(j, c)| format!("s.{} AS {prefix}{j}", quote(c)))
}

fn cols(prefix: &str, n: usize) -> impl Iterator<Item = String> + '_ {
    (0..n).map(move |j| format!("{prefix}{j}"))
}

/// What a table's children add to its rows' node: the joins, and the children's count,
/// hash sum, rows and per-table counts as expressions over the joined aggregates.
struct Below {
    joins: String,
    children: String,
    hashes: String,
    rows: String,
    /// `(table, expression)` for every table under this one.
    counts: Vec<(usize, String)>,
}

/// Table `ti`'s children aggregated and joined to its rows (alias `s`).
fn below(plan: &Plan, ti: usize) -> Result<Below, ForestError> {
    let mut joins = String::new();
    let (mut children, mut hashes, mut rows) = (
        vec!["0".to_string()],
        vec!["0".to_string()],
        vec!["1".to_string()],
    );
    let mut counts = Vec::new();
    let mut kids = plan.tables[ti].children.clone();
    kids.sort_unstable();
    for c in kids {
        let a = format!("__relanon_a{c}");
        let on = plan.tables[c]
            .parent_key
            .iter()
            .enumerate()
            .map(|(j, k)| format!("{a}.__relanon_p{j} = s.{}", quote(k)))
            .collect::<Vec<_>>()
            .join(" AND ");
        joins.push_str(&format!(" LEFT JOIN ({}) {a} ON {on}", aggregate(plan, c)?));
        children.push(format!("COALESCE({a}.__relanon_c, 0)"));
        hashes.push(format!("COALESCE({a}.__relanon_s, 0)"));
        rows.push(format!("COALESCE({a}.__relanon_r, 0)"));
        for u in subtree(plan, c) {
            counts.push((u, format!("COALESCE({a}.__relanon_n{u}, 0)")));
        }
    }
    Ok(Below {
        joins,
        children: children.join(" + "),
        hashes: hashes.join(" + "),
        rows: rows.join(" + "),
        counts,
    })
}

/// Table `ti` and every table under it, in plan order.
fn subtree(plan: &Plan, ti: usize) -> Vec<usize> {
    let mut out = vec![ti];
    let mut at = 0;
    while at < out.len() {
        out.extend(plan.tables[out[at]].children.iter().copied());
        at += 1;
    }
    out.sort_unstable();
    out
}

/// A node's hash from its table, its children's count and their hash sum (both expressions).
fn node_hash(ti: usize, children: &str, hashes: &str) -> String {
    let own = mix(&format!("({} * 1000003 + {children}) % {P}", ti + 1));
    mix(&format!("({own} + {hashes}) % {P}"))
}

/// Child table `ti`'s rows as tree nodes: its FK (`__relanon_p{j}`), the subtree's hash,
/// rows and rows per table.
fn node(plan: &Plan, ti: usize) -> Result<String, ForestError> {
    let ft = &plan.tables[ti];
    let b = below(plan, ti)?;
    let mut select: Vec<String> = aliased(&ft.parent_fk, "__relanon_p").collect();
    select.push(format!(
        "{} AS __relanon_h",
        node_hash(ti, &b.children, &b.hashes)
    ));
    select.push(format!("{} AS __relanon_r", b.rows));
    select.push(format!("1 AS __relanon_n{ti}"));
    select.extend(
        b.counts
            .iter()
            .map(|(u, e)| format!("{e} AS __relanon_n{u}")),
    );
    Ok(format!(
        "SELECT {} FROM {} s{}{}",
        select.join(", "),
        quote(&ft.name),
        b.joins,
        filter(ft, " WHERE ")
    ))
}

/// Child table `ti`'s nodes summed per parent: count, hash sum, rows, rows per table.
fn aggregate(plan: &Plan, ti: usize) -> Result<String, ForestError> {
    let ft = &plan.tables[ti];
    let fk: Vec<String> = cols("n.__relanon_p", ft.parent_fk.len()).collect();
    let mut select = fk.clone();
    select.push("COUNT(*) AS __relanon_c".to_string());
    select.push(format!(
        "SUM({}) % {P} AS __relanon_s",
        mix("n.__relanon_h")
    ));
    select.push("SUM(n.__relanon_r) AS __relanon_r".to_string());
    select.extend(
        subtree(plan, ti)
            .into_iter()
            .map(|u| format!("SUM(n.__relanon_n{u}) AS __relanon_n{u}")),
    );
    Ok(format!(
        "SELECT {} FROM ({}) n GROUP BY {}",
        select.join(", "),
        node(plan, ti)?,
        fk.join(", ")
    ))
}

/// ` WHERE` (or `lead`) and a split table's entry filter on alias `s`, or nothing.
fn filter(ft: &FamilyTable, lead: &str) -> String {
    ft.part
        .as_ref()
        .map(|part| format!("{lead}{}", part.sql_filter("s")))
        .unwrap_or_default()
}

/// The entity query: key, QI columns, then rows, hash and rows per child table, by key.
fn entity_query(plan: &Plan) -> Result<String, ForestError> {
    let ft = &plan.tables[0];
    let b = below(plan, 0)?;
    let mut select: Vec<String> = ft
        .primary_key
        .iter()
        .map(String::as_str)
        .chain(ft.qi_columns().map(|(c, _)| c))
        .map(|c| format!("s.{}", quote(c)))
        .collect();
    select.push(format!("{} AS __relanon_r", b.rows));
    select.push(format!(
        "{} AS __relanon_h",
        node_hash(0, &b.children, &b.hashes)
    ));
    for u in 1..plan.tables.len() {
        let e = b
            .counts
            .iter()
            .find(|(t, _)| *t == u)
            .map(|(_, e)| e.clone())
            .ok_or_else(|| ForestError::Internal(format!("table {u} is under no entity")))?;
        select.push(format!("{e} AS __relanon_n{u}"));
    }
    let order = ft
        .primary_key
        .iter()
        .map(|c| format!("s.{}", quote(c)))
        .collect::<Vec<_>>()
        .join(", ");
    Ok(format!(
        "SELECT {} FROM {} s{} ORDER BY {order}",
        select.join(", "),
        quote(&ft.name),
        b.joins
    ))
}

/// Reads the entity query's result into an outline (without table counts).
async fn entities(
    plan: &Plan,
    engine: &dyn Engine,
    root: &[Hierarchy],
) -> Result<Outline, ForestError> {
    let ft = &plan.tables[0];
    let query = entity_query(plan)?;
    let (nk, qis): (usize, Vec<&str>) = (
        ft.primary_key.len(),
        ft.qi_columns().map(|(c, _)| c).collect(),
    );
    let width = plan.tables.len() - 1;
    let mut out = Outline {
        keys: RecordBatch::new_empty(std::sync::Arc::new(arrow::datatypes::Schema::empty())),
        rows: Vec::new(),
        shape: Vec::new(),
        counts: Vec::new(),
        codes: Vec::new(),
        tables: Vec::new(),
        width,
        nqi: qis.len(),
    };
    let encoders: Vec<_> = root.iter().map(Hierarchy::encoder).collect();
    if encoders.len() < qis.len() {
        return Err(ForestError::Internal(format!(
            "{} hierarchies for {} QIs",
            encoders.len(),
            qis.len()
        )));
    }
    let mut keys = Vec::new();
    let mut stream = engine.stream(&query).await?;
    while let Some(batch) = stream.next().await {
        let batch = batch.map_err(|e| crate::warehouse::query_error(&query, e))?;
        keys.push(
            batch
                .project(&(0..nk).collect::<Vec<_>>())
                .map_err(internal)?,
        );
        let mut per_col = Vec::with_capacity(qis.len());
        for (q, col) in qis.iter().enumerate() {
            let texts = texts(batch.column(nk + q).as_ref());
            per_col.push(encoders[q].encode(&format!("{}.{col}", ft.name), &texts)?);
        }
        for r in 0..batch.num_rows() {
            out.codes.extend(per_col.iter().map(|codes| codes[r]));
        }
        let at = nk + qis.len();
        out.rows.extend(int64(&batch, at)?.map(|v| v as u64));
        out.shape.extend(int64(&batch, at + 1)?.map(|v| v as u32));
        let counts: Vec<Vec<i64>> = (0..width)
            .map(|u| int64(&batch, at + 2 + u).map(Iterator::collect))
            .collect::<Result<_, _>>()?;
        for r in 0..batch.num_rows() {
            out.counts.extend(counts.iter().map(|c| c[r] as u32));
        }
    }
    if let Some(first) = keys.first() {
        out.keys = crate::warehouse::concat_owned(&first.schema(), keys).map_err(internal)?;
    }
    Ok(out)
}

/// Column `at` of `batch` as `i64`s (NULL as 0: a sum over no rows).
fn int64(batch: &RecordBatch, at: usize) -> Result<impl Iterator<Item = i64> + '_, ForestError> {
    let col = batch
        .column(at)
        .as_primitive_opt::<Int64Type>()
        .ok_or_else(|| ForestError::Internal(format!("column {at} of the outline is not Int64")))?;
    Ok((0..col.len()).map(move |r| if col.is_null(r) { 0 } else { col.value(r) }))
}

fn internal(e: impl std::fmt::Display) -> ForestError {
    ForestError::Internal(e.to_string())
}

/// Table `ti`'s rows with their key (`__relanon_k{j}`), FK (`__relanon_f{j}`) and place
/// (`__relanon_st`): 's' in the forest, 'n' without a parent, 'o' an orphan; a row under a
/// left-out row is left out for the same reason.
fn status(plan: &Plan, ti: usize) -> Result<String, ForestError> {
    let ft = &plan.tables[ti];
    let mut select: Vec<String> = aliased(&ft.primary_key, "__relanon_k").collect();
    let Some(p) = ft.parent else {
        select.push("'s' AS __relanon_st".to_string());
        return Ok(format!(
            "SELECT {} FROM {} s",
            select.join(", "),
            quote(&ft.name)
        ));
    };
    select.extend(aliased(&ft.parent_fk, "__relanon_f"));
    let parent = &plan.tables[p];
    let mut on = Vec::new();
    for (c, k) in ft.parent_fk.iter().zip(&ft.parent_key) {
        let j = parent
            .primary_key
            .iter()
            .position(|pk| pk == k)
            .ok_or_else(|| {
                ForestError::Internal(format!("{}.{k} is not in its key", parent.name))
            })?;
        on.push(format!("s.{} = p.__relanon_k{j}", quote(c)));
    }
    let null = ft
        .parent_fk
        .iter()
        .map(|c| format!("s.{} IS NULL", quote(c)))
        .collect::<Vec<_>>()
        .join(" OR ");
    select.push(format!(
        "CASE WHEN {null} THEN 'n' WHEN p.__relanon_st IS NULL THEN 'o' ELSE p.__relanon_st END AS __relanon_st"
    ));
    Ok(format!(
        "SELECT {} FROM {} s LEFT JOIN ({}) p ON {}{}",
        select.join(", "),
        quote(&ft.name),
        status(plan, p)?,
        on.join(" AND "),
        filter(ft, " WHERE ")
    ))
}

/// Table `ti`'s counts; its orphans refused unless `SET orphans = 'drop'`.
async fn counted(plan: &Plan, engine: &dyn Engine, ti: usize) -> Result<Counted, ForestError> {
    let st = status(plan, ti)?;
    let sum =
        |s: &str| format!("COALESCE(SUM(CASE WHEN x.__relanon_st = '{s}' THEN 1 ELSE 0 END), 0)");
    let query = format!(
        "SELECT COUNT(*), {}, {}, {} FROM ({st}) x",
        sum("s"),
        sum("o"),
        sum("n")
    );
    let batches = collect_on(engine, &query).await?;
    let batch = batches
        .first()
        .ok_or_else(|| ForestError::Internal(format!("no counts for table {ti}")))?;
    let v: Vec<usize> = (0..4)
        .map(|c| int64(batch, c).map(|mut it| it.next().unwrap_or(0) as usize))
        .collect::<Result<_, _>>()?;
    let counted = Counted {
        rows_in: v[0],
        loaded: v[1],
        orphans_dropped: v[2],
        no_parent: v[3],
    };
    if counted.orphans_dropped > 0 && plan.params.orphans == OrphanPolicy::Refuse {
        return Err(orphans(plan, engine, ti, &st, counted.orphans_dropped).await?);
    }
    Ok(counted)
}

/// The refusal of table `ti`'s `count` orphans (`st`: its status query), with three.
async fn orphans(
    plan: &Plan,
    engine: &dyn Engine,
    ti: usize,
    st: &str,
    count: usize,
) -> Result<ForestError, ForestError> {
    let ft = &plan.tables[ti];
    let fk: Vec<String> = cols("x.__relanon_f", ft.parent_fk.len()).collect();
    let order: Vec<String> = if ft.primary_key.is_empty() {
        fk.clone()
    } else {
        cols("x.__relanon_k", ft.primary_key.len()).collect()
    };
    let query = format!(
        "SELECT {} FROM ({st}) x WHERE x.__relanon_st = 'o' ORDER BY {} LIMIT 3",
        fk.join(", "),
        order.join(", ")
    );
    let mut examples = Vec::new();
    for b in collect_on(engine, &query).await? {
        for r in 0..b.num_rows() {
            examples.push(cells(&ft.parent_fk, &b, 0, r));
        }
    }
    Ok(ForestError::Orphans {
        table: ft.name.clone(),
        parent: plan.tables[ft.parent.unwrap_or_default()].name.clone(),
        fk: ft.parent_fk.join(", "),
        count,
        examples: examples.join("; "),
    })
}

/// `name = value, ...` for `names` from column `from` of `batch`'s row `r`.
fn cells(names: &[String], batch: &RecordBatch, from: usize, r: usize) -> String {
    names
        .iter()
        .enumerate()
        .map(|(j, c)| {
            let v = render_value(batch.column(from + j).as_ref(), r);
            format!("{c} = {}", v.unwrap_or_else(|| "NULL".into()))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Refuses table `ti`'s rows in the forest whose second path `r` names another ancestor row
/// than their parent chain reaches (a NULL second FK claims nothing).
async fn second_path(
    plan: &Plan,
    engine: &dyn Engine,
    ti: usize,
    r: &RedundantFk,
) -> Result<(), ForestError> {
    let ft = &plan.tables[ti];
    let (from, ancestor) = chain(plan, ti, r.ancestor)?;
    let not_null = r
        .columns
        .iter()
        .map(|c| format!("s.{} IS NOT NULL", quote(c)))
        .collect::<Vec<_>>()
        .join(" AND ");
    let same = equal("s", &r.columns, &ancestor, &r.ancestor_key);
    let wrong = format!(
        "{from} WHERE {not_null} AND NOT ({same}){}",
        filter(ft, " AND ")
    );
    let count = collect_on(engine, &format!("SELECT COUNT(*) {wrong}")).await?;
    let count = match count.first() {
        Some(b) => int64(b, 0)?.next().unwrap_or(0) as usize,
        None => 0,
    };
    if count == 0 {
        return Ok(());
    }
    let mut shown: Vec<String> = ft
        .primary_key
        .iter()
        .map(|c| format!("s.{}", quote(c)))
        .collect();
    shown.extend(r.columns.iter().map(|c| format!("s.{}", quote(c))));
    shown.extend(
        r.ancestor_key
            .iter()
            .map(|k| format!("{ancestor}.{}", quote(k))),
    );
    let order = if ft.primary_key.is_empty() {
        shown.clone()
    } else {
        shown[..ft.primary_key.len()].to_vec()
    };
    let query = format!(
        "SELECT {} {wrong} ORDER BY {} LIMIT 1",
        shown.join(", "),
        order.join(", ")
    );
    let example = collect_on(engine, &query).await?;
    let example = example
        .iter()
        .find(|b| b.num_rows() > 0)
        .map(|b| path_example(plan, ti, r, b))
        .unwrap_or_default();
    let ancestor = &plan.tables[r.ancestor].name;
    Err(paths_disagree(
        &ft.name, count, &r.columns, ancestor, &example,
    ))
}

/// The first row of `b` (own key, second FK, the ancestor's key) as the refusal shows it.
fn path_example(plan: &Plan, ti: usize, r: &RedundantFk, b: &RecordBatch) -> String {
    let ft = &plan.tables[ti];
    let nk = ft.primary_key.len();
    let values = |from: usize, n: usize| {
        (from..from + n)
            .map(|c| render_value(b.column(c).as_ref(), 0).unwrap_or_else(|| "NULL".into()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let own = if nk == 0 {
        "a row".to_string()
    } else {
        format!("{} = {}", ft.primary_key.join(", "), values(0, nk))
    };
    format!(
        "{own}: ({}) = {} but its parent chain reaches {} {}",
        r.columns.join(", "),
        values(nk, r.columns.len()),
        plan.tables[r.ancestor].name,
        values(nk + r.columns.len(), r.ancestor_key.len())
    )
}

/// `FROM` table `ti` (alias `s`) joined up its parent chain to the entity table, each entry
/// filtered to its share: only rows with a place in the forest remain. Also the alias of
/// table `ancestor` on the chain.
fn chain(plan: &Plan, ti: usize, ancestor: usize) -> Result<(String, String), ForestError> {
    let mut from = format!("FROM {} s", quote(&plan.tables[ti].name));
    let (mut below, mut at) = ("s".to_string(), ti);
    let mut found = None;
    while let Some(p) = plan.tables[at].parent {
        let (ft, alias) = (&plan.tables[at], format!("u{p}"));
        let on = equal(&below, &ft.parent_fk, &alias, &ft.parent_key);
        let part = plan.tables[p]
            .part
            .as_ref()
            .map(|part| format!(" AND {}", part.sql_filter(&alias)))
            .unwrap_or_default();
        from.push_str(&format!(
            " JOIN {} {alias} ON {on}{part}",
            quote(&plan.tables[p].name)
        ));
        if p == ancestor {
            found = Some(alias.clone());
        }
        (below, at) = (alias, p);
    }
    let alias = found.ok_or_else(|| {
        ForestError::Internal(format!("table {ancestor} is no ancestor of table {ti}"))
    })?;
    Ok((from, alias))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::path::Path;

    use super::*;
    use crate::forest::{hierarchies, load, Forest};
    use crate::warehouse::Warehouse;

    /// Rows per child table under `row` of `table`, and the subtree's canonical form.
    fn walk(forest: &Forest, table: usize, row: u32, counts: &mut [u32]) -> Vec<u32> {
        let mut kids: Vec<Vec<u32>> = Vec::new();
        for group in &forest.tables[table].children {
            for &c in group.of(row) {
                counts[group.table - 1] += 1;
                kids.push(walk(forest, group.table, c, counts));
            }
        }
        kids.sort_unstable();
        let mut out = vec![table as u32, kids.len() as u32];
        out.extend(kids.into_iter().flatten());
        out
    }

    /// The outline says what the whole load holds: each table's counts, each entity's key,
    /// rows and rows per table, and equal trees hash alike (different ones, on these
    /// fixtures, apart).
    async fn agrees_with_the_load(plan: &Plan, wh: &Warehouse) {
        let forest = load(plan, wh).await.expect("load");
        let global = hierarchies(plan, wh).await.expect("hierarchies");
        let out = outline(plan, wh, &global[0]).await.expect("outline");
        let counted: Vec<Counted> = forest
            .tables
            .iter()
            .map(|t| Counted {
                loaded: t.rows(),
                rows_in: t.rows_in,
                orphans_dropped: t.orphans_dropped,
                no_parent: t.no_parent,
            })
            .collect();
        assert_eq!(out.tables, counted);
        assert_eq!(out.entities(), forest.entities());
        let root = &forest.tables[0].batch;
        let key: Vec<usize> = plan.tables[0]
            .primary_key
            .iter()
            .map(|c| root.schema().index_of(c).expect("key column"))
            .collect();
        assert_eq!(out.keys, root.project(&key).expect("keys"));
        let mut by_canon: HashMap<Vec<u32>, u32> = HashMap::new();
        let mut by_hash: HashMap<(Vec<u32>, u32), Vec<u32>> = HashMap::new();
        for e in 0..forest.entities() as u32 {
            let mut counts = vec![0u32; forest.tables.len() - 1];
            let canon = walk(&forest, 0, e, &mut counts);
            assert_eq!(out.counts(e), &counts[..], "entity {e}");
            let rows = 1 + counts.iter().map(|&c| c as u64).sum::<u64>();
            assert_eq!(out.rows[e as usize], rows, "entity {e}");
            let hash = out.shape[e as usize];
            assert_eq!(
                *by_canon.entry(canon.clone()).or_insert(hash),
                hash,
                "entity {e}"
            );
            by_hash
                .entry((counts, hash))
                .or_default()
                .push(canon.len() as u32);
        }
        assert_eq!(by_hash.len(), by_canon.len(), "two shapes share a hash");
    }

    /// A SQLite warehouse built from realworld scripts, planned with `decl` as `edit` leaves it.
    async fn realworld(
        dir: &Path,
        scripts: &[&str],
        decl: &str,
        edit: impl Fn(&str) -> bool,
    ) -> (Plan, Warehouse) {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/realworld");
        let source = dir.join("source.sqlite");
        let db = rusqlite::Connection::open(&source).expect("create");
        for s in scripts {
            let text = std::fs::read_to_string(fixtures.join(format!("{s}.sql"))).expect("script");
            db.execute_batch(&text).expect("run script");
        }
        drop(db);
        let text =
            std::fs::read_to_string(fixtures.join(format!("{decl}.decl.sql"))).expect("decl");
        let kept: Vec<&str> = text.lines().filter(|l| edit(l)).collect();
        planned(&source, &kept.join("\n"), dir).await
    }

    async fn planned(source: &Path, decl: &str, base: &Path) -> (Plan, Warehouse) {
        let policy = crate::decl::parse(decl).expect("declarations parse");
        let mut wh = Warehouse::open(source).await.expect("open");
        let plan = crate::plan::build(&policy, &mut wh, base)
            .await
            .expect("plan");
        (plan, wh)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_outline_of_tpch_is_what_the_load_holds() {
        let (_dir, plan, wh) = crate::forest::tpch_fixture().await;
        agrees_with_the_load(&plan, &wh).await;
    }

    /// Composite keys and FKs (clinic); a table split over two entries by a second path
    /// whose FK is sometimes NULL, checked against its parent chain (rental).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_outline_of_real_shaped_warehouses_is_what_the_load_holds() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (plan, wh) = realworld(dir.path(), &["clinic"], "clinic", |_| true).await;
        agrees_with_the_load(&plan, &wh).await;
        let two = tempfile::tempdir().expect("tempdir");
        let two_paths =
            |l: &str| !l.contains("DROP FOREIGN KEY") && !l.contains("payment.rental_id");
        let (plan, wh) = realworld(two.path(), &["rental"], "rental", two_paths).await;
        assert!(
            plan.tables.iter().any(|t| t.part.is_some()),
            "a split table"
        );
        agrees_with_the_load(&plan, &wh).await;
    }

    /// Two paths that disagree are refused alike, naming the table and the count.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn disagreeing_paths_are_refused_as_the_load_refuses_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        let two_paths =
            |l: &str| !l.contains("DROP FOREIGN KEY") && !l.contains("payment.rental_id");
        let (plan, wh) = realworld(
            dir.path(),
            &["rental", "rental_disagree"],
            "rental",
            two_paths,
        )
        .await;
        let loaded = load(&plan, &wh).await.expect_err("the load refuses");
        let global = hierarchies(&plan, &wh).await.expect("hierarchies");
        let outlined = outline(&plan, &wh, &global[0]).await.expect_err("refused");
        let (
            ForestError::PathsDisagree { table, count, .. },
            ForestError::PathsDisagree {
                table: t2,
                count: c2,
                ..
            },
        ) = (&loaded, &outlined)
        else {
            panic!("{loaded} / {outlined}");
        };
        assert_eq!((table, count), (t2, c2));
        assert!(
            outlined.to_string().contains("DROP FOREIGN KEY"),
            "{outlined}"
        );
    }

    /// Table II (a CSV directory) with rows added to its courses and books, and its
    /// declarations (`more` appended).
    async fn table2_with(dir: &Path, courses: &str, books: &str, more: &str) -> (Plan, Warehouse) {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/table2");
        let source = dir.join("table2");
        std::fs::create_dir_all(&source).expect("mkdir");
        for (file, extra) in [
            ("students.csv", ""),
            ("courses.csv", courses),
            ("books.csv", books),
        ] {
            let text = std::fs::read_to_string(fixtures.join(file)).expect("fixture");
            std::fs::write(source.join(file), text + extra).expect("write");
        }
        let decl = include_str!("../../sql/table2.sql")
            .lines()
            .filter(|l| !l.starts_with("SET target"))
            .map(|l| {
                if l.starts_with("SET source") {
                    "SET source = 'table2';"
                } else {
                    l
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        planned(&source, &format!("{decl}\n{more}"), dir).await
    }

    /// The load's and the outline's refusals of `plan`'s family, which must be alike.
    async fn both_refuse(plan: &Plan, wh: &Warehouse) -> String {
        let global = hierarchies(plan, wh).await.expect("hierarchies");
        let loaded = load(plan, wh).await.expect_err("the load refuses");
        let outlined = outline(plan, wh, &global[0])
            .await
            .expect_err("the outline refuses");
        assert_eq!(outlined.to_string(), loaded.to_string());
        outlined.to_string()
    }

    /// Table II with an orphan course (and a book under it) and a course without a student
    /// (and a book under it): refused alike, or dropped and counted alike.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn orphans_and_rows_without_a_parent_are_counted_as_the_load_counts_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        let courses = "SC99,S9,Math,50\nSC98,,CS,60\n";
        let books = "B99,SC99,Calc,10\nB98,SC98,Dyn,12\n";
        let (plan, wh) = table2_with(dir.path(), courses, books, "").await;
        let refused = both_refuse(&plan, &wh).await;
        assert!(
            refused.contains("SC99") || refused.contains("S9"),
            "{refused}"
        );
        let (plan, wh) = table2_with(dir.path(), courses, books, "SET orphans = 'drop';").await;
        agrees_with_the_load(&plan, &wh).await;
        let global = hierarchies(&plan, &wh).await.expect("hierarchies");
        let out = outline(&plan, &wh, &global[0]).await.expect("outline");
        assert_eq!(
            (out.tables[1].orphans_dropped, out.tables[1].no_parent),
            (1, 1)
        );
        assert_eq!(
            (out.tables[2].orphans_dropped, out.tables[2].no_parent),
            (1, 1)
        );
    }

    /// A duplicated key is refused by the outline as by the load.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_duplicated_key_is_refused_alike() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (plan, wh) = table2_with(dir.path(), "SC1,S2,CS,70\n", "", "").await;
        let refused = both_refuse(&plan, &wh).await;
        assert!(refused.contains("SC1"), "{refused}");
    }
}
