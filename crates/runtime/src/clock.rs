//! The timeline's clock: cheap stamps during the run, nanoseconds after.
//!
//! A recorded run stamps five to eight events per task. With
//! `clock_gettime` (what `Instant` reads) each stamp costs 30 ns on a
//! quiet machine and 65–85 ns on a loaded one (this machine type: a
//! 2-CPU VM); the time-stamp counter costs about 12 ns either way. On a
//! flood of tiny tasks that is the difference between the recording's
//! cost and half of it (`simpler bench swimlane`; figures in
//! docs/swimlane.md). So where the kernel itself keeps time with the
//! counter (its clocksource is `tsc`: invariant and synchronised across
//! CPUs, as the kernel verified), stamps are raw counter values, turned
//! into nanoseconds after the run by a line through two points, each a
//! counter value and an `Instant` taken together: one at the run's
//! start, one when the recording is taken. Anywhere else stamps are
//! nanoseconds from `Instant`, and the conversion is the identity.

use std::time::Instant;

/// Where stamps come from; chosen once per process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// The time-stamp counter.
    Tsc,
    /// `Instant`, as nanoseconds since the epoch.
    Instant,
}

fn source() -> Source {
    static SOURCE: std::sync::OnceLock<Source> = std::sync::OnceLock::new();
    *SOURCE.get_or_init(|| {
        let path = "/sys/devices/system/clocksource/clocksource0/current_clocksource";
        let tsc = cfg!(target_arch = "x86_64")
            && std::fs::read_to_string(path).is_ok_and(|s| s.trim() == "tsc");
        match tsc {
            true => Source::Tsc,
            false => Source::Instant,
        }
    })
}

#[cfg(target_arch = "x86_64")]
fn tsc() -> u64 {
    // SAFETY: RDTSC reads the time-stamp counter into registers; it touches
    // no memory and exists on every x86_64 CPU. Only its meaning needs
    // care, which `source` settles (an invariant, synchronised counter).
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
fn tsc() -> u64 {
    unreachable!("the time-stamp counter is used on x86_64 only")
}

/// A counter value and the `Instant` it was read at, to within 1 µs: a
/// pair whose reads were split by a preemption is taken again (a few
/// times at most), so the line through two pairs is off by no more than
/// 2 µs over the run.
fn anchor() -> (Instant, u64) {
    let mut best = None;
    for _ in 0..8 {
        let a = Instant::now();
        let t = tsc();
        let b = Instant::now();
        let gap = b - a;
        if gap.as_nanos() < 1000 {
            return (a + gap / 2, t);
        }
        if best.is_none_or(|(g, _, _)| gap < g) {
            best = Some((gap, a + gap / 2, t));
        }
    }
    best.map(|(_, i, t)| (i, t)).expect("eight tries")
}

/// A run's clock: started with the run, read by every recording thread.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    source: Source,
    epoch: Instant,
    /// The counter at `epoch` (`Source::Tsc`).
    tsc0: u64,
}

impl Clock {
    /// A clock whose zero is now.
    pub fn start() -> Clock {
        Clock::start_with(source())
    }

    /// [`Clock::start`] from a given source (tests take both).
    fn start_with(source: Source) -> Clock {
        let (epoch, tsc0) = match source {
            Source::Tsc => anchor(),
            Source::Instant => (Instant::now(), 0),
        };
        Clock {
            source,
            epoch,
            tsc0,
        }
    }

    /// A stamp: at least 1 (0 means "none" in the records); turned into
    /// nanoseconds by [`Clock::scale`].
    #[inline]
    pub fn stamp(&self) -> u64 {
        match self.source {
            // Saturating: a counter read a hair behind the epoch's on
            // another CPU is the start, not 584 years later.
            Source::Tsc => tsc().saturating_sub(self.tsc0).max(1),
            Source::Instant => (self.epoch.elapsed().as_nanos() as u64).max(1),
        }
    }

    /// How to turn this run's stamps into nanoseconds since its start
    /// (call once the run is over: the longer the line, the truer).
    pub fn scale(&self) -> Scale {
        let ns_per_tick = match self.source {
            Source::Instant => 1.0,
            Source::Tsc => {
                let (now, t) = anchor();
                let ticks = t.saturating_sub(self.tsc0).max(1);
                (now - self.epoch).as_nanos() as f64 / ticks as f64
            }
        };
        Scale { ns_per_tick }
    }
}

/// Stamps → nanoseconds since the run's start.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scale {
    ns_per_tick: f64,
}

impl Scale {
    /// Nanoseconds of `stamp`; 0 ("none") stays 0, any other is ≥ 1.
    pub fn ns(&self, stamp: u64) -> u64 {
        match stamp {
            0 => 0,
            t => ((t as f64 * self.ns_per_tick) as u64).max(1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_become_the_nanoseconds_instant_measures() {
        // The counter only where this machine's OS keeps time with it.
        let mut sources = vec![Source::Instant];
        sources.extend((source() == Source::Tsc).then_some(Source::Tsc));
        for s in sources {
            stamps_measure_what_instant_measures(Clock::start_with(s));
        }
    }

    fn stamps_measure_what_instant_measures(c: Clock) {
        let i0 = Instant::now();
        let a = c.stamp();
        let i1 = Instant::now();
        while i1.elapsed().as_micros() < 3000 {
            std::hint::spin_loop();
        }
        let i2 = Instant::now();
        let b = c.stamp();
        let i3 = Instant::now();
        let s = c.scale();
        assert!(a >= 1 && b > a);
        let d = (s.ns(b) - s.ns(a)) as f64;
        // Between what Instant saw inside and around the two stamps, give
        // or take the line's error (2 µs per anchor over the span).
        let (inner, outer) = ((i2 - i1).as_nanos() as f64, (i3 - i0).as_nanos() as f64);
        let slack = 0.002 * outer + 5000.0;
        assert!(
            d >= inner - slack && d <= outer + slack,
            "{d} ns, Instant saw {inner}..{outer}"
        );
        assert_eq!(s.ns(0), 0);
    }
}
