//! The one custom operator a cluster runs: anonymize a shard (`sharded::Task`) on an
//! executor. It sits over a scan of the shards' entity keys held in the plan itself (a
//! `DataSourceExec` of memory, one partition per shard, which Ballista's scheduler knows how to
//! hand out a partition at a time, so each shard runs once). The scheduler gives each task a
//! plan cut down to its own partition, which the task then runs as its partition 0: so a
//! shard's number travels in its keys (`shard_files::numbered`), not in the partition's.

use std::fmt;
use std::sync::Arc;

use anyhow::{anyhow, bail, Context, Result};
use arrow::array::{Array, UInt32Array};
use arrow::record_batch::RecordBatch;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
    SendableRecordBatchStream,
};
use futures::TryStreamExt;

use super::super::piece::{Piece, Task};
use super::super::shard_files::SHARD;
use super::super::wire::{encode_outcome, outcome_schema, Job};
use crate::progress::Progress;

/// Each shard's number and its entity keys, from `shard_files::numbered` batches: one shard as a rule
/// (a task is one partition), but a scheduler that merged partitions is served too.
fn unnumbered(batch: RecordBatch) -> Result<Vec<(usize, RecordBatch)>> {
    let last = batch.num_columns().saturating_sub(1);
    if batch.num_columns() == 0 || batch.schema().field(last).name() != SHARD {
        bail!("a shard's keys came without its number: the cluster runs another build of relanon");
    }
    let numbers = batch
        .column(last)
        .as_any()
        .downcast_ref::<UInt32Array>()
        .ok_or_else(|| {
            anyhow!("a shard's number is not a number: the cluster runs another build of relanon")
        })?;
    let keys = batch.project(&(0..last).collect::<Vec<_>>())?;
    let mut shards: Vec<u32> = numbers.values().to_vec();
    shards.sort_unstable();
    shards.dedup();
    shards
        .into_iter()
        .map(|s| {
            let mine = arrow::compute::kernels::cmp::eq(numbers, &UInt32Array::new_scalar(s))?;
            Ok((
                s as usize,
                arrow::compute::filter_record_batch(&keys, &mine)?,
            ))
        })
        .collect()
}

/// Anonymizes the shard of each partition of its input (the shard's entity keys) and emits
/// its outcome ([`encode_outcome`]).
#[derive(Debug)]
pub struct ShardExec {
    /// The encoded [`Job`]: what the codec carries to the executors as it is.
    job: Arc<Vec<u8>>,
    input: Arc<dyn ExecutionPlan>,
    properties: Arc<PlanProperties>,
}

impl ShardExec {
    /// The operator over `input`, one shard per input partition.
    pub fn new(job: Arc<Vec<u8>>, input: Arc<dyn ExecutionPlan>) -> ShardExec {
        let partitions = input.properties().partitioning.partition_count();
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(outcome_schema()),
            Partitioning::UnknownPartitioning(partitions),
            EmissionType::Final,
            Boundedness::Bounded,
        ));
        ShardExec {
            job,
            input,
            properties,
        }
    }

    /// The encoded job, for the codec.
    pub fn job(&self) -> &[u8] {
        &self.job
    }
}

impl DisplayAs for ShardExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "RelanonShardExec: {} shards",
            self.properties.partitioning.partition_count()
        )
    }
}

impl ExecutionPlan for ShardExec {
    fn name(&self) -> &str {
        "RelanonShardExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    /// A shard is anonymized whole where its keys are: the operator asks its input to stay
    /// as it is (no repartitioning between the keys and the operator).
    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![false]
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![true]
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        match <[_; 1]>::try_from(children) {
            Ok([input]) => Ok(Arc::new(ShardExec::new(Arc::clone(&self.job), input))),
            Err(_) => Err(DataFusionError::Internal(
                "a shard's operator has one input, the shards' keys".to_string(),
            )),
        }
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let keys = self.input.execute(partition, context)?;
        let job = Arc::clone(&self.job);
        let outcome = futures::stream::once(async move {
            anonymize(&job, keys)
                .await
                .map(|batches| futures::stream::iter(batches.into_iter().map(Ok)))
                .map_err(|e| DataFusionError::External(format!("{e:#}").into()))
        })
        .try_flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            outcome_schema(),
            outcome,
        )))
    }
}

/// The shards whose numbered entity keys `keys` reads, their outcomes as batches small
/// enough for one gRPC message each.
async fn anonymize(job: &[u8], keys: SendableRecordBatchStream) -> Result<Vec<RecordBatch>> {
    let job = Job::decode(job)?;
    let schema = keys.schema();
    let batches: Vec<RecordBatch> = keys.try_collect().await?;
    let mut outcomes = Vec::new();
    for (shard, keys) in unnumbered(arrow::compute::concat_batches(&schema, &batches)?)? {
        outcomes.extend(anonymize_shard(&job, shard, keys).await?);
    }
    Ok(outcomes)
}

/// Shard `shard` of `job`: prepared from the job's request as the client prepared it, run
/// as `sharded::Task` runs it on one machine.
async fn anonymize_shard(job: &Job, shard: usize, keys: RecordBatch) -> Result<Vec<RecordBatch>> {
    let progress = Progress::new();
    let req = job.request();
    let (plan, mut algorithm, wh) = super::super::prepare(&req, &progress)
        .await
        .with_context(|| format!("preparing shard {} on an executor (every executor must read the warehouse and the declarations' files at the client's paths)", shard + 1))?;
    algorithm.shards = job.shards;
    job.files.narrow(&wh, shard)?;
    let task = Task {
        plan: &plan,
        algorithm: &algorithm,
        wh: &wh,
        global: &job.hierarchies,
        tally: &job.tally,
    };
    let outcome = task
        .run(keys, Piece::Shard(shard, job.shards), &progress)
        .await?
        .ok_or_else(|| anyhow!("shard {} of {} gave no outcome", shard + 1, job.shards))?;
    encode_outcome(shard as u32, outcome)
}
