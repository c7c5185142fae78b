//! Partitions of a release, so it is checked a part at a time in bounded memory.
//!
//! Every released entity (root row) goes to partition `signature(its tree) % P`, and every
//! released row with its entity: a child row to its released parent's partition, a row whose
//! FK names no released row to partition 0 (where it is still checked, and reported as
//! today). QI-isomorphic trees share their signature ([`signature`]), so each equivalence
//! class lies in one partition, and classes, not root labels, spread the rows. A source row
//! goes with the released row that claims it (through the key map, or by equal key when
//! keys are preserved); a source row no released row claims (suppressed) is read by no
//! partition; a key-less table's source rows go with their source parent.
//!
//! A streamed pass over the release's family tables, leaves first, signs the entities; one
//! streamed pass over every family table of both sides (in source order, a batch at a
//! time) assigns every row; what is held is a partition number per row, the entity of each
//! source row (the labels check counts holders over the whole source) and, for the table
//! being assigned and its parent, a hash per key. Where that could make a partition's
//! verdict differ from the whole check's (a released key that repeats or whose hash does, a
//! key map that sends two released keys to one source key, source rows of one key claimed
//! by two partitions, a key-less entity table, a missing column), the assignment declines
//! and the whole check runs.

use super::data::{child_cols, children, cols, scan};
use super::keys::key_hash;
use super::signature;
use super::truth::{key_columns, released_key};
use super::{counts, Keys, VerifyError};
use crate::plan::{FamilyTable, Plan};
use crate::warehouse::Warehouse;

/// A source row no partition reads.
pub(super) const UNREAD: u16 = u16::MAX;
/// A source row whose parent chain breaks: it belongs to no entity.
pub(super) const NO_ENTITY: u32 = u32::MAX;

/// What a partition holds per released row: both sides, links, indexes (TPC-H SF 1 in 2
/// partitions of 3.9 M rows each peaked 1.1 GiB above the assignment).
const PARTITION_BYTES: u64 = 300;

/// What the whole check holds per released row (TPC-H SF 1, 7.7 M released rows: 2.9 GiB).
/// Checked whole where it fits: two partitions read every table three times (SF 1: 53 s
/// whole, 113 s in two).
const WHOLE_BYTES: u64 = 400;

/// What the assignment holds per row of either side: a partition number, the entity of a
/// source row, and while a table is assigned a key hash per row of it and its parent
/// (estimated from those arrays, about 9 bytes a row at TPC-H SF 1; not measured apart).
const ASSIGNED_BYTES: u64 = 10;

/// The fewest released rows a partition is given, however small the memory: below it,
/// reading every table once per partition is all the check does.
const LEAST_PARTITION: u64 = 1_000;

/// The least memory a check of `released` rows (`rows` on both sides) keeps within: the
/// assignment and one partition of the fewest rows.
pub fn least_memory(released: u64, rows: u64) -> u64 {
    ASSIGNED_BYTES
        .saturating_mul(rows)
        .saturating_add(PARTITION_BYTES.saturating_mul(released.min(LEAST_PARTITION)))
}

/// How many partitions a release of `released` rows (`rows` on both sides) is checked in
/// with `memory` bytes: one where the whole check fits, else as many as keep a partition
/// and the assignment within it.
pub(super) fn count(released: usize, rows: usize, memory: u64) -> usize {
    let released = released as u64;
    if released.saturating_mul(WHOLE_BYTES) <= memory {
        return 1;
    }
    let room = memory.saturating_sub(ASSIGNED_BYTES.saturating_mul(rows as u64));
    let per_part = (room / PARTITION_BYTES).max(LEAST_PARTITION);
    let parts = released.div_ceil(per_part).clamp(1, u64::from(UNREAD - 1));
    usize::try_from(parts).unwrap_or(usize::from(UNREAD - 1))
}

/// Where every row of every plan entry goes.
pub(super) struct Assignment {
    pub parts: usize,
    /// Per entry, the partition of each released row, in source order.
    pub rel: Vec<Vec<u16>>,
    /// Per entry, the partition of each source row ([`UNREAD`]: none).
    pub src: Vec<Vec<u16>>,
    /// Per entry, the entity (row of the entity table) of each source row ([`NO_ENTITY`]).
    pub entity: Vec<Vec<u32>>,
    /// Per entry, its released and source rows.
    pub rows: Vec<counts::Rows>,
    /// Per entry traced through the key map, the partition of each of the map's pairs for
    /// its table: a released key's, or 0 for a pair whose released key no row has (pairs
    /// of one released key share its partition, so each finds its repeats).
    pub pairs: Vec<Option<Vec<u16>>>,
}

