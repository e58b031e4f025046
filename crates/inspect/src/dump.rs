//! A whole dump in memory: every record (payload bytes stay on disk and
//! are read by range). For small dumps, tests and replay's one task; the
//! viewer and the diff stream instead ([`crate::stream`]).

use std::path::Path;
use std::sync::Arc;

use simpler_format::tensor_dump::{Header, Layout};
use simpler_format::Error;

use crate::checks::Counts;
use crate::record::Record;
use crate::stream::{DumpInfo, RecordStream};

/// An opened, validated tensor dump with its records in memory.
#[derive(Debug)]
pub struct Dump {
    info: Arc<DumpInfo>,
    records: Vec<Record>,
    counts: Counts,
}

impl Dump {
    /// Open and validate a dump: a run directory, its dump folder, or the
    /// manifest itself (either layout).
    ///
    /// # Errors
    /// Anything wrong with the files, naming the file, record and field.
    pub fn open(path: impl AsRef<Path>) -> Result<Dump, Error> {
        Dump::open_filtered(path, |_| true)
    }

    /// [`Dump::open`] keeping only the records `keep` accepts (every record
    /// is still validated).
    ///
    /// # Errors
    /// As for [`Dump::open`].
    pub fn open_filtered(
        path: impl AsRef<Path>,
        mut keep: impl FnMut(&Record) -> bool,
    ) -> Result<Dump, Error> {
        let manifest = crate::locate::resolve_manifest(path.as_ref())?;
        let mut stream = RecordStream::open_manifest(&manifest)?;
        let mut records = Vec::new();
        for r in stream.by_ref() {
            let r = r?;
            if keep(&r) {
                records.push(r);
            }
        }
        let counts = stream.counts().copied().unwrap_or_default();
        Ok(Dump {
            info: stream.info().clone(),
            records,
            counts,
        })
    }

    /// Header, layout, paths and payload file.
    pub fn info(&self) -> &DumpInfo {
        &self.info
    }

    /// The manifest header.
    pub fn header(&self) -> &Header {
        &self.info.header
    }

    /// Which writer wrote it.
    pub fn layout(&self) -> Layout {
        self.info.layout
    }

    /// The records kept, in manifest order.
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// What all records (kept or not) added up to.
    pub fn counts(&self) -> &Counts {
        &self.counts
    }

    /// The folder holding the manifest.
    pub fn dir(&self) -> &Path {
        &self.info.dir
    }

    /// The manifest.
    pub fn manifest_path(&self) -> &Path {
        &self.info.manifest
    }

    /// The payload file.
    pub fn bin_path(&self) -> &Path {
        self.info.payload.path()
    }

    /// Length of the payload file when it was opened.
    pub fn bin_len(&self) -> u64 {
        self.info.payload.len()
    }

    /// True for dumps our writer did not write (upstream or reference
    /// runtime: no `schema_version`).
    pub fn is_reference_format(&self) -> bool {
        self.info.layout != Layout::Native
    }

    /// Records lost or damaged under the drop policy: `(dropped_records,
    /// truncated_tensors, dropped_overwrite)`.
    pub fn loss(&self) -> (u64, u64, u64) {
        let h = self.header();
        (h.dropped_records, h.truncated_tensors, h.dropped_overwrite)
    }

    /// A record's payload bytes (empty for scalars and metadata-only
    /// records; shorter than the view for truncated ones).
    ///
    /// # Errors
    /// The payload file shrank since it was opened, or cannot be read.
    pub fn payload(&self, r: &Record) -> Result<Vec<u8>, Error> {
        self.info.payload.read(r)
    }

    /// A record's values as f64, decoded by dtype (row-major, the complete
    /// elements the payload holds); scalars give their one value.
    ///
    /// # Errors
    /// As for [`Dump::payload`].
    pub fn elements_f64(&self, r: &Record) -> Result<Vec<f64>, Error> {
        if r.is_scalar() {
            return Ok(r.scalar_f64().into_iter().collect());
        }
        Ok(simpler_core::decode::all_f64(&self.payload(r)?, r.dtype))
    }
}
