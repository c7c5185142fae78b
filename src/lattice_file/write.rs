//! Lays an annotated lattice out as Parquet: one row per node, in row groups of
//! [`super::group_nodes`] nodes, [`super::Meta`] and the format version in the key-value
//! metadata.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanArray, ListBuilder, RecordBatch, UInt16Builder, UInt32Array, UInt32Builder,
    UInt64Array, UInt64Builder,
};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};

use super::{columns, group_nodes, node_hash, Built, LatticeFileError, META_KEY, VERSION};
use crate::algo::kernel::annotate::{Annotated, Measure};
use crate::outputs::LATTICE_KEY;

/// The measures a lattice holds, with their column prefix.
fn measures(a: &Annotated) -> Vec<(Measure, &'static str)> {
    let mut out = vec![(Measure::Size, columns::MEASURES[0])];
    if a.distinct.is_some() {
        out.push((Measure::Distinct, columns::MEASURES[1]));
    }
    out
}

/// The file's columns (see [`columns`]).
pub(super) fn schema(distinct: bool) -> SchemaRef {
    let list = |item: DataType| DataType::List(Arc::new(Field::new_list_field(item, true)));
    let mut fields = vec![
        Field::new(columns::NODE, DataType::UInt32, false),
        Field::new(columns::LEVELS, list(DataType::UInt16), false),
        Field::new(columns::COMPUTED, DataType::Boolean, false),
    ];
    let count = if distinct { 2 } else { 1 };
    for m in &columns::MEASURES[..count] {
        fields.push(Field::new(
            columns::of(m, columns::CLASSES),
            DataType::UInt32,
            true,
        ));
        fields.push(Field::new(
            columns::of(m, columns::STATS),
            list(DataType::UInt32),
            true,
        ));
        fields.push(Field::new(
            columns::of(m, columns::CUM),
            list(DataType::UInt64),
            true,
        ));
        fields.push(Field::new(
            columns::of(m, columns::HASH),
            DataType::UInt64,
            true,
        ));
    }
    Arc::new(Schema::new(fields))
}

/// The Parquet file of `built`, whole.
pub fn encode(built: &Built) -> Result<Vec<u8>, LatticeFileError> {
    let a = &built.lattice;
    let bug = |e: &dyn std::fmt::Display| LatticeFileError::Encode(e.to_string());
    let meta = serde_json::to_string(&built.meta).map_err(|e| bug(&e))?;
    let group = group_nodes(a.nodes());
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        // Statistics would only fatten the footer every open reads.
        .set_statistics_enabled(EnabledStatistics::None)
        .set_max_row_group_row_count(Some(group))
        .set_created_by(format!("relanon {}", env!("CARGO_PKG_VERSION")))
        .set_key_value_metadata(Some(vec![
            KeyValue::new(LATTICE_KEY.to_string(), VERSION.to_string()),
            KeyValue::new(META_KEY.to_string(), meta),
        ]))
        .build();
    let schema = schema(a.distinct.is_some());
    let mut writer =
        ArrowWriter::try_new(Vec::new(), schema.clone(), Some(props)).map_err(|e| bug(&e))?;
    let mut from = 0;
    while from < a.nodes() {
        let to = (from + group).min(a.nodes());
        let batch = block(a, schema.clone(), from..to).map_err(|e| bug(&e))?;
        writer.write(&batch).map_err(|e| bug(&e))?;
        writer.flush().map_err(|e| bug(&e))?;
        from = to;
    }
    writer.into_inner().map_err(|e| bug(&e))
}

/// The rows of nodes `range`.
fn block(
    a: &Annotated,
    schema: SchemaRef,
    range: std::ops::Range<usize>,
) -> Result<RecordBatch, arrow::error::ArrowError> {
    let mut levels = ListBuilder::new(UInt16Builder::new());
    for i in range.clone() {
        levels.append_value(a.levels(i).into_iter().map(Some));
    }
    let mut arrays: Vec<ArrayRef> = vec![
        Arc::new(UInt32Array::from_iter_values(
            range.clone().map(|i| i as u32),
        )),
        Arc::new(levels.finish()),
        Arc::new(BooleanArray::from_iter(
            range.clone().map(|i| Some(a.is_computed(i))),
        )),
    ];
    for (measure, _) in measures(a) {
        let mut stats = ListBuilder::new(UInt32Builder::new());
        let mut cum = ListBuilder::new(UInt64Builder::new());
        let mut classes = Vec::with_capacity(range.len());
        let mut hashes = Vec::with_capacity(range.len());
        for i in range.clone() {
            match a.histogram(measure, i) {
                Some(h) => {
                    stats.append_value(h.stats.iter().copied().map(Some));
                    cum.append_value(h.cum.iter().copied().map(Some));
                    classes.push(Some(h.classes));
                    hashes.push(Some(node_hash(h)));
                }
                None => {
                    stats.append_null();
                    cum.append_null();
                    classes.push(None);
                    hashes.push(None);
                }
            }
        }
        arrays.push(Arc::new(UInt32Array::from(classes)));
        arrays.push(Arc::new(stats.finish()));
        arrays.push(Arc::new(cum.finish()));
        arrays.push(Arc::new(UInt64Array::from(hashes)));
    }
    RecordBatch::try_new(schema, arrays)
}
