//! A release checked a partition at a time ([`partition`] assigns the rows), with the
//! verdict of the whole check.
//!
//! Each partition is loaded like a whole release (both sides of its rows, with their
//! positions in the whole tables) and runs key atomicity, truthfulness, k-anonymity,
//! l-diversity and the collection of generalized labels; their violations merge into the
//! whole check's order ([`Check::merged`]). What needs every row runs once: the twins'
//! "determines" over the whole source (streamed) before the partitions, the labels search
//! with holders over the whole source (streamed) after them, the counts from the
//! assignment. Twins, when the release has any, take a second round of the partitions: which
//! columns are twins depends on every partition's labels.

use std::collections::HashMap;

use super::data::{self, Partition, TableData};
use super::hier::Hier;
use super::labels::{self, Generalized};
use super::partition::{self, Assignment, Layout};
use super::tasks::{self, PartFound, Tasks};
use super::{atomicity, Check, Checked, Keys, Verdict, VerifyError};
use super::{counts, kanon, ldiv, truth, twins, witness};
use crate::plan::Plan;
use crate::warehouse::Warehouse;

/// What every partition is checked with.
pub(super) struct Setting<'a> {
    pub plan: &'a Plan,
    pub source: &'a Warehouse,
    pub release: &'a Warehouse,
    pub keys: &'a Keys<'a>,
    pub hiers: &'a HashMap<String, Hier>,
    pub budget: usize,
    /// Where the partitions are checked when not here ([`tasks`]).
    pub tasks: Option<&'a dyn Tasks>,
}

/// What the partitions found, until it is merged.
#[derive(Default)]
struct Found {
    atomic: Vec<Check>,
    truth: Vec<Check>,
    kanon: Vec<Check>,
    ldiv: Vec<Check>,
    generalized: Vec<Vec<Generalized>>,
    /// Every class as (its first entity's position in the release, its size).
    classes: Vec<(usize, usize)>,
    entities: usize,
}

/// The verdict of `setting`'s release checked in `parts` partitions, after the checks
/// `first` (schema, declared roles) that read no rows; None where a partition's verdict
/// could differ from the whole check's (see [`partition`]): the caller checks it whole.
pub(super) async fn verify(
    setting: &Setting<'_>,
    parts: usize,
    first: [Check; 2],
    report: Option<&serde_json::Value>,
) -> Result<Option<Verdict>, VerifyError> {
    let plan = setting.plan;
    let determined = twins::determined(plan, setting.source)?;
    // A column a twin reveals is not what the partition is chosen by: classes counted with
    // it known must stay in one partition too.
    let mut revealed: Vec<Vec<String>> = vec![Vec::new(); plan.tables.len()];
    for (t, _, qi) in &determined {
        if let Some(list) = revealed.get_mut(*t) {
            list.push(qi.clone());
        }
    }
    let (source, release, keys) = (setting.source, setting.release, setting.keys);
    let layout = partition::assign(plan, source, release, keys, parts, &revealed).await?;
    let Layout::Parts(assigned) = layout else {
        return Ok(None);
    };
    let mut found = Found::default();
    match setting.tasks {
        Some(elsewhere) => {
            let Some(parts) = tasks::run(elsewhere, setting.budget, &assigned).await? else {
                return Ok(None);
            };
            parts.into_iter().for_each(|part| found.add(part));
        }
        // One after another, stopping at the first that must be checked whole.
        None => {
            for part in 0..assigned.parts {
                let Some(part) = check_part(setting, &assigned, part).await? else {
                    return Ok(None);
                };
                found.add(part);
            }
        }
    }
    let generalized = labels::merged(std::mem::take(&mut found.generalized));
    let mut twins = Check::new("twins");
    if !twins_round(setting, &assigned, &generalized, &determined, &mut twins).await? {
        return Ok(None);
    }
    let mut leaks = Check::new("labels");
    labels::check_streamed(plan, source, &generalized, &assigned.entity, &mut leaks)?;
    let mut counts = Check::new("counts");
    counts::check(&assigned.rows, report, &mut counts);
    let checked = match setting.tasks {
        Some(_) => Checked::Elsewhere(assigned.parts),
        None => Checked::Here(assigned.parts),
    };
    Ok(Some(verdict(
        plan,
        found,
        first,
        [leaks, twins, counts],
        checked,
    )))
}

/// The verdict from what the partitions found and the checks run once.
fn verdict(
    plan: &Plan,
    mut found: Found,
    [schema, fates]: [Check; 2],
    [leaks, twins, counts]: [Check; 3],
    checked: Checked,
) -> Verdict {
    let mut checks = vec![
        schema,
        fates,
        Check::merged("key atomicity", std::mem::take(&mut found.atomic)),
        Check::merged("truthfulness", std::mem::take(&mut found.truth)),
        Check::merged("k-anonymity", std::mem::take(&mut found.kanon)),
        leaks,
        twins,
        counts,
    ];
    if plan.params.model.diversity().is_some() {
        checks.push(Check::merged(
            "l-diversity",
            std::mem::take(&mut found.ldiv),
        ));
    }
    // The whole check lists classes by their first entity.
    found.classes.sort_unstable();
    Verdict {
        checks,
        entities_released: found.entities,
        equivalence_classes: found.classes.len(),
        smallest_ec: found.classes.iter().map(|&(_, size)| size).min(),
        class_sizes: found.classes.iter().map(|&(_, size)| size).collect(),
        checked,
    }
}

