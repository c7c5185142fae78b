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
}

/// How many entity keys a failing EC lists.
const NAMED: usize = 3;

type Form = (usize, Vec<Option<String>>, Vec<usize>);

pub(super) fn check(plan: &Plan, tables: &[TableData], out: &mut Check) -> Classes {
    let k = plan.params.model.min_group();
    let mut interned: HashMap<Form, usize> = HashMap::new();
    let mut kids: Vec<Vec<Vec<usize>>> = tables
        .iter()
        .map(|t| vec![Vec::new(); t.rel.rows()])
        .collect();
    let mut root_forms: Vec<usize> = Vec::new();

    // Children come after parents in plan order, so walking backwards finishes every child
    // table before its parent needs the children's ids.
    for ti in (0..tables.len()).rev() {
        let t = &tables[ti];
        let qi: Vec<usize> = t
            .content
            .iter()
            .filter(|c| matches!(c.rule, Rule::Qi(_)))
            .map(|c| c.rel)
            .collect();
        let mine = std::mem::take(&mut kids[ti]);
        let mut forms = Vec::with_capacity(t.rel.rows());
        for (r, mut children) in mine.into_iter().enumerate() {
            children.sort_unstable();
            let labels = qi.iter().map(|&c| t.rel.cell(c, r)).collect();
            let next = interned.len();
            let id = *interned.entry((ti, labels, children)).or_insert(next);
            forms.push(id);
        }
        match t.parent {
            // Rows with an unresolved FK belong to no tree; key atomicity reports them.
            Some(p) => {
                for (r, pr) in t.rel_parent.iter().enumerate() {
                    if let (Some(pr), Some(slot)) = (pr, kids.get_mut(p)) {
                        if let Some(list) = slot.get_mut(*pr) {
                            list.push(forms[r]);
                        }
                    }
                }
            }
            None if ti == 0 => root_forms = forms,
            None => {}
        }
    }

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
    let smallest = groups.values().map(Vec::len).min();
    if let Some(entity) = tables.first() {
        for f in &order {
            let Some(members) = groups.get(f) else {
                continue;
            };
            if members.len() >= k {
                continue;
            }
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
            out.record(format!(
                "equivalence class of {} {noun}, fewer than k = {k}: {}{more}",
                members.len(),
                named.join(", ")
            ));
        }
    }
    Classes {
        entities: root_forms.len(),
        classes: groups.len(),
        smallest,
    }
}
