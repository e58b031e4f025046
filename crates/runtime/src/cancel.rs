//! Stopping a run from outside: a signal handler, a watchdog, a test.

use std::sync::{atomic::Ordering, Arc, Weak};

use parking_lot::Mutex;

use crate::scheduler::Shared;

/// Stops the runs of a [`crate::Runtime`] from another thread.
///
/// The CLI hands one to its SIGINT/SIGTERM handler. [`CancelToken::cancel`]
/// stops the current run as a timeout does — no new task or kernel starts,
/// running kernels are not waited for, unfinished tasks get hang
/// snapshots — and the run returns [`crate::RuntimeError::Cancelled`] with
/// the reason, which is also the dump's `reason`. Cancellation is sticky:
/// a run started on a cancelled token stops at once. Clones share the state.
///
/// ```
/// use simpler_runtime::{CancelToken, OrchArgs, Runtime, RuntimeConfig, RuntimeError};
/// let token = CancelToken::new();
/// let rt = Runtime::new(
///     RuntimeConfig { gm_bytes: 1 << 20, cancel: token.clone(), ..Default::default() },
///     vec![],
/// ).unwrap();
/// token.cancel("interrupted by SIGINT");
/// let e = rt.run(&OrchArgs::new(), |_o, _a| Ok(())).unwrap_err();
/// assert_eq!(e, RuntimeError::Cancelled("interrupted by SIGINT".into()));
/// ```
#[derive(Clone, Default)]
pub struct CancelToken {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    reason: Mutex<Option<String>>,
    /// The run in progress, if any.
    run: Mutex<Option<Weak<Shared>>>,
}

impl std::fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelToken")
            .field("reason", &*self.inner.reason.lock())
            .finish()
    }
}

impl CancelToken {
    /// A token nobody has cancelled.
    pub fn new() -> CancelToken {
        CancelToken::default()
    }

    /// Stop the current run (and every later one) with `reason`; the first
    /// reason wins. Returns at once: the run stops on its own threads.
    pub fn cancel(&self, reason: impl Into<String>) {
        let reason = {
            let mut r = self.inner.reason.lock();
            r.get_or_insert_with(|| reason.into()).clone()
        };
        let run = self.inner.run.lock().as_ref().and_then(Weak::upgrade);
        if let Some(shared) = run {
            shared.cancel(reason);
        }
    }

    /// The reason, once cancelled.
    pub fn reason(&self) -> Option<String> {
        self.inner.reason.lock().clone()
    }

    /// True once [`CancelToken::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.inner.reason.lock().is_some()
    }

    /// Tasks of the run in progress, `(completed, submitted so far)`, or
    /// `None` between runs: what a progress display polls (the token is
    /// the one handle on a run that other threads hold).
    pub fn run_progress(&self) -> Option<(u64, u64)> {
        let run = self.inner.run.lock().as_ref().and_then(Weak::upgrade)?;
        // Completed first: every task it counts was submitted before.
        let done = run.counters.completed.load(Ordering::Acquire);
        Some((done, run.submitted.load(Ordering::Acquire).max(done)))
    }

    /// Route cancellation to the run `shared` (stopping it at once when
    /// the token is already cancelled).
    pub(crate) fn attach(&self, shared: &Arc<Shared>) {
        *self.inner.run.lock() = Some(Arc::downgrade(shared));
        if let Some(r) = self.reason() {
            shared.cancel(r);
        }
    }

    /// The run is over.
    pub(crate) fn detach(&self) {
        *self.inner.run.lock() = None;
    }
}
