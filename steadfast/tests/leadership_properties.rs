//! Property tests over random interleavings of the fixed leadership lifecycle
//! (FLINK-39704, apache/flink PR 28201): no reanimation, no masking, set once, one live
//! process, fenced sessions, stores agree; and refusals never change state.
//!
//! The environment obeys the fix's stated assumption: a terminal signal reaches its
//! process before the process's service terminates (the residual window is excluded
//! here and characterised in the scenario tests).

use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use std::cell::RefCell;
use steadfast::leadership::{
    DispatcherEffect, Effect, Event, Harness, HarnessEffect, JobId, JobResultEntry, JobResultStore,
    JobStatus, LeadershipProjection, ProcessResult, ProcessState, Query, Runner, RunnerResult,
    RunnerState, Session,
};

const JOB: JobId = JobId(1);

#[derive(Clone, Copy, Debug)]
enum Action {
    Elect,
    Unelect,
    DeliverElection,
    AnswerQuery,
    /// The scheduler of the live process decides a terminal status; its signal is in
    /// flight until delivered.
    Decide(JobStatus),
    DeliverSignal,
    InitializationFailure,
    ServiceTerminates,
    ForwardCallback,
    DispatcherLose,
    DispatcherGain,
}

fn status() -> impl Strategy<Value = JobStatus> {
    prop_oneof![
        Just(JobStatus::Finished),
        Just(JobStatus::Failed),
        Just(JobStatus::Canceled)
    ]
}

const ANY_ACTION: [Action; 13] = [
    Action::Elect,
    Action::Unelect,
    Action::DeliverElection,
    Action::AnswerQuery,
    Action::Decide(JobStatus::Finished),
    Action::Decide(JobStatus::Failed),
    Action::Decide(JobStatus::Canceled),
    Action::DeliverSignal,
    Action::InitializationFailure,
    Action::ServiceTerminates,
    Action::ForwardCallback,
    Action::DispatcherLose,
    Action::DispatcherGain,
];

/// A choice is two bytes. Most choices pick among the actions enabled in the current
/// state, so runs get deep; `gate` makes the disruptive actions (revoke, dispatcher
/// failover, initialisation failure) rarer, and a `byte` from 240 up picks any action,
/// enabled or not, to exercise refusals.
fn choose(d: &Harness, o: &Oracle, (gate, byte): (u8, u8)) -> Option<Action> {
    if byte >= 240 {
        return Some(ANY_ACTION[usize::from(byte - 240) % ANY_ACTION.len()]);
    }
    let p = d.projection();
    let live = live_process(&p);
    let runner_live = d.runner().map(|r| !r.is_terminated()).unwrap_or(false);
    let mut enabled = Vec::new();
    if runner_live && p.issued_session.is_none() {
        enabled.push(Action::Elect);
    }
    if p.issued_session.is_some() && gate % 3 == 0 {
        enabled.push(Action::Unelect);
    }
    if !d.pending_election().is_empty() {
        enabled.push(Action::DeliverElection);
    }
    if !d.pending_queries().is_empty() {
        enabled.push(Action::AnswerQuery);
    }
    if let Some((_, None)) = live {
        if o.decided.is_none() {
            let status = [JobStatus::Finished, JobStatus::Failed, JobStatus::Canceled]
                [usize::from(byte) % 3];
            enabled.push(Action::Decide(status));
            if gate % 8 == 1 {
                enabled.push(Action::InitializationFailure);
            }
        }
    }
    if o.in_flight.is_some() {
        enabled.push(Action::DeliverSignal);
    }
    if p.processes
        .iter()
        .any(|q| q.state == ProcessState::Closing && o.in_flight.map(|(s, _)| s) != Some(q.session))
    {
        enabled.push(Action::ServiceTerminates);
    }
    if d.runner()
        .map(|r| !r.pending_forwards().is_empty())
        .unwrap_or(false)
    {
        enabled.push(Action::ForwardCallback);
    }
    if d.dispatcher().is_leader() && gate % 8 == 2 {
        enabled.push(Action::DispatcherLose);
    }
    if !d.dispatcher().is_leader() && !runner_live {
        enabled.push(Action::DispatcherGain);
    }
    if enabled.is_empty() {
        return None;
    }
    Some(enabled[usize::from(byte) % enabled.len()])
}

