//! Both sides of every family table, read once, with their parent links resolved.

use std::borrow::Cow;

use arrow::array::{Array, AsArray, LargeStringArray, StringArray, StringViewArray};
use arrow::datatypes::{
    DataType, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type,
    UInt32Type, UInt64Type, UInt8Type,
};
use arrow::record_batch::RecordBatch;

use super::keys::{in_row_order, key_hash, KeyIndex};
use super::VerifyError;
use crate::plan::{ColumnRole, FamilyTable, Plan};
use crate::warehouse::{render_value, Warehouse};

/// One table as one warehouse holds it.
pub(super) struct Side {
    batch: RecordBatch,
    names: Vec<String>,
}

impl Side {
    pub(super) fn new(batch: RecordBatch) -> Side {
        let names = batch
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        Side { batch, names }
    }

    pub(super) fn rows(&self) -> usize {
        self.batch.num_rows()
    }

    /// Exact name, else the unique case-insensitive match (the schema check reports a
    /// case change; the other checks still look at the data).
    pub(super) fn col(&self, name: &str) -> Option<usize> {
        if let Some(i) = self.names.iter().position(|n| n == name) {
            return Some(i);
        }
        let lower = name.to_lowercase();
        let mut hits = self
            .names
            .iter()
            .enumerate()
            .filter(|(_, n)| n.to_lowercase() == lower);
        match (hits.next(), hits.next()) {
            (Some((i, _)), None) => Some(i),
            _ => None,
        }
    }

    /// The column names, in the table's order.
    pub(super) fn names(&self) -> &[String] {
        &self.names
    }

    pub(super) fn data_type(&self, col: usize) -> &DataType {
        self.batch.column(col).data_type()
    }

    pub(super) fn cell(&self, col: usize, row: usize) -> Option<String> {
        render_value(self.batch.column(col).as_ref(), row)
    }

    /// [`Side::cell`] borrowed from the table where the column holds text, so a scan of
    /// millions of cells allocates only for the few it keeps; rendered otherwise.
    pub(super) fn text(&self, col: usize, row: usize) -> Option<Cow<'_, str>> {
        self.texts(col).get(row)
    }

    /// Column `col` for [`Texts::get`]: its type looked at once for a whole scan.
    pub(super) fn texts(&self, col: usize) -> Texts<'_> {
        let array = self.batch.column(col);
        let text = match array.data_type() {
            DataType::Utf8 => array.as_string_opt::<i32>().map(Texts::Utf8),
            DataType::LargeUtf8 => array.as_string_opt::<i64>().map(Texts::LargeUtf8),
            DataType::Utf8View => array.as_string_view_opt().map(Texts::Utf8View),
            _ => None,
        };
        text.unwrap_or(Texts::Rendered(self, col))
    }

    /// A cell as a value to compare and hash, equal where [`Side::cell`] renders equal text
    /// (but NaNs of different bits): numbers and booleans by value, text borrowed, anything
    /// else rendered. For scans that only ask which cells are equal.
    pub(super) fn value(&self, col: usize, row: usize) -> Option<Value<'_>> {
        if self.is_null(col, row) {
            return None;
        }
        let array = self.batch.column(col);
        let value = match array.data_type() {
            DataType::Int8 => Value::Int(array.as_primitive::<Int8Type>().value(row).into()),
            DataType::Int16 => Value::Int(array.as_primitive::<Int16Type>().value(row).into()),
            DataType::Int32 => Value::Int(array.as_primitive::<Int32Type>().value(row).into()),
            DataType::Int64 => Value::Int(array.as_primitive::<Int64Type>().value(row).into()),
            DataType::UInt8 => Value::Int(array.as_primitive::<UInt8Type>().value(row).into()),
            DataType::UInt16 => Value::Int(array.as_primitive::<UInt16Type>().value(row).into()),
            DataType::UInt32 => Value::Int(array.as_primitive::<UInt32Type>().value(row).into()),
            DataType::UInt64 => Value::Int(array.as_primitive::<UInt64Type>().value(row).into()),
            // f32 renders by its own shortest form, so its bits, widened exactly, tell it apart.
            DataType::Float32 => {
                Value::Float(f64::from(array.as_primitive::<Float32Type>().value(row)).to_bits())
            }
            DataType::Float64 => {
                Value::Float(array.as_primitive::<Float64Type>().value(row).to_bits())
            }
            DataType::Boolean => Value::Bool(array.as_boolean().value(row)),
            _ => Value::Text(self.text(col, row)?),
        };
        Some(value)
    }

    /// Whether a cell is NULL (or out of range), without rendering it. A column of type Null
    /// keeps no validity bits, so its type says it.
    pub(super) fn is_null(&self, col: usize, row: usize) -> bool {
        let array = self.batch.column(col);
        row >= array.len() || array.data_type() == &DataType::Null || array.is_null(row)
    }

    /// The rendered key of a row; None when any part is NULL (a NULL key identifies nothing).
    pub(super) fn key(&self, cols: &[usize], row: usize) -> Option<Vec<String>> {
        cols.iter().map(|&c| self.cell(c, row)).collect()
    }
}

