//! Replaying a trace: the model walked along its actions, the runtime of a binding
//! driven alongside, their projections compared after every step.

use super::*;

/// The outcome of one replayed step.
#[derive(Clone, Debug, Serialize)]
pub struct StepOutcome {
    /// Step number (1-based).
    pub step: usize,
    /// The step in the model's words.
    pub description: String,
    /// Whether the runtime agreed with the model after it.
    pub agreed: bool,
}

/// A replay: the steps that agreed and, if it came to that, where they stopped agreeing.
#[derive(Debug)]
pub struct Replay {
    /// Model name.
    pub model: String,
    /// Design of the trace.
    pub design: String,
    /// Steps replayed, in order; the last one disagreed if `divergence` is set.
    pub steps: Vec<StepOutcome>,
    /// The first disagreement, if any.
    pub divergence: Option<Divergence>,
}

/// Builds the trace's model, walks its actions through the model (checking each is
/// enabled and, where the file records states, that the model computes the same), and
/// drives the runtime of `B` alongside, comparing projections after every step. The
/// replay stops at the first disagreement between model and runtime, which it reports
/// in [`Replay::divergence`]; problems with the file itself are errors.
pub fn replay<B: Binding>(loaded: &Loaded) -> Result<Replay, TraceError> {
    let header = Header {
        file: loaded.file.clone(),
        model: loaded.model.clone(),
        design: loaded.design.clone(),
        settings: loaded.settings.clone(),
    };
    let mut steps = loaded.steps.iter().cloned();
    let first = steps
        .next()
        .ok_or_else(|| malformed(&loaded.file, "no steps"))?;
    let mut replayer = Replayer::<B>::start(&header, &first)?;
    for (i, step) in steps.enumerate() {
        if !replayer.step(i + 1, &step)? {
            break;
        }
    }
    Ok(replayer.finish())
}

/// What a trace file says before its steps: which model, design and settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// File name, for messages.
    pub file: String,
    /// Model name.
    pub model: String,
    /// Design name.
    pub design: String,
    /// Settings by name.
    pub settings: BTreeMap<String, String>,
}

/// A replay in progress, taking a trace's steps one at a time ([`replay`],
/// [`stream::replay_file`]).
pub struct Replayer<B: Binding> {
    file: String,
    model: B::Model,
    state: B::State,
    runtime: B::Runtime,
    report: Replay,
    path: Vec<String>,
    scratch: Scratch<B>,
}

impl<B: Binding> Replayer<B> {
    /// The model the header names, and its runtime at the trace's first step.
    pub fn start(header: &Header, first: &TraceStep) -> Result<Self, TraceError> {
        let file = header.file.as_str();
        let name = <B::Model as Spec>::NAME;
        if header.model != name {
            return Err(TraceError::WrongModel {
                file: file.to_string(),
                found: header.model.clone(),
                expected: name.to_string(),
            });
        }
        let overrides: Vec<(&str, &str)> = header
            .settings
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let params = <B::Model as Spec>::params();
        let settings = Settings::parse(params, &overrides).map_err(|e| TraceError::Settings {
            file: file.to_string(),
            problem: e.to_string(),
        })?;
        let model =
            B::Model::build(&header.design, &settings).map_err(|e| TraceError::Settings {
                file: file.to_string(),
                problem: e.to_string(),
            })?;
        B::supports(&model).map_err(|problem| TraceError::Settings {
            file: file.to_string(),
            problem,
        })?;
        if first.action.is_some() {
            return Err(malformed(
                file,
                "the first step must be the initial state, without an action",
            ));
        }
        let step_error = |problem: String| TraceError::Step {
            file: file.to_string(),
            step: 0,
            problem,
        };
        let inits = model.init_states();
        let state = match &first.state {
            None => inits
                .first()
                .cloned()
                .ok_or_else(|| step_error("the model has no initial state".into()))?,
            Some(value) => {
                let found = inits
                    .iter()
                    .find(|s| serde_json::to_value(s).ok().as_ref() == Some(value));
                found
                    .cloned()
                    .ok_or_else(|| step_error("not an initial state of the model".into()))?
            }
        };
        let runtime = B::start(&model, &state);
        let mut report = Replay {
            model: header.model.clone(),
            design: header.design.clone(),
            steps: Vec::new(),
            divergence: None,
        };
        if let Err(lines) = compare::<B>(&model, &state, &runtime) {
            report.divergence = Some(Divergence {
                trace: Vec::new(),
                step: 0,
                action: "(initial state)".into(),
                problem: Problem::Projection(lines),
                runtime: B::describe(&runtime),
            });
        }
        Ok(Replayer {
            file: file.to_string(),
            model,
            state,
            runtime,
            report,
            path: Vec::new(),
            scratch: Scratch::<B>::new(),
        })
    }

    /// Takes step `i` (1 for the first action); whether the replay goes on (false once
    /// model and runtime parted).
    pub fn step(&mut self, i: usize, step: &TraceStep) -> Result<bool, TraceError> {
        if self.report.divergence.is_some() {
            return Ok(false);
        }
        let step_error = |problem: String| TraceError::Step {
            file: self.file.clone(),
            step: i,
            problem,
        };
        let value = step
            .action
            .as_ref()
            .ok_or_else(|| step_error("no action".into()))?;
        let action: B::Action = serde_json::from_value(value.clone()).map_err(|e| {
            let quoted = match value {
                Value::String(name) => quote(name),
                other => shorten(&other.to_string()),
            };
            step_error(format!(
                "unknown action {quoted}: {}",
                shorten(&e.to_string())
            ))
        })?;
        let mut enabled = Vec::new();
        self.model.actions(&self.state, &mut enabled);
        if !enabled.contains(&action) {
            return Err(step_error(format!(
                "{action:?} is not enabled in the model here"
            )));
        }
        let next = self
            .model
            .next_state(&self.state, action.clone())
            .ok_or_else(|| step_error(format!("{action:?} changes nothing")))?;
        if let Some(want) = &step.state {
            if serde_json::to_value(&next).ok().as_ref() != Some(want) {
                let lines =
                    crate::diff::fields(want, &serde_json::to_value(&next).unwrap_or_default());
                return Err(step_error(format!(
                    "the recorded state is not the model's: {}",
                    shorten(&lines.join("; "))
                )));
            }
        }
        let description = self.model.describe_step(&self.state, &action);
        self.path.push(format!("{action:?}"));
        match self
            .scratch
            .checked_step(&self.model, &mut self.runtime, &self.state, &action, &next)
        {
            Ok(()) => self.report.steps.push(StepOutcome {
                step: i,
                description,
                agreed: true,
            }),
            Err(problem) => {
                self.report.steps.push(StepOutcome {
                    step: i,
                    description,
                    agreed: false,
                });
                self.report.divergence = Some(Divergence {
                    trace: self.path.clone(),
                    step: i,
                    action: format!("{action:?}"),
                    problem,
                    runtime: B::describe(&self.runtime),
                });
                return Ok(false);
            }
        }
        self.state = next;
        Ok(true)
    }

    /// The replay's report.
    pub fn finish(self) -> Replay {
        self.report
    }
}
