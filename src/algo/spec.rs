//! What an algorithm declares to the registry ([`super::ALGORITHMS`]): a [`Spec`] with its
//! name, options, the models it serves, what else it refuses and how it runs, and the
//! `serves` / `refuses` answers several algorithms share.

use super::options::OptionSpec;
use super::{Options, Output};
use crate::forest::Forest;
use crate::plan::{Model, Plan};
use crate::progress::Progress;

/// One algorithm as users name it (`ANONYMIZE ... WITH (algorithm = 'name')`).
#[derive(Debug)]
pub struct Spec {
    pub name: &'static str,
    /// Other spellings (`bitmap` for `bitmap-incomplete`).
    pub aliases: &'static [&'static str],
    /// Said beside the name where algorithms are listed (`(one table)`).
    pub note: &'static str,
    /// A single-table baseline of 001 Sec. III: released for study only, since it is not
    /// multi-relationally k-anonymous.
    pub baseline: bool,
    /// Its options, in the order the report lists them.
    pub options: &'static [OptionSpec],
    /// Whether it serves the declared model; `Err` says why not, following the algorithm's
    /// name ("is a k-anonymity algorithm ..."; the registry adds what to use instead).
    pub serves: fn(&Model) -> Result<(), String>,
    /// Anything else of the plan it cannot release, with what to do instead.
    pub refuses: fn(&Plan) -> Option<String>,
    /// Runs it; `Err` says why this forest cannot be released as asked, and what to do.
    pub run: fn(&Forest, &Model, &Options, &Progress) -> Result<Output, String>,
    /// Its options this plan's run does not read (the report leaves them out rather than
    /// list a default that played no part).
    pub unread: fn(&Plan) -> Vec<&'static str>,
}

/// An algorithm that reads every option it has, whatever the plan.
pub fn reads_every_option(_: &Plan) -> Vec<&'static str> {
    Vec::new()
}

impl Spec {
    /// An algorithm with no other name, no note, not a baseline, that takes any plan.
    pub const fn plain(
        name: &'static str,
        options: &'static [OptionSpec],
        serves: fn(&Model) -> Result<(), String>,
        run: fn(&Forest, &Model, &Options, &Progress) -> Result<Output, String>,
    ) -> Spec {
        Spec {
            name,
            aliases: &[],
            note: "",
            baseline: false,
            options,
            serves,
            refuses: takes_any_plan,
            run,
            unread: reads_every_option,
        }
    }
}

/// Why a generalizing algorithm refuses anatomy.
pub const GENERALIZES: &str = "generalizes QI values, and model = 'anatomy' publishes them exactly";

/// `Spec::serves` of an algorithm that ignores sensitive values.
pub fn k_anonymity_only(model: &Model) -> Result<(), String> {
    match model {
        Model::KAnonymity { .. } => Ok(()),
        Model::LDiversity { .. } => {
            Err("is a k-anonymity algorithm and ignores sensitive values".to_string())
        }
        Model::Anatomy { .. } => Err(GENERALIZES.to_string()),
    }
}

/// `Spec::serves` of an algorithm that serves both generalization models.
pub fn any_model(model: &Model) -> Result<(), String> {
    match model {
        Model::Anatomy { .. } => Err(GENERALIZES.to_string()),
        _ => Ok(()),
    }
}

/// `Spec::refuses` of an algorithm that takes every plan.
pub fn takes_any_plan(_: &Plan) -> Option<String> {
    None
}
