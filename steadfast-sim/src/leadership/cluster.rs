//! The cluster's synchronous sections: an event handed to a machine, the effects it
//! causes executed and the questions answered, and delayed work done when its turn
//! comes.

use std::collections::VecDeque;

use steadfast::leadership::{
    DispatcherEffect, DispatcherEvent, Effect, Event, JobId, JobResultEntry, JobResultStore,
    JobStatus, ProcessState, Runner, RunnerState, Session,
};

use super::{Cluster, Later, Question, Work};

impl Cluster {
    fn delay(&mut self) -> u64 {
        let max = self.config.max_delay_ms;
        self.rng.between(0, max)
    }

    pub(super) fn later(&mut self, work: Later) {
        let delay = self.delay();
        self.later.push((delay, work));
    }

    /// The first dispatcher leader recovers nothing and takes every job's submission.
    pub(super) fn start(&mut self) {
        self.steps += 1;
        self.dispatch(DispatcherEvent::LeadershipGained);
        for job in 0..self.jobs.len() {
            let id = self.jobs[job].id;
            self.steps += 1;
            self.dispatch(DispatcherEvent::JobSubmitted { job: id });
        }
    }

    /// Hands `event` to the dispatcher and runs the section to its end.
    pub(super) fn dispatch(&mut self, event: DispatcherEvent) {
        let mut work = VecDeque::new();
        self.hand_to_dispatcher(event, &mut work);
        self.finish(work);
    }

    /// Hands `event` to job `job`'s runner and runs the section to its end.
    fn runner_section(&mut self, job: usize, event: Event) {
        let mut work = VecDeque::new();
        self.runner_event(job, event, &mut work);
        self.finish(work);
    }

    fn hand_to_dispatcher(&mut self, event: DispatcherEvent, work: &mut VecDeque<Work>) {
        match self.dispatcher.handle(event) {
            Ok(effects) => work.extend(effects.into_iter().map(Work::Dispatcher)),
            Err(_) => self.refusals += 1,
        }
    }

    fn runner_event(&mut self, job: usize, event: Event, work: &mut VecDeque<Work>) {
        let id = self.jobs[job].id;
        let Some(runner) = self.jobs[job].runner.as_mut() else {
            return;
        };
        let span = tracing::debug_span!("job", job = id.0);
        match span.in_scope(|| runner.handle(event)) {
            Ok(effects) => work.extend(effects.into_iter().map(|e| Work::Runner(job, e))),
            Err(_) => self.refusals += 1,
        }
    }

    /// Executes the section's effects, then answers the store requests answered within
    /// a section, then the runners' questions (the order in which the conformance
    /// binding answers them after each event), until nothing is left.
    fn finish(&mut self, mut work: VecDeque<Work>) {
        loop {
            while let Some(effect) = work.pop_front() {
                self.execute(effect, &mut work);
            }
            if let Some(request) = self.requests.pop_front() {
                match self.stores.execute(request) {
                    Ok(answer) => self.hand_to_dispatcher(answer, &mut work),
                    Err(_) => self.refusals += 1,
                }
                continue;
            }
            let Some(question) = self.questions.pop_front() else {
                return;
            };
            match question {
                Question::JobResultStore(job) => {
                    let has_entry =
                        self.stores.results.entry(self.jobs[job].id) != JobResultEntry::None;
                    self.runner_event(job, Event::JobResultStoreAnswered { has_entry }, &mut work);
                }
                Question::Leadership(job, session) => {
                    let held = self.jobs[job].issued == Some(session);
                    self.runner_event(job, Event::LeadershipConfirmed { session, held }, &mut work);
                }
            }
        }
    }

    fn execute(&mut self, effect: Work, work: &mut VecDeque<Work>) {
        match effect {
            Work::Runner(job, effect) => {
                let generation = self.jobs[job].generation;
                match effect {
                    Effect::StartProcess { session } => {
                        let tries = self.rng.between(1, 3) as u8;
                        self.later(Later::Decide {
                            job,
                            generation,
                            session,
                            tries,
                        });
                    }
                    Effect::CloseProcess { session } => self.later(Later::Terminate {
                        job,
                        generation,
                        session,
                    }),
                    Effect::ForwardScheduled { session } => self.later(Later::Forward {
                        job,
                        generation,
                        session,
                    }),
                    Effect::QueryJobResultStore => {
                        self.questions.push_back(Question::JobResultStore(job))
                    }
                    Effect::ConfirmLeadership { session } => {
                        self.questions.push_back(Question::Leadership(job, session))
                    }
                    Effect::CompleteResult { value } => {
                        self.jobs[job].results_in_flight += 1;
                        self.later(Later::DeliverResult { job, result: value });
                    }
                    Effect::RunnerTerminated => {
                        // The runner closes its leader election once its process ended.
                        let j = &mut self.jobs[job];
                        j.issued = None;
                        j.inbox.clear();
                        self.questions.retain(|q| match *q {
                            Question::JobResultStore(i) | Question::Leadership(i, _) => i != job,
                        });
                        let id = j.id;
                        self.hand_to_dispatcher(
                            DispatcherEvent::RunnerTerminated { job: id },
                            work,
                        );
                    }
                }
            }
            Work::Dispatcher(request) => match request {
                // Answered within the section: the model reads the stores at recovery,
                // and writes the dirty entry with the result it handles, in one step.
                DispatcherEffect::RecoverJobs { .. }
                | DispatcherEffect::PutJobGraph { .. }
                | DispatcherEffect::WriteDirtyEntry { .. } => self.requests.push_back(request),
                DispatcherEffect::RemoveJobGraph { .. }
                | DispatcherEffect::MarkEntryClean { .. } => self.later(Later::Answer { request }),
                DispatcherEffect::StartRunner { job } => {
                    let index = self.index(job);
                    let defects = self.config.defects.clone();
                    let j = &mut self.jobs[index];
                    j.runner = Some(Runner::with_defects(job, &defects));
                    j.generation += 1;
                    j.inbox.clear();
                    j.issued = None;
                }
                DispatcherEffect::CloseRunner { job } => {
                    let index = self.index(job);
                    let j = &mut self.jobs[index];
                    // Messages the closed runner's chain has not run are dropped with it.
                    j.inbox.clear();
                    if j.runner
                        .as_ref()
                        .is_some_and(|r| r.state() != RunnerState::Stopped)
                    {
                        self.runner_event(index, Event::CloseRequested, work);
                    }
                }
                // Reports for the operator of the cluster.
                DispatcherEffect::GlobalCleanup { .. }
                | DispatcherEffect::LocalCleanup { .. }
                | DispatcherEffect::FatalError { .. } => {}
            },
        }
    }

