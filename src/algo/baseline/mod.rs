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

use crate::algo::kernel::cdgh::{self, CdghParams};
use crate::algo::kernel::pairwise::{Pairwise, Siblings};
use crate::algo::kernel::tree::Clustering;
use crate::algo::output::Generalization;
use crate::algo::{Options, Output, Spec};
use crate::forest::{Forest, TableNodes};
use crate::hierarchy::Hierarchy;
use crate::plan::Model;
use crate::progress::Progress;

pub static UNIVERSAL: Spec = baseline("universal", &[], run_universal);
pub static PER_TABLE: Spec = baseline("per-table", &[], run_per_table);
pub static BITMAP_COMPLETE: Spec = baseline("bitmap-complete", &[], run_bitmap_complete);
pub static BITMAP_INCOMPLETE: Spec =
    baseline("bitmap-incomplete", &["bitmap"], run_bitmap_incomplete);

/// A baseline's entry: CDGH's options, k-anonymity only, any plan.
const fn baseline(
    name: &'static str,
    aliases: &'static [&'static str],
    run: fn(&Forest, &Model, &Options, &Progress) -> Result<Output, String>,
) -> Spec {
    Spec {
        name,
        aliases,
        note: "",
        baseline: true,
        options: cdgh::OPTIONS,
        serves: k_anonymity_baseline,
        refuses: crate::algo::takes_any_plan,
        run,
        unread: crate::algo::spec::reads_every_option,
    }
}

fn k_anonymity_baseline(model: &Model) -> Result<(), String> {
    match model {
        Model::KAnonymity { .. } => Ok(()),
        Model::LDiversity { .. } | Model::Anatomy { .. } => {
            Err("is a k-anonymity baseline (001 Sec. III)".to_string())
        }
    }
}

fn run_universal(
    forest: &Forest,
    model: &Model,
    o: &Options,
    progress: &Progress,
) -> Result<Output, String> {
    let params = CdghParams::from_options(model.min_group(), o);
    Ok(Output::Generalized(universal(forest, params, progress)))
}

fn run_per_table(
    forest: &Forest,
    model: &Model,
    o: &Options,
    progress: &Progress,
) -> Result<Output, String> {
    let params = CdghParams::from_options(model.min_group(), o);
    Ok(Output::Generalized(per_table(forest, params, progress)))
}

fn run_bitmap_complete(
    forest: &Forest,
    model: &Model,
    o: &Options,
    p: &Progress,
) -> Result<Output, String> {
    let params = CdghParams::from_options(model.min_group(), o);
    Ok(Output::Generalized(bitmap(forest, params, true, p)))
}

fn run_bitmap_incomplete(
    forest: &Forest,
    model: &Model,
    o: &Options,
    p: &Progress,
) -> Result<Output, String> {
    let params = CdghParams::from_options(model.min_group(), o);
    Ok(Output::Generalized(bitmap(forest, params, false, p)))
}

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
fn cluster_flat(table: FlatTable, params: CdghParams, progress: &Progress) -> Clustering {
    let forest = table.into_forest();
    let order: Vec<u32> = (0..forest.entities() as u32).collect();
    // Node matching is all a childless row needs; MiRaCle and MiRaCleX agree here.
    let pw = Pairwise::new(&forest, Siblings::ByNode, 1.0);
    cdgh::cluster(&forest, &pw, &order, params, progress)
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
