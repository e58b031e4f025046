//! Progress bars for long work (DESIGN §7): drawn with `indicatif` on
//! stderr, only when stderr is a terminal and `--quiet` was not given, and
//! only once an operation has run for [`show_after`] — a quick command
//! never flashes a bar. Piped or redirected output never carries one.
//!
//! Library crates report progress through callbacks (`done, total`); this
//! module is the one place that draws.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long an operation runs before its bar appears: 400 ms, or
/// `SIMPLER_PROGRESS_AFTER_MS` (0 draws every bar at once; the tests use
/// it to see bars of quick operations).
fn show_after() -> Duration {
    static AFTER: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
    *AFTER.get_or_init(|| {
        let ms = std::env::var("SIMPLER_PROGRESS_AFTER_MS").ok();
        Duration::from_millis(ms.and_then(|m| m.parse().ok()).unwrap_or(400))
    })
}

static QUIET: AtomicBool = AtomicBool::new(false);

/// `--quiet`: no progress bar for the rest of the process.
pub(crate) fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// True when bars may be drawn: stderr is a terminal and not `--quiet`.
pub(crate) fn enabled() -> bool {
    !QUIET.load(Ordering::Relaxed) && std::io::stderr().is_terminal()
}

/// One bar (a known total) or spinner (an unknown one). Cleared when
/// finished or dropped, so it never stays in the terminal's scrollback.
#[derive(Debug)]
pub(crate) struct Progress {
    bar: ProgressBar,
    start: Instant,
    on: bool,
}

impl Progress {
    /// A bar over `total` `unit`s, labelled `what`.
    pub(crate) fn bar(what: &str, total: u64, unit: &str) -> Progress {
        let style = ProgressStyle::with_template(&format!(
            "{{msg}} [{{bar:30}}] {{human_pos}}/{{human_len}} {unit} ({{elapsed}}, eta {{eta}})"
        ))
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        Progress::with(
            ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden()),
            style,
            what,
        )
    }

    /// A spinner counting `unit`s of unknown total, labelled `what`.
    pub(crate) fn spinner(what: &str, unit: &str) -> Progress {
        let style = ProgressStyle::with_template(&format!(
            "{{spinner}} {{msg}}: {{human_pos}} {unit} ({{elapsed}})"
        ))
        .unwrap_or_else(|_| ProgressStyle::default_spinner());
        Progress::with(
            ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden()),
            style,
            what,
        )
    }

    fn with(bar: ProgressBar, style: ProgressStyle, what: &str) -> Progress {
        bar.set_style(style);
        bar.set_message(what.to_string());
        Progress {
            bar,
            start: Instant::now(),
            on: enabled(),
        }
    }

    /// `done` units so far (and a new total, when it is known only now).
    pub(crate) fn set(&self, done: u64, total: Option<u64>) {
        if let Some(t) = total {
            self.bar.set_length(t);
        }
        self.bar.set_position(done);
        self.show_when_due();
    }

    /// Draw from now on once the operation has run long enough.
    fn show_when_due(&self) {
        if self.on && self.bar.is_hidden() && self.start.elapsed() >= show_after() {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
            // Drawn now (tick is a no-op once the steady ticker runs).
            self.bar.tick();
            self.bar.enable_steady_tick(Duration::from_millis(100));
        }
    }

    /// Run `f` (which prints to the terminal) with the bar out of the way.
    pub(crate) fn suspend<T>(&self, f: impl FnOnce() -> T) -> T {
        self.bar.suspend(f)
    }

    /// Erase the bar.
    pub(crate) fn finish(&self) {
        self.bar.finish_and_clear();
    }

    /// A closure for library calls that report `(done, total)`.
    pub(crate) fn callback(&self) -> impl FnMut(u64, u64) + '_ {
        move |done, total| self.set(done, Some(total))
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if !self.bar.is_finished() {
            self.bar.finish_and_clear();
        }
    }
}

