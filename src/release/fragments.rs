//! The fragments layout (004 Sec. 3, spec Sec. 3 "What is published"): the entity table as
//! one released table per fragment, `<table>__f1`, `<table>__f2`, each with its own QI
//! columns as labels, the class as its repair left it, and the other published columns the
//! algorithm placed in it (each in one fragment). No key, no FK, no row id in a key-less
//! fragment (S2), and each sorted by its own content, never in source order (S3): nothing
//! but the class lines a row of one fragment up with a row of another.
//!
//! On entity trees (layout A, spec Sec. 4.2) the first fragment is the anchor: the entity
//! rows through its columns, with their pseudonymized key, released with the child tables
//! as any generalized family is ([`super::family`]), the children's FKs naming `<t>__f1`.
//! Its order is its random keys' (S3); the tree shape is in it alone (S4).

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, StringArray, UInt32Array};
use arrow::compute::take;
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;

use super::keys::sort_by_key;
use super::{internal, Materialized, ReleaseError, TableStats};
use crate::algo::{ChildColumn, Fragment, Fragmentation};
use crate::forest::{Forest, TableNodes};
use crate::keymap::KeyMap;
use crate::plan::{ColumnRole, Plan, PlannedColumn};
use crate::warehouse::ReleaseTable;

/// The sort's own column: each row's source row, never released.
const PROVENANCE: &str = "__relanon_source_row";

/// The name fragment `i` (from 0) of `table` is released under.
pub fn fragment_table_name(table: &str, i: usize) -> String {
    format!("{table}__f{}", i + 1)
}

/// The name of fragment `i`'s class sets under `repair = 'delta'`: its QI labels and a
/// class per row, one row per class an equivalence class publishes.
pub fn class_sets_table_name(table: &str, i: usize) -> String {
    format!("{table}__f{}_classes", i + 1)
}

/// What a fragmentation released, for the report: which columns went where and what the
/// class repair changed. Never which rows: nothing that aligns one fragment's classes with
/// another's (S6).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FragmentSummary {
    pub class: String,
    pub repair: String,
    /// Bins a numeric column was counted in when the fragments were chosen.
    pub bins: usize,
    /// FMRMR of the split (004 Sec. 3.2): relevance to the class minus redundancy.
    pub fmrmr: f64,
    pub fragments: Vec<FragmentReport>,
    /// The two QI columns of different fragments that share the most mutual information
    /// (nats): what a probabilistic re-linkage of the fragments would lean on.
    pub largest_cross_mi: Option<(String, String, f64)>,
    /// QI columns of one fragment that determine (in the source) a QI column of another:
    /// (determining, determined). A label of the first precise enough names the second, so
    /// the fragments join on it as well as on the class.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cross_determined: Vec<(String, String)>,
    /// Under l-diversity (004 Sec. 5): the horizontal segments each fragment's groups were
    /// formed in, and how many segments the cross-segment repair merged away (D11).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segments: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segments_merged: Option<usize>,
}

/// One released fragment.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FragmentReport {
    pub table: String,
    pub qi_columns: Vec<String>,
    /// Its other columns: the class first (unless published as sets), then those placed in
    /// it.
    pub other_columns: Vec<String>,
    /// Layout A's anchor (spec Sec. 4.2): the child tables released with it, whose entity
    /// key is its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub child_tables: Vec<String>,
    /// Under `repair = 'delta'`: the table of its classes' class sets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class_sets: Option<String>,
    pub rows_released: usize,
    pub equivalence_classes: usize,
    pub smallest_ec: Option<usize>,
    /// Class cells the repair changed in it.
    pub class_changed: usize,
}

