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
//! - the dispatcher's steps are stepped one to one: the driver is
//!   [`Driver::stepwise`], so the runner's result waits on its way to the dispatcher
//!   until `HandleRunnerResult` delivers it, and each store request of the dispatcher
//!   waits until the model's step that performs it (`HandleRunnerResult` writes the
//!   dirty entry, `RemoveJobGraph`, `MarkResultClean`, `RecoverJob` reads the stores)
//!   answers it;
//! - the runtime takes one step of its own, as soon as it is possible, that the model
//!   schedules separately: completing the runner's close. The model side of the
//!   observation is therefore taken after it ([`settle`]), and the model's own copy of
//!   it is a step without a runtime event.
//!
//! Every step also checks the runtime's structured `tracing` log: the events the runtime
//! emitted while it took the step must be exactly those the model's step implies
//! ([`expected_log`], [`check_log`]); a difference shows in [`Observation::log`].
//!
//! [`replay_unpatched_counterexample`] replays the unpatched design's shortest
//! reanimation counterexample against the fixed runtime and says where the two part.

use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt::{self, Write as _};

use serde::Serialize;
use stateright::Model;
use steadfast::leadership::{
    DispatcherEffect, DispatcherEvent, Driver, Event, JobGraphStore, JobId, JobResultEntry,
    JobResultStore, JobStatus, LeadershipError, ProcessEvent, ProcessResult, ProcessState, Query,
    RunnerOutcome, RunnerResult, RunnerState, Session,
};
use steadfast_model::check;
use steadfast_model::leadership::{
    self as model, property, Action, DispatcherState, Leadership, Outcome, State, Status,
};
use steadfast_model::Spec;
use tracing::field::{Field, Visit};
use tracing::span;
use tracing::{Dispatch, Metadata, Subscriber};

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
    /// The dispatcher consumed the runner's result.
    pub result_handled: bool,
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
    /// The runner's result is on its way to the dispatcher, not yet handled.
    pub result_in_flight: bool,
    /// The dispatcher's store request waiting for an answer after the step, if any:
    /// the next step of global cleanup.
    pub store_request: Option<DispatcherEffect>,
    /// How many store requests wait (at most one in this single-job model).
    pub store_requests: usize,
    /// Where the structured log the runtime emitted in the step that led here disagrees
    /// with the log the model's step implies, one `; `-separated item per difference;
    /// empty when they agree, and always empty on the model side ([`check_log`]).
    pub log: String,
}

/// The runtime: the production driver for [`JOB`], queries held for the step to answer.
#[derive(Clone, Debug)]
pub struct Runtime {
    /// The driver of runner, dispatcher, election and stores.
    pub driver: Driver,
    /// Whether each step collects the runtime's structured log and checks it against the
    /// model ([`check_log`]); on from [`Runtime::started`].
    pub check_log: bool,
    /// The disagreements the log check found in the last step (see [`Observation::log`]).
    pub log: String,
}

impl Runtime {
    /// A dispatcher leader with the job submitted: the model's initial situation.
    pub fn started() -> Runtime {
        let mut driver = Driver::stepwise(JOB);
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

/// Binds [`Leadership`] to the production leadership machines.
pub struct LeadershipBinding;

/// The model's steps the runtime takes by itself, as soon as they are possible.
const OWN_STEPS: [Action; 1] = [Action::CloseRunner];

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
    let mut out = Observation::blank();
    observe_model_into(s, &mut out);
    out
}

/// [`observe_model`] written over `out`, reusing the room of its list and text.
fn observe_model_into(s: &State, out: &mut Observation) {
    let mut processes = std::mem::take(&mut out.processes);
    processes.clear();
    processes.extend(
        s.processes[..usize::from(s.process_count)]
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
            }),
    );
    let mut log = std::mem::take(&mut out.log);
    log.clear();
    let live = s.has_runner && !s.runner_terminated;
    let store_request = model_store_request(s);
    // The session of the runner's current process; equal to `current_leader` wherever
    // the model keeps one (designs with the runner fix), and what the runtime keeps.
    let current = (s.has_runner && s.current != 0)
        .then(|| process_session(s, s.current))
        .filter(|_| s.processes[usize::from(s.current) - 1].epoch == s.epoch);
    *out = Observation {
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
            result_handled: s.result_handled,
        }),
        processes,
        job_graph_present: s.job_graph,
        job_result_entry: match s.job_result {
            model::JobResultEntry::Absent => JobResultEntry::None,
            model::JobResultEntry::Dirty => JobResultEntry::Dirty,
            model::JobResultEntry::Clean => JobResultEntry::Clean,
        },
        dispatcher_epoch: u32::from(s.epoch),
        dispatcher_leader: s.dispatcher == DispatcherState::Leading,
        live_runner: live,
        runners_started: u32::from(latest_runner_epoch(s)),
        result_in_flight: s.has_runner && s.runner_result.is_set() && !s.result_handled,
        store_request,
        store_requests: usize::from(store_request.is_some()),
        log,
    };
}

