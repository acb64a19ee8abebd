//! Several jobs under one dispatcher (setting `jobs`): the leadership model composed
//! with itself, one copy per job, synchronised on what the jobs share.
//!
//! Flink's dispatcher runs one `JobMasterServiceLeadershipRunner` per job. Each job has
//! its own runner and operation chain, its own processes and scheduler, its own
//! JobGraph and JobResultStore entry. The jobs share the leader election (in Flink the
//! JobManager's leader election service grants and revokes every contender it hosts at
//! once) and the dispatcher, so a failover, the next leader's recovery and a JobManager
//! crash reach every job in the same step.
//!
//! The composition reuses the one-job model's guards and transitions: a state holds one
//! one-job state, a *view*, per job; the election's and the dispatcher's fields (`issued`,
//! `sessions`, `epoch`, `dispatcher`) are equal in every view. A step is either
//! - one job's own step (its chain, processes, scheduler, forward callbacks, its
//!   runner's result and cleanup: [`JobsAction::Job`]), taken in that job's view alone;
//!   a fatal error there ends the JobManager process, and every other job's runner
//!   dies with it; or
//! - a shared step (the election's grant and revoke, the dispatcher's failover, the
//!   next leader's recovery, a crash: [`JobsAction::Shared`]), taken in every view at
//!   once. A grant or revoke is enabled when some job's runner runs (the others'
//!   views only see the session change); a failover or recovery when every job allows
//!   it (the dispatcher stops once all its jobs did).
//!
//! Every property of the one-job model becomes a property of every job: a safety
//! property holds when it holds in every job's view ("no reanimation": no job is
//! reanimated), a reachability property is reached when some job reaches it. The
//! properties keep their names. A counterexample's shape names the job it is about
//! ([`Spec::classify`]).
//!
//! Jobs are interchangeable: they start alike, and no step or property tells them
//! apart. [`JobsState::canonical`] sorts the views (after relabelling each job's
//! terminal statuses, which are only compared within a job) and is the symmetry
//! reduction's representative.

use std::fmt;
use std::sync::Arc;

use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize};
use stateright::{Expectation as Kind, Model, Property};

use super::state::PACKED_LEN;
use super::{property, Action, DispatcherState, Leadership, State, DESIGN_NAMES, MAX_JOBS};
use crate::check;
use crate::por::{Reduction, ReductionError};
use crate::settings::{Param, Settings, SettingsError};
use crate::{Expectation, Spec, Verdict};

mod footprint;

/// One step of several jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum JobsAction {
    /// A step of the election or the dispatcher, taken by every job at once.
    Shared(Action),
    /// A step of one job (numbered from 1) alone.
    Job(u8, Action),
}

impl JobsAction {
    /// The Explorer's name of the step.
    pub fn phrase(&self) -> String {
        match self {
            JobsAction::Shared(action) => action.phrase(),
            JobsAction::Job(job, action) => format!("job {job}: {}", action.phrase()),
        }
    }
}

/// Whether a one-job action is a shared step.
fn is_shared(action: Action) -> bool {
    matches!(
        action,
        Action::GrantLeadership(_)
            | Action::RevokeLeadership(_)
            | Action::DispatcherFailover
            | Action::RecoverJob
            | Action::CrashJobManager
    )
}

/// The state of several jobs: one view per job, the shared fields equal in all.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct JobsState {
    /// Each job's view; slots from `count` on are unused and stay initial.
    views: [State; MAX_JOBS],
    /// Jobs in the run.
    count: u8,
}

impl JobsState {
    /// Every job's view, job 1 first.
    pub fn jobs(&self) -> &[State] {
        &self.views[..usize::from(self.count)]
    }

    /// Job `job`'s view (numbered from 1).
    pub fn job(&self, job: u8) -> &State {
        &self.jobs()[usize::from(job) - 1]
    }

    /// The representative of this state's class under renamings of each job's terminal
    /// statuses and permutations of the jobs: each view's statuses relabelled
    /// ([`State::canonical_statuses`]), then the views sorted by their packing (an
    /// injective encoding, so the order is total and the result one per class).
    pub fn canonical(&self) -> JobsState {
        let mut r = *self;
        let views = &mut r.views[..usize::from(r.count)];
        for v in views.iter_mut() {
            *v = v.canonical_statuses();
        }
        views.sort_unstable_by_key(State::pack);
        r
    }

