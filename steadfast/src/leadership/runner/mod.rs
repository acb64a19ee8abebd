//! The leadership runner: turns leader grants into JobMaster processes and forwards a
//! process's result into the runner's set-once result.
//!
//! Models Flink's `JobMasterServiceLeadershipRunner` with the fix for FLINK-39704
//! (apache/flink PR 28201, part 2). Grant, revoke and close work runs on a sequential
//! operation chain, one operation at a time; an operation that stops a process only
//! finishes once the process terminated *and* its result forwarding settled. On the
//! forwarding path a globally terminal value from the process of
//! `current_process_leader` is cached in `pending_terminal` before the leadership check,
//! so a revoke racing the forward cannot drop it. Revoke leaves `current_process_leader`
//! alone. The cache is flushed on runner close (after the process terminated; the
//! runner stays Stopped) and on the next grant, in place of creating a process and so
//! only once the grant's JobResultStore and leadership checks passed (the runner
//! becomes JobCompleted). Initialisation failures are never cached.
//!
//! The machine is sans-IO: the JobResultStore lookup and the leadership check are
//! effects ([`Effect::QueryJobResultStore`], [`Effect::ConfirmLeadership`]) whose answers
//! come back as events. The forward callback is its own event
//! ([`Event::ForwardCallback`]) because the delay between a process result completing
//! and the callback's leadership check is exactly the window of ordering A.

mod chain;
mod outcome;
#[cfg(test)]
mod tests;

pub use outcome::{Handled, RunnerOutcome};

use super::defect::Defects;
use super::error::LeadershipError;
use super::process::{Process, ProcessEffect, ProcessEvent};
#[cfg(any(test, feature = "testkit"))]
use super::projection::{ProcessProjection, RunnerProjection};
use super::types::{
    JobId, JobStatus, ProcessResult, ProcessState, RunnerResult, RunnerState, Session,
};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Input to a [`Runner`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Event {
    /// Leader election granted `session` to this runner (ordered channel).
    LeadershipGranted {
        /// The newly issued session.
        session: Session,
    },
    /// Leader election revoked the granted session (ordered channel).
    LeadershipRevoked,
    /// The JobMaster completed the result future of process `session` directly
    /// (for example an initialisation failure or a terminal status).
    ProcessResultCompleted {
        /// The process session.
        session: Session,
        /// The completion value; `NotFinished` is refused (the process sets it itself).
        value: ProcessResult,
    },
    /// The scheduler's `job_reached_globally_terminal_state(status)` reached process
    /// `session`.
    TerminalSignalDelivered {
        /// The process session.
        session: Session,
        /// The globally terminal status the scheduler decided.
        status: JobStatus,
    },
    /// The JobMaster service of process `session` finished terminating after close.
    ProcessServiceTerminated {
        /// The process session.
        session: Session,
    },
    /// The delayed forwarding callback of process `session` runs.
    ForwardCallback {
        /// The process session.
        session: Session,
    },
    /// The owner asked the runner to close.
    CloseRequested,
    /// Answer to [`Effect::QueryJobResultStore`].
    JobResultStoreAnswered {
        /// Whether the JobResultStore holds an entry for this job.
        has_entry: bool,
    },
    /// Answer to [`Effect::ConfirmLeadership`].
    LeadershipConfirmed {
        /// The session asked about.
        session: Session,
        /// Whether `session` is the issued leader session.
        held: bool,
    },
}

impl Event {
    /// Short name used in trace events.
    pub fn name(&self) -> &'static str {
        match self {
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

    /// The terminal status the event carries, if any.
    pub fn status(&self) -> Option<JobStatus> {
        match *self {
            Event::TerminalSignalDelivered { status, .. } => Some(status),
            _ => None,
        }
    }

    /// The session the event names, if any.
    pub fn session(&self) -> Option<Session> {
        match *self {
            Event::LeadershipGranted { session }
            | Event::ProcessResultCompleted { session, .. }
            | Event::TerminalSignalDelivered { session, .. }
            | Event::ProcessServiceTerminated { session }
            | Event::ForwardCallback { session }
            | Event::LeadershipConfirmed { session, .. } => Some(session),
            _ => None,
        }
    }
}

/// Output of a [`Runner`], for a driver to execute.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Effect {
    /// Create and start the JobMaster process for `session`.
    StartProcess {
        /// The process session.
        session: Session,
    },
    /// Close the process of `session`; its service terminates later
    /// ([`Event::ProcessServiceTerminated`]).
    CloseProcess {
        /// The process session.
        session: Session,
    },
    /// The result of process `session` completed; deliver [`Event::ForwardCallback`]
    /// for it later.
    ForwardScheduled {
        /// The process session.
        session: Session,
    },
    /// Ask whether the JobResultStore has an entry for this job; answer with
    /// [`Event::JobResultStoreAnswered`].
    QueryJobResultStore,
    /// Ask whether `session` is the issued leader session; answer with
    /// [`Event::LeadershipConfirmed`].
    ConfirmLeadership {
        /// The session to check.
        session: Session,
    },
    /// The runner result is set (exactly once per runner).
    CompleteResult {
        /// The runner result.
        value: RunnerResult,
    },
    /// The runner finished closing: its process terminated and its result is set.
    RunnerTerminated,
}

/// Work on the sequential operation chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ChainOp {
    Grant(Session),
    Revoke,
    Close,
}

