//! TPC-H as a relanon source warehouse (workload W2): the `tpchgen` crate's official-dbgen
//! compatible generators, through `tpchgen-arrow`, for every table but `partsupp`.
//!
//! The family is `customer <- orders <- lineitem` (the customer is the entity); `nation`,
//! `region`, `part` and `supplier` are dimension tables that hierarchies read with `SELECT`
//! (`sql/tpch.sql`). `partsupp` is left out: nothing in the family points at it.
//!
//! Column types are those relanon reads back from SQLite and from Parquet alike, so a SQLite
//! and a Parquet copy of one scale factor are the same warehouse: strings as `Utf8` (the
//! generator's `Utf8View`), `DECIMAL(15,2)` money and quantities as `Float64` (cents are exact
//! to well below a cent), dates as `YYYY-MM-DD` text (SQLite has no date type; `DATE PARTS`
//! hierarchies parse that text) and 32-bit integers widened to `Int64`.
//!
//! The data are TPC-H's, deterministic for a scale factor (dbgen's fixed seeds), so there is
//! no seed to pass.

use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch};
use arrow::compute::{cast, concat_batches};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::error::ArrowError;
use tpchgen::generators::{
    CustomerGenerator, LineItemGenerator, NationGenerator, OrderGenerator, PartGenerator,
    RegionGenerator, SupplierGenerator,
};
use tpchgen_arrow::{
    CustomerArrow, LineItemArrow, NationArrow, OrderArrow, PartArrow, RegionArrow, SupplierArrow,
};

use crate::warehouse::{ForeignKey, ReleaseSet, ReleaseTable, StreamedTable};

/// Rows per generated batch: large enough that per-batch overhead vanishes, small enough that
/// a batch in both types (generated, converted) is a few megabytes.
const BATCH_ROWS: usize = 64 * 1024;

/// Why a TPC-H warehouse could not be generated.
#[derive(Debug, thiserror::Error)]
pub enum TpchError {
    #[error("the TPC-H scale factor must be a positive number, got {0}: pass e.g. --sf 0.01")]
    ScaleFactor(f64),
    #[error("generating TPC-H table '{table}' failed: {source}")]
    Arrow {
        table: &'static str,
        #[source]
        source: ArrowError,
    },
}

/// The TPC-H warehouse at scale factor `sf` (1.0: 150 000 customers, 1.5 M orders, about
/// 6 M line items): customer, orders, lineitem, nation, region, part and supplier, with
/// TPC-H's primary keys (`lineitem`'s is `(l_orderkey, l_linenumber)`) and foreign keys.
pub fn tpch(sf: f64) -> Result<ReleaseSet, TpchError> {
    let mut tables = Vec::new();
    for streamed in tpch_streams(sf)? {
        let name = TABLES
            .iter()
            .find(|t| t.0 == streamed.name)
            .expect("every stream is one of TABLES");
        let batch = collect(name.0, streamed)?;
        let (table_name, pk, fks) = *name;
        tables.push(ReleaseTable {
            name: table_name.into(),
            batch,
            primary_key: pk.iter().map(|c| c.to_string()).collect(),
            foreign_keys: fks.iter().map(|&(c, t, r)| fk(c, t, r)).collect(),
        });
    }
    Ok(ReleaseSet {
        tables,
        views: vec![],
    })
}

/// Each table's name, primary key and foreign keys `(column, table, column)`, in the order
/// they are generated (a table after those it references).
type TableShape = (
    &'static str,
    &'static [&'static str],
    &'static [(&'static str, &'static str, &'static str)],
);

const TABLES: [TableShape; 7] = [
    ("region", &["r_regionkey"], &[]),
    (
        "nation",
        &["n_nationkey"],
        &[("n_regionkey", "region", "r_regionkey")],
    ),
    ("part", &["p_partkey"], &[]),
    (
        "supplier",
        &["s_suppkey"],
        &[("s_nationkey", "nation", "n_nationkey")],
    ),
    (
        "customer",
        &["c_custkey"],
        &[("c_nationkey", "nation", "n_nationkey")],
    ),
    (
        "orders",
        &["o_orderkey"],
        &[("o_custkey", "customer", "c_custkey")],
    ),
    (
        "lineitem",
        &["l_orderkey", "l_linenumber"],
        &[
            ("l_orderkey", "orders", "o_orderkey"),
            ("l_partkey", "part", "p_partkey"),
            ("l_suppkey", "supplier", "s_suppkey"),
        ],
    ),
];

/// The TPC-H tables at scale factor `sf` as streams of converted batches (see the module
/// doc), generated as they are read: what `generate tpch` writes to Parquet without holding
/// a table (SF 10's line items are 60 M rows).
pub fn tpch_streams(sf: f64) -> Result<Vec<StreamedTable>, TpchError> {
    if !(sf.is_finite() && sf > 0.0) {
        return Err(TpchError::ScaleFactor(sf));
    }
    Ok(vec![
        stream(
            "region",
            RegionArrow::schema_ref(),
            RegionArrow::new(RegionGenerator::new(sf, 1, 1)).with_batch_size(BATCH_ROWS),
        ),
        stream(
            "nation",
            NationArrow::schema_ref(),
            NationArrow::new(NationGenerator::new(sf, 1, 1)).with_batch_size(BATCH_ROWS),
        ),
        stream(
            "part",
            PartArrow::schema_ref(),
            PartArrow::new(PartGenerator::new(sf, 1, 1)).with_batch_size(BATCH_ROWS),
        ),
        stream(
            "supplier",
            SupplierArrow::schema_ref(),
            SupplierArrow::new(SupplierGenerator::new(sf, 1, 1)).with_batch_size(BATCH_ROWS),
        ),
        stream(
            "customer",
            CustomerArrow::schema_ref(),
            CustomerArrow::new(CustomerGenerator::new(sf, 1, 1)).with_batch_size(BATCH_ROWS),
        ),
        stream(
            "orders",
            OrderArrow::schema_ref(),
            OrderArrow::new(OrderGenerator::new(sf, 1, 1)).with_batch_size(BATCH_ROWS),
        ),
        stream(
            "lineitem",
            LineItemArrow::schema_ref(),
            LineItemArrow::new(LineItemGenerator::new(sf, 1, 1)).with_batch_size(BATCH_ROWS),
        ),
    ])
}

