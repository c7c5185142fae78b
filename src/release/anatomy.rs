//! The anatomy layout (000 Sec. 3.2, spec D10): the family tables as the QI side (exact QI
//! values, no SA column, `slot` and the entity table's `group_id` added), then the SA side:
//! t-t's `<t>__sa` trees or v-v's counted `<t>__sag` groups.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, Int64Array, UInt32Array};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;

use super::family::QiSide;
use super::keys::{shuffled, sort_by_key};
use super::{internal, Materialized, ReleaseError};
use crate::algo::output::NO_GROUP;
use crate::algo::Generalization;
use crate::forest::{Forest, TableNodes};
use crate::plan::{ColumnRole, Plan};
use crate::warehouse::{render_value, ForeignKey, ReleaseTable};

/// Stream numbers of the draws that are not a table's keys (tables use their index).
const SLOT_STREAM: u64 = u64::MAX - 1;
const GROUP_STREAM: u64 = u64::MAX - 2;

/// `SA_KEY_STREAM - t`: the SA side's keys of table `t`, drawn apart from its QI keys.
const SA_KEY_STREAM: u64 = u64::MAX - 1024;

/// An anatomy: the family tables as the QI side (exact QI values, no SA column, `slot` and
/// the entity table's `group_id` added, keys as the plan says), then the SA side: t-t's
/// `<t>__sa` trees or v-v's counted `<t>__sag` groups.
pub(super) fn tables(
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
    let mut m = super::family::tables(plan, forest, &g, Some(&qi))?;
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
