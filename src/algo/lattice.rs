//! `algorithm = 'lattice'`: full-domain global recoding across every table of the family
//! (002's lattice, the spec's Sec. 3.2 and 4). Every QI column gets one level of its
//! hierarchy for all its cells; whole entities whose class of QI-isomorphic trees is smaller
//! than k are suppressed; the node released is the one of least loss whose suppression stays
//! within `max_suppression` (a share of the entities, at most, so 0 allows none).
//!
//! - Loss: LM with suppression (001 Def. 8 over the family's QI cells, a suppressed cell
//!   counting 1: the report's `lm_with_suppression`, so suppressing cannot look cheap), or DM
//!   (001 Def. 9) with `loss = 'dm'`. Ties go to the lower node, then the one suppressing
//!   fewer entities, then the first level vector (the spec's order O, decision 9).
//! - Search: the top node first. Suppression only shrinks going up (002 Theorem 2), so if
//!   even the top node suppresses more than the budget, no node qualifies: that "shape floor"
//!   of the trees is reported instead of searched for (spec Sec. 4.4 item 5). Then depth first
//!   from the bottom node over the lattice's spanning tree (`kernel::search`), each node's
//!   classes rolled up from the node it is reached from. Under LM a node is not climbed past
//!   when a lower bound of its loss already exceeds the best release found: every cell at its
//!   levels, the floor's cells (suppressed at every node) counted 1. The bound only grows
//!   going up, since every cell's loss does.
//!
//! Beyond the seed: 002 negotiates on height; choosing by LM or DM is the Incognito-style
//! optimum (ARX's global recoding) the issue asks for, on the same lattice.

use crate::algo::kernel::lattice::Lattice;
use crate::algo::kernel::search::{depth_first, release_at, Budget, Criterion};
use crate::algo::options::{Default, Kind, OptionSpec};
use crate::algo::{Options, Output, Spec};
use crate::forest::Forest;
use crate::plan::{Diversity, Model, Plan};
use crate::progress::Progress;

pub static LATTICE: Spec = Spec {
    name: "lattice",
    aliases: &[],
    note: "",
    baseline: false,
    options: OPTIONS,
    serves,
    refuses: sensitive_below_the_entity,
    run,
    unread: crate::algo::spec::reads_every_option,
};

/// k-anonymity, and l-diversity in its distinct form: the frequency form is not monotone
/// over the lattice (002 P8: merging a diverse class with a uniform one can fail), so no
/// node's suppression would bound its parents'.
fn serves(model: &Model) -> Result<(), String> {
    if model.anatomy().is_some() {
        return Err(crate::algo::GENERALIZES.to_string());
    }
    match model.diversity() {
        Some((_, Diversity::Probabilistic)) => Err("serves l-diversity only in its distinct form (diversity = 'distinct'): the frequency form is not monotone over the lattice (generalizing can make a class fail)".to_string()),
        _ => Ok(()),
    }
}

/// Distinct l-diversity is measured on the entity table's sensitive columns: a class's l on
/// a child table's column depends on how its members' rows are matched, which whole-tree
/// classes do not fix.
fn sensitive_below_the_entity(plan: &Plan) -> Option<String> {
    plan.params.model.diversity()?;
    let below = plan.sensitive_below_entity();
    (!below.is_empty()).then(|| {
        format!(
            "algorithm = 'lattice' measures l-diversity on the entity table's sensitive columns only, but {} is sensitive; use algorithm = 'clustree' for sensitive child rows",
            below.join(", ")
        )
    })
}