/// Whether a release can be checked in partitions, and how.
pub(super) enum Layout {
    /// Checked whole; the reason, for the progress line of a test, never shown as a finding.
    Whole,
    Parts(Assignment),
}

/// Hashes of keys with what they lead to, sorted by hash: a parent's key to its partition
/// (and entity), looked up by its children's FKs.
#[derive(Default)]
struct Index {
    entries: Vec<(u64, u16, u32)>,
}

impl Index {
    fn push(&mut self, key: &[String], part: u16, entity: u32) {
        self.entries.push((key_hash(key), part, entity));
    }

    /// Sorted, keeping the first of equal hashes first; false when two keys share a hash and
    /// disagree on `what` (a repeated key, or a hash collision, leads two ways).
    fn seal(&mut self, what: impl Fn(&(u64, u16, u32)) -> (u16, u32)) -> bool {
        self.entries.sort_by_key(|e| e.0);
        self.entries
            .windows(2)
            .all(|w| w[0].0 != w[1].0 || what(&w[0]) == what(&w[1]))
    }

    /// Sorted; false when two keys share a hash (a repeated key, or a collision).
    fn unique(&mut self) -> bool {
        self.entries.sort_by_key(|e| e.0);
        self.entries.windows(2).all(|w| w[0].0 != w[1].0)
    }

    fn get(&self, key: &[String]) -> Option<(u16, u32)> {
        let h = key_hash(key);
        let at = first_at_least(&self.entries, h);
        self.entries
            .get(at)
            .filter(|e| e.0 == h)
            .map(|e| (e.1, e.2))
    }
}

/// The first entry of `entries` (sorted by hash) whose hash is at least `h`. Hashes are
/// spread evenly over u64, so `h` sits near `h / 2^64` of the way along: the search gallops
/// out from there (a few neighbouring reads) instead of bisecting the whole list (26 reads
/// far apart for a list of 60 M line items; at TPC-H SF 1 the lookups were a fifth of the
/// assignment's samples, and this took 5% off the whole check).
fn first_at_least(entries: &[(u64, u16, u32)], h: u64) -> usize {
    let n = entries.len();
    let guess = ((u128::from(h) * n as u128) >> 64) as usize;
    let (mut lo, mut hi) = (guess, guess);
    let mut step = 1;
    // Everything before `lo` is below `h`; everything from `hi` on is not.
    while lo > 0 && entries[lo - 1].0 >= h {
        lo = lo.saturating_sub(step);
        step *= 2;
    }
    step = 1;
    while hi < n && entries[hi].0 < h {
        hi = (hi + step).min(n);
        step *= 2;
    }
    lo + entries[lo..hi].partition_point(|e| e.0 < h)
}

/// State of the pass: per entry what its children look their parents up in.
struct Pass<'a> {
    plan: &'a Plan,
    parts: usize,
    /// Per entry, its released parent rows by the released key its children name.
    rel_parents: Vec<Index>,
    /// Released keys are traced through a key map.
    keyed_by_map: bool,
    /// Per entry, its source parent rows by the source key its children name.
    src_parents: Vec<Index>,
    out: Assignment,
}

