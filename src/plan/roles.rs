//! Column roles: each label resolved to a released table's column and checked (a join key
//! takes none, a dimension's columns are IDENTIFIER or INSENSITIVE), then every column given
//! its role (key, label, or its table's default), a column with none refused.

use std::collections::BTreeSet;

use super::error::{at, PlanError};
use super::keys::is_join_key;
use super::names::{column, table};
use super::{ColumnRole, DimensionTable, FamilyTable};
use crate::policy::{LabelDecl, Policy, Role};
use crate::warehouse::Warehouse;

/// A released table a label may name: family (index into the plan's tables) or dimension.
#[derive(Clone, Copy)]
enum Released {
    Family(usize),
    Dimension(usize),
}

/// The role a label declares, its hierarchy known and its buckets increasing.
fn role_of(label: &LabelDecl, hierarchy_names: &BTreeSet<&str>) -> Result<ColumnRole, PlanError> {
    Ok(match &label.role {
        Role::Identifier => ColumnRole::Identifier,
        Role::QuasiIdentifier { hierarchy } => {
            if !hierarchy_names.contains(hierarchy.as_str()) {
                return Err(at(label.pos, format!("unknown hierarchy '{hierarchy}'; declare it with CREATE HIERARCHY {hierarchy} AS ...")));
            }
            ColumnRole::QuasiIdentifier {
                hierarchy: hierarchy.clone(),
            }
        }
        Role::Sensitive { buckets } => {
            if let Some(b) = buckets {
                if let Some(w) = b
                    .windows(2)
                    .find(|w| w[0] >= w[1] || !w[0].is_finite() || !w[1].is_finite())
                {
                    return Err(at(label.pos, format!("BUCKETS boundaries must increase, but {} is followed by {}; list them in ascending order without repeats", w[0], w[1])));
                }
            }
            ColumnRole::Sensitive {
                buckets: buckets.clone(),
            }
        }
        Role::Insensitive => ColumnRole::Insensitive,
    })
}

pub(super) fn assign_roles(
    policy: &Policy,
    wh: &Warehouse,
    tables: &mut [FamilyTable],
    dimensions: &mut [DimensionTable],
) -> Result<(), PlanError> {
    let mut fam_assigned: Vec<Vec<Option<ColumnRole>>> =
        tables.iter().map(|t| vec![None; t.columns.len()]).collect();
    let mut dim_assigned: Vec<Vec<Option<ColumnRole>>> = dimensions
        .iter()
        .map(|t| vec![None; t.columns.len()])
        .collect();
    let mut fam_defaults: Vec<Option<ColumnRole>> = vec![None; tables.len()];
    let mut dim_defaults: Vec<Option<ColumnRole>> = vec![None; dimensions.len()];
    let hierarchy_names: BTreeSet<&str> =
        policy.hierarchies.iter().map(|h| h.name.as_str()).collect();
    for label in &policy.labels {
        let meta = table(wh, &label.table, label.pos)?;
        let released = match tables.iter().position(|t| t.name == meta.name) {
            Some(ti) => Released::Family(ti),
            None => match dimensions.iter().position(|d| d.name == meta.name) {
                Some(di) => Released::Dimension(di),
                None => {
                    return Err(at(
                        label.pos,
                        format!(
                            "table {t} is not released: it is outside the {f} family (no foreign-key chain leads from it to {f}) and not declared a dimension; \
                             add LABEL TABLE {q} AS DIMENSION to release it beside the family, or drop the label to leave it out",
                            t = meta.name,
                            f = tables[0].name,
                            q = crate::warehouse::quote_ident(&meta.name)
                        ),
                    ))
                }
            },
        };
        let role = role_of(label, &hierarchy_names)?;
        if let Released::Dimension(_) = released {
            if !matches!(role, ColumnRole::Identifier | ColumnRole::Insensitive) {
                return Err(at(
                    label.pos,
                    format!(
                        "{} is a dimension table, released as the source holds it (not about one individual, so not anonymized); its columns are IDENTIFIER (left out) or INSENSITIVE, not {} — to anonymize it, make it part of the family",
                        meta.name,
                        label.role.name()
                    ),
                ));
            }
        }
        let Some(col) = &label.column else {
            match released {
                Released::Family(ti) => fam_defaults[ti] = Some(role),
                Released::Dimension(di) => dim_defaults[di] = Some(role),
            }
            continue;
        };
        let name = column(meta, col, label.pos)?;
        match released {
            Released::Family(ti) => {
                let ft = &tables[ti];
                let ci = ft
                    .columns
                    .iter()
                    .position(|c| c.name == name)
                    .ok_or_else(|| at(label.pos, format!("unknown column {col}")))?;
                if is_join_key(ft, name) && role != ColumnRole::Insensitive {
                    return Err(at(
                        label.pos,
                        format!("{}.{name} is a join key, which is kept atomic (pseudonymized) and can never be {} (001 Sec. IV-A); remove this label", ft.name, label.role.name()),
                    ));
                }
                fam_assigned[ti][ci] = Some(role);
            }
            Released::Dimension(di) => {
                let d = &dimensions[di];
                let ci = d
                    .columns
                    .iter()
                    .position(|c| c.name == name)
                    .ok_or_else(|| at(label.pos, format!("unknown column {col}")))?;
                dim_assigned[di][ci] = Some(role);
            }
        }
    }
    fill_roles(
        tables,
        dimensions,
        (fam_assigned, fam_defaults),
        (dim_assigned, dim_defaults),
    )
}

