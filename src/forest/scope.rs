//! What a load covers when the family is larger than memory: the hierarchies built once over
//! the whole family, and a [`Scope`] that loads one shard's trees coded in them (the shards
//! are cut from the family's outline, `forest::outline`).
//!
//! Why hierarchies are global: a hierarchy built from a shard's values would count that
//! shard's leaves, so the same label would cost another loss in each shard, and a bands
//! hierarchy would hold other nodes. Built over the table's distinct values (sorted, so every
//! run numbers the nodes alike), codes, losses and labels mean the same in every shard.

use arrow::record_batch::RecordBatch;

use super::{rendered, ForestError};
use crate::hierarchy::Hierarchy;
use crate::plan::{FamilyTable, Plan};
use crate::warehouse::{collect_on, quote_ident as quote, Engine};

/// What one load reads: the whole family (the default), or the trees of some entities coded
/// with hierarchies built over the whole family.
#[derive(Debug, Default, Clone, Copy)]
pub struct Scope<'a> {
    /// A registered table whose columns are the entity table's key columns: only these
    /// entities' trees are read. Rows the whole load leaves out (orphans, rows without a
    /// parent) are left out here too, uncounted: the outline counted them.
    pub entities: Option<&'a str>,
    /// Per family table, its QI columns' hierarchies ([`hierarchies`]).
    pub hierarchies: Option<&'a [Vec<Hierarchy>]>,
}

/// Per family table, its QI columns' hierarchies built over the whole family, each from
/// its column's distinct values (queries `engine` runs).
pub async fn hierarchies(
    plan: &Plan,
    engine: &dyn Engine,
) -> Result<Vec<Vec<Hierarchy>>, ForestError> {
    let mut out = Vec::with_capacity(plan.tables.len());
    for ft in &plan.tables {
        let mut table = Vec::new();
        for (col, hname) in ft.qi_columns() {
            table.push(over_distinct(plan, engine, ft, col, hname).await?);
        }
        out.push(table);
    }
    Ok(out)
}

/// The hierarchy `hname` of column `col`, built from the column's distinct values.
async fn over_distinct(
    plan: &Plan,
    engine: &dyn Engine,
    ft: &FamilyTable,
    col: &str,
    hname: &str,
) -> Result<Hierarchy, ForestError> {
    let def = plan
        .hierarchies
        .get(hname)
        .ok_or_else(|| ForestError::Internal(format!("hierarchy {hname} not resolved")))?;
    // A split table's entries share the table: each entry's hierarchy covers its own rows,
    // as the whole load's does.
    let filter = ft
        .part
        .as_ref()
        .map(|part| format!(" WHERE {}", part.sql_filter("s")))
        .unwrap_or_default();
    let query = format!(
        "SELECT DISTINCT s.{c} FROM {t} s{filter} ORDER BY 1 NULLS FIRST",
        c = quote(col),
        t = quote(&ft.name)
    );
    let batches = collect_on(engine, &query).await?;
    let values = match batches.first() {
        Some(first) => crate::warehouse::concat_owned(&first.schema(), batches)
            .map_err(|e| ForestError::Internal(e.to_string()))?,
        None => RecordBatch::new_empty(std::sync::Arc::new(arrow::datatypes::Schema::empty())),
    };
    let (texts, numbers) = if values.num_columns() == 0 {
        (Vec::new(), Vec::new())
    } else {
        rendered(values.column(0).as_ref())
    };
    let column = format!("{}.{}", ft.name, col);
    Ok(Hierarchy::build(hname, def, &column, &texts, &numbers)?.hierarchy)
}

#[cfg(test)]
mod tests {
    use arrow::array::UInt32Array;

    use super::*;
    use crate::forest::{load_scoped, Forest};

    /// Each QI cell of `forest` as its label, row by row, table by table.
    fn labels(forest: &Forest) -> Vec<Vec<Option<String>>> {
        forest
            .tables
            .iter()
            .map(|t| {
                (0..t.rows() as u32)
                    .flat_map(|r| {
                        t.codes(r)
                            .iter()
                            .zip(&t.hierarchies)
                            .map(|(&c, h)| h.label(c).map(str::to_string))
                            .collect::<Vec<_>>()
                    })
                    .collect()
            })
            .collect()
    }

    /// A shard read from the source is the whole forest's subset of its entities: the same
    /// rows in the same order, the same parents, every QI cell the same leaf; the global
    /// hierarchies hold the whole's leaves.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_shard_read_from_the_source_is_the_whole_forests_subset() {
        let (_dir, plan, wh) = crate::forest::tpch_fixture().await;
        let whole = crate::forest::load(&plan, &wh).await.expect("whole");
        let global = hierarchies(&plan, &wh).await.expect("hierarchies");
        for (w, g) in whole.tables.iter().zip(&global) {
            let leaves: Vec<u32> = g.iter().map(Hierarchy::total_leaves).collect();
            let whole_leaves: Vec<u32> =
                w.hierarchies.iter().map(Hierarchy::total_leaves).collect();
            assert_eq!(leaves, whole_leaves, "{}", w.name);
        }
        // Every third entity, by key.
        let entities: Vec<u32> = (0..whole.entities() as u32).step_by(3).collect();
        let keys = arrow::compute::take_record_batch(
            &whole.tables[0]
                .batch
                .project(&[whole.tables[0]
                    .batch
                    .schema()
                    .index_of("c_custkey")
                    .expect("key")])
                .expect("the key"),
            &UInt32Array::from(entities.clone()),
        )
        .expect("take");
        let _registered = wh.temporary("__shard", keys).expect("register");
        let scope = Scope {
            entities: Some("__shard"),
            hierarchies: Some(&global),
        };
        let shard = load_scoped(&plan, &wh, scope).await.expect("shard");
        let (expected, _) = whole.subset(&entities).expect("subset");
        for (s, e) in shard.tables.iter().zip(&expected.tables) {
            assert_eq!(s.batch, e.batch, "{}", s.name);
            assert_eq!(s.parent, e.parent, "{}", s.name);
        }
        assert_eq!(labels(&shard), labels(&expected));
        // The same label costs the same in the shard as in the whole.
        let h = &shard.tables[0].hierarchies[0];
        assert_eq!(
            h.total_leaves(),
            whole.tables[0].hierarchies[0].total_leaves()
        );
    }
}
