//! Vertical fragmentation (seed 004, Zakerzadeh, Aggarwal, Barker): a wide entity table
//! published as two fragments of its QI columns, each k-anonymous on its own, sharing only a
//! class column whose joint frequencies are repaired so that joining the fragments on it
//! re-forms no record group of fewer than k (non-reconstructability, 004 Thm 4.1).
//!
//! The meta-algorithm of 004 Sec. 3.2 (spec `seed-004-fragmentation.md` Sec. 2), step by step:
//! 1. [`features`]: every QI column as codes, a numeric one in equal-frequency bins (D5), and
//!    the class; [`mi::matrix`] the mutual information of every pair; [`fmrmr::split`]
//!    Alg. 1 (with D1-D4); every other column placed by its MI with each fragment (D25).
//! 2. [`anonymize`]: each fragment is the forest projected onto its QI columns
//!    (`Forest::project`), anonymized by the base algorithm the owner names (`base`, through
//!    the registry: TopDown or the lattice).
//! 3. [`trees::classes`] the fragments' equivalence classes (entities with equal released
//!    trees; on a single table, equal generalized codes), then the repair: naive (Sec. 4.2.2), DGBE (Alg. 3 with D9, D16), or
//!    δ-selectivity (Alg. 4 with D9, D13, D14; η exactly, [`eta`]), which publishes each
//!    EC's classes as a set instead of a class per row (Sec. 4.2.4).
//!
//! Under distinct l-diversity the class is not repaired: the Sec. 5 pipeline ([`diverse`])
//! anonymizes each segment's chunk of each fragment so every group holds all its segment's
//! classes (Thm 5.1), merging segments whose groups join too thinly (D11).
//!
//! Two fragments. On a family with child tables, layout A ([`trees`], spec Sec. 4.2): the
//! anchor fragment keeps the entity key and the child tables and is anonymized as entity
//! trees; the other is key-less. A key-less fragment has an order of its own (S2, S3:
//! `release::fragments`).

mod diverse;
mod eta;
mod fmrmr;
mod mi;
mod repair;
mod trees;

use std::collections::HashMap;

use arrow::array::{Array, StringArray};
use arrow::datatypes::DataType;

use super::options::{Default, Kind, OptionSpec};
use super::output::{Fragment, Fragmentation};
use super::{Generalization, Options, Output, Spec};
use crate::forest::{Forest, TableNodes};
use crate::plan::{ColumnRole, Diversity, KeyPolicy, Model, Plan};
use crate::policy::Value;
use crate::progress::Progress;

pub static FRAGMENT: Spec = Spec {
    name: "fragment",
    aliases: &[],
    note: " (two fragments; child tables stay with the first)",
    baseline: false,
    options: OPTIONS,
    serves,
    refuses,
    run,
    unread,
};

/// The options a fragmentation of this plan does not read: the repair's under l-diversity
/// (nothing is repaired), `delta` but under `repair = 'delta'`, the segments' under
/// k-anonymity, `trees` on a single table.
fn unread(plan: &Plan) -> Vec<&'static str> {
    let mut out = Vec::new();
    if plan.params.model.diversity().is_some() {
        out.extend(["repair", "delta"]);
    } else {
        out.push("segment_rows");
        if written_choice(plan, "repair") != "delta" {
            out.push("delta");
        }
    }
    if plan.tables.len() < 2 {
        out.push("trees");
    }
    out
}

/// The fewest rows a segment of the l-diversity pipeline is cut down to, by default
/// (measured: docs/experiments.md, 2026-11-29).
const SEGMENT_ROWS: usize = 1000;

/// The largest k a δ-selective release is made for: verify counts η exactly up to it.
const DELTA_MAX_K: usize = 64;

/// The base algorithms a fragment (or, under l-diversity, a chunk) may be anonymized by.
const BASES: &[(&str, &str)] = &[
    ("auto", "auto"),
    ("topdown", "topdown"),
    ("lattice", "lattice"),
    ("clustree", "clustree"),
];

