//! Trace validation of concurrent durable runs: every log of the fixed operator is a
//! behaviour of the model, each seed bug of flink-agents issue 1158 put back into the
//! operator is rejected at the event where its consequence shows, and corrupted logs are
//! rejected at the corrupted line.

use std::fs;
use std::path::{Path, PathBuf};

use steadfast::durable::Defect;
use steadfast_conformance::validate::{self, Options, Validation, Verdict};
use steadfast_sim::durable::{run, Config, Outcome};

/// One run in `dir`: its log's path and what it did.
fn simulate(dir: &Path, config: &Config) -> (PathBuf, Outcome) {
    let data = dir.join(format!("durable-{}.data", config.seed));
    fs::create_dir(&data).unwrap();
    let log = dir.join(format!("durable-{}.ndjson", config.seed));
    let outcome = run(config, &log, &data).unwrap_or_else(|e| panic!("seed {}: {e}", config.seed));
    fs::remove_dir_all(&data).unwrap();
    (log, outcome)
}

fn check(text: &str) -> Validation {
    validate::validate(text.as_bytes(), Options::default()).expect("the log is readable")
}

fn seeded(seed: u64, defects: &[Defect]) -> Config {
    Config {
        seed,
        defects: defects.to_vec(),
        ..Config::default()
    }
}

/// The largest bounds the driver and the model share.
fn largest(seed: u64) -> Config {
    Config {
        seed,
        ..Config::largest()
    }
}

#[test]
fn a_hundred_faulty_runs_are_all_explained_by_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let mut reused = 0;
    let mut total = Outcome::default();
    for seed in 0..100 {
        let (log, outcome) = simulate(dir.path(), &seeded(seed, &[]));
        let text = fs::read_to_string(&log).unwrap();
        let v = check(&text);
        assert_eq!(v.model, "durable");
        assert!(v.is_valid(), "seed {seed}: {:?}", v.verdict);
        assert!(v.violations.is_empty(), "seed {seed}: {:?}", v.violations);
        assert_eq!(
            v.events,
            outcome.events - 1,
            "seed {seed}: every event but the header"
        );
        if text.contains(r#""event":"call_reused""#) {
            reused += 1;
        }
        total.crashes += outcome.crashes;
        total.forced_crashes += outcome.forced_crashes;
        total.checkpoints_completed += outcome.checkpoints_completed;
        total.failures_before_landing += outcome.failures_before_landing;
        total.failures_after_landing += outcome.failures_after_landing;
    }
    // The runs met every fault, and restored runs reused saved results.
    assert!(total.crashes >= 50, "{total:?}");
    assert!(total.forced_crashes >= 10, "{total:?}");
    assert!(total.checkpoints_completed >= 100, "{total:?}");
    assert!(total.failures_before_landing >= 10, "{total:?}");
    assert!(total.failures_after_landing >= 10, "{total:?}");
    assert!(reused >= 20, "only {reused} runs reused a saved result");
}

#[test]
fn runs_at_the_largest_bounds_are_explained_too() {
    let dir = tempfile::tempdir().unwrap();
    for seed in 0..10 {
        let (log, outcome) = simulate(dir.path(), &largest(seed));
        let v = check(&fs::read_to_string(&log).unwrap());
        assert!(v.is_valid(), "seed {seed}: {:?}", v.verdict);
        assert!(v.violations.is_empty(), "seed {seed}: {:?}", v.violations);
        assert!(outcome.repeated_calls().is_empty(), "seed {seed}");
    }
}

/// The first seed whose log `bug` makes invalid, of `seeds`, with its verdict.
fn first_rejected(
    dir: &Path,
    bug: Defect,
    seeds: std::ops::Range<u64>,
) -> Vec<(u64, Outcome, Verdict)> {
    let mut out = Vec::new();
    for seed in seeds {
        let (log, outcome) = simulate(dir, &seeded(seed, &[bug]));
        let v = check(&fs::read_to_string(&log).unwrap());
        out.push((seed, outcome, v.verdict));
    }
    out
}

