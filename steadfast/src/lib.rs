//! steadfast: production sans-IO state machines for the Flink leadership lifecycle
//! (FLINK-39704) and for durable actions with saved call results (flink-agents 1158).
//!
//! Each machine takes events in and returns effects out; drivers outside execute effects
//! (the durable log and its blocking driver are the `steadfast-log` crate). Nothing here
//! does IO, starts a thread or touches the file system.
pub mod durable;
pub mod leadership;
