//! The family's tables cut into per-shard tables by the cluster (`shard_files` says what and
//! why): the client writes the cut into the run's shared directory, then each table's
//! statement runs on the cluster as one job, which its executors write.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{anyhow, Context, Result};
use arrow::record_batch::RecordBatch;
use datafusion::physical_plan::ExecutionPlan;
use futures::TryStreamExt;

use super::super::shard_files::{copy, tables, write_cut, Written, CUT};
use super::super::wire::task_error;
use crate::plan::Plan;
use crate::warehouse::Warehouse;

/// The directory a run's per-shard tables go to when `--cluster-scratch` names none: beside
/// the warehouse (which every executor reads already), named for this process.
pub(in crate::pipeline) fn default_dir(source: &Path) -> Result<PathBuf> {
    let source =
        std::path::absolute(source).with_context(|| format!("resolving '{}'", source.display()))?;
    let parent = source.parent().ok_or_else(|| {
        anyhow!(
            "--cluster: the warehouse '{}' has no parent directory for the shards' tables: give --cluster-scratch DIR on storage every executor shares",
            source.display()
        )
    })?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    Ok(parent.join(format!(
        ".relanon-shards-{}-{nanos:08x}",
        std::process::id()
    )))
}

/// Makes `dir`, writes the cut (`numbered[i]`: shard i's entity keys and its number) there
/// and has the cluster at `url` write each cut table there by shard.
pub(in crate::pipeline) async fn split(
    url: &str,
    wh: &Warehouse,
    plan: &Plan,
    numbered: &[RecordBatch],
    dir: PathBuf,
) -> Result<Written> {
    let written = Written::make(&dir, tables(plan))?;
    // As the executors are told it: absolute.
    let source = std::path::absolute(&plan.source).unwrap_or_else(|_| plan.source.clone());
    let files = written.files();
    let schema = write_cut(&files.cut_dir(), numbered)?;
    let _cut = wh
        .files_table(CUT, &files.cut_dir(), schema)
        .map_err(|e| anyhow!("registering the shards' cut: {e}"))?;
    for (ti, name) in &files.tables {
        let sql = copy(plan, *ti, &files.table_dir(*ti));
        let physical = plan_write(wh, &sql)
            .await
            .map_err(|e| anyhow!("planning the split of table '{name}' by shard: {e}"))?;
        run(url, physical).await.with_context(|| {
            format!(
                "the cluster at {url} writing table '{name}' by shard (every executor must read the warehouse '{}' and write to '{}' at the client's paths)",
                source.display(),
                files.dir.display()
            )
        })?;
    }
    Ok(written)
}

/// The physical plan of `sql` over the warehouse's tables, as a Ballista scheduler can take
/// it: without dynamic filters. Its join selection may swap a hash join's inputs, which a
/// join whose dynamic filter is already built refuses (and Ballista 55 then leaves the job
/// waiting instead of failing it).
pub(super) async fn plan_write(
    wh: &Warehouse,
    sql: &str,
) -> datafusion::error::Result<Arc<dyn ExecutionPlan>> {
    let mut state = wh.context().state();
    let optimizer = &mut state.config_mut().options_mut().optimizer;
    optimizer.enable_dynamic_filter_pushdown = false;
    optimizer.enable_join_dynamic_filter_pushdown = false;
    optimizer.enable_topk_dynamic_filter_pushdown = false;
    optimizer.enable_aggregate_dynamic_filter_pushdown = false;
    let logical = state.create_logical_plan(sql).await?;
    state.create_physical_plan(&logical).await
}

/// Runs `plan` (a write) on the cluster at `url` to its end.
async fn run(url: &str, plan: Arc<dyn ExecutionPlan>) -> Result<()> {
    let stream = super::submit(url, plan)
        .await
        .map_err(|e| anyhow!("{}", task_error(&e)))?;
    stream
        .try_for_each(|_| async { Ok(()) })
        .await
        .map_err(|e| anyhow!("{}", task_error(&e)))
}
