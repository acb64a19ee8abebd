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

use std::num::NonZeroU8;

use serde::{Serialize, Serializer};

use super::{MAX_ACTIONS, MAX_CALLS, MAX_CONCURRENT, MAX_INPUTS, MAX_KEYS, MAX_PARTITIONS};

/// Number of state keys (key, sequence number, action) a model can name.
pub const MAX_SLOTS: usize = MAX_KEYS * MAX_INPUTS * MAX_ACTIONS;

/// One action's saved state: which calls' results it holds, in the order they were
/// saved, and whether it completed (completing clears the call results).
///
/// Results are appended at the action's call index, and the runtime advances that index
/// only once the put of a result succeeded; after a put error the action catches, the
/// next call's result takes the failed one's place, so a saved list may skip a call
/// (`[call 0, call 2]`). Calls run in order, so the list is increasing and is kept as
/// the set of calls it holds.
///
/// Held as one non-zero byte (one plus the held calls' bits shifted past the completed
/// bit), so that `Option<ActionState>` is one byte too and the fingerprint reads a
/// slot's state without a branch; the fields are read through [`ActionState::holds`],
/// [`ActionState::calls`] and [`ActionState::completed`].
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct ActionState(NonZeroU8);

/// The bits of a set of calls below [`MAX_CALLS`].
const ALL_CALLS: u8 = (1 << MAX_CALLS) - 1;

impl ActionState {
    /// The state of a completed action.
    pub const COMPLETED: ActionState = ActionState::new(0, true);

    const fn new(held: u8, completed: bool) -> ActionState {
        assert!(held & !ALL_CALLS == 0, "a call beyond the model's bound");
        assert!(
            !completed || held == 0,
            "completing clears the call results"
        );
        match NonZeroU8::new(1 + ((held << 1) | completed as u8)) {
            Some(code) => ActionState(code),
            None => unreachable!(),
        }
    }

    /// The state holding the first `calls` call results.
    pub const fn with_calls(calls: u8) -> ActionState {
        ActionState::new((1 << calls) - 1, false)
    }

    /// The state holding the results of the calls in `calls`, in call order.
    pub fn holding(calls: impl IntoIterator<Item = u8>) -> ActionState {
        let held = calls.into_iter().fold(0, |bits, c| bits | 1 << c);
        ActionState::new(held, false)
    }

    fn held_bits(self) -> u8 {
        (self.0.get() - 1) >> 1
    }

    /// Saved call results.
    pub fn calls(self) -> u8 {
        self.held_bits().count_ones() as u8
    }

    /// Whether call `call`'s result is saved.
    pub fn holds(self, call: u8) -> bool {
        self.held_bits() & (1 << call) != 0
    }

    /// The calls whose results are saved, in call (and list) order.
    pub fn held(self) -> impl Iterator<Item = u8> {
        (0..MAX_CALLS as u8).filter(move |&c| self.holds(c))
    }

    /// The list holds the first [`ActionState::calls`] calls' results, none skipped.
    pub fn in_call_order(self) -> bool {
        self.held_bits() & self.held_bits().wrapping_add(1) == 0
    }

    /// The results of the calls below `call` only (the list cleared from there).
    pub fn results_before(self, call: u8) -> ActionState {
        ActionState::new(self.held_bits() & ((1 << call) - 1), false)
    }

    /// This list with call `call`'s result appended (`call` above every held call).
    pub fn with_result(self, call: u8) -> ActionState {
        debug_assert!(
            self.held_bits() >> call == 0,
            "results are appended in call order"
        );
        ActionState::new(self.held_bits() | 1 << call, false)
    }

    /// The action finished; its output is part of the state.
    pub fn completed(self) -> bool {
        (self.0.get() - 1) & 1 == 1
    }

    /// Four bits: the member index of a [`StateSet`].
    fn index(self) -> u8 {
        self.0.get() - 1
    }

    fn of_index(index: u8) -> ActionState {
        ActionState::new(index >> 1, index & 1 == 1)
    }
}