/// Partition `part`'s rows, linked and traced; None when a source row's parent is in no
/// row read (a released row under another parent than its source row's): the wording of
/// that finding needs the whole source.
async fn load(
    setting: &Setting<'_>,
    assigned: &Assignment,
    part: usize,
) -> Result<Option<(Vec<TableData>, Check)>, VerifyError> {
    let partition = Partition {
        rel: &assigned.rel,
        src: &assigned.src,
        pairs: &assigned.pairs,
        part: u16::try_from(part).map_err(|_| {
            VerifyError::Plan(format!("partition {part} is past the most there can be"))
        })?,
    };
    let (plan, source, release) = (setting.plan, setting.source, setting.release);
    let mut tables = data::load_rows(plan, source, release, Some(partition)).await?;
    if tables.iter().any(|t| t.src_unlinked > 0) {
        return Ok(None);
    }
    let mut truth = Check::new("truthfulness");
    let (keys, hiers) = (setting.keys, setting.hiers);
    // A hybrid release is checked whole (its budget is over every row): here strictly.
    truth::check(
        plan,
        &mut tables,
        keys,
        hiers,
        Some(partition),
        None,
        &mut truth,
    )?;
    Ok(Some((tables, truth)))
}

/// Runs the per-partition checks on partition `part`; None when it must be checked whole.
pub(super) async fn check_part(
    setting: &Setting<'_>,
    assigned: &Assignment,
    part: usize,
) -> Result<Option<PartFound>, VerifyError> {
    let plan = setting.plan;
    // Key atomicity reads no trace, so it may come after truthfulness here.
    let Some((tables, truth)) = load(setting, assigned, part).await? else {
        return Ok(None);
    };
    let mut atomic = Check::new("key atomicity");
    atomicity::check(plan, &tables, &mut atomic);
    let mut kanon = Check::new("k-anonymity");
    let classes = kanon::check(plan, &tables, &mut kanon);
    let ldiv = match plan.params.model.diversity() {
        Some(_) => {
            let mut ldiv = Check::new("l-diversity");
            let hint = witness::hint(plan, &tables, setting.keys);
            ldiv::check(plan, &tables, &classes, &hint, setting.budget, &mut ldiv)?;
            Some(ldiv)
        }
        None => None,
    };
    let entity = tables.first();
    let firsts = classes.groups.iter().filter_map(|members| {
        let first = *members.first()?;
        Some((entity?.rel_row(first), members.len()))
    });
    Ok(Some(PartFound {
        atomic,
        truth,
        kanon,
        ldiv,
        generalized: labels::generalized(&tables),
        classes: firsts.collect(),
        entities: classes.entities,
    }))
}

impl Found {
    /// Takes one partition's findings, in partition order.
    fn add(&mut self, part: PartFound) {
        self.atomic.push(part.atomic);
        self.truth.push(part.truth);
        self.kanon.push(part.kanon);
        self.ldiv.extend(part.ldiv);
        self.generalized.push(part.generalized);
        self.classes.extend(part.classes);
        self.entities += part.entities;
    }
}

/// The twins check over every partition, when some column the source says determines a QI
/// stands beside a generalized one; false when a partition must be checked whole.
async fn twins_round(
    setting: &Setting<'_>,
    assigned: &Assignment,
    generalized: &[Generalized],
    determined: &[(usize, String, String)],
    out: &mut Check,
) -> Result<bool, VerifyError> {
    let any = determined
        .iter()
        .any(|(t, _, qi)| generalized.iter().any(|g| g.table == *t && g.column == *qi));
    if !any {
        return Ok(true);
    }
    let k = setting.plan.params.model.min_group();
    let mut effects = Vec::new();
    let mut named = Vec::new();
    for part in 0..assigned.parts {
        let Some((tables, _)) = load(setting, assigned, part).await? else {
            return Ok(false);
        };
        named = twins::find_known(&tables, generalized, determined);
        if named.is_empty() {
            return Ok(true);
        }
        let classes = kanon::check(setting.plan, &tables, &mut Check::new("k-anonymity"));
        effects.push(twins::effects(&tables, &named, &classes, k));
    }
    let effects = twins::Effects::merged(effects, named.len());
    twins::word(&named, &effects, k, out);
    Ok(true)
}

/// Partition `part` of a release checked as a task ([`Tasks::run`] gave `shared`): the
/// per-partition checks of `release` against `source` under `plan`, as bytes to send back.
pub async fn check_partition(
    plan: &Plan,
    source: &Warehouse,
    release: &Warehouse,
    keys: Keys<'_>,
    shared: &[u8],
    part: usize,
) -> Result<Vec<u8>, VerifyError> {
    let (assigned, budget) = tasks::assignment(shared)?;
    if part >= assigned.parts {
        return Err(VerifyError::Elsewhere(format!(
            "partition {part} of a release checked in {}",
            assigned.parts
        )));
    }
    let hiers = super::hierarchies(plan)?;
    let setting = Setting {
        plan,
        source,
        release,
        keys: &keys,
        hiers: &hiers,
        budget,
        tasks: None,
    };
    tasks::answer(check_part(&setting, &assigned, part).await?)
}
