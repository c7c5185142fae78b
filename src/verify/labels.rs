//! Check 5, "labels": a generalized QI cell never carries a rare value as text. A label such as
//! `[Crist804 .. Douglas998]` passes truthfulness and k-anonymity, yet names two people: an
//! interval or a list of member values publishes its ends. So every distinct label of a Rows
//! hierarchy (VALUES, CSV, SELECT) that a released row shows in place of its source value is
//! searched for the source values of its own column, and of every column the declarations
//! label IDENTIFIER in a family table, that fewer than k entities hold. Labels of BANDS and
//! DATE PARTS hierarchies are computed from arithmetic, not from member values, and are left
//! alone.
//!
//! "Contains" means at token boundaries: the characters either side of the occurrence, if
//! any, are not alphanumeric (so `M` is not in `Medicine`). Rare values are indexed by their
//! first alphanumeric run, and each run start of a label is probed, so the cost grows with
//! the labels' length, not with the number of rare values. Values without any alphanumeric
//! character (`-`, `?`) name no one and are not searched for.

use std::borrow::Cow;
use std::collections::BTreeSet;

use arrow::datatypes::DataType;
use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};

use super::data::{scan, Content, Rule, Side, TableData};
use super::fates::declared_role;
use super::keys::{key_hash, KeyIndex};
use super::partition::NO_ENTITY;
use super::Check;
use super::VerifyError;
use crate::plan::{ColumnRole, HierarchyDef, Plan};
use crate::policy::Role;
use crate::warehouse::{quote_ident, Warehouse};

/// The generalized cells of one QI column: released cells whose text differs from the source
/// value of the row they were traced to (untraced rows are truthfulness's to report). It
/// travels as it is from a partition checked elsewhere (`tasks`).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Generalized {
    /// Family table index.
    pub table: usize,
    /// Index into the table's `content`.
    pub content: usize,
    /// The column's name and rule, as the content holds them.
    pub column: String,
    pub rule: Rule,
    /// How many released rows show a generalized cell in this column.
    pub rows: usize,
    /// The distinct labels shown, sorted.
    pub labels: BTreeSet<String>,
}

/// Released rows per task of [`generalized`].
const ROWS_PER_TASK: usize = 8192;

/// Every QI column with at least one generalized cell, in plan order. Scans each QI cell once,
/// on every thread; the labels are a set, so the result does not depend on the thread count.
pub(super) fn generalized(tables: &[TableData]) -> Vec<Generalized> {
    let mut out = Vec::new();
    for (ti, t) in tables.iter().enumerate() {
        for (ci, c) in t.content.iter().enumerate() {
            if !matches!(c.rule, Rule::Qi(_)) {
                continue;
            }
            let (rows, labels) = column_labels(t, c);
            if rows > 0 {
                out.push(Generalized {
                    table: ti,
                    content: ci,
                    column: c.name.clone(),
                    rule: c.rule.clone(),
                    rows,
                    labels,
                });
            }
        }
    }
    out
}

/// How many released rows of `t` show a generalized cell in QI column `c`, and the distinct
/// labels they show.
fn column_labels(t: &TableData, c: &Content) -> (usize, BTreeSet<String>) {
    let (released, source) = (t.rel.texts(c.rel), t.src.texts(c.src));
    let rows = t.rel.rows();
    (0..rows.div_ceil(ROWS_PER_TASK))
        .into_par_iter()
        .map(|b| {
            let mut found = (0, BTreeSet::new());
            for r in b * ROWS_PER_TASK..((b + 1) * ROWS_PER_TASK).min(rows) {
                let Some(s) = t.rel_to_src[r] else { continue };
                let Some(label) = released.get(r) else {
                    continue;
                };
                if source.get(s).as_deref() != Some(label.as_ref()) {
                    found.0 += 1;
                    if !found.1.contains(label.as_ref()) {
                        found.1.insert(label.into_owned());
                    }
                }
            }
            found
        })
        .reduce(
            || (0, BTreeSet::new()),
            |mut a, mut b| {
                a.0 += b.0;
                a.1.append(&mut b.1);
                a
            },
        )
}