/// The store request the model's state has the dispatcher wait on: the next step of
/// global cleanup while the entry is dirty.
fn model_store_request(s: &State) -> Option<DispatcherEffect> {
    (s.job_result == model::JobResultEntry::Dirty).then_some(if s.job_graph {
        DispatcherEffect::RemoveJobGraph { job: JOB }
    } else {
        DispatcherEffect::MarkEntryClean { job: JOB }
    })
}

/// The epoch of the latest runner the dispatcher started. Recovery only ever stops (the
/// JobGraph never comes back, an entry never goes), so runners were started in every
/// epoch up to the one that wrote the entry, or up to now.
fn latest_runner_epoch(s: &State) -> u8 {
    if s.has_runner {
        s.epoch
    } else {
        s.entry_epoch
    }
}

/// The runtime side of the observation.
pub fn observe_runtime(rt: &Runtime) -> Observation {
    let mut out = Observation::blank();
    observe_runtime_into(rt, &mut out);
    out
}

/// [`observe_runtime`] written over `out`, reusing the room of its list and text. It
/// reads the driver in place rather than through its projection, which would copy every
/// process.
fn observe_runtime_into(rt: &Runtime, out: &mut Observation) {
    let d = &rt.driver;
    let env = d.environment();
    let latest = d.runner();
    let dispatcher = d.dispatcher();
    let runners_started = dispatcher.runners_started();
    let dispatcher_epoch = dispatcher.epoch();
    let mut processes = std::mem::take(&mut out.processes);
    processes.clear();
    // A retired process's session is looked up in the latest runner's forwards too, as
    // every process's was: sessions are never reused, so a hit would be a fault to show.
    let forward_pending = |session| latest.is_some_and(|r| r.forward_scheduled(session));
    processes.extend(d.retired_processes().iter().map(|q| ProcessView {
        session: q.session,
        state: q.state,
        result: q.result,
        forward_pending: forward_pending(q.session),
    }));
    if let Some(r) = latest {
        processes.extend(r.processes().map(|q| ProcessView {
            session: q.session(),
            state: q.state(),
            result: q.result(),
            forward_pending: r.forward_scheduled(q.session()),
        }));
    }
    let mut log = std::mem::take(&mut out.log);
    log.clone_from(&rt.log);
    *out = Observation {
        issued_session: env.issued,
        runner: latest
            .filter(|_| runners_started == dispatcher_epoch)
            .map(|r| RunnerView {
                state: r.state(),
                result: r.result(),
                pending_terminal: r.pending_terminal(),
                current_process_leader: r.current_process_leader(),
                terminated: r.is_terminated(),
                result_handled: dispatcher.result_received(JOB) == Some(true),
            }),
        processes,
        job_graph_present: env.graphs.contains(JOB),
        job_result_entry: env.results.entry(JOB),
        dispatcher_epoch,
        dispatcher_leader: dispatcher.is_leader(),
        live_runner: dispatcher.is_live(JOB) && dispatcher.live_count() == 1,
        runners_started,
        result_in_flight: d.next_runner_result().is_some(),
        store_request: d.store_requests().next().copied(),
        store_requests: d.store_requests().len(),
        log,
    };
}

