//! TopDown: local recoding of a single table (an entity table without child tables) for
//! k-anonymity, built to keep LM low where the multi-relational algorithms, which cluster in
//! visiting order (001 Alg. 2), lose most of it.
//!
//! Three steps, each deterministic:
//!
//! 1. **Order** ([`top_down_order`]): a top-down partitioning over the DGHs in the spirit of
//!    top-down specialization (the seeds' hierarchies, 001 Def. 8's LM as the score; the
//!    partitioning itself is not in the seeds). A set of rows is split on one attribute, one
//!    level below the lowest common ancestor (`gen` of 001 Alg. 3) of its values; the
//!    attribute is the one whose split lowers LM most when only parts of at least `pool` rows
//!    count as specialized. Parts that small are pooled, at the parent value, and the pool is
//!    split again on the other attributes. The recursion runs until the rows of a set are
//!    equal, so its result is an order of the rows in which neighbours share as much of the
//!    hierarchies as the data allows.
//! 2. **Group** ([`segment`]): the optimal split of that order into consecutive groups of k to
//!    2k - 1 rows under LM (a dynamic program over cut points; a group of 2k or more can always
//!    be cut in two without raising any LCA, so longer ones never help). Beyond the seeds: 001
//!    Alg. 2 closes a cluster as soon as it has k members.
//! 3. **Refine** ([`refine`]): a local search. A group above k rows whose LCA on one attribute
//!    is held up by a few rows outside its majority branch hands those rows to nearby groups
//!    (in the order) when that lowers the total LM. Groups that grew to 2k or more rows are
//!    cut again by step 2. Beyond the seeds.
//!
//! Every group is released at the LCA of its members per attribute, which can be tighter than
//! the partition that produced it. Nothing is suppressed unless the table has fewer than k
//! rows. The whole run is repeated for a few pool sizes and the lowest LM kept.

use rayon::prelude::*;

use crate::algo::cdgh::Clustering;
use crate::algo::tree::Rep;
use crate::forest::Forest;
use crate::hierarchy::Hierarchy;
use crate::progress::Progress;

/// Pool sizes tried, as multiples of k: a part smaller than this many times k is pooled.
/// Measured on UCI Adult (k = 2 to 50): 1 and 2 each win at some k, larger ones never did.
const POOL_FACTORS: [usize; 2] = [1, 2];

/// How many groups on either side of a group (in the order) refinement hands rows to.
const WINDOW: usize = 8;

/// At most this many refinement passes over all groups.
const PASSES: usize = 4;

/// One QI's hierarchy with the depths and losses the steps read in their inner loops.
struct Dgh<'a> {
    h: &'a Hierarchy,
    depth: Vec<u16>,
    loss: Vec<f64>,
}

impl<'a> Dgh<'a> {
    fn new(h: &'a Hierarchy) -> Dgh<'a> {
        let root = h.root();
        let depth = (0..h.len() as u32)
            .map(|mut c| {
                let mut d = 0u16;
                while c != root && d as usize <= h.len() {
                    c = h.parent(c);
                    d += 1;
                }
                d
            })
            .collect();
        let loss = (0..h.len() as u32).map(|c| h.loss(c)).collect();
        Dgh { h, depth, loss }
    }

    fn lca(&self, a: u32, b: u32) -> u32 {
        if a == b {
            a
        } else {
            self.h.lca(a, b)
        }
    }

    /// The ancestor of `code` at depth `d` (`code` itself if it is not deeper).
    fn ancestor_at(&self, mut code: u32, d: u16) -> u32 {
        while self.depth[code as usize] > d {
            code = self.h.parent(code);
        }
        code
    }
}

/// The entity table's QI codes with their hierarchies.
struct Table<'a> {
    dghs: Vec<Dgh<'a>>,
    codes: &'a [u32],
    nqi: usize,
}

impl Table<'_> {
    fn row(&self, r: u32) -> &[u32] {
        &self.codes[r as usize * self.nqi..(r as usize + 1) * self.nqi]
    }

    /// Widens `acc` (a generalized row) to cover row `r`.
    fn widen(&self, acc: &mut [u32], r: u32) {
        for ((a, &c), d) in acc.iter_mut().zip(self.row(r)).zip(&self.dghs) {
            *a = d.lca(*a, c);
        }
    }

    /// The LCA of `rows` per attribute (`rows` is not empty).
    fn lca_of(&self, rows: &[u32]) -> Vec<u32> {
        let mut acc = self.row(rows[0]).to_vec();
        for &r in &rows[1..] {
            self.widen(&mut acc, r);
        }
        acc
    }

    /// LM' of one row generalized to `g`, summed over the attributes (001 Def. 8).
    fn loss(&self, g: &[u32]) -> f64 {
        g.iter().zip(&self.dghs).map(|(&c, d)| d.loss[c as usize]).sum()
    }

    /// LM' summed over `n` rows released as `g`.
    fn cost(&self, g: &[u32], n: usize) -> f64 {
        n as f64 * self.loss(g)
    }
}

