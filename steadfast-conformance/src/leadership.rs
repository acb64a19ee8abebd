//! The leadership model bound to the production leadership machines (FLINK-39704,
//! apache/flink PR 28201).
//!
//! [`LeadershipBinding`] drives `steadfast::leadership::Harness` (runner, processes,
//! dispatcher, in-memory election and HA stores) through the events that realise each
//! action of `steadfast_model::leadership::Leadership`, and compares both sides through
//! one [`Observation`] after every step. The mapping, in short (specs/conformance.md has
//! the whole table and the reasons):
//!
//! - the model's operation chain is the driver's election channel: the election issues
//!   or revokes a session at once, the runner receives it when the chain runs it;
//! - the runner's JobResultStore and leadership questions are answered inside the step
//!   that asks them, with the answers the model's state gives;
//! - the scheduler's decision is environment state: only its delivery reaches the runtime;
//! - the dispatcher's steps are stepped one to one: the driver is
//!   [`Harness::stepwise`], so the runner's result waits on its way to the dispatcher
//!   until `HandleRunnerResult` delivers it, and each store request of the dispatcher
//!   waits until the model's step that performs it (`HandleRunnerResult` writes the
//!   dirty entry, `RemoveJobGraph`, `MarkResultClean`, `RecoverJob` reads the stores)
//!   answers it;
//! - the runtime takes one step of its own, as soon as it is possible, that the model
//!   schedules separately: completing the runner's close (the old runner's too). The
//!   model side of the observation is therefore taken after it ([`settle`]), and the
//!   model's own copy of it is a step without a runtime event;
//! - with `dispatcher-overlap` the driver is [`Harness::overlapping`]: the old JobManager
//!   stops beside the next leader on the same stores, events about its processes reach
//!   its runner, and its dispatcher's result handling and cleanup are stepped one to one
//!   (`OldDispatcherHandlesResult`, `OldRemoveJobGraph`, `OldMarkResultClean`).
//!
//! Every step also checks the runtime's structured `tracing` log: the events the runtime
//! emitted while it took the step must be exactly those the model's step implies
//! ([`expected_log`], [`check_log`]); a difference shows in [`Observation::log`].
//!
//! [`replay_unpatched_counterexample`] replays the unpatched design's shortest
//! reanimation counterexample against the fixed runtime and says where the two part.
//!
//! Layout: `observation` (what both sides are compared in), `log` (the structured log
//! and the log each step must produce), this file (the runtime, the step mapping and the
//! binding).

use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt::{self, Write as _};

use serde::Serialize;
use stateright::Model;
use steadfast::leadership::{
    DispatcherEffect, DispatcherEvent, Event, Harness, JobGraphStore, JobId, JobResultEntry,
    JobResultStore, JobStatus, LeadershipError, ProcessEvent, ProcessResult, ProcessState, Query,
    Runner, RunnerOutcome, RunnerResult, RunnerState, Session,
};
use steadfast_model::check;
use steadfast_model::leadership::{
    self as model, property, Action, Cleanup, Design, DispatcherState, Leadership, Outcome, State,
    Status,
};
use steadfast_model::Spec;
use tracing::field::{Field, Visit};
use tracing::span;
use tracing::{Dispatch, Metadata, Subscriber};

use crate::trace::{self, Replay, TraceError};
use crate::Binding;

mod log;
pub use log::*;

mod observation;
pub use observation::*;

pub mod automatic;

/// The job every run drives.
pub const JOB: JobId = JobId(1);

/// The runtime: the production driver for [`JOB`], queries held for the step to answer.
#[derive(Clone, Debug)]
pub struct Runtime {
    /// The driver of runner, dispatcher, election and stores.
    pub driver: Harness,
    /// Whether each step collects the runtime's structured log and checks it against the
    /// model ([`check_log`]); on from [`Runtime::started`].
    pub check_log: bool,
    /// The disagreements the log check found in the last step (see [`Observation::log`]).
    pub log: String,
}

impl Runtime {
    /// A dispatcher leader with the job submitted: the model's initial situation.
    pub fn started() -> Runtime {
        Runtime::started_on(Harness::stepwise(JOB))
    }

    /// [`Runtime::started`] with the environment `model` sets: the next dispatcher
    /// leader on another host with `dispatcher-overlap`, fenced stores with
    /// `fenced-result-store`.
    pub fn for_model(model: &Leadership) -> Runtime {
        Runtime::started_on(in_environment(model, Harness::stepwise(JOB)))
    }

