//! How each side fills the projection: the model's state and the runtime's, one
//! function per part of the [`View`] (keys, cache, subtasks, log partitions,
//! checkpoints), each written over the view of the previous state.

use super::*;

impl<V: Variant> Conformant<V> {
    /// The model's projection of `s`, written over `out` (see [`resize`], [`refill`]).
    pub(super) fn view_model(m: &Durable, s: &model::State, out: &mut View) {
        let b = m.bounds;
        out.up = !s.down;
        out.failed = s.failed;
        resize(&mut out.keys, if s.down { 0 } else { b.keys as usize });
        for (k, view) in out.keys.iter_mut().enumerate() {
            model_key(m, s, k, view);
        }
        refill(
            &mut out.cache,
            Self::state_keys(m)
                .filter(|sk| !s.put_in_flight(*sk))
                .filter_map(|sk| {
                    s.cached(sk).map(|st| CachedView {
                        state_key: sk_view(sk),
                        state: state_view(st),
                        // Only designs that rewind the marker track offsets.
                        offset: s.acked_offset.get(sk.slot()).map(u64::from),
                    })
                }),
        );
        out.cache_size = out.cache.len() as u64;
        model_subtasks(m, s, out);
        out.tracked_keys = (0..b.keys)
            .filter(|&k| {
                Self::state_keys(m)
                    .any(|sk| sk.key == k && !s.put_in_flight(sk) && s.cached(sk).is_some())
            })
            .count() as u64;
        resize(&mut out.log, b.partitions as usize);
        for (p, part) in out.log.iter_mut().enumerate() {
            Self::model_partition(m, s, p as u8, part);
        }
        resize(&mut out.pending, s.pending_count());
        for (view, (_, c)) in out.pending.iter_mut().zip(s.pending_checkpoints()) {
            model_checkpoint(m, &c, view);
        }
        if let Some(view) = present(&mut out.completed, s.completed.is_some()) {
            model_checkpoint(m, s.completed.as_ref().expect("present"), view);
        }
        resize(&mut out.committed, b.keys as usize);
        for (k, view) in out.committed.iter_mut().enumerate() {
            refill(view, 0..u64::from(s.committed_outputs[k]));
        }
        refill(
            &mut out.supplier_calls,
            Self::state_keys(m)
                .flat_map(|sk| (0..b.calls).map(move |c| (sk, c)))
                .filter(|(sk, c)| s.runs(*sk, *c) > 0)
                .map(|(sk, c)| CallView {
                    state_key: sk_view(sk),
                    call: u64::from(c),
                    runs: u64::from(s.runs(sk, c)),
                }),
        );
        out.problems.clear();
        if b.compact_offsets {
            rank_offsets(out);
        }
    }

    /// The model's partition `p`: its end, the latest record per state key, and every
    /// state that landed per state key.
    fn model_partition(m: &Durable, s: &model::State, p: u8, part: &mut PartitionView) {
        let b = m.bounds;
        let mine = || Self::state_keys(m).filter(move |sk| sk.key % b.partitions == p);
        part.end = u64::from(s.log_len[p as usize]);
        refill(
            &mut part.latest,
            mine().filter_map(|sk| {
                s.latest_record(sk).map(|(st, offset)| LatestView {
                    state_key: sk_view(sk),
                    state: state_view(st),
                    offset: u64::from(offset),
                })
            }),
        );
        let landed = || mine().filter(|sk| s.log.get(sk.slot()).is_some());
        resize(&mut part.landed, landed().count());
        for (view, sk) in part.landed.iter_mut().zip(landed()) {
            view.state_key = sk_view(sk);
            refill(&mut view.states, s.landed_states(sk).iter().map(state_view));
            view.states.sort();
        }
    }

