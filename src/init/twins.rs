//! Twins: a column that determines another column of its table (a code beside its
//! description, a date beside the same date as text) reveals whatever the other column
//! reveals. Published unchanged beside a generalized quasi-identifier, it undoes the
//! generalization; beside a column left out, it publishes what was left out. So a twin takes
//! the role of the column it determines, whichever protects more.

use std::collections::HashMap;

use arrow::array::{Array, RecordBatch};
use rustc_hash::FxHashMap;

use super::profile::Profile;
use super::roles::{Decision, HierarchyPlan, Role};
use super::ColumnProposal;
use crate::warehouse::render_value;

/// A column's values interned: a code per row (`None` for NULL) and the values by code.
struct Interned {
    codes: Vec<Option<u32>>,
    values: Vec<String>,
}

fn intern(array: &dyn Array) -> Interned {
    let mut index: FxHashMap<String, u32> = FxHashMap::default();
    let mut values = Vec::new();
    let codes = (0..array.len())
        .map(|r| {
            let v = render_value(array, r)?;
            let next = u32::try_from(values.len()).unwrap_or(u32::MAX);
            Some(*index.entry(v.clone()).or_insert_with(|| {
                values.push(v);
                next
            }))
        })
        .collect();
    Interned { codes, values }
}

/// How much a role protects: a twin is raised to the role of the column it determines when
/// that role protects more.
fn rank(role: &Role) -> u8 {
    match role {
        Role::Insensitive => 0,
        Role::Sensitive => 1,
        Role::Qi(_) => 2,
        Role::Identifier => 3,
    }
}

/// For each value of `c` (by code), the one value of `q` it occurs with, NULL counting as a
/// value; `None` unless `c` determines `q` in a way the data supports: every value of `c`
/// repeats on average (a column of nearly unique values "determines" everything by chance,
/// which tells an adversary nothing), `c` and `q` each take at least two values, and no
/// value of `c` occurs with two values of `q`.
fn determined(c: &Interned, q: &Interned) -> Option<Vec<Option<u32>>> {
    let present = c.codes.iter().flatten().count();
    if c.values.len() < 2 || 2 * c.values.len() > present {
        return None;
    }
    let mut to: Vec<Option<Option<u32>>> = vec![None; c.values.len()];
    let mut q_seen = std::collections::HashSet::new();
    for (cv, qv) in c.codes.iter().zip(&q.codes) {
        let Some(cv) = cv else { continue };
        q_seen.insert(*qv);
        match &mut to[*cv as usize] {
            slot @ None => *slot = Some(*qv),
            Some(seen) if seen != qv => return None,
            Some(_) => {}
        }
    }
    if q_seen.len() < 2 {
        return None;
    }
    Some(to.into_iter().map(Option::flatten).collect())
}

