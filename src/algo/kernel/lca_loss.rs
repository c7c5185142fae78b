//! `loss(lca(x, y))` of one hierarchy as a lookup: diversify and its bounds ask for it for
//! every pair of vertices of every pair of sibling lists they weigh, so it is the innermost
//! operation of ClusTree and CToff. Every form returns the very value
//! `h.loss(h.lca(x, y))` does (the same `f64`, read from a table built by that call).

use crate::hierarchy::Hierarchy;

/// Hierarchies (or their inner nodes) of up to this many nodes get a table of pair losses, at
/// most 2 MiB.
pub const PAIR_NODES: usize = 512;

/// Deepest hierarchy [`Ancestry`] covers; deeper ones keep walking parents.
const ANCESTRY_DEPTH: usize = 8;

/// The fastest lookup a hierarchy allows.
pub enum LcaLoss {
    /// Every pair of nodes, row-major by `x` (small hierarchies).
    Pairs { n: usize, table: Vec<f64> },
    /// Every pair of inner nodes, leaves read through their parent (large hierarchies with
    /// few inner nodes: parts under 150 types, days under 84 months).
    Inner(Inner),
    /// Ancestor rows (large hierarchies with many inner nodes, all shallow).
    Ancestry(Ancestry),
    /// The parent walk of [`Hierarchy::lca`] (deep hierarchies).
    Walk,
}

impl LcaLoss {
    pub fn new(h: &Hierarchy) -> LcaLoss {
        let n = h.len();
        if n <= PAIR_NODES {
            let table = (0..n * n)
                .map(|i| h.loss(h.lca((i / n) as u32, (i % n) as u32)))
                .collect();
            return LcaLoss::Pairs { n, table };
        }
        if let Some(inner) = Inner::new(h) {
            return LcaLoss::Inner(inner);
        }
        match Ancestry::new(h) {
            Some(a) => LcaLoss::Ancestry(a),
            None => LcaLoss::Walk,
        }
    }

    /// `h.loss(h.lca(x, y))`; `h` is the hierarchy this was built from.
    #[inline]
    pub fn get(&self, h: &Hierarchy, x: u32, y: u32) -> f64 {
        match self {
            LcaLoss::Pairs { n, table } => table[x as usize * n + y as usize],
            LcaLoss::Inner(inner) => inner.get(x, y),
            LcaLoss::Ancestry(a) => a.get(x, y),
            LcaLoss::Walk => h.loss(h.lca(x, y)),
        }
    }

    /// The table of [`LcaLoss::Pairs`], with its side.
    pub fn pairs(&self) -> Option<(usize, &[f64])> {
        match self {
            LcaLoss::Pairs { n, table } => Some((*n, table)),
            _ => None,
        }
    }
}

/// Pair losses of the inner nodes only. For a leaf `x` and any other node `y`, `lca(x, y) =
/// lca(parent(x), y)`: the common ancestor is not `x` itself (nothing lies below a leaf), so
/// it is an ancestor of the parent. A leaf with itself is its own LCA, whose loss is 0 (one
/// leaf under it).
pub struct Inner {
    /// Per node, the index among inner nodes of the node (inner) or its parent (leaf), with
    /// [`LEAF`] set for leaves.
    proxy: Vec<u32>,
    inner: usize,
    table: Vec<f64>,
}

const LEAF: u32 = 1 << 31;

impl Inner {
    fn new(h: &Hierarchy) -> Option<Inner> {
        let n = h.len();
        let mut is_inner = vec![false; n];
        for x in 0..n as u32 {
            if x != h.root() {
                is_inner[h.parent(x) as usize] = true;
            }
        }
        let inner_nodes: Vec<u32> = (0..n as u32).filter(|&x| is_inner[x as usize]).collect();
        let inner = inner_nodes.len();
        if inner == 0 || inner > PAIR_NODES {
            return None;
        }
        let mut index = vec![u32::MAX; n];
        for (i, &x) in inner_nodes.iter().enumerate() {
            index[x as usize] = i as u32;
        }
        let proxy = (0..n as u32)
            .map(|x| {
                if is_inner[x as usize] {
                    index[x as usize]
                } else {
                    index[h.parent(x) as usize] | LEAF
                }
            })
            .collect();
        let table = (0..inner * inner)
            .map(|i| h.loss(h.lca(inner_nodes[i / inner], inner_nodes[i % inner])))
            .collect();
        Some(Inner {
            proxy,
            inner,
            table,
        })
    }

    #[inline]
    fn get(&self, x: u32, y: u32) -> f64 {
        let (px, py) = (self.proxy[x as usize], self.proxy[y as usize]);
        if x == y && px & LEAF != 0 {
            return 0.0;
        }
        self.table[(px & !LEAF) as usize * self.inner + (py & !LEAF) as usize]
    }
}

