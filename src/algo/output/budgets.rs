//! The occurrence budgets of a (p,m)-privacy rule (000 Def. 18-23, the spec's Sec. 1.4-1.6),
//! computed once per rule with exact arithmetic so a boundary case (Fig. 3.4's 3/4 >= 3/4)
//! is decided exactly.
//!
//! - t-t (Def. 21): at most μ_max = ⌊p·ℓ⌋ of a group's ℓ SA-trees may hold the value m times or
//!   more (decision D3: the group's final size ℓ).
//! - v-v (Def. 23): with η occurrences of the value in a group (one per slot at most), an
//!   adversary's reconstruction holds it Binomial(η, 1/ℓ) times, and Pr[X ≥ m] ≤ p is required;
//!   that probability never falls as η grows, so the rule is η ≤ η_max, the largest η with
//!   Σ_{j<m} C(η, j)·(ℓ−1)^(η−j)·den(p) ≥ (den(p) − num(p))·ℓ^η.

use std::cmp::Ordering;

pub use crate::fraction::Fraction;

/// t-t's budget: how many of a group's ℓ SA-trees may hold the value m times or more.
pub fn tt_budget(p: Fraction, l: u32) -> u32 {
    (p.num as u128 * l as u128 / p.den as u128) as u32
}

/// v-v's budget: the most occurrences of the value a group may hold (`None`: any number,
/// for p = 1). At least m − 1, since fewer than m occurrences never reach m.
pub fn vv_budget(p: Fraction, m: u32, l: u32) -> Option<u64> {
    if p.num == p.den {
        return None;
    }
    let mut eta = m.saturating_sub(1) as u64;
    // The probability grows with η towards 1 > p, so the loop ends.
    while holds(p, m, l, eta + 1) {
        eta += 1;
    }
    Some(eta)
}

/// Whether Pr[Binomial(η, 1/ℓ) ≥ m] ≤ p, exactly.
fn holds(p: Fraction, m: u32, l: u32, eta: u64) -> bool {
    // Σ_{j<m} C(η, j)·(ℓ−1)^(η−j), the count of outcomes with fewer than m hits.
    let mut below = Big::from(0);
    let mut choose = Big::from(1);
    for j in 0..(m as u64).min(eta + 1) {
        if j > 0 {
            choose = choose.mul_small(eta - j + 1).div_small(j);
        }
        below = below.add(&choose.mul(&Big::pow(l as u64 - 1, eta - j)));
    }
    let left = below.mul_small(p.den);
    let right = Big::pow(l as u64, eta).mul_small(p.den - p.num);
    left.cmp(&right) != Ordering::Less
}

/// A non-negative integer of any size (little-endian base-2^32 limbs), for the few exact
/// comparisons the v-v budget needs.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Big(Vec<u32>);

impl Big {
    fn from(v: u64) -> Big {
        let mut b = Big(vec![v as u32, (v >> 32) as u32]);
        b.trim();
        b
    }

    fn trim(&mut self) {
        while self.0.last() == Some(&0) {
            self.0.pop();
        }
    }

    fn pow(base: u64, exp: u64) -> Big {
        let mut out = Big::from(1);
        for _ in 0..exp {
            out = out.mul_small(base);
        }
        out
    }

    fn mul_small(&self, k: u64) -> Big {
        self.mul(&Big::from(k))
    }

    fn mul(&self, other: &Big) -> Big {
        let mut out = vec![0u64; self.0.len() + other.0.len() + 1];
        for (i, &a) in self.0.iter().enumerate() {
            let mut carry = 0u64;
            for (j, &b) in other.0.iter().enumerate() {
                let t = out[i + j] + a as u64 * b as u64 + carry;
                out[i + j] = t & 0xffff_ffff;
                carry = t >> 32;
            }
            let mut k = i + other.0.len();
            while carry > 0 {
                let t = out[k] + carry;
                out[k] = t & 0xffff_ffff;
                carry = t >> 32;
                k += 1;
            }
        }
        let mut b = Big(out.into_iter().map(|x| x as u32).collect());
        b.trim();
        b
    }

