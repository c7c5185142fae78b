//! The annotated lattice (002 Ch. 2 and 4, the spec's Sec. 4.3-4.4): every node of the
//! lattice with its cumulative histograms, so a request (k or l, a suppression budget, the
//! most generalization accepted) is answered by lookups instead of passes over the data.
//!
//! - Per node, classes are measured by their size (002 D13, k-anonymity) and, when the
//!   entity table has sensitive columns, by the least number of distinct values of those
//!   columns among a class's entities (D14, distinct l-diversity). The histogram keeps, per
//!   value x that occurs, the entities and the rows of every family table in the classes
//!   measuring less (D15-D16 generalized to rows per table: members of one class have
//!   isomorphic trees, so a class adds its size times its representative's rows).
//! - Suppression at (node, x) is monotone over the lattice (002 Theorem 2; the spec's Sec.
//!   4.5 shows it for trees with whole-entity suppression), in entities and in the rows of
//!   every table (P2). The frequency form of l-diversity is not (P8) and is not annotated.
//! - Computed by factorized enumeration (the spec's strategy 2): a table's canonical ids
//!   depend only on the levels of its own subtree's columns, so the non-entity columns are
//!   enumerated outermost, deepest tables slowest, and a table is recomputed only when its
//!   subtree's levels change. Under each such assignment an entity is flat (its own codes
//!   and the id of its children's multiset), and the entity table's columns are walked
//!   depth first over their spanning tree, each node's classes rolled up from the node it
//!   is reached from (strategy 3).

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::algo::kernel::lattice::Lattice;
use crate::forest::Forest;
use crate::progress::Progress;

/// What a class is measured by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    /// Its number of entities (k-anonymity).
    Size,
    /// The least, over the entity table's sensitive columns, of its distinct values
    /// (distinct l-diversity).
    Distinct,
}

/// One node's histogram in cumulative form.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Histogram {
    /// The node's classes.
    pub classes: u32,
    /// The measures that occur, ascending.
    pub stats: Vec<u32>,
    /// `cum[i * tables + t]` for i in 0..=stats.len(): rows of table t (table 0: the
    /// entities) in the classes measuring less than `stats[i]` (i = stats.len(): all).
    pub cum: Vec<u64>,
}

impl Histogram {
    /// The histogram of classes given as (measure, entities, representative), with
    /// `tree_rows[e * tables + t]` the rows of table t in entity e's tree.
    pub fn of_classes(
        tables: usize,
        mut classes: Vec<(u32, u32, u32)>,
        tree_rows: &[u32],
    ) -> Histogram {
        classes.sort_unstable_by_key(|c| c.0);
        let mut h = Histogram {
            classes: classes.len() as u32,
            stats: Vec::new(),
            cum: vec![0; tables],
        };
        let mut running = vec![0u64; tables];
        let mut i = 0;
        while i < classes.len() {
            let stat = classes[i].0;
            h.stats.push(stat);
            while i < classes.len() && classes[i].0 == stat {
                let (_, size, rep) = classes[i];
                for (t, sum) in running.iter_mut().enumerate() {
                    *sum += size as u64 * tree_rows[rep as usize * tables + t] as u64;
                }
                i += 1;
            }
            h.cum.extend_from_slice(&running);
        }
        h
    }

    /// A borrowed view, which the lookups read.
    pub fn view(&self) -> HistogramRef<'_> {
        HistogramRef {
            classes: self.classes,
            stats: &self.stats,
            cum: &self.cum,
        }
    }
}

/// One node's histogram as stored (see [`Histogram`] for the layout).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistogramRef<'a> {
    pub classes: u32,
    pub stats: &'a [u32],
    pub cum: &'a [u64],
}

impl<'a> HistogramRef<'a> {
    /// The number of tables each entry counts.
    fn width(&self) -> usize {
        self.cum.len() / (self.stats.len() + 1)
    }

    /// What requiring `x` suppresses (002 cumKA / cumSLD): per table, the rows of the
    /// classes measuring less than `x`; entry 0 is the entities.
    pub fn suppressed(&self, x: u32) -> &'a [u64] {
        let i = self.stats.partition_point(|&s| s < x);
        let w = self.width();
        &self.cum[i * w..i * w + w]
    }

    /// Entities suppressed when requiring `x`.
    pub fn entities(&self, x: u32) -> u64 {
        self.suppressed(x)[0]
    }

    /// The largest x whose suppression stays within `budget` entities, or `None` when any
    /// x does (the budget covers every entity). Suppression only changes just above a
    /// measure that occurs (the spec's P1), so the answer is one of them.
    pub fn largest_within(&self, budget: u64) -> Option<u32> {
        let w = self.width();
        // The last prefix index whose entities fit the budget (index 0 is 0: always fits).
        let j = (0..=self.stats.len())
            .rev()
            .find(|&i| self.cum[i * w] <= budget)
            .unwrap_or(0);
        self.stats.get(j).copied()
    }
}

/// Every node's histogram in four flat arrays (a few allocations for the whole lattice, so
/// a persisted one reads back fast): node i's measures are
/// `stats[start[i]..start[i + 1]]`, its sums `cum[(start[i] + i) * tables..(start[i + 1] + i + 1) * tables]`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Histograms {
    pub tables: usize,
    pub classes: Vec<u32>,
    pub start: Vec<u64>,
    pub stats: Vec<u32>,
    pub cum: Vec<u64>,
}

