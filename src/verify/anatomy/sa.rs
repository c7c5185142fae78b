//! Check "sa side" (spec Sec. 3.5 items 1, 3, 4 and 8): the SA side has the shape its variant
//! promises, read against the QI side's slot trees ([`super::slots`]). The shape is what
//! makes the QI-trees of a group interchangeable to an adversary: an SA-tree with a row too
//! many, a slot whose counts do not add up to |G|, or a QI column beside the sensitive values
//! would single a member out or re-link what anatomy separates.
//!
//! - Tables: exactly the variant's (`<t>__sa` for every family table with a SENSITIVE column
//!   or a descendant with one under t-t; `<t>__sag` for every family table with a SENSITIVE
//!   column under v-v), each with exactly its layout's columns and the table's SENSITIVE ones
//!   (no QI, INSENSITIVE or IDENTIFIER column, no key of the QI side).
//! - t-t: `sa_id` unique and not NULL; `parent_sa_id` names a row of the parent's `__sa`;
//!   an entity `__sa` row's `group_id` names a group of the QI side. Every row sits at a slot
//!   of its table, of its SA-tree's group, under the slot its parent row sits at, so the SA
//!   slot tree is the QI slot tree (A16). A group has |G| SA-trees, each with exactly one row
//!   per slot of its group (the slots of tables that publish an `__sa`). Rows = QI rows.
//! - v-v: every row sits at a slot of its table with a positive `count`; the counts at every
//!   slot of the table sum to |G| (A17). Counts = QI rows.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use super::super::data::{read as read_side, Side, TableData};
use super::super::truth::normalize;
use super::super::{Check, VerifyError};
use super::{
    sa_side_of, sa_table, tree_tables, Layout, Published, SaCol, SaKind, SaRow, SaTree, Tuple,
    COUNT, GROUP, PARENT_SA_ID, SA_ID, SLOT,
};
use crate::plan::{ColumnRole, Plan, Variant};
use crate::warehouse::Warehouse;

/// Reads the SA side of `variant`, reporting every way its shape is wrong.
pub(super) async fn read(
    plan: &Plan,
    release: &Warehouse,
    tables: &[TableData],
    layout: &Layout,
    sa: &[Vec<SaCol>],
    variant: Variant,
    out: &mut Check,
) -> Result<Published, VerifyError> {
    let publishes = match variant {
        Variant::TreeTree => tree_tables(plan, sa),
        Variant::VertexVertex => sa.iter().map(|c| !c.is_empty()).collect(),
    };
    let kind = match variant {
        Variant::TreeTree => SaKind::Trees,
        Variant::VertexVertex => SaKind::Groups,
    };
    for meta in &release.tables {
        let Some((ti, k)) = sa_side_of(plan, &meta.name) else {
            continue;
        };
        if k != kind || !publishes[ti] {
            let why = if k != kind {
                format!(
                    "it is the other variant's table; {} publishes {}",
                    variant.name(),
                    sa_table(plan, ti, kind)
                )
            } else {
                format!(
                    "{} has no SENSITIVE column to publish there",
                    plan.tables[ti].name
                )
            };
            out.record(format!(
                "{} is not part of a {} release ({why}): remove it",
                meta.name,
                variant.name()
            ));
        }
    }
    let mut published = Published {
        at_slot: vec![HashMap::default(); layout.slots.len()],
        trees: Vec::new(),
        rows: (0..tables.len()).map(|_| Vec::new()).collect(),
        complete: vec![false; tables.len()],
    };
    let mut sides: Vec<Option<Side>> = Vec::with_capacity(tables.len());
    for (ti, &publish) in publishes.iter().enumerate() {
        if !publish {
            sides.push(None);
            continue;
        }
        let name = sa_table(plan, ti, kind);
        let Some(meta) = release.table(&name) else {
            out.record(format!(
                "{name} is missing: a {} release publishes the SENSITIVE values of {} there",
                variant.name(),
                plan.tables[ti].name
            ));
            sides.push(None);
            continue;
        };
        let (side, _) = read_side(release, "release", &meta.name, None, &[], None).await?;
        sides.push(Some(side));
    }
    match variant {
        Variant::TreeTree => trees(plan, tables, layout, sa, &sides, &mut published, out),
        Variant::VertexVertex => groups(plan, tables, layout, sa, &sides, &mut published, out),
    }
    Ok(published)
}