    fn add(&self, other: &Big) -> Big {
        let n = self.0.len().max(other.0.len());
        let mut out = Vec::with_capacity(n + 1);
        let mut carry = 0u64;
        for i in 0..n {
            let t =
                *self.0.get(i).unwrap_or(&0) as u64 + *other.0.get(i).unwrap_or(&0) as u64 + carry;
            out.push(t as u32);
            carry = t >> 32;
        }
        if carry > 0 {
            out.push(carry as u32);
        }
        let mut b = Big(out);
        b.trim();
        b
    }

    /// Exact division by a small divisor (the binomial's running product always divides).
    fn div_small(&self, d: u64) -> Big {
        let mut out = vec![0u32; self.0.len()];
        let mut rem = 0u128;
        for i in (0..self.0.len()).rev() {
            let cur = (rem << 32) | self.0[i] as u128;
            out[i] = (cur / d as u128) as u32;
            rem = cur % d as u128;
        }
        let mut b = Big(out);
        b.trim();
        b
    }
}

impl PartialOrd for Big {
    fn partial_cmp(&self, other: &Big) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Big {
    fn cmp(&self, other: &Big) -> Ordering {
        self.0
            .len()
            .cmp(&other.0.len())
            .then_with(|| self.0.iter().rev().cmp(other.0.iter().rev()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Fraction {
        Fraction::from_decimal(text).expect("a share in (0, 1]")
    }

    /// The spec's table of exact thresholds (Sec. 1.6): ℓ, m, then (η_max, μ_max) for p =
    /// 0.25, 0.33, 1/3, 0.5, 0.75.
    #[test]
    fn the_specs_threshold_table() {
        let ps = ["0.25", "0.33", "1/3", "0.5", "0.75"];
        // (η_max, μ_max) per p.
        type Row = [(u64, u32); 5];
        let table: [(u32, u32, Row); 9] = [
            (2, 1, [(0, 0), (0, 0), (0, 0), (1, 1), (2, 1)]),
            (2, 2, [(2, 0), (2, 0), (2, 0), (3, 1), (4, 1)]),
            (2, 3, [(3, 0), (4, 0), (4, 0), (5, 1), (6, 1)]),
            (3, 1, [(0, 0), (0, 0), (1, 1), (1, 1), (3, 2)]),
            (3, 2, [(2, 0), (3, 0), (3, 1), (4, 1), (7, 2)]),
            (3, 3, [(5, 0), (6, 0), (6, 1), (7, 1), (10, 2)]),
            (4, 1, [(1, 1), (1, 1), (1, 1), (2, 2), (4, 3)]),
            (4, 2, [(3, 1), (4, 1), (4, 1), (6, 2), (9, 3)]),
            (4, 3, [(7, 1), (8, 1), (8, 1), (10, 2), (14, 3)]),
        ];
        for (l, m, row) in table {
            for (text, (eta, mu)) in ps.iter().zip(row) {
                assert_eq!(vv_budget(p(text), m, l), Some(eta), "l {l} m {m} p {text}");
                assert_eq!(tt_budget(p(text), l), mu, "l {l} m {m} p {text}");
            }
        }
    }

    /// Fig. 3.4: (Alcohol P., 2, 1/4) at ℓ = 2 allows η = 2, the equality 3/4 >= 3/4; p = 1
    /// allows anything.
    #[test]
    fn boundaries_are_exact() {
        assert_eq!(vv_budget(p("1/4"), 2, 2), Some(2));
        assert_eq!(vv_budget(p("1/2"), 1, 2), Some(1));
        assert_eq!(vv_budget(p("1"), 1, 2), None);
        assert_eq!(tt_budget(p("1"), 3), 3);
        // Large η stays exact: (ℓ = 10, m = 20, p = 0.9) needs η far beyond f64's exact range of
        // binomial terms.
        let eta = vv_budget(p("0.9"), 20, 10).expect("p < 1");
        assert!(holds(p("0.9"), 20, 10, eta) && !holds(p("0.9"), 20, 10, eta + 1));
        assert!(eta > 200, "{eta}");
    }

    #[test]
    fn shares_are_parsed_exactly() {
        assert_eq!(p("0.33"), Fraction { num: 33, den: 100 });
        assert_eq!(p("1/3"), Fraction { num: 1, den: 3 });
        assert_eq!(p("1"), Fraction { num: 1, den: 1 });
        for bad in ["0", "1.5", "-0.2", "2/1", "x", "0/3", "1/0"] {
            assert!(Fraction::from_decimal(bad).is_none(), "{bad}");
        }
    }
}
