//! η of 004 Def. 4.4, the equijoin selectivity privacy level of two equivalence classes
//! published with class *sets* (Sec. 4.2.4), as Alg. 4 (spec Sec. 2, lines 7 and 9-12)
//! reads it: the share of pairs of versions (Def. 4.2, each a multiset in which every
//! published class appears at least once, App. C.II) whose join has at least k rows. With
//! the spec's corrected count (D8): writing `n` for an EC's size, `c` for its set's size and
//! `w` for the classes the two share, the versions whose shared counts are `A` number
//! `N1(ΣA) = C(n1 − ΣA − 1, c1 − w − 1)` (or `[ΣA = n1]` when every class is shared), and
//!
//! `η = Σ_{A,B : Σ a_d b_d >= k} N1(ΣA) · N2(ΣB) / (C(n1 − 1, c1 − 1) · C(n2 − 1, c2 − 1))`.
//!
//! Counted through the complement (spec, Alg. 4's notes): `J = Σ a_d b_d >= ΣA` and `>= ΣB`
//! (every count is at least 1), so a join below k needs both sums below k, and the pairs of
//! compositions with `J < k` come from a table over (ΣA, ΣB, J), each below k, built one
//! shared class at a time. The table depends on k and w only, so it is built once per k and
//! widened as wider pairs ask; each η then costs `O(k²)` exact products. Exact throughout.

use std::collections::HashMap;
use std::ops::AddAssign;

use num_bigint::BigUint;
use num_traits::{One, ToPrimitive, Zero};

/// η as an exact fraction `num / den` (not reduced).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Eta {
    pub num: BigUint,
    pub den: BigUint,
}

impl Eta {
    /// Whether η >= `delta` (Def. 4.5 with D14), exactly: against the rational `delta`'s
    /// bits stand for, never a rounded η, so a pair whose η falls short of the δ a user
    /// wrote (as that double) never passes. A NaN passes nothing.
    pub(super) fn at_least(&self, delta: f64) -> bool {
        if delta.is_nan() {
            return false;
        }
        let (mantissa, exponent, sign) = num_traits::float::FloatCore::integer_decode(delta);
        if sign < 0 || mantissa == 0 {
            return true;
        }
        // delta = mantissa · 2^exponent.
        let m = BigUint::from(mantissa);
        let shift = u32::from(exponent.unsigned_abs());
        if exponent >= 0 {
            self.num >= (m * &self.den) << shift
        } else {
            (&self.num << shift) >= m * &self.den
        }
    }

    /// η as the nearest double, for reports.
    pub(super) fn value(&self) -> f64 {
        // Both may be past a double's range: keep 64 significant bits of the denominator.
        let shift = self.den.bits().saturating_sub(64);
        let (n, d) = (&self.num >> shift, &self.den >> shift);
        let (n, d) = (
            n.to_f64().unwrap_or(f64::NAN),
            d.to_f64().unwrap_or(f64::NAN),
        );
        if d > 0.0 {
            n / d
        } else {
            f64::NAN
        }
    }
}

/// η of an EC of `n1` rows publishing `c1` classes and one of `n2` rows and `c2` classes,
/// sharing `w` of them, at `k` (`1 <= w <= min(c1, c2)`, `c <= n`). A pair sharing nothing
/// does not join: η = 1 (D13 leaves it out of Def. 4.5).
#[cfg(test)]
pub(super) fn eta(n1: usize, c1: usize, n2: usize, c2: usize, w: usize, k: usize) -> Eta {
    EtaCache::default().eta(n1, c1, n2, c2, w, k)
}

/// η remembered per argument list, and the composition tables per k (Alg. 4 asks the same
/// sizes again and again: spec Sec. 7, "Memoize").
#[derive(Default)]
pub(super) struct EtaCache {
    tables: HashMap<usize, Tables>,
    memo: HashMap<[usize; 6], Eta>,
}

impl EtaCache {
    /// [`eta`], remembered.
    pub(super) fn eta(
        &mut self,
        n1: usize,
        c1: usize,
        n2: usize,
        c2: usize,
        w: usize,
        k: usize,
    ) -> Eta {
        let key = [n1, c1, n2, c2, w, k];
        if let Some(e) = self.memo.get(&key) {
            return e.clone();
        }
        debug_assert!(w <= c1.min(c2) && c1 <= n1 && c2 <= n2, "η of {key:?}");
        let den = binomial(n1.saturating_sub(1), c1.saturating_sub(1))
            * binomial(n2.saturating_sub(1), c2.saturating_sub(1));
        // Every count is at least 1, so J >= w: with w >= k no version pair joins below k.
        let e = if w == 0 || w >= k {
            Eta {
                num: den.clone(),
                den,
            }
        } else {
            let tables = self.tables.entry(k).or_insert_with(|| Tables::new(k));
            let bad = tables.below(n1, c1, n2, c2, w);
            Eta {
                num: &den - bad.min(den.clone()),
                den,
            }
        };
        self.memo.insert(key, e.clone());
        e
    }
}

