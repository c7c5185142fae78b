//! Writing a release (or a generated source warehouse) atomically: everything goes to a
//! hidden temporary sibling of the target, which is renamed onto the target only once it
//! is complete, so a crash or an error never leaves a half-written release behind.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{
    DataType, Float16Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
    UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow::record_batch::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use rusqlite::types::{ToSqlOutput, Value, ValueRef};
use rusqlite::Connection;

use super::paths::{parent_dir, remove_path, temp_sibling, write_err};
use super::{one_line, quote_ident, render_value, show, ForeignKey, WarehouseError, SQLITE_MAGIC};

/// Where a release goes, decided by the target's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum TargetKind {
    Sqlite,
    Parquet,
}

impl TargetKind {
    /// `.sqlite`, `.sqlite3` or `.db` (any case) is a SQLite file; anything else a
    /// directory of Parquet files.
    pub fn of(path: &Path) -> TargetKind {
        match path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("sqlite" | "sqlite3" | "db") => TargetKind::Sqlite,
            _ => TargetKind::Parquet,
        }
    }
}

#[derive(Debug, Clone)]
pub struct ReleaseTable {
    pub name: String,
    pub batch: RecordBatch,
    pub primary_key: Vec<String>,
    /// Empty `ref_columns` means the referenced table's primary key.
    pub foreign_keys: Vec<ForeignKey>,
}

#[derive(Debug, Clone, Default)]
pub struct ReleaseSet {
    pub tables: Vec<ReleaseTable>,
    /// (view name, SELECT sql text)
    pub views: Vec<(String, String)>,
}

/// A release written in full under a temporary name, waiting for [`Staged::commit`].
/// Dropping it uncommitted removes the temporary file or directory.
#[derive(Debug)]
pub struct Staged {
    temp: PathBuf,
    target: PathBuf,
    kind: TargetKind,
    overwrite: bool,
    committed: bool,
}

impl Staged {
    /// The temporary file or directory holding the release (for verifying before commit).
    pub fn path(&self) -> &Path {
        &self.temp
    }

    pub fn kind(&self) -> TargetKind {
        self.kind
    }

    /// Where the release goes once committed.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Renames the staged release onto the target, alone (a run's several outputs go
    /// through [`super::staging::commit_all`] together, which this is a set of one of). An
    /// existing target is refused unless overwrite was given, and even then unless it looks
    /// like a warehouse; a directory is moved aside first and put back if the rename fails.
    pub fn commit(self) -> Result<PathBuf, WarehouseError> {
        if self.overwrite {
            if let Ok(meta) = fs::symlink_metadata(&self.target) {
                check_replaceable(&self.target, &meta)?;
            }
        }
        let (target, overwrite) = (self.target.clone(), self.overwrite);
        super::staging::commit_all(vec![self.into_pending()], &target, overwrite)?;
        Ok(target)
    }
}

impl Staged {
    /// The staged release as one output of a set committed by
    /// [`super::staging::commit_all`].
    pub fn into_pending(mut self) -> super::staging::Pending {
        self.committed = true;
        super::staging::Pending::new(self.temp.clone(), self.target.clone())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.committed {
            let _ = remove_path(&self.temp);
            super::staging::untrack(&self.temp);
        }
    }
}

/// Writes the whole release to a temporary sibling of `target` and returns the handle that
/// commits it. An existing target is refused unless `overwrite`, and even then only when it
/// looks like a warehouse (a SQLite or Parquet file, or a directory of Parquet / CSV files),
/// so a mistyped target cannot wipe an unrelated directory.
pub fn write_staged(
    target: &Path,
    release: &ReleaseSet,
    overwrite: bool,
) -> Result<Staged, WarehouseError> {
    let kind = TargetKind::of(target);
    validate(release, kind)?;
    let staged = stage_target(target, kind, overwrite)?;
    match kind {
        TargetKind::Sqlite => write_sqlite(staged.path(), release)?,
        TargetKind::Parquet => write_parquet(staged.path(), release)?,
    }
    Ok(staged)
}

/// A table whose rows arrive batch by batch (a generator's), never held whole.
pub struct StreamedTable {
    pub name: String,
    pub schema: arrow::datatypes::SchemaRef,
    pub batches: Box<dyn Iterator<Item = Result<RecordBatch, arrow::error::ArrowError>>>,
}