    /// A runtime whose `driver` (fresh, stepwise) is brought to the model's initial
    /// situation.
    pub fn started_on(mut driver: Harness) -> Runtime {
        driver
            .dispatcher_gain_leadership()
            .expect("a fresh dispatcher gains leadership");
        driver
            .answer_store_request(DispatcherEffect::RecoverJobs { epoch: 1 })
            .expect("a fresh dispatcher's stores answer its recovery read");
        driver
            .submit_job()
            .expect("a fresh dispatcher accepts the job");
        driver
            .answer_store_request(DispatcherEffect::PutJobGraph { job: JOB })
            .expect("a fresh JobGraph store takes the job");
        Runtime {
            driver,
            check_log: true,
            log: String::new(),
        }
    }
}

/// `driver` in the environment `model` sets: the next dispatcher leader on another host
/// with `dispatcher-overlap`, fenced stores with `fenced-result-store`.
pub fn in_environment(model: &Leadership, driver: Harness) -> Harness {
    if model.dispatcher_overlap {
        driver.overlapping(model.fenced_result_store)
    } else {
        driver
    }
}

/// The runtime `make` starts, with the structured log it wrote while starting checked
/// against the model's initial state `init` (see [`Runtime::log`]).
pub fn start_checked(init: &State, make: impl FnOnce() -> Runtime) -> Runtime {
    let (mut rt, seen) = collect(make);
    if rt.check_log {
        rt.log = disagreements(&start_log(init), &seen);
    }
    rt
}

/// Binds [`Leadership`] to the production leadership machines.
pub struct LeadershipBinding;

/// The model's steps the runtime takes by itself, as soon as they are possible.
const OWN_STEPS: [Action; 2] = [Action::CloseRunner, Action::CloseOldRunner];

/// `state` after every step the runtime takes by itself (runner close completion)
/// whenever the model enables it. That step is one-way, so this ends.
pub fn settle(model: &Leadership, state: &State) -> State {
    thread_local! {
        // The enabled actions' room, reused: settling runs several times per step.
        static ENABLED: RefCell<Vec<Action>> = const { RefCell::new(Vec::new()) };
    }
    ENABLED.with_borrow_mut(|enabled| {
        let mut state = *state;
        loop {
            enabled.clear();
            model.actions(&state, enabled);
            let Some(own) = OWN_STEPS.iter().find(|a| enabled.contains(a)) else {
                return state;
            };
            state = model
                .next_state(&state, *own)
                .expect("the model's enabled actions always have a next state");
        }
    })
}

/// Why the runtime refused a step: the runtime's typed error, or what the binding found.
pub type Rejection = crate::Rejection<LeadershipError>;

impl From<LeadershipError> for Rejection {
    fn from(e: LeadershipError) -> Self {
        Rejection::Runtime(e)
    }
}

/// Answers every query the runner asked during this step, each with the answer the
/// model's state `before` gives; the environment's own answer must be the same.
fn answer_queries(rt: &mut Runtime, before: &State) -> Result<(), Rejection> {
    // A step asks at most two questions (a grant: the store, then leadership).
    for _ in 0..4 {
        let Some(query) = rt.driver.next_query() else {
            return Ok(());
        };
        let (want, got) = match query {
            Query::JobResultStore => (
                before.job_result != model::JobResultEntry::Absent,
                rt.driver.environment().results.entry(JOB) != JobResultEntry::None,
            ),
            Query::Leadership(s) => (
                session(before.issued) == Some(s),
                rt.driver.environment().issued == Some(s),
            ),
        };
        if want != got {
            return Err(format!(
                "the environment answers {query:?} with {got}, the model's state with {want}"
            )
            .into());
        }
        rt.driver.answer_query()?;
    }
    Err("the runner keeps asking questions".into())
}

/// Delivers the runner's next election message when it is `expected`; otherwise (a
/// probe) hands `expected` to the runner directly, as a channel out of order would.
fn deliver(rt: &mut Runtime, expected: Event, enabled: bool) -> Result<(), Rejection> {
    let front = rt.driver.pending_election().first().copied();
    if front == Some(expected) {
        rt.driver.deliver_election()?;
    } else if enabled {
        return Err(format!(
            "the election channel holds {front:?} next, the model runs {expected:?}"
        )
        .into());
    } else {
        rt.driver.runner_event(expected)?;
    }
    Ok(())
}

