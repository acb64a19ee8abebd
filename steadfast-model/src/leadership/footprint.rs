//! The leadership model's footprint for partial-order reduction ([`crate::por`]): its
//! state's components, what each step reads and writes, which components keep a
//! disabled step disabled, and which components the properties read.
//!
//! Components are numbered in one layout that the several-jobs model ([`super::Jobs`])
//! shares: first the election, the dispatcher epoch and the dispatcher state, which
//! every job sees alike, then one block of [`PER_JOB`] components per job (its chain,
//! runner, stores, ghosts and one component per process slot). The one-job model is the
//! layout with a single block.

use std::ops::Range;
use std::sync::Arc;

use super::{
    property, Action, ChainOp, Cleanup, DispatcherState, Leadership, ProcessState, RunnerState,
    State, Status, MAX_GRANTS,
};
use stateright::Model;

use crate::por::{hash_of, Cells, Footprint, Reduction, ReductionError};
use crate::settings::SettingsError;

/// The election's issued session and the sessions issued so far.
pub(super) const ELECTION: usize = 0;
/// The dispatcher epoch.
pub(super) const EPOCH: usize = 1;
/// The current dispatcher's state.
pub(super) const DISPATCHER: usize = 2;
/// Components shared by every job: the first [`SHARED`] numbers.
pub(super) const SHARED: usize = 3;

// A job's own components, by offset in its block.
const CHAIN: usize = 0;
const RUNNER: usize = 1;
const TERMINATED: usize = 2;
const RUNNER_RESULT: usize = 3;
const KILLED: usize = 4;
const HAS_RUNNER: usize = 5;
const HANDLED: usize = 6;
const CURRENT: usize = 7;
const LEADER: usize = 8;
const PENDING: usize = 9;
const OLD: usize = 10;
const PROCESS_COUNT: usize = 11;
const SIGNAL: usize = 12;
const GRAPH: usize = 13;
const ENTRY: usize = 14;
const CLEANUP: usize = 15;
const DECISION: usize = 16;
const ENTRY_NOT_FIRST: usize = 17;
const LOST: usize = 18;
const CRASH_LOST: usize = 19;
const FATAL: usize = 20;
/// Process slot 1's component; slot `id` is `SLOT + id - 1`.
const SLOT: usize = 21;
/// Components of one job.
pub(super) const PER_JOB: usize = SLOT + MAX_GRANTS;

/// The job component `k` of the one-job layout.
const fn job(k: usize) -> Cells {
    Cells::one(SHARED + k)
}

/// Shared component `c`.
const fn shared(c: usize) -> Cells {
    Cells::one(c)
}

/// Process slots `ids` (1-based).
fn slots(ids: Range<usize>) -> Cells {
    Cells::range(SHARED + SLOT + ids.start - 1, ids.len())
}

/// Every process slot.
fn all_slots() -> Cells {
    slots(1..MAX_GRANTS + 1)
}

/// One process slot.
fn slot(id: u8) -> Cells {
    job(SLOT + usize::from(id) - 1)
}

/// Every component of the one-job layout.
pub(super) fn everything() -> Cells {
    Cells::range(0, SHARED + PER_JOB)
}

/// Union of several sets.
fn all_of(sets: &[Cells]) -> Cells {
    sets.iter().fold(Cells::NONE, |a, b| a | *b)
}

/// What a runner's close writes ([`Leadership::start_runner_close`]).
fn runner_close_writes() -> Cells {
    all_of(&[job(RUNNER), job(CHAIN), job(RUNNER_RESULT), all_slots()])
}

/// What a runner's close reads.
fn runner_close_reads() -> Cells {
    all_of(&[job(RUNNER), job(RUNNER_RESULT), job(CURRENT), all_slots()])
}

