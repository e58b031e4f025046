//! One pass over a manifest: the header fields collected as JSON values,
//! the record list handed over one record at a time through a serde
//! visitor, so memory holds one record whatever the file's size. The
//! callbacks decide whether to stream the list now (the header before it
//! is complete) or skip it for a second pass, and may stop early.

use std::fmt;
use std::io::Read;
use std::path::Path;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use simpler_format::tensor_dump::{Record as Wire, StrictRecord, RECORD_LISTS};
use simpler_format::Error;

/// What to do with the record list when it is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListAction {
    /// Hand every record to the record callback; `strict` refuses unknown
    /// fields in records.
    Stream {
        /// Our own layout: unknown record fields are errors.
        strict: bool,
    },
    /// Skip it (a second pass will read it).
    Skip,
}

/// Whether to go on after a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Next record.
    Continue,
    /// Stop parsing now (the caller has what it needs).
    Stop,
}

/// The record-list key and the header fields before it.
pub type OnList<'a> = dyn FnMut(&str, &Map<String, Value>) -> Result<ListAction, Error> + 'a;
/// One record and its index.
pub type OnRecord<'a> = dyn FnMut(usize, Wire) -> Result<Flow, Error> + 'a;

/// What a pass saw.
#[derive(Debug, Default)]
pub struct PassEnd {
    /// Every header field (not the record list).
    pub header: Map<String, Value>,
    /// `tensors` or `args`, if the file has a record list.
    pub list_key: Option<String>,
    /// The list was streamed.
    pub streamed: bool,
    /// Header fields that came after the record list.
    pub after_list: Vec<String>,
    /// A callback asked to stop.
    pub stopped: bool,
}

struct State<'a, 'b> {
    on_list: &'a mut OnList<'b>,
    on_record: &'a mut OnRecord<'b>,
    end: PassEnd,
    /// An error raised by a callback, to replace serde's placeholder.
    raised: Option<Error>,
    /// How the record list was being read (for [`retrace`]).
    strict: Option<bool>,
}

/// Marks serde errors that stand for a callback's error or stop.
const RAISED: &str = "\u{0}raised";
const STOPPED: &str = "\u{0}stopped";

/// Parse `reader` (the content of `file`) once. The fast path tracks no
/// field path; when serde finds an error, [`retrace`] parses the file again
/// with a path tracker to name the field.
///
/// # Errors
/// Malformed or truncated JSON, a mistyped field (with its path), or a
/// callback's error.
pub fn pass(
    file: &Path,
    reader: impl Read,
    on_list: &mut OnList<'_>,
    on_record: &mut OnRecord<'_>,
) -> Result<PassEnd, Error> {
    let mut state = State {
        on_list,
        on_record,
        end: PassEnd::default(),
        raised: None,
        strict: None,
    };
    let mut de = serde_json::Deserializer::from_reader(reader);
    let result = Top(&mut state).deserialize(&mut de).and_then(|()| de.end());
    match result {
        Ok(()) => Ok(state.end),
        Err(e) if e.to_string().starts_with(STOPPED) => {
            state.end.stopped = true;
            Ok(state.end)
        }
        Err(e) => Err(match state.raised.take() {
            Some(raised) if e.to_string().starts_with(RAISED) => raised,
            _ => retrace(file, state.strict, &e),
        }),
    }
}

/// The error `e` with the path of the field it is in: the file parsed
/// again, tracked, with records accepted unread (`strict` as the failed
/// pass had it). Falls back to `e` without a path.
fn retrace(file: &Path, strict: Option<bool>, e: &serde_json::Error) -> Error {
    let plain = || simpler_format::json::error_at(file, String::new(), e);
    let Ok(f) = crate::open::open_regular(file) else {
        return plain();
    };
    let mut on_list = |_: &str, _: &Map<String, Value>| {
        Ok(match strict {
            Some(strict) => ListAction::Stream { strict },
            None => ListAction::Skip,
        })
    };
    let mut on_record = |_: usize, _: Wire| Ok(Flow::Continue);
    let mut state = State {
        on_list: &mut on_list,
        on_record: &mut on_record,
        end: PassEnd::default(),
        raised: None,
        strict: None,
    };
    let mut de = serde_json::Deserializer::from_reader(std::io::BufReader::new(f));
    let mut track = serde_path_to_error::Track::new();
    let tracked = serde_path_to_error::Deserializer::new(&mut de, &mut track);
    match Top(&mut state).deserialize(tracked).and_then(|()| de.end()) {
        Err(again) if again.line() == e.line() && again.column() == e.column() => {
            simpler_format::json::error_at(file, track.path().to_string(), &again)
        }
        _ => plain(),
    }
}

struct Top<'s, 'a, 'b>(&'s mut State<'a, 'b>);

impl<'de> DeserializeSeed<'de> for Top<'_, '_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Top<'_, '_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a manifest object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let st = self.0;
        while let Some(key) = map.next_key::<String>()? {
            if RECORD_LISTS.contains(&key.as_str()) {
                if let Some(prev) = &st.end.list_key {
                    return Err(de::Error::custom(format_args!(
                        "a second record list `{key}` (after `{prev}`): a manifest has one"
                    )));
                }
                let action = (st.on_list)(&key, &st.end.header).map_err(|e| raise(st, e))?;
                st.end.list_key = Some(key);
                match action {
                    ListAction::Skip => {
                        map.next_value::<IgnoredAny>()?;
                    }
                    ListAction::Stream { strict } => {
                        st.end.streamed = true;
                        st.strict = Some(strict);
                        map.next_value_seed(List {
                            st: &mut *st,
                            strict,
                        })?;
                        if st.end.stopped {
                            return Err(de::Error::custom(STOPPED));
                        }
                    }
                }
                continue;
            }
            let v: Value = map.next_value()?;
            if st.end.list_key.is_some() {
                st.end.after_list.push(key.clone());
            }
            if st.end.header.insert(key.clone(), v).is_some() {
                return Err(de::Error::custom(format_args!(
                    "header field `{}` appears twice",
                    simpler_format::echo(&key)
                )));
            }
        }
        Ok(())
    }
}

fn raise<E: de::Error>(st: &mut State<'_, '_>, e: Error) -> E {
    st.raised = Some(e);
    E::custom(RAISED)
}

struct List<'s, 'a, 'b> {
    st: &'s mut State<'a, 'b>,
    strict: bool,
}

impl<'de> DeserializeSeed<'de> for List<'_, '_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for List<'_, '_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of records")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let st = self.st;
        let mut index = 0usize;
        loop {
            let next = if self.strict {
                seq.next_element::<StrictRecord>()?.map(Wire::from)
            } else {
                seq.next_element::<Wire>()?
            };
            let Some(rec) = next else { return Ok(()) };
            match (st.on_record)(index, rec) {
                Ok(Flow::Continue) => index += 1,
                Ok(Flow::Stop) => {
                    st.end.stopped = true;
                    return Err(de::Error::custom(STOPPED));
                }
                Err(e) => return Err(raise(st, e)),
            }
        }
    }
}
