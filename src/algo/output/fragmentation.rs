//! A vertical fragmentation's output (004): the entity table published as two fragments,
//! each a [`Generalization`] of the forest projected onto its QI columns, sharing only the
//! class column, whose values each fragment publishes as its repair left them.

use super::Generalization;

/// What `algorithm = 'fragment'` produced.
#[derive(Debug, Clone)]
pub struct Fragmentation {
    /// The fragments, the first one first (`<table>__f1`).
    pub fragments: Vec<Fragment>,
    /// The class: its index among the entity table's sensitive columns.
    pub class: usize,
    /// Per column of the entity table's source rows (`TableNodes::batch`, in its order), the
    /// fragment it is published in when the release publishes it; QI columns and the class
    /// are placed by `Fragment::qi` and in every fragment, whatever this says (004 D25).
    pub placement: Vec<usize>,
    /// `kept[t][row]`: published in at least one fragment.
    pub kept: Vec<Vec<bool>>,
    /// How the class was repaired: `naive`, `dgbe` or `delta`.
    pub repair: &'static str,
    /// Bins of a numeric column when mutual information is counted (004 D5).
    pub bins: usize,
    /// FMRMR of the fragmentation (004 Sec. 3.2, D3).
    pub fmrmr: f64,
    /// The most mutual information between a QI column of one fragment and one of another:
    /// (QI index, QI index, nats). The channel a probabilistic re-linkage would use, which
    /// the class repair does not close (spec Sec. 3, "NOT guaranteed").
    pub cross_mi: Option<(usize, usize, f64)>,
    /// QI columns of one fragment that determine a QI column of another in the source
    /// (determining, determined): a released label of the first can name the second.
    pub cross_determined: Vec<(usize, usize)>,
    /// Layout A: a child table's column (table, column) that determines, per entity, a QI
    /// column of the key-less fragment.
    pub child_determined: Vec<(usize, ChildColumn, usize)>,
    /// Under l-diversity (004 Sec. 5): the segments the rows were cut into, after the
    /// cross-segment repair, and how many that repair merged away.
    pub segments: Option<(usize, usize)>,
    /// Layout A on entity trees (spec Sec. 4.2): the first fragment is the anchor, whose
    /// generalization covers every family table (the entity key and the child tables are
    /// released with it); the second covers the entity table alone.
    pub trees: bool,
}

/// One fragment.
#[derive(Debug, Clone)]
pub struct Fragment {
    /// The entity table's QI columns it publishes, ascending (indices in
    /// `FamilyTable::qi_columns` order).
    pub qi: Vec<usize>,
    /// Its base algorithm's output over the forest projected onto `qi`.
    pub generalization: Generalization,
    /// The class code it publishes per entity row (the source's where no repair changed it);
    /// unused where `sets` is published instead.
    pub class: Vec<u32>,
    /// Its equivalence classes (entities with equal generalized codes), each its rows.
    pub ecs: Vec<Vec<u32>>,
    /// Under `repair = 'delta'` (004 Sec. 4.2.4): per EC of `ecs`, the class codes it
    /// publishes as a set, its rows publishing no class of their own.
    pub sets: Option<Vec<Vec<u32>>>,
    /// Class cells its repair changed (under `delta`: rows whose class its EC's set lost).
    pub changed: usize,
    /// Entities per equivalence class as the fragment shows them (equal labels), which can
    /// be fewer classes than its base algorithm formed.
    pub ec_sizes: Vec<usize>,
}

/// A child table's column: its `q`-th QI column or `s`-th sensitive column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildColumn {
    Qi(usize),
    Sensitive(usize),
}
