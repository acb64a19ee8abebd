//! Events per second of the durable action operator (flink-agents issue 1158's fixed
//! design), sans-IO with no log at all: an input that starts an action making one
//! external call, and the call's return, which saves the result (a put: an append
//! effect, then its acknowledgement as an event), finishes the action (a second put)
//! and emits the output. A "return" is those three events: the call's return and the
//! two acknowledgements, with offsets counted here. Eager scheduling, as a production
//! driver runs it, with one effects buffer kept from event to event
//! ([`Operator::handle_into`]). One operator serves many samples and is replaced (outside
//! the timed part) every `CHUNK` inputs, so its cache stays bounded.

use std::cell::RefCell;
use std::time::{Duration, Instant};

use criterion::{criterion_main, Criterion, Throughput};
use serde_json::json;
use steadfast::durable::{ActionDef, CallChain, CallOutcome, Effect, Event, Operator};

mod support;
use support::call_return;

/// Inputs per operator.
const CHUNK: u64 = 20_000;

struct Bench {
    op: Operator,
    inputs: u64,
    /// The next offset of each of the four partitions.
    offsets: [u64; 4],
    keys: u64,
    /// The effects of the last event.
    effects: Vec<Effect>,
}

impl Bench {
    fn new(keys: u64) -> Self {
        Bench {
            op: Operator::new(
                vec![ActionDef::new("enrich", CallChain::new(["lookup"]))],
                4,
            )
            .expect("one action"),
            inputs: 0,
            offsets: [0; 4],
            keys,
            effects: Vec::with_capacity(4),
        }
    }

    /// Runs `iters` returns in batches of one per key: the inputs of a batch (untimed)
    /// leave a call outstanding on each of its keys, then the batch's returns are timed
    /// in one window. Timing each return alone, as [`Bench::run`] does, adds the clock's
    /// own cost to every sample (about 35 ns on this project's machines, whose clock is
    /// a virtual machine's).
    fn run_batched(&mut self, iters: u64) -> Duration {
        let mut total = Duration::ZERO;
        let mut done = 0;
        let mut returns = Vec::with_capacity(self.keys as usize);
        while done < iters {
            if self.inputs + self.keys > CHUNK {
                *self = Bench::new(self.keys);
            }
            let batch = self.keys.min(iters - done);
            // Consecutive inputs, so a batch's keys are distinct.
            for _ in 0..batch {
                returns.push(self.input().1);
            }
            let effects = &mut self.effects;
            let start = Instant::now();
            for back in returns.drain(..) {
                call_return(&mut self.op, effects, &mut self.offsets, back);
            }
            total += start.elapsed();
            assert!(matches!(effects.as_slice(), [Effect::Emit { .. }]));
            done += batch;
        }
        total
    }

    /// Hands the operator the next input, which asks for its action's call; returns the
    /// time the input event took and that call's return, for the caller to deliver.
    fn input(&mut self) -> (Duration, Event) {
        let i = self.inputs;
        self.inputs += 1;
        let event = Event::Input {
            key: format!("user-{}", i % self.keys),
            value: json!(i),
        };
        let start = Instant::now();
        self.effects.clear();
        self.op
            .handle_into(event, &mut self.effects)
            .expect("input accepted");
        let took = start.elapsed();
        let Some(Effect::Call { call, .. }) = self.effects.pop() else {
            panic!("the action asks for its call");
        };
        let back = Event::CallReturned {
            call,
            outcome: CallOutcome::Value(json!(i)),
        };
        (took, back)
    }

    /// Runs `iters` inputs and times the input events, the return events, or both.
    fn run(&mut self, iters: u64, time_input: bool, time_return: bool) -> Duration {
        let mut total = Duration::ZERO;
        for _ in 0..iters {
            if self.inputs == CHUNK {
                *self = Bench::new(self.keys);
            }
            let (took, back) = self.input();
            if time_input {
                total += took;
            }
            let effects = &mut self.effects;
            let start = Instant::now();
            call_return(&mut self.op, effects, &mut self.offsets, back);
            if time_return {
                total += start.elapsed();
            }
            assert!(matches!(effects.as_slice(), [Effect::Emit { .. }]));
        }
        total
    }
}

fn events(c: &mut Criterion) {
    let mut g = c.benchmark_group("operator");
    for keys in [64, CHUNK] {
        let bench = RefCell::new(Bench::new(keys));
        g.throughput(Throughput::Elements(2));
        g.bench_function(format!("{keys}_keys/input_and_return"), |b| {
            b.iter_custom(|iters| bench.borrow_mut().run(iters, true, true))
        });
        g.throughput(Throughput::Elements(1));
        g.bench_function(format!("{keys}_keys/input"), |b| {
            b.iter_custom(|iters| bench.borrow_mut().run(iters, true, false))
        });
        g.bench_function(format!("{keys}_keys/return_with_two_puts"), |b| {
            b.iter_custom(|iters| bench.borrow_mut().run(iters, false, true))
        });
        g.bench_function(format!("{keys}_keys/returns_in_batches"), |b| {
            b.iter_custom(|iters| bench.borrow_mut().run_batched(iters))
        });
    }
    g.finish();
}

/// The benchmark group; criterion's macro writes its function bare.
mod group {
    #![allow(missing_docs, unreachable_pub)]
    use criterion::criterion_group;

    criterion_group!(benches, super::events);
}
criterion_main!(group::benches);
