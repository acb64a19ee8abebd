//! Overlapping dispatchers: the old JobManager that goes on stopping beside the next
//! leader on the same stores, and the steps the caller drives it through.

use std::collections::VecDeque;
use std::mem;

use super::{Driven, Harness, Query};
use crate::leadership::dispatcher::{Dispatcher, DispatcherEffect, DispatcherEvent};
use crate::leadership::error::LeadershipError;
use crate::leadership::runner::{Event, Runner};
use crate::leadership::types::{JobId, ProcessState};

/// A JobManager whose dispatcher lost leadership while the next leader, on another
/// host, already runs: its dispatcher and runner go on stopping on the same stores.
#[derive(Clone, Debug)]
pub(super) struct StoppingJobManager {
    dispatcher: Dispatcher,
    runner: Option<Runner>,
    queries: VecDeque<Query>,
    store_requests: VecDeque<DispatcherEffect>,
    runner_results: VecDeque<DispatcherEvent>,
    /// Its dispatcher hit a fatal error: the JobManager exits.
    pub(super) exited: bool,
}

impl Harness {
    /// This driver with the next dispatcher leader on another host: it may gain
    /// leadership while the old JobManager is still stopping, which then goes on beside
    /// it. With `fenced`, the stores refuse the old dispatcher's writes.
    pub fn overlapping(mut self, fenced: bool) -> Self {
        self.overlapping = true;
        self.env.fenced = fenced;
        self
    }

    /// The old JobManager's runner while it stops beside the leader.
    pub fn old_runner(&self) -> Option<&Runner> {
        self.old.as_ref().and_then(|o| o.runner.as_ref())
    }

    /// The old JobManager's dispatcher while it stops beside the leader.
    pub fn old_dispatcher(&self) -> Option<&Dispatcher> {
        self.old.as_ref().map(|o| &o.dispatcher)
    }

    /// The old dispatcher's store requests waiting for an answer, oldest first.
    pub fn old_store_requests(&self) -> impl Iterator<Item = &DispatcherEffect> {
        self.old.iter().flat_map(|o| o.store_requests.iter())
    }

    /// The old runner's result on its way to the old dispatcher.
    pub fn next_old_runner_result(&self) -> Option<&DispatcherEvent> {
        self.old.as_ref().and_then(|o| o.runner_results.front())
    }

    /// Feeds one event to the old JobManager's runner; its questions are answered at
    /// once from the environment.
    pub fn old_runner_event(&mut self, event: Event) -> Driven {
        self.on_old_jobmanager(|d| {
            let effects = d.runner_mut()?.handle(event)?;
            d.pump(effects)
        })
    }

    /// Hands the old runner's result to the old dispatcher.
    pub fn deliver_old_runner_result(&mut self) -> Driven {
        self.on_old_jobmanager(Harness::deliver_runner_result)
    }

    /// Executes `request`, one of the old dispatcher's store requests waiting, against
    /// the stores. A request the stores refuse (fenced, or an entry exists already) is
    /// consumed: a stopping dispatcher gives up on it.
    pub fn answer_old_store_request(&mut self, request: DispatcherEffect) -> Driven {
        self.on_old_jobmanager(|d| d.answer_store_request(request))
    }

    /// Runs `step` on the old JobManager: its dispatcher, runner and queues are swapped
    /// in for the step's length, its questions answered at once; all or nothing. The
    /// old JobManager retires once its stop completed.
    fn on_old_jobmanager(&mut self, step: impl FnOnce(&mut Self) -> Driven) -> Driven {
        if self.old.is_none() {
            return Err(LeadershipError::NoStoppingJobManager);
        }
        self.atomically(|d| {
            d.swap_old();
            let auto_answer = mem::replace(&mut d.auto_answer, true);
            let result = step(d);
            d.auto_answer = auto_answer;
            d.swap_old();
            d.retire_old();
            result
        })
    }

    fn swap_old(&mut self) {
        let old = self.old.as_mut().expect("checked by the caller");
        mem::swap(&mut self.dispatcher, &mut old.dispatcher);
        mem::swap(&mut self.runner, &mut old.runner);
        mem::swap(&mut self.queries, &mut old.queries);
        mem::swap(&mut self.store_requests, &mut old.store_requests);
        mem::swap(&mut self.runner_results, &mut old.runner_results);
        self.on_old = !self.on_old;
    }

    /// Drops the old JobManager once its stop completed (its runner terminated, its
    /// result handled, no request outstanding) or it exited; its processes stay on
    /// record, in creation order.
    fn retire_old(&mut self) {
        let old = self
            .old
            .as_deref()
            .expect("both callers have an old JobManager");
        let done = old.runner.as_ref().is_none_or(Runner::is_terminated)
            && old.dispatcher.result_received(self.job) != Some(false)
            && old.store_requests.is_empty()
            && old.runner_results.is_empty();
        if !(done || old.exited) {
            return;
        }
        let old = self.old.take().expect("present");
        let Some(runner) = old.runner else { return };
        // The next leader started no runner and did not die: the old one stays the
        // latest started.
        if mem::take(&mut self.old_runner_latest) && !old.exited {
            debug_assert!(self.runner.is_none());
            self.runner = Some(runner);
            return;
        }
        for mut p in runner.projection().processes {
            if old.exited {
                p.state = ProcessState::Terminated;
            }
            // Sessions grow with creation: a crash of the leader may have put later
            // processes on record already.
            let at = self.retired.partition_point(|q| q.session < p.session);
            self.retired.insert(at, p);
        }
    }

    /// Whether the current JobManager is still stopping (its runner not terminated, its
    /// result not handled, or a cleanup request outstanding), so that a next leader
    /// elsewhere overlaps it.
    pub(super) fn still_stopping(&self) -> bool {
        if self.dispatcher.is_leader() {
            return false;
        }
        // `None`: the dispatcher started no runner since it gained leadership.
        self.dispatcher
            .result_received(self.job)
            .is_some_and(|received| {
                !(received
                    && self.runner.as_ref().is_none_or(Runner::is_terminated)
                    && self.store_requests.is_empty())
            })
    }

    /// The current JobManager becomes the old one, still stopping, and a new dispatcher
    /// takes its place. Fenced stores refuse the old dispatcher's outstanding requests;
    /// the old runner's leader election ended with its close.
    pub(super) fn split(&mut self) {
        let successor = self.dispatcher.successor();
        let mut old = StoppingJobManager {
            dispatcher: mem::replace(&mut self.dispatcher, successor),
            runner: self.runner.take(),
            queries: mem::take(&mut self.queries),
            store_requests: mem::take(&mut self.store_requests),
            runner_results: mem::take(&mut self.runner_results),
            exited: false,
        };
        if self.env.fenced {
            let epoch = old.dispatcher.epoch();
            for request in old.store_requests.drain(..) {
                refused(self.job, epoch, request, "fenced by the next leader");
            }
        }
        self.env.issued = None;
        self.election_inbox.clear();
        self.old = Some(Box::new(old));
        self.old_runner_latest = true;
        // Fenced, an old JobManager that had only a cleanup left is done.
        self.retire_old();
    }
}

/// Logs a store request the stores refused to a stopping dispatcher, which gives up on
/// it.
pub(super) fn refused(job: JobId, epoch: u32, request: DispatcherEffect, why: &str) {
    tracing::debug!(
        component = "store",
        event = request.request_name().unwrap_or("not_a_store_request"),
        job = job.0,
        epoch,
        outcome = "refused",
        error = why,
    );
}
