//! The declarations parser: turns a declarations file into a [`Policy`].
//!
//! The file is SQL-flavoured: standard statements where SQL has them (`CREATE VIEW`,
//! `ALTER TABLE ... ADD FOREIGN KEY`, `SELECT` as a hierarchy source) and a few
//! anonymization statements (`CREATE HIERARCHY`, `CREATE ENTITY`, `LABEL`, `ANONYMIZE`,
//! `CREATE RULE`).
//! Everything goes through sqlparser's tokenizer, so quoting, comments and identifiers
//! behave like SQL, and queries go through sqlparser's own query parser.
//!
//! This module checks only what can be checked without a warehouse: syntax, duplicates, and
//! the shape of numeric lists. Names are resolved (case-insensitively) by the planner.
//! The user-facing grammar is documented in `docs/declarations.md`.

mod cursor;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};

use sqlparser::dialect::GenericDialect;
use sqlparser::tokenizer::{Location, Token, TokenWithSpan, Tokenizer, TokenizerError};

use crate::policy::{
    AnonymizeDecl, CsvDelimiter, DatePart, EntityDecl, ForeignKeyDecl, HierarchyDecl,
    HierarchySource, KeepDecl, KeyDecl, LabelDecl, OptionValue, Policy, Pos, Role, RuleDecl,
    RuleValue, Setting, TableDecl, Value, ViewDecl,
};
use cursor::{lower_first, pos, Cursor, LineIndex, Lit, StatementTokens};

/// A declarations file that cannot be understood, with where and what to write instead.
#[derive(Debug, thiserror::Error)]
#[error("{pos}: {message}")]
pub struct DeclError {
    pub pos: Pos,
    pub message: String,
}

impl DeclError {
    fn new(pos: Pos, message: impl Into<String>) -> Self {
        DeclError {
            pos,
            message: message.into(),
        }
    }
}

const STATEMENTS: &str =
    "SET, CREATE HIERARCHY, CREATE ENTITY, CREATE VIEW, CREATE RULE, ALTER TABLE, LABEL, KEEP or ANONYMIZE";

/// Parses a whole declarations file. An empty file (or one with only comments) is an empty
/// policy: saying what is missing is the planner's job, where it can say it all at once.
pub fn parse(text: &str) -> Result<Policy, DeclError> {
    // A byte-order mark some editors write is not part of the first statement.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let dialect = GenericDialect {};
    let mut tokens = Vec::new();
    if let Err(e) = Tokenizer::new(&dialect, text).tokenize_with_location_into_buf(&mut tokens) {
        // The tokenizer reports where it gave up (often the end of the file); the token it
        // was reading starts where the last good one ended, which is what the user must fix.
        let start = tokens.last().map(|t| t.span.end);
        return Err(tokenizer_error(e, start));
    }
    let mut builder = Builder::new(text);
    for stmt in split_statements(tokens) {
        let mut cursor = Cursor::new(&dialect, stmt);
        builder.statement(&mut cursor)?;
    }
    Ok(builder.policy)
}

fn tokenizer_error(e: TokenizerError, token_start: Option<Location>) -> DeclError {
    let at = match token_start {
        Some(start) if start.line > 0 => pos(start),
        _ => Pos { line: 1, column: 1 },
    };
    DeclError::new(
        at,
        format!(
            "{}; close every quoted string ('...'), quoted identifier (\"...\") and /* comment */",
            lower_first(e.message.trim_end_matches('.'))
        ),
    )
}

fn is_trivia(t: &TokenWithSpan) -> bool {
    matches!(t.token, Token::Whitespace(_))
}

/// Cuts the token stream at top-level `;`. Semicolons inside strings, quoted identifiers and
/// comments are already inside single tokens, so no nesting needs tracking. Statements made
/// only of whitespace and comments (e.g. `;;`) are dropped.
fn split_statements(tokens: Vec<TokenWithSpan>) -> Vec<StatementTokens> {
    let mut out = Vec::new();
    let mut current: Vec<TokenWithSpan> = Vec::new();
    let close =
        |mut current: Vec<TokenWithSpan>, end: Option<Location>, out: &mut Vec<StatementTokens>| {
            let mut significant = current.iter().filter(|t| !is_trivia(t));
            let Some(first) = significant.next() else {
                return;
            };
            let start = first.span.start;
            let last_end = significant.next_back().unwrap_or(first).span.end;
            let (end, end_desc) = match end {
                Some(semicolon) => (semicolon, "';'"),
                None => (last_end, "the end of the file"),
            };
            current.push(TokenWithSpan::at(Token::EOF, end, end));
            out.push(StatementTokens {
                tokens: current,
                start,
                last_end,
                end,
                end_desc,
            });
        };
    for t in tokens {
        match t.token {
            Token::SemiColon => close(std::mem::take(&mut current), Some(t.span.start), &mut out),
            Token::EOF => {}
            _ => current.push(t),
        }
    }
    close(current, None, &mut out);
    out
}

