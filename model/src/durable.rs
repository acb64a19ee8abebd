//! Durable actions under checkpoint, crash and restore: flink-agents issue 1158.
//!
//! Flink Agents runs *actions* per input of a key. An action's external calls go through
//! durable calls: each call's result is saved (as the whole action state) to a
//! partitioned log (a Kafka topic) so that a restored job reuses it instead of calling the
//! external service again. Issue 1158 ("Reuse saved Kafka action results after
//! recovery") is that the checkpoint's recovery marker was the log's end offset at
//! snapshot time: a checkpoint taken while an action is still queued, after its first call
//! was saved, makes the restored job skip that saved result and call the supplier again.
//! The seed's regression printed output `70` either way, with `supplier_calls=2` before
//! the fix and `1` after.
//!
//! This is a stateright model in the TLA+ style of stateright's two-phase-commit
//! example: a [`State`] of small fixed-size arrays, an [`Action`] enum whose variants are
//! the protocol's steps, `actions` emitting only enabled steps, and `next_state` applying
//! one. The design under check ([`Design`]) and the environment ([`Bounds`]) are data, so
//! the seed's verdict table is reproduced by running one model over four designs.
//!
//! Components:
//! - the *source* delivers inputs per key (re-delivering after the restored checkpoint);
//! - the *operator* keeps per-key keyed state (next sequence number, the queue as "next
//!   action of the oldest unfinished input", finished inputs), runs actions and emits
//!   outputs to a sink that commits per checkpoint;
//! - the *store* keeps a cache of action states, per-state latest acknowledged offsets
//!   (patched designs) and, in one intermediate design, a per-key boundary map;
//! - the *log* holds records (whole action states) per partition; puts are sent one at a
//!   time (they are sequential within a subtask), land, and are acknowledged or fail.
//!   Replay is last-writer-wins per state key, so the model keeps of each state key's
//!   records what a replay or a property can observe: the latest one and its offset, and
//!   the set of states that ever landed for it;
//! - *checkpoints* capture keyed state and the recovery marker, complete (prune, commit
//!   outputs), and are restored after a crash. Up to `concurrent-checkpoints` may be
//!   pending at once (Flink's `max-concurrent-checkpoints`, default 1); completing one
//!   subsumes the older pending ones, as Flink's coordinator and the operator do.

use serde::{Deserialize, Serialize};
use stateright::{Model, Property};

use crate::settings::{Param, ParamKind, Settings, SettingsError};
use crate::{check, Expectation, Spec, Verdict};

/// Largest number of keys a model may have.
pub const MAX_KEYS: usize = 3;
/// Largest number of inputs per key.
pub const MAX_INPUTS: usize = 3;
/// Largest number of actions per input.
pub const MAX_ACTIONS: usize = 2;
/// Largest number of durable calls per action.
pub const MAX_CALLS: usize = 3;
/// Largest number of log partitions.
pub const MAX_PARTITIONS: usize = 2;
/// Largest number of checkpoints pending at once (`concurrent-checkpoints`).
pub const MAX_CONCURRENT: usize = 3;
/// Records one partition can hold (offsets are bytes below this).
pub const MAX_LOG: usize = 200;

/// A design of the store and its recovery marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Design {
    /// The code before the fix: the marker is the end offset at snapshot time and a put
    /// caches the state before the send is acknowledged.
    Unpatched,
    /// The rewound marker of the fix, but the put still caches before the acknowledgement.
    OldPutOrder,
    /// The intermediate fix: its own per-key boundary map decides which states need replay
    /// and is never dropped on prune.
    UnprunedTracking,
    /// The merged fix: rewound marker from the checkpoint's keyed state, cache after
    /// acknowledgement, no per-key map.
    Fixed,
}

/// Every design, in table order.
pub const DESIGNS: [Design; 4] = [
    Design::Unpatched,
    Design::OldPutOrder,
    Design::UnprunedTracking,
    Design::Fixed,
];

/// Every design's command-line name, in [`DESIGNS`] order: the one list the command
/// line, the tables and the error messages use.
pub const DESIGN_NAMES: [&str; DESIGNS.len()] = {
    let mut names = [""; DESIGNS.len()];
    let mut i = 0;
    while i < DESIGNS.len() {
        names[i] = DESIGNS[i].name();
        i += 1;
    }
    names
};

impl Design {
    /// The command-line name.
    pub const fn name(self) -> &'static str {
        match self {
            Design::Unpatched => "unpatched",
            Design::OldPutOrder => "old-put-order",
            Design::UnprunedTracking => "unpruned-tracking",
            Design::Fixed => "fixed",
        }
    }

    /// The design of a command-line name.
    pub fn from_name(name: &str) -> Result<Design, SettingsError> {
        DESIGNS
            .into_iter()
            .find(|d| d.name() == name)
            .ok_or_else(|| {
                SettingsError(format!(
                    "unknown design `{name}` for durable (known: {})",
                    DESIGN_NAMES.join(", ")
                ))
            })
    }

    /// Old put order: send, update the cache, flush; a failed send is not reported.
    pub fn caches_before_ack(self) -> bool {
        matches!(self, Design::Unpatched | Design::OldPutOrder)
    }

    /// The marker is rewound to unfinished states' latest acknowledged offsets.
    pub fn rewinds_marker(self) -> bool {
        !matches!(self, Design::Unpatched)
    }

    /// The store keeps its own per-key boundary map, never pruned.
    pub fn keeps_key_map(self) -> bool {
        matches!(self, Design::UnprunedTracking)
    }
}

mod state;

pub use state::{
    AckedOffsets, ActionState, Cache, Checkpoint, Events, Log, Phase, Put, Record, Records, Runs,
    State, StateKey, StateSet, MAX_SLOTS,
};

/// A step of the protocol. Per-key steps carry the key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Action {
    /// The source delivers the key's next input; it gets the next sequence number.
    DeliverInput(u8),
    /// The key's queue head starts (or is skipped when its saved state is completed).
    StartAction(u8),
    /// A durable call returns the saved result at its index.
    ReuseResult(u8),
    /// A durable call finds no saved result and calls the supplier.
    CallSupplier(u8),
    /// The state with the new call result is sent to the log.
    SendPut(u8),
    /// All calls done: the state marked completed is sent to the log.
    CompleteAction(u8),
    /// The in-flight put's record lands in its partition, its acknowledgement not yet
    /// back (only with asynchronous puts; synchronous puts land and are acknowledged in
    /// one step, since nothing that reads the log can come in between).
    LandPut,
    /// The producer learns the landed record's offset (landing it first if needed).
    AckPut,
    /// The producer sees the send fail; `landed`: the record reached the log anyway.
    FailPut {
        /// Whether the record landed before the failure.
        landed: bool,
    },
    /// A checkpoint snapshots keyed state and the recovery marker.
    TriggerCheckpoint,
    /// The pending checkpoint with this id (checkpoints count from 1 in trigger order)
    /// completes: prune, commit output. Every older pending checkpoint is subsumed: it is
    /// dropped and never completes.
    CompleteCheckpoint(u8),
    /// The task fails; everything not checkpointed is lost. An in-flight send that had
    /// not landed lands (`landed`) or is lost: both are explored.
    Crash {
        /// Whether the in-flight send lands (false when no send is in flight).
        landed: bool,
    },
    /// Restore from the latest completed checkpoint and replay the log from its marker.
    Restore,
}

/// Bounds and environment assumptions, read once from [`Settings`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// Keys.
    pub keys: u8,
    /// Inputs per key.
    pub inputs: u8,
    /// Actions per input.
    pub actions: u8,
    /// Durable calls per action.
    pub calls: u8,
    /// Log partitions (key `k` writes to partition `k % partitions`).
    pub partitions: u8,
    /// Crashes allowed.
    pub crashes: u8,
    /// Checkpoints that may be triggered.
    pub checkpoints: u8,
    /// Checkpoints that may be pending at once (Flink's
    /// `execution.checkpointing.max-concurrent-checkpoints`, default 1).
    pub concurrent_checkpoints: u8,
    /// Sends that may fail (before landing, or after when `fail_after_landing`).
    pub send_failures: u8,
    /// A send may fail after its record landed.
    pub fail_after_landing: bool,
    /// No snapshot between a record's send and its acknowledgement.
    pub synchronous_puts: bool,
    /// Checkpoints (and other keys' steps) may come between an action's calls
    /// (continuation executor); otherwise an action runs alone, start to completion.
    pub mid_action_checkpoints: bool,
    /// A crash may come before any checkpoint completed (restart from nothing).
    pub restart_without_checkpoint: bool,
    /// Offsets are renumbered by rank after every step (an exact reduction); off, they
    /// are the positions a real partition would assign.
    pub compact_offsets: bool,
}

