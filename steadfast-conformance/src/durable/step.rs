//! The step mapping of the stepwise binding: one function per model action, each driving
//! the runtime through the action's counterpart (the mapping is in the module doc of
//! [`durable`](super)) and checking what the operator answers.

use super::*;

impl<V: Variant> Conformant<V> {
    /// Drives the runtime through the counterpart of the model's action `a` at `s`.
    pub(super) fn drive(
        m: &Durable,
        rt: &mut Runtime<V>,
        s: &model::State,
        a: &Action,
    ) -> Result<(), Rejection> {
        let names = Arc::clone(&rt.names);
        let name = |k: u8| names.keys[k as usize].clone();
        match *a {
            Action::DeliverInput(k) => rt.handle(Event::Input {
                key: name(k),
                value: json!(s.next_seq[k as usize]),
            }),
            Action::StartAction(k) => rt.handle(Event::Continue { key: name(k) }),
            Action::ReuseResult(k) => Self::reuse_result(rt, s, k),
            Action::CallSupplier(k) => Self::call_supplier(rt, s, k),
            Action::SendPut(k) => Self::send_put(rt, s, k),
            Action::CompleteAction(k) => {
                rt.handle(Event::Continue { key: name(k) })?;
                Self::check_put(rt, s, k, 0, true)
            }
            Action::AckPut(k) if s.puts[k as usize].is_none() => Self::stale_outcome(rt, s, k),
            Action::AckPut(k) => rt.acknowledge(k),
            Action::FailPut { key, landed } => rt.fail(key, landed),
            Action::LandPut(k) => rt.land(k).map(|_| ()).map_err(Rejection::from),
            Action::TriggerCheckpoint => Self::trigger_checkpoint(rt),
            Action::SnapshotSubtask => Self::snapshot_subtask(rt),
            Action::AbortCheckpoint(id) => Self::abort_checkpoint(rt, u64::from(id)),
            Action::CompleteCheckpointUnnotified(id) => {
                Self::complete_unnotified(rt, u64::from(id))
            }
            Action::CompleteCheckpoint(id) => Self::complete_checkpoint(m, rt, s, u64::from(id)),
            Action::Crash { landed } => Self::crash(m, rt, s, a, landed),
            Action::LandZombie => rt.land_zombie().map(|_| ()).map_err(Rejection::from),
            Action::FencePartition(p) => {
                // The restoring incarnation's epoch: one more than the crashes so far.
                rt.fence(p, Epoch::from(s.crashes) + 1);
                Ok(())
            }
            Action::Restore | Action::RestoreScaledIn => Self::restore(m, rt, s, a),
        }
    }

    /// `ReuseResult(k)`: nothing reaches the operator, which must not have asked for the
    /// call whose saved result the model reuses.
    fn reuse_result(rt: &Runtime<V>, s: &model::State, k: u8) -> Result<(), Rejection> {
        let Phase::AtCall(i) = s.phase[k as usize] else {
            return Err(format!("key {k} is not at a call").into());
        };
        match rt.requested.get(&k) {
            Some(r) if r.call.index <= u32::from(i) => Err(format!(
                "the operator asks for call {} of key {k} where the model reuses saved result {i}",
                r.call.index
            )
            .into()),
            _ => Ok(()),
        }
    }

    /// `CallSupplier(k)`: the supplier runs the call the operator asked for, which must be
    /// the model's; its outcome is held back until `SendPut(k)`.
    fn call_supplier(rt: &mut Runtime<V>, s: &model::State, k: u8) -> Result<(), Rejection> {
        let Phase::AtCall(i) = s.phase[k as usize] else {
            return Err(format!("key {k} is not at a call").into());
        };
        let want = rt.names.state_key(s.head(k as usize));
        let r = match rt.requested.get(&k) {
            Some(r) if r.call.state_key() == want && r.call.index == u32::from(i) => r.clone(),
            Some(r) => {
                return Err(format!(
                    "the operator asks for {:?} call {}, the model calls the supplier for {want:?} call {i}",
                    r.call.state_key(),
                    r.call.index
                ).into())
            }
            None => {
                return Err(format!(
                    "the operator asks for no call of key {k}; the model calls the supplier for {want:?} call {i}"
                ).into())
            }
        };
        Arc::make_mut(&mut rt.requested).remove(&k);
        let outcome = supplier(&r.function, &r.args);
        // The call is the model's (checked above): its names are the model's.
        let call = (sk_view(s.head(k as usize)), r.call.index);
        *Arc::make_mut(&mut rt.supplier_calls)
            .entry(call)
            .or_default() += 1;
        Arc::make_mut(&mut rt.returned).insert(k, (r.call, outcome));
        Ok(())
    }

