//! Sub-cores: the recorded instruction streams a replay simulates.

use simpler_core::topology::{self, Subtask};
use simpler_isa::InstrRecord;

/// One simulated core of a cluster and the instructions it executed.
///
/// A plain AIC or AIV dispatch replays one sub-core; a MIX dispatch replays
/// its cluster's three (AIC, AIV0, AIV1) on one time base.
#[derive(Debug, Clone, PartialEq)]
pub struct SubCore {
    /// Cluster index (`core<cluster>` in trace names).
    pub cluster: u32,
    /// Which member of the cluster.
    pub member: Subtask,
    /// Recorded instructions, in program order
    /// ([`simpler_isa::Core::take_records`]).
    pub records: Vec<InstrRecord>,
}

impl SubCore {
    /// A sub-core of `cluster`.
    pub fn new(cluster: u32, member: Subtask, records: Vec<InstrRecord>) -> SubCore {
        SubCore {
            cluster,
            member,
            records,
        }
    }

    /// The sub-core that runs on core id `core_id` of a chip with `clusters`
    /// clusters (DESIGN §2 numbering); `None` for an id out of range.
    pub fn from_core_id(core_id: u32, clusters: u32, records: Vec<InstrRecord>) -> Option<SubCore> {
        let (cluster, member) = topology::locate(clusters, core_id)?;
        Some(SubCore::new(cluster, member, records))
    }

    /// Trace name, as MindStudio Insight's simulator names cores:
    /// `core<cluster>.cubecore0` (AIC), `core<cluster>.veccore0` (AIV0),
    /// `core<cluster>.veccore1` (AIV1). Also the sub-core's folder name.
    pub fn name(&self) -> String {
        let member = match self.member {
            Subtask::Aic => "cubecore0",
            Subtask::Aiv0 => "veccore0",
            Subtask::Aiv1 => "veccore1",
        };
        format!("core{}.{member}", self.cluster)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_insight_convention() {
        let n = |id| SubCore::from_core_id(id, 8, Vec::new()).unwrap().name();
        assert_eq!(n(0), "core0.cubecore0");
        assert_eq!(n(8), "core0.veccore0");
        assert_eq!(n(9), "core0.veccore1");
        assert_eq!(n(15), "core3.veccore1");
        assert!(SubCore::from_core_id(24, 8, Vec::new()).is_none());
    }
}
