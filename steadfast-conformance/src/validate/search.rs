//! The search both validators share: the set of model places consistent with the events
//! read so far, advanced one logged event at a time.
//!
//! A place is a model state and the events still owed by the step under way (a step
//! that logs several events leaves the set part-way through it). Taking an event keeps
//! the places whose next owed event it is, and from every place with nothing owed, every
//! observable step whose first event it is, after any number of the model's
//! unobservable steps (steps that log nothing). Expansions are memoised per state.

use std::collections::{HashMap, HashSet};
use std::hash::Hash;
use std::rc::Rc;

/// A model seen through its log: which steps are enabled, where they lead, and which
/// events each step logs (none for an unobservable step).
pub(super) trait Observed {
    type State: Clone + Eq + Hash;
    type Action: Clone;
    type Record: Clone + Eq + Hash;

    /// Most memoised expansions before the memo is cleared (0: no memo, for models whose
    /// states are rarely met twice).
    const MEMO_LIMIT: usize;

    /// The enabled steps of `state`, appended to `out`.
    fn actions(&self, state: &Self::State, out: &mut Vec<Self::Action>);
    /// The state `action` leads to, if it is taken.
    fn next(&self, state: &Self::State, action: &Self::Action) -> Option<Self::State>;
    /// The events `action` logs, taken in `state`.
    fn records(&self, state: &Self::State, action: &Self::Action) -> Vec<Self::Record>;
}

/// A place in the model: a state, and the events still owed by the step under way.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Entry<S, R> {
    pub(super) state: S,
    rest: Rc<[R]>,
    at: usize,
}

impl<S, R> Entry<S, R> {
    /// A place at `state` that still owes `owed`.
    pub(super) fn new(state: S, owed: Vec<R>) -> Self {
        Entry {
            state,
            rest: owed.into(),
            at: 0,
        }
    }

    /// The events the step under way still owes.
    pub(super) fn owed(&self) -> &[R] {
        &self.rest[self.at..]
    }
}

/// An observable step out of a state's unobservable closure: the state it is taken in,
/// the step, and its events (never empty). The state it leads to is computed only for a
/// step whose first event is the logged one.
pub(super) struct Step<S, A, R> {
    from: S,
    action: A,
    events: Rc<[R]>,
}

/// The observable steps out of a state.
type Expansion<S, A, R> = Rc<Vec<Step<S, A, R>>>;

/// The memo of a model's expansions.
type Memo<P> = HashMap<
    <P as Observed>::State,
    Expansion<<P as Observed>::State, <P as Observed>::Action, <P as Observed>::Record>,
>;

/// The model and the memo of its expansions.
pub(super) struct Search<P: Observed> {
    pub(super) observed: P,
    memo: Memo<P>,
    actions: Vec<P::Action>,
}

impl<P: Observed> Search<P> {
    pub(super) fn new(observed: P) -> Self {
        Search {
            observed,
            memo: HashMap::new(),
            actions: Vec::new(),
        }
    }

    /// Every observable step out of `state`, after any unobservable ones.
    pub(super) fn expand(&mut self, state: &P::State) -> Expansion<P::State, P::Action, P::Record> {
        if let Some(e) = self.memo.get(state) {
            return e.clone();
        }
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        let mut todo = vec![state.clone()];
        seen.insert(state.clone());
        while let Some(s) = todo.pop() {
            self.actions.clear();
            self.observed.actions(&s, &mut self.actions);
            for action in std::mem::take(&mut self.actions) {
                let events = self.observed.records(&s, &action);
                if events.is_empty() {
                    if let Some(next) = self.observed.next(&s, &action) {
                        if seen.insert(next.clone()) {
                            todo.push(next);
                        }
                    }
                } else {
                    out.push(Step {
                        from: s.clone(),
                        action,
                        events: Rc::from(events),
                    });
                }
            }
        }
        let out = Rc::new(out);
        if P::MEMO_LIMIT > 0 {
            if self.memo.len() >= P::MEMO_LIMIT {
                self.memo.clear();
            }
            self.memo.insert(state.clone(), out.clone());
        }
        out
    }
}

/// Most places one projection may have at once: a log that names too little to follow
/// is refused rather than followed with unbounded memory.
pub const MAX_PLACES: usize = 100_000;

/// More places than the limit were possible after an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct TooWide(pub(super) usize);

