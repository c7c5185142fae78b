//! The schema plan: a [`Policy`](crate::policy::Policy) checked against a warehouse's
//! catalog (after `ALTER TABLE ... ADD` / `DROP FOREIGN KEY`). Everything after the plan may
//! assume it is a snowflake: one parent per family table, no cycles, no QI or SA on a join key.
//!
//! It discovers the entity family: tables with an FK chain to the entity, placed in rounds
//! under the deepest family table they reference (entity first, parents before children). A
//! second FK to a proper ancestor becomes a [`RedundantFk`]; any other second path, or a cycle,
//! is refused; a self-reference is data. A table with a second path and no children gets a
//! second plan entry of the same name, appended to the plan, for its rows whose FK to the
//! parent is NULL, hanging at the ancestor: a [`Part`], which every reader of a table's rows
//! applies on both sides and which `release` merges back into one table. It decides each
//! table's [`ReleasedKey`] (`Own` one-column key, `Parent` for a shared primary key,
//! `Surrogate` where the key holds data columns, which then take roles) and the released FK
//! columns; [`FamilyTable::released_columns`] is the released shape `release` and `verify`
//! both read. It also resolves the declared dimensions with their roles and the FKs into them
//! that survive, the tables left out, column roles, hierarchy definitions and the parameters,
//! and keeps the declarations' labels as written ([`Plan::labels`]) for `verify`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::policy::{DatePart, Pos, ViewDecl};

mod anatomy;
mod build;
mod dimensions;
mod error;
mod family;
mod hierarchies;
mod keys;
mod names;
mod params;
mod reads;
mod roles;
mod views;
pub use anatomy::{GROUP_ID, SLOT};
pub use build::build;
pub use error::PlanError;
pub use family::{family, family_members};
pub use params::SHARED_OPTIONS;

/// A validated, ready-to-run description of one anonymization.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The entity's declared name (`CREATE ENTITY student ...`).
    pub entity: String,
    /// Family tables; index 0 is the entity table; parents come before children.
    pub tables: Vec<FamilyTable>,
    /// Tables outside the family that the declarations release (`LABEL TABLE t AS
    /// DIMENSION`), each column with its role.
    pub dimensions: Vec<DimensionTable>,
    /// Tables of the source that are neither family nor declared dimensions: not released.
    pub left_out: Vec<String>,
    /// The declarations' labels as written, for `verify`'s own reading of which released
    /// column has a declared fate (it shares no code with the planner's role logic).
    pub labels: Vec<crate::policy::LabelDecl>,
    /// What the data owner should know that does not stop the run (`anonymize` prints them).
    pub warnings: Vec<String>,
    /// Every hierarchy a QI uses, resolved to its definition.
    pub hierarchies: BTreeMap<String, HierarchyDef>,
    pub params: Params,
    pub views: Vec<ViewDecl>,
    pub source: PathBuf,
    /// Hierarchy files the declarations read (`FROM CSV`), resolved: never written over.
    pub hierarchy_files: Vec<PathBuf>,
    pub target: Option<PathBuf>,
}

/// One table of the entity family.
#[derive(Debug, Clone)]
pub struct FamilyTable {
    pub name: String,
    /// Primary key columns (may be empty for a leaf table without one).
    pub primary_key: Vec<String>,
    /// Index of the parent family table (None for the entity table).
    pub parent: Option<usize>,
    /// Columns of this table referencing the parent's key (empty for the entity table).
    pub parent_fk: Vec<String>,
    /// The parent's columns those FK columns reference.
    pub parent_key: Vec<String>,
    /// Indices of child family tables, in plan order.
    pub children: Vec<usize>,
    /// Every column of the table, in source order, with its role.
    pub columns: Vec<PlannedColumn>,
    /// How the table's rows are keyed in the release.
    pub key: ReleasedKey,
    /// Released columns that hold the parent's released key: `parent_fk` in place, or the
    /// one column named after the parent's surrogate key (empty for the entity table).
    pub released_fk: Vec<String>,
    /// The parent's released columns that `released_fk` references.
    pub released_parent_key: Vec<String>,
    /// Second FK paths to the entity: FKs to a proper ancestor of the parent.
    pub redundant: Vec<RedundantFk>,
    /// Foreign keys into released dimension tables whose columns are published unchanged on
    /// both sides: declared in a SQLite target's schema.
    pub links: Vec<crate::warehouse::ForeignKey>,
    /// Set when the table's rows are split over two plan entries (see [`Part`]).
    pub part: Option<Part>,
}

