//! The job's leader election in the harness: issuing and revoking sessions, and
//! delivering the queued grants and revokes to the runner.

use super::{Driven, Harness};
use crate::leadership::error::LeadershipError;
use crate::leadership::runner::Event;
use crate::leadership::types::Session;

impl Harness {
    /// The election issues a new session; the grant is queued for the runner.
    pub fn elect(&mut self) -> Result<Session, LeadershipError> {
        let runner = self.runner.as_ref().ok_or(LeadershipError::NoRunner)?;
        if runner.is_terminated() {
            return Err(LeadershipError::Election("the runner's election is closed"));
        }
        if self.env.issued.is_some() {
            return Err(LeadershipError::Election("a session is already issued"));
        }
        self.env.last_session += 1;
        let session = Session(self.env.last_session);
        self.env.issued = Some(session);
        self.election_inbox
            .push_back(Event::LeadershipGranted { session });
        tracing::debug!(
            component = "election",
            event = "issue",
            session = session.0,
            outcome = "issued"
        );
        Ok(session)
    }

    /// The election revokes the issued session; the revoke is queued for the runner.
    pub fn unelect(&mut self) -> Result<Session, LeadershipError> {
        let session = self
            .env
            .issued
            .ok_or(LeadershipError::Election("no session is issued"))?;
        self.env.issued = None;
        self.election_inbox.push_back(Event::LeadershipRevoked);
        tracing::debug!(
            component = "election",
            event = "revoke",
            session = session.0,
            outcome = "revoked"
        );
        Ok(session)
    }

    /// Delivers the oldest queued grant or revoke to the runner.
    pub fn deliver_election(&mut self) -> Driven {
        let event = *self
            .election_inbox
            .front()
            .ok_or(LeadershipError::Election("nothing to deliver"))?;
        self.atomically(|d| {
            let effects = d.runner_mut()?.handle(event)?;
            d.election_inbox.pop_front();
            d.pump(effects)
        })
    }

    /// Issues a session and delivers the grant at once (requires an empty inbox).
    pub fn grant(&mut self) -> Result<Session, LeadershipError> {
        self.inbox_empty()?;
        let mut session = None;
        self.atomically(|d| {
            session = Some(d.elect()?);
            d.deliver_election()
        })?;
        Ok(session.expect("issued by the step that succeeded"))
    }

    /// Revokes the issued session and delivers the revoke at once (requires an empty
    /// inbox).
    pub fn revoke(&mut self) -> Driven {
        self.inbox_empty()?;
        self.atomically(|d| {
            d.unelect()?;
            d.deliver_election()
        })
    }

    /// Refuses a grant or revoke delivered at once while earlier election messages wait.
    fn inbox_empty(&self) -> Result<(), LeadershipError> {
        if self.election_inbox.is_empty() {
            Ok(())
        } else {
            Err(LeadershipError::Election(
                "earlier messages are undelivered",
            ))
        }
    }
}