/// The entity (source entity-table row) each source row of each table belongs to; None for
/// a row whose parent chain breaks (it is released under no entity).
fn entities(tables: &[TableData]) -> Vec<Vec<Option<usize>>> {
    let mut out: Vec<Vec<Option<usize>>> = Vec::with_capacity(tables.len());
    for t in tables {
        let mine = match t.parent {
            None => (0..t.src.rows()).map(Some).collect(),
            // Parents precede children (data::load checks it), so the parent's are known.
            Some(p) => t
                .src_parent
                .iter()
                .map(|pr| pr.and_then(|pr| out.get(p)?.get(pr).copied().flatten()))
                .collect(),
        };
        out.push(mine);
    }
    out
}

/// A source value fewer than k entities hold.
#[derive(Debug)]
struct RareValue {
    value: String,
    /// Byte length of the value's leading non-alphanumeric characters (before its first run).
    lead: usize,
    holders: usize,
}

/// The rare values of one source column, indexed by their first alphanumeric run.
#[derive(Debug)]
struct Rare {
    /// `table.column`, as violations name it.
    name: String,
    by_run: FxHashMap<String, Vec<RareValue>>,
}

/// A plain number shorter than this is not searched in labels (see `Rare::build`).
const SHORT_NUMBER: usize = 5;

/// Whether `v` is a plain decimal number: an optional sign, digits, at most one point.
fn plain_number(v: &str) -> bool {
    let digits = v.strip_prefix(['-', '+']).unwrap_or(v);
    let mut parts = digits.splitn(2, '.');
    let whole = parts.next().unwrap_or_default();
    let all_digits = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
    !whole.is_empty() && all_digits(whole) && parts.next().is_none_or(all_digits)
}

/// A plain number of at least [`SHORT_NUMBER`] characters.
fn long_number(v: &str) -> bool {
    plain_number(v) && v.chars().count() >= SHORT_NUMBER
}

/// (start, end) in bytes of the first alphanumeric run of `s`.
fn first_run(s: &str) -> Option<(usize, usize)> {
    let start = s.char_indices().find(|(_, ch)| ch.is_alphanumeric())?.0;
    let end = s[start..]
        .char_indices()
        .find(|(_, ch)| !ch.is_alphanumeric())
        .map_or(s.len(), |(i, _)| start + i);
    Some((start, end))
}

/// Whether no cell of a column of type `dt` can start with one of `runs`: a number, date or
/// timestamp renders with digits up to its first separator, so with no run of digits in the
/// labels, none of its values can be in them.
fn cannot_start_any(dt: &DataType, runs: &FxHashSet<&str>) -> bool {
    let digits_first = dt.is_integer()
        || matches!(
            dt,
            DataType::Decimal32(..)
                | DataType::Decimal64(..)
                | DataType::Decimal128(..)
                | DataType::Decimal256(..)
                | DataType::Date32
                | DataType::Date64
                | DataType::Timestamp(..)
        );
    digits_first && !runs.iter().any(|r| r.bytes().all(|b| b.is_ascii_digit()))
}

/// Which cells can hold a value found in labels: those whose first alphanumeric run is one of
/// the labels' runs.
struct Admits<'r> {
    /// The first byte of every run: most cells start with their first run, and are turned
    /// away on that byte alone.
    starts: [bool; 256],
    runs: &'r FxHashSet<&'r str>,
}

impl<'r> Admits<'r> {
    fn new(runs: &'r FxHashSet<&'r str>) -> Admits<'r> {
        let mut starts = [false; 256];
        for run in runs {
            if let Some(&b) = run.as_bytes().first() {
                starts[usize::from(b)] = true;
            }
        }
        Admits { starts, runs }
    }

    fn admits(&self, v: &str) -> bool {
        let lead = v.as_bytes().first().copied().unwrap_or(b' ');
        if lead.is_ascii_alphanumeric() && !self.starts[usize::from(lead)] {
            return false;
        }
        first_run(v).is_some_and(|(start, end)| self.runs.contains(&v[start..end]))
    }
}

/// Distinct entities per value, counted as (value, entity) pairs come, up to `k`: a value k
/// entities hold is not rare however many more do, so what is held per value stays small
/// whatever the number of rows (a date column of sixty million line items holds a few
/// thousand values with k holders each).
struct Holders<'v> {
    ids: FxHashMap<Cow<'v, str>, usize>,
    /// Per value (by id), its first distinct holders, at most `k`.
    held: Vec<Vec<usize>>,
    k: usize,
}

