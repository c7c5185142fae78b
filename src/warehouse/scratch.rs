//! Scratch tables: in-memory tables a phase joins or queries with SQL, gone when it is done.
//! Every table relanon registers outside the source's own is made here, so no other module
//! touches a session's catalog, and none outlives its use.
//!
//! - [`Warehouse::temporary`]: a table in the warehouse's own session, beside the source
//!   tables it is joined with (the forest's key tables); the guard removes it when dropped,
//!   also when the phase fails halfway.
//! - [`Warehouse::files_table`]: Parquet files another step wrote (a cluster's shard
//!   assignment), as a table of that session, with the same guard.
//! - [`Warehouse::narrow`]: a source table read from now on from the Parquet files of one
//!   directory (a piece of it a cluster wrote, say one shard's rows), for a warehouse opened
//!   for one task.
//! - [`Scratch`]: a session of its own (the utility queries' and the attack's fact
//!   evaluation), with [`super::session`]'s settings; its tables go with it.
//!
//! Errors are DataFusion's own, so each caller words them as before (its message says which
//! query of which phase failed).

use std::path::Path;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use datafusion::common::TableReference;
use datafusion::datasource::MemTable;
use datafusion::error::Result;
use datafusion::logical_expr::ScalarUDF;
use datafusion::prelude::SessionContext;

use super::Warehouse;

/// A table registered in a warehouse's session until this guard drops.
pub struct Temporary<'w> {
    ctx: &'w SessionContext,
    name: String,
}

impl Drop for Temporary<'_> {
    fn drop(&mut self) {
        // Nothing to report: a table already gone is what dropping asks for.
        let _ = self.ctx.deregister_table(self.name.as_str());
    }
}

impl Warehouse {
    /// Registers `batch` as table `name` in the warehouse's session until the returned guard
    /// drops.
    pub fn temporary(&self, name: &str, batch: RecordBatch) -> Result<Temporary<'_>> {
        let ctx = self.context();
        let table = MemTable::try_new(batch.schema(), vec![vec![batch]])?;
        ctx.register_table(name, Arc::new(table))?;
        Ok(Temporary {
            ctx,
            name: name.to_string(),
        })
    }

    /// Registers the `.parquet` files of directory `dir` (columns `schema`) as table `name`
    /// in the warehouse's session until the returned guard drops.
    pub fn files_table(&self, name: &str, dir: &Path, schema: SchemaRef) -> Result<Temporary<'_>> {
        let ctx = self.context();
        let table = super::directory_table(ctx, &schema, dir)?;
        ctx.register_table(TableReference::bare(name.to_string()), table)?;
        Ok(Temporary {
            ctx,
            name: name.to_string(),
        })
    }

    /// Source table `table` read from now on from the `.parquet` files of directory `dir`
    /// alone, in the table's own columns and types; without the directory, the table has no
    /// rows. For the rest of this warehouse's life: a warehouse opened for one task whose
    /// rows of `table` another step already cut out (a shard's, written by a cluster), so
    /// that the task reads them and not the whole table.
    pub fn narrow(&self, table: &str, dir: &Path) -> Result<()> {
        let i = self
            .resolve_table(table)
            .map_err(|e| datafusion::error::DataFusionError::Plan(e.to_string()))?;
        let name = self.tables[i].name.clone();
        let provider = super::directory_table(self.context(), &self.loaded[i].0, dir)?;
        let name = TableReference::bare(name);
        self.context().deregister_table(name.clone())?;
        self.context().register_table(name, provider)?;
        Ok(())
    }
}

/// A session of in-memory tables, queried with SQL. Clones share the session (a query may
/// run as a task of its own); the tables go when the last clone does.
#[derive(Clone)]
pub struct Scratch {
    ctx: SessionContext,
}

impl Scratch {
    /// An empty session whose plans run on `partitions` partitions.
    pub fn new(partitions: usize) -> Scratch {
        Scratch {
            ctx: super::session(partitions),
        }
    }

    /// Registers `batch` as table `name`: a bare reference, so the name is the table's, not
    /// SQL to parse (`Order Details`, `Customers` keep their spaces and case; queries quote
    /// them).
    pub fn add(&self, name: &str, batch: RecordBatch) -> Result<()> {
        let table = MemTable::try_new(batch.schema(), vec![vec![batch]])?;
        self.ctx
            .register_table(TableReference::bare(name.to_string()), Arc::new(table))?;
        Ok(())
    }

    /// Makes the scalar function `udf` callable in this session's queries.
    pub fn add_function(&self, udf: ScalarUDF) {
        self.ctx.register_udf(udf);
    }

    /// Runs one SQL statement and collects its result.
    pub async fn sql(&self, query: &str) -> Result<Vec<RecordBatch>> {
        self.ctx.sql(query).await?.collect().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, Int64Array};
    use arrow::datatypes::{DataType, Field, Schema};

    fn numbers(values: &[i64]) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)]));
        RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(values.to_vec()))])
            .expect("a batch")
    }

    #[tokio::test]
    async fn a_scratch_table_keeps_its_name_as_written_and_answers_sql() {
        let s = Scratch::new(1);
        s.add("Order Details", numbers(&[1, 2, 3])).expect("added");
        let out = s
            .sql("SELECT SUM(\"n\") AS s FROM \"Order Details\"")
            .await
            .expect("queried");
        let sum = out[0]
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("Int64");
        assert_eq!(sum.value(0), 6);
        assert!(s.sql("SELECT * FROM \"order details\"").await.is_err());
    }

    #[tokio::test]
    async fn a_temporary_table_is_gone_when_its_guard_drops() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("w.sqlite");
        let db = rusqlite::Connection::open(&path).expect("create");
        db.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY); INSERT INTO t VALUES (1);")
            .expect("fill");
        drop(db);
        let wh = Warehouse::open(&path).await.expect("open");
        {
            let _keys = wh.temporary("__keys", numbers(&[1])).expect("registered");
            let joined = wh
                .sql(
                    "SELECT COUNT(*) FROM \"t\" JOIN \"__keys\" ON \"t\".\"id\" = \"__keys\".\"n\"",
                )
                .await
                .expect("joined with the source");
            assert_eq!(joined[0].num_rows(), 1);
        }
        assert!(wh.sql("SELECT * FROM \"__keys\"").await.is_err());
    }
}
