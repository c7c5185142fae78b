//! Check "sa truthfulness" (spec Sec. 3.5 item 7): the SA side publishes the source values of
//! the rows the QI side keeps, and nothing else, without knowing which SA row belongs to
//! which QI row (that pairing is what anatomy hides, and nothing in the release records it).
//!
//! The truthfulness check traced every QI row to its source row (`rel_to_src`). Then:
//! - v-v: at every slot, the published multiset of SENSITIVE tuples is the multiset of the
//!   source tuples of the rows at that slot;
//! - t-t: in every group, the multiset of SA-trees, each read as a map slot -> tuple, is the
//!   multiset of the members' maps slot -> source tuple of their row there.
//!
//! A key-less table's rows are traced by their QI and INSENSITIVE cells alone (the SENSITIVE
//! ones are on the SA side), so rows with equal cells under one parent are interchangeable:
//! any pairing with their source rows is as true as another. Their source values are chosen
//! here, by a maximum flow ([`super::flow`]), to agree with what their slots publish where
//! some choice does; the comparison above is then exact. A choice is a real pairing of those
//! rows with their source rows, so a release that passes is truthful; one whose rows can only
//! be paired truthfully by a choice that crosses several such classes at one slot could fail.

use rustc_hash::FxHashMap as HashMap;

use super::super::data::{show_cell, Rule, TableData};
use super::super::truth::normalize;
use super::super::Check;
use super::flow::Network;
use super::{Group, Layout, Published, SaCol, Tuple};
use crate::plan::{Plan, Variant};

/// t-t: per SA-tree, the members whose source values it holds (empty where none does).
pub(super) type Pairs = Vec<Vec<usize>>;

pub(super) fn check(
    plan: &Plan,
    tables: &[TableData],
    layout: &Layout,
    published: &Published,
    sa: &[Vec<SaCol>],
    variant: Variant,
    out: &mut Check,
) -> Pairs {
    let values = source_tuples(tables, layout, published, sa);
    match variant {
        Variant::VertexVertex => {
            per_slot(plan, layout, published, sa, &values, out);
            Vec::new()
        }
        Variant::TreeTree => per_group(tables, layout, published, sa, &values, out),
    }
}

/// A tuple as text: one cell as itself, several in parentheses.
fn show_tuple(t: &Tuple) -> String {
    let cells: Vec<String> = t.iter().map(|c| show_cell(c.as_deref())).collect();
    match cells.len() {
        1 => cells[0].clone(),
        _ => format!("({})", cells.join(", ")),
    }
}

/// A multiset of tuples as text, sorted, `'a' x2, 'b'`.
fn show_multiset(m: &HashMap<Tuple, u64>) -> String {
    let mut items: Vec<(&Tuple, &u64)> = m.iter().filter(|(_, &n)| n > 0).collect();
    items.sort();
    let shown: Vec<String> = items
        .iter()
        .map(|(t, &n)| match n {
            1 => show_tuple(t),
            _ => format!("{} x{n}", show_tuple(t)),
        })
        .collect();
    format!("{{{}}}", shown.join(", "))
}

/// Per family table, per released row: the SENSITIVE tuple of the source row it stands for
/// (None where it was not traced, or the table has no SENSITIVE column).
fn source_tuples(
    tables: &[TableData],
    layout: &Layout,
    published: &Published,
    sa: &[Vec<SaCol>],
) -> Vec<Vec<Option<Tuple>>> {
    let mut out: Vec<Vec<Option<Tuple>>> =
        tables.iter().map(|t| vec![None; t.rel.rows()]).collect();
    // Interchangeable rows whose sources differ in value: (table, rows, source tuples).
    let mut open: Vec<(usize, Vec<usize>, Vec<Tuple>)> = Vec::new();
    for (ti, t) in tables.iter().enumerate() {
        if sa[ti].is_empty() {
            continue;
        }
        let of = |s: usize| -> Tuple {
            sa[ti]
                .iter()
                .map(|c| normalize(c.numeric, t.src.cell(c.src, s)))
                .collect()
        };
        if !t.rel_pk.is_empty() {
            for (r, s) in t.rel_to_src.iter().enumerate() {
                out[ti][r] = s.map(of);
            }
            continue;
        }
        for (rows, tuples) in interchangeable(t) {
            let values: Vec<Tuple> = tuples.iter().map(|&s| of(s)).collect();
            if values.windows(2).all(|w| w[0] == w[1]) {
                for r in rows {
                    out[ti][r] = values.first().cloned();
                }
            } else {
                open.push((ti, rows, values));
            }
        }
    }
    // Nothing to choose: every row's values are settled (the common case, rows with keys).
    if open.is_empty() {
        return out;
    }
    // Rows whose values are settled take their share of what their slots publish first.
    let mut left: Vec<HashMap<Tuple, u64>> = published.at_slot.clone();
    for (ti, rows) in out.iter().enumerate() {
        for (r, tuple) in rows.iter().enumerate() {
            if let (Some(tuple), Some(s)) = (tuple, layout.row_slot[ti][r]) {
                take(&mut left[s], tuple, 1);
            }
        }
    }
    for (ti, rows, values) in open {
        for (r, tuple) in choose(&rows, values, &layout.row_slot[ti], &mut left) {
            out[ti][r] = Some(tuple);
        }
    }
    out
}

