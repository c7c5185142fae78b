//! The one custom operator a cluster runs: anonymize a shard (`sharded::Task`) on an
//! executor. It sits over a scan of the shards' numbers held in the plan itself (a
//! `DataSourceExec` of memory, one partition of one row per shard, which Ballista's scheduler
//! knows how to hand out a partition at a time, so each shard runs once). The scheduler gives
//! each task a plan cut down to its own partition, which the task then runs as its partition
//! 0: so a shard's number travels in the row, not in the partition's. The shard's entity keys
//! are read from its file of the cut on the shared directory (`ShardFiles::keys`): in the
//! plan, SF 10's 1.5 M keys and numbers (about 18 MB) would pass the 16 MiB Ballista's
//! messages hold by default.

use std::fmt;
use std::sync::Arc;

use anyhow::{anyhow, Context, Result};
use arrow::array::UInt32Array;
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

/// The shards' numbers a partition's batches name (in [`SHARD`]): one shard as a rule (a
/// task is one partition), but a scheduler that merged partitions is served too.
fn numbers(batches: &[RecordBatch]) -> Result<Vec<usize>> {
    let mut shards = Vec::new();
    for batch in batches {
        let numbers = batch
            .column_by_name(SHARD)
            .and_then(|c| c.as_any().downcast_ref::<UInt32Array>())
            .ok_or_else(|| {
                anyhow!(
                    "a shard came without its number: the cluster runs another build of relanon"
                )
            })?;
        shards.extend(numbers.iter().flatten().map(|s| s as usize));
    }
    shards.sort_unstable();
    shards.dedup();
    Ok(shards)
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

/// The shards whose numbers `shards` reads, their outcomes as batches small enough for one
/// gRPC message each. Each shard's entity keys are read from its file of the cut.
async fn anonymize(job: &[u8], shards: SendableRecordBatchStream) -> Result<Vec<RecordBatch>> {
    let job = Job::decode(job)?;
    let batches: Vec<RecordBatch> = shards.try_collect().await?;
    let mut outcomes = Vec::new();
    for shard in numbers(&batches)? {
        let keys = job.files.keys(shard)?;
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