const PARAMS: &[Param] = &[
    Param {
        name: "keys",
        help: "keys of the input stream",
        kind: ParamKind::Int {
            default: 2,
            min: 1,
            max: MAX_KEYS as u64,
        },
    },
    Param {
        name: "inputs",
        help: "inputs per key",
        kind: ParamKind::Int {
            default: 2,
            min: 1,
            max: MAX_INPUTS as u64,
        },
    },
    Param {
        name: "actions",
        help: "actions per input",
        kind: ParamKind::Int {
            default: 1,
            min: 1,
            max: MAX_ACTIONS as u64,
        },
    },
    Param {
        name: "calls",
        help: "durable calls per action",
        kind: ParamKind::Int {
            default: 2,
            min: 1,
            max: MAX_CALLS as u64,
        },
    },
    Param {
        name: "partitions",
        help: "log partitions (key k writes to partition k mod partitions)",
        kind: ParamKind::Int {
            default: 1,
            min: 1,
            max: MAX_PARTITIONS as u64,
        },
    },
    Param {
        name: "crashes",
        help: "task failures (each followed by a restore)",
        kind: ParamKind::Int {
            default: 1,
            min: 0,
            max: 3,
        },
    },
    Param {
        name: "checkpoints",
        help: "checkpoints that may be triggered",
        kind: ParamKind::Int {
            default: 2,
            min: 0,
            max: 4,
        },
    },
    Param {
        name: "concurrent-checkpoints",
        help: "checkpoints pending at once (a later one's completion subsumes older ones)",
        kind: ParamKind::Int {
            default: 1,
            min: 1,
            max: MAX_CONCURRENT as u64,
        },
    },
    Param {
        name: "send-failures",
        help: "sends that may fail before their record lands (or after, see fail-after-landing)",
        kind: ParamKind::Int {
            default: 0,
            min: 0,
            max: 2,
        },
    },
    Param {
        name: "fail-after-landing",
        help: "a failing send may have landed its record first",
        kind: ParamKind::Bool { default: false },
    },
    Param {
        name: "synchronous-puts",
        help: "no snapshot between a put's send and its acknowledgement",
        kind: ParamKind::Bool { default: true },
    },
    Param {
        name: "mid-action-checkpoints",
        help: "checkpoints may come between an action's calls (continuation executor)",
        kind: ParamKind::Bool { default: true },
    },
    Param {
        name: "restart-without-checkpoint",
        help: "a crash may come before any checkpoint completed",
        kind: ParamKind::Bool { default: false },
    },
    Param {
        name: "compact-offsets",
        help: "renumber offsets by rank after every step (exact reduction; off: real positions)",
        kind: ParamKind::Bool { default: true },
    },
];

const SCENARIOS: &[(&str, &[(&str, &str)])] = &[
    (
        "synchronous-executor",
        &[
            ("mid-action-checkpoints", "false"),
            ("crashes", "2"),
            ("inputs", "1"),
        ],
    ),
    (
        "synchronous-executor-one-crash",
        &[("mid-action-checkpoints", "false"), ("inputs", "1")],
    ),
    ("failed-send", &[("send-failures", "1"), ("inputs", "1")]),
    (
        "fail-after-landing",
        &[
            ("send-failures", "1"),
            ("fail-after-landing", "true"),
            ("inputs", "1"),
        ],
    ),
    (
        "asynchronous-puts",
        &[("synchronous-puts", "false"), ("inputs", "1")],
    ),
    (
        "restart-without-checkpoint",
        &[("restart-without-checkpoint", "true"), ("inputs", "1")],
    ),
    (
        "concurrent-checkpoints",
        &[
            ("concurrent-checkpoints", "2"),
            ("checkpoints", "3"),
            ("inputs", "1"),
        ],
    ),
];

/// Property names, in `properties()` order.
pub mod property {
    /// The supplier never runs for a call whose result a landed record holds.
    pub const CALL_AT_MOST_ONCE: &str = "call at most once";
    /// No action of an input a completed checkpoint counts finished runs again.
    pub const FINISHED_STAYS_FINISHED: &str = "finished stays finished";
    /// No output is emitted again for an input whose output is committed.
    pub const SAME_OUTPUT: &str = "same output";
    /// Outside an in-flight put, every cached state is a record in the log.
    pub const CACHE_HOLDS_LOG: &str = "cache only holds what the log holds";
    /// Per-key tracking only for keys with live state or in-flight inputs.
    pub const BOUNDED_TRACKING: &str = "bounded tracking";
    /// Every unfinished state's latest record is at or after the completed marker.
    pub const MARKER_IS_SAFE: &str = "marker is safe";
    /// Sometimes: a durable call reuses a saved result after a restore.
    pub const REUSED_AFTER_RESTORE: &str = "a saved result is reused after restore";
    /// Sometimes: a crash comes while an action runs.
    pub const CRASH_MID_ACTION: &str = "a crash lands mid-action";
    /// Sometimes: a checkpoint captures a queued action.
    pub const CHECKPOINT_WITH_QUEUED: &str = "a checkpoint is taken with an action queued";
    /// Sometimes: output is committed after a restore.
    pub const OUTPUT_AFTER_RESTORE: &str = "an output is committed after a restore";

    /// The safety properties.
    pub const SAFETY: [&str; 6] = [
        CALL_AT_MOST_ONCE,
        FINISHED_STAYS_FINISHED,
        SAME_OUTPUT,
        CACHE_HOLDS_LOG,
        BOUNDED_TRACKING,
        MARKER_IS_SAFE,
    ];
    /// The reachability properties.
    pub const REACHABILITY: [&str; 4] = [
        REUSED_AFTER_RESTORE,
        CRASH_MID_ACTION,
        CHECKPOINT_WITH_QUEUED,
        OUTPUT_AFTER_RESTORE,
    ];
}

/// The durable-actions model: one design, one set of bounds, an optional property focus.
#[derive(Clone, Debug)]
pub struct Durable {
    /// The design under check.
    pub design: Design,
    /// Bounds and assumptions.
    pub bounds: Bounds,
    settings: Settings,
    focus: Option<&'static str>,
    /// Every state key within the bounds, in slot order.
    state_keys: Vec<StateKey>,
    /// Per partition, the slots of the state keys whose records it holds.
    partition_slots: [Vec<u8>; MAX_PARTITIONS],
}

impl Durable {
    /// The model for a design with default settings.
    pub fn new(design: Design) -> Durable {
        Durable::build(design.name(), &Settings::defaults(PARAMS))
            .expect("default settings are valid")
    }

    /// The model for a design under a named scenario (`default` or one of
    /// [`Spec::scenarios`]).
    pub fn scenario(design: Design, scenario: &str) -> Result<Durable, SettingsError> {
        let overrides: &[(&str, &str)] = if scenario == "default" {
            &[]
        } else {
            SCENARIOS
                .iter()
                .find(|(name, _)| *name == scenario)
                .map(|(_, o)| *o)
                .ok_or_else(|| SettingsError(format!("unknown scenario `{scenario}`")))?
        };
        Durable::build(design.name(), &Settings::parse(PARAMS, overrides)?)
    }

