//! Each job's leader election, issuing and revoking sessions, and the dispatcher's
//! loss and regain of leadership.

use steadfast::leadership::{
    DispatcherEvent, Event, JobResultEntry, JobResultStore, RunnerState, Session,
};

use super::{Cluster, Later};

impl Cluster {
    /// One tick of job `job`'s election; true when the election has nothing left to do.
    pub(super) fn election_tick(&mut self, job: usize) -> bool {
        let grants = u32::from(self.config.grants);
        let j = &self.jobs[job];
        if self.stores.results.entry(j.id) != JobResultEntry::None {
            return true;
        }
        if j.last_session >= grants && j.issued.is_none() {
            return true;
        }
        let running = j
            .runner
            .as_ref()
            .is_some_and(|r| r.state() == RunnerState::Running && !r.is_terminated());
        if !running {
            return false;
        }
        // A storm: several grants and revokes at one instant.
        let burst = if self.rng.chance(20) { 3 } else { 1 };
        for _ in 0..burst {
            let j = &self.jobs[job];
            if j.issued.is_none() {
                if j.last_session >= grants {
                    break;
                }
                self.issue(job);
            } else if burst > 1 || self.rng.chance(40) {
                self.revoke(job);
            }
        }
        false
    }

    fn issue(&mut self, job: usize) {
        let j = &mut self.jobs[job];
        j.last_session += 1;
        let session = Session(j.last_session);
        j.issued = Some(session);
        self.post(job, "issue", session, Event::LeadershipGranted { session });
    }

    fn revoke(&mut self, job: usize) {
        if let Some(session) = self.jobs[job].issued.take() {
            self.post(job, "revoke", session, Event::LeadershipRevoked);
        }
    }

    /// The election's notice of an issue or revoke: logged at once, queued for the
    /// runner, and delivered later.
    fn post(&mut self, job: usize, what: &'static str, session: Session, event: Event) {
        self.steps += 1;
        let message = self.next_message;
        self.next_message += 1;
        let j = &mut self.jobs[job];
        j.inbox.push_back((message, event));
        tracing::debug!(
            component = "election",
            event = what,
            job = j.id.0,
            session = session.0,
            outcome = if what == "issue" { "issued" } else { "revoked" }
        );
        self.later(Later::Deliver { job, message });
    }

    pub(super) fn lose_leadership(&mut self) {
        if self.dispatcher.is_leader() {
            self.steps += 1;
            self.dispatch(DispatcherEvent::LeadershipLost);
        }
    }

    /// The next leader starts once the old one is done with every runner it started.
    pub(super) fn try_regain_leadership(&mut self) -> bool {
        let ready = self.jobs.iter().all(|j| {
            j.results_in_flight == 0
                && !self.dispatcher.is_live(j.id)
                && self.dispatcher.result_received(j.id) != Some(false)
        });
        if !ready {
            return false;
        }
        self.steps += 1;
        self.dispatch(DispatcherEvent::LeadershipGained);
        true
    }
}