/// What a JobManager's death writes ([`Leadership::crash`]).
pub(super) fn crash_writes() -> Cells {
    all_of(&[
        shared(DISPATCHER),
        shared(ELECTION),
        job(CLEANUP),
        job(RUNNER),
        job(RUNNER_RESULT),
        job(HANDLED),
        job(TERMINATED),
        job(KILLED),
        job(CHAIN),
        job(CURRENT),
        job(LEADER),
        job(PENDING),
        job(CRASH_LOST),
        job(SIGNAL),
        all_slots(),
    ])
}

/// What a JobManager's death reads.
pub(super) fn crash_reads() -> Cells {
    all_of(&[
        job(DECISION),
        job(ENTRY),
        job(PROCESS_COUNT),
        job(SIGNAL),
        shared(EPOCH),
        all_slots(),
    ])
}

/// The shared components' values in a view.
pub(super) fn shared_values(s: &State) -> [u64; SHARED] {
    [
        hash_of((s.issued, s.sessions)),
        hash_of(s.epoch),
        hash_of(s.dispatcher),
    ]
}

/// A job's own components' values in its view.
pub(super) fn job_values(s: &State) -> [u64; PER_JOB] {
    let mut v = [0; PER_JOB];
    v[CHAIN] = hash_of((s.chain, s.chain_len));
    v[RUNNER] = hash_of(s.runner);
    v[TERMINATED] = hash_of(s.runner_terminated);
    v[RUNNER_RESULT] = hash_of(s.runner_result);
    v[KILLED] = hash_of(s.runner_killed);
    v[HAS_RUNNER] = hash_of((s.has_runner, s.runner_epoch));
    v[HANDLED] = hash_of(s.result_handled);
    v[CURRENT] = hash_of(s.current);
    v[LEADER] = hash_of(s.current_leader);
    v[PENDING] = hash_of(s.pending_terminal);
    v[OLD] = hash_of(s.old);
    v[PROCESS_COUNT] = hash_of(s.process_count);
    v[SIGNAL] = hash_of(s.signal);
    v[GRAPH] = hash_of(s.job_graph);
    v[ENTRY] = hash_of((s.job_result, s.entry_epoch));
    v[CLEANUP] = hash_of(s.cleanup);
    v[DECISION] = hash_of((s.decided, s.decider));
    v[ENTRY_NOT_FIRST] = hash_of(s.entry_not_first);
    v[LOST] = hash_of(s.lost_terminal);
    v[CRASH_LOST] = hash_of(s.crash_lost);
    v[FATAL] = hash_of(s.fatal_exit);
    for (i, p) in s.processes.iter().enumerate() {
        v[SLOT + i] = hash_of(p);
    }
    v
}

/// The first of `conjuncts` that is false, as its components; every step's guard is a
/// conjunction, listed from the conjunct with the fewest writers.
fn first_false(conjuncts: &[(bool, Cells)]) -> Option<Cells> {
    conjuncts.iter().find(|(holds, _)| !holds).map(|(_, c)| *c)
}

/// The footprint of the one-job model, in the one-job layout (the several-jobs model
/// maps it to each job's block).
impl Leadership {
    /// Every step at these settings: sessions and process ids up to `grants`, statuses
    /// up to `statuses`.
    pub(super) fn steps(&self) -> Vec<Action> {
        let ids = 1..=self.grants;
        let mut all: Vec<Action> = ids.clone().map(Action::GrantLeadership).collect();
        all.extend(ids.clone().map(Action::RevokeLeadership));
        all.extend(ids.clone().map(Action::RunGrant));
        all.push(Action::RunRevoke);
        let statuses = Status::ALL.iter().take(usize::from(self.statuses));
        all.extend(statuses.map(|s| Action::DecideTerminal(*s)));
        all.extend(ids.clone().map(Action::DeliverTerminalSignal));
        all.extend(ids.clone().map(Action::CheckLeadershipInForward));
        all.extend(ids.map(Action::TerminateService));
        all.extend([
            Action::DispatcherFailover,
            Action::CloseRunner,
            Action::HandleRunnerResult,
            Action::RemoveJobGraph,
            Action::MarkResultClean,
            Action::RecoverJob,
            Action::CloseOldRunner,
            Action::OldDispatcherHandlesResult,
            Action::OldRemoveJobGraph,
            Action::OldMarkResultClean,
            Action::FailInitialization,
            Action::FailJobMaster,
            Action::CrashJobManager,
        ]);
        all
    }

