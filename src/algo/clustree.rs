//! l-diverse clustering of whole records: 000 Alg. 4 (CreateCluster) and Alg. 5 (ClusTree);
//! CToff is Alg. 5 with chi = infinity from the start (000 Sec. 2.4).

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Mutex;

use crate::algo::kernel::ahead;
use crate::algo::kernel::diversify::{self, Diversifier, Mapping, Profile};
use crate::algo::kernel::relocate;
use crate::algo::kernel::shape;
use crate::algo::kernel::tree::Clustering;
use crate::algo::kernel::tree::Rep;
use crate::algo::options::{Default, Kind, OptionSpec, Options};
use crate::algo::{self, Generalization, Output, Spec};
use crate::forest::Forest;
use crate::plan::Model;
use crate::progress::Progress;

pub static CLUSTREE: Spec = Spec::plain("clustree", OPTIONS, algo::any_model, run_clustree);

/// Alg. 5 with chi = infinity from the start: every cluster CreateCluster builds is kept.
pub static CTOFF: Spec = Spec::plain("ctoff", OPTIONS, algo::any_model, run_ctoff);

/// The options of ClusTree and CToff.
const OPTIONS: &[OptionSpec] = &[
    OptionSpec {
        name: "mapping",
        aliases: &[],
        kind: Kind::Choice(&[("lsap", "lsap"), ("grd", "grd"), ("greedy", "grd")]),
        default: Default::Choice("lsap"),
        check: None,
        doc: "how sibling subtrees are paired: 'lsap' (000 Alg. 3, optimal) or 'grd' (Alg. 2, greedy)",
    },
    OptionSpec {
        name: "m",
        aliases: &[],
        kind: Kind::Number { min: 0.0, max: 1e6 },
        default: Default::Number(4.0),
        check: None,
        doc: "the largest finite outlier multiplier chi (Alg. 5 line 26)",
    },
    OptionSpec {
        name: "s",
        aliases: &[],
        kind: Kind::Number { min: 0.0, max: 1e6 },
        default: Default::Number(0.5),
        check: Some(step_above_zero),
        doc: "the step chi grows by per pass (Alg. 5 line 25)",
    },
    OptionSpec {
        name: "candidates",
        aliases: &[],
        kind: Kind::Count { min: 1.0, max: 1e9 },
        default: Default::Unset,
        check: None,
        doc: "blocking: CreateCluster weighs only this many remaining records nearest the seed (default: all, as Alg. 4 does)",
    },
    shape::PRICE,
    shape::ORDER,
    relocate::RELOCATE,
];

fn step_above_zero(s: f64) -> Result<(), String> {
    if s > 0.0 {
        Ok(())
    } else {
        Err("s must be above 0 (it is the step chi grows by)".to_string())
    }
}

fn run_clustree(
    forest: &Forest,
    model: &Model,
    options: &Options,
    progress: &Progress,
) -> Result<Output, String> {
    run(forest, model, options, false, progress)
}

fn run_ctoff(
    forest: &Forest,
    model: &Model,
    options: &Options,
    progress: &Progress,
) -> Result<Output, String> {
    run(forest, model, options, true, progress)
}

/// Alg. 5 over the whole forest, seeds in the order `order` asks for, groups of l (or k), the
/// diversity rule of an l-diversity model on every matched vertex.
fn run(
    forest: &Forest,
    model: &Model,
    options: &Options,
    ctoff: bool,
    progress: &Progress,
) -> Result<Output, String> {
    relocate::serves(model, options)?;
    // Shape acts through blocking: an exact search already weighs every remaining entity's
    // tree, and seeding it by shape kept fewer rows at a higher loss on the sales and skew
    // fixtures, so without `candidates` the seeds stay in key order.
    let candidates = options.optional_count("candidates");
    let by_shape = shape::aware(forest, options) && candidates.is_some();
    let order = shape::entities(forest, by_shape);
    let size = model.min_group();
    let rule = model.diversity().map(|(l, diversity)| diversify::Rule {
        l,
        diversity,
        target: size,
    });
    let mapping = match options.choice("mapping") {
        "grd" => Mapping::Grd,
        _ => Mapping::Lsap,
    };
    let dv = Diversifier::new(forest, mapping, rule, shape::price(options));
    let params = ClustreeParams {
        size,
        m: options.number("m"),
        s: options.number("s"),
        ctoff,
        search: Search::Pruned,
        candidates,
        threads: rayon::current_num_threads(),
        by_shape,
    };
    let mut clustering = cluster(forest, &dv, &order, params, progress);
    let moved = relocate::apply(forest, &mut clustering, options);
    Ok(Output::Generalized(Generalization::relocated(
        forest,
        &clustering,
        moved,
    )))
}

