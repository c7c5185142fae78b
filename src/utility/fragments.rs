//! Count queries on a vertical fragmentation (004): what an analyst estimates from the
//! fragments, who can join them only on the class. A query whose predicates all read one
//! fragment is answered from it alone (QI labels spread uniformly over their leaves, other
//! cells exact, the class as published). A query spanning both is answered under the
//! fragments' only link: within each published class the two fragments' columns are taken
//! as independent, `Y = Σ_c Y1(c) · Y2(c) / N(c)`, with `N(c)` the first fragment's rows of
//! class `c`. The relanon decision the spec leaves open (its Sec. 5 measures classifiers,
//! not counts).

use super::{overlap, Predicate, Query};
use crate::algo::Fragmentation;
use crate::forest::Forest;

/// The answer of every query: the source's, the release's, and whether its predicates read
/// both fragments. A query counts rows of its table (on entity trees, a child table's rows
/// with their ancestors' cells).
pub(super) fn answers(
    forest: &Forest,
    f: &Fragmentation,
    queries: &[Query],
) -> Vec<(f64, f64, bool)> {
    use rayon::prelude::*;
    let home = homes(forest, f);
    let up = Ancestors::of(forest);
    queries
        .par_iter()
        .map(|q| {
            let x = (0..forest.tables[q.table].rows() as u32)
                .filter(|&r| {
                    q.predicates
                        .iter()
                        .all(|p| holds_in_source(forest, &up, p, q.table, r))
                })
                .count() as f64;
            let mut read: Vec<usize> = q
                .predicates
                .iter()
                .filter_map(|p| fragment_of(f, &home, p))
                .collect();
            read.sort_unstable();
            read.dedup();
            (x, estimate(forest, &up, f, &home, q), read.len() > 1)
        })
        .collect()
}

/// Per family table its parent table: the way from a query row up to its ancestor in the
/// table a predicate reads.
struct Ancestors {
    parent_table: Vec<Option<usize>>,
}

impl Ancestors {
    fn of(forest: &Forest) -> Ancestors {
        Ancestors {
            parent_table: (0..forest.tables.len())
                .map(|t| forest.parent_table(t))
                .collect(),
        }
    }

    /// Row `r` of table `t`'s ancestor in table `want` (itself when `want == t`); None when
    /// `want` is not above `t`.
    fn row_in(&self, forest: &Forest, mut t: usize, mut r: u32, want: usize) -> Option<u32> {
        while t != want {
            r = forest.tables[t].parent[r as usize];
            t = self.parent_table[t]?;
        }
        Some(r)
    }
}

/// The mean accuracy `1 - |Y - X| / X` of the queries answered in one fragment and of those
/// spanning both (queries with `X = 0` left out, as in the overall score).
pub(super) fn split(answered: &[(f64, f64, bool)]) -> super::FragmentQueries {
    let mean = |across: bool| {
        let scores: Vec<f64> = answered
            .iter()
            .filter(|a| a.2 == across && a.0 > 0.0)
            .map(|&(x, y, _)| 1.0 - (y - x).abs() / x)
            .collect();
        let n = scores.len();
        ((n > 0).then(|| scores.iter().sum::<f64>() / n as f64), n)
    };
    let ((within_one, within_one_count), (across, across_count)) = (mean(false), mean(true));
    super::FragmentQueries {
        within_one,
        within_one_count,
        across,
        across_count,
    }
}

/// Per sensitive column, the fragment it is published in (`None`: the class, in all).
fn homes(forest: &Forest, f: &Fragmentation) -> Vec<Option<usize>> {
    let nodes = &forest.tables[0];
    nodes
        .sensitive
        .iter()
        .enumerate()
        .map(|(s, col)| {
            if s == f.class {
                return None;
            }
            let at = nodes
                .batch
                .schema()
                .index_of(col.name_in(&nodes.name))
                .ok()?;
            f.placement.get(at).copied()
        })
        .collect()
}

/// Whether predicate `p` holds in the source for row `r` of table `t` (read on its ancestor
/// in the predicate's table).
fn holds_in_source(forest: &Forest, up: &Ancestors, p: &Predicate, t: usize, r: u32) -> bool {
    let Some(row) = up.row_in(forest, t, r, p.table()) else {
        return false;
    };
    let nodes = &forest.tables[p.table()];
    match *p {
        Predicate::Under { qi, node, .. } => {
            nodes.hierarchies[qi].lca(nodes.codes(row)[qi], node) == node
        }
        Predicate::Sensitive { sa, code, .. } => nodes.sa(sa, row) == code,
    }
}

/// Which fragment a predicate reads (`None`: the class, which both publish). A child
/// table's column is the anchor's (layout A).
fn fragment_of(f: &Fragmentation, home: &[Option<usize>], p: &Predicate) -> Option<usize> {
    match *p {
        _ if p.table() > 0 => Some(0),
        Predicate::Under { qi, .. } => f.fragments.iter().position(|g| g.qi.contains(&qi)),
        Predicate::Sensitive { sa, .. } => home.get(sa).copied().flatten(),
    }
}

/// The class code `p` asks for, when it is a condition on the class.
fn on_class(f: &Fragmentation, p: &Predicate) -> Option<u32> {
    match *p {
        Predicate::Sensitive {
            table: 0, sa, code, ..
        } if sa == f.class => Some(code),
        _ => None,
    }
}

