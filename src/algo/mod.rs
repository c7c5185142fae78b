//! Anonymization algorithms. They see only the [`Forest`](crate::forest::Forest) and the
//! parameters, and return clusters; they do no I/O and know no SQL.

pub mod cdgh;
pub mod clustree;
pub mod diversify;
pub mod dmiracle;
pub mod pairwise;
pub mod tree;

use crate::forest::Forest;
use crate::plan::{Algorithm, Params};

pub use cdgh::Clustering;

/// Runs the configured algorithm over the whole forest, visiting entities in key order.
pub fn run(forest: &Forest, params: &Params) -> Clustering {
    let order: Vec<u32> = (0..forest.entities() as u32).collect();
    let size = params.model.min_group();
    let cdgh = cdgh::CdghParams {
        k: size,
        threshold: params.threshold,
        climit: params.climit,
    };
    match params.algorithm {
        Algorithm::Miracle | Algorithm::Miraclex => {
            let pw = pairwise::Pairwise::new(forest, params.algorithm);
            cdgh::cluster(forest, &pw, &order, cdgh)
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
                },
            )
        }
        Algorithm::Dmiracle => {
            let pw = pairwise::Pairwise::new(forest, Algorithm::Miracle);
            let (l, diversity) = params
                .model
                .diversity()
                .unwrap_or((size, crate::plan::Diversity::Probabilistic));
            dmiracle::cluster(forest, &pw, &order, cdgh, l, diversity)
        }
    }
}
