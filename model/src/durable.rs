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
//!   With `concurrent-puts`, every key may have a put of its own in flight (the
//!   runtime's group commit: the puts of several keys share one flush); they land in
//!   any order and are answered in any order.
//!   Replay is last-writer-wins per state key, so the model keeps of each state key's
//!   records what a replay or a property can observe: the latest one and its offset, and
//!   the set of states that ever landed for it;
//! - *checkpoints* capture keyed state and the recovery marker, complete (prune, commit
//!   outputs), and are restored after a crash. Up to `concurrent-checkpoints` may be
//!   pending at once (Flink's `max-concurrent-checkpoints`, default 1); completing one
//!   subsumes the older pending ones, as Flink's coordinator and the operator do;
//! - *faults*, each a setting off by default beyond one crash: sends that fail before or
//!   after landing, checkpoints aborted without a crash, completion notifications that
//!   never arrive, put errors the action catches, and sends that outlive their crash
//!   (zombies), landing later unless the restore fences the old producer;
//! - *subtasks* (`subtasks` 2): keys split between two operator subtasks sharing the
//!   partitions, each marker covering its own keys; a restore replays from the minimum
//!   of them (Flink Agents' union list state) or, as a counterfactual, from the
//!   subtask's own (`own-marker`), and may scale the job in to one subtask (`rescale`).
//!
//! Besides the seed's four designs, one mutant: `commit-on-snapshot`, the fixed store
//! with a sink that commits when a checkpoint is taken, so that "same output" can fail.
//!
//! This file holds the designs, bounds, actions and transitions; the rest is split by
//! concern: `state` (the typed state and its fingerprint), [`property`] (names and
//! predicates), `narrative` (phrases, step sentences, the domain view, counterexample
//! shapes), `expectations` (the verdict table) and [`symmetry`] (key renaming).

use serde::{Deserialize, Serialize};
use stateright::{Model, Property};

use crate::settings::{Param, ParamKind, Settings, SettingsError};
use crate::{check, Expectation, Spec};

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
/// Largest number of operator subtasks; subtasks times partitions is at most
/// [`MAX_PARTITIONS`], the markers a checkpoint holds.
pub const MAX_SUBTASKS: usize = 2;

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
    /// A mutant, not from the seed: the fixed store with a sink that commits a
    /// checkpoint's outputs when the checkpoint is taken instead of when it completes
    /// (the classic two-phase-commit sink error). It shows that "same output" can fail.
    CommitOnSnapshot,
}

