//! What the adversary knows: one `--fact`, a SQL boolean expression about one row of one
//! family table, over that table's quasi-identifiers and the columns it publishes unchanged.
//!
//! The adversary model of 001 Sec. II (and 000 Def. 13) is background knowledge of QI values.
//! Sensitive values are what the release must not disclose, so "knowing" one (the adversary
//! who knows one diagnosis) is outside the model: such a fact is evaluated all the same, on
//! the values as published, and the findings say it is outside the model. Keys and
//! identifiers are not published as the source has them, so a fact naming one is refused
//! rather than silently ignored.

use std::ops::ControlFlow;

use sqlparser::ast::{visit_expressions, BinaryOperator, Expr, Ident, Query, VisitMut, VisitorMut};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Token;

use crate::plan::{ColumnRole, FamilyTable};
use crate::warehouse::one_line;

/// Why a fact cannot be used. Shown after "fact N `text`", so each message finishes that
/// sentence and says what to write instead.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum FactError {
    #[error("cannot be parsed ({msg}); write a SQL boolean expression over table-qualified QI columns, e.g. {example}")]
    Unparsable { msg: String, example: String },
    #[error("contains a subquery; a fact speaks of one row: use only that row's QI columns, constants and functions")]
    Subquery,
    #[error("names column '{column}' without its table; write it as <table>.{column}{hint}")]
    Unqualified { column: String, hint: String },
    #[error("names '{name}'; write every column as <table>.<column>")]
    LongName { name: String },
    #[error("names no column; say what the victim's row holds, e.g. {example}")]
    NoColumn { example: String },
    #[error("names columns of several tables ({tables}); a fact is about one row of one table: give one --fact per table")]
    SeveralTables { tables: String },
    #[error("names table '{table}', which is not a table of the {entity} family ({family}); facts are about the protected entity's own rows")]
    UnknownTable {
        table: String,
        entity: String,
        family: String,
    },
    #[error("names '{table}.{column}', but table {table} has no such column; the adversary model covers these QI columns: {qis}")]
    UnknownColumn {
        table: String,
        column: String,
        qis: String,
    },
    #[error("names {column}, which is {role} and not published as the source holds it: the adversary reads nothing of it in the release; state facts over QI columns ({qis}), or over SENSITIVE or INSENSITIVE columns to test an adversary beyond the declared model")]
    NotQi {
        column: String,
        role: &'static str,
        qis: String,
    },
    #[error("couples {} in one condition, which ranges over {} combinations of leaves ({}), more than the {cap} relanon evaluates; where it means the same, split the fact into conditions on one column each joined by AND (e.g. {}), which are evaluated column by column", coupled(columns, |c, _| c.clone(), ", "), product(columns), coupled(columns, |c, n| format!("{c}: {n}"), " x "), coupled(columns, |c, _| format!("{c} = <value>"), " AND "))]
    DomainTooLarge {
        /// The coupled columns as `table.column`, with their numbers of leaves.
        columns: Vec<(String, usize)>,
        cap: usize,
    },
    #[error("names {column}, whose {size} distinct values are more than the {cap} leaf combinations relanon evaluates in one condition; state the fact over QI columns with fewer distinct values")]
    ColumnTooLarge {
        column: String,
        size: usize,
        cap: usize,
    },
    #[error("cannot be evaluated: {msg}; write a SQL boolean expression over the named QI columns, compared with values of the source's types (e.g. {example})")]
    Evaluation { msg: String, example: String },
}

/// The coupled columns of a [`FactError::DomainTooLarge`], each written by `each`, joined.
fn coupled(
    columns: &[(String, usize)],
    each: impl Fn(&String, usize) -> String,
    sep: &str,
) -> String {
    columns
        .iter()
        .map(|(c, n)| each(c, *n))
        .collect::<Vec<_>>()
        .join(sep)
}

/// The number of combinations of the leaves of `columns`, which may exceed any integer type.
fn product(columns: &[(String, usize)]) -> String {
    let product = columns.iter().map(|(_, n)| *n as f64).product::<f64>();
    format!("{product:.0}")
}

/// A checked fact, ready to be evaluated over its leaf domain.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Fact {
    /// As the user wrote it, for messages and the output.
    pub text: String,
    /// Index of its family table in the plan.
    pub table: usize,
    /// The QI and published-unchanged columns it names (catalog spelling), in order of
    /// first mention.
    pub columns: Vec<String>,
    /// The fact split at its top-level ANDs, the conditions grouped by the columns they share
    /// (see [`Component`]); their conjunction is the fact.
    pub components: Vec<Component>,
}

