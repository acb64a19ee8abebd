//! Conformance between the stateright models (`steadfast-model`) and the production
//! state machines (`steadfast`): traces the model generates drive the machines step by
//! step, and after every step both sides' observable projections must be equal.
//!
//! This crate is the only one that sees both sides. A [`Binding`] says, for one model, how
//! a model action becomes runtime events (and how the model's environment choices become
//! the runtime environment's answers), and how each side projects its state onto the
//! shared observable value. Everything else here is generic:
//!
//! - [`cover`]: every transition of the reachable state graph, each executed once from a
//!   clone of the runtime at its source state (the prefix tree of the trace set "one path
//!   to every unique state, extended by every enabled action"), plus the converse check:
//!   events the model does not allow at a state must be rejected by the runtime;
//! - [`walk`]: seeded random walks, for depth beyond exhaustive reach;
//! - [`trace`]: trace files (our JSON and the Informal Trace Format) and their replay.

use std::fmt::{self, Debug};
use std::hash::Hash;

use serde::de::DeserializeOwned;
use serde::Serialize;
use steadfast_model::Spec;

pub mod cover;
pub mod diff;
pub mod durable;
pub mod grain;
pub mod itf;
pub mod leadership;
pub mod trace;
pub mod validate;
pub mod walk;

/// How one model is bound to its runtime.
pub trait Binding {
    /// The model.
    type Model: Spec<State = Self::State, Action = Self::Action>;
    /// The model's state.
    type State: Clone + Debug + Hash + Eq + Send + Sync + Serialize + 'static;
    /// The model's action.
    type Action: Clone + Debug + Hash + Eq + Send + Sync + Serialize + DeserializeOwned + 'static;
    /// The production machines together with a scripted environment. Cloned at every
    /// branching point of the state graph, and sent to the thread that checks it.
    type Runtime: Clone + Send;
    /// The observable projection both sides produce.
    type Projection: Serialize + PartialEq + Debug;

    /// Whether the runtime has a counterpart for every step of `model` at its settings;
    /// `Err` says, in one line, which setting it lacks. Commands refuse such a model
    /// before they replay anything.
    fn supports(model: &Self::Model) -> Result<(), String> {
        let _ = model;
        Ok(())
    }

    /// The runtime in the situation of the model's initial state `init`.
    fn start(model: &Self::Model, init: &Self::State) -> Self::Runtime;

    /// The model side of the projection.
    fn model_view(model: &Self::Model, state: &Self::State) -> Self::Projection;

    /// The runtime side of the projection.
    fn runtime_view(runtime: &Self::Runtime) -> Self::Projection;

    /// [`Binding::model_view`] written over `out`, a projection built before: a binding
    /// whose projection holds collections may refill them in place rather than allocate
    /// new ones at every step. The result must equal `model_view(model, state)`.
    fn model_view_into(model: &Self::Model, state: &Self::State, out: &mut Self::Projection) {
        *out = Self::model_view(model, state);
    }

    /// [`Binding::runtime_view`] written over `out`, as [`Binding::model_view_into`].
    fn runtime_view_into(runtime: &Self::Runtime, out: &mut Self::Projection) {
        *out = Self::runtime_view(runtime);
    }

    /// Why the runtime refused a step: its typed error, or what the binding found (the
    /// production bindings use [`Rejection`]). Written out only for a report; a probe's
    /// refusal is expected and never read.
    type Rejection: fmt::Display;

    /// Drives the runtime through the events that realise `action`, taken by the model at
    /// `before`. `Err` carries the runtime's rejection.
    fn step(
        model: &Self::Model,
        runtime: &mut Self::Runtime,
        before: &Self::State,
        action: &Self::Action,
    ) -> Result<(), Self::Rejection>;

    /// Actions the model does *not* enable at `state` but that map to runtime events: the
    /// runtime must reject each with its typed error and leave its projection unchanged.
    fn probes(model: &Self::Model, state: &Self::State) -> Vec<Self::Action>;

    /// Whether `after`, a copy of `before` that refused a step, is still `before` in
    /// every field its projection reads. Then its projection is `before`'s, which matched
    /// the model already, and is not computed again. `false` (the default) always
    /// computes it.
    fn unchanged(before: &Self::Runtime, after: &Self::Runtime) -> bool {
        let _ = (before, after);
        false
    }

    /// The runtime's state in its own terms (its `Debug` text), printed with a
    /// divergence so that a failing report shows what the production machines hold, not
    /// only the projection. Empty when the binding has nothing to add.
    fn describe(_runtime: &Self::Runtime) -> String {
        String::new()
    }

    /// The runtime event, effect or call an action of kind `kind` ([`Binding::kind`]) is
    /// checked against, in a few words: what `conform --json` reports per action kind.
    fn counterpart(kind: &str) -> &'static str {
        let _ = kind;
        "(not named by this binding)"
    }

    /// The kind of an action, for coverage counts (e.g. `RevokeLeadership`).
    fn kind(action: &Self::Action) -> String {
        let text = format!("{action:?}");
        text.split(|c: char| !c.is_alphanumeric() && c != '_')
            .next()
            .unwrap_or_default()
            .to_string()
    }
}

/// Where and how model and runtime parted.
#[derive(Debug, Clone)]
pub struct Divergence {
    /// The actions from the initial state up to and including the failing one.
    pub trace: Vec<String>,
    /// 1-based number of the failing step in `trace`.
    pub step: usize,
    /// The failing action.
    pub action: String,
    /// What went wrong.
    pub problem: Problem,
    /// The runtime as [`Binding::describe`] gives it: after the failing step, or, when
    /// the runtime accepted or mishandled a step the model forbids, at the state probed.
    pub runtime: String,
}

