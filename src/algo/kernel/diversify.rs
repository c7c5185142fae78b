//! Pairwise l-diverse anonymization of two class representatives: 000 Alg. 1 (diversify) with
//! FindMapping-GRD (Alg. 2) or FindMapping-LSAP (Alg. 3).
//!
//! A representative node's sensitive multiset is not stored: it is the sensitive codes of the
//! node's member rows ([`Rep::members`]), read from the forest.
//!
//! Cost model: 000 Sec. 2.3.1 `cost(T)` with LM' for generalized QIs and `|QI|` per suppressed
//! vertex, times the owner's `suppression_price` (1 by default); as in [`super::pairwise`], a
//! vertex of a table without QIs still weighs one cell so that suppressing structure is never
//! free. The price is folded into the per-table weights, which every suppression cost and
//! every lower bound reads, so the bounds stay below the costs at any price.

use std::cell::RefCell;

use crate::algo::kernel::lca_loss::LcaLoss;
use crate::algo::kernel::tree::Rep;
use crate::forest::Forest;
use crate::plan::Diversity;

/// How sibling subtrees are paired up (option `mapping` of ClusTree and CToff).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mapping {
    /// 000 Alg. 3: an optimal assignment with dummy suppression rows.
    Lsap,
    /// 000 Alg. 2: greedy, one sibling at a time.
    Grd,
}

/// Costs are scaled to integers for the assignment solver (which needs a totally ordered
/// cost); 1e-6 of a cell is far below any difference LM' can make.
const SCALE: f64 = 1e6;

/// How far below its exact value a cost of `x` and `y` may lie: every LSAP cost is a sum of
/// entries rounded to 1 / SCALE, half a unit off at most, and the entries summed over all
/// the assignments of one diversify are at most its vertices. Bounds subtract it so that
/// they stay below the rounded cost (a unit per vertex, twice the need).
fn rounding(x: &Profile, y: &Profile) -> f64 {
    (x.nodes + y.nodes) as f64 / SCALE
}

/// Solves of [`Diversifier::lazy_lsap`] before it diversifies every pair left.
const LAZY_ROUNDS: usize = 6;

/// Up to this many vertices a group's sensitive values are counted without allocating.
const SMALL_GROUP: usize = 32;

/// Up to this many siblings an optimal assignment is found by trying every one (cheaper
/// than setting up Kuhn-Munkres for the 0-3 books of a course).
const SMALL_ASSIGNMENT: usize = 4;

/// The diversity a finished group of `target` vertices must reach (`None`: k-anonymity only).
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    pub l: usize,
    pub diversity: Diversity,
    /// Size of the finished group (ClusTree's clusters hold exactly l records).
    pub target: usize,
}

impl Rule {
    /// Can a group with these value counts, `size` vertices so far, still become diverse once
    /// it holds `target` vertices? 000's `diverse(a, b)` (disjoint SA sets) is this test for
    /// groups that end at exactly l vertices.
    pub fn feasible(&self, counts: &[u32], size: usize) -> bool {
        match self.diversity {
            Diversity::Probabilistic => counts
                .iter()
                .all(|&c| c as usize * self.l <= self.target.max(size)),
            Diversity::Distinct => {
                let distinct = counts.iter().filter(|&&c| c > 0).count();
                distinct + self.target.saturating_sub(size) >= self.l
            }
        }
    }
}

/// The state of [`Diversifier::mapping_exhaustive`]'s depth-first enumeration.
struct Enumeration {
    s_len: usize,
    n: usize,
    cost: [[f64; SMALL_ASSIGNMENT]; SMALL_ASSIGNMENT],
    supp: [f64; SMALL_ASSIGNMENT],
    pick: [usize; SMALL_ASSIGNMENT],
    best: Option<(f64, [usize; SMALL_ASSIGNMENT])>,
}

impl Enumeration {
    /// Assigns `s[i..]` given the elements of u in `used` and the cost `acc` so far; the
    /// first assignment of least cost wins (strict `<`).
    fn assign(&mut self, i: usize, used: u32, acc: f64) {
        if i == self.s_len {
            if self.best.is_none_or(|(b, _)| acc < b) {
                self.best = Some((acc, self.pick));
            }
            return;
        }
        for j in 0..self.n {
            if used & (1 << j) == 0 {
                self.pick[i] = j;
                // Matching u_j replaces its suppression by the pair's cost.
                let next = acc + self.cost[i][j] - self.supp[j];
                self.assign(i + 1, used | (1 << j), next);
            }
        }
    }
}

/// No vertex (the `None` of an `Option<usize>` without its tag).
const NONE: usize = usize::MAX;

thread_local! {
    /// One solver's buffers per thread: FindMapping-LSAP runs once per sibling list of every
    /// candidate ClusTree weighs, and allocating them each time was a tenth of its run.
    static KM_SCRATCH: RefCell<KuhnMunkres> = RefCell::new(KuhnMunkres::default());
}

/// Kuhn-Munkres (the Hungarian method) for a square integer matrix: the O(n^3) labelling
/// algorithm of `pathfinding::kuhn_munkres`, step for step (the same scan orders, the same
/// strict comparisons), so that among assignments of equal cost it returns the same one; it
/// only keeps its buffers between calls. A unit test checks both agree on tie-rich matrices.
#[derive(Debug, Default)]
struct KuhnMunkres {
    /// The negated costs, row-major (the method maximizes weight).
    w: Vec<i64>,
    lx: Vec<i64>,
    ly: Vec<i64>,
    /// Column of each row, then row of each column (`NONE`: unmatched).
    xy: Vec<usize>,
    yx: Vec<usize>,
    /// Rows of the alternating tree, in insertion order.
    s: Vec<usize>,
    /// Per column on the alternating path, the row it was reached from.
    alternating: Vec<usize>,
    slack: Vec<i64>,
    slackx: Vec<usize>,
}