    /// The components `action`'s guard and effect read.
    pub(super) fn step_reads(&self, action: &Action) -> Cells {
        let chain_head = all_of(&[job(CHAIN), job(CURRENT), all_slots()]);
        match *action {
            Action::GrantLeadership(_) | Action::RevokeLeadership(_) => {
                all_of(&[shared(ELECTION), job(HAS_RUNNER), job(RUNNER), job(CHAIN)])
            }
            Action::RunGrant(_) => all_of(&[
                chain_head,
                job(RUNNER),
                shared(ELECTION),
                job(PENDING),
                job(ENTRY),
                job(RUNNER_RESULT),
                job(PROCESS_COUNT),
                shared(EPOCH),
            ]),
            Action::RunRevoke => all_of(&[chain_head, job(RUNNER), job(SIGNAL)]),
            Action::DecideTerminal(_) | Action::FailInitialization | Action::FailJobMaster => {
                all_of(&[job(CURRENT), all_slots(), job(SIGNAL), job(DECISION)])
            }
            Action::DeliverTerminalSignal(id) => all_of(&[
                job(SIGNAL),
                slot(id),
                shared(EPOCH),
                job(RUNNER_RESULT),
                job(OLD),
            ]),
            Action::CheckLeadershipInForward(id) => all_of(&[
                slot(id),
                job(OLD),
                shared(EPOCH),
                job(RUNNER_RESULT),
                job(LEADER),
                job(RUNNER),
                shared(ELECTION),
            ]),
            Action::TerminateService(id) => slot(id) | job(SIGNAL),
            Action::DispatcherFailover => all_of(&[
                shared(DISPATCHER),
                shared(EPOCH),
                job(HAS_RUNNER),
                job(SIGNAL),
                runner_close_reads(),
            ]),
            Action::CloseRunner => all_of(&[
                job(HAS_RUNNER),
                job(RUNNER),
                job(TERMINATED),
                job(CURRENT),
                all_slots(),
                job(RUNNER_RESULT),
                job(PENDING),
            ]),
            Action::HandleRunnerResult => all_of(&[
                job(HAS_RUNNER),
                job(RUNNER_RESULT),
                job(HANDLED),
                job(SIGNAL),
                shared(EPOCH),
                job(ENTRY),
                job(DECISION),
                job(CLEANUP),
                runner_close_reads(),
                crash_reads(),
            ]),
            Action::RemoveJobGraph | Action::MarkResultClean => job(CLEANUP),
            Action::CloseOldRunner => job(OLD) | all_slots(),
            Action::OldDispatcherHandlesResult => all_of(&[
                job(OLD),
                shared(EPOCH),
                job(ENTRY),
                job(DECISION),
                job(HAS_RUNNER),
                job(PROCESS_COUNT),
                job(SIGNAL),
                all_slots(),
            ]),
            Action::OldRemoveJobGraph | Action::OldMarkResultClean => job(OLD),
            Action::CrashJobManager => shared(DISPATCHER) | crash_reads(),
            Action::RecoverJob => everything(),
        }
    }