    /// `SendPut(k)`: the held outcome returns to the operator, which must put the model's
    /// record with one more saved result.
    fn send_put(rt: &mut Runtime<V>, s: &model::State, k: u8) -> Result<(), Rejection> {
        let Phase::HaveResult(i) = s.phase[k as usize] else {
            return Err(format!("key {k} has no call result to save").into());
        };
        let (call, outcome) = Arc::make_mut(&mut rt.returned)
            .remove(&k)
            .ok_or_else(|| format!("no call outcome of key {k} to save"))?;
        rt.handle(Event::CallReturned { call, outcome })?;
        Self::check_put(rt, s, k, i + 1, false)
    }

    /// `TriggerCheckpoint`: subtask 0's part; with two subtasks running, subtask 1 takes
    /// its own when the barrier reaches it (`SnapshotSubtask`).
    fn trigger_checkpoint(rt: &mut Runtime<V>) -> Result<(), Rejection> {
        let id = rt.next_checkpoint;
        let checkpoint = Self::snapshot_part(rt, 0, id)?;
        rt.next_checkpoint += 1;
        let awaiting_subtask = rt.running_subtasks() > 1;
        let mut outputs_before = [0; model::MAX_KEYS];
        for (k, n) in outputs_before.iter_mut().enumerate() {
            if rt.subtask_of(k as u8) == 0 {
                *n = rt.uncommitted[k].len();
            }
        }
        rt.pending.push(Pending {
            id,
            parts: vec![checkpoint],
            awaiting_subtask,
            outputs_before,
        });
        Self::check_known(rt, 0, id)
    }

    /// `SnapshotSubtask`: subtask 1's part of the checkpoint that waits for it.
    fn snapshot_subtask(rt: &mut Runtime<V>) -> Result<(), Rejection> {
        let at = rt
            .pending
            .iter()
            .position(|p| p.awaiting_subtask)
            .ok_or("no checkpoint waits for subtask 1's part")?;
        let id = rt.pending[at].id;
        let checkpoint = Self::snapshot_part(rt, 1, id)?;
        let uncommitted: Vec<usize> = rt.uncommitted.iter().map(Vec::len).collect();
        let mine: Vec<bool> = (0..model::MAX_KEYS)
            .map(|k| rt.subtask_of(k as u8) == 1)
            .collect();
        let p = &mut rt.pending[at];
        p.parts.push(checkpoint);
        p.awaiting_subtask = false;
        for k in 0..model::MAX_KEYS {
            if mine[k] {
                p.outputs_before[k] = uncommitted[k];
            }
        }
        Self::check_known(rt, 1, id)
    }

    /// `AbortCheckpoint(id)`: the oldest pending checkpoint is aborted, and every subtask
    /// that took its part knows it.
    fn abort_checkpoint(rt: &mut Runtime<V>, id: u64) -> Result<(), Rejection> {
        let Some(oldest) = rt.pending.first() else {
            return Err(format!("checkpoint {id} is not the oldest pending").into());
        };
        if oldest.id != id {
            return Err(format!("checkpoint {id} is not the oldest pending").into());
        }
        for t in 0..oldest.parts.len() as u8 {
            if !rt.op_at(t)?.checkpoint_aborted(id) {
                return Err(format!("subtask {t}'s operator does not know checkpoint {id}").into());
            }
        }
        rt.pending.remove(0);
        Ok(())
    }

    /// `CompleteCheckpointUnnotified(id)`: the coordinator completes it and subsumes the
    /// older ones; the operator hears of none of them, and the sink commits nothing yet.
    fn complete_unnotified(rt: &mut Runtime<V>, id: u64) -> Result<(), Rejection> {
        let at = rt
            .pending
            .iter()
            .position(|p| p.id == id)
            .ok_or_else(|| format!("checkpoint {id} is not pending"))?;
        let done: Vec<Pending> = rt.pending.drain(..=at).collect();
        for (t, unnotified) in rt.unnotified.iter_mut().enumerate() {
            unnotified.extend(done.iter().filter(|p| p.parts.len() > t).map(|p| p.id));
        }
        let p = done.into_iter().next_back().expect("position found");
        rt.unannounced_outputs = p.outputs_before;
        rt.completed = Some(p.parts);
        Ok(())
    }

