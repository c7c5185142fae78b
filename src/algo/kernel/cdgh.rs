//! The CDGH clustering skeleton of MiRaCle (001 Alg. 2): entities join the nearest open
//! cluster unless it is farther than `th` and fewer than `climit` clusters are open; a
//! cluster of k members is closed as an equivalence class; leftovers are merged; the last
//! cluster smaller than k is suppressed whole.

use rayon::prelude::*;

use crate::algo::kernel::pairwise::{Pairwise, Summary};
use crate::algo::kernel::tree::{Clustering, Rep};
use crate::algo::options::{Default, Kind, OptionSpec, Options};
use crate::forest::Forest;
use crate::progress::Progress;

/// Parameters of Alg. 2.
#[derive(Debug, Clone, Copy)]
pub struct CdghParams {
    pub k: usize,
    pub threshold: f64,
    pub climit: usize,
}

/// `threshold` of Alg. 2 line 6.
pub const THRESHOLD: OptionSpec = OptionSpec {
    name: "threshold",
    aliases: &["th"],
    kind: Kind::Number { min: 0.0, max: 1.0 },
    default: Default::Number(0.3),
    check: None,
    doc: "an entity opens a new cluster when the nearest open one is farther than this (line 6)",
};

/// `climit` of Alg. 2 line 6.
pub const CLIMIT: OptionSpec = OptionSpec {
    name: "climit",
    aliases: &[],
    kind: Kind::Count { min: 1.0, max: 1e9 },
    default: Default::Count(150),
    check: None,
    doc: "at most this many clusters open at once (line 6)",
};

/// The options of Alg. 2, read by every algorithm built on it.
pub const OPTIONS: &[OptionSpec] = &[THRESHOLD, CLIMIT];

impl CdghParams {
    /// Alg. 2's parameters for groups of `k` from the [`OPTIONS`] in `options`.
    pub fn from_options(k: usize, options: &Options) -> CdghParams {
        CdghParams {
            k,
            threshold: options.number("threshold"),
            climit: options.count("climit"),
        }
    }
}

/// The open clusters with each one's [`Pairwise::weight`] and [`Pairwise::summary`],
/// kept beside them because every visited entity is compared with every open cluster.
#[derive(Default)]
struct Open {
    reps: Vec<Rep>,
    weights: Vec<f64>,
    summaries: Vec<Summary>,
}

/// A tree about to be compared with the open clusters: the node, its weight and summary.
struct Probe<'r> {
    rep: &'r Rep,
    weight: f64,
    summary: &'r Summary,
}

impl Open {
    fn len(&self) -> usize {
        self.reps.len()
    }

    fn is_empty(&self) -> bool {
        self.reps.is_empty()
    }

    fn push(&mut self, rep: Rep, weight: f64, summary: Summary) {
        self.reps.push(rep);
        self.weights.push(weight);
        self.summaries.push(summary);
    }

    /// `remove`, not `swap_remove`: cluster indices break ties, so keep their order.
    fn remove(&mut self, i: usize) -> Rep {
        self.weights.remove(i);
        self.summaries.remove(i);
        self.reps.remove(i)
    }

    fn merge_into(&mut self, pw: &Pairwise, i: usize, v: &Rep) {
        self.reps[i] = pw.merge(&self.reps[i], v);
        self.weights[i] = pw.weight(&self.reps[i]);
        self.summaries[i] = pw.summary(&self.reps[i]);
    }

    /// Open cluster `i` as a [`Probe`] (for merging leftovers, line 14).
    fn probe(&self, i: usize) -> Probe<'_> {
        Probe {
            rep: &self.reps[i],
            weight: self.weights[i],
            summary: &self.summaries[i],
        }
    }
}

