//! A generalizing algorithm's [`Generalization`]: per source row, whether it is published
//! and the generalized QI codes it carries, made from a clustering (001 Alg. 2 line 21) or
//! row by row.

use super::NO_GROUP;
use crate::algo::kernel::relocate::Moved;
use crate::algo::kernel::tree::{Clustering, Rep};
use crate::forest::Forest;

/// The outcome of an algorithm, one entry per source row of every family table.
#[derive(Debug, Clone)]
pub struct Generalization {
    /// `kept[t][row]`: the row is published (its parent, if any, is published too).
    pub kept: Vec<Vec<bool>>,
    /// `codes[t]`: row-major generalized QI codes (hierarchy nodes), `nqi` per row; a
    /// suppressed row keeps its leaf codes, which nothing reads.
    pub codes: Vec<Vec<u32>>,
    /// `groups[t][row]`: the representative vertex the row was published as (rows of one EC
    /// sharing it are matched vertices), [`NO_GROUP`] where the algorithm has none.
    pub groups: Vec<Vec<u32>>,
    /// Size of every equivalence class of entities, as the algorithm formed them.
    pub ec_sizes: Vec<usize>,
    /// Entities left out whole.
    pub suppressed_entities: usize,
    /// Global recoding's node: per QI column in plan order (each table's QI columns in
    /// `FamilyTable::qi_columns` order), the level every cell was generalized to and the
    /// column's height. `None` for local recoding.
    pub levels: Option<Vec<(u16, u16)>>,
    /// A hybrid release (003): rows published with another group's labels, on purpose and
    /// within a budget; `None` for every other algorithm, whose QI cells are all truthful.
    pub relocation: Option<Relocated>,
}

/// What a hybrid release relocated (003 Def. 6-7, spec Sec. 3 "the release says what it
/// is"): how many QI cells are untruthful against the budget, never which.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Relocated {
    /// `p`: the percent of the family's QI cells allowed.
    pub p: f64,
    /// The most untruthful cells allowed: `p/100` of `qi_cells`, rounded down.
    pub budget: usize,
    /// The family's QI cells (suppressed rows' too), what `p` is a percent of (D1).
    pub qi_cells: usize,
    /// Per family table, QI cells published with a label that is not an ancestor of (or)
    /// the source value.
    pub cells: Vec<usize>,
    /// Which createHybrid: deterministic, randomized, statistical or rstat.
    pub variant: String,
    /// The statistical variants' test of the released group sizes (Def. 9, D2-D4).
    pub test: Option<RelocationTest>,
    /// Relocation instead of suppression (`kernel::relocate`): the entities it kept; hybrid on
    /// entity trees with `leftovers = 'embed'`: the entities embedded in smaller trees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entities: Option<usize>,
}

/// The `variant` of relocation instead of suppression (`kernel::relocate`, relanon's own).
pub const INSTEAD_OF_SUPPRESSION: &str = "instead of suppression";

impl Relocated {
    /// Adds another shard's relocation to this one: shards partition the family's rows, so
    /// their budgets (each `p`% of its own QI cells, rounded down) add up to no more than
    /// `p`% of the whole's, which is what verify allows.
    pub fn absorb(held: &mut Option<Relocated>, more: Option<Relocated>) {
        let Some(more) = more else { return };
        match held {
            None => *held = Some(more),
            Some(h) => {
                h.budget += more.budget;
                h.qi_cells += more.qi_cells;
                for (a, b) in h.cells.iter_mut().zip(&more.cells) {
                    *a += b;
                }
                h.entities = match (h.entities, more.entities) {
                    (None, None) => None,
                    (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
                };
            }
        }
    }
}

impl From<Moved> for Relocated {
    fn from(m: Moved) -> Relocated {
        Relocated {
            p: m.p,
            budget: m.budget,
            qi_cells: m.qi_cells,
            cells: m.cells,
            variant: INSTEAD_OF_SUPPRESSION.to_string(),
            test: None,
            entities: Some(m.entities),
        }
    }
}

/// Pearson's test of a statistical hybrid's group sizes against the generalization's.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RelocationTest {
    pub alpha: f64,
    /// `Σ (O_i - E_i)² / E_i`.
    pub x2: f64,
    pub df: usize,
    /// `χ²_{1-α}(df)`: the release passes where `x2` is not above it.
    pub critical: f64,
}

