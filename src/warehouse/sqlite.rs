//! Reading a SQLite file: catalog (columns, primary and foreign keys) and rows as Arrow.
//!
//! SQLite is dynamically typed, so each column's Arrow type comes from the values it
//! actually stores; the declared type only decides for columns that hold nothing but NULL.
//! Opening reads every row once, for those types and the row counts, and keeps none: each
//! scan reads the table again ([`SqliteReader`]), by rowid pieces on read-only connections.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{
    ArrayBuilder, ArrayRef, BinaryBuilder, Float64Builder, Int64Builder, StringBuilder,
};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use rayon::prelude::*;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};

use super::{
    one_line, quote_ident, show, streamed, ColumnMeta, ForeignKey, LoadedTable, Rows, TableMeta,
    WarehouseError,
};

/// Rows per RecordBatch, DataFusion's own default batch size.
const BATCH_ROWS: usize = 8192;

const SEEN_INTEGER: u8 = 1;
const SEEN_REAL: u8 = 2;
const SEEN_TEXT: u8 = 4;
const SEEN_BLOB: u8 = 8;

/// Rowids per piece: a larger table is read in pieces of this many rowids, on every thread.
/// The pieces do not depend on the thread count, so neither do the batches.
const PIECE_ROWIDS: i64 = 1 << 16;

/// At most this many pieces per table (sparse rowids widen the pieces instead).
pub(super) const MAX_PIECES: i64 = 256;

/// Opens every table (not views, not sqlite_* internals): its catalog entry, its columns'
/// types and its row count. Returns the tables and warnings about catalog entries that could
/// not be used.
///
/// Tables, and pieces of large tables by rowid range, are scanned on every thread, each on
/// its own connection. They all read one snapshot: the first read on the main connection
/// takes a shared lock that it holds until its COMMIT, and while any reader holds one, no
/// writer of a rollback-journal database can commit. A WAL database lets writers commit
/// beside readers, so it is scanned on the main connection alone. The later scans read
/// snapshots of their own; a database that changed since is refused before a release is
/// committed (`Warehouse::unchanged`: the file's and its log's stamps).
pub(super) fn load(path: &Path) -> Result<(Vec<LoadedTable>, Vec<String>), WarehouseError> {
    let err = |e: rusqlite::Error| {
        let msg = one_line(&e);
        if msg.contains("readonly database") {
            return WarehouseError::SqliteReadOnly {
                path: show(path),
                journal: hot_journal(path),
            };
        }
        WarehouseError::Sqlite {
            path: show(path),
            msg,
        }
    };
    let read_err = |e: ReadError| match e {
        ReadError::Sqlite(e) => err(e),
        ReadError::Other(msg) => WarehouseError::Sqlite {
            path: show(path),
            msg,
        },
    };
    let conn = open_reader(path).map_err(err)?;
    let names = table_names(&conn).map_err(err)?;
    let scans = names
        .iter()
        .map(|name| TableScan::new(&conn, name))
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(err)?;
    let wal = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get::<_, String>(0))
        .map_err(err)?
        .eq_ignore_ascii_case("wal");
    let parallel = !wal && rayon::current_num_threads() > 1;
    let jobs: Vec<(usize, Option<(i64, i64)>)> = scans
        .iter()
        .enumerate()
        .flat_map(|(t, scan)| scan.pieces.iter().map(move |&piece| (t, piece)))
        .collect();
    let seen = on_readers(path, &conn, parallel, &jobs, |c, &(t, piece)| {
        scans[t].storage_classes(c, piece)
    })
    .map_err(read_err)?;
    let mut classes: Vec<Vec<u8>> = scans.iter().map(|s| vec![0u8; s.columns.len()]).collect();
    let mut rows = vec![0usize; scans.len()];
    for (&(t, _), (piece, count)) in jobs.iter().zip(&seen) {
        for (c, s) in classes[t].iter_mut().zip(piece) {
            *c |= s;
        }
        rows[t] += count;
    }
    let mut warnings = Vec::new();
    for (scan, classes) in scans.iter().zip(&classes) {
        warnings.extend(scan.blobs_among_text(&conn, classes).map_err(read_err)?);
    }
    conn.execute_batch("COMMIT").map_err(err)?;
    let mut tables = Vec::with_capacity(scans.len());
    let mut raw_fks = Vec::with_capacity(scans.len());
    for ((scan, classes), rows) in scans.into_iter().zip(&classes).zip(rows) {
        let schema = scan.schema(classes);
        let mut pk: Vec<(i64, String)> = scan
            .columns
            .iter()
            .filter(|c| c.pk > 0)
            .map(|c| (c.pk, c.name.clone()))
            .collect();
        pk.sort();
        let meta = TableMeta {
            name: scan.name.clone(),
            columns: ColumnMeta::of_schema(&schema),
            primary_key: pk.into_iter().map(|(_, c)| c).collect(),
            foreign_keys: Vec::new(),
        };
        let catalog_pk = !meta.primary_key.is_empty();
        let reader = SqliteReader {
            path: path.to_path_buf(),
            columns: scan.columns.iter().map(|c| c.name.clone()).collect(),
            name: scan.name,
            rowid: scan.rowid,
            pieces: scan.pieces,
            schema: Arc::clone(&schema),
        };
        raw_fks.push(scan.foreign_keys);
        tables.push(LoadedTable {
            meta,
            schema,
            rows: Rows::read(Arc::new(reader), rows),
            catalog_pk,
        });
    }
    warnings.extend(resolve_foreign_keys(&mut tables, raw_fks));
    Ok((tables, warnings))
}

