//! The check of a model's [`Footprint`] against the model itself, at every reachable
//! state of the full (unreduced) graph: what the reduction's soundness argument assumes
//! of the declarations, tested step by step.

use std::collections::{HashSet, VecDeque};
use std::fmt::Debug;
use std::hash::Hash;

use stateright::{Expectation as Kind, Model};

use super::{Footprint, Reduction, ReductionError};
use crate::check::SENTINEL;

/// What an audit checked, by kind; every count is of checks that passed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Audit {
    /// Reachable states visited.
    pub states: usize,
    /// Steps whose changes stayed within their declared writes.
    pub steps: usize,
    /// Co-enabled independent pairs that commuted, neither disabling the other.
    pub independent_pairs: usize,
    /// Absorptions that held (the earlier step then the later one ends where the later
    /// one alone does).
    pub absorptions: usize,
    /// Disabled steps that stayed disabled after a step writing none of their
    /// disabling components.
    pub disablings: usize,
    /// Invisible, quiet steps that changed no property's value.
    pub invisible_steps: usize,
}

/// A declaration the model contradicts, in words, or a model the reduction refuses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditError(pub String);

impl std::fmt::Display for AuditError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for AuditError {}

impl From<ReductionError> for AuditError {
    fn from(e: ReductionError) -> Self {
        AuditError(e.to_string())
    }
}

/// A state's fingerprint as the checker would compare it.
fn print<T: Hash>(value: &T) -> u64 {
    super::hash_of(value)
}

/// Which properties fire at `state`, one bit each in `properties()` order.
fn firing<M: Model>(model: &M, state: &M::State) -> u64 {
    model
        .properties()
        .iter()
        .filter(|p| p.name != SENTINEL)
        .enumerate()
        .filter(|(_, p)| (p.condition)(model, state) == (p.expectation == Kind::Sometimes))
        .fold(0, |bits, (i, _)| bits | 1 << i)
}

/// Checks `model`'s footprint at every state reachable in `model` (which must not be
/// reduced itself), up to `max_states` states; the first contradiction is the error.
pub fn audit<M>(model: &M, max_states: usize) -> Result<Audit, AuditError>
where
    M: Footprint,
    M::State: Clone + Debug + Hash,
    M::Action: Clone + Debug + Eq + Hash,
{
    let reduction = Reduction::of(model)?;
    let mut audit = Audit::default();
    let mut seen: HashSet<u64> = HashSet::new();
    let mut queue: VecDeque<M::State> = model.init_states().into();
    for s in &queue {
        seen.insert(print(s));
    }
    while let Some(s) = queue.pop_front() {
        audit.states += 1;
        let nexts = at_state(model, &reduction, &s, &mut audit)?;
        for next in nexts {
            if seen.len() < max_states && seen.insert(print(&next)) {
                queue.push_back(next);
            }
        }
    }
    Ok(audit)
}

/// The enabled steps at `state` and the states they lead to.
fn successors<M: Model>(model: &M, state: &M::State) -> Vec<(M::Action, M::State)>
where
    M::Action: Clone,
{
    let mut enabled = Vec::new();
    model.actions(state, &mut enabled);
    enabled
        .into_iter()
        .filter_map(|a| Some((a.clone(), model.next_state(state, a)?)))
        .collect()
}

/// A state reached by one step, with the steps enabled there.
struct Successor<M: Model> {
    state: M::State,
    offered: Vec<M::Action>,
}

impl<M: Model> Successor<M>
where
    M::Action: Clone + PartialEq,
{
    fn of(model: &M, state: M::State) -> Self {
        let mut offered = Vec::new();
        model.actions(&state, &mut offered);
        Successor { state, offered }
    }

    /// The state `action` leads to from here, when it is enabled here.
    fn then(&self, model: &M, action: &M::Action) -> Option<M::State> {
        self.offered
            .contains(action)
            .then(|| model.next_state(&self.state, action.clone()))
            .flatten()
    }
}

