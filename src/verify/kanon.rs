//! Check 4, "k-anonymity": released entity trees grouped by QI-isomorphism (000 Def. 12),
//! each group at least k strong.
//!
//! Isomorphism of unordered labeled trees is decided AHU-style: bottom-up, every node gets
//! an interned id for (table, its QI labels, the sorted multiset of its children's ids), so
//! two trees are QI-isomorphic iff their roots share an id. Sorting makes release order
//! irrelevant; interning keeps it O(n log n).

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use super::data::{Rule, TableData};
use super::Check;
use crate::plan::Plan;

pub(super) struct Classes {
    pub entities: usize,
    pub classes: usize,
    pub smallest: Option<usize>,
    /// The released trees the classes were formed from, for checks that need more than
    /// the class sizes (l-diversity matches vertices inside each class).
    pub trees: Trees,
    /// Every EC as its entity rows, in order of first appearance in the release.
    pub groups: Vec<Vec<usize>>,
}

/// A released row as a tree vertex: (family table index, released row).
pub(super) type Vertex = (usize, usize);

/// The released forest as kanon sees it: each row's canonical id and its children.
#[derive(Debug, Clone, Default)]
pub(super) struct Trees {
    /// Per table, the AHU id of every released row: equal ids mean QI-isomorphic subtrees
    /// (same table, same QI labels, same multiset of children ids).
    pub form: Vec<Vec<usize>>,
    /// Per table, the children of every released row (rows with an unresolved FK are in
    /// no tree, so in no list).
    pub kids: Vec<Vec<Vec<Vertex>>>,
}

/// At most this many characters of a released tree are shown in a violation.
const SHOWN: usize = 400;

/// A released tree as text, `table(labels)[children]` with children sorted, cut at
/// [`SHOWN`] characters.
fn render(tables: &[TableData], links: &[Vec<Vec<Vertex>>], v: Vertex) -> String {
    fn walk(tables: &[TableData], links: &[Vec<Vec<Vertex>>], (t, r): Vertex) -> String {
        let table = &tables[t];
        let labels: Vec<String> = table
            .content
            .iter()
            .filter(|c| matches!(c.rule, Rule::Qi(_)))
            .map(|c| {
                table
                    .rel
                    .cell(c.rel, r)
                    .unwrap_or_else(|| "NULL".to_string())
            })
            .collect();
        let mut kids: Vec<String> = links[t][r]
            .iter()
            .map(|&child| walk(tables, links, child))
            .collect();
        kids.sort_unstable();
        let mut text = format!("{}({})", table.name, labels.join(", "));
        if !kids.is_empty() {
            text.push_str(&format!("[{}]", kids.join(", ")));
        }
        text
    }
    let text = walk(tables, links, v);
    match text.char_indices().nth(SHOWN) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text,
    }
}

/// How many entity keys a failing EC lists.
pub(super) const NAMED: usize = 3;

type Form = (usize, Vec<Option<String>>, Vec<usize>);

/// The labels released row `r` of table `t` shows an adversary, in a fixed column order:
/// what canonical forms compare. [`qi_labels`] is the release's own QI cells; the twins check
/// swaps in what a column published beside a QI reveals.
pub(super) type Labels<'a> = dyn Fn(usize, usize) -> Vec<Option<String>> + 'a;

/// The released QI cells of every row: the labels k-anonymity is decided on.
pub(super) fn qi_labels(tables: &[TableData]) -> impl Fn(usize, usize) -> Vec<Option<String>> + '_ {
    let qi: Vec<Vec<usize>> = tables
        .iter()
        .map(|t| {
            t.content
                .iter()
                .filter(|c| matches!(c.rule, Rule::Qi(_)))
                .map(|c| c.rel)
                .collect()
        })
        .collect();
    move |t, r| qi[t].iter().map(|&c| tables[t].rel.cell(c, r)).collect()
}

