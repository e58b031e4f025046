//! The streaming tensor-dump reader (DESIGN §7): the header first, then
//! validated records one batch at a time while a worker thread parses the
//! rest, so the first records are shown before the manifest is parsed and
//! memory stays bounded by the records held at once. Cross-record checks
//! ([`crate::checks`]) end the stream with an error when they fail.
//!
//! Dropping a [`RecordStream`] stops the worker at its next batch.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam::channel::{bounded, Receiver, Sender};
use serde_json::{Map, Value};
use simpler_format::tensor_dump::{Header, Layout};
use simpler_format::vocab::Stage;
use simpler_format::{Error, ErrorKind};

use crate::checks::{Checks, Counts, Pending};
use crate::open::{open_bin, open_regular};
use crate::parse::{pass, Flow, ListAction, OnList, OnRecord, PassEnd};
use crate::payload::Payload;
use crate::record::{Key, Record};
use crate::scan::{fast_pass, Fast};
use crate::validate::Context;

/// Records per message from the worker.
const BATCH: usize = 256;
/// Messages in flight: with [`BATCH`], at most ~1500 records held.
const IN_FLIGHT: usize = 4;

/// Everything known once the header is read.
#[derive(Debug)]
pub struct DumpInfo {
    /// The manifest.
    pub manifest: PathBuf,
    /// The folder holding it.
    pub dir: PathBuf,
    /// Its header.
    pub header: Header,
    /// Which writer wrote it.
    pub layout: Layout,
    /// The payload file.
    pub payload: Payload,
}

impl DumpInfo {
    /// The payload file name as the manifest gives it (`-` for none).
    pub fn bin_name(&self) -> String {
        crate::header::bin_name(&self.header, self.layout)
            .unwrap_or("-")
            .to_string()
    }
}

enum Msg {
    Header(Result<Arc<DumpInfo>, Error>),
    Batch(Vec<Record>),
    End(Result<Counts, Error>),
}

/// Records of one dump, validated, in manifest order.
pub struct RecordStream {
    info: Arc<DumpInfo>,
    rx: Option<Receiver<Msg>>,
    batch: std::vec::IntoIter<Record>,
    worker: Option<JoinHandle<()>>,
    counts: Option<Counts>,
    done: bool,
}

impl std::fmt::Debug for RecordStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordStream")
            .field("manifest", &self.info.manifest)
            .finish()
    }
}

impl RecordStream {
    /// Open the manifest at `manifest` (a file; see
    /// [`crate::locate::resolve_manifest`] for directories) and read its
    /// header.
    ///
    /// # Errors
    /// The manifest or its payload file cannot be opened, or the header is
    /// invalid.
    pub fn open_manifest(manifest: &Path) -> Result<RecordStream, Error> {
        let (tx, rx) = bounded(IN_FLIGHT);
        let m = manifest.to_path_buf();
        let worker = std::thread::Builder::new()
            .name("manifest-reader".into())
            .spawn(move || Worker::new(m, tx).run())
            .map_err(|e| Error::io(manifest, e))?;
        let info = match rx.recv() {
            Ok(Msg::Header(h)) => h,
            _ => Err(Error::io(
                manifest,
                std::io::Error::other("manifest reader ended early"),
            )),
        };
        let info = match info {
            Ok(i) => i,
            Err(e) => {
                drop(rx);
                let _ = worker.join();
                return Err(e);
            }
        };
        Ok(RecordStream {
            info,
            rx: Some(rx),
            batch: Vec::new().into_iter(),
            worker: Some(worker),
            counts: None,
            done: false,
        })
    }

    /// Header, layout, paths and payload file.
    pub fn info(&self) -> &Arc<DumpInfo> {
        &self.info
    }

    /// What the records added up to, once the stream ended without error.
    pub fn counts(&self) -> Option<&Counts> {
        self.counts.as_ref()
    }
}

impl Iterator for RecordStream {
    type Item = Result<Record, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(r) = self.batch.next() {
                return Some(Ok(r));
            }
            if self.done {
                return None;
            }
            match self.rx.as_ref()?.recv() {
                Ok(Msg::Batch(b)) => self.batch = b.into_iter(),
                Ok(Msg::End(Ok(c))) => {
                    self.done = true;
                    self.counts = Some(c);
                }
                Ok(Msg::End(Err(e))) => {
                    self.done = true;
                    return Some(Err(e));
                }
                Ok(Msg::Header(_)) | Err(_) => {
                    self.done = true;
                    return Some(Err(Error::io(
                        &self.info.manifest,
                        std::io::Error::other("manifest reader stopped unexpectedly"),
                    )));
                }
            }
        }
    }
}

