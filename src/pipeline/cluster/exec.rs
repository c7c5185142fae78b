//! The one custom operator a cluster runs: a task per partition of its input, which either
//! anonymizes a shard (`sharded::Task`) on an executor or checks a partition of the staged
//! release (`verify::check_partition`), as its job's first byte says. It sits over a scan of
//! the shards' (or partitions') numbers held in the plan itself (a
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
use super::super::wire::{encode_answer, encode_outcome, outcome_schema, Job, VerifyJob};
use crate::keymap::KeyMap;
use crate::progress::Progress;
use crate::verify::{self, Keys};
use crate::warehouse::Warehouse;

/// A job's first byte: the tasks anonymize shards.
pub(super) const ANONYMIZE: u8 = b'A';
/// A job's first byte: the tasks check partitions of a staged release.
pub(super) const VERIFY: u8 = b'V';

/// The shards' (or partitions') numbers a partition's batches name (in [`SHARD`]): one as a
/// rule (a task is one partition), but a scheduler that merged partitions is served too.
fn numbers(batches: &[RecordBatch]) -> Result<Vec<usize>> {
    let mut shards = Vec::new();
    for batch in batches {
        let numbers = batch
            .column_by_name(SHARD)
            .and_then(|c| c.as_any().downcast_ref::<UInt32Array>())
            .ok_or_else(|| {
                anyhow!("a task came without its number: the cluster runs another build of relanon")
            })?;
        shards.extend(numbers.iter().flatten().map(|s| s as usize));
    }
    shards.sort_unstable();
    shards.dedup();
    Ok(shards)
}

/// Runs the task of each partition of its input (a shard's or a verify partition's number)
/// and emits its outcome ([`encode_outcome`], [`encode_answer`]).
#[derive(Debug)]
pub struct ShardExec {
    /// The kind ([`ANONYMIZE`], [`VERIFY`]) and the encoded [`Job`] or [`VerifyJob`]: what
    /// the codec carries to the executors as it is.
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
            "RelanonShardExec: {} tasks",
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
            run(&job, keys)
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

/// The tasks `job` says, for the numbers `input` reads.
async fn run(job: &[u8], input: SendableRecordBatchStream) -> Result<Vec<RecordBatch>> {
    match job.split_first() {
        Some((&ANONYMIZE, job)) => anonymize(job, input).await,
        Some((&VERIFY, job)) => check(job, input).await,
        _ => Err(anyhow!(
            "a task this build of relanon does not know: run one version of relanon on the client, the scheduler and every executor"
        )),
    }
}

/// The partitions of the staged release whose numbers `parts` reads, checked: each one's
/// answer as batches small enough for one gRPC message each.
async fn check(job: &[u8], parts: SendableRecordBatchStream) -> Result<Vec<RecordBatch>> {
    let job = VerifyJob::decode(job)?;
    let batches: Vec<RecordBatch> = parts.try_collect().await?;
    let progress = Progress::new();
    let (plan, _, wh) = super::super::prepare(&job.request(), &progress)
        .await
        .context("preparing a verify task on an executor (every executor must read the warehouse and the declarations' files at the client's paths)")?;
    let release = Warehouse::open(&job.release).await.with_context(|| {
        format!(
            "a verify task cannot open the staged release '{}': put the target on storage every executor reads at the client's path",
            job.release.display()
        )
    })?;
    let map = read_key_map(&job.key_map)?;
    let shared = std::fs::read(&job.assignment).with_context(|| {
        format!(
            "a verify task cannot read '{}' that the client wrote: every executor must read the cluster's scratch directory at the client's path",
            job.assignment.display()
        )
    })?;
    let mut out = Vec::new();
    for part in numbers(&batches)? {
        let keys = Keys::Map(&map);
        let answer = verify::check_partition(&plan, &wh, &release, keys, &shared, part)
            .await
            .with_context(|| format!("checking partition {} of the release", part + 1))?;
        out.extend(encode_answer(part as u32, &answer)?);
    }
    Ok(out)
}

/// The key map the client wrote for the verify tasks.
fn read_key_map(path: &std::path::Path) -> Result<KeyMap> {
    let file = std::fs::File::open(path).with_context(|| {
        format!(
            "a verify task cannot read the key map '{}' that the client wrote: every executor must read the cluster's scratch directory at the client's path",
            path.display()
        )
    })?;
    serde_json::from_reader(std::io::BufReader::new(file))
        .with_context(|| format!("reading the key map '{}'", path.display()))
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