impl Observation {
    /// An observation to fill ([`observe_model_into`], [`observe_runtime_into`]).
    fn blank() -> Observation {
        Observation {
            issued_session: None,
            runner: None,
            processes: Vec::new(),
            job_graph_present: false,
            job_result_entry: JobResultEntry::None,
            dispatcher_epoch: 0,
            dispatcher_leader: false,
            live_runner: false,
            runners_started: 0,
            result_in_flight: false,
            store_request: None,
            store_requests: 0,
            log: String::new(),
        }
    }
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

/// Whether the runtime's latest runner owns the process of `session`.
fn owns(rt: &Runtime, session: Session) -> bool {
    rt.driver
        .runner()
        .is_some_and(|r| r.processes().any(|p| p.session() == session))
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
            let status = status(before.decided.ok_or("a signal without a decision")?);
            // A process whose runner is gone receives nothing.
            if owns(rt, session) {
                rt.driver
                    .runner_event(Event::TerminalSignalDelivered { session, status })?;
            }
        }
        Action::CheckLeadershipInForward(id) => {
            let session = process_session(before, id);
            rt.driver.runner_event(Event::ForwardCallback { session })?;
            answer_queries(rt, before)?;
        }
        Action::TerminateService(id) => {
            let session = process_session(before, id);
            rt.driver
                .runner_event(Event::ProcessServiceTerminated { session })?;
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
            let write = rt.driver.store_requests().copied().find(
                |r| matches!(r, DispatcherEffect::WriteDirtyEntry { job, .. } if *job == JOB),
            );
            if let Some(write) = write {
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
        Action::CloseRunner => {}
    }
    Ok(())
}

// ---------------------------------------------------------------------------------
// The structured log. Every transition of the runner, a process and the dispatcher,
// and every election notice, emits one `tracing` event naming its component, the event,
// the session or job where one applies, and the outcome; FLINK-39704 was diagnosed from
// such logs, so they are an output the model's steps must explain too.

/// One structured event of the leadership runtime, with the fields conformance reads
/// (strings are empty and numbers `None` when the event lacks the field).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LogRecord {
    /// `runner`, `process`, `dispatcher` or `election`.
    pub component: Cow<'static, str>,
    /// The event the component handled.
    pub event: Cow<'static, str>,
    /// The session the event names.
    pub session: Option<u64>,
    /// The job (runner and dispatcher events).
    pub job: Option<u64>,
    /// The dispatcher's epoch after the event (dispatcher events).
    pub epoch: Option<u64>,
    /// What the component did; `rejected` when it refused the event.
    pub outcome: Cow<'static, str>,
}

impl fmt::Display for LogRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.component, self.event)?;
        for (name, value) in [
            ("session", self.session),
            ("job", self.job),
            ("epoch", self.epoch),
        ] {
            if let Some(v) = value {
                write!(f, " {name}={v}")?;
            }
        }
        write!(f, " -> {}", self.outcome)
    }
}

/// The outcome of an event a component refused.
const REJECTED: &str = "rejected";

/// The log's words, so that a record of them borrows instead of allocating; a word
/// outside this list is kept as an owned string, so the list is a cache, not a
/// vocabulary: expected records name runner outcomes by [`RunnerOutcome`], and a test
/// checks that every one of them is borrowed here. A `match`, so that the compiler tells
/// the words apart by length before it compares bytes.
fn word(text: &str) -> Cow<'static, str> {
    macro_rules! words {
        ($($w:literal),* $(,)?) => {
            match text {
                $($w => Cow::Borrowed($w),)*
                _ => Cow::Owned(text.to_owned()),
            }
        };
    }
    words!(
        "rejected",
        "applied",
        "runner",
        "process",
        "dispatcher",
        "election",
        "leadership_granted",
        "leadership_revoked",
        "terminal_signal_delivered",
        "process_service_terminated",
        "forward_callback",
        "close_requested",
        "job_result_store_answered",
        "leadership_confirmed",
        "process_result_completed",
        "terminal_signal",
        "service_terminated",
        "close",
        "completed",
        "leadership_gained",
        "leadership_lost",
        "job_submitted",
        "runner_completed",
        "runner_terminated",
        "jobs_recovered",
        "job_graph_stored",
        "dirty_entry_written",
        "job_graph_removed",
        "entry_marked_clean",
        "discarded",
        "issue",
        "revoke",
        "issued",
        "revoked",
        "queued",
        "checking_leadership",
        "grant_skipped_not_running",
        "grant_skipped_not_leader",
        "job_already_done",
        "flushed_on_grant",
        "process_started",
        "forwarded",
        "dropped_not_leader",
        "forward_scheduled",
        "process_terminated",
        "ignored",
        "cached",
        "cached_checking_leadership",
        "dropped_not_running",
        "stopping",
        "terminated",
        "terminated_not_finished",
        "already_completed",
        "closing",
    )
}

impl Visit for LogRecord {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "component" => self.component = word(value),
            "event" => self.event = word(value),
            "outcome" => self.outcome = word(value),
            _ => {}
        }
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        match field.name() {
            "session" => self.session = Some(value),
            "job" => self.job = Some(value),
            "epoch" => self.epoch = Some(value),
            _ => {}
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        // Numbers are unsigned in the log; a negative one is kept as a value no model
        // expects.
        self.record_u64(field, u64::try_from(value).unwrap_or(u64::MAX));
    }

    // State, effects and errors are recorded with `Debug`; they are not compared, so
    // they are not formatted either.
    fn record_debug(&mut self, _: &Field, _: &dyn fmt::Debug) {}
}

