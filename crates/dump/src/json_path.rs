//! Parsing JSON with the path of the field that failed, for every reader
//! of a hand-editable file (`args_dump.json`, `kernel_args_dump.json`,
//! replay specs): users fix files from these messages.

use serde::de::DeserializeOwned;

/// Why a document did not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsonProblem {
    /// The text ends before the document does.
    Truncated(String),
    /// Not JSON.
    Malformed(String),
    /// JSON, but a field is missing or of the wrong type: the field path
    /// (`dispatches[3].args[1].arg_index`, `.` for the top level) and what
    /// was expected.
    Field {
        /// Field path.
        path: String,
        /// What is wrong.
        what: String,
        /// `line L, column C`.
        at: String,
    },
}

impl JsonProblem {
    /// One line: `field <path> at line L, column C: <what>` and the like.
    pub fn message(&self) -> String {
        match self {
            JsonProblem::Truncated(m) | JsonProblem::Malformed(m) => m.clone(),
            JsonProblem::Field { path, what, at } if path == "." => format!("at {at}: {what}"),
            JsonProblem::Field { path, what, at } => format!("field {path} at {at}: {what}"),
        }
    }
}

/// Deserialize `text`, naming the failing field's path on error.
///
/// # Errors
/// A [`JsonProblem`] saying where and what.
pub fn from_slice<T: DeserializeOwned>(text: &[u8]) -> Result<T, JsonProblem> {
    let de = &mut serde_json::Deserializer::from_slice(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let inner = e.inner();
        let at = format!("line {}, column {}", inner.line(), inner.column());
        let full = inner.to_string();
        // serde_json's Display appends " at line L column C"; say it once.
        let what = full
            .rsplit_once(" at line ")
            .map_or(full.as_str(), |(m, _)| m);
        match inner.classify() {
            serde_json::error::Category::Eof => {
                JsonProblem::Truncated(format!("truncated JSON: the file ends at {at} ({what})"))
            }
            serde_json::error::Category::Syntax | serde_json::error::Category::Io => {
                JsonProblem::Malformed(format!("malformed JSON at {at}: {what}"))
            }
            serde_json::error::Category::Data => JsonProblem::Field {
                path: e.path().to_string(),
                what: what.to_string(),
                at,
            },
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)]
    struct Doc {
        items: Vec<Item>,
    }

    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)]
    struct Item {
        n: u32,
    }

    #[test]
    fn problems_name_the_field() {
        let e = from_slice::<Doc>(br#"{"items":[{"n":1},{"n":"x"}]}"#).unwrap_err();
        assert!(
            matches!(&e, JsonProblem::Field { path, .. } if path == "items[1].n"),
            "{e:?}"
        );
        assert!(
            e.message().starts_with("field items[1].n at line 1"),
            "{}",
            e.message()
        );
        let e = from_slice::<Doc>(br#"{"items":[{"n":1}"#).unwrap_err();
        assert!(matches!(e, JsonProblem::Truncated(_)), "{e:?}");
        let e = from_slice::<Doc>(br#"{"items":]"#).unwrap_err();
        assert!(matches!(e, JsonProblem::Malformed(_)), "{e:?}");
        let e = from_slice::<Doc>(br#"{}"#).unwrap_err();
        assert!(
            e.message().contains("missing field `items`"),
            "{}",
            e.message()
        );
    }
}
