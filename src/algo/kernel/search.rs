//! The search of the full-domain lattice ([`super::lattice`]) that global recoding shares:
//! what a class must reach ([`Criterion`]), a node's loss and suppression under a budget
//! ([`evaluate`]), the depth-first traversal with the LM lower bound ([`depth_first`]), and
//! the release at a node ([`release_at`]). The lattice algorithm runs it once; a hybrid
//! recoding (003) starts from the node it finds.
//!
//! - Loss: LM with suppression (001 Def. 8 over the family's QI cells, a suppressed cell
//!   counting 1), or DM (001 Def. 9). Ties go to the lower node, then the one suppressing
//!   fewer entities, then the first level vector (the spec's order O, decision 9).
//! - Traversal: depth first from the bottom node over the lattice's spanning tree
//!   ([`successors`]), each node's classes rolled up from the node it is reached from. Under
//!   LM a node is not climbed past when a lower bound of its loss already exceeds the best
//!   found: every cell at its levels, the floor's cells (suppressed at every node) counted 1.

use std::rc::Rc;

use super::lattice::{successors, Class, ClassAt, Lattice};
use crate::algo::Generalization;
use crate::forest::Forest;
use crate::plan::Model;
use crate::progress::Progress;

/// What a class must reach: k entities, or l distinct values in each of the entity table's
/// sensitive columns.
#[derive(Debug, Clone, Copy)]
pub enum Criterion {
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
    /// The criterion a model asks of every class.
    pub fn of(model: &Model) -> Criterion {
        match model.diversity() {
            Some((l, _)) => Criterion::DistinctL(l as u32),
            None => Criterion::K(model.min_group() as u32),
        }
    }

    /// The parameter a user lowers to relax it.
    pub fn name(self) -> &'static str {
        match self {
            Criterion::K(_) => "k",
            Criterion::DistinctL(_) => "l",
        }
    }

    /// Why the entities of the shape floor fail it.
    pub fn floor_reason(self) -> String {
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
    pub fn met(self, c: ClassAt) -> bool {
        match self {
            Criterion::K(k) => c.size >= k,
            Criterion::DistinctL(l) => c.distinct >= l,
        }
    }

    /// The node's classes as (representative, size, met).
    pub fn measure(
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

/// A node that meets the budget, with what orders it.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub levels: Vec<u16>,
    /// The loss, in units that compare exactly (LM scaled to 1e-12, or DM).
    pub loss: i128,
    pub height: u32,
    pub suppressed: u64,
}

impl Candidate {
    /// The order of candidates: least loss, then lowest, then fewest suppressed, then
    /// the first level vector (the spec's order O, decision 9).
    pub fn key(&self) -> (i128, u32, u64, &[u16]) {
        (self.loss, self.height, self.suppressed, &self.levels)
    }
}

/// What the traversal is asked: the suppression budget (entities), the entities every node
/// suppresses (the shape floor), and whether DM (not LM) is minimized.
pub struct Budget<'a> {
    pub budget: u64,
    pub floor_entities: &'a [u32],
    pub dm: bool,
}

/// The least-loss node meeting `criterion` within the budget, if any (spec Sec. 4.4): depth
/// first from the bottom, bounded under LM. Counts every node decided into `progress`'s
/// current stage (those the bound ruled out too).
pub fn depth_first(
    lattice: &Lattice,
    criterion: Criterion,
    asked: &Budget<'_>,
    progress: &Progress,
) -> Option<Candidate> {
    let Budget {
        budget,
        floor_entities,
        dm,
    } = *asked;
    let entities = lattice.forest().entities() as u64;
    let top: Vec<u16> = lattice.columns.iter().map(|c| c.height).collect();
    // A lower bound of any node's LM sum: every cell at the node's levels, the floor's
    // entities' cells counted suppressed (1 each) instead.
    let floor_losses = lattice.losses_of(floor_entities);
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
        let measured = criterion.measure(lattice, &classes, &levels);
        if let Some(c) = evaluate(lattice, &measured, &levels, budget, entities, dm) {
            if best.as_ref().is_none_or(|b| c.key() < b.key()) {
                best = Some(c);
            }
        }
        for up in successors(lattice, &levels).into_iter().rev() {
            // Every cell's loss at `up` (and above) already exceeds the best release's.
            let hopeless = !dm && best.as_ref().is_some_and(|b| bound(&up) > b.loss);
            if !hopeless {
                stack.push((up, Rc::clone(&classes)));
            }
        }
    }
    // The nodes the bound ruled out are decided too: the stage completes.
    progress.advance(lattice.size.saturating_sub(visited));
    best
}

/// LM as an integer of 1e-12 units, so equal losses compare equal whatever the summing order.
pub fn scaled(lm: f64) -> i128 {
    (lm * 1e12).round() as i128
}

/// The node as a candidate, if it meets the budget and keeps someone.
pub fn evaluate(
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

/// The release at `levels` (the node found, or named): entities of classes meeting the criterion kept whole, every
/// kept cell at its column's level.
pub fn release_at(
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
    g.levels = Some(lattice.released_levels(levels));
    g
}
