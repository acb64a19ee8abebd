//! The JobMaster service process: one per leadership grant, with a set-once result.
//!
//! Models Flink's `DefaultJobMasterServiceProcess` in its fixed form (FLINK-39704,
//! apache/flink PR 28201, part 1). Closing no longer completes the result eagerly with
//! `JobNotFinishedException`: `NotFinished` is declared only once the JobMaster service
//! has terminated, and only if nothing completed the result first. A terminal signal
//! from the scheduler that is still in flight when close starts therefore wins.

use super::defect::Defects;
use super::error::LeadershipError;
use super::types::{JobStatus, ProcessResult, ProcessState, Session};
use serde::{Deserialize, Serialize};

/// Input to a [`Process`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProcessEvent {
    /// The scheduler's `job_reached_globally_terminal_state(status)` reached the process.
    TerminalSignal(JobStatus),
    /// The JobMaster completed the result future directly (e.g. initialisation failed).
    Completed(ProcessResult),
    /// The runner asked the process to close.
    Close,
    /// The JobMaster service finished terminating after close.
    ServiceTerminated,
}

/// Output of a [`Process`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProcessEffect {
    /// The result future completed with this value (exactly once per process).
    ResultCompleted(ProcessResult),
    /// Start terminating the JobMaster service.
    CloseService,
    /// The process is terminated.
    Terminated,
}

/// A JobMaster service process.
///
/// ```
/// use steadfast::leadership::{
///     JobStatus, Process, ProcessEffect, ProcessEvent, ProcessResult, ProcessState, Session,
/// };
/// let mut p = Process::new(Session(1));
/// assert_eq!(p.handle(ProcessEvent::Close).unwrap(), vec![ProcessEffect::CloseService]);
/// // The signal arrives while the service drains: it wins over NotFinished.
/// let fx = p.handle(ProcessEvent::TerminalSignal(JobStatus::Failed)).unwrap();
/// assert_eq!(fx, vec![ProcessEffect::ResultCompleted(ProcessResult::Terminal(JobStatus::Failed))]);
/// assert_eq!(p.handle(ProcessEvent::ServiceTerminated).unwrap(), vec![ProcessEffect::Terminated]);
/// assert_eq!(p.state(), ProcessState::Terminated);
/// assert_eq!(p.result(), Some(ProcessResult::Terminal(JobStatus::Failed)));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Process {
    session: Session,
    state: ProcessState,
    result: Option<ProcessResult>,
    defects: Defects,
}

/// As derived, without the seed-bug switches unless one is on: reports and conformance
/// diffs show machines as the fixed design has them.
impl std::fmt::Debug for Process {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("Process");
        d.field("session", &self.session)
            .field("state", &self.state)
            .field("result", &self.result);
        if self.defects != Defects::default() {
            d.field("defects", &self.defects);
        }
        d.finish()
    }
}

impl Process {
    /// A running process created for leader session `session`.
    pub fn new(session: Session) -> Self {
        Process::with(session, Defects::default())
    }

    pub(crate) fn with(session: Session, defects: Defects) -> Self {
        Process {
            session,
            state: ProcessState::Running,
            result: None,
            defects,
        }
    }

    /// The leader session this process was created for.
    pub fn session(&self) -> Session {
        self.session
    }

    /// Current lifecycle state.
    pub fn state(&self) -> ProcessState {
        self.state
    }

    /// The result, once completed.
    pub fn result(&self) -> Option<ProcessResult> {
        self.result
    }

    /// Apply one event. On error the process is unchanged.
    pub fn handle(&mut self, event: ProcessEvent) -> Result<Vec<ProcessEffect>, LeadershipError> {
        let outcome = self.apply(event);
        let status = match event {
            ProcessEvent::TerminalSignal(status) => Some(status.name()),
            _ => None,
        };
        match &outcome {
            Ok((_, what)) => tracing::debug!(
                component = "process",
                event = event_name(event),
                session = self.session.0,
                status,
                outcome = *what,
                state = ?self.state,
                result = ?self.result,
            ),
            Err(error) => tracing::debug!(
                component = "process",
                event = event_name(event),
                session = self.session.0,
                status,
                outcome = "rejected",
                error = %error,
            ),
        }
        outcome.map(|(effects, _)| effects)
    }

