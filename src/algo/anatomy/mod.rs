//! Anatomy of hierarchical records (000 Ch. 3): `model = 'anatomy'`, served by
//! `algorithm = 'anatomy'`. QI values are published exactly; entities are grouped l at a
//! time on a common slot tree (`anatomize`, Algorithms 6-8) and only the link between a
//! member's QIs and its sensitive values is hidden, under the (p,m)-privacy rules' exact
//! occurrence budgets (`thresholds`). `release` lays the groups out as a QI side and an SA
//! side; `verify` re-checks them on its own.

pub mod anatomize;
pub mod thresholds;

use crate::algo::options::{Default, Kind, OptionSpec};
use crate::algo::output::Anatomization;
use crate::algo::{Options, Output, Spec};
use crate::forest::Forest;
use crate::plan::{AnatomyRule, Model};
use crate::policy::RuleValue;
use crate::progress::Progress;
use anatomize::{anatomize, Config, Rule};

pub static ANATOMY: Spec = Spec::plain("anatomy", OPTIONS, serves, run);

const OPTIONS: &[OptionSpec] = &[OptionSpec {
    name: "partitions",
    aliases: &[],
    kind: Kind::Count { min: 1.0, max: 1e6 },
    default: Default::Count(1),
    check: None,
    doc:
        "how many parts of similar tree size entities are grouped within (000 Sec. 3.4), 1 for one",
}];

fn serves(model: &Model) -> Result<(), String> {
    match model {
        Model::Anatomy { .. } => Ok(()),
        _ => Err(
            "anatomizes (model = 'anatomy'): it publishes QI values exactly and generalizes none"
                .to_string(),
        ),
    }
}

fn run(
    forest: &Forest,
    model: &Model,
    options: &Options,
    progress: &Progress,
) -> Result<Output, String> {
    let Model::Anatomy { l, variant, rules } = model else {
        return Err(serves(model).err().unwrap_or_default());
    };
    let rules = resolve(forest, rules, progress)?;
    progress.phase("cluster", "grouping entities");
    progress.stage("entities grouped", forest.entities());
    let config = Config {
        l: *l,
        rules,
        partitions: options.count("partitions"),
        variant: *variant,
    };
    let anatomy = anatomize(forest, &config);
    progress.advance(forest.entities());
    if anatomy.partitions < config.partitions {
        progress.warn(format!(
            "partitions = {} leaves parts smaller than l = {l}; used {}",
            config.partitions, anatomy.partitions
        ));
    }
    Ok(Output::Anatomized(Anatomization::new(
        forest, anatomy, *variant,
    )))
}

/// The declared rules as codes of the forest's sensitive columns: a rule on every value
/// becomes one rule per value the column holds; a value the column never holds is warned
/// about (a typo, most likely) and checks nothing.
fn resolve(
    forest: &Forest,
    declared: &[AnatomyRule],
    progress: &Progress,
) -> Result<Vec<Rule>, String> {
    let mut rules = Vec::new();
    for d in declared {
        let wanted = format!("{}.{}", d.table, d.column);
        // A table of the plan can be split in two entries (a second path): both hold it.
        let hits: Vec<(usize, usize)> = forest
            .tables
            .iter()
            .enumerate()
            .filter_map(|(t, nodes)| {
                nodes
                    .sensitive
                    .iter()
                    .position(|s| s.column == wanted)
                    .map(|c| (t, c))
            })
            .collect();
        if hits.is_empty() {
            return Err(format!(
                "rule '{}' names {wanted}, which is not a SENSITIVE column of the family; label it AS SENSITIVE or fix the rule",
                d.name
            ));
        }
        let mut matched = false;
        for (t, c) in hits {
            let col = &forest.tables[t].sensitive[c];
            let codes: Vec<u32> = match &d.value {
                RuleValue::Every => {
                    let mut seen = vec![false; col.labels.len()];
                    for &code in &col.codes {
                        seen[code as usize] = true;
                    }
                    (0..col.labels.len() as u32)
                        .filter(|&c| seen[c as usize])
                        .collect()
                }
                RuleValue::Value(v) => col.code_of(Some(v)).into_iter().collect(),
                RuleValue::Null => col.code_of(None).into_iter().collect(),
            };
            matched |= !codes.is_empty();
            rules.extend(codes.into_iter().map(|code| Rule {
                table: t,
                column: c,
                code,
                m: d.m,
                p: d.p,
            }));
        }
        if !matched {
            let what = match &d.value {
                RuleValue::Value(v) => format!("the value '{v}'"),
                RuleValue::Null => "NULL".to_string(),
                RuleValue::Every => "any value".to_string(),
            };
            progress.warn(format!(
                "rule '{}': {wanted} never holds {what}, so the rule checks nothing; is it a typo?",
                d.name
            ));
        }
    }
    Ok(rules)
}
