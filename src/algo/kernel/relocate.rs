//! Relocation instead of suppression: relanon's own post-pass for the clustering algorithms
//! (MiRaCle, MiRaCleX, ClusTree, CToff, TopDown), in the spirit of seed 003 (hybrid
//! k-anonymization) but not in it: the spec's Sec. 4.4, plan item 3, labelled as ours there
//! and here. The paper relocates rows between the groups of one full-domain generalization
//! (`algo::hybrid`); it never evaluates relocating what another algorithm suppressed.
//!
//! A clustering leaves some entities without a class (001 Alg. 2 line 22: the last fewer
//! than k) and suppresses them whole. With `relocate = p`, each such entity may instead be
//! published as a member of the class whose released tree is closest to its own: the class's
//! representative is embedded into the entity's tree (a vertex to a vertex of the same table,
//! children to children, [`fit`]), every matched row takes the representative's labels, and
//! the entity's rows left unmatched are suppressed, as the class's own members' are. A matched
//! QI cell whose label is not the source value or an ancestor of it is untruthful: that is
//! the cost, charged to a budget of `p` percent of the family's QI cells (003 Def. 6 over the
//! whole family, spec Sec. 4.1). Nothing else changes: no key, no sensitive or other cell, no
//! row moves to another parent (spec Sec. 4.2), and the class only grows, so it stays at k or
//! more. Entities go cheapest first, so a budget keeps as many as that order allows.

use pathfinding::kuhn_munkres::kuhn_munkres_min;
use pathfinding::matrix::Matrix;
use rayon::prelude::*;

use crate::algo::kernel::tree::{Clustering, Rep};
use crate::algo::options::{Default, Kind, OptionSpec, Options};
use crate::forest::Forest;
use crate::plan::Model;

/// `relocate`: the percent of the family's QI cells the release may publish untruthfully so as
/// to keep entities the algorithm suppressed.
pub const RELOCATE: OptionSpec = OptionSpec {
    name: "relocate",
    aliases: &[],
    kind: Kind::Number {
        min: 0.0,
        max: 100.0,
    },
    default: Default::Number(0.0),
    check: None,
    doc: "relanon's own post-pass (not in the papers): the percent of the family's QI cells the release may publish untruthfully to keep an entity the algorithm suppressed, moved into the closest class whose tree fits in its own; 0 (the default) moves none",
};

/// A cost no embedding reaches: a pairing that cannot be made (fewer children than the
/// representative has) weighs this in the assignment, and a total this large means none.
const NONE: i64 = 1 << 40;

/// `relocate` as declared (0: the post-pass is off).
pub fn percent(options: &Options) -> f64 {
    if options.declares(RELOCATE.name) {
        options.number(RELOCATE.name)
    } else {
        0.0
    }
}

/// `p` percent of `cells`, whole cells, rounded down (a count within a real budget is within
/// its floor); a percent written in decimal allows what it says despite binary floats. The
/// verifier computes the same from the declarations on its own.
pub fn budget_cells(p: f64, cells: u64) -> u64 {
    (p * cells as f64 / 100.0 + 1e-9).floor() as u64
}

/// The family's QI cells, every row's: what `p` is a percent of.
pub fn qi_cells(forest: &Forest) -> u64 {
    forest
        .tables
        .iter()
        .map(|t| (t.rows() * t.nqi()) as u64)
        .sum()
}

/// One suppressed entity's best class: where it would go and what it would cost.
#[derive(Debug, Clone, PartialEq)]
struct Move {
    entity: u32,
    ec: usize,
    /// Untruthful cells per family table.
    cells: Vec<usize>,
    /// The entity's row matched to each representative vertex, in the representative's
    /// pre-order.
    rows: Vec<u32>,
}

impl Move {
    fn total(&self) -> usize {
        self.cells.iter().sum()
    }
}

/// What the post-pass relocated: the output's `Relocated` is made from it.
#[derive(Debug, Clone, PartialEq)]
pub struct Moved {
    /// `relocate`: the percent of the family's QI cells allowed.
    pub p: f64,
    /// `p` percent of `qi_cells`, rounded down.
    pub budget: usize,
    pub qi_cells: usize,
    /// Untruthful cells per family table.
    pub cells: Vec<usize>,
    /// Entities published that the algorithm had suppressed.
    pub entities: usize,
}

