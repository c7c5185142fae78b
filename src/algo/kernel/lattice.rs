//! The full-domain generalization lattice across every table of the family (002 Ch. 2,
//! multi-relational form of the spec's Sec. 4): a node gives each QI column one level of its
//! hierarchy, every cell of the column in every row is generalized to that level (global
//! recoding), and the entities fall into classes of trees that are QI-isomorphic under the
//! recoding (000 Def. 12). Whole entities of classes smaller than k are suppressed.
//!
//! - Levels are top-aligned (spec decision 29): column c has levels 0..=D_c (D_c its
//!   hierarchy's height), and at level l a leaf x becomes its ancestor at depth
//!   min(depth(x), D_c - l), so a shallow leaf keeps its label until its ancestors are
//!   reached and level D_c is `*` for every leaf. Each level is then a function of the one
//!   below (spec Sec. 1), which the roll-up and the monotonicity below rest on.
//! - Classes are found by canonical tree ids (AHU): bottom-up, a row's id interns its table,
//!   its generalized codes and, per child table, the sorted ids of its children; entities
//!   with one root id form a class. Interning keys on the whole content, so two trees get one
//!   id exactly when they are isomorphic. A single table without children needs no trees: its
//!   rows' generalized codes are packed into one integer and hashed instead (`packer`).
//! - A node's classes are rolled up from a finer node's (spec Sec. 4.4 strategy 3): every
//!   class of u <= v lies inside one class of v, so one representative per class of u is
//!   canonicalized under v and the sizes are summed by root id. Nodes are visited depth
//!   first over the spanning tree that reaches v from v - e_j (j the last column v raises
//!   above 0), so only the partitions along one path are held.
//! - Suppression shrinks going up (002 Theorem 2, which holds for trees: spec Sec. 4.5), so
//!   feasibility under a budget is up-closed, and the loss of the kept cells is bounded
//!   below by the loss of every cell at the node's levels (`floor_loss`), which only grows
//!   going up: a node whose bound exceeds the best loss found cannot lead to a better one.

use rustc_hash::FxHashMap;

use crate::forest::Forest;
use crate::hierarchy::Hierarchy;

/// One QI column of the lattice: where it is and what each level makes of each node.
#[derive(Debug, Clone)]
pub struct Column {
    /// The hierarchy's height D_c: levels run 0..=height.
    pub height: u16,
    /// `gen[level][node]`: the node a value at `node` is generalized to at `level`.
    gen: Vec<Vec<u32>>,
    /// Sum over the column's cells of LM' at each level (001 Def. 8).
    loss_at: Vec<f64>,
}

/// The lattice of a forest: its columns and the mixed-radix numbering of its nodes.
#[derive(Debug)]
pub struct Lattice<'f> {
    forest: &'f Forest,
    pub columns: Vec<Column>,
    /// Number of nodes (the product of the columns' level counts).
    pub size: usize,
    /// `cols_of[t]`: the lattice columns of table t, in QI order.
    cols_of: Vec<Vec<usize>>,
    /// QI cells per entity tree, per entity.
    tree_cells: Vec<u64>,
    /// All QI cells of the family.
    pub cells: u64,
}

/// One class of a node: a representative entity and how many entities it stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Class {
    pub rep: u32,
    pub size: u32,
}

/// One class of a node, as [`Lattice::classes_at`] finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClassAt {
    /// Its first member.
    pub rep: u32,
    pub size: u32,
    /// The least number of distinct values among its members over the entity table's
    /// sensitive columns (0 without any).
    pub distinct: u32,
}

/// Why a lattice cannot be searched.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LatticeError {
    #[error("the lattice of the {columns} QI column(s) has {size} nodes ({shape} levels) over {rows} family rows: searching it visits up to {work:.1e} rows, more than the {limit:.0e} relanon searches; declare fewer quasi-identifiers or hierarchies with fewer levels")]
    TooLarge {
        columns: usize,
        size: String,
        shape: String,
        rows: usize,
        work: f64,
        limit: f64,
    },
}

/// The most row visits a search may need (nodes times family rows, each node's classes
/// rolled up over at most every row): UCI Adult's 6,480 nodes over 30,162 rows need 2e8.
pub const WORK_LIMIT: f64 = 4e9;

