//! Anonymization algorithms. They see only the [`Forest`](crate::forest::Forest) and the
//! parameters, and return a [`Generalization`]; they do no I/O and know no SQL.
//!
//! # The modules
//! `tree::Rep` is a cluster representative (one anonymized tree with, per node,
//! the source row of every member; a node's sensitive multiset is its members' codes); `pairwise`
//! is 001 Alg. 3-5 (Anonymize, AnonymizeSets for MiRaCle and MiRaCleX) with the cost model;
//! `cdgh` is 001 Alg. 2; `diversify` is 000 Alg. 1-3 (diversify, FindMapping-GRD,
//! FindMapping-LSAP with a buffered port of `pathfinding`'s Kuhn-Munkres that picks the same
//! assignment) and two lower bounds on diversify's cost (`quick_bound`, one pass over a
//! candidate's nodes; `cost_bound`, assignments relaxed to cheapest partners, the root's
//! children's assignment solved over pair bounds when that may prune) and `cost_within`, which
//! reaches the cost from those pair bounds, diversifying only the pairs the assignment picks (an
//! LSAP cost is the solver's integer optimum in millionths, the same whichever optimal
//! assignment; bounds allow a millionth per vertex for that rounding); `ahead` runs items on
//! several threads ahead of a consumer that takes them in order; `lca_loss` gives `loss(lca(x,
//! y))` from a table of pair losses (small hierarchies, or the inner nodes of large ones, leaves
//! read through their parent) or from rows of ancestors, each the very value the parent walk
//! gives; `clustree` is 000 Alg. 4-5 (and CToff): CreateCluster skips candidates whose bound
//! exceeds the best cost found (candidates weighed in quick-bound order) and ClusTree remembers,
//! per seed, each step's candidates and each cluster's cost across passes (merging a
//! representative only when something reads it), all exact (`Search::Plain` is the reference a
//! test compares against, `Search::Bounded` the one for the memory). Seeds are taken in order,
//! but their CreateClusters run ahead of their turn on every thread (`ahead::in_order`) against
//! the F of the moment; at its turn a cluster is kept only if every record it took is still in F
//! (and, under blocking, its window is unchanged), which makes it the cluster the seed would
//! build now, and is built again otherwise: the clusters are the same for any number of threads;
//! `candidates = N` is opt-in, inexact blocking, and the memory stays exact under it (a step
//! bounds only the records new to the seed's window); `dmiracle` is CDGH at k = l followed by EC
//! merging and pruning until every group is diverse. `topdown` is local recoding of a single
//! table (no child tables; the plan refuses others): a top-down partitioning over the DGHs orders
//! the rows, and so does `topdown::cover` (boxes, a hierarchy node per attribute numbered in
//! mixed radix, opened cheapest first once k rows not yet placed lie under them; the cells it
//! opens do not depend on the LM' bands it lists boxes in); a dynamic program cuts each order
//! into groups of k..2k-1 rows at least LM, and a local search (rows handed to neighbouring
//! groups or suppressed where that is cheaper, outliers trimmed, windows and pairs of groups
//! re-ordered and re-cut) lowers it further; the start of least LM wins; each group is released
//! at its members' LCA, as a `Clustering` of single-node representatives. `baseline/` is 001 Sec.
//! III: `universal` (root-to-leaf paths as one table), `per_table`, `bitmap` (complete /
//! incomplete), each 001 Alg. 2 over a flat one-table `Forest`. Every algorithm ends in a
//! `generalization::Generalization`: per source row, kept or not and its generalized codes
//! (clusterings copy each EC's representative onto its members). Algorithms do no I/O and know no
//! SQL; `algo::run` counts each stage's work (entities visited or placed, ClusTree's seeds tried)
//! into a `progress::Progress` handed in.

pub mod ahead;
pub mod baseline;
pub mod cdgh;
pub mod clustree;
pub mod diversify;
pub mod dmiracle;
pub mod generalization;
pub mod lca_loss;
pub mod pairwise;
pub mod topdown;
pub mod tree;

use crate::forest::Forest;
use crate::plan::{Algorithm, Params};
use crate::progress::Progress;

pub use cdgh::Clustering;
pub use generalization::Generalization;

/// Runs the configured algorithm over the whole forest, visiting entities in key order.
/// The multi-relational algorithms cluster whole trees (one representative per EC); the
/// single-table baselines (001 Sec. III) generalize rows directly. `progress` counts each
/// stage's work: entities (for the baselines, flat rows) visited or placed, ClusTree's seeds.
pub fn run(forest: &Forest, params: &Params, progress: &Progress) -> Generalization {
    let order: Vec<u32> = (0..forest.entities() as u32).collect();
    let size = params.model.min_group();
    let cdgh = cdgh::CdghParams {
        k: size,
        threshold: params.threshold,
        climit: params.climit,
    };
    let clustering = match params.algorithm {
        Algorithm::Universal => return baseline::universal(forest, params, progress),
        Algorithm::PerTable => return baseline::per_table(forest, params, progress),
        Algorithm::BitmapComplete => return baseline::bitmap(forest, params, true, progress),
        Algorithm::BitmapIncomplete => return baseline::bitmap(forest, params, false, progress),
        Algorithm::Miracle | Algorithm::Miraclex => {
            let pw = pairwise::Pairwise::new(forest, params.algorithm);
            cdgh::cluster(forest, &pw, &order, cdgh, progress)
        }
        Algorithm::Clustree | Algorithm::Ctoff => {
            let rule = params
                .model
                .diversity()
                .map(|(l, diversity)| diversify::Rule {
                    l,
                    diversity,
                    target: size,
                });
            let dv = diversify::Diversifier::new(forest, params.mapping, rule);
            clustree::cluster(
                forest,
                &dv,
                &order,
                clustree::ClustreeParams {
                    size,
                    m: params.m,
                    s: params.s,
                    ctoff: params.algorithm == Algorithm::Ctoff,
                    search: clustree::Search::Pruned,
                    candidates: params.candidates,
                    threads: rayon::current_num_threads(),
                },
                progress,
            )
        }
        Algorithm::Topdown => topdown::cluster(forest, size, progress),
        Algorithm::Dmiracle => {
            let pw = pairwise::Pairwise::new(forest, Algorithm::Miracle);
            let (l, diversity) = params
                .model
                .diversity()
                .unwrap_or((size, crate::plan::Diversity::Probabilistic));
            dmiracle::cluster(forest, &pw, &order, cdgh, l, diversity, progress)
        }
    };
    Generalization::from_clustering(forest, &clustering)
}