impl Histograms {
    /// Lays out one histogram per node, in node order.
    pub fn of_nodes(tables: usize, nodes: Vec<Histogram>) -> Histograms {
        let mut h = Histograms {
            tables,
            start: vec![0],
            ..Histograms::default()
        };
        for n in nodes {
            h.classes.push(n.classes);
            h.stats.extend_from_slice(&n.stats);
            h.cum.extend_from_slice(&n.cum);
            h.start.push(h.stats.len() as u64);
        }
        h
    }

    pub fn len(&self) -> usize {
        self.classes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.classes.is_empty()
    }

    /// Node `i`'s histogram.
    pub fn get(&self, i: usize) -> HistogramRef<'_> {
        let (a, b) = (self.start[i] as usize, self.start[i + 1] as usize);
        HistogramRef {
            classes: self.classes[i],
            stats: &self.stats[a..b],
            cum: &self.cum[(a + i) * self.tables..(b + i + 1) * self.tables],
        }
    }
}

/// Every node of a lattice with its histograms.
#[derive(Debug, Clone, PartialEq)]
pub struct Annotated {
    /// Per column, its hierarchy's height D_c (levels 0..=D_c).
    pub heights: Vec<u16>,
    /// The family's tables, in plan order.
    pub tables: usize,
    pub entities: u64,
    /// Rows per table (table 0: the entities).
    pub rows: Vec<u64>,
    /// Per node (in [`Annotated::index`] order), by class size.
    pub size: Histograms,
    /// Per node, by distinct sensitive values, when the entity table has sensitive columns.
    pub distinct: Option<Histograms>,
    /// Which nodes have histograms, for a partial lattice (002 Ch. 5); `None`: every node.
    /// An uncomputed node's stored histogram suppresses every entity and is never read.
    pub computed: Option<Vec<bool>>,
    /// Nodes of a partial lattice computed since (the top acceptable node of a request,
    /// 002 Fig. 5.23), with their histograms by size and by distinct values.
    pub extra: Vec<(usize, Histogram, Option<Histogram>)>,
    /// For a lattice read back from a file: where its histograms are read from when a
    /// search first asks for them (`size` and `distinct` then hold only the class counts
    /// and the layout). `None`: in `size` and `distinct`.
    pub source: Option<Source>,
}

/// Histograms kept outside memory until asked for (a persisted lattice: an answer reads a
/// few hundred of thousands of nodes).
pub trait HistogramSource: std::fmt::Debug + Send + Sync {
    /// Node `index`'s histogram by `measure` (`None`: not annotated for it). A histogram
    /// that cannot be read comes back suppressing every entity, and [`Self::damaged`] says
    /// why, so no answer rests on it.
    fn get(&self, measure: Measure, index: usize) -> Option<HistogramRef<'_>>;

    /// Why a histogram read so far was unusable, if one was.
    fn damaged(&self) -> Option<String>;
}

/// A shared [`HistogramSource`]; two lattices are equal only if they share one.
#[derive(Debug, Clone)]
pub struct Source(pub std::sync::Arc<dyn HistogramSource>);

impl PartialEq for Source {
    fn eq(&self, other: &Source) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

/// A node's position among `heights`' level vectors: mixed radix, the first column least
/// significant.
pub fn node_index(heights: &[u16], levels: &[u16]) -> usize {
    let mut index = 0;
    for (&l, &h) in levels.iter().zip(heights).rev() {
        index = index * (h as usize + 1) + l as usize;
    }
    index
}

/// The levels of the node at `index` (see [`node_index`]).
pub fn node_levels(heights: &[u16], mut index: usize) -> Vec<u16> {
    heights
        .iter()
        .map(|&h| {
            let radix = h as usize + 1;
            let l = index % radix;
            index /= radix;
            l as u16
        })
        .collect()
}

impl Annotated {
    /// The number of nodes.
    pub fn nodes(&self) -> usize {
        self.size.len()
    }

    /// A node's position: mixed radix, the first column least significant.
    pub fn index(&self, levels: &[u16]) -> usize {
        node_index(&self.heights, levels)
    }

    /// The levels of the node at `index`.
    pub fn levels(&self, index: usize) -> Vec<u16> {
        node_levels(&self.heights, index)
    }

    /// Whether node `index` has its histograms.
    pub fn is_computed(&self, index: usize) -> bool {
        self.computed.as_ref().is_none_or(|c| c[index])
            || self.extra.iter().any(|(i, _, _)| *i == index)
    }

    /// The top node: every column at `*`.
    pub fn top(&self) -> Vec<u16> {
        self.heights.clone()
    }

    /// A node's histogram by `measure` (`None`: not annotated for it).
    pub fn histogram(&self, measure: Measure, index: usize) -> Option<HistogramRef<'_>> {
        if let Some((_, size, distinct)) = self.extra.iter().find(|(i, _, _)| *i == index) {
            return match measure {
                Measure::Size => Some(size.view()),
                Measure::Distinct => distinct.as_ref().map(Histogram::view),
            };
        }
        if !self.is_computed(index) {
            return None;
        }
        if let Some(source) = &self.source {
            return source.0.get(measure, index);
        }
        let hs = match measure {
            Measure::Size => Some(&self.size),
            Measure::Distinct => self.distinct.as_ref(),
        }?;
        (index < hs.len()).then(|| hs.get(index))
    }
}