/// The chain operation currently waiting for an answer or a process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum InFlight {
    AwaitStore(Session),
    AwaitLeadership {
        session: Session,
        has_entry: bool,
    },
    /// Waits until process `index` terminated and its forwarding settled.
    Stopping {
        index: usize,
        then_close: bool,
    },
}

/// Progress of one process's result forwarding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Forward {
    /// The process result has not completed.
    Waiting,
    /// The result completed; the callback has not run.
    Scheduled(ProcessResult),
    /// The callback asked for a leadership check.
    Confirming(ProcessResult),
    /// The callback finished (forwarded or dropped).
    Settled,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Slot {
    process: Process,
    forward: Forward,
}

impl Slot {
    fn settled(&self) -> bool {
        self.process.state() == ProcessState::Terminated && self.forward == Forward::Settled
    }
}

/// One job's leadership runner (fixed design of FLINK-39704).
///
/// ```
/// use steadfast::leadership::{Effect, Event, JobId, JobStatus, RunnerResult, RunnerState, Session};
/// let mut r = steadfast::leadership::Runner::new(JobId(1));
/// let s = Session(1);
/// assert_eq!(r.handle(Event::LeadershipGranted { session: s }).unwrap(), vec![Effect::QueryJobResultStore]);
/// assert_eq!(
///     r.handle(Event::JobResultStoreAnswered { has_entry: false }).unwrap(),
///     vec![Effect::ConfirmLeadership { session: s }]
/// );
/// assert_eq!(
///     r.handle(Event::LeadershipConfirmed { session: s, held: true }).unwrap(),
///     vec![Effect::StartProcess { session: s }]
/// );
/// r.handle(Event::TerminalSignalDelivered { session: s, status: JobStatus::Finished }).unwrap();
/// assert_eq!(
///     r.handle(Event::ForwardCallback { session: s }).unwrap(),
///     vec![Effect::ConfirmLeadership { session: s }]
/// );
/// let fx = r.handle(Event::LeadershipConfirmed { session: s, held: true }).unwrap();
/// assert_eq!(fx, vec![Effect::CompleteResult { value: RunnerResult::Terminal(JobStatus::Finished) }]);
/// assert_eq!(r.state(), RunnerState::JobCompleted);
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Runner {
    job: JobId,
    state: RunnerState,
    result: Option<RunnerResult>,
    pending_terminal: Option<JobStatus>,
    current_process_leader: Option<Session>,
    slots: Vec<Slot>,
    current: Option<usize>,
    granted: Option<Session>,
    last_granted: Option<Session>,
    chain: VecDeque<ChainOp>,
    in_flight: Option<InFlight>,
    terminated: bool,
    defects: Defects,
}

type Applied = Result<(Vec<Effect>, RunnerOutcome), LeadershipError>;

