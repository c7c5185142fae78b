//! Check "relocation budget": a hybrid release (seed 003, `algorithm = 'hybrid'`), or a
//! clustering's release with `relocate` (relanon's relocation instead of suppression),
//! publishes some rows under another group's labels on purpose. Truthfulness then counts
//! its QI cells that are neither the source value nor an ancestor of it (through the key map, a witness
//! of Def. 6's ordering: spec Sec. 3, "how an independent verifier checks") instead of
//! failing on each, and this check fails where the count passes the budget the declarations
//! give: `p` percent of the family's source QI cells, rounded down (a whole count within a
//! real budget is within its floor; the algorithm's budget is the same). Every other cell
//! is still checked exactly by truthfulness, k by k-anonymity, on the release as published.
//!
//! The budget is read from the declarations (hybrid's `p`, default 1; `relocate` elsewhere),
//! never from the release or its report: a release that claims a larger budget proves nothing.
//!
//! A statistical variant (`relocation = 'statistical'` or `'rstat'`) must also be
//! single-dimensional (spec Sec. 3, item 4; Sec. 7): each QI column's labels at one level of
//! its hierarchy ([`single_dimensional`]); and its group sizes must pass Pearson's test at the
//! declared level against the source generalized to that node ([`pearson`], spec Sec. 3
//! guarantee 3), recomputed here from the source and the release alone.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::data::{Rule, TableData};
use super::hier::Hier;
use super::Check;
use crate::plan::Plan;
use crate::policy::Value;

/// `p` where the declarations write none: the algorithm's default, restated here because
/// verify reads the declarations on its own.
const DEFAULT_P: f64 = 1.0;

/// `alpha` where the declarations write none (the statistical variants' default, restated).
const DEFAULT_ALPHA: f64 = 0.05;

/// The option of the other algorithms that allows relocation instead of suppression.
const RELOCATE: &str = "relocate";

/// A release's declared relocation budget (hybrid's, or `relocate`'s).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Declared {
    /// The percent of QI cells that may be untruthful.
    pub p: f64,
    /// A statistical variant: every column at one level, and its group sizes tested at this
    /// level (None: another variant).
    pub alpha: Option<f64>,
    /// The option that gave `p`: hybrid's `p`, or `relocate`.
    pub option: &'static str,
}

/// The declarations' relocation budget: `algorithm = 'hybrid'` with its `p` (default 1), or
/// any other algorithm with `relocate` written (relanon's relocation instead of suppression;
/// unwritten, the release must be truthful everywhere). A percent that is no number in
/// [0, 100] (which anonymize refuses) allows nothing.
pub(super) fn declared(plan: &Plan) -> Option<Declared> {
    // An unnamed algorithm is the model's default, which takes `relocate` too.
    let hybrid = matches!(&plan.params.algorithm.name, Some((name, _)) if name == "hybrid");
    let written = |name: &str| plan.params.algorithm.written(name);
    let percent = |v: &Value| match v {
        Value::Number(n) if (0.0..=100.0).contains(n) => *n,
        _ => 0.0,
    };
    if !hybrid {
        return Some(Declared {
            p: percent(written(RELOCATE)?),
            alpha: None,
            option: RELOCATE,
        });
    }
    let p = written("p").map_or(DEFAULT_P, percent);
    let statistical = matches!(
        written("relocation"),
        Some(Value::Text(t)) if matches!(t.to_ascii_lowercase().as_str(), "statistical" | "rstat")
    );
    // A level outside (0, 1), which anonymize refuses, makes no test a release can pass.
    let alpha = match written("alpha") {
        None => DEFAULT_ALPHA,
        Some(Value::Number(a)) => *a,
        Some(Value::Text(_)) => f64::NAN,
    };
    Some(Declared {
        p,
        alpha: statistical.then_some(alpha),
        option: "p",
    })
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

/// A table's QI cells that are neither the source value nor an ancestor of it: through the
/// key map, or at the cheapest pairing of a key-less table's rows with its source rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Untruthful {
    pub cells: usize,
    /// A lower bound: a key-less table left more rows unpaired than the budget has cells.
    pub at_least: bool,
}

/// Records a violation when the `untruthful` QI cells (per table) pass the declared budget.
pub(super) fn check(
    declared: Declared,
    tables: &[TableData],
    untruthful: &[Untruthful],
    out: &mut Check,
) {
    let cells = qi_cells(tables);
    let allowed = budget(declared.p, cells);
    let count: usize = untruthful.iter().map(|u| u.cells).sum();
    if count as u64 <= allowed {
        return;
    }
    let at_least = if untruthful.iter().any(|u| u.at_least) {
        "at least "
    } else {
        ""
    };
    let per_table: Vec<String> = tables
        .iter()
        .zip(untruthful)
        .filter(|(_, u)| u.cells > 0)
        .map(|(t, u)| format!("{} {}", t.name, u.cells))
        .collect();
    out.record(format!(
        "{at_least}{count} QI cells are neither the source value nor an ancestor of it ({}), more than the declared budget of {allowed} ({} = {}% of {cells} QI cells); the release relocates more than its declarations allow",
        per_table.join(", "),
        declared.option,
        declared.p
    ));
}

