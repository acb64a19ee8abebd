//! The durable-actions model bound to the blocking [`Driver`] over the in-memory log: the
//! user-facing way to run the operator, compared through the driver's own projection
//! ([`Driver::projection`]).
//!
//! The grain is the eager binding's ([`EagerDurable`]): one event is an external step and
//! the key's internal steps until none is enabled, a fault ending it at its last put.
//! Each event is one driver call: an input is [`Driver::input`], a call's return
//! [`Driver::call`] of the request the operator made, checkpoints, completions, aborts
//! and crashes the driver's methods of those names. A failed put is the
//! [`MemoryLog`]'s fault injection at the run's last send; a crash while a put waits is
//! the driver's [`Cancellation`](steadfast_log::Cancellation) set before the event (the wait ends with
//! [`DriverError::Cancelled`]), then [`Driver::crash`].
//!
//! The driver's source is replayable: [`Driver::restore`] re-delivers every input
//! delivered after the restored checkpoint's snapshot, in delivery order, before it
//! returns. The model's source may re-deliver them later, in any order, or not at all;
//! the driver takes one of those paths. So [`DriverDurable`] is the eager graph with
//! the driver's source added to the state ([`Source`]: the keys of the inputs a restore
//! would re-deliver), and its restore event is the eager `Restore` run followed by one
//! `DeliverInput` run per re-delivered input; a fault in any of them ends the event.
//!
//! After every event the runtime's side of the comparison is read from
//! [`Driver::projection`] alone (keyed state, activity, failure, cache, log, checkpoints,
//! committed outputs, supplier runs and unlanded runs per call), mapped onto the
//! stepwise binding's [`View`] in model indices, plus the unlanded runs
//! ([`DriverView`]).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::marker::PhantomData;

use serde::Serialize;
use serde_json::json;
use stateright::{Model, Property};
use steadfast::durable::RebuildReport;
use steadfast_log::{Driver, DriverError, MemoryLog, Projection, SendFault};
use steadfast_model::durable::{self as model, Action, Durable};
use steadfast_model::{Expectation, Param, Settings, SettingsError, Spec};

use super::eager::{EagerBinding, EagerDurable, EagerStep, QUIESCENT};
use super::{
    impl_state_view, rank_offsets, resize, supplier, CachedView, CallView, CheckpointView,
    DurableBinding, KeyView, LandedView, LatestView, Names, PartitionView, StateKeyView, View,
};
use crate::Binding;

mod view;

/// What the driver's replayable source holds that a restore uses.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct Source {
    /// The keys of the inputs delivered since the latest completed checkpoint's snapshot
    /// (since the start without one), in delivery order: what a restore re-delivers.
    pub replay: Vec<u8>,
    /// Per pending checkpoint, oldest first, how many of `replay` came before its
    /// snapshot.
    pub pending: Vec<u8>,
}

/// Supplier runs of one durable call whose result record never landed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct LostRuns {
    /// The call's key, input and action (model indices).
    pub state_key: (u8, u8, u8),
    /// The call's index.
    pub call: u8,
    /// Runs whose record never landed.
    pub runs: u8,
}

/// A state of [`DriverDurable`]: the model's state and the driver's source.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct DriverState {
    /// The durable model's state (quiescent).
    pub model: model::State,
    /// The driver's source.
    pub source: Source,
    /// Ghost: per durable call, the supplier runs whose result record never landed (the
    /// model counts runs, not which of them landed: a restart from nothing runs a call
    /// again whose record landed before), sorted.
    pub lost: Vec<LostRuns>,
}

/// The eager graph of the durable model with the driver's replayable source: a restore
/// re-delivers the inputs after the restored checkpoint at once, in delivery order.
#[derive(Clone, Debug)]
pub struct DriverDurable {
    /// The eager graph.
    pub eager: EagerDurable,
}