/// Accumulates the policy, remembering where each uniquely-named thing was first declared
/// so duplicates can point back at it. Names are compared case-insensitively because the
/// planner resolves them that way: `Age_H` and `age_h` would be the same hierarchy.
struct Builder<'t> {
    policy: Policy,
    lines: LineIndex<'t>,
    settings: HashMap<String, Pos>,
    hierarchies: HashMap<String, Pos>,
    views: HashMap<String, Pos>,
    primary_keys: HashMap<String, Pos>,
    /// (table, column or None for the table default), lower-cased.
    labels: HashMap<(String, Option<String>), Pos>,
    /// Tables declared dimensions, lower-cased.
    dimensions: HashMap<String, Pos>,
    /// (table, columns) of foreign keys set aside, lower-cased.
    dropped_keys: HashMap<(String, Vec<String>), Pos>,
}

impl<'t> Builder<'t> {
    fn new(text: &'t str) -> Self {
        Builder {
            policy: Policy::default(),
            lines: LineIndex::new(text),
            settings: HashMap::new(),
            hierarchies: HashMap::new(),
            views: HashMap::new(),
            primary_keys: HashMap::new(),
            labels: HashMap::new(),
            dimensions: HashMap::new(),
            dropped_keys: HashMap::new(),
        }
    }

    fn statement(&mut self, c: &mut Cursor) -> Result<(), DeclError> {
        if c.eat_kw("SET") {
            self.set(c)
        } else if c.eat_kw("CREATE") {
            if c.eat_kw("HIERARCHY") {
                self.hierarchy(c)
            } else if c.eat_kw("ENTITY") {
                self.entity(c)
            } else if c.eat_kw("VIEW") {
                self.view(c)
            } else if c.eat_kw("RULE") {
                self.rule(c)
            } else {
                Err(c.expected(
                    "HIERARCHY, ENTITY, VIEW or RULE after CREATE (e.g. CREATE HIERARCHY h AS BANDS (5, 10))",
                ))
            }
        } else if c.eat_kw("ALTER") {
            self.alter(c)
        } else if c.eat_kw("LABEL") {
            self.label(c)
        } else if c.eat_kw("ANONYMIZE") {
            self.anonymize(c)
        } else if c.eat_kw("KEEP") {
            self.keep(c)
        } else {
            Err(c.expected(STATEMENTS))
        }
    }

    /// `SET name = value`
    fn set(&mut self, c: &mut Cursor) -> Result<(), DeclError> {
        let (name, name_pos) =
            c.ident("a setting name after SET (e.g. SET source = 'warehouse.sqlite')")?;
        c.expect(
            &Token::Eq,
            &format!("'=' after SET {name} (e.g. SET {name} = 'value')"),
        )?;
        let (value, value_pos) =
            c.literal("a value after '=': a quoted string, a number or a word")?;
        c.end("SET")?;
        let name = name.to_lowercase();
        if let Some(first) = self.settings.get(&name) {
            return Err(DeclError::new(
                name_pos,
                format!("'{name}' is already set at {first}; keep only one SET {name}"),
            ));
        }
        self.settings.insert(name.clone(), c.start);
        let setting = Setting {
            name: name.clone(),
            value: value.into_text(),
            pos: c.start,
        };
        match name.as_str() {
            "source" => self.policy.source = Some(setting),
            "target" => self.policy.target = Some(setting),
            "csv_delimiter" => {
                self.policy.csv_delimiter = Some(CsvDelimiter {
                    byte: csv_delimiter(&setting.value, value_pos)?,
                    pos: c.start,
                })
            }
            _ => self.policy.settings.push(setting),
        }
        Ok(())
    }

