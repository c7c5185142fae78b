//! Anonymization algorithms. They see only the [`Forest`] and their options, and return an
//! [`Output`]; they do no I/O and know no SQL.
//!
//! # Layout
//! - `mod.rs` is the registry: every algorithm as users name it, a [`Spec`] of its options,
//!   the models it serves, what else it refuses and how it runs. [`configure`] checks the
//!   declarations' request against it; [`Configured::run`] runs it.
//! - `output` is what crosses into the release: [`Output`] (today always generalized rows, a
//!   [`Generalization`]; an anatomy and column fragments join as variants with their
//!   algorithms, and the compiler then names every reader that must handle them).
//! - `options` is the option-table machinery each algorithm declares its options with.
//! - `kernel/` holds what several algorithms share and knows no algorithm: `tree` (a cluster
//!   representative `Rep` and a `Clustering`), `cdgh` (001 Alg. 2, the clustering skeleton of
//!   MiRaCle, MiRaCleX, dMiRaCle and the baselines, and its options), `pairwise` (001 Alg.
//!   3-5), `diversify` (000 Alg. 1-3 with lower bounds), `shape` (tree shapes, the visit
//!   order, the suppression price), `lca_loss`, `ahead` (items computed on several threads
//!   ahead of an in-order consumer).
//! - The algorithms, one module each: `miracle` (MiRaCle, MiRaCleX), `clustree` (ClusTree,
//!   CToff; 000 Alg. 4-5), `dmiracle`, `topdown` (one table, local recoding), `lattice`,
//!   `anatomy/`, `shape_only` (the reference grouping by tree shape), `baseline/` (001 Sec.
//!   III: universal, per-table, bitmap), `hybrid/` (003 Alg. 1-2, S-Hybrid on the lattice,
//!   relocation within a budget of untruthful cells; `hybrid/trees` its entity-tree form).
//! - `keep`: the `KEEP` floors, met around any algorithm by rerunning it at higher prices.
//! - `shards`: `--shards N`, any splittable algorithm run on shards of whole trees, the
//!   outputs put together into one over the whole forest.
//!
//! Adding an algorithm is one module with its `Spec` and one line in [`ALGORITHMS`]. Every
//! algorithm visits entities in key order, or, where it reads `order` (MiRaCle, MiRaCleX,
//! ClusTree, CToff), by tree shape unless `order = 'key'`, and counts its stages' work into
//! the `Progress` handed in (entities visited or placed, ClusTree's seeds tried).

pub mod anatomy;
pub mod baseline;
pub mod clustree;
pub mod dmiracle;
pub mod fragment;
pub mod hybrid;
pub mod keep;
pub mod kernel;
pub mod lattice;
pub mod miracle;
pub mod negotiate;
pub mod options;
pub mod output;
pub mod shape_only;
pub mod shards;
pub mod spec;
pub mod topdown;

use crate::forest::Forest;
use crate::plan::{KeepRows, Model, Plan, SHARED_OPTIONS};
use crate::policy::Pos;
use crate::progress::Progress;

pub use kernel::tree::Clustering;
pub use options::{OptionSpec, OptionValue, Options, WireValue};
pub use output::{
    Anatomization, ChildColumn, Fragment, Fragmentation, Generalization, Output, Relocated,
};
pub use spec::{any_model, k_anonymity_only, takes_any_plan, Spec, GENERALIZES};

/// Every algorithm, in the order messages list them.
pub static ALGORITHMS: &[&Spec] = &[
    &miracle::MIRACLE,
    &miracle::MIRACLEX,
    &clustree::CLUSTREE,
    &clustree::CTOFF,
    &dmiracle::DMIRACLE,
    &topdown::TOPDOWN,
    &lattice::LATTICE,
    &hybrid::HYBRID,
    &anatomy::ANATOMY,
    &fragment::FRAGMENT,
    &shape_only::SHAPE_ONLY,
    &baseline::UNIVERSAL,
    &baseline::PER_TABLE,
    &baseline::BITMAP_COMPLETE,
    &baseline::BITMAP_INCOMPLETE,
];

