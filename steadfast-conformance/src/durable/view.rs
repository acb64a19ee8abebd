//! The projection both sides are compared in: the model's state and the runtime's, as
//! views in model indices (field by field in `specs/conformance.md`), and the helpers that
//! fill them.

use super::*;

/// A state key in model indices.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct StateKeyView {
    /// Key index.
    pub key: u8,
    /// Input sequence number.
    pub seq: u64,
    /// Action index.
    pub action: u8,
}

/// An action state: saved call results and the completed flag.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct StateView {
    /// Saved call results.
    pub calls: u64,
    /// Completed.
    pub completed: bool,
}

/// Keyed state and progress of one key.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct KeyView {
    /// Sequence number the next input gets.
    pub next_seq: u64,
    /// Finished inputs (last completed sequence + 1).
    pub finished: u64,
    /// Index of the next action of input `finished` (0 when none is queued).
    pub next_action: u64,
    /// Sequence numbers of inputs delivered and not finished, head first.
    pub queued: Vec<u64>,
    /// An action of this key is in progress.
    pub in_progress: bool,
    /// The index of the call whose outcome the key waits for.
    pub awaiting: Option<u64>,
    /// The key waits for its put's answer.
    pub saving: bool,
    /// The key has a step to take without outside input.
    pub ready: bool,
}

/// One cached state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CachedView {
    /// Whose.
    pub state_key: StateKeyView,
    /// The state.
    pub state: StateView,
    /// The latest acknowledged offset the store tracks for it (the recovery marker's
    /// input); left out (`None`) when the model's design tracks no offsets.
    pub offset: Option<u64>,
}

/// What a replay of a state key reads last, and where.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct LatestView {
    /// Whose.
    pub state_key: StateKeyView,
    /// The latest record's state.
    pub state: StateView,
    /// Its offset.
    pub offset: u64,
}

/// Every state that ever landed for a state key.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LandedView {
    /// Whose.
    pub state_key: StateKeyView,
    /// The states, sorted.
    pub states: Vec<StateView>,
}

/// One log partition.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PartitionView {
    /// End offset: records landed.
    pub end: u64,
    /// Per state key, the latest record.
    pub latest: Vec<LatestView>,
    /// Per state key, every state that landed.
    pub landed: Vec<LandedView>,
}

/// A checkpoint: keyed state per key and the recovery markers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CheckpointView {
    /// Per key: (next sequence number, finished inputs, next action); zeros for the
    /// keys of a subtask that has not taken its part yet.
    pub keys: Vec<(u64, u64, u64)>,
    /// Per subtask (subtask-major) and partition, the subtask's marker: the offset a
    /// restore replays from is their minimum per partition. Only subtask 0's while
    /// subtask 1 has not taken its part.
    pub marker: Vec<u64>,
    /// Subtask 1 has not taken its part yet (`subtasks` 2).
    pub awaiting_subtask: bool,
}

/// What one operator subtask holds (`subtasks` 2): the keys whose keyed state it
/// holds, and the state keys it caches. A subtask holding another's key, or a replay
/// that loaded another subtask's records, shows here.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SubtaskView {
    /// Keys with keyed state (an input delivered) in this subtask.
    pub keys: Vec<u8>,
    /// State keys in this subtask's cache, the in-flight put's left out.
    pub cache: Vec<StateKeyView>,
}

/// Supplier runs of one durable call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CallView {
    /// Whose.
    pub state_key: StateKeyView,
    /// Call index.
    pub call: u64,
    /// Supplier runs.
    pub runs: u64,
}

/// The observable projection both sides produce.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct View {
    /// An operator runs (false between a crash and a restore).
    pub up: bool,
    /// The operator failed (a put's error reached the action).
    pub failed: bool,
    /// Cached states (as the store counts them), the in-flight put's state key left out.
    pub cache_size: u64,
    /// Keys with per-key tracking (as the store counts them): keys with a cached state,
    /// the in-flight put's state key left out.
    pub tracked_keys: u64,
    /// Per key (empty while down).
    pub keys: Vec<KeyView>,
    /// The store's cache, by state key, without the in-flight put's state key (empty
    /// while down); with two subtasks, both stores' entries.
    pub cache: Vec<CachedView>,
    /// Per running subtask, what it holds (empty with one subtask, and while down).
    pub subtasks: Vec<SubtaskView>,
    /// The log per partition.
    pub log: Vec<PartitionView>,
    /// The checkpoints taken and not completed, oldest first.
    pub pending: Vec<CheckpointView>,
    /// The latest completed checkpoint.
    pub completed: Option<CheckpointView>,
    /// Per key, committed outputs' sequence numbers.
    pub committed: Vec<Vec<u64>>,
    /// Supplier runs per durable call that ran.
    pub supplier_calls: Vec<CallView>,
    /// What the runtime side could not project (undecodable records, unknown names);
    /// always empty on the model side.
    pub problems: Vec<String>,
}