/// The subscriber that keeps every event of the thread's current collection.
struct Collector;

thread_local! {
    static RECORDS: RefCell<Vec<LogRecord>> = const { RefCell::new(Vec::new()) };
    static COLLECTOR: Dispatch = Dispatch::new(Collector);
    static BUFFERS: RefCell<Buffers> = RefCell::new(Buffers::default());
}

/// The expected and the collected log of the binding's current step, kept from step to
/// step so that their room is reused.
#[derive(Default)]
struct Buffers {
    want: Vec<LogRecord>,
    seen: Vec<LogRecord>,
}

impl Subscriber for Collector {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.is_event()
    }
    fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
        span::Id::from_u64(1)
    }
    fn record(&self, _: &span::Id, _: &span::Record<'_>) {}
    fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut record = LogRecord::default();
        event.record(&mut record);
        RECORDS.with_borrow_mut(|records| records.push(record));
    }
    fn enter(&self, _: &span::Id) {}
    fn exit(&self, _: &span::Id) {}
}

/// Runs `f` with a collector as this thread's subscriber and leaves in `out` (cleared
/// first) every event emitted meanwhile, in order. The events go to `out`'s own room,
/// and a collection around this one gets its records back afterwards, so collections
/// nest (an event belongs to the innermost one).
fn collect_into<T>(out: &mut Vec<LogRecord>, f: impl FnOnce() -> T) -> T {
    out.clear();
    let outer = RECORDS.replace(std::mem::take(out));
    let value = COLLECTOR.with(|dispatch| tracing::dispatcher::with_default(dispatch, f));
    *out = RECORDS.replace(outer);
    value
}

/// Runs `f` and returns its value with the structured events emitted meanwhile, in
/// order.
pub fn collect<T>(f: impl FnOnce() -> T) -> (T, Vec<LogRecord>) {
    let mut out = Vec::new();
    let value = collect_into(&mut out, f);
    (value, out)
}

/// Realises `action` at `before` on the runtime as the binding's step does, without the
/// log check.
pub fn realise(
    model: &Leadership,
    rt: &mut Runtime,
    before: &State,
    action: &Action,
) -> Result<(), Rejection> {
    apply(rt, before, action, enables(model, before, action))
}

/// [`realise`], returning as well the structured events the runtime emitted meanwhile.
pub fn logged_step(
    model: &Leadership,
    rt: &mut Runtime,
    before: &State,
    action: &Action,
) -> (Result<(), Rejection>, Vec<LogRecord>) {
    collect(|| realise(model, rt, before, action))
}

/// The log check of one step: where `seen`, the structured events the runtime emitted
/// while it realised `action` at `before` and answered `result`, differs from what the
/// model's step implies ([`expected_log`]); empty when they agree. A refusal of an
/// enabled action, or the acceptance of a forbidden one, is a disagreement of its own and
/// is not checked here.
pub fn check_log(
    model: &Leadership,
    before: &State,
    action: &Action,
    result: &Result<(), Rejection>,
    seen: &[LogRecord],
) -> String {
    let enabled = enables(model, before, action);
    if enabled != result.is_ok() {
        return String::new();
    }
    let want = expected_log(model, before, action, !enabled);
    if want == seen {
        String::new()
    } else {
        disagreements(&want, seen)
    }
}

/// One item per difference, by position: the differing fields of records both logs have
/// (`model | runtime`), then records only one of them has.
fn disagreements(want: &[LogRecord], seen: &[LogRecord]) -> String {
    let mut out = String::new();
    let item = |out: &mut String, text: fmt::Arguments<'_>| {
        if !out.is_empty() {
            out.push_str("; ");
        }
        let _ = out.write_fmt(text);
    };
    for (i, (w, s)) in want.iter().zip(seen).enumerate() {
        let strings = [
            ("component", &w.component, &s.component),
            ("event", &w.event, &s.event),
            ("outcome", &w.outcome, &s.outcome),
        ];
        for (name, a, b) in strings {
            if a != b {
                item(&mut out, format_args!("log[{i}].{name}: {a} | {b}"));
            }
        }
        let numbers = [
            ("session", w.session, s.session),
            ("job", w.job, s.job),
            ("epoch", w.epoch, s.epoch),
        ];
        for (name, a, b) in numbers {
            if a != b {
                let show = |v: Option<u64>| v.map_or("none".to_string(), |v| v.to_string());
                item(
                    &mut out,
                    format_args!("log[{i}].{name}: {} | {}", show(a), show(b)),
                );
            }
        }
    }
    for (i, w) in want.iter().enumerate().skip(seen.len()) {
        item(&mut out, format_args!("log[{i}] missing: {w}"));
    }
    for (i, s) in seen.iter().enumerate().skip(want.len()) {
        item(&mut out, format_args!("log[{i}] unexpected: {s}"));
    }
    out
}