    /// `CREATE HIERARCHY name AS ... | FROM CSV 'path'`
    fn hierarchy(&mut self, c: &mut Cursor) -> Result<(), DeclError> {
        let (name, name_pos) = c.ident("a hierarchy name after CREATE HIERARCHY")?;
        let key = name.to_lowercase();
        if let Some(first) = self.hierarchies.get(&key) {
            return Err(DeclError::new(
                name_pos,
                format!("hierarchy '{name}' is already declared at {first}; rename one of them"),
            ));
        }
        let source = if c.eat_kw("FROM") {
            c.expect_kw("CSV", "CSV after FROM (write FROM CSV 'path/to/file.csv')")?;
            let (path, _) = c.string("the CSV file's path as a quoted string after FROM CSV (e.g. FROM CSV 'hierarchies/education.csv')")?;
            HierarchySource::Csv(path)
        } else if c.eat_kw("AS") {
            if c.eat_kw("VALUES") {
                HierarchySource::Values(values_rows(c)?)
            } else if c.is_kw("SELECT") || c.is_kw("WITH") {
                let from = c.peek_loc();
                let query = c.query("the hierarchy's query")?;
                c.end("CREATE HIERARCHY")?;
                // Keep the query as the user wrote it: it is run against the source as-is,
                // and sqlparser's re-rendering could change quoting or spacing.
                let text = match self.lines.slice(from, c.last_end) {
                    Some(text) => text.to_string(),
                    None => query.to_string(),
                };
                HierarchySource::Select(text)
            } else if c.eat_kw("BANDS") {
                bands(c)?
            } else if c.eat_kw("DATE") {
                HierarchySource::DateParts(date_parts(c)?)
            } else {
                return Err(DeclError::new(
                    c.peek_pos(),
                    format!(
                        "expected a hierarchy source after AS: VALUES (...), SELECT ..., BANDS (...), or DATE PARTS (...); found {}",
                        c.found()
                    ),
                ));
            }
        } else {
            return Err(c.expected(
                "AS or FROM CSV after the hierarchy name (e.g. CREATE HIERARCHY h AS BANDS (5, 10) or CREATE HIERARCHY h FROM CSV 'h.csv')",
            ));
        };
        c.end("CREATE HIERARCHY")?;
        self.hierarchies.insert(key, c.start);
        self.policy.hierarchies.push(HierarchyDecl {
            name,
            source,
            pos: c.start,
        });
        Ok(())
    }

    /// `CREATE ENTITY name ON table [(col, ...)]`
    fn entity(&mut self, c: &mut Cursor) -> Result<(), DeclError> {
        if let Some(first) = &self.policy.entity {
            return Err(DeclError::new(
                c.start,
                format!(
                    "entity '{}' is already declared at {}; a declarations file has exactly one CREATE ENTITY",
                    first.name, first.pos
                ),
            ));
        }
        let (name, _) = c.ident(
            "an entity name after CREATE ENTITY (e.g. CREATE ENTITY student ON students (sid))",
        )?;
        c.expect_kw(
            "ON",
            &format!(
                "ON and the entity's table after CREATE ENTITY {name} (e.g. ON students (sid))"
            ),
        )?;
        let (table, _) = c.ident("the entity's table name after ON")?;
        // Without a key list the planner takes the table's primary key, or, for a table
        // without one, each row as an individual.
        let key = if c.is(&Token::LParen) {
            c.ident_list("the entity's key columns")?.0
        } else {
            Vec::new()
        };
        c.end("CREATE ENTITY")?;
        self.policy.entity = Some(EntityDecl {
            name,
            table,
            key,
            pos: c.start,
        });
        Ok(())
    }

    /// `CREATE VIEW name AS query`
    fn view(&mut self, c: &mut Cursor) -> Result<(), DeclError> {
        let (name, name_pos) = c.ident("a view name after CREATE VIEW")?;
        let key = name.to_lowercase();
        if let Some(first) = self.views.get(&key) {
            return Err(DeclError::new(
                name_pos,
                format!("view '{name}' is already declared at {first}; rename one of them"),
            ));
        }
        if c.is(&Token::LParen) {
            return Err(DeclError::new(
                c.peek_pos(),
                "a column list after the view name is not supported; name the columns with AS aliases inside the query",
            ));
        }
        c.expect_kw(
            "AS",
            "AS and a query after the view name (e.g. CREATE VIEW v AS SELECT ...)",
        )?;
        let query = c.query(&format!("the query of view '{name}'"))?;
        c.end("CREATE VIEW")?;
        self.views.insert(key, c.start);
        self.policy.views.push(ViewDecl {
            name,
            query,
            pos: c.start,
        });
        Ok(())
    }

