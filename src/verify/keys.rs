//! Rows indexed by their rendered key, for every check that finds rows by key: released
//! keys traced to source rows and through the key map (truthfulness), duplicate released
//! keys (key atomicity), and child FKs resolved to parent rows (the data's links).

use std::collections::hash_map::{DefaultHasher, Entry};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use rayon::prelude::*;

/// Rows mapped together on every thread by [`in_row_order`]: a bound on what it holds.
const ROWS_PER_STEP: usize = 1 << 16;

/// Rows by key, keeping a hash of each key rather than the key: per hash the first row with
/// it, and the later rows that share it (equal keys, or the rare collision). A lookup renders
/// its candidates' keys again to compare them, so it finds what a map of the rendered keys
/// would, the first row with the key, in a few bytes a row instead of the key's strings (at
/// TPC-H SF 1 the index holds six million line items).
pub(super) struct KeyIndex {
    first: HashMap<u64, usize>,
    later: HashMap<u64, Vec<usize>>,
    /// Rows whose key has a NULL part, ascending; they are in no hash.
    nulls: Vec<usize>,
}

impl KeyIndex {
    /// Rows `0..rows` by `key` (a row whose key has a NULL is left out), hashed by `hash`.
    /// Rendering is the cost, so it runs on every thread; the rows are entered in order, so
    /// the index is the same for any number of threads.
    pub(super) fn new(
        rows: usize,
        key: impl Fn(usize) -> Option<Vec<String>> + Sync,
        hash: fn(&[String]) -> u64,
    ) -> KeyIndex {
        KeyIndex::among(rows, |i| i, key, hash)
    }

    /// Rows `row(0) .. row(n - 1)` (ascending) by `key`, as [`KeyIndex::new`] indexes all:
    /// a partition's rows of a table whose other rows it never looks up.
    pub(super) fn among(
        n: usize,
        row: impl Fn(usize) -> usize + Sync,
        key: impl Fn(usize) -> Option<Vec<String>> + Sync,
        hash: fn(&[String]) -> u64,
    ) -> KeyIndex {
        let mut index = KeyIndex {
            first: HashMap::with_capacity(n),
            later: HashMap::new(),
            nulls: Vec::new(),
        };
        let hashed = |i: usize| {
            let r = row(i);
            (r, key(r).map(|k| hash(&k)))
        };
        in_row_order(n, hashed, |_, (r, h)| {
            let Some(h) = h else {
                index.nulls.push(r);
                return;
            };
            match index.first.entry(h) {
                Entry::Vacant(e) => {
                    e.insert(r);
                }
                Entry::Occupied(e) => index.later.entry(*e.key()).or_default().push(r),
            }
        });
        index
    }

    /// The rows whose key has a NULL part, ascending.
    pub(super) fn nulls(&self) -> &[usize] {
        &self.nulls
    }

    /// The rows that share their hash with an earlier row, ascending.
    fn later_rows(&self) -> Vec<usize> {
        let mut rows: Vec<usize> = self.later.values().flatten().copied().collect();
        rows.sort_unstable();
        rows
    }

    /// The rows whose key is `wanted`, ascending; `key` and `hash` are the ones it was built
    /// with.
    pub(super) fn matches<'a, K>(
        &'a self,
        wanted: &'a [String],
        key: K,
        hash: fn(&[String]) -> u64,
    ) -> impl Iterator<Item = usize> + 'a
    where
        K: Fn(usize) -> Option<Vec<String>> + 'a,
    {
        let h = hash(wanted);
        self.first
            .get(&h)
            .copied()
            .into_iter()
            .chain(self.later.get(&h).into_iter().flatten().copied())
            .filter(move |&r| key(r).as_deref() == Some(wanted))
    }

    /// The first row whose key is `wanted`.
    pub(super) fn find(
        &self,
        wanted: &[String],
        key: impl Fn(usize) -> Option<Vec<String>>,
        hash: fn(&[String]) -> u64,
    ) -> Option<usize> {
        self.matches(wanted, key, hash).next()
    }

    /// Every row whose key an earlier row has, with the first row that has it, ascending by
    /// the later row.
    pub(super) fn repeats(
        &self,
        key: impl Fn(usize) -> Option<Vec<String>>,
        hash: fn(&[String]) -> u64,
    ) -> Vec<(usize, usize)> {
        // Only a row that shares its hash with an earlier one can repeat a key.
        self.later_rows()
            .into_iter()
            .filter_map(|r| {
                let k = key(r)?;
                let first = self.find(&k, &key, hash)?;
                (first != r).then_some((r, first))
            })
            .collect()
    }
}