// The names below are the log's vocabulary as conformance states it, from the event
// values the binding builds; the runtime's own naming helpers are what they check.

fn runner_event(event: &Event) -> &'static str {
    match event {
        Event::LeadershipGranted { .. } => "leadership_granted",
        Event::LeadershipRevoked => "leadership_revoked",
        Event::ProcessResultCompleted { .. } => "process_result_completed",
        Event::TerminalSignalDelivered { .. } => "terminal_signal_delivered",
        Event::ProcessServiceTerminated { .. } => "process_service_terminated",
        Event::ForwardCallback { .. } => "forward_callback",
        Event::CloseRequested => "close_requested",
        Event::JobResultStoreAnswered { .. } => "job_result_store_answered",
        Event::LeadershipConfirmed { .. } => "leadership_confirmed",
    }
}

fn runner_event_session(event: &Event) -> Option<Session> {
    match *event {
        Event::LeadershipGranted { session }
        | Event::ProcessResultCompleted { session, .. }
        | Event::TerminalSignalDelivered { session, .. }
        | Event::ProcessServiceTerminated { session }
        | Event::ForwardCallback { session }
        | Event::LeadershipConfirmed { session, .. } => Some(session),
        Event::LeadershipRevoked | Event::CloseRequested | Event::JobResultStoreAnswered { .. } => {
            None
        }
    }
}

fn process_event(event: ProcessEvent) -> &'static str {
    match event {
        ProcessEvent::TerminalSignal(_) => "terminal_signal",
        ProcessEvent::Completed(_) => "completed",
        ProcessEvent::Close => "close",
        ProcessEvent::ServiceTerminated => "service_terminated",
    }
}

fn dispatcher_event(event: &DispatcherEvent) -> (&'static str, Option<JobId>) {
    match *event {
        DispatcherEvent::LeadershipGained => ("leadership_gained", None),
        DispatcherEvent::JobsRecovered { .. } => ("jobs_recovered", None),
        DispatcherEvent::LeadershipLost => ("leadership_lost", None),
        DispatcherEvent::JobSubmitted { job } => ("job_submitted", Some(job)),
        DispatcherEvent::JobGraphStored { job } => ("job_graph_stored", Some(job)),
        DispatcherEvent::RunnerCompleted { job, .. } => ("runner_completed", Some(job)),
        DispatcherEvent::RunnerTerminated { job } => ("runner_terminated", Some(job)),
        DispatcherEvent::DirtyEntryWritten { job } => ("dirty_entry_written", Some(job)),
        DispatcherEvent::JobGraphRemoved { job } => ("job_graph_removed", Some(job)),
        DispatcherEvent::EntryMarkedClean { job, .. } => ("entry_marked_clean", Some(job)),
    }
}

fn runner_record(event: Event, outcome: RunnerOutcome) -> LogRecord {
    runner_log(event, outcome.name())
}

fn runner_refusal(event: Event) -> LogRecord {
    runner_log(event, REJECTED)
}

fn runner_log(event: Event, outcome: &'static str) -> LogRecord {
    LogRecord {
        component: Cow::Borrowed("runner"),
        event: Cow::Borrowed(runner_event(&event)),
        session: runner_event_session(&event).map(|s| u64::from(s.0)),
        job: Some(u64::from(JOB.0)),
        epoch: None,
        outcome: Cow::Borrowed(outcome),
    }
}

fn process_record(event: ProcessEvent, session: Session, outcome: &'static str) -> LogRecord {
    LogRecord {
        component: Cow::Borrowed("process"),
        event: Cow::Borrowed(process_event(event)),
        session: Some(u64::from(session.0)),
        job: None,
        epoch: None,
        outcome: Cow::Borrowed(outcome),
    }
}

fn dispatcher_record(event: &DispatcherEvent, epoch: u8, outcome: &'static str) -> LogRecord {
    let (name, job) = dispatcher_event(event);
    LogRecord {
        component: Cow::Borrowed("dispatcher"),
        event: Cow::Borrowed(name),
        session: None,
        job: job.map(|j| u64::from(j.0)),
        epoch: Some(u64::from(epoch)),
        outcome: Cow::Borrowed(outcome),
    }
}

