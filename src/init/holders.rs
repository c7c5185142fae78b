//! Who holds a value: for every family table, the entity each source row belongs to, and for
//! a column, how many distinct entities hold each of its values. A column whose values are
//! each held by fewer than k people names those people, whatever share of its table's rows
//! its distinct values are (a claim's reference to its patient repeats in every claim, yet
//! each value is one patient's).

use std::collections::BTreeMap;

use arrow::array::{Array, RecordBatch};
use rustc_hash::FxHashMap;

use crate::plan::FamilyTable;
use crate::warehouse::render_value;

/// Per family table, the entity (a row of the entity table, in source order) of each source
/// row; `None` for a row that hangs under no entity (an orphan, a NULL reference).
pub type Owners = BTreeMap<String, Vec<Option<u32>>>;

/// How a column's values spread over the entities.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Spread {
    /// Distinct non-NULL values on rows that belong to an entity.
    pub values: usize,
    /// Of those, the values held by fewer than k entities.
    pub rare: usize,
}

impl Spread {
    /// Whether most values single out fewer than k people: at least 4 values (a two-valued
    /// column over a handful of people is a category, not a name) and more than half rare.
    pub fn names_people(&self) -> bool {
        self.values >= 4 && 2 * self.rare > self.values
    }
}

/// The owners of every row of every family table, walking the family from the entity down
/// (a parent always precedes its children), over the tables' rows in source order
/// (`batches`, by name; a table without one owns nothing). A table split over two plan
/// entries is filled by both: each entry owns the rows its reference resolves.
pub fn owners(family: &[FamilyTable], batches: &BTreeMap<String, RecordBatch>) -> Owners {
    let mut out: Owners = BTreeMap::new();
    for ft in family {
        let Some(batch) = batches.get(&ft.name) else {
            continue;
        };
        let Some(parent) = ft.parent else {
            let n = u32::try_from(batch.num_rows()).unwrap_or(u32::MAX);
            out.insert(ft.name.clone(), (0..n).map(Some).collect());
            continue;
        };
        let parent_name = &family[parent].name;
        let (Some(parent_batch), Some(parent_owners)) =
            (batches.get(parent_name), out.get(parent_name))
        else {
            continue;
        };
        let by_key = key_index(parent_batch, &ft.parent_key, parent_owners);
        let found: Vec<Option<u32>> = (0..batch.num_rows())
            .map(|r| {
                row_key(batch, &ft.parent_fk, r)
                    .and_then(|k| by_key.get(&k))
                    .copied()
            })
            .collect();
        let slot = out
            .entry(ft.name.clone())
            .or_insert_with(|| vec![None; batch.num_rows()]);
        for (have, new) in slot.iter_mut().zip(found) {
            if have.is_none() {
                *have = new;
            }
        }
    }
    out
}

/// The rendered values of `columns` in row `r`; `None` if one is NULL or missing.
fn row_key(batch: &RecordBatch, columns: &[String], r: usize) -> Option<Vec<String>> {
    columns
        .iter()
        .map(|c| {
            let i = batch.schema().index_of(c).ok()?;
            render_value(batch.column(i).as_ref(), r)
        })
        .collect()
}

/// A parent's key values -> the entity of the row that holds them.
fn key_index(
    batch: &RecordBatch,
    key: &[String],
    owners: &[Option<u32>],
) -> FxHashMap<Vec<String>, u32> {
    (0..batch.num_rows())
        .filter_map(|r| Some((row_key(batch, key, r)?, owners.get(r).copied().flatten()?)))
        .collect()
}

/// How column `array`'s values spread over the entities `owners` gives its rows. Values
/// are coded by a hash map, so only (value, entity) codes are sorted.
pub fn spread(array: &dyn Array, owners: &[Option<u32>], k: usize) -> Spread {
    let mut codes: FxHashMap<String, u32> = FxHashMap::default();
    let mut pairs: Vec<u64> = (0..array.len())
        .filter_map(|r| {
            let owner = owners.get(r).copied().flatten()?;
            let value = render_value(array, r)?;
            let next = u32::try_from(codes.len()).unwrap_or(u32::MAX);
            let code = *codes.entry(value).or_insert(next);
            Some((u64::from(code) << 32) | u64::from(owner))
        })
        .collect();
    pairs.sort_unstable();
    pairs.dedup();
    let mut spread = Spread {
        values: codes.len(),
        rare: 0,
    };
    let mut i = 0;
    while i < pairs.len() {
        let code = pairs[i] >> 32;
        let holders = pairs[i..].iter().take_while(|p| *p >> 32 == code).count();
        if holders < k {
            spread.rare += 1;
        }
        i += holders;
    }
    spread
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::StringArray;

    #[test]
    fn a_reference_repeated_per_row_is_still_one_person_each() {
        // Ten people with three claims each: 10 values in 30 rows (a third of the rows), yet
        // every value is held by one person.
        let values: Vec<String> = (0..30).map(|r| format!("p{}", r / 3)).collect();
        let owners: Vec<Option<u32>> = (0..30).map(|r| Some(r / 3)).collect();
        let s = spread(&StringArray::from(values), &owners, 5);
        assert_eq!(
            s,
            Spread {
                values: 10,
                rare: 10
            }
        );
        assert!(s.names_people());
    }

    #[test]
    fn a_category_shared_by_many_people_does_not() {
        let values: Vec<&str> = (0..40).map(|r| ["A", "B", "C", "D"][r % 4]).collect();
        let owners: Vec<Option<u32>> = (0..40).map(Some).collect();
        let s = spread(&StringArray::from(values), &owners, 5);
        assert_eq!(s, Spread { values: 4, rare: 0 });
        assert!(!s.names_people());
        // Rows of one person count once: a value seen 8 times in one person's rows is rare.
        let values = vec!["x"; 8];
        let owners = vec![Some(7); 8];
        let s = spread(&StringArray::from(values), &owners, 5);
        assert_eq!(s, Spread { values: 1, rare: 1 });
    }

    #[test]
    fn rows_without_an_owner_are_not_counted() {
        let values = StringArray::from(vec![Some("a"), Some("b"), None]);
        let s = spread(&values, &[Some(0), None, Some(1)], 2);
        assert_eq!(s, Spread { values: 1, rare: 1 });
    }
}
