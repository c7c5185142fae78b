//! η, 004 Def. 4.4, counted here on its own for the δ-selective release check: of the pairs
//! of versions two equivalence classes' class sets allow (App. C.II: a version gives each
//! published class at least one of the EC's rows), the share whose join on the class has
//! at least k rows. With the spec's weighting (D8): an EC of `n` rows and `c` classes, `w` of
//! them shared, has `C(n − s − 1, c − w − 1)` versions whose shared classes hold `s` rows
//! (exactly one, `s = n`, when all are shared), of `C(n − 1, c − 1)` in all.
//!
//! Counted by what fails: a join below k needs both sums of the shared counts below k (each
//! product is at least each factor), and [`Selectivity::short`] counts, by a memoized descent
//! over the shared classes, the pairs of shared counts with given sums whose products add up
//! below k.

use std::collections::HashMap;

use num_bigint::BigUint;
use num_traits::{One, Zero};

/// The largest k the count is exact for (pair counts fit a u128 below it).
pub(super) const LARGEST_K: usize = 64;

/// η for one k, every count remembered.
pub(super) struct Selectivity {
    k: usize,
    short: HashMap<(usize, usize, usize, usize), u128>,
}

impl Selectivity {
    pub(super) fn new(k: usize) -> Selectivity {
        Selectivity {
            k,
            short: HashMap::new(),
        }
    }

    /// Pairs of `w` positive counts summing to `s1` and `w` summing to `s2` whose products
    /// add up below `room`.
    fn short(&mut self, w: usize, s1: usize, s2: usize, room: usize) -> u128 {
        if w == 0 {
            return u128::from(s1 == 0 && s2 == 0 && room > 0);
        }
        if s1 < w || s2 < w || room == 0 {
            return 0;
        }
        if let Some(&n) = self.short.get(&(w, s1, s2, room)) {
            return n;
        }
        let mut n = 0u128;
        for a in 1..=s1 - (w - 1) {
            for b in 1..=s2 - (w - 1) {
                if a * b >= room {
                    break;
                }
                n += self.short(w - 1, s1 - a, s2 - b, room - a * b);
            }
        }
        self.short.insert((w, s1, s2, room), n);
        n
    }

    /// Whether η >= `delta` for an EC of `n1` rows publishing `c1` classes and one of `n2`
    /// and `c2`, sharing `w`: `(total − short) · 2^-e >= m · total` for `delta = m · 2^e`.
    pub(super) fn holds(
        &mut self,
        (n1, c1): (usize, usize),
        (n2, c2): (usize, usize),
        w: usize,
        delta: f64,
    ) -> bool {
        let total = choose(n1.saturating_sub(1), c1.saturating_sub(1))
            * choose(n2.saturating_sub(1), c2.saturating_sub(1));
        let mut short = BigUint::zero();
        for s1 in w..self.k.min(n1 + 1) {
            let v1 = with_sum(n1, c1, w, s1);
            if v1.is_zero() {
                continue;
            }
            for s2 in w..self.k.min(n2 + 1) {
                let pairs = self.short(w, s1, s2, self.k);
                if pairs > 0 {
                    short += &v1 * with_sum(n2, c2, w, s2) * BigUint::from(pairs);
                }
            }
        }
        let good = if short > total {
            BigUint::zero()
        } else {
            &total - short
        };
        let (m, e, sign) = num_traits::float::FloatCore::integer_decode(delta);
        if sign < 0 || m == 0 {
            return true;
        }
        if e >= 0 {
            good >= (BigUint::from(m) * total) << e as u32
        } else {
            (good << (-i32::from(e)) as u32) >= BigUint::from(m) * total
        }
    }
}

/// `C(n, r)`.
fn choose(n: usize, r: usize) -> BigUint {
    if r > n {
        return BigUint::zero();
    }
    (0..r.min(n - r)).fold(BigUint::one(), |acc, i| acc * (n - i) / (i + 1))
}

/// Versions of an EC of `n` rows and `c` classes whose `w` shared classes hold `s` rows.
fn with_sum(n: usize, c: usize, w: usize, s: usize) -> BigUint {
    if c == w {
        return if s == n {
            BigUint::one()
        } else {
            BigUint::zero()
        };
    }
    match (n - s).checked_sub(1) {
        Some(m) => choose(m, c - w - 1),
        None => BigUint::zero(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_example_passes_up_to_seven_in_twenty_four() {
        let mut s = Selectivity::new(5);
        assert!(s.holds((5, 3), (5, 2), 1, 0.29));
        assert!(!s.holds((5, 3), (5, 2), 1, 0.3));
        assert!(s.holds((5, 1), (5, 1), 1, 1.0));
    }
}