/// Reports columns other than `expected` (in order), naming a family table's non-SENSITIVE
/// column specifically; returns the expected columns' positions when all are there.
fn columns(
    plan: &Plan,
    ti: usize,
    name: &str,
    side: &Side,
    expected: &[String],
    variant: Variant,
    out: &mut Check,
) -> Option<Vec<usize>> {
    if side.names() != expected {
        out.record(format!(
            "{name} has columns ({}) but a {} release publishes ({})",
            side.names().join(", "),
            variant.name(),
            expected.join(", ")
        ));
    }
    for found in side.names() {
        if expected.iter().any(|e| e.eq_ignore_ascii_case(found)) {
            continue;
        }
        let column = plan.tables[ti]
            .columns
            .iter()
            .find(|c| c.name.eq_ignore_ascii_case(found));
        let role = match column.map(|c| &c.role) {
            Some(ColumnRole::Key) => "a key",
            Some(ColumnRole::Identifier) => "an IDENTIFIER",
            Some(ColumnRole::QuasiIdentifier { .. }) => "a QI",
            Some(ColumnRole::Insensitive) => "an INSENSITIVE",
            Some(ColumnRole::Sensitive { .. }) | None => continue,
        };
        out.record(format!(
            "{name}.{found} is {role} column of {}: the SA side holds SENSITIVE values only, or it re-links them to the QI side",
            plan.tables[ti].name
        ));
    }
    expected.iter().map(|c| side.col(c)).collect()
}

/// A row's SENSITIVE cells on the SA side, normalized as the source's are.
fn tuple(side: &Side, cols: &[usize], sa: &[SaCol], row: usize) -> Tuple {
    cols.iter()
        .zip(sa)
        .map(|(&c, col)| normalize(col.numeric, side.cell(c, row)))
        .collect()
}

/// The QI side's slot named by a cell, reporting one that is NULL, unknown or of another
/// table.
fn slot_of(
    layout: &Layout,
    plan: &Plan,
    ti: usize,
    name: &str,
    row: usize,
    cell: Option<String>,
    out: &mut Check,
) -> Option<usize> {
    let Some(label) = cell else {
        out.record(format!("{name} row {}: {SLOT} is NULL", row + 1));
        return None;
    };
    let Some(&s) = layout.slot_index.get(&label) else {
        out.record(format!(
            "{name} row {}: slot {label} is not a slot of the QI side",
            row + 1
        ));
        return None;
    };
    let table = layout.slots[s].table;
    if table != ti {
        out.record(format!(
            "{name} row {}: slot {label} is a slot of {}, not of {}",
            row + 1,
            plan.tables[table].name,
            plan.tables[ti].name
        ));
        return None;
    }
    Some(s)
}

