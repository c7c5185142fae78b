//! What an algorithm hands to the release, `utility` and `report`: an [`Output`]. A
//! generalizing algorithm's is a [`Generalization`]: per source row, whether it is published
//! and the generalized QI codes it carries. Clustering algorithms produce it by copying each
//! EC's representative onto its members (001 Alg. 2 line 21); the single-table baselines write
//! it row by row. Anatomy's is an [`Anatomization`]: groups on slot trees, QI values exact,
//! which `release` lays out as a QI side and an SA side.
//!
//! Column fragments (004) join as a variant with their producer: several fragments, each
//! naming its QI columns per table (the algorithm chooses them, so the release reads the
//! released columns from the `Output`, not the plan) and carrying a [`Generalization`] of
//! the forest projected onto them (`Forest::project`). The readers match on [`Output`], so
//! the compiler lists each one that must learn the new kind (`release::materialize`, which
//! picks a layout per variant, [`Output::kept`], `utility::measure` and the pipeline's
//! anatomy report). `verify` never sees an
//! `Output`: it checks the declared model on the release.

mod anatomy;
mod budgets;
mod generalization;

pub use anatomy::{Anatomization, Anatomy, Group, Rule, Slot};
pub use budgets::{tt_budget, vv_budget};
pub use generalization::{Generalization, Relocated, RelocationTest, INSTEAD_OF_SUPPRESSION};

/// What an algorithm produced.
#[derive(Debug, Clone)]
pub enum Output {
    /// Rows kept or suppressed, kept rows with generalized QI codes.
    Generalized(Generalization),
    /// Groups of entities on slot trees, QI values exact (000 Ch. 3).
    Anatomized(Anatomization),
}

/// `Generalization::groups` of a row no representative vertex stands for.
pub const NO_GROUP: u32 = u32::MAX;

impl Output {
    /// Which source rows are published, whatever the kind.
    pub fn kept(&self) -> &[Vec<bool>] {
        match self {
            Output::Generalized(g) => &g.kept,
            Output::Anatomized(a) => &a.kept,
        }
    }
}
