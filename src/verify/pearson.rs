//! Check "relocation test": a statistical hybrid release (seed 003, `relocation =
//! 'statistical'` or `'rstat'`) promises that its group sizes pass Pearson's chi-squared test
//! at the declared level against the sizes of the source generalized to the same node (spec
//! Sec. 3, guarantee 3; Def. 9 with decisions D3, D4): the relocations look like chance to an
//! adversary who knows the source's distribution. Recomputed here from the two tables alone.
//!
//! - The node is read off the release: each QI column's generalized depth (the
//!   single-dimensional check makes it one).
//! - Expected: every source row counted in its group at that node (its ancestor at the depth
//!   per column, [`Hier::value_key`]).
//! - Observed: every released row in the group its labels name; a source row no released row
//!   stands for (suppressed, which publishes nothing untruthful) counted back in its own group.
//!   Without suppression this is the release's group sizes whatever the pairing; with it, the
//!   pairing truthfulness found (the key map's, or the cheapest) names the suppressed rows.
//! - X² sums `(O - E)² / E` over the source's groups, on their number less one degrees of
//!   freedom; it passes where it is not above `χ²_{1-α}(df)`. A released group the source
//!   does not have at the node fails outright.
//!
//! One table only: anonymize releases the statistical variants on one table in this version.

use std::collections::{HashMap, HashSet};

use super::data::{Rule, TableData};
use super::hier::Hier;
use super::Check;

/// A group's key: one [`Hier`] key per QI column (None: a NULL cell).
type Key = Vec<Option<String>>;

/// Records a violation where the release's group sizes fail Pearson's test at `alpha`.
pub(super) fn check(
    alpha: f64,
    tables: &[TableData],
    hiers: &HashMap<String, Hier>,
    out: &mut Check,
) {
    let [t] = tables else {
        out.record(format!(
            "a statistical hybrid release of {} tables: its test is of one table's group sizes, and relanon releases the statistical variants on one table only; release the family with relocation = 'deterministic' or 'randomized'",
            tables.len()
        ));
        return;
    };
    let Some(cols) = qi_columns(t, hiers) else {
        return;
    };
    let depths: Vec<Option<usize>> = cols.iter().map(|&(c, h)| depth(t, c, h)).collect();
    let source_key = |s: usize| -> Key {
        cols.iter()
            .zip(&depths)
            .map(|(&(c, h), &d)| t.src.cell(c.0, s).map(|v| h.value_key(&v, d)))
            .collect()
    };
    let mut expected: HashMap<Key, usize> = HashMap::new();
    for s in 0..t.src.rows() {
        *expected.entry(source_key(s)).or_default() += 1;
    }
    let mut observed: HashMap<Key, usize> = HashMap::new();
    for r in 0..t.rel.rows() {
        let key: Key = cols
            .iter()
            .map(|&(c, h)| t.rel.cell(c.1, r).map(|l| h.label_key(&l)))
            .collect();
        *observed.entry(key).or_default() += 1;
    }
    let released: HashSet<usize> = t.rel_to_src.iter().flatten().copied().collect();
    for s in (0..t.src.rows()).filter(|s| !released.contains(s)) {
        *observed.entry(source_key(s)).or_default() += 1;
    }
    let mut foreign: Vec<&Key> = observed
        .keys()
        .filter(|k| !expected.contains_key(*k))
        .collect();
    if !foreign.is_empty() {
        foreign.sort();
        out.record(format!(
            "{} released group(s) are no group of the source generalized to the release's node (the first: {}); a statistical hybrid release only moves rows between the source's groups",
            foreign.len(),
            show(foreign[0])
        ));
        return;
    }
    test(alpha, &expected, &observed, out);
}

