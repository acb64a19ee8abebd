//! Cross-checks of the operator's own bookkeeping: its lists against its per-key
//! activity, and its store's whole-cache accessors against each other.

use super::*;
use std::collections::HashSet;

/// The operator's lists (keys in progress, outstanding calls, puts in flight) agree with
/// its per-key activity (`activities`, by model key, as the view read it); a
/// disagreement is a problem. Compared entry by entry, without building the lists the
/// activities imply.
pub(super) fn cross_check_lists(
    op: &Operator,
    names: &Names,
    activities: &[KeyActivity],
    problems: &mut Vec<String>,
) {
    let of = |key: &str| names.key_index(key).map(|k| activities[usize::from(k)]);
    let count = |f: fn(&KeyActivity) -> bool| activities.iter().filter(|a| f(a)).count();
    let in_progress = op.keys_in_progress();
    if in_progress.len() != count(|a| a.in_progress)
        || in_progress.windows(2).any(|w| w[0] >= w[1])
        || in_progress
            .iter()
            .any(|k| !of(k).is_some_and(|a| a.in_progress))
    {
        problems.push(format!(
            "keys_in_progress {in_progress:?} disagree with the keys' activity"
        ));
    }
    let calls = op.outstanding_calls();
    if calls.len() != count(|a| a.awaiting.is_some())
        || calls
            .iter()
            .any(|c| of(&c.key).map(|a| a.awaiting) != Some(Some(c.index)))
    {
        problems.push(format!(
            "outstanding_calls {calls:?} disagree with the keys' activity"
        ));
    }
    let puts = op.puts_in_flight();
    if puts.len() != count(|a| a.saving.is_some())
        || puts.windows(2).any(|w| w[0].0 >= w[1].0)
        || puts
            .iter()
            .any(|(k, p)| of(k).map(|a| a.saving) != Some(Some(*p)))
    {
        problems.push(format!(
            "puts_in_flight {puts:?} disagree with the keys' activity"
        ));
    }
}

/// Most stores a thread remembers as checked by [`cross_check_cache`].
const CHECKED_STORES: usize = 4096;

thread_local! {
    /// Stores [`cross_check_cache`] found consistent on this thread. The check reads
    /// only the store, so an equal store passes it again: a replay meets few distinct
    /// stores at its checkpoint completions and restores (57 in 19,965 checks at
    /// `conform durable --inputs 1 --compact-offsets false`).
    static CHECKED: RefCell<HashSet<ActionStateStore>> = RefCell::new(HashSet::new());
}

/// The store's whole-cache accessors agree with its count and with each other; checked
/// once per distinct store a thread meets.
pub(super) fn cross_check_cache(op: &Operator, reports: &mut Vec<String>) {
    let store = op.store();
    if CHECKED.with(|c| c.borrow().contains(store)) {
        return;
    }
    let before = reports.len();
    cross_check_store(store, reports);
    if reports.len() == before {
        CHECKED.with(|c| {
            let mut checked = c.borrow_mut();
            if checked.len() >= CHECKED_STORES {
                checked.clear();
            }
            checked.insert(store.clone());
        });
    }
}

fn cross_check_store(store: &ActionStateStore, reports: &mut Vec<String>) {
    let cache = store.cache();
    let offsets = store.latest_offsets();
    if cache.len() != store.cached_len()
        || offsets.len() != cache.len()
        || !cache.keys().eq(offsets.keys())
    {
        reports.push(format!(
            "the store's cache ({} states), tracked offsets ({}) and count ({}) disagree",
            cache.len(),
            offsets.len(),
            store.cached_len()
        ));
    }
    // The store's public put halves, handed each cached state and its tracked offset,
    // build the same store: each record goes to the partition tracked for its state and
    // is the record format's encoding of it.
    let mut again = ActionStateStore::new_at(store.partition_count(), store.epoch());
    let (mut key, mut value) = (Vec::new(), Vec::new());
    for (sk, state) in &cache {
        let Some(&(partition, offset)) = offsets.get(sk) else {
            continue;
        };
        match again.encode_put(sk, state) {
            Ok(put) => {
                let encoded = encode_record(sk, state, store.epoch(), &mut key, &mut value).is_ok()
                    && (put.key.as_slice(), put.value.as_slice())
                        == (key.as_slice(), value.as_slice());
                if put.partition != partition || !encoded {
                    reports.push(format!(
                        "the put of cached {sk:?} goes to partition {} (tracked in \
                         {partition}) or is not its record format's encoding",
                        put.partition
                    ));
                }
            }
            Err(e) => reports.push(format!("cached {sk:?} does not encode: {e}")),
        }
        again.acknowledge(sk, state.clone(), offset);
    }
    if again.cache() != cache || again.latest_offsets() != offsets {
        reports.push("the store's put halves build another store from its cache".into());
    }
}
