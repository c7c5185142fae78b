//! Bounding what the queries that read the source hold: the warehouse's session gets a
//! memory pool, and its sorts and aggregations spill into a hidden directory beside the
//! target (listed in the run's manifest, so a killed run's spill is removed by the next).
//! DataFusion's hash joins do not spill: their hash tables count against the pool, and a
//! join that would pass it fails with [`WarehouseError::QueryMemory`].

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::common::TableReference;
use datafusion::execution::memory_pool::FairSpillPool;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::prelude::SessionContext;

use super::paths::{remove_path, temp_sibling, write_err};
use super::{one_line, Warehouse, WarehouseError};

/// The least pool a partition of a query gets: a sort reserves 10 MB of it up front to merge
/// its spills (DataFusion's `sort_spill_reservation_bytes`), and needs some to sort in.
pub const PARTITION_MIN: usize = 16 << 20;

/// The directory the queries spill into; removed when dropped.
pub struct Spill {
    dir: PathBuf,
}

impl Drop for Spill {
    fn drop(&mut self) {
        let _ = remove_path(&self.dir);
        super::staging::untrack(&self.dir);
    }
}

impl Warehouse {
    /// From here on, the queries hold at most `memory` bytes (beyond the batches they return;
    /// at least [`PARTITION_MIN`] a partition) and spill beside `target` until the returned
    /// guard drops. Tables registered for a phase ([`Warehouse::temporary`]) must be gone:
    /// the session is made anew.
    pub fn bound_queries(&mut self, target: &Path, memory: usize) -> Result<Spill, WarehouseError> {
        let dir = temp_sibling(target, "spill")?;
        super::staging::create_tracked(&dir, |d| fs::create_dir(d))
            .map_err(|e| write_err(&dir, e))?;
        let spill = Spill { dir };
        let config = self.ctx.copied_config();
        let memory = memory.max(PARTITION_MIN.saturating_mul(config.target_partitions()));
        let runtime = RuntimeEnvBuilder::new()
            .with_memory_pool(Arc::new(FairSpillPool::new(memory)))
            .with_temp_file_path(spill.dir.clone())
            .build_arc()
            .map_err(|e| WarehouseError::Message(one_line(e)))?;
        let ctx = SessionContext::new_with_config_rt(config, runtime);
        super::functions::register(&ctx);
        for (t, (schema, rows)) in self.tables.iter().zip(&self.loaded) {
            let registered = super::provider(&ctx, schema, rows)
                .and_then(|p| ctx.register_table(TableReference::bare(t.name.as_str()), p));
            registered.map_err(|e| {
                WarehouseError::Message(format!(
                    "cannot register table '{}' anew: {}",
                    t.name,
                    one_line(e)
                ))
            })?;
        }
        self.ctx = ctx;
        Ok(spill)
    }
}