/// Whether two multisets are equal, entries counted 0 being absent.
fn same_multiset(a: &HashMap<Tuple, u64>, b: &HashMap<Tuple, u64>) -> bool {
    let within = |x: &HashMap<Tuple, u64>, y: &HashMap<Tuple, u64>| {
        x.iter()
            .all(|(t, &n)| n == 0 || y.get(t).copied().unwrap_or(0) == n)
    };
    within(a, b) && within(b, a)
}

fn take(m: &mut HashMap<Tuple, u64>, t: &Tuple, n: u64) {
    if let Some(have) = m.get_mut(t) {
        *have = have.saturating_sub(n);
    }
}

/// A key-less table's classes of interchangeable rows: released rows whose traced source
/// rows share their parent and their QI / INSENSITIVE cells, with every source row of the
/// class (kept or not). Classes in order of their first released row.
fn interchangeable(t: &TableData) -> Vec<(Vec<usize>, Vec<usize>)> {
    type Key = (Option<usize>, Vec<Option<String>>);
    let key = |s: usize| -> Key {
        let cells = t
            .content
            .iter()
            .map(|c| {
                let numeric = matches!(c.rule, Rule::Exact { numeric: true });
                normalize(numeric, t.src.cell(c.src, s))
            })
            .collect();
        (t.src_parent[s], cells)
    };
    let mut class_of: HashMap<Key, usize> = HashMap::default();
    let mut src_class = Vec::with_capacity(t.src.rows());
    let mut sources: Vec<Vec<usize>> = Vec::new();
    for s in 0..t.src.rows() {
        let next = sources.len();
        let c = *class_of.entry(key(s)).or_insert(next);
        if c == next {
            sources.push(Vec::new());
        }
        sources[c].push(s);
        src_class.push(c);
    }
    let mut rows: Vec<Vec<usize>> = vec![Vec::new(); sources.len()];
    let mut order: Vec<usize> = Vec::new();
    for (r, s) in t.rel_to_src.iter().enumerate() {
        let Some(s) = *s else { continue };
        let c = src_class[s];
        if rows[c].is_empty() {
            order.push(c);
        }
        rows[c].push(r);
    }
    order
        .into_iter()
        .map(|c| {
            (
                std::mem::take(&mut rows[c]),
                std::mem::take(&mut sources[c]),
            )
        })
        .collect()
}

/// Source values for the interchangeable `rows` (at `row_slot`), one per source value in
/// `values` at most: as many as possible as their slots still publish (a maximum flow from
/// slots to values), the rest from what is left.
fn choose(
    rows: &[usize],
    values: Vec<Tuple>,
    row_slot: &[Option<usize>],
    left: &mut [HashMap<Tuple, u64>],
) -> Vec<(usize, Tuple)> {
    let mut slots: Vec<usize> = Vec::new();
    let mut rows_at: Vec<Vec<usize>> = Vec::new();
    let mut unplaced: Vec<usize> = Vec::new();
    for &r in rows {
        let Some(s) = row_slot.get(r).copied().flatten() else {
            unplaced.push(r);
            continue;
        };
        match slots.iter().position(|&x| x == s) {
            Some(i) => rows_at[i].push(r),
            None => {
                slots.push(s);
                rows_at.push(vec![r]);
            }
        }
    }
    let mut supply: Vec<(Tuple, u64)> = Vec::new();
    for v in values {
        match supply.iter_mut().find(|(t, _)| *t == v) {
            Some(e) => e.1 += 1,
            None => supply.push((v, 1)),
        }
    }
    // Nodes: 0 source, 1 sink, then the slots, then the values.
    let (ns, nv) = (slots.len(), supply.len());
    let mut net = Network::new(2 + ns + nv);
    let mut edges: Vec<(usize, usize, usize)> = Vec::new();
    for (i, &s) in slots.iter().enumerate() {
        net.edge(0, 2 + i, rows_at[i].len() as u64);
        for (j, (v, _)) in supply.iter().enumerate() {
            let room = left[s].get(v).copied().unwrap_or(0);
            if room > 0 {
                edges.push((i, j, net.edge(2 + i, 2 + ns + j, room)));
            }
        }
    }
    for (j, (_, n)) in supply.iter().enumerate() {
        net.edge(2 + ns + j, 1, *n);
    }
    net.max_flow(0, 1);
    let mut chosen = Vec::with_capacity(rows.len());
    let mut next: Vec<usize> = vec![0; ns];
    for (i, j, e) in edges {
        let s = slots[i];
        for _ in 0..net.flow(e) {
            let r = rows_at[i][next[i]];
            next[i] += 1;
            supply[j].1 -= 1;
            take(&mut left[s], &supply[j].0, 1);
            chosen.push((r, supply[j].0.clone()));
        }
    }
    // What no slot publishes: any source value left, so the comparison shows the difference.
    let rest = rows_at
        .iter()
        .zip(next)
        .flat_map(|(at, n)| at[n..].iter().copied())
        .chain(unplaced);
    let mut spare = supply
        .into_iter()
        .flat_map(|(v, n)| std::iter::repeat_n(v, n as usize));
    for r in rest {
        if let Some(v) = spare.next() {
            chosen.push((r, v));
        }
    }
    chosen
}

