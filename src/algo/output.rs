//! What an algorithm hands to the release, `utility` and `report`: an [`Output`]. A
//! generalizing algorithm's is a [`Generalization`]: per source row, whether it is published
//! and the generalized QI codes it carries. Clustering algorithms produce it by copying each
//! EC's representative onto its members (001 Alg. 2 line 21); the single-table baselines write
//! it row by row. Anatomy's is an [`Anatomization`]: groups on slot trees, QI values exact,
//! which `release` lays out as a QI side and an SA side.
//!
//! Column fragments (004: several fragments, each generalized) will join as a variant of
//! [`Output`]; the readers match on it, so the compiler lists each one that must learn the
//! new kind. `verify` never sees an `Output`: it checks the declared model on the release.

use crate::algo::kernel::tree::Clustering;
use crate::algo::kernel::tree::Rep;
use crate::forest::Forest;

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

/// An anatomy (000 Ch. 3) as the release, `utility` and `report` read it: the groups with
/// their slot trees, the variant, and which source rows are published.
#[derive(Debug, Clone)]
pub struct Anatomization {
    pub anatomy: crate::algo::anatomy::anatomize::Anatomy,
    pub variant: crate::plan::Variant,
    /// `kept[t][row]`: the row sits at a slot of its entity's group.
    pub kept: Vec<Vec<bool>>,
    /// `slot_of[t][row]`: the index of the row's slot among all groups' slots (group by
    /// group, each group's slots in order), [`NO_GROUP`] for a suppressed row.
    pub slot_of: Vec<Vec<u32>>,
    /// `group_of[entity]`: the entity's group, [`NO_GROUP`] if suppressed.
    pub group_of: Vec<u32>,
    /// The rules as the algorithm applied them: one per value of a declared rule.
    pub rules: Vec<crate::algo::anatomy::anatomize::Rule>,
}

impl Anatomization {
    pub fn new(
        forest: &Forest,
        anatomy: crate::algo::anatomy::anatomize::Anatomy,
        variant: crate::plan::Variant,
    ) -> Anatomization {
        let mut kept: Vec<Vec<bool>> = forest
            .tables
            .iter()
            .map(|t| vec![false; t.rows()])
            .collect();
        let mut slot_of: Vec<Vec<u32>> = forest
            .tables
            .iter()
            .map(|t| vec![NO_GROUP; t.rows()])
            .collect();
        let mut group_of = vec![NO_GROUP; forest.entities()];
        let mut next = 0u32;
        for (g, group) in anatomy.groups.iter().enumerate() {
            for &m in &group.members {
                group_of[m as usize] = g as u32;
            }
            for slot in &group.slots {
                for &row in &slot.rows {
                    kept[slot.table][row as usize] = true;
                    slot_of[slot.table][row as usize] = next;
                }
                next += 1;
            }
        }
        Anatomization {
            anatomy,
            variant,
            kept,
            slot_of,
            group_of,
            rules: Vec::new(),
        }
    }

    /// Every slot of every group, in `slot_of`'s numbering.
    pub fn slots(&self) -> usize {
        self.anatomy.groups.iter().map(|g| g.slots.len()).sum()
    }
}

impl Output {
    /// Which source rows are published, whatever the kind.
    pub fn kept(&self) -> &[Vec<bool>] {
        match self {
            Output::Generalized(g) => &g.kept,
            Output::Anatomized(a) => &a.kept,
        }
    }
}
