//! Seeded random walks: long paths through the model at bounds too large to cover
//! exhaustively, each step replayed against the runtime (and, at every state, one random
//! probe of a forbidden event). The same seed gives the same walks.

use std::time::Instant;

use serde::Serialize;
use stateright::Model;

use crate::{Binding, Divergence, Problem, Scratch};

pub use steadfast_model::rng::Rng;

/// The steps the model can take at `state`: each enabled action with the state it
/// leads to, those beyond the model's boundary left out.
pub fn successors<M: Model>(model: &M, state: &M::State) -> Vec<(M::Action, M::State)>
where
    M::Action: Clone,
{
    let mut actions = Vec::new();
    model.actions(state, &mut actions);
    actions
        .into_iter()
        .filter_map(|a| model.next_state(state, a.clone()).map(|s| (a, s)))
        .filter(|(_, s)| model.within_boundary(s))
        .collect()
}

/// What a set of walks did.
#[derive(Clone, Debug, Serialize)]
pub struct WalkReport {
    /// Walks taken.
    pub walks: usize,
    /// Transitions replayed.
    pub steps: usize,
    /// Forbidden events offered and refused.
    pub probes: usize,
    /// Length of the longest walk.
    pub longest: usize,
    /// Wall time, seconds.
    pub seconds: f64,
}

/// Takes `walks` random walks of at most `max_len` steps each (a walk also ends at a state
/// without enabled actions), seeded by `seed`.
pub fn walk<B: Binding>(
    model: &B::Model,
    seed: u64,
    walks: usize,
    max_len: usize,
) -> Result<WalkReport, Box<Divergence>> {
    let started = Instant::now();
    let mut rng = Rng::new(seed);
    let mut report = WalkReport {
        walks: 0,
        steps: 0,
        probes: 0,
        longest: 0,
        seconds: 0.0,
    };
    let inits = model.init_states();
    if inits.is_empty() {
        return Ok(report);
    }
    for _ in 0..walks {
        let mut state = inits[rng.below(inits.len())].clone();
        let mut runtime = B::start(model, &state);
        let mut path: Vec<String> = Vec::new();
        let fail = |path: &[String], action: String, problem: Problem, runtime: &B::Runtime| {
            let mut trace = path.to_vec();
            trace.push(action.clone());
            Box::new(Divergence {
                step: trace.len(),
                trace,
                action,
                problem,
                runtime: B::describe(runtime),
            })
        };
        // The scratch keeps the model's projection of the current state for its probes.
        let mut scratch = Scratch::<B>::new();
        scratch.want(model, &state);
        scratch.compare(&runtime).map_err(|l| {
            fail(
                &path,
                "(initial state)".into(),
                Problem::Projection(l),
                &runtime,
            )
        })?;
        for _ in 0..max_len {
            let probes = B::probes(model, &state);
            if !probes.is_empty() {
                let probe = &probes[rng.below(probes.len())];
                scratch
                    .checked_refusal(model, &runtime, &state, probe)
                    .map_err(|p| fail(&path, format!("{probe:?}"), p, &runtime))?;
                report.probes += 1;
            }
            let steps = successors(model, &state);
            if steps.is_empty() {
                break;
            }
            let (action, next) = steps[rng.below(steps.len())].clone();
            scratch
                .checked_step(model, &mut runtime, &state, &action, &next)
                .map_err(|p| fail(&path, format!("{action:?}"), p, &runtime))?;
            path.push(format!("{action:?}"));
            state = next;
            report.steps += 1;
        }
        report.longest = report.longest.max(path.len());
        report.walks += 1;
    }
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}
