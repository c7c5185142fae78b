//! A run in shards read one at a time from the source (`--shards N`), so that no phase
//! holds the whole family: the family's outline (`forest::outline`: one short record per
//! entity, summed by queries, which a cluster runs when the run has one) is cut into shards
//! of whole trees (`algo::shards::cut_outline`); each shard's trees are read from the source
//! (`forest::load_scoped`, in hierarchies built once over the whole family), anonymized,
//! materialized and written as parts under provisional keys (`release::pieces`); the
//! entities every shard suppressed whole are tried once more together; then each table is
//! read back in key order with its ids mapped onto the release's keys and written into the
//! staged target. What is held across shards: the key map, the per-table statistics and
//! the utility tallies.
//!
//! Why it is sound: see `algo::shards`. The verifier checks the union, blind to the shards.

use anyhow::{anyhow, Result};
use arrow::record_batch::RecordBatch;

use super::piece::{load_shard, Outcome, Piece, Task};
use super::{assemble, parentless_warnings, population, return_free_heap, Clock, Staging};
use crate::algo::{self, Configured};
use crate::forest;
use crate::hierarchy::Hierarchy;
use crate::plan::Plan;
use crate::progress::Progress;
use crate::release::{pieces, Materialized};
use crate::utility::{Tally, Utility};
use crate::warehouse::{
    collect_stream, write_staged, write_stream, Engine, Parts, ReleaseSet, ReleaseTable, Remap,
    Staged, TargetKind, Warehouse,
};

/// Whether this run goes shard by shard from the source: more than one shard of a family
/// whose entity table has a key to select a shard's trees by. (A key-less entity table is
/// cut from the forest in memory, `algo::shards::run`.)
pub(super) fn applies(plan: &Plan, algorithm: &Configured) -> bool {
    algorithm.shards > 1
        && !plan.tables[0].primary_key.is_empty()
        && plan.params.model.anatomy().is_none()
}

/// What a run in shards hands to the report and the verifier.
pub(super) struct Piecewise {
    pub staged: Staged,
    /// The merged key map, statistics and classes; no tables (they are staged).
    pub materialized: Materialized,
    pub utility: Utility,
}

/// Everything a shard's run adds to the whole.
struct Whole<'a> {
    plan: &'a Plan,
    parts: Parts,
    offsets: pieces::Offsets,
    merged: Materialized,
    /// Each family table's released shape, from the first shard (name, key, FKs).
    shapes: Vec<ReleaseTable>,
    tally: Tally,
    /// Entity keys of the entities a shard suppressed whole.
    rest: Vec<RecordBatch>,
}

/// The run: outline, shards, the remainder, the staged release.
pub(super) async fn release(
    plan: &Plan,
    algorithm: &mut Configured,
    wh: &Warehouse,
    to: &Staging<'_>,
    progress: &Progress,
    clock: &mut Clock,
) -> Result<Piecewise> {
    #[cfg(feature = "distributed")]
    let url = to.cluster.map(|(url, _)| url);
    #[cfg(feature = "distributed")]
    let remote = url.map(|url| super::cluster::OnCluster { wh, url });
    #[cfg(feature = "distributed")]
    let engine: &dyn Engine = match &remote {
        Some(remote) => remote,
        None => wh,
    };
    #[cfg(not(feature = "distributed"))]
    let engine: &dyn Engine = wh;
    progress.phase(
        "load",
        "outlining the family: keys, links, each tree's rows",
    );
    let global = forest::hierarchies(plan, engine).await?;
    let outline = forest::outline(plan, engine, &global[0]).await?;
    let no_parent: Vec<usize> = outline.tables.iter().map(|t| t.no_parent).collect();
    for w in parentless_warnings(plan, &no_parent) {
        progress.warn(w);
    }
    population(plan, outline.entities(), algorithm.shards)?;
    let model = &plan.params.model;
    let cut = algo::shards::cut_outline(&outline, algorithm.shards, model.min_group())
        .map_err(|e| anyhow!(e))?;
    let keys = cut
        .iter()
        .map(|rows| taken(&outline.keys, rows))
        .collect::<Result<Vec<_>>>()?;
    let sample = sample_keys(&outline.keys, plan.params.query_seed)?;
    let source = source_stats(plan, &outline.tables);
    let entities = outline.entities();
    drop(outline);
    // Each phase after the outline, and each shard after the one before, holds less than
    // its peak: what it freed goes back, so the budget bounds what the process holds.
    return_free_heap();
    clock.lap("load");
    let mut whole = Whole {
        plan,
        parts: Parts::create(to.target)?,
        offsets: pieces::Offsets::default(),
        merged: empty_materialized(),
        shapes: Vec::new(),
        tally: Tally::default(),
        rest: Vec::new(),
    };
    whole
        .tally
        .draw(plan, &load_shard(plan, wh, &global, sample).await?);
    let mut options = algorithm.options.clone();
    #[cfg(feature = "distributed")]
    let keys = on_cluster(
        &mut whole,
        algorithm,
        (wh, url),
        &global,
        keys,
        &mut options,
        to,
        progress,
    )
    .await?;
    local_shards(
        &mut whole,
        algorithm,
        wh,
        &global,
        keys,
        &mut options,
        progress,
    )
    .await?;
    remainder(&mut whole, algorithm, wh, &global, entities, progress).await?;
    algorithm.options = options;
    clock.lap("cluster");
    progress.phase("write", "writing the shards' tables in key order");
    let staged = finish(&mut whole, wh, to).await?;
    let utility = whole.tally.finish(plan, entities);
    let mut merged = std::mem::replace(&mut whole.merged, empty_materialized());
    settle_stats(&mut merged, &source, entities);
    clock.lap("write");
    Ok(Piecewise {
        staged,
        materialized: merged,
        utility,
    })
}