impl KuhnMunkres {
    /// A least-cost assignment of the `n x n` row-major `costs`: afterwards `xy[row]` is the
    /// column of each row.
    fn solve_min(&mut self, n: usize, costs: &[i64]) {
        self.w.clear();
        self.w.extend(costs.iter().map(|&c| -c));
        let w = &self.w;
        self.lx.clear();
        self.lx
            .extend((0..n).map(|row| w[row * n..row * n + n].iter().copied().max().unwrap_or(0)));
        self.ly.clear();
        self.ly.resize(n, 0);
        self.xy.clear();
        self.xy.resize(n, NONE);
        self.yx.clear();
        self.yx.resize(n, NONE);
        self.slack.clear();
        self.slack.resize(n, 0);
        for root in 0..n {
            let y = self.grow_tree(n, root);
            self.augment(y);
        }
    }

    /// Grows the alternating tree from `root` until it reaches an unmatched column, adjusting
    /// the labels on the way; returns that column.
    fn grow_tree(&mut self, n: usize, root: usize) -> usize {
        let w = &self.w;
        self.alternating.clear();
        self.alternating.resize(n, NONE);
        self.s.clear();
        self.s.push(root);
        for y in 0..n {
            self.slack[y] = self.lx[root] + self.ly[y] - w[root * n + y];
        }
        self.slackx.clear();
        self.slackx.resize(n, root);
        loop {
            let mut delta = i64::MAX;
            let (mut x, mut y) = (0, 0);
            for yy in 0..n {
                if self.alternating[yy] == NONE && self.slack[yy] < delta {
                    delta = self.slack[yy];
                    x = self.slackx[yy];
                    y = yy;
                }
            }
            if delta > 0 {
                for &sx in &self.s {
                    self.lx[sx] -= delta;
                }
                for yy in 0..n {
                    if self.alternating[yy] != NONE {
                        self.ly[yy] += delta;
                    } else {
                        self.slack[yy] -= delta;
                    }
                }
            }
            self.alternating[y] = x;
            if self.yx[y] == NONE {
                return y;
            }
            let x = self.yx[y];
            // The tree is a set: a row enters it once.
            if !self.s.contains(&x) {
                self.s.push(x);
            }
            for yy in 0..n {
                if self.alternating[yy] == NONE {
                    let alternate = self.lx[x] + self.ly[yy] - w[x * n + yy];
                    if self.slack[yy] > alternate {
                        self.slack[yy] = alternate;
                        self.slackx[yy] = x;
                    }
                }
            }
        }
    }

    /// A least-cost assignment of `costs` after a solve of a matrix that differs from it only
    /// in cells whose cost rose: the labels of that solve stay feasible (weights only fell),
    /// so only the rows whose matched cell is no longer tight are matched again, an
    /// augmenting path each (O(n^2) per row rather than O(n^3) in all). The assignment is
    /// least-cost but may be another one than [`solve_min`](Self::solve_min) would pick.
    /// Solves from scratch if a cost fell after all.
    fn resolve_raised(&mut self, n: usize, costs: &[i64]) {
        self.w.clear();
        self.w.extend(costs.iter().map(|&c| -c));
        let feasible = (0..n * n).all(|k| self.lx[k / n] + self.ly[k % n] >= self.w[k]);
        if !feasible {
            self.solve_min(n, costs);
            return;
        }
        for x in 0..n {
            let y = self.xy[x];
            if self.lx[x] + self.ly[y] != self.w[x * n + y] {
                self.xy[x] = NONE;
                self.yx[y] = NONE;
            }
        }
        for root in 0..n {
            if self.xy[root] == NONE {
                let y = self.grow_tree(n, root);
                self.augment(y);
            }
        }
    }

    /// The total of `costs` over the assignment found.
    fn least(&self, n: usize, costs: &[i64]) -> i64 {
        self.xy
            .iter()
            .enumerate()
            .map(|(i, &j)| costs[i * n + j])
            .sum()
    }

    /// Flips the matching along the alternating path ending at column `y`.
    fn augment(&mut self, mut y: usize) {
        while y != NONE {
            let x = self.alternating[y];
            let prec = self.xy[x];
            self.yx[y] = x;
            self.xy[x] = y;
            y = prec;
        }
    }
}

/// Completes the rows of a FindMapping-LSAP matrix (`n` columns) with the dummy row `dummy`
/// (000 Alg. 3 lines 8-10: suppressing each element of the longer list) and solves it:
/// each row's column, and the least total.
fn solve_padded(n: usize, scaled: &mut Vec<i64>, dummy: &[i64]) -> (Vec<usize>, i64) {
    pad(n, scaled, dummy);
    KM_SCRATCH.with(|cell| {
        let mut km = cell.borrow_mut();
        km.solve_min(n, scaled);
        (km.xy.clone(), km.least(n, scaled))
    })
}

/// Fills a FindMapping-LSAP matrix's missing rows (up to `n`) with the dummy row.
fn pad(n: usize, scaled: &mut Vec<i64>, dummy: &[i64]) {
    while scaled.len() < n * n {
        scaled.extend_from_slice(dummy);
    }
}

/// What diversify needs to know about the forest.
pub struct Diversifier<'a> {
    forest: &'a Forest,
    weights: Vec<f64>,
    /// Per table and QI, `loss(lca(x, y))` as a lookup.
    lca: Vec<Vec<LcaLoss>>,
    mapping: Mapping,
    rule: Option<Rule>,
}

impl<'a> Diversifier<'a> {
    /// Diversify where a suppressed vertex costs `price` times its cells.
    pub fn new(forest: &'a Forest, mapping: Mapping, rule: Option<Rule>, price: f64) -> Self {
        let weights = forest
            .tables
            .iter()
            .map(|t| t.nqi().max(1) as f64 * price)
            .collect();
        let lca = forest
            .tables
            .iter()
            .map(|t| t.hierarchies.iter().map(LcaLoss::new).collect())
            .collect();
        Diversifier {
            forest,
            weights,
            lca,
            mapping,
            rule,
        }
    }

    /// What suppressing one copy of a subtree costs (for one member), the price included.
    pub fn weight(&self, rep: &Rep) -> f64 {
        self.weights[rep.table as usize] + rep.children.iter().map(|c| self.weight(c)).sum::<f64>()
    }

    /// Cost of suppressing a representative for all its members.
    fn suppression(&self, rep: &Rep) -> f64 {
        rep.member_count() as f64 * self.weight(rep)
    }

