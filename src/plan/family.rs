//! The entity family (001 Sec. IV-A) read off the warehouse's foreign keys: its members, each
//! table placed under one parent in rounds, second paths to an ancestor kept as
//! [`RedundantFk`]s (and split into a [`Part`] where their rows may hang elsewhere), and the
//! refusal, naming the foreign key to set aside, of any family that is no snowflake.

use std::collections::BTreeSet;

use super::error::{at, BadFk, PlanError};
use super::keys::assign_keys;
use super::{ColumnRole, FamilyTable, Part, PlannedColumn, RedundantFk, ReleasedKey};
use crate::warehouse::{ForeignKey, TableMeta, Warehouse};

/// The family of the entity table `root` as the warehouse's keys shape it, each table
/// keyed as it will be released: the plan's own reading of the schema, for `init` to
/// propose declarations the planner will read the same way.
pub fn family(wh: &Warehouse, root: &str) -> Result<Vec<FamilyTable>, PlanError> {
    let mut tables = discover_family(wh, root)?;
    assign_keys(&mut tables);
    Ok(tables)
}

/// A key-less entity table (`CREATE ENTITY e ON t` for a table without a primary key)
/// makes each row one individual; a child row could not say whose it is, so a table with
/// a foreign key into it is refused, naming the key to declare.
pub(super) fn refuse_children_of_keyless(
    wh: &Warehouse,
    root: &TableMeta,
    entity: &crate::policy::EntityDecl,
) -> Result<(), PlanError> {
    let child = wh.tables.iter().find_map(|t| {
        t.foreign_keys
            .iter()
            .find(|fk| fk.ref_table == root.name)
            .map(|fk| (t.name.as_str(), fk.columns.join(", ")))
    });
    match child {
        None => Ok(()),
        Some((table, fk)) => Err(at(
            entity.pos,
            format!(
                "the entity table {r} has no primary key, but {table} ({fk}) references it; a key-less entity is a single table with each row one individual — declare the key the child rows point at: CREATE ENTITY {e} ON {r} (<key column>)",
                r = root.name,
                e = entity.name
            ),
        )),
    }
}

/// The family's tables: the entity table, and every table with an FK (not a
/// self-reference) into a member, to a fixpoint.
pub fn family_members(wh: &Warehouse, root: &str) -> BTreeSet<String> {
    let mut in_family: BTreeSet<String> = BTreeSet::from([root.to_string()]);
    loop {
        let before = in_family.len();
        for t in &wh.tables {
            let joins = t
                .foreign_keys
                .iter()
                .any(|fk| fk.ref_table != t.name && in_family.contains(&fk.ref_table));
            if joins {
                in_family.insert(t.name.clone());
            }
        }
        if in_family.len() == before {
            return in_family;
        }
    }
}

/// A family table's parent (plan index), its FK to it, and its second paths (FK, ancestor).
type Placement = (usize, ForeignKey, Vec<(ForeignKey, usize)>);

/// Where a family table hangs: under the deepest family table it references (all of them
/// placed already), its other FKs into the family second paths to proper ancestors of that
/// parent; anything else is not a snowflake.
fn choose_parent(
    tables: &[FamilyTable],
    t: &TableMeta,
    fks: Vec<ForeignKey>,
    root: &str,
) -> Result<Placement, PlanError> {
    let placed = |name: &str| tables.iter().position(|t| t.name == name);
    let target = |fk: &ForeignKey| placed(&fk.ref_table).unwrap_or(0);
    let parent_fk = fks
        .iter()
        .max_by_key(|fk| depth(tables, target(fk)))
        .expect("a family table has an FK into the family");
    let parent = target(parent_fk);
    let ancestors: Vec<usize> =
        std::iter::successors(tables[parent].parent, |&a| tables[a].parent).collect();
    let mut redundant = Vec::new();
    for fk in fks.iter().filter(|fk| *fk != parent_fk) {
        let a = target(fk);
        if a == parent {
            return Err(not_snowflake(
                root,
                &t.name,
                fk,
                format!(
                    "table {} has two foreign keys into {}, ({}) and ({}), which may name two different rows",
                    t.name,
                    tables[parent].name,
                    parent_fk.columns.join(", "),
                    fk.columns.join(", ")
                ),
            ));
        }
        if !ancestors.contains(&a) {
            return Err(not_snowflake(
                root,
                &t.name,
                fk,
                format!(
                    "table {} reaches the entity table through {} ({}) and through {} ({}), which do not lie on one path",
                    t.name,
                    tables[parent].name,
                    parent_fk.columns.join(", "),
                    tables[a].name,
                    fk.columns.join(", ")
                ),
            ));
        }
        redundant.push((fk.clone(), a));
    }
    Ok((parent, parent_fk.clone(), redundant))
}

