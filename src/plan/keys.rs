//! Keys: the primary and foreign keys the declarations put on the warehouse (and the ones
//! they set aside), how each family table's key and FKs are released ([`ReleasedKey`]),
//! which columns are join keys, and the warning for raw keys published unchanged.

use super::error::{at, PlanError};
use super::names::{columns, table};
use super::{ColumnRole, FamilyTable, KeyPolicy, Params, ReleasedKey};
use crate::policy::Policy;
use crate::warehouse::{ForeignKey, Warehouse};

/// Declares the policy's keys on the warehouse; returns the foreign keys set aside, with
/// their tables.
pub(super) fn declare_keys(
    policy: &Policy,
    wh: &mut Warehouse,
) -> Result<Vec<(String, ForeignKey)>, PlanError> {
    for pk in &policy.primary_keys {
        let t = table(wh, &pk.table, pk.pos)?;
        let (name, cols) = (t.name.clone(), columns(t, &pk.columns, pk.pos)?);
        wh.declare_primary_key(&name, &cols)
            .map_err(|e| at(pk.pos, e.to_string()))?;
    }
    for fk in &policy.foreign_keys {
        let t = table(wh, &fk.table, fk.pos)?;
        let (name, cols) = (t.name.clone(), columns(t, &fk.columns, fk.pos)?);
        let p = table(wh, &fk.ref_table, fk.pos)?;
        let (pname, pcols) = (p.name.clone(), columns(p, &fk.ref_columns, fk.pos)?);
        wh.declare_foreign_key(
            &name,
            ForeignKey {
                columns: cols,
                ref_table: pname,
                ref_columns: pcols,
            },
        )
        .map_err(|e| at(fk.pos, e.to_string()))?;
    }
    // Set aside after the declared ones are added, so a key declared for a Parquet copy can
    // be set aside as the SQLite catalog's would be.
    let mut dropped = Vec::new();
    for fk in &policy.dropped_foreign_keys {
        let name = table(wh, &fk.table, fk.pos)?.name.clone();
        let key = wh
            .drop_foreign_key(&name, &fk.columns)
            .map_err(|e| at(fk.pos, format!("{e}; name the columns of one of them")))?;
        dropped.push((name, key));
    }
    Ok(dropped)
}

/// Decides how each family table is keyed in the release (parents first, so a child's
/// released FK can name its parent's released key).
pub(super) fn assign_keys(tables: &mut [FamilyTable]) {
    for ti in 0..tables.len() {
        let ft = &tables[ti];
        let same_set =
            |a: &[String], b: &[String]| a.len() == b.len() && a.iter().all(|c| b.contains(c));
        let key = if ft.primary_key.is_empty() {
            ReleasedKey::None
        } else if ft.parent.is_some() && same_set(&ft.primary_key, &ft.parent_fk) {
            ReleasedKey::Parent
        } else if ft.primary_key.len() == 1 && !ft.parent_fk.contains(&ft.primary_key[0]) {
            ReleasedKey::Own(ft.primary_key[0].clone())
        } else {
            ReleasedKey::Surrogate(surrogate_name(tables, ti))
        };
        let (released_fk, released_parent_key) = match ft.parent {
            None => (Vec::new(), Vec::new()),
            Some(p) => {
                let parent_pk = tables[p].released_pk();
                if same_set(&parent_pk, &ft.parent_key) {
                    (ft.parent_fk.clone(), ft.parent_key.clone())
                } else {
                    (parent_pk.clone(), parent_pk)
                }
            }
        };
        let redundant: Vec<(Vec<String>, Vec<String>)> = ft
            .redundant
            .iter()
            .map(|r| {
                let pk = tables[r.ancestor].released_pk();
                if same_set(&pk, &r.ancestor_key) {
                    (r.columns.clone(), r.ancestor_key.clone())
                } else {
                    (pk.clone(), pk)
                }
            })
            .collect();
        // A split table's rows are told apart by its main entry's released FK (the main
        // entry comes first in the plan).
        let split_released = match &ft.part {
            Some(p) if p.null_side => Some(tables[p.other].released_fk.clone()),
            Some(_) => Some(released_fk.clone()),
            None => None,
        };
        let ft = &mut tables[ti];
        ft.key = key;
        ft.released_fk = released_fk;
        ft.released_parent_key = released_parent_key;
        if let (Some(part), Some(split)) = (ft.part.as_mut(), split_released) {
            part.split_released = split;
        }
        for (r, (columns, key)) in ft.redundant.iter_mut().zip(redundant) {
            r.released_columns = columns;
            r.released_ancestor_key = key;
        }
    }
}

/// `<table>_key`, lengthened with `_` until no column of the table or of its children has
/// the name (children publish their reference to it under the same name).
fn surrogate_name(tables: &[FamilyTable], ti: usize) -> String {
    let ft = &tables[ti];
    let taken = |name: &str| {
        std::iter::once(ft)
            .chain(ft.children.iter().map(|&c| &tables[c]))
            .flat_map(|t| &t.columns)
            .any(|c| c.name.eq_ignore_ascii_case(name))
    };
    let mut name = format!("{}_key", ft.name);
    while taken(&name) {
        name.push('_');
    }
    name
}

/// Whether a family table's column is a join key: the FK to the parent, or a one-column
/// primary key released in place. Other primary-key columns are data.
pub(super) fn is_join_key(ft: &FamilyTable, column: &str) -> bool {
    ft.parent_fk.iter().any(|k| k == column)
        || ft
            .redundant
            .iter()
            .any(|r| r.columns.iter().any(|k| k == column))
        || matches!(&ft.key, ReleasedKey::Own(c) if c == column)
}

/// A column published unchanged that references a family table's key (a self-reference, or
/// an FK set aside) carries raw keys beside the pseudonyms: it links released rows back to
/// source keys. Not refused (the data owner labelled it), but said.
pub(super) fn raw_key_warnings(
    wh: &Warehouse,
    tables: &[FamilyTable],
    dropped: &[(String, ForeignKey)],
    params: &Params,
) -> Vec<String> {
    if params.keys != KeyPolicy::Pseudonymize {
        return Vec::new();
    }
    let mut out = Vec::new();
    let family = |name: &str| tables.iter().any(|t| t.name == name);
    for ft in tables
        .iter()
        .filter(|t| t.part.as_ref().is_none_or(|p| !p.null_side))
    {
        let own = wh
            .table(&ft.name)
            .map(|m| m.foreign_keys.clone())
            .unwrap_or_default();
        let set_aside = dropped
            .iter()
            .filter(|(t, _)| *t == ft.name)
            .map(|(_, fk)| fk.clone());
        let refs = own
            .into_iter()
            .filter(|fk| fk.ref_table == ft.name)
            .chain(set_aside)
            .filter(|fk| family(&fk.ref_table));
        for fk in refs {
            let published = fk.columns.iter().all(|c| {
                ft.columns.iter().any(|pc| {
                    &pc.name == c
                        && matches!(
                            pc.role,
                            ColumnRole::Insensitive | ColumnRole::Sensitive { .. }
                        )
                })
            });
            if published {
                out.push(format!(
                    "{}.({}) references {}'s keys and is published unchanged, so the release holds raw keys beside the pseudonyms; label it IDENTIFIER to leave it out",
                    ft.name,
                    fk.columns.join(", "),
                    fk.ref_table
                ));
            }
        }
    }
    out
}