    /// `ALTER TABLE t ADD [CONSTRAINT n] PRIMARY KEY (...) | FOREIGN KEY (...) REFERENCES p [(...)]`
    fn alter(&mut self, c: &mut Cursor) -> Result<(), DeclError> {
        c.expect_kw("TABLE", "TABLE after ALTER (write ALTER TABLE t ADD PRIMARY KEY (...) or ADD FOREIGN KEY (...))")?;
        let (table, _) = c.ident("a table name after ALTER TABLE")?;
        if c.eat_kw("DROP") {
            c.expect_kw(
                "FOREIGN",
                &format!("FOREIGN KEY (columns) after DROP (write ALTER TABLE {table} DROP FOREIGN KEY (column, ...) to set a catalog foreign key aside)"),
            )?;
            c.expect_kw("KEY", "KEY after FOREIGN")?;
            let (columns, _) = c.ident_list("the columns of the foreign key to set aside")?;
            c.end("ALTER TABLE")?;
            let key = (
                table.to_lowercase(),
                columns.iter().map(|c| c.to_lowercase()).collect::<Vec<_>>(),
            );
            if let Some(first) = self.dropped_keys.get(&key) {
                return Err(DeclError::new(
                    c.start,
                    format!("this foreign key of '{table}' is already set aside at {first}; keep one DROP FOREIGN KEY"),
                ));
            }
            self.dropped_keys.insert(key, c.start);
            self.policy.dropped_foreign_keys.push(KeyDecl {
                table,
                columns,
                pos: c.start,
            });
            return Ok(());
        }
        c.expect_kw(
            "ADD",
            "ADD or DROP after the table name (write ALTER TABLE t ADD PRIMARY KEY (...), ADD FOREIGN KEY (...) REFERENCES p (...) or DROP FOREIGN KEY (...))",
        )?;
        if c.eat_kw("CONSTRAINT") {
            // The name has no meaning here; it is accepted so standard DDL can be pasted in.
            c.ident("a constraint name after CONSTRAINT")?;
        }
        if c.eat_kw("PRIMARY") {
            c.expect_kw("KEY", "KEY after PRIMARY")?;
            let (columns, _) = c.ident_list("the primary key columns")?;
            c.end("ALTER TABLE")?;
            let key = table.to_lowercase();
            if let Some(first) = self.primary_keys.get(&key) {
                return Err(DeclError::new(
                    c.start,
                    format!("table '{table}' already has a primary key declared at {first}; a table has one primary key, so keep one of them"),
                ));
            }
            self.primary_keys.insert(key, c.start);
            self.policy.primary_keys.push(KeyDecl {
                table,
                columns,
                pos: c.start,
            });
        } else if c.eat_kw("FOREIGN") {
            c.expect_kw("KEY", "KEY after FOREIGN")?;
            let (columns, _) = c.ident_list("the foreign key columns")?;
            c.expect_kw(
                "REFERENCES",
                "REFERENCES and the parent table after the foreign key columns (e.g. REFERENCES courses (scid))",
            )?;
            let (ref_table, _) = c.ident("the parent table name after REFERENCES")?;
            let ref_columns = if c.is(&Token::LParen) {
                let (ref_columns, open) = c.ident_list("the referenced columns")?;
                if ref_columns.len() != columns.len() {
                    return Err(DeclError::new(
                        open,
                        format!(
                            "the foreign key has {} column(s) but REFERENCES lists {}; list one referenced column per key column, in the same order",
                            columns.len(),
                            ref_columns.len()
                        ),
                    ));
                }
                ref_columns
            } else {
                // Empty means "the parent's primary key", as in standard SQL.
                Vec::new()
            };
            c.end("ALTER TABLE")?;
            self.policy.foreign_keys.push(ForeignKeyDecl {
                table,
                columns,
                ref_table,
                ref_columns,
                pos: c.start,
            });
        } else {
            return Err(
                c.expected("PRIMARY KEY (...) or FOREIGN KEY (...) REFERENCES ... after ADD")
            );
        }
        Ok(())
    }