/// A read-only connection inside a read transaction (which takes its snapshot at its first
/// read). Read-only: the source is never modified, not even by a journal.
/// What a read-only reader cannot get past: a journal a writer left (SQLite must roll its
/// transaction back before anyone reads), said in words.
fn hot_journal(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    for suffix in ["-journal", "-wal"] {
        let j = path.with_file_name(format!("{name}{suffix}"));
        if j.exists() {
            return format!(
                "a program writing it stopped mid-transaction and left '{}'; SQLite must roll that back before the file can be read, which a read-only reader cannot do: open the database once with sqlite3 where it is writable (or copy it with its journal to a writable place), then run again",
                show(&j)
            );
        }
    }
    "SQLite needs to write beside it to read it (a WAL database in a read-only directory); copy it to a writable place, then run again".to_string()
}

fn open_reader(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.execute_batch("BEGIN")?;
    Ok(conn)
}

/// `f` on every job, in job order: on `main` alone, or on every thread with a connection of
/// its own (see [`load`]). The first error in job order wins.
fn on_readers<J: Sync, T: Send>(
    path: &Path,
    main: &Connection,
    parallel: bool,
    jobs: &[J],
    f: impl Fn(&Connection, &J) -> Result<T, ReadError> + Sync,
) -> Result<Vec<T>, ReadError> {
    if !parallel || jobs.len() < 2 {
        return jobs.iter().map(|j| f(main, j)).collect();
    }
    jobs.par_iter()
        .map_init(
            || open_reader(path).map_err(one_line),
            |conn, j| match conn {
                Ok(conn) => f(conn, j),
                Err(msg) => Err(ReadError::Other(msg.clone())),
            },
        )
        .collect()
}

/// What reading one table needs from the catalog.
struct TableScan {
    name: String,
    columns: Vec<SqliteColumn>,
    foreign_keys: Vec<RawForeignKey>,
    /// A name of the rowid that no column shadows, for a table with rowids.
    rowid: Option<&'static str>,
    /// Inclusive rowid ranges in rowid order (`None`: the whole table in one read).
    pieces: Vec<Option<(i64, i64)>>,
}

