//! Analyst views: written against the source schema, rewritten (sqlparser AST) to read the
//! release. Table references are resolved to the released tables' exact names and quoted, so
//! a view means the same thing in SQLite and in any engine reading views.sql.
//!
//! Over a vertical fragmentation the entity table is not released: a view that reads it is
//! rewritten onto the one fragment holding every entity column it names, and refused, naming
//! both fragments, when it names columns of two (or selects `*` from it): such a view would
//! re-join the fragments (004, spec S6).

use std::ops::ControlFlow;

use sqlparser::ast::{
    visit_expressions, visit_relations, Expr, Ident, ObjectName, ObjectNamePart, Query, SelectItem,
    SetExpr, Visit, VisitMut, Visitor, VisitorMut,
};

use crate::policy::ViewDecl;

struct Requalify<'a> {
    tables: &'a [String],
    /// A table the release holds under another name: (source name, released name).
    renamed: Option<(&'a str, &'a str)>,
}

impl VisitorMut for Requalify<'_> {
    type Break = ();
    fn pre_visit_relation(&mut self, relation: &mut ObjectName) -> ControlFlow<()> {
        let written = relation.to_string();
        let bare = written.trim_matches('"');
        let renamed = self
            .renamed
            .filter(|(from, _)| from.eq_ignore_ascii_case(bare))
            .map(|(_, to)| to.to_string());
        if let Some(exact) = renamed.or_else(|| {
            self.tables
                .iter()
                .find(|t| t.as_str() == bare)
                .or_else(|| self.tables.iter().find(|t| t.eq_ignore_ascii_case(bare)))
                .cloned()
        }) {
            *relation = ObjectName(vec![ObjectNamePart::Identifier(Ident::with_quote(
                '"', exact,
            ))]);
        }
        ControlFlow::Continue(())
    }
}

/// The view's SELECT text over the release; `tables` are the released table names.
pub fn rewrite(view: &ViewDecl, tables: &[String]) -> String {
    requalified(view, tables, None)
}

fn requalified(view: &ViewDecl, tables: &[String], renamed: Option<(&str, &str)>) -> String {
    let mut query = view.query.clone();
    let _ = VisitMut::visit(&mut *query, &mut Requalify { tables, renamed });
    query.to_string()
}

/// The fragments a fragmentation released its entity table as.
pub struct Fragments<'a> {
    pub entity: &'a str,
    /// Per fragment, its released table and the entity columns it holds.
    pub fragments: Vec<(&'a str, Vec<&'a str>)>,
    /// The class, in every fragment: it names none.
    pub class: &'a str,
}

/// [`rewrite`] over a fragmentation: the entity table read as the fragment holding every
/// entity column the view names; an error naming both fragments when the view names
/// columns of two, or selects `*` where it reads the entity table.
pub fn rewrite_fragmented(
    view: &ViewDecl,
    tables: &[String],
    f: &Fragments<'_>,
) -> Result<String, String> {
    let mut reads_entity = false;
    let _ = visit_relations(&view.query, |r| {
        let written = r.to_string();
        reads_entity |= written.trim_matches('"').eq_ignore_ascii_case(f.entity);
        ControlFlow::<()>::Continue(())
    });
    if !reads_entity {
        return Ok(rewrite(view, tables));
    }
    let mut read: Vec<(String, usize)> = Vec::new();
    let _ = visit_expressions(&view.query, |e| {
        let ident = match e {
            Expr::Identifier(i) => Some(i),
            Expr::CompoundIdentifier(parts) => parts.last(),
            _ => None,
        };
        if let Some(name) = ident.map(|i| i.value.as_str()) {
            for (i, (_, columns)) in f.fragments.iter().enumerate() {
                let held = columns.iter().any(|c| c.eq_ignore_ascii_case(name));
                if held && !name.eq_ignore_ascii_case(f.class) {
                    read.push((name.to_string(), i));
                }
            }
        }
        ControlFlow::<()>::Continue(())
    });
    let mut stars = Stars(false);
    let _ = Visit::visit(&*view.query, &mut stars);
    let homes: Vec<usize> = {
        let mut h: Vec<usize> = read.iter().map(|(_, i)| *i).collect();
        h.sort_unstable();
        h.dedup();
        h
    };
    if stars.0 || homes.len() > 1 {
        return Err(spanning(view, f, &read, stars.0));
    }
    let home = homes.first().copied().unwrap_or(0);
    Ok(requalified(
        view,
        tables,
        Some((f.entity, f.fragments[home].0)),
    ))
}

/// The refusal of a view that would re-join the fragments.
fn spanning(view: &ViewDecl, f: &Fragments<'_>, read: &[(String, usize)], star: bool) -> String {
    let names: Vec<&str> = f.fragments.iter().map(|(t, _)| *t).collect();
    let what = if star {
        format!("selects * from {}", f.entity)
    } else {
        let of = |i: usize| {
            read.iter()
                .find(|(_, at)| *at == i)
                .map(|(c, _)| format!("{c} (in {})", names[i]))
                .unwrap_or_default()
        };
        format!("reads {} and {}", of(0), of(1))
    };
    format!(
        "view {} {what}: a view over {} and {} would re-join the fragments on the row it pairs; write one view per fragment (docs/fragmentation.md)",
        view.name, names[0], names[1]
    )
}

/// Whether any SELECT of a query (its subqueries too) selects `*`.
struct Stars(bool);

impl Visitor for Stars {
    type Break = ();
    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
        if let SetExpr::Select(select) = query.body.as_ref() {
            self.0 |= select.projection.iter().any(|item| {
                matches!(
                    item,
                    SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)
                )
            });
        }
        ControlFlow::Continue(())
    }
}