#[test]
fn validation_catches_the_end_offset_marker_exactly_where_a_call_repeats() {
    let dir = tempfile::tempdir().unwrap();
    let runs = first_rejected(dir.path(), Defect::EndOffsetMarker, 0..100);
    let mut rejected = 0;
    for (seed, outcome, verdict) in &runs {
        let repeated = !outcome.repeated_calls().is_empty();
        match verdict {
            Verdict::Valid => assert!(!repeated, "seed {seed}: a repeated call passed"),
            Verdict::Unexplained {
                event, expected, ..
            } => {
                assert!(repeated, "seed {seed}: rejected without a repeated call");
                rejected += 1;
                // The supplier ran for a call whose result the log held, from the
                // checkpoint's marker on: the model reused it.
                assert!(
                    event.starts_with("durable.supplier call"),
                    "seed {seed}: {event}"
                );
                assert!(
                    expected
                        .iter()
                        .any(|e| e.starts_with("durable.operator call_reused")),
                    "seed {seed}: {expected:?}"
                );
            }
            Verdict::Truncated { .. } => panic!("seed {seed}: {verdict:?}"),
        }
    }
    assert!(rejected >= 3, "only {rejected} of 100 runs rejected");
    // The first one, in full: the key, the input and the call are named.
    let (seed, _, verdict) = runs.iter().find(|(_, _, v)| *v != Verdict::Valid).unwrap();
    let Verdict::Unexplained {
        event, expected, ..
    } = verdict
    else {
        unreachable!()
    };
    assert_eq!(*seed, 4);
    assert_eq!(
        event,
        "durable.supplier call key=key1.0 action=action0 seq=1 index=0"
    );
    assert!(
        expected.contains(
            &"durable.operator call_reused key=key1.0 seq=1 action=action0 index=0".to_string()
        ),
        "{expected:?}"
    );
}

#[test]
fn validation_catches_caching_before_the_acknowledgement() {
    let dir = tempfile::tempdir().unwrap();
    let runs = first_rejected(dir.path(), Defect::CacheBeforeAck, 0..40);
    let mut rejected = 0;
    for (seed, _, verdict) in &runs {
        if let Verdict::Unexplained { event, .. } = verdict {
            rejected += 1;
            // The store counted a put saved that the log does not hold: after the
            // restore, a call runs (or an action re-runs) where the model reuses its
            // result or skips the completed action.
            assert!(
                event.starts_with("durable.supplier call")
                    || event.starts_with("durable.operator call_reused"),
                "seed {seed}: {event}"
            );
        } else {
            assert_eq!(*verdict, Verdict::Valid, "seed {seed}");
        }
    }
    assert!(rejected >= 10, "only {rejected} of 40 runs rejected");
}