impl<'f> Lattice<'f> {
    /// The lattice of every QI column of the forest, in plan order.
    pub fn new(forest: &'f Forest) -> Lattice<'f> {
        let mut columns = Vec::new();
        let mut cols_of = vec![Vec::new(); forest.tables.len()];
        for (t, table) in forest.tables.iter().enumerate() {
            for (q, h) in table.hierarchies.iter().enumerate() {
                cols_of[t].push(columns.len());
                columns.push(column(forest, t, q, h));
            }
        }
        // Saturating: a lattice that large is refused by `searchable` before any search.
        let size = columns
            .iter()
            .map(|c| c.height as usize + 1)
            .fold(1usize, usize::saturating_mul);
        let tree_cells = (0..forest.entities() as u32)
            .map(|e| tree_cells(forest, 0, e))
            .collect();
        let cells = forest
            .tables
            .iter()
            .map(|t| (t.rows() * t.nqi()) as u64)
            .sum();
        Lattice {
            forest,
            columns,
            size,
            cols_of,
            tree_cells,
            cells,
        }
    }

    /// Whether a search of every node is within [`WORK_LIMIT`] row visits (the top node alone
    /// always is: it costs one pass over the rows).
    pub fn searchable(&self) -> Result<(), LatticeError> {
        let rows: usize = self.forest.tables.iter().map(|t| t.rows()).sum();
        let product: f64 = self.columns.iter().map(|c| c.height as f64 + 1.0).product();
        let work = product * rows.max(1) as f64;
        if work <= WORK_LIMIT {
            return Ok(());
        }
        Err(LatticeError::TooLarge {
            columns: self.columns.len(),
            size: format!("{product:.0}"),
            shape: self
                .columns
                .iter()
                .map(|c| (c.height + 1).to_string())
                .collect::<Vec<_>>()
                .join(" x "),
            rows,
            work,
            limit: WORK_LIMIT,
        })
    }

    /// The lowest node's classes: every entity canonicalized with its leaves.
    pub fn bottom(&self) -> Vec<Class> {
        let levels = vec![0u16; self.columns.len()];
        let all: Vec<Class> = (0..self.forest.entities() as u32)
            .map(|rep| Class { rep, size: 1 })
            .collect();
        self.roll_up(&all, &levels)
    }

    /// The classes at `levels`, from the classes of a node at or below it (002 Rollup, the
    /// spec's strategy 3): each class's representative is canonicalized at `levels` and the
    /// classes with one root id merge. Classes come out in the order of their first member.
    pub fn roll_up(&self, finer: &[Class], levels: &[u16]) -> Vec<Class> {
        if let Some(packer) = self.packer(levels) {
            let mut slot: FxHashMap<u64, u32> = FxHashMap::default();
            slot.reserve(finer.len());
            let mut out: Vec<Class> = Vec::new();
            for class in finer {
                let next = out.len() as u32;
                match *slot.entry(packer.pack(class.rep)).or_insert(next) {
                    i if i == next => out.push(*class),
                    i => out[i as usize].size += class.size,
                }
            }
            return out;
        }
        self.canonical_roll_up(finer, levels)
    }

    /// [`Lattice::roll_up`] by canonical tree ids, whatever the family.
    fn canonical_roll_up(&self, finer: &[Class], levels: &[u16]) -> Vec<Class> {
        let mut interner = Interner::with_capacity(finer.len());
        // Root id -> position in `out` (ids are dense, so a vector serves as the map).
        let mut slot: Vec<u32> = Vec::new();
        let mut out: Vec<Class> = Vec::new();
        for class in finer {
            let root = self.canon(0, class.rep, levels, &mut interner) as usize;
            if root >= slot.len() {
                slot.resize(root + 1, u32::MAX);
            }
            match slot[root] {
                u32::MAX => {
                    slot[root] = out.len() as u32;
                    out.push(*class);
                }
                i => out[i as usize].size += class.size,
            }
        }
        out
    }

    /// The canonical id of `row` of table `t` and the rows below it, at `levels`.
    fn canon(&self, t: usize, row: u32, levels: &[u16], interner: &mut Interner) -> u32 {
        let table = &self.forest.tables[t];
        let mut key = interner.buffer(t);
        key.push(t as u32);
        let codes = table.codes(row);
        for (&c, &code) in self.cols_of[t].iter().zip(codes) {
            key.push(self.columns[c].gen[levels[c] as usize][code as usize]);
        }
        for children in &table.children {
            let kids = children.of(row);
            let start = key.len() + 1;
            key.push(kids.len() as u32);
            for &k in kids {
                let id = self.canon(children.table, k, levels, interner);
                key.push(id);
            }
            key[start..].sort_unstable();
        }
        interner.intern(t, key)
    }

    /// Every entity's canonical root id at `levels`: entities with one id are one class.
    pub fn root_ids(&self, levels: &[u16]) -> Vec<u32> {
        self.flat_ids(levels)
            .unwrap_or_else(|| self.canonical_ids(levels))
    }

    /// [`Lattice::root_ids`] by canonical tree ids, whatever the family.
    fn canonical_ids(&self, levels: &[u16]) -> Vec<u32> {
        let mut interner = Interner::with_capacity(self.forest.entities());
        (0..self.forest.entities() as u32)
            .map(|e| self.canon(0, e, levels, &mut interner))
            .collect()
    }

    /// One table without children: a row's class is its generalized codes alone, so they are
    /// packed into one integer (a field per column, as wide as its hierarchy's node count
    /// needs) and numbered in the order first met, instead of interning a key per row. `None`
    /// on trees, or where the fields pass 64 bits.
    fn flat_ids(&self, levels: &[u16]) -> Option<Vec<u32>> {
        let packer = self.packer(levels)?;
        let mut dense: FxHashMap<u64, u32> = FxHashMap::default();
        let ids = (0..self.forest.tables[0].rows() as u32)
            .map(|row| {
                let next = dense.len() as u32;
                *dense.entry(packer.pack(row)).or_insert(next)
            })
            .collect();
        Some(ids)
    }

    /// One table without children: its rows' generalized codes at `levels` packed into one
    /// integer, a field per column as wide as its hierarchy's node count needs. `None` on
    /// trees, or where the fields pass 64 bits.
    fn packer(&self, levels: &[u16]) -> Option<Packer<'_>> {
        let table = &self.forest.tables[0];
        if self.forest.tables.len() != 1 || !table.children.is_empty() {
            return None;
        }
        let widths: Vec<u32> = self
            .columns
            .iter()
            .map(|c| u32::BITS - (c.gen[0].len() as u32).leading_zeros())
            .collect();
        if widths.iter().sum::<u32>() > u64::BITS {
            return None;
        }
        let gens = self
            .columns
            .iter()
            .zip(levels)
            .map(|(c, &l)| c.gen[l as usize].as_slice())
            .collect();
        Some(Packer {
            table,
            gens,
            widths,
        })
    }