impl<'v> Holders<'v> {
    fn new(k: usize) -> Holders<'v> {
        Holders {
            ids: FxHashMap::default(),
            held: Vec::new(),
            k,
        }
    }

    fn add(&mut self, v: Cow<'v, str>, entity: usize) {
        let id = self.id(v);
        let held = &mut self.held[id];
        if held.len() < self.k && !held.contains(&entity) {
            held.push(entity);
        }
    }

    /// A value held by a row whose entity is unknown: searched, its holders not counted.
    fn note(&mut self, v: Cow<'v, str>) {
        self.id(v);
    }

    fn id(&mut self, v: Cow<'v, str>) -> usize {
        match self.ids.get(v.as_ref()) {
            Some(&id) => id,
            None => {
                let id = self.ids.len();
                self.ids.insert(v, id);
                self.held.push(Vec::new());
                id
            }
        }
    }

    /// Each value with the number of distinct entities holding it, or `k` for k or more.
    fn counted(self) -> Vec<(Cow<'v, str>, usize)> {
        let held = self.held;
        self.ids
            .into_iter()
            .map(|(v, id)| (v, held[id].len()))
            .collect()
    }
}

/// The values of source column `col` of `t` whose first alphanumeric run is one of `runs`,
/// each with the number of distinct entities holding it (`entity`: each source row's), or
/// `k` for k or more.
fn holders<'t>(
    t: &'t TableData,
    col: usize,
    entity: &[Option<usize>],
    runs: &FxHashSet<&str>,
    k: usize,
) -> Vec<(Cow<'t, str>, usize)> {
    let admits = Admits::new(runs);
    let mut found = Holders::new(k);
    let texts = t.src.texts(col);
    for (s, e) in entity.iter().enumerate() {
        let (Some(e), Some(v)) = (e, texts.get(s)) else {
            continue;
        };
        if admits.admits(&v) {
            found.add(v, *e);
        }
    }
    found.counted()
}

/// [`holders`] of a column the source side does not hold (an IDENTIFIER of a keyed table,
/// left out of verify's read): streamed from the source with the table's key, a batch at a
/// time (not read where no cell of the column's type can start with a run), each admitted
/// cell's row found by its key (`index`, built at the first admitted cell of any of the
/// table's columns: most admit none). A key shared by several source rows names no one row:
/// such a cell's value is searched all the same, its holder not counted (fewer holders,
/// never more).
async fn streamed_holders(
    source: &Warehouse,
    t: &TableData,
    column: &str,
    entity: &[Option<usize>],
    runs: &FxHashSet<&str>,
    index: &mut Option<KeyIndex>,
    k: usize,
) -> Result<Vec<(Cow<'static, str>, usize)>, VerifyError> {
    // The source's own spelling of the names: its queries match identifiers exactly.
    let read_err = |source| VerifyError::Read {
        side: "source",
        table: t.name.clone(),
        source,
    };
    let meta = source
        .table(&t.name)
        .ok_or_else(|| VerifyError::MissingTable {
            side: "source",
            table: t.name.clone(),
        })?;
    let column = meta.column(column).ok_or_else(|| {
        VerifyError::Plan(format!(
            "the plan lists column '{}.{column}', which the source does not have",
            t.name
        ))
    })?;
    if cannot_start_any(&column.data_type, runs) {
        return Ok(Vec::new());
    }
    let column = &column.name;
    let key_names: Vec<&String> = t.src_pk.iter().map(|&c| &t.src.names()[c]).collect();
    let select: Vec<String> = key_names
        .iter()
        .map(|c| quote_ident(c))
        .chain(std::iter::once(quote_ident(column)))
        .collect();
    let query = format!(
        "SELECT {} FROM {} WHERE {} IS NOT NULL",
        select.join(", "),
        quote_ident(&meta.name),
        quote_ident(column)
    );
    let admits = Admits::new(runs);
    let mut found: Holders<'static> = Holders::new(k);
    let row_key = |r: usize| t.src.key(&t.src_pk, r);
    let n_keys = key_names.len();
    source
        .for_each_batch(&query, |batch| {
            let cells = Side::new(batch.clone());
            let texts = cells.texts(n_keys);
            for r in 0..batch.num_rows() {
                let Some(v) = texts.get(r).filter(|v| admits.admits(v)) else {
                    continue;
                };
                let Some(key) = (0..n_keys)
                    .map(|c| cells.cell(c, r))
                    .collect::<Option<Vec<_>>>()
                else {
                    continue;
                };
                let index =
                    index.get_or_insert_with(|| KeyIndex::new(t.src.rows(), row_key, key_hash));
                let mut rows = index.matches(&key, row_key, key_hash);
                let value = Cow::Owned(v.into_owned());
                match (rows.next(), rows.next()) {
                    (Some(row), None) => {
                        if let Some(e) = entity[row] {
                            found.add(value, e);
                        }
                    }
                    (Some(_), Some(_)) => found.note(value),
                    // Not a row verify holds (another entry of a split table).
                    (None, _) => {}
                }
            }
        })
        .await
        .map_err(read_err)?;
    Ok(found.counted())
}

