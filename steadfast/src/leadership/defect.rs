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

#[cfg(feature = "defects")]
impl Defect {
    /// Every seed bug the leadership machines can carry, in command-line order.
    pub const ALL: [Defect; 2] = [Defect::EagerNotFinished, Defect::RevokeClearsLeader];

    /// The seed bug's command-line name.
    pub const fn name(self) -> &'static str {
        match self {
            Defect::EagerNotFinished => "eager-not-finished",
            Defect::RevokeClearsLeader => "revoke-clears-leader",
        }
    }

    /// The seed bug of a command-line name.
    pub fn named(name: &str) -> Option<Defect> {
        Defect::ALL.into_iter().find(|d| d.name() == name)
    }
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
