//! Check 1, "schema": the release has the family tables with the columns the plan says their
//! release has (source order, identifiers left out, a surrogate key first where the source
//! key holds data); QI columns hold text; declared dimension tables are exact copies of their
//! released columns; nothing else is released.
//!
//! Under anatomy QI columns hold the source values with their source types (nothing is
//! generalized), and the SA side's tables (`<t>__sa`, `<t>__sag`) are released beside the
//! family: the anatomy checks verify their columns exactly, so here they are only not
//! "unplanned".

use std::collections::HashMap;

use arrow::datatypes::DataType;
use arrow::record_batch::RecordBatch;

use super::{Check, VerifyError};
use crate::plan::{ColumnRole, DimensionTable, FamilyTable, Plan};
use crate::warehouse::{render_value, Warehouse};

pub(super) async fn check(
    plan: &Plan,
    source: &Warehouse,
    release: &Warehouse,
    out: &mut Check,
) -> Result<(), VerifyError> {
    let anatomy = plan.params.model.anatomy().is_some();
    for t in &plan.tables {
        family_table(plan, t, release, anatomy, out)?;
    }

    for d in &plan.dimensions {
        dimension(d, source, release, out).await?;
    }

    unplanned(plan, release, anatomy, out);
    Ok(())
}

/// One family table against the plan: present under its source name, holding exactly the
/// columns its release has, in source order, QI columns as text (unless anatomy publishes
/// them as they are); an IDENTIFIER column found is named as such, since it is the leak.
fn family_table(
    plan: &Plan,
    t: &FamilyTable,
    release: &Warehouse,
    anatomy: bool,
    out: &mut Check,
) -> Result<(), VerifyError> {
    let Some(meta) = release.table(&t.name) else {
        return Err(VerifyError::MissingTable {
            side: "release",
            table: t.name.clone(),
        });
    };
    if meta.name != t.name {
        out.record(format!(
            "table '{}' is released as '{}': keep the source name",
            t.name, meta.name
        ));
    }
    let expected = t.released_columns_in(plan);
    // Released column -> index of the expected column it is (exact name, else case-folded).
    let mut seen: Vec<usize> = Vec::new();
    for col in &meta.columns {
        let hit = expected.iter().position(|c| *c == col.name).or_else(|| {
            expected
                .iter()
                .position(|c| c.eq_ignore_ascii_case(&col.name))
        });
        let Some(ei) = hit else {
            let identifier = t.columns.iter().any(|c| {
                c.name.eq_ignore_ascii_case(&col.name) && c.role == ColumnRole::Identifier
            });
            if identifier {
                out.record(format!(
                    "{}.{} is an IDENTIFIER column and must not be released",
                    t.name, col.name
                ));
            } else {
                out.record(format!(
                    "{}.{} is released but is not a column the release of this table has (expected {})",
                    t.name,
                    col.name,
                    expected.join(", ")
                ));
            }
            continue;
        };
        if expected[ei] != col.name {
            out.record(format!(
                "{}.{} should be named {} as in the source",
                t.name, col.name, expected[ei]
            ));
        }
        let qi = t.columns.iter().any(|c| {
            c.name == expected[ei] && matches!(c.role, ColumnRole::QuasiIdentifier { .. })
        });
        if qi
            && !anatomy
            && !matches!(
                col.data_type,
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null
            )
        {
            out.record(format!(
                "{}.{} is a QI column but is released as {}; QI columns hold text labels",
                t.name, col.name, col.data_type
            ));
        }
        seen.push(ei);
    }
    for (ei, c) in expected.iter().enumerate() {
        if !seen.contains(&ei) {
            out.record(format!("{}.{c} is missing from the release", t.name));
        }
    }
    if seen.windows(2).any(|w| w[0] >= w[1]) {
        let found: Vec<&str> = meta.columns.iter().map(|c| c.name.as_str()).collect();
        out.record(format!(
            "{}: columns are not in source order (expected {}; found {})",
            t.name,
            expected.join(", "),
            found.join(", ")
        ));
    }
    Ok(())
}

/// Every release table that is neither planned nor bookkeeping: a release may hold only
/// what the plan says, so anything else is reported rather than ignored.
fn unplanned(plan: &Plan, release: &Warehouse, anatomy: bool, out: &mut Check) {
    let planned = |name: &str| {
        plan.tables
            .iter()
            .map(|f| f.name.as_str())
            .chain(plan.dimensions.iter().map(|d| d.name.as_str()))
            .any(|k| k.eq_ignore_ascii_case(name))
            || (anatomy && super::anatomy::sa_side_of(plan, name).is_some())
    };
    for t in &release.tables {
        // SQLite's own bookkeeping tables are not data.
        if t.name.starts_with("sqlite_") || planned(&t.name) {
            continue;
        }
        out.record(format!(
            "release table '{}' is neither a family table nor a declared dimension: remove it",
            t.name
        ));
    }
}

/// A dimension table must be an exact copy of its released columns (the source's minus its
/// IDENTIFIER columns): same columns, same multiset of rows.
async fn dimension(
    d: &DimensionTable,
    source: &Warehouse,
    release: &Warehouse,
    out: &mut Check,
) -> Result<(), VerifyError> {
    let name = d.name.as_str();
    if source.table(name).is_none() {
        return Err(VerifyError::MissingTable {
            side: "source",
            table: name.to_string(),
        });
    }
    let Some(rel_meta) = release.table(name) else {
        out.record(format!(
            "dimension table '{name}' is missing from the release; it is released as declared"
        ));
        return Ok(());
    };
    let expected = d.released_columns();
    let rel_cols: Vec<&str> = rel_meta.columns.iter().map(|c| c.name.as_str()).collect();
    if expected != rel_cols {
        out.record(format!(
            "dimension table '{name}' has columns ({}) but its declared release has ({})",
            rel_cols.join(", "),
            expected.join(", ")
        ));
        return Ok(());
    }
    let src = read_all(source, "source", name, Some(&expected)).await?;
    let rel = read_all(release, "release", &rel_meta.name, None).await?;
    // Signed multiset difference: +1 per source row, -1 per released row.
    let mut diff: HashMap<Vec<Option<String>>, i64> = HashMap::with_capacity(src.num_rows());
    let row_of = |b: &RecordBatch, r: usize| -> Vec<Option<String>> {
        b.columns()
            .iter()
            .map(|a| render_value(a.as_ref(), r))
            .collect()
    };
    for r in 0..src.num_rows() {
        *diff.entry(row_of(&src, r)).or_default() += 1;
    }
    for r in 0..rel.num_rows() {
        *diff.entry(row_of(&rel, r)).or_default() -= 1;
    }
    let missing: i64 = diff.values().filter(|v| **v > 0).sum();
    let extra: i64 = -diff.values().filter(|v| **v < 0).sum::<i64>();
    if missing > 0 || extra > 0 {
        out.record(format!(
            "dimension table '{name}' is not an exact copy of the source: {missing} source row(s) missing, {extra} row(s) not in the source"
        ));
    }
    Ok(())
}

async fn read_all(
    wh: &Warehouse,
    side: &'static str,
    table: &str,
    columns: Option<&[String]>,
) -> Result<RecordBatch, VerifyError> {
    wh.read_table(table, columns, &[])
        .await
        .map_err(|source| VerifyError::Read {
            side,
            table: table.to_string(),
            source,
        })
}
