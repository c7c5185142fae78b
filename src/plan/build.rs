//! Building a plan: the steps that check a policy against the warehouse catalog, in order
//! (keys declared, the family, dimensions and roles, hierarchies, parameters, the model's
//! and the views' checks); each step is a module of its own beside this one.

use std::path::Path;

use super::dimensions::{assign_links, declared_dimensions};
use super::error::{at, PlanError};
use super::family::{family, refuse_children_of_keyless};
use super::hierarchies::{check_hierarchy_reads, resolve_hierarchies};
use super::keys::{declare_keys, raw_key_warnings};
use super::names::{columns, table};
use super::params::{check_sensitive, keeps, params};
use super::roles::assign_roles;
use super::views::check_views;
use super::Plan;
use crate::policy::{HierarchySource, Policy};
use crate::warehouse::Warehouse;

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
