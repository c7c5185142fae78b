//! The anonymizer's own vertex grouping, read from the key map when it carries one: per
//! released row, the representative vertex it was released as. It is only a hint for the
//! l-diversity search (check 6): a grouping it proposes is checked like any candidate, and
//! where it does not hold (or is absent: preserved keys, key-less tables, an old key map)
//! the search runs as without it. Nothing is trusted because it came from the anonymizer.

use std::collections::HashMap;

use super::data::TableData;
use super::Keys;
use crate::keymap::KeyMap;
use crate::plan::Plan;

/// The hint `keys` give: the key map's groups, or none where keys are preserved.
pub(super) fn hint(plan: &Plan, tables: &[TableData], keys: &Keys<'_>) -> Vec<Vec<Option<u32>>> {
    match keys {
        Keys::Map(map) => from_key_map(plan, tables, map),
        Keys::Preserved => Vec::new(),
    }
}

/// `groups[t][released row]`, or `None` where the key map says nothing.
fn from_key_map(plan: &Plan, tables: &[TableData], map: &KeyMap) -> Vec<Vec<Option<u32>>> {
    plan.tables
        .iter()
        .zip(tables)
        .map(|(ft, t)| {
            let mut groups = vec![None; t.rel.rows()];
            let Some(tk) = map.tables.get(&ft.name) else {
                return groups;
            };
            if t.rel_pk.is_empty() || tk.columns != ft.primary_key {
                return groups;
            }
            let by_key: HashMap<Vec<String>, u32> = (0..tk.len())
                .filter_map(|i| Some((tk.released_key(i), tk.group(i)?)))
                .collect();
            for (r, g) in groups.iter_mut().enumerate() {
                *g = t
                    .rel
                    .key(&t.rel_pk, r)
                    .and_then(|k| by_key.get(&k).copied());
            }
            groups
        })
        .collect()
}