    /// The runtime's projection, written over `out` (see [`resize`], [`refill`]).
    pub(super) fn view_runtime(rt: &Runtime<V>, out: &mut View) {
        let names = &rt.names;
        out.problems.clear();
        out.up = rt.op.is_some();
        out.keys.clear();
        out.cache.clear();
        out.subtasks.clear();
        let running = rt.running_subtasks();
        if rt.op.is_some() {
            resize(&mut out.keys, names.keys.len());
        }
        for (t, op) in rt.operators() {
            if t >= running {
                out.problems
                    .push(format!("subtask {t}'s operator runs after a scale-in"));
            }
            operator_checks(rt, op, &mut out.problems);
            Self::operator_keys(rt, t, op, out);
            let cache = Self::operator_cache(rt, op, &mut out.problems);
            if names.subtasks > 1 {
                out.subtasks.push(subtask_view(names, op, &cache));
            }
            out.cache.extend(cache);
        }
        if rt.operators().count() > 1 {
            out.cache.sort_by_key(|c| c.state_key);
        }
        Self::runtime_log(rt, out);
        refill(
            &mut out.supplier_calls,
            rt.supplier_calls
                .iter()
                .map(|(&(state_key, call), &runs)| CallView {
                    state_key,
                    call: u64::from(call),
                    runs: u64::from(runs),
                }),
        );
        Self::runtime_counts(rt, out);
        let problems = &mut out.problems;
        resize(&mut out.pending, rt.pending.len());
        for (view, p) in out.pending.iter_mut().zip(&rt.pending) {
            runtime_checkpoint(names, &p.parts, p.awaiting_subtask, view, problems);
        }
        if let Some(view) = present(&mut out.completed, rt.completed.is_some()) {
            runtime_checkpoint(
                names,
                rt.completed.as_deref().expect("present"),
                false,
                view,
                problems,
            );
        }
        resize(&mut out.committed, rt.committed.len());
        for (view, seqs) in out.committed.iter_mut().zip(rt.committed.iter()) {
            refill(view, seqs.iter().copied());
        }
        out.problems.extend(rt.reports.iter().cloned());
        if rt.ranked_offsets {
            rank_offsets(out);
        }
    }

    /// The progress and activity of the keys subtask `t`'s operator `op` owns, and the
    /// cross-check of the operator's key lists against that activity.
    fn operator_keys(rt: &Runtime<V>, t: u8, op: &Operator, out: &mut View) {
        let names = &rt.names;
        let mut activities = [KeyActivity::default(); model::MAX_KEYS];
        for (k, view) in out.keys.iter_mut().enumerate() {
            if rt.subtask_of(k as u8) != t {
                continue;
            }
            let ks = op.keys().get(&names.keys[k]);
            (view.next_seq, view.finished, view.next_action) = impl_key_progress(names, ks);
            refill(&mut view.queued, impl_key_queued(ks));
            let activity = op.activity(&names.keys[k]);
            view.in_progress = activity.in_progress;
            view.awaiting = activity.awaiting.map(u64::from);
            view.saving = activity.saving.is_some();
            view.ready = activity.ready;
            activities[k] = activity;
        }
        cross_check_lists(
            op,
            names,
            &activities[..names.keys.len()],
            &mut out.problems,
        );
    }

    /// The states operator `op` caches, but those whose put is in flight, sorted by state
    /// key; each with its tracked offset, in its key's partition.
    fn operator_cache(
        rt: &Runtime<V>,
        op: &Operator,
        problems: &mut Vec<String>,
    ) -> Vec<CachedView> {
        let names = &rt.names;
        let in_flight = |sk: &ImplKey| rt.puts_in_flight().any(|put| *put.state_key == *sk);
        let store = op.store();
        // Looked up by the state keys within the bounds; only a cache that
        // holds others is copied whole, to name them.
        let mut cache = Vec::new();
        let mut found = 0;
        for (sk, v) in &names.state_keys {
            let Some((st, partition, offset)) = store.entry_of(sk) else {
                continue;
            };
            found += 1;
            if store.offset_of(sk) != Some((partition, offset)) {
                problems.push(format!("cache: offset_of {sk:?} disagrees with entry_of"));
            }
            if in_flight(sk) {
                continue;
            }
            if partition != names.key_partitions[usize::from(v.key)] {
                problems.push(format!("cache: {sk:?} tracked in partition {partition}"));
            }
            cache.push(CachedView {
                state_key: *v,
                state: impl_state_view(st),
                offset: rt.tracks_offsets.then_some(offset),
            });
        }
        if found == store.cached_len() {
            return cache;
        }
        cache.clear();
        for (sk, st) in store.cache() {
            if in_flight(&sk) {
                continue;
            }
            let Some(offset) = Self::tracked_offset(rt, store, &sk, problems) else {
                continue;
            };
            match names.view_of(&sk) {
                Ok(v) => cache.push(CachedView {
                    state_key: v,
                    state: impl_state_view(&st),
                    offset,
                }),
                Err(e) => problems.push(format!("cache: {e}")),
            }
        }
        cache.sort_by_key(|c| c.state_key);
        cache
    }

