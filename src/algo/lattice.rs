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
//!   from the bottom node over the lattice's spanning tree ([`successors`]), each node's
//!   classes rolled up from the node it is reached from. Under LM a node is not climbed past
//!   when a lower bound of its loss already exceeds the best release found: every cell at its
//!   levels, the floor's cells (suppressed at every node) counted 1. The bound only grows
//!   going up, since every cell's loss does.
//!
//! Beyond the seed: 002 negotiates on height; choosing by LM or DM is the Incognito-style
//! optimum (ARX's global recoding) the issue asks for, on the same lattice.

use std::rc::Rc;

use crate::algo::kernel::lattice::{successors, Class, ClassAt, Lattice};
use crate::algo::options::{Default, Kind, OptionSpec};
use crate::algo::{Generalization, Options, Output, Spec};
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

/// A node that meets the budget, with what orders it.
#[derive(Debug, Clone)]
struct Candidate {
    levels: Vec<u16>,
    /// The loss, in units that compare exactly (LM scaled to 1e-12, or DM).
    loss: i128,
    height: u32,
    suppressed: u64,
}

impl Candidate {
    fn key(&self) -> (i128, u32, u64, &[u16]) {
        (self.loss, self.height, self.suppressed, &self.levels)
    }
}

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
            criterion.local_algorithm(),
        ));
    }
    lattice.searchable().map_err(|e| {
        format!(
            "{e}, or use algorithm = '{}' (local recoding)",
            criterion.local_algorithm()
        )
    })?;
    // A lower bound of any node's LM sum: every cell at the node's levels, the floor's
    // entities' cells counted suppressed (1 each) instead.
    let floor_losses = lattice.losses_of(&floor_entities);
    let floor_cells: u64 = floor_entities.iter().map(|&e| lattice.tree_cells(e)).sum();
    let bound = |levels: &[u16]| -> i128 {
        let kept: f64 = floor_losses
            .iter()
            .zip(levels)
            .map(|(l, &v)| l[v as usize])
            .sum();
        let sum = lattice.floor_loss(levels) - kept + floor_cells as f64;
        scaled(sum / lattice.cells.max(1) as f64)
    };
    progress.stage("searching the lattice", lattice.size);
    let bottom = Rc::new(lattice.bottom());
    let mut best: Option<Candidate> = None;
    let mut stack: Vec<(Vec<u16>, Rc<Vec<Class>>)> = vec![(vec![0; top.len()], Rc::clone(&bottom))];
    let mut first = true;
    let mut visited = 0;
    while let Some((levels, from)) = stack.pop() {
        progress.advance(1);
        visited += 1;
        let classes = if first {
            first = false;
            from
        } else {
            Rc::new(lattice.roll_up(&from, &levels))
        };
        let measured = criterion.measure(&lattice, &classes, &levels);
        if let Some(c) = evaluate(&lattice, &measured, &levels, budget, entities, dm) {
            if best.as_ref().is_none_or(|b| c.key() < b.key()) {
                best = Some(c);
            }
        }
        for up in successors(&lattice, &levels).into_iter().rev() {
            // Every cell's loss at `up` (and above) already exceeds the best release's.
            let hopeless = !dm && best.as_ref().is_some_and(|b| bound(&up) > b.loss);
            if !hopeless {
                stack.push((up, Rc::clone(&classes)));
            }
        }
    }
    // The nodes the bound ruled out are decided too: the stage completes.
    progress.advance(lattice.size.saturating_sub(visited));
    let best = best.ok_or_else(|| {
        format!("no node of the lattice meets {criterion} within max_suppression = {share}")
    })?;
    Ok(Output::Generalized(release(
        forest,
        &lattice,
        &best.levels,
        criterion,
    )))
}

/// What a class must reach: k entities, or l distinct values in each of the entity table's
/// sensitive columns.
#[derive(Debug, Clone, Copy)]
enum Criterion {
    K(u32),
    DistinctL(u32),
}

impl std::fmt::Display for Criterion {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Criterion::K(k) => write!(f, "k = {k}"),
            Criterion::DistinctL(l) => write!(f, "l = {l} (distinct)"),
        }
    }
}

impl Criterion {
    fn of(model: &Model) -> Criterion {
        match model.diversity() {
            Some((l, _)) => Criterion::DistinctL(l as u32),
            None => Criterion::K(model.min_group() as u32),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Criterion::K(_) => "k",
            Criterion::DistinctL(_) => "l",
        }
    }