impl DriverDurable {
    /// The driver's view of `eager`.
    pub fn new(eager: EagerDurable) -> DriverDurable {
        DriverDurable { eager }
    }

    /// The durable model.
    pub fn model(&self) -> &Durable {
        &self.eager.model
    }

    /// Every driver event out of `s` with the state it ends in.
    pub fn events(&self, s: &DriverState) -> Vec<(EagerStep, DriverState)> {
        let mut out = Vec::new();
        for (e, end) in self.eager.events(&s.model) {
            let mut source = Self::source_after(&s.model, &s.source, e.steps[0]);
            if let Some(fault) = e.fault() {
                source = Self::source_after(&s.model, &source, fault);
            }
            if e.steps[0] == Action::Restore && e.fault().is_none() {
                let mut ends = Vec::new();
                self.redeliver(e.steps, end, source, 0, &mut ends);
                out.extend(ends.into_iter().map(|(e, (model, source))| {
                    let lost = s.lost.clone();
                    (
                        e,
                        DriverState {
                            model,
                            source,
                            lost,
                        },
                    )
                }));
            } else {
                let lost = Self::lost_after(&s.model, &s.lost, &e);
                out.push((
                    e,
                    DriverState {
                        model: end,
                        source,
                        lost,
                    },
                ));
            }
        }
        out
    }

    /// The unlanded runs after `e`, taken at `s`: a call's return whose put fails
    /// before landing, or whose task dies with the record lost, adds one.
    fn lost_after(s: &model::State, lost: &[LostRuns], e: &EagerStep) -> Vec<LostRuns> {
        let mut next = lost.to_vec();
        let (Action::CallSupplier(k), Some(answer)) = (e.steps[0], e.steps.get(2)) else {
            return next;
        };
        let (model::Phase::AtCall(call), false) = (
            s.phase[usize::from(k)],
            matches!(
                answer,
                Action::AckPut(_)
                    | Action::FailPut { landed: true, .. }
                    | Action::Crash { landed: true }
            ),
        ) else {
            return next;
        };
        let sk = s.head(usize::from(k));
        let state_key = (sk.key, sk.seq, sk.action);
        match next
            .iter_mut()
            .find(|l| l.state_key == state_key && l.call == call)
        {
            Some(l) => l.runs += 1,
            None => {
                next.push(LostRuns {
                    state_key,
                    call,
                    runs: 1,
                });
                next.sort();
            }
        }
        next
    }

    /// The source after an event that starts with `first`, taken at `s`.
    fn source_after(s: &model::State, source: &Source, first: Action) -> Source {
        let mut next = source.clone();
        match first {
            Action::DeliverInput(k) => next.replay.push(k),
            Action::TriggerCheckpoint => next.pending.push(next.replay.len() as u8),
            Action::CompleteCheckpoint(id) => {
                // It subsumes the older pending ones; what came before its snapshot is
                // never re-delivered again.
                if let Some(at) = s.pending_checkpoints().position(|(p, _)| p == id) {
                    let base = next.pending[at];
                    next.replay.drain(..usize::from(base));
                    next.pending = next.pending[at + 1..].iter().map(|p| p - base).collect();
                }
            }
            Action::AbortCheckpoint(_) => {
                next.pending.remove(0);
            }
            Action::Crash { .. } => next.pending.clear(),
            _ => {}
        }
        next
    }

    /// Extends a restore event ending at `s` by the re-delivery of `source.replay[i..]`,
    /// one `DeliverInput` run each; each fault the model enables in one ends an event.
    fn redeliver(
        &self,
        steps: Vec<Action>,
        s: model::State,
        source: Source,
        i: usize,
        out: &mut Vec<(EagerStep, (model::State, Source))>,
    ) {
        let Some(&k) = source.replay.get(i) else {
            out.push((EagerStep { steps }, (s, source)));
            return;
        };
        let mut clean = 0;
        for (e, end) in self.eager.events(&s) {
            if e.steps[0] != Action::DeliverInput(k) {
                continue;
            }
            let mut all = steps.clone();
            all.extend(e.steps.iter().copied());
            if e.fault().is_some() {
                let source = Self::source_after(&s, &source, e.fault().expect("a fault"));
                out.push((EagerStep { steps: all }, (end, source)));
            } else {
                clean += 1;
                self.redeliver(all, end, source.clone(), i + 1, out);
            }
        }
        // The source holds only inputs the model delivered before, within its bounds.
        assert_eq!(
            clean, 1,
            "re-delivering an input of key {k}: the model has {clean} fault-free runs at {s:?}"
        );
    }
}