/// Replaces every offset of `view` by its rank among the partition's offsets in the
/// view (end, latest records, markers): what the model's `compact-offsets` keeps of
/// them (order and equality). Used only when the model compacts.
pub(super) fn rank_offsets(view: &mut View) {
    // Key k's states are in partition k mod partitions, the model's placement.
    let partitions = view.log.len().max(1) as u64;
    for (p, part) in view.log.iter_mut().enumerate() {
        let mut seen: Vec<u64> = part.latest.iter().map(|l| l.offset).collect();
        seen.push(part.end);
        let mine = |c: &CachedView| u64::from(c.state_key.key) % partitions == p as u64;
        seen.extend(
            view.cache
                .iter()
                .filter(|c| mine(c))
                .filter_map(|c| c.offset),
        );
        for c in view.pending.iter().chain(&view.completed) {
            seen.extend(c.marker.iter().skip(p).step_by(partitions as usize));
        }
        seen.sort_unstable();
        seen.dedup();
        let rank = |v: &mut u64| *v = seen.partition_point(|u| u < v) as u64;
        part.latest.iter_mut().for_each(|l| rank(&mut l.offset));
        rank(&mut part.end);
        view.cache
            .iter_mut()
            .filter(|c| mine(c))
            .for_each(|c| c.offset.iter_mut().for_each(rank));
        for c in view.pending.iter_mut().chain(view.completed.iter_mut()) {
            c.marker
                .iter_mut()
                .skip(p)
                .step_by(partitions as usize)
                .for_each(rank);
        }
    }
}

pub(super) fn state_view(st: ActionState) -> StateView {
    StateView {
        calls: u64::from(st.calls()),
        completed: st.completed(),
    }
}

pub(super) fn impl_state_view(st: &steadfast::durable::ActionState) -> StateView {
    StateView {
        calls: st.call_results.len() as u64,
        completed: st.completed,
    }
}

pub(super) fn sk_view(sk: StateKey) -> StateKeyView {
    StateKeyView {
        key: sk.key,
        seq: u64::from(sk.seq),
        action: sk.action,
    }
}

/// `out` holding exactly `n` entries; those it keeps keep their allocations.
pub(super) fn resize<T: Default>(out: &mut Vec<T>, n: usize) {
    out.truncate(n);
    out.resize_with(n, T::default);
}

/// `out` holding exactly `items`, in its own allocation where it fits.
pub(super) fn refill<T>(out: &mut Vec<T>, items: impl IntoIterator<Item = T>) {
    out.clear();
    out.extend(items);
}

/// `out` present or absent as `present` says; when present, the view to fill (the one
/// there before, if any, to reuse its allocations).
pub(super) fn present<T: Default>(out: &mut Option<T>, present: bool) -> Option<&mut T> {
    if present {
        Some(out.get_or_insert_with(T::default))
    } else {
        *out = None;
        None
    }
}

pub(super) fn model_checkpoint(m: &Durable, c: &model::Checkpoint, out: &mut CheckpointView) {
    // Subtask 1's entries are placeholders until it takes its part.
    let taken = |k: usize| !c.awaiting_subtask || m.owner(false, k as u8) == 0;
    refill(
        &mut out.keys,
        (0..m.bounds.keys as usize).map(|k| {
            if !taken(k) {
                return (0, 0, 0);
            }
            (
                u64::from(c.next_seq[k]),
                u64::from(c.finished[k]),
                u64::from(c.next_action[k]),
            )
        }),
    );
    let subtasks = if c.awaiting_subtask {
        1
    } else {
        m.bounds.subtasks
    };
    refill(
        &mut out.marker,
        (0..subtasks).flat_map(|t| {
            (0..m.bounds.partitions as usize).map(move |p| u64::from(c.marker[m.marker_slot(t, p)]))
        }),
    );
    out.awaiting_subtask = c.awaiting_subtask;
}

/// (next sequence number, finished, next action) of a key's keyed state.
pub(super) fn impl_key_progress(
    names: &Names,
    ks: Option<&steadfast::durable::KeyState>,
) -> (u64, u64, u64) {
    let Some(ks) = ks else {
        return (0, 0, 0);
    };
    let finished = ks.last_completed.map_or(0, |s| s + 1);
    let next_action = if ks.queue.is_empty() {
        0
    } else {
        (names.actions.len() - ks.queue.len()) as u64
    };
    (ks.next_seq, finished, next_action)
}

/// The queued inputs of a key's keyed state, head first.
pub(super) fn impl_key_queued(
    ks: Option<&steadfast::durable::KeyState>,
) -> impl Iterator<Item = u64> + '_ {
    ks.into_iter().flat_map(|ks| {
        ks.queue
            .front()
            .map(|q| q.seq)
            .into_iter()
            .chain(ks.pending_inputs.iter().map(|p| p.seq))
    })
}