/// Runs TopDown on the entity table at `k`. Rows of child tables (which the plan refuses for
/// this algorithm) are not published. Progress: "ordering rows top-down" counts rows as their
/// place in the order is final; "grouping" counts rows as their group is final.
pub fn cluster(forest: &Forest, k: usize, progress: &Progress) -> Clustering {
    let Some(nodes) = forest.tables.first() else {
        return Clustering {
            ecs: Vec::new(),
            suppressed: Vec::new(),
        };
    };
    let n = nodes.rows();
    let k = k.max(1);
    if n < k {
        // The one case nothing can hide in a group of k: suppress every row.
        progress.stage("grouping", n);
        progress.advance(n);
        return Clustering {
            ecs: Vec::new(),
            suppressed: (0..n as u32).collect(),
        };
    }
    let table = Table {
        dghs: nodes.hierarchies.iter().map(Dgh::new).collect(),
        codes: &nodes.qi,
        nqi: nodes.nqi(),
    };
    progress.stage("ordering rows top-down", n * POOL_FACTORS.len());
    let runs: Vec<(f64, Vec<Vec<u32>>)> = POOL_FACTORS
        .par_iter()
        .map(|&f| {
            let order = top_down_order(&table, f * k, progress);
            let groups = refine(&table, &order, segment(&table, &order, k), k);
            let cost = groups
                .iter()
                .map(|g| table.cost(&table.lca_of(g), g.len()))
                .sum::<f64>();
            (cost, groups)
        })
        .collect();
    // Lowest LM; the first pool size on a tie, so the result does not depend on scheduling.
    let mut best = 0;
    for (i, run) in runs.iter().enumerate() {
        if run.0 < runs[best].0 {
            best = i;
        }
    }
    let groups = runs.into_iter().nth(best).map(|r| r.1).unwrap_or_default();
    progress.stage("grouping", n);
    let ecs = groups
        .into_iter()
        .map(|mut members| {
            progress.advance(members.len());
            members.sort_unstable();
            Rep {
                table: 0,
                qi: table.lca_of(&members),
                members,
                children: Vec::new(),
            }
        })
        .collect();
    Clustering {
        ecs,
        suppressed: Vec::new(),
    }
}

/// How a set of rows splits on one attribute: per row its part, and the parts' children.
struct Split {
    attribute: usize,
    /// Child (hierarchy node) of each part, in first-seen order.
    children: Vec<u32>,
    /// Rows per part.
    sizes: Vec<usize>,
    /// Part of each row of the set, in the set's order.
    part_of: Vec<u16>,
}

/// Step 1: the rows in top-down order. `pool` is the smallest part that counts as
/// specialized. Sets are processed from an explicit stack (pools can nest deeper than a
/// thread's stack would like on adversarial data).
fn top_down_order(t: &Table, pool: usize, progress: &Progress) -> Vec<u32> {
    let n = t.codes.len() / t.nqi.max(1);
    let mut rows: Vec<u32> = (0..n as u32).collect();
    if t.nqi == 0 {
        progress.advance(n);
        return rows;
    }
    let mut stack = vec![(0usize, n)];
    let mut scratch: Vec<u32> = Vec::new();
    while let Some((s, e)) = stack.pop() {
        let set = &mut rows[s..e];
        let Some(split) = (set.len() > 1).then(|| best_split(t, set, pool)).flatten() else {
            progress.advance(set.len());
            continue;
        };
        // Big parts in hierarchy order, then the small ones together (the pool).
        let mut rank: Vec<usize> = (0..split.children.len()).collect();
        rank.sort_by_key(|&p| (split.sizes[p] < pool, split.children[p]));
        let mut start = vec![0usize; split.children.len()];
        let mut at = 0;
        for &p in &rank {
            start[p] = at;
            at += split.sizes[p];
        }
        scratch.clear();
        scratch.resize(set.len(), 0);
        let mut next = start.clone();
        for (i, &r) in set.iter().enumerate() {
            let p = split.part_of[i] as usize;
            scratch[next[p]] = r;
            next[p] += 1;
        }
        set.copy_from_slice(&scratch);
        let any_big = rank.first().is_some_and(|&p| split.sizes[p] >= pool);
        let pool_start = rank
            .iter()
            .find(|&&p| split.sizes[p] < pool)
            .map_or(e - s, |&p| start[p]);
        let mut ranges: Vec<(usize, usize)> = Vec::new();
        for &p in &rank {
            let (a, b) = (start[p], start[p] + split.sizes[p]);
            if split.sizes[p] >= pool || !any_big {
                ranges.push((s + a, s + b));
            }
        }
        if any_big && pool_start < e - s {
            ranges.push((s + pool_start, e));
        }
        debug_assert!(ranges.iter().all(|&(a, b)| b - a < e - s), "{}", split.attribute);
        stack.extend(ranges.into_iter().rev());
    }
    rows
}