/// Whether `runner` (the driver's latest, or the old JobManager's still stopping beside
/// the leader) owns the process of `session`.
fn owns(runner: Option<&Runner>, session: Session) -> bool {
    runner.is_some_and(|r| r.processes().any(|p| p.session() == session))
}

/// The dirty-entry write among `requests`, which the model's step that handles a
/// terminal result also performs.
fn entry_write<'a>(
    mut requests: impl Iterator<Item = &'a DispatcherEffect>,
) -> Option<DispatcherEffect> {
    requests
        .find(|r| matches!(r, DispatcherEffect::WriteDirtyEntry { job, .. } if *job == JOB))
        .copied()
}

/// Feeds `event` about the process of `session` to the runner that owns it: the old
/// JobManager's, or else the latest.
fn to_owner(rt: &mut Runtime, session: Session, event: Event) -> Result<(), Rejection> {
    if owns(rt.driver.old_runner(), session) {
        rt.driver.old_runner_event(event)?;
    } else {
        rt.driver.runner_event(event)?;
    }
    Ok(())
}

/// Whether the model enables `action` at `before`.
fn enables(model: &Leadership, before: &State, action: &Action) -> bool {
    thread_local! {
        static ENABLED: RefCell<Vec<Action>> = const { RefCell::new(Vec::new()) };
    }
    ENABLED.with_borrow_mut(|enabled| {
        enabled.clear();
        model.actions(before, enabled);
        enabled.contains(action)
    })
}

/// Drives the runtime through the events that realise `action` (enabled or not by the
/// model at `before`), without looking at its log.
fn apply(
    rt: &mut Runtime,
    before: &State,
    action: &Action,
    enabled: bool,
) -> Result<(), Rejection> {
    match *action {
        Action::GrantLeadership(s) => {
            let got = rt.driver.elect()?;
            if got != Session(u32::from(s)) {
                return Err(format!("the election issued {got}, the model s{s}").into());
            }
        }
        Action::RevokeLeadership(s) => {
            let got = rt.driver.unelect()?;
            if got != Session(u32::from(s)) {
                return Err(format!("the election revoked {got}, the model s{s}").into());
            }
        }
        Action::RunGrant(s) => {
            let session = Session(u32::from(s));
            deliver(rt, Event::LeadershipGranted { session }, enabled)?;
            answer_queries(rt, before)?;
        }
        Action::RunRevoke => {
            deliver(rt, Event::LeadershipRevoked, enabled)?;
            answer_queries(rt, before)?;
        }
        // The scheduler decided; its signal is in flight and reaches nothing yet.
        Action::DecideTerminal(_) => {}
        Action::DeliverTerminalSignal(id) => {
            let session = process_session(before, id);
            let decision = before.processes[usize::from(id) - 1].decision;
            let status = status(decision.ok_or("a signal without its scheduler's decision")?);
            // A process whose runner is gone receives nothing.
            if owns(rt.driver.runner(), session) || owns(rt.driver.old_runner(), session) {
                to_owner(
                    rt,
                    session,
                    Event::TerminalSignalDelivered { session, status },
                )?;
            }
        }
        Action::CheckLeadershipInForward(id) => {
            let session = process_session(before, id);
            to_owner(rt, session, Event::ForwardCallback { session })?;
            answer_queries(rt, before)?;
        }
        Action::TerminateService(id) => {
            let session = process_session(before, id);
            to_owner(rt, session, Event::ProcessServiceTerminated { session })?;
            answer_queries(rt, before)?;
        }
        Action::DispatcherFailover => {
            rt.driver.dispatcher_lose_leadership()?;
            answer_queries(rt, before)?;
        }
        Action::RecoverJob => {
            rt.driver.dispatcher_gain_leadership()?;
            let epoch = rt.driver.dispatcher().epoch();
            rt.driver
                .answer_store_request(DispatcherEffect::RecoverJobs { epoch })?;
        }
        Action::HandleRunnerResult => {
            rt.driver.deliver_runner_result()?;
            // The model writes the dirty entry in the same step; the runtime asked for it.
            if let Some(write) = entry_write(rt.driver.store_requests()) {
                rt.driver.answer_store_request(write)?;
            }
        }
        Action::RemoveJobGraph => {
            rt.driver
                .answer_store_request(DispatcherEffect::RemoveJobGraph { job: JOB })?;
        }
        Action::MarkResultClean => {
            rt.driver
                .answer_store_request(DispatcherEffect::MarkEntryClean { job: JOB })?;
        }
        // Taken by the runtime already, as soon as it became possible.
        Action::CloseRunner | Action::CloseOldRunner => {}
        Action::CrashJobManager => rt.driver.crash_jobmanager(),
        Action::FailInitialization | Action::FailJobMaster => {
            let (session, value) = failure(before, action);
            rt.driver
                .runner_event(Event::ProcessResultCompleted { session, value })?;
        }
        Action::OldDispatcherHandlesResult => {
            rt.driver.deliver_old_runner_result()?;
            // A terminal result's entry is asked for in the same step; fenced stores
            // refused it already.
            if let Some(write) = entry_write(rt.driver.old_store_requests()) {
                rt.driver.answer_old_store_request(write)?;
            }
        }
        Action::OldRemoveJobGraph => {
            rt.driver
                .answer_old_store_request(DispatcherEffect::RemoveJobGraph { job: JOB })?;
        }
        Action::OldMarkResultClean => {
            rt.driver
                .answer_old_store_request(DispatcherEffect::MarkEntryClean { job: JOB })?;
        }
    }
    Ok(())
}