impl TableScan {
    fn new(conn: &Connection, name: &str) -> rusqlite::Result<TableScan> {
        let columns = table_columns(conn, name)?;
        let foreign_keys = foreign_keys(conn, name)?;
        // Only an ordinary table with rowids can be read by ranges of them; WITHOUT ROWID
        // and virtual tables are read whole, and so is any table this query cannot place
        // (reading whole is always correct, only slower).
        let with_rowid: bool = conn
            .query_row(
                "SELECT type = 'table' AND wr = 0 FROM pragma_table_list(?1) WHERE schema = 'main'",
                [name],
                |r| r.get(0),
            )
            .unwrap_or(false);
        let rowid = ["rowid", "_rowid_", "oid"].into_iter().find(|alias| {
            with_rowid && !columns.iter().any(|c| c.name.eq_ignore_ascii_case(alias))
        });
        let mut pieces = vec![None];
        if let (Some(alias), false) = (rowid, columns.is_empty()) {
            let alias = quote_ident(alias);
            let (lo, hi): (Option<i64>, Option<i64>) = conn.query_row(
                &format!(
                    "SELECT min({alias}), max({alias}) FROM {}",
                    quote_ident(name)
                ),
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            if let (Some(lo), Some(hi)) = (lo, hi) {
                pieces = rowid_pieces(lo, hi);
            }
        }
        Ok(TableScan {
            name: name.to_string(),
            columns,
            foreign_keys,
            rowid,
            pieces,
        })
    }

    /// `FROM` clause of one piece, with its range as parameters 1 and 2.
    fn from(&self, piece: Option<(i64, i64)>) -> String {
        piece_from(&self.name, self.rowid, piece)
    }

    /// Per column, the storage classes it holds in the piece (a bit set of SEEN_*), and the
    /// piece's row count.
    fn storage_classes(
        &self,
        conn: &Connection,
        piece: Option<(i64, i64)>,
    ) -> Result<(Vec<u8>, usize), ReadError> {
        // SUM(DISTINCT) of one bit per storage class is their bitwise OR, one pass for all
        // columns.
        let probes: String = self
            .columns
            .iter()
            .map(|c| {
                format!(
                    ", COALESCE(SUM(DISTINCT CASE typeof({}) WHEN 'integer' THEN {SEEN_INTEGER} WHEN 'real' THEN {SEEN_REAL} WHEN 'text' THEN {SEEN_TEXT} WHEN 'blob' THEN {SEEN_BLOB} ELSE 0 END), 0)",
                    quote_ident(&c.name)
                )
            })
            .collect();
        let mut stmt = conn.prepare(&format!(
            "SELECT COUNT(*){probes} FROM {}",
            self.from(piece)
        ))?;
        let row = |r: &rusqlite::Row| {
            let count = r.get::<_, i64>(0)?;
            let seen = (0..self.columns.len())
                .map(|i| r.get::<_, i64>(i + 1).map(|v| v as u8))
                .collect::<rusqlite::Result<Vec<u8>>>()?;
            Ok((seen, usize::try_from(count).unwrap_or(0)))
        };
        Ok(match piece {
            Some((lo, hi)) => stmt.query_row([lo, hi], row)?,
            None => stmt.query_row([], row)?,
        })
    }

    /// A warning per column of text that also holds BLOBs, naming their rows (by rowid, the
    /// first few) and saying they are read as text; an error when one is not text (valid
    /// UTF-8), since no value of a text column can stand for it.
    fn blobs_among_text(&self, conn: &Connection, seen: &[u8]) -> Result<Vec<String>, ReadError> {
        let mut warnings = Vec::new();
        let mixed = self
            .columns
            .iter()
            .zip(seen)
            .filter(|(_, &s)| s & SEEN_BLOB != 0 && s & SEEN_TEXT != 0);
        for (c, _) in mixed {
            let column = quote_ident(&c.name);
            // A table without rowids has no row number to name: its rows are counted, and
            // the query finds them.
            let find = format!(
                "SELECT {}, {column} FROM {} WHERE typeof({column}) = 'blob'",
                self.rowid.map_or("NULL".to_string(), quote_ident),
                quote_ident(&self.name)
            );
            let mut stmt = conn.prepare(&format!("{find} ORDER BY 1"))?;
            let mut rows = stmt.query([])?;
            let (mut text, mut not_text) = (Vec::new(), Vec::new());
            while let Some(row) = rows.next()? {
                let rowid = row.get::<_, Option<i64>>(0)?;
                match row.get_ref(1)? {
                    ValueRef::Blob(b) if std::str::from_utf8(b).is_err() => not_text.push(rowid),
                    _ => text.push(rowid),
                }
            }
            let named = |rowids: &[Option<i64>]| {
                let shown: Vec<String> = rowids
                    .iter()
                    .flatten()
                    .take(5)
                    .map(i64::to_string)
                    .collect();
                let more = rowids.len().saturating_sub(5);
                match (shown.is_empty(), more) {
                    (true, _) => format!("in {} row(s)", rowids.len()),
                    (false, 0) => format!("at rowid {}", shown.join(", ")),
                    (false, more) => format!("at rowid {} and {more} more", shown.join(", ")),
                }
            };
            if !not_text.is_empty() {
                return Err(ReadError::Other(format!(
                    "column '{}' of table '{}' holds text, and BLOBs that are not text {}: a column is read as one type, so store those values as text or clear them (find them with {find})",
                    c.name,
                    self.name,
                    named(&not_text)
                )));
            }
            warnings.push(format!(
                "column '{}' of table '{}' holds text, and {} BLOB value(s) {}: they are read as the text they hold; store them as text to silence this (find them with {find})",
                c.name,
                self.name,
                text.len(),
                named(&text)
            ));
        }
        Ok(warnings)
    }

    /// The table's schema, from the storage classes of its columns.
    fn schema(&self, seen: &[u8]) -> SchemaRef {
        let fields: Vec<Field> = self
            .columns
            .iter()
            .zip(seen)
            .map(|(c, &s)| Field::new(c.name.clone(), column_type(s, &c.declared), true))
            .collect();
        Arc::new(Schema::new(fields))
    }
}

/// `FROM` clause of one piece of `table`, with its range as parameters 1 and 2.
fn piece_from(table: &str, rowid: Option<&str>, piece: Option<(i64, i64)>) -> String {
    let table = quote_ident(table);
    match (piece, rowid) {
        (Some(_), Some(alias)) => {
            format!("{table} WHERE {} BETWEEN ?1 AND ?2", quote_ident(alias))
        }
        _ => table,
    }
}

/// A SQLite table read again by every scan, a piece (a rowid range) at a time, in rowid
/// order, each read on a read-only connection of its own.
#[derive(Debug)]
struct SqliteReader {
    path: PathBuf,
    name: String,
    columns: Vec<String>,
    rowid: Option<&'static str>,
    pieces: Vec<Option<(i64, i64)>>,
    /// The types the scan at open found, which every read keeps.
    schema: SchemaRef,
}

impl SqliteReader {
    /// One piece's rows, the columns at `columns` as batches of `schema`, each handed to
    /// `send`; false when `send` wants no more.
    fn read_piece(
        &self,
        conn: &Connection,
        piece: Option<(i64, i64)>,
        columns: &[usize],
        schema: &SchemaRef,
        send: &mut dyn FnMut(RecordBatch) -> bool,
    ) -> Result<bool, ReadError> {
        let list = columns
            .iter()
            .map(|&c| quote_ident(&self.columns[c]))
            .collect::<Vec<_>>()
            .join(", ");
        let from = piece_from(&self.name, self.rowid, piece);
        let mut stmt = conn.prepare(&format!("SELECT {list} FROM {from}"))?;
        let mut builders: Vec<ColumnBuilder> = schema
            .fields()
            .iter()
            .map(|f| ColumnBuilder::new(f.data_type()))
            .collect();
        let mut rows = match piece {
            Some((lo, hi)) => stmt.query([lo, hi])?,
            None => stmt.query([])?,
        };
        while let Some(row) = rows.next()? {
            for (i, b) in builders.iter_mut().enumerate() {
                b.append(row.get_ref(i)?).ok_or_else(|| {
                    ReadError::Other(format!(
                        "column '{}' of table '{}' holds a value of another type than when the run began: something changed the database since; run again once nothing writes to it",
                        self.columns[columns[i]], self.name
                    ))
                })?;
            }
            if builders[0].len() >= BATCH_ROWS && !send(finish_batch(schema, &mut builders)?) {
                return Ok(false);
            }
        }
        if builders[0].len() > 0 {
            return Ok(send(finish_batch(schema, &mut builders)?));
        }
        Ok(true)
    }
}

impl streamed::Reader for SqliteReader {
    fn pieces(&self) -> usize {
        self.pieces.len()
    }

