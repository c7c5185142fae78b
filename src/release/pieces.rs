//! A release made a piece (a shard of entities) at a time. Each piece is materialized on
//! its own, so its drawn keys are `1..=n` within the piece. [`Offsets::shift`] moves them
//! past the pieces before (unique across pieces, and still telling the piece: provisional);
//! once every piece is known, one permutation per id space ([`permutations`]) maps them onto
//! the release's keys, a random permutation of `1..=n` over the whole table as an unsplit
//! run draws, so neither keys nor the row order sorted by them carry the piece.
//!
//! An id space is a released table whose key is drawn integers (a pseudonym or a
//! surrogate); its ids also sit in its children's FKs, in second FK paths to it and in a
//! shared primary key. No I/O.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{Array, Int64Array};
use arrow::compute::kernels::numeric::add;
use arrow::datatypes::DataType;
use arrow::record_batch::RecordBatch;

use super::keys::{shuffled, sortable};
use super::{internal, Materialized, ReleaseError};
use crate::keymap::KeyMap;
use crate::plan::{KeyPolicy, Plan, ReleasedKey};

/// The id space (a released table's name) whose ids plan table `ti`'s released key holds:
/// its own when drawn, its parent's when it shares its parent's key; none when the key is
/// the source's or there is none.
pub fn id_space(plan: &Plan, ti: usize) -> Option<&str> {
    let ft = &plan.tables[ti];
    match &ft.key {
        ReleasedKey::None => None,
        ReleasedKey::Own(_) if plan.params.keys != KeyPolicy::Pseudonymize => None,
        ReleasedKey::Own(_) | ReleasedKey::Surrogate(_) => Some(ft.name.as_str()),
        ReleasedKey::Parent => id_space(plan, ft.parent?),
    }
}

/// Per released family table (by name), its columns that hold ids and the space of each:
/// its key, its FK to its parent, its second FK paths. Refused when two entries of a split
/// table would read one column in two spaces.
pub fn id_columns(plan: &Plan) -> Result<BTreeMap<String, Vec<(String, String)>>, ReleaseError> {
    let mut out: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for (ti, ft) in plan.tables.iter().enumerate() {
        let mut mine: Vec<(String, &str)> = Vec::new();
        if let Some(space) = id_space(plan, ti) {
            mine.extend(ft.released_pk().into_iter().map(|c| (c, space)));
        }
        if let Some(space) = ft.parent.and_then(|p| id_space(plan, p)) {
            mine.extend(ft.released_fk.iter().map(|c| (c.clone(), space)));
        }
        for r in &ft.redundant {
            if let Some(space) = id_space(plan, r.ancestor) {
                mine.extend(r.released_columns.iter().map(|c| (c.clone(), space)));
            }
        }
        let columns = out.entry(ft.name.clone()).or_default();
        for (column, space) in mine {
            match columns.iter().find(|(c, _)| *c == column) {
                Some((_, s)) if s != space => {
                    return Err(internal(format!(
                        "column {}.{column} would hold ids of both {s} and {space}",
                        ft.name
                    )))
                }
                Some(_) => {}
                None => columns.push((column, space.to_string())),
            }
        }
    }
    Ok(out)
}

/// The order a released table's rows are written in, as an unsplit run sorts them
/// (`keys::sort_by_key`): its released key, then its FK; a table without a key then by
/// every sortable column, so row order never carries source order.
pub fn row_order(plan: &Plan, table: &str, batch: &RecordBatch) -> Vec<String> {
    let Some(ft) = plan
        .tables
        .iter()
        .find(|t| t.name == table && t.part.as_ref().is_none_or(|p| !p.null_side))
    else {
        return Vec::new();
    };
    let pk = ft.released_pk();
    let mut order: Vec<String> = Vec::new();
    for c in pk.iter().chain(&ft.released_fk) {
        if !order.contains(c) && batch.schema().index_of(c).is_ok() {
            order.push(c.clone());
        }
    }
    if pk.is_empty() {
        for f in batch.schema().fields() {
            if sortable(f.data_type()) && !order.contains(f.name()) {
                order.push(f.name().clone());
            }
        }
    }
    order
}

/// Ids used so far per space, and representative groups: where the next piece's start.
#[derive(Debug, Default)]
pub struct Offsets {
    ids: BTreeMap<String, i64>,
    groups: u32,
}