    /// `diverse(a, b)` of 000 Sec. 2.3.1, generalized to multisets and several sensitive
    /// columns: every sensitive column of the merged vertex group can still become diverse.
    pub fn diverse(&self, a: &Rep, b: &Rep) -> bool {
        let Some(rule) = self.rule else {
            return true;
        };
        let t = &self.forest.tables[a.table as usize];
        let (na, size) = (a.member_count(), a.member_count() + b.member_count());
        let row = |i: usize| {
            if i < na {
                a.members[i]
            } else {
                b.members[i - na]
            }
        };
        t.sensitive.iter().all(|col| {
            if size > SMALL_GROUP {
                let mut counts = vec![0u32; col.labels.len()];
                for i in 0..size {
                    counts[col.codes[row(i) as usize] as usize] += 1;
                }
                return rule.feasible(&counts, size);
            }
            // Groups are ClusTree clusters (l records): counting by pairwise comparison
            // avoids an allocation per call on the hottest path.
            let code = |i: usize| col.codes[row(i) as usize];
            let mut counts = [0u32; SMALL_GROUP];
            let mut n = 0;
            for i in 0..size {
                let c = code(i);
                if (0..i).any(|j| code(j) == c) {
                    continue;
                }
                counts[n] = (i..size).filter(|&j| code(j) == c).count() as u32;
                n += 1;
            }
            rule.feasible(&counts[..n], size)
        })
    }

    /// LM of one copy of the node's QIs generalized to their common ancestors (Alg. 1 l. 7-10).
    fn node_loss(&self, a: &Rep, b: &Rep) -> f64 {
        let t = &self.forest.tables[a.table as usize];
        a.qi.iter()
            .zip(&b.qi)
            .zip(&t.hierarchies)
            .zip(&self.lca[a.table as usize])
            .map(|(((&x, &y), h), lca)| lca.get(h, x, y))
            .sum()
    }