    /// `CompleteCheckpoint(id)`: every subtask prunes what its part's boundaries mark
    /// finished, the coordinator drops it and the older pending checkpoints it subsumes,
    /// and the sink commits the outputs emitted before its snapshot.
    fn complete_checkpoint(
        m: &Durable,
        rt: &mut Runtime<V>,
        s: &model::State,
        id: u64,
    ) -> Result<(), Rejection> {
        let Some(at) = rt.pending.iter().position(|p| p.id == id) else {
            return Self::complete_not_pending(rt, id);
        };
        let mut report = PruneReport::default();
        for t in 0..rt.pending[at].parts.len() as u8 {
            let r = rt
                .op_at(t)?
                .checkpoint_complete(id)
                .ok_or_else(|| format!("subtask {t}'s operator does not know checkpoint {id}"))?;
            report.states_pruned += r.states_pruned;
            report.keys_dropped += r.keys_dropped;
        }
        let p = rt.pending.drain(..=at).next_back().expect("position found");
        Self::check_prune(m, rt, s, p.id, &report);
        rt.commit(&p.outputs_before);
        // It subsumes every checkpoint completed before it, told or not.
        rt.unnotified = Default::default();
        rt.unannounced_outputs = [0; model::MAX_KEYS];
        // Later snapshots counted the outputs just committed.
        for later in &mut rt.pending {
            for (n, done) in later.outputs_before.iter_mut().zip(p.outputs_before) {
                *n -= done;
            }
        }
        rt.completed = Some(p.parts);
        Self::cross_check_caches(rt);
        Ok(())
    }

    /// `CompleteCheckpoint(id)` of a checkpoint that is not pending (a probe): completed,
    /// subsumed, aborted or never taken; no operator may know it.
    fn complete_not_pending(rt: &mut Runtime<V>, id: u64) -> Result<(), Rejection> {
        let mut known = false;
        for t in 0..rt.running_subtasks() {
            known |= rt.op_at(t)?.checkpoint_complete(id).is_some();
        }
        match known {
            false => Err(format!("checkpoint {id} is not pending").into()),
            true => Ok(()),
        }
    }

    /// The operators' prune `report` for checkpoint `id` against the model's: it prunes
    /// the cached states of inputs the checkpoint counts finished, and keys left with
    /// nothing cached lose their tracking.
    fn check_prune(
        m: &Durable,
        rt: &mut Runtime<V>,
        s: &model::State,
        id: u64,
        report: &PruneReport,
    ) {
        let Some((_, c)) = s
            .pending_checkpoints()
            .find(|(pending, _)| u64::from(*pending) == id)
        else {
            return;
        };
        let cached = |sk: &StateKey| s.cached(*sk).is_some();
        let pruned = |sk: &StateKey| sk.seq < c.finished[sk.key as usize];
        let states = Self::state_keys(m)
            .filter(|sk| cached(sk) && pruned(sk))
            .count();
        let keys = (0..m.bounds.keys)
            .filter(|k| {
                let mine: Vec<StateKey> = Self::state_keys(m)
                    .filter(|sk| sk.key == *k && cached(sk))
                    .collect();
                !mine.is_empty() && mine.iter().all(pruned)
            })
            .count();
        let got = (report.states_pruned, report.keys_dropped);
        if got != (states as u64, keys as u64) {
            rt.reports.push(format!(
                "checkpoint {id}: prune reports {got:?} (states, keys), the model prunes ({states}, {keys})"
            ));
        }
    }

    /// Every operator's cache cross-checked against its store, disagreements reported.
    fn cross_check_caches(rt: &mut Runtime<V>) {
        let mut reports = Vec::new();
        for (_, op) in rt.operators() {
            cross_check_cache(op, &mut reports);
        }
        rt.reports.extend(reports);
    }

