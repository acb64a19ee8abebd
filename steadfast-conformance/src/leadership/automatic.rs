//! The leadership model bound to the automatic driver (`Harness::new(job, true)`): queries
//! answered as soon as they are asked, the dispatcher's store requests executed at once,
//! the runner's result handed to the dispatcher at once.
//!
//! One automatic event stands for a run of the model's steps: an *external* step (the
//! election issuing or revoking, the channel delivering, the scheduler, a service, a
//! forward callback, a failover, a recovery, a crash, a JobMaster failure) followed by
//! the *internal* steps the driver then takes in the same call until none is enabled:
//! the dispatcher handling the runner's result with its dirty-entry write, its cleanup
//! (`RemoveJobGraph`, `MarkResultClean`), the runner's close completing, and the same
//! of the old JobManager with `dispatcher-overlap`. [`AutomaticLeadership`] is the
//! model's graph seen at those quiescent points; which steps an event stands for is
//! derived from the model's enabled actions alone ([`Automatic::events`]),
//! never from the runtime. Where the internal steps can be taken in several orders,
//! every distinct quiescent state they end in is an event of its own, so a runtime that
//! can reach only one of them is caught at the others.
//!
//! The driver's `grant()` and `revoke()` issue and deliver at once: the model's grant
//! (revoke) followed at once by the chain running it is a further event, offered where
//! the chain is empty before the grant and runs it right after.
//!
//! The runtime, the projection and the probes are the stepwise binding's
//! ([`super::Runtime`], [`Observation`], [`LeadershipBinding::probes`]); the runtime is
//! started on an automatic driver. The structured log of an event must hold exactly the
//! records of the model's steps it stands for, each as often, in any order
//! ([`check_event_log`]). The order is left out because the driver runs effects breadth
//! first: a runner whose close completes at once publishes its result before it reports
//! its termination, and the dispatcher handles them in that order, where the model
//! completes both in one step (`CloseRunner`) before the dispatcher may handle the
//! result; and the dirty entry is written before the runner is asked to close, the
//! JobGraph removed before the dispatcher hears that the close completed.

use serde::Deserialize;

use super::*;
use crate::grain::{Coarse, Grain};

/// One automatic event, as the model steps it stands for: the external step first (the
/// election's grant or revoke with the chain's run of it, for `grant()` and `revoke()`),
/// then the internal steps of the run.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AutomaticStep {
    /// The model's steps, in order.
    pub steps: Vec<Action>,
}

impl fmt::Debug for AutomaticStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (head, rest) = self.split();
        let Some((first, head_rest)) = head.split_first() else {
            return write!(f, "(no step)");
        };
        write!(f, "{first:?}")?;
        for a in head_rest {
            write!(f, " + {a:?}")?;
        }
        if !rest.is_empty() {
            write!(f, " [")?;
            for (i, a) in rest.iter().enumerate() {
                let sep = if i == 0 { "" } else { ", " };
                write!(f, "{sep}{a:?}")?;
            }
            write!(f, "]")?;
        }
        Ok(())
    }
}

impl AutomaticStep {
    /// Whether the event is the driver's `grant()` or `revoke()`: the election's step
    /// and the chain's run of it in one call.
    pub fn issues_and_delivers(&self) -> bool {
        matches!(
            self.steps.as_slice(),
            [Action::GrantLeadership(_), Action::RunGrant(_), ..]
                | [Action::RevokeLeadership(_), Action::RunRevoke, ..]
        )
    }

    /// The external part (one step, or two for `grant()` and `revoke()`) and the
    /// internal steps after it.
    fn split(&self) -> (&[Action], &[Action]) {
        let n = if self.issues_and_delivers() { 2 } else { 1 };
        self.steps.split_at(n.min(self.steps.len()))
    }
}

/// The automatic graph's one property: no step the driver takes by itself is enabled.
pub const QUIESCENT: &str = "no step the automatic driver takes by itself is enabled";

/// The automatic driver's grain over the leadership model ([`Grain`]).
#[derive(Clone, Debug)]
pub struct Automatic {
    /// The step-by-step model.
    pub model: Leadership,
}

/// The leadership model at the automatic driver's grain: its states are the model's
/// states where no internal step is enabled, its steps [`AutomaticStep`]s.
pub type AutomaticLeadership = Coarse<Automatic>;