/// t-t: the SA-trees through `parent_sa_id`, checked against the QI side's slot trees.
fn trees(
    plan: &Plan,
    tables: &[TableData],
    layout: &Layout,
    sa: &[Vec<SaCol>],
    sides: &[Option<Side>],
    published: &mut Published,
    out: &mut Check,
) {
    let needed = tree_tables(plan, sa);
    // Per table: sa_id -> row, and per row its tree and slot.
    let mut by_key: Vec<HashMap<String, usize>> = vec![HashMap::default(); tables.len()];
    let mut row_tree: Vec<Vec<Option<usize>>> = vec![Vec::new(); tables.len()];
    let mut row_slot: Vec<Vec<Option<usize>>> = vec![Vec::new(); tables.len()];
    let mut per_tree_slot: HashMap<(usize, usize), usize> = HashMap::default();
    for (ti, side) in sides.iter().enumerate() {
        let Some(side) = side else { continue };
        let name = sa_table(plan, ti, SaKind::Trees);
        let expected = SaKind::Trees.expected_columns(ti, &sa[ti]);
        let Some(cols) = columns(plan, ti, &name, side, &expected, Variant::TreeTree, out) else {
            continue;
        };
        published.complete[ti] = true;
        let (key_col, link_col, slot_col, sa_cols) = (cols[0], cols[1], cols[2], &cols[3..]);
        let parent = plan.tables[ti].parent;
        row_tree[ti] = vec![None; side.rows()];
        row_slot[ti] = vec![None; side.rows()];
        for r in 0..side.rows() {
            let Some(key) = side.cell(key_col, r) else {
                out.record(format!("{name} row {}: {SA_ID} is NULL", r + 1));
                continue;
            };
            if by_key[ti].insert(key.clone(), r).is_some() {
                out.record(format!("{name}: {SA_ID} {key} appears more than once"));
            }
            let link = side.cell(link_col, r);
            // The row's tree, and for a child its parent row.
            let (tree, parent_row) = match parent {
                None => {
                    let tree = root_tree(layout, &name, &key, link.as_deref(), published, out);
                    (Some(tree), None)
                }
                Some(p) => {
                    let pr = link.as_ref().and_then(|k| by_key[p].get(k).copied());
                    // Under a parent table that could not be read, the miss is already reported.
                    if pr.is_none() && published.complete[p] {
                        out.record(format!(
                            "{name} {SA_ID} {key}: {PARENT_SA_ID} {} names no row of {}",
                            link.as_deref().unwrap_or("NULL"),
                            sa_table(plan, p, SaKind::Trees)
                        ));
                    }
                    (pr.and_then(|pr| row_tree[p][pr]), pr.map(|pr| (p, pr)))
                }
            };
            let slot = slot_of(layout, plan, ti, &name, r, side.cell(slot_col, r), out);
            published.rows[ti].push(SaRow {
                key: key.clone(),
                tree,
                slot,
            });
            row_tree[ti][r] = tree;
            row_slot[ti][r] = slot;
            let Some(s) = slot else { continue };
            if let Some((p, pr)) = parent_row {
                aligned(layout, &name, &key, s, row_slot[p][pr], out);
            }
            let values = tuple(side, sa_cols, &sa[ti], r);
            *published.at_slot[s].entry(values.clone()).or_default() += 1;
            let Some(tree) = tree else { continue };
            let group = published.trees[tree].group;
            if group.is_some() && group != layout.slots[s].group {
                out.record(format!(
                    "{name} {SA_ID} {key}: slot {} is a slot of another group than its SA-tree's",
                    layout.slots[s].label
                ));
            }
            *per_tree_slot.entry((tree, s)).or_default() += 1;
            if !sa[ti].is_empty() {
                published.trees[tree].map.push((s, values));
            }
        }
        let qi_rows = tables[ti].rel.rows();
        if side.rows() != qi_rows {
            out.record(format!(
                "{name} has {} rows but {} has {qi_rows}: t-t publishes one SA row per released row",
                side.rows(),
                plan.tables[ti].name
            ));
        }
    }
    for tree in &mut published.trees {
        tree.map.sort();
    }
    tree_shapes(plan, layout, &needed, published, &per_tree_slot, out);
}

/// Starts the SA-tree of an entity `__sa` row, in the group its `group_id` (`link`) names;
/// returns the tree's index. A group that names nothing is reported, and the tree kept, so
/// its rows are still checked against each other.
fn root_tree(
    layout: &Layout,
    name: &str,
    key: &str,
    link: Option<&str>,
    published: &mut Published,
    out: &mut Check,
) -> usize {
    let group = link.and_then(|g| layout.group_index.get(g).copied());
    if group.is_none() {
        out.record(format!(
            "{name} {SA_ID} {key}: {GROUP} {} names no group of the QI side",
            link.unwrap_or("NULL")
        ));
    }
    published.trees.push(SaTree {
        group,
        key: key.to_string(),
        map: Vec::new(),
    });
    published.trees.len() - 1
}

/// Reports a row at slot `s` whose parent row sits at slot `above` where the QI side hangs
/// `s` under another slot: SA-trees that do not align with the QI-trees re-link what
/// anatomy separates.
fn aligned(
    layout: &Layout,
    name: &str,
    key: &str,
    s: usize,
    above: Option<usize>,
    out: &mut Check,
) {
    if above.is_some() && above != layout.slots[s].parent {
        let show = |x: Option<usize>| {
            x.map_or_else(|| "none".to_string(), |x| layout.slots[x].label.clone())
        };
        out.record(format!(
            "{name} {SA_ID} {key}: at slot {} under slot {}, but on the QI side that slot hangs under slot {}: the SA-trees must align as the QI-trees do",
            layout.slots[s].label,
            show(above),
            show(layout.slots[s].parent)
        ));
    }
}