/// As derived, without the seed-bug switches unless one is on (see `Process`'s).
impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("Runner");
        d.field("job", &self.job)
            .field("state", &self.state)
            .field("result", &self.result)
            .field("pending_terminal", &self.pending_terminal)
            .field("current_process_leader", &self.current_process_leader)
            .field("slots", &self.slots)
            .field("current", &self.current)
            .field("granted", &self.granted)
            .field("last_granted", &self.last_granted)
            .field("chain", &self.chain)
            .field("in_flight", &self.in_flight)
            .field("terminated", &self.terminated);
        if self.defects != Defects::default() {
            d.field("defects", &self.defects);
        }
        d.finish()
    }
}

impl Runner {
    /// A running runner for `job` with no leadership yet.
    pub fn new(job: JobId) -> Self {
        Runner {
            job,
            state: RunnerState::Running,
            result: None,
            pending_terminal: None,
            current_process_leader: None,
            slots: Vec::new(),
            current: None,
            granted: None,
            last_granted: None,
            chain: VecDeque::new(),
            in_flight: None,
            terminated: false,
            defects: Defects::default(),
        }
    }

    /// A runner for `job` whose code carries the given seed bugs of FLINK-39704
    /// (feature `defects`, for the simulation's validation to catch them).
    #[cfg(feature = "defects")]
    pub fn with_defects(job: JobId, defects: &[super::defect::Defect]) -> Self {
        Runner::carrying(job, Defects::of(defects))
    }

    /// A runner for `job` carrying `defects` (none in production).
    #[cfg(any(feature = "defects", feature = "testkit", test))]
    pub(crate) fn carrying(job: JobId, defects: Defects) -> Self {
        Runner {
            defects,
            ..Runner::new(job)
        }
    }

    /// Whether the runner's operation chain is empty and nothing on it waits: a grant
    /// or revoke delivered now runs at once instead of waiting behind other work.
    pub fn is_idle(&self) -> bool {
        self.in_flight.is_none() && self.chain.is_empty()
    }

    /// The job this runner runs.
    pub fn job(&self) -> JobId {
        self.job
    }

    /// Lifecycle state.
    pub fn state(&self) -> RunnerState {
        self.state
    }

    /// The runner result, once set.
    pub fn result(&self) -> Option<RunnerResult> {
        self.result
    }

    /// A globally terminal status observed on the forwarding path and not yet flushed.
    pub fn pending_terminal(&self) -> Option<JobStatus> {
        self.pending_terminal
    }

    /// The session of the most recently created process (not cleared by revoke).
    pub fn current_process_leader(&self) -> Option<Session> {
        self.current_process_leader
    }

    /// Whether the runner finished closing ([`Effect::RunnerTerminated`] was emitted).
    pub fn is_terminated(&self) -> bool {
        self.terminated
    }

    /// Processes in creation order.
    pub fn processes(&self) -> impl Iterator<Item = &Process> {
        self.slots.iter().map(|slot| &slot.process)
    }

    /// Sessions whose forward callback is scheduled but has not run.
    pub fn pending_forwards(&self) -> Vec<Session> {
        self.slots
            .iter()
            .filter(|slot| matches!(slot.forward, Forward::Scheduled(_)))
            .map(|slot| slot.process.session())
            .collect()
    }

    /// Whether the forward callback of the process of `session` is scheduled and has
    /// not run: membership in [`Runner::pending_forwards`], without collecting them.
    pub fn forward_scheduled(&self, session: Session) -> bool {
        self.slots.iter().any(|slot| {
            matches!(slot.forward, Forward::Scheduled(_)) && slot.process.session() == session
        })
    }

    /// The observable projection of this runner (test support, feature `testkit`).
    #[cfg(any(test, feature = "testkit"))]
    pub fn projection(&self) -> RunnerProjection {
        RunnerProjection {
            state: self.state,
            result: self.result,
            pending_terminal: self.pending_terminal,
            current_process_leader: self.current_process_leader,
            processes: self
                .slots
                .iter()
                .map(|s| ProcessProjection::of(&s.process))
                .collect(),
        }
    }

    /// Apply one event and return the effects to execute. On error the runner is
    /// unchanged.
    pub fn handle(&mut self, event: Event) -> Result<Vec<Effect>, LeadershipError> {
        self.step(event).map(|handled| handled.effects)
    }

