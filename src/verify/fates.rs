//! Check "declared roles": every released column has a fate the data owner declared. It reads
//! the release's schema and the declarations' labels as written, sharing nothing with the
//! planner's role logic, so a planner that lets a column through unlabelled (a composite
//! key's data column published as a "key", a dimension copied whole) is caught here.
//!
//! A released column passes when it is
//! - labelled in the declarations with a role that publishes it (anything but IDENTIFIER),
//!   by `LABEL COLUMN` or, failing one, by its table's `LABEL TABLE ... DEFAULT`;
//! - a family table's reference to its parent (traced by key atomicity and truthfulness), or
//!   its second path to an ancestor (checked against the parent chain by key atomicity);
//! - a family table's one-column released key (a pseudonym, a surrogate or a preserved
//!   one-column key); the columns of a composite released key are data and need labels;
//! - a declared dimension's primary-key column (what FKs into it name).

use super::Check;
use crate::plan::Plan;
use crate::policy::{LabelDecl, Role};
use crate::warehouse::Warehouse;

/// What the declarations say of one column: `Some(true)` published, `Some(false)` an
/// IDENTIFIER (never released), `None` nothing.
fn declared(labels: &[LabelDecl], table: &str, column: &str) -> Option<bool> {
    let same = |a: &str, b: &str| a.eq_ignore_ascii_case(b);
    let publishes = |l: &LabelDecl| l.role != Role::Identifier;
    labels
        .iter()
        .find(|l| same(&l.table, table) && l.column.as_deref().is_some_and(|c| same(c, column)))
        .or_else(|| {
            labels
                .iter()
                .find(|l| same(&l.table, table) && l.column.is_none())
        })
        .map(publishes)
}

pub(super) fn check(plan: &Plan, release: &Warehouse, out: &mut Check) {
    for meta in &release.tables {
        if meta.name.starts_with("sqlite_") {
            continue;
        }
        let family = plan
            .tables
            .iter()
            .find(|t| t.name.eq_ignore_ascii_case(&meta.name));
        let dimension = plan
            .dimensions
            .iter()
            .find(|d| d.name.eq_ignore_ascii_case(&meta.name));
        // A table neither family nor dimension is the schema check's to report.
        let keys: Vec<String> = match (family, dimension) {
            (Some(t), _) => {
                let mut keys = t.released_fk.clone();
                for r in &t.redundant {
                    keys.extend(r.released_columns.iter().cloned());
                }
                let pk = t.released_pk();
                if pk.len() == 1 {
                    keys.extend(pk);
                }
                keys
            }
            (None, Some(d)) => d.primary_key.clone(),
            (None, None) => continue,
        };
        for col in &meta.columns {
            if keys.iter().any(|k| k.eq_ignore_ascii_case(&col.name)) {
                continue;
            }
            match declared(&plan.labels, &meta.name, &col.name) {
                Some(true) => {}
                Some(false) => out.record(format!(
                    "{}.{} is released but declared IDENTIFIER: it must be left out",
                    meta.name, col.name
                )),
                None => out.record(format!(
                    "{}.{} is released but has no declared role and is not a key verify can trace: label it (LABEL COLUMN {}.{} AS ...) or leave it out",
                    meta.name,
                    col.name,
                    crate::warehouse::quote_ident(&meta.name),
                    crate::warehouse::quote_ident(&col.name)
                )),
            }
        }
    }
}