    fn local_algorithm(self) -> &'static str {
        match self {
            Criterion::K(_) => "miraclex",
            Criterion::DistinctL(_) => "clustree",
        }
    }

    fn floor_reason(self) -> String {
        match self {
            Criterion::K(k) => {
                format!("whose tree shapes (rows per table) fewer than {k} others share")
            }
            Criterion::DistinctL(l) => format!(
                "whose classes of tree shapes hold fewer than {l} distinct sensitive values"
            ),
        }
    }

    /// Whether a class meets it.
    fn met(self, c: ClassAt) -> bool {
        match self {
            Criterion::K(k) => c.size >= k,
            Criterion::DistinctL(l) => c.distinct >= l,
        }
    }

    /// The node's classes as (representative, size, met).
    fn measure(
        self,
        lattice: &Lattice,
        classes: &[Class],
        levels: &[u16],
    ) -> Vec<(u32, u32, bool)> {
        match self {
            Criterion::K(k) => classes
                .iter()
                .map(|c| (c.rep, c.size, c.size >= k))
                .collect(),
            // The rolled-up classes carry no sensitive values: count them at the node.
            Criterion::DistinctL(_) => lattice
                .classes_at(levels)
                .1
                .into_iter()
                .map(|c| (c.rep, c.size, self.met(c)))
                .collect(),
        }
    }
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
    Ok(Output::Generalized(release(
        forest, lattice, levels, criterion,
    )))
}

/// LM as an integer of 1e-12 units, so equal losses compare equal whatever the summing order.
fn scaled(lm: f64) -> i128 {
    (lm * 1e12).round() as i128
}

/// The node as a candidate, if it meets the budget and keeps someone.
fn evaluate(
    lattice: &Lattice,
    measured: &[(u32, u32, bool)],
    levels: &[u16],
    budget: u64,
    entities: u64,
    dm: bool,
) -> Option<Candidate> {
    let suppressed: u64 = measured.iter().filter(|c| !c.2).map(|c| c.1 as u64).sum();
    if suppressed > budget || suppressed == entities {
        return None;
    }
    let loss = if dm {
        let kept: u64 = measured
            .iter()
            .filter(|c| c.2)
            .map(|c| c.1 as u64 * c.1 as u64)
            .sum();
        (kept + suppressed * entities) as i128
    } else {
        let mut sum = lattice.floor_loss(levels);
        for &(rep, size, _) in measured.iter().filter(|c| !c.2) {
            let cells = lattice.tree_cells(rep) as f64;
            sum += size as f64 * (cells - lattice.tree_loss(rep, levels));
        }
        scaled(sum / lattice.cells.max(1) as f64)
    };
    Some(Candidate {
        levels: levels.to_vec(),
        loss,
        height: Lattice::height(levels),
        suppressed,
    })
}

/// The release at `levels`: entities of classes meeting the criterion kept whole, every
/// kept cell at its column's level.
fn release(
    forest: &Forest,
    lattice: &Lattice,
    levels: &[u16],
    criterion: Criterion,
) -> Generalization {
    let (class_of, measures) = lattice.classes_at(levels);
    let mut g = Generalization::empty(forest);
    for (t, table) in forest.tables.iter().enumerate() {
        let nqi = table.nqi();
        for (q, &c) in lattice.columns_of(t).iter().enumerate() {
            for r in 0..table.rows() {
                let at = r * nqi + q;
                g.codes[t][at] = lattice.generalize(c, levels[c], table.qi[at]);
            }
        }
    }
    fn keep(forest: &Forest, t: usize, row: u32, g: &mut Generalization) {
        g.kept[t][row as usize] = true;
        for children in &forest.tables[t].children {
            for &c in children.of(row) {
                keep(forest, children.table, c, g);
            }
        }
    }
    for (e, &class) in class_of.iter().enumerate() {
        if criterion.met(measures[class as usize]) {
            keep(forest, 0, e as u32, &mut g);
        } else {
            g.suppressed_entities += 1;
        }
    }
    let mut ec_sizes: Vec<usize> = measures
        .iter()
        .filter(|&&m| criterion.met(m))
        .map(|m| m.size as usize)
        .collect();
    ec_sizes.sort_unstable();
    g.ec_sizes = ec_sizes;
    g.levels = Some(
        lattice
            .columns
            .iter()
            .zip(levels)
            .map(|(c, &l)| (l, c.height))
            .collect(),
    );
    g
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forest::TableNodes;
    use crate::hierarchy::Hierarchy;
    use crate::plan::{HierarchyDef, RawOption};
    use crate::policy::{Pos, Value};

    /// One table whose rows are `values[r][q]` under the hierarchies `defs` (rows of
    /// `leaf, parent, ...`).
    fn forest(defs: &[Vec<Vec<&str>>], values: &[Vec<&str>]) -> Forest {
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
    fn table1() -> Forest {
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
            Ok(Output::Anatomized(_)) => panic!("a generalizing algorithm anatomized"),
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
