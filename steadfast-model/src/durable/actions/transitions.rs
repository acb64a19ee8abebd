//! The transitions: one function per action, from the state before the step to the
//! state after it, dispatched to by
//! [`Durable::next_state`](stateright::Model::next_state). The bulk of the steps' code,
//! apart from the guards that decide which steps are enabled.

use crate::durable::{
    ActionState, Checkpoint, Durable, Events, Phase, Put, Record, State, MAX_PARTITIONS,
};

// Named in the doc links only.
#[cfg(doc)]
use crate::durable::Action;

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
    pub(in crate::durable) fn deliver_input(&self, s: &State, k: u8) -> Option<State> {
        let mut next = Self::successor(s);
        next.next_seq[k as usize] += 1;
        Some(next)
    }

    /// [`Action::StartAction`]: the key's queue head starts at its first call, or is
    /// skipped when its restored state is completed.
    pub(in crate::durable) fn start_action(&self, s: &State, k: u8) -> Option<State> {
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
    pub(in crate::durable) fn reuse_result(&self, s: &State, k: u8) -> Option<State> {
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
    pub(in crate::durable) fn call_supplier(&self, s: &State, k: u8) -> Option<State> {
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
    pub(in crate::durable) fn send_put(&self, s: &State, k: u8) -> Option<State> {
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
    pub(in crate::durable) fn land_put(&self, s: &State, k: u8) -> Option<State> {
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
    pub(in crate::durable) fn ack_put(&self, s: &State, k: u8) -> Option<State> {
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
    pub(in crate::durable) fn fail_put(&self, s: &State, key: u8, landed: bool) -> Option<State> {
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
    pub(in crate::durable) fn trigger_checkpoint(&self, s: &State) -> Option<State> {
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
    pub(in crate::durable) fn snapshot_subtask(&self, s: &State) -> Option<State> {
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
    pub(in crate::durable) fn complete_checkpoint(&self, s: &State, id: u8) -> Option<State> {
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
    pub(in crate::durable) fn complete_checkpoint_unnotified(
        &self,
        s: &State,
        id: u8,
    ) -> Option<State> {
        let mut next = Self::successor(s);
        self.complete(s, &mut next, id)?;
        Some(next)
    }

    /// [`Action::AbortCheckpoint`]: the oldest pending checkpoint, only, is dropped.
    pub(in crate::durable) fn abort_checkpoint(&self, s: &State, id: u8) -> Option<State> {
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
    pub(in crate::durable) fn crash(&self, s: &State, landed: bool) -> Option<State> {
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
    pub(in crate::durable) fn land_zombie(&self, s: &State) -> Option<State> {
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
    pub(in crate::durable) fn fence_partition(&self, s: &State, p: u8) -> Option<State> {
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
    pub(in crate::durable) fn restore(&self, s: &State, scale_in: bool) -> Option<State> {
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
