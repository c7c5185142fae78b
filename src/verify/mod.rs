//! `relanon verify`: an independent re-check of a release against its source and plan.
//!
//! Deliberately shares no code with the anonymization path (`hierarchy`, `forest`, `algo`,
//! `release`): it reads both warehouses, renders cells with the warehouse's one rendering
//! rule, and re-derives everything else itself (hierarchy ancestry, which source row each
//! released row stands for, entity trees and their QI-isomorphism classes), so a bug in the
//! anonymizer cannot hide behind the same bug here.
//!
//! Violations are data, not errors: [`verify`] returns a [`Verdict`] listing every broken
//! rule by table, row or EC; [`VerifyError`] is only for being unable to check at all.
//!
//! The checks, in order: schema (the plan's released shape); declared roles (`fates`: every
//! released column is a key it can trace or has a published role in the declarations' labels,
//! read on its own, never from the planner's roles); key atomicity (second FK paths
//! included); truthfulness (keyed rows traced by the rendered key through `keys::KeyIndex`,
//! which holds a hash per row, compares rendered keys in full on a hit, finds duplicate
//! released keys and resolves FKs to parent rows, built and probed on every thread; key-less
//! rows paired with source rows by a max-flow over classes of equal rows, `matching`);
//! k-anonymity by canonical forms of released trees; labels (no generalized QI cell of a
//! VALUES / CSV / SELECT hierarchy carries, as a token, a source value of its column or of
//! an IDENTIFIER column that fewer than k entities hold; a keyed table's identifiers are not
//! read with it but streamed by this check, keeping only the cells a label could hold);
//! twins (a column published unchanged that determines a generalized QI in the source,
//! counted as revealing it, must leave every class at least k strong); counts; under
//! `algorithm = 'hybrid'` (003), or `relocate` on another algorithm, the relocation budget
//! (`relocation`: truthfulness counts the QI cells that are not the source value or an ancestor instead of failing on each, and the
//! count must stay within the declared `p`%; a statistical variant single-dimensional, and its group sizes
//! passing Pearson's test, `pearson`); and,
//! under the l-diversity model, a
//! budgeted search for a diverse matching of each EC, which first checks the grouping
//! the key map proposes (`witness`: the anonymizer's representative vertex per released row, a
//! hint checked like any candidate, never trusted).
//!
//! A release larger than the memory verify is given is checked a partition at a time, in bounded
//! memory, with the verdict the whole check gives (`partition` assigns, `partitioned`
//! runs): entities go to partitions by a signature of their released tree that
//! QI-isomorphic trees share (`signature`), so every equivalence class lies in one; each
//! partition is read (both sides, rows in source order with their positions in the whole
//! tables) and runs key atomicity, truthfulness, k-anonymity, l-diversity and the
//! collection of generalized labels, and every violation carries its place in the whole
//! check's order ([`Check::merged`]). What needs every row
//! runs once, streamed: which columns determine a QI (twins), the holders of each value
//! (labels), the counts. Where a partition could word a finding otherwise (a repeated
//! released key, a key map sending two keys to one source key, a released row under
//! another parent than its source row's, a key-less entity table) the release is checked
//! whole, as are anatomies. `RELANON_VERIFY_PARTITIONS` forces the number (a test hook).
//!
//! Under the anatomy model (000 Ch. 3) QI values are published exactly and there is no
//! k-anonymity to check: schema, declared roles and truthfulness read QI cells as exact
//! values and the SA side's tables as released beside the family, and the `anatomy` family
//! replaces k-anonymity: the QI side's slot trees per group ("slots"), the SA side's shape
//! ("sa side"), l-diversity per slot, (p,m)-privacy per group and rule (v-v's binomial tail
//! decided exactly), the SA side's truth ("sa truthfulness") and, with a key map, lints for
//! SA keys that repeat the QI side's ("unlinkability"). The verdict's classes are then the
//! anatomy's groups. A vertical fragmentation (004, `algorithm = 'fragment'`) is checked
//! whole by `fragments`: its fragments' structure and order, every single-table check on
//! each fragment, and no join of the fragments on the class re-forming fewer than k rows.
//! It may use `plan`, `policy`, `keymap`, `warehouse` and `fraction`.

mod anatomy;
mod atomicity;
mod counts;
mod data;
mod fates;
mod fragments;
mod hier;
mod kanon;
mod keys;
mod labels;
mod ldiv;
mod matching;
mod partition;
mod partitioned;
mod pearson;
mod relocation;
mod schema;
mod selectivity;
mod signature;
mod tasks;
mod transport;
mod truth;
mod twins;
mod witness;

