//! ClusTree / CToff's pruned, memoized CreateCluster (the default) against the plain search
//! of 000 Alg. 4 line 5 on a small syntheticS: the very same clusters (members of every EC in
//! order, the suppressed set), for ClusTree and CToff, LSAP and GRD, l = 2 and 3, at
//! suppression prices 0.5, 1 and 4; and
//! ClusTree's memory across passes under candidate blocking against the blocked search alone.

use relanon::algo::clustree::{cluster, ClustreeParams, Search};
use relanon::algo::kernel::diversify::{Diversifier, Mapping, Rule};
use relanon::algo::kernel::tree::Rep;
use relanon::forest::Forest;
use relanon::plan::Diversity;
use relanon::progress::Progress;

use crate::common::root;

/// syntheticS with `students` students (seed 42) loaded through the real pipeline.
fn synthetic_s(students: usize) -> Forest {
    relanon::pipeline::generated_forest(
        &relanon::generate::synthetic(students, 42, false),
        &root().join("sql/synthetic_s.sql"),
    )
    .expect("the generated syntheticS loads")
}

/// Members of every node of a representative, depth first.
fn nodes(rep: &Rep, out: &mut Vec<Vec<u32>>) {
    out.push(rep.members.clone());
    for c in &rep.children {
        nodes(c, out);
    }
}

/// Every EC as (members of every node, depth first), then the suppressed entities, of
/// ClusTree (or CToff) at l with m = 4, s = 0.5 over the entities in key order, on `threads`
/// threads. The reference searches run on one thread, the pruned one on three, so that every
/// comparison also covers CreateClusters computed ahead of their turn.
#[allow(clippy::too_many_arguments)] // one knob each: every test turns a different one
fn clusters(
    forest: &Forest,
    mapping: Mapping,
    l: usize,
    ctoff: bool,
    search: Search,
    candidates: Option<usize>,
    threads: usize,
    price: f64,
) -> (Vec<Vec<Vec<u32>>>, Vec<u32>) {
    let rule = Rule {
        l,
        diversity: Diversity::Probabilistic,
        target: l,
    };
    let dv = Diversifier::new(forest, mapping, Some(rule), price);
    let order: Vec<u32> = (0..forest.entities() as u32).collect();
    let params = ClustreeParams {
        size: l,
        m: 4.0,
        s: 0.5,
        ctoff,
        search,
        candidates,
        threads,
        by_shape: false,
    };
    let c = cluster(forest, &dv, &order, params, &Progress::new());
    let ecs = c
        .ecs
        .iter()
        .map(|rep| {
            let mut out = Vec::new();
            nodes(rep, &mut out);
            out
        })
        .collect();
    (ecs, c.suppressed)
}

#[test]
fn pruned_search_finds_the_plain_clusters() {
    let forest = synthetic_s(70);
    for mapping in [Mapping::Lsap, Mapping::Grd] {
        for l in [2, 3] {
            // Any suppression price: the bounds read the priced suppression costs.
            for (ctoff, price) in [(false, 1.0), (true, 1.0), (false, 4.0), (true, 0.5)] {
                let plain = clusters(&forest, mapping, l, ctoff, Search::Plain, None, 1, price);
                let pruned = clusters(&forest, mapping, l, ctoff, Search::Pruned, None, 3, price);
                let what = format!("{mapping:?} l = {l} ctoff = {ctoff} price = {price}");
                assert!(plain.0.len() * l >= 40, "{what}: too few ECs to compare");
                assert_eq!(
                    plain, pruned,
                    "{what}: the pruned search changed the clusters"
                );
            }
        }
    }
}

/// Seeds' CreateClusters computed ahead of their turn on 1 to 4 threads: the very clusters of
/// one thread taking the seeds in turn, with and without blocking (under which a departure
/// shifts a seed's window) and for CToff (every cluster kept, so the most built again).
#[test]
fn running_ahead_finds_the_clusters_of_one_thread() {
    let forest = synthetic_s(80);
    for ctoff in [false, true] {
        for candidates in [None, Some(5)] {
            let run = |threads| {
                let (mapping, search) = (Mapping::Lsap, Search::Pruned);
                clusters(&forest, mapping, 3, ctoff, search, candidates, threads, 1.0)
            };
            let one = run(1);
            assert!(one.0.len() * 3 >= 60, "too few ECs to compare");
            for threads in [2, 4] {
                assert_eq!(
                    one,
                    run(threads),
                    "ctoff = {ctoff} candidates = {candidates:?}: {threads} threads changed the clusters"
                );
            }
        }
    }
}