impl TooWide {
    /// The one-line reason, for the event's line.
    pub(super) fn why(self) -> String {
        format!(
            "more than {} model places are possible at once: the log names too little to follow",
            self.0
        )
    }
}

/// One projection of a log being checked: its possible places.
pub(super) struct Tracker<S, R> {
    pub(super) frontier: Vec<Entry<S, R>>,
    /// Most places at once ([`MAX_PLACES`] unless a test lowers it).
    pub(super) limit: usize,
    /// The safety properties (by index) found failing on every path already.
    pub(super) violated: u64,
}

impl<S: Clone + Eq + Hash, R: Clone + Eq + Hash> Tracker<S, R> {
    pub(super) fn new(start: Entry<S, R>) -> Self {
        Tracker {
            frontier: vec![start],
            limit: MAX_PLACES,
            violated: 0,
        }
    }

    /// Takes `record`; false when no possible place explains it (the frontier is then
    /// left as it was, for the report); an error when more places than the limit would
    /// be possible.
    pub(super) fn take<P>(&mut self, search: &mut Search<P>, record: &R) -> Result<bool, TooWide>
    where
        P: Observed<State = S, Record = R>,
    {
        let mut next: Vec<Entry<S, R>> = Vec::new();
        let mut seen: HashSet<Entry<S, R>> = HashSet::new();
        for entry in &self.frontier {
            if let Some(first) = entry.owed().first() {
                if first == record {
                    let e = Entry {
                        at: entry.at + 1,
                        ..entry.clone()
                    };
                    if seen.insert(e.clone()) {
                        next.push(e);
                    }
                }
                continue;
            }
            for step in search.expand(&entry.state).iter() {
                if step.events[0] != *record {
                    continue;
                }
                let Some(state) = search.observed.next(&step.from, &step.action) else {
                    continue;
                };
                let e = Entry {
                    state,
                    rest: step.events.clone(),
                    at: 1,
                };
                if seen.insert(e.clone()) {
                    next.push(e);
                }
            }
            if next.len() > self.limit {
                return Err(TooWide(self.limit));
            }
        }
        if next.is_empty() {
            return Ok(false);
        }
        self.frontier = next;
        Ok(true)
    }

    /// What the possible places expect next, at most a few, each as `render` shows it.
    pub(super) fn expected<P>(
        &self,
        search: &mut Search<P>,
        render: impl Fn(&R) -> String,
    ) -> Vec<String>
    where
        P: Observed<State = S, Record = R>,
    {
        let mut out: Vec<String> = Vec::new();
        let mut add = |r: &R| {
            let text = render(r);
            if !out.contains(&text) && out.len() < 8 {
                out.push(text);
            }
        };
        for entry in &self.frontier {
            match entry.owed().first() {
                Some(r) => add(r),
                None => {
                    for step in search.expand(&entry.state).iter() {
                        add(&step.events[0]);
                    }
                }
            }
        }
        out
    }

    /// The safety properties (of `safety`, at most 64) that now fail in every possible
    /// place and did not before, by name; each is reported once.
    pub(super) fn newly_broken<M>(
        &mut self,
        model: &M,
        safety: &[stateright::Property<M>],
    ) -> Vec<&'static str>
    where
        M: stateright::Model<State = S>,
    {
        let mut out = Vec::new();
        for (i, property) in safety.iter().enumerate().take(64) {
            let bit = 1u64 << i;
            if self.violated & bit == 0
                && self
                    .frontier
                    .iter()
                    .all(|e| !(property.condition)(model, &e.state))
            {
                self.violated |= bit;
                out.push(property.name);
            }
        }
        out
    }

    /// Whether some possible place has every step complete.
    pub(super) fn complete(&self) -> bool {
        self.frontier.iter().any(|e| e.owed().is_empty())
    }

    /// How many distinct states are possible, and the first `limit` of them as JSON,
    /// for a report.
    pub(super) fn states(&self, limit: usize) -> (usize, Vec<String>)
    where
        S: serde::Serialize,
    {
        let mut distinct: HashSet<&S> = HashSet::new();
        let mut shown = Vec::new();
        for e in &self.frontier {
            if distinct.insert(&e.state) && shown.len() < limit {
                shown.push(serde_json::to_string(&e.state).unwrap_or_default());
            }
        }
        (distinct.len(), shown)
    }
}
