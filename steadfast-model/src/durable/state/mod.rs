//! The durable model's state: typed values of the source, operator, store, log,
//! checkpoints and ghost counters, and the one place where they are packed (the
//! checker's fingerprint, [`State`]'s `Hash`).
//!
//! Every field says what it is in the domain ([`Phase`] per key, `Option<Put>`, the
//! store's [`Cache`] and [`AckedOffsets`] and the [`Log`] per state key, read through
//! `get`/`set` as `Option`s); no sentinel values or bit tricks leak out of this module.
//! The per-state-key containers keep one byte per state key inside (zero for none), so
//! the fingerprint reads each of them as two words instead of converting eighteen
//! `Option`s per hash: checking speed is that of the byte-coded state this replaced
//! (see `specs/performance.md`).
//!
//! This file holds the state keys, the operator's and the checkpoints' values, the ghosts
//! and [`State`] itself; the rest is split by concern: `action_state` ([`ActionState`]
//! and [`StateSet`], a saved action state and a set of them, each a few bits),
//! `per_state_key` (the log's, the cache's and the acknowledged offsets' arrays indexed by
//! state key) and `fingerprint` (the packing of [`State`] into the checker's hash).

use serde::{Serialize, Serializer};

use super::{MAX_ACTIONS, MAX_CALLS, MAX_CONCURRENT, MAX_INPUTS, MAX_KEYS, MAX_PARTITIONS};

mod action_state;
mod fingerprint;
mod per_state_key;
#[cfg(test)]
mod tests;

pub use action_state::{ActionState, StateSet};
pub use per_state_key::{AckedOffsets, Cache, Log, Records};

/// Number of state keys (key, sequence number, action) a model can name.
pub const MAX_SLOTS: usize = MAX_KEYS * MAX_INPUTS * MAX_ACTIONS;

/// A state key: the action `action` of the input with sequence number `seq` of `key`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
pub struct StateKey {
    /// The input's key.
    pub key: u8,
    /// The input's sequence number within its key.
    pub seq: u8,
    /// The action's index within the input.
    pub action: u8,
}

impl StateKey {
    /// Index of this state key in per-state-key arrays.
    pub fn slot(self) -> usize {
        (self.key as usize * MAX_INPUTS + self.seq as usize) * MAX_ACTIONS + self.action as usize
    }

    /// Inverse of [`StateKey::slot`].
    pub fn of_slot(slot: usize) -> StateKey {
        StateKey {
            key: (slot / (MAX_INPUTS * MAX_ACTIONS)) as u8,
            seq: ((slot / MAX_ACTIONS) % MAX_INPUTS) as u8,
            action: (slot % MAX_ACTIONS) as u8,
        }
    }
}

/// One log record: a state key and the whole action state written for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
pub struct Record {
    /// Whose state this is.
    pub state_key: StateKey,
    /// The state written.
    pub state: ActionState,
}

/// Where a key's running action is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
pub enum Phase {
    /// No action of this key is running.
    Idle,
    /// About to make durable call `i` (`i == calls`: ready to complete).
    AtCall(u8),
    /// The supplier returned call `i`'s result; its put is not sent yet.
    HaveResult(u8),
    /// The put carrying call `i`'s result is in flight.
    AwaitPut(u8),
    /// The put marking the action completed is in flight.
    AwaitCompletion,
}

impl Phase {
    /// One byte for the fingerprint (calls are below 16).
    /// Written as tests of the variant rather than one `match`, which compiles to an
    /// indirect jump per key.
    #[inline(always)]
    /// The first eight flags in a byte ([`Events::committed_rerun`] is packed apart).
    fn code(self) -> u8 {
        let call = match self {
            Phase::AtCall(i) | Phase::HaveResult(i) | Phase::AwaitPut(i) => i,
            Phase::Idle | Phase::AwaitCompletion => 0,
        };
        ((matches!(self, Phase::HaveResult(_)) as u8) << 4)
            | ((matches!(self, Phase::AwaitPut(_)) as u8) << 5)
            | ((matches!(self, Phase::AwaitCompletion) as u8) * 0x30)
            | ((matches!(self, Phase::Idle) as u8) * 0xF0)
            | call
    }
}