impl Binding for LeadershipBinding {
    type Model = Leadership;
    type State = State;
    type Action = Action;
    type Runtime = Runtime;
    type Projection = Observation;

    fn start(model: &Leadership, init: &State) -> Runtime {
        start_checked(init, || Runtime::for_model(model))
    }

    fn model_view(model: &Leadership, state: &State) -> Observation {
        observe_model(&settle(model, state), model.design)
    }

    fn runtime_view(rt: &Runtime) -> Observation {
        observe_runtime(rt)
    }

    fn model_view_into(model: &Leadership, state: &State, out: &mut Observation) {
        observe_model_into(&settle(model, state), model.design, out);
    }

    fn runtime_view_into(rt: &Runtime, out: &mut Observation) {
        observe_runtime_into(rt, out);
    }

    type Rejection = Rejection;

    fn step(
        model: &Leadership,
        rt: &mut Runtime,
        before: &State,
        action: &Action,
    ) -> Result<(), Rejection> {
        let enabled = enables(model, before, action);
        rt.log.clear();
        if !rt.check_log {
            return apply(rt, before, action, enabled);
        }
        BUFFERS.with_borrow_mut(|buffers| {
            let result = collect_into(&mut buffers.seen, || apply(rt, before, action, enabled));
            // A step the runtime refuses although the model takes it, or takes although
            // the model forbids it, is a disagreement reported as such already.
            if enabled == result.is_ok() {
                expected_log_into(model, before, action, !enabled, &mut buffers.want);
                if buffers.want != buffers.seen {
                    rt.log = disagreements(&buffers.want, &buffers.seen);
                }
            }
            result
        })
    }

    fn probes(model: &Leadership, state: &State) -> Vec<Action> {
        let s = settle(model, state);
        let mut probes = Vec::new();
        let live = s.has_runner && !s.runner_terminated;
        let running = live && s.runner == model::RunnerState::Running;
        // The election issues one session at a time, and none to a closed runner.
        if (running && s.issued != 0) || !live {
            probes.push(Action::GrantLeadership(s.sessions + 1));
        }
        // It revokes only what it issued.
        if (running && s.issued == 0) || !live {
            probes.push(Action::RevokeLeadership(s.sessions.max(1)));
        }
        // The runner refuses a grant it already received (ordered channel).
        for p in &s.processes[..usize::from(s.process_count)] {
            if s.has_runner && p.epoch == s.epoch {
                probes.push(Action::RunGrant(p.session));
            }
        }
        // ...and a revoke while it holds no grant.
        if running && s.issued == 0 && s.chain_len == 0 {
            probes.push(Action::RunRevoke);
        }
        for (i, p) in s.processes[..usize::from(s.process_count)]
            .iter()
            .enumerate()
        {
            let id = i as u8 + 1;
            // A service terminates once, after its process was closed.
            if p.state != model::ProcessState::Closing {
                probes.push(Action::TerminateService(id));
            }
            // A forward callback runs once, after the result completed.
            if !p.forward_pending {
                probes.push(Action::CheckLeadershipInForward(id));
            }
        }
        match s.dispatcher {
            DispatcherState::Stopping => {
                probes.push(Action::DispatcherFailover);
                // The next leader waits for the old runner to terminate (on another
                // host it does not), and a third one for the oldest's stop.
                if (live && !model.dispatcher_overlap) || s.old.is_some() {
                    probes.push(Action::RecoverJob);
                }
            }
            DispatcherState::Leading => probes.push(Action::RecoverJob),
            // A dead dispatcher has no leadership to lose.
            DispatcherState::Crashed => {
                probes.push(Action::DispatcherFailover);
                if s.old.is_some() {
                    probes.push(Action::RecoverJob);
                }
            }
        }
        // The dispatcher handles a runner result once, after the runner completed it.
        if !(s.has_runner && s.runner_result.is_set() && !s.result_handled) {
            probes.push(Action::HandleRunnerResult);
        }
        // Each cleanup step is taken once, in order, while the entry is dirty.
        match model_store_request(&s) {
            Some(DispatcherEffect::RemoveJobGraph { .. }) => probes.push(Action::MarkResultClean),
            Some(_) => probes.push(Action::RemoveJobGraph),
            None => probes.extend([Action::RemoveJobGraph, Action::MarkResultClean]),
        }
        probes
    }

