//! 001 Sec. III-A, universal anonymization: join the family into one relation (one tuple per
//! root-to-leaf path of an entity's tree, Table V's JT), k-anonymize its QI columns as a
//! single table (AT_1: join keys untouched), and write the result back.
//!
//! Decisions: a path that ends above the deepest tables (a course without books) has no
//! value in their columns; the universal relation's outer join leaves them NULL, and the
//! single-table algorithm sees them as the root `*` of their hierarchy. A source row lies on
//! several tuples (a student on one per course) that the algorithm may generalize
//! differently; written back, it carries the lowest common ancestor of all its versions, the
//! least generalization consistent with every tuple. A row is published if any tuple it lies
//! on survives.

use crate::algo::kernel::cdgh::CdghParams;
use crate::algo::output::Generalization;
use crate::forest::Forest;
use crate::progress::Progress;

use super::{cluster_flat, entity_table_classes, FlatTable};

/// One tuple of the universal relation: the `(table, row)` vertices of a root-to-leaf path.
type Path = Vec<(usize, u32)>;

/// 001 Sec. III-A over the whole forest.
pub fn universal(forest: &Forest, params: CdghParams, progress: &Progress) -> Generalization {
    let offsets = column_offsets(forest);
    let paths = universal_relation(forest);
    let table = flat_relation(forest, &paths, &offsets);
    let clustering = cluster_flat(table, params, progress);
    let mut g = Generalization::empty(forest);
    for ec in &clustering.ecs {
        for &p in &ec.members {
            for &(t, row) in &paths[p as usize] {
                write_back(forest, &mut g, t, row, &ec.qi[offsets[t]..]);
            }
        }
    }
    g.close_under_parents(forest);
    entity_table_classes(forest, &mut g);
    g
}

/// Where each family table's QI columns start in a universal tuple.
fn column_offsets(forest: &Forest) -> Vec<usize> {
    let mut offsets = Vec::with_capacity(forest.tables.len());
    let mut at = 0;
    for t in &forest.tables {
        offsets.push(at);
        at += t.nqi();
    }
    offsets
}

/// Table V's JT: every root-to-leaf path, entities in key order, children in forest order.
fn universal_relation(forest: &Forest) -> Vec<Path> {
    fn walk(forest: &Forest, t: usize, row: u32, prefix: &mut Path, out: &mut Vec<Path>) {
        prefix.push((t, row));
        let mut leaf = true;
        for group in &forest.tables[t].children {
            for &c in group.of(row) {
                leaf = false;
                walk(forest, group.table, c, prefix, out);
            }
        }
        if leaf {
            out.push(prefix.clone());
        }
        prefix.pop();
    }
    let mut out = Vec::new();
    for e in 0..forest.entities() as u32 {
        walk(forest, 0, e, &mut Vec::new(), &mut out);
    }
    out
}

/// The QI columns of the universal relation: every table's hierarchies side by side; a
/// table off the path contributes its roots (the outer join's NULLs).
fn flat_relation(forest: &Forest, paths: &[Path], offsets: &[usize]) -> FlatTable {
    let hierarchies: Vec<_> = forest
        .tables
        .iter()
        .flat_map(|t| t.hierarchies.iter().cloned())
        .collect();
    let width = hierarchies.len();
    let mut codes = Vec::with_capacity(paths.len() * width);
    for path in paths {
        let start = codes.len();
        codes.extend(hierarchies.iter().map(|h| h.root()));
        for &(t, row) in path {
            let own = forest.tables[t].codes(row);
            codes[start + offsets[t]..start + offsets[t] + own.len()].copy_from_slice(own);
        }
    }
    FlatTable {
        hierarchies,
        codes,
        rows: paths.len(),
    }
}

/// Writes a tuple's generalized codes back onto one of its rows: the first version as is
/// (the row is not yet published), later ones joined by the lowest common ancestor.
fn write_back(forest: &Forest, g: &mut Generalization, t: usize, row: u32, tuple: &[u32]) {
    let nodes = &forest.tables[t];
    let n = nodes.nqi();
    let first = !g.kept[t][row as usize];
    let cells = &mut g.codes[t][row as usize * n..row as usize * n + n];
    for (q, cell) in cells.iter_mut().enumerate() {
        *cell = if first {
            tuple[q]
        } else {
            nodes.hierarchies[q].lca(*cell, tuple[q])
        };
    }
    g.kept[t][row as usize] = true;
}
