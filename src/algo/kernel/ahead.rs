//! Work run ahead of its turn: items `0..len` are computed by up to `threads` threads (the
//! caller's among them) and handed to the caller strictly in index order. ClusTree's seeds
//! are processed in order, each seeing the F its predecessors left; their CreateClusters are
//! computed ahead against an older F and checked at their turn (see `clustree`), which keeps
//! both cores busy on whole CreateClusters instead of handing each step's few candidates to a
//! sleeping worker and back.

use std::ops::ControlFlow;
use std::sync::{Condvar, Mutex, MutexGuard};

/// What the threads share: which items are claimed, how far ahead they may go, and the
/// results not yet consumed.
struct State<R> {
    /// The first item nobody has claimed.
    next: usize,
    /// Items from here on may not be claimed yet.
    limit: usize,
    /// Results not yet taken by the consumer, item `i` at `i % window`: only the `window`
    /// items from the one being consumed on may be claimed.
    done: Vec<Option<R>>,
    stop: bool,
    /// A thread panicked computing an item, whose result will never come.
    abandoned: bool,
}

struct Shared<R> {
    state: Mutex<State<R>>,
    changed: Condvar,
    len: usize,
    window: usize,
}

impl<R> Shared<R> {
    fn lock(&self) -> MutexGuard<'_, State<R>> {
        // A thread that panicked while holding the lock left the state consistent (every
        // update is a single assignment), and its panic reaches the caller through the scope.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Claims the next item if it may be claimed.
    fn claim(&self, state: &mut State<R>) -> Option<usize> {
        (state.next < state.limit.min(self.len)).then(|| {
            state.next += 1;
            state.next - 1
        })
    }

    /// Computes the claimed item `i` without holding the lock, stores its result and tells
    /// the others; returns the lock.
    fn compute<'s>(
        &'s self,
        state: MutexGuard<'s, State<R>>,
        i: usize,
        work: &(impl Fn(usize) -> R + Sync),
    ) -> MutexGuard<'s, State<R>> {
        drop(state);
        let watch = Abandon(self);
        let r = work(i);
        std::mem::forget(watch);
        let mut state = self.lock();
        state.done[i % self.window] = Some(r);
        self.changed.notify_all();
        state
    }

    /// A helper: claims and computes items until told to stop.
    fn help(&self, work: &(impl Fn(usize) -> R + Sync)) {
        let mut state = self.lock();
        loop {
            if state.stop {
                return;
            }
            state = match self.claim(&mut state) {
                Some(i) => self.compute(state, i, work),
                None => self.changed.wait(state).unwrap_or_else(|e| e.into_inner()),
            };
        }
    }

    /// The result of item `i`, computing items (`i` or later ones) while it is not ready.
    /// Items before `i` have been taken.
    fn take(&self, i: usize, work: &(impl Fn(usize) -> R + Sync)) -> R {
        let mut state = self.lock();
        state.limit = i + self.window;
        self.changed.notify_all();
        loop {
            assert!(
                !state.abandoned,
                "a thread computing ahead panicked (its panic follows)"
            );
            // Items i + 1 .. i + window share no slot with i, and no later one is claimed.
            if let Some(r) = state.done[i % self.window].take() {
                return r;
            }
            state = match self.claim(&mut state) {
                Some(j) => self.compute(state, j, work),
                None => self.changed.wait(state).unwrap_or_else(|e| e.into_inner()),
            };
        }
    }

    fn stop(&self) {
        self.lock().stop = true;
        self.changed.notify_all();
    }
}

/// Tells the others when `work` panics: the consumer would otherwise wait for its result
/// forever, and the panic would never reach the caller.
struct Abandon<'s, R>(&'s Shared<R>);

impl<R> Drop for Abandon<'_, R> {
    fn drop(&mut self) {
        self.0.lock().abandoned = true;
        self.0.stop();
    }
}

