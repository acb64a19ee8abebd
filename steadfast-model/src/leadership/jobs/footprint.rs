//! The several-jobs model's footprint for partial-order reduction ([`crate::por`]):
//! the one-job footprint ([`super::super::footprint`]) mapped to each job's block of
//! components, the shared ones (election, epoch, dispatcher) common to all.

use super::super::footprint::{
    crash_reads, crash_writes, job_values, shared_values, PER_JOB, SHARED,
};
use std::sync::Arc;

use super::{is_shared, Jobs, JobsAction, JobsState};
use crate::leadership::{Action, State};
use crate::por::{Cells, Footprint, Reduction, ReductionError};
use crate::settings::SettingsError;

/// `cells` of the one-job layout as job `job`'s (numbered from 1): its own components
/// moved to the job's block, the shared ones kept.
fn of_job(cells: Cells, job: u8) -> Cells {
    let shift = (usize::from(job) - 1) * PER_JOB;
    cells.iter().fold(Cells::NONE, |all, c| {
        all | Cells::one(if c < SHARED { c } else { c + shift })
    })
}

/// The reduced model ([`crate::Spec::reduced`]).
impl Jobs {
    /// The enabled steps, narrowed to a stubborn set when the model is reduced.
    pub(super) fn steps_followed(&self, s: &JobsState, actions: &mut Vec<JobsAction>) {
        let reduction = self.reduction.as_deref();
        crate::por::follow(reduction, self, s, actions, |all| {
            self.enabled_steps(s, all)
        });
    }

    /// The same model with its reduction derived afresh (its properties, hence what
    /// they observe, may have changed), when it has one.
    pub(super) fn rereduced(self) -> Result<Jobs, SettingsError> {
        match self.reduction {
            None => Ok(self),
            Some(_) => self
                .with_reduction()
                .map_err(|e| SettingsError(e.to_string())),
        }
    }

    /// The model with its reduction derived from its footprint at its settings.
    pub(super) fn with_reduction(self) -> Result<Jobs, ReductionError> {
        let unreduced = Jobs {
            reduction: None,
            ..self
        };
        Ok(Jobs {
            reduction: Some(Arc::new(Reduction::of(&unreduced)?)),
            ..unreduced
        })
    }
}

impl Jobs {
    /// The jobs, numbered from 1.
    fn numbers(&self) -> impl Iterator<Item = u8> + Clone {
        1..=self.jobs
    }

    /// `cells` of the one-job layout as every job's.
    fn of_every_job(&self, cells: Cells) -> Cells {
        self.numbers()
            .fold(Cells::NONE, |all, j| all | of_job(cells, j))
    }

    /// What a step of job `job` does to the other jobs: a fatal error there ends the
    /// JobManager, and every other job's runner dies with it (JobMaster failures only).
    fn fatal_reach(&self, job: u8, action: Action, cells: fn() -> Cells) -> Cells {
        if !(self.single.jobmaster_failures && action == Action::HandleRunnerResult) {
            return Cells::NONE;
        }
        self.numbers()
            .filter(|&k| k != job)
            .fold(Cells::NONE, |all, k| all | of_job(cells(), k))
    }

    /// Whether job `job`'s view enables `action` in the one-job model.
    fn enables(&self, view: &State, action: Action) -> bool {
        let mut enabled = Vec::new();
        self.single.enabled_steps(view, &mut enabled);
        enabled.contains(&action)
    }

    /// For a shared step disabled at `state`: the components that keep it so. A grant,
    /// a revoke or a crash is enabled when some job's view enables it, so every view's
    /// disabling components; a failover or a recovery when every view does, so one
    /// disabling view's.
    fn shared_disabling(&self, state: &JobsState, action: Action) -> Cells {
        let views = self.numbers().zip(state.jobs());
        let disabling =
            |(j, view): (u8, &State)| of_job(self.single.step_disabling(view, &action), j);
        match action {
            Action::DispatcherFailover | Action::RecoverJob => views
                .clone()
                .find(|(_, view)| !self.enables(view, action))
                .map_or_else(
                    || self.of_every_job(self.single.step_reads(&action)),
                    disabling,
                ),
            _ => views.map(disabling).fold(Cells::NONE, |a, b| a | b),
        }
    }
}

impl Footprint for Jobs {
    fn alphabet(&self) -> Vec<JobsAction> {
        let single = self.single.steps();
        let mut all: Vec<JobsAction> = single
            .iter()
            .filter(|a| is_shared(**a))
            .map(|a| JobsAction::Shared(*a))
            .collect();
        for j in self.numbers() {
            let own = single.iter().filter(|a| !is_shared(**a));
            all.extend(own.map(|a| JobsAction::Job(j, *a)));
        }
        all
    }

    fn reads(&self, action: &JobsAction) -> Cells {
        match *action {
            JobsAction::Shared(a) => self.of_every_job(self.single.step_reads(&a)),
            JobsAction::Job(j, a) => {
                of_job(self.single.step_reads(&a), j) | self.fatal_reach(j, a, crash_reads)
            }
        }
    }

    fn writes(&self, action: &JobsAction) -> Cells {
        match *action {
            JobsAction::Shared(a) => self.of_every_job(self.single.step_writes(&a)),
            JobsAction::Job(j, a) => {
                of_job(self.single.step_writes(&a), j) | self.fatal_reach(j, a, crash_writes)
            }
        }
    }

    fn disabling(&self, state: &JobsState, action: &JobsAction, conjuncts: &mut Vec<Cells>) {
        conjuncts.push(match *action {
            JobsAction::Shared(a) => self.shared_disabling(state, a),
            JobsAction::Job(j, a) => of_job(self.single.step_disabling(state.job(j), &a), j),
        });
    }

    fn observed(&self) -> Cells {
        self.of_every_job(self.single.observed_cells())
    }

    /// No state field records what the step into it did: every step is quiet.
    fn quiet(&self, _: &JobsState) -> bool {
        true
    }

    fn core(&self, state: &JobsState) -> JobsState {
        *state
    }

    fn cell_count(&self) -> usize {
        SHARED + self.count() * PER_JOB
    }

    fn cell_values(&self, state: &JobsState) -> Vec<u64> {
        let mut values = shared_values(state.job(1)).to_vec();
        for view in state.jobs() {
            values.extend(job_values(view));
        }
        values
    }
}