    /// `LABEL COLUMN t.c AS role` or `LABEL TABLE t DEFAULT INSENSITIVE`
    fn label(&mut self, c: &mut Cursor) -> Result<(), DeclError> {
        let (table, column, role) = if c.eat_kw("COLUMN") {
            let (table, _) = c.ident(
                "a table name after LABEL COLUMN (write LABEL COLUMN table.column AS role)",
            )?;
            c.expect(
                &Token::Period,
                &format!("'.' and a column name after '{table}' (write LABEL COLUMN {table}.column AS role)"),
            )?;
            let (column, _) = c.ident(&format!("a column name after '{table}.'"))?;
            c.expect_kw(
                "AS",
                "AS and a role after the column (IDENTIFIER, QUASI IDENTIFIER USING h, SENSITIVE or INSENSITIVE)",
            )?;
            let role = role(c)?;
            (table, Some(column), role)
        } else if c.eat_kw("TABLE") {
            let (table, _) = c.ident(
                "a table name after LABEL TABLE (write LABEL TABLE t DEFAULT INSENSITIVE or LABEL TABLE t AS DIMENSION)",
            )?;
            if c.eat_kw("AS") {
                c.expect_kw(
                    "DIMENSION",
                    &format!("DIMENSION after AS (write LABEL TABLE {table} AS DIMENSION to release it beside the family)"),
                )?;
                c.end("LABEL")?;
                let key = table.to_lowercase();
                if let Some(first) = self.dimensions.get(&key) {
                    return Err(DeclError::new(
                        c.start,
                        format!("table '{table}' is already declared a dimension at {first}; keep one LABEL TABLE {table} AS DIMENSION"),
                    ));
                }
                self.dimensions.insert(key, c.start);
                self.policy.dimensions.push(TableDecl {
                    table,
                    pos: c.start,
                });
                return Ok(());
            }
            c.expect_kw(
                "DEFAULT",
                &format!("DEFAULT INSENSITIVE or AS DIMENSION after the table name (write LABEL TABLE {table} DEFAULT INSENSITIVE)"),
            )?;
            if !c.eat_kw("INSENSITIVE") {
                return Err(DeclError::new(
                    c.peek_pos(),
                    format!(
                        "only INSENSITIVE can be a table default, found {}; write LABEL TABLE {table} DEFAULT INSENSITIVE and give identifiers, quasi-identifiers and sensitive columns their role with LABEL COLUMN",
                        c.found()
                    ),
                ));
            }
            (table, None, Role::Insensitive)
        } else {
            return Err(c.expected(
                "COLUMN or TABLE after LABEL (write LABEL COLUMN table.column AS role or LABEL TABLE t DEFAULT INSENSITIVE)",
            ));
        };
        c.end("LABEL")?;
        let key = (
            table.to_lowercase(),
            column.as_ref().map(|c| c.to_lowercase()),
        );
        if let Some(first) = self.labels.get(&key) {
            let what = match &column {
                Some(col) => format!("column {table}.{col} is already labeled at {first}; give each column exactly one LABEL"),
                None => format!("table '{table}' already has a default at {first}; keep one LABEL TABLE {table} DEFAULT INSENSITIVE"),
            };
            return Err(DeclError::new(c.start, what));
        }
        self.labels.insert(key, c.start);
        self.policy.labels.push(LabelDecl {
            table,
            column,
            role,
            pos: c.start,
        });
        Ok(())
    }

    /// `CREATE RULE name ON t.c [= value | IS NULL] WITH (m = 2, p = '1/3')`
    /// `KEEP <percent> PERCENT OF <table>`
    fn keep(&mut self, c: &mut Cursor) -> Result<(), DeclError> {
        const EXAMPLE: &str = "e.g. KEEP 90 PERCENT OF orders";
        let (percent, text, at) = c.number(&format!(
            "a share of rows in percent after KEEP ({EXAMPLE})"
        ))?;
        if !(percent > 0.0 && percent <= 100.0) {
            return Err(DeclError::new(
                at,
                format!(
                    "KEEP takes a percentage above 0 and at most 100, found {text} ({EXAMPLE})"
                ),
            ));
        }
        c.expect_kw("PERCENT", &format!("PERCENT after the number ({EXAMPLE})"))?;
        c.expect_kw("OF", &format!("OF and a table after PERCENT ({EXAMPLE})"))?;
        let (table, _) = c.ident(&format!("a table name after OF ({EXAMPLE})"))?;
        c.end("KEEP")?;
        if let Some(first) = self
            .policy
            .keeps
            .iter()
            .find(|k| k.table.eq_ignore_ascii_case(&table))
        {
            return Err(DeclError::new(
                c.start,
                format!(
                    "table '{table}' already has a KEEP at {}; keep one KEEP per table",
                    first.pos
                ),
            ));
        }
        self.policy.keeps.push(KeepDecl {
            table,
            percent,
            pos: c.start,
        });
        Ok(())
    }