/// How many parents lie above table `at` (the entity table's depth is 0).
fn depth(tables: &[FamilyTable], at: usize) -> usize {
    std::iter::successors(tables[at].parent, |&p| tables[p].parent).count()
}

/// The refusal of a schema that is not a snowflake, with the fix to write.
fn not_snowflake(root: &str, table: &str, fk: &ForeignKey, why: String) -> PlanError {
    PlanError::Fk(Box::new(BadFk {
        message: format!(
            "not a snowflake: {why}; keep one FK path per table toward {root}: set the other aside with ALTER TABLE {} DROP FOREIGN KEY (<its columns>) and give its columns a role",
            crate::warehouse::quote_ident(table)
        ),
        why,
        table: table.to_string(),
        fk: fk.clone(),
    }))
}

/// The family of the entity table (001 Sec. IV-A): tables with an FK chain to it. Each family
/// table hangs under one parent; a second FK into the family is accepted only when it points
/// at a proper ancestor of that parent (a shortcut such as payment -> customer beside
/// payment -> rental -> customer), and is released as that ancestor's key. Any other second
/// path, or a cycle, is not a snowflake.
fn discover_family(wh: &Warehouse, root: &str) -> Result<Vec<FamilyTable>, PlanError> {
    let in_family = family_members(wh, root);
    let root_meta = wh
        .table(root)
        .ok_or_else(|| PlanError::Schema(format!("table {root} vanished")))?;
    if let Some(fk) = into_family(root_meta, &in_family).first() {
        return Err(not_snowflake(
            root,
            root,
            fk,
            format!(
                "the entity table {root} has a foreign key ({}) into its own family ({})",
                fk.columns.join(", "),
                fk.ref_table
            ),
        ));
    }
    let mut tables = vec![family_table(wh, root, None, Vec::new(), Vec::new())?];
    // Placed in rounds: a table is placed once every family table it references is, under
    // the deepest of them, so a plain snowflake is placed level by level (breadth first,
    // each level grouped by parent in plan order, children in the source's table order).
    let mut pending: Vec<&TableMeta> = wh
        .tables
        .iter()
        .filter(|t| t.name != root && in_family.contains(&t.name))
        .collect();
    while !pending.is_empty() {
        let ready = ready_round(&tables, &pending, &in_family, root)?;
        let mut round = Vec::new();
        for t in ready {
            let (parent, parent_fk, redundant) =
                choose_parent(&tables, t, into_family(t, &in_family), root)?;
            round.push((parent, t, parent_fk, redundant));
        }
        round.sort_by_key(|(parent, t, _, _)| {
            (
                *parent,
                wh.tables.iter().position(|m| m.name == t.name).unwrap_or(0),
            )
        });
        for (pi, t, fk, redundant) in round {
            hang(wh, &mut tables, pi, t, fk, redundant)?;
        }
        pending.retain(|t| !tables.iter().any(|f| f.name == t.name));
    }
    refuse_keyless_parents(&tables)?;
    split_second_paths(wh, &mut tables)?;
    Ok(tables)
}

/// A table's foreign keys into the family, self-references left out (they are data).
fn into_family(t: &TableMeta, in_family: &BTreeSet<String>) -> Vec<ForeignKey> {
    t.foreign_keys
        .iter()
        .filter(|fk| fk.ref_table != t.name && in_family.contains(&fk.ref_table))
        .cloned()
        .collect()
}

/// The pending tables whose every FK into the family names a table already placed. When
/// none is ready, what is pending references itself round about: a cycle, refused.
fn ready_round<'w>(
    tables: &[FamilyTable],
    pending: &[&'w TableMeta],
    in_family: &BTreeSet<String>,
    root: &str,
) -> Result<Vec<&'w TableMeta>, PlanError> {
    let placed = |name: &str| tables.iter().position(|t| t.name == name);
    let ready: Vec<&TableMeta> = pending
        .iter()
        .copied()
        .filter(|t| {
            into_family(t, in_family)
                .iter()
                .all(|fk| placed(&fk.ref_table).is_some())
        })
        .collect();
    if ready.is_empty() {
        let names: Vec<&str> = pending.iter().map(|t| t.name.as_str()).collect();
        let unplaced = into_family(pending[0], in_family)
            .into_iter()
            .find(|fk| placed(&fk.ref_table).is_none())
            .expect("a table not ready references one not placed yet");
        return Err(not_snowflake(
            root,
            names[0],
            &unplaced,
            format!("the foreign keys among {} form a cycle", names.join(", ")),
        ));
    }
    Ok(ready)
}

