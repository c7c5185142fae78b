//! A run's family tables cut into per-shard tables, so that a shard's task reads its own
//! rows and not the whole warehouse (a task per shard, each scanning every table, reads the
//! warehouse once per shard). A cluster does the cutting (`cluster::split`); this module
//! holds what does not depend on one: which tables are cut, the statement that cuts one,
//! the cut itself as a file, and the directory they live in.
//!
//! The client writes the cut (each entity's key beside its shard's number) as Parquet into
//! a directory every executor shares. One statement per family table joins the table along
//! its FK path up to the entity table and the cut, and writes the table's rows partitioned
//! by shard: `DIR/tN/__relanon_shard=S/*.parquet`. A shard's task narrows its warehouse to
//! those files (`Warehouse::narrow`) and loads its trees as one machine does from the
//! source.
//!
//! Why the release stays the same byte for byte: a table's files for a shard hold every row
//! of the shard's trees (a row joins one chain of parents, keys being unique, so one shard),
//! and the load keeps just those rows, sorted by parent and key whatever order the files
//! hold them in. A key-less child table's siblings keep the order the source query gives
//! them, which files written in parallel do not keep: such a table, and a table the
//! declarations split into several entries, are read from the source as before.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{anyhow, Context, Result};
use arrow::array::UInt32Array;
use arrow::datatypes::{DataType, Field, FieldRef, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use serde::{Deserialize, Serialize};

use crate::plan::Plan;
use crate::warehouse::{quote_ident as quote, staging, Warehouse};

/// The column that carries a shard's number beside an entity's key.
pub(super) const SHARD: &str = "__relanon_shard";

/// The table of the cut, as the statements name it.
pub(super) const CUT: &str = "__relanon_cut";

/// Where each shard's rows of some family tables were written: table `ti`'s rows of shard
/// `s` are the Parquet files of `dir/t{ti}/__relanon_shard={s}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct ShardFiles {
    pub dir: PathBuf,
    /// Index in the plan and name of each table written.
    pub tables: Vec<(usize, String)>,
}

impl ShardFiles {
    /// Where table `ti`'s rows go, partitioned by shard.
    pub fn table_dir(&self, ti: usize) -> PathBuf {
        self.dir.join(format!("t{ti}"))
    }

    /// Where shard `shard`'s rows of table `ti` are.
    pub fn shard_dir(&self, ti: usize, shard: usize) -> PathBuf {
        self.table_dir(ti).join(format!("{SHARD}={shard}"))
    }

    /// Where the cut is.
    pub fn cut_dir(&self) -> PathBuf {
        self.dir.join(CUT)
    }

    /// `wh`, a warehouse opened for shard `shard`'s task, narrowed to the shard's rows of
    /// each table written. A shard holds at least one entity, so its directory of the entity
    /// table exists: a process that cannot see the run's directory fails here rather than
    /// reading every table as empty.
    pub fn narrow(&self, wh: &Warehouse, shard: usize) -> Result<()> {
        let unseen = |what: PathBuf| {
            anyhow!(
                "shard {} cannot find '{}' that the cluster wrote: every executor must read '{}' at the client's path",
                shard + 1,
                what.display(),
                self.dir.display()
            )
        };
        if !self.cut_dir().is_dir() {
            return Err(unseen(self.cut_dir()));
        }
        for (ti, name) in &self.tables {
            let dir = self.shard_dir(*ti, shard);
            if *ti == 0 && !dir.is_dir() {
                return Err(unseen(dir));
            }
            wh.narrow(name, &dir).map_err(|e| {
                anyhow!(
                    "reading shard {}'s rows of table '{name}' from '{}': {e}",
                    shard + 1,
                    dir.display()
                )
            })?;
        }
        Ok(())
    }
}

impl ShardFiles {
    /// Shard `shard`'s entity keys, read from its file of the cut (which the client wrote
    /// before any task ran): the keys travel by the shared directory, not in the plan, whose
    /// size a scheduler bounds.
    pub fn keys(&self, shard: usize) -> Result<RecordBatch> {
        let path = cut_file(&self.cut_dir(), shard);
        let file = std::fs::File::open(&path).with_context(|| {
            format!(
                "shard {} cannot read its keys from '{}' that the client wrote: every executor must read '{}' at the client's path",
                shard + 1,
                path.display(),
                self.dir.display()
            )
        })?;
        let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)?
            .build()?;
        let schema = arrow::record_batch::RecordBatchReader::schema(&reader);
        let batches = reader.collect::<Result<Vec<_>, _>>()?;
        let all = arrow::compute::concat_batches(&schema, &batches)?;
        let keys: Vec<usize> = (0..all.num_columns())
            .filter(|&c| all.schema().field(c).name() != SHARD)
            .collect();
        Ok(all.project(&keys)?)
    }
}