/// k-anonymity (004 Sec. 3-4), or distinct l-diversity through the Sec. 5 pipeline: the
/// frequency form of a join of two groups is not bounded by Thm 5.1 (D12).
fn serves(model: &Model) -> Result<(), String> {
    match model {
        Model::KAnonymity { .. } => Ok(()),
        Model::LDiversity {
            diversity: Diversity::Distinct,
            ..
        } => Ok(()),
        Model::LDiversity { .. } => Err("serves l-diversity in its distinct form only (004 Thm 5.1 bounds the classes a join of two fragments re-forms, not their frequencies): add diversity = 'distinct'".to_string()),
        Model::Anatomy { .. } => Err(super::spec::GENERALIZES.to_string()),
    }
}

/// The base `base` names: `auto` is TopDown under k-anonymity and ClusTree under
/// l-diversity (TopDown serves k only).
fn base_name<'a>(base: &'a str, model: &Model) -> &'a str {
    match (base, model) {
        ("auto", Model::LDiversity { .. }) => "clustree",
        ("auto", _) => "topdown",
        (other, _) => other,
    }
}

const OPTIONS: &[OptionSpec] = &[
    OptionSpec {
        name: "class",
        aliases: &[],
        kind: Kind::Text,
        default: Default::Unset,
        check: None,
        doc: "the entity table's SENSITIVE column the fragments share (the only column in more than one fragment); required",
    },
    OptionSpec {
        name: "fragments",
        aliases: &[],
        kind: Kind::Count {
            min: 2.0,
            max: 1000.0,
        },
        default: Default::Count(2),
        check: None,
        doc: "how many fragments the QI columns are split into (2 in this version)",
    },
    OptionSpec {
        name: "base",
        aliases: &[],
        kind: Kind::Choice(BASES),
        default: Default::Choice("auto"),
        check: None,
        doc: "what anonymizes each fragment (under l-diversity, each segment's chunk): 'topdown' (local recoding, k-anonymity only), 'lattice' (the global optimum), 'clustree'; 'auto' is topdown under k-anonymity and clustree under l-diversity",
    },
    OptionSpec {
        name: "trees",
        aliases: &[],
        kind: Kind::Choice(trees::TREE_BASES),
        default: Default::Choice("auto"),
        check: None,
        doc: "an entity with child tables only: what anonymizes the anchor fragment's entity trees (the entity rows through its QI columns, with every child row): 'miraclex', 'miracle', 'clustree'; 'auto' is miraclex",
    },
    OptionSpec {
        name: "repair",
        aliases: &[],
        kind: Kind::Choice(&[("dgbe", "dgbe"), ("naive", "naive"), ("delta", "delta")]),
        default: Default::Choice("dgbe"),
        check: None,
        doc: "how class values are changed so no join of the fragments re-forms fewer than k rows: 'dgbe' (004 Alg. 3, few changes), 'naive' (each class to its majority), or 'delta' (Alg. 4: each class publishes a set of classes, and a share delta of their joins re-forms k rows or more)",
    },
    OptionSpec {
        name: "delta",
        aliases: &[],
        kind: Kind::Number { min: 0.0, max: 1.0 },
        default: Default::Number(0.5),
        check: Some(positive),
        doc: "repair = 'delta' only: the least share of the ways two classes' sets can be filled that must join into k rows or more (004 Def. 4.5), in (0, 1]",
    },
    OptionSpec {
        name: "sizes",
        aliases: &[],
        kind: Kind::Choice(&[("even", "even"), ("free", "free")]),
        default: Default::Choice("even"),
        check: None,
        doc: "'even': each fragment takes at most half the QI columns (rounded up); 'free': as the greedy choice falls (004 Alg. 1 as written, which can leave one fragment nearly every column)",
    },
    OptionSpec {
        name: "segment_rows",
        aliases: &[],
        kind: Kind::Count {
            min: 1.0,
            max: 1_000_000_000.0,
        },
        default: Default::Count(SEGMENT_ROWS),
        check: None,
        doc: "l-diversity only: the fewest rows a segment is cut down to (004 Sec. 5 Step 2 cuts down to l); larger segments give each chunk's base more rows to form groups from",
    },
    OptionSpec {
        name: "bins",
        aliases: &[],
        kind: Kind::Count {
            min: 2.0,
            max: 1000.0,
        },
        default: Default::Count(10),
        check: None,
        doc: "equal-frequency bins a numeric column is counted in when the fragments are chosen by mutual information",
    },
];

fn positive(delta: f64) -> Result<(), String> {
    if delta > 0.0 {
        Ok(())
    } else {
        Err("delta must be above 0 (a share of the joins in (0, 1]); with 0 nothing would be repaired: use repair = 'dgbe' for every join at k rows or more".to_string())
    }
}