/// The post-pass: moves suppressed entities of `clustering` into their closest classes,
/// cheapest first, while the untruthful cells stay within `p` percent of the family's QI
/// cells. What it relocated, for the release to say.
pub fn post_pass(forest: &Forest, clustering: &mut Clustering, p: f64) -> Moved {
    let cells = qi_cells(forest);
    let budget = budget_cells(p, cells) as usize;
    // Each class's rows per table and size, once for every suppressed entity that tries it.
    let classes: Vec<(Profile, usize)> = clustering
        .ecs
        .iter()
        .map(|rep| (Profile::of_rep(rep, forest.tables.len()), rep.nodes()))
        .collect();
    let mut moves: Vec<Move> = clustering
        .suppressed
        .par_iter()
        .filter_map(|&e| closest(forest, &clustering.ecs, &classes, e))
        .collect();
    moves.sort_by_key(|m| (m.total(), m.entity));
    let mut spent = vec![0usize; forest.tables.len()];
    let mut total = 0;
    let mut moved = Vec::new();
    for m in moves {
        if total + m.total() > budget {
            // The rest cost as much or more.
            break;
        }
        total += m.total();
        for (s, c) in spent.iter_mut().zip(&m.cells) {
            *s += c;
        }
        let mut rows = m.rows.iter();
        join(&mut clustering.ecs[m.ec], &mut rows);
        moved.push(m.entity);
    }
    moved.sort_unstable();
    clustering
        .suppressed
        .retain(|e| moved.binary_search(e).is_err());
    Moved {
        p,
        budget,
        qi_cells: cells as usize,
        cells: spent,
        entities: moved.len(),
    }
}

/// The post-pass where `options` ask for it (`relocate` above 0): what it moved.
pub fn apply(forest: &Forest, clustering: &mut Clustering, options: &Options) -> Option<Moved> {
    let p = percent(options);
    (p > 0.0).then(|| post_pass(forest, clustering, p))
}

/// Refuses `relocate` with l-diversity: a relocated entity carries its sensitive values into
/// a class whose diversity was counted without them (and hybrid l-diversity is future work
/// in seed 003, L327).
pub fn serves(model: &Model, options: &Options) -> Result<(), String> {
    if percent(options) > 0.0 && model.diversity().is_some() {
        return Err("relocate serves k-anonymity only in this version: a relocated entity would carry its sensitive values into a class whose diversity was counted without them; drop relocate, or declare model = 'k-anonymity'".to_string());
    }
    Ok(())
}

/// Adds a member to every vertex of `rep`, the next of `rows` each, in pre-order.
pub(crate) fn join(rep: &mut Rep, rows: &mut std::slice::Iter<'_, u32>) {
    let row = *rows
        .next()
        .expect("a move matches every vertex of its class's representative");
    rep.members.push(row);
    for c in &mut rep.children {
        join(c, rows);
    }
}

/// Entity `e`'s cheapest class (`classes`: each one's rows per table and size): the fewest
/// untruthful cells, then the largest released tree (fewest of its rows suppressed), then
/// the first class. `None` when no class's tree fits in the entity's.
fn closest(forest: &Forest, ecs: &[Rep], classes: &[(Profile, usize)], e: u32) -> Option<Move> {
    let own = Profile::of_entity(forest, e);
    let mut best: Option<(usize, std::cmp::Reverse<usize>, usize)> = None;
    for (i, (rep, (profile, nodes))) in ecs.iter().zip(classes).enumerate() {
        if !profile.fits_in(&own) {
            continue;
        }
        let Some(cost) = fit(forest, rep, 0, e) else {
            continue;
        };
        let key = (cost, std::cmp::Reverse(*nodes), i);
        if best.is_none_or(|b| key < b) {
            best = Some(key);
        }
    }
    let (_, _, ec) = best?;
    let mut rows = Vec::new();
    let mut cells = vec![0; forest.tables.len()];
    matched(forest, &ecs[ec], 0, e, &mut rows, &mut cells);
    Some(Move {
        entity: e,
        ec,
        cells,
        rows,
    })
}

/// Rows per family table of a tree: a representative fits in an entity only if it has no
/// more of any table (a quick refusal before [`fit`]).
struct Profile(Vec<usize>);

impl Profile {
    fn of_entity(forest: &Forest, e: u32) -> Profile {
        let mut counts = vec![0; forest.tables.len()];
        fn walk(forest: &Forest, t: usize, row: u32, counts: &mut [usize]) {
            counts[t] += 1;
            for group in &forest.tables[t].children {
                for &c in group.of(row) {
                    walk(forest, group.table, c, counts);
                }
            }
        }
        walk(forest, 0, e, &mut counts);
        Profile(counts)
    }

