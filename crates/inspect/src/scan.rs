//! The fast pass over a manifest: the file read in large blocks, the
//! top-level object and the record list split by a small scanner, and each
//! record parsed from its own bytes (`serde_json::from_slice`, several
//! times faster than parsing from a reader byte by byte). Anything the
//! scanner does not expect — malformed or truncated JSON, a record that
//! does not parse — ends the fast pass as [`Fast::Irregular`]; the caller
//! then lets the serde pass ([`crate::parse::pass`]) read the file and
//! report the error precisely, skipping the records already handed out.

use std::fs::File;
use std::io::Read;

use serde_json::{Map, Value};
use simpler_format::tensor_dump::{Record as Wire, StrictRecord, RECORD_LISTS};
use simpler_format::Error;

use crate::parse::{Flow, ListAction, OnList, OnRecord, PassEnd};

/// Bytes read at a time.
const BLOCK: usize = 1 << 20;

/// How the fast pass ended.
#[derive(Debug)]
pub enum Fast {
    /// The whole file was read.
    Done(PassEnd),
    /// Something the scanner does not handle, after `delivered` records
    /// were handed to the record callback (and the list callback returned
    /// `action`, if it was called).
    Irregular {
        /// Records handed out.
        delivered: usize,
        /// What the list callback said, if it was called.
        action: Option<ListAction>,
    },
}

/// A marker: the fast pass gives up here.
struct Irregular;

/// A window over the file: `data[start..end]` is unread.
struct Window {
    file: File,
    data: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
}

impl Window {
    /// More bytes after the unread ones; false at the end of the file.
    fn fill(&mut self) -> Result<bool, Irregular> {
        if self.eof {
            return Ok(false);
        }
        self.data.copy_within(self.start..self.end, 0);
        self.end -= self.start;
        self.start = 0;
        if self.end + BLOCK > self.data.len() {
            self.data.resize(self.end + BLOCK, 0);
        }
        let n = self
            .file
            .read(&mut self.data[self.end..])
            .map_err(|_| Irregular)?;
        self.end += n;
        self.eof = n == 0;
        Ok(n > 0)
    }

    /// The byte at `start + i`, reading more when needed.
    fn at(&mut self, i: usize) -> Result<Option<u8>, Irregular> {
        while self.start + i >= self.end {
            if !self.fill()? {
                return Ok(None);
            }
        }
        Ok(Some(self.data[self.start + i]))
    }

    /// Skip whitespace; the next byte (not consumed).
    fn next_byte(&mut self) -> Result<Option<u8>, Irregular> {
        loop {
            match self.at(0)? {
                Some(b' ' | b'\n' | b'\r' | b'\t') => self.start += 1,
                other => return Ok(other),
            }
        }
    }

    /// Consume `b` (after whitespace) or give up.
    fn expect(&mut self, b: u8) -> Result<(), Irregular> {
        match self.next_byte()? {
            Some(x) if x == b => {
                self.start += 1;
                Ok(())
            }
            _ => Err(Irregular),
        }
    }

    /// The length of the JSON value at `start` (after whitespace): a
    /// string, a balanced object or array (strings inside skipped), or a
    /// scalar up to the next delimiter.
    fn value_len(&mut self) -> Result<usize, Irregular> {
        self.next_byte()?;
        let (mut depth, mut i, mut in_str) = (0usize, 0usize, false);
        loop {
            if self.start + i >= self.end {
                if !self.fill()? {
                    return Err(Irregular);
                }
                continue;
            }
            let buf = &self.data[self.start..self.end];
            while i < buf.len() {
                if in_str {
                    match buf[i..].iter().position(|&c| c == b'"' || c == b'\\') {
                        None => i = buf.len(),
                        Some(k) if buf[i + k] == b'\\' => i += k + 2,
                        Some(k) => {
                            i += k + 1;
                            in_str = false;
                            if depth == 0 {
                                return Ok(i);
                            }
                        }
                    }
                    continue;
                }
                match buf[i] {
                    b'"' => in_str = true,
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' if depth == 0 => return Ok(i),
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Ok(i + 1);
                        }
                    }
                    b',' | b' ' | b'\n' | b'\r' | b'\t' | b':' if depth == 0 => return Ok(i),
                    _ => {}
                }
                i += 1;
            }
        }
    }

    /// Take the next value's bytes (valid until the next read).
    fn take_value(&mut self) -> Result<&[u8], Irregular> {
        let n = self.value_len()?;
        if n == 0 {
            return Err(Irregular);
        }
        let s = self.start;
        self.start += n;
        Ok(&self.data[s..s + n])
    }
}

