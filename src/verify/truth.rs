//! Check 3, "truthfulness": every released row stands for its own source row of the same
//! table, under the source row's parent, with QI cells that are the value or an ancestor of
//! it and SA / insensitive cells that are the value.

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use rayon::prelude::*;

use super::data::{show_cell, show_key, Content, Partition, Rule, TableData};
use super::hier::{Hier, ROOT};
use super::keys::{key_hash, KeyIndex};
use super::matching::complete;
use super::relocation::Untruthful;
use super::transport;
use super::{Check, Keys, VerifyError};
use crate::keymap::{KeyMap, TableKeys};
use crate::plan::{FamilyTable, Plan};

/// Traces every released row to its source row (filling `rel_to_src`, parents first, since
/// a key-less table is matched under its traced parents) and checks each traced pair; of a
/// partition's rows (`within`), through the key map's pairs of that partition. With
/// `relocating` (a hybrid release, [`super::relocation`]: its budget of cells) a QI cell that
/// does not stand for its source value is counted, not recorded: a keyed row's against its
/// source row, a key-less table's at its cheapest pairing ([`relocate_leftovers`]). Returns
/// the count per table (all 0 without).
pub(super) fn check(
    plan: &Plan,
    tables: &mut [TableData],
    keys: &Keys<'_>,
    hiers: &HashMap<String, Hier>,
    within: Option<Partition<'_>>,
    relocating: Option<u64>,
    out: &mut Check,
) -> Result<Vec<Untruthful>, VerifyError> {
    let mut untruthful = vec![Untruthful::default(); tables.len()];
    for ti in 0..tables.len() {
        // Preserved keys name their source row only where the released key is the source's
        // own columns; a surrogate key (the source key holds generalized data) is traced
        // through the key map, or without one by content under the traced parents.
        let same_key = plan.tables.get(ti).is_some_and(|ft| {
            let released = ft.released_pk();
            released.len() == ft.primary_key.len()
                && released.iter().all(|c| ft.primary_key.contains(c))
        });
        let keyed = !tables[ti].rel_pk.is_empty() && (matches!(keys, Keys::Map(_)) || same_key);
        let (mapped, leftover) = if keyed {
            let ft = plan
                .tables
                .get(ti)
                .ok_or_else(|| VerifyError::Plan(format!("no plan entry for table #{ti}")))?;
            let pairs = within.and_then(|p| {
                let of_entry = p.pairs.get(ti)?.as_deref()?;
                Some((of_entry, p.part))
            });
            (
                by_key(ft, tables, ti, keys, pairs, out)?,
                Untruthful::default(),
            )
        } else {
            by_content(tables, ti, hiers, relocating, out)
        };
        tables[ti].rel_to_src = mapped;
        untruthful[ti] = if keyed {
            Untruthful {
                cells: check_pairs(tables, ti, hiers, relocating.is_some(), out),
                at_least: false,
            }
        } else {
            leftover
        };
    }
    Ok(untruthful)
}

/// Released key -> source key for one table, in the plan's PK column order: the key map's
/// pairs indexed by released key ([`KeyIndex`]), each key rendered when it is asked for.
struct Translation<'m> {
    pairs: &'m TableKeys,
    /// Per PK column of the plan, its column in the key map's source keys.
    perm: Vec<usize>,
    /// Per released key column of the plan, its column in the key map's released keys.
    released_perm: Vec<usize>,
    index: KeyIndex,
}

impl Translation<'_> {
    fn released(&self, i: usize) -> Option<Vec<String>> {
        Some(released_key(self.pairs, i, &self.released_perm))
    }

    fn source(&self, i: usize) -> Vec<String> {
        self.perm
            .iter()
            .map(|&c| self.pairs.source_text(i, c))
            .collect()
    }

    /// The source key of the first pair released as `released`.
    fn get(&self, released: &[String]) -> Option<Vec<String>> {
        let released_key = |i: usize| self.released(i);
        let i = self.index.find(released, released_key, key_hash)?;
        Some(self.source(i))
    }
}

/// Pair `i`'s released key, in the plan's released column order.
pub(super) fn released_key(pairs: &TableKeys, i: usize, perm: &[usize]) -> Vec<String> {
    perm.iter().map(|&c| pairs.released_text(i, c)).collect()
}

/// The key map's [`Translation`] for one table; a released key sent to two source keys is a
/// finding (the first pair counts).
fn translation<'m>(
    ft: &FamilyTable,
    map: &'m KeyMap,
    released_rows: usize,
    pairs: Option<PairsIn<'_>>,
    out: &mut Check,
) -> Result<Option<Translation<'m>>, VerifyError> {
    let Some((tk, perm, released_perm)) = key_columns(ft, map, released_rows)? else {
        return Ok(None);
    };
    // Each pair's arity is its columns' (`TableKeys::push` refuses others).
    let released_key = |i: usize| Some(released_key(tk, i, &released_perm));
    let shared = pairs.is_none();
    let index = match pairs {
        // Pairs of one released key share a partition: each repeat is found in one.
        Some((of, part)) => {
            let among: Vec<usize> = (0..tk.len().min(of.len()))
                .filter(|&i| of[i] == part)
                .collect();
            KeyIndex::among(among.len(), |i| among[i], released_key, key_hash)
        }
        None => KeyIndex::new(tk.len(), released_key, key_hash),
    };
    let m = Translation {
        pairs: tk,
        perm,
        released_perm,
        index,
    };
    let repeats = m.index.repeats(|j| m.released(j), key_hash);
    for (i, first) in repeats {
        let (kept, other) = (m.source(first), m.source(i));
        if kept != other {
            // Before the table's rows ([ti, 1, ..]), by the later pair as one pass finds them;
            // a partition that reads every pair finds what the others do.
            if shared {
                out.shared_at([0, 0, i, 0]);
            } else {
                out.at([0, 0, i, 0]);
            }
            out.record(format!(
                "the key map sends {} key {} to two source keys ({} and {})",
                ft.name,
                show_key(m.released(i).as_deref()),
                show_key(Some(&kept)),
                show_key(Some(&other))
            ));
        }
    }
    Ok(Some(m))
}