/// The largest k whose composition counts a u128 holds: the pairs of compositions into any
/// number of parts with `J < k` stay below 2^125 for k <= 100 (a test counts them).
const SMALL_K: usize = 100;

/// The composition table of one k, in machine integers where they suffice.
enum Tables {
    Small(Table<u128>),
    Big(Table<BigUint>),
}

impl Tables {
    fn new(k: usize) -> Tables {
        if k <= SMALL_K {
            Tables::Small(Table::new(k))
        } else {
            Tables::Big(Table::new(k))
        }
    }

    /// The complement's weight: `Σ_{s1, s2} N1(s1) · N2(s2) · P_w(s1, s2)`, P the pairs of
    /// compositions of s1 and s2 into w parts each whose join stays below k.
    fn below(&mut self, n1: usize, c1: usize, n2: usize, c2: usize, w: usize) -> BigUint {
        match self {
            Tables::Small(t) => weigh(t, [n1, c1, n2, c2], w),
            Tables::Big(t) => weigh(t, [n1, c1, n2, c2], w),
        }
    }
}

/// What a table cell must do: add, and be read exactly.
trait Count: Clone + Zero + From<u8> + for<'a> AddAssign<&'a Self> + Into<BigUint> {}
impl<T: Clone + Zero + From<u8> + for<'a> AddAssign<&'a T> + Into<BigUint>> Count for T {}

/// Alg. 4's DP over the shared classes, for one k.
struct Table<T> {
    k: usize,
    /// `layer[(s1 · k + s2) · k + j]`: pairs of compositions of s1 and s2 into as many parts
    /// as there are entries of `pairs` minus one, whose products sum to j.
    layer: Vec<T>,
    /// `pairs[w][s1 · k + s2]`: the same for w parts, summed over every `j < k`.
    pairs: Vec<Vec<T>>,
}

impl<T: Count> Table<T> {
    /// Zero parts: both sums 0, J = 0, one way.
    fn new(k: usize) -> Table<T> {
        let mut layer = vec![T::zero(); k * k * k];
        layer[0] = T::from(1);
        let mut t = Table {
            k,
            layer,
            pairs: Vec::new(),
        };
        t.pairs.push(t.aggregate());
        t
    }

    /// Alg. 4's DP step: one more shared class, with counts `a` and `b` (each at least 1)
    /// adding `a · b` to the join; states at k or past it leave the complement for good.
    fn widen(&mut self) {
        let k = self.k;
        let at = |s1: usize, s2: usize, j: usize| (s1 * k + s2) * k + j;
        let mut next = vec![T::zero(); k * k * k];
        for s1 in 0..k {
            for s2 in 0..k {
                for j in 0..k {
                    let here = &self.layer[at(s1, s2, j)];
                    if here.is_zero() {
                        continue;
                    }
                    for a in (1..k - s1).take_while(|&a| j + a < k) {
                        for b in (1..k - s2).take_while(|&b| j + a * b < k) {
                            next[at(s1 + a, s2 + b, j + a * b)] += here;
                        }
                    }
                }
            }
        }
        self.layer = next;
        let summed = self.aggregate();
        self.pairs.push(summed);
    }

    /// Per (s1, s2), the current layer summed over J.
    fn aggregate(&self) -> Vec<T> {
        self.layer
            .chunks(self.k)
            .map(|js| {
                js.iter().fold(T::zero(), |mut sum, x| {
                    sum += x;
                    sum
                })
            })
            .collect()
    }

    /// `pairs[w]`, widening as far as needed.
    fn with_parts(&mut self, w: usize) -> &[T] {
        while self.pairs.len() <= w {
            self.widen();
        }
        &self.pairs[w]
    }
}

/// `Σ_{s1, s2 < k} N1(s1) · N2(s2) · pairs_w(s1, s2)` for `sizes = [n1, c1, n2, c2]`.
fn weigh<T: Count>(table: &mut Table<T>, sizes: [usize; 4], w: usize) -> BigUint {
    let [n1, c1, n2, c2] = sizes;
    let k = table.k;
    let side2: Vec<BigUint> = (0..k).map(|s2| versions(n2, c2, w, s2)).collect();
    let pairs = table.with_parts(w);
    let mut bad = BigUint::zero();
    for s1 in 0..k {
        let v1 = versions(n1, c1, w, s1);
        if v1.is_zero() {
            continue;
        }
        for (s2, v2) in side2.iter().enumerate() {
            let p = &pairs[s1 * k + s2];
            if p.is_zero() || v2.is_zero() {
                continue;
            }
            let p: BigUint = p.clone().into();
            bad += &v1 * v2 * p;
        }
    }
    bad
}