impl std::fmt::Debug for ActionState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("ActionState");
        d.field("calls", &self.calls());
        if !self.in_call_order() {
            d.field("held", &self.held().collect::<Vec<_>>());
        }
        d.field("completed", &self.completed()).finish()
    }
}

/// The fields' form: `{"calls": n, "completed": b}`, with `"held": [..]`, the calls
/// whose results the list holds, when it skips a call.
#[derive(Serialize, serde::Deserialize)]
struct ActionStateFields {
    calls: u8,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    held: Option<Vec<u8>>,
    completed: bool,
}

impl Serialize for ActionState {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ActionStateFields {
            calls: self.calls(),
            held: (!self.in_call_order()).then(|| self.held().collect()),
            completed: self.completed(),
        }
        .serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for ActionState {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ActionState, D::Error> {
        let f = ActionStateFields::deserialize(d)?;
        let held = f.held.unwrap_or_else(|| (0..f.calls).collect());
        if held.len() != f.calls as usize || held.iter().any(|&c| c as usize >= MAX_CALLS) {
            return Err(serde::de::Error::custom(format!(
                "an action state holds at most {MAX_CALLS} call results, of calls below \
                 {MAX_CALLS}, as many as `calls` ({}) says",
                f.calls
            )));
        }
        if f.completed && f.calls > 0 {
            return Err(serde::de::Error::custom(
                "a completed action state holds no call results",
            ));
        }
        if f.completed {
            return Ok(ActionState::COMPLETED);
        }
        Ok(ActionState::holding(held))
    }
}

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

/// A set of [`ActionState`]s (every state that fits [`MAX_CALLS`] calls).
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct StateSet(u16);

// The largest index, every call's bit and the completed bit, is a bit of a u16.
const _: () = assert!(
    ((ALL_CALLS as usize) << 1) + 1 < 16,
    "an action state's index is a bit of a u16"
);

impl StateSet {
    /// Whether `state` is in the set.
    pub fn contains(self, state: ActionState) -> bool {
        self.0 & (1 << state.index()) != 0
    }

    /// Adds `state`.
    pub fn insert(&mut self, state: ActionState) {
        self.0 |= 1 << state.index();
    }

    /// Whether the set holds a state that saved call `call`'s result.
    pub fn holds_call(self, call: u8) -> bool {
        self.iter().any(|st| st.holds(call))
    }

    /// Two bytes naming the set: equal for equal sets, different otherwise.
    pub fn code(self) -> u16 {
        self.0
    }

    /// The members, in code order.
    pub fn iter(self) -> impl Iterator<Item = ActionState> {
        (0..16u8)
            .filter(move |c| self.0 & (1 << c) != 0)
            .map(ActionState::of_index)
    }
}

impl std::fmt::Debug for StateSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl Serialize for StateSet {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

/// What the log holds of one state key's records. Replay is last-writer-wins per state
/// key, so the model keeps what a replay or a property can observe: the latest record
/// and its offset, and the set of states that ever landed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Records {
    /// The latest record's state.
    pub latest: ActionState,
    /// The latest record's offset in the key's partition.
    pub offset: u8,
    /// Every state that ever landed for the state key.
    pub landed: StateSet,
}

/// The present entries of a per-state-key container, named by state key, in slot order.
fn present<T>(get: impl Fn(usize) -> Option<T>) -> impl Iterator<Item = (StateKey, T)> {
    (0..MAX_SLOTS).filter_map(move |slot| Some((StateKey::of_slot(slot), get(slot)?)))
}

/// `Debug` of a per-state-key container: its present entries, as a map by state key.
macro_rules! debug_entries {
    ($($container:ty),*) => {$(
        impl std::fmt::Debug for $container {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_map().entries(self.entries()).finish()
            }
        }
    )*};
}

debug_entries!(Log, Cache, AckedOffsets);

/// The log as the model sees it: per state key, what its records show once one landed.
///
/// Kept field by field (one array per field, absent entries zero) so the fingerprint
/// reads whole arrays; [`Log::get`] and [`Log::set`] are the only way in, so an entry is
/// either wholly present or wholly absent.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Log {
    /// The latest record's state code, zero for none.
    latest: [u8; MAX_SLOTS],
    offset: [u8; MAX_SLOTS],
    landed: [u16; MAX_SLOTS],
}

