//! The shape-only grouping: entities sorted by their tree's shape, largest first, cut into
//! consecutive classes of k (the last fewer than k join the class before them), each class
//! merged by MiRaCleX's node matching ranked with the suppression child counts force. It
//! ignores QI precision except as the tie-break inside a shape: what grouping by shape alone
//! keeps, the reference the frontier experiment draws the clustering algorithms against (not
//! a bound: a priced algorithm may keep more, since it matches subtrees the shape order only
//! brings near). Every class holds at least k entities and the release
//! passes `verify` like any other.

use crate::algo::kernel::pairwise::{Pairwise, Siblings};
use crate::algo::kernel::shape;
use crate::algo::kernel::tree::{Clustering, Rep};
use crate::algo::{self, Generalization, Options, Output, Spec};
use crate::forest::Forest;
use crate::plan::Model;
use crate::progress::Progress;

pub static SHAPE_ONLY: Spec = Spec {
    note: " (reference)",
    ..Spec::plain("shape-only", &[], algo::k_anonymity_only, run)
};

fn run(
    forest: &Forest,
    model: &Model,
    _options: &Options,
    progress: &Progress,
) -> Result<Output, String> {
    let clustering = group(forest, model.min_group(), progress);
    Ok(Output::Generalized(Generalization::from_clustering(
        forest,
        &clustering,
    )))
}

/// The classes: consecutive runs of k in [`shape::by_shape`] order, the remainder added to
/// the last class (or suppressed when there are fewer than k entities in all).
pub fn group(forest: &Forest, k: usize, progress: &Progress) -> Clustering {
    let k = k.max(1);
    let order = shape::by_shape(forest);
    progress.stage("grouping by shape", order.len());
    if order.len() < k {
        progress.advance(order.len());
        return Clustering {
            ecs: Vec::new(),
            suppressed: order,
        };
    }
    let pw = Pairwise::new(forest, Siblings::ByNodeAndShape, 1.0);
    let classes = order.len() / k;
    let ecs = (0..classes)
        .map(|c| {
            let end = if c + 1 == classes {
                order.len()
            } else {
                (c + 1) * k
            };
            let mut members = order[c * k..end].iter();
            let first = members.next().expect("a class holds k >= 1 entities");
            let mut rep = Rep::from_forest(forest, 0, *first);
            for &e in members {
                rep = pw.merge(&rep, &Rep::from_forest(forest, 0, e));
            }
            progress.advance(end - c * k);
            rep
        })
        .collect();
    Clustering {
        ecs,
        suppressed: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forest::shaped;

    #[test]
    fn classes_of_equal_shapes_keep_every_row() {
        // Two shapes, three entities each, interleaved in key order.
        let forest = shaped(&[
            vec![2, 0],
            vec![1],
            vec![0, 2],
            vec![1],
            vec![2, 0],
            vec![1],
        ]);
        let clustering = group(&forest, 3, &Progress::new());
        assert_eq!(clustering.ecs.len(), 2);
        assert!(clustering.suppressed.is_empty());
        let g = Generalization::from_clustering(&forest, &clustering);
        for (t, kept) in g.kept.iter().enumerate() {
            assert!(kept.iter().all(|&k| k), "table {t} lost rows");
        }
    }

    #[test]
    fn the_remainder_joins_the_last_class_and_too_few_are_suppressed() {
        let forest = shaped(&[vec![], vec![], vec![], vec![], vec![]]);
        let c = group(&forest, 2, &Progress::new());
        let mut sizes: Vec<usize> = c.ecs.iter().map(Rep::member_count).collect();
        sizes.sort_unstable();
        assert_eq!(sizes, vec![2, 3]);
        let c = group(&forest, 6, &Progress::new());
        assert!(c.ecs.is_empty());
        assert_eq!(c.suppressed.len(), 5);
    }
}
