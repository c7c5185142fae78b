//! Hierarchy definitions resolved to data ([`HierarchyDef`]): inline rows, CSV files, the
//! `SELECT` queries the QIs use (run on the source), bands and date parts; and the check that
//! a `SELECT` hierarchy reads no IDENTIFIER column, since its labels are released.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::error::{at, PlanError};
use super::reads::{is_identifier, released_identifiers, Reads};
use super::{DimensionTable, FamilyTable, HierarchyDef};
use crate::policy::{HierarchySource, Policy};
use crate::warehouse::{render_value, Warehouse};

pub(super) async fn resolve_hierarchies(
    policy: &Policy,
    wh: &Warehouse,
    base: &Path,
    tables: &[FamilyTable],
) -> Result<BTreeMap<String, HierarchyDef>, PlanError> {
    let used: BTreeSet<&str> = tables
        .iter()
        .flat_map(|t| t.qi_columns().map(|(_, h)| h))
        .collect();
    let mut out = BTreeMap::new();
    for h in &policy.hierarchies {
        let def = match &h.source {
            HierarchySource::Values(rows) => HierarchyDef::Rows {
                rows: rows.clone(),
                pos: h.pos,
            },
            HierarchySource::Csv(path) => {
                let full = base.join(path);
                let text = std::fs::read_to_string(&full)
                    .map_err(|e| at(h.pos, format!("cannot read hierarchy file '{path}' ({e}); paths are relative to the declarations file")))?;
                // A line loses its line ending (`\n` or `\r\n`) and nothing else: cells
                // are matched against data values byte for byte. A byte-order mark some
                // editors write is not part of the first leaf.
                let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
                let rows = text
                    .lines()
                    .filter(|l| !l.is_empty())
                    .map(|l| l.split(';').map(str::to_string).collect())
                    .collect();
                HierarchyDef::Rows { rows, pos: h.pos }
            }
            HierarchySource::Select(sql) => {
                if !used.contains(h.name.as_str()) {
                    continue;
                }
                let batches = wh
                    .sql(sql)
                    .await
                    .map_err(|e| at(h.pos, format!("hierarchy query failed: {e}")))?;
                let mut rows = Vec::new();
                for b in &batches {
                    for r in 0..b.num_rows() {
                        let row: Vec<String> = (0..b.num_columns())
                            .filter_map(|c| render_value(b.column(c).as_ref(), r))
                            .collect();
                        if !row.is_empty() {
                            rows.push(row);
                        }
                    }
                }
                HierarchyDef::Rows { rows, pos: h.pos }
            }
            HierarchySource::Bands { widths, range } => HierarchyDef::Bands {
                widths: widths.clone(),
                range: *range,
                pos: h.pos,
            },
            HierarchySource::DateParts(parts) => HierarchyDef::DateParts {
                parts: parts.clone(),
                pos: h.pos,
            },
        };
        out.insert(h.name.clone(), def);
    }
    Ok(out)
}

/// A `SELECT` hierarchy runs on the source and its labels are released: one that reads an
/// IDENTIFIER column (anywhere in the query) could publish it, and is refused. One that reads
/// a table with no roles (left out of the release) is warned about: whatever it puts in a
/// label is published unchecked.
pub(super) fn check_hierarchy_reads(
    policy: &Policy,
    wh: &Warehouse,
    tables: &[FamilyTable],
    dimensions: &[DimensionTable],
) -> Result<Vec<String>, PlanError> {
    let used: BTreeSet<&str> = tables
        .iter()
        .flat_map(|t| t.qi_columns().map(|(_, h)| h))
        .collect();
    let released = released_identifiers(tables, dimensions);
    let mut warnings = Vec::new();
    for h in &policy.hierarchies {
        let HierarchySource::Select(sql) = &h.source else {
            continue;
        };
        if !used.contains(h.name.as_str()) {
            continue;
        }
        let dialect = sqlparser::dialect::GenericDialect {};
        let statements = sqlparser::parser::Parser::parse_sql(&dialect, sql)
            .map_err(|e| at(h.pos, format!("hierarchy {} is not a query relanon can read ({e}); write SELECT leaf, parent, ... FROM ...", h.name)))?;
        // A hierarchy runs on the source, where `*` holds them all.
        let reads = Reads::of(&statements, wh, true);
        for (owners, col) in &reads.columns {
            if let Some(t) = owners
                .iter()
                .find(|t| is_identifier(&released, t, col) == Some(true))
            {
                return Err(at(
                    h.pos,
                    format!(
                        "hierarchy {} reads the IDENTIFIER column {t}.{col}; a hierarchy's labels are released, so they could publish it: build the hierarchy from other columns",
                        h.name
                    ),
                ));
            }
        }
        for (t, _) in &reads.tables {
            if !released.contains_key(t) {
                warnings.push(format!(
                    "hierarchy {} reads table {t}, which has no roles (it is not released): every value it puts in a label is published unchecked; declare it with LABEL TABLE {} AS DIMENSION and label its personal columns IDENTIFIER to have them checked",
                    h.name,
                    crate::warehouse::quote_ident(t)
                ));
            }
        }
    }
    Ok(warnings)
}
