//! `simulate` and `validate` as a user runs them: logs written, every one valid for the
//! fixed machines, a seed bug's log rejected with its event named, exit statuses, and
//! one-line errors for bad input.

use std::process::{Command, Output};

fn steadfast(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_steadfast"))
        .args(args)
        .output()
        .expect("the binary runs")
}

/// The files in `dir`, sorted, as strings.
fn files_in(dir: &str) -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path().to_str().unwrap().to_string())
        .collect();
    files.sort();
    files
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).trim().to_string()
}

#[test]
fn simulated_logs_validate_and_a_seed_bug_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fixed");
    let out = out.to_str().unwrap();
    let sim = steadfast(&[
        "simulate",
        "leadership",
        "--runs",
        "30",
        "--seed",
        "100",
        "--out",
        out,
    ]);
    assert_eq!(sim.status.code(), Some(0), "{}", text(&sim.stderr));
    assert!(
        text(&sim.stdout).starts_with("wrote 30 leadership logs (seeds 100..=129)"),
        "{}",
        text(&sim.stdout)
    );
    let logs = files_in(out);
    assert_eq!(logs.len(), 30);
    assert!(logs.iter().any(|l| l.ends_with("leadership-129.ndjson")));
    let mut args = vec!["validate"];
    args.extend(logs.iter().map(String::as_str));
    let v = steadfast(&args);
    assert_eq!(v.status.code(), Some(0), "{}", text(&v.stdout));
    assert!(
        text(&v.stdout).contains("30 valid, 0 invalid, 0 unreadable"),
        "{}",
        text(&v.stdout)
    );

    let bug = dir.path().join("bug");
    let bug = bug.to_str().unwrap();
    let sim = steadfast(&[
        "simulate",
        "leadership",
        "--runs",
        "1",
        "--out",
        bug,
        "--bug",
        "revoke-clears-leader",
    ]);
    assert_eq!(sim.status.code(), Some(0), "{}", text(&sim.stderr));
    let log = format!("{bug}/leadership-0.ndjson");
    let v = steadfast(&["validate", &log]);
    assert_eq!(v.status.code(), Some(1));
    let report = text(&v.stdout);
    assert!(
        report.contains("invalid at line 53 (job 4): runner forward_callback job=4 session=1 -> checking_leadership"),
        "{report}"
    );
    assert!(report.contains("cached_checking_leadership"), "{report}");

    let v = steadfast(&["validate", "--json", &log]);
    let json: serde_json::Value = serde_json::from_str(&text(&v.stdout)).unwrap();
    assert_eq!(json["verdict"]["unexplained"]["line"], 53);
    assert_eq!(json["verdict"]["unexplained"]["job"], 4);
}

