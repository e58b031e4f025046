//! Shared by the readers of hand-editable files (`args_dump.json`,
//! `kernel_args_dump.json`, replay specs): finding the file in a run
//! directory, and parsing JSON with the path of the field that failed, so
//! users can fix files from the messages.

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

/// Find a dump file named `file` given the file itself, a run directory or
/// its `tensor_dump/` folder. On failure, returns the candidates it tried
/// (comma-separated) for the caller's "not found" message.
pub(crate) fn locate(path: &std::path::Path, file: &str) -> Result<std::path::PathBuf, String> {
    if path.is_file() {
        return Ok(path.to_path_buf());
    }
    let tried = [path.join(file), path.join("tensor_dump").join(file)];
    tried.iter().find(|p| p.is_file()).cloned().ok_or_else(|| {
        tried
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    })
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
