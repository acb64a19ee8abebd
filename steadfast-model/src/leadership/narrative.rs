//! The leadership model in the domain's words: a phrase per action, a sentence per
//! step, and the named shapes (orderings A and B) of counterexamples.

use stateright::Model;

use super::{
    Action, DispatcherState, Leadership, OldRunner, Outcome, ProcessState, RunnerState, State,
    Status,
};

impl Action {
    /// A short phrase for the action in the domain's words, for lists of enabled actions
    /// (the Explorer's); [`Spec::describe_step`](crate::Spec::describe_step) says what a step does in its state.
    pub fn phrase(&self) -> String {
        match *self {
            Action::GrantLeadership(s) => format!("election grants session {s}"),
            Action::RevokeLeadership(s) => format!("election revokes session {s}"),
            Action::RunGrant(s) => format!("runner runs the grant of session {s}"),
            Action::RunRevoke => "runner runs the revoke".to_string(),
            Action::DecideTerminal(status) => format!("scheduler decides {}", status.word()),
            Action::DeliverTerminalSignal(p) => {
                format!("terminal signal reaches process {p}")
            }
            Action::CheckLeadershipInForward(p) => {
                format!("forward callback of process {p} checks leadership")
            }
            Action::TerminateService(p) => format!("JobMaster service of process {p} terminates"),
            Action::DispatcherFailover => "dispatcher loses leadership".to_string(),
            Action::CloseRunner => "runner's close completes".to_string(),
            Action::HandleRunnerResult => "dispatcher handles the runner result".to_string(),
            Action::RemoveJobGraph => "dispatcher removes the JobGraph".to_string(),
            Action::MarkResultClean => "dispatcher marks the result entry clean".to_string(),
            Action::RecoverJob => "next dispatcher leader starts and recovers".to_string(),
            Action::CrashJobManager => "JobManager process crashes".to_string(),
            Action::FailInitialization => "JobMaster fails to initialise".to_string(),
            Action::FailJobMaster => "JobMaster fails".to_string(),
            Action::CloseOldRunner => "old runner's close completes".to_string(),
            Action::OldRemoveJobGraph => "old dispatcher removes the JobGraph".to_string(),
            Action::OldMarkResultClean => "old dispatcher marks the result entry clean".to_string(),
            Action::OldDispatcherHandlesResult => {
                "old dispatcher handles its runner's result".to_string()
            }
        }
    }
}

pub(super) fn process_words(id: u8) -> String {
    format!("process {id}")
}

impl Leadership {
    /// What a step does in its state, in the domain's words: one sentence function per
    /// action kind, each given the state before and after the step.
    pub(super) fn step_sentence(&self, before: &State, action: &Action) -> String {
        let after = self
            .next_state(before, *action)
            .expect("next_state always returns a state");
        let (b, a) = (before, &after);
        match *action {
            Action::GrantLeadership(session) => format!(
                "the election grants session {session} (dispatcher epoch {})",
                b.epoch
            ),
            Action::RevokeLeadership(session) => {
                format!("the election revokes session {session}")
            }
            Action::RunGrant(session) => self.run_grant_sentence(b, a, session),
            Action::RunRevoke => Self::run_revoke_sentence(b, a),
            Action::DecideTerminal(status) => format!(
                "the scheduler of {} decides {}; its signal is in flight",
                process_words(b.current),
                status.word()
            ),
            Action::DeliverTerminalSignal(id) => Self::signal_sentence(b, id),
            Action::CheckLeadershipInForward(id) => Self::forward_sentence(b, a, id),
            Action::TerminateService(id) => Self::terminate_sentence(b, a, id),
            Action::DispatcherFailover => Self::failover_sentence(b, a),
            Action::CloseRunner => Self::close_runner_sentence(b, a),
            Action::HandleRunnerResult => Self::handle_result_sentence(b, a),
            Action::RemoveJobGraph => "the dispatcher removes the JobGraph".to_string(),
            Action::MarkResultClean => {
                "the dispatcher marks the JobResultStore entry clean".to_string()
            }
            Action::OldRemoveJobGraph => {
                "the old dispatcher, still stopping, removes the JobGraph".to_string()
            }
            Action::OldMarkResultClean => {
                "the old dispatcher marks the JobResultStore entry clean".to_string()
            }
            Action::FailInitialization => format!(
                "the JobMaster of {} fails to initialise: its result completes with the failure",
                process_words(b.current)
            ),
            Action::FailJobMaster => format!(
                "the JobMaster of {} fails: its result completes exceptionally",
                process_words(b.current)
            ),
            Action::CloseOldRunner => Self::close_old_runner_sentence(b, a),
            Action::OldDispatcherHandlesResult => self.old_handles_result_sentence(b, a),
            Action::CrashJobManager => Self::crash_sentence(b, a),
            Action::RecoverJob => Self::recover_sentence(b, a),
        }
    }