/// A fixed run with a failed put, a crash and a restore that reused a saved result.
fn restored_log(dir: &Path) -> Vec<String> {
    for seed in 0..50 {
        let (log, outcome) = simulate(dir, &seeded(seed, &[]));
        let text = fs::read_to_string(&log).unwrap();
        if outcome.crashes > 0
            && text.contains(r#""event":"call_reused""#)
            && text.contains(r#""outcome":"failed""#)
        {
            return text.lines().map(str::to_owned).collect();
        }
    }
    panic!("no run of 50 failed a put, restored and reused a result");
}

fn find(lines: &[String], pattern: &str) -> usize {
    lines
        .iter()
        .position(|l| l.contains(pattern))
        .unwrap_or_else(|| panic!("no line has {pattern}"))
}

fn unexplained_at(lines: &[String]) -> (u64, String) {
    match check(&lines.join("\n")).verdict {
        Verdict::Unexplained { line, event, .. } => (line, event),
        other => panic!("{other:?}"),
    }
}

#[test]
fn corrupted_logs_are_rejected_at_the_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let lines = restored_log(dir.path());
    assert!(check(&lines.join("\n")).is_valid());

    // A supplier's return removed: the put that saves its result has nothing to save.
    let at = find(&lines, r#""component":"durable.supplier""#);
    let mut cut = lines.clone();
    cut.remove(at);
    let (line, event) = unexplained_at(&cut);
    assert!(event.starts_with("durable.operator put_sent"), "{event}");
    assert!(
        line as usize > at,
        "reported at {line}, removed line {}",
        at + 1
    );

    // An acknowledgement swapped with its put's send: acknowledged before sent.
    let sent = find(&lines, r#""event":"put_sent""#);
    let acked = find(&lines, r#""outcome":"acked""#);
    assert!(acked > sent);
    let mut swapped = lines.clone();
    swapped.swap(sent, acked);
    let (line, event) = unexplained_at(&swapped);
    assert_eq!(line as usize, sent + 1);
    assert!(event.starts_with("durable.store put"), "{event}");
    assert!(event.ends_with("-> acked"), "{event}");

    // A reused result's index changed.
    let reused = find(&lines, r#""event":"call_reused""#);
    let mut changed = lines.clone();
    for index in [r#""index":0"#, r#""index":1"#] {
        changed[reused] = changed[reused].replace(index, r#""index":2"#);
    }
    assert_ne!(changed[reused], lines[reused]);
    let (line, event) = unexplained_at(&changed);
    assert_eq!(line as usize, reused + 1);
    assert!(event.ends_with("index=2"), "{event}");

    // A crash the header's bounds do not allow.
    let mut no_crashes = lines.clone();
    no_crashes[0] = no_crashes[0].replace(r#""crashes":2"#, r#""crashes":0"#);
    assert_ne!(no_crashes[0], lines[0]);
    let crash = find(&lines, r#""component":"durable.task""#);
    let (line, event) = unexplained_at(&no_crashes);
    assert_eq!(line as usize, crash + 1);
    assert_eq!(event, "durable.task crash");

    // Cut inside a failed put's step: the operator's failure is missing.
    let failed = find(&lines, r#""outcome":"failed""#);
    let v = check(&lines[..=failed].join("\n"));
    assert_eq!(
        v.verdict,
        Verdict::Truncated {
            job: 0,
            missing: "durable.operator failed".into()
        }
    );
}

#[test]
fn a_seed_replays_its_log_and_its_verdict() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let (la, _) = simulate(a.path(), &seeded(4, &[Defect::EndOffsetMarker]));
    let (lb, _) = simulate(b.path(), &seeded(4, &[Defect::EndOffsetMarker]));
    let (ta, tb) = (fs::read(&la).unwrap(), fs::read(&lb).unwrap());
    assert_eq!(ta, tb);
    let v = check(std::str::from_utf8(&ta).unwrap());
    assert!(matches!(v.verdict, Verdict::Unexplained { .. }));
}

fn check_design(text: &str, design: &'static str) -> Validation {
    let options = Options {
        design: Some(design),
        ..Options::default()
    };
    validate::validate(text.as_bytes(), options).expect("the log is readable")
}

/// The operator's seed bugs are the model's designs: with the old put order the logs
/// are all the `old-put-order` design's behaviours, and with the end-offset marker too,
/// the `unpatched` design's, whose unsafe marker the validator names.
#[test]
fn the_seed_bugs_are_the_models_unpatched_designs() {
    let dir = tempfile::tempdir().unwrap();
    for seed in 0..40 {
        let (log, _) = simulate(dir.path(), &seeded(seed, &[Defect::CacheBeforeAck]));
        let v = check_design(&fs::read_to_string(&log).unwrap(), "old-put-order");
        assert!(v.is_valid(), "seed {seed}: {:?}", v.verdict);
    }
    let both = [Defect::EndOffsetMarker, Defect::CacheBeforeAck];
    let (mut unsafe_marker, mut rejected_by_fixed) = (0, 0);
    for seed in 0..60 {
        let (log, _) = simulate(dir.path(), &seeded(seed, &both));
        let text = fs::read_to_string(&log).unwrap();
        let v = check_design(&text, "unpatched");
        assert!(v.is_valid(), "seed {seed}: {:?}", v.verdict);
        if v.violations.iter().any(|x| x.property == "marker is safe") {
            unsafe_marker += 1;
        }
        if !check(&text).is_valid() {
            rejected_by_fixed += 1;
        }
    }
    assert!(unsafe_marker >= 3, "{unsafe_marker} of 60");
    assert!(rejected_by_fixed >= 15, "{rejected_by_fixed} of 60");
}
