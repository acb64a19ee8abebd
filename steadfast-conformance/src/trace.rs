//! Trace sets and trace files.
//!
//! [`trace_set`] enumerates, with a stateright checker visitor, one path to every unique
//! state and extends each by every enabled action: a set of traces that together take
//! every transition of the reachable graph (as many traces as stateright generates states,
//! less the initial ones).
//!
//! A trace is written either in our JSON format ([`TraceFile`]) or in the Informal Trace
//! Format (Apalache ADR-015), as Quint writes it for model-based testing: one ITF state
//! per step, the model's state fields as ITF variables plus `mbt::actionTaken` (the name
//! of the action that led to the state, `"init"` for the first) and `mbt::nondetPicks`
//! (the action's arguments, `{"args": Some(..)}`, `None` for the first state); the model,
//! design and settings in `#meta`, as text (`settings` as `name=value` pairs separated by
//! commas), since ITF readers take only text there. [`load`] reads either format (and ITF
//! files of the earlier shape, with the action as a variant and the settings as a
//! record), [`replay`] drives the runtime along one.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path as FsPath;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use stateright::{Checker, CheckerVisitor, Model, Path};
use steadfast_model::quote::{quote, shorten};
use steadfast_model::{Settings, Spec};

use crate::cover::FastMap;
use crate::{compare, itf, Binding, Divergence, Problem, Scratch};

pub mod stream;

mod replay;
pub use replay::*;

/// The `format` field of our JSON trace files.
pub const FORMAT: &str = "steadfast-trace/1";

/// The ITF variable that holds the name of the action taken.
pub const ACTION_VAR: &str = "mbt::actionTaken";

/// The ITF variable that holds the action's arguments.
pub const PICKS_VAR: &str = "mbt::nondetPicks";

/// A trace in our JSON format.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct TraceFile {
    /// Always [`FORMAT`].
    pub format: String,
    /// Model name.
    pub model: String,
    /// Design name.
    pub design: String,
    /// Settings by name, as text.
    pub settings: BTreeMap<String, String>,
    /// The initial state, then one entry per action.
    pub steps: Vec<TraceStep>,
}

/// One step of a trace file: the action taken (none for the initial state) and the state
/// it led to. Either may be omitted on reading (states are then computed by the model).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct TraceStep {
    /// The action, as serde_json writes the model's action type.
    #[serde(default)]
    pub action: Option<Value>,
    /// The state after the action.
    #[serde(default)]
    pub state: Option<Value>,
}

/// Errors reading or replaying a trace file; each names the file, and the step where
/// there is one.
#[derive(Debug, Clone, PartialEq)]
pub enum TraceError {
    /// The file could not be read.
    Io {
        /// File name.
        file: String,
        /// The system's message.
        message: String,
    },
    /// The file is not a trace in either format.
    Malformed {
        /// File name.
        file: String,
        /// What is wrong.
        problem: String,
    },
    /// The trace belongs to another model.
    WrongModel {
        /// File name.
        file: String,
        /// The model the file names.
        found: String,
        /// The model asked for.
        expected: String,
    },
    /// The design or settings of the trace are not accepted by the model.
    Settings {
        /// File name.
        file: String,
        /// The model's message.
        problem: String,
    },
    /// A step's action is not an action of the model, or not enabled where it is taken.
    Step {
        /// File name.
        file: String,
        /// 1-based step number (0 is the initial state).
        step: usize,
        /// What is wrong.
        problem: String,
    },
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceError::Io { file, message } => write!(f, "{file}: cannot read: {message}"),
            TraceError::Malformed { file, problem } => {
                write!(f, "{file}: not a trace file: {problem}")
            }
            TraceError::WrongModel {
                file,
                found,
                expected,
            } => write!(
                f,
                "{file}: a trace of model {}, not of model `{expected}`",
                quote(found)
            ),
            TraceError::Settings { file, problem } => write!(f, "{file}: {problem}"),
            TraceError::Step {
                file,
                step,
                problem,
            } => write!(f, "{file}: step {step}: {problem}"),
        }
    }
}

impl std::error::Error for TraceError {}

