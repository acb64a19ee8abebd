//! steadfast-model: stateright models of two Apache Flink bugs and their fixes.
//!
//! - [`leadership`]: the job leadership lifecycle of FLINK-39704 (apache/flink PR 28201),
//!   where a globally terminal job result is masked as SUSPENDED by a concurrent
//!   leadership revocation and the job is run again.
//! - [`durable`]: durable actions of flink-agents issue 1158, where a restored action
//!   repeats an external call whose result the log already holds.
//!
//! Every model is parameterised by a *design* (the unpatched code, each half of a fix,
//! the fixed code) and by *settings* (bounds and environment assumptions), both plain
//! data. The [`Spec`] trait is what the checker CLI, the verdict tables and the
//! conformance layer see of a model; [`check`] runs the checker over it.

use std::fmt::Debug;
use std::hash::Hash;

use serde::de::DeserializeOwned;
use serde::Serialize;
use stateright::Model;

pub mod check;
pub mod durable;
pub mod leadership;
pub mod picture;
pub mod por;
pub mod quote;
pub mod rng;
pub mod settings;
pub mod swarm;

pub use settings::{Param, ParamKind, Settings, SettingsError};

/// A function from a state to the representative of its symmetry class.
pub type Representative<S> = fn(&S) -> S;

/// The verdict of one property in one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// An `always` property holds in every reachable state.
    Holds,
    /// An `always` property is violated in some reachable state.
    Counterexample,
    /// A `sometimes` property is satisfied in some reachable state.
    Reached,
    /// A `sometimes` property is satisfied in no reachable state.
    Unreached,
}

impl Verdict {
    /// Whether this verdict is what a correct design wants (holds / reached).
    pub fn is_good(self) -> bool {
        matches!(self, Verdict::Holds | Verdict::Reached)
    }

    /// The word printed in tables.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::Counterexample => "counterexample",
            Verdict::Reached => "reached",
            Verdict::Unreached => "unreached",
        }
    }
}

/// One cell of a specification's expected-verdict table: running `design` under the
/// settings preset `scenario`, property `property` must come out as `expected`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expectation {
    /// Design name as accepted on the command line (e.g. `unpatched`).
    pub design: &'static str,
    /// Scenario name: a column of the table, a named preset of settings
    /// (see [`Spec::scenarios`]).
    pub scenario: &'static str,
    /// Property name as returned by `properties()`.
    pub property: &'static str,
    /// The verdict the specification expects.
    pub expected: Verdict,
}

/// The scenario with no overrides, available in every model besides its
/// [`Spec::scenarios`].
pub const DEFAULT_SCENARIO: &str = "default";

