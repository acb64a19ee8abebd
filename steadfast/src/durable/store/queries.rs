//! What the store holds, read without changing it: a state by its key, with or without
//! its acknowledged offset, the whole cache, and counts.

use std::collections::BTreeMap;

use super::{search, ActionStateStore, Tracked};
use crate::durable::log::{Offset, Partition};
use crate::durable::{ActionState, StateKey};

impl ActionStateStore {
    /// The cached state of `key`, if any.
    pub fn get(&self, key: &StateKey) -> Option<&ActionState> {
        self.state_of(&key.key, key.seq, &key.action)
    }

    /// The cached state of input `seq` of `key` for `action`, if any (a lookup that
    /// needs no [`StateKey`]).
    pub(crate) fn state_of(&self, key: &str, seq: u64, action: &str) -> Option<&ActionState> {
        let list = self.states.get(key)?;
        search(list, seq, action).ok().map(|i| &list[i].state)
    }

    /// Number of cached states.
    pub fn cached_len(&self) -> usize {
        self.states.values().map(Vec::len).sum()
    }

    /// Every cached state with its key, in no particular order.
    fn tracked(&self) -> impl Iterator<Item = (StateKey, &Tracked)> {
        self.states.iter().flat_map(|(key, list)| {
            list.iter().map(|t| {
                let sk = StateKey {
                    key: key.clone(),
                    seq: t.seq,
                    action: t.action.clone(),
                };
                (sk, t)
            })
        })
    }

    /// A copy of every cached state, ordered by state key.
    pub fn cache(&self) -> BTreeMap<StateKey, ActionState> {
        self.tracked()
            .map(|(sk, t)| (sk, t.state.clone()))
            .collect()
    }

    /// Latest acknowledged (partition, offset) of every cached state, ordered by
    /// state key.
    pub fn latest_offsets(&self) -> BTreeMap<StateKey, (Partition, Offset)> {
        self.tracked()
            .map(|(sk, t)| (sk, (t.partition, t.offset)))
            .collect()
    }

    /// The latest acknowledged (partition, offset) of `key`'s cached state, if any: one
    /// entry of [`ActionStateStore::latest_offsets`], without building the map.
    pub fn offset_of(&self, key: &StateKey) -> Option<(Partition, Offset)> {
        self.entry_of(key).map(|(_, p, o)| (p, o))
    }

    /// The cached state of `key` with its latest acknowledged (partition, offset):
    /// [`ActionStateStore::get`] and [`ActionStateStore::offset_of`] in one lookup.
    pub fn entry_of(&self, key: &StateKey) -> Option<(&ActionState, Partition, Offset)> {
        let list = self.states.get(key.key.as_str())?;
        search(list, key.seq, &key.action)
            .ok()
            .map(|i| (&list[i].state, list[i].partition, list[i].offset))
    }

    /// Number of cached states of input key `key`: how many entries of
    /// [`ActionStateStore::cache`] have that key, without building the map.
    pub fn cached_count_of(&self, key: &str) -> usize {
        self.states.get(key).map_or(0, Vec::len)
    }

    /// Number of keys with per-key tracking (keys with live state).
    pub fn tracked_keys(&self) -> usize {
        self.states.len()
    }
}
