//! Views (`CREATE VIEW`), written against the source and run on the release: refused when
//! they read an IDENTIFIER column, a table not released, or under anatomy a SENSITIVE column.

use super::error::{at, PlanError};
use super::reads::{is_identifier, released_identifiers, Reads};
use super::{ColumnRole, DimensionTable, FamilyTable};
use crate::policy::Policy;
use crate::warehouse::Warehouse;

/// Views are written against the source; one that reads an IDENTIFIER column would publish
/// it, and one that reads a table left out of the release cannot run on it.
pub(super) fn check_views(
    policy: &Policy,
    wh: &Warehouse,
    tables: &[FamilyTable],
    dimensions: &[DimensionTable],
    anatomy: bool,
) -> Result<(), PlanError> {
    let released = released_identifiers(tables, dimensions);
    for v in &policy.views {
        // A view runs on the release, where `*` holds no IDENTIFIER column.
        let reads = Reads::of(&v.query, wh, false);
        if let Some((t, _)) = reads.tables.iter().find(|(t, _)| !released.contains_key(t)) {
            return Err(at(
                v.pos,
                format!(
                    "view {} reads table {t}, which is not released (neither in the family nor declared a dimension); declare it with LABEL TABLE {} AS DIMENSION or remove it from the view",
                    v.name,
                    crate::warehouse::quote_ident(t)
                ),
            ));
        }
        for (owners, col) in &reads.columns {
            // A bare name several tables have is resolved by the SQL engine (or refused
            // as ambiguous); it reads an IDENTIFIER only if every candidate is one.
            let identifier = !owners.is_empty()
                && owners
                    .iter()
                    .all(|t| is_identifier(&released, t, col) == Some(true));
            if identifier {
                return Err(at(
                    v.pos,
                    format!(
                        "view {} reads the IDENTIFIER column {}.{col}, which is not released; remove it from the view",
                        v.name, owners[0]
                    ),
                ));
            }
            let sensitive = anatomy
                && owners.iter().any(|t| {
                    tables.iter().any(|f| {
                        &f.name == t
                            && f.columns.iter().any(|c| {
                                c.name.eq_ignore_ascii_case(col)
                                    && matches!(c.role, ColumnRole::Sensitive { .. })
                            })
                    })
                });
            if sensitive {
                return Err(at(
                    v.pos,
                    format!(
                        "view {} reads the SENSITIVE column {}.{col}; under anatomy it is published apart from the rows it belongs to (on the SA side), and a view joining them back would re-link people to their values; read QI and INSENSITIVE columns only, or query the SA side by slot",
                        v.name, owners[0]
                    ),
                ));
            }
        }
    }
    Ok(())
}