/// What a fragmentation cannot release in this version, and what the owner can do.
fn refuses(plan: &Plan) -> Option<String> {
    let entity = &plan.tables[0];
    let qis = entity.qi_columns().count();
    if qis < 2 {
        return Some(format!(
            "algorithm = 'fragment' splits the entity table's QI columns, but {} has {qis}: nothing to fragment; use algorithm = '{}'",
            entity.name,
            if plan.tables.len() > 1 { "miraclex" } else { "topdown" }
        ));
    }
    if let Some(why) = class_refusal(plan) {
        return Some(why);
    }
    if let Some(Value::Number(m)) = plan.params.algorithm.written("fragments") {
        let m = *m as usize;
        if m > qis {
            return Some(format!("fragments = {m}, but {} has {qis} QI columns: each fragment needs one; use fragments = 2", entity.name));
        }
        if m > 2 {
            let on = if plan.tables.len() > 1 {
                "entity trees or a single table"
            } else {
                "a single table"
            };
            return Some(format!("fragments = {m}: this version splits {on} into 2 fragments (more needs the multi-way join check of spec D6, not built); use fragments = 2"));
        }
    }
    if plan.params.keys == KeyPolicy::Preserve {
        return Some("keys = 'preserve' would publish one key in every fragment and re-link them row by row; fragments carry no key: drop keys = 'preserve'".to_string());
    }
    if !plan.params.keep.is_empty() {
        return Some(
            "KEEP floors are not met by algorithm = 'fragment' yet: drop the KEEP clause"
                .to_string(),
        );
    }
    let delta = written_choice(plan, "repair") == "delta";
    if let (true, Model::KAnonymity { k }) = (delta, &plan.params.model) {
        if *k > DELTA_MAX_K {
            return Some(format!("repair = 'delta' is checked (η counted exactly) for k up to {DELTA_MAX_K}, and k = {k}: use repair = 'dgbe', which holds every join at k rows or more"));
        }
    }
    let model = &plan.params.model;
    if model.diversity().is_some() {
        if let Some(why) = diversity_refusal(plan) {
            return Some(why);
        }
    } else if plan.params.algorithm.written("segment_rows").is_some() {
        return Some("segment_rows is for l-diversity (004 Sec. 5's segments): under k-anonymity each fragment is anonymized whole; drop segment_rows".to_string());
    }
    if plan.tables.len() > 1 {
        if let Some(why) = trees_refusal(plan) {
            return Some(why);
        }
    } else if plan.params.algorithm.written("trees").is_some() {
        return Some(format!("trees names what anonymizes an anchor fragment's entity trees, but {} has no child tables: drop trees", entity.name));
    }
    let base = written_choice(plan, "base");
    let base = base_name(&base, model);
    let spec = super::find(base)?;
    if let Err(why) = (spec.serves)(model) {
        return Some(format!(
            "base = '{base}' {why}: use base = 'clustree' or 'lattice' under l-diversity"
        ));
    }
    // The base anonymizes the entity rows alone (layout A's second fragment is key-less).
    let mut alone = plan.clone();
    alone.tables.truncate(1);
    (spec.refuses)(&alone).map(|why| format!("base = '{base}': {why}"))
}

/// An option's choice as written, lower case; `auto` when not written.
fn written_choice(plan: &Plan, option: &str) -> String {
    match plan.params.algorithm.written(option) {
        Some(Value::Text(b)) => b.trim().to_ascii_lowercase(),
        _ => "auto".to_string(),
    }
}

/// What layout A (spec Sec. 4.2) does not take on entity trees in this version, and the
/// anchor's tree algorithm's own refusals.
fn trees_refusal(plan: &Plan) -> Option<String> {
    let entity = &plan.tables[0].name;
    if plan.params.model.diversity().is_some() {
        return Some(format!("the l-diversity pipeline (004 Sec. 5) cuts a single table into segments of rows, and {entity} has child tables (segments of entity trees are not built: spec Sec. 4.5); use model = 'k-anonymity', or algorithm = 'clustree' for l-diverse trees"));
    }
    if written_choice(plan, "repair") == "delta" {
        return Some(format!("repair = 'delta' publishes each equivalence class's classes as a set beside its labels, and on {entity}'s entity trees a class is a whole tree, which labels do not name; use repair = 'dgbe' or 'naive'"));
    }
    let trees = written_choice(plan, "trees");
    let name = trees::tree_base_name(&trees);
    let spec = super::find(name)?;
    if let Err(why) = (spec.serves)(&plan.params.model) {
        return Some(format!("trees = '{name}' {why}"));
    }
    (spec.refuses)(plan).map(|why| format!("trees = '{name}': {why}"))
}

