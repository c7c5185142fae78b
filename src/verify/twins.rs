//! Check 6, "twins": a column published unchanged beside a generalized QI must not undo the
//! generalization. A column C of a family table *determines* a QI column Q of that table when,
//! in the source, every non-NULL value of C occurs with exactly one value of Q (NULL counting
//! as a value), Q takes at least two values there, and C is not nearly unique (at most half as
//! many distinct values as rows holding one; a unique column "determines" everything by
//! chance, through a mapping no adversary has). A code beside its description is the
//! typical twin: the mapping is public, so a released row's code reveals its description.
//!
//! When a twin is published unchanged (SENSITIVE, INSENSITIVE) and Q is generalized in some
//! released row, the k-anonymity classes are recomputed with each such row's Q label replaced
//! by what its twin reveals, the exact source value of Q (rows whose twin is NULL keep their
//! label), and every entity that falls in a class smaller than k, having been in a class of at
//! least k, is counted against the twin. First all twins at once (what an adversary who
//! knows every QI learns); only if that finds anything, each (twin, QI) pair alone, to name
//! the pair; entities no single pair explains are reported for the twins together.

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use super::data::{Rule, TableData, Value};
use super::kanon::{self, Classes};
use super::labels::Generalized;
use super::Check;
use crate::plan::Plan;

/// Which of the QI columns `qis` (source columns of `t`) source column `col` determines (see
/// the module comment), in one pass over the column that compares QI cells without copying
/// them. Stops once every QI has a value of the column seen with two of its values, or once
/// more than half the table's rows are distinct values, so most columns cost a fraction of a
/// pass.
fn determines(t: &TableData, col: usize, qis: &[usize]) -> Vec<bool> {
    let rows = t.src.rows();
    let none = vec![false; qis.len()];
    // NULL is a value of the QI like any other.
    let same = |q: usize, a: usize, b: usize| t.src.value(q, a) == t.src.value(q, b);
    // Each value of the column: the first row holding it.
    let mut seen: FxHashMap<Value<'_>, usize> = FxHashMap::default();
    let mut alive = vec![true; qis.len()];
    let mut several = vec![false; qis.len()];
    let mut first: Option<usize> = None;
    let mut held = 0;
    for s in 0..rows {
        let Some(c) = t.src.value(col, s) else {
            continue;
        };
        held += 1;
        let origin = *first.get_or_insert(s);
        match seen.get(&c) {
            Some(&before) => {
                for (alive, &q) in alive.iter_mut().zip(qis) {
                    *alive = *alive && same(q, s, before);
                }
                if !alive.contains(&true) {
                    return none;
                }
            }
            None => {
                seen.insert(c, s);
                // Rows holding a value are at most all rows: nearly unique whatever follows.
                if seen.len() * 2 > rows {
                    return none;
                }
            }
        }
        for (several, &q) in several.iter_mut().zip(qis) {
            *several = *several || !same(q, s, origin);
        }
    }
    if held == 0 || seen.len() * 2 > held {
        return none;
    }
    alive.iter().zip(&several).map(|(a, s)| *a && *s).collect()
}

/// A column published unchanged that determines a generalized QI column of its table.
struct Twin {
    table: usize,
    /// Index into the table's `content`: the twin, and the QI it determines.
    twin: usize,
    qi: usize,
    /// Released rows whose QI cell is generalized.
    generalized: usize,
}

impl Twin {
    fn name(&self, tables: &[TableData]) -> String {
        let t = &tables[self.table];
        format!("{}.{}", t.name, t.content[self.twin].name)
    }

    fn qi_name(&self, tables: &[TableData]) -> String {
        let t = &tables[self.table];
        format!("{}.{}", t.name, t.content[self.qi].name)
    }
}

/// Every twin of a generalized QI column, by QI in plan order, then by twin. Each column
/// published unchanged is read once for all of its table's generalized QIs, on every thread.
fn find(tables: &[TableData], generalized: &[Generalized]) -> Vec<Twin> {
    let mut twins = Vec::new();
    for (ti, t) in tables.iter().enumerate() {
        let mine: Vec<&Generalized> = generalized.iter().filter(|g| g.table == ti).collect();
        if mine.is_empty() {
            continue;
        }
        let qis: Vec<usize> = mine.iter().map(|g| t.content[g.content].src).collect();
        let candidates: Vec<usize> = (0..t.content.len())
            .filter(|&ci| matches!(t.content[ci].rule, Rule::Exact { .. }))
            .collect();
        let found: Vec<Vec<bool>> = candidates
            .par_iter()
            .map(|&ci| determines(t, t.content[ci].src, &qis))
            .collect();
        for (q, g) in mine.iter().enumerate() {
            for (&ci, of) in candidates.iter().zip(&found) {
                if of[q] {
                    twins.push(Twin {
                        table: ti,
                        twin: ci,
                        qi: g.content,
                        generalized: g.rows,
                    });
                }
            }
        }
    }
    twins
}

