//! Partial-order reduction: at each state the checker follows a *stubborn* subset of the
//! enabled steps instead of all of them, so it skips interleavings of steps that commute
//! while every safety and reachability verdict stays what the full search gives.
//!
//! A model opts in by describing its steps' [`Footprint`]: the state components
//! ([`Cells`]) each step reads and writes, which components the properties read, and
//! which steps *absorb* others (a crash forgets a volatile step: the step followed by the
//! crash ends where the crash alone does). From that the reduction derives, once per
//! model, which steps are dependent; [`audit`] checks the declarations against the model
//! at every reachable state, so a wrong footprint fails a test instead of hiding states.
//!
//! The set followed at a state `s` starts from one enabled, invisible step and is closed
//! under two rules (Valmari's stubborn sets, with absorption added):
//!
//! 1. for an enabled step `t` of the set, every step dependent on `t` joins, unless it
//!    absorbs `t`;
//! 2. for a disabled step `u` of the set, every step that writes the components of one
//!    conjunct of `u`'s guard that is false at `s` ([`Footprint::disabling`]) joins,
//!    unless it absorbs an enabled step of the set.
//!
//! The set is used when its enabled steps are all invisible at `s`: each raises no event
//! and leaves unchanged every view ([`Footprint::views`]) whose components it writes
//! (without views: writes no component a property reads). Otherwise the state is fully
//! expanded. The smallest such set over every enabled seed is taken.
//!
//! Why that keeps every verdict: take any path from `s` and its first step `b` that is in
//! the set or dependent on an enabled step of it. The steps before `b` commute with every
//! enabled step of the set and enable none of its disabled ones. If `b` is in the set it
//! was enabled at `s`, and moving it to the front visits the same states shifted by an
//! invisible step; if `b` absorbs an enabled step `t`, taking `t` first reaches the very
//! state the path reaches after `b`; if no such `b` comes, any enabled step of the set
//! goes first. By induction on the path's length and the state's height, every state of
//! the full graph has a state with the same property values (modulo the event of the
//! step into it, see below) in the reduced graph. The induction needs the state graph to
//! be acyclic (the cycle proviso is then void): `steadfast-model/tests/acyclic.rs`
//! checks both models' graphs at the default settings and the scenarios with the most
//! faults; elsewhere it rests on the models' monotone counters, unchecked. The whole
//! argument, and what the tests hold it to, is in `specs/partial-order.md`.
//!
//! Events: a model's properties may read what the step into a state did (durable's
//! `events`), which every step resets. An invisible step raises none; it may clear the
//! event of the step before it, which is fine as long as a state's events only ever
//! make properties fire, never stop them ([`audit`] checks that too).

use std::collections::HashMap;
use std::fmt::Debug;
use std::hash::{BuildHasher, BuildHasherDefault, Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

use stateright::Model;

mod audit;
mod set;

pub use audit::{audit, Audit, AuditError};
pub use set::Cells;
use set::Steps;

/// The most steps a model's alphabet may have for the reduction.
pub const MAX_STEPS: usize = Steps::CAPACITY;

/// What a model declares of its steps for partial-order reduction.
///
/// Every set is an over-approximation over all states: a step may read or write less
/// than declared, never more. [`audit`] checks the declarations.
pub trait Footprint: Model {
    /// Every step the model can take at its settings, enabled or not (at most
    /// [`MAX_STEPS`]).
    fn alphabet(&self) -> Vec<Self::Action>;

    /// The components `action` reads: its guard and everything its effect depends on,
    /// including the events it raises.
    fn reads(&self, action: &Self::Action) -> Cells;

    /// The components `action` may change.
    fn writes(&self, action: &Self::Action) -> Cells;

    /// For `action` disabled at `state`: pushes onto `conjuncts` the components of each
    /// conjunct of its guard that is false at `state`, so that `action` stays disabled
    /// as long as none of one conjunct's components changes. The reduction takes the
    /// conjunct with the fewest writers. An empty set says no step ever enables
    /// `action`; nothing pushed stands for all of its reads.
    fn disabling(&self, state: &Self::State, action: &Self::Action, conjuncts: &mut Vec<Cells>) {
        let _ = (state, action, conjuncts);
    }

    /// The components the properties read (besides the step's events).
    fn observed(&self) -> Cells;

    /// Views: parts of what the properties read, each a value computed from the
    /// components `views()[i]` alone, such that every property is a function of the
    /// views' values and the step's events. With views, a step that writes a view's
    /// components is still invisible at a state where it leaves the value of every such
    /// view unchanged; the reduction then counts the whole view as read by the step, so
    /// the steps that commute with it cannot change that view either. None by default:
    /// a step is then invisible only when it writes nothing in [`Footprint::observed`].
    fn views(&self) -> Vec<Cells> {
        Vec::new()
    }

    /// The value of view `view` at `state`.
    fn view(&self, state: &Self::State, view: usize) -> u64 {
        let _ = (state, view);
        0
    }

    /// Whether `later` absorbs `earlier`: wherever both are enabled, `later` stays
    /// enabled after `earlier`, and `earlier` then `later` ends in the state `later`
    /// alone reaches (events included). Only asked of dependent pairs.
    fn absorbs(&self, later: &Self::Action, earlier: &Self::Action) -> bool {
        let _ = (later, earlier);
        false
    }

    /// Whether the step into `state` raised no event that a property reads.
    fn quiet(&self, state: &Self::State) -> bool;

    /// `state` without the events of the step into it: what the next steps start from.
    fn core(&self, state: &Self::State) -> Self::State;

    /// The number of components.
    fn cell_count(&self) -> usize;

    /// One value per component of `state` (a hash will do), for [`audit`]'s check that a
    /// step changes no component outside its writes.
    fn cell_values(&self, state: &Self::State) -> Vec<u64>;
}

/// Why a model cannot be reduced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReductionError {
    /// The model declares no footprint.
    Unsupported(&'static str),
    /// The alphabet has more steps than the reduction's sets hold.
    TooManySteps(usize),
    /// The model has more views than the reduction tracks.
    TooManyViews(usize),
    /// A step appears twice in the alphabet.
    Duplicate(String),
}

impl std::fmt::Display for ReductionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReductionError::Unsupported(model) => write!(
                f,
                "model {model} declares no footprint for partial-order reduction"
            ),
            ReductionError::TooManySteps(n) => write!(
                f,
                "partial-order reduction handles at most {MAX_STEPS} distinct steps; \
                 this model at these settings has {n}"
            ),
            ReductionError::TooManyViews(n) => write!(
                f,
                "partial-order reduction tracks at most 64 views; this model has {n}"
            ),
            ReductionError::Duplicate(step) => {
                write!(f, "step {step} appears twice in the model's alphabet")
            }
        }
    }
}