impl Coarse<Automatic> {
    /// The automatic view of `model`.
    pub fn new(model: Leadership) -> AutomaticLeadership {
        Coarse(Automatic { model })
    }
}

impl Automatic {
    /// A step the automatic driver takes by itself, within the call of the event that
    /// enabled it.
    pub fn internal(a: &Action) -> bool {
        matches!(
            a,
            Action::HandleRunnerResult
                | Action::RemoveJobGraph
                | Action::MarkResultClean
                | Action::CloseRunner
                | Action::CloseOldRunner
                | Action::OldDispatcherHandlesResult
                | Action::OldRemoveJobGraph
                | Action::OldMarkResultClean
        )
    }

    fn enabled(&self, s: &State) -> Vec<Action> {
        let mut enabled = Vec::new();
        self.model.actions(s, &mut enabled);
        enabled
    }

    /// Whether no internal step is enabled at `s`.
    pub fn quiescent(&self, s: &State) -> bool {
        !self.enabled(s).iter().any(Self::internal)
    }

    /// Every automatic event out of `s` with the state it ends in: each external step
    /// the model enables followed by internal steps until none is enabled (one event per
    /// distinct end), and the grant or revoke followed at once by the chain's run of it
    /// where the chain was empty.
    pub fn events(&self, s: &State) -> Vec<(AutomaticStep, State)> {
        let mut out = Vec::new();
        for e in self.enabled(s) {
            if Self::internal(&e) {
                continue;
            }
            let Some(next) = self.model.next_state(s, e) else {
                continue;
            };
            self.run(vec![e], next, &mut out);
            let delivered = match e {
                Action::GrantLeadership(g) => Action::RunGrant(g),
                Action::RevokeLeadership(_) => Action::RunRevoke,
                _ => continue,
            };
            // `grant()` and `revoke()` need an empty channel; the chain is the channel.
            if s.chain_len == 0 && self.enabled(&next).contains(&delivered) {
                if let Some(after) = self.model.next_state(&next, delivered) {
                    self.run(vec![e, delivered], after, &mut out);
                }
            }
        }
        out
    }

    /// Extends `path` (ending in `s`) by internal steps in every order the model allows,
    /// and adds one event per distinct quiescent state reached, by the first path found
    /// (the model's order of enabled actions).
    fn run(&self, path: Vec<Action>, s: State, out: &mut Vec<(AutomaticStep, State)>) {
        let mut seen = vec![s];
        let mut ends: Vec<State> = Vec::new();
        let mut stack = vec![(path, s)];
        while let Some((path, s)) = stack.pop() {
            let own: Vec<Action> = self
                .enabled(&s)
                .into_iter()
                .filter(Self::internal)
                .collect();
            if own.is_empty() {
                if !ends.contains(&s) {
                    ends.push(s);
                    out.push((AutomaticStep { steps: path }, s));
                }
                continue;
            }
            // Pushed in reverse, so that the first enabled step is followed first.
            for a in own.into_iter().rev() {
                let Some(next) = self.model.next_state(&s, a) else {
                    continue;
                };
                if seen.contains(&next) {
                    continue;
                }
                seen.push(next);
                let mut longer = path.clone();
                longer.push(a);
                stack.push((longer, next));
            }
        }
    }
}

impl Grain for Automatic {
    type Fine = Leadership;
    type Step = AutomaticStep;
    const NAME: &'static str = "leadership-automatic";
    const SUMMARY: &'static str =
        "job leadership of FLINK-39704 at the automatic driver's grain (quiescent points)";
    const QUIESCENT: &'static str = QUIESCENT;

    fn of(model: Leadership) -> Result<Automatic, steadfast_model::SettingsError> {
        Ok(Automatic { model })
    }

    fn fine(&self) -> &Leadership {
        &self.model
    }

    fn steps(step: &AutomaticStep) -> &[Action] {
        &step.steps
    }

    fn events(&self, s: &State) -> Vec<(AutomaticStep, State)> {
        Automatic::events(self, s)
    }

    fn quiescent(&self, s: &State) -> bool {
        Automatic::quiescent(self, s)
    }

    fn scenarios() -> &'static [(&'static str, &'static [(&'static str, &'static str)])] {
        Leadership::scenarios()
    }
}

