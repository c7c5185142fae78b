//! The entity forest: every family table's rows as arena nodes with interned QI codes and
//! parent / child links, loaded through DataFusion (a scan + sort per table, and a join
//! against the parent's key table to find each row's parent), never a query per entity.
//!
//! Invariant: table 0 is the entity table; a row's parent is a row of `plan.tables[t].parent`;
//! `children[c]` of a table lists, per row, its rows in child table `c` (CSR layout).
//!
//! Rows without a place are refused or left out: a NULL or duplicated key is refused; an FK to
//! a missing parent (and the rows under it) is refused, or dropped and counted under `SET
//! orphans = 'drop'`; a row whose FK is NULL (and the rows under it) has no parent and is
//! always left out, counted apart; a second FK path that names another ancestor row than the
//! parent chain is refused. A key-less entity table keeps the source's row order. A table's
//! QI and sensitive columns are interned one column a task on every thread.

mod outline;
mod scope;
mod views;

pub use outline::{outline, Counted, Outline};
pub use scope::{hierarchies, Scope};

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::BooleanArray;
use arrow::array::{Array, ArrayRef, UInt32Array};
use arrow::compute::filter_record_batch;
use arrow::record_batch::RecordBatch;
use rayon::prelude::*;

use crate::hierarchy::{Built, Hierarchy, HierarchyError};
use crate::plan::{ColumnRole, FamilyTable, OrphanPolicy, Plan};
use crate::sensitive::{self, SensitiveColumn, SensitiveError};
use crate::warehouse::{
    collect_on, numeric_value, quote_ident as quote, render_value, Engine, Temporary, Warehouse,
    WarehouseError,
};

/// Column the load queries add for a row's position in its table.
const ROW: &str = "__relanon_row";
/// Column the load queries add for a row's parent position.
const PARENT: &str = "__relanon_parent";

