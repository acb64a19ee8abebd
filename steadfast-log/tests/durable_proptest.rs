//! Random runs of inputs, supplier runs, deliveries, checkpoints, send faults,
//! crashes and restores, over the in-memory log and the file log, checking the two
//! promises of the fix for flink-agents issue 1158:
//! - call at most once: per durable call, supplier runs <= 1 + runs whose result
//!   record never reached the log;
//! - same output: the outputs committed per key equal a failure-free run's.

use std::collections::BTreeMap;

use proptest::prelude::*;
use serde_json::json;
use steadfast::durable::{ActionDef, CallChain, CallOutcome, CallRef, Datum, StateKey};
use steadfast_log::{Driver, FileLog, FileLogOptions, Log, MemoryLog, SendFault};

#[derive(Clone, Debug)]
enum Op {
    Input(u8, u8),
    Call(u8),
    RunSupplier(u8),
    Deliver(u8),
    Checkpoint,
    Complete,
    Abort,
    CrashRestore,
    Fault(SendFault),
}

fn op_strategy(with_faults: bool) -> impl Strategy<Value = Op> {
    let fault = prop_oneof![
        Just(SendFault::FailBeforeLanding),
        Just(SendFault::FailAfterLanding),
        Just(SendFault::Hang),
        Just(SendFault::LandUnacked),
    ];
    prop_oneof![
        6 => (0u8..3, 0u8..4).prop_map(|(k, v)| Op::Input(k, v)),
        8 => any::<u8>().prop_map(Op::Call),
        2 => any::<u8>().prop_map(Op::RunSupplier),
        2 => any::<u8>().prop_map(Op::Deliver),
        3 => Just(Op::Checkpoint),
        3 => Just(Op::Complete),
        1 => Just(Op::Abort),
        2 => Just(Op::CrashRestore),
        (if with_faults { 2 } else { 0 }) => fault.prop_map(Op::Fault),
    ]
}

fn actions() -> Vec<ActionDef> {
    vec![
        ActionDef::new("a", CallChain::new(["f", "g"])),
        ActionDef::new("b", CallChain::new(["h"])),
    ]
}

fn supplier(_: &CallRef, function: &str, args: &Datum) -> CallOutcome {
    CallOutcome::Value(json!(format!("{function}{args}")))
}

type Outputs = BTreeMap<String, Vec<(u64, Vec<Datum>)>>;

fn by_key(records: &[steadfast_log::OutputRecord]) -> Outputs {
    let mut out = Outputs::new();
    for r in records {
        out.entry(r.key.clone())
            .or_default()
            .push((r.seq, r.outputs.clone()));
    }
    out
}

fn reference(inputs: &[(String, Datum)]) -> Outputs {
    let log = MemoryLog::new(2);
    let mut d = Driver::new(
        actions(),
        Box::new(move || Ok(log.clone())),
        Box::new(supplier),
    )
    .unwrap();
    for (k, v) in inputs {
        d.input(k.clone(), v.clone()).unwrap();
        d.run_until_idle().unwrap();
    }
    by_key(d.emitted())
}

/// Before anything that may put, make sure a queued hang-like fault cannot block
/// forever: the put then returns `Cancelled` instead.
fn arm_cancel<L: Log + Clone>(d: &Driver<L>, faults: Option<&MemoryLog>) {
    if let (Some(log), Some(op)) = (faults, d.operator()) {
        if log
            .queued_faults()
            .iter()
            .any(|f| matches!(f, SendFault::Hang | SendFault::LandUnacked))
        {
            let _ = op;
            d.cancellation().cancel();
        }
    }
}

fn restore_until_up<L: Log + Clone>(d: &mut Driver<L>, faults: Option<&MemoryLog>) {
    for _ in 0..20 {
        // Resume may put (an action whose calls are all saved finishes at once),
        // so a queued hang-like fault must meet an already cancelled task.
        let hang = faults.is_some_and(|log| {
            log.queued_faults()
                .iter()
                .any(|f| matches!(f, SendFault::Hang | SendFault::LandUnacked))
        });
        let r = if hang {
            d.restore_cancelled()
        } else {
            d.restore()
        };
        if r.is_ok() {
            return;
        }
    }
    panic!("operator did not come back up");
}

/// Every cached state is the state of the log record at its tracked offset.
fn cache_matches_log<L: Log + Clone>(d: &mut Driver<L>) -> Result<(), TestCaseError> {
    let p = d.projection().unwrap();
    for cached in &p.cache {
        let (partition, offset) = cached.offset.expect("cached states have an offset");
        let record = p.log[partition as usize]
            .iter()
            .find(|r| r.offset == offset)
            .expect("tracked offset is in the log");
        prop_assert_eq!(&record.state_key, &cached.state_key);
        prop_assert_eq!(&record.state, &cached.state);
    }
    Ok(())
}