impl Model for DriverDurable {
    type State = DriverState;
    type Action = EagerStep;

    fn init_states(&self) -> Vec<DriverState> {
        self.eager
            .init_states()
            .into_iter()
            .map(|model| DriverState {
                model,
                source: Source::default(),
                lost: Vec::new(),
            })
            .collect()
    }

    fn actions(&self, s: &DriverState, actions: &mut Vec<EagerStep>) {
        actions.extend(self.events(s).into_iter().map(|(e, _)| e));
    }

    /// The eager graph's property: every event ends quiescent.
    fn properties(&self) -> Vec<Property<Self>> {
        vec![Property::always(
            QUIESCENT,
            |m: &DriverDurable, s: &DriverState| m.eager.quiescent(&s.model),
        )]
    }

    fn next_state(&self, s: &DriverState, e: EagerStep) -> Option<DriverState> {
        self.events(s)
            .into_iter()
            .find(|(x, _)| *x == e)
            .map(|(_, next)| next)
    }
}

impl Spec for DriverDurable {
    const NAME: &'static str = "durable-driver";
    const SUMMARY: &'static str =
        "durable actions (flink-agents issue 1158) through the blocking driver, at the eager grain";

    fn designs() -> &'static [&'static str] {
        Durable::designs()
    }

    fn design_name(&self) -> &'static str {
        self.eager.design_name()
    }

    fn settings(&self) -> &Settings {
        self.eager.settings()
    }

    fn params() -> &'static [Param] {
        Durable::params()
    }

    fn build(design: &str, settings: &Settings) -> Result<Self, SettingsError> {
        let eager = EagerDurable::build(design, settings)?;
        let b = eager.model.bounds;
        if b.lost_completions {
            return Err(SettingsError(
                "durable-driver: the driver's coordinator tells the operator of every \
                 completion, so it has no `lost-completions` (the stepwise `durable` binding \
                 checks them)"
                    .to_string(),
            ));
        }
        if !b.mid_action_checkpoints {
            return Err(SettingsError(
                "durable-driver: the driver's restore re-delivers inputs while other keys' \
                 actions wait on calls, which `mid-action-checkpoints false` forbids"
                    .to_string(),
            ));
        }
        Ok(DriverDurable::new(eager))
    }

    fn focus(&self, property: Option<&str>) -> Result<Self, SettingsError> {
        match property {
            None | Some(QUIESCENT) => Ok(self.clone()),
            Some(name) => Err(SettingsError(format!(
                "unknown property `{name}` of durable-driver (known: {QUIESCENT})"
            ))),
        }
    }

    fn describe_step(&self, before: &DriverState, e: &EagerStep) -> String {
        self.eager.describe_step(&before.model, e)
    }

    /// The graph checks no property of its own: it is the model's, coarser.
    fn expectations() -> Vec<Expectation> {
        Vec::new()
    }
}

/// How the binding reads the driver's projection: production as the driver reports it;
/// a test variant may damage it, to show that conformance notices.
pub trait Reading: 'static {
    /// Called with every projection the driver reports.
    fn read(_projection: &mut Projection) {}
}

/// The projection as the driver reports it.
pub struct AsReported;

impl Reading for AsReported {}