/// Why a runtime refused a step ([`Binding::Rejection`]): its typed error `E`, or what
/// the binding found. Kept typed, so that the refusals of probes, which are expected,
/// are never written out.
#[derive(Clone, Debug, PartialEq)]
pub enum Rejection<E> {
    /// The runtime refused the event with its typed error.
    Runtime(E),
    /// The binding found the runtime unable to take the step.
    Binding(String),
}

impl<E: fmt::Display> fmt::Display for Rejection<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rejection::Runtime(e) => e.fmt(f),
            Rejection::Binding(m) => f.write_str(m),
        }
    }
}

impl<E> From<String> for Rejection<E> {
    fn from(m: String) -> Self {
        Rejection::Binding(m)
    }
}

impl<E> From<&str> for Rejection<E> {
    fn from(m: &str) -> Self {
        Rejection::Binding(m.to_string())
    }
}

/// The kinds of disagreement.
#[derive(Debug, Clone, PartialEq)]
pub enum Problem {
    /// The projections differ after the step; one line per differing field.
    Projection(Vec<String>),
    /// The model allows the step, the runtime rejected it.
    Rejected(String),
    /// The model forbids the step, the runtime accepted it.
    Accepted,
    /// The runtime rejected a forbidden step but changed its projection anyway.
    RejectedButChanged(Vec<String>),
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "model and runtime diverge at step {} ({}):",
            self.step, self.action
        )?;
        match &self.problem {
            Problem::Projection(lines) => {
                writeln!(f, "  projections differ (model | runtime):")?;
                for l in lines {
                    writeln!(f, "    {l}")?;
                }
            }
            Problem::Rejected(e) => {
                writeln!(f, "  the model allows it; the runtime rejected it: {e}")?
            }
            Problem::Accepted => writeln!(f, "  the model forbids it; the runtime accepted it")?,
            Problem::RejectedButChanged(lines) => {
                writeln!(f, "  the runtime rejected it but its projection changed:")?;
                for l in lines {
                    writeln!(f, "    {l}")?;
                }
            }
        }
        if !self.runtime.is_empty() {
            writeln!(f, "  runtime: {}", self.runtime)?;
        }
        writeln!(f, "  trace:")?;
        for (i, a) in self.trace.iter().enumerate() {
            let mark = if i + 1 == self.step { " <--" } else { "" };
            writeln!(f, "    {:>3}. {a}{mark}", i + 1)?;
        }
        Ok(())
    }
}

impl std::error::Error for Divergence {}

/// Compares the two projections of `state` / `runtime`; the field diff when they differ.
pub fn compare<B: Binding>(
    model: &B::Model,
    state: &B::State,
    runtime: &B::Runtime,
) -> Result<(), Vec<String>> {
    let want = B::model_view(model, state);
    let got = B::runtime_view(runtime);
    if want == got {
        Ok(())
    } else {
        Err(diff::fields(&want, &got))
    }
}

/// Projections kept from step to step and filled in place
/// ([`Binding::model_view_into`], [`Binding::runtime_view_into`]).
pub(crate) struct Scratch<B: Binding> {
    want: Option<B::Projection>,
    got: Option<B::Projection>,
}

impl<B: Binding> Scratch<B> {
    pub(crate) fn new() -> Self {
        Scratch {
            want: None,
            got: None,
        }
    }

    /// The model's projection of `state`, kept until the next call.
    pub(crate) fn want(&mut self, model: &B::Model, state: &B::State) {
        match &mut self.want {
            Some(v) => B::model_view_into(model, state, v),
            None => self.want = Some(B::model_view(model, state)),
        }
    }

    /// Compares the runtime's projection with the one [`Scratch::want`] kept.
    pub(crate) fn compare(&mut self, runtime: &B::Runtime) -> Result<(), Vec<String>> {
        let got = match &mut self.got {
            Some(v) => {
                B::runtime_view_into(runtime, v);
                v
            }
            None => self.got.insert(B::runtime_view(runtime)),
        };
        let want = self
            .want
            .as_ref()
            .expect("a model projection is kept first");
        if want == got {
            Ok(())
        } else {
            Err(diff::fields(want, got))
        }
    }

    /// Executes one model step on the runtime and checks the projections after it; the
    /// model's projection of `after` is kept for the probes that follow.
    pub(crate) fn checked_step(
        &mut self,
        model: &B::Model,
        runtime: &mut B::Runtime,
        before: &B::State,
        action: &B::Action,
        after: &B::State,
    ) -> Result<(), Problem> {
        B::step(model, runtime, before, action).map_err(|e| Problem::Rejected(e.to_string()))?;
        self.want(model, after);
        self.compare(runtime).map_err(Problem::Projection)
    }

    /// Checks that the runtime refuses `action`, which the model does not enable at
    /// `state`, and that its projection stays the one [`Scratch::want`] kept for `state`.
    /// `runtime` must be one whose projection matched that one (every caller checked it
    /// on reaching `state`), so a refusal that left it unchanged ([`Binding::unchanged`])
    /// needs no second projection.
    pub(crate) fn checked_refusal(
        &mut self,
        model: &B::Model,
        runtime: &B::Runtime,
        state: &B::State,
        action: &B::Action,
    ) -> Result<(), Problem> {
        let mut probe = runtime.clone();
        match B::step(model, &mut probe, state, action) {
            Ok(()) => Err(Problem::Accepted),
            Err(_) if B::unchanged(runtime, &probe) => Ok(()),
            Err(_) => self.compare(&probe).map_err(Problem::RejectedButChanged),
        }
    }
}