impl std::error::Error for ReductionError {}

/// A fast hash for the small step values looked up at every state (FNV-1a): the
/// standard hasher's resistance to chosen keys is not needed for a fixed alphabet.
#[derive(Default)]
struct StepHasher(u64);

impl Hasher for StepHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for &b in bytes {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

/// The relations derived once from a model's footprint, indexed by step.
struct Relations<A> {
    alphabet: Vec<A>,
    index: HashMap<A, usize, BuildHasherDefault<StepHasher>>,
    /// Per step: the steps dependent on it that do not absorb it (rule 1).
    joins: Vec<Steps>,
    /// Per step: the steps dependent on it that absorb it.
    absorbers: Vec<Steps>,
    /// Per component: the steps that write it.
    writers: Vec<Steps>,
    /// Steps that write no component a property reads.
    invisible: Steps,
    /// Per step: the views whose components it writes, one bit each.
    touched: Vec<u64>,
}

impl<A: Clone + Debug + Eq + Hash> Relations<A> {
    fn of<M: Footprint<Action = A>>(model: &M) -> Result<Self, ReductionError> {
        let alphabet = model.alphabet();
        if alphabet.len() > MAX_STEPS {
            return Err(ReductionError::TooManySteps(alphabet.len()));
        }
        let mut index = HashMap::default();
        for (i, a) in alphabet.iter().enumerate() {
            if index.insert(a.clone(), i).is_some() {
                return Err(ReductionError::Duplicate(format!("{a:?}")));
            }
        }
        let writes: Vec<Cells> = alphabet.iter().map(|a| model.writes(a)).collect();
        let views = model.views();
        if views.len() > 64 {
            return Err(ReductionError::TooManyViews(views.len()));
        }
        let touched: Vec<u64> = writes
            .iter()
            .map(|w| {
                (0..views.len())
                    .filter(|&v| w.meets(views[v]))
                    .fold(0, |bits, v| bits | 1 << v)
            })
            .collect();
        // A step that may change a view reads all of it: whether the view's value
        // changes depends on the rest of its components.
        let reads: Vec<Cells> = alphabet
            .iter()
            .zip(&touched)
            .map(|(a, &t)| {
                (0..views.len())
                    .filter(|v| t & 1 << v != 0)
                    .fold(model.reads(a), |r, v| r | views[v])
            })
            .collect();
        let n = alphabet.len();
        let (mut joins, mut absorbers) = (vec![Steps::EMPTY; n], vec![Steps::EMPTY; n]);
        let mut invisible = Steps::EMPTY;
        for t in 0..n {
            for u in (0..n).filter(|&u| u != t) {
                let dependent = writes[t].meets(reads[u] | writes[u]) || writes[u].meets(reads[t]);
                if !dependent {
                    continue;
                }
                if model.absorbs(&alphabet[u], &alphabet[t]) {
                    absorbers[t].insert(u);
                } else {
                    joins[t].insert(u);
                }
            }
            let unseen = if views.is_empty() {
                !writes[t].meets(model.observed())
            } else {
                touched[t] == 0
            };
            if unseen {
                invisible.insert(t);
            }
        }
        let writers = (0..model.cell_count())
            .map(|c| {
                let mut w = Steps::EMPTY;
                for (t, cells) in writes.iter().enumerate() {
                    if cells.contains(c) {
                        w.insert(t);
                    }
                }
                w
            })
            .collect();
        Ok(Relations {
            alphabet,
            index,
            joins,
            absorbers,
            writers,
            invisible,
            touched,
        })
    }

