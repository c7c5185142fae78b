//! The lattice file: a small annotated lattice written and read back node for node (full and
//! partial), its metadata readable by a generic Parquet reader, and foreign, other-version
//! and truncated files refused with what is wrong and what to do.

use std::path::{Path, PathBuf};

use std::sync::Arc;

use arrow::array::{AsArray, RecordBatch, UInt64Array};
use arrow::datatypes::{UInt32Type, UInt64Type};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;
use parquet::file::reader::{FileReader, SerializedFileReader};

use super::*;
use crate::algo::kernel::annotate::tests::family;
use crate::algo::kernel::annotate::{annotate, Measure};
use crate::algo::kernel::lattice::Lattice;
use crate::algo::kernel::partial::annotate_partial;
use crate::progress::Progress;

fn meta(rows: Vec<u64>, distinct: bool, partial: Option<f64>) -> Meta {
    Meta {
        relanon_version: "test".into(),
        entity: "person".into(),
        tables: (0..rows.len()).map(|t| format!("t{t}")).collect(),
        rows,
        columns: Vec::new(),
        sensitive: Vec::new(),
        no_distinct: (!distinct).then(|| "no sensitive column".to_string()),
        declared: Declared {
            measure: "k".into(),
            value: 2,
            diversity: None,
        },
        fingerprint: Fingerprint {
            declarations: "0".into(),
            source: PathBuf::from("/nowhere"),
            inputs: Vec::new(),
        },
        build_seconds: 0.5,
        partial,
    }
}

/// A lattice of the test family, with its columns in the metadata.
fn built(partial: Option<f64>) -> Built {
    let forest = family(7, 60);
    let lattice = Lattice::new(&forest);
    let progress = Progress::new();
    let annotated = match partial {
        None => annotate(&lattice, true, &progress),
        Some(p) => annotate_partial(&lattice, true, p, &progress),
    };
    let mut meta = meta(annotated.rows.clone(), true, partial);
    meta.columns = annotated
        .heights
        .iter()
        .enumerate()
        .map(|(i, &height)| ColumnMeta {
            name: format!("t0.c{i}"),
            hierarchy: "h".into(),
            height,
            cells: 0,
            levels: Vec::new(),
        })
        .collect();
    Built {
        lattice: annotated,
        meta,
    }
}

fn written(built: &Built, dir: &Path) -> PathBuf {
    let path = dir.join("l.lattice");
    std::fs::write(&path, encode(built).expect("encodes")).expect("write");
    path
}

fn refused(path: &Path, says: &str) {
    let e = read(path).err().expect("refused").to_string();
    assert!(e.contains(says), "{e}");
    assert!(e.contains("rebuild it with `relanon lattice"), "{e}");
}

#[test]
fn a_lattice_reads_back_node_for_node() {
    for partial in [None, Some(0.3)] {
        let dir = tempfile::tempdir().expect("tempdir");
        let b = built(partial);
        assert!(
            b.lattice.nodes() > group_nodes(b.lattice.nodes()),
            "several row groups"
        );
        let back = read(&written(&b, dir.path())).expect("reads");
        assert_eq!(back.lattice.heights, b.lattice.heights);
        assert_eq!(back.lattice.rows, b.lattice.rows);
        assert_eq!(back.lattice.size.classes, b.lattice.size.classes);
        assert_eq!(back.lattice.computed, b.lattice.computed);
        assert_eq!(back.meta.fingerprint, b.meta.fingerprint);
        for i in (0..b.lattice.nodes()).rev() {
            for m in [Measure::Size, Measure::Distinct] {
                let (a, r) = (b.lattice.histogram(m, i), back.lattice.histogram(m, i));
                assert_eq!(
                    a.map(|h| (h.stats, h.cum)),
                    r.map(|h| (h.stats, h.cum)),
                    "node {i}"
                );
            }
        }
        let source = back.lattice.source.as_ref().expect("read lazily");
        assert_eq!(source.0.damaged(), None);
    }
}

#[test]
fn the_metadata_and_columns_read_with_a_generic_parquet_reader() {
    let dir = tempfile::tempdir().expect("tempdir");
    let b = built(None);
    let path = written(&b, dir.path());
    let file = std::fs::File::open(&path).expect("open");
    let reader = SerializedFileReader::new(file).expect("a Parquet file");
    let meta = reader.metadata().file_metadata();
    assert_eq!(meta.num_rows() as usize, b.lattice.nodes());
    let kv = meta.key_value_metadata().expect("key-value metadata");
    let value = |k: &str| {
        kv.iter()
            .find(|e| e.key == k)
            .and_then(|e| e.value.clone())
            .expect(k)
    };
    assert_eq!(value(crate::outputs::LATTICE_KEY), VERSION.to_string());
    let m: Meta = serde_json::from_str(&value(META_KEY)).expect("Meta as JSON");
    assert_eq!(m.tables, b.meta.tables);
    let names: Vec<String> = meta
        .schema_descr()
        .root_schema()
        .get_fields()
        .iter()
        .map(|f| f.name().to_string())
        .collect();
    assert_eq!(
        names,
        [
            "node",
            "levels",
            "computed",
            "size_classes",
            "size_stats",
            "size_cum",
            "size_hash",
            "distinct_classes",
            "distinct_stats",
            "distinct_cum",
            "distinct_hash"
        ]
    );
    assert!(crate::outputs::is_ours(
        crate::outputs::Kind::Lattice,
        &path
    ));
}

