//! The per-state-key containers: the log's records, the store's cache and its
//! acknowledged offsets, each an array with one entry per state key behind `get`/`set`,
//! apart from the state's other fields because they share one layout and one `Debug` and
//! serde form (their present entries, named by state key).

use std::num::NonZeroU8;

use serde::{Serialize, Serializer};

use super::{ActionState, StateKey, StateSet, MAX_SLOTS};

/// What the log holds of one state key's records. Replay is last-writer-wins per state
/// key, so the model keeps what a replay or a property can observe: the latest record
/// and its offset, and the set of states that ever landed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Records {
    /// The latest record's state.
    pub latest: ActionState,
    /// The latest record's offset in the key's partition.
    pub offset: u8,
    /// Every state that ever landed for the state key.
    pub landed: StateSet,
}

/// The present entries of a per-state-key container, named by state key, in slot order.
fn present<T>(get: impl Fn(usize) -> Option<T>) -> impl Iterator<Item = (StateKey, T)> {
    (0..MAX_SLOTS).filter_map(move |slot| Some((StateKey::of_slot(slot), get(slot)?)))
}

/// `Debug` of a per-state-key container: its present entries, as a map by state key.
macro_rules! debug_entries {
    ($($container:ty),*) => {$(
        impl std::fmt::Debug for $container {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_map().entries(self.entries()).finish()
            }
        }
    )*};
}

debug_entries!(Log, Cache, AckedOffsets);

/// The log as the model sees it: per state key, what its records show once one landed.
///
/// Kept field by field (one array per field, absent entries zero) so the fingerprint
/// reads whole arrays; [`Log::get`] and [`Log::set`] are the only way in, so an entry is
/// either wholly present or wholly absent.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Log {
    /// The latest record's state code, zero for none.
    pub(super) latest: [u8; MAX_SLOTS],
    pub(super) offset: [u8; MAX_SLOTS],
    pub(super) landed: [u16; MAX_SLOTS],
}

impl Log {
    /// Nothing landed.
    pub const EMPTY: Log = Log {
        latest: [0; MAX_SLOTS],
        offset: [0; MAX_SLOTS],
        landed: [0; MAX_SLOTS],
    };

    /// What the records of the state key in `slot` show, if any landed.
    pub fn get(&self, slot: usize) -> Option<Records> {
        NonZeroU8::new(self.latest[slot]).map(|latest| Records {
            latest: ActionState(latest),
            offset: self.offset[slot],
            landed: StateSet(self.landed[slot]),
        })
    }

    /// Replaces what the records of the state key in `slot` show.
    pub fn set(&mut self, slot: usize, records: Option<Records>) {
        self.latest[slot] = state_byte(records.map(|r| r.latest));
        self.offset[slot] = records.map_or(0, |r| r.offset);
        self.landed[slot] = records.map_or(0, |r| r.landed.0);
    }

    /// Every state key with a landed record, in slot order.
    pub fn entries(&self) -> impl Iterator<Item = (StateKey, Records)> + '_ {
        present(|slot| self.get(slot))
    }
}

/// One landed state key's records, with its name.
#[derive(Serialize)]
struct LogEntry {
    state_key: StateKey,
    #[serde(flatten)]
    records: Records,
}

impl Serialize for Log {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(
            self.entries()
                .map(|(state_key, records)| LogEntry { state_key, records }),
        )
    }
}

/// The store's cache: per state key, the action state it holds, if any.
///
/// One byte per state key (the state's code, zero for none) so the fingerprint reads the
/// whole array; [`Cache::get`] and [`Cache::set`] are the only way in.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Cache(pub(super) [u8; MAX_SLOTS]);

impl Cache {
    /// Nothing cached.
    pub const EMPTY: Cache = Cache([0; MAX_SLOTS]);

    /// The cached state of the state key in `slot`.
    pub fn get(&self, slot: usize) -> Option<ActionState> {
        NonZeroU8::new(self.0[slot]).map(ActionState)
    }

    /// Caches `state` (or nothing) for the state key in `slot`.
    pub fn set(&mut self, slot: usize, state: Option<ActionState>) {
        self.0[slot] = state_byte(state);
    }

    /// Whether any state key in `slots` has a cached state.
    pub fn any(&self, slots: std::ops::Range<usize>) -> bool {
        self.0[slots].iter().any(|&b| b != 0)
    }

    /// Every cached state key and its state, in slot order.
    pub fn entries(&self) -> impl Iterator<Item = (StateKey, ActionState)> + '_ {
        present(|slot| self.get(slot))
    }
}

/// One cached state, with its state key's name.
#[derive(Serialize)]
struct CacheEntry {
    state_key: StateKey,
    state: ActionState,
}

impl Serialize for Cache {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(
            self.entries()
                .map(|(state_key, state)| CacheEntry { state_key, state }),
        )
    }
}

/// Per state key, the latest acknowledged offset the store tracks, if any.
///
/// One byte per state key (the offset plus one, zero for none) so the fingerprint reads
/// the whole array; [`AckedOffsets::get`] and [`AckedOffsets::set`] are the only way in.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct AckedOffsets(pub(super) [u8; MAX_SLOTS]);

impl AckedOffsets {
    /// No offset tracked.
    pub const NONE: AckedOffsets = AckedOffsets([0; MAX_SLOTS]);

    /// The acknowledged offset of the state key in `slot`.
    pub fn get(&self, slot: usize) -> Option<u8> {
        self.0[slot].checked_sub(1)
    }

    /// Tracks `offset` (or nothing) for the state key in `slot`.
    pub fn set(&mut self, slot: usize, offset: Option<u8>) {
        debug_assert!(offset.is_none_or(|o| o < u8::MAX), "offsets stay below 255");
        self.0[slot] = offset.map_or(0, |o| o + 1);
    }

    /// Whether any state key in `slots` has a tracked offset.
    pub fn any(&self, slots: std::ops::Range<usize>) -> bool {
        self.0[slots].iter().any(|&b| b != 0)
    }

    /// Every tracked state key and its offset, in slot order.
    pub fn entries(&self) -> impl Iterator<Item = (StateKey, u8)> + '_ {
        present(|slot| self.get(slot))
    }
}

/// One tracked offset, with its state key's name.
#[derive(Serialize)]
struct AckedEntry {
    state_key: StateKey,
    offset: u8,
}

impl Serialize for AckedOffsets {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(
            self.entries()
                .map(|(state_key, offset)| AckedEntry { state_key, offset }),
        )
    }
}

/// A slot's state as one byte, 0 for none.
#[inline(always)]
fn state_byte(state: Option<ActionState>) -> u8 {
    state.map_or(0, |s| s.0.get())
}