    fn read(
        &self,
        pieces: Range<usize>,
        columns: &[usize],
        send: &mut dyn FnMut(RecordBatch) -> bool,
    ) -> Result<(), WarehouseError> {
        if pieces.is_empty() || self.columns.is_empty() {
            return Ok(());
        }
        let err = |msg: String| WarehouseError::Sqlite {
            path: show(&self.path),
            msg,
        };
        let schema = Arc::new(self.schema.project(columns).map_err(|e| err(one_line(e)))?);
        let conn = open_reader(&self.path).map_err(|e| err(one_line(e)))?;
        for &piece in &self.pieces[pieces] {
            let more = self
                .read_piece(&conn, piece, columns, &schema, send)
                .map_err(|e| match e {
                    ReadError::Sqlite(e) => err(one_line(e)),
                    ReadError::Other(msg) => err(msg),
                })?;
            if !more {
                break;
            }
        }
        Ok(())
    }

    /// The database, and its write-ahead log: in WAL mode a commit changes only the log.
    fn files(&self) -> Vec<PathBuf> {
        let mut wal = self.path.clone().into_os_string();
        wal.push("-wal");
        vec![self.path.clone(), PathBuf::from(wal)]
    }
}

/// Inclusive ranges of [`PIECE_ROWIDS`] rowids (wider where that would make more than
/// [`MAX_PIECES`]) covering `lo..=hi`.
pub(super) fn rowid_pieces(lo: i64, hi: i64) -> Vec<Option<(i64, i64)>> {
    let span = hi as i128 - lo as i128 + 1;
    let width = (span / MAX_PIECES as i128 + 1).max(PIECE_ROWIDS as i128);
    let mut pieces = Vec::new();
    let mut start = lo as i128;
    while start <= hi as i128 {
        let end = (start + width - 1).min(hi as i128);
        // Both ends lie in lo..=hi, so they fit an i64.
        pieces.push(Some((start as i64, end as i64)));
        start = end + 1;
    }
    pieces
}

fn table_names(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut stmt =
        conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid")?;
    let names = stmt
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    // SQLite reserves every name starting with sqlite_, in any case, for itself.
    Ok(names
        .into_iter()
        .filter(|n| !n.to_ascii_lowercase().starts_with("sqlite_"))
        .collect())
}

struct SqliteColumn {
    name: String,
    declared: String,
    pk: i64,
}

fn table_columns(conn: &Connection, table: &str) -> rusqlite::Result<Vec<SqliteColumn>> {
    // table_xinfo also lists generated columns, which SELECT returns; hidden = 1 marks
    // virtual-table internals that SELECT * does not.
    let mut stmt = conn.prepare(
        "SELECT name, type, pk FROM pragma_table_xinfo(?1) WHERE hidden <> 1 ORDER BY cid",
    )?;
    let rows = stmt.query_map([table], |r| {
        Ok(SqliteColumn {
            name: r.get(0)?,
            declared: r.get::<_, Option<String>>(1)?.unwrap_or_default(),
            pk: r.get(2)?,
        })
    })?;
    rows.collect()
}

/// Arrow type of a column from the kinds of value it stores (a bit set of SEEN_*).
///
/// Text beside a few BLOBs is text: a BLOB there is most often text a loader stored with the
/// wrong class, and typing the column Binary would render every text value as hex.
/// [`TableScan::blobs_among_text`] reads those BLOBs as text or refuses them.
fn column_type(seen: u8, declared: &str) -> DataType {
    if seen & SEEN_BLOB != 0 && seen & SEEN_TEXT == 0 {
        DataType::Binary
    } else if seen & SEEN_TEXT != 0 {
        DataType::Utf8
    } else if seen & SEEN_REAL != 0 {
        DataType::Float64
    } else if seen & SEEN_INTEGER != 0 {
        DataType::Int64
    } else {
        // Only NULLs (or no rows): fall back on SQLite's affinity rules for the declaration.
        let d = declared.to_ascii_uppercase();
        if d.contains("INT") {
            DataType::Int64
        } else if d.contains("REAL") || d.contains("FLOA") || d.contains("DOUB") {
            DataType::Float64
        } else {
            DataType::Utf8
        }
    }
}

enum ReadError {
    Sqlite(rusqlite::Error),
    Other(String),
}

impl From<rusqlite::Error> for ReadError {
    fn from(e: rusqlite::Error) -> Self {
        ReadError::Sqlite(e)
    }
}

enum ColumnBuilder {
    Int(Int64Builder),
    Float(Float64Builder),
    Text(StringBuilder),
    Blob(BinaryBuilder),
}

impl ColumnBuilder {
    fn new(data_type: &DataType) -> Self {
        match data_type {
            DataType::Int64 => ColumnBuilder::Int(Int64Builder::with_capacity(BATCH_ROWS)),
            DataType::Float64 => ColumnBuilder::Float(Float64Builder::with_capacity(BATCH_ROWS)),
            DataType::Binary => ColumnBuilder::Blob(BinaryBuilder::new()),
            _ => ColumnBuilder::Text(StringBuilder::new()),
        }
    }