/// One path to every unique state, each extended by every enabled action, as action
/// lists from the given initial state index, sorted (shortest first) for a stable order.
pub fn trace_set<M: Spec>(model: &M) -> Vec<(usize, Vec<M::Action>)> {
    let traces = Arc::new(Mutex::new(Vec::new()));
    let full = model
        .focus(None)
        .expect("focusing on no property cannot fail");
    let extend = Extend::<M> {
        inits: model.init_states(),
        traces: Arc::clone(&traces),
    };
    full.checker().visitor(extend).spawn_bfs().join();
    let mut traces = std::mem::take(&mut *traces.lock().unwrap_or_else(|p| p.into_inner()));
    // Ordered by length, initial state, then the text of the actions. When no action's
    // text begins another's, comparing traces action by action (by each action's rank
    // among the texts) orders them as their whole texts would, without writing them.
    let mut text: FastMap<M::Action, String> = FastMap::default();
    for (_, trace) in &traces {
        for action in trace {
            if !text.contains_key(action) {
                text.insert(action.clone(), format!("{action:?}"));
            }
        }
    }
    let mut texts: Vec<&String> = text.values().collect();
    texts.sort();
    texts.dedup();
    let prefix_free = texts.windows(2).all(|w| !w[1].starts_with(w[0].as_str()));
    if prefix_free {
        let rank: FastMap<&M::Action, u32> = text
            .iter()
            .map(|(a, t)| (a, texts.partition_point(|u| *u < t) as u32))
            .collect();
        traces.sort_by_cached_key(|(i, t)| {
            let ranks: Vec<u32> = t.iter().map(|a| rank[a]).collect();
            (t.len(), *i, ranks)
        });
    } else {
        traces.sort_by_cached_key(|(i, t)| (t.len(), *i, format!("{t:?}")));
    }
    // The checker visits each state once; equal traces could only come from equal
    // initial states.
    traces.dedup();
    traces
}

/// The visitor behind [`trace_set`]: the path to each state the checker visits, extended
/// by every action enabled there whose next state lies within the model's boundary.
struct Extend<M: Spec> {
    inits: Vec<M::State>,
    traces: Arc<Mutex<Traces<M>>>,
}

/// Traces as (initial state index, actions).
type Traces<M> = Vec<(usize, Vec<<M as Model>::Action>)>;

/// States [`trace_set`] has visited in this process, for a watcher on another thread
/// (a memory budget that stops the process says how far the enumeration got).
static VISITED: AtomicUsize = AtomicUsize::new(0);

/// How many states [`trace_set`] has visited in this process.
pub fn states_visited() -> usize {
    VISITED.load(Relaxed)
}

impl<M: Spec> CheckerVisitor<M> for Extend<M> {
    fn visit(&self, model: &M, path: Path<M::State, M::Action>) {
        VISITED.fetch_add(1, Relaxed);
        let pairs = path.into_vec();
        let init = self
            .inits
            .iter()
            .position(|s| *s == pairs[0].0)
            .expect("visited paths start at an initial state");
        let prefix: Vec<M::Action> = pairs.iter().filter_map(|(_, a)| a.clone()).collect();
        let last = &pairs[pairs.len() - 1].0;
        let mut actions = Vec::new();
        model.actions(last, &mut actions);
        let mut found = Vec::new();
        for action in actions {
            match model.next_state(last, action.clone()) {
                Some(next) if model.within_boundary(&next) => {
                    let mut trace = Vec::with_capacity(prefix.len() + 1);
                    trace.extend_from_slice(&prefix);
                    trace.push(action);
                    found.push((init, trace));
                }
                _ => {}
            }
        }
        self.traces
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(found);
    }
}

