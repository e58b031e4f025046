//! Core numbering: AIC `[0, clusters)`, AIV `[clusters, 3·clusters)` in pairs.

use std::fmt;

/// The two kinds of core in a cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CoreType {
    /// Cube core: L1, L0A, L0B, L0C; runs matmuls.
    Aic,
    /// Vector core: UB; runs elementwise work.
    Aiv,
}

impl CoreType {
    /// Lowercase name used in files (`aic`, `aiv`).
    pub fn name(self) -> &'static str {
        match self {
            CoreType::Aic => "aic",
            CoreType::Aiv => "aiv",
        }
    }
}

impl fmt::Display for CoreType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which member of a cluster a subtask runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Subtask {
    /// The cube core.
    Aic,
    /// Vector core 0 (`sub_block_id` 0).
    Aiv0,
    /// Vector core 1 (`sub_block_id` 1).
    Aiv1,
}

impl Subtask {
    /// All members in id order.
    pub const ALL: [Subtask; 3] = [Subtask::Aic, Subtask::Aiv0, Subtask::Aiv1];

    /// Numeric subtask id (aic 0, aiv0 1, aiv1 2).
    pub fn id(self) -> u32 {
        self as u32
    }

    /// The member with this [`Subtask::id`]; `None` for other numbers
    /// (files carry the id, and readers check it).
    pub fn from_id(id: u32) -> Option<Subtask> {
        Subtask::ALL.get(id as usize).copied()
    }

    /// The member with this [`Subtask::name`] (exact, lowercase); `None`
    /// for any other text.
    pub fn from_name(name: &str) -> Option<Subtask> {
        Subtask::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Lowercase name (`aic`, `aiv0`, `aiv1`).
    pub fn name(self) -> &'static str {
        match self {
            Subtask::Aic => "aic",
            Subtask::Aiv0 => "aiv0",
            Subtask::Aiv1 => "aiv1",
        }
    }

    /// Core type the member runs on.
    pub fn core_type(self) -> CoreType {
        match self {
            Subtask::Aic => CoreType::Aic,
            _ => CoreType::Aiv,
        }
    }

    /// `sub_block_id` the member sees in its global context.
    pub fn sub_block_id(self) -> i32 {
        match self {
            Subtask::Aiv1 => 1,
            _ => 0,
        }
    }
}

impl fmt::Display for Subtask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Core id of a cluster member.
pub fn core_id(clusters: u32, cluster: u32, member: Subtask) -> u32 {
    match member {
        Subtask::Aic => cluster,
        Subtask::Aiv0 => clusters + 2 * cluster,
        Subtask::Aiv1 => clusters + 2 * cluster + 1,
    }
}

/// Cluster and member of a core id; `None` when the id is out of range.
pub fn locate(clusters: u32, core: u32) -> Option<(u32, Subtask)> {
    if core < clusters {
        Some((core, Subtask::Aic))
    } else if core < 3 * clusters {
        let v = core - clusters;
        Some((
            v / 2,
            if v.is_multiple_of(2) {
                Subtask::Aiv0
            } else {
                Subtask::Aiv1
            },
        ))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_names_round_trip() {
        for s in Subtask::ALL {
            assert_eq!(Subtask::from_id(s.id()), Some(s));
            assert_eq!(Subtask::from_name(s.name()), Some(s));
        }
        assert_eq!(Subtask::from_id(3), None);
        assert_eq!(Subtask::from_name("AIV0"), None);
    }

    #[test]
    fn numbering_matches_the_design() {
        assert_eq!(core_id(8, 0, Subtask::Aiv0), 8);
        assert_eq!(core_id(8, 0, Subtask::Aiv1), 9);
        assert_eq!(core_id(8, 3, Subtask::Aiv1), 15);
        assert_eq!(core_id(8, 7, Subtask::Aic), 7);
        for c in 0..24 {
            let (cl, m) = locate(8, c).unwrap();
            assert_eq!(core_id(8, cl, m), c);
        }
        assert_eq!(locate(8, 24), None);
    }
}
