//! The driver's projection in model indices: one function per part of the view (keys,
//! cache, log partitions, checkpoints, supplier runs).

use steadfast_log::{CachedState, CheckpointProjection, KeyProjection, LoggedState};

use super::*;

impl<R: Reading> DriverRuntime<R> {
    /// The model's index of a key name, or a problem naming it.
    fn key(&self, name: &str, problems: &mut Vec<String>) -> Option<usize> {
        let k = self.names.key_index(name).map(usize::from);
        if k.is_none() {
            problems.push(format!("the driver names an unknown key {name:?}"));
        }
        k
    }

    fn call_view(
        &self,
        call: &steadfast::durable::CallRef,
        count: u32,
    ) -> Result<CallView, String> {
        Ok(CallView {
            state_key: self.names.view_of(&call.state_key())?,
            call: u64::from(call.index),
            runs: u64::from(count),
        })
    }

    /// The driver's projection in model indices.
    pub(super) fn view(&self) -> DriverView {
        let mut out = DriverView::default();
        out.view.problems.extend(self.reports.iter().cloned());
        let p = match self.projection() {
            Ok(p) => p,
            Err(e) => {
                out.view
                    .problems
                    .push(format!("the driver reports no projection: {e}"));
                return out;
            }
        };
        let names = &self.names;
        let view = &mut out.view;
        view.up = p.running;
        view.failed = p.failure.is_some();
        if p.running {
            resize(&mut view.keys, names.keys.len());
        }
        self.key_views(&p, view);
        for c in &p.cache {
            if let Some(cached) = self.cached_view(c, &mut view.problems) {
                view.cache.push(cached);
            }
        }
        view.cache.sort_by_key(|c| c.state_key);
        view.cache_size = view.cache.len() as u64;
        let mut tracked: Vec<u8> = view.cache.iter().map(|c| c.state_key.key).collect();
        tracked.dedup();
        view.tracked_keys = tracked.len() as u64;
        for (partition, records) in p.log.iter().enumerate() {
            let part = self.partition_view(partition, records, &mut view.problems);
            view.log.push(part);
        }
        for cp in &p.pending_checkpoints {
            let (c, unknown) = checkpoint_view(names, cp);
            view.pending.push(c);
            view.problems.extend(unknown);
        }
        if let Some(cp) = &p.completed_checkpoint {
            let (c, unknown) = checkpoint_view(names, cp);
            view.completed = Some(c);
            view.problems.extend(unknown);
        }
        view.committed = vec![Vec::new(); names.keys.len()];
        for o in &p.committed {
            if let Some(k) = self.key(&o.key, &mut view.problems) {
                view.committed[k].push(o.seq);
            }
        }
        self.call_views(&p, &mut out);
        if self.ranked_offsets {
            rank_offsets(&mut out.view);
        }
        out
    }

    /// Each key's progress and activity.
    fn key_views(&self, p: &Projection, view: &mut View) {
        for kp in &p.keys {
            let Some(k) = self.key(&kp.key, &mut view.problems) else {
                continue;
            };
            let v = &mut view.keys[k];
            (v.next_seq, v.finished, v.next_action) = progress(&self.names, kp);
            v.queued = kp.queue.first().map(|q| q.0).into_iter().collect();
            v.queued.extend(kp.pending_inputs.iter().copied());
        }
        for a in &p.activity {
            let Some(k) = self.key(&a.key, &mut view.problems) else {
                continue;
            };
            let v: &mut KeyView = &mut view.keys[k];
            v.in_progress = a.in_progress;
            v.awaiting = a.awaiting.map(u64::from);
            v.saving = a.saving;
            v.ready = a.ready;
        }
    }

    /// One cached state, with its tracked offset in its key's partition.
    fn cached_view(&self, c: &CachedState, problems: &mut Vec<String>) -> Option<CachedView> {
        let names = &self.names;
        let state_key = match names.view_of(&c.state_key) {
            Ok(v) => v,
            Err(e) => {
                problems.push(format!("cache: {e}"));
                return None;
            }
        };
        let offset = match c.offset {
            Some((partition, offset)) => {
                if partition != names.key_partitions[usize::from(state_key.key)] {
                    problems.push(format!(
                        "cache: {state_key:?} tracked in partition {partition}"
                    ));
                }
                self.tracks_offsets.then_some(offset)
            }
            None => {
                problems.push(format!("cache: {state_key:?} has no tracked offset"));
                None
            }
        };
        Some(CachedView {
            state_key,
            state: impl_state_view(&c.state),
            offset,
        })
    }

    /// Partition `partition` of the log from its `records`: its end, the latest record
    /// per state key, and every state that landed per state key.
    fn partition_view(
        &self,
        partition: usize,
        records: &[LoggedState],
        problems: &mut Vec<String>,
    ) -> PartitionView {
        let mut latest = BTreeMap::new();
        let mut landed: BTreeMap<StateKeyView, Vec<_>> = BTreeMap::new();
        for (at, r) in records.iter().enumerate() {
            if r.offset != at as u64 {
                problems.push(format!(
                    "partition {partition}: the record at position {at} has offset {}",
                    r.offset
                ));
            }
            let state_key = match self.names.view_of(&r.state_key) {
                Ok(v) => v,
                Err(e) => {
                    problems.push(format!("partition {partition}: {e}"));
                    continue;
                }
            };
            let state = impl_state_view(&r.state);
            latest.insert(
                state_key,
                LatestView {
                    state_key,
                    state,
                    offset: r.offset,
                },
            );
            let seen = landed.entry(state_key).or_default();
            if !seen.contains(&state) {
                seen.push(state);
            }
        }
        PartitionView {
            end: records.len() as u64,
            latest: latest.into_values().collect(),
            landed: landed
                .into_iter()
                .map(|(state_key, mut states)| {
                    states.sort();
                    LandedView { state_key, states }
                })
                .collect(),
        }
    }

    /// Supplier runs per durable call, and those whose record never landed.
    fn call_views(&self, p: &Projection, out: &mut DriverView) {
        let view = &mut out.view;
        for (counts, into) in [
            (&p.supplier_calls, &mut view.supplier_calls),
            (&p.unlanded_runs, &mut out.unlanded_runs),
        ] {
            for c in counts {
                match self.call_view(&c.call, c.count) {
                    Ok(v) => into.push(v),
                    Err(e) => view.problems.push(format!("supplier runs: {e}")),
                }
            }
            into.sort_by_key(|c| (c.state_key, c.call));
        }
    }
}

/// A key's progress: next sequence number, finished inputs, index of the next action.
fn progress(names: &Names, k: &KeyProjection) -> (u64, u64, u64) {
    let finished = k.last_completed.map_or(0, |s| s + 1);
    let next_action = if k.queue.is_empty() {
        0
    } else {
        (names.actions.len() - k.queue.len()) as u64
    };
    (k.next_seq, finished, next_action)
}

/// A checkpoint's view, and the problems of the keys it names that the model does not.
fn checkpoint_view(names: &Names, cp: &CheckpointProjection) -> (CheckpointView, Vec<String>) {
    let mut keys = vec![(0, 0, 0); names.keys.len()];
    let mut unknown = Vec::new();
    for kp in &cp.keys {
        match names.key_index(&kp.key) {
            Some(k) => keys[usize::from(k)] = progress(names, kp),
            None => unknown.push(format!("checkpoint {}: an unknown key {:?}", cp.id, kp.key)),
        }
    }
    let view = CheckpointView {
        keys,
        marker: cp.marker.clone(),
        awaiting_subtask: false,
    };
    (view, unknown)
}