/// Each QI column's (source, release) positions and hierarchy; None where one has no
/// hierarchy to read (the schema check reports it).
fn qi_columns<'h>(
    t: &TableData,
    hiers: &'h HashMap<String, Hier>,
) -> Option<Vec<((usize, usize), &'h Hier)>> {
    t.content
        .iter()
        .filter_map(|c| match &c.rule {
            Rule::Qi(h) => Some(hiers.get(h).map(|h| ((c.src, c.rel), h))),
            _ => None,
        })
        .collect()
}

/// The depth a released column is generalized to: that of its generalized labels (None: only
/// values are published, the column's lowest level).
fn depth(t: &TableData, c: (usize, usize), h: &Hier) -> Option<usize> {
    // Placing a label walks its hierarchy: each distinct label once.
    let labels: HashSet<String> = (0..t.rel.rows())
        .filter_map(|r| t.rel.cell(c.1, r))
        .collect();
    labels
        .iter()
        .filter_map(|l| h.place(l))
        .find(|p| !p.leaf)
        .map(|p| p.depth)
}

/// Pearson's X² of `observed` against `expected` over the expected groups, and the
/// violation where it passes the critical value.
fn test(
    alpha: f64,
    expected: &HashMap<Key, usize>,
    observed: &HashMap<Key, usize>,
    out: &mut Check,
) {
    let df = expected.len().saturating_sub(1);
    if df == 0 {
        return;
    }
    if !(alpha > 0.0 && alpha < 1.0) {
        out.record(format!(
            "alpha = {alpha} is no significance level: the statistical variants' test needs one strictly between 0 and 1"
        ));
        return;
    }
    let x2: f64 = expected
        .iter()
        .map(|(k, &e)| {
            let o = observed.get(k).copied().unwrap_or(0) as f64;
            (o - e as f64).powi(2) / e as f64
        })
        .sum();
    let critical = 2.0 * puruspe::invgammp(1.0 - alpha, df as f64 / 2.0);
    if x2 > critical * (1.0 + 1e-12) {
        out.record(format!(
            "the group sizes give X² = {x2:.4} on {df} degrees of freedom, above the critical value {critical:.4} at alpha = {alpha}: the relocations do not pass the statistical variant's test (seed 003 Def. 9)"
        ));
    }
}

fn show(key: &Key) -> String {
    let cells: Vec<&str> = key.iter().map(|c| c.as_deref().unwrap_or("NULL")).collect();
    format!("({})", cells.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn groups(sizes: &[(&str, usize)]) -> HashMap<Key, usize> {
        sizes
            .iter()
            .map(|&(k, n)| (vec![Some(k.to_string())], n))
            .collect()
    }

    #[test]
    fn the_papers_example_passes_at_5_percent_and_fails_at_70() {
        // Table 1 at [1,1,3]: q4's group of one emptied into a group of two: X² = 1 + 1/2.
        let expected = groups(&[("a", 1), ("b", 2), ("c", 3), ("d", 3)]);
        let observed = groups(&[("b", 3), ("c", 3), ("d", 3)]);
        let mut pass = Check::new("relocation test");
        test(0.05, &expected, &observed, &mut pass);
        assert!(pass.violations.is_empty(), "{:?}", pass.violations);
        let mut fail = Check::new("relocation test");
        test(0.7, &expected, &observed, &mut fail);
        assert_eq!(fail.violations.len(), 1);
        assert!(
            fail.violations[0].contains("X² = 1.5000 on 3 degrees of freedom")
                && fail.violations[0].contains("critical value 1.42"),
            "{:?}",
            fail.violations
        );
    }

    #[test]
    fn an_emptied_group_counts_its_whole_expectation() {
        let expected = groups(&[("a", 5), ("b", 5)]);
        let observed = groups(&[("a", 10)]);
        let mut out = Check::new("relocation test");
        // X² = 5 + 5 = 10 on 1 df, far above 3.84.
        test(0.05, &expected, &observed, &mut out);
        assert!(
            out.violations[0].contains("X² = 10.0000 on 1"),
            "{:?}",
            out.violations
        );
    }
}
