//! The ℓ-diversity pipeline of 004 Sec. 5 (spec Sec. 2 "Pipeline for ℓ-diversity", D10,
//! D11, D12, D18): no class value is changed; instead the rows are cut horizontally into
//! segments, and each segment's chunk of a fragment (its rows, the fragment's columns) is
//! anonymized so that every group holds every class of its segment. Two groups of one
//! segment then join into at least l_s rows with exactly l_s classes (Thm 5.1).
//!
//! 1. [`segments`] (Step 2, D18): median splits, widest normalized range first, each class
//!    halved at its own median ([`stratified_halves`]) so both halves keep the segment's mix
//!    of classes; a split kept while both halves hold `segment_rows` rows and l classes, and
//!    every two segments share no class or at least l ([`Sets`], relanon's rule for D11).
//! 2. [`chunks`] (Steps 3-4, D10): each segment's chunk of each fragment anonymized by the
//!    base algorithm through the registry, under distinct l_s-diversity with l_s the
//!    segment's number of classes (so a group holds all of them); rows the base leaves out
//!    join the group they widen least ([`absorb`]).
//! 3. [`violations`] (D11): every pair of groups checked; the segments of a pair joining
//!    into fewer than l rows or classes merged and their chunks made again, until none does
//!    (with step 1's rule none does; one segment is Thm 5.1's case, so the loop ends).
//!
//! Distinct ℓ-diversity only (D12): the frequency form of a join is not bounded by the
//! theorem.

use std::collections::HashMap;

use super::super::output::NO_GROUP;
use super::super::{Generalization, Options, Output, Spec};
use crate::forest::Forest;
use crate::plan::{Diversity, Model};
use crate::progress::Progress;

/// A chunk as the base released it: per row of its segment (in the segment's order),
/// published or not and its generalized codes.
struct Chunk {
    kept: Vec<bool>,
    codes: Vec<u32>,
}

/// What the pipeline made: per fragment the generalization of every row, and how many
/// segments it ended with and merged.
pub(super) struct Chunked {
    pub fragments: Vec<Generalization>,
    /// Per fragment its groups (rows of equal codes), as `trees::classes` forms them.
    pub groups: Vec<Vec<Vec<u32>>>,
    pub segments: usize,
    pub merged: usize,
}

/// The pipeline over the `split` fragments of `forest` (an entity table alone), at the
/// declared `l`, each chunk by `base` (with the run's options).
pub(super) fn run(
    forest: &Forest,
    split: &[Vec<usize>; 2],
    features: &[Vec<u32>],
    class: &[u32],
    l: usize,
    (base, options): (&Spec, &Options),
    progress: &Progress,
) -> Result<Chunked, String> {
    let projected = [
        forest
            .project(&[split[0].clone()])
            .map_err(|e| e.to_string())?,
        forest
            .project(&[split[1].clone()])
            .map_err(|e| e.to_string())?,
    ];
    let classes = distinct(class.iter());
    if classes < l {
        return Err(format!("the class holds {classes} distinct values, fewer than l = {l}: no group can hold l of them; lower l, or choose another class"));
    }
    let rows: Vec<u32> = (0..class.len() as u32).collect();
    let least = options.count("segment_rows").max(l);
    let mut segments = segments(features, class, (l, least), rows);
    let first = segments.len();
    progress.stage("anonymizing the chunks", segments.len());
    let mut made: Vec<Option<[Chunk; 2]>> = (0..segments.len()).map(|_| None).collect();
    loop {
        for (s, rows) in segments.iter().enumerate() {
            if made[s].is_none() {
                made[s] = Some(chunks(&projected, rows, class, base, options)?);
                progress.advance(1);
            }
        }
        let fragments = assemble(&segments, &made, split, class.len());
        let groups = [
            super::trees::classes(&projected[0], &fragments[0]),
            super::trees::classes(&projected[1], &fragments[1]),
        ];
        let merges = violations(&groups, &segments, class, l);
        if merges.is_empty() {
            return Ok(Chunked {
                fragments: fragments.into(),
                groups: groups.into(),
                segments: segments.len(),
                merged: first - segments.len(),
            });
        }
        if segments.len() == 1 {
            return Err("the l-diversity pipeline's single segment still joins into fewer than l rows or classes: a group lacks one of its segment's classes".to_string());
        }
        (segments, made) = merge(segments, made, &merges);
    }
}

