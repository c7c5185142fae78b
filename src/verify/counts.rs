//! Check 7, "counts": no table grows, and report.json (when given) accounts for every
//! source row: released + suppressed + orphans dropped + rows without a parent = rows in.

use serde_json::Value;

use super::data::TableData;
use super::Check;

fn count(entry: &Value, field: &str) -> Option<u64> {
    entry.get(field).and_then(Value::as_u64)
}

/// (name, released rows, source rows) of one plan entry.
pub(super) type Rows = (String, u64, u64);

/// [`Rows`] of every plan entry read whole.
pub(super) fn rows(tables: &[TableData]) -> Vec<Rows> {
    tables
        .iter()
        .map(|t| (t.name.clone(), t.rel.rows() as u64, t.src.rows() as u64))
        .collect()
}

/// (name, released rows, source rows) per released table: the entries of a split table
/// (plan::Part) hold its rows between them.
fn per_table(entries: &[Rows]) -> Vec<(&str, u64, u64)> {
    let mut out: Vec<(&str, u64, u64)> = Vec::new();
    for (name, released, rows_in) in entries {
        match out.iter_mut().find(|(n, _, _)| n == name) {
            Some(entry) => {
                entry.1 += released;
                entry.2 += rows_in;
            }
            None => out.push((name.as_str(), *released, *rows_in)),
        }
    }
    out
}

pub(super) fn check(entries: &[Rows], report: Option<&Value>, out: &mut Check) {
    let tables = per_table(entries);
    for &(name, released, rows_in) in &tables {
        if released > rows_in {
            out.record(format!(
                "{name}: {released} rows released but the source has only {rows_in}"
            ));
        }
    }
    let Some(report) = report else { return };
    let Some(entries) = report.get("tables").and_then(Value::as_array) else {
        out.record(
            "report.json has no \"tables\" array; pass the report written with this release",
        );
        return;
    };
    for (name, released, rows_in) in tables {
        let Some(entry) = entries
            .iter()
            .find(|e| e.get("name").and_then(Value::as_str) == Some(name))
        else {
            out.record(format!("report.json has no entry for table '{name}'"));
            continue;
        };
        let fields = (
            count(entry, "rows_in"),
            count(entry, "released"),
            count(entry, "suppressed"),
        );
        let (Some(r_in), Some(r_rel), Some(r_sup)) = fields else {
            out.record(format!(
                "report.json entry for '{}' lacks a non-negative integer rows_in, released or suppressed",
                name
            ));
            continue;
        };
        // A run without orphans (or rows without a parent) may leave the field out.
        let r_orph = count(entry, "orphans_dropped").unwrap_or(0);
        let r_none = count(entry, "no_parent").unwrap_or(0);
        if r_rel != released {
            out.record(format!(
                "report.json says {} released {r_rel} rows; the release has {released}",
                name
            ));
        }
        if r_in != rows_in {
            out.record(format!(
                "report.json says {} had {r_in} rows in; the source has {rows_in}",
                name
            ));
        }
        let accounted = r_rel
            .saturating_add(r_sup)
            .saturating_add(r_orph)
            .saturating_add(r_none);
        if accounted != r_in {
            out.record(format!(
                "report.json for {}: released {r_rel} + suppressed {r_sup} + orphans dropped {r_orph} + without a parent {r_none} = {accounted}, not rows in {r_in}",
                name
            ));
        }
    }
}
