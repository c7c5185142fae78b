//! Materializing a release (the contract in DESIGN.md): publishes each kept row with the
//! generalized QI codes its algorithm gave it, leaves suppressed rows out, writes QI cells as
//! hierarchy labels, drops IDENTIFIER columns, pseudonymizes join keys and sorts rows by
//! released key. Produces Arrow tables for the writer and the key map for the verifier; does
//! no I/O itself.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, Int64Array, StringArray, UInt32Array};
use arrow::compute::{lexsort_to_indices, take_record_batch, SortColumn};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::algo::output::NO_GROUP;
use crate::algo::{Generalization, Output};
use crate::forest::{Forest, TableNodes};
use crate::keymap::{KeyMap, KeyPair, KeyValue, TableKeys};
use crate::plan::{ColumnRole, KeyPolicy, Plan, RedundantFk, ReleasedKey};
use crate::warehouse::{render_value, ForeignKey, ReleaseTable};

#[derive(Debug, thiserror::Error)]
#[error("building the release failed: {0}")]
pub struct ReleaseError(String);

fn internal(e: impl std::fmt::Display) -> ReleaseError {
    ReleaseError(e.to_string())
}

/// What one family table lost.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TableStats {
    pub name: String,
    pub rows_in: usize,
    pub released: usize,
    pub suppressed: usize,
    pub orphans_dropped: usize,
    /// Source rows left out for having no parent (a NULL FK), with their descendants.
    pub no_parent: usize,
    /// 001 Def. 8 numerator over this table's released QI cells.
    pub lm_sum: f64,
    /// The same numerator per QI column (name, sum), in source column order: shows which
    /// column paid for the table's loss.
    pub lm_sum_by_column: Vec<(String, f64)>,
    pub qi_columns: usize,
}

/// The materialized family tables with their key map and per-table statistics.
pub struct Materialized {
    pub tables: Vec<ReleaseTable>,
    pub keys: KeyMap,
    pub stats: Vec<TableStats>,
    /// Size of every EC, in EC order.
    pub ec_sizes: Vec<usize>,
    pub suppressed_entities: usize,
    /// Global recoding's node, per QI column `table.column`: (level, height).
    pub recoding: Vec<(String, u16, u16)>,
}

/// Builds the release tables from what the algorithm produced; `plan.params.seed` (or the OS)
/// drives the key surrogates.
pub fn materialize(
    plan: &Plan,
    forest: &Forest,
    output: &Output,
) -> Result<Materialized, ReleaseError> {
    match output {
        Output::Generalized(g) => generalized(plan, forest, g, None),
        Output::Anatomized(a) => anatomized(plan, forest, a),
    }
}

/// What the QI side of an anatomy adds to each family table (000 Sec. 3.2, spec D10): every
/// kept row's released slot id, and the entity rows' group id. Both are drawn at random, so
/// neither ranks groups by entity key or slots by depth.
struct QiSide {
    /// `slot[t][row]`, for kept rows.
    slot: Vec<Vec<i64>>,
    /// `group[row]` of the entity table, for kept rows.
    group: Vec<i64>,
}

/// Stream numbers of the draws that are not a table's keys (tables use their index).
const SLOT_STREAM: u64 = u64::MAX - 1;
const GROUP_STREAM: u64 = u64::MAX - 2;
/// `SA_KEY_STREAM - t`: the SA side's keys of table `t`, drawn apart from its QI keys.
const SA_KEY_STREAM: u64 = u64::MAX - 1024;

/// An anatomy: the family tables as the QI side (exact QI values, no SA column, `slot` and
/// the entity table's `group_id` added, keys as the plan says), then the SA side: t-t's
/// `<t>__sa` trees or v-v's counted `<t>__sag` groups.
fn anatomized(
    plan: &Plan,
    forest: &Forest,
    a: &crate::algo::Anatomization,
) -> Result<Materialized, ReleaseError> {
    let slot_ids = shuffled(plan, SLOT_STREAM, a.slots());
    let group_ids = shuffled(plan, GROUP_STREAM, a.anatomy.groups.len());
    let released = |id: u32, ids: &[i64]| {
        if id == NO_GROUP {
            0
        } else {
            ids[id as usize]
        }
    };
    let qi = QiSide {
        slot: a
            .slot_of
            .iter()
            .map(|rows| rows.iter().map(|&s| released(s, &slot_ids)).collect())
            .collect(),
        group: a
            .group_of
            .iter()
            .map(|&g| released(g, &group_ids))
            .collect(),
    };
    // The QI side is the family released as a generalization that keeps every leaf.
    let g = Generalization {
        kept: a.kept.clone(),
        ec_sizes: a.anatomy.groups.iter().map(|g| g.members.len()).collect(),
        suppressed_entities: a.anatomy.suppressed.len(),
        ..Generalization::empty(forest)
    };
    let mut m = generalized(plan, forest, &g, Some(&qi))?;
    match a.variant {
        crate::plan::Variant::TreeTree => sa_trees(plan, forest, a, &qi, &mut m.tables)?,
        crate::plan::Variant::VertexVertex => sa_groups(plan, forest, a, &qi, &mut m.tables)?,
    }
    Ok(m)
}

