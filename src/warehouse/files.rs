//! Reading a directory of Parquet and CSV files, or one such file, one table per file,
//! named by file stem. CSV files have a header row and fields separated by the declared
//! delimiter (`SET csv_delimiter`, default `,`).
//!
//! Neither is held in memory: each query reads the file again. A CSV file is read whole
//! once at open, its schema inferred from every record and its rows counted, so a malformed
//! row is reported when the warehouse opens, not halfway through a run; queries then read it
//! with the same reader under the same schema ([`super::streamed`]). A Parquet file is opened
//! by its footer (schema, row count; a truncated or foreign file fails there) and read by
//! DataFusion's Parquet reader.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::csv::reader::{Format, ReaderBuilder};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::{
    one_line, show, streamed, ColumnMeta, LoadedTable, Rows, SourceKind, SourceOptions, TableMeta,
    WarehouseError,
};

#[derive(Clone, Copy, PartialEq)]
enum FileKind {
    Parquet,
    Csv,
}

/// A loaded file source: its kind, its tables and warnings for the user.
type Loaded = (SourceKind, Vec<LoadedTable>, Vec<String>);

fn file_kind(path: &Path) -> Option<FileKind> {
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("parquet") => Some(FileKind::Parquet),
        Some("csv") => Some(FileKind::Csv),
        _ => None,
    }
}

/// One .csv or .parquet file as a one-table warehouse named by its stem; `None` when the
/// file has neither extension (the caller then says what a source may be).
pub(super) fn load_file(
    path: &Path,
    options: &SourceOptions,
) -> Result<Option<Loaded>, WarehouseError> {
    let Some(kind) = file_kind(path) else {
        return Ok(None);
    };
    let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
        return Ok(None);
    };
    load_tables(
        path,
        vec![(stem.to_string(), path.to_path_buf(), kind)],
        options,
    )
    .map(Some)
}

/// The warning for a declared delimiter that no file of the source used.
pub(super) fn unused_delimiter(
    path: &Path,
    options: &SourceOptions,
    csv_files: usize,
) -> Option<String> {
    (csv_files == 0 && options.csv_delimiter != SourceOptions::default().csv_delimiter).then(|| {
        format!(
            "SET csv_delimiter has no effect: source '{}' holds no CSV files; remove the setting",
            show(path)
        )
    })
}

/// The source kind is Parquet when any table is, CSV when all are.
pub(super) fn load_dir(dir: &Path, options: &SourceOptions) -> Result<Loaded, WarehouseError> {
    let io = |op: &'static str, path: &Path, e: std::io::Error| WarehouseError::Io {
        op,
        path: show(path),
        msg: one_line(e),
        hint: "check that the directory and its files are readable",
    };
    let mut found: Vec<(String, PathBuf, FileKind)> = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| io("list", dir, e))? {
        let entry = entry.map_err(|e| io("list", dir, e))?;
        let path = entry.path();
        let Some(file_name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        // Hidden files are editor backups, OS metadata or a release still being staged.
        if file_name.starts_with('.') {
            continue;
        }
        let Some(kind) = file_kind(&path) else {
            continue;
        };
        if !std::fs::metadata(&path)
            .map_err(|e| io("read", &path, e))?
            .is_file()
        {
            continue;
        }
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        found.push((stem.to_string(), path.clone(), kind));
    }
    // read_dir order is arbitrary; a stable table order keeps runs reproducible.
    found.sort_by(|a, b| a.1.cmp(&b.1));
    if found.is_empty() {
        return Err(WarehouseError::EmptyDirectory { path: show(dir) });
    }
    // Table names resolve case-insensitively (SQL users rarely remember a file's case), so
    // two files that differ only in case would name one table.
    let mut seen: HashMap<String, &Path> = HashMap::new();
    for (stem, path, _) in &found {
        if let Some(first) = seen.insert(stem.to_lowercase(), path.as_path()) {
            return Err(WarehouseError::DuplicateTable {
                table: stem.clone(),
                first: show(first),
                second: show(path),
            });
        }
    }
    load_tables(dir, found, options)
}