impl Rare {
    /// The values of source column `col` of table `t` that fewer than `k` distinct entities
    /// hold (`entity`: each source row's entity), among those whose first alphanumeric run is
    /// one of `runs` (no other can be found in the labels those runs come from); empty
    /// values and NULL are left out.
    ///
    /// Numbers are searched only where a label holding one says something: a plain number
    /// of fewer than [`SHORT_NUMBER`] characters (a small key, a count, an age) is as likely
    /// a label's own text (`PG-13`, `group 1 of 2`, `40-59`) as anybody's value, and in a
    /// column of numbers (`own`, every value a number) a label's numbers are the bounds of
    /// the ranges a hierarchy of numbers is written in.
    fn build(
        t: &TableData,
        col: usize,
        name: String,
        entity: &[Option<usize>],
        k: usize,
        runs: &FxHashSet<&str>,
        own: bool,
    ) -> Rare {
        if cannot_start_any(t.src.data_type(col), runs) {
            return Rare::of(name, [], k, false);
        }
        let found = holders(t, col, entity, runs, k);
        // Whether the column holds numbers only: read only when a long number was found.
        let numbers = own && found.iter().any(|(v, _)| long_number(v)) && {
            let texts = t.src.texts(col);
            (0..t.src.rows())
                .filter_map(|s| texts.get(s))
                .all(|v| plain_number(&v))
        };
        Rare::of(name, found, k, numbers)
    }

    /// The rare values among `found` (each value with its number of holders); `numbers`:
    /// the column holds numbers only (see [`Rare::build`]).
    fn of<'v>(
        name: String,
        found: impl IntoIterator<Item = (Cow<'v, str>, usize)>,
        k: usize,
        numbers: bool,
    ) -> Rare {
        let mut by_run: FxHashMap<String, Vec<RareValue>> = FxHashMap::default();
        for (value, holders) in found {
            if plain_number(&value) && (numbers || !long_number(&value)) {
                continue;
            }
            let Some((start, end)) = first_run(&value).filter(|_| holders < k) else {
                continue;
            };
            by_run
                .entry(value[start..end].to_string())
                .or_default()
                .push(RareValue {
                    value: value.into_owned(),
                    lead: start,
                    holders,
                });
        }
        // A map's order follows the hash, not the values: sort so the value a violation shows
        // does not depend on it.
        for list in by_run.values_mut() {
            list.sort_unstable_by(|a, b| a.value.cmp(&b.value));
        }
        Rare { name, by_run }
    }

    /// The rare values `label` contains at token boundaries, by position, the longest first
    /// where two start at one place.
    fn hits<'r>(&'r self, label: &str) -> Vec<&'r RareValue> {
        let boundary = |at: Option<char>| at.is_none_or(|ch| !ch.is_alphanumeric());
        let mut found: Vec<(usize, &RareValue)> = Vec::new();
        let mut prev: Option<char> = None;
        for (j, ch) in label.char_indices() {
            let starts_run = ch.is_alphanumeric() && boundary(prev);
            prev = Some(ch);
            if !starts_run {
                continue;
            }
            let end = label[j..]
                .char_indices()
                .find(|(_, c)| !c.is_alphanumeric())
                .map_or(label.len(), |(i, _)| j + i);
            let Some(candidates) = self.by_run.get(&label[j..end]) else {
                continue;
            };
            for rv in candidates {
                let Some(start) = j.checked_sub(rv.lead) else {
                    continue;
                };
                let Some(rest) = label.get(start..) else {
                    continue;
                };
                if !rest.starts_with(&rv.value) {
                    continue;
                }
                let before = label[..start].chars().next_back();
                let after = rest[rv.value.len()..].chars().next();
                if boundary(before) && boundary(after) {
                    found.push((start, rv));
                }
            }
        }
        found.sort_by(|a, b| {
            (a.0, std::cmp::Reverse(a.1.value.len()))
                .cmp(&(b.0, std::cmp::Reverse(b.1.value.len())))
        });
        // A value named twice is one value.
        let mut distinct: Vec<&RareValue> = Vec::with_capacity(found.len());
        for (_, rv) in found {
            if !distinct.iter().any(|seen| std::ptr::eq(*seen, rv)) {
                distinct.push(rv);
            }
        }
        distinct
    }
}

