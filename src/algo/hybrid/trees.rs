//! S-Hybrid on entity trees (seed 003, the spec's Sec. 4.4 plan item 2, an extension the
//! paper does not make): what a lattice node's groups are when they are groups of entity
//! trees, how far apart two of them are, and where an entity goes that no group of its shape
//! can take.
//!
//! - A group is a class of trees QI-isomorphic at the node (the lattice's canonical ids); its
//!   key is a canonical encoding of its generalized tree, so groups sort by their labels as
//!   on one table (decision D7), the root's first.
//! - Relocation moves a whole entity and changes QI cells on its own rows only (Sec. 4.1):
//!   between two groups of one shape the cost is the fewest labels that differ under a
//!   shape-preserving matching of the two trees (Sec. 4.3), an optimal assignment per child
//!   table bottom up (`kernel::relocate::fit`); between shapes there is none.
//! - Shapes no k-anonymous group shares are what relocation cannot reach. With
//!   `leftovers = 'embed'` (the plan item's option) an entity createHybrid leaves in a group
//!   below k joins the k-anonymous group whose smaller tree embeds in its own at the fewest
//!   untruthful cells, charged to the same budget; its rows the embedding leaves out are
//!   suppressed, as a clustering's class members' extra rows are. What is still left is
//!   suppressed whole within `max_suppression`.
//!
//! No key, sensitive or other cell changes and no row changes parent (Sec. 4.2): a release
//! relabels matched rows and drops unmatched ones, nothing else.

use std::cell::{OnceCell, RefCell};

use rustc_hash::FxHashMap;

use crate::algo::kernel::lattice::Lattice;
use crate::algo::kernel::relocate::{fit, join, matched, untruthful};
use crate::algo::kernel::shape::Shape;
use crate::algo::kernel::tree::{Clustering, Rep};
use crate::algo::Generalization;
use crate::forest::Forest;

/// What S-Hybrid needs of every entity whatever the node: its tree's shape and size.
pub(super) struct Shapes {
    /// Per entity its shape: entities with one shape have trees equal but for QI labels.
    pub shape: Vec<u32>,
    /// Per entity the rows of its tree.
    pub rows: Vec<u32>,
}

impl Shapes {
    /// Every entity's [`Shape`], numbered in the order first met, and its rows.
    pub fn of(forest: &Forest) -> Shapes {
        let mut ids: FxHashMap<Shape, u32> = FxHashMap::default();
        let (shape, rows) = (0..forest.entities() as u32)
            .map(|e| {
                let s = Shape::of(forest, e);
                let rows = 1 + s.counts.iter().sum::<u32>();
                let next = ids.len() as u32;
                (*ids.entry(s).or_insert(next), rows)
            })
            .unzip();
        Shapes { shape, rows }
    }
}

/// Entity `e`'s generalized tree at `levels`, canonically encoded: the root's labels, then
/// per child table the number of children and their encodings in sorted order. Two entities
/// encode alike exactly when their trees are QI-isomorphic at the node; on one table the
/// encoding is the row's labels.
pub(super) fn key(lattice: &Lattice<'_>, levels: &[u16], e: u32) -> Vec<u32> {
    let mut out = Vec::new();
    encode(lattice, levels, 0, e, &mut out);
    out
}

fn encode(lattice: &Lattice<'_>, levels: &[u16], t: usize, row: u32, out: &mut Vec<u32>) {
    let table = &lattice.forest().tables[t];
    for (&c, &code) in lattice.columns_of(t).iter().zip(table.codes(row)) {
        out.push(lattice.generalize(c, levels[c], code));
    }
    for group in &table.children {
        let kids = group.of(row);
        out.push(kids.len() as u32);
        let mut encoded: Vec<Vec<u32>> = kids
            .iter()
            .map(|&k| {
                let mut v = Vec::new();
                encode(lattice, levels, group.table, k, &mut v);
                v
            })
            .collect();
        encoded.sort_unstable();
        encoded.into_iter().for_each(|v| out.extend(v));
    }
}

