//! Running the checker over a [`Spec`]: verdicts, state counts and shortest traces.
//!
//! One exhaustive run gives the verdicts and the state counts. stateright overwrites a
//! property's discovery each time a later state violates it, so that run's traces are not
//! the shortest; for each discovery a second, single-threaded BFS run focused on that
//! property alone stops at the first violating state, whose path is then a shortest one.
//!
//! Since its traces are not needed then, the exhaustive run shows stateright a single
//! property that evaluates all of the model's properties at each state and records
//! discoveries as bits ([`Traces::Shortest`], [`Traces::None`]). stateright looks every
//! property up by name in its discovery map at every state before evaluating it; with a
//! dozen properties those lookups were the largest single cost of a durable run (28% of
//! its instructions under callgrind). [`Traces::OfTheRun`] keeps the run's own traces and
//! so hands stateright every property (plus a sentinel that never fires, so the run visits
//! every reachable state even when all properties are discovered early).
//!
//! Symmetry reduction ([`CheckOptions::symmetry`]) applies to the exhaustive run only and
//! only in depth-first order, the one stateright honours it in: the run then stores one
//! representative per class of interchangeable states ([`Spec::representative`]), so its
//! unique state count is a count of classes. The shortest-trace runs stay breadth-first
//! and therefore run without symmetry over the whole state space.

use std::collections::HashMap;
use std::fmt::Debug;
use std::hash::Hash;
use std::io::Write;
use std::time::{Duration, Instant};

use serde::Serialize;
use stateright::report::{ReportData, ReportDiscovery, Reporter};
use stateright::{Checker, Expectation as Kind, HasDiscoveries, Model, Path, Property};

use crate::{Spec, Verdict};

mod observed;

use observed::FoundBits;
pub(crate) use observed::{conditions, fires, Condition, Observed, Observer};

/// Name of the property that never fires; [`select`] appends it to unfocused runs.
pub const SENTINEL: &str = "(every state visited)";

fn never_fires<M: Model>(_: &M, _: &M::State) -> bool {
    true
}

/// The properties a model should return from `properties()`: all of them followed by the
/// sentinel when `focus` is `None`, or only the named one. Models call this so that the
/// focusing contract of [`Spec::focus`] is implemented once.
pub fn select<M: Model>(all: Vec<Property<M>>, focus: Option<&str>) -> Vec<Property<M>> {
    match focus {
        None => {
            let mut all = all;
            all.push(Property::always(SENTINEL, never_fires::<M>));
            all
        }
        Some(name) => all.into_iter().filter(|p| p.name == name).collect(),
    }
}

/// The search order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    /// Breadth first: counterexamples found are shortest (single-threaded).
    Bfs,
    /// Depth first: less memory; honours symmetry reduction.
    Dfs,
}

/// Which traces a check reports for its discoveries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Traces {
    /// A shortest trace per discovery, each from a breadth-first run focused on its
    /// property after the exhaustive run.
    Shortest,
    /// The exhaustive run's own trace per discovery: no extra runs, not the shortest
    /// (stateright keeps a later discovery), and a slower exhaustive run.
    OfTheRun,
    /// Verdicts and counts only.
    None,
}

/// How to run the checker.
#[derive(Clone, Debug)]
pub struct CheckOptions {
    /// Worker threads of the exhaustive run (the shortest-trace runs use one).
    pub threads: usize,
    /// Search order of the exhaustive run.
    pub strategy: Strategy,
    /// Which traces to report for the discoveries.
    pub traces: Traces,
    /// Print progress to stderr for runs longer than this (never when `None`).
    pub progress_after: Option<Duration>,
    /// Symmetry reduction in the exhaustive run, with the model's
    /// [`Spec::representative`]. Needs [`Strategy::Dfs`] and a model that has a
    /// representative at its settings; [`try_check`] refuses anything else. The
    /// shortest-trace runs are breadth-first and never use it.
    pub symmetry: bool,
    /// Partial-order reduction ([`crate::por`]) in every run of the check, the
    /// shortest-trace runs included (their traces are then shortest among the reduced
    /// graph's paths). [`try_check`] refuses it for a model without a footprint.
    pub por: bool,
}

/// Options a run cannot honour, refused before anything is checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckError {
    /// Symmetry reduction was asked for with breadth-first search, which stateright runs
    /// without it.
    SymmetryNeedsDfs,
    /// Symmetry reduction was asked for, but the model at these settings has no
    /// interchangeable components ([`Spec::representative`] is `None`).
    NoSymmetry {
        /// Model name.
        model: &'static str,
        /// Design name.
        design: &'static str,
        /// The settings, as `name=value` words.
        settings: String,
    },
    /// Partial-order reduction was asked for and the model cannot be reduced.
    NoReduction(crate::por::ReductionError),
}