impl Generalization {
    /// Nothing published yet: every row suppressed, with its source leaf codes.
    pub fn empty(forest: &Forest) -> Generalization {
        Generalization {
            kept: forest
                .tables
                .iter()
                .map(|t| vec![false; t.rows()])
                .collect(),
            codes: forest.tables.iter().map(|t| t.qi.clone()).collect(),
            groups: forest
                .tables
                .iter()
                .map(|t| vec![NO_GROUP; t.rows()])
                .collect(),
            ec_sizes: Vec::new(),
            suppressed_entities: 0,
            levels: None,
            relocation: None,
        }
    }

    /// 001 Alg. 2 line 21: every member gets a copy of its EC's representative; rows no
    /// representative node stands for are suppressed.
    pub fn from_clustering(forest: &Forest, clustering: &Clustering) -> Generalization {
        let mut g = Generalization::empty(forest);
        fn walk(rep: &Rep, forest: &Forest, g: &mut Generalization, next: &mut u32) {
            let t = rep.table as usize;
            let nqi = forest.tables[t].nqi();
            let group = *next;
            *next = next.saturating_add(1).min(NO_GROUP - 1);
            for &row in &rep.members {
                g.kept[t][row as usize] = true;
                g.codes[t][row as usize * nqi..row as usize * nqi + nqi].copy_from_slice(&rep.qi);
                g.groups[t][row as usize] = group;
            }
            for c in &rep.children {
                walk(c, forest, g, next);
            }
        }
        let mut next = 0;
        for ec in &clustering.ecs {
            walk(ec, forest, &mut g, &mut next);
        }
        g.ec_sizes = clustering.ecs.iter().map(Rep::member_count).collect();
        g.suppressed_entities = clustering.suppressed.len();
        g
    }

    /// [`Generalization::from_clustering`] of a clustering relocation instead of suppression
    /// changed (`moved`, where it ran).
    pub fn relocated(forest: &Forest, clustering: &Clustering, moved: Option<Moved>) -> Self {
        let mut g = Self::from_clustering(forest, clustering);
        g.relocation = moved.map(Relocated::from);
        g
    }

    /// Generalized codes of one row.
    pub fn row(&self, forest: &Forest, table: usize, row: u32) -> &[u32] {
        let n = forest.tables[table].nqi();
        &self.codes[table][row as usize * n..row as usize * n + n]
    }

    /// Drops every row whose parent is not published, top-down, so the release's FKs always
    /// point at a published row.
    pub fn close_under_parents(&mut self, forest: &Forest) {
        for (t, nodes) in forest.tables.iter().enumerate() {
            for group in &nodes.children {
                for r in 0..nodes.rows() as u32 {
                    if !self.kept[t][r as usize] {
                        for &c in group.of(r) {
                            self.kept[group.table][c as usize] = false;
                        }
                    }
                }
            }
        }
    }

    /// Entities whose root row is not published.
    pub fn count_suppressed_entities(&self) -> usize {
        self.kept
            .first()
            .map_or(0, |k| k.iter().filter(|&&kept| !kept).count())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moved(budget: usize, qi_cells: usize, cells: Vec<usize>, entities: usize) -> Relocated {
        Relocated::from(Moved {
            p: 1.0,
            budget,
            qi_cells,
            cells,
            entities,
        })
    }

    #[test]
    fn shards_relocations_add_up_and_a_shard_without_one_adds_nothing() {
        let mut held = None;
        Relocated::absorb(&mut held, Some(moved(2, 250, vec![1, 0], 1)));
        Relocated::absorb(&mut held, None);
        Relocated::absorb(&mut held, Some(moved(3, 399, vec![2, 1], 2)));
        let r = held.expect("two shards relocated");
        // floor(2.5) + floor(3.99) = 5 <= floor(6.49) = 6: within the whole's budget.
        assert_eq!((r.budget, r.qi_cells), (5, 649));
        assert_eq!((r.cells, r.entities), (vec![3, 1], Some(3)));
        assert_eq!(r.variant, INSTEAD_OF_SUPPRESSION);
    }
}