/// What the environment knows that the runtime does not.
#[derive(Default, Debug)]
struct Oracle {
    decided: Option<(Session, JobStatus)>,
    in_flight: Option<(Session, JobStatus)>,
    /// Runner result observed per runner (index = runners_started - 1).
    runner_results: Vec<Option<RunnerResult>>,
    process_results: Vec<Option<ProcessResult>>,
    entry_written_with_runners: Option<u32>,
    /// The submitted job's first runner reported that its JobMaster cannot start: the
    /// job ends FAILED without a decision (Flink's `Dispatcher.runJob`).
    failed_at_start: bool,
}

fn live_process(p: &LeadershipProjection) -> Option<(Session, Option<ProcessResult>)> {
    p.processes
        .iter()
        .find(|q| q.state != ProcessState::Terminated)
        .map(|q| (q.session, q.result))
}

/// Runs one action; `Ok(None)` when the action does not apply to this state.
fn act(
    d: &mut Harness,
    o: &mut Oracle,
    a: Action,
) -> Option<Result<Vec<HarnessEffect>, steadfast::leadership::LeadershipError>> {
    let p = d.projection();
    Some(match a {
        Action::Elect => d.elect().map(|_| Vec::new()),
        Action::Unelect => d.unelect().map(|_| Vec::new()),
        Action::DeliverElection => d.deliver_election(),
        Action::AnswerQuery => d.answer_query(),
        Action::Decide(status) => {
            let (session, result) = live_process(&p)?;
            if o.decided.is_some() || result.is_some() {
                return None;
            }
            o.decided = Some((session, status));
            o.in_flight = Some((session, status));
            Ok(Vec::new())
        }
        Action::DeliverSignal => {
            let (session, status) = o.in_flight.take()?;
            d.runner_event(Event::TerminalSignalDelivered { session, status })
        }
        Action::InitializationFailure => {
            let (session, result) = live_process(&p)?;
            if o.decided.is_some() || result.is_some() {
                return None;
            }
            d.runner_event(Event::ProcessResultCompleted {
                session,
                value: ProcessResult::InitializationFailed,
            })
        }
        Action::ServiceTerminates => {
            let closing = p
                .processes
                .iter()
                .find(|q| q.state == ProcessState::Closing)?;
            if o.in_flight.map(|(s, _)| s) == Some(closing.session) {
                return None;
            }
            d.runner_event(Event::ProcessServiceTerminated {
                session: closing.session,
            })
        }
        Action::ForwardCallback => {
            let session = *d.runner()?.pending_forwards().first()?;
            d.runner_event(Event::ForwardCallback { session })
        }
        Action::DispatcherLose => d.dispatcher_lose_leadership(),
        Action::DispatcherGain => d.dispatcher_gain_leadership(),
    })
}

