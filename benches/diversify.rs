//! Hot paths of ClusTree / CToff on syntheticS (000 Sec. 2.4): diversify's cost of two entity
//! trees under each FindMapping (000 Alg. 1-3), the merge, the lower bounds CreateCluster
//! prunes by, one CreateCluster step's candidate scan (000 Alg. 4 line 5) and a whole CToff
//! clustering, plain and pruned.

use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion};
use relanon::algo::clustree::{cluster, ClustreeParams, Search};
use relanon::algo::kernel::diversify::{Diversifier, Mapping, Rule};
use relanon::algo::kernel::tree::Rep;
use relanon::forest::Forest;
use relanon::plan::Diversity;
use relanon::progress::Progress;

/// syntheticS (`students` students, seed 42) loaded as a forest through the real pipeline.
fn synthetic_s(students: usize) -> Forest {
    relanon::pipeline::generated_forest(
        &relanon::generate::synthetic(students, 42, false),
        Path::new("sql/synthetic_s.sql"),
    )
    .expect("the generated syntheticS loads")
}

const RULE: Rule = Rule {
    l: 3,
    diversity: Diversity::Probabilistic,
    target: 3,
};

fn benches(c: &mut Criterion) {
    let forest = synthetic_s(300);
    let trees: Vec<Rep> = (0..forest.entities() as u32)
        .map(|e| Rep::from_forest(&forest, 0, e))
        .collect();
    // A seed and the first candidate its root can be diverse with.
    let probe = Diversifier::new(&forest, Mapping::Lsap, Some(RULE), 1.0);
    let a = &trees[0];
    let b = trees[1..]
        .iter()
        .find(|b| probe.diverse(a, b))
        .expect("some student is diverse with the first");
    for (name, mapping) in [("lsap", Mapping::Lsap), ("grd", Mapping::Grd)] {
        let dv = Diversifier::new(&forest, mapping, Some(RULE), 1.0);
        c.bench_function(&format!("diversify/{name}/cost"), |bench| {
            bench.iter(|| dv.cost(a, b))
        });
        c.bench_function(&format!("diversify/{name}/merge"), |bench| {
            bench.iter(|| dv.merge(a, b))
        });
    }
    let dv = Diversifier::new(&forest, Mapping::Lsap, Some(RULE), 1.0);
    let (x, y) = (dv.profile(a), dv.profile(b));
    let quick = dv.quick(&x);
    c.bench_function("bound/cost_bound", |bench| {
        bench.iter(|| dv.cost_bound(&x, &y, f64::INFINITY))
    });
    c.bench_function("bound/quick_bound", |bench| {
        bench.iter(|| dv.quick_bound(&quick, &x, &y))
    });
    // One CreateCluster step as written: every diverse candidate's cost, the least kept.
    let mut group = c.benchmark_group("create_cluster");
    group.sample_size(10);
    group.bench_function("plain step, 300 students, lsap", |bench| {
        bench.iter(|| {
            trees[1..]
                .iter()
                .enumerate()
                .filter(|(_, t)| dv.diverse(a, t))
                .map(|(i, t)| (dv.cost(a, t), i))
                .min_by(|p, q| p.partial_cmp(q).expect("costs are numbers"))
        })
    });
    let small = synthetic_s(100);
    let dv = Diversifier::new(&small, Mapping::Lsap, Some(RULE), 1.0);
    let order: Vec<u32> = (0..small.entities() as u32).collect();
    let progress = Progress::new();
    for (name, search) in [("plain", Search::Plain), ("pruned", Search::Pruned)] {
        let params = ClustreeParams {
            size: 3,
            m: 4.0,
            s: 0.5,
            ctoff: true,
            search,
            candidates: None,
            threads: 1,
            by_shape: false,
        };
        group.bench_function(format!("ctoff/100 students l=3 {name}"), |bench| {
            bench.iter(|| cluster(&small, &dv, &order, params, &progress))
        });
    }
    group.finish();
}

criterion_group!(diversify, benches);
criterion_main!(diversify);