pub use partition::least_memory;
pub use partitioned::check_partition;
pub use tasks::Tasks;

#[cfg(test)]
mod tests;

use std::collections::HashMap;

use crate::keymap::KeyMap;
use crate::plan::Plan;
use crate::warehouse::{Warehouse, WarehouseError};

/// How released keys relate to source keys.
#[derive(Debug, Clone, Copy)]
pub enum Keys<'a> {
    /// `keys = 'preserve'`: released keys are the source keys.
    Preserved,
    /// Pseudonymized keys, traced back through the map anonymize kept.
    Map(&'a KeyMap),
}

/// The outcome of one verification: every check, passed or not.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Verdict {
    pub checks: Vec<Check>,
    pub entities_released: usize,
    pub equivalence_classes: usize,
    pub smallest_ec: Option<usize>,
    /// Entities per class, the classes as the release shows them: distinct released trees
    /// (two clusters an algorithm made apart but released alike are one class), or under
    /// anatomy its groups. The report counts these.
    #[serde(skip)]
    pub class_sizes: Vec<usize>,
    /// How the release was read: whole, or in partitions here or as tasks elsewhere.
    #[serde(skip)]
    pub checked: Checked,
}

/// How a verdict's release was read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Checked {
    /// Every row at once.
    #[default]
    Whole,
    /// A partition at a time, here.
    Here(usize),
    /// A partition a task, by [`Tasks`].
    Elsewhere(usize),
}

/// One named rule and what broke it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Check {
    pub name: &'static str,
    /// The first [`KEPT_VIOLATIONS`] violations, each naming its table and row or EC.
    pub violations: Vec<String>,
    /// Every violation found, including those not kept.
    pub violation_count: usize,
    /// Where each kept violation stands in the whole check's order, so the checks of
    /// partitions merge into the order one check of everything records ([`Check::merged`]).
    #[serde(skip)]
    places: Vec<Place>,
    /// The place the next violation is recorded at.
    #[serde(skip)]
    place: Place,
    /// How many violations were recorded at a place every partition shares.
    #[serde(skip)]
    shared: usize,
}

/// A violation's position in the whole check's order: what the check loops over, outermost
/// first (a table, a phase, a row of the whole table, ...), compared in that order.
/// `shared`: a finding every partition makes alike (about the key map or the plan, not a
/// row), kept from the first partition only.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
struct Place {
    at: [u64; 4],
    shared: bool,
}

/// A broken release can produce a violation per row; past this many only the count grows.
pub const KEPT_VIOLATIONS: usize = 1000;

/// How many violations [`Verdict::summary`] lists per check.
const SHOWN_VIOLATIONS: usize = 5;

impl Check {
    fn new(name: &'static str) -> Check {
        Check {
            name,
            violations: Vec::new(),
            violation_count: 0,
            places: Vec::new(),
            place: Place::default(),
            shared: 0,
        }
    }

    /// Records the next violations at `at` (see [`Place`]): positions in the whole release,
    /// never in a partition of it.
    fn at(&mut self, at: [usize; 4]) {
        self.place = Place {
            at: at.map(|n| n as u64),
            shared: false,
        };
    }

    /// Records the next violations at `at` as findings every partition makes alike.
    fn shared_at(&mut self, at: [usize; 4]) {
        self.at(at);
        self.place.shared = true;
    }

    fn record(&mut self, violation: impl Into<String>) {
        self.violation_count += 1;
        self.shared += usize::from(self.place.shared);
        if self.violations.len() < KEPT_VIOLATIONS {
            self.violations.push(violation.into());
            self.places.push(self.place);
        }
    }

    /// Appends what `later` found after what `self` found, as if one check had recorded both
    /// in turn (`later` keeps its own first violations, so the kept ones are the same).
    fn absorb(&mut self, later: Check) {
        self.violation_count += later.violation_count;
        self.shared += later.shared;
        let room = KEPT_VIOLATIONS.saturating_sub(self.violations.len());
        self.violations
            .extend(later.violations.into_iter().take(room));
        self.places.extend(later.places.into_iter().take(room));
    }

    /// One check of the whole release from the same check of each partition: the
    /// violations in the whole check's order (each partition records in that order, so its
    /// first kept are the first of the whole among its own), shared findings once.
    fn merged(name: &'static str, parts: Vec<Check>) -> Check {
        let mut out = Check::new(name);
        let mut all: Vec<(Place, String)> = Vec::new();
        for (i, part) in parts.into_iter().enumerate() {
            let again = if i == 0 { 0 } else { part.shared };
            out.violation_count += part.violation_count - again;
            out.shared += part.shared - again;
            all.extend(
                part.places
                    .into_iter()
                    .zip(part.violations)
                    .filter(|(place, _)| i == 0 || !place.shared),
            );
        }
        // Stable: equal places keep the order one partition recorded them in.
        all.sort_by_key(|(place, _)| place.at);
        for (place, violation) in all.into_iter().take(KEPT_VIOLATIONS) {
            out.violations.push(violation);
            out.places.push(place);
        }
        out
    }