/// Plan entries whose `<t>__sa` table t-t publishes: those with a SENSITIVE column, and their
/// ancestors (an SA-tree's edges pass through SA-less tables).
fn sa_tree_tables(plan: &Plan) -> Vec<bool> {
    let mut needed: Vec<bool> = plan
        .tables
        .iter()
        .map(|t| {
            t.columns
                .iter()
                .any(|c| matches!(c.role, ColumnRole::Sensitive { .. }))
        })
        .collect();
    for ti in (0..plan.tables.len()).rev() {
        if needed[ti] {
            if let Some(p) = plan.tables[ti].parent {
                needed[p] = true;
            }
        }
    }
    needed
}

/// The SENSITIVE columns of plan entry `ti`: (batch column index, name).
fn sensitive_columns(plan: &Plan, ti: usize) -> Vec<(usize, String)> {
    plan.tables[ti]
        .columns
        .iter()
        .enumerate()
        .filter(|(_, c)| matches!(c.role, ColumnRole::Sensitive { .. }))
        .map(|(i, c)| (i, c.name.clone()))
        .collect()
}

/// The source values of the SENSITIVE columns `sa` at `rows`, appended as released columns.
fn append_sensitive(
    nodes: &TableNodes,
    sa: &[(usize, String)],
    rows: &[u32],
    fields: &mut Vec<Field>,
    columns: &mut Vec<ArrayRef>,
) -> Result<(), ReleaseError> {
    let take = UInt32Array::from(rows.to_vec());
    for (ci, name) in sa {
        let values = arrow::compute::take(nodes.batch.column(*ci).as_ref(), &take, None)
            .map_err(internal)?;
        fields.push(Field::new(name, values.data_type().clone(), true));
        columns.push(values);
    }
    Ok(())
}

/// t-t's SA side: per table, one row per kept vertex with a fresh key `sa_id` (its own
/// permutation, never the QI side's), the parent vertex's `parent_sa_id` (the entity
/// table's rows carry `group_id` instead), `slot`, and the source SA values; rows in key
/// order, which is random.
fn sa_trees(
    plan: &Plan,
    forest: &Forest,
    a: &crate::algo::Anatomization,
    qi: &QiSide,
    tables: &mut Vec<ReleaseTable>,
) -> Result<(), ReleaseError> {
    let needed = sa_tree_tables(plan);
    let mut sa_ids: Vec<Vec<i64>> = Vec::with_capacity(plan.tables.len());
    for (ti, (ft, nodes)) in plan.tables.iter().zip(&forest.tables).enumerate() {
        let rows: Vec<u32> = (0..nodes.rows() as u32)
            .filter(|&r| a.kept[ti][r as usize])
            .collect();
        let mut own = vec![0i64; nodes.rows()];
        for (&r, id) in rows
            .iter()
            .zip(shuffled(plan, SA_KEY_STREAM - ti as u64, rows.len()))
        {
            own[r as usize] = id;
        }
        if !needed[ti] {
            sa_ids.push(own);
            continue;
        }
        let mut fields = vec![Field::new("sa_id", DataType::Int64, false)];
        let mut columns: Vec<ArrayRef> = vec![Arc::new(Int64Array::from(
            rows.iter().map(|&r| own[r as usize]).collect::<Vec<_>>(),
        ))];
        let mut foreign_keys = Vec::new();
        match ft.parent {
            None => {
                fields.push(Field::new("group_id", DataType::Int64, false));
                columns.push(Arc::new(Int64Array::from(
                    rows.iter()
                        .map(|&r| qi.group[r as usize])
                        .collect::<Vec<_>>(),
                )));
            }
            Some(p) => {
                fields.push(Field::new("parent_sa_id", DataType::Int64, false));
                columns.push(Arc::new(Int64Array::from(
                    rows.iter()
                        .map(|&r| sa_ids[p][nodes.parent[r as usize] as usize])
                        .collect::<Vec<_>>(),
                )));
                foreign_keys.push(ForeignKey {
                    columns: vec!["parent_sa_id".into()],
                    ref_table: sa_table_name(&plan.tables[p].name),
                    ref_columns: vec!["sa_id".into()],
                });
            }
        }
        fields.push(Field::new("slot", DataType::Int64, false));
        columns.push(Arc::new(Int64Array::from(
            rows.iter()
                .map(|&r| qi.slot[ti][r as usize])
                .collect::<Vec<_>>(),
        )));
        let sa = sensitive_columns(plan, ti);
        append_sensitive(nodes, &sa, &rows, &mut fields, &mut columns)?;
        let batch =
            RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).map_err(internal)?;
        let key = ["sa_id".to_string()];
        let batch = sort_by_key(batch, key.iter(), false)?;
        tables.push(ReleaseTable {
            name: sa_table_name(&ft.name),
            batch,
            primary_key: vec!["sa_id".into()],
            foreign_keys,
        });
        sa_ids.push(own);
    }
    Ok(())
}

