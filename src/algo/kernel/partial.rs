//! The partial lattice (002 Ch. 5, the spec's Sec. 2.8): histograms for a share p of each
//! height's nodes, chosen by an estimate of how much their levels group the entities, for
//! lattices too large, or too slow, to annotate in full.
//!
//! - Level metrics (D24-D25): for column c at level h, the "axis" node with c at h and every
//!   other column at 0 has some classes; γ(c, h) = entities / classes is the average class
//!   size, μ(c, h) = γ(c, h) / γ(c, h - 1) its relative importance, and μ(c, 0) =
//!   1 / μ(c, 1) (decision 21).
//! - A node's estimator is Λ(v) = Σ_c log2(γ(c, v_c)) · μ(c, v_c) (D26, the thesis's
//!   estimator of choice; decision 22: log2).
//! - Per height, the max(min(2, W), ⌈p·W⌉) nodes of highest Λ are annotated (decision 25),
//!   ties to the first level vector; the bottom and top nodes always are (a height of one
//!   node keeps it).
//! - A selected node's classes are computed on their own (canonical ids of every tree at
//!   its levels), in parallel over the selected nodes.

use rayon::prelude::*;

use crate::algo::kernel::annotate::{node_levels, tree_rows, Annotated, Histogram, Histograms};
use crate::algo::kernel::lattice::Lattice;
use crate::progress::Progress;

/// γ and μ of one column at one level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LevelMetric {
    /// Average class size at the axis node.
    pub gamma: f64,
    /// Relative importance.
    pub mu: f64,
}

/// Per column and level, the metrics of its axis node (Σ λ_c nodes computed).
pub fn level_metrics(lattice: &Lattice) -> Vec<Vec<LevelMetric>> {
    let n = lattice.forest().entities().max(1) as f64;
    let columns = lattice.columns.len();
    let axes: Vec<(usize, u16)> = (0..columns)
        .flat_map(|c| (0..=lattice.columns[c].height).map(move |h| (c, h)))
        .collect();
    let gammas: Vec<f64> = axes
        .par_iter()
        .map(|&(c, h)| {
            let mut levels = vec![0u16; columns];
            levels[c] = h;
            let (_, classes) = lattice.classes_at(&levels);
            n / classes.len().max(1) as f64
        })
        .collect();
    let mut out = Vec::with_capacity(columns);
    let mut at = 0;
    for c in 0..columns {
        let levels = lattice.columns[c].height as usize + 1;
        let g = &gammas[at..at + levels];
        at += levels;
        let mut metrics: Vec<LevelMetric> = (0..levels)
            .map(|h| LevelMetric {
                gamma: g[h],
                mu: if h == 0 { 1.0 } else { g[h] / g[h - 1] },
            })
            .collect();
        if levels > 1 {
            metrics[0].mu = 1.0 / metrics[1].mu;
        }
        out.push(metrics);
    }
    out
}

/// Λ of the node at `levels`.
pub fn lambda(metrics: &[Vec<LevelMetric>], levels: &[u16]) -> f64 {
    metrics
        .iter()
        .zip(levels)
        .map(|(m, &l)| {
            let m = m[l as usize];
            m.gamma.log2() * m.mu
        })
        .sum()
}

/// The nodes annotated at share `p` (0 < p <= 1): per height the highest Λ, in index order.
pub fn select(heights: &[u16], metrics: &[Vec<LevelMetric>], p: f64) -> Vec<usize> {
    let top: usize = heights.iter().map(|&h| h as usize).sum();
    let size: usize = heights.iter().map(|&h| h as usize + 1).product();
    let mut by_height: Vec<Vec<(f64, usize)>> = vec![Vec::new(); top + 1];
    for index in 0..size {
        let levels = node_levels(heights, index);
        let h: usize = levels.iter().map(|&l| l as usize).sum();
        by_height[h].push((lambda(metrics, &levels), index));
    }
    let mut out = Vec::new();
    for mut nodes in by_height {
        let w = nodes.len();
        let keep = (p * w as f64).ceil().max(w.min(2) as f64) as usize;
        // Highest Λ first; equal estimates keep the lower index (the first level vector in
        // the mixed-radix order).
        nodes.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        out.extend(nodes.into_iter().take(keep).map(|(_, i)| i));
    }
    out.sort_unstable();
    out
}

/// The histograms of the node at `levels`, from its classes computed on their own.
pub fn node_histograms(
    lattice: &Lattice,
    levels: &[u16],
    distinct: bool,
    tree_rows: &[u32],
) -> (Histogram, Option<Histogram>) {
    let tables = lattice.forest().tables.len();
    let (_, classes) = lattice.classes_at(levels);
    let size = classes.iter().map(|c| (c.size, c.size, c.rep)).collect();
    let by_distinct = distinct.then(|| {
        let measured = classes
            .iter()
            .map(|c| (c.distinct, c.size, c.rep))
            .collect();
        Histogram::of_classes(tables, measured, tree_rows)
    });
    (Histogram::of_classes(tables, size, tree_rows), by_distinct)
}

