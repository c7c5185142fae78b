//! MiRaCle and MiRaCleX (001): k-anonymity of whole records by the CDGH clustering skeleton
//! (001 Alg. 2, `kernel::cdgh`) over pairwise anonymization (`kernel::pairwise`); MiRaCle
//! matches sibling subtrees whole (Alg. 4), MiRaCleX node by node (Alg. 5).

use crate::algo::kernel::cdgh::{self, CdghParams};
use crate::algo::kernel::pairwise::{Pairwise, Siblings};
use crate::algo::kernel::relocate;
use crate::algo::kernel::shape;
use crate::algo::options::OptionSpec;
use crate::algo::{self, Generalization, Options, Output, Spec};
use crate::forest::Forest;
use crate::plan::Model;
use crate::progress::Progress;

/// Alg. 2's options, the suppression price, the visit order and relanon's relocation of
/// what Alg. 2 suppresses.
const OPTIONS: &[OptionSpec] = &[
    cdgh::THRESHOLD,
    cdgh::CLIMIT,
    shape::PRICE,
    shape::ORDER,
    relocate::RELOCATE,
];

pub static MIRACLE: Spec = Spec::plain("miracle", OPTIONS, algo::k_anonymity_only, run_miracle);

pub static MIRACLEX: Spec = Spec::plain("miraclex", OPTIONS, algo::k_anonymity_only, run_miraclex);

fn run_miracle(
    forest: &Forest,
    model: &Model,
    options: &Options,
    progress: &Progress,
) -> Result<Output, String> {
    run(forest, model, options, Siblings::BySubtree, progress)
}

fn run_miraclex(
    forest: &Forest,
    model: &Model,
    options: &Options,
    progress: &Progress,
) -> Result<Output, String> {
    run(forest, model, options, Siblings::ByNode, progress)
}

/// 001 Alg. 2 over the whole forest, entities in the order `order` asks for.
fn run(
    forest: &Forest,
    model: &Model,
    options: &Options,
    siblings: Siblings,
    progress: &Progress,
) -> Result<Output, String> {
    let order = shape::visit_order(forest, options);
    let siblings = match siblings {
        Siblings::ByNode if shape::aware(forest, options) => Siblings::ByNodeAndShape,
        other => other,
    };
    let pw = Pairwise::new(forest, siblings, shape::price(options));
    let params = CdghParams::from_options(model.min_group(), options);
    let mut clustering = cdgh::cluster(forest, &pw, &order, params, progress);
    let moved = relocate::apply(forest, &mut clustering, options);
    Ok(Output::Generalized(Generalization::relocated(
        forest,
        &clustering,
        moved,
    )))
}
