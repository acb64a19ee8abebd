//! A model seen at a runtime's grain: one coarse step is a run of the model's steps (an
//! external step, then the steps the runtime takes by itself within the same call)
//! ending where none of those is left. The eager operator
//! ([`crate::durable::eager`]) and the automatic leadership driver
//! ([`crate::leadership::automatic`]) are two grains of this one construction: each says
//! which runs its runtime makes of one state ([`Grain::events`]) and where it rests
//! ([`Grain::quiescent`]); [`Coarse`] makes the model of them, replaying a step's runs
//! on the step-by-step model and refusing one whose steps are not enabled.

use std::fmt::Debug;
use std::hash::Hash;
use std::ops::Deref;

use serde::de::DeserializeOwned;
use serde::Serialize;
use stateright::{Model, Property};
use steadfast_model::{Expectation, Param, Settings, SettingsError, Spec};

/// A state of the step-by-step model of grain `G`.
pub type FineState<G> = <<G as Grain>::Fine as Model>::State;
/// A step of the step-by-step model of grain `G`.
pub type FineAction<G> = <<G as Grain>::Fine as Model>::Action;

/// A runtime's grain over a step-by-step model.
pub trait Grain: Clone + Debug + Send + Sync + Sized + 'static {
    /// The step-by-step model.
    type Fine: Spec;
    /// One coarse step: the model's steps it stands for.
    type Step: Clone + Debug + Hash + Eq + Send + Sync + Serialize + DeserializeOwned + 'static;
    /// The coarse model's name on the command line.
    const NAME: &'static str;
    /// One line on what the coarse model is.
    const SUMMARY: &'static str;
    /// The coarse model's one property: every state is a resting point.
    const QUIESCENT: &'static str;

    /// The grain over `fine`, or why the runtime cannot take the model's settings.
    fn of(fine: Self::Fine) -> Result<Self, SettingsError>;
    /// The step-by-step model.
    fn fine(&self) -> &Self::Fine;
    /// The model's steps `step` stands for, in order.
    fn steps(step: &Self::Step) -> &[FineAction<Self>];
    /// Every coarse step out of `s`, with the state it ends in.
    fn events(&self, s: &FineState<Self>) -> Vec<(Self::Step, FineState<Self>)>;
    /// Whether the runtime rests at `s`: no step it takes by itself is enabled.
    fn quiescent(&self, s: &FineState<Self>) -> bool;
    /// Named presets of settings the coarse model offers (none unless it says so).
    fn scenarios() -> &'static [(&'static str, &'static [(&'static str, &'static str)])] {
        &[]
    }
}

/// The model of a grain: its states are the step-by-step model's resting states, its
/// steps the grain's coarse steps. It reads through to the grain ([`Deref`]).
#[derive(Clone, Debug)]
pub struct Coarse<G>(pub G);

impl<G> Deref for Coarse<G> {
    type Target = G;

    fn deref(&self) -> &G {
        &self.0
    }
}

impl<G: Grain> Model for Coarse<G> {
    type State = FineState<G>;
    type Action = G::Step;

    fn init_states(&self) -> Vec<Self::State> {
        self.fine().init_states()
    }

    fn actions(&self, s: &Self::State, actions: &mut Vec<G::Step>) {
        actions.extend(self.events(s).into_iter().map(|(e, _)| e));
    }

    /// Every state is a resting point: a run ends only where no step the runtime takes
    /// by itself is left.
    fn properties(&self) -> Vec<Property<Self>> {
        vec![Property::always(
            G::QUIESCENT,
            |m: &Self, s: &Self::State| m.quiescent(s),
        )]
    }

    /// Replays the step's runs on the model; `None` if one of them is not enabled.
    fn next_state(&self, s: &Self::State, e: G::Step) -> Option<Self::State> {
        let fine = self.fine();
        let (mut s, mut enabled) = (s.clone(), Vec::new());
        for a in G::steps(&e) {
            enabled.clear();
            fine.actions(&s, &mut enabled);
            if !enabled.contains(a) {
                return None;
            }
            s = fine.next_state(&s, a.clone())?;
        }
        Some(s)
    }
}

impl<G: Grain> Spec for Coarse<G> {
    const NAME: &'static str = G::NAME;
    const SUMMARY: &'static str = G::SUMMARY;

    fn designs() -> &'static [&'static str] {
        G::Fine::designs()
    }

    fn design_name(&self) -> &'static str {
        self.fine().design_name()
    }

    fn settings(&self) -> &Settings {
        self.fine().settings()
    }

    fn params() -> &'static [Param] {
        G::Fine::params()
    }

    fn scenarios() -> &'static [(&'static str, &'static [(&'static str, &'static str)])] {
        G::scenarios()
    }

    fn build(design: &str, settings: &Settings) -> Result<Self, SettingsError> {
        G::of(G::Fine::build(design, settings)?).map(Coarse)
    }

    fn focus(&self, property: Option<&str>) -> Result<Self, SettingsError> {
        match property {
            None => Ok(self.clone()),
            Some(name) if name == G::QUIESCENT => Ok(self.clone()),
            Some(name) => Err(SettingsError(format!(
                "unknown property `{name}` of {} (known: {})",
                G::NAME,
                G::QUIESCENT
            ))),
        }
    }

    /// The model's own words for each step of the run, in order.
    fn describe_step(&self, before: &Self::State, e: &G::Step) -> String {
        let fine = self.fine();
        let mut s = before.clone();
        let mut parts = Vec::new();
        for a in G::steps(e) {
            parts.push(fine.describe_step(&s, a));
            match fine.next_state(&s, a.clone()) {
                Some(next) => s = next,
                None => break,
            }
        }
        parts.join("; ")
    }

    /// The coarse graph checks no property of its own: it is the model's, coarser.
    fn expectations() -> Vec<Expectation> {
        Vec::new()
    }
}