/// Top-level conjuncts of a fact that are connected through the columns they name (two are
/// connected if they share a column, transitively); the conjuncts naming no column form one
/// component of their own. Components share no column, so a choice of leaves satisfies the
/// fact iff its restriction to each component's columns satisfies that component: each is
/// evaluated over the leaves of its own columns only.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Component {
    /// The columns its conjuncts name (catalog spelling), in the fact's order; empty for the
    /// conjuncts that name none.
    pub columns: Vec<String>,
    /// Its conjuncts joined by AND (each parenthesized when there are several), every column
    /// resolved to the catalog's spelling and quoted.
    pub sql: String,
}

/// Parses and checks one fact against the family tables (`tables[0]` is the entity table).
pub(super) fn parse(text: &str, entity: &str, tables: &[FamilyTable]) -> Result<Fact, FactError> {
    let dialect = GenericDialect {};
    let unparsable = |msg: String| FactError::Unparsable {
        msg,
        example: example(tables),
    };
    let mut parser = Parser::new(&dialect)
        .try_with_sql(text)
        .map_err(|e| unparsable(one_line(e)))?;
    let mut expr = parser.parse_expr().map_err(|e| unparsable(one_line(e)))?;
    let rest = parser.peek_token().token;
    if rest != Token::EOF {
        return Err(unparsable(format!(
            "unexpected '{rest}' after the expression"
        )));
    }
    let mut resolve = Resolve {
        entity,
        tables,
        table: None,
        columns: Vec::new(),
        error: None,
    };
    if let ControlFlow::Break(()) = VisitMut::visit(&mut expr, &mut resolve) {
        return Err(resolve
            .error
            .expect("the resolver records why it stopped before breaking"));
    }
    let Some(table) = resolve.table else {
        return Err(FactError::NoColumn {
            example: example(tables),
        });
    };
    let components = components(expr, &resolve.columns);
    Ok(Fact {
        text: text.to_string(),
        table,
        columns: resolve.columns,
        components,
    })
}

/// Splits a resolved fact at its top-level ANDs and groups the conjuncts into components
/// (see [`Component`]), in the order of their first conjunct. `columns` is the fact's
/// columns in order of first mention.
///
/// Splitting is exact under SQL's three-valued logic: `a AND b` is TRUE iff both are TRUE,
/// and a combination of leaves satisfies a fact iff the fact is TRUE for it (NULL does not
/// hold), so the fact holds iff every conjunct holds.
fn components(expr: Expr, columns: &[String]) -> Vec<Component> {
    let mut conjuncts = Vec::new();
    split_and(expr, &mut conjuncts);
    // Per conjunct, the positions in `columns` of the columns it names.
    let named: Vec<Vec<usize>> = conjuncts
        .iter()
        .map(|c| {
            let mut at = Vec::new();
            let _ = visit_expressions(c, |e| {
                // Resolution left every column as a quoted `table.column` of two parts.
                if let Expr::CompoundIdentifier(parts) = e {
                    if let Some(i) = parts
                        .get(1)
                        .and_then(|p| columns.iter().position(|c| *c == p.value))
                    {
                        if !at.contains(&i) {
                            at.push(i);
                        }
                    }
                }
                ControlFlow::<()>::Continue(())
            });
            at
        })
        .collect();
    // Union-find over conjuncts; the column-free ones are joined to one another.
    let mut root: Vec<usize> = (0..conjuncts.len()).collect();
    let mut owner_of_column: Vec<Option<usize>> = vec![None; columns.len()];
    let mut column_free: Option<usize> = None;
    for (k, at) in named.iter().enumerate() {
        let join = |root: &mut Vec<usize>, other: usize| {
            let (a, b) = (find(root, k), find(root, other));
            // The earlier conjunct stays the root, so components come out in fact order.
            root[a.max(b)] = a.min(b);
        };
        if at.is_empty() {
            match column_free {
                Some(first) => join(&mut root, first),
                None => column_free = Some(k),
            }
        }
        for &c in at {
            match owner_of_column[c] {
                Some(first) => join(&mut root, first),
                None => owner_of_column[c] = Some(k),
            }
        }
    }
    let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
    for k in 0..conjuncts.len() {
        let r = find(&mut root, k);
        match groups.iter_mut().find(|(g, _)| *g == r) {
            Some((_, members)) => members.push(k),
            None => groups.push((r, vec![k])),
        }
    }
    groups
        .into_iter()
        .map(|(_, members)| {
            let mut at: Vec<usize> = members.iter().flat_map(|&k| named[k].clone()).collect();
            at.sort_unstable();
            at.dedup();
            let sql = match members.as_slice() {
                [only] => conjuncts[*only].to_string(),
                _ => members
                    .iter()
                    .map(|&k| format!("({})", conjuncts[k]))
                    .collect::<Vec<_>>()
                    .join(" AND "),
            };
            Component {
                columns: at.into_iter().map(|i| columns[i].clone()).collect(),
                sql,
            }
        })
        .collect()
}