    pub fn passed(&self) -> bool {
        self.violation_count == 0
    }
}

impl Verdict {
    pub fn passed(&self) -> bool {
        self.checks.iter().all(Check::passed)
    }

    /// How the release was read, for a line that says the verdict: empty when whole, else
    /// `, in N partitions` (with `on the cluster` when each was a task there).
    pub fn read_as(&self) -> String {
        match self.checked {
            Checked::Whole => String::new(),
            Checked::Here(n) => format!(", in {n} partitions"),
            Checked::Elsewhere(n) => format!(", in {n} partitions on the cluster"),
        }
    }

    /// The check named `name`, if it ran.
    pub fn check(&self, name: &str) -> Option<&Check> {
        self.checks.iter().find(|c| c.name == name)
    }

    /// One line per check, with the first few violations of a failed one under it, then
    /// the EC statistics.
    pub fn summary(&self) -> String {
        let mut s = String::new();
        for c in &self.checks {
            if c.passed() {
                s.push_str(&format!("PASS {}\n", c.name));
                continue;
            }
            let noun = if c.violation_count == 1 {
                "violation"
            } else {
                "violations"
            };
            s.push_str(&format!("FAIL {}: {} {noun}\n", c.name, c.violation_count));
            for v in c.violations.iter().take(SHOWN_VIOLATIONS) {
                s.push_str(&format!("  - {v}\n"));
            }
            let shown = c.violations.len().min(SHOWN_VIOLATIONS);
            if c.violation_count > shown {
                s.push_str(&format!("  ... and {} more\n", c.violation_count - shown));
            }
        }
        let smallest = self
            .smallest_ec
            .map_or_else(|| "-".to_string(), |n| n.to_string());
        s.push_str(&format!(
            "entities released: {}, equivalence classes: {}, smallest EC: {smallest}\n",
            self.entities_released, self.equivalence_classes
        ));
        s
    }
}

/// Being unable to verify (as opposed to finding violations).
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("the {side} has no table '{table}', which the plan lists: point verify at the {side} that belongs to these declarations")]
    MissingTable { side: &'static str, table: String },
    #[error("table '{table}' in the {side} has no key column '{column}', so its rows cannot be linked: point verify at a complete {side} (re-run anonymize if it is the release)")]
    MissingKeyColumn {
        side: &'static str,
        table: String,
        column: String,
    },
    #[error("cannot read table '{table}' from the {side}: {source}")]
    Read {
        side: &'static str,
        table: String,
        source: WarehouseError,
    },
    #[error("the key map has no entry for table '{table}', whose released rows carry pseudonymous keys: pass the key map written by the anonymize run that made this release")]
    KeyMapMissingTable { table: String },
    #[error("the key map gives table '{table}' key columns ({found}) but its primary key is ({expected}): pass the key map written by the anonymize run that made this release")]
    KeyMapColumns {
        table: String,
        found: String,
        expected: String,
    },
    #[error("the plan is inconsistent: {0}; re-plan from the declarations")]
    Plan(String),
    /// The partitions checked elsewhere ([`Tasks`]) could not be checked: whoever ran them
    /// says why.
    #[error("{0}")]
    Elsewhere(String),
}

fn hierarchies(plan: &Plan) -> Result<HashMap<String, hier::Hier>, VerifyError> {
    for t in &plan.tables {
        for (column, h) in t.qi_columns() {
            if !plan.hierarchies.contains_key(h) {
                return Err(VerifyError::Plan(format!(
                    "column '{}.{column}' uses hierarchy '{h}', which the plan does not define",
                    t.name
                )));
            }
        }
    }
    Ok(plan
        .hierarchies
        .iter()
        .map(|(name, def)| (name.clone(), hier::Hier::compile(def)))
        .collect())
}

/// Re-checks `release` against `source` under `plan`: schema, key atomicity, truthfulness,
/// k-anonymity of QI-isomorphism classes, labels without rare values, twins of generalized
/// QIs, row counts (against `report` when given) and,
/// under the l-diversity model, l-diversity of every class; under anatomy the anatomy family
/// in place of k-anonymity. A large release is checked a partition at a time
/// ([`partition`]): as many as keep it within the `memory` it is given (bytes), with the
/// verdict the whole check gives.
pub async fn verify(
    plan: &Plan,
    source: &Warehouse,
    release: &Warehouse,
    keys: Keys<'_>,
    report: Option<&serde_json::Value>,
    memory: u64,
) -> Result<Verdict, VerifyError> {
    verify_on(plan, source, release, keys, report, memory, None).await
}

