//! Swarm mode: seeded random walks over a model at bounds beyond exhaustive reach, split
//! into shards that run anywhere; each shard's result, and its check against the model
//! before shards are merged. The command line (`check --simulate`, `check --merge`)
//! reads and writes the shard files and prints them.
//!
//! `check MODEL ... --simulate --seed N --shard i/n --time T [--out DIR]` walks the model
//! with stateright's simulation checker for `T` and writes `DIR/shard-<i>-of-<n>.json`;
//! `check --merge DIR` combines every shard file of a directory into one verdict table.
//! A walk can find a counterexample or an example, never show that a property holds:
//! the verdicts are "counterexample", "example" and "none found".
//!
//! stateright's simulation keeps one discovery per property and overwrites it with every
//! later state that fires it, in the same walk or a later one, so what it reports is
//! neither a walk's first violation nor the shortest over walks. The walks therefore run
//! on the model wrapped with one property that evaluates the model's properties and
//! notes the depth at which each first fires in the current walk, and never fires
//! itself, so every walk runs to its end (the wrapper of [`crate::check`]'s runs that
//! need no traces, with another observer); a chooser that delegates to `UniformChooser` records the walk's choices and
//! closes the walk when the next one starts. Per property the shortest prefix is kept
//! and replayed through the model at the end; a property is evaluated only at depths
//! where it could still shorten what was found.
//!
//! Seeds: shard `i` with `--seed N` uses the `i`-th output of SplitMix64 seeded with `N`
//! ([`shard_seed`]), whatever `n` is. stateright's simulation (one thread) uses that seed
//! for its first walk and draws each later walk's seed from a `StdRng` seeded with it;
//! `UniformChooser` draws a walk's choices from a `StdRng` seeded with the walk's seed.
//! A rerun with the same arguments and the same binary repeats the same walks in the
//! same order; how many of them fit in `T` depends on the machine and its load, so the
//! walk and state counts, and any shorter path a later walk finds, are not reproducible.
//! `StdRng` is `rand`'s, whose algorithm may change between its versions: another build
//! may walk differently for the same seed.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use stateright::{Checker, Chooser, Expectation as Kind, Model, Path, Property, UniformChooser};

use crate::check::{
    conditions, decode_explorer_path, explorer_path, fires, kind_word, trace_of, Condition,
    Observed, Observer, SENTINEL,
};
use crate::quote::quote;
use crate::rng::Rng;
use crate::Spec;

/// The `format` field of a shard file.
pub const FORMAT: &str = "steadfast-swarm-shard/1";

/// Shard `i`'s seed under `--seed seed`: the `i`-th output (from 1) of SplitMix64 seeded
/// with `seed`. It depends on `i` only, not on the number of shards.
pub fn shard_seed(seed: u64, i: u64) -> u64 {
    Rng::nth_output(seed, i)
}

/// What a walk found for one property.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Found {
    /// A state violating an `always` property.
    Counterexample,
    /// A state satisfying a `sometimes` property.
    Example,
    /// Nothing within the budget; not evidence that the property holds.
    #[serde(rename = "none-found")]
    Nothing,
}

impl Found {
    /// What a walk finds for a property of this kind: a counterexample to an `always`
    /// property, an example of a `sometimes` one.
    fn of(kind: &Kind) -> Found {
        if *kind == Kind::Always {
            Found::Counterexample
        } else {
            Found::Example
        }
    }

    /// The verdict in words, as tables print it.
    pub fn words(self) -> &'static str {
        match self {
            Found::Counterexample => "counterexample",
            Found::Example => "example",
            Found::Nothing => "none found",
        }
    }
}

/// One step of a path found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FoundStep {
    /// The action as the model names it (Debug form).
    pub action: String,
    /// The step in domain words.
    pub description: String,
}

/// The shortest path a shard found to a property's discovery.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FoundPath {
    /// Actions taken.
    pub length: usize,
    /// The walk that found it, counting from 1 in the shard.
    pub walk: u64,
    /// That walk's seed.
    pub walk_seed: u64,
    /// The steps, in order.
    pub steps: Vec<FoundStep>,
    /// The actions in the model's own serialised form, for replay.
    pub actions: Vec<serde_json::Value>,
    /// The Explorer path (`#/steps/...`) of the path.
    pub explorer_path: Option<String>,
    /// The known shape of the path, if any.
    pub shape: Option<String>,
    /// The last state, as Debug text.
    pub last_state: String,
}

/// One property's result in a shard.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PropertyResult {
    /// Property name.
    pub name: String,
    /// `always` or `sometimes`.
    pub kind: String,
    /// What the walks found.
    pub found: Found,
    /// The shortest path found, when one was.
    pub path: Option<FoundPath>,
}