/// Parameters of Alg. 5.
#[derive(Debug, Clone, Copy)]
pub struct ClustreeParams {
    /// Records per cluster: l (or k when ClusTree serves k-anonymity).
    pub size: usize,
    /// Largest finite outlier multiplier (line 26).
    pub m: f64,
    /// Step of chi per pass (line 25).
    pub s: f64,
    /// CToff: accept every cluster (chi = infinity at line 3).
    pub ctoff: bool,
    /// How line 5 of Alg. 4 finds the cheapest candidate.
    pub search: Search,
    /// Candidate blocking: CreateCluster weighs only the this many remaining records nearest
    /// the seed in [`blocking_order`] instead of all of F. `None` (the default) is Alg. 4 as
    /// written; a number trades utility for time on warehouses where O(n^2) is too much.
    pub candidates: Option<usize>,
    /// Threads running CreateClusters (the caller's among them); the clusters are the same
    /// for any number.
    pub threads: usize,
    /// Blocking ranks records as `order = 'shape'` visits them ([`shape::by_shape`]: tree
    /// shape first, then root QIs), rather than by root QIs first.
    pub by_shape: bool,
}

/// How CreateCluster finds the candidate of least cost (000 Alg. 4 line 5). All return the
/// same record every time; `Plain` is kept as the reference the others are tested against,
/// `Bounded` as the reference for ClusTree's memory across passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Search {
    /// Diversify every candidate with the representative.
    Plain,
    /// Skip candidates whose [`Diversifier::cost_bound`] exceeds the best cost found.
    Bounded,
    /// `Bounded`, and (ClusTree) remember each seed's candidates and clusters across passes.
    Pruned,
}

/// Running mean and standard deviation of accepted cluster costs (Welford's online update,
/// which 000 Sec. 2.3.4 cites so that lines 14-15 cost O(1)). The deviation is the population
/// one: the clusters in R are all there is, not a sample.
#[derive(Debug, Default, Clone, Copy)]
struct Welford {
    n: usize,
    mean: f64,
    m2: f64,
}

impl Welford {
    fn push(&mut self, x: f64) {
        self.n += 1;
        let d = x - self.mean;
        self.mean += d / self.n as f64;
        self.m2 += d * (x - self.mean);
    }

    fn sd(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            (self.m2 / self.n as f64).sqrt()
        }
    }
}

