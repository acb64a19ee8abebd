//! The durable model's properties: their names, in `properties()` order, and their
//! predicates (each reads the state and the ghost events of the step that led to it).

use stateright::Property;

use super::{Durable, State, MAX_ACTIONS, MAX_INPUTS};

/// The supplier never runs for a call whose result a landed record holds.
pub const CALL_AT_MOST_ONCE: &str = "call at most once";
/// No action starts again once finished: neither one whose completion a landed record
/// holds (the store should have restored it and skipped the action), nor one of an input
/// the latest completed checkpoint counts finished.
pub const FINISHED_STAYS_FINISHED: &str = "finished stays finished";
/// No action runs again (starts at its first call instead of being skipped) for an
/// input whose output the sink committed: what a user of the exactly-once sink observes. Weaker than [`FINISHED_STAYS_FINISHED`], which also counts
/// an action whose completion record landed but whose output was never committed (a
/// zombie's record, say): that one is the store's promise, this one the user's.
pub const COMMITTED_NOT_RERUN: &str = "committed input not rerun";
/// No output is emitted again for an input whose output is committed.
pub const SAME_OUTPUT: &str = "same output";
/// Outside an in-flight put, every cached state is a record in the log.
pub const CACHE_HOLDS_LOG: &str = "cache only holds what the log holds";
/// Per-key tracking only for keys with live state or in-flight inputs.
pub const BOUNDED_TRACKING: &str = "bounded tracking";
/// Every unfinished state's latest record is at or after the completed marker.
pub const MARKER_IS_SAFE: &str = "marker is safe";
/// Sometimes: a durable call reuses a saved result after a restore whose marker is past
/// the log's start (not a checkpoint of an empty log, which replays everything).
pub const REUSED_AFTER_RESTORE: &str =
    "a saved result is reused after a restore from a non-zero marker";
/// Sometimes: a checkpoint's recovery marker is rewound below the log's end offset, to
/// an unfinished action's saved result (the fix at work; the unpatched design's marker
/// is the end offset).
pub const MARKER_REWOUND: &str = "a checkpoint rewinds its marker below the log's end";
/// Sometimes: a crash comes while an action runs.
pub const CRASH_MID_ACTION: &str = "a crash lands mid-action";
/// Sometimes: a checkpoint is taken while an unfinished input's action has a result saved
/// in the log (the situation of issue 1158).
pub const CHECKPOINT_WITH_QUEUED: &str =
    "a checkpoint is taken after a queued action saved a result";
/// Sometimes: output is committed after a restore.
pub const OUTPUT_AFTER_RESTORE: &str = "an output is committed after a restore";

/// The safety properties.
pub const SAFETY: [&str; 7] = [
    CALL_AT_MOST_ONCE,
    FINISHED_STAYS_FINISHED,
    SAME_OUTPUT,
    CACHE_HOLDS_LOG,
    BOUNDED_TRACKING,
    MARKER_IS_SAFE,
    COMMITTED_NOT_RERUN,
];
/// The reachability properties.
pub const REACHABILITY: [&str; 5] = [
    REUSED_AFTER_RESTORE,
    CRASH_MID_ACTION,
    CHECKPOINT_WITH_QUEUED,
    OUTPUT_AFTER_RESTORE,
    MARKER_REWOUND,
];

/// The state conditions of the safety properties, one per key: each property is the
/// conjunction over keys of its condition (and of no event), and the reduction's views
/// ([`crate::por::Footprint::views`]) are these conditions.
impl Durable {
    /// [`SAME_OUTPUT`] for key `k`: the sink committed what the completed checkpoint
    /// counts finished; a lost completion notification may leave it behind, never ahead.
    pub(super) fn output_agrees(&self, s: &State, k: usize) -> bool {
        let finished = s.completed.map_or(0, |c| c.finished[k]);
        s.committed_outputs[k] == finished
            || (self.bounds.lost_completions && s.committed_outputs[k] < finished)
    }

    /// [`CACHE_HOLDS_LOG`] for key `k`: outside its put in flight, every state the
    /// store caches for the key is a record in the log.
    pub(super) fn cache_holds_log(&self, s: &State, k: usize) -> bool {
        self.slot_range()
            .filter(|sk| sk.key as usize == k)
            .all(|sk| match s.cached(sk) {
                None => true,
                Some(_) if s.put_in_flight(sk) => true,
                Some(st) => s.landed(sk, st),
            })
    }

    /// [`BOUNDED_TRACKING`] for key `k`: the store tracks the key only while it has
    /// live state or an input in flight.
    pub(super) fn tracking_bounded(&self, s: &State, k: usize) -> bool {
        let slots = k * MAX_INPUTS * MAX_ACTIONS..(k + 1) * MAX_INPUTS * MAX_ACTIONS;
        let tracked = s.key_boundary[k] != 0 || s.acked_offset.any(slots.clone());
        let live = s.cache.any(slots) || s.next_seq[k] > s.finished[k];
        !tracked || live
    }

    /// [`MARKER_IS_SAFE`] for key `k`: each of its unfinished states' latest record is
    /// at or after the completed checkpoint's marker.
    pub(super) fn marker_safe(&self, s: &State, k: usize) -> bool {
        let Some(c) = s.completed else {
            return true;
        };
        self.slot_range()
            .filter(|sk| sk.key as usize == k)
            .all(|sk| match s.latest_record(sk) {
                None => true,
                Some((_, offset)) => {
                    sk.seq < c.finished[k] || offset >= self.replay_marker(&c, sk.key, s.scaled_in)
                }
            })
    }

    /// Whether `condition` holds for every key.
    fn every_key_holds(&self, s: &State, condition: fn(&Durable, &State, usize) -> bool) -> bool {
        (0..self.bounds.keys as usize).all(|k| condition(self, s, k))
    }
}

/// Every property, safety first, in the order of [`SAFETY`] and [`REACHABILITY`].
pub(super) fn all() -> Vec<Property<Durable>> {
    vec![
        Property::always(CALL_AT_MOST_ONCE, |_, s: &State| !s.events.repeated_call),
        Property::always(FINISHED_STAYS_FINISHED, |_, s: &State| {
            !s.events.finished_rerun
        }),
        Property::always(SAME_OUTPUT, |m: &Durable, s: &State| {
            !s.events.duplicate_output && m.every_key_holds(s, Durable::output_agrees)
        }),
        Property::always(CACHE_HOLDS_LOG, |m: &Durable, s: &State| {
            m.every_key_holds(s, Durable::cache_holds_log)
        }),
        Property::always(BOUNDED_TRACKING, |m: &Durable, s: &State| {
            m.every_key_holds(s, Durable::tracking_bounded)
        }),
        Property::always(MARKER_IS_SAFE, |m: &Durable, s: &State| {
            m.every_key_holds(s, Durable::marker_safe)
        }),
        Property::always(COMMITTED_NOT_RERUN, |_, s: &State| {
            !s.events.committed_rerun
        }),
        Property::sometimes(REUSED_AFTER_RESTORE, |_, s: &State| {
            s.crashes > 0 && s.events.reused
        }),
        Property::sometimes(CRASH_MID_ACTION, |_, s: &State| s.events.crash_mid_action),
        Property::sometimes(CHECKPOINT_WITH_QUEUED, |_, s: &State| {
            s.events.checkpoint_over_saved
        }),
        Property::sometimes(OUTPUT_AFTER_RESTORE, |_, s: &State| {
            s.events.output_after_restore
        }),
        Property::sometimes(MARKER_REWOUND, |_, s: &State| s.events.marker_rewound),
    ]
}