/// The driver over the in-memory log, and what the binding found wrong.
pub struct DriverRuntime<R> {
    names: std::sync::Arc<Names>,
    ranked_offsets: bool,
    tracks_offsets: bool,
    /// A handle on the driver's log (the same records), for fault injection.
    log: MemoryLog,
    /// In a cell: the driver's projection reads the log through `&mut`.
    driver: RefCell<Driver<MemoryLog>>,
    /// What the binding found: reported with every view.
    reports: Vec<String>,
    reading: PhantomData<fn() -> R>,
}

/// The scripted supplier, as the driver takes it.
fn scripted() -> steadfast_log::Supplier {
    Box::new(|_, function, args| supplier(function, args))
}

/// Opens `log` again: a handle on the same records.
fn reopen(log: &MemoryLog) -> steadfast_log::Reopen<MemoryLog> {
    let log = log.clone();
    Box::new(move || Ok(log.clone()))
}

impl<R> Clone for DriverRuntime<R> {
    /// An independent copy: a fork of the log, the driver forked over it.
    fn clone(&self) -> Self {
        let log = self.log.fork();
        let driver = self
            .driver
            .borrow()
            .fork(reopen(&log), scripted())
            .expect("a fork of the in-memory log opens");
        DriverRuntime {
            names: std::sync::Arc::clone(&self.names),
            ranked_offsets: self.ranked_offsets,
            tracks_offsets: self.tracks_offsets,
            log,
            driver: RefCell::new(driver),
            reports: self.reports.clone(),
            reading: PhantomData,
        }
    }
}

impl<R: Reading> DriverRuntime<R> {
    fn new(m: &Durable) -> Self {
        let names = Names::new(&m.bounds);
        let log = MemoryLog::new(names.partitions);
        let mut driver = Driver::new(names.defs(), reopen(&log), scripted())
            .expect("the in-memory log opens and the action names are distinct");
        // The model has no fence steps: its log holds the action states alone.
        driver.set_fencing(false);
        DriverRuntime {
            names: std::sync::Arc::new(names),
            ranked_offsets: m.bounds.compact_offsets,
            tracks_offsets: m.design.rewinds_marker(),
            log,
            driver: RefCell::new(driver),
            reports: Vec::new(),
            reading: PhantomData,
        }
    }

    /// The driver.
    pub fn driver(&mut self) -> &mut Driver<MemoryLog> {
        self.driver.get_mut()
    }

    /// The driver's projection as the binding reads it.
    pub fn projection(&self) -> Result<Projection, DriverError> {
        let mut p = self.driver.borrow_mut().projection()?;
        R::read(&mut p);
        Ok(p)
    }
}

/// What the driver binding compares: the stepwise binding's view, and per durable call
/// the supplier runs whose result record never reached the log.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DriverView {
    /// The view both other durable bindings compare.
    #[serde(flatten)]
    pub view: View,
    /// Per durable call with such runs, the supplier runs whose result never landed.
    pub unlanded_runs: Vec<CallView>,
}

/// The model's view of `s`: the stepwise binding's, and the unlanded runs.
fn model_view(m: &Durable, s: &DriverState) -> DriverView {
    DriverView {
        view: DurableBinding::model_view(m, &s.model),
        unlanded_runs: s
            .lost
            .iter()
            .map(|l| CallView {
                state_key: StateKeyView {
                    key: l.state_key.0,
                    seq: u64::from(l.state_key.1),
                    action: l.state_key.2,
                },
                call: u64::from(l.call),
                runs: u64::from(l.runs),
            })
            .collect(),
    }
}

/// The binding of [`DriverDurable`] to the driver, generic over how its projection is
/// read.
pub struct DriverConformant<R>(PhantomData<R>);

/// The durable model bound to the blocking driver, its projection as reported.
pub type DriverBinding = DriverConformant<AsReported>;