    /// [`Action::RunGrant`]: a new process (a reanimation once the job decided), a
    /// flushed or "already done" result, or nothing.
    fn run_grant_sentence(&self, before: &State, after: &State, session: u8) -> String {
        let head = format!("the runner's chain runs the grant of session {session}");
        if after.process_count > before.process_count {
            let reanimation = if before.decided.is_some() {
                " although the job already reached a terminal state"
            } else {
                ""
            };
            format!(
                "{head}: it creates {}{reanimation}",
                process_words(after.process_count)
            )
        } else if after.runner_result != before.runner_result {
            match before.pending_terminal {
                Some(status) if self.design.runner_fix() => format!(
                    "{head}: it flushes the cached {} result, no new process",
                    status.word()
                ),
                _ => format!("{head}: the JobResultStore has an entry, job already done"),
            }
        } else if before.runner != RunnerState::Running {
            format!("{head}: the runner no longer runs, nothing happens")
        } else {
            format!("{head}: session {session} is no longer issued, nothing happens")
        }
    }

    /// [`Action::RunRevoke`]: the close of a running process, eager NotFinished or not.
    fn run_revoke_sentence(before: &State, after: &State) -> String {
        let head = "the runner's chain runs the revoke";
        match Self::current_process(before) {
            Some(p)
                if before.runner == RunnerState::Running && p.state == ProcessState::Running =>
            {
                let eager = if Self::process(after, before.current).result != p.result {
                    ", its result becomes NotFinished at once"
                } else {
                    ""
                };
                format!("{head}: it closes {}{eager}", process_words(before.current))
            }
            _ => format!("{head}: no running process, nothing to close"),
        }
    }

    /// [`Action::DeliverTerminalSignal`]: when the signal arrives and whether it sets
    /// the result.
    fn signal_sentence(before: &State, id: u8) -> String {
        let p = Self::process(before, id);
        let status = p.decision.map(Status::word).unwrap_or("terminal");
        let when = match p.state {
            ProcessState::Running => "",
            ProcessState::Closing => " while it closes",
            ProcessState::Terminated => " after its service terminated",
            ProcessState::Killed => " after its JobManager died",
        };
        if p.result == Outcome::Unset {
            format!(
                "the scheduler's {status} signal reaches {}{when}: its result becomes {status}",
                process_words(id)
            )
        } else {
            format!(
                "the scheduler's {status} signal reaches {}{when}: no effect, its result is already {}",
                process_words(id),
                p.result.word()
            )
        }
    }

    /// [`Action::CheckLeadershipInForward`]: the result completes the runner, is
    /// cached, or is dropped.
    fn forward_sentence(before: &State, after: &State, id: u8) -> String {
        let p = Self::process(before, id);
        let head = format!(
            "the runner forwards the {} result of {} (session {})",
            p.result.word(),
            process_words(id),
            p.session
        );
        if after.runner_result != before.runner_result {
            format!(
                "{head}: session valid, the runner completes with {}",
                after.runner_result.word()
            )
        } else if after.pending_terminal != before.pending_terminal {
            format!(
                "{head}: the leadership check fails, the result is cached as the current process leader's"
            )
        } else {
            format!("{head}: the leadership check fails, the result is dropped")
        }
    }

    /// [`Action::TerminateService`]: with the process fix, the deferred NotFinished.
    fn terminate_sentence(before: &State, after: &State, id: u8) -> String {
        let p = Self::process(after, id);
        if Self::process(before, id).result != p.result {
            format!(
                "the JobMaster service of {} terminates; its result becomes NotFinished",
                process_words(id)
            )
        } else {
            format!("the JobMaster service of {} terminates", process_words(id))
        }
    }

    /// [`Action::DispatcherFailover`]: the runner's close, with an eager SUSPENDED.
    fn failover_sentence(before: &State, after: &State) -> String {
        let mut words = format!(
            "the dispatcher of epoch {} loses leadership and closes the runner",
            before.epoch
        );
        if after.runner_result != before.runner_result {
            words.push_str(&format!(
                "; the runner completes {} at once",
                after.runner_result.word()
            ));
        }
        words
    }

    /// [`Action::CloseRunner`]: the result the fixed runner completes with at close.
    fn close_runner_sentence(before: &State, after: &State) -> String {
        if after.runner_result != before.runner_result {
            let how = if before.pending_terminal.is_some() {
                "flushes the cached"
            } else {
                "completes with"
            };
            format!(
                "the runner's close completes and {how} {}",
                after.runner_result.word()
            )
        } else {
            "the runner's close completes".to_string()
        }
    }

    /// [`Action::HandleRunnerResult`]: what the dispatcher makes of the runner's result.
    fn handle_result_sentence(before: &State, after: &State) -> String {
        match before.runner_result {
            Outcome::Terminal(status) => format!(
                "the dispatcher sees {} and writes a dirty JobResultStore entry",
                status.word()
            ),
            Outcome::Suspended => {
                "the dispatcher sees SUSPENDED: local cleanup only, the JobGraph stays".to_string()
            }
            Outcome::InitFailed if after.dispatcher != DispatcherState::Crashed => {
                "the dispatcher sees a submitted job's initialisation failure: FAILED, a dirty JobResultStore entry"
                    .to_string()
            }
            Outcome::InitFailed | Outcome::JobMasterFailed => format!(
                "the dispatcher sees a {}: a fatal error, the JobManager process of epoch {} exits",
                before.runner_result.word(),
                before.epoch
            ),
            other => format!("the dispatcher sees {}", other.word()),
        }
    }

