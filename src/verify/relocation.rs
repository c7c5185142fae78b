//! Check "relocation budget": a hybrid release (seed 003, `algorithm = 'hybrid'`) publishes
//! some rows under another group's labels on purpose. Truthfulness then counts its QI cells
//! that are neither the source value nor an ancestor of it (through the key map, a witness
//! of Def. 6's ordering: spec Sec. 3, "how an independent verifier checks") instead of
//! failing on each, and this check fails where the count passes the budget the declarations
//! give: `p` percent of the family's source QI cells, rounded down (a whole count within a
//! real budget is within its floor; the algorithm's budget is the same). Every other cell
//! is still checked exactly by truthfulness, k by k-anonymity, on the release as published.
//!
//! The budget is read from the declarations (`p`, default 1), never from the release or its
//! report: a release that claims a larger budget proves nothing.

use super::data::{Rule, TableData};
use super::Check;
use crate::plan::Plan;
use crate::policy::Value;

/// `p` where the declarations write none: the algorithm's default, restated here because
/// verify reads the declarations on its own.
const DEFAULT_P: f64 = 1.0;

/// A hybrid release's declared budget.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Declared {
    /// The percent of QI cells that may be untruthful.
    pub p: f64,
}

/// The declarations' hybrid budget, if they ask for `algorithm = 'hybrid'`. A `p` that is
/// no number in [0, 100] (which anonymize refuses) allows nothing.
pub(super) fn declared(plan: &Plan) -> Option<Declared> {
    let (name, _) = plan.params.algorithm.name.as_ref()?;
    if name != "hybrid" {
        return None;
    }
    let written = plan
        .params
        .algorithm
        .options
        .iter()
        .rev()
        .find(|o| o.name == "p");
    let p = match written.map(|o| &o.value) {
        None => DEFAULT_P,
        Some(Value::Number(n)) if (0.0..=100.0).contains(n) => *n,
        Some(_) => 0.0,
    };
    Some(Declared { p })
}

/// `p` percent of `cells`, rounded down; a percent written in decimal allows what it says
/// despite binary floats.
pub(super) fn budget(p: f64, cells: u64) -> u64 {
    (p * cells as f64 / 100.0 + 1e-9).floor() as u64
}

/// The family's source QI cells: what `p` is a percent of (003 Def. 6, decision D1).
pub(super) fn qi_cells(tables: &[TableData]) -> u64 {
    tables
        .iter()
        .map(|t| {
            let qi = t
                .content
                .iter()
                .filter(|c| matches!(c.rule, Rule::Qi(_)))
                .count();
            (t.src.rows() * qi) as u64
        })
        .sum()
}

/// Records a violation when the `untruthful` QI cells (per table) pass the declared budget.
pub(super) fn check(
    declared: Declared,
    tables: &[TableData],
    untruthful: &[usize],
    out: &mut Check,
) {
    let cells = qi_cells(tables);
    let allowed = budget(declared.p, cells);
    let count: usize = untruthful.iter().sum();
    if count as u64 <= allowed {
        return;
    }
    let per_table: Vec<String> = tables
        .iter()
        .zip(untruthful)
        .filter(|(_, &n)| n > 0)
        .map(|(t, n)| format!("{} {n}", t.name))
        .collect();
    out.record(format!(
        "{count} QI cells are neither the source value nor an ancestor of it ({}), more than the declared budget of {allowed} (p = {}% of {cells} QI cells); the release is not a p%-hybrid of its source",
        per_table.join(", "),
        declared.p
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_is_the_floor_of_p_percent() {
        assert_eq!(budget(10.0, 27), 2);
        assert_eq!(budget(1.0, 300), 3);
        assert_eq!(budget(0.0, 1000), 0);
        assert_eq!(budget(100.0, 27), 27);
        // 0.29 of 100 is 0.29% of 10,000 cells: 29, despite 0.29 * 10000 / 100 in floats.
        assert_eq!(budget(0.29, 10_000), 29);
    }
}
