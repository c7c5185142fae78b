//! Reading a SQLite file: catalog (columns, primary and foreign keys) and rows as Arrow.
//!
//! SQLite is dynamically typed, so each column's Arrow type comes from the values it
//! actually stores; the declared type only decides for columns that hold nothing but NULL.

use std::path::Path;
use std::sync::Arc;

use arrow::array::{
    ArrayBuilder, ArrayRef, BinaryBuilder, Float64Builder, Int64Builder, StringBuilder,
};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};

use super::{
    one_line, quote_ident, show, ColumnMeta, ForeignKey, LoadedTable, TableMeta, WarehouseError,
};

/// Rows per RecordBatch, DataFusion's own default batch size.
const BATCH_ROWS: usize = 8192;

const SEEN_INTEGER: u8 = 1;
const SEEN_REAL: u8 = 2;
const SEEN_TEXT: u8 = 4;
const SEEN_BLOB: u8 = 8;

/// Loads every table (not views, not sqlite_* internals). Returns the tables and warnings
/// about catalog entries that could not be used.
pub(super) fn load(path: &Path) -> Result<(Vec<LoadedTable>, Vec<String>), WarehouseError> {
    let err = |e: rusqlite::Error| WarehouseError::Sqlite {
        path: show(path),
        msg: one_line(e),
    };
    // Read-only: the source is never modified, not even by a journal.
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(err)?;
    // One snapshot for the type scan and the row scan, so they agree.
    conn.execute_batch("BEGIN").map_err(err)?;
    let names = table_names(&conn).map_err(err)?;
    let mut tables = Vec::with_capacity(names.len());
    let mut raw_fks = Vec::with_capacity(names.len());
    for name in &names {
        let columns = table_columns(&conn, name).map_err(err)?;
        let (schema, batches) = read_rows(&conn, name, &columns).map_err(|e| match e {
            ReadError::Sqlite(e) => err(e),
            ReadError::Other(msg) => WarehouseError::Sqlite {
                path: show(path),
                msg,
            },
        })?;
        let mut pk: Vec<(i64, String)> = columns
            .iter()
            .filter(|c| c.pk > 0)
            .map(|c| (c.pk, c.name.clone()))
            .collect();
        pk.sort();
        let meta = TableMeta {
            name: name.clone(),
            columns: ColumnMeta::of_schema(&schema),
            primary_key: pk.into_iter().map(|(_, c)| c).collect(),
            foreign_keys: Vec::new(),
        };
        let catalog_pk = !meta.primary_key.is_empty();
        raw_fks.push(foreign_keys(&conn, name).map_err(err)?);
        tables.push(LoadedTable {
            meta,
            schema,
            batches,
            catalog_pk,
        });
    }
    conn.execute_batch("COMMIT").map_err(err)?;
    let warnings = resolve_foreign_keys(&mut tables, raw_fks);
    Ok((tables, warnings))
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
fn column_type(seen: u8, declared: &str) -> DataType {
    if seen & SEEN_BLOB != 0 {
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

fn read_rows(
    conn: &Connection,
    table: &str,
    columns: &[SqliteColumn],
) -> Result<(SchemaRef, Vec<RecordBatch>), ReadError> {
    let from = quote_ident(table);
    let seen: Vec<u8> = if columns.is_empty() {
        Vec::new()
    } else {
        // SUM(DISTINCT) of one bit per storage class is their bitwise OR, one pass for all
        // columns.
        let probes = columns
            .iter()
            .map(|c| {
                format!(
                    "COALESCE(SUM(DISTINCT CASE typeof({}) WHEN 'integer' THEN {SEEN_INTEGER} WHEN 'real' THEN {SEEN_REAL} WHEN 'text' THEN {SEEN_TEXT} WHEN 'blob' THEN {SEEN_BLOB} ELSE 0 END), 0)",
                    quote_ident(&c.name)
                )
            })
            .collect::<Vec<_>>()
            .join(", ");
        conn.query_row(&format!("SELECT {probes} FROM {from}"), [], |r| {
            (0..columns.len())
                .map(|i| r.get::<_, i64>(i).map(|v| v as u8))
                .collect()
        })?
    };
    let fields: Vec<Field> = columns
        .iter()
        .zip(&seen)
        .map(|(c, &s)| Field::new(c.name.clone(), column_type(s, &c.declared), true))
        .collect();
    let schema = Arc::new(Schema::new(fields));
    let mut batches = Vec::new();
    if columns.is_empty() {
        return Ok((schema, batches));
    }
    let list = columns
        .iter()
        .map(|c| quote_ident(&c.name))
        .collect::<Vec<_>>()
        .join(", ");
    let mut stmt = conn.prepare(&format!("SELECT {list} FROM {from}"))?;
    let mut builders: Vec<ColumnBuilder> = schema
        .fields()
        .iter()
        .map(|f| ColumnBuilder::new(f.data_type()))
        .collect();
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        for (i, b) in builders.iter_mut().enumerate() {
            b.append(row.get_ref(i)?).ok_or_else(|| {
                ReadError::Other(format!(
                    "column '{}' of table '{}' changed type while being read",
                    columns[i].name, table
                ))
            })?;
        }
        if builders[0].len() >= BATCH_ROWS {
            batches.push(finish_batch(&schema, &mut builders)?);
        }
    }
    if builders[0].len() > 0 {
        batches.push(finish_batch(&schema, &mut builders)?);
    }
    Ok((schema, batches))
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