/// v-v's SA side: per table with SENSITIVE columns, one row per distinct SA tuple of a slot
/// with its `count`; no keys, rows sorted by slot and values.
fn sa_groups(
    plan: &Plan,
    forest: &Forest,
    a: &crate::algo::Anatomization,
    qi: &QiSide,
    tables: &mut Vec<ReleaseTable>,
) -> Result<(), ReleaseError> {
    for (ti, (ft, nodes)) in plan.tables.iter().zip(&forest.tables).enumerate() {
        let sa = sensitive_columns(plan, ti);
        if sa.is_empty() {
            continue;
        }
        let mut tuples: Tuples = HashMap::new();
        for r in 0..nodes.rows() as u32 {
            if !a.kept[ti][r as usize] {
                continue;
            }
            let values = sa
                .iter()
                .map(|&(ci, _)| render_value(nodes.batch.column(ci).as_ref(), r as usize))
                .collect();
            tuples
                .entry((qi.slot[ti][r as usize], values))
                .or_insert((r, 0))
                .1 += 1;
        }
        let mut entries: Vec<(i64, u32, i64)> = tuples
            .into_iter()
            .map(|((slot, _), (row, count))| (slot, row, count))
            .collect();
        entries.sort_unstable();
        let mut fields = vec![Field::new("slot", DataType::Int64, false)];
        let mut columns: Vec<ArrayRef> = vec![Arc::new(Int64Array::from(
            entries.iter().map(|e| e.0).collect::<Vec<_>>(),
        ))];
        let held: Vec<u32> = entries.iter().map(|e| e.1).collect();
        append_sensitive(nodes, &sa, &held, &mut fields, &mut columns)?;
        fields.push(Field::new("count", DataType::Int64, false));
        columns.push(Arc::new(Int64Array::from(
            entries.iter().map(|e| e.2).collect::<Vec<_>>(),
        )));
        let batch =
            RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).map_err(internal)?;
        // Slot first, then the values: the order says nothing the rows do not.
        let batch = sort_by_key(batch, std::iter::empty(), true)?;
        tables.push(ReleaseTable {
            name: sa_group_table_name(&ft.name),
            batch,
            primary_key: Vec::new(),
            foreign_keys: Vec::new(),
        });
    }
    Ok(())
}

/// (slot, rendered SA values) -> (a row holding them, how many).
type Tuples = HashMap<(i64, Vec<Option<String>>), (u32, i64)>;

/// t-t's SA-side table of family table `t`.
pub fn sa_table_name(t: &str) -> String {
    format!("{t}__sa")
}

/// v-v's SA-side table of family table `t`.
pub fn sa_group_table_name(t: &str) -> String {
    format!("{t}__sag")
}