/// What the checker CLI, the verdict tables and the conformance layer need of a model.
///
/// A `Spec` value is a fully configured model: one design, one set of settings, and
/// optionally a *focus* on a single property (stateright overwrites discoveries while a
/// run continues, so the shortest counterexample of a property is found by a BFS run
/// whose `properties()` holds that property alone).
pub trait Spec:
    Model<
        State: Clone + Debug + Hash + Eq + Send + Sync + Serialize + 'static,
        Action: Clone + Debug + Hash + Eq + Send + Sync + Serialize + DeserializeOwned + 'static,
    > + Clone
    + Send
    + Sync
    + 'static
{
    /// The model's name on the command line (`leadership`, `durable`).
    const NAME: &'static str;

    /// One line saying what the model is, for `--help` and tables.
    const SUMMARY: &'static str;

    /// Every design, in table order, by command-line name (kebab-case).
    fn designs() -> &'static [&'static str];

    /// The design this model checks, by command-line name.
    fn design_name(&self) -> &'static str;

    /// The settings this model was built with.
    fn settings(&self) -> &Settings;

    /// The settings the model accepts (bounds, assumptions), with defaults and limits.
    fn params() -> &'static [Param];

    /// Named presets of settings (a column of an expected-verdict table, e.g. one
    /// ordering of the leadership model). Each is a list of `(param, value)` overrides of
    /// the defaults. `default` (no overrides) is always implicitly available.
    fn scenarios() -> &'static [(&'static str, &'static [(&'static str, &'static str)])] {
        &[]
    }

    /// The overrides of the scenario called `name`: none for [`DEFAULT_SCENARIO`], the
    /// preset of one of [`Spec::scenarios`], or an error naming the known scenarios.
    fn preset(name: &str) -> Result<&'static [(&'static str, &'static str)], SettingsError> {
        if name == DEFAULT_SCENARIO {
            return Ok(&[]);
        }
        Self::scenarios()
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, preset)| *preset)
            .ok_or_else(|| {
                SettingsError(format!(
                    "unknown scenario {} for model {} (scenarios: {})",
                    quote::quote(name),
                    Self::NAME,
                    Self::scenario_names().join(", ")
                ))
            })
    }

    /// Every scenario's name, [`DEFAULT_SCENARIO`] first.
    fn scenario_names() -> Vec<&'static str> {
        let mut names = vec![DEFAULT_SCENARIO];
        names.extend(Self::scenarios().iter().map(|(n, _)| *n));
        names
    }

    /// Builds the model for a design (by name) and validated settings. Unknown design
    /// names and inconsistent settings are errors naming the problem.
    fn build(design: &str, settings: &Settings) -> Result<Self, SettingsError>;

    /// The same model with `properties()` restricted to the named property (`None`
    /// restores all). Unknown names are an error.
    fn focus(&self, property: Option<&str>) -> Result<Self, SettingsError>;

    /// One step of a trace in domain words, e.g. "the election revokes session 1".
    fn describe_step(&self, before: &Self::State, action: &Self::Action) -> String;

    /// The state in the domain's words, as the Explorer shows it below a step; the
    /// state's `Debug` form by default.
    fn domain_view(&self, state: &Self::State) -> String {
        format!("{state:#?}")
    }

    /// A short name for a counterexample's shape, when it is a known one (for example
    /// "ordering A"); `None` otherwise.
    fn classify(&self, _path: &[(Self::State, Option<Self::Action>)]) -> Option<String> {
        None
    }

    /// The expected-verdict table of the specification in `specs/`.
    fn expectations() -> Vec<Expectation>;

    /// Symmetry reduction: a function mapping every state to the representative of its
    /// class under permutations of interchangeable components (terminal statuses, keys),
    /// when this model at its settings has such components; `None` otherwise. Two states
    /// of one class must satisfy the same properties, and the permutation must map the
    /// model's initial states and steps onto themselves. The function must return a
    /// member of the state's own class, the same one for every member (so it is
    /// idempotent). stateright honours it in DFS only; [`check::CheckOptions::symmetry`]
    /// turns it on and [`check::try_check`] refuses it for BFS or when this is `None`.
    fn representative(&self) -> Option<Representative<Self::State>> {
        None
    }

    /// Partial-order reduction: the same model whose `actions()` gives a stubborn subset
    /// of the enabled steps at each state ([`por`]), so a check visits fewer states with
    /// the same verdicts; an error when the model at its settings has no footprint.
    fn reduced(&self) -> Result<Self, por::ReductionError> {
        Err(por::ReductionError::Unsupported(Self::NAME))
    }

    /// States a reduced model has expanded fully and in part so far; `None` when it is
    /// not reduced.
    fn reduction_tally(&self) -> Option<(u64, u64)> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every expected verdict names a design and a scenario the model has, so the
    /// tables cannot drift from the design enums and the scenario presets.
    fn names_are_known<M: Spec>() {
        let (designs, scenarios) = (M::designs(), M::scenario_names());
        for e in M::expectations() {
            assert!(
                designs.contains(&e.design),
                "{}: design {}",
                M::NAME,
                e.design
            );
            assert!(
                scenarios.contains(&e.scenario),
                "{}: scenario {}",
                M::NAME,
                e.scenario
            );
            M::preset(e.scenario).expect("a known scenario has a preset");
        }
    }

    #[test]
    fn expectations_name_known_designs_and_scenarios() {
        names_are_known::<leadership::Leadership>();
        names_are_known::<durable::Durable>();
        assert_eq!(
            leadership::Leadership::designs(),
            leadership::Design::ALL.map(leadership::Design::name)
        );
        assert_eq!(
            durable::Durable::designs(),
            durable::DESIGNS.map(durable::Design::name)
        );
        let e = leadership::Leadership::preset("ordering-c").unwrap_err();
        assert_eq!(
            e.0,
            "unknown scenario `ordering-c` for model leadership \
             (scenarios: default, ordering-a, ordering-b, all, ordering-a-late-signal, \
             ordering-b-late-signal, all-late-signal, ordering-a-decide-while-closing, ordering-a-late-signal-decide-while-closing, jobmaster-crash, jobmaster-failures, jobmaster-failures-before-decision, dispatcher-overlap, dispatcher-overlap-fenced, dispatcher-overlap-jobmaster-failures, jobmaster-crash-rerun-decides, jobmaster-failures-rerun-decides, dispatcher-overlap-rerun-decides, dispatcher-overlap-fenced-rerun-decides)"
        );
    }
}
