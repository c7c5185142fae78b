//! Check "slots" (spec Sec. 3.5 items 1, 2 and 8): the QI side read as groups of aligned
//! trees. The slot tree of a group is derived from its rows alone (a row's slot, its parent
//! row's slot, its table), never from the anonymizer: it is the alignment every other anatomy
//! check counts over, so it must be well formed before they mean anything.
//!
//! - `slot` and the entity table's `group_id` are never NULL;
//! - a slot holds rows of one table, under one parent slot, in one group (slot ids are unique
//!   over the release, so a slot cannot tie two groups together);
//! - every member of a group has exactly one row at each slot of its group: no fan-out,
//!   depth or missing vertex singles a member out, and the adversary's reconstruction is
//!   defined (Def. 20.2 / 22.1 with the slot tree in place of breadth-first order, A15);
//! - a group has at least l members (Def. 20.1 / 22.1);
//! - no source entity is released in two groups.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use super::super::data::TableData;
use super::super::Check;
use super::{Group, Layout, Slot, GROUP, SLOT};

/// Which disagreement about a slot was already reported, so each is reported once.
#[derive(Hash, PartialEq, Eq)]
enum Conflict {
    Table,
    Parent,
    Group,
}

/// Reads the groups and slots of the QI side, reporting every way they are malformed.
pub(super) fn read(tables: &[TableData], l: usize, out: &mut Check) -> Layout {
    let mut layout = Layout::default();
    let slot_cols: Vec<Option<usize>> = tables.iter().map(|t| t.rel.col(SLOT)).collect();
    for (t, c) in tables.iter().zip(&slot_cols) {
        if c.is_none() {
            out.record(format!(
                "{} has no column '{SLOT}': every released row of an anatomy sits at a slot",
                t.name
            ));
        }
    }
    // Parents come first in plan order, so a row's member is its parent's.
    for t in tables {
        let member = match t.parent {
            None => (0..t.rel.rows()).map(Some).collect(),
            Some(p) => t
                .rel_parent
                .iter()
                .map(|pr| pr.and_then(|pr| layout.member[p][pr]))
                .collect(),
        };
        layout.member.push(member);
    }
    let entity_group = groups(tables, &mut layout, out);

    let mut reported: HashSet<(usize, Conflict)> = HashSet::default();
    let mut rows_at: HashMap<(usize, usize), usize> = HashMap::default();
    for (ti, t) in tables.iter().enumerate() {
        let mut row_slot = vec![None; t.rel.rows()];
        let Some(sc) = slot_cols[ti] else {
            layout.row_slot.push(row_slot);
            continue;
        };
        for (r, at) in row_slot.iter_mut().enumerate() {
            let Some(label) = t.rel.cell(sc, r) else {
                out.record(format!("{}: {SLOT} is NULL", t.describe(tables, r)));
                continue;
            };
            let member = layout.member[ti][r];
            let group = member.and_then(|m| entity_group[m]);
            // None: the parent row did not resolve (key atomicity reports it) or has no slot.
            let parent: Option<Option<usize>> = match t.parent {
                None => Some(None),
                Some(p) => t.rel_parent[r]
                    .and_then(|pr| layout.row_slot[p][pr])
                    .map(Some),
            };
            let s = match layout.slot_index.get(&label) {
                Some(&s) => s,
                None => {
                    let s = layout.slots.len();
                    layout.slot_index.insert(label.clone(), s);
                    layout.slots.push(Slot {
                        label,
                        table: ti,
                        parent: parent.flatten(),
                        parent_known: parent.is_some(),
                        group,
                    });
                    s
                }
            };
            agree(
                tables,
                &mut layout,
                s,
                ti,
                parent,
                group,
                &mut reported,
                out,
            );
            *at = Some(s);
            if let Some(m) = member {
                *rows_at.entry((m, s)).or_default() += 1;
                layout.at.entry((m, s)).or_insert((ti, r));
            }
        }
        layout.row_slot.push(row_slot);
    }
    for (s, slot) in layout.slots.iter().enumerate() {
        if let Some(g) = slot.group {
            layout.groups[g].slots.push(s);
        }
    }
    members(tables, &layout, &rows_at, l, out);
    one_group_per_entity(tables, &layout, &entity_group, out);
    layout
}

