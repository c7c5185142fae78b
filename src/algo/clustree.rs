//! l-diverse clustering of whole records: 000 Alg. 4 (CreateCluster) and Alg. 5 (ClusTree);
//! CToff is Alg. 5 with chi = infinity from the start (000 Sec. 2.4).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;

use crate::algo::cdgh::Clustering;
use crate::algo::diversify::{Diversifier, Profile};
use crate::algo::tree::Rep;
use crate::forest::Forest;
use crate::progress::Progress;

/// Parameters of Alg. 5.
#[derive(Debug, Clone, Copy)]
pub struct ClustreeParams {
    /// Records per cluster: l (or k when ClusTree serves k-anonymity).
    pub size: usize,
    /// Largest finite outlier multiplier (line 26).
    pub m: f64,
    /// Step of chi per pass (line 25).
    pub s: f64,
    /// CToff: accept every cluster (chi = infinity at line 3).
    pub ctoff: bool,
    /// How line 5 of Alg. 4 finds the cheapest candidate.
    pub search: Search,
    /// Candidate blocking: CreateCluster weighs only the this many remaining records nearest
    /// the seed in [`blocking_order`] instead of all of F. `None` (the default) is Alg. 4 as
    /// written; a number trades utility for time on warehouses where O(n^2) is too much.
    pub candidates: Option<usize>,
}

/// How CreateCluster finds the candidate of least cost (000 Alg. 4 line 5). Both return the
/// same record every time; `Plain` is kept as the reference the other is tested against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Search {
    /// Diversify every candidate with the representative.
    Plain,
    /// Skip candidates whose [`Diversifier::cost_bound`] exceeds the best cost found, and
    /// (ClusTree) remember each seed's candidates across passes.
    Pruned,
}

/// Running mean and standard deviation of accepted cluster costs (Welford's online update,
/// which 000 Sec. 2.3.4 cites so that lines 14-15 cost O(1)). The deviation is the population
/// one: the clusters in R are all there is, not a sample.
#[derive(Debug, Default, Clone, Copy)]
struct Welford {
    n: usize,
    mean: f64,
    m2: f64,
}

impl Welford {
    fn push(&mut self, x: f64) {
        self.n += 1;
        let d = x - self.mean;
        self.mean += d / self.n as f64;
        self.m2 += d * (x - self.mean);
    }

    fn sd(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            (self.m2 / self.n as f64).sqrt()
        }
    }
}

