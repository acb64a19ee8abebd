//! Zombie sends in concurrent durable runs: a crash leaves a queued put with the old
//! producer and it lands late, before the restore's fences or after them. With the
//! fences every log is a behaviour of the fixed model under `zombie-sends` and
//! `epoch-fencing`, and the zombies that land behind a fence are skipped by the next
//! rebuild; with the seed bug `unfenced` a zombie lands over what the restore read and
//! a call runs again.

use std::fs;
use std::path::{Path, PathBuf};

use steadfast_conformance::validate::{self, Options, Validation};
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

/// Small bounds with zombie sends: one key (the model's zombie needs puts one at a
/// time), three crashes so that a later restore reads past a late zombie, and one
/// checkpoint, so that the restores go back to it and read what came after.
fn zombies(seed: u64, fencing: bool) -> Config {
    Config {
        seed,
        keys: 1,
        inputs: 2,
        calls: 2,
        crashes: 3,
        checkpoints: 1,
        send_failures: 1,
        zombie_sends: true,
        fencing,
        ..Config::default()
    }
}

#[test]
fn fenced_runs_with_zombie_sends_are_explained_and_their_stale_zombies_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let mut total = Outcome::default();
    let mut skipped_runs = 0;
    for seed in 0..50 {
        let (log, outcome) = simulate(dir.path(), &zombies(seed, true));
        let text = fs::read_to_string(&log).unwrap();
        assert!(
            text.lines()
                .next()
                .unwrap()
                .contains(r#""zombie_sends":true"#),
            "seed {seed}: the header names zombie sends"
        );
        let v = check(&text);
        assert!(v.is_valid(), "seed {seed}: {:?}", v.verdict);
        assert!(v.violations.is_empty(), "seed {seed}: {:?}", v.violations);
        assert!(
            outcome.repeated_calls().is_empty(),
            "seed {seed}: {:?}",
            outcome.repeated_calls()
        );
        if text.contains(r#""event":"fenced_record""#) {
            skipped_runs += 1;
            assert!(outcome.fenced_skipped > 0, "seed {seed}: {outcome:?}");
        }
        total.zombies += outcome.zombies;
        total.zombies_landed += outcome.zombies_landed;
        total.zombies_stale += outcome.zombies_stale;
        total.fenced_skipped += outcome.fenced_skipped;
    }
    // Not vacuous: zombies landed on both sides of a fence, and a rebuild skipped one.
    assert!(total.zombies_stale >= 5, "{total:?}");
    assert!(
        total.zombies_landed > total.zombies_stale,
        "no zombie landed before a fence: {total:?}"
    );
    assert!(
        skipped_runs >= 1,
        "no rebuild skipped a stale zombie: {total:?}"
    );
}

#[test]
fn without_fences_a_zombie_makes_a_call_run_again() {
    let dir = tempfile::tempdir().unwrap();
    let (mut repeated, mut violated) = (Vec::new(), Vec::new());
    for seed in 0..50 {
        let (log, outcome) = simulate(dir.path(), &zombies(seed, false));
        let text = fs::read_to_string(&log).unwrap();
        assert!(
            text.lines().next().unwrap().contains(r#""fencing":false"#),
            "seed {seed}: the header says the restores do not fence"
        );
        assert!(!text.contains(r#""event":"fence""#), "seed {seed}");
        // The model without fencing explains every log; what goes wrong is a property.
        let v = check(&text);
        assert!(v.is_valid(), "seed {seed}: {:?}", v.verdict);
        if !outcome.repeated_calls().is_empty() {
            repeated.push(seed);
        }
        if !v.violations.is_empty() {
            violated.push((seed, v.violations));
        }
    }
    // The zombie's landing is invisible: the validator finds the property failing only
    // when every time it could have landed breaks it, while the driver sees when it
    // did; whatever the validator finds, the driver counted too.
    assert_eq!(repeated, [37, 40, 48]);
    assert_eq!(violated.len(), 1, "{violated:?}");
    let (seed, violations) = &violated[0];
    assert_eq!(*seed, 37);
    // The zombie (input 1's first result, sent before the first crash) lands after the
    // second incarnation saved both results; the third restore reads it last, reuses
    // the first result and calls the second's supplier again.
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert_eq!(violations[0].property, "call at most once");
    assert_eq!(violations[0].line, 66);
    assert_eq!(
        violations[0].event,
        "durable.supplier call key=key0.0 action=action0 seq=1 index=1"
    );
}