/// The shards anonymized on the run's cluster, if it has one: the shards left to
/// anonymize here (none, or all of them without a cluster). The cluster first writes each
/// shard's rows of the family's tables to shared storage (`cluster::split`), removed when
/// the shards are done.
#[cfg(feature = "distributed")]
#[allow(clippy::too_many_arguments)]
async fn on_cluster(
    whole: &mut Whole<'_>,
    algorithm: &Configured,
    (wh, url): (&Warehouse, Option<&str>),
    global: &[Vec<Hierarchy>],
    keys: Vec<RecordBatch>,
    options: &mut algo::Options,
    to: &Staging<'_>,
    progress: &Progress,
) -> Result<Vec<RecordBatch>> {
    use super::cluster::{self, split};
    let (Some((_, req)), Some(url)) = (to.cluster, url) else {
        return Ok(keys);
    };
    let plan = whole.plan;
    let numbered = super::shard_files::numbered(keys)?;
    progress.phase("cluster", "writing each shard's rows on the cluster");
    let dir = match &req.cluster_scratch {
        Some(dir) => dir.clone(),
        None => split::default_dir(&plan.source)?,
    };
    let written = split::split(url, wh, plan, &numbered, dir).await?;
    progress.phase("cluster", "anonymizing the shards on the cluster");
    let job = super::wire::Job::encode_for(
        req,
        &plan.source,
        numbered.len(),
        global,
        &whole.tally,
        written.files(),
    )?;
    let (mine, table) = (&algorithm.options, algorithm.spec.options);
    cluster::run_shards(url, job, numbered.len(), mine, table, |i, outcome| {
        whole.take(i, outcome, options, progress)
    })
    .await?;
    drop(written);
    Ok(Vec::new())
}

/// Each shard anonymized here, one at a time.
async fn local_shards(
    whole: &mut Whole<'_>,
    algorithm: &Configured,
    wh: &Warehouse,
    global: &[Vec<Hierarchy>],
    keys: Vec<RecordBatch>,
    options: &mut algo::Options,
    progress: &Progress,
) -> Result<()> {
    let n = keys.len();
    for (i, shard_keys) in keys.into_iter().enumerate() {
        progress.phase("cluster", "clustering shard by shard");
        let task = Task {
            plan: whole.plan,
            algorithm,
            wh,
            global,
            tally: &whole.tally,
        };
        let outcome = task.run(shard_keys, Piece::Shard(i, n), progress).await?;
        let outcome = outcome.ok_or_else(|| anyhow!("shard {} of {n} gave no outcome", i + 1))?;
        whole.take(i, outcome, options, progress)?;
    }
    Ok(())
}

