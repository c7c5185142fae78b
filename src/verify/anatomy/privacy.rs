//! Checks "l-diversity" and "(p,m)-privacy" (spec Sec. 3.5 items 5 and 6), counted on the SA
//! side as published, over the QI side's groups and slots.
//!
//! Values are compared after discretization, by this module's own reading of the plan's
//! BUCKETS (the l-diversity check's bucketing, `ldiv::classify`): `[b_i, b_i+1)`, the last
//! bucket closed; NULL is a value of its own; a rule on a bucketed column is about the bucket
//! its value falls in.
//!
//! - l-diversity (Def. 6 at every slot, Defs 20.3 / 22.3): every value of every SENSITIVE
//!   column occurs at most |G| / l times among the slot's values (`count * l <= |G|`).
//! - (p,m)-privacy, per group and rule (s, m, p) on `t.c` (a rule on every value is one rule
//!   per value the SA side holds):
//!   - t-t (Def. 21): mu = the SA-trees holding s m times or more; `mu * den(p) <= num(p) *
//!     |G|`, with the actual |G| (D3);
//!   - v-v (Def. 23): eta = the slots of `t` whose SA-group holds s; Pr[Bin(eta, 1/l) >= m]
//!     <= p with the declared l, decided exactly ([`super::binomial`]).
//!
//!   A rule broken anywhere is one violation naming how many groups break it and the worst.

use std::collections::BTreeSet;

use rustc_hash::FxHashMap as HashMap;

use super::super::data::show_cell;
use super::super::ldiv::{classify, label, Value};
use super::super::truth::normalize;
use super::super::{Check, VerifyError};
use super::{binomial, Group, Layout, Published, SaCol};
use crate::plan::{AnatomyRule, Plan, Variant};
use crate::policy::RuleValue;

/// A published cell as diversity compares it; a bucketed cell that is not a number or lies
/// outside the buckets is a value of its own (its text), reported by [`diversity`].
fn value_of(cell: Option<&str>, col: &SaCol) -> Value {
    classify(cell, col.buckets.as_deref())
        .unwrap_or_else(|_| Value::Text(cell.unwrap_or_default().to_string()))
}

/// The l-diversity of every slot's published values, per SENSITIVE column.
pub(super) fn diversity(
    plan: &Plan,
    layout: &Layout,
    published: &Published,
    sa: &[Vec<SaCol>],
    l: usize,
    out: &mut Check,
) {
    for (s, slot) in layout.slots.iter().enumerate() {
        let Some(size) = layout.group_size(s) else {
            continue;
        };
        for (k, col) in sa[slot.table].iter().enumerate() {
            let mut counts: HashMap<Value, u64> = HashMap::default();
            let mut values: Vec<(&Option<String>, u64)> = published.at_slot[s]
                .iter()
                .map(|(tuple, &n)| (&tuple[k], n))
                .collect();
            values.sort();
            for (cell, n) in values {
                if classify(cell.as_deref(), col.buckets.as_deref()).is_err() {
                    out.record(format!(
                        "{}: {}.{} = {} fits none of its BUCKETS, so it counts as a value of its own",
                        layout.describe_slot(plan, s),
                        plan.tables[slot.table].name,
                        col.name,
                        show_cell(cell.as_deref())
                    ));
                }
                *counts.entry(value_of(cell.as_deref(), col)).or_default() += n;
            }
            let mut over: Vec<(Value, u64)> = counts
                .into_iter()
                .filter(|&(_, n)| n.saturating_mul(l as u64) > size as u64)
                .collect();
            over.sort();
            for (v, n) in over {
                out.record(format!(
                    "{}: {}.{} = {} is {n} of its {size} values; l = {l} allows at most {}",
                    layout.describe_slot(plan, s),
                    plan.tables[slot.table].name,
                    col.name,
                    label(&v, col.buckets.as_deref()),
                    size / l
                ));
            }
        }
    }
}