/// One generator's batches, each converted as it comes.
fn stream(
    name: &'static str,
    generated: SchemaRef,
    batches: impl Iterator<Item = Result<RecordBatch, ArrowError>> + 'static,
) -> StreamedTable {
    let schema = converted_schema(&generated);
    let converted = Arc::clone(&schema);
    StreamedTable {
        name: name.into(),
        schema,
        batches: Box::new(batches.map(move |b| b.and_then(|b| convert(&converted, &b)))),
    }
}

fn fk(column: &str, ref_table: &str, ref_column: &str) -> ForeignKey {
    ForeignKey {
        columns: vec![column.into()],
        ref_table: ref_table.into(),
        ref_columns: vec![ref_column.into()],
    }
}

/// Every batch of a stream concatenated into one batch of its schema.
fn collect(name: &'static str, streamed: StreamedTable) -> Result<RecordBatch, TpchError> {
    let wrap = |source| TpchError::Arrow {
        table: name,
        source,
    };
    let batches = streamed
        .batches
        .collect::<Result<Vec<_>, _>>()
        .map_err(wrap)?;
    concat_batches(&streamed.schema, &batches).map_err(wrap)
}

/// The type relanon keeps for a generated column type (see the module doc).
fn plain_type(generated: &DataType) -> DataType {
    match generated {
        DataType::Utf8View | DataType::LargeUtf8 | DataType::Date32 => DataType::Utf8,
        DataType::Decimal128(_, _) => DataType::Float64,
        DataType::Int8 | DataType::Int16 | DataType::Int32 => DataType::Int64,
        other => other.clone(),
    }
}

fn converted_schema(generated: &Schema) -> SchemaRef {
    Arc::new(Schema::new(
        generated
            .fields()
            .iter()
            .map(|f| Field::new(f.name(), plain_type(f.data_type()), f.is_nullable()))
            .collect::<Vec<_>>(),
    ))
}

fn convert(schema: &SchemaRef, batch: &RecordBatch) -> Result<RecordBatch, ArrowError> {
    let columns = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(c, f)| cast(c, f.data_type()))
        .collect::<Result<Vec<ArrayRef>, _>>()?;
    RecordBatch::try_new(Arc::clone(schema), columns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{AsArray, Float64Array};

    fn find<'a>(set: &'a ReleaseSet, name: &str) -> &'a RecordBatch {
        &set.tables
            .iter()
            .find(|t| t.name == name)
            .expect("every TPC-H table is generated")
            .batch
    }

    #[test]
    fn scale_factor_sets_the_cardinalities() {
        let set = tpch(0.001).expect("generate");
        assert_eq!(find(&set, "region").num_rows(), 5);
        assert_eq!(find(&set, "nation").num_rows(), 25);
        assert_eq!(find(&set, "customer").num_rows(), 150);
        assert_eq!(find(&set, "orders").num_rows(), 1500);
        assert_eq!(find(&set, "supplier").num_rows(), 10);
        assert_eq!(find(&set, "part").num_rows(), 200);
        let lines = find(&set, "lineitem").num_rows();
        assert!((1500..=7 * 1500).contains(&lines), "{lines} line items");
    }

    #[test]
    fn columns_have_the_types_relanon_reads_back() {
        let set = tpch(0.001).expect("generate");
        for t in &set.tables {
            for f in t.batch.schema().fields() {
                assert!(
                    matches!(
                        f.data_type(),
                        DataType::Utf8 | DataType::Int64 | DataType::Float64
                    ),
                    "{}.{} is {}",
                    t.name,
                    f.name(),
                    f.data_type()
                );
            }
        }
        let orders = find(&set, "orders");
        let dates = orders
            .column_by_name("o_orderdate")
            .expect("o_orderdate")
            .as_string::<i32>();
        assert!(dates
            .iter()
            .flatten()
            .all(|d| d.len() == 10 && d.starts_with("199")));
        let prices = orders
            .column_by_name("o_totalprice")
            .expect("o_totalprice")
            .as_any()
            .downcast_ref::<Float64Array>()
            .expect("prices are Float64");
        // Cents survive the conversion from DECIMAL(15,2).
        assert!(prices
            .iter()
            .flatten()
            .all(|p| ((p * 100.0).round() - p * 100.0).abs() < 1e-6 && p > 0.0));
    }

    #[test]
    fn a_bad_scale_factor_is_refused() {
        assert!(matches!(tpch(0.0), Err(TpchError::ScaleFactor(_))));
        assert!(matches!(tpch(f64::NAN), Err(TpchError::ScaleFactor(_))));
    }
}