/// Labelled (or defaulted) roles per column, per table, and each table's default.
type Assigned = (Vec<Vec<Option<ColumnRole>>>, Vec<Option<ColumnRole>>);

/// Gives every column its role: a join key, its label, or its table's default; a column with
/// none of them is an error that lists every such column. A split table's second entry takes
/// its main entry's roles.
fn fill_roles(
    tables: &mut [FamilyTable],
    dimensions: &mut [DimensionTable],
    (mut fam_assigned, fam_defaults): Assigned,
    (mut dim_assigned, dim_defaults): Assigned,
) -> Result<(), PlanError> {
    let mut missing = Vec::new();
    for (ti, ft) in tables.iter_mut().enumerate() {
        // A second entry takes its main entry's roles (below).
        if ft.part.as_ref().is_some_and(|p| p.null_side) {
            continue;
        }
        let keys: Vec<bool> = ft
            .columns
            .iter()
            .map(|c| is_join_key(ft, &c.name))
            .collect();
        for (ci, c) in ft.columns.iter_mut().enumerate() {
            c.role = if keys[ci] {
                ColumnRole::Key
            } else if let Some(r) = fam_assigned[ti][ci]
                .take()
                .or_else(|| fam_defaults[ti].clone())
            {
                r
            } else {
                missing.push(format!("{}.{}", ft.name, c.name));
                continue;
            };
        }
    }
    for (di, d) in dimensions.iter_mut().enumerate() {
        for (ci, c) in d.columns.iter_mut().enumerate() {
            // A label on a dimension's key wins (IDENTIFIER leaves it out); else it is the
            // key FKs into the dimension point at.
            c.role = if let Some(r) = dim_assigned[di][ci].take() {
                r
            } else if d.primary_key.contains(&c.name) {
                ColumnRole::Key
            } else if let Some(r) = dim_defaults[di].clone() {
                r
            } else {
                missing.push(format!("{}.{}", d.name, c.name));
                continue;
            };
        }
    }
    if !missing.is_empty() {
        return Err(PlanError::Schema(format!(
            "{} column(s) have no role: {}; add LABEL COLUMN <table>.<column> AS IDENTIFIER | QUASI IDENTIFIER USING <h> | SENSITIVE | INSENSITIVE for each (or LABEL TABLE <table> DEFAULT INSENSITIVE)",
            missing.len(),
            missing.join(", ")
        )));
    }
    for ti in 0..tables.len() {
        if let Some(other) = tables[ti]
            .part
            .as_ref()
            .filter(|p| p.null_side)
            .map(|p| p.other)
        {
            tables[ti].columns = tables[other].columns.clone();
        }
    }
    Ok(())
}
