//! Unit tests of the single-table baselines (001 Sec. III) on hand-built one-table forests.

use super::*;
use crate::forest::Children;
use crate::plan::Model;
use crate::progress::Snapshot;

/// Students (no QI) -> courses (QI `course`: Math, Physics, CS, History, Religion under `*`),
/// 001 Table II's enrolments: S1 {Math, Physics, History}, S2 {CS, Physics, Religion},
/// S3 {History, Religion, Physics}, S4 {History, Religion}.
fn table2_like() -> Forest {
    let courses = Hierarchy::flat(
        "course_h",
        &["Math", "Physics", "CS", "History", "Religion"],
    );
    let (math, physics, cs, history, religion) = (1, 2, 3, 4, 5);
    let enrolments: [&[u32]; 4] = [
        &[math, physics, history],
        &[cs, physics, religion],
        &[history, religion, physics],
        &[history, religion],
    ];
    let mut qi = Vec::new();
    let mut parent = Vec::new();
    let mut offsets = vec![0u32];
    for (s, list) in enrolments.iter().enumerate() {
        qi.extend_from_slice(list);
        parent.extend(std::iter::repeat_n(s as u32, list.len()));
        offsets.push(qi.len() as u32);
    }
    let rows: Vec<u32> = (0..qi.len() as u32).collect();
    let students = nodes("students", Vec::new(), Vec::new(), vec![u32::MAX; 4]);
    let mut students = students;
    students.children = vec![Children {
        table: 1,
        offsets,
        rows,
    }];
    let mut courses_nodes = nodes("courses", vec![courses], qi, parent);
    courses_nodes.children = Vec::new();
    Forest {
        tables: vec![students, courses_nodes],
    }
}

fn nodes(name: &str, hierarchies: Vec<Hierarchy>, qi: Vec<u32>, parent: Vec<u32>) -> TableNodes {
    TableNodes::bare(name, hierarchies, qi, parent)
}

fn params(k: usize) -> CdghParams {
    CdghParams {
        k,
        threshold: 1.0,
        climit: 150,
    }
}

/// The registry's entry for `name`.
fn registered(name: &str) -> &'static crate::algo::Spec {
    crate::algo::ALGORITHMS
        .iter()
        .copied()
        .find(|s| s.name == name)
        .expect("a registered algorithm")
}

/// Runs a registered algorithm as `configure` would set it up, with threshold = 1 and
/// max_suppression = 1 where the algorithm reads them.
fn run(forest: &Forest, spec: &crate::algo::Spec, k: usize, progress: &Progress) -> Generalization {
    let written: Vec<_> = spec
        .options
        .iter()
        .filter(|o| o.name == "threshold" || o.name == "max_suppression")
        .map(|o| crate::plan::RawOption {
            name: o.name.to_string(),
            value: crate::policy::Value::Number(1.0),
            pos: crate::policy::Pos::default(),
        })
        .collect();
    let options = Options::read(spec.options, &written).expect("1 is valid for both");
    match (spec.run)(forest, &Model::KAnonymity { k }, &options, progress) {
        Ok(Output::Generalized(g)) => g,
        Ok(_) => panic!("a generalizing algorithm released another kind of output"),
        Err(e) => panic!("{} releases this forest: {e}", spec.name),
    }
}

/// Published course codes per student, sorted.
fn published(forest: &Forest, g: &Generalization) -> Vec<Vec<u32>> {
    let courses = &forest.tables[0].children[0];
    (0..4)
        .map(|s| {
            let mut v: Vec<u32> = courses
                .of(s)
                .iter()
                .filter(|&&c| g.kept[1][c as usize])
                .map(|&c| g.row(forest, 1, c)[0])
                .collect();
            v.sort_unstable();
            v
        })
        .collect()
}

#[test]
fn universal_keeps_the_shape_that_singles_s1_out() {
    let forest = table2_like();
    let g = universal(&forest, params(2), &Progress::new());
    // 11 tuples: 5 pairs of 2 and the last tuple suppressed (001 Alg. 2 line 22).
    let kept_courses = g.kept[1].iter().filter(|&&k| k).count();
    assert_eq!(kept_courses, 10);
    // Every student is published (each has a surviving tuple) and shows its own number of
    // courses: the structure a universal relation leaves intact.
    assert!(g.kept[0].iter().all(|&k| k));
    let shapes: Vec<usize> = published(&forest, &g).iter().map(Vec::len).collect();
    assert_eq!(shapes.iter().sum::<usize>(), 10);
    // A single-table view of the students (no QI) is one class of all four.
    assert_eq!(g.ec_sizes, vec![4]);
    assert_eq!(g.suppressed_entities, 0);
}