/// Each shard's entity keys (`keys[i]`) with its number beside them in [`SHARD`]: the cut.
pub(super) fn numbered(keys: Vec<RecordBatch>) -> Result<Vec<RecordBatch>> {
    keys.into_iter()
        .enumerate()
        .map(|(i, keys)| {
            let mut fields: Vec<FieldRef> = keys.schema().fields().iter().cloned().collect();
            fields.push(Arc::new(Field::new(SHARD, DataType::UInt32, false)));
            let mut columns = keys.columns().to_vec();
            columns.push(Arc::new(UInt32Array::from(vec![i as u32; keys.num_rows()])));
            Ok(RecordBatch::try_new(
                Arc::new(Schema::new(fields)),
                columns,
            )?)
        })
        .collect()
}

/// A run's directory of per-shard tables, made for it and removed with everything in it
/// when this is dropped (the run is over, whether it succeeded or not). It is tracked as
/// the run's staged files are: an interrupted run removes it, and a killed run's next run
/// on the same target does.
pub(super) struct Written {
    files: ShardFiles,
    _scratch: Scratch,
}

impl Written {
    /// Makes `dir` (which must not exist) for `tables` (index and name, [`tables`]).
    pub fn make(dir: &Path, tables: Vec<(usize, String)>) -> Result<Written> {
        let scratch = Scratch::make(dir, "the shards' tables")?;
        let written = Written {
            files: ShardFiles {
                dir: scratch.dir().to_path_buf(),
                tables,
            },
            _scratch: scratch,
        };
        let cut = written.files.cut_dir();
        std::fs::create_dir(&cut).with_context(|| format!("making '{}'", cut.display()))?;
        Ok(written)
    }

    /// Where the tables are, for the shards' tasks.
    pub fn files(&self) -> &ShardFiles {
        &self.files
    }
}

/// A directory a run makes on the storage its executors share, removed when dropped: tracked
/// like a staged file, so one a killed run left is removed by the next run on its target.
pub(super) struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    /// Makes `dir` (which must not exist), for `what` (said if it cannot be made).
    pub fn make(dir: &Path, what: &str) -> Result<Scratch> {
        let dir =
            std::path::absolute(dir).with_context(|| format!("resolving '{}'", dir.display()))?;
        // Made, not found: a directory that exists may be someone's, and is left alone.
        staging::create_tracked(&dir, |d| std::fs::create_dir(d)).map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => anyhow!(
                "--cluster-scratch '{}' exists already: name a directory that does not exist yet (the run makes it and removes it)",
                dir.display()
            ),
            _ => anyhow!(
                "cannot make '{}' for {what} ({e}): give --cluster-scratch DIR, in a directory that exists on storage every executor shares and this machine may write",
                dir.display()
            ),
        })?;
        Ok(Scratch { dir })
    }

    /// The directory, absolute.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // Nothing to report: the run's outcome is told already. What could not be removed
        // is left for the next run's recovery, as a staged file would be.
        if std::fs::remove_dir_all(&self.dir).is_ok() {
            staging::untrack(&self.dir);
        }
    }
}

/// The family tables cut into shards: index and name of each keyed table that is one
/// entry of the family.
pub(super) fn tables(plan: &Plan) -> Vec<(usize, String)> {
    plan.tables
        .iter()
        .enumerate()
        .filter(|(_, ft)| {
            !ft.primary_key.is_empty()
                && plan.tables.iter().filter(|o| o.name == ft.name).count() == 1
        })
        .map(|(ti, ft)| (ti, ft.name.clone()))
        .collect()
}

/// The cut (`numbered[i]`: shard i's entity keys and its number in [`SHARD`]) as a Parquet
/// file a shard in `dir`; its schema.
pub(super) fn write_cut(dir: &Path, numbered: &[RecordBatch]) -> Result<SchemaRef> {
    let schema = numbered
        .first()
        .map(RecordBatch::schema)
        .ok_or_else(|| anyhow!("a run on a cluster needs at least one shard"))?;
    for (shard, batch) in numbered.iter().enumerate() {
        let path = cut_file(dir, shard);
        let file = std::fs::File::create(&path)
            .with_context(|| format!("writing the shards' cut to '{}'", path.display()))?;
        let mut writer = parquet::arrow::ArrowWriter::try_new(file, Arc::clone(&schema), None)?;
        writer.write(batch)?;
        writer.close()?;
    }
    Ok(schema)
}

/// Shard `shard`'s file of the cut in `dir`: one file a shard, so that a task reads its own
/// entities' keys and nothing else.
fn cut_file(dir: &Path, shard: usize) -> PathBuf {
    dir.join(format!("shard-{shard:06}.parquet"))
}

