//! dMiRaCle, MiRaCle's l-diversity extension as 000 Sec. 2.4 describes it: k-anonymize first
//! (001 Alg. 2 with MiRaCle's subtree matching and k = l), then make each equivalence class
//! l-diverse by further generalization or suppression.
//!
//! Decisions (000 gives no pseudocode): an EC whose root vertex group is not l-diverse is
//! merged with its nearest other EC (001's distance), which generalizes further, until its
//! root is diverse; if no EC is left to merge with, it is suppressed whole. Then every vertex
//! group below the root that is not l-diverse is suppressed in all members (with its subtree).

use std::collections::VecDeque;

use crate::algo::kernel::cdgh::{self, CdghParams};
use crate::algo::kernel::diversify::Rule;
use crate::algo::kernel::pairwise::{Pairwise, Siblings};
use crate::algo::kernel::tree::Clustering;
use crate::algo::kernel::tree::Rep;
use crate::algo::{Generalization, Options, Output, Spec, GENERALIZES};
use crate::forest::Forest;
use crate::plan::{Diversity, Model};
use crate::progress::Progress;

pub static DMIRACLE: Spec = Spec::plain("dmiracle", cdgh::OPTIONS, l_diversity_only, run);

fn l_diversity_only(model: &Model) -> Result<(), String> {
    match model {
        Model::LDiversity { .. } => Ok(()),
        Model::Anatomy { .. } => Err(GENERALIZES.to_string()),
        Model::KAnonymity { .. } => Err(
            "is MiRaCle's l-diversity extension; write model = 'l-diversity', l = ...".to_string(),
        ),
    }
}

/// CDGH at k = l over MiRaCle's subtree matching, then the classes made diverse.
fn run(
    forest: &Forest,
    model: &Model,
    options: &Options,
    progress: &Progress,
) -> Result<Output, String> {
    let order: Vec<u32> = (0..forest.entities() as u32).collect();
    let pw = Pairwise::new(forest, Siblings::BySubtree, 1.0);
    let size = model.min_group();
    let (l, diversity) = model
        .diversity()
        .unwrap_or((size, Diversity::Probabilistic));
    let params = CdghParams::from_options(size, options);
    let clustering = cluster(forest, &pw, &order, params, l, diversity, progress);
    Ok(Output::Generalized(Generalization::from_clustering(
        forest,
        &clustering,
    )))
}

/// Progress: CDGH's stages, then stage "diversifying classes" counting the entities of each
/// k-anonymous class as it leaves the queue of classes still to check.
pub fn cluster(
    forest: &Forest,
    pw: &Pairwise,
    order: &[u32],
    cdgh: CdghParams,
    l: usize,
    diversity: Diversity,
    progress: &Progress,
) -> Clustering {
    let base = cdgh::cluster(forest, pw, order, CdghParams { k: l, ..cdgh }, progress);
    let mut pending: VecDeque<Rep> = base.ecs.into();
    let mut done: Vec<Rep> = Vec::new();
    let mut suppressed = base.suppressed;
    let to_check = pending.iter().map(Rep::member_count).sum();
    progress.stage("diversifying classes", to_check);
    'ecs: while let Some(mut ec) = pending.pop_front() {
        progress.advance(ec.member_count());
        while !group_is_diverse(forest, &ec, l, diversity) {
            let queued = pending.len();
            let Some(other) = take_nearest(pw, &ec, &mut pending, &mut done) else {
                suppressed.extend(ec.members);
                continue 'ecs;
            };
            if pending.len() < queued {
                progress.advance(other.member_count());
            }
            ec = pw.merge(&ec, &other);
        }
        prune(forest, &mut ec, l, diversity);
        done.push(ec);
    }
    Clustering {
        ecs: done,
        suppressed,
    }
}

/// Removes and returns the EC nearest to `ec` among those not yet checked and those done.
fn take_nearest(
    pw: &Pairwise,
    ec: &Rep,
    pending: &mut VecDeque<Rep>,
    done: &mut Vec<Rep>,
) -> Option<Rep> {
    let near = |list: &mut dyn Iterator<Item = &Rep>| {
        list.enumerate()
            .map(|(i, c)| (pw.distance(ec, c), i))
            .reduce(|a, b| if b.0 < a.0 { b } else { a })
    };
    let p = near(&mut pending.iter());
    let d = near(&mut done.iter());
    match (p, d) {
        (Some(p), Some(d)) if d.0 < p.0 => Some(done.remove(d.1)),
        (Some(p), _) => pending.remove(p.1),
        (None, Some(d)) => Some(done.remove(d.1)),
        (None, None) => None,
    }
}

/// Is the vertex group `rep` stands for (one vertex per member) l-diverse on every sensitive
/// column of its table?
fn group_is_diverse(forest: &Forest, rep: &Rep, l: usize, diversity: Diversity) -> bool {
    let size = rep.member_count();
    let rule = Rule {
        l,
        diversity,
        target: size,
    };
    forest.tables[rep.table as usize]
        .sensitive
        .iter()
        .all(|col| {
            let mut counts = vec![0u32; col.labels.len()];
            for &r in &rep.members {
                counts[col.codes[r as usize] as usize] += 1;
            }
            rule.feasible(&counts, size)
        })
}

/// Suppresses, in every member, each vertex group below the root that is not l-diverse.
fn prune(forest: &Forest, rep: &mut Rep, l: usize, diversity: Diversity) {
    rep.children
        .retain(|c| group_is_diverse(forest, c, l, diversity));
    for c in &mut rep.children {
        prune(forest, c, l, diversity);
    }
}