/// `C(n, r)`, 0 when `r > n`.
fn binomial(n: usize, r: usize) -> BigUint {
    if r > n {
        return BigUint::zero();
    }
    let r = r.min(n - r);
    let mut out = BigUint::one();
    for i in 0..r {
        // Exact at every step: the running product is C(n, i + 1) · (i + 1)! / (i + 1)!.
        out *= n - i;
        out /= i + 1;
    }
    out
}

/// `N(s)` (D8): versions of an EC of `n` rows and `c` published classes whose `w` shared
/// classes hold `s` rows in all: the other `c − w` classes share the other `n − s` rows, each
/// at least one.
fn versions(n: usize, c: usize, w: usize, s: usize) -> BigUint {
    if s > n {
        return BigUint::zero();
    }
    if c == w {
        return if s == n {
            BigUint::one()
        } else {
            BigUint::zero()
        };
    }
    (n - s)
        .checked_sub(1)
        .map_or_else(BigUint::zero, |m| binomial(m, c - w - 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Every version of an EC of `n` rows over the class set `set` (Def. 4.2, App. C.II:
    /// each class at least once), as (class, count) pairs.
    fn versions_of(n: usize, set: &[u32]) -> Vec<Vec<(u32, usize)>> {
        fn go(
            left: usize,
            set: &[u32],
            prefix: &mut Vec<(u32, usize)>,
            out: &mut Vec<Vec<(u32, usize)>>,
        ) {
            let Some((&c, rest)) = set.split_first() else {
                if left == 0 {
                    out.push(prefix.clone());
                }
                return;
            };
            for a in 1..=left.saturating_sub(rest.len()) {
                prefix.push((c, a));
                go(left - a, rest, prefix, out);
                prefix.pop();
            }
        }
        let mut out = Vec::new();
        go(n, set, &mut Vec::new(), &mut out);
        out
    }

    /// Def. 4.4 by enumeration: (pairs of versions joining into k rows or more, all pairs).
    fn brute(n1: usize, set1: &[u32], n2: usize, set2: &[u32], k: usize) -> (usize, usize) {
        let (v1, v2) = (versions_of(n1, set1), versions_of(n2, set2));
        let joined = |x: &[(u32, usize)], y: &[(u32, usize)]| -> usize {
            x.iter()
                .flat_map(|&(c, a)| {
                    y.iter()
                        .filter(move |&&(d, _)| d == c)
                        .map(move |&(_, b)| a * b)
                })
                .sum()
        };
        let good = v1
            .iter()
            .flat_map(|x| v2.iter().map(move |y| (x, y)))
            .filter(|(x, y)| joined(x, y) >= k)
            .count();
        (good, v1.len() * v2.len())
    }

    /// `size` distinct classes out of 0..6, ascending.
    fn set(rng: &mut ChaCha8Rng, size: usize) -> Vec<u32> {
        let mut all: Vec<u32> = (0..6).collect();
        for i in (1..all.len()).rev() {
            all.swap(i, rng.random_range(0..=i));
        }
        let mut s = all[..size].to_vec();
        s.sort_unstable();
        s
    }

    #[test]
    fn the_spec_example_is_seven_in_twenty_four() {
        // Table 3b (n1 = 5, {flu, pn, dys}) and n2 = 5, {flu, x}, k = 5.
        let e = eta(5, 3, 5, 2, 1, 5);
        assert_eq!(e.den, BigUint::from(24u32));
        assert_eq!(e.num, BigUint::from(7u32));
        assert!((e.value() - 7.0 / 24.0).abs() < 1e-15);
        assert_eq!(brute(5, &[0, 1, 2], 5, &[0, 3], 5), (7, 24));
    }

    #[test]
    fn one_shared_class_published_alone_always_joins_into_k() {
        // The text's unweighted count gives 17; every one of the single pair joins 25 rows.
        let e = eta(5, 1, 5, 1, 1, 5);
        assert_eq!(e.num, e.den);
        assert_eq!(e.value(), 1.0);
    }

    #[test]
    fn the_count_agrees_with_every_version_enumerated() {
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let mut cache = EtaCache::default();
        let mut cases = 0;
        while cases < 400 {
            let k = rng.random_range(1..=12);
            let (n1, n2) = (rng.random_range(1..=7), rng.random_range(1..=7));
            let (c1, c2) = (
                rng.random_range(1..=n1.min(4)),
                rng.random_range(1..=n2.min(4)),
            );
            let set1 = set(&mut rng, c1);
            let set2 = set(&mut rng, c2);
            let w = set1.iter().filter(|c| set2.contains(c)).count();
            if w == 0 {
                continue;
            }
            cases += 1;
            let (good, all) = brute(n1, &set1, n2, &set2, k);
            let e = cache.eta(n1, set1.len(), n2, set2.len(), w, k);
            let case = format!("{n1} {set1:?}, {n2} {set2:?}, k {k}");
            assert_eq!(e.den, BigUint::from(all), "{case}");
            assert_eq!(e.num, BigUint::from(good), "{case}");
            assert_eq!(
                e,
                eta(n1, set1.len(), n2, set2.len(), w, k),
                "cached: {case}"
            );
        }
    }

    #[test]
    fn the_threshold_is_compared_exactly_on_both_sides() {
        let e = eta(5, 3, 5, 2, 1, 5);
        let near = 7.0f64 / 24.0;
        // The double nearest 7/24 lies on one side of it: η passes it exactly when it is
        // at or below 7/24, and fails the next double up from there.
        let (m, ex, _) = num_traits::float::FloatCore::integer_decode(near);
        // m · 2^ex <= 7/24  <=>  24 m <= 7 · 2^-ex.
        let below = BigUint::from(m) * 24u32 <= BigUint::from(7u32) << (-i32::from(ex)) as u32;
        assert_eq!(e.at_least(near), below);
        let (under, over) = if below {
            (near, near.next_up())
        } else {
            (near.next_down(), near)
        };
        assert!(
            e.at_least(under),
            "the largest double not above 7/24 passes"
        );
        assert!(!e.at_least(over), "the smallest double above 7/24 fails");
        assert!(e.at_least(0.0) && e.at_least(0.29) && !e.at_least(0.3));
        assert!(!e.at_least(f64::NAN));
        let one = eta(5, 1, 5, 1, 1, 5);
        assert!(one.at_least(1.0) && !one.at_least(1.0f64.next_up()));
    }

    #[test]
    fn eta_falls_as_k_rises_and_stays_a_share_on_large_classes() {
        let mut cache = EtaCache::default();
        let mut last = cache.eta(10_000, 4, 3_000, 3, 2, 1).den;
        for k in 1..60 {
            let e = cache.eta(10_000, 4, 3_000, 3, 2, k);
            assert!(e.num <= e.den);
            // The denominator does not depend on k: the numerators compare.
            assert!(e.num <= last, "k {k}");
            last = e.num.clone();
        }
        assert!(cache.eta(10_000, 4, 3_000, 3, 2, 59).value() > 0.99);
    }

    #[test]
    fn machine_and_big_integer_tables_agree() {
        let mut small: Table<u128> = Table::new(15);
        let mut big: Table<BigUint> = Table::new(15);
        for w in 0..6 {
            let s: Vec<BigUint> = small.with_parts(w).iter().map(|&x| x.into()).collect();
            assert_eq!(s, big.with_parts(w).to_vec(), "w {w}");
        }
        assert!(matches!(Tables::new(SMALL_K), Tables::Small(_)));
        assert!(matches!(Tables::new(SMALL_K + 1), Tables::Big(_)));
    }

    #[test]
    fn machine_integers_hold_every_count_up_to_small_k() {
        // The pairs of compositions into w parts with J = j are the coefficient of x^j in
        // D(x)^w, D(x) = Σ d(m) x^m (d: the number of divisors: the pairs a · b = m). A
        // table cell is a part of one such coefficient's sum over j < k: if the sums fit
        // (checked arithmetic fails otherwise), so does every cell.
        let k = SMALL_K;
        let d: Vec<u128> = (0..k)
            .map(|m| (1..=m).filter(|a| m % a == 0).count() as u128)
            .collect();
        let mut power: Vec<u128> = vec![0; k];
        power[0] = 1;
        for w in 1..k {
            let mut next = vec![0u128; k];
            for (i, &p) in power.iter().enumerate().filter(|(_, &p)| p > 0) {
                for m in 1..k - i {
                    let add = p.checked_mul(d[m]).expect("fits");
                    next[i + m] = next[i + m].checked_add(add).expect("fits");
                }
            }
            power = next;
            let total = power.iter().try_fold(0u128, |s, &x| s.checked_add(x));
            assert!(total.is_some_and(|t| t < 1 << 125), "w {w}");
        }
    }
}