/// 000 Alg. 5 over the entities in `order` (the order F is scanned in).
///
/// Decisions: a pass scans the records that were in F when it started, in `order`; a rejected
/// cluster's records go back to F and are seeds again in the next pass. When CreateCluster
/// cannot complete a cluster (no remaining record can join it diversely) the seed waits for a
/// later pass; in the final pass (chi = infinity) it is suppressed whole, like the fewer than l
/// records left at the end (lines 6-8).
///
/// Progress: one stage per pass, named by its number, chi and the entities placed before it,
/// counting the pass's seeds as they are tried. Seeds, not placed entities, because a pass at
/// a low chi can reject most clusters: counting placements would stand still while CreateCluster
/// (the cost of a pass) runs once per seed.
pub fn cluster(
    forest: &Forest,
    dv: &Diversifier,
    order: &[u32],
    p: ClustreeParams,
    progress: &Progress,
) -> Clustering {
    let size = p.size.max(1);
    let trees: Vec<Rep> = (0..forest.entities() as u32)
        .map(|e| Rep::from_forest(forest, 0, e))
        .collect();
    let source_weights = dv.source_weights();
    let mut in_f = vec![false; trees.len()];
    for &e in order {
        in_f[e as usize] = true;
    }
    let mut remaining = order.len();
    let profiles: Vec<Profile> = trees.iter().map(|t| dv.profile(t)).collect();
    let ctx = Context::new(forest, dv, &trees, &profiles, order, p);
    let mut blocking = p.candidates.map(|_| Blocking::new(forest, order));
    // Seeds come back only when chi is finite (a rejected cluster), so CToff remembers nothing.
    let mut memo =
        (p.search == Search::Pruned && !p.ctoff && p.candidates.is_none()).then(Memo::default);
    let mut ecs: Vec<Rep> = Vec::new();
    let mut suppressed: Vec<u32> = Vec::new();
    let mut costs = Welford::default();
    // Line 3 (CToff: infinity from the start).
    let mut chi = if p.ctoff { f64::INFINITY } else { 0.0 };
    let mut number = 0;
    loop {
        number += 1;
        let pass: Vec<u32> = order
            .iter()
            .copied()
            .filter(|&e| in_f[e as usize])
            .collect();
        let placed = order.len() - remaining;
        let label = format!(
            "pass {number} (chi {chi:.2}; {placed} of {} placed)",
            order.len()
        );
        progress.stage(&label, pass.len());
        for (tried, &a) in pass.iter().enumerate() {
            progress.advance(1);
            if !in_f[a as usize] {
                continue;
            }
            // Lines 6-8.
            if remaining < size {
                suppressed.extend(order.iter().copied().filter(|&e| in_f[e as usize]));
                // The seeds left in this pass are among them.
                progress.advance(pass.len() - tried - 1);
                return Clustering { ecs, suppressed };
            }
            let pool = candidate_pool(&ctx, blocking.as_ref(), &in_f, a);
            let Some(c) = create_cluster(&ctx, &pool, &in_f, a, memo.as_mut()) else {
                if chi.is_infinite() {
                    leave(&mut in_f, blocking.as_mut(), memo.as_mut(), a);
                    remaining -= 1;
                    suppressed.push(a);
                }
                continue;
            };
            // Lines 10-22.
            let cost = dv.cluster_cost(&c, &source_weights);
            let outlier = chi.is_finite() && costs.n > 1 && cost > costs.mean + costs.sd() * chi;
            if outlier {
                continue;
            }
            for &e in &c.members {
                leave(&mut in_f, blocking.as_mut(), memo.as_mut(), e);
            }
            remaining -= c.member_count();
            costs.push(cost);
            ecs.push(c);
        }
        // Lines 23-24.
        if remaining == 0 {
            return Clustering { ecs, suppressed };
        }
        if let Some(memo) = memo.as_mut() {
            memo.forget_stale(&in_f);
        }
        // Lines 25-27.
        chi += p.s;
        if chi >= p.m {
            chi = f64::INFINITY;
        }
    }
}

/// Removes `e` from F (and from what the search structures know of F).
fn leave(in_f: &mut [bool], blocking: Option<&mut Blocking>, memo: Option<&mut Memo>, e: u32) {
    in_f[e as usize] = false;
    if let Some(b) = blocking {
        b.remove(e);
    }
    if let Some(m) = memo {
        m.forget_seed(e);
    }
}

/// What every CreateCluster of one run shares.
struct Context<'a> {
    dv: &'a Diversifier<'a>,
    trees: &'a [Rep],
    /// The trees' profiles for [`Diversifier::cost_bound`].
    profiles: &'a [Profile<'a>],
    order: &'a [u32],
    /// Position of each entity in `order` (ties go to the earliest).
    position: Vec<u32>,
    size: usize,
    search: Search,
    candidates: Option<usize>,
}

impl<'a> Context<'a> {
    fn new(
        forest: &Forest,
        dv: &'a Diversifier<'a>,
        trees: &'a [Rep],
        profiles: &'a [Profile<'a>],
        order: &'a [u32],
        p: ClustreeParams,
    ) -> Self {
        let mut position = vec![u32::MAX; forest.entities()];
        for (i, &e) in order.iter().enumerate() {
            position[e as usize] = i as u32;
        }
        Context {
            dv,
            trees,
            profiles,
            order,
            position,
            size: p.size.max(1),
            search: p.search,
            candidates: p.candidates,
        }
    }
}

/// The records seed `a` may recruit, as (position in `order`, entity) in `order`: all of F
/// but `a`, or with blocking its nearest remaining neighbours.
fn candidate_pool(
    ctx: &Context,
    blocking: Option<&Blocking>,
    in_f: &[bool],
    a: u32,
) -> Vec<(u32, u32)> {
    match (blocking, ctx.candidates) {
        (Some(b), Some(n)) => {
            let mut pool: Vec<(u32, u32)> = b
                .neighbours(a, n)
                .into_iter()
                .map(|e| (ctx.position[e as usize], e))
                .collect();
            pool.sort_unstable();
            pool
        }
        _ => ctx
            .order
            .iter()
            .enumerate()
            .filter(|&(_, &e)| in_f[e as usize] && e != a)
            .map(|(i, &e)| (i as u32, e))
            .collect(),
    }
}

