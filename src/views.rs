//! Analyst views: written against the source schema, rewritten (sqlparser AST) to read the
//! release. Table references are resolved to the released tables' exact names and quoted, so
//! a view means the same thing in SQLite and in any engine reading views.sql.

use std::ops::ControlFlow;

use sqlparser::ast::{Ident, ObjectName, ObjectNamePart, VisitMut, VisitorMut};

use crate::policy::ViewDecl;

struct Requalify<'a> {
    tables: &'a [String],
}

impl VisitorMut for Requalify<'_> {
    type Break = ();
    fn pre_visit_relation(&mut self, relation: &mut ObjectName) -> ControlFlow<()> {
        let written = relation.to_string();
        let bare = written.trim_matches('"');
        if let Some(exact) = self
            .tables
            .iter()
            .find(|t| t.as_str() == bare)
            .or_else(|| self.tables.iter().find(|t| t.eq_ignore_ascii_case(bare)))
        {
            *relation = ObjectName(vec![ObjectNamePart::Identifier(Ident::with_quote(
                '"',
                exact.clone(),
            ))]);
        }
        ControlFlow::Continue(())
    }
}

/// The view's SELECT text over the release; `tables` are the released table names.
pub fn rewrite(view: &ViewDecl, tables: &[String]) -> String {
    let mut query = view.query.clone();
    let _ = query.visit(&mut Requalify { tables });
    query.to_string()
}