    /// `None` when the value does not fit the column type, which the type scan rules out
    /// unless the file changed underneath the read transaction.
    fn append(&mut self, v: ValueRef<'_>) -> Option<()> {
        match (self, v) {
            (ColumnBuilder::Int(b), ValueRef::Null) => b.append_null(),
            (ColumnBuilder::Int(b), ValueRef::Integer(i)) => b.append_value(i),
            (ColumnBuilder::Float(b), ValueRef::Null) => b.append_null(),
            (ColumnBuilder::Float(b), ValueRef::Integer(i)) => b.append_value(i as f64),
            (ColumnBuilder::Float(b), ValueRef::Real(f)) => b.append_value(f),
            (ColumnBuilder::Text(b), ValueRef::Null) => b.append_null(),
            // Numbers in a text column are rendered as render_value would render them.
            (ColumnBuilder::Text(b), ValueRef::Integer(i)) => b.append_value(i.to_string()),
            (ColumnBuilder::Text(b), ValueRef::Real(f)) => b.append_value(f.to_string()),
            (ColumnBuilder::Text(b), ValueRef::Text(t)) => {
                b.append_value(String::from_utf8_lossy(t))
            }
            // Checked before the read (`blobs_among_text`): only BLOBs that are text.
            (ColumnBuilder::Text(b), ValueRef::Blob(t)) => {
                b.append_value(std::str::from_utf8(t).ok()?)
            }
            (ColumnBuilder::Blob(b), ValueRef::Null) => b.append_null(),
            (ColumnBuilder::Blob(b), ValueRef::Integer(i)) => b.append_value(i.to_string()),
            (ColumnBuilder::Blob(b), ValueRef::Real(f)) => b.append_value(f.to_string()),
            (ColumnBuilder::Blob(b), ValueRef::Text(t) | ValueRef::Blob(t)) => b.append_value(t),
            _ => return None,
        }
        Some(())
    }