#[derive(Debug, thiserror::Error)]
pub enum ForestError {
    #[error(transparent)]
    Warehouse(#[from] WarehouseError),
    #[error(transparent)]
    Hierarchy(#[from] HierarchyError),
    #[error(transparent)]
    Sensitive(#[from] SensitiveError),
    #[error("table {table}: {count} row(s) have a NULL or duplicated primary key ({key}), e.g. {examples}; make the key unique and non-NULL in the source")]
    BadKey {
        table: String,
        key: String,
        count: usize,
        examples: String,
    },
    #[error("table {table}: {count} row(s) reference a missing {parent} row ({fk}), e.g. {examples}; fix the source, or add SET orphans = 'drop' to leave them (and their descendants) out")]
    Orphans {
        table: String,
        parent: String,
        fk: String,
        count: usize,
        examples: String,
    },
    /// `detail` names the second path, the ancestor, the first example and the fix.
    #[error("table {table}: {count} row(s) reach {detail}")]
    PathsDisagree {
        table: String,
        count: usize,
        detail: String,
    },
    #[error("internal: {0}")]
    Internal(String),
}

/// The cells of `columns` in `row`, rendered; None when any is NULL.
fn row_key(batch: &RecordBatch, columns: &[String], row: usize) -> Option<Vec<String>> {
    columns
        .iter()
        .map(|c| {
            batch
                .column_by_name(c)
                .and_then(|a| render_value(a.as_ref(), row))
        })
        .collect()
}

/// Why a source row has no place in the forest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LeftOut {
    /// A NULL FK to the parent, or a parent left out for that reason.
    NoParent,
    /// An FK naming a missing parent row, or a parent left out for that reason.
    Orphan,
}

/// Refuses a table whose second FK path (`r`, to an ancestor of its parent) names another
/// ancestor row than the row's parent chain reaches. A NULL second FK claims nothing.
fn check_second_path(
    plan: &Plan,
    tables: &[TableNodes],
    ti: usize,
    r: &crate::plan::RedundantFk,
    batch: &RecordBatch,
    parent: &[u32],
) -> Result<(), ForestError> {
    let ancestor = &tables[r.ancestor];
    let mut index: HashMap<Vec<String>, u32> = HashMap::with_capacity(ancestor.rows());
    for row in 0..ancestor.rows() {
        if let Some(k) = row_key(&ancestor.batch, &r.ancestor_key, row) {
            index.insert(k, row as u32);
        }
    }
    let ft = &plan.tables[ti];
    let mut count = 0;
    let mut example = String::new();
    for (row, &up) in parent.iter().enumerate().take(batch.num_rows()) {
        let Some(k) = row_key(batch, &r.columns, row) else {
            continue;
        };
        // Up the tree from the parent to the ancestor's table.
        let (mut t, mut at) = (ft.parent, up);
        while let Some(cur) = t.filter(|&cur| cur != r.ancestor) {
            at = tables[cur].parent[at as usize];
            t = plan.tables[cur].parent;
        }
        if index.get(&k) == Some(&at) {
            continue;
        }
        count += 1;
        if example.is_empty() {
            let own = row_key(batch, &ft.primary_key, row)
                .map(|v| format!("{} = {}", ft.primary_key.join(", "), v.join(", ")))
                .unwrap_or_else(|| format!("row {}", row + 1));
            let via = row_key(&ancestor.batch, &r.ancestor_key, at as usize)
                .map(|v| v.join(", "))
                .unwrap_or_else(|| "?".to_string());
            example = format!(
                "{own}: ({}) = {} but its parent chain reaches {} {via}",
                r.columns.join(", "),
                k.join(", "),
                ancestor.name
            );
        }
    }
    if count == 0 {
        return Ok(());
    }
    Err(paths_disagree(
        &ft.name,
        count,
        &r.columns,
        &ancestor.name,
        &example,
    ))
}

/// The refusal of `count` rows of `table` whose second path (`columns`) names another
/// `ancestor` row than their parent chain, `example` one of them.
fn paths_disagree(
    table: &str,
    count: usize,
    columns: &[String],
    ancestor: &str,
    example: &str,
) -> ForestError {
    let fk = columns.join(", ");
    ForestError::PathsDisagree {
        table: table.to_string(),
        count,
        detail: format!(
            "{ancestor} through ({fk}) and through their parent chain to different {ancestor} rows, e.g. {example}; fix the source, or set the second path aside with ALTER TABLE {} DROP FOREIGN KEY ({fk}) and give its columns a role",
            quote(table),
        ),
    }
}

/// Rows of one child table grouped by parent row.
#[derive(Debug, Clone)]
pub struct Children {
    /// Family table index of the child table.
    pub table: usize,
    /// `rows[offsets[r]..offsets[r + 1]]` are parent row `r`'s children.
    pub offsets: Vec<u32>,
    pub rows: Vec<u32>,
}

impl Children {
    pub fn of(&self, row: u32) -> &[u32] {
        let (a, b) = (
            self.offsets[row as usize] as usize,
            self.offsets[row as usize + 1] as usize,
        );
        &self.rows[a..b]
    }
}

/// One family table's rows.
#[derive(Debug, Clone)]
pub struct TableNodes {
    pub name: String,
    /// The source rows (all columns), in node order: row `r` is node `r`.
    pub batch: RecordBatch,
    /// QI columns' hierarchies, in `FamilyTable::qi_columns` order.
    pub hierarchies: Vec<Hierarchy>,
    /// Row-major leaf codes: `qi[r * nqi + q]`.
    pub qi: Vec<u32>,
    /// Sensitive columns, in source order.
    pub sensitive: Vec<SensitiveColumn>,
    /// Parent row per row (`u32::MAX` for the entity table).
    pub parent: Vec<u32>,
    pub children: Vec<Children>,
    /// Source rows left out as orphans (FK to a missing parent, with their descendants).
    pub orphans_dropped: usize,
    /// Source rows left out for having no parent: a NULL FK (an optional relationship, so
    /// the row is about no individual), with their descendants.
    pub no_parent: usize,
    /// Source rows before orphans were dropped.
    pub rows_in: usize,
}

impl TableNodes {
    pub fn rows(&self) -> usize {
        self.parent.len()
    }
    pub fn nqi(&self) -> usize {
        self.hierarchies.len()
    }
    /// Code of sensitive column `s` in `row`.
    pub fn sa(&self, s: usize, row: u32) -> u32 {
        self.sensitive[s].codes[row as usize]
    }
    pub fn codes(&self, row: u32) -> &[u32] {
        let n = self.nqi();
        &self.qi[row as usize * n..row as usize * n + n]
    }
}

#[cfg(test)]
impl TableNodes {
    /// A table of `parent.len()` rows with these QI codes and no other columns (unit tests
    /// of the algorithms build forests by hand).
    pub(crate) fn bare(
        name: &str,
        hierarchies: Vec<Hierarchy>,
        qi: Vec<u32>,
        parent: Vec<u32>,
    ) -> TableNodes {
        use arrow::array::RecordBatchOptions;
        let n = parent.len();
        TableNodes {
            name: name.to_string(),
            batch: RecordBatch::try_new_with_options(
                Arc::new(arrow::datatypes::Schema::empty()),
                Vec::new(),
                &RecordBatchOptions::new().with_row_count(Some(n)),
            )
            .expect("a batch without columns takes any row count"),
            hierarchies,
            qi,
            sensitive: Vec::new(),
            parent,
            children: Vec::new(),
            orphans_dropped: 0,
            no_parent: 0,
            rows_in: n,
        }
    }
}

/// All family tables, in plan order.
#[derive(Debug, Clone)]
pub struct Forest {
    pub tables: Vec<TableNodes>,
}

impl Forest {
    pub fn entities(&self) -> usize {
        self.tables.first().map_or(0, TableNodes::rows)
    }
}

fn cols(cols: &[String], prefix: &str) -> String {
    cols.iter()
        .map(|c| format!("{prefix}{}", quote(c)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The load query's columns: every column of the table in its order, an IDENTIFIER as a NULL
/// of type `Null` (it is never released or measured, and at TPC-H SF 1 the free-text and
/// date identifiers were a third of what the sort behind the query copies), unless it is part
/// of the primary key (a composite key's data column labelled IDENTIFIER): rows are ordered,
/// joined to their children and mapped back by it.
fn select_list(ft: &FamilyTable) -> String {
    ft.columns
        .iter()
        .map(|c| match c.role {
            ColumnRole::Identifier if !ft.primary_key.contains(&c.name) => {
                format!("NULL AS {}", quote(&c.name))
            }
            _ => format!("s.{}", quote(&c.name)),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `batch` with its IDENTIFIER columns as `Null` arrays, like [`select_list`].
fn without_identifiers(ft: &FamilyTable, batch: RecordBatch) -> Result<RecordBatch, ForestError> {
    let schema = batch.schema();
    let mut fields = Vec::with_capacity(schema.fields().len());
    let mut columns = Vec::with_capacity(schema.fields().len());
    for (i, f) in schema.fields().iter().enumerate() {
        let identifier = ft
            .columns
            .iter()
            .any(|c| c.name == *f.name() && c.role == ColumnRole::Identifier);
        if identifier {
            fields.push(Arc::new(arrow::datatypes::Field::new(
                f.name(),
                arrow::datatypes::DataType::Null,
                true,
            )));
            columns.push(arrow::array::new_null_array(
                &arrow::datatypes::DataType::Null,
                batch.num_rows(),
            ));
        } else {
            fields.push(f.clone());
            columns.push(batch.column(i).clone());
        }
    }
    RecordBatch::try_new(Arc::new(arrow::datatypes::Schema::new(fields)), columns)
        .map_err(|e| ForestError::Internal(e.to_string()))
}

/// Loads the forest: for each family table in plan order, checks its key, scans it sorted by
/// (parent row, key) joined to its parent's key table, drops or refuses orphans, interns QIs.
pub async fn load(plan: &Plan, wh: &Warehouse) -> Result<Forest, ForestError> {
    load_scoped(plan, wh, Scope::default()).await
}

/// [`load`] of what `scope` covers: with entities, their trees alone, keys not checked again
/// and no row counted as left out (the family's [`outline`] did both).
pub async fn load_scoped(
    plan: &Plan,
    wh: &Warehouse,
    scope: Scope<'_>,
) -> Result<Forest, ForestError> {
    let mut tables: Vec<TableNodes> = Vec::with_capacity(plan.tables.len());
    // Per table, the rendered keys of the source rows left out and why: their children are
    // left out for the same reason.
    let mut left_out: Vec<HashMap<Vec<String>, LeftOut>> = vec![HashMap::new(); plan.tables.len()];
    // The key tables children are joined with; dropped (deregistered) when the load ends,
    // also when it fails.
    let mut key_tables: Vec<Temporary<'_>> = Vec::new();
    for (ti, ft) in plan.tables.iter().enumerate() {
        if scope.entities.is_none() {
            check_key(wh, &ft.name, &ft.primary_key).await?;
        }
        let mut batch = scan(wh, plan, ti, scope.entities).await?;
        let rows_in = batch.num_rows();
        let (parent, orphans_dropped, no_parent) = match ft.parent {
            Some(_) => link_parents(plan, ti, &mut batch, &mut left_out)?,
            None => (vec![u32::MAX; batch.num_rows()], 0, 0),
        };
        if !ft.children.is_empty() {
            key_tables.push(register_keys(wh, ti, &batch, &ft.primary_key)?);
        }
        for r in &ft.redundant {
            check_second_path(plan, &tables, ti, r, &batch, &parent)?;
        }
        let TableCodes {
            hierarchies,
            per_col,
            sensitive,
        } = intern_columns(plan, ft, &batch, scope.hierarchies.map(|h| &h[ti][..]))?;
        let n = batch.num_rows();
        let nqi = per_col.len();
        let mut qi = vec![0u32; n * nqi];
        for (q, codes) in per_col.iter().enumerate() {
            for (r, &c) in codes.iter().enumerate() {
                qi[r * nqi + q] = c;
            }
        }
        tables.push(TableNodes {
            name: ft.name.clone(),
            batch,
            hierarchies,
            qi,
            sensitive,
            parent,
            children: Vec::new(),
            orphans_dropped,
            no_parent,
            rows_in,
        });
    }
    for ti in 0..tables.len() {
        let kids = plan.tables[ti].children.clone();
        for c in kids {
            let children = group_children(tables[ti].rows(), &tables[c].parent, c);
            tables[ti].children.push(children);
        }
    }
    Ok(Forest { tables })
}

/// Reads the `PARENT` column [`scan`] added into each row's parent row (then drops it), and
/// leaves out the rows without one: "no parent" (a NULL FK, or under such a row) always,
/// orphans (an FK to a missing row, or under one) as `SET orphans` says. Returns the parent
/// rows and how many rows were left out each way; records the left-out keys in `left_out`.
fn link_parents(
    plan: &Plan,
    ti: usize,
    batch: &mut RecordBatch,
    left_out: &mut [HashMap<Vec<String>, LeftOut>],
) -> Result<(Vec<u32>, usize, usize), ForestError> {
    let ft = &plan.tables[ti];
    let p = ft.parent.expect("link_parents is called for child tables");
    let mut orphans_dropped = 0;
    let mut no_parent = 0;
    let idx = batch
        .schema()
        .index_of(PARENT)
        .map_err(|e| ForestError::Internal(e.to_string()))?;
    let col = arrow::compute::cast(batch.column(idx), &arrow::datatypes::DataType::UInt32)
        .map_err(|e| ForestError::Internal(e.to_string()))?;
    let col = col
        .as_any()
        .downcast_ref::<UInt32Array>()
        .ok_or_else(|| ForestError::Internal("parent column".into()))?;
    // Rows without a parent row: a NULL FK (an optional relationship: the row is
    // about no individual) or a parent left out for that reason are "no parent"; an
    // FK naming a row the source lacks (or one dropped as such) is an orphan.
    let fk_key = |r: usize| row_key(batch, &ft.parent_fk, r);
    let mut reasons: Vec<(usize, LeftOut)> = Vec::new();
    for r in (0..batch.num_rows()).filter(|&r| col.is_null(r)) {
        let reason = match fk_key(r) {
            None => LeftOut::NoParent,
            Some(k) => left_out[p].get(&k).copied().unwrap_or(LeftOut::Orphan),
        };
        reasons.push((r, reason));
    }
    let dangling: Vec<usize> = reasons
        .iter()
        .filter(|(_, why)| *why == LeftOut::Orphan)
        .map(|&(r, _)| r)
        .collect();
    if !dangling.is_empty() && plan.params.orphans == OrphanPolicy::Refuse {
        let examples = dangling
            .iter()
            .take(3)
            .map(|&r| {
                let vals: Vec<String> = ft
                    .parent_fk
                    .iter()
                    .map(|c| {
                        let v = batch
                            .column_by_name(c)
                            .and_then(|a| render_value(a.as_ref(), r));
                        format!("{c} = {}", v.unwrap_or_else(|| "NULL".into()))
                    })
                    .collect();
                vals.join(", ")
            })
            .collect::<Vec<_>>()
            .join("; ");
        return Err(ForestError::Orphans {
            table: ft.name.clone(),
            parent: plan.tables[p].name.clone(),
            fk: ft.parent_fk.join(", "),
            count: dangling.len(),
            examples,
        });
    }
    if !reasons.is_empty() {
        orphans_dropped = dangling.len();
        no_parent = reasons.len() - dangling.len();
        if !ft.children.is_empty() {
            let pk_key = |r: usize| row_key(batch, &ft.primary_key, r);
            for &(r, why) in &reasons {
                if let Some(k) = pk_key(r) {
                    left_out[ti].insert(k, why);
                }
            }
        }
        let keep: BooleanArray = (0..batch.num_rows())
            .map(|r| Some(col.is_valid(r)))
            .collect();
        *batch =
            filter_record_batch(batch, &keep).map_err(|e| ForestError::Internal(e.to_string()))?;
    }
    let col = batch.column(idx).clone();
    let col = arrow::compute::cast(&col, &arrow::datatypes::DataType::UInt32)
        .map_err(|e| ForestError::Internal(e.to_string()))?;
    let col = col
        .as_any()
        .downcast_ref::<UInt32Array>()
        .ok_or_else(|| ForestError::Internal("parent column".into()))?;
    let parent = col.values().to_vec();
    batch.remove_column(idx);
    Ok((parent, orphans_dropped, no_parent))
}

/// Table `ti`'s rows (its entry's share, for a split table), sorted by parent row then key,
/// with the parent's row number in a `PARENT` column (NULL: no parent row); the entity table
/// by key, or in the source's order when it has none. With `entities` (a registered table of
/// entity keys), only their trees: the entity table joined to it, each child table to its
/// parent's rows (an inner join: a row under another entity is no row of this load).
async fn scan(
    wh: &Warehouse,
    plan: &Plan,
    ti: usize,
    entities: Option<&str>,
) -> Result<RecordBatch, ForestError> {
    let ft = &plan.tables[ti];
    let t = quote(&ft.name);
    // A keyed table is read unsorted and sorted here (`sorted`): DataFusion's sort holds
    // the table about three times over (at TPC-H SF 1, most of the load's 1.8 GB heap).
    // A key-less child table's siblings tie on the parent, so it keeps the query's order,
    // which breaks their ties the same way in every run.
    let keyless = ft.primary_key.is_empty();
    let select = select_list(ft);
    let batches = match ft.parent {
        // A key-less entity table (a single table, each row an individual) is visited in
        // the source's row order, which no query promises.
        None if keyless => {
            vec![without_identifiers(
                ft,
                wh.table_in_source_order(&ft.name)?,
            )?]
        }
        None => {
            let only = entities
                .map(|e| {
                    let on = ft
                        .primary_key
                        .iter()
                        .map(|c| format!("s.{c} = e.{c}", c = quote(c)))
                        .collect::<Vec<_>>()
                        .join(" AND ");
                    format!(" JOIN {} e ON {on}", quote(e))
                })
                .unwrap_or_default();
            wh.sql(&format!("SELECT {select} FROM {t} s{only}")).await?
        }
        Some(p) => {
            let on = equal("s", &ft.parent_fk, "k", &ft.parent_key);
            // A split table's entry holds its share of the rows (plan::Part).
            let filter = ft
                .part
                .as_ref()
                .map(|part| format!(" WHERE {}", part.sql_filter("s")))
                .unwrap_or_default();
            let order = if keyless {
                format!(" ORDER BY {PARENT} NULLS FIRST")
            } else {
                String::new()
            };
            let join = if entities.is_some() {
                "JOIN"
            } else {
                "LEFT JOIN"
            };
            wh.sql(&format!(
                "SELECT {select}, k.{ROW} AS {PARENT} FROM {t} s {join} {} k ON {on}{filter}{order}",
                quote(&key_table(p))
            ))
            .await?
        }
    };
    let schema = batches.first().map(|b| b.schema());
    let batch = match schema {
        Some(s) => crate::warehouse::concat_owned(&s, batches)
            .map_err(|e| ForestError::Internal(e.to_string()))?,
        // An empty table yields no batches; give it the query's shape.
        None => {
            // No row matched (an empty table, or an entry of a split table whose share is
            // empty): the table's columns, no rows.
            let empty = wh.empty_table(&ft.name).await?;
            if ft.parent.is_none() {
                empty
            } else {
                let mut fields: Vec<arrow::datatypes::FieldRef> =
                    empty.schema().fields().iter().cloned().collect();
                fields.push(Arc::new(arrow::datatypes::Field::new(
                    PARENT,
                    arrow::datatypes::DataType::UInt32,
                    true,
                )));
                let mut columns = empty.columns().to_vec();
                columns.push(Arc::new(UInt32Array::from(Vec::<u32>::new())));
                RecordBatch::try_new(Arc::new(arrow::datatypes::Schema::new(fields)), columns)
                    .map_err(|e| ForestError::Internal(e.to_string()))?
            }
        }
    };
    if keyless {
        return Ok(batch);
    }
    sorted(batch, &ft.primary_key)
}

/// `batch` ordered by parent row (NULL first: rows without a parent), then by primary key,
/// as the load's `ORDER BY` would: the order is found on those columns, then each column
/// is reordered and its unsorted copy let go before the next, so the table is held about
/// once, not three times.
fn sorted(batch: RecordBatch, key: &[String]) -> Result<RecordBatch, ForestError> {
    use arrow::compute::{lexsort_to_indices, take, SortColumn, SortOptions};
    let internal = |e: arrow::error::ArrowError| ForestError::Internal(e.to_string());
    let schema = batch.schema();
    let mut sort = Vec::new();
    if let Ok(p) = schema.index_of(PARENT) {
        sort.push(SortColumn {
            values: batch.column(p).clone(),
            options: Some(SortOptions {
                descending: false,
                nulls_first: true,
            }),
        });
    }
    for k in key {
        let i = schema.index_of(k).map_err(internal)?;
        sort.push(SortColumn {
            values: batch.column(i).clone(),
            options: Some(SortOptions {
                descending: false,
                nulls_first: false,
            }),
        });
    }
    let order = lexsort_to_indices(&sort, None).map_err(internal)?;
    drop(sort);
    let (schema, columns, _) = batch.into_parts();
    let mut out = Vec::with_capacity(columns.len());
    for column in columns {
        out.push(take(column.as_ref(), &order, None).map_err(internal)?);
    }
    RecordBatch::try_new(schema, out).map_err(internal)
}

/// A column's cells as text, rendered on every thread.
fn texts(array: &dyn Array) -> Vec<Option<String>> {
    (0..array.len())
        .into_par_iter()
        .map(|r| render_value(array, r))
        .collect()
}

/// A column's cells as text and as numbers, rendered on every thread.
fn rendered(array: &dyn Array) -> (Vec<Option<String>>, Vec<Option<f64>>) {
    let texts = texts(array);
    let numbers = (0..array.len())
        .into_par_iter()
        .map(|r| numeric_value(array, r))
        .collect();
    (texts, numbers)
}

/// A column to intern: a QI with its hierarchy's name and its place among the table's QIs, or
/// a sensitive column.
enum Interned<'p> {
    Qi(&'p str, usize),
    Sensitive(Option<&'p [f64]>),
}

/// What one column interns to.
enum Codes {
    Qi(Built),
    Sensitive(SensitiveColumn),
}

/// A table's interned columns: per QI its hierarchy and its codes by row, and its sensitive
/// columns.
struct TableCodes {
    hierarchies: Vec<Hierarchy>,
    per_col: Vec<Vec<u32>>,
    sensitive: Vec<SensitiveColumn>,
}

/// Interns a table's QI columns (hierarchy codes) and sensitive columns (value codes), one
/// column a task; errors are reported in column order, QIs first, whatever thread found them.
/// With `global` (the table's hierarchies built over the whole family) QIs are coded in
/// those, else in hierarchies built from this batch.
fn intern_columns(
    plan: &Plan,
    ft: &FamilyTable,
    batch: &RecordBatch,
    global: Option<&[Hierarchy]>,
) -> Result<TableCodes, ForestError> {
    let mut columns: Vec<(&str, Interned)> = ft
        .qi_columns()
        .enumerate()
        .map(|(q, (col, hname))| (col, Interned::Qi(hname, q)))
        .collect();
    for c in &ft.columns {
        if let ColumnRole::Sensitive { buckets } = &c.role {
            columns.push((&c.name, Interned::Sensitive(buckets.as_deref())));
        }
    }
    let interned: Vec<Result<Codes, ForestError>> = columns
        .par_iter()
        .map(|(col, what)| {
            let array = batch
                .column_by_name(col)
                .ok_or_else(|| ForestError::Internal(format!("column {col} missing")))?;
            let (texts, numbers) = rendered(array.as_ref());
            let column = format!("{}.{}", ft.name, col);
            Ok(match what {
                Interned::Qi(_, q) if global.is_some() => {
                    let hierarchy = global
                        .and_then(|g| g.get(*q))
                        .ok_or_else(|| {
                            ForestError::Internal(format!("no global hierarchy for {column}"))
                        })?
                        .clone();
                    let codes = hierarchy.encode(&column, &texts)?;
                    Codes::Qi(Built { hierarchy, codes })
                }
                Interned::Qi(hname, _) => {
                    let def = plan.hierarchies.get(*hname).ok_or_else(|| {
                        ForestError::Internal(format!("hierarchy {hname} not resolved"))
                    })?;
                    Codes::Qi(Hierarchy::build(hname, def, &column, &texts, &numbers)?)
                }
                Interned::Sensitive(buckets) => {
                    Codes::Sensitive(sensitive::intern(&column, *buckets, &texts, &numbers)?)
                }
            })
        })
        .collect();
    let mut out = TableCodes {
        hierarchies: Vec::new(),
        per_col: Vec::new(),
        sensitive: Vec::new(),
    };
    for codes in interned {
        match codes? {
            Codes::Qi(built) => {
                out.hierarchies.push(built.hierarchy);
                out.per_col.push(built.codes);
            }
            Codes::Sensitive(column) => out.sensitive.push(column),
        }
    }
    Ok(out)
}

/// `a.c1 = b.k1 AND ...`: columns `cols` of alias `a` equal to `keys` of alias `b`.
fn equal(a: &str, cols: &[String], b: &str, keys: &[String]) -> String {
    cols.iter()
        .zip(keys)
        .map(|(c, k)| format!("{a}.{} = {b}.{}", quote(c), quote(k)))
        .collect::<Vec<_>>()
        .join(" AND ")
}

fn key_table(ti: usize) -> String {
    format!("__relanon_keys_{ti}")
}

/// Orphans of a dropped orphan are orphans too; that is why a table's key table holds only
/// the rows that survived.
fn register_keys<'w>(
    wh: &'w Warehouse,
    ti: usize,
    batch: &RecordBatch,
    pk: &[String],
) -> Result<Temporary<'w>, ForestError> {
    let mut columns: Vec<ArrayRef> = Vec::new();
    let mut fields = Vec::new();
    for c in pk {
        let i = batch
            .schema()
            .index_of(c)
            .map_err(|e| ForestError::Internal(e.to_string()))?;
        columns.push(batch.column(i).clone());
        fields.push(batch.schema().field(i).clone());
    }
    let rows: UInt32Array = (0..batch.num_rows() as u32).collect();
    columns.push(Arc::new(rows));
    fields.push(arrow::datatypes::Field::new(
        ROW,
        arrow::datatypes::DataType::UInt32,
        false,
    ));
    let schema = Arc::new(arrow::datatypes::Schema::new(fields));
    let keys =
        RecordBatch::try_new(schema, columns).map_err(|e| ForestError::Internal(e.to_string()))?;
    wh.temporary(&key_table(ti), keys)
        .map_err(|e| ForestError::Internal(e.to_string()))
}

/// Duplicate or NULL primary keys make "one true join path" impossible: refuse them.
async fn check_key(engine: &dyn Engine, table: &str, pk: &[String]) -> Result<(), ForestError> {
    if pk.is_empty() {
        return Ok(());
    }
    let t = quote(table);
    let nulls = pk
        .iter()
        .map(|c| format!("{} IS NULL", quote(c)))
        .collect::<Vec<_>>()
        .join(" OR ");
    let query = format!(
        "SELECT {k}, COUNT(*) AS __relanon_n FROM {t} GROUP BY {k} HAVING COUNT(*) > 1 OR {nulls} ORDER BY __relanon_n DESC LIMIT 3",
        k = cols(pk, "")
    );
    let batches = collect_on(engine, &query).await?;
    let mut examples = Vec::new();
    for b in &batches {
        for r in 0..b.num_rows() {
            let vals: Vec<String> = (0..pk.len())
                .map(|i| {
                    format!(
                        "{} = {}",
                        pk[i],
                        render_value(b.column(i).as_ref(), r).unwrap_or_else(|| "NULL".into())
                    )
                })
                .collect();
            examples.push(vals.join(", "));
        }
    }
    if examples.is_empty() {
        return Ok(());
    }
    let count_q = format!(
        "SELECT COALESCE(SUM(__relanon_n), 0) FROM (SELECT COUNT(*) AS __relanon_n FROM {t} GROUP BY {k} HAVING COUNT(*) > 1 OR {nulls})",
        k = cols(pk, "")
    );
    let count = collect_on(engine, &count_q)
        .await?
        .first()
        .and_then(|b| render_value(b.column(0).as_ref(), 0))
        .and_then(|s| s.parse::<usize>().ok())
        .unwrap_or(examples.len());
    Err(ForestError::BadKey {
        table: table.to_string(),
        key: pk.join(", "),
        count,
        examples: examples.join("; "),
    })
}

/// CSR of a child table's rows by parent row (counting sort, keeps child order).
pub(crate) fn group_children(parent_rows: usize, parent_of: &[u32], table: usize) -> Children {
    let mut offsets = vec![0u32; parent_rows + 1];
    for &p in parent_of {
        offsets[p as usize + 1] += 1;
    }
    for i in 0..parent_rows {
        offsets[i + 1] += offsets[i];
    }
    let mut next = offsets.clone();
    let mut rows = vec![0u32; parent_of.len()];
    for (r, &p) in parent_of.iter().enumerate() {
        rows[next[p as usize] as usize] = r as u32;
        next[p as usize] += 1;
    }
    Children {
        table,
        offsets,
        rows,
    }
}

/// TPC-H at SF 0.001 written as SQLite and planned with `sql/tpch.sql` (bands, date parts
/// and value hierarchies, a two-column key, sensitive columns), for unit tests that load it.
#[cfg(test)]
pub(crate) async fn tpch_fixture() -> (tempfile::TempDir, Plan, Warehouse) {
    let dir = tempfile::tempdir().expect("tempdir");
    let source = dir.path().join("tpch.sqlite");
    let set = crate::generate::tpch(0.001).expect("generate");
    crate::warehouse::write_staged(&source, &set, false)
        .and_then(|s| s.commit())
        .expect("write warehouse");
    let decl = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sql/tpch.sql");
    let text = std::fs::read_to_string(&decl).expect("sql/tpch.sql");
    let policy = crate::decl::parse(&text).expect("declarations parse");
    let mut wh = Warehouse::open(&source).await.expect("open");
    let plan = crate::plan::build(&policy, &mut wh, dir.path())
        .await
        .expect("plan");
    (dir, plan, wh)
}

/// A forest without QIs of a given shape, for the algorithms' unit tests: entity `e` has
/// `children[e].len()` rows of table 1, and its `j`-th of them `children[e][j]` rows of table 2.
#[cfg(test)]
pub(crate) fn shaped(children: &[Vec<usize>]) -> Forest {
    let mut kids_parent = Vec::new();
    let mut grand_parent = Vec::new();
    for (e, kids) in children.iter().enumerate() {
        for &g in kids {
            grand_parent.extend(std::iter::repeat_n(kids_parent.len() as u32, g));
            kids_parent.push(e as u32);
        }
    }
    let mut root = TableNodes::bare("e", Vec::new(), Vec::new(), vec![u32::MAX; children.len()]);
    let mut kids = TableNodes::bare("c", Vec::new(), Vec::new(), kids_parent);
    let grand = TableNodes::bare("g", Vec::new(), Vec::new(), grand_parent);
    kids.children = vec![group_children(kids.rows(), &grand.parent, 2)];
    root.children = vec![group_children(root.rows(), &kids.parent, 1)];
    Forest {
        tables: vec![root, kids, grand],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The load's sort: rows without a parent first, then by parent row, then by key (a
    /// two-column key here, its second column text), every column moved alike.
    #[test]
    fn rows_are_sorted_by_parent_then_key_as_the_query_would() {
        use arrow::array::{Int64Array, StringArray};
        use arrow::datatypes::{DataType, Field, Schema};
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Int64, false),
            Field::new("b", DataType::Utf8, false),
            Field::new("v", DataType::Utf8, true),
            Field::new(PARENT, DataType::UInt32, true),
        ]));
        let batch = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from(vec![2, 1, 1, 3, 1])),
                Arc::new(StringArray::from(vec!["x", "z", "y", "x", "a"])),
                Arc::new(StringArray::from(vec![
                    Some("2x"),
                    Some("1z"),
                    None,
                    Some("3x"),
                    Some("1a"),
                ])),
                Arc::new(UInt32Array::from(vec![
                    Some(0),
                    Some(1),
                    Some(0),
                    None,
                    Some(1),
                ])),
            ],
        )
        .expect("a batch");
        let out = sorted(batch, &["a".to_string(), "b".to_string()]).expect("sorts");
        let v = out
            .column(2)
            .as_any()
            .downcast_ref::<StringArray>()
            .expect("Utf8");
        let shown: Vec<Option<&str>> = v.iter().collect();
        assert_eq!(
            shown,
            vec![Some("3x"), None, Some("2x"), Some("1a"), Some("1z")]
        );
    }

    /// A key-less entity table is visited in file order (there is no key to order by), even
    /// when the file spans several CSV batches: runs stay reproducible.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn keyless_entity_rows_keep_source_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        // Many CSV batches, which a query would split over partitions.
        let rows = 20_000;
        let mut csv = String::from("n;g\n");
        // A scrambled n, so any reordering (by n or by g) would show.
        for i in 0..rows {
            csv.push_str(&format!(
                "{};{}\n",
                (i * 7919) % rows,
                ["a", "b", "c"][i % 3]
            ));
        }
        std::fs::write(dir.path().join("people.csv"), csv).expect("csv");
        let text = "SET source = 'people.csv'; SET csv_delimiter = ';';
            CREATE HIERARCHY g_h AS VALUES ('a', 'ab'), ('b', 'ab'), ('c');
            CREATE ENTITY person ON people;
            LABEL COLUMN people.n AS INSENSITIVE;
            LABEL COLUMN people.g AS QUASI IDENTIFIER USING g_h;
            ANONYMIZE person WITH (k = 2);";
        let policy = crate::decl::parse(text).expect("declarations parse");
        let options = crate::warehouse::SourceOptions {
            csv_delimiter: b';',
        };
        let mut wh = Warehouse::open_with(&dir.path().join("people.csv"), &options)
            .await
            .expect("open");
        let plan = crate::plan::build(&policy, &mut wh, dir.path())
            .await
            .expect("plan");
        assert!(plan.tables[0].primary_key.is_empty());
        let forest = load(&plan, &wh).await.expect("forest");
        assert_eq!(forest.entities(), rows);
        let n = forest.tables[0].batch.column_by_name("n").expect("n");
        let order: Vec<Option<f64>> = (0..rows).map(|r| numeric_value(n.as_ref(), r)).collect();
        let expected: Vec<Option<f64>> = (0..rows)
            .map(|i| Some(((i * 7919) % rows) as f64))
            .collect();
        assert_eq!(order, expected);
    }

