//! What the planner checks of an anatomy (000 Ch. 3) before any data is read: the rules name
//! SENSITIVE columns of the family with a whole m >= 1 and a share p in (0, 1]; the QI side's
//! added columns and the SA side's tables collide with nothing of the source; the family has
//! a sensitive column and no table split in two entries. What needs the data (l above the
//! entities or the distinct values, a rule no grouping can meet) is the algorithm's to say.

use super::error::{at, PlanError};
use super::{AnatomyRule, ColumnRole, FamilyTable, Model, Params};
use crate::fraction::Fraction;
use crate::policy::{Policy, RuleDecl};
use crate::warehouse::Warehouse;

/// The QI side's added columns: the slot every released row sits at, and the entity table's
/// group.
pub const SLOT: &str = "slot";
pub const GROUP_ID: &str = "group_id";

/// Resolves the declared rules into `params.model` (anatomy) or warns that they are unused
/// (another model), and checks what an anatomy's release needs of the schema.
pub(super) fn check(
    policy: &Policy,
    wh: &Warehouse,
    params: &mut Params,
    tables: &[FamilyTable],
    warnings: &mut Vec<String>,
) -> Result<(), PlanError> {
    let Model::Anatomy { l, rules, .. } = &mut params.model else {
        if let Some(r) = policy.rules.first() {
            warnings.push(format!(
                "{}: CREATE RULE applies to model = 'anatomy' only; the {} rule(s) are not used by this model",
                r.pos,
                policy.rules.len()
            ));
        }
        return Ok(());
    };
    let l = *l;
    check_schema(wh, tables)?;
    if let Some(k) = policy.anonymize.as_ref().and_then(|a| a.options.get("k")) {
        warnings.push(format!(
            "{}: k is not used by anatomy (groups hold l = {l} entities each); it is ignored",
            k.pos
        ));
    }
    for r in &policy.rules {
        rules.push(resolve_rule(r, tables, warnings)?);
    }
    if matches!(params.keys, super::KeyPolicy::Preserve) {
        warnings.push(
            "keys = 'preserve' keeps the QI side's source keys; the SA side's keys are drawn fresh whatever the policy".to_string(),
        );
    }
    Ok(())
}

/// What an anatomy's release needs of the schema: a SENSITIVE column to hide, one parent per
/// table for the slot trees, and no source column or table where the release adds its own.
fn check_schema(wh: &Warehouse, tables: &[FamilyTable]) -> Result<(), PlanError> {
    if !tables.iter().any(|t| {
        t.columns
            .iter()
            .any(|c| matches!(c.role, ColumnRole::Sensitive { .. }))
    }) {
        return Err(PlanError::Schema(format!(
            "anatomy hides the link between QI values and sensitive ones, and the {} family has no SENSITIVE column; add LABEL COLUMN <table>.<column> AS SENSITIVE, or use model = 'k-anonymity'",
            tables[0].name
        )));
    }
    if let Some(t) = tables.iter().find(|t| t.part.is_some()) {
        return Err(PlanError::Schema(format!(
            "table {} is reached by two paths whose rows hang at different parents; anatomy's slot trees need one parent per table: set one foreign key aside (ALTER TABLE {} DROP FOREIGN KEY (...)) or use a generalization model",
            t.name, t.name
        )));
    }
    for t in tables {
        for added in [SLOT, GROUP_ID] {
            if let Some(c) = t
                .columns
                .iter()
                .find(|c| c.name.eq_ignore_ascii_case(added))
            {
                return Err(PlanError::Schema(format!(
                    "table {} has a column {}, and anatomy adds a column '{added}' to every released family table; rename the source column",
                    t.name, c.name
                )));
            }
        }
        // The SA side's own columns (t-t's keys and links, v-v's counts) beside the SA ones.
        for c in &t.columns {
            let taken = ["sa_id", "parent_sa_id", "count"]
                .iter()
                .any(|n| c.name.eq_ignore_ascii_case(n));
            if taken && matches!(c.role, ColumnRole::Sensitive { .. }) {
                return Err(PlanError::Schema(format!(
                    "the SENSITIVE column {}.{} has the name of a column anatomy's SA side adds (sa_id, parent_sa_id, count); rename the source column",
                    t.name, c.name
                )));
            }
        }
        for side in [format!("{}__sa", t.name), format!("{}__sag", t.name)] {
            if let Some(m) = wh.table(&side) {
                return Err(PlanError::Schema(format!(
                    "the source has a table {}, the name anatomy gives the SA side of {}; rename the source table",
                    m.name, t.name
                )));
            }
        }
    }
    Ok(())
}

/// One declared rule resolved to a SENSITIVE column of the family, with a whole m >= 1 and
/// a share p in (0, 1]; a rule with p = 1 constrains nothing and is warned about.
fn resolve_rule(
    r: &RuleDecl,
    tables: &[FamilyTable],
    warnings: &mut Vec<String>,
) -> Result<AnatomyRule, PlanError> {
    let t = tables
        .iter()
        .find(|t| t.name.eq_ignore_ascii_case(&r.table))
        .ok_or_else(|| {
            at(
                r.pos,
                format!(
                    "rule '{}' names table {}, which is not in the {} family; name a family table's SENSITIVE column",
                    r.name, r.table, tables[0].name
                ),
            )
        })?;
    let c = t
        .columns
        .iter()
        .find(|c| c.name.eq_ignore_ascii_case(&r.column))
        .ok_or_else(|| {
            at(
                r.pos,
                format!(
                    "rule '{}': table {} has no column {}",
                    r.name, t.name, r.column
                ),
            )
        })?;
    if !matches!(c.role, ColumnRole::Sensitive { .. }) {
        return Err(at(
            r.pos,
            format!(
                "rule '{}' is about {}.{}, which is not SENSITIVE; rules bound what an adversary learns of sensitive values: label it AS SENSITIVE or name a sensitive column",
                r.name, t.name, c.name
            ),
        ));
    }
    let (m, mpos) = r.m;
    if m < 1.0 || m.fract() != 0.0 || m > u32::MAX as f64 {
        return Err(at(
            mpos,
            format!(
                "rule '{}': m must be a whole number of occurrences, 1 or more, found {m}",
                r.name
            ),
        ));
    }
    let (text, ppos) = &r.p;
    let p = Fraction::from_decimal(text).ok_or_else(|| {
        at(
            *ppos,
            format!(
                "rule '{}': p must be a share above 0 and at most 1 (0.5, '1/3'), found {text}",
                r.name
            ),
        )
    })?;
    if p.num == p.den {
        warnings.push(format!(
            "{}: rule '{}' has p = 1, which any release meets; it constrains nothing",
            r.pos, r.name
        ));
    }
    Ok(AnatomyRule {
        name: r.name.clone(),
        table: t.name.clone(),
        column: c.name.clone(),
        value: r.value.clone(),
        m: m as u32,
        p,
    })
}