fn election_record(event: &'static str, session: u8, outcome: &'static str) -> LogRecord {
    LogRecord {
        component: Cow::Borrowed("election"),
        event: Cow::Borrowed(event),
        session: Some(u64::from(session)),
        job: None,
        epoch: None,
        outcome: Cow::Borrowed(outcome),
    }
}

/// Whether process `id` belongs to the runner the driver holds (the latest one), which
/// is the one the binding's events reach.
fn of_latest_runner(s: &State, id: u8) -> bool {
    s.processes[usize::from(id) - 1].epoch == latest_runner_epoch(s)
}

/// The structured events the runtime must emit when the binding realises `action` at
/// `before`: the model takes it, or (`refused`) the model forbids it and the runtime
/// refuses it. Every expectation reads the model: its state before (settled, as the
/// runtime is), the action, and its settled state after.
pub fn expected_log(
    model: &Leadership,
    before: &State,
    action: &Action,
    refused: bool,
) -> Vec<LogRecord> {
    let mut out = Vec::new();
    expected_log_into(model, before, action, refused, &mut out);
    out
}

fn expected_log_into(
    model: &Leadership,
    before: &State,
    action: &Action,
    refused: bool,
    out: &mut Vec<LogRecord>,
) {
    out.clear();
    if refused {
        refusal_log(before, action, out);
        return;
    }
    match *action {
        // The election notices the issue or revoke at once; the runner sees it later.
        Action::GrantLeadership(s) => out.push(election_record("issue", s, "issued")),
        Action::RevokeLeadership(s) => out.push(election_record("revoke", s, "revoked")),
        // No runtime event.
        Action::DecideTerminal(_) | Action::CloseRunner => {}
        // The new leader asks the stores for its jobs; their answer is the recovery.
        Action::RecoverJob => {
            for event in [
                DispatcherEvent::LeadershipGained,
                DispatcherEvent::JobsRecovered {
                    epoch: 0,
                    jobs: Vec::new(),
                },
            ] {
                out.push(dispatcher_record(&event, before.epoch + 1, "applied"));
            }
        }
        Action::RemoveJobGraph => out.push(dispatcher_record(
            &DispatcherEvent::JobGraphRemoved { job: JOB },
            before.epoch,
            "applied",
        )),
        Action::MarkResultClean => out.push(dispatcher_record(
            &DispatcherEvent::EntryMarkedClean {
                job: JOB,
                status: JobStatus::Finished,
            },
            before.epoch,
            "applied",
        )),
        _ => step_log(model, before, action, out),
    }
}

/// The events that set up the model's initial situation ([`Runtime::started`]): the
/// dispatcher gains leadership and reads empty stores, then accepts the job's
/// submission once its JobGraph is stored.
pub fn start_log(init: &State) -> Vec<LogRecord> {
    [
        DispatcherEvent::LeadershipGained,
        DispatcherEvent::JobsRecovered {
            epoch: 1,
            jobs: Vec::new(),
        },
        DispatcherEvent::JobSubmitted { job: JOB },
        DispatcherEvent::JobGraphStored { job: JOB },
    ]
    .iter()
    .map(|event| dispatcher_record(event, init.epoch, "applied"))
    .collect()
}

/// The events a forbidden step produces when the runtime refuses it: the refusal of the
/// event the binding delivered, and nothing else.
fn refusal_log(before: &State, action: &Action, out: &mut Vec<LogRecord>) {
    match *action {
        Action::RunGrant(s) => out.push(runner_refusal(Event::LeadershipGranted {
            session: Session(u32::from(s)),
        })),
        Action::RunRevoke => out.push(runner_refusal(Event::LeadershipRevoked)),
        Action::TerminateService(id) => {
            let session = process_session(before, id);
            // A process of the driver's runner refuses it itself first; a process of a
            // replaced runner is unknown to the runner.
            if of_latest_runner(before, id) {
                out.push(process_record(
                    ProcessEvent::ServiceTerminated,
                    session,
                    REJECTED,
                ));
            }
            out.push(runner_refusal(Event::ProcessServiceTerminated { session }));
        }
        Action::CheckLeadershipInForward(id) => out.push(runner_refusal(Event::ForwardCallback {
            session: process_session(before, id),
        })),
        Action::DispatcherFailover => out.push(dispatcher_record(
            &DispatcherEvent::LeadershipLost,
            before.epoch,
            REJECTED,
        )),
        Action::RecoverJob => out.push(dispatcher_record(
            &DispatcherEvent::LeadershipGained,
            before.epoch,
            REJECTED,
        )),
        // The election refuses before it notices anything, and the driver refuses to
        // deliver a runner result or answer a store request it does not hold before any
        // machine sees it; the other actions are never offered as probes.
        _ => {}
    }
}

