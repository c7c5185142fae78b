//! Classification accuracy on a release (004 Sec. 6, Fig. 2-3): classifiers trained on the
//! released rows predict the class of held-out source rows, scored by F-measure.
//!
//! Decisions where the paper is silent (spec Sec. 5, "Reproduction plan"):
//! - a seeded, class-stratified 70/30 split ([`hold_out`]): the release is made from the 70%,
//!   the 30% are tested raw;
//! - a released label is a hierarchy node; a test value *matches* it when the label is the
//!   value or one of its ancestors (so `*` matches everything);
//! - **k-NN** (k = 5, Weka's IBk with the paper's k): the distance is the number of QI columns a
//!   test row does not match; every training row as near as the fifth nearest votes;
//! - **J48 stand-in**: an unpruned decision tree grown by C4.5's gain ratio over the released
//!   labels as nominal values, at least two rows per branch (J48's `minNumObj`); a test row
//!   follows the most specific label it matches. Not Weka's J48 (no pruning, no
//!   confidence-based error estimates): labelled as a stand-in;
//! - on a fragmentation, one classifier per fragment, their class probabilities combined as
//!   the fragments are joined, independent within a class:
//!   `P(c | x) ∝ Π_f P_f(c | x_f) / P(c)^(m-1)`; under `repair = 'delta'` a group's rows are
//!   spread evenly over its class set;
//! - the F-measure is Weka's weighted average: each class's F1 weighted by its test rows.

use std::collections::HashMap;
use std::path::Path;

use anyhow::{Context, Result};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use crate::forest::TableNodes;
use crate::hierarchy::Hierarchy;
use crate::warehouse::{render_value, Warehouse};

/// The k of k-NN (004 Sec. 6: IBk with k = 5).
const NEIGHBOURS: f64 = 5.0;

/// The fewest training rows on each of two branches of a split (J48's `minNumObj`).
const MIN_BRANCH: f64 = 2.0;

/// Held-out source rows: their cells under the source's column names; and how many rows
/// the file kept for training.
pub struct Held {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    pub train: usize,
}

/// Splits the CSV file at `path` (a header line, then rows separated by `delimiter`) 70/30
/// within each value of `class`, seeded: the file keeps the 70% (in source order) and the
/// 30% are returned.
pub fn hold_out(path: &Path, delimiter: char, class: &str, seed: u64) -> Result<Held> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read '{}'", path.display()))?;
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let head = lines.next().context("the table has no header line")?;
    let header: Vec<String> = head
        .split(delimiter)
        .map(|c| c.trim().to_string())
        .collect();
    let at = header
        .iter()
        .position(|c| c == class)
        .with_context(|| format!("the table has no column '{class}'"))?;
    let rows: Vec<&str> = lines.collect();
    let mut by_class: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, line) in rows.iter().enumerate() {
        let value = line
            .split(delimiter)
            .nth(at)
            .unwrap_or("")
            .trim()
            .to_string();
        by_class.entry(value).or_default().push(i);
    }
    let mut groups: Vec<(String, Vec<usize>)> = by_class.into_iter().collect();
    groups.sort();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut test = vec![false; rows.len()];
    for (_, mut members) in groups {
        members.shuffle(&mut rng);
        let held = members.len() - (members.len() * 7).div_ceil(10);
        for &i in &members[..held] {
            test[i] = true;
        }
    }
    let mut train = String::from(head);
    train.push('\n');
    let mut held: Vec<Vec<String>> = Vec::new();
    for (line, &is_test) in rows.iter().zip(&test) {
        if is_test {
            held.push(
                line.split(delimiter)
                    .map(|c| c.trim().to_string())
                    .collect(),
            );
        } else {
            train.push_str(line);
            train.push('\n');
        }
    }
    std::fs::write(path, train).with_context(|| format!("cannot write '{}'", path.display()))?;
    Ok(Held {
        header,
        train: rows.len() - held.len(),
        rows: held,
    })
}

