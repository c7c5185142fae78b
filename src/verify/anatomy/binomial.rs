//! Def. 23's test, decided exactly: Pr[Binomial(eta, 1/l) >= m] <= p, as the integer
//! inequality
//!
//! ```text
//! sum_{j < m} C(eta, j) (l-1)^(eta-j) * den(p)  >=  (den(p) - num(p)) * l^eta
//! ```
//!
//! (Pr[X < m] >= 1 - p with both sides times l^eta den(p)). Floating point cannot decide the
//! boundary cases the thesis itself uses (Fig. 3.4's 3/4 >= 3/4), and l^eta outgrows any
//! machine integer for a few dozen slots, so the sides are computed in this module's own
//! unbounded integers. It is written apart from the anonymizer's budgets on purpose: a bug in
//! one must not be repeated in the other.

use std::cmp::Ordering;

use crate::fraction::Fraction;

/// An unsigned integer of any size: little-endian 64-bit limbs, no zero limb on top.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Big(Vec<u64>);

impl Big {
    fn new(n: u64) -> Big {
        let mut b = Big(vec![n]);
        b.trim();
        b
    }

    fn trim(&mut self) {
        while self.0.last() == Some(&0) {
            self.0.pop();
        }
    }

    fn mul(&mut self, k: u64) {
        let mut carry: u128 = 0;
        for limb in &mut self.0 {
            let v = u128::from(*limb) * u128::from(k) + carry;
            *limb = v as u64;
            carry = v >> 64;
        }
        if carry > 0 {
            self.0.push(carry as u64);
        }
        self.trim();
    }

    /// Divides by `k`, which the callers know divides exactly.
    fn div(&mut self, k: u64) {
        let mut rem: u128 = 0;
        for limb in self.0.iter_mut().rev() {
            let v = (rem << 64) | u128::from(*limb);
            *limb = (v / u128::from(k)) as u64;
            rem = v % u128::from(k);
        }
        self.trim();
    }

    fn add(&mut self, other: &Big) {
        if self.0.len() < other.0.len() {
            self.0.resize(other.0.len(), 0);
        }
        let mut carry = false;
        for (i, limb) in self.0.iter_mut().enumerate() {
            let (v, c1) = limb.overflowing_add(other.0.get(i).copied().unwrap_or(0));
            let (v, c2) = v.overflowing_add(u64::from(carry));
            *limb = v;
            carry = c1 || c2;
        }
        if carry {
            self.0.push(1);
        }
    }

    /// `self - other`, for `self >= other`.
    fn sub(&mut self, other: &Big) {
        let mut borrow = false;
        for (i, limb) in self.0.iter_mut().enumerate() {
            let (v, b1) = limb.overflowing_sub(other.0.get(i).copied().unwrap_or(0));
            let (v, b2) = v.overflowing_sub(u64::from(borrow));
            *limb = v;
            borrow = b1 || b2;
        }
        self.trim();
    }

    fn pow(base: u64, exp: u64) -> Big {
        let mut b = Big::new(1);
        for _ in 0..exp {
            b.mul(base);
        }
        b
    }

