//! What an algorithm hands to the release, `utility` and `report`: an [`Output`]. A
//! generalizing algorithm's is a [`Generalization`]: per source row, whether it is published
//! and the generalized QI codes it carries. Clustering algorithms produce it by copying each
//! EC's representative onto its members (001 Alg. 2 line 21); the single-table baselines write
//! it row by row. Anatomy's is an [`Anatomization`]: groups on slot trees, QI values exact,
//! which `release` lays out as a QI side and an SA side.
//!
//! Column fragments (004) are a [`Fragmentation`]: fragments each naming the entity table's
//! QI columns it publishes (the algorithm chooses them, so the release reads the released
//! columns from the `Output`, not the plan) and carrying a [`Generalization`] of the forest
//! projected onto them (`Forest::project`) and the class it publishes. The readers match
//! on [`Output`] (`release::materialize`, which picks a layout per variant, [`Output::kept`],
//! `utility::measure` and the pipeline's anatomy report). `verify` never sees an `Output`:
//! it checks the declared model on the release.

mod anatomy;
mod budgets;
mod fragmentation;
mod generalization;

pub use anatomy::{Anatomization, Anatomy, Group, Rule, Slot};
pub use budgets::{tt_budget, vv_budget};
pub use fragmentation::{ChildColumn, Fragment, Fragmentation};
pub use generalization::{Generalization, Relocated, RelocationTest, INSTEAD_OF_SUPPRESSION};

/// What an algorithm produced.
#[derive(Debug, Clone)]
pub enum Output {
    /// Rows kept or suppressed, kept rows with generalized QI codes.
    Generalized(Generalization),
    /// Groups of entities on slot trees, QI values exact (000 Ch. 3).
    Anatomized(Anatomization),
    /// The entity table in vertical fragments sharing only a class column (004).
    Fragmented(Fragmentation),
}

/// `Generalization::groups` of a row no representative vertex stands for.
pub const NO_GROUP: u32 = u32::MAX;

impl Output {
    /// Which source rows are published, whatever the kind.
    pub fn kept(&self) -> &[Vec<bool>] {
        match self {
            Output::Generalized(g) => &g.kept,
            Output::Anatomized(a) => &a.kept,
            Output::Fragmented(f) => &f.kept,
        }
    }
}
