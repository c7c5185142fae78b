//! The CDGH clustering skeleton of MiRaCle (001 Alg. 2): entities join the nearest open
//! cluster unless it is farther than `th` and fewer than `climit` clusters are open; a
//! cluster of k members is closed as an equivalence class; leftovers are merged; the last
//! cluster smaller than k is suppressed whole.

use rayon::prelude::*;

use crate::algo::kernel::pairwise::Pairwise;
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

/// The open clusters with each one's [`Pairwise::weight`], kept beside them because every
/// visited entity is compared with every open cluster.
#[derive(Default)]
struct Open {
    reps: Vec<Rep>,
    weights: Vec<f64>,
}

impl Open {
    fn len(&self) -> usize {
        self.reps.len()
    }

    fn is_empty(&self) -> bool {
        self.reps.is_empty()
    }

    fn push(&mut self, rep: Rep, weight: f64) {
        self.reps.push(rep);
        self.weights.push(weight);
    }

    /// `remove`, not `swap_remove`: cluster indices break ties, so keep their order.
    fn remove(&mut self, i: usize) -> Rep {
        self.weights.remove(i);
        self.reps.remove(i)
    }

    fn merge_into(&mut self, pw: &Pairwise, i: usize, v: &Rep) {
        self.reps[i] = pw.merge(&self.reps[i], v);
        self.weights[i] = pw.weight(&self.reps[i]);
    }
}

/// Index and distance of the open cluster nearest to `v` of weight `wv` (Alg. 2 line 5; ties
/// go to the lowest index so the result does not depend on thread scheduling).
fn nearest(
    pw: &Pairwise,
    open: &Open,
    v: &Rep,
    wv: f64,
    skip: Option<usize>,
) -> Option<(usize, f64)> {
    open.reps
        .par_iter()
        .zip(open.weights.par_iter())
        .enumerate()
        .filter(|(i, _)| Some(*i) != skip)
        .map(|(i, (c, &wc))| (i, pw.distance_weighted(c, wc, v, wv)))
        .reduce_with(|a, b| {
            if b.1 < a.1 || (b.1 == a.1 && b.0 < a.0) {
                b
            } else {
                a
            }
        })
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
        let wv = pw.weight(&v);
        let target = match nearest(pw, &open, &v, wv, None) {
            None => None,
            Some((_, d)) if d > p.threshold && open.len() < p.climit => None,
            Some((i, _)) => Some(i),
        };
        let Some(i) = target else {
            // Lines 7-8: v opens a new cluster (a cluster of one is complete when k = 1).
            if k == 1 {
                ecs.push(v);
            } else {
                open.push(v, wv);
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
        let Some((j, _)) = nearest(pw, &open, &open.reps[0], open.weights[0], Some(0)) else {
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
