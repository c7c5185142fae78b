//! The meaning of a declarations file: what the data owner said, before it is checked
//! against a warehouse. Produced by [`crate::decl`], consumed by [`crate::plan`] and
//! [`crate::verify`]. Nothing here knows about clusters or files.

use std::collections::BTreeMap;
use std::fmt;

/// A 1-based position in the declarations text, so every error can point at it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct Pos {
    pub line: u64,
    pub column: u64,
}

impl Pos {
    /// Line 0 marks an option given on the command line (`--with`), not in the file.
    pub const WITH: u64 = 0;

    /// Whether this is a position in `--with` rather than in the declarations file.
    pub fn in_with(&self) -> bool {
        self.line == Pos::WITH
    }
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.in_with() {
            write!(f, "--with, column {}", self.column)
        } else {
            write!(f, "{}:{}", self.line, self.column)
        }
    }
}

/// Everything a declarations file says, in the order it said it.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// `SET source = '...'`: a SQLite file or a directory of Parquet / CSV files.
    pub source: Option<Setting>,
    /// `SET target = '...'`: a `.sqlite` / `.db` file, or a directory for Parquet.
    pub target: Option<Setting>,
    /// `SET csv_delimiter = ';'`: how the source's CSV files separate fields (`,` if unset).
    pub csv_delimiter: Option<CsvDelimiter>,
    /// Other `SET name = value` statements (e.g. `orphans = 'drop'`, `keys = 'preserve'`).
    pub settings: Vec<Setting>,
    pub hierarchies: Vec<HierarchyDecl>,
    pub entity: Option<EntityDecl>,
    pub primary_keys: Vec<KeyDecl>,
    pub foreign_keys: Vec<ForeignKeyDecl>,
    /// `ALTER TABLE t DROP FOREIGN KEY (columns)`: catalog keys set aside.
    pub dropped_foreign_keys: Vec<KeyDecl>,
    pub labels: Vec<LabelDecl>,
    /// `LABEL TABLE t AS DIMENSION`: tables outside the family released beside it.
    pub dimensions: Vec<TableDecl>,
    pub anonymize: Option<AnonymizeDecl>,
    pub views: Vec<ViewDecl>,
    /// `CREATE RULE`: anatomy's (p,m)-privacy rules, in the order written.
    pub rules: Vec<RuleDecl>,
    /// `KEEP 90 PERCENT OF t`: the least share of a family table's rows the release keeps.
    pub keeps: Vec<KeepDecl>,
}

/// `KEEP <percent> PERCENT OF <table>`.
#[derive(Debug, Clone, PartialEq)]
pub struct KeepDecl {
    pub table: String,
    /// In (0, 100].
    pub percent: f64,
    pub pos: Pos,
}

/// `SET name = value`. Values are kept as written (unquoted).
#[derive(Debug, Clone, PartialEq)]
pub struct Setting {
    pub name: String,
    pub value: String,
    pub pos: Pos,
}

/// `SET csv_delimiter = ';'`, checked to be one byte when parsed: it decides how the source
/// is read, before any plan exists to report a bad value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CsvDelimiter {
    pub byte: u8,
    pub pos: Pos,
}

#[derive(Debug, Clone, PartialEq)]
pub struct HierarchyDecl {
    pub name: String,
    pub source: HierarchySource,
    pub pos: Pos,
}

/// Where a hierarchy's tree comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum HierarchySource {
    /// `AS VALUES ('Math','Science'), ...`: each row is leaf, parent, grandparent, ...;
    /// the root `*` is implied above the last column.
    Values(Vec<Vec<String>>),
    /// `FROM CSV 'path'`: ARX layout, `leaf;level1;...;*`, one line per leaf.
    /// The path is relative to the declarations file.
    Csv(String),
    /// `AS SELECT ...`: a query over the source warehouse whose rows are leaf, parent, ...
    Select(String),
    /// `AS BANDS (5, 10, 20) [BETWEEN lo AND hi]`: nested fixed-width numeric bands
    /// anchored at 0, each width dividing the next, then `*`.
    Bands {
        widths: Vec<f64>,
        range: Option<(f64, f64)>,
    },
    /// `AS DATE PARTS (month, year)`: the leaf is the date, then each part in order, then `*`.
    DateParts(Vec<DatePart>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatePart {
    Month,
    Quarter,
    Year,
    Decade,
}

/// `CREATE ENTITY name ON table [(key)]`.
#[derive(Debug, Clone, PartialEq)]
pub struct EntityDecl {
    pub name: String,
    pub table: String,
    /// Empty when no key list was written: the table's primary key if it has one, else each
    /// row is one individual (a single table such as UCI Adult, which has no key).
    pub key: Vec<String>,
    pub pos: Pos,
}

/// `ALTER TABLE t ADD PRIMARY KEY (c, ...)`: keys a Parquet / CSV warehouse cannot carry.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyDecl {
    pub table: String,
    pub columns: Vec<String>,
    pub pos: Pos,
}