/// One shard's result file, `shard-<i>-of-<n>.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardFile {
    /// Always [`FORMAT`].
    pub format: String,
    /// Model name.
    pub model: String,
    /// Design name.
    pub design: String,
    /// Settings by name, as text.
    pub settings: BTreeMap<String, String>,
    /// `--seed`.
    pub seed: u64,
    /// This shard, from 1.
    pub shard: u64,
    /// Shards of the swarm.
    pub shards: u64,
    /// The seed this shard's walks derive from ([`shard_seed`]).
    pub shard_seed: u64,
    /// `--time`, seconds.
    pub time_budget_seconds: u64,
    /// Wall time of the walks, seconds.
    pub seconds: f64,
    /// Walks started.
    pub walks: u64,
    /// States visited, over all walks (repeats across walks included).
    pub states: u64,
    /// The longest walk, actions.
    pub max_depth: u64,
    /// One entry per property, in model order.
    pub properties: Vec<PropertyResult>,
}

impl ShardFile {
    /// The file's name: `shard-<i>-of-<n>.json`.
    pub fn file_name(&self) -> String {
        format!("shard-{}-of-{}.json", self.shard, self.shards)
    }
}

/// The best path so far for one property: the choices from the initial state (the
/// initial state's index, then each action's index among the enabled actions).
#[derive(Clone)]
struct Best {
    choices: Vec<usize>,
    walk: u64,
    walk_seed: u64,
}

/// What the walks have seen, shared by the wrapper model and the chooser (one thread).
struct Log {
    walks: u64,
    walk_seed: u64,
    /// The current walk's choices.
    choices: Vec<usize>,
    /// Per property, the depth at which it first fired in the current walk.
    first: Vec<Option<usize>>,
    best: Vec<Option<Best>>,
}

impl Log {
    /// Keeps the current walk's prefixes that are shorter than the best so far.
    fn close_walk(&mut self) {
        for (i, depth) in self.first.iter_mut().enumerate() {
            let Some(depth) = depth.take() else { continue };
            if self.best[i]
                .as_ref()
                .is_none_or(|b| depth < b.choices.len() - 1)
            {
                self.best[i] = Some(Best {
                    choices: self.choices[..=depth].to_vec(),
                    walk: self.walks,
                    walk_seed: self.walk_seed,
                });
            }
        }
        self.choices.clear();
    }
}

/// The walks' observer of the model's properties: each is evaluated at each state of a
/// walk, in order, after the choices that lead to it are recorded, and only where it
/// could still shorten what was found.
struct WalkObserver<M: Model> {
    conditions: Vec<(Kind, Condition<M>)>,
    log: Arc<Mutex<Log>>,
}

/// The model as the simulation checker sees it: the same states and actions, one
/// property that records what the model's properties do and never fires.
type Walker<M> = Observed<M, WalkObserver<M>>;

fn lock(log: &Mutex<Log>) -> MutexGuard<'_, Log> {
    // The walks run on one thread; a panic there ends the run before the log is read.
    log.lock().unwrap_or_else(|e| e.into_inner())
}

impl<M: Model> Observer<M> for WalkObserver<M> {
    fn observe(&self, model: &M, state: &M::State) {
        let mut log = lock(&self.log);
        let log = &mut *log;
        let depth = log.choices.len().saturating_sub(1);
        for (i, (kind, condition)) in self.conditions.iter().enumerate() {
            let could_improve = log.first[i].is_none()
                && log.best[i]
                    .as_ref()
                    .is_none_or(|b| depth < b.choices.len() - 1);
            if could_improve && fires(kind, *condition, model, state) {
                log.first[i] = Some(depth);
            }
        }
    }
}

/// `UniformChooser`'s choices, recorded; a new walk closes the previous one.
#[derive(Clone)]
struct Recorder {
    log: Arc<Mutex<Log>>,
}

impl<M: Model> Chooser<Walker<M>> for Recorder {
    type State = <UniformChooser as Chooser<Walker<M>>>::State;

    fn new_state(&self, seed: u64) -> Self::State {
        let mut log = lock(&self.log);
        log.close_walk();
        log.walks += 1;
        log.walk_seed = seed;
        <UniformChooser as Chooser<Walker<M>>>::new_state(&UniformChooser, seed)
    }

    fn choose_initial_state(&self, state: &mut Self::State, initial: &[M::State]) -> usize {
        let i = <UniformChooser as Chooser<Walker<M>>>::choose_initial_state(
            &UniformChooser,
            state,
            initial,
        );
        lock(&self.log).choices.push(i);
        i
    }

    fn choose_action(
        &self,
        state: &mut Self::State,
        current: &M::State,
        actions: &[M::Action],
    ) -> usize {
        let i = <UniformChooser as Chooser<Walker<M>>>::choose_action(
            &UniformChooser,
            state,
            current,
            actions,
        );
        lock(&self.log).choices.push(i);
        i
    }
}