#[test]
fn universal_writes_back_the_common_ancestor_of_a_rows_versions() {
    let forest = table2_like();
    let g = universal(&forest, params(2), &Progress::new());
    let h = &forest.tables[1].hierarchies[0];
    // Each published course is its own value or an ancestor of it.
    for c in 0..forest.tables[1].rows() as u32 {
        if g.kept[1][c as usize] {
            let source = forest.tables[1].codes(c)[0];
            let released = g.row(&forest, 1, c)[0];
            assert_eq!(h.lca(source, released), released, "row {c}");
        }
    }
}

#[test]
fn per_table_publishes_a_table_without_qis_whole_and_drops_orphaned_children() {
    let forest = table2_like();
    let g = per_table(&forest, params(2), &Progress::new());
    assert!(
        g.kept[0].iter().all(|&k| k),
        "students have no QI: one class"
    );
    assert_eq!(g.kept[1].iter().filter(|&&k| k).count(), 10);
    // With k = 4 the students (no QI) still all survive; a suppressed student would take
    // its courses along.
    let mut g = per_table(&forest, params(4), &Progress::new());
    g.kept[0][0] = false;
    g.close_under_parents(&forest);
    assert!(forest.tables[0].children[0]
        .of(0)
        .iter()
        .all(|&c| !g.kept[1][c as usize]));
}

#[test]
fn bitmap_classes_publish_identical_trees() {
    let forest = table2_like();
    for complete in [false, true] {
        let g = bitmap(&forest, params(2), complete, &Progress::new());
        assert_eq!(g.ec_sizes.iter().sum::<usize>() + g.suppressed_entities, 4);
        let pubs = published(&forest, &g);
        // Within a class of two, both members show the same courses (no generalization:
        // a path is kept only if both have it).
        let mut classes: Vec<Vec<u32>> = pubs.clone();
        classes.sort();
        classes.dedup();
        for c in &classes {
            let members = pubs.iter().filter(|p| *p == c).count();
            assert!(members >= 2, "complete={complete}: {pubs:?}");
        }
        // Published course cells are never generalized.
        for c in 0..forest.tables[1].rows() as u32 {
            if g.kept[1][c as usize] {
                assert_eq!(g.row(&forest, 1, c), forest.tables[1].codes(c));
            }
        }
    }
}

#[test]
fn bitmap_publishes_a_repeated_path_once() {
    // Two students who both took Math twice: the bit says "took Math", one row each.
    let h = Hierarchy::flat("course_h", &["Math"]);
    let mut students = nodes("students", Vec::new(), Vec::new(), vec![u32::MAX; 2]);
    students.children = vec![Children {
        table: 1,
        offsets: vec![0, 2, 4],
        rows: vec![0, 1, 2, 3],
    }];
    let courses = nodes("courses", vec![h], vec![1, 1, 1, 1], vec![0, 0, 1, 1]);
    let forest = Forest {
        tables: vec![students, courses],
    };
    let g = bitmap(&forest, params(2), true, &Progress::new());
    assert_eq!(g.kept[1], vec![true, false, true, false]);
    assert_eq!(g.ec_sizes, vec![2]);
}

// Progress of the registered algorithms on the same forest.

#[test]
fn miracle_counts_every_entity_it_visits() {
    let forest = table2_like();
    let progress = Progress::new();
    // k = 4: the four students make one class, so visiting them is the only stage.
    let g = run(&forest, registered("miracle"), 4, &progress);
    assert_eq!(g.ec_sizes, vec![4]);
    let expected = Snapshot {
        label: "clustering".to_string(),
        done: forest.entities() as u64,
        total: forest.entities() as u64,
    };
    assert_eq!(progress.snapshot(), expected);
}

#[test]
fn clustree_counts_the_seeds_of_its_first_pass() {
    let forest = table2_like();
    let progress = Progress::new();
    // Two classes of two; the first two cluster costs are never outliers, so one pass.
    run(&forest, registered("clustree"), 2, &progress);
    let expected = Snapshot {
        label: "pass 1 (chi 0.00; 0 of 4 placed)".to_string(),
        done: 4,
        total: 4,
    };
    assert_eq!(progress.snapshot(), expected);
}

#[test]
fn every_algorithm_completes_its_last_stage() {
    let forest = table2_like();
    for spec in crate::algo::ALGORITHMS
        .iter()
        // One-table algorithms refuse this family (its trees have child tables); fragment
        // needs a class the entity table here has not (its own tests run it).
        .filter(|s| {
            !s.note.contains("one table")
                && s.name != "fragment"
                && (s.serves)(&Model::KAnonymity { k: 3 }).is_ok()
        })
    {
        let algorithm = spec.name;
        let progress = Progress::new();
        run(&forest, spec, 3, &progress);
        let s = progress.snapshot();
        assert!(!s.label.is_empty(), "{algorithm:?}: no stage");
        assert!(s.total > 0 && s.done == s.total, "{algorithm:?}: {s:?}");
    }
}
