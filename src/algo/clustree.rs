//! l-diverse clustering of whole records: 000 Alg. 4 (CreateCluster) and Alg. 5 (ClusTree);
//! CToff is Alg. 5 with chi = infinity from the start (000 Sec. 2.4).

use rayon::prelude::*;

use crate::algo::cdgh::Clustering;
use crate::algo::diversify::Diversifier;
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
            let Some(c) = create_cluster(dv, &trees, order, &in_f, a, size) else {
                if chi.is_infinite() {
                    in_f[a as usize] = false;
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
                in_f[e as usize] = false;
            }
            remaining -= c.member_count();
            costs.push(cost);
            ecs.push(c);
        }
        // Lines 23-24.
        if remaining == 0 {
            return Clustering { ecs, suppressed };
        }
        // Lines 25-27.
        chi += p.s;
        if chi >= p.m {
            chi = f64::INFINITY;
        }
    }
}

/// 000 Alg. 4: a cluster seeded by `a` that recruits, `size - 1` times, the record of F whose
/// diversify with the representative costs least (line 5; ties go to the earliest in `order`),
/// skipping records whose root cannot be diverse with it. `None` if it runs out of such
/// records. F itself is not changed: the caller removes the members if it keeps the cluster.
fn create_cluster(
    dv: &Diversifier,
    trees: &[Rep],
    order: &[u32],
    in_f: &[bool],
    a: u32,
    size: usize,
) -> Option<Rep> {
    let mut rep = trees[a as usize].clone();
    let mut taken = vec![a];
    let candidates: Vec<(usize, u32)> = order
        .iter()
        .copied()
        .enumerate()
        .filter(|&(_, e)| in_f[e as usize] && e != a)
        .collect();
    for _ in 1..size {
        let best = candidates
            .par_iter()
            .filter(|(_, e)| !taken.contains(e))
            .filter(|(_, e)| dv.diverse(&rep, &trees[*e as usize]))
            .map(|&(pos, e)| (dv.cost(&rep, &trees[e as usize]), pos, e))
            .reduce_with(|x, y| if (y.0, y.1) < (x.0, x.1) { y } else { x });
        let (_, _, b) = best?;
        // Line 8: the representative absorbs T_b (its members after the cluster's).
        rep = dv
            .merge(&rep, &trees[b as usize])
            .expect("a candidate whose root is diverse with the representative merges");
        taken.push(b);
    }
    Some(rep)
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