    /// The shared fields agree in every view.
    fn shared_agree(&self) -> bool {
        let first = &self.views[0];
        self.jobs().iter().all(|v| {
            (v.issued, v.sessions, v.epoch, v.dispatcher)
                == (first.issued, first.sessions, first.epoch, first.dispatcher)
        })
    }
}

impl std::hash::Hash for JobsState {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        // One write of every job's packing, as the one-job state does.
        let mut bytes = [0u8; PACKED_LEN * MAX_JOBS];
        let mut used = 0;
        for v in self.jobs() {
            let at = &mut bytes[used..used + PACKED_LEN];
            used += v.pack_into(at.try_into().expect("PACKED_LEN bytes"));
        }
        state.write(&bytes[..used]);
    }
}

impl fmt::Debug for JobsState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobsState")
            .field("jobs", &self.jobs())
            .finish()
    }
}

impl Serialize for JobsState {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("JobsState", 1)?;
        s.serialize_field("jobs", self.jobs())?;
        s.end()
    }
}

/// The several-jobs model: the one-job model (design, bounds, assumptions) and the
/// number of jobs.
#[derive(Clone)]
pub struct Jobs {
    /// One job's model: every view steps by it.
    pub single: Leadership,
    /// Jobs in the run.
    pub jobs: u8,
    /// The one-job model's properties, in order; [`LIFTED`] lifts each by its index.
    single_properties: Vec<Property<Leadership>>,
    /// Partial-order reduction, when the model is reduced ([`Spec::reduced`]).
    reduction: Option<Arc<Reduction<JobsAction>>>,
}

impl fmt::Debug for Jobs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Jobs")
            .field("single", &self.single)
            .field("jobs", &self.jobs)
            .finish_non_exhaustive()
    }
}

/// A property of every job (safety) or of some job (reachability), from the one-job
/// property at index `I`. stateright takes a property as a plain function, so each
/// index gets its own.
fn lifted<const I: usize>(m: &Jobs, s: &JobsState) -> bool {
    let p = &m.single_properties[I];
    let mut views = s.jobs().iter();
    match p.expectation {
        Kind::Sometimes => views.any(|v| (p.condition)(&m.single, v)),
        Kind::Always | Kind::Eventually => views.all(|v| (p.condition)(&m.single, v)),
    }
}

type Lifted = fn(&Jobs, &JobsState) -> bool;

macro_rules! lifted_table {
    ($($i:literal)*) => { [$(lifted::<$i>),*] };
}

/// One lifted property per index of the one-job model's properties.
const LIFTED: [Lifted; 24] =
    lifted_table!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23);

/// A several-jobs column: its name, its settings, and the one-job column it follows.
type Column = (
    &'static str,
    &'static [(&'static str, &'static str)],
    &'static str,
);

/// Named presets of the several-jobs model: a column of its verdict table each, and
/// the one-job column whose verdicts it must reproduce. Bounds are smaller than the
/// one-job defaults: two jobs square the interleavings. One status: statuses are only
/// compared for equality, so more of them change no verdict (`symmetry`).
const SCENARIOS: &[Column] = &[
    (
        "two-jobs",
        &[
            ("jobs", "2"),
            ("ordering", "all"),
            ("grants", "2"),
            ("epochs", "2"),
            ("statuses", "1"),
        ],
        "all",
    ),
    (
        "two-jobs-jobmaster-failures",
        &[
            ("jobs", "2"),
            ("ordering", "all"),
            ("grants", "2"),
            ("epochs", "2"),
            ("statuses", "1"),
            ("jobmaster-failures", "true"),
        ],
        "jobmaster-failures",
    ),
    (
        "two-jobs-dispatcher-overlap",
        &[
            ("jobs", "2"),
            ("ordering", "all"),
            ("grants", "2"),
            ("epochs", "2"),
            ("statuses", "1"),
            ("dispatcher-overlap", "true"),
        ],
        "dispatcher-overlap",
    ),
];

/// A scenario's name and its settings.
pub type Preset = (&'static str, &'static [(&'static str, &'static str)]);

/// Every preset of the one-job model (with `--jobs` they run several jobs), then the
/// several-jobs columns.
const PRESETS: [Preset; super::SCENARIOS.len() + SCENARIOS.len()] = {
    let single = super::SCENARIOS;
    let mut presets: [Preset; super::SCENARIOS.len() + SCENARIOS.len()] =
        [("", &[]); super::SCENARIOS.len() + SCENARIOS.len()];
    let mut i = 0;
    while i < single.len() {
        presets[i] = single[i];
        i += 1;
    }
    while i < presets.len() {
        let own = &SCENARIOS[i - single.len()];
        presets[i] = (own.0, own.1);
        i += 1;
    }
    presets
};

