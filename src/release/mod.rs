//! Materializing a release (the contract in DESIGN.md): publishes each kept row with the
//! generalized QI codes its algorithm gave it, leaves suppressed rows out, writes QI cells as
//! hierarchy labels, drops IDENTIFIER columns, pseudonymizes join keys and sorts rows by
//! released key. Produces Arrow tables for the writer and the key map for the verifier; does
//! no I/O itself.
//!
//! # Layout
//! One module per layout, chosen by the [`Output`] variant in [`materialize`]: generalized
//! rows are the family tables as [`family`] writes them; an anatomy ([`anatomy`]) adds slot
//! and group ids to them and an SA side. Both read the released columns from the plan
//! (`FamilyTable::columns` and their roles); a vertical fragmentation's fragments
//! ([`fragments`]) read which fragment a column goes to from the `Output`. The shared
//! parts: [`keys`] (released keys, permutations, the key map, row order).

mod anatomy;
mod family;
mod fragments;
mod keys;
pub mod pieces;

pub use fragments::{class_sets_table_name, fragment_table_name, FragmentReport, FragmentSummary};

use crate::algo::Output;
use crate::forest::Forest;
use crate::keymap::KeyMap;
use crate::plan::Plan;
use crate::warehouse::ReleaseTable;

#[derive(Debug, thiserror::Error)]
#[error("building the release failed: {0}")]
pub struct ReleaseError(String);

fn internal(e: impl std::fmt::Display) -> ReleaseError {
    ReleaseError(e.to_string())
}

/// What one family table lost.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct TableStats {
    pub name: String,
    pub rows_in: usize,
    pub released: usize,
    pub suppressed: usize,
    pub orphans_dropped: usize,
    /// Source rows left out for having no parent (a NULL FK), with their descendants.
    pub no_parent: usize,
    /// 001 Def. 8 numerator over this table's released QI cells.
    pub lm_sum: f64,
    /// The same numerator per QI column (name, sum), in source column order: shows which
    /// column paid for the table's loss.
    pub lm_sum_by_column: Vec<(String, f64)>,
    pub qi_columns: usize,
}

/// The materialized family tables with their key map and per-table statistics.
pub struct Materialized {
    pub tables: Vec<ReleaseTable>,
    pub keys: KeyMap,
    pub stats: Vec<TableStats>,
    /// Size of every EC, in EC order.
    pub ec_sizes: Vec<usize>,
    pub suppressed_entities: usize,
    /// Global recoding's node, per QI column `table.column`: (level, height).
    pub recoding: Vec<(String, u16, u16)>,
    /// A hybrid release's relocation (003): what the report says about its untruthful cells.
    pub relocation: Option<crate::algo::Relocated>,
    /// A vertical fragmentation's fragments (004): what the report says about them.
    pub fragmentation: Option<FragmentSummary>,
    /// A fragmentation's provenance: per fragment (in `fragmentation`'s order), the source
    /// row of each released row. The owner's secret, like the key map: read by the re-join
    /// attack's score, never written.
    pub fragment_rows: Vec<Vec<u32>>,
}

/// Builds the release tables from what the algorithm produced; `plan.params.seed` (or the OS)
/// drives the key surrogates. The `Output` variant chooses the layout.
pub fn materialize(
    plan: &Plan,
    forest: &Forest,
    output: &Output,
) -> Result<Materialized, ReleaseError> {
    match output {
        Output::Generalized(g) => family::tables(plan, forest, g, None),
        Output::Anatomized(a) => anatomy::tables(plan, forest, a),
        Output::Fragmented(f) => fragments::tables(plan, forest, f),
    }
}
