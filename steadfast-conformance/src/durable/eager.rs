//! The durable-actions model (flink-agents issue 1158) bound to the operator's production
//! scheduling, [`Scheduling::Eager`]: one event runs a key's work until it waits on a
//! call or has nothing left.
//!
//! One eager event stands for a run of the model's steps: an *external* step (an input
//! delivered, a supplier call returning, a restore) followed by the key's *internal*
//! steps (`StartAction`, `ReuseResult`, `SendPut`, `CompleteAction`, `AckPut` of its
//! put) until none is enabled. [`EagerDurable`] is the model's graph seen at those
//! quiescent points; which steps an event stands for is derived from the model's enabled
//! actions alone ([`Eager::events`]), never from the runtime; the coarse model is the
//! crate's one construction of a grain ([`crate::grain`]).
//!
//! Environment steps the model interleaves are kept where an eager runtime can meet them:
//! checkpoints, crashes and other keys' steps come between events (at quiescent states);
//! a put the run makes may fail (`FailPut`) or the task may die while it waits
//! (`Crash`), each ending the run there. A checkpoint or another key's step inside a run
//! has no eager counterpart: the run holds the task's thread. A crash between two
//! internal steps, with no put in flight, leaves the same state as a crash at the run's
//! next put with its record lost, or at the run's end: only puts change what survives a
//! crash.
//!
//! The runtime, its environment and the projection are the stepwise binding's
//! ([`super::Runtime`], [`super::View`]). The operator answers each put of a run with
//! its effects and waits for the answer, so the binding meets every put in turn: it
//! acknowledges each (the record lands first), and at the run's last put, when the run
//! ends at a fault, fails it or crashes the task instead.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::json;
use stateright::Model;
use steadfast::durable::{Effect, Event, Operator, OperatorError, Scheduling};
use steadfast_model::durable::{self as model, Action, Durable};
use steadfast_model::SettingsError;

use super::{Conformant, Names, Runtime, Variant, View};
use crate::durable::Rejection;
use crate::grain::{Coarse, Grain};
use crate::Binding;

/// One eager event, as the model steps it stands for: the external step first, then the
/// internal steps of the run, the last one possibly a fault at the run's last put.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct EagerStep {
    /// The model's steps, in order.
    pub steps: Vec<Action>,
}

impl fmt::Debug for EagerStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some((first, rest)) = self.steps.split_first() else {
            return write!(f, "(no step)");
        };
        write!(f, "{first:?}")?;
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

impl EagerStep {
    /// The fault that ends the run, if it ends at a failed put or a crash during one.
    pub fn fault(&self) -> Option<Action> {
        match self.steps.as_slice() {
            [_, .., last @ (Action::FailPut { .. } | Action::Crash { .. })] => Some(*last),
            _ => None,
        }
    }

    /// Puts the run sends (result saves and completions), the faulted one included.
    pub fn puts(&self) -> usize {
        self.steps
            .iter()
            .filter(|a| matches!(a, Action::SendPut(_) | Action::CompleteAction(_)))
            .count()
    }
}

/// The eager graph's one property: no key has an internal step enabled.
pub const QUIESCENT: &str = "every key is idle or waits on a call";

/// The eager operator's grain over the durable model ([`Grain`]).
#[derive(Clone, Debug)]
pub struct Eager {
    /// The step-by-step model.
    pub model: Durable,
}

/// The durable model at eager scheduling's grain: its states are the model's states
/// where no key has an internal step enabled, its steps [`EagerStep`]s.
pub type EagerDurable = Coarse<Eager>;

impl Coarse<Eager> {
    /// The eager view of `model`.
    pub fn new(model: Durable) -> EagerDurable {
        Coarse(Eager { model })
    }
}

impl Eager {
    /// A step of key `k` the eager operator takes on its own within a run.
    fn internal(k: u8, a: &Action) -> bool {
        match *a {
            Action::StartAction(j)
            | Action::ReuseResult(j)
            | Action::SendPut(j)
            | Action::CompleteAction(j) => j == k,
            Action::AckPut(j) => j == k,
            _ => false,
        }
    }

    /// The keys an external step sets running, in the order the operator drives them
    /// (`Event::Resume` drives every key in name order, which is key order); `None` for
    /// a step that is not external.
    fn driven_keys(&self, a: &Action) -> Option<Vec<u8>> {
        match *a {
            Action::DeliverInput(k) | Action::CallSupplier(k) => Some(vec![k]),
            Action::Restore => Some((0..self.model.bounds.keys).collect()),
            Action::TriggerCheckpoint
            | Action::CompleteCheckpoint(_)
            | Action::CompleteCheckpointUnnotified(_)
            | Action::AbortCheckpoint(_)
            | Action::LandZombie
            | Action::Crash { .. } => Some(Vec::new()),
            _ => None,
        }
    }

    /// Whether no key has an internal step enabled at `s`.
    pub fn quiescent(&self, s: &model::State) -> bool {
        let mut enabled = Vec::new();
        self.model.actions(s, &mut enabled);
        !(0..self.model.bounds.keys).any(|k| enabled.iter().any(|a| Self::internal(k, a)))
    }

