//! The release's keys and order, shared by every layout: each table's released integer keys
//! (a random permutation of `1..=n`, or the source's), a second FK path's values read up the
//! tree, the key map's pairs, and rows sorted by released key.

use std::collections::HashMap;

use arrow::array::{Array, ArrayRef};
use arrow::compute::{lexsort_to_indices, take_record_batch, SortColumn};
use arrow::datatypes::DataType;
use arrow::record_batch::RecordBatch;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::{internal, ReleaseError};
use crate::algo::output::NO_GROUP;
use crate::forest::Forest;
use crate::keymap::{KeyPair, KeyValue, TableKeys};
use crate::plan::{KeyPolicy, Plan, RedundantFk, ReleasedKey};
use crate::warehouse::render_value;

/// The released one-column integer key of each row of table `ti`, when it has one: its own
/// pseudonym, its surrogate, or (shared primary key) its parent's. `None` when the released
/// key is the source's (`keys = 'preserve'`) or there is none.
pub(super) fn released_ints(
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
pub(super) fn shuffled(plan: &Plan, stream: u64, n: usize) -> Vec<i64> {
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

/// A second FK path's released values for the kept `rows`: the ancestor's released key read
/// up the tree (the forest checked that both paths agree). `original` holds the kept rows'
/// source values in order: a NULL second FK stays NULL, since it claimed nothing.
pub(super) fn second_path_keys(
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

/// A source key cell as the key map holds it: an integer where the column is one, else text.
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
pub(super) fn key_pairs(
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
    let mut keys = TableKeys::new(ft.primary_key.clone(), ft.released_pk());
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
        keys.push(KeyPair {
            source,
            released,
            group: (group != NO_GROUP).then_some(group),
        })
        .map_err(internal)?;
    }
    Ok(keys)
}

/// Whether a key-less table's rows are sorted by a column of this type.
pub(super) fn sortable(dt: &DataType) -> bool {
    dt.is_primitive() || matches!(dt, DataType::Utf8 | DataType::LargeUtf8 | DataType::Boolean)
}

/// Rows sorted by released key (then parent key); a table without a primary key is then
/// sorted by its content, so row order never carries source order.
pub(super) fn sort_by_key<'a>(
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
            if sortable(f.data_type()) && !used.contains(&i) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int64Array, StringArray};
    use arrow::datatypes::{Field, Schema};
    use std::sync::Arc;

    fn batch(ids: &[i64], names: &[&str]) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::Utf8, false),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from(ids.to_vec())),
                Arc::new(StringArray::from(names.to_vec())),
            ],
        )
        .expect("a batch")
    }

    fn column_i64(b: &RecordBatch, i: usize) -> Vec<i64> {
        b.column(i)
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("Int64")
            .values()
            .to_vec()
    }

    #[test]
    fn a_permutation_gives_kept_rows_their_ids_and_suppressed_rows_none() {
        let own = permutation(5, &[0, 2, 4], vec![3, 1, 2]);
        assert_eq!(own, vec![Some(3), None, Some(1), None, Some(2)]);
    }

    #[test]
    fn rows_are_sorted_by_released_key_never_left_in_source_order() {
        let b = batch(&[3, 1, 2], &["c", "a", "b"]);
        let key = ["id".to_string()];
        let sorted = sort_by_key(b, key.iter(), false).expect("sorts");
        assert_eq!(column_i64(&sorted, 0), vec![1, 2, 3]);
    }

    #[test]
    fn a_table_without_a_key_is_sorted_by_its_content() {
        let b = batch(&[2, 1, 2], &["b", "z", "a"]);
        let sorted = sort_by_key(b, std::iter::empty(), true).expect("sorts");
        assert_eq!(column_i64(&sorted, 0), vec![1, 2, 2]);
        let names = sorted
            .column(1)
            .as_any()
            .downcast_ref::<StringArray>()
            .expect("Utf8");
        assert_eq!(names.value(1), "a", "ties broken by the next column");
    }

    #[test]
    fn a_key_column_missing_from_the_batch_is_skipped_not_an_error() {
        let b = batch(&[2, 1], &["b", "a"]);
        let key = ["gone".to_string(), "id".to_string()];
        let sorted = sort_by_key(b, key.iter(), false).expect("sorts");
        assert_eq!(column_i64(&sorted, 0), vec![1, 2]);
    }

    #[test]
    fn integer_keys_map_as_integers_and_others_as_text() {
        let b = batch(&[7], &["x"]);
        assert!(matches!(
            key_value(b.column(0).as_ref(), 0),
            KeyValue::Int(7)
        ));
        assert!(matches!(key_value(b.column(1).as_ref(), 0), KeyValue::Text(ref t) if t == "x"));
    }
}