/// 000 Alg. 5 over the entities in `order` (the order F is scanned in).
///
/// Decisions: a pass scans the records that were in F when it started, in `order`; a rejected
/// cluster's records go back to F and are seeds again in the next pass. When CreateCluster
/// cannot complete a cluster (no remaining record can join it diversely) the seed waits for a
/// later pass; in the final pass (chi = infinity) it is suppressed whole, like the fewer than l
/// records left at the end (lines 6-8).
///
/// Seeds are taken in order, but their CreateClusters are computed ahead on `p.threads`
/// threads ([`ahead::in_order`]) against the F of the moment, and each is checked at its turn
/// ([`Attempt::holds`]): one whose pool and members the clusters accepted since have not
/// touched is the very cluster CreateCluster would build now, and any other is built again
/// (from the seed's memory, so mostly from what the first try learned).
///
/// Progress: one stage per pass, named by its number, chi and the entities placed before it,
/// counting the pass's seeds as they are tried. Seeds, not placed entities, because a pass at
/// a low chi can reject most clusters: counting placements would stand still while CreateCluster
/// (the cost of a pass) runs once per seed.
pub fn cluster(
    forest: &Forest,
    dv: &Diversifier,
    order: &[u32],
    p: ClustreeParams,
    progress: &Progress,
) -> Clustering {
    let size = p.size.max(1);
    let trees: Vec<Rep> = (0..forest.entities() as u32)
        .map(|e| Rep::from_forest(forest, 0, e))
        .collect();
    let in_f: Vec<AtomicBool> = (0..trees.len()).map(|_| AtomicBool::new(false)).collect();
    for &e in order {
        in_f[e as usize].store(true, Ordering::Relaxed);
    }
    let mut remaining = order.len();
    let profiles: Vec<Profile> = trees.iter().map(|t| dv.profile(t)).collect();
    let ctx = Context::new(forest, dv, &trees, &profiles, order, p);
    let blocking = p
        .candidates
        .map(|_| Blocking::new(forest, order, p.by_shape));
    // Seeds come back only when chi is finite (a rejected cluster), so CToff keeps a seed's
    // memory only until its turn (for a CreateCluster built again there).
    let memo = (p.search == Search::Pruned).then(Memo::default);
    let keep_memory = !p.ctoff;
    let shared = Shared {
        ctx: &ctx,
        in_f: &in_f,
        blocking: blocking.as_ref(),
        memo: memo.as_ref(),
    };
    let mut ecs: Vec<Rep> = Vec::new();
    let mut suppressed: Vec<u32> = Vec::new();
    let mut costs = Welford::default();
    // Line 3 (CToff: infinity from the start).
    let mut chi = if p.ctoff { f64::INFINITY } else { 0.0 };
    let mut number = 0;
    loop {
        number += 1;
        let pass: Vec<u32> = order.iter().copied().filter(|&e| shared.live(e)).collect();
        let placed = order.len() - remaining;
        let label = format!(
            "pass {number} (chi {chi:.2}; {placed} of {} placed)",
            order.len()
        );
        progress.stage(&label, pass.len());
        let work = |i: usize| {
            let a = pass[i];
            shared.live(a).then(|| shared.attempt(a, shared.memory(a)))
        };
        let window = AHEAD * p.threads.max(1);
        let finished = ahead::in_order(pass.len(), p.threads, window, work, |tried, ahead| {
            progress.advance(1);
            let a = pass[tried];
            let Some(ahead) = ahead.filter(|_| shared.live(a)) else {
                return ControlFlow::Continue(());
            };
            // Lines 6-8.
            if remaining < size {
                suppressed.extend(order.iter().copied().filter(|&e| shared.live(e)));
                // The seeds left in this pass are among them.
                progress.advance(pass.len() - tried - 1);
                return ControlFlow::Break(());
            }
            let mut attempt = if ahead.holds(&shared) {
                ahead
            } else {
                shared.attempt(a, ahead.memory)
            };
            let Some(cost) = attempt.cost else {
                if chi.is_infinite() {
                    shared.leave(a);
                    remaining -= 1;
                    suppressed.push(a);
                } else {
                    shared.remember(a, attempt.memory.take().filter(|_| keep_memory));
                }
                return ControlFlow::Continue(());
            };
            // Lines 10-22.
            let outlier = chi.is_finite() && costs.n > 1 && cost > costs.mean + costs.sd() * chi;
            if outlier {
                shared.remember(a, attempt.memory.take().filter(|_| keep_memory));
                return ControlFlow::Continue(());
            }
            let c = attempt.rep.into_rep();
            for &e in &c.members {
                shared.leave(e);
            }
            remaining -= c.member_count();
            costs.push(cost);
            ecs.push(c);
            ControlFlow::Continue(())
        });
        // Lines 23-24 (and 6-8).
        if finished.is_some() || remaining == 0 {
            return Clustering { ecs, suppressed };
        }
        if let Some(memo) = &memo {
            memo.forget_stale(&in_f);
        }
        // Lines 25-27.
        chi += p.s;
        if chi >= p.m {
            chi = f64::INFINITY;
        }
    }
}

/// How many seeds per thread CreateCluster may run ahead of the one whose turn it is: more
/// keeps the threads busy through uneven seeds, fewer builds fewer clusters that an earlier
/// seed's cluster then spoils. On TPC-H SF 0.01 with 2 threads, 1, 2, 4, 8 and 16 per
/// thread had 3%, 13%, 22%, 27-29% and 27-29% of CToff's clusters built again; 8 kept the
/// process 163-180% busy where 2 kept it 140-150%.
const AHEAD: usize = 8;

/// The state of a run that every thread reads: the context, F, the blocking order and the
/// seeds' memory. Only the calling thread removes records from F (and from the blocking
/// order); the threads running ahead may read either before or after such a removal.
struct Shared<'s, 'a> {
    ctx: &'s Context<'a>,
    in_f: &'s [AtomicBool],
    blocking: Option<&'s Blocking>,
    memo: Option<&'s Memo>,
}

impl<'s, 'a> Shared<'s, 'a> {
    fn live(&self, e: u32) -> bool {
        live(self.in_f, e)
    }