/// The root of conjunct `i`'s set in a union-find forest, halving the path to it.
fn find(root: &mut [usize], mut i: usize) -> usize {
    while root[i] != i {
        root[i] = root[root[i]];
        i = root[i];
    }
    i
}

/// The conjuncts of `expr`'s top-level ANDs (through parentheses), left to right.
fn split_and(expr: Expr, out: &mut Vec<Expr>) {
    match expr {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            split_and(*left, out);
            split_and(*right, out);
        }
        // Parentheses are put back where conjuncts are joined (`Component::sql`).
        Expr::Nested(inner) => split_and(*inner, out),
        other => out.push(other),
    }
}

/// Resolves every `table.column` to the catalog's spelling, quoted, and checks that all of
/// them are QIs of one family table.
struct Resolve<'a> {
    entity: &'a str,
    tables: &'a [FamilyTable],
    table: Option<usize>,
    columns: Vec<String>,
    error: Option<FactError>,
}

impl Resolve<'_> {
    fn fail(&mut self, e: FactError) -> ControlFlow<()> {
        self.error = Some(e);
        ControlFlow::Break(())
    }

    fn column(&mut self, table: &Ident, column: &Ident) -> Result<Expr, FactError> {
        let names: Vec<&str> = self.tables.iter().map(|t| t.name.as_str()).collect();
        let ti = unique(&names, &table.value).ok_or_else(|| FactError::UnknownTable {
            table: table.value.clone(),
            entity: self.entity.to_string(),
            family: names.join(", "),
        })?;
        if let Some(first) = self.table.filter(|&t| t != ti) {
            return Err(FactError::SeveralTables {
                tables: format!("{}, {}", self.tables[first].name, self.tables[ti].name),
            });
        }
        self.table = Some(ti);
        let t = &self.tables[ti];
        let cols: Vec<&str> = t.columns.iter().map(|c| c.name.as_str()).collect();
        let ci = unique(&cols, &column.value).ok_or_else(|| FactError::UnknownColumn {
            table: t.name.clone(),
            column: column.value.clone(),
            qis: qi_list(self.tables),
        })?;
        let planned = &t.columns[ci];
        // A column published unchanged may be named too: the adversary who knows one
        // diagnosis is outside the declared model, and the owner may want to test them.
        let role = match planned.role {
            ColumnRole::QuasiIdentifier { .. }
            | ColumnRole::Sensitive { .. }
            | ColumnRole::Insensitive => None,
            ColumnRole::Key => Some("a join key"),
            ColumnRole::Identifier => Some("an IDENTIFIER"),
        };
        if let Some(role) = role {
            return Err(FactError::NotQi {
                column: format!("{}.{}", t.name, planned.name),
                role,
                qis: qi_list(self.tables),
            });
        }
        if !self.columns.contains(&planned.name) {
            self.columns.push(planned.name.clone());
        }
        Ok(Expr::CompoundIdentifier(vec![
            Ident::with_quote('"', t.name.clone()),
            Ident::with_quote('"', planned.name.clone()),
        ]))
    }
}

impl VisitorMut for Resolve<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, _query: &mut Query) -> ControlFlow<()> {
        self.fail(FactError::Subquery)
    }

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        match expr {
            Expr::Identifier(id) => {
                let hint = if id.quote_style == Some('"') {
                    format!(" (a string literal takes single quotes: '{}')", id.value)
                } else {
                    String::new()
                };
                let column = id.value.clone();
                self.fail(FactError::Unqualified { column, hint })
            }
            Expr::CompoundIdentifier(parts) if parts.len() == 2 => {
                match self.column(&parts[0], &parts[1]) {
                    Ok(resolved) => {
                        *expr = resolved;
                        ControlFlow::Continue(())
                    }
                    Err(e) => self.fail(e),
                }
            }
            Expr::CompoundIdentifier(parts) => {
                let name = parts
                    .iter()
                    .map(|p| p.value.as_str())
                    .collect::<Vec<_>>()
                    .join(".");
                self.fail(FactError::LongName { name })
            }
            _ => ControlFlow::Continue(()),
        }
    }
}