impl Drop for RecordStream {
    fn drop(&mut self) {
        // Disconnect first: the worker's next send fails and it returns.
        drop(self.rx.take());
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

/// The parsing side of a stream.
struct Worker {
    manifest: PathBuf,
    tx: Sender<Msg>,
}

/// State of the streamed pass.
struct Streaming {
    ctx: Context,
    checks: Checks,
    header: Header,
    batch: Vec<Record>,
}

impl Worker {
    fn new(manifest: PathBuf, tx: Sender<Msg>) -> Worker {
        Worker { manifest, tx }
    }

    fn run(self) {
        let mut sent_header = false;
        let result = self.stream(&mut sent_header);
        let msg = match result {
            Ok(Some(c)) => Msg::End(Ok(c)),
            Ok(None) => return,
            Err(e) if !sent_header => Msg::Header(Err(e)),
            Err(e) => Msg::End(Err(e)),
        };
        let _ = self.tx.send(msg);
    }

    fn reader(&self) -> Result<BufReader<std::fs::File>, Error> {
        Ok(BufReader::with_capacity(
            256 << 10,
            open_regular(&self.manifest)?,
        ))
    }

    /// One pass: the fast scanner ([`crate::scan`]) first; where it gives
    /// up, the serde pass from the start, which reports errors precisely
    /// and hands out only the records the fast pass had not.
    fn run_pass(
        &self,
        on_list: &mut OnList<'_>,
        on_record: &mut OnRecord<'_>,
    ) -> Result<PassEnd, Error> {
        let file = open_regular(&self.manifest)?;
        let (delivered, action) = match fast_pass(file, on_list, on_record)? {
            Fast::Done(end) => return Ok(end),
            Fast::Irregular { delivered, action } => (delivered, action),
        };
        let mut list = |key: &str, fields: &Map<String, Value>| match action {
            Some(a) => Ok(a),
            None => on_list(key, fields),
        };
        let mut record = |i: usize, w| {
            if i < delivered {
                Ok(Flow::Continue)
            } else {
                on_record(i, w)
            }
        };
        pass(&self.manifest, self.reader()?, &mut list, &mut record)
    }

    /// Both passes; `None` when the consumer went away.
    fn stream(&self, sent_header: &mut bool) -> Result<Option<Counts>, Error> {
        let state: RefCell<Option<Streaming>> = RefCell::new(None);
        let gone = Cell::new(false);
        let end = {
            let mut on_list = |key: &str, fields: &Map<String, Value>| {
                let Ok((header, layout)) = crate::header::build(&self.manifest, key, fields) else {
                    // Not complete yet: read the records in a second pass.
                    return Ok(ListAction::Skip);
                };
                let (st, info) = self.start(header, layout)?;
                if self.tx.send(Msg::Header(Ok(info))).is_err() {
                    gone.set(true);
                }
                *state.borrow_mut() = Some(st);
                Ok(ListAction::Stream {
                    strict: layout.is_strict(),
                })
            };
            let mut on_record = |i: usize, w| self.on_record(state.borrow_mut().as_mut(), i, w);
            self.run_pass(&mut on_list, &mut on_record)
        };
        let streamed = state.borrow().is_some();
        *sent_header |= streamed;
        let end = end?;
        if gone.get() || end.stopped {
            return Ok(None);
        }
        let Some(key) = end.list_key.clone() else {
            return Err(Error::new(
                &self.manifest,
                ErrorKind::Field {
                    path: ".".into(),
                    line: 0,
                    column: 0,
                    msg: "no record list: expected a `tensors` (or upstream `args`) array".into(),
                },
            ));
        };
        let (header, layout) = crate::header::build(&self.manifest, &key, &end.header)?;
        let mut st = match state.into_inner() {
            Some(st) => {
                self.late_fields(&end.after_list)?;
                Streaming { header, ..st }
            }
            None => match self.second_pass(header, layout, sent_header)? {
                Some(st) => st,
                None => return Ok(None),
            },
        };
        if !self.flush(&mut st) {
            return Ok(None);
        }
        st.checks.finish(&st.header)?;
        if !st.checks.sorted {
            self.duplicates_unsorted(layout)?;
        }
        Ok(Some(st.checks.counts))
    }

    /// Open the payload file and set up validation.
    fn start(&self, header: Header, layout: Layout) -> Result<(Streaming, Arc<DumpInfo>), Error> {
        let dir = self
            .manifest
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let payload = match crate::header::bin_name(&header, layout) {
            Some(name) => {
                let (path, f) = open_bin(&self.manifest, &dir, name)?;
                Payload::new(path, f)?
            }
            None => Payload::none(dir.join("-")),
        };
        let ctx = Context {
            manifest: self.manifest.clone(),
            bin: payload.exists().then(|| payload.path().to_path_buf()),
            bin_len: payload.len(),
            layout,
            dump_level: header.dump_level,
        };
        let info = Arc::new(DumpInfo {
            manifest: self.manifest.clone(),
            dir,
            header: header.clone(),
            layout,
            payload,
        });
        let st = Streaming {
            ctx,
            checks: Checks::new(self.manifest.clone(), layout),
            header,
            batch: Vec::with_capacity(BATCH),
        };
        Ok((st, info))
    }

    fn on_record(
        &self,
        st: Option<&mut Streaming>,
        index: usize,
        w: simpler_format::tensor_dump::Record,
    ) -> Result<Flow, Error> {
        let Some(st) = st else {
            return Ok(Flow::Continue);
        };
        let r = st.ctx.record(index, w)?;
        if let Some(Pending::Overlap {
            index,
            label,
            range,
        }) = st.checks.add(&r)?
        {
            return Err(self.overlap(index, label, range));
        }
        st.batch.push(r);
        if st.batch.len() >= BATCH && !self.flush(st) {
            return Ok(Flow::Stop);
        }
        Ok(Flow::Continue)
    }

    /// Send the batch; false when the consumer went away.
    fn flush(&self, st: &mut Streaming) -> bool {
        if st.batch.is_empty() {
            return true;
        }
        let b = std::mem::replace(&mut st.batch, Vec::with_capacity(BATCH));
        self.tx.send(Msg::Batch(b)).is_ok()
    }

    /// Header fields after the record list that validation depended on.
    fn late_fields(&self, after: &[String]) -> Result<(), Error> {
        const NEEDED_FIRST: [&str; 6] = [
            "schema_version",
            "bin_file",
            "bin_format",
            "dump_level",
            "dump_args_level",
            "status",
        ];
        match after.iter().find(|k| NEEDED_FIRST.contains(&k.as_str())) {
            Some(k) => Err(Error::header(
                &self.manifest,
                k.clone(),
                "comes after the record list; a streaming reader needs it before the records"
                    .into(),
            )),
            None => Ok(()),
        }
    }

    /// The header was not complete before the record list: read the list
    /// again now that it is. `None` when the consumer went away.
    fn second_pass(
        &self,
        header: Header,
        layout: Layout,
        sent: &mut bool,
    ) -> Result<Option<Streaming>, Error> {
        let (st, info) = self.start(header, layout)?;
        *sent = true;
        if self.tx.send(Msg::Header(Ok(info))).is_err() {
            return Ok(None);
        }
        let mut st = Some(st);
        let strict = layout.is_strict();
        let mut on_list = |_: &str, _: &Map<String, Value>| Ok(ListAction::Stream { strict });
        let mut on_record = |i: usize, w| self.on_record(st.as_mut(), i, w);
        let end = self.run_pass(&mut on_list, &mut on_record)?;
        Ok(if end.stopped { None } else { st })
    }

    /// The conflict error for record `index` overlapping an earlier one,
    /// found by reading the list again up to it.
    fn overlap(&self, index: usize, label: String, (s, e): (u64, u64)) -> Error {
        let mut first = None;
        let mut on_list =
            |_: &str, _: &Map<String, Value>| Ok(ListAction::Stream { strict: false });
        let mut on_record = |i: usize, w: simpler_format::tensor_dump::Record| {
            let (a, b) = (w.bin_offset, w.bin_offset.saturating_add(w.bin_size));
            if i < index && w.bin_size > 0 && a < e && s < b {
                first = Some((
                    i,
                    format!(
                        "task {}, arg {}",
                        simpler_core::TaskId(w.task_id.value),
                        w.arg_index
                    ),
                    (a, b),
                ));
                return Ok(Flow::Stop);
            }
            Ok(if i >= index {
                Flow::Stop
            } else {
                Flow::Continue
            })
        };
        let scanned = self.run_pass(&mut on_list, &mut on_record);
        let (first, range) = match (scanned, first) {
            (Ok(_), Some((i, l, r))) => ((i, l), r),
            _ => ((index, "?".into()), (s, e)),
        };
        Error::new(
            &self.manifest,
            ErrorKind::Conflict {
                first,
                second: (index, label),
                msg: format!(
                    "payload ranges overlap (bytes {}..{} and {s}..{e}): each record's payload has its own bytes",
                    range.0, range.1
                ),
            },
        )
    }

    /// Duplicate keys anywhere in an unsorted manifest (one more pass,
    /// memory by the record count: only for files our writers did not sort).
    fn duplicates_unsorted(&self, layout: Layout) -> Result<(), Error> {
        let mut seen: HashMap<Key, (usize, String)> = HashMap::new();
        let mut found = None;
        let mut on_list =
            |_: &str, _: &Map<String, Value>| Ok(ListAction::Stream { strict: false });
        let mut on_record = |i: usize, w: simpler_format::tensor_dump::Record| {
            let key = (
                simpler_core::TaskId(w.task_id.value),
                w.stage,
                w.arg_index,
                w.role,
            );
            let label = format!("task {}, arg {}", key.0, w.arg_index);
            let repeats_ok = layout != Layout::Native && w.stage == Stage::BeforeDispatch;
            if let Some(first) = seen.get(&key) {
                if !repeats_ok {
                    found = Some((first.clone(), (i, label)));
                    return Ok(Flow::Stop);
                }
            } else {
                seen.insert(key, (i, label));
            }
            Ok(Flow::Continue)
        };
        self.run_pass(&mut on_list, &mut on_record)?;
        match found {
            Some((first, second)) => Err(Error::new(
                &self.manifest,
                ErrorKind::Conflict {
                    first,
                    second,
                    msg: "duplicate key (task, stage, arg, role): a dump holds each argument once per stage".into(),
                },
            )),
            None => Ok(()),
        }
    }
}