    /// The offset `store` tracks for the cached state of `sk`, in its key's partition
    /// (left out unless the design tracks offsets); `None` when it tracks none.
    fn tracked_offset(
        rt: &Runtime<V>,
        store: &ActionStateStore,
        sk: &ImplKey,
        problems: &mut Vec<String>,
    ) -> Option<Option<u64>> {
        let Some((partition, offset)) = store.offset_of(sk) else {
            problems.push(format!("cache: {sk:?} has no tracked offset"));
            return None;
        };
        if partition != partition_for(&sk.key, rt.names.partitions) {
            problems.push(format!("cache: {sk:?} tracked in partition {partition}"));
        }
        Some(rt.tracks_offsets.then_some(offset))
    }

    /// The log's partitions, as the runtime's mirror has read them after reading the
    /// records that landed since the last view.
    fn runtime_log(rt: &Runtime<V>, out: &mut View) {
        let ends = rt.ends();
        let mut mirror = rt.mirror.borrow_mut();
        mirror.resize_with(ends.len(), Default::default);
        resize(&mut out.log, ends.len());
        for (p, (&end, view)) in ends.iter().zip(out.log.iter_mut()).enumerate() {
            let part = &mut mirror[p];
            if end < part.end {
                out.problems.push(format!(
                    "partition {p}: end offset {end} is below the {} read before",
                    part.end
                ));
                *part = Default::default();
            }
            if end > part.end {
                Self::read_partition(rt, p, end, Arc::make_mut(part));
            }
            let part = &mirror[p];
            out.problems.extend(part.problems.iter().cloned());
            partition_view(end, part, view);
        }
    }

    /// Partition `p`'s records from what `part` has read up to `end`, folded into it.
    fn read_partition(rt: &Runtime<V>, p: usize, end: u64, part: &mut PartitionMirror) {
        let names = &rt.names;
        let from = part.end;
        part.end = end;
        for record in rt.log[p].iter().skip(from as usize) {
            let decoded = decode_entry(record).map_err(|e| e.to_string());
            let (sk, st) = match decoded {
                // A fence holds no state of the model's log; it makes the older
                // states after it stale, which no rebuild reads.
                Ok(Entry::Fence { epoch }) => {
                    part.level = part.level.max(epoch);
                    continue;
                }
                Ok(Entry::State { epoch, .. }) if epoch < part.level => continue,
                Ok(Entry::State { key, state, .. }) => match names.view_of(&key) {
                    Ok(sk) => (sk, state),
                    Err(e) => {
                        part.problems
                            .push(format!("partition {p} offset {}: {e}", record.offset));
                        continue;
                    }
                },
                Err(e) => {
                    part.problems
                        .push(format!("partition {p} offset {}: {e}", record.offset));
                    continue;
                }
            };
            let state = impl_state_view(&st);
            part.latest.insert(
                sk,
                LatestView {
                    state_key: sk,
                    state,
                    offset: record.offset,
                },
            );
            let seen = part.landed.entry(sk).or_default();
            if !seen.contains(&state) {
                seen.push(state);
                seen.sort();
            }
        }
    }

    /// Whether an operator failed, and the states and keys the operators track, but
    /// those of puts in flight.
    fn runtime_counts(rt: &Runtime<V>, out: &mut View) {
        out.failed = rt.operators().any(|(_, op)| op.failure().is_some());
        out.cache_size = 0;
        out.tracked_keys = 0;
        for (_, op) in rt.operators() {
            let store = op.store();
            let open = rt
                .puts_in_flight()
                .filter(|put| store.get(&put.state_key).is_some())
                .count();
            out.cache_size += (store.cached_len() - open) as u64;
            // A key with a put in flight is left out when that state is its only one.
            let alone = rt
                .puts_in_flight()
                .filter(|put| {
                    let open = &put.state_key;
                    store.get(open).is_some() && store.cached_count_of(&open.key) == 1
                })
                .count();
            out.tracked_keys += store.tracked_keys().saturating_sub(alone) as u64;
        }
    }
}

/// Key `k`'s progress and activity in the model's state `s`.
fn model_key(m: &Durable, s: &model::State, k: usize, view: &mut KeyView) {
    let b = m.bounds;
    let phase = s.phase[k];
    // The put that failed ended its action (other keys' puts may still be in
    // flight, their actions waiting).
    let ended = s.failed
        && s.puts[k].is_none()
        && matches!(phase, Phase::AwaitPut(_) | Phase::AwaitCompletion);
    // The runtime reuses every matching saved result when the action
    // starts: at call i it already waits for the first unsaved call.
    let awaiting = match phase {
        Phase::AtCall(i) => {
            let saved = s.cached(s.head(k)).map_or(0, |st| st.calls());
            (i.max(saved) < b.calls).then_some(i.max(saved))
        }
        // The supplier returned; its outcome is not delivered yet.
        Phase::HaveResult(i) => Some(i),
        _ => None,
    };
    let saving = !ended && matches!(phase, Phase::AwaitPut(_) | Phase::AwaitCompletion);
    let queued = s.finished[k] < s.next_seq[k];
    view.awaiting = awaiting.map(u64::from);
    view.saving = saving;
    view.ready = awaiting.is_none() && !saving && (phase != Phase::Idle || queued);
    view.next_seq = u64::from(s.next_seq[k]);
    view.finished = u64::from(s.finished[k]);
    view.next_action = u64::from(s.next_action[k]);
    refill(
        &mut view.queued,
        (s.finished[k]..s.next_seq[k]).map(u64::from),
    );
    view.in_progress = phase != Phase::Idle && !ended;
}