/// What the l-diversity pipeline (004 Sec. 5) does not take: a repair (it changes no class)
/// and SENSITIVE columns beside the class (it diversifies the class alone).
fn diversity_refusal(plan: &Plan) -> Option<String> {
    for option in ["repair", "delta"] {
        if plan.params.algorithm.written(option).is_some() {
            return Some(format!("{option} is for k-anonymity: under l-diversity the fragments keep every class value and each group holds every class of its segment (004 Sec. 5); drop {option}"));
        }
    }
    let Some(Value::Text(class)) = plan.params.algorithm.written("class") else {
        return None;
    };
    let entity = &plan.tables[0];
    let others: Vec<&str> = entity
        .columns
        .iter()
        .filter(|c| matches!(c.role, ColumnRole::Sensitive { .. }) && c.name != class.trim())
        .map(|c| c.name.as_str())
        .collect();
    (!others.is_empty()).then(|| format!(
        "under l-diversity algorithm = 'fragment' makes the class '{}' diverse, but {} also has SENSITIVE {}, which a fragment would publish undiversified: label {} INSENSITIVE, or leave it out",
        class.trim(),
        entity.name,
        others.join(", "),
        if others.len() == 1 { "it" } else { "them" }
    ))
}

/// Why the declared class cannot be the column the fragments share (spec S1, Sec. 7).
fn class_refusal(plan: &Plan) -> Option<String> {
    let entity = &plan.tables[0];
    let Some(Value::Text(class)) = plan.params.algorithm.written("class") else {
        return Some(format!(
            "algorithm = 'fragment' needs the column the fragments share: write class = '<a SENSITIVE column of {}>'",
            entity.name
        ));
    };
    let Some(column) = entity.columns.iter().find(|c| c.name == class.trim()) else {
        return Some(format!(
            "class = '{class}' is not a column of the entity table {}; the class must be one of its SENSITIVE columns (a column of a child table is not one value per entity)",
            entity.name
        ));
    };
    match &column.role {
        ColumnRole::Sensitive { buckets: None } => None,
        ColumnRole::Sensitive { buckets: Some(_) } => Some(format!(
            "class = '{class}' is SENSITIVE BUCKETS: the fragments share its values exactly; declare it SENSITIVE without BUCKETS"
        )),
        other => Some(format!(
            "class = '{class}' is labelled {}, but the class is published in every fragment as it is (its values may be changed by the repair): label it SENSITIVE",
            role_name(other)
        )),
    }
}

fn role_name(role: &ColumnRole) -> &'static str {
    match role {
        ColumnRole::QuasiIdentifier { .. } => "QUASI IDENTIFIER",
        ColumnRole::Identifier => "IDENTIFIER",
        ColumnRole::Sensitive { .. } => "SENSITIVE",
        ColumnRole::Insensitive => "INSENSITIVE",
        ColumnRole::Key => "a key",
    }
}