/// Maps rows `0..rows` on every thread and hands each result to `take` in row order,
/// [`ROWS_PER_STEP`] rows at a time, so at most one step's results are held at once and what
/// `take` builds does not depend on the number of threads.
pub(super) fn in_row_order<T: Send>(
    rows: usize,
    map: impl Fn(usize) -> T + Sync,
    mut take: impl FnMut(usize, T),
) {
    for start in (0..rows).step_by(ROWS_PER_STEP) {
        let end = (start + ROWS_PER_STEP).min(rows);
        let mapped: Vec<T> = (start..end).into_par_iter().map(&map).collect();
        for (r, t) in (start..end).zip(mapped) {
            take(r, t);
        }
    }
}

/// A fixed hash of a rendered key (the same in every run).
pub(super) fn key_hash(key: &[String]) -> u64 {
    let mut h = DefaultHasher::new();
    key.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::{key_hash, KeyIndex, ROWS_PER_STEP};

    fn keys() -> Vec<Option<Vec<String>>> {
        [Some("a"), Some("b"), None, Some("a"), Some("c"), Some("a")]
            .into_iter()
            .map(|k| k.map(|k| vec![k.to_string(), "1".to_string()]))
            .collect()
    }

    fn wanted(k: &str) -> Vec<String> {
        vec![k.to_string(), "1".to_string()]
    }

    #[test]
    fn a_key_index_finds_the_first_row_with_a_key_whatever_the_hashes_collide() {
        let keys = keys();
        let key = |r: usize| keys[r].clone();
        // With every key on one hash, rows are told apart only by comparing keys.
        let same: fn(&[String]) -> u64 = |_| 7;
        for hash in [key_hash, same] {
            let index = KeyIndex::new(keys.len(), key, hash);
            assert_eq!(index.find(&wanted("a"), key, hash), Some(0));
            assert_eq!(index.find(&wanted("b"), key, hash), Some(1));
            assert_eq!(index.find(&wanted("c"), key, hash), Some(4));
            assert_eq!(index.find(&wanted("d"), key, hash), None);
            assert_eq!(index.find(&["a".to_string()], key, hash), None);
            let a: Vec<usize> = index.matches(&wanted("a"), key, hash).collect();
            assert_eq!(a, [0, 3, 5]);
            assert_eq!(index.nulls(), [2]);
            assert_eq!(index.repeats(key, hash), [(3, 0), (5, 0)]);
        }
    }

    #[test]
    fn an_index_among_some_rows_finds_them_and_no_other() {
        let keys = keys();
        let key = |r: usize| keys[r].clone();
        // Rows 2, 3, 5: "a" first at 3 (row 0 is not among them), the NULL at 2.
        let among = [2, 3, 5];
        let index = KeyIndex::among(among.len(), |i| among[i], key, key_hash);
        assert_eq!(index.find(&wanted("a"), key, key_hash), Some(3));
        assert_eq!(index.find(&wanted("b"), key, key_hash), None);
        assert_eq!(index.nulls(), [2]);
        assert_eq!(index.repeats(key, key_hash), [(5, 3)]);
    }

    #[test]
    fn an_index_built_in_steps_on_any_number_of_threads_is_the_same() {
        // Three steps; every 1000th key repeats an earlier one, every 777th is NULL.
        let rows = 2 * ROWS_PER_STEP + 123;
        let key = |r: usize| {
            (r % 777 != 5).then(|| {
                let k = if r % 1000 == 999 { r / 3 } else { r };
                vec![k.to_string()]
            })
        };
        let built = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("a thread pool");
            pool.install(|| KeyIndex::new(rows, key, key_hash))
        };
        let (one, two) = (built(1), built(2));
        assert_eq!(one.first, two.first);
        assert_eq!(one.later, two.later);
        assert_eq!(one.nulls, two.nulls);
        let expected: Vec<(usize, usize)> = (0..rows)
            .filter(|&r| r % 1000 == 999 && r % 777 != 5)
            // Row r / 3 holds key r / 3 unless it is NULL or replaced itself.
            .filter(|&r| (r / 3) % 777 != 5 && (r / 3) % 1000 != 999)
            .map(|r| (r, r / 3))
            .collect();
        assert_eq!(two.repeats(key, key_hash), expected);
        assert_eq!(
            two.nulls().len(),
            (0..rows).filter(|r| r % 777 == 5).count()
        );
    }
}