/// `ALTER TABLE t ADD FOREIGN KEY (c) REFERENCES p (k)`.
/// A statement about a whole table (`LABEL TABLE t AS DIMENSION`).
#[derive(Debug, Clone, PartialEq)]
pub struct TableDecl {
    pub table: String,
    pub pos: Pos,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ForeignKeyDecl {
    pub table: String,
    pub columns: Vec<String>,
    pub ref_table: String,
    pub ref_columns: Vec<String>,
    pub pos: Pos,
}

/// What a column is for.
#[derive(Debug, Clone, PartialEq)]
pub enum Role {
    /// Dropped from the release.
    Identifier,
    /// Generalized through the named hierarchy.
    QuasiIdentifier { hierarchy: String },
    /// Published unchanged; counted for l-diversity. `buckets` discretizes a continuous SA.
    Sensitive { buckets: Option<Vec<f64>> },
    /// Published unchanged.
    Insensitive,
}

impl Role {
    pub fn name(&self) -> &'static str {
        match self {
            Role::Identifier => "IDENTIFIER",
            Role::QuasiIdentifier { .. } => "QUASI IDENTIFIER",
            Role::Sensitive { .. } => "SENSITIVE",
            Role::Insensitive => "INSENSITIVE",
        }
    }
}

/// `LABEL COLUMN t.c AS role` or `LABEL TABLE t DEFAULT INSENSITIVE` (column = None).
#[derive(Debug, Clone, PartialEq)]
pub struct LabelDecl {
    pub table: String,
    /// `None` for a table-wide default (`LABEL TABLE t DEFAULT INSENSITIVE`).
    pub column: Option<String>,
    pub role: Role,
    pub pos: Pos,
}

/// `ANONYMIZE entity WITH (name = value, ...)`.
#[derive(Debug, Clone, PartialEq)]
pub struct AnonymizeDecl {
    pub entity: String,
    pub options: BTreeMap<String, OptionValue>,
    pub pos: Pos,
}

#[derive(Debug, Clone, PartialEq)]
pub struct OptionValue {
    pub value: Value,
    pub pos: Pos,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Number(f64),
    Text(String),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Number(n) => write!(f, "{n}"),
            Value::Text(s) => write!(f, "'{s}'"),
        }
    }
}

/// `CREATE VIEW name AS SELECT ...`, written against the source schema.
#[derive(Debug, Clone, PartialEq)]
pub struct ViewDecl {
    pub name: String,
    /// The view's query as sqlparser parsed it.
    pub query: Box<sqlparser::ast::Query>,
    pub pos: Pos,
}

/// `CREATE RULE name ON t.c [= value | IS NULL] WITH (m = 2, p = '1/3')`: a discriminatory
/// rule of anatomy's (p,m)-privacy (000 Def. 18-19). An adversary may tie a person to `value`
/// (every value of the column when none is named) `m` times or more with confidence at most
/// `p`.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleDecl {
    pub name: String,
    pub table: String,
    pub column: String,
    pub value: RuleValue,
    /// As written, checked to be a whole number >= 1 by the planner.
    pub m: (f64, Pos),
    /// As written (`0.5`, `'1/3'`), read as an exact fraction by the planner.
    pub p: (String, Pos),
    pub pos: Pos,
}

/// Which values of the column a rule is about.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RuleValue {
    /// Each value of the column, one rule per value.
    Every,
    /// One value, as written (a number keeps its spelling).
    Value(String),
    /// `IS NULL`: a missing value, which is a value of its own.
    Null,
}