/// Checks the safety properties after one step from `before` to `after`.
fn check_step(
    o: &mut Oracle,
    before: &LeadershipProjection,
    after: &LeadershipProjection,
    effects: &[HarnessEffect],
    decided_before: bool,
) -> Result<(), TestCaseError> {
    let started: Vec<Session> = effects
        .iter()
        .filter_map(|e| match e {
            HarnessEffect::Runner(Effect::StartProcess { session }) => Some(*session),
            _ => None,
        })
        .collect();
    // 1. No reanimation: no process and no runner after a terminal decision.
    if decided_before {
        prop_assert!(started.is_empty(), "process started after decision");
        prop_assert_eq!(after.processes.len(), before.processes.len());
        prop_assert_eq!(after.runners_started, before.runners_started);
    }
    // 4. One live process; a new one only after every earlier one terminated.
    let live = after
        .processes
        .iter()
        .filter(|q| q.state != ProcessState::Terminated)
        .count();
    prop_assert!(live <= 1, "{} live processes", live);
    if !started.is_empty() {
        prop_assert_eq!(started.len(), 1);
        prop_assert!(before
            .processes
            .iter()
            .all(|q| q.state == ProcessState::Terminated));
        // 5. Fenced: a process is created only for the issued session.
        prop_assert_eq!(after.issued_session, Some(started[0]));
        prop_assert_eq!(after.current_process_leader, Some(started[0]));
    }
    // 3. Set once, for process results and for each runner's result.
    for (i, q) in after.processes.iter().enumerate() {
        if let Some(Some(earlier)) = o.process_results.get(i) {
            prop_assert_eq!(q.result, Some(*earlier), "process result changed");
        }
    }
    o.process_results = after.processes.iter().map(|q| q.result).collect();
    let runner_index = after.runners_started as usize;
    o.runner_results.resize(runner_index, None);
    if runner_index > 0 {
        let slot = &mut o.runner_results[runner_index - 1];
        if let Some(earlier) = *slot {
            prop_assert_eq!(after.runner_result, Some(earlier), "runner result changed");
        }
        *slot = after.runner_result;
    }
    // Runner state is one-way.
    if let (Some(b), Some(a)) = (before.runner_state, after.runner_state) {
        if before.runners_started == after.runners_started {
            let rank = |s: RunnerState| match s {
                RunnerState::Running => 0,
                RunnerState::JobCompleted => 1,
                RunnerState::Stopped => 2,
            };
            prop_assert!(rank(a) >= rank(b), "runner state went back");
        }
    }
    if let Some((session, status)) = o.decided {
        // 2. No masking.
        if let Some(result) = after.runner_result {
            prop_assert_eq!(result, RunnerResult::Terminal(status), "masked");
        } else {
            // 3. The terminal value is never lost while the runner result is unset.
            let in_process = after
                .processes
                .iter()
                .any(|q| q.session == session && q.result == Some(ProcessResult::Terminal(status)));
            let kept =
                o.in_flight.is_some() || in_process || after.pending_terminal == Some(status);
            prop_assert!(kept, "terminal value lost");
        }
    }
    // 5. Fenced: a result taken from a process comes from the current process leader.
    match after.runner_result {
        Some(RunnerResult::InitializationFailed) | Some(RunnerResult::NotFinished) => {
            let leader = after.current_process_leader;
            let value = after
                .processes
                .iter()
                .rev()
                .find(|q| Some(q.session) == leader)
                .and_then(|q| q.result);
            prop_assert_eq!(value.map(RunnerResult::from), after.runner_result);
        }
        Some(RunnerResult::Terminal(_)) => prop_assert!(o.decided.is_some()),
        _ => {}
    }
    if after.pending_terminal.is_some() {
        prop_assert_eq!(after.runner_result, None);
    }
    if after.runners_started == 1 && after.runner_result == Some(RunnerResult::InitializationFailed)
    {
        o.failed_at_start = true;
    }
    // 6. Stores agree.
    if !after.job_graph_present {
        prop_assert_ne!(after.job_result_entry, JobResultEntry::None);
    }
    if after.job_result_entry != JobResultEntry::None {
        prop_assert!(o.decided.is_some() || o.failed_at_start);
        match o.entry_written_with_runners {
            None => o.entry_written_with_runners = Some(after.runners_started),
            Some(n) => prop_assert_eq!(after.runners_started, n, "recovered after entry"),
        }
    }
    for e in effects {
        if let HarnessEffect::Dispatcher(DispatcherEffect::GlobalCleanup { status, .. }) = e {
            let ended = o
                .decided
                .map(|(_, s)| s)
                .or(o.failed_at_start.then_some(JobStatus::Failed));
            prop_assert_eq!(ended, Some(*status));
        }
    }
    Ok(())
}

/// Brings everything to rest: signals delivered, messages and answers delivered,
/// callbacks run, services terminated, the runner closed.
fn drain(d: &mut Harness, o: &mut Oracle) -> Result<(), TestCaseError> {
    for _ in 0..200 {
        let before = d.projection();
        let decided_before = o.decided.is_some();
        let p = d.projection();
        let runner_done = d.runner().map(Runner::is_terminated).unwrap_or(true);
        let result = if o.in_flight.is_some() {
            act(d, o, Action::DeliverSignal)
        } else if !d.pending_election().is_empty() {
            act(d, o, Action::DeliverElection)
        } else if !d.pending_queries().is_empty() {
            act(d, o, Action::AnswerQuery)
        } else if d
            .runner()
            .map(|r| !r.pending_forwards().is_empty())
            .unwrap_or(false)
        {
            act(d, o, Action::ForwardCallback)
        } else if p.processes.iter().any(|q| q.state == ProcessState::Closing) {
            act(d, o, Action::ServiceTerminates)
        } else if !runner_done && d.dispatcher().is_leader() {
            act(d, o, Action::DispatcherLose)
        } else if runner_done {
            return Ok(());
        } else {
            return Err(TestCaseError::fail(format!("stuck: {p:?}")));
        };
        let effects = match result {
            Some(Ok(effects)) => effects,
            other => return Err(TestCaseError::fail(format!("drain step failed: {other:?}"))),
        };
        check_step(o, &before, &d.projection(), &effects, decided_before)?;
    }
    Err(TestCaseError::fail("drain did not finish"))
}

