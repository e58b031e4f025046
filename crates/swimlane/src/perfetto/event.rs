//! Chrome trace events, formatted by hand into one reused buffer: the
//! field names and layout of `swimlane_perfetto.json` live here.
//!
//! Written through serde (a derived `Event` struct, one `to_writer` per
//! event), CaseLarge's predicted trace — 42 MB, ~300 000 events — took
//! 120–130 ms of CPU (lanes, events and fsync; per-thread CPU, three
//! `--predict` runs); by hand, with serde_json's own float formatter and
//! its escaping where a string needs it, 70–80 ms for the same bytes
//! (compared with the serde writer's output on every bundled workload at
//! every level; docs/swimlane.md).

use std::io::{self, Write};

use serde_json::ser::{CompactFormatter, Formatter};
use simpler_format::stream::{str_val, u64_val};

/// An event's `args` object.
#[derive(Debug, Clone, Copy)]
pub(super) enum Args<'a> {
    /// `{"name": …}`.
    Name(&'a str),
    /// `{"sort_index": …}`.
    Sort(u32),
    /// A dispatch's slice.
    Dispatch {
        task_id: u64,
        core_id: u32,
        reg_task_id: u64,
        dispatch_to_finish_us: Option<f64>,
    },
    /// A scheduler phase's slice.
    Phase {
        loop_iter: u64,
        tasks_processed: u64,
        pop_hit: Option<u64>,
        pop_miss: Option<u64>,
    },
    /// An orchestrator submit's slice.
    Submit { submit_idx: u64, task_id: u64 },
}

/// The writer: events separated by `,\n`, each built in `buf` and
/// written whole.
pub(super) struct Events<W> {
    w: W,
    buf: Vec<u8>,
    first: bool,
}

impl<W: Write> Events<W> {
    pub(super) fn new(w: W) -> Self {
        Events {
            w,
            buf: Vec::with_capacity(256),
            first: true,
        }
    }

    /// The writer back, to write what follows the events.
    pub(super) fn into_inner(self) -> W {
        self.w
    }

    /// A metadata event (`"ph":"M"`).
    pub(super) fn meta(
        &mut self,
        name: &str,
        pid: u32,
        tid: u32,
        args: Args<'_>,
    ) -> io::Result<()> {
        self.head(|b| str_val(b, name), "M", pid, tid);
        self.args(args);
        self.end()
    }

    /// A complete slice (`"ph":"X"`) named by `name`.
    pub(super) fn slice(
        &mut self,
        name: impl FnOnce(&mut Vec<u8>),
        (pid, tid): (u32, u32),
        ts: f64,
        dur: f64,
        args: Args<'_>,
    ) -> io::Result<()> {
        self.head(name, "X", pid, tid);
        self.key_f64("ts", ts);
        self.key_f64("dur", dur);
        self.args(args);
        self.end()
    }

    /// One end of a flow arrow (`"ph":"s"`, or `"f"` bound to the
    /// enclosing slice).
    pub(super) fn flow(
        &mut self,
        end: bool,
        (pid, tid): (u32, u32),
        ts: f64,
        cat: &str,
        id: u64,
    ) -> io::Result<()> {
        self.head(
            |b| b.extend_from_slice(b"\"dependency\""),
            if end { "f" } else { "s" },
            pid,
            tid,
        );
        self.key_f64("ts", ts);
        self.buf.extend_from_slice(b",\"cat\":");
        str_val(&mut self.buf, cat);
        self.key_u64("id", id);
        if end {
            self.buf.extend_from_slice(b",\"bp\":\"e\"");
        }
        self.buf.push(b'}');
        self.end()
    }

    fn head(&mut self, name: impl FnOnce(&mut Vec<u8>), ph: &str, pid: u32, tid: u32) {
        self.buf.clear();
        self.buf
            .extend_from_slice(if self.first { b"\n" } else { b",\n" });
        self.first = false;
        self.buf.extend_from_slice(b"{\"name\":");
        name(&mut self.buf);
        self.buf.extend_from_slice(b",\"ph\":\"");
        self.buf.extend_from_slice(ph.as_bytes());
        self.buf.push(b'"');
        self.key_u64("pid", u64::from(pid));
        self.key_u64("tid", u64::from(tid));
    }

