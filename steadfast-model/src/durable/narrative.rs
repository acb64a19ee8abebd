//! The durable model in the domain's words: a phrase per action, a sentence per step,
//! the state as a reader wants it (empty and out-of-bounds slots left out), and the
//! named shapes of counterexamples.

use std::fmt::Write as _;
use std::ops::Range;

use super::{
    property, Action, ActionState, Checkpoint, Durable, Phase, Put, State, StateKey, MAX_PARTITIONS,
};

impl Action {
    /// A short phrase for the action in the domain's words, for lists of enabled actions
    /// (the Explorer's); [`Spec::describe_step`](crate::Spec::describe_step) says what a step does in its state.
    pub fn phrase(&self) -> String {
        match *self {
            Action::DeliverInput(k) => format!("source delivers key {k}'s next input"),
            Action::StartAction(k) => format!("key {k}: action starts"),
            Action::ReuseResult(k) => format!("key {k}: call reuses its saved result"),
            Action::CallSupplier(k) => format!("key {k}: call runs the supplier"),
            Action::SendPut(k) => format!("key {k}: state with the call result sent to the log"),
            Action::CompleteAction(k) => format!("key {k}: completed state sent to the log"),
            Action::LandPut(k) => format!("key {k}: in-flight put lands in the log"),
            Action::AckPut(k) => format!("key {k}: producer learns the put's offset"),
            Action::FailPut { key, landed: false } => {
                format!("key {key}: put fails, nothing reached the log")
            }
            Action::FailPut { key, landed: true } => {
                format!("key {key}: put fails after its record landed")
            }
            Action::TriggerCheckpoint => "checkpoint triggered".to_string(),
            Action::SnapshotSubtask => "the checkpoint's barrier reaches subtask 1".to_string(),
            Action::CompleteCheckpoint(id) => format!("checkpoint {id} completes"),
            Action::CompleteCheckpointUnnotified(id) => {
                format!("checkpoint {id} completes, its notification lost")
            }
            Action::AbortCheckpoint(id) => format!("checkpoint {id} is aborted"),
            Action::Crash { landed: false } => "crash: any in-flight put is lost".to_string(),
            Action::Crash { landed: true } => "crash: the in-flight put lands first".to_string(),
            Action::Restore => "restore from the latest checkpoint".to_string(),
            Action::RestoreScaledIn => {
                "restore from the latest checkpoint at parallelism 1".to_string()
            }
            Action::LandZombie => "the crashed incarnation's send lands".to_string(),
            Action::FencePartition(p) => {
                format!("the restore fences partition {p} with its new epoch")
            }
        }
    }
}

impl Durable {
    /// What the subtasks in `subtasks` put into a checkpoint taken in `s`: their queued
    /// inputs and their markers.
    fn part_text(&self, s: &State, subtasks: Range<u8>) -> (String, String) {
        let b = self.bounds;
        let queued: Vec<String> = (0..b.keys)
            .filter(|k| subtasks.contains(&self.owner(s.scaled_in, *k)))
            .map(usize::from)
            .filter(|k| s.finished[*k] < s.next_seq[*k])
            .map(|k| format!("key {k} input {}", s.finished[k]))
            .collect();
        let queued = if queued.is_empty() {
            "nothing queued".to_string()
        } else {
            format!("queued: {}", queued.join(", "))
        };
        let mut markers = [0; MAX_PARTITIONS];
        for t in subtasks.clone() {
            for p in 0..b.partitions as usize {
                markers[self.marker_slot(t, p)] = self.marker(s, t, p);
            }
        }
        (queued, self.markers_text(&markers, subtasks))
    }

    /// The markers of the subtasks in `subtasks`: per partition, or per subtask and
    /// partition.
    fn markers_text(&self, markers: &[u8; MAX_PARTITIONS], subtasks: Range<u8>) -> String {
        let b = self.bounds;
        let mut words = Vec::new();
        for t in subtasks {
            for p in 0..b.partitions as usize {
                let m = markers[self.marker_slot(t, p)];
                words.push(if b.subtasks > 1 {
                    format!("subtask {t} p{p}={m}")
                } else {
                    format!("p{p}={m}")
                });
            }
        }
        words.join(" ")
    }

