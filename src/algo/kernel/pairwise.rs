//! Pairwise anonymization of two trees: 001 Alg. 3 (Anonymize), Alg. 4 (AnonymizeSets, the
//! MiRaCle subtree matching) and Alg. 5 (AnonymizeSets of MiRaCleX, node matching).
//!
//! Cost model (the paper leaves the suppression cost open): a tree's loss is LM (001 Def. 8,
//! unnormalized) summed over one copy of every node per member, plus, for every suppressed row,
//! its weight `max(|QI of its table|, 1)` times the owner's price (`suppression_price`, 1 by
//! default: a removed row costs as much as a fully generalized one). A row of a table without
//! QIs still weighs one cell, so dropping structure is never free. The normalized distance
//! divides by the total weight of both inputs, unpriced: at price 1 it lies in [0, 1] like the
//! paper's threshold `th`, and at any price a pair that only generalizes is as far as before,
//! so the price changes which clusters entities join only where rows would be suppressed.

use crate::algo::kernel::tree::Rep;
use crate::forest::Forest;

/// How AnonymizeSets ranks sibling candidates: MiRaCle by their whole subtree (001 Alg. 4),
/// MiRaCleX by the node alone (Alg. 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Siblings {
    BySubtree,
    ByNode,
    /// MiRaCleX with `order = 'shape'`: the node's loss plus the suppression its children's
    /// counts force ([`Pairwise::forced`]), so siblings whose children can be matched pair up.
    ByNodeAndShape,
}

/// What pairwise anonymization needs to know about the forest.
pub struct Pairwise<'a> {
    forest: &'a Forest,
    /// Weight of one row per table: `max(|QI|, 1)`.
    weights: Vec<f64>,
    /// What a suppressed row costs per unit of weight (`suppression_price`).
    price: f64,
    /// MiRaCle ranks sibling candidates by their whole subtree (001 Alg. 4), MiRaCleX by the
    /// node alone (Alg. 5).
    subtree: bool,
    /// Rank MiRaCleX's candidates with the suppression their child counts force.
    shape: bool,
}

/// One copy of a tree below its root, as [`Pairwise::lower_bound`] reads it: per family table,
/// the [`Pairwise::own_loss`] of each of its rows there (so also how many rows).
#[derive(Debug, Clone)]
pub struct Summary {
    own: Vec<Vec<f64>>,
}

/// Sibling sets up to this size keep their "still free" flags on the stack: a matching runs
/// for every node of every distance, where allocating them was a measurable share.
const FREE_ON_STACK: usize = 64;

impl<'a> Pairwise<'a> {
    /// Pairwise anonymization where a suppressed row costs `price` times its weight.
    pub fn new(forest: &'a Forest, siblings: Siblings, price: f64) -> Self {
        let weights = forest
            .tables
            .iter()
            .map(|t| t.nqi().max(1) as f64)
            .collect();
        Pairwise {
            forest,
            weights,
            price,
            subtree: siblings == Siblings::BySubtree,
            shape: siblings == Siblings::ByNodeAndShape,
        }
    }

    /// Weight of one copy of a subtree (suppressing it for one member costs this times the
    /// price).
    pub fn weight(&self, rep: &Rep) -> f64 {
        self.weights[rep.table as usize] + rep.children.iter().map(|c| self.weight(c)).sum::<f64>()
    }

    /// What [`Self::lower_bound`] reads of the subtree at `rep`, computed once per tree.
    pub fn summary(&self, rep: &Rep) -> Summary {
        let mut summary = Summary {
            own: vec![Vec::new(); self.forest.tables.len()],
        };
        for c in &rep.children {
            self.summarize(c, &mut summary);
        }
        summary
    }

    fn summarize(&self, rep: &Rep, summary: &mut Summary) {
        summary.own[rep.table as usize].push(self.own_loss(rep));
        for c in &rep.children {
            self.summarize(c, summary);
        }
    }

    /// LM of one copy of a node's QIs as they stand: merging can only generalize them further,
    /// since a common ancestor covers at least the leaves of either side.
    fn own_loss(&self, rep: &Rep) -> f64 {
        let t = &self.forest.tables[rep.table as usize];
        rep.qi
            .iter()
            .zip(&t.hierarchies)
            .map(|(&x, h)| h.loss(x))
            .sum()
    }

