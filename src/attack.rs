//! `relanon attack`: what an adversary who knows a few quasi-identifier facts about one person
//! learns from a release, so a data owner can check a release before publishing it.
//!
//! The adversary model is the papers' (001 Sec. II, 000 Def. 13): the adversary knows QI
//! values of one victim entity and sees the release; anonymity means the victim's whole
//! released record (the entity row and every row below it) cannot be told apart from others.
//!
//! - A fact is a SQL boolean expression over the QI columns of ONE family table, written as
//!   `table.column` (`courses.course = 'Physics' AND courses.year > 2000` is one fact about one
//!   course row). A fact on the entity table constrains the entity row; a fact on a child
//!   table says "the victim has a row in that table (at any depth below the entity) that
//!   satisfies this". Facts on one child table describe DISTINCT rows ("took Math" and "took
//!   Physics" are two courses), so an entity fits them only if its rows can be assigned one
//!   per fact: a bipartite matching (`matching`), never a greedy choice. Facts on different
//!   tables, or on the entity table, constrain their rows independently. A fact naming an
//!   IDENTIFIER or a key is refused (neither is published as the source holds it); one
//!   naming a column published unchanged (SENSITIVE, INSENSITIVE) is evaluated on its values
//!   as released, each value its own leaf, and reported as outside the declared model
//!   (`Findings::outside_model`), which covers QI knowledge only.
//! - Twins: where the release publishes, unchanged, a column of the fact's table that
//!   determines a QI the fact names in the source (`init::twin_map`: a code beside its
//!   description), each released row is tested on the QI value its twin tells, not on its
//!   label, so the count is what an adversary filtering on the twin finds (`Findings::twins`).
//! - A released row is consistent with a fact iff some choice of one leaf under each of its
//!   released labels satisfies the fact (`domain`; 001 Def. 3). Leaves are the distinct
//!   values of the source column, typed as in the source. A fact is split at its top-level
//!   ANDs into components that share no column (`fact::Component`); the leaves of different
//!   components are chosen independently, so a row is consistent with the fact iff it is
//!   consistent with every component, and each component is evaluated once, by DataFusion,
//!   over the cross product of the leaves of its own columns only (`courses.course = 'Math'
//!   AND courses.year > 2000` is two one-column evaluations). At most [`DOMAIN_CAP`]
//!   combinations are evaluated per component (a component coupling columns whose product is
//!   larger is refused). A fact that is NULL (unknown) for a combination does not hold for it.
//! - The candidates are the released entities consistent with every fact. One candidate means
//!   the victim is singled out; none means the victim is not in the release (suppressed or
//!   never in the source) or a fact is not true of them.
//! - The posterior of every SENSITIVE column of the family, each candidate equally likely:
//!   for an entity-table column, the distribution of the candidates' values; for a child-table
//!   column and each fact on that table, the value of the row the fact describes: within a
//!   candidate, every row that fact is assigned to in some complete assignment of that
//!   table's facts to distinct rows is equally likely; for a child-table column no fact is
//!   about, a uniformly chosen row of the victim's in that table (candidates without such
//!   rows do not contribute).
//!
//! A vertical fragmentation's re-join attack (`rejoin`: its fragments paired by order, by
//! class and by QIs, scored by the run's provenance) runs inside `anonymize`; `attack` itself
//! refuses a fragmented release.
//!
//! Released keys may be pseudonyms: released FKs still link released rows to released
//! parents, which is all the trees need. The source supplies only each QI's leaves and
//! hierarchy; everything matched against is the release. Reads through [`crate::warehouse`];
//! shares nothing with the algorithms.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use arrow::array::RecordBatch;

mod anatomy;
mod domain;
mod fact;
mod matching;
pub mod rejoin;

pub use anatomy::RuleRisk;
pub use rejoin::{Linkage, Rejoin};

pub use domain::DOMAIN_CAP;
pub use fact::FactError;

use crate::hierarchy::HierarchyError;
use crate::plan::{ColumnRole, Plan};
use crate::warehouse::{render_value, Warehouse, WarehouseError};
use domain::{ColumnDomain, FactDomain};
use fact::Fact;

/// At most this many candidates are listed by released key; more are only counted.
const KEYS_LISTED: usize = 10;

/// At most this many values of a posterior are printed, most likely first; the rest are
/// folded into one line (a high-cardinality column would fill the screen).
const SHARES_LISTED: usize = 8;