/// Stops the helpers however the consumer ends (a break, the last item, a panic), so that
/// the scope can join them.
struct StopOnDrop<'s, R>(&'s Shared<R>);

impl<R> Drop for StopOnDrop<'_, R> {
    fn drop(&mut self) {
        self.0.stop();
    }
}

/// Computes `work(i)` for `i` in `0..len` on up to `threads` threads, at most `window` items
/// past the one being consumed, and calls `consume(i, work(i))` on the calling thread in
/// order of `i` until it breaks (its value is returned) or the items run out (`None`). The
/// caller's thread computes items too while the next one is not ready; with one thread every
/// item is computed just before it is consumed.
pub fn in_order<R: Send, B>(
    len: usize,
    threads: usize,
    window: usize,
    work: impl Fn(usize) -> R + Sync,
    mut consume: impl FnMut(usize, R) -> ControlFlow<B>,
) -> Option<B> {
    let window = window.max(1);
    let shared = Shared {
        state: Mutex::new(State {
            next: 0,
            limit: 0,
            done: (0..window).map(|_| None).collect(),
            stop: false,
            abandoned: false,
        }),
        changed: Condvar::new(),
        len,
        window,
    };
    std::thread::scope(|scope| {
        let _stop = StopOnDrop(&shared);
        for _ in 1..threads.max(1) {
            scope.spawn(|| shared.help(&work));
        }
        for i in 0..len {
            let r = shared.take(i, &work);
            if let ControlFlow::Break(b) = consume(i, r) {
                return Some(b);
            }
        }
        None
    })
}

#[cfg(test)]
mod tests {
    use super::in_order;
    use std::ops::ControlFlow;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn results_arrive_in_order_whatever_the_threads() {
        for threads in [1, 2, 4] {
            let mut seen = Vec::new();
            let end = in_order(
                100,
                threads,
                8,
                |i| i * i,
                |i, r| {
                    seen.push((i, r));
                    ControlFlow::<()>::Continue(())
                },
            );
            assert_eq!(end, None);
            let expected: Vec<(usize, usize)> = (0..100).map(|i| (i, i * i)).collect();
            assert_eq!(seen, expected, "{threads} threads");
        }
    }

    #[test]
    fn a_break_stops_early_and_the_window_bounds_the_work_ahead() {
        for threads in [1, 3] {
            let computed = AtomicUsize::new(0);
            let end = in_order(
                1000,
                threads,
                5,
                |i| {
                    computed.fetch_add(1, Ordering::Relaxed);
                    i
                },
                |i, r| {
                    assert_eq!(i, r);
                    if i == 10 {
                        ControlFlow::Break(i * 2)
                    } else {
                        ControlFlow::Continue(())
                    }
                },
            );
            assert_eq!(end, Some(20));
            // Items 0..=10 were consumed; nothing at or past 10 + 5 was claimed.
            let n = computed.load(Ordering::Relaxed);
            assert!((11..=15).contains(&n), "{threads} threads computed {n}");
        }
    }

    #[test]
    fn a_panic_ahead_reaches_the_caller_instead_of_a_wait() {
        let run = std::panic::catch_unwind(|| {
            in_order(
                100,
                2,
                4,
                |i| {
                    // The caller claims item 0 first; while it computes it, the helper
                    // claims item 1, which fails.
                    if i == 0 {
                        std::thread::sleep(std::time::Duration::from_millis(50));
                    }
                    assert!(i != 1, "item 1 fails");
                    i
                },
                |_, _| ControlFlow::<()>::Continue(()),
            )
        });
        assert!(run.is_err());
    }

    #[test]
    fn one_thread_computes_each_item_just_before_its_turn() {
        let computed = AtomicUsize::new(0);
        in_order(
            50,
            1,
            10,
            |i| {
                computed.fetch_add(1, Ordering::Relaxed);
                i
            },
            |i, _| {
                assert_eq!(computed.load(Ordering::Relaxed), i + 1);
                ControlFlow::<()>::Continue(())
            },
        );
    }
}