/// The several-jobs columns (the scenarios the one-job model lacks) and their presets.
pub fn columns() -> impl Iterator<Item = Preset> {
    SCENARIOS.iter().map(|(name, preset, _)| (*name, *preset))
}

/// Whether `name` is a several-jobs column (a scenario the one-job model lacks).
pub fn is_jobs_scenario(name: &str) -> bool {
    SCENARIOS.iter().any(|(n, _, _)| *n == name)
}

impl Jobs {
    fn count(&self) -> usize {
        usize::from(self.jobs)
    }

    /// Every enabled step: each job's own, then the shared ones its views allow.
    fn enabled_steps(&self, s: &JobsState, actions: &mut Vec<JobsAction>) {
        thread_local! {
            // One job's actions: the checker asks for every state's, so the buffer is
            // kept rather than allocated per state (3-4 % of a three-job check).
            static ONE: std::cell::RefCell<Vec<Action>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        let mut election = [None, None];
        let (mut failover, mut recover, mut crash) = (true, true, false);
        let start = actions.len();
        ONE.with_borrow_mut(|one| {
            for (i, view) in s.jobs().iter().enumerate() {
                one.clear();
                self.single.enabled_steps(view, one);
                let (mut fails_over, mut recovers) = (false, false);
                for &action in one.iter() {
                    match action {
                        Action::GrantLeadership(_) => election[0] = Some(action),
                        Action::RevokeLeadership(_) => election[1] = Some(action),
                        Action::DispatcherFailover => fails_over = true,
                        Action::RecoverJob => recovers = true,
                        Action::CrashJobManager => crash = true,
                        _ => actions.push(JobsAction::Job(i as u8 + 1, action)),
                    }
                }
                failover &= fails_over;
                recover &= recovers;
            }
        });
        // The election's steps first, as in the one-job model.
        let own = actions.len() - start;
        actions.extend(election.into_iter().flatten().map(JobsAction::Shared));
        actions[start..].rotate_left(own);
        for (enabled, action) in [
            (failover, Action::DispatcherFailover),
            (recover, Action::RecoverJob),
            (crash, Action::CrashJobManager),
        ] {
            if enabled {
                actions.push(JobsAction::Shared(action));
            }
        }
    }

    /// The first job (from 1) whose view decides a property's verdict at `state`: it
    /// violates a safety property or reaches a reachability one, among the properties
    /// this model checks.
    fn job_in_question(&self, state: &JobsState) -> Option<u8> {
        let focus = self.single.focus;
        for p in &self.single_properties {
            if focus.is_some_and(|name| name != p.name) {
                continue;
            }
            let decides = |v: &State| match p.expectation {
                Kind::Sometimes => (p.condition)(&self.single, v),
                Kind::Always | Kind::Eventually => !(p.condition)(&self.single, v),
            };
            if let Some(i) = state.jobs().iter().position(decides) {
                return Some(i as u8 + 1);
            }
        }
        None
    }

    /// A path of several jobs as one job saw it: the shared steps and that job's own,
    /// with its view before each. Other jobs' steps are left out, but for a fatal error
    /// that ended the JobManager: to this job that is a crash.
    fn project(path: &[(JobsState, Option<JobsAction>)], job: u8) -> Vec<(State, Option<Action>)> {
        let mut projected = Vec::with_capacity(path.len());
        for (i, (s, a)) in path.iter().enumerate() {
            let view = *s.job(job);
            let action = match *a {
                None => None,
                Some(JobsAction::Shared(action)) => Some(action),
                Some(JobsAction::Job(j, action)) if j == job => Some(action),
                Some(JobsAction::Job(..)) => {
                    let after = path.get(i + 1).map(|(n, _)| n.job(job).dispatcher);
                    let ended = view.dispatcher != DispatcherState::Crashed
                        && after == Some(DispatcherState::Crashed);
                    if !ended {
                        continue;
                    }
                    Some(Action::CrashJobManager)
                }
            };
            projected.push((view, action));
        }
        projected
    }
}

impl Model for Jobs {
    type State = JobsState;
    type Action = JobsAction;

    fn format_step(&self, last_state: &JobsState, action: JobsAction) -> Option<String> {
        check::explorer_step(self, last_state, action)
    }