    fn len(&self) -> usize {
        match self {
            ColumnBuilder::Int(b) => b.len(),
            ColumnBuilder::Float(b) => b.len(),
            ColumnBuilder::Text(b) => b.len(),
            ColumnBuilder::Blob(b) => b.len(),
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            ColumnBuilder::Int(b) => Arc::new(b.finish()),
            ColumnBuilder::Float(b) => Arc::new(b.finish()),
            ColumnBuilder::Text(b) => Arc::new(b.finish()),
            ColumnBuilder::Blob(b) => Arc::new(b.finish()),
        }
    }
}

fn finish_batch(
    schema: &SchemaRef,
    builders: &mut [ColumnBuilder],
) -> Result<RecordBatch, ReadError> {
    let arrays = builders.iter_mut().map(ColumnBuilder::finish).collect();
    RecordBatch::try_new(Arc::clone(schema), arrays).map_err(|e| ReadError::Other(one_line(e)))
}

/// A foreign key as the catalog states it: names as written in the constraint, and no
/// parent columns when the constraint relies on the parent's primary key.
struct RawForeignKey {
    columns: Vec<String>,
    ref_table: String,
    ref_columns: Vec<Option<String>>,
}

fn foreign_keys(conn: &Connection, table: &str) -> rusqlite::Result<Vec<RawForeignKey>> {
    let mut stmt = conn.prepare(
        "SELECT id, \"table\", \"from\", \"to\" FROM pragma_foreign_key_list(?1) ORDER BY id, seq",
    )?;
    let rows = stmt.query_map([table], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
            r.get::<_, Option<String>>(3)?,
        ))
    })?;
    let mut out: Vec<(i64, RawForeignKey)> = Vec::new();
    for row in rows {
        let (id, ref_table, from, to) = row?;
        match out.last_mut() {
            Some((last, fk)) if *last == id => {
                fk.columns.push(from);
                fk.ref_columns.push(to);
            }
            _ => out.push((
                id,
                RawForeignKey {
                    columns: vec![from],
                    ref_table,
                    ref_columns: vec![to],
                },
            )),
        }
    }
    // SQLite numbers constraints from the last declared; restore declaration order.
    out.reverse();
    Ok(out.into_iter().map(|(_, fk)| fk).collect())
}