    fn rule(&mut self, c: &mut Cursor) -> Result<(), DeclError> {
        const EXAMPLE: &str =
            "e.g. CREATE RULE aids ON visits.diagnosis = 'AIDS' WITH (m = 1, p = 0.5)";
        let (name, name_pos) = c.ident(&format!("a rule name after CREATE RULE ({EXAMPLE})"))?;
        if let Some(first) = self
            .policy
            .rules
            .iter()
            .find(|r| r.name.eq_ignore_ascii_case(&name))
        {
            return Err(DeclError::new(
                name_pos,
                format!(
                    "rule '{name}' is already declared at {}; give each rule its own name",
                    first.pos
                ),
            ));
        }
        c.expect_kw(
            "ON",
            &format!("ON and the sensitive column after the rule name ({EXAMPLE})"),
        )?;
        let (table, _) = c.ident(&format!("a table name after ON ({EXAMPLE})"))?;
        c.expect(
            &Token::Period,
            &format!("'.' and a column name after '{table}' (write ON {table}.column)"),
        )?;
        let (column, _) = c.ident(&format!("a column name after '{table}.'"))?;
        let value = if c.eat(&Token::Eq) {
            match c.literal("a value after '=' (a quoted string or a number)")? {
                (Lit::Number(_, text), _) => RuleValue::Value(text),
                (Lit::Text(s), _) => RuleValue::Value(s),
                (Lit::Word(w), at) => {
                    return Err(DeclError::new(
                        at,
                        format!("quote the value: write = '{w}' (or IS NULL for a missing value)"),
                    ))
                }
            }
        } else if c.eat_kw("IS") {
            c.expect_kw("NULL", "NULL after IS (a rule about missing values)")?;
            RuleValue::Null
        } else {
            RuleValue::Every
        };
        c.expect_kw(
            "WITH",
            &format!("WITH (m = ..., p = ...) after the column or value ({EXAMPLE}; leave out = value for a rule on every value)"),
        )?;
        c.expect(
            &Token::LParen,
            "'(' after WITH (e.g. WITH (m = 2, p = 0.5))",
        )?;
        let (mut m, mut p) = (None, None);
        loop {
            let (option, at) = c.ident("m or p (e.g. m = 2, p = 0.5)")?;
            c.expect(&Token::Eq, &format!("'=' after {option}"))?;
            match option.to_ascii_lowercase().as_str() {
                "m" if m.is_none() => {
                    let (n, _, npos) =
                        c.number("a whole number of occurrences after m = (e.g. m = 2)")?;
                    m = Some((n, npos));
                }
                "p" if p.is_none() => {
                    let (text, ppos) =
                        match c.literal("a share after p = (e.g. p = 0.5 or p = '1/3')")? {
                            (Lit::Number(_, text), ppos) => (text, ppos),
                            (Lit::Text(s), ppos) => (s, ppos),
                            (Lit::Word(w), ppos) => {
                                return Err(DeclError::new(
                                    ppos,
                                    format!("p must be a share such as 0.5 or '1/3', found {w}"),
                                ))
                            }
                        };
                    p = Some((text, ppos));
                }
                "m" | "p" => {
                    return Err(DeclError::new(
                        at,
                        format!("{option} is already given; keep only one"),
                    ))
                }
                other => {
                    return Err(DeclError::new(
                        at,
                        format!("a rule takes m and p, not '{other}' (e.g. WITH (m = 2, p = 0.5))"),
                    ))
                }
            }
            if !c.eat(&Token::Comma) {
                break;
            }
        }
        c.expect(&Token::RParen, "',' or ')' after a rule option")?;
        c.end("CREATE RULE")?;
        let missing = |what: &str| {
            DeclError::new(
                c.start,
                format!("rule '{name}' needs {what} (e.g. WITH (m = 2, p = 0.5))"),
            )
        };
        let m = m.ok_or_else(|| missing("m, the occurrences that discriminate"))?;
        let p = p.ok_or_else(|| missing("p, the most confidence an adversary may have"))?;
        self.policy.rules.push(RuleDecl {
            name,
            table,
            column,
            value,
            m,
            p,
            pos: c.start,
        });
        Ok(())
    }

    /// `ANONYMIZE entity WITH (name = value, ...)`
    fn anonymize(&mut self, c: &mut Cursor) -> Result<(), DeclError> {
        if let Some(first) = &self.policy.anonymize {
            return Err(DeclError::new(
                c.start,
                format!(
                    "ANONYMIZE is already given at {}; merge the options into that one statement",
                    first.pos
                ),
            ));
        }
        let (entity, _) =
            c.ident("the entity's name after ANONYMIZE (e.g. ANONYMIZE student WITH (k = 5))")?;
        c.expect_kw(
            "WITH",
            &format!("WITH and an option list after ANONYMIZE {entity} (e.g. WITH (k = 5))"),
        )?;
        c.expect(&Token::LParen, "'(' after WITH (e.g. WITH (k = 5))")?;
        let mut options = BTreeMap::new();
        if !c.eat(&Token::RParen) {
            loop {
                let (name, name_pos) = c.ident("an option name (e.g. k = 5)")?;
                let name = name.to_lowercase();
                c.expect(
                    &Token::Eq,
                    &format!("'=' after option '{name}' (e.g. {name} = 5)"),
                )?;
                let (lit, _) = c.literal(&format!(
                    "a value for option '{name}': a number, a quoted string or a word"
                ))?;
                if let Some(OptionValue { pos: first, .. }) = options.get(&name) {
                    return Err(DeclError::new(
                        name_pos,
                        format!("option '{name}' is already given at {first}; keep only one"),
                    ));
                }
                let value = match lit {
                    Lit::Number(n, _) => Value::Number(n),
                    Lit::Text(s) | Lit::Word(s) => Value::Text(s),
                };
                options.insert(
                    name,
                    OptionValue {
                        value,
                        pos: name_pos,
                    },
                );
                if !c.eat(&Token::Comma) {
                    break;
                }
            }
            c.expect(&Token::RParen, "',' or ')' after an option value")?;
        }
        c.end("ANONYMIZE")?;
        self.policy.anonymize = Some(AnonymizeDecl {
            entity,
            options,
            pos: c.start,
        });
        Ok(())
    }
}

