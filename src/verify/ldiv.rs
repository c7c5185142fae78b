//! Check 8, "l-diversity" (only under the l-diversity model): every released equivalence
//! class is l-diverse in the sense of 000 Def. 14 / 16. The members' trees are already known
//! to be QI-isomorphic (kanon.rs groups them by AHU canonical ids); what remains is to show
//! that SOME set of isomorphisms between them matches vertices so that, at every vertex
//! position, the k matched vertices (one per member) are l-diverse (Def. 7) on every
//! sensitive column of their table, separately:
//!
//! - probabilistic (Def. 6): every value occurs at most size / l times (`count * l <= size`);
//! - distinct: at least l different values.
//!
//! Values are compared after discretization: a column with BUCKETS (b0, ..., bn) compares
//! bucket numbers (`[b_i, b_i+1)`, the last bucket closed); NULL is a value of its own; a
//! non-NULL cell that is not a number or lies outside the buckets is reported (and counted as
//! a value of its own). The bucketing is this module's own code, not the anonymizer's.
//!
//! # The search
//!
//! Release order means nothing, so the matching is searched for, never read off row or key
//! order. The unit of work is a *group*: k vertices, one per member, already matched and all
//! with the same canonical id.
//!
//! 1. A group checks its own sensitive values.
//! 2. Its members' children are partitioned by canonical id. Isomorphic parents have the same
//!    multiset of children ids, so each class has the same multiplicity c in every member.
//!    Classes are independent of each other (vertices of different ids are never matched).
//! 3. A class with c = 1 leaves no choice: its k children are a group, checked recursively.
//!    A class whose table has no sensitive column in it or below needs no search at all: any
//!    matching of it works.
//! 4. Otherwise the k * c children must be split into c child groups (*slots*), one child per
//!    member per slot. Member 0's children fix the slots; members 1.. are placed one at a time
//!    by depth-first backtracking on an explicit stack (deep ECs cannot overflow the call
//!    stack). Each decision places one child of the current member into a free slot:
//!    - the child placed next is the one with the fewest slots left open to it (most
//!      constrained first: a child with none fails the branch at once);
//!    - slots are tried in order of how often they already hold the child's values, fewest
//!      first, which keeps counts balanced and finds the split without backtracking in the
//!      common case;
//!    - a slot is open to a child only if the slot's own values still can end up diverse:
//!      probabilistic, no value's count so far above k / l; distinct, distinct values so far
//!      plus members still to come at least l;
//!    - when a slot receives its last member it is a complete group and is checked
//!      recursively (steps 1-4 on its subtree); if that fails the placement is undone.
//! 5. Every placement and every group check is one step. An EC may spend one step per vertex
//!    of its trees (what a search without backtracking needs) plus a fixed budget for
//!    backtracking. When that runs out the EC fails with a message saying no diverse matching
//!    was found within the search budget: the check never passes what it could not prove.
//!    Nothing is memoized.

use std::collections::HashMap;

use super::data::{show_cell, Rule, TableData};
use super::kanon::{Classes, Trees, Vertex, NAMED};
use super::{Check, VerifyError};
use crate::plan::{ColumnRole, Diversity, Plan};

/// Backtracking steps one EC may spend, on top of one step per vertex of its trees, before it
/// fails for want of proof.
pub(super) const BUDGET: usize = 1_000_000;

/// One sensitive column of a family table, every released row reduced to a value code.
#[derive(Debug, Clone)]
pub(super) struct SaColumn {
    pub name: String,
    /// Per released row: equal codes are equal values for diversity.
    pub codes: Vec<u32>,
    /// What each code stands for in messages: a quoted value, NULL, or a bucket.
    pub labels: Vec<String>,
}

/// A sensitive cell after discretization: what diversity compares.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum Value {
    Null,
    /// The index of the bucket the number falls in.
    Bucket(usize),
    /// The rendered text: a categorical value, or a bucketed cell that fits no bucket.
    Text(String),
}

/// Why a bucketed cell has no bucket.
#[derive(Debug, PartialEq)]
pub(super) enum Unbucketed {
    NotNumeric,
    Outside,
}

/// The bucket `x` falls in: `[b_i, b_i+1)`, the last one also taking `b_n`. The plan keeps
/// boundaries increasing; [`check`] re-checks that before relying on it.
fn bucket_index(bounds: &[f64], x: f64) -> Option<usize> {
    let (first, last) = (*bounds.first()?, *bounds.last()?);
    if bounds.len() < 2 || !(x >= first && x <= last) {
        return None;
    }
    // Boundaries at or below x: at least one (x >= b0); the last of them opens x's bucket.
    let below = bounds.partition_point(|&b| b <= x);
    Some((below - 1).min(bounds.len() - 2))
}

/// A released cell's value for diversity. Bucketed cells are parsed from their rendered text,
/// which is the exact shortest form of any numeric cell.
pub(super) fn classify(cell: Option<&str>, buckets: Option<&[f64]>) -> Result<Value, Unbucketed> {
    let Some(text) = cell else {
        return Ok(Value::Null);
    };
    let Some(bounds) = buckets else {
        return Ok(Value::Text(text.to_string()));
    };
    let x: f64 = text.parse().map_err(|_| Unbucketed::NotNumeric)?;
    bucket_index(bounds, x)
        .map(Value::Bucket)
        .ok_or(Unbucketed::Outside)
}

/// How a code is shown: `'A'`, `NULL`, or `[3, 3.5)` (the last bucket `[3.5, 4]`).
pub(super) fn label(value: &Value, buckets: Option<&[f64]>) -> String {
    match (value, buckets) {
        (Value::Null, _) => "NULL".to_string(),
        (Value::Text(t), _) => show_cell(Some(t)),
        (Value::Bucket(i), Some(b)) => {
            let close = if i + 2 == b.len() { ']' } else { ')' };
            match (b.get(*i), b.get(i + 1)) {
                (Some(lo), Some(hi)) => format!("[{lo}, {hi}{close}"),
                _ => format!("bucket {i}"),
            }
        }
        (Value::Bucket(i), None) => format!("bucket {i}"),
    }
}

