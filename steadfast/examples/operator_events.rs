//! The operator bench's event pattern without the timing harness, for instruction
//! counts (flink-agents issue 1158's fixed operator, eager scheduling, no log):
//! 20,000 inputs over `KEYS` keys (first argument, default 64), each starting one
//! action that makes one call, then that call's return with the acknowledgements of
//! its two durable puts (the output follows the second). The effects go to one buffer
//! kept from event to event ([`Operator::handle_into`]), as a driver keeps one. Each
//! event kind goes through its own function that is never inlined, so that callgrind
//! can count one kind alone:
//!
//! ```text
//! cargo build --release -p steadfast --example operator_events
//! valgrind --tool=callgrind --toggle-collect='operator_events::on_return' \
//!     target/release/examples/operator_events 64
//! ```
//!
//! (`on_input` counts the input events.) The total divided by 20,000 is the cost of
//! one event.

use serde_json::json;
use steadfast::durable::{ActionDef, CallChain, CallOutcome, Effect, Event, Operator};

#[path = "../benches/support/mod.rs"]
mod support;

/// The effects of one event, in a buffer kept from event to event.
type Effects = Vec<Effect>;

/// Input and return pairs run.
const INPUTS: u64 = 20_000;

#[inline(never)]
fn on_input(op: &mut Operator, effects: &mut Effects, event: Event) {
    effects.clear();
    op.handle_into(event, effects).expect("input accepted");
}

#[inline(never)]
fn on_return(op: &mut Operator, effects: &mut Effects, offsets: &mut [u64; 4], event: Event) {
    support::call_return(op, effects, offsets, event);
}

fn main() {
    let keys: u64 = match std::env::args().nth(1) {
        None => 64,
        Some(arg) => match arg.parse() {
            Ok(n) if n > 0 => n,
            _ => {
                eprintln!("usage: operator_events [KEYS > 0], got {arg:?}");
                std::process::exit(2);
            }
        },
    };
    let mut op = Operator::new(
        vec![ActionDef::new("enrich", CallChain::new(["lookup"]))],
        4,
    )
    .expect("one action");
    let mut offsets = [0u64; 4];
    let mut effects = Effects::with_capacity(4);
    for i in 0..INPUTS {
        let input = Event::Input {
            key: format!("user-{}", i % keys),
            value: json!(i),
        };
        on_input(&mut op, &mut effects, input);
        let Some(Effect::Call { call, .. }) = effects.pop() else {
            panic!("the action asks for its call");
        };
        let back = Event::CallReturned {
            call,
            outcome: CallOutcome::Value(json!(i)),
        };
        on_return(&mut op, &mut effects, &mut offsets, back);
        assert!(matches!(effects.as_slice(), [Effect::Emit { .. }]));
    }
}
