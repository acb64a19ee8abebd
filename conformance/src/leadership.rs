//! The leadership model bound to the production leadership machines (FLINK-39704,
//! apache/flink PR 28201).
//!
//! [`LeadershipBinding`] drives `steadfast::leadership::Driver` (runner, processes,
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
//! - the runtime takes four steps of its own, as soon as they are possible, that the model
//!   schedules separately: completing the runner's close, and the dispatcher's handling of
//!   the runner result with its two cleanup steps. The model side of the observation is
//!   therefore taken after those steps ([`settle`]), and the model's own copies of them
//!   are steps without a runtime event.
//!
//! [`replay_unpatched_counterexample`] replays the unpatched design's shortest
//! reanimation counterexample against the fixed runtime and says where the two part.

use std::fmt;

use serde::Serialize;
use stateright::Model;
use steadfast::leadership::{
    Driver, Event, JobId, JobResultEntry, JobResultStore, JobStatus, ProcessResult, ProcessState,
    Query, RunnerResult, RunnerState, Session,
};
use steadfast_model::check;
use steadfast_model::leadership::{
    self as model, property, Action, DispatcherState, Leadership, Outcome, State, Status,
};
use steadfast_model::Spec;

use crate::trace::{self, Replay, TraceError};
use crate::Binding;

/// The job every run drives.
pub const JOB: JobId = JobId(1);

/// One process as both sides observe it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ProcessView {
    /// The leader session that created it.
    pub session: Session,
    /// Running, Closing or Terminated.
    pub state: ProcessState,
    /// Its set-once result.
    pub result: Option<ProcessResult>,
    /// Its result completed and the runner's forward callback has not run yet.
    pub forward_pending: bool,
}

/// The runner of the current dispatcher epoch as both sides observe it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct RunnerView {
    /// Running, JobCompleted or Stopped.
    pub state: RunnerState,
    /// The set-once runner result the dispatcher consumes.
    pub result: Option<RunnerResult>,
    /// A cached terminal status not yet published as the runner result.
    pub pending_terminal: Option<JobStatus>,
    /// The session of the runner's current process (kept across revoke).
    pub current_process_leader: Option<Session>,
    /// The runner finished closing.
    pub terminated: bool,
}

/// The observable value both sides produce after every step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Observation {
    /// The session the job's leader election currently issues.
    pub issued_session: Option<Session>,
    /// The runner of the current epoch; `None` when this epoch's dispatcher recovered
    /// nothing.
    pub runner: Option<RunnerView>,
    /// Every process of every runner, in creation order.
    pub processes: Vec<ProcessView>,
    /// The JobGraph store holds the job.
    pub job_graph_present: bool,
    /// The job's JobResultStore entry.
    pub job_result_entry: JobResultEntry,
    /// Dispatcher epoch (leadership gains), from 1.
    pub dispatcher_epoch: u32,
    /// The dispatcher of this epoch is still leader.
    pub dispatcher_leader: bool,
    /// The dispatcher counts the job's runner as live (started, not terminated).
    pub live_runner: bool,
    /// Runners the dispatcher started, over all epochs.
    pub runners_started: u32,
}

/// The runtime: the production driver for [`JOB`], queries held for the step to answer.
#[derive(Clone, Debug)]
pub struct Runtime {
    /// The driver of runner, dispatcher, election and stores.
    pub driver: Driver,
}

impl Runtime {
    /// A dispatcher leader with the job submitted: the model's initial situation.
    pub fn started() -> Runtime {
        let mut driver = Driver::new(JOB, false);
        driver
            .dispatcher_gain_leadership()
            .expect("a fresh dispatcher gains leadership");
        driver
            .submit_job()
            .expect("a fresh dispatcher accepts the job");
        Runtime { driver }
    }
}

/// Binds [`Leadership`] to the production leadership machines.
pub struct LeadershipBinding;

/// The model's steps the runtime takes by itself, as soon as they are possible.
const OWN_STEPS: [Action; 4] = [
    Action::CloseRunner,
    Action::HandleRunnerResult,
    Action::RemoveJobGraph,
    Action::MarkResultClean,
];

/// `state` after every step the runtime takes by itself (runner close completion,
/// the dispatcher's handling of the runner result, global cleanup) whenever the model
/// enables it. Each of those steps is one-way, so this ends.
pub fn settle(model: &Leadership, state: &State) -> State {
    let mut state = *state;
    let mut enabled = Vec::new();
    loop {
        enabled.clear();
        model.actions(&state, &mut enabled);
        let Some(own) = OWN_STEPS.iter().find(|a| enabled.contains(a)) else {
            return state;
        };
        state = model
            .next_state(&state, *own)
            .expect("the model's enabled actions always have a next state");
    }
}

