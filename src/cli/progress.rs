//! The terminal display of a command's [`Progress`]: a thread polls it and draws the phase
//! on stderr with `indicatif` (a spinner with the step; a bar while the algorithm counts a
//! stage), clearing each phase's line when the next starts, and prints the warnings the
//! command gives as they come. Drawn only for a person watching a terminal who did not pass
//! `--quiet`; warnings are printed in any case.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use relanon::progress::{Progress, Snapshot};

/// How often the display is redrawn.
const TICK: Duration = Duration::from_millis(100);

/// A command's `Progress` and the thread showing it. Dropping it stops the thread, clears
/// the last line and prints any warning not yet printed, so an error `main` reports next
/// is never printed beside a half-drawn bar, nor before the warnings that led to it.
pub struct Watch {
    progress: Arc<Progress>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Watch {
    /// Starts watching a new `Progress`, drawing it unless `quiet` or stderr is not a
    /// terminal (bars in a log file or a pipe are noise).
    pub fn start(quiet: bool) -> Watch {
        let show = !quiet && std::io::stderr().is_terminal();
        let progress = Arc::new(Progress::new());
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (progress, stop) = (progress.clone(), stop.clone());
            std::thread::Builder::new()
                .name("progress".to_string())
                .spawn(move || poll(&progress, &stop, show))
                .ok()
        };
        Watch {
            progress,
            stop,
            thread,
        }
    }

    /// The `Progress` to hand to the library.
    pub fn progress(&self) -> &Progress {
        &self.progress
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            // A display thread that panicked has nothing left to print.
            let _ = t.join();
        }
        for w in self.progress.take_warnings() {
            errln!("warning: {w}");
        }
    }
}

/// The display loop: one line per phase, redrawn every tick until `stop`.
fn poll(progress: &Progress, stop: &AtomicBool, show: bool) {
    let mut line = Line::hidden();
    loop {
        let stopping = stop.load(Ordering::Relaxed);
        if show {
            line.draw(progress);
        }
        for w in progress.take_warnings() {
            line.bar.suspend(|| errln!("warning: {w}"));
        }
        if stopping {
            break;
        }
        std::thread::park_timeout(TICK);
    }
    line.bar.finish_and_clear();
}

/// The line being drawn: its phase, and whether it is a bar (a stage is counted) or a
/// spinner.
struct Line {
    bar: ProgressBar,
    phase: &'static str,
    counting: bool,
}

impl Line {
    fn hidden() -> Line {
        Line {
            bar: ProgressBar::hidden(),
            phase: "",
            counting: false,
        }
    }

    /// Brings the line up to date with `progress`: a new phase (or a count starting within
    /// one) replaces it, keeping the elapsed time of a phase only while its style holds.
    fn draw(&mut self, progress: &Progress) {
        let (phase, step) = progress.current_phase();
        if phase.is_empty() {
            return;
        }
        let s = progress.snapshot();
        let counting = s.total > 0;
        if phase != self.phase || counting != self.counting {
            self.replace(phase, counting);
        }
        if counting {
            draw_count(&self.bar, &s);
        } else if self.bar.message() != step {
            self.bar.set_message(step);
        }
    }

    fn replace(&mut self, phase: &'static str, counting: bool) {
        self.bar.finish_and_clear();
        let template = if counting {
            "{spinner} {prefix:<11} {elapsed:>4} [{bar:25}] {pos}/{len} {wide_msg}"
        } else {
            "{spinner} {prefix:<11} {elapsed:>4} {wide_msg}"
        };
        let style = ProgressStyle::with_template(template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        self.bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
            .with_style(style)
            .with_prefix(phase);
        self.bar.enable_steady_tick(TICK);
        self.phase = phase;
        self.counting = counting;
    }
}

/// Puts a counter's snapshot on a bar (the count clamped: a new stage may start mid-read).
fn draw_count(bar: &ProgressBar, s: &Snapshot) {
    bar.set_length(s.total);
    bar.set_position(s.done.min(s.total));
    if bar.message() != s.label {
        bar.set_message(s.label.clone());
    }
}