    /// Every entity's class at `levels`: the class index of each entity, and each class
    /// (numbered in the order of its first member).
    pub fn classes_at(&self, levels: &[u16]) -> (Vec<u32>, Vec<ClassAt>) {
        let roots = self.root_ids(levels);
        let mut dense: FxHashMap<u32, u32> = FxHashMap::default();
        let class_of: Vec<u32> = roots
            .iter()
            .map(|r| {
                let next = dense.len() as u32;
                *dense.entry(*r).or_insert(next)
            })
            .collect();
        let classes = dense.len();
        let mut sizes = vec![0u32; classes];
        let mut reps = Vec::with_capacity(classes);
        for (e, &c) in class_of.iter().enumerate() {
            if c as usize == reps.len() {
                reps.push(e as u32);
            }
            sizes[c as usize] += 1;
        }
        let sensitive = &self.forest.tables[0].sensitive;
        let mut least = vec![if sensitive.is_empty() { 0 } else { u32::MAX }; classes];
        for s in sensitive {
            let mut pairs: Vec<(u32, u32)> = class_of
                .iter()
                .copied()
                .zip(s.codes.iter().copied())
                .collect();
            pairs.sort_unstable();
            pairs.dedup();
            let mut count = vec![0u32; classes];
            for (c, _) in pairs {
                count[c as usize] += 1;
            }
            for (l, n) in least.iter_mut().zip(count) {
                *l = (*l).min(n);
            }
        }
        let measured = reps
            .into_iter()
            .zip(sizes)
            .zip(least)
            .map(|((rep, size), distinct)| ClassAt {
                rep,
                size,
                distinct,
            })
            .collect();
        (class_of, measured)
    }

    /// A node as a release records it: per column its level and its hierarchy's height.
    pub fn released_levels(&self, levels: &[u16]) -> Vec<(u16, u16)> {
        self.columns
            .iter()
            .zip(levels)
            .map(|(c, &l)| (l, c.height))
            .collect()
    }