    fn apply(
        &mut self,
        event: ProcessEvent,
    ) -> Result<(Vec<ProcessEffect>, &'static str), LeadershipError> {
        let session = self.session;
        match event {
            ProcessEvent::TerminalSignal(status) => {
                Ok(self.complete(ProcessResult::Terminal(status)))
            }
            ProcessEvent::Completed(ProcessResult::NotFinished) => {
                Err(LeadershipError::NotFinishedIsInternal { session })
            }
            ProcessEvent::Completed(value) => Ok(self.complete(value)),
            ProcessEvent::Close => match self.state {
                ProcessState::Running => {
                    self.state = ProcessState::Closing;
                    if self.defects.eager_not_finished && self.result.is_none() {
                        // The seed bug: NotFinished before the service drained.
                        self.result = Some(ProcessResult::NotFinished);
                        let done = ProcessEffect::ResultCompleted(ProcessResult::NotFinished);
                        return Ok((vec![ProcessEffect::CloseService, done], "closing"));
                    }
                    // Fix part 1: the result is left open while the service drains.
                    Ok((vec![ProcessEffect::CloseService], "closing"))
                }
                _ => Err(LeadershipError::ProcessAlreadyClosing { session }),
            },
            ProcessEvent::ServiceTerminated => match self.state {
                ProcessState::Running => {
                    Err(LeadershipError::ServiceTerminatedWhileRunning { session })
                }
                ProcessState::Terminated => Err(LeadershipError::AlreadyTerminated { session }),
                ProcessState::Closing => {
                    self.state = ProcessState::Terminated;
                    if self.result.is_none() {
                        self.result = Some(ProcessResult::NotFinished);
                        Ok((
                            vec![
                                ProcessEffect::ResultCompleted(ProcessResult::NotFinished),
                                ProcessEffect::Terminated,
                            ],
                            "terminated_not_finished",
                        ))
                    } else {
                        Ok((vec![ProcessEffect::Terminated], "terminated"))
                    }
                }
            },
        }
    }

    /// Set-once completion; later attempts are no-ops, as for a completed future.
    fn complete(&mut self, value: ProcessResult) -> (Vec<ProcessEffect>, &'static str) {
        if self.result.is_some() {
            return (Vec::new(), "already_completed");
        }
        self.result = Some(value);
        (vec![ProcessEffect::ResultCompleted(value)], "completed")
    }
}

fn event_name(event: ProcessEvent) -> &'static str {
    match event {
        ProcessEvent::TerminalSignal(_) => "terminal_signal",
        ProcessEvent::Completed(_) => "completed",
        ProcessEvent::Close => "close",
        ProcessEvent::ServiceTerminated => "service_terminated",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_does_not_complete_the_result_eagerly() {
        let mut p = Process::new(Session(1));
        assert_eq!(
            p.handle(ProcessEvent::Close).unwrap(),
            vec![ProcessEffect::CloseService]
        );
        assert_eq!(p.result(), None);
        assert_eq!(
            p.handle(ProcessEvent::ServiceTerminated).unwrap(),
            vec![
                ProcessEffect::ResultCompleted(ProcessResult::NotFinished),
                ProcessEffect::Terminated
            ]
        );
        assert_eq!(p.result(), Some(ProcessResult::NotFinished));
    }

    #[test]
    fn signal_after_termination_is_lost_residual_window() {
        let mut p = Process::new(Session(1));
        p.handle(ProcessEvent::Close).unwrap();
        p.handle(ProcessEvent::ServiceTerminated).unwrap();
        assert_eq!(
            p.handle(ProcessEvent::TerminalSignal(JobStatus::Finished))
                .unwrap(),
            vec![]
        );
        assert_eq!(p.result(), Some(ProcessResult::NotFinished));
    }

    #[test]
    fn refusals_leave_the_process_unchanged() {
        let mut p = Process::new(Session(4));
        let before = p.clone();
        assert_eq!(
            p.handle(ProcessEvent::ServiceTerminated),
            Err(LeadershipError::ServiceTerminatedWhileRunning {
                session: Session(4)
            })
        );
        assert_eq!(
            p.handle(ProcessEvent::Completed(ProcessResult::NotFinished)),
            Err(LeadershipError::NotFinishedIsInternal {
                session: Session(4)
            })
        );
        assert_eq!(p, before);
        p.handle(ProcessEvent::Close).unwrap();
        let closing = p.clone();
        assert_eq!(
            p.handle(ProcessEvent::Close),
            Err(LeadershipError::ProcessAlreadyClosing {
                session: Session(4)
            })
        );
        assert_eq!(p, closing);
        p.handle(ProcessEvent::ServiceTerminated).unwrap();
        let done = p.clone();
        assert_eq!(
            p.handle(ProcessEvent::ServiceTerminated),
            Err(LeadershipError::AlreadyTerminated {
                session: Session(4)
            })
        );
        assert_eq!(p, done);
    }
}