/// A table's key-map pairs, with [`key_columns`]' column orders.
pub(super) type KeyColumns<'m> = (&'m TableKeys, Vec<usize>, Vec<usize>);

/// The key map's pairs for one table, with per PK column of the plan its column in the
/// pairs' source keys and per released key column its column in their released keys; None
/// for a table the map leaves out and that released no rows.
pub(super) fn key_columns<'m>(
    ft: &FamilyTable,
    map: &'m KeyMap,
    released_rows: usize,
) -> Result<Option<KeyColumns<'m>>, VerifyError> {
    let entry = map.tables.get(&ft.name).or_else(|| {
        map.tables
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(&ft.name))
            .map(|(_, t)| t)
    });
    let Some(tk) = entry else {
        if released_rows == 0 {
            return Ok(None);
        }
        return Err(VerifyError::KeyMapMissingTable {
            table: ft.name.clone(),
        });
    };
    let perm: Option<Vec<usize>> = ft
        .primary_key
        .iter()
        .map(|c| {
            tk.columns
                .iter()
                .position(|m| m == c)
                .or_else(|| tk.columns.iter().position(|m| m.eq_ignore_ascii_case(c)))
        })
        .collect();
    let perm = match perm {
        Some(p) if tk.columns.len() == ft.primary_key.len() => p,
        _ => {
            return Err(VerifyError::KeyMapColumns {
                table: ft.name.clone(),
                found: tk.columns.join(", "),
                expected: ft.primary_key.join(", "),
            })
        }
    };
    // A map that names no released columns releases the source's key columns.
    let released_pk = ft.released_pk();
    let released_perm: Option<Vec<usize>> = if tk.released_columns.is_empty() {
        (released_pk == ft.primary_key).then(|| perm.clone())
    } else {
        released_pk
            .iter()
            .map(|c| {
                tk.released_columns
                    .iter()
                    .position(|m| m.eq_ignore_ascii_case(c))
            })
            .collect::<Option<Vec<usize>>>()
            .filter(|p| p.len() == tk.released_columns.len())
    };
    let Some(released_perm) = released_perm else {
        return Err(VerifyError::KeyMapColumns {
            table: ft.name.clone(),
            found: format!("released as {}", tk.released_columns.join(", ")),
            expected: format!("released as {}", released_pk.join(", ")),
        });
    };
    Ok(Some((tk, perm, released_perm)))
}

/// How a released row's key resolved, found on every thread; what it means for the check
/// is decided in row order afterwards ([`by_key`]).
#[derive(Clone, Copy)]
enum Lookup {
    /// A NULL key: the key-atomicity check's to report; it names no source row.
    NullKey,
    /// The key map has no source key for it.
    Untranslated,
    /// Its source key is not in the source.
    Missing,
    /// The source row it stands for.
    Found(usize),
}

/// The source key a released key stands for: itself when keys are preserved, else its entry
/// in the key map's translation.
fn source_key(translate: Option<&Translation>, released: &[String]) -> Option<Vec<String>> {
    match translate {
        None => Some(released.to_vec()),
        Some(m) => m.get(released),
    }
}

/// The partition of each key-map pair of a table, and the partition checked.
type PairsIn<'a> = (&'a [u16], u16);

fn by_key(
    ft: &FamilyTable,
    tables: &[TableData],
    ti: usize,
    keys: &Keys<'_>,
    pairs: Option<PairsIn<'_>>,
    out: &mut Check,
) -> Result<Vec<Option<usize>>, VerifyError> {
    let t = &tables[ti];
    let name = out.name;
    let src_key = |s: usize| t.src.key(&t.src_pk, s);
    let (src_index, translate) = rayon::join(
        || KeyIndex::new(t.src.rows(), src_key, key_hash),
        || -> Result<_, VerifyError> {
            let mut found = Check::new(name);
            let m = match keys {
                Keys::Preserved => None,
                Keys::Map(map) => translation(ft, map, t.rel.rows(), pairs, &mut found)?,
            };
            Ok((m, found))
        },
    );
    let (translate, mut found) = translate?;
    for place in &mut found.places {
        place.at[0] = ti as u64;
    }
    out.absorb(found);
    let lookups: Vec<Lookup> = (0..t.rel.rows())
        .into_par_iter()
        .map(|r| {
            let Some(rk) = t.rel.key(&t.rel_pk, r) else {
                return Lookup::NullKey;
            };
            match source_key(translate.as_ref(), &rk) {
                None => Lookup::Untranslated,
                Some(sk) => src_index
                    .find(&sk, src_key, key_hash)
                    .map_or(Lookup::Missing, Lookup::Found),
            }
        })
        .collect();
    // Findings are rare, so their keys are rendered again here rather than kept per row.
    let mut claimed: Vec<Option<usize>> = vec![None; t.src.rows()];
    let mut mapped = vec![None; t.rel.rows()];
    for (r, lookup) in lookups.into_iter().enumerate() {
        out.at([ti, 1, t.rel_row(r), t.rel_row(r)]);
        let rk = || t.rel.key(&t.rel_pk, r);
        match lookup {
            Lookup::NullKey => {}
            Lookup::Untranslated => out.record(format!(
                "{} key {}: the key map has no source key for it",
                t.name,
                show_key(rk().as_deref())
            )),
            Lookup::Missing => {
                let how = if translate.is_some() {
                    "its source key"
                } else {
                    "the key"
                };
                let rk = rk();
                let sk = rk.as_ref().and_then(|k| source_key(translate.as_ref(), k));
                out.record(format!(
                    "{} key {}: {how} {} is not in the source",
                    t.name,
                    show_key(rk.as_deref()),
                    show_key(sk.as_deref())
                ));
            }
            Lookup::Found(s) => {
                if let Some(other) = claimed[s] {
                    out.record(format!(
                        "{} and {} both stand for source {} key {}; each released row must be a distinct source row",
                        t.describe(tables, other),
                        t.describe(tables, r),
                        t.name,
                        show_key(t.src.key(&t.src_pk, s).as_deref())
                    ));
                    continue;
                }
                claimed[s] = Some(r);
                mapped[r] = Some(s);
            }
        }
    }
    Ok(mapped)
}