/// A runtime on an automatic driver in the model's initial situation: the dispatcher
/// gains leadership and reads empty stores, the job is submitted and stored, each
/// store request executed as it is made.
pub fn automatic_runtime(model: &Leadership) -> Runtime {
    let mut driver = in_environment(model, Harness::new(JOB, true));
    driver
        .dispatcher_gain_leadership()
        .expect("a fresh dispatcher gains leadership");
    driver
        .submit_job()
        .expect("a fresh dispatcher accepts the job");
    Runtime {
        driver,
        check_log: true,
        log: String::new(),
    }
}

/// Binds [`AutomaticLeadership`] to the automatic driver.
pub struct AutomaticBinding;

/// The log the model's steps of `e` imply at `before`, each step's records after the
/// one before; for an event the model forbids (`refused`), the refusal of what the
/// binding delivered: nothing for `grant()` and `revoke()`, which refuse before any
/// machine sees the event.
pub fn expected_event_log(
    m: &AutomaticLeadership,
    before: &State,
    e: &AutomaticStep,
    refused: bool,
) -> Vec<LogRecord> {
    let mut out = Vec::new();
    if refused {
        if let (false, Some(first)) = (e.issues_and_delivers(), e.steps.first()) {
            out = expected_log(&m.model, before, first, true);
        }
        return out;
    }
    let mut s = *before;
    for &a in &e.steps {
        out.extend(expected_log(&m.model, &s, &a, false));
        s = m
            .model
            .next_state(&s, a)
            .expect("the steps of an enabled event");
    }
    out
}

/// The log check of one event: where `seen`, the structured events the runtime emitted
/// while it realised `e` at `before` and answered `result`, holds other records than the
/// model's steps imply ([`expected_event_log`]), in any order; empty when they agree. A
/// refusal of an enabled event, or the acceptance of a forbidden one, is a disagreement
/// of its own and is not checked here.
pub fn check_event_log(
    m: &AutomaticLeadership,
    before: &State,
    e: &AutomaticStep,
    result: &Result<(), Rejection>,
    seen: &[LogRecord],
) -> String {
    let enabled = m.next_state(before, e.clone()).is_some();
    log_check(m, before, e, enabled, result, seen)
}

fn log_check(
    m: &AutomaticLeadership,
    before: &State,
    e: &AutomaticStep,
    enabled: bool,
    result: &Result<(), Rejection>,
    seen: &[LogRecord],
) -> String {
    if enabled != result.is_ok() {
        return String::new();
    }
    unshared(&expected_event_log(m, before, e, !enabled), seen)
}

/// The records `want` and `seen` do not share, each counted as often as it occurs:
/// `log missing: ...` for one only the model's steps imply, `log unexpected: ...` for
/// one only the runtime emitted; empty when the two hold the same records in any order.
fn unshared(want: &[LogRecord], seen: &[LogRecord]) -> String {
    let mut left: Vec<&LogRecord> = seen.iter().collect();
    let mut out = Vec::new();
    for w in want {
        match left.iter().position(|r| *r == w) {
            Some(i) => {
                left.remove(i);
            }
            None => out.push(format!("log missing: {w}")),
        }
    }
    out.extend(left.iter().map(|r| format!("log unexpected: {r}")));
    out.join("; ")
}

impl AutomaticBinding {
    /// Drives the runtime through the one call that realises `e` (enabled or not by the
    /// model at `before`); the internal steps need no call: the driver takes them.
    fn drive(
        rt: &mut Runtime,
        before: &State,
        e: &AutomaticStep,
        enabled: bool,
    ) -> Result<(), Rejection> {
        match e.steps.as_slice() {
            [Action::GrantLeadership(s), Action::RunGrant(_), ..] => {
                let got = rt.driver.grant()?;
                if got != Session(u32::from(*s)) {
                    return Err(format!("the election issued {got}, the model s{s}").into());
                }
            }
            [Action::RevokeLeadership(s), Action::RunRevoke, ..] => {
                let issued = rt.driver.environment().issued;
                rt.driver.revoke()?;
                if issued != Some(Session(u32::from(*s))) {
                    return Err(format!("the election revoked {issued:?}, the model s{s}").into());
                }
            }
            // The recovery read is executed as the dispatcher asks for it.
            [Action::RecoverJob, ..] => {
                rt.driver.dispatcher_gain_leadership()?;
            }
            [first, ..] => apply(rt, before, first, enabled)?,
            [] => return Err("an automatic event with no model step".into()),
        }
        Ok(())
    }
}

