//! A large release's partitions checked as tasks elsewhere (a cluster's executors) instead
//! of one after another here.
//!
//! The checker is the same: the client assigns the rows ([`partition`]) and sends the
//! assignment as bytes ([`Shared`]); each task opens the same plan, warehouses and key map
//! and runs `partitioned::check_partition`, the per-partition checks run here otherwise;
//! its findings come back as bytes and merge in partition order exactly as the partitions
//! checked here merge. So a verdict is the same wherever its partitions ran. What needs
//! every row (which columns determine a QI, the labels' holders, the counts, the twins'
//! second round) stays with the client, as does the whole check when the assignment
//! declines. Whoever runs the tasks knows nothing of the checks: it moves bytes.
//!
//! [`partition`]: super::partition

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::labels::Generalized;
use super::partition::Assignment;
use super::{Check, Place, VerifyError};

/// Runs a release's partition checks elsewhere.
#[async_trait]
pub trait Tasks: Sync {
    /// The fewest partitions worth sending: a release the memory would check whole is still
    /// split this many ways (the cluster's shards, each sized for an executor).
    fn least(&self) -> usize;

    /// Runs one task per partition `0..parts`, each calling `verify::check_partition` with
    /// `shared` and its number; their answers in partition order. An error says which task
    /// failed and why, as a user should read it.
    async fn run(&self, shared: Vec<u8>, parts: usize) -> Result<Vec<Vec<u8>>, String>;
}

/// What one partition found (`partitioned::check_part`): the checks of its rows, its
/// generalized labels and its classes.
pub(super) struct PartFound {
    pub atomic: Check,
    pub truth: Check,
    pub kanon: Check,
    pub ldiv: Option<Check>,
    pub generalized: Vec<Generalized>,
    /// Every class as (its first entity's position in the release, its size).
    pub classes: Vec<(usize, usize)>,
    pub entities: usize,
}

/// What every task needs beside the plan, the warehouses and the key map: where each row
/// goes ([`Assignment`]'s rows, without what only the client reads) and the l-diversity
/// search's budget.
#[derive(Deserialize)]
struct Shared {
    parts: usize,
    rel: Vec<Vec<u16>>,
    src: Vec<Vec<u16>>,
    pairs: Vec<Option<Vec<u16>>>,
    budget: usize,
}

/// [`Shared`] as the client sends it, borrowing the assignment: the same fields in the same
/// order, so it reads back as a `Shared`.
#[derive(Serialize)]
struct SharedOut<'a> {
    parts: usize,
    rel: &'a [Vec<u16>],
    src: &'a [Vec<u16>],
    pairs: &'a [Option<Vec<u16>>],
    budget: usize,
}

/// A [`Check`] as it travels: everything [`Check::merged`] reads.
#[derive(Serialize, Deserialize)]
struct CheckWire {
    violations: Vec<String>,
    count: usize,
    places: Vec<([u64; 4], bool)>,
    shared: usize,
}

impl CheckWire {
    fn of(check: Check) -> CheckWire {
        CheckWire {
            violations: check.violations,
            count: check.violation_count,
            places: check.places.iter().map(|p| (p.at, p.shared)).collect(),
            shared: check.shared,
        }
    }

    fn check(self, name: &'static str) -> Check {
        let mut check = Check::new(name);
        check.violations = self.violations;
        check.violation_count = self.count;
        check.places = self
            .places
            .into_iter()
            .map(|(at, shared)| Place { at, shared })
            .collect();
        check.shared = self.shared;
        check
    }
}

/// A task's answer: its partition's findings, or None where the partition must be checked
/// whole (the client then checks the release whole).
#[derive(Serialize, Deserialize)]
struct Answer {
    found: Option<FoundWire>,
}

#[derive(Serialize, Deserialize)]
struct FoundWire {
    atomic: CheckWire,
    truth: CheckWire,
    kanon: CheckWire,
    ldiv: Option<CheckWire>,
    generalized: Vec<Generalized>,
    classes: Vec<(usize, usize)>,
    entities: usize,
}

impl FoundWire {
    fn of(found: PartFound) -> FoundWire {
        FoundWire {
            atomic: CheckWire::of(found.atomic),
            truth: CheckWire::of(found.truth),
            kanon: CheckWire::of(found.kanon),
            ldiv: found.ldiv.map(CheckWire::of),
            generalized: found.generalized,
            classes: found.classes,
            entities: found.entities,
        }
    }

    fn found(self) -> PartFound {
        PartFound {
            atomic: self.atomic.check("key atomicity"),
            truth: self.truth.check("truthfulness"),
            kanon: self.kanon.check("k-anonymity"),
            ldiv: self.ldiv.map(|c| c.check("l-diversity")),
            generalized: self.generalized,
            classes: self.classes,
            entities: self.entities,
        }
    }
}

fn cbor<T: Serialize>(value: &T) -> Result<Vec<u8>, VerifyError> {
    let mut out = Vec::new();
    ciborium::into_writer(value, &mut out)
        .map_err(|e| VerifyError::Elsewhere(format!("encoding a partition's check: {e}")))?;
    Ok(out)
}

fn uncbor<T: for<'de> Deserialize<'de>>(bytes: &[u8], what: &str) -> Result<T, VerifyError> {
    ciborium::from_reader(bytes).map_err(|e| {
        VerifyError::Elsewhere(format!(
            "{what} could not be read ({e}): the client and every task must be the same build of relanon"
        ))
    })
}

/// The partitions of `assigned` checked by `tasks`: each one's findings in partition order,
/// or None when one must be checked whole.
pub(super) async fn run(
    tasks: &dyn Tasks,
    budget: usize,
    assigned: &Assignment,
) -> Result<Option<Vec<PartFound>>, VerifyError> {
    let shared = cbor(&SharedOut {
        parts: assigned.parts,
        rel: &assigned.rel,
        src: &assigned.src,
        pairs: &assigned.pairs,
        budget,
    })?;
    let answers = tasks
        .run(shared, assigned.parts)
        .await
        .map_err(VerifyError::Elsewhere)?;
    if answers.len() != assigned.parts {
        return Err(VerifyError::Elsewhere(format!(
            "{} of {} partitions' checks came back: the release was not verified",
            answers.len(),
            assigned.parts
        )));
    }
    let mut found = Vec::with_capacity(answers.len());
    for bytes in answers {
        let answer: Answer = uncbor(&bytes, "a partition's findings")?;
        match answer.found {
            Some(part) => found.push(part.found()),
            None => return Ok(None),
        }
    }
    Ok(Some(found))
}

/// A task's `shared` bytes read back: the assignment (without what only the client reads)
/// and the l-diversity search's budget.
pub(super) fn assignment(shared: &[u8]) -> Result<(Assignment, usize), VerifyError> {
    let shared: Shared = uncbor(shared, "the partitions' assignment")?;
    let assigned = Assignment {
        parts: shared.parts,
        rel: shared.rel,
        src: shared.src,
        entity: Vec::new(),
        rows: Vec::new(),
        pairs: shared.pairs,
    };
    Ok((assigned, shared.budget))
}

/// A task's answer as bytes: its partition's findings, or None where the partition must be
/// checked whole.
pub(super) fn answer(found: Option<PartFound>) -> Result<Vec<u8>, VerifyError> {
    cbor(&Answer {
        found: found.map(FoundWire::of),
    })
}