fn source_name(t: &TableData, s: usize) -> String {
    if t.src_pk.is_empty() {
        format!("{} source row {}", t.name, t.src_row(s) + 1)
    } else {
        format!(
            "{} key {}",
            t.name,
            show_key(t.src.key(&t.src_pk, s).as_deref())
        )
    }
}

/// Released rows per task of [`check_pairs`].
const ROWS_PER_TASK: usize = 4096;

/// Structure and cell truth of every traced row of a keyed table. Runs on every thread, in
/// blocks of rows whose findings are appended in row order, so the report is the same as one
/// thread's. Returns the untruthful QI cells counted (`relocating`), else 0.
fn check_pairs(
    tables: &[TableData],
    ti: usize,
    hiers: &HashMap<String, Hier>,
    relocating: bool,
    out: &mut Check,
) -> usize {
    let rows = tables[ti].rel_to_src.len();
    let found: Vec<(Check, usize)> = (0..rows.div_ceil(ROWS_PER_TASK))
        .into_par_iter()
        .map(|b| {
            let mut block = Check::new(out.name);
            let mut untruthful = 0;
            for r in b * ROWS_PER_TASK..((b + 1) * ROWS_PER_TASK).min(rows) {
                block.at([ti, 2, tables[ti].rel_row(r), 0]);
                let counted = relocating.then_some(&mut untruthful);
                check_pair(tables, ti, r, hiers, counted, &mut block);
            }
            (block, untruthful)
        })
        .collect();
    let mut untruthful = 0;
    for (block, n) in found {
        out.absorb(block);
        untruthful += n;
    }
    untruthful
}

/// Structure and cell truth of released row `r` of table `ti`, if it was traced; a QI cell
/// that does not stand for its source value is added to `relocated` where given (a hybrid
/// release), else recorded.
fn check_pair(
    tables: &[TableData],
    ti: usize,
    r: usize,
    hiers: &HashMap<String, Hier>,
    mut relocated: Option<&mut usize>,
    out: &mut Check,
) {
    let t = &tables[ti];
    let Some(s) = t.rel_to_src[r] else { return };
    if let Some(p) = t.parent {
        let parent = &tables[p];
        // An unresolved FK or an untraced parent is already reported elsewhere.
        if let Some(ps) = t.rel_parent[r].and_then(|pr| parent.rel_to_src[pr]) {
            if t.src_parent[s] != Some(ps) {
                let actual = t.src_parent[s].map_or_else(
                    || "no source parent".to_string(),
                    |a| source_name(parent, a),
                );
                out.record(format!(
                    "{}: released under a parent standing for source {}, but its source row belongs to {}",
                    t.describe(tables, r),
                    source_name(parent, ps),
                    actual
                ));
            }
        }
    }
    for c in &t.content {
        let rv = t.rel.cell(c.rel, r);
        let sv = t.src.cell(c.src, s);
        if !cell_ok(c, rv.as_deref(), sv.as_deref(), hiers) {
            if let (Rule::Qi(_), Some(n)) = (&c.rule, relocated.as_deref_mut()) {
                *n += 1;
                continue;
            }
            let what = match &c.rule {
                Rule::Qi(h) => format!(
                    "is neither the source value {} nor an ancestor of it in hierarchy '{h}'",
                    show_cell(sv.as_deref())
                ),
                Rule::Exact { .. } => {
                    format!("differs from the source value {}", show_cell(sv.as_deref()))
                }
            };
            out.record(format!(
                "{}: {} = {} {what}",
                t.describe(tables, r),
                c.name,
                show_cell(rv.as_deref())
            ));
        }
    }
}