/// A hierarchy's nodes as rows of ancestors (the root first, the node last) with every
/// node's LM': the lowest common ancestor is the last depth where two rows agree, found
/// without the dependent loads of a parent walk through hierarchies of 10^5 leaves.
pub struct Ancestry {
    /// Entries per row: the deepest node's depth + 1.
    stride: usize,
    depth: Vec<u8>,
    rows: Vec<u32>,
    /// `Hierarchy::loss` of every node, the very values it returns.
    loss: Vec<f64>,
}

impl Ancestry {
    fn new(h: &Hierarchy) -> Option<Ancestry> {
        let n = h.len() as u32;
        let depth_of = |mut x: u32| {
            let mut d = 0;
            while x != h.root() {
                x = h.parent(x);
                d += 1;
            }
            d
        };
        let depth: Vec<usize> = (0..n).map(depth_of).collect();
        let deepest = depth.iter().copied().max().unwrap_or(0);
        if deepest >= ANCESTRY_DEPTH {
            return None;
        }
        let stride = deepest + 1;
        let mut rows = vec![h.root(); n as usize * stride];
        for x in 0..n {
            let (mut y, mut d) = (x, depth[x as usize]);
            let row = &mut rows[x as usize * stride..][..stride];
            while d > 0 {
                row[d] = y;
                y = h.parent(y);
                d -= 1;
            }
        }
        Some(Ancestry {
            stride,
            depth: depth.iter().map(|&d| d as u8).collect(),
            rows,
            loss: (0..n).map(|x| h.loss(x)).collect(),
        })
    }

    #[inline]
    fn get(&self, x: u32, y: u32) -> f64 {
        let (rx, ry) = (
            &self.rows[x as usize * self.stride..][..self.stride],
            &self.rows[y as usize * self.stride..][..self.stride],
        );
        let mut d = self.depth[x as usize].min(self.depth[y as usize]) as usize;
        // Row entry 0 is the root in every row, so the scan stops there at the latest.
        while rx[d] != ry[d] {
            d -= 1;
        }
        self.loss[rx[d] as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::{Ancestry, Inner, LcaLoss, PAIR_NODES};
    use crate::hierarchy::Hierarchy;
    use crate::plan::HierarchyDef;
    use crate::policy::{DatePart, Pos};

    /// A three-level hierarchy of `leaves` leaves under `mid` inner nodes under 5, and a
    /// date hierarchy of 900 days: both too large for a pair table.
    fn large(leaves: usize, mid: usize) -> [Hierarchy; 2] {
        let rows: Vec<Vec<String>> = (0..leaves)
            .map(|i| {
                vec![
                    format!("v{i}"),
                    format!("m{}", i % mid),
                    format!("t{}", i % mid % 5),
                ]
            })
            .collect();
        let texts: Vec<Option<String>> = (0..leaves).map(|i| Some(format!("v{i}"))).collect();
        let def = HierarchyDef::Rows {
            rows,
            pos: Pos { line: 1, column: 1 },
        };
        let rows = Hierarchy::build("h", &def, "t.c", &texts, &vec![None; leaves]).expect("valid");
        let dates: Vec<Option<String>> = (0..900)
            .map(|i| {
                Some(format!(
                    "{}-{:02}-{:02}",
                    1992 + i / 336,
                    1 + i / 28 % 12,
                    1 + i % 28
                ))
            })
            .collect();
        let def = HierarchyDef::DateParts {
            parts: vec![DatePart::Month, DatePart::Quarter, DatePart::Year],
            pos: Pos { line: 1, column: 1 },
        };
        let days =
            Hierarchy::build("d", &def, "t.d", &dates, &vec![None; dates.len()]).expect("valid");
        [rows.hierarchy, days.hierarchy]
    }

    /// Every lookup gives `loss(lca(x, y))` exactly as the parent walk does, for every pair
    /// of nodes (leaves, inner nodes, the root).
    #[test]
    fn lookups_match_the_parent_walk() {
        for (mid, want_inner) in [(37, true), (600, false)] {
            for h in &large(700, mid) {
                assert!(h.len() > PAIR_NODES);
                let ancestry = Ancestry::new(h).expect("shallow");
                let inner = Inner::new(h);
                // The days have few inner nodes (months, quarters, years) whatever `mid`.
                assert_eq!(inner.is_some(), want_inner || h.name() == "d");
                let chosen = LcaLoss::new(h);
                for x in 0..h.len() as u32 {
                    for y in 0..h.len() as u32 {
                        let want = h.loss(h.lca(x, y));
                        assert_eq!(ancestry.get(x, y), want, "{x} {y}");
                        assert_eq!(chosen.get(h, x, y), want, "{x} {y}");
                        if let Some(inner) = &inner {
                            assert_eq!(inner.get(x, y), want, "{x} {y}");
                        }
                    }
                }
            }
        }
    }
}
