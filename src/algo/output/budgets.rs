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

use num_bigint::BigUint;
use num_traits::Pow;

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
    let mut below = BigUint::from(0u32);
    let mut choose = BigUint::from(1u32);
    for j in 0..(m as u64).min(eta + 1) {
        if j > 0 {
            // Exact: the running product is C(η, j−1)·(η−j+1), a multiple of j.
            choose = choose * (eta - j + 1) / j;
        }
        below += &choose * Pow::pow(BigUint::from(l as u64 - 1), eta - j);
    }
    let left = below * p.den;
    let right = Pow::pow(BigUint::from(l as u64), eta) * (p.den - p.num);
    left >= right
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
