//! Dimension tables (`LABEL TABLE t AS DIMENSION`), which must lie outside the family, and
//! the foreign keys into them that still hold in the release (both sides published
//! unchanged), for a SQLite target to declare.

use super::error::{at, PlanError};
use super::family::unlabelled;
use super::names::table;
use super::{ColumnRole, DimensionTable, FamilyTable, PlannedColumn};
use crate::policy::Policy;
use crate::warehouse::{ForeignKey, Warehouse};

/// The tables declared with `LABEL TABLE t AS DIMENSION`; each must lie outside the family.
pub(super) fn declared_dimensions(
    policy: &Policy,
    wh: &Warehouse,
    family: &[FamilyTable],
) -> Result<Vec<DimensionTable>, PlanError> {
    let mut out: Vec<DimensionTable> = Vec::new();
    for d in &policy.dimensions {
        let meta = table(wh, &d.table, d.pos)?;
        if family.iter().any(|t| t.name == meta.name) {
            return Err(at(
                d.pos,
                format!(
                    "table {} is in the {} family (it has a foreign-key chain to {}), so it is anonymized with the entity, not released as a dimension; remove LABEL TABLE {} AS DIMENSION (or set its FK aside with ALTER TABLE ... DROP FOREIGN KEY)",
                    meta.name, family[0].name, family[0].name, d.table
                ),
            ));
        }
        out.push(DimensionTable {
            name: meta.name.clone(),
            primary_key: meta.primary_key.clone(),
            columns: unlabelled(meta),
            links: Vec::new(),
        });
    }
    Ok(out)
}

/// The foreign keys from released tables into released dimensions that still hold in the
/// release: every FK column published unchanged (not a pseudonymized key, not generalized,
/// not dropped) and every referenced column released.
pub(super) fn assign_links(
    wh: &Warehouse,
    tables: &mut [FamilyTable],
    dimensions: &mut [DimensionTable],
) {
    let unchanged = |cols: &[PlannedColumn], names: &[String], keys_ok: bool| {
        names.iter().all(|n| {
            cols.iter().any(|c| {
                &c.name == n
                    && match c.role {
                        ColumnRole::Insensitive | ColumnRole::Sensitive { .. } => true,
                        ColumnRole::Key => keys_ok,
                        _ => false,
                    }
            })
        })
    };
    let dims: Vec<(String, Vec<PlannedColumn>)> = dimensions
        .iter()
        .map(|d| (d.name.clone(), d.columns.clone()))
        .collect();
    let links = |name: &str, cols: &[PlannedColumn], keys_ok: bool| -> Vec<ForeignKey> {
        let Some(meta) = wh.table(name) else {
            return Vec::new();
        };
        meta.foreign_keys
            .iter()
            .filter(|fk| {
                let target = dims.iter().find(|(d, _)| *d == fk.ref_table);
                let ref_cols = if fk.ref_columns.is_empty() {
                    wh.table(&fk.ref_table)
                        .map(|t| t.primary_key.clone())
                        .unwrap_or_default()
                } else {
                    fk.ref_columns.clone()
                };
                target.is_some_and(|(_, dcols)| {
                    !ref_cols.is_empty()
                        && unchanged(cols, &fk.columns, keys_ok)
                        && unchanged(dcols, &ref_cols, true)
                })
            })
            .cloned()
            .collect()
    };
    for t in tables.iter_mut() {
        t.links = links(&t.name, &t.columns, false);
    }
    for d in dimensions.iter_mut() {
        d.links = links(&d.name, &d.columns, true);
    }
}