/// Run `work` while a spinner polls `poll` every 100 ms for the units done
/// so far; the spinner is cleared when `work` returns.
pub(crate) fn while_running<T>(
    what: &str,
    unit: &str,
    poll: impl Fn() -> u64 + Sync,
    work: impl FnOnce() -> T,
) -> T {
    if !enabled() {
        return work();
    }
    let p = Progress::spinner(what, unit);
    let done = AtomicBool::new(false);
    let out = std::thread::scope(|s| {
        let poller = s.spawn(|| {
            while !done.load(Ordering::Acquire) {
                p.set(poll(), None);
                std::thread::park_timeout(Duration::from_millis(100));
            }
        });
        let out = work();
        done.store(true, Ordering::Release);
        poller.thread().unpark();
        out
    });
    p.finish();
    out
}

/// The status line of a long multi-step command (a bench): one spinner
/// for the process, shown at once on a terminal, its label set by
/// [`status`] from wherever the steps run.
static STATUS: std::sync::Mutex<Option<ProgressBar>> = std::sync::Mutex::new(None);

/// Show a spinner labelled `what` until the returned guard is dropped.
pub(crate) fn status_line(what: &str) -> StatusGuard {
    if enabled() {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{spinner} {prefix}: {msg} ({elapsed})")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.set_prefix(what.to_string());
        bar.enable_steady_tick(Duration::from_millis(100));
        *STATUS.lock().unwrap_or_else(|p| p.into_inner()) = Some(bar);
    }
    StatusGuard(())
}

/// Clears the status line when dropped.
#[derive(Debug)]
pub(crate) struct StatusGuard(());

impl Drop for StatusGuard {
    fn drop(&mut self) {
        if let Some(bar) = STATUS.lock().unwrap_or_else(|p| p.into_inner()).take() {
            bar.finish_and_clear();
        }
    }
}

/// The step a long command is at (no-op without a status line).
pub(crate) fn status(step: &str) {
    if let Some(bar) = STATUS.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
        bar.set_message(step.to_string());
    }
}

/// A labelled spinner for work that reports no counts: the step it is at.
#[derive(Debug)]
pub(crate) struct Steps(ProgressBar);

impl Steps {
    /// The step the work is at now.
    pub(crate) fn step(&self, step: &str) {
        self.0.set_message(step.to_string());
    }
}

/// Run `work` under a spinner labelled `what` showing the step `work` is
/// at and the time taken; drawn once the work has run for [`show_after`]
/// (on a terminal, not `--quiet`), cleared when it returns. `work` must
/// not print: print what it returns.
pub(crate) fn in_steps<T>(what: &str, first: &str, work: impl FnOnce(&Steps) -> T) -> T {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
    bar.set_style(
        ProgressStyle::with_template("{spinner} {prefix}: {msg} ({elapsed})")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.set_prefix(what.to_string());
    let steps = Steps(bar);
    steps.step(first);
    if !enabled() {
        return work(&steps);
    }
    let show = || {
        steps.0.set_draw_target(ProgressDrawTarget::stderr());
        // Drawn now (tick is a no-op once the steady ticker runs).
        steps.0.tick();
        steps.0.enable_steady_tick(Duration::from_millis(100));
    };
    let done = AtomicBool::new(show_after().is_zero());
    if done.load(Ordering::Relaxed) {
        show();
    }
    let start = Instant::now();
    let out = std::thread::scope(|s| {
        let shower = s.spawn(|| {
            while !done.load(Ordering::Acquire) && start.elapsed() < show_after() {
                std::thread::park_timeout(show_after().saturating_sub(start.elapsed()));
            }
            if !done.load(Ordering::Acquire) {
                show();
            }
        });
        let out = work(&steps);
        done.store(true, Ordering::Release);
        shower.thread().unpark();
        out
    });
    steps.0.finish_and_clear();
    out
}