    /// Every eager event out of `s` with the state it ends in: each external step the
    /// model enables, followed by the internal steps of the keys it drives until none is
    /// enabled; at each put the run makes, each fault the model enables there ends a
    /// separate event.
    pub fn events(&self, s: &model::State) -> Vec<(EagerStep, model::State)> {
        let mut out = Vec::new();
        let mut enabled = Vec::new();
        self.model.actions(s, &mut enabled);
        for e in enabled {
            let Some(keys) = self.driven_keys(&e) else {
                continue;
            };
            let Some(next) = self.model.next_state(s, e) else {
                continue;
            };
            self.run(vec![e], next, &keys, &mut out);
        }
        out
    }

    fn run(
        &self,
        mut path: Vec<Action>,
        mut s: model::State,
        keys: &[u8],
        out: &mut Vec<(EagerStep, model::State)>,
    ) {
        let mut enabled = Vec::new();
        for &k in keys {
            loop {
                enabled.clear();
                self.model.actions(&s, &mut enabled);
                if s.puts[k as usize].is_some() {
                    for f in enabled
                        .iter()
                        .filter(|a| matches!(a, Action::FailPut { .. } | Action::Crash { .. }))
                    {
                        if let Some(end) = self.model.next_state(&s, *f) {
                            let mut steps = path.clone();
                            steps.push(*f);
                            out.push((EagerStep { steps }, end));
                        }
                    }
                }
                let mut own = enabled.iter().filter(|a| Self::internal(k, a));
                let Some(&a) = own.next() else { break };
                // Per key the model enables at most one internal step: the run is a path.
                assert!(
                    own.next().is_none(),
                    "key {k} has two internal steps at {s:?}"
                );
                let Some(next) = self.model.next_state(&s, a) else {
                    break;
                };
                path.push(a);
                s = next;
            }
        }
        out.push((EagerStep { steps: path }, s));
    }
}

impl Grain for Eager {
    type Fine = Durable;
    type Step = EagerStep;
    const NAME: &'static str = "durable-eager";
    const SUMMARY: &'static str =
        "durable actions (flink-agents issue 1158) at the eager operator's grain";
    const QUIESCENT: &'static str = QUIESCENT;

    fn of(model: Durable) -> Result<Eager, SettingsError> {
        if model.bounds.concurrent_puts {
            return Err(SettingsError(
                "durable-eager runs one key's work to its end with each put answered in turn, \
                 so it has no concurrent puts (the stepwise `durable` binding checks them)"
                    .to_string(),
            ));
        }
        if model.bounds.subtasks > 1 {
            return Err(SettingsError(
                "durable-eager drives one operator, so it has one subtask; the stepwise \
                 `durable` binding checks `subtasks` 2 and `rescale`"
                    .to_string(),
            ));
        }
        if model.bounds.zombie_sends {
            return Err(SettingsError(
                "durable-eager crashes inside a run, where no send outlives the crash; \
                 the stepwise `durable` binding checks `zombie-sends`"
                    .to_string(),
            ));
        }
        Ok(Eager { model })
    }

    fn fine(&self) -> &Durable {
        &self.model
    }

    fn steps(step: &EagerStep) -> &[Action] {
        &step.steps
    }

    fn events(&self, s: &model::State) -> Vec<(EagerStep, model::State)> {
        Eager::events(self, s)
    }

    fn quiescent(&self, s: &model::State) -> bool {
        Eager::quiescent(self, s)
    }
}

/// How an eager event reaches the operator: production hands it over as is; a test
/// variant may re-introduce a scheduling bug around the unchanged operator.
pub trait Deliver: 'static {
    /// Hands `event` to `op`.
    fn deliver(op: &mut Operator, event: Event) -> Result<Vec<Effect>, OperatorError> {
        op.handle(event)
    }
}

/// The production operator, events handed over unchanged.
pub struct Production;

impl Deliver for Production {}

/// The runtime variant of the eager binding: production answers, delivery `D`.
pub struct Planned<D>(PhantomData<D>);

impl<D: Deliver> Variant for Planned<D> {}

/// The eager binding, generic over how events are delivered.
pub struct EagerConformant<D>(PhantomData<D>);

/// The durable model at eager grain bound to the production operator's default
/// scheduling.
pub type EagerBinding = EagerConformant<Production>;

type Stepwise<D> = Conformant<Planned<D>>;

