//! The attack on an anatomy (000 Ch. 3): QI values are published exactly, so the facts find
//! the victim's QI-tree (usually alone: anatomy hides attributes, not identity); what hides
//! the victim's sensitive values is that only their group and slots are known. A row's
//! value is one of its slot's SA group, each equally likely (every reconstruction is); a
//! (p,m)-privacy rule bounds the chance that the victim holds a value m times or more:
//! t-t picks one of the group's SA-trees uniformly, v-v draws every slot independently.
//! Everything here is read from the SA side of the release.

use std::collections::HashMap;

use arrow::array::RecordBatch;

use super::{column_index, AttackError};
use crate::plan::{ColumnRole, Plan, Variant};
use crate::policy::RuleValue;
use crate::warehouse::{render_value, Warehouse};

/// A value's share of a slot's SA group.
pub(super) type Mass = Vec<(Option<String>, f64)>;

/// slot -> (value, count) of one column.
type SlotGroups = HashMap<i64, Vec<(Option<String>, f64)>>;
/// The (plan table, column, value) cells of one SA-tree.
type Tree = Vec<(usize, String, Option<String>)>;

/// The SA side as the adversary reads it.
pub(super) struct SaSide {
    variant: Variant,
    /// (plan table, column) -> slot -> (value, count).
    groups: HashMap<(usize, String), SlotGroups>,
    /// t-t: group id -> its SA-trees, each a list of (plan table, column, value) held.
    trees: HashMap<i64, Vec<Tree>>,
}

/// The SENSITIVE columns of plan table `t`.
fn sensitive(plan: &Plan, t: usize) -> Vec<String> {
    plan.tables[t]
        .columns
        .iter()
        .filter(|c| matches!(c.role, ColumnRole::Sensitive { .. }))
        .map(|c| c.name.clone())
        .collect()
}

async fn read(release: &Warehouse, name: &str) -> Result<Option<RecordBatch>, AttackError> {
    match release.table(name) {
        Some(meta) => Ok(Some(release.read_table(&meta.name, None, &[]).await?)),
        None => Ok(None),
    }
}

fn int(batch: &RecordBatch, col: usize, row: usize) -> i64 {
    render_value(batch.column(col).as_ref(), row)
        .and_then(|v| v.parse().ok())
        .unwrap_or(i64::MIN)
}