    /// 000 Alg. 4 for seed `a` against F as it is now, and (when complete) the cluster's cost.
    fn attempt(&self, a: u32, mut memory: Option<Remembered>) -> Attempt<'s, 'a> {
        let ctx = self.ctx;
        let pool = candidate_pool(ctx, self.blocking, self.in_f, a);
        let mut rep = Lazy::new(ctx, a);
        let complete = create_cluster(ctx, &pool, self.in_f, &mut rep, memory.as_mut());
        let cost = complete.then(|| {
            if let Some(cost) = memory.as_ref().and_then(|m| m.cluster_cost(&rep.taken)) {
                return cost;
            }
            let cost = ctx.dv.cluster_cost(rep.get(), &ctx.source_weights);
            if let Some(m) = memory.as_mut() {
                m.remember_cluster(&rep.taken, cost);
            }
            cost
        });
        Attempt {
            pool: if self.blocking.is_some() {
                pool
            } else {
                Vec::new()
            },
            rep,
            cost,
            memory,
        }
    }

    /// What seed `a` remembers from earlier passes (taken out while its CreateCluster runs).
    fn memory(&self, a: u32) -> Option<Remembered> {
        self.memo.map(|m| m.take(a))
    }

    fn remember(&self, a: u32, memory: Option<Remembered>) {
        if let (Some(m), Some(memory)) = (self.memo, memory) {
            m.put(a, memory);
        }
    }

    /// Removes `e` from F (and from what the search structures know of F).
    fn leave(&self, e: u32) {
        self.in_f[e as usize].store(false, Ordering::Relaxed);
        if let Some(b) = self.blocking {
            b.remove(e);
        }
        if let Some(m) = self.memo {
            // A record that left F is never a seed again.
            m.take(e);
        }
    }
}

/// One seed's CreateCluster as computed against the F of some moment.
struct Attempt<'s, 'a> {
    /// The pool it searched (kept under blocking only, where the pool is a window of F).
    pool: Vec<(u32, u32)>,
    rep: Lazy<'s, 'a>,
    /// Lines 10-12: the cluster's cost; `None` when CreateCluster could not complete it.
    cost: Option<f64>,
    memory: Option<Remembered>,
}

impl Attempt<'_, '_> {
    /// Whether CreateCluster against F as it is now would build this very cluster. Records
    /// only leave F during a pass, so F now is a subset of the F this attempt saw. Each step
    /// took the cheapest candidate of the pool still in F; if every record taken is still in
    /// F, each was also the cheapest of the smaller set, and a step that found no candidate
    /// finds none among fewer. Without blocking the pool is F, so that is all; with blocking
    /// the pool is a window of F that a departure shifts, so it must also be the same window.
    fn holds(&self, shared: &Shared) -> bool {
        self.rep.taken.iter().all(|&e| shared.live(e))
            && shared.blocking.is_none_or(|b| {
                candidate_pool(shared.ctx, Some(b), shared.in_f, self.rep.taken[0]) == self.pool
            })
    }
}

fn live(in_f: &[AtomicBool], e: u32) -> bool {
    in_f[e as usize].load(Ordering::Relaxed)
}

/// What every CreateCluster of one run shares.
struct Context<'a> {
    dv: &'a Diversifier<'a>,
    trees: &'a [Rep],
    /// The trees' profiles for [`Diversifier::cost_bound`].
    profiles: &'a [Profile<'a>],
    order: &'a [u32],
    /// Position of each entity in `order` (ties go to the earliest).
    position: Vec<u32>,
    source_weights: Vec<f64>,
    size: usize,
    search: Search,
    candidates: Option<usize>,
}

impl<'a> Context<'a> {
    fn new(
        forest: &Forest,
        dv: &'a Diversifier<'a>,
        trees: &'a [Rep],
        profiles: &'a [Profile<'a>],
        order: &'a [u32],
        p: ClustreeParams,
    ) -> Self {
        let mut position = vec![u32::MAX; forest.entities()];
        for (i, &e) in order.iter().enumerate() {
            position[e as usize] = i as u32;
        }
        Context {
            dv,
            trees,
            profiles,
            order,
            position,
            source_weights: dv.source_weights(),
            size: p.size.max(1),
            search: p.search,
            candidates: p.candidates,
        }
    }
}

/// The records seed `a` may recruit, as (position in `order`, entity) in `order`: all of F
/// but `a`, or with blocking its nearest remaining neighbours.
fn candidate_pool(
    ctx: &Context,
    blocking: Option<&Blocking>,
    in_f: &[AtomicBool],
    a: u32,
) -> Vec<(u32, u32)> {
    match (blocking, ctx.candidates) {
        (Some(b), Some(n)) => {
            let mut pool: Vec<(u32, u32)> = b
                .neighbours(a, n)
                .into_iter()
                .map(|e| (ctx.position[e as usize], e))
                .collect();
            pool.sort_unstable();
            pool
        }
        _ => ctx
            .order
            .iter()
            .enumerate()
            .filter(|&(_, &e)| live(in_f, e) && e != a)
            .map(|(i, &e)| (i as u32, e))
            .collect(),
    }
}