    fn child_tables(&self, table: u16) -> impl Iterator<Item = u16> + '_ {
        self.forest.tables[table as usize]
            .children
            .iter()
            .map(|c| c.table as u16)
    }

    /// The cost `diversify(a, b)` returns (000 Alg. 1), counting every member's copy: the
    /// generalization of the merged tree plus everything it suppresses (FindMapping-LSAP's
    /// part rounded to millionths, see [`mapping_lsap`](Self::mapping_lsap)).
    pub fn cost(&self, a: &Rep, b: &Rep) -> f64 {
        // Lines 4-6: roots that cannot be diverse take their whole trees with them.
        if !self.diverse(a, b) {
            return self.suppression(a) + self.suppression(b);
        }
        let m = (a.member_count() + b.member_count()) as f64;
        let mut cost = m * self.node_loss(a, b);
        for ct in self.child_tables(a.table) {
            let (xs, ys) = (a.children_of(ct), b.children_of(ct));
            cost += self.find_mapping(xs, ys).cost;
        }
        cost
    }

    /// What [`cost_bound`](Self::cost_bound) needs of a representative, computed once per
    /// tree rather than once per pair: the suppression cost of every node and which sensitive
    /// values a one-member node may bring to it and stay diverse.
    pub fn profile<'r>(&self, rep: &'r Rep) -> Profile<'r> {
        let children: Vec<Profile<'r>> = rep.children.iter().map(|c| self.profile(c)).collect();
        let weight =
            self.weights[rep.table as usize] + children.iter().map(|c| c.weight).sum::<f64>();
        let t = &self.forest.tables[rep.table as usize];
        let mut accept = Vec::with_capacity(t.sensitive.len());
        let mut own = Vec::with_capacity(t.sensitive.len());
        let mut masks = true;
        for col in &t.sensitive {
            own.push(col.codes[rep.members[0] as usize]);
            let Some(rule) = self.rule else {
                accept.push(u64::MAX);
                continue;
            };
            if col.labels.len() > 64 {
                masks = false;
                continue;
            }
            let mut counts = vec![0u32; col.labels.len()];
            for &m in &rep.members {
                counts[col.codes[m as usize] as usize] += 1;
            }
            let size = rep.member_count() + 1;
            let mut mask = 0u64;
            for g in 0..counts.len() {
                counts[g] += 1;
                if rule.feasible(&counts, size) {
                    mask |= 1 << g;
                }
                counts[g] -= 1;
            }
            accept.push(mask);
        }
        let nodes = 1 + children.iter().map(|c| c.nodes).sum::<usize>();
        Profile {
            nodes,
            rep,
            weight,
            supp: rep.member_count() as f64 * weight,
            accept: masks.then_some(accept),
            single: rep.member_count() == 1,
            own,
            children,
        }
    }

    /// What [`quick_bound`](Self::quick_bound) needs of a representative, computed once
    /// per CreateCluster step.
    pub fn quick(&self, x: &Profile) -> Quick {
        let mut by_table: Vec<Vec<&Profile>> = vec![Vec::new(); self.forest.tables.len()];
        fn collect<'p, 'r>(p: &'p Profile<'r>, out: &mut Vec<Vec<&'p Profile<'r>>>) {
            for c in &p.children {
                out[c.rep.table as usize].push(c);
                collect(c, out);
            }
        }
        collect(x, &mut by_table);
        let partners = by_table
            .iter()
            .enumerate()
            .map(|(t, nodes)| self.cheapest_partners(nodes, t))
            .collect();
        let fewest = self
            .child_tables(x.rep.table)
            .map(|ct| {
                let mut supps: Vec<f64> = x.children_of(ct).iter().map(|c| c.supp).collect();
                supps.sort_by(f64::total_cmp);
                let mut sums = vec![0.0];
                for s in supps {
                    sums.push(sums[sums.len() - 1] + s);
                }
                (ct, sums)
            })
            .collect();
        Quick { partners, fewest }
    }

    /// For the representative's `nodes` of table `t`: per (code, sensitive value) of a
    /// one-member node, the least `(m + 1) * LM'` of pairing it with one of them and staying
    /// diverse, when `t` has one QI with a loss table; otherwise 0 (no nodes: infinity).
    fn cheapest_partners(&self, nodes: &[&Profile], t: usize) -> Partners {
        let table = &self.forest.tables[t];
        if nodes.is_empty() {
            return Partners::None;
        }
        let ([_], Some((n, losses))) = (
            &table.hierarchies[..],
            self.lca[t].first().and_then(LcaLoss::pairs),
        ) else {
            return Partners::Free;
        };
        // Diversity is read from the masks when there is exactly one sensitive column.
        let values = match (&table.sensitive[..], self.rule) {
            ([col], Some(_)) if col.labels.len() <= 64 => col.labels.len(),
            _ => 1,
        };
        let mut best = vec![f64::INFINITY; n * values];
        for x in nodes {
            let accept = match &x.accept {
                Some(a) if values > 1 => a[0],
                _ => u64::MAX,
            };
            let m = (x.rep.member_count() + 1) as f64;
            let row = &losses[x.rep.qi[0] as usize * n..][..n];
            for (code, &loss) in row.iter().enumerate() {
                let cost = m * loss;
                for (g, b) in best[code * values..][..values].iter_mut().enumerate() {
                    if values == 1 || accept & (1 << g) != 0 {
                        *b = b.min(cost);
                    }
                }
            }
        }
        Partners::Table { values, best }
    }

    /// A lower bound on `cost(x, y)` for a one-member `y` that reads each node of `y` once:
    /// the roots' LM, the cheapest of `x`'s children that must stay unpaired (and, when `y`
    /// has more children than `x`, the cheapest extra of suppressing those of `y` that
    /// cannot all be paired), and per node `v`
    /// of `y` below the root `min(supp(v), partner(v) + the same for v's children)`, where
    /// `partner(v)` is the least node loss of pairing `v` diversely with any node of `x` of its
    /// table ([`cheapest_partners`](Self::cheapest_partners)): a node is either suppressed
    /// with its subtree, or paired (with a node of its table, diversely, or the pair costs
    /// more than `supp(v)`) and its children in turn are suppressed or paired within. Returns
    /// 0 when `y` has more than one member.
    pub fn quick_bound(&self, q: &Quick, x: &Profile, y: &Profile) -> f64 {
        if !y.single {
            return 0.0;
        }
        if !self.accepts(x, y) {
            return x.supp + y.supp;
        }
        let m = (x.rep.member_count() + 1) as f64;
        let mut bound = m * self.node_loss(x.rep, y.rep);
        for (ct, fewest) in &q.fewest {
            let ys = y.children_of(*ct);
            let paired = fewest.len() - 1;
            bound += fewest[paired.saturating_sub(ys.len())];
            if ys.len() <= paired {
                bound += ys.iter().map(|v| self.quick_node(q, v)).sum::<f64>();
                continue;
            }
            // At most `paired` of y's children find a partner: the rest are suppressed, and
            // suppressing v instead of pairing it costs at least supp(v) - quick_node(v).
            let mut small = [0.0f64; SMALL_GROUP];
            let mut big = Vec::new();
            let extra = if ys.len() <= SMALL_GROUP {
                &mut small[..ys.len()]
            } else {
                big.resize(ys.len(), 0.0);
                &mut big[..]
            };
            for (v, e) in ys.iter().zip(extra.iter_mut()) {
                let node = self.quick_node(q, v);
                bound += node;
                *e = v.supp - node;
            }
            let forced = ys.len() - paired;
            extra.select_nth_unstable_by(forced - 1, f64::total_cmp);
            bound += extra[..forced].iter().sum::<f64>();
        }
        (bound - rounding(x, y)).max(0.0)
    }

    /// `min(supp(v), partner(v) + children)` of [`quick_bound`](Self::quick_bound).
    fn quick_node(&self, q: &Quick, v: &Profile) -> f64 {
        let partner = match &q.partners[v.rep.table as usize] {
            Partners::None => return v.supp,
            Partners::Free => 0.0,
            Partners::Table { values, best } => {
                let g = if *values > 1 { v.own[0] as usize } else { 0 };
                best[v.rep.qi[0] as usize * values + g]
            }
        };
        let children: f64 = v.children.iter().map(|c| self.quick_node(q, c)).sum();
        v.supp.min(partner + children)
    }

    /// `diverse(x, y)`, by the masks when `y` is one member.
    fn accepts(&self, x: &Profile, y: &Profile) -> bool {
        match &x.accept {
            Some(accept) if y.single => accept
                .iter()
                .zip(&y.own)
                .all(|(&mask, &code)| code < 64 && mask & (1 << code) != 0),
            _ => self.diverse(x.rep, y.rep),
        }
    }

    /// A lower bound on [`cost`](Self::cost)`(x, y)` that never solves an assignment, for
    /// CreateCluster to skip candidates that cannot win (000 Alg. 4 line 5 stays exact). It
    /// mirrors Alg. 1 but relaxes every FindMapping to "each sibling takes its cheapest
    /// partner, partners may repeat" (see [`mapping_bound`](Self::mapping_bound)), which no
    /// assignment, optimal (LSAP) or greedy (GRD), can undercut. Roots that are not diverse
    /// cost exactly their suppression. The sum only grows while it is built, so once it
    /// exceeds `limit` it is returned as it stands (still a lower bound). Less [`rounding`]:
    /// the cost it bounds rounds its LSAP parts.
    pub fn cost_bound(&self, x: &Profile, y: &Profile, limit: f64) -> f64 {
        self.bound_with_pairs(x, y, limit, &mut Vec::new()).0
    }

    /// [`cost_bound`](Self::cost_bound), keeping per child table of the root the per-pair
    /// bounds its assignment read (empty where the scan stopped early); true when the bound
    /// is the cost itself (roots that cannot be diverse).
    fn bound_with_pairs(
        &self,
        x: &Profile,
        y: &Profile,
        limit: f64,
        pairs: &mut Vec<Vec<f64>>,
    ) -> (f64, bool) {
        if !self.accepts(x, y) {
            return (x.supp + y.supp, true);
        }
        // The sum bounds the cost in exact arithmetic; the cost rounds (`rounding`).
        let r = rounding(x, y);
        let limit = limit + r;
        let m = (x.rep.member_count() + y.rep.member_count()) as f64;
        let mut bound = m * self.node_loss(x.rep, y.rep);
        for ct in self.child_tables(x.rep.table) {
            if bound > limit {
                break;
            }
            let (xs, ys) = (x.children_of(ct), y.children_of(ct));
            let mut table = Vec::new();
            bound += self.assignment_bound(xs, ys, limit - bound, &mut table);
            pairs.push(table);
        }
        ((bound - r).max(0.0), false)
    }

    /// [`cost`](Self::cost)`(x.rep, y.rep)` (the same `f64`) when [`cost_bound`]
    /// (Self::cost_bound) stays within `limit`, else that bound; the flag tells which. The
    /// cost is found from the bound's per-pair matrices ([`lazy_lsap`](Self::lazy_lsap)), so
    /// most sibling pairs are never diversified exactly.
    pub fn cost_within(&self, x: &Profile, y: &Profile, limit: f64) -> (f64, bool) {
        let mut pairs = Vec::new();
        let (bound, exact) = self.bound_with_pairs(x, y, limit, &mut pairs);
        if exact || bound > limit {
            return (bound, exact);
        }
        // As in `cost`: the roots' loss, then each child table's mapping in order.
        let m = (x.rep.member_count() + y.rep.member_count()) as f64;
        let mut cost = m * self.node_loss(x.rep, y.rep);
        for (ct, table) in self.child_tables(x.rep.table).zip(pairs) {
            cost += self.lazy_mapping_cost(x, y, ct, table);
        }
        (cost, true)
    }

    /// `find_mapping(..).cost` for the children of `x` and `y` in `ct`, given the per-pair
    /// bounds `pairs` of [`mapping_bound`](Self::mapping_bound) (row-major, the shorter list's
    /// elements as rows).
    fn lazy_mapping_cost(&self, x: &Profile, y: &Profile, ct: u16, pairs: Vec<f64>) -> f64 {
        let (xs, ys) = (x.rep.children_of(ct), y.rep.children_of(ct));
        let swapped = xs.len() > ys.len();
        let (s, u, sp, up) = if swapped {
            (ys, xs, y.children_of(ct), x.children_of(ct))
        } else {
            (xs, ys, x.children_of(ct), y.children_of(ct))
        };
        let lazy = self.mapping == Mapping::Lsap
            && !s.is_empty()
            && u.len() > SMALL_ASSIGNMENT
            && pairs.len() == s.len() * u.len();
        if !lazy {
            return self.find_mapping(xs, ys).cost;
        }
        self.lazy_lsap(s, u, sp, up, pairs)
    }

    /// FindMapping-LSAP's cost (000 Alg. 3) from lower bounds: solve the assignment over the
    /// bounds (rounded down), diversify exactly only the pairs it picks, and solve again
    /// until every pair picked is exact. Then the assignment is optimal for the exact costs
    /// too: bounds never exceed costs, so no other assignment can cost less. Its scaled
    /// total is the one [`mapping_lsap`](Self::mapping_lsap) finds (the optimum is unique as
    /// a number, whichever assignment reaches it). `sp` and `up` are the lists' profiles.
    ///
    /// A pair's cost rounds at every assignment below it, so it may lie below its bound by
    /// half a unit (1 / SCALE) per vertex: a bound enters the solve lowered by a unit per
    /// vertex of the pair, which keeps it at or below the rounded cost.
    fn lazy_lsap(
        &self,
        s: &[Rep],
        u: &[Rep],
        sp: &[Profile],
        up: &[Profile],
        mut values: Vec<f64>,
    ) -> f64 {
        let n = u.len();
        let mut exact = vec![false; s.len() * n];
        let lowered = |k: usize, v: f64| {
            let vertices = sp[k / n].nodes + up[k % n].nodes;
            (v * SCALE).floor() as i64 - vertices as i64
        };
        let mut scaled: Vec<i64> = Vec::with_capacity(n * n);
        scaled.extend(values.iter().enumerate().map(|(k, &v)| lowered(k, v)));
        let dummy: Vec<i64> = up.iter().map(|p| (p.supp * SCALE).round() as i64).collect();
        pad(n, &mut scaled, &dummy);
        // Its own solver: the costs diversified between solves use the thread's.
        let mut km = KuhnMunkres::default();
        km.solve_min(n, &scaled);
        let mut round = 0;
        loop {
            if round == LAZY_ROUNDS {
                // Slow to converge: diversify every pair left, as mapping_lsap does.
                for (k, done) in exact.iter_mut().enumerate() {
                    if !*done {
                        values[k] = self.cost(&s[k / n], &u[k % n]);
                        scaled[k] = (values[k] * SCALE).round() as i64;
                        *done = true;
                    }
                }
                km.resolve_raised(n, &scaled);
            }
            let mut open = false;
            for i in 0..s.len() {
                let k = i * n + km.xy[i];
                if !exact[k] {
                    values[k] = self.cost(&s[i], &u[km.xy[i]]);
                    // At or above the lowered bound it replaces (see above).
                    scaled[k] = (values[k] * SCALE).round() as i64;
                    exact[k] = true;
                    open = true;
                }
            }
            if !open {
                return km.least(n, &scaled) as f64 / SCALE;
            }
            km.resolve_raised(n, &scaled);
            round += 1;
        }
    }

    /// [`mapping_bound`](Self::mapping_bound) for the root's children, tightened when it
    /// stays within `limit` (the candidate would be diversified next): the least-cost
    /// assignment of the per-pair lower bounds, shaped like FindMapping-LSAP's (000 Alg. 3
    /// lines 3-10: every element of the shorter list is paired, unpaired ones of the longer
    /// list are suppressed). Every assignment FindMapping may return, optimal or greedy,
    /// costs at least its pairs' bounds, so at least this least one. Bounds are rounded down
    /// to the solver's integers, which keeps the result below the bound sum of any
    /// assignment.
    /// `pairs` receives the per-pair bounds when the relaxed bound's scan completes.
    fn assignment_bound(
        &self,
        xs: &[Profile],
        ys: &[Profile],
        limit: f64,
        pairs: &mut Vec<f64>,
    ) -> f64 {
        // The pair bounds the relaxed bound reads, kept for the assignment (computing them
        // twice was a third of the bound's time).
        let relaxed = self.mapping_bound(xs, ys, limit, Some(pairs));
        if relaxed > limit || xs.len() < 2 || ys.len() < 2 {
            return relaxed;
        }
        // Rows are the shorter list's elements, columns the longer list's.
        let long = if xs.len() <= ys.len() { ys } else { xs };
        let n = long.len();
        let floor = |c: f64| (c * SCALE).floor() as i64;
        let mut scaled: Vec<i64> = Vec::with_capacity(n * n);
        scaled.extend(pairs.iter().map(|&b| floor(b)));
        let dummy: Vec<i64> = long.iter().map(|u| floor(u.supp)).collect();
        let (_, least) = solve_padded(n, &mut scaled, &dummy);
        relaxed.max(least as f64 / SCALE)
    }

    /// A lower bound on FindMapping's cost for two sibling lists, from per-pair lower bounds
    /// `lb(i, j)` (by induction, `lb(i, j) <= cost(s_i, u_j)` and `lb(i, j) <= supp(s_i) +
    /// supp(u_j)`), with `s` the shorter list: the larger of
    /// - columns: every `u_j` is either suppressed or paired, `sum_j min(supp(u_j), min_i
    ///   lb(i, j))` (its terms are non-negative, so a partial sum is a bound too and the
    ///   scan stops once it exceeds `limit`);
    /// - rows: pairing `s_i` with `u_j` replaces `supp(u_j)`, `sum_j supp(u_j) + sum_i min_j
    ///   (lb(i, j) - supp(u_j))`.
    ///
    /// Both stay below `sum supp(s) + sum supp(u)`, the cost of non-diverse roots, which keeps
    /// the induction going. `xs` is the representative's side, `ys` the candidate's. When
    /// the scan completes, `pairs` (if given) holds every `lb(i, j)`, row-major by `i`.
    fn mapping_bound(
        &self,
        xs: &[Profile],
        ys: &[Profile],
        limit: f64,
        mut pairs: Option<&mut Vec<f64>>,
    ) -> f64 {
        if let Some(p) = pairs.as_deref_mut() {
            p.clear();
        }
        if xs.is_empty() || ys.is_empty() {
            return xs.iter().chain(ys).map(|p| p.supp).sum();
        }
        // Alg. 1 "Require": the first list is the shorter one.
        let long_is_y = xs.len() <= ys.len();
        let (short, long) = if long_is_y {
            (xs.len(), ys.len())
        } else {
            (ys.len(), xs.len())
        };
        let lb = |i: usize, j: usize| {
            if long_is_y {
                self.pair_bound(&xs[i], &ys[j])
            } else {
                self.pair_bound(&xs[j], &ys[i])
            }
        };
        let supp_long = |j: usize| if long_is_y { ys[j].supp } else { xs[j].supp };
        let mut small_rows = [0.0f64; SMALL_GROUP];
        let mut big_rows = Vec::new();
        let row_min = if short <= SMALL_GROUP {
            &mut small_rows[..short]
        } else {
            big_rows.resize(short, 0.0);
            &mut big_rows[..]
        };
        row_min.fill(f64::INFINITY);
        if let Some(p) = pairs.as_deref_mut() {
            p.resize(short * long, 0.0);
        }
        let (mut columns, mut supp_u) = (0.0, 0.0);
        for j in 0..long {
            let sv = supp_long(j);
            supp_u += sv;
            let mut cheapest = sv;
            for (i, r) in row_min.iter_mut().enumerate() {
                let b = lb(i, j);
                if let Some(p) = pairs.as_deref_mut() {
                    p[i * long + j] = b;
                }
                cheapest = cheapest.min(b);
                *r = r.min(b - sv);
            }
            columns += cheapest;
            if columns > limit {
                if let Some(p) = pairs.as_deref_mut() {
                    p.clear();
                }
                return columns;
            }
        }
        let rows = supp_u + row_min.iter().sum::<f64>();
        columns.max(rows)
    }

    /// [`cost_bound`](Self::cost_bound) of two siblings, in full.
    fn pair_bound(&self, x: &Profile, y: &Profile) -> f64 {
        if !self.accepts(x, y) {
            return x.supp + y.supp;
        }
        let m = (x.rep.member_count() + y.rep.member_count()) as f64;
        let mut bound = m * self.node_loss(x.rep, y.rep);
        for ct in self.child_tables(x.rep.table) {
            bound += self.mapping_bound(x.children_of(ct), y.children_of(ct), f64::INFINITY, None);
        }
        bound
    }

    /// FindMapping (000 Alg. 2 or 3) on two sibling lists of one child table. Lines 11-17 of
    /// Alg. 1 (one side without children) are the case of an empty list: everything on the
    /// other side is suppressed.
    fn find_mapping(&self, xs: &[Rep], ys: &[Rep]) -> SiblingMapping {
        // Alg. 1 "Require": the first list is the shorter one.
        let swapped = xs.len() > ys.len();
        let (s, u) = if swapped { (ys, xs) } else { (xs, ys) };
        let mut m = match self.mapping {
            Mapping::Grd => self.mapping_grd(s, u),
            Mapping::Lsap => self.mapping_lsap(s, u),
        };
        if swapped {
            for p in &mut m.pairs {
                *p = (p.1, p.0);
            }
        }
        m
    }

    /// FindMapping-GRD (000 Alg. 2): each element of `s` in turn takes the cheapest free
    /// element of `u` (lines 3-14); ties go to the earliest. Unpaired `u` are suppressed.
    fn mapping_grd(&self, s: &[Rep], u: &[Rep]) -> SiblingMapping {
        let mut free = vec![true; u.len()];
        let mut pairs = Vec::with_capacity(s.len());
        let mut cost = 0.0;
        for (i, f) in s.iter().enumerate() {
            let mut best: Option<(usize, f64)> = None;
            for (j, v) in u.iter().enumerate() {
                if !free[j] {
                    continue;
                }
                let c = self.cost(f, v);
                if best.is_none_or(|(_, b)| c < b) {
                    best = Some((j, c));
                }
            }
            // |s| <= |u|, so a free element always remains.
            if let Some((j, c)) = best {
                free[j] = false;
                cost += c;
                pairs.push((i, j));
            }
        }
        cost += u
            .iter()
            .zip(&free)
            .filter(|(_, &f)| f)
            .map(|(v, _)| self.suppression(v))
            .sum::<f64>();
        SiblingMapping { pairs, cost }
    }

    /// FindMapping-LSAP (000 Alg. 3): a |u| x |u| assignment whose first |s| rows cost
    /// `diversify(s_i, u_j)` (lines 3-7) and whose dummy rows cost suppressing `u_j` (lines
    /// 8-10), solved exactly (Kuhn-Munkres); dummy assignments are dropped (lines 13-15).
    /// Its cost is the solver's optimum over the costs as integers (millionths).
    fn mapping_lsap(&self, s: &[Rep], u: &[Rep]) -> SiblingMapping {
        if s.is_empty() {
            let cost = u.iter().map(|v| self.suppression(v)).sum();
            return SiblingMapping {
                pairs: Vec::new(),
                cost,
            };
        }
        if u.len() <= SMALL_ASSIGNMENT {
            return self.mapping_exhaustive(s, u);
        }
        let n = u.len();
        let mut scaled: Vec<i64> = Vec::with_capacity(n * n);
        for f in s {
            scaled.extend(u.iter().map(|v| (self.cost(f, v) * SCALE).round() as i64));
        }
        let dummy: Vec<i64> = u
            .iter()
            .map(|v| (self.suppression(v) * SCALE).round() as i64)
            .collect();
        // The optimum the solver reached, which any optimal assignment reaches: the lazy
        // search (`lazy_lsap`) finds the same number without diversifying every pair.
        let (assignment, least) = solve_padded(n, &mut scaled, &dummy);
        let pairs = (0..s.len()).map(|i| (i, assignment[i])).collect();
        SiblingMapping {
            pairs,
            cost: least as f64 / SCALE,
        }
    }

    /// The optimal assignment of a tiny sibling list by enumeration: every injective map of
    /// `s` into `u`, in lexicographic order, keeping the first of equal cost.
    fn mapping_exhaustive(&self, s: &[Rep], u: &[Rep]) -> SiblingMapping {
        let n = u.len();
        let mut cost = [[0.0f64; SMALL_ASSIGNMENT]; SMALL_ASSIGNMENT];
        for (i, f) in s.iter().enumerate() {
            for (j, v) in u.iter().enumerate() {
                cost[i][j] = self.cost(f, v);
            }
        }
        let mut supp = [0.0f64; SMALL_ASSIGNMENT];
        for (j, v) in u.iter().enumerate() {
            supp[j] = self.suppression(v);
        }
        let all_suppressed: f64 = supp[..n].iter().sum();
        // Search over assignments: pick[i] is the element of u given to s[i].
        let mut search = Enumeration {
            s_len: s.len(),
            n,
            cost,
            supp,
            pick: [0; SMALL_ASSIGNMENT],
            best: None,
        };
        search.assign(0, 0, all_suppressed);
        let (pick, best) = (search.pick, search.best);
        let (total, pick) = best.unwrap_or((all_suppressed, pick));
        SiblingMapping {
            pairs: (0..s.len()).map(|i| (i, pick[i])).collect(),
            cost: total,
        }
    }

    /// diversify (000 Alg. 1) building the merged representative: QIs generalized to common
    /// ancestors, members of `a` first, sibling subtrees paired by FindMapping and merged
    /// recursively, unpaired or non-diverse subtrees left out (partial suppression, Def. 4).
    /// `None` when the roots themselves cannot be diverse (lines 4-6).
    pub fn merge(&self, a: &Rep, b: &Rep) -> Option<Rep> {
        if !self.diverse(a, b) {
            return None;
        }
        let (qi, members) = Rep::merged_node(a, b, &self.forest.tables[a.table as usize]);
        let mut children = Vec::new();
        for ct in self.child_tables(a.table) {
            let (xs, ys) = (a.children_of(ct), b.children_of(ct));
            let mut pairs = self.find_mapping(xs, ys).pairs;
            // The first side's order keeps representatives deterministic.
            pairs.sort_unstable();
            children.extend(
                pairs
                    .into_iter()
                    .filter_map(|(i, j)| self.merge(&xs[i], &ys[j])),
            );
        }
        Some(Rep {
            table: a.table,
            qi,
            members,
            children,
        })
    }

    /// `cost` of 000 Alg. 5 lines 10-12 for a finished cluster: every member's generalized
    /// cells plus every vertex of its source tree that the representative no longer holds.
    pub fn cluster_cost(&self, rep: &Rep, source_weights: &[f64]) -> f64 {
        let kept = self.weight(rep);
        let suppressed: f64 = rep
            .members
            .iter()
            .map(|&e| source_weights[e as usize] - kept)
            .sum();
        rep.member_count() as f64 * self.generalization(rep) + suppressed
    }

    /// LM' of one copy of a representative's QI cells.
    fn generalization(&self, rep: &Rep) -> f64 {
        let t = &self.forest.tables[rep.table as usize];
        let own: f64 = rep
            .qi
            .iter()
            .zip(&t.hierarchies)
            .map(|(&c, h)| h.loss(c))
            .sum();
        own + rep
            .children
            .iter()
            .map(|c| self.generalization(c))
            .sum::<f64>()
    }

    /// Weight of every entity's whole source tree, by entity row.
    pub fn source_weights(&self) -> Vec<f64> {
        let n = self.forest.entities();
        let mut w: Vec<Vec<f64>> = self
            .forest
            .tables
            .iter()
            .enumerate()
            .map(|(ti, t)| vec![self.weights[ti]; t.rows()])
            .collect();
        // Children follow parents in plan order: fold weights upwards from the last table.
        for ti in (1..self.forest.tables.len()).rev() {
            let pt = self
                .forest
                .tables
                .iter()
                .position(|t| t.children.iter().any(|c| c.table == ti))
                .expect("every non-entity family table has a parent table");
            let (lower, upper) = w.split_at_mut(ti);
            for (r, &p) in self.forest.tables[ti].parent.iter().enumerate() {
                if let Some(x) = lower[pt].get_mut(p as usize) {
                    *x += upper[0][r];
                }
            }
        }
        w.swap_remove(0).into_iter().take(n).collect()
    }
}