/// The per-key and per-state lookups ([`Operator::activity`],
/// [`ActionStateStore::offset_of`]) agree with the lists and maps they stand for.
fn lookups_agree_with_lists<L: Log + Clone>(d: &Driver<L>) -> Result<(), TestCaseError> {
    let Some(op) = d.operator() else {
        return Ok(());
    };
    let ready = op.ready_keys();
    let in_progress = op.keys_in_progress();
    let calls = op.outstanding_calls();
    let mut keys: Vec<String> = op.keys().keys().cloned().collect();
    keys.extend(in_progress.iter().cloned());
    keys.push("never-seen".into());
    for k in &keys {
        let activity = op.activity(k);
        prop_assert_eq!(activity.ready, ready.contains(k), "ready, key {}", k);
        prop_assert_eq!(
            activity.in_progress,
            in_progress.contains(k),
            "in progress, key {}",
            k
        );
        prop_assert_eq!(
            activity.awaiting,
            calls.iter().find(|c| &c.key == k).map(|c| c.index),
            "awaiting, key {}",
            k
        );
    }
    for c in &calls {
        prop_assert!(keys.contains(&c.key), "a call of unlisted key {}", c.key);
    }
    let store = op.store();
    let offsets = store.latest_offsets();
    prop_assert_eq!(
        offsets.len(),
        store.cached_len(),
        "one offset per cached state"
    );
    let cache = store.cache();
    for (sk, at) in offsets {
        prop_assert_eq!(store.offset_of(&sk), Some(at));
        prop_assert_eq!(store.entry_of(&sk), Some((&cache[&sk], at.0, at.1)));
    }
    // A state key the store does not hold: a key with one input more than any.
    if let Some(sk) = cache.keys().next() {
        let absent = StateKey {
            seq: sk.seq + 1_000,
            ..sk.clone()
        };
        prop_assert_eq!(store.entry_of(&absent), None);
        prop_assert_eq!(store.offset_of(&absent), None);
    }
    for k in keys.iter().chain(cache.keys().map(|sk| &sk.key)) {
        prop_assert_eq!(
            store.cached_count_of(k),
            cache.keys().filter(|sk| &sk.key == k).count(),
            "cached states of key {}",
            k
        );
    }
    Ok(())
}

fn run<L: Log + Clone>(
    ops: &[Op],
    mut d: Driver<L>,
    faults: Option<&MemoryLog>,
) -> Result<(), TestCaseError> {
    let mut inputs = Vec::new();
    let first = d.checkpoint().unwrap();
    d.complete_checkpoint(first).unwrap();
    let mut pending: Vec<u64> = Vec::new();
    for op in ops {
        arm_cancel(&d, faults);
        let result = match op {
            Op::Input(k, v) => {
                let key = format!("k{k}");
                let value = json!(v);
                inputs.push((key.clone(), value.clone()));
                d.input(key, value)
            }
            Op::Call(i) => match d.requested_calls().len() {
                0 => Ok(()),
                n => d.call(*i as usize % n),
            },
            Op::RunSupplier(i) => match d.requested_calls().len() {
                0 => Ok(()),
                n => d.run_supplier(*i as usize % n),
            },
            Op::Deliver(i) => match d.returned_calls().len() {
                0 => Ok(()),
                n => d.deliver(*i as usize % n),
            },
            Op::Checkpoint => d.checkpoint().map(|id| pending.push(id)),
            Op::Complete => match pending.pop() {
                Some(id) => {
                    pending.clear();
                    d.complete_checkpoint(id).map(|_| ())
                }
                None => Ok(()),
            },
            Op::Abort => match pending.first().copied() {
                Some(id) => {
                    pending.remove(0);
                    d.abort_checkpoint(id).map(|_| ())
                }
                None => Ok(()),
            },
            Op::CrashRestore => {
                pending.clear();
                d.crash();
                restore_until_up(&mut d, faults);
                Ok(())
            }
            Op::Fault(f) => {
                if let Some(log) = faults {
                    log.inject_send_fault(*f);
                }
                Ok(())
            }
        };
        if result.is_err() {
            pending.clear();
            restore_until_up(&mut d, faults);
        }
        cache_matches_log(&mut d)?;
        lookups_agree_with_lists(&d)?;
    }
    // Drain: finish every input, then commit with a last checkpoint.
    let mut settled = false;
    for _ in 0..50 {
        arm_cancel(&d, faults);
        let step = (|| {
            while !d.returned_calls().is_empty() {
                d.deliver(0)?;
            }
            d.run_until_idle()?;
            let id = d.checkpoint()?;
            d.complete_checkpoint(id)?;
            Ok::<_, steadfast_log::DriverError>(())
        })();
        match step {
            Ok(()) if d.requested_calls().is_empty() => {
                settled = true;
                break;
            }
            Ok(()) => {}
            Err(_) => restore_until_up(&mut d, faults),
        }
    }
    prop_assert!(settled, "run did not settle");

    for (call, &runs) in d.supplier_calls() {
        let unlanded = d.unlanded_runs().get(call).copied().unwrap_or(0);
        prop_assert!(
            runs <= 1 + unlanded,
            "supplier of {call:?} ran {runs} times, {unlanded} of them never saved"
        );
    }
    prop_assert_eq!(by_key(d.committed()), reference(&inputs));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn memory_log_calls_at_most_once_and_keeps_output(
        ops in proptest::collection::vec(op_strategy(true), 1..60)
    ) {
        let log = MemoryLog::new(2);
        let handle = log.clone();
        let d = Driver::new(actions(), Box::new(move || Ok(handle.clone())), Box::new(supplier))
            .unwrap();
        run(&ops, d, Some(&log))?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn file_log_calls_at_most_once_and_keeps_output(
        ops in proptest::collection::vec(op_strategy(false), 1..40)
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_path_buf();
        let options = FileLogOptions { partitions: Some(2), segment_bytes: 2048, sync: true };
        let d = Driver::new(
            actions(),
            Box::new(move || FileLog::open(&path, options.clone())),
            Box::new(supplier),
        )
        .unwrap();
        run(&ops, d, None)?;
    }
}