/// v-v: every slot publishes the source values of its rows.
fn per_slot(
    plan: &Plan,
    layout: &Layout,
    published: &Published,
    sa: &[Vec<SaCol>],
    values: &[Vec<Option<Tuple>>],
    out: &mut Check,
) {
    let mut at: Vec<HashMap<Tuple, u64>> = vec![HashMap::default(); layout.slots.len()];
    // Slots with a row whose source is unknown (truthfulness reports it) are not compared.
    let mut untraced = vec![false; layout.slots.len()];
    for (ti, rows) in layout.row_slot.iter().enumerate() {
        if sa[ti].is_empty() {
            continue;
        }
        for (r, s) in rows.iter().enumerate() {
            let Some(s) = *s else { continue };
            match &values[ti][r] {
                Some(t) => *at[s].entry(t.clone()).or_default() += 1,
                None => untraced[s] = true,
            }
        }
    }
    for (s, slot) in layout.slots.iter().enumerate() {
        if sa[slot.table].is_empty() || !published.complete[slot.table] || untraced[s] {
            continue;
        }
        let (want, have) = (&at[s], &published.at_slot[s]);
        if !same_multiset(want, have) {
            out.record(format!(
                "{}: the SA side publishes {} but the source rows at it hold {}",
                layout.describe_slot(plan, s),
                show_multiset(have),
                show_multiset(want)
            ));
        }
    }
}

/// A tree read as its (slot, tuple) pairs, sorted.
type Map = Vec<(usize, Tuple)>;

/// How many differing slots a violation shows.
const SHOWN_SLOTS: usize = 3;

/// The slots where two maps differ: (slot, what `a` holds there, what `b` holds there).
fn differences<'a>(a: &'a Map, b: &'a Map) -> Vec<(usize, Option<&'a Tuple>, Option<&'a Tuple>)> {
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < a.len() || j < b.len() {
        match (a.get(i), b.get(j)) {
            (Some((sa, ta)), Some((sb, tb))) if sa == sb => {
                if ta != tb {
                    out.push((*sa, Some(ta), Some(tb)));
                }
                i += 1;
                j += 1;
            }
            (Some((sa, ta)), Some((sb, _))) if sa < sb => {
                out.push((*sa, Some(ta), None));
                i += 1;
            }
            (Some((sa, ta)), None) => {
                out.push((*sa, Some(ta), None));
                i += 1;
            }
            (_, Some((sb, tb))) => {
                out.push((*sb, None, Some(tb)));
                j += 1;
            }
            (None, None) => break,
        }
    }
    out
}