/// Step 2 (L252, D18): `rows` cut by median splits into segments of at least `l` rows and
/// `l` classes each, the widest feature (distinct codes among the rows over the column's
/// own) tried first. A split is also kept only while every two segments share no class or
/// at least `l` of them (relanon's, for D11): every group then holds its segment's classes,
/// so any two groups join into none or at least l classes, and no segments need merging.
fn segments(
    features: &[Vec<u32>],
    class: &[u32],
    (l, least): (usize, usize),
    rows: Vec<u32>,
) -> Vec<Vec<u32>> {
    let spans: Vec<usize> = features.iter().map(|f| distinct(f.iter())).collect();
    let mut sets = Sets::new(class, l, &rows);
    let mut done = Vec::new();
    let mut open = vec![rows];
    while let Some(rows) = open.pop() {
        match median_split(features, &spans, class, (l, least), &rows, &mut sets) {
            Some((left, right)) => {
                open.push(right);
                open.push(left);
            }
            None => done.push(rows),
        }
    }
    done.sort_unstable_by_key(|s| s.first().copied());
    done
}

/// The class sets of the segments so far, as bit masks (class codes below 64), and how
/// many segments hold each: what a split is checked against. With more classes every
/// segment must keep them all.
struct Sets {
    l: usize,
    /// Every class (None: codes past 64, so a half must keep all of its segment's classes).
    masks: Option<HashMap<u64, usize>>,
}

impl Sets {
    fn new(class: &[u32], l: usize, rows: &[u32]) -> Sets {
        let masks = class.iter().all(|&c| c < 64).then(|| {
            let mut m = HashMap::new();
            m.insert(mask(class, rows), 1);
            m
        });
        Sets { l, masks }
    }

    fn safe(&self, a: u64, b: u64) -> bool {
        let shared = (a & b).count_ones() as usize;
        shared == 0 || shared >= self.l
    }

    /// Replaces the segment of `whole` by `left` and `right` when every pair of segments
    /// stays safe; false (nothing changed) when one would not.
    fn split(&mut self, class: &[u32], whole: &[u32], left: &[u32], right: &[u32]) -> bool {
        let Some(masks) = self.masks.as_ref() else {
            let all = distinct(whole.iter().map(|&r| &class[r as usize]));
            let keeps = |half: &[u32]| distinct(half.iter().map(|&r| &class[r as usize])) == all;
            return keeps(left) && keeps(right);
        };
        let (w, a, b) = (mask(class, whole), mask(class, left), mask(class, right));
        let others = masks
            .iter()
            .filter(|&(&m, &n)| n > usize::from(m == w))
            .map(|(&m, _)| m);
        let fits = self.safe(a, b)
            && others
                .into_iter()
                .all(|m| self.safe(a, m) && self.safe(b, m));
        if fits {
            let masks = self.masks.get_or_insert_with(HashMap::new);
            if let Some(n) = masks.get_mut(&w) {
                *n -= 1;
            }
            *masks.entry(a).or_insert(0) += 1;
            *masks.entry(b).or_insert(0) += 1;
        }
        fits
    }
}

/// The classes of `rows` as a bit mask (codes below 64).
fn mask(class: &[u32], rows: &[u32]) -> u64 {
    rows.iter().fold(0u64, |m, &r| {
        m | 1u64.checked_shl(class[r as usize]).unwrap_or(0)
    })
}

/// The first feature, widest first, whose median split leaves both halves at least `l`
/// rows and `l` classes, and every pair of segments safe ([`Sets::split`]).
fn median_split(
    features: &[Vec<u32>],
    spans: &[usize],
    class: &[u32],
    (l, least): (usize, usize),
    rows: &[u32],
    sets: &mut Sets,
) -> Option<(Vec<u32>, Vec<u32>)> {
    if rows.len() < 2 * least {
        return None;
    }
    let mut order: Vec<(f64, usize)> = features
        .iter()
        .enumerate()
        .map(|(q, f)| {
            let here = distinct(rows.iter().map(|&r| &f[r as usize]));
            (here as f64 / spans[q].max(1) as f64, q)
        })
        .filter(|&(width, _)| width > 0.0)
        .collect();
    order.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    for (_, q) in order {
        let (left, right) = stratified_halves(&features[q], class, rows);
        let fits = |half: &[u32]| {
            half.len() >= least && distinct(half.iter().map(|&r| &class[r as usize])) >= l
        };
        if fits(&left) && fits(&right) && sets.split(class, rows, &left, &right) {
            return Some((left, right));
        }
    }
    None
}