    /// IDENTIFIER columns are loaded as `Null` (never released, so never copied), in their
    /// place, keyed and key-less tables alike; every other column keeps its values.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn identifiers_load_as_nulls_in_place() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join("people.csv"),
            "id,name,g\n1,Ann,a\n2,Bob,b\n3,Cy,a\n",
        )
        .expect("csv");
        for keyed in [true, false] {
            // A keyed entity's key needs no role; a key-less table's `id` is plain data.
            let entity = if keyed {
                "CREATE ENTITY person ON people (id);"
            } else {
                "CREATE ENTITY person ON people; LABEL COLUMN people.id AS INSENSITIVE;"
            };
            let text = format!(
                "SET source = 'people.csv';
                 CREATE HIERARCHY g_h AS VALUES ('a'), ('b');
                 {entity}
                 LABEL COLUMN people.name AS IDENTIFIER;
                 LABEL COLUMN people.g AS QUASI IDENTIFIER USING g_h;
                 ANONYMIZE person WITH (k = 2);"
            );
            let policy = crate::decl::parse(&text).expect("declarations parse");
            let mut wh = Warehouse::open(&dir.path().join("people.csv"))
                .await
                .expect("open");
            let plan = crate::plan::build(&policy, &mut wh, dir.path())
                .await
                .expect("plan");
            let forest = load(&plan, &wh).await.expect("forest");
            let batch = &forest.tables[0].batch;
            let names: Vec<&str> = batch
                .schema_ref()
                .fields()
                .iter()
                .map(|f| f.name().as_str())
                .collect();
            assert_eq!(names, ["id", "name", "g"], "keyed: {keyed}");
            let name = batch.column(1);
            assert_eq!(name.data_type(), &arrow::datatypes::DataType::Null);
            assert_eq!(name.len(), 3);
            let g: Vec<Option<String>> = (0..3)
                .map(|r| render_value(batch.column(2).as_ref(), r))
                .collect();
            assert_eq!(g, [Some("a".into()), Some("b".into()), Some("a".into())]);
        }
    }
}