    fn slot_range(&self) -> impl Iterator<Item = StateKey> + '_ {
        self.state_keys.iter().copied()
    }

    fn partition(&self, key: u8) -> usize {
        (key % self.bounds.partitions) as usize
    }

    fn can_crash(&self, s: &State) -> bool {
        s.crashes < self.bounds.crashes
            && (s.completed.is_some() || self.bounds.restart_without_checkpoint)
    }

    /// Whether a landed record holds call `call`'s result for `sk`.
    fn log_holds(&self, s: &State, sk: StateKey, call: u8) -> bool {
        s.landed_states(sk).holds_call(call)
    }

    /// The recovery marker of partition `p` for a snapshot of `s`.
    fn marker(&self, s: &State, p: usize) -> u8 {
        let mut marker = s.log_len[p];
        if !self.design.rewinds_marker() {
            return marker;
        }
        for sk in self.slot_range() {
            if self.partition(sk.key) != p {
                continue;
            }
            let k = sk.key as usize;
            let boundary = if self.design.keeps_key_map() {
                s.key_boundary[k]
            } else {
                s.finished[k]
            };
            if let Some(offset) = s.acked_offset.get(sk.slot()) {
                if sk.seq >= boundary {
                    marker = marker.min(offset);
                }
            }
        }
        marker
    }

    /// The head action of key `k` is done: advance the queue; the last action of an
    /// input finishes it and emits its output.
    fn finish_action(&self, next: &mut State, k: usize) {
        next.phase[k] = Phase::Idle;
        next.next_action[k] += 1;
        if next.next_action[k] == self.bounds.actions {
            next.next_action[k] = 0;
            if next.finished[k] < next.committed_outputs[k] {
                next.events.duplicate_output = true;
            }
            next.finished[k] += 1;
            if self.design.keeps_key_map() {
                next.key_boundary[k] = next.finished[k];
            }
        }
    }

    /// The action waiting on the put of key `k` continues.
    fn after_put(&self, next: &mut State, k: usize) {
        match next.phase[k] {
            Phase::AwaitPut(i) => next.phase[k] = Phase::AtCall(i + 1),
            Phase::AwaitCompletion => self.finish_action(next, k),
            other => unreachable!("put answered while key {k} is {other:?}"),
        }
    }

    /// The in-flight put's record lands at the end of its partition.
    fn land(&self, next: &mut State) {
        let Some(put) = next.put.as_mut() else {
            unreachable!("land without a put in flight");
        };
        let record = put.record;
        let p = self.partition(record.state_key.key);
        let offset = next.log_len[p];
        debug_assert!(put.offset.is_none(), "a put lands once");
        put.offset = Some(offset);
        let slot = record.state_key.slot();
        let mut landed = next.log.get(slot).map_or(StateSet::default(), |r| r.landed);
        landed.insert(record.state);
        next.log.set(
            slot,
            Some(Records {
                latest: record.state,
                offset,
                landed,
            }),
        );
        next.log_len[p] += 1;
    }

    /// Renumbers the offsets of every partition by rank, keeping their order and
    /// equalities. Every step only compares offsets or appends at the end offset, so
    /// states that differ only in the gaps superseded records left behind behave alike;
    /// merging them is an exact reduction.
    fn compact_offsets(&self, s: &mut State) {
        for p in 0..self.bounds.partitions as usize {
            let slots = &self.partition_slots[p];
            let mut seen = [0u64; 4];
            let mut note = |v: u8| seen[(v >> 6) as usize] |= 1 << (v & 63);
            for &slot in slots {
                let slot = slot as usize;
                if let Some(r) = s.log.get(slot) {
                    note(r.offset);
                }
                if let Some(o) = s.acked_offset.get(slot) {
                    note(o);
                }
            }
            let put_here = s
                .put
                .filter(|put| self.partition(put.record.state_key.key) == p);
            if let Some(o) = put_here.and_then(|put| put.offset) {
                note(o);
            }
            for c in s.pending.iter().chain([&s.completed]).flatten() {
                note(c.marker[p]);
            }
            note(s.log_len[p]);
            // Most steps leave the offsets 0..n dense (no record superseded, no offset
            // dropped): ranks are then the offsets themselves.
            if seen[1..] == [0; 3] && seen[0] & seen[0].wrapping_add(1) == 0 {
                continue;
            }
            let mut below = [0u8; 4];
            for w in 1..4 {
                below[w] = below[w - 1] + seen[w - 1].count_ones() as u8;
            }
            let rank = |v: u8| -> u8 {
                let (word, bit) = ((v >> 6) as usize, v & 63);
                below[word] + (seen[word] & ((1u64 << bit) - 1)).count_ones() as u8
            };
            for &slot in slots {
                let slot = slot as usize;
                if let Some(mut r) = s.log.get(slot) {
                    r.offset = rank(r.offset);
                    s.log.set(slot, Some(r));
                }
                s.acked_offset.set(slot, s.acked_offset.get(slot).map(rank));
            }
            if put_here.is_some() {
                if let Some(put) = s.put.as_mut() {
                    put.offset = put.offset.map(rank);
                }
            }
            for c in s.pending.iter_mut().chain([&mut s.completed]).flatten() {
                c.marker[p] = rank(c.marker[p]);
            }
            s.log_len[p] = rank(s.log_len[p]);
        }
    }

    fn any_running(&self, s: &State) -> bool {
        s.phase[..self.bounds.keys as usize]
            .iter()
            .any(|p| *p != Phase::Idle)
    }
}

impl Action {
    /// A short phrase for the action in the domain's words, for lists of enabled actions
    /// (the Explorer's); [`Spec::describe_step`] says what a step does in its state.
    pub fn phrase(&self) -> String {
        match *self {
            Action::DeliverInput(k) => format!("source delivers key {k}'s next input"),
            Action::StartAction(k) => format!("key {k}: action starts"),
            Action::ReuseResult(k) => format!("key {k}: call reuses its saved result"),
            Action::CallSupplier(k) => format!("key {k}: call runs the supplier"),
            Action::SendPut(k) => format!("key {k}: state with the call result sent to the log"),
            Action::CompleteAction(k) => format!("key {k}: completed state sent to the log"),
            Action::LandPut => "in-flight put lands in the log".to_string(),
            Action::AckPut => "producer learns the put's offset".to_string(),
            Action::FailPut { landed: false } => "put fails: nothing reached the log".to_string(),
            Action::FailPut { landed: true } => "put fails after its record landed".to_string(),
            Action::TriggerCheckpoint => "checkpoint triggered".to_string(),
            Action::CompleteCheckpoint(id) => format!("checkpoint {id} completes"),
            Action::Crash { landed: false } => "crash: any in-flight put is lost".to_string(),
            Action::Crash { landed: true } => "crash: the in-flight put lands first".to_string(),
            Action::Restore => "restore from the latest checkpoint".to_string(),
        }
    }
}

impl Model for Durable {
    /// The Explorer's text for a step: the verdict of every property on the state it
    /// leads to, the step in the model's words, the state ([`crate::check::explorer_step`]).
    fn format_step(&self, last_state: &State, action: Action) -> Option<String> {
        crate::check::explorer_step(self, last_state, action)
    }

    /// The Explorer's name for an enabled action ([`Action::phrase`]).
    fn format_action(&self, action: &Action) -> String {
        action.phrase()
    }

