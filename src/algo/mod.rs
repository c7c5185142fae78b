//! Anonymization algorithms. They see only the [`Forest`](crate::forest::Forest) and the
//! parameters, and return clusters; they do no I/O and know no SQL.

pub mod cdgh;
pub mod pairwise;
pub mod tree;

use crate::forest::Forest;
use crate::plan::{Algorithm, Params};

pub use cdgh::Clustering;

/// Runs the configured algorithm over the whole forest, visiting entities in key order.
pub fn run(forest: &Forest, params: &Params) -> Clustering {
    let pw = pairwise::Pairwise::new(forest, params.algorithm);
    let order: Vec<u32> = (0..forest.entities() as u32).collect();
    match params.algorithm {
        Algorithm::Miracle | Algorithm::Miraclex => cdgh::cluster(
            forest,
            &pw,
            &order,
            cdgh::CdghParams {
                k: params.model.min_group(),
                threshold: params.threshold,
                climit: params.climit,
            },
        ),
        // Work in progress on main: the l-diversity algorithms.
        _ => cdgh::cluster(
            forest,
            &pw,
            &order,
            cdgh::CdghParams {
                k: params.model.min_group(),
                threshold: params.threshold,
                climit: params.climit,
            },
        ),
    }
}
