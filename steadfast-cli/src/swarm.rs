//! Swarm mode: seeded random walks over a model at bounds beyond exhaustive reach, split
//! into shards that run anywhere, and the merge of their results.
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
//! on [`Walker`], a wrapper whose only property evaluates the model's properties and
//! notes the depth at which each first fires in the current walk, and never fires
//! itself (so every walk runs to its end, as in [`steadfast_model::check`]'s merged
//! runs); a chooser that delegates to `UniformChooser` records the walk's choices and
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
use std::io::Read;
use std::path::{Path as FsPath, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use stateright::{Checker, Chooser, Expectation as Kind, Model, Path, Property, UniformChooser};
use steadfast_model::check::{explorer_path, trace_of, SENTINEL};
use steadfast_model::quote::shorten;
use steadfast_model::Spec;

use crate::args::{one_line, quote, Args, UsageError};
use crate::budget::RUN_FAILURE;
use crate::models::with_spec;
use crate::render;

/// The `format` field of a shard file.
pub(crate) const FORMAT: &str = "steadfast-swarm-shard/1";

/// Shard files larger than this are refused by `--merge`: a file of this program holds a
/// few paths of tens of steps, far below it.
pub(crate) const MAX_SHARD_FILE_BYTES: u64 = 16 << 20;

/// The longest time budget: a week.
const MAX_SECONDS: u64 = 7 * 24 * 3600;

/// The most shards of one swarm.
const MAX_SHARDS: u64 = 1_000_000;

/// Shard `i`'s seed under `--seed seed`: the `i`-th output (from 1) of SplitMix64 seeded
/// with `seed`. It depends on `i` only, not on the number of shards.
pub(crate) fn shard_seed(seed: u64, i: u64) -> u64 {
    // SplitMix64 adds its increment before each output: skip to the state before the
    // i-th one.
    let skipped = seed.wrapping_add(i.wrapping_sub(1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    steadfast_sim::rng::Rng::new(skipped).next_u64()
}

/// `--time`: whole seconds, minutes or hours (`30s`, `2m`, `1h`), at least a second.
/// stateright's simulation looks at its timeout once a second, so a finer budget could
/// not be kept.
pub(crate) fn parse_time(text: &str) -> Result<u64, UsageError> {
    let bad = || {
        UsageError(format!(
            "`--time` must be a whole number of seconds, minutes or hours such as 30s, 2m \
             or 1h, got {}",
            quote(text)
        ))
    };
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (digits, unit) = text.split_at(split);
    let scale = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        _ => return Err(bad()),
    };
    let n: u64 = digits.parse().map_err(|_| bad())?;
    match n.checked_mul(scale) {
        Some(0) => Err(UsageError(format!(
            "`--time` must be at least 1s, got {}",
            quote(text)
        ))),
        Some(s) if s <= MAX_SECONDS => Ok(s),
        _ => Err(UsageError(format!(
            "`--time` must be at most a week (168h), got {}",
            quote(text)
        ))),
    }
}

/// `--shard i/n` as `(i, n)`, with `1 <= i <= n`.
pub(crate) fn parse_shard(text: &str) -> Result<(u64, u64), UsageError> {
    let number = |s: &str| -> Option<u64> {
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    let Some((i, n)) = text
        .split_once('/')
        .and_then(|(i, n)| Some((number(i)?, number(n)?)))
    else {
        return Err(UsageError(format!(
            "`--shard` must be i/n such as 1/4 (shard i of n, 1 <= i <= n), got {}",
            quote(text)
        )));
    };
    if n == 0 || n > MAX_SHARDS {
        return Err(UsageError(format!(
            "`--shard {text}`: the number of shards must be within 1..={MAX_SHARDS}"
        )));
    }
    if i == 0 || i > n {
        return Err(UsageError(format!(
            "`--shard {text}`: shard {i} of {n} does not exist (shards count 1..={n})"
        )));
    }
    Ok((i, n))
}

/// What a walk found for one property.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Found {
    /// A state violating an `always` property.
    Counterexample,
    /// A state satisfying a `sometimes` property.
    Example,
    /// Nothing within the budget; not evidence that the property holds.
    #[serde(rename = "none-found")]
    Nothing,
}

impl Found {
    fn words(self) -> &'static str {
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
pub(crate) struct FoundStep {
    /// The action as the model names it (Debug form).
    pub action: String,
    /// The step in domain words.
    pub description: String,
}

/// The shortest path a shard found to a property's discovery.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FoundPath {
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
pub(crate) struct PropertyResult {
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
pub(crate) struct ShardFile {
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
    fn file_name(&self) -> String {
        format!("shard-{}-of-{}.json", self.shard, self.shards)
    }
}

/// A property's condition, as stateright holds it.
type Condition<M> = fn(&M, &<M as Model>::State) -> bool;

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

/// The model as the simulation checker sees it: the same states and actions, one
/// property that records what the model's properties do and never fires.
struct Walker<M: Model> {
    model: M,
    conditions: Arc<[(Kind, Condition<M>)]>,
    log: Arc<Mutex<Log>>,
}

impl<M: Model + Clone> Clone for Walker<M> {
    fn clone(&self) -> Self {
        Walker {
            model: self.model.clone(),
            conditions: Arc::clone(&self.conditions),
            log: Arc::clone(&self.log),
        }
    }
}

fn lock(log: &Mutex<Log>) -> MutexGuard<'_, Log> {
    // The walks run on one thread; a panic there ends the run before the log is read.
    log.lock().unwrap_or_else(|e| e.into_inner())
}

/// The wrapper's property: called once per state of a walk, in order, after the
/// choices that lead to it are recorded.
fn observe<M: Model>(walker: &Walker<M>, state: &M::State) -> bool {
    let mut log = lock(&walker.log);
    let log = &mut *log;
    let depth = log.choices.len().saturating_sub(1);
    for (i, (kind, condition)) in walker.conditions.iter().enumerate() {
        let could_improve = log.first[i].is_none()
            && log.best[i]
                .as_ref()
                .is_none_or(|b| depth < b.choices.len() - 1);
        if could_improve && condition(&walker.model, state) == (*kind == Kind::Sometimes) {
            log.first[i] = Some(depth);
        }
    }
    true
}

impl<M: Model> Model for Walker<M> {
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
        vec![Property::always(SENTINEL, observe::<M>)]
    }

    fn within_boundary(&self, state: &M::State) -> bool {
        self.model.within_boundary(state)
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
pub(crate) struct ShardRun {
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
pub(crate) fn walk<M: Spec>(model: &M, run: &ShardRun) -> Result<ShardFile, String> {
    let all = model.properties();
    if let Some(p) = all.iter().find(|p| p.expectation == Kind::Eventually) {
        return Err(format!(
            "swarm mode checks `always` and `sometimes` properties; `{}` is an `eventually` one",
            p.name
        ));
    }
    if !model.init_states().iter().all(|s| model.within_boundary(s)) {
        return Err("an initial state is outside the model's boundary".into());
    }
    let properties: Vec<_> = all.into_iter().filter(|p| p.name != SENTINEL).collect();
    let log = Arc::new(Mutex::new(Log {
        walks: 0,
        walk_seed: 0,
        choices: Vec::new(),
        first: vec![None; properties.len()],
        best: vec![None; properties.len()],
    }));
    let walker = Walker {
        model: model.clone(),
        conditions: properties
            .iter()
            .map(|p| (p.expectation.clone(), p.condition))
            .collect(),
        log: Arc::clone(&log),
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
            Some(best) => {
                let found = if p.expectation == Kind::Always {
                    Found::Counterexample
                } else {
                    Found::Example
                };
                (found, Some(describe(model, p, best)?))
            }
        };
        results.push(PropertyResult {
            name: p.name.to_string(),
            kind: if p.expectation == Kind::Always {
                "always"
            } else {
                "sometimes"
            }
            .to_string(),
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
fn describe<M: Spec>(model: &M, p: &Property<M>, best: &Best) -> Result<FoundPath, String> {
    let broken = || {
        format!(
            "the walk that found `{}` does not replay through the model (does it offer \
             actions that are not enabled?)",
            p.name
        )
    };
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

/// `check MODEL ... --simulate ...`
pub(crate) fn simulate<M: Spec>(args: &mut Args) -> Result<ExitCode, UsageError> {
    for switch in ["dfs", "symmetry", "no-shortest", "no-traces"] {
        if args.switch(switch) {
            return Err(UsageError(format!(
                "`--{switch}` is an option of the exhaustive check, not of `--simulate`"
            )));
        }
    }
    for option in ["threads", "report"] {
        if args.take(option).is_some() {
            return Err(UsageError(format!(
                "`--{option}` is an option of the exhaustive check, not of `--simulate` \
                 (one thread per shard; run shards side by side)"
            )));
        }
    }
    let seed = args.take_number("seed", 0, 0, usize::MAX)? as u64;
    let shard = match args.take("shard") {
        Some(text) => parse_shard(&text)?,
        None => (1, 1),
    };
    let seconds = match args.take("time") {
        Some(text) => parse_time(&text)?,
        None => {
            return Err(UsageError(
                "`--simulate` needs a time budget, `--time T` such as 30s or 2m".into(),
            ))
        }
    };
    let out = args.take("out").map(PathBuf::from);
    if out.as_ref().is_some_and(|o| o.as_os_str().is_empty()) {
        return Err(UsageError("`--out` needs a directory".into()));
    }
    crate::budget::watch(args, "check --simulate")?;
    let model: M = crate::commands::build(args)?;
    let run = ShardRun {
        seed,
        shard,
        seconds,
    };
    let file = walk(&model, &run).map_err(UsageError)?;
    if args.switch("json") {
        println!(
            "{}",
            serde_json::to_string_pretty(&file).expect("shard files serialise")
        );
    } else {
        print!("{}", render_shard(&file));
    }
    if let Some(dir) = out {
        let target = dir.join(file.file_name());
        let bytes = serde_json::to_vec_pretty(&file).expect("shard files serialise");
        let written =
            std::fs::create_dir_all(&dir).and_then(|()| crate::write_atomically(&target, &bytes));
        if let Err(e) = written {
            eprintln!(
                "steadfast: {}",
                one_line(&format!("cannot write `{}`: {e}", target.display()))
            );
            return Ok(ExitCode::from(RUN_FAILURE));
        }
    }
    Ok(exit_status(file.properties.iter().map(|p| p.found)))
}

/// As the exhaustive check: 1 when a safety property has a counterexample. A
/// reachability property without an example is no finding of a walk, so it exits 0.
fn exit_status(found: impl IntoIterator<Item = Found>) -> ExitCode {
    if found.into_iter().any(|f| f == Found::Counterexample) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

const CANNOT_HOLD: &str = "random walks cannot show that a property holds: \"none found\" \
                           means none within the walks taken\n";

fn settings_words(settings: &BTreeMap<String, String>) -> String {
    settings
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The steps of a path, numbered.
fn steps(path: &FoundPath) -> String {
    let mut out = String::new();
    for (i, step) in path.steps.iter().enumerate() {
        out.push_str(&format!("  {:>2}. {}\n", i + 1, step.description));
    }
    out.push_str(&format!("      final state: {}\n", path.last_state));
    out
}

fn path_heading(p: &PropertyResult, path: &FoundPath, by: &str) -> String {
    let shape = path
        .shape
        .as_ref()
        .map(|s| format!(" [{s}]"))
        .unwrap_or_default();
    let mut out = format!(
        "\ncounterexample to \"{}\"{shape}, {} steps, {by}",
        p.name, path.length
    );
    if let Some(explorer) = &path.explorer_path {
        out.push_str(&format!(" (Explorer: #/steps/{explorer})"));
    }
    out.push('\n');
    out
}

/// One shard's result as text.
pub(crate) fn render_shard(f: &ShardFile) -> String {
    let mut out = format!(
        "model {}, design {} ({})\nswarm shard {} of {}, seed {} (shard seed {}): {} walks, \
         {} states, max depth {}, {:.2} s, {:.0} walks/s, {:.0} states/s\n{CANNOT_HOLD}\n",
        f.model,
        f.design,
        settings_words(&f.settings),
        f.shard,
        f.shards,
        f.seed,
        f.shard_seed,
        f.walks,
        f.states,
        f.max_depth,
        f.seconds,
        f.walks as f64 / f.seconds.max(1e-9),
        f.states as f64 / f.seconds.max(1e-9),
    );
    let mut rows = vec![vec![
        "property".to_string(),
        "kind".to_string(),
        "found".to_string(),
        "shortest".to_string(),
        "walk".to_string(),
    ]];
    for p in &f.properties {
        let (len, walk) = p.path.as_ref().map_or((String::new(), String::new()), |x| {
            (format!("{} steps", x.length), x.walk.to_string())
        });
        rows.push(vec![
            p.name.clone(),
            p.kind.clone(),
            p.found.words().to_string(),
            len,
            walk,
        ]);
    }
    out.push_str(&render::table(&rows));
    for p in &f.properties {
        if let (Found::Counterexample, Some(path)) = (p.found, &p.path) {
            out.push_str(&path_heading(p, path, &format!("walk {}", path.walk)));
            out.push_str(&steps(path));
        }
    }
    out
}

/// Reads one shard file, refusing anything that is not one.
fn read_shard(file: &FsPath) -> Result<ShardFile, UsageError> {
    let name = shown(file);
    let fail = |problem: String| UsageError(format!("`{name}`: {problem}"));
    let opened = std::fs::File::open(file).map_err(|e| fail(format!("cannot read it: {e}")))?;
    let mut bytes = Vec::new();
    opened
        .take(MAX_SHARD_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| fail(format!("cannot read it: {e}")))?;
    if bytes.len() as u64 > MAX_SHARD_FILE_BYTES {
        return Err(fail(format!(
            "larger than {} MiB, not a shard file",
            MAX_SHARD_FILE_BYTES >> 20
        )));
    }
    let shard: ShardFile = serde_json::from_slice(&bytes).map_err(|e| {
        fail(format!(
            "not a shard result file: {}",
            shorten(&e.to_string())
        ))
    })?;
    if shard.format != FORMAT {
        return Err(fail(format!(
            "format {}, expected `{FORMAT}`",
            quote(&shard.format)
        )));
    }
    if shard.shard == 0 || shard.shard > shard.shards {
        return Err(fail(format!(
            "shard {} of {} does not exist",
            shard.shard, shard.shards
        )));
    }
    for p in &shard.properties {
        let consistent = match (&p.path, p.found) {
            (None, Found::Nothing) => true,
            (Some(path), Found::Counterexample | Found::Example) => {
                path.length == path.steps.len() && path.length == path.actions.len()
            }
            _ => false,
        };
        if !consistent {
            return Err(fail(format!(
                "property {}: its verdict and its path disagree",
                quote(&p.name)
            )));
        }
    }
    Ok(shard)
}

/// The shard files of `dir`, `shard-*.json`, by name.
fn shard_files(dir: &FsPath) -> Result<Vec<PathBuf>, UsageError> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| UsageError(format!("`--merge {}`: {e}", dir.display())))?;
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| UsageError(format!("`--merge {}`: {e}", dir.display())))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("shard-") && name.ends_with(".json") {
            files.push(entry.path());
        }
    }
    if files.is_empty() {
        return Err(UsageError(format!(
            "`--merge {}`: no shard-*.json files there",
            dir.display()
        )));
    }
    files.sort();
    Ok(files)
}

/// `check --merge DIR`. Shard files are input like any other: each is checked against
/// the model it names (its properties are the model's, and each path it reports is
/// replayed through the model and must end where its property fires) before it is
/// counted, and what is printed comes from the model, not the file.
pub(crate) fn merge(args: &Args, dir: &str) -> Result<ExitCode, UsageError> {
    args.no_more_positionals(0)?;
    args.no_options("check --merge")?;
    let files = shard_files(FsPath::new(dir))?;
    let first = read_shard(&files[0])?;
    // The registry entry of the shard's model: `leadership` with several jobs is its own.
    let settings = Args {
        options: first.settings.clone().into_iter().collect(),
        ..Args::default()
    };
    let entry = crate::models::entry(&first.model, &settings);
    with_spec!(entry.as_str(), M => merge_of::<M>(&files, first))
}

/// The model `shard` (read from `file`) was walked on.
fn model_of<M: Spec>(file: &FsPath, shard: &ShardFile) -> Result<M, UsageError> {
    let pairs: Vec<(&str, &str)> = shard
        .settings
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let fail = |e: steadfast_model::SettingsError| UsageError(format!("`{}`: {e}", shown(file)));
    let settings = steadfast_model::Settings::parse(M::params(), &pairs).map_err(fail)?;
    M::build(&shard.design, &settings).map_err(fail)
}

/// A file name as printed: escaped, so that a name cannot drive the terminal.
fn shown(file: &FsPath) -> String {
    one_line(&file.display().to_string())
}

/// Checks `shard` against `model`: its properties are the model's, each found path is
/// one of the model's ending where its property fires. Returns the shard with every
/// path rebuilt from the model.
fn verified<M: Spec>(
    model: &M,
    file: &FsPath,
    mut shard: ShardFile,
) -> Result<ShardFile, UsageError> {
    let fail = |problem: String| UsageError(format!("`{}`: {problem}", shown(file)));
    if shard.properties.is_empty() {
        return Err(fail("no properties, so no verdicts".into()));
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
        return Err(fail(format!(
            "its properties are not those of {} (design {})",
            M::NAME,
            model.design_name()
        )));
    }
    for (result, p) in shard.properties.iter_mut().zip(&properties) {
        let Some(path) = &result.path else { continue };
        let found = match p.expectation {
            Kind::Always => Found::Counterexample,
            _ => Found::Example,
        };
        let rebuilt = (result.found == found)
            .then(|| replayed(model, p, path))
            .flatten()
            .ok_or_else(|| {
                fail(format!(
                    "property {}: its path is not one of the model's ending in {}",
                    quote(p.name),
                    found.words()
                ))
            })?;
        result.path = Some(rebuilt);
    }
    Ok(shard)
}

fn kind_word(kind: &Kind) -> &'static str {
    if *kind == Kind::Always {
        "always"
    } else {
        "sometimes"
    }
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
            let (init, named) =
                steadfast_model::check::decode_explorer_path(model, explorer).ok()?;
            (named == actions).then_some(vec![init])?
        }
        None => model.init_states(),
    };
    inits
        .into_iter()
        .find_map(|init| found_path(model, p, init, &actions, walk))
}

/// The best a swarm found for one property.
struct MergedProperty {
    result: PropertyResult,
    /// `(shard, shards, file)` of the shard that found the path.
    by: Option<(u64, u64, PathBuf)>,
}

/// The totals of a swarm's shards.
#[derive(Default)]
struct Totals {
    walks: u64,
    states: u64,
    seconds: f64,
    longest: f64,
}

/// The merge of `files`, whose first, `first`, names the model `M`.
fn merge_of<M: Spec>(files: &[PathBuf], first: ShardFile) -> Result<ExitCode, UsageError> {
    let model: M = model_of(&files[0], &first)?;
    let first = verified(&model, &files[0], first)?;
    let mut merged: Vec<MergedProperty> = first
        .properties
        .iter()
        .map(|p| MergedProperty {
            result: PropertyResult {
                found: Found::Nothing,
                path: None,
                ..p.clone()
            },
            by: None,
        })
        .collect();
    let mut seeds: BTreeMap<u64, PathBuf> = BTreeMap::new();
    let mut totals = Totals::default();
    for (i, file) in files.iter().enumerate() {
        let shard = if i == 0 {
            first.clone()
        } else {
            let shard = read_shard(file)?;
            same_swarm(&first, &files[0], &shard, file)?;
            verified(&model, file, shard)?
        };
        if let Some(other) = seeds.insert(shard.shard_seed, file.clone()) {
            return Err(UsageError(format!(
                "`{}`: same shard seed as `{}`; it repeats the same walks",
                shown(file),
                shown(&other)
            )));
        }
        keep_shortest(&mut merged, &shard, file);
        totals.walks = totals.walks.saturating_add(shard.walks);
        totals.states = totals.states.saturating_add(shard.states);
        totals.seconds += shard.seconds;
        totals.longest = totals.longest.max(shard.seconds);
    }
    print!("{}", render_merge(&model, files.len(), &totals, &merged));
    Ok(exit_status(merged.iter().map(|m| m.result.found)))
}

/// Refuses `shard` unless it walked the model, design and settings of `first`.
fn same_swarm(
    first: &ShardFile,
    first_file: &FsPath,
    shard: &ShardFile,
    file: &FsPath,
) -> Result<(), UsageError> {
    let differs = |what: &str| {
        Err(UsageError(format!(
            "`{}`: {what} from that of `{}`",
            shown(file),
            shown(first_file)
        )))
    };
    if shard.model != first.model {
        return differs("its model differs");
    }
    if shard.design != first.design {
        return differs("its design differs");
    }
    if shard.settings != first.settings {
        return differs("its settings differ");
    }
    Ok(())
}

/// Keeps, per property, the shortest path of `merged` and `shard`.
fn keep_shortest(merged: &mut [MergedProperty], shard: &ShardFile, file: &FsPath) {
    for (m, p) in merged.iter_mut().zip(&shard.properties) {
        let Some(path) = &p.path else { continue };
        let shorter = m
            .result
            .path
            .as_ref()
            .is_none_or(|best| path.length < best.length);
        if shorter {
            m.result.found = p.found;
            m.result.path = Some(path.clone());
            m.by = Some((shard.shard, shard.shards, file.to_path_buf()));
        }
    }
}

/// The merged table and the shortest counterexamples, every name from the model.
fn render_merge<M: Spec>(
    model: &M,
    shards: usize,
    t: &Totals,
    merged: &[MergedProperty],
) -> String {
    let settings = model
        .settings()
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ");
    let mut out = format!(
        "model {}, design {} ({settings})\nswarm of {shards} shards: {} walks, {} states, \
         {:.2} s of walking (longest shard {:.2} s)\n{CANNOT_HOLD}\n",
        M::NAME,
        model.design_name(),
        t.walks,
        t.states,
        t.seconds,
        t.longest,
    );
    let mut rows = vec![vec![
        "property".to_string(),
        "kind".to_string(),
        "found".to_string(),
        "shortest".to_string(),
        "by shard".to_string(),
    ]];
    for m in merged {
        let (len, by) = match (&m.result.path, &m.by) {
            (Some(path), Some((i, n, _))) => (format!("{} steps", path.length), format!("{i}/{n}")),
            _ => (String::new(), String::new()),
        };
        rows.push(vec![
            m.result.name.clone(),
            m.result.kind.clone(),
            m.result.found.words().to_string(),
            len,
            by,
        ]);
    }
    out.push_str(&render::table(&rows));
    for m in merged {
        if let (Found::Counterexample, Some(path), Some((i, n, file))) =
            (m.result.found, &m.result.path, &m.by)
        {
            let by = format!("shard {i}/{n}, walk {} ({})", path.walk, shown(file));
            out.push_str(&path_heading(&m.result, path, &by));
            out.push_str(&steps(path));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_seeds_are_splitmix_outputs_independent_of_the_shard_count() {
        let mut rng = steadfast_sim::rng::Rng::new(42);
        let outputs: Vec<u64> = (0..4).map(|_| rng.next_u64()).collect();
        let seeds: Vec<u64> = (1..=4).map(|i| shard_seed(42, i)).collect();
        assert_eq!(seeds, outputs);
        assert_ne!(shard_seed(42, 1), shard_seed(43, 1));
    }

    #[test]
    fn time_budgets_are_whole_units_within_a_week() {
        assert_eq!(parse_time("30s"), Ok(30));
        assert_eq!(parse_time("2m"), Ok(120));
        assert_eq!(parse_time("1h"), Ok(3600));
        assert_eq!(parse_time("168h"), Ok(MAX_SECONDS));
        for bad in [
            "", "0", "30", "0s", "1.5s", "-1s", "+1s", "5parsecs", "1 s", "s", "169h",
        ] {
            assert!(parse_time(bad).is_err(), "{bad}");
        }
        assert!(parse_time("99999999999999999999h").is_err());
    }

    #[test]
    fn shards_count_from_one_to_n() {
        assert_eq!(parse_shard("1/1"), Ok((1, 1)));
        assert_eq!(parse_shard("4/4"), Ok((4, 4)));
        for bad in [
            "0/4", "5/4", "x", "1/0", "1/", "/4", "+1/4", "1/4/4", "-1/4",
        ] {
            assert!(parse_shard(bad).is_err(), "{bad}");
        }
    }
}