/// A shard's run, before it is written.
pub struct ShardRun {
    /// The `--seed` given.
    pub seed: u64,
    /// `(i, n)` of `--shard`.
    pub shard: (u64, u64),
    /// `--time`, seconds.
    pub seconds: u64,
}

/// Replays recorded choices through the model; `None` when they do not fit it (which
/// the model's contract that every offered action is enabled rules out).
fn replay<M: Spec>(model: &M, choices: &[usize]) -> Option<(M::State, Vec<M::Action>)> {
    let (first, rest) = choices.split_first()?;
    let init = model.init_states().get(*first)?.clone();
    let (mut state, mut taken, mut enabled) = (init.clone(), Vec::new(), Vec::new());
    for &i in rest {
        enabled.clear();
        model.actions(&state, &mut enabled);
        let action = enabled.get(i)?.clone();
        state = model.next_state(&state, action.clone())?;
        taken.push(action);
    }
    Some((init, taken))
}

/// Walks `model` for the run's budget and describes what was found.
pub fn walk<M: Spec>(model: &M, run: &ShardRun) -> Result<ShardFile, SwarmError> {
    let all = model.properties();
    if let Some(p) = all.iter().find(|p| p.expectation == Kind::Eventually) {
        return Err(SwarmError::Eventually(p.name));
    }
    if !model.init_states().iter().all(|s| model.within_boundary(s)) {
        return Err(SwarmError::InitialStateOutsideBoundary);
    }
    let properties: Vec<_> = all.into_iter().filter(|p| p.name != SENTINEL).collect();
    let log = Arc::new(Mutex::new(Log {
        walks: 0,
        walk_seed: 0,
        choices: Vec::new(),
        first: vec![None; properties.len()],
        best: vec![None; properties.len()],
    }));
    let walker: Walker<M> = Observed {
        model: model.clone(),
        observer: Arc::new(WalkObserver {
            conditions: conditions(model),
            log: Arc::clone(&log),
        }),
    };
    let seed = shard_seed(run.seed, run.shard.0);
    let started = Instant::now();
    let checker = walker
        .checker()
        .threads(1)
        .timeout(Duration::from_secs(run.seconds))
        .spawn_simulation(
            seed,
            Recorder {
                log: Arc::clone(&log),
            },
        )
        .join();
    let seconds = started.elapsed().as_secs_f64();
    let mut log = lock(&log);
    log.close_walk();
    let mut results = Vec::new();
    for (p, best) in properties.iter().zip(&log.best) {
        let (found, path) = match best {
            None => (Found::Nothing, None),
            Some(best) => (Found::of(&p.expectation), Some(describe(model, p, best)?)),
        };
        results.push(PropertyResult {
            name: p.name.to_string(),
            kind: kind_word(&p.expectation).to_string(),
            found,
            path,
        });
    }
    Ok(ShardFile {
        format: FORMAT.to_string(),
        model: M::NAME.to_string(),
        design: model.design_name().to_string(),
        settings: settings_of(model),
        seed: run.seed,
        shard: run.shard.0,
        shards: run.shard.1,
        shard_seed: seed,
        time_budget_seconds: run.seconds,
        seconds,
        walks: log.walks,
        states: checker.state_count() as u64,
        max_depth: checker.max_depth() as u64,
        properties: results,
    })
}

