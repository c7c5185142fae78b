//! A run's shards anonymized on an Apache DataFusion Ballista cluster (`--features
//! distributed`, `anonymize --cluster`): the client has the cluster run the family's outline
//! (`forest::outline`, through [`OnCluster`]) and the hierarchies' queries, cuts the shards as
//! on one machine (`sharded`), then submits one physical plan, the
//! shards' numbers under relanon's operator ([`exec::ShardExec`]), and takes the outcomes
//! back in shard order into the same whole. The rest and the staged release are the
//! one-machine path's, so the release is the same byte for byte; verify checks it a
//! partition a task on the executors ([`OnExecutors`]: the same operator, verify's own
//! checks), and the client commits it.
//!
//! `relanon cluster scheduler` and `relanon cluster executor` are Ballista's processes with
//! relanon's codec ([`RelanonCodec`]) compiled in; a stock Ballista process cannot run the
//! operator. `--cluster standalone` starts a scheduler and an executor inside this process.

mod codec;
mod exec;
pub(super) mod split;
mod verify;

pub(in crate::pipeline) use verify::OnExecutors;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use arrow::record_batch::RecordBatch;
use ballista_core::config::BallistaConfig;
use ballista_core::execution_plans::execute_physical_plan;
use ballista_core::extension::SessionConfigExt;
use ballista_core::serde::protobuf::scheduler_grpc_client::SchedulerGrpcClient;
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::SessionConfig;
use datafusion_proto::protobuf::PhysicalPlanNode;
use futures::StreamExt;

pub use codec::RelanonCodec;

use super::piece::Outcome;
use super::shard_files::SHARD;
use super::wire::{task_error, Collector};
use crate::algo::OptionSpec;
use crate::warehouse::{query_error, Engine, Streamed, Warehouse, WarehouseError};

/// How long a scheduler has to answer before the run gives up on it.
const ANSWER: Duration = Duration::from_secs(5);

/// How long an executor waits for its scheduler to answer: a cluster's processes start in
/// any order (a compose file starts them together), a client's run does not wait.
const WAIT: Duration = Duration::from_secs(60);

/// Where a run's shards are anonymized.
#[derive(Debug, Clone, PartialEq)]
pub enum Cluster {
    /// A running scheduler, `http://HOST:PORT`.
    Remote(String),
    /// A scheduler and an executor started inside this process.
    Standalone,
}

impl Cluster {
    /// `--cluster df://HOST:PORT` (or `http://`), or `standalone`.
    pub fn parse(url: &str) -> Result<Cluster> {
        if url == "standalone" {
            return Ok(Cluster::Standalone);
        }
        let rest = url
            .strip_prefix("df://")
            .or_else(|| url.strip_prefix("http://"))
            .ok_or_else(|| {
                anyhow!("--cluster {url}: give the scheduler as df://HOST:PORT (or 'standalone' for one in this process)")
            })?;
        match rest.rsplit_once(':') {
            Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => {
                Ok(Cluster::Remote(format!("http://{host}:{port}")))
            }
            _ => bail!(
                "--cluster {url}: give the scheduler as df://HOST:PORT, say df://127.0.0.1:50050"
            ),
        }
    }
}

/// The session every relanon cluster process and client shares: Ballista's, with
/// relanon's codec.
fn config() -> SessionConfig {
    SessionConfig::new_with_ballista()
        .with_ballista_physical_extension_codec(Arc::new(RelanonCodec::default()))
}

/// The URL of `cluster`'s scheduler, once it answers; a standalone one is started first.
pub(super) async fn reach(cluster: &Cluster) -> Result<String> {
    match cluster {
        Cluster::Remote(url) => {
            answers(url).await?;
            Ok(url.clone())
        }
        Cluster::Standalone => standalone().await,
    }
}

/// The cluster at `url` as the place the family's outline is queried: each query planned
/// here over the warehouse's tables (which every executor reads at the same paths) and run
/// there, its result streamed back.
pub(in crate::pipeline) struct OnCluster<'a> {
    pub wh: &'a Warehouse,
    pub url: &'a str,
}

impl Engine for OnCluster<'_> {
    fn stream<'a>(&'a self, query: &'a str) -> Streamed<'a> {
        Box::pin(async move {
            let plan = split::plan_write(self.wh, query)
                .await
                .map_err(|e| query_error(query, e))?;
            submit(self.url, plan).await.map_err(|e| {
                WarehouseError::Message(format!(
                    "the cluster at {} running a query of the family's outline (every executor must read the warehouse at the client's paths): {}",
                    self.url,
                    task_error(&e)
                ))
            })
        })
    }
}