/// Why an attack could not be run. One line each, saying what to do.
#[derive(Debug, thiserror::Error)]
pub enum AttackError {
    #[error("fact {number} `{text}` {problem}")]
    Fact {
        number: usize,
        text: String,
        problem: FactError,
    },
    #[error(transparent)]
    Warehouse(#[from] WarehouseError),
    #[error(transparent)]
    Hierarchy(#[from] HierarchyError),
    #[error("the plan gives QI {column} hierarchy '{hierarchy}', which it does not define; check the declarations")]
    UndefinedHierarchy { column: String, hierarchy: String },
    #[error("the release has no table '{table}': pass the release these declarations made (--release PATH)")]
    MissingTable { table: String },
    #[error("the release publishes '{table}' as vertical fragments ({table}__f1, {table}__f2), and a fact is matched against one released table: `attack` does not read fragments; what an adversary re-joins from them is in the run's report (fragmentation.rejoin)")]
    Fragmented { table: String },
    #[error("release table '{table}' has no column '{column}': pass the release these declarations made (--release PATH)")]
    MissingColumn { table: String, column: String },
    #[error("release column {column} holds {label}, which is no label of hierarchy '{hierarchy}': pass the release these declarations made, and check it with `relanon verify`")]
    UnknownLabel {
        column: String,
        label: String,
        hierarchy: String,
    },
    #[error("release table '{table}': {count} row(s) have a foreign key ({fk}) that names no single released {parent} row, e.g. {example}; the release is not key-atomic: check it with `relanon verify`")]
    BrokenLink {
        table: String,
        fk: String,
        parent: String,
        count: usize,
        example: String,
    },
}

/// What the adversary learns: the command's output.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Findings {
    /// The entity's declared name and its table.
    pub entity: String,
    pub entity_table: String,
    pub released_entities: usize,
    pub facts: Vec<FactFinding>,
    /// Released entities consistent with every fact.
    pub candidates: usize,
    /// Exactly one candidate: the victim's released record is found.
    pub singled_out: bool,
    /// The candidates' released keys (a composite key joined by `,`), when at most 10 and
    /// the entity table has a key.
    pub candidate_keys: Option<Vec<String>>,
    /// One per SENSITIVE column (and per fact on its table); none without candidates.
    pub posteriors: Vec<Posterior>,
    /// Under anatomy: the candidates' groups and each (p,m)-privacy rule's risk.
    pub anatomy: Option<AnatomyFindings>,
    /// Columns the facts name that are published unchanged (SENSITIVE, INSENSITIVE): an
    /// adversary who knows them is outside the declared model, which covers QI knowledge.
    pub outside_model: Vec<String>,
    /// Columns published unchanged through which a fact's QI was read exactly, each as
    /// `twin determines qi`: the release's twins undo that QI's generalization.
    pub twins: Vec<String>,
}

/// What an anatomy gives away beyond the QI side (see `attack::anatomy`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AnatomyFindings {
    /// The candidates' released group ids with their sizes (at most 10 listed).
    pub groups: Vec<(i64, usize)>,
    /// Per declared rule, the largest chance over the candidates (and values) that the
    /// victim holds the value m times or more; (p,m)-privacy keeps it at most p.
    pub rules: Vec<RuleRisk>,
}

/// One fact and how much of the release it fits.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FactFinding {
    pub fact: String,
    pub table: String,
    /// Leaf combinations the fact was evaluated over (the sum over its components), and how
    /// many of them satisfy their component. For a fact of one component, the combinations
    /// of its columns' leaves and how many satisfy the fact.
    pub domain: usize,
    pub satisfying: usize,
    /// The fact's components, each evaluated over the leaves of its own columns only.
    pub components: Vec<ComponentFinding>,
    /// Released rows of the table consistent with the fact, of how many.
    pub consistent_rows: usize,
    pub released_rows: usize,
}

/// One component of a fact: top-level conjuncts connected by the columns they name.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ComponentFinding {
    /// `table.column`; empty for the conditions that name no column (evaluated once).
    pub columns: Vec<String>,
    /// Leaf combinations of its columns, and how many satisfy it.
    pub domain: usize,
    pub satisfying: usize,
}

/// The posterior distribution of one sensitive value of the victim.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Posterior {
    /// `table.column`.
    pub column: String,
    pub subject: Subject,
    /// The fact (1-based) whose row this is, for [`Subject::FactRow`].
    pub fact: Option<usize>,
    /// Candidates contributing (each with weight 1 / this).
    pub entities: usize,
    /// Most likely first.
    pub distribution: Vec<Share>,
}

/// Whose value a posterior is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Subject {
    /// The victim's entity row.
    Entity,
    /// The row a fact on the column's table describes.
    FactRow,
    /// A uniformly chosen row of the victim's in the column's table (no fact is about it).
    AnyRow,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Share {
    /// As released (`None`: NULL).
    pub value: Option<String>,
    pub probability: f64,
}

/// Runs the attack of `facts` on `release`, made from `source` under `plan`.
pub async fn run(
    plan: &Plan,
    source: &Warehouse,
    release: &Warehouse,
    facts: &[String],
) -> Result<Findings, AttackError> {
    let parsed = parse_facts(plan, facts)?;
    let released = read_release(plan, release).await?;
    let family = link(plan, &released)?;
    let (released, family) = join_parts(plan, released, family)?;
    let domains = column_domains(plan, source, &parsed).await?;
    let twins = twins_of(plan, source, &released, &parsed).await?;

    let mut evidence = Vec::with_capacity(parsed.len());
    let mut findings = Vec::with_capacity(parsed.len());
    for (i, f) in parsed.iter().enumerate() {
        let (finding, consistent) = judge_fact(plan, &released, &domains, &twins, i, f).await?;
        findings.push(finding);
        evidence.push(Evidence {
            table: f.table,
            consistent,
        });
    }

    let candidates = candidates(&family, &evidence);
    let entity_table = &plan.tables[0];
    let candidate_keys = candidate_keys(plan, &released[0], &candidates)?;
    let anatomy = match plan.params.model.anatomy() {
        Some((_, variant)) => Some((
            anatomy::SaSide::read(plan, release, variant).await?,
            anatomy::Placement::read(plan, &released)?,
        )),
        None => None,
    };
    let posteriors = sensitive_posteriors(
        plan,
        &released,
        anatomy.as_ref(),
        &family,
        &evidence,
        &candidates,
    )?;
    Ok(Findings {
        entity: plan.entity.clone(),
        entity_table: entity_table.name.clone(),
        released_entities: released[0].num_rows(),
        facts: findings,
        candidates: candidates.len(),
        singled_out: candidates.len() == 1,
        candidate_keys,
        posteriors,
        outside_model: outside_model(plan, &parsed),
        twins: twins
            .iter()
            .map(|((t, q), twin)| {
                format!(
                    "{}.{} determines {}.{q}",
                    plan.tables[*t].name, twin.column, plan.tables[*t].name
                )
            })
            .collect(),
        anatomy: anatomy
            .map(|(side, place)| anatomy_findings(plan, &side, &place, &family, &candidates)),
    })
}

/// Parses every fact against the plan's family, numbering a bad one (1-based) as the
/// command line lists them.
fn parse_facts(plan: &Plan, facts: &[String]) -> Result<Vec<Fact>, AttackError> {
    facts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            fact::parse(text, &plan.entity, &plan.tables).map_err(|problem| AttackError::Fact {
                number: i + 1,
                text: text.clone(),
                problem,
            })
        })
        .collect()
}