/// Per published class, the expected count of rows of `table` in fragment `i` meeting
/// `predicates` (each read in `i` on the row's ancestor in its table: a QI label by its
/// overlap, a cell exactly, the class as published for the row's entity). Only the anchor
/// (`i == 0`) holds child tables.
fn per_class(
    (forest, up): (&Forest, &Ancestors),
    f: &Fragmentation,
    i: usize,
    predicates: &[&Predicate],
    table: usize,
) -> Vec<f64> {
    let entity = &forest.tables[0];
    let fragment = &f.fragments[i];
    let g = &fragment.generalization;
    let mut out = vec![0.0; entity.sensitive[f.class].labels.len()];
    let published = published_classes(fragment, entity.rows());
    // A class predicate keeps only its class's share of the row.
    let wanted = predicates.iter().find_map(|p| on_class(f, p));
    let Some(kept) = g.kept.get(table) else {
        return out;
    };
    for (r, _) in kept.iter().enumerate().filter(|(_, &k)| k) {
        let r = r as u32;
        let w: f64 = predicates
            .iter()
            .filter(|p| on_class(f, p).is_none())
            .map(|p| weight((forest, up), fragment, p, (table, r)))
            .product();
        let Some(e) = up.row_in(forest, table, r, 0) else {
            continue;
        };
        let classes = match &published {
            Published::Rows => std::slice::from_ref(&fragment.class[e as usize]),
            Published::Sets(of) => of[e as usize].as_slice(),
        };
        let share = w / classes.len().max(1) as f64;
        for &c in classes {
            if wanted.is_none_or(|x| x == c) {
                out[c as usize] += share;
            }
        }
    }
    out
}

/// How far row `r` of `table` meets `p` as `fragment` publishes it: a QI label by its
/// overlap with the predicate's node, another cell exactly.
fn weight(
    (forest, up): (&Forest, &Ancestors),
    fragment: &crate::algo::Fragment,
    p: &Predicate,
    (table, r): (usize, u32),
) -> f64 {
    let pt = p.table();
    let Some(row) = up.row_in(forest, table, r, pt) else {
        return 0.0;
    };
    let nodes = &forest.tables[pt];
    let g = &fragment.generalization;
    match *p {
        Predicate::Under { qi, node, .. } => {
            // The entity table's columns are the fragment's own few; a child's are all.
            let (j, nqi) = match pt {
                0 => (
                    fragment.qi.iter().position(|&q| q == qi).unwrap_or(0),
                    fragment.qi.len(),
                ),
                _ => (qi, nodes.nqi()),
            };
            overlap(
                &nodes.hierarchies[qi],
                g.codes[pt][row as usize * nqi + j],
                node,
            )
        }
        Predicate::Sensitive { sa, code, .. } => f64::from(u8::from(nodes.sa(sa, row) == code)),
    }
}

/// What a fragment publishes of each row's class: its own, or (`repair = 'delta'`) its
/// EC's set, over which the analyst spreads the row evenly (every class of a set is as
/// likely in a version, Def. 4.2).
enum Published<'a> {
    Rows,
    Sets(Vec<&'a Vec<u32>>),
}

fn published_classes(fragment: &crate::algo::Fragment, rows: usize) -> Published<'_> {
    let Some(sets) = &fragment.sets else {
        return Published::Rows;
    };
    static NONE: Vec<u32> = Vec::new();
    let mut of: Vec<&Vec<u32>> = vec![&NONE; rows];
    for (members, set) in fragment.ecs.iter().zip(sets) {
        for &r in members {
            of[r as usize] = set;
        }
    }
    Published::Sets(of)
}

/// The analyst's answer to `q` from the fragments: the rows of `q`'s table per class (the
/// anchor holds every child table), and where the query reads the other fragment too, each
/// class's share of that fragment's rows meeting its predicates, the fragments taken as
/// independent within a class.
fn estimate(
    forest: &Forest,
    up: &Ancestors,
    f: &Fragmentation,
    home: &[Option<usize>],
    q: &Query,
) -> f64 {
    let mut by: Vec<Vec<&Predicate>> = vec![Vec::new(); f.fragments.len()];
    let mut class: Vec<&Predicate> = Vec::new();
    for p in &q.predicates {
        match fragment_of(f, home, p) {
            Some(i) => by[i].push(p),
            None => class.push(p),
        }
    }
    let used: Vec<usize> = (0..by.len()).filter(|&i| !by[i].is_empty()).collect();
    let with_class = |i: usize| -> Vec<&Predicate> {
        by[i].iter().copied().chain(class.iter().copied()).collect()
    };
    let at = (forest, up);
    match used.as_slice() {
        [] => per_class(at, f, 0, &class, q.table).iter().sum(),
        [i] if *i == 0 || q.table == 0 => {
            per_class(at, f, *i, &with_class(*i), q.table).iter().sum()
        }
        _ => {
            // The anchor's entities per class: what each other fragment's count is a share of.
            let n = per_class(at, f, 0, &[], 0);
            let first = if used.contains(&0) {
                with_class(0)
            } else {
                class.clone()
            };
            let mut y = per_class(at, f, 0, &first, q.table);
            for &i in used.iter().filter(|&&i| i != 0) {
                let yi = per_class(at, f, i, &with_class(i), 0);
                for (c, v) in y.iter_mut().enumerate() {
                    *v = if n[c] > 0.0 { *v * yi[c] / n[c] } else { 0.0 };
                }
            }
            y.iter().sum()
        }
    }
}
