//! The leadership state in the domain's words, for the Explorer below each step: the
//! election and the dispatcher (what several jobs share), then the job's runner, its
//! processes, its scheduler, its stores and the old runner still stopping. Unused
//! process slots and chain slots are left out.

use super::{
    ChainOp, Cleanup, DispatcherState, JobResultEntry, Leadership, ProcessState, RunnerState, State,
};

fn cleanup_words(c: Cleanup) -> &'static str {
    match c {
        Cleanup::Idle => "none",
        Cleanup::RemovingJobGraph => "removing the JobGraph",
        Cleanup::MarkingClean => "marking the entry clean",
    }
}

impl Leadership {
    /// The lines of the election and the dispatcher, which several jobs share.
    pub(super) fn shared_view(&self, s: &State) -> Vec<String> {
        let election = match s.issued {
            0 => "no session issued".to_string(),
            n => format!("session {n} issued"),
        };
        let dispatcher = match s.dispatcher {
            DispatcherState::Leading => "leading",
            DispatcherState::Stopping => "lost leadership, stopping",
            DispatcherState::Crashed => "its JobManager died",
        };
        vec![
            format!(
                "election: {election} ({} of {} sessions issued)",
                s.sessions, self.grants
            ),
            format!(
                "dispatcher: epoch {} of {}, {dispatcher}",
                s.epoch, self.epochs
            ),
        ]
    }

    /// The lines of the job's own parts.
    pub(super) fn job_view(&self, s: &State) -> Vec<String> {
        let mut lines = vec![runner_line(s)];
        lines.extend(process_lines(s));
        lines.push(scheduler_line(s));
        lines.push(stores_line(s));
        lines.extend(old_runner_line(s));
        lines.extend(history_line(s));
        lines
    }

    /// The whole state: shared lines, then the job's.
    pub(super) fn view(&self, s: &State) -> String {
        let mut lines = self.shared_view(s);
        lines.extend(self.job_view(s));
        lines.join("\n")
    }
}

/// The runner of this epoch: its state, result, chain and current process.
fn runner_line(s: &State) -> String {
    if !s.has_runner {
        return format!(
            "runner: none this epoch (the last was started in epoch {})",
            s.runner_epoch
        );
    }
    let state = match s.runner {
        RunnerState::Running => "running",
        RunnerState::JobCompleted => "job completed",
        RunnerState::Stopped if s.runner_killed => "died with its JobManager",
        RunnerState::Stopped if s.runner_terminated => "stopped, close completed",
        RunnerState::Stopped => "stopped, close under way",
    };
    let chain: Vec<String> = s.chain[..usize::from(s.chain_len)]
        .iter()
        .map(|op| match op {
            ChainOp::Grant(session) => format!("grant {session}"),
            ChainOp::Revoke => "revoke".to_string(),
            ChainOp::Empty => "-".to_string(),
        })
        .collect();
    let mut line = format!(
        "runner (epoch {}): {state}, result {}",
        s.runner_epoch,
        s.runner_result.word()
    );
    if s.result_handled {
        line.push_str(", handled by the dispatcher");
    }
    if !chain.is_empty() {
        line.push_str(&format!(", chain [{}]", chain.join(", ")));
    }
    if s.current != 0 {
        line.push_str(&format!(", current process {}", s.current));
    }
    if s.current_leader != 0 {
        line.push_str(&format!(" (leader session {})", s.current_leader));
    }
    if let Some(status) = s.pending_terminal {
        line.push_str(&format!(", cached {}", status.word()));
    }
    line
}

/// One line per process created so far.
fn process_lines(s: &State) -> impl Iterator<Item = String> + '_ {
    s.processes[..usize::from(s.process_count)]
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let state = match p.state {
                ProcessState::Running => "running",
                ProcessState::Closing => "closing",
                ProcessState::Terminated => "terminated",
                ProcessState::Killed => "killed",
            };
            let mut line = format!(
                "process {}: {state}, session {}, epoch {}, result {}",
                i + 1,
                p.session,
                p.epoch,
                p.result.word()
            );
            if p.forward_pending {
                line.push_str(", forward pending");
            }
            line
        })
}

/// The scheduler's decision and its signal in flight.
fn scheduler_line(s: &State) -> String {
    match s.decided {
        None => "scheduler: undecided".to_string(),
        Some(status) => {
            let mut line = format!(
                "scheduler: decided {} in process {}",
                status.word(),
                s.decider
            );
            if s.signal != 0 {
                line.push_str(&format!(", signal to process {} in flight", s.signal));
            }
            line
        }
    }
}

/// The JobGraph store, the JobResultStore and the cleanup under way.
fn stores_line(s: &State) -> String {
    let entry = match s.job_result {
        JobResultEntry::Absent => "no entry".to_string(),
        JobResultEntry::Dirty => format!("dirty entry (epoch {})", s.entry_epoch),
        JobResultEntry::Clean => format!("clean entry (epoch {})", s.entry_epoch),
    };
    format!(
        "stores: JobGraph {}, JobResultStore {entry}; cleanup {}",
        if s.job_graph { "stored" } else { "removed" },
        cleanup_words(s.cleanup)
    )
}

/// The old runner, while its dispatcher is still stopping.
fn old_runner_line(s: &State) -> Option<String> {
    let o = s.old?;
    let mut line = format!(
        "old runner (epoch {}, its dispatcher still stopping): result {}",
        s.epoch - 1,
        o.result.word()
    );
    if o.current != 0 {
        line.push_str(&format!(", current process {}", o.current));
    }
    if let Some(status) = o.pending_terminal {
        line.push_str(&format!(", cached {}", status.word()));
    }
    line.push_str(if o.terminated {
        ", close completed"
    } else {
        ", close under way"
    });
    if o.result_handled {
        line.push_str(", result handled");
    }
    line.push_str(&format!("; cleanup {}", cleanup_words(o.cleanup)));
    Some(line)
}

/// The ghost fields that record a loss, when any is set.
fn history_line(s: &State) -> Option<String> {
    let notes: Vec<&str> = [
        (s.lost_terminal, "a terminal value was lost"),
        (s.crash_lost, "a crash killed the decision"),
        (s.fatal_exit, "a JobMaster failure stopped the JobManager"),
    ]
    .into_iter()
    .filter_map(|(set, note)| set.then_some(note))
    .collect();
    (!notes.is_empty()).then(|| format!("history: {}", notes.join("; ")))
}

#[cfg(test)]
mod tests {
    use stateright::Model;

    use super::super::{Action, Design, Status};
    use super::*;
    use crate::Spec;

    #[test]
    fn the_view_says_what_each_part_holds_and_leaves_unused_slots_out() {
        let m = Leadership::new(Design::Fixed);
        let mut s = m.init_states()[0];
        for a in [
            Action::GrantLeadership(1),
            Action::RunGrant(1),
            Action::DecideTerminal(Status::Failed),
            Action::RevokeLeadership(1),
        ] {
            s = m.next_state(&s, a).unwrap();
        }
        assert_eq!(
            m.domain_view(&s),
            "election: no session issued (1 of 3 sessions issued)\n\
             dispatcher: epoch 1 of 3, leading\n\
             runner (epoch 1): running, result unset, chain [revoke], current process 1 \
             (leader session 1)\n\
             process 1: running, session 1, epoch 1, result unset\n\
             scheduler: decided FAILED in process 1, signal to process 1 in flight\n\
             stores: JobGraph stored, JobResultStore no entry; cleanup none"
        );
    }
}
