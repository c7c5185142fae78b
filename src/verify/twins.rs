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

use super::data::{cols, scan, Rule, TableData, Value};
use super::kanon::{self, Classes};
use super::labels::Generalized;
use super::{Check, VerifyError};
use crate::plan::{ColumnRole, Plan};
use crate::warehouse::Warehouse;

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

/// A cell held past its batch.
type Held = Option<Value<'static>>;

/// [`determines`] of one column, a batch at a time: the same decision, each value and each
/// QI cell held as itself, so two values are one only when they are equal (a hash shared by
/// two values would take them for one and could miss a twin).
struct Streamed {
    /// Per value seen: its slot in `first`.
    seen: FxHashMap<Value<'static>, usize>,
    /// The QI cells of the first row holding each value, `qis` per slot.
    first: Vec<Held>,
    alive: Vec<bool>,
    several: Vec<bool>,
    origin: Option<Vec<Held>>,
    held: usize,
    /// Decided that it determines nothing.
    none: bool,
}

impl Streamed {
    fn new(qis: usize) -> Streamed {
        Streamed {
            seen: FxHashMap::default(),
            first: Vec::new(),
            alive: vec![true; qis],
            several: vec![false; qis],
            origin: None,
            held: 0,
            none: false,
        }
    }

    /// One row: the column's value, and its QI cells; `rows`: the table's.
    fn row(&mut self, value: Value<'static>, cells: &[Held], rows: usize) {
        if self.none {
            return;
        }
        self.held += 1;
        let origin = self.origin.get_or_insert_with(|| cells.to_vec());
        for ((several, c), o) in self.several.iter_mut().zip(cells).zip(origin.iter()) {
            *several = *several || c != o;
        }
        let n = cells.len();
        match self.seen.get(&value) {
            Some(&slot) => {
                let before = &self.first[slot * n..(slot + 1) * n];
                for ((alive, c), b) in self.alive.iter_mut().zip(cells).zip(before) {
                    *alive = *alive && c == b;
                }
                self.none = !self.alive.contains(&true);
            }
            None => {
                self.seen.insert(value, self.seen.len());
                self.first.extend(cells.iter().cloned());
                // Nearly unique whatever follows: let the values go.
                if self.seen.len() * 2 > rows {
                    self.none = true;
                    self.seen = FxHashMap::default();
                    self.first = Vec::new();
                }
            }
        }
    }

    fn decided(&self) -> Vec<bool> {
        if self.none || self.held == 0 || self.seen.len() * 2 > self.held {
            return vec![false; self.alive.len()];
        }
        self.alive
            .iter()
            .zip(&self.several)
            .map(|(a, s)| *a && *s)
            .collect()
    }
}