/// What every release of one table is scored against: the QI columns' hierarchies, each
/// test row's matches, and the test rows' classes.
pub struct Ground {
    columns: Vec<String>,
    hierarchies: Vec<Hierarchy>,
    of_label: Vec<HashMap<String, u32>>,
    /// Per test row, per QI column: the codes its value matches (its leaf and ancestors).
    up: Vec<Vec<Vec<u32>>>,
    classes: Vec<String>,
    truth: Vec<usize>,
}

impl Ground {
    /// The QI columns' names, in the source's order.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// `nodes` is the training source's entity table (its hierarchies in QI order,
    /// `columns` their names), `held` the test rows with `class` among their columns.
    pub fn new(
        nodes: &TableNodes,
        columns: Vec<String>,
        held: &Held,
        class: &str,
    ) -> Result<Ground> {
        let of_label: Vec<HashMap<String, u32>> = nodes
            .hierarchies
            .iter()
            .map(|h| {
                (0..h.len() as u32)
                    .filter_map(|c| h.label(c).map(|l| (l.to_string(), c)))
                    .collect()
            })
            .collect();
        let at = |name: &str| held.header.iter().position(|c| c == name);
        let class_at = at(class).with_context(|| format!("the test rows have no '{class}'"))?;
        let mut classes: Vec<String> = held.rows.iter().map(|r| r[class_at].clone()).collect();
        classes.sort();
        classes.dedup();
        let mut up = Vec::with_capacity(held.rows.len());
        let mut truth = Vec::with_capacity(held.rows.len());
        for row in &held.rows {
            let mut cells = Vec::with_capacity(columns.len());
            for (j, name) in columns.iter().enumerate() {
                let h = &nodes.hierarchies[j];
                let value = at(name).map(|i| row[i].as_str()).unwrap_or("");
                cells.push(match of_label[j].get(value) {
                    Some(&leaf) => ancestors(h, leaf),
                    None => vec![h.root()],
                });
            }
            up.push(cells);
            truth.push(classes.binary_search(&row[class_at]).unwrap_or(0));
        }
        Ok(Ground {
            columns,
            hierarchies: nodes.hierarchies.clone(),
            of_label,
            up,
            classes,
            truth,
        })
    }
}

fn ancestors(h: &Hierarchy, leaf: u32) -> Vec<u32> {
    let mut out = vec![leaf];
    let mut at = leaf;
    while h.parent(at) != at {
        at = h.parent(at);
        out.push(at);
    }
    out
}

/// A released table a classifier is trained on: its QI columns and how it publishes the
/// class (a column, or under `delta` a table of each group's class set).
pub struct View {
    pub table: String,
    pub qi_columns: Vec<String>,
    pub class: String,
    pub class_sets: Option<String>,
}

/// A classifier's class probabilities for a test row (its matches per QI column).
type Posterior = dyn Fn(&Trained, &[Vec<u32>]) -> Vec<f64> + Sync;

/// Branches of a split: per label, the groups down it.
type Branches = Vec<(u32, Vec<usize>)>;

/// The F-measures of the two classifiers on one release.
#[derive(Debug, Clone, Copy)]
pub struct Scores {
    pub j48: f64,
    pub knn: f64,
}

/// Trains both classifiers on every view of the release at `release` and scores their
/// combined predictions on the test rows.
pub async fn score(ground: &Ground, release: &Path, views: &[View]) -> Result<Scores> {
    let wh = Warehouse::open(release)
        .await
        .with_context(|| format!("cannot open the release '{}'", release.display()))?;
    let mut trained = Vec::with_capacity(views.len());
    for view in views {
        trained.push(Trained::of(ground, &wh, view).await?);
    }
    let prior = trained.first().map(|t| t.prior()).unwrap_or_default();
    let predict = |each: &Posterior| -> Vec<usize> {
        ground
            .up
            .par_iter()
            .map(|row| {
                let mut p = vec![1.0; ground.classes.len()];
                for (v, t) in trained.iter().enumerate() {
                    for (c, q) in each(t, row).iter().enumerate() {
                        p[c] *= q / if v > 0 { prior[c] } else { 1.0 };
                    }
                }
                argmax(&p)
            })
            .collect()
    };
    let knn = predict(&|t, row| t.knn(row));
    let j48 = predict(&|t, row| t.tree.predict(t, row));
    Ok(Scores {
        j48: f_measure(&ground.truth, &j48, ground.classes.len()),
        knn: f_measure(&ground.truth, &knn, ground.classes.len()),
    })
}