    /// Where a restore from `c` replays each partition from.
    fn replay_text(&self, c: &Checkpoint, scaled_in: bool) -> String {
        let b = self.bounds;
        let mut words = Vec::new();
        for p in 0..b.partitions as usize {
            if b.own_marker {
                let owners = if scaled_in { 1 } else { b.subtasks };
                for t in 0..owners {
                    let m = c.marker[self.marker_slot(t, p)];
                    words.push(format!(
                        "p{p} from offset {m} on subtask {t} (its own marker)"
                    ));
                }
            } else {
                words.push(format!("p{p} from offset {}", self.union_marker(c, p)));
            }
        }
        words.join(", ")
    }

    /// "; checkpoint(s) … subsumed" for the pending checkpoints older than `id`, or "".
    fn subsumed(&self, s: &State, id: u8) -> String {
        let older: Vec<String> = s
            .pending_checkpoints()
            .map(|(older, _)| older)
            .filter(|older| *older < id)
            .map(|older| older.to_string())
            .collect();
        match older.len() {
            0 => String::new(),
            1 => format!("; checkpoint {} subsumed", older[0]),
            _ => format!("; checkpoints {} subsumed", older.join(", ")),
        }
    }

    /// The state in the domain's words: per key its progress and running action, the
    /// store's cache, the log, the in-flight put, checkpoints, crashes, outputs and the
    /// supplier's runs; slots beyond the bounds and empty ones are left out.
    pub(super) fn view(&self, s: &State) -> String {
        let mut out = String::new();
        let slots = self.slots();
        Self::task_view(s, &mut out);
        self.keys_view(s, &mut out);
        self.cache_view(s, &slots, &mut out);
        self.log_view(s, &slots, &mut out);
        self.sends_view(s, &mut out);
        self.checkpoints_view(s, &mut out);
        self.runs_view(s, &slots, &mut out);
        out
    }

    /// Every state key within the bounds, key by key, input by input.
    fn slots(&self) -> Vec<StateKey> {
        let b = &self.bounds;
        let mut slots = Vec::new();
        for key in 0..b.keys {
            for seq in 0..b.inputs {
                for action in 0..b.actions {
                    slots.push(StateKey { key, seq, action });
                }
            }
        }
        slots
    }

    /// A state key in words: its key and input, and its action when inputs have
    /// several.
    fn key_words(&self, k: StateKey) -> String {
        if self.bounds.actions > 1 {
            format!("key {} input {} action {}", k.key, k.seq, k.action)
        } else {
            format!("key {} input {}", k.key, k.seq)
        }
    }

    /// The task: running, failing over or down; its crashes and failed sends.
    fn task_view(s: &State, out: &mut String) {
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
    }

    /// Per key: inputs delivered, finished and committed, and the running action.
    fn keys_view(&self, s: &State, out: &mut String) {
        for k in 0..usize::from(self.bounds.keys) {
            let name = || self.key_words(s.head(k));
            let running = match s.phase[k] {
                Phase::Idle => "idle".to_string(),
                Phase::AtCall(i) if s.call_index_behind[k] => format!(
                    "{}: at call {i}, the call index still at call {}'s unsaved result",
                    name(),
                    i - 1
                ),
                Phase::AtCall(i) => format!("{}: at call {i}", name()),
                Phase::HaveResult(i) => format!("{}: call {i} returned, put not sent", name()),
                Phase::AwaitPut(i) => format!("{}: put of call {i}'s result in flight", name()),
                Phase::AwaitCompletion => format!("{}: completion put in flight", name()),
            };
            let _ = writeln!(
                out,
                "key {k}: {} input(s) delivered, {} finished, {} output(s) committed; {running}",
                s.next_seq[k], s.finished[k], s.committed_outputs[k]
            );
        }
    }