/// The fragments of the entity table; on entity trees (layout A) the first is the anchor,
/// released with the child tables.
pub(super) fn tables(
    plan: &Plan,
    forest: &Forest,
    f: &Fragmentation,
) -> Result<Materialized, ReleaseError> {
    let ft = &plan.tables[0];
    let qi_names: Vec<&str> = ft.qi_columns().map(|(c, _)| c).collect();
    let class_name = class_column(&forest.tables[0], f)?;
    let mut tables = Vec::new();
    let mut stats = Vec::new();
    let mut reports = Vec::new();
    let mut provenance = Vec::new();
    let mut keys = KeyMap::default();
    for (i, fragment) in f.fragments.iter().enumerate() {
        let one = if i == 0 && f.trees {
            anchor(plan, forest, f, &class_name)?
        } else {
            keyless(plan, forest, f, i, &class_name)?
        };
        reports.push(FragmentReport {
            table: fragment_table_name(&ft.name, i),
            qi_columns: fragment
                .qi
                .iter()
                .map(|&q| qi_names[q].to_string())
                .collect(),
            other_columns: one.others,
            child_tables: one.children,
            class_sets: fragment
                .sets
                .as_ref()
                .map(|_| class_sets_table_name(&ft.name, i)),
            rows_released: one.source.len(),
            equivalence_classes: fragment.ec_sizes.len(),
            smallest_ec: fragment.ec_sizes.iter().copied().min(),
            class_changed: fragment.changed,
        });
        provenance.push(one.source);
        if let Some(map) = one.keys {
            keys = map;
        }
        tables.extend(one.tables);
        stats.extend(one.stats);
    }
    let first = &f.fragments[0].generalization;
    Ok(Materialized {
        tables,
        keys,
        stats,
        ec_sizes: f.fragments[0].ec_sizes.clone(),
        suppressed_entities: first.suppressed_entities,
        recoding: recoding(&qi_names, &ft.name, &f.fragments),
        relocation: None,
        fragment_rows: provenance,
        fragmentation: Some(FragmentSummary {
            class: class_name,
            repair: f.repair.to_string(),
            bins: f.bins,
            fmrmr: f.fmrmr,
            fragments: reports,
            largest_cross_mi: f
                .cross_mi
                .map(|(a, b, v)| (qi_names[a].to_string(), qi_names[b].to_string(), v)),
            cross_determined: f
                .cross_determined
                .iter()
                .map(|&(a, b)| (qi_names[a].to_string(), qi_names[b].to_string()))
                .chain(child_determined(plan, forest, f, &qi_names))
                .collect(),
            segments: f.segments.map(|(n, _)| n),
            segments_merged: f.segments.map(|(_, m)| m),
        }),
    })
}

/// Layout A: the child columns that determine a QI column of the key-less fragment, named
/// `table.column`.
fn child_determined<'a>(
    plan: &'a Plan,
    forest: &'a Forest,
    f: &'a Fragmentation,
    qi_names: &'a [&str],
) -> impl Iterator<Item = (String, String)> + 'a {
    f.child_determined
        .iter()
        .filter_map(move |&(t, column, b)| {
            let table = plan.tables.get(t)?;
            let name = match column {
                ChildColumn::Qi(q) => table.qi_columns().nth(q)?.0.to_string(),
                ChildColumn::Sensitive(s) => forest.tables[t]
                    .sensitive
                    .get(s)?
                    .name_in(&table.name)
                    .to_string(),
            };
            Some((format!("{}.{name}", table.name), qi_names[b].to_string()))
        })
}

/// One fragment as released: its tables (with, for layout A's anchor, the child tables and
/// the key map), what the report says of its columns, and its rows' source rows.
struct OneFragment {
    tables: Vec<ReleaseTable>,
    stats: Vec<TableStats>,
    keys: Option<KeyMap>,
    /// The entity columns besides its QI columns: the class first (unless published as
    /// sets), then those placed in it.
    others: Vec<String>,
    children: Vec<String>,
    /// The source entity row of each released row.
    source: Vec<u32>,
}

/// Key-less fragment `i`: its kept entity rows sorted by their content, and under `delta`
/// its class sets.
fn keyless(
    plan: &Plan,
    forest: &Forest,
    f: &Fragmentation,
    i: usize,
    class_name: &str,
) -> Result<OneFragment, ReleaseError> {
    let nodes = &forest.tables[0];
    let fragment = &f.fragments[i];
    let name = fragment_table_name(&plan.tables[0].name, i);
    let rows: Vec<u32> = (0..nodes.rows() as u32)
        .filter(|&r| fragment.generalization.kept[0][r as usize])
        .collect();
    let built = columns(plan, nodes, f, i, &rows, class_name)?;
    let (batch, source) = sorted_with_provenance(built.fields, built.columns, &rows)?;
    let stats = TableStats {
        name: name.clone(),
        rows_in: nodes.rows_in,
        released: rows.len(),
        suppressed: nodes.rows() - rows.len(),
        orphans_dropped: nodes.orphans_dropped,
        no_parent: nodes.no_parent,
        lm_sum: built.lm_by_column.iter().map(|(_, s)| s).sum(),
        lm_sum_by_column: built.lm_by_column,
        qi_columns: fragment.qi.len(),
    };
    let mut tables = vec![ReleaseTable {
        name,
        batch,
        primary_key: Vec::new(),
        foreign_keys: Vec::new(),
    }];
    if let Some(sets) = &fragment.sets {
        tables.push(class_sets(plan, nodes, f, i, sets, class_name)?);
    }
    Ok(OneFragment {
        tables,
        stats: vec![stats],
        keys: None,
        others: built.others,
        children: Vec::new(),
        source,
    })
}