/// A put in flight of one key. Puts are sequential within a subtask (at most one in
/// flight) unless `concurrent-puts` lets every key have one of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Put {
    /// The record sent; its state key names the key whose action waits.
    pub record: Record,
    /// Where the record landed in its key's partition, once it did (asynchronous puts
    /// land before they are acknowledged).
    pub offset: Option<u8>,
}

/// What a checkpoint captures: the operator's keyed state and the recovery marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
pub struct Checkpoint {
    /// Per key: next sequence number (inputs delivered).
    pub next_seq: [u8; MAX_KEYS],
    /// Per key: finished inputs (last completed sequence number + 1).
    pub finished: [u8; MAX_KEYS],
    /// Per key: the queue's head, the next action of input `finished`.
    pub next_action: [u8; MAX_KEYS],
    /// The offset replay starts from, per (subtask, partition) slot, subtask-major
    /// ([`crate::durable::Durable`]'s `marker_slot`): with one subtask, per partition.
    /// Each subtask's marker covers only the keys it owns.
    pub marker: [u8; MAX_PARTITIONS],
    /// Subtask 1 has not taken its part of this checkpoint yet (`subtasks` 2): its keys'
    /// entries and its markers are still to come, and the checkpoint cannot complete.
    pub awaiting_subtask: bool,
}

/// Ghost: what the last step did, for the properties that are about a step; every step
/// starts from none.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct Events {
    /// A durable call reused a saved result while the latest completed checkpoint's
    /// marker for its partition is past the log's start (so its replay skipped records).
    pub reused: bool,
    /// A checkpoint was taken while an unfinished input's action had a result saved in
    /// the log (the situation of issue 1158).
    pub checkpoint_over_saved: bool,
    /// A checkpoint's marker was rewound below the log's end offset (the fix at work).
    pub marker_rewound: bool,
    /// A crash came while some action was running.
    pub crash_mid_action: bool,
    /// A checkpoint completion after a restore committed new output.
    pub output_after_restore: bool,
    /// The supplier ran for a call whose result a landed record already holds.
    pub repeated_call: bool,
    /// An action started again although a landed record holds its completion, or its
    /// input is one the latest completed checkpoint counts finished.
    pub finished_rerun: bool,
    /// An output was emitted for an input whose output is already committed.
    pub duplicate_output: bool,
    /// An action started for an input whose output the sink already committed.
    pub committed_rerun: bool,
}

impl Events {
    /// None of them.
    pub const NONE: Events = Events {
        reused: false,
        checkpoint_over_saved: false,
        marker_rewound: false,
        crash_mid_action: false,
        output_after_restore: false,
        repeated_call: false,
        finished_rerun: false,
        duplicate_output: false,
        committed_rerun: false,
    };

    fn code(self) -> u8 {
        self.reused as u8
            | (self.crash_mid_action as u8) << 1
            | (self.output_after_restore as u8) << 2
            | (self.repeated_call as u8) << 3
            | (self.finished_rerun as u8) << 4
            | (self.duplicate_output as u8) << 5
            | (self.checkpoint_over_saved as u8) << 6
            | (self.marker_rewound as u8) << 7
    }
}

/// Ghost: supplier runs per (state key, call). A call runs at most once per
/// incarnation, so at most `crashes + 1 <= 4` times; counts are kept in four bits each
/// (saturating at 15), which halves the bytes the checker copies per step.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Runs([u8; MAX_SLOTS * MAX_CALLS / 2]);

impl Runs {
    /// No run yet.
    pub const ZERO: Runs = Runs([0; MAX_SLOTS * MAX_CALLS / 2]);

    fn index(key: StateKey, call: u8) -> usize {
        debug_assert!((call as usize) < MAX_CALLS);
        key.slot() * MAX_CALLS + call as usize
    }

    /// The supplier's runs for call `call` of state key `key`.
    pub fn get(&self, key: StateKey, call: u8) -> u8 {
        let i = Runs::index(key, call);
        (self.0[i / 2] >> (4 * (i % 2))) & 0x0F
    }

    /// Sets the count of call `call` of state key `key` (saturating at 15).
    pub fn set(&mut self, key: StateKey, call: u8, count: u8) {
        let i = Runs::index(key, call);
        let shift = 4 * (i % 2);
        self.0[i / 2] = (self.0[i / 2] & !(0x0F << shift)) | (count.min(15) << shift);
    }