    /// The store's cache, with each state's acknowledged offset.
    fn cache_view(&self, s: &State, slots: &[StateKey], out: &mut String) {
        let cached = slots.iter().filter(|k| s.cached(**k).is_some()).count();
        let _ = writeln!(out, "store cache: {cached} state(s)");
        for &k in slots {
            if let Some(st) = s.cached(k) {
                let acked = match s.acked_offset.get(k.slot()) {
                    None => String::new(),
                    Some(offset) => format!(", acknowledged at offset {offset}"),
                };
                let _ = writeln!(out, "  {}: {}{acked}", self.key_words(k), saved_words(st));
            }
        }
    }

    /// The log: each partition's end and each state key's latest record.
    fn log_view(&self, s: &State, slots: &[StateKey], out: &mut String) {
        let ends: Vec<String> = (0..usize::from(self.bounds.partitions))
            .map(|p| format!("partition {p} holds {}", s.log_len[p]))
            .collect();
        let _ = writeln!(out, "log: {}", ends.join(", "));
        for &k in slots {
            if let Some((st, offset)) = s.latest_record(k) {
                let _ = writeln!(
                    out,
                    "  {}: latest {} at offset {offset}",
                    self.key_words(k),
                    saved_words(st)
                );
            }
        }
    }

    /// The sends not yet answered: in-flight puts, a crashed incarnation's send, and the
    /// fences of a restore under way.
    fn sends_view(&self, s: &State, out: &mut String) {
        for put in s.puts_in_flight() {
            let r = put.record;
            let at = match put.offset {
                None => "not landed yet".to_string(),
                Some(offset) => format!("landed at offset {offset}"),
            };
            let _ = writeln!(
                out,
                "in-flight put: {}: {}, {at}",
                self.key_words(r.state_key),
                saved_words(r.state)
            );
        }
        if let Some(r) = s.zombie {
            let fenced = if s.zombie_fenced {
                " (its partition is fenced: it would land stale)"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "send of a crashed incarnation, not landed: {}: {}{fenced}",
                self.key_words(r.state_key),
                saved_words(r.state)
            );
        }
        if s.fenced_partitions > 0 {
            let _ = writeln!(
                out,
                "restore in progress: {} partition(s) fenced with epoch {}",
                s.fenced_partitions,
                s.crashes + 1
            );
        }
    }

    /// The checkpoints: how many were triggered, the pending ones and the latest
    /// completed one.
    fn checkpoints_view(&self, s: &State, out: &mut String) {
        let _ = writeln!(out, "checkpoints: {} triggered", s.checkpoints);
        for (id, c) in s.pending_checkpoints() {
            let _ = writeln!(out, "  pending {id}: {}", self.checkpoint_words(s, &c));
        }
        if let Some(c) = &s.completed {
            let _ = writeln!(out, "  latest completed: {}", self.checkpoint_words(s, c));
        }
    }

    /// A checkpoint's keyed state and markers, as far as its subtasks took their parts.
    fn checkpoint_words(&self, s: &State, c: &Checkpoint) -> String {
        let b = &self.bounds;
        // Subtask 1's entries are placeholders until it takes its part.
        let taken = |k: u8| !c.awaiting_subtask || self.owner(s.scaled_in, k) == 0;
        let keys: Vec<String> = (0..b.keys)
            .filter(|k| taken(*k))
            .map(usize::from)
            .map(|k| {
                format!(
                    "key {k} {} delivered/{} finished",
                    c.next_seq[k], c.finished[k]
                )
            })
            .collect();
        // Only subtask 0's markers while subtask 1 has not taken its part.
        let subtasks = if c.awaiting_subtask {
            0..1
        } else {
            0..b.subtasks
        };
        let marker = self.markers_text(&c.marker, subtasks);
        let waiting = if c.awaiting_subtask {
            "; subtask 1's part not taken yet"
        } else {
            ""
        };
        format!("{}; marker {marker}{waiting}", keys.join(", "))
    }