/// The partial lattice at share `p` (0 < p <= 1), the distinct measure too when `distinct`
/// and the entity table has sensitive columns. Counts the annotated nodes into `progress`.
pub fn annotate_partial(
    lattice: &Lattice,
    distinct: bool,
    p: f64,
    progress: &Progress,
) -> Annotated {
    let forest = lattice.forest();
    let tables = forest.tables.len();
    let heights: Vec<u16> = lattice.columns.iter().map(|c| c.height).collect();
    let distinct = distinct && !forest.tables[0].sensitive.is_empty();
    let rows = tree_rows(forest);
    let metrics = level_metrics(lattice);
    let chosen = select(&heights, &metrics, p);
    progress.stage("annotating the partial lattice", chosen.len());
    let computed_nodes: Vec<(Histogram, Option<Histogram>)> = chosen
        .par_iter()
        .map(|&i| {
            let h = node_histograms(lattice, &node_levels(&heights, i), distinct, &rows);
            progress.advance(1);
            h
        })
        .collect();
    let nodes = lattice.size;
    let entities = forest.entities() as u64;
    // Never read (`Annotated::histogram` refuses uncomputed nodes); should it be, it says
    // every entity is suppressed, which meets no request.
    let suppress_all = Histogram {
        classes: 0,
        stats: Vec::new(),
        cum: forest.tables.iter().map(|t| t.rows() as u64).collect(),
    };
    let mut size = vec![suppress_all.clone(); nodes];
    let mut by_distinct = distinct.then(|| vec![suppress_all; nodes]);
    let mut computed = vec![false; nodes];
    for (&i, (s, d)) in chosen.iter().zip(computed_nodes) {
        size[i] = s;
        if let (Some(all), Some(d)) = (by_distinct.as_mut(), d) {
            all[i] = d;
        }
        computed[i] = true;
    }
    Annotated {
        heights,
        tables,
        entities,
        rows: forest.tables.iter().map(|t| t.rows() as u64).collect(),
        size: Histograms::of_nodes(tables, size),
        distinct: by_distinct.map(|d| Histograms::of_nodes(tables, d)),
        computed: Some(computed),
        extra: Vec::new(),
        source: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algo::kernel::annotate::{annotate, tests::family};

    /// A selected node's histograms are the full annotation's; the bottom and top are always
    /// selected; a height keeps at least two nodes (or all it has) and about p of them.
    #[test]
    fn partial_nodes_agree_with_the_full_lattice() {
        let f = family(5, 30);
        let lattice = Lattice::new(&f);
        let full = annotate(&lattice, true, &Progress::new());
        let part = annotate_partial(&lattice, true, 0.1, &Progress::new());
        let computed = part.computed.as_ref().expect("partial");
        assert!(computed[0] && computed[part.nodes() - 1]);
        let mut per_height = std::collections::BTreeMap::new();
        for (i, &done) in computed.iter().enumerate() {
            let h: u32 = part.levels(i).iter().map(|&l| l as u32).sum();
            let e = per_height.entry(h).or_insert((0usize, 0usize));
            e.0 += 1;
            if done {
                e.1 += 1;
                assert_eq!(part.size.get(i), full.size.get(i), "node {i}");
                let (pd, fd) = (part.distinct.as_ref(), full.distinct.as_ref());
                assert_eq!(pd.map(|d| d.get(i)), fd.map(|d| d.get(i)), "node {i}");
            } else {
                assert!(part
                    .histogram(crate::algo::kernel::annotate::Measure::Size, i)
                    .is_none());
            }
        }
        for (h, (w, kept)) in per_height {
            let want = ((0.1 * w as f64).ceil() as usize).max(w.min(2));
            assert_eq!(kept, want, "height {h} of {w} nodes");
        }
    }

    /// D25 and decision 21: μ(c, 0) is 1 / μ(c, 1), and Λ ranks a node whose levels group
    /// more (larger average classes) higher.
    #[test]
    fn level_metrics_follow_the_thesis() {
        let f = family(6, 40);
        let lattice = Lattice::new(&f);
        let m = level_metrics(&lattice);
        for col in &m {
            if col.len() > 1 {
                assert!((col[0].mu * col[1].mu - 1.0).abs() < 1e-12);
            }
            // Coarser levels never hold more classes: γ never falls going up.
            assert!(col.windows(2).all(|w| w[1].gamma >= w[0].gamma));
        }
        let heights: Vec<u16> = lattice.columns.iter().map(|c| c.height).collect();
        let bottom = vec![0u16; heights.len()];
        assert!(lambda(&m, &heights) >= lambda(&m, &bottom));
    }
}
