//! TopDown: local recoding of a single table (an entity table without child tables) for
//! k-anonymity, built to keep LM low where the multi-relational algorithms, which cluster in
//! visiting order (001 Alg. 2), lose most of it.
//!
//! Three steps, each deterministic:
//!
//! 1. **Order** ([`top_down_order`]): a top-down partitioning over the DGHs in the spirit of
//!    top-down specialization (the seeds' hierarchies, 001 Def. 8's LM as the score; the
//!    partitioning itself is not in the seeds). A set of rows is split on one attribute, one
//!    level below the lowest common ancestor (`gen` of 001 Alg. 3) of its values; the
//!    attribute is the one whose split lowers LM most when only parts of at least `pool` rows
//!    count as specialized. Parts that small are pooled, at the parent value, and the pool is
//!    split again on the other attributes. The recursion runs until the rows of a set are
//!    equal, so its result is an order of the rows in which neighbours share as much of the
//!    hierarchies as the data allows. Another start orders the rows by the cheapest cover
//!    ([`cover`]): boxes (a hierarchy node per attribute) opened cheapest first, each taking
//!    its rows once k of them are free, sequenced along the top-down order.
//! 2. **Group** ([`segment`]): the optimal split of that order into consecutive groups of k to
//!    2k - 1 rows under LM (a dynamic program over cut points; a group of 2k or more can always
//!    be cut in two without raising any LCA, so longer ones never help). Beyond the seeds: 001
//!    Alg. 2 closes a cluster as soon as it has k members.
//! 3. **Refine** ([`refine`]): a local search. A group above k rows whose LCA on one attribute
//!    is held up by a few rows outside its majority branch hands those rows to nearby groups
//!    (in the order), or suppresses them where every nearby group would pay more for them
//!    than a suppressed row costs (all its cells), when that lowers the total LM. Groups that
//!    grew to 2k or more rows are cut again by step 2, and every group then gives up the
//!    outliers whose suppression lowers LM ([`trim`]). Then two large-neighbourhood searches:
//!    every few consecutive groups ([`reorder_windows`]), and each group with the nearby group
//!    cheapest to merge with ([`pair_windows`]), are ordered again top-down on their own rows
//!    and cut again, kept where that lowers LM; and step 3 runs once more. That round repeats
//!    (at most [`ROUNDS`] times) while it lowers LM. Beyond the seeds.
//!
//! Every group is released at the LCA of its members per attribute, which can be tighter than
//! the partition that produced it. Suppressed rows are absent from the release and count as
//! fully lost in LM, as in the report. The whole run is repeated from each start (the cover
//! and a few pool sizes) and the lowest LM kept.

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};

use rayon::prelude::*;

mod cover;

use crate::algo::kernel::relocate;
use crate::algo::kernel::tree::Clustering;
use crate::algo::kernel::tree::Rep;
use crate::algo::{self, Generalization, Options, Output, Spec};
use crate::forest::{Forest, TableNodes};
use crate::hierarchy::Hierarchy;
use crate::plan::{Model, Plan};
use crate::progress::Progress;

/// Pool sizes tried for the order of the whole table, as multiples of k: a part smaller than
/// this many times k is pooled. Measured on UCI Adult (k = 2 to 50, pool sizes k to 8k): the
/// first order matters less than the searches after it, and after them large pools won at
/// k = 5, 10 and 50 (at k = 2 all were within 1%).
const POOL_FACTORS: [usize; 2] = [4, 8];

/// Pool sizes, as multiples of k, for the few groups the large-neighbourhood searches
/// ([`reorder_windows`], [`pair_windows`]) order again: there, small pools won.
const LOCAL_POOL_FACTORS: [usize; 2] = [1, 2];

/// How many groups on either side of a group (in the order) refinement hands rows to.
const WINDOW: usize = 8;

/// Rounds of the large-neighbourhood searches and step 3 at most; a round that does not lower
/// LM ends them.
const ROUNDS: usize = 3;

/// At most this many refinement passes over all groups.
const PASSES: usize = 4;

/// Hierarchies of up to this many nodes get a table of pair LCAs (at most 1 MiB each).
const LCA_TABLE_NODES: usize = 512;

/// One QI's hierarchy with the depths, losses and LCAs the steps read in their inner loops.
struct Dgh<'a> {
    h: &'a Hierarchy,
    depth: Vec<u16>,
    loss: Vec<f64>,
    /// `h.lca(x, y)` of every pair, row-major by `x`, for hierarchies of at most
    /// [`LCA_TABLE_NODES`] nodes (every ARX hierarchy of UCI Adult): widening a group's LCA
    /// row by row is the inner loop of the cut and the order, which held half of TopDown's
    /// samples at k = 50 with the parent walk inlined in them.
    lcas: Option<Vec<u32>>,
}