/// Index and distance of the open cluster nearest to `v` (Alg. 2 line 5; ties go to the
/// lowest index so the result does not depend on thread scheduling).
///
/// Exact, but not exhaustive: clusters are ranked by a lower bound on their distance
/// ([`Pairwise::lower_bound`]); the first few are measured, and then only those whose bound
/// does not exceed the best distance found. A skipped cluster is farther than the nearest
/// (the margin covers the rounding of two sums of the same non-negative terms), so the
/// answer is the exhaustive one, ties included.
fn nearest(pw: &Pairwise, open: &Open, v: &Probe, skip: Option<usize>) -> Option<(usize, f64)> {
    let mut candidates: Vec<(f64, usize)> = (0..open.len())
        .filter(|&i| Some(i) != skip)
        .map(|i| {
            let total = open.reps[i].member_count() as f64 * open.weights[i]
                + v.rep.member_count() as f64 * v.weight;
            let bound = pw.lower_bound(&open.reps[i], &open.summaries[i], v.rep, v.summary);
            (if total > 0.0 { bound / total } else { 0.0 }, i)
        })
        .collect();
    candidates.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    // A few of the most promising on this thread find a near cluster; then one parallel
    // round over what is left under the bound (a round per entity: handing work to the
    // pool costs more than a small round saves).
    let distance = |&(_, i): &(f64, usize)| {
        let d = pw.distance_weighted(&open.reps[i], open.weights[i], v.rep, v.weight);
        (i, d)
    };
    let (first, rest) = candidates.split_at(FIRST_ROUND.min(candidates.len()));
    let best = first.iter().map(distance).reduce(nearer);
    let cutoff = best.map_or(f64::INFINITY, |(_, d)| d * (1.0 + 1e-9) + 1e-12);
    let rest = &rest[..rest.partition_point(|&(bound, _)| bound <= cutoff)];
    let found = rest.par_iter().map(distance).reduce_with(nearer);
    match (best, found) {
        (Some(a), Some(b)) => Some(nearer(a, b)),
        (a, b) => a.or(b),
    }
}

/// How many clusters [`nearest`] tries first, on the calling thread.
const FIRST_ROUND: usize = 2;

/// The nearer of two `(cluster, distance)` answers, the lower index on a tie.
fn nearer(a: (usize, f64), b: (usize, f64)) -> (usize, f64) {
    if b.1 < a.1 || (b.1 == a.1 && b.0 < a.0) {
        b
    } else {
        a
    }
}

/// 001 Alg. 2. `order` is the sequence entities are visited in (lines 2-12).
///
/// Decisions: line 11 closes a cluster when it reaches k members ("more than k" in the text
/// would make every EC k + 1 large for no privacy gain); line 6 opens a new cluster only while
/// fewer than `climit` are open, so there are never more than `climit`.
///
/// Progress: stage "clustering" counts each entity as it is visited; stage "merging leftover
/// clusters" counts the entities left open as their cluster closes or is suppressed.
pub fn cluster(
    forest: &Forest,
    pw: &Pairwise,
    order: &[u32],
    p: CdghParams,
    progress: &Progress,
) -> Clustering {
    let mut open = Open::default();
    let mut ecs = Vec::new();
    let k = p.k.max(1);
    progress.stage("clustering", order.len());
    for &row in order {
        progress.advance(1);
        let v = Rep::from_forest(forest, 0, row);
        let (weight, summary) = (pw.weight(&v), pw.summary(&v));
        let probe = Probe {
            rep: &v,
            weight,
            summary: &summary,
        };
        let target = match nearest(pw, &open, &probe, None) {
            None => None,
            Some((_, d)) if d > p.threshold && open.len() < p.climit => None,
            Some((i, _)) => Some(i),
        };
        let Some(i) = target else {
            // Lines 7-8: v opens a new cluster (a cluster of one is complete when k = 1).
            if k == 1 {
                ecs.push(v);
            } else {
                open.push(v, weight, summary);
            }
            continue;
        };
        open.merge_into(pw, i, &v);
        if open.reps[i].member_count() >= k {
            ecs.push(open.remove(i));
        }
    }
    // Lines 13-20: merge leftovers with their nearest cluster until each reaches k.
    if !open.is_empty() {
        let left: usize = open.reps.iter().map(Rep::member_count).sum();
        progress.stage("merging leftover clusters", left);
    }
    while open.len() > 1 {
        let Some((j, _)) = nearest(pw, &open, &open.probe(0), Some(0)) else {
            break;
        };
        let other = open.remove(j);
        open.merge_into(pw, 0, &other);
        if open.reps[0].member_count() >= k {
            progress.advance(open.reps[0].member_count());
            ecs.push(open.remove(0));
        }
    }
    // Line 22: the remaining fewer-than-k entities are suppressed whole.
    let suppressed: Vec<u32> = open.reps.into_iter().flat_map(|c| c.members).collect();
    progress.advance(suppressed.len());
    Clustering { ecs, suppressed }
}