impl SaSide {
    pub(super) async fn read(
        plan: &Plan,
        release: &Warehouse,
        variant: Variant,
    ) -> Result<SaSide, AttackError> {
        let mut groups: HashMap<(usize, String), SlotGroups> = HashMap::new();
        let mut trees: HashMap<i64, Vec<Tree>> = HashMap::new();
        // t-t: sa_id of every table's rows -> (group, tree index in the group).
        let mut tree_of: Vec<HashMap<i64, (i64, usize)>> = Vec::new();
        for (ti, t) in plan.tables.iter().enumerate() {
            let columns = sensitive(plan, ti);
            let name = match variant {
                Variant::TreeTree => format!("{}__sa", t.name),
                Variant::VertexVertex => format!("{}__sag", t.name),
            };
            let Some(batch) = read(release, &name).await? else {
                // A table without SA columns has an SA side only as a t-t tree's way down.
                if !columns.is_empty() {
                    return Err(AttackError::MissingTable { table: name });
                }
                tree_of.push(HashMap::new());
                continue;
            };
            let slot = column_index(&batch, &name, "slot")?;
            let at: Vec<usize> = columns
                .iter()
                .map(|c| column_index(&batch, &name, c))
                .collect::<Result<_, _>>()?;
            let count = match variant {
                Variant::VertexVertex => Some(column_index(&batch, &name, "count")?),
                Variant::TreeTree => None,
            };
            let mut mine = HashMap::new();
            let link = match (variant, t.parent) {
                (Variant::TreeTree, None) => Some(column_index(&batch, &name, "group_id")?),
                (Variant::TreeTree, Some(_)) => Some(column_index(&batch, &name, "parent_sa_id")?),
                _ => None,
            };
            let id = match variant {
                Variant::TreeTree => Some(column_index(&batch, &name, "sa_id")?),
                Variant::VertexVertex => None,
            };
            for r in 0..batch.num_rows() {
                let n = count.map_or(1.0, |c| int(&batch, c, r) as f64);
                let values: Vec<Option<String>> = at
                    .iter()
                    .map(|&c| render_value(batch.column(c).as_ref(), r))
                    .collect();
                for (c, v) in columns.iter().zip(&values) {
                    let slots = groups.entry((ti, c.clone())).or_default();
                    let entry = slots.entry(int(&batch, slot, r)).or_default();
                    match entry.iter_mut().find(|(w, _)| w == v) {
                        Some(e) => e.1 += n,
                        None => entry.push((v.clone(), n)),
                    }
                }
                if let (Some(link), Some(id)) = (link, id) {
                    let owner = match t.parent {
                        None => {
                            let g = int(&batch, link, r);
                            let list = trees.entry(g).or_default();
                            list.push(Vec::new());
                            Some((g, list.len() - 1))
                        }
                        Some(p) => tree_of[p].get(&int(&batch, link, r)).copied(),
                    };
                    if let Some((g, i)) = owner {
                        mine.insert(int(&batch, id, r), (g, i));
                        if let Some(tree) = trees.get_mut(&g).and_then(|l| l.get_mut(i)) {
                            tree.extend(
                                columns
                                    .iter()
                                    .zip(&values)
                                    .map(|(c, v)| (ti, c.clone(), v.clone())),
                            );
                        }
                    }
                }
            }
            tree_of.push(mine);
        }
        Ok(SaSide {
            variant,
            groups,
            trees,
        })
    }

    /// The SA group of column `column` of table `t` at `slot`, as shares.
    pub(super) fn mass(&self, t: usize, column: &str, slot: i64) -> Mass {
        let Some(values) = self
            .groups
            .get(&(t, column.to_string()))
            .and_then(|s| s.get(&slot))
        else {
            return Vec::new();
        };
        let total: f64 = values.iter().map(|(_, n)| n).sum();
        values
            .iter()
            .map(|(v, n)| (v.clone(), n / total.max(1.0)))
            .collect()
    }

    /// The chance that the victim, a member of `group` with `slots` of the rule's table,
    /// holds `value` (after `class`) at least `m` times.
    fn at_least(&self, rule: &Asked<'_>, value: &Option<String>, group: i64, slots: &[i64]) -> f64 {
        let Asked {
            table: t,
            column,
            class,
            m,
        } = *rule;
        match self.variant {
            Variant::TreeTree => {
                let Some(trees) = self.trees.get(&group) else {
                    return 0.0;
                };
                let heavy = trees
                    .iter()
                    .filter(|tree| {
                        tree.iter()
                            .filter(|(tt, c, v)| *tt == t && c == column && class(v) == *value)
                            .count()
                            >= m as usize
                    })
                    .count();
                heavy as f64 / trees.len().max(1) as f64
            }
            Variant::VertexVertex => {
                // Poisson-binomial: dist[j] = Pr[j hits so far], capped at m.
                let mut dist = vec![0.0; m as usize + 1];
                dist[0] = 1.0;
                for &s in slots {
                    let p: f64 = self
                        .mass(t, column, s)
                        .iter()
                        .filter(|(v, _)| class(v) == *value)
                        .map(|(_, q)| q)
                        .sum();
                    for j in (0..=m as usize).rev() {
                        let stay = dist[j] * (1.0 - p);
                        let from = if j > 0 { dist[j - 1] * p } else { 0.0 };
                        dist[j] = if j == m as usize {
                            dist[j] + from
                        } else {
                            stay + from
                        };
                    }
                }
                dist[m as usize]
            }
        }
    }
}