/// Numeric cells compare as numbers (a Decimal "12.30" and a Float "12.3" are one value);
/// integers stay exact text so large ids never collide through f64.
pub(super) fn normalize(numeric: bool, v: Option<String>) -> Option<String> {
    let s = v?;
    if !numeric || s.parse::<i64>().is_ok() {
        return Some(s);
    }
    match s.parse::<f64>() {
        Ok(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Some(format!("{}", f as i64)),
        Ok(f) => Some(format!("{f}")),
        Err(_) => Some(s),
    }
}

fn qi_ok(hier: Option<&Hier>, label: Option<&str>, value: Option<&str>) -> bool {
    match (label, value) {
        (None, None) => true,
        (None, Some(_)) => false,
        (Some(ROOT), _) => true,
        // A NULL source value is its own leaf: only NULL or the root stand for it.
        (Some(_), None) => false,
        (Some(l), Some(v)) => l == v || hier.is_some_and(|h| h.admits(l, v)),
    }
}

fn cell_ok(
    c: &Content,
    rel: Option<&str>,
    src: Option<&str>,
    hiers: &HashMap<String, Hier>,
) -> bool {
    match &c.rule {
        Rule::Qi(h) => qi_ok(hiers.get(h), rel, src),
        Rule::Exact { numeric } => {
            rel == src
                || normalize(*numeric, rel.map(str::to_string))
                    == normalize(*numeric, src.map(str::to_string))
        }
    }
}

/// Table `ti`'s released and source rows by traced parent (the whole table for a
/// parent-less one), and the groups in the order their first released row comes.
fn groups_of(tables: &[TableData], ti: usize) -> Groups {
    // Group id: the traced source parent row; a parent-less table is one group.
    const ROOT_GROUP: usize = usize::MAX;
    let t = &tables[ti];
    let mut groups: HashMap<usize, (Vec<usize>, Vec<usize>)> = HashMap::new();
    let mut order: Vec<usize> = Vec::new();
    for r in 0..t.rel.rows() {
        let g = match t.parent {
            None => ROOT_GROUP,
            // An unresolved FK or an untraced parent is already reported elsewhere.
            Some(p) => match t.rel_parent[r].and_then(|pr| tables[p].rel_to_src[pr]) {
                Some(ps) => ps,
                None => continue,
            },
        };
        match groups.entry(g) {
            Entry::Occupied(mut e) => e.get_mut().0.push(r),
            Entry::Vacant(e) => {
                order.push(g);
                e.insert((vec![r], Vec::new()));
            }
        }
    }
    for s in 0..t.src.rows() {
        let g = match t.parent {
            None => ROOT_GROUP,
            Some(_) => match t.src_parent[s] {
                Some(ps) => ps,
                None => continue,
            },
        };
        if let Some(group) = groups.get_mut(&g) {
            group.1.push(s);
        }
    }
    (groups, order)
}

/// Per group (traced parent), its released rows and its source rows; and the groups' order.
type Groups = (HashMap<usize, (Vec<usize>, Vec<usize>)>, Vec<usize>);

/// A key-less table: within each traced parent (the whole table for a key-less entity
/// table), pair released rows with source rows by a maximum assignment over "may stand
/// for" edges between classes of equal rows ([`pair_group`]).
fn by_content(
    tables: &[TableData],
    ti: usize,
    hiers: &HashMap<String, Hier>,
    relocating: Option<u64>,
    out: &mut Check,
) -> (Vec<Option<usize>>, Untruthful) {
    let t = &tables[ti];
    let mut mapped = vec![None; t.rel.rows()];
    let (groups, order) = groups_of(tables, ti);

    let exact: Vec<&Content> = t
        .content
        .iter()
        .filter(|c| matches!(c.rule, Rule::Exact { .. }))
        .collect();
    let qi: Vec<&Content> = t
        .content
        .iter()
        .filter(|c| matches!(c.rule, Rule::Qi(_)))
        .collect();
    let qi_hiers: Vec<Option<&Hier>> = qi
        .iter()
        .map(|c| match &c.rule {
            Rule::Qi(h) => hiers.get(h),
            Rule::Exact { .. } => None,
        })
        .collect();
    let columns = Columns {
        exact: &exact,
        qi: &qi,
        hiers: &qi_hiers,
    };
    let (scope, among) = if t.parent.is_some() {
        (
            "no source row under the same parent",
            " under the same parent",
        )
    } else {
        ("no source row", "")
    };

    let mut untruthful = Untruthful::default();
    for g in order {
        let Some((rels, srcs)) = groups.get(&g) else {
            continue;
        };
        let first = rels.first().map_or(0, |&r| t.rel_row(r));
        let (pairings, moved) = pair_group(t, rels, srcs, &columns, relocating);
        untruthful.cells += moved.cells;
        untruthful.at_least |= moved.at_least;
        for (i, pairing) in pairings.into_iter().enumerate() {
            let r = rels[i];
            out.at([ti, 1, first, t.rel_row(r)]);
            match pairing {
                Pairing::Paired(s) => mapped[r] = Some(s),
                Pairing::NoCandidate => out.record(format!(
                    "{}: {scope} has values it can stand for",
                    t.describe(tables, r)
                )),
                Pairing::Outnumbered => out.record(format!(
                    "{}: more released rows than source rows{among} that it can stand for",
                    t.describe(tables, r)
                )),
            }
        }
    }
    (mapped, untruthful)
}

/// The content columns of a key-less table, split by how a released cell must relate to
/// its source cell.
struct Columns<'a> {
    exact: &'a [&'a Content],
    qi: &'a [&'a Content],
    /// The hierarchy of each QI column (None: undefined, so only the value or `*` fit).
    hiers: &'a [Option<&'a Hier>],
}

/// Rendered cells of one row, one per column of a list.
type Cells = Vec<Option<String>>;

/// What became of one released row of a key-less group.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Pairing {
    /// It stands for this source row.
    Paired(usize),
    /// No source row of the group has values it can stand for.
    NoCandidate,
    /// Source rows it could stand for exist, but all are taken by other released rows.
    Outnumbered,
}

/// Distinct cells of one column, as dense ids.
#[derive(Default)]
struct Interner {
    ids: HashMap<Option<String>, u32>,
    values: Vec<Option<String>>,
}

impl Interner {
    fn id(&mut self, v: Option<String>) -> u32 {
        if let Some(&id) = self.ids.get(&v) {
            return id;
        }
        let id = self.values.len() as u32;
        self.ids.insert(v.clone(), id);
        self.values.push(v);
        id
    }
}

/// The source values (ids of one column's [`Interner`]) a released label may stand for.
struct Admitted {
    ids: Vec<u32>,
    fits: Vec<bool>,
}

/// The cells a row must repeat exactly (SENSITIVE and INSENSITIVE), normalized.
fn exact_cells(cols: &Columns<'_>, side: &super::data::Side, is_src: bool, row: usize) -> Cells {
    cols.exact
        .iter()
        .map(|c| {
            let numeric = matches!(c.rule, Rule::Exact { numeric: true });
            normalize(numeric, side.cell(if is_src { c.src } else { c.rel }, row))
        })
        .collect()
}