/// A table that reaches the entity by a second path (see [`RedundantFk`]) and whose FK to its
/// parent may be NULL has two plan entries of one name: the main one holds the rows whose FK
/// is set (under the parent), the second one, appended to the plan, the rows whose FK is
/// NULL, hanging at the second path's ancestor. Both are released into one table, whose
/// keys are drawn for both at once; in the second entry's rows the main entry's FK is NULL.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    /// The main entry's FK to its parent, as the source holds it.
    pub split_source: Vec<String>,
    /// The same FK as released (NULL in the second entry's rows).
    pub split_released: Vec<String>,
    /// Whether this entry is the second one (rows whose FK is NULL).
    pub null_side: bool,
    /// The other entry's plan index.
    pub other: usize,
}

impl Part {
    /// Whether a row belongs to this entry, from whether each split column is NULL in it.
    fn keeps(&self, any_null: bool) -> bool {
        any_null == self.null_side
    }

    /// The rows of `batch` (the source's, or with `released` the release's) this entry holds.
    pub fn mask(
        &self,
        batch: &arrow::record_batch::RecordBatch,
        released: bool,
    ) -> Result<arrow::array::BooleanArray, String> {
        let names = if released {
            &self.split_released
        } else {
            &self.split_source
        };
        let mut columns = Vec::with_capacity(names.len());
        for n in names {
            let c = batch
                .schema()
                .fields()
                .iter()
                .position(|f| f.name() == n)
                .or_else(|| {
                    let schema = batch.schema();
                    schema
                        .fields()
                        .iter()
                        .position(|f| f.name().eq_ignore_ascii_case(n))
                })
                .ok_or_else(|| format!("no column {n} to split the rows by"))?;
            columns.push(batch.column(c).clone());
        }
        Ok((0..batch.num_rows())
            .map(|r| {
                let any_null = columns
                    .iter()
                    .any(|c| arrow::array::Array::is_null(c.as_ref(), r));
                Some(self.keeps(any_null))
            })
            .collect())
    }

    /// The source rows this entry holds, as a SQL condition on the table aliased `alias`.
    pub fn sql_filter(&self, alias: &str) -> String {
        let any_null = self
            .split_source
            .iter()
            .map(|c| format!("{alias}.{} IS NULL", crate::warehouse::quote_ident(c)))
            .collect::<Vec<_>>()
            .join(" OR ");
        if self.null_side {
            format!("({any_null})")
        } else {
            format!("NOT ({any_null})")
        }
    }
}

/// A second FK path to the entity: an FK of a family table to a proper ancestor of its parent
/// (payment -> customer beside payment -> rental -> customer). It says nothing the tree does
/// not, so it is released as the ancestor's released key; the forest refuses a source in
/// which the two paths disagree, and verify checks that the released ones agree.
#[derive(Debug, Clone, PartialEq)]
pub struct RedundantFk {
    /// The FK's columns in the table.
    pub columns: Vec<String>,
    /// Plan index of the ancestor it references.
    pub ancestor: usize,
    /// The ancestor's primary-key columns it references.
    pub ancestor_key: Vec<String>,
    /// Its released columns: `columns` in place, or one column named after the ancestor's
    /// surrogate key.
    pub released_columns: Vec<String>,
    /// The ancestor's released columns those reference.
    pub released_ancestor_key: Vec<String>,
}

impl RedundantFk {
    /// Whether it is released as one new column rather than in place.
    pub fn replaced(&self) -> bool {
        self.released_columns != self.columns
    }
}

/// How a family table's key is published. Join keys stay atomic (DESIGN.md, release
/// contract); a primary-key column that is not the reference to the parent is data and
/// takes a role like any other column, so such a table gets a surrogate key instead.
#[derive(Debug, Clone, PartialEq)]
pub enum ReleasedKey {
    /// No primary key: rows are released without one.
    None,
    /// A one-column primary key that is not the FK to the parent: released in place,
    /// pseudonymized unless keys are preserved.
    Own(String),
    /// The primary key is the FK to the parent (a shared-primary-key 1:1 child): released as
    /// the parent's released key.
    Parent,
    /// The primary key holds data columns: a new column of this name, a random permutation
    /// of 1..=n whatever the key policy (the data columns are generalized, so the source key
    /// cannot be kept).
    Surrogate(String),
}

