//! Transition coverage: every transition of the reachable state graph, replayed against
//! the runtime.
//!
//! The trace set "one path to every unique state, extended by every enabled action"
//! covers every transition; replaying its traces one by one repeats their shared
//! prefixes. Here the same set is replayed as a prefix tree: a breadth-first walk of the
//! state graph keeps the runtime of each frontier state beside it, and each transition
//! runs once, on a clone of the runtime at its source state. At every visited state the
//! converse is checked too: each probe (an event the model forbids there) must be
//! refused by the runtime without a change to its projection.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::time::Instant;

use serde::Serialize;
use stateright::Model;
use steadfast_model::Spec;

use crate::{checked_refusal, checked_step, compare, Binding, Divergence, Problem};

/// What a coverage run did.
#[derive(Clone, Debug, Serialize)]
pub struct Coverage {
    /// Model name.
    pub model: &'static str,
    /// Design name.
    pub design: &'static str,
    /// Unique states visited.
    pub unique_states: usize,
    /// Transitions replayed against the runtime: one trace of the trace set each.
    pub transitions: usize,
    /// Runtime steps executed (transitions plus refused probes).
    pub steps: usize,
    /// Forbidden events offered to the runtime and refused.
    pub probes: usize,
    /// Transitions per action kind.
    pub kinds: BTreeMap<String, usize>,
    /// Wall time, seconds.
    pub seconds: f64,
}

impl Coverage {
    /// Runtime steps per second.
    pub fn steps_per_second(&self) -> f64 {
        self.steps as f64 / self.seconds.max(1e-9)
    }
}

fn fingerprint<T: Hash>(value: &T) -> u64 {
    let mut h = DefaultHasher::new();
    value.hash(&mut h);
    h.finish()
}

/// The way each visited state was first reached, to rebuild a failing trace.
type Parents<A> = HashMap<u64, Option<(u64, A)>>;

fn path_to<A: std::fmt::Debug>(parents: &Parents<A>, mut fp: u64) -> Vec<String> {
    let mut path = Vec::new();
    while let Some(Some((parent, action))) = parents.get(&fp) {
        path.push(format!("{action:?}"));
        fp = *parent;
    }
    path.reverse();
    path
}

fn fail<A: std::fmt::Debug>(
    parents: &Parents<A>,
    at: u64,
    action: &A,
    problem: Problem,
) -> Box<Divergence> {
    let mut trace = path_to(parents, at);
    trace.push(format!("{action:?}"));
    Box::new(Divergence {
        step: trace.len(),
        action: format!("{action:?}"),
        trace,
        problem,
    })
}

/// Replays every transition reachable in `model` against the runtime of binding `B`.
pub fn cover<B: Binding>(model: &B::Model) -> Result<Coverage, Box<Divergence>> {
    let started = Instant::now();
    let mut coverage = Coverage {
        model: <B::Model as Spec>::NAME,
        design: model.design_name(),
        unique_states: 0,
        transitions: 0,
        steps: 0,
        probes: 0,
        kinds: BTreeMap::new(),
        seconds: 0.0,
    };
    // Breadth first, so that a divergence is reported on a shortest trace.
    let mut parents: Parents<B::Action> = HashMap::new();
    let mut queue = VecDeque::new();
    for init in model.init_states() {
        let runtime = B::start(model, &init);
        compare::<B>(model, &init, &runtime).map_err(|lines| {
            Box::new(Divergence {
                trace: Vec::new(),
                step: 0,
                action: "(initial state)".into(),
                problem: Problem::Projection(lines),
            })
        })?;
        let fp = fingerprint(&init);
        if parents.insert(fp, None).is_none() {
            queue.push_back((init, runtime, fp));
        }
    }
    let mut actions = Vec::new();
    while let Some((state, runtime, fp)) = queue.pop_front() {
        for probe in B::probes(model, &state) {
            checked_refusal::<B>(model, &runtime, &state, &probe)
                .map_err(|p| fail(&parents, fp, &probe, p))?;
            coverage.probes += 1;
            coverage.steps += 1;
        }
        model.actions(&state, &mut actions);
        for action in actions.drain(..) {
            let Some(next) = model.next_state(&state, action.clone()) else {
                continue;
            };
            if !model.within_boundary(&next) {
                continue;
            }
            let mut next_runtime = runtime.clone();
            checked_step::<B>(model, &mut next_runtime, &state, &action, &next)
                .map_err(|p| fail(&parents, fp, &action, p))?;
            coverage.transitions += 1;
            coverage.steps += 1;
            *coverage.kinds.entry(B::kind(&action)).or_default() += 1;
            let next_fp = fingerprint(&next);
            if let Entry::Vacant(e) = parents.entry(next_fp) {
                e.insert(Some((fp, action)));
                queue.push_back((next, next_runtime, next_fp));
            }
        }
    }
    coverage.unique_states = parents.len();
    coverage.seconds = started.elapsed().as_secs_f64();
    Ok(coverage)
}