/// Entity `e`'s tree with every label at `levels`: the representative of its group.
fn generalized(lattice: &Lattice<'_>, levels: &[u16], e: u32) -> Rep {
    let mut rep = Rep::from_forest(lattice.forest(), 0, e);
    fn relabel(lattice: &Lattice<'_>, levels: &[u16], rep: &mut Rep) {
        for (&c, code) in lattice
            .columns_of(rep.table as usize)
            .iter()
            .zip(&mut rep.qi)
        {
            *code = lattice.generalize(c, levels[c], *code);
        }
        rep.members.clear();
        rep.children
            .iter_mut()
            .for_each(|c| relabel(lattice, levels, c));
    }
    relabel(lattice, levels, &mut rep);
    rep
}

/// The groups of one node as trees: each one's representative, built when first asked, and
/// the distances asked so far.
pub(super) struct Groups<'a, 'f> {
    lattice: &'a Lattice<'f>,
    levels: &'a [u16],
    /// Per group an entity of it.
    reps: &'a [u32],
    trees: Vec<OnceCell<Rep>>,
    asked: RefCell<FxHashMap<(usize, usize), Option<usize>>>,
}

impl<'a, 'f> Groups<'a, 'f> {
    pub fn new(lattice: &'a Lattice<'f>, levels: &'a [u16], reps: &'a [u32]) -> Self {
        Groups {
            lattice,
            levels,
            reps,
            trees: (0..reps.len()).map(|_| OnceCell::new()).collect(),
            asked: RefCell::new(FxHashMap::default()),
        }
    }

    fn tree(&self, g: usize) -> &Rep {
        self.trees[g].get_or_init(|| generalized(self.lattice, self.levels, self.reps[g]))
    }

    /// The cells a member of group `a` publishes untruthfully in group `b`: the fewest labels
    /// of `b`'s tree that do not cover the member's values under an embedding of it into the
    /// member's tree (spec Sec. 4.3; at one node a label covers a value exactly when it is the
    /// value's label, so this is the labels that differ). `None` where `b`'s tree does not fit
    /// in `a`'s. The same for every member of `a`: they share `a`'s generalized tree.
    pub fn distance(&self, a: usize, b: usize) -> Option<usize> {
        if let Some(&d) = self.asked.borrow().get(&(a, b)) {
            return d;
        }
        let d = fit(self.lattice.forest(), self.tree(b), 0, self.reps[a]);
        self.asked.borrow_mut().insert((a, b), d);
        d
    }

    /// A lower bound of [`Groups::distance`]: the root's labels alone.
    fn root_distance(&self, a: usize, b: usize) -> usize {
        untruthful(self.lattice.forest(), 0, self.reps[a], &self.tree(b).qi)
    }

    /// Where a member of group `o` goes among `anonymous` (the larger trees first, then in
    /// group order): the fewest untruthful cells, ties to the first; only trees smaller than
    /// `o`'s. A candidate whose root alone costs as much as the best is not embedded, and a
    /// free embedding ends the search (nothing after it can win).
    fn closest(&self, o: usize, anonymous: &[usize], rows: &[u32]) -> Option<(usize, usize)> {
        let mut best: Option<(usize, usize)> = None;
        for &c in anonymous.iter().filter(|&&c| rows[c] < rows[o]) {
            if best.is_some_and(|(d, _)| self.root_distance(o, c) >= d) {
                continue;
            }
            if let Some(d) = self.distance(o, c) {
                if best.is_none_or(|(b, _)| d < b) {
                    best = Some((d, c));
                }
                if d == 0 {
                    break;
                }
            }
        }
        best
    }
}

/// What the embedding of the leftovers did: who joined which group and at what cost.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Embedded {
    /// Members embedded, each with its group.
    pub members: Vec<(usize, usize)>,
    /// Their untruthful cells.
    pub cells: usize,
}