impl Log {
    /// Nothing landed.
    pub const EMPTY: Log = Log {
        latest: [0; MAX_SLOTS],
        offset: [0; MAX_SLOTS],
        landed: [0; MAX_SLOTS],
    };

    /// What the records of the state key in `slot` show, if any landed.
    pub fn get(&self, slot: usize) -> Option<Records> {
        NonZeroU8::new(self.latest[slot]).map(|latest| Records {
            latest: ActionState(latest),
            offset: self.offset[slot],
            landed: StateSet(self.landed[slot]),
        })
    }

    /// Replaces what the records of the state key in `slot` show.
    pub fn set(&mut self, slot: usize, records: Option<Records>) {
        self.latest[slot] = state_byte(records.map(|r| r.latest));
        self.offset[slot] = records.map_or(0, |r| r.offset);
        self.landed[slot] = records.map_or(0, |r| r.landed.0);
    }

    /// Every state key with a landed record, in slot order.
    pub fn entries(&self) -> impl Iterator<Item = (StateKey, Records)> + '_ {
        present(|slot| self.get(slot))
    }
}

/// One landed state key's records, with its name.
#[derive(Serialize)]
struct LogEntry {
    state_key: StateKey,
    #[serde(flatten)]
    records: Records,
}

impl Serialize for Log {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(
            self.entries()
                .map(|(state_key, records)| LogEntry { state_key, records }),
        )
    }
}

/// The store's cache: per state key, the action state it holds, if any.
///
/// One byte per state key (the state's code, zero for none) so the fingerprint reads the
/// whole array; [`Cache::get`] and [`Cache::set`] are the only way in.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Cache([u8; MAX_SLOTS]);

impl Cache {
    /// Nothing cached.
    pub const EMPTY: Cache = Cache([0; MAX_SLOTS]);

    /// The cached state of the state key in `slot`.
    pub fn get(&self, slot: usize) -> Option<ActionState> {
        NonZeroU8::new(self.0[slot]).map(ActionState)
    }

    /// Caches `state` (or nothing) for the state key in `slot`.
    pub fn set(&mut self, slot: usize, state: Option<ActionState>) {
        self.0[slot] = state_byte(state);
    }

    /// Whether any state key in `slots` has a cached state.
    pub fn any(&self, slots: std::ops::Range<usize>) -> bool {
        self.0[slots].iter().any(|&b| b != 0)
    }

    /// Every cached state key and its state, in slot order.
    pub fn entries(&self) -> impl Iterator<Item = (StateKey, ActionState)> + '_ {
        present(|slot| self.get(slot))
    }
}

/// One cached state, with its state key's name.
#[derive(Serialize)]
struct CacheEntry {
    state_key: StateKey,
    state: ActionState,
}

impl Serialize for Cache {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(
            self.entries()
                .map(|(state_key, state)| CacheEntry { state_key, state }),
        )
    }
}

/// Per state key, the latest acknowledged offset the store tracks, if any.
///
/// One byte per state key (the offset plus one, zero for none) so the fingerprint reads
/// the whole array; [`AckedOffsets::get`] and [`AckedOffsets::set`] are the only way in.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct AckedOffsets([u8; MAX_SLOTS]);

impl AckedOffsets {
    /// No offset tracked.
    pub const NONE: AckedOffsets = AckedOffsets([0; MAX_SLOTS]);

    /// The acknowledged offset of the state key in `slot`.
    pub fn get(&self, slot: usize) -> Option<u8> {
        self.0[slot].checked_sub(1)
    }

    /// Tracks `offset` (or nothing) for the state key in `slot`.
    pub fn set(&mut self, slot: usize, offset: Option<u8>) {
        debug_assert!(offset.is_none_or(|o| o < u8::MAX), "offsets stay below 255");
        self.0[slot] = offset.map_or(0, |o| o + 1);
    }

    /// Whether any state key in `slots` has a tracked offset.
    pub fn any(&self, slots: std::ops::Range<usize>) -> bool {
        self.0[slots].iter().any(|&b| b != 0)
    }