    /// A lane diagram of the path ([`crate::picture`]): source, each key's action, the
    /// supplier's calls, the log and checkpoints; a crash and a restore cross every lane.
    fn as_svg(&self, path: stateright::Path<State, Action>) -> Option<String> {
        let path = path.into_vec();
        let keys = usize::from(self.bounds.keys);
        let mut lanes = vec!["source".to_string()];
        lanes.extend((0..keys).map(|k| format!("key {k}")));
        lanes.extend(["supplier", "log", "checkpoints"].map(String::from));
        let lane = |_: &State, action: &Action| match *action {
            Action::DeliverInput(_) => Some(0),
            Action::StartAction(k)
            | Action::ReuseResult(k)
            | Action::SendPut(k)
            | Action::CompleteAction(k) => Some(1 + usize::from(k)),
            Action::CallSupplier(_) => Some(1 + keys),
            Action::LandPut | Action::AckPut | Action::FailPut { .. } => Some(2 + keys),
            Action::TriggerCheckpoint | Action::CompleteCheckpoint(_) => Some(3 + keys),
            Action::Crash { .. } | Action::Restore => None,
        };
        Some(crate::picture::of_path(self, &path, &lanes, lane))
    }

    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        vec![State::empty()]
    }

    fn actions(&self, s: &State, actions: &mut Vec<Action>) {
        let b = self.bounds;
        if s.down {
            actions.push(Action::Restore);
            return;
        }
        if s.failed {
            if self.can_crash(s) {
                actions.push(Action::Crash { landed: false });
            }
            return;
        }
        // The synchronous executor runs one action start to completion with nothing
        // else on the mailbox in between; the continuation executor interleaves.
        let exclusive = !b.mid_action_checkpoints && self.any_running(s);
        for k in 0..b.keys {
            let ku = k as usize;
            if !exclusive && s.next_seq[ku] < b.inputs {
                actions.push(Action::DeliverInput(k));
            }
            match s.phase[ku] {
                Phase::Idle => {
                    if !exclusive && s.finished[ku] < s.next_seq[ku] {
                        actions.push(Action::StartAction(k));
                    }
                }
                Phase::AtCall(i) if i < b.calls => {
                    let saved = s.cached(s.head(ku));
                    if saved.is_some_and(|st| !st.completed() && st.calls() > i) {
                        actions.push(Action::ReuseResult(k));
                    } else {
                        actions.push(Action::CallSupplier(k));
                    }
                }
                Phase::AtCall(_) => {
                    if s.put.is_none() {
                        actions.push(Action::CompleteAction(k));
                    }
                }
                Phase::HaveResult(_) => {
                    if s.put.is_none() {
                        actions.push(Action::SendPut(k));
                    }
                }
                Phase::AwaitPut(_) | Phase::AwaitCompletion => {}
            }
        }
        if let Some(put) = s.put {
            let landed = put.offset.is_some();
            if !landed && !b.synchronous_puts {
                actions.push(Action::LandPut);
            }
            if landed || b.synchronous_puts {
                actions.push(Action::AckPut);
            }
            let may_fail = s.failed_sends < b.send_failures;
            if !landed && may_fail {
                actions.push(Action::FailPut { landed: false });
            }
            if may_fail && b.fail_after_landing && (landed || b.synchronous_puts) {
                actions.push(Action::FailPut { landed: true });
            }
        }
        let quiet = b.mid_action_checkpoints || !self.any_running(s);
        let pending = s.pending_count();
        if pending < b.concurrent_checkpoints as usize
            && s.checkpoints < b.checkpoints
            && (s.put.is_none() || !b.synchronous_puts)
            && quiet
        {
            actions.push(Action::TriggerCheckpoint);
        }
        if quiet {
            for (id, _) in s.pending_checkpoints() {
                actions.push(Action::CompleteCheckpoint(id));
            }
        }
        if self.can_crash(s) {
            actions.push(Action::Crash { landed: false });
            if s.put.is_some_and(|put| put.offset.is_none()) {
                actions.push(Action::Crash { landed: true });
            }
        }
    }

    fn next_state(&self, s: &State, action: Action) -> Option<State> {
        let mut next = s.clone();
        next.events = Events::NONE;
        match action {
            Action::DeliverInput(k) => {
                next.next_seq[k as usize] += 1;
            }
            Action::StartAction(k) => {
                let ku = k as usize;
                if s.completed.is_some_and(|c| s.finished[ku] < c.finished[ku]) {
                    next.events.finished_rerun = true;
                }
                if s.cached(s.head(ku)).is_some_and(|st| st.completed()) {
                    // Restored completed state: the action is skipped, its output reused.
                    self.finish_action(&mut next, ku);
                } else {
                    next.phase[ku] = Phase::AtCall(0);
                }
            }
            Action::ReuseResult(k) => {
                let ku = k as usize;
                if let Phase::AtCall(i) = s.phase[ku] {
                    next.phase[ku] = Phase::AtCall(i + 1);
                }
                next.events.reused = true;
            }
            Action::CallSupplier(k) => {
                let ku = k as usize;
                if let Phase::AtCall(i) = s.phase[ku] {
                    let sk = s.head(ku);
                    next.supplier_runs.bump(sk, i);
                    if self.log_holds(s, sk, i) {
                        next.events.repeated_call = true;
                    }
                    next.phase[ku] = Phase::HaveResult(i);
                }
            }
            Action::SendPut(k) | Action::CompleteAction(k) => {
                let ku = k as usize;
                let sk = s.head(ku);
                let (state, phase) = match s.phase[ku] {
                    // Results 0..i are reused or appended in order, so the new state
                    // holds exactly i + 1 results.
                    Phase::HaveResult(i) => (ActionState::with_calls(i + 1), Phase::AwaitPut(i)),
                    _ => (ActionState::COMPLETED, Phase::AwaitCompletion),
                };
                debug_assert!(s.put.is_none(), "puts are sequential");
                next.put = Some(Put {
                    record: Record {
                        state_key: sk,
                        state,
                    },
                    offset: None,
                });
                if self.design.caches_before_ack() {
                    next.cache.set(sk.slot(), Some(state));
                }
                next.phase[ku] = phase;
            }
            Action::LandPut => self.land(&mut next),
            Action::AckPut => {
                let put = s.put?;
                if put.offset.is_none() {
                    self.land(&mut next);
                }
                let offset = next.put.and_then(|p| p.offset);
                let k = put.record.state_key.key as usize;
                let slot = put.record.state_key.slot();
                if !self.design.caches_before_ack() {
                    next.cache.set(slot, Some(put.record.state));
                }
                if self.design.rewinds_marker() {
                    next.acked_offset.set(slot, offset);
                }
                next.put = None;
                self.after_put(&mut next, k);
            }
            Action::FailPut { landed } => {
                let put = s.put?;
                next.failed_sends += 1;
                if landed && put.offset.is_none() {
                    self.land(&mut next);
                }
                let k = put.record.state_key.key as usize;
                next.put = None;
                if self.design.caches_before_ack() {
                    // Old order: flush does not surface the send's error; the action goes
                    // on with the state cached as if saved.
                    self.after_put(&mut next, k);
                } else {
                    next.failed = true;
                }
            }
            Action::TriggerCheckpoint => {
                let mut marker = [0; MAX_PARTITIONS];
                for (p, m) in marker
                    .iter_mut()
                    .enumerate()
                    .take(self.bounds.partitions as usize)
                {
                    *m = self.marker(s, p);
                }
                // Enabled only with a free slot: the new checkpoint goes after the others.
                next.pending[s.pending_count()] = Some(Checkpoint {
                    next_seq: s.next_seq,
                    finished: s.finished,
                    next_action: s.next_action,
                    marker,
                });
                next.checkpoints += 1;
            }
            Action::CompleteCheckpoint(id) => {
                let (at, c) = s
                    .pending_checkpoints()
                    .enumerate()
                    .find_map(|(at, (pending, c))| (pending == id).then_some((at, c)))?;
                // It and every older pending checkpoint leave; the newer ones move up.
                next.pending = [None; MAX_CONCURRENT];
                next.pending[..MAX_CONCURRENT - at - 1].copy_from_slice(&s.pending[at + 1..]);
                for sk in self.slot_range() {
                    if sk.seq < c.finished[sk.key as usize] {
                        next.cache.set(sk.slot(), None);
                        next.acked_offset.set(sk.slot(), None);
                    }
                }
                for k in 0..self.bounds.keys as usize {
                    if c.finished[k] > s.committed_outputs[k] && s.crashes > 0 {
                        next.events.output_after_restore = true;
                    }
                    next.committed_outputs[k] = c.finished[k];
                }
                next.completed = Some(c);
            }
            Action::Crash { landed } => {
                if self.any_running(s) {
                    next.events.crash_mid_action = true;
                }
                if landed {
                    self.land(&mut next);
                }
                // Everything volatile goes; the log, the completed checkpoint, committed
                // output and ghost counters stay. An unlanded send is lost.
                next = State {
                    log: next.log,
                    log_len: next.log_len,
                    completed: s.completed,
                    checkpoints: s.checkpoints,
                    crashes: s.crashes + 1,
                    failed_sends: s.failed_sends,
                    committed_outputs: s.committed_outputs,
                    supplier_runs: s.supplier_runs,
                    down: true,
                    events: next.events,
                    ..State::empty()
                };
            }
            Action::Restore => {
                next.down = false;
                if let Some(c) = s.completed {
                    next.next_seq = c.next_seq;
                    next.finished = c.finished;
                    next.next_action = c.next_action;
                    // Last writer wins per state key: a replay from the marker ends with
                    // each key's latest record if that one is at or after the marker.
                    for sk in self.slot_range() {
                        let slot = sk.slot();
                        let Some(records) = s.log.get(slot) else {
                            continue;
                        };
                        if records.offset < c.marker[self.partition(sk.key)]
                            || (self.design.rewinds_marker()
                                && sk.seq < c.finished[sk.key as usize])
                        {
                            continue;
                        }
                        next.cache.set(slot, Some(records.latest));
                        if self.design.rewinds_marker() {
                            next.acked_offset.set(slot, Some(records.offset));
                        }
                    }
                }
            }
        }
        // Only steps that land, acknowledge, fail, prune, crash or restore change the
        // set of offsets; the others leave an already compact state compact.
        let moves_offsets = !matches!(
            action,
            Action::DeliverInput(_)
                | Action::StartAction(_)
                | Action::ReuseResult(_)
                | Action::CallSupplier(_)
                | Action::SendPut(_)
                | Action::CompleteAction(_)
                | Action::TriggerCheckpoint
        );
        if self.bounds.compact_offsets && moves_offsets {
            self.compact_offsets(&mut next);
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        use property::*;
        let all = vec![
            Property::always(CALL_AT_MOST_ONCE, |_, s: &State| !s.events.repeated_call),
            Property::always(FINISHED_STAYS_FINISHED, |_, s: &State| {
                !s.events.finished_rerun
            }),
            Property::always(SAME_OUTPUT, |m: &Durable, s: &State| {
                !s.events.duplicate_output
                    && (0..m.bounds.keys as usize)
                        .all(|k| s.committed_outputs[k] == s.completed.map_or(0, |c| c.finished[k]))
            }),
            Property::always(CACHE_HOLDS_LOG, |m: &Durable, s: &State| {
                let in_flight = s.put.map(|p| p.record.state_key);
                m.slot_range().all(|sk| match s.cached(sk) {
                    None => true,
                    Some(_) if in_flight == Some(sk) => true,
                    Some(st) => s.landed(sk, st),
                })
            }),
            Property::always(BOUNDED_TRACKING, |m: &Durable, s: &State| {
                (0..m.bounds.keys as usize).all(|k| {
                    let slots = k * MAX_INPUTS * MAX_ACTIONS..(k + 1) * MAX_INPUTS * MAX_ACTIONS;
                    let tracked = s.key_boundary[k] != 0
                        || slots.clone().any(|slot| s.acked_offset.get(slot).is_some());
                    let live = s.cache.any(slots) || s.next_seq[k] > s.finished[k];
                    !tracked || live
                })
            }),
            Property::always(MARKER_IS_SAFE, |m: &Durable, s: &State| {
                let Some(c) = s.completed else {
                    return true;
                };
                m.slot_range().all(|sk| match s.latest_record(sk) {
                    None => true,
                    Some((_, offset)) => {
                        sk.seq < c.finished[sk.key as usize]
                            || offset >= c.marker[m.partition(sk.key)]
                    }
                })
            }),
            Property::sometimes(REUSED_AFTER_RESTORE, |_, s: &State| {
                s.crashes > 0 && s.events.reused
            }),
            Property::sometimes(CRASH_MID_ACTION, |_, s: &State| s.events.crash_mid_action),
            Property::sometimes(CHECKPOINT_WITH_QUEUED, |m: &Durable, s: &State| {
                s.pending
                    .iter()
                    .chain([&s.completed])
                    .flatten()
                    .any(|c| (0..m.bounds.keys as usize).any(|k| c.finished[k] < c.next_seq[k]))
            }),
            Property::sometimes(OUTPUT_AFTER_RESTORE, |_, s: &State| {
                s.events.output_after_restore
            }),
        ];
        check::select(all, self.focus)
    }
}