const OPTIONS: &[OptionSpec] = &[
    OptionSpec {
        name: "max_suppression",
        aliases: &[],
        kind: Kind::Number { min: 0.0, max: 1.0 },
        default: Default::Number(0.0),
        check: None,
        doc: "the share of entities the release may suppress (whole trees), 0 to 1",
    },
    OptionSpec {
        name: "loss",
        aliases: &[],
        kind: Kind::Choice(&[("lm", "lm"), ("dm", "dm")]),
        default: Default::Choice("lm"),
        check: None,
        doc: "what the release minimizes: 'lm' (LM with suppressed cells counting 1) or 'dm'",
    },
    OptionSpec {
        name: "levels",
        aliases: &[],
        kind: Kind::Levels,
        default: Default::Unset,
        check: None,
        doc: "release this node instead of searching: one level per QI column, in plan order (as `relanon negotiate` writes it)",
    },
];

fn run(
    forest: &Forest,
    model: &Model,
    options: &Options,
    progress: &Progress,
) -> Result<Output, String> {
    let lattice = Lattice::new(forest);
    let entities = forest.entities() as u64;
    let share = options.number("max_suppression");
    // A share written in decimal (0.29 of 100) must allow what it says despite binary floats.
    let budget = (share * entities as f64 + 1e-9).floor() as u64;
    let dm = options.choice("loss") == "dm";
    let criterion = Criterion::of(model);
    let top: Vec<u16> = lattice.columns.iter().map(|c| c.height).collect();
    if let Some(levels) = options.levels("levels") {
        return release_node(forest, &lattice, levels, criterion, budget, share);
    }
    // The shape floor: entities every node suppresses (suppression only shrinks going up).
    let (top_class, top_measures) = lattice.classes_at(&top);
    let floor_entities: Vec<u32> = (0..entities as u32)
        .filter(|&e| !criterion.met(top_measures[top_class[e as usize] as usize]))
        .collect();
    let floor = floor_entities.len() as u64;
    if floor > budget || floor == entities {
        return Err(format!(
            "no generalization of the {} QI column(s) meets {criterion} within max_suppression = {share}: even generalizing every column to '*' suppresses {floor} of the {entities} entities ({:.1}%), {}; allow max_suppression >= {}, lower {}, or use an algorithm that suppresses child rows (algorithm = '{}')",
            lattice.columns.len(),
            100.0 * floor as f64 / entities.max(1) as f64,
            criterion.floor_reason(),
            // The least share of four decimals that allows the floor.
            (floor * 10_000).div_ceil(entities.max(1)) as f64 / 10_000.0,
            criterion.name(),
            local_algorithm(criterion),
        ));
    }
    lattice.searchable().map_err(|e| {
        format!(
            "{e}, or use algorithm = '{}' (local recoding)",
            local_algorithm(criterion)
        )
    })?;
    progress.stage("searching the lattice", lattice.size);
    let asked = Budget {
        budget,
        floor_entities: &floor_entities,
        dm,
    };
    let best = depth_first(&lattice, criterion, &asked, progress);
    let best = best.ok_or_else(|| {
        format!("no node of the lattice meets {criterion} within max_suppression = {share}")
    })?;
    Ok(Output::Generalized(release_at(
        forest,
        &lattice,
        &best.levels,
        criterion,
    )))
}

/// `levels = '...'`: the node named, released if it meets the criterion within the budget.
fn release_node(
    forest: &Forest,
    lattice: &Lattice,
    levels: &[u16],
    criterion: Criterion,
    budget: u64,
    share: f64,
) -> Result<Output, String> {
    let heights: Vec<u16> = lattice.columns.iter().map(|c| c.height).collect();
    if levels.len() != heights.len() {
        return Err(format!(
            "levels lists {} level(s), but the family has {} QI column(s): write one level per QI column, in plan order",
            levels.len(),
            heights.len()
        ));
    }
    if let Some((i, (l, h))) = levels
        .iter()
        .zip(&heights)
        .enumerate()
        .find(|(_, (l, h))| l > h)
    {
        return Err(format!(
            "levels gives QI column {} level {l}, above its hierarchy's height {h}",
            i + 1
        ));
    }
    let (class_of, measures) = lattice.classes_at(levels);
    let entities = forest.entities() as u64;
    let suppressed = class_of
        .iter()
        .filter(|&&c| !criterion.met(measures[c as usize]))
        .count() as u64;
    if suppressed > budget || suppressed == entities {
        return Err(format!(
            "the node [{}] suppresses {suppressed} of the {entities} entities at {criterion}, more than max_suppression = {share} allows; allow more suppression or name a higher node",
            levels.iter().map(u16::to_string).collect::<Vec<_>>().join(", ")
        ));
    }
    Ok(Output::Generalized(release_at(
        forest, lattice, levels, criterion,
    )))
}