fn argmax(p: &[f64]) -> usize {
    let mut best = 0;
    for (c, &v) in p.iter().enumerate() {
        if v > p[best] {
            best = c;
        }
    }
    best
}

/// Weka's weighted F-measure: each class's F1 weighted by its share of the test rows.
fn f_measure(truth: &[usize], predicted: &[usize], classes: usize) -> f64 {
    let (mut tp, mut fp, mut fnn) = (
        vec![0.0f64; classes],
        vec![0.0f64; classes],
        vec![0.0f64; classes],
    );
    for (&t, &p) in truth.iter().zip(predicted) {
        if t == p {
            tp[t] += 1.0;
        } else {
            fp[p] += 1.0;
            fnn[t] += 1.0;
        }
    }
    let n = truth.len().max(1) as f64;
    (0..classes)
        .map(|c| {
            let support = tp[c] + fnn[c];
            let (precision, recall) = (tp[c] / (tp[c] + fp[c]), tp[c] / support);
            let f = 2.0 * precision * recall / (precision + recall);
            if f.is_finite() {
                f * support / n
            } else {
                0.0
            }
        })
        .sum()
}

/// One view's training rows grouped by their labels (codes per view column), each group
/// with its rows per class, and the tree grown on them.
struct Trained {
    /// Per view column, the ground column it is.
    columns: Vec<usize>,
    groups: Vec<(Vec<u32>, Vec<f64>)>,
    tree: Node,
}

impl Trained {
    async fn of(ground: &Ground, wh: &Warehouse, view: &View) -> Result<Trained> {
        let columns: Vec<usize> = view
            .qi_columns
            .iter()
            .map(|c| {
                ground
                    .columns
                    .iter()
                    .position(|g| g == c)
                    .with_context(|| format!("{c} is no QI column of the source"))
            })
            .collect::<Result<_>>()?;
        let groups = groups(ground, wh, view, &columns).await?;
        let mut trained = Trained {
            columns,
            groups,
            tree: Node::Leaf(Vec::new()),
        };
        let all: Vec<usize> = (0..trained.groups.len()).collect();
        let open: Vec<usize> = (0..trained.columns.len()).collect();
        trained.tree = Node::grow(&trained.groups, &all, &open, ground.classes.len());
        Ok(trained)
    }

    /// The class distribution of the training rows (Laplace-smoothed).
    fn prior(&self) -> Vec<f64> {
        let classes = self.groups.first().map_or(0, |g| g.1.len());
        let mut total = vec![0.0; classes];
        for (_, w) in &self.groups {
            total.iter_mut().zip(w).for_each(|(t, x)| *t += x);
        }
        smoothed(&total)
    }

    /// k-NN: the rows whose distance is at most the fifth nearest's, by class.
    fn knn(&self, row: &[Vec<u32>]) -> Vec<f64> {
        let classes = self.groups.first().map_or(0, |g| g.1.len());
        let mut by_distance = vec![vec![0.0; classes]; self.columns.len() + 1];
        for (labels, weights) in &self.groups {
            let d = labels
                .iter()
                .zip(&self.columns)
                .filter(|(l, &j)| !row[j].contains(l))
                .count();
            by_distance[d]
                .iter_mut()
                .zip(weights)
                .for_each(|(t, x)| *t += x);
        }
        let mut votes = vec![0.0; classes];
        for bucket in by_distance {
            votes.iter_mut().zip(&bucket).for_each(|(t, x)| *t += x);
            if votes.iter().sum::<f64>() >= NEIGHBOURS {
                break;
            }
        }
        smoothed(&votes)
    }
}

fn smoothed(counts: &[f64]) -> Vec<f64> {
    let total: f64 = counts.iter().sum::<f64>() + counts.len() as f64;
    counts.iter().map(|c| (c + 1.0) / total).collect()
}