/// Key symmetry: keys of one partition (key `k` writes to partition `k % partitions`)
/// are interchangeable. Inputs, actions and calls are per key, every step treats keys
/// alike, and offsets, markers and the end offset are per partition, so renaming keys
/// within a partition maps runs to runs; every property quantifies over all keys or
/// reads key-free events, so it holds of a state exactly when it holds of the renamed one.
pub mod symmetry {
    use super::{
        ActionState, Checkpoint, Phase, State, StateKey, MAX_ACTIONS, MAX_CALLS, MAX_CONCURRENT,
        MAX_INPUTS, MAX_KEYS,
    };

    /// A renaming of keys: key `k` becomes `to[k]`.
    pub type Renaming = [u8; MAX_KEYS];

    const SLOTS_PER_KEY: usize = MAX_INPUTS * MAX_ACTIONS;
    const SIGNATURE: usize =
        7 + 3 * (MAX_CONCURRENT + 1) + 3 + 9 * SLOTS_PER_KEY + SLOTS_PER_KEY * MAX_CALLS;

    /// A phase as bytes that order like the phase's parts.
    fn phase_bytes(p: Phase) -> [u8; 2] {
        match p {
            Phase::Idle => [0, 0],
            Phase::AtCall(i) => [1, i],
            Phase::HaveResult(i) => [2, i],
            Phase::AwaitPut(i) => [3, i],
            Phase::AwaitCompletion => [4, 0],
        }
    }

    /// An optional action state as bytes (presence first).
    fn state_bytes(st: Option<ActionState>) -> [u8; 3] {
        st.map_or([0; 3], |st| [1, st.calls(), st.completed() as u8])
    }

    fn checkpoint_of(c: &Option<Checkpoint>, k: usize) -> [u8; 3] {
        c.map_or([0; 3], |c| [c.next_seq[k], c.finished[k], c.next_action[k]])
    }

    /// Everything the state holds about key `k`: equal signatures of two keys mean
    /// swapping them changes nothing.
    fn signature(s: &State, k: usize) -> [u8; SIGNATURE] {
        let mut sig = [0u8; SIGNATURE];
        let mut at = 0;
        let mut put = |b: u8| {
            sig[at] = b;
            at += 1;
        };
        let [phase, call] = phase_bytes(s.phase[k]);
        for b in [
            s.next_seq[k],
            s.finished[k],
            s.next_action[k],
            phase,
            call,
            s.key_boundary[k],
            s.committed_outputs[k],
        ] {
            put(b);
        }
        for c in s.pending.iter().chain([&s.completed]) {
            for b in checkpoint_of(c, k) {
                put(b);
            }
        }
        // The in-flight put names its key; of its state key only the key-relative part.
        let mine = s.put.filter(|p| p.record.state_key.key as usize == k);
        let relative = mine.map_or(0, |p| {
            1 + p.record.state_key.slot() as u8 % SLOTS_PER_KEY as u8
        });
        let [_, calls, completed] = state_bytes(mine.map(|p| p.record.state));
        for b in [relative, calls, completed] {
            put(b);
        }
        let first = k * SLOTS_PER_KEY;
        for slot in first..first + SLOTS_PER_KEY {
            for b in state_bytes(s.cache.get(slot)) {
                put(b);
            }
            put(s.acked_offset.get(slot).map_or(0, |o| o + 1));
            let log = s.log.get(slot);
            for b in state_bytes(log.map(|r| r.latest)) {
                put(b);
            }
            put(log.map_or(0, |r| r.offset));
            put(log.map_or(0, |r| r.landed.code()));
        }
        for slot in first..first + SLOTS_PER_KEY {
            for c in 0..MAX_CALLS as u8 {
                put(s.supplier_runs.get(StateKey::of_slot(slot), c));
            }
        }
        debug_assert_eq!(at, SIGNATURE);
        sig
    }

    /// The state with every key `k` renamed `to[k]` (a permutation of `0..MAX_KEYS`).
    pub fn rename(s: &State, to: &Renaming) -> State {
        let mut t = s.clone();
        for (k, &n) in to.iter().enumerate() {
            let n = n as usize;
            t.next_seq[n] = s.next_seq[k];
            t.finished[n] = s.finished[k];
            t.next_action[n] = s.next_action[k];
            t.phase[n] = s.phase[k];
            t.key_boundary[n] = s.key_boundary[k];
            t.committed_outputs[n] = s.committed_outputs[k];
            let pending = t.pending.iter_mut().zip(&s.pending);
            for (tc, sc) in pending.chain([(&mut t.completed, &s.completed)]) {
                if let (Some(tc), Some(sc)) = (tc.as_mut(), sc) {
                    tc.next_seq[n] = sc.next_seq[k];
                    tc.finished[n] = sc.finished[k];
                    tc.next_action[n] = sc.next_action[k];
                }
            }
            for i in 0..SLOTS_PER_KEY {
                let (from, into) = (k * SLOTS_PER_KEY + i, n * SLOTS_PER_KEY + i);
                t.cache.set(into, s.cache.get(from));
                t.acked_offset.set(into, s.acked_offset.get(from));
                t.log.set(into, s.log.get(from));
                let (from, into) = (StateKey::of_slot(from), StateKey::of_slot(into));
                for c in 0..MAX_CALLS as u8 {
                    t.supplier_runs.set(into, c, s.supplier_runs.get(from, c));
                }
            }
        }
        if let Some(put) = t.put.as_mut() {
            let sk = &mut put.record.state_key;
            sk.key = to[sk.key as usize];
        }
        t
    }

    /// The renaming that sorts the first `keys` keys by signature within each partition
    /// class (`partitions` classes); keys from `keys` on stay put.
    pub fn sorting_renaming(s: &State, keys: usize, partitions: usize) -> Renaming {
        let mut to: Renaming = std::array::from_fn(|k| k as u8);
        let sigs: [[u8; SIGNATURE]; MAX_KEYS] = std::array::from_fn(|k| signature(s, k));
        for p in 0..partitions {
            let mut members = [0usize; MAX_KEYS];
            let mut n = 0;
            for k in (p..keys).step_by(partitions) {
                members[n] = k;
                n += 1;
            }
            let mut sorted = members;
            sorted[..n].sort_by(|a, b| sigs[*a].cmp(&sigs[*b]));
            // The key with the i-th smallest signature takes the i-th name of the class.
            for i in 0..n {
                to[sorted[i]] = members[i] as u8;
            }
        }
        to
    }

    /// The representative of a state's class for `KEYS` keys over `PARTITIONS` partitions.
    pub fn representative<const KEYS: usize, const PARTITIONS: usize>(s: &State) -> State {
        rename(s, &sorting_renaming(s, KEYS, PARTITIONS))
    }
}

fn verdict_rows(
    scenario: &'static str,
    property: &'static str,
    verdicts: [Verdict; 4],
) -> impl Iterator<Item = Expectation> {
    DESIGNS
        .into_iter()
        .zip(verdicts)
        .map(move |(design, expected)| Expectation {
            design: design.name(),
            scenario,
            property,
            expected,
        })
}

impl Spec for Durable {
    const NAME: &'static str = "durable";
    const SUMMARY: &'static str =
        "durable actions under checkpoint, crash and restore (flink-agents issue 1158)";