    /// One more run of call `call` of state key `key`.
    pub fn bump(&mut self, key: StateKey, call: u8) {
        self.set(key, call, self.get(key, call) + 1);
    }

    /// Every non-zero count: state key, call, runs.
    pub fn nonzero(&self) -> impl Iterator<Item = (StateKey, u8, u8)> + '_ {
        (0..MAX_SLOTS).flat_map(move |slot| {
            let key = StateKey::of_slot(slot);
            (0..MAX_CALLS as u8).filter_map(move |call| {
                let n = self.get(key, call);
                (n > 0).then_some((key, call, n))
            })
        })
    }
}

impl std::fmt::Debug for Runs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.nonzero()).finish()
    }
}

/// One entry per state key and call the supplier ran for.
#[derive(Serialize)]
struct RunCount {
    state_key: StateKey,
    call: u8,
    runs: u8,
}

impl Serialize for Runs {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.nonzero().map(|(state_key, call, runs)| RunCount {
            state_key,
            call,
            runs,
        }))
    }
}

/// The puts in flight as a list, in key order (keys with none left out).
fn present_puts<S: Serializer>(puts: &[Option<Put>; MAX_KEYS], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(puts.iter().flatten())
}

/// The pending checkpoints as a list, oldest first (the empty slots left out).
fn present_checkpoints<S: Serializer>(
    pending: &[Option<Checkpoint>; MAX_CONCURRENT],
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_seq(pending.iter().flatten())
}

/// The whole system: source, operator, store, log, checkpoints, and ghost counters.
///
/// `supplier_runs` is a ghost no transition or property reads; it is left out of the
/// hash (so out of the checker's fingerprint), which keeps states that differ only in
/// how often a lost call ran from multiplying the state space. Along any reported path
/// its values are exact: stateright rebuilds a path by replaying its steps. (Only a
/// ghost that nothing hashed is computed from may be left out: otherwise the states
/// found would depend on which path reached a state first.)
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct State {
    /// Operator keyed state: per key, the next sequence number (inputs delivered).
    pub next_seq: [u8; MAX_KEYS],
    /// Operator keyed state: per key, finished inputs (last completed sequence + 1).
    pub finished: [u8; MAX_KEYS],
    /// Operator keyed state: per key, the next action of input `finished[key]`.
    pub next_action: [u8; MAX_KEYS],
    /// Per key, where its running action is.
    pub phase: [Phase; MAX_KEYS],
    /// Per key, its running action's call index was not advanced past the previous
    /// call, whose put failed with an error the action caught (`handled-put-errors`):
    /// that call's unsaved result sits at the index, where the next call finds it.
    pub call_index_behind: [bool; MAX_KEYS],
    /// A put failed with the fixed put order: the error reached the action and the task
    /// fails over (only a crash follows).
    pub failed: bool,
    /// Crashed and not yet restored.
    pub down: bool,
    /// A restore scaled the job in (`rescale`): one subtask runs every key.
    pub scaled_in: bool,
    /// Per key, its put in flight (its record's state key is of that key). At most one
    /// key has one unless `concurrent-puts`.
    #[serde(serialize_with = "present_puts")]
    pub puts: [Option<Put>; MAX_KEYS],
    /// Store cache per state key.
    pub cache: Cache,
    /// Store: per state key, the latest acknowledged offset (patched designs only).
    pub acked_offset: AckedOffsets,
    /// Store: per key, the boundary map of `unpruned-tracking` (finished inputs the store
    /// was told of; 0 when absent).
    pub key_boundary: [u8; MAX_KEYS],
    /// The log, per state key: what its records show, once one landed.
    pub log: Log,
    /// Per partition, the end offset (records landed so far).
    pub log_len: [u8; MAX_PARTITIONS],
    /// Triggered checkpoints not yet completed, oldest first, filled from the front (at
    /// most `concurrent-checkpoints` of them). Completing one drops it and every older
    /// one and a crash aborts all, so the pending ones are always the latest taken: of
    /// `n` pending, slot `j` holds checkpoint `checkpoints - n + 1 + j` (ids count from 1).
    #[serde(serialize_with = "present_checkpoints")]
    pub pending: [Option<Checkpoint>; MAX_CONCURRENT],
    /// The latest completed checkpoint (survives crashes).
    pub completed: Option<Checkpoint>,
    /// Checkpoints triggered so far.
    pub checkpoints: u8,
    /// Crashes so far.
    pub crashes: u8,
    /// Sends failed so far.
    pub failed_sends: u8,
    /// Per key, outputs committed by the sink (it commits per completed checkpoint).
    pub committed_outputs: [u8; MAX_KEYS],
    /// A send of an earlier incarnation that its crash did not stop (`zombie-sends`): the
    /// producer may still deliver it, at any later time, over newer records.
    pub zombie: Option<Record>,
    /// The zombie's partition got a fence of a newer epoch after the zombie was sent
    /// (`epoch-fencing`): if it lands now, it lands stale.
    pub zombie_fenced: bool,
    /// Partitions the restore in progress has fenced so far (`epoch-fencing`; in
    /// partition order, while down).
    pub fenced_partitions: u8,
    /// Ghost: supplier runs per (state key, call).
    pub supplier_runs: Runs,
    /// Ghost: what the last step did.
    pub events: Events,
}

