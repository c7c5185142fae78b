//! Anatomy of hierarchical records (000 Ch. 3): t-t and v-v anatomization under (p,m)-privacy
//! rules. So far the grouping (`anatomize`, Algorithms 6-8) and the rules' exact occurrence
//! budgets (`thresholds`); its release, its independent checks and its declarations are
//! still to be built, so no declaration reaches it yet.

pub mod anatomize;
pub mod thresholds;