fn settings_map<M: Spec>(model: &M) -> BTreeMap<String, String> {
    model
        .settings()
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A path as (state, action taken from it) pairs, the last action being `None`.
pub type Steps<M> = Vec<(<M as Model>::State, Option<<M as Model>::Action>)>;

/// The states of a path of `model` from initial state `init` along `actions`; `None` if
/// the actions are not a path of the model.
pub fn states_of<M: Model>(model: &M, init: usize, actions: &[M::Action]) -> Option<Steps<M>>
where
    M::State: PartialEq + Clone,
    M::Action: PartialEq,
{
    let first = model.init_states().get(init)?.clone();
    Path::from_actions(model, first, actions).map(Path::into_vec)
}

/// A trace in our JSON format.
pub fn to_json<M: Spec>(model: &M, init: usize, actions: &[M::Action]) -> Option<TraceFile>
where
    M::State: Serialize,
    M::Action: Serialize,
{
    let pairs = states_of(model, init, actions)?;
    let mut steps = vec![TraceStep {
        action: None,
        state: serde_json::to_value(&pairs[0].0).ok(),
    }];
    for window in pairs.windows(2) {
        steps.push(TraceStep {
            action: window[0]
                .1
                .as_ref()
                .and_then(|a| serde_json::to_value(a).ok()),
            state: serde_json::to_value(&window[1].0).ok(),
        });
    }
    Some(TraceFile {
        format: FORMAT.to_string(),
        model: M::NAME.to_string(),
        design: model.design_name().to_string(),
        settings: settings_map(model),
        steps,
    })
}

/// A trace in the Informal Trace Format.
pub fn to_itf<M: Spec>(
    model: &M,
    init: usize,
    actions: &[M::Action],
) -> Result<Value, itf::ItfError>
where
    M::State: Serialize,
    M::Action: Serialize,
{
    let pairs = states_of(model, init, actions)
        .ok_or_else(|| itf::ItfError("the actions are not a path of the model".into()))?;
    let mut vars: Vec<String> = Vec::new();
    let mut states = Vec::new();
    let mut taken = json!("init");
    let mut picks = json!({ "args": { "tag": "None", "value": {} } });
    for (index, (state, action)) in pairs.iter().enumerate() {
        let mut record = match itf::encode(state)? {
            Value::Object(fields) => fields,
            other => [("state".to_string(), other)].into_iter().collect(),
        };
        if vars.is_empty() {
            vars = record.keys().cloned().collect();
            vars.push(ACTION_VAR.to_string());
            vars.push(PICKS_VAR.to_string());
        }
        record.insert(ACTION_VAR.to_string(), taken.clone());
        record.insert(PICKS_VAR.to_string(), picks.clone());
        record.insert("#meta".to_string(), json!({ "index": index }));
        states.push(Value::Object(record));
        if let Some(a) = action {
            // An action is a variant: its tag is the name, its value the arguments.
            let encoded = itf::encode(a)?;
            let (Some(tag), Some(args)) = (encoded.get("tag"), encoded.get("value")) else {
                return Err(itf::ItfError(format!("action {encoded} is not a variant")));
            };
            taken = tag.clone();
            picks = json!({ "args": { "tag": "Some", "value": args } });
        }
    }
    let settings: Vec<String> = settings_map(model)
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    Ok(json!({
        "#meta": {
            "format": "ITF",
            "format-description": "https://apalache-mc.org/docs/adr/015adr-trace.html",
            "source": "steadfast",
            "model": M::NAME,
            "design": model.design_name(),
            "settings": settings.join(","),
        },
        "vars": vars,
        "states": states,
    }))
}

/// A trace read from a file, in our JSON shapes whatever its format.
#[derive(Clone, Debug, PartialEq)]
pub struct Loaded {
    /// File name, for messages.
    pub file: String,
    /// Model name.
    pub model: String,
    /// Design name.
    pub design: String,
    /// Settings by name.
    pub settings: BTreeMap<String, String>,
    /// Steps, the first being the initial state.
    pub steps: Vec<TraceStep>,
}

pub(crate) fn malformed(file: &str, problem: impl Into<String>) -> TraceError {
    TraceError::Malformed {
        file: file.to_string(),
        problem: problem.into(),
    }
}

/// Reads a trace from text in either format; `file` names it in errors.
pub fn parse(file: &str, text: &str) -> Result<Loaded, TraceError> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| malformed(file, shorten(&e.to_string())))?;
    if value.get("vars").is_some() && value.get("states").is_some() {
        return parse_itf(file, &value);
    }
    let trace: TraceFile =
        serde_json::from_value(value).map_err(|e| malformed(file, shorten(&e.to_string())))?;
    if trace.format != FORMAT {
        return Err(malformed(
            file,
            format!("format {}, expected `{FORMAT}`", quote(&trace.format)),
        ));
    }
    if trace.steps.is_empty() || trace.steps[0].action.is_some() {
        return Err(malformed(
            file,
            "the first step must be the initial state, without an action",
        ));
    }
    Ok(Loaded {
        file: file.to_string(),
        model: trace.model,
        design: trace.design,
        settings: trace.settings,
        steps: trace.steps,
    })
}

fn parse_itf(file: &str, value: &Value) -> Result<Loaded, TraceError> {
    let meta = value
        .get("#meta")
        .ok_or_else(|| malformed(file, "ITF trace without #meta (model and design)"))?;
    let header = itf_header(file, meta)?;
    let states = value["states"]
        .as_array()
        .ok_or_else(|| malformed(file, "`states` is not a list"))?;
    if states.is_empty() {
        return Err(malformed(file, "no states"));
    }
    let steps = states
        .iter()
        .enumerate()
        .map(|(i, s)| itf_step(file, i, s))
        .collect::<Result<_, _>>()?;
    Ok(Loaded {
        file: file.to_string(),
        model: header.model,
        design: header.design,
        settings: header.settings,
        steps,
    })
}