/// The factorized enumeration's estimate of the row visits annotating takes: each
/// non-entity table once per assignment of its subtree's levels, the entities once per
/// node (an upper bound of the roll-ups).
pub fn estimated_work(lattice: &Lattice) -> f64 {
    let forest = lattice.forest();
    let levels = |cols: &[usize]| -> f64 {
        cols.iter()
            .map(|&c| lattice.columns[c].height as f64 + 1.0)
            .product()
    };
    let mut work = 0.0;
    for t in 1..forest.tables.len() {
        let cols = subtree_columns(lattice, t);
        let children: usize = forest.tables[t].children.iter().map(|c| c.rows.len()).sum();
        work += (forest.tables[t].rows() + children) as f64 * levels(&cols);
    }
    let all: Vec<usize> = (0..lattice.columns.len()).collect();
    work + forest.entities() as f64 * levels(&all)
}

/// Annotates every node of `lattice`, the distinct measure too when `distinct` (the entity
/// table must then have sensitive columns). Counts nodes into `progress`.
pub fn annotate(lattice: &Lattice, distinct: bool, progress: &Progress) -> Annotated {
    annotate_keyed(lattice, distinct, progress, true)
}

/// [`annotate`], with keys packed into 128 bits where they fit when `pack`.
fn annotate_keyed(lattice: &Lattice, distinct: bool, progress: &Progress, pack: bool) -> Annotated {
    let forest = lattice.forest();
    let tables = forest.tables.len();
    let heights: Vec<u16> = lattice.columns.iter().map(|c| c.height).collect();
    let nodes = lattice.size;
    let tree_rows = tree_rows(forest);
    let distinct = distinct && !forest.tables[0].sensitive.is_empty();
    let mut out = Nodes {
        heights: heights.clone(),
        size: vec![Histogram::default(); nodes],
        distinct: distinct.then(|| vec![Histogram::default(); nodes]),
    };
    progress.stage("annotating the lattice", nodes);
    let order = outer_tables(forest);
    let outer: Vec<usize> = order
        .iter()
        .flat_map(|&t| lattice.columns_of(t).iter().copied())
        .collect();
    let subtree: Vec<Vec<usize>> = (0..tables).map(|t| subtree_columns(lattice, t)).collect();
    let flat = Flat {
        lattice,
        columns: lattice.columns_of(0).to_vec(),
        tree_rows: &tree_rows,
        distinct,
        pack,
    };
    // The outermost column's levels split the enumeration into parts that share nothing,
    // run on several threads; each node's histograms land at its index.
    let parts: Vec<Option<u16>> = match outer.first() {
        Some(&c) => (0..=heights[c]).map(Some).collect(),
        None => vec![None],
    };
    let found: Vec<Vec<Found>> = parts
        .par_iter()
        .map(|&part| {
            let mut levels = vec![0u16; heights.len()];
            let rest = match part {
                Some(l) => {
                    levels[outer[0]] = l;
                    &outer[1..]
                }
                None => &outer[..],
            };
            let mut ids: Vec<Vec<u32>> = vec![Vec::new(); tables];
            let mut computed: Vec<Option<Vec<u16>>> = vec![None; tables];
            let mut childsets: Vec<u32> = Vec::new();
            let mut found = Vec::new();
            loop {
                let mut changed = childsets.is_empty();
                for &t in &order {
                    let at: Vec<u16> = subtree[t].iter().map(|&c| levels[c]).collect();
                    if computed[t].as_ref() != Some(&at) {
                        ids[t] = table_ids(lattice, t, &levels, &ids);
                        computed[t] = Some(at);
                        changed = true;
                    }
                }
                if changed {
                    childsets = childset_ids(forest, &ids);
                }
                found.extend(flat.walk(&mut levels, &childsets, tables, progress));
                if !advance(&mut levels, rest, &heights) {
                    break;
                }
            }
            found
        })
        .collect();
    for (at, size, dist) in found.into_iter().flatten() {
        let index = out.index(&at);
        out.size[index] = size;
        if let (Some(d), Some(h)) = (out.distinct.as_mut(), dist) {
            d[index] = h;
        }
    }
    Annotated {
        heights,
        tables,
        entities: forest.entities() as u64,
        rows: forest.tables.iter().map(|t| t.rows() as u64).collect(),
        size: Histograms::of_nodes(tables, out.size),
        distinct: out.distinct.map(|d| Histograms::of_nodes(tables, d)),
        computed: None,
        extra: Vec::new(),
        source: None,
    }
}

/// A node's levels and its histograms (by size, by distinct values).
type Found = (Vec<u16>, Histogram, Option<Histogram>);

/// Histograms by node while they are computed.
struct Nodes {
    heights: Vec<u16>,
    size: Vec<Histogram>,
    distinct: Option<Vec<Histogram>>,
}

impl Nodes {
    fn index(&self, levels: &[u16]) -> usize {
        node_index(&self.heights, levels)
    }
}