    /// The supplier's runs per state key and call, when it ran at all.
    fn runs_view(&self, s: &State, slots: &[StateKey], out: &mut String) {
        let mut runs = Vec::new();
        for &k in slots {
            for call in 0..self.bounds.calls {
                let n = s.runs(k, call);
                if n > 0 {
                    runs.push(format!("{} call {call}: {n}", self.key_words(k)));
                }
            }
        }
        if !runs.is_empty() {
            let _ = writeln!(out, "supplier runs: {}", runs.join("; "));
        }
    }

    /// What a step does in its state, in the domain's words: one sentence function per
    /// action kind.
    pub(super) fn step_sentence(&self, s: &State, action: &Action) -> String {
        match *action {
            Action::DeliverInput(k) => format!(
                "the source delivers key {k} input {} (sequence number {})",
                s.next_seq[k as usize], s.next_seq[k as usize]
            ),
            Action::StartAction(k) => self.start_sentence(s, k),
            Action::ReuseResult(k) => {
                format!(
                    "{}: call {} reuses the saved result",
                    self.who(s, k),
                    call_index(s, k)
                )
            }
            Action::CallSupplier(k) => self.call_sentence(s, k),
            Action::SendPut(k) => self.send_sentence(s, k),
            Action::CompleteAction(k) => format!(
                "{}: all calls done, put of the completed state sent",
                self.who(s, k)
            ),
            Action::LandPut(k) => self.land_sentence(s, k),
            Action::AckPut(k) => self.ack_sentence(s, k),
            Action::FailPut { key, landed } => self.fail_sentence(s, key, landed),
            Action::TriggerCheckpoint => self.trigger_sentence(s),
            Action::SnapshotSubtask => self.snapshot_subtask_sentence(s),
            Action::CompleteCheckpoint(id) => {
                let subsumed = self.subsumed(s, id);
                format!("checkpoint {id} completes; finished states pruned{subsumed}")
            }
            Action::CompleteCheckpointUnnotified(id) => format!(
                "checkpoint {id} completes at the coordinator, but its notification is lost: \
                 nothing pruned, its output not yet committed{}",
                self.subsumed(s, id)
            ),
            Action::AbortCheckpoint(id) => {
                format!("checkpoint {id} is aborted (expired or declined); the operator forgets it")
            }
            Action::Crash { landed } => self.crash_sentence(s, landed),
            Action::LandZombie => self.land_zombie_sentence(s),
            Action::FencePartition(p) => format!(
                "the restoring incarnation (epoch {}) appends its fence to partition {p} at offset {}; older records landing after it are stale",
                s.crashes + 1,
                s.log_len[p as usize]
            ),
            Action::Restore => self.restore_sentence(s, false),
            Action::RestoreScaledIn => self.restore_sentence(s, true),
        }
    }

    /// The state key at key `k`'s queue head, in words.
    fn who(&self, s: &State, k: u8) -> String {
        self.key_words(s.head(k as usize))
    }

    /// [`Action::StartAction`]: skipped, or started with what is saved.
    fn start_sentence(&self, s: &State, k: u8) -> String {
        match s.cached(s.head(k as usize)) {
            Some(st) if st.completed() => {
                format!(
                    "{}: action skipped, its saved state is completed",
                    self.who(s, k)
                )
            }
            Some(st) => format!(
                "{}: action starts with {} saved",
                self.who(s, k),
                results_words(st)
            ),
            None => format!("{}: action starts, nothing saved", self.who(s, k)),
        }
    }

    /// [`Action::CallSupplier`]: which call, and the how-manieth run of it.
    fn call_sentence(&self, s: &State, k: u8) -> String {
        let i = call_index(s, k);
        let run = s.runs(s.head(k as usize), i) as u32 + 1;
        format!(
            "{}: supplier called for call {i} (run #{run})",
            self.who(s, k)
        )
    }

    /// [`Action::SendPut`]: in the old put order, cached at once.
    fn send_sentence(&self, s: &State, k: u8) -> String {
        let cached = if self.design.caches_before_ack() {
            ", cached at once"
        } else {
            ""
        };
        format!(
            "{}: put of the state with call {}'s result sent{cached}",
            self.who(s, k),
            call_index(s, k)
        )
    }