/// Boundaries this module can bucket with: at least two, finite, strictly increasing.
pub(super) fn valid_bounds(bounds: &[f64]) -> bool {
    bounds.len() >= 2
        && bounds.iter().all(|b| b.is_finite())
        && bounds.windows(2).all(|w| w[0] < w[1])
}

/// Codes one released column, reporting every cell that fits no bucket.
fn encode(
    tables: &[TableData],
    ti: usize,
    (name, at): (&str, usize),
    col: usize,
    buckets: Option<&[f64]>,
    out: &mut Check,
) -> SaColumn {
    let t = &tables[ti];
    let mut ids: HashMap<Value, u32> = HashMap::new();
    let mut labels = Vec::new();
    let mut codes = Vec::with_capacity(t.rel.rows());
    for row in 0..t.rel.rows() {
        let cell = t.rel.cell(col, row);
        let value = match classify(cell.as_deref(), buckets) {
            Ok(v) => v,
            Err(why) => {
                out.at([0, ti, at, t.rel_row(row)]);
                let what = match why {
                    Unbucketed::NotNumeric => "is not a number",
                    Unbucketed::Outside => "lies outside",
                };
                let bounds = buckets
                    .unwrap_or_default()
                    .iter()
                    .map(f64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ");
                out.record(format!(
                    "{}: {}.{name} = {} {what} the BUCKETS ({bounds}), so it has no bucket to count in",
                    t.describe(tables, row),
                    t.name,
                    show_cell(cell.as_deref()),
                ));
                Value::Text(cell.unwrap_or_default())
            }
        };
        let next = ids.len() as u32;
        let code = *ids.entry(value.clone()).or_insert_with(|| {
            labels.push(label(&value, buckets));
            next
        });
        codes.push(code);
    }
    SaColumn {
        name: name.to_string(),
        codes,
        labels,
    }
}

/// Every family table's sensitive columns as codes (in plan order), and per table whether it
/// or any table below it has one (the search skips subtrees without).
fn sensitive(
    plan: &Plan,
    tables: &[TableData],
    out: &mut Check,
) -> Result<(Vec<Vec<SaColumn>>, Vec<bool>), VerifyError> {
    let mut sa = Vec::with_capacity(tables.len());
    for (ti, t) in tables.iter().enumerate() {
        let Some(pt) = plan.tables.get(ti) else {
            return Err(VerifyError::Plan(format!("no plan for table '{}'", t.name)));
        };
        let mut cols = Vec::new();
        for (at, c) in pt.columns.iter().enumerate() {
            let ColumnRole::Sensitive { buckets } = &c.role else {
                continue;
            };
            if let Some(b) = buckets {
                if !valid_bounds(b) {
                    return Err(VerifyError::Plan(format!(
                        "BUCKETS of '{}.{}' are not at least two finite increasing boundaries",
                        t.name, c.name
                    )));
                }
            }
            let found = t
                .content
                .iter()
                .find(|x| x.name == c.name && matches!(x.rule, Rule::Exact { .. }));
            let Some(content) = found else {
                // The plan's and the release's shape, alike in every partition.
                out.shared_at([0, ti, at, 0]);
                out.record(format!(
                    "{}.{} is missing from the release, so its diversity cannot be checked",
                    t.name, c.name
                ));
                continue;
            };
            cols.push(encode(
                tables,
                ti,
                (&c.name, at),
                content.rel,
                buckets.as_deref(),
                out,
            ));
        }
        sa.push(cols);
    }
    let mut below: Vec<bool> = sa.iter().map(|cols| !cols.is_empty()).collect();
    // Children follow their parents in plan order: walking backwards settles a child first.
    for ti in (0..tables.len()).rev() {
        if let (true, Some(p)) = (below[ti], tables[ti].parent) {
            if let Some(b) = below.get_mut(p) {
                *b = true;
            }
        }
    }
    Ok((sa, below))
}

/// Checks every EC kanon formed under the plan's diversity rule (nothing under k-anonymity),
/// spending at most `budget` search steps on each.
pub(super) fn check(
    plan: &Plan,
    tables: &[TableData],
    classes: &Classes,
    hint: &[Vec<Option<u32>>],
    budget: usize,
    out: &mut Check,
) -> Result<(), VerifyError> {
    let Some((l, rule)) = plan.params.model.diversity() else {
        return Ok(());
    };
    let (sa, below) = sensitive(plan, tables, out)?;
    if !below.first().copied().unwrap_or(false) {
        return Ok(());
    }
    let trees = &classes.trees;
    let sizes = tree_sizes(trees);
    for members in &classes.groups {
        let roots: Vec<Vertex> = members.iter().map(|&r| (0, r)).collect();
        // A search that never backtracks spends at most one step per vertex; that much is
        // always allowed, so big trees are not failed for their size. `budget` bounds the
        // backtracking on top.
        let vertices: usize = members.iter().filter_map(|&r| sizes.first()?.get(r)).sum();
        let mut search = Search {
            trees,
            sa: &sa,
            below: &below,
            l,
            rule,
            hint,
            steps_left: budget.saturating_add(vertices),
        };
        if let Err(failure) = search.group(&roots) {
            out.at([1, tables[0].rel_row(members[0]), 0, 0]);
            // Out of budget nothing is known either way: say "not proven", not "not".
            let verdict = match failure {
                Failure::Budget => "is not proven",
                _ => "is not",
            };
            let kind = match rule {
                Diversity::Probabilistic => "",
                Diversity::Distinct => " (distinct)",
            };
            out.record(format!(
                "{} {verdict} {l}-diverse{kind}: {}",
                describe_class(tables, members),
                explain(&failure, tables, &sa, l, budget)
            ));
        }
    }
    Ok(())
}

/// Per table, the number of vertices in every released row's subtree (itself included).
fn tree_sizes(trees: &Trees) -> Vec<Vec<usize>> {
    let mut sizes: Vec<Vec<usize>> = trees.kids.iter().map(|k| vec![1; k.len()]).collect();
    // Children sit in later tables than their parents: walking backwards sums them first.
    for ti in (0..trees.kids.len()).rev() {
        for (row, kids) in trees.kids[ti].iter().enumerate() {
            let below: usize = kids
                .iter()
                .filter_map(|&(ct, cr)| sizes.get(ct)?.get(cr).copied())
                .sum();
            sizes[ti][row] += below;
        }
    }
    sizes
}

/// "equivalence class of 3 entities (students key 1, students key 2, students key 3)".
fn describe_class(tables: &[TableData], members: &[usize]) -> String {
    let Some((named, noun)) = super::kanon::name_members(tables, members) else {
        return format!("equivalence class of {} entities", members.len());
    };
    format!("equivalence class of {} {noun} ({named})", members.len())
}

/// Where a vertex sits, from its root: `students > courses(course = 'Science')`. The root's
/// labels are the EC's own and left out; every other step names its table and QI labels,
/// which all matched vertices share.
fn position(tables: &[TableData], v: Vertex) -> String {
    let mut steps = Vec::new();
    let mut at = Some(v);
    // A parent table precedes its child, so a path is at most one step per table.
    for _ in 0..tables.len() {
        let Some((ti, row)) = at else { break };
        let Some(t) = tables.get(ti) else { break };
        let Some(p) = t.parent else {
            steps.push(t.name.clone());
            break;
        };
        let labels: Vec<String> = t
            .content
            .iter()
            .filter(|c| matches!(c.rule, Rule::Qi(_)))
            .map(|c| {
                format!(
                    "{} = {}",
                    c.name,
                    show_cell(t.rel.cell(c.rel, row).as_deref())
                )
            })
            .collect();
        steps.push(if labels.is_empty() {
            t.name.clone()
        } else {
            format!("{}({})", t.name, labels.join(", "))
        });
        at = t.rel_parent.get(row).copied().flatten().map(|pr| (p, pr));
    }
    steps.reverse();
    steps.join(" > ")
}

/// The reason part of a violation.
fn explain(
    failure: &Failure,
    tables: &[TableData],
    sa: &[Vec<SaColumn>],
    l: usize,
    budget: usize,
) -> String {
    let column = |v: Vertex, ci: usize| -> (String, Option<&SaColumn>) {
        let table = tables.get(v.0).map_or("?", |t| t.name.as_str());
        let col = sa.get(v.0).and_then(|cols| cols.get(ci));
        let name = col.map_or("?", |c| c.name.as_str());
        (format!("{table}.{name}"), col)
    };
    match failure {
        Failure::Values {
            vertex,
            column: ci,
            problem,
        } => {
            let (name, col) = column(*vertex, *ci);
            let at = position(tables, *vertex);
            match problem {
                Problem::Frequent { code, count, size } => {
                    let value = col
                        .and_then(|c| c.labels.get(*code as usize))
                        .map_or("?", String::as_str);
                    format!("{name} at {at} has value {value} {count} times in {size}")
                }
                Problem::FewDistinct { distinct, size } => format!(
                    "{name} at {at} has {distinct} distinct value(s) in {size}, fewer than {l}"
                ),
            }
        }
        Failure::NoSplit { candidates } => {
            let Some(&example) = candidates.first().and_then(|c| c.first()) else {
                return "no diverse matching of interchangeable siblings".to_string();
            };
            let c = candidates.first().map_or(0, Vec::len);
            let mut text = format!(
                "no matching of the {c} interchangeable {} vertices of each member makes every matched group {l}-diverse",
                position(tables, example)
            );
            for ci in 0..sa.get(example.0).map_or(0, Vec::len) {
                let (name, col) = column(example, ci);
                let Some(col) = col else { continue };
                let mut per_member: Vec<String> = candidates
                    .iter()
                    .take(NAMED)
                    .map(|kids| {
                        let values: Vec<&str> = kids
                            .iter()
                            .map(|&(_, row)| {
                                col.codes
                                    .get(row)
                                    .and_then(|&code| col.labels.get(code as usize))
                                    .map_or("?", String::as_str)
                            })
                            .collect();
                        format!("{{{}}}", values.join(", "))
                    })
                    .collect();
                if candidates.len() > NAMED {
                    per_member.push("...".to_string());
                }
                text.push_str(&format!(
                    "; {name} per member: {}",
                    per_member.join(", ")
                ));
            }
            text
        }
        Failure::Shape { vertex } => format!(
            "the members' trees do not pair up below {} although their canonical forms agree",
            position(tables, *vertex)
        ),
        Failure::Budget => format!(
            "verification could not find a diverse matching within the search budget ({budget} backtracking steps)"
        ),
    }
}

/// Why matched vertices, or a split of interchangeable siblings, are not diverse.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Failure {
    /// The group at `vertex` (member 0's copy) breaks the rule on its table's SA `column`.
    Values {
        vertex: Vertex,
        column: usize,
        problem: Problem,
    },
    /// No split of one class of interchangeable siblings is diverse all the way down.
    /// `candidates[m]` are member m's children of that class.
    NoSplit { candidates: Vec<Vec<Vertex>> },
    /// Members' children do not pair up by canonical id: the input is not one EC.
    Shape { vertex: Vertex },
    /// The step budget ran out before a diverse matching was found.
    Budget,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Problem {
    /// Probabilistic: `code` occurs `count` times in `size`, and `count * l > size`.
    Frequent {
        code: u32,
        count: usize,
        size: usize,
    },
    /// Distinct: only `distinct` different values in `size`.
    FewDistinct { distinct: usize, size: usize },
}

/// One EC's search: the read-only forest and its step budget.
pub(super) struct Search<'a> {
    pub trees: &'a Trees,
    /// Per table, its sensitive columns.
    pub sa: &'a [Vec<SaColumn>],
    /// Per table, whether it or a table below it has a sensitive column.
    pub below: &'a [bool],
    pub l: usize,
    pub rule: Diversity,
    /// Per table, per released row, the anonymizer's group (module [`super::witness`]);
    /// empty or `None` where there is none.
    pub hint: &'a [Vec<Option<u32>>],
    pub steps_left: usize,
}