/// The family tables with generalized rows: kept rows with their codes' labels, keys drawn.
fn generalized(
    plan: &Plan,
    forest: &Forest,
    generalization: &Generalization,
    anatomy: Option<&QiSide>,
) -> Result<Materialized, ReleaseError> {
    let Generalization { kept, codes, .. } = generalization;
    // surrogate[t][row]: the released one-column integer key of a kept row, for tables whose
    // released key is one (see `released_ints`).
    let mut surrogate: Vec<Option<Vec<Option<i64>>>> = Vec::with_capacity(forest.tables.len());
    let mut tables = Vec::new();
    let mut stats = Vec::new();
    let mut keys = KeyMap::default();
    let mut reserved: HashMap<usize, Vec<i64>> = HashMap::new();
    for (ti, (ft, nodes)) in plan.tables.iter().zip(&forest.tables).enumerate() {
        let rows: Vec<u32> = (0..nodes.rows() as u32)
            .filter(|&r| kept[ti][r as usize])
            .collect();
        let kept_elsewhere = ft
            .part
            .as_ref()
            .filter(|p| !p.null_side)
            .map_or(0, |p| kept[p.other].iter().filter(|&&k| k).count());
        let own = released_ints(
            plan,
            ti,
            &rows,
            nodes,
            &surrogate,
            &mut reserved,
            kept_elsewhere,
        );
        let Released {
            batch,
            lm_sum,
            lm_sum_by_column,
        } = release_rows(
            plan,
            forest,
            ti,
            &rows,
            Cells {
                codes: &codes[ti],
                anatomy,
            },
            own.as_ref(),
            &surrogate,
        )?;
        let nqi = nodes.nqi();
        let released_pk = ft.released_pk();
        let batch = sort_by_key(
            batch,
            released_pk.iter().chain(&ft.released_fk),
            released_pk.is_empty(),
        )?;
        surrogate.push(own);
        if !ft.primary_key.is_empty() {
            let pairs = key_pairs(
                plan,
                ti,
                &nodes.batch,
                &rows,
                &surrogate,
                &generalization.groups[ti],
            )?;
            // The two entries of a split table share one released table and one entry here.
            match keys.tables.get_mut(&ft.name) {
                Some(entry) => entry.pairs.extend(pairs.pairs),
                None => {
                    keys.tables.insert(ft.name.clone(), pairs);
                }
            }
        }
        let mut foreign_keys = Vec::new();
        if let Some(p) = ft.parent {
            foreign_keys.push(ForeignKey {
                columns: ft.released_fk.clone(),
                ref_table: plan.tables[p].name.clone(),
                ref_columns: ft.released_parent_key.clone(),
            });
        }
        foreign_keys.extend(ft.redundant.iter().map(|r| ForeignKey {
            columns: r.released_columns.clone(),
            ref_table: plan.tables[r.ancestor].name.clone(),
            ref_columns: r.released_ancestor_key.clone(),
        }));
        foreign_keys.extend(ft.links.iter().cloned());
        stats.push(TableStats {
            name: ft.name.clone(),
            rows_in: nodes.rows_in,
            released: rows.len(),
            suppressed: nodes.rows() - rows.len(),
            orphans_dropped: nodes.orphans_dropped,
            no_parent: nodes.no_parent,
            lm_sum,
            lm_sum_by_column,
            qi_columns: nqi,
        });
        tables.push(ReleaseTable {
            name: ft.name.clone(),
            batch,
            primary_key: released_pk,
            foreign_keys,
        });
    }
    merge_parts(plan, &mut tables, &mut stats)?;
    Ok(Materialized {
        tables,
        keys,
        stats,
        ec_sizes: generalization.ec_sizes.clone(),
        suppressed_entities: generalization.suppressed_entities,
        recoding: recoding(plan, generalization),
    })
}

/// Global recoding's levels named by their columns (a split table's two plan entries, which
/// hang at different parents, are searched as two sets of columns and named twice).
fn recoding(plan: &Plan, g: &Generalization) -> Vec<(String, u16, u16)> {
    let Some(levels) = &g.levels else {
        return Vec::new();
    };
    let names = plan
        .tables
        .iter()
        .flat_map(|t| t.qi_columns().map(move |(c, _)| format!("{}.{c}", t.name)));
    names
        .zip(levels)
        .map(|(name, &(level, height))| (name, level, height))
        .collect()
}

/// One table's kept rows as released, before sorting, with the loss its QI cells carry.
struct Released {
    batch: RecordBatch,
    /// 001 Def. 8 numerator over the table's released QI cells.
    lm_sum: f64,
    lm_sum_by_column: Vec<(String, f64)>,
}

