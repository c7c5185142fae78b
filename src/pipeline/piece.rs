//! One piece of a run in shards (a shard of the cut, or the entities every shard
//! suppressed whole) as a task that needs nothing of the pieces before: read its trees from
//! the source, anonymize, materialize and tally them. The whole (`sharded`) runs the tasks
//! here one at a time, or a cluster runs them on its executors (`cluster`); either way the
//! whole takes the outcomes in piece order.

use anyhow::{anyhow, Context, Result};
use arrow::array::UInt32Array;
use arrow::record_batch::RecordBatch;

use super::diversity_warnings;
use crate::algo::{self, Configured, Generalization, Output};
use crate::forest::{self, Forest, Scope};
use crate::hierarchy::Hierarchy;
use crate::plan::Plan;
use crate::progress::Progress;
use crate::release::{self, Materialized};
use crate::utility::{Tally, TallyPiece};
use crate::warehouse::Warehouse;

/// The registered table of one shard's entity keys.
const SHARD_KEYS: &str = "__relanon_shard_keys";

/// One piece of a run in shards: a shard of the cut, or the entities every shard
/// suppressed whole, anonymized together.
#[derive(Clone, Copy)]
pub(super) enum Piece {
    /// The shard at this position of so many.
    Shard(usize, usize),
    Rest,
}

/// What anonymizing one piece needs: the declarations, the algorithm, the source, the
/// hierarchies built over the whole family and the drawn count queries. Nothing of the
/// pieces before, so a piece may be anonymized anywhere; the whole takes the outcomes in
/// piece order (`sharded`).
pub(super) struct Task<'a> {
    pub plan: &'a Plan,
    pub algorithm: &'a Configured,
    pub wh: &'a Warehouse,
    pub global: &'a [Vec<Hierarchy>],
    pub tally: &'a Tally,
}

/// What one piece gives the whole.
pub(super) struct Outcome {
    /// Its tables under ids of its own, its key map, statistics and classes.
    pub materialized: Materialized,
    pub tally: TallyPiece,
    /// A shard's entities it suppressed whole, for the rest.
    pub suppressed: Option<RecordBatch>,
    /// The options a shard's run settled on (a price found by search).
    pub used: Option<algo::Options>,
    /// What l-diversity must suppress in a shard whatever the algorithm does.
    pub warnings: Vec<String>,
}

impl Task<'_> {
    /// The piece whose entities are `keys`: read from the source, anonymized, materialized
    /// and tallied. `None`: a rest too small to form a class.
    pub async fn run(
        &self,
        keys: RecordBatch,
        piece: Piece,
        progress: &Progress,
    ) -> Result<Option<Outcome>> {
        let plan = self.plan;
        let model = &plan.params.model;
        let shard = load_shard(plan, self.wh, self.global, keys).await?;
        // The rest holds entities every shard already checked; a rest of entities l-diversity
        // must suppress is no refusal of the run.
        let warnings = match piece {
            Piece::Shard(..) => diversity_warnings(plan, &shard)?,
            Piece::Rest => Vec::new(),
        };
        let name = &self.algorithm.spec.name;
        let (g, used) = match piece {
            Piece::Shard(i, n) => {
                algo::shards::run_shard(self.algorithm, &shard, model, (i, n), progress)
                    .map(|(g, used)| (g, Some(used)))
                    .map_err(|e| anyhow!("algorithm = '{name}': {e}"))?
            }
            Piece::Rest => match algo::shards::run_rest(self.algorithm, &shard, model, progress) {
                Some(g) => (g, None),
                None => return Ok(None),
            },
        };
        let suppressed = match piece {
            Piece::Shard(..) => Some(suppressed_keys(plan, &shard, &g)?),
            Piece::Rest => None,
        };
        let out = Output::Generalized(g);
        let materialized = release::materialize(plan, &shard, &out)?;
        let again = matches!(piece, Piece::Rest);
        let tally = self
            .tally
            .piece(plan, &shard, out.kept(), &materialized.tables, again)
            .await?;
        Ok(Some(Outcome {
            materialized,
            tally,
            suppressed,
            used,
            warnings,
        }))
    }
}

/// One shard's trees read from the source, coded in the global hierarchies.
pub(super) async fn load_shard(
    plan: &Plan,
    wh: &Warehouse,
    global: &[Vec<Hierarchy>],
    keys: RecordBatch,
) -> Result<Forest> {
    let _registered = wh
        .temporary(SHARD_KEYS, keys)
        .context("registering a shard's entity keys")?;
    let scope = Scope {
        entities: Some(SHARD_KEYS),
        hierarchies: Some(global),
    };
    Ok(forest::load_scoped(plan, wh, scope).await?)
}

/// The entity table's key columns of `rows`.
pub(super) fn entity_keys(
    plan: &Plan,
    entity_table: &RecordBatch,
    rows: &[u32],
) -> Result<RecordBatch> {
    let columns = plan.tables[0]
        .primary_key
        .iter()
        .map(|c| entity_table.schema().index_of(c))
        .collect::<Result<Vec<usize>, _>>()?;
    let keys = entity_table.project(&columns)?;
    Ok(arrow::compute::take_record_batch(
        &keys,
        &UInt32Array::from(rows.to_vec()),
    )?)
}

/// The keys of the entities `g` suppressed whole.
fn suppressed_keys(plan: &Plan, shard: &Forest, g: &Generalization) -> Result<RecordBatch> {
    let rows: Vec<u32> = (0..shard.entities() as u32)
        .filter(|&e| !g.kept[0][e as usize])
        .collect();
    entity_keys(plan, &shard.tables[0].batch, &rows)
}