/// The byte `SET csv_delimiter = value` names: one ASCII punctuation character or space, or
/// the word `tab` (a tab cannot be typed visibly between quotes). Letters, digits, quotes
/// and line breaks would split values or records, so they are refused with what to write.
fn csv_delimiter(value: &str, at: Pos) -> Result<u8, DeclError> {
    if value.eq_ignore_ascii_case("tab") || value == "\t" {
        return Ok(b'\t');
    }
    match value.as_bytes() {
        [b] if (b.is_ascii_punctuation() || *b == b' ') && !matches!(b, b'"' | b'\'') => Ok(*b),
        _ => Err(DeclError::new(
            at,
            format!(
                "csv_delimiter must be one punctuation character or 'tab', found '{value}'; write e.g. SET csv_delimiter = ';' (or ',', '|', 'tab')"
            ),
        )),
    }
}

/// `('leaf', 'parent', ...), ...` after `AS VALUES`. Values are literals as in SQL's VALUES;
/// numbers are kept as written so `5` matches the text of a stored 5.
fn values_rows(c: &mut Cursor) -> Result<Vec<Vec<String>>, DeclError> {
    let mut rows = Vec::new();
    loop {
        c.expect(
            &Token::LParen,
            "'(' to start a row (e.g. VALUES ('Math', 'Science'), ('CS', 'Science'))",
        )?;
        let mut row = Vec::new();
        loop {
            let at = c.peek_pos();
            let (lit, _) = c.literal("a quoted string or a number (e.g. ('Math', 'Science'))")?;
            match lit {
                Lit::Number(_, text) | Lit::Text(text) => row.push(text),
                Lit::Word(w) => {
                    return Err(DeclError::new(
                        at,
                        format!("expected a quoted string or a number, found '{w}'; quote hierarchy values, e.g. '{w}'"),
                    ))
                }
            }
            if !c.eat(&Token::Comma) {
                break;
            }
        }
        c.expect(&Token::RParen, "',' or ')' after a value in a VALUES row")?;
        rows.push(row);
        if !c.eat(&Token::Comma) {
            break;
        }
    }
    Ok(rows)
}

/// A parenthesized list of strictly increasing numbers; `what` names one element and many.
fn increasing_numbers(
    c: &mut Cursor,
    (what, whats): (&str, &str),
    example: &str,
) -> Result<Vec<(f64, Pos)>, DeclError> {
    c.expect(
        &Token::LParen,
        &format!("'(' and a list of {whats} (e.g. {example})"),
    )?;
    let mut out: Vec<(f64, Pos)> = Vec::new();
    loop {
        let (n, text, at) = c.number(&format!("a {what} (a number, e.g. {example})"))?;
        if let Some((prev, _)) = out.last() {
            if n <= *prev {
                return Err(DeclError::new(
                    at,
                    format!("{whats} must increase strictly, but {text} follows {prev}; list them in increasing order, e.g. {example}"),
                ));
            }
        }
        out.push((n, at));
        if !c.eat(&Token::Comma) {
            break;
        }
    }
    c.expect(&Token::RParen, &format!("',' or ')' after a {what}"))?;
    Ok(out)
}

/// The widest band: beyond 2^53 a double no longer holds every whole number, so band edges
/// (multiples of the width) would no longer be exact.
const MAX_BAND: f64 = 1e15;

/// `(w, ...) [BETWEEN lo AND hi]` after `AS BANDS`.
fn bands(c: &mut Cursor) -> Result<HierarchySource, DeclError> {
    let widths = increasing_numbers(c, ("band width", "band widths"), "BANDS (5, 10, 20)")?;
    // Increasing order makes the first width the smallest, so only it needs the sign check,
    // and the last the largest.
    if let Some((w, at)) = widths.first() {
        if *w <= 0.0 {
            return Err(DeclError::new(
                *at,
                format!("band widths must be positive, found {w}; write widths such as BANDS (5, 10, 20)"),
            ));
        }
    }
    if let Some((w, at)) = widths.last() {
        if *w > MAX_BAND {
            return Err(DeclError::new(
                *at,
                format!("band width {w} is beyond what bands can be computed exactly for (at most {MAX_BAND:e}); use a smaller width, or a VALUES hierarchy"),
            ));
        }
    }
    let range = if c.eat_kw("BETWEEN") {
        let (lo, _, _) = c.number("the lowest value after BETWEEN (e.g. BETWEEN 0 AND 100)")?;
        c.expect_kw("AND", "AND and the highest value (e.g. BETWEEN 0 AND 100)")?;
        let (hi, text, at) = c.number("the highest value after AND (e.g. BETWEEN 0 AND 100)")?;
        if hi <= lo {
            return Err(DeclError::new(
                at,
                format!("the upper bound {text} must be greater than the lower bound {lo}; write BETWEEN low AND high"),
            ));
        }
        Some((lo, hi))
    } else {
        None
    };
    let widths = widths.into_iter().map(|(w, _)| w).collect();
    Ok(HierarchySource::Bands { widths, range })
}

