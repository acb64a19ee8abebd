//! Seed bugs of FLINK-39704 that can be put back into the production machines, so that
//! the simulation's trace validation can be shown to catch them.
//!
//! Compiled in with the `defects` feature only; without it every machine runs the fixed
//! design and nothing here exists. The switches live in the machines as plain flags so
//! that the fixed path is the same code either way.

/// One seed bug, re-injected into the production machines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg(feature = "defects")]
pub enum Defect {
    /// Flink 2.2's `DefaultJobMasterServiceProcess.closeAsync`: closing a process
    /// completes its result with NotFinished at once (part 1 of the fix undone).
    EagerNotFinished,
    /// A revoke clears the runner's current process leader, so a terminal result that
    /// is forwarded after it is no longer cached (the runner fix's bookkeeping undone).
    RevokeClearsLeader,
}

/// The defects a runner and its processes carry; all off in the fixed design.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Defects {
    pub(crate) eager_not_finished: bool,
    pub(crate) revoke_clears_leader: bool,
}

#[cfg(feature = "defects")]
impl Defects {
    pub(crate) fn of(defects: &[Defect]) -> Defects {
        Defects {
            eager_not_finished: defects.contains(&Defect::EagerNotFinished),
            revoke_clears_leader: defects.contains(&Defect::RevokeClearsLeader),
        }
    }
}