fn status(s: Status) -> JobStatus {
    match s {
        Status::Finished => JobStatus::Finished,
        Status::Failed => JobStatus::Failed,
        Status::Canceled => JobStatus::Canceled,
    }
}

fn process_result(o: Outcome) -> Option<ProcessResult> {
    match o {
        Outcome::Unset => None,
        Outcome::Terminal(s) => Some(ProcessResult::Terminal(status(s))),
        // A process's result is only ever unset, terminal or NotFinished in the model;
        // the other values are the runner's.
        Outcome::NotFinished | Outcome::Suspended | Outcome::AlreadyDone => {
            Some(ProcessResult::NotFinished)
        }
    }
}

fn runner_result(o: Outcome) -> Option<RunnerResult> {
    match o {
        Outcome::Unset => None,
        Outcome::Terminal(s) => Some(RunnerResult::Terminal(status(s))),
        Outcome::Suspended => Some(RunnerResult::Suspended),
        Outcome::NotFinished => Some(RunnerResult::NotFinished),
        Outcome::AlreadyDone => Some(RunnerResult::JobAlreadyDone),
    }
}

fn session(s: u8) -> Option<Session> {
    (s != 0).then_some(Session(u32::from(s)))
}

fn process_session(state: &State, id: u8) -> Session {
    Session(u32::from(state.processes[usize::from(id) - 1].session))
}

/// The model side of the observation, of a settled state.
fn observe_model(s: &State) -> Observation {
    let live = s.has_runner && !s.runner_terminated;
    // The session of the runner's current process; equal to `current_leader` wherever
    // the model keeps one (designs with the runner fix), and what the runtime keeps.
    let current = (s.has_runner && s.current != 0)
        .then(|| process_session(s, s.current))
        .filter(|_| s.processes[usize::from(s.current) - 1].epoch == s.epoch);
    Observation {
        issued_session: session(s.issued).filter(|_| live),
        runner: s.has_runner.then(|| RunnerView {
            state: match s.runner {
                model::RunnerState::Running => RunnerState::Running,
                model::RunnerState::JobCompleted => RunnerState::JobCompleted,
                model::RunnerState::Stopped => RunnerState::Stopped,
            },
            result: runner_result(s.runner_result),
            // Once the result is set the cache is dead in the model; the runtime
            // clears it when it publishes.
            pending_terminal: s
                .pending_terminal
                .filter(|_| !s.runner_result.is_set())
                .map(status),
            current_process_leader: current,
            terminated: s.runner_terminated,
        }),
        processes: s.processes[..usize::from(s.process_count)]
            .iter()
            .map(|p| ProcessView {
                session: Session(u32::from(p.session)),
                state: match p.state {
                    model::ProcessState::Running => ProcessState::Running,
                    model::ProcessState::Closing => ProcessState::Closing,
                    model::ProcessState::Terminated => ProcessState::Terminated,
                },
                result: process_result(p.result),
                forward_pending: p.forward_pending,
            })
            .collect(),
        job_graph_present: s.job_graph,
        job_result_entry: match s.job_result {
            model::JobResultEntry::Absent => JobResultEntry::None,
            model::JobResultEntry::Dirty => JobResultEntry::Dirty,
            model::JobResultEntry::Clean => JobResultEntry::Clean,
        },
        dispatcher_epoch: u32::from(s.epoch),
        dispatcher_leader: s.dispatcher == DispatcherState::Leading,
        live_runner: live,
        // Recovery only ever stops (the JobGraph never comes back, an entry never
        // goes), so the runners started are one per epoch up to the one that wrote the
        // entry, or up to now.
        runners_started: u32::from(if s.has_runner { s.epoch } else { s.entry_epoch }),
    }
}

/// The runtime side of the observation.
pub fn observe_runtime(rt: &Runtime) -> Observation {
    let d = &rt.driver;
    let p = d.projection();
    let latest = d.runner();
    let pending: Vec<Session> = latest.map(|r| r.pending_forwards()).unwrap_or_default();
    let current_epoch = p.runners_started == p.dispatcher_epoch;
    Observation {
        issued_session: p.issued_session,
        runner: latest.filter(|_| current_epoch).map(|r| RunnerView {
            state: r.state(),
            result: r.result(),
            pending_terminal: r.pending_terminal(),
            current_process_leader: r.current_process_leader(),
            terminated: r.is_terminated(),
        }),
        processes: p
            .processes
            .iter()
            .map(|q| ProcessView {
                session: q.session,
                state: q.state,
                result: q.result,
                forward_pending: pending.contains(&q.session),
            })
            .collect(),
        job_graph_present: p.job_graph_present,
        job_result_entry: p.job_result_entry,
        dispatcher_epoch: p.dispatcher_epoch,
        dispatcher_leader: d.dispatcher().is_leader(),
        live_runner: d.dispatcher().live_runners() == [JOB],
        runners_started: p.runners_started,
    }
}