/// 000 Alg. 4: a cluster seeded by `a` that recruits, `size - 1` times, the record of `pool`
/// still in F whose diversify with the representative costs least (line 5; ties go to the
/// earliest in `order`), skipping records whose root cannot be diverse with it. `None` if it
/// runs out of such records. F itself is not changed: the caller removes the members if it
/// keeps the cluster.
fn create_cluster(
    ctx: &Context,
    pool: &[(u32, u32)],
    in_f: &[bool],
    a: u32,
    mut memo: Option<&mut Memo>,
) -> Option<Rep> {
    let mut rep = ctx.trees[a as usize].clone();
    let mut taken = vec![a];
    // The runners-up of the previous step: likely cheap again, so their costs make a good
    // first limit for the bounds of the next step.
    let mut probe: Vec<u32> = Vec::new();
    for _ in 1..ctx.size {
        let b = match ctx.search {
            Search::Plain => cheapest_plain(ctx, &rep, pool, &taken),
            Search::Pruned => {
                let mut own: Vec<Entry>;
                let fresh = || fresh_entries(ctx, &rep, pool, &taken, &probe);
                let entries = match memo.as_deref_mut() {
                    Some(m) => m.entries(&taken, fresh),
                    None => {
                        own = fresh();
                        &mut own
                    }
                };
                let b = cheapest_pruned(ctx, &rep, entries, in_f);
                probe = entries
                    .iter()
                    .filter(|x| in_f[x.e as usize] && Some(x.e) != b)
                    .take(PROBE)
                    .map(|x| x.e)
                    .collect();
                b
            }
        }?;
        // Line 8: the representative absorbs T_b (its members after the cluster's).
        rep = ctx
            .dv
            .merge(&rep, &ctx.trees[b as usize])
            .expect("a candidate whose root is diverse with the representative merges");
        taken.push(b);
    }
    Some(rep)
}

/// Line 5 as written: diversify every candidate of the pool with the representative.
fn cheapest_plain(ctx: &Context, rep: &Rep, pool: &[(u32, u32)], taken: &[u32]) -> Option<u32> {
    let best = pool
        .par_iter()
        .filter(|(_, e)| !taken.contains(e))
        .filter(|(_, e)| ctx.dv.diverse(rep, &ctx.trees[*e as usize]))
        .map(|&(pos, e)| (ctx.dv.cost(rep, &ctx.trees[e as usize]), pos, e))
        .reduce_with(|x, y| if (y.0, y.1) < (x.0, x.1) { y } else { x });
    best.map(|(_, _, e)| e)
}

/// Relative slack between a bound and a cost: bounds and costs add the same terms in other
/// orders, so they may differ by rounding (about 1e-16 per term); a candidate is skipped only
/// when its bound exceeds the best cost by more than this.
const SLACK: f64 = 1e-9;

/// The highest key a candidate may have and still tie with a cost of `best`.
fn reach(best: f64) -> f64 {
    best + SLACK * (1.0 + best.abs())
}

/// One candidate of a CreateCluster step: its exact cost, or a lower bound on it.
#[derive(Debug, Clone, Copy)]
struct Entry {
    key: f64,
    pos: u32,
    e: u32,
    exact: bool,
}

/// Entries in the order the search reads them: by key, then position in `order`.
fn sort_entries(entries: &mut [Entry]) {
    // `partial_cmp`, not `total_cmp`: -0.0 and 0.0 tie, as in the plain search.
    entries.sort_unstable_by(|x, y| {
        x.key
            .partial_cmp(&y.key)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(x.pos.cmp(&y.pos))
    });
}