    fn designs() -> &'static [&'static str] {
        &DESIGN_NAMES
    }

    fn design_name(&self) -> &'static str {
        self.design.name()
    }

    fn settings(&self) -> &Settings {
        &self.settings
    }

    fn params() -> &'static [Param] {
        PARAMS
    }

    fn scenarios() -> &'static [(&'static str, &'static [(&'static str, &'static str)])] {
        SCENARIOS
    }

    fn build(design: &str, settings: &Settings) -> Result<Self, SettingsError> {
        let design = Design::from_name(design)?;
        let int = |name| settings.int(name) as u8;
        let bounds = Bounds {
            keys: int("keys"),
            inputs: int("inputs"),
            actions: int("actions"),
            calls: int("calls"),
            partitions: int("partitions"),
            crashes: int("crashes"),
            checkpoints: int("checkpoints"),
            concurrent_checkpoints: int("concurrent-checkpoints"),
            send_failures: int("send-failures"),
            fail_after_landing: settings.flag("fail-after-landing"),
            synchronous_puts: settings.flag("synchronous-puts"),
            mid_action_checkpoints: settings.flag("mid-action-checkpoints"),
            restart_without_checkpoint: settings.flag("restart-without-checkpoint"),
            compact_offsets: settings.flag("compact-offsets"),
        };
        if bounds.partitions > bounds.keys {
            return Err(SettingsError(format!(
                "`partitions` ({}) must not exceed `keys` ({}): a partition without keys holds nothing",
                bounds.partitions, bounds.keys
            )));
        }
        // Every put lands at most once; an action runs at most once per incarnation.
        let keys_per_partition = bounds.keys.div_ceil(bounds.partitions) as usize;
        let records = keys_per_partition
            * bounds.inputs as usize
            * bounds.actions as usize
            * (bounds.calls as usize + 1)
            * (bounds.crashes as usize + 1);
        if records > MAX_LOG {
            return Err(SettingsError(format!(
                "these bounds may write {records} records to one partition; the model holds at most {MAX_LOG} \
                 (lower keys, inputs, actions, calls or crashes, or add partitions)"
            )));
        }
        let state_keys = (0..bounds.keys)
            .flat_map(|key| {
                (0..bounds.inputs).flat_map(move |seq| {
                    (0..bounds.actions).map(move |action| StateKey { key, seq, action })
                })
            })
            .collect::<Vec<StateKey>>();
        let partition_slots = std::array::from_fn(|p| {
            state_keys
                .iter()
                .filter(|sk| (sk.key % bounds.partitions) as usize == p)
                .map(|sk| sk.slot() as u8)
                .collect()
        });
        Ok(Durable {
            design,
            bounds,
            settings: settings.clone(),
            focus: None,
            state_keys,
            partition_slots,
        })
    }

    fn focus(&self, property: Option<&str>) -> Result<Self, SettingsError> {
        let focus = match property {
            None => None,
            Some(name) => Some(
                property::SAFETY
                    .into_iter()
                    .chain(property::REACHABILITY)
                    .find(|p| *p == name)
                    .ok_or_else(|| {
                        SettingsError(format!("unknown property `{name}` of durable"))
                    })?,
            ),
        };
        Ok(Durable {
            focus,
            ..self.clone()
        })
    }

    /// The state in the domain's words: per key its progress and running action, the
    /// store's cache, the log, the in-flight put, checkpoints, crashes, outputs and the
    /// supplier's runs; slots beyond the bounds and empty ones are left out.
    fn domain_view(&self, s: &State) -> String {
        use std::fmt::Write as _;
        let b = &self.bounds;
        let mut out = String::new();
        let saved = |st: ActionState| {
            if st.completed() {
                format!("completed with {} call result(s)", st.calls())
            } else {
                format!("{} call result(s)", st.calls())
            }
        };
        let name = |k: StateKey| {
            if b.actions > 1 {
                format!("key {} input {} action {}", k.key, k.seq, k.action)
            } else {
                format!("key {} input {}", k.key, k.seq)
            }
        };
        let mut slots = Vec::new();
        for key in 0..b.keys {
            for seq in 0..b.inputs {
                for action in 0..b.actions {
                    slots.push(StateKey { key, seq, action });
                }
            }
        }
        let task = match (s.down, s.failed) {
            (true, _) => "down (crashed, not restored)",
            (false, true) => "failing over (a put error reached the action)",
            (false, false) => "running",
        };
        let _ = writeln!(
            out,
            "task: {task}; crashes {}, failed sends {}",
            s.crashes, s.failed_sends
        );
        for k in 0..usize::from(b.keys) {
            let running = match s.phase[k] {
                Phase::Idle => "idle".to_string(),
                Phase::AtCall(i) => format!("{}: at call {i}", name(s.head(k))),
                Phase::HaveResult(i) => {
                    format!("{}: call {i} returned, put not sent", name(s.head(k)))
                }
                Phase::AwaitPut(i) => {
                    format!("{}: put of call {i}'s result in flight", name(s.head(k)))
                }
                Phase::AwaitCompletion => format!("{}: completion put in flight", name(s.head(k))),
            };
            let _ = writeln!(
                out,
                "key {k}: {} input(s) delivered, {} finished, {} output(s) committed; {running}",
                s.next_seq[k], s.finished[k], s.committed_outputs[k]
            );
        }
        let cached = slots.iter().filter(|k| s.cached(**k).is_some()).count();
        let _ = writeln!(out, "store cache: {cached} state(s)");
        for &k in &slots {
            if let Some(st) = s.cached(k) {
                let acked = match s.acked_offset.get(k.slot()) {
                    None => String::new(),
                    Some(offset) => format!(", acknowledged at offset {offset}"),
                };
                let _ = writeln!(out, "  {}: {}{acked}", name(k), saved(st));
            }
        }
        let ends: Vec<String> = (0..usize::from(b.partitions))
            .map(|p| format!("partition {p} holds {}", s.log_len[p]))
            .collect();
        let _ = writeln!(out, "log: {}", ends.join(", "));
        for &k in &slots {
            if let Some((st, offset)) = s.latest_record(k) {
                let _ = writeln!(
                    out,
                    "  {}: latest {} at offset {offset}",
                    name(k),
                    saved(st)
                );
            }
        }
        if let Some(put) = s.put {
            let r = put.record;
            let at = match put.offset {
                None => "not landed yet".to_string(),
                Some(offset) => format!("landed at offset {offset}"),
            };
            let _ = writeln!(
                out,
                "in-flight put: {}: {}, {at}",
                name(r.state_key),
                saved(r.state)
            );
        }
        let _ = writeln!(out, "checkpoints: {} triggered", s.checkpoints);
        let show = |c: &Checkpoint| {
            let keys: Vec<String> = (0..usize::from(b.keys))
                .map(|k| {
                    format!(
                        "key {k} {} delivered/{} finished",
                        c.next_seq[k], c.finished[k]
                    )
                })
                .collect();
            let marker: Vec<String> = (0..usize::from(b.partitions))
                .map(|p| format!("p{p}={}", c.marker[p]))
                .collect();
            format!("{}; marker {}", keys.join(", "), marker.join(" "))
        };
        for (id, c) in s.pending_checkpoints() {
            let _ = writeln!(out, "  pending {id}: {}", show(&c));
        }
        if let Some(c) = &s.completed {
            let _ = writeln!(out, "  latest completed: {}", show(c));
        }
        let mut runs = Vec::new();
        for &k in &slots {
            for call in 0..b.calls {
                let n = s.runs(k, call);
                if n > 0 {
                    runs.push(format!("{} call {call}: {n}", name(k)));
                }
            }
        }
        if !runs.is_empty() {
            let _ = writeln!(out, "supplier runs: {}", runs.join("; "));
        }
        out
    }

    fn describe_step(&self, s: &State, action: &Action) -> String {
        let who = |k: u8| {
            let sk = s.head(k as usize);
            if self.bounds.actions > 1 {
                format!("key {} input {} action {}", sk.key, sk.seq, sk.action)
            } else {
                format!("key {} input {}", sk.key, sk.seq)
            }
        };
        let call = |k: u8| match s.phase[k as usize] {
            Phase::AtCall(i) | Phase::HaveResult(i) => i,
            _ => 0,
        };
        let put = || {
            let Some(Put { record: r, .. }) = s.put else {
                unreachable!("a put step with no put in flight");
            };
            let what = if r.state.completed() {
                "completed state".to_string()
            } else {
                format!("state with {} call result(s)", r.state.calls())
            };
            let sk = r.state_key;
            (format!("key {} input {}", sk.key, sk.seq), what, sk.key)
        };
        match *action {
            Action::DeliverInput(k) => format!(
                "the source delivers key {k} input {} (sequence number {})",
                s.next_seq[k as usize], s.next_seq[k as usize]
            ),
            Action::StartAction(k) => match s.cached(s.head(k as usize)) {
                Some(st) if st.completed() => {
                    format!("{}: action skipped, its saved state is completed", who(k))
                }
                Some(st) => format!(
                    "{}: action starts with {} saved call result(s)",
                    who(k),
                    st.calls()
                ),
                None => format!("{}: action starts, nothing saved", who(k)),
            },
            Action::ReuseResult(k) => {
                format!("{}: call {} reuses the saved result", who(k), call(k))
            }
            Action::CallSupplier(k) => {
                let i = call(k);
                let run = s.runs(s.head(k as usize), i) as u32 + 1;
                format!("{}: supplier called for call {i} (run #{run})", who(k))
            }
            Action::SendPut(k) => {
                let cached = if self.design.caches_before_ack() {
                    ", cached at once"
                } else {
                    ""
                };
                format!(
                    "{}: put of the state with call {}'s result sent{cached}",
                    who(k),
                    call(k)
                )
            }
            Action::CompleteAction(k) => {
                format!(
                    "{}: all calls done, put of the completed state sent",
                    who(k)
                )
            }
            Action::LandPut => {
                let (whose, what, key) = put();
                let p = self.partition(key);
                format!(
                    "{whose}: {what} lands at partition {p} offset {}, not yet acknowledged",
                    s.log_len[p]
                )
            }
            Action::AckPut => {
                let (whose, what, key) = put();
                let p = self.partition(key);
                let offset = s.put.and_then(|p| p.offset).unwrap_or(s.log_len[p]);
                format!("{whose}: {what} lands at partition {p} offset {offset}, acknowledged")
            }
            Action::FailPut { landed } => {
                let (whose, what, _) = put();
                let when = if landed {
                    "after its record landed"
                } else {
                    "before landing"
                };
                let then = if self.design.caches_before_ack() {
                    "the error is not seen and the action goes on"
                } else {
                    "the error reaches the action and the task fails"
                };
                format!("{whose}: put of {what} fails {when}; {then}")
            }
            Action::TriggerCheckpoint => {
                let marker: Vec<String> = (0..self.bounds.partitions as usize)
                    .map(|p| format!("p{p}={}", self.marker(s, p)))
                    .collect();
                let queued: Vec<String> = (0..self.bounds.keys as usize)
                    .filter(|k| s.finished[*k] < s.next_seq[*k])
                    .map(|k| format!("key {k} input {}", s.finished[k]))
                    .collect();
                let queued = if queued.is_empty() {
                    "nothing queued".to_string()
                } else {
                    format!("queued: {}", queued.join(", "))
                };
                format!(
                    "checkpoint {} taken ({queued}; marker {})",
                    s.checkpoints + 1,
                    marker.join(" ")
                )
            }
            Action::CompleteCheckpoint(id) => {
                let subsumed: Vec<String> = s
                    .pending_checkpoints()
                    .map(|(older, _)| older)
                    .filter(|older| *older < id)
                    .map(|older| older.to_string())
                    .collect();
                let subsumed = match subsumed.len() {
                    0 => String::new(),
                    1 => format!("; checkpoint {} subsumed", subsumed[0]),
                    _ => format!("; checkpoints {} subsumed", subsumed.join(", ")),
                };
                format!("checkpoint {id} completes; finished states pruned{subsumed}")
            }
            Action::Crash { landed } => {
                let send = match (s.put.is_some_and(|p| p.offset.is_none()), landed) {
                    (false, _) => "",
                    (true, true) => "; the in-flight send lands, unacknowledged",
                    (true, false) => "; the in-flight send is lost",
                };
                format!("the task crashes{send}")
            }
            Action::Restore => match s.completed {
                Some(c) => {
                    let marker: Vec<String> = (0..self.bounds.partitions as usize)
                        .map(|p| format!("p{p} from offset {}", c.marker[p]))
                        .collect();
                    format!(
                        "restore from the completed checkpoint; replay {}",
                        marker.join(", ")
                    )
                }
                None => "restart with no completed checkpoint; nothing replayed".to_string(),
            },
        }
    }

    fn classify(&self, path: &[(State, Option<Action>)]) -> Option<String> {
        let last = &path.last()?.0;
        let crashes = last.crashes;
        if last.events.repeated_call {
            let failed_after_landing = path
                .iter()
                .any(|(_, a)| *a == Some(Action::FailPut { landed: true }));
            let snapshot_in_put = path
                .iter()
                .any(|(s, a)| *a == Some(Action::TriggerCheckpoint) && s.put.is_some());
            let restored_nothing = path
                .iter()
                .any(|(s, a)| *a == Some(Action::Restore) && s.completed.is_none());
            let shape = if restored_nothing {
                "restart without a completed checkpoint".to_string()
            } else if failed_after_landing {
                "a record landed but its send failed; the marker skips it".to_string()
            } else if snapshot_in_put {
                "snapshot between a record's landing and its acknowledgement".to_string()
            } else if self.seed_shape(path) {
                if crashes == 1 {
                    "seed regression: call saved, checkpoint with the action queued, crash, \
                     restore, supplier called again"
                        .to_string()
                } else {
                    format!(
                        "seed's three-attempt regression ({crashes} crashes): call saved, \
                         checkpoint with the action queued, crash, restore, supplier called again"
                    )
                }
            } else {
                return None;
            };
            return Some(shape);
        }
        // Other shapes are named when the last step is the one that broke the property.
        let prev = &path[path.len().saturating_sub(2)].0;
        let broke = |name: &str| {
            let holds = self.properties_named(name);
            !holds(self, last) && holds(self, prev)
        };
        if broke(property::CACHE_HOLDS_LOG) {
            return Some("failed send cached as saved".to_string());
        }
        if broke(property::BOUNDED_TRACKING) {
            return Some("key tracking kept after its states were pruned".to_string());
        }
        if broke(property::MARKER_IS_SAFE) {
            return Some("marker past an unfinished state's latest record".to_string());
        }
        None
    }

    fn representative(&self) -> Option<fn(&State) -> State> {
        use symmetry::representative as r;
        // A class of one key has nothing to permute.
        match (self.bounds.keys, self.bounds.partitions) {
            (2, 1) => Some(r::<2, 1>),
            (3, 1) => Some(r::<3, 1>),
            (3, 2) => Some(r::<3, 2>),
            _ => None,
        }
    }

    fn expectations() -> Vec<Expectation> {
        use property::*;
        use Verdict::{Counterexample as Ce, Holds as H, Reached as R};
        let mut rows = Vec::new();
        // The table of durable-actions.md, extended to every safety property.
        let default: [(&str, [Verdict; 4]); 6] = [
            (CALL_AT_MOST_ONCE, [Ce, H, H, H]),
            (FINISHED_STAYS_FINISHED, [H, H, H, H]),
            (SAME_OUTPUT, [H, H, H, H]),
            // A failed send is what shows the cache's counterexample (scenario below).
            (CACHE_HOLDS_LOG, [H, H, H, H]),
            (BOUNDED_TRACKING, [H, H, Ce, H]),
            (MARKER_IS_SAFE, [Ce, H, H, H]),
        ];
        for (p, v) in default {
            rows.extend(verdict_rows("default", p, v));
        }
        for p in REACHABILITY {
            rows.extend(verdict_rows("default", p, [R, R, R, R]));
        }
        let scenarios: [(&str, &str, [Verdict; 4]); 13] = [
            // The seed's synchronous executor: the bug needs two crashes.
            ("synchronous-executor", CALL_AT_MOST_ONCE, [Ce, H, H, H]),
            ("synchronous-executor", MARKER_IS_SAFE, [Ce, H, H, H]),
            (
                "synchronous-executor-one-crash",
                CALL_AT_MOST_ONCE,
                [H, H, H, H],
            ),
            (
                "synchronous-executor-one-crash",
                MARKER_IS_SAFE,
                [Ce, H, H, H],
            ),
            // A send failing before its record landed: the old put order caches it.
            ("failed-send", CALL_AT_MOST_ONCE, [Ce, H, H, H]),
            ("failed-send", CACHE_HOLDS_LOG, [Ce, Ce, H, H]),
            ("failed-send", MARKER_IS_SAFE, [Ce, H, H, H]),
            // A send failing after its record landed defeats the old put order.
            ("fail-after-landing", CALL_AT_MOST_ONCE, [Ce, Ce, H, H]),
            ("fail-after-landing", MARKER_IS_SAFE, [Ce, Ce, H, H]),
            // Asynchronous puts defeat every design.
            ("asynchronous-puts", CALL_AT_MOST_ONCE, [Ce, Ce, Ce, Ce]),
            ("asynchronous-puts", MARKER_IS_SAFE, [Ce, Ce, Ce, Ce]),
            // A restart with no completed checkpoint rebuilds nothing.
            (
                "restart-without-checkpoint",
                CALL_AT_MOST_ONCE,
                [Ce, Ce, Ce, Ce],
            ),
            (
                "restart-without-checkpoint",
                MARKER_IS_SAFE,
                [Ce, Ce, Ce, Ce],
            ),
        ];
        for (scenario, p, v) in scenarios {
            rows.extend(verdict_rows(scenario, p, v));
        }
        // Two checkpoints pending at once, a later one's completion subsuming an older
        // one: every verdict of the default table.
        for (p, v) in default {
            rows.extend(verdict_rows("concurrent-checkpoints", p, v));
        }
        for p in REACHABILITY {
            rows.extend(verdict_rows("concurrent-checkpoints", p, [R, R, R, R]));
        }
        rows
    }
}