/// Exact name first, else the unique case-insensitive match (as the warehouse resolves names).
fn unique(names: &[&str], wanted: &str) -> Option<usize> {
    if let Some(i) = names.iter().position(|n| *n == wanted) {
        return Some(i);
    }
    let mut hits = names
        .iter()
        .enumerate()
        .filter(|(_, n)| n.eq_ignore_ascii_case(wanted));
    match (hits.next(), hits.next()) {
        (Some((i, _)), None) => Some(i),
        _ => None,
    }
}

/// Every QI of the family as `table.column`, for messages.
fn qi_list(tables: &[FamilyTable]) -> String {
    let all: Vec<String> = tables
        .iter()
        .flat_map(|t| t.qi_columns().map(move |(c, _)| format!("{}.{c}", t.name)))
        .collect();
    if all.is_empty() {
        "none: the declarations label no column QUASI IDENTIFIER".to_string()
    } else {
        all.join(", ")
    }
}

/// A well-formed fact over the family's first QI, for messages.
pub(super) fn example(tables: &[FamilyTable]) -> String {
    tables
        .iter()
        .find_map(|t| {
            t.qi_columns()
                .next()
                .map(|(c, _)| format!("{}.{c} = <value>", t.name))
        })
        .unwrap_or_else(|| "<table>.<qi column> = <value>".to_string())
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::plan::PlannedColumn;

    pub(crate) fn col(name: &str, role: ColumnRole) -> PlannedColumn {
        PlannedColumn {
            name: name.to_string(),
            role,
        }
    }

    pub(crate) fn qi(name: &str) -> PlannedColumn {
        col(
            name,
            ColumnRole::QuasiIdentifier {
                hierarchy: format!("{name}_h"),
            },
        )
    }

    pub(crate) fn table(
        name: &str,
        parent: Option<usize>,
        columns: Vec<PlannedColumn>,
    ) -> FamilyTable {
        FamilyTable {
            name: name.to_string(),
            primary_key: vec![],
            parent,
            parent_fk: vec![],
            parent_key: vec![],
            key: crate::plan::ReleasedKey::None,
            released_fk: vec![],
            released_parent_key: vec![],
            redundant: vec![],
            part: None,
            links: vec![],
            children: vec![],
            columns,
        }
    }

    /// students(sid, name, yob QI, gpa SA) <- courses(scid, sid, course QI, year QI, grade SA).
    fn family() -> Vec<FamilyTable> {
        vec![
            table(
                "students",
                None,
                vec![
                    col("sid", ColumnRole::Key),
                    col("name", ColumnRole::Identifier),
                    qi("yob"),
                    col("gpa", ColumnRole::Sensitive { buckets: None }),
                ],
            ),
            table(
                "Courses",
                Some(0),
                vec![
                    col("scid", ColumnRole::Key),
                    col("sid", ColumnRole::Key),
                    qi("course"),
                    qi("year"),
                    col("grade", ColumnRole::Sensitive { buckets: None }),
                    col("room", ColumnRole::Insensitive),
                ],
            ),
        ]
    }

    fn parse_one(text: &str) -> Result<Fact, FactError> {
        parse(text, "student", &family())
    }

    #[test]
    fn a_fact_resolves_to_one_table_and_its_quoted_columns() {
        let f = parse_one(
            "courses.COURSE = 'Physics' AND Courses.year > 2000 OR courses.course IN ('Math')",
        )
        .expect("valid fact");
        assert_eq!(f.table, 1);
        assert_eq!(f.columns, vec!["course".to_string(), "year".to_string()]);
        // An OR at the top couples its columns: one component, the whole fact.
        assert_eq!(
            parts(&f),
            [(
                vec!["course", "year"],
                "\"Courses\".\"course\" = 'Physics' AND \"Courses\".\"year\" > 2000 OR \"Courses\".\"course\" IN ('Math')"
            )]
        );
        let root = parse_one("students.yob BETWEEN 1990 AND 1995").expect("valid fact");
        assert_eq!((root.table, &root.columns), (0, &vec!["yob".to_string()]));
        // BETWEEN's AND is not a conjunction.
        assert_eq!(
            parts(&root),
            [(vec!["yob"], "\"students\".\"yob\" BETWEEN 1990 AND 1995")]
        );
    }

    /// Each component as (columns, SQL).
    fn parts(f: &Fact) -> Vec<(Vec<&str>, &str)> {
        f.components
            .iter()
            .map(|c| {
                (
                    c.columns.iter().map(String::as_str).collect(),
                    c.sql.as_str(),
                )
            })
            .collect()
    }

    #[test]
    fn top_level_conjuncts_split_into_components_by_shared_columns() {
        let f = parse_one("courses.course = 'Math' AND courses.year > 2000").expect("valid");
        assert_eq!(
            parts(&f),
            [
                (vec!["course"], "\"Courses\".\"course\" = 'Math'"),
                (vec!["year"], "\"Courses\".\"year\" > 2000"),
            ]
        );
        // Through parentheses; conjuncts sharing a column stay together, each parenthesized;
        // the column-free ones form one component; components in order of first conjunct.
        let f = parse_one(
            "(courses.year > 2000 AND 1 = 1) AND (courses.course = 'CS' AND courses.year < 2010 OR courses.year IS NULL) AND 2 > 1",
        )
        .expect("valid");
        assert_eq!(
            parts(&f),
            [
                (
                    vec!["year", "course"],
                    "(\"Courses\".\"year\" > 2000) AND (\"Courses\".\"course\" = 'CS' AND \"Courses\".\"year\" < 2010 OR \"Courses\".\"year\" IS NULL)"
                ),
                (vec![], "(1 = 1) AND (2 > 1)"),
            ]
        );
        // Connected transitively: course-year, then year-course again through a comparison.
        let f = parse_one(
            "courses.course = 'CS' AND courses.year = 2001 AND courses.course <> CAST(courses.year AS TEXT)",
        )
        .expect("valid");
        assert_eq!(f.components.len(), 1);
        assert_eq!(f.components[0].columns, ["course", "year"]);
        // A NOT over an AND is no conjunction of its parts.
        let f = parse_one("NOT (courses.course = 'Math' AND courses.year = 2001)").expect("valid");
        assert_eq!(f.components.len(), 1);
    }

    #[test]
    fn unpublished_columns_are_refused_with_the_list_of_qis() {
        for text in ["students.gpa > 3.5", "courses.room = 'B1'"] {
            let f = parse_one(text).expect("a column published unchanged may be named");
            assert_eq!(f.columns.len(), 1, "{text}");
        }
        for (text, role) in [
            ("students.name = 'Ann'", "an IDENTIFIER"),
            ("courses.sid = 'S1'", "a join key"),
        ] {
            let e = parse_one(text).expect_err(text);
            assert!(
                matches!(&e, FactError::NotQi { role: r, .. } if *r == role),
                "{text}: {e:?}"
            );
            let msg = e.to_string();
            assert!(
                msg.contains("not published as the source holds it")
                    && msg.contains("students.yob, Courses.course, Courses.year"),
                "{msg}"
            );
        }
    }

    #[test]
    fn facts_must_name_qualified_columns_of_one_family_table() {
        assert!(matches!(
            parse_one("course = 'Math'"),
            Err(FactError::Unqualified { .. })
        ));
        let e = parse_one("courses.course = \"Math\"").expect_err("double-quoted literal");
        assert!(e.to_string().contains("single quotes: 'Math'"), "{e}");
        assert!(matches!(
            parse_one("students.yob = 1990 AND courses.course = 'Math'"),
            Err(FactError::SeveralTables { .. })
        ));
        assert!(matches!(
            parse_one("teachers.name = 'X'"),
            Err(FactError::UnknownTable { .. })
        ));
        assert!(matches!(
            parse_one("courses.credits = 5"),
            Err(FactError::UnknownColumn { .. })
        ));
        assert!(matches!(
            parse_one("main.courses.course = 'Math'"),
            Err(FactError::LongName { .. })
        ));
        assert!(matches!(
            parse_one("1 = 1"),
            Err(FactError::NoColumn { .. })
        ));
        assert!(matches!(
            parse_one("courses.course IN (SELECT c FROM t)"),
            Err(FactError::Subquery)
        ));
    }

    #[test]
    fn unparsable_facts_say_so() {
        for text in [
            "courses.course = ",
            "courses.course = 'Math' courses.course",
            "",
        ] {
            let e = parse_one(text).expect_err(text);
            assert!(matches!(e, FactError::Unparsable { .. }), "{text}: {e:?}");
            assert!(e.to_string().contains("e.g. students.yob = <value>"), "{e}");
        }
    }
}
