//! Check 2, "key atomicity": released primary keys are unique and non-NULL, and every
//! released parent FK names exactly one released parent row, so each row has one true join
//! path.

use std::collections::HashMap;

use super::data::{show_key, FkIssue, TableData};
use super::Check;
use crate::plan::Plan;

pub(super) fn check(plan: &Plan, tables: &[TableData], out: &mut Check) {
    for (ti, t) in tables.iter().enumerate() {
        let Some(ft) = plan.tables.get(ti) else {
            continue;
        };
        if !t.rel_pk.is_empty() {
            let cols = ft.primary_key.join(", ");
            let mut seen: HashMap<Vec<String>, (usize, usize)> =
                HashMap::with_capacity(t.rel.rows());
            let mut keys: Vec<Option<Vec<String>>> = Vec::with_capacity(t.rel.rows());
            for r in 0..t.rel.rows() {
                let k = t.rel.key(&t.rel_pk, r);
                match &k {
                    None => out.record(format!(
                        "{} row {}: primary key ({cols}) is NULL",
                        t.name,
                        r + 1
                    )),
                    Some(k) => {
                        seen.entry(k.clone())
                            .and_modify(|e| e.1 += 1)
                            .or_insert((r, 1));
                    }
                }
                keys.push(k);
            }
            // Reported once per key, at its first row, so the order follows the table.
            for (r, k) in keys.iter().enumerate() {
                let Some(k) = k else { continue };
                if let Some(&(first, n)) = seen.get(k) {
                    if first == r && n > 1 {
                        out.record(format!(
                            "{}: primary key {} appears {n} times",
                            t.name,
                            show_key(Some(k))
                        ));
                    }
                }
            }
        }
        let Some(p) = t.parent else { continue };
        let parent = tables.get(p).map_or("?", |pt| pt.name.as_str());
        let fk = ft.parent_fk.join(", ");
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
            out.record(format!("{}: {what}", t.describe(tables, *r)));
        }
    }
}