/// Evaluates fact `i` over its columns' leaves and tests every released row of its table
/// against it: the fact's finding, and each row's verdict (the evidence candidates are
/// matched on).
async fn judge_fact(
    plan: &Plan,
    released: &[RecordBatch],
    domains: &BTreeMap<(usize, String), ColumnDomain>,
    twins: &BTreeMap<(usize, String), Twin>,
    i: usize,
    f: &Fact,
) -> Result<(FactFinding, Vec<bool>), AttackError> {
    let table = &plan.tables[f.table].name;
    let columns: Vec<&ColumnDomain> = f
        .columns
        .iter()
        .map(|c| &domains[&(f.table, c.clone())])
        .collect();
    let evaluated = domain::evaluate_fact(table, f, &columns, DOMAIN_CAP)
        .await
        .map_err(|problem| AttackError::Fact {
            number: i + 1,
            text: f.text.clone(),
            problem,
        })?;
    let through: Vec<Option<&Twin>> = f
        .columns
        .iter()
        .map(|c| twins.get(&(f.table, c.clone())))
        .collect();
    let consistent = consistent_rows(
        table,
        &released[f.table],
        &f.columns,
        &columns,
        &through,
        &evaluated,
    )?;
    let components: Vec<ComponentFinding> = f
        .components
        .iter()
        .zip(evaluated.sizes())
        .map(|(c, (domain, satisfying))| ComponentFinding {
            columns: c.columns.iter().map(|n| format!("{table}.{n}")).collect(),
            domain,
            satisfying,
        })
        .collect();
    let finding = FactFinding {
        fact: f.text.clone(),
        table: table.clone(),
        domain: components.iter().map(|c| c.domain).sum(),
        satisfying: components.iter().map(|c| c.satisfying).sum(),
        components,
        consistent_rows: consistent.iter().filter(|&&c| c).count(),
        released_rows: consistent.len(),
    };
    Ok((finding, consistent))
}