/// [`Diversifier::quick_bound`]'s view of one representative.
pub struct Quick {
    /// Per family table, the cheapest partners among the representative's nodes.
    partners: Vec<Partners>,
    /// Per child table of the root, the sums of the cheapest `i` suppressions of the
    /// representative's children there.
    fewest: Vec<(u16, Vec<f64>)>,
}

/// What pairing a one-member node with one of the representative's nodes of its table costs
/// at least.
enum Partners {
    /// The representative has no node there: the node is suppressed.
    None,
    /// No table of losses: nothing is known beyond 0.
    Free,
    /// Per (code, sensitive value), row-major by code.
    Table { values: usize, best: Vec<f64> },
}

/// A representative with what [`Diversifier::cost_bound`] reads of every node precomputed.
pub struct Profile<'r> {
    rep: &'r Rep,
    /// Weight of one copy of the subtree, and its suppression for every member.
    weight: f64,
    supp: f64,
    /// Per sensitive column, bit `g` set if one more member with value `g` leaves the node
    /// able to become diverse; `None` when a column has more than 64 values.
    accept: Option<Vec<u64>>,
    /// One member, whose sensitive values are `own`.
    single: bool,
    own: Vec<u32>,
    /// `rep.children`, one for one.
    children: Vec<Profile<'r>>,
    /// Vertices of the subtree.
    nodes: usize,
}

