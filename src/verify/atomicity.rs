//! Check 2, "key atomicity": released primary keys are unique and non-NULL, and every
//! released parent FK names exactly one released parent row, so each row has one true join
//! path; a second FK path to an ancestor names the row the parent chain reaches.

use std::collections::{BTreeMap, HashSet};

use super::data::{show_key, FkIssue, TableData};
use super::keys::{key_hash, KeyIndex};
use super::Check;
use crate::plan::Plan;

pub(super) fn check(plan: &Plan, tables: &[TableData], out: &mut Check) {
    split_keys(plan, tables, out);
    for (ti, t) in tables.iter().enumerate() {
        let Some(ft) = plan.tables.get(ti) else {
            continue;
        };
        if !t.rel_pk.is_empty() {
            let cols = ft.released_pk().join(", ");
            let key = |r: usize| t.rel.key(&t.rel_pk, r);
            let index = KeyIndex::new(t.rel.rows(), key, key_hash);
            for &r in index.nulls() {
                out.at([ti, 1, 0, t.rel_row(r)]);
                out.record(format!(
                    "{} row {}: primary key ({cols}) is NULL",
                    t.name,
                    t.rel_row(r) + 1
                ));
            }
            // Reported once per key, at its first row, so the order follows the table.
            let mut copies: BTreeMap<usize, usize> = BTreeMap::new();
            for (_, first) in index.repeats(key, key_hash) {
                *copies.entry(first).or_insert(1) += 1;
            }
            for (first, n) in copies {
                out.at([ti, 2, 0, t.rel_row(first)]);
                out.record(format!(
                    "{}: primary key {} appears {n} times",
                    t.name,
                    show_key(key(first).as_deref())
                ));
            }
        }
        let Some(p) = t.parent else { continue };
        let parent = tables.get(p).map_or("?", |pt| pt.name.as_str());
        let fk = ft.released_fk.join(", ");
        for (r, issue) in &t.rel_fk_issues {
            let what = match issue {
                FkIssue::Null => format!("parent key ({fk}) is NULL"),
                FkIssue::Dangling(k) => {
                    format!(
                        "parent key ({fk}) = {} matches no released {parent} row",
                        show_key(Some(k))
                    )
                }
                FkIssue::Ambiguous(k, n) => {
                    format!(
                        "parent key ({fk}) = {} matches {n} released {parent} rows",
                        show_key(Some(k))
                    )
                }
            };
            out.at([ti, 3, 0, t.rel_row(*r)]);
            out.record(format!("{}: {what}", t.describe(tables, *r)));
        }
        for (path, r, what) in &t.rel_second_path_issues {
            out.at([ti, 4, *path, t.rel_row(*r)]);
            out.record(format!("{}: {what}", t.describe(tables, *r)));
        }
    }
}

/// The two entries of a split table (plan::Part) release into one table: a key released in
/// both is a duplicate the per-entry check cannot see.
fn split_keys(plan: &Plan, tables: &[TableData], out: &mut Check) {
    for (ti, ft) in plan.tables.iter().enumerate() {
        let Some(main) = ft.part.as_ref().filter(|p| p.null_side).map(|p| p.other) else {
            continue;
        };
        let (Some(first), Some(second)) = (tables.get(main), tables.get(ti)) else {
            continue;
        };
        if first.rel_pk.is_empty() || second.rel_pk.is_empty() {
            continue;
        }
        let keys: HashSet<Vec<String>> = (0..first.rel.rows())
            .filter_map(|r| first.rel.key(&first.rel_pk, r))
            .collect();
        for r in 0..second.rel.rows() {
            if let Some(k) = second
                .rel
                .key(&second.rel_pk, r)
                .filter(|k| keys.contains(k))
            {
                out.record(format!(
                    "{}: primary key {} is released twice (for a row with and one without its FK to {})",
                    second.name,
                    show_key(Some(&k)),
                    plan.tables[main]
                        .parent
                        .map_or("?", |p| plan.tables[p].name.as_str())
                ));
            }
        }
    }
}