/// The maximal alphanumeric runs of `label`: where a value found in it must start its own
/// first run.
fn runs(label: &str) -> impl Iterator<Item = &str> {
    label
        .split(|ch: char| !ch.is_alphanumeric())
        .filter(|run| !run.is_empty())
}

/// At most this many characters of a contained value are shown.
const SHOWN_VALUE: usize = 40;
/// At most this many characters of a label are shown.
const SHOWN_LABEL: usize = 80;

/// `s` cut to at most `max` characters, the last of them `…` when cut.
fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Where the source side has a column: read with its table, or left out of that read
/// (`data::streamed`) and streamed when searched.
enum Held {
    Read(usize),
    Streamed(String),
}

/// The source columns, by (table, column), whose rare values no label may carry besides the
/// label's own column: every family column the declarations label IDENTIFIER (or the plan
/// does).
fn identifier_columns(plan: &Plan, tables: &[TableData]) -> Vec<(usize, Held, String)> {
    let mut out = Vec::new();
    for (ti, (ft, t)) in plan.tables.iter().zip(tables).enumerate() {
        let streamed = super::data::streamed(ft);
        for c in &ft.columns {
            let declared = declared_role(&plan.labels, &ft.name, &c.name);
            let identifier =
                matches!(declared, Some(Role::Identifier)) || c.role == ColumnRole::Identifier;
            if !identifier {
                continue;
            }
            let held = match t.src.col(&c.name) {
                Some(src) => Held::Read(src),
                None if streamed.contains(&c.name) => Held::Streamed(c.name.clone()),
                None => continue,
            };
            out.push((ti, held, format!("{}.{}", t.name, c.name)));
        }
    }
    out
}

/// Whether a QI column's labels are made of member values (a Rows hierarchy) rather than
/// computed (bands, date parts). An unknown hierarchy is searched, to be safe.
fn member_labels(plan: &Plan, rule: &Rule) -> bool {
    let Rule::Qi(h) = rule else { return false };
    !matches!(
        plan.hierarchies.get(h),
        Some(HierarchyDef::Bands { .. } | HierarchyDef::DateParts { .. })
    )
}

/// Fails every (QI column, label, source column) where the label carries a value of that
/// column held by fewer than k entities; one violation each, whatever the number of rows.
pub(super) async fn check(
    plan: &Plan,
    source: &Warehouse,
    tables: &[TableData],
    generalized: &[Generalized],
    out: &mut Check,
) -> Result<(), VerifyError> {
    let (searched, own_runs) = searched(plan, generalized);
    if searched.is_empty() {
        return Ok(());
    }
    let k = plan.params.model.min_group();
    let entity = entities(tables);
    let all_runs: FxHashSet<&str> = own_runs.iter().flatten().copied().collect();
    // (table, source column, name, runs) of every column searched that the source side
    // holds: each QI's own, then the identifiers read with their table, each once, on every
    // thread.
    let mut columns: Vec<(usize, usize, String, &FxHashSet<&str>)> = searched
        .iter()
        .zip(&own_runs)
        .map(|((g, _), runs)| {
            let t = &tables[g.table];
            let c = &t.content[g.content];
            (g.table, c.src, format!("{}.{}", t.name, c.name), runs)
        })
        .collect();
    let identifiers = identifier_columns(plan, tables);
    columns.extend(
        identifiers
            .iter()
            .filter_map(|(ti, held, name)| match held {
                Held::Read(col) => Some((*ti, *col, name.clone(), &all_runs)),
                Held::Streamed(_) => None,
            }),
    );
    let mut read: Vec<Rare> = columns
        .into_par_iter()
        .enumerate()
        .map(|(i, (ti, col, name, runs))| {
            let own = i < searched.len();
            Rare::build(&tables[ti], col, name, &entity[ti], k, runs, own)
        })
        .collect();
    let mut identifier_rare = read.split_off(searched.len()).into_iter();
    let own = read;
    // The identifiers in plan order, the streamed ones read now, one at a time; each table's
    // key index is built once, for all of its streamed columns.
    let mut rare_identifiers = Vec::with_capacity(identifiers.len());
    let mut indexes: Vec<Option<KeyIndex>> = tables.iter().map(|_| None).collect();
    for (ti, held, name) in identifiers {
        let rare = match held {
            Held::Read(_) => identifier_rare
                .next()
                .expect("one Rare per identifier read with its table, in order"),
            Held::Streamed(column) => {
                let (t, index) = (&tables[ti], &mut indexes[ti]);
                let found = streamed_holders(source, t, &column, &entity[ti], &all_runs, index, k);
                Rare::of(name, found.await?, k, false)
            }
        };
        rare_identifiers.push(rare);
    }
    for ((_, labels), own) in searched.iter().zip(&own) {
        for label in labels {
            for rare in std::iter::once(own).chain(&rare_identifiers) {
                let hits = rare.hits(label);
                if let Some(first) = hits.first() {
                    out.record(violation(&own.name, label, rare, first, hits.len() - 1, k));
                }
            }
        }
    }
    Ok(())
}