/// The canonical form of every released row's subtree under `labels`, and every row's
/// children.
pub(super) fn forms(tables: &[TableData], labels: &Labels<'_>) -> Trees {
    let mut interned: HashMap<Form, usize> = HashMap::new();
    let mut kids: Vec<Vec<Vec<usize>>> = tables
        .iter()
        .map(|t| vec![Vec::new(); t.rel.rows()])
        .collect();
    let mut links: Vec<Vec<Vec<Vertex>>> = tables
        .iter()
        .map(|t| vec![Vec::new(); t.rel.rows()])
        .collect();
    let mut all_forms: Vec<Vec<usize>> = vec![Vec::new(); tables.len()];

    // Children come after parents in plan order, so walking backwards finishes every child
    // table before its parent needs the children's ids.
    for ti in (0..tables.len()).rev() {
        let t = &tables[ti];
        let mine = std::mem::take(&mut kids[ti]);
        let mut forms = Vec::with_capacity(t.rel.rows());
        for (r, mut children) in mine.into_iter().enumerate() {
            children.sort_unstable();
            let next = interned.len();
            let id = *interned
                .entry((ti, labels(ti, r), children))
                .or_insert(next);
            forms.push(id);
        }
        // Rows with an unresolved FK belong to no tree; key atomicity reports them.
        if let Some(p) = t.parent {
            for (r, pr) in t.rel_parent.iter().enumerate() {
                let Some(pr) = *pr else { continue };
                if let Some(list) = kids.get_mut(p).and_then(|slot| slot.get_mut(pr)) {
                    list.push(forms[r]);
                }
                if let Some(list) = links.get_mut(p).and_then(|slot| slot.get_mut(pr)) {
                    list.push((ti, r));
                }
            }
        }
        all_forms[ti] = forms;
    }
    Trees {
        form: all_forms,
        kids: links,
    }
}

/// The entity rows of each class of `trees` (equal root forms), in order of first
/// appearance in the release.
pub(super) fn classes(trees: &Trees) -> Vec<Vec<usize>> {
    // Table 0 is the entity table (data::load refuses a parent after its child).
    let root_forms: &[usize] = trees.form.first().map_or(&[], Vec::as_slice);
    let mut groups: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut order: Vec<usize> = Vec::new();
    for (r, &f) in root_forms.iter().enumerate() {
        match groups.entry(f) {
            Entry::Occupied(mut e) => e.get_mut().push(r),
            Entry::Vacant(e) => {
                order.push(f);
                e.insert(vec![r]);
            }
        }
    }
    order
        .iter()
        .filter_map(|f| groups.remove(f))
        .collect::<Vec<_>>()
}

pub(super) fn check(plan: &Plan, tables: &[TableData], out: &mut Check) -> Classes {
    let k = plan.params.model.min_group();
    let trees = forms(tables, &qi_labels(tables));
    let groups = classes(&trees);
    let smallest = groups.iter().map(Vec::len).min();
    for members in groups.iter().filter(|m| m.len() < k) {
        report_class(tables, &trees.kids, members, k, out);
    }
    Classes {
        entities: trees.form.first().map_or(0, Vec::len),
        classes: groups.len(),
        smallest,
        trees,
        groups,
    }
}

/// Records one class smaller than k: a few of its entities and the tree they share.
fn report_class(
    tables: &[TableData],
    links: &[Vec<Vec<Vertex>>],
    members: &[usize],
    k: usize,
    out: &mut Check,
) {
    let Some((named, noun)) = name_members(tables, members) else {
        return;
    };
    // Every member's tree is the class's shape: show it, so the owner sees what an
    // adversary who knows it singles out.
    let shape = render(tables, links, (0, members[0]));
    out.at([tables[0].rel_row(members[0]), 0, 0, 0]);
    out.record(format!(
        "equivalence class of {} {noun}, fewer than k = {k}: {named}; released tree {shape}",
        members.len(),
    ));
}

/// The first [`NAMED`] members of a class by their entity rows (`students key 1, students
/// key 2 and 4 more`) and the noun for their number; `None` without an entity table.
pub(super) fn name_members(
    tables: &[TableData],
    members: &[usize],
) -> Option<(String, &'static str)> {
    let entity = tables.first()?;
    let named: Vec<String> = members
        .iter()
        .take(NAMED)
        .map(|&r| entity.describe(tables, r))
        .collect();
    let more = if members.len() > NAMED {
        format!(" and {} more", members.len() - NAMED)
    } else {
        String::new()
    };
    let noun = if members.len() == 1 {
        "entity"
    } else {
        "entities"
    };
    Some((format!("{}{more}", named.join(", ")), noun))
}