/// A fragment's table sorted by its content (S3), and the source row of each sorted row.
/// The source row rides along as the last sort column: it breaks ties only between rows of
/// equal content, which no reader can tell apart, and is then taken off.
fn sorted_with_provenance(
    mut fields: Vec<Field>,
    mut columns: Vec<ArrayRef>,
    rows: &[u32],
) -> Result<(RecordBatch, Vec<u32>), ReleaseError> {
    fields.push(Field::new(PROVENANCE, DataType::UInt32, false));
    columns.push(Arc::new(UInt32Array::from(rows.to_vec())));
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).map_err(internal)?;
    let mut batch = sort_by_key(batch, std::iter::empty(), true)?;
    let last = batch.num_columns() - 1;
    let source = take_provenance(&mut batch, last)?;
    Ok((batch, source))
}

/// The provenance column (at `at`) taken off `batch`: each released row's source row.
fn take_provenance(batch: &mut RecordBatch, at: usize) -> Result<Vec<u32>, ReleaseError> {
    let source = batch
        .column(at)
        .as_any()
        .downcast_ref::<UInt32Array>()
        .ok_or_else(|| internal("the provenance column changed type"))?
        .values()
        .to_vec();
    batch.remove_column(at);
    Ok(source)
}

/// The class's column name.
fn class_column(nodes: &TableNodes, f: &Fragmentation) -> Result<String, ReleaseError> {
    let column = nodes
        .sensitive
        .get(f.class)
        .ok_or_else(|| internal("the fragmentation's class is not a sensitive column"))?;
    Ok(column.name_in(&nodes.name).to_string())
}

/// One fragment's columns, in source order, with the loss of its QI cells.
struct Built {
    fields: Vec<Field>,
    columns: Vec<ArrayRef>,
    others: Vec<String>,
    lm_by_column: Vec<(String, f64)>,
}

/// Fragment `i`'s released columns over its kept `rows`: its QI columns as labels, the class
/// as repaired (a source value of that class, so its type and text are the source's), and
/// the SENSITIVE and INSENSITIVE columns placed in it; keys and identifiers never.
fn columns(
    plan: &Plan,
    nodes: &TableNodes,
    f: &Fragmentation,
    i: usize,
    rows: &[u32],
    class_name: &str,
) -> Result<Built, ReleaseError> {
    let fragment = &f.fragments[i];
    let take_rows = UInt32Array::from(rows.to_vec());
    let mut out = Built {
        fields: Vec::new(),
        columns: Vec::new(),
        others: if fragment.sets.is_some() {
            Vec::new()
        } else {
            vec![class_name.to_string()]
        },
        lm_by_column: Vec::new(),
    };
    let mut qi_index = 0;
    for col in &plan.tables[0].columns {
        let at = nodes.batch.schema().index_of(&col.name).map_err(internal)?;
        let field = nodes.batch.schema().field(at).clone();
        match &col.role {
            ColumnRole::QuasiIdentifier { .. } => {
                let q = qi_index;
                qi_index += 1;
                if let Some(j) = fragment.qi.iter().position(|&x| x == q) {
                    let (labels, loss) = qi_labels(nodes, fragment, q, j, rows);
                    out.fields.push(Field::new(
                        &col.name,
                        DataType::Utf8,
                        labels.null_count() > 0,
                    ));
                    out.columns.push(Arc::new(labels));
                    out.lm_by_column.push((col.name.clone(), loss));
                }
            }
            _ if col.name == class_name && fragment.sets.is_some() => {}
            _ if col.name == class_name => {
                let source = class_rows(nodes, f, fragment, rows)?;
                let values = take(nodes.batch.column(at), &source, None).map_err(internal)?;
                out.fields.push(field);
                out.columns.push(values);
            }
            ColumnRole::Sensitive { .. } | ColumnRole::Insensitive if f.placement[at] == i => {
                let values = take(nodes.batch.column(at), &take_rows, None).map_err(internal)?;
                out.fields.push(field);
                out.columns.push(values);
                out.others.push(col.name.clone());
            }
            _ => {}
        }
    }
    Ok(out)
}

