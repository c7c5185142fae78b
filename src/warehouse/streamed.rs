//! Tables that hold no rows: a source relanon reads with its own reader (SQLite, CSV) is read
//! again by every scan, a batch at a time, so a warehouse larger than memory can be queried.
//!
//! One reader serves both ways a table is read: DataFusion's scans ([`SourceTable`], its
//! pieces spread over the session's partitions, each partition on a blocking thread of its
//! own) and the scans in source order ([`in_order`], every piece in turn on one thread). A
//! value therefore reads the same in a query and in a scan that numbers rows.

use std::fmt;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::Statistics;
use datafusion::datasource::TableType;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::statistics::StatisticsArgs;
use datafusion::physical_plan::stream::RecordBatchReceiverStreamBuilder;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
    SendableRecordBatchStream,
};

use super::{one_line, WarehouseError};

/// Batches a scan's reader may run ahead of its consumer.
const AHEAD: usize = 2;

/// Reads one table of a source, a piece at a time.
pub(crate) trait Reader: fmt::Debug + Send + Sync {
    /// How many pieces the table is read in; piece after piece is the source's row order.
    fn pieces(&self) -> usize;

    /// The rows of `pieces`, in order, only the columns at `columns` (ascending positions
    /// in the table's schema, at least one), each batch handed to `send`; stops early when
    /// `send` returns false (its consumer is gone).
    fn read(
        &self,
        pieces: Range<usize>,
        columns: &[usize],
        send: &mut dyn FnMut(RecordBatch) -> bool,
    ) -> Result<(), WarehouseError>;

    /// The files the table's rows live in: a change to any of them since the warehouse
    /// opened means two scans may have seen two versions.
    fn files(&self) -> Vec<PathBuf>;
}

/// [`Reader::read`] for any projection: with no column (a `COUNT(*)`), the first column is
/// read and dropped, keeping the row counts.
fn read_projected(
    reader: &dyn Reader,
    pieces: Range<usize>,
    columns: &[usize],
    send: &mut dyn FnMut(RecordBatch) -> bool,
) -> Result<(), WarehouseError> {
    if !columns.is_empty() {
        return reader.read(pieces, columns, send);
    }
    let mut failed = None;
    reader.read(pieces, &[0], &mut |batch| match batch.project(&[]) {
        Ok(empty) => send(empty),
        Err(e) => {
            failed = Some(e);
            false
        }
    })?;
    match failed {
        Some(e) => Err(WarehouseError::Message(format!(
            "cannot count a table's rows: {}",
            one_line(e)
        ))),
        None => Ok(()),
    }
}

/// The columns at `columns` of the whole table, piece after piece, read on a thread of its
/// own a few batches ahead of the consumer; dropping the iterator stops the reader.
pub(crate) fn in_order(
    reader: Arc<dyn Reader>,
    columns: Vec<usize>,
) -> impl Iterator<Item = Result<RecordBatch, WarehouseError>> {
    let (tx, rx) = std::sync::mpsc::sync_channel(AHEAD);
    std::thread::spawn(move || {
        let pieces = 0..reader.pieces();
        let done = read_projected(reader.as_ref(), pieces, &columns, &mut |batch| {
            tx.send(Ok(batch)).is_ok()
        });
        if let Err(e) = done {
            // The consumer may be gone already; then no one needs the error.
            let _ = tx.send(Err(e));
        }
    });
    rx.into_iter()
}

/// A table of a source read by a [`Reader`], for DataFusion.
#[derive(Debug)]
pub(crate) struct SourceTable {
    schema: SchemaRef,
    rows: usize,
    reader: Arc<dyn Reader>,
}

impl SourceTable {
    pub(crate) fn new(schema: SchemaRef, rows: usize, reader: Arc<dyn Reader>) -> SourceTable {
        SourceTable {
            schema,
            rows,
            reader,
        }
    }
}

#[async_trait]
impl TableProvider for SourceTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let columns: Vec<usize> = match projection {
            Some(p) => p.clone(),
            None => (0..self.schema.fields().len()).collect(),
        };
        let schema = Arc::new(self.schema.project(&columns)?);
        let partitions = state
            .config()
            .target_partitions()
            .clamp(1, self.reader.pieces().max(1));
        Ok(Arc::new(SourceScanExec::new(
            schema,
            columns,
            self.rows,
            partitions,
            Arc::clone(&self.reader),
        )))
    }
}

/// The scan of a [`SourceTable`]: partition `p` of `n` reads the `p`-th of `n` runs of
/// consecutive pieces.
#[derive(Debug)]
struct SourceScanExec {
    schema: SchemaRef,
    /// Positions in the table's schema, ascending as DataFusion gives them.
    columns: Vec<usize>,
    rows: usize,
    reader: Arc<dyn Reader>,
    properties: Arc<PlanProperties>,
}

impl SourceScanExec {
    fn new(
        schema: SchemaRef,
        columns: Vec<usize>,
        rows: usize,
        partitions: usize,
        reader: Arc<dyn Reader>,
    ) -> SourceScanExec {
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&schema)),
            Partitioning::UnknownPartitioning(partitions),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        SourceScanExec {
            schema,
            columns,
            rows,
            reader,
            properties,
        }
    }

    fn partitions(&self) -> usize {
        self.properties.partitioning.partition_count()
    }

    /// The pieces partition `p` reads.
    fn pieces_of(&self, p: usize) -> Range<usize> {
        let (pieces, n) = (self.reader.pieces(), self.partitions());
        p * pieces / n..(p + 1) * pieces / n
    }
}

impl DisplayAs for SourceScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "SourceScanExec: {} pieces in {} partitions",
            self.reader.pieces(),
            self.partitions()
        )
    }
}

impl ExecutionPlan for SourceScanExec {
    fn name(&self) -> &str {
        "SourceScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        Vec::new()
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        if children.is_empty() {
            Ok(self)
        } else {
            Err(DataFusionError::Internal(
                "a source scan has no inputs".to_string(),
            ))
        }
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let mut builder = RecordBatchReceiverStreamBuilder::new(Arc::clone(&self.schema), AHEAD);
        let tx = builder.tx();
        let reader = Arc::clone(&self.reader);
        let columns = self.columns.clone();
        let pieces = self.pieces_of(partition);
        builder.spawn_blocking(move || {
            read_projected(reader.as_ref(), pieces, &columns, &mut |batch| {
                tx.blocking_send(Ok(batch)).is_ok()
            })
            .map_err(|e| DataFusionError::External(Box::new(e)))
        });
        Ok(builder.build())
    }

    /// The row count read at open, so that a join builds its hash table on the smaller side
    /// (a shard's keys, not the whole child table).
    fn statistics_from_inputs(
        &self,
        _input_stats: &[Arc<Statistics>],
        args: &StatisticsArgs,
    ) -> DfResult<Arc<Statistics>> {
        let rows = match args.partition() {
            None => Precision::Exact(self.rows),
            Some(p) => {
                let share = self.rows * self.pieces_of(p).len() / self.reader.pieces().max(1);
                Precision::Inexact(share)
            }
        };
        Ok(Arc::new(
            Statistics::new_unknown(&self.schema).with_num_rows(rows),
        ))
    }
}