/// One rule on one value: (table, SENSITIVE column index, value).
struct Target<'a> {
    rule: &'a AnatomyRule,
    table: usize,
    column: usize,
    value: Value,
}

impl Target<'_> {
    fn describe(&self, plan: &Plan, sa: &[Vec<SaCol>]) -> String {
        let col = &sa[self.table][self.column];
        let value = label(&self.value, col.buckets.as_deref());
        format!(
            "rule '{}' ({}.{} = {value}, m = {}, p = {})",
            self.rule.name, plan.tables[self.table].name, col.name, self.rule.m, self.rule.p
        )
    }
}

/// Every rule, a rule on every value expanded to the values the SA side holds.
fn targets<'a>(
    plan: &Plan,
    layout: &Layout,
    published: &Published,
    sa: &[Vec<SaCol>],
    rules: &'a [AnatomyRule],
) -> Result<Vec<Target<'a>>, VerifyError> {
    let mut out = Vec::new();
    for rule in rules {
        let table = plan
            .tables
            .iter()
            .position(|t| t.name.eq_ignore_ascii_case(&rule.table));
        let column = table.and_then(|t| {
            sa[t]
                .iter()
                .position(|c| c.name.eq_ignore_ascii_case(&rule.column))
        });
        let (Some(table), Some(column)) = (table, column) else {
            return Err(VerifyError::Plan(format!(
                "rule '{}' is about {}.{}, which is not a SENSITIVE column of the family",
                rule.name, rule.table, rule.column
            )));
        };
        let col = &sa[table][column];
        let values: Vec<Value> = match &rule.value {
            RuleValue::Null => vec![Value::Null],
            RuleValue::Value(text) => {
                vec![value_of(
                    normalize(col.numeric, Some(text.clone())).as_deref(),
                    col,
                )]
            }
            RuleValue::Every => {
                let mut held: BTreeSet<Value> = BTreeSet::new();
                for (s, slot) in layout.slots.iter().enumerate() {
                    if slot.table == table {
                        for tuple in published.at_slot[s].keys() {
                            held.insert(value_of(tuple[column].as_deref(), col));
                        }
                    }
                }
                held.into_iter().collect()
            }
        };
        out.extend(values.into_iter().map(|value| Target {
            rule,
            table,
            column,
            value,
        }));
    }
    Ok(out)
}

/// How far one group is from breaking a rule: t-t's mu of |G| trees, v-v's eta slots.
#[derive(Clone, Copy)]
enum Measure {
    Trees { mu: u64, size: u64 },
    Slots { eta: u64 },
}

impl Measure {
    /// Whether `self` is further than `other` (the worse group).
    fn worse_than(self, other: Measure) -> bool {
        match (self, other) {
            (Measure::Trees { mu, size }, Measure::Trees { mu: m2, size: s2 }) => {
                u128::from(mu) * u128::from(s2) > u128::from(m2) * u128::from(size)
            }
            (Measure::Slots { eta }, Measure::Slots { eta: e2 }) => eta > e2,
            _ => false,
        }
    }
}