/// One open decision of [`Search::split`]: where to put `child` of `member`.
struct Frame {
    member: usize,
    child: usize,
    /// Slots open to the child, best first.
    options: Vec<usize>,
    next: usize,
    /// The slot the child sits in now, if any.
    placed: Option<usize>,
}

/// The state of one split: who sits in which slot, and each slot's value counts.
struct Slots<'s> {
    /// `cands[m]` are member m's children of the class.
    cands: &'s [Vec<Vertex>],
    /// Per slot, its vertices so far, member 0 first.
    slots: Vec<Vec<Vertex>>,
    /// Per slot, per SA column, count of each code so far.
    counts: Vec<Vec<HashMap<u32, usize>>>,
    /// Per member, per child, its slot once placed.
    seat: Vec<Vec<Option<usize>>>,
    /// Children placed (members 1..) so far: the current member is `1 + placed / c`.
    placed: usize,
}

impl Search<'_> {
    /// One step of the budget; running out aborts the whole EC.
    fn tick(&mut self) -> Result<(), Failure> {
        match self.steps_left.checked_sub(1) {
            Some(left) => {
                self.steps_left = left;
                Ok(())
            }
            None => Err(Failure::Budget),
        }
    }

    fn columns(&self, table: usize) -> &[SaColumn] {
        self.sa.get(table).map_or(&[], Vec::as_slice)
    }

    fn code(&self, v: Vertex, ci: usize) -> u32 {
        // A row past the codes cannot come from the same release; u32::MAX is its own value.
        self.columns(v.0)
            .get(ci)
            .and_then(|c| c.codes.get(v.1))
            .copied()
            .unwrap_or(u32::MAX)
    }

    /// Steps 1-3 of the module doc for one matched group (one vertex per member).
    pub(super) fn group(&mut self, members: &[Vertex]) -> Result<(), Failure> {
        self.tick()?;
        self.own_values(members)?;
        for class in self.classes(members)? {
            if class.first().map_or(0, Vec::len) == 1 {
                let forced: Vec<Vertex> = class.iter().filter_map(|k| k.first().copied()).collect();
                self.group(&forced)?;
            } else {
                self.split(&class)?;
            }
        }
        Ok(())
    }

    /// The group's own values, each SA column separately (Def. 7 via Def. 6).
    fn own_values(&self, members: &[Vertex]) -> Result<(), Failure> {
        let Some(&first) = members.first() else {
            return Ok(());
        };
        let size = members.len();
        for ci in 0..self.columns(first.0).len() {
            let mut counts: HashMap<u32, usize> = HashMap::new();
            for &v in members {
                *counts.entry(self.code(v, ci)).or_default() += 1;
            }
            let problem = match self.rule {
                Diversity::Probabilistic => counts
                    .iter()
                    .filter(|&(_, &n)| n * self.l > size)
                    .max_by_key(|&(&code, &n)| (n, std::cmp::Reverse(code)))
                    .map(|(&code, &count)| Problem::Frequent { code, count, size }),
                Diversity::Distinct => (counts.len() < self.l).then_some(Problem::FewDistinct {
                    distinct: counts.len(),
                    size,
                }),
            };
            if let Some(problem) = problem {
                return Err(Failure::Values {
                    vertex: first,
                    column: ci,
                    problem,
                });
            }
        }
        Ok(())
    }

    /// The members' children by canonical id, skipping classes with no SA in or below their
    /// table: `classes[i][m]` are member m's children of class i.
    fn classes(&self, members: &[Vertex]) -> Result<Vec<Vec<Vec<Vertex>>>, Failure> {
        let form = |v: Vertex| -> usize {
            self.trees
                .form
                .get(v.0)
                .and_then(|f| f.get(v.1))
                .copied()
                .unwrap_or(usize::MAX)
        };
        // Per member: runs of children with equal ids, in id order.
        let mut runs: Vec<Vec<(usize, Vec<Vertex>)>> = Vec::with_capacity(members.len());
        for &v in members {
            let mut kids: Vec<Vertex> = self
                .trees
                .kids
                .get(v.0)
                .and_then(|k| k.get(v.1))
                .cloned()
                .unwrap_or_default();
            kids.retain(|c| self.below.get(c.0).copied().unwrap_or(false));
            kids.sort_by_key(|&c| (form(c), c));
            let mut mine: Vec<(usize, Vec<Vertex>)> = Vec::new();
            for c in kids {
                match mine.last_mut() {
                    Some((f, list)) if *f == form(c) => list.push(c),
                    _ => mine.push((form(c), vec![c])),
                }
            }
            runs.push(mine);
        }
        let Some(shape) = runs.first().map(|r| {
            r.iter()
                .map(|(f, list)| (*f, list.len()))
                .collect::<Vec<_>>()
        }) else {
            return Ok(Vec::new());
        };
        let mut classes: Vec<Vec<Vec<Vertex>>> =
            vec![Vec::with_capacity(members.len()); shape.len()];
        for (m, mine) in runs.into_iter().enumerate() {
            let same = mine.len() == shape.len()
                && mine
                    .iter()
                    .zip(&shape)
                    .all(|((f, list), (g, n))| f == g && list.len() == *n);
            if !same {
                return Err(Failure::Shape {
                    vertex: members.get(m).copied().unwrap_or_default(),
                });
            }
            for (class, (_, list)) in classes.iter_mut().zip(mine) {
                class.push(list);
            }
        }
        Ok(classes)
    }

    /// Step 4, first try: the split the anonymizer's groups propose, if every child of the
    /// class has a group and each group holds exactly one child per member. `Ok(true)` if
    /// every proposed group checks out (recursively); `Ok(false)` sends the caller to the
    /// search. Budget and shape failures end the EC as anywhere else.
    fn hinted_split(&mut self, cands: &[Vec<Vertex>]) -> Result<bool, Failure> {
        let hint = |v: Vertex| {
            self.hint
                .get(v.0)
                .and_then(|t| t.get(v.1))
                .copied()
                .flatten()
        };
        let Some(first) = cands.first() else {
            return Ok(true);
        };
        let mut by_member: Vec<HashMap<u32, Vertex>> = Vec::with_capacity(cands.len());
        for kids in cands {
            let mut seen = HashMap::with_capacity(kids.len());
            for &v in kids {
                let Some(g) = hint(v) else {
                    return Ok(false);
                };
                if seen.insert(g, v).is_some() {
                    return Ok(false);
                }
            }
            by_member.push(seen);
        }
        let mut groups = Vec::with_capacity(first.len());
        for &v in first {
            let Some(g) = hint(v) else {
                return Ok(false);
            };
            let group: Option<Vec<Vertex>> = by_member.iter().map(|m| m.get(&g).copied()).collect();
            let Some(group) = group else {
                return Ok(false);
            };
            groups.push(group);
        }
        for group in groups {
            match self.group(&group) {
                Ok(()) => {}
                Err(e @ (Failure::Budget | Failure::Shape { .. })) => return Err(e),
                Err(_) => return Ok(false),
            }
        }
        Ok(true)
    }

    /// Step 4 of the module doc: split one class (c >= 2 per member) into c diverse groups.
    fn split(&mut self, cands: &[Vec<Vertex>]) -> Result<(), Failure> {
        if self.hinted_split(cands)? {
            return Ok(());
        }
        let no_split = || Failure::NoSplit {
            candidates: cands.to_vec(),
        };
        let Some(first) = cands.first() else {
            return Ok(());
        };
        let (k, c) = (cands.len(), first.len());
        let n_cols = first.first().map_or(0, |v| self.columns(v.0).len());
        let mut st = Slots {
            cands,
            slots: vec![Vec::with_capacity(k); c],
            counts: vec![vec![HashMap::new(); n_cols]; c],
            seat: cands.iter().map(|kids| vec![None; kids.len()]).collect(),
            placed: 0,
        };
        for (s, &v) in first.iter().enumerate() {
            self.count(&mut st, s, v, true);
            st.slots[s].push(v);
        }
        // One member in, one value, one distinct: if even that can never be diverse (k < l
        // under either rule), no split is.
        if n_cols > 0 && !self.partial_ok(1, 1, 1, k) {
            return Err(no_split());
        }
        if k == 1 {
            // Every slot is complete already, and forced.
            for group in st.slots.clone() {
                self.group(&group)?;
            }
            return Ok(());
        }
        let total = (k - 1) * c;
        let mut stack: Vec<Frame> = Vec::new();
        let mut descend = true;
        loop {
            if descend {
                if st.placed == total {
                    return Ok(());
                }
                stack.push(self.decide(&st, k, c));
            }
            // The top frame's next option, after undoing its current one; an exhausted frame
            // is popped, which backtracks into the frame below.
            let Some(top) = stack.last_mut() else {
                return Err(no_split());
            };
            let (m, j) = (top.member, top.child);
            if let Some(s) = top.placed.take() {
                self.unseat(&mut st, m, j, s);
            }
            let Some(&s) = top.options.get(top.next) else {
                stack.pop();
                descend = false;
                continue;
            };
            top.next += 1;
            top.placed = Some(s);
            self.tick()?;
            self.seat(&mut st, m, j, s);
            descend = true;
            if m + 1 == k {
                let group = st.slots[s].clone();
                match self.group(&group) {
                    Ok(()) => {}
                    Err(e @ (Failure::Budget | Failure::Shape { .. })) => return Err(e),
                    // Not this way: the next round undoes the placement and tries another.
                    Err(_) => descend = false,
                }
            }
        }
    }

    /// The next decision: the current member's most constrained unplaced child, with the
    /// slots open to it, least-repeating first.
    fn decide(&self, st: &Slots<'_>, k: usize, c: usize) -> Frame {
        let member = 1 + st.placed / c;
        let mut best: Option<(usize, Vec<usize>)> = None;
        let kids = st.cands.get(member).map_or(&[][..], Vec::as_slice);
        for (j, &v) in kids.iter().enumerate() {
            if st.seat[member][j].is_some() {
                continue;
            }
            let mut options: Vec<(usize, usize)> = (0..c)
                .filter(|&s| st.slots[s].len() == member && self.fits(st, s, v, member, k))
                .map(|s| (self.repeats(st, s, v), s))
                .collect();
            options.sort_unstable();
            let options: Vec<usize> = options.into_iter().map(|(_, s)| s).collect();
            if best.as_ref().is_none_or(|(_, b)| options.len() < b.len()) {
                let stuck = options.is_empty();
                best = Some((j, options));
                if stuck {
                    break;
                }
            }
        }
        // No unplaced child cannot happen while placed < total; an empty frame backtracks.
        let (child, options) = best.unwrap_or_default();
        Frame {
            member,
            child,
            options,
            next: 0,
            placed: None,
        }
    }

    /// How many of `v`'s values slot `s` already holds (fewer spreads values evenly).
    fn repeats(&self, st: &Slots<'_>, s: usize, v: Vertex) -> usize {
        st.counts[s]
            .iter()
            .enumerate()
            .map(|(ci, counts)| counts.get(&self.code(v, ci)).copied().unwrap_or(0))
            .sum()
    }

    /// Whether slot `s` (holding members 0..member) can take `v` of `member` and still end
    /// up diverse once all k members are in.
    fn fits(&self, st: &Slots<'_>, s: usize, v: Vertex, member: usize, k: usize) -> bool {
        st.counts[s].iter().enumerate().all(|(ci, counts)| {
            let have = counts.get(&self.code(v, ci)).copied().unwrap_or(0);
            let distinct = counts.len() + usize::from(have == 0);
            self.partial_ok(have + 1, distinct, member + 1, k)
        })
    }

    /// The partial feasibility test: with `filled` of `k` members in, a value counted
    /// `count` times and `distinct` values so far, can the group still be diverse?
    fn partial_ok(&self, count: usize, distinct: usize, filled: usize, k: usize) -> bool {
        match self.rule {
            Diversity::Probabilistic => count * self.l <= k,
            Diversity::Distinct => distinct + k.saturating_sub(filled) >= self.l,
        }
    }

    /// Adds (or takes back) `v`'s values to slot `s`'s counts. A count that drops to zero is
    /// removed, so a map's length is the slot's number of distinct values.
    fn count(&self, st: &mut Slots<'_>, s: usize, v: Vertex, add: bool) {
        for (ci, counts) in st.counts[s].iter_mut().enumerate() {
            let code = self.code(v, ci);
            if add {
                *counts.entry(code).or_default() += 1;
            } else if let Some(n) = counts.get_mut(&code) {
                *n -= 1;
                if *n == 0 {
                    counts.remove(&code);
                }
            }
        }
    }

    /// Puts child `j` of member `m` into slot `s`.
    fn seat(&self, st: &mut Slots<'_>, m: usize, j: usize, s: usize) {
        let v = st.cands[m][j];
        self.count(st, s, v, true);
        st.slots[s].push(v);
        st.seat[m][j] = Some(s);
        st.placed += 1;
    }

    /// Undoes [`Self::seat`]; slots fill member by member, so `v` is the slot's last.
    fn unseat(&self, st: &mut Slots<'_>, m: usize, j: usize, s: usize) {
        let v = st.cands[m][j];
        self.count(st, s, v, false);
        st.slots[s].pop();
        st.seat[m][j] = None;
        st.placed -= 1;
    }
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;

    /// A hand-built forest: table 0 the roots; every other table one SA column (or none).
    struct Forest {
        trees: Trees,
        sa: Vec<Vec<SaColumn>>,
        below: Vec<bool>,
        hint: Vec<Vec<Option<u32>>>,
    }

    impl Forest {
        /// `with_sa[t]`: whether table t has one sensitive column; `parent[t]`: its parent.
        fn new(with_sa: &[bool], parent: &[Option<usize>]) -> Forest {
            let n = with_sa.len();
            let sa = with_sa
                .iter()
                .map(|&has| {
                    if has {
                        vec![SaColumn {
                            name: "x".to_string(),
                            codes: Vec::new(),
                            labels: (0..10).map(|c| format!("'{c}'")).collect(),
                        }]
                    } else {
                        Vec::new()
                    }
                })
                .collect();
            let mut below = with_sa.to_vec();
            for t in (0..n).rev() {
                if let (true, Some(p)) = (below[t], parent[t]) {
                    below[p] = true;
                }
            }
            Forest {
                trees: Trees {
                    form: vec![Vec::new(); n],
                    kids: vec![Vec::new(); n],
                },
                sa,
                below,
                hint: Vec::new(),
            }
        }

        /// Adds a vertex of `table` with canonical id `form` under `parent`, with SA `code`
        /// (ignored for a table without a sensitive column).
        fn add(&mut self, table: usize, form: usize, parent: Option<Vertex>, code: u32) -> Vertex {
            let row = self.trees.form[table].len();
            self.trees.form[table].push(form);
            self.trees.kids[table].push(Vec::new());
            if let Some(col) = self.sa[table].first_mut() {
                col.codes.push(code);
            }
            if let Some((pt, pr)) = parent {
                self.trees.kids[pt][pr].push((table, row));
            }
            (table, row)
        }

        fn search(&self, l: usize, rule: Diversity, budget: usize) -> Search<'_> {
            Search {
                trees: &self.trees,
                sa: &self.sa,
                below: &self.below,
                l,
                rule,
                hint: &self.hint,
                steps_left: budget,
            }
        }

        fn diverse(&self, roots: &[Vertex], l: usize, rule: Diversity) -> Result<(), Failure> {
            self.search(l, rule, BUDGET).group(roots)
        }
    }

    /// Member m of a two-member EC: child codes and, per child, grandchild codes. Children
    /// share one id, grandchildren another, so all siblings are interchangeable.
    fn two_levels(members: &[&[(u32, &[u32])]]) -> (Forest, Vec<Vertex>) {
        let mut f = Forest::new(&[false, true, true], &[None, Some(0), Some(1)]);
        let mut roots = Vec::new();
        for kids in members {
            let root = f.add(0, 0, None, 0);
            roots.push(root);
            for &(code, grandkids) in kids.iter() {
                let child = f.add(1, 1, Some(root), code);
                for &g in grandkids {
                    f.add(2, 2, Some(child), g);
                }
            }
        }
        (f, roots)
    }

    #[test]
    fn buckets_are_half_open_and_the_last_is_closed() {
        let b = [0.0, 2.0, 3.0, 3.5, 4.0];
        assert_eq!(bucket_index(&b, 0.0), Some(0));
        assert_eq!(bucket_index(&b, 1.99), Some(0));
        assert_eq!(bucket_index(&b, 2.0), Some(1));
        assert_eq!(bucket_index(&b, 3.49), Some(2));
        assert_eq!(bucket_index(&b, 3.5), Some(3));
        assert_eq!(bucket_index(&b, 4.0), Some(3));
        assert_eq!(bucket_index(&b, 4.01), None);
        assert_eq!(bucket_index(&b, -0.5), None);
        assert_eq!(bucket_index(&b, f64::NAN), None);
        assert_eq!(bucket_index(&[1.0], 1.0), None);
        assert_eq!(label(&Value::Bucket(2), Some(&b)), "[3, 3.5)");
        assert_eq!(label(&Value::Bucket(3), Some(&b)), "[3.5, 4]");
    }

    #[test]
    fn cells_are_classified_by_bucket_null_or_text() {
        let b = [0.0, 2.0, 4.0];
        assert_eq!(classify(Some("1.5"), Some(&b)), Ok(Value::Bucket(0)));
        assert_eq!(classify(Some("3"), Some(&b)), Ok(Value::Bucket(1)));
        assert_eq!(classify(None, Some(&b)), Ok(Value::Null));
        assert_eq!(classify(Some("4.5"), Some(&b)), Err(Unbucketed::Outside));
        assert_eq!(classify(Some("A"), Some(&b)), Err(Unbucketed::NotNumeric));
        assert_eq!(classify(Some("A"), None), Ok(Value::Text("A".to_string())));
        assert_eq!(classify(None, None), Ok(Value::Null));
        assert!(!valid_bounds(&[1.0, 1.0]));
        assert!(!valid_bounds(&[0.0, f64::INFINITY]));
        assert!(valid_bounds(&b));
    }

    #[test]
    fn deeper_search_backtracks_at_the_upper_level() {
        // Pairing a1 with b1 puts {5, 5} with {5, 5} below, which no grandchild split fixes;
        // the upper level has to be re-paired (a1-b2, a2-b1) for the tree to pass.
        let (f, roots) =
            two_levels(&[&[(1, &[5, 5]), (2, &[6, 7])], &[(3, &[5, 5]), (4, &[8, 9])]]);
        assert_eq!(f.diverse(&roots, 2, Diversity::Probabilistic), Ok(()));
        // The same with the members swapped, and under the distinct rule.
        let (f, roots) =
            two_levels(&[&[(3, &[5, 5]), (4, &[8, 9])], &[(1, &[5, 5]), (2, &[6, 7])]]);
        assert_eq!(f.diverse(&roots, 2, Diversity::Distinct), Ok(()));
    }

    #[test]
    fn deeper_search_reports_the_class_no_split_fixes() {
        // Both of a's children carry {5, 5}; so does b2: whichever child of a meets b2 fails.
        let (f, roots) =
            two_levels(&[&[(1, &[5, 5]), (2, &[5, 5])], &[(3, &[5, 6]), (4, &[5, 5])]]);
        let Err(Failure::NoSplit { candidates }) = f.diverse(&roots, 2, Diversity::Probabilistic)
        else {
            panic!("expected no split");
        };
        assert_eq!(candidates, vec![vec![(1, 0), (1, 1)], vec![(1, 2), (1, 3)]]);
    }

    #[test]
    fn forced_groups_report_their_values() {
        // One child each: no choice, and the children share value 7.
        let (f, roots) = two_levels(&[&[(7, &[])], &[(7, &[])]]);
        assert_eq!(
            f.diverse(&roots, 2, Diversity::Probabilistic),
            Err(Failure::Values {
                vertex: (1, 0),
                column: 0,
                problem: Problem::Frequent {
                    code: 7,
                    count: 2,
                    size: 2
                },
            })
        );
        assert_eq!(
            f.diverse(&roots, 2, Diversity::Distinct),
            Err(Failure::Values {
                vertex: (1, 0),
                column: 0,
                problem: Problem::FewDistinct {
                    distinct: 1,
                    size: 2
                },
            })
        );
    }

    #[test]
    fn subtrees_without_sensitive_values_need_no_search() {
        // Table 1 has no SA and nothing below it does: no step is spent on its vertices.
        let mut f = Forest::new(&[true, false], &[None, Some(0)]);
        let roots: Vec<Vertex> = (0..2).map(|m| f.add(0, 0, None, m)).collect();
        for &r in &roots {
            for _ in 0..8 {
                f.add(1, 1, Some(r), 0);
            }
        }
        let mut search = f.search(2, Diversity::Probabilistic, 1);
        assert_eq!(search.group(&roots), Ok(()));
    }

    #[test]
    fn running_out_of_budget_fails_closed() {
        let (f, roots) =
            two_levels(&[&[(1, &[5, 5]), (2, &[6, 7])], &[(3, &[5, 5]), (4, &[8, 9])]]);
        for budget in 0..4 {
            let mut search = f.search(2, Diversity::Probabilistic, budget);
            assert_eq!(
                search.group(&roots),
                Err(Failure::Budget),
                "budget {budget}"
            );
        }
    }

    /// The two-level EC of `running_out_of_budget_fails_closed`: only course 0 with course 3
    /// (and 1 with 2) gives diverse books.
    fn hinted(courses: [u32; 4], books: [u32; 8]) -> (Forest, Vec<Vertex>) {
        let (mut f, roots) =
            two_levels(&[&[(1, &[5, 5]), (2, &[6, 7])], &[(3, &[5, 5]), (4, &[8, 9])]]);
        f.hint = vec![
            vec![Some(0), Some(0)],
            courses.map(Some).to_vec(),
            books.map(Some).to_vec(),
        ];
        (f, roots)
    }

    #[test]
    fn the_anonymizers_grouping_is_checked_first_and_saves_the_search() {
        // Course rows 0, 1 (member 0) and 2, 3 (member 1); books 0-3 and 4-7 likewise.
        let (f, roots) = hinted([10, 11, 11, 10], [20, 21, 22, 23, 22, 23, 20, 21]);
        // Seven group checks and no placement: the root, two course groups, four book groups.
        let mut search = f.search(2, Diversity::Probabilistic, 7);
        assert_eq!(search.group(&roots), Ok(()));
        assert_eq!(search.steps_left, 0);
    }

    #[test]
    fn a_wrong_or_partial_grouping_falls_back_to_the_search() {
        // Pairs course 0 with course 2: its books (5, 5) twice are not 2-diverse.
        let (f, roots) = hinted([10, 11, 10, 11], [20, 21, 22, 23, 20, 21, 22, 23]);
        assert_eq!(f.diverse(&roots, 2, Diversity::Probabilistic), Ok(()));
        // A grouping that names one child twice for a member is no split at all.
        let (f, roots) = hinted([10, 10, 11, 11], [20, 20, 20, 20, 20, 20, 20, 20]);
        assert_eq!(f.diverse(&roots, 2, Diversity::Probabilistic), Ok(()));
    }

    #[test]
    fn no_grouping_makes_a_non_diverse_class_pass() {
        // Both members' courses have books (5, 5): no matching is 2-diverse below.
        let (mut f, roots) =
            two_levels(&[&[(1, &[5, 5]), (2, &[5, 5])], &[(3, &[5, 5]), (4, &[5, 5])]]);
        f.hint = vec![
            vec![Some(0), Some(0)],
            vec![Some(10), Some(11), Some(10), Some(11)],
            (0..8).map(|b| Some(20 + (b % 2))).collect(),
        ];
        assert!(f.diverse(&roots, 2, Diversity::Probabilistic).is_err());
    }

    #[test]
    fn shuffled_latin_square_is_found_without_much_search() {
        // Member m's child j holds (j + m) mod c, listed in a scrambled order: a split into
        // all-different slots exists (the Latin square), and neither row order gives it.
        let (k, c) = (6, 8);
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut f = Forest::new(&[false, true], &[None, Some(0)]);
        let mut roots = Vec::new();
        for m in 0..k {
            let root = f.add(0, 0, None, 0);
            roots.push(root);
            let mut values: Vec<u32> = (0..c).map(|j| ((j + m) % c) as u32).collect();
            for i in (1..values.len()).rev() {
                values.swap(i, rng.random_range(0..=i));
            }
            for v in values {
                f.add(1, 1, Some(root), v);
            }
        }
        let mut search = f.search(k, Diversity::Probabilistic, 10_000);
        assert_eq!(search.group(&roots), Ok(()));
    }

    /// Every permutation of `0..n`.
    fn permutations(n: usize) -> Vec<Vec<usize>> {
        if n == 0 {
            return vec![Vec::new()];
        }
        let mut all = Vec::new();
        for p in permutations(n - 1) {
            for at in 0..=p.len() {
                let mut q = p.clone();
                q.insert(at, n - 1);
                all.push(q);
            }
        }
        all
    }

    /// The definition itself, by exhaustion: the group's own values are diverse and, for
    /// the one class of children, some permutation per member makes every slot diverse.
    fn brute(f: &Forest, group: &[Vertex], l: usize, rule: Diversity) -> bool {
        let search = f.search(l, rule, 0);
        if search.own_values(group).is_err() {
            return false;
        }
        let kids: Vec<Vec<Vertex>> = group
            .iter()
            .map(|&(t, r)| f.trees.kids[t][r].clone())
            .collect();
        let c = kids.first().map_or(0, Vec::len);
        if c == 0 {
            return true;
        }
        let perms = permutations(c);
        // An odometer over one permutation per member after the first.
        let mut pick = vec![0usize; kids.len()];
        loop {
            let ok = (0..c).all(|s| {
                let slot: Vec<Vertex> = kids
                    .iter()
                    .zip(&pick)
                    .map(|(mine, &p)| mine[perms[p][s]])
                    .collect();
                brute(f, &slot, l, rule)
            });
            if ok {
                return true;
            }
            let mut m = 1;
            while m < pick.len() {
                pick[m] += 1;
                if pick[m] < perms.len() {
                    break;
                }
                pick[m] = 0;
                m += 1;
            }
            if m >= pick.len() {
                return false;
            }
        }
    }

    #[test]
    fn search_agrees_with_exhaustion_on_random_two_level_trees() {
        let mut rng = ChaCha8Rng::seed_from_u64(42);
        let (mut passed, mut failed) = (0, 0);
        for _ in 0..400 {
            let k = rng.random_range(2..=3usize);
            let c1 = rng.random_range(1..=3usize);
            let c2 = rng.random_range(0..=2usize);
            let l = rng.random_range(2..=3usize);
            let values = rng.random_range(2..=4u32);
            let rule = if rng.random_bool(0.5) {
                Diversity::Probabilistic
            } else {
                Diversity::Distinct
            };
            let mut f = Forest::new(&[false, true, true], &[None, Some(0), Some(1)]);
            let mut roots = Vec::new();
            for _ in 0..k {
                let root = f.add(0, 0, None, 0);
                roots.push(root);
                for _ in 0..c1 {
                    let child = f.add(1, 1, Some(root), rng.random_range(0..values));
                    for _ in 0..c2 {
                        f.add(2, 2, Some(child), rng.random_range(0..values));
                    }
                }
            }
            let expected = brute(&f, &roots, l, rule);
            let got = f.diverse(&roots, l, rule);
            assert_eq!(
                got.is_ok(),
                expected,
                "k {k} c {c1}x{c2} l {l} {rule:?}: {got:?}"
            );
            if expected {
                passed += 1;
            } else {
                failed += 1;
            }
        }
        // The sample exercises both outcomes.
        assert!(
            passed > 20 && failed > 20,
            "{passed} passed, {failed} failed"
        );
    }
}
