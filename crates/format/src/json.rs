//! Parsing a whole JSON document into a format type, with the path of the
//! field that failed (`dispatches[3].args[1].arg_index`) and its line and
//! column, so users can fix files from the messages.

use std::path::Path;

use serde::de::DeserializeOwned;

use crate::error::{Error, ErrorKind};

/// Classify a serde_json error found at field `path` of `file`.
pub fn error_at(file: &Path, path: String, e: &serde_json::Error) -> Error {
    let (line, column) = (e.line(), e.column());
    let full = e.to_string();
    // serde_json's Display appends " at line L column C"; we say it once.
    let msg = full
        .rsplit_once(" at line ")
        .map_or(full.as_str(), |(m, _)| m)
        .to_string();
    let kind = match e.classify() {
        serde_json::error::Category::Eof => ErrorKind::TruncatedJson { line, column, msg },
        serde_json::error::Category::Syntax => ErrorKind::MalformedJson {
            path,
            line,
            column,
            msg,
        },
        serde_json::error::Category::Io => ErrorKind::Io(std::io::Error::other(msg)),
        serde_json::error::Category::Data => ErrorKind::Field {
            path,
            line,
            column,
            msg,
        },
    };
    Error::new(file, kind)
}

/// Deserialize `text` (the content of `file`), naming the failing field's
/// path on error.
///
/// # Errors
/// Truncated or malformed JSON, or a field that is missing, unknown or of
/// the wrong type.
pub fn from_slice<T: DeserializeOwned>(file: &Path, text: &[u8]) -> Result<T, Error> {
    let de = &mut serde_json::Deserializer::from_slice(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        error_at(file, path, e.inner())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)]
    #[serde(deny_unknown_fields)]
    struct Doc {
        items: Vec<Item>,
    }

    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)]
    #[serde(deny_unknown_fields)]
    struct Item {
        n: u32,
    }

    fn err(text: &str) -> Error {
        from_slice::<Doc>(Path::new("d.json"), text.as_bytes()).unwrap_err()
    }

    #[test]
    fn problems_name_the_field() {
        let e = err(r#"{"items":[{"n":1},{"n":"x"}]}"#);
        assert!(
            matches!(&e.kind, ErrorKind::Field { path, .. } if path == "items[1].n"),
            "{e:?}"
        );
        assert!(
            e.to_string()
                .starts_with("d.json: field items[1].n at line 1"),
            "{e}"
        );
        assert!(matches!(
            err(r#"{"items":[{"n":1}"#).kind,
            ErrorKind::TruncatedJson { .. }
        ));
        assert!(matches!(
            err(r#"{"items":]"#).kind,
            ErrorKind::MalformedJson { .. }
        ));
        assert!(err("{}").to_string().contains("missing field `items`"));
        let e = err(r#"{"items":[{"n":1,"m":2}]}"#).to_string();
        assert!(
            e.contains("field items[0].m") && e.contains("unknown field `m`"),
            "{e}"
        );
        let huge = format!(r#"{{"items":[{{"n":"{}"}}]}}"#, "9".repeat(1 << 20));
        let e = err(&huge).to_string();
        assert!(e.len() < 300, "{}", &e[..300]);
    }
}