/// Every check at one state; returns its successors.
fn at_state<M>(
    model: &M,
    reduction: &Reduction<M::Action>,
    s: &M::State,
    audit: &mut Audit,
) -> Result<Vec<M::State>, AuditError>
where
    M: Footprint,
    M::State: Clone + Debug + Hash,
    M::Action: Clone + Debug + Eq + Hash,
{
    let r = &reduction.relations;
    let at = |what: String| AuditError(format!("{what}, at state {s:?}"));
    let fail = |what: String| Err(at(what));
    let steps = successors(model, s);
    let core = model.core(s);
    let (core_cells, core_fire, fire) = (
        model.cell_values(&core),
        firing(model, &core),
        firing(model, s),
    );
    if core_fire & !fire != 0 {
        return fail("a property fires without the state's events but not with them".into());
    }
    let index = |a: &M::Action| r.index.get(a).copied();
    let view_count = model.views().len();
    let mut unseen = Vec::with_capacity(steps.len());
    for (a, next) in &steps {
        let Some(i) = index(a) else {
            return fail(format!("step {a:?} is not in the alphabet"));
        };
        if let Some(v) = (0..view_count)
            .find(|&v| r.touched[i] & 1 << v == 0 && model.view(&core, v) != model.view(next, v))
        {
            return fail(format!(
                "step {a:?} changed view {v} without writing its components"
            ));
        }
        let cells = model.cell_values(next);
        let writes = model.writes(a);
        if let Some(c) =
            (0..cells.len()).find(|&c| cells[c] != core_cells[c] && !writes.contains(c))
        {
            return fail(format!(
                "step {a:?} changed component {c} outside its writes"
            ));
        }
        audit.steps += 1;
        let invisible = r.unseen(model, s, a, i);
        if invisible {
            if firing(model, next) != core_fire {
                return fail(format!("invisible step {a:?} changed a property's value"));
            }
            audit.invisible_steps += 1;
        }
        unseen.push(invisible);
    }
    let after: Vec<Successor<M>> = steps
        .iter()
        .map(|(_, next)| Successor::of(model, next.clone()))
        .collect();
    for (x, a) in steps.iter().enumerate() {
        for (y, b) in steps.iter().enumerate().skip(x + 1) {
            let (a, b) = ((&a.0, &after[x], unseen[x]), (&b.0, &after[y], unseen[y]));
            pair(model, reduction, a, b, audit).map_err(at)?;
            pair(model, reduction, b, a, audit).map_err(at)?;
        }
    }
    let mut conjuncts = Vec::new();
    for u in r
        .alphabet
        .iter()
        .filter(|u| !steps.iter().any(|(a, _)| a == *u))
    {
        conjuncts.clear();
        model.disabling(s, u, &mut conjuncts);
        if conjuncts.is_empty() {
            conjuncts.push(model.reads(u));
        }
        let keeps = |b: &M::Action| conjuncts.iter().any(|c| !model.writes(b).meets(*c));
        for ((b, _), next_b) in steps.iter().zip(&after).filter(|((b, _), _)| keeps(b)) {
            if next_b.then(model, u).is_some() {
                return fail(format!(
                    "step {b:?} enabled {u:?} without writing the components of one of its \
                     false conjuncts"
                ));
            }
            audit.disablings += 1;
        }
    }
    Ok(steps.into_iter().map(|(_, next)| next).collect())
}

/// The checks of one ordered pair of co-enabled steps: `a` then `b`.
fn pair<M>(
    model: &M,
    reduction: &Reduction<M::Action>,
    (a, after_a, a_unseen): (&M::Action, &Successor<M>, bool),
    (b, after_b, _): (&M::Action, &Successor<M>, bool),
    audit: &mut Audit,
) -> Result<(), String>
where
    M: Footprint,
    M::State: Clone + Debug + Hash,
    M::Action: Clone + Debug + Eq + Hash,
{
    let r = &reduction.relations;
    let (i, j) = (r.index[a], r.index[b]);
    let (next_a, next_b) = (&after_a.state, &after_b.state);
    let b_after_a = after_a.then(model, b);
    if r.absorbers[i].contains(j) {
        match &b_after_a {
            Some(ab) if print(ab) == print(next_b) => audit.absorptions += 1,
            _ => return Err(format!("{b:?} does not absorb {a:?}")),
        }
    }
    if r.joins[i].contains(j) || r.absorbers[i].contains(j) {
        return Ok(());
    }
    let Some(ab) = b_after_a else {
        return Err(format!("independent {a:?} disables {b:?}"));
    };
    let Some(ba) = after_b.then(model, a) else {
        return Err(format!("independent {b:?} disables {a:?}"));
    };
    if print(&model.core(&ab)) != print(&model.core(&ba)) {
        return Err(format!("independent {a:?} and {b:?} do not commute"));
    }
    if model.quiet(next_a) != model.quiet(&ba) {
        return Err(format!(
            "{a:?} raises an event after {b:?} but not before, or back"
        ));
    }
    if a_unseen && firing(model, &ab) != firing(model, next_b) {
        return Err(format!(
            "invisible {a:?} changes the properties seen after {b:?}"
        ));
    }
    audit.independent_pairs += 1;
    Ok(())
}