    /// `Crash { landed }`: the put in flight lands if `landed`, a send the crash does not
    /// stop stays with the producer, the coordinator aborts every pending checkpoint and
    /// the operators are dropped.
    fn crash(
        m: &Durable,
        rt: &mut Runtime<V>,
        s: &model::State,
        a: &Action,
        landed: bool,
    ) -> Result<(), Rejection> {
        if landed {
            // Sequential puts: the one in flight.
            if let Some(put) = s.puts_in_flight().find(|p| p.offset.is_none()) {
                rt.land(put.record.state_key.key)?;
            }
        }
        if m.bounds.zombie_sends && s.zombie.is_none() {
            if let Some(record) = m.next_state(s, *a).and_then(|n| n.zombie) {
                let k = usize::from(record.state_key.key);
                let put = rt.in_flight[k]
                    .as_ref()
                    .ok_or_else(|| format!("no put of key {k} in flight to outlive the crash"))?;
                rt.zombie = Some(Arc::clone(&put.record));
            }
        }
        rt.abort_checkpoints();
        rt.crash();
        Ok(())
    }

    /// `Restore` / `RestoreScaledIn`: the operators restored at the incarnation's epoch,
    /// their rebuild reports checked against the model's replay.
    fn restore(
        m: &Durable,
        rt: &mut Runtime<V>,
        s: &model::State,
        a: &Action,
    ) -> Result<(), Rejection> {
        if m.bounds.fenced_producer {
            rt.zombie = None;
        }
        // The incarnation's epoch: one more than the crashes so far.
        let epoch = Epoch::from(s.crashes) + 1;
        let restored = rt.restore(*a == Action::RestoreScaledIn, epoch)?;
        Self::cross_check_caches(rt);
        let (Some(c), Some(after)) = (s.completed, m.next_state(s, *a)) else {
            return Ok(());
        };
        // Offsets are positions unless compacted: each subtask's replay reads
        // every record from its marker to the end.
        let (mut scanned, mut loaded, mut want_scanned) = (0, 0, 0);
        for (t, r) in restored.iter().enumerate() {
            scanned += r.report.records_scanned;
            loaded += r.report.states_loaded;
            want_scanned += (0..m.bounds.partitions as usize)
                .map(|p| u64::from(s.log_len[p] - Self::replay_from(m, &c, t as u8, p)))
                .sum::<u64>();
            Self::check_skipped(rt, &c, t, r)?;
        }
        let want_loaded = after.cache.entries().count() as u64;
        let scanned_ok = m.bounds.compact_offsets || scanned == want_scanned;
        if !scanned_ok || loaded != want_loaded {
            rt.reports.push(format!(
                "rebuild reports {scanned} records scanned and {loaded} states loaded, \
                 the model replays {want_scanned} and loads {want_loaded}"
            ));
        }
        Ok(())
    }

    /// Subtask `t`'s rebuild report `r` skips the records of keys it does not own, those
    /// of its keys whose input the checkpoint `c` counts finished, and the stale ones,
    /// behind a newer fence: as many as its replay range holds.
    fn check_skipped(
        rt: &mut Runtime<V>,
        c: &model::Checkpoint,
        t: usize,
        r: &Restored,
    ) -> Result<(), Rejection> {
        let want = rt.skipped_in_replay(c, &r.marker, &r.owned)?;
        let want = (want.foreign, want.finished, want.fenced);
        let got = (
            r.report.foreign_skipped,
            r.report.finished_skipped,
            r.report.fenced_skipped,
        );
        if got != want {
            rt.reports.push(format!(
                "subtask {t}'s rebuild reports {got:?} records of other subtasks' keys, \
                 of finished inputs and stale skipped, its replay range holds {want:?}"
            ));
        }
        Ok(())
    }

    /// Where the model's restore from `c` has subtask `t` replay partition `p` from: its
    /// own marker (`own-marker`), or the minimum of every subtask's.
    pub(super) fn replay_from(m: &Durable, c: &model::Checkpoint, t: u8, p: usize) -> u8 {
        if m.bounds.own_marker {
            c.marker[m.marker_slot(t, p)]
        } else {
            (0..m.bounds.subtasks)
                .map(|t| c.marker[m.marker_slot(t, p)])
                .min()
                .expect("one subtask at least")
        }
    }