/// `rows` halved on feature `f` class by class: each class's rows sorted by `f` (then row),
/// its lower half left and its upper half right (an odd one out goes left). Both halves keep
/// the segment's mix of classes, which is what bounds how many groups a chunk can form when
/// each must hold every class (D10); a median over all rows would sort a class that follows
/// the feature into one half. Relanon's reading of D18's median split.
fn stratified_halves(f: &[u32], class: &[u32], rows: &[u32]) -> (Vec<u32>, Vec<u32>) {
    let mut by_class: HashMap<u32, Vec<u32>> = HashMap::new();
    for &r in rows {
        by_class.entry(class[r as usize]).or_default().push(r);
    }
    let (mut left, mut right) = (Vec::new(), Vec::new());
    for members in by_class.values_mut() {
        members.sort_by_key(|&r| (f[r as usize], r));
        let cut = members.len().div_ceil(2);
        left.extend_from_slice(&members[..cut]);
        right.extend_from_slice(&members[cut..]);
    }
    left.sort_unstable();
    right.sort_unstable();
    (left, right)
}

fn distinct<'a>(values: impl Iterator<Item = &'a u32>) -> usize {
    let mut seen: Vec<u32> = values.copied().collect();
    seen.sort_unstable();
    seen.dedup();
    seen.len()
}

/// Steps 3-4 (L256, D10): the segment's chunk of each fragment anonymized by the base under
/// distinct l_s-diversity, l_s the segment's number of classes: every group then holds
/// every class of the segment.
fn chunks(
    projected: &[Forest; 2],
    rows: &[u32],
    class: &[u32],
    base: &Spec,
    options: &Options,
) -> Result<[Chunk; 2], String> {
    let l = distinct(rows.iter().map(|&r| &class[r as usize]));
    let model = Model::LDiversity {
        l,
        diversity: Diversity::Distinct,
    };
    let mut base_options = Options::defaults(base.options);
    base_options.seed = options.seed;
    // The chunks are many and small: the run's progress counts them, not their steps.
    let quiet = Progress::new();
    let mut out = Vec::with_capacity(2);
    for forest in projected {
        let (part, _) = forest.subset(rows).map_err(|e| e.to_string())?;
        let g = match (base.run)(&part, &model, &base_options, &quiet)
            .map_err(|e| format!("base = '{}' on a chunk: {e}", base.name))?
        {
            Output::Generalized(g) => g,
            _ => {
                return Err(format!(
                    "base = '{}' did not release generalized rows",
                    base.name
                ))
            }
        };
        let mut chunk = Chunk {
            kept: g.kept.into_iter().next().unwrap_or_default(),
            codes: g.codes.into_iter().next().unwrap_or_default(),
        };
        absorb(&part, &mut chunk);
        out.push(chunk);
    }
    let [one, two] = <[Chunk; 2]>::try_from(out).map_err(|_| "two fragments".to_string())?;
    Ok([one, two])
}

/// Step 4's "always feasible" (L258: the whole chunk as one group is k-anonymous and holds
/// every class): rows the base left out join, one by one in row order, the group whose
/// labels they widen least (LM over the group's rows); with no group, the chunk is one. A
/// group already holds every class of the segment, so it still does.
fn absorb(part: &Forest, chunk: &mut Chunk) {
    let Some(table) = part.tables.first() else {
        return;
    };
    let nqi = table.nqi();
    let rows = chunk.kept.len();
    if nqi == 0 || chunk.kept.iter().all(|&k| k) {
        return;
    }
    // Each group: its codes and its rows.
    let mut groups: Vec<(Vec<u32>, Vec<usize>)> = Vec::new();
    let mut index: HashMap<Vec<u32>, usize> = HashMap::new();
    for r in (0..rows).filter(|&r| chunk.kept[r]) {
        let codes = chunk.codes[r * nqi..(r + 1) * nqi].to_vec();
        let next = groups.len();
        let at = *index.entry(codes.clone()).or_insert(next);
        if at == groups.len() {
            groups.push((codes, Vec::new()));
        }
        groups[at].1.push(r);
    }
    let loss = |codes: &[u32]| -> f64 {
        codes
            .iter()
            .zip(&table.hierarchies)
            .map(|(&c, h)| h.loss(c))
            .sum()
    };
    let widened = |codes: &[u32], r: usize| -> Vec<u32> {
        codes
            .iter()
            .zip(table.codes(r as u32))
            .zip(&table.hierarchies)
            .map(|((&a, &b), h)| h.lca(a, b))
            .collect()
    };
    for r in (0..rows).filter(|&r| !chunk.kept[r]) {
        let best = groups
            .iter()
            .enumerate()
            .map(|(g, (codes, members))| {
                let wider = widened(codes, r);
                let cost =
                    loss(&wider) * (members.len() + 1) as f64 - loss(codes) * members.len() as f64;
                (cost, g)
            })
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        match best {
            Some((_, g)) => {
                groups[g].0 = widened(&groups[g].0, r);
                groups[g].1.push(r);
            }
            None => groups.push((table.codes(r as u32).to_vec(), vec![r])),
        }
    }
    for (codes, members) in &groups {
        for &r in members {
            chunk.kept[r] = true;
            chunk.codes[r * nqi..(r + 1) * nqi].copy_from_slice(codes);
        }
    }
}

