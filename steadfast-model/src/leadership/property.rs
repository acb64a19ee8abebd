//! The leadership model's properties: their names, as `properties()` returns them,
//! and their predicates.

use stateright::Property;

use super::{
    Action, ChainOp, DispatcherState, JobResultEntry, Leadership, Outcome, ProcessState,
    RunnerState, State,
};

/// No new process once a scheduler decided a globally terminal status.
pub const NO_REANIMATION: &str = "no reanimation";
/// A runner result set after a decision is the decided status.
pub const NO_MASKING: &str = "no masking";
/// No terminal completion attempt is lost while the runner result is unset.
pub const SET_ONCE: &str = "set once";
/// At most one process is not terminated.
pub const ONE_LIVE_PROCESS: &str = "one live process";
/// The JobGraph store and the JobResultStore agree.
pub const STORES_AGREE: &str = "stores agree";
/// A decision is reanimated or masked only after a JobManager crash killed it before
/// the JobResultStore recorded it.
pub const ONLY_A_CRASH_LOSES: &str = "only a crash loses a decision";
/// A JobResultStore entry written after a decision records the first decision's
/// status (not a later run's decision or initialisation failure), unless a JobManager
/// crash killed that decision before any entry recorded it.
pub const ENTRY_RECORDS_FIRST: &str = "the JobResultStore records the first decision";
/// A run that has nothing left to do, once the scheduler decided and no crash killed the
/// decision, ends with the job's JobResultStore entry clean (cleanup done), or with the
/// decided status cached in a runner that waits for leadership (the bounds ran out of
/// grants: the next grant, or the runner's close, delivers it).
pub const DECIDED_ENDS_CLEAN: &str = "a decided job ends with a clean entry";
/// The job's JobResultStore entry is clean.
pub const JOB_FINISHES: &str = "a job finishes";
/// The dispatcher handled a SUSPENDED result.
pub const JOB_SUSPENDED: &str = "a job is suspended";
/// A terminal result waits for its forward check while its session is revoked and
/// its process still runs.
pub const WINDOW_A: &str = "a revoke lands inside window A";
/// A revoke closed a process while the terminal signal to it is in flight.
pub const WINDOW_B: &str = "a revoke lands inside window B";
/// One runner creates a second process.
pub const REGRANT: &str = "a regrant happens";
/// A dispatcher failover recovers the job into a new runner.
pub const FAILOVER_RECOVERS: &str = "a dispatcher failover recovers a job";
/// The runner's next step is a grant that flushes its cached terminal result instead of
/// creating a process (runner fix).
pub const REGRANT_FLUSHES: &str = "a regrant flushes a cached terminal result";
/// The runner's next step is the completion of its close, which completes its result
/// with the cached terminal status instead of SUSPENDED (runner fix).
pub const CLOSE_FLUSHES: &str = "a close completes with a cached terminal result";
/// A JobManager crash kills a decision the JobResultStore has not recorded.
pub const CRASH_LOSES: &str = "a crash loses a decision";
/// A submitted job whose JobMaster cannot start ends FAILED in the JobResultStore.
pub const FAILED_AT_START: &str = "a job that cannot start is recorded as failed";
/// A JobMaster failure reaches the dispatcher, whose JobManager exits.
pub const FATAL_EXIT: &str = "a JobMaster failure stops the JobManager";
/// A runner's grant finds the job's JobResultStore entry (`JobAlreadyDoneException`).
pub const ALREADY_DONE: &str = "a grant finds the job already done";

/// The safety properties, in model order.
pub const SAFETY: [&str; 8] = [
    NO_REANIMATION,
    NO_MASKING,
    SET_ONCE,
    ONE_LIVE_PROCESS,
    STORES_AGREE,
    ONLY_A_CRASH_LOSES,
    DECIDED_ENDS_CLEAN,
    ENTRY_RECORDS_FIRST,
];

/// The reachability properties, in model order.
pub const REACHABILITY: [&str; 12] = [
    JOB_FINISHES,
    JOB_SUSPENDED,
    WINDOW_A,
    WINDOW_B,
    REGRANT,
    FAILOVER_RECOVERS,
    REGRANT_FLUSHES,
    CLOSE_FLUSHES,
    CRASH_LOSES,
    FAILED_AT_START,
    FATAL_EXIT,
    ALREADY_DONE,
];

/// No process was created after the deciding one.
fn not_reanimated(s: &State) -> bool {
    s.decider == 0 || s.process_count == s.decider
}

/// A runner result set after a decision is the decided status, or "already done": the
/// JobResultStore entry holds the job's end.
fn not_masked(s: &State) -> bool {
    match s.decided {
        Some(status) if s.has_runner && s.runner_result.is_set() => {
            s.runner_result == Outcome::Terminal(status) || s.runner_result == Outcome::AlreadyDone
        }
        _ => true,
    }
}

/// The actions enabled in `s`, all of them even when the model is reduced: a
/// property's value must not depend on which steps a reduction follows.
fn enabled_actions(model: &Leadership, s: &State) -> Vec<Action> {
    let mut actions = Vec::new();
    model.enabled_steps(s, &mut actions);
    actions
}

/// Whether `action` is enabled in `s`.
fn enabled(model: &Leadership, s: &State, action: Action) -> bool {
    enabled_actions(model, s).contains(&action)
}