impl Durable {
    fn properties_named(&self, name: &str) -> fn(&Durable, &State) -> bool {
        self.focus(None)
            .expect("no focus is always valid")
            .properties()
            .into_iter()
            .find(|p| p.name == name)
            .map(|p| p.condition)
            .expect("a declared property")
    }

    /// Whether a path ending in a repeated supplier call has the seed's shape: the call's
    /// result landed, then a checkpoint was taken with its input unfinished, then a crash
    /// and a restore came before the supplier ran again.
    fn seed_shape(&self, path: &[(State, Option<Action>)]) -> bool {
        let Some((before, Some(Action::CallSupplier(k)))) = path.iter().rev().nth(1) else {
            return false;
        };
        let sk = before.head(*k as usize);
        let Phase::AtCall(call) = before.phase[*k as usize] else {
            return false;
        };
        let holds = |s: &State| self.log_holds(s, sk, call);
        let Some(saved) = path.iter().position(|(s, _)| holds(s)) else {
            return false;
        };
        let Some(checkpoint) = path[saved..].iter().position(|(s, a)| {
            *a == Some(Action::TriggerCheckpoint) && s.finished[sk.key as usize] <= sk.seq
        }) else {
            return false;
        };
        let after = &path[saved + checkpoint..];
        let crash = after
            .iter()
            .position(|(_, a)| matches!(a, Some(Action::Crash { .. })));
        let restore = after.iter().position(|(_, a)| *a == Some(Action::Restore));
        matches!((crash, restore), (Some(c), Some(r)) if c < r)
    }
}

