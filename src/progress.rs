//! How far a command has got, reported without I/O: the one channel from the library to
//! whoever watches it.
//!
//! The pipeline names the phase it is in and the step within it ([`Progress::phase`]) and
//! hands on what the data owner should know that does not stop the run
//! ([`Progress::warn`]); the algorithms count their work (entities visited or placed,
//! ClusTree's seeds tried) into the same [`Progress`]. Whoever wants to show it (the binary's
//! terminal display) reads the phase, a [`Snapshot`] of the count and the warnings from
//! another thread. Counting is one relaxed atomic add, so the hot loops pay nothing
//! measurable, and a `Progress` nobody reads is what tests, benches and library callers pass
//! (its warnings are then theirs to read with [`Progress::take_warnings`]).
//!
//! Work comes in stages (CDGH's visit loop, then its leftover merge; ClusTree's passes with
//! increasing chi; dMiRaCle's diversifying of classes). Each stage has its own label and total
//! and counts from zero, because how much a later stage must do is only known when it starts.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// A shared counter of work done in the current stage; see the module docs.
#[derive(Debug, Default)]
pub struct Progress {
    done: AtomicU64,
    total: AtomicU64,
    /// Changes once per stage, never per unit of work, so a lock is cheap here.
    label: Mutex<String>,
    /// The pipeline's phase (one of the report's timing names) and its step.
    phase: Mutex<(&'static str, &'static str)>,
    /// Warnings not yet taken, in the order given.
    warnings: Mutex<Vec<String>>,
}

/// What a reader sees at one moment. Taken without stopping the writer, so `done` can run a
/// unit ahead of a stage that was just started; a display clamps it to `total`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The stage, e.g. "clustering" or "pass 2 (chi 0.5)"; empty before the first stage.
    pub label: String,
    pub done: u64,
    /// Units the stage will count (0 before the first stage).
    pub total: u64,
}

impl Progress {
    /// A counter at zero with no stage, for callers that show nothing.
    pub fn new() -> Progress {
        Progress::default()
    }

    /// Starts a stage named `label` that will count `total` units; the count restarts at 0.
    pub fn stage(&self, label: &str, total: usize) {
        let mut current = self.label();
        current.clear();
        current.push_str(label);
        self.total.store(total as u64, Ordering::Relaxed);
        self.done.store(0, Ordering::Relaxed);
    }

    /// `n` more units of the current stage are done.
    pub fn advance(&self, n: usize) {
        self.done.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// The current stage and its count.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            label: self.label().clone(),
            done: self.done.load(Ordering::Relaxed),
            total: self.total.load(Ordering::Relaxed),
        }
    }

    /// Enters phase `name` (one of the report's timing names) at `step`. A new phase starts
    /// with no stage: the count that follows is the new phase's.
    pub fn phase(&self, name: &'static str, step: &'static str) {
        let mut phase = lock(&self.phase);
        if phase.0 != name {
            self.stage("", 0);
        }
        *phase = (name, step);
    }

    /// The current phase and step (`("", "")` before the first).
    pub fn current_phase(&self) -> (&'static str, &'static str) {
        *lock(&self.phase)
    }

    /// Something the data owner should know that does not stop the run.
    pub fn warn(&self, message: impl Into<String>) {
        lock(&self.warnings).push(message.into());
    }

    /// The warnings given since the last call, in order.
    pub fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.warnings))
    }

    fn label(&self) -> MutexGuard<'_, String> {
        lock(&self.label)
    }
}

/// The guarded value, even if a thread panicked while holding it: every value here is
/// replaced whole, so none can be left half-written.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stage_counts_from_zero_up_to_its_total() {
        let p = Progress::new();
        assert_eq!(p.snapshot().total, 0);
        p.stage("clustering", 3);
        p.advance(1);
        p.advance(2);
        assert_eq!(
            p.snapshot(),
            Snapshot {
                label: "clustering".to_string(),
                done: 3,
                total: 3
            }
        );
        p.stage("merging leftover clusters", 5);
        assert_eq!(
            p.snapshot(),
            Snapshot {
                label: "merging leftover clusters".to_string(),
                done: 0,
                total: 5
            }
        );
    }

    #[test]
    fn a_new_phase_starts_without_the_last_phases_count_and_warnings_are_taken_once() {
        let p = Progress::new();
        p.phase("cluster", "clustering");
        p.stage("clustering", 3);
        p.advance(3);
        p.phase("cluster", "still clustering");
        assert_eq!(p.snapshot().done, 3, "a new step keeps the phase's count");
        p.phase("verify", "checking");
        assert_eq!(p.current_phase(), ("verify", "checking"));
        assert_eq!((p.snapshot().label.as_str(), p.snapshot().total), ("", 0));
        p.warn("first");
        p.warn(String::from("second"));
        assert_eq!(p.take_warnings(), ["first", "second"]);
        assert!(p.take_warnings().is_empty());
    }

    #[test]
    fn threads_add_without_losing_counts() {
        let p = Progress::new();
        p.stage("clustering", 4000);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| (0..1000).for_each(|_| p.advance(1)));
            }
        });
        assert_eq!(p.snapshot().done, 4000);
    }
}