/// QI column `q` (the fragment's `j`-th) of the kept `rows` as labels, and its summed loss.
fn qi_labels(
    nodes: &TableNodes,
    fragment: &Fragment,
    q: usize,
    j: usize,
    rows: &[u32],
) -> (StringArray, f64) {
    let h = &nodes.hierarchies[q];
    let nqi = fragment.qi.len();
    let codes = &fragment.generalization.codes[0];
    let mut sum = 0.0;
    let labels = rows
        .iter()
        .map(|&r| {
            let code = codes[r as usize * nqi + j];
            sum += h.loss(code);
            h.label(code)
        })
        .collect();
    (labels, sum)
}

/// For each kept row, a source row whose class is the one the fragment publishes for it:
/// the class cell is then a source value, typed as the source types it.
fn class_rows(
    nodes: &TableNodes,
    f: &Fragmentation,
    fragment: &Fragment,
    rows: &[u32],
) -> Result<UInt32Array, ReleaseError> {
    let codes: Vec<u32> = rows.iter().map(|&r| fragment.class[r as usize]).collect();
    holders_of(nodes, f, &codes)
}

/// A source row holding each class code of `codes`.
fn holders_of(
    nodes: &TableNodes,
    f: &Fragmentation,
    codes: &[u32],
) -> Result<UInt32Array, ReleaseError> {
    let source = &nodes.sensitive[f.class].codes;
    let mut holder: Vec<Option<u32>> = vec![None; nodes.sensitive[f.class].labels.len()];
    for (r, &c) in source.iter().enumerate() {
        holder[c as usize].get_or_insert(r as u32);
    }
    codes
        .iter()
        .map(|&c| {
            holder
                .get(c as usize)
                .copied()
                .flatten()
                .ok_or_else(|| internal(format!("class code {c} is no source row's")))
        })
        .collect::<Result<Vec<u32>, _>>()
        .map(UInt32Array::from)
}

/// Fragment `i`'s class sets (004 Sec. 4.2.4, spec D17: a table of its own, never padded
/// rows): per equivalence class its QI labels and one row per class it publishes, sorted by
/// content.
fn class_sets(
    plan: &Plan,
    nodes: &TableNodes,
    f: &Fragmentation,
    i: usize,
    sets: &[Vec<u32>],
    class_name: &str,
) -> Result<ReleaseTable, ReleaseError> {
    let fragment = &f.fragments[i];
    // One row per (EC, class): an EC's first row stands for its labels.
    let mut firsts: Vec<u32> = Vec::new();
    let mut codes: Vec<u32> = Vec::new();
    for (rows, set) in fragment.ecs.iter().zip(sets) {
        let first = *rows
            .first()
            .ok_or_else(|| internal("an empty equivalence class"))?;
        for &c in set {
            firsts.push(first);
            codes.push(c);
        }
    }
    let mut fields = Vec::new();
    let mut columns: Vec<ArrayRef> = Vec::new();
    let qi_names: Vec<&str> = plan.tables[0].qi_columns().map(|(c, _)| c).collect();
    for (j, &q) in fragment.qi.iter().enumerate() {
        let (labels, _) = qi_labels(nodes, fragment, q, j, &firsts);
        fields.push(Field::new(
            qi_names[q],
            DataType::Utf8,
            labels.null_count() > 0,
        ));
        columns.push(Arc::new(labels));
    }
    let at = nodes
        .batch
        .schema()
        .index_of(class_name)
        .map_err(internal)?;
    let values =
        take(nodes.batch.column(at), &holders_of(nodes, f, &codes)?, None).map_err(internal)?;
    fields.push(nodes.batch.schema().field(at).clone());
    columns.push(values);
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).map_err(internal)?;
    Ok(ReleaseTable {
        name: class_sets_table_name(&plan.tables[0].name, i),
        batch: sort_by_key(batch, std::iter::empty(), true)?,
        primary_key: Vec::new(),
        foreign_keys: Vec::new(),
    })
}

/// Global recoding's levels per QI column where a fragment's base recodes globally.
fn recoding(qi_names: &[&str], table: &str, fragments: &[Fragment]) -> Vec<(String, u16, u16)> {
    let mut out = Vec::new();
    for fragment in fragments {
        if let Some(levels) = &fragment.generalization.levels {
            for (&q, &(level, height)) in fragment.qi.iter().zip(levels) {
                out.push((format!("{table}.{}", qi_names[q]), level, height));
            }
        }
    }
    out.sort();
    out
}

