//! The steps of the durable model: which are enabled, phase by phase
//! ([`Durable::actions`](stateright::Model::actions) asks each in turn), and what each
//! does, one function per action ([`Durable::next_state`](stateright::Model::next_state)
//! dispatches to them), with the helpers they share.

use super::{
    Action, ActionState, Checkpoint, Durable, Events, Phase, Put, Record, Records, State,
    MAX_CALLS, MAX_CONCURRENT, MAX_PARTITIONS,
};

/// Guards: the enabled steps of each phase, in the order the checker explores them.
impl Durable {
    /// The send a crash left with the producer lands, unless the broker fences it.
    pub(super) fn zombie_steps(&self, s: &State, actions: &mut Vec<Action>) {
        if s.zombie.is_some() && (s.down || !self.bounds.fenced_producer) {
            actions.push(Action::LandZombie);
        }
    }

    /// While down: the restore fences every partition, in order, before it reads the
    /// log.
    pub(super) fn restore_steps(&self, s: &State, actions: &mut Vec<Action>) {
        let b = self.bounds;
        if b.epoch_fencing && s.fenced_partitions < b.partitions {
            actions.push(Action::FencePartition(s.fenced_partitions));
            return;
        }
        actions.push(Action::Restore);
        if b.rescale && !s.scaled_in {
            actions.push(Action::RestoreScaledIn);
        }
    }

    /// While a put error fails the task: other keys' concurrent puts may still land
    /// before the task is gone.
    pub(super) fn failing_steps(&self, s: &State, actions: &mut Vec<Action>) {
        if self.bounds.concurrent_puts {
            for put in s.puts_in_flight().filter(|p| p.offset.is_none()) {
                actions.push(Action::LandPut(put.record.state_key.key));
            }
        }
        if self.can_crash(s) {
            actions.push(Action::Crash { landed: false });
        }
    }