/// The representative of a cluster being built (000 Alg. 4 lines 3 and 8), merged only when
/// something reads it: a seed that comes back in a later pass often finds every step and its
/// cluster cost remembered, and then needs no diversify at all.
struct Lazy<'c, 'a> {
    ctx: &'c Context<'a>,
    /// The seed, then the recruits in the order taken.
    taken: Vec<u32>,
    /// The first `merged` records of `taken` merged in order, once asked for.
    rep: Option<Rep>,
    merged: usize,
}

impl<'c, 'a> Lazy<'c, 'a> {
    fn new(ctx: &'c Context<'a>, a: u32) -> Self {
        Lazy {
            ctx,
            taken: vec![a],
            rep: None,
            merged: 0,
        }
    }

    /// The representative of every record taken so far.
    fn get(&mut self) -> &Rep {
        let trees = self.ctx.trees;
        let rep = self
            .rep
            .get_or_insert_with(|| trees[self.taken[0] as usize].clone());
        self.merged = self.merged.max(1);
        while self.merged < self.taken.len() {
            // Line 8: the representative absorbs T_b (its members after the cluster's).
            *rep = self
                .ctx
                .dv
                .merge(rep, &trees[self.taken[self.merged] as usize])
                .expect("a candidate whose root is diverse with the representative merges");
            self.merged += 1;
        }
        rep
    }

    fn into_rep(mut self) -> Rep {
        self.get();
        self.rep.expect("get just built the representative")
    }
}

/// 000 Alg. 4: a cluster seeded by `rep`'s seed that recruits, `size - 1` times, the record of
/// `pool` still in F whose diversify with the representative costs least (line 5; ties go to
/// the earliest in `order`), skipping records whose root cannot be diverse with it. False if
/// it runs out of such records. F itself is not changed: the caller removes the members if it
/// keeps the cluster.
fn create_cluster(
    ctx: &Context,
    pool: &[(u32, u32)],
    in_f: &[AtomicBool],
    rep: &mut Lazy,
    mut memory: Option<&mut Remembered>,
) -> bool {
    // The runners-up of the previous step: likely cheap again, so their costs make a good
    // first limit for the bounds of the next step.
    let mut probe: Vec<u32> = Vec::new();
    for _ in 1..ctx.size {
        let b = match ctx.search {
            Search::Plain => {
                let taken = rep.taken.clone();
                cheapest_plain(ctx, rep.get(), pool, &taken)
            }
            Search::Bounded | Search::Pruned => {
                let mut own: Vec<Entry>;
                let entries = match memory.as_deref_mut() {
                    Some(m) => m.entries(ctx, pool, in_f, rep, &probe),
                    None => {
                        let taken = rep.taken.clone();
                        own = fresh_entries(ctx, rep.get(), pool, &taken, &probe, f64::INFINITY);
                        &mut own
                    }
                };
                let b = cheapest_pruned(ctx, rep, entries, in_f);
                probe = entries
                    .iter()
                    .filter(|x| live(in_f, x.e) && Some(x.e) != b)
                    .take(PROBE)
                    .map(|x| x.e)
                    .collect();
                b
            }
        };
        let Some(b) = b else {
            return false;
        };
        rep.taken.push(b);
    }
    true
}

/// Line 5 as written: diversify every candidate of the pool with the representative.
fn cheapest_plain(ctx: &Context, rep: &Rep, pool: &[(u32, u32)], taken: &[u32]) -> Option<u32> {
    let best = pool
        .iter()
        .filter(|(_, e)| !taken.contains(e))
        .filter(|(_, e)| ctx.dv.diverse(rep, &ctx.trees[*e as usize]))
        .map(|&(pos, e)| (ctx.dv.cost(rep, &ctx.trees[e as usize]), pos, e))
        .reduce(|x, y| if (y.0, y.1) < (x.0, x.1) { y } else { x });
    best.map(|(_, _, e)| e)
}

/// Relative slack between a bound and a cost: bounds and costs add the same terms in other
/// orders, so they may differ by rounding (about 1e-16 per term); a candidate is skipped only
/// when its bound exceeds the best cost by more than this.
const SLACK: f64 = 1e-9;

/// The highest key a candidate may have and still tie with a cost of `best`.
fn reach(best: f64) -> f64 {
    best + SLACK * (1.0 + best.abs())
}

/// One candidate of a CreateCluster step: its exact cost, or a lower bound on it.
#[derive(Debug, Clone, Copy)]
struct Entry {
    key: f64,
    pos: u32,
    e: u32,
    exact: bool,
}