/// What one random case reached, to show the properties were not checked vacuously.
#[derive(Default, Debug, Clone, Copy)]
struct Coverage {
    cases: u32,
    decided: u32,
    cached: u32,
    flushed_on_grant: u32,
    flushed_on_close: u32,
    forwarded_while_leader: u32,
    suspended_and_recovered: u32,
    refused_steps: u32,
}

fn run_case(choices: &[(u8, u8)], cov: &mut Coverage) -> Result<(), TestCaseError> {
    let mut d = Harness::new(JOB, false);
    d.dispatcher_gain_leadership().unwrap();
    d.submit_job().unwrap();
    let mut o = Oracle::default();
    let mut saw_cache = false;
    for &choice in choices {
        let Some(a) = choose(&d, &o, choice) else {
            continue;
        };
        let before = d.projection();
        // The oldest query answers a forward's leadership check of an existing process.
        let forward_check = matches!(
            (a, d.pending_queries().first()),
            (Action::AnswerQuery, Some(Query::Leadership(s)))
                if before.processes.iter().any(|q| q.session == *s)
        );
        let decided_before = o.decided.is_some();
        let Some(result) = act(&mut d, &mut o, a) else {
            continue;
        };
        let after = d.projection();
        match result {
            Ok(effects) => check_step(&mut o, &before, &after, &effects, decided_before)?,
            Err(error) => {
                cov.refused_steps += 1;
                prop_assert_eq!(&after, &before, "refused {:?} ({}) changed state", a, error)
            }
        }
        saw_cache |= after.pending_terminal.is_some();
        if before.runner_result.is_none() && after.runner_result.is_some() {
            // The dispatcher closes the runner in the same step as it handles its
            // result, so the state after the step does not tell how the result was
            // set; whether the runner was already closed (or closed by this step's
            // leadership loss) does.
            let closed = before.runner_state == Some(RunnerState::Stopped)
                || matches!(a, Action::DispatcherLose);
            match (before.pending_terminal, closed) {
                (Some(_), false) if forward_check => cov.forwarded_while_leader += 1,
                (Some(_), false) => cov.flushed_on_grant += 1,
                (Some(_), true) => cov.flushed_on_close += 1,
                _ => {}
            }
        }
    }
    let before_drain = d.projection().pending_terminal.is_some();
    drain(&mut d, &mut o)?;
    if before_drain && d.projection().runner_state == Some(RunnerState::Stopped) {
        cov.flushed_on_close += 1;
    }
    let p = d.projection();
    let ended = o.decided.is_some() || o.failed_at_start;
    match o.decided {
        Some((_, status)) => {
            prop_assert_eq!(p.runner_result, Some(RunnerResult::Terminal(status)));
            prop_assert!(!p.job_graph_present);
            prop_assert_eq!(p.job_result_entry, JobResultEntry::Clean);
            prop_assert_eq!(d.environment().results.status(JOB), Some(status));
        }
        // The submitted job's JobMaster could not start: FAILED, cleaned up.
        None if o.failed_at_start => {
            prop_assert_eq!(p.runner_result, Some(RunnerResult::InitializationFailed));
            prop_assert!(!p.job_graph_present);
            prop_assert_eq!(p.job_result_entry, JobResultEntry::Clean);
            prop_assert_eq!(d.environment().results.status(JOB), Some(JobStatus::Failed));
        }
        None => {
            prop_assert!(p.job_graph_present);
            prop_assert_eq!(p.job_result_entry, JobResultEntry::None);
        }
    }
    // The next dispatcher leader recovers the job iff it did not finish.
    let runners = p.runners_started;
    if d.dispatcher().is_leader() {
        d.dispatcher_lose_leadership().unwrap();
    }
    let fx = d.dispatcher_gain_leadership().unwrap();
    let recovered = fx.iter().any(|e| {
        matches!(
            e,
            HarnessEffect::Dispatcher(DispatcherEffect::StartRunner { .. })
        )
    });
    prop_assert_eq!(recovered, !ended);
    prop_assert_eq!(
        d.projection().runners_started,
        runners + u32::from(recovered)
    );
    cov.cases += 1;
    cov.decided += u32::from(o.decided.is_some());
    cov.cached += u32::from(saw_cache);
    cov.suspended_and_recovered +=
        u32::from(recovered && p.runner_result == Some(RunnerResult::Suspended));
    Ok(())
}