/// The candidates' released keys (a composite key joined by `,`), when there are few enough
/// to list.
fn candidate_keys(
    plan: &Plan,
    entities: &RecordBatch,
    candidates: &[u32],
) -> Result<Option<Vec<String>>, AttackError> {
    let entity_table = &plan.tables[0];
    let keys = key_columns(entities, &entity_table.name, &entity_table.released_pk())?;
    // A key-less entity table (a single table) has no released key to name candidates by.
    let named = !keys.is_empty() && candidates.len() <= KEYS_LISTED;
    Ok(named.then(|| {
        candidates
            .iter()
            .map(|&e| {
                keys.iter()
                    .map(|&k| {
                        render_value(entities.column(k).as_ref(), e as usize)
                            .unwrap_or_else(|| "NULL".to_string())
                    })
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .collect()
    }))
}

/// The posteriors of every SENSITIVE column of the family, in plan and column order; none
/// without candidates.
fn sensitive_posteriors(
    plan: &Plan,
    released: &[RecordBatch],
    anatomy: Option<&(anatomy::SaSide, anatomy::Placement)>,
    family: &[Vec<Vec<u32>>],
    evidence: &[Evidence],
    candidates: &[u32],
) -> Result<Vec<Posterior>, AttackError> {
    let mut posteriors = Vec::new();
    // With no candidate there is no victim's record to infer anything from.
    let inferable = if candidates.is_empty() {
        &[][..]
    } else {
        &plan.tables[..]
    };
    for (ti, t) in inferable.iter().enumerate() {
        // A split table's second entry holds no rows once `join_parts` has run: its
        // posteriors are the main entry's.
        if t.part.as_ref().is_some_and(|p| p.null_side) {
            continue;
        }
        for c in &t.columns {
            if !matches!(c.role, ColumnRole::Sensitive { .. }) {
                continue;
            }
            let column = format!("{}.{}", t.name, c.name);
            // A released row's value, or under anatomy its slot's SA group.
            let mass: Box<dyn Fn(u32) -> anatomy::Mass> = match anatomy {
                Some((side, place)) => {
                    Box::new(move |r| side.mass(ti, &c.name, place.slot[ti][r as usize]))
                }
                None => {
                    let at = column_index(&released[ti], &t.name, &c.name)?;
                    let batch = &released[ti];
                    Box::new(move |r| {
                        vec![(render_value(batch.column(at).as_ref(), r as usize), 1.0)]
                    })
                }
            };
            posteriors.extend(posteriors_of(
                &column, ti, &*mass, family, evidence, candidates,
            ));
        }
    }
    Ok(posteriors)
}

/// Under anatomy, the candidates' groups (with their sizes, at most [`KEYS_LISTED`]) and
/// each rule's risk.
fn anatomy_findings(
    plan: &Plan,
    side: &anatomy::SaSide,
    place: &anatomy::Placement,
    family: &[Vec<Vec<u32>>],
    candidates: &[u32],
) -> AnatomyFindings {
    let mut sizes: HashMap<i64, usize> = HashMap::new();
    for &g in &place.group {
        *sizes.entry(g).or_default() += 1;
    }
    let mut groups: Vec<(i64, usize)> = candidates
        .iter()
        .map(|&e| place.group[e as usize])
        .map(|g| (g, sizes[&g]))
        .collect();
    groups.sort_unstable();
    groups.dedup();
    groups.truncate(KEYS_LISTED);
    AnatomyFindings {
        groups,
        rules: anatomy::rule_risks(plan, side, place, family, candidates),
    }
}

/// `rows_of[t][e]`: entity `e`'s released rows of table `t` (see [`link`]).
type RowsOf = Vec<Vec<Vec<u32>>>;

/// A split table's entries (plan::Part) seen as one table again, once each row is linked to
/// its entity: the second entry's rows are appended to the main entry's, and the second
/// entry holds none, so facts on the table and its posteriors read all of its rows.
fn join_parts(
    plan: &Plan,
    mut released: Vec<RecordBatch>,
    mut family: RowsOf,
) -> Result<(Vec<RecordBatch>, RowsOf), AttackError> {
    for (ti, t) in plan.tables.iter().enumerate() {
        let Some(main) = t.part.as_ref().filter(|p| p.null_side).map(|p| p.other) else {
            continue;
        };
        let offset = released[main].num_rows() as u32;
        let schema = released[main].schema();
        released[main] = arrow::compute::concat_batches(&schema, [&released[main], &released[ti]])
            .map_err(|e| AttackError::MissingTable {
                table: format!("{} ({e})", t.name),
            })?;
        released[ti] = RecordBatch::new_empty(released[ti].schema());
        let moved = std::mem::take(&mut family[ti]);
        for (rows, more) in family[main].iter_mut().zip(&moved) {
            rows.extend(more.iter().map(|r| r + offset));
        }
        family[ti] = vec![Vec::new(); moved.len()];
    }
    Ok((released, family))
}

/// Every family table as released, in plan order (an entry of a split table, plan::Part,
/// with the rows it holds).
async fn read_release(plan: &Plan, release: &Warehouse) -> Result<Vec<RecordBatch>, AttackError> {
    let mut out = Vec::with_capacity(plan.tables.len());
    for t in &plan.tables {
        let Some(meta) = release.table(&t.name) else {
            let table = t.name.clone();
            if release.table(&format!("{table}__f1")).is_some() {
                return Err(AttackError::Fragmented { table });
            }
            return Err(AttackError::MissingTable { table });
        };
        let batch = release.read_table(&meta.name, None, &[]).await?;
        let batch = match &t.part {
            Some(part) => {
                let keep =
                    part.mask(&batch, true)
                        .map_err(|column| AttackError::MissingColumn {
                            table: t.name.clone(),
                            column,
                        })?;
                arrow::compute::filter_record_batch(&batch, &keep).map_err(|e| {
                    AttackError::MissingTable {
                        table: format!("{} ({e})", t.name),
                    }
                })?
            }
            None => batch,
        };
        out.push(batch);
    }
    Ok(out)
}

/// Exact name first, else the unique case-insensitive match.
fn column_index(batch: &RecordBatch, table: &str, name: &str) -> Result<usize, AttackError> {
    let schema = batch.schema();
    let fields = schema.fields();
    if let Some(i) = fields.iter().position(|f| f.name() == name) {
        return Ok(i);
    }
    let mut hits = (0..fields.len()).filter(|&i| fields[i].name().eq_ignore_ascii_case(name));
    match (hits.next(), hits.next()) {
        (Some(i), None) => Ok(i),
        _ => Err(AttackError::MissingColumn {
            table: table.to_string(),
            column: name.to_string(),
        }),
    }
}

fn key_columns(
    batch: &RecordBatch,
    table: &str,
    names: &[String],
) -> Result<Vec<usize>, AttackError> {
    names
        .iter()
        .map(|n| column_index(batch, table, n))
        .collect()
}

/// The rendered key of a row; None when a part is NULL.
fn key_of(batch: &RecordBatch, cols: &[usize], row: usize) -> Option<Vec<String>> {
    cols.iter()
        .map(|&c| render_value(batch.column(c).as_ref(), row))
        .collect()
}

/// The released rows of every table grouped by entity: `rows_of[t][e]` are entity `e`'s rows
/// of table `t` (for the entity table, just `e`), found by following released FKs upward.
fn link(plan: &Plan, released: &[RecordBatch]) -> Result<Vec<Vec<Vec<u32>>>, AttackError> {
    let entities = released[0].num_rows();
    let mut entity_of: Vec<Vec<u32>> = vec![(0..entities as u32).collect()];
    for (ti, t) in plan.tables.iter().enumerate().skip(1) {
        let p = t
            .parent
            .expect("every family table but the entity table has a parent");
        let (child, parent) = (&released[ti], &released[p]);
        let fk = key_columns(child, &t.name, &t.released_fk)?;
        let referenced = key_columns(parent, &plan.tables[p].name, &t.released_parent_key)?;
        let mut index: HashMap<Vec<String>, (u32, usize)> = HashMap::new();
        for r in 0..parent.num_rows() {
            if let Some(k) = key_of(parent, &referenced, r) {
                index.entry(k).or_insert((r as u32, 0)).1 += 1;
            }
        }
        let mut owners = Vec::with_capacity(child.num_rows());
        let mut broken = Vec::new();
        for r in 0..child.num_rows() {
            let key = key_of(child, &fk, r);
            match key.as_ref().and_then(|k| index.get(k)) {
                Some(&(row, 1)) => owners.push(entity_of[p][row as usize]),
                _ => {
                    broken.push(key.map_or_else(|| "NULL".to_string(), |k| k.join(",")));
                    owners.push(u32::MAX);
                }
            }
        }
        if let Some(example) = broken.first() {
            return Err(AttackError::BrokenLink {
                table: t.name.clone(),
                fk: t.released_fk.join(", "),
                parent: plan.tables[p].name.clone(),
                count: broken.len(),
                example: format!("{} = {example}", t.released_fk.join(", ")),
            });
        }
        entity_of.push(owners);
    }
    Ok(entity_of
        .iter()
        .map(|owners| {
            let mut rows = vec![Vec::new(); entities];
            for (r, &e) in owners.iter().enumerate() {
                rows[e as usize].push(r as u32);
            }
            rows
        })
        .collect())
}

/// The leaves and hierarchy of every column some fact names, built once each.
async fn column_domains(
    plan: &Plan,
    source: &Warehouse,
    facts: &[Fact],
) -> Result<BTreeMap<(usize, String), ColumnDomain>, AttackError> {
    let mut out = BTreeMap::new();
    for f in facts {
        let t = &plan.tables[f.table];
        for c in &f.columns {
            let key = (f.table, c.clone());
            if out.contains_key(&key) {
                continue;
            }
            let qualified = format!("{}.{c}", t.name);
            let values = domain::distinct_values(source, &t.name, c).await?;
            let Some(hierarchy) = t.qi_columns().find(|(name, _)| name == c).map(|(_, h)| h) else {
                // Published unchanged: every value is its own leaf, released as itself.
                let def = flat(&values);
                out.insert(
                    key,
                    ColumnDomain::new(&qualified, values, &qualified, &def)?,
                );
                continue;
            };
            let def =
                plan.hierarchies
                    .get(hierarchy)
                    .ok_or_else(|| AttackError::UndefinedHierarchy {
                        column: qualified.clone(),
                        hierarchy: hierarchy.to_string(),
                    })?;
            out.insert(key, ColumnDomain::new(&qualified, values, hierarchy, def)?);
        }
    }
    Ok(out)
}

/// Which released rows of `table` are consistent with a fact, testing each component once
/// per distinct tuple of labels of its own columns.
fn consistent_rows(
    table: &str,
    batch: &RecordBatch,
    names: &[String],
    columns: &[&ColumnDomain],
    twins: &[Option<&Twin>],
    evaluated: &FactDomain<'_>,
) -> Result<Vec<bool>, AttackError> {
    let at: Vec<usize> = names
        .iter()
        .map(|n| column_index(batch, table, n))
        .collect::<Result<_, _>>()?;
    let twin_at: Vec<Option<(usize, &Twin)>> = twins
        .iter()
        .map(|t| {
            t.map(|t| column_index(batch, table, &t.column).map(|i| (i, t)))
                .transpose()
        })
        .collect::<Result<_, _>>()?;
    let mut tester = evaluated.tester();
    let mut out = Vec::with_capacity(batch.num_rows());
    for r in 0..batch.num_rows() {
        let mut nodes = Vec::with_capacity(at.len());
        for (((&c, d), name), twin) in at.iter().zip(columns).zip(names).zip(&twin_at) {
            // A twin published beside the QI tells its exact value: read it there.
            let exact = twin.and_then(|(i, t)| {
                let seen = render_value(batch.column(i).as_ref(), r)?;
                t.values.get(&seen).cloned()
            });
            let label = match exact {
                Some(value) => value,
                None => render_value(batch.column(c).as_ref(), r),
            };
            let node = d
                .node(label.as_deref())
                .ok_or_else(|| AttackError::UnknownLabel {
                    column: format!("{table}.{name}"),
                    label: label.map_or_else(|| "NULL".to_string(), |l| format!("'{l}'")),
                    hierarchy: d.hierarchy_name().to_string(),
                })?;
            nodes.push(node);
        }
        out.push(tester.consistent(&nodes));
    }
    Ok(out)
}

/// A hierarchy of one level for a column published unchanged: each distinct value a leaf
/// directly under `*`.
fn flat(values: &arrow::array::ArrayRef) -> crate::plan::HierarchyDef {
    crate::plan::HierarchyDef::Rows {
        rows: (0..values.len())
            .filter_map(|r| render_value(values.as_ref(), r))
            .map(|v| vec![v])
            .collect(),
        pos: crate::policy::Pos { line: 0, column: 0 },
    }
}

/// The columns the facts name that are not quasi-identifiers, as `table.column`.
fn outside_model(plan: &Plan, facts: &[Fact]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for f in facts {
        let t = &plan.tables[f.table];
        for c in &f.columns {
            let qi = t.qi_columns().any(|(name, _)| name == c);
            let name = format!("{}.{c}", t.name);
            if !qi && !out.contains(&name) {
                out.push(name);
            }
        }
    }
    out
}

/// A column published unchanged that determines a QI of its table in the source, and the QI
/// value each of its values comes with (`None`: NULL).
struct Twin {
    column: String,
    values: HashMap<String, Option<String>>,
}

/// For every QI a fact names, the first column of its table published unchanged in the
/// release that determines it in the source (see `init::twin_map`): a fact about the QI is
/// then evaluated on the value the twin tells, not on the generalized label.
async fn twins_of(
    plan: &Plan,
    source: &Warehouse,
    released: &[RecordBatch],
    facts: &[Fact],
) -> Result<BTreeMap<(usize, String), Twin>, AttackError> {
    let mut out = BTreeMap::new();
    for f in facts {
        let t = &plan.tables[f.table];
        let qis: Vec<&String> = f
            .columns
            .iter()
            .filter(|c| t.qi_columns().any(|(name, _)| name == *c))
            .collect();
        let qis: Vec<&String> = qis
            .into_iter()
            .filter(|q| !out.contains_key(&(f.table, (*q).clone())))
            .collect();
        if qis.is_empty() {
            continue;
        }
        let batch = source.table_in_source_order(&t.name)?;
        let array = |name: &str| {
            batch
                .schema()
                .index_of(name)
                .ok()
                .map(|i| batch.column(i).clone())
        };
        let unchanged = t.columns.iter().filter(|c| {
            matches!(
                c.role,
                ColumnRole::Sensitive { .. } | ColumnRole::Insensitive
            ) && released[f.table].schema().index_of(&c.name).is_ok()
        });
        let unchanged: Vec<&str> = unchanged.map(|c| c.name.as_str()).collect();
        for q in qis {
            let Some(qa) = array(q) else { continue };
            let found = unchanged.iter().find_map(|c| {
                let ca = array(c)?;
                let values = crate::init::twin_map(ca.as_ref(), qa.as_ref())?;
                Some(Twin {
                    column: (*c).to_string(),
                    values,
                })
            });
            if let Some(twin) = found {
                out.insert((f.table, q.clone()), twin);
            }
        }
    }
    Ok(out)
}

/// One fact's verdict on every released row of its table.
struct Evidence {
    table: usize,
    consistent: Vec<bool>,
}

/// For the facts `on` one child table: which of `rows` (an entity's rows of that table,
/// by position) each fact may be.
fn adjacency(rows: &[u32], evidence: &[Evidence], on: &[usize]) -> Vec<Vec<usize>> {
    on.iter()
        .map(|&f| {
            (0..rows.len())
                .filter(|&i| evidence[f].consistent[rows[i] as usize])
                .collect()
        })
        .collect()
}

/// Fact indices per table, in order.
fn facts_by_table(evidence: &[Evidence]) -> BTreeMap<usize, Vec<usize>> {
    let mut out: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (i, e) in evidence.iter().enumerate() {
        out.entry(e.table).or_default().push(i);
    }
    out
}

/// The entities consistent with every fact: entity-table facts all hold of the entity row;
/// the facts on each child table get distinct rows of the entity's tree (a matching).
fn candidates(family: &[Vec<Vec<u32>>], evidence: &[Evidence]) -> Vec<u32> {
    let by_table = facts_by_table(evidence);
    let entities = family.first().map_or(0, Vec::len);
    (0..entities as u32)
        .filter(|&e| {
            by_table.iter().all(|(&t, on)| {
                if t == 0 {
                    return on.iter().all(|&f| evidence[f].consistent[e as usize]);
                }
                let rows = &family[t][e as usize];
                matching::saturates(&adjacency(rows, evidence, on), rows.len())
            })
        })
        .collect()
}

/// The posteriors of one sensitive column of table `t` (module doc: which row, which weights).
fn posteriors_of(
    column: &str,
    t: usize,
    values: &dyn Fn(u32) -> anatomy::Mass,
    family: &[Vec<Vec<u32>>],
    evidence: &[Evidence],
    candidates: &[u32],
) -> Vec<Posterior> {
    let posterior = |subject, fact, picks: Vec<Vec<u32>>| {
        let (entities, distribution) = distribution(&picks, values);
        Posterior {
            column: column.to_string(),
            subject,
            fact,
            entities,
            distribution,
        }
    };
    if t == 0 {
        let picks = candidates.iter().map(|&e| vec![e]).collect();
        return vec![posterior(Subject::Entity, None, picks)];
    }
    let by_table = facts_by_table(evidence);
    let Some(on) = by_table.get(&t) else {
        let picks = candidates
            .iter()
            .map(|&e| family[t][e as usize].clone())
            .collect();
        return vec![posterior(Subject::AnyRow, None, picks)];
    };
    on.iter()
        .enumerate()
        .map(|(k, &f)| {
            let picks = candidates
                .iter()
                .map(|&e| {
                    let rows = &family[t][e as usize];
                    let adj = adjacency(rows, evidence, on);
                    matching::possible_rows(&adj, rows.len(), k)
                        .into_iter()
                        .map(|i| rows[i])
                        .collect()
                })
                .collect();
            posterior(Subject::FactRow, Some(f + 1), picks)
        })
        .collect()
}

/// Each non-empty pick (one per candidate) weighs 1, spread evenly over its rows; returns how
/// many picks contribute and the normalized distribution, most likely first.
/// A row's value is what `values` says of it: its released value with certainty, or under
/// anatomy a share of each value of its slot.
fn distribution(picks: &[Vec<u32>], values: &dyn Fn(u32) -> anatomy::Mass) -> (usize, Vec<Share>) {
    let mut mass: BTreeMap<Option<String>, f64> = BTreeMap::new();
    let mut entities = 0;
    for rows in picks.iter().filter(|p| !p.is_empty()) {
        entities += 1;
        for &r in rows {
            for (value, share) in values(r) {
                *mass.entry(value).or_default() += share / rows.len() as f64;
            }
        }
    }
    let mut shares: Vec<Share> = mass
        .into_iter()
        .map(|(value, m)| Share {
            value,
            probability: m / entities as f64,
        })
        .collect();
    shares.sort_by(|a, b| b.probability.total_cmp(&a.probability));
    (entities, shares)
}

impl Findings {
    /// The human-readable report `relanon attack` prints.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        self.write_overview(&mut out);
        self.write_facts(&mut out);
        self.write_candidates(&mut out);
        if self.candidates == 0 {
            return out;
        }
        if let Some(a) = &self.anatomy {
            self.write_anatomy(a, &mut out);
        }
        if self.posteriors.is_empty() {
            let _ = writeln!(out, "the family has no SENSITIVE column");
            return out;
        }
        let _ = writeln!(
            out,
            "what the adversary learns of the victim's sensitive values:"
        );
        for p in &self.posteriors {
            p.write(&mut out);
        }
        out
    }

    /// The verdict in one line, then what the release promises nothing against: facts
    /// outside the declared model, and twins that undo a generalization.
    fn write_overview(&self, out: &mut String) {
        let verdict = match self.candidates {
            0 => "none fits".to_string(),
            1 => "SINGLED OUT".to_string(),
            n => format!("hidden among {n}"),
        };
        let _ = writeln!(
            out,
            "summary: {} of {} released {} entities fit every fact: {verdict}",
            self.candidates, self.released_entities, self.entity
        );
        if !self.outside_model.is_empty() {
            let _ = writeln!(
                out,
                "note: the facts name {}, published unchanged: this adversary is outside the declared model, which covers knowledge of quasi-identifiers only, so the release promises nothing against them",
                self.outside_model.join(", ")
            );
        }
        if !self.twins.is_empty() {
            let _ = writeln!(
                out,
                "note: read through columns the release publishes unchanged beside a generalized quasi-identifier ({}): each of their values tells the quasi-identifier's exact value",
                self.twins.join("; ")
            );
        }
    }

    /// Each fact, numbered, with how many released rows of its table fit it.
    fn write_facts(&self, out: &mut String) {
        let _ = writeln!(out, "facts the adversary knows about one {}:", self.entity);
        for (i, f) in self.facts.iter().enumerate() {
            let _ = writeln!(
                out,
                "  {}. {}  ({} of {} released {} rows fit)",
                i + 1,
                f.fact,
                f.consistent_rows,
                f.released_rows,
                f.table
            );
        }
    }

    /// How many entities fit, by released key when few, and what that count means.
    fn write_candidates(&self, out: &mut String) {
        let keys = match &self.candidate_keys {
            Some(k) if !k.is_empty() => {
                let composite = k.iter().any(|key| key.contains(','));
                let shown: Vec<String> = k
                    .iter()
                    .map(|key| {
                        if composite {
                            format!("({key})")
                        } else {
                            key.clone()
                        }
                    })
                    .collect();
                format!(
                    " (released {} key{} {})",
                    self.entity_table,
                    plural(k.len()),
                    shown.join(", ")
                )
            }
            _ => String::new(),
        };
        let verb = if self.candidates == 1 { "fits" } else { "fit" };
        let _ = writeln!(
            out,
            "candidates: {} of {} released {} entities {verb} every fact{keys}",
            self.candidates, self.released_entities, self.entity
        );
        match self.candidates {
            0 => {
                let _ = writeln!(out, "no released {} fits: the victim is not in the release (suppressed, or never in the source), or a fact is not true of them", self.entity);
            }
            1 if self.anatomy.is_some() => {
                let _ = writeln!(out, "exactly one released {} fits every fact: anatomy publishes QI values exactly, so the victim's QI record is found; what hides their sensitive values is their group, below", self.entity);
            }
            1 => {
                let _ = writeln!(out, "SINGLED OUT: exactly one released {} fits every fact; the adversary has found the victim's record and reads its sensitive values below exactly", self.entity);
            }
            _ => {}
        }
    }

    /// Under anatomy: the candidates' groups and, per rule, whether its risk stays within p.
    fn write_anatomy(&self, a: &AnatomyFindings, out: &mut String) {
        let groups: Vec<String> = a
            .groups
            .iter()
            .map(|(g, n)| format!("{g} ({n} {}s)", self.entity))
            .collect();
        let _ = writeln!(
            out,
            "their group{}: {}",
            plural(groups.len()),
            groups.join(", ")
        );
        for r in &a.rules {
            let value = r.value.as_deref().unwrap_or("NULL");
            let verdict = if crate::fraction::Fraction::from_decimal(&r.p)
                .is_some_and(|p| r.probability * p.den as f64 <= p.num as f64 + 1e-9)
            {
                "within"
            } else {
                "ABOVE"
            };
            let _ = writeln!(
                out,
                "  rule {}: {} = {value} at least {} time(s) with probability {:.1}%, {verdict} p = {}",
                r.rule,
                r.column,
                r.m,
                100.0 * r.probability,
                r.p
            );
        }
    }
}

/// The plural ending of a count's noun.
fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

impl Posterior {
    /// The posterior as the human output shows it: whose value, then the most likely
    /// values, the rest folded into one line.
    fn write(&self, out: &mut String) {
        let whose = match (self.subject, self.fact) {
            (Subject::Entity, _) => format!(
                "over the {} candidate{}",
                self.entities,
                plural(self.entities)
            ),
            (Subject::FactRow, Some(f)) => format!(
                "of the row fact {f} describes, over the rows of the {} candidate{} that can be it",
                self.entities,
                plural(self.entities)
            ),
            _ => format!(
                "of a row of the victim's picked at random (no fact is about the table), over the {} candidate{} with such rows",
                self.entities,
                plural(self.entities)
            ),
        };
        let _ = writeln!(out, "  {} {whose}:", self.column);
        let width = self
            .distribution
            .iter()
            .take(SHARES_LISTED)
            .map(|s| s.value.as_deref().unwrap_or("NULL").len())
            .max()
            .unwrap_or(0);
        for s in self.distribution.iter().take(SHARES_LISTED) {
            let disclosed = if s.probability >= 1.0 - 1e-12 {
                "  (disclosed)"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "    {:<width$}  {:5.1}%{disclosed}",
                s.value.as_deref().unwrap_or("NULL"),
                100.0 * s.probability
            );
        }
        let rest = &self.distribution[self.distribution.len().min(SHARES_LISTED)..];
        if !rest.is_empty() {
            let mass: f64 = rest.iter().map(|s| s.probability).sum();
            let _ = writeln!(
                out,
                "    ... and {} more value{} ({:.1}% together; --json lists them all)",
                rest.len(),
                plural(rest.len()),
                100.0 * mass
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Released values read with certainty, as a generalized release has them.
    fn certain(values: &[Option<String>], r: u32) -> anatomy::Mass {
        vec![(values[r as usize].clone(), 1.0)]
    }

    fn evidence(table: usize, consistent: &[bool]) -> Evidence {
        Evidence {
            table,
            consistent: consistent.to_vec(),
        }
    }

    /// Three students; courses rows 0..5: student 0 has rows 0 ('Science') and 1
    /// ('Physics'), student 1 has row 2 ('Science'), student 2 has rows 3 ('Social') and 4
    /// ('Physics').
    fn family() -> Vec<Vec<Vec<u32>>> {
        vec![
            vec![vec![0], vec![1], vec![2]],
            vec![vec![0, 1], vec![2], vec![3, 4]],
        ]
    }

    #[test]
    fn child_facts_need_distinct_rows_and_entity_facts_share_the_root() {
        // "took Physics" fits 'Science' and 'Physics'; "took Math" fits 'Science' only.
        let physics = evidence(1, &[true, true, true, false, true]);
        let math = evidence(1, &[true, false, true, false, false]);
        assert_eq!(candidates(&family(), &[physics, math]), vec![0]);
        // Twice "took Math": only one 'Science' row per student.
        let math = || evidence(1, &[true, false, true, false, false]);
        assert!(candidates(&family(), &[math(), math()]).is_empty());
        // Entity-table facts all hold of the one root row.
        let born = evidence(0, &[true, true, false]);
        let city = evidence(0, &[false, true, true]);
        assert_eq!(candidates(&family(), &[born, city]), vec![1]);
        // No facts: every released entity.
        assert_eq!(candidates(&family(), &[]), vec![0, 1, 2]);
    }

    #[test]
    fn posteriors_weigh_candidates_equally_and_rows_by_the_matching() {
        let gpa: Vec<Option<String>> = ["3.7", "2.3", "3.1"]
            .iter()
            .map(|s| Some(s.to_string()))
            .collect();
        let grade: Vec<Option<String>> = ["A", "B", "C", "D", "E"]
            .iter()
            .map(|s| Some(s.to_string()))
            .collect();
        // "took Physics": students 0, 1 and 2 fit.
        let ev = vec![evidence(1, &[true, true, true, false, true])];
        let cands = candidates(&family(), &ev);
        assert_eq!(cands, vec![0, 1, 2]);
        let p = posteriors_of(
            "students.gpa",
            0,
            &|r| certain(&gpa, r),
            &family(),
            &ev,
            &cands,
        );
        assert_eq!(p.len(), 1);
        assert_eq!((p[0].subject, p[0].entities), (Subject::Entity, 3));
        assert!(p[0]
            .distribution
            .iter()
            .all(|s| (s.probability - 1.0 / 3.0).abs() < 1e-12));
        // The fact's row: student 0 could mean row 0 or 1 (1/6 each), student 1 row 2 (1/3),
        // student 2 row 4 (1/3).
        let p = posteriors_of(
            "courses.grade",
            1,
            &|r| certain(&grade, r),
            &family(),
            &ev,
            &cands,
        );
        assert_eq!((p[0].subject, p[0].fact), (Subject::FactRow, Some(1)));
        let got: BTreeMap<String, f64> = p[0]
            .distribution
            .iter()
            .map(|s| (s.value.clone().expect("non-null"), s.probability))
            .collect();
        let want = [
            ("A", 1.0 / 6.0),
            ("B", 1.0 / 6.0),
            ("C", 1.0 / 3.0),
            ("E", 1.0 / 3.0),
        ];
        assert_eq!(got.len(), want.len(), "{got:?}");
        for (v, w) in want {
            assert!((got[v] - w).abs() < 1e-12, "{v}: {got:?}");
        }
        // With "took Math" as well, student 0's Physics fact can only be row 1.
        let ev = vec![
            evidence(1, &[true, true, true, false, true]),
            evidence(1, &[true, false, true, false, false]),
        ];
        let cands = candidates(&family(), &ev);
        let p = posteriors_of(
            "courses.grade",
            1,
            &|r| certain(&grade, r),
            &family(),
            &ev,
            &cands,
        );
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].distribution.len(), 1);
        assert_eq!(p[0].distribution[0].value.as_deref(), Some("B"));
        assert_eq!(p[1].distribution[0].value.as_deref(), Some("A"));
        // A table no fact is about: a uniformly chosen row of each candidate.
        let ev = vec![evidence(0, &[true, false, true])];
        let cands = candidates(&family(), &ev);
        let p = posteriors_of(
            "courses.grade",
            1,
            &|r| certain(&grade, r),
            &family(),
            &ev,
            &cands,
        );
        assert_eq!((p[0].subject, p[0].entities), (Subject::AnyRow, 2));
        let total: f64 = p[0].distribution.iter().map(|s| s.probability).sum();
        assert!((total - 1.0).abs() < 1e-12);
        assert_eq!(p[0].distribution.len(), 4);
    }

    #[test]
    fn a_single_candidate_is_reported_as_singled_out() {
        let findings = Findings {
            entity: "student".into(),
            entity_table: "students".into(),
            released_entities: 4,
            facts: vec![FactFinding {
                fact: "courses.course = 'Math'".into(),
                table: "courses".into(),
                domain: 6,
                satisfying: 1,
                components: vec![ComponentFinding {
                    columns: vec!["courses.course".into()],
                    domain: 6,
                    satisfying: 1,
                }],
                consistent_rows: 1,
                released_rows: 11,
            }],
            candidates: 1,
            singled_out: true,
            candidate_keys: Some(vec!["3".into()]),
            posteriors: vec![Posterior {
                column: "students.gpa".into(),
                subject: Subject::Entity,
                fact: None,
                entities: 1,
                distribution: vec![Share {
                    value: Some("3.72".into()),
                    probability: 1.0,
                }],
            }],
            anatomy: None,
            outside_model: Vec::new(),
            twins: Vec::new(),
        };
        let text = findings.summary();
        assert!(
            text.starts_with("summary: 1 of 4 released student entities fit every fact: SINGLED OUT")
                && text.contains("candidates: 1 of 4 released student entities fits every fact (released students key 3)")
                && text.contains("3.72  100.0%  (disclosed)"),
            "{text}"
        );
        assert!(!text.contains("note:"), "{text}");
    }

    #[test]
    fn many_values_are_folded_and_notes_come_first() {
        let distribution: Vec<Share> = (0..20)
            .map(|i| Share {
                value: Some(format!("v{i}")),
                probability: 0.05,
            })
            .collect();
        let findings = Findings {
            entity: "patient".into(),
            entity_table: "patients".into(),
            released_entities: 40,
            facts: Vec::new(),
            candidates: 20,
            singled_out: false,
            candidate_keys: None,
            posteriors: vec![Posterior {
                column: "visits.cost".into(),
                subject: Subject::AnyRow,
                fact: None,
                entities: 20,
                distribution,
            }],
            anatomy: None,
            outside_model: vec!["visits.code".into()],
            twins: vec!["visits.code determines visits.reason".into()],
        };
        let text = findings.summary();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].ends_with("hidden among 20"), "{text}");
        assert!(
            lines[1].starts_with("note: the facts name visits.code"),
            "{text}"
        );
        assert!(
            lines[2].contains("visits.code determines visits.reason"),
            "{text}"
        );
        assert!(text.contains("v7 "), "{text}");
        assert!(!text.contains("v8 "), "{text}");
        assert!(
            text.contains("... and 12 more values (60.0% together"),
            "{text}"
        );
    }
}