impl State {
    /// The initial state: nothing delivered, nothing saved, no checkpoint.
    pub fn empty() -> State {
        State {
            next_seq: [0; MAX_KEYS],
            finished: [0; MAX_KEYS],
            next_action: [0; MAX_KEYS],
            phase: [Phase::Idle; MAX_KEYS],
            call_index_behind: [false; MAX_KEYS],
            failed: false,
            down: false,
            scaled_in: false,
            puts: [None; MAX_KEYS],
            cache: Cache::EMPTY,
            acked_offset: AckedOffsets::NONE,
            key_boundary: [0; MAX_KEYS],
            log: Log::EMPTY,
            log_len: [0; MAX_PARTITIONS],
            pending: [None; MAX_CONCURRENT],
            completed: None,
            checkpoints: 0,
            crashes: 0,
            failed_sends: 0,
            committed_outputs: [0; MAX_KEYS],
            zombie: None,
            zombie_fenced: false,
            fenced_partitions: 0,
            supplier_runs: Runs::ZERO,
            events: Events::NONE,
        }
    }

    /// The cached state of a state key.
    pub fn cached(&self, key: StateKey) -> Option<ActionState> {
        self.cache.get(key.slot())
    }

    /// The latest record of a state key and its offset.
    pub fn latest_record(&self, key: StateKey) -> Option<(ActionState, u8)> {
        self.log.get(key.slot()).map(|r| (r.latest, r.offset))
    }

    /// The states that ever landed for a state key.
    pub fn landed_states(&self, key: StateKey) -> StateSet {
        self.log
            .get(key.slot())
            .map_or(StateSet::default(), |r| r.landed)
    }

    /// Whether a record holding `state` ever landed for a state key.
    pub fn landed(&self, key: StateKey, state: ActionState) -> bool {
        self.landed_states(key).contains(state)
    }

    /// Supplier runs of call `call` of a state key.
    pub fn runs(&self, key: StateKey, call: u8) -> u8 {
        self.supplier_runs.get(key, call)
    }

    /// The puts in flight, in key order.
    pub fn puts_in_flight(&self) -> impl Iterator<Item = Put> + '_ {
        self.puts.iter().flatten().copied()
    }

    /// Whether any put is in flight.
    pub fn any_put(&self) -> bool {
        self.puts.iter().any(Option::is_some)
    }

    /// Whether a state key's put is in flight.
    pub fn put_in_flight(&self, key: StateKey) -> bool {
        self.puts[key.key as usize].is_some_and(|p| p.record.state_key == key)
    }

    /// Checkpoints pending.
    pub fn pending_count(&self) -> usize {
        self.pending.iter().take_while(|c| c.is_some()).count()
    }

    /// The pending checkpoints with their ids, oldest first.
    pub fn pending_checkpoints(&self) -> impl Iterator<Item = (u8, Checkpoint)> + '_ {
        let first = self.checkpoints + 1 - self.pending_count() as u8;
        self.pending
            .iter()
            .flatten()
            .zip(first..)
            .map(|(c, id)| (id, *c))
    }

    /// The state key of key `k`'s queue head (the action that runs next or is running).
    pub fn head(&self, k: usize) -> StateKey {
        StateKey {
            key: k as u8,
            seq: self.finished[k],
            action: self.next_action[k],
        }
    }
}
