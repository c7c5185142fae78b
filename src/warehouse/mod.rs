//! Warehouses: reading a source (SQLite file, or a directory of Parquet / CSV files) into
//! DataFusion, and writing a release atomically. Knows tables, columns and keys; knows
//! nothing of entities, hierarchies or clusters.
//!
//! No source table is held in memory: every query reads the source again, so a warehouse
//! larger than memory can be read. A Parquet file is a listing table (its footer checked at
//! `open`); a SQLite or CSV table is read by relanon's own reader ([`streamed`]), once at
//! `open` to type its columns and count its rows (a corrupt file fails there, not mid-run)
//! and again by each scan. A source whose files change during a run is refused
//! (`unchanged`). Identifiers are case-preserving (DataFusion's normalization is off) and
//! strings are `Utf8`; [`session`] makes every DataFusion session with those settings, the
//! utility's and the attack's scratch sessions included. Queries promise no row order;
//! `table_in_source_order` and `batches_in_source_order` give the rows in the source's own
//! (file order; SQLite's rowid order). `bound_queries` gives the session a memory pool whose
//! sorts spill ([`bounded`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::datatypes::{DataType, SchemaRef};
use arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::common::TableReference;
use datafusion::prelude::{SessionConfig, SessionContext};

mod bounded;
mod files;
mod functions;
mod parts;
mod paths;
mod render;
mod scratch;
mod sqlite;
pub mod staging;
mod streamed;
mod write;

pub use bounded::Spill;
pub use parts::{collect_stream, write_stream, Parts, Remap};
pub use render::{numeric_value, render_value};
pub use scratch::{Scratch, Temporary};
pub use write::{
    write_parquet_streamed, write_staged, ReleaseSet, ReleaseTable, Staged, StreamedTable,
    TargetKind,
};

/// What went wrong reading or writing a warehouse. Every message is one line and says what
/// to do.
#[derive(Debug, thiserror::Error)]
pub enum WarehouseError {
    #[error("{0}")]
    Message(String),
    #[error("'{path}' does not exist: check the source path")]
    NotFound { path: String },
    #[error("cannot {op} '{path}': {msg}; {hint}")]
    Io {
        op: &'static str,
        path: String,
        msg: String,
        hint: &'static str,
    },
    #[error("'{path}' is neither a SQLite file, a .csv / .parquet file nor a directory: point the source at a .sqlite file, one .csv / .parquet file, or a directory of .parquet / .csv files")]
    NotAWarehouse { path: String },
    #[error("cannot read SQLite file '{path}': {msg}; check that it is a complete, uncorrupted SQLite database")]
    Sqlite { path: String, msg: String },
    #[error("cannot read SQLite file '{path}' without writing to it, and relanon opens sources read-only: {journal}")]
    SqliteReadOnly { path: String, journal: String },
    #[error(
        "cannot read Parquet file '{path}': {msg}; check that the file is complete and not corrupt"
    )]
    Parquet { path: String, msg: String },
    #[error("cannot read CSV file '{path}': {msg}; a CSV table needs a header row and fields separated by ',' (or by the character SET csv_delimiter names)")]
    Csv { path: String, msg: String },
    #[error("directory '{path}' holds no .parquet or .csv files: point the source at a warehouse directory")]
    EmptyDirectory { path: String },
    #[error(
        "files '{first}' and '{second}' both define table '{table}': remove or rename one of them"
    )]
    DuplicateTable {
        table: String,
        first: String,
        second: String,
    },
    #[error("no table '{table}' in the warehouse (tables: {known}): check the name")]
    UnknownTable { table: String, known: String },
    #[error("table name '{table}' matches several tables that differ only in case ({matches}): write the exact name")]
    AmbiguousTable { table: String, matches: String },
    #[error("table '{table}' has no column '{column}' (columns: {known}): check the name")]
    UnknownColumn {
        table: String,
        column: String,
        known: String,
    },
    #[error("column name '{column}' matches several columns of table '{table}' that differ only in case ({matches}): write the exact name")]
    AmbiguousColumn {
        table: String,
        column: String,
        matches: String,
    },
    #[error("{0}")]
    KeyConflict(String),
    #[error("query failed: {msg} (query: {sql})")]
    Query { sql: String, msg: String },
    #[error("a query that reads the source needs more memory than the budget leaves it ({msg}): give a larger --memory-budget, or more --shards (query: {sql})")]
    QueryMemory { sql: String, msg: String },
    #[error("target '{path}' exists: pass --overwrite to replace it")]
    TargetExists { path: String },
    #[error("another relanon run is using '{path}' (it holds the lock beside it); wait for it to finish, or choose another target")]
    Busy { path: String },
    #[error("target '{path}' exists and {why}: refusing to replace it; remove it yourself or choose another target")]
    TargetNotReplaceable { path: String, why: String },
    #[error("cannot write release: {0}")]
    InvalidRelease(String),
    #[error("view '{name}' was rejected by SQLite: {msg}; fix the view's SQL")]
    View { name: String, msg: String },
    #[error("cannot write '{path}': {msg}; check that the target directory is writable and has free space")]
    Write { path: String, msg: String },
}