/// Every design, in table order: the seed's four, then the mutant.
pub const DESIGNS: [Design; 5] = [
    Design::Unpatched,
    Design::OldPutOrder,
    Design::UnprunedTracking,
    Design::Fixed,
    Design::CommitOnSnapshot,
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
            Design::CommitOnSnapshot => "commit-on-snapshot",
        }
    }

    /// The design of a command-line name.
    pub fn from_name(name: &str) -> Result<Design, SettingsError> {
        DESIGNS
            .into_iter()
            .find(|d| d.name() == name)
            .ok_or_else(|| {
                SettingsError(format!(
                    "unknown design {} for durable (known: {})",
                    crate::quote::quote(name),
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

    /// The sink commits a checkpoint's outputs when it is taken (the mutant).
    pub fn commits_on_snapshot(self) -> bool {
        matches!(self, Design::CommitOnSnapshot)
    }
}

mod expectations;
mod narrative;
pub mod property;
mod state;
pub mod symmetry;

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
    /// The key's in-flight put's record lands in its partition, its acknowledgement not
    /// yet back. Only with asynchronous puts, or with concurrent puts (where the order
    /// in which several puts land, and which land before a crash, matter); otherwise a
    /// put lands and is acknowledged in one step, since nothing that reads the log can
    /// come in between.
    LandPut(u8),
    /// The producer learns the offset of the key's landed record (landing it first if
    /// needed).
    AckPut(u8),
    /// The producer sees the key's send fail; `landed`: the record reached the log
    /// anyway.
    FailPut {
        /// The key whose put fails.
        key: u8,
        /// Whether the record landed before the failure.
        landed: bool,
    },
    /// A checkpoint snapshots keyed state and the recovery marker. With two subtasks,
    /// only subtask 0's part: subtask 1 takes its own later ([`Action::SnapshotSubtask`]).
    TriggerCheckpoint,
    /// The checkpoint's barrier reaches subtask 1, which snapshots its keys' state and
    /// its markers now (`subtasks` 2; the oldest checkpoint still waiting for it).
    SnapshotSubtask,
    /// The pending checkpoint with this id (checkpoints count from 1 in trigger order)
    /// completes: prune, commit output. Every older pending checkpoint is subsumed: it is
    /// dropped and never completes.
    CompleteCheckpoint(u8),
    /// The pending checkpoint with this id completes at the coordinator (it is the one a
    /// restore starts from, and older pending ones are subsumed), but its notification
    /// never reaches the operator or the sink: nothing is pruned and no output is
    /// committed until a later checkpoint's notification or a restore
    /// (`lost-completions`; Flink does not guarantee `notifyCheckpointComplete`).
    CompleteCheckpointUnnotified(u8),
    /// The oldest pending checkpoint is aborted (it expired or a task declined it) and
    /// the operator is told; it never completes, and the checkpoints taken after it stay
    /// pending (`checkpoint-aborts`). Only the oldest: checkpoints expire in trigger
    /// order, and Flink's default runs one at a time.
    AbortCheckpoint(u8),
    /// The task fails; everything not checkpointed is lost. An in-flight send that had
    /// not landed lands (`landed`) or is lost: both are explored. With concurrent puts,
    /// the sends that land first do so by [`Action::LandPut`] steps, and a crash loses
    /// the rest (`landed` is false).
    Crash {
        /// Whether the in-flight send lands (false when no send is in flight).
        landed: bool,
    },
    /// Restore from the latest completed checkpoint and replay the log from its marker.
    Restore,
    /// Restore as [`Action::Restore`], at parallelism 1 where the checkpoint ran at
    /// `subtasks` 2 (`rescale`): subtask 0 takes over subtask 1's keys.
    RestoreScaledIn,
    /// The send a crash left with the producer (`zombie-sends`) lands at the end of its
    /// partition, over whatever its state key holds by then. With `epoch-fencing`, once
    /// a restore fenced its partition it lands stale: behind a newer fence, where every
    /// later rebuild skips it.
    LandZombie,
    /// The restoring incarnation appends a fence record carrying its new epoch to this
    /// partition and awaits its acknowledgement (`epoch-fencing`; partitions in order,
    /// all before the restore reads the log). A record of an older epoch that lands
    /// after the fence is stale.
    FencePartition(u8),
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
    /// Every key may have a put in flight at once; otherwise puts are sequential.
    pub concurrent_puts: bool,
    /// Checkpoints (and other keys' steps) may come between an action's calls
    /// (continuation executor); otherwise an action runs alone, start to completion.
    pub mid_action_checkpoints: bool,
    /// A crash may come before any checkpoint completed (restart from nothing).
    pub restart_without_checkpoint: bool,
    /// Offsets are renumbered by rank after every step (an exact reduction); off, they
    /// are the positions a real partition would assign.
    pub compact_offsets: bool,
    /// The oldest pending checkpoint may be aborted without a crash.
    pub checkpoint_aborts: bool,
    /// A checkpoint may complete without its notification reaching the operator.
    pub lost_completions: bool,
    /// A failed put of a call's result reaches the action as an error it catches and
    /// continues from; otherwise (and always for a completion's put) the task fails.
    pub handled_put_errors: bool,
    /// A crash may leave its unlanded send with the producer, to land later (sequential
    /// puts; one such send at a time).
    pub zombie_sends: bool,
    /// A restore fences the earlier incarnation's producer: its sends land only before
    /// the restore, or never (the broker refuses them: Kafka's transactional fencing).
    pub fenced_producer: bool,
    /// Every record carries its incarnation's epoch, and a restore appends a fence of
    /// its new epoch to every partition before it reads the log; a rebuild skips the
    /// records of an older epoch that lie after a newer fence.
    pub epoch_fencing: bool,
    /// Operator subtasks; key `k` runs on subtask `k % subtasks`, each with its own
    /// store and marker.
    pub subtasks: u8,
    /// A restore may scale the job in to one subtask, which then owns every key.
    pub rescale: bool,
    /// Each subtask restores from the marker of its own index only (operator state
    /// split among subtasks); otherwise every subtask takes the minimum of all subtasks'
    /// markers per partition (Flink Agents' union list state).
    pub own_marker: bool,
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
        name: "concurrent-puts",
        help: "puts of different keys may be in flight at once (group commit)",
        kind: ParamKind::Bool { default: false },
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
    Param {
        name: "checkpoint-aborts",
        help: "the oldest pending checkpoint may be aborted without a crash",
        kind: ParamKind::Bool { default: false },
    },
    Param {
        name: "lost-completions",
        help: "a checkpoint may complete without its notification reaching the operator",
        kind: ParamKind::Bool { default: false },
    },
    Param {
        name: "handled-put-errors",
        help: "a failed put of a call's result reaches the action, which catches it and goes on",
        kind: ParamKind::Bool { default: false },
    },
    Param {
        name: "zombie-sends",
        help: "a crash may leave its unlanded send with the producer, to land later",
        kind: ParamKind::Bool { default: false },
    },
    Param {
        name: "subtasks",
        help: "operator subtasks (key k on subtask k mod subtasks), each with its own marker",
        kind: ParamKind::Int {
            default: 1,
            min: 1,
            max: MAX_SUBTASKS as u64,
        },
    },
    Param {
        name: "rescale",
        help: "a restore may scale the job in to one subtask, which takes over every key",
        kind: ParamKind::Bool { default: false },
    },
    Param {
        name: "own-marker",
        help: "a subtask restores from its own marker only, not the minimum of all subtasks'",
        kind: ParamKind::Bool { default: false },
    },
    Param {
        name: "fenced-producer",
        help:
            "a restore fences the crashed incarnation's producer (its sends land before, or never)",
        kind: ParamKind::Bool { default: false },
    },
    Param {
        name: "epoch-fencing",
        help: "a restore fences every partition with its epoch first; older records after a fence are skipped",
        kind: ParamKind::Bool { default: false },
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
        "concurrent-puts",
        &[("concurrent-puts", "true"), ("inputs", "1")],
    ),
    (
        "concurrent-puts-fail-after-landing",
        &[
            ("concurrent-puts", "true"),
            ("send-failures", "1"),
            ("fail-after-landing", "true"),
            ("inputs", "1"),
        ],
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
    (
        "checkpoint-aborts",
        &[
            ("checkpoint-aborts", "true"),
            ("checkpoints", "3"),
            ("inputs", "1"),
        ],
    ),
    (
        "lost-completions",
        &[
            ("lost-completions", "true"),
            ("checkpoints", "3"),
            ("inputs", "1"),
        ],
    ),
    (
        "handled-put-errors",
        &[
            ("handled-put-errors", "true"),
            ("send-failures", "1"),
            ("inputs", "1"),
        ],
    ),
    (
        "handled-put-errors-after-landing",
        &[
            ("handled-put-errors", "true"),
            ("send-failures", "1"),
            ("fail-after-landing", "true"),
            ("inputs", "1"),
        ],
    ),
    ("zombie-sends", &[("zombie-sends", "true"), ("inputs", "1")]),
    (
        "zombie-sends-fenced",
        &[
            ("zombie-sends", "true"),
            ("epoch-fencing", "true"),
            ("inputs", "1"),
        ],
    ),
    (
        "zombie-sends-fenced-two-crashes",
        &[
            ("zombie-sends", "true"),
            ("epoch-fencing", "true"),
            ("crashes", "2"),
            ("inputs", "1"),
        ],
    ),
    (
        "zombie-sends-two-crashes",
        &[("zombie-sends", "true"), ("crashes", "2"), ("inputs", "1")],
    ),
    (
        "zombie-sends-producer-fenced",
        &[
            ("zombie-sends", "true"),
            ("fenced-producer", "true"),
            ("inputs", "1"),
        ],
    ),
    ("subtasks", &[("subtasks", "2"), ("inputs", "1")]),
    (
        "rescale",
        &[("subtasks", "2"), ("rescale", "true"), ("inputs", "1")],
    ),
    (
        "rescale-own-marker",
        &[
            ("subtasks", "2"),
            ("rescale", "true"),
            ("own-marker", "true"),
            ("inputs", "1"),
        ],
    ),
];

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
        let overrides = Durable::preset(scenario)?;
        Durable::build(design.name(), &Settings::parse(PARAMS, overrides)?)
    }

    fn slot_range(&self) -> impl Iterator<Item = StateKey> + '_ {
        self.state_keys.iter().copied()
    }

    fn partition(&self, key: u8) -> usize {
        (key % self.bounds.partitions) as usize
    }

    /// The subtask that runs key `key`, scaled in (one subtask runs every key) or not.
    pub fn owner(&self, scaled_in: bool, key: u8) -> u8 {
        if scaled_in {
            0
        } else {
            key % self.bounds.subtasks
        }
    }

    /// The checkpoint marker slot of subtask `subtask`'s marker for partition `p`.
    pub fn marker_slot(&self, subtask: u8, p: usize) -> usize {
        subtask as usize * self.bounds.partitions as usize + p
    }

    /// The marker slots of partition `p`, one per subtask.
    fn partition_marker_slots(&self, p: usize) -> impl Iterator<Item = usize> + '_ {
        (0..self.bounds.subtasks).map(move |t| self.marker_slot(t, p))
    }

    /// The offset from which a restore from `c` replays key `key`'s partition: the
    /// minimum of every subtask's marker for it, or (`own-marker`) the marker of the
    /// subtask that owns the key after the restore (`scaled_in`: the restore scaled in).
    fn replay_marker(&self, c: &Checkpoint, key: u8, scaled_in: bool) -> u8 {
        let p = self.partition(key);
        if self.bounds.own_marker {
            c.marker[self.marker_slot(self.owner(scaled_in, key), p)]
        } else {
            self.union_marker(c, p)
        }
    }

    /// The minimum of every subtask's marker of partition `p` in `c`: where every
    /// subtask replays it from (Flink Agents' union list state).
    pub(super) fn union_marker(&self, c: &Checkpoint, p: usize) -> u8 {
        self.partition_marker_slots(p)
            .map(|slot| c.marker[slot])
            .min()
            .expect("at least one subtask")
    }

    fn can_crash(&self, s: &State) -> bool {
        s.crashes < self.bounds.crashes
            && (s.completed.is_some() || self.bounds.restart_without_checkpoint)
    }

    /// Whether a landed record holds call `call`'s result for `sk`.
    fn log_holds(&self, s: &State, sk: StateKey, call: u8) -> bool {
        s.landed_states(sk).holds_call(call)
    }

    /// Subtask `subtask`'s recovery marker of partition `p` for a snapshot of `s`: it
    /// covers the keys the subtask owns.
    fn marker(&self, s: &State, subtask: u8, p: usize) -> u8 {
        let mut marker = s.log_len[p];
        if !self.design.rewinds_marker() {
            return marker;
        }
        // Scaled in, subtask 0 owns every key: the other slots repeat its marker.
        let subtask = if s.scaled_in { 0 } else { subtask };
        for sk in self.slot_range() {
            if self.partition(sk.key) != p || self.owner(s.scaled_in, sk.key) != subtask {
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

    /// Key `k`'s in-flight put's record lands at the end of its partition.
    fn land(&self, next: &mut State, k: usize) {
        let Some(put) = next.puts[k] else {
            unreachable!("land without a put of key {k} in flight");
        };
        debug_assert!(put.offset.is_none(), "a put lands once");
        let offset = self.append(next, put.record);
        next.puts[k] = Some(Put {
            offset: Some(offset),
            ..put
        });
    }

    /// `record` lands at the end of its partition and becomes its state key's latest;
    /// returns its offset.
    fn append(&self, next: &mut State, record: Record) -> u8 {
        let p = self.partition(record.state_key.key);
        let offset = next.log_len[p];
        let mut landed = next.landed_states(record.state_key);
        landed.insert(record.state);
        next.log.set(
            record.state_key.slot(),
            Some(Records {
                latest: record.state,
                offset,
                landed,
            }),
        );
        next.log_len[p] += 1;
        offset
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
            for put in s.puts.iter().flatten() {
                if let (Some(o), true) = (put.offset, self.partition(put.record.state_key.key) == p)
                {
                    note(o);
                }
            }
            for c in s.pending.iter().chain([&s.completed]).flatten() {
                for slot in self.partition_marker_slots(p) {
                    note(c.marker[slot]);
                }
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
            for put in s.puts.iter_mut().flatten() {
                if self.partition(put.record.state_key.key) == p {
                    put.offset = put.offset.map(rank);
                }
            }
            for c in s.pending.iter_mut().chain([&mut s.completed]).flatten() {
                for slot in self.partition_marker_slots(p) {
                    c.marker[slot] = rank(c.marker[slot]);
                }
            }
            s.log_len[p] = rank(s.log_len[p]);
        }
    }

    /// Two subtasks run (not scaled in): each takes its part of a checkpoint when the
    /// barrier reaches it, subtask 0 at the trigger and subtask 1 later.
    fn snapshots_apart(&self, s: &State) -> bool {
        self.bounds.subtasks > 1 && !s.scaled_in
    }

    /// Subtask `subtask`'s part of checkpoint `c`, taken in `s`: its keys' keyed state
    /// and its markers. `taken`: the part is the subtask's snapshot (which sets the
    /// step's events and, in the mutant, commits); otherwise a placeholder of the current
    /// values that the subtask's own snapshot overwrites.
    fn snapshot_part(
        &self,
        s: &State,
        next: &mut State,
        c: &mut Checkpoint,
        subtask: u8,
        taken: bool,
    ) {
        let b = self.bounds;
        for k in 0..b.keys {
            if self.owner(s.scaled_in, k) == subtask {
                let k = k as usize;
                c.next_seq[k] = s.next_seq[k];
                c.finished[k] = s.finished[k];
                c.next_action[k] = s.next_action[k];
            }
        }
        for p in 0..b.partitions as usize {
            let marker = self.marker(s, subtask, p);
            c.marker[self.marker_slot(subtask, p)] = marker;
            if taken && marker < s.log_len[p] {
                next.events.marker_rewound = true;
            }
        }
        if !taken {
            return;
        }
        let over_saved = (0..b.keys).any(|k| {
            let ku = k as usize;
            self.owner(s.scaled_in, k) == subtask
                && s.finished[ku] < s.next_seq[ku]
                && s.latest_record(s.head(ku))
                    .is_some_and(|(st, _)| !st.completed())
        });
        next.events.checkpoint_over_saved |= over_saved;
        if self.design.commits_on_snapshot() {
            self.commit_outputs(s, next, c);
        }
    }

    /// Pending checkpoint `id` completes at the coordinator: it and every older pending
    /// one leave, the newer ones move up, and it becomes the checkpoint a restore starts
    /// from. `None` when it is not pending, or a subtask has not taken its part.
    fn complete(&self, s: &State, next: &mut State, id: u8) -> Option<Checkpoint> {
        let (at, c) = s
            .pending_checkpoints()
            .enumerate()
            .find_map(|(at, (pending, c))| (pending == id).then_some((at, c)))?;
        if c.awaiting_subtask {
            return None;
        }
        Self::leave_pending(s, next, at);
        next.completed = Some(c);
        Some(c)
    }

    /// The pending checkpoints up to slot `at` leave; the newer ones move up, keeping
    /// their ids (ids are counted back from the newest).
    fn leave_pending(s: &State, next: &mut State, at: usize) {
        next.pending = [None; MAX_CONCURRENT];
        next.pending[..MAX_CONCURRENT - at - 1].copy_from_slice(&s.pending[at + 1..]);
    }

    /// A failed put of key `k` that the action catches and goes on from: with
    /// `handled-put-errors`, a call result's put (a completion's put is the operator's).
    pub(super) fn catches_put_error(&self, s: &State, k: usize) -> bool {
        self.bounds.handled_put_errors && matches!(s.phase[k], Phase::AwaitPut(_))
    }

    /// The sink commits the outputs of the inputs checkpoint `c` counts finished. What a
    /// sink committed stays committed: the mutant's sink, which commits ahead of
    /// completion, is never rolled back by a restore from an older checkpoint.
    fn commit_outputs(&self, s: &State, next: &mut State, c: &Checkpoint) {
        for k in 0..self.bounds.keys as usize {
            if c.finished[k] > s.committed_outputs[k] && s.crashes > 0 {
                next.events.output_after_restore = true;
            }
            next.committed_outputs[k] = if self.design.commits_on_snapshot() {
                c.finished[k].max(s.committed_outputs[k])
            } else {
                c.finished[k]
            };
        }
    }

    fn any_running(&self, s: &State) -> bool {
        s.phase[..self.bounds.keys as usize]
            .iter()
            .any(|p| *p != Phase::Idle)
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
            Action::LandPut(_)
            | Action::AckPut(_)
            | Action::FailPut { .. }
            | Action::LandZombie
            | Action::FencePartition(_) => Some(2 + keys),
            Action::TriggerCheckpoint
            | Action::SnapshotSubtask
            | Action::CompleteCheckpoint(_)
            | Action::CompleteCheckpointUnnotified(_)
            | Action::AbortCheckpoint(_) => Some(3 + keys),
            Action::Crash { .. } | Action::Restore | Action::RestoreScaledIn => None,
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
        if s.zombie.is_some() && (s.down || !b.fenced_producer) {
            actions.push(Action::LandZombie);
        }
        if s.down {
            // The restore fences every partition, in order, before it reads the log.
            if b.epoch_fencing && s.fenced_partitions < b.partitions {
                actions.push(Action::FencePartition(s.fenced_partitions));
                return;
            }
            actions.push(Action::Restore);
            if b.rescale && !s.scaled_in {
                actions.push(Action::RestoreScaledIn);
            }
            return;
        }
        if s.failed {
            // Other keys' concurrent puts may still land before the task is gone.
            if b.concurrent_puts {
                for put in s.puts_in_flight().filter(|p| p.offset.is_none()) {
                    actions.push(Action::LandPut(put.record.state_key.key));
                }
            }
            if self.can_crash(s) {
                actions.push(Action::Crash { landed: false });
            }
            return;
        }
        // Sequential puts may send only when no put is in flight.
        let may_send = b.concurrent_puts || !s.any_put();
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
                    if may_send {
                        actions.push(Action::CompleteAction(k));
                    }
                }
                Phase::HaveResult(_) => {
                    if may_send {
                        actions.push(Action::SendPut(k));
                    }
                }
                Phase::AwaitPut(_) | Phase::AwaitCompletion => {}
            }
        }
        // A landing is a step of its own where something can observe it between the
        // send and the answer: a snapshot (asynchronous puts), or another put landing
        // or a crash (concurrent puts).
        let lands_apart = !b.synchronous_puts || b.concurrent_puts;
        let may_fail = s.failed_sends < b.send_failures;
        for put in s.puts_in_flight() {
            let k = put.record.state_key.key;
            let landed = put.offset.is_some();
            if !landed && lands_apart {
                actions.push(Action::LandPut(k));
            }
            if landed || !lands_apart {
                actions.push(Action::AckPut(k));
            }
            if !landed && may_fail {
                actions.push(Action::FailPut {
                    key: k,
                    landed: false,
                });
            }
            if may_fail && b.fail_after_landing && (landed || !lands_apart) {
                actions.push(Action::FailPut {
                    key: k,
                    landed: true,
                });
            }
        }
        let quiet = b.mid_action_checkpoints || !self.any_running(s);
        let pending = s.pending_count();
        if pending < b.concurrent_checkpoints as usize
            && s.checkpoints < b.checkpoints
            && (!s.any_put() || !b.synchronous_puts)
            && quiet
        {
            actions.push(Action::TriggerCheckpoint);
        }
        // Subtask 1's barrier, under the trigger's conditions for its own puts.
        if quiet
            && s.pending.iter().flatten().any(|c| c.awaiting_subtask)
            && !(b.synchronous_puts
                && s.puts_in_flight()
                    .any(|p| self.owner(s.scaled_in, p.record.state_key.key) == 1))
        {
            actions.push(Action::SnapshotSubtask);
        }
        if quiet {
            for (id, c) in s.pending_checkpoints() {
                if !c.awaiting_subtask {
                    actions.push(Action::CompleteCheckpoint(id));
                }
            }
            // The abort's notification runs on the mailbox, like a completion's.
            if b.checkpoint_aborts {
                if let Some((id, _)) = s.pending_checkpoints().next() {
                    actions.push(Action::AbortCheckpoint(id));
                }
            }
        }
        // A completion whose notification is lost asks nothing of the operator.
        if b.lost_completions {
            for (id, c) in s.pending_checkpoints() {
                if !c.awaiting_subtask {
                    actions.push(Action::CompleteCheckpointUnnotified(id));
                }
            }
        }
        if self.can_crash(s) {
            actions.push(Action::Crash { landed: false });
            // Concurrent puts land before a crash by their own steps.
            if !b.concurrent_puts && s.puts_in_flight().any(|put| put.offset.is_none()) {
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
                let sk = s.head(ku);
                if s.completed.is_some_and(|c| s.finished[ku] < c.finished[ku]) {
                    next.events.finished_rerun = true;
                }
                if s.cached(sk).is_some_and(|st| st.completed()) {
                    // Restored completed state: the action is skipped, its output reused.
                    self.finish_action(&mut next, ku);
                } else {
                    // The log holds its completion, but the store did not restore it.
                    if s.landed_states(sk).contains(ActionState::COMPLETED) {
                        next.events.finished_rerun = true;
                    }
                    next.phase[ku] = Phase::AtCall(0);
                }
            }
            Action::ReuseResult(k) => {
                let ku = k as usize;
                if let Phase::AtCall(i) = s.phase[ku] {
                    next.phase[ku] = Phase::AtCall(i + 1);
                }
                next.events.reused = s
                    .completed
                    .is_some_and(|c| self.replay_marker(&c, k, s.scaled_in) > 0);
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
                debug_assert!(
                    self.bounds.concurrent_puts || !s.any_put(),
                    "puts are sequential"
                );
                debug_assert!(s.puts[ku].is_none(), "a key has one put in flight");
                next.puts[ku] = Some(Put {
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
            Action::LandPut(k) => {
                // Not enabled unless the key's put is in flight and has not landed.
                if s.puts.get(k as usize).copied().flatten()?.offset.is_some() {
                    return None;
                }
                self.land(&mut next, k as usize)
            }
            Action::AckPut(k) => {
                let k = k as usize;
                let put = s.puts[k]?;
                if put.offset.is_none() {
                    self.land(&mut next, k);
                }
                let offset = next.puts[k].and_then(|p| p.offset);
                let slot = put.record.state_key.slot();
                if !self.design.caches_before_ack() {
                    next.cache.set(slot, Some(put.record.state));
                }
                if self.design.rewinds_marker() {
                    next.acked_offset.set(slot, offset);
                }
                next.puts[k] = None;
                self.after_put(&mut next, k);
            }
            Action::FailPut { key, landed } => {
                let k = key as usize;
                let put = s.puts[k]?;
                next.failed_sends += 1;
                if landed && put.offset.is_none() {
                    self.land(&mut next, k);
                }
                next.puts[k] = None;
                if self.design.caches_before_ack() {
                    // Old order: flush does not surface the send's error; the action goes
                    // on with the state cached as if saved.
                    self.after_put(&mut next, k);
                } else if self.catches_put_error(s, k) {
                    // The error reaches the action's code, which catches it and goes on
                    // to its next call: nothing cached, no offset tracked; the action's
                    // own state keeps the result, so its next put carries it.
                    self.after_put(&mut next, k);
                } else {
                    next.failed = true;
                }
            }
            Action::TriggerCheckpoint => {
                // Every subtask's part, taken now; with two subtasks subtask 1's is a
                // placeholder its own snapshot overwrites.
                let mut c = Checkpoint {
                    next_seq: s.next_seq,
                    finished: s.finished,
                    next_action: s.next_action,
                    marker: [0; MAX_PARTITIONS],
                    awaiting_subtask: self.snapshots_apart(s),
                };
                let taking = if c.awaiting_subtask {
                    0..1
                } else {
                    0..self.bounds.subtasks
                };
                for subtask in 0..self.bounds.subtasks {
                    self.snapshot_part(s, &mut next, &mut c, subtask, taking.contains(&subtask));
                }
                // Enabled only with a free slot: the new checkpoint goes after the others.
                next.pending[s.pending_count()] = Some(c);
                next.checkpoints += 1;
            }
            Action::SnapshotSubtask => {
                let at = s
                    .pending
                    .iter()
                    .position(|c| c.is_some_and(|c| c.awaiting_subtask))?;
                let mut c = s.pending[at]?;
                c.awaiting_subtask = false;
                self.snapshot_part(s, &mut next, &mut c, 1, true);
                next.pending[at] = Some(c);
            }
            Action::CompleteCheckpoint(id) => {
                let c = self.complete(s, &mut next, id)?;
                for sk in self.slot_range() {
                    if sk.seq < c.finished[sk.key as usize] {
                        next.cache.set(sk.slot(), None);
                        next.acked_offset.set(sk.slot(), None);
                    }
                }
                self.commit_outputs(s, &mut next, &c);
            }
            Action::CompleteCheckpointUnnotified(id) => {
                // Restorable, but nothing pruned and nothing committed.
                self.complete(s, &mut next, id)?;
            }
            Action::AbortCheckpoint(id) => {
                // Only the oldest.
                if s.pending_checkpoints().next()?.0 != id {
                    return None;
                }
                Self::leave_pending(s, &mut next, 0);
            }
            Action::Crash { landed } => {
                if self.any_running(s) {
                    next.events.crash_mid_action = true;
                }
                if landed {
                    // Sequential puts: the one in flight.
                    let k = s
                        .puts_in_flight()
                        .find(|p| p.offset.is_none())?
                        .record
                        .state_key
                        .key;
                    self.land(&mut next, k as usize);
                }
                // A send still in the producer's hands may outlive the crash.
                let zombie = match s.zombie {
                    None if self.bounds.zombie_sends && !landed => s
                        .puts_in_flight()
                        .find(|p| p.offset.is_none())
                        .map(|p| p.record),
                    kept => kept,
                };
                // Everything volatile goes; the log, the completed checkpoint, committed
                // output and ghost counters stay. An unlanded send is lost.
                next = State {
                    zombie,
                    // A kept zombie was fenced by the restore before this crash, if any.
                    zombie_fenced: zombie.is_some() && s.zombie_fenced,
                    log: next.log,
                    log_len: next.log_len,
                    completed: s.completed,
                    checkpoints: s.checkpoints,
                    crashes: s.crashes + 1,
                    scaled_in: s.scaled_in,
                    failed_sends: s.failed_sends,
                    committed_outputs: s.committed_outputs,
                    supplier_runs: s.supplier_runs,
                    down: true,
                    events: next.events,
                    ..State::empty()
                };
            }
            Action::LandZombie => {
                let record = s.zombie?;
                if s.zombie_fenced {
                    // Behind a newer fence: it takes an offset, and no rebuild reads it.
                    next.log_len[self.partition(record.state_key.key)] += 1;
                } else {
                    self.append(&mut next, record);
                }
                next.zombie = None;
                next.zombie_fenced = false;
            }
            Action::FencePartition(p) => {
                // Enabled for the next partition only, while down.
                if !s.down || p != s.fenced_partitions {
                    return None;
                }
                next.log_len[p as usize] += 1;
                next.fenced_partitions += 1;
                if s.zombie
                    .is_some_and(|r| self.partition(r.state_key.key) == p as usize)
                {
                    next.zombie_fenced = true;
                }
            }
            Action::Restore | Action::RestoreScaledIn => {
                next.down = false;
                next.fenced_partitions = 0;
                next.scaled_in = s.scaled_in || action == Action::RestoreScaledIn;
                if self.bounds.fenced_producer {
                    // The new producer fences the old one: its send never lands.
                    next.zombie = None;
                    next.zombie_fenced = false;
                }
                if let Some(c) = s.completed {
                    next.next_seq = c.next_seq;
                    next.finished = c.finished;
                    next.next_action = c.next_action;
                    // The sink commits the restored checkpoint's output (a lost
                    // notification left it uncommitted; otherwise this changes nothing).
                    self.commit_outputs(s, &mut next, &c);
                    // Last writer wins per state key: a replay from the marker ends with
                    // each key's latest record if that one is at or after the marker.
                    for sk in self.slot_range() {
                        let slot = sk.slot();
                        let Some(records) = s.log.get(slot) else {
                            continue;
                        };
                        if records.offset < self.replay_marker(&c, sk.key, next.scaled_in)
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
                | Action::SnapshotSubtask
                | Action::CompleteCheckpointUnnotified(_)
                | Action::AbortCheckpoint(_)
        );
        if self.bounds.compact_offsets && moves_offsets {
            self.compact_offsets(&mut next);
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        check::select(property::all(), self.focus)
    }
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
            concurrent_puts: settings.flag("concurrent-puts"),
            mid_action_checkpoints: settings.flag("mid-action-checkpoints"),
            restart_without_checkpoint: settings.flag("restart-without-checkpoint"),
            compact_offsets: settings.flag("compact-offsets"),
            checkpoint_aborts: settings.flag("checkpoint-aborts"),
            lost_completions: settings.flag("lost-completions"),
            handled_put_errors: settings.flag("handled-put-errors"),
            zombie_sends: settings.flag("zombie-sends"),
            fenced_producer: settings.flag("fenced-producer"),
            epoch_fencing: settings.flag("epoch-fencing"),
            subtasks: int("subtasks"),
            rescale: settings.flag("rescale"),
            own_marker: settings.flag("own-marker"),
        };
        if bounds.subtasks as usize * bounds.partitions as usize > MAX_PARTITIONS {
            return Err(SettingsError(format!(
                "`subtasks` ({}) times `partitions` ({}) must be at most {MAX_PARTITIONS}: a checkpoint holds that many markers",
                bounds.subtasks, bounds.partitions
            )));
        }
        if bounds.subtasks > bounds.keys {
            return Err(SettingsError(format!(
                "`subtasks` ({}) must not exceed `keys` ({}): a subtask without keys runs nothing",
                bounds.subtasks, bounds.keys
            )));
        }
        if (bounds.rescale || bounds.own_marker) && bounds.subtasks < 2 {
            return Err(SettingsError(
                "`rescale` and `own-marker` need `subtasks 2`: one subtask has nothing to rescale or share".into(),
            ));
        }
        if bounds.zombie_sends && bounds.concurrent_puts {
            return Err(SettingsError(
                "`zombie-sends` needs sequential puts (`concurrent-puts false`)".into(),
            ));
        }
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
        self.view(s)
    }

    fn describe_step(&self, s: &State, action: &Action) -> String {
        self.step_sentence(s, action)
    }

    fn classify(&self, path: &[(State, Option<Action>)]) -> Option<String> {
        self.shape(path)
    }

    fn representative(&self) -> Option<fn(&State) -> State> {
        use symmetry::representative as r;
        // Renaming keys would move them between subtasks, whose markers differ.
        if self.bounds.subtasks > 1 {
            return None;
        }
        // A class of one key has nothing to permute.
        match (self.bounds.keys, self.bounds.partitions) {
            (2, 1) => Some(r::<2, 1>),
            (3, 1) => Some(r::<3, 1>),
            (3, 2) => Some(r::<3, 2>),
            _ => None,
        }
    }

    fn expectations() -> Vec<Expectation> {
        expectations::table()
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
}