/// A group's source rows as classes of equal rows (exact cells, QI values), bucketed by
/// their exact cells.
struct SourceClasses {
    /// Per QI column, its values as ids.
    values: Vec<Interner>,
    /// Exact cells -> bucket.
    exact_ids: HashMap<Cells, usize>,
    /// Per bucket, its classes.
    bucket: Vec<Vec<usize>>,
    /// Per class, its bucket.
    bucket_of: Vec<usize>,
    /// [exact id, value id per QI column] -> class, so a lookup can borrow a reused buffer.
    src_class: HashMap<Vec<u32>, usize>,
    /// Per class, its source rows.
    src_rows: Vec<Vec<usize>>,
    /// Per class, its value id per QI column.
    src_codes: Vec<Vec<u32>>,
}

fn source_classes(t: &TableData, srcs: &[usize], cols: &Columns<'_>) -> SourceClasses {
    let nqi = cols.qi.len();
    let mut values: Vec<Interner> = (0..nqi).map(|_| Interner::default()).collect();
    let mut exact_ids: HashMap<Cells, usize> = HashMap::new();
    let mut bucket: Vec<Vec<usize>> = Vec::new();
    let mut bucket_of: Vec<usize> = Vec::new();
    let mut src_class: HashMap<Vec<u32>, usize> = HashMap::new();
    let mut src_rows: Vec<Vec<usize>> = Vec::new();
    let mut src_codes: Vec<Vec<u32>> = Vec::new();
    for &s in srcs {
        let next = exact_ids.len();
        let e = *exact_ids
            .entry(exact_cells(cols, &t.src, true, s))
            .or_insert(next);
        if e == bucket.len() {
            bucket.push(Vec::new());
        }
        let mut key = Vec::with_capacity(nqi + 1);
        key.push(e as u32);
        for (c, v) in cols.qi.iter().zip(values.iter_mut()) {
            key.push(v.id(t.src.cell(c.src, s)));
        }
        let class = match src_class.entry(key) {
            Entry::Occupied(o) => *o.get(),
            Entry::Vacant(v) => {
                let class = src_rows.len();
                src_codes.push(v.key()[1..].to_vec());
                bucket[e].push(class);
                bucket_of.push(e);
                src_rows.push(Vec::new());
                v.insert(class);
                class
            }
        };
        src_rows[class].push(s);
    }
    SourceClasses {
        values,
        exact_ids,
        bucket,
        bucket_of,
        src_class,
        src_rows,
        src_codes,
    }
}

/// A released class's exact bucket (if any source class shares its exact cells) and labels.
type ReleasedKeyOf = (Option<usize>, Cells);

/// A group's released rows as classes of equal rows (exact cells, QI labels): per class its
/// positions in `rels`, and its [`ReleasedKeyOf`].
fn released_classes(
    t: &TableData,
    rels: &[usize],
    cols: &Columns<'_>,
    exact_ids: &HashMap<Cells, usize>,
) -> (Vec<Vec<usize>>, Vec<ReleasedKeyOf>) {
    let mut rel_class: HashMap<(Cells, Cells), usize> = HashMap::new();
    let mut rel_members: Vec<Vec<usize>> = Vec::new();
    let mut rel_keys: Vec<ReleasedKeyOf> = Vec::new();
    for (i, &r) in rels.iter().enumerate() {
        let exact = exact_cells(cols, &t.rel, false, r);
        let labels: Cells = cols.qi.iter().map(|c| t.rel.cell(c.rel, r)).collect();
        let class = match rel_class.entry((exact, labels)) {
            Entry::Occupied(o) => *o.get(),
            Entry::Vacant(v) => {
                let class = rel_members.len();
                rel_keys.push((exact_ids.get(&v.key().0).copied(), v.key().1.clone()));
                rel_members.push(Vec::new());
                v.insert(class);
                class
            }
        };
        rel_members[class].push(i);
    }
    (rel_members, rel_keys)
}

/// What each distinct label of each QI column admits among the group's source values.
fn admitted_sets(
    values: &[Interner],
    rel_keys: &[ReleasedKeyOf],
    cols: &Columns<'_>,
) -> Vec<HashMap<Option<String>, Admitted>> {
    let mut admitted: Vec<HashMap<Option<String>, Admitted>> =
        (0..values.len()).map(|_| HashMap::new()).collect();
    for (_, labels) in rel_keys {
        for (q, label) in labels.iter().enumerate() {
            if admitted[q].contains_key(label) {
                continue;
            }
            let fits: Vec<bool> = values[q]
                .values
                .iter()
                .map(|v| qi_ok(cols.hiers[q], label.as_deref(), v.as_deref()))
                .collect();
            let ids = (0..fits.len() as u32)
                .filter(|&v| fits[v as usize])
                .collect();
            admitted[q].insert(label.clone(), Admitted { ids, fits });
        }
    }
    admitted
}