/// Assigns every row of every family table to one of `parts` partitions, or declines.
/// `revealed`: per entry, the QI columns a twin may reveal (not signed).
pub(super) async fn assign(
    plan: &Plan,
    source: &Warehouse,
    release: &Warehouse,
    keys: &Keys<'_>,
    parts: usize,
    revealed: &[Vec<String>],
) -> Result<Layout, VerifyError> {
    if plan.tables.first().is_none_or(|t| t.primary_key.is_empty()) {
        return Ok(Layout::Whole /* the entity table has no key */);
    }
    let n = plan.tables.len();
    let mut pass = Pass {
        plan,
        parts,
        rel_parents: (0..n).map(|_| Index::default()).collect(),
        keyed_by_map: matches!(keys, Keys::Map(_)),
        src_parents: (0..n).map(|_| Index::default()).collect(),
        out: Assignment {
            parts,
            rel: Vec::with_capacity(n),
            src: Vec::with_capacity(n),
            entity: Vec::with_capacity(n),
            rows: Vec::with_capacity(n),
            pairs: Vec::with_capacity(n),
        },
    };
    if plan
        .tables
        .iter()
        .enumerate()
        .any(|(ti, ft)| ft.parent.is_some_and(|p| p >= ti))
    {
        return Ok(Layout::Whole /* a table before its parent */);
    }
    let Some(signed) = signature::of_entities(plan, release, revealed)? else {
        return Ok(Layout::Whole /* a column is missing */);
    };
    // Released keys per table name: the entries of a split table release into one table.
    let mut released_keys: Vec<(String, Vec<u64>)> = Vec::new();
    for (ti, ft) in plan.tables.iter().enumerate() {
        let Some(claims) = pass
            .released(release, ti, &signed, &mut released_keys)
            .await?
        else {
            return Ok(
                Layout::Whole, /* a released key repeats or a column is missing */
            );
        };
        let claims = match claims_of(ft, keys, claims, pass.out.rel[ti].len())? {
            Some((c, pairs)) => {
                pass.out.pairs.push(pairs);
                c
            }
            None => {
                return Ok(
                    Layout::Whole, /* the key map cannot be read per partition */
                );
            }
        };
        if !pass.source(source, ti, claims).await? {
            return Ok(Layout::Whole /* source keys lead to two partitions */);
        }
    }
    for (_, mut hashes) in released_keys {
        hashes.sort_unstable();
        if hashes.windows(2).any(|w| w[0] == w[1]) {
            return Ok(Layout::Whole /* a released key repeats */);
        }
    }
    Ok(Layout::Parts(pass.out))
}

/// How a table's source rows are found: by the released rows that claim them (their source
/// keys' index), or through their source parent.
enum Claims {
    ByKey(Index),
    ByParent,
}

/// A table's claims, with the partition of each of its key-map pairs when it has any.
type ClaimsAndPairs = (Claims, Option<Vec<u16>>);

/// The source keys the released rows of `ft` claim, from the released keys' index `released`
/// (None: traced by content), with the partition of each key-map pair of the table
/// ([`Assignment::pairs`]). None when the key map cannot be read per partition (the whole
/// check says why) or sends two released keys to one source key.
fn claims_of(
    ft: &FamilyTable,
    keys: &Keys<'_>,
    released: Option<Index>,
    released_rows: usize,
) -> Result<Option<ClaimsAndPairs>, VerifyError> {
    let Some(released) = released else {
        return Ok(Some((Claims::ByParent, None)));
    };
    let Keys::Map(map) = keys else {
        return Ok(Some((Claims::ByKey(released), None)));
    };
    let Ok(found) = key_columns(ft, map, released_rows) else {
        return Ok(None);
    };
    let Some((tk, perm, released_perm)) = found else {
        return Ok(Some((Claims::ByKey(Index::default()), None)));
    };
    let mut claims = Index::default();
    let mut pairs = Vec::with_capacity(tk.len());
    for i in 0..tk.len() {
        let Some((part, _)) = released.get(&released_key(tk, i, &released_perm)) else {
            pairs.push(0);
            continue;
        };
        pairs.push(part);
        let source: Vec<String> = perm.iter().map(|&c| tk.source_text(i, c)).collect();
        claims.push(&source, part, 0);
    }
    // Two claims of one source key: a finding of the whole check, whose partitions may
    // differ.
    if !claims.unique() {
        return Ok(None);
    }
    Ok(Some((Claims::ByKey(claims), Some(pairs))))
}