    /// A lower bound on [`Self::loss`]`(a, b)` from the roots and the [`Summary`] of each side.
    /// The loss is a sum per family table below the roots: a kept row pairs with a row of the
    /// other side and costs all members its generalized node, never less than either side's
    /// node as it stands; a suppressed row costs its own side's members its weight times the
    /// price. So per table the bound is the larger of (i) the rows the side with more must
    /// lose, a kept row needing a partner, and (ii), for either side, each of its rows at the
    /// cheaper of being kept or suppressed, plus the other side's surplus rows suppressed.
    pub fn lower_bound(&self, a: &Rep, sa: &Summary, b: &Rep, sb: &Summary) -> f64 {
        let (ma, mb) = (a.member_count(), b.member_count());
        let m = (ma + mb) as f64;
        let mut bound = m * self.node_loss(a, b);
        for ((oa, ob), w) in sa.own.iter().zip(&sb.own).zip(&self.weights) {
            let dropped = w * self.price;
            let keep_or_drop = |own: &[f64], members: usize| -> f64 {
                let drop = members as f64 * dropped;
                own.iter().map(|&o| (m * o).min(drop)).sum()
            };
            let surplus_a = oa.len().saturating_sub(ob.len()) as f64 * ma as f64 * dropped;
            let surplus_b = ob.len().saturating_sub(oa.len()) as f64 * mb as f64 * dropped;
            bound += (surplus_a + surplus_b)
                .max(keep_or_drop(oa, ma) + surplus_b)
                .max(keep_or_drop(ob, mb) + surplus_a);
        }
        bound
    }

    /// LM of one copy of a node's generalized QIs if `a` and `b` are merged (Alg. 5 lines 4-9:
    /// the node-only cost MiRaCleX matches siblings by).
    fn node_loss(&self, a: &Rep, b: &Rep) -> f64 {
        let t = &self.forest.tables[a.table as usize];
        a.qi.iter()
            .zip(&b.qi)
            .zip(&t.hierarchies)
            .map(|((&x, &y), h)| h.loss(h.lca(x, y)))
            .sum()
    }

    /// Total loss of `anonymize(a, b)` (Alg. 3), counting every member's copy.
    pub fn loss(&self, a: &Rep, b: &Rep) -> f64 {
        let m = (a.member_count() + b.member_count()) as f64;
        let mut loss = m * self.node_loss(a, b);
        for ct in self.child_tables(a.table) {
            loss += self.match_sets(
                a.children_of(ct),
                b.children_of(ct),
                a.member_count(),
                b.member_count(),
                None,
            );
        }
        loss
    }

    /// `dist` of 001 Alg. 2: the LM of the pairwise anonymization, normalized to [0, 1].
    pub fn distance(&self, a: &Rep, b: &Rep) -> f64 {
        self.distance_weighted(a, self.weight(a), b, self.weight(b))
    }

    /// [`Self::distance`] with each side's [`Self::weight`] given: CDGH keeps them per open
    /// cluster instead of walking every cluster's tree again for every entity.
    pub fn distance_weighted(&self, a: &Rep, wa: f64, b: &Rep, wb: f64) -> f64 {
        let total = a.member_count() as f64 * wa + b.member_count() as f64 * wb;
        if total <= 0.0 {
            return 0.0;
        }
        self.loss(a, b) / total
    }