/// The 004 meta-algorithm (Sec. 3.2 steps 1-3) on a single table.
fn run(
    forest: &Forest,
    model: &Model,
    options: &Options,
    progress: &Progress,
) -> Result<Output, String> {
    let table = forest
        .tables
        .first()
        .ok_or("the forest has no entity table")?;
    let class = class_index(table, options)?;
    let bins = options.count("bins");
    progress.stage("choosing the fragments", 1);
    let features = features(table, bins);
    let class_codes = &table.sensitive[class].codes;
    let matrix = mi::matrix(&features, class_codes);
    let mut split = fmrmr::split(&matrix, options.choice("sizes") == "even");
    let trees = forest.tables.len() > 1;
    if trees {
        split = trees::anchor_first(&matrix, split);
    }
    let placement = placement(table, &features, &split, class, bins);
    progress.advance(1);
    let base = base_name(options.choice("base"), model);
    let base = super::find(base).ok_or("the base algorithm is not registered")?;
    let (fragments, repair, segments) = match model {
        Model::KAnonymity { k } => {
            let tree_base = trees::tree_base_name(options.choice("trees"));
            let tree_base = super::find(tree_base).ok_or("the tree algorithm is not registered")?;
            let bases = [if trees { tree_base } else { base }, base];
            let fragments = repaired(forest, &split, class_codes, *k, bases, options, progress)?;
            (fragments, options.choice("repair"), None)
        }
        Model::LDiversity {
            l,
            diversity: Diversity::Distinct,
        } => {
            let chunked = diverse::run(
                forest,
                &split,
                &features,
                class_codes,
                *l,
                (base, options),
                progress,
            )?;
            let segments = Some((chunked.segments, chunked.merged));
            let fragments = diversified(chunked, split.clone(), class_codes);
            (fragments, "none", segments)
        }
        other => return Err(serves(other).err().unwrap_or_default()),
    };
    Ok(Output::Fragmented(Fragmentation {
        kept: union_kept(&fragments),
        fragments,
        class,
        placement,
        repair,
        bins,
        fmrmr: fmrmr::score(&matrix, &split),
        cross_mi: cross_mi(&matrix, &split),
        cross_determined: cross_determined(&split, &features, model.min_group()),
        child_determined: if trees {
            trees::child_determined(forest, &split[1], &features, model.min_group())
        } else {
            Vec::new()
        },
        segments,
        trees,
    }))
}

/// Steps 2-3 under k-anonymity: each fragment anonymized whole by its base (`bases`, in
/// fragment order: on entity trees the anchor's is a tree algorithm), then the class
/// repaired (naive, DGBE or delta).
fn repaired(
    forest: &Forest,
    split: &[Vec<usize>; 2],
    class_codes: &[u32],
    k: usize,
    bases: [&Spec; 2],
    options: &Options,
    progress: &Progress,
) -> Result<Vec<Fragment>, String> {
    let model = Model::KAnonymity { k };
    let mut fragments: Vec<(Vec<usize>, Generalization)> = Vec::with_capacity(split.len());
    let mut ecs = Vec::with_capacity(split.len());
    for (i, (qi, base)) in split.iter().zip(bases).enumerate() {
        let projected = trees::forest_of(forest, qi, i)?;
        let g = anonymize(&projected, base, &model, options, progress)?;
        ecs.push(trees::classes(&projected, &g));
        fragments.push((qi.clone(), g));
    }
    let ecs = repair::Ecs {
        of: ecs
            .try_into()
            .map_err(|_| "a fragmentation has two fragments")?,
    };
    progress.stage("repairing the class", 1);
    let seed = options.seed.unwrap_or(0);
    let (repaired, sets): Repaired = match options.choice("repair") {
        "naive" => (repair::naive(&ecs, class_codes), None),
        "delta" => {
            let delta = options.number("delta");
            let sets = repair::delta(&ecs, class_codes, k, delta, seed)?;
            ([class_codes.to_vec(), class_codes.to_vec()], Some(sets))
        }
        _ => (repair::dgbe(&ecs, class_codes, k, seed)?, None),
    };
    progress.advance(1);
    let mut sets = sets.map(|s| s.into_iter());
    Ok(fragments
        .into_iter()
        .zip(repaired)
        .zip(ecs.of)
        .map(|(((qi, generalization), class), classes)| {
            let sets = sets.as_mut().and_then(Iterator::next);
            Fragment {
                changed: match &sets {
                    Some(s) => repair::ambiguous(&classes, class_codes, s),
                    None => repair::distortions(class_codes, &class),
                },
                ec_sizes: classes.iter().map(Vec::len).collect(),
                ecs: classes,
                sets,
                qi,
                generalization,
                class,
            }
        })
        .collect())
}

/// The l-diversity pipeline's fragments: every class as the source has it.
fn diversified(chunked: diverse::Chunked, split: [Vec<usize>; 2], class: &[u32]) -> Vec<Fragment> {
    chunked
        .fragments
        .into_iter()
        .zip(chunked.groups)
        .zip(split)
        .map(|((mut generalization, classes), qi)| {
            let sizes: Vec<usize> = classes.iter().map(Vec::len).collect();
            generalization.ec_sizes = sizes.clone();
            Fragment {
                changed: 0,
                ec_sizes: sizes,
                ecs: classes,
                sets: None,
                qi,
                generalization,
                class: class.to_vec(),
            }
        })
        .collect()
}