    fn format_action(&self, action: &JobsAction) -> String {
        action.phrase()
    }

    /// A lane diagram of the path ([`crate::picture`]): the election, then per job its
    /// runner, each of its processes and its scheduler, then the dispatcher and the HA
    /// stores, which the jobs share.
    fn as_svg(&self, path: stateright::Path<JobsState, JobsAction>) -> Option<String> {
        let path = path.into_vec();
        // Processes drawn per job: as many as it ever had, at least one.
        let processes: Vec<usize> = (0..self.count())
            .map(|i| {
                path.iter()
                    .map(|(s, _)| usize::from(s.views[i].process_count))
                    .max()
                    .unwrap_or(0)
                    .max(1)
            })
            .collect();
        let mut lanes = vec!["election".to_string()];
        let mut first_lane = Vec::with_capacity(processes.len());
        for (i, p) in processes.iter().enumerate() {
            first_lane.push(lanes.len());
            lanes.push(format!("job {} runner", i + 1));
            lanes.extend((1..=*p).map(|id| format!("job {} process {id}", i + 1)));
            lanes.push(format!("job {} scheduler", i + 1));
        }
        let dispatcher = lanes.len();
        lanes.extend(["dispatcher", "HA stores"].map(String::from));
        let lane = |before: &JobsState, action: &JobsAction| {
            let (i, a) = match *action {
                JobsAction::Shared(a) => (0, a),
                JobsAction::Job(job, a) => (usize::from(job) - 1, a),
            };
            let p = processes[i];
            // The one-job layout: election 0, runner 1, processes, scheduler 2 + p,
            // dispatcher 3 + p, HA stores 4 + p.
            Some(match Leadership::lane(&before.views[i], &a, p) {
                0 => 0,
                l if l >= 3 + p => dispatcher + (l - 3 - p),
                l => first_lane[i] + l - 1,
            })
        };
        Some(crate::picture::of_path(self, &path, &lanes, lane))
    }

    fn init_states(&self) -> Vec<JobsState> {
        vec![JobsState {
            views: [self.single.initial_state(); MAX_JOBS],
            count: self.jobs,
        }]
    }

    /// The enabled steps ([`Jobs::enabled_steps`]), narrowed to a stubborn set when the
    /// model is reduced ([`crate::por`]).
    fn actions(&self, s: &JobsState, actions: &mut Vec<JobsAction>) {
        self.steps_followed(s, actions);
    }

    fn next_state(&self, s: &JobsState, action: JobsAction) -> Option<JobsState> {
        let mut next = *s;
        match action {
            JobsAction::Shared(action) => {
                debug_assert!(is_shared(action));
                for view in next.views[..self.count()].iter_mut() {
                    *view = self.single.next_state(view, action)?;
                }
            }
            JobsAction::Job(job, action) => {
                debug_assert!(!is_shared(action));
                let i = usize::from(job) - 1;
                let before = s.views[i];
                let after = self.single.next_state(&before, action)?;
                next.views[i] = after;
                if after.dispatcher == DispatcherState::Crashed
                    && before.dispatcher != DispatcherState::Crashed
                {
                    // A fatal error of this job's JobMaster ended the JobManager process:
                    // every other job's runner, processes and scheduler die with it.
                    for (k, view) in next.views[..self.count()].iter_mut().enumerate() {
                        if k != i {
                            self.single.crash(view);
                        }
                    }
                }
            }
        }
        debug_assert!(next.shared_agree(), "{action:?} split the shared fields");
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        let lifted = self
            .single_properties
            .iter()
            .zip(LIFTED)
            .map(|(p, condition)| Property {
                expectation: p.expectation.clone(),
                name: p.name,
                condition,
            })
            .collect();
        check::select(lifted, self.single.focus)
    }
}

impl Spec for Jobs {
    const NAME: &'static str = "leadership";
    const SUMMARY: &'static str =
        "job leadership lifecycle of FLINK-39704, several jobs under one dispatcher";

    fn designs() -> &'static [&'static str] {
        &DESIGN_NAMES
    }