impl Whole<'_> {
    /// Takes shard `i`'s outcome (in shard order): its warnings if it is the first, the
    /// price it settled on, its tables and tallies.
    fn take(
        &mut self,
        i: usize,
        mut outcome: Outcome,
        options: &mut algo::Options,
        progress: &Progress,
    ) -> Result<()> {
        // Each shard is checked (a refusal holds in any); the first one's warnings stand
        // for all, as the shards are alike.
        if i == 0 {
            std::mem::take(&mut outcome.warnings)
                .into_iter()
                .for_each(|w| progress.warn(w));
        }
        if let Some(used) = outcome.used.take() {
            *options = algo::shards::highest_price(options.clone(), used);
        }
        self.absorb(outcome)?;
        return_free_heap();
        crate::warehouse::staging::failpoint(&format!("shard-{}", i + 1));
        Ok(())
    }

    /// Adds one piece's outcome: moves its ids past the pieces before, writes its tables
    /// as parts and adds its key map, statistics, classes and tallies.
    fn absorb(&mut self, outcome: Outcome) -> Result<()> {
        let mut m = outcome.materialized;
        self.tally.absorb(outcome.tally);
        self.rest.extend(outcome.suppressed);
        self.offsets.shift(self.plan, &mut m)?;
        for t in &m.tables {
            self.parts.write(&t.name, &t.batch)?;
        }
        if self.shapes.is_empty() {
            self.shapes = m
                .tables
                .iter()
                .map(|t| ReleaseTable {
                    batch: t.batch.slice(0, 0),
                    ..t.clone()
                })
                .collect();
        } else {
            for (shape, t) in self.shapes.iter_mut().zip(&m.tables) {
                shape.batch = nullable_where_either(&shape.batch, &t.batch)?;
            }
        }
        m.tables.clear();
        absorb(&mut self.merged, m);
        Ok(())
    }
}

/// `shape` (no rows) with each field nullable where it is in `other` too: a column one
/// shard releases without NULLs may hold some in another.
fn nullable_where_either(shape: &RecordBatch, other: &RecordBatch) -> Result<RecordBatch> {
    let fields: Vec<arrow::datatypes::Field> = shape
        .schema()
        .fields()
        .iter()
        .map(|f| {
            let either = other
                .schema()
                .field_with_name(f.name())
                .is_ok_and(|o| o.is_nullable());
            f.as_ref().clone().with_nullable(f.is_nullable() || either)
        })
        .collect();
    let schema = std::sync::Arc::new(arrow::datatypes::Schema::new(fields));
    Ok(RecordBatch::try_new(schema, shape.columns().to_vec())?)
}

/// The entities every shard suppressed whole, read again and anonymized together as one
/// more shard (see `algo::shards::run_rest`).
async fn remainder(
    whole: &mut Whole<'_>,
    algorithm: &Configured,
    wh: &Warehouse,
    global: &[Vec<Hierarchy>],
    entities: usize,
    progress: &Progress,
) -> Result<()> {
    let rest = std::mem::take(&mut whole.rest);
    let Some(first) = rest.first() else {
        return Ok(());
    };
    let keys = crate::warehouse::concat_owned(&first.schema(), rest)?;
    if keys.num_rows() < 2 || keys.num_rows() == entities {
        return Ok(());
    }
    progress.phase("cluster", "the entities the shards suppressed, together");
    let task = Task {
        plan: whole.plan,
        algorithm,
        wh,
        global,
        tally: &whole.tally,
    };
    if let Some(outcome) = task.run(keys, Piece::Rest, progress).await? {
        whole.absorb(outcome)?;
    }
    Ok(())
}

/// How many entities' trees the count queries are drawn from.
const QUERY_SAMPLE: usize = 2000;

/// The keys of [`QUERY_SAMPLE`] entities drawn uniformly (seeded) from `keys` (every
/// entity's, in key order), whose trees the count queries are drawn around: a row of one of
/// their tables is a uniform draw of the table's rows, as the whole forest's would be.
fn sample_keys(keys: &RecordBatch, seed: u64) -> Result<RecordBatch> {
    use rand::seq::index::sample;
    use rand::SeedableRng;
    let n = keys.num_rows();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut rows: Vec<u32> = sample(&mut rng, n, QUERY_SAMPLE.min(n))
        .into_iter()
        .map(|r| r as u32)
        .collect();
    rows.sort_unstable();
    taken(keys, &rows)
}

/// Rows `rows` of `keys`.
fn taken(keys: &RecordBatch, rows: &[u32]) -> Result<RecordBatch> {
    Ok(arrow::compute::take_record_batch(
        keys,
        &arrow::array::UInt32Array::from(rows.to_vec()),
    )?)
}