impl<'a> Dgh<'a> {
    fn new(h: &'a Hierarchy) -> Dgh<'a> {
        let root = h.root();
        let depth = (0..h.len() as u32)
            .map(|mut c| {
                let mut d = 0u16;
                while c != root && d as usize <= h.len() {
                    c = h.parent(c);
                    d += 1;
                }
                d
            })
            .collect();
        let loss = (0..h.len() as u32).map(|c| h.loss(c)).collect();
        let n = h.len();
        let lcas = (n <= LCA_TABLE_NODES).then(|| {
            (0..n * n)
                .map(|i| h.lca((i / n) as u32, (i % n) as u32))
                .collect()
        });
        Dgh {
            h,
            depth,
            loss,
            lcas,
        }
    }

    fn lca(&self, a: u32, b: u32) -> u32 {
        if a == b {
            return a;
        }
        match &self.lcas {
            Some(table) => table[a as usize * self.h.len() + b as usize],
            None => self.h.lca(a, b),
        }
    }

    /// The ancestor of `code` at depth `d` (`code` itself if it is not deeper).
    fn ancestor_at(&self, mut code: u32, d: u16) -> u32 {
        while self.depth[code as usize] > d {
            code = self.h.parent(code);
        }
        code
    }
}

/// The entity table's QI codes with their hierarchies.
struct Table<'a> {
    dghs: Vec<Dgh<'a>>,
    codes: &'a [u32],
    nqi: usize,
    /// Rows of the table.
    n: usize,
}