/// A rule's column, how its values are classed (buckets), and its m.
struct Asked<'a> {
    table: usize,
    column: &'a str,
    class: &'a dyn Fn(&Option<String>) -> Option<String>,
    m: u32,
}

/// One rule of the declarations as the attack found it: the largest chance, over the
/// candidates and (for a rule on every value) the values, that the victim holds the value m
/// times or more, beside the p it must stay within.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RuleRisk {
    pub rule: String,
    pub column: String,
    /// The value of the largest chance (after the column's buckets).
    pub value: Option<String>,
    pub m: u32,
    pub p: String,
    pub probability: f64,
}

/// The candidates' groups and slots, read from the QI side.
pub(super) struct Placement {
    /// `group[e]` of every released entity.
    pub group: Vec<i64>,
    /// `slot[t][row]` of every released row.
    pub slot: Vec<Vec<i64>>,
}

impl Placement {
    pub(super) fn read(plan: &Plan, released: &[RecordBatch]) -> Result<Placement, AttackError> {
        let g = column_index(&released[0], &plan.tables[0].name, "group_id")?;
        let group = (0..released[0].num_rows())
            .map(|r| int(&released[0], g, r))
            .collect();
        let slot = released
            .iter()
            .zip(&plan.tables)
            .map(|(b, t)| {
                let s = column_index(b, &t.name, "slot")?;
                Ok((0..b.num_rows()).map(|r| int(b, s, r)).collect())
            })
            .collect::<Result<_, AttackError>>()?;
        Ok(Placement { group, slot })
    }
}

/// The risk of every declared rule for the `candidates` (entity rows), each rule's worst.
pub(super) fn rule_risks(
    plan: &Plan,
    side: &SaSide,
    place: &Placement,
    family: &[Vec<Vec<u32>>],
    candidates: &[u32],
) -> Vec<RuleRisk> {
    let crate::plan::Model::Anatomy { rules, .. } = &plan.params.model else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for rule in rules {
        let Some(t) = plan.tables.iter().position(|t| t.name == rule.table) else {
            continue;
        };
        let buckets = plan.tables[t]
            .columns
            .iter()
            .find(|c| c.name == rule.column)
            .and_then(|c| match &c.role {
                ColumnRole::Sensitive { buckets } => buckets.clone(),
                _ => None,
            });
        let class = |v: &Option<String>| -> Option<String> {
            match (&buckets, v) {
                (Some(b), Some(text)) => text
                    .parse::<f64>()
                    .ok()
                    .and_then(|x| crate::sensitive::bucket_of(b, x))
                    .map(|i| crate::sensitive::bucket_label(b, i)),
                _ => v.clone(),
            }
        };
        let values: Vec<Option<String>> = match &rule.value {
            RuleValue::Value(v) => vec![class(&Some(v.clone()))],
            RuleValue::Null => vec![None],
            RuleValue::Every => {
                let mut all: Vec<Option<String>> = side
                    .groups
                    .get(&(t, rule.column.clone()))
                    .into_iter()
                    .flat_map(|s| s.values().flatten().map(|(v, _)| class(v)))
                    .collect();
                all.sort();
                all.dedup();
                all
            }
        };
        let mut worst: Option<(f64, Option<String>)> = None;
        for &e in candidates {
            let slots: Vec<i64> = family[t][e as usize]
                .iter()
                .map(|&r| place.slot[t][r as usize])
                .collect();
            for v in &values {
                let asked = Asked {
                    table: t,
                    column: &rule.column,
                    class: &class,
                    m: rule.m,
                };
                let p = side.at_least(&asked, v, place.group[e as usize], &slots);
                if worst.as_ref().is_none_or(|(w, _)| p > *w) {
                    worst = Some((p, v.clone()));
                }
            }
        }
        if let Some((probability, value)) = worst {
            out.push(RuleRisk {
                rule: rule.name.clone(),
                column: format!("{}.{}", rule.table, rule.column),
                value,
                m: rule.m,
                p: rule.p.to_string(),
                probability,
            });
        }
    }
    out
}