    fn index(&self, job: JobId) -> usize {
        (job.0 - 1) as usize
    }

    /// Delivers the election's message `message` to job `job`'s runner when it is the
    /// front of the inbox and the runner is idle; otherwise waits.
    fn deliver(&mut self, job: usize, message: u64) -> Option<u64> {
        let j = &self.jobs[job];
        let &(front, event) = j.inbox.front()?;
        if !j.inbox.iter().any(|(m, _)| *m == message) {
            // Dropped with a closed runner's election.
            return None;
        }
        let idle = j.runner.as_ref().is_some_and(Runner::is_idle);
        if front != message || !idle {
            return Some(self.delay().max(1));
        }
        self.jobs[job].inbox.pop_front();
        self.steps += 1;
        self.runner_section(job, event);
        None
    }

    /// The scheduler of job `job`'s current process decides, if that process still
    /// runs: most often at once, otherwise it looks again later, `tries` more times.
    fn decide(&mut self, job: usize, generation: u32, session: Session, tries: u8) -> Option<u64> {
        let j = &self.jobs[job];
        if j.generation != generation || j.decided {
            return None;
        }
        let current = j.runner.as_ref().and_then(|r| r.processes().last());
        let running = current.is_some_and(|p| {
            p.session() == session && p.state() != ProcessState::Terminated && p.result().is_none()
        });
        if !running {
            return None;
        }
        if self.rng.chance(70) {
            let status = [JobStatus::Finished, JobStatus::Failed, JobStatus::Canceled]
                [self.rng.between(0, 2) as usize];
            let j = &mut self.jobs[job];
            j.decided = true;
            j.signal = Some(session);
            self.later(Later::Signal {
                job,
                generation,
                session,
                status,
            });
            return None;
        }
        if tries == 0 {
            return None;
        }
        let wait = self.delay().max(1);
        self.later.push((
            wait,
            Later::Decide {
                job,
                generation,
                session,
                tries: tries - 1,
            },
        ));
        None
    }

    /// Does `work` if it is its turn; otherwise returns how long to wait before looking
    /// again.
    pub(super) fn perform(&mut self, work: Later) -> Option<u64> {
        match work {
            Later::Deliver { job, message } => self.deliver(job, message),
            Later::Decide {
                job,
                generation,
                session,
                tries,
            } => self.decide(job, generation, session, tries),
            Later::Signal {
                job,
                generation,
                session,
                status,
            } => {
                self.jobs[job].signal = None;
                // A process whose runner is gone receives nothing.
                if self.jobs[job].generation == generation {
                    self.steps += 1;
                    self.runner_section(job, Event::TerminalSignalDelivered { session, status });
                }
                None
            }
            Later::Terminate {
                job,
                generation,
                session,
            } => {
                if self.jobs[job].generation != generation {
                    return None;
                }
                if !self.config.late_signal && self.jobs[job].signal == Some(session) {
                    return Some(self.delay().max(1));
                }
                self.steps += 1;
                self.runner_section(job, Event::ProcessServiceTerminated { session });
                None
            }
            Later::Forward {
                job,
                generation,
                session,
            } => {
                // A replaced runner's late callbacks change nothing.
                if self.jobs[job].generation == generation {
                    self.steps += 1;
                    self.runner_section(job, Event::ForwardCallback { session });
                }
                None
            }
            Later::DeliverResult { job, result } => {
                self.jobs[job].results_in_flight -= 1;
                let id = self.jobs[job].id;
                self.steps += 1;
                self.dispatch(DispatcherEvent::RunnerCompleted { job: id, result });
                None
            }
            Later::Answer { request } => {
                self.steps += 1;
                match self.stores.execute(request) {
                    Ok(answer) => self.dispatch(answer),
                    Err(_) => self.refusals += 1,
                }
                None
            }
        }
    }
}