impl<'a> Table<'a> {
    fn new(nodes: &'a TableNodes) -> Table<'a> {
        Table {
            dghs: nodes.hierarchies.iter().map(Dgh::new).collect(),
            codes: &nodes.qi,
            nqi: nodes.nqi(),
            n: nodes.rows(),
        }
    }

    fn row(&self, r: u32) -> &[u32] {
        &self.codes[r as usize * self.nqi..(r as usize + 1) * self.nqi]
    }

    /// Widens `acc` (a generalized row) to cover row `r`.
    fn widen(&self, acc: &mut [u32], r: u32) {
        for ((a, &c), d) in acc.iter_mut().zip(self.row(r)).zip(&self.dghs) {
            *a = d.lca(*a, c);
        }
    }

    /// The LCA of `rows` per attribute (`rows` is not empty).
    fn lca_of(&self, rows: &[u32]) -> Vec<u32> {
        let mut acc = self.row(rows[0]).to_vec();
        for &r in &rows[1..] {
            self.widen(&mut acc, r);
        }
        acc
    }

    /// LM' of one row generalized to `g`, summed over the attributes (001 Def. 8).
    fn loss(&self, g: &[u32]) -> f64 {
        g.iter()
            .zip(&self.dghs)
            .map(|(&c, d)| d.loss[c as usize])
            .sum()
    }

    /// LM' summed over `n` rows released as `g`.
    fn cost(&self, g: &[u32], n: usize) -> f64 {
        n as f64 * self.loss(g)
    }

    /// LM' of a suppressed row: every one of its cells counts as fully lost (the LM the
    /// report gives with suppression).
    fn suppression(&self) -> f64 {
        self.nqi as f64
    }
}

pub static TOPDOWN: Spec = Spec {
    name: "topdown",
    aliases: &[],
    note: " (one table)",
    baseline: false,
    options: &[relocate::RELOCATE],
    serves: algo::k_anonymity_only,
    refuses: single_table,
    run,
    unread: crate::algo::spec::reads_every_option,
};

/// TopDown recodes the entity table's rows one by one; it has no notion of an entity's child
/// rows, so a family with child tables is refused rather than released without them.
fn single_table(plan: &Plan) -> Option<String> {
    let tables = &plan.tables;
    if tables.len() < 2 {
        return None;
    }
    let children: Vec<&str> = tables[1..].iter().map(|t| t.name.as_str()).collect();
    Some(format!(
        "algorithm = 'topdown' anonymizes a single table, but the {} family also has {}; use algorithm = 'miraclex' (or 'clustree') for an entity with child tables",
        tables[0].name,
        children.join(", ")
    ))
}

fn run(
    forest: &Forest,
    model: &Model,
    options: &Options,
    progress: &Progress,
) -> Result<Output, String> {
    let mut clustering = cluster(forest, model.min_group(), progress);
    let moved = relocate::apply(forest, &mut clustering, options);
    Ok(Output::Generalized(Generalization::relocated(
        forest,
        &clustering,
        moved,
    )))
}

/// Runs TopDown on the entity table at `k`. Rows of child tables (which the plan refuses for
/// this algorithm) are not published. Progress: "ordering rows top-down" counts rows as their
/// place in the order is final; "grouping" counts rows as their group is final.
pub fn cluster(forest: &Forest, k: usize, progress: &Progress) -> Clustering {
    let Some(nodes) = forest.tables.first() else {
        return Clustering {
            ecs: Vec::new(),
            suppressed: Vec::new(),
        };
    };
    let n = nodes.rows();
    let k = k.max(1);
    if n < k {
        // The one case nothing can hide in a group of k: suppress every row.
        progress.stage("grouping", n);
        progress.advance(n);
        return Clustering {
            ecs: Vec::new(),
            suppressed: (0..n as u32).collect(),
        };
    }
    let table = Table::new(nodes);
    let Run {
        groups,
        mut suppressed,
        ..
    } = best_run(&table, k, progress);
    progress.stage("grouping", n);
    progress.advance(suppressed.len());
    let ecs = groups
        .into_iter()
        .map(|mut members| {
            progress.advance(members.len());
            members.sort_unstable();
            Rep {
                table: 0,
                qi: table.lca_of(&members),
                members,
                children: Vec::new(),
            }
        })
        .collect();
    suppressed.sort_unstable();
    Clustering { ecs, suppressed }
}

/// Where a run starts: the top-down order of one of [`POOL_FACTORS`] (by index; step 1), or
/// the cheapest cover ([`cover::cover_order`]).
#[derive(Clone, Copy)]
enum Start {
    TopDown(usize),
    Cover,
}

/// Steps 1-3 from every start, the cover and each of [`POOL_FACTORS`] (in parallel): the
/// partition of least LM', the first start on a tie (in that order), so the result does not
/// depend on scheduling. The top-down starts are kept beside the cover, so no result is worse
/// than theirs alone (on a generated table of 90 people at k = 5 the second pool size won).
/// The first pool size's order also sequences the cover's cells, so it is made once, before
/// the runs. The cover comes first: it takes longest, and rayon's split then gives it a
/// thread while the other runs the top-down starts. Progress: "ordering rows top-down" counts
/// the rows the top-down orders place.
fn best_run(t: &Table, k: usize, progress: &Progress) -> Run {
    progress.stage("ordering rows top-down", t.n * POOL_FACTORS.len());
    let all = || (0..t.n as u32).collect::<Vec<u32>>();
    let first = top_down_order(t, all(), POOL_FACTORS[0] * k, progress);
    let starts: Vec<Start> = [Start::Cover]
        .into_iter()
        .chain((0..POOL_FACTORS.len()).map(Start::TopDown))
        .collect();
    let runs: Vec<Run> = starts
        .par_iter()
        .filter_map(|&start| {
            let order = match start {
                Start::Cover => cover::cover_order(t, k, &first)?,
                Start::TopDown(0) => first.clone(),
                Start::TopDown(i) => top_down_order(t, all(), POOL_FACTORS[i] * k, progress),
            };
            Some(run_from(t, &order, k))
        })
        .collect();
    let mut best = 0;
    for (i, run) in runs.iter().enumerate() {
        if run.cost < runs[best].cost {
            best = i;
        }
    }
    runs.into_iter()
        .nth(best)
        .expect("every top-down start gives a run, and POOL_FACTORS is not empty")
}

/// Steps 2-3 from one start's `order`.
fn run_from(t: &Table, order: &[u32], k: usize) -> Run {
    let mut best = Run::new(t, |suppressed| {
        refine(t, order, segment(t, order, k), k, suppressed)
    });
    let mut tried = HashSet::new();
    for _ in 0..ROUNDS {
        let next = Run::new(t, |suppressed| {
            suppressed.extend_from_slice(&best.suppressed);
            let groups = reorder_windows(t, best.groups.clone(), k);
            let groups = pair_windows(t, groups, k, &mut tried);
            refine(t, order, groups, k, suppressed)
        });
        if next.cost >= best.cost {
            break;
        }
        best = next;
    }
    best
}

/// One start's partition: its groups, the rows it suppresses and their LM'.
struct Run {
    groups: Vec<Vec<u32>>,
    suppressed: Vec<u32>,
    cost: f64,
}

impl Run {
    fn new(t: &Table, partition: impl FnOnce(&mut Vec<u32>) -> Vec<Vec<u32>>) -> Run {
        let mut suppressed = Vec::new();
        let groups = partition(&mut suppressed);
        let cost = groups
            .iter()
            .map(|g| t.cost(&t.lca_of(g), g.len()))
            .sum::<f64>()
            + suppressed.len() as f64 * t.suppression();
        Run {
            groups,
            suppressed,
            cost,
        }
    }
}

/// How a set of rows splits on one attribute: per row its part, and the parts' children.
struct Split {
    attribute: usize,
    /// Child (hierarchy node) of each part, in first-seen order.
    children: Vec<u32>,
    /// Rows per part.
    sizes: Vec<usize>,
    /// Part of each row of the set, in the set's order.
    part_of: Vec<u16>,
}

/// Step 1: the rows in top-down order. `pool` is the smallest part that counts as
/// specialized. Sets are processed from an explicit stack (pools can nest deeper than a
/// thread's stack would like on adversarial data).
fn top_down_order(t: &Table, mut rows: Vec<u32>, pool: usize, progress: &Progress) -> Vec<u32> {
    let n = rows.len();
    if t.nqi == 0 {
        progress.advance(n);
        return rows;
    }
    let mut stack = vec![(0usize, n)];
    let mut scratch: Vec<u32> = Vec::new();
    while let Some((s, e)) = stack.pop() {
        let set = &mut rows[s..e];
        let Some(split) = (set.len() > 1).then(|| best_split(t, set, pool)).flatten() else {
            progress.advance(set.len());
            continue;
        };
        // Big parts in hierarchy order, then the small ones together (the pool).
        let mut rank: Vec<usize> = (0..split.children.len()).collect();
        rank.sort_by_key(|&p| (split.sizes[p] < pool, split.children[p]));
        let mut start = vec![0usize; split.children.len()];
        let mut at = 0;
        for &p in &rank {
            start[p] = at;
            at += split.sizes[p];
        }
        scratch.clear();
        scratch.resize(set.len(), 0);
        let mut next = start.clone();
        for (i, &r) in set.iter().enumerate() {
            let p = split.part_of[i] as usize;
            scratch[next[p]] = r;
            next[p] += 1;
        }
        set.copy_from_slice(&scratch);
        let any_big = rank.first().is_some_and(|&p| split.sizes[p] >= pool);
        let pool_start = rank
            .iter()
            .find(|&&p| split.sizes[p] < pool)
            .map_or(e - s, |&p| start[p]);
        let mut ranges: Vec<(usize, usize)> = Vec::new();
        for &p in &rank {
            let (a, b) = (start[p], start[p] + split.sizes[p]);
            if split.sizes[p] >= pool || !any_big {
                ranges.push((s + a, s + b));
            }
        }
        if any_big && pool_start < e - s {
            ranges.push((s + pool_start, e));
        }
        debug_assert!(
            ranges.iter().all(|&(a, b)| b - a < e - s),
            "{}",
            split.attribute
        );
        stack.extend(ranges.into_iter().rev());
    }
    rows
}

/// The split of `set` with the lowest LM when parts under `pool` rows stay at the set's LCA
/// (ties: the lower LM with every part specialized, then the first attribute). `None` when
/// every row of the set is the same.
fn best_split(t: &Table, set: &[u32], pool: usize) -> Option<Split> {
    let lca = t.lca_of(set);
    let here = t.loss(&lca);
    let mut best: Option<((f64, f64), Split)> = None;
    for (a, d) in t.dghs.iter().enumerate() {
        if d.loss[lca[a] as usize] == 0.0 {
            continue;
        }
        let depth = d.depth[lca[a] as usize] + 1;
        let mut children: Vec<u32> = Vec::new();
        let mut lcas: Vec<Vec<u32>> = Vec::new();
        let mut sizes: Vec<usize> = Vec::new();
        let mut part_of: Vec<u16> = Vec::with_capacity(set.len());
        for &r in set {
            let child = d.ancestor_at(t.row(r)[a], depth);
            let p = match children.iter().position(|&c| c == child) {
                Some(p) => p,
                None => {
                    children.push(child);
                    lcas.push(t.row(r).to_vec());
                    sizes.push(0);
                    children.len() - 1
                }
            };
            t.widen(&mut lcas[p], r);
            sizes[p] += 1;
            part_of.push(p as u16);
        }
        if children.len() < 2 {
            continue;
        }
        let (mut pooled, mut all) = (0.0, 0.0);
        for (g, &size) in lcas.iter().zip(&sizes) {
            let c = t.cost(g, size);
            all += c;
            pooled += if size >= pool { c } else { size as f64 * here };
        }
        let score = (pooled, all);
        if best.as_ref().is_none_or(|(b, _)| score < *b) {
            best = Some((
                score,
                Split {
                    attribute: a,
                    children,
                    sizes,
                    part_of,
                },
            ));
        }
    }
    best.map(|(_, s)| s)
}

/// Step 2: `order` cut into consecutive groups of k to 2k - 1 rows with the least total LM
/// (`order` has at least k rows). Ties keep the shorter last group.
fn segment(t: &Table, order: &[u32], k: usize) -> Vec<Vec<u32>> {
    let n = order.len();
    let mut best = vec![f64::INFINITY; n + 1];
    let mut cut = vec![0usize; n + 1];
    best[0] = 0.0;
    let mut acc = vec![0u32; t.nqi];
    for j in k..=n {
        acc.copy_from_slice(t.row(order[j - 1]));
        let shortest = j.saturating_sub(2 * k - 1);
        for i in (shortest..j).rev() {
            if i + 1 < j {
                t.widen(&mut acc, order[i]);
            }
            if j - i < k || !best[i].is_finite() {
                continue;
            }
            let c = best[i] + t.cost(&acc, j - i);
            if c < best[j] {
                best[j] = c;
                cut[j] = i;
            }
        }
    }
    let mut groups = Vec::new();
    let mut j = n;
    while j > 0 {
        let i = cut[j];
        groups.push(order[i..j].to_vec());
        j = i;
    }
    groups.reverse();
    groups
}

/// Groups re-ordered together in [`reorder_windows`].
const SPAN: usize = 4;

/// Large-neighbourhood search (beyond the seeds): every `SPAN` consecutive groups (sliding by
/// half that) are ordered again top-down on their own rows, where pooling is relative to
/// them, and cut again; the new groups replace the old ones when their LM is lower.
fn reorder_windows(t: &Table, mut groups: Vec<Vec<u32>>, k: usize) -> Vec<Vec<u32>> {
    let quiet = Progress::new();
    let mut start = 0;
    while start + 1 < groups.len() {
        let end = (start + SPAN).min(groups.len());
        let rows: Vec<u32> = groups[start..end].iter().flatten().copied().collect();
        let old: f64 = groups[start..end]
            .iter()
            .map(|g| t.cost(&t.lca_of(g), g.len()))
            .sum();
        let step = match best_cut(t, &rows, k, old, &quiet) {
            Some(cut) => {
                let len = cut.len();
                groups.splice(start..end, cut);
                (len / 2).max(1)
            }
            None => SPAN / 2,
        };
        start += step;
    }
    groups
}

/// Groups on either side (in the order) a group looks among for a partner in [`pair_windows`].
const REACH: usize = 32;

/// How many partners, least costly to merge first, each group tries in [`pair_windows`].
const PARTNERS: usize = 3;

/// Large-neighbourhood search over pairs of groups that need not be neighbours in the order
/// (beyond the seeds): each group pools its rows with a group nearby whose merged LCA costs
/// least, orders them top-down and cuts them again; kept when that lowers LM. `tried` holds
/// the pairs (by content) that did not improve, so later rounds skip the groups that did not
/// change.
fn pair_windows(
    t: &Table,
    mut groups: Vec<Vec<u32>>,
    k: usize,
    tried: &mut HashSet<u64>,
) -> Vec<Vec<u32>> {
    let quiet = Progress::new();
    let mut lcas: Vec<Vec<u32>> = groups.iter().map(|g| t.lca_of(g)).collect();
    let mut prints: Vec<u64> = groups.iter().map(|g| fingerprint(g)).collect();
    let mut i = 0;
    while i < groups.len() {
        let here = t.cost(&lcas[i], groups[i].len());
        let lo = i.saturating_sub(REACH);
        let hi = (i + REACH + 1).min(groups.len());
        let mut partners: Vec<(f64, usize)> = (lo..hi)
            .filter(|&j| j != i)
            .map(|j| {
                let mut m = lcas[i].clone();
                for (q, w) in m.iter_mut().enumerate() {
                    *w = t.dghs[q].lca(*w, lcas[j][q]);
                }
                let n = groups[i].len() + groups[j].len();
                let penalty = t.cost(&m, n) - here - t.cost(&lcas[j], groups[j].len());
                (penalty, j)
            })
            .collect();
        partners.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
        let mut changed = false;
        for &(_, j) in partners.iter().take(PARTNERS) {
            let pair = prints[i].min(prints[j]) ^ prints[i].max(prints[j]).rotate_left(17);
            if tried.contains(&pair) {
                continue;
            }
            let rows: Vec<u32> = groups[i].iter().chain(&groups[j]).copied().collect();
            let old = here + t.cost(&lcas[j], groups[j].len());
            let Some(cut) = best_cut(t, &rows, k, old, &quiet) else {
                tried.insert(pair);
                continue;
            };
            // The pair's places take the new groups (a pair cut into one or three groups
            // shifts the rest).
            let (a, b) = (i.min(j), i.max(j));
            groups.remove(b);
            lcas.remove(b);
            prints.remove(b);
            let new_lcas: Vec<Vec<u32>> = cut.iter().map(|g| t.lca_of(g)).collect();
            let new_prints: Vec<u64> = cut.iter().map(|g| fingerprint(g)).collect();
            groups.splice(a..a + 1, cut);
            lcas.splice(a..a + 1, new_lcas);
            prints.splice(a..a + 1, new_prints);
            changed = true;
            break;
        }
        if !changed {
            i += 1;
        }
    }
    groups
}

/// `rows` ordered top-down (for each of [`LOCAL_POOL_FACTORS`]) and cut into groups, the cut
/// of least LM' if it is below `old`.
fn best_cut(
    t: &Table,
    rows: &[u32],
    k: usize,
    old: f64,
    quiet: &Progress,
) -> Option<Vec<Vec<u32>>> {
    let mut best: Option<(f64, Vec<Vec<u32>>)> = None;
    for f in LOCAL_POOL_FACTORS {
        let order = top_down_order(t, rows.to_vec(), f * k, quiet);
        let cut = segment(t, &order, k);
        let c: f64 = cut.iter().map(|g| t.cost(&t.lca_of(g), g.len())).sum();
        if c < old - 1e-9 && best.as_ref().is_none_or(|b| c < b.0) {
            best = Some((c, cut));
        }
    }
    best.map(|(_, cut)| cut)
}

/// A group's identity by content (the order of its rows does not matter).
fn fingerprint(rows: &[u32]) -> u64 {
    let mut sorted = rows.to_vec();
    sorted.sort_unstable();
    let mut h = DefaultHasher::new();
    sorted.hash(&mut h);
    h.finish()
}

/// A group under refinement.
struct Group {
    rows: Vec<u32>,
    lca: Vec<u32>,
    cost: f64,
}

impl Group {
    fn new(t: &Table, rows: Vec<u32>) -> Group {
        let lca = t.lca_of(&rows);
        let cost = t.cost(&lca, rows.len());
        Group { rows, lca, cost }
    }
}

/// A proposed hand-over: `keep` stays, each of `moves` goes to a group (by index) or, where
/// no group takes it for less than a suppressed row costs, is suppressed (`None`).
struct Shrink {
    delta: f64,
    keep: Vec<u32>,
    moves: Vec<(u32, Option<usize>)>,
}

/// Step 3: local search over `groups` (in order), then groups of 2k or more rows cut again
/// and every group trimmed ([`trim`]). Rows the search suppresses are added to `suppressed`.
fn refine(
    t: &Table,
    order: &[u32],
    groups: Vec<Vec<u32>>,
    k: usize,
    suppressed: &mut Vec<u32>,
) -> Vec<Vec<u32>> {
    let mut gs: Vec<Group> = groups.into_iter().map(|g| Group::new(t, g)).collect();
    for _ in 0..PASSES {
        let mut moved = false;
        for a in 0..gs.len() {
            let Some(s) = best_shrink(t, &gs, a, k) else {
                continue;
            };
            gs[a] = Group::new(t, s.keep);
            for (r, b) in s.moves {
                let Some(b) = b else {
                    suppressed.push(r);
                    continue;
                };
                let g = &mut gs[b];
                g.rows.push(r);
                t.widen(&mut g.lca, r);
                g.cost = t.cost(&g.lca, g.rows.len());
            }
            moved = true;
        }
        if !moved {
            break;
        }
    }
    // Position in the order, to cut a grown group along it.
    let mut position = vec![0u32; t.n];
    for (i, &r) in order.iter().enumerate() {
        position[r as usize] = i as u32;
    }
    let mut out = Vec::with_capacity(gs.len());
    for mut g in gs {
        if g.rows.len() >= 2 * k {
            g.rows.sort_by_key(|&r| position[r as usize]);
            out.extend(segment(t, &g.rows, k));
        } else {
            out.push(g.rows);
        }
    }
    for g in &mut out {
        trim(t, g, k, suppressed);
    }
    out
}

/// Step 3 (end): suppression of outliers, beyond the seeds (001 suppresses only what cannot be
/// clustered). While a group has more than k rows, the row whose absence lowers the group's
/// LCA most is suppressed if that saves more LM than the row costs suppressed: one row far
/// from the rest can hold a whole group's LCA up on several attributes.
fn trim(t: &Table, rows: &mut Vec<u32>, k: usize, suppressed: &mut Vec<u32>) {
    let nqi = t.nqi;
    while rows.len() > k {
        let n = rows.len();
        let now = t.cost(&t.lca_of(rows), n);
        let without = lca_without_each(t, rows);
        let mut best: Option<(f64, usize)> = None;
        for i in 0..n {
            let saving = now - t.cost(&without[i * nqi..(i + 1) * nqi], n - 1) - t.suppression();
            if saving > 1e-9 && best.is_none_or(|(s, _)| saving > s) {
                best = Some((saving, i));
            }
        }
        let Some((_, i)) = best else {
            return;
        };
        suppressed.push(rows.remove(i));
    }
}

/// The LCA of `rows` without each one of them (`rows` has at least two rows), `nqi` codes per
/// row: from the LCAs of every prefix and suffix, so each costs one widen.
fn lca_without_each(t: &Table, rows: &[u32]) -> Vec<u32> {
    let (n, nqi) = (rows.len(), t.nqi);
    let mut prefix = vec![0u32; n * nqi];
    let mut suffix = vec![0u32; n * nqi];
    prefix[..nqi].copy_from_slice(t.row(rows[0]));
    for i in 1..n {
        let (done, next) = prefix.split_at_mut(i * nqi);
        next[..nqi].copy_from_slice(&done[(i - 1) * nqi..]);
        t.widen(&mut next[..nqi], rows[i]);
    }
    suffix[(n - 1) * nqi..].copy_from_slice(t.row(rows[n - 1]));
    for i in (0..n - 1).rev() {
        let (here, done) = suffix.split_at_mut((i + 1) * nqi);
        here[i * nqi..].copy_from_slice(&done[..nqi]);
        t.widen(&mut here[i * nqi..], rows[i]);
    }
    let mut out = vec![0u32; n * nqi];
    for (i, w) in out.chunks_exact_mut(nqi.max(1)).enumerate().take(n) {
        if i == 0 {
            w.copy_from_slice(&suffix[nqi..2 * nqi]);
            continue;
        }
        w.copy_from_slice(&prefix[(i - 1) * nqi..i * nqi]);
        if i + 1 < n {
            for (q, c) in w.iter_mut().enumerate() {
                *c = t.dghs[q].lca(*c, suffix[(i + 1) * nqi + q]);
            }
        }
    }
    out
}

/// The hand-over from group `a` that lowers LM most, if any lowers it: for each attribute,
/// the rows outside the branch (below the group's LCA) most of its rows are in move, each to
/// the neighbouring group it raises least, provided at least k rows stay.
fn best_shrink(t: &Table, gs: &[Group], a: usize, k: usize) -> Option<Shrink> {
    let g = &gs[a];
    if g.rows.len() <= k {
        return None;
    }
    let window = a.saturating_sub(WINDOW)..(a + WINDOW + 1).min(gs.len());
    let mut best: Option<Shrink> = None;
    for (q, d) in t.dghs.iter().enumerate() {
        let top = g.lca[q];
        if d.loss[top as usize] == 0.0 {
            continue;
        }
        let depth = d.depth[top as usize] + 1;
        let mut counts: Vec<(u32, usize)> = Vec::new();
        for &r in &g.rows {
            let c = d.ancestor_at(t.row(r)[q], depth);
            match counts.iter_mut().find(|(x, _)| *x == c) {
                Some(e) => e.1 += 1,
                None => counts.push((c, 1)),
            }
        }
        let Some(&(major, size)) = counts
            .iter()
            .max_by(|x, y| x.1.cmp(&y.1).then(y.0.cmp(&x.0)))
        else {
            continue;
        };
        let out = g.rows.len() - size;
        if size < k || out > k {
            continue;
        }
        let (keep, leave): (Vec<u32>, Vec<u32>) = g
            .rows
            .iter()
            .partition(|&&r| d.ancestor_at(t.row(r)[q], depth) == major);
        let kept = Group::new(t, keep);
        let mut delta = kept.cost - g.cost;
        // Receiving groups as they would be after the rows before.
        let mut grown: Vec<(usize, Vec<u32>, usize)> = Vec::new();
        let mut moves = Vec::with_capacity(leave.len());
        for &r in &leave {
            let mut pick: Option<(f64, usize)> = None;
            for b in window.clone() {
                if b == a {
                    continue;
                }
                let (lca, n) = match grown.iter().find(|e| e.0 == b) {
                    Some(e) => (e.1.as_slice(), e.2),
                    None => (gs[b].lca.as_slice(), gs[b].rows.len()),
                };
                let mut wider = lca.to_vec();
                t.widen(&mut wider, r);
                let rise = t.cost(&wider, n + 1) - t.cost(lca, n);
                if pick.is_none_or(|(c, _)| rise < c) {
                    pick = Some((rise, b));
                }
            }
            let Some((rise, b)) = pick.filter(|&(rise, _)| rise <= t.suppression()) else {
                delta += t.suppression();
                moves.push((r, None));
                continue;
            };
            delta += rise;
            moves.push((r, Some(b)));
            match grown.iter_mut().find(|e| e.0 == b) {
                Some(e) => {
                    t.widen(&mut e.1, r);
                    e.2 += 1;
                }
                None => {
                    let mut lca = gs[b].lca.clone();
                    t.widen(&mut lca, r);
                    grown.push((b, lca, gs[b].rows.len() + 1));
                }
            }
        }
        if delta < -1e-9 && best.as_ref().is_none_or(|s| delta < s.delta) {
            best = Some(Shrink {
                delta,
                keep: kept.rows,
                moves,
            });
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::plan::HierarchyDef;

    /// Ages 20..=39 in bands of 5 and 10; four jobs in two families.
    fn defs() -> [HierarchyDef; 2] {
        let ages: Vec<Vec<String>> = (20..40)
            .map(|a| {
                let five = a / 5 * 5;
                let ten = a / 10 * 10;
                vec![
                    a.to_string(),
                    format!("{five}-{}", five + 4),
                    format!("{ten}-{}", ten + 9),
                ]
            })
            .collect();
        let ages: Vec<Vec<&str>> = ages
            .iter()
            .map(|r| r.iter().map(String::as_str).collect())
            .collect();
        let ages: Vec<&[&str]> = ages.iter().map(Vec::as_slice).collect();
        [
            HierarchyDef::from_rows(&ages),
            HierarchyDef::from_rows(&[
                &["nurse", "care"],
                &["doctor", "care"],
                &["welder", "craft"],
                &["joiner", "craft"],
            ]),
        ]
    }

    /// A one-table forest with the rows `(age, job)`.
    pub(super) fn forest(rows: &[(u32, &str)]) -> Forest {
        let [age_def, job_def] = defs();
        let ages: Vec<Option<String>> = rows.iter().map(|r| Some(r.0.to_string())).collect();
        let jobs: Vec<Option<String>> = rows.iter().map(|r| Some(r.1.to_string())).collect();
        let none = vec![None; rows.len()];
        let age = Hierarchy::build("age_h", &age_def, "t.age", &ages, &none).expect("ages");
        let job = Hierarchy::build("job_h", &job_def, "t.job", &jobs, &none).expect("jobs");
        let qi = age
            .codes
            .iter()
            .zip(&job.codes)
            .flat_map(|(&a, &j)| [a, j])
            .collect();
        let n = rows.len();
        Forest {
            tables: vec![TableNodes::bare(
                "t",
                vec![age.hierarchy, job.hierarchy],
                qi,
                vec![u32::MAX; n],
            )],
        }
    }

    /// A deterministic spread of rows.
    pub(super) fn rows(n: usize) -> Vec<(u32, &'static str)> {
        let jobs = ["nurse", "doctor", "welder", "joiner"];
        (0..n)
            .map(|i| (20 + (i * 7 % 20) as u32, jobs[i * 3 % 4]))
            .collect()
    }

    /// Every row in exactly one EC, each EC of at least k rows, labelled with the LCA of its
    /// members' leaves (recomputed here by walking parents, not by `Hierarchy::lca`).
    fn check(forest: &Forest, c: &Clustering, k: usize) {
        let t = &forest.tables[0];
        let mut seen = vec![false; t.rows()];
        for ec in &c.ecs {
            assert!(ec.members.len() >= k, "EC of {} < {k}", ec.members.len());
            for &m in &ec.members {
                assert!(!seen[m as usize], "row {m} twice");
                seen[m as usize] = true;
            }
            for (q, h) in t.hierarchies.iter().enumerate() {
                let ancestors = |mut c: u32| {
                    let mut path = vec![c];
                    while c != h.root() {
                        c = h.parent(c);
                        path.push(c);
                    }
                    path
                };
                let paths: Vec<Vec<u32>> = ec
                    .members
                    .iter()
                    .map(|&m| ancestors(t.codes(m)[q]))
                    .collect();
                let lowest = paths[0]
                    .iter()
                    .find(|a| paths.iter().all(|p| p.contains(a)))
                    .copied();
                assert_eq!(Some(ec.qi[q]), lowest, "attribute {q} is not the LCA");
            }
        }
        for &s in &c.suppressed {
            assert!(!seen[s as usize], "row {s} kept and suppressed");
            seen[s as usize] = true;
        }
        assert!(
            seen.iter().all(|&s| s),
            "a row is neither kept nor suppressed"
        );
    }

    fn lm(forest: &Forest, c: &Clustering) -> f64 {
        let t = &forest.tables[0];
        c.ecs
            .iter()
            .map(|ec| {
                let per_row: f64 = ec
                    .qi
                    .iter()
                    .zip(&t.hierarchies)
                    .map(|(&g, h)| h.loss(g))
                    .sum();
                per_row * ec.members.len() as f64
            })
            .sum::<f64>()
    }

    #[test]
    fn every_ec_has_k_rows_labelled_with_their_lca() {
        for k in [1, 2, 3, 5, 7] {
            let f = forest(&rows(60));
            let c = cluster(&f, k, &Progress::new());
            check(&f, &c, k);
        }
    }

    #[test]
    fn equal_rows_group_together_at_no_loss() {
        let mut r = vec![(23, "nurse"); 4];
        r.extend(vec![(36, "welder"); 4]);
        let f = forest(&r);
        let c = cluster(&f, 4, &Progress::new());
        check(&f, &c, 4);
        assert_eq!(c.ecs.len(), 2);
        assert_eq!(lm(&f, &c), 0.0);
    }

    #[test]
    fn near_rows_share_a_band_and_a_family() {
        // Two tight clusters: the order puts each together, so each EC stays in one 5-band
        // and one job family.
        let r = [
            (21, "nurse"),
            (22, "doctor"),
            (23, "nurse"),
            (36, "welder"),
            (37, "joiner"),
            (38, "welder"),
        ];
        let f = forest(&r);
        let c = cluster(&f, 3, &Progress::new());
        check(&f, &c, 3);
        let t = &f.tables[0];
        let labels: Vec<(Option<&str>, Option<&str>)> = c
            .ecs
            .iter()
            .map(|ec| {
                (
                    t.hierarchies[0].label(ec.qi[0]),
                    t.hierarchies[1].label(ec.qi[1]),
                )
            })
            .collect();
        assert_eq!(
            labels,
            [
                (Some("20-24"), Some("care")),
                (Some("35-39"), Some("craft"))
            ]
        );
    }

    #[test]
    fn an_outlier_that_holds_a_group_up_is_suppressed() {
        // Three equal rows and one far away: releasing all four at the root costs 4 x 2
        // cells, suppressing the stranger 2 cells.
        let mut r = vec![(23, "nurse"); 3];
        r.push((38, "welder"));
        let f = forest(&r);
        let c = cluster(&f, 3, &Progress::new());
        check(&f, &c, 3);
        assert_eq!(c.suppressed, [3]);
        assert_eq!(lm(&f, &c), 0.0);
        // A near neighbour costs less generalized (one 5-band for four rows) than suppressed.
        r[3] = (24, "nurse");
        let f = forest(&r);
        let c = cluster(&f, 3, &Progress::new());
        check(&f, &c, 3);
        assert!(c.suppressed.is_empty());
        assert_eq!(c.ecs.len(), 1);
    }

    #[test]
    fn the_lca_table_gives_the_parent_walks_lca() {
        let f = forest(&rows(20));
        let t = Table::new(&f.tables[0]);
        for d in &t.dghs {
            assert!(d.lcas.is_some(), "small hierarchies get a table");
            let walk = Dgh {
                h: d.h,
                depth: d.depth.clone(),
                loss: d.loss.clone(),
                lcas: None,
            };
            for a in 0..d.h.len() as u32 {
                for b in 0..d.h.len() as u32 {
                    assert_eq!(d.lca(a, b), d.h.lca(a, b));
                    assert_eq!(walk.lca(a, b), d.h.lca(a, b));
                }
            }
        }
    }

    #[test]
    fn lca_without_each_row_matches_the_lca_of_the_others() {
        let f = forest(&rows(9));
        let t = Table::new(&f.tables[0]);
        for len in 2..=9u32 {
            let members: Vec<u32> = (0..len).rev().collect();
            let without = lca_without_each(&t, &members);
            for i in 0..members.len() {
                let mut others = members.clone();
                others.remove(i);
                assert_eq!(&without[i * 2..i * 2 + 2], t.lca_of(&others).as_slice());
            }
        }
    }

    #[test]
    fn fewer_rows_than_k_are_suppressed_and_nothing_else_is() {
        let f = forest(&rows(4));
        let c = cluster(&f, 5, &Progress::new());
        assert!(c.ecs.is_empty());
        assert_eq!(c.suppressed, [0, 1, 2, 3]);
        let c = cluster(&f, 4, &Progress::new());
        assert!(c.suppressed.is_empty());
        check(&f, &c, 4);
    }

    #[test]
    fn the_result_is_deterministic() {
        let f = forest(&rows(200));
        let a = cluster(&f, 6, &Progress::new());
        let b = cluster(&f, 6, &Progress::new());
        assert_eq!(a.ecs, b.ecs);
    }

    #[test]
    fn the_cut_is_optimal_for_its_order() {
        // Against every cut of a short order into runs of k..2k-1, by brute force.
        let f = forest(&rows(11));
        let t = Table::new(&f.tables[0]);
        let order: Vec<u32> = (0..11).collect();
        let k = 3;
        let cost =
            |gs: &[Vec<u32>]| -> f64 { gs.iter().map(|g| t.cost(&t.lca_of(g), g.len())).sum() };
        fn cuts(n: usize, k: usize, at: usize, acc: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
            if at == n {
                out.push(acc.clone());
                return;
            }
            for len in k..2 * k {
                if at + len <= n {
                    acc.push(at + len);
                    cuts(n, k, at + len, acc, out);
                    acc.pop();
                }
            }
        }
        let mut all = Vec::new();
        cuts(11, k, 0, &mut Vec::new(), &mut all);
        let brute = all
            .iter()
            .map(|ends| {
                let mut start = 0;
                let gs: Vec<Vec<u32>> = ends
                    .iter()
                    .map(|&e| {
                        let g = order[start..e].to_vec();
                        start = e;
                        g
                    })
                    .collect();
                cost(&gs)
            })
            .fold(f64::INFINITY, f64::min);
        let dp = segment(&t, &order, k);
        assert!((cost(&dp) - brute).abs() < 1e-9, "{} vs {brute}", cost(&dp));
    }

    #[test]
    fn the_last_stage_completes() {
        let f = forest(&rows(30));
        let progress = Progress::new();
        cluster(&f, 4, &progress);
        let s = progress.snapshot();
        assert_eq!((s.label.as_str(), s.done, s.total), ("grouping", 30, 30));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn random_tables_are_k_anonymous_and_labelled_with_lcas(
            picks in proptest::collection::vec((20u32..40, 0usize..4), 0..80),
            k in 1usize..9,
        ) {
            let jobs = ["nurse", "doctor", "welder", "joiner"];
            let r: Vec<(u32, &str)> = picks.iter().map(|&(a, j)| (a, jobs[j])).collect();
            let f = forest(&r);
            let c = cluster(&f, k, &Progress::new());
            check(&f, &c, k);
            if r.len() < k {
                prop_assert_eq!(c.suppressed.len(), r.len());
            }
        }
    }
}