/// t-t: every group's SA-trees are its members' source trees, as multisets.
fn per_group(
    tables: &[TableData],
    layout: &Layout,
    published: &Published,
    sa: &[Vec<SaCol>],
    values: &[Vec<Option<Tuple>>],
    out: &mut Check,
) -> Pairs {
    let mut pairs: Pairs = vec![Vec::new(); published.trees.len()];
    let mut trees_of: Vec<Vec<usize>> = vec![Vec::new(); layout.groups.len()];
    for (i, tree) in published.trees.iter().enumerate() {
        if let Some(g) = tree.group {
            trees_of[g].push(i);
        }
    }
    for (g, group) in layout.groups.iter().enumerate() {
        let Some(members) = member_maps(layout, group, published, sa, values) else {
            continue;
        };
        let mut published_maps: HashMap<&Map, u64> = HashMap::default();
        for &tree in &trees_of[g] {
            *published_maps
                .entry(&published.trees[tree].map)
                .or_default() += 1;
            pairs[tree] = members
                .get(&published.trees[tree].map)
                .cloned()
                .unwrap_or_default();
        }
        let wanted = |map: &Map| members.get(map).map_or(0, |m| m.len() as u64);
        let extra: u64 = published_maps
            .iter()
            .map(|(map, &have)| have.saturating_sub(wanted(map)))
            .sum();
        let missing: u64 = members
            .iter()
            .map(|(map, m)| {
                (m.len() as u64).saturating_sub(published_maps.get(map).copied().unwrap_or(0))
            })
            .sum();
        if extra == 0 && missing == 0 {
            continue;
        }
        let example = example(
            tables,
            layout,
            published,
            &trees_of[g],
            &members,
            &published_maps,
        );
        out.record(format!(
            "group {}: {missing} member(s) have no SA-tree holding their source values and {extra} SA-tree(s) hold values no member's rows hold at those slots{example}",
            group.label
        ));
    }
    pairs
}

/// The members of `group` as their source values at the slots an SA-tree publishes, each
/// map with the members holding it; `None` when a member's row is missing or untraced: a
/// missing row is the slots check's to report, an untraced one truthfulness's.
fn member_maps(
    layout: &Layout,
    group: &Group,
    published: &Published,
    sa: &[Vec<SaCol>],
    values: &[Vec<Option<Tuple>>],
) -> Option<HashMap<Map, Vec<usize>>> {
    let compared: Vec<usize> = group
        .slots
        .iter()
        .copied()
        .filter(|&s| {
            let t = layout.slots[s].table;
            !sa[t].is_empty() && published.complete[t]
        })
        .collect();
    let mut members: HashMap<Map, Vec<usize>> = HashMap::default();
    for &m in &group.members {
        let mut map = Map::with_capacity(compared.len());
        for &s in &compared {
            let &(ti, r) = layout.at.get(&(m, s))?;
            let t = values[ti][r].as_ref()?;
            map.push((s, t.clone()));
        }
        map.sort();
        members.entry(map).or_default().push(m);
    }
    Some(members)
}

/// A group's mismatch made concrete: one SA-tree (of `trees`) published more often than
/// members hold it, against the unmatched member whose tree it is closest to, so the
/// reader sees which slots differ rather than only counts. Empty when there is none.
fn example(
    tables: &[TableData],
    layout: &Layout,
    published: &Published,
    trees: &[usize],
    members: &HashMap<Map, Vec<usize>>,
    published_maps: &HashMap<&Map, u64>,
) -> String {
    let wanted = |map: &Map| members.get(map).map_or(0, |m| m.len() as u64);
    // Shown: one unmatched SA-tree against the unmatched member it is closest to.
    let unmatched_member = |map: &Map, m: &Vec<usize>| {
        (m.len() as u64) > published_maps.get(map).copied().unwrap_or(0)
    };
    trees
        .iter()
        .find(|&&t| {
            let map = &published.trees[t].map;
            published_maps.get(map).copied().unwrap_or(0) > wanted(map)
        })
        .and_then(|&t| {
            let tree = &published.trees[t];
            let (_, m, diff) = members
                .iter()
                .filter(|(map, m)| unmatched_member(map, m))
                .map(|(map, m)| {
                    let diff = differences(&tree.map, map);
                    (diff.len(), m[0], diff)
                })
                .min_by_key(|(n, m, _)| (*n, *m))?;
            let shown: Vec<String> = diff
                .iter()
                .take(SHOWN_SLOTS)
                .map(|(s, sa, src)| {
                    let show = |v: Option<&Tuple>| v.map_or_else(|| "nothing".to_string(), show_tuple);
                    format!(
                        "slot {}: {} where the member's row holds {}",
                        layout.slots[*s].label,
                        show(*sa),
                        show(*src)
                    )
                })
                .collect();
            let more = diff.len().saturating_sub(SHOWN_SLOTS);
            let more = if more > 0 {
                format!(" and {more} more slot(s)")
            } else {
                String::new()
            };
            Some(format!(
                "; e.g. the SA-tree with root sa_id {} differs from the tree of {}, the closest, at {}{more}",
                tree.key,
                tables[0].describe(tables, m),
                shown.join("; ")
            ))
        })
        .unwrap_or_default()
}