/// Reads each (table name, file, kind) found in `source`.
fn load_tables(
    source: &Path,
    found: Vec<(String, PathBuf, FileKind)>,
    options: &SourceOptions,
) -> Result<Loaded, WarehouseError> {
    let kind = if found.iter().any(|f| f.2 == FileKind::Parquet) {
        SourceKind::Parquet
    } else {
        SourceKind::Csv
    };
    let mut tables = Vec::with_capacity(found.len());
    let mut warnings = Vec::new();
    for (stem, path, kind) in &found {
        let (schema, rows) = match kind {
            FileKind::Parquet => open_parquet(path)?,
            FileKind::Csv => {
                let (schema, rows, warning) = open_csv(path, options.csv_delimiter)?;
                warnings.extend(warning);
                (schema, rows)
            }
        };
        let meta = TableMeta {
            name: stem.clone(),
            columns: ColumnMeta::of_schema(&schema),
            primary_key: Vec::new(),
            foreign_keys: Vec::new(),
        };
        tables.push(LoadedTable {
            meta,
            schema,
            rows,
            catalog_pk: false,
        });
    }
    let csv_files = found.iter().filter(|f| f.2 == FileKind::Csv).count();
    warnings.extend(unused_delimiter(source, options, csv_files));
    Ok((kind, tables, warnings))
}

/// Delimiters a CSV file is commonly written with, and how `SET csv_delimiter` names them.
const DELIMITERS: [(u8, &str); 4] = [(b',', ","), (b';', ";"), (b'\t', "tab"), (b'|', "|")];

/// What to declare when a CSV's header line holds no `used` delimiter but another common
/// one: the file was most likely written with that one (UCI Adult as ARX ships it uses
/// ';'), and the failure would otherwise surface as a ragged row or an unknown column.
fn delimiter_hint(header: &str, used: u8) -> Option<String> {
    if header.as_bytes().contains(&used) {
        return None;
    }
    let (_, name) = DELIMITERS
        .iter()
        .find(|(d, _)| *d != used && header.as_bytes().contains(d))?;
    Some(format!(
        "if its fields are separated by '{name}', add SET csv_delimiter = '{name}' to the declarations"
    ))
}

/// The first line of a file, for [`delimiter_hint`] (empty if unreadable: the reader then
/// reports the real problem).
fn header_line(path: &Path) -> String {
    let mut line = String::new();
    if let Ok(file) = File::open(path) {
        let _ = BufReader::new(file).read_line(&mut line);
    }
    line
}

/// A reader of a Parquet file, its footer read and its column names checked.
fn parquet_reader(path: &Path) -> Result<ParquetRecordBatchReaderBuilder<File>, WarehouseError> {
    let err = |msg: String| parquet_error(path, msg);
    let file = File::open(path).map_err(|e| err(one_line(e)))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| err(one_line(e)))?;
    check_unique_columns(builder.schema(), err)?;
    Ok(builder)
}

fn parquet_error(path: &Path, msg: String) -> WarehouseError {
    WarehouseError::Parquet {
        path: show(path),
        msg,
    }
}

/// A Parquet file's plain schema and row count, from its footer.
fn open_parquet(path: &Path) -> Result<(SchemaRef, Rows), WarehouseError> {
    let builder = parquet_reader(path)?;
    let rows = builder.metadata().file_metadata().num_rows();
    let rows = usize::try_from(rows)
        .map_err(|_| parquet_error(path, format!("its footer counts {rows} rows")))?;
    Ok((
        plain_schema(builder.schema()),
        Rows::Parquet {
            path: path.to_path_buf(),
            rows,
            stamp: stamp(path),
        },
    ))
}

/// A file's length and modification time, where the file system gives them.
pub(super) fn stamp(path: &Path) -> Option<(u64, std::time::SystemTime)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.len(), meta.modified().ok()?))
}

