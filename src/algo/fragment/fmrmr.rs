//! 004 Alg. 1 (fragment construction, FMRMR greedy, binary; spec Sec. 2, lines 1-19) with
//! the spec's fixes: the seeds are the two features of most mutual information, placed
//! apart (line 4, D4); each round starts at minus infinity (line 10, D1: at 0 the loop
//! stalls once every contribution is negative) and adds the winner to the winning fragment
//! (line 17, D2). FMRMR's redundancy `W_t` sums ordered pairs of distinct features over
//! `|A_t|²` (D3). Ties: the first feature in column order, fragment 0 before fragment 1
//! (strict `>`, line 13). Also D25: where the other released columns go.

/// One fragment's running sums, so a contribution costs O(1) (spec "FMRMR contribution").
#[derive(Debug, Clone, Default)]
struct Sums {
    size: usize,
    /// `Σ_{x ∈ A} I(cls, x)`.
    relevance: f64,
    /// `Σ_{x ≠ y ∈ A} I(x, y)`, ordered pairs (D3).
    redundancy: f64,
}

impl Sums {
    /// `V_t − W_t` (Sec. 3.2); an empty fragment adds nothing.
    fn value(&self) -> f64 {
        if self.size == 0 {
            return 0.0;
        }
        let m = self.size as f64;
        self.relevance / m - self.redundancy / (m * m)
    }

    /// The sums once a feature of relevance `rel` joins, whose MI with the fragment's
    /// features sums to `with` (each pair counted in both orders).
    fn with(&self, rel: f64, with: f64) -> Sums {
        Sums {
            size: self.size + 1,
            relevance: self.relevance + rel,
            redundancy: self.redundancy + 2.0 * with,
        }
    }
}

/// Alg. 1 line 4 (D4): the pair `j < l` of features with the most MI, class excluded; on
/// ties the lexicographically first pair (strict `>` in lexicographic order).
fn seeds(mi: &[Vec<f64>], n: usize) -> (usize, usize) {
    let mut best = (0, 1);
    let mut most = f64::NEG_INFINITY;
    for (j, row) in mi.iter().enumerate().take(n) {
        for (l, &v) in row.iter().enumerate().take(n).skip(j + 1) {
            if v > most {
                most = v;
                best = (j, l);
            }
        }
    }
    best
}

/// The state of Alg. 1's loop (lines 8-18).
struct Greedy<'m> {
    mi: &'m [Vec<f64>],
    /// The class's row and column in `mi`: the last.
    class: usize,
    fragments: [Vec<usize>; 2],
    sums: [Sums; 2],
    /// `nonAssignedFs`, in column order (the tie rule reads it in this order).
    open: Vec<usize>,
    /// `with[f][t]`: Σ of I(f, x) over fragment t's features, kept for every unassigned f so
    /// that a contribution is O(1) and a round O(n) instead of O(n²).
    with: Vec<[f64; 2]>,
    /// The most features a fragment may take.
    cap: usize,
}