/// Entries in the order the search reads them: by key, then position in `order`.
fn sort_entries(entries: &mut [Entry]) {
    // `partial_cmp`, not `total_cmp`: -0.0 and 0.0 tie, as in the plain search.
    entries.sort_unstable_by(|x, y| {
        x.key
            .partial_cmp(&y.key)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(x.pos.cmp(&y.pos))
    });
}

/// Every candidate of the pool whose root is diverse with the representative, each with its
/// exact cost or, when its bound already exceeds a cost found (or `limit`, a cost some
/// candidate outside the pool is known to reach), that bound.
fn fresh_entries(
    ctx: &Context,
    rep: &Rep,
    pool: &[(u32, u32)],
    taken: &[u32],
    probe: &[u32],
    limit: f64,
) -> Vec<Entry> {
    let profile = ctx.dv.profile(rep);
    let quick = ctx.dv.quick(&profile);
    let diverse = |e: u32| !taken.contains(&e) && ctx.dv.diverse(rep, &ctx.trees[e as usize]);
    let entry = |pos: u32, e: u32, key: f64| Entry {
        key,
        pos,
        e,
        exact: false,
    };
    // The probes first, diversified whatever their bound (they set the limit), then every
    // other diverse candidate with its quick bound, cheapest first: once the limit is set by
    // a good cost, the rest of the list is skipped without further work.
    let probes: Vec<Entry> = probe
        .iter()
        .filter(|&&e| diverse(e))
        .map(|&e| entry(ctx.position[e as usize], e, 0.0))
        .collect();
    let mut quick_bounds: Vec<Entry> = pool
        .iter()
        .filter(|&&(_, e)| !probe.contains(&e) && diverse(e))
        .map(|&(pos, e)| {
            let candidate = &ctx.profiles[e as usize];
            entry(pos, e, ctx.dv.quick_bound(&quick, &profile, candidate))
        })
        .collect();
    sort_entries(&mut quick_bounds);
    let mut best = limit.max(0.0);
    let mut entries = Vec::with_capacity(probes.len() + quick_bounds.len());
    for (x, probe) in probes
        .into_iter()
        .map(|x| (x, true))
        .chain(quick_bounds.into_iter().map(|x| (x, false)))
    {
        let limit = if probe { f64::INFINITY } else { reach(best) };
        if x.key > limit {
            entries.push(x);
            continue;
        }
        let candidate = &ctx.profiles[x.e as usize];
        let (cost, exact) = ctx.dv.cost_within(&profile, candidate, limit);
        if exact {
            best = best.min(cost.max(0.0));
        }
        entries.push(Entry {
            key: cost,
            exact,
            ..x
        });
    }
    sort_entries(&mut entries);
    entries
}

/// How many runners-up of one step are diversified first in the next.
const PROBE: usize = 4;

/// The candidate still in F of least (cost, position): the first exact entry in F, once every
/// entry in F whose bound is within reach of its cost has been made exact (cheapest bound
/// first, so that a cost found early lowers the reach of the rest). Entries are made exact in
/// place, so a later pass starts from what this one learned.
fn cheapest_pruned(
    ctx: &Context,
    rep: &mut Lazy,
    entries: &mut [Entry],
    in_f: &[AtomicBool],
) -> Option<u32> {
    loop {
        let mut in_f_entries = entries.iter_mut().filter(|x| live(in_f, x.e));
        let first = in_f_entries.next()?;
        if first.exact {
            // Every entry after it is a bound at least its cost, or exact and dearer.
            let limit = reach(first.key);
            let first = first.e;
            let Some(open) = in_f_entries.find(|x| !x.exact && x.key <= limit) else {
                return Some(first);
            };
            // The entry holds a bound already: diversify it outright.
            open.key = ctx.dv.cost(rep.get(), &ctx.trees[open.e as usize]);
            open.exact = true;
        } else {
            first.key = ctx.dv.cost(rep.get(), &ctx.trees[first.e as usize]);
            first.exact = true;
        }
        sort_entries(entries);
    }
}

