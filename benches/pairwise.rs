//! Hot paths of MiRaCle / MiRaCleX on the 001 Sec. V university: the pairwise distance of two
//! entity trees (001 Alg. 3-5), the representative merge, and a whole CDGH clustering.

use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion};
use relanon::algo::kernel::cdgh::{cluster, CdghParams};
use relanon::algo::kernel::pairwise::{Pairwise, Siblings};
use relanon::algo::kernel::tree::Rep;
use relanon::forest::Forest;
use relanon::progress::Progress;

/// The generated university (students, seed 42) loaded as a forest through the real pipeline.
fn university(students: usize) -> Forest {
    relanon::pipeline::generated_forest(
        &relanon::generate::university(students, 42),
        Path::new("sql/university.sql"),
    )
    .expect("the generated university loads")
}

fn benches(c: &mut Criterion) {
    let forest = university(300);
    let a = Rep::from_forest(&forest, 0, 0);
    let b = Rep::from_forest(&forest, 0, 1);
    for (name, siblings) in [
        ("miracle", Siblings::BySubtree),
        ("miraclex", Siblings::ByNode),
    ] {
        let pw = Pairwise::new(&forest, siblings, 1.0);
        c.bench_function(&format!("{name}/distance"), |bench| {
            bench.iter(|| pw.distance(&a, &b))
        });
        c.bench_function(&format!("{name}/merge"), |bench| {
            bench.iter(|| pw.merge(&a, &b))
        });
    }
    let mut group = c.benchmark_group("cdgh");
    group.sample_size(10);
    let order: Vec<u32> = (0..forest.entities() as u32).collect();
    let params = CdghParams {
        k: 10,
        threshold: 0.3,
        climit: 150,
    };
    let pw = Pairwise::new(&forest, Siblings::ByNode, 1.0);
    let progress = Progress::new();
    group.bench_function("miraclex/300 students k=10", |bench| {
        bench.iter(|| cluster(&forest, &pw, &order, params, &progress))
    });
    group.finish();
}

criterion_group!(pairwise, benches);
criterion_main!(pairwise);