/// The model's subtasks (with two running): per subtask, its keys with an input and its
/// part of the cache already in `out`.
fn model_subtasks(m: &Durable, s: &model::State, out: &mut View) {
    let b = m.bounds;
    let subtasks = match (s.down, b.subtasks > 1) {
        (false, true) if !s.scaled_in => b.subtasks,
        (false, true) => 1,
        _ => 0,
    };
    resize(&mut out.subtasks, subtasks as usize);
    for (t, view) in out.subtasks.iter_mut().enumerate() {
        let mine = |k: u8| m.owner(s.scaled_in, k) == t as u8;
        refill(
            &mut view.keys,
            (0..b.keys).filter(|&k| mine(k) && s.next_seq[k as usize] > 0),
        );
        refill(
            &mut view.cache,
            out.cache
                .iter()
                .filter(|c| mine(c.state_key.key))
                .map(|c| c.state_key),
        );
    }
}

/// What operator `op`'s limits, scheduling and store width disagree with.
fn operator_checks<V: Variant>(rt: &Runtime<V>, op: &Operator, problems: &mut Vec<String>) {
    let names = &rt.names;
    if op.limits() != names.limits {
        problems.push(format!("the operator's limits are {:?}", op.limits()));
    }
    if op.scheduling() != rt.scheduling {
        problems.push(format!(
            "the operator runs {:?} scheduling",
            op.scheduling()
        ));
    }
    if op.store().partition_count() != names.partitions {
        problems.push(format!(
            "the store spans {} partitions, the log has {}",
            op.store().partition_count(),
            names.partitions
        ));
    }
}

/// Subtask view of operator `op`: its keys with an input, and its `cache`'s state keys.
fn subtask_view(names: &Names, op: &Operator, cache: &[CachedView]) -> SubtaskView {
    SubtaskView {
        keys: (0..names.keys.len())
            .filter(|&k| {
                op.keys()
                    .get(&names.keys[k])
                    .is_some_and(|ks| ks.next_seq > 0)
            })
            .map(|k| k as u8)
            .collect(),
        cache: cache.iter().map(|c| c.state_key).collect(),
    }
}

/// A partition's view from what the mirror `part` read of it up to `end`.
fn partition_view(end: u64, part: &PartitionMirror, view: &mut PartitionView) {
    view.end = end;
    refill(&mut view.latest, part.latest.values().copied());
    resize(&mut view.landed, part.landed.len());
    for (view, (&state_key, states)) in view.landed.iter_mut().zip(&part.landed) {
        view.state_key = state_key;
        refill(&mut view.states, states.iter().copied());
    }
}

/// A runtime checkpoint's view from its `parts`, by subtask; `awaiting` while subtask
/// 1's part is still to come.
fn runtime_checkpoint(
    names: &Names,
    parts: &[Arc<Checkpoint>],
    awaiting: bool,
    out: &mut CheckpointView,
    problems: &mut Vec<String>,
) {
    resize(&mut out.keys, names.keys.len());
    for (view, key) in out.keys.iter_mut().zip(&names.keys) {
        let mut holding = parts.iter().filter_map(|cp| cp.keys.get(key));
        *view = impl_key_progress(names, holding.next());
        if holding.next().is_some() {
            problems.push(format!("checkpoint: two parts hold key {key:?}"));
        }
    }
    // Subtask-major, as the model's slots; a checkpoint one subtask took for
    // all (scaled in) fills every subtask's slots with its marker.
    out.marker.clear();
    for t in 0..if awaiting { 1 } else { names.subtasks as usize } {
        let part = parts.get(t).or(parts.first());
        match part {
            Some(cp) => out.marker.extend(cp.marker.offsets.iter().copied()),
            None => out
                .marker
                .extend(std::iter::repeat_n(0, names.partitions as usize)),
        }
    }
    out.awaiting_subtask = awaiting;
}