/// Appends table `t` to the plan under its parent `pi`, with its second paths, each FK
/// checked to reference its target's primary key.
fn hang(
    wh: &Warehouse,
    tables: &mut Vec<FamilyTable>,
    pi: usize,
    t: &TableMeta,
    fk: ForeignKey,
    redundant: Vec<(ForeignKey, usize)>,
) -> Result<(), PlanError> {
    let ref_cols = referenced_key(tables, t, &fk, pi)?;
    let mut ft = family_table(wh, &t.name, Some(pi), fk.columns.clone(), ref_cols)?;
    for (rfk, a) in redundant {
        let ancestor_key = referenced_key(tables, t, &rfk, a)?;
        ft.redundant.push(RedundantFk {
            columns: rfk.columns.clone(),
            ancestor: a,
            ancestor_key,
            released_columns: Vec::new(),
            released_ancestor_key: Vec::new(),
        });
    }
    let idx = tables.len();
    tables.push(ft);
    tables[pi].children.push(idx);
    Ok(())
}

/// The columns `fk` of `t` references in family table `target` (its primary key when the
/// FK names none); a reference to other columns is refused, to be set aside.
fn referenced_key(
    tables: &[FamilyTable],
    t: &TableMeta,
    fk: &ForeignKey,
    target: usize,
) -> Result<Vec<String>, PlanError> {
    let pk = tables[target].primary_key.clone();
    let cols = if fk.ref_columns.is_empty() {
        pk.clone()
    } else {
        fk.ref_columns.clone()
    };
    if cols != pk {
        return Err(PlanError::Fk(Box::new(BadFk {
            message: format!(
                "{}({}) references {}({}), which is not its primary key ({}); reference the primary key",
                t.name,
                fk.columns.join(", "),
                tables[target].name,
                cols.join(", "),
                pk.join(", ")
            ),
            why: format!(
                "it references {}({}), which is not that table's primary key",
                tables[target].name,
                cols.join(", ")
            ),
            table: t.name.clone(),
            fk: fk.clone(),
        })));
    }
    Ok(cols)
}

/// A family table with children must have a primary key for their FKs to reference.
fn refuse_keyless_parents(tables: &[FamilyTable]) -> Result<(), PlanError> {
    for ft in tables {
        if !ft.children.is_empty() && ft.primary_key.is_empty() {
            return Err(PlanError::Schema(format!(
                "table {} has child tables but no primary key; add ALTER TABLE {} ADD PRIMARY KEY (<column>)",
                ft.name, ft.name
            )));
        }
    }
    Ok(())
}

/// Gives each table with a second path a second plan entry for its rows whose FK to the
/// parent is NULL: they hang at the second path's ancestor (the deepest, if several) rather
/// than nowhere. Only where such rows can exist: a table whose key is not that FK, and
/// without children (a row of a child table would not know which entry its parent is in).
fn split_second_paths(wh: &Warehouse, tables: &mut Vec<FamilyTable>) -> Result<(), PlanError> {
    for main in 0..tables.len() {
        let ft = &tables[main];
        let key_is_fk = ft.primary_key.iter().any(|c| ft.parent_fk.contains(c));
        if ft.redundant.is_empty() || !ft.children.is_empty() || key_is_fk {
            continue;
        }
        let r = ft
            .redundant
            .iter()
            .max_by_key(|r| depth(tables, r.ancestor))
            .expect("checked non-empty")
            .clone();
        let mut second = family_table(
            wh,
            &ft.name,
            Some(r.ancestor),
            r.columns.clone(),
            r.ancestor_key.clone(),
        )?;
        let other = tables.len();
        second.part = Some(Part {
            split_source: ft.parent_fk.clone(),
            split_released: Vec::new(),
            null_side: true,
            other: main,
        });
        let split_source = ft.parent_fk.clone();
        tables[main].part = Some(Part {
            split_source,
            split_released: Vec::new(),
            null_side: false,
            other,
        });
        tables[r.ancestor].children.push(other);
        tables.push(second);
    }
    Ok(())
}

fn family_table(
    wh: &Warehouse,
    name: &str,
    parent: Option<usize>,
    parent_fk: Vec<String>,
    parent_key: Vec<String>,
) -> Result<FamilyTable, PlanError> {
    let meta = wh
        .table(name)
        .ok_or_else(|| PlanError::Schema(format!("table {name} vanished")))?;
    Ok(FamilyTable {
        name: meta.name.clone(),
        primary_key: meta.primary_key.clone(),
        parent,
        parent_fk,
        parent_key,
        key: ReleasedKey::None,
        released_fk: Vec::new(),
        released_parent_key: Vec::new(),
        redundant: Vec::new(),
        links: Vec::new(),
        part: None,
        children: Vec::new(),
        columns: unlabelled(meta),
    })
}

/// A table's columns before roles are assigned (`Insensitive` stands in until then).
pub(super) fn unlabelled(meta: &TableMeta) -> Vec<PlannedColumn> {
    meta.columns
        .iter()
        .map(|c| PlannedColumn {
            name: c.name.clone(),
            role: ColumnRole::Insensitive,
        })
        .collect()
}
