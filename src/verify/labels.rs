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

use super::data::{Content, Rule, TableData};
use super::fates::declared_role;
use super::Check;
use crate::plan::{ColumnRole, HierarchyDef, Plan};
use crate::policy::Role;

/// The generalized cells of one QI column: released cells whose text differs from the source
/// value of the row they were traced to (untraced rows are truthfulness's to report).
#[derive(Debug)]
pub(super) struct Generalized {
    /// Family table index.
    pub table: usize,
    /// Index into the table's `content`.
    pub content: usize,
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

/// The values of source column `col` of `t` whose first alphanumeric run is one of `runs`,
/// each with the number of distinct entities holding it (`entity`: each source row's).
fn holders<'t>(
    t: &'t TableData,
    col: usize,
    entity: &[Option<usize>],
    runs: &FxHashSet<&str>,
) -> Vec<(Cow<'t, str>, usize)> {
    // The first byte of every run: most cells start with their first run, and are turned
    // away on that byte alone.
    let mut starts = [false; 256];
    for run in runs {
        if let Some(&b) = run.as_bytes().first() {
            starts[usize::from(b)] = true;
        }
    }
    let mut ids: FxHashMap<Cow<'t, str>, usize> = FxHashMap::default();
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    let texts = t.src.texts(col);
    for (s, e) in entity.iter().enumerate() {
        let (Some(e), Some(v)) = (e, texts.get(s)) else {
            continue;
        };
        let lead = v.as_bytes().first().copied().unwrap_or(b' ');
        if lead.is_ascii_alphanumeric() && !starts[usize::from(lead)] {
            continue;
        }
        if !first_run(&v).is_some_and(|(start, end)| runs.contains(&v[start..end])) {
            continue;
        }
        let id = match ids.get(v.as_ref()) {
            Some(&id) => id,
            None => {
                let id = ids.len();
                ids.insert(v, id);
                id
            }
        };
        pairs.push((id, *e));
    }
    pairs.sort_unstable();
    pairs.dedup();
    let mut count = vec![0usize; ids.len()];
    for (id, _) in pairs {
        count[id] += 1;
    }
    ids.into_iter().map(|(v, id)| (v, count[id])).collect()
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
        let mut by_run: FxHashMap<String, Vec<RareValue>> = FxHashMap::default();
        if cannot_start_any(t.src.data_type(col), runs) {
            return Rare { name, by_run };
        }
        let found = holders(t, col, entity, runs);
        // Whether the column holds numbers only: read only when a long number was found.
        let long_number = |v: &str| plain_number(v) && v.chars().count() >= SHORT_NUMBER;
        let numbers = own && found.iter().any(|(v, _)| long_number(v)) && {
            let texts = t.src.texts(col);
            (0..t.src.rows())
                .filter_map(|s| texts.get(s))
                .all(|v| plain_number(&v))
        };
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

/// The source columns, by (table, source column), whose rare values no label may carry
/// besides the label's own column: every family column the declarations label IDENTIFIER
/// (or the plan does).
fn identifier_columns(plan: &Plan, tables: &[TableData]) -> Vec<(usize, usize, String)> {
    let mut out = Vec::new();
    for (ti, (ft, t)) in plan.tables.iter().zip(tables).enumerate() {
        for c in &ft.columns {
            let declared = declared_role(&plan.labels, &ft.name, &c.name);
            let identifier =
                matches!(declared, Some(Role::Identifier)) || c.role == ColumnRole::Identifier;
            if let (true, Some(src)) = (identifier, t.src.col(&c.name)) {
                out.push((ti, src, format!("{}.{}", t.name, c.name)));
            }
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
pub(super) fn check(
    plan: &Plan,
    tables: &[TableData],
    generalized: &[Generalized],
    out: &mut Check,
) {
    // A label without a letter or digit (the root `*`) can hold no searched value.
    let searched: Vec<(&Generalized, Vec<&String>)> = generalized
        .iter()
        .filter(|g| member_labels(plan, &tables[g.table].content[g.content].rule))
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
    if searched.is_empty() {
        return;
    }
    let k = plan.params.model.min_group();
    let entity = entities(tables);
    let own_runs: Vec<FxHashSet<&str>> = searched
        .iter()
        .map(|(_, labels)| labels.iter().flat_map(|l| runs(l)).collect())
        .collect();
    let all_runs: FxHashSet<&str> = own_runs.iter().flatten().copied().collect();
    // (table, source column, name, runs) of every column searched: each QI's own, then the
    // identifiers, each read once, on every thread.
    let mut columns: Vec<(usize, usize, String, &FxHashSet<&str>)> = searched
        .iter()
        .zip(&own_runs)
        .map(|((g, _), runs)| {
            let t = &tables[g.table];
            let c = &t.content[g.content];
            (g.table, c.src, format!("{}.{}", t.name, c.name), runs)
        })
        .collect();
    columns.extend(
        identifier_columns(plan, tables)
            .into_iter()
            .map(|(ti, col, name)| (ti, col, name, &all_runs)),
    );
    let rare: Vec<Rare> = columns
        .into_par_iter()
        .enumerate()
        .map(|(i, (ti, col, name, runs))| {
            let own = i < searched.len();
            Rare::build(&tables[ti], col, name, &entity[ti], k, runs, own)
        })
        .collect();
    let (own, identifiers) = rare.split_at(searched.len());
    for ((_, labels), own) in searched.iter().zip(own) {
        for label in labels {
            for rare in std::iter::once(own).chain(identifiers) {
                let hits = rare.hits(label);
                if let Some(first) = hits.first() {
                    out.record(violation(&own.name, label, rare, first, hits.len() - 1, k));
                }
            }
        }
    }
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
