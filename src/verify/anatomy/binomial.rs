//! Def. 23's test, decided exactly: Pr[Binomial(eta, 1/l) >= m] <= p, as the integer
//! inequality
//!
//! ```text
//! sum_{j < m} C(eta, j) (l-1)^(eta-j) * den(p)  >=  (den(p) - num(p)) * l^eta
//! ```
//!
//! (Pr[X < m] >= 1 - p with both sides times l^eta den(p)). Floating point cannot decide the
//! boundary cases the thesis itself uses (Fig. 3.4's 3/4 >= 3/4), and l^eta outgrows any
//! machine integer for a few dozen slots, so the sides are computed in unbounded integers
//! (num-bigint's). The arithmetic of the guarantee is written apart from the anonymizer's
//! budgets on purpose: a bug in one must not be repeated in the other.

use num_bigint::BigUint;
use num_traits::{Pow, ToPrimitive};

use crate::fraction::Fraction;

/// `sum_{j < m} C(eta, j) (l-1)^(eta-j)`, which is `l^eta * Pr[Bin(eta, 1/l) < m]`, for
/// `l >= 2`.
fn below(eta: u64, l: u64, m: u64) -> BigUint {
    let mut sum = BigUint::from(0u32);
    // term_j = C(eta, j) (l-1)^(eta-j); term_{j+1} = term_j (eta-j) / ((j+1)(l-1)), each
    // division exact (the quotients are C(eta, j+1) (l-1)^(eta-j) and the next term).
    let mut term: BigUint = Pow::pow(BigUint::from(l - 1), eta);
    for j in 0..m.min(eta + 1) {
        sum += &term;
        if j == eta {
            break;
        }
        term = term * (eta - j) / (j + 1) / (l - 1);
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
    let lhs = below(eta, l, m) * p.den;
    let rhs: BigUint = Pow::pow(BigUint::from(l), eta) * (p.den - p.num);
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
    let all: BigUint = Pow::pow(BigUint::from(l), eta);
    let above = &all - below(eta, l, m);
    // Both sides shifted alike so the larger fits a float's range with bits to spare.
    let shift = all.bits().saturating_sub(512);
    let ratio = |x: BigUint| (x >> shift).to_f64().unwrap_or(f64::INFINITY);
    let (a, b) = (ratio(above), ratio(all));
    if b == 0.0 {
        return 0.0;
    }
    a / b
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
