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
//!
//! Under anatomy a family table also publishes `slot` (and the entity table `group_id`), and
//! a column its declarations label SENSITIVE must not be on it: that value is published on
//! the SA side only. An SA-side table (`<t>__sa`, `<t>__sag`) publishes its keys, `slot` and
//! `count`, and otherwise only columns the declarations label SENSITIVE in `t`.

use super::anatomy::{sa_side_of, SaKind};
use super::Check;
use crate::plan::{Plan, GROUP_ID, SLOT};
use crate::policy::{LabelDecl, Role};
use crate::warehouse::{quote_ident, TableMeta, Warehouse};

/// The role the declarations give one column: its `LABEL COLUMN`, else its table's
/// `LABEL TABLE ... DEFAULT`.
pub(super) fn declared_role<'a>(
    labels: &'a [LabelDecl],
    table: &str,
    column: &str,
) -> Option<&'a Role> {
    let same = |a: &str, b: &str| a.eq_ignore_ascii_case(b);
    labels
        .iter()
        .find(|l| same(&l.table, table) && l.column.as_deref().is_some_and(|c| same(c, column)))
        .or_else(|| {
            labels
                .iter()
                .find(|l| same(&l.table, table) && l.column.is_none())
        })
        .map(|l| &l.role)
}

/// What the declarations say of one column: `Some(true)` published, `Some(false)` an
/// IDENTIFIER (never released), `None` nothing.
fn declared(labels: &[LabelDecl], table: &str, column: &str) -> Option<bool> {
    declared_role(labels, table, column).map(|r| *r != Role::Identifier)
}

pub(super) fn check(plan: &Plan, release: &Warehouse, out: &mut Check) {
    let anatomy = plan.params.model.anatomy().is_some();
    for meta in &release.tables {
        if meta.name.starts_with("sqlite_") {
            continue;
        }
        if anatomy {
            if let Some((ti, kind)) = sa_side_of(plan, &meta.name) {
                sa_side(plan, ti, kind, meta, out);
                continue;
            }
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
                if anatomy {
                    keys.push(SLOT.to_string());
                    if plan.tables.first().is_some_and(|e| e.name == t.name) {
                        keys.push(GROUP_ID.to_string());
                    }
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
            let role = declared_role(&plan.labels, &meta.name, &col.name);
            if anatomy && family.is_some() && matches!(role, Some(Role::Sensitive { .. })) {
                out.record(format!(
                    "{}.{} is declared SENSITIVE and released beside the QI values: under anatomy it belongs on the SA side only",
                    meta.name, col.name
                ));
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
                    quote_ident(&meta.name),
                    quote_ident(&col.name)
                )),
            }
        }
    }
}

/// An SA-side table of family table `ti`: its keys, `slot` and `count` are the layout's; any
/// other column must be one the declarations label SENSITIVE in the family table.
fn sa_side(plan: &Plan, ti: usize, kind: SaKind, meta: &TableMeta, out: &mut Check) {
    let family = &plan.tables[ti].name;
    let layout = kind.layout_columns(ti);
    for col in &meta.columns {
        if layout.iter().any(|k| k.eq_ignore_ascii_case(&col.name)) {
            continue;
        }
        match declared_role(&plan.labels, family, &col.name) {
            Some(Role::Sensitive { .. }) => {}
            Some(role) => out.record(format!(
                "{}.{} is published on the SA side but {family}.{} is declared {}: the SA side holds SENSITIVE values only",
                meta.name,
                col.name,
                col.name,
                role.name()
            )),
            None => out.record(format!(
                "{}.{} is published on the SA side but {family} declares no such column: the SA side holds SENSITIVE values only",
                meta.name, col.name
            )),
        }
    }
}
