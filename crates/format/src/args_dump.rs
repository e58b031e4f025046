//! `args_dump.json`: the orchestration's own arguments, metadata only
//! (DESIGN §6). Ours: unknown fields are refused.

use serde::{Deserialize, Serialize};
use simpler_core::{ArgRole, DType};

use crate::hex::Hex64;
use crate::scalar::ScalarValue;
use crate::vocab::{dtype, Kind};

/// The whole `args_dump.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArgsDump {
    /// Format version.
    pub schema_version: u32,
    /// Workload name.
    pub workload: String,
    /// Case name.
    pub case: String,
    /// Entries in `args`.
    pub total_args: u64,
    /// Arguments lost (drop policy only; always 0 with `block`).
    #[serde(default)]
    pub dropped_args: u64,
    /// The arguments in order.
    pub args: Vec<OrchArg>,
}

/// One orchestration argument.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OrchArg {
    /// Position in the orchestration's argument list.
    pub arg_index: u32,
    /// Tensor or scalar.
    pub kind: Kind,
    /// `input`, `output` or `inout` (tensors).
    #[serde(default, with = "opt_role", skip_serializing_if = "Option::is_none")]
    pub role: Option<ArgRole>,
    /// Element type.
    #[serde(with = "dtype")]
    pub dtype: DType,
    /// Shape (tensors).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<Vec<u64>>,
    /// Strides in elements (tensors).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strides: Option<Vec<u64>>,
    /// View offset in elements (tensors).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_offset: Option<u64>,
    /// GM address of the buffer (tensors).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addr: Option<Hex64>,
    /// Bytes of the view (tensors).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nbytes: Option<u64>,
    /// Exact value (scalars).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<ScalarValue>,
    /// Raw 64-bit slot bits (scalars).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bits: Option<Hex64>,
}

/// `#[serde(with = "opt_role")]` for `Option<ArgRole>`.
pub(crate) mod opt_role {
    use serde::{Deserializer, Serializer};
    use simpler_core::ArgRole;

    pub fn serialize<S: Serializer>(r: &Option<ArgRole>, s: S) -> Result<S::Ok, S::Error> {
        match r {
            Some(r) => crate::vocab::role::serialize(r, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ArgRole>, D::Error> {
        crate::vocab::role::deserialize(d).map(Some)
    }
}