/// Writes tables that arrive as batch streams into a staged Parquet directory, one batch in
/// memory at a time (and the row group the writer is filling), for a warehouse larger than
/// memory. Parquet only: a directory of Parquet files carries no keys to write.
pub fn write_parquet_streamed(
    target: &Path,
    tables: Vec<StreamedTable>,
    overwrite: bool,
) -> Result<Staged, WarehouseError> {
    if TargetKind::of(target) != TargetKind::Parquet {
        return Err(WarehouseError::Message(format!(
            "'{}' is a SQLite target, and only a Parquet directory is written batch by batch: give a directory (no .sqlite / .db ending)",
            show(target)
        )));
    }
    let staged = stage_target(target, TargetKind::Parquet, overwrite)?;
    for t in tables {
        let path = staged.path().join(format!("{}.parquet", t.name));
        let err = |e: &dyn std::fmt::Display| write_err(&path, e);
        let mut writer = parquet_writer(&path, t.schema)?;
        for batch in t.batches {
            let batch = batch.map_err(|e| {
                WarehouseError::Message(format!(
                    "cannot produce the rows of table '{}': {}",
                    t.name,
                    one_line(e)
                ))
            })?;
            writer.write(&batch).map_err(|e| err(&e))?;
        }
        let file = writer.into_inner().map_err(|e| err(&e))?;
        file.sync_all().map_err(|e| err(&e))?;
    }
    Ok(staged)
}

/// Checks that `target` may be written (absent, or replaceable under `overwrite`) and
/// reserves its staged temporary, empty, beside it.
fn stage_target(
    target: &Path,
    kind: TargetKind,
    overwrite: bool,
) -> Result<Staged, WarehouseError> {
    match fs::symlink_metadata(target) {
        Ok(_) if !overwrite => return Err(WarehouseError::TargetExists { path: show(target) }),
        Ok(meta) => check_replaceable(target, &meta)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(WarehouseError::Io {
                op: "inspect",
                path: show(target),
                msg: one_line(e),
                hint: "check the target path and its permissions",
            })
        }
    }
    let parent = parent_dir(target);
    fs::create_dir_all(&parent).map_err(|e| write_err(&parent, e))?;
    let temp = temp_sibling(target, "tmp")?;
    // Creating the temporary name exclusively reserves it before anything is written.
    super::staging::create_tracked(&temp, |t| match kind {
        TargetKind::Sqlite => File::create_new(t).map(drop),
        TargetKind::Parquet => fs::create_dir(t),
    })
    .map_err(|e| write_err(&temp, e))?;
    Ok(Staged {
        temp,
        target: target.to_path_buf(),
        kind,
        overwrite,
        committed: false,
    })
}

/// Guards --overwrite: only something that looks like a warehouse may be replaced.
fn check_replaceable(target: &Path, meta: &fs::Metadata) -> Result<(), WarehouseError> {
    let refuse = |why: String| WarehouseError::TargetNotReplaceable {
        path: show(target),
        why,
    };
    if meta.file_type().is_symlink() {
        // Only the link itself is replaced, never what it points to.
        return Ok(());
    }
    if meta.is_file() {
        return if meta.len() == 0
            || file_starts_with(target, SQLITE_MAGIC)
            || file_starts_with(target, b"PAR1")
        {
            Ok(())
        } else {
            Err(refuse("is neither a SQLite nor a Parquet file".into()))
        };
    }
    if meta.is_dir() {
        let entries = fs::read_dir(target)
            .map_err(|e| refuse(format!("cannot be listed ({})", one_line(e))))?;
        for entry in entries {
            let entry = entry.map_err(|e| refuse(format!("cannot be listed ({})", one_line(e))))?;
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().to_string();
            let ext = path
                .extension()
                .and_then(|e| e.to_str())
                .map(str::to_ascii_lowercase);
            let is_file = entry.file_type().map(|t| t.is_file()).unwrap_or(false);
            let known = name == "views.sql"
                || name == "report.json"
                || matches!(ext.as_deref(), Some("parquet" | "csv"));
            if !(is_file && known) {
                return Err(refuse(format!(
                    "holds '{name}', which is not part of a Parquet warehouse"
                )));
            }
        }
        return Ok(());
    }
    Err(refuse("is neither a file nor a directory".into()))
}

fn file_starts_with(path: &Path, magic: &[u8]) -> bool {
    use std::io::Read;
    let mut head = vec![0u8; magic.len()];
    File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
        && head == magic
}