/// One column's cells as [`Side::cell`]'s text ([`Side::texts`]).
pub(super) enum Texts<'a> {
    Utf8(&'a StringArray),
    LargeUtf8(&'a LargeStringArray),
    Utf8View(&'a StringViewArray),
    /// Not text: each cell rendered.
    Rendered(&'a Side, usize),
}

impl<'a> Texts<'a> {
    /// The text of a row's cell; None for NULL or a row past the end.
    pub(super) fn get(&self, row: usize) -> Option<Cow<'a, str>> {
        fn held(array: &dyn Array, row: usize) -> bool {
            row < array.len() && !array.is_null(row)
        }
        match self {
            Texts::Utf8(a) => held(*a, row).then(|| Cow::Borrowed(a.value(row))),
            Texts::LargeUtf8(a) => held(*a, row).then(|| Cow::Borrowed(a.value(row))),
            Texts::Utf8View(a) => held(*a, row).then(|| Cow::Borrowed(a.value(row))),
            Texts::Rendered(side, col) => side.cell(*col, row).map(Cow::Owned),
        }
    }
}

/// A cell to compare and hash ([`Side::value`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Value<'a> {
    Int(i128),
    /// The bits of the value as f64.
    Float(u64),
    Bool(bool),
    Text(Cow<'a, str>),
}

/// How a non-key column's released cell must relate to its source cell.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(super) enum Rule {
    /// A QI: the value, an ancestor label in the named hierarchy, or `*`.
    Qi(String),
    /// SENSITIVE / INSENSITIVE (and QI under anatomy): the value itself. `numeric` compares
    /// as numbers when both sides are numeric, so an Int64 source and a Float64 copy of it
    /// agree.
    Exact { numeric: bool },
}

pub(super) struct Content {
    pub name: String,
    pub src: usize,
    pub rel: usize,
    pub rule: Rule,
}

/// Why a released child's FK does not resolve to exactly one released parent.
pub(super) enum FkIssue {
    Null,
    Dangling(Vec<String>),
    Ambiguous(Vec<String>, usize),
}

pub(super) struct TableData {
    pub name: String,
    pub parent: Option<usize>,
    pub src: Side,
    pub rel: Side,
    /// PK column indices per side (empty for a key-less table).
    pub src_pk: Vec<usize>,
    pub rel_pk: Vec<usize>,
    /// Content columns present on both sides, in plan order.
    pub content: Vec<Content>,
    /// Parent row of every row (None: root table, NULL or unresolved FK).
    pub src_parent: Vec<Option<usize>>,
    pub rel_parent: Vec<Option<usize>>,
    /// Released rows whose FK does not name exactly one released parent row.
    pub rel_fk_issues: Vec<(usize, FkIssue)>,
    /// Released rows whose second FK path (to an ancestor of the parent) names another
    /// ancestor row than the parent chain reaches: (which second path, row, what it names
    /// and what it should).
    pub rel_second_path_issues: Vec<(usize, usize, String)>,
    /// The source row each released row stands for, once truthfulness has traced it.
    pub rel_to_src: Vec<Option<usize>>,
    /// Each row's position in the whole table (source order) where only some rows were read
    /// (a partition's); None when every row was, in order.
    pub rel_origin: Option<Vec<usize>>,
    pub src_origin: Option<Vec<usize>>,
    /// Source rows whose FK names no source parent row that was read.
    pub src_unlinked: usize,
}

impl TableData {
    /// Released row `r`'s position in the whole released table: what violations number and
    /// order rows by.
    pub(super) fn rel_row(&self, r: usize) -> usize {
        self.rel_origin
            .as_ref()
            .and_then(|o| o.get(r).copied())
            .unwrap_or(r)
    }

    /// Source row `s`'s position in the whole source table.
    pub(super) fn src_row(&self, s: usize) -> usize {
        self.src_origin
            .as_ref()
            .and_then(|o| o.get(s).copied())
            .unwrap_or(s)
    }

    /// How a released row is named in violations: by its key, or by position and parent.
    pub(super) fn describe(&self, tables: &[TableData], row: usize) -> String {
        if !self.rel_pk.is_empty() {
            let released = show_key(self.rel.key(&self.rel_pk, row).as_deref());
            // Traced through the key map (or preserved keys): name the source entity too,
            // for the owner running verify; the release itself never holds it.
            let source = self
                .rel_to_src
                .get(row)
                .copied()
                .flatten()
                .filter(|_| !self.src_pk.is_empty())
                .map(|s| show_key(self.src.key(&self.src_pk, s).as_deref()))
                .filter(|s| *s != released)
                .map(|s| format!(" (source key {s})"))
                .unwrap_or_default();
            return format!("{} key {released}{source}", self.name);
        }
        let mut text = format!("{} row {}", self.name, self.rel_row(row) + 1);
        if let (Some(p), Some(pr)) = (self.parent, self.rel_parent.get(row).copied().flatten()) {
            if let Some(parent) = tables.get(p) {
                text.push_str(&format!(" (child of {})", parent.describe(tables, pr)));
            }
        }
        text
    }
}

pub(super) fn show_key(key: Option<&[String]>) -> String {
    match key {
        Some(parts) => parts.join(","),
        None => "NULL".to_string(),
    }
}

pub(super) fn show_cell(v: Option<&str>) -> String {
    match v {
        Some(s) => format!("'{s}'"),
        None => "NULL".to_string(),
    }
}

/// Which rows of a plan entry a read keeps: those whose partition (`parts`, per row of the
/// entry in source order) is `part`.
#[derive(Clone, Copy)]
pub(super) struct Keep<'a> {
    pub parts: &'a [u16],
    pub part: u16,
}

