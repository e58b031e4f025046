//! A one-line progress display on stderr for long reads (DESIGN §7): shown
//! only on a terminal, at most ten times a second, and erased when done,
//! so piped or redirected output never carries it.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// Progress of records read out of a known total.
pub struct Progress {
    out: Option<Box<dyn Write + Send>>,
    label: &'static str,
    last: Option<Instant>,
    shown: bool,
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Progress")
            .field("on", &self.out.is_some())
            .finish()
    }
}

impl Progress {
    /// No display.
    pub fn off() -> Progress {
        Progress {
            out: None,
            label: "",
            last: None,
            shown: false,
        }
    }

    /// On stderr when stderr is a terminal and `also` holds (callers pass
    /// "stdout is not the same terminal" when they print as they go).
    pub fn stderr(label: &'static str, also: bool) -> Progress {
        if !(also && std::io::stderr().is_terminal()) {
            return Progress::off();
        }
        Progress::to(label, Box::new(std::io::stderr()))
    }

    /// On `out` (tests).
    pub fn to(label: &'static str, out: Box<dyn Write + Send>) -> Progress {
        Progress {
            out: Some(out),
            label,
            last: None,
            shown: false,
        }
    }

    /// `done` of `total` records read; redrawn at most every 100 ms.
    pub fn update(&mut self, done: u64, total: u64) {
        let Some(out) = &mut self.out else { return };
        if self
            .last
            .is_some_and(|t| t.elapsed() < Duration::from_millis(100))
        {
            return;
        }
        self.last = Some(Instant::now());
        let pct = (done.min(total).saturating_mul(100))
            .checked_div(total)
            .unwrap_or(100);
        let _ = write!(
            out,
            "\r\x1b[2K{} {pct:>3}% ({done} of {total} records)",
            self.label
        );
        let _ = out.flush();
        self.shown = true;
    }

    /// Erase the line.
    pub fn finish(&mut self) {
        if let (Some(out), true) = (&mut self.out, self.shown) {
            let _ = write!(out, "\r\x1b[2K");
            let _ = out.flush();
        }
        self.shown = false;
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn draws_throttled_and_erases() {
        let buf = Shared::default();
        let mut p = Progress::to("reading", Box::new(buf.clone()));
        p.update(50, 200);
        p.update(60, 200); // within 100 ms: not drawn
        drop(p);
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text, "\r\x1b[2Kreading  25% (50 of 200 records)\r\x1b[2K");
        let mut off = Progress::off();
        off.update(1, 2);
        off.finish();
    }
}
