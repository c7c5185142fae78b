//! The parameters every algorithm shares ([`Params`]): the privacy model and its options
//! (`model`, `k`, `l`, `diversity`, `variant`) checked against each other, the run's options
//! (seeds, keys, orphans, queries), `KEEP n PERCENT OF t`; options it does not know are
//! handed to the algorithm as written.

use super::error::{at, PlanError};
use super::names::table;
use super::{
    ColumnRole, Diversity, FamilyTable, KeepRows, KeyPolicy, Model, OrphanPolicy, Params,
    RawOption, Variant,
};
use crate::policy::{Policy, Pos, Value};
use crate::warehouse::Warehouse;

/// Reads the options every algorithm shares; the rest go to the algorithm as written
/// ([`AlgorithmRequest::options`](super::AlgorithmRequest::options)), which checks them
/// against its own table.
pub(super) fn params(
    policy: &Policy,
    entity: &crate::policy::EntityDecl,
) -> Result<Params, PlanError> {
    let an = anonymize_of(policy, entity)?;
    let mut p = Params::defaults(Model::KAnonymity { k: 0 });
    p.algorithm.pos = an.pos;
    let mut asked = ModelOptions::default();
    let settings = policy.settings.iter().map(|s| {
        (
            s.name.to_ascii_lowercase(),
            Value::Text(s.value.clone()),
            s.pos,
        )
    });
    let options = an
        .options
        .iter()
        .map(|(n, o)| (n.clone(), o.value.clone(), o.pos));
    for (name, value, pos) in settings.chain(options) {
        if !read_model_option(&mut asked, &name, &value, pos)? {
            read_run_option(&mut p, name, value, pos)?;
        }
    }
    p.model = resolve_model(an.pos, &entity.name, asked)?;
    Ok(p)
}

/// The `ANONYMIZE` declaration, which must name the declared entity.
fn anonymize_of<'p>(
    policy: &'p Policy,
    entity: &crate::policy::EntityDecl,
) -> Result<&'p crate::policy::AnonymizeDecl, PlanError> {
    let an = policy.anonymize.as_ref().ok_or_else(|| {
        PlanError::Schema(format!(
            "no privacy policy; add ANONYMIZE {} WITH (k = 5)",
            entity.name
        ))
    })?;
    if !an.entity.eq_ignore_ascii_case(&entity.name) {
        return Err(at(
            an.pos,
            format!(
                "ANONYMIZE names '{}' but the entity is '{}'; write ANONYMIZE {} WITH (...)",
                an.entity, entity.name, entity.name
            ),
        ));
    }
    Ok(an)
}

/// The model's options as written, with where: they are checked against each other only
/// once all are read ([`resolve_model`]), since any may come first.
#[derive(Default)]
struct ModelOptions {
    model: Option<Asked>,
    k: Option<(usize, Pos)>,
    l: Option<(usize, Pos)>,
    diversity: Option<(Diversity, Pos)>,
    variant: Option<(Variant, Pos)>,
}

/// An option's value as a lower-case word (a number as written).
fn text(v: &Value) -> String {
    match v {
        Value::Text(s) => s.to_ascii_lowercase(),
        Value::Number(n) => n.to_string(),
    }
}

/// Option `name`'s value when it is a number in `[min, max]`.
fn number(name: &str, value: &Value, pos: Pos, min: f64, max: f64) -> Result<f64, PlanError> {
    match value {
        Value::Number(n) if *n >= min && *n <= max => Ok(*n),
        _ => Err(at(
            pos,
            format!("{name} must be a number between {min} and {max}, found {value}"),
        )),
    }
}

/// `n` when it is whole (option `name` counts something).
fn whole(name: &str, pos: Pos, n: f64) -> Result<f64, PlanError> {
    if n.fract() == 0.0 {
        Ok(n)
    } else {
        Err(at(pos, format!("{name} must be a whole number, found {n}")))
    }
}