/// The non-entity tables in the order their columns are enumerated, outermost first:
/// children before their parent, and of two siblings the one with more rows below it first
/// (the other, recomputed more often, is the cheaper).
fn outer_tables(forest: &Forest) -> Vec<usize> {
    fn subtree_rows(forest: &Forest, t: usize) -> usize {
        forest.tables[t].rows()
            + forest.tables[t]
                .children
                .iter()
                .map(|c| subtree_rows(forest, c.table))
                .sum::<usize>()
    }
    fn visit(forest: &Forest, t: usize, out: &mut Vec<usize>) {
        let mut kids: Vec<usize> = forest.tables[t].children.iter().map(|c| c.table).collect();
        kids.sort_by_key(|&k| (std::cmp::Reverse(subtree_rows(forest, k)), k));
        for k in kids {
            visit(forest, k, out);
        }
        out.push(t);
    }
    let mut out = Vec::new();
    if !forest.tables.is_empty() {
        visit(forest, 0, &mut out);
        out.pop();
    }
    out
}

/// The lattice columns of table `t` and of every table below it.
fn subtree_columns(lattice: &Lattice, t: usize) -> Vec<usize> {
    let mut out = lattice.columns_of(t).to_vec();
    for c in &lattice.forest().tables[t].children {
        out.extend(subtree_columns(lattice, c.table));
    }
    out
}

/// Steps the odometer over the `outer` columns (the last one fastest); false once every
/// assignment has been visited (the columns are then back at 0).
fn advance(levels: &mut [u16], outer: &[usize], heights: &[u16]) -> bool {
    for &c in outer.iter().rev() {
        if levels[c] < heights[c] {
            levels[c] += 1;
            return true;
        }
        levels[c] = 0;
    }
    false
}

/// Rows of every table in each entity's tree: `out[e * tables + t]`.
pub fn tree_rows(forest: &Forest) -> Vec<u32> {
    fn add(forest: &Forest, t: usize, row: u32, counts: &mut [u32]) {
        counts[t] += 1;
        for c in &forest.tables[t].children {
            for &k in c.of(row) {
                add(forest, c.table, k, counts);
            }
        }
    }
    let tables = forest.tables.len();
    let mut out = vec![0u32; forest.entities() * tables];
    for (e, counts) in out.chunks_mut(tables.max(1)).enumerate() {
        add(forest, 0, e as u32, counts);
    }
    out
}

/// Canonical ids of table `t`'s rows at `levels`: a row's id interns its generalized codes
/// and, per child table, the sorted ids of its children (`ids` holds them, current).
fn table_ids(lattice: &Lattice, t: usize, levels: &[u16], ids: &[Vec<u32>]) -> Vec<u32> {
    let table = &lattice.forest().tables[t];
    let cols = lattice.columns_of(t);
    let mut interner: FxHashMap<Vec<u32>, u32> = FxHashMap::default();
    interner.reserve(table.rows());
    let mut key = Vec::new();
    (0..table.rows() as u32)
        .map(|row| {
            key.clear();
            for (&c, &code) in cols.iter().zip(table.codes(row)) {
                key.push(lattice.generalize(c, levels[c], code));
            }
            push_children(table, row, ids, &mut key);
            intern(&mut interner, &key)
        })
        .collect()
}

/// Appends, per child table of `table`, the count and sorted ids of `row`'s children.
fn push_children(
    table: &crate::forest::TableNodes,
    row: u32,
    ids: &[Vec<u32>],
    key: &mut Vec<u32>,
) {
    for children in &table.children {
        let kids = children.of(row);
        key.push(kids.len() as u32);
        let start = key.len();
        key.extend(kids.iter().map(|&k| ids[children.table][k as usize]));
        key[start..].sort_unstable();
    }
}

fn intern(interner: &mut FxHashMap<Vec<u32>, u32>, key: &[u32]) -> u32 {
    if let Some(&id) = interner.get(key) {
        return id;
    }
    let id = interner.len() as u32;
    interner.insert(key.to_vec(), id);
    id
}

/// Per entity, the id of its children's multiset (0 for every entity without child tables).
fn childset_ids(forest: &Forest, ids: &[Vec<u32>]) -> Vec<u32> {
    let root = &forest.tables[0];
    let mut interner: FxHashMap<Vec<u32>, u32> = FxHashMap::default();
    interner.reserve(root.rows());
    let mut key = Vec::new();
    (0..root.rows() as u32)
        .map(|e| {
            key.clear();
            push_children(root, e, ids, &mut key);
            intern(&mut interner, &key)
        })
        .collect()
}

/// A node's classes: representatives and sizes, with the sensitive value sets of each
/// class when the distinct measure is annotated.
struct Classes {
    reps: Vec<u32>,
    sizes: Vec<u32>,
    /// Per class and sensitive column, its distinct codes: `vals[off[i * s + j]..off[i * s + j + 1]]`.
    sets: Option<(Vec<u32>, Vec<u32>)>,
}

/// The entity table's columns walked under one assignment of the others.
struct Flat<'a, 'f> {
    lattice: &'a Lattice<'f>,
    /// The lattice columns of the entity table.
    columns: Vec<usize>,
    tree_rows: &'a [u32],
    distinct: bool,
    /// Whether keys may be packed into 128 bits (off only to test the other path).
    pack: bool,
}