impl Offsets {
    /// Moves piece `m`'s ids past the pieces before, in its tables and its key map, and its
    /// representative groups past theirs; then counts the piece in.
    pub fn shift(&mut self, plan: &Plan, m: &mut Materialized) -> Result<(), ReleaseError> {
        let columns = id_columns(plan)?;
        for t in &mut m.tables {
            let Some(cols) = columns.get(&t.name) else {
                continue;
            };
            t.batch = shifted(&t.batch, cols, &self.ids)?;
        }
        let mut most_group = None;
        for (ti, name) in entry_names(plan) {
            let Some(keys) = m.keys.tables.get_mut(name) else {
                continue;
            };
            if let Some(space) = id_space(plan, ti) {
                let by = self.ids.get(space).copied().unwrap_or(0);
                keys.map_released(|v| v + by);
            }
            most_group = most_group.max(keys.shift_groups(self.groups));
        }
        for t in &m.tables {
            let own_space =
                plan.tables.iter().enumerate().any(|(ti, ft)| {
                    ft.name == t.name && id_space(plan, ti) == Some(t.name.as_str())
                });
            if own_space {
                *self.ids.entry(t.name.clone()).or_insert(0) += t.batch.num_rows() as i64;
            }
        }
        if let Some(g) = most_group {
            self.groups = g.saturating_add(1);
        }
        Ok(())
    }

    /// Ids drawn per space over every piece.
    pub fn totals(&self) -> &BTreeMap<String, i64> {
        &self.ids
    }
}

/// Each released family table's name once, with its first plan entry (a split table's two
/// entries share one key map entry and one id space).
fn entry_names(plan: &Plan) -> Vec<(usize, &str)> {
    let mut out: Vec<(usize, &str)> = Vec::new();
    for (ti, ft) in plan.tables.iter().enumerate() {
        if !out.iter().any(|(_, n)| *n == ft.name) {
            out.push((ti, &ft.name));
        }
    }
    out
}

/// `batch` with each id column moved by its space's offset.
fn shifted(
    batch: &RecordBatch,
    columns: &[(String, String)],
    offsets: &BTreeMap<String, i64>,
) -> Result<RecordBatch, ReleaseError> {
    let mut arrays = batch.columns().to_vec();
    for (column, space) in columns {
        let by = offsets.get(space).copied().unwrap_or(0);
        let Ok(i) = batch.schema().index_of(column) else {
            continue;
        };
        if by == 0 {
            continue;
        }
        let ids = arrow::compute::cast(&arrays[i], &DataType::Int64).map_err(internal)?;
        let moved = add(&ids, &Int64Array::new_scalar(by)).map_err(internal)?;
        arrays[i] = arrow::compute::cast(&moved, arrays[i].data_type()).map_err(internal)?;
    }
    RecordBatch::try_new(batch.schema(), arrays).map_err(internal)
}

/// Per space, the release's permutation of its `n` provisional ids: `to[p - 1]` is the
/// released key of provisional id `p`. Drawn as an unsplit run draws a table's keys (the
/// table's seed stream), so a seeded run is reproducible.
pub fn permutations(
    plan: &Plan,
    totals: &BTreeMap<String, i64>,
) -> BTreeMap<String, Arc<Vec<i64>>> {
    totals
        .iter()
        .map(|(space, &n)| {
            let stream = plan
                .tables
                .iter()
                .position(|t| &t.name == space)
                .unwrap_or(0) as u64;
            (space.clone(), Arc::new(shuffled(plan, stream, n as usize)))
        })
        .collect()
}

/// The key map's provisional ids mapped onto the release's keys.
pub fn finish_key_map(plan: &Plan, keys: &mut KeyMap, perms: &BTreeMap<String, Arc<Vec<i64>>>) {
    for (ti, name) in entry_names(plan) {
        let (Some(space), Some(map)) = (id_space(plan, ti), keys.tables.get_mut(name)) else {
            continue;
        };
        if let Some(to) = perms.get(space) {
            map.map_released(|p| {
                usize::try_from(p - 1)
                    .ok()
                    .and_then(|i| to.get(i).copied())
                    .unwrap_or(p)
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::{Field, Schema};

    #[test]
    fn ids_move_by_their_spaces_offset_and_nulls_stay() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("up", DataType::Int64, true),
        ]));
        let batch = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from(vec![1, 2])),
                Arc::new(Int64Array::from(vec![Some(1), None])),
            ],
        )
        .expect("a batch");
        let columns = vec![
            ("id".to_string(), "child".to_string()),
            ("up".to_string(), "parent".to_string()),
        ];
        let offsets = BTreeMap::from([("child".to_string(), 10), ("parent".to_string(), 5)]);
        let out = shifted(&batch, &columns, &offsets).expect("shifted");
        let col = |i: usize| {
            out.column(i)
                .as_any()
                .downcast_ref::<Int64Array>()
                .expect("Int64")
                .iter()
                .collect::<Vec<_>>()
        };
        assert_eq!(col(0), vec![Some(11), Some(12)]);
        assert_eq!(col(1), vec![Some(6), None]);
    }
}