/// One side of a plan entry, in source order: the table, or for an entry of a split table
/// (plan::Part) the rows it holds, told apart on each side by whether the entry's split
/// columns are NULL; with `keep`, only one partition's rows, each with its position in the
/// entry.
pub(super) async fn read(
    wh: &Warehouse,
    side: &'static str,
    table: &str,
    part: Option<&crate::plan::Part>,
    leave_out: &[String],
    keep: Option<Keep<'_>>,
) -> Result<(Side, Option<Vec<usize>>), VerifyError> {
    let Some(meta) = wh.table(table) else {
        return Err(VerifyError::MissingTable {
            side,
            table: table.to_string(),
        });
    };
    let columns: Vec<&crate::warehouse::ColumnMeta> = meta
        .columns
        .iter()
        .filter(|c| !leave_out.iter().any(|l| l.eq_ignore_ascii_case(&c.name)))
        .collect();
    let names: Vec<String> = columns.iter().map(|c| c.name.clone()).collect();
    let read_err = |source| VerifyError::Read {
        side,
        table: table.to_string(),
        source,
    };
    let plan_err = |e: String| VerifyError::Plan(format!("table '{table}' in the {side}: {e}"));
    let mut batches = Vec::new();
    let mut origin = keep.map(|_| Vec::new());
    let mut seen = 0;
    for batch in wh
        .batches_in_source_order(&meta.name, &names)
        .map_err(read_err)?
    {
        let mut batch = batch.map_err(read_err)?;
        if let Some(part) = part {
            let mine = part.mask(&batch, side == "release").map_err(plan_err)?;
            batch = arrow::compute::filter_record_batch(&batch, &mine)
                .map_err(|e| plan_err(e.to_string()))?;
        }
        let rows = batch.num_rows();
        if let (Some(keep), Some(origin)) = (keep, origin.as_mut()) {
            let held = |r: usize| keep.parts.get(seen + r) == Some(&keep.part);
            origin.extend((0..rows).filter(|&r| held(r)).map(|r| seen + r));
            let mask: arrow::array::BooleanArray = (0..rows).map(|r| Some(held(r))).collect();
            batch = arrow::compute::filter_record_batch(&batch, &mask)
                .map_err(|e| plan_err(e.to_string()))?;
        }
        seen += rows;
        batches.push(batch);
    }
    let schema = std::sync::Arc::new(arrow::datatypes::Schema::new(
        columns
            .iter()
            .map(|c| arrow::datatypes::Field::new(&c.name, c.data_type.clone(), true))
            .collect::<Vec<_>>(),
    ));
    let schema = batches.first().map_or(schema, RecordBatch::schema);
    let batch =
        crate::warehouse::concat_owned(&schema, batches).map_err(|e| plan_err(e.to_string()))?;
    Ok((Side::new(batch), origin))
}