/// The labels of a partitioned release ([`Generalized`] per partition) as one release's:
/// rows added, labels put together, in plan order.
pub(super) fn merged(parts: Vec<Vec<Generalized>>) -> Vec<Generalized> {
    let mut out: Vec<Generalized> = Vec::new();
    for g in parts.into_iter().flatten() {
        match out
            .iter_mut()
            .find(|o| (o.table, o.content) == (g.table, g.content))
        {
            Some(o) => {
                o.rows += g.rows;
                o.labels.extend(g.labels);
            }
            None => out.push(g),
        }
    }
    out.sort_by_key(|g| (g.table, g.content));
    out
}

/// Values with the number of distinct entities holding each.
type Counted = Vec<(Cow<'static, str>, usize)>;

/// Distinct entities per value of one source column of plan entry `ti`, over the whole
/// source, streamed in source order (`entity`: each source row's, [`NO_ENTITY`] for none),
/// among the values whose first run is one of `runs`; None when the source has no such
/// column.
fn streamed_column(
    plan: &Plan,
    source: &Warehouse,
    ti: usize,
    column: &str,
    entity: &[u32],
    runs: &FxHashSet<&str>,
) -> Result<Option<Counted>, VerifyError> {
    let ft = &plan.tables[ti];
    let Some(meta) = source.table(&ft.name).and_then(|m| m.column(column)) else {
        return Ok(None);
    };
    if cannot_start_any(&meta.data_type, runs) {
        return Ok(Some(Vec::new()));
    }
    let admits = Admits::new(runs);
    let mut found: Holders<'static> = Holders::new(plan.params.model.min_group());
    let mut row = 0;
    let read = scan(source, "source", ft, &[column.to_string()], |side| {
        let Some(col) = side.col(column) else { return };
        let texts = side.texts(col);
        for r in 0..side.rows() {
            let e = entity.get(row + r).copied().unwrap_or(NO_ENTITY);
            let Some(v) = texts.get(r).filter(|v| admits.admits(v)) else {
                continue;
            };
            if e != NO_ENTITY {
                found.add(Cow::Owned(v.into_owned()), e as usize);
            }
        }
        row += side.rows();
    })?;
    Ok(read.map(|()| found.counted()))
}

/// Whether every non-NULL value of source column `column` of entry `ti` is a plain number,
/// streamed.
fn all_numbers(
    plan: &Plan,
    source: &Warehouse,
    ti: usize,
    column: &str,
) -> Result<bool, VerifyError> {
    let mut all = true;
    scan(
        source,
        "source",
        &plan.tables[ti],
        &[column.to_string()],
        |side| {
            let Some(col) = side.col(column) else { return };
            let texts = side.texts(col);
            all = all
                && (0..side.rows())
                    .filter_map(|r| texts.get(r))
                    .all(|v| plain_number(&v));
        },
    )?;
    Ok(all)
}

/// Searched columns with their labels, and each one's runs.
type Searched<'g> = (
    Vec<(&'g Generalized, Vec<&'g String>)>,
    Vec<FxHashSet<&'g str>>,
);