/// Catches what would otherwise surface as a confusing SQLite or file-system error, or
/// worse, as a release whose keys do not join.
fn validate(release: &ReleaseSet, kind: TargetKind) -> Result<(), WarehouseError> {
    let bad = |msg: String| Err(WarehouseError::InvalidRelease(msg));
    let mut names: Vec<String> = Vec::new();
    for t in &release.tables {
        if t.name.is_empty() {
            return bad("a release table has an empty name".into());
        }
        // SQLite names and many file systems ignore case.
        if names.iter().any(|n| n.eq_ignore_ascii_case(&t.name)) {
            return bad(format!(
                "table '{}' appears twice (names are compared ignoring case)",
                t.name
            ));
        }
        names.push(t.name.clone());
        if kind == TargetKind::Parquet
            && (t.name.starts_with('.')
                || t.name.contains(['/', '\\', '\0'])
                || t.name.chars().any(char::is_control))
        {
            return bad(format!(
                "table '{}' cannot be a Parquet file name (it starts with '.' or holds a path separator): rename the table",
                t.name
            ));
        }
        let schema = t.batch.schema();
        if schema.fields().is_empty() {
            return bad(format!("table '{}' has no columns", t.name));
        }
        let fields = schema.fields();
        for (i, f) in fields.iter().enumerate() {
            if fields[..i]
                .iter()
                .any(|g| g.name().eq_ignore_ascii_case(f.name()))
            {
                return bad(format!(
                    "table '{}' has column '{}' twice (names are compared ignoring case)",
                    t.name,
                    f.name()
                ));
            }
        }
        for c in &t.primary_key {
            let Ok(i) = schema.index_of(c) else {
                return bad(format!(
                    "primary key column '{c}' is not a column of table '{}'",
                    t.name
                ));
            };
            if t.batch.column(i).null_count() > 0 {
                return bad(format!(
                    "primary key column '{c}' of table '{}' holds NULL",
                    t.name
                ));
            }
        }
        for fk in &t.foreign_keys {
            for c in &fk.columns {
                if schema.index_of(c).is_err() {
                    return bad(format!(
                        "foreign key column '{c}' is not a column of table '{}'",
                        t.name
                    ));
                }
            }
            let Some(parent) = release.tables.iter().find(|p| p.name == fk.ref_table) else {
                return bad(format!(
                    "table '{}' has a foreign key to '{}', which is not in the release: drop the key or release the table",
                    t.name, fk.ref_table
                ));
            };
            let refs = if fk.ref_columns.is_empty() {
                &parent.primary_key
            } else {
                &fk.ref_columns
            };
            if refs.len() != fk.columns.len() {
                return bad(format!(
                    "foreign key ({}) of table '{}' does not match the {} referenced column(s) of '{}'",
                    fk.columns.join(", "),
                    t.name,
                    refs.len(),
                    parent.name
                ));
            }
            for c in refs {
                if parent.batch.schema().index_of(c).is_err() {
                    return bad(format!(
                        "foreign key of table '{}' references '{}.{c}', which does not exist",
                        t.name, parent.name
                    ));
                }
            }
        }
    }
    let mut view_names: Vec<&str> = Vec::new();
    for (name, _) in &release.views {
        if name.is_empty() {
            return bad("a view has an empty name".into());
        }
        if names.iter().any(|n| n.eq_ignore_ascii_case(name))
            || view_names.iter().any(|n| n.eq_ignore_ascii_case(name))
        {
            return bad(format!(
                "view '{name}' has the name of another table or view"
            ));
        }
        view_names.push(name);
    }
    Ok(())
}

/// The view's SQL without trailing semicolons, so it can be embedded in a statement.
fn view_body(sql: &str) -> &str {
    sql.trim()
        .trim_end_matches(|c: char| c == ';' || c.is_whitespace())
}

fn create_view_sql(name: &str, sql: &str) -> String {
    let body = view_body(sql);
    // A trailing line comment would swallow the terminating semicolon.
    let last_line = body.rsplit('\n').next().unwrap_or(body);
    let end = if last_line.contains("--") { "\n;" } else { ";" };
    format!("CREATE VIEW {} AS {body}{end}", quote_ident(name))
}