    /// [`Action::LandPut`]: where the record lands.
    fn land_sentence(&self, s: &State, k: u8) -> String {
        let (whose, what, key) = put_words(s, k);
        let p = self.partition(key);
        format!(
            "{whose}: {what} lands at partition {p} offset {}, not yet acknowledged",
            s.log_len[p]
        )
    }

    /// [`Action::AckPut`]: where the record landed, acknowledged.
    fn ack_sentence(&self, s: &State, k: u8) -> String {
        let (whose, what, key) = put_words(s, k);
        let p = self.partition(key);
        let offset = s.puts[k as usize]
            .and_then(|p| p.offset)
            .unwrap_or(s.log_len[p]);
        format!("{whose}: {what} lands at partition {p} offset {offset}, acknowledged")
    }

    /// [`Action::FailPut`]: when the send fails and what the action makes of it.
    fn fail_sentence(&self, s: &State, key: u8, landed: bool) -> String {
        let (whose, what, _) = put_words(s, key);
        let when = if landed {
            "after its record landed"
        } else {
            "before landing"
        };
        let then = if self.design.caches_before_ack() {
            "the error is not seen and the action goes on"
        } else if self.catches_put_error(s, key as usize) {
            "the action catches the error and goes on, nothing cached, its call index not \
             advanced"
        } else {
            "the error reaches the action and the task fails"
        };
        format!("{whose}: put of {what} fails {when}; {then}")
    }

    /// [`Action::TriggerCheckpoint`]: what the subtasks taking part now put into it.
    fn trigger_sentence(&self, s: &State) -> String {
        let apart = self.snapshots_apart(s);
        let subtasks = if apart { 1 } else { self.bounds.subtasks };
        let (queued, marker) = self.part_text(s, 0..subtasks);
        let whose = if apart { " by subtask 0" } else { "" };
        format!(
            "checkpoint {} taken{whose} ({queued}; marker {marker})",
            s.checkpoints + 1
        )
    }

    /// [`Action::SnapshotSubtask`]: what subtask 1 puts into the checkpoint.
    fn snapshot_subtask_sentence(&self, s: &State) -> String {
        let id = s
            .pending_checkpoints()
            .find(|(_, c)| c.awaiting_subtask)
            .map_or(0, |(id, _)| id);
        let (queued, marker) = self.part_text(s, 1..2);
        format!("subtask 1 takes its part of checkpoint {id} ({queued}; marker {marker})")
    }

    /// [`Action::Crash`]: what becomes of the sends in flight.
    fn crash_sentence(&self, s: &State, landed: bool) -> String {
        let unlanded = s.puts_in_flight().filter(|p| p.offset.is_none()).count();
        let zombie = self.bounds.zombie_sends && s.zombie.is_none();
        let send = match (unlanded, landed) {
            (0, _) => "",
            (_, true) => "; the in-flight send lands, unacknowledged",
            (1, false) if zombie => {
                "; the in-flight send stays with the producer and may land later"
            }
            (1, false) => "; the in-flight send is lost",
            (_, false) => "; the in-flight sends are lost",
        };
        format!("the task crashes{send}")
    }

    /// [`Action::LandZombie`]: where the crashed incarnation's send lands, stale or not.
    fn land_zombie_sentence(&self, s: &State) -> String {
        match s.zombie {
            Some(r) if s.zombie_fenced => {
                let p = self.partition(r.state_key.key);
                format!(
                    "the crashed incarnation's send of key {} input {} lands at partition {p} offset {}, behind a fence of a newer epoch: stale, every rebuild skips it",
                    r.state_key.key,
                    r.state_key.seq,
                    s.log_len[p]
                )
            }
            Some(r) => {
                let p = self.partition(r.state_key.key);
                format!(
                    "the crashed incarnation's send of key {} input {} ({}{}) lands at partition {p} offset {}, over what the key holds",
                    r.state_key.key,
                    r.state_key.seq,
                    results_words(r.state),
                    if r.state.completed() { ", completed" } else { "" },
                    s.log_len[p]
                )
            }
            None => "no send of a crashed incarnation is left".to_string(),
        }
    }