/// Reads `columns` of a plan entry in source order, handing each batch (only the entry's
/// rows, for a split table) to `each`; None when a column is missing (the whole check
/// reports it).
pub(super) fn scan(
    wh: &Warehouse,
    side: &'static str,
    ft: &crate::plan::FamilyTable,
    columns: &[String],
    mut each: impl FnMut(&Side),
) -> Result<Option<()>, VerifyError> {
    let Some(meta) = wh.table(&ft.name) else {
        return Ok(None);
    };
    // A split entry's rows are told apart by its split columns, whatever the caller reads.
    let split: &[String] = match &ft.part {
        Some(p) if side == "release" => &p.split_released,
        Some(p) => &p.split_source,
        None => &[],
    };
    let mut names: Vec<String> = Vec::new();
    for c in columns.iter().chain(split) {
        let Some(m) = meta.column(c) else {
            return Ok(None);
        };
        if !names.contains(&m.name) {
            names.push(m.name.clone());
        }
    }
    let read_err = |source| VerifyError::Read {
        side,
        table: ft.name.clone(),
        source,
    };
    let plan_err = |e: String| VerifyError::Plan(format!("table '{}': {e}", ft.name));
    for batch in wh
        .batches_in_source_order(&meta.name, &names)
        .map_err(read_err)?
    {
        let mut batch = batch.map_err(read_err)?;
        if let Some(part) = &ft.part {
            let mine = part.mask(&batch, side == "release").map_err(plan_err)?;
            batch = arrow::compute::filter_record_batch(&batch, &mine)
                .map_err(|e| plan_err(e.to_string()))?;
        }
        each(&Side::new(batch));
    }
    Ok(Some(()))
}

/// Column positions of `names` in `side` (present: [`scan`] read them).
pub(super) fn cols(side: &Side, names: &[String]) -> Vec<usize> {
    names.iter().filter_map(|n| side.col(n)).collect()
}

/// The plan entries whose parent is entry `ti`, in plan order.
pub(super) fn children(plan: &Plan, ti: usize) -> Vec<usize> {
    (0..plan.tables.len())
        .filter(|&c| plan.tables[c].parent == Some(ti))
        .collect()
}

/// Per entry of `children`, the columns of `side` that child names its parent rows by:
/// `key` is its `parent_key` (source side) or `released_parent_key` (release side).
pub(super) fn child_cols(
    side: &Side,
    plan: &Plan,
    children: &[usize],
    key: fn(&FamilyTable) -> &[String],
) -> Vec<Vec<usize>> {
    children
        .iter()
        .map(|&c| cols(side, key(&plan.tables[c])))
        .collect()
}