    /// Whether step `action` (index `i`), enabled at `state`, is invisible there: it
    /// raises no event, and changes no view's value.
    fn unseen<M: Footprint<Action = A>>(
        &self,
        model: &M,
        state: &M::State,
        action: &A,
        i: usize,
    ) -> bool {
        if !self.invisible.contains(i) && self.touched[i] == 0 {
            return false;
        }
        let Some(next) = model.next_state(state, action.clone()) else {
            return false;
        };
        let views = self.touched[i];
        model.quiet(&next)
            && (0..64)
                .filter(|v| views & 1 << v != 0)
                .all(|v| model.view(state, v) == model.view(&next, v))
    }

    /// The steps that write any of `cells`.
    fn writers_of(&self, cells: Cells) -> Steps {
        cells.iter().fold(Steps::EMPTY, |w, c| {
            w | self.writers.get(c).copied().unwrap_or(!Steps::EMPTY)
        })
    }
}

/// A value's hash: what a model's [`Footprint::cell_values`] gives per component, and
/// how the audit compares states.
pub fn hash_of<T: Hash>(value: T) -> u64 {
    BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default().hash_one(value)
}

/// The steps a model follows at `state`: `enabled` lists the unreduced ones, which a
/// reduction, when there is one, narrows to a stubborn set. What a reduced model's
/// [`Model::actions`] calls.
pub fn follow<M: Footprint>(
    reduction: Option<&Reduction<M::Action>>,
    model: &M,
    state: &M::State,
    actions: &mut Vec<M::Action>,
    enabled: impl Fn(&mut Vec<M::Action>),
) where
    M::Action: Clone + Debug + Eq + Hash,
{
    match reduction {
        None => enabled(actions),
        Some(reduction) => {
            let mut all = Vec::new();
            enabled(&mut all);
            reduction.narrow(model, state, all, actions);
        }
    }
}

/// How many states a reduced run expanded fully and how many in part.
#[derive(Debug, Default)]
pub struct Tally {
    full: AtomicU64,
    reduced: AtomicU64,
}

impl Tally {
    /// (states expanded fully, states expanded in part).
    pub fn counts(&self) -> (u64, u64) {
        (
            self.full.load(Ordering::Relaxed),
            self.reduced.load(Ordering::Relaxed),
        )
    }
}

/// The reduction of one model at its settings: the relations its footprint gives, and
/// a tally of the states it expanded. A model that carries one narrows its
/// [`Model::actions`] with [`Reduction::narrow`].
pub struct Reduction<A> {
    relations: Relations<A>,
    tally: Tally,
}

impl<A> Debug for Reduction<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Reduction({} steps)", self.relations.joins.len())
    }
}

impl<A: Clone + Debug + Eq + Hash> Reduction<A> {
    /// The reduction of `model`, its relations derived from its footprint.
    pub fn of<M: Footprint<Action = A>>(model: &M) -> Result<Self, ReductionError> {
        Ok(Reduction {
            relations: Relations::of(model)?,
            tally: Tally::default(),
        })
    }

    /// States expanded fully and in part so far.
    pub fn tally(&self) -> &Tally {
        &self.tally
    }

    /// Appends to `actions` the enabled steps `enabled` (in the model's order) narrowed
    /// to a stubborn set, or all of them.
    pub fn narrow<M: Footprint<Action = A>>(
        &self,
        model: &M,
        state: &M::State,
        enabled: Vec<A>,
        actions: &mut Vec<A>,
    ) {
        if enabled.len() <= 1 {
            actions.extend(enabled);
            return;
        }
        let r = &self.relations;
        // A step outside the declared alphabet: nothing is known of it.
        let indices: Option<Vec<usize>> = enabled.iter().map(|a| r.index.get(a).copied()).collect();
        match indices
            .and_then(|indices| Some((self.stubborn(model, state, &enabled, &indices)?, indices)))
        {
            Some((set, indices)) => {
                self.tally.reduced.fetch_add(1, Ordering::Relaxed);
                let kept = enabled
                    .into_iter()
                    .zip(indices)
                    .filter(|(_, i)| set.contains(*i));
                actions.extend(kept.map(|(a, _)| a));
            }
            None => {
                self.tally.full.fetch_add(1, Ordering::Relaxed);
                actions.extend(enabled);
            }
        }
    }