    fn end(&mut self) -> io::Result<()> {
        self.w.write_all(&self.buf)
    }

    // Inlined: the key is then a constant, copied without a call.
    #[inline(always)]
    fn key(&mut self, k: &str) {
        self.buf.extend_from_slice(b",\"");
        self.buf.extend_from_slice(k.as_bytes());
        self.buf.extend_from_slice(b"\":");
    }

    // Inlined: the key is then a constant, copied without a call.
    #[inline(always)]
    fn key_u64(&mut self, k: &str, v: u64) {
        self.key(k);
        u64_val(&mut self.buf, v);
    }

    // Inlined: the key is then a constant, copied without a call.
    #[inline(always)]
    fn key_f64(&mut self, k: &str, v: f64) {
        self.key(k);
        f64_val(&mut self.buf, v);
    }

    // Inlined: the key is then a constant, copied without a call.
    #[inline(always)]
    fn key_id(&mut self, k: &str, v: u64) {
        self.key(k);
        self.buf.push(b'"');
        u64_val(&mut self.buf, v);
        self.buf.push(b'"');
    }

    /// `,"args":{…}}`, closing the event.
    fn args(&mut self, a: Args<'_>) {
        let open = |b: &mut Vec<u8>| b.extend_from_slice(b",\"args\":{");
        match a {
            Args::Name(n) => {
                open(&mut self.buf);
                self.buf.extend_from_slice(b"\"name\":");
                str_val(&mut self.buf, n);
                self.buf.push(b'}');
            }
            Args::Sort(i) => {
                open(&mut self.buf);
                self.buf.extend_from_slice(b"\"sort_index\":");
                u64_val(&mut self.buf, u64::from(i));
                self.buf.push(b'}');
            }
            Args::Dispatch {
                task_id,
                core_id,
                reg_task_id,
                dispatch_to_finish_us,
            } => {
                open(&mut self.buf);
                self.buf.extend_from_slice(b"\"taskId\":\"");
                u64_val(&mut self.buf, task_id);
                self.buf.push(b'"');
                self.key_u64("core_id", u64::from(core_id));
                self.key_u64("reg_task_id", reg_task_id);
                if let Some(us) = dispatch_to_finish_us {
                    self.key_f64("dispatch_to_finish_us", us);
                }
                self.buf.push(b'}');
            }
            Args::Phase {
                loop_iter,
                tasks_processed,
                pop_hit,
                pop_miss,
            } => {
                open(&mut self.buf);
                self.buf.extend_from_slice(b"\"loop_iter\":");
                u64_val(&mut self.buf, loop_iter);
                self.key_u64("tasks_processed", tasks_processed);
                for (k, v) in [("pop_hit", pop_hit), ("pop_miss", pop_miss)] {
                    if let Some(v) = v {
                        self.key_u64(k, v);
                    }
                }
                self.buf.push(b'}');
            }
            Args::Submit {
                submit_idx,
                task_id,
            } => {
                open(&mut self.buf);
                self.buf.extend_from_slice(b"\"submit_idx\":");
                u64_val(&mut self.buf, submit_idx);
                self.key_id("taskId", task_id);
                self.buf.push(b'}');
            }
        }
        self.buf.push(b'}');
    }
}

/// A float as serde_json writes it (`null` when not finite).
fn f64_val(b: &mut Vec<u8>, v: f64) {
    // Writing into a Vec cannot fail.
    let _ = match v.is_finite() {
        true => CompactFormatter.write_f64(b, v),
        false => CompactFormatter.write_null(b),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_are_serde_json_s() {
        for v in [
            0.0,
            1.5,
            0.1 + 0.2,
            1e21,
            1e-7,
            12345.678,
            f64::NAN,
            f64::INFINITY,
        ] {
            let mut b = Vec::new();
            f64_val(&mut b, v);
            assert_eq!(b, serde_json::to_vec(&v).unwrap(), "{v}");
        }
    }
}
