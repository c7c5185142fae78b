//! Names as the declarations write them resolved to the warehouse's exact ones (exact match
//! first, else the one case-insensitive match); a name that resolves to nothing is refused
//! with the names there are.

use super::error::{at, PlanError};
use crate::policy::Pos;
use crate::warehouse::{TableMeta, Warehouse};

/// Resolves a table name as written to the warehouse's exact name.
pub(super) fn table<'w>(
    wh: &'w Warehouse,
    name: &str,
    pos: Pos,
) -> Result<&'w TableMeta, PlanError> {
    wh.table(name).ok_or_else(|| {
        let known: Vec<&str> = wh.tables.iter().map(|t| t.name.as_str()).collect();
        at(
            pos,
            format!(
                "unknown table '{name}'; the source has: {}",
                known.join(", ")
            ),
        )
    })
}

pub(super) fn column<'t>(t: &'t TableMeta, name: &str, pos: Pos) -> Result<&'t str, PlanError> {
    if let Some(c) = t.columns.iter().find(|c| c.name == name) {
        return Ok(&c.name);
    }
    let matches: Vec<&str> = t
        .columns
        .iter()
        .filter(|c| c.name.eq_ignore_ascii_case(name))
        .map(|c| c.name.as_str())
        .collect();
    match matches.as_slice() {
        [one] => Ok(one),
        _ => {
            let known: Vec<&str> = t.columns.iter().map(|c| c.name.as_str()).collect();
            Err(at(
                pos,
                format!(
                    "unknown column '{name}' in table {}; it has: {}",
                    t.name,
                    known.join(", ")
                ),
            ))
        }
    }
}

pub(super) fn columns(t: &TableMeta, names: &[String], pos: Pos) -> Result<Vec<String>, PlanError> {
    names
        .iter()
        .map(|n| column(t, n, pos).map(str::to_string))
        .collect()
}
