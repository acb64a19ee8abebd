//! The operator's call-return pattern, shared by the operator bench and the
//! instruction-count example (`steadfast/examples/operator_events.rs`), so that the two
//! measure the same events.

use steadfast::durable::{Effect, Event, Operator};

/// A call's return, then the acknowledgements of its two puts (the result's, then the
/// completion's), with offsets counted per partition; the output is left in `effects`.
pub(crate) fn call_return(
    op: &mut Operator,
    effects: &mut Vec<Effect>,
    offsets: &mut [u64; 4],
    back: Event,
) {
    effects.clear();
    op.handle_into(back, effects).expect("return accepted");
    for _ in 0..2 {
        let ack = match effects.first_mut() {
            Some(Effect::Append { key, put, record }) => {
                let slot = &mut offsets[record.partition as usize];
                let offset = *slot;
                *slot += 1;
                // The driver hands the put's key back with its answer.
                Event::PutAcked {
                    key: std::mem::take(key),
                    put: *put,
                    offset,
                }
            }
            _ => panic!("a put follows: {effects:?}"),
        };
        effects.clear();
        op.handle_into(ack, effects).expect("ack accepted");
    }
}