/// `PARTS (month, ...)` after `AS DATE`.
fn date_parts(c: &mut Cursor) -> Result<Vec<DatePart>, DeclError> {
    const ORDER: &str = "month, quarter, year, decade";
    c.expect_kw("PARTS", "PARTS after DATE (e.g. DATE PARTS (month, year))")?;
    c.expect(
        &Token::LParen,
        "'(' and a list of date parts (e.g. DATE PARTS (month, year))",
    )?;
    let mut parts: Vec<DatePart> = Vec::new();
    loop {
        let (word, at) = c.ident(&format!("a date part: one of {ORDER}"))?;
        let part = match word.to_lowercase().as_str() {
            "month" => DatePart::Month,
            "quarter" => DatePart::Quarter,
            "year" => DatePart::Year,
            "decade" => DatePart::Decade,
            _ => {
                return Err(DeclError::new(
                    at,
                    format!("unknown date part '{word}'; use {ORDER}"),
                ))
            }
        };
        if parts.contains(&part) {
            return Err(DeclError::new(
                at,
                format!("date part '{word}' is listed twice; list each part once, finest first ({ORDER})"),
            ));
        }
        if let Some(prev) = parts.last() {
            if rank(part) < rank(*prev) {
                return Err(DeclError::new(
                    at,
                    format!("date part '{word}' is finer than '{}' before it; list parts from finest to coarsest ({ORDER})", part_name(*prev)),
                ));
            }
        }
        parts.push(part);
        if !c.eat(&Token::Comma) {
            break;
        }
    }
    c.expect(&Token::RParen, "',' or ')' after a date part")?;
    Ok(parts)
}

fn rank(p: DatePart) -> u8 {
    match p {
        DatePart::Month => 0,
        DatePart::Quarter => 1,
        DatePart::Year => 2,
        DatePart::Decade => 3,
    }
}

fn part_name(p: DatePart) -> &'static str {
    match p {
        DatePart::Month => "month",
        DatePart::Quarter => "quarter",
        DatePart::Year => "year",
        DatePart::Decade => "decade",
    }
}

/// The role after `LABEL COLUMN t.c AS`.
fn role(c: &mut Cursor) -> Result<Role, DeclError> {
    if c.eat_kw("IDENTIFIER") {
        Ok(Role::Identifier)
    } else if c.eat_kw("QUASI") {
        c.expect_kw(
            "IDENTIFIER",
            "IDENTIFIER after QUASI (write QUASI IDENTIFIER USING hierarchy)",
        )?;
        quasi(c)
    } else if c.eat_kw("QUASI_IDENTIFIER") {
        quasi(c)
    } else if c.eat_kw("SENSITIVE") {
        let buckets = if c.is_kw("BUCKETS") {
            let at = c.peek_pos();
            c.eat_kw("BUCKETS");
            let bounds = increasing_numbers(
                c,
                ("bucket boundary", "bucket boundaries"),
                "BUCKETS (0, 50, 100)",
            )?;
            if bounds.len() < 2 {
                return Err(DeclError::new(
                    at,
                    "BUCKETS needs at least 2 boundaries to make one bucket; write e.g. BUCKETS (0, 50, 100)",
                ));
            }
            Some(bounds.into_iter().map(|(b, _)| b).collect())
        } else {
            None
        };
        Ok(Role::Sensitive { buckets })
    } else if c.eat_kw("INSENSITIVE") {
        Ok(Role::Insensitive)
    } else {
        Err(c.expected(
            "a role after AS: IDENTIFIER, QUASI IDENTIFIER USING <hierarchy>, SENSITIVE [BUCKETS (...)] or INSENSITIVE",
        ))
    }
}

fn quasi(c: &mut Cursor) -> Result<Role, DeclError> {
    c.expect_kw(
        "USING",
        "USING and a hierarchy name after QUASI IDENTIFIER (e.g. QUASI IDENTIFIER USING age_h)",
    )?;
    let (hierarchy, _) = c.ident("a hierarchy name after USING")?;
    Ok(Role::QuasiIdentifier { hierarchy })
}