    /// Every tracked state key and its offset, in slot order.
    pub fn entries(&self) -> impl Iterator<Item = (StateKey, u8)> + '_ {
        present(|slot| self.get(slot))
    }
}

/// One tracked offset, with its state key's name.
#[derive(Serialize)]
struct AckedEntry {
    state_key: StateKey,
    offset: u8,
}

impl Serialize for AckedOffsets {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(
            self.entries()
                .map(|(state_key, offset)| AckedEntry { state_key, offset }),
        )
    }
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

// The fingerprint below reads the per-state-key arrays as two words and a tail of two
// bytes, and the per-key ones as three bytes.
const _: () =
    assert!(MAX_SLOTS == 18 && MAX_KEYS == 3 && MAX_PARTITIONS == 2 && MAX_CONCURRENT == 3);

/// Offsets are below [`super::MAX_LOG`], so this byte names "no offset" in the
/// fingerprint.
const NO_OFFSET: u8 = 0xFF;

/// A slot's state as one byte, 0 for none.
#[inline(always)]
fn state_byte(state: Option<ActionState>) -> u8 {
    state.map_or(0, |s| s.0.get())
}

/// Little-endian value of a three-byte array.
#[inline(always)]
fn le3(a: [u8; 3]) -> u64 {
    a[0] as u64 | (a[1] as u64) << 8 | (a[2] as u64) << 16
}

/// The four words of an 18-entry array of two-byte values and its four-byte tail.
#[inline(always)]
fn words16(a: [u16; MAX_SLOTS]) -> ([u64; 4], u64) {
    let word = |i: usize| {
        a[i] as u64 | (a[i + 1] as u64) << 16 | (a[i + 2] as u64) << 32 | (a[i + 3] as u64) << 48
    };
    (
        [word(0), word(4), word(8), word(12)],
        a[16] as u64 | (a[17] as u64) << 16,
    )
}

/// The two words of an 18-byte array and its two-byte tail.
#[inline(always)]
fn words(a: [u8; MAX_SLOTS]) -> (u64, u64, u64) {
    let (lo, rest) = a.split_first_chunk::<8>().expect("18 bytes");
    let (hi, tail) = rest.split_first_chunk::<8>().expect("10 bytes");
    (
        u64::from_le_bytes(*lo),
        u64::from_le_bytes(*hi),
        tail[0] as u64 | (tail[1] as u64) << 8,
    )
}

/// A checkpoint as one full word (sequence numbers, finished, marker) and a half word
/// (next actions and the presence tag).
#[inline(always)]
fn checkpoint_words(c: &Option<Checkpoint>) -> (u64, u64) {
    match c {
        Some(c) => (
            le3(c.next_seq)
                | le3(c.finished) << 24
                | (c.marker[0] as u64) << 48
                | (c.marker[1] as u64) << 56,
            le3(c.next_action) | 1 << 24 | (c.awaiting_subtask as u64) << 25,
        ),
        None => (0, 0),
    }
}

/// Odd constants with well-spread bits (golden-ratio, SplitMix, SHA-2 words): the keys of
/// the NH-style compression in [`State`]'s hash.
const NH_KEYS: [u64; 24] = [
    0x9e37_79b9_7f4a_7c15,
    0xbf58_476d_1ce4_e5b9,
    0x94d0_49bb_1331_11eb,
    0x2545_f491_4f6c_dd1d,
    0xd6e8_feb8_6659_fd93,
    0xa076_1d64_78bd_642f,
    0xe703_7ed1_a0b4_28db,
    0x8ebc_6af0_9c88_c6e3,
    0x5899_65cc_7537_4cc3,
    0x1d8e_4e27_c47d_124f,
    0xff51_afd7_ed55_8ccd,
    0xc4ce_b9fe_1a85_ec53,
    0x87c3_7b91_1142_53d5,
    0x4cf5_ad43_2745_937f,
    0x6a09_e667_f3bc_c909,
    0xbb67_ae85_84ca_a73b,
    0x3c6e_f372_fe94_f82b,
    0xa54f_f53a_5f1d_36f1,
    0x510e_527f_ade6_82d1,
    0x9b05_688c_2b3e_6c1f,
    0x1f83_d9ab_fb41_bd6b,
    0x5be0_cd19_137e_2179,
    0x7137_4491_23ef_65cd,
    0xb5c0_fbcf_ec4d_3b2f,
];

