//! Mutual information for 004 Alg. 1 line 2 (the `(n+1) × (n+1)` matrix over the n features
//! and the class, spec Sec. 2): the plug-in estimate from empirical joint counts, in nats
//! (spec D5; the base of the logarithm does not change an argmax), and the equal-frequency
//! bins a numeric column is counted in (D5: on raw distinct values plug-in MI is inflated, a
//! unique column would tell as much about the class as the class itself).

use std::collections::HashMap;

use rayon::prelude::*;

/// Equal-frequency bins of a numeric column (D5): in value order, the value at rank `r`
/// (counted from 0) falls in bin `⌊r · bins / n⌋`, except that a run of equal values takes
/// the bin of its first member, so it is never cut. Codes are renumbered densely from 0, so
/// fewer than `bins` codes appear when ties swallow a bin. Deterministic: ties in the sort
/// are broken by row, and `total_cmp` orders every value.
pub(super) fn equal_frequency(values: &[f64], bins: usize) -> Vec<u32> {
    let n = values.len();
    let bins = bins.max(1);
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]).then(a.cmp(&b)));
    let mut codes = vec![0u32; n];
    let (mut code, mut target) = (0u32, 0usize);
    for (rank, &row) in order.iter().enumerate() {
        let tied = rank > 0 && values[order[rank - 1]].total_cmp(&values[row]).is_eq();
        if !tied {
            let bin = rank * bins / n;
            if rank > 0 && bin != target {
                code += 1;
            }
            target = bin;
        }
        codes[row] = code;
    }
    codes
}

/// Joint tables up to this many cells (or up to the row count, whichever is larger) are
/// counted densely: cheaper than hashing every row, and already in key order.
const DENSE_CELLS: usize = 1 << 16;

/// `I(a; b) = Σ p(x, y) ln(p(x, y) / (p(x) p(y)))` over the rows both columns describe
/// (spec D5, plug-in, nats).
pub(super) fn mutual_information(a: &[u32], b: &[u32]) -> f64 {
    let n = a.len().min(b.len());
    if n == 0 {
        return 0.0;
    }
    let (a, b) = (&a[..n], &b[..n]);
    let width = |c: &[u32]| c.iter().max().map_or(0, |&m| m as usize + 1);
    let (wa, wb) = (width(a), width(b));
    let cells = match wa.checked_mul(wb) {
        Some(size) if size <= DENSE_CELLS.max(n) => dense(a, b, wa, wb),
        _ => sparse(a, b),
    };
    let total = n as f64;
    // Cells come in key order, so the float sum is the same on every run.
    let sum: f64 = cells
        .iter()
        .map(|&(c, cx, cy)| {
            let (c, cx, cy) = (c as f64, cx as f64, cy as f64);
            c / total * (c * total / (cx * cy)).ln()
        })
        .sum();
    // Rounding can leave a hair below 0 for independent columns; MI never is.
    sum.max(0.0)
}

/// Every non-empty joint cell as (count, count of its `a` value, count of its `b` value), in
/// key order, from tables indexed by code.
fn dense(a: &[u32], b: &[u32], wa: usize, wb: usize) -> Vec<(usize, usize, usize)> {
    let mut joint = vec![0usize; wa * wb];
    let (mut left, mut right) = (vec![0usize; wa], vec![0usize; wb]);
    for (&x, &y) in a.iter().zip(b) {
        let (x, y) = (x as usize, y as usize);
        joint[x * wb + y] += 1;
        left[x] += 1;
        right[y] += 1;
    }
    joint
        .iter()
        .enumerate()
        .filter(|&(_, &c)| c > 0)
        .map(|(i, &c)| (c, left[i / wb], right[i % wb]))
        .collect()
}

/// [`dense`] for codes too wide for a table: hashed, then sorted into key order.
fn sparse(a: &[u32], b: &[u32]) -> Vec<(usize, usize, usize)> {
    let mut joint: HashMap<(u32, u32), usize> = HashMap::new();
    let mut left: HashMap<u32, usize> = HashMap::new();
    let mut right: HashMap<u32, usize> = HashMap::new();
    for (&x, &y) in a.iter().zip(b) {
        *joint.entry((x, y)).or_insert(0) += 1;
        *left.entry(x).or_insert(0) += 1;
        *right.entry(y).or_insert(0) += 1;
    }
    let mut cells: Vec<((u32, u32), usize)> = joint.into_iter().collect();
    cells.sort_unstable();
    cells
        .into_iter()
        .map(|((x, y), c)| (c, left[&x], right[&y]))
        .collect()
}