/// Layout A's anchor (spec Sec. 4.2): the family released as a generalized one, from a plan
/// whose entity table publishes only the anchor's QI columns, the class as repaired and
/// the columns placed in it; then named `<t>__f1`, with the children's FKs pointing to it.
/// The source row rides along as a column of the entity rows, as in a key-less fragment.
fn anchor(
    plan: &Plan,
    forest: &Forest,
    f: &Fragmentation,
    class_name: &str,
) -> Result<OneFragment, ReleaseError> {
    let fragment = &f.fragments[0];
    let entity = &plan.tables[0].name;
    let (anchor_plan, others) = anchor_plan(plan, f, class_name);
    let keep: Vec<Vec<usize>> = forest
        .tables
        .iter()
        .enumerate()
        .map(|(t, nodes)| match t {
            0 => fragment.qi.clone(),
            _ => (0..nodes.nqi()).collect(),
        })
        .collect();
    let mut projected = forest.project(&keep).map_err(internal)?;
    let nodes = &mut projected.tables[0];
    let class_source = class_rows(&forest.tables[0], f, fragment, &all_rows(nodes.rows()))?;
    nodes.batch = with_anchor_columns(&nodes.batch, class_name, &class_source)?;
    let mut released =
        super::family::tables(&anchor_plan, &projected, &fragment.generalization, None)?;
    let name = fragment_table_name(entity, 0);
    let mut source = Vec::new();
    for table in &mut released.tables {
        if table.name == *entity {
            let at = table
                .batch
                .schema()
                .index_of(PROVENANCE)
                .map_err(internal)?;
            source = take_provenance(&mut table.batch, at)?;
            table.name = name.clone();
        }
        for fk in &mut table.foreign_keys {
            if fk.ref_table == *entity {
                fk.ref_table = name.clone();
            }
        }
    }
    for s in &mut released.stats {
        if s.name == *entity {
            s.name = name.clone();
        }
    }
    let children = plan.child_tables().into_iter().map(String::from).collect();
    Ok(OneFragment {
        tables: released.tables,
        stats: released.stats,
        keys: Some(released.keys),
        others,
        children,
        source,
    })
}

/// The plan the anchor is released by: its entity table publishes the anchor's QI columns,
/// the class and the columns placed in fragment 1 (the rest as left out), and the source
/// row last; with the names of the entity columns besides the QIs it publishes.
fn anchor_plan(plan: &Plan, f: &Fragmentation, class_name: &str) -> (Plan, Vec<String>) {
    let fragment = &f.fragments[0];
    let mut anchor = plan.clone();
    let entity = &mut anchor.tables[0];
    let mut others = vec![class_name.to_string()];
    let mut q = 0;
    for (at, col) in entity.columns.iter_mut().enumerate() {
        match col.role {
            ColumnRole::QuasiIdentifier { .. } => {
                if !fragment.qi.contains(&q) {
                    col.role = ColumnRole::Identifier;
                }
                q += 1;
            }
            _ if col.name == class_name => {}
            ColumnRole::Sensitive { .. } | ColumnRole::Insensitive => {
                if f.placement[at] == 0 {
                    others.push(col.name.clone());
                } else {
                    col.role = ColumnRole::Identifier;
                }
            }
            _ => {}
        }
    }
    entity.columns.push(PlannedColumn {
        name: PROVENANCE.to_string(),
        role: ColumnRole::Insensitive,
    });
    (anchor, others)
}

fn all_rows(n: usize) -> Vec<u32> {
    (0..n as u32).collect()
}

/// The entity rows with the class as the anchor publishes it (a source row of each class,
/// so the cell is typed as the source's) and the source row appended.
fn with_anchor_columns(
    batch: &RecordBatch,
    class_name: &str,
    class_source: &UInt32Array,
) -> Result<RecordBatch, ReleaseError> {
    let at = batch.schema().index_of(class_name).map_err(internal)?;
    let mut columns = batch.columns().to_vec();
    columns[at] = take(batch.column(at), class_source, None).map_err(internal)?;
    columns.push(Arc::new(UInt32Array::from(all_rows(batch.num_rows()))));
    let mut fields: Vec<Field> = batch
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields.push(Field::new(PROVENANCE, DataType::UInt32, false));
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).map_err(internal)
}