/// A second FK path's released values for the kept `rows`: the ancestor's released key read
/// up the tree (the forest checked that both paths agree). `original` holds the kept rows'
/// source values in order: a NULL second FK stays NULL, since it claimed nothing.
fn second_path_keys(
    plan: &Plan,
    forest: &Forest,
    ti: usize,
    rows: &[u32],
    second: &RedundantFk,
    ancestor_keys: &[Option<i64>],
    original: &ArrayRef,
) -> Vec<Option<i64>> {
    let up = ancestor_rows(plan, forest, ti, second.ancestor);
    rows.iter()
        .enumerate()
        .map(|(i, &row)| {
            if original.is_null(i) {
                None
            } else {
                ancestor_keys[up[row as usize] as usize]
            }
        })
        .collect()
}

/// The labels of QI column `qi` (the table's `qi`-th) for the kept `rows`, and their summed
/// loss (LM' of 001 Def. 8), each loss also added to the table's `total` row by row (the
/// report's sums are the same to the last bit for the same release).
fn qi_labels(
    nodes: &TableNodes,
    rows: &[u32],
    codes: &[u32],
    qi: usize,
    total: &mut f64,
) -> (StringArray, f64) {
    let h = &nodes.hierarchies[qi];
    let nqi = nodes.nqi();
    let mut sum = 0.0;
    let labels = rows
        .iter()
        .map(|&r| {
            let code = codes[r as usize * nqi + qi];
            let loss = h.loss(code);
            *total += loss;
            sum += loss;
            h.label(code)
        })
        .collect();
    (labels, sum)
}

/// What a table's QI cells are released as: generalized codes, or under anatomy the source
/// values beside the slot (and group) ids.
struct Cells<'a> {
    codes: &'a [u32],
    anatomy: Option<&'a QiSide>,
}