/// The generalized columns whose labels are searched, each with its labels that can hold a
/// value (a label without a letter or digit, the root `*`, holds none) and their runs.
fn searched<'g>(plan: &Plan, generalized: &'g [Generalized]) -> Searched<'g> {
    let searched: Vec<(&Generalized, Vec<&String>)> = generalized
        .iter()
        .filter(|g| member_labels(plan, &g.rule))
        .map(|g| {
            let labels = g
                .labels
                .iter()
                .filter(|l| l.chars().any(char::is_alphanumeric))
                .collect::<Vec<_>>();
            (g, labels)
        })
        .filter(|(_, labels)| !labels.is_empty())
        .collect();
    let own_runs = searched
        .iter()
        .map(|(_, labels)| labels.iter().flat_map(|l| runs(l)).collect())
        .collect();
    (searched, own_runs)
}

/// [`check`] over a release checked in partitions: the same search, each source column
/// streamed from the whole source in source order, a row's entity taken from `entity` (per
/// plan entry, per source row, found through its parent chain when the rows were assigned).
pub(super) fn check_streamed(
    plan: &Plan,
    source: &Warehouse,
    generalized: &[Generalized],
    entity: &[Vec<u32>],
    out: &mut Check,
) -> Result<(), VerifyError> {
    let (searched, own_runs) = searched(plan, generalized);
    if searched.is_empty() {
        return Ok(());
    }
    let k = plan.params.model.min_group();
    let all_runs: FxHashSet<&str> = own_runs.iter().flatten().copied().collect();
    let none: Vec<u32> = Vec::new();
    let entity_of = |ti: usize| entity.get(ti).unwrap_or(&none);
    let mut own = Vec::with_capacity(searched.len());
    for ((g, _), runs) in searched.iter().zip(&own_runs) {
        let name = format!("{}.{}", plan.tables[g.table].name, g.column);
        let found = streamed_column(plan, source, g.table, &g.column, entity_of(g.table), runs)?
            .unwrap_or_default();
        let numbers = found.iter().any(|(v, _)| long_number(v))
            && all_numbers(plan, source, g.table, &g.column)?;
        own.push(Rare::of(name, found, k, numbers));
    }
    let mut rare_identifiers = Vec::new();
    for (ti, ft) in plan.tables.iter().enumerate() {
        for c in &ft.columns {
            let declared = declared_role(&plan.labels, &ft.name, &c.name);
            let identifier =
                matches!(declared, Some(Role::Identifier)) || c.role == ColumnRole::Identifier;
            if !identifier {
                continue;
            }
            let found = streamed_column(plan, source, ti, &c.name, entity_of(ti), &all_runs)?;
            if let Some(found) = found {
                let name = format!("{}.{}", ft.name, c.name);
                rare_identifiers.push(Rare::of(name, found, k, false));
            }
        }
    }
    for ((_, labels), own) in searched.iter().zip(&own) {
        for label in labels {
            for rare in std::iter::once(own).chain(&rare_identifiers) {
                let hits = rare.hits(label);
                if let Some(first) = hits.first() {
                    out.record(violation(&own.name, label, rare, first, hits.len() - 1, k));
                }
            }
        }
    }
    Ok(())
}