    /// LM' summed over the cells of entity `e`'s tree at `levels`.
    pub fn tree_loss(&self, e: u32, levels: &[u16]) -> f64 {
        self.row_loss(0, e, levels)
    }

    fn row_loss(&self, t: usize, row: u32, levels: &[u16]) -> f64 {
        let table = &self.forest.tables[t];
        let mut sum = 0.0;
        for ((&c, &code), h) in self.cols_of[t]
            .iter()
            .zip(table.codes(row))
            .zip(&table.hierarchies)
        {
            sum += h.loss(self.columns[c].gen[levels[c] as usize][code as usize]);
        }
        for children in &table.children {
            for &k in children.of(row) {
                sum += self.row_loss(children.table, k, levels);
            }
        }
        sum
    }

    /// LM' summed over every cell of the family at `levels`: a lower bound of the loss of
    /// any release at the node (suppressed cells count 1, at least their loss), and it only
    /// grows with the levels.
    pub fn floor_loss(&self, levels: &[u16]) -> f64 {
        self.columns
            .iter()
            .zip(levels)
            .map(|(c, &l)| c.loss_at[l as usize])
            .sum()
    }

    /// Per column and level, LM' summed over the cells of `entities`' trees: what those
    /// cells would cost kept, to be replaced by what they cost suppressed (1 each).
    pub fn losses_of(&self, entities: &[u32]) -> Vec<Vec<f64>> {
        let mut out: Vec<Vec<f64>> = self
            .columns
            .iter()
            .map(|c| vec![0.0; c.height as usize + 1])
            .collect();
        for &e in entities {
            self.add_losses(0, e, &mut out);
        }
        out
    }

    fn add_losses(&self, t: usize, row: u32, out: &mut [Vec<f64>]) {
        let table = &self.forest.tables[t];
        for ((&c, &code), h) in self.cols_of[t]
            .iter()
            .zip(table.codes(row))
            .zip(&table.hierarchies)
        {
            for (level, sum) in out[c].iter_mut().enumerate() {
                *sum += h.loss(self.columns[c].gen[level][code as usize]);
            }
        }
        for children in &table.children {
            for &k in children.of(row) {
                self.add_losses(children.table, k, out);
            }
        }
    }

    /// LM' summed over column `c`'s cells at `level` (001 Def. 8's numerator).
    pub fn level_loss(&self, c: usize, level: u16) -> f64 {
        self.columns[c].loss_at[level as usize]
    }

    /// The forest the lattice is over.
    pub fn forest(&self) -> &'f Forest {
        self.forest
    }

    /// The node a column's value is generalized to.
    #[inline]
    pub fn generalize(&self, column: usize, level: u16, node: u32) -> u32 {
        self.columns[column].gen[level as usize][node as usize]
    }

    /// The lattice columns of table `t`.
    pub fn columns_of(&self, t: usize) -> &[usize] {
        &self.cols_of[t]
    }

    /// QI cells in entity `e`'s tree.
    pub fn tree_cells(&self, e: u32) -> u64 {
        self.tree_cells[e as usize]
    }

    /// The height of a node: the sum of its levels (spec decision 16).
    pub fn height(levels: &[u16]) -> u32 {
        levels.iter().map(|&l| l as u32).sum()
    }
}

/// The nodes above `levels` in the spanning tree: one column raised by one, only columns
/// from the last one `levels` raises on, so every node has exactly one way up from the
/// bottom (the ordered enumeration of multisets).
pub fn successors(lattice: &Lattice, levels: &[u16]) -> Vec<Vec<u16>> {
    let last = levels.iter().rposition(|&l| l > 0).unwrap_or(0);
    (last..levels.len())
        .filter(|&c| levels[c] < lattice.columns[c].height)
        .map(|c| {
            let mut up = levels.to_vec();
            up[c] += 1;
            up
        })
        .collect()
}