/// The entity rows' groups: per entity row its group, with `layout.groups` filled.
fn groups(tables: &[TableData], layout: &mut Layout, out: &mut Check) -> Vec<Option<usize>> {
    let Some(entity) = tables.first() else {
        return Vec::new();
    };
    let mut of_row = vec![None; entity.rel.rows()];
    let Some(gc) = entity.rel.col(GROUP) else {
        out.record(format!(
            "{} has no column '{GROUP}': every released entity of an anatomy is in a group",
            entity.name
        ));
        return of_row;
    };
    for (r, g) in of_row.iter_mut().enumerate() {
        let Some(label) = entity.rel.cell(gc, r) else {
            out.record(format!("{}: {GROUP} is NULL", entity.describe(tables, r)));
            continue;
        };
        let next = layout.groups.len();
        let id = *layout.group_index.entry(label.clone()).or_insert(next);
        if id == next {
            layout.groups.push(Group {
                label,
                members: Vec::new(),
                slots: Vec::new(),
            });
        }
        layout.groups[id].members.push(r);
        *g = Some(id);
    }
    of_row
}

/// Reports a row of table `ti` at slot `s` that disagrees with the slot's table, parent slot
/// or group (each disagreement once per slot), and fills in what the slot did not yet know.
#[allow(clippy::too_many_arguments)]
fn agree(
    tables: &[TableData],
    layout: &mut Layout,
    s: usize,
    ti: usize,
    parent: Option<Option<usize>>,
    group: Option<usize>,
    reported: &mut HashSet<(usize, Conflict)>,
    out: &mut Check,
) {
    let table = layout.slots[s].table;
    if table != ti && reported.insert((s, Conflict::Table)) {
        out.record(format!(
            "slot {} holds rows of {} and of {}: a slot is one table's vertex position",
            layout.slots[s].label, tables[table].name, tables[ti].name
        ));
    }
    if let Some(parent) = parent {
        let slot = &mut layout.slots[s];
        if !slot.parent_known {
            slot.parent = parent;
            slot.parent_known = true;
        } else if slot.parent != parent && reported.insert((s, Conflict::Parent)) {
            let show = |p: Option<usize>| {
                p.map_or_else(
                    || "no parent".to_string(),
                    |p| format!("slot {}", layout.slots[p].label),
                )
            };
            let (was, now) = (layout.slots[s].parent, parent);
            out.record(format!(
                "slot {} holds rows under {} and under {}: a slot has one parent slot",
                layout.slots[s].label,
                show(was),
                show(now)
            ));
        }
    }
    if let Some(g) = group {
        match layout.slots[s].group {
            None => layout.slots[s].group = Some(g),
            Some(h) if h != g && reported.insert((s, Conflict::Group)) => {
                out.record(format!(
                    "slot {} is used in group {} and in group {}: slot ids are unique over the release, one group each",
                    layout.slots[s].label, layout.groups[h].label, layout.groups[g].label
                ));
            }
            Some(_) => {}
        }
    }
}

/// Every member of a group has one row at each slot of its group, and a group has at
/// least l members.
fn members(
    tables: &[TableData],
    layout: &Layout,
    rows_at: &HashMap<(usize, usize), usize>,
    l: usize,
    out: &mut Check,
) {
    let Some(entity) = tables.first() else {
        return;
    };
    for g in &layout.groups {
        if g.members.len() < l {
            out.record(format!(
                "group {} has {} member(s), fewer than l = {l}",
                g.label,
                g.members.len()
            ));
        }
        for &m in &g.members {
            for &s in &g.slots {
                let n = rows_at.get(&(m, s)).copied().unwrap_or(0);
                if n == 1 {
                    continue;
                }
                let slot = &layout.slots[s];
                let what = if n == 0 {
                    "no row".to_string()
                } else {
                    format!("{n} rows")
                };
                out.record(format!(
                    "{} (group {}) has {what} at slot {} ({}): every member has exactly one row at each slot of its group",
                    entity.describe(tables, m),
                    g.label,
                    slot.label,
                    tables[slot.table].name
                ));
            }
        }
    }
}

/// Two released entity rows standing for one source entity must not sit in two groups
/// (truthfulness reports the duplicate itself; this names the groups).
fn one_group_per_entity(
    tables: &[TableData],
    layout: &Layout,
    entity_group: &[Option<usize>],
    out: &mut Check,
) {
    let Some(entity) = tables.first() else {
        return;
    };
    let mut seen: HashMap<usize, usize> = HashMap::default();
    for (r, g) in entity_group.iter().enumerate() {
        let (Some(g), Some(s)) = (*g, entity.rel_to_src.get(r).copied().flatten()) else {
            continue;
        };
        match seen.get(&s) {
            Some(&h) if h != g => out.record(format!(
                "{} is released in group {} and in group {}: each entity is in one group at most",
                entity.describe(tables, r),
                layout.groups[h].label,
                layout.groups[g].label
            )),
            Some(_) => {}
            None => {
                seen.insert(s, g);
            }
        }
    }
}