/// The fault the memory log injects for a run ending at `fault`.
fn send_fault(fault: Action) -> Option<SendFault> {
    match fault {
        Action::FailPut { landed: false, .. } => Some(SendFault::FailBeforeLanding),
        Action::FailPut { landed: true, .. } => Some(SendFault::FailAfterLanding),
        Action::Crash { landed: false } => Some(SendFault::Hang),
        Action::Crash { landed: true } => Some(SendFault::LandUnacked),
        _ => None,
    }
}

/// Why the driver refused a step.
pub type Rejection = crate::Rejection<DriverError>;

impl<R: Reading> DriverConformant<R> {
    /// Drives the driver through the one call that realises `e`.
    fn drive(
        m: &DriverDurable,
        rt: &mut DriverRuntime<R>,
        before: &DriverState,
        e: &EagerStep,
    ) -> Result<(), Rejection> {
        let s = &before.model;
        let Some((&first, rest)) = e.steps.split_first() else {
            return Err("an event with no model step".into());
        };
        match first {
            Action::DeliverInput(_) | Action::CallSupplier(_) | Action::Restore => {
                Self::run(m, rt, s, first, e)
            }
            _ if !rest.is_empty() => Err(format!("{first:?} starts no driver event").into()),
            _ => Self::between_runs(rt, s, first),
        }
    }

    /// A step between runs: a checkpoint, its completion or abort, or a crash while no
    /// put waits.
    fn between_runs(
        rt: &mut DriverRuntime<R>,
        s: &model::State,
        step: Action,
    ) -> Result<(), Rejection> {
        let driver = rt.driver.get_mut();
        match step {
            Action::TriggerCheckpoint => {
                let id = driver.checkpoint().map_err(Rejection::Runtime)?;
                let want = u64::from(s.checkpoints) + 1;
                if id != want {
                    rt.reports
                        .push(format!("the driver numbers checkpoint {want} as {id}"));
                }
                Ok(())
            }
            Action::CompleteCheckpoint(id) => match driver.complete_checkpoint(u64::from(id)) {
                Ok(true) => Ok(()),
                Ok(false) => Err(format!("the driver knows no checkpoint {id}").into()),
                Err(e) => Err(Rejection::Runtime(e)),
            },
            Action::AbortCheckpoint(id) => match driver.abort_checkpoint(u64::from(id)) {
                Ok(true) => Ok(()),
                Ok(false) => Err(format!("the operator knows no checkpoint {id}").into()),
                Err(e) => Err(Rejection::Runtime(e)),
            },
            Action::Crash { landed: false } => {
                driver.crash();
                Ok(())
            }
            other => Err(format!("{other:?} has no driver counterpart").into()),
        }
    }

    /// A run of `e`, started by its `first` step: one driver call, with the fault that
    /// ends the run injected at its last send (a crash cancels the call's wait).
    fn run(
        m: &DriverDurable,
        rt: &mut DriverRuntime<R>,
        s: &model::State,
        first: Action,
        e: &EagerStep,
    ) -> Result<(), Rejection> {
        let fault = e.fault();
        let puts = e.puts();
        let injected = fault.and_then(send_fault);
        if let Some(f) = injected {
            rt.log.inject_send_fault_after(puts - 1, f);
        }
        let crashes = matches!(fault, Some(Action::Crash { .. }));
        let sent = rt.log.send_count();
        let result = match first {
            Action::DeliverInput(k) => {
                let driver = rt.driver.get_mut();
                if crashes {
                    driver.cancellation().cancel();
                }
                driver
                    .input(
                        rt.names.keys[usize::from(k)].clone(),
                        json!(s.next_seq[usize::from(k)]),
                    )
                    .map_err(Rejection::Runtime)
            }
            Action::CallSupplier(k) => {
                if crashes {
                    rt.driver.get_mut().cancellation().cancel();
                }
                Self::call(rt, s, k)
            }
            Action::Restore => Self::restore(m, rt, s, crashes),
            other => return Err(format!("{other:?} starts no driver event").into()),
        };
        let made = (rt.log.send_count() - sent) as usize;
        if made != puts {
            rt.reports.push(format!(
                "the model's run makes {puts} puts; the driver sent {made}"
            ));
        }
        let left = rt.log.queued_faults();
        if !left.is_empty() {
            rt.reports
                .push(format!("faults {left:?} left for no send of the run"));
        }
        Self::run_ended(rt, fault, result)
    }

