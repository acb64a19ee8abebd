//! Seed bugs of flink-agents issue 1158 that can be put back into the operator, so that
//! the simulation's trace validation can be shown to catch them.
//!
//! Compiled in with the `defects` feature only; without it the operator runs the fixed
//! design and nothing here exists. The switches live in the operator as plain flags so
//! that the fixed path is the same code either way.

/// One seed bug, re-injected into the operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg(feature = "defects")]
pub enum Defect {
    /// The code before the fix: a checkpoint's recovery marker is the log's end offset
    /// at snapshot time, so a restore never replays the saved results of an input that
    /// was still unfinished when the checkpoint was taken.
    EndOffsetMarker,
    /// The old put order: the state is cached as soon as its record is sent, and the
    /// send's outcome is never looked at, so a send that fails leaves a cached result
    /// that the log does not hold, and the action goes on as if it were saved.
    CacheBeforeAck,
}

#[cfg(feature = "defects")]
impl Defect {
    /// Every seed bug the durable operator can carry, in command-line order.
    pub const ALL: [Defect; 2] = [Defect::EndOffsetMarker, Defect::CacheBeforeAck];

    /// The seed bug's command-line name.
    pub const fn name(self) -> &'static str {
        match self {
            Defect::EndOffsetMarker => "end-offset-marker",
            Defect::CacheBeforeAck => "cache-before-ack",
        }
    }

    /// The seed bug of a command-line name.
    pub fn named(name: &str) -> Option<Defect> {
        Defect::ALL.into_iter().find(|d| d.name() == name)
    }
}

/// The defects an operator carries; all off in the fixed design.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Defects {
    pub(crate) end_offset_marker: bool,
    pub(crate) cache_before_ack: bool,
}

#[cfg(feature = "defects")]
impl Defects {
    pub(crate) fn of(defects: &[Defect]) -> Defects {
        Defects {
            end_offset_marker: defects.contains(&Defect::EndOffsetMarker),
            cache_before_ack: defects.contains(&Defect::CacheBeforeAck),
        }
    }
}