impl Pass<'_> {
    /// Assigns the released rows of entry `ti`; indexes the keys its children name and, when
    /// its rows are traced by key, its own released keys (returned). None: a key repeats
    /// among the parent keys, or a column is missing.
    async fn released(
        &mut self,
        release: &Warehouse,
        ti: usize,
        signed: &[u64],
        released_keys: &mut Vec<(String, Vec<u64>)>,
    ) -> Result<Option<Option<Index>>, VerifyError> {
        let plan = self.plan;
        let ft = &plan.tables[ti];
        let pk = ft.released_pk();
        let children = children(plan, ti);
        let mut wanted: Vec<String> = pk.clone();
        wanted.extend(ft.released_fk.iter().cloned());
        for &c in &children {
            wanted.extend(plan.tables[c].released_parent_key.iter().cloned());
        }
        let mut parts: Vec<u16> = Vec::new();
        let mut own = Index::default();
        let mut hashes: Vec<u64> = Vec::new();
        let mut kids: Vec<Index> = children.iter().map(|_| Index::default()).collect();
        let parent = ft.parent.map(|_| std::mem::take(&mut self.rel_parents[ti]));
        let modulo = self.parts as u64;
        let found = scan(release, "release", ft, &wanted, |side| {
            let (pk_at, fk_at) = (cols(side, &pk), cols(side, &ft.released_fk));
            let kid_at = child_cols(side, plan, &children, |t| &t.released_parent_key);
            for r in 0..side.rows() {
                let part = match &parent {
                    // As many signatures as root rows: both read the same rows in order.
                    None => signed.get(parts.len()).map_or(0, |s| (s % modulo) as u16),
                    Some(index) => side
                        .key(&fk_at, r)
                        .and_then(|k| index.get(&k))
                        .map_or(0, |(p, _)| p),
                };
                parts.push(part);
                if let Some(k) = side.key(&pk_at, r).filter(|_| !pk_at.is_empty()) {
                    hashes.push(key_hash(&k));
                    own.push(&k, part, 0);
                }
                for (kid, at) in kids.iter_mut().zip(&kid_at) {
                    if let Some(k) = side.key(at, r) {
                        kid.push(&k, part, 0);
                    }
                }
            }
        })?;
        if found.is_none() {
            return Ok(None);
        }
        for (mut kid, &c) in kids.into_iter().zip(&children) {
            // A key two parent rows share makes a child's FK ambiguous: the whole check's.
            if !kid.unique() {
                return Ok(None);
            }
            self.rel_parents[c] = kid;
        }
        let repeats = {
            hashes.sort_unstable();
            hashes.windows(2).any(|w| w[0] == w[1])
        };
        if repeats {
            return Ok(None);
        }
        match released_keys.iter_mut().find(|(n, _)| *n == ft.name) {
            Some((_, all)) => all.extend(hashes),
            None if ft.part.is_some() => released_keys.push((ft.name.clone(), hashes)),
            None => {}
        }
        self.out.rel.push(parts);
        if pk.is_empty() || !self.traced_by_key(ti) {
            return Ok(Some(None));
        }
        // Unique: the hashes were.
        own.unique();
        Ok(Some(Some(own)))
    }

    /// Assigns the source rows of entry `ti` (by `claims`, or through their source parent)
    /// and their entities; indexes the keys its children name. False: one source key leads
    /// to two partitions or entities, so a partition's links could differ from the whole's.
    async fn source(
        &mut self,
        source: &Warehouse,
        ti: usize,
        claims: Claims,
    ) -> Result<bool, VerifyError> {
        let plan = self.plan;
        let ft = &plan.tables[ti];
        let children = children(plan, ti);
        let mut wanted: Vec<String> = ft.primary_key.clone();
        wanted.extend(ft.parent_fk.iter().cloned());
        for &c in &children {
            wanted.extend(plan.tables[c].parent_key.iter().cloned());
        }
        let parent = ft.parent.map(|_| std::mem::take(&mut self.src_parents[ti]));
        if parent.is_none() && matches!(claims, Claims::ByParent) {
            return Ok(false);
        }
        // A streamed identifier is found by its row's key: a key two rows share must not be.
        let streamed = !super::data::streamed(ft).is_empty();
        let mut hashes: Vec<u64> = Vec::new();
        let (mut parts, mut entities) = (Vec::new(), Vec::new());
        let mut kids: Vec<Index> = children.iter().map(|_| Index::default()).collect();
        let found = scan(source, "source", ft, &wanted, |side| {
            let (pk_at, fk_at) = (cols(side, &ft.primary_key), cols(side, &ft.parent_fk));
            let kid_at = child_cols(side, plan, &children, |t| &t.parent_key);
            for r in 0..side.rows() {
                let up = parent
                    .as_ref()
                    .and_then(|index| index.get(&side.key(&fk_at, r)?));
                let entity = match &parent {
                    None => u32::try_from(entities.len()).unwrap_or(NO_ENTITY),
                    Some(_) => up.map_or(NO_ENTITY, |(_, e)| e),
                };
                let key = side.key(&pk_at, r);
                let part = match &claims {
                    Claims::ByKey(index) => key.as_ref().and_then(|k| index.get(k)).map(|c| c.0),
                    Claims::ByParent => up.map(|(p, _)| p),
                };
                let part = part.unwrap_or(UNREAD);
                if let (true, Some(k)) = (streamed, &key) {
                    hashes.push(key_hash(k));
                }
                for (kid, at) in kids.iter_mut().zip(&kid_at) {
                    if let Some(k) = side.key(at, r) {
                        kid.push(&k, part, entity);
                    }
                }
                parts.push(part);
                entities.push(entity);
            }
        })?;
        if found.is_none() {
            return Ok(false);
        }
        hashes.sort_unstable();
        if hashes.windows(2).any(|w| w[0] == w[1]) {
            return Ok(false);
        }
        for (mut kid, &c) in kids.into_iter().zip(&children) {
            if !kid.seal(|e| (e.1, e.2)) {
                return Ok(false);
            }
            self.src_parents[c] = kid;
        }
        let released = self.out.rel.get(ti).map_or(0, Vec::len);
        self.out
            .rows
            .push((ft.name.clone(), released as u64, parts.len() as u64));
        self.out.src.push(parts);
        self.out.entity.push(entities);
        Ok(true)
    }

    /// Whether the released rows of entry `ti` are traced to source rows by key (as
    /// truthfulness does): a released key that is the source's own, or any through a key map.
    fn traced_by_key(&self, ti: usize) -> bool {
        let ft = &self.plan.tables[ti];
        let released = ft.released_pk();
        let same_key = released.len() == ft.primary_key.len()
            && released.iter().all(|c| ft.primary_key.contains(c));
        !released.is_empty() && (same_key || self.keyed_by_map)
    }
}

