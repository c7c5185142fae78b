//! Building a plan: checking a policy against the warehouse catalog.

use super::*;

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;
use std::path::Path;

use sqlparser::ast::{Expr, ObjectName, TableFactor, Visit, Visitor};

use crate::policy::{HierarchySource, LabelDecl, Policy, Role, Value};
use crate::warehouse::{render_value, ForeignKey, TableMeta, Warehouse, WarehouseError};

/// Why a declarations file does not fit the warehouse. Each message says what to write.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("{pos}: {message}")]
    At { pos: Pos, message: String },
    #[error("{0}")]
    Schema(String),
    /// A foreign key that keeps the family from being a snowflake (or references a
    /// non-key): the fix is to set it aside, which `init` does.
    #[error("{}", .0.message)]
    Fk(Box<BadFk>),
    #[error(transparent)]
    Warehouse(#[from] WarehouseError),
}

impl PlanError {
    /// Where in the declarations the error is, if it has a place.
    pub fn pos(&self) -> Option<Pos> {
        match self {
            PlanError::At { pos, .. } => Some(*pos),
            _ => None,
        }
    }
}

pub(super) fn at(pos: Pos, message: impl Into<String>) -> PlanError {
    PlanError::At {
        pos,
        message: message.into(),
    }
}

/// Resolves a table name as written to the warehouse's exact name.
fn table<'w>(wh: &'w Warehouse, name: &str, pos: Pos) -> Result<&'w TableMeta, PlanError> {
    wh.table(name).ok_or_else(|| {
        let known: Vec<&str> = wh.tables.iter().map(|t| t.name.as_str()).collect();
        at(
            pos,
            format!(
                "unknown table '{name}'; the source has: {}",
                known.join(", ")
            ),
        )
    })
}

fn column<'t>(t: &'t TableMeta, name: &str, pos: Pos) -> Result<&'t str, PlanError> {
    if let Some(c) = t.columns.iter().find(|c| c.name == name) {
        return Ok(&c.name);
    }
    let matches: Vec<&str> = t
        .columns
        .iter()
        .filter(|c| c.name.eq_ignore_ascii_case(name))
        .map(|c| c.name.as_str())
        .collect();
    match matches.as_slice() {
        [one] => Ok(one),
        _ => {
            let known: Vec<&str> = t.columns.iter().map(|c| c.name.as_str()).collect();
            Err(at(
                pos,
                format!(
                    "unknown column '{name}' in table {}; it has: {}",
                    t.name,
                    known.join(", ")
                ),
            ))
        }
    }
}

fn columns(t: &TableMeta, names: &[String], pos: Pos) -> Result<Vec<String>, PlanError> {
    names
        .iter()
        .map(|n| column(t, n, pos).map(str::to_string))
        .collect()
}