/// Per fragment the class of every row, and under `delta` per fragment the set of every EC.
type Repaired = ([Vec<u32>; 2], Option<[Vec<Vec<u32>>; 2]>);

/// The class's index among the entity table's sensitive columns (`table.column` names).
fn class_index(table: &TableNodes, options: &Options) -> Result<usize, String> {
    let class = options
        .text("class")
        .ok_or("algorithm = 'fragment' needs class = '<column>'")?;
    let at = table
        .sensitive
        .iter()
        .position(|s| s.name_in(&table.name) == class)
        .ok_or_else(|| {
            format!(
                "class = '{class}' is not a SENSITIVE column of {}",
                table.name
            )
        })?;
    // A NULL class would join like one more class value, yet is no value: the spec refuses
    // it (Sec. 7).
    let nulls = table
        .batch
        .column_by_name(class)
        .map_or(0, |c| c.null_count());
    if nulls > 0 {
        return Err(format!(
            "class = '{class}' is NULL in {nulls} row(s) of {}; the class must hold a value in every row: fill them in, or choose another class",
            table.name
        ));
    }
    Ok(at)
}

/// Every QI column as codes MI is counted on (Alg. 1 line 2, D5): its leaf codes, or where
/// every leaf is a number and there are more leaves than `bins`, equal-frequency bins of
/// the values (plug-in MI over raw distinct values would make a unique column look as
/// informative as the class itself).
fn features(table: &TableNodes, bins: usize) -> Vec<Vec<u32>> {
    (0..table.nqi())
        .map(|q| {
            let h = &table.hierarchies[q];
            let codes: Vec<u32> = (0..table.rows() as u32)
                .map(|r| table.codes(r)[q])
                .collect();
            let numbers: Option<Vec<f64>> = codes
                .iter()
                .map(|&c| h.label(c).and_then(|l| l.trim().parse::<f64>().ok()))
                .collect();
            match numbers {
                Some(values) if distinct(&codes) > bins => mi::equal_frequency(&values, bins),
                _ => codes,
            }
        })
        .collect()
}

fn distinct(codes: &[u32]) -> usize {
    let mut seen: Vec<u32> = codes.to_vec();
    seen.sort_unstable();
    seen.dedup();
    seen.len()
}

/// Per column of the source rows, the fragment it goes to (D25: the one whose QI columns it
/// shares the most mutual information with); the release publishes only the columns its
/// roles allow. QI columns and the class are placed by the split and go everywhere.
fn placement(
    table: &TableNodes,
    features: &[Vec<u32>],
    split: &[Vec<usize>; 2],
    class: usize,
    bins: usize,
) -> Vec<usize> {
    let batch = &table.batch;
    let class_column = table.sensitive[class].name_in(&table.name);
    let others: Vec<usize> = (0..batch.num_columns())
        .filter(|&c| batch.schema().field(c).name() != class_column)
        .collect();
    let mi_with: Vec<Vec<f64>> = others
        .iter()
        .map(|&c| {
            let codes = column_codes(batch.column(c), bins);
            features
                .iter()
                .map(|f| mi::mutual_information(&codes, f))
                .collect()
        })
        .collect();
    let placed = fmrmr::place(&mi_with, split);
    let mut out = vec![0; batch.num_columns()];
    for (&c, &f) in others.iter().zip(&placed) {
        out[c] = f;
    }
    out
}

/// A source column as codes: its distinct rendered values, a numeric one in bins.
fn column_codes(column: &dyn Array, bins: usize) -> Vec<u32> {
    let text = arrow::compute::cast(column, &DataType::Utf8)
        .ok()
        .and_then(|a| a.as_any().downcast_ref::<StringArray>().cloned());
    let Some(text) = text else {
        // A type with no text form: one code, no information.
        return vec![0; column.len()];
    };
    let values: Vec<Option<&str>> = (0..text.len())
        .map(|i| text.is_valid(i).then(|| text.value(i)))
        .collect();
    let numbers: Option<Vec<f64>> = values
        .iter()
        .map(|v| v.and_then(|s| s.trim().parse::<f64>().ok()))
        .collect();
    let mut ids: HashMap<Option<&str>, u32> = HashMap::new();
    let codes: Vec<u32> = values
        .iter()
        .map(|v| {
            let next = ids.len() as u32;
            *ids.entry(*v).or_insert(next)
        })
        .collect();
    match numbers {
        Some(values) if ids.len() > bins => mi::equal_frequency(&values, bins),
        _ => codes,
    }
}