/// A view's released rows grouped by their labels, with their classes (under `delta`, each
/// group's rows spread evenly over its class set).
async fn groups(
    ground: &Ground,
    wh: &Warehouse,
    view: &View,
    columns: &[usize],
) -> Result<Vec<(Vec<u32>, Vec<f64>)>> {
    let batch = wh
        .read_table(&view.table, None, &[])
        .await
        .with_context(|| format!("cannot read {}", view.table))?;
    let codes = |batch: &arrow::record_batch::RecordBatch, r: usize| -> Result<Vec<u32>> {
        view.qi_columns
            .iter()
            .zip(columns)
            .map(|(name, &j)| {
                let at = batch.schema().index_of(name)?;
                let label = render_value(batch.column(at).as_ref(), r).unwrap_or_default();
                Ok(ground.of_label[j]
                    .get(&label)
                    .copied()
                    .unwrap_or(ground.hierarchies[j].root()))
            })
            .collect()
    };
    let class_of = |batch: &arrow::record_batch::RecordBatch, r: usize| -> Option<usize> {
        let at = batch.schema().index_of(&view.class).ok()?;
        let value = render_value(batch.column(at).as_ref(), r)?;
        ground.classes.binary_search(&value).ok()
    };
    let sets = match &view.class_sets {
        Some(name) => {
            let sets = wh.read_table(name, None, &[]).await?;
            let mut of: HashMap<Vec<u32>, Vec<usize>> = HashMap::new();
            for r in 0..sets.num_rows() {
                if let Some(c) = class_of(&sets, r) {
                    of.entry(codes(&sets, r)?).or_default().push(c);
                }
            }
            Some(of)
        }
        None => None,
    };
    let mut index: HashMap<Vec<u32>, usize> = HashMap::new();
    let mut out: Vec<(Vec<u32>, Vec<f64>)> = Vec::new();
    for r in 0..batch.num_rows() {
        let labels = codes(&batch, r)?;
        let next = out.len();
        let at = *index.entry(labels.clone()).or_insert(next);
        if at == out.len() {
            out.push((labels.clone(), vec![0.0; ground.classes.len()]));
        }
        let weights = &mut out[at].1;
        match &sets {
            Some(of) => {
                let set = of.get(&labels).map_or(&[][..], Vec::as_slice);
                for &c in set {
                    weights[c] += 1.0 / set.len() as f64;
                }
            }
            None => {
                if let Some(c) = class_of(&batch, r) {
                    weights[c] += 1.0;
                }
            }
        }
    }
    Ok(out)
}

/// The J48 stand-in's tree over a view's groups.
enum Node {
    Leaf(Vec<f64>),
    Split {
        /// The view column split on.
        column: usize,
        /// Per label of that column, its subtree.
        children: Vec<(u32, Node)>,
        /// The class distribution here, for a test row that matches no branch.
        here: Vec<f64>,
    },
}

impl Node {
    /// Grows the tree on `members` (indexes of `groups`), splitting on one of the `open`
    /// columns by gain ratio while a split puts at least two rows on two branches.
    fn grow(
        groups: &[(Vec<u32>, Vec<f64>)],
        members: &[usize],
        open: &[usize],
        classes: usize,
    ) -> Node {
        let here = totals(groups, members, classes);
        let Some((column, branches)) = best_split(groups, members, open, &here) else {
            return Node::Leaf(here);
        };
        let rest: Vec<usize> = open.iter().copied().filter(|&c| c != column).collect();
        let children = branches
            .into_iter()
            .map(|(label, sub)| (label, Node::grow(groups, &sub, &rest, classes)))
            .collect();
        Node::Split {
            column,
            children,
            here,
        }
    }

    /// A test row's class probabilities: down the branch of the most specific label it
    /// matches.
    fn predict(&self, t: &Trained, row: &[Vec<u32>]) -> Vec<f64> {
        match self {
            Node::Leaf(d) => smoothed(d),
            Node::Split {
                column,
                children,
                here,
            } => {
                let matches = &row[t.columns[*column]];
                // `matches` runs from the leaf up: the first hit is the most specific.
                let next = matches
                    .iter()
                    .find_map(|m| children.iter().find(|(l, _)| l == m));
                match next {
                    Some((_, child)) => child.predict(t, row),
                    None => smoothed(here),
                }
            }
        }
    }
}