    /// `Restore`: the driver restores (cancelled when a crash ends the run), its rebuild
    /// checked against the model's.
    fn restore(
        m: &DriverDurable,
        rt: &mut DriverRuntime<R>,
        s: &model::State,
        crashes: bool,
    ) -> Result<(), Rejection> {
        let driver = rt.driver.get_mut();
        let restored = if crashes {
            driver.restore_cancelled()
        } else {
            driver.restore()
        };
        match restored {
            Ok(report) => {
                Self::check_rebuild(m, rt, s, report.as_ref());
                Ok(())
            }
            Err(e) => {
                if let Some(report) = rt.driver.get_mut().last_rebuild().cloned() {
                    Self::check_rebuild(m, rt, s, Some(&report));
                }
                Err(Rejection::Runtime(e))
            }
        }
    }

    /// How a run with `fault` ended, from the driver call's `result`: a run without one
    /// returns normally; a failed put fails the call with the store's error; a crash
    /// cancels the call's wait, and the driver crashes.
    fn run_ended(
        rt: &mut DriverRuntime<R>,
        fault: Option<Action>,
        result: Result<(), Rejection>,
    ) -> Result<(), Rejection> {
        match (fault, result) {
            (None, result) => result,
            (
                Some(Action::FailPut { .. }),
                Err(Rejection::Runtime(DriverError::Operator(
                    steadfast::durable::OperatorError::PutFailed { .. },
                ))),
            ) => Ok(()),
            (Some(Action::Crash { .. }), Err(Rejection::Runtime(DriverError::Cancelled))) => {
                rt.driver.get_mut().crash();
                Ok(())
            }
            (Some(f), Err(e)) => {
                Err(format!("the run ends at {f:?}; the driver reports: {e}").into())
            }
            (Some(f), Ok(())) => {
                Err(format!("the run ends at {f:?}; the driver's call returned normally").into())
            }
        }
    }

    /// `CallSupplier(k)`: the driver runs and delivers the call the operator asked for,
    /// which must be the model's.
    fn call(rt: &mut DriverRuntime<R>, s: &model::State, k: u8) -> Result<(), Rejection> {
        let model::Phase::AtCall(i) = s.phase[usize::from(k)] else {
            return Err(format!("key {k} is not at a call").into());
        };
        let want = rt.names.state_key(s.head(usize::from(k)));
        let driver = rt.driver.get_mut();
        let at = driver
            .requested_calls()
            .iter()
            .position(|r| r.call.key == want.key)
            .ok_or_else(|| format!("the driver holds no call of key {k}"))?;
        let got = &driver.requested_calls()[at].call;
        if got.state_key() != want || got.index != u32::from(i) {
            return Err(format!(
                "the operator asks for {:?} call {}, the model calls the supplier for {want:?} call {i}",
                got.state_key(),
                got.index
            )
            .into());
        }
        driver.call(at).map_err(Rejection::Runtime)
    }

    /// The rebuild's records scanned and states loaded against the model's restore.
    fn check_rebuild(
        m: &DriverDurable,
        rt: &mut DriverRuntime<R>,
        s: &model::State,
        report: Option<&RebuildReport>,
    ) {
        let model = m.model();
        let (Some(c), Some(after)) = (s.completed, model.next_state(s, Action::Restore)) else {
            if report.is_some() {
                rt.reports
                    .push("a restore without a checkpoint reports a rebuild".to_string());
            }
            return;
        };
        let Some(r) = report else {
            rt.reports
                .push("a restore from a checkpoint reports no rebuild".to_string());
            return;
        };
        let want_scanned: u64 = (0..model.bounds.partitions as usize)
            .map(|p| u64::from(s.log_len[p] - DurableBinding::replay_from(model, &c, 0, p)))
            .sum();
        let want_loaded = after.cache.entries().count() as u64;
        let scanned_ok = model.bounds.compact_offsets || r.records_scanned == want_scanned;
        if !scanned_ok || r.states_loaded != want_loaded {
            rt.reports.push(format!(
                "rebuild reports {} records scanned and {} states loaded, the model replays \
                 {want_scanned} and loads {want_loaded}",
                r.records_scanned, r.states_loaded
            ));
        }
    }
}