impl Profile<'_> {
    fn children_of(&self, table: u16) -> &[Profile<'_>] {
        &self.children[self.rep.child_range(table)]
    }
}

/// A pairing of two sibling lists and its cost (pairs index the lists as given).
struct SiblingMapping {
    pairs: Vec<(usize, usize)>,
    cost: f64,
}

#[cfg(test)]
mod tests {
    use super::{Diversifier, KuhnMunkres, Mapping};
    use crate::algo::kernel::tree::Rep;
    use crate::forest::shaped;

    /// Pairing a one-child tree with a two-child one suppresses one child row for one member:
    /// its cost, its bounds and a finished cluster's cost all scale with the price.
    #[test]
    fn suppression_costs_scale_with_the_price_and_the_bounds_stay_below() {
        let forest = shaped(&[vec![0], vec![0, 0]]);
        let (a, b) = (
            Rep::from_forest(&forest, 0, 0),
            Rep::from_forest(&forest, 0, 1),
        );
        for mapping in [Mapping::Lsap, Mapping::Grd] {
            for price in [0.5, 1.0, 7.0] {
                let dv = Diversifier::new(&forest, mapping, None, price);
                let cost = dv.cost(&a, &b);
                assert!((cost - price).abs() < 1e-9, "{cost} at price {price}");
                let (x, y) = (dv.profile(&a), dv.profile(&b));
                assert!(dv.cost_bound(&x, &y, f64::INFINITY) <= cost);
                let merged = dv.merge(&a, &b).expect("k-anonymity merges anything");
                let weights = dv.source_weights();
                assert!((dv.cluster_cost(&merged, &weights) - price).abs() < 1e-9);
            }
        }
    }

