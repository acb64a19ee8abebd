//! A saved action state ([`ActionState`], one byte) and a set of them ([`StateSet`], one
//! bit per state): the value types the log and the store hold, with their bit coding
//! and their serde form, kept apart from the containers that hold them.

use std::num::NonZeroU8;

use serde::{Serialize, Serializer};

use super::MAX_CALLS;

/// One action's saved state: which calls' results it holds, in the order they were
/// saved, and whether it completed (completing clears the call results).
///
/// Results are appended at the action's call index, and the runtime advances that index
/// only once the put of a result succeeded; after a put error the action catches, the
/// next call's result takes the failed one's place, so a saved list may skip a call
/// (`[call 0, call 2]`). Calls run in order, so the list is increasing and is kept as
/// the set of calls it holds.
///
/// Held as one non-zero byte (one plus the held calls' bits shifted past the completed
/// bit), so that `Option<ActionState>` is one byte too and the fingerprint reads a
/// slot's state without a branch; the fields are read through [`ActionState::holds`],
/// [`ActionState::calls`] and [`ActionState::completed`].
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct ActionState(pub(super) NonZeroU8);

/// The bits of a set of calls below [`MAX_CALLS`].
const ALL_CALLS: u8 = (1 << MAX_CALLS) - 1;

impl ActionState {
    /// The state of a completed action.
    pub const COMPLETED: ActionState = ActionState::new(0, true);

    const fn new(held: u8, completed: bool) -> ActionState {
        assert!(held & !ALL_CALLS == 0, "a call beyond the model's bound");
        assert!(
            !completed || held == 0,
            "completing clears the call results"
        );
        match NonZeroU8::new(1 + ((held << 1) | completed as u8)) {
            Some(code) => ActionState(code),
            None => unreachable!(),
        }
    }

    /// The state holding the first `calls` call results.
    pub const fn with_calls(calls: u8) -> ActionState {
        ActionState::new((1 << calls) - 1, false)
    }

    /// The state holding the results of the calls in `calls`, in call order.
    pub fn holding(calls: impl IntoIterator<Item = u8>) -> ActionState {
        let held = calls.into_iter().fold(0, |bits, c| bits | 1 << c);
        ActionState::new(held, false)
    }

    fn held_bits(self) -> u8 {
        (self.0.get() - 1) >> 1
    }

    /// Saved call results.
    pub fn calls(self) -> u8 {
        self.held_bits().count_ones() as u8
    }

    /// Whether call `call`'s result is saved.
    pub fn holds(self, call: u8) -> bool {
        self.held_bits() & (1 << call) != 0
    }

    /// The calls whose results are saved, in call (and list) order.
    pub fn held(self) -> impl Iterator<Item = u8> {
        (0..MAX_CALLS as u8).filter(move |&c| self.holds(c))
    }

    /// The list holds the first [`ActionState::calls`] calls' results, none skipped.
    pub fn in_call_order(self) -> bool {
        self.held_bits() & self.held_bits().wrapping_add(1) == 0
    }

    /// The results of the calls below `call` only (the list cleared from there).
    pub fn results_before(self, call: u8) -> ActionState {
        ActionState::new(self.held_bits() & ((1 << call) - 1), false)
    }

    /// This list with call `call`'s result appended (`call` above every held call).
    pub fn with_result(self, call: u8) -> ActionState {
        debug_assert!(
            self.held_bits() >> call == 0,
            "results are appended in call order"
        );
        ActionState::new(self.held_bits() | 1 << call, false)
    }

    /// The action finished; its output is part of the state.
    pub fn completed(self) -> bool {
        (self.0.get() - 1) & 1 == 1
    }

    /// Four bits: the member index of a [`StateSet`].
    pub(super) fn index(self) -> u8 {
        self.0.get() - 1
    }

    pub(super) fn of_index(index: u8) -> ActionState {
        ActionState::new(index >> 1, index & 1 == 1)
    }
}

impl std::fmt::Debug for ActionState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("ActionState");
        d.field("calls", &self.calls());
        if !self.in_call_order() {
            d.field("held", &self.held().collect::<Vec<_>>());
        }
        d.field("completed", &self.completed()).finish()
    }
}

/// The fields' form: `{"calls": n, "completed": b}`, with `"held": [..]`, the calls
/// whose results the list holds, when it skips a call.
#[derive(Serialize, serde::Deserialize)]
struct ActionStateFields {
    calls: u8,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    held: Option<Vec<u8>>,
    completed: bool,
}

impl Serialize for ActionState {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ActionStateFields {
            calls: self.calls(),
            held: (!self.in_call_order()).then(|| self.held().collect()),
            completed: self.completed(),
        }
        .serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for ActionState {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ActionState, D::Error> {
        let f = ActionStateFields::deserialize(d)?;
        let held = f.held.unwrap_or_else(|| (0..f.calls).collect());
        if held.len() != f.calls as usize || held.iter().any(|&c| c as usize >= MAX_CALLS) {
            return Err(serde::de::Error::custom(format!(
                "an action state holds at most {MAX_CALLS} call results, of calls below \
                 {MAX_CALLS}, as many as `calls` ({}) says",
                f.calls
            )));
        }
        if f.completed && f.calls > 0 {
            return Err(serde::de::Error::custom(
                "a completed action state holds no call results",
            ));
        }
        if f.completed {
            return Ok(ActionState::COMPLETED);
        }
        Ok(ActionState::holding(held))
    }
}

/// A set of [`ActionState`]s (every state that fits [`MAX_CALLS`] calls).
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct StateSet(pub(super) u16);

// The largest index, every call's bit and the completed bit, is a bit of a u16.
const _: () = assert!(
    ((ALL_CALLS as usize) << 1) + 1 < 16,
    "an action state's index is a bit of a u16"
);

impl StateSet {
    /// Whether `state` is in the set.
    pub fn contains(self, state: ActionState) -> bool {
        self.0 & (1 << state.index()) != 0
    }

    /// Adds `state`.
    pub fn insert(&mut self, state: ActionState) {
        self.0 |= 1 << state.index();
    }

    /// Whether the set holds a state that saved call `call`'s result.
    pub fn holds_call(self, call: u8) -> bool {
        self.iter().any(|st| st.holds(call))
    }

    /// Two bytes naming the set: equal for equal sets, different otherwise.
    pub fn code(self) -> u16 {
        self.0
    }

    /// The members, in code order.
    pub fn iter(self) -> impl Iterator<Item = ActionState> {
        (0..16u8)
            .filter(move |c| self.0 & (1 << c) != 0)
            .map(ActionState::of_index)
    }
}

impl std::fmt::Debug for StateSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl Serialize for StateSet {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}
