//! The driver's tasks on the runtime: the run itself, delayed work waiting for its
//! turn, each job's leader election and the dispatcher's failovers.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;
use std::time::Duration;

use std::collections::VecDeque;
use steadfast::leadership::{Dispatcher, Environment, JobId, JobResultEntry, JobResultStore};
use tokio::sync::Notify;

use super::{Cluster, Config, Job, Later, RunError, Sim, Summary, ELECTION_TICKS, MAX_RETRIES};
use crate::rng::Rng;

impl Sim {
    pub(super) fn new(config: Config) -> Sim {
        let jobs = (1..=config.jobs)
            .map(|id| Job {
                id: JobId(id),
                runner: None,
                generation: 0,
                issued: None,
                last_session: 0,
                inbox: VecDeque::new(),
                decided: false,
                signal: None,
                results_in_flight: 0,
            })
            .collect();
        let rng = Rng::new(config.seed);
        Sim {
            cluster: Rc::new(RefCell::new(Cluster {
                config,
                rng,
                dispatcher: Dispatcher::new(),
                stores: Environment::default(),
                jobs,
                next_message: 0,
                later: Vec::new(),
                questions: VecDeque::new(),
                requests: VecDeque::new(),
                steps: 0,
                refusals: 0,
            })),
            live: Rc::new(Cell::new(0)),
            idle: Rc::new(Notify::new()),
            stalled: Rc::new(Cell::new(None)),
        }
    }

    pub(super) async fn run(&self) -> Result<Summary, RunError> {
        let (jobs, failovers) = {
            let mut c = self.cluster.borrow_mut();
            let config = c.config.clone();
            tracing::info!(
                component = "run",
                event = "start",
                model = "leadership",
                seed = config.seed,
                jobs = config.jobs,
                grants = config.grants,
                failovers = config.failovers,
                late_signal = config.late_signal,
                max_delay_ms = config.max_delay_ms,
                defects = ?config.defects.iter().map(|d| d.name()).collect::<Vec<_>>(),
            );
            c.start();
            let failovers = c.rng.between(0, u64::from(config.failovers)) as u8;
            (config.jobs as usize, failovers)
        };
        self.spawn_later();
        for job in 0..jobs {
            let sim = self.clone();
            self.spawn(async move { sim.election(job).await });
        }
        if failovers > 0 {
            let sim = self.clone();
            self.spawn(async move { sim.failovers(failovers).await });
        }
        while self.live.get() > 0 {
            self.idle.notified().await;
        }
        if let Some(what) = self.stalled.get() {
            return Err(RunError::Stalled(what));
        }
        let c = self.cluster.borrow();
        let jobs_done = c
            .jobs
            .iter()
            .filter(|j| c.stores.results.entry(j.id) == JobResultEntry::Clean)
            .count() as u32;
        tracing::info!(
            component = "run",
            event = "end",
            steps = c.steps,
            refusals = c.refusals,
            jobs_done,
        );
        Ok(Summary {
            events: 0,
            steps: c.steps,
            refusals: c.refusals,
            jobs_done,
            runners_started: c.dispatcher.runners_started(),
            epochs: c.dispatcher.epoch(),
            virtual_ms: 0,
        })
    }

    /// Spawns `task`, counted until it ends.
    fn spawn(&self, task: impl Future<Output = ()> + 'static) {
        self.live.set(self.live.get() + 1);
        let live = self.live.clone();
        let idle = self.idle.clone();
        tokio::task::spawn_local(async move {
            task.await;
            live.set(live.get() - 1);
            if live.get() == 0 {
                idle.notify_one();
            }
        });
    }

    /// Spawns the tasks the last section asked for.
    fn spawn_later(&self) {
        let later = std::mem::take(&mut self.cluster.borrow_mut().later);
        for (delay_ms, work) in later {
            let sim = self.clone();
            self.spawn(async move { sim.perform_later(delay_ms, work).await });
        }
    }

    /// Waits, then does `work`; waits again while it is not its turn yet.
    async fn perform_later(&self, mut delay_ms: u64, work: Later) {
        for _ in 0..MAX_RETRIES {
            tokio::time::sleep(Duration::from_millis(delay_ms)).await;
            let again = self.cluster.borrow_mut().perform(work);
            self.spawn_later();
            match again {
                None => return,
                Some(wait) => delay_ms = wait,
            }
        }
        self.stalled.set(Some(work.name()));
    }

    /// Sleeps a drawn 1 to `times` x the largest delay, in virtual milliseconds.
    async fn sleep_up_to(&self, times: u64) {
        let wait = {
            let mut c = self.cluster.borrow_mut();
            let max = c.config.max_delay_ms;
            c.rng.between(1, times * max)
        };
        tokio::time::sleep(Duration::from_millis(wait)).await;
    }

    /// The job's leader election: a tick at random intervals, each of which may issue
    /// or revoke a session, sometimes several at one instant.
    async fn election(&self, job: usize) {
        for _ in 0..ELECTION_TICKS {
            self.sleep_up_to(2).await;
            let over = self.cluster.borrow_mut().election_tick(job);
            self.spawn_later();
            if over {
                return;
            }
        }
    }

    /// The dispatcher's failovers: leadership lost at a random time, and regained once
    /// every runner of the old leader terminated and had its result consumed.
    async fn failovers(&self, count: u8) {
        for _ in 0..count {
            self.sleep_up_to(10).await;
            self.cluster.borrow_mut().lose_leadership();
            self.spawn_later();
            let mut regained = false;
            for _ in 0..MAX_RETRIES {
                self.sleep_up_to(1).await;
                regained = self.cluster.borrow_mut().try_regain_leadership();
                self.spawn_later();
                if regained {
                    break;
                }
            }
            if !regained {
                self.stalled.set(Some("the next dispatcher leader"));
                return;
            }
        }
    }
}