/// The model, design and settings an ITF file's `#meta` names.
pub(crate) fn itf_header(file: &str, meta: &Value) -> Result<Header, TraceError> {
    let text = |key: &str| {
        meta.get(key)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| malformed(file, format!("#meta has no `{key}`")))
    };
    let (model, design) = (text("model")?, text("design")?);
    let settings = match meta.get("settings") {
        None => BTreeMap::new(),
        Some(Value::String(text)) => text
            .split(',')
            .filter(|pair| !pair.is_empty())
            .map(|pair| {
                pair.split_once('=')
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .ok_or_else(|| {
                        malformed(
                            file,
                            format!("#meta settings: {} is not name=value", quote(pair)),
                        )
                    })
            })
            .collect::<Result<_, _>>()?,
        // The earlier shape: a record of text values.
        Some(s) => serde_json::from_value(s.clone())
            .map_err(|e| malformed(file, format!("#meta settings: {}", shorten(&e.to_string()))))?,
    };
    Ok(Header {
        file: file.to_string(),
        model,
        design,
        settings,
    })
}

/// ITF state `i` as a step in our shapes: the action (none for the first state) and the
/// model state.
pub(crate) fn itf_step(file: &str, i: usize, s: &Value) -> Result<TraceStep, TraceError> {
    let record = s
        .as_object()
        .ok_or_else(|| malformed(file, format!("state {i} is not a record")))?;
    let mut fields = record.clone();
    fields.remove("#meta");
    let taken = fields.remove(ACTION_VAR);
    let picks = fields.remove(PICKS_VAR);
    // Problems may quote the file's values: capped.
    let step_error = |problem: String| TraceError::Step {
        file: file.to_string(),
        step: i,
        problem: shorten(&problem),
    };
    let action = match (i, taken) {
        (0, _) => None,
        (_, None) => return Err(step_error(format!("no `{ACTION_VAR}`"))),
        // As Quint writes it: the name here, the arguments in the picks.
        (_, Some(Value::String(name))) => {
            let args = match picks.as_ref().and_then(|p| p.get("args")) {
                Some(arg) if arg.get("tag").and_then(Value::as_str) == Some("Some") => arg
                    .get("value")
                    .cloned()
                    .unwrap_or_else(|| json!({ "#tup": [] })),
                Some(arg) if arg.get("tag").and_then(Value::as_str) == Some("None") => {
                    json!({ "#tup": [] })
                }
                _ => {
                    return Err(step_error(format!(
                        "`{PICKS_VAR}` has no `args` option for action {}",
                        quote(&name)
                    )))
                }
            };
            let variant = json!({ "tag": name, "value": args });
            Some(itf::decode(&variant).map_err(|e| step_error(e.to_string()))?)
        }
        // The earlier shape: the whole action as a variant.
        (_, Some(a)) => Some(itf::decode(&a).map_err(|e| step_error(e.to_string()))?),
    };
    let state = match fields.remove("state") {
        Some(only) if fields.is_empty() => only,
        Some(other) => {
            fields.insert("state".into(), other);
            Value::Object(fields)
        }
        None => Value::Object(fields),
    };
    let state = itf::decode(&state).map_err(|e| step_error(e.to_string()))?;
    Ok(TraceStep {
        action,
        state: Some(state),
    })
}

/// Reads a trace file in either format.
pub fn load(path: &FsPath) -> Result<Loaded, TraceError> {
    load_capped(path, MAX_TRACE_BYTES)
}

/// The largest trace file [`load`] reads: the trace sets' files are kilobytes, and
/// decoding takes a multiple of the file's size in memory, so a larger file (or an
/// endless one, such as `/dev/zero`) is refused before it is read whole.
pub const MAX_TRACE_BYTES: u64 = 64 << 20;

/// [`load`] with a size cap of `max_bytes`.
pub fn load_capped(path: &FsPath, max_bytes: u64) -> Result<Loaded, TraceError> {
    use std::io::Read;
    let file = path.display().to_string();
    let io = |e: std::io::Error| TraceError::Io {
        file: file.clone(),
        message: e.to_string(),
    };
    let too_large = || {
        malformed(
            &file,
            format!("larger than the {max_bytes} bytes a trace file may have"),
        )
    };
    let f = std::fs::File::open(path).map_err(io)?;
    let meta = f.metadata().map_err(io)?;
    if meta.is_file() && meta.len() > max_bytes {
        return Err(too_large());
    }
    // Read at most one byte past the cap: a device or pipe has no length to check.
    let mut bytes = Vec::new();
    f.take(max_bytes + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > max_bytes {
        return Err(too_large());
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        malformed(
            &file,
            format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()),
        )
    })?;
    parse(&file, &text)
}