/// ClusTree's memory across passes, per seed: per taken prefix (seed first, then recruits in
/// order) the entries of the step that prefix starts, and the cost of each finished cluster
/// (000 Alg. 5 lines 10-12). Exact because a step's costs and bounds depend only on the
/// prefix (the representative is the prefix merged in order) and the candidate: an entry
/// stays true for as long as its candidate is in the pool, so a step only needs entries for
/// the candidates new to the pool, and the cheapest candidate still in F is found among them
/// as it would be among fresh ones.
///
/// Without blocking the pool is F, which only shrinks. With blocking it is the seed's nearest
/// records still in F; a record in that window stays in it until it leaves F (the window is a
/// prefix of F after the seed and one of F before it, each at least as long as before), so
/// the remembered entries stay in the pool and a later pass bounds only the records that
/// moved in. The entries are checked against the pool all the same, so the search stays exact
/// whatever the window does. For the same reason a CreateCluster computed ahead of its turn,
/// against a larger F, leaves entries that are just as true.
#[derive(Default)]
struct Memo {
    /// Taken out by the thread running a seed's CreateCluster and put back after.
    seeds: Mutex<HashMap<u32, Remembered>>,
}

#[derive(Default)]
struct Remembered {
    steps: Vec<Step>,
    /// Recruits of a finished cluster, in order, and its cost.
    clusters: Vec<(Vec<u32>, f64)>,
}

struct Step {
    /// The prefix after the seed.
    recruits: Vec<u32>,
    entries: Vec<Entry>,
    /// Positions in `order` of the pool the entries cover, ascending; `None` when the pool
    /// was all of F (no blocking), which only shrinks.
    known: Option<Vec<u32>>,
}

impl Memo {
    fn seeds(&self) -> std::sync::MutexGuard<'_, HashMap<u32, Remembered>> {
        // Every update of the map is a single insert or remove: a panic elsewhere while it
        // was held leaves it consistent.
        self.seeds.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What seed `a` remembers (nothing yet: empty), no longer in the memo.
    fn take(&self, a: u32) -> Remembered {
        self.seeds().remove(&a).unwrap_or_default()
    }

    fn put(&self, a: u32, memory: Remembered) {
        self.seeds().insert(a, memory);
    }

    /// Seeds no longer in F, and prefixes and clusters with a member that left F, can never
    /// be taken again.
    fn forget_stale(&self, in_f: &[AtomicBool]) {
        let live_all = |recruits: &[u32]| recruits.iter().all(|&e| live(in_f, e));
        let mut seeds = self.seeds();
        seeds.retain(|&a, _| live(in_f, a));
        for seed in seeds.values_mut() {
            seed.steps.retain(|s| live_all(&s.recruits));
            seed.clusters.retain(|(recruits, _)| live_all(recruits));
        }
    }
}

impl Remembered {
    /// The entries of the step `rep`'s prefix starts, brought up to date with `pool`: entries
    /// of records no longer in F or in the pool are dropped, records new to the pool get
    /// entries (bounded against the best cost remembered).
    fn entries(
        &mut self,
        ctx: &Context,
        pool: &[(u32, u32)],
        in_f: &[AtomicBool],
        rep: &mut Lazy,
        probe: &[u32],
    ) -> &mut Vec<Entry> {
        let blocked = ctx.candidates.is_some();
        let positions = || blocked.then(|| pool.iter().map(|&(pos, _)| pos).collect());
        let recruits = rep.taken[1..].to_vec();
        let Some(i) = self.steps.iter().position(|s| s.recruits == recruits) else {
            let taken = rep.taken.clone();
            let entries = fresh_entries(ctx, rep.get(), pool, &taken, probe, f64::INFINITY);
            self.steps.push(Step {
                recruits,
                entries,
                known: positions(),
            });
            let last = self.steps.len() - 1;
            return &mut self.steps[last].entries;
        };
        let step = &mut self.steps[i];
        let Some(known) = step.known.as_mut() else {
            step.entries.retain(|x| live(in_f, x.e));
            return &mut step.entries;
        };
        // Both lists ascend by position.
        let in_pool = |pos: u32| pool.binary_search_by_key(&pos, |&(p, _)| p).is_ok();
        step.entries.retain(|x| live(in_f, x.e) && in_pool(x.pos));
        let new: Vec<(u32, u32)> = pool
            .iter()
            .copied()
            .filter(|&(pos, _)| known.binary_search(&pos).is_err())
            .collect();
        if !new.is_empty() {
            // Any cost remembered for a record still in the pool is reached by the winner.
            let limit = step
                .entries
                .iter()
                .find(|x| x.exact)
                .map_or(f64::INFINITY, |x| x.key);
            let taken = rep.taken.clone();
            let fresh = fresh_entries(ctx, rep.get(), &new, &taken, &[], limit);
            step.entries.extend(fresh);
            sort_entries(&mut step.entries);
            *known = pool.iter().map(|&(pos, _)| pos).collect();
        }
        &mut step.entries
    }