    fn counterpart(kind: &str) -> &'static str {
        match kind {
            "GrantLeadership" => "Harness::elect (the election issues the session)",
            "RevokeLeadership" => "Harness::unelect (the election revokes the session)",
            "RunGrant" => "Event::LeadershipGranted to the runner, its store queries answered",
            "RunRevoke" => "Event::LeadershipRevoked to the runner, its store queries answered",
            "DecideTerminal" => "no event: the scheduler's decision is environment state",
            "DeliverTerminalSignal" => "Event::TerminalSignalDelivered to the runner's process",
            "CheckLeadershipInForward" => "Event::ForwardCallback, its leadership query answered",
            "TerminateService" => "Event::ProcessServiceTerminated, its queries answered",
            "DispatcherFailover" => "Harness::dispatcher_lose_leadership",
            "RecoverJob" => {
                "Harness::dispatcher_gain_leadership, then DispatcherEffect::RecoverJobs answered by DispatcherEvent::JobsRecovered"
            }
            "HandleRunnerResult" => {
                "DispatcherEvent::RunnerCompleted delivered, then DispatcherEffect::WriteDirtyEntry answered by DispatcherEvent::DirtyEntryWritten for a terminal result (or a submitted job's initialisation failure); DispatcherEffect::FatalError exits the JobManager (the driver's crash)"
            }
            "RemoveJobGraph" => {
                "DispatcherEffect::RemoveJobGraph answered by DispatcherEvent::JobGraphRemoved"
            }
            "MarkResultClean" => {
                "DispatcherEffect::MarkEntryClean answered by DispatcherEvent::EntryMarkedClean"
            }
            "CloseRunner" | "CloseOldRunner" => {
                "taken by the runtime within the step that enabled it; checked by its log record"
            }
            "OldDispatcherHandlesResult" => {
                "Harness::deliver_old_runner_result, then the old dispatcher's DispatcherEffect::WriteDirtyEntry answered (or refused: fenced, or an entry exists)"
            }
            "OldRemoveJobGraph" => {
                "the old dispatcher's DispatcherEffect::RemoveJobGraph answered (Harness::answer_old_store_request)"
            }
            "OldMarkResultClean" => {
                "the old dispatcher's DispatcherEffect::MarkEntryClean answered (Harness::answer_old_store_request)"
            }
            "FailInitialization" => {
                "Event::ProcessResultCompleted { value: InitializationFailed } for the current process"
            }
            "FailJobMaster" => {
                "Event::ProcessResultCompleted { value: JobMasterFailed } for the current process"
            }
            "CrashJobManager" => {
                "Harness::crash_jobmanager (dispatcher and runner dropped, Dispatcher::after_crash; the stores kept)"
            }
            _ => "(unknown action kind)",
        }
    }

    fn describe(runtime: &Runtime) -> String {
        format!("{:?}", runtime.driver)
    }
}

/// What [`replay_unpatched_counterexample`] found.
#[derive(Debug)]
pub struct CounterexampleReplay {
    /// The unpatched model's shortest counterexample, one line per step.
    pub counterexample: Vec<String>,
    /// The replay of that trace against the fixed runtime.
    pub replay: Replay,
}