impl std::fmt::Display for CheckError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CheckError::SymmetryNeedsDfs => f.write_str(
                "symmetry reduction needs depth-first search: stateright ignores it in \
                 breadth-first runs",
            ),
            CheckError::NoSymmetry {
                model,
                design,
                settings,
            } => write!(
                f,
                "model {model} (design {design}, {settings}) has no interchangeable \
                 components to reduce by symmetry"
            ),
            CheckError::NoReduction(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for CheckError {}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            threads: 1,
            strategy: Strategy::Bfs,
            traces: Traces::Shortest,
            progress_after: None,
            symmetry: false,
            por: false,
        }
    }
}

/// One numbered step of a trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Step {
    /// The action as the model names it (Debug form).
    pub action: String,
    /// The step in domain words.
    pub description: String,
}

/// A trace that shows a discovery: the steps from an initial state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Trace {
    /// Steps, in order.
    pub steps: Vec<Step>,
    /// The known shape of this trace, if any (e.g. "ordering A").
    pub shape: Option<String>,
    /// The last state, as Debug text.
    pub last_state: String,
}

/// A property's outcome in a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PropertyReport {
    /// Property name.
    pub name: &'static str,
    /// `always`, `sometimes` or `eventually`.
    pub kind: &'static str,
    /// What the run found.
    pub verdict: Verdict,
    /// The counterexample or example, shortest when asked for.
    pub trace: Option<Trace>,
    /// Action indices of the trace from its initial state (the Explorer's `#/steps/` path).
    pub explorer_path: Option<String>,
}

/// Everything one `check` produced.
#[derive(Clone, Debug, Serialize)]
pub struct CheckReport {
    /// Model name.
    pub model: &'static str,
    /// Design name.
    pub design: &'static str,
    /// The settings the run used, by name.
    pub settings: Vec<(String, String)>,
    /// Unique states of the exhaustive run.
    pub unique_states: usize,
    /// States generated, repeats included.
    pub generated_states: usize,
    /// Deepest level reached (initial states have depth 1).
    pub max_depth: usize,
    /// Whether the exhaustive run used symmetry reduction (then `unique_states` counts
    /// classes of interchangeable states; traces still come from unreduced runs).
    pub symmetry: bool,
    /// Whether the runs used partial-order reduction.
    pub por: bool,
    /// With partial-order reduction: states the exhaustive run expanded fully and in
    /// part (a state reached twice counts twice).
    pub expansions: Option<(u64, u64)>,
    /// Wall time of the exhaustive run, seconds.
    pub seconds: f64,
    /// Unique states per second of the exhaustive run.
    pub states_per_second: f64,
    /// Wall time of the shortest-trace runs, seconds.
    pub shortest_seconds: f64,
    /// One entry per property, in model order.
    pub properties: Vec<PropertyReport>,
}

impl CheckReport {
    /// A property's report by name.
    pub fn property(&self, name: &str) -> Option<&PropertyReport> {
        self.properties.iter().find(|p| p.name == name)
    }

    /// The verdict of a property by name.
    pub fn verdict(&self, name: &str) -> Option<Verdict> {
        self.property(name).map(|p| p.verdict)
    }

    /// Every property's verdict, by name.
    pub fn verdicts(&self) -> std::collections::BTreeMap<&'static str, Verdict> {
        self.properties
            .iter()
            .map(|p| (p.name, p.verdict))
            .collect()
    }

    /// True when every safety property holds and every reachability property is reached.
    pub fn all_good(&self) -> bool {
        self.properties.iter().all(|p| p.verdict.is_good())
    }
}

/// The property kind as reports and shard files write it.
pub(crate) fn kind_word(kind: &Kind) -> &'static str {
    match kind {
        Kind::Always => "always",
        Kind::Sometimes => "sometimes",
        Kind::Eventually => "eventually",
    }
}

fn verdict_of(kind: &Kind, discovered: bool) -> Verdict {
    match (kind, discovered) {
        (Kind::Sometimes, true) => Verdict::Reached,
        (Kind::Sometimes, false) => Verdict::Unreached,
        (_, true) => Verdict::Counterexample,
        (_, false) => Verdict::Holds,
    }
}

/// Progress lines on stderr, once the run has lasted `after`, then once a second.
///
/// stateright's reporting thread sleeps `delay()` between polls and the run is joined
/// only after that thread wakes, so the poll interval is kept short: with the default
/// second every run would last at least a second and small models would report a
/// wrong rate.
struct Progress {
    after: Duration,
    label: String,
}