/// Every (column published unchanged, quasi-identifier) pair of `batch` where the first
/// determines the second (see `determined`), each column read once.
pub fn twin_pairs<'a>(
    batch: &RecordBatch,
    unchanged: &[&'a str],
    qis: &[&'a str],
) -> Vec<(&'a str, &'a str)> {
    let read = |name: &str| {
        let i = batch.schema().index_of(name).ok()?;
        Some(intern(batch.column(i).as_ref()))
    };
    if unchanged.is_empty() || qis.is_empty() {
        return Vec::new();
    }
    let qis: Vec<(&str, Interned)> = qis.iter().filter_map(|q| Some((*q, read(q)?))).collect();
    let mut out = Vec::new();
    for c in unchanged {
        let Some(ci) = read(c) else { continue };
        for (q, qi) in &qis {
            if determined(&ci, qi).is_some() {
                out.push((*c, *q));
            }
        }
    }
    out
}

/// When column `c` determines column `q` (see `determined`), each value of `c` with the
/// value of `q` it comes with (`None`: NULL): what an adversary reads through the twin.
pub fn twin_map(c: &dyn Array, q: &dyn Array) -> Option<HashMap<String, Option<String>>> {
    let (ci, qi) = (intern(c), intern(q));
    let map = determined(&ci, &qi)?;
    Some(
        ci.values
            .iter()
            .zip(map)
            .map(|(v, to)| (v.clone(), to.map(|t| qi.values[t as usize].clone())))
            .collect(),
    )
}

/// Raises every column published unchanged that determines a column with a more
/// protective role to that role (a grouping hierarchy mirrored onto its values where the
/// other column is grouped by rows), repeating until nothing changes, so a twin of a twin is
/// caught too. `columns` are the table's proposals in source order, as `batch` holds them.
pub fn unify(
    table: &str,
    batch: &RecordBatch,
    profiles: &[Profile],
    columns: &mut [ColumnProposal],
) {
    let read = readable(columns, profiles);
    let interned: Vec<Option<Interned>> = columns
        .iter()
        .zip(read)
        .map(|(c, read)| {
            let i = batch.schema().index_of(&c.name).ok().filter(|_| read)?;
            Some(intern(batch.column(i).as_ref()))
        })
        .collect();
    for _ in 0..columns.len() {
        let mut changed = false;
        for ci in 0..columns.len() {
            for qi in (0..columns.len()).filter(|&qi| qi != ci) {
                changed |= raise(table, columns, &interned, ci, qi);
            }
        }
        if !changed {
            break;
        }
    }
}

/// Raises column `ci` to the role of column `qi` if it is published unchanged, `qi`'s role
/// protects more and `ci` determines `qi`; whether it did.
fn raise(
    table: &str,
    columns: &mut [ColumnProposal],
    interned: &[Option<Interned>],
    ci: usize,
    qi: usize,
) -> bool {
    let (Some(c), Some(q)) = (&interned[ci], &interned[qi]) else {
        return false;
    };
    let (Some(cd), Some(qd)) = (&columns[ci].decision, &columns[qi].decision) else {
        return false;
    };
    // Only a column published unchanged reveals what it determines: a quasi-identifier's
    // values are published generalized.
    let unchanged = matches!(cd.role, Role::Insensitive | Role::Sensitive);
    if !unchanged || rank(&cd.role) >= rank(&qd.role) {
        return false;
    }
    let Some(map) = determined(c, q) else {
        return false;
    };
    let decision = raised(&format!("{table}.{}", columns[qi].name), qd, c, q, &map);
    columns[ci].decision = Some(decision);
    true
}

/// Which columns `unify` must read: the columns published unchanged whose values repeat
/// (by their profiles: at most half as many distinct values as rows, and at most the
/// profile's cap of distinct values), which alone can be twins, and the columns with a more
/// protective role than the least protective of those. A table's measures, keys and
/// nearly unique columns are never read.
fn readable(columns: &[ColumnProposal], profiles: &[Profile]) -> Vec<bool> {
    fn role(c: &ColumnProposal) -> Option<&Role> {
        c.decision.as_ref().map(|d| &d.role)
    }
    let twin_like = |(c, p): (&ColumnProposal, &Profile)| {
        matches!(role(c), Some(Role::Insensitive | Role::Sensitive))
            && p.distinct.is_some()
            && p.distinct_count >= 2
            && 2 * p.distinct_count <= p.present()
    };
    let lowest = columns
        .iter()
        .zip(profiles)
        .filter(|&(c, p)| twin_like((c, p)))
        .filter_map(|(c, _)| role(c).map(rank))
        .min();
    columns
        .iter()
        .zip(profiles)
        .map(|(c, p)| {
            twin_like((c, p)) || lowest.is_some_and(|low| role(c).is_some_and(|r| rank(r) > low))
        })
        .collect()
}

/// The decision of a column (`c`) that determines `twin` (`q`, decided `qd`) through `map`.
fn raised(twin: &str, qd: &Decision, c: &Interned, q: &Interned, map: &[Option<u32>]) -> Decision {
    match &qd.role {
        Role::Identifier => Decision {
            role: Role::Identifier,
            reason: format!("determines {twin}, which is left out: published, it would tell what {twin} holds"),
            review: true,
        },
        Role::Sensitive => Decision {
            role: Role::Sensitive,
            reason: format!("determines {twin} (a twin, as a code beside its description): it takes {twin}'s role; decide both together"),
            review: true,
        },
        Role::Qi(HierarchyPlan::Rows(rows)) => match mirror(rows, c, q, map) {
            Some(rows) => Decision {
                role: Role::Qi(HierarchyPlan::Rows(rows)),
                reason: format!("determines {twin}, a quasi-identifier: generalized through {twin}'s groups, so that publishing it does not undo {twin}'s generalization; decide both together"),
                review: true,
            },
            None => left_out(twin),
        },
        Role::Qi(_) => left_out(twin),
        Role::Insensitive => qd.clone(),
    }
}

fn left_out(twin: &str) -> Decision {
    Decision {
        role: Role::Identifier,
        reason: format!("determines {twin}, a generalized quasi-identifier: published unchanged it would undo {twin}'s generalization, so it is left out; to keep it, give it a hierarchy whose groups follow {twin}'s and make it a QUASI IDENTIFIER"),
        review: true,
    }
}

/// `rows` (leaf `q` value, then its labels) rewritten with each value of `c` as the leaf in
/// place of the `q` value it determines. `None` when a `c` value is also one of the labels
/// (it would have two places in the tree) or determines a NULL or a value `rows` lacks.
fn mirror(
    rows: &[Vec<String>],
    c: &Interned,
    q: &Interned,
    map: &[Option<u32>],
) -> Option<Vec<Vec<String>>> {
    let above: HashMap<&str, &[String]> = rows
        .iter()
        .filter_map(|r| Some((r.first()?.as_str(), &r[1..])))
        .collect();
    let labels: std::collections::HashSet<&String> = rows.iter().flat_map(|r| &r[1..]).collect();
    let mut out = Vec::with_capacity(c.values.len());
    let mut order: Vec<usize> = (0..c.values.len()).collect();
    order.sort_by(|a, b| c.values[*a].cmp(&c.values[*b]));
    for ci in order {
        let value = &c.values[ci];
        if labels.contains(value) || value.is_empty() || value == crate::hierarchy::ROOT {
            return None;
        }
        let qv = &q.values[(*map.get(ci)?)? as usize];
        let mut row = vec![value.clone()];
        row.extend(above.get(qv.as_str())?.iter().cloned());
        out.push(row);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::StringArray;
    use arrow::datatypes::{DataType, Field, Schema};
    use std::sync::Arc;

    fn table(cols: &[(&str, Vec<Option<&str>>)]) -> RecordBatch {
        let schema = Schema::new(
            cols.iter()
                .map(|(n, _)| Field::new(*n, DataType::Utf8, true))
                .collect::<Vec<_>>(),
        );
        let arrays = cols
            .iter()
            .map(|(_, v)| Arc::new(StringArray::from(v.clone())) as Arc<dyn Array>)
            .collect();
        RecordBatch::try_new(Arc::new(schema), arrays).expect("a valid batch")
    }

    fn profiles(batch: &RecordBatch) -> Vec<Profile> {
        batch
            .columns()
            .iter()
            .map(|a| Profile::of(a.as_ref()))
            .collect()
    }

    fn proposal(name: &str, role: Role) -> ColumnProposal {
        ColumnProposal {
            name: name.into(),
            decision: Some(Decision::new(role, "test")),
            note: String::new(),
        }
    }

    fn codes_and_descriptions() -> RecordBatch {
        let code: Vec<Option<&str>> = (0..12).map(|i| Some(["10", "20", "30"][i % 3])).collect();
        let text: Vec<Option<&str>> = (0..12)
            .map(|i| Some(["Flu", "Cold", "Asthma"][i % 3]))
            .collect();
        let cost: Vec<Option<&str>> = vec![
            Some("1"),
            Some("2"),
            Some("3"),
            Some("4"),
            Some("5"),
            Some("6"),
            Some("7"),
            Some("8"),
            Some("9"),
            Some("10"),
            Some("11"),
            Some("12"),
        ];
        table(&[("CODE", code), ("DESCRIPTION", text), ("COST", cost)])
    }

    #[test]
    fn a_code_beside_a_grouped_description_is_grouped_alike() {
        let batch = codes_and_descriptions();
        let rows = vec![
            vec!["Asthma".to_string(), "group 1 of 2".to_string()],
            vec!["Cold".to_string(), "group 1 of 2".to_string()],
            vec!["Flu".to_string(), "group 2 of 2".to_string()],
        ];
        let mut cols = vec![
            proposal("CODE", Role::Insensitive),
            proposal("DESCRIPTION", Role::Qi(HierarchyPlan::Rows(rows))),
            proposal("COST", Role::Insensitive),
        ];
        unify("t", &batch, &profiles(&batch), &mut cols);
        let code = cols[0].decision.as_ref().expect("decided");
        let Role::Qi(HierarchyPlan::Rows(mirrored)) = &code.role else {
            panic!("the code is a QI: {code:?}");
        };
        assert_eq!(mirrored[0], ["10", "group 2 of 2"]);
        assert_eq!(mirrored[1], ["20", "group 1 of 2"]);
        assert!(code.reason.contains("t.DESCRIPTION"), "{}", code.reason);
        // A per-row number determines every column by chance: not a twin.
        assert_eq!(
            cols[2].decision.as_ref().map(|d| &d.role),
            Some(&Role::Insensitive)
        );
    }

    #[test]
    fn twins_of_sensitive_and_left_out_columns_follow_them() {
        let batch = codes_and_descriptions();
        let mut cols = vec![
            proposal("CODE", Role::Insensitive),
            proposal("DESCRIPTION", Role::Sensitive),
            proposal("COST", Role::Insensitive),
        ];
        unify("t", &batch, &profiles(&batch), &mut cols);
        let code = cols[0].decision.as_ref().expect("decided");
        assert!(code.role == Role::Sensitive && code.review);
        let mut cols = vec![
            proposal("CODE", Role::Identifier),
            proposal("DESCRIPTION", Role::Sensitive),
            proposal("COST", Role::Insensitive),
        ];
        unify("t", &batch, &profiles(&batch), &mut cols);
        let text = cols[1].decision.as_ref().expect("decided");
        assert_eq!(
            text.role,
            Role::Identifier,
            "the description tells the left-out code"
        );
    }

    #[test]
    fn a_column_that_does_not_determine_keeps_its_role() {
        let a: Vec<Option<&str>> = (0..12).map(|i| Some(["x", "y"][i % 2])).collect();
        let b: Vec<Option<&str>> = (0..12).map(|i| Some(["p", "q", "r"][i % 3])).collect();
        let batch = table(&[("A", a), ("B", b)]);
        let mut cols = vec![
            proposal("A", Role::Insensitive),
            proposal("B", Role::Identifier),
        ];
        unify("t", &batch, &profiles(&batch), &mut cols);
        assert_eq!(
            cols[0].decision.as_ref().map(|d| &d.role),
            Some(&Role::Insensitive)
        );
    }
}