/// Check "single-dimensional": in each QI column of a statistical hybrid release, the
/// labels sit at one level of the column's hierarchy. Levels are top-aligned (a shallow leaf
/// keeps its value until its ancestors are reached), so the generalized labels must share one
/// depth and every leaf label be no deeper than they are.
pub(super) fn single_dimensional(
    tables: &[TableData],
    hiers: &HashMap<String, Hier>,
    out: &mut Check,
) {
    for t in tables {
        for c in &t.content {
            let Rule::Qi(h) = &c.rule else { continue };
            let labels: BTreeSet<String> = (0..t.rel.rows())
                .filter_map(|r| t.rel.cell(c.rel, r))
                .collect();
            let Some(hier) = hiers.get(h) else { continue };
            if let Some(why) = one_level(hier, &labels) {
                out.record(format!("{}.{}: {why}", t.name, c.name));
            }
        }
    }
}

/// Why `labels` are not at one level of `hier`, if they are not.
fn one_level(hier: &Hier, labels: &BTreeSet<String>) -> Option<String> {
    let mut generalized: BTreeMap<usize, &str> = BTreeMap::new();
    let mut deepest_leaf: Option<(usize, &str)> = None;
    for label in labels {
        let Some(place) = hier.place(label) else {
            return Some(format!("'{label}' is no node of its hierarchy"));
        };
        if place.leaf {
            if deepest_leaf.is_none_or(|(d, _)| place.depth > d) {
                deepest_leaf = Some((place.depth, label));
            }
        } else {
            generalized.entry(place.depth).or_insert(label);
        }
    }
    let mut levels = generalized.iter();
    let (&depth, &label) = levels.next()?;
    if let Some((_, other)) = levels.next() {
        return Some(format!(
            "labels '{label}' and '{other}' sit at different levels; a statistical hybrid release generalizes each column to one level"
        ));
    }
    match deepest_leaf {
        Some((d, leaf)) if d > depth => Some(format!(
            "the value '{leaf}' is published beside the generalized label '{label}', at a lower level; a statistical hybrid release generalizes each column to one level"
        )),
        _ => None,
    }
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

    fn labels(l: &[&str]) -> BTreeSet<String> {
        l.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn one_level_is_one_depth_of_generalized_labels_and_no_deeper_leaf() {
        use crate::plan::HierarchyDef;
        use crate::policy::Pos;
        // Table 1's nations: Spain alone under W.EU, so at level 1 'W.EU' and at level 2 'EU'.
        let rows: Vec<Vec<String>> = [
            ["Greece", "E.EU", "EU"],
            ["Spain", "W.EU", "EU"],
            ["Peru", "S.AM", "AM"],
        ]
        .iter()
        .map(|r| r.iter().map(|s| s.to_string()).collect())
        .collect();
        let nation = Hier::compile(&HierarchyDef::Rows {
            rows,
            pos: Pos::default(),
        });
        assert_eq!(one_level(&nation, &labels(&["E.EU", "W.EU", "S.AM"])), None);
        assert_eq!(
            one_level(&nation, &labels(&["Greece", "Spain", "Peru"])),
            None
        );
        assert_eq!(one_level(&nation, &labels(&["*"])), None);
        let mixed = one_level(&nation, &labels(&["E.EU", "AM"])).expect("two levels");
        assert!(
            mixed.contains("'AM' and 'E.EU' sit at different levels"),
            "{mixed}"
        );
        let leaf = one_level(&nation, &labels(&["EU", "Peru"])).expect("a value below");
        assert!(
            leaf.contains("'Peru' is published beside the generalized label 'EU'"),
            "{leaf}"
        );
        assert!(one_level(&nation, &labels(&["*", "EU"])).is_some());
        // Bands: a value is a leaf below every band; each width its own level.
        let age = Hier::compile(&HierarchyDef::Bands {
            widths: vec![5.0, 10.0],
            range: None,
            pos: Pos::default(),
        });
        assert_eq!(one_level(&age, &labels(&["[20,24]", "[25,29]"])), None);
        assert!(one_level(&age, &labels(&["[20,24]", "[30,39]"])).is_some());
        assert!(one_level(&age, &labels(&["[20,29]", "41"])).is_some());
        assert_eq!(one_level(&age, &labels(&["41", "23"])), None);
    }
}