/// The statement that writes table `ti`'s rows into `out` by shard: the table joined to its
/// parent, the parent to its own, up to the entity table and the cut ([`CUT`]).
pub(super) fn copy(plan: &Plan, ti: usize, out: &Path) -> String {
    let mut from = format!("{} s", quote(&plan.tables[ti].name));
    let mut alias = "s".to_string();
    let mut at = ti;
    while let Some(p) = plan.tables[at].parent {
        let next = format!("p{p}");
        let ft = &plan.tables[at];
        let on = ft
            .parent_fk
            .iter()
            .zip(&ft.parent_key)
            .map(|(c, k)| format!("{alias}.{} = {next}.{}", quote(c), quote(k)))
            .collect::<Vec<_>>()
            .join(" AND ");
        from.push_str(&format!(
            " JOIN {} {next} ON {on}",
            quote(&plan.tables[p].name)
        ));
        alias = next;
        at = p;
    }
    let on = plan.tables[0]
        .primary_key
        .iter()
        .map(|c| format!("{alias}.{c} = c.{c}", c = quote(c)))
        .collect::<Vec<_>>()
        .join(" AND ");
    let path = format!("{}/", out.display()).replace('\'', "''");
    format!(
        "COPY (SELECT s.*, c.{SHARD} FROM {from} JOIN {} c ON {on}) TO '{path}' STORED AS PARQUET PARTITIONED BY ({SHARD})",
        quote(CUT)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forest::Forest;
    use crate::pipeline::piece::{entity_keys, load_shard};

    fn same(a: &Forest, b: &Forest) {
        for (x, y) in a.tables.iter().zip(&b.tables) {
            assert_eq!(x.batch, y.batch, "{}", x.name);
            assert_eq!(x.parent, y.parent, "{}", x.name);
            assert_eq!(x.qi, y.qi, "{}", x.name);
        }
    }

    /// Each shard's trees read from the tables the statements cut are its trees read from
    /// the source: the same rows in the same order, the same parents and codes.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_shard_read_from_its_cut_tables_is_the_shard_read_from_the_source() {
        let (dir, plan, wh) = crate::forest::tpch_fixture().await;
        let whole = crate::forest::load(&plan, &wh).await.expect("whole");
        let global: Vec<Vec<_>> = whole.tables.iter().map(|t| t.hierarchies.clone()).collect();
        let n = whole.entities() as u32;
        // Two shards of interleaved entities, so that neither is a range of the files.
        let shards: Vec<Vec<u32>> = vec![
            (0..n).filter(|e| e % 3 == 0).collect(),
            (0..n).filter(|e| e % 3 != 0).collect(),
        ];
        let keys: Vec<RecordBatch> = shards
            .iter()
            .map(|rows| entity_keys(&plan, &whole.tables[0].batch, rows).expect("keys"))
            .collect();
        let from_source = {
            let mut out = Vec::new();
            for k in &keys {
                out.push(
                    load_shard(&plan, &wh, &global, k.clone())
                        .await
                        .expect("shard"),
                );
            }
            out
        };
        let written = Written::make(&dir.path().join("scratch"), tables(&plan)).expect("made");
        let files = written.files().clone();
        assert_eq!(
            files.tables.len(),
            plan.tables.len(),
            "every TPC-H table is keyed"
        );
        let cut = numbered(keys.clone()).expect("numbered");
        let schema = write_cut(&files.cut_dir(), &cut).expect("cut");
        {
            let _cut = wh
                .files_table(CUT, &files.cut_dir(), schema)
                .expect("registered");
            for (ti, _) in &files.tables {
                wh.sql(&copy(&plan, *ti, &files.table_dir(*ti)))
                    .await
                    .expect("written by shard");
            }
        }
        for (i, k) in keys.iter().enumerate() {
            // A task's keys come from its file of the cut, as the client cut them.
            assert_eq!(&files.keys(i).expect("the shard's keys"), k);
            files.narrow(&wh, i).expect("narrowed");
            let narrowed = load_shard(&plan, &wh, &global, files.keys(i).expect("keys"))
                .await
                .expect("shard");
            same(&narrowed, &from_source[i]);
            // Narrowed to its own rows: the entity table holds this shard's entities alone.
            let count = wh
                .sql(&format!(
                    "SELECT COUNT(*) FROM {}",
                    quote(&plan.tables[0].name)
                ))
                .await
                .expect("count");
            let counted = count[0]
                .column(0)
                .as_any()
                .downcast_ref::<arrow::array::Int64Array>()
                .expect("a count")
                .value(0);
            assert_eq!(counted as usize, shards[i].len());
        }
        // A shard no table was written for: the process cannot see the run's directory.
        let err = files.narrow(&wh, keys.len()).expect_err("refused");
        assert!(
            err.to_string().contains("every executor must read"),
            "{err}"
        );
        let scratch = files.dir.clone();
        drop(written);
        assert!(!scratch.exists(), "removed with its tables");
        let err = files.narrow(&wh, 0).expect_err("refused");
        assert!(err.to_string().contains("cannot find"), "{err}");
    }

    #[test]
    fn a_scratch_directory_that_exists_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = Written::make(dir.path(), Vec::new())
            .err()
            .expect("refused");
        assert!(err.to_string().contains("exists already"), "{err}");
    }
}
