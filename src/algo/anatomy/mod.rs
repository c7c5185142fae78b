//! Anatomy of hierarchical records (000 Ch. 3): `model = 'anatomy'`, served by
//! `algorithm = 'anatomy'`. QI values are published exactly; entities are grouped l at a
//! time on a common slot tree (`anatomize`, Algorithms 6-8) and only the link between a
//! member's QIs and its sensitive values is hidden, under the (p,m)-privacy rules' exact
//! occurrence budgets (`thresholds`). `release` lays the groups out as a QI side and an SA
//! side; `verify` re-checks them on its own.

pub mod anatomize;

use crate::algo::options::{Default, Kind, OptionSpec};
use crate::algo::output::Anatomization;
use crate::algo::output::Rule;
use crate::algo::{Options, Output, Spec};
use crate::forest::Forest;
use crate::plan::{AnatomyRule, Model};
use crate::policy::RuleValue;
use crate::progress::Progress;
use anatomize::{anatomize, Config};

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
    let declared = rules;
    let rules = resolve(forest, declared, progress)?;
    feasible(forest, *l, *variant, &rules, declared, progress)?;
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
    if anatomy.groups.is_empty() {
        return Err(format!(
            "no group of l = {l} entities could be formed: every seed's tree found no {} other tree(s) whose root sensitive values differ and meet the rules; lower l or relax the rules",
            l - 1
        ));
    }
    if anatomy.partitions < config.partitions {
        progress.warn(format!(
            "partitions = {} leaves parts smaller than l = {l}; used {}",
            config.partitions, anatomy.partitions
        ));
    }
    let mut a = Anatomization::new(forest, anatomy, *variant);
    a.rules = config.rules;
    Ok(Output::Anatomized(a))
}

/// What the data alone rules out before any grouping (the spec's Sec. 6 items 2-5): l above
/// the entities or above an entity-table column's distinct values refuses; a child column
/// with fewer values than l, a value too frequent to spread over the groups, and a rule that
/// suppresses every entity holding its value are said as warnings; rules leaving no value
/// of an entity-table column publishable refuse.
fn feasible(
    forest: &Forest,
    l: usize,
    variant: crate::plan::Variant,
    rules: &[Rule],
    declared: &[AnatomyRule],
    progress: &Progress,
) -> Result<(), String> {
    let n = forest.entities();
    if l > n {
        return Err(format!(
            "l = {l} but the family has only {n} entities, so no group of l can form; lower l"
        ));
    }
    for (t, nodes) in forest.tables.iter().enumerate() {
        for (c, col) in nodes.sensitive.iter().enumerate() {
            let distinct = col.distinct();
            if distinct < l {
                if t == 0 {
                    return Err(format!(
                        "{} holds {distinct} distinct value(s) (after its buckets), fewer than l = {l}: each group's {} rows need l different values; lower l to {distinct} or less",
                        col.column, nodes.name
                    ));
                }
                progress.warn(format!(
                    "{} holds {distinct} distinct value(s), fewer than l = {l}: no slot can hold l different values, so no {} row is published",
                    col.column, nodes.name
                ));
                continue;
            }
            if let Some((value, count)) = crate::sensitive::most_frequent(col) {
                if t == 0 && count * l > n {
                    progress.warn(format!(
                        "{}: {count} entities hold '{value}', more than n / l = {}; a group holds it once, so at least {} of them are suppressed whole",
                        col.column,
                        n / l,
                        count.saturating_sub(n / l)
                    ));
                }
            }
            // Rules that allow no occurrence of a value (m = 1 and a budget of 0).
            let barring: Vec<&Rule> = rules
                .iter()
                .filter(|r| r.table == t && r.column == c && r.m == 1)
                .filter(|r| match variant {
                    crate::plan::Variant::TreeTree => {
                        crate::algo::output::tt_budget(r.p, l as u32) == 0
                    }
                    crate::plan::Variant::VertexVertex => {
                        crate::algo::output::vv_budget(r.p, r.m, l as u32) == Some(0)
                    }
                })
                .collect();
            let barred: Vec<u32> = barring.iter().map(|r| r.code).collect();
            let mut names: Vec<&str> = barring
                .iter()
                .filter_map(|r| declared.get(r.declared).map(|d| d.name.as_str()))
                .collect();
            names.dedup();
            let names = names.join("', '");
            if barred.is_empty() {
                continue;
            }
            let mut held: Vec<u32> = col.codes.clone();
            held.sort_unstable();
            held.dedup();
            if t == 0 && held.iter().all(|v| barred.contains(v)) {
                return Err(format!(
                    "rule(s) '{names}': the rules on {} allow no group to hold any of its values (m = 1 with p below 1/l = 1/{l}), so every entity would be suppressed; raise p to 1/{l} or more, or m",
                    col.column
                ));
            }
            let hit = col.codes.iter().filter(|v| barred.contains(v)).count();
            progress.warn(format!(
                "rule(s) '{names}' (m = 1, p below 1/l = 1/{l}) bar {} value(s) of {}: the {hit} {} row(s) holding them are suppressed{}",
                barred.len(),
                col.column,
                nodes.name,
                if t == 0 { " whole" } else { "" }
            ));
        }
    }
    Ok(())
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
    for (di, d) in declared.iter().enumerate() {
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
                declared: di,
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