/// 004 Sec. 3.2 step 2: the fragment's forest ([`trees::forest_of`]) anonymized by the base
/// algorithm with its own defaults (and the run's seed).
fn anonymize(
    projected: &Forest,
    base: &Spec,
    model: &Model,
    options: &Options,
    progress: &Progress,
) -> Result<Generalization, String> {
    let mut base_options = Options::defaults(base.options);
    base_options.seed = options.seed;
    match (base.run)(projected, model, &base_options, progress)
        .map_err(|e| format!("base = '{}' on a fragment: {e}", base.name))?
    {
        Output::Generalized(g) => Ok(g),
        _ => Err(format!(
            "base = '{}' did not release generalized rows",
            base.name
        )),
    }
}

/// Rows published in at least one fragment.
fn union_kept(fragments: &[Fragment]) -> Vec<Vec<bool>> {
    let Some(first) = fragments.first() else {
        return Vec::new();
    };
    let mut kept = first.generalization.kept.clone();
    for g in fragments[1..].iter().map(|f| &f.generalization) {
        for (a, b) in kept.iter_mut().zip(&g.kept) {
            for (x, y) in a.iter_mut().zip(b) {
                *x |= *y;
            }
        }
    }
    kept
}

/// Pairs of QI columns of different fragments where the first determines the second over
/// the source's rows (on the codes mutual information is counted on): a released label of
/// the first precise enough reveals the second, a second join column the class repair does
/// not count (spec Sec. 3, "NOT guaranteed", taken to its exact case). Only where the first
/// column's values can be published exactly ([`shared_by_k`]).
fn cross_determined(
    split: &[Vec<usize>; 2],
    features: &[Vec<u32>],
    k: usize,
) -> Vec<(usize, usize)> {
    let rows: Vec<u32> = (0..features.first().map_or(0, Vec::len) as u32).collect();
    let mut out = Vec::new();
    for (from, to) in [(&split[0], &split[1]), (&split[1], &split[0])] {
        for &a in from
            .iter()
            .filter(|&&a| shared_by_k(&features[a], &rows, k))
        {
            for &b in to {
                if determines(&features[a], &rows, &features[b]) {
                    out.push((a, b));
                }
            }
        }
    }
    out.sort_unstable();
    out
}

/// Whether a column's values are held by `k` entities each on average (`entity`: each row's
/// entity), so a group can publish them exactly: a column of near-unique values determines
/// every other in any sample, yet is generalized far above its values before a group holds k.
fn shared_by_k(values: &[u32], entity: &[u32], k: usize) -> bool {
    let mut pairs: Vec<(u32, u32)> = values.iter().copied().zip(entity.iter().copied()).collect();
    pairs.sort_unstable();
    pairs.dedup();
    let distinct = distinct(values);
    distinct > 0 && distinct * k.max(1) <= pairs.len()
}

/// Whether every value of a column goes with one code of its row's entity's `feature`, and
/// the feature has more than one code among those entities.
fn determines(values: &[u32], entity: &[u32], feature: &[u32]) -> bool {
    let mut seen: HashMap<u32, u32> = HashMap::new();
    let mut codes: Vec<u32> = Vec::new();
    for (&v, &e) in values.iter().zip(entity) {
        let Some(&b) = feature.get(e as usize) else {
            continue;
        };
        if *seen.entry(v).or_insert(b) != b {
            return false;
        }
        if !codes.contains(&b) {
            codes.push(b);
        }
    }
    codes.len() > 1
}