/// Alg. 1 line 2: the symmetric matrix over `features` (0..n) and then the class (n); the
/// diagonal holds each column's entropy, `I(x; x)`, which FMRMR does not read (D3). The
/// pairs are independent, so they are counted in parallel; each lands in its own cell, so
/// the thread count cannot change the result.
pub(super) fn matrix(features: &[Vec<u32>], class: &[u32]) -> Vec<Vec<f64>> {
    let columns: Vec<&[u32]> = features
        .iter()
        .map(Vec::as_slice)
        .chain(std::iter::once(class))
        .collect();
    let n = columns.len();
    let pairs: Vec<(usize, usize)> = (0..n).flat_map(|i| (i..n).map(move |j| (i, j))).collect();
    let values: Vec<f64> = pairs
        .par_iter()
        .map(|&(i, j)| mutual_information(columns[i], columns[j]))
        .collect();
    let mut m = vec![vec![0.0; n]; n];
    for (&(i, j), v) in pairs.iter().zip(values) {
        m[i][j] = v;
        m[j][i] = v;
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn entropy(a: &[u32]) -> f64 {
        let mut counts: HashMap<u32, usize> = HashMap::new();
        for &x in a {
            *counts.entry(x).or_insert(0) += 1;
        }
        let n = a.len() as f64;
        counts
            .values()
            .map(|&c| {
                let p = c as f64 / n;
                -p * p.ln()
            })
            .sum()
    }

    fn sizes(codes: &[u32]) -> Vec<usize> {
        let bins = codes.iter().max().map_or(0, |&m| m as usize + 1);
        let mut out = vec![0; bins];
        for &c in codes {
            out[c as usize] += 1;
        }
        out
    }

    #[test]
    fn a_column_tells_all_its_entropy_about_itself() {
        let a = [0, 1, 1, 2, 2, 2, 3, 0];
        assert!((mutual_information(&a, &a) - entropy(&a)).abs() < 1e-12);
        let m = matrix(&[a.to_vec()], &[0, 0, 0, 0, 1, 1, 1, 1]);
        assert!((m[0][0] - entropy(&a)).abs() < 1e-12, "the diagonal");
    }

    #[test]
    fn independent_columns_share_nothing_and_the_measure_is_symmetric() {
        // Every pair of values equally often.
        let a = [0, 0, 1, 1, 0, 0, 1, 1];
        let b = [0, 1, 0, 1, 0, 1, 0, 1];
        assert_eq!(mutual_information(&a, &b), 0.0);
        let c = [0, 1, 1, 1, 0, 2, 2, 1];
        assert!(mutual_information(&a, &c) > 0.0);
        assert!((mutual_information(&a, &c) - mutual_information(&c, &a)).abs() < 1e-12);
        assert_eq!(mutual_information(&[], &[]), 0.0);
    }

    #[test]
    fn wide_codes_are_counted_alike_hashed_or_in_a_table() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let a: Vec<u32> = (0..500).map(|_| rng.random_range(0..7)).collect();
        let b: Vec<u32> = a.iter().map(|&x| x * 3 + rng.random_range(0..4)).collect();
        let dense_mi = mutual_information(&a, &b);
        // The same columns with codes far apart: too wide for a table.
        let wide: Vec<u32> = b.iter().map(|&y| y * 1_000_003).collect();
        assert!((mutual_information(&a, &wide) - dense_mi).abs() < 1e-12);
        assert_eq!(dense(&a, &b, 7, 25), sparse(&a, &b));
    }

    #[test]
    fn equal_frequency_bins_hold_equal_shares_and_keep_ties_together() {
        let values: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(sizes(&equal_frequency(&values, 10)), vec![10; 10]);
        // Shares as even as the count allows: 91 values in 10 bins of 9 or 10.
        let values: Vec<f64> = (0..91).rev().map(f64::from).collect();
        let s = sizes(&equal_frequency(&values, 10));
        assert_eq!(s.len(), 10);
        assert!(s.iter().all(|&n| n == 9 || n == 10), "{s:?}");
        // Twenty equal values cannot be cut: they share one bin, and fewer bins are used.
        let mut tied: Vec<f64> = vec![5.0; 20];
        tied.extend((0..20).map(f64::from));
        let codes = equal_frequency(&tied, 4);
        assert!(codes[..20].iter().all(|&c| c == codes[0]));
        for (i, &v) in tied.iter().enumerate() {
            for (j, &u) in tied.iter().enumerate() {
                if v == u {
                    assert_eq!(codes[i], codes[j], "equal values, one bin");
                } else if v < u {
                    assert!(codes[i] <= codes[j], "bins follow the values");
                }
            }
        }
        // Fewer distinct values than bins: one bin each.
        assert_eq!(equal_frequency(&[2.0, 1.0, 2.0, 1.0], 10), vec![1, 0, 1, 0]);
    }

    #[test]
    fn the_matrix_is_symmetric_with_the_class_last() {
        let features = vec![vec![0, 1, 0, 1], vec![0, 0, 1, 1]];
        let class = vec![0, 1, 0, 1];
        let m = matrix(&features, &class);
        assert_eq!(m.len(), 3);
        assert!(
            (m[0][2] - 2f64.ln()).abs() < 1e-12,
            "feature 0 is the class"
        );
        assert_eq!(m[1][2], 0.0);
        for (i, row) in m.iter().enumerate() {
            for (j, v) in row.iter().enumerate() {
                assert_eq!(*v, m[j][i]);
            }
        }
    }
}
