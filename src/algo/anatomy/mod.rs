//! Anatomy of hierarchical records (000 Ch. 3): t-t and v-v anatomization under (p,m)-privacy
//! rules. So far the rules' exact occurrence budgets (`thresholds`), which the grouping
//! (Algorithms 6-8), its release and its independent checks will read.

pub mod thresholds;