/// (p,m)-privacy of every group under every rule.
#[allow(clippy::too_many_arguments)]
pub(super) fn rules(
    plan: &Plan,
    layout: &Layout,
    published: &Published,
    sa: &[Vec<SaCol>],
    l: usize,
    variant: Variant,
    rules: &[AnatomyRule],
    out: &mut Check,
) -> Result<(), VerifyError> {
    let targets = targets(plan, layout, published, sa, rules)?;
    if targets.is_empty() {
        return Ok(());
    }
    let mut trees_of: Vec<Vec<usize>> = vec![Vec::new(); layout.groups.len()];
    for (i, tree) in published.trees.iter().enumerate() {
        if let Some(g) = tree.group {
            trees_of[g].push(i);
        }
    }
    // Per target: groups breaking it, and the worst group with its measure.
    let mut broken: Vec<(usize, Option<(usize, Measure)>)> = vec![(0, None); targets.len()];
    let mut memo: HashMap<(u64, u64, u64, u64, u64), bool> = HashMap::default();
    for (g, group) in layout.groups.iter().enumerate() {
        let size = group.members.len() as u64;
        let held = held(layout, published, sa, variant, group, &trees_of[g]);
        for (i, t) in targets.iter().enumerate() {
            let counts = held.get(&(t.table, t.column, t.value.clone()));
            let (m, p) = (u64::from(t.rule.m), t.rule.p);
            let (measure, ok) = match variant {
                Variant::TreeTree => {
                    let mu = counts.map_or(0, |c| c.iter().filter(|&&n| n >= m).count() as u64);
                    let ok =
                        u128::from(mu) * u128::from(p.den) <= u128::from(p.num) * u128::from(size);
                    (Measure::Trees { mu, size }, ok)
                }
                Variant::VertexVertex => {
                    let eta = counts.map_or(0, |c| c[0]);
                    let ok = *memo
                        .entry((eta, l as u64, m, p.num, p.den))
                        .or_insert_with(|| binomial::within(eta, l as u64, m, p));
                    (Measure::Slots { eta }, ok)
                }
            };
            if ok {
                continue;
            }
            let entry = &mut broken[i];
            entry.0 += 1;
            if entry.1.is_none_or(|(_, worst)| measure.worse_than(worst)) {
                entry.1 = Some((g, measure));
            }
        }
    }
    for (t, (groups, worst)) in targets.iter().zip(broken) {
        let Some((g, measure)) = worst else { continue };
        let m = t.rule.m;
        let detail = match measure {
            Measure::Trees { mu, size } => format!(
                "{mu} of its {size} SA-trees hold the value {m} time(s) or more, mu/|G| = {mu}/{size} > p"
            ),
            Measure::Slots { eta } => format!(
                "the value is in {eta} of its SA-groups, so Pr[X >= {m}] = {:.4} > p (X ~ Binomial({eta}, 1/{l}))",
                binomial::tail(eta, l as u64, u64::from(m))
            ),
        };
        out.record(format!(
            "{} is broken in {groups} of {} group(s); worst, group {}: {detail}",
            t.describe(plan, sa),
            layout.groups.len(),
            layout.groups[g].label
        ));
    }
    Ok(())
}

/// What a group publishes of each sensitive value, as (table, column, value) -> its
/// occurrences per SA-tree (t-t), or the number of the group's slots holding it (v-v): the
/// counts both measures of (p,m)-privacy are read from.
fn held(
    layout: &Layout,
    published: &Published,
    sa: &[Vec<SaCol>],
    variant: Variant,
    group: &Group,
    trees: &[usize],
) -> HashMap<(usize, usize, Value), Vec<u64>> {
    let mut held: HashMap<(usize, usize, Value), Vec<u64>> = HashMap::default();
    match variant {
        Variant::TreeTree => {
            for (i, &tree) in trees.iter().enumerate() {
                for (s, tuple) in &published.trees[tree].map {
                    let table = layout.slots[*s].table;
                    for (k, col) in sa[table].iter().enumerate() {
                        let v = value_of(tuple[k].as_deref(), col);
                        let per_tree = held
                            .entry((table, k, v))
                            .or_insert_with(|| vec![0; trees.len()]);
                        per_tree[i] += 1;
                    }
                }
            }
        }
        Variant::VertexVertex => {
            for &s in &group.slots {
                let table = layout.slots[s].table;
                for (k, col) in sa[table].iter().enumerate() {
                    let here: BTreeSet<Value> = published.at_slot[s]
                        .keys()
                        .map(|tuple| value_of(tuple[k].as_deref(), col))
                        .collect();
                    for v in here {
                        held.entry((table, k, v)).or_insert_with(|| vec![0])[0] += 1;
                    }
                }
            }
        }
    }
    held
}