impl std::hash::Hash for State {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        // Every field but the `supplier_runs` ghost, as bytes (the per-state-key arrays
        // as they are held; one byte per phase, put field and counter), laid out as 24
        // words, compressed NH-style (sum of products of key-offset word pairs, 128
        // bits) and handed to the hasher as two words: far fewer hasher rounds than the
        // fields one by one.
        let acked = self.acked_offset.0;
        let offset = self.log.offset;
        let landed = self.log.landed;
        let (c0, c1, ct) = words(self.cache.0);
        let (a0, a1, at) = words(acked);
        let (l0, l1, lt) = words(self.log.latest);
        let (o0, o1, ot) = words(offset);
        let ([d0, d1, d2, d3], dt) = words16(landed);
        let tails = ct | at << 16 | lt << 32 | ot << 48;
        debug_assert!(
            self.checkpoints < 8 && self.crashes < 4,
            "three and two bits"
        );
        let flags = (dt & 0xFFFF)
            | (self.log_len[0] as u64) << 16
            | (self.log_len[1] as u64) << 24
            | (self.failed as u64) << 32
            | (self.scaled_in as u64) << 33
            | (self.zombie_fenced as u64) << 34
            | (self.fenced_partitions as u64) << 35
            | (self.down as u64) << 40
            | (self.checkpoints as u64) << 41
            | (self.crashes as u64) << 44
            | (self.failed_sends as u64) << 48
            | (self.events.code() as u64) << 56;
        let keys1 = le3(self.next_seq) | le3(self.finished) << 24;
        let keys2 = le3(self.next_action)
            | le3(self.phase.map(Phase::code)) << 24
            | (self.events.committed_rerun as u64) << 48
            | (self
                .call_index_behind
                .iter()
                .rev()
                .fold(0, |bits, &b| bits << 1 | b as u64))
                << 49;
        let zombie = self.zombie.map_or(0xFFFF, |r| {
            (r.state_key.slot() as u16) << 4 | r.state.index() as u16
        });
        let keys3 = le3(self.committed_outputs) | le3(self.key_boundary) << 24 | (dt >> 16) << 48;
        // Per key, its put's record (its state key within the key, and its state) and
        // offset.
        let puts = self.puts.iter().enumerate().fold(0, |word, (k, put)| {
            let (record, offset) = match put {
                Some(p) => (
                    ((p.record.state_key.slot() - k * MAX_INPUTS * MAX_ACTIONS) as u8) << 4
                        | p.record.state.index(),
                    p.offset.unwrap_or(NO_OFFSET),
                ),
                None => (0xFF, NO_OFFSET),
            };
            word | (record as u64 | (offset as u64) << 8) << (16 * k)
        });
        let misc = puts | (zombie as u64) << 48;
        let (p0, p1) = checkpoint_words(&self.pending[0]);
        let (r0, r1) = checkpoint_words(&self.pending[1]);
        let (t0, t1) = checkpoint_words(&self.pending[2]);
        let (q0, q1) = checkpoint_words(&self.completed);
        let words = [
            c0,
            c1,
            a0,
            a1,
            l0,
            l1,
            o0,
            o1,
            d0,
            d1,
            d2,
            d3,
            tails,
            flags,
            keys1,
            keys2,
            keys3,
            misc,
            p0,
            q0,
            p1 | q1 << 32,
            r0,
            t0,
            r1 | t1 << 32,
        ];
        let mut acc = 0u128;
        for i in 0..12 {
            let x = words[2 * i].wrapping_add(NH_KEYS[2 * i]);
            let y = words[2 * i + 1].wrapping_add(NH_KEYS[2 * i + 1]);
            acc = acc.wrapping_add(x as u128 * y as u128);
        }
        h.write_u64(acc as u64);
        h.write_u64((acc >> 64) as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_set_holds_what_was_inserted_and_answers_holds_call() {
        let mut set = StateSet::default();
        assert!(!set.holds_call(0));
        set.insert(ActionState::with_calls(1));
        set.insert(ActionState::COMPLETED);
        assert!(set.contains(ActionState::with_calls(1)));
        assert!(set.contains(ActionState::COMPLETED));
        assert!(!set.contains(ActionState::with_calls(0)));
        // One result saved: call 0's, not call 1's.
        assert!(set.holds_call(0));
        assert!(!set.holds_call(1));
        assert_eq!(set.iter().count(), 2);
        // A list that skipped call 0 (its put failed, call 1's result took its place).
        set.insert(ActionState::holding([1]));
        assert!(set.holds_call(1) && !set.holds_call(2));
        assert_eq!(set.iter().count(), 3);
    }

    #[test]
    fn a_list_that_skips_a_call_keeps_which_calls_it_holds() {
        let skipped = ActionState::holding([0, 2]);
        assert_eq!(skipped.calls(), 2);
        assert!(!skipped.in_call_order() && ActionState::with_calls(2).in_call_order());
        assert!(skipped.holds(0) && !skipped.holds(1) && skipped.holds(2));
        assert_eq!(skipped.results_before(2), ActionState::with_calls(1));
        assert_eq!(
            ActionState::with_calls(1).with_result(2),
            skipped,
            "appended at the index"
        );
        assert_eq!(ActionState::of_index(skipped.index()), skipped);
        let json = serde_json::to_string(&skipped).unwrap();
        assert_eq!(json, r#"{"calls":2,"held":[0,2],"completed":false}"#);
        assert_eq!(serde_json::from_str::<ActionState>(&json).unwrap(), skipped);
        let aligned = serde_json::to_string(&ActionState::with_calls(2)).unwrap();
        assert_eq!(aligned, r#"{"calls":2,"completed":false}"#);
    }

    #[test]
    fn runs_count_per_state_key_and_call() {
        let mut runs = Runs::ZERO;
        let a = StateKey::of_slot(5);
        let b = StateKey::of_slot(6);
        runs.bump(a, 2);
        runs.bump(a, 2);
        runs.bump(b, 0);
        assert_eq!((runs.get(a, 2), runs.get(b, 0), runs.get(a, 1)), (2, 1, 0));
        runs.set(a, 2, 40);
        assert_eq!(runs.get(a, 2), 15, "saturates");
        assert_eq!(runs.nonzero().collect::<Vec<_>>(), [(a, 2, 15), (b, 0, 1)]);
    }

    #[test]
    fn an_action_state_keeps_its_fields() {
        for calls in 0..=MAX_CALLS as u8 {
            let st = ActionState::with_calls(calls);
            assert_eq!((st.calls(), st.completed()), (calls, false));
            assert_eq!(ActionState::of_index(st.index()), st);
        }
        assert_eq!(
            (
                ActionState::COMPLETED.calls(),
                ActionState::COMPLETED.completed()
            ),
            (0, true)
        );
        assert_eq!(std::mem::size_of::<Option<ActionState>>(), 1);
    }

    #[test]
    fn per_state_key_arrays_give_back_what_was_set() {
        let st = ActionState::with_calls(2);
        let records = Records {
            latest: st,
            offset: 0,
            landed: StateSet(1 << st.index()),
        };
        let (mut cache, mut acked, mut log) = (Cache::EMPTY, AckedOffsets::NONE, Log::EMPTY);
        cache.set(4, Some(st));
        acked.set(4, Some(0));
        log.set(4, Some(records));
        assert_eq!(
            (cache.get(4), acked.get(4), log.get(4)),
            (Some(st), Some(0), Some(records))
        );
        assert_eq!((cache.get(3), acked.get(3), log.get(3)), (None, None, None));
        assert!(cache.any(3..5) && !cache.any(0..4));
        assert_eq!(
            log.entries().map(|(k, _)| k.slot()).collect::<Vec<_>>(),
            [4]
        );
        cache.set(4, None);
        acked.set(4, None);
        log.set(4, None);
        assert_eq!(
            (cache, acked, log),
            (Cache::EMPTY, AckedOffsets::NONE, Log::EMPTY)
        );
    }

    fn fingerprint(s: &State) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        s.hash(&mut h);
        h.finish()
    }

    #[test]
    fn the_fingerprint_tells_apart_what_the_fields_tell_apart() {
        // Presence matters even where the value is the zero byte: an offset 0, a record
        // at offset 0, a state with no call results.
        let base = State::empty();
        let st = ActionState::with_calls(0);
        let mut variants: Vec<State> = Vec::new();
        let mut with = |f: &dyn Fn(&mut State)| {
            let mut s = base.clone();
            f(&mut s);
            variants.push(s);
        };
        with(&|_| {});
        with(&|s| s.cache.set(0, Some(st)));
        with(&|s| s.cache.set(17, Some(ActionState::COMPLETED)));
        with(&|s| s.acked_offset.set(0, Some(0)));
        with(&|s| s.acked_offset.set(17, Some(0)));
        with(&|s| {
            s.log.set(
                0,
                Some(Records {
                    latest: st,
                    offset: 0,
                    landed: StateSet(1),
                }),
            )
        });
        with(&|s| s.phase[2] = Phase::AtCall(0));
        with(&|s| s.call_index_behind[2] = true);
        with(&|s| s.call_index_behind[0] = true);
        with(&|s| s.cache.set(0, Some(ActionState::holding([1]))));
        with(&|s| {
            s.log.set(
                17,
                Some(Records {
                    latest: ActionState::holding([0, 2]),
                    offset: 0,
                    landed: StateSet(1 << ActionState::holding([0, 2]).index()),
                }),
            )
        });
        with(&|s| s.checkpoints = 4);
        with(&|s| s.crashes = 3);
        with(&|s| s.phase[2] = Phase::AwaitCompletion);
        let put = |slot, offset| {
            Some(Put {
                record: Record {
                    state_key: StateKey::of_slot(slot),
                    state: st,
                },
                offset,
            })
        };
        let last = MAX_SLOTS - 1;
        let last_key = StateKey::of_slot(last).key as usize;
        with(&|s| s.puts[0] = put(0, None));
        with(&|s| s.puts[0] = put(0, Some(0)));
        with(&|s| s.puts[last_key] = put(last, None));
        with(&|s| {
            s.puts[0] = put(0, Some(0));
            s.puts[last_key] = put(last, Some(0));
        });
        with(&|s| s.failed_sends = 1);
        with(&|s| s.scaled_in = true);
        with(&|s| {
            s.zombie = Some(Record {
                state_key: StateKey::of_slot(0),
                state: st,
            })
        });
        with(&|s| s.events.duplicate_output = true);
        with(&|s| s.events.committed_rerun = true);
        with(&|s| {
            s.pending[2] = Some(Checkpoint {
                next_seq: [0; MAX_KEYS],
                finished: [0; MAX_KEYS],
                next_action: [0; MAX_KEYS],
                marker: [0; MAX_PARTITIONS],
                awaiting_subtask: false,
            })
        });
        with(&|s| {
            s.pending[1] = Some(Checkpoint {
                next_seq: [0; MAX_KEYS],
                finished: [0; MAX_KEYS],
                next_action: [0; MAX_KEYS],
                marker: [0; MAX_PARTITIONS],
                awaiting_subtask: true,
            })
        });
        with(&|s| s.events.checkpoint_over_saved = true);
        with(&|s| s.events.marker_rewound = true);

        let prints: std::collections::HashSet<u64> = variants.iter().map(fingerprint).collect();
        assert_eq!(prints.len(), variants.len());
        // The ghost is left out.
        let mut ghost = base.clone();
        ghost.supplier_runs.bump(StateKey::of_slot(0), 0);
        assert_eq!(fingerprint(&ghost), fingerprint(&base));
    }

    #[test]
    fn every_state_key_has_its_slot() {
        for slot in 0..MAX_SLOTS {
            assert_eq!(StateKey::of_slot(slot).slot(), slot);
        }
    }
}