/// [`verify`] with the partitions of a large release checked by `tasks` where given (a
/// cluster's executors), in at least [`Tasks::least`] of them: the same verdict.
pub async fn verify_on(
    plan: &Plan,
    source: &Warehouse,
    release: &Warehouse,
    keys: Keys<'_>,
    report: Option<&serde_json::Value>,
    memory: u64,
    tasks: Option<&dyn Tasks>,
) -> Result<Verdict, VerifyError> {
    let split = Split::Memory(memory);
    let budget = ldiv::BUDGET;
    verify_in(plan, source, release, keys, report, budget, split, tasks).await
}

/// How a release is split into partitions.
#[derive(Clone, Copy)]
enum Split {
    /// As many as the memory verify may hold calls for ([`partitions`]).
    Memory(u64),
    /// This many (a test's).
    #[cfg(test)]
    Parts(usize),
}

/// [`verify`] with the l-diversity search's per-EC step budget as a parameter, so tests can
/// run it out. Checks in one partition (the whole check) and in 2, 3 and 7 partitions, and
/// asserts the verdicts (or errors) are the same: every fixture routed through here tests
/// partitioning.
#[cfg(test)]
async fn verify_with_budget(
    plan: &Plan,
    source: &Warehouse,
    release: &Warehouse,
    keys: Keys<'_>,
    report: Option<&serde_json::Value>,
    budget: usize,
) -> Result<Verdict, VerifyError> {
    let shown = |v: &Result<Verdict, VerifyError>| match v {
        Ok(v) => format!(
            "{}\n{:?}",
            serde_json::to_string_pretty(v).unwrap_or_default(),
            v.class_sizes
        ),
        Err(e) => format!("error: {e}"),
    };
    let one = Split::Parts(1);
    let whole = verify_in(plan, source, release, keys, report, budget, one, None).await;
    for parts in [2, 3, 7] {
        let n = Split::Parts(parts);
        let split = verify_in(plan, source, release, keys, report, budget, n, None).await;
        assert_eq!(
            shown(&split),
            shown(&whole),
            "the verdict in {parts} partitions differs from the whole check's"
        );
    }
    // The partitions checked as tasks: their assignment and findings through the wire.
    let local = tests::Local {
        plan,
        source,
        release,
        keys,
    };
    let n = Split::Parts(3);
    let elsewhere = verify_in(plan, source, release, keys, report, budget, n, Some(&local)).await;
    assert_eq!(
        shown(&elsewhere),
        shown(&whole),
        "the verdict of partitions checked as tasks differs from the whole check's"
    );
    whole
}

/// A test hook: the number of partitions verify checks a release in, in place of the one
/// its size and memory give ([`partition::count`]), so the integration tests can check a
/// small release in several through the binary. Read here only.
const PARTITIONS_VAR: &str = "RELANON_VERIFY_PARTITIONS";