/// Builds a column's level tables.
fn column(forest: &Forest, t: usize, q: usize, h: &Hierarchy) -> Column {
    let height = h.height();
    let gen: Vec<Vec<u32>> = (0..=height)
        .map(|level| {
            (0..h.len() as u32)
                .map(|node| {
                    let target = h.depth(node).min(height - level);
                    let mut n = node;
                    while h.depth(n) > target {
                        n = h.parent(n);
                    }
                    n
                })
                .collect()
        })
        .collect();
    let table = &forest.tables[t];
    let nqi = table.nqi();
    let mut per_node = vec![0u64; h.len()];
    for r in 0..table.rows() {
        per_node[table.qi[r * nqi + q] as usize] += 1;
    }
    let loss_at = gen
        .iter()
        .map(|g| {
            per_node
                .iter()
                .enumerate()
                .filter(|(_, &n)| n > 0)
                .map(|(node, &n)| n as f64 * h.loss(g[node]))
                .sum()
        })
        .collect();
    Column {
        height,
        gen,
        loss_at,
    }
}

/// QI cells in the tree under `row` of table `t`.
fn tree_cells(forest: &Forest, t: usize, row: u32) -> u64 {
    let table = &forest.tables[t];
    let below: u64 = table
        .children
        .iter()
        .flat_map(|c| {
            c.of(row)
                .iter()
                .map(move |&k| tree_cells(forest, c.table, k))
        })
        .sum();
    table.nqi() as u64 + below
}

/// Packs a one-table row's generalized codes at one node ([`Lattice::packer`]).
struct Packer<'a> {
    table: &'a crate::forest::TableNodes,
    gens: Vec<&'a [u32]>,
    widths: Vec<u32>,
}

impl Packer<'_> {
    fn pack(&self, row: u32) -> u64 {
        self.table
            .codes(row)
            .iter()
            .zip(&self.gens)
            .zip(&self.widths)
            .fold(0u64, |acc, ((&code, gen), &w)| {
                (acc << w) | u64::from(gen[code as usize])
            })
    }
}

/// Tree contents to dense ids, for one node. Keys are built in buffers reused per table
/// (a row's key is complete before its parent's is), so only new contents allocate.
#[derive(Default)]
struct Interner {
    ids: FxHashMap<Vec<u32>, u32>,
    buffers: Vec<Vec<u32>>,
}

impl Interner {
    fn with_capacity(n: usize) -> Interner {
        let mut ids = FxHashMap::default();
        ids.reserve(n);
        Interner {
            ids,
            buffers: Vec::new(),
        }
    }

    /// An empty key buffer for a row of table `t`.
    fn buffer(&mut self, t: usize) -> Vec<u32> {
        if self.buffers.len() <= t {
            self.buffers.resize_with(t + 1, Vec::new);
        }
        let mut b = std::mem::take(&mut self.buffers[t]);
        b.clear();
        b
    }

    fn intern(&mut self, t: usize, key: Vec<u32>) -> u32 {
        let id = match self.ids.get(key.as_slice()) {
            Some(&id) => id,
            None => {
                let id = self.ids.len() as u32;
                self.ids.insert(key.clone(), id);
                id
            }
        };
        self.buffers[t] = key;
        id
    }
}

/// Forests the tests of the algorithms on the lattice share.
#[cfg(test)]
pub(crate) mod fixtures {
    use crate::forest::{Forest, TableNodes};
    use crate::hierarchy::Hierarchy;
    use crate::plan::HierarchyDef;

    /// One table whose rows are `values[r][q]` under the hierarchies `defs` (rows of
    /// `leaf, parent, ...`).
    pub(crate) fn forest(defs: &[Vec<Vec<&str>>], values: &[Vec<&str>]) -> Forest {
        let n = values.len();
        let mut hierarchies = Vec::new();
        let mut codes = Vec::new();
        for (q, def) in defs.iter().enumerate() {
            let rows: Vec<&[&str]> = def.iter().map(Vec::as_slice).collect();
            let texts: Vec<Option<String>> =
                values.iter().map(|v| Some(v[q].to_string())).collect();
            let built = Hierarchy::build(
                &format!("h{q}"),
                &HierarchyDef::from_rows(&rows),
                &format!("t.c{q}"),
                &texts,
                &vec![None; n],
            )
            .expect("the fixture's values are leaves");
            hierarchies.push(built.hierarchy);
            codes.push(built.codes);
        }
        let qi = (0..n)
            .flat_map(|r| codes.iter().map(move |c| c[r]))
            .collect();
        Forest {
            tables: vec![TableNodes::bare("t", hierarchies, qi, vec![u32::MAX; n])],
        }
    }