/// Pairs the released rows `rels` of one group with its source rows `srcs` (row indices)
/// by a maximum assignment. Rows with equal cells are interchangeable, so both sides are
/// classes first: a source class is (exact cells, QI values), a released class (exact
/// cells, QI labels). A released class's candidates are found by enumerating the value
/// tuples its labels admit when that is cheaper than scanning the source classes that
/// share its exact cells. A greedy pass pairs most rows; augmenting paths ([`complete`])
/// make the assignment maximum. `relocating` (a hybrid release's budget of cells), the rows
/// left over are then paired at the fewest untruthful QI cells ([`relocate_leftovers`]).
/// Returns a [`Pairing`] per entry of `rels`, and the untruthful cells of the pairing.
fn pair_group(
    t: &TableData,
    rels: &[usize],
    srcs: &[usize],
    cols: &Columns<'_>,
    relocating: Option<u64>,
) -> (Vec<Pairing>, Untruthful) {
    let SourceClasses {
        values,
        exact_ids,
        bucket,
        bucket_of,
        src_class,
        src_rows,
        src_codes,
    } = source_classes(t, srcs, cols);
    let (rel_members, rel_keys) = released_classes(t, rels, cols, &exact_ids);
    let admitted = admitted_sets(&values, &rel_keys, cols);
    let by_value = ByValue::new(&bucket, &src_codes);

    // Calls `f` with each source class released class `class` may stand for, until `f`
    // says stop. A tuple costs a hash lookup, a scanned class a few array reads.
    let sets_of = |class: usize| -> Vec<&Admitted> {
        rel_keys[class]
            .1
            .iter()
            .enumerate()
            .filter_map(|(q, l)| admitted[q].get(l))
            .collect()
    };
    let product = |sets: &[&Admitted]| {
        sets.iter()
            .try_fold(1usize, |n, a| n.checked_mul(a.ids.len()))
            .unwrap_or(usize::MAX)
    };
    let visit = |class: usize, f: &mut dyn FnMut(usize) -> bool| {
        let Some(e) = rel_keys[class].0 else {
            return;
        };
        let sets = sets_of(class);
        if product(&sets).saturating_mul(4) <= bucket[e].len() {
            for_each_tuple(e as u32, &sets, |key| {
                src_class.get(key).is_none_or(|&c| f(c))
            });
        } else {
            let fits = |c: usize| {
                src_codes[c]
                    .iter()
                    .zip(&sets)
                    .all(|(&v, a)| a.fits[v as usize])
            };
            let narrowed = by_value.narrowed(e, &sets, bucket[e].len());
            for &c in narrowed.as_deref().unwrap_or(&bucket[e]) {
                if fits(c) && !f(c) {
                    return;
                }
            }
        }
    };

    let supply: Vec<usize> = rel_members.iter().map(Vec::len).collect();
    let capacity: Vec<usize> = src_rows.iter().map(Vec::len).collect();
    // A complete assignment proves every released row truthful, and relanon's releases
    // almost always have one that a greedy pass comes close to: most specific classes
    // first, each taking what its candidates have left, with no edge list. Augmenting
    // paths ([`complete`]) then place what is left, or show it cannot be placed.
    let mut flows = greedy(&supply, &capacity, |c| product(&sets_of(c)), &visit);
    let no_candidate = complete(&supply, &capacity, &mut flows, &mut |class| {
        let mut found = Vec::new();
        visit(class, &mut |sc| {
            found.push(sc);
            true
        });
        found
    });
    let untruthful = match relocating {
        Some(limit) => {
            let classes = Classes {
                supply: &supply,
                capacity: &capacity,
                rel_keys: &rel_keys,
                admitted: &admitted,
                src_codes: &src_codes,
                bucket_of: &bucket_of,
            };
            relocate_leftovers(&classes, &mut flows, limit)
        }
        None => Untruthful::default(),
    };
    let pairings = pair_rows(rels.len(), &rel_members, &src_rows, &flows, &no_candidate);
    (pairings, untruthful)
}

/// A bucket's source classes below this many are scanned whole: an index would not pay.
const INDEXED: usize = 64;

/// Per bucket of at least [`INDEXED`] source classes, per QI column, its classes by value id
/// (each list ascending): a released class whose labels admit few values of some column
/// reads only the classes holding those values, not its whole bucket. On UCI Adult at k = 5
/// the scan of whole buckets was 29% of verify's time: every released class scanned the
/// thousands of source classes that share its exact cells.
struct ByValue {
    of: HashMap<usize, Vec<HashMap<u32, Vec<usize>>>>,
}

impl ByValue {
    fn new(bucket: &[Vec<usize>], src_codes: &[Vec<u32>]) -> ByValue {
        let mut of = HashMap::new();
        for (e, classes) in bucket.iter().enumerate() {
            let Some(&first) = classes.first() else {
                continue;
            };
            if classes.len() < INDEXED {
                continue;
            }
            let mut columns: Vec<HashMap<u32, Vec<usize>>> =
                vec![HashMap::new(); src_codes[first].len()];
            for &c in classes {
                for (q, &v) in src_codes[c].iter().enumerate() {
                    columns[q].entry(v).or_default().push(c);
                }
            }
            of.insert(e, columns);
        }
        ByValue { of }
    }

    /// The classes of bucket `e` (of `whole` classes) holding an admitted value of the column
    /// whose admitted values (`sets`) hold the fewest, in bucket order (ascending); None where
    /// that is not fewer than the whole bucket. Every class that fits `sets` is among them.
    fn narrowed(&self, e: usize, sets: &[&Admitted], whole: usize) -> Option<Vec<usize>> {
        let columns = self.of.get(&e)?;
        let held = |q: usize| -> usize {
            sets[q]
                .ids
                .iter()
                .map(|v| columns[q].get(v).map_or(0, Vec::len))
                .sum()
        };
        let (q, n) = (0..sets.len().min(columns.len()))
            .map(|q| (q, held(q)))
            .min_by_key(|&(q, n)| (n, q))?;
        if n >= whole {
            return None;
        }
        let mut classes: Vec<usize> = sets[q]
            .ids
            .iter()
            .filter_map(|v| columns[q].get(v))
            .flatten()
            .copied()
            .collect();
        // A class holds one value per column, so the lists are disjoint.
        classes.sort_unstable();
        Some(classes)
    }
}

/// Calls its second argument with each source class a released class may stand for, until
/// that says stop.
type Visit<'a> = dyn Fn(usize, &mut dyn FnMut(usize) -> bool) + 'a;

/// The greedy pass of [`pair_group`]: released classes in order of `specific` (fewest
/// candidates first), each taking what its candidates (`visit`) have left.
fn greedy(
    supply: &[usize],
    capacity: &[usize],
    specific: impl Fn(usize) -> usize,
    visit: &Visit<'_>,
) -> Vec<Vec<(usize, usize)>> {
    let mut flows: Vec<Vec<(usize, usize)>> = vec![Vec::new(); supply.len()];
    let mut left = capacity.to_vec();
    let mut order: Vec<(usize, usize)> = (0..supply.len()).map(|c| (specific(c), c)).collect();
    order.sort_unstable();
    for &(_, class) in &order {
        let mut need = supply[class];
        visit(class, &mut |sc| {
            let units = need.min(left[sc]);
            if units > 0 {
                left[sc] -= units;
                need -= units;
                flows[class].push((sc, units));
            }
            need > 0
        });
    }
    flows
}