impl Binding for AutomaticBinding {
    type Model = AutomaticLeadership;
    type State = State;
    type Action = AutomaticStep;
    type Runtime = Runtime;
    type Projection = Observation;

    fn supports(m: &AutomaticLeadership) -> Result<(), String> {
        LeadershipBinding::supports(&m.model)
    }

    fn start(m: &AutomaticLeadership, init: &State) -> Runtime {
        start_checked(init, || automatic_runtime(&m.model))
    }

    fn model_view(m: &AutomaticLeadership, s: &State) -> Observation {
        LeadershipBinding::model_view(&m.model, s)
    }

    fn runtime_view(rt: &Runtime) -> Observation {
        observe_runtime(rt)
    }

    fn model_view_into(m: &AutomaticLeadership, s: &State, out: &mut Observation) {
        LeadershipBinding::model_view_into(&m.model, s, out);
    }

    fn runtime_view_into(rt: &Runtime, out: &mut Observation) {
        observe_runtime_into(rt, out);
    }

    type Rejection = Rejection;

    fn step(
        m: &AutomaticLeadership,
        rt: &mut Runtime,
        before: &State,
        e: &AutomaticStep,
    ) -> Result<(), Rejection> {
        let enabled = m.next_state(before, e.clone()).is_some();
        rt.log.clear();
        if !rt.check_log {
            return Self::drive(rt, before, e, enabled);
        }
        let (result, seen) = collect(|| Self::drive(rt, before, e, enabled));
        rt.log = log_check(m, before, e, enabled, &result, &seen);
        result
    }

    /// The stepwise binding's probes, each one runtime call at a quiescent state (the
    /// dispatcher's steps among them: the automatic driver holds no result and no store
    /// request for them), and `grant()` / `revoke()` where the election or the
    /// undelivered channel refuses them.
    fn probes(m: &AutomaticLeadership, s: &State) -> Vec<AutomaticStep> {
        let mut probes: Vec<AutomaticStep> = LeadershipBinding::probes(&m.model, s)
            .into_iter()
            .map(|a| AutomaticStep { steps: vec![a] })
            .collect();
        let s = settle(&m.model, s);
        let live = s.has_runner && !s.runner_terminated && !s.runner_killed;
        let running = live && s.runner == model::RunnerState::Running;
        let next = s.sessions + 1;
        // The election issues one session at a time and none to a closed runner; an
        // undelivered message in the channel refuses both.
        if (running && (s.issued != 0 || s.chain_len > 0)) || !live {
            probes.push(AutomaticStep {
                steps: vec![Action::GrantLeadership(next), Action::RunGrant(next)],
            });
        }
        if (running && (s.issued == 0 || s.chain_len > 0)) || !live {
            probes.push(AutomaticStep {
                steps: vec![
                    Action::RevokeLeadership(s.sessions.max(1)),
                    Action::RunRevoke,
                ],
            });
        }
        probes
    }

    fn counterpart(kind: &str) -> &'static str {
        match kind {
            "GrantLeadership + RunGrant" => {
                "Harness::grant (the election issues the session and the channel delivers it at once)"
            }
            "RevokeLeadership + RunRevoke" => {
                "Harness::revoke (the election revokes the session and the channel delivers it at once)"
            }
            "RecoverJob" => {
                "Harness::dispatcher_gain_leadership; the recovery read and the cleanup it starts are executed at once"
            }
            "RunGrant" => "Harness::deliver_election of the grant; its queries answered at once",
            "RunRevoke" => "Harness::deliver_election of the revoke",
            "DispatcherFailover" => {
                "Harness::dispatcher_lose_leadership; the runner's close, its result handled and the cleanup it starts, at once"
            }
            other => LeadershipBinding::counterpart(other),
        }
    }

    fn describe(rt: &Runtime) -> String {
        LeadershipBinding::describe(rt)
    }

    /// The external part's kinds (`GrantLeadership + RunGrant` for `grant()`).
    fn kind(e: &AutomaticStep) -> String {
        let (head, _) = e.split();
        head.iter()
            .map(LeadershipBinding::kind)
            .collect::<Vec<_>>()
            .join(" + ")
    }
}