/// The leftovers' embedding (spec Sec. 4.4 plan item 2, its option): each member of a group
/// below k (`group_of`, `sizes`; `original` their groups of `Δ_μ(T)`) goes to the k-anonymous
/// group whose strictly smaller tree embeds in its own at the fewest untruthful cells, ties
/// to the larger tree (fewest rows suppressed), then the first group; members move cheapest
/// first, then in member order, while the cells stay within `left` (what createHybrid left
/// of the budget).
pub(super) fn embed(
    groups: &Groups<'_, '_>,
    shapes: &Shapes,
    original: &[usize],
    group_of: &[usize],
    sizes: &[usize],
    k: usize,
    left: usize,
) -> Embedded {
    let rows: Vec<u32> = groups
        .reps
        .iter()
        .map(|&r| shapes.rows[r as usize])
        .collect();
    let mut anonymous: Vec<usize> = (0..sizes.len()).filter(|&g| sizes[g] >= k).collect();
    anonymous.sort_by_key(|&g| (std::cmp::Reverse(rows[g]), g));
    // One target per original group: its members share the tree the cost is counted on.
    let mut best: FxHashMap<usize, Option<(usize, usize)>> = FxHashMap::default();
    let mut moves: Vec<(usize, usize, usize)> = Vec::new();
    for (m, (&g, &o)) in group_of.iter().zip(original).enumerate() {
        if sizes[g] >= k {
            continue;
        }
        let target = *best
            .entry(o)
            .or_insert_with(|| groups.closest(o, &anonymous, &rows));
        if let Some((cost, to)) = target {
            moves.push((cost, m, to));
        }
    }
    moves.sort_unstable();
    let mut out = Embedded::default();
    for (cost, m, to) in moves {
        if out.cells + cost > left {
            // The rest cost as much or more.
            break;
        }
        out.cells += cost;
        out.members.push((m, to));
    }
    out
}