#[test]
fn bad_input_exits_with_one_line_naming_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let cases: &[(&[&str], i32, &str)] = &[
        (&["simulate"], 2, "steadfast: `simulate` needs a model: leadership or durable"),
        (
            &["simulate", "elsewhere", "--out", d],
            2,
            "steadfast: unknown model `elsewhere` for simulate (known: leadership, durable)",
        ),
        (&["simulate", "durable"], 2, "steadfast: `simulate` needs `--out DIR` for the logs"),
        (
            &["simulate", "durable", "--out", d, "--bug", "eager-not-finished"],
            2,
            "steadfast: unknown bug `eager-not-finished` for durable (known: end-offset-marker, cache-before-ack, unfenced)",
        ),
        (
            &["simulate", "durable", "--out", d, "--keys", "4"],
            2,
            "steadfast: `--keys` must be a number within 1..=3, got `4`",
        ),
        (
            &["simulate", "durable", "--out", d, "--send-failures", "-1"],
            2,
            "steadfast: `--send-failures` must be a number within 0..=2, got `-1`",
        ),
        (
            &["simulate", "durable", "--out", d, "--zombie-sends", "yes"],
            2,
            "steadfast: `--zombie-sends` must be true or false, got `yes`",
        ),
        (
            &["simulate", "durable", "--out", d, "--zombie-sends", "true"],
            2,
            "steadfast: zombie_sends needs keys 1 (one put in flight at a time), not 2",
        ),
        (
            &["simulate", "durable", "--out", d, "--jobs", "4"],
            2,
            "steadfast: unknown option `--jobs` for simulate",
        ),
        (&["simulate", "leadership"], 2, "steadfast: `simulate` needs `--out DIR` for the logs"),
        (
            &["simulate", "leadership", "--out", d, "--bug", "typo"],
            2,
            "steadfast: unknown bug `typo` for leadership (known: eager-not-finished, revoke-clears-leader)",
        ),
        (
            &["simulate", "leadership", "--out", d, "--grants", "5"],
            2,
            "steadfast: `--grants` must be a number within 1..=4, got `5`",
        ),
        (
            &["simulate", "leadership", "--out", d, "--seed", "18446744073709551615", "--runs", "2"],
            2,
            "steadfast: `--seed 18446744073709551615` with `--runs 2` runs past the largest seed",
        ),
        (&["validate"], 2, "steadfast: `validate` needs at least one log file"),
        (
            &["validate", "--design", "nope", "x"],
            2,
            "steadfast: unknown design `nope` (leadership: unpatched, process-fix-only, runner-fix-only, fixed, revoke-clears-leader; durable: unpatched, old-put-order, unpruned-tracking, fixed, commit-on-snapshot)",
        ),
        (
            &["validate", "--late-signal", "maybe", "x"],
            2,
            "steadfast: `--late-signal` must be true or false, got `maybe`",
        ),
    ];
    for (args, code, want) in cases {
        let o = steadfast(args);
        assert_eq!(
            o.status.code(),
            Some(*code),
            "{args:?}: {}",
            text(&o.stderr)
        );
        assert_eq!(text(&o.stderr), *want, "{args:?}");
    }
    // A missing file and a file that is not a log: each refused on one stderr line,
    // status 2; standard output has only the summary.
    let garbage = dir.path().join("garbage.ndjson");
    std::fs::write(&garbage, b"\xff\xfe not a log\n").unwrap();
    let missing = dir.path().join("missing.ndjson");
    let o = steadfast(&[
        "validate",
        garbage.to_str().unwrap(),
        missing.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(lines.iter().all(|l| l.starts_with("steadfast: ")), "{err}");
    assert!(
        lines[0].ends_with("garbage.ndjson: unreadable: line 1: not UTF-8 (byte 0)"),
        "{err}"
    );
    assert!(
        lines[1].contains("missing.ndjson: unreadable: cannot open:"),
        "{err}"
    );
    let out = text(&o.stdout);
    assert!(out.starts_with("0 valid, 0 invalid, 2 unreadable"), "{out}");
    assert_eq!(out.lines().count(), 1, "{out}");
}

#[test]
fn durable_logs_validate_and_the_marker_bug_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fixed");
    let out = out.to_str().unwrap();
    let sim = steadfast(&["simulate", "durable", "--runs", "20", "--out", out]);
    assert_eq!(sim.status.code(), Some(0), "{}", text(&sim.stderr));
    let said = text(&sim.stdout);
    assert!(
        said.starts_with("wrote 20 durable logs (seeds 0..=19)"),
        "{said}"
    );
    assert!(said.contains(", repeated calls: 0,"), "{said}");
    let logs = files_in(out);
    // The runs' file logs are gone; their production logs stay.
    assert_eq!(logs.len(), 20, "{logs:?}");
    assert!(logs.iter().all(|l| l.ends_with(".ndjson")), "{logs:?}");
    let mut args = vec!["validate"];
    args.extend(logs.iter().map(String::as_str));
    let v = steadfast(&args);
    assert_eq!(v.status.code(), Some(0), "{}", text(&v.stdout));
    assert!(
        text(&v.stdout).contains("20 valid, 0 invalid, 0 unreadable"),
        "{}",
        text(&v.stdout)
    );

    let bug = dir.path().join("bug");
    let bug = bug.to_str().unwrap();
    let sim = steadfast(&[
        "simulate",
        "durable",
        "--runs",
        "1",
        "--seed",
        "4",
        "--out",
        bug,
        "--bug",
        "end-offset-marker",
    ]);
    assert_eq!(sim.status.code(), Some(0), "{}", text(&sim.stderr));
    assert!(
        text(&sim.stdout).contains(", repeated calls: 1,"),
        "{}",
        text(&sim.stdout)
    );
    // A repeated option is taken whole.
    let both = dir.path().join("both");
    let sim = steadfast(&[
        "simulate",
        "durable",
        "--out",
        both.to_str().unwrap(),
        "--bug",
        "end-offset-marker",
        "--bug",
        "cache-before-ack",
    ]);
    assert!(
        text(&sim.stdout)
            .ends_with("the operator carried the seed bug end-offset-marker and cache-before-ack"),
        "{}",
        text(&sim.stdout)
    );
    let log = format!("{bug}/durable-4.ndjson");
    let v = steadfast(&["validate", &log]);
    assert_eq!(v.status.code(), Some(1));
    let report = text(&v.stdout);
    assert!(
        report.contains(
            "invalid at line 74: durable.supplier call key=key1.0 action=action0 seq=1 index=0"
        ),
        "{report}"
    );
    assert!(
        report.contains("durable.operator call_reused key=key1.0 seq=1 action=action0 index=0"),
        "{report}"
    );
    let v = steadfast(&["validate", "--json", &log]);
    let json: serde_json::Value = serde_json::from_str(&text(&v.stdout)).unwrap();
    assert_eq!(json["model"], "durable");
    assert_eq!(json["verdict"]["unexplained"]["line"], 74);

    // A design of the other model is named as the log's problem.
    let v = steadfast(&["validate", "--design", "revoke-clears-leader", &log]);
    assert_eq!(v.status.code(), Some(2));
    assert!(
        text(&v.stderr).ends_with(
            "unreadable: unknown design `revoke-clears-leader` for durable (known: unpatched, old-put-order, unpruned-tracking, fixed, commit-on-snapshot)"
        ),
        "{}",
        text(&v.stderr)
    );
    assert!(v.stdout.is_empty());
}

#[test]
fn a_zombie_send_without_fences_repeats_a_call_the_validator_names() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let sim = steadfast(&[
        "simulate",
        "durable",
        "--runs",
        "1",
        "--seed",
        "37",
        "--out",
        out,
        "--keys",
        "1",
        "--crashes",
        "3",
        "--checkpoints",
        "1",
        "--zombie-sends",
        "true",
        "--bug",
        "unfenced",
    ]);
    assert_eq!(sim.status.code(), Some(0), "{}", text(&sim.stderr));
    let said = text(&sim.stdout);
    assert!(said.contains(", repeated calls: 1,"), "{said}");
    assert!(
        said.contains("zombie sends landed: 1 (0 behind a newer fence)"),
        "{said}"
    );
    assert!(
        said.ends_with("the restores carried the seed bug unfenced"),
        "{said}"
    );
    let log = format!("{out}/durable-37.ndjson");
    let v = steadfast(&["validate", &log]);
    assert_eq!(v.status.code(), Some(1), "{}", text(&v.stdout));
    assert!(
        text(&v.stdout).contains(
            "the model's \"call at most once\" fails on every path explaining it, in the step at line 66: durable.supplier call key=key0.0 action=action0 seq=1 index=1"
        ),
        "{}",
        text(&v.stdout)
    );
}
