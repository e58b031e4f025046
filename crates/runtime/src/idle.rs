//! Where idle worker threads sleep, and how work wakes one of them.
//!
//! A worker that finds nothing to do announces itself (`sleeping += 1`),
//! re-checks for work, and only then blocks on a condition variable; a
//! thread that publishes work checks the count and wakes **one** sleeper
//! when there is one. Both sides put a `SeqCst` fence between their write
//! and their read, so at least one of them sees the other: either the
//! publisher sees the sleeper (and wakes it under the lock the sleeper
//! holds until it waits) or the sleeper's re-check sees the work. While
//! work is queued nobody sleeps, so publishing costs one fence and one
//! load — no system call per task.

use std::{
    sync::atomic::{fence, AtomicUsize, Ordering},
    time::Instant,
};

use parking_lot::{Condvar, Mutex};

/// Sleeping workers and their wake-up (see the module doc).
#[derive(Default)]
pub(crate) struct Idle {
    /// Workers that announced they sleep (some may still be re-checking).
    sleeping: AtomicUsize,
    lock: Mutex<()>,
    cv: Condvar,
}

impl Idle {
    /// Work was published (after the write that publishes it): wake one
    /// sleeper if there is one.
    pub fn notify_one(&self) {
        fence(Ordering::SeqCst);
        if self.sleeping.load(Ordering::Relaxed) > 0 {
            let _g = self.lock.lock();
            self.cv.notify_one();
        }
    }

    /// Something every worker must see happened (a stop): wake them all.
    pub fn notify_all(&self) {
        let _g = self.lock.lock();
        self.cv.notify_all();
    }

    /// Block until woken, unless `has_work()` — asked after announcing the
    /// sleep — finds work; returns false when `deadline` passed first.
    /// Wake-ups may be spurious: callers loop.
    pub fn sleep(&self, has_work: impl FnOnce() -> bool, deadline: Option<Instant>) -> bool {
        let mut g = self.lock.lock();
        self.sleeping.fetch_add(1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        let mut in_time = true;
        if !has_work() {
            match deadline {
                Some(d) => in_time = !self.cv.wait_until(&mut g, d).timed_out(),
                None => self.cv.wait(&mut g),
            }
        }
        self.sleeping.fetch_sub(1, Ordering::Relaxed);
        in_time
    }
}
