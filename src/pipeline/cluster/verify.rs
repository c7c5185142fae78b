//! The staged release's partitions checked on the cluster's executors (`verify::Tasks`):
//! the client writes the key map and the partitions' assignment into a scratch directory on
//! the shared storage, submits one task per partition under relanon's operator
//! ([`exec::VERIFY`]), and hands the answers back to verify in partition order. Each task
//! prepares the plan from the run's request, opens the source and the staged release (so
//! the target must be on storage every executor reads) and runs verify's own per-partition
//! checks. Nothing here reads a finding: verify merges them as it merges its own.

use std::path::Path;

use anyhow::{Context, Result};
use futures::TryStreamExt;

use super::super::shard_files::Scratch;
use super::super::wire::{answers, task_error, VerifyJob};
use super::super::Request;
use super::{exec, split, submit, tasks};
use crate::keymap::KeyMap;

/// Where a run's staged release is checked: the cluster at `url`, in at least `shards`
/// partitions (each about a shard's size, which the executors were given room for).
pub(in crate::pipeline) struct OnExecutors<'a> {
    pub url: &'a str,
    pub req: &'a Request,
    /// The warehouse the run read.
    pub source: &'a Path,
    pub release: &'a Path,
    pub keys: &'a KeyMap,
    pub shards: usize,
}

#[async_trait::async_trait]
impl crate::verify::Tasks for OnExecutors<'_> {
    fn least(&self) -> usize {
        self.shards
    }

    async fn run(&self, shared: Vec<u8>, parts: usize) -> Result<Vec<Vec<u8>>, String> {
        self.check(shared, parts).await.map_err(|e| {
            format!(
                "verifying the staged release on the cluster at {} (nothing was written): {e:#}",
                self.url
            )
        })
    }
}

impl OnExecutors<'_> {
    /// The scratch directory with the key map and `shared`, the tasks over it, their answers.
    async fn check(&self, shared: Vec<u8>, parts: usize) -> Result<Vec<Vec<u8>>> {
        let dir = match &self.req.cluster_scratch {
            Some(dir) => dir.clone(),
            None => split::default_dir(self.source)?,
        };
        let scratch = Scratch::make(&dir, "the verify tasks' key map")?;
        let key_map = scratch.dir().join("key-map.json");
        write_key_map(&key_map, self.keys)?;
        let assignment = scratch.dir().join("assignment.cbor");
        std::fs::write(&assignment, &shared)
            .with_context(|| format!("writing '{}'", assignment.display()))?;
        drop(shared);
        let job =
            VerifyJob::encode_for(self.req, self.source, [self.release, &key_map, &assignment])?;
        let plan = tasks(exec::VERIFY, job, parts)?;
        let stream = submit(self.url, plan)
            .await
            .map_err(|e| anyhow::anyhow!("{}", task_error(&e)))?;
        let batches: Vec<_> = stream
            .try_collect()
            .await
            .map_err(|e| anyhow::anyhow!("{}", task_error(&e)))?;
        let out = answers(&batches, parts)?;
        drop(scratch);
        Ok(out)
    }
}

/// The key map as the tasks read it: the file `--key-map` writes, readable by this user only
/// (it leads every released row back to its source row).
fn write_key_map(path: &Path, keys: &KeyMap) -> Result<()> {
    crate::warehouse::staging::write_synced(path, Some(0o600), |w| {
        serde_json::to_writer(w, keys).map_err(std::io::Error::other)
    })
    .with_context(|| format!("writing '{}'", path.display()))
}
