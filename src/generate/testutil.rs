//! Helpers the generator tests share: reading generated columns, fixture files.

use std::collections::HashMap;
use std::path::PathBuf;

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{Float64Type, Int64Type};

use crate::warehouse::ReleaseSet;

pub(super) fn manifest_path(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

pub(super) fn table<'a>(set: &'a ReleaseSet, name: &str) -> &'a RecordBatch {
    &set.tables
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("table {name} missing"))
        .batch
}

pub(super) fn ints(b: &RecordBatch, col: &str) -> Vec<i64> {
    let a = b.column_by_name(col).expect("column exists");
    a.as_primitive::<Int64Type>().values().to_vec()
}

pub(super) fn floats(b: &RecordBatch, col: &str) -> Vec<f64> {
    let a = b.column_by_name(col).expect("column exists");
    a.as_primitive::<Float64Type>().values().to_vec()
}

pub(super) fn texts(b: &RecordBatch, col: &str) -> Vec<String> {
    let a = b.column_by_name(col).expect("column exists");
    let s = a.as_string::<i32>();
    (0..s.len()).map(|i| s.value(i).to_string()).collect()
}

/// Writes the rendered fixture files when `RELANON_BLESS=1`, else compares.
pub(super) fn check_fixture(rel: &str, expected: &str) {
    let path = manifest_path(rel);
    if std::env::var("RELANON_BLESS").as_deref() == Ok("1") {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("create fixture dir");
        }
        std::fs::write(&path, expected).expect("write fixture");
    }
    let actual = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{rel}: {e} (RELANON_BLESS=1 regenerates it)"));
    assert_eq!(
        actual, expected,
        "{rel} drifted; RELANON_BLESS=1 regenerates it"
    );
}

/// ARX layout: leaf -> rest of the row.
pub(super) fn read_hierarchy(rel: &str) -> HashMap<String, Vec<String>> {
    let text = std::fs::read_to_string(manifest_path(rel)).expect("hierarchy file");
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let cells: Vec<String> = l.split(';').map(str::to_string).collect();
            assert_eq!(cells.last().map(String::as_str), Some("*"), "{rel}: {l}");
            (cells[0].clone(), cells[1..].to_vec())
        })
        .collect()
}