/// How many partitions `release` is checked in: [`PARTITIONS_VAR`] when set to a number,
/// else by the released and source rows and the `memory` verify may hold.
fn partitions(plan: &Plan, source: &Warehouse, release: &Warehouse, memory: u64) -> usize {
    if let Some(n) = std::env::var(PARTITIONS_VAR)
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
    {
        return n.max(1);
    }
    let mut names: Vec<&str> = plan.tables.iter().map(|t| t.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    let count =
        |wh: &Warehouse| -> usize { names.iter().map(|n| wh.row_count(n).unwrap_or(0)).sum() };
    let released = count(release);
    partition::count(released, released + count(source), memory)
}

/// [`verify`] in the partitions `split` says, checked by `tasks` where given.
#[allow(clippy::too_many_arguments)]
async fn verify_in(
    plan: &Plan,
    source: &Warehouse,
    release: &Warehouse,
    keys: Keys<'_>,
    report: Option<&serde_json::Value>,
    budget: usize,
    split: Split,
    tasks: Option<&dyn Tasks>,
) -> Result<Verdict, VerifyError> {
    let hiers = hierarchies(plan)?;
    // A fragmentation's release is its fragments, checked whole.
    if let Some(declared) = fragments::declared(plan) {
        return fragments::verify(plan, (source, release), &declared, keys, &hiers, budget).await;
    }

    let mut schema = Check::new("schema");
    schema::check(plan, source, release, &mut schema).await?;

    let mut fates = Check::new("declared roles");
    fates::check(plan, release, &mut fates);

    // Anatomy's groups are checked whole.
    let parts = match split {
        Split::Memory(memory) => {
            let least = tasks.map_or(1, Tasks::least);
            partitions(plan, source, release, memory).max(least)
        }
        #[cfg(test)]
        Split::Parts(n) => n,
    };
    // A hybrid's budget of untruthful cells is over every row: it is checked whole.
    let whole_only = plan.params.model.anatomy().is_some() || relocation::declared(plan).is_some();
    if parts > 1 && !whole_only {
        let setting = partitioned::Setting {
            plan,
            source,
            release,
            keys: &keys,
            hiers: &hiers,
            budget,
            tasks,
        };
        let first = [schema.clone(), fates.clone()];
        if let Some(verdict) = partitioned::verify(&setting, parts, first, report).await? {
            return Ok(verdict);
        }
    }
    whole(
        plan,
        source,
        release,
        keys,
        report,
        budget,
        &hiers,
        [schema, fates],
    )
    .await
}

/// The whole check: every family table of both sides held at once.
#[allow(clippy::too_many_arguments)]
async fn whole(
    plan: &Plan,
    source: &Warehouse,
    release: &Warehouse,
    keys: Keys<'_>,
    report: Option<&serde_json::Value>,
    budget: usize,
    hiers: &HashMap<String, hier::Hier>,
    [schema, fates]: [Check; 2],
) -> Result<Verdict, VerifyError> {
    let mut tables = data::load(plan, source, release).await?;

    let mut atomic = Check::new("key atomicity");
    atomicity::check(plan, &tables, &mut atomic);

    let mut truth = Check::new("truthfulness");
    let hybrid = relocation::declared(plan);
    let allowed = hybrid.map(|d| relocation::budget(d.p, relocation::qi_cells(&tables)));
    let untruthful = truth::check(plan, &mut tables, &keys, hiers, None, allowed, &mut truth)?;

    if plan.params.model.anatomy().is_some() {
        // An anatomy publishes QI values exactly: there is no k-anonymity of the QI side to
        // check, and its groups are what the verdict counts.
        let mut counts = Check::new("counts");
        counts::check(&counts::rows(&tables), report, &mut counts);
        let (family, groups) = anatomy::check(plan, release, &tables, &keys).await?;
        let mut checks = vec![schema, fates, atomic, truth, counts];
        checks.extend(family);
        return Ok(Verdict {
            checks,
            entities_released: groups.entities,
            equivalence_classes: groups.groups,
            smallest_ec: groups.smallest,
            class_sizes: Vec::new(),
            checked: Checked::Whole,
        });
    }

    let mut kanon = Check::new("k-anonymity");
    let classes = kanon::check(plan, &tables, &mut kanon);

    // Both leak checks start from the generalized cells; a release without any costs one
    // scan of its QI cells here.
    let generalized = labels::generalized(&tables);
    let mut leaks = Check::new("labels");
    labels::check(plan, source, &tables, &generalized, &mut leaks).await?;
    let mut twins = Check::new("twins");
    twins::check(plan, &tables, &generalized, &classes, &mut twins);

    let mut counts = Check::new("counts");
    counts::check(&counts::rows(&tables), report, &mut counts);

    let mut checks = vec![schema, fates, atomic, truth, kanon, leaks, twins, counts];
    if let Some(declared) = hybrid {
        let mut budget = Check::new("relocation budget");
        relocation::check(declared, &tables, &untruthful, &mut budget);
        checks.push(budget);
        if let Some(alpha) = declared.alpha {
            let mut one = Check::new("single-dimensional");
            relocation::single_dimensional(&tables, hiers, &mut one);
            // Groups are named by one level per column: without one, the test has no groups.
            let test = one.violations.is_empty().then(|| {
                let mut test = Check::new("relocation test");
                pearson::check(alpha, &tables, hiers, &mut test);
                test
            });
            checks.push(one);
            checks.extend(test);
        }
    }
    if plan.params.model.diversity().is_some() {
        let mut ldiv = Check::new("l-diversity");
        let hint = witness::hint(plan, &tables, &keys);
        ldiv::check(plan, &tables, &classes, &hint, budget, &mut ldiv)?;
        checks.push(ldiv);
    }

    Ok(Verdict {
        checks,
        entities_released: classes.entities,
        equivalence_classes: classes.classes,
        smallest_ec: classes.smallest,
        class_sizes: classes.groups.iter().map(Vec::len).collect(),
        checked: Checked::Whole,
    })
}