#[test]
fn foreign_other_version_and_truncated_files_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let b = built(None);
    let path = written(&b, dir.path());
    let bytes = std::fs::read(&path).expect("read");
    std::fs::write(&path, &bytes[..bytes.len() - 100]).expect("write");
    refused(&path, "cut short");
    std::fs::write(&path, "id,name\n1,x\n").expect("write");
    refused(&path, "it is not a Parquet file");
    let mut old = crate::outputs::LATTICE_BINARY_MAGIC.to_vec();
    old.extend_from_slice(&2u32.to_le_bytes());
    std::fs::write(&path, &old).expect("write");
    refused(&path, "format version 2, this relanon reads 3");
    assert!(crate::outputs::is_ours(
        crate::outputs::Kind::Lattice,
        &path
    ));
    // A Parquet file relanon did not write as a lattice.
    let batch = RecordBatch::try_from_iter([(
        "x",
        Arc::new(arrow::array::UInt32Array::from(vec![1, 2])) as _,
    )])
    .expect("batch");
    let mut buf = Vec::new();
    let mut w = ArrowWriter::try_new(&mut buf, batch.schema(), None).expect("w");
    w.write(&batch).expect("write");
    w.close().expect("close");
    std::fs::write(&path, &buf).expect("write");
    refused(&path, "without the 'relanon.lattice' key");
    assert!(!crate::outputs::is_ours(
        crate::outputs::Kind::Lattice,
        &path
    ));
    // Another format version.
    let props = WriterProperties::builder()
        .set_key_value_metadata(Some(vec![parquet::file::metadata::KeyValue::new(
            crate::outputs::LATTICE_KEY.to_string(),
            "99".to_string(),
        )]))
        .build();
    let mut buf = Vec::new();
    let mut w = ArrowWriter::try_new(&mut buf, batch.schema(), Some(props)).expect("w");
    w.write(&batch).expect("write");
    w.close().expect("close");
    std::fs::write(&path, &buf).expect("write");
    refused(&path, "format version 99, this relanon reads 3");
}

/// `path` rewritten through a generic reader and writer, with `edit` applied to each batch.
fn rewrite(path: &Path, edit: impl Fn(RecordBatch) -> RecordBatch) {
    let file = std::fs::File::open(path).expect("open");
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).expect("a Parquet file");
    let kv = builder
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .cloned();
    let schema = builder.schema().clone();
    let batches: Vec<RecordBatch> = builder
        .build()
        .expect("reader")
        .map(|b| edit(b.expect("batch")))
        .collect();
    let props = WriterProperties::builder()
        .set_key_value_metadata(kv)
        .build();
    let mut buf = Vec::new();
    let mut w = ArrowWriter::try_new(&mut buf, schema, Some(props)).expect("writer");
    for b in &batches {
        w.write(b).expect("write");
    }
    w.close().expect("close");
    std::fs::write(path, buf).expect("write");
}

#[test]
fn a_histogram_that_does_not_match_its_hash_is_reported_when_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let b = built(None);
    let path = written(&b, dir.path());
    let top = b.lattice.nodes() - 1;
    rewrite(&path, |batch| {
        let nodes = batch
            .column_by_name("node")
            .expect("node")
            .as_primitive::<UInt32Type>();
        let hash = batch
            .column_by_name("size_hash")
            .expect("hash")
            .as_primitive::<UInt64Type>();
        let hash: UInt64Array = nodes
            .values()
            .iter()
            .zip(hash.iter())
            .map(|(&n, h)| h.map(|h| if n as usize == top { h ^ 1 } else { h }))
            .collect();
        let i = batch.schema().index_of("size_hash").expect("size_hash");
        let mut columns = batch.columns().to_vec();
        columns[i] = Arc::new(hash);
        RecordBatch::try_new(batch.schema(), columns).expect("batch")
    });
    let back = read(&path).expect("still a lattice");
    let h = back
        .lattice
        .histogram(Measure::Size, top - 1)
        .expect("a histogram");
    assert_eq!(
        Some(h.stats),
        b.lattice.histogram(Measure::Size, top - 1).map(|h| h.stats)
    );
    let source = back.lattice.source.as_ref().expect("read lazily");
    assert_eq!(source.0.damaged(), None, "its neighbour is intact");
    let h = back
        .lattice
        .histogram(Measure::Size, top)
        .expect("a histogram");
    assert_eq!(h.cum, &back.lattice.rows[..], "suppresses every entity");
    let why = source.0.damaged().expect("reported");
    assert!(
        why.contains(&format!("the histogram of node {top} is damaged")),
        "{why}"
    );
}

#[test]
fn a_row_group_that_does_not_decode_is_reported_when_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let b = built(None);
    let path = written(&b, dir.path());
    let mut bytes = std::fs::read(&path).expect("read");
    let file = std::fs::File::open(&path).expect("open");
    let reader = SerializedFileReader::new(file).expect("a Parquet file");
    let last = reader.metadata().row_groups().last().expect("a row group");
    let cum = last
        .columns()
        .iter()
        .find(|c| c.column_path().string().starts_with("size_cum"))
        .expect("size_cum");
    let (at, len) = cum.byte_range();
    for byte in &mut bytes[at as usize..(at + len) as usize] {
        *byte ^= 0x55;
    }
    std::fs::write(&path, &bytes).expect("write");
    let back = read(&path).expect("the footer is intact");
    let top = back.lattice.nodes() - 1;
    let h = back
        .lattice
        .histogram(Measure::Size, top)
        .expect("a histogram");
    assert_eq!(h.cum, &back.lattice.rows[..], "suppresses every entity");
    let why = back.lattice.source.as_ref().and_then(|s| s.0.damaged());
    assert!(why.is_some_and(|w| w.contains("is damaged")));
}