    /// [`Action::Restore`] and [`Action::RestoreScaledIn`] (`scale_in`): where the
    /// replay starts.
    fn restore_sentence(&self, s: &State, scale_in: bool) -> String {
        let scaled_in = s.scaled_in || scale_in;
        let how = if scale_in {
            " at parallelism 1 (subtask 0 takes over every key)"
        } else {
            ""
        };
        match s.completed {
            Some(c) => format!(
                "restore from the completed checkpoint{how}; replay {}",
                self.replay_text(&c, scaled_in)
            ),
            None => format!("restart with no completed checkpoint{how}; nothing replayed"),
        }
    }

    pub(super) fn shape(&self, path: &[(State, Option<Action>)]) -> Option<String> {
        let last = &path.last()?.0;
        let crashes = last.crashes;
        if last.events.repeated_call {
            let failed_after_landing = path
                .iter()
                .any(|(_, a)| matches!(a, Some(Action::FailPut { landed: true, .. })));
            let snapshot_in_put = path
                .iter()
                .any(|(s, a)| *a == Some(Action::TriggerCheckpoint) && s.any_put());
            let restored_nothing = path
                .iter()
                .any(|(s, a)| *a == Some(Action::Restore) && s.completed.is_none());
            let shape = if restored_nothing {
                "restart without a completed checkpoint".to_string()
            } else if self.repeats_past_a_gap(path) {
                "a caught put error left a gap in the saved list; the restore clears it from \
                 the gap and calls a saved call again"
                    .to_string()
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

    /// Whether a path ending in a repeated supplier call repeats a call whose result a
    /// landed list holds after a skipped call: the digest comparison at the skipped
    /// call's index fails and clears that result with the rest of the list.
    fn repeats_past_a_gap(&self, path: &[(State, Option<Action>)]) -> bool {
        let Some((before, Some(Action::CallSupplier(k)))) = path.iter().rev().nth(1) else {
            return false;
        };
        let Phase::AtCall(call) = before.phase[*k as usize] else {
            return false;
        };
        before
            .landed_states(before.head(*k as usize))
            .iter()
            .any(|st| st.holds(call) && !st.results_before(call + 1).in_call_order())
    }

    /// Whether a path ending in a repeated supplier call has the seed's shape: the call's
    /// result landed, then a checkpoint was taken with its input unfinished, then a crash
    /// and a restore came before the supplier ran again.
    pub(super) fn seed_shape(&self, path: &[(State, Option<Action>)]) -> bool {
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

/// What a saved action state holds, in words.
fn saved_words(st: ActionState) -> String {
    if st.completed() {
        format!("completed with {}", results_words(st))
    } else {
        results_words(st)
    }
}

/// How many call results a list holds, and of which calls when it skips one.
fn results_words(st: ActionState) -> String {
    if st.in_call_order() {
        format!("{} call result(s)", st.calls())
    } else {
        let held: Vec<String> = st.held().map(|c| c.to_string()).collect();
        format!(
            "{} call result(s) (of calls {})",
            st.calls(),
            held.join(", ")
        )
    }
}

/// The index of the call key `k`'s action is at (0 outside a call).
fn call_index(s: &State, k: u8) -> u8 {
    match s.phase[k as usize] {
        Phase::AtCall(i) | Phase::HaveResult(i) => i,
        _ => 0,
    }
}

/// Key `k`'s put in flight: whose state it carries, what state, and the key.
fn put_words(s: &State, k: u8) -> (String, String, u8) {
    let Some(Put { record: r, .. }) = s.puts[k as usize] else {
        unreachable!("a put step of key {k} with no put in flight");
    };
    let what = if r.state.completed() {
        "completed state".to_string()
    } else {
        format!("state with {}", results_words(r.state))
    };
    let sk = r.state_key;
    (format!("key {} input {}", sk.key, sk.seq), what, sk.key)
}
