//! 001 Sec. III-B, local anonymization: every family table k-anonymized on its own QIs as
//! if it were the only table (Table VI's T_p^1 and T_1^1), join keys untouched.
//!
//! Decisions: a table without QIs is one class of identical rows, so it is published whole
//! (clustering it would only suppress leftovers for nothing). A row the single-table run
//! suppresses takes its descendants with it, so every released FK still joins.

use crate::algo::kernel::cdgh::CdghParams;
use crate::algo::output::Generalization;
use crate::forest::Forest;
use crate::progress::Progress;

use super::{cluster_flat, entity_table_classes, FlatTable};

/// 001 Sec. III-B over the whole forest.
pub fn per_table(forest: &Forest, params: CdghParams, progress: &Progress) -> Generalization {
    let mut g = Generalization::empty(forest);
    for (t, nodes) in forest.tables.iter().enumerate() {
        if nodes.nqi() == 0 {
            g.kept[t].fill(true);
            continue;
        }
        let table = FlatTable {
            hierarchies: nodes.hierarchies.clone(),
            codes: nodes.qi.clone(),
            rows: nodes.rows(),
        };
        let clustering = cluster_flat(table, params, progress);
        let n = nodes.nqi();
        for ec in &clustering.ecs {
            for &row in &ec.members {
                g.kept[t][row as usize] = true;
                g.codes[t][row as usize * n..row as usize * n + n].copy_from_slice(&ec.qi);
            }
        }
    }
    g.close_under_parents(forest);
    entity_table_classes(forest, &mut g);
    g
}