    /// [`Action::CloseOldRunner`]: the result the old runner completes with, if any.
    fn close_old_runner_sentence(before: &State, after: &State) -> String {
        let (b, a) = (before.old, after.old);
        let result = |o: Option<OldRunner>| o.map(|o| o.result);
        match a.or(b).map(|o| o.result) {
            Some(r) if result(b) != Some(r) => {
                format!("the old runner's close completes with {}", r.word())
            }
            _ => "the old runner's close completes".to_string(),
        }
    }

    /// [`Action::OldDispatcherHandlesResult`]: whether the stores take the old
    /// dispatcher's write or cleanup.
    fn old_handles_result_sentence(&self, before: &State, after: &State) -> String {
        let result = before.old.map_or(Outcome::Unset, |o| o.result);
        match result {
            Outcome::Terminal(status) if after.job_result != before.job_result => format!(
                "the old dispatcher, no longer leader, sees {} and writes a dirty JobResultStore entry",
                status.word()
            ),
            Outcome::Terminal(status) if self.fenced_result_store => format!(
                "the old dispatcher sees {}; the JobResultStore refuses its write (fenced)",
                status.word()
            ),
            Outcome::Terminal(status) => format!(
                "the old dispatcher sees {}; the JobResultStore already holds an entry and refuses its write",
                status.word()
            ),
            Outcome::AlreadyDone if self.fenced_result_store => {
                "the old dispatcher sees the job already done; the stores refuse its cleanup (fenced)".to_string()
            }
            other => format!("the old dispatcher sees {}", other.word()),
        }
    }

    /// [`Action::CrashJobManager`]: what vanishes, and a decision that dies unrecorded.
    fn crash_sentence(before: &State, after: &State) -> String {
        let mut words = format!(
            "the JobManager process of epoch {} crashes: its dispatcher, runner and processes vanish without a result",
            before.epoch
        );
        if after.crash_lost {
            words.push_str(&format!(
                "; the decided {} dies with it, unrecorded",
                before.decided.map_or("status", Status::word)
            ));
        }
        words
    }

    /// [`Action::RecoverJob`]: a recovery into a new runner, beside a stopping old
    /// dispatcher or not, or nothing to recover.
    fn recover_sentence(before: &State, after: &State) -> String {
        let overlap = if after.old.is_some() && before.old.is_none() {
            ", while the old dispatcher is still stopping"
        } else {
            ""
        };
        if after.has_runner {
            format!(
                "the dispatcher of epoch {} recovers the JobGraph into a new runner{overlap}",
                after.epoch
            )
        } else {
            format!(
                "the dispatcher of epoch {} starts and finds nothing to recover",
                after.epoch
            )
        }
    }

    pub(super) fn shape(&self, path: &[(State, Option<Action>)]) -> Option<String> {
        // A crash that killed an unrecorded decision explains every loss after it.
        let crash = path.iter().any(|(before, action)| {
            *action == Some(Action::CrashJobManager)
                && !before.crash_lost
                && self
                    .next_state(before, Action::CrashJobManager)
                    .is_some_and(|a| a.crash_lost)
        });
        if crash {
            return Some("JobManager crash before the result was recorded".to_string());
        }
        let overlap = path.iter().any(|(before, action)| {
            *action == Some(Action::RecoverJob)
                && self
                    .next_state(before, Action::RecoverJob)
                    .is_some_and(|a| a.old.is_some() && before.old.is_none())
        });
        if overlap {
            return Some("dispatcher leaders overlap".to_string());
        }
        // A signal still in flight when its process's service terminates is the residual
        // window of the fix (only with `late-signal`).
        let late = path.iter().any(|(before, action)| {
            before.signal != 0 && *action == Some(Action::TerminateService(before.signal))
        });
        if late {
            return Some("late signal after service termination".to_string());
        }
        // Otherwise the shape is fixed by what happens first to the decided signal: a
        // runner close or a revoke's close while it is in flight, or its delivery to a
        // running process (then: was its session still issued?).
        for (before, action) in path {
            let Some(action) = action else { continue };
            if before.signal == 0 {
                continue;
            }
            let target = Self::process(before, before.signal);
            match action {
                Action::DispatcherFailover
                    if before.has_runner && before.runner != RunnerState::Stopped =>
                {
                    return Some("runner close with signal in flight".to_string());
                }
                Action::RunRevoke
                    if before.current == before.signal && target.state == ProcessState::Running =>
                {
                    return Some("ordering B".to_string());
                }
                Action::DeliverTerminalSignal(_) if target.state == ProcessState::Running => {
                    return Some(if before.issued == target.session {
                        "ordering A1".to_string()
                    } else {
                        "ordering A2".to_string()
                    });
                }
                _ => {}
            }
        }
        None
    }
}