    fn of_rep(rep: &Rep, tables: usize) -> Profile {
        let mut counts = vec![0; tables];
        fn walk(rep: &Rep, counts: &mut [usize]) {
            counts[rep.table as usize] += 1;
            for c in &rep.children {
                walk(c, counts);
            }
        }
        walk(rep, &mut counts);
        Profile(counts)
    }

    fn fits_in(&self, other: &Profile) -> bool {
        self.0.iter().zip(&other.0).all(|(a, b)| a <= b)
    }
}

/// The row's QI cells that `labels` does not tell truthfully: a label neither the source
/// value nor an ancestor of it.
pub(crate) fn untruthful(forest: &Forest, t: usize, row: u32, labels: &[u32]) -> usize {
    let table = &forest.tables[t];
    table
        .codes(row)
        .iter()
        .zip(labels)
        .zip(&table.hierarchies)
        .filter(|((&leaf, &label), h)| h.lca(label, leaf) != label)
        .count()
}

/// The least untruthful cells of an embedding of `rep` into the subtree of `row` (table
/// `t`): the row's own under the representative's labels, and per child table an optimal
/// assignment of the representative's children to distinct children of the row (spec Sec.
/// 4.3's distance, with the row's extra children suppressed as a class's members' are).
/// `None` when the row has fewer children of some table than the representative.
pub(crate) fn fit(forest: &Forest, rep: &Rep, t: usize, row: u32) -> Option<usize> {
    let mut cost = untruthful(forest, t, row, &rep.qi);
    for group in &forest.tables[t].children {
        let kids = rep.children_of(group.table as u16);
        if kids.is_empty() {
            continue;
        }
        let (least, _) = assign(forest, kids, group.table, group.of(row))?;
        cost += least;
    }
    Some(cost)
}

/// The optimal assignment of representative children `kids` (table `t`) to distinct rows of
/// `rows`: its cost and each kid's row. `None` when there are fewer rows than kids or no
/// assignment embeds every kid.
fn assign(forest: &Forest, kids: &[Rep], t: usize, rows: &[u32]) -> Option<(usize, Vec<u32>)> {
    if kids.len() > rows.len() {
        return None;
    }
    if let [kid] = kids {
        // One kid: the first row it fits at least cost, without the assignment's matrix.
        let mut best: Option<(usize, u32)> = None;
        for &r in rows {
            if let Some(c) = fit(forest, kid, t, r) {
                if best.is_none_or(|(b, _)| c < b) {
                    best = Some((c, r));
                }
                if c == 0 {
                    break;
                }
            }
        }
        return best.map(|(c, r)| (c, vec![r]));
    }
    let mut weights = Vec::with_capacity(kids.len() * rows.len());
    for kid in kids {
        for &r in rows {
            weights.push(fit(forest, kid, t, r).map_or(NONE, |c| c as i64));
        }
    }
    let matrix = Matrix::from_vec(kids.len(), rows.len(), weights)
        .expect("the matrix holds a weight per kid and row");
    let (total, columns) = kuhn_munkres_min(&matrix);
    if total >= NONE {
        return None;
    }
    Some((
        total as usize,
        columns.into_iter().map(|c| rows[c]).collect(),
    ))
}

/// The embedding [`fit`] costed: each representative vertex's row in pre-order into `rows`,
/// the untruthful cells per table into `cells`.
pub(crate) fn matched(
    forest: &Forest,
    rep: &Rep,
    t: usize,
    row: u32,
    rows: &mut Vec<u32>,
    cells: &mut [usize],
) {
    rows.push(row);
    cells[t] += untruthful(forest, t, row, &rep.qi);
    for group in &forest.tables[t].children {
        let kids = rep.children_of(group.table as u16);
        if kids.is_empty() {
            continue;
        }
        let (_, chosen) = assign(forest, kids, group.table, group.of(row))
            .expect("the embedding was costed, so it exists");
        for (kid, r) in kids.iter().zip(chosen) {
            matched(forest, kid, group.table, r, rows, cells);
        }
    }
}

/// Families the tests of the tree embedding share.
#[cfg(test)]
pub(crate) mod fixtures {
    use crate::forest::{group_children, Forest, TableNodes};
    use crate::hierarchy::Hierarchy;

