//! Layout A on entity trees (spec Sec. 4.2): the entity table's QI columns split in two as
//! for a single table; the **anchor** fragment keeps the entity key, the class and the
//! whole child family and is anonymized as entity trees (MiRaCleX, MiRaCle or ClusTree),
//! the other is the entity rows alone, key-less, anonymized by the single-table base.
//!
//! Soundness (spec Sec. 4.1): the class is the only shared column (S1); the second fragment
//! has no key and an order of its own (S2, S3, `release::fragments`); the tree shape is in
//! the anchor only (S4); equivalence classes are sets of entities, so the class repair
//! counts entities (S5).

use std::collections::HashMap;

use super::super::output::ChildColumn;
use super::super::Generalization;
use crate::forest::Forest;

/// The algorithms an anchor fragment's entity trees may be anonymized by.
pub(super) const TREE_BASES: &[(&str, &str)] = &[
    ("auto", "auto"),
    ("miraclex", "miraclex"),
    ("miracle", "miracle"),
    ("clustree", "clustree"),
];

/// The tree algorithm `trees` names: `auto` is MiRaCleX, relanon's default for entity trees
/// under k-anonymity.
pub(super) fn tree_base_name(trees: &str) -> &str {
    match trees {
        "auto" => "miraclex",
        other => other,
    }
}

/// The split with the anchor first: the fragment whose QI columns tell the most about the
/// class on average (the larger `V_t` of 004 Sec. 3.2; spec Sec. 4.2 leaves the choice
/// open). The anchor is anonymized with the child rows' QIs beside its own and loses more
/// to them, so it takes the columns that matter most to what analysts ask of the class.
pub(super) fn anchor_first(mi: &[Vec<f64>], split: [Vec<usize>; 2]) -> [Vec<usize>; 2] {
    let class = mi.len() - 1;
    let relevance = |fragment: &[usize]| -> f64 {
        if fragment.is_empty() {
            return f64::NEG_INFINITY;
        }
        fragment.iter().map(|&j| mi[class][j]).sum::<f64>() / fragment.len() as f64
    };
    let [a, b] = split;
    if relevance(&b) > relevance(&a) {
        [b, a]
    } else {
        [a, b]
    }
}

/// Fragment `i`'s forest: the entity table through the fragment's QI columns; the anchor
/// (`i == 0` of a family with child tables) keeps every child table whole, the other
/// fragment is the entity table alone.
pub(super) fn forest_of(forest: &Forest, qi: &[usize], i: usize) -> Result<Forest, String> {
    let alone;
    let source = if i > 0 && forest.tables.len() > 1 {
        let mut entity = forest.tables[0].clone();
        entity.children.clear();
        alone = Forest {
            tables: vec![entity],
        };
        &alone
    } else {
        forest
    };
    let keep: Vec<Vec<usize>> = source
        .tables
        .iter()
        .enumerate()
        .map(|(t, nodes)| {
            if t == 0 {
                qi.to_vec()
            } else {
                (0..nodes.nqi()).collect()
            }
        })
        .collect();
    source.project(&keep).map_err(|e| e.to_string())
}

/// A fragment's equivalence classes: its published entities grouped by the form of their
/// whole released tree (the table, its generalized codes, the multiset of its published
/// children's forms: 000 Def. 12, as verify compares trees), in the order of their first
/// entity. On a single table, entities with equal codes.
pub(super) fn classes(forest: &Forest, g: &Generalization) -> Vec<Vec<u32>> {
    let forms = forms(forest, g);
    let mut index: HashMap<u32, usize> = HashMap::new();
    let mut out: Vec<Vec<u32>> = Vec::new();
    for (r, form) in forms.iter().enumerate() {
        let Some(form) = form else { continue };
        let next = out.len();
        let at = *index.entry(*form).or_insert(next);
        if at == out.len() {
            out.push(Vec::new());
        }
        out[at].push(r as u32);
    }
    out
}

/// The form of every published entity's tree (None where suppressed), interned bottom-up:
/// children come after their parents in plan order, so every table's child forms are known
/// when it is reached.
fn forms(forest: &Forest, g: &Generalization) -> Vec<Option<u32>> {
    let mut intern: HashMap<Vec<u32>, u32> = HashMap::new();
    let mut of: Vec<Vec<Option<u32>>> = vec![Vec::new(); forest.tables.len()];
    for t in (0..forest.tables.len()).rev() {
        let nodes = &forest.tables[t];
        let nqi = nodes.nqi();
        let mut forms = vec![None; nodes.rows()];
        for (r, form) in forms.iter_mut().enumerate() {
            if !g.kept[t][r] {
                continue;
            }
            let mut key = Vec::with_capacity(1 + nqi);
            key.push(t as u32);
            key.extend_from_slice(&g.codes[t][r * nqi..(r + 1) * nqi]);
            let mut below: Vec<u32> = nodes
                .children
                .iter()
                .flat_map(|group| group.of(r as u32).iter().map(|&c| (group.table, c)))
                .filter_map(|(c_table, c)| of[c_table][c as usize])
                .collect();
            below.sort_unstable();
            key.extend(below);
            let next = intern.len() as u32;
            *form = Some(*intern.entry(key).or_insert(next));
        }
        of[t] = forms;
    }
    of.swap_remove(0)
}