    /// The components `action` may change.
    pub(super) fn step_writes(&self, action: &Action) -> Cells {
        // A failed JobMaster's result ends the JobManager only with JobMaster failures.
        let fatal = if self.jobmaster_failures {
            job(FATAL) | crash_writes()
        } else {
            Cells::NONE
        };
        match *action {
            Action::GrantLeadership(_) | Action::RevokeLeadership(_) => {
                shared(ELECTION) | job(CHAIN)
            }
            Action::RunGrant(session) => all_of(&[
                job(CHAIN),
                job(RUNNER_RESULT),
                job(RUNNER),
                job(PROCESS_COUNT),
                // A grant's process takes a slot no later than its session's.
                slots(1..usize::from(session) + 1),
                job(CURRENT),
                job(LEADER),
            ]),
            Action::RunRevoke => all_of(&[job(CHAIN), job(LEADER), all_slots()]),
            Action::DecideTerminal(_) => all_of(&[all_slots(), job(DECISION), job(SIGNAL)]),
            Action::DeliverTerminalSignal(id) => all_of(&[job(SIGNAL), slot(id), job(LOST)]),
            Action::CheckLeadershipInForward(id) => all_of(&[
                slot(id),
                job(OLD),
                job(PENDING),
                job(RUNNER_RESULT),
                job(RUNNER),
                job(LOST),
            ]),
            Action::TerminateService(id) => slot(id),
            Action::DispatcherFailover => shared(DISPATCHER) | runner_close_writes(),
            Action::CloseRunner => job(TERMINATED) | job(RUNNER_RESULT),
            Action::HandleRunnerResult => all_of(&[
                job(HANDLED),
                job(ENTRY),
                job(ENTRY_NOT_FIRST),
                job(CLEANUP),
                runner_close_writes(),
                fatal,
            ]),
            Action::RemoveJobGraph => job(GRAPH) | job(CLEANUP),
            Action::MarkResultClean => job(ENTRY) | job(CLEANUP),
            Action::OldRemoveJobGraph => job(GRAPH) | job(OLD),
            Action::OldMarkResultClean => job(ENTRY) | job(OLD),
            Action::FailInitialization | Action::FailJobMaster => all_slots(),
            Action::CloseOldRunner => job(OLD),
            Action::OldDispatcherHandlesResult => {
                let exits = if self.jobmaster_failures {
                    all_of(&[
                        job(CRASH_LOST),
                        all_slots(),
                        job(SIGNAL),
                        job(KILLED),
                        job(FATAL),
                    ])
                } else {
                    Cells::NONE
                };
                all_of(&[job(OLD), job(ENTRY), job(ENTRY_NOT_FIRST), exits])
            }
            Action::CrashJobManager => crash_writes(),
            Action::RecoverJob => all_of(&[
                job(OLD),
                job(CLEANUP),
                shared(EPOCH),
                shared(DISPATCHER),
                shared(ELECTION),
                all_slots(),
                job(HAS_RUNNER),
                job(HANDLED),
                job(RUNNER),
                job(RUNNER_RESULT),
                job(CHAIN),
                job(CURRENT),
                job(LEADER),
                job(PENDING),
                job(TERMINATED),
                job(KILLED),
            ]),
        }
    }

    /// For `action` disabled at `s`: the components of one false conjunct of its guard
    /// (of the guard as a whole when no single conjunct is named).
    pub(super) fn step_disabling(&self, s: &State, action: &Action) -> Cells {
        self.false_conjunct(s, action)
            .unwrap_or_else(|| self.step_reads(action))
    }