    /// Entities with one QI (flat over a, b, c: codes 1, 2, 3) and children with one QI
    /// (flat over x, y: codes 1, 2): `entities[e]` is entity e's code, `children[e]` its
    /// children's codes.
    pub(crate) fn family(entities: &[u32], children: &[Vec<u32>]) -> Forest {
        let mut parent = Vec::new();
        let mut codes = Vec::new();
        for (e, kids) in children.iter().enumerate() {
            for &c in kids {
                parent.push(e as u32);
                codes.push(c);
            }
        }
        let mut root = TableNodes::bare(
            "e",
            vec![Hierarchy::flat("h", &["a", "b", "c"])],
            entities.to_vec(),
            vec![u32::MAX; entities.len()],
        );
        let kids = TableNodes::bare("c", vec![Hierarchy::flat("k", &["x", "y"])], codes, parent);
        root.children = vec![group_children(root.rows(), &kids.parent, 1)];
        Forest {
            tables: vec![root, kids],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::family;
    use super::*;
    use crate::forest::shaped;

    /// A class of `members` published at `label` with one child at `child`.
    fn class(members: &[u32], child_rows: &[u32], label: u32, child: u32) -> Rep {
        Rep {
            table: 0,
            qi: vec![label],
            members: members.to_vec(),
            children: vec![Rep {
                table: 1,
                qi: vec![child],
                members: child_rows.to_vec(),
                children: Vec::new(),
            }],
        }
    }

    fn run(p: f64) -> (Clustering, Moved) {
        // Entities 0 and 1 form the class (a, x); 2 is (b, x), one cell off; 3 is (c, y), two.
        let forest = family(&[1, 1, 2, 3], &[vec![1], vec![1], vec![1], vec![2]]);
        let mut clustering = Clustering {
            ecs: vec![class(&[0, 1], &[0, 1], 1, 1)],
            suppressed: vec![2, 3],
        };
        let r = post_pass(&forest, &mut clustering, p);
        (clustering, r)
    }

    #[test]
    fn the_cheapest_entities_move_first_within_the_budget() {
        // 8 QI cells: 12.5% is one cell, 25% two, 37.5% three.
        let (c, r) = run(12.5);
        assert_eq!((r.budget, r.qi_cells, r.cells.clone()), (1, 8, vec![1, 0]));
        assert_eq!(c.suppressed, vec![3]);
        assert_eq!(c.ecs[0].members, vec![0, 1, 2]);
        assert_eq!(c.ecs[0].children[0].members, vec![0, 1, 2]);
        let (c, r) = run(25.0);
        assert_eq!((r.budget, r.cells.clone()), (2, vec![1, 0]));
        assert_eq!(c.suppressed, vec![3]);
        let (c, r) = run(37.5);
        assert_eq!(r.cells, vec![2, 1]);
        assert!(c.suppressed.is_empty());
        assert_eq!(c.ecs[0].members, vec![0, 1, 2, 3]);
        assert_eq!(c.ecs[0].children[0].members, vec![0, 1, 2, 3]);
    }

    #[test]
    fn nothing_moves_without_a_budget() {
        let (c, r) = run(0.0);
        assert_eq!(c.suppressed, vec![2, 3]);
        assert_eq!(c.ecs[0].members, vec![0, 1]);
        assert_eq!((r.budget, r.cells.clone()), (0, vec![0, 0]));
    }

    #[test]
    fn a_generalized_label_is_truthful_and_costs_nothing() {
        // The class at (*, x): entity 2 (b, x) fits it truthfully.
        let forest = family(&[1, 1, 2], &[vec![1], vec![1], vec![1]]);
        let rep = class(&[0, 1], &[0, 1], 0, 1);
        assert_eq!(fit(&forest, &rep, 0, 2), Some(0));
    }

    #[test]
    fn the_matching_child_is_kept_and_the_extra_one_suppressed() {
        // Entity 2 has children y (row 2) and x (row 3); the class's one child is x.
        let forest = family(&[1, 1, 1], &[vec![1], vec![1], vec![2, 1]]);
        let mut clustering = Clustering {
            ecs: vec![class(&[0, 1], &[0, 1], 1, 1)],
            suppressed: vec![2],
        };
        let r = post_pass(&forest, &mut clustering, 0.0);
        assert!(clustering.suppressed.is_empty());
        assert_eq!(clustering.ecs[0].children[0].members, vec![0, 1, 3]);
        assert_eq!(r.cells, vec![0, 0]);
    }

    #[test]
    fn a_tree_with_fewer_children_than_the_class_cannot_join_it() {
        let forest = shaped(&[vec![2, 2], vec![2, 2], vec![2]]);
        let rep = Rep::from_forest(&forest, 0, 0);
        assert_eq!(fit(&forest, &rep, 0, 2), None);
        let mut clustering = Clustering {
            ecs: vec![rep],
            suppressed: vec![2],
        };
        post_pass(&forest, &mut clustering, 100.0);
        assert_eq!(clustering.suppressed, vec![2]);
        assert_eq!(clustering.ecs[0].members, vec![0]);
    }
}