/// Messages from SQLite, Arrow and DataFusion sometimes span lines; ours must not.
pub(crate) fn one_line(msg: impl std::fmt::Display) -> String {
    let text = msg.to_string();
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

pub(crate) fn show(path: &Path) -> String {
    path.display().to_string()
}

/// How to read a source's files, from the declarations (`SET csv_delimiter = ';'`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceOptions {
    /// The byte between fields of every CSV file of the source (`,` unless declared).
    pub csv_delimiter: u8,
}

impl Default for SourceOptions {
    fn default() -> Self {
        SourceOptions {
            csv_delimiter: b',',
        }
    }
}

/// The kind of storage a warehouse lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum SourceKind {
    Sqlite,
    Parquet,
    Csv,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ColumnMeta {
    pub name: String,
    pub data_type: DataType,
}

impl ColumnMeta {
    /// The catalog view of an Arrow schema.
    pub fn of_schema(schema: &arrow::datatypes::Schema) -> Vec<ColumnMeta> {
        schema
            .fields()
            .iter()
            .map(|f| ColumnMeta {
                name: f.name().clone(),
                data_type: f.data_type().clone(),
            })
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ForeignKey {
    pub columns: Vec<String>,
    pub ref_table: String,
    pub ref_columns: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TableMeta {
    pub name: String,
    pub columns: Vec<ColumnMeta>,
    /// Empty when the table has none (declared or in the catalog).
    pub primary_key: Vec<String>,
    pub foreign_keys: Vec<ForeignKey>,
}

impl TableMeta {
    /// Exact name first, else the unique case-insensitive match (SQL users rarely remember
    /// the case a CSV header or a SQLite schema used).
    pub fn column(&self, name: &str) -> Option<&ColumnMeta> {
        self.resolve_column(name).ok().map(|i| &self.columns[i])
    }

    fn resolve_column(&self, name: &str) -> Result<usize, WarehouseError> {
        let names: Vec<&str> = self.columns.iter().map(|c| c.name.as_str()).collect();
        match resolve(&names, name) {
            Resolved::One(i) => Ok(i),
            Resolved::None => Err(WarehouseError::UnknownColumn {
                table: self.name.clone(),
                column: name.to_string(),
                known: names.join(", "),
            }),
            Resolved::Many(m) => Err(WarehouseError::AmbiguousColumn {
                table: self.name.clone(),
                column: name.to_string(),
                matches: m.join(", "),
            }),
        }
    }

    fn resolve_columns(&self, names: &[String]) -> Result<Vec<String>, WarehouseError> {
        names
            .iter()
            .map(|n| self.resolve_column(n).map(|i| self.columns[i].name.clone()))
            .collect()
    }
}

enum Resolved {
    One(usize),
    None,
    Many(Vec<String>),
}

fn resolve(names: &[&str], wanted: &str) -> Resolved {
    if let Some(i) = names.iter().position(|n| *n == wanted) {
        return Resolved::One(i);
    }
    let lower = wanted.to_lowercase();
    let hits: Vec<usize> = (0..names.len())
        .filter(|&i| names[i].to_lowercase() == lower)
        .collect();
    match hits.as_slice() {
        [] => Resolved::None,
        [i] => Resolved::One(*i),
        _ => Resolved::Many(hits.iter().map(|&i| names[i].to_string()).collect()),
    }
}

/// Double-quotes an identifier for DataFusion and SQLite alike.
pub fn quote_ident(id: &str) -> String {
    format!("\"{}\"", id.replace('"', "\"\""))
}

/// A table as a loader hands it over: catalog entry plus its rows.
pub(crate) struct LoadedTable {
    pub meta: TableMeta,
    pub schema: SchemaRef,
    pub rows: Rows,
    /// Whether `meta.primary_key` came from the source's own catalog (SQLite), which a
    /// declaration may repeat but not contradict.
    pub catalog_pk: bool,
}

/// A file's length and modification time, where the file system gives them.
pub(crate) type Stamp = Option<(u64, std::time::SystemTime)>;

/// Where a table's rows are. None is held: every query reads the source again, so a
/// warehouse larger than memory can be read.
#[derive(Clone)]
pub(crate) enum Rows {
    /// A Parquet file, its footer read at `open` (a truncated or foreign file fails there),
    /// read by DataFusion's own Parquet reader.
    Parquet {
        path: PathBuf,
        rows: usize,
        /// Length and modification time at open: a file replaced mid-run is noticed.
        stamp: Stamp,
    },
    /// A table relanon reads itself (SQLite, CSV), counted (and checked) at `open`.
    Read {
        reader: Arc<dyn streamed::Reader>,
        rows: usize,
        /// Each of the reader's files with its stamp at open.
        stamps: Vec<(PathBuf, Stamp)>,
    },
}

impl Rows {
    /// Rows read by `reader`, its files stamped now.
    pub(crate) fn read(reader: Arc<dyn streamed::Reader>, rows: usize) -> Rows {
        let stamps = reader
            .files()
            .into_iter()
            .map(|f| {
                let s = files::stamp(&f);
                (f, s)
            })
            .collect();
        Rows::Read {
            reader,
            rows,
            stamps,
        }
    }
}

/// An opened warehouse: its catalog and a DataFusion context with every table registered
/// under its exact (case-preserved) name.
pub struct Warehouse {
    pub path: PathBuf,
    pub kind: SourceKind,
    pub tables: Vec<TableMeta>,
    ctx: SessionContext,
    catalog_pk: Vec<bool>,
    /// Where each table's rows are, parallel to `tables`.
    loaded: Vec<(SchemaRef, Rows)>,
    warnings: Vec<String>,
}

/// A context where quoted and unquoted identifiers keep their case, and strings stay Utf8
/// whatever the source, so every module sees one string type. Its plans run on as many
/// partitions as relanon has threads (`RAYON_NUM_THREADS`).
fn new_context() -> SessionContext {
    session(rayon::current_num_threads())
}

/// A DataFusion session with relanon's settings (identifiers keep their case, strings stay
/// Utf8) whose plans run on `partitions` partitions. Every session is made here: the
/// warehouse's own, and the scratch sessions of the utility queries (one partition, so a SUM
/// adds in one order) and of the attack's fact evaluation.
pub fn session(partitions: usize) -> SessionContext {
    let mut config = SessionConfig::new().with_target_partitions(partitions.max(1));
    let options = config.options_mut();
    options.sql_parser.enable_ident_normalization = false;
    options.sql_parser.map_string_types_to_utf8view = false;
    options.execution.parquet.schema_force_view_types = false;
    let ctx = SessionContext::new_with_config(config);
    functions::register(&ctx);
    ctx
}

const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

fn has_sqlite_magic(path: &Path) -> Result<bool, WarehouseError> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).map_err(|e| WarehouseError::Io {
        op: "open",
        path: show(path),
        msg: one_line(e),
        hint: "check that the file exists and is readable",
    })?;
    let mut head = [0u8; 16];
    let mut filled = 0;
    while filled < head.len() {
        match file.read(&mut head[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(WarehouseError::Io {
                    op: "read",
                    path: show(path),
                    msg: one_line(e),
                    hint: "check that the file is readable",
                })
            }
        }
    }
    Ok(filled == head.len() && &head == SQLITE_MAGIC)
}

impl Warehouse {
    /// Opens a SQLite file (recognized by its magic header; keys from its catalog), a single
    /// .csv / .parquet file (one table named by its stem), or a directory whose *.parquet and
    /// *.csv files are tables named by file stem (no keys: they are declared later), with
    /// CSV files comma-separated. Every table is registered with DataFusion under its exact
    /// name; none is loaded into memory.
    pub async fn open(path: &Path) -> Result<Warehouse, WarehouseError> {
        Self::open_with(path, &SourceOptions::default()).await
    }

