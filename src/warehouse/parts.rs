//! A release written a piece at a time, for a run larger than memory: each piece's tables
//! go as Parquet parts into a hidden directory beside the target (listed in the run's
//! manifest, so a killed run's parts are removed by the next), and each table is then read
//! back whole in key order, some integer columns mapped through lookup tables on the way,
//! and written into the staged target a batch at a time. The sort spills to that directory
//! past a memory limit.
//!
//! Knows tables, columns and integers, nothing of entities or shards.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, Int64Array};
use arrow::datatypes::{DataType, SchemaRef};
use arrow::record_batch::RecordBatch;
use datafusion::execution::memory_pool::FairSpillPool;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::logical_expr::{create_udf, ColumnarValue, ScalarUDF, Volatility};
use datafusion::physical_plan::SendableRecordBatchStream;
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use futures::StreamExt;

use super::paths::{remove_path, temp_sibling, write_err};
use super::write::parquet_writer;
use super::{one_line, quote_ident, WarehouseError};

/// An integer column mapped through a lookup table on its way out: a value `v` becomes
/// `to[v - 1]`; NULL stays NULL.
#[derive(Debug, Clone)]
pub struct Remap {
    pub column: String,
    pub to: Arc<Vec<i64>>,
}

/// The parts of a release being written a piece at a time; removed when dropped.
pub struct Parts {
    dir: PathBuf,
    /// Table names in the order first written; a table's parts live in a directory named
    /// by its position (a table's name may hold any character).
    tables: Vec<String>,
    written: usize,
}

impl Parts {
    /// A hidden, empty directory beside `target` for the parts.
    pub fn create(target: &Path) -> Result<Parts, WarehouseError> {
        let dir = temp_sibling(target, "parts")?;
        super::staging::create_tracked(&dir, |d| fs::create_dir(d))
            .map_err(|e| write_err(&dir, e))?;
        Ok(Parts {
            dir,
            tables: Vec::new(),
            written: 0,
        })
    }

    fn table_dir(&self, i: usize) -> PathBuf {
        self.dir.join(format!("t{i}"))
    }

    /// Writes `batch` as one more part of `table`.
    pub fn write(&mut self, table: &str, batch: &RecordBatch) -> Result<(), WarehouseError> {
        let i = match self.tables.iter().position(|t| t == table) {
            Some(i) => i,
            None => {
                self.tables.push(table.to_string());
                let dir = self.table_dir(self.tables.len() - 1);
                fs::create_dir(&dir).map_err(|e| write_err(&dir, e))?;
                self.tables.len() - 1
            }
        };
        let path = self
            .table_dir(i)
            .join(format!("{:06}.parquet", self.written));
        self.written += 1;
        let err = |e: &dyn std::fmt::Display| write_err(&path, e);
        let mut writer = parquet_writer(&path, batch.schema())?;
        writer.write(batch).map_err(|e| err(&e))?;
        writer.close().map_err(|e| err(&e))?;
        Ok(())
    }

    /// Every part of `table`, as one stream sorted by `order` (ascending, NULLs first) after
    /// `remaps` rewrote their columns; `memory` bytes bound the sort, which spills beyond.
    /// A table no part was written for is `None`.
    pub async fn merged(
        &self,
        table: &str,
        remaps: &[Remap],
        order: &[String],
        memory: usize,
    ) -> Result<Option<SendableRecordBatchStream>, WarehouseError> {
        let Some(i) = self.tables.iter().position(|t| t == table) else {
            return Ok(None);
        };
        let ctx = self.session(memory)?;
        let dir = self.table_dir(i);
        let failed = |e: &dyn std::fmt::Display| {
            WarehouseError::Message(format!(
                "cannot read back the parts of table '{table}' written in '{}': {}",
                dir.display(),
                one_line(e)
            ))
        };
        ctx.register_parquet(
            "parts",
            &format!("{}/", dir.display()),
            ParquetReadOptions::default(),
        )
        .await
        .map_err(|e| failed(&e))?;
        let schema = ctx
            .table("parts")
            .await
            .map_err(|e| failed(&e))?
            .schema()
            .as_arrow()
            .clone();
        let mut select = Vec::new();
        for f in schema.fields() {
            let c = quote_ident(f.name());
            match remaps.iter().position(|r| r.column == *f.name()) {
                Some(m) => {
                    ctx.register_udf(remap_udf(&format!("remap_{m}"), remaps[m].to.clone()));
                    select.push(format!("remap_{m}(CAST({c} AS BIGINT)) AS {c}"));
                }
                None => select.push(c),
            }
        }
        let by: Vec<String> = order
            .iter()
            .filter(|c| schema.field_with_name(c).is_ok())
            .map(|c| format!("{} ASC NULLS FIRST", quote_ident(c)))
            .collect();
        let order_by = if by.is_empty() {
            String::new()
        } else {
            format!(" ORDER BY {}", by.join(", "))
        };
        let sql = format!("SELECT {} FROM parts{order_by}", select.join(", "));
        let frame = ctx.sql(&sql).await.map_err(|e| failed(&e))?;
        Ok(Some(frame.execute_stream().await.map_err(|e| failed(&e))?))
    }

    /// A session of one partition (one sorted stream, no merge of partitions to hold)
    /// whose sorts spill into the parts directory past `memory` bytes.
    fn session(&self, memory: usize) -> Result<SessionContext, WarehouseError> {
        let runtime = RuntimeEnvBuilder::new()
            .with_memory_pool(Arc::new(FairSpillPool::new(memory)))
            .with_temp_file_path(self.dir.clone())
            .build_arc()
            .map_err(|e| WarehouseError::Message(one_line(e)))?;
        let base = super::session(1);
        Ok(SessionContext::new_with_config_rt(
            base.copied_config(),
            runtime,
        ))
    }
}