/// Reads `name` into `asked` when it is one of the model's options (`model`, `variant`, `k`,
/// `l`, `diversity`); returns whether it was.
fn read_model_option(
    asked: &mut ModelOptions,
    name: &str,
    value: &Value,
    pos: Pos,
) -> Result<bool, PlanError> {
    match name {
        "model" => {
            asked.model = Some(match text(value).as_str() {
                "k-anonymity" => Asked::K,
                "l-diversity" => Asked::L,
                "anatomy" => Asked::Anatomy,
                other => {
                    return Err(at(
                        pos,
                        format!(
                            "unknown model '{other}'; use model = 'k-anonymity', 'l-diversity' or 'anatomy'"
                        ),
                    ))
                }
            })
        }
        "variant" => {
            asked.variant = Some((
                match text(value).as_str() {
                    "t-t" => Variant::TreeTree,
                    "v-v" => Variant::VertexVertex,
                    other => {
                        return Err(at(
                            pos,
                            format!("variant must be 't-t' (a person's QI-tree from their SA-tree) or 'v-v' (each vertex from its sensitive values), found '{other}'"),
                        ))
                    }
                },
                pos,
            ))
        }
        "k" | "l" => {
            let n = whole(name, pos, number(name, value, pos, 1.0, 1e9)?)?;
            if name == "k" {
                asked.k = Some((n as usize, pos));
            } else {
                asked.l = Some((n as usize, pos));
            }
        }
        "diversity" => {
            asked.diversity = Some((
                match text(value).as_str() {
                    "probabilistic" => Diversity::Probabilistic,
                    "distinct" => Diversity::Distinct,
                    other => {
                        return Err(at(
                            pos,
                            format!(
                                "diversity must be 'probabilistic' or 'distinct', found '{other}'"
                            ),
                        ))
                    }
                },
                pos,
            ))
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// Reads one of the run's options (algorithm, queries, seeds, keys, orphans) into `p`; any
/// other option is the algorithm's, kept as written.
fn read_run_option(p: &mut Params, name: String, value: Value, pos: Pos) -> Result<(), PlanError> {
    match name.as_str() {
        "algorithm" => p.algorithm.name = Some((text(&value), pos)),
        "queries" => p.queries = whole(&name, pos, number(&name, &value, pos, 0.0, 1e6)?)? as usize,
        "query_seed" => {
            p.query_seed = whole(&name, pos, number(&name, &value, pos, 0.0, 9.0e15)?)? as u64
        }
        "seed" => {
            p.seed = Some(whole(&name, pos, number(&name, &value, pos, 0.0, 9.0e15)?)? as u64)
        }
        "keys" => {
            p.keys = match text(&value).as_str() {
                "preserve" => KeyPolicy::Preserve,
                "pseudonymize" => KeyPolicy::Pseudonymize,
                other => {
                    return Err(at(
                        pos,
                        format!("keys must be 'pseudonymize' or 'preserve', found '{other}'"),
                    ))
                }
            }
        }
        "orphans" => {
            p.orphans = match text(&value).as_str() {
                "drop" => OrphanPolicy::Drop,
                "refuse" => OrphanPolicy::Refuse,
                other => {
                    return Err(at(
                        pos,
                        format!("orphans must be 'refuse' or 'drop', found '{other}'"),
                    ))
                }
            }
        }
        _ => p.algorithm.options.push(RawOption { name, value, pos }),
    }
    Ok(())
}

/// The model the options ask for, checked against each other: anatomy with its own options,
/// else k-anonymity or l-diversity ([`model_of`]).
fn resolve_model(pos: Pos, e: &str, asked: ModelOptions) -> Result<Model, PlanError> {
    if asked.model == Some(Asked::Anatomy) {
        let (l, _) = asked.l.ok_or_else(|| {
            at(pos, format!("anatomy needs l; write ANONYMIZE {e} WITH (model = 'anatomy', l = 3, variant = 't-t')"))
        })?;
        if l < 2 {
            return Err(at(pos, format!("anatomy needs l >= 2 (l = {l} would publish every person's sensitive values beside their QIs); write l = 2 or more")));
        }
        if let Some((_, pos)) = asked.diversity {
            return Err(at(pos, "diversity belongs to l-diversity; anatomy's groups hold l distinct values per slot, so remove it".to_string()));
        }
        return Ok(Model::Anatomy {
            l,
            variant: asked.variant.map_or(Variant::TreeTree, |(v, _)| v),
            rules: Vec::new(),
        });
    }
    if let Some((_, pos)) = asked.variant {
        return Err(at(
            pos,
            "variant belongs to anatomy; write model = 'anatomy' or remove it".to_string(),
        ));
    }
    model_of(
        pos,
        e,
        asked.model.map(|m| m == Asked::L),
        asked.k,
        asked.l,
        asked.diversity.map(|(d, _)| d),
    )
}

/// The model `model = '...'` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Asked {
    K,
    L,
    Anatomy,
}

/// The options [`params`] reads itself, in the order messages list them.
pub const SHARED_OPTIONS: &[&str] = &[
    "model",
    "k",
    "l",
    "diversity",
    "variant",
    "algorithm",
    "seed",
    "keys",
    "orphans",
    "queries",
    "query_seed",
];

/// The model is what was asked for, or what the parameters imply.
fn model_of(
    pos: Pos,
    e: &str,
    model: Option<bool>,
    k: Option<(usize, Pos)>,
    l: Option<(usize, Pos)>,
    diversity: Option<Diversity>,
) -> Result<Model, PlanError> {
    let ldiv = model.unwrap_or(l.is_some() && k.is_none());
    if ldiv {
        if let Some((_, pos)) = k {
            return Err(at(pos, "k belongs to k-anonymity; with model = 'l-diversity' write l = ... (every EC then holds at least l entities)".to_string()));
        }
        let (l, _) = l.ok_or_else(|| {
            at(pos, format!("l-diversity needs l; write ANONYMIZE {e} WITH (model = 'l-diversity', l = 3, ...)"))
        })?;
        return Ok(Model::LDiversity {
            l,
            diversity: diversity.unwrap_or(Diversity::Probabilistic),
        });
    }
    if let Some((_, pos)) = l {
        return Err(at(
            pos,
            "l belongs to l-diversity; write model = 'l-diversity' or use k for k-anonymity"
                .to_string(),
        ));
    }
    let (k, _) = k.ok_or_else(|| {
        at(
            pos,
            format!("k-anonymity needs k; write ANONYMIZE {e} WITH (k = 5, ...)"),
        )
    })?;
    Ok(Model::KAnonymity { k })
}

/// l-diversity without a sensitive column would be k-anonymity under another name.
pub(super) fn check_sensitive(
    params: &Params,
    tables: &[FamilyTable],
    entity: &crate::policy::EntityDecl,
) -> Result<(), PlanError> {
    let any = tables.iter().any(|t| {
        t.columns
            .iter()
            .any(|c| matches!(c.role, ColumnRole::Sensitive { .. }))
    });
    if params.model.diversity().is_some() && !any {
        return Err(PlanError::Schema(format!(
            "l-diversity needs at least one SENSITIVE column in the {} family; add LABEL COLUMN <table>.<column> AS SENSITIVE, or use model = 'k-anonymity'",
            entity.name
        )));
    }
    Ok(())
}

/// `KEEP n PERCENT OF t`, each naming a family table: only the family's rows are suppressed.
pub(super) fn keeps(
    policy: &Policy,
    wh: &Warehouse,
    family: &[FamilyTable],
) -> Result<Vec<KeepRows>, PlanError> {
    policy
        .keeps
        .iter()
        .map(|k| {
            let meta = table(wh, &k.table, k.pos)?;
            let index = family.iter().position(|t| t.name == meta.name).ok_or_else(|| {
                at(
                    k.pos,
                    format!(
                        "KEEP names {}, which is not in the {} family: only family tables lose rows to suppression (dimensions are copied whole); name one of {}",
                        meta.name,
                        family[0].name,
                        family
                            .iter()
                            .map(|t| t.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
            })?;
            Ok(KeepRows {
                table: index,
                name: meta.name.clone(),
                percent: k.percent,
                pos: k.pos,
            })
        })
        .collect()
}