/// The local recoding to use instead where no node qualifies.
fn local_algorithm(criterion: Criterion) -> &'static str {
    match criterion {
        Criterion::K(_) => "miraclex",
        Criterion::DistinctL(_) => "clustree",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algo::kernel::lattice::fixtures::{forest, table1};
    use crate::algo::kernel::search::scaled;
    use crate::algo::Generalization;
    use crate::plan::RawOption;
    use crate::policy::{Pos, Value};

    fn options(max_suppression: f64, loss: &str) -> Options {
        let raw = [
            RawOption {
                name: "max_suppression".into(),
                value: Value::Number(max_suppression),
                pos: Pos { line: 1, column: 1 },
            },
            RawOption {
                name: "loss".into(),
                value: Value::Text(loss.into()),
                pos: Pos { line: 1, column: 1 },
            },
        ];
        Options::read(OPTIONS, &raw).expect("valid options")
    }

    fn released(f: &Forest, max_suppression: f64, loss: &str, k: usize) -> Generalization {
        let model = Model::KAnonymity { k };
        match run(f, &model, &options(max_suppression, loss), &Progress::new()) {
            Ok(Output::Generalized(g)) => g,
            Ok(_) => panic!("a generalizing algorithm released another kind of output"),
            Err(e) => panic!("{e}"),
        }
    }

    /// The levels a release used, read back from one row's labels.
    fn lm_with_suppression(f: &Forest, g: &Generalization) -> f64 {
        let t = &f.tables[0];
        let mut sum = 0.0;
        for r in 0..t.rows() {
            for (q, h) in t.hierarchies.iter().enumerate() {
                sum += if g.kept[0][r] {
                    h.loss(g.codes[0][r * t.nqi() + q])
                } else {
                    1.0
                };
            }
        }
        sum / (t.rows() * t.nqi()) as f64
    }

    #[test]
    fn table1_has_96_nodes_and_the_spec_answers() {
        let f = table1();
        let lattice = Lattice::new(&f);
        assert_eq!(lattice.size, 96);
        // No suppression: [2,2,4], LM 16.8333 / 27 (the spec's expected answer).
        let g = released(&f, 0.0, "lm", 3);
        assert_eq!(g.suppressed_entities, 0);
        assert_eq!(g.levels, Some(vec![(2, 3), (2, 3), (4, 5)]));
        assert!((lm_with_suppression(&f, &g) - 16.8333 / 27.0).abs() < 1e-4);
        let age = &f.tables[0].hierarchies[0];
        assert_eq!(age.label(g.codes[0][0]), Some("[11-30]"));
        let zip = &f.tables[0].hierarchies[2];
        assert_eq!(zip.label(g.codes[0][2]), Some("4****"));
        // One entity may go (1 of 9): [2,2,3]; three: [1,1,1].
        let g = released(&f, 1.0 / 9.0, "lm", 3);
        assert_eq!(g.suppressed_entities, 1);
        assert!((lm_with_suppression(&f, &g) - 0.5083).abs() < 1e-4);
        let g = released(&f, 3.0 / 9.0, "lm", 3);
        assert_eq!(g.suppressed_entities, 3);
        assert!((lm_with_suppression(&f, &g) - 0.4481).abs() < 1e-4);
        // DM at the least-DM node: 4 * 4 + 5 * 5.
        let g = released(&f, 0.0, "dm", 3);
        let dm: usize = g.ec_sizes.iter().map(|s| s * s).sum::<usize>() + g.suppressed_entities * 9;
        assert_eq!(dm, 41);
    }

    /// Every node by brute force: group the rows by their generalized tuple, suppress groups
    /// below k, and keep the best node in the algorithm's own order; the search (roll-ups and
    /// pruning) must find the same node.
    #[test]
    fn the_search_finds_the_brute_force_optimum() {
        let f = table1();
        let lattice = Lattice::new(&f);
        let t = &f.tables[0];
        for (k, m) in [(2, 0.0), (2, 0.2), (3, 0.0), (3, 0.5), (4, 0.3), (5, 1.0)] {
            let budget = (m * 9.0f64).floor() as u64;
            let mut best: Option<(i128, u32, u64, Vec<u16>)> = None;
            for index in 0..lattice.size {
                let mut levels = Vec::new();
                let mut rest = index;
                for c in &lattice.columns {
                    levels.push((rest % (c.height as usize + 1)) as u16);
                    rest /= c.height as usize + 1;
                }
                let tuples: Vec<Vec<u32>> = (0..t.rows() as u32)
                    .map(|r| {
                        (0..t.nqi())
                            .map(|q| lattice.generalize(q, levels[q], t.codes(r)[q]))
                            .collect()
                    })
                    .collect();
                let count = |x: &Vec<u32>| tuples.iter().filter(|y| *y == x).count();
                let suppressed = tuples.iter().filter(|x| count(x) < k).count() as u64;
                if suppressed > budget || suppressed == 9 {
                    continue;
                }
                let mut sum = 0.0;
                for x in &tuples {
                    sum += if count(x) < k {
                        3.0
                    } else {
                        x.iter()
                            .zip(&t.hierarchies)
                            .map(|(&c, h)| h.loss(c))
                            .sum::<f64>()
                    };
                }
                let key = (
                    scaled(sum / 27.0),
                    Lattice::height(&levels),
                    suppressed,
                    levels,
                );
                if best.as_ref().is_none_or(|b| key < *b) {
                    best = Some(key);
                }
            }
            let (loss, _, suppressed, _) = best.expect("a node qualifies");
            let g = released(&f, m, "lm", k);
            assert_eq!(g.suppressed_entities as u64, suppressed, "k = {k}, m = {m}");
            assert_eq!(
                scaled(lm_with_suppression(&f, &g)),
                loss,
                "k = {k}, m = {m}"
            );
        }
    }

    #[test]
    fn a_budget_below_the_shape_floor_is_refused_with_it() {
        let f = table1();
        // Nine people, k = 10: even '*' everywhere leaves a class of 9.
        let model = Model::KAnonymity { k: 10 };
        let e = run(&f, &model, &options(0.5, "lm"), &Progress::new()).expect_err("refused");
        assert!(e.contains("suppresses 9 of the 9 entities"), "{e}");
    }

    #[test]
    fn a_lattice_too_large_to_search_is_refused_with_its_size() {
        // Nine columns of eleven levels over two rows: 11^9 nodes, 4.7e9 row visits.
        let chain: Vec<Vec<String>> = ["x", "y"]
            .iter()
            .map(|leaf| {
                std::iter::once(leaf.to_string())
                    .chain((1..=9).map(|i| format!("{leaf}{i}")))
                    .collect()
            })
            .collect();
        let chain: Vec<Vec<&str>> = chain
            .iter()
            .map(|r| r.iter().map(String::as_str).collect())
            .collect();
        let defs = vec![chain; 9];
        let values = vec![vec!["x"; 9], vec!["y"; 9]];
        let f = forest(&defs, &values);
        let model = Model::KAnonymity { k: 2 };
        let e = run(&f, &model, &options(1.0, "lm"), &Progress::new()).expect_err("refused");
        assert!(
            e.contains("has 2357947691 nodes (11 x 11 x 11 x 11 x 11 x 11 x 11 x 11 x 11 levels) over 2 family rows"),
            "{e}"
        );
    }
}
