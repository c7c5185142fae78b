//! An anatomy (000 Ch. 3) as the release, `utility` and `report` read it: the groups with
//! their slot trees, the rules as applied, and which source rows sit at which slot. Made by
//! `algo::anatomy`; laid out by `release` as a QI side and an SA side.

use super::NO_GROUP;
use crate::forest::Forest;
use crate::fraction::Fraction;
use crate::plan::Variant;

/// (s, m, p): at most a share p of a group's trees may hold value `code` of sensitive column
/// `column` of family table `table` m times or more (Def. 18-19).
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// The declared rule it comes from (its index in the model's rules).
    pub declared: usize,
    pub table: usize,
    pub column: usize,
    pub code: u32,
    pub m: u32,
    pub p: Fraction,
}

/// One aligned vertex position of a group: a table, a parent slot, one row per member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slot {
    pub table: usize,
    pub parent: Option<usize>,
    /// `rows[i]`: member i's row of `table` at this slot.
    pub rows: Vec<u32>,
}

/// ℓ entities and their common slot tree (slot 0 is the root; parents come first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub members: Vec<u32>,
    pub slots: Vec<Slot>,
}

/// The groups, and the entities suppressed whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Anatomy {
    pub groups: Vec<Group>,
    pub suppressed: Vec<u32>,
    /// The partitions used (the one asked for, clamped).
    pub partitions: usize,
}

/// An anatomy (000 Ch. 3) as the release, `utility` and `report` read it: the groups with
/// their slot trees, the variant, and which source rows are published.
#[derive(Debug, Clone)]
pub struct Anatomization {
    pub anatomy: Anatomy,
    pub variant: Variant,
    /// `kept[t][row]`: the row sits at a slot of its entity's group.
    pub kept: Vec<Vec<bool>>,
    /// `slot_of[t][row]`: the index of the row's slot among all groups' slots (group by
    /// group, each group's slots in order), [`NO_GROUP`] for a suppressed row.
    pub slot_of: Vec<Vec<u32>>,
    /// `group_of[entity]`: the entity's group, [`NO_GROUP`] if suppressed.
    pub group_of: Vec<u32>,
    /// The rules as the algorithm applied them: one per value of a declared rule.
    pub rules: Vec<Rule>,
}

impl Anatomization {
    pub fn new(forest: &Forest, anatomy: Anatomy, variant: Variant) -> Anatomization {
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