fn key_cols(
    side: &Side,
    which: &'static str,
    table: &str,
    cols: &[String],
) -> Result<Vec<usize>, VerifyError> {
    cols.iter()
        .map(|c| {
            side.col(c).ok_or_else(|| VerifyError::MissingKeyColumn {
                side: which,
                table: table.to_string(),
                column: c.clone(),
            })
        })
        .collect()
}

/// The source columns of `t` verify does not read with the table: its IDENTIFIER columns,
/// which only the labels check reads, a column at a time and only the cells a label could
/// hold (`labels::streamed_holders`). A key-less table keeps them (a cell is found again by
/// its row's key), as does any column that is also a key, an FK or a split column. At TPC-H
/// SF 1 they are the free-text comments and two dates, a fifth of the source side.
pub(super) fn streamed(t: &crate::plan::FamilyTable) -> Vec<String> {
    if t.primary_key.is_empty() {
        return Vec::new();
    }
    let structural = |c: &String| {
        t.primary_key.contains(c)
            || t.parent_fk.contains(c)
            || t.redundant.iter().any(|r| r.columns.contains(c))
            || t.part.as_ref().is_some_and(|p| p.split_source.contains(c))
    };
    t.columns
        .iter()
        .filter(|c| c.role == ColumnRole::Identifier && !structural(&c.name))
        .map(|c| c.name.clone())
        .collect()
}

/// Reads every family table from both warehouses and links children to parents.
pub(super) async fn load(
    plan: &Plan,
    source: &Warehouse,
    release: &Warehouse,
) -> Result<Vec<TableData>, VerifyError> {
    load_rows(plan, source, release, None).await
}

/// Which rows of every plan entry a partition holds: per entry, the partition of each
/// released and of each source row, and the partition read.
#[derive(Clone, Copy)]
pub(super) struct Partition<'a> {
    pub rel: &'a [Vec<u16>],
    pub src: &'a [Vec<u16>],
    /// Per entry, the partition of each key-map pair of its table (None: every pair is read).
    pub pairs: &'a [Option<Vec<u16>>],
    pub part: u16,
}

/// [`load`] of every row, or of one partition's rows, each with its position in its table.
pub(super) async fn load_rows(
    plan: &Plan,
    source: &Warehouse,
    release: &Warehouse,
    partition: Option<Partition<'_>>,
) -> Result<Vec<TableData>, VerifyError> {
    let mut tables = Vec::with_capacity(plan.tables.len());
    for (ti, t) in plan.tables.iter().enumerate() {
        if let Some(p) = t.parent {
            if p >= ti {
                return Err(VerifyError::Plan(format!(
                    "family table '{}' comes before its parent '{}'",
                    t.name,
                    plan.tables.get(p).map_or("?", |pt| pt.name.as_str())
                )));
            }
        }
        fn keep(of: &[Vec<u16>], ti: usize, part: u16) -> Keep<'_> {
            Keep {
                parts: of.get(ti).map_or(&[], Vec::as_slice),
                part,
            }
        }
        let (src, src_origin) = read(
            source,
            "source",
            &t.name,
            t.part.as_ref(),
            &streamed(t),
            partition.map(|p| keep(p.src, ti, p.part)),
        )
        .await?;
        let (rel, rel_origin) = read(
            release,
            "release",
            &t.name,
            t.part.as_ref(),
            &[],
            partition.map(|p| keep(p.rel, ti, p.part)),
        )
        .await?;
        let src_pk = key_cols(&src, "source", &t.name, &t.primary_key)?;
        let rel_pk = key_cols(&rel, "release", &t.name, &t.released_pk())?;
        let content = contents(plan, t, &src, &rel)?;
        let (n_src, n_rel) = (src.rows(), rel.rows());
        tables.push(TableData {
            name: t.name.clone(),
            parent: t.parent,
            src,
            rel,
            src_pk,
            rel_pk,
            content,
            src_parent: vec![None; n_src],
            rel_parent: vec![None; n_rel],
            rel_fk_issues: Vec::new(),
            rel_second_path_issues: Vec::new(),
            rel_to_src: vec![None; n_rel],
            rel_origin,
            src_origin,
            src_unlinked: 0,
        });
    }

    for (ti, t) in plan.tables.iter().enumerate() {
        let Some(p) = t.parent else { continue };
        let child = &tables[ti];
        let parent = &tables[p];
        let src_fk = key_cols(&child.src, "source", &t.name, &t.parent_fk)?;
        let rel_fk = key_cols(&child.rel, "release", &t.name, &t.released_fk)?;
        let src_ref = key_cols(&parent.src, "source", &parent.name, &t.parent_key)?;
        let rel_ref = key_cols(&parent.rel, "release", &parent.name, &t.released_parent_key)?;
        let (src_parent, src_issues) = link(&child.src, &src_fk, &parent.src, &src_ref);
        let unlinked = src_issues
            .iter()
            .filter(|(_, i)| matches!(i, FkIssue::Dangling(_)))
            .count();
        let (rel_parent, issues) = link(&child.rel, &rel_fk, &parent.rel, &rel_ref);
        let child = &mut tables[ti];
        child.src_parent = src_parent;
        child.rel_parent = rel_parent;
        child.rel_fk_issues = issues;
        child.src_unlinked = unlinked;
        let second = second_paths(plan, &tables, ti)?;
        tables[ti].rel_second_path_issues = second;
    }
    Ok(tables)
}