/// Every candidate of the pool whose root is diverse with the representative, each with its
/// exact cost or, when its bound already exceeds a cost found, that bound. Which of the two
/// an entry holds depends on thread timing; the winner [`cheapest_pruned`] picks does not.
fn fresh_entries(
    ctx: &Context,
    rep: &Rep,
    pool: &[(u32, u32)],
    taken: &[u32],
    probe: &[u32],
) -> Vec<Entry> {
    let mut probed: Vec<Entry> = probe
        .par_iter()
        .filter(|&&e| !taken.contains(&e) && ctx.dv.diverse(rep, &ctx.trees[e as usize]))
        .map(|&e| Entry {
            key: ctx.dv.cost(rep, &ctx.trees[e as usize]),
            pos: ctx.position[e as usize],
            e,
            exact: true,
        })
        .collect();
    let first = probed
        .iter()
        .map(|x| if x.key > 0.0 { x.key } else { 0.0 })
        .fold(f64::INFINITY, f64::min);
    // The least cost found so far, as f64 bits (non-negative floats order like their bits).
    let best = AtomicU64::new(first.to_bits());
    let profile = ctx.dv.profile(rep);
    let quick = ctx.dv.quick(&profile);
    // Every diverse candidate with its quick bound, cheapest first: once the limit is set
    // by a good cost, the rest of the list is skipped without further work.
    let mut quick_bounds: Vec<Entry> = pool
        .par_iter()
        .filter(|(_, e)| !taken.contains(e) && !probe.contains(e))
        .filter(|(_, e)| ctx.dv.diverse(rep, &ctx.trees[*e as usize]))
        .map(|&(pos, e)| Entry {
            key: ctx
                .dv
                .quick_bound(&quick, &profile, &ctx.profiles[e as usize]),
            pos,
            e,
            exact: false,
        })
        .collect();
    sort_entries(&mut quick_bounds);
    let mut entries = Vec::with_capacity(quick_bounds.len() + probed.len());
    let mut rest = &quick_bounds[..];
    while let Some(first) = rest.first() {
        if first.key > reach(f64::from_bits(best.load(Ordering::Relaxed))) {
            entries.extend_from_slice(rest);
            break;
        }
        let (chunk, after) = rest.split_at(rest.len().min(CHUNK));
        rest = after;
        let done: Vec<Entry> = chunk
            .par_iter()
            .map(|&x| {
                let limit = reach(f64::from_bits(best.load(Ordering::Relaxed)));
                if x.key > limit {
                    return x;
                }
                let candidate = &ctx.profiles[x.e as usize];
                let bound = ctx.dv.cost_bound(&profile, candidate, limit);
                if bound > limit {
                    return Entry { key: bound, ..x };
                }
                let cost = ctx.dv.cost(rep, &ctx.trees[x.e as usize]);
                let nonnegative = if cost > 0.0 { cost } else { 0.0 };
                best.fetch_min(nonnegative.to_bits(), Ordering::Relaxed);
                Entry {
                    key: cost,
                    exact: true,
                    ..x
                }
            })
            .collect();
        entries.extend(done);
    }
    entries.append(&mut probed);
    sort_entries(&mut entries);
    entries
}

/// Candidates bounded (and, within reach, diversified) in parallel before the limit is read
/// again for the rest.
const CHUNK: usize = 16;

/// How many runners-up of one step are diversified first in the next.
const PROBE: usize = 4;

/// How many bounded candidates are diversified at once when a bound comes within reach.
const BATCH: usize = 16;

/// The candidate still in F of least (cost, position): the first exact entry in F, once every
/// entry in F whose bound is within reach of its cost has been made exact. Entries are made
/// exact in place, so a later pass starts from what this one learned.
fn cheapest_pruned(ctx: &Context, rep: &Rep, entries: &mut [Entry], in_f: &[bool]) -> Option<u32> {
    loop {
        let live = || entries.iter().filter(|x| in_f[x.e as usize]);
        let limit = live()
            .find(|x| x.exact)
            .map_or(f64::INFINITY, |x| reach(x.key));
        let open: Vec<usize> = entries
            .iter()
            .enumerate()
            .filter(|(_, x)| in_f[x.e as usize] && !x.exact && x.key <= limit)
            .map(|(i, _)| i)
            .take(BATCH)
            .collect();
        if open.is_empty() {
            return live().next().map(|x| x.e);
        }
        let costs: Vec<f64> = open
            .par_iter()
            .map(|&i| ctx.dv.cost(rep, &ctx.trees[entries[i].e as usize]))
            .collect();
        for (&i, cost) in open.iter().zip(costs) {
            entries[i].key = cost;
            entries[i].exact = true;
        }
        sort_entries(entries);
    }
}