    fn cluster_cost(&self, taken: &[u32]) -> Option<f64> {
        self.clusters
            .iter()
            .find(|(recruits, _)| recruits == &taken[1..])
            .map(|&(_, cost)| cost)
    }

    fn remember_cluster(&mut self, taken: &[u32], cost: f64) {
        self.clusters.push((taken[1..].to_vec(), cost));
    }
}

/// Candidate blocking: the entities sorted so that likely cheap partners are near each other
/// (by the root's QI codes, then the number of children per child table, then the number of
/// vertices, then position), with a linked list over that order of the records still in F.
/// One thread removes records while others walk the list: a removed record keeps its links,
/// so a walk that reached it goes on in the same direction, and its ranks only ever move
/// away from the seed.
struct Blocking {
    /// Rank of each entity in the sorted order (`NONE` once removed); `by_rank` is its inverse.
    rank: Vec<AtomicU32>,
    by_rank: Vec<u32>,
    /// Neighbouring ranks still in F (`NONE`: none).
    prev: Vec<AtomicU32>,
    next: Vec<AtomicU32>,
}

const NONE: u32 = u32::MAX;

impl Blocking {
    fn new(forest: &Forest, order: &[u32], by_shape: bool) -> Self {
        let t = &forest.tables[0];
        let by_rank: Vec<u32> = if by_shape {
            let mut in_order = vec![false; forest.entities()];
            for &e in order {
                in_order[e as usize] = true;
            }
            shape::by_shape(forest)
                .into_iter()
                .filter(|&e| in_order[e as usize])
                .collect()
        } else {
            let key = |e: u32| {
                let shape: Vec<usize> = t.children.iter().map(|c| c.of(e).len()).collect();
                let vertices = Rep::from_forest(forest, 0, e).nodes();
                (t.codes(e).to_vec(), shape, vertices)
            };
            let mut keyed: Vec<_> = order
                .iter()
                .enumerate()
                .map(|(pos, &e)| (key(e), pos, e))
                .collect();
            keyed.sort();
            keyed.into_iter().map(|(_, _, e)| e).collect()
        };
        let mut rank = vec![NONE; forest.entities()];
        for (r, &e) in by_rank.iter().enumerate() {
            rank[e as usize] = r as u32;
        }
        let n = by_rank.len() as u32;
        let atomic = |v: u32| AtomicU32::new(v);
        Blocking {
            rank: rank.into_iter().map(atomic).collect(),
            by_rank,
            prev: (0..n)
                .map(|r| atomic(r.checked_sub(1).unwrap_or(NONE)))
                .collect(),
            next: (0..n)
                .map(|r| atomic(if r + 1 < n { r + 1 } else { NONE }))
                .collect(),
        }
    }

    /// Unlinks `e`; called by one thread only.
    fn remove(&self, e: u32) {
        let r = self.rank[e as usize].swap(NONE, Ordering::Relaxed);
        if r == NONE {
            return;
        }
        let p = self.prev[r as usize].load(Ordering::Relaxed);
        let n = self.next[r as usize].load(Ordering::Relaxed);
        if p != NONE {
            self.next[p as usize].store(n, Ordering::Relaxed);
        }
        if n != NONE {
            self.prev[n as usize].store(p, Ordering::Relaxed);
        }
    }

    /// Up to `n` records still in F nearest `a` in the blocking order, alternately after and
    /// before it.
    fn neighbours(&self, a: u32, n: usize) -> Vec<u32> {
        let link = |links: &[AtomicU32], r: u32| links[r as usize].load(Ordering::Relaxed);
        let r = self.rank[a as usize].load(Ordering::Relaxed);
        let mut out = Vec::with_capacity(n);
        if r == NONE {
            return out;
        }
        let (mut up, mut down) = (link(&self.next, r), link(&self.prev, r));
        while out.len() < n && (up != NONE || down != NONE) {
            if up != NONE {
                out.push(self.by_rank[up as usize]);
                up = link(&self.next, up);
            }
            if out.len() < n && down != NONE {
                out.push(self.by_rank[down as usize]);
                down = link(&self.prev, down);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::Welford;

    #[test]
    fn welford_matches_the_two_pass_formula() {
        let xs = [3.0, 7.0, 7.0, 19.0, 24.0];
        let mut w = Welford::default();
        for x in xs {
            w.push(x);
        }
        let mean = xs.iter().sum::<f64>() / 5.0;
        let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / 5.0;
        assert!((w.mean - mean).abs() < 1e-12);
        assert!((w.sd() - var.sqrt()).abs() < 1e-12);
    }
}