/// Step 5 (L264): per fragment, the union of its chunks as one generalization of every row.
fn assemble(
    segments: &[Vec<u32>],
    made: &[Option<[Chunk; 2]>],
    split: &[Vec<usize>; 2],
    rows: usize,
) -> [Generalization; 2] {
    std::array::from_fn(|j| {
        let nqi = split[j].len();
        let mut kept = vec![false; rows];
        let mut codes = vec![0u32; rows * nqi];
        for (seg, chunk) in segments.iter().zip(made) {
            let Some(chunk) = chunk.as_ref().map(|c| &c[j]) else {
                continue;
            };
            for (i, &r) in seg.iter().enumerate() {
                let r = r as usize;
                kept[r] = chunk.kept.get(i).copied().unwrap_or(false);
                if let Some(c) = chunk.codes.get(i * nqi..(i + 1) * nqi) {
                    codes[r * nqi..(r + 1) * nqi].copy_from_slice(c);
                }
            }
        }
        let suppressed = kept.iter().filter(|&&k| !k).count();
        Generalization {
            kept: vec![kept],
            codes: vec![codes],
            groups: vec![vec![NO_GROUP; rows]],
            ec_sizes: Vec::new(),
            suppressed_entities: suppressed,
            levels: None,
            relocation: None,
        }
    })
}

/// D11: pairs of segments to merge, from every pair of released groups (one per fragment)
/// that shares a class yet joins into fewer than `l` rows or `l` classes.
fn violations(
    groups: &[Vec<Vec<u32>>; 2],
    segments: &[Vec<u32>],
    class: &[u32],
    l: usize,
) -> Vec<(usize, usize)> {
    let mut segment_of = vec![0usize; class.len()];
    for (s, rows) in segments.iter().enumerate() {
        for &r in rows {
            segment_of[r as usize] = s;
        }
    }
    let freq = |group: &[u32]| -> HashMap<u32, usize> {
        let mut f = HashMap::new();
        for &r in group {
            *f.entry(class[r as usize]).or_insert(0) += 1;
        }
        f
    };
    let f1: Vec<HashMap<u32, usize>> = groups[0].iter().map(|g| freq(g)).collect();
    let f2: Vec<HashMap<u32, usize>> = groups[1].iter().map(|g| freq(g)).collect();
    // Groups of the second fragment by the classes they hold: only pairs sharing one join.
    let mut holding: HashMap<u32, Vec<usize>> = HashMap::new();
    for (y, f) in f2.iter().enumerate() {
        for &c in f.keys() {
            holding.entry(c).or_default().push(y);
        }
    }
    let mut merges = Vec::new();
    for (x, fx) in f1.iter().enumerate() {
        let mut partners: Vec<usize> = fx
            .keys()
            .flat_map(|c| holding.get(c).into_iter().flatten().copied())
            .collect();
        partners.sort_unstable();
        partners.dedup();
        for y in partners {
            let (rows, classes) = join(fx, &f2[y]);
            if rows < l || classes < l {
                let sx = groups[0][x].iter().map(|&r| segment_of[r as usize]);
                let sy = groups[1][y].iter().map(|&r| segment_of[r as usize]);
                let mut all: Vec<usize> = sx.chain(sy).collect();
                all.sort_unstable();
                all.dedup();
                merges.extend(all.windows(2).map(|w| (w[0], w[1])));
                if all.len() == 1 {
                    merges.push((all[0], all[0]));
                }
            }
        }
    }
    merges
}

/// The rows and distinct classes two groups re-form when joined on the class.
fn join(fx: &HashMap<u32, usize>, fy: &HashMap<u32, usize>) -> (usize, usize) {
    let mut rows = 0;
    let mut classes = 0;
    for (c, a) in fx {
        if let Some(b) = fy.get(c) {
            rows += a * b;
            classes += 1;
        }
    }
    (rows, classes)
}