#[test]
fn safety_properties_hold_on_random_interleavings() {
    let mut runner = TestRunner::new(ProptestConfig {
        cases: 400,
        ..ProptestConfig::default()
    });
    let coverage = RefCell::new(Coverage::default());
    let strategy = prop::collection::vec(any::<(u8, u8)>(), 0..64);
    let outcome = runner.run(&strategy, |choices| {
        let mut cov = Coverage::default();
        run_case(&choices, &mut cov)?;
        let mut total = coverage.borrow_mut();
        total.cases += cov.cases;
        total.decided += cov.decided;
        total.cached += cov.cached;
        total.flushed_on_grant += cov.flushed_on_grant;
        total.flushed_on_close += cov.flushed_on_close;
        total.forwarded_while_leader += cov.forwarded_while_leader;
        total.suspended_and_recovered += cov.suspended_and_recovered;
        total.refused_steps += cov.refused_steps;
        Ok(())
    });
    if let Err(error) = outcome {
        panic!("{error}");
    }
    let c = coverage.into_inner();
    // Every branch of the fix and both outcomes were reached, not just the easy path.
    eprintln!("{c:?}");
    assert!(c.cases >= 400, "{c:?}");
    assert!(c.decided >= 100, "{c:?}");
    assert!(c.cached >= 20, "{c:?}");
    assert!(c.flushed_on_grant >= 5, "{c:?}");
    assert!(c.flushed_on_close >= 10, "{c:?}");
    assert!(c.forwarded_while_leader >= 10, "{c:?}");
    assert!(c.suspended_and_recovered >= 20, "{c:?}");
    assert!(c.refused_steps >= 50, "{c:?}");
}

fn raw_event() -> impl Strategy<Value = Event> {
    let session = (1u32..5).prop_map(Session);
    let value = prop_oneof![
        status().prop_map(ProcessResult::Terminal),
        Just(ProcessResult::InitializationFailed),
        Just(ProcessResult::NotFinished),
    ];
    prop_oneof![
        session
            .clone()
            .prop_map(|session| Event::LeadershipGranted { session }),
        Just(Event::LeadershipRevoked),
        (session.clone(), value)
            .prop_map(|(session, value)| Event::ProcessResultCompleted { session, value }),
        (session.clone(), status())
            .prop_map(|(session, status)| Event::TerminalSignalDelivered { session, status }),
        session
            .clone()
            .prop_map(|session| Event::ProcessServiceTerminated { session }),
        session
            .clone()
            .prop_map(|session| Event::ForwardCallback { session }),
        Just(Event::CloseRequested),
        any::<bool>().prop_map(|has_entry| Event::JobResultStoreAnswered { has_entry }),
        (session, any::<bool>())
            .prop_map(|(session, held)| Event::LeadershipConfirmed { session, held }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn runner_refusals_never_change_state_and_invariants_hold(events in prop::collection::vec(raw_event(), 0..60)) {
        let mut r = Runner::new(JOB);
        for event in events {
            let before = r.clone();
            let projection = r.projection();
            match r.handle(event) {
                Err(_) => {
                    prop_assert_eq!(&r, &before);
                    prop_assert_eq!(r.projection(), projection);
                }
                Ok(effects) => {
                    let p = r.projection();
                    let live = p.processes.iter().filter(|q| q.state != ProcessState::Terminated).count();
                    prop_assert!(live <= 1);
                    if let Some(earlier) = projection.result {
                        prop_assert_eq!(p.result, Some(earlier));
                    }
                    if p.pending_terminal.is_some() {
                        prop_assert_eq!(p.result, None);
                    }
                    for e in &effects {
                        match e {
                            Effect::StartProcess { .. } => {
                                prop_assert!(projection.processes.iter().all(|q| q.state == ProcessState::Terminated));
                                prop_assert_eq!(projection.pending_terminal, None);
                                prop_assert_eq!(p.state, RunnerState::Running);
                            }
                            Effect::RunnerTerminated => {
                                prop_assert!(p.result.is_some());
                                prop_assert!(p.processes.iter().all(|q| q.state == ProcessState::Terminated));
                            }
                            Effect::CompleteResult { value } => {
                                prop_assert_eq!(projection.result, None);
                                prop_assert_eq!(p.result, Some(*value));
                            }
                            _ => {}
                        }
                    }
                }
            }
        }
    }
}