impl Flat<'_, '_> {
    /// Annotates every node that agrees with `levels` outside the entity table's columns,
    /// depth first over the entity columns' spanning tree (leaves `levels` as found). The
    /// first branchings run on several threads; each node's histograms land at its index,
    /// so the result does not depend on the thread count.
    fn walk(
        &self,
        levels: &mut [u16],
        childsets: &[u32],
        tables: usize,
        progress: &Progress,
    ) -> Vec<Found> {
        let forest = self.lattice.forest();
        let n = forest.entities() as u32;
        let singletons = Classes {
            reps: (0..n).collect(),
            sizes: vec![1; n as usize],
            sets: self.distinct.then(|| {
                let sa = &forest.tables[0].sensitive;
                let vals: Vec<u32> = (0..n)
                    .flat_map(|e| sa.iter().map(move |s| s.codes[e as usize]))
                    .collect();
                let off: Vec<u32> = (0..=vals.len() as u32).collect();
                (off, vals)
            }),
        };
        for &c in &self.columns {
            levels[c] = 0;
        }
        let widths = if self.pack {
            self.widths(childsets)
        } else {
            None
        };
        let ctx = Walk {
            childsets,
            widths: widths.as_deref(),
            tables,
            progress,
        };
        let bottom = self.roll_up(&singletons, levels, childsets, ctx.widths);
        let found = self.subtree(levels, &bottom, 0, &ctx);
        for &c in &self.columns {
            levels[c] = 0;
        }
        found
    }

    /// The node `at` (whose classes are given) and every node above it in the spanning tree
    /// over the entity columns: raise one column, only from the last one `at` raises on.
    fn subtree(&self, at: &[u16], classes: &Classes, depth: usize, ctx: &Walk) -> Vec<Found> {
        let (size, distinct) = self.histograms(classes, ctx.tables);
        ctx.progress.advance(1);
        let mut found = vec![(at.to_vec(), size, distinct)];
        let last = self.columns.iter().rposition(|&c| at[c] > 0).unwrap_or(0);
        let ups: Vec<Vec<u16>> = self.columns[last..]
            .iter()
            .filter(|&&c| at[c] < self.lattice.columns[c].height)
            .map(|&c| {
                let mut up = at.to_vec();
                up[c] += 1;
                up
            })
            .collect();
        let climb = |up: &Vec<u16>| {
            let rolled = self.roll_up(classes, up, ctx.childsets, ctx.widths);
            self.subtree(up, &rolled, depth + 1, ctx)
        };
        // A few levels of parallel branches keep two cores busy; deeper, the branches are
        // small and run in order.
        if depth < 4 && ups.len() > 1 {
            let branches: Vec<_> = ups.par_iter().map(climb).collect();
            found.extend(branches.into_iter().flatten());
        } else {
            for up in &ups {
                found.extend(climb(up));
            }
        }
        found
    }

    /// The classes at `levels` from classes at a node below it in the entity columns (the
    /// other columns equal): each representative's key (its children's multiset and its
    /// generalized codes) is interned, and classes with one key merge. Keys are packed into
    /// 128 bits when `widths` (bits per key part) fit, which saves an allocation per class.
    fn roll_up(
        &self,
        finer: &Classes,
        levels: &[u16],
        childsets: &[u32],
        widths: Option<&[u32]>,
    ) -> Classes {
        let codes = |e: u32| self.lattice.forest().tables[0].codes(e);
        let mut packed: FxHashMap<u128, u32> = FxHashMap::default();
        let mut wide: FxHashMap<Vec<u32>, u32> = FxHashMap::default();
        match widths {
            Some(_) => packed.reserve(finer.reps.len()),
            None => wide.reserve(finer.reps.len()),
        }
        let mut key = Vec::with_capacity(self.columns.len() + 1);
        let mut out = Classes {
            reps: Vec::new(),
            sizes: Vec::new(),
            sets: None,
        };
        let mut slot_of = Vec::with_capacity(finer.reps.len());
        for (&rep, &size) in finer.reps.iter().zip(&finer.sizes) {
            key.clear();
            key.push(childsets[rep as usize]);
            for (&c, &code) in self.columns.iter().zip(codes(rep)) {
                key.push(self.lattice.generalize(c, levels[c], code));
            }
            let next = out.reps.len() as u32;
            let slot = match widths {
                Some(widths) => {
                    let mut k = 0u128;
                    for (&part, &w) in key.iter().zip(widths) {
                        k = (k << w) | part as u128;
                    }
                    *packed.entry(k).or_insert(next)
                }
                None => match wide.get(key.as_slice()) {
                    Some(&slot) => slot,
                    None => {
                        wide.insert(key.clone(), next);
                        next
                    }
                },
            };
            if slot == next {
                out.reps.push(rep);
                out.sizes.push(size);
            } else {
                out.sizes[slot as usize] += size;
            }
            slot_of.push(slot);
        }
        if let Some((off, vals)) = &finer.sets {
            out.sets = Some(merge_sets(off, vals, &slot_of, out.reps.len()));
        }
        out
    }

    /// Bits per key part (the children's multiset id, then each entity column's node), if
    /// they fit in 128.
    fn widths(&self, childsets: &[u32]) -> Option<Vec<u32>> {
        let bits = |n: usize| usize::BITS - n.leading_zeros();
        let forest = self.lattice.forest();
        let most = childsets.iter().copied().max().unwrap_or(0) as usize;
        let widths: Vec<u32> = std::iter::once(bits(most))
            .chain(forest.tables[0].hierarchies.iter().map(|h| bits(h.len())))
            .collect();
        (widths.iter().sum::<u32>() <= 128).then_some(widths)
    }

