//! The manifest header: typed from the fields collected before the record
//! list, the layout detected, and the values a reader depends on checked.

use std::path::Path;

use serde_json::{Map, Value};
use simpler_format::tensor_dump::{Header, Layout, StrictHeader, SCHEMA_VERSION};
use simpler_format::{quoted, Error, ErrorKind};

/// What `schema_version` values this reader understands, for messages.
pub const UNDERSTOOD: &str = "1, or no schema_version for upstream and reference-runtime dumps";

/// The header of `file` from its fields, for a record list named
/// `list_key`.
///
/// # Errors
/// An unknown `schema_version`; a missing or mistyped field (with its
/// path); in our own layout, an unknown field; a `bin_format` other than
/// logical_contiguous / little_endian; a dump level other than 1, 2 or 3.
pub fn build(
    file: &Path,
    list_key: &str,
    fields: &Map<String, Value>,
) -> Result<(Header, Layout), Error> {
    let version = match fields.get("schema_version") {
        None => None,
        Some(v) => match v.as_u64() {
            Some(n) if n == u64::from(SCHEMA_VERSION) => Some(n),
            _ => {
                return Err(Error::new(
                    file,
                    ErrorKind::SchemaVersion {
                        found: v.to_string(),
                        understood: UNDERSTOOD,
                    },
                ))
            }
        },
    };
    let layout = Layout::detect(list_key, version);
    let value = Value::Object(fields.clone());
    let typed = if layout.is_strict() {
        serde_path_to_error::deserialize::<_, StrictHeader>(value).map(Header::from)
    } else {
        serde_path_to_error::deserialize::<_, Header>(value)
    };
    let header = typed.map_err(|e| {
        let msg = simpler_format::tame(&e.inner().to_string());
        match e.path().to_string().as_str() {
            "." => Error::new(
                file,
                ErrorKind::Field {
                    path: ".".into(),
                    line: 0,
                    column: 0,
                    msg: format!("header: {msg}"),
                },
            ),
            p => Error::new(
                file,
                ErrorKind::Header {
                    field: p.into(),
                    msg,
                },
            ),
        }
    })?;
    check(file, &header, layout)?;
    Ok((header, layout))
}

/// Refuse an args or kernel args dump whose `schema_version` is not
/// [`SCHEMA_VERSION`] (both side files carry the tensor dump's version).
///
/// # Errors
/// The version found, naming the field.
pub(crate) fn check_side_version(file: &Path, found: u32) -> Result<(), Error> {
    if found == SCHEMA_VERSION {
        return Ok(());
    }
    Err(Error::header(
        file,
        "schema_version",
        format!("unknown version {found} (this reader understands {SCHEMA_VERSION})"),
    ))
}

fn check(file: &Path, h: &Header, layout: Layout) -> Result<(), Error> {
    if h.bin_format.kind != "logical_contiguous" {
        return Err(Error::header(
            file,
            "bin_format.type",
            format!(
                "{} is not supported; expected \"logical_contiguous\"",
                quoted(&h.bin_format.kind)
            ),
        ));
    }
    if h.bin_format.byte_order != "little_endian" {
        return Err(Error::header(
            file,
            "bin_format.byte_order",
            format!(
                "{} is not supported; expected \"little_endian\"",
                quoted(&h.bin_format.byte_order)
            ),
        ));
    }
    if let Some(level) = h.dump_level.filter(|l| !(1..=3).contains(l)) {
        let field = match layout {
            Layout::Upstream => "dump_args_level",
            _ => "dump_level",
        };
        return Err(Error::header(
            file,
            field,
            format!("{level}: expected 1, 2 or 3 (level 0 writes no dump)"),
        ));
    }
    if layout.is_strict() && !matches!(&h.bin_file, Some(Some(_))) {
        return Err(Error::header(
            file,
            "bin_file",
            "missing or null; expected the payload file name (tensor_dump.bin)".into(),
        ));
    }
    Ok(())
}

/// The payload file a header names: `None` when it has none (upstream
/// `null`), the layout's default name when the field is absent.
pub fn bin_name(h: &Header, layout: Layout) -> Option<&str> {
    match &h.bin_file {
        Some(Some(name)) => Some(name),
        Some(None) => None,
        None if layout == Layout::Upstream => Some(simpler_format::files::UPSTREAM_BIN),
        None => Some(simpler_format::files::TENSOR_DUMP_BIN),
    }
}