    /// The stubborn set grown from `seed` at `state`, where `enabled` are enabled: what
    /// a state is reduced to from that seed, disabled steps included (for diagnostics).
    pub fn grown_from<M: Footprint<Action = A>>(
        &self,
        model: &M,
        state: &M::State,
        enabled: &[A],
        seed: &A,
    ) -> Vec<A> {
        let r = &self.relations;
        let on = enabled.iter().fold(Steps::EMPTY, |s, a| s.with(r.index[a]));
        let set = self.close(model, state, r.index[seed], on, &mut Vec::new());
        set.iter().map(|i| r.alphabet[i].clone()).collect()
    }

    /// The writers of the false conjunct of disabled step `u` that adds the fewest
    /// enabled steps (`on`) outside `known`, then the fewest steps: an enabled step
    /// brings its dependents along, a disabled one only its own enablers.
    fn enablers<M: Footprint<Action = A>>(
        &self,
        model: &M,
        state: &M::State,
        u: usize,
        known: Steps,
        on: Steps,
        conjuncts: &mut Vec<Cells>,
    ) -> Steps {
        let r = &self.relations;
        conjuncts.clear();
        model.disabling(state, &r.alphabet[u], conjuncts);
        if conjuncts.is_empty() {
            conjuncts.push(model.reads(&r.alphabet[u]));
        }
        conjuncts
            .iter()
            .map(|&cells| r.writers_of(cells) & !known)
            .min_by_key(|w| ((*w & on).len(), w.len()))
            .unwrap_or(Steps::EMPTY)
    }

    /// The smallest stubborn set, over every invisible enabled seed, whose enabled steps
    /// are all invisible and quiet and not all the enabled steps; `None` when there is
    /// none.
    fn stubborn<M: Footprint<Action = A>>(
        &self,
        model: &M,
        state: &M::State,
        enabled: &[A],
        indices: &[usize],
    ) -> Option<Steps> {
        let r = &self.relations;
        let on = indices.iter().fold(Steps::EMPTY, |s, &i| s.with(i));
        let mut memo: Vec<Option<bool>> = vec![None; enabled.len()];
        let mut is_unseen = |at: usize| {
            *memo[at].get_or_insert_with(|| r.unseen(model, state, &enabled[at], indices[at]))
        };
        let mut best: Option<Steps> = None;
        let mut conjuncts = Vec::new();
        // Seeds with the fewest dependents first: they give the small sets.
        let mut seeds = indices.to_vec();
        seeds.sort_by_key(|&t| (r.joins[t].len(), t));
        // A seed inside a set that grew to every enabled step most likely grows alike.
        let mut covered = Steps::EMPTY;
        for seed in seeds {
            if (!r.invisible.contains(seed) && r.touched[seed] == 0) || covered.contains(seed) {
                continue;
            }
            let grown = self.close(model, state, seed, on, &mut conjuncts);
            let set = grown & on;
            if set == on {
                covered = covered | grown;
                continue;
            }
            if best.is_some_and(|b| b.len() <= set.len()) {
                continue;
            }
            let invisible = indices
                .iter()
                .enumerate()
                .all(|(j, &i)| !set.contains(i) || is_unseen(j));
            if invisible {
                best = Some(set);
                if set.len() == 1 {
                    break;
                }
            }
        }
        best
    }

    /// The stubborn set grown from `seed` under the two rules; `on` are the enabled
    /// steps. Stops early once it holds every enabled step.
    fn close<M: Footprint<Action = A>>(
        &self,
        model: &M,
        state: &M::State,
        seed: usize,
        on: Steps,
        conjuncts: &mut Vec<Cells>,
    ) -> Steps {
        let r = &self.relations;
        let (mut set, mut absorbing) = (Steps::EMPTY.with(seed), Steps::EMPTY);
        let (mut enabled_work, mut disabled_work) = (vec![seed], Vec::new());
        // Enabled steps first: their absorbers excuse writers from rule 2.
        loop {
            let joining = if let Some(t) = enabled_work.pop() {
                absorbing = absorbing | r.absorbers[t];
                r.joins[t]
            } else if let Some(u) = disabled_work.pop() {
                self.enablers(model, state, u, set | absorbing, on, conjuncts)
            } else {
                return set;
            };
            let new = joining & !set;
            set = set | new;
            if set & on == on {
                return set;
            }
            for i in new.iter() {
                if on.contains(i) {
                    enabled_work.push(i);
                } else {
                    disabled_work.push(i);
                }
            }
        }
    }
}