/// `v` owned, to be held past its batch.
fn held(v: Value<'_>) -> Value<'static> {
    match v {
        Value::Int(i) => Value::Int(i),
        Value::Float(f) => Value::Float(f),
        Value::Bool(b) => Value::Bool(b),
        Value::Text(t) => Value::Text(std::borrow::Cow::Owned(t.into_owned())),
    }
}

/// Which QI column each column published unchanged (SENSITIVE, INSENSITIVE) determines in
/// the whole source, every family table streamed once in source order: (table, twin, QI) by
/// name. What a partition holds cannot say it: determining is a property of all the rows.
pub(super) fn determined(
    plan: &Plan,
    source: &Warehouse,
) -> Result<Vec<(usize, String, String)>, VerifyError> {
    let mut out = Vec::new();
    for (ti, ft) in plan.tables.iter().enumerate() {
        let qis: Vec<String> = ft.qi_columns().map(|(c, _)| c.to_string()).collect();
        let candidates: Vec<String> = ft
            .columns
            .iter()
            .filter(|c| {
                matches!(
                    c.role,
                    ColumnRole::Sensitive { .. } | ColumnRole::Insensitive
                )
            })
            .map(|c| c.name.clone())
            .collect();
        if qis.is_empty() || candidates.is_empty() {
            continue;
        }
        let rows = source.row_count(&ft.name).unwrap_or(usize::MAX);
        let mut state: Vec<Streamed> = candidates
            .iter()
            .map(|_| Streamed::new(qis.len()))
            .collect();
        let wanted: Vec<String> = candidates.iter().chain(&qis).cloned().collect();
        let read = scan(source, "source", ft, &wanted, |side| {
            let (cand_at, qi_at) = (cols(side, &candidates), cols(side, &qis));
            let mut cells: Vec<Held> = vec![None; qi_at.len()];
            for r in 0..side.rows() {
                for (cell, &q) in cells.iter_mut().zip(&qi_at) {
                    *cell = side.value(q, r).map(held);
                }
                for (st, &c) in state.iter_mut().zip(&cand_at) {
                    if let Some(v) = side.value(c, r) {
                        st.row(held(v), &cells, rows);
                    }
                }
            }
        })?;
        if read.is_none() {
            continue;
        }
        for (st, twin) in state.iter().zip(&candidates) {
            for (of, qi) in st.decided().into_iter().zip(&qis) {
                if of {
                    out.push((ti, twin.clone(), qi.clone()));
                }
            }
        }
    }
    Ok(out)
}

/// A column published unchanged that determines a generalized QI column of its table.
pub(super) struct Twin {
    table: usize,
    /// Index into the table's `content`: the twin, and the QI it determines.
    twin: usize,
    qi: usize,
    /// Released rows whose QI cell is generalized.
    generalized: usize,
    /// `table.column` of the twin and of the QI, as violations name them.
    name: String,
    qi_name: String,
}

/// Every twin of a generalized QI column, by QI in plan order, then by twin. Each column
/// published unchanged is read once for all of its table's generalized QIs, on every thread.
fn find(tables: &[TableData], generalized: &[Generalized]) -> Vec<Twin> {
    pick(tables, generalized, |_, t, candidates, qis| {
        let qis: Vec<usize> = qis.iter().map(|&q| t.content[q].src).collect();
        candidates
            .par_iter()
            .map(|&ci| determines(t, t.content[ci].src, &qis))
            .collect()
    })
}

/// [`find`] with which column determines which already known (`determined`: (table, twin,
/// QI) by name, over the whole source).
pub(super) fn find_known(
    tables: &[TableData],
    generalized: &[Generalized],
    determined: &[(usize, String, String)],
) -> Vec<Twin> {
    pick(tables, generalized, |ti, t, candidates, qis| {
        candidates
            .iter()
            .map(|&ci| {
                qis.iter()
                    .map(|&q| {
                        determined.iter().any(|(dt, twin, qi)| {
                            *dt == ti && *twin == t.content[ci].name && *qi == t.content[q].name
                        })
                    })
                    .collect()
            })
            .collect()
    })
}

/// The twins of generalized QIs, `decide` telling for a table which of its candidate
/// columns (content indices) determines which of its generalized QIs (content indices).
fn pick(
    tables: &[TableData],
    generalized: &[Generalized],
    decide: impl Fn(usize, &TableData, &[usize], &[usize]) -> Vec<Vec<bool>>,
) -> Vec<Twin> {
    let mut twins = Vec::new();
    for (ti, t) in tables.iter().enumerate() {
        let mine: Vec<&Generalized> = generalized.iter().filter(|g| g.table == ti).collect();
        if mine.is_empty() {
            continue;
        }
        let qis: Vec<usize> = mine.iter().map(|g| g.content).collect();
        let candidates: Vec<usize> = (0..t.content.len())
            .filter(|&ci| matches!(t.content[ci].rule, Rule::Exact { .. }))
            .collect();
        let found = decide(ti, t, &candidates, &qis);
        for (q, g) in mine.iter().enumerate() {
            for (&ci, of) in candidates.iter().zip(&found) {
                if of[q] {
                    twins.push(Twin {
                        table: ti,
                        twin: ci,
                        qi: g.content,
                        generalized: g.rows,
                        name: format!("{}.{}", t.name, t.content[ci].name),
                        qi_name: format!("{}.{}", t.name, t.content[g.content].name),
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
/// the size of its new class, by the entity's position in the whole release.
fn newly_small(relabel: &Relabel<'_>, base: &[usize], k: usize) -> Vec<(usize, usize)> {
    let labels = |t: usize, r: usize| relabel.labels(t, r);
    let trees = kanon::forms(relabel.tables, &labels);
    let Some(entity) = relabel.tables.first() else {
        return Vec::new();
    };
    let mut out: Vec<(usize, usize)> = kanon::classes(&trees)
        .into_iter()
        .filter(|members| members.len() < k)
        .flat_map(|members| {
            let size = members.len();
            members.into_iter().map(move |r| (r, size))
        })
        .filter(|&(r, _)| base.get(r).is_some_and(|&b| b >= k))
        .map(|(r, size)| (entity.rel_row(r), size))
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

/// What counting twins as known does: the entities (by position in the whole release, with
/// their new class's size) newly in a class smaller than k, for all twins at once and, when
/// that finds any, for each twin alone.
#[derive(Debug, Default)]
pub(super) struct Effects {
    joint: Vec<(usize, usize)>,
    alone: Vec<Vec<(usize, usize)>>,
}

impl Effects {
    /// The effects over a release from those over each of its partitions: classes lie in
    /// one partition, so the entities are the partitions' together.
    pub(super) fn merged(parts: Vec<Effects>, twins: usize) -> Effects {
        let mut out = Effects {
            joint: Vec::new(),
            alone: vec![Vec::new(); twins],
        };
        for part in parts {
            out.joint.extend(part.joint);
            for (all, mine) in out.alone.iter_mut().zip(part.alone) {
                all.extend(mine);
            }
        }
        out.joint.sort_unstable();
        for all in &mut out.alone {
            all.sort_unstable();
        }
        out
    }
}

/// [`Effects`] of `twins` on the classes `base` of `tables` (a release or a partition).
pub(super) fn effects(tables: &[TableData], twins: &[Twin], base: &Classes, k: usize) -> Effects {
    if twins.is_empty() {
        return Effects::default();
    }
    let base = class_sizes(base);
    let all: Vec<&Twin> = twins.iter().collect();
    let joint = newly_small(&Relabel::new(tables, &all), &base, k);
    if joint.is_empty() {
        return Effects {
            joint,
            alone: vec![Vec::new(); twins.len()],
        };
    }
    // One twin alone finds what all of them find.
    let alone = if twins.len() == 1 {
        vec![joint.clone()]
    } else {
        twins
            .iter()
            .map(|twin| newly_small(&Relabel::new(tables, &[twin]), &base, k))
            .collect()
    };
    Effects { joint, alone }
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
    let k = plan.params.model.min_group();
    let found = effects(tables, &twins, base, k);
    word(&twins, &found, k, out);
}

/// Records what `found` says of `twins`: a violation per twin that alone leaves entities in
/// small classes, and one for the entities only the twins together do.
pub(super) fn word(twins: &[Twin], found: &Effects, k: usize, out: &mut Check) {
    if found.joint.is_empty() {
        return;
    }
    let mut explained: Vec<usize> = Vec::new();
    for (twin, alone) in twins.iter().zip(&found.alone) {
        let Some(smallest) = alone.iter().map(|&(_, size)| size).min() else {
            continue;
        };
        explained.extend(alone.iter().map(|&(r, _)| r));
        let (name, qi) = (&twin.name, &twin.qi_name);
        out.record(format!(
            "{name} determines {qi} (generalized in {} released rows) and is published unchanged: {} released {} smaller than k = {k} when it is counted as known (smallest: {smallest}); give {name} the role of {qi}",
            twin.generalized,
            alone.len(),
            entities(alone.len()),
        ));
    }
    explained.sort_unstable();
    let rest: Vec<&(usize, usize)> = found
        .joint
        .iter()
        .filter(|(r, _)| explained.binary_search(r).is_err())
        .collect();
    if let Some(smallest) = rest.iter().map(|&&(_, size)| size).min() {
        let pairs: Vec<String> = twins
            .iter()
            .map(|tw| format!("{} (of {})", tw.name, tw.qi_name))
            .collect();
        out.record(format!(
            "{} together: {} released {} smaller than k = {k} when they are counted as known (smallest: {smallest}); give each the role of the column it determines",
            pairs.join(", "),
            rest.len(),
            entities(rest.len()),
        ));
    }
}