    /// [`Warehouse::open`] with the declared way of reading files (the CSV delimiter). A
    /// single data file is a source of its own because a published data set (UCI Adult as
    /// ARX ships it) often sits in a directory beside files that are not tables.
    pub async fn open_with(
        path: &Path,
        options: &SourceOptions,
    ) -> Result<Warehouse, WarehouseError> {
        let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => WarehouseError::NotFound { path: show(path) },
            _ => WarehouseError::Io {
                op: "open",
                path: show(path),
                msg: one_line(e),
                hint: "check the path and its permissions",
            },
        })?;
        // Loading is plain blocking I/O and CPU work; nothing else runs while a warehouse
        // opens, so it is done inline rather than on a blocking pool.
        let (kind, loaded, warnings) = if meta.is_dir() {
            files::load_dir(path, options)?
        } else if meta.is_file() && has_sqlite_magic(path)? {
            let (loaded, mut warnings) = sqlite::load(path)?;
            warnings.extend(files::unused_delimiter(path, options, 0));
            (SourceKind::Sqlite, loaded, warnings)
        } else if let Some(loaded) = files::load_file(path, options)? {
            loaded
        } else {
            return Err(WarehouseError::NotAWarehouse { path: show(path) });
        };
        Self::from_loaded(path, kind, loaded, warnings)
    }

    fn from_loaded(
        path: &Path,
        kind: SourceKind,
        loaded: Vec<LoadedTable>,
        warnings: Vec<String>,
    ) -> Result<Warehouse, WarehouseError> {
        let ctx = new_context();
        let mut tables = Vec::with_capacity(loaded.len());
        let mut catalog_pk = Vec::with_capacity(loaded.len());
        let mut rows = Vec::with_capacity(loaded.len());
        for t in loaded {
            rows.push((Arc::clone(&t.schema), t.rows.clone()));
            let provider = provider(&ctx, &t.schema, &t.rows).map_err(|e| {
                WarehouseError::Message(format!(
                    "cannot load table '{}' from '{}': {}",
                    t.meta.name,
                    show(path),
                    one_line(e)
                ))
            })?;
            ctx.register_table(TableReference::bare(t.meta.name.as_str()), provider)
                .map_err(|e| {
                    WarehouseError::Message(format!(
                        "cannot register table '{}' from '{}': {}",
                        t.meta.name,
                        show(path),
                        one_line(e)
                    ))
                })?;
            tables.push(t.meta);
            catalog_pk.push(t.catalog_pk);
        }
        Ok(Warehouse {
            path: path.to_path_buf(),
            kind,
            tables,
            ctx,
            catalog_pk,
            loaded: rows,
            warnings,
        })
    }

    /// Catalog entries that could not be used (a SQLite foreign key to a missing table, ...),
    /// one line each, for the caller to show.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Exact name first, else the unique case-insensitive match.
    pub fn table(&self, name: &str) -> Option<&TableMeta> {
        self.resolve_table(name).ok().map(|i| &self.tables[i])
    }

    fn resolve_table(&self, name: &str) -> Result<usize, WarehouseError> {
        let names: Vec<&str> = self.tables.iter().map(|t| t.name.as_str()).collect();
        match resolve(&names, name) {
            Resolved::One(i) => Ok(i),
            Resolved::None => Err(WarehouseError::UnknownTable {
                table: name.to_string(),
                known: names.join(", "),
            }),
            Resolved::Many(m) => Err(WarehouseError::AmbiguousTable {
                table: name.to_string(),
                matches: m.join(", "),
            }),
        }
    }

    /// Sets aside the foreign key of `table` on exactly `columns` (in any order), from the
    /// catalog or an earlier declaration; its columns become plain columns.
    pub fn drop_foreign_key(
        &mut self,
        table: &str,
        columns: &[String],
    ) -> Result<ForeignKey, WarehouseError> {
        let ti = self.resolve_table(table)?;
        let t = &self.tables[ti];
        let mut wanted = t.resolve_columns(columns)?;
        wanted.sort();
        let hit = t.foreign_keys.iter().position(|fk| {
            let mut have = fk.columns.clone();
            have.sort();
            have == wanted
        });
        let Some(i) = hit else {
            let known: Vec<String> = t
                .foreign_keys
                .iter()
                .map(|fk| format!("({}) -> {}", fk.columns.join(", "), fk.ref_table))
                .collect();
            return Err(WarehouseError::KeyConflict(format!(
                "table '{}' has no foreign key on ({}); its foreign keys are: {}",
                t.name,
                columns.join(", "),
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            )));
        };
        Ok(self.tables[ti].foreign_keys.remove(i))
    }

    /// Declares a table's primary key. Repeating the key already known (in any column
    /// order) is fine; a different key is refused, since SQLite's catalog or an earlier
    /// declaration already says otherwise.
    pub fn declare_primary_key(
        &mut self,
        table: &str,
        columns: &[String],
    ) -> Result<(), WarehouseError> {
        let ti = self.resolve_table(table)?;
        let t = &self.tables[ti];
        if columns.is_empty() {
            return Err(WarehouseError::KeyConflict(format!(
                "primary key for table '{}' lists no columns: name at least one column",
                t.name
            )));
        }
        let cols = t.resolve_columns(columns)?;
        if let Some(dup) = cols
            .iter()
            .enumerate()
            .find(|(i, c)| cols[..*i].contains(c))
        {
            return Err(WarehouseError::KeyConflict(format!(
                "primary key for table '{}' lists column '{}' twice: list each column once",
                t.name, dup.1
            )));
        }
        if t.primary_key.is_empty() {
            self.tables[ti].primary_key = cols;
            return Ok(());
        }
        let mut have = t.primary_key.clone();
        let mut want = cols.clone();
        have.sort();
        want.sort();
        if have == want {
            return Ok(());
        }
        let origin = if self.catalog_pk[ti] {
            "the SQLite catalog declares"
        } else {
            "it was already declared with"
        };
        Err(WarehouseError::KeyConflict(format!(
            "primary key ({}) for table '{}' conflicts: {} PRIMARY KEY ({}); declare that key or drop the declaration",
            cols.join(", "),
            t.name,
            origin,
            t.primary_key.join(", ")
        )))
    }

    /// Declares a foreign key. Names are resolved to the catalog's exact case; empty
    /// `ref_columns` means the parent's primary key; a key already known is ignored.
    pub fn declare_foreign_key(
        &mut self,
        table: &str,
        fk: ForeignKey,
    ) -> Result<(), WarehouseError> {
        let ti = self.resolve_table(table)?;
        let pi = self.resolve_table(&fk.ref_table)?;
        let child = &self.tables[ti];
        let parent = &self.tables[pi];
        if fk.columns.is_empty() {
            return Err(WarehouseError::KeyConflict(format!(
                "foreign key on table '{}' lists no columns: name at least one column",
                child.name
            )));
        }
        let columns = child.resolve_columns(&fk.columns)?;
        let ref_columns = if fk.ref_columns.is_empty() {
            if parent.primary_key.is_empty() {
                return Err(WarehouseError::KeyConflict(format!(
                    "foreign key ({}) on table '{}' references '{}' without naming columns, but '{}' has no primary key: name the referenced columns or declare its primary key first",
                    columns.join(", "),
                    child.name,
                    parent.name,
                    parent.name
                )));
            }
            parent.primary_key.clone()
        } else {
            parent.resolve_columns(&fk.ref_columns)?
        };
        if columns.len() != ref_columns.len() {
            return Err(WarehouseError::KeyConflict(format!(
                "foreign key on table '{}' has {} column(s) ({}) but references {} ({}): list as many referenced columns as key columns",
                child.name,
                columns.len(),
                columns.join(", "),
                ref_columns.len(),
                ref_columns.join(", ")
            )));
        }
        let resolved = ForeignKey {
            columns,
            ref_table: parent.name.clone(),
            ref_columns,
        };
        if !self.tables[ti].foreign_keys.contains(&resolved) {
            self.tables[ti].foreign_keys.push(resolved);
        }
        Ok(())
    }

    pub fn context(&self) -> &SessionContext {
        &self.ctx
    }

    /// Runs one DataFusion SQL statement and collects its result.
    pub async fn sql(&self, query: &str) -> Result<Vec<RecordBatch>, WarehouseError> {
        let err = |e| query_error(query, e);
        let df = self.ctx.sql(query).await.map_err(err)?;
        df.collect().await.map_err(err)
    }

    /// Runs one DataFusion SQL statement here and streams its result.
    pub async fn stream(
        &self,
        query: &str,
    ) -> Result<datafusion::physical_plan::SendableRecordBatchStream, WarehouseError> {
        let err = |e| query_error(query, e);
        let df = self.ctx.sql(query).await.map_err(err)?;
        df.execute_stream().await.map_err(err)
    }

    /// Runs one DataFusion SQL statement and hands each result batch to `each` as it comes,
    /// so a scan of a table larger than memory holds one batch at a time.
    pub async fn for_each_batch(
        &self,
        query: &str,
        mut each: impl FnMut(&RecordBatch),
    ) -> Result<(), WarehouseError> {
        use futures::StreamExt;
        let mut stream = self.stream(query).await?;
        while let Some(batch) = stream.next().await {
            each(&batch.map_err(|e| query_error(query, e))?);
        }
        Ok(())
    }

    /// The whole table in the order the source holds its rows (file order; SQLite's scan
    /// order). A query promises no order: DataFusion splits an in-memory table into
    /// partitions and collects them as they finish. A table without a key has no other
    /// order to be visited in reproducibly.
    pub fn table_in_source_order(&self, table: &str) -> Result<RecordBatch, WarehouseError> {
        let (schema, rows) = &self.loaded[self.resolve_table(table)?];
        let batches = match rows {
            Rows::Parquet { path, .. } => files::read_parquet(path)?.1,
            Rows::Read { reader, .. } => {
                let all = (0..schema.fields().len()).collect();
                streamed::in_order(Arc::clone(reader), all).collect::<Result<Vec<_>, _>>()?
            }
        };
        arrow::compute::concat_batches(schema, &batches).map_err(|e| {
            WarehouseError::Message(format!(
                "cannot read table '{table}' in source order: {}",
                one_line(e)
            ))
        })
    }

    /// The columns `columns` of the whole table, in table order, a batch at a time in the
    /// order the source holds its rows (file order; SQLite's scan order), never the whole
    /// table at once: a scan that numbers rows numbers them alike every time, which a query
    /// does not promise ([`Warehouse::table_in_source_order`]).
    pub fn batches_in_source_order(
        &self,
        table: &str,
        columns: &[String],
    ) -> Result<Box<dyn Iterator<Item = Result<RecordBatch, WarehouseError>> + '_>, WarehouseError>
    {
        let ti = self.resolve_table(table)?;
        let t = &self.tables[ti];
        let mut at: Vec<usize> = columns
            .iter()
            .map(|c| t.resolve_column(c))
            .collect::<Result<_, _>>()?;
        at.sort_unstable();
        at.dedup();
        let (_, rows) = &self.loaded[ti];
        match rows {
            Rows::Parquet { path, .. } => Ok(Box::new(files::scan_parquet(path, at)?)),
            Rows::Read { reader, .. } => Ok(Box::new(streamed::in_order(Arc::clone(reader), at))),
        }
    }

    /// Refuses a source whose files changed since `open`: the queries read them again, so a
    /// run that saw two versions of one table must not be committed.
    pub fn unchanged(&self) -> Result<(), WarehouseError> {
        for (t, (_, rows)) in self.tables.iter().zip(&self.loaded) {
            let changed = match rows {
                Rows::Parquet { path, stamp, .. } => (files::stamp(path) != *stamp).then_some(path),
                Rows::Read { stamps, .. } => stamps
                    .iter()
                    .find(|(f, stamp)| files::stamp(f) != *stamp)
                    .map(|(f, _)| f),
            };
            if let Some(path) = changed {
                return Err(WarehouseError::Message(format!(
                    "source file '{}' (table '{}') changed while the run read it: run again once nothing writes to the source",
                    show(path),
                    t.name
                )));
            }
        }
        Ok(())
    }

    /// The table's rows, counted without reading them.
    pub fn row_count(&self, table: &str) -> Result<usize, WarehouseError> {
        Ok(match &self.loaded[self.resolve_table(table)?].1 {
            Rows::Parquet { rows, .. } | Rows::Read { rows, .. } => *rows,
        })
    }

    /// The table's columns and no rows, as [`Warehouse::read_table`] would give them,
    /// planned without reading a row (a shard whose trees have none of a table's rows must
    /// not read the whole table to learn its shape).
    pub async fn empty_table(&self, table: &str) -> Result<RecordBatch, WarehouseError> {
        let t = &self.tables[self.resolve_table(table)?];
        let cols: Vec<String> = t.columns.iter().map(|c| c.name.clone()).collect();
        let (_, df) = self.planned_select(t, &cols, &[]).await?;
        Ok(RecordBatch::new_empty(Arc::clone(df.schema().inner())))
    }

    /// One concatenated batch of the table (all columns, or the listed ones), ordered by
    /// `order_by` ascending with NULLs last. An empty table still yields its schema.
    pub async fn read_table(
        &self,
        table: &str,
        columns: Option<&[String]>,
        order_by: &[String],
    ) -> Result<RecordBatch, WarehouseError> {
        let t = &self.tables[self.resolve_table(table)?];
        let cols = match columns {
            Some(c) => t.resolve_columns(c)?,
            None => t.columns.iter().map(|c| c.name.clone()).collect(),
        };
        let order = t.resolve_columns(order_by)?;
        if cols.is_empty() {
            // SELECT with no columns is not SQL; the row count is all there is to return.
            let from = quote_ident(&t.name);
            let batches = self.sql(&format!("SELECT COUNT(*) FROM {from}")).await?;
            let rows = batches
                .first()
                .and_then(|b| numeric_value(b.column(0).as_ref(), 0))
                .map_or(0, |n| n as usize);
            let schema = Arc::new(arrow::datatypes::Schema::empty());
            let options = RecordBatchOptions::new().with_row_count(Some(rows));
            return RecordBatch::try_new_with_options(schema, vec![], &options).map_err(|e| {
                WarehouseError::Message(format!("cannot build an empty batch: {}", one_line(e)))
            });
        }
        let (query, df) = self.planned_select(t, &cols, &order).await?;
        let planned: SchemaRef = Arc::clone(df.schema().inner());
        let batches = df.collect().await.map_err(|e| query_error(&query, e))?;
        let schema = batches.first().map_or(planned, |b| b.schema());
        concat_owned(&schema, batches).map_err(|e| WarehouseError::Query {
            sql: query.clone(),
            msg: one_line(e),
        })
    }

    /// `SELECT cols FROM t ORDER BY order` (ascending, NULLs last), planned and not run,
    /// with its text for the error that running it may give.
    async fn planned_select(
        &self,
        t: &TableMeta,
        cols: &[String],
        order: &[String],
    ) -> Result<(String, datafusion::dataframe::DataFrame), WarehouseError> {
        let list = cols
            .iter()
            .map(|c| quote_ident(c))
            .collect::<Vec<_>>()
            .join(", ");
        let mut query = format!("SELECT {list} FROM {}", quote_ident(&t.name));
        if !order.is_empty() {
            let keys = order
                .iter()
                .map(|c| format!("{} ASC NULLS LAST", quote_ident(c)))
                .collect::<Vec<_>>();
            query.push_str(" ORDER BY ");
            query.push_str(&keys.join(", "));
        }
        match self.ctx.sql(&query).await {
            Ok(df) => Ok((query, df)),
            Err(e) => Err(query_error(&query, e)),
        }
    }
}

