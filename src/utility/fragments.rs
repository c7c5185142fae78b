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

/// The answer of every query (single table: the entity table): the source's, the
/// release's, and whether its predicates read both fragments.
pub(super) fn answers(
    forest: &Forest,
    f: &Fragmentation,
    queries: &[Query],
) -> Vec<(f64, f64, bool)> {
    use rayon::prelude::*;
    let nodes = &forest.tables[0];
    let home = homes(forest, f);
    queries
        .par_iter()
        .map(|q| {
            let x = (0..nodes.rows() as u32)
                .filter(|&r| q.predicates.iter().all(|p| holds_in_source(forest, p, r)))
                .count() as f64;
            let mut read: Vec<usize> = q
                .predicates
                .iter()
                .filter_map(|p| fragment_of(f, &home, p))
                .collect();
            read.sort_unstable();
            read.dedup();
            (x, estimate(forest, f, &home, q), read.len() > 1)
        })
        .collect()
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

fn holds_in_source(forest: &Forest, p: &Predicate, r: u32) -> bool {
    let nodes = &forest.tables[0];
    match *p {
        Predicate::Under { qi, node, .. } => {
            nodes.hierarchies[qi].lca(nodes.codes(r)[qi], node) == node
        }
        Predicate::Sensitive { sa, code, .. } => nodes.sa(sa, r) == code,
    }
}

/// Which fragment a predicate reads (`None`: the class, which both publish).
fn fragment_of(f: &Fragmentation, home: &[Option<usize>], p: &Predicate) -> Option<usize> {
    match *p {
        Predicate::Under { qi, .. } => f.fragments.iter().position(|g| g.qi.contains(&qi)),
        Predicate::Sensitive { sa, .. } => home.get(sa).copied().flatten(),
    }
}

/// Per published class, the expected count of fragment `i`'s rows meeting `predicates`
/// (each read in `i`: a QI label by its overlap, a cell exactly, the class as published).
fn per_class(forest: &Forest, f: &Fragmentation, i: usize, predicates: &[&Predicate]) -> Vec<f64> {
    let nodes = &forest.tables[0];
    let fragment = &f.fragments[i];
    let g = &fragment.generalization;
    let nqi = fragment.qi.len();
    let mut out = vec![0.0; nodes.sensitive[f.class].labels.len()];
    let published = published_classes(fragment, nodes.rows());
    for (r, _) in g.kept[0].iter().enumerate().filter(|(_, &k)| k) {
        let mut w = 1.0;
        for p in predicates {
            w *= match **p {
                Predicate::Under { qi, node, .. } => {
                    let j = fragment.qi.iter().position(|&q| q == qi).unwrap_or(0);
                    overlap(&nodes.hierarchies[qi], g.codes[0][r * nqi + j], node)
                }
                Predicate::Sensitive { sa, .. } if sa == f.class => 1.0,
                Predicate::Sensitive { sa, code, .. } => {
                    f64::from(u8::from(nodes.sa(sa, r as u32) == code))
                }
            };
        }
        // A class predicate keeps only its class's share of the row.
        let wanted = predicates.iter().find_map(|p| match **p {
            Predicate::Sensitive { sa, code, .. } if sa == f.class => Some(code),
            _ => None,
        });
        let classes = match &published {
            Published::Rows => std::slice::from_ref(&fragment.class[r]),
            Published::Sets(of) => of[r].as_slice(),
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

/// The analyst's answer to `q` from the fragments.
fn estimate(forest: &Forest, f: &Fragmentation, home: &[Option<usize>], q: &Query) -> f64 {
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
    match used.as_slice() {
        [] => per_class(forest, f, 0, &class).iter().sum(),
        [i] => per_class(forest, f, *i, &with_class(*i)).iter().sum(),
        _ => {
            let n = per_class(forest, f, 0, &[]);
            let mut y: Vec<f64> = n.clone();
            for &i in &used {
                let yi = per_class(forest, f, i, &with_class(i));
                for (c, v) in y.iter_mut().enumerate() {
                    *v = if n[c] > 0.0 { *v * yi[c] / n[c] } else { 0.0 };
                }
            }
            y.iter().sum()
        }
    }
}