/// The content columns of plan entry `t` present on both sides, in plan order, each with
/// how a released cell must relate to its source cell.
fn contents(
    plan: &Plan,
    t: &crate::plan::FamilyTable,
    src: &Side,
    rel: &Side,
) -> Result<Vec<Content>, VerifyError> {
    let mut content = Vec::new();
    // Anatomy generalizes nothing (000 Ch. 3): a QI cell is the source value itself.
    let anatomy = plan.params.model.anatomy().is_some();
    for c in &t.columns {
        let rule = match &c.role {
            ColumnRole::Key | ColumnRole::Identifier => continue,
            ColumnRole::QuasiIdentifier { .. } if anatomy => Rule::Exact { numeric: false },
            ColumnRole::QuasiIdentifier { hierarchy } => Rule::Qi(hierarchy.clone()),
            ColumnRole::Sensitive { .. } | ColumnRole::Insensitive => {
                Rule::Exact { numeric: false }
            }
        };
        let Some(s) = src.col(&c.name) else {
            return Err(VerifyError::Plan(format!(
                "the plan lists column '{}.{}', which the source does not have",
                t.name, c.name
            )));
        };
        // A content column missing from the release is the schema check's to report.
        let Some(r) = rel.col(&c.name) else { continue };
        let rule = match rule {
            Rule::Exact { .. } => Rule::Exact {
                numeric: src.data_type(s).is_numeric() && rel.data_type(r).is_numeric(),
            },
            qi => qi,
        };
        content.push(Content {
            name: c.name.clone(),
            src: s,
            rel: r,
            rule,
        });
    }
    Ok(content)
}