/// The largest MI between a QI column of the first fragment and one of the second.
fn cross_mi(matrix: &[Vec<f64>], split: &[Vec<usize>; 2]) -> Option<(usize, usize, f64)> {
    let mut best: Option<(usize, usize, f64)> = None;
    for &a in &split[0] {
        for &b in &split[1] {
            let v = matrix[a][b];
            if best.is_none_or(|(_, _, m)| v > m) {
                best = Some((a.min(b), a.max(b), v));
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A generalization of one table: `kept` rows with one code each.
    fn one_column(kept: &[bool], codes: &[u32]) -> Generalization {
        Generalization {
            kept: vec![kept.to_vec()],
            codes: vec![codes.to_vec()],
            groups: vec![vec![crate::algo::output::NO_GROUP; kept.len()]],
            ec_sizes: Vec::new(),
            suppressed_entities: 0,
            levels: None,
            relocation: None,
        }
    }

    #[test]
    fn classes_are_kept_rows_with_equal_codes_in_the_order_of_their_first_row() {
        let g = one_column(&[true, true, false, true, true], &[7, 3, 7, 7, 3]);
        let h = crate::hierarchy::Hierarchy::flat("q", &["a", "b"]);
        let table = TableNodes::bare("t", vec![h], vec![0; 5], vec![u32::MAX; 5]);
        let forest = Forest {
            tables: vec![table],
        };
        assert_eq!(trees::classes(&forest, &g), vec![vec![0, 3], vec![1, 4]]);
    }

    #[test]
    fn a_row_is_kept_when_any_fragment_publishes_it() {
        let a = one_column(&[true, false, false], &[0, 0, 0]);
        let b = one_column(&[false, false, true], &[0, 0, 0]);
        let fragment = |qi: usize, g: Generalization| Fragment {
            qi: vec![qi],
            class: Vec::new(),
            ecs: Vec::new(),
            sets: None,
            changed: 0,
            ec_sizes: Vec::new(),
            generalization: g,
        };
        let kept = union_kept(&[fragment(0, a), fragment(1, b)]);
        assert_eq!(kept, vec![vec![true, false, true]]);
    }

    #[test]
    fn the_largest_cross_fragment_information_names_both_columns() {
        let m = vec![
            vec![1.0, 0.2, 0.9, 0.1],
            vec![0.2, 1.0, 0.3, 0.4],
            vec![0.9, 0.3, 1.0, 0.0],
            vec![0.1, 0.4, 0.0, 1.0],
        ];
        // Fragments {0, 1} and {2}: the pairs across are (0,2) = 0.9 and (1,2) = 0.3.
        let split = [vec![0, 1], vec![2]];
        assert_eq!(cross_mi(&m, &split), Some((0, 2, 0.9)));
    }

    #[test]
    fn a_column_determines_another_across_fragments_where_it_can_be_published_exactly() {
        // Column 0 (2 values over 8 rows) determines column 1; column 2 (unique) determines
        // both, but no group of k = 2 publishes it exactly.
        let features = vec![
            vec![0, 0, 0, 0, 1, 1, 1, 1],
            vec![5, 5, 5, 5, 6, 6, 6, 6],
            (0..8).collect(),
        ];
        assert_eq!(
            cross_determined(&[vec![0, 2], vec![1]], &features, 2),
            vec![(0, 1), (1, 0)]
        );
        assert_eq!(
            cross_determined(&[vec![0, 1], vec![2]], &features, 2),
            vec![]
        );
        // At k = 5 two values over 8 rows cannot each be published exactly.
        assert_eq!(cross_determined(&[vec![0], vec![1]], &features, 5), vec![]);
    }

    #[test]
    fn a_child_column_that_names_its_entitys_value_determines_it() {
        // Children 0, 1, 2, 3 of entities 0, 1, 1, 2; the entities' feature 5, 6, 7.
        let entity = [0, 1, 1, 2];
        let feature = [5, 6, 7];
        assert!(determines(&[1, 2, 2, 3], &entity, &feature));
        // One value under two entities of different features: no.
        assert!(!determines(&[1, 2, 1, 3], &entity, &feature));
        // A feature of one value is no information.
        assert!(!determines(&[1, 2, 2, 3], &entity, &[5, 5, 5]));
        // Three values over three entities are not each held by two.
        assert!(!shared_by_k(&[1, 2, 2, 3], &entity, 2));
        assert!(shared_by_k(&[1, 1, 1, 1], &entity, 2));
    }

    #[test]
    fn text_columns_are_codes_and_wide_numeric_ones_bins() {
        let text = StringArray::from(vec![Some("a"), Some("b"), Some("a"), None]);
        assert_eq!(column_codes(&text, 10), vec![0, 1, 0, 2]);
        let numbers = arrow::array::Int64Array::from((0..100).collect::<Vec<i64>>());
        let binned = column_codes(&numbers, 10);
        assert_eq!(distinct(&binned), 10);
    }
}