/// Processes the step closed: Running before, Closing after.
fn closes(b: &State, a: &State, out: &mut Vec<LogRecord>) {
    for (p, q) in b.processes[..usize::from(b.process_count)]
        .iter()
        .zip(&a.processes)
    {
        if p.state == model::ProcessState::Running && q.state == model::ProcessState::Closing {
            out.push(process_record(
                ProcessEvent::Close,
                Session(u32::from(p.session)),
                "closing",
            ));
        }
    }
}

/// The runner and process events of an enabled step, then what the runtime does by
/// itself in the same call: the dispatcher handling a runner result that became set,
/// the runner's close it requests, the runner's close completing.
fn step_log(model: &Leadership, before: &State, action: &Action, out: &mut Vec<LogRecord>) {
    let b = settle(model, before);
    let next = model
        .next_state(before, *action)
        .expect("the model's enabled actions always have a next state");
    let a = settle(model, &next);
    let running = b.runner == model::RunnerState::Running;
    match *action {
        Action::RunGrant(s) => {
            let session = Session(u32::from(s));
            out.push(runner_record(
                Event::LeadershipGranted { session },
                RunnerOutcome::Queued,
            ));
            // A runner that is not running drops the grant without asking anything.
            if running {
                let has_entry = b.job_result != model::JobResultEntry::Absent;
                out.push(runner_record(
                    Event::JobResultStoreAnswered { has_entry },
                    RunnerOutcome::CheckingLeadership,
                ));
                let held = b.issued == s;
                let outcome = if !held {
                    RunnerOutcome::GrantSkippedNotLeader
                } else if b.pending_terminal.is_some() && model.design.runner_fix() {
                    RunnerOutcome::FlushedOnGrant
                } else if has_entry {
                    RunnerOutcome::JobAlreadyDone
                } else {
                    RunnerOutcome::ProcessStarted
                };
                out.push(runner_record(
                    Event::LeadershipConfirmed { session, held },
                    outcome,
                ));
            }
        }
        Action::RunRevoke => {
            closes(&b, &a, out);
            out.push(runner_record(
                Event::LeadershipRevoked,
                RunnerOutcome::Queued,
            ));
        }
        // A process whose runner is gone receives nothing.
        Action::DeliverTerminalSignal(id) if of_latest_runner(&b, id) => {
            let session = process_session(&b, id);
            let status = status(b.decided.expect("a signal follows a decision"));
            let completes = b.processes[usize::from(id) - 1].result == Outcome::Unset;
            out.push(process_record(
                ProcessEvent::TerminalSignal(status),
                session,
                if completes {
                    "completed"
                } else {
                    "already_completed"
                },
            ));
            out.push(runner_record(
                Event::TerminalSignalDelivered { session, status },
                if completes {
                    RunnerOutcome::ForwardScheduled
                } else {
                    RunnerOutcome::Ignored
                },
            ));
        }
        Action::CheckLeadershipInForward(id) => {
            let session = process_session(&b, id);
            // The forward caches exactly when the runner's cached result goes from unset
            // to set.
            let cached = b.pending_terminal.is_none() && a.pending_terminal.is_some();
            let outcome = match (cached, running) {
                (true, true) => RunnerOutcome::CachedCheckingLeadership,
                (false, true) => RunnerOutcome::CheckingLeadership,
                (true, false) => RunnerOutcome::Cached,
                (false, false) => RunnerOutcome::DroppedNotRunning,
            };
            out.push(runner_record(Event::ForwardCallback { session }, outcome));
            // A running runner asks whether the session is the issued one.
            if running {
                let held = b.issued == b.processes[usize::from(id) - 1].session;
                out.push(runner_record(
                    Event::LeadershipConfirmed { session, held },
                    if held {
                        RunnerOutcome::Forwarded
                    } else {
                        RunnerOutcome::DroppedNotLeader
                    },
                ));
            }
        }
        Action::TerminateService(id) => {
            let session = process_session(&b, id);
            // Without a result yet, the process completes it NotFinished as it ends.
            let completes = b.processes[usize::from(id) - 1].result == Outcome::Unset;
            out.push(process_record(
                ProcessEvent::ServiceTerminated,
                session,
                if completes {
                    "terminated_not_finished"
                } else {
                    "terminated"
                },
            ));
            out.push(runner_record(
                Event::ProcessServiceTerminated { session },
                if completes {
                    RunnerOutcome::ForwardScheduled
                } else {
                    RunnerOutcome::ProcessTerminated
                },
            ));
        }
        Action::DispatcherFailover => out.push(dispatcher_record(
            &DispatcherEvent::LeadershipLost,
            b.epoch,
            "applied",
        )),
        Action::HandleRunnerResult => out.push(dispatcher_record(
            &DispatcherEvent::RunnerCompleted {
                job: JOB,
                result: runner_result(b.runner_result).unwrap_or(RunnerResult::Suspended),
            },
            b.epoch,
            "applied",
        )),
        _ => {}
    }
    if !b.has_runner || a.epoch != b.epoch {
        return;
    }
    let close_requested =
        b.runner != model::RunnerState::Stopped && a.runner == model::RunnerState::Stopped;
    let terminated = !b.runner_terminated && a.runner_terminated;
    // Only a lost leadership and a handled result close the runner; a close that
    // completes at once reports the runner terminated to the dispatcher. A result the
    // runner completes waits on its way to the dispatcher (`HandleRunnerResult`).
    if close_requested {
        closes(&b, &a, out);
        out.push(runner_record(
            Event::CloseRequested,
            if terminated {
                RunnerOutcome::Terminated
            } else {
                RunnerOutcome::Stopping
            },
        ));
    }
    if terminated {
        out.push(dispatcher_record(
            &DispatcherEvent::RunnerTerminated { job: JOB },
            b.epoch,
            "applied",
        ));
    }
    // The dirty entry the dispatcher asked for while handling a terminal result is
    // written, and answered, within the same step.
    if *action == Action::HandleRunnerResult
        && b.job_result == model::JobResultEntry::Absent
        && a.job_result == model::JobResultEntry::Dirty
    {
        out.push(dispatcher_record(
            &DispatcherEvent::DirtyEntryWritten { job: JOB },
            b.epoch,
            "applied",
        ));
    }
}

