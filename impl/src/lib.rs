//! steadfast: production sans-IO state machines for the Flink leadership lifecycle
//! (FLINK-39704) and for durable actions with saved call results (flink-agents 1158).
//!
//! Each machine takes events in and returns effects out; drivers outside execute effects.
pub mod durable;
pub mod leadership;

// The README's Rust example is compiled and run as a doctest, so it cannot go stale.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeExample;