/// How often the reporting thread polls the checker.
const POLL: Duration = Duration::from_millis(10);

/// The latest counts of the run in progress, for a watcher on another thread (a memory
/// budget that stops the process says how far the run got): unique states, generated
/// states, depth. Updated at every poll of a run that reports progress.
static LIVE: [std::sync::atomic::AtomicU64; 3] = [
    std::sync::atomic::AtomicU64::new(0),
    std::sync::atomic::AtomicU64::new(0),
    std::sync::atomic::AtomicU64::new(0),
];

/// (unique states, generated states, depth) of the run in progress, as last polled.
pub fn live_counts() -> (u64, u64, u64) {
    use std::sync::atomic::Ordering::Relaxed;
    (
        LIVE[0].load(Relaxed),
        LIVE[1].load(Relaxed),
        LIVE[2].load(Relaxed),
    )
}

impl<M: Model> Reporter<M> for Progress {
    fn delay(&self) -> Duration {
        POLL
    }

    fn report_checking(&mut self, data: ReportData) {
        use std::sync::atomic::Ordering::Relaxed;
        LIVE[0].store(data.unique_states as u64, Relaxed);
        LIVE[1].store(data.total_states as u64, Relaxed);
        LIVE[2].store(data.max_depth as u64, Relaxed);
        if data.done || data.duration < self.after {
            return;
        }
        self.after = data.duration + Duration::from_secs(1);
        let secs = data.duration.as_secs_f64();
        let _ = writeln!(
            std::io::stderr(),
            "{}: {} unique states, {} generated, depth {}, {:.0} states/s, {:.0}s",
            self.label,
            data.unique_states,
            data.total_states,
            data.max_depth,
            data.unique_states as f64 / secs,
            secs
        );
    }

    fn report_discoveries(
        &mut self,
        _: &M,
        _: std::collections::BTreeMap<&'static str, ReportDiscovery<M>>,
    ) where
        M::Action: Debug + PartialEq,
        M::State: Debug + Hash + PartialEq,
    {
    }
}

/// Converts a stateright path to a trace in the model's words.
pub fn trace_of<M: Spec>(model: &M, path: Path<M::State, M::Action>) -> Trace {
    let pairs = path.into_vec();
    let shape = model.classify(&pairs);
    let steps = pairs
        .iter()
        .filter_map(|(state, action)| {
            action.as_ref().map(|a| Step {
                action: format!("{a:?}"),
                description: model.describe_step(state, a),
            })
        })
        .collect();
    let last_state = pairs
        .last()
        .map(|(s, _)| format!("{s:?}"))
        .unwrap_or_default();
    Trace {
        steps,
        shape,
        last_state,
    }
}

/// Why a text is not an Explorer path of a model ([`decode_explorer_path`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BadPath {
    /// A part is not a number.
    NotANumber(String),
    /// The first number names no initial state.
    NoInitialState {
        /// The number given.
        index: usize,
        /// Initial states the model has.
        count: usize,
    },
    /// A later number names no action enabled at its step (1-based).
    NoAction {
        /// The step.
        step: usize,
        /// The number given.
        index: usize,
        /// Actions enabled there.
        offered: usize,
    },
}

/// The inverse of [`explorer_path`]: the initial state and the actions that `path`
/// (numbers joined by `/`) names.
pub fn decode_explorer_path<M: Model>(
    model: &M,
    path: &str,
) -> Result<(M::State, Vec<M::Action>), BadPath>
where
    M::State: Clone,
    M::Action: Clone,
{
    let mut indices = Vec::new();
    for part in path.split('/') {
        indices.push(
            part.parse::<usize>()
                .map_err(|_| BadPath::NotANumber(part.to_string()))?,
        );
    }
    let inits = model.init_states();
    let init = inits
        .get(indices[0])
        .cloned()
        .ok_or(BadPath::NoInitialState {
            index: indices[0],
            count: inits.len(),
        })?;
    let (mut state, mut taken, mut enabled) = (init.clone(), Vec::new(), Vec::new());
    for (step, &index) in indices.iter().enumerate().skip(1) {
        enabled.clear();
        model.actions(&state, &mut enabled);
        let next = enabled
            .get(index)
            .cloned()
            .and_then(|a| Some((model.next_state(&state, a.clone())?, a)));
        let Some((next, action)) = next else {
            return Err(BadPath::NoAction {
                step,
                index,
                offered: enabled.len(),
            });
        };
        state = next;
        taken.push(action);
    }
    Ok((init, taken))
}