impl FamilyTable {
    /// Whether `column` is a join key (the FK to the parent, a second path's FK, a
    /// one-column primary key): pseudonymized, and needing no label.
    pub fn is_join_key(&self, column: &str) -> bool {
        keys::is_join_key(self, column)
    }

    /// The released primary-key columns.
    pub fn released_pk(&self) -> Vec<String> {
        match &self.key {
            ReleasedKey::None => Vec::new(),
            ReleasedKey::Own(c) | ReleasedKey::Surrogate(c) => vec![c.clone()],
            ReleasedKey::Parent => self.released_fk.clone(),
        }
    }

    /// Whether the FK to the parent is released as one new column rather than in place.
    pub fn fk_replaced(&self) -> bool {
        self.released_fk != self.parent_fk
    }

    /// The released table's columns for an entry of `plan`: the second entry of a split table
    /// (see [`Part`]) releases into its main entry's table.
    /// Under anatomy the QI side loses the SENSITIVE columns (they are on the SA side) and
    /// gains `group_id` (the entity table) and `slot`, last.
    pub fn released_columns_in(&self, plan: &Plan) -> Vec<String> {
        let main = match &self.part {
            Some(p) if p.null_side => &plan.tables[p.other],
            _ => self,
        };
        let mut columns = main.released_columns();
        if plan.params.model.anatomy().is_some() {
            columns.retain(|name| {
                !main
                    .columns
                    .iter()
                    .any(|c| &c.name == name && matches!(c.role, ColumnRole::Sensitive { .. }))
            });
            if plan.tables.first().is_some_and(|t| t.name == main.name) {
                columns.push(GROUP_ID.to_string());
            }
            columns.push(SLOT.to_string());
        }
        columns
    }

    /// The released table's columns, in order: a surrogate key first, then the source
    /// columns without identifiers, the FK to the parent in place or as one column where
    /// its first column was.
    pub fn released_columns(&self) -> Vec<String> {
        let mut out = Vec::with_capacity(self.columns.len() + 1);
        if let ReleasedKey::Surrogate(name) = &self.key {
            out.push(name.clone());
        }
        let mut fk_done = false;
        let mut redundant_done: Vec<usize> = Vec::new();
        for c in &self.columns {
            if c.role == ColumnRole::Identifier {
                continue;
            }
            // A column may be in a second path's FK and in the FK to the parent (notes.pid
            // in notes -> persons and notes (pid, vno) -> visits): the second path takes it,
            // as `release` does, and the parent's FK its other columns.
            if let Some((i, r)) = self
                .redundant
                .iter()
                .enumerate()
                .find(|(_, r)| r.columns.contains(&c.name))
            {
                if !r.replaced() {
                    out.push(c.name.clone());
                } else if !redundant_done.contains(&i) {
                    out.extend(r.released_columns.iter().cloned());
                    redundant_done.push(i);
                }
                continue;
            }
            if self.fk_replaced() && self.parent_fk.contains(&c.name) {
                if !fk_done {
                    out.extend(self.released_fk.iter().cloned());
                    fk_done = true;
                }
                continue;
            }
            out.push(c.name.clone());
        }
        out
    }

    /// Columns that are quasi-identifiers, in source order, with their hierarchy names.
    pub fn qi_columns(&self) -> impl Iterator<Item = (&str, &str)> {
        self.columns.iter().filter_map(|c| match &c.role {
            ColumnRole::QuasiIdentifier { hierarchy } => {
                Some((c.name.as_str(), hierarchy.as_str()))
            }
            _ => None,
        })
    }
}

/// A table released beside the family (`LABEL TABLE t AS DIMENSION`): not about one
/// individual, published as the source holds it minus its IDENTIFIER columns.
#[derive(Debug, Clone, PartialEq)]
pub struct DimensionTable {
    pub name: String,
    pub primary_key: Vec<String>,
    /// Every column in source order: `Key` (primary key), `Identifier` or `Insensitive`.
    pub columns: Vec<PlannedColumn>,
    /// Foreign keys into released dimension tables, both sides published unchanged.
    pub links: Vec<crate::warehouse::ForeignKey>,
}

