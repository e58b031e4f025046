//! The words of the files: stages, kinds, statuses, and the serde forms of
//! [`simpler_core::DType`] and [`ArgRole`] (their names live in `simpler-core`).

use std::fmt;

use serde::{Deserialize, Serialize};
use simpler_core::ArgRole;

/// When a record was captured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Before the task was dispatched: inputs, inouts and scalars.
    BeforeDispatch,
    /// After the task completed: outputs and inouts.
    AfterCompletion,
    /// A task that had not finished when the run stopped (timeout, signal):
    /// its outputs and inouts as they were in memory then (may be torn).
    HangSnapshot,
}

impl Stage {
    /// Every stage, in sort order.
    pub const ALL: [Stage; 3] = [
        Stage::BeforeDispatch,
        Stage::AfterCompletion,
        Stage::HangSnapshot,
    ];

    /// The name the files use.
    pub fn name(self) -> &'static str {
        match self {
            Stage::BeforeDispatch => "before_dispatch",
            Stage::AfterCompletion => "after_completion",
            Stage::HangSnapshot => "hang_snapshot",
        }
    }

    /// A file name or a command-line short form (`before`, `after`, `hang`),
    /// case-insensitive.
    pub fn from_name(s: &str) -> Option<Stage> {
        match s.trim().to_ascii_lowercase().as_str() {
            "before_dispatch" | "before" => Some(Stage::BeforeDispatch),
            "after_completion" | "after" => Some(Stage::AfterCompletion),
            "hang_snapshot" | "hang" => Some(Stage::HangSnapshot),
            _ => None,
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// Whether a record holds a tensor view or a scalar argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A tensor view; its payload is in the payload file.
    Tensor,
    /// A scalar argument; its value is in the manifest.
    Scalar,
}

impl Kind {
    /// The name the files use.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Tensor => "tensor",
            Kind::Scalar => "scalar",
        }
    }

    /// Parse a name, case-insensitive.
    pub fn from_name(s: &str) -> Option<Kind> {
        match s.trim().to_ascii_lowercase().as_str() {
            "tensor" => Some(Kind::Tensor),
            "scalar" => Some(Kind::Scalar),
            _ => None,
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// Whether the run that wrote a dump ended normally.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Every record the run produced is in the dump.
    Complete,
    /// The run ended abnormally; `reason` says how.
    Incomplete,
}

impl Status {
    /// The name the files use.
    pub fn name(self) -> &'static str {
        match self {
            Status::Complete => "complete",
            Status::Incomplete => "incomplete",
        }
    }
}

/// Parse a role as files write it (`input`, `output`, `inout`,
/// `output_existing`, `no_dep`; case-insensitive).
pub fn parse_role(s: &str) -> Option<ArgRole> {
    match s.trim().to_ascii_lowercase().as_str() {
        "input" => Some(ArgRole::Input),
        "output" => Some(ArgRole::Output),
        "inout" => Some(ArgRole::InOut),
        "output_existing" => Some(ArgRole::OutputExisting),
        "no_dep" => Some(ArgRole::NoDep),
        _ => None,
    }
}

/// The role names files may hold, for messages.
pub const ROLE_NAMES: &str = "input, output, inout, output_existing or no_dep";

/// Role name as the dumps write it: `output_existing` is an output to the
/// kernel, so it is written as `output`.
pub fn role_name(role: ArgRole) -> &'static str {
    match role {
        ArgRole::OutputExisting => "output",
        r => r.name(),
    }
}

/// `#[serde(with = "role")]` for [`ArgRole`] fields: written by
/// [`role_name`], read by [`parse_role`] (exact lowercase names).
pub mod role {
    use serde::{Deserializer, Serializer};
    use simpler_core::ArgRole;

    /// Serialize by [`super::role_name`].
    ///
    /// # Errors
    /// The serializer's.
    pub fn serialize<S: Serializer>(r: &ArgRole, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(super::role_name(*r))
    }

    /// Deserialize an exact role name.
    ///
    /// # Errors
    /// Unknown names, listing the valid ones.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ArgRole, D::Error> {
        d.deserialize_str(super::NameVisitor {
            expected: super::ROLE_NAMES,
            parse: |s| super::parse_role(s).filter(|r| r.name() == s),
        })
    }
}

/// `#[serde(with = "dtype")]` for [`simpler_core::DType`] fields: the UPPERCASE names.
pub mod dtype {
    use serde::{Deserializer, Serializer};
    use simpler_core::DType;

    /// Serialize by [`DType::name`].
    ///
    /// # Errors
    /// The serializer's.
    pub fn serialize<S: Serializer>(d: &DType, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(d.name())
    }

    /// Deserialize an UPPERCASE dtype name.
    ///
    /// # Errors
    /// Unknown names, listing the valid ones.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DType, D::Error> {
        d.deserialize_str(super::NameVisitor {
            expected: super::dtype_names(),
            parse: |s| DType::from_name(s).filter(|d| d.name() == s),
        })
    }
}

/// Every dtype name, comma-separated, for messages.
pub fn dtype_names() -> &'static str {
    "FLOAT32, FLOAT16, INT32, INT16, INT8, UINT8, BFLOAT16, INT64, UINT64, UINT16, UINT32, BOOL, FP8E4M3FN, FP8E8M0, FP4E2M1"
}

struct NameVisitor<T> {
    expected: &'static str,
    parse: fn(&str) -> Option<T>,
}

impl<T> serde::de::Visitor<'_> for NameVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "one of {}", self.expected)
    }

    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<T, E> {
        (self.parse)(s).ok_or_else(|| {
            E::custom(format_args!(
                "unknown name {}: expected one of {}",
                crate::error::quoted(s),
                self.expected
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use simpler_core::DType;

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct T {
        #[serde(with = "role")]
        r: ArgRole,
        #[serde(with = "dtype")]
        d: DType,
        s: Stage,
    }

    #[test]
    fn names_round_trip() {
        let t: T =
            serde_json::from_str(r#"{"r":"inout","d":"BFLOAT16","s":"hang_snapshot"}"#).unwrap();
        assert_eq!(
            t,
            T {
                r: ArgRole::InOut,
                d: DType::Bfloat16,
                s: Stage::HangSnapshot
            }
        );
        let e = serde_json::from_str::<T>(r#"{"r":"in","d":"BFLOAT16","s":"after_completion"}"#)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown name \"in\": expected one of input"),
            "{e}"
        );
        let e = serde_json::from_str::<T>(r#"{"r":"input","d":"float32","s":"after_completion"}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("FLOAT32, FLOAT16"), "{e}");
        assert_eq!(dtype_names().split(", ").count(), DType::ALL.len());
        for d in DType::ALL {
            assert!(dtype_names().split(", ").any(|n| n == d.name()));
        }
    }
}