    /// Subtask `t`'s part of checkpoint `id`, its operator's snapshot over the log's end
    /// offsets; past its bound the operator forgets the oldest checkpoint it knows: one
    /// completed without its being told (the model's coordinator never has more pending
    /// than the bound).
    fn snapshot_part(rt: &mut Runtime<V>, t: u8, id: u64) -> Result<Arc<Checkpoint>, Rejection> {
        let ends = rt.ends();
        let op = rt.op_at(t)?;
        let before = op.clone();
        // The refusal checks compare copies that share their maps; a copy that shares
        // none must compare equal too, entry by entry.
        let copied = op.unshared() == before;
        let checkpoint = op.snapshot(id, &ends)?;
        // A snapshot is remembered until its completion or abort: the operator changed.
        let remembered = *op != before;
        // End offsets of another partition count are refused, and change nothing.
        let mut probe = op.clone();
        let wrong = [ends.as_slice(), &[0]].concat();
        let want = format!(
            "the log reported {} end offsets for {} partitions",
            wrong.len(),
            ends.len()
        );
        let refused = match probe.snapshot(id + 1, &wrong) {
            Err(OperatorError::Store(StoreError::InvalidMarker(m))) if m == want => None,
            other => Some(format!(
                "a snapshot over {} end offsets gives {:?}, not `{want}`",
                wrong.len(),
                other.map(|_| ())
            )),
        };
        let unchanged = probe == *op;
        rt.reports.extend(refused);
        if !remembered {
            rt.reports.push(format!(
                "snapshot {id} left the operator equal to what it was"
            ));
        }
        if !copied {
            rt.reports
                .push("a copy of the operator sharing none of its maps differs from it".into());
        }
        if !unchanged {
            rt.reports
                .push("a refused snapshot changed the operator".to_string());
        }
        let unnotified = &mut rt.unnotified[usize::from(t)];
        let known = unnotified.len()
            + rt.pending
                .iter()
                .filter(|p| p.parts.len() > usize::from(t))
                .count();
        if known >= rt.names.limits.pending_checkpoints && !unnotified.is_empty() {
            unnotified.remove(0);
        }
        Ok(Arc::new(checkpoint))
    }

    /// After subtask `t` took its part of checkpoint `id`: its operator knows exactly the
    /// checkpoints the coordinator left it.
    fn check_known(rt: &mut Runtime<V>, t: u8, id: u64) -> Result<(), Rejection> {
        let known = rt.known_checkpoints(t);
        let got: Vec<u64> = rt.op_at(t)?.pending_checkpoint_ids().collect();
        if got != known {
            rt.reports.push(format!(
                "checkpoint {id} taken: subtask {t}'s operator knows checkpoints {got:?}, the coordinator left {known:?}"
            ));
        }
        Ok(())
    }

    /// After `SendPut(k)` / `CompleteAction(k)`: the operator sent exactly the model's
    /// record, the state of the key's head action with `calls` saved results (or
    /// completed), and flushed it.
    fn check_put(
        rt: &Runtime<V>,
        s: &model::State,
        k: u8,
        calls: u8,
        completed: bool,
    ) -> Result<(), Rejection> {
        let put = rt.in_flight[usize::from(k)]
            .as_ref()
            .ok_or_else(|| format!("the operator sent no put for key {k}"))?;
        let want = rt.names.state_key(s.head(k as usize));
        if *put.state_key != want {
            return Err(format!(
                "the operator saves {:?} where the model saves {want:?}",
                put.state_key
            )
            .into());
        }
        let record = LogRecord {
            partition: put.record.partition,
            offset: 0,
            key: put.record.key.clone(),
            value: put.record.value.clone(),
        };
        let (_, state) = decode_record(&record)
            .map_err(|e| e.to_string())?
            .ok_or("the put is a fence record")?;
        let got = (state.call_results.len(), state.completed);
        let want = if completed {
            (0, true)
        } else {
            (usize::from(calls), false)
        };
        if got != want {
            return Err(format!(
                "the operator's put carries (results, completed) {got:?}, the model's {want:?}"
            )
            .into());
        }
        Ok(())
    }

    /// `AckPut(k)` with no put of key `k` in flight: the outcome of the call before key
    /// `k`'s current one arrives again. The operator must refuse it.
    fn stale_outcome(rt: &mut Runtime<V>, s: &model::State, k: u8) -> Result<(), Rejection> {
        let i = Self::stale_call(s, k)
            .ok_or_else(|| format!("no put of key {k} in flight and no earlier call to repeat"))?;
        let sk = rt.names.state_key(s.head(k as usize));
        let call = CallRef {
            key: sk.key,
            seq: sk.seq,
            action: sk.action,
            index: u32::from(i),
        };
        let args = json!([s.head(k as usize).seq, i]);
        let outcome = supplier(&format!("f{i}"), &args);
        rt.handle(Event::CallReturned { call, outcome })
    }
}