impl<D: Deliver> EagerConformant<D> {
    /// Drives the runtime through the one event that realises `e`.
    fn drive(
        m: &EagerDurable,
        rt: &mut Runtime<Planned<D>>,
        before: &model::State,
        e: &EagerStep,
    ) -> Result<(), Rejection> {
        let Some((&first, rest)) = e.steps.split_first() else {
            return Err("an eager step with no model step".into());
        };
        let event = match first {
            Action::DeliverInput(k) => Event::Input {
                key: rt.names.keys[k as usize].clone(),
                value: json!(before.next_seq[k as usize]),
            },
            Action::CallSupplier(k) => {
                // Checks the operator asked for the model's call, runs the supplier and
                // holds its outcome, as the stepwise binding does.
                Stepwise::<D>::drive(&m.model, rt, before, &first)?;
                let (call, outcome) = Arc::make_mut(&mut rt.returned)
                    .remove(&k)
                    .ok_or_else(|| format!("no call outcome of key {k} to deliver"))?;
                Event::CallReturned { call, outcome }
            }
            Action::Restore => {
                Stepwise::<D>::drive(&m.model, rt, before, &first)?;
                Event::Resume
            }
            // Steps between events (checkpoints, crashes) and probes: one runtime call
            // each, as in the stepwise binding.
            _ if rest.is_empty() => return Stepwise::<D>::drive(&m.model, rt, before, &first),
            _ => return Err(format!("{first:?} starts no eager run").into()),
        };
        let fault = e.fault();
        let puts = e.puts();
        let effects = D::deliver(rt.op()?, event).map_err(Rejection::Runtime)?;
        rt.apply(effects)?;
        let mut made = 0;
        // Puts are sequential here (`build` refuses concurrent ones): at most one is in
        // flight.
        loop {
            let Some(put) = rt.puts_in_flight().next().cloned() else {
                break;
            };
            made += 1;
            match fault {
                Some(Action::FailPut { key, landed }) if made == puts => {
                    rt.fail(key, landed)?;
                    break;
                }
                Some(Action::Crash { landed }) if made == puts => {
                    if landed {
                        rt.land(put.k)?;
                    }
                    rt.abort_checkpoints();
                    rt.crash();
                    break;
                }
                _ => {}
            }
            let offset = rt.land(put.k)?;
            rt.in_flight[usize::from(put.k)] = None;
            let ack = Event::PutAcked {
                key: rt.names.keys[usize::from(put.k)].clone(),
                put: put.put,
                offset,
            };
            let effects = D::deliver(rt.op()?, ack).map_err(Rejection::Runtime)?;
            rt.apply(effects)?;
        }
        if made != puts {
            rt.reports.push(format!(
                "the model's run makes {puts} puts; the event made {made}"
            ));
        }
        Ok(())
    }
}

impl<D: Deliver> Binding for EagerConformant<D> {
    type Model = EagerDurable;
    type State = model::State;
    type Action = EagerStep;
    type Runtime = Runtime<Planned<D>>;
    type Projection = View;

    fn supports(m: &EagerDurable) -> Result<(), String> {
        super::supports(&m.model)
    }

    fn start(m: &EagerDurable, _init: &model::State) -> Runtime<Planned<D>> {
        let b = &m.model.bounds;
        Runtime::new(
            Names::new(b),
            b.compact_offsets,
            m.model.design.rewinds_marker(),
            Scheduling::Eager,
        )
    }

    fn model_view(m: &EagerDurable, s: &model::State) -> View {
        Stepwise::<D>::model_view(&m.model, s)
    }

    fn runtime_view(rt: &Runtime<Planned<D>>) -> View {
        Stepwise::<D>::runtime_view(rt)
    }

    fn model_view_into(m: &EagerDurable, s: &model::State, out: &mut View) {
        Stepwise::<D>::model_view_into(&m.model, s, out);
    }

    fn runtime_view_into(rt: &Runtime<Planned<D>>, out: &mut View) {
        Stepwise::<D>::runtime_view_into(rt, out);
    }

    type Rejection = Rejection;

    fn step(
        m: &EagerDurable,
        rt: &mut Runtime<Planned<D>>,
        before: &model::State,
        e: &EagerStep,
    ) -> Result<(), Rejection> {
        Self::drive(m, rt, before, e)
    }

    /// The stepwise binding's probes: at a quiescent state every key is idle or waits
    /// on a call, so `Event::Continue` must be refused for each; stale call outcomes,
    /// completing an unknown checkpoint and events after a failed put likewise.
    fn probes(m: &EagerDurable, s: &model::State) -> Vec<EagerStep> {
        Stepwise::<D>::forbidden(&m.model, s)
            .into_iter()
            .map(|a| EagerStep { steps: vec![a] })
            .collect()
    }

    fn describe(runtime: &Self::Runtime) -> String {
        Stepwise::<D>::describe(runtime)
    }

    fn counterpart(kind: &str) -> &'static str {
        match kind.split(" + ").next().unwrap_or(kind) {
            "DeliverInput" => "Event::Input, then Event::PutAcked per put of the run",
            "CallSupplier" => {
                "Effect::Call run by the supplier, Event::CallReturned, then Event::PutAcked per put"
            }
            "Restore" => "Operator::restore and Event::Resume, then Event::PutAcked per put",
            other => super::counterpart(other),
        }
    }

    /// The external step's kind, and the fault's when the run ends at one.
    fn kind(e: &EagerStep) -> String {
        let name = |a: &Action| Stepwise::<D>::kind(a);
        match (e.steps.first(), e.fault()) {
            (Some(first), Some(f)) => format!("{} + {}", name(first), name(&f)),
            (Some(first), None) => name(first),
            (None, _) => String::new(),
        }
    }
}