/// One key-less group in classes, as [`pair_group`] sees it.
struct Classes<'a> {
    supply: &'a [usize],
    capacity: &'a [usize],
    rel_keys: &'a [ReleasedKeyOf],
    admitted: &'a [HashMap<Option<String>, Admitted>],
    src_codes: &'a [Vec<u32>],
    /// Per source class, its exact bucket.
    bucket_of: &'a [usize],
}

/// Seed 003 on a key-less table: the rows a maximum truthful assignment (`flows`) left over
/// are paired at the fewest QI cells whose label does not stand for the value, exactly
/// ([`transport::cheapest`]), and the pairs added to `flows`. The rows of a released class
/// and the source rows the leftover labels cannot tell apart are interchangeable, so the
/// problem is as small as the groups that moved. Which maximum truthful assignment was
/// taken does not matter when each column's labels partition its values (a full-domain
/// release: pairing equal rows first is optimal for a metric such as this count); otherwise
/// the pairing found is still one that exists, so a count within the budget is proven. With
/// more rows left over than `limit` cells, the budget is spent (each costs a cell at least):
/// that bound is the count and nothing more is paired.
fn relocate_leftovers(
    c: &Classes<'_>,
    flows: &mut [Vec<(usize, usize)>],
    limit: u64,
) -> Untruthful {
    let (used, rel_left) = leftovers(c, flows);
    let rows: usize = rel_left.iter().map(|&(_, u)| u).sum();
    if rows == 0 {
        return Untruthful::default();
    }
    if rows as u64 > limit {
        return Untruthful {
            cells: rows,
            at_least: true,
        };
    }
    let in_play = InPlay::new(c, &rel_left);
    let merged = merged_sources(c, &used, &in_play);
    let mut cost = Vec::with_capacity(rel_left.len() * merged.len());
    for (i, &(class, _)) in rel_left.iter().enumerate() {
        for m in &merged {
            let same_exact = c.rel_keys[class].0 == Some(m.bucket);
            cost.push(same_exact.then(|| in_play.misfits(i, &m.fits)));
        }
    }
    let supply: Vec<usize> = rel_left.iter().map(|&(_, u)| u).collect();
    let capacity: Vec<usize> = merged
        .iter()
        .map(|m| m.members.iter().map(|&(_, u)| u).sum())
        .collect();
    let (shipments, cells) = transport::cheapest(&supply, &capacity, &cost);
    ship(&shipments, &rel_left, merged, flows);
    Untruthful {
        cells: cells as usize,
        at_least: false,
    }
}

/// Rows each source class gave to `flows`, and the released classes with rows left (class,
/// rows).
fn leftovers(c: &Classes<'_>, flows: &[Vec<(usize, usize)>]) -> (Vec<usize>, Vec<(usize, usize)>) {
    let mut used = vec![0usize; c.capacity.len()];
    let mut rel_left = Vec::new();
    for (class, fl) in flows.iter().enumerate() {
        let mut sent = 0;
        for &(sc, units) in fl {
            used[sc] += units;
            sent += units;
        }
        if c.supply[class] > sent {
            rel_left.push((class, c.supply[class] - sent));
        }
    }
    (used, rel_left)
}

/// The labels still to pair, per QI column, and each leftover released class's among them.
struct InPlay<'a> {
    labels: Vec<Vec<&'a Admitted>>,
    /// Where each column's labels start in a [`Merged::fits`].
    offsets: Vec<usize>,
    /// Per leftover released class, per column, its label's index among the column's.
    of_class: Vec<Vec<usize>>,
}