    /// seed-003 Table 1 (the spec's fixture): Age, Nation, Zip of nine people.
    pub(crate) fn table1() -> Forest {
        let people = [
            ("12", "Greece", "47906"),
            ("19", "Turkey", "47907"),
            ("17", "Greece", "47907"),
            ("23", "Spain", "49703"),
            ("38", "Brazil", "49705"),
            ("33", "Peru", "49812"),
            ("41", "USA", "49001"),
            ("43", "Canada", "49001"),
            ("48", "Canada", "49001"),
        ];
        let age = |a: &str| -> Vec<String> {
            let n: u32 = a.parse().expect("an age");
            let decade = (n - 1) / 10 * 10 + 1;
            let half = if n <= 30 { "[11-30]" } else { "[31-50]" };
            vec![
                a.to_string(),
                format!("[{decade}-{}]", decade + 9),
                half.to_string(),
            ]
        };
        let region = |c: &str| match c {
            "Greece" | "Turkey" => ["E.EU", "EU"],
            "Spain" => ["W.EU", "EU"],
            "Brazil" | "Peru" => ["S.AM", "AM"],
            _ => ["N.AM", "AM"],
        };
        let zip = |z: &str| -> Vec<String> {
            (0..5)
                .map(|i| format!("{}{}", &z[..5 - i], "*".repeat(i)))
                .collect()
        };
        let ages: Vec<Vec<String>> = people.iter().map(|p| age(p.0)).collect();
        let nations: Vec<Vec<String>> = people
            .iter()
            .map(|p| {
                let [r, c] = region(p.1);
                vec![p.1.to_string(), r.to_string(), c.to_string()]
            })
            .collect();
        let zips: Vec<Vec<String>> = people.iter().map(|p| zip(p.2)).collect();
        fn as_rows(v: &[Vec<String>]) -> Vec<Vec<&str>> {
            v.iter()
                .map(|r| r.iter().map(String::as_str).collect())
                .collect()
        }
        let defs = vec![as_rows(&ages), as_rows(&nations), as_rows(&zips)];
        let values: Vec<Vec<&str>> = people.iter().map(|p| vec![p.0, p.1, p.2]).collect();
        forest(&defs, &values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algo::kernel::annotate::tests::flat;

    /// The classes of `ids` as sorted member lists, whatever the ids are.
    fn partition(ids: &[u32]) -> Vec<Vec<u32>> {
        let mut members: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
        for (e, &id) in ids.iter().enumerate() {
            members.entry(id).or_default().push(e as u32);
        }
        let mut classes: Vec<Vec<u32>> = members.into_values().collect();
        classes.sort_unstable();
        classes
    }

    #[test]
    fn a_flat_tables_packed_classes_are_its_canonical_ones_at_every_node() {
        for seed in 0..4 {
            let forest = flat(seed, 300);
            let lattice = Lattice::new(&forest);
            let heights: Vec<u16> = lattice.columns.iter().map(|c| c.height).collect();
            for n in 0..lattice.size {
                let levels = crate::algo::kernel::annotate::node_levels(&heights, n);
                let packed = lattice.flat_ids(&levels).expect("one table packs");
                assert_eq!(
                    partition(&packed),
                    partition(&lattice.canonical_ids(&levels)),
                    "seed {seed}, node {levels:?}"
                );
            }
        }
    }

    #[test]
    fn a_flat_tables_packed_roll_up_is_its_canonical_one() {
        for seed in 0..4 {
            let forest = flat(seed, 300);
            let lattice = Lattice::new(&forest);
            let bottom = lattice.bottom();
            let all: Vec<Class> = (0..forest.entities() as u32)
                .map(|rep| Class { rep, size: 1 })
                .collect();
            assert_eq!(bottom, lattice.canonical_roll_up(&all, &[0, 0]));
            let top: Vec<u16> = lattice.columns.iter().map(|c| c.height).collect();
            for levels in [vec![0, top[1]], vec![top[0], 0], top.clone()] {
                assert_eq!(
                    lattice.roll_up(&bottom, &levels),
                    lattice.canonical_roll_up(&bottom, &levels),
                    "seed {seed}, node {levels:?}"
                );
            }
        }
    }

    #[test]
    fn trees_are_not_packed() {
        let forest = crate::algo::kernel::annotate::tests::family(1, 20);
        let lattice = Lattice::new(&forest);
        assert!(lattice.flat_ids(&vec![0; lattice.columns.len()]).is_none());
    }
}