/// Names in a constraint are case-insensitive in SQLite and may be written in another case
/// than the table or column itself; the catalog keeps the exact names. A constraint that
/// cannot be resolved (its parent table is missing) is left out with a warning rather than
/// failing the whole warehouse, as SQLite itself accepts it.
fn resolve_foreign_keys(tables: &mut [LoadedTable], raw: Vec<Vec<RawForeignKey>>) -> Vec<String> {
    let lookup = |names: &mut dyn Iterator<Item = &String>, wanted: &str| -> Option<String> {
        let names: Vec<&String> = names.collect();
        names
            .iter()
            .find(|n| n.as_str() == wanted)
            .or_else(|| names.iter().find(|n| n.eq_ignore_ascii_case(wanted)))
            .map(|n| n.to_string())
    };
    let mut warnings = Vec::new();
    for (ti, fks) in raw.into_iter().enumerate() {
        for fk in fks {
            let child = &tables[ti].meta;
            let Some(pi) = tables
                .iter()
                .position(|t| t.meta.name.eq_ignore_ascii_case(&fk.ref_table))
            else {
                warnings.push(format!(
                    "foreign key ({}) of table '{}' references table '{}', which is not in the file: the key is ignored",
                    fk.columns.join(", "),
                    child.name,
                    fk.ref_table
                ));
                continue;
            };
            let parent = &tables[pi].meta;
            let columns: Option<Vec<String>> = fk
                .columns
                .iter()
                .map(|c| lookup(&mut child.columns.iter().map(|c| &c.name), c))
                .collect();
            let ref_columns: Option<Vec<String>> = if fk.ref_columns.iter().all(Option::is_none) {
                (parent.primary_key.len() == fk.columns.len()).then(|| parent.primary_key.clone())
            } else {
                fk.ref_columns
                    .iter()
                    .map(|c| {
                        c.as_deref()
                            .and_then(|c| lookup(&mut parent.columns.iter().map(|c| &c.name), c))
                    })
                    .collect()
            };
            match (columns, ref_columns) {
                (Some(columns), Some(ref_columns)) => {
                    let resolved = ForeignKey { columns, ref_table: parent.name.clone(), ref_columns };
                    if !tables[ti].meta.foreign_keys.contains(&resolved) {
                        tables[ti].meta.foreign_keys.push(resolved);
                    }
                }
                _ => warnings.push(format!(
                    "foreign key ({}) of table '{}' references columns of '{}' that do not match its columns or primary key: the key is ignored",
                    fk.columns.join(", "),
                    child.name,
                    parent.name
                )),
            }
        }
    }
    warnings
}