/// Checks `policy` against the warehouse (declaring its keys there) and resolves hierarchies.
/// `base` is the directory relative paths in the declarations are resolved against.
pub async fn build(policy: &Policy, wh: &mut Warehouse, base: &Path) -> Result<Plan, PlanError> {
    let dropped = declare_keys(policy, wh)?;
    let entity = policy
        .entity
        .as_ref()
        .ok_or_else(|| PlanError::Schema("no entity declared; add CREATE ENTITY <name> ON <table> (<key>) naming the table with one row per person".into()))?;
    let root = table(wh, &entity.table, entity.pos)?.clone();
    let key = if entity.key.is_empty() {
        root.primary_key.clone()
    } else {
        columns(&root, &entity.key, entity.pos)?
    };
    if key.is_empty() {
        // Each row is an individual: nothing can point at a row, so no child table may.
        refuse_children_of_keyless(wh, &root, entity)?;
    } else if !root.primary_key.is_empty() && root.primary_key != key {
        return Err(at(
            entity.pos,
            format!(
                "CREATE ENTITY names ({}) but the primary key of {} is ({}); name the primary key",
                key.join(", "),
                root.name,
                root.primary_key.join(", ")
            ),
        ));
    }
    if !key.is_empty() {
        wh.declare_primary_key(&root.name, &key)?;
    }
    // A schema that is no snowflake is about this declaration's family: say so, and where.
    let mut tables = family(wh, &root.name).map_err(|e| match e {
        PlanError::Schema(m) => at(
            entity.pos,
            format!(
                "the family of entity {} (on table {}): {m}",
                entity.name, root.name
            ),
        ),
        PlanError::Fk(bad) => at(
            entity.pos,
            format!(
                "the family of entity {} (on table {}): {}",
                entity.name, root.name, bad.message
            ),
        ),
        other => other,
    })?;
    let mut dimensions = declared_dimensions(policy, wh, &tables)?;
    assign_roles(policy, wh, &mut tables, &mut dimensions)?;
    assign_links(wh, &mut tables, &mut dimensions);
    let left_out = wh
        .tables
        .iter()
        .map(|t| t.name.clone())
        .filter(|n| {
            !tables.iter().any(|t| &t.name == n) && !dimensions.iter().any(|d| &d.name == n)
        })
        .collect();
    let reads_warnings = check_hierarchy_reads(policy, wh, &tables, &dimensions)?;
    let hierarchies = resolve_hierarchies(policy, wh, base, &tables).await?;
    let mut params = params(policy, entity)?;
    params.keep = keeps(policy, wh, &tables)?;
    let mut warnings = raw_key_warnings(wh, &tables, &dropped, &params);
    warnings.extend(reads_warnings);
    check_sensitive(&params, &tables, entity)?;
    super::anatomy::check(policy, wh, &mut params, &tables, &mut warnings)?;
    check_views(
        policy,
        wh,
        &tables,
        &dimensions,
        params.model.anatomy().is_some(),
    )?;
    let resolve = |s: &Option<crate::policy::Setting>| s.as_ref().map(|s| base.join(&s.value));
    let source = resolve(&policy.source).ok_or_else(|| {
        PlanError::Schema("no source; add SET source = '<file.sqlite or directory>'".into())
    })?;
    Ok(Plan {
        entity: entity.name.clone(),
        tables,
        dimensions,
        left_out,
        labels: policy.labels.clone(),
        warnings,
        hierarchies,
        params,
        views: policy.views.clone(),
        source,
        hierarchy_files: policy
            .hierarchies
            .iter()
            .filter_map(|h| match &h.source {
                HierarchySource::Csv(path) => Some(base.join(path)),
                _ => None,
            })
            .collect(),
        target: resolve(&policy.target),
    })
}

/// The family of the entity table `root` as the warehouse's keys shape it, each table
/// keyed as it will be released: the plan's own reading of the schema, for `init` to
/// propose declarations the planner will read the same way.
pub fn family(wh: &Warehouse, root: &str) -> Result<Vec<FamilyTable>, PlanError> {
    let mut tables = discover_family(wh, root)?;
    assign_keys(&mut tables);
    Ok(tables)
}

