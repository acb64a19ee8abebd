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
//!   never arrive, put errors the action catches (leaving its call index behind, so
//!   the next result takes the failed one's slot), and sends that outlive their crash
//!   (zombies), landing later unless the restore fences the old producer;
//! - *subtasks* (`subtasks` 2): keys split between two operator subtasks sharing the
//!   partitions, each marker covering its own keys; a restore replays from the minimum
//!   of them (Flink Agents' union list state) or, as a counterfactual, from the
//!   subtask's own (`own-marker`), and may scale the job in to one subtask (`rescale`).
//!
//! Besides the seed's four designs, one mutant: `commit-on-snapshot`, the fixed store
//! with a sink that commits when a checkpoint is taken, so that "same output" can fail.
//!
//! This file holds the designs, bounds and actions; the rest is split by concern:
//! `params` (the settings and the named scenarios), `actions` (each phase's enabled
//! steps and one transition function per action),
//! `state` (the typed state and its fingerprint), [`property`] (names and predicates),
//! `narrative` (phrases, step sentences, the domain view, counterexample shapes),
//! `expectations` (the verdict table) and [`symmetry`] (key renaming).

use serde::{Deserialize, Serialize};
use stateright::{Model, Property};

use crate::settings::{Param, Settings, SettingsError};
use crate::{check, Expectation, Spec};
use params::{PARAMS, SCENARIOS};

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

mod actions;
mod expectations;
mod footprint;
mod narrative;
mod params;
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
    /// continues from, its call index not advanced (flink-agents' `recordCallCompletion`
    /// advances it after the persist), so the next call's result takes the failed one's
    /// slot; otherwise (and always for a completion's put) the task fails.
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
    /// Partial-order reduction, when on ([`Spec::reduced`]): `actions()` gives a
    /// stubborn subset of the enabled steps.
    reduction: Option<std::sync::Arc<crate::por::Reduction<Action>>>,
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

    /// The enabled steps, phase by phase (`actions`): a restore while down, the end of
    /// a failing task, otherwise the operator, the puts, the checkpoints and a crash.
    fn actions(&self, s: &State, actions: &mut Vec<Action>) {
        let reduction = self.reduction.as_deref();
        crate::por::follow(reduction, self, s, actions, |all| self.enabled(s, all));
    }
    /// The step of one action: one transition function per action (`actions`), then
    /// the offsets renumbered by rank (`compact-offsets`).
    fn next_state(&self, s: &State, action: Action) -> Option<State> {
        let mut next = match action {
            Action::DeliverInput(k) => self.deliver_input(s, k),
            Action::StartAction(k) => self.start_action(s, k),
            Action::ReuseResult(k) => self.reuse_result(s, k),
            Action::CallSupplier(k) => self.call_supplier(s, k),
            Action::SendPut(k) | Action::CompleteAction(k) => self.send_put(s, k),
            Action::LandPut(k) => self.land_put(s, k),
            Action::AckPut(k) => self.ack_put(s, k),
            Action::FailPut { key, landed } => self.fail_put(s, key, landed),
            Action::TriggerCheckpoint => self.trigger_checkpoint(s),
            Action::SnapshotSubtask => self.snapshot_subtask(s),
            Action::CompleteCheckpoint(id) => self.complete_checkpoint(s, id),
            Action::CompleteCheckpointUnnotified(id) => self.complete_checkpoint_unnotified(s, id),
            Action::AbortCheckpoint(id) => self.abort_checkpoint(s, id),
            Action::Crash { landed } => self.crash(s, landed),
            Action::LandZombie => self.land_zombie(s),
            Action::FencePartition(p) => self.fence_partition(s, p),
            Action::Restore => self.restore(s, false),
            Action::RestoreScaledIn => self.restore(s, true),
        }?;
        if self.bounds.compact_offsets && action.moves_offsets() {
            self.compact_offsets(&mut next);
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        check::select(property::all(), self.focus)
    }
}

/// The enabled steps, unreduced.
impl Durable {
    /// The enabled steps, phase by phase: a restore while down, the end of a failing
    /// task, otherwise the operator, the puts, the checkpoints and a crash.
    fn enabled(&self, s: &State, actions: &mut Vec<Action>) {
        self.zombie_steps(s, actions);
        if s.down {
            self.restore_steps(s, actions);
            return;
        }
        if s.failed {
            self.failing_steps(s, actions);
            return;
        }
        self.operator_steps(s, actions);
        self.put_steps(s, actions);
        self.checkpoint_steps(s, actions);
        self.crash_steps(s, actions);
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
            reduction: None,
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

    fn reduced(&self) -> Result<Self, crate::por::ReductionError> {
        let unreduced = Durable {
            reduction: None,
            ..self.clone()
        };
        let reduction = crate::por::Reduction::of(&unreduced)?;
        Ok(Durable {
            reduction: Some(std::sync::Arc::new(reduction)),
            ..unreduced
        })
    }

    fn reduction_tally(&self) -> Option<(u64, u64)> {
        self.reduction.as_ref().map(|r| r.tally().counts())
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