impl DimensionTable {
    /// Released columns, in source order.
    pub fn released_columns(&self) -> Vec<String> {
        self.columns
            .iter()
            .filter(|c| c.role != ColumnRole::Identifier)
            .map(|c| c.name.clone())
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct PlannedColumn {
    pub name: String,
    pub role: ColumnRole,
}

/// A column's role after planning. Join keys (a one-column PK and the FK to the parent; a
/// dimension's PK) are `Key`; they need no label and are never QIs.
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnRole {
    Key,
    Identifier,
    QuasiIdentifier { hierarchy: String },
    Sensitive { buckets: Option<Vec<f64>> },
    Insensitive,
}

/// A hierarchy definition resolved to data: what [`crate::hierarchy`] builds its tree from and
/// what [`crate::verify`] checks truthfulness against (each on its own code).
#[derive(Debug, Clone, PartialEq)]
pub enum HierarchyDef {
    /// Rows of `leaf, parent, grandparent, ...`; the root `*` is above the last column
    /// (a trailing `*` column is accepted and ignored). Consecutive equal labels in a row
    /// are one node.
    Rows { rows: Vec<Vec<String>>, pos: Pos },
    /// Nested numeric bands anchored at 0; each width divides the next; then `*`.
    Bands {
        widths: Vec<f64>,
        range: Option<(f64, f64)>,
        pos: Pos,
    },
    /// Leaf = the date (`YYYY-MM-DD`), then each part in order, then `*`.
    DateParts { parts: Vec<DatePart>, pos: Pos },
}

#[cfg(test)]
impl HierarchyDef {
    /// Rows of `leaf, parent, ...` labels, placed at line 1, column 1 (unit tests).
    pub(crate) fn from_rows(rows: &[&[&str]]) -> HierarchyDef {
        HierarchyDef::Rows {
            rows: rows
                .iter()
                .map(|r| r.iter().map(|s| s.to_string()).collect())
                .collect(),
            pos: crate::policy::Pos { line: 1, column: 1 },
        }
    }
}

/// The privacy model, the algorithm asked for and the options every algorithm shares
/// (`ANONYMIZE ... WITH (...)` and `SET`). The algorithm's own options are checked by the
/// algorithm ([`crate::algo::configure`]), which owns them.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    pub model: Model,
    /// The algorithm named and the options the plan does not know, as written.
    pub algorithm: AlgorithmRequest,
    /// Seeds the random count queries of the utility report. Not secret: the queries are
    /// printed nowhere and only their accuracy is reported.
    pub query_seed: u64,
    /// How many random count queries the utility report runs (0 turns them off).
    pub queries: usize,
    /// Seeds the key surrogates. `None` (the default) draws them from the OS: a public or
    /// default seed would let anyone replay the permutation and map released keys back to the
    /// source's key order. Never written to the report (nor read back).
    pub seed: Option<u64>,
    pub keys: KeyPolicy,
    pub orphans: OrphanPolicy,
    /// `KEEP n PERCENT OF t`: the least share of each named family table's rows a release
    /// must keep, in the order written.
    pub keep: Vec<KeepRows>,
}

/// `KEEP n PERCENT OF t`, resolved to a family table.
#[derive(Debug, Clone, PartialEq)]
pub struct KeepRows {
    /// Family table index.
    pub table: usize,
    /// The table's name in the source.
    pub name: String,
    /// In (0, 100].
    pub percent: f64,
    pub pos: Pos,
}

impl Params {
    /// Every option at its documented default, under `model`, the algorithm left to the
    /// model's default.
    pub fn defaults(model: Model) -> Params {
        Params {
            model,
            algorithm: AlgorithmRequest::default(),
            query_seed: 1,
            queries: 200,
            seed: None,
            keys: KeyPolicy::Pseudonymize,
            orphans: OrphanPolicy::Refuse,
            keep: Vec::new(),
        }
    }
}

/// The algorithm as the declarations ask for it, before the algorithm checks its options.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AlgorithmRequest {
    /// `algorithm = '...'`, lower-cased, with where it was written; `None`: the model's
    /// default.
    pub name: Option<(String, Pos)>,
    /// Where `ANONYMIZE` is, for messages about an algorithm not named.
    pub pos: Pos,
    /// Every option the plan does not know, in the order written (`SET` first).
    pub options: Vec<RawOption>,
}

impl AlgorithmRequest {
    /// The value option `name` (lower-case) was given, the last setting winning.
    pub fn written(&self, name: &str) -> Option<&crate::policy::Value> {
        self.options
            .iter()
            .rev()
            .find(|o| o.name == name)
            .map(|o| &o.value)
    }