    /// The source and the operator, key by key: deliver, start, call, send.
    pub(super) fn operator_steps(&self, s: &State, actions: &mut Vec<Action>) {
        let b = self.bounds;
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
                    if self.finds_own_result(s, ku, i) {
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
    }

    /// The puts in flight land, are acknowledged or fail.
    pub(super) fn put_steps(&self, s: &State, actions: &mut Vec<Action>) {
        let b = self.bounds;
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
    }

    /// Checkpoints: trigger, subtask 1's barrier, completion (notified or not), abort.
    pub(super) fn checkpoint_steps(&self, s: &State, actions: &mut Vec<Action>) {
        let b = self.bounds;
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
    }

    /// The task fails, its in-flight put lost or (sequential puts) landing first.
    pub(super) fn crash_steps(&self, s: &State, actions: &mut Vec<Action>) {
        if self.can_crash(s) {
            actions.push(Action::Crash { landed: false });
            // Concurrent puts land before a crash by their own steps.
            if !self.bounds.concurrent_puts && s.puts_in_flight().any(|put| put.offset.is_none()) {
                actions.push(Action::Crash { landed: true });
            }
        }
    }

    /// Whether a crash may come: crashes left, and a checkpoint to restore from unless
    /// a restart from nothing is allowed.
    fn can_crash(&self, s: &State) -> bool {
        s.crashes < self.bounds.crashes
            && (s.completed.is_some() || self.bounds.restart_without_checkpoint)
    }
}

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
    fn any_running(&self, s: &State) -> bool {
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

/// Transitions: one function per action, each from the state before the step to the
/// state after it (`None` when the action is not enabled there).
impl Durable {
    /// The state a step starts from: `s` without the events of the step that led to it.
    fn successor(s: &State) -> State {
        let mut next = s.clone();
        next.events = Events::NONE;
        next
    }

    /// [`Action::DeliverInput`]: the key's next input gets the next sequence number.
    pub(super) fn deliver_input(&self, s: &State, k: u8) -> Option<State> {
        let mut next = Self::successor(s);
        next.next_seq[k as usize] += 1;
        Some(next)
    }

    /// [`Action::StartAction`]: the key's queue head starts at its first call, or is
    /// skipped when its restored state is completed.
    pub(super) fn start_action(&self, s: &State, k: u8) -> Option<State> {
        let mut next = Self::successor(s);
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
            // The head is input `finished[ku]`; the sink committed the outputs of the
            // inputs below `committed_outputs[ku]`, and this one's action runs again.
            if s.finished[ku] < s.committed_outputs[ku] {
                next.events.committed_rerun = true;
            }
            next.phase[ku] = Phase::AtCall(0);
        }
        Some(next)
    }

    /// [`Action::ReuseResult`]: the call returns its saved result.
    pub(super) fn reuse_result(&self, s: &State, k: u8) -> Option<State> {
        let mut next = Self::successor(s);
        let ku = k as usize;
        if let Phase::AtCall(i) = s.phase[ku] {
            next.phase[ku] = Phase::AtCall(i + 1);
        }
        next.events.reused = s
            .completed
            .is_some_and(|c| self.replay_marker(&c, k, s.scaled_in) > 0);
        Some(next)
    }

    /// [`Action::CallSupplier`]: the call runs the supplier (again, when the log already
    /// holds its result).
    pub(super) fn call_supplier(&self, s: &State, k: u8) -> Option<State> {
        let mut next = Self::successor(s);
        let ku = k as usize;
        if let Phase::AtCall(i) = s.phase[ku] {
            let sk = s.head(ku);
            next.supplier_runs.bump(sk, i);
            if self.log_holds(s, sk, i) {
                next.events.repeated_call = true;
            }
            next.phase[ku] = Phase::HaveResult(i);
        }
        Some(next)
    }

    /// [`Action::SendPut`] and [`Action::CompleteAction`]: the state with the new call
    /// result, or the completed state, is sent to the log (and, in the old put order,
    /// cached at once).
    pub(super) fn send_put(&self, s: &State, k: u8) -> Option<State> {
        let mut next = Self::successor(s);
        let ku = k as usize;
        let sk = s.head(ku);
        let (state, phase) = match s.phase[ku] {
            // Results 0..i are reused or appended in order (the new state holds exactly
            // i + 1 results) unless a put error the action caught left a gap.
            Phase::HaveResult(i) => (self.list_after_call(s, ku, i), Phase::AwaitPut(i)),
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
        // The list sent puts the new result at the index; whether the index passes it
        // is the answer's to decide.
        next.call_index_behind[ku] = false;
        Some(next)
    }

    /// [`Action::LandPut`]: the key's in-flight put lands, not yet acknowledged.
    pub(super) fn land_put(&self, s: &State, k: u8) -> Option<State> {
        // Not enabled unless the key's put is in flight and has not landed.
        if s.puts.get(k as usize).copied().flatten()?.offset.is_some() {
            return None;
        }
        let mut next = Self::successor(s);
        self.land(&mut next, k as usize);
        Some(next)
    }

    /// [`Action::AckPut`]: the producer learns the put's offset; the patched store
    /// caches the state and tracks the offset now, and the action goes on.
    pub(super) fn ack_put(&self, s: &State, k: u8) -> Option<State> {
        let k = k as usize;
        let put = s.puts[k]?;
        let mut next = Self::successor(s);
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
        Some(next)
    }

    /// [`Action::FailPut`]: the send fails (after landing, when `landed`); the old put
    /// order does not see it, a handled error lets the action go on with its call index
    /// behind, otherwise the task fails.
    pub(super) fn fail_put(&self, s: &State, key: u8, landed: bool) -> Option<State> {
        let k = key as usize;
        let put = s.puts[k]?;
        let mut next = Self::successor(s);
        next.failed_sends += 1;
        if landed && put.offset.is_none() {
            self.land(&mut next, k);
        }
        next.puts[k] = None;
        if self.design.caches_before_ack() {
            // Old order: flush does not surface the send's error; the action goes on
            // with the state cached as if saved.
            self.after_put(&mut next, k);
        } else if self.catches_put_error(s, k) {
            // The error reaches the action's code, which catches it and goes on to its
            // next call: nothing cached, no offset tracked. The runtime appended the
            // result before the persist and advances the call index only after it, so
            // the unsaved result sits at the index, where the next call's digest
            // comparison fails and clears it.
            self.after_put(&mut next, k);
            next.call_index_behind[k] = true;
        } else {
            next.failed = true;
        }
        Some(next)
    }

    /// [`Action::TriggerCheckpoint`]: a new pending checkpoint with every subtask's
    /// part; with two subtasks subtask 1's is a placeholder its own snapshot overwrites.
    pub(super) fn trigger_checkpoint(&self, s: &State) -> Option<State> {
        let mut next = Self::successor(s);
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
        Some(next)
    }

    /// [`Action::SnapshotSubtask`]: subtask 1 takes its part of the oldest checkpoint
    /// waiting for it.
    pub(super) fn snapshot_subtask(&self, s: &State) -> Option<State> {
        let at = s
            .pending
            .iter()
            .position(|c| c.is_some_and(|c| c.awaiting_subtask))?;
        let mut c = s.pending[at]?;
        let mut next = Self::successor(s);
        c.awaiting_subtask = false;
        self.snapshot_part(s, &mut next, &mut c, 1, true);
        next.pending[at] = Some(c);
        Some(next)
    }

    /// [`Action::CompleteCheckpoint`]: the checkpoint completes; the store prunes the
    /// states of finished inputs and the sink commits their outputs.
    pub(super) fn complete_checkpoint(&self, s: &State, id: u8) -> Option<State> {
        let mut next = Self::successor(s);
        let c = self.complete(s, &mut next, id)?;
        for sk in self.slot_range() {
            if sk.seq < c.finished[sk.key as usize] {
                next.cache.set(sk.slot(), None);
                next.acked_offset.set(sk.slot(), None);
            }
        }
        self.commit_outputs(s, &mut next, &c);
        Some(next)
    }

    /// [`Action::CompleteCheckpointUnnotified`]: restorable, but nothing pruned and
    /// nothing committed.
    pub(super) fn complete_checkpoint_unnotified(&self, s: &State, id: u8) -> Option<State> {
        let mut next = Self::successor(s);
        self.complete(s, &mut next, id)?;
        Some(next)
    }

    /// [`Action::AbortCheckpoint`]: the oldest pending checkpoint, only, is dropped.
    pub(super) fn abort_checkpoint(&self, s: &State, id: u8) -> Option<State> {
        if s.pending_checkpoints().next()?.0 != id {
            return None;
        }
        let mut next = Self::successor(s);
        Self::leave_pending(s, &mut next, 0);
        Some(next)
    }

    /// [`Action::Crash`]: everything volatile goes; the log, the completed checkpoint,
    /// committed output and ghost counters stay. The in-flight send lands (`landed`),
    /// is lost, or stays with the producer as a zombie.
    pub(super) fn crash(&self, s: &State, landed: bool) -> Option<State> {
        let mut next = Self::successor(s);
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
        // An unlanded send is lost.
        Some(State {
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
        })
    }

    /// [`Action::LandZombie`]: the crashed incarnation's send lands over what its state
    /// key holds, or stale behind a newer fence, where no rebuild reads it.
    pub(super) fn land_zombie(&self, s: &State) -> Option<State> {
        let record = s.zombie?;
        let mut next = Self::successor(s);
        if s.zombie_fenced {
            // Behind a newer fence: it takes an offset, and no rebuild reads it.
            next.log_len[self.partition(record.state_key.key)] += 1;
        } else {
            self.append(&mut next, record);
        }
        next.zombie = None;
        next.zombie_fenced = false;
        Some(next)
    }

    /// [`Action::FencePartition`]: the restore appends its fence to the next partition.
    pub(super) fn fence_partition(&self, s: &State, p: u8) -> Option<State> {
        // Enabled for the next partition only, while down.
        if !s.down || p != s.fenced_partitions {
            return None;
        }
        let mut next = Self::successor(s);
        next.log_len[p as usize] += 1;
        next.fenced_partitions += 1;
        if s.zombie
            .is_some_and(|r| self.partition(r.state_key.key) == p as usize)
        {
            next.zombie_fenced = true;
        }
        Some(next)
    }

    /// [`Action::Restore`] and [`Action::RestoreScaledIn`] (`scale_in`): keyed state
    /// from the latest completed checkpoint, the store rebuilt from the log.
    pub(super) fn restore(&self, s: &State, scale_in: bool) -> Option<State> {
        let mut next = Self::successor(s);
        next.down = false;
        next.fenced_partitions = 0;
        next.scaled_in = s.scaled_in || scale_in;
        if self.bounds.fenced_producer {
            // The new producer fences the old one: its send never lands.
            next.zombie = None;
            next.zombie_fenced = false;
        }
        if let Some(c) = s.completed {
            next.next_seq = c.next_seq;
            next.finished = c.finished;
            next.next_action = c.next_action;
            // The sink commits the restored checkpoint's output (a lost notification
            // left it uncommitted; otherwise this changes nothing).
            self.commit_outputs(s, &mut next, &c);
            self.replay(s, &mut next, &c);
        }
        Some(next)
    }

    /// The store's rebuild from the log: last writer wins per state key, so a replay
    /// from the marker ends with each key's latest record if that one is at or after
    /// the marker.
    fn replay(&self, s: &State, next: &mut State, c: &Checkpoint) {
        for sk in self.slot_range() {
            let slot = sk.slot();
            let Some(records) = s.log.get(slot) else {
                continue;
            };
            if records.offset < self.replay_marker(c, sk.key, next.scaled_in)
                || (self.design.rewinds_marker() && sk.seq < c.finished[sk.key as usize])
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
