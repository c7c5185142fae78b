//! What SQL written against the source reads (tables with their aliases, the columns each
//! reference may name, wildcards), and which released columns are IDENTIFIER: what views
//! and `SELECT` hierarchies are checked against.

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use sqlparser::ast::{Expr, ObjectName, TableFactor, Visit, Visitor};

use super::{ColumnRole, DimensionTable, FamilyTable};
use crate::warehouse::Warehouse;

/// Released table name -> its columns and whether each is an IDENTIFIER.
pub(super) fn released_identifiers(
    tables: &[FamilyTable],
    dimensions: &[DimensionTable],
) -> BTreeMap<String, Vec<(String, bool)>> {
    let mut released: BTreeMap<String, Vec<(String, bool)>> = BTreeMap::new();
    for t in tables {
        let cols = t
            .columns
            .iter()
            .map(|c| (c.name.clone(), c.role == ColumnRole::Identifier))
            .collect();
        released.insert(t.name.clone(), cols);
    }
    for d in dimensions {
        let cols = d
            .columns
            .iter()
            .map(|c| (c.name.clone(), c.role == ColumnRole::Identifier))
            .collect();
        released.insert(d.name.clone(), cols);
    }
    released
}

/// The last part of a (possibly qualified) name.
fn last(name: &ObjectName) -> String {
    name.0
        .last()
        .and_then(|p| p.as_ident())
        .map(|i| i.value.clone())
        .unwrap_or_default()
}

/// The query's relations: (table as written, alias).
struct Relations(Vec<(String, Option<String>)>);

impl Visitor for Relations {
    type Break = ();
    fn pre_visit_table_factor(&mut self, t: &TableFactor) -> ControlFlow<()> {
        if let TableFactor::Table { name, alias, .. } = t {
            self.0
                .push((last(name), alias.as_ref().map(|a| a.name.value.clone())));
        }
        ControlFlow::Continue(())
    }
}

/// Column references: (qualifier, column).
struct Columns(Vec<(Option<String>, String)>);

impl Visitor for Columns {
    type Break = ();
    fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
        match e {
            Expr::Identifier(i) => self.0.push((None, i.value.clone())),
            Expr::CompoundIdentifier(parts) if parts.len() >= 2 => {
                let n = parts.len();
                self.0
                    .push((Some(parts[n - 2].value.clone()), parts[n - 1].value.clone()));
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

/// What a query reads from the source: its source tables with their aliases, and per column
/// reference the tables of the query that may hold it (`alias.column` through the query's
/// aliases, a bare `column` every table of the query that has it; with `wildcards`, a
/// wildcard every column of its tables).
pub(super) struct Reads {
    pub(super) tables: Vec<(String, Option<String>)>,
    pub(super) columns: Vec<(Vec<String>, String)>,
}

impl Reads {
    pub(super) fn of(query: &impl Visit, wh: &Warehouse, wildcards: bool) -> Reads {
        let mut rels = Relations(Vec::new());
        let _ = query.visit(&mut rels);
        // Relations that are source tables; CTE names and the like are not.
        let tables: Vec<(String, Option<String>)> = rels
            .0
            .into_iter()
            .filter_map(|(written, alias)| wh.table(&written).map(|m| (m.name.clone(), alias)))
            .collect();
        let has = |t: &str, col: &str| wh.table(t).is_some_and(|m| m.column(col).is_some());
        let named = |q: &str| -> Vec<String> {
            tables
                .iter()
                .filter(|(t, a)| match a {
                    Some(a) => a.eq_ignore_ascii_case(q),
                    None => t.eq_ignore_ascii_case(q),
                })
                .map(|(t, _)| t.clone())
                .collect()
        };
        let mut cols = Columns(Vec::new());
        let _ = query.visit(&mut cols);
        let mut columns = Vec::new();
        for (qualifier, col) in cols.0 {
            let owners: Vec<String> = match &qualifier {
                Some(q) => named(q),
                None => tables
                    .iter()
                    .filter(|(t, _)| has(t, &col))
                    .map(|(t, _)| t.clone())
                    .collect(),
            };
            columns.push((owners, col));
        }
        let mut stars = Wildcards(Vec::new());
        if wildcards {
            let _ = query.visit(&mut stars);
        }
        for qualifier in stars.0 {
            let owners = match &qualifier {
                Some(q) => named(q),
                None => tables.iter().map(|(t, _)| t.clone()).collect(),
            };
            for t in owners {
                if let Some(meta) = wh.table(&t) {
                    for c in &meta.columns {
                        columns.push((vec![t.clone()], c.name.clone()));
                    }
                }
            }
        }
        Reads { tables, columns }
    }
}

/// Wildcards of a query's select lists: `*` (None) or `alias.*`.
struct Wildcards(Vec<Option<String>>);

impl Visitor for Wildcards {
    type Break = ();
    fn pre_visit_query(&mut self, q: &sqlparser::ast::Query) -> ControlFlow<()> {
        if let sqlparser::ast::SetExpr::Select(select) = q.body.as_ref() {
            for item in &select.projection {
                match item {
                    sqlparser::ast::SelectItem::Wildcard(_) => self.0.push(None),
                    sqlparser::ast::SelectItem::QualifiedWildcard(kind, _) => {
                        // `alias.*`; an expression's `.*` could be anything, so all tables.
                        self.0.push(match kind {
                            sqlparser::ast::SelectItemQualifiedWildcardKind::ObjectName(n) => {
                                Some(last(n))
                            }
                            _ => None,
                        });
                    }
                    _ => {}
                }
            }
        }
        ControlFlow::Continue(())
    }
}

/// Whether `col` of `table` is labelled IDENTIFIER (`None`: the table has no roles).
pub(super) fn is_identifier(
    released: &BTreeMap<String, Vec<(String, bool)>>,
    table: &str,
    col: &str,
) -> Option<bool> {
    released.get(table).and_then(|cs| {
        cs.iter()
            .find(|(c, _)| c == col)
            .or_else(|| cs.iter().find(|(c, _)| c.eq_ignore_ascii_case(col)))
            .map(|(_, identifier)| *identifier)
    })
}