/// A Parquet file's rows, whole, in file order and plain types.
pub(super) fn read_parquet(path: &Path) -> Result<(SchemaRef, Vec<RecordBatch>), WarehouseError> {
    let err = |e: &dyn std::fmt::Display| parquet_error(path, one_line(e));
    let builder = parquet_reader(path)?;
    let schema = Arc::clone(builder.schema());
    let reader = builder.build().map_err(|e| err(&e))?;
    let batches = reader.collect::<Result<Vec<_>, _>>().map_err(|e| err(&e))?;
    plain_types(schema, batches).map_err(|e| err(&e))
}

/// A Parquet file's rows in file order and plain types, only the columns at `columns` (their
/// positions in the file's schema, ascending), read a batch at a time as the iterator is
/// driven: a table larger than memory can be scanned.
pub(super) fn scan_parquet(
    path: &Path,
    columns: Vec<usize>,
) -> Result<impl Iterator<Item = Result<RecordBatch, WarehouseError>>, WarehouseError> {
    let builder = parquet_reader(path)?;
    let mask = parquet::arrow::ProjectionMask::roots(builder.parquet_schema(), columns);
    let reader = builder
        .with_projection(mask)
        .build()
        .map_err(|e| parquet_error(path, one_line(e)))?;
    let path = path.to_path_buf();
    Ok(reader.map(move |batch| {
        let batch = batch.map_err(|e| parquet_error(&path, one_line(e)))?;
        let (_, mut plain) = plain_types(batch.schema(), vec![batch])
            .map_err(|e| parquet_error(&path, one_line(e)))?;
        // One batch in, one batch out.
        plain
            .pop()
            .ok_or_else(|| parquet_error(&path, "a batch was lost in casting".to_string()))
    }))
}

/// The plain Arrow type a column is held as: one string type and one binary type whatever
/// the writer chose (views, large offsets or dictionaries), so every module sees the same
/// types from Parquet, CSV and SQLite alike.
fn plain_type(data_type: &DataType) -> DataType {
    match data_type {
        DataType::Utf8View | DataType::LargeUtf8 => DataType::Utf8,
        DataType::BinaryView | DataType::LargeBinary => DataType::Binary,
        DataType::Dictionary(_, values) => plain_type(values),
        other => other.clone(),
    }
}

/// `schema` with every column's [`plain_type`].
fn plain_schema(schema: &Schema) -> SchemaRef {
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| f.as_ref().clone().with_data_type(plain_type(f.data_type())))
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