/// A query's result on its way, from an [`Engine`].
pub type Streamed<'a> = futures::future::BoxFuture<
    'a,
    Result<datafusion::physical_plan::SendableRecordBatchStream, WarehouseError>,
>;

/// Where a query over the warehouse's tables runs: here (a [`Warehouse`]), or wherever an
/// implementation sends the plan it makes here, so long as that place reads the same files.
/// The queries that describe a whole family (`forest::outline`) go through one, so that a
/// run on a cluster does not hold or scan the family on its client.
pub trait Engine: Sync {
    /// `query`'s result, a batch at a time.
    fn stream<'a>(&'a self, query: &'a str) -> Streamed<'a>;
}

impl Engine for Warehouse {
    fn stream<'a>(&'a self, query: &'a str) -> Streamed<'a> {
        Box::pin(Warehouse::stream(self, query))
    }
}

/// `query`'s whole result, run by `engine`.
pub async fn collect_on(
    engine: &dyn Engine,
    query: &str,
) -> Result<Vec<RecordBatch>, WarehouseError> {
    use futures::TryStreamExt;
    let stream = engine.stream(query).await?;
    stream
        .try_collect()
        .await
        .map_err(|e| query_error(query, e))
}

/// What running `sql` failed with; a pool exhausted (the budget's share for the queries,
/// [`Warehouse::bound_queries`]) says what to give.
pub fn query_error(sql: &str, e: datafusion::error::DataFusionError) -> WarehouseError {
    let (sql, msg) = (one_line(sql), one_line(&e));
    match e.find_root() {
        datafusion::error::DataFusionError::ResourcesExhausted(_) => {
            WarehouseError::QueryMemory { sql, msg }
        }
        _ => WarehouseError::Query { sql, msg },
    }
}