/// The labels a class sees when `twins` are counted as known: a QI cell is the source value
/// its twin reveals where a twin is non-NULL on the row's source row, else the released label.
struct Relabel<'a> {
    tables: &'a [TableData],
    /// Per table, per QI content column in order: (content index, its twins' content indices).
    columns: Vec<Vec<(usize, Vec<usize>)>>,
}

impl<'a> Relabel<'a> {
    fn new(tables: &'a [TableData], twins: &[&Twin]) -> Relabel<'a> {
        let columns = tables
            .iter()
            .enumerate()
            .map(|(ti, t)| {
                t.content
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| matches!(c.rule, Rule::Qi(_)))
                    .map(|(ci, _)| {
                        let of: Vec<usize> = twins
                            .iter()
                            .filter(|tw| tw.table == ti && tw.qi == ci)
                            .map(|tw| tw.twin)
                            .collect();
                        (ci, of)
                    })
                    .collect()
            })
            .collect();
        Relabel { tables, columns }
    }

    fn labels(&self, ti: usize, r: usize) -> Vec<Option<String>> {
        let t = &self.tables[ti];
        let s = t.rel_to_src[r];
        self.columns[ti]
            .iter()
            .map(|(ci, twins)| {
                let c = &t.content[*ci];
                let revealed =
                    s.filter(|&s| twins.iter().any(|&tw| !t.src.is_null(t.content[tw].src, s)));
                match revealed {
                    Some(s) => t.src.cell(c.src, s),
                    None => t.rel.cell(c.rel, r),
                }
            })
            .collect()
    }
}

/// Entities (entity rows) that fall in a class smaller than `k` under `relabel`, having been
/// in a class of at least `k` (`base`: each entity's class size in the release), each with
/// the size of its new class.
fn newly_small(relabel: &Relabel<'_>, base: &[usize], k: usize) -> Vec<(usize, usize)> {
    let labels = |t: usize, r: usize| relabel.labels(t, r);
    let trees = kanon::forms(relabel.tables, &labels);
    let mut out: Vec<(usize, usize)> = kanon::classes(&trees)
        .into_iter()
        .filter(|members| members.len() < k)
        .flat_map(|members| {
            let size = members.len();
            members.into_iter().map(move |r| (r, size))
        })
        .filter(|&(r, _)| base.get(r).is_some_and(|&b| b >= k))
        .collect();
    out.sort_unstable();
    out
}

/// Each entity row's class size in `classes`.
fn class_sizes(classes: &Classes) -> Vec<usize> {
    let mut size = vec![0; classes.entities];
    for members in &classes.groups {
        for &r in members {
            if let Some(slot) = size.get_mut(r) {
                *slot = members.len();
            }
        }
    }
    size
}

fn entities(n: usize) -> &'static str {
    if n == 1 {
        "entity falls in a class"
    } else {
        "entities fall in classes"
    }
}

/// Fails each (twin, QI) pair whose twin, counted as known, leaves entities in classes
/// smaller than k that were not there before.
pub(super) fn check(
    plan: &Plan,
    tables: &[TableData],
    generalized: &[Generalized],
    base: &Classes,
    out: &mut Check,
) {
    if generalized.is_empty() {
        return;
    }
    let twins = find(tables, generalized);
    if twins.is_empty() {
        return;
    }
    let k = plan.params.model.min_group();
    let base = class_sizes(base);
    let all: Vec<&Twin> = twins.iter().collect();
    let joint = newly_small(&Relabel::new(tables, &all), &base, k);
    if joint.is_empty() {
        return;
    }
    let mut explained = vec![false; base.len()];
    for twin in &twins {
        // One twin alone finds what all of them find.
        let alone = if twins.len() == 1 {
            joint.clone()
        } else {
            newly_small(&Relabel::new(tables, &[twin]), &base, k)
        };
        let Some(smallest) = alone.iter().map(|&(_, size)| size).min() else {
            continue;
        };
        for &(r, _) in &alone {
            explained[r] = true;
        }
        let (name, qi) = (twin.name(tables), twin.qi_name(tables));
        out.record(format!(
            "{name} determines {qi} (generalized in {} released rows) and is published unchanged: {} released {} smaller than k = {k} when it is counted as known (smallest: {smallest}); give {name} the role of {qi}",
            twin.generalized,
            alone.len(),
            entities(alone.len()),
        ));
    }
    let rest: Vec<&(usize, usize)> = joint.iter().filter(|(r, _)| !explained[*r]).collect();
    if let Some(smallest) = rest.iter().map(|&&(_, size)| size).min() {
        let pairs: Vec<String> = twins
            .iter()
            .map(|tw| format!("{} (of {})", tw.name(tables), tw.qi_name(tables)))
            .collect();
        out.record(format!(
            "{} together: {} released {} smaller than k = {k} when they are counted as known (smallest: {smallest}); give each the role of the column it determines",
            pairs.join(", "),
            rest.len(),
            entities(rest.len()),
        ));
    }
}