#[test]
fn blocking_with_room_for_everyone_is_the_exact_search() {
    let forest = synthetic_s(40);
    let plain = clusters(
        &forest,
        Mapping::Lsap,
        3,
        false,
        Search::Plain,
        None,
        1,
        1.0,
    );
    let everyone = Some(forest.entities());
    let blocked = clusters(
        &forest,
        Mapping::Lsap,
        3,
        false,
        Search::Pruned,
        everyone,
        3,
        1.0,
    );
    let roots = |ecs: &[Vec<Vec<u32>>]| ecs.iter().map(|ec| ec[0].clone()).collect::<Vec<_>>();
    assert_eq!(roots(&plain.0), roots(&blocked.0));
    assert_eq!(plain.1, blocked.1);
}

/// ClusTree's memory across passes under candidate blocking (every step's entries and every
/// cluster's cost, per seed) against the same blocked search that forgets them: the very same
/// clusters and suppressed set, for windows small enough that later passes see records move in.
#[test]
fn remembering_under_blocking_finds_the_forgetful_clusters() {
    let forest = synthetic_s(90);
    for mapping in [Mapping::Lsap, Mapping::Grd] {
        for candidates in [4, 12] {
            let run = |search, threads| {
                clusters(
                    &forest,
                    mapping,
                    3,
                    false,
                    search,
                    Some(candidates),
                    threads,
                    1.0,
                )
            };
            let forgetful = run(Search::Bounded, 1);
            let remembering = run(Search::Pruned, 3);
            let what = format!("{mapping:?} candidates = {candidates}");
            assert!(
                forgetful.0.len() * 3 >= 60,
                "{what}: too few ECs to compare"
            );
            assert_eq!(
                forgetful, remembering,
                "{what}: remembering changed the clusters"
            );
        }
    }
}

#[test]
fn cost_bound_never_exceeds_the_cost_and_leads_to_it() {
    let forest = synthetic_s(30);
    let trees: Vec<Rep> = (0..forest.entities() as u32)
        .map(|e| Rep::from_forest(&forest, 0, e))
        .collect();
    for mapping in [Mapping::Lsap, Mapping::Grd] {
        let rule = Rule {
            l: 3,
            diversity: Diversity::Probabilistic,
            target: 3,
        };
        // At a price other than 1 the bounds must stay below the priced costs too.
        let price = if mapping == Mapping::Lsap { 1.0 } else { 3.0 };
        let dv = Diversifier::new(&forest, mapping, Some(rule), price);
        let (mut checked, mut tight, mut lazy) = (0, 0, 0);
        for (i, a) in trees.iter().enumerate() {
            // Single trees, and a two-member representative as in the second recruitment.
            let merged = trees
                .iter()
                .skip(i + 1)
                .find_map(|b| dv.merge(a, b))
                .unwrap_or_else(|| a.clone());
            for rep in [a, &merged] {
                for b in &trees {
                    if !dv.diverse(rep, b) {
                        continue;
                    }
                    let (x, y) = (dv.profile(rep), dv.profile(b));
                    let (bound, cost) = (dv.cost_bound(&x, &y, f64::INFINITY), dv.cost(rep, b));
                    assert!(
                        bound <= cost + 1e-9,
                        "{mapping:?}: bound {bound} > cost {cost}"
                    );
                    // The cost found from the bounds is the cost, to the bit; below the
                    // bound, only the bound.
                    let within = dv.cost_within(&x, &y, f64::INFINITY);
                    assert_eq!(within, (cost, true), "{mapping:?}");
                    let limit = bound * 0.99 - 1e-6;
                    let (key, exact) = dv.cost_within(&x, &y, limit);
                    assert!(exact || key > limit, "{mapping:?}: {key} <= {limit}");
                    assert!(!exact || key == cost, "{mapping:?}: {key} != {cost}");
                    lazy += usize::from(
                        rep.children.len().min(b.children.len()) > 0
                            && rep.children.len().max(b.children.len()) > 4,
                    );
                    let quick = dv.quick_bound(&dv.quick(&x), &x, &y);
                    assert!(
                        quick <= cost + 1e-9,
                        "{mapping:?}: quick {quick} > cost {cost}"
                    );
                    tight += usize::from(quick > 0.5 * cost);
                    checked += 1;
                }
            }
        }
        assert!(checked > 500, "only {checked} pairs were diverse");
        // Sibling lists longer than exhaustive search takes: the lazy assignment ran.
        assert!(
            lazy * 2 > checked,
            "only {lazy} of {checked} pairs had long lists"
        );
        // A bound that is always 0 would pass the first check. (At a dearer price suppression
        // weighs more of each cost, and the bound, which relaxes the matching, less of it.)
        assert!(
            price != 1.0 || tight * 2 > checked,
            "quick bound above half the cost on {tight} of {checked}"
        );
    }
}