impl<'a> InPlay<'a> {
    fn new(c: &Classes<'a>, rel_left: &[(usize, usize)]) -> InPlay<'a> {
        let nqi = c.admitted.len();
        let mut labels: Vec<Vec<&Admitted>> = vec![Vec::new(); nqi];
        let mut index: Vec<HashMap<&Option<String>, usize>> = vec![HashMap::new(); nqi];
        let of_class = rel_left
            .iter()
            .map(|&(class, _)| {
                (0..nqi)
                    .map(|q| {
                        let label = &c.rel_keys[class].1[q];
                        *index[q].entry(label).or_insert_with(|| {
                            labels[q].push(&c.admitted[q][label]);
                            labels[q].len() - 1
                        })
                    })
                    .collect()
            })
            .collect();
        let mut offsets = Vec::with_capacity(nqi);
        let mut at = 0;
        for l in &labels {
            offsets.push(at);
            at += l.len();
        }
        InPlay {
            labels,
            offsets,
            of_class,
        }
    }

    /// Which labels in play fit a source class's values, column after column.
    fn fits(&self, codes: &[u32]) -> Vec<bool> {
        self.labels
            .iter()
            .zip(codes)
            .flat_map(|(labels, &v)| labels.iter().map(move |a| a.fits[v as usize]))
            .collect()
    }

    /// The QI cells of leftover released class `i` whose label does not fit `fits`.
    fn misfits(&self, i: usize, fits: &[bool]) -> u32 {
        let own = &self.of_class[i];
        (0..own.len())
            .filter(|&q| !fits[self.offsets[q] + own[q]])
            .count() as u32
    }
}

/// Source classes with rows left that the labels in play cannot tell apart.
struct Merged {
    bucket: usize,
    fits: Vec<bool>,
    /// (source class, rows left).
    members: Vec<(usize, usize)>,
}

fn merged_sources(c: &Classes<'_>, used: &[usize], in_play: &InPlay<'_>) -> Vec<Merged> {
    let mut at: HashMap<(usize, Vec<bool>), usize> = HashMap::new();
    let mut merged: Vec<Merged> = Vec::new();
    for (sc, (&capacity, &used)) in c.capacity.iter().zip(used).enumerate() {
        let free = capacity - used;
        if free == 0 {
            continue;
        }
        let key = (c.bucket_of[sc], in_play.fits(&c.src_codes[sc]));
        let next = merged.len();
        let m = *at.entry(key.clone()).or_insert(next);
        if m == next {
            merged.push(Merged {
                bucket: key.0,
                fits: key.1,
                members: Vec::new(),
            });
        }
        merged[m].members.push((sc, free));
    }
    merged
}

/// Adds the shipments to `flows`, each taking its merged class's source classes in order.
fn ship(
    shipments: &[transport::Shipment],
    rel_left: &[(usize, usize)],
    merged: Vec<Merged>,
    flows: &mut [Vec<(usize, usize)>],
) {
    let mut members: Vec<std::vec::IntoIter<(usize, usize)>> =
        merged.into_iter().map(|m| m.members.into_iter()).collect();
    let mut head: Vec<Option<(usize, usize)>> = members.iter_mut().map(Iterator::next).collect();
    for sh in shipments {
        let class = rel_left[sh.left].0;
        let mut units = sh.units;
        while units > 0 {
            let Some((sc, free)) = head[sh.right].as_mut() else {
                break;
            };
            let take = units.min(*free);
            flows[class].push((*sc, take));
            units -= take;
            *free -= take;
            if *free == 0 {
                head[sh.right] = members[sh.right].next();
            }
        }
    }
}

/// Turns the assignment between classes back into one between rows: the rows of a class
/// are interchangeable, so each class's flow takes its members and its source rows in
/// order. A row left over is outnumbered, or has no candidate at all when its class had
/// none, which is the worse finding.
fn pair_rows(
    rels: usize,
    rel_members: &[Vec<usize>],
    src_rows: &[Vec<usize>],
    flows: &[Vec<(usize, usize)>],
    no_candidate: &[bool],
) -> Vec<Pairing> {
    let mut out = vec![Pairing::Outnumbered; rels];
    let mut taken = vec![0usize; src_rows.len()];
    for (class, members) in rel_members.iter().enumerate() {
        let mut members = members.iter();
        for &(sc, units) in &flows[class] {
            for _ in 0..units {
                let (Some(&i), Some(&s)) = (members.next(), src_rows[sc].get(taken[sc])) else {
                    break;
                };
                taken[sc] += 1;
                out[i] = Pairing::Paired(s);
            }
        }
        if no_candidate[class] {
            for &i in members {
                out[i] = Pairing::NoCandidate;
            }
        }
    }
    out
}

/// Calls `f` with `[exact, v_1, ..., v_q]` for every tuple of value ids taking one id from
/// each set, in odometer order, in one reused buffer, until `f` returns false.
fn for_each_tuple(exact: u32, sets: &[&Admitted], mut f: impl FnMut(&[u32]) -> bool) {
    if sets.iter().any(|a| a.ids.is_empty()) {
        return;
    }
    let mut at = vec![0usize; sets.len()];
    let mut key: Vec<u32> = std::iter::once(exact)
        .chain(sets.iter().map(|a| a.ids[0]))
        .collect();
    loop {
        if !f(&key) {
            return;
        }
        // Advance the last position that can move; reset those after it.
        let Some(q) = (0..sets.len())
            .rev()
            .find(|&q| at[q] + 1 < sets[q].ids.len())
        else {
            return;
        };
        at[q] += 1;
        key[q + 1] = sets[q].ids[at[q]];
        for later in q + 1..sets.len() {
            at[later] = 0;
            key[later + 1] = sets[later].ids[0];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// The narrowed candidates hold every class of the bucket that fits, in bucket order,
    /// and nothing from another bucket: checked against the whole scan on random classes.
    #[test]
    fn narrowed_candidates_hold_every_fitting_class_in_bucket_order() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let (nqi, values) = (3usize, [12u32, 5, 30]);
        for round in 0..200 {
            let classes = rng.random_range(1..400usize);
            let src_codes: Vec<Vec<u32>> = (0..classes)
                .map(|_| (0..nqi).map(|q| rng.random_range(0..values[q])).collect())
                .collect();
            let mut bucket: Vec<Vec<usize>> = vec![Vec::new(); 3];
            for c in 0..classes {
                bucket[rng.random_range(0..3usize)].push(c);
            }
            let by_value = ByValue::new(&bucket, &src_codes);
            let admitted: Vec<Admitted> = (0..nqi)
                .map(|q| {
                    let fits: Vec<bool> = (0..values[q]).map(|_| rng.random_bool(0.3)).collect();
                    let ids = (0..values[q]).filter(|&v| fits[v as usize]).collect();
                    Admitted { ids, fits }
                })
                .collect();
            let sets: Vec<&Admitted> = admitted.iter().collect();
            let fits = |c: usize| {
                src_codes[c]
                    .iter()
                    .zip(&sets)
                    .all(|(&v, a)| a.fits[v as usize])
            };
            for (e, whole) in bucket.iter().enumerate() {
                let want: Vec<usize> = whole.iter().copied().filter(|&c| fits(c)).collect();
                let Some(narrowed) = by_value.narrowed(e, &sets, whole.len()) else {
                    continue;
                };
                assert!(narrowed.len() < whole.len(), "round {round}: not narrower");
                assert!(narrowed.windows(2).all(|w| w[0] < w[1]), "round {round}");
                assert!(narrowed.iter().all(|c| whole.contains(c)), "round {round}");
                let got: Vec<usize> = narrowed.into_iter().filter(|&c| fits(c)).collect();
                assert_eq!(got, want, "round {round}, bucket {e}");
            }
        }
    }
}