    /// One false conjunct of `action`'s guard at `s`, the one with the fewest writers
    /// first.
    fn false_conjunct(&self, s: &State, action: &Action) -> Option<Cells> {
        let notified = Self::notified(s);
        let runner = job(HAS_RUNNER) | job(RUNNER);
        let current = Self::current_process(s);
        match *action {
            Action::GrantLeadership(n) => first_false(&[
                (s.issued == 0 && s.sessions + 1 == n, shared(ELECTION)),
                (notified, runner),
            ]),
            Action::RevokeLeadership(n) => first_false(&[
                (s.issued == n && n != 0, shared(ELECTION)),
                (notified, runner),
            ]),
            Action::RunGrant(n) => first_false(&[
                (
                    s.chain_len > 0 && s.chain[0] == ChainOp::Grant(n),
                    job(CHAIN),
                ),
                (!self.chain_blocked(s), job(CURRENT) | all_slots()),
            ]),
            Action::RunRevoke => first_false(&[
                (s.chain_len > 0 && s.chain[0] == ChainOp::Revoke, job(CHAIN)),
                (!self.chain_blocked(s), job(CURRENT) | all_slots()),
            ]),
            Action::DeliverTerminalSignal(id) => {
                first_false(&[(s.signal == id, job(SIGNAL)), (false, slot(id))])
            }
            Action::CheckLeadershipInForward(id) => {
                first_false(&[(Self::process(s, id).forward_pending, slot(id))])
            }
            Action::TerminateService(id) => first_false(&[
                (
                    Self::process(s, id).state == ProcessState::Closing,
                    slot(id),
                ),
                (self.late_signal || s.signal != id, job(SIGNAL)),
            ]),
            Action::DecideTerminal(_) => first_false(&[(current.is_some(), job(CURRENT))]),
            // Never enabled without the setting: nothing enables them.
            Action::FailInitialization | Action::FailJobMaster => first_false(&[
                (self.jobmaster_failures, Cells::NONE),
                (current.is_some(), job(CURRENT)),
            ]),
            Action::RemoveJobGraph => {
                first_false(&[(s.cleanup == Cleanup::RemovingJobGraph, job(CLEANUP))])
            }
            Action::MarkResultClean => {
                first_false(&[(s.cleanup == Cleanup::MarkingClean, job(CLEANUP))])
            }
            Action::CloseOldRunner
            | Action::OldDispatcherHandlesResult
            | Action::OldRemoveJobGraph
            | Action::OldMarkResultClean => first_false(&[
                (self.dispatcher_overlap, Cells::NONE),
                (s.old.is_some(), job(OLD)),
            ]),
            Action::CrashJobManager => first_false(&[
                (self.jobmaster_crash, Cells::NONE),
                (s.epoch < self.epochs, shared(EPOCH)),
                (s.dispatcher != DispatcherState::Crashed, shared(DISPATCHER)),
            ]),
            Action::DispatcherFailover => first_false(&[
                (s.epoch < self.epochs, shared(EPOCH)),
                (s.dispatcher == DispatcherState::Leading, shared(DISPATCHER)),
            ]),
            Action::CloseRunner => first_false(&[
                (!s.runner_terminated, job(TERMINATED)),
                (s.has_runner && s.runner == RunnerState::Stopped, runner),
            ]),
            Action::HandleRunnerResult => first_false(&[
                (!s.result_handled, job(HANDLED)),
                (s.runner_result.is_set(), job(RUNNER_RESULT)),
            ]),
            Action::RecoverJob => first_false(&[
                (s.dispatcher != DispatcherState::Leading, shared(DISPATCHER)),
                (s.old.is_none(), job(OLD)),
            ]),
        }
    }

