//! The guards: each phase's enabled steps, collected in turn by
//! [`Durable::actions`](stateright::Model::actions). They only read a state, so they
//! live apart from the transitions that build the next one.

use crate::durable::{Action, Durable, Phase, State};

/// Guards: the enabled steps of each phase, in the order the checker explores them.
impl Durable {
    /// The send a crash left with the producer lands, unless the broker fences it.
    pub(in crate::durable) fn zombie_steps(&self, s: &State, actions: &mut Vec<Action>) {
        if s.zombie.is_some() && (s.down || !self.bounds.fenced_producer) {
            actions.push(Action::LandZombie);
        }
    }

    /// While down: the restore fences every partition, in order, before it reads the
    /// log.
    pub(in crate::durable) fn restore_steps(&self, s: &State, actions: &mut Vec<Action>) {
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
    pub(in crate::durable) fn failing_steps(&self, s: &State, actions: &mut Vec<Action>) {
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
    pub(in crate::durable) fn operator_steps(&self, s: &State, actions: &mut Vec<Action>) {
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
    pub(in crate::durable) fn put_steps(&self, s: &State, actions: &mut Vec<Action>) {
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
    pub(in crate::durable) fn checkpoint_steps(&self, s: &State, actions: &mut Vec<Action>) {
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
    pub(in crate::durable) fn crash_steps(&self, s: &State, actions: &mut Vec<Action>) {
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