impl CounterexampleReplay {
    /// The step (1-based) where the fixed runtime departs from the unpatched trace.
    pub fn departs_at(&self) -> Option<usize> {
        self.replay.divergence.as_ref().map(|d| d.step)
    }
}

impl fmt::Display for CounterexampleReplay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "shortest counterexample of `{}` in design `unpatched` ({} steps), replayed against the fixed runtime:",
            property::NO_REANIMATION,
            self.counterexample.len()
        )?;
        for (i, line) in self.counterexample.iter().enumerate() {
            let mark = match self.replay.steps.get(i) {
                Some(o) if o.agreed => "agrees",
                Some(_) => "DEPARTS",
                None => "not replayed",
            };
            writeln!(f, "  {:>3}. [{mark}] {line}", i + 1)?;
        }
        match &self.replay.divergence {
            Some(d) => write!(f, "{d}"),
            None => writeln!(f, "the fixed runtime follows the whole unpatched trace"),
        }
    }
}

/// Runs the path `actions` of `m` from its initial state through the binding, the
/// projections compared after every step, and returns the last state with the runtime
/// there: a runtime in a situation the model reaches, for tests that then hand it what
/// the model never sends. Panics where the path is not the model's or the runtime
/// departs from it.
pub fn drive(m: &Leadership, actions: &[Action]) -> (State, Runtime) {
    let states = trace::states_of(m, 0, actions).expect("a path of the model");
    let mut rt = LeadershipBinding::start(m, &states[0].0);
    for (state, action) in &states {
        if let Some(a) = action {
            LeadershipBinding::step(m, &mut rt, state, a)
                .unwrap_or_else(|e| panic!("{a:?} refused: {e}"));
            let next = m.next_state(state, *a).expect("a step of the path");
            let (want, got) = (
                LeadershipBinding::model_view(m, &next),
                LeadershipBinding::runtime_view(&rt),
            );
            assert_eq!(want, got, "after {a:?}");
        }
    }
    (states.last().expect("the initial state").0, rt)
}

/// Finds the shortest counterexample of "no reanimation" in the `unpatched` design at
/// the given settings overrides, writes it as a trace file, and replays that file
/// against the fixed runtime: the replay stops where the runtime stops following the
/// unpatched behaviour.
pub fn replay_unpatched_counterexample(
    overrides: &[(&str, &str)],
) -> Result<CounterexampleReplay, TraceError> {
    let unpatched = Leadership::scenario("unpatched", "default", overrides).map_err(|e| {
        TraceError::Settings {
            file: "(unpatched model)".into(),
            problem: e.to_string(),
        }
    })?;
    let path =
        check::shortest(&unpatched, property::NO_REANIMATION).ok_or_else(|| TraceError::Step {
            file: "(unpatched model)".into(),
            step: 0,
            problem: format!("no counterexample of `{}`", property::NO_REANIMATION),
        })?;
    let pairs = path.into_vec();
    let actions: Vec<Action> = pairs.iter().filter_map(|(_, a)| *a).collect();
    let counterexample = pairs
        .iter()
        .filter_map(|(s, a)| a.map(|a| unpatched.describe_step(s, &a)))
        .collect();
    let file = trace::to_json(&unpatched, 0, &actions).expect("a checker path is a model path");
    let text = serde_json::to_string(&file).expect("a trace file serialises");
    let loaded = trace::parse("unpatched-no-reanimation.json", &text)?;
    let replay = trace::replay::<LeadershipBinding>(&loaded)?;
    Ok(CounterexampleReplay {
        counterexample,
        replay,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_word_is_borrowed_and_any_other_text_kept_whole() {
        let outcomes = RunnerOutcome::ALL.map(RunnerOutcome::name);
        for known in [REJECTED, "runner", "closing", "entry_marked_clean"]
            .into_iter()
            .chain(outcomes)
        {
            assert!(
                matches!(word(known), Cow::Borrowed(w) if w == known),
                "{known}"
            );
        }
        // Same lengths as known words, one byte apart, and text no word has.
        for other in [
            "runnex",
            "cached_checking_leadershiq",
            "",
            "a longer text than any word",
        ] {
            assert!(
                matches!(word(other), Cow::Owned(ref w) if w == other),
                "{other}"
            );
        }
    }
}