    /// The components property `name` reads, its guards included for the properties
    /// that ask which steps are enabled.
    pub(super) fn property_reads(name: &str) -> Cells {
        let decision = job(DECISION) | job(PROCESS_COUNT);
        let masking = job(DECISION) | job(HAS_RUNNER) | job(RUNNER_RESULT);
        let processes = job(PROCESS_COUNT) | all_slots();
        let flush = job(PENDING) | job(RUNNER) | job(RUNNER_RESULT);
        match name {
            property::NO_REANIMATION => decision,
            property::NO_MASKING => masking,
            property::SET_ONCE => job(LOST),
            property::ONE_LIVE_PROCESS | property::REGRANT => processes,
            property::STORES_AGREE => {
                all_of(&[job(GRAPH), job(ENTRY), job(HAS_RUNNER), shared(EPOCH)])
            }
            property::ONLY_A_CRASH_LOSES => all_of(&[job(CRASH_LOST), decision, masking]),
            // It asks whether any step is enabled: every guard's components.
            property::DECIDED_ENDS_CLEAN => everything(),
            property::ENTRY_RECORDS_FIRST => job(CRASH_LOST) | job(ENTRY_NOT_FIRST),
            property::JOB_FINISHES => job(ENTRY),
            property::JOB_SUSPENDED => job(HANDLED) | job(RUNNER_RESULT),
            property::WINDOW_A => {
                all_of(&[job(HAS_RUNNER), job(RUNNER), processes, shared(ELECTION)])
            }
            property::WINDOW_B => all_of(&[job(SIGNAL), job(RUNNER), all_slots()]),
            property::FAILOVER_RECOVERS => shared(EPOCH) | job(HAS_RUNNER),
            property::REGRANT_FLUSHES => all_of(&[
                flush,
                shared(ELECTION),
                job(CHAIN),
                job(CURRENT),
                all_slots(),
            ]),
            property::CLOSE_FLUSHES => all_of(&[
                flush,
                job(HAS_RUNNER),
                job(TERMINATED),
                job(CURRENT),
                all_slots(),
            ]),
            property::CRASH_LOSES => job(CRASH_LOST),
            property::FAILED_AT_START => all_of(&[job(HANDLED), job(RUNNER_RESULT), job(ENTRY)]),
            property::FATAL_EXIT => job(FATAL),
            property::ALREADY_DONE => job(RUNNER_RESULT),
            // The sentinel, and any property not listed: assume it reads everything.
            crate::check::SENTINEL => Cells::NONE,
            _ => everything(),
        }
    }

    /// The components this model's properties read (only the focused one's when
    /// focused).
    pub(super) fn observed_cells(&self) -> Cells {
        self.properties()
            .iter()
            .fold(Cells::NONE, |c, p| c | Self::property_reads(p.name))
    }
}

/// The reduced model ([`crate::Spec::reduced`]).
impl Leadership {
    /// The enabled steps, narrowed to a stubborn set when the model is reduced.
    pub(super) fn steps_followed(&self, s: &State, actions: &mut Vec<Action>) {
        let reduction = self.reduction.as_deref();
        crate::por::follow(reduction, self, s, actions, |all| {
            self.enabled_steps(s, all)
        });
    }

    /// The same model with its reduction derived afresh (its properties, hence what
    /// they observe, may have changed), when it has one.
    pub(super) fn rereduced(self) -> Result<Leadership, SettingsError> {
        match self.reduction {
            None => Ok(self),
            Some(_) => self
                .with_reduction()
                .map_err(|e| SettingsError(e.to_string())),
        }
    }

    /// The model with its reduction derived from its footprint at its settings.
    pub(super) fn with_reduction(self) -> Result<Leadership, ReductionError> {
        let unreduced = Leadership {
            reduction: None,
            ..self
        };
        Ok(Leadership {
            reduction: Some(Arc::new(Reduction::of(&unreduced)?)),
            ..unreduced
        })
    }
}

impl Footprint for Leadership {
    fn alphabet(&self) -> Vec<Action> {
        self.steps()
    }

    fn reads(&self, action: &Action) -> Cells {
        self.step_reads(action)
    }

    fn writes(&self, action: &Action) -> Cells {
        self.step_writes(action)
    }

    fn disabling(&self, state: &State, action: &Action, conjuncts: &mut Vec<Cells>) {
        conjuncts.push(self.step_disabling(state, action));
    }

    fn observed(&self) -> Cells {
        self.observed_cells()
    }

    /// No state field records what the step into it did: every step is quiet.
    fn quiet(&self, _: &State) -> bool {
        true
    }

    fn core(&self, state: &State) -> State {
        *state
    }

    fn cell_count(&self) -> usize {
        SHARED + PER_JOB
    }

    fn cell_values(&self, state: &State) -> Vec<u64> {
        let mut v = shared_values(state).to_vec();
        v.extend(job_values(state));
        v
    }
}