/// Every property of `model`, safety first: the reachability of a fault comes only
/// with the setting that injects it, so a model without it reports no property it
/// cannot reach.
pub(super) fn all(model: &Leadership) -> Vec<Property<Leadership>> {
    let mut all = vec![
        Property::<Leadership>::always(NO_REANIMATION, |_, s| not_reanimated(s)),
        Property::<Leadership>::always(NO_MASKING, |_, s| not_masked(s)),
        Property::<Leadership>::always(SET_ONCE, |_, s| !s.lost_terminal),
        Property::<Leadership>::always(ONE_LIVE_PROCESS, |_, s| {
            s.processes[..s.process_count as usize]
                .iter()
                .filter(|p| !matches!(p.state, ProcessState::Terminated | ProcessState::Killed))
                .count()
                <= 1
        }),
        Property::<Leadership>::always(STORES_AGREE, |_, s| {
            let removed_after_entry = s.job_graph || s.job_result != JobResultEntry::Absent;
            let never_recovered_after_entry =
                s.job_result == JobResultEntry::Absent || !s.has_runner || s.entry_epoch == s.epoch;
            removed_after_entry && never_recovered_after_entry
        }),
        // Checked at every state, so a loss before the crash is caught before the crash
        // could excuse it.
        Property::<Leadership>::always(ONLY_A_CRASH_LOSES, |_, s| {
            s.crash_lost || (not_reanimated(s) && not_masked(s))
        }),
        // Checked where the run ends: a state with no enabled step (the model is acyclic
        // and bounded, so every run ends in one).
        Property::<Leadership>::always(DECIDED_ENDS_CLEAN, |m, s| {
            let held = s.has_runner
                && s.runner == RunnerState::Running
                && s.runner_result == Outcome::Unset
                && s.pending_terminal.is_some()
                && s.pending_terminal == s.decided;
            // A JobManager that exited in the last epoch the bound allows leaves its
            // cleanup to the next leader, beyond the bound (with several jobs, another
            // job's fatal error can end it there).
            let cut_by_bound = s.dispatcher == DispatcherState::Crashed && s.epoch == m.epochs;
            if s.decided.is_none()
                || s.crash_lost
                || s.job_result == JobResultEntry::Clean
                || held
                || cut_by_bound
            {
                return true;
            }
            !enabled_actions(m, s).is_empty()
        }),
        // Checked at every state: an entry is written once and never rewritten.
        Property::<Leadership>::always(ENTRY_RECORDS_FIRST, |_, s| {
            s.crash_lost || !s.entry_not_first
        }),
        Property::<Leadership>::sometimes(JOB_FINISHES, |_, s| {
            s.job_result == JobResultEntry::Clean
        }),
        Property::<Leadership>::sometimes(JOB_SUSPENDED, |_, s| {
            s.result_handled && s.runner_result == Outcome::Suspended
        }),
        Property::<Leadership>::sometimes(WINDOW_A, |_, s| {
            s.has_runner
                && s.runner == RunnerState::Running
                && s.processes[..s.process_count as usize].iter().any(|p| {
                    p.state == ProcessState::Running
                        && p.forward_pending
                        && p.result.terminal().is_some()
                        && p.session != s.issued
                })
        }),
        Property::<Leadership>::sometimes(WINDOW_B, |_, s| {
            s.signal != 0
                && s.runner == RunnerState::Running
                && Leadership::process(s, s.signal).state == ProcessState::Closing
        }),
        Property::<Leadership>::sometimes(REGRANT, |_, s| {
            s.processes[..s.process_count as usize]
                .windows(2)
                .any(|w| w[0].epoch == w[1].epoch)
        }),
        Property::<Leadership>::sometimes(FAILOVER_RECOVERS, |_, s| s.epoch > 1 && s.has_runner),
        // Both are read off the state before the step, with the step enabled: a flush
        // leaves the same state as a result forwarded before the revoke.
        Property::<Leadership>::sometimes(REGRANT_FLUSHES, |m, s| {
            s.pending_terminal.is_some()
                && s.runner == RunnerState::Running
                && s.runner_result == Outcome::Unset
                && s.issued != 0
                && s.chain[0] == ChainOp::Grant(s.issued)
                && enabled(m, s, Action::RunGrant(s.issued))
        }),
        Property::<Leadership>::sometimes(CLOSE_FLUSHES, |m, s| {
            s.pending_terminal.is_some()
                && s.runner == RunnerState::Stopped
                && s.runner_result == Outcome::Unset
                && enabled(m, s, Action::CloseRunner)
        }),
    ];
    if model.jobmaster_crash {
        all.push(Property::<Leadership>::sometimes(CRASH_LOSES, |_, s| {
            s.crash_lost
        }));
    }
    if model.jobmaster_failures {
        all.push(Property::<Leadership>::sometimes(
            FAILED_AT_START,
            |_, s| {
                s.result_handled
                    && s.runner_result == Outcome::InitFailed
                    && s.job_result != JobResultEntry::Absent
            },
        ));
        all.push(Property::<Leadership>::sometimes(FATAL_EXIT, |_, s| {
            s.fatal_exit
        }));
    }
    if model.dispatcher_overlap {
        all.push(Property::<Leadership>::sometimes(ALREADY_DONE, |_, s| {
            s.runner_result == Outcome::AlreadyDone
        }));
    }
    all
}

/// The setting a property needs, for the properties that come with one.
pub fn needs(name: &str) -> Option<&'static str> {
    match name {
        CRASH_LOSES => Some("jobmaster-crash"),
        FAILED_AT_START | FATAL_EXIT => Some("jobmaster-failures"),
        ALREADY_DONE => Some("dispatcher-overlap"),
        _ => None,
    }
}
