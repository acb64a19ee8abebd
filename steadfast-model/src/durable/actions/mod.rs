//! The steps of the durable model: which are enabled, phase by phase
//! ([`Durable::actions`](stateright::Model::actions) asks each in turn), and what each
//! does, one function per action ([`Durable::next_state`](stateright::Model::next_state)
//! dispatches to them), with the helpers they share.
//!
//! This file holds the helpers the guards and the transitions share; the guards are in
//! `guards`, the transitions in `transitions`.

use super::{
    Action, ActionState, Checkpoint, Durable, Phase, Put, Record, Records, State, MAX_CALLS,
    MAX_CONCURRENT,
};

mod guards;
mod transitions;

// A call that follows a caught put error keeps the results of the calls below the
// previous one (`list_after_call`); that is the runtime's list as long as no call comes
// after two caught failures in a row, which takes more calls than the model allows.
const _: () = assert!(
    MAX_CALLS <= 3,
    "a failure streak before a call is at most two long"
);

/// Helpers the transitions share.
impl Durable {
    /// Whether call `i` of key `k`'s running action finds its own result at the call
    /// index and returns it (a hit of flink-agents' digest comparison; every call of an
    /// action has its own function id). The action works on the list it was started
    /// with, which the store's cache holds until the action's next acknowledged put
    /// replaces it with the action's own; a slot holding the previous call's unsaved
    /// result (the index stayed behind) never matches.
    fn finds_own_result(&self, s: &State, k: usize, i: u8) -> bool {
        !s.call_index_behind[k]
            && s.cached(s.head(k))
                .is_some_and(|st| !st.completed() && st.holds(i))
    }

    /// The list call `i`'s put carries: the saved results below the call index (a
    /// mismatch there cleared the rest: a later call's result from a list that skipped
    /// one, or the previous call's unsaved result when the index stayed behind), with
    /// call `i`'s result appended at the index.
    fn list_after_call(&self, s: &State, k: usize, i: u8) -> ActionState {
        let below = if s.call_index_behind[k] { i - 1 } else { i };
        let kept = s
            .cached(s.head(k))
            .map_or(ActionState::with_calls(0), |st| st.results_before(below));
        let list = kept.with_result(i);
        debug_assert!(
            self.bounds.handled_put_errors || list == ActionState::with_calls(i + 1),
            "without a caught put error, results are saved in call order"
        );
        list
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
    pub(super) fn compact_offsets(&self, s: &mut State) {
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
    pub(super) fn snapshots_apart(&self, s: &State) -> bool {
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

    /// Whether some key runs an action.
    pub(super) fn any_running(&self, s: &State) -> bool {
        s.phase[..self.bounds.keys as usize]
            .iter()
            .any(|p| *p != Phase::Idle)
    }
}

impl Action {
    /// Whether the step may change the set of offsets: only steps that land,
    /// acknowledge, fail, prune, crash or restore do; the others leave an already
    /// compact state compact.
    pub(super) fn moves_offsets(self) -> bool {
        !matches!(
            self,
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
        )
    }
}