/// The split of `set` with the lowest LM when parts under `pool` rows stay at the set's LCA
/// (ties: the lower LM with every part specialized, then the first attribute). `None` when
/// every row of the set is the same.
fn best_split(t: &Table, set: &[u32], pool: usize) -> Option<Split> {
    let lca = t.lca_of(set);
    let here = t.loss(&lca);
    let mut best: Option<((f64, f64), Split)> = None;
    for (a, d) in t.dghs.iter().enumerate() {
        if d.loss[lca[a] as usize] == 0.0 {
            continue;
        }
        let depth = d.depth[lca[a] as usize] + 1;
        let mut children: Vec<u32> = Vec::new();
        let mut lcas: Vec<Vec<u32>> = Vec::new();
        let mut sizes: Vec<usize> = Vec::new();
        let mut part_of: Vec<u16> = Vec::with_capacity(set.len());
        for &r in set {
            let child = d.ancestor_at(t.row(r)[a], depth);
            let p = match children.iter().position(|&c| c == child) {
                Some(p) => p,
                None => {
                    children.push(child);
                    lcas.push(t.row(r).to_vec());
                    sizes.push(0);
                    children.len() - 1
                }
            };
            t.widen(&mut lcas[p], r);
            sizes[p] += 1;
            part_of.push(p as u16);
        }
        if children.len() < 2 {
            continue;
        }
        let (mut pooled, mut all) = (0.0, 0.0);
        for (g, &size) in lcas.iter().zip(&sizes) {
            let c = t.cost(g, size);
            all += c;
            pooled += if size >= pool { c } else { size as f64 * here };
        }
        let score = (pooled, all);
        if best.as_ref().is_none_or(|(b, _)| score < *b) {
            best = Some((
                score,
                Split {
                    attribute: a,
                    children,
                    sizes,
                    part_of,
                },
            ));
        }
    }
    best.map(|(_, s)| s)
}

/// Step 2: `order` cut into consecutive groups of k to 2k - 1 rows with the least total LM
/// (`order` has at least k rows). Ties keep the shorter last group.
fn segment(t: &Table, order: &[u32], k: usize) -> Vec<Vec<u32>> {
    let n = order.len();
    let mut best = vec![f64::INFINITY; n + 1];
    let mut cut = vec![0usize; n + 1];
    best[0] = 0.0;
    let mut acc = vec![0u32; t.nqi];
    for j in k..=n {
        acc.copy_from_slice(t.row(order[j - 1]));
        let shortest = j.saturating_sub(2 * k - 1);
        for i in (shortest..j).rev() {
            if i + 1 < j {
                t.widen(&mut acc, order[i]);
            }
            if j - i < k || !best[i].is_finite() {
                continue;
            }
            let c = best[i] + t.cost(&acc, j - i);
            if c < best[j] {
                best[j] = c;
                cut[j] = i;
            }
        }
    }
    let mut groups = Vec::new();
    let mut j = n;
    while j > 0 {
        let i = cut[j];
        groups.push(order[i..j].to_vec());
        j = i;
    }
    groups.reverse();
    groups
}

/// A group under refinement.
struct Group {
    rows: Vec<u32>,
    lca: Vec<u32>,
    cost: f64,
}

impl Group {
    fn new(t: &Table, rows: Vec<u32>) -> Group {
        let lca = t.lca_of(&rows);
        let cost = t.cost(&lca, rows.len());
        Group { rows, lca, cost }
    }
}

/// A proposed hand-over: `keep` stays, each of `moves` goes to a group (by index).
struct Shrink {
    delta: f64,
    keep: Vec<u32>,
    moves: Vec<(u32, usize)>,
}