fn plain_types(
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
) -> Result<(SchemaRef, Vec<RecordBatch>), arrow::error::ArrowError> {
    if schema
        .fields()
        .iter()
        .all(|f| &plain_type(f.data_type()) == f.data_type())
    {
        return Ok((schema, batches));
    }
    let plain = plain_schema(&schema);
    let batches = batches
        .iter()
        .map(|b| {
            let columns = b
                .columns()
                .iter()
                .zip(plain.fields())
                .map(|(c, f)| arrow::compute::cast(c, f.data_type()))
                .collect::<Result<Vec<_>, _>>()?;
            RecordBatch::try_new(Arc::clone(&plain), columns)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((plain, batches))
}

/// A CSV file's header and field separator, as every read of it uses them.
fn csv_format(delimiter: u8) -> Format {
    Format::default()
        .with_header(true)
        .with_delimiter(delimiter)
}

/// Opens one CSV file: its schema inferred from every record, its rows counted by reading
/// them all under that schema (a malformed row fails here, not mid-run), none kept. Also
/// returns a warning when it came out as one column that looks like several joined by
/// another delimiter.
fn open_csv(
    path: &Path,
    delimiter: u8,
) -> Result<(SchemaRef, Rows, Option<String>), WarehouseError> {
    let hint = delimiter_hint(&header_line(path), delimiter);
    let err = |msg: String| WarehouseError::Csv {
        path: show(path),
        msg: match &hint {
            Some(h) => format!("{msg}; {h}"),
            None => msg,
        },
    };
    let mut file = File::open(path).map_err(|e| err(one_line(e)))?;
    if file.metadata().map(|m| m.len()).unwrap_or(1) == 0 {
        return Err(err(
            "the file is empty: it has no header row, so no columns".to_string(),
        ));
    }
    // Inferring from every record, not a sample: a text value in row 100 000 of a column
    // that looked numeric would otherwise fail the load (or a query) much later.
    let (schema, _) = csv_format(delimiter)
        .infer_schema(BufReader::new(&mut file), None)
        .map_err(|e| err(one_line(e)))?;
    // A column with no value at all is inferred as Null, a type few SQL operations accept;
    // text is what SQLite's affinity would give an undeclared column.
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| match f.data_type() {
            DataType::Null => f.as_ref().clone().with_data_type(DataType::Utf8),
            _ => f.as_ref().clone(),
        })
        .collect();
    let schema = Arc::new(Schema::new(fields));
    check_unique_columns(&schema, err)?;
    let reader = Arc::new(CsvReader {
        path: path.to_path_buf(),
        schema: Arc::clone(&schema),
        delimiter,
    });
    let mut rows = 0;
    let all: Vec<usize> = (0..schema.fields().len()).collect();
    reader
        .parse(&all, &mut |batch| {
            rows += batch.num_rows();
            true
        })
        .map_err(err)?;
    let warning = match (schema.fields().len(), hint.clone()) {
        (1, Some(h)) => Some(format!(
            "'{}' reads as one column '{}': {h}",
            show(path),
            schema.field(0).name()
        )),
        _ => None,
    };
    Ok((schema, Rows::read(reader, rows), warning))
}

/// A CSV file read by arrow-csv's reader under the schema inferred at open, a batch at a
/// time, in file order: one piece.
#[derive(Debug)]
struct CsvReader {
    path: PathBuf,
    schema: SchemaRef,
    delimiter: u8,
}

impl CsvReader {
    /// The columns at `columns`, each batch handed to `send` until it returns false; what
    /// failed, in words.
    fn parse(
        &self,
        columns: &[usize],
        send: &mut dyn FnMut(RecordBatch) -> bool,
    ) -> Result<(), String> {
        let file = File::open(&self.path).map_err(one_line)?;
        let reader = ReaderBuilder::new(Arc::clone(&self.schema))
            .with_format(csv_format(self.delimiter))
            .with_projection(columns.to_vec())
            .build(BufReader::new(file))
            .map_err(one_line)?;
        for batch in reader {
            if !send(batch.map_err(one_line)?) {
                break;
            }
        }
        Ok(())
    }
}

impl streamed::Reader for CsvReader {
    fn pieces(&self) -> usize {
        1
    }

    fn read(
        &self,
        pieces: Range<usize>,
        columns: &[usize],
        send: &mut dyn FnMut(RecordBatch) -> bool,
    ) -> Result<(), WarehouseError> {
        if pieces.is_empty() {
            return Ok(());
        }
        // It read whole at open, so a failure now is a file that changed since.
        self.parse(columns, send).map_err(|msg| WarehouseError::Csv {
            path: show(&self.path),
            msg: format!("{msg}; it read without error when the run began, so something changed it since: run again once nothing writes to the source"),
        })
    }

    fn files(&self) -> Vec<PathBuf> {
        vec![self.path.clone()]
    }
}

/// SQL cannot tell two columns of one name apart.
fn check_unique_columns(
    schema: &SchemaRef,
    err: impl Fn(String) -> WarehouseError,
) -> Result<(), WarehouseError> {
    let fields = schema.fields();
    for (i, f) in fields.iter().enumerate() {
        if fields[..i].iter().any(|g| g.name() == f.name()) {
            return Err(err(format!(
                "column '{}' appears twice; rename one of them",
                f.name()
            )));
        }
    }
    Ok(())
}