    /// Where a message about the algorithm points: its option, or `ANONYMIZE`.
    pub fn at(&self) -> Pos {
        self.name.as_ref().map_or(self.pos, |(_, p)| *p)
    }
}

/// One option as written: a lower-case name, the value, where it is.
#[derive(Debug, Clone, PartialEq)]
pub struct RawOption {
    pub name: String,
    pub value: crate::policy::Value,
    pub pos: Pos,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "name", rename_all = "kebab-case")]
pub enum Model {
    KAnonymity {
        k: usize,
    },
    /// 000 Def. 16: every EC is l-diverse on every sensitive column of every matched vertex.
    LDiversity {
        l: usize,
        diversity: Diversity,
    },
    /// 000 Ch. 3: QI values published exactly, groups of l entities aligned slot by slot,
    /// each slot's sensitive values l-diverse, and the (p,m)-privacy rules met per group.
    Anatomy {
        l: usize,
        variant: Variant,
        rules: Vec<AnatomyRule>,
    },
}

/// Which link an anatomy breaks (000 Sec. 3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Variant {
    /// t-t: a person's QI-tree from their SA-tree (Def. 20-21); the SA-tree is published whole.
    #[serde(rename = "t-t")]
    TreeTree,
    /// v-v: each vertex's QIs from its sensitive values, and those from each other (Def. 22-23).
    #[serde(rename = "v-v")]
    VertexVertex,
}

impl Variant {
    pub fn name(&self) -> &'static str {
        match self {
            Variant::TreeTree => "t-t",
            Variant::VertexVertex => "v-v",
        }
    }
}

/// One (p,m)-privacy rule (000 Def. 18) on a SENSITIVE column of a family table, as declared:
/// an adversary may tie a person to `value` `m` times or more with confidence at most `p`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AnatomyRule {
    pub name: String,
    /// The family table's name and the column's, as the source spells them.
    pub table: String,
    pub column: String,
    pub value: crate::policy::RuleValue,
    pub m: u32,
    pub p: crate::fraction::Fraction,
}

impl Plan {
    /// The family tables below the entity table as released, in plan order: a table split
    /// over two entries (see [`Part`]) is one released table, named once.
    pub fn child_tables(&self) -> Vec<&str> {
        self.tables[1..]
            .iter()
            .filter(|t| t.part.as_ref().is_none_or(|p| !p.null_side))
            .map(|t| t.name.as_str())
            .collect()
    }

    /// `table.column` of every SENSITIVE column below the entity table.
    pub fn sensitive_below_entity(&self) -> Vec<String> {
        self.tables[1..]
            .iter()
            .flat_map(|t| {
                t.columns
                    .iter()
                    .filter(|c| matches!(c.role, ColumnRole::Sensitive { .. }))
                    .map(move |c| format!("{}.{}", t.name, c.name))
            })
            .collect()
    }
}

impl Model {
    /// The smallest number of entities an EC may hold.
    pub fn min_group(&self) -> usize {
        match self {
            Model::KAnonymity { k } => *k,
            Model::LDiversity { l, .. } | Model::Anatomy { l, .. } => *l,
        }
    }

    /// Anatomy's l and variant, when the model is anatomy.
    pub fn anatomy(&self) -> Option<(usize, Variant)> {
        match self {
            Model::Anatomy { l, variant, .. } => Some((*l, *variant)),
            _ => None,
        }
    }

    /// The diversity rule matched vertices must meet, if any.
    pub fn diversity(&self) -> Option<(usize, Diversity)> {
        match self {
            Model::KAnonymity { .. } | Model::Anatomy { .. } => None,
            Model::LDiversity { l, diversity } => Some((*l, *diversity)),
        }
    }
}

/// Which l-diversity a group of sensitive values must meet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Diversity {
    /// 000 Def. 6: every value's frequency is at most 1/l (the default).
    Probabilistic,
    /// At least l distinct values (weaker for groups larger than l).
    Distinct,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeyPolicy {
    /// A consistent random surrogate per key (the default).
    Pseudonymize,
    /// Keep source keys (warned about: they link back to other systems).
    Preserve,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OrphanPolicy {
    /// Child rows whose FK points at a missing parent stop the run (the default).
    Refuse,
    /// Such rows (and their descendants) are left out and counted.
    Drop,
}

#[cfg(test)]
mod tests;