/// The released columns of table `ti`'s kept `rows`: keys as the plan says (own pseudonyms
/// `own`, the parent's or an ancestor's from `surrogate`, a surrogate column first), QI cells
/// as hierarchy labels, identifiers left out, other cells as the source holds them.
fn release_rows(
    plan: &Plan,
    forest: &Forest,
    ti: usize,
    rows: &[u32],
    cells: Cells<'_>,
    own: Option<&Vec<Option<i64>>>,
    surrogate: &[Option<Vec<Option<i64>>>],
) -> Result<Released, ReleaseError> {
    let Cells { codes, anatomy } = cells;
    let ft = &plan.tables[ti];
    let nodes = &forest.tables[ti];
    let pseudonymize = plan.params.keys == KeyPolicy::Pseudonymize;
    let take = UInt32Array::from(rows.to_vec());
    let source = take_record_batch(&nodes.batch, &take).map_err(internal)?;
    let mut fields = Vec::new();
    let mut columns: Vec<ArrayRef> = Vec::new();
    let mut qi_index = 0;
    let nqi = nodes.nqi();
    let mut lm_sum = 0.0;
    let mut lm_sum_by_column = Vec::with_capacity(nqi);
    let parent_ints = ft.parent.and_then(|p| surrogate[p].as_ref());
    let int_column = |name: &str, values: Vec<Option<i64>>| {
        (
            Field::new(name, DataType::Int64, false),
            Arc::new(Int64Array::from(values)) as ArrayRef,
        )
    };
    if let ReleasedKey::Surrogate(name) = &ft.key {
        let own = own.as_ref().ok_or_else(|| {
            internal(format!(
                "table {} has a surrogate key but no values",
                ft.name
            ))
        })?;
        let (f, c) = int_column(name, rows.iter().map(|&r| own[r as usize]).collect());
        fields.push(f);
        columns.push(c);
    }
    let mut fk_done = false;
    let mut redundant_done: Vec<usize> = Vec::new();
    for (ci, col) in ft.columns.iter().enumerate() {
        let original = source.column(ci);
        let field = source.schema().field(ci).clone();
        let in_fk = ft.parent_fk.contains(&col.name);
        let second = ft
            .redundant
            .iter()
            .enumerate()
            .find(|(_, r)| r.columns.contains(&col.name));
        // The main entry's FK, NULL in a second entry's rows: filled in when the two are
        // merged.
        let absent = ft
            .part
            .as_ref()
            .is_some_and(|p| p.null_side && p.split_source.contains(&col.name));
        match &col.role {
            ColumnRole::Identifier => continue,
            _ if absent => continue,
            // A second path to an ancestor: the ancestor's released key, read up the
            // tree (the forest checked that both paths agree).
            ColumnRole::Key if second.is_some() => {
                let (i, r) = second.expect("checked by the guard");
                if r.replaced() && redundant_done.contains(&i) {
                    continue;
                }
                redundant_done.push(i);
                match surrogate[r.ancestor].as_ref() {
                    Some(ints) => {
                        let name = if r.replaced() {
                            &r.released_columns[0]
                        } else {
                            &col.name
                        };
                        let values = second_path_keys(plan, forest, ti, rows, r, ints, original);
                        fields.push(Field::new(name, DataType::Int64, true));
                        columns.push(Arc::new(Int64Array::from(values)));
                    }
                    None => {
                        fields.push(field);
                        columns.push(original.clone());
                    }
                }
            }
            // The reference to a parent with an integer key: its pseudonym, in place, or in
            // one column in place of the FK's columns when the parent is keyed by a surrogate.
            ColumnRole::Key if in_fk && (ft.fk_replaced() || parent_ints.is_some()) => {
                if fk_done {
                    continue;
                }
                fk_done = ft.fk_replaced();
                let ints = parent_ints.ok_or_else(|| {
                    internal(format!(
                        "the parent of {} has no released key values",
                        ft.name
                    ))
                })?;
                let values = rows
                    .iter()
                    .map(|&r| ints[nodes.parent[r as usize] as usize])
                    .collect();
                let name = if ft.fk_replaced() {
                    &ft.released_fk[0]
                } else {
                    &col.name
                };
                let (f, c) = int_column(name, values);
                fields.push(f);
                columns.push(c);
            }
            ColumnRole::Key if !in_fk && pseudonymize => {
                let own = own.as_ref().ok_or_else(|| {
                    internal(format!(
                        "key {}.{} has no released values",
                        ft.name, col.name
                    ))
                })?;
                let (f, c) = int_column(&col.name, rows.iter().map(|&r| own[r as usize]).collect());
                fields.push(f);
                columns.push(c);
            }
            // Anatomy publishes QI values exactly and sensitive ones on the SA side only.
            ColumnRole::Sensitive { .. } if anatomy.is_some() => continue,
            ColumnRole::QuasiIdentifier { .. } if anatomy.is_some() => {
                lm_sum_by_column.push((col.name.clone(), 0.0));
                qi_index += 1;
                fields.push(field);
                columns.push(original.clone());
            }
            ColumnRole::QuasiIdentifier { .. } => {
                let (labels, column_sum) = qi_labels(nodes, rows, codes, qi_index, &mut lm_sum);
                lm_sum_by_column.push((col.name.clone(), column_sum));
                qi_index += 1;
                fields.push(Field::new(&col.name, DataType::Utf8, true));
                columns.push(Arc::new(labels));
            }
            _ => {
                fields.push(field);
                columns.push(original.clone());
            }
        }
    }
    if let Some(side) = anatomy {
        // Only entity rows carry their group; every row carries its slot.
        if ti == 0 {
            let (f, c) = int_column(
                "group_id",
                rows.iter().map(|&r| Some(side.group[r as usize])).collect(),
            );
            fields.push(f);
            columns.push(c);
        }
        let (f, c) = int_column(
            "slot",
            rows.iter()
                .map(|&r| Some(side.slot[ti][r as usize]))
                .collect(),
        );
        fields.push(f);
        columns.push(c);
    }
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(schema, columns).map_err(internal)?;
    Ok(Released {
        batch,
        lm_sum,
        lm_sum_by_column,
    })
}