    /// The node's histograms: by size, and by distinct values when annotated.
    fn histograms(&self, classes: &Classes, tables: usize) -> (Histogram, Option<Histogram>) {
        let size = classes
            .reps
            .iter()
            .zip(&classes.sizes)
            .map(|(&rep, &size)| (size, size, rep))
            .collect();
        let size = Histogram::of_classes(tables, size, self.tree_rows);
        let distinct = classes.sets.as_ref().map(|(off, _)| {
            let columns = (off.len() - 1) / classes.reps.len().max(1);
            let measured = (0..classes.reps.len())
                .map(|i| {
                    let least = (0..columns)
                        .map(|j| off[i * columns + j + 1] - off[i * columns + j])
                        .min()
                        .unwrap_or(0);
                    (least, classes.sizes[i], classes.reps[i])
                })
                .collect();
            Histogram::of_classes(tables, measured, self.tree_rows)
        });
        (size, distinct)
    }
}

/// What every node of one walk shares.
struct Walk<'a> {
    childsets: &'a [u32],
    widths: Option<&'a [u32]>,
    tables: usize,
    progress: &'a Progress,
}

/// The value sets of merged classes: class i of the finer list goes to `slot_of[i]`; each
/// merged set is the sorted union of its parts, per sensitive column.
fn merge_sets(off: &[u32], vals: &[u32], slot_of: &[u32], slots: usize) -> (Vec<u32>, Vec<u32>) {
    let finer = slot_of.len();
    let columns = (off.len() - 1).checked_div(finer).unwrap_or(0);
    // The finer classes of each slot, in order (a counting sort).
    let mut start = vec![0u32; slots + 1];
    for &s in slot_of {
        start[s as usize + 1] += 1;
    }
    for i in 0..slots {
        start[i + 1] += start[i];
    }
    let mut members = vec![0u32; finer];
    let mut fill = start.clone();
    for (i, &s) in slot_of.iter().enumerate() {
        members[fill[s as usize] as usize] = i as u32;
        fill[s as usize] += 1;
    }
    let mut new_off = Vec::with_capacity(slots * columns + 1);
    let mut new_vals = Vec::with_capacity(vals.len());
    new_off.push(0);
    for s in 0..slots {
        let parts = &members[start[s] as usize..start[s + 1] as usize];
        for j in 0..columns {
            let from = new_vals.len();
            for &i in parts {
                let at = i as usize * columns + j;
                new_vals.extend_from_slice(&vals[off[at] as usize..off[at + 1] as usize]);
            }
            if parts.len() > 1 {
                new_vals[from..].sort_unstable();
                let mut w = from;
                for r in from..new_vals.len() {
                    if r == from || new_vals[r] != new_vals[w - 1] {
                        new_vals[w] = new_vals[r];
                        w += 1;
                    }
                }
                new_vals.truncate(w);
            }
            new_off.push(new_vals.len() as u32);
        }
    }
    (new_off, new_vals)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::forest::{group_children, TableNodes};
    use crate::hierarchy::Hierarchy;
    use crate::plan::HierarchyDef;
    use crate::sensitive::SensitiveColumn;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// A hierarchy over `leaves` values: pairs grouped, then `*` (a NULL-like shallow leaf
    /// `x` hangs under `*` directly, so the hierarchy is ragged).
    fn hierarchy(name: &str, leaves: usize, values: &[String]) -> (Hierarchy, Vec<u32>) {
        let rows: Vec<Vec<String>> = (0..leaves)
            .map(|v| vec![format!("v{v}"), format!("g{}", v / 2)])
            .chain(std::iter::once(vec!["x".to_string()]))
            .collect();
        let rows: Vec<Vec<&str>> = rows
            .iter()
            .map(|r| r.iter().map(String::as_str).collect())
            .collect();
        let rows: Vec<&[&str]> = rows.iter().map(Vec::as_slice).collect();
        let texts: Vec<Option<String>> = values.iter().map(|v| Some(v.clone())).collect();
        let built = Hierarchy::build(
            name,
            &HierarchyDef::from_rows(&rows),
            name,
            &texts,
            &vec![None; values.len()],
        )
        .expect("the values are leaves");
        (built.hierarchy, built.codes)
    }

    /// A random table of `rows` rows under `parents` parent rows (none for the entity
    /// table) with `qis` QI columns of a few values.
    fn table(
        rng: &mut ChaCha8Rng,
        name: &str,
        rows: usize,
        parents: usize,
        qis: usize,
    ) -> TableNodes {
        let mut hierarchies = Vec::new();
        let mut codes = Vec::new();
        for q in 0..qis {
            let leaves = 2 + q * 2;
            let values: Vec<String> = (0..rows)
                .map(|_| {
                    let v = rng.random_range(0..=leaves);
                    if v == leaves {
                        "x".to_string()
                    } else {
                        format!("v{v}")
                    }
                })
                .collect();
            let (h, c) = hierarchy(&format!("{name}.c{q}"), leaves, &values);
            hierarchies.push(h);
            codes.push(c);
        }
        let qi = (0..rows)
            .flat_map(|r| codes.iter().map(move |c| c[r]))
            .collect();
        let parent = if parents == 0 {
            vec![u32::MAX; rows]
        } else {
            (0..rows)
                .map(|_| rng.random_range(0..parents as u32))
                .collect()
        };
        TableNodes::bare(name, hierarchies, qi, parent)
    }

    /// Entities with two QIs and a sensitive column; children with one QI, two kinds of
    /// them; grandchildren under the first kind.
    pub(crate) fn family(seed: u64, entities: usize) -> Forest {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut root = table(&mut rng, "p", entities, 0, 2);
        let mut kids = table(&mut rng, "c", entities * 2, entities, 1);
        let grand = table(&mut rng, "g", entities * 2, entities * 2, 1);
        let other = table(&mut rng, "o", entities, entities, 0);
        kids.children = vec![group_children(kids.rows(), &grand.parent, 2)];
        root.children = vec![
            group_children(entities, &kids.parent, 1),
            group_children(entities, &other.parent, 3),
        ];
        root.sensitive = vec![SensitiveColumn {
            column: "p.s".into(),
            labels: vec!["a".into(), "b".into(), "c".into()],
            codes: (0..entities).map(|_| rng.random_range(0..3)).collect(),
            bounds: None,
        }];
        Forest {
            tables: vec![root, kids, grand, other],
        }
    }

    /// The entity table of [`family`] alone: one row per entity, so classes can be large.
    pub(crate) fn flat(seed: u64, entities: usize) -> Forest {
        let mut f = family(seed, entities);
        f.tables.truncate(1);
        f.tables[0].children.clear();
        f
    }

    /// The histograms of one node by brute force: whole trees canonicalized by the lattice's
    /// own recursive ids, classes gathered, sets of sensitive values counted.
    fn brute(lattice: &Lattice, levels: &[u16]) -> (Histogram, Histogram) {
        let forest = lattice.forest();
        let tables = forest.tables.len();
        let rows = tree_rows(forest);
        let roots = lattice.root_ids(levels);
        let mut members: std::collections::BTreeMap<u32, Vec<u32>> = Default::default();
        for (e, &r) in roots.iter().enumerate() {
            members.entry(r).or_default().push(e as u32);
        }
        let sa = &forest.tables[0].sensitive;
        let size = members
            .values()
            .map(|m| (m.len() as u32, m.len() as u32, m[0]))
            .collect();
        let distinct = members
            .values()
            .map(|m| {
                let least = sa
                    .iter()
                    .map(|s| {
                        let set: std::collections::BTreeSet<u32> =
                            m.iter().map(|&e| s.codes[e as usize]).collect();
                        set.len() as u32
                    })
                    .min()
                    .unwrap_or(0);
                (least, m.len() as u32, m[0])
            })
            .collect();
        (
            Histogram::of_classes(tables, size, &rows),
            Histogram::of_classes(tables, distinct, &rows),
        )
    }

    #[test]
    fn every_node_matches_brute_force() {
        for seed in 0..4 {
            let f = family(seed, 12 + seed as usize * 5);
            let lattice = Lattice::new(&f);
            let a = annotate(&lattice, true, &Progress::new());
            assert_eq!(a, annotate_keyed(&lattice, true, &Progress::new(), false));
            assert_eq!(a.nodes(), lattice.size);
            let distinct = a.distinct.as_ref().expect("the entity table has an SA");
            for index in 0..a.nodes() {
                let levels = a.levels(index);
                assert_eq!(a.index(&levels), index);
                let (size, dist) = brute(&lattice, &levels);
                assert_eq!(
                    a.size.get(index),
                    size.view(),
                    "seed {seed} node {levels:?}"
                );
                assert_eq!(
                    distinct.get(index),
                    dist.view(),
                    "seed {seed} node {levels:?}"
                );
            }
        }
    }

    /// Histograms land by node index: one thread gives what several do.
    #[test]
    fn one_thread_annotates_as_several_do() {
        let f = family(2, 40);
        let lattice = Lattice::new(&f);
        let many = annotate(&lattice, true, &Progress::new());
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .expect("a one-thread pool")
            .install(|| annotate(&lattice, true, &Progress::new()));
        assert_eq!(one, many);
    }

    /// 002 Theorem 2 (the spec's P2): going up one level never suppresses more, in entities
    /// or in the rows of any table, by either measure.
    #[test]
    fn suppression_never_grows_going_up() {
        let f = family(7, 30);
        let lattice = Lattice::new(&f);
        let a = annotate(&lattice, true, &Progress::new());
        for index in 0..a.nodes() {
            let levels = a.levels(index);
            for c in 0..levels.len() {
                if levels[c] == a.heights[c] {
                    continue;
                }
                let mut up = levels.clone();
                up[c] += 1;
                let up = a.index(&up);
                for x in 1..=31 {
                    for hs in [&a.size, a.distinct.as_ref().expect("annotated")] {
                        let (lo, hi) = (hs.get(index).suppressed(x), hs.get(up).suppressed(x));
                        assert!(
                            lo.iter().zip(hi).all(|(l, h)| h <= l),
                            "{levels:?} +{c} x {x}"
                        );
                    }
                }
            }
        }
    }

    /// 002 Fig. 2.8 (Appendix A.2): class sizes 1..7, 9, 10, 11 with 26, 16, 10, 5, 8, 6,
    /// 4, 5, 4, 1 classes.
    #[test]
    fn cumulative_ka_of_figure_2_8() {
        let counts = [
            (1, 26),
            (2, 16),
            (3, 10),
            (4, 5),
            (5, 8),
            (6, 6),
            (7, 4),
            (9, 5),
            (10, 4),
            (11, 1),
        ];
        let mut classes = Vec::new();
        let mut next = 0u32;
        for (size, n) in counts {
            for _ in 0..n {
                classes.push((size, size, next));
                next += 1;
            }
        }
        let rows = vec![1u32; next as usize];
        let h = Histogram::of_classes(1, classes, &rows);
        let h = h.view();
        let expected = [0, 0, 26, 58, 88, 108, 148, 184, 212, 212, 257, 297];
        for (k, &e) in expected.iter().enumerate().skip(1) {
            assert_eq!(h.entities(k as u32), e, "k = {k}");
        }
        let all: u64 = counts.iter().map(|&(s, n)| (s * n) as u64).sum();
        assert_eq!(h.entities(12), all);
        // MaxSupp 200: k = 7 is the largest (l.641); k = 8 suppresses 212.
        assert_eq!(h.largest_within(200), Some(7));
        assert_eq!(h.largest_within(all), None);
        assert_eq!(h.largest_within(0), Some(1));
    }

    /// 002 Fig. 2.6 and 2.7 (Appendix A.4): KA {(3,2), (4,1)}; SLD {(3,1,4), (5,1,6)}.
    #[test]
    fn figures_2_6_and_2_7() {
        let rows = vec![1u32; 10];
        let ka = Histogram::of_classes(1, vec![(3, 3, 0), (3, 3, 1), (4, 4, 2)], &rows);
        let ka = ka.view();
        assert_eq!(ka.entities(4), 6);
        assert_eq!(ka.largest_within(0), Some(3));
        let sld = Histogram::of_classes(1, vec![(3, 4, 0), (5, 6, 1)], &rows);
        let sld = sld.view();
        assert_eq!(sld.entities(4), 4);
        assert_eq!(sld.entities(6), 10);
    }

    /// Appendix A.3 (Fig. 3.7): cumKA(3) is the singletons plus twice the pairs.
    #[test]
    fn figure_3_7_arithmetic() {
        for (ones, twos, want) in [
            (296, 129, 554),
            (11, 3, 17),
            (6920, 1769, 10458),
            (887, 366, 1619),
        ] {
            let mut classes = Vec::new();
            for i in 0..ones {
                classes.push((1, 1, i));
            }
            for i in 0..twos {
                classes.push((2, 2, ones + i));
            }
            // And a class large enough to keep.
            classes.push((3, 3, ones + twos));
            let rows = vec![1u32; (ones + twos + 1) as usize];
            let h = Histogram::of_classes(1, classes, &rows);
            assert_eq!(h.view().entities(3), want);
        }
    }

    /// Appendix A.6 (P8): classes {s1, s2, s3} and {s4 x 10} at a node, one class above it.
    /// At l = 3 the frequency form would suppress 10 below and 13 above (s4 is 10/13 of the
    /// merge: not monotone, which is why it is refused); the distinct form annotated here
    /// suppresses 10 below and nothing above.
    #[test]
    fn distinct_l_is_monotone_where_the_frequency_form_is_not() {
        let values: Vec<String> = (0..13)
            .map(|e| if e < 3 { "v0".into() } else { "v1".into() })
            .collect();
        let (h, codes) = hierarchy("p.q", 2, &values);
        let mut root = TableNodes::bare("p", vec![h], codes, vec![u32::MAX; 13]);
        root.sensitive = vec![SensitiveColumn {
            column: "p.s".into(),
            labels: vec!["s1".into(), "s2".into(), "s3".into(), "s4".into()],
            codes: (0..13).map(|e| if e < 3 { e } else { 3 }).collect(),
            bounds: None,
        }];
        let f = Forest { tables: vec![root] };
        let lattice = Lattice::new(&f);
        let a = annotate(&lattice, true, &Progress::new());
        let d = a.distinct.as_ref().expect("annotated");
        assert_eq!(d.get(a.index(&[0])).entities(3), 10);
        assert_eq!(d.get(a.index(&[1])).entities(3), 0);
        // The frequency form's count above, by hand: s4 holds 10 of 13 > 1/3.
        let frequency_above: u64 = if 10 * 3 > 13 { 13 } else { 0 };
        assert!(frequency_above > d.get(a.index(&[0])).entities(3));
    }

    /// Appendix A.5 (O1): plain histograms are not monotone, cumulative ones are.
    #[test]
    fn observation_1_cola_and_milk() {
        let rows = vec![1u32; 4];
        let day = Histogram::of_classes(1, vec![(2, 2, 0), (1, 1, 2), (1, 1, 3)], &rows);
        let month = Histogram::of_classes(1, vec![(1, 1, 2), (3, 3, 0)], &rows);
        let (day, month) = (day.view(), month.view());
        assert_eq!((day.entities(2), month.entities(2)), (2, 1));
        assert_eq!((day.entities(3), month.entities(3)), (4, 1));
    }
}