/// The algorithm a model gets when none is named: MiRaCleX for k-anonymity, ClusTree for
/// l-diversity.
fn default_for(model: &Model) -> &'static Spec {
    match model {
        Model::KAnonymity { .. } => &miracle::MIRACLEX,
        Model::LDiversity { .. } => &clustree::CLUSTREE,
        Model::Anatomy { .. } => &anatomy::ANATOMY,
    }
}

/// An algorithm with its options checked, ready to run.
#[derive(Debug, Clone)]
pub struct Configured {
    pub spec: &'static Spec,
    pub options: Options,
    /// The plan's `KEEP` floors, which [`Configured::run`] meets or refuses.
    pub keep: Vec<KeepRows>,
    /// Shards the entities are split into (`--shards`); 1 runs over the whole forest.
    pub shards: usize,
}

/// How an algorithm takes `--shards`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sharding {
    /// Each shard is anonymized on its own (local recoding, clustering).
    Split,
    /// One decision for the whole population (global recoding): run unsplit.
    Whole,
}

impl Configured {
    /// Runs the algorithm over the whole forest, meeting the `KEEP` floors (`keep::run`):
    /// afterwards `options` holds the suppression price the output was made with.
    pub fn run(
        &mut self,
        forest: &Forest,
        model: &Model,
        progress: &Progress,
    ) -> Result<Output, String> {
        if self.shards > 1 && self.sharding()? == Sharding::Split {
            let n = self.shards;
            return shards::run(self, forest, model, n, progress);
        }
        let (output, options) = keep::run(
            self.spec,
            &self.options,
            &self.keep,
            forest,
            model,
            progress,
        )?;
        self.options = options;
        Ok(output)
    }
}

impl Configured {
    /// How this algorithm takes shards: the lattice's node is chosen over the whole
    /// population (a node's class counts are over every entity), so it runs whole; anatomy's
    /// groups are refused for now.
    pub fn sharding(&self) -> Result<Sharding, String> {
        if std::ptr::eq(self.spec, &lattice::LATTICE) || std::ptr::eq(self.spec, &hybrid::HYBRID) {
            Ok(Sharding::Whole)
        } else if std::ptr::eq(self.spec, &anatomy::ANATOMY) {
            Err("model = 'anatomy' forms its groups over the whole population and is not split into shards yet: drop --shards".to_string())
        } else if std::ptr::eq(self.spec, &fragment::FRAGMENT) {
            Err("algorithm = 'fragment' chooses its fragments over the whole table and is not split into shards yet: drop --shards".to_string())
        } else {
            Ok(Sharding::Split)
        }
    }
}

/// Why the algorithm asked for cannot run as declared. Each message says what to write.
#[derive(Debug, thiserror::Error)]
#[error("{pos}: {message}")]
pub struct ConfigError {
    pub pos: Pos,
    pub message: String,
}

/// The plan's algorithm request checked against the registry: the algorithm exists, serves
/// the model, takes the plan, and every option written is one of its own with a value it
/// takes.
pub fn configure(plan: &Plan) -> Result<Configured, ConfigError> {
    let request = &plan.params.algorithm;
    let model = &plan.params.model;
    let spec = match &request.name {
        None => default_for(model),
        Some((name, pos)) => find(name).ok_or_else(|| ConfigError {
            pos: *pos,
            message: format!("unknown algorithm '{name}'; use {}", listing()),
        })?,
    };
    let refusal = |message: String| ConfigError {
        pos: request.at(),
        message,
    };
    (spec.serves)(model)
        .map_err(|why| refusal(format!("{} {why}; {}", spec.name, instead(model))))?;
    if let Some(why) = (spec.refuses)(plan) {
        return Err(refusal(why));
    }
    let mut options = Options::read(spec.options, &request.options).map_err(|e| match e {
        options::OptionError::Invalid { pos, message } => ConfigError { pos, message },
        options::OptionError::NotInTable(raw) => ConfigError {
            pos: raw.pos,
            message: not_its_option(spec, &raw.name),
        },
    })?;
    options.seed = plan.params.seed;
    Ok(Configured {
        spec,
        options,
        keep: plan.params.keep.clone(),
        shards: 1,
    })
}

