//! A hash of every released entity's tree that QI-isomorphic trees share, computed a batch
//! at a time, leaves first: what [`super::partition`] chooses an entity's partition by.
//!
//! The k-anonymity check compares trees by their form (000 Def. 12, decided AHU-style in
//! [`super::kanon`]): the table, its QI labels, the multiset of its children's forms. A row's
//! signature is a hash of the same three things, the multiset taken as a wrapping sum of
//! its children's mixed signatures, so equal forms give equal signatures and each
//! equivalence class lies in one partition. Choosing by the root's labels alone would also
//! keep classes whole, but a release that generalizes most roots to `*` (TPC-H SF 1 at
//! k = 10: 40% of the customers) would put most of its rows in one partition.
//!
//! What is held: per family table, the sum of its rows' signatures per parent key (a hash of
//! the key), until the parent table is read; per entity, its signature.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use rustc_hash::FxHashMap;

use super::data::{child_cols, children, cols, scan};
use super::keys::key_hash;
use super::VerifyError;
use crate::plan::Plan;
use crate::warehouse::Warehouse;

/// Every released entity's signature, in the release's row order; `revealed`: per plan
/// entry, the QI columns a twin may reveal, left out (the twins check counts classes with
/// them known, where labels that differ may meet). None where a column is missing (the whole
/// check says what).
pub(super) fn of_entities(
    plan: &Plan,
    release: &Warehouse,
    revealed: &[Vec<String>],
) -> Result<Option<Vec<u64>>, VerifyError> {
    let n = plan.tables.len();
    let mut sums: Vec<FxHashMap<u64, u64>> = (0..n).map(|_| FxHashMap::default()).collect();
    let mut roots = Vec::new();
    // Children come after their parents in plan order (the assignment declines otherwise).
    for ti in (0..n).rev() {
        let ft = &plan.tables[ti];
        let children = children(plan, ti);
        let hidden = revealed.get(ti).map_or(&[][..], Vec::as_slice);
        let qis: Vec<String> = ft
            .qi_columns()
            .map(|(c, _)| c.to_string())
            .filter(|c| !hidden.iter().any(|r| r.eq_ignore_ascii_case(c)))
            .collect();
        let mut wanted = qis.clone();
        wanted.extend(ft.released_fk.iter().cloned());
        for &c in &children {
            wanted.extend(plan.tables[c].released_parent_key.iter().cloned());
        }
        let kids: Vec<FxHashMap<u64, u64>> = children
            .iter()
            .map(|&c| std::mem::take(&mut sums[c]))
            .collect();
        let mut up = FxHashMap::default();
        let found = scan(release, "release", ft, &wanted, |side| {
            let (qi_at, fk_at) = (cols(side, &qis), cols(side, &ft.released_fk));
            let kid_at = child_cols(side, plan, &children, |t| &t.released_parent_key);
            for r in 0..side.rows() {
                let cells: Vec<Option<String>> = qi_at.iter().map(|&c| side.cell(c, r)).collect();
                let below = kids
                    .iter()
                    .zip(&kid_at)
                    .filter_map(|(sums, at)| sums.get(&key_hash(&side.key(at, r)?)))
                    .fold(0u64, |a, &s| a.wrapping_add(s));
                let signature = hashed(&(ti, cells, below));
                if ft.parent.is_none() {
                    roots.push(signature);
                } else if let Some(k) = side.key(&fk_at, r) {
                    let sum: &mut u64 = up.entry(key_hash(&k)).or_default();
                    *sum = sum.wrapping_add(mixed(signature));
                }
            }
        })?;
        if found.is_none() {
            return Ok(None);
        }
        sums[ti] = up;
    }
    Ok(Some(roots))
}

/// A fixed hash (the same in every run).
fn hashed(value: &impl Hash) -> u64 {
    let mut h = DefaultHasher::new();
    value.hash(&mut h);
    h.finish()
}

/// SplitMix64's finalizer: a sum of mixed signatures says which multiset it summed, where a
/// sum of raw ones would let two small changes cancel.
fn mixed(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