fn settings_of<M: Spec>(model: &M) -> BTreeMap<String, String> {
    model
        .settings()
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The path of `best` in the model's words, checked to end where `p` fires.
fn describe<M: Spec>(model: &M, p: &Property<M>, best: &Best) -> Result<FoundPath, SwarmError> {
    let broken = || SwarmError::WalkDoesNotReplay(p.name);
    let (init, actions) = replay(model, &best.choices).ok_or_else(broken)?;
    found_path(model, p, init, &actions, (best.walk, best.walk_seed)).ok_or_else(broken)
}

/// The path from `init` along `actions` in the model's words, with the walk that found
/// it; `None` unless it is a path of the model, within its boundary, ending where `p`
/// fires (a violation of an `always` property, a witness of a `sometimes` one).
fn found_path<M: Spec>(
    model: &M,
    p: &Property<M>,
    init: M::State,
    actions: &[M::Action],
    (walk, walk_seed): (u64, u64),
) -> Option<FoundPath> {
    let path = Path::from_actions(model, init, actions)?;
    let pairs = path.clone().into_vec();
    if !pairs.iter().all(|(s, _)| model.within_boundary(s)) {
        return None;
    }
    let last = &pairs.last()?.0;
    if (p.condition)(model, last) != (p.expectation == Kind::Sometimes) {
        return None;
    }
    let explorer = explorer_path(model, &pairs);
    let trace = trace_of(model, path);
    Some(FoundPath {
        length: actions.len(),
        walk,
        walk_seed,
        steps: trace
            .steps
            .into_iter()
            .map(|s| FoundStep {
                action: s.action,
                description: s.description,
            })
            .collect(),
        actions: actions
            .iter()
            .map(|a| serde_json::to_value(a).expect("actions serialise"))
            .collect(),
        explorer_path: explorer,
        shape: trace.shape,
        last_state: trace.last_state,
    })
}

/// Checks `shard` against `model`: its properties are the model's, each found path is
/// one of the model's ending where its property fires. Returns the shard with every
/// path rebuilt from the model, so that nothing printed comes from the file.
pub fn verify<M: Spec>(model: &M, mut shard: ShardFile) -> Result<ShardFile, SwarmError> {
    if shard.properties.is_empty() {
        return Err(SwarmError::NoProperties);
    }
    let properties: Vec<Property<M>> = model
        .properties()
        .into_iter()
        .filter(|p| p.name != SENTINEL)
        .collect();
    let kinds: Vec<(String, String)> = properties
        .iter()
        .map(|p| (p.name.to_string(), kind_word(&p.expectation).to_string()))
        .collect();
    let claimed: Vec<(String, String)> = shard
        .properties
        .iter()
        .map(|p| (p.name.clone(), p.kind.clone()))
        .collect();
    if claimed != kinds {
        return Err(SwarmError::OtherProperties {
            model: M::NAME,
            design: model.design_name(),
        });
    }
    for (result, p) in shard.properties.iter_mut().zip(&properties) {
        let Some(path) = &result.path else { continue };
        let found = Found::of(&p.expectation);
        let rebuilt = (result.found == found)
            .then(|| replayed(model, p, path))
            .flatten()
            .ok_or(SwarmError::NotAPathOfTheModel {
                property: p.name,
                found,
            })?;
        result.path = Some(rebuilt);
    }
    Ok(shard)
}

/// `path` replayed through `model` from the initial state its Explorer path names (or
/// the first from which its actions are a path), rebuilt in the model's words.
fn replayed<M: Spec>(model: &M, p: &Property<M>, path: &FoundPath) -> Option<FoundPath> {
    let actions: Vec<M::Action> = path
        .actions
        .iter()
        .map(|a| serde_json::from_value(a.clone()).ok())
        .collect::<Option<_>>()?;
    let walk = (path.walk, path.walk_seed);
    let inits = match &path.explorer_path {
        Some(explorer) => {
            let (init, named) = decode_explorer_path(model, explorer).ok()?;
            (named == actions).then_some(vec![init])?
        }
        None => model.init_states(),
    };
    inits
        .into_iter()
        .find_map(|init| found_path(model, p, init, &actions, walk))
}

/// Why a walk or a shard file's check against the model failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SwarmError {
    /// The model has an `eventually` property, which a finite walk cannot decide.
    Eventually(&'static str),
    /// An initial state lies outside the model's boundary.
    InitialStateOutsideBoundary,
    /// The recorded choices of the walk that found this property do not replay.
    WalkDoesNotReplay(&'static str),
    /// A shard file with no properties.
    NoProperties,
    /// A shard file whose properties are not the model's.
    OtherProperties {
        /// The model's name.
        model: &'static str,
        /// The design.
        design: &'static str,
    },
    /// A shard file's path for this property is not one of the model's ending in what
    /// it claims.
    NotAPathOfTheModel {
        /// The property.
        property: &'static str,
        /// What the path claims to end in.
        found: Found,
    },
}

impl fmt::Display for SwarmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SwarmError::Eventually(p) => write!(
                f,
                "swarm mode checks `always` and `sometimes` properties; `{p}` is an \
                 `eventually` one"
            ),
            SwarmError::InitialStateOutsideBoundary => {
                write!(f, "an initial state is outside the model's boundary")
            }
            SwarmError::WalkDoesNotReplay(p) => write!(
                f,
                "the walk that found `{p}` does not replay through the model (does it \
                 offer actions that are not enabled?)"
            ),
            SwarmError::NoProperties => write!(f, "no properties, so no verdicts"),
            SwarmError::OtherProperties { model, design } => write!(
                f,
                "its properties are not those of {model} (design {design})"
            ),
            SwarmError::NotAPathOfTheModel { property, found } => write!(
                f,
                "property {}: its path is not one of the model's ending in {}",
                quote(property),
                found.words()
            ),
        }
    }
}

impl std::error::Error for SwarmError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_seeds_are_splitmix_outputs_independent_of_the_shard_count() {
        let mut rng = Rng::new(42);
        let outputs: Vec<u64> = (0..4).map(|_| rng.next_u64()).collect();
        let seeds: Vec<u64> = (1..=4).map(|i| shard_seed(42, i)).collect();
        assert_eq!(seeds, outputs);
        assert_ne!(shard_seed(42, 1), shard_seed(43, 1));
    }
}