/// ClusTree's memory across passes: per taken prefix (seed first, then recruits in order),
/// the entries of the step that prefix starts. Exact because a step's costs depend only on
/// the prefix (the representative is the prefix merged in order) and F only shrinks: the
/// cheapest candidate still in F is found among the same entries.
#[derive(Default)]
struct Memo {
    steps: HashMap<Vec<u32>, Vec<Entry>>,
}

impl Memo {
    fn entries(&mut self, taken: &[u32], fresh: impl FnOnce() -> Vec<Entry>) -> &mut Vec<Entry> {
        if !self.steps.contains_key(taken) {
            self.steps.insert(taken.to_vec(), fresh());
        }
        self.steps
            .get_mut(taken)
            .expect("the entries were just inserted")
    }

    /// A record that left F is never a seed again.
    fn forget_seed(&mut self, e: u32) {
        self.steps.retain(|k, _| k[0] != e);
    }

    /// Prefixes with a member that left F can never be taken again.
    fn forget_stale(&mut self, in_f: &[bool]) {
        self.steps
            .retain(|k, _| k.iter().all(|&e| in_f[e as usize]));
    }
}

/// Candidate blocking: the entities sorted so that likely cheap partners are near each other
/// (by the root's QI codes, then the number of children per child table, then the number of
/// vertices, then position), with a linked list over that order of the records still in F.
struct Blocking {
    /// Rank of each entity in the sorted order; `by_rank` is its inverse.
    rank: Vec<u32>,
    by_rank: Vec<u32>,
    /// Neighbouring ranks still in F (`NONE`: none).
    prev: Vec<u32>,
    next: Vec<u32>,
}

const NONE: u32 = u32::MAX;

impl Blocking {
    fn new(forest: &Forest, order: &[u32]) -> Self {
        let t = &forest.tables[0];
        let key = |e: u32| {
            let shape: Vec<usize> = t.children.iter().map(|c| c.of(e).len()).collect();
            let vertices = Rep::from_forest(forest, 0, e).nodes();
            (t.codes(e).to_vec(), shape, vertices)
        };
        let mut keyed: Vec<_> = order
            .iter()
            .enumerate()
            .map(|(pos, &e)| (key(e), pos, e))
            .collect();
        keyed.sort();
        let by_rank: Vec<u32> = keyed.into_iter().map(|(_, _, e)| e).collect();
        let mut rank = vec![NONE; forest.entities()];
        for (r, &e) in by_rank.iter().enumerate() {
            rank[e as usize] = r as u32;
        }
        let n = by_rank.len() as u32;
        Blocking {
            rank,
            by_rank,
            prev: (0..n).map(|r| r.checked_sub(1).unwrap_or(NONE)).collect(),
            next: (0..n)
                .map(|r| if r + 1 < n { r + 1 } else { NONE })
                .collect(),
        }
    }

    fn remove(&mut self, e: u32) {
        let r = self.rank[e as usize];
        if r == NONE {
            return;
        }
        let (p, n) = (self.prev[r as usize], self.next[r as usize]);
        if p != NONE {
            self.next[p as usize] = n;
        }
        if n != NONE {
            self.prev[n as usize] = p;
        }
        self.rank[e as usize] = NONE;
    }

    /// Up to `n` records still in F nearest `a` in the blocking order, alternately after and
    /// before it.
    fn neighbours(&self, a: u32, n: usize) -> Vec<u32> {
        let r = self.rank[a as usize];
        let mut out = Vec::with_capacity(n);
        if r == NONE {
            return out;
        }
        let (mut up, mut down) = (self.next[r as usize], self.prev[r as usize]);
        while out.len() < n && (up != NONE || down != NONE) {
            if up != NONE {
                out.push(self.by_rank[up as usize]);
                up = self.next[up as usize];
            }
            if out.len() < n && down != NONE {
                out.push(self.by_rank[down as usize]);
                down = self.prev[down as usize];
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::Welford;

    #[test]
    fn welford_matches_the_two_pass_formula() {
        let xs = [3.0, 7.0, 7.0, 19.0, 24.0];
        let mut w = Welford::default();
        for x in xs {
            w.push(x);
        }
        let mean = xs.iter().sum::<f64>() / 5.0;
        let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / 5.0;
        assert!((w.mean - mean).abs() < 1e-12);
        assert!((w.sd() - var.sqrt()).abs() < 1e-12);
    }
}