impl<R: Reading> Binding for DriverConformant<R> {
    type Model = DriverDurable;
    type State = DriverState;
    type Action = EagerStep;
    type Runtime = DriverRuntime<R>;
    type Projection = DriverView;

    fn supports(m: &DriverDurable) -> Result<(), String> {
        super::supports(m.model())
    }

    fn start(m: &DriverDurable, _init: &DriverState) -> DriverRuntime<R> {
        DriverRuntime::new(m.model())
    }

    fn model_view(m: &DriverDurable, s: &DriverState) -> DriverView {
        model_view(m.model(), s)
    }

    fn runtime_view(rt: &DriverRuntime<R>) -> DriverView {
        rt.view()
    }

    type Rejection = Rejection;

    fn step(
        m: &DriverDurable,
        rt: &mut DriverRuntime<R>,
        before: &DriverState,
        e: &EagerStep,
    ) -> Result<(), Rejection> {
        Self::drive(m, rt, before, e)
    }

    /// The model's forbidden events that have a driver call: every call after a failed
    /// put (an input, a checkpoint, each call the operator asked for) and completing a
    /// checkpoint that is not pending. (`Event::Continue` and stale call outcomes have
    /// none: the driver hands the operator neither.)
    fn probes(m: &DriverDurable, s: &DriverState) -> Vec<EagerStep> {
        let s = &s.model;
        let mut probes: Vec<Action> = DurableBinding::forbidden(m.model(), s)
            .into_iter()
            .filter(|a| !matches!(a, Action::StartAction(_) | Action::AckPut(_)))
            .collect();
        if s.failed {
            probes.extend(
                (0..m.model().bounds.keys)
                    .filter(|&k| {
                        s.puts[usize::from(k)].is_none()
                            && matches!(s.phase[usize::from(k)], model::Phase::AtCall(i) if i < m.model().bounds.calls)
                    })
                    .map(Action::CallSupplier),
            );
        }
        probes
            .into_iter()
            .map(|a| EagerStep { steps: vec![a] })
            .collect()
    }

    fn describe(rt: &DriverRuntime<R>) -> String {
        let driver = rt.driver.borrow();
        match driver.operator() {
            Some(op) => format!("{op:?}; {:?}", rt.log),
            None => format!("no operator (crashed, not restored); {:?}", rt.log),
        }
    }

    fn counterpart(kind: &str) -> &'static str {
        match kind.split(" + ").next().unwrap_or(kind) {
            "DeliverInput" => "Driver::input (the put of each step answered by the memory log)",
            "CallSupplier" => "Driver::call of the operator's request (run_supplier, deliver)",
            "Restore" => {
                "Driver::restore (restore_cancelled when a crash ends it): rebuild from the log, \
                 Event::Resume, the source's inputs after the checkpoint re-delivered"
            }
            "TriggerCheckpoint" => "Driver::checkpoint",
            "CompleteCheckpoint" => "Driver::complete_checkpoint",
            "AbortCheckpoint" => "Driver::abort_checkpoint",
            "Crash" => "Driver::crash (after DriverError::Cancelled when a put waits)",
            _ => "(unknown action kind)",
        }
    }

    fn kind(e: &EagerStep) -> String {
        <EagerBinding as Binding>::kind(e)
    }
}