/// Each released row's second FK paths (to an ancestor of its parent) against the ancestor
/// its released parent chain reaches; a NULL second FK names nothing and passes.
fn second_paths(
    plan: &Plan,
    tables: &[TableData],
    ti: usize,
) -> Result<Vec<(usize, usize, String)>, VerifyError> {
    let t = &plan.tables[ti];
    let child = &tables[ti];
    let mut issues = Vec::new();
    for (path, r) in t.redundant.iter().enumerate() {
        let Some(ancestor) = tables.get(r.ancestor).filter(|_| r.ancestor < ti) else {
            return Err(VerifyError::Plan(format!(
                "the second path of '{}' names table #{}, which is not an earlier family table",
                t.name, r.ancestor
            )));
        };
        let fk = key_cols(&child.rel, "release", &t.name, &r.released_columns)?;
        let key = key_cols(
            &ancestor.rel,
            "release",
            &ancestor.name,
            &r.released_ancestor_key,
        )?;
        let (named, _) = link(&child.rel, &fk, &ancestor.rel, &key);
        for (row, named) in named.iter().enumerate() {
            if child.rel.key(&fk, row).is_none() {
                continue;
            }
            // Up the released tree to the ancestor's table.
            let mut at = child.rel_parent[row];
            let mut table = t.parent;
            while let (Some(cur), Some(a)) = (table.filter(|&c| c != r.ancestor), at) {
                at = tables[cur].rel_parent[a];
                table = plan.tables[cur].parent;
            }
            if *named != at || at.is_none() {
                let shown = show_key(child.rel.key(&fk, row).as_deref());
                let reached = at
                    .and_then(|a| ancestor.rel.key(&key, a))
                    .map_or_else(|| "no row".to_string(), |k| show_key(Some(&k)));
                issues.push((
                    path,
                    row,
                    format!(
                        "second path ({}) = {shown} names another {} row than its parent chain reaches ({reached})",
                        r.released_columns.join(", "),
                        ancestor.name
                    ),
                ));
            }
        }
    }
    Ok(issues)
}

/// Resolves each child row's FK against the parent's referenced columns. An ambiguous FK is
/// linked to the first match so the tree can still be built; it is reported all the same.
fn link(
    child: &Side,
    fk: &[usize],
    parent: &Side,
    key: &[usize],
) -> (Vec<Option<usize>>, Vec<(usize, FkIssue)>) {
    let parent_key = |row: usize| parent.key(key, row);
    let index = KeyIndex::new(parent.rows(), parent_key, key_hash);
    let resolve = |row: usize| -> (Option<usize>, Option<FkIssue>) {
        let Some(k) = child.key(fk, row) else {
            return (None, Some(FkIssue::Null));
        };
        let mut matches = index.matches(&k, parent_key, key_hash);
        let first = matches.next();
        let n = first.map_or(0, |_| 1 + matches.count());
        match first {
            None => (None, Some(FkIssue::Dangling(k))),
            Some(first) => (Some(first), (n > 1).then_some(FkIssue::Ambiguous(k, n))),
        }
    };
    let mut parents = Vec::with_capacity(child.rows());
    let mut issues = Vec::new();
    in_row_order(child.rows(), resolve, |row, (p, issue)| {
        parents.push(p);
        if let Some(issue) = issue {
            issues.push((row, issue));
        }
    });
    (parents, issues)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{ArrayRef, Float64Array, Int64Array, NullArray, StringArray};
    use arrow::datatypes::{Field, Schema};

    use super::*;

    #[test]
    fn text_is_the_rendered_cell_borrowed_where_it_can_be() {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(vec![Some("Ann"), None, Some("")])),
            Arc::new(Int64Array::from(vec![Some(-7), Some(12), Some(-7)])),
            Arc::new(Float64Array::from(vec![Some(-0.0), None, Some(0.0)])),
            Arc::new(NullArray::new(3)),
        ];
        let fields: Vec<Field> = ["s", "i", "f", "n"]
            .iter()
            .zip(&columns)
            .map(|(n, c)| Field::new(*n, c.data_type().clone(), true))
            .collect();
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
            .expect("columns of one length");
        let side = Side::new(batch);
        for col in 0..4 {
            for row in 0..4 {
                let text = side.text(col, row).map(Cow::into_owned);
                assert_eq!(text, side.cell(col, row), "column {col}, row {row}");
                assert_eq!(
                    side.is_null(col, row),
                    text.is_none(),
                    "column {col}, row {row}"
                );
            }
        }
        // Values are equal exactly where the rendered cells are (NULL to NULL included).
        for col in 0..4 {
            for a in 0..3 {
                for b in 0..3 {
                    assert_eq!(
                        side.value(col, a) == side.value(col, b),
                        side.cell(col, a) == side.cell(col, b),
                        "column {col}, rows {a} and {b}"
                    );
                }
            }
        }
        assert!(matches!(side.text(0, 0), Some(Cow::Borrowed("Ann"))));
        assert!(side.is_null(3, 0), "a Null column holds no validity bits");
    }
}
