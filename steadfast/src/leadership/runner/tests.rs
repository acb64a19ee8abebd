//! Unit tests of the runner's outcomes.

use super::*;

#[test]
fn every_outcome_has_its_own_log_word() {
    let names: std::collections::BTreeSet<&str> =
        RunnerOutcome::ALL.iter().map(|o| o.name()).collect();
    assert_eq!(names.len(), RunnerOutcome::ALL.len());
    assert!(!names.contains("rejected"), "the word of a refusal");
}

#[test]
fn step_returns_the_outcome_with_the_effects() {
    let mut r = Runner::new(JobId(1));
    let s = Session(1);
    let granted = r.step(Event::LeadershipGranted { session: s }).unwrap();
    assert_eq!(
        granted,
        Handled {
            effects: vec![Effect::QueryJobResultStore],
            outcome: RunnerOutcome::Queued
        }
    );
    r.handle(Event::JobResultStoreAnswered { has_entry: false })
        .unwrap();
    let started = r
        .step(Event::LeadershipConfirmed {
            session: s,
            held: true,
        })
        .unwrap();
    assert_eq!(started.outcome, RunnerOutcome::ProcessStarted);
    assert_eq!(started.effects, vec![Effect::StartProcess { session: s }]);
    let closed = r.step(Event::CloseRequested).unwrap();
    assert_eq!(closed.outcome, RunnerOutcome::Stopping);
}