/// The algorithm registered under `name` (or an alias of it).
pub fn find(name: &str) -> Option<&'static Spec> {
    ALGORITHMS
        .iter()
        .copied()
        .find(|s| s.name == name || s.aliases.contains(&name))
}

/// The algorithms, the baselines last: `'miracle', ..., 'topdown' (one table), or a
/// baseline: 'universal', ...`.
fn listing() -> String {
    let quoted = |s: &&Spec| format!("'{}'{}", s.name, s.note);
    let (baselines, algorithms): (Vec<&Spec>, Vec<&Spec>) =
        ALGORITHMS.iter().copied().partition(|s| s.baseline);
    format!(
        "{}, or a baseline: {}",
        algorithms.iter().map(quoted).collect::<Vec<_>>().join(", "),
        baselines.iter().map(quoted).collect::<Vec<_>>().join(", ")
    )
}

/// What to use for `model` instead: the algorithms (not baselines) that serve it.
fn instead(model: &Model) -> String {
    let names: Vec<String> = ALGORITHMS
        .iter()
        .filter(|s| !s.baseline && (s.serves)(model).is_ok())
        .map(|s| format!("'{}'", s.name))
        .collect();
    let list = match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.join(""),
    };
    match model {
        Model::LDiversity { .. } => format!("for l-diversity use algorithm = {list}"),
        Model::KAnonymity { .. } => format!("for k-anonymity use algorithm = {list}"),
        Model::Anatomy { .. } => format!("for anatomy use algorithm = {list}"),
    }
}

/// The message for an option `spec` does not read: whose it is, or that nobody's.
fn not_its_option(spec: &Spec, name: &str) -> String {
    let owners: Vec<&str> = ALGORITHMS
        .iter()
        .filter(|s| s.options.iter().any(|o| o.answers_to(name)))
        .map(|s| s.name)
        .collect();
    if owners.is_empty() {
        let mut known: Vec<&str> = SHARED_OPTIONS.to_vec();
        for s in ALGORITHMS {
            for o in s.options {
                if !known.contains(&o.name) {
                    known.push(o.name);
                }
            }
        }
        return format!(
            "unknown option '{name}'; known options: {}",
            known.join(", ")
        );
    }
    let own: Vec<&str> = spec.options.iter().map(|o| o.name).collect();
    let reads = if own.is_empty() {
        "no options of its own".to_string()
    } else {
        own.join(", ")
    };
    format!(
        "{name} is an option of {}, not of {} (which reads {reads}); remove it or choose one of those algorithms",
        owners.join(", "),
        spec.name
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_algorithm_has_one_name_and_its_options_one_table_entry_each() {
        let mut names: Vec<&str> = Vec::new();
        for s in ALGORITHMS {
            for n in std::iter::once(&s.name).chain(s.aliases) {
                assert!(!names.contains(n), "{n} names two algorithms");
                names.push(n);
            }
            let mut options: Vec<&str> = Vec::new();
            for o in s.options {
                assert!(
                    !SHARED_OPTIONS.contains(&o.name),
                    "{} shadows a shared option",
                    o.name
                );
                assert!(!options.contains(&o.name), "{} twice in {}", o.name, s.name);
                options.push(o.name);
            }
        }
    }

    #[test]
    fn listings_name_every_algorithm_and_what_serves_a_model() {
        assert_eq!(
            listing(),
            "'miracle', 'miraclex', 'clustree', 'ctoff', 'dmiracle', 'topdown' (one table), 'lattice', 'hybrid', 'anatomy', 'fragment' (two fragments; child tables stay with the first), 'shape-only' (reference), or a baseline: 'universal', 'per-table', 'bitmap-complete', 'bitmap-incomplete'"
        );
        let l = Model::LDiversity {
            l: 3,
            diversity: crate::plan::Diversity::Probabilistic,
        };
        assert_eq!(
            instead(&l),
            "for l-diversity use algorithm = 'clustree', 'ctoff' or 'dmiracle'"
        );
    }
}