    /// [`Runner::handle`], returning as well what the runner did.
    pub fn step(&mut self, event: Event) -> Result<Handled, LeadershipError> {
        let outcome = self.apply(event);
        let session = event.session().map(|s| s.0);
        let status = event.status().map(JobStatus::name);
        match &outcome {
            Ok((effects, what)) => tracing::debug!(
                component = "runner",
                job = self.job.0,
                event = event.name(),
                session,
                status,
                outcome = what.name(),
                state = ?self.state,
                result = ?self.result,
                pending_terminal = ?self.pending_terminal,
                effects = ?effects,
            ),
            Err(error) => tracing::debug!(
                component = "runner",
                job = self.job.0,
                event = event.name(),
                session,
                status,
                outcome = "rejected",
                error = %error,
            ),
        }
        outcome.map(|(effects, outcome)| Handled { effects, outcome })
    }

    fn apply(&mut self, event: Event) -> Applied {
        match event {
            Event::LeadershipGranted { session } => self.on_grant(session),
            Event::LeadershipRevoked => self.on_revoke(),
            Event::CloseRequested => self.on_close(),
            Event::ProcessResultCompleted { session, value } => {
                self.on_process(session, ProcessEvent::Completed(value))
            }
            Event::TerminalSignalDelivered { session, status } => {
                self.on_process(session, ProcessEvent::TerminalSignal(status))
            }
            Event::ProcessServiceTerminated { session } => {
                self.on_process(session, ProcessEvent::ServiceTerminated)
            }
            Event::ForwardCallback { session } => self.on_forward(session),
            Event::JobResultStoreAnswered { has_entry } => self.on_store_answer(has_entry),
            Event::LeadershipConfirmed { session, held } => self.on_confirmed(session, held),
        }
    }

    fn on_grant(&mut self, session: Session) -> Applied {
        if self.terminated {
            return Err(LeadershipError::RunnerTerminated {
                event: "leadership_granted",
            });
        }
        if let Some(held) = self.granted {
            return Err(LeadershipError::GrantWithoutRevoke {
                held,
                granted: session,
            });
        }
        if let Some(previous) = self.last_granted {
            if session <= previous {
                return Err(LeadershipError::StaleSession {
                    previous,
                    granted: session,
                });
            }
        }
        self.granted = Some(session);
        self.last_granted = Some(session);
        self.chain.push_back(ChainOp::Grant(session));
        let mut effects = Vec::new();
        self.advance(&mut effects);
        Ok((effects, RunnerOutcome::Queued))
    }

    fn on_revoke(&mut self) -> Applied {
        if self.terminated {
            return Err(LeadershipError::RunnerTerminated {
                event: "leadership_revoked",
            });
        }
        if self.granted.is_none() {
            return Err(LeadershipError::RevokeWithoutGrant);
        }
        self.granted = None;
        self.chain.push_back(ChainOp::Revoke);
        let mut effects = Vec::new();
        self.advance(&mut effects);
        Ok((effects, RunnerOutcome::Queued))
    }

    fn on_close(&mut self) -> Applied {
        if self.state == RunnerState::Stopped {
            return Err(LeadershipError::AlreadyClosed);
        }
        // Stopped at once so queued grant/revoke work is skipped; the result is decided
        // by the close operation after the process terminated (fix part 2).
        self.state = RunnerState::Stopped;
        self.chain.push_back(ChainOp::Close);
        let mut effects = Vec::new();
        self.advance(&mut effects);
        let outcome = if self.terminated {
            RunnerOutcome::Terminated
        } else {
            RunnerOutcome::Stopping
        };
        Ok((effects, outcome))
    }

    fn slot_index(&self, session: Session) -> Result<usize, LeadershipError> {
        self.slots
            .iter()
            .position(|slot| slot.process.session() == session)
            .ok_or(LeadershipError::UnknownProcess { session })
    }