    fn design_name(&self) -> &'static str {
        self.single.design.name()
    }

    fn settings(&self) -> &Settings {
        &self.single.settings
    }

    fn params() -> &'static [Param] {
        super::PARAMS
    }

    fn scenarios() -> &'static [(&'static str, &'static [(&'static str, &'static str)])] {
        &PRESETS
    }

    fn build(design: &str, settings: &Settings) -> Result<Self, SettingsError> {
        let single = Leadership::configure(design, settings)?;
        let single_properties = property::all(&single);
        if single_properties.len() > LIFTED.len() {
            return Err(SettingsError(format!(
                "{} properties, more than the {} the several-jobs model lifts",
                single_properties.len(),
                LIFTED.len()
            )));
        }
        Ok(Jobs {
            single,
            jobs: settings.int("jobs") as u8,
            single_properties,
            reduction: None,
        })
    }

    fn focus(&self, property: Option<&str>) -> Result<Self, SettingsError> {
        // A reduced model stays reduced, by what the focused properties observe.
        Jobs {
            single: self.single.focus(property)?,
            ..self.clone()
        }
        .rereduced()
    }

    /// A shared step in the words of each job's view (once, when they all say the
    /// same); a job's own step prefixed with the job.
    fn describe_step(&self, before: &JobsState, action: &JobsAction) -> String {
        match *action {
            JobsAction::Job(job, a) => {
                format!(
                    "job {job}: {}",
                    self.single.step_sentence(before.job(job), &a)
                )
            }
            JobsAction::Shared(a) => {
                let sentences: Vec<String> = before
                    .jobs()
                    .iter()
                    .map(|v| self.single.step_sentence(v, &a))
                    .collect();
                if sentences.iter().all(|s| *s == sentences[0]) {
                    sentences[0].clone()
                } else {
                    let each: Vec<String> = sentences
                        .iter()
                        .enumerate()
                        .map(|(i, s)| format!("job {}: {s}", i + 1))
                        .collect();
                    each.join("; ")
                }
            }
        }
    }

    /// The election and the dispatcher once, then each job's own parts.
    fn domain_view(&self, state: &JobsState) -> String {
        let mut lines = self.single.shared_view(state.job(1));
        for (i, view) in state.jobs().iter().enumerate() {
            lines.push(format!("job {}:", i + 1));
            lines.extend(
                self.single
                    .job_view(view)
                    .into_iter()
                    .map(|l| format!("  {l}")),
            );
        }
        lines.join("\n")
    }

    /// "job N" for the job whose view decides the verdict, with the shape of its
    /// projection when that is a known one.
    fn classify(&self, path: &[(JobsState, Option<JobsAction>)]) -> Option<String> {
        let (last, _) = path.last()?;
        let job = self.job_in_question(last)?;
        let projected = Self::project(path, job);
        Some(match self.single.shape(&projected) {
            Some(shape) => format!("job {job}: {shape}"),
            None => format!("job {job}"),
        })
    }

    /// Each column has the verdicts of the one-job column it names in `SCENARIOS`,
    /// but one difference: with JobMaster failures, one job's fatal error ends the
    /// JobManager and kills another job's decision that no JobResultStore entry
    /// recorded yet, as a crash does (`jobmaster-crash`): that job runs again in every
    /// design, so "no reanimation" and "no masking" have counterexamples; "only a crash
    /// loses a decision" still holds where it held. And one bound: the fixed design's
    /// masking under overlapping leaders needs a third epoch, beyond these columns'
    /// two, so "no masking" holds there (one job at the same bounds agrees).
    fn expectations() -> Vec<Expectation> {
        let single = Leadership::expectations();
        let mut table = Vec::new();
        for (scenario, preset, mirrored) in SCENARIOS {
            let failures = preset.contains(&("jobmaster-failures", "true"));
            table.extend(single.iter().filter(|e| e.scenario == *mirrored).map(|e| {
                let killed = failures
                    && [property::NO_REANIMATION, property::NO_MASKING].contains(&e.property);
                let beyond_bound = *mirrored == "dispatcher-overlap"
                    && e.design == super::Design::Fixed.name()
                    && e.property == property::NO_MASKING;
                Expectation {
                    scenario,
                    expected: if killed {
                        Verdict::Counterexample
                    } else if beyond_bound {
                        Verdict::Holds
                    } else {
                        e.expected
                    },
                    ..e.clone()
                }
            }));
        }
        table
    }

    fn representative(&self) -> Option<fn(&JobsState) -> JobsState> {
        Some(JobsState::canonical)
    }

    fn reduced(&self) -> Result<Self, ReductionError> {
        self.clone().with_reduction()
    }

    fn reduction_tally(&self) -> Option<(u64, u64)> {
        self.reduction.as_ref().map(|r| r.tally().counts())
    }
}

#[cfg(test)]
mod tests;