/// The Explorer path of a trace: the index of the initial state, then of each action
/// among the actions enabled at its state, joined by `/`.
pub fn explorer_path<M: Model>(model: &M, path: &[(M::State, Option<M::Action>)]) -> Option<String>
where
    M::State: PartialEq,
    M::Action: PartialEq,
{
    let first = &path.first()?.0;
    let init = model.init_states().iter().position(|s| s == first)?;
    let mut parts = vec![init.to_string()];
    for (state, action) in path {
        if let Some(action) = action {
            let mut actions = Vec::new();
            model.actions(state, &mut actions);
            parts.push(actions.iter().position(|a| a == action)?.to_string());
        }
    }
    Some(parts.join("/"))
}

/// The shortest path to a state where `property` is discovered, by single-threaded BFS
/// over the model focused on that property.
pub fn shortest<M: Spec>(model: &M, property: &'static str) -> Option<Path<M::State, M::Action>> {
    let focused = model.focus(Some(property)).ok()?;
    focused
        .checker()
        .threads(1)
        .finish_when(HasDiscoveries::Any)
        .spawn_bfs()
        .join()
        .discovery(property)
}

/// What the exhaustive run discovered: each property's path when stateright saw every
/// property, or only the names when it saw them merged into one ([`FoundBits`]).
enum Discoveries<S, A> {
    Paths(HashMap<&'static str, Path<S, A>>),
    Names(Vec<&'static str>),
}

/// What an exhaustive run leaves behind, whatever its search order.
struct Run<S, A> {
    discoveries: HashMap<&'static str, Path<S, A>>,
    unique_states: usize,
    generated_states: usize,
    max_depth: usize,
}

fn finish<M, C>(checker: C, progress: Option<&mut Progress>) -> Run<M::State, M::Action>
where
    M: Model,
    M::State: Clone + Debug + Hash + PartialEq + Send + Sync,
    M::Action: Clone + Debug + PartialEq + Send + Sync,
    C: Checker<M> + Send + Sync,
{
    // The reporting thread polls on a timer; without progress, a plain join keeps short
    // runs from being padded to the next poll.
    let checker = match progress {
        Some(progress) => checker.join_and_report(progress),
        None => checker.join(),
    };
    Run {
        discoveries: checker.discoveries(),
        unique_states: checker.unique_state_count(),
        generated_states: checker.state_count(),
        max_depth: checker.max_depth(),
    }
}

/// One exhaustive run of `model` in the options' order, with symmetry when given.
fn explore<M>(
    model: M,
    options: &CheckOptions,
    symmetry: Option<crate::Representative<M::State>>,
    progress: Option<&mut Progress>,
) -> Run<M::State, M::Action>
where
    M: Model + Send + Sync + 'static,
    M::State: Clone + Debug + Hash + PartialEq + Send + Sync + 'static,
    M::Action: Clone + Debug + PartialEq + Send + Sync + 'static,
{
    let mut builder = model.checker().threads(options.threads.max(1));
    if let Some(representative) = symmetry {
        builder = builder.symmetry_fn(representative);
    }
    match options.strategy {
        Strategy::Bfs => finish(builder.spawn_bfs(), progress),
        Strategy::Dfs => finish(builder.spawn_dfs(), progress),
    }
}

/// A function from a state to the representative of its symmetry class.
pub type Representative<M> = crate::Representative<<M as Model>::State>;

/// The representative function the options ask for: `None` without symmetry, an error
/// when symmetry is asked for but cannot be honoured.
pub fn symmetry_of<M: Spec>(
    model: &M,
    options: &CheckOptions,
) -> Result<Option<Representative<M>>, CheckError> {
    if !options.symmetry {
        return Ok(None);
    }
    if options.strategy != Strategy::Dfs {
        return Err(CheckError::SymmetryNeedsDfs);
    }
    match model.representative() {
        Some(f) => Ok(Some(f)),
        None => Err(CheckError::NoSymmetry {
            model: M::NAME,
            design: model.design_name(),
            settings: model
                .settings()
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" "),
        }),
    }
}

/// Checks a model exhaustively and reports every property.
///
/// # Panics
///
/// When the options ask for symmetry reduction that cannot be honoured (see
/// [`try_check`], which returns that as an error); options without symmetry never fail.
pub fn check<M: Spec>(model: &M, options: &CheckOptions) -> CheckReport {
    try_check(model, options).unwrap_or_else(|e| panic!("cannot check: {e}"))
}

/// Checks a model exhaustively and reports every property; options the run cannot
/// honour (symmetry without DFS, or for a model without a representative) are refused
/// before anything runs.
pub fn try_check<M: Spec>(model: &M, options: &CheckOptions) -> Result<CheckReport, CheckError> {
    let symmetry = symmetry_of(model, options)?;
    let reduced;
    let model = if options.por {
        reduced = model.reduced().map_err(CheckError::NoReduction)?;
        &reduced
    } else {
        model
    };
    let full = model
        .focus(None)
        .expect("focusing on no property cannot fail");
    let kinds: Vec<(&'static str, Kind)> = full
        .properties()
        .into_iter()
        .filter(|p| p.name != SENTINEL)
        .map(|p| (p.name, p.expectation))
        .collect();

    let started = Instant::now();
    let mut progress = options.progress_after.map(|after| Progress {
        after,
        label: format!(
            "{} {}{}{}",
            M::NAME,
            model.design_name(),
            if symmetry.is_some() {
                " (symmetry)"
            } else {
                ""
            },
            if options.por { " (partial-order)" } else { "" }
        ),
    });
    let merged = match options.traces {
        Traces::OfTheRun => None,
        Traces::Shortest | Traces::None => FoundBits::observe(full.clone()),
    };
    let (run, discoveries) = match merged {
        Some(merged) => {
            let run = explore(merged.clone(), options, symmetry, progress.as_mut());
            let names = merged.observer.discovered().map(|i| kinds[i].0).collect();
            (run, Discoveries::Names(names))
        }
        None => {
            let mut run = explore(full.clone(), options, symmetry, progress.as_mut());
            let paths = std::mem::take(&mut run.discoveries);
            (run, Discoveries::Paths(paths))
        }
    };
    let seconds = started.elapsed().as_secs_f64();
    let expansions = full.reduction_tally();

    let shortest_started = Instant::now();
    let discovered = |name: &str| match &discoveries {
        Discoveries::Paths(paths) => paths.contains_key(name),
        Discoveries::Names(names) => names.contains(&name),
    };
    let properties = kinds
        .into_iter()
        .map(|(name, kind)| {
            let verdict = verdict_of(&kind, discovered(name));
            let path = match (&discoveries, options.traces) {
                (_, Traces::None) => None,
                (Discoveries::Paths(paths), Traces::OfTheRun) => paths.get(name).cloned(),
                _ if discovered(name) => shortest(model, name),
                _ => None,
            };
            let (trace, explorer) = match path {
                Some(path) => {
                    let explorer = explorer_path(&full, &path.clone().into_vec());
                    (Some(trace_of(model, path)), explorer)
                }
                None => (None, None),
            };
            PropertyReport {
                name,
                kind: kind_word(&kind),
                verdict,
                trace,
                explorer_path: explorer,
            }
        })
        .collect();

    let unique_states = run.unique_states;
    Ok(CheckReport {
        model: M::NAME,
        design: model.design_name(),
        settings: model
            .settings()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        unique_states,
        generated_states: run.generated_states,
        max_depth: run.max_depth,
        symmetry: symmetry.is_some(),
        por: options.por,
        expansions,
        seconds,
        states_per_second: unique_states as f64 / seconds.max(1e-9),
        shortest_seconds: shortest_started.elapsed().as_secs_f64(),
        properties,
    })
}

/// A step as the Explorer shows it ([`Model::format_step`]): first a verdict line from
/// every property evaluated on the state the step leads to (the Explorer's own property
/// list shows only what its search has discovered, so it can call a violating state
/// safe), then the step in the model's words, then the state.
pub fn explorer_step<M: Spec>(model: &M, last: &M::State, action: M::Action) -> Option<String> {
    let step = model.describe_step(last, &action);
    let next = model.next_state(last, action)?;
    let (mut violated, mut reached, mut safety) = (Vec::new(), Vec::new(), 0);
    for p in model.properties() {
        if p.name == SENTINEL {
            continue;
        }
        match p.expectation {
            Kind::Always => {
                safety += 1;
                if !(p.condition)(model, &next) {
                    violated.push(p.name);
                }
            }
            Kind::Sometimes => {
                if (p.condition)(model, &next) {
                    reached.push(p.name);
                }
            }
            Kind::Eventually => {}
        }
    }
    let verdict = if violated.is_empty() {
        format!("all {safety} safety properties hold in this state")
    } else {
        format!("VIOLATES {}", violated.join(", "))
    };
    let reached = if reached.is_empty() {
        String::new()
    } else {
        format!("\nreaches {}", reached.join(", "))
    };
    let view = model.domain_view(&next);
    Some(format!("{verdict}{reached}\nstep: {step}\n\n{view}"))
}

#[cfg(test)]
mod tests;