/// A column of one of the anchor's child tables that determines, over the source's rows,
/// the entity's value of a QI column of the other fragment: the anchor's child rows then
/// name that value, a join column beside the class (the entity-table case is
/// `fragment::cross_determined`). `(table, column, qi)`: the child table, its column, the
/// entity QI column.
pub(super) fn child_determined(
    forest: &Forest,
    other: &[usize],
    features: &[Vec<u32>],
    k: usize,
) -> Vec<(usize, ChildColumn, usize)> {
    let entity = entities_of(forest);
    let mut out = Vec::new();
    for (t, nodes) in forest.tables.iter().enumerate().skip(1) {
        let columns = (0..nodes.nqi())
            .map(ChildColumn::Qi)
            .chain((0..nodes.sensitive.len()).map(ChildColumn::Sensitive));
        for column in columns {
            let values: Vec<u32> = (0..nodes.rows() as u32)
                .map(|r| match column {
                    ChildColumn::Qi(q) => nodes.codes(r)[q],
                    ChildColumn::Sensitive(s) => nodes.sa(s, r),
                })
                .collect();
            if !super::shared_by_k(&values, &entity[t], k) {
                continue;
            }
            for &b in other {
                if super::determines(&values, &entity[t], &features[b]) {
                    out.push((t, column, b));
                }
            }
        }
    }
    out
}

/// Per family table, the entity row of each row.
fn entities_of(forest: &Forest) -> Vec<Vec<u32>> {
    let mut out: Vec<Vec<u32>> = vec![Vec::new(); forest.tables.len()];
    out[0] = (0..forest.entities() as u32).collect();
    for t in 0..forest.tables.len() {
        for group in &forest.tables[t].children {
            let mut below = vec![u32::MAX; forest.tables[group.table].rows()];
            for r in 0..forest.tables[t].rows() as u32 {
                for &c in group.of(r) {
                    below[c as usize] = out[t][r as usize];
                }
            }
            out[group.table] = below;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forest::{Children, TableNodes};
    use crate::hierarchy::Hierarchy;

    fn flat(n: usize) -> Hierarchy {
        let leaves: Vec<String> = (0..n).map(|i| i.to_string()).collect();
        let leaves: Vec<&str> = leaves.iter().map(String::as_str).collect();
        Hierarchy::flat("q", &leaves)
    }

    /// Three entities; 0 and 2 have equal codes and one child each with equal codes, 1 has
    /// the same root codes as 0 but two children.
    fn family() -> (Forest, Generalization) {
        let mut root = TableNodes::bare("p", vec![flat(2)], vec![0, 0, 0], vec![u32::MAX; 3]);
        root.children.push(Children {
            table: 1,
            offsets: vec![0, 1, 3, 4],
            rows: vec![0, 1, 2, 3],
        });
        let child = TableNodes::bare("v", vec![flat(2)], vec![1, 1, 1, 1], vec![0, 1, 1, 2]);
        let forest = Forest {
            tables: vec![root, child],
        };
        let g = Generalization {
            kept: vec![vec![true; 3], vec![true; 4]],
            codes: vec![vec![0, 0, 0], vec![1, 1, 1, 1]],
            groups: vec![Vec::new(), Vec::new()],
            ec_sizes: Vec::new(),
            suppressed_entities: 0,
            levels: None,
            relocation: None,
        };
        (forest, g)
    }

    #[test]
    fn entities_with_equal_roots_but_other_children_are_other_classes() {
        let (forest, g) = family();
        assert_eq!(classes(&forest, &g), vec![vec![0, 2], vec![1]]);
    }

    #[test]
    fn a_suppressed_child_changes_the_form_and_a_suppressed_entity_has_none() {
        let (forest, mut g) = family();
        g.kept[1][2] = false;
        assert_eq!(classes(&forest, &g), vec![vec![0, 1, 2]]);
        g.kept[0][1] = false;
        assert_eq!(classes(&forest, &g), vec![vec![0, 2]]);
    }

    #[test]
    fn the_anchor_is_the_fragment_more_relevant_to_the_class() {
        // Columns 0, 1 and the class (2): column 1 tells more about the class.
        let mi = vec![
            vec![1.0, 0.0, 0.1],
            vec![0.0, 1.0, 0.5],
            vec![0.1, 0.5, 1.0],
        ];
        assert_eq!(anchor_first(&mi, [vec![0], vec![1]]), [vec![1], vec![0]]);
        assert_eq!(anchor_first(&mi, [vec![1], vec![0]]), [vec![1], vec![0]]);
    }
}