fn sqlite_type(data_type: &DataType) -> &'static str {
    match data_type {
        DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::UInt64
        | DataType::Boolean => "INTEGER",
        DataType::Float16 | DataType::Float32 | DataType::Float64 => "REAL",
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => "BLOB",
        DataType::Dictionary(_, values) => sqlite_type(values),
        // Decimals, dates and the rest are stored as their rendered text, which is exactly
        // what render_value gives back after a round trip.
        _ => "TEXT",
    }
}

fn create_table_sql(t: &ReleaseTable, release: &ReleaseSet) -> String {
    let mut parts: Vec<String> = t
        .batch
        .schema()
        .fields()
        .iter()
        .map(|f| format!("{} {}", quote_ident(f.name()), sqlite_type(f.data_type())))
        .collect();
    let list = |cols: &[String]| {
        cols.iter()
            .map(|c| quote_ident(c))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !t.primary_key.is_empty() {
        parts.push(format!("PRIMARY KEY ({})", list(&t.primary_key)));
    }
    for fk in &t.foreign_keys {
        let refs = if fk.ref_columns.is_empty() {
            // validate() checked the parent exists.
            release
                .tables
                .iter()
                .find(|p| p.name == fk.ref_table)
                .map(|p| p.primary_key.clone())
                .unwrap_or_default()
        } else {
            fk.ref_columns.clone()
        };
        parts.push(format!(
            "FOREIGN KEY ({}) REFERENCES {} ({})",
            list(&fk.columns),
            quote_ident(&fk.ref_table),
            list(&refs)
        ));
    }
    format!(
        "CREATE TABLE {} ({})",
        quote_ident(&t.name),
        parts.join(", ")
    )
}

fn write_sqlite(path: &Path, release: &ReleaseSet) -> Result<(), WarehouseError> {
    let err = |e: rusqlite::Error| write_err(path, e);
    let mut conn = Connection::open(path).map_err(err)?;
    // No journal and no syncing while loading: a failed write is discarded whole, and the
    // finished file is synced once before it is renamed into place. Foreign keys are not
    // enforced (the bundled SQLite enforces them by default): tables arrive in any order,
    // and generated sources may hold orphans on purpose; the verifier checks releases.
    conn.execute_batch(
        "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA foreign_keys = OFF;",
    )
    .map_err(err)?;
    let tx = conn.transaction().map_err(err)?;
    for t in &release.tables {
        tx.execute(&create_table_sql(t, release), []).map_err(|e| {
            write_err(
                path,
                format!("creating table '{}': {}", t.name, one_line(e)),
            )
        })?;
    }
    for t in &release.tables {
        insert_rows(&tx, t)
            .map_err(|e| write_err(path, format!("writing table '{}': {}", t.name, one_line(e))))?;
    }
    for (name, sql) in &release.views {
        let view_err = |e: rusqlite::Error| WarehouseError::View {
            name: name.clone(),
            msg: one_line(e),
        };
        tx.execute(
            &format!("CREATE VIEW {} AS {}", quote_ident(name), view_body(sql)),
            [],
        )
        .map_err(view_err)?;
        // SQLite accepts a view over missing tables or columns at CREATE time; preparing a
        // read of it checks them.
        tx.prepare(&format!("SELECT * FROM {} LIMIT 0", quote_ident(name)))
            .map_err(view_err)?;
    }
    tx.commit().map_err(err)?;
    conn.close().map_err(|(_, e)| err(e))?;
    File::open(path)
        .and_then(|f| f.sync_all())
        .map_err(|e| write_err(path, e))
}

fn insert_rows(tx: &rusqlite::Transaction<'_>, t: &ReleaseTable) -> Result<(), String> {
    let n = t.batch.num_columns();
    let marks = (1..=n)
        .map(|i| format!("?{i}"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut stmt = tx
        .prepare(&format!(
            "INSERT INTO {} VALUES ({marks})",
            quote_ident(&t.name)
        ))
        .map_err(one_line)?;
    // Dictionary columns are expanded once rather than looked up per cell.
    let columns: Vec<ArrayRef> = t
        .batch
        .columns()
        .iter()
        .map(|c| match c.data_type() {
            DataType::Dictionary(_, values) => arrow::compute::cast(c, values).map_err(one_line),
            _ => Ok(c.clone()),
        })
        .collect::<Result<_, _>>()?;
    for row in 0..t.batch.num_rows() {
        for (i, col) in columns.iter().enumerate() {
            stmt.raw_bind_parameter(i + 1, sql_value(col.as_ref(), row))
                .map_err(one_line)?;
        }
        stmt.raw_execute().map_err(one_line)?;
    }
    Ok(())
}

/// One cell as SQLite stores it, consistent with [`sqlite_type`].
fn sql_value(array: &dyn Array, row: usize) -> ToSqlOutput<'_> {
    use ToSqlOutput::{Borrowed, Owned};
    if array.is_null(row) {
        return Borrowed(ValueRef::Null);
    }
    let int = |v: i64| Owned(Value::Integer(v));
    // Through the shortest text so 3.72f32 is stored as 3.72, matching its label.
    let short = |v: f32| {
        Owned(
            v.to_string()
                .parse()
                .map_or(Value::Real(f64::from(v)), Value::Real),
        )
    };
    match array.data_type() {
        DataType::Int8 => int(i64::from(array.as_primitive::<Int8Type>().value(row))),
        DataType::Int16 => int(i64::from(array.as_primitive::<Int16Type>().value(row))),
        DataType::Int32 => int(i64::from(array.as_primitive::<Int32Type>().value(row))),
        DataType::Int64 => int(array.as_primitive::<Int64Type>().value(row)),
        DataType::UInt8 => int(i64::from(array.as_primitive::<UInt8Type>().value(row))),
        DataType::UInt16 => int(i64::from(array.as_primitive::<UInt16Type>().value(row))),
        DataType::UInt32 => int(i64::from(array.as_primitive::<UInt32Type>().value(row))),
        DataType::UInt64 => {
            let v = array.as_primitive::<UInt64Type>().value(row);
            // Beyond i64 SQLite has no exact integer; text keeps the value.
            i64::try_from(v).map_or_else(|_| Owned(Value::Text(v.to_string())), int)
        }
        DataType::Boolean => int(i64::from(array.as_boolean().value(row))),
        DataType::Float16 => short(array.as_primitive::<Float16Type>().value(row).to_f32()),
        DataType::Float32 => short(array.as_primitive::<Float32Type>().value(row)),
        DataType::Float64 => Owned(Value::Real(array.as_primitive::<Float64Type>().value(row))),
        DataType::Utf8 => Borrowed(ValueRef::Text(
            array.as_string::<i32>().value(row).as_bytes(),
        )),
        DataType::LargeUtf8 => Borrowed(ValueRef::Text(
            array.as_string::<i64>().value(row).as_bytes(),
        )),
        DataType::Utf8View => {
            Borrowed(ValueRef::Text(array.as_string_view().value(row).as_bytes()))
        }
        DataType::Binary => Borrowed(ValueRef::Blob(array.as_binary::<i32>().value(row))),
        DataType::LargeBinary => Borrowed(ValueRef::Blob(array.as_binary::<i64>().value(row))),
        DataType::BinaryView => Borrowed(ValueRef::Blob(array.as_binary_view().value(row))),
        DataType::FixedSizeBinary(_) => {
            Borrowed(ValueRef::Blob(array.as_fixed_size_binary().value(row)))
        }
        _ => Owned(render_value(array, row).map_or(Value::Null, Value::Text)),
    }
}

/// A Parquet writer (Snappy) into the new file `path`: every Parquet file relanon writes.
pub(super) fn parquet_writer(
    path: &Path,
    schema: arrow::datatypes::SchemaRef,
) -> Result<ArrowWriter<File>, WarehouseError> {
    let file = File::create_new(path).map_err(|e| write_err(path, e))?;
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    ArrowWriter::try_new(file, schema, Some(props)).map_err(|e| write_err(path, e))
}

fn write_parquet(dir: &Path, release: &ReleaseSet) -> Result<(), WarehouseError> {
    for t in &release.tables {
        let path = dir.join(format!("{}.parquet", t.name));
        let err = |e: &dyn std::fmt::Display| write_err(&path, e);
        let mut writer = parquet_writer(&path, t.batch.schema())?;
        writer.write(&t.batch).map_err(|e| err(&e))?;
        let file = writer.into_inner().map_err(|e| err(&e))?;
        file.sync_all().map_err(|e| err(&e))?;
    }
    if !release.views.is_empty() {
        let path = dir.join("views.sql");
        let mut text = String::new();
        for (name, sql) in &release.views {
            text.push_str(&create_view_sql(name, sql));
            text.push('\n');
        }
        let mut file = File::create_new(&path).map_err(|e| write_err(&path, e))?;
        file.write_all(text.as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(|e| write_err(&path, e))?;
    }
    Ok(())
}