    /// The child tables of `table`, borrowed from the forest: this runs for every node of
    /// every distance, where collecting them into a Vec was a measurable share of CDGH.
    fn child_tables(&self, table: u16) -> impl Iterator<Item = u16> + 'a {
        let forest: &'a Forest = self.forest;
        forest.tables[table as usize]
            .children
            .iter()
            .map(|c| c.table as u16)
    }

    /// A lower bound on the suppression that pairing node `a` (of `ma` members) with node `b`
    /// (of `mb`) forces one level down: per child table, the side with more children loses at
    /// least the surplus, each child at least its own row's price, for every member of that
    /// side.
    fn forced(&self, a: &Rep, ma: usize, b: &Rep, mb: usize) -> f64 {
        let children = &self.forest.tables[a.table as usize].children;
        // With one child table every child is of it: this runs for every candidate pair, and
        // finding the table's range in each node cost a sixth of TPC-H's clustering time.
        let one_table = children.len() == 1;
        children
            .iter()
            .map(|g| {
                let (na, nb) = if one_table {
                    (a.children.len(), b.children.len())
                } else {
                    let t = g.table as u16;
                    (a.children_of(t).len(), b.children_of(t).len())
                };
                let members = if na > nb { ma } else { mb };
                (na.abs_diff(nb) * members) as f64 * self.weights[g.table] * self.price
            })
            .sum()
    }

    /// AnonymizeSets (001 Alg. 4 for MiRaCle, Alg. 5 for MiRaCleX): greedy one-by-one matching
    /// of the smaller set into the larger (the paper requires |C1| <= |C2|); ties go to the
    /// earliest candidate; the larger set's leftovers are suppressed (Alg. 4 line 9). Returns
    /// the loss of the matched pairs plus the suppressed leftovers, and pushes the pairs
    /// (indices into `xs`, `ys`) into `pairs` when given: a distance needs only the loss.
    fn match_sets(
        &self,
        xs: &[Rep],
        ys: &[Rep],
        mx: usize,
        my: usize,
        mut pairs: Option<&mut Vec<(usize, usize)>>,
    ) -> f64 {
        let swapped = xs.len() > ys.len();
        let (small, large, ms, ml) = if swapped {
            (ys, xs, my, mx)
        } else {
            (xs, ys, mx, my)
        };
        let mut on_stack = [true; FREE_ON_STACK];
        let mut on_heap = Vec::new();
        let free: &mut [bool] = if large.len() <= FREE_ON_STACK {
            &mut on_stack[..large.len()]
        } else {
            on_heap.resize(large.len(), true);
            &mut on_heap
        };
        // Below a leaf table a pair's loss is its rank (the node's loss, nothing forced), so
        // MiRaCleX need not compute it again for the winner.
        let leaf = small
            .first()
            .is_some_and(|s| self.forest.tables[s.table as usize].children.is_empty());
        let mut loss = 0.0;
        let m = (ms + ml) as f64;
        for (i, s) in small.iter().enumerate() {
            let mut best: Option<(usize, f64, f64)> = None;
            // No candidate ranks below `s`'s own node at every member: the first that does
            // wins every tie after it, so the scan stops there.
            let floor = m * self.own_loss(s);
            for (j, l) in large.iter().enumerate() {
                if !free[j] {
                    continue;
                }
                // MiRaCle ranks candidates by the whole subtree's anonymization (Alg. 4 lines
                // 4-6); MiRaCleX by the node alone and recurses only for the winner (Alg. 5).
                let (rank, full) = if self.subtree {
                    let full = self.loss(s, l);
                    (full, full)
                } else if self.shape {
                    let forced = self.forced(s, ms, l, ml);
                    (m * self.node_loss(s, l) + forced, f64::NAN)
                } else {
                    (m * self.node_loss(s, l), f64::NAN)
                };
                if best.is_none_or(|(_, r, _)| rank < r) {
                    best = Some((j, rank, full));
                }
                if rank <= floor {
                    break;
                }
            }
            match best {
                Some((j, rank, full)) => {
                    free[j] = false;
                    let l = &large[j];
                    loss += if !full.is_nan() {
                        full
                    } else if leaf && s.member_count() + l.member_count() == ms + ml {
                        rank
                    } else {
                        self.loss(s, l)
                    };
                    if let Some(pairs) = pairs.as_deref_mut() {
                        pairs.push(if swapped { (j, i) } else { (i, j) });
                    }
                }
                None => loss += ms as f64 * self.price * self.weight(s),
            }
        }
        for (j, l) in large.iter().enumerate() {
            if free[j] {
                loss += ml as f64 * self.price * self.weight(l);
            }
        }
        loss
    }

    /// Anonymize (001 Alg. 3): the merged representative of `a` and `b`, members of `a`
    /// first. Unmatched children of either side are suppressed (left out).
    pub fn merge(&self, a: &Rep, b: &Rep) -> Rep {
        let (qi, members) = Rep::merged_node(a, b, &self.forest.tables[a.table as usize]);
        let mut children = Vec::new();
        for ct in self.child_tables(a.table) {
            let (xs, ys) = (a.children_of(ct), b.children_of(ct));
            let mut pairs = Vec::with_capacity(xs.len().min(ys.len()));
            self.match_sets(xs, ys, a.member_count(), b.member_count(), Some(&mut pairs));
            // Keep the first side's order so representatives stay deterministic and readable.
            pairs.sort_unstable();
            for (i, j) in pairs {
                children.push(self.merge(&xs[i], &ys[j]));
            }
        }
        Rep {
            table: a.table,
            qi,
            members,
            children,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forest::shaped;

    /// Entity 0 has one child, entity 1 two: pairing them suppresses one child row (weight 1,
    /// a table without QIs) for one member.
    #[test]
    fn a_suppressed_row_costs_its_weight_times_the_price_and_distance_stays_unpriced() {
        let forest = shaped(&[vec![0], vec![0, 0]]);
        let (a, b) = (
            Rep::from_forest(&forest, 0, 0),
            Rep::from_forest(&forest, 0, 1),
        );
        for siblings in [
            Siblings::BySubtree,
            Siblings::ByNode,
            Siblings::ByNodeAndShape,
        ] {
            for price in [0.5, 1.0, 3.0] {
                let pw = Pairwise::new(&forest, siblings, price);
                assert_eq!(pw.loss(&a, &b), price);
                // Weights 2 and 3: the distance divides by the unpriced total.
                assert_eq!(pw.distance(&a, &b), price / 5.0);
                assert_eq!(pw.merge(&a, &b).nodes(), 2);
            }
        }
    }

    /// The bound [`Pairwise::lower_bound`] prunes CDGH's search with never exceeds the loss
    /// it stands for: over entities and merged clusters of varied shapes, every ranking and
    /// price.
    #[test]
    fn the_lower_bound_never_exceeds_the_loss() {
        let shapes: Vec<Vec<usize>> = (0..10usize)
            .map(|e| (0..(e * 7) % 4).map(|j| (e + 3 * j) % 3).collect())
            .collect();
        let mut forest = shaped(&shapes);
        // One QI per table, so that merged clusters carry generalized codes whose own loss
        // the bound counts.
        for t in &mut forest.tables {
            t.hierarchies = vec![crate::hierarchy::Hierarchy::flat("h", &["a", "b", "c"])];
            t.qi = (0..t.rows() as u32).map(|r| 1 + (r * 7) % 3).collect();
        }
        for siblings in [
            Siblings::BySubtree,
            Siblings::ByNode,
            Siblings::ByNodeAndShape,
        ] {
            for price in [0.5, 1.0, 3.0] {
                let pw = Pairwise::new(&forest, siblings, price);
                let mut trees: Vec<Rep> =
                    (0..10).map(|e| Rep::from_forest(&forest, 0, e)).collect();
                trees.push(pw.merge(&trees[1], &trees[2]));
                trees.push(pw.merge(&trees[10], &trees[7]));
                trees.push(pw.merge(&trees[3], &trees[5]));
                trees.push(pw.merge(&trees[12], &trees[9]));
                let mut generalized = false;
                for a in &trees {
                    for b in &trees {
                        let bound = pw.lower_bound(a, &pw.summary(a), b, &pw.summary(b));
                        assert!(bound <= pw.loss(a, b), "{bound} > {}", pw.loss(a, b));
                        generalized |= pw.summary(a).own.iter().flatten().any(|&o| o > 0.0);
                    }
                }
                assert!(generalized, "some cluster's rows are generalized");
            }
        }
    }

    /// MiRaCleX pairs siblings by their node alone; with shapes it pairs the child whose own
    /// children can be matched. Entity 0's children hold 2 and 0 rows, entity 1's 0 and 2, in
    /// that order: by node alone the first pairs with the first and both pairs lose two rows.
    #[test]
    fn shape_ranking_pairs_siblings_whose_children_match() {
        let forest = shaped(&[vec![2, 0], vec![0, 2]]);
        let (a, b) = (
            Rep::from_forest(&forest, 0, 0),
            Rep::from_forest(&forest, 0, 1),
        );
        let by_node = Pairwise::new(&forest, Siblings::ByNode, 1.0);
        let by_shape = Pairwise::new(&forest, Siblings::ByNodeAndShape, 1.0);
        assert_eq!(by_node.loss(&a, &b), 4.0);
        assert_eq!(by_shape.loss(&a, &b), 0.0);
        assert_eq!(by_shape.merge(&a, &b).nodes(), 5);
    }
}