    use pathfinding::kuhn_munkres::kuhn_munkres_min;
    use pathfinding::matrix::Matrix;
    use rand::{Rng, SeedableRng};

    /// The port picks the same assignment as `pathfinding` on matrices full of ties (costs
    /// 0-3), where any other scan order would pick another optimal one.
    #[test]
    fn kuhn_munkres_port_picks_pathfindings_assignment() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let mut km = KuhnMunkres::default();
        for round in 0..2000 {
            let n = 1 + round % 24;
            let spread = if round % 2 == 0 { 4 } else { 1_000_000 };
            let costs: Vec<i64> = (0..n * n).map(|_| rng.random_range(0..spread)).collect();
            let matrix = Matrix::from_vec(n, n, costs.clone()).expect("n x n");
            let (_, expected) = kuhn_munkres_min(&matrix);
            km.solve_min(n, &costs);
            assert_eq!(km.xy, expected, "round {round}, n = {n}");
        }
    }

    /// After some costs rise, re-solving from the old labels reaches the optimum a solve from
    /// scratch reaches (the least total; the assignment may differ among equal ones), and a
    /// cost that falls instead is caught.
    #[test]
    fn resolving_raised_costs_reaches_the_fresh_optimum() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let (mut warm, mut fresh) = (KuhnMunkres::default(), KuhnMunkres::default());
        for round in 0..1000 {
            let n = 1 + round % 16;
            let spread = if round % 2 == 0 { 5 } else { 1_000_000 };
            let mut costs: Vec<i64> = (0..n * n).map(|_| rng.random_range(0..spread)).collect();
            warm.solve_min(n, &costs);
            for step in 0..4 {
                // Raise the cells the current assignment uses, as the lazy solve does, and
                // some others; in the last step of odd rounds lower one.
                for x in 0..n {
                    if rng.random_bool(0.5) {
                        costs[x * n + warm.xy[x]] += rng.random_range(0..spread);
                    }
                }
                let k = rng.random_range(0..n * n);
                costs[k] += rng.random_range(0..spread);
                if step == 3 && round % 2 == 1 {
                    costs[k] -= rng.random_range(0..=costs[k]);
                }
                warm.resolve_raised(n, &costs);
                fresh.solve_min(n, &costs);
                let mut columns = warm.xy.clone();
                columns.sort_unstable();
                assert_eq!(
                    columns,
                    (0..n).collect::<Vec<_>>(),
                    "round {round}: a permutation"
                );
                assert_eq!(
                    warm.least(n, &costs),
                    fresh.least(n, &costs),
                    "round {round}, step {step}, n = {n}"
                );
            }
        }
    }
}
