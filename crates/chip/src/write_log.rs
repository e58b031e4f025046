//! The GM bytes one dispatch wrote, for the race check.

/// A contiguous run of bytes written to one allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct WriteRun {
    /// Base address of the allocation written (the buffer).
    pub buffer: u64,
    /// Address of the first byte written.
    pub start: u64,
    /// One past the last byte written.
    pub end: u64,
}

/// Every run of GM bytes a core wrote during one dispatch, in order.
///
/// Filled by the checked write paths ([`crate::Gm::scatter_logged`],
/// [`crate::Gm::write_logged`]) with the allocation each access was checked
/// against, so the runtime can compare dispatches that may run at the same
/// time. A run that continues the previous one is merged into it, so a
/// dense store costs one entry and a strided one an entry per row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteLog {
    runs: Vec<WriteRun>,
}

impl WriteLog {
    /// An empty log.
    pub fn new() -> WriteLog {
        WriteLog::default()
    }

    /// Record `[start, end)` of `buffer` as written.
    pub fn push(&mut self, buffer: u64, start: u64, end: u64) {
        if start == end {
            return;
        }
        if let Some(last) = self.runs.last_mut() {
            if last.buffer == buffer && last.end == start {
                last.end = end;
                return;
            }
        }
        self.runs.push(WriteRun { buffer, start, end });
    }

    /// The runs, in the order they were written.
    pub fn runs(&self) -> &[WriteRun] {
        &self.runs
    }

    /// True when nothing was written.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// Forget every run (keeps the capacity).
    pub fn clear(&mut self) {
        self.runs.clear();
    }

    /// The runs sorted by address with overlapping or touching runs of one
    /// buffer merged: the set of bytes written, each byte once.
    pub fn into_merged(mut self) -> Vec<WriteRun> {
        self.runs.sort_unstable();
        let mut out: Vec<WriteRun> = Vec::with_capacity(self.runs.len());
        for r in self.runs {
            match out.last_mut() {
                Some(last) if last.buffer == r.buffer && r.start <= last.end => {
                    last.end = last.end.max(r.end);
                }
                _ => out.push(r),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_runs_merge_and_merged_sets_cover_each_byte_once() {
        let mut log = WriteLog::new();
        log.push(0, 0, 16);
        log.push(0, 16, 32);
        log.push(0, 64, 80);
        log.push(0, 8, 12);
        log.push(0, 5, 5);
        log.push(100, 100, 104);
        assert_eq!(log.runs().len(), 4, "{:?}", log.runs());
        let merged = log.into_merged();
        assert_eq!(
            merged,
            vec![
                WriteRun {
                    buffer: 0,
                    start: 0,
                    end: 32
                },
                WriteRun {
                    buffer: 0,
                    start: 64,
                    end: 80
                },
                WriteRun {
                    buffer: 100,
                    start: 100,
                    end: 104
                },
            ]
        );
    }
}