fn violation(
    qi: &str,
    label: &str,
    rare: &Rare,
    first: &RareValue,
    more: usize,
    k: usize,
) -> String {
    let noun = if first.holders == 1 {
        "entity"
    } else {
        "entities"
    };
    let more = match more {
        0 => String::new(),
        1 => " (and 1 more such value)".to_string(),
        n => format!(" (and {n} more such values)"),
    };
    format!(
        "{qi}: label '{}' contains '{}'{more}, a value of {} held by {} {noun} (fewer than k = {k}): name groups without member values",
        shorten(label, SHOWN_LABEL),
        shorten(&first.value, SHOWN_VALUE),
        rare.name,
        first.holders
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rare(values: &[(&str, usize)]) -> Rare {
        let mut by_run: FxHashMap<String, Vec<RareValue>> = FxHashMap::default();
        for (v, holders) in values {
            let (start, end) = first_run(v).expect("test values hold a run");
            by_run
                .entry(v[start..end].to_string())
                .or_default()
                .push(RareValue {
                    value: v.to_string(),
                    lead: start,
                    holders: *holders,
                });
        }
        Rare {
            name: "t.c".to_string(),
            by_run,
        }
    }

    fn found(r: &Rare, label: &str) -> Vec<String> {
        r.hits(label).into_iter().map(|v| v.value.clone()).collect()
    }

    #[test]
    fn holders_are_counted_distinct_and_up_to_k() {
        let mut h = Holders::new(3);
        for (v, e) in [("a", 1), ("a", 1), ("a", 2), ("b", 1), ("c", 1), ("c", 2)] {
            h.add(Cow::Borrowed(v), e);
        }
        for e in 3..100 {
            h.add(Cow::Borrowed("c"), e);
        }
        h.note(Cow::Borrowed("d"));
        let mut counted = h.counted();
        counted.sort();
        let expected = [("a", 2), ("b", 1), ("c", 3), ("d", 0)];
        let expected: Vec<(Cow<str>, usize)> = expected
            .iter()
            .map(|&(v, n)| (Cow::Borrowed(v), n))
            .collect();
        assert_eq!(counted, expected);
    }

    #[test]
    fn values_are_found_at_token_boundaries_only() {
        let r = rare(&[("M", 1), ("Crist804", 1), ("Douglas998", 2), ("804", 1)]);
        assert!(found(&r, "Medicine").is_empty());
        assert!(found(&r, "MM or XM").is_empty());
        assert_eq!(found(&r, "M or F"), ["M"]);
        assert_eq!(
            found(&r, "[Crist804 .. Douglas998]"),
            ["Crist804", "Douglas998"]
        );
        assert!(
            found(&r, "Crist8040").is_empty(),
            "a longer run is another token"
        );
        assert!(found(&r, "Crist804x").is_empty());
        assert_eq!(found(&r, "x-804"), ["804"]);
    }

    #[test]
    fn values_with_separators_and_leading_punctuation_are_found_whole() {
        let uuid = "8ab2b0e2-1c2d-4e5f-9a0b-1c2d3e4f5a6b";
        let r = rare(&[(uuid, 1), ("Mary Ann", 1), ("(none)", 1), ("-5", 1)]);
        assert_eq!(found(&r, &format!("[{uuid} .. 9104536f-0000]")), [uuid]);
        assert!(
            found(&r, "[8ab2b0e2-1c2d .. x]").is_empty(),
            "a prefix is not the value"
        );
        assert_eq!(found(&r, "Mary Ann or Bo"), ["Mary Ann"]);
        assert!(found(&r, "Mary Anne").is_empty());
        assert_eq!(found(&r, "(none) or x"), ["(none)"]);
        assert_eq!(found(&r, "[-5 .. 5]"), ["-5"]);
        assert!(
            found(&r, "[3-5 .. 9]").is_empty(),
            "'3-5' holds '-5' after an alphanumeric"
        );
    }

    #[test]
    fn the_longest_value_at_a_place_comes_first_and_each_value_once() {
        let r = rare(&[("John", 1), ("John Smith", 1)]);
        assert_eq!(found(&r, "John Smith, Ann"), ["John Smith", "John"]);
        assert_eq!(found(&r, "John or John"), ["John"]);
    }

    #[test]
    fn numbers_and_dates_are_read_only_for_labels_with_digits() {
        let words: FxHashSet<&str> = ["air", "ground"].into_iter().collect();
        let digits: FxHashSet<&str> = ["air", "17"].into_iter().collect();
        assert!(cannot_start_any(&DataType::Int64, &words));
        assert!(cannot_start_any(&DataType::Date32, &words));
        assert!(!cannot_start_any(&DataType::Int64, &digits));
        assert!(!cannot_start_any(&DataType::Utf8, &words));
        assert!(
            !cannot_start_any(&DataType::Float64, &words),
            "a float may render as NaN or inf"
        );
    }

    #[test]
    fn plain_numbers_are_told_from_other_values() {
        for n in ["13", "-5", "40.5", "1990", "+7"] {
            assert!(plain_number(n), "{n}");
        }
        for v in ["PG-13", "1.2.3", "", "-", "8ab2b0e2", "12a"] {
            assert!(!plain_number(v), "{v}");
        }
    }

    #[test]
    fn shortening_keeps_at_most_the_limit() {
        assert_eq!(shorten("abc", 3), "abc");
        assert_eq!(shorten("abcd", 3), "ab…");
        assert_eq!(shorten(&"é".repeat(50), 40).chars().count(), 40);
    }
}