/// `batches` as one batch of `schema`, concatenated a column at a time, each column's pieces
/// let go once copied: the peak is the batches and one column, not the batches twice (at
/// TPC-H SF 1 a whole line-item table).
pub fn concat_owned(
    schema: &SchemaRef,
    mut batches: Vec<RecordBatch>,
) -> Result<RecordBatch, arrow::error::ArrowError> {
    if batches.len() == 1 {
        return Ok(batches.swap_remove(0));
    }
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    let mut per_column: Vec<Vec<arrow::array::ArrayRef>> =
        vec![Vec::with_capacity(batches.len()); schema.fields().len()];
    for batch in batches {
        for (i, column) in batch.columns().iter().enumerate() {
            per_column[i].push(Arc::clone(column));
        }
    }
    let mut columns = Vec::with_capacity(per_column.len());
    for (pieces, field) in per_column.into_iter().zip(schema.fields()) {
        let column = if pieces.is_empty() {
            arrow::array::new_empty_array(field.data_type())
        } else {
            let refs: Vec<&dyn arrow::array::Array> = pieces.iter().map(|a| a.as_ref()).collect();
            arrow::compute::concat(&refs)?
        };
        columns.push(column);
    }
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    RecordBatch::try_new_with_options(Arc::clone(schema), columns, &options)
}