fn totals(groups: &[(Vec<u32>, Vec<f64>)], members: &[usize], classes: usize) -> Vec<f64> {
    let mut out = vec![0.0; classes];
    for &g in members {
        out.iter_mut().zip(&groups[g].1).for_each(|(t, x)| *t += x);
    }
    out
}

fn entropy(d: &[f64]) -> f64 {
    let n: f64 = d.iter().sum();
    if n <= 0.0 {
        return 0.0;
    }
    d.iter()
        .filter(|&&x| x > 0.0)
        .map(|&x| -(x / n) * (x / n).ln())
        .sum()
}

/// C4.5's choice: among the open columns whose split has at least two branches of
/// `MIN_BRANCH` rows and a positive gain, the one of the largest gain ratio.
fn best_split(
    groups: &[(Vec<u32>, Vec<f64>)],
    members: &[usize],
    open: &[usize],
    here: &[f64],
) -> Option<(usize, Branches)> {
    let n: f64 = here.iter().sum();
    let h = entropy(here);
    if h <= 0.0 || n < 2.0 * MIN_BRANCH {
        return None;
    }
    let mut best: Option<(f64, usize, Branches)> = None;
    for &column in open {
        let mut by: Branches = Vec::new();
        for &g in members {
            let label = groups[g].0[column];
            match by.iter_mut().find(|(l, _)| *l == label) {
                Some((_, sub)) => sub.push(g),
                None => by.push((label, vec![g])),
            }
        }
        let weights: Vec<f64> = by
            .iter()
            .map(|(_, sub)| totals(groups, sub, here.len()).iter().sum())
            .collect();
        if weights.iter().filter(|&&w| w >= MIN_BRANCH).count() < 2 {
            continue;
        }
        let after: f64 = by
            .iter()
            .zip(&weights)
            .map(|((_, sub), w)| w / n * entropy(&totals(groups, sub, here.len())))
            .sum();
        let split_info = entropy(&weights);
        let gain = h - after;
        if gain <= 1e-12 || split_info <= 0.0 {
            continue;
        }
        let ratio = gain / split_info;
        if best.as_ref().is_none_or(|(r, _, _)| ratio > *r) {
            best = Some((ratio, column, by));
        }
    }
    best.map(|(_, column, by)| (column, by))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_weighted_f_measure_weights_each_class_by_its_rows() {
        // Class 0: 3 rows, all right; class 1: 1 row, called 0.
        let f = f_measure(&[0, 0, 0, 1], &[0, 0, 0, 0], 2);
        // F1(0) = 2 * 0.75 * 1 / 1.75; F1(1) = 0.
        assert!((f - 0.75 * (1.5 / 1.75)).abs() < 1e-12, "{f}");
    }

    #[test]
    fn a_tree_splits_on_the_column_that_separates_the_classes() {
        // Column 0 tells the class, column 1 does not.
        let groups = vec![
            (vec![1, 5], vec![4.0, 0.0]),
            (vec![2, 5], vec![0.0, 4.0]),
            (vec![1, 6], vec![3.0, 0.0]),
            (vec![2, 6], vec![0.0, 3.0]),
        ];
        let tree = Node::grow(&groups, &[0, 1, 2, 3], &[0, 1], 2);
        let Node::Split {
            column, children, ..
        } = tree
        else {
            panic!("no split");
        };
        assert_eq!(column, 0);
        assert_eq!(children.len(), 2);
    }

    #[test]
    fn a_pure_or_tiny_node_is_a_leaf() {
        let groups = vec![(vec![1], vec![3.0, 0.0]), (vec![2], vec![1.0, 0.0])];
        assert!(matches!(
            Node::grow(&groups, &[0, 1], &[0], 2),
            Node::Leaf(_)
        ));
    }
}