/// Appends each split table's second entry (plan::Part) to its main entry's table and
/// statistics, the main entry's FK NULL in its rows, and drops the second entries.
fn merge_parts(
    plan: &Plan,
    tables: &mut Vec<ReleaseTable>,
    stats: &mut Vec<TableStats>,
) -> Result<(), ReleaseError> {
    for (ti, ft) in plan.tables.iter().enumerate() {
        let Some(main) = ft.part.as_ref().filter(|p| p.null_side).map(|p| p.other) else {
            continue;
        };
        let second = tables[ti].batch.clone();
        let first = tables[main].batch.clone();
        let mut fields = Vec::with_capacity(first.num_columns());
        let mut tails = Vec::with_capacity(first.num_columns());
        for f in first.schema().fields() {
            let tail = match second.schema().index_of(f.name()) {
                Ok(i) => arrow::compute::cast(second.column(i), f.data_type()).map_err(internal)?,
                Err(_) => arrow::array::new_null_array(f.data_type(), second.num_rows()),
            };
            let nullable = f.is_nullable() || tail.null_count() > 0;
            fields.push(Field::new(f.name(), f.data_type().clone(), nullable));
            tails.push(tail);
        }
        let schema = Arc::new(Schema::new(fields));
        let head =
            RecordBatch::try_new(schema.clone(), first.columns().to_vec()).map_err(internal)?;
        let tail = RecordBatch::try_new(schema.clone(), tails).map_err(internal)?;
        let merged = arrow::compute::concat_batches(&schema, [&head, &tail]).map_err(internal)?;
        let main_ft = &plan.tables[main];
        let released_pk = main_ft.released_pk();
        tables[main].batch = sort_by_key(
            merged,
            released_pk.iter().chain(&main_ft.released_fk),
            released_pk.is_empty(),
        )?;
        let s = stats[ti].clone();
        let m = &mut stats[main];
        m.rows_in += s.rows_in;
        m.released += s.released;
        m.suppressed += s.suppressed;
        m.orphans_dropped += s.orphans_dropped;
        m.no_parent += s.no_parent;
        m.lm_sum += s.lm_sum;
        for ((_, sum), (_, more)) in m.lm_sum_by_column.iter_mut().zip(&s.lm_sum_by_column) {
            *sum += more;
        }
    }
    let second = |ti: usize| plan.tables[ti].part.as_ref().is_some_and(|p| p.null_side);
    let mut i = 0;
    tables.retain(|_| {
        i += 1;
        !second(i - 1)
    });
    let mut i = 0;
    stats.retain(|_| {
        i += 1;
        !second(i - 1)
    });
    Ok(())
}

/// Rows sorted by released key (then parent key); a table without a primary key is then
/// sorted by its content, so row order never carries source order.
fn sort_by_key<'a>(
    batch: RecordBatch,
    key: impl Iterator<Item = &'a String>,
    by_content: bool,
) -> Result<RecordBatch, ReleaseError> {
    let mut sort: Vec<SortColumn> = Vec::new();
    let mut used = Vec::new();
    for name in key {
        if let Ok(i) = batch.schema().index_of(name) {
            if !used.contains(&i) {
                used.push(i);
            }
        }
    }
    if by_content {
        for (i, f) in batch.schema().fields().iter().enumerate() {
            let sortable = f.data_type().is_primitive()
                || matches!(
                    f.data_type(),
                    DataType::Utf8 | DataType::LargeUtf8 | DataType::Boolean
                );
            if sortable && !used.contains(&i) {
                used.push(i);
            }
        }
    }
    for i in used {
        sort.push(SortColumn {
            values: batch.column(i).clone(),
            options: None,
        });
    }
    if sort.is_empty() || batch.num_rows() < 2 {
        return Ok(batch);
    }
    let idx = lexsort_to_indices(&sort, None).map_err(internal)?;
    take_record_batch(&batch, &idx).map_err(internal)
}

/// Per row of table `ti`, its ancestor row in table `ancestor` (up the forest's parent links).
fn ancestor_rows(plan: &Plan, forest: &Forest, ti: usize, ancestor: usize) -> Vec<u32> {
    let mut rows: Vec<u32> = (0..forest.tables[ti].rows() as u32).collect();
    let mut t = ti;
    while t != ancestor {
        let parents = &forest.tables[t].parent;
        for r in rows.iter_mut() {
            *r = parents[*r as usize];
        }
        match plan.tables[t].parent {
            Some(p) => t = p,
            None => break,
        }
    }
    rows
}

/// `ids` handed to the kept `rows`, indexed by row.
fn permutation(n_rows: usize, rows: &[u32], ids: Vec<i64>) -> Vec<Option<i64>> {
    let mut own = vec![None; n_rows];
    for (&r, id) in rows.iter().zip(ids) {
        own[r as usize] = Some(id);
    }
    own
}

/// `1..=n` shuffled by the key seed's `stream` (a table's index for its keys, or one of
/// anatomy's own streams; the OS without a seed): a pseudonym per row that is consistent per
/// key and says nothing about source order.
fn shuffled(plan: &Plan, stream: u64, n: usize) -> Vec<i64> {
    let mut ids: Vec<i64> = (1..=n as i64).collect();
    let mut rng = match plan.params.seed {
        Some(seed) => ChaCha8Rng::seed_from_u64(
            seed ^ 0x9E37_79B9_7F4A_7C15u64.wrapping_mul(stream.wrapping_add(1)),
        ),
        None => ChaCha8Rng::from_rng(&mut rand::rng()),
    };
    ids.shuffle(&mut rng);
    ids
}

