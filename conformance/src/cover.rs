//! Transition coverage: every transition of the reachable state graph, replayed against
//! the runtime.
//!
//! The trace set "one path to every unique state, extended by every enabled action"
//! covers every transition; replaying its traces one by one repeats their shared
//! prefixes. Here the same set is replayed as a prefix tree: a depth-first walk of the
//! state graph keeps the runtime of each state on its stack, and each transition runs
//! once, on a clone of the runtime at its source state. At every visited state the
//! converse is checked too: each probe (an event the model forbids there) must be
//! refused by the runtime without a change to its projection.

use std::collections::{BTreeMap, HashSet};
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

struct Walk<'a, B: Binding> {
    model: &'a B::Model,
    visited: HashSet<u64>,
    path: Vec<String>,
    coverage: Coverage,
}

impl<B: Binding> Walk<'_, B> {
    fn fail(&self, action: &B::Action, problem: Problem) -> Divergence {
        let mut trace = self.path.clone();
        trace.push(format!("{action:?}"));
        Divergence {
            step: trace.len(),
            action: format!("{action:?}"),
            trace,
            problem,
        }
    }

    fn visit(&mut self, state: &B::State, runtime: &B::Runtime) -> Result<(), Box<Divergence>> {
        for probe in B::probes(self.model, state) {
            checked_refusal::<B>(self.model, runtime, state, &probe)
                .map_err(|p| Box::new(self.fail(&probe, p)))?;
            self.coverage.probes += 1;
            self.coverage.steps += 1;
        }
        let mut actions = Vec::new();
        self.model.actions(state, &mut actions);
        for action in actions {
            let Some(next) = self.model.next_state(state, action.clone()) else {
                continue;
            };
            if !self.model.within_boundary(&next) {
                continue;
            }
            let mut next_runtime = runtime.clone();
            checked_step::<B>(self.model, &mut next_runtime, state, &action, &next)
                .map_err(|p| Box::new(self.fail(&action, p)))?;
            self.coverage.transitions += 1;
            self.coverage.steps += 1;
            *self.coverage.kinds.entry(B::kind(&action)).or_default() += 1;
            if self.visited.insert(fingerprint(&next)) {
                self.path.push(format!("{action:?}"));
                self.visit(&next, &next_runtime)?;
                self.path.pop();
            }
        }
        Ok(())
    }
}

/// Replays every transition reachable in `model` against the runtime of binding `B`.
pub fn cover<B: Binding>(model: &B::Model) -> Result<Coverage, Box<Divergence>> {
    let started = Instant::now();
    let mut walk = Walk::<B> {
        model,
        visited: HashSet::new(),
        path: Vec::new(),
        coverage: Coverage {
            model: <B::Model as Spec>::NAME,
            design: model.design_name(),
            unique_states: 0,
            transitions: 0,
            steps: 0,
            probes: 0,
            kinds: BTreeMap::new(),
            seconds: 0.0,
        },
    };
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
        if walk.visited.insert(fingerprint(&init)) {
            walk.visit(&init, &runtime)?;
        }
    }
    walk.coverage.unique_states = walk.visited.len();
    walk.coverage.seconds = started.elapsed().as_secs_f64();
    Ok(walk.coverage)
}
