//! 001 Sec. III-C, bitmap anonymization: one row per entity holding its own QIs and one bit
//! per child value path (Table VII: "Math-T" took Math, "Math-Discrete" bought Discrete for
//! Math), k-anonymized as a single table, then mapped back to the relational tables.
//!
//! A complete database reads a missing path as "0" (known not to hold), an incomplete one as
//! "*" (unknown). Bits have no hierarchy: a class keeps a path only if every member has it
//! ("1" for all); a mixed or absent path is suppressed (Sec. III-C item 2: anonymization
//! only through suppression). In the complete variant the single-table cost also pays for
//! mixing "0" with "1", so entities that share absences cluster together; in the incomplete
//! one only lost "1"s cost.
//!
//! Decisions: a bit says "at least one" (item 1: multiplicities are lost), so a kept path is
//! published as exactly one row per member (the first in source order under the member's
//! kept parent); further rows with the same path are suppressed. Child QI cells are never
//! generalized (item 2). A path kept by the class but missing under some member's chosen
//! parent (only possible with repeated paths) is suppressed for the whole class, so the
//! published trees stay identical.

use std::collections::HashMap;

use crate::algo::kernel::cdgh::CdghParams;
use crate::algo::kernel::tree::Clustering;
use crate::algo::output::Generalization;
use crate::forest::Forest;
use crate::hierarchy::Hierarchy;
use crate::progress::Progress;

use super::{cluster_flat, FlatTable};

/// Code of "1" in a bit column; "0" is 2 and "*" the root, 0.
const PRESENT: u32 = 1;
const ABSENT_COMPLETE: u32 = 2;

/// Child value paths: a vertex's path is its parent's path plus its own table and QI codes.
struct Paths {
    /// `of[t][row]`: path id of a vertex below the root (unused for table 0).
    of: Vec<Vec<u32>>,
    /// Per path: its table and its parent path (`None` for a child of the root).
    table: Vec<usize>,
    parent: Vec<Option<u32>>,
}

/// 001 Sec. III-C over the whole forest.
pub fn bitmap(
    forest: &Forest,
    params: CdghParams,
    complete: bool,
    progress: &Progress,
) -> Generalization {
    let parent_table = parent_tables(forest);
    let paths = intern_paths(forest, &parent_table);
    let table = bitmap_table(forest, &paths, &parent_table, complete);
    let clustering = cluster_flat(table, params, progress);
    map_back(forest, &paths, &parent_table, &clustering)
}

/// The parent table of every family table (`None` for the entity table).
fn parent_tables(forest: &Forest) -> Vec<Option<usize>> {
    let mut parent = vec![None; forest.tables.len()];
    for (t, nodes) in forest.tables.iter().enumerate() {
        for group in &nodes.children {
            parent[group.table] = Some(t);
        }
    }
    parent
}

/// Numbers every distinct path, parents before children (tables come parent first).
fn intern_paths(forest: &Forest, parent_table: &[Option<usize>]) -> Paths {
    let mut ids: HashMap<(Option<u32>, usize, Vec<u32>), u32> = HashMap::new();
    let mut paths = Paths {
        of: forest.tables.iter().map(|t| vec![0; t.rows()]).collect(),
        table: Vec::new(),
        parent: Vec::new(),
    };
    for (t, nodes) in forest.tables.iter().enumerate().skip(1) {
        let pt = parent_table[t].expect("every table but the entity table has a parent");
        for row in 0..nodes.rows() as u32 {
            let p = nodes.parent[row as usize];
            let parent_path = (pt != 0).then(|| paths.of[pt][p as usize]);
            let key = (parent_path, t, nodes.codes(row).to_vec());
            let next = paths.table.len() as u32;
            let id = *ids.entry(key).or_insert(next);
            if id == next {
                paths.table.push(t);
                paths.parent.push(parent_path);
            }
            paths.of[t][row as usize] = id;
        }
    }
    paths
}

/// Table VII: per entity, its own QI codes and one bit per path.
fn bitmap_table(
    forest: &Forest,
    paths: &Paths,
    parent_table: &[Option<usize>],
    complete: bool,
) -> FlatTable {
    let root = &forest.tables[0];
    let n = root.rows();
    let nqi = root.nqi();
    let width = nqi + paths.table.len();
    let absent = if complete { ABSENT_COMPLETE } else { 0 };
    let mut codes = vec![absent; n * width];
    for e in 0..n {
        codes[e * width..e * width + nqi].copy_from_slice(root.codes(e as u32));
    }
    // entity[t][row]: the entity a vertex belongs to (parents are resolved first).
    let mut entity: Vec<Vec<u32>> = vec![(0..n as u32).collect()];
    for (t, nodes) in forest.tables.iter().enumerate().skip(1) {
        let pt = parent_table[t].expect("every table but the entity table has a parent");
        let own: Vec<u32> = nodes
            .parent
            .iter()
            .map(|&p| entity[pt][p as usize])
            .collect();
        for (row, &e) in own.iter().enumerate() {
            codes[e as usize * width + nqi + paths.of[t][row] as usize] = PRESENT;
        }
        entity.push(own);
    }
    let bit = Hierarchy::flat("bit", &["1", "0"]);
    let hierarchies = root
        .hierarchies
        .iter()
        .cloned()
        .chain(std::iter::repeat_n(bit, paths.table.len()))
        .collect();
    FlatTable {
        hierarchies,
        codes,
        rows: n,
    }
}

/// Publishes each class: members' root rows with the class's generalized codes, and for every
/// path all members have, one row per member.
fn map_back(
    forest: &Forest,
    paths: &Paths,
    parent_table: &[Option<usize>],
    clustering: &Clustering,
) -> Generalization {
    let root = &forest.tables[0];
    let nqi = root.nqi();
    let mut g = Generalization::empty(forest);
    for ec in &clustering.ecs {
        for &m in &ec.members {
            g.kept[0][m as usize] = true;
            g.codes[0][m as usize * nqi..m as usize * nqi + nqi].copy_from_slice(&ec.qi[..nqi]);
        }
        // chosen[(member, path)]: the row published for that path.
        let mut chosen: HashMap<(u32, u32), u32> = HashMap::new();
        for (p, &code) in ec.qi[nqi..].iter().enumerate() {
            if code != PRESENT {
                continue;
            }
            let p = p as u32;
            let t = paths.table[p as usize];
            let pt = parent_table[t].expect("a path's table has a parent");
            let group = forest.tables[pt]
                .children
                .iter()
                .find(|c| c.table == t)
                .expect("a table is a child group of its parent table");
            let picks: Option<Vec<u32>> = ec
                .members
                .iter()
                .map(|&m| {
                    let under = match paths.parent[p as usize] {
                        None => m,
                        Some(q) => *chosen.get(&(m, q))?,
                    };
                    group
                        .of(under)
                        .iter()
                        .copied()
                        .find(|&c| paths.of[t][c as usize] == p)
                })
                .collect();
            let Some(picks) = picks else {
                continue;
            };
            for (&m, row) in ec.members.iter().zip(picks) {
                chosen.insert((m, p), row);
                g.kept[t][row as usize] = true;
            }
        }
    }
    g.ec_sizes = clustering.ecs.iter().map(|ec| ec.member_count()).collect();
    g.suppressed_entities = clustering.suppressed.len();
    g
}