/// The DataFusion table over a loaded table's rows: a memory table, or a listing table of
/// its one Parquet file read with the table's (plain) types, cast from the file's where they
/// differ.
fn provider(
    ctx: &SessionContext,
    schema: &SchemaRef,
    rows: &Rows,
) -> datafusion::error::Result<Arc<dyn datafusion::catalog::TableProvider>> {
    match rows {
        Rows::Read { reader, rows, .. } => Ok(Arc::new(streamed::SourceTable::new(
            Arc::clone(schema),
            *rows,
            Arc::clone(reader),
        ))),
        Rows::Parquet { path, .. } => {
            // A file URL, not a path string: a path string with `*`, `?` or `[` in it
            // would be taken for a glob.
            let url = std::path::absolute(path)
                .ok()
                .and_then(|p| url::Url::from_file_path(p).ok())
                .ok_or_else(|| unnamable(path))?;
            // No extension filter: the file was chosen by name already, in any case.
            listing(ctx, schema, url, "")
        }
    }
}

fn unnamable(path: &Path) -> datafusion::error::DataFusionError {
    datafusion::error::DataFusionError::Plan(format!(
        "'{}' cannot be named as a file URL",
        show(path)
    ))
}

/// The DataFusion table over the Parquet file or directory at `url` (only the files ending
/// in `extension`), read with `schema`'s types, cast from the files' where they differ.
fn listing(
    ctx: &SessionContext,
    schema: &SchemaRef,
    url: url::Url,
    extension: &str,
) -> datafusion::error::Result<Arc<dyn datafusion::catalog::TableProvider>> {
    use datafusion::datasource::file_format::parquet::ParquetFormat;
    use datafusion::datasource::listing::{
        ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
    };
    let format = ParquetFormat::default().with_options(ctx.state().default_table_options().parquet);
    let options = ListingOptions::new(Arc::new(format)).with_file_extension(extension);
    let config = ListingTableConfig::new(ListingTableUrl::try_new(url, None)?)
        .with_listing_options(options)
        .with_schema(Arc::clone(schema));
    Ok(Arc::new(ListingTable::try_new(config)?))
}

/// The table over the `.parquet` files of directory `dir`, read with `schema`; without the
/// directory, the table with no rows.
fn directory_table(
    ctx: &SessionContext,
    schema: &SchemaRef,
    dir: &Path,
) -> datafusion::error::Result<Arc<dyn datafusion::catalog::TableProvider>> {
    if !dir.is_dir() {
        return Ok(Arc::new(datafusion::datasource::MemTable::try_new(
            Arc::clone(schema),
            vec![vec![]],
        )?));
    }
    let url = std::path::absolute(dir)
        .ok()
        .and_then(|p| url::Url::from_directory_path(p).ok())
        .ok_or_else(|| unnamable(dir))?;
    listing(ctx, schema, url, ".parquet")
}

#[cfg(test)]
mod tests;