    fn on_process(&mut self, session: Session, event: ProcessEvent) -> Applied {
        let index = self.slot_index(session)?;
        let process_effects = self.slots[index].process.handle(event)?;
        let mut effects = Vec::new();
        let mut outcome = RunnerOutcome::Ignored;
        for effect in process_effects {
            match effect {
                ProcessEffect::ResultCompleted(value) => {
                    self.slots[index].forward = Forward::Scheduled(value);
                    effects.push(Effect::ForwardScheduled { session });
                    outcome = RunnerOutcome::ForwardScheduled;
                }
                ProcessEffect::Terminated if outcome == RunnerOutcome::Ignored => {
                    outcome = RunnerOutcome::ProcessTerminated;
                }
                // A terminated process's completion names the outcome; close is only
                // requested by the runner itself, never by these events.
                ProcessEffect::Terminated | ProcessEffect::CloseService => {}
            }
        }
        self.advance(&mut effects);
        Ok((effects, outcome))
    }

    fn on_forward(&mut self, session: Session) -> Applied {
        let index = self.slot_index(session)?;
        let Forward::Scheduled(value) = self.slots[index].forward else {
            return Err(LeadershipError::NoForwardPending { session });
        };
        let mut outcome = RunnerOutcome::DroppedNotRunning;
        // Fix part 2: remember a terminal value of the current process before the
        // leadership check, whatever the runner state.
        if let Some(status) = value.terminal_status() {
            if self.result.is_none()
                && self.pending_terminal.is_none()
                && self.current_process_leader == Some(session)
            {
                self.pending_terminal = Some(status);
                outcome = RunnerOutcome::Cached;
            }
        }
        let mut effects = Vec::new();
        if self.state == RunnerState::Running {
            self.slots[index].forward = Forward::Confirming(value);
            effects.push(Effect::ConfirmLeadership { session });
            if outcome != RunnerOutcome::Cached {
                outcome = RunnerOutcome::CheckingLeadership;
            } else {
                outcome = RunnerOutcome::CachedCheckingLeadership;
            }
        } else {
            self.slots[index].forward = Forward::Settled;
            self.advance(&mut effects);
        }
        Ok((effects, outcome))
    }

    fn on_store_answer(&mut self, has_entry: bool) -> Applied {
        let Some(InFlight::AwaitStore(session)) = self.in_flight else {
            return Err(LeadershipError::UnexpectedStoreAnswer);
        };
        let mut effects = Vec::new();
        if self.state == RunnerState::Running {
            self.in_flight = Some(InFlight::AwaitLeadership { session, has_entry });
            effects.push(Effect::ConfirmLeadership { session });
            Ok((effects, RunnerOutcome::CheckingLeadership))
        } else {
            self.in_flight = None;
            self.advance(&mut effects);
            Ok((effects, RunnerOutcome::GrantSkippedNotRunning))
        }
    }

    fn on_confirmed(&mut self, session: Session, held: bool) -> Applied {
        let mut effects = Vec::new();
        if let Some(InFlight::AwaitLeadership {
            session: asked,
            has_entry,
        }) = self.in_flight
        {
            if asked == session {
                self.in_flight = None;
                let outcome = if !held || self.state != RunnerState::Running {
                    RunnerOutcome::GrantSkippedNotLeader
                } else if has_entry {
                    self.set_result(RunnerResult::JobAlreadyDone, &mut effects);
                    RunnerOutcome::JobAlreadyDone
                } else if let Some(status) = self.pending_terminal {
                    // Never a new process while a terminal result is cached.
                    self.set_result(RunnerResult::Terminal(status), &mut effects);
                    RunnerOutcome::FlushedOnGrant
                } else {
                    self.start_process(session, &mut effects);
                    RunnerOutcome::ProcessStarted
                };
                self.advance(&mut effects);
                return Ok((effects, outcome));
            }
        }
        let index = self
            .slot_index(session)
            .map_err(|_| LeadershipError::UnexpectedConfirmation { session })?;
        let Forward::Confirming(value) = self.slots[index].forward else {
            return Err(LeadershipError::UnexpectedConfirmation { session });
        };
        self.slots[index].forward = Forward::Settled;
        let outcome = if held && self.state == RunnerState::Running {
            self.set_result(value.into(), &mut effects);
            RunnerOutcome::Forwarded
        } else {
            RunnerOutcome::DroppedNotLeader
        };
        self.advance(&mut effects);
        Ok((effects, outcome))
    }
}