impl Drop for Parts {
    fn drop(&mut self) {
        let _ = remove_path(&self.dir);
        super::staging::untrack(&self.dir);
    }
}

/// `name(v)`: `to[v - 1]`, NULL for NULL (and for a value outside the table, which no
/// caller writes: a key out of range is a bug the verifier would then report).
fn remap_udf(name: &str, to: Arc<Vec<i64>>) -> ScalarUDF {
    let fun = move |args: &[ColumnarValue]| -> datafusion::error::Result<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(args)?;
        let values = arrays
            .first()
            .and_then(|a| a.as_any().downcast_ref::<Int64Array>())
            .ok_or_else(|| {
                datafusion::error::DataFusionError::Internal(
                    "a remapped column is not Int64".into(),
                )
            })?;
        let out: Int64Array = values
            .iter()
            .map(|v| {
                v.and_then(|v| usize::try_from(v - 1).ok())
                    .and_then(|i| to.get(i).copied())
            })
            .collect();
        Ok(ColumnarValue::Array(Arc::new(out) as ArrayRef))
    };
    create_udf(
        name,
        vec![DataType::Int64],
        DataType::Int64,
        Volatility::Immutable,
        Arc::new(fun),
    )
}

/// Writes `stream` as table `name` into the staged Parquet directory `dir`, a batch at a
/// time, under `schema` (the stream's fields as the table declares them: a Parquet part read
/// back has every field nullable).
pub async fn write_stream(
    dir: &Path,
    name: &str,
    schema: SchemaRef,
    mut stream: SendableRecordBatchStream,
) -> Result<(), WarehouseError> {
    let path = dir.join(format!("{name}.parquet"));
    let err = |e: &dyn std::fmt::Display| write_err(&path, e);
    let mut writer = parquet_writer(&path, schema.clone())?;
    while let Some(batch) = stream.next().await {
        let batch = batch
            .and_then(|b| Ok(RecordBatch::try_new(schema.clone(), b.columns().to_vec())?))
            .map_err(|e| {
                WarehouseError::Message(format!(
                    "cannot produce the rows of table '{name}': {}",
                    one_line(e)
                ))
            })?;
        writer.write(&batch).map_err(|e| err(&e))?;
    }
    let file = writer.into_inner().map_err(|e| err(&e))?;
    file.sync_all().map_err(|e| err(&e))?;
    Ok(())
}

/// Collects `stream` into one batch (a SQLite target is written whole).
pub async fn collect_stream(
    name: &str,
    stream: SendableRecordBatchStream,
) -> Result<RecordBatch, WarehouseError> {
    let schema = stream.schema();
    let batches: Vec<RecordBatch> = datafusion::physical_plan::common::collect(stream)
        .await
        .map_err(|e| {
            WarehouseError::Message(format!(
                "cannot produce the rows of table '{name}': {}",
                one_line(e)
            ))
        })?;
    super::concat_owned(&schema, batches).map_err(|e| WarehouseError::Message(one_line(e)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::StringArray;
    use arrow::datatypes::{Field, Schema};

    fn batch(ids: &[i64], parents: &[Option<i64>], names: &[&str]) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("parent", DataType::Int64, true),
            Field::new("name", DataType::Utf8, false),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from(ids.to_vec())),
                Arc::new(Int64Array::from(parents.to_vec())),
                Arc::new(StringArray::from(names.to_vec())),
            ],
        )
        .expect("a batch")
    }

    /// Two parts read back as one table: keys and FKs mapped through their lookup tables,
    /// rows in the mapped key's order, NULL kept; the directory goes with the handle.
    #[tokio::test]
    async fn parts_read_back_as_one_table_mapped_and_in_key_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("release");
        let mut parts = Parts::create(&target).expect("parts");
        parts
            .write(
                "Order Details",
                &batch(&[1, 2], &[Some(1), None], &["a", "b"]),
            )
            .expect("part 1");
        parts
            .write("Order Details", &batch(&[3], &[Some(2)], &["c"]))
            .expect("part 2");
        let remaps = vec![
            Remap {
                column: "id".into(),
                to: Arc::new(vec![3, 1, 2]),
            },
            Remap {
                column: "parent".into(),
                to: Arc::new(vec![20, 10]),
            },
        ];
        let stream = parts
            .merged("Order Details", &remaps, &["id".to_string()], 64 << 20)
            .await
            .expect("merged")
            .expect("written");
        let out = collect_stream("Order Details", stream).await.expect("rows");
        let col = |i: usize| {
            out.column(i)
                .as_any()
                .downcast_ref::<Int64Array>()
                .expect("Int64")
                .iter()
                .collect::<Vec<_>>()
        };
        assert_eq!(col(0), vec![Some(1), Some(2), Some(3)]);
        assert_eq!(col(1), vec![None, Some(10), Some(20)]);
        let names = out
            .column(2)
            .as_any()
            .downcast_ref::<StringArray>()
            .expect("Utf8");
        assert_eq!(
            names.iter().collect::<Vec<_>>(),
            vec![Some("b"), Some("c"), Some("a")]
        );
        assert!(parts
            .merged("other", &[], &[], 64 << 20)
            .await
            .expect("no error")
            .is_none());
        let kept = parts.dir.clone();
        assert!(kept.exists());
        drop(parts);
        assert!(!kept.exists(), "the parts go with their handle");
    }
}