/// Every group has |G| SA-trees, each with exactly one row per slot of its group that an
/// `__sa` table publishes.
fn tree_shapes(
    plan: &Plan,
    layout: &Layout,
    needed: &[bool],
    published: &Published,
    per_tree_slot: &HashMap<(usize, usize), usize>,
    out: &mut Check,
) {
    let mut of_group: Vec<Vec<usize>> = vec![Vec::new(); layout.groups.len()];
    for (i, tree) in published.trees.iter().enumerate() {
        if let Some(g) = tree.group {
            of_group[g].push(i);
        }
    }
    for (g, trees) in of_group.iter().enumerate() {
        let group = &layout.groups[g];
        if trees.len() != group.members.len() {
            out.record(format!(
                "group {} has {} SA-tree(s) but {} QI-tree(s): t-t publishes one of each per member",
                group.label,
                trees.len(),
                group.members.len()
            ));
        }
        for &tree in trees {
            for &s in &group.slots {
                if !needed[layout.slots[s].table] {
                    continue;
                }
                let n = per_tree_slot.get(&(tree, s)).copied().unwrap_or(0);
                if n != 1 {
                    out.record(format!(
                        "the SA-tree of group {} with root {SA_ID} {} has {n} rows at {}: each SA-tree has exactly one row per slot",
                        group.label,
                        published.trees[tree].key,
                        layout.describe_slot(plan, s)
                    ));
                }
            }
        }
    }
}

/// v-v: the counted SA-groups, checked against the QI side's slots.
fn groups(
    plan: &Plan,
    tables: &[TableData],
    layout: &Layout,
    sa: &[Vec<SaCol>],
    sides: &[Option<Side>],
    published: &mut Published,
    out: &mut Check,
) {
    let mut sums: Vec<u64> = vec![0; layout.slots.len()];
    for (ti, side) in sides.iter().enumerate() {
        let Some(side) = side else { continue };
        let name = sa_table(plan, ti, SaKind::Groups);
        let expected = SaKind::Groups.expected_columns(ti, &sa[ti]);
        let Some(cols) = columns(plan, ti, &name, side, &expected, Variant::VertexVertex, out)
        else {
            continue;
        };
        published.complete[ti] = true;
        let (slot_col, sa_cols, count_col) =
            (cols[0], &cols[1..cols.len() - 1], cols[cols.len() - 1]);
        let mut total: u64 = 0;
        let mut unknown: HashSet<String> = HashSet::default();
        for r in 0..side.rows() {
            let cell = side.cell(slot_col, r);
            // An unknown slot is reported once, however many tuples it has.
            let repeated = cell
                .as_ref()
                .is_some_and(|c| !layout.slot_index.contains_key(c) && !unknown.insert(c.clone()));
            let slot = if repeated {
                None
            } else {
                slot_of(layout, plan, ti, &name, r, cell, out)
            };
            let count = side.cell(count_col, r).and_then(|c| c.parse::<u64>().ok());
            let Some(count) = count.filter(|&c| c > 0) else {
                out.record(format!(
                    "{name} row {}: {COUNT} is {}, not a positive whole number",
                    r + 1,
                    side.cell(count_col, r).as_deref().unwrap_or("NULL")
                ));
                continue;
            };
            total = total.saturating_add(count);
            let Some(s) = slot else { continue };
            sums[s] = sums[s].saturating_add(count);
            let values = tuple(side, sa_cols, &sa[ti], r);
            *published.at_slot[s].entry(values).or_default() += count;
        }
        let qi_rows = tables[ti].rel.rows() as u64;
        if total != qi_rows {
            out.record(format!(
                "{name}'s counts sum to {total} but {} has {qi_rows} rows: v-v counts every released row once",
                plan.tables[ti].name
            ));
        }
        for (s, slot) in layout.slots.iter().enumerate() {
            let Some(size) = layout.group_size(s).filter(|_| slot.table == ti) else {
                continue;
            };
            if sums[s] == 0 {
                out.record(format!(
                    "{} has no rows in {name}: every slot publishes its SA-group",
                    layout.describe_slot(plan, s)
                ));
            } else if sums[s] != size as u64 {
                out.record(format!(
                    "{}: the counts in {name} sum to {} but the group has {size} members",
                    layout.describe_slot(plan, s),
                    sums[s]
                ));
            }
        }
    }
}