impl Binding for LeadershipBinding {
    type Model = Leadership;
    type State = State;
    type Action = Action;
    type Runtime = Runtime;
    type Projection = Observation;

    fn start(_: &Leadership, init: &State) -> Runtime {
        let (mut rt, seen) = collect(Runtime::started);
        if rt.check_log {
            rt.log = disagreements(&start_log(init), &seen);
        }
        rt
    }

    fn model_view(model: &Leadership, state: &State) -> Observation {
        observe_model(&settle(model, state))
    }

    fn runtime_view(rt: &Runtime) -> Observation {
        observe_runtime(rt)
    }

    fn model_view_into(model: &Leadership, state: &State, out: &mut Observation) {
        observe_model_into(&settle(model, state), out);
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
                // The next leader waits for the old runner to terminate.
                if live {
                    probes.push(Action::RecoverJob);
                }
            }
            DispatcherState::Leading => probes.push(Action::RecoverJob),
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
            "GrantLeadership" => "Driver::elect (the election issues the session)",
            "RevokeLeadership" => "Driver::unelect (the election revokes the session)",
            "RunGrant" => "Event::LeadershipGranted to the runner, its store queries answered",
            "RunRevoke" => "Event::LeadershipRevoked to the runner, its store queries answered",
            "DecideTerminal" => "no event: the scheduler's decision is environment state",
            "DeliverTerminalSignal" => "Event::TerminalSignalDelivered to the runner's process",
            "CheckLeadershipInForward" => "Event::ForwardCallback, its leadership query answered",
            "TerminateService" => "Event::ProcessServiceTerminated, its queries answered",
            "DispatcherFailover" => "Driver::dispatcher_lose_leadership",
            "RecoverJob" => {
                "Driver::dispatcher_gain_leadership, then DispatcherEffect::RecoverJobs answered by DispatcherEvent::JobsRecovered"
            }
            "HandleRunnerResult" => {
                "DispatcherEvent::RunnerCompleted delivered, then DispatcherEffect::WriteDirtyEntry answered by DispatcherEvent::DirtyEntryWritten for a terminal result"
            }
            "RemoveJobGraph" => {
                "DispatcherEffect::RemoveJobGraph answered by DispatcherEvent::JobGraphRemoved"
            }
            "MarkResultClean" => {
                "DispatcherEffect::MarkEntryClean answered by DispatcherEvent::EntryMarkedClean"
            }
            "CloseRunner" => {
                "taken by the runtime within the step that enabled it; checked by its log record"
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