fn text<E: fmt::Display>(e: E) -> String {
    e.to_string()
}

/// Answers every query the runner asked during this step, each with the answer the
/// model's state `before` gives; the environment's own answer must be the same.
fn answer_queries(rt: &mut Runtime, before: &State) -> Result<(), String> {
    // A step asks at most two questions (a grant: the store, then leadership).
    for _ in 0..4 {
        let Some(query) = rt.driver.pending_queries().first().copied() else {
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
            ));
        }
        rt.driver.answer_query().map_err(text)?;
    }
    Err("the runner keeps asking questions".into())
}

/// Delivers the runner's next election message when it is `expected`; otherwise (a
/// probe) hands `expected` to the runner directly, as a channel out of order would.
fn deliver(rt: &mut Runtime, expected: Event, enabled: bool) -> Result<(), String> {
    let front = rt.driver.pending_election().first().copied();
    if front == Some(expected) {
        rt.driver.deliver_election().map_err(text)?;
    } else if enabled {
        return Err(format!(
            "the election channel holds {front:?} next, the model runs {expected:?}"
        ));
    } else {
        rt.driver.runner_event(expected).map_err(text)?;
    }
    Ok(())
}

/// Whether the runtime's latest runner owns the process of `session`.
fn owns(rt: &Runtime, session: Session) -> bool {
    rt.driver
        .runner()
        .is_some_and(|r| r.processes().any(|p| p.session() == session))
}

impl Binding for LeadershipBinding {
    type Model = Leadership;
    type State = State;
    type Action = Action;
    type Runtime = Runtime;
    type Projection = Observation;

    fn start(_: &Leadership, _: &State) -> Runtime {
        Runtime::started()
    }

    fn model_view(model: &Leadership, state: &State) -> Observation {
        observe_model(&settle(model, state))
    }

    fn runtime_view(rt: &Runtime) -> Observation {
        observe_runtime(rt)
    }

    fn step(
        model: &Leadership,
        rt: &mut Runtime,
        before: &State,
        action: &Action,
    ) -> Result<(), String> {
        let mut enabled = Vec::new();
        model.actions(before, &mut enabled);
        let enabled = enabled.contains(action);
        match *action {
            Action::GrantLeadership(s) => {
                let got = rt.driver.elect().map_err(text)?;
                if got != Session(u32::from(s)) {
                    return Err(format!("the election issued {got}, the model s{s}"));
                }
            }
            Action::RevokeLeadership(s) => {
                let got = rt.driver.unelect().map_err(text)?;
                if got != Session(u32::from(s)) {
                    return Err(format!("the election revoked {got}, the model s{s}"));
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
                let status = status(before.decided.ok_or("a signal without a decision")?);
                // A process whose runner is gone receives nothing.
                if owns(rt, session) {
                    rt.driver
                        .runner_event(Event::TerminalSignalDelivered { session, status })
                        .map_err(text)?;
                }
            }
            Action::CheckLeadershipInForward(id) => {
                let session = process_session(before, id);
                rt.driver
                    .runner_event(Event::ForwardCallback { session })
                    .map_err(text)?;
                answer_queries(rt, before)?;
            }
            Action::TerminateService(id) => {
                let session = process_session(before, id);
                rt.driver
                    .runner_event(Event::ProcessServiceTerminated { session })
                    .map_err(text)?;
                answer_queries(rt, before)?;
            }
            Action::DispatcherFailover => {
                rt.driver.dispatcher_lose_leadership().map_err(text)?;
                answer_queries(rt, before)?;
            }
            Action::RecoverJob => {
                rt.driver.dispatcher_gain_leadership().map_err(text)?;
            }
            // Taken by the runtime already, as soon as they became possible.
            Action::CloseRunner
            | Action::HandleRunnerResult
            | Action::RemoveJobGraph
            | Action::MarkResultClean => {}
        }
        Ok(())
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
                // The next leader waits for the old runner to terminate.
                if live {
                    probes.push(Action::RecoverJob);
                }
            }
            DispatcherState::Leading => probes.push(Action::RecoverJob),
        }
        probes
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