/// The released one-column integer key of each row of table `ti`, when it has one: its own
/// pseudonym, its surrogate, or (shared primary key) its parent's. `None` when the released
/// key is the source's (`keys = 'preserve'`) or there is none.
fn released_ints(
    plan: &Plan,
    ti: usize,
    rows: &[u32],
    nodes: &crate::forest::TableNodes,
    surrogate: &[Option<Vec<Option<i64>>>],
    reserved: &mut HashMap<usize, Vec<i64>>,
    kept_elsewhere: usize,
) -> Option<Vec<Option<i64>>> {
    let ft = &plan.tables[ti];
    let pseudonymize = plan.params.keys == KeyPolicy::Pseudonymize;
    match &ft.key {
        ReleasedKey::None => None,
        ReleasedKey::Own(_) if !pseudonymize => None,
        ReleasedKey::Own(_) | ReleasedKey::Surrogate(_) => {
            // The two entries of a split table release into one table: the main entry draws
            // keys for both and leaves the second entry its share.
            let ids = match &ft.part {
                Some(p) if p.null_side => reserved.remove(&ti).unwrap_or_default(),
                Some(p) => {
                    let mut ids = shuffled(plan, ti as u64, rows.len() + kept_elsewhere);
                    reserved.insert(p.other, ids.split_off(rows.len()));
                    ids
                }
                None => shuffled(plan, ti as u64, rows.len()),
            };
            Some(permutation(nodes.rows(), rows, ids))
        }
        ReleasedKey::Parent => {
            let ints = surrogate[ft.parent?].as_ref()?;
            let mut own = vec![None; nodes.rows()];
            for &r in rows {
                own[r as usize] = ints[nodes.parent[r as usize] as usize];
            }
            Some(own)
        }
    }
}

fn key_value(array: &dyn Array, row: usize) -> KeyValue {
    let integral = array.data_type().is_integer() && *array.data_type() != DataType::UInt64;
    if integral {
        if let Some(v) = render_value(array, row).and_then(|s| s.parse::<i64>().ok()) {
            return KeyValue::Int(v);
        }
    }
    KeyValue::Text(render_value(array, row).unwrap_or_default())
}

/// The key map entries of one table: source PK -> released PK for every released row (the
/// released key in the plan's released column order: one integer, or the source's values).
fn key_pairs(
    plan: &Plan,
    ti: usize,
    batch: &RecordBatch,
    rows: &[u32],
    surrogate: &[Option<Vec<Option<i64>>>],
    groups: &[u32],
) -> Result<TableKeys, ReleaseError> {
    let ft = &plan.tables[ti];
    let index = |c: &String| batch.schema().index_of(c).map_err(internal);
    let source_cols: Vec<usize> = ft.primary_key.iter().map(index).collect::<Result<_, _>>()?;
    let ints = surrogate[ti].as_ref();
    // Without integers the released key is the source's own columns, in released order.
    let released_cols: Vec<usize> = match ints {
        Some(_) => Vec::new(),
        None => ft
            .released_pk()
            .iter()
            .map(index)
            .collect::<Result<_, _>>()?,
    };
    let mut pairs = Vec::with_capacity(rows.len());
    for &r in rows {
        let source: Vec<KeyValue> = source_cols
            .iter()
            .map(|&c| key_value(batch.column(c).as_ref(), r as usize))
            .collect();
        let released = match ints {
            Some(ints) => {
                let id = ints[r as usize].ok_or_else(|| {
                    internal(format!("a kept row of {} has no released key", ft.name))
                })?;
                vec![KeyValue::Int(id)]
            }
            None => released_cols
                .iter()
                .map(|&c| key_value(batch.column(c).as_ref(), r as usize))
                .collect(),
        };
        let group = groups[r as usize];
        pairs.push(KeyPair {
            source,
            released,
            group: (group != NO_GROUP).then_some(group),
        });
    }
    Ok(TableKeys {
        columns: ft.primary_key.clone(),
        released_columns: ft.released_pk(),
        pairs,
    })
}
