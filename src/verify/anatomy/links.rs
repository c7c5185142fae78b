//! Check "unlinkability" (spec Sec. 3.5 item 9, Sec. 3.3 items 1 and 5): lints for a t-t
//! release whose SA side's keys carry the pairing anatomy hides. Run when a key map is given
//! (the self-check); v-v publishes no SA keys, so there it has nothing to find.
//!
//! The SA-tree a member's QI-tree belongs to is known here only from content: the members
//! whose traced source values a tree holds (`sa_truth`'s pairs). Then:
//!
//! - equal keys: an `__sa` row whose `sa_id` is the released key of the QI row at its slot in
//!   a member its tree belongs to. Independent random keys of a table of n rows make that a
//!   1/n chance per candidate, about one such row per table in all; the lint fires at
//!   [`LINKED_MIN`] rows and five standard deviations above that expectation, which chance
//!   alone reaches about once in ten million tables.
//! - equal order: a group whose SA-trees, taken in the order of their members' released
//!   entity keys, have increasing root `sa_id`s (chance 1/|G|! per group). The lint fires when
//!   more groups do than chance gives by five standard deviations, and at least
//!   [`ORDERED_MIN`] do. Only groups whose trees each belong to exactly one member count.

use std::cmp::Ordering;

use super::super::data::TableData;
use super::super::Check;
use super::sa_truth::Pairs;
use super::{sa_table, Layout, Published, SaKind};
use crate::plan::Plan;

/// Rows with an SA key equal to their QI key before the equal-keys lint may fire.
const LINKED_MIN: usize = 10;
/// Groups in key order before the equal-order lint may fire.
const ORDERED_MIN: usize = 3;
/// How many standard deviations above chance a count must be.
const SIGMAS: f64 = 5.0;

pub(super) fn check(
    plan: &Plan,
    tables: &[TableData],
    layout: &Layout,
    published: &Published,
    pairs: &Pairs,
    out: &mut Check,
) {
    equal_keys(plan, tables, layout, published, pairs, out);
    equal_order(tables, layout, published, pairs, out);
}

/// `sa_id`s that repeat the released key of the QI row they belong to.
fn equal_keys(
    plan: &Plan,
    tables: &[TableData],
    layout: &Layout,
    published: &Published,
    pairs: &Pairs,
    out: &mut Check,
) {
    for (ti, rows) in published.rows.iter().enumerate() {
        let t = &tables[ti];
        let ([pk], false) = (t.rel_pk.as_slice(), rows.is_empty()) else {
            continue;
        };
        let n = t.rel.rows().max(1) as f64;
        let (mut hits, mut expected) = (0usize, 0.0f64);
        for row in rows {
            let (Some(tree), Some(s)) = (row.tree, row.slot) else {
                continue;
            };
            let candidates = pairs.get(tree).map_or(&[][..], Vec::as_slice);
            expected += candidates.len() as f64 / n;
            let linked = candidates.iter().any(|&m| {
                layout
                    .at
                    .get(&(m, s))
                    .filter(|&&(tj, _)| tj == ti)
                    .and_then(|&(_, r)| t.rel.cell(*pk, r))
                    .is_some_and(|key| key == row.key)
            });
            hits += usize::from(linked);
        }
        if hits >= LINKED_MIN && hits as f64 > expected + SIGMAS * expected.sqrt() {
            out.record(format!(
                "{}: {hits} of {} rows have an sa_id equal to the released key of the {} row whose values they hold (independent keys give about {expected:.1}): the SA side's keys must be drawn apart from the QI side's",
                sa_table(plan, ti, SaKind::Trees),
                rows.len(),
                t.name
            ));
        }
    }
}

/// Keys compare as integers where both are, else as text.
fn key_order(a: &str, b: &str) -> Ordering {
    match (a.parse::<i64>(), b.parse::<i64>()) {
        (Ok(x), Ok(y)) => x.cmp(&y),
        _ => a.cmp(b),
    }
}

/// Groups whose SA-trees are in the order of their members' released keys.
fn equal_order(
    tables: &[TableData],
    layout: &Layout,
    published: &Published,
    pairs: &Pairs,
    out: &mut Check,
) {
    let Some(entity) = tables.first() else { return };
    let [pk] = entity.rel_pk.as_slice() else {
        return;
    };
    let mut trees_of: Vec<Vec<usize>> = vec![Vec::new(); layout.groups.len()];
    for (i, tree) in published.trees.iter().enumerate() {
        if let Some(g) = tree.group {
            trees_of[g].push(i);
        }
    }
    let (mut counted, mut ordered) = (0usize, 0usize);
    let (mut mean, mut variance) = (0.0f64, 0.0f64);
    for (g, trees) in trees_of.iter().enumerate() {
        let size = layout.groups[g].members.len();
        if size < 2 || trees.len() != size {
            continue;
        }
        // (member's released key, tree's key), for trees that belong to one member each.
        let mut keyed: Vec<(String, &str)> = Vec::with_capacity(size);
        for &tree in trees {
            let Some(&[m]) = pairs.get(tree).map(Vec::as_slice) else {
                break;
            };
            let Some(key) = entity.rel.cell(*pk, m) else {
                break;
            };
            keyed.push((key, published.trees[tree].key.as_str()));
        }
        keyed.sort_by(|a, b| key_order(&a.0, &b.0));
        keyed.dedup_by(|a, b| a.0 == b.0);
        if keyed.len() != size {
            continue;
        }
        counted += 1;
        let p = (2..=size).fold(1.0f64, |p, k| p / k as f64);
        mean += p;
        variance += p * (1.0 - p);
        if keyed
            .windows(2)
            .all(|w| key_order(w[0].1, w[1].1) == Ordering::Less)
        {
            ordered += 1;
        }
    }
    if ordered >= ORDERED_MIN && ordered as f64 > mean + SIGMAS * variance.sqrt() {
        out.record(format!(
            "in {ordered} of {counted} groups the SA-trees' keys are in the order of their members' released keys (chance gives about {mean:.1}): the order of the SA side's keys must not follow the QI side's"
        ));
    }
}