/// Anonymizes each of the `n` shards of `job` on the cluster at `url` (each task reads its
/// shard's keys from the cut `job` names) and hands the outcomes to `each` in shard order;
/// `options` and `table` are the algorithm's options and their table.
pub(super) async fn run_shards(
    url: &str,
    job: Vec<u8>,
    n: usize,
    options: &crate::algo::Options,
    table: &[OptionSpec],
    mut each: impl FnMut(usize, Outcome) -> Result<()>,
) -> Result<()> {
    if n == 0 {
        bail!("a run on a cluster needs at least one shard");
    }
    let plan = tasks(exec::ANONYMIZE, job, n)?;
    let mut stream = submit(url, plan).await.map_err(|e| {
        anyhow!(
            "the shards failed on the cluster at {url}: {}",
            task_error(&e)
        )
    })?;
    let mut collector = Collector::new(table, options.seed);
    while let Some(batch) = stream.next().await {
        let batch = batch
            .map_err(|e| anyhow!("a shard failed on the cluster at {url}: {}", task_error(&e)))?;
        for (i, outcome) in collector.add(&batch)? {
            each(i as usize, outcome)?;
        }
    }
    if collector.done() as usize != n {
        bail!(
            "the cluster at {url} returned {} of {n} shards: nothing was written",
            collector.done()
        );
    }
    Ok(())
}

/// relanon's operator over `n` tasks of `job` (of `kind`, [`exec::ANONYMIZE`] or
/// [`exec::VERIFY`]): a partition of one row per task, holding its number.
fn tasks(kind: u8, job: Vec<u8>, n: usize) -> Result<Arc<exec::ShardExec>> {
    let schema = Arc::new(arrow::datatypes::Schema::new(vec![
        arrow::datatypes::Field::new(SHARD, arrow::datatypes::DataType::UInt32, false),
    ]));
    let partitions: Vec<Vec<RecordBatch>> = (0..n as u32)
        .map(|s| {
            RecordBatch::try_new(
                Arc::clone(&schema),
                vec![Arc::new(arrow::array::UInt32Array::from(vec![s]))],
            )
            .map(|b| vec![b])
        })
        .collect::<Result<_, _>>()?;
    let scan = MemorySourceConfig::try_new_exec(&partitions, schema, None)?;
    let mut tagged = Vec::with_capacity(job.len() + 1);
    tagged.push(kind);
    tagged.extend(job);
    Ok(Arc::new(exec::ShardExec::new(Arc::new(tagged), scan)))
}

/// `plan` submitted to the scheduler at `url` in this run's session: its output as the job
/// gives it.
async fn submit(
    url: &str,
    plan: Arc<dyn datafusion::physical_plan::ExecutionPlan>,
) -> datafusion::error::Result<datafusion::physical_plan::SendableRecordBatchStream> {
    let config = config();
    let codec = config.ballista_physical_extension_codec();
    let session = format!("relanon-{}", std::process::id());
    execute_physical_plan::<PhysicalPlanNode>(
        url.to_string(),
        &BallistaConfig::default(),
        plan,
        codec.as_ref(),
        session,
        config,
    )
    .await
}

/// Whether a scheduler answers at `url` within [`ANSWER`].
async fn answers(url: &str) -> Result<()> {
    match tokio::time::timeout(ANSWER, SchedulerGrpcClient::connect(url.to_string())).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => bail!("no relanon cluster scheduler answers at {url} ({e}): start one with `relanon cluster scheduler`, or check the host and port"),
        Err(_) => bail!("no relanon cluster scheduler answered at {url} within {} s: start one with `relanon cluster scheduler`, or check the host and port", ANSWER.as_secs()),
    }
}