/// Segments joined along `merges` (a union-find), the chunks of every changed segment to be
/// made again. A pair within one segment (a group that fails inside its own segment) has
/// nothing to merge with but the segment after it.
fn merge(
    segments: Vec<Vec<u32>>,
    made: Vec<Option<[Chunk; 2]>>,
    merges: &[(usize, usize)],
) -> (Vec<Vec<u32>>, Vec<Option<[Chunk; 2]>>) {
    let n = segments.len();
    let mut parent: Vec<usize> = (0..n).collect();
    fn root(parent: &mut [usize], mut a: usize) -> usize {
        while parent[a] != a {
            parent[a] = parent[parent[a]];
            a = parent[a];
        }
        a
    }
    for &(a, b) in merges {
        let b = if a == b { (a + 1) % n } else { b };
        let (ra, rb) = (root(&mut parent, a), root(&mut parent, b));
        if ra != rb {
            parent[ra.max(rb)] = ra.min(rb);
        }
    }
    let mut by_root: HashMap<usize, Vec<usize>> = HashMap::new();
    for s in 0..n {
        by_root.entry(root(&mut parent, s)).or_default().push(s);
    }
    let mut roots: Vec<usize> = by_root.keys().copied().collect();
    roots.sort_unstable();
    let mut made: Vec<Option<[Chunk; 2]>> = made;
    let mut out_segments = Vec::with_capacity(roots.len());
    let mut out_made = Vec::with_capacity(roots.len());
    for r in roots {
        let members = &by_root[&r];
        if let [only] = members.as_slice() {
            out_segments.push(segments[*only].clone());
            out_made.push(made[*only].take());
            continue;
        }
        let mut rows: Vec<u32> = members
            .iter()
            .flat_map(|&s| segments[s].iter().copied())
            .collect();
        rows.sort_unstable();
        out_segments.push(rows);
        out_made.push(None);
    }
    (out_segments, out_made)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_hold_l_rows_and_l_classes_and_cover_every_row_once() {
        // Two features over 40 rows, a three-valued class cycling.
        let f0: Vec<u32> = (0..40).map(|r| r % 10).collect();
        let f1: Vec<u32> = (0..40).map(|r| r / 4).collect();
        let class: Vec<u32> = (0..40).map(|r| r % 3).collect();
        let segs = segments(&[f0, f1], &class, (2, 2), (0..40).collect());
        assert!(segs.len() > 1, "{segs:?}");
        let mut all: Vec<u32> = segs.iter().flatten().copied().collect();
        all.sort_unstable();
        assert_eq!(all, (0..40).collect::<Vec<_>>());
        for s in &segs {
            assert!(s.len() >= 2);
            assert!(
                distinct(s.iter().map(|&r| &class[r as usize])) >= 2,
                "{s:?}"
            );
        }
    }

    #[test]
    fn every_two_segments_share_no_class_or_at_least_l() {
        // Four classes, the first feature sorting them into {0, 1} and {2, 3} blocks.
        let f0: Vec<u32> = (0..48).map(|r| r / 12).collect();
        let f1: Vec<u32> = (0..48).map(|r| r % 12).collect();
        let class: Vec<u32> = (0..48).map(|r| (r / 24) * 2 + r % 2).collect();
        for l in [2, 3] {
            let segs = segments(&[f0.clone(), f1.clone()], &class, (l, l), (0..48).collect());
            let sets: Vec<u64> = segs.iter().map(|s| mask(&class, s)).collect();
            for (i, a) in sets.iter().enumerate() {
                for b in &sets[i + 1..] {
                    let shared = (a & b).count_ones() as usize;
                    assert!(
                        shared == 0 || shared >= l,
                        "l = {l}: {a:b} {b:b} in {segs:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_segment_with_too_few_classes_to_halve_stays_whole() {
        let f: Vec<u32> = (0..10).collect();
        let class = vec![0u32; 10];
        let segs = segments(&[f], &class, (2, 2), (0..10).collect());
        assert_eq!(segs, vec![(0..10).collect::<Vec<u32>>()]);
    }

    #[test]
    fn a_join_counts_rows_and_shared_classes() {
        let fx: HashMap<u32, usize> = [(0, 2), (1, 1)].into();
        let fy: HashMap<u32, usize> = [(1, 3), (2, 4)].into();
        assert_eq!(join(&fx, &fy), (3, 1));
    }

    #[test]
    fn merging_joins_the_named_segments_and_keeps_the_others_made() {
        let segments = vec![vec![0, 1], vec![2, 3], vec![4, 5]];
        let made: Vec<Option<[Chunk; 2]>> = (0..3)
            .map(|_| {
                Some(std::array::from_fn(|_| Chunk {
                    kept: vec![true; 2],
                    codes: vec![0; 2],
                }))
            })
            .collect();
        let (segs, made) = merge(segments, made, &[(0, 2)]);
        assert_eq!(segs, vec![vec![0, 1, 4, 5], vec![2, 3]]);
        assert!(made[0].is_none() && made[1].is_some());
    }
}
