//! Tree shape and the price of suppression: what decides how many child rows a class of
//! entities can keep.
//!
//! Whole records are k-anonymous only when every member of a class publishes the same tree, so
//! a class of trees with different child counts must suppress the children that find no
//! partner, whatever their QIs. The clustering algorithms visit (CDGH) or seed (ClusTree,
//! CToff) entities in an order; [`visit_order`] with `order = 'shape'` (the default) sorts
//! them by their tree's shape (rows per table, then the shape itself, then the root QIs), so that
//! neighbours in the order are trees whose children can be matched. [`price`] is what the
//! data owner says a suppressed row costs against a fully generalized one: the pairwise and
//! diversify costs multiply every suppressed row's weight by it.

use crate::algo::options::{Default, Kind, OptionSpec, Options};
use crate::forest::Forest;

/// `suppression_price`: the cost of a suppressed row in fully generalized rows.
pub const PRICE: OptionSpec = OptionSpec {
    name: "suppression_price",
    aliases: &["price"],
    kind: Kind::Number { min: 0.0, max: 1e6 },
    default: Default::Number(1.0),
    check: Some(price_above_zero),
    doc: "what a suppressed row costs against a fully generalized one: above 1 keeps more rows and generalizes more, below 1 the other way",
};

/// `order`: the order entities are visited (CDGH) or tried as seeds (ClusTree, CToff) in.
pub const ORDER: OptionSpec = OptionSpec {
    name: "order",
    aliases: &[],
    kind: Kind::Choice(&[("shape", "shape"), ("key", "key")]),
    default: Default::Choice("shape"),
    check: None,
    doc: "'shape' visits entities by their tree's shape (rows per table, largest first, then the root QIs), so that classes gather trees whose children match (ClusTree, CToff: seeds and blocking, with candidates); 'key' in key order, as the papers do (a family without child tables is visited in key order either way)",
};

fn price_above_zero(p: f64) -> Result<(), String> {
    if p > 0.0 {
        Ok(())
    } else {
        Err("suppression_price must be above 0 (at 0 removing a row would cost nothing and every row would go)".to_string())
    }
}

/// The price read from `options` (which must declare [`PRICE`]).
pub fn price(options: &Options) -> f64 {
    options.number(PRICE.name)
}

/// Whether `options` (which must declare [`ORDER`]) ask for shape-aware clustering of
/// `forest`. A family without child tables has one shape, so its entities keep key order:
/// sorting them by their QIs alone would change single-table releases for no row kept.
pub fn aware(forest: &Forest, options: &Options) -> bool {
    options.choice(ORDER.name) == "shape" && forest.tables.len() > 1
}

/// The entities in the order `options` asks for (which must declare [`ORDER`]).
pub fn visit_order(forest: &Forest, options: &Options) -> Vec<u32> {
    entities(forest, aware(forest, options))
}

/// Every entity, sorted by [`by_shape`] or else in key order.
pub fn entities(forest: &Forest, shaped: bool) -> Vec<u32> {
    if shaped {
        by_shape(forest)
    } else {
        (0..forest.entities() as u32).collect()
    }
}

/// An entity's tree shape as a sort key: rows per family table below the entity, then the
/// tree's canonical form (children sorted, so sibling order does not matter).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Shape {
    /// Rows of each family table (plan order, the entity table's own 1 left out).
    pub counts: Vec<u32>,
    /// Pre-order `(table, children)` pairs with every node's children in canonical order.
    pub canon: Vec<u32>,
}

impl Shape {
    /// The shape of entity `e`'s tree.
    pub fn of(forest: &Forest, e: u32) -> Shape {
        let mut counts = vec![0u32; forest.tables.len().saturating_sub(1)];
        let canon = canonical(forest, 0, e, &mut counts);
        Shape { counts, canon }
    }
}

/// The canonical form of the subtree at `row` of `table`, counting its rows per table.
fn canonical(forest: &Forest, table: usize, row: u32, counts: &mut [u32]) -> Vec<u32> {
    let t = &forest.tables[table];
    let mut children: Vec<Vec<u32>> = Vec::new();
    for group in &t.children {
        for &c in group.of(row) {
            counts[group.table - 1] += 1;
            children.push(canonical(forest, group.table, c, counts));
        }
    }
    // Children carry their table first, so sorting keeps tables apart.
    children.sort_unstable();
    let mut out = vec![table as u32, children.len() as u32];
    for c in children {
        out.extend(c);
    }
    out
}

/// Every entity sorted by [`Shape`], largest first, then its root QI codes, then its key:
/// consecutive entities have trees whose children can be matched, among equal shapes similar
/// QIs, and the largest trees, which have the fewest partners, choose first. (Largest first
/// kept more rows at a lower LM than smallest first on the real-shaped fixtures, for MiRaCleX
/// at every price tried.)
pub fn by_shape(forest: &Forest) -> Vec<u32> {
    let root = &forest.tables[0];
    let mut keyed: Vec<(Shape, &[u32], u32)> = (0..forest.entities() as u32)
        .map(|e| (Shape::of(forest, e), root.codes(e), e))
        .collect();
    keyed.sort_unstable_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)).then(a.2.cmp(&b.2)));
    keyed.into_iter().map(|(_, _, e)| e).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forest::shaped;

    #[test]
    fn entities_with_equal_shapes_are_neighbours_whatever_their_child_order() {
        // Entity children per row: 0 has [1 grandchild, 2 grandchildren], 1 has 3 children,
        // 2 has [2, 1] (0's shape, siblings swapped), 3 has 3 children.
        let forest = shaped(&[vec![1, 2], vec![0, 0, 0], vec![2, 1], vec![0, 0, 0]]);
        assert_eq!(Shape::of(&forest, 0), Shape::of(&forest, 2));
        assert_ne!(Shape::of(&forest, 0), Shape::of(&forest, 1));
        assert_eq!(Shape::of(&forest, 1).counts, vec![3, 0]);
        let order = by_shape(&forest);
        let at = |e: u32| order.iter().position(|&x| x == e).expect("every entity");
        assert_eq!(at(0).abs_diff(at(2)), 1);
        assert_eq!(at(1).abs_diff(at(3)), 1);
    }
}
