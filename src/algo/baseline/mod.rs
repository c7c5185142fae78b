//! The single-table baselines of 001 Sec. III: ways to reach "k-anonymity" with a
//! single-table algorithm that the paper shows leak (universal relation, per-table) or lose
//! utility (bitmap). They exist to be measured against and to be caught by `verify`; each
//! writes a release in the same contract as every other algorithm.
//!
//! The single-table algorithm is 001 Alg. 2 itself (CDGH, of which MiRaCle is the
//! multi-relational extension) run over a flat table: a one-table [`Forest`] whose rows have
//! no children, so the pairwise anonymization reduces to generalizing one row's QIs.

mod bitmap;
mod per_table;
mod universal;

pub use bitmap::bitmap;
pub use per_table::per_table;
pub use universal::universal;

use std::collections::HashMap;
use std::sync::Arc;

use arrow::datatypes::Schema;
use arrow::record_batch::{RecordBatch, RecordBatchOptions};

use crate::algo::cdgh::{self, CdghParams, Clustering};
use crate::algo::generalization::Generalization;
use crate::algo::pairwise::Pairwise;
use crate::forest::{Forest, TableNodes};
use crate::hierarchy::Hierarchy;
use crate::plan::{Algorithm, Params};
use crate::progress::Progress;

/// A single table for the single-table algorithm: `rows` records of row-major QI codes.
struct FlatTable {
    hierarchies: Vec<Hierarchy>,
    codes: Vec<u32>,
    rows: usize,
}

impl FlatTable {
    /// The table as a one-table forest (rows without children) so CDGH can cluster it.
    fn into_forest(self) -> Forest {
        let batch = RecordBatch::try_new_with_options(
            Arc::new(Schema::empty()),
            Vec::new(),
            &RecordBatchOptions::new().with_row_count(Some(self.rows)),
        )
        .expect("a column-less batch with an explicit row count is always valid");
        Forest {
            tables: vec![TableNodes {
                name: "flat".to_string(),
                batch,
                hierarchies: self.hierarchies,
                qi: self.codes,
                sensitive: Vec::new(),
                parent: vec![u32::MAX; self.rows],
                children: Vec::new(),
                orphans_dropped: 0,
                no_parent: 0,
                rows_in: self.rows,
            }],
        }
    }
}

/// 001 Alg. 2 over a flat table, rows visited in order: clusters of at least k rows whose
/// representative carries the generalized codes; leftovers suppressed (line 22). `progress`
/// counts flat rows.
fn cluster_flat(table: FlatTable, params: &Params, progress: &Progress) -> Clustering {
    let forest = table.into_forest();
    let order: Vec<u32> = (0..forest.entities() as u32).collect();
    // Node matching is all a childless row needs; MiRaCle and MiRaCleX agree here.
    let pw = Pairwise::new(&forest, Algorithm::Miraclex);
    cdgh::cluster(
        &forest,
        &pw,
        &order,
        CdghParams {
            k: params.model.min_group(),
            threshold: params.threshold,
            climit: params.climit,
        },
        progress,
    )
}

/// The classes a single-table tool reports for the entity table: released entities grouped
/// by their released root row. (The baselines know no multi-relational classes; `verify`
/// counts the true ones, and for `universal` and `per-table` finds some smaller than k.)
fn entity_table_classes(forest: &Forest, g: &mut Generalization) {
    let mut index: HashMap<&[u32], usize> = HashMap::new();
    let mut sizes: Vec<usize> = Vec::new();
    for row in 0..forest.entities() as u32 {
        if !g.kept[0][row as usize] {
            continue;
        }
        let next = sizes.len();
        let i = *index.entry(g.row(forest, 0, row)).or_insert(next);
        if i == next {
            sizes.push(0);
        }
        sizes[i] += 1;
    }
    g.suppressed_entities = g.count_suppressed_entities();
    g.ec_sizes = sizes;
}

#[cfg(test)]
mod tests;