/// Step 3: local search over `groups` (in order), then groups of 2k or more rows cut again.
fn refine(t: &Table, order: &[u32], groups: Vec<Vec<u32>>, k: usize) -> Vec<Vec<u32>> {
    let mut gs: Vec<Group> = groups.into_iter().map(|g| Group::new(t, g)).collect();
    for _ in 0..PASSES {
        let mut moved = false;
        for a in 0..gs.len() {
            let Some(s) = best_shrink(t, &gs, a, k) else {
                continue;
            };
            gs[a] = Group::new(t, s.keep);
            for (r, b) in s.moves {
                let g = &mut gs[b];
                g.rows.push(r);
                t.widen(&mut g.lca, r);
                g.cost = t.cost(&g.lca, g.rows.len());
            }
            moved = true;
        }
        if !moved {
            break;
        }
    }
    // Position in the order, to cut a grown group along it.
    let mut position = vec![0u32; order.len()];
    for (i, &r) in order.iter().enumerate() {
        position[r as usize] = i as u32;
    }
    let mut out = Vec::with_capacity(gs.len());
    for mut g in gs {
        if g.rows.len() >= 2 * k {
            g.rows.sort_by_key(|&r| position[r as usize]);
            out.extend(segment(t, &g.rows, k));
        } else {
            out.push(g.rows);
        }
    }
    out
}

/// The hand-over from group `a` that lowers LM most, if any lowers it: for each attribute,
/// the rows outside the branch (below the group's LCA) most of its rows are in move, each to
/// the neighbouring group it raises least, provided at least k rows stay.
fn best_shrink(t: &Table, gs: &[Group], a: usize, k: usize) -> Option<Shrink> {
    let g = &gs[a];
    if g.rows.len() <= k {
        return None;
    }
    let window = a.saturating_sub(WINDOW)..(a + WINDOW + 1).min(gs.len());
    let mut best: Option<Shrink> = None;
    for (q, d) in t.dghs.iter().enumerate() {
        let top = g.lca[q];
        if d.loss[top as usize] == 0.0 {
            continue;
        }
        let depth = d.depth[top as usize] + 1;
        let mut counts: Vec<(u32, usize)> = Vec::new();
        for &r in &g.rows {
            let c = d.ancestor_at(t.row(r)[q], depth);
            match counts.iter_mut().find(|(x, _)| *x == c) {
                Some(e) => e.1 += 1,
                None => counts.push((c, 1)),
            }
        }
        let Some(&(major, size)) = counts
            .iter()
            .max_by(|x, y| x.1.cmp(&y.1).then(y.0.cmp(&x.0)))
        else {
            continue;
        };
        let out = g.rows.len() - size;
        if size < k || out > k {
            continue;
        }
        let (keep, leave): (Vec<u32>, Vec<u32>) = g
            .rows
            .iter()
            .partition(|&&r| d.ancestor_at(t.row(r)[q], depth) == major);
        let kept = Group::new(t, keep);
        let mut delta = kept.cost - g.cost;
        // Receiving groups as they would be after the rows before.
        let mut grown: Vec<(usize, Vec<u32>, usize)> = Vec::new();
        let mut moves = Vec::with_capacity(leave.len());
        for &r in &leave {
            let mut pick: Option<(f64, usize)> = None;
            for b in window.clone() {
                if b == a {
                    continue;
                }
                let (lca, n) = match grown.iter().find(|e| e.0 == b) {
                    Some(e) => (e.1.as_slice(), e.2),
                    None => (gs[b].lca.as_slice(), gs[b].rows.len()),
                };
                let mut wider = lca.to_vec();
                t.widen(&mut wider, r);
                let rise = t.cost(&wider, n + 1) - t.cost(lca, n);
                if pick.is_none_or(|(c, _)| rise < c) {
                    pick = Some((rise, b));
                }
            }
            let Some((rise, b)) = pick else {
                break;
            };
            delta += rise;
            moves.push((r, b));
            match grown.iter_mut().find(|e| e.0 == b) {
                Some(e) => {
                    t.widen(&mut e.1, r);
                    e.2 += 1;
                }
                None => {
                    let mut lca = gs[b].lca.clone();
                    t.widen(&mut lca, r);
                    grown.push((b, lca, gs[b].rows.len() + 1));
                }
            }
        }
        if moves.len() < leave.len() {
            continue;
        }
        if delta < -1e-9 && best.as_ref().is_none_or(|s| delta < s.delta) {
            best = Some(Shrink {
                delta,
                keep: kept.rows,
                moves,
            });
        }
    }
    best
}