/// The release of a node on entity trees: each published entity at its group's tree (the
/// representative embedded into its own, rows left out suppressed), the entities of groups
/// still below k suppressed whole. With the untruthful cells per family table.
pub(super) fn release(
    lattice: &Lattice<'_>,
    levels: &[u16],
    reps: &[u32],
    group_of: &[usize],
    k: usize,
) -> (Generalization, Vec<usize>) {
    let forest = lattice.forest();
    let sizes = super::sizes_of(group_of, reps.len());
    let mut slot = vec![usize::MAX; reps.len()];
    let mut clustering = Clustering {
        ecs: Vec::new(),
        suppressed: Vec::new(),
    };
    let mut cells = vec![0usize; forest.tables.len()];
    for (e, &g) in group_of.iter().enumerate() {
        if sizes[g] < k {
            clustering.suppressed.push(e as u32);
            continue;
        }
        if slot[g] == usize::MAX {
            slot[g] = clustering.ecs.len();
            clustering.ecs.push(generalized(lattice, levels, reps[g]));
        }
        let ec = &mut clustering.ecs[slot[g]];
        let mut rows = Vec::new();
        matched(forest, ec, 0, e as u32, &mut rows, &mut cells);
        join(ec, &mut rows.iter());
    }
    let mut g = Generalization::from_clustering(forest, &clustering);
    g.ec_sizes.sort_unstable();
    g.levels = Some(lattice.released_levels(levels));
    (g, cells)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algo::hybrid::{s_hybrid, Asked, Variant};
    use crate::algo::kernel::relocate::fixtures::family;
    use crate::progress::Progress;

    #[test]
    fn the_distance_matches_children_whatever_their_order_and_the_key_sorts_them() {
        // 0: a (x, y); 1: b (y, x); 2: a (y, x); 3: a (x).
        let f = family(
            &[1, 2, 1, 1],
            &[vec![1, 2], vec![2, 1], vec![2, 1], vec![1]],
        );
        let lattice = Lattice::new(&f);
        let bottom = [0, 0];
        assert_eq!(key(&lattice, &bottom, 0), key(&lattice, &bottom, 2));
        assert_ne!(key(&lattice, &bottom, 0), key(&lattice, &bottom, 1));
        let reps = [0, 1, 3];
        let groups = Groups::new(&lattice, &bottom, &reps);
        // Only the root's label differs once the children are matched x to x, y to y.
        assert_eq!(groups.distance(0, 1), Some(1));
        assert_eq!(groups.distance(1, 0), Some(1));
        // One child fits in two (the other left out), two do not fit in one.
        assert_eq!(groups.distance(0, 2), Some(0));
        assert_eq!(groups.distance(2, 0), None);
        let shapes = Shapes::of(&f);
        assert_eq!(shapes.shape[0], shapes.shape[1]);
        assert_ne!(shapes.shape[0], shapes.shape[3]);
        assert_eq!(shapes.rows, [3, 3, 3, 2]);
    }

    fn asked(k: usize, suppression: u64, embed: bool) -> Asked {
        Asked {
            k,
            budget: 0,
            suppression,
            variant: Variant::default(),
            embed,
        }
    }

    #[test]
    fn a_shape_no_group_shares_is_embedded_into_a_smaller_tree_its_extra_rows_suppressed() {
        // Three entities a (x) and one a (x, y), a shape of its own.
        let f = family(&[1, 1, 1, 1], &[vec![1], vec![1], vec![1], vec![1, 2]]);
        let lattice = Lattice::new(&f);
        let progress = Progress::new();
        // Suppressing it is all the lattice can do.
        assert_eq!(s_hybrid(&lattice, &asked(3, 0, false), &progress), None);
        let node = s_hybrid(&lattice, &asked(3, 1, false), &progress).expect("one suppressed");
        assert_eq!((node.suppressed, node.embedded), (1, 0));
        // Embedded at no untruthful cell: its x row matched, its y row left out.
        let node = s_hybrid(&lattice, &asked(3, 0, true), &progress).expect("embedded");
        assert_eq!((node.suppressed, node.embedded), (0, 1));
        assert_eq!(node.levels, [0, 0]);
        assert_eq!(node.relocation.relocated_cells, 0);
        // LM: the y cell left out counts 1 of the 9 cells, the rest are leaves.
        assert!((node.lm - 1.0 / 9.0).abs() < 1e-9, "{}", node.lm);
        let (g, cells) = release(
            &lattice,
            &node.levels,
            &node.reps,
            &node.relocation.group_of,
            3,
        );
        assert_eq!(cells, [0, 0]);
        assert_eq!(g.kept[0], [true; 4]);
        assert_eq!(g.kept[1], [true, true, true, true, false]);
        assert_eq!(g.ec_sizes, [4]);
        assert_eq!(g.suppressed_entities, 0);
    }

    #[test]
    fn a_tree_moves_whole_into_a_group_of_its_shape() {
        // a (x) alone, two of b (y): createHybrid moves the lone tree at two cells (root and
        // child), within a budget of two and not of one.
        let f = family(&[1, 2, 2], &[vec![1], vec![2], vec![2]]);
        let lattice = Lattice::new(&f);
        let progress = Progress::new();
        let mut two = asked(3, 0, false);
        two.budget = 2;
        let node = s_hybrid(&lattice, &two, &progress).expect("relocated");
        assert_eq!(node.levels, [0, 0]);
        assert_eq!((node.relocation.relocated_cells, node.suppressed), (2, 0));
        let (g, cells) = release(
            &lattice,
            &node.levels,
            &node.reps,
            &node.relocation.group_of,
            3,
        );
        assert_eq!(cells, [1, 1]);
        assert_eq!(g.row(&f, 0, 0), g.row(&f, 0, 1));
        assert_eq!(g.row(&f, 1, 0), g.row(&f, 1, 1));
        two.budget = 1;
        let node = s_hybrid(&lattice, &two, &progress).expect("a higher node");
        assert_ne!(node.levels, [0, 0]);
        assert_eq!(node.relocation.relocated_cells, 1);
    }

    #[test]
    fn an_embedding_that_relabels_is_charged_to_the_budget() {
        // Three entities a (x) and one b (x, y): its root must take a's label, one cell.
        let f = family(&[1, 1, 1, 2], &[vec![1], vec![1], vec![1], vec![1, 2]]);
        let lattice = Lattice::new(&f);
        let progress = Progress::new();
        // Without a cell to spend the node is the top one, where the root's label is `*`.
        let node = s_hybrid(&lattice, &asked(3, 0, true), &progress).expect("embedded");
        assert_eq!(
            (node.levels.as_slice(), node.embedded),
            ([1, 0].as_slice(), 1)
        );
        let mut one = asked(3, 0, true);
        one.budget = 1;
        let node = s_hybrid(&lattice, &one, &progress).expect("embedded");
        assert_eq!(
            (node.levels.as_slice(), node.embedded),
            ([0, 0].as_slice(), 1)
        );
        assert_eq!(node.relocation.relocated_cells, 1);
        let (g, cells) = release(
            &lattice,
            &node.levels,
            &node.reps,
            &node.relocation.group_of,
            3,
        );
        assert_eq!(cells, [1, 0]);
        // Entity 3 is published as a, untruthfully.
        assert_eq!(g.row(&f, 0, 3), g.row(&f, 0, 0));
    }
}