/// [`answers`], asked again each second for [`WAIT`].
async fn waits_for(url: &str) -> Result<()> {
    let start = std::time::Instant::now();
    loop {
        match answers(url).await {
            Ok(()) => return Ok(()),
            Err(_) if start.elapsed() < WAIT => {
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            Err(e) => bail!("{e} (waited {} s)", WAIT.as_secs()),
        }
    }
}

/// A scheduler and an executor inside this process, with relanon's codec: the scheduler's
/// URL.
async fn standalone() -> Result<String> {
    let state = SessionStateBuilder::new()
        .with_config(config())
        .with_default_features()
        .build();
    let addr = ballista_scheduler::standalone::new_standalone_scheduler_from_state(&state)
        .await
        .map_err(|e| anyhow!("starting a scheduler in this process: {e}"))?;
    let url = format!("http://localhost:{}", addr.port());
    let scheduler = connect(&url).await?;
    let vcores = state.config().ballista_standalone_parallelism();
    ballista_executor::new_standalone_executor_from_state(scheduler, vcores, &state)
        .await
        .map_err(|e| anyhow!("starting an executor in this process: {e}"))?;
    Ok(url)
}

/// A client of the scheduler at `url`, retried for [`ANSWER`] (one just started).
async fn connect(url: &str) -> Result<SchedulerGrpcClient<tonic::transport::Channel>> {
    let start = std::time::Instant::now();
    loop {
        match SchedulerGrpcClient::connect(url.to_string()).await {
            Ok(client) => return Ok(client),
            Err(e) if start.elapsed() > ANSWER => {
                bail!("the scheduler at {url} does not answer ({e})")
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// `relanon cluster scheduler`: Ballista's scheduler with relanon's codec, on `bind`, until
/// it is stopped.
pub async fn scheduler(bind: SocketAddr) -> Result<()> {
    let config = ballista_scheduler::config::SchedulerConfig {
        bind_host: bind.ip().to_string(),
        bind_port: bind.port(),
        override_physical_codec: Some(Arc::new(RelanonCodec::default())),
        ..Default::default()
    };
    let cluster = ballista_scheduler::cluster::BallistaCluster::new_from_config(&config)
        .await
        .map_err(|e| anyhow!("setting up the scheduler: {e}"))?;
    ballista_scheduler::scheduler_process::start_server(cluster, bind, Arc::new(config))
        .await
        .map_err(|e| anyhow!("the scheduler on {bind} stopped: {e}"))
}

/// Where an executor listens and whom it serves.
pub struct ExecutorOptions {
    pub scheduler: Cluster,
    /// Host and port of its Arrow Flight service (the gRPC one is the next port).
    pub bind: SocketAddr,
    /// The name others reach it by, when not the bind address.
    pub external_host: Option<String>,
    /// Tasks it runs at once (Ballista's vcores).
    pub slots: usize,
    /// Where it keeps shuffle files.
    pub work_dir: Option<std::path::PathBuf>,
}

/// `relanon cluster executor`: Ballista's executor with relanon's codec and operator,
/// registered with the scheduler, until it is stopped.
pub async fn executor(opts: ExecutorOptions) -> Result<()> {
    let Cluster::Remote(url) = &opts.scheduler else {
        bail!("an executor serves a running scheduler: give --scheduler df://HOST:PORT");
    };
    waits_for(url).await?;
    let (host, port) = url
        .trim_start_matches("http://")
        .rsplit_once(':')
        .and_then(|(h, p)| Some((h.to_string(), p.parse::<u16>().ok()?)))
        .ok_or_else(|| anyhow!("--scheduler {url}: give it as df://HOST:PORT"))?;
    let config = ballista_executor::executor_process::ExecutorProcessConfig {
        bind_host: opts.bind.ip().to_string(),
        external_host: opts.external_host,
        port: opts.bind.port(),
        grpc_port: opts.bind.port().wrapping_add(1),
        scheduler_host: host,
        scheduler_port: port,
        vcores: opts.slots,
        work_dir: opts.work_dir.map(|p| p.display().to_string()),
        override_physical_codec: Some(Arc::new(RelanonCodec::default())),
        ..Default::default()
    };
    ballista_executor::executor_process::start_executor_process(Arc::new(config))
        .await
        .map_err(|e| anyhow!("the executor on {} stopped: {e}", opts.bind))
}

/// Whether this run can go to a cluster: a Parquet warehouse (which every executor reads at
/// the client's path), in shards read from the source (`sharded` applies).
pub(super) fn check(
    plan: &crate::plan::Plan,
    wh: &crate::warehouse::Warehouse,
    algorithm: &crate::algo::Configured,
    sharded: bool,
) -> Result<()> {
    use crate::warehouse::SourceKind;
    let source = plan.source.display();
    let kind = match wh.kind {
        SourceKind::Parquet => None,
        SourceKind::Sqlite => Some("a SQLite file"),
        SourceKind::Csv => Some("CSV"),
    };
    if let Some(kind) = kind {
        bail!("--cluster reads a Parquet warehouse every executor can reach, and {source} is {kind}: write each table to a Parquet file of its name in one directory on storage the executors share (DuckDB: `COPY (SELECT * FROM t) TO 'dir/t.parquet'` per table) and pass that directory as --source");
    }
    if algorithm.shards < 2 {
        bail!("--cluster anonymizes a run's shards in parallel: give --shards N (2 or more; each shard holds at least k entities)");
    }
    if !sharded {
        bail!(
            "--cluster: algorithm = '{}' on this family does not run shard by shard from the source (a key-less entity table, or anatomy): run it on one machine",
            algorithm.spec.name
        );
    }
    Ok(())
}