impl<'m> Greedy<'m> {
    /// Alg. 1 lines 3-7: the seeds in fragments 0 and 1 (seed1, the lower index, in 0), every
    /// other feature unassigned. With `even` a fragment takes at most half the features,
    /// rounded up (relanon's option for D24).
    fn start(mi: &'m [Vec<f64>], even: bool) -> Greedy<'m> {
        let n = mi.len() - 1;
        let (a, b) = seeds(mi, n);
        let sums = [
            Sums::default().with(mi[n][a], 0.0),
            Sums::default().with(mi[n][b], 0.0),
        ];
        Greedy {
            mi,
            class: n,
            fragments: [vec![a], vec![b]],
            sums,
            open: (0..n).filter(|&f| f != a && f != b).collect(),
            with: (0..n).map(|f| [mi[f][a], mi[f][b]]).collect(),
            cap: if even { n.div_ceil(2) } else { n },
        }
    }

    /// `contribution(f, F_t)` (L133): FMRMR after adding feature `f` to fragment `t` minus
    /// FMRMR before; only term t changes.
    fn contribution(&self, f: usize, t: usize) -> f64 {
        let s = &self.sums[t];
        s.with(self.mi[self.class][f], self.with[f][t]).value() - s.value()
    }

    /// Alg. 1 lines 9-16: the best (position in `open`, fragment). Strict `>` from minus
    /// infinity (D1), so the first candidate in column order and fragment 0 win ties; a NaN
    /// never wins but cannot leave the round without a choice.
    fn best(&self) -> (usize, usize) {
        let mut best: Option<(usize, usize)> = None;
        let mut most = f64::NEG_INFINITY;
        for (i, &f) in self.open.iter().enumerate() {
            for t in (0..2).filter(|&t| self.fragments[t].len() < self.cap) {
                let c = self.contribution(f, t);
                if c > most || best.is_none() {
                    most = c.max(most);
                    best = Some((i, t));
                }
            }
        }
        best.expect("an unassigned feature fits a fragment: the two caps hold every feature")
    }

    /// Alg. 1 lines 17-18 (D2: into the best fragment): moves `open[i]` to fragment `t` and
    /// updates the sums the next contributions read.
    fn assign(&mut self, i: usize, t: usize) {
        let f = self.open.remove(i);
        self.sums[t] = self.sums[t].with(self.mi[self.class][f], self.with[f][t]);
        self.fragments[t].push(f);
        for &g in &self.open {
            self.with[g][t] += self.mi[g][f];
        }
    }
}

/// Alg. 1: the two fragments' features, each ascending, from the matrix of
/// [`super::mi::matrix`] (`n` features, then the class), `n >= 2` (with fewer, the caller
/// has nothing to fragment: every feature is returned in fragment 0). With `even`, neither
/// fragment takes more than half the features, rounded up (D24's optional size bound,
/// relanon's `sizes` option; `false` is the algorithm as written).
pub(super) fn split(mi: &[Vec<f64>], even: bool) -> [Vec<usize>; 2] {
    let n = mi.len().saturating_sub(1);
    if n < 2 {
        return [(0..n).collect(), Vec::new()];
    }
    let mut greedy = Greedy::start(mi, even);
    // Lines 8-18.
    while !greedy.open.is_empty() {
        let (i, t) = greedy.best();
        greedy.assign(i, t);
    }
    let mut fragments = greedy.fragments;
    for fragment in &mut fragments {
        fragment.sort_unstable();
    }
    fragments
}

/// FMRMR(𝓕) = Σ_t (V_t − W_t) (004 Sec. 3.2, D3), from scratch.
pub(super) fn score(mi: &[Vec<f64>], fragments: &[Vec<usize>]) -> f64 {
    let class = mi.len() - 1;
    fragments
        .iter()
        .map(|fragment| {
            let mut s = Sums::default();
            for (i, &f) in fragment.iter().enumerate() {
                let with: f64 = fragment[..i].iter().map(|&x| mi[f][x]).sum();
                s = s.with(mi[class][f], with);
            }
            s.value()
        })
        .sum()
}

/// D25: each other released column (`mi_with[o][j]`: I(column o, feature j)) goes to the
/// fragment whose features it shares the most mutual information with on average; ties to
/// fragment 0. The mean, not the sum: a larger fragment would otherwise draw every column.
pub(super) fn place(mi_with: &[Vec<f64>], fragments: &[Vec<usize>; 2]) -> Vec<usize> {
    mi_with
        .iter()
        .map(|row| {
            let mean = |fragment: &[usize]| {
                if fragment.is_empty() {
                    f64::NEG_INFINITY
                } else {
                    fragment.iter().map(|&j| row[j]).sum::<f64>() / fragment.len() as f64
                }
            };
            usize::from(mean(&fragments[1]) > mean(&fragments[0]))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn symmetric(n: usize, seed: u64) -> Vec<Vec<f64>> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut m = vec![vec![0.0; n]; n];
        for (i, j) in (0..n).flat_map(|i| (i..n).map(move |j| (i, j))) {
            let v = rng.random_range(0.0..1.0);
            m[i][j] = v;
            m[j][i] = v;
        }
        m
    }

    /// A matrix over `n` features and the class (last) from its upper-triangle entries.
    fn matrix(n: usize, entries: &[(usize, usize, f64)]) -> Vec<Vec<f64>> {
        let mut m = vec![vec![0.0; n + 1]; n + 1];
        for &(i, j, v) in entries {
            m[i][j] = v;
            m[j][i] = v;
        }
        m
    }

    #[test]
    fn two_features_are_the_two_seeds_one_per_fragment() {
        for seed in 0..5 {
            let m = symmetric(3, seed);
            assert_eq!(split(&m, false), [vec![0], vec![1]]);
            assert_eq!(split(&m, true), [vec![0], vec![1]]);
        }
    }

    #[test]
    fn no_information_at_all_still_places_every_feature() {
        // D1: every contribution is 0 or below; started at 0 the loop would never add one.
        // D4: the seeds are the first pair; the rest ties at 0 and goes to fragment 0.
        let m = vec![vec![0.0; 6]; 6];
        assert_eq!(split(&m, false), [vec![0, 2, 3, 4], vec![1]]);
    }

    #[test]
    fn a_hand_counted_split() {
        // Features 0..4, class 4. Seeds: I(0,1) = 0.9 is the largest, so {0} and {1}, of
        // values 0.6 and 0.2. Round 1, contributions:
        //   2 to F0: (0.6+0.5)/2 - 2·0.1/4 - 0.6 = -0.1;  2 to F1: (0.2+0.5)/2 - 2·0.3/4 - 0.2 = 0
        //   3 to F0: (0.6+0.1)/2 - 2·0.4/4 - 0.6 = -0.45; 3 to F1: (0.2+0.1)/2 - 0 - 0.2 = -0.05
        // so 2 joins F1 = {1, 2} (value 0.2). Round 2: 3 to F0 is still -0.45; 3 to F1:
        //   (0.7+0.1)/3 - (0.6 + 2·(0.0+0.2))/9 - 0.2 = -0.044, so 3 joins F1 too.
        let m = matrix(
            4,
            &[
                (0, 1, 0.9),
                (0, 2, 0.1),
                (1, 2, 0.3),
                (0, 3, 0.4),
                (1, 3, 0.0),
                (2, 3, 0.2),
                (0, 4, 0.6),
                (1, 4, 0.2),
                (2, 4, 0.5),
                (3, 4, 0.1),
            ],
        );
        assert_eq!(split(&m, false), [vec![0], vec![1, 2, 3]]);
        // With even sizes F1 is full after round 1 and 3 must go to F0.
        assert_eq!(split(&m, true), [vec![0, 3], vec![1, 2]]);
    }

    #[test]
    fn ties_go_to_the_first_feature_and_to_fragment_0() {
        // Seeds 0 and 1 (0.9). Round 1: 2 to F1 and 3 to F0 both contribute 0, the rest
        // -0.4: 2 comes first in column order, so it joins F1. Round 2: 3 to F0 is 0, to
        // F1 (0.5+0.5+0.5)/3 - 2·0.8/9 - 0.5 < 0.
        let mut entries = vec![(0, 1, 0.9), (0, 2, 0.8), (1, 3, 0.8)];
        entries.extend((0..4).map(|f| (f, 4, 0.5)));
        let m = matrix(4, &entries);
        assert_eq!(split(&m, false), [vec![0, 3], vec![1, 2]]);
        // Seeds tie everywhere: the lexicographically first pair, lower index in F0.
        let m = matrix(3, &[(0, 1, 0.5), (0, 2, 0.5), (1, 2, 0.5)]);
        assert_eq!(split(&m, false)[1], vec![1]);
    }

    #[test]
    fn contributions_kept_incrementally_are_score_differences_from_scratch() {
        for seed in 0..20 {
            let m = symmetric(10, seed);
            let mut greedy = Greedy::start(&m, seed % 2 == 0);
            while !greedy.open.is_empty() {
                let before = score(&m, &greedy.fragments);
                for &f in &greedy.open {
                    for t in 0..2 {
                        let mut grown = greedy.fragments.clone();
                        grown[t].push(f);
                        let scratch = score(&m, &grown) - before;
                        let kept = greedy.contribution(f, t);
                        assert!((kept - scratch).abs() < 1e-12, "seed {seed}");
                    }
                }
                let (i, t) = greedy.best();
                greedy.assign(i, t);
            }
        }
    }

    #[test]
    fn every_feature_is_placed_exactly_once() {
        for seed in 0..20 {
            let m = symmetric(12, seed);
            for even in [false, true] {
                let fragments = split(&m, even);
                let mut all: Vec<usize> = fragments.concat();
                all.sort_unstable();
                assert_eq!(all, (0..11).collect::<Vec<_>>(), "seed {seed}");
                assert!(fragments.iter().all(|f| f.is_sorted() && !f.is_empty()));
                if even {
                    assert!(fragments.iter().all(|f| f.len() <= 6), "seed {seed}");
                }
            }
        }
    }

    #[test]
    fn other_columns_go_where_they_share_most_on_average() {
        let mi_with = vec![
            vec![0.1, 0.9, 0.0],
            vec![0.5, 0.0, 0.5],
            vec![0.0, 0.0, 0.0],
            // Sum 0.8 against 0.5, but mean 0.4 against 0.5.
            vec![0.4, 0.5, 0.4],
        ];
        assert_eq!(
            place(&mi_with, &[vec![0, 2], vec![1]]),
            vec![1, 0, 0, 1],
            "the tie in row 2 goes to fragment 0"
        );
    }
}