#[cfg(test)]
mod tests {
    //! Key symmetry: the representative is a canonical form of the renaming classes, the
    //! model commutes with renamings, and a symmetric DFS keeps every verdict.
    use std::collections::{BTreeSet, HashSet, VecDeque};

    use stateright::{Checker, Model};

    use super::symmetry::{rename, Renaming};
    use super::*;

    fn model(design: Design, overrides: &[(&str, &str)]) -> Durable {
        Durable::build(design.name(), &Settings::parse(PARAMS, overrides).unwrap()).unwrap()
    }

    /// Every reachable state, by plain breadth-first search.
    fn reachable(m: &Durable) -> Vec<State> {
        let mut seen: HashSet<State> = HashSet::new();
        let mut queue: VecDeque<State> = m.init_states().into();
        let mut all = Vec::new();
        while let Some(s) = queue.pop_front() {
            if !seen.insert(s.clone()) {
                continue;
            }
            let mut actions = Vec::new();
            m.actions(&s, &mut actions);
            for a in actions {
                if let Some(next) = m.next_state(&s, a) {
                    queue.push_back(next);
                }
            }
            all.push(s);
        }
        all
    }

    /// Renamings of the first `keys` keys that keep every key in its partition.
    fn renamings(keys: usize, partitions: usize) -> Vec<Renaming> {
        let perms: [[u8; 3]; 6] = [
            [0, 1, 2],
            [0, 2, 1],
            [1, 0, 2],
            [1, 2, 0],
            [2, 0, 1],
            [2, 1, 0],
        ];
        perms
            .into_iter()
            .filter(|to| {
                (0..MAX_KEYS).all(|k| {
                    let n = to[k] as usize;
                    if k >= keys {
                        n == k
                    } else {
                        n < keys && n % partitions == k % partitions
                    }
                })
            })
            .collect()
    }

    fn successors(m: &Durable, s: &State) -> HashSet<State> {
        let mut actions = Vec::new();
        m.actions(s, &mut actions);
        actions
            .into_iter()
            .filter_map(|a| m.next_state(s, a))
            .collect()
    }

    #[test]
    fn renamings_commute_with_the_model_and_the_representative_is_canonical() {
        // Failed sends (before and after landing) with two keys; three keys without; two
        // keys with two checkpoints pending at once.
        for (keys, partitions, failures, checkpoints, concurrent) in [
            ("3", "1", "0", "1", "1"),
            ("3", "2", "0", "1", "1"),
            ("2", "1", "1", "1", "1"),
            ("2", "1", "0", "2", "2"),
        ] {
            for design in DESIGNS {
                let m = model(
                    design,
                    &[
                        ("keys", keys),
                        ("partitions", partitions),
                        ("inputs", "1"),
                        ("calls", "1"),
                        ("checkpoints", checkpoints),
                        ("concurrent-checkpoints", concurrent),
                        ("send-failures", failures),
                        ("fail-after-landing", "true"),
                    ],
                );
                if concurrent == "2" {
                    // The pending slots are renamed: some reachable state has two.
                    assert!(reachable(&m).iter().any(|s| s.pending_count() == 2));
                }
                let rep = m.representative().expect("symmetric bounds");
                let group = renamings(m.bounds.keys as usize, m.bounds.partitions as usize);
                assert_eq!(
                    group.len(),
                    if (keys, partitions) == ("3", "1") {
                        6
                    } else {
                        2
                    }
                );
                let properties = m.properties();
                let states = reachable(&m);
                let mut classes = HashSet::new();
                for s in &states {
                    let r = rep(s);
                    assert_eq!(rep(&r), r, "idempotent");
                    classes.insert(r.clone());
                    let next: HashSet<State> = successors(&m, s);
                    for to in &group {
                        let t = rename(s, to);
                        assert_eq!(rep(&t), r, "one representative per class: {to:?} of {s:?}");
                        for p in &properties {
                            assert_eq!(
                                (p.condition)(&m, &t),
                                (p.condition)(&m, s),
                                "{} under {to:?}",
                                p.name
                            );
                        }
                        let renamed: HashSet<State> = next.iter().map(|n| rename(n, to)).collect();
                        assert_eq!(successors(&m, &t), renamed, "{to:?} of {s:?}");
                    }
                }
                assert!(
                    classes.len() < states.len(),
                    "{keys} keys, {partitions} partitions, {}",
                    design.name()
                );
            }
        }
    }

    #[test]
    fn one_key_per_partition_has_no_symmetry() {
        assert!(model(Design::Fixed, &[("keys", "1")])
            .representative()
            .is_none());
        let two = model(Design::Fixed, &[("partitions", "2")]);
        assert!(two.representative().is_none());
    }

    /// Unique states and discovered properties of an exhaustive DFS.
    fn dfs(m: &Durable, symmetric: bool) -> (usize, BTreeSet<&'static str>) {
        let builder = m.clone().checker();
        let builder = match (symmetric, m.representative()) {
            (true, Some(f)) => builder.symmetry_fn(f),
            _ => builder,
        };
        let run = builder.spawn_dfs().join();
        (
            run.unique_state_count(),
            run.discoveries().into_keys().collect(),
        )
    }

    /// Setting overrides and, per design, unique states without and with symmetry.
    type Case = (&'static [(&'static str, &'static str)], [(usize, usize); 4]);

    #[test]
    fn symmetric_dfs_keeps_every_verdict_with_fewer_states() {
        let cases: [Case; 4] = [
            (&[("inputs", "1")], PIN_ONE_INPUT),
            (
                &[
                    ("inputs", "1"),
                    ("concurrent-checkpoints", "2"),
                    ("checkpoints", "3"),
                ],
                PIN_CONCURRENT,
            ),
            (
                &[
                    ("keys", "3"),
                    ("inputs", "1"),
                    ("calls", "1"),
                    ("checkpoints", "1"),
                ],
                PIN_THREE_KEYS_ONE_PARTITION,
            ),
            (
                &[
                    ("keys", "3"),
                    ("partitions", "2"),
                    ("inputs", "1"),
                    ("calls", "1"),
                    ("checkpoints", "1"),
                ],
                PIN_THREE_KEYS,
            ),
        ];
        for (overrides, pins) in cases {
            for (design, pin) in DESIGNS.into_iter().zip(pins) {
                let m = model(design, overrides);
                let (full, found) = dfs(&m, false);
                let (reduced, found_reduced) = dfs(&m, true);
                println!("{overrides:?} {}: {full} -> {reduced}", design.name());
                assert_eq!(found_reduced, found, "{overrides:?} {}", design.name());
                assert_eq!((full, reduced), pin, "{overrides:?} {}", design.name());
            }
        }
    }

    #[test]
    fn symmetric_dfs_at_default_bounds() {
        let m = Durable::new(Design::Fixed);
        let (full, found) = dfs(&m, false);
        let (reduced, found_reduced) = dfs(&m, true);
        println!("default fixed: {full} -> {reduced}");
        assert_eq!(found_reduced, found);
        // Every reachability property is reached, no safety property fails.
        assert_eq!(found.len(), property::REACHABILITY.len());
        assert_eq!((full, reduced), PIN_DEFAULT_FIXED);
    }

    /// Unique states of `fixed` at default bounds (two keys, one partition), DFS without
    /// and with symmetry.
    const PIN_DEFAULT_FIXED: (usize, usize) = (1_829_471, 914_813);

    /// (unique states without, with symmetry) per design, in [`DESIGNS`] order.
    const PIN_ONE_INPUT: [(usize, usize); 4] = [
        (42_669, 21_368),
        (23_501, 11_784),
        (23_597, 11_832),
        (23_501, 11_784),
    ];
    /// The `concurrent-checkpoints` scenario: two pending at once, three in all.
    const PIN_CONCURRENT: [(usize, usize); 4] = [
        (158_031, 79_086),
        (74_985, 37_563),
        (75_417, 37_779),
        (74_985, 37_563),
    ];
    const PIN_THREE_KEYS_ONE_PARTITION: [(usize, usize); 4] = [
        (96_623, 16_392),
        (67_382, 11_471),
        (67_382, 11_471),
        (67_382, 11_471),
    ];
    const PIN_THREE_KEYS: [(usize, usize); 4] = [
        (58_535, 29_546),
        (34_340, 17_401),
        (34_340, 17_401),
        (34_340, 17_401),
    ];
}