#[cfg(test)]
mod tests {
    use super::{count, first_at_least, PARTITION_BYTES, WHOLE_BYTES};

    #[test]
    fn partitions_follow_the_memory_verify_is_given() {
        let gib = 1u64 << 30;
        // TPC-H SF 1: 7.7 M released rows, 15.4 M on both sides.
        assert_eq!(count(7_700_000, 15_400_000, 4 * gib), 1);
        let tight = count(7_700_000, 15_400_000, gib / 2);
        assert!(tight > 1, "{tight}");
        // Each partition within what is left beside the assignment.
        let room = gib / 2 - 10 * 15_400_000;
        assert!(7_700_000u64.div_ceil(tight as u64) * PARTITION_BYTES <= room);
        // Less memory, more partitions; none at all still partitions of a least size.
        assert!(count(7_700_000, 15_400_000, gib / 4) > tight);
        assert_eq!(count(7_700_000, 15_400_000, 0), 7700);
        assert_eq!(count(1000, 2000, 1000 * WHOLE_BYTES), 1);
    }

    #[test]
    fn the_search_from_the_spread_guess_finds_what_bisection_finds() {
        // Hashes evenly spread, bunched at both ends, repeated, and a list of one.
        let spread: Vec<u64> = (0..1000u64)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .collect();
        let bunched: Vec<u64> = (0..300).chain(u64::MAX - 300..=u64::MAX).collect();
        let repeated: Vec<u64> = [5u64, 5, 5, 9, 9, u64::MAX, u64::MAX].to_vec();
        for mut hashes in [spread, bunched, repeated, vec![42]] {
            hashes.sort_unstable();
            let entries: Vec<(u64, u16, u32)> = hashes.iter().map(|&h| (h, 0, 0)).collect();
            let probes = hashes
                .iter()
                .flat_map(|&h| [h, h.wrapping_add(1), h.wrapping_sub(1)])
                .chain([0, 1, u64::MAX / 2, u64::MAX]);
            for h in probes {
                let expected = entries.partition_point(|e| e.0 < h);
                assert_eq!(first_at_least(&entries, h), expected, "hash {h}");
            }
        }
        assert_eq!(first_at_least(&[], 7), 0);
    }
}