struct Fastpass<'c, 'a, 'b> {
    w: Window,
    on_list: &'c mut OnList<'a>,
    on_record: &'c mut OnRecord<'b>,
    end: PassEnd,
    delivered: usize,
    action: Option<ListAction>,
}

/// Read `file` (the manifest at `path`) with the fast pass.
///
/// # Errors
/// A callback's error (never a parse error: those end as
/// [`Fast::Irregular`]).
pub fn fast_pass(
    file: File,
    on_list: &mut OnList<'_>,
    on_record: &mut OnRecord<'_>,
) -> Result<Fast, Error> {
    let mut p = Fastpass {
        w: Window {
            file,
            data: vec![0; BLOCK],
            start: 0,
            end: 0,
            eof: false,
        },
        on_list,
        on_record,
        end: PassEnd::default(),
        delivered: 0,
        action: None,
    };
    match p.object() {
        Ok(Ok(())) => Ok(Fast::Done(p.end)),
        Ok(Err(e)) => Err(e),
        Err(Irregular) => Ok(Fast::Irregular {
            delivered: p.delivered,
            action: p.action,
        }),
    }
}

impl Fastpass<'_, '_, '_> {
    /// The top-level object. The outer `Result` is the scanner's, the
    /// inner one a callback's.
    fn object(&mut self) -> Result<Result<(), Error>, Irregular> {
        self.w.expect(b'{')?;
        if self.w.next_byte()? == Some(b'}') {
            self.w.start += 1;
            return self.finish();
        }
        loop {
            let key: String =
                serde_json::from_slice(self.w.take_value()?).map_err(|_| Irregular)?;
            self.w.expect(b':')?;
            if RECORD_LISTS.contains(&key.as_str()) {
                if self.end.list_key.is_some() {
                    return Err(Irregular);
                }
                if let Err(e) = self.list(&key)? {
                    return Ok(Err(e));
                }
                if self.end.stopped {
                    return Ok(Ok(()));
                }
            } else {
                let v: Value =
                    serde_json::from_slice(self.w.take_value()?).map_err(|_| Irregular)?;
                if self.end.list_key.is_some() {
                    self.end.after_list.push(key.clone());
                }
                if self.end.header.insert(key, v).is_some() {
                    return Err(Irregular);
                }
            }
            match self.w.next_byte()? {
                Some(b',') => self.w.start += 1,
                Some(b'}') => {
                    self.w.start += 1;
                    return self.finish();
                }
                _ => return Err(Irregular),
            }
        }
    }

    /// Nothing but whitespace after the object.
    fn finish(&mut self) -> Result<Result<(), Error>, Irregular> {
        match self.w.next_byte()? {
            None => Ok(Ok(())),
            Some(_) => Err(Irregular),
        }
    }

    /// The record list under `key`.
    fn list(&mut self, key: &str) -> Result<Result<(), Error>, Irregular> {
        let header: &Map<String, Value> = &self.end.header;
        let action = match (self.on_list)(key, header) {
            Ok(a) => a,
            Err(e) => return Ok(Err(e)),
        };
        self.action = Some(action);
        self.end.list_key = Some(key.to_string());
        let strict = match action {
            ListAction::Skip => {
                self.w.take_value()?;
                return Ok(Ok(()));
            }
            ListAction::Stream { strict } => strict,
        };
        self.end.streamed = true;
        self.w.expect(b'[')?;
        if self.w.next_byte()? == Some(b']') {
            self.w.start += 1;
            return Ok(Ok(()));
        }
        loop {
            let bytes = self.w.take_value()?;
            let rec = if strict {
                serde_json::from_slice::<StrictRecord>(bytes).map(Wire::from)
            } else {
                serde_json::from_slice::<Wire>(bytes)
            };
            let rec = rec.map_err(|_| Irregular)?;
            match (self.on_record)(self.delivered, rec) {
                Ok(Flow::Continue) => self.delivered += 1,
                Ok(Flow::Stop) => {
                    self.end.stopped = true;
                    return Ok(Ok(()));
                }
                Err(e) => return Ok(Err(e)),
            }
            match self.w.next_byte()? {
                Some(b',') => self.w.start += 1,
                Some(b']') => {
                    self.w.start += 1;
                    return Ok(Ok(()));
                }
                _ => return Err(Irregular),
            }
        }
    }
}