/// Declares the policy's keys on the warehouse; returns the foreign keys set aside, with
/// their tables.
fn declare_keys(
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

/// A column published unchanged that references a family table's key (a self-reference, or
/// an FK set aside) carries raw keys beside the pseudonyms: it links released rows back to
/// source keys. Not refused (the data owner labelled it), but said.
fn raw_key_warnings(
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

/// A key-less entity table (`CREATE ENTITY e ON t` for a table without a primary key)
/// makes each row one individual; a child row could not say whose it is, so a table with
/// a foreign key into it is refused, naming the key to declare.
fn refuse_children_of_keyless(
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

/// A foreign key the family cannot take, with what to do.
#[derive(Debug)]
pub struct BadFk {
    pub message: String,
    /// Why, in a phrase.
    pub why: String,
    pub table: String,
    pub fk: ForeignKey,
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
    let into_family = |t: &TableMeta| -> Vec<ForeignKey> {
        t.foreign_keys
            .iter()
            .filter(|fk| fk.ref_table != t.name && in_family.contains(&fk.ref_table))
            .cloned()
            .collect()
    };
    let root_meta = wh
        .table(root)
        .ok_or_else(|| PlanError::Schema(format!("table {root} vanished")))?;
    if let Some(fk) = into_family(root_meta).first() {
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
        let placed = |name: &str| tables.iter().position(|t| t.name == name);
        let ready: Vec<&TableMeta> = pending
            .iter()
            .copied()
            .filter(|t| {
                into_family(t)
                    .iter()
                    .all(|fk| placed(&fk.ref_table).is_some())
            })
            .collect();
        if ready.is_empty() {
            let names: Vec<&str> = pending.iter().map(|t| t.name.as_str()).collect();
            let unplaced = into_family(pending[0])
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
        let mut round = Vec::new();
        for t in ready {
            let (parent, parent_fk, redundant) = choose_parent(&tables, t, into_family(t), root)?;
            round.push((parent, t, parent_fk, redundant));
        }
        round.sort_by_key(|(parent, t, _, _)| {
            (
                *parent,
                wh.tables.iter().position(|m| m.name == t.name).unwrap_or(0),
            )
        });
        for (pi, t, fk, redundant) in round {
            let referenced = |fk: &ForeignKey, target: usize| -> Result<Vec<String>, PlanError> {
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
            };
            let ref_cols = referenced(&fk, pi)?;
            let mut ft = family_table(wh, &t.name, Some(pi), fk.columns.clone(), ref_cols)?;
            for (rfk, a) in redundant {
                let ancestor_key = referenced(&rfk, a)?;
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
        }
        pending.retain(|t| !tables.iter().any(|f| f.name == t.name));
    }
    for ft in &tables {
        if !ft.children.is_empty() && ft.primary_key.is_empty() {
            return Err(PlanError::Schema(format!(
                "table {} has child tables but no primary key; add ALTER TABLE {} ADD PRIMARY KEY (<column>)",
                ft.name, ft.name
            )));
        }
    }
    split_second_paths(wh, &mut tables)?;
    Ok(tables)
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
fn unlabelled(meta: &TableMeta) -> Vec<PlannedColumn> {
    meta.columns
        .iter()
        .map(|c| PlannedColumn {
            name: c.name.clone(),
            role: ColumnRole::Insensitive,
        })
        .collect()
}

/// Decides how each family table is keyed in the release (parents first, so a child's
/// released FK can name its parent's released key).
fn assign_keys(tables: &mut [FamilyTable]) {
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

/// `KEEP n PERCENT OF t`, each naming a family table: only the family's rows are suppressed.
fn keeps(
    policy: &Policy,
    wh: &Warehouse,
    family: &[FamilyTable],
) -> Result<Vec<super::KeepRows>, PlanError> {
    policy
        .keeps
        .iter()
        .map(|k| {
            let meta = table(wh, &k.table, k.pos)?;
            let index = family.iter().position(|t| t.name == meta.name).ok_or_else(|| {
                at(
                    k.pos,
                    format!(
                        "KEEP names {}, which is not in the {} family: only family tables lose rows to suppression (dimensions are copied whole); name one of {}",
                        meta.name,
                        family[0].name,
                        family
                            .iter()
                            .map(|t| t.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
            })?;
            Ok(super::KeepRows {
                table: index,
                name: meta.name.clone(),
                percent: k.percent,
                pos: k.pos,
            })
        })
        .collect()
}

/// The tables declared with `LABEL TABLE t AS DIMENSION`; each must lie outside the family.
fn declared_dimensions(
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
fn assign_links(wh: &Warehouse, tables: &mut [FamilyTable], dimensions: &mut [DimensionTable]) {
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

fn assign_roles(
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

async fn resolve_hierarchies(
    policy: &Policy,
    wh: &Warehouse,
    base: &Path,
    tables: &[FamilyTable],
) -> Result<BTreeMap<String, HierarchyDef>, PlanError> {
    let used: BTreeSet<&str> = tables
        .iter()
        .flat_map(|t| t.qi_columns().map(|(_, h)| h))
        .collect();
    let mut out = BTreeMap::new();
    for h in &policy.hierarchies {
        let def = match &h.source {
            HierarchySource::Values(rows) => HierarchyDef::Rows {
                rows: rows.clone(),
                pos: h.pos,
            },
            HierarchySource::Csv(path) => {
                let full = base.join(path);
                let text = std::fs::read_to_string(&full)
                    .map_err(|e| at(h.pos, format!("cannot read hierarchy file '{path}' ({e}); paths are relative to the declarations file")))?;
                // A line loses its line ending (`\n` or `\r\n`) and nothing else: cells
                // are matched against data values byte for byte. A byte-order mark some
                // editors write is not part of the first leaf.
                let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
                let rows = text
                    .lines()
                    .filter(|l| !l.is_empty())
                    .map(|l| l.split(';').map(str::to_string).collect())
                    .collect();
                HierarchyDef::Rows { rows, pos: h.pos }
            }
            HierarchySource::Select(sql) => {
                if !used.contains(h.name.as_str()) {
                    continue;
                }
                let batches = wh
                    .sql(sql)
                    .await
                    .map_err(|e| at(h.pos, format!("hierarchy query failed: {e}")))?;
                let mut rows = Vec::new();
                for b in &batches {
                    for r in 0..b.num_rows() {
                        let row: Vec<String> = (0..b.num_columns())
                            .filter_map(|c| render_value(b.column(c).as_ref(), r))
                            .collect();
                        if !row.is_empty() {
                            rows.push(row);
                        }
                    }
                }
                HierarchyDef::Rows { rows, pos: h.pos }
            }
            HierarchySource::Bands { widths, range } => HierarchyDef::Bands {
                widths: widths.clone(),
                range: *range,
                pos: h.pos,
            },
            HierarchySource::DateParts(parts) => HierarchyDef::DateParts {
                parts: parts.clone(),
                pos: h.pos,
            },
        };
        out.insert(h.name.clone(), def);
    }
    Ok(out)
}

/// Reads the options every algorithm shares; the rest go to the algorithm as written
/// ([`AlgorithmRequest::options`]), which checks them against its own table.
fn params(policy: &Policy, entity: &crate::policy::EntityDecl) -> Result<Params, PlanError> {
    let an = policy.anonymize.as_ref().ok_or_else(|| {
        PlanError::Schema(format!(
            "no privacy policy; add ANONYMIZE {} WITH (k = 5)",
            entity.name
        ))
    })?;
    if !an.entity.eq_ignore_ascii_case(&entity.name) {
        return Err(at(
            an.pos,
            format!(
                "ANONYMIZE names '{}' but the entity is '{}'; write ANONYMIZE {} WITH (...)",
                an.entity, entity.name, entity.name
            ),
        ));
    }
    let mut p = Params::defaults(Model::KAnonymity { k: 0 });
    p.algorithm.pos = an.pos;
    let (mut k, mut l, mut model, mut diversity, mut variant) = (None, None, None, None, None);
    let text = |v: &Value| match v {
        Value::Text(s) => s.to_ascii_lowercase(),
        Value::Number(n) => n.to_string(),
    };
    let settings = policy.settings.iter().map(|s| {
        (
            s.name.to_ascii_lowercase(),
            Value::Text(s.value.clone()),
            s.pos,
        )
    });
    let options = an
        .options
        .iter()
        .map(|(n, o)| (n.clone(), o.value.clone(), o.pos));
    for (name, value, pos) in settings.chain(options) {
        let number = |min: f64, max: f64| match value {
            Value::Number(n) if n >= min && n <= max => Ok(n),
            _ => Err(at(
                pos,
                format!("{name} must be a number between {min} and {max}, found {value}"),
            )),
        };
        let whole = |n: f64| {
            if n.fract() == 0.0 {
                Ok(n)
            } else {
                Err(at(pos, format!("{name} must be a whole number, found {n}")))
            }
        };
        match name.as_str() {
            "model" => {
                model = Some(match text(&value).as_str() {
                    "k-anonymity" => Asked::K,
                    "l-diversity" => Asked::L,
                    "anatomy" => Asked::Anatomy,
                    other => {
                        return Err(at(
                            pos,
                            format!(
                            "unknown model '{other}'; use model = 'k-anonymity', 'l-diversity' or 'anatomy'"
                        ),
                        ))
                    }
                })
            }
            "variant" => {
                variant = Some((
                    match text(&value).as_str() {
                        "t-t" => Variant::TreeTree,
                        "v-v" => Variant::VertexVertex,
                        other => {
                            return Err(at(
                                pos,
                                format!("variant must be 't-t' (a person's QI-tree from their SA-tree) or 'v-v' (each vertex from its sensitive values), found '{other}'"),
                            ))
                        }
                    },
                    pos,
                ))
            }
            "k" | "l" => {
                let n = number(1.0, 1e9)?;
                if n.fract() != 0.0 {
                    return Err(at(pos, format!("{name} must be a whole number, found {n}")));
                }
                if name == "k" {
                    k = Some((n as usize, pos));
                } else {
                    l = Some((n as usize, pos));
                }
            }
            "diversity" => {
                diversity = Some((match text(&value).as_str() {
                    "probabilistic" => Diversity::Probabilistic,
                    "distinct" => Diversity::Distinct,
                    other => {
                        return Err(at(
                            pos,
                            format!(
                                "diversity must be 'probabilistic' or 'distinct', found '{other}'"
                            ),
                        ))
                    }
                }, pos))
            }
            "algorithm" => p.algorithm.name = Some((text(&value), pos)),
            "queries" => p.queries = whole(number(0.0, 1e6)?)? as usize,
            "query_seed" => p.query_seed = whole(number(0.0, 9.0e15)?)? as u64,
            "seed" => p.seed = Some(whole(number(0.0, 9.0e15)?)? as u64),
            "keys" => {
                p.keys = match text(&value).as_str() {
                    "preserve" => KeyPolicy::Preserve,
                    "pseudonymize" => KeyPolicy::Pseudonymize,
                    other => {
                        return Err(at(
                            pos,
                            format!("keys must be 'pseudonymize' or 'preserve', found '{other}'"),
                        ))
                    }
                }
            }
            "orphans" => {
                p.orphans = match text(&value).as_str() {
                    "drop" => OrphanPolicy::Drop,
                    "refuse" => OrphanPolicy::Refuse,
                    other => {
                        return Err(at(
                            pos,
                            format!("orphans must be 'refuse' or 'drop', found '{other}'"),
                        ))
                    }
                }
            }
            _ => p.algorithm.options.push(RawOption { name, value, pos }),
        }
    }
    if model == Some(Asked::Anatomy) {
        let (l, _) = l.ok_or_else(|| {
            at(an.pos, format!("anatomy needs l; write ANONYMIZE {} WITH (model = 'anatomy', l = 3, variant = 't-t')", entity.name))
        })?;
        if l < 2 {
            return Err(at(an.pos, format!("anatomy needs l >= 2 (l = {l} would publish every person's sensitive values beside their QIs); write l = 2 or more")));
        }
        if let Some((_, pos)) = diversity {
            return Err(at(pos, "diversity belongs to l-diversity; anatomy's groups hold l distinct values per slot, so remove it".to_string()));
        }
        p.model = Model::Anatomy {
            l,
            variant: variant.map_or(Variant::TreeTree, |(v, _)| v),
            rules: Vec::new(),
        };
        return Ok(p);
    }
    if let Some((_, pos)) = variant {
        return Err(at(
            pos,
            "variant belongs to anatomy; write model = 'anatomy' or remove it".to_string(),
        ));
    }
    p.model = model_of(
        an.pos,
        &entity.name,
        model.map(|m| m == Asked::L),
        k,
        l,
        diversity.map(|(d, _)| d),
    )?;
    Ok(p)
}

/// The model `model = '...'` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Asked {
    K,
    L,
    Anatomy,
}

/// The options [`params`] reads itself, in the order messages list them.
pub const SHARED_OPTIONS: &[&str] = &[
    "model",
    "k",
    "l",
    "diversity",
    "variant",
    "algorithm",
    "seed",
    "keys",
    "orphans",
    "queries",
    "query_seed",
];

/// The model is what was asked for, or what the parameters imply.
fn model_of(
    pos: Pos,
    e: &str,
    model: Option<bool>,
    k: Option<(usize, Pos)>,
    l: Option<(usize, Pos)>,
    diversity: Option<Diversity>,
) -> Result<Model, PlanError> {
    let ldiv = model.unwrap_or(l.is_some() && k.is_none());
    if ldiv {
        if let Some((_, pos)) = k {
            return Err(at(pos, "k belongs to k-anonymity; with model = 'l-diversity' write l = ... (every EC then holds at least l entities)".to_string()));
        }
        let (l, _) = l.ok_or_else(|| {
            at(pos, format!("l-diversity needs l; write ANONYMIZE {e} WITH (model = 'l-diversity', l = 3, ...)"))
        })?;
        return Ok(Model::LDiversity {
            l,
            diversity: diversity.unwrap_or(Diversity::Probabilistic),
        });
    }
    if let Some((_, pos)) = l {
        return Err(at(
            pos,
            "l belongs to l-diversity; write model = 'l-diversity' or use k for k-anonymity"
                .to_string(),
        ));
    }
    let (k, _) = k.ok_or_else(|| {
        at(
            pos,
            format!("k-anonymity needs k; write ANONYMIZE {e} WITH (k = 5, ...)"),
        )
    })?;
    Ok(Model::KAnonymity { k })
}

/// l-diversity without a sensitive column would be k-anonymity under another name.
fn check_sensitive(
    params: &Params,
    tables: &[FamilyTable],
    entity: &crate::policy::EntityDecl,
) -> Result<(), PlanError> {
    let any = tables.iter().any(|t| {
        t.columns
            .iter()
            .any(|c| matches!(c.role, ColumnRole::Sensitive { .. }))
    });
    if params.model.diversity().is_some() && !any {
        return Err(PlanError::Schema(format!(
            "l-diversity needs at least one SENSITIVE column in the {} family; add LABEL COLUMN <table>.<column> AS SENSITIVE, or use model = 'k-anonymity'",
            entity.name
        )));
    }
    Ok(())
}

/// Released table name -> its columns and whether each is an IDENTIFIER.
fn released_identifiers(
    tables: &[FamilyTable],
    dimensions: &[DimensionTable],
) -> BTreeMap<String, Vec<(String, bool)>> {
    let mut released: BTreeMap<String, Vec<(String, bool)>> = BTreeMap::new();
    for t in tables {
        let cols = t
            .columns
            .iter()
            .map(|c| (c.name.clone(), c.role == ColumnRole::Identifier))
            .collect();
        released.insert(t.name.clone(), cols);
    }
    for d in dimensions {
        let cols = d
            .columns
            .iter()
            .map(|c| (c.name.clone(), c.role == ColumnRole::Identifier))
            .collect();
        released.insert(d.name.clone(), cols);
    }
    released
}

/// The last part of a (possibly qualified) name.
fn last(name: &ObjectName) -> String {
    name.0
        .last()
        .and_then(|p| p.as_ident())
        .map(|i| i.value.clone())
        .unwrap_or_default()
}
/// The query's relations: (table as written, alias).
struct Relations(Vec<(String, Option<String>)>);
impl Visitor for Relations {
    type Break = ();
    fn pre_visit_table_factor(&mut self, t: &TableFactor) -> ControlFlow<()> {
        if let TableFactor::Table { name, alias, .. } = t {
            self.0
                .push((last(name), alias.as_ref().map(|a| a.name.value.clone())));
        }
        ControlFlow::Continue(())
    }
}
/// Column references: (qualifier, column).
struct Columns(Vec<(Option<String>, String)>);
impl Visitor for Columns {
    type Break = ();
    fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
        match e {
            Expr::Identifier(i) => self.0.push((None, i.value.clone())),
            Expr::CompoundIdentifier(parts) if parts.len() >= 2 => {
                let n = parts.len();
                self.0
                    .push((Some(parts[n - 2].value.clone()), parts[n - 1].value.clone()));
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

/// What a query reads from the source: its source tables with their aliases, and per column
/// reference the tables of the query that may hold it (`alias.column` through the query's
/// aliases, a bare `column` every table of the query that has it; with `wildcards`, a
/// wildcard every column of its tables).
struct Reads {
    tables: Vec<(String, Option<String>)>,
    columns: Vec<(Vec<String>, String)>,
}

impl Reads {
    fn of(query: &impl Visit, wh: &Warehouse, wildcards: bool) -> Reads {
        let mut rels = Relations(Vec::new());
        let _ = query.visit(&mut rels);
        // Relations that are source tables; CTE names and the like are not.
        let tables: Vec<(String, Option<String>)> = rels
            .0
            .into_iter()
            .filter_map(|(written, alias)| wh.table(&written).map(|m| (m.name.clone(), alias)))
            .collect();
        let has = |t: &str, col: &str| wh.table(t).is_some_and(|m| m.column(col).is_some());
        let named = |q: &str| -> Vec<String> {
            tables
                .iter()
                .filter(|(t, a)| match a {
                    Some(a) => a.eq_ignore_ascii_case(q),
                    None => t.eq_ignore_ascii_case(q),
                })
                .map(|(t, _)| t.clone())
                .collect()
        };
        let mut cols = Columns(Vec::new());
        let _ = query.visit(&mut cols);
        let mut columns = Vec::new();
        for (qualifier, col) in cols.0 {
            let owners: Vec<String> = match &qualifier {
                Some(q) => named(q),
                None => tables
                    .iter()
                    .filter(|(t, _)| has(t, &col))
                    .map(|(t, _)| t.clone())
                    .collect(),
            };
            columns.push((owners, col));
        }
        let mut stars = Wildcards(Vec::new());
        if wildcards {
            let _ = query.visit(&mut stars);
        }
        for qualifier in stars.0 {
            let owners = match &qualifier {
                Some(q) => named(q),
                None => tables.iter().map(|(t, _)| t.clone()).collect(),
            };
            for t in owners {
                if let Some(meta) = wh.table(&t) {
                    for c in &meta.columns {
                        columns.push((vec![t.clone()], c.name.clone()));
                    }
                }
            }
        }
        Reads { tables, columns }
    }
}

/// Wildcards of a query's select lists: `*` (None) or `alias.*`.
struct Wildcards(Vec<Option<String>>);
impl Visitor for Wildcards {
    type Break = ();
    fn pre_visit_query(&mut self, q: &sqlparser::ast::Query) -> ControlFlow<()> {
        if let sqlparser::ast::SetExpr::Select(select) = q.body.as_ref() {
            for item in &select.projection {
                match item {
                    sqlparser::ast::SelectItem::Wildcard(_) => self.0.push(None),
                    sqlparser::ast::SelectItem::QualifiedWildcard(kind, _) => {
                        // `alias.*`; an expression's `.*` could be anything, so all tables.
                        self.0.push(match kind {
                            sqlparser::ast::SelectItemQualifiedWildcardKind::ObjectName(n) => {
                                Some(last(n))
                            }
                            _ => None,
                        });
                    }
                    _ => {}
                }
            }
        }
        ControlFlow::Continue(())
    }
}

/// Whether `col` of `table` is labelled IDENTIFIER (`None`: the table has no roles).
fn is_identifier(
    released: &BTreeMap<String, Vec<(String, bool)>>,
    table: &str,
    col: &str,
) -> Option<bool> {
    released.get(table).and_then(|cs| {
        cs.iter()
            .find(|(c, _)| c == col)
            .or_else(|| cs.iter().find(|(c, _)| c.eq_ignore_ascii_case(col)))
            .map(|(_, identifier)| *identifier)
    })
}

/// Views are written against the source; one that reads an IDENTIFIER column would publish
/// it, and one that reads a table left out of the release cannot run on it.
fn check_views(
    policy: &Policy,
    wh: &Warehouse,
    tables: &[FamilyTable],
    dimensions: &[DimensionTable],
    anatomy: bool,
) -> Result<(), PlanError> {
    let released = released_identifiers(tables, dimensions);
    for v in &policy.views {
        // A view runs on the release, where `*` holds no IDENTIFIER column.
        let reads = Reads::of(&v.query, wh, false);
        if let Some((t, _)) = reads.tables.iter().find(|(t, _)| !released.contains_key(t)) {
            return Err(at(
                v.pos,
                format!(
                    "view {} reads table {t}, which is not released (neither in the family nor declared a dimension); declare it with LABEL TABLE {} AS DIMENSION or remove it from the view",
                    v.name,
                    crate::warehouse::quote_ident(t)
                ),
            ));
        }
        for (owners, col) in &reads.columns {
            // A bare name several tables have is resolved by the SQL engine (or refused
            // as ambiguous); it reads an IDENTIFIER only if every candidate is one.
            let identifier = !owners.is_empty()
                && owners
                    .iter()
                    .all(|t| is_identifier(&released, t, col) == Some(true));
            if identifier {
                return Err(at(
                    v.pos,
                    format!(
                        "view {} reads the IDENTIFIER column {}.{col}, which is not released; remove it from the view",
                        v.name, owners[0]
                    ),
                ));
            }
            let sensitive = anatomy
                && owners.iter().any(|t| {
                    tables.iter().any(|f| {
                        &f.name == t
                            && f.columns.iter().any(|c| {
                                c.name.eq_ignore_ascii_case(col)
                                    && matches!(c.role, ColumnRole::Sensitive { .. })
                            })
                    })
                });
            if sensitive {
                return Err(at(
                    v.pos,
                    format!(
                        "view {} reads the SENSITIVE column {}.{col}; under anatomy it is published apart from the rows it belongs to (on the SA side), and a view joining them back would re-link people to their values; read QI and INSENSITIVE columns only, or query the SA side by slot",
                        v.name, owners[0]
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// A `SELECT` hierarchy runs on the source and its labels are released: one that reads an
/// IDENTIFIER column (anywhere in the query) could publish it, and is refused. One that reads
/// a table with no roles (left out of the release) is warned about: whatever it puts in a
/// label is published unchecked.
fn check_hierarchy_reads(
    policy: &Policy,
    wh: &Warehouse,
    tables: &[FamilyTable],
    dimensions: &[DimensionTable],
) -> Result<Vec<String>, PlanError> {
    let used: BTreeSet<&str> = tables
        .iter()
        .flat_map(|t| t.qi_columns().map(|(_, h)| h))
        .collect();
    let released = released_identifiers(tables, dimensions);
    let mut warnings = Vec::new();
    for h in &policy.hierarchies {
        let HierarchySource::Select(sql) = &h.source else {
            continue;
        };
        if !used.contains(h.name.as_str()) {
            continue;
        }
        let dialect = sqlparser::dialect::GenericDialect {};
        let statements = sqlparser::parser::Parser::parse_sql(&dialect, sql)
            .map_err(|e| at(h.pos, format!("hierarchy {} is not a query relanon can read ({e}); write SELECT leaf, parent, ... FROM ...", h.name)))?;
        // A hierarchy runs on the source, where `*` holds them all.
        let reads = Reads::of(&statements, wh, true);
        for (owners, col) in &reads.columns {
            if let Some(t) = owners
                .iter()
                .find(|t| is_identifier(&released, t, col) == Some(true))
            {
                return Err(at(
                    h.pos,
                    format!(
                        "hierarchy {} reads the IDENTIFIER column {t}.{col}; a hierarchy's labels are released, so they could publish it: build the hierarchy from other columns",
                        h.name
                    ),
                ));
            }
        }
        for (t, _) in &reads.tables {
            if !released.contains_key(t) {
                warnings.push(format!(
                    "hierarchy {} reads table {t}, which has no roles (it is not released): every value it puts in a label is published unchecked; declare it with LABEL TABLE {} AS DIMENSION and label its personal columns IDENTIFIER to have them checked",
                    h.name,
                    crate::warehouse::quote_ident(t)
                ));
            }
        }
    }
    Ok(warnings)
}
