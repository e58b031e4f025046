//! Architecture profiles: sizes that differ between chip generations.

use simpler_core::topology::CoreType;

/// Sizes of one chip generation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchProfile {
    /// Profile name (`a2a3`, `a5`).
    pub name: &'static str,
    /// Most clusters the chip has.
    pub max_clusters: u32,
    /// AIC L1 bytes.
    pub l1: usize,
    /// AIC L0A bytes.
    pub l0a: usize,
    /// AIC L0B bytes.
    pub l0b: usize,
    /// AIC L0C bytes.
    pub l0c: usize,
    /// AIV unified buffer bytes.
    pub ub: usize,
    /// Core clock in MHz, to turn cycles into microseconds in traces.
    pub clock_mhz: u32,
}

impl ArchProfile {
    /// Ascend 910B-class (`a2a3`), the default: 24 clusters, UB 192 KiB.
    pub fn a2a3() -> ArchProfile {
        ArchProfile {
            name: "a2a3",
            max_clusters: 24,
            l1: 512 << 10,
            l0a: 64 << 10,
            l0b: 64 << 10,
            l0c: 128 << 10,
            ub: 192 << 10,
            clock_mhz: 1850,
        }
    }

    /// Next generation (`a5`): 36 clusters, larger L0C and UB.
    pub fn a5() -> ArchProfile {
        ArchProfile {
            name: "a5",
            max_clusters: 36,
            l1: 512 << 10,
            l0a: 64 << 10,
            l0b: 64 << 10,
            l0c: 256 << 10,
            ub: 256 << 10,
            clock_mhz: 1650,
        }
    }

    /// Every known profile name.
    pub const NAMES: [&'static str; 2] = ["a2a3", "a5"];

    /// Look a profile up by name.
    pub fn by_name(name: &str) -> Option<ArchProfile> {
        match name {
            "a2a3" => Some(Self::a2a3()),
            "a5" => Some(Self::a5()),
            _ => None,
        }
    }

    /// Capacity of `buf` on a core of type `ty` (0 when that core has no such buffer).
    pub fn capacity(&self, ty: CoreType, buf: crate::BufKind) -> usize {
        use crate::BufKind::*;
        match (ty, buf) {
            (CoreType::Aic, L1) => self.l1,
            (CoreType::Aic, L0A) => self.l0a,
            (CoreType::Aic, L0B) => self.l0b,
            (CoreType::Aic, L0C) => self.l0c,
            (CoreType::Aiv, Ub) => self.ub,
            _ => 0,
        }
    }
}

impl Default for ArchProfile {
    fn default() -> Self {
        Self::a2a3()
    }
}
