//! A model seen through one property that observes every state and never fires.
//!
//! stateright looks each property up by name in its discovery map at every state, and
//! keeps only the latest discovery of each. Two runs want something else: the exhaustive
//! run that needs no traces only records which properties fired ([`FoundBits`]), and the
//! swarm's walks record the depth at which each first fires in a walk
//! (`crate::swarm`). Both wrap the model in [`Observed`]: the same states and actions,
//! and a single `always` property, [`SENTINEL`], that hands every visited state to an
//! [`Observer`] and holds, so the run stays exhaustive (or the walk runs to its end).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use stateright::{Expectation as Kind, Model, Property};

use super::SENTINEL;

/// A property's condition, as stateright holds it.
pub(crate) type Condition<M> = fn(&M, &<M as Model>::State) -> bool;

/// The model's properties, sentinel excluded, as (kind, condition) in model order.
pub(crate) fn conditions<M: Model>(model: &M) -> Vec<(Kind, Condition<M>)> {
    model
        .properties()
        .into_iter()
        .filter(|p| p.name != SENTINEL)
        .map(|p| (p.expectation, p.condition))
        .collect()
}

/// Whether `condition` at `state` is what its property looks for: a violation of an
/// `always` property, a witness of a `sometimes` one.
pub(crate) fn fires<M: Model>(
    kind: &Kind,
    condition: Condition<M>,
    model: &M,
    s: &M::State,
) -> bool {
    condition(model, s) == (*kind == Kind::Sometimes)
}

/// What the wrapper's one property does at each state it is called on.
pub(crate) trait Observer<M: Model>: Send + Sync {
    /// Called on every state the checker evaluates properties at, in its order.
    fn observe(&self, model: &M, state: &M::State);
}

/// `model` with one property that hands each state to `observer` and never fires.
pub(crate) struct Observed<M, O> {
    pub(crate) model: M,
    pub(crate) observer: Arc<O>,
}

impl<M: Clone, O> Clone for Observed<M, O> {
    fn clone(&self) -> Self {
        Observed {
            model: self.model.clone(),
            observer: Arc::clone(&self.observer),
        }
    }
}

impl<M: Model, O: Observer<M>> Model for Observed<M, O> {
    type State = M::State;
    type Action = M::Action;

    fn init_states(&self) -> Vec<M::State> {
        self.model.init_states()
    }

    fn actions(&self, state: &M::State, actions: &mut Vec<M::Action>) {
        self.model.actions(state, actions)
    }

    fn next_state(&self, state: &M::State, action: M::Action) -> Option<M::State> {
        self.model.next_state(state, action)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![Property::always(SENTINEL, |o: &Self, state: &M::State| {
            o.observer.observe(&o.model, state);
            true
        })]
    }

    fn within_boundary(&self, state: &M::State) -> bool {
        self.model.within_boundary(state)
    }
}

/// Which properties have fired, one bit each: a model's properties as one, for an
/// exhaustive run that needs no traces. A property already found is not evaluated
/// again, as stateright skips discovered ones. Safety and reachability properties only:
/// an `eventually` property depends on the path, not the state.
pub(crate) struct FoundBits<M: Model> {
    conditions: Vec<(Kind, Condition<M>)>,
    found: AtomicU64,
}

impl<M: Model> FoundBits<M> {
    /// `model` observed for its discoveries; `None` when its properties cannot be merged
    /// (an `eventually` one, or over 64).
    pub(crate) fn observe(model: M) -> Option<Observed<M, FoundBits<M>>> {
        let conditions = conditions(&model);
        let mergeable = conditions.len() <= 64
            && conditions
                .iter()
                .all(|(kind, _)| matches!(kind, Kind::Always | Kind::Sometimes));
        mergeable.then(|| Observed {
            model,
            observer: Arc::new(FoundBits {
                conditions,
                found: AtomicU64::new(0),
            }),
        })
    }

    /// Indices (in `properties()` order, sentinel excluded) of the discovered properties.
    pub(crate) fn discovered(&self) -> impl Iterator<Item = usize> + '_ {
        let found = self.found.load(Ordering::Acquire);
        (0..self.conditions.len()).filter(move |i| found & (1 << i) != 0)
    }
}

impl<M: Model> Observer<M> for FoundBits<M> {
    fn observe(&self, model: &M, state: &M::State) {
        let found = self.found.load(Ordering::Relaxed);
        let mut now = 0u64;
        for (i, (kind, condition)) in self.conditions.iter().enumerate() {
            if found & (1 << i) == 0 && fires(kind, *condition, model, state) {
                now |= 1 << i;
            }
        }
        if now != 0 {
            self.found.fetch_or(now, Ordering::AcqRel);
        }
    }
}