/// Adds one shard's key map, statistics and classes to the run's.
fn absorb(merged: &mut Materialized, m: Materialized) {
    for (name, keys) in m.keys.tables {
        match merged.keys.tables.get_mut(&name) {
            Some(held) => held.extend(keys),
            None => {
                merged.keys.tables.insert(name, keys);
            }
        }
    }
    for s in m.stats {
        match merged.stats.iter_mut().find(|t| t.name == s.name) {
            Some(t) => {
                t.released += s.released;
                t.lm_sum += s.lm_sum;
                for ((_, sum), (_, more)) in t.lm_sum_by_column.iter_mut().zip(&s.lm_sum_by_column)
                {
                    *sum += more;
                }
            }
            None => merged.stats.push(s),
        }
    }
    merged.ec_sizes.extend(m.ec_sizes);
    crate::algo::Relocated::absorb(&mut merged.relocation, m.relocation);
}

fn empty_materialized() -> Materialized {
    Materialized {
        tables: Vec::new(),
        keys: Default::default(),
        stats: Vec::new(),
        ec_sizes: Vec::new(),
        suppressed_entities: 0,
        recoding: Vec::new(),
        relocation: None,
        fragmentation: None,
        fragment_rows: Vec::new(),
    }
}

/// Per released family table: rows loaded (after orphans and parentless rows), the source's
/// rows and what was left out, as the outline counted them.
fn source_stats(plan: &Plan, counted: &[forest::Counted]) -> Vec<(String, [usize; 4])> {
    let mut out: Vec<(String, [usize; 4])> = Vec::new();
    for (ft, t) in plan.tables.iter().zip(counted) {
        let add = [t.loaded, t.rows_in, t.orphans_dropped, t.no_parent];
        match out.iter_mut().find(|(n, _)| *n == ft.name) {
            Some((_, held)) => held.iter_mut().zip(add).for_each(|(h, a)| *h += a),
            None => out.push((ft.name.clone(), add)),
        }
    }
    out
}

/// The whole run's counts in the statistics: a row is suppressed when loaded and not
/// released (an entity suppressed in its shard and released in the remainder counts once).
fn settle_stats(m: &mut Materialized, source: &[(String, [usize; 4])], entities: usize) {
    for s in &mut m.stats {
        if let Some((_, [loaded, rows_in, orphans, no_parent])) =
            source.iter().find(|(n, _)| *n == s.name)
        {
            s.suppressed = loaded.saturating_sub(s.released);
            s.rows_in = *rows_in;
            s.orphans_dropped = *orphans;
            s.no_parent = *no_parent;
        }
    }
    m.suppressed_entities = entities.saturating_sub(m.ec_sizes.iter().sum());
}

/// Each family table read back from its parts in key order, its ids mapped onto the
/// release's keys, written into the staged target with the dimensions and views.
async fn finish(whole: &mut Whole<'_>, wh: &Warehouse, to: &Staging<'_>) -> Result<Staged> {
    let plan = whole.plan;
    let perms = pieces::permutations(plan, whole.offsets.totals());
    pieces::finish_key_map(plan, &mut whole.merged.keys, &perms);
    let columns = pieces::id_columns(plan)?;
    let rest = assemble(plan, wh, Vec::new(), None).await?;
    let parquet = TargetKind::of(to.target) == TargetKind::Parquet;
    let mut family = Vec::new();
    let staged = if parquet {
        Some(write_staged(to.target, &rest, to.overwrite)?)
    } else {
        None
    };
    for shape in &whole.shapes {
        let remaps: Vec<Remap> = columns
            .get(&shape.name)
            .into_iter()
            .flatten()
            .filter_map(|(column, space)| {
                perms.get(space).map(|to| Remap {
                    column: column.clone(),
                    to: to.clone(),
                })
            })
            .collect();
        let order = pieces::row_order(plan, &shape.name, &shape.batch);
        let stream = whole
            .parts
            .merged(&shape.name, &remaps, &order, to.sort_memory)
            .await?
            .ok_or_else(|| anyhow!("no shard wrote table {}", shape.name))?;
        match &staged {
            Some(s) => write_stream(s.path(), &shape.name, shape.batch.schema(), stream).await?,
            None => {
                let batch = collect_stream(&shape.name, stream).await?;
                family.push(ReleaseTable {
                    batch: RecordBatch::try_new(shape.batch.schema(), batch.columns().to_vec())?,
                    ..shape.clone()
                })
            }
        }
    }
    match staged {
        Some(s) => Ok(s),
        None => {
            family.extend(rest.tables);
            let set = ReleaseSet {
                tables: family,
                views: rest.views,
            };
            Ok(write_staged(to.target, &set, to.overwrite)?)
        }
    }
}
