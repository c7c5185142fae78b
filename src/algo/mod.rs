//! Anonymization algorithms. They see only the [`Forest`](crate::forest::Forest) and the
//! parameters, and return clusters; they do no I/O and know no SQL.

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