    /// (mantissa, binary exponent) with the value about mantissa * 2^exponent, for display.
    fn approx(&self) -> (f64, i64) {
        let n = self.0.len();
        let top = |i: usize| self.0.get(i).map_or(0.0, |&v| v as f64);
        match n {
            0 => (0.0, 0),
            1 => (top(0), 0),
            _ => (top(n - 1) * 2f64.powi(64) + top(n - 2), 64 * (n as i64 - 2)),
        }
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

/// `sum_{j < m} C(eta, j) (l-1)^(eta-j)`, which is `l^eta * Pr[Bin(eta, 1/l) < m]`, for
/// `l >= 2`.
fn below(eta: u64, l: u64, m: u64) -> Big {
    let mut sum = Big::new(0);
    // term_j = C(eta, j) (l-1)^(eta-j); term_{j+1} = term_j (eta-j) / ((j+1)(l-1)), each
    // division exact (the quotients are C(eta, j+1) (l-1)^(eta-j) and the next term).
    let mut term = Big::pow(l - 1, eta);
    for j in 0..m.min(eta + 1) {
        sum.add(&term);
        if j == eta {
            break;
        }
        term.mul(eta - j);
        term.div(j + 1);
        term.div(l - 1);
    }
    sum
}

/// Whether Pr[Binomial(eta, 1/l) >= m] <= p, exactly.
pub(super) fn within(eta: u64, l: u64, m: u64, p: Fraction) -> bool {
    if eta < m {
        return true;
    }
    if l < 2 {
        // Every draw is the value: X = eta >= m surely.
        return p.num >= p.den;
    }
    let mut lhs = below(eta, l, m);
    lhs.mul(p.den);
    let mut rhs = Big::pow(l, eta);
    rhs.mul(p.den - p.num);
    lhs >= rhs
}

/// Pr[Binomial(eta, 1/l) >= m], approximately, for messages.
pub(super) fn tail(eta: u64, l: u64, m: u64) -> f64 {
    if eta < m {
        return 0.0;
    }
    if l < 2 {
        return 1.0;
    }
    let all = Big::pow(l, eta);
    let mut above = all.clone();
    above.sub(&below(eta, l, m));
    let ((a, ea), (b, eb)) = (above.approx(), all.approx());
    if b == 0.0 {
        return 0.0;
    }
    let shift = (ea - eb).clamp(-2000, 2000) as i32;
    (a / b) * 2f64.powi(shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frac(text: &str) -> Fraction {
        Fraction::from_decimal(text).expect("a valid share")
    }

    /// The largest eta the rule allows, searched up to 60.
    fn eta_max(l: u64, m: u64, p: &str) -> Option<u64> {
        let p = frac(p);
        let mut last = None;
        for eta in 0..=60 {
            if within(eta, l, m, p) {
                assert_eq!(last, eta.checked_sub(1), "the tail grows with eta");
                last = Some(eta);
            }
        }
        last
    }

    #[test]
    fn thresholds_are_the_specs_table() {
        // Spec Sec. 1.6, columns p = 0.25, 0.33, 1/3, 0.5, 0.75.
        let table: [(u64, u64, [u64; 5]); 9] = [
            (2, 1, [0, 0, 0, 1, 2]),
            (2, 2, [2, 2, 2, 3, 4]),
            (2, 3, [3, 4, 4, 5, 6]),
            (3, 1, [0, 0, 1, 1, 3]),
            (3, 2, [2, 3, 3, 4, 7]),
            (3, 3, [5, 6, 6, 7, 10]),
            (4, 1, [1, 1, 1, 2, 4]),
            (4, 2, [3, 4, 4, 6, 9]),
            (4, 3, [7, 8, 8, 10, 14]),
        ];
        for (l, m, row) in table {
            for (p, want) in ["0.25", "0.33", "1/3", "0.5", "0.75"].iter().zip(row) {
                assert_eq!(eta_max(l, m, p), Some(want), "l = {l}, m = {m}, p = {p}");
            }
        }
    }

    #[test]
    fn boundaries_are_exact() {
        // Fig. 3.4: eta = 2, l = 2, m = 2: Pr[X >= 2] = 1/4 exactly.
        assert!(within(2, 2, 2, frac("1/4")));
        assert!(!within(2, 2, 2, frac("0.2499")));
        // A19: eta = 2, l = 2, m = 1: Pr[X >= 1] = 3/4.
        assert!(!within(2, 2, 1, frac("1/2")));
        assert!(within(2, 2, 1, frac("3/4")));
        assert!((tail(2, 2, 1) - 0.75).abs() < 1e-12);
        // p = 1 allows anything, however many slots.
        assert!(within(500, 4, 1, frac("1")));
    }

    #[test]
    fn large_eta_does_not_overflow() {
        // l^eta far beyond u128, and the tail near 1.
        assert!(!within(300, 3, 5, frac("0.999")));
        let t = tail(300, 3, 5);
        assert!(t > 0.999 && t <= 1.0, "{t}");
        assert!((tail(3, 2, 2) - 0.5).abs() < 1e-12);
    }
}
