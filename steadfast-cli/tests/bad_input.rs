//! Bad input on the command line: every refusal is one line starting with `steadfast: `
//! and exits 2, never a panic; `--help` works on every command.
//!
//! Over 800 lines as a table of refusals: one short test per kind of bad input, read one
//! at a time; splitting it would scatter the cases a reviewer compares side by side.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The longest any run here may take: a hang fails the test instead of stalling it.
const LIMIT: Duration = Duration::from_secs(120);

fn steadfast<S: AsRef<OsStr>>(args: &[S]) -> Output {
    bounded(args, None, LIMIT)
}

/// Runs the binary with `args`, `stdin` written to it (none: an empty input), killed
/// after `limit`; a run that had to be killed fails the test.
fn bounded<S: AsRef<OsStr>>(args: &[S], stdin: Option<Vec<u8>>, limit: Duration) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_steadfast"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut input = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        // The reader may stop early (a refusal): a broken pipe is its answer.
        let _ = input.write_all(&stdin.unwrap_or_default());
    });
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = r.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit {
            child.kill().ok();
            child.wait().ok();
            panic!("still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    writer.join().ok();
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// Exit 2, nothing on stdout, and exactly one stderr line, starting with `steadfast: `
/// and containing `want`.
fn refused<S: AsRef<OsStr>>(args: &[S], want: &str) {
    refused_output(&steadfast(args), want);
}

fn refused_output(out: &Output, want: &str) {
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err:?}");
    assert!(err.starts_with("steadfast: "), "{err}");
    assert!(err.contains(want), "{want} in {err}");
    assert!(out.stdout.is_empty(), "stdout: {:?}", text(&out.stdout));
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).to_string()
}

/// Exit 0, and nothing on stderr.
fn accepted(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
    text(&out.stdout)
}

#[cfg(unix)]
#[test]
fn a_non_utf8_argument_is_refused_by_position_not_a_panic() {
    use std::os::unix::ffi::OsStrExt;
    let file = OsStr::from_bytes(b"trace-\xff.json");
    refused(
        &[OsStr::new("replay"), file],
        "argument 2 is not valid UTF-8",
    );
}

#[test]
fn every_command_answers_help_with_its_options() {
    for (command, option) in [
        ("check", "--design"),
        ("verdicts", "--json"),
        ("explore", "--addr"),
        ("models", "models"),
        ("conform", "--walks"),
        ("traces", "--out"),
        ("replay", "FILE"),
        ("departs", "--property"),
        ("bench", "--scaling"),
    ] {
        let out = steadfast(&[command, "--help"]);
        assert_eq!(out.status.code(), Some(0), "{command}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains(&format!("steadfast {command}")),
            "{command}: {text}"
        );
        assert!(text.contains(option), "{command}: {text}");
    }
}

#[test]
fn small_defects_are_refused() {
    refused(&["models", "--x", "1"], "unknown option `--x` for models");
    refused(
        &["check", "leadership", "--json=1"],
        "`--json` takes no value",
    );
    refused(
        &["check", "leadership", "--grants=+3"],
        "needs a whole number, got `+3`",
    );
    refused(
        &["bench", "--limit", "10", "--cap", "5"],
        "must not be below `--limit`",
    );
    refused(&["traces", "leadership", "--out", ""], "`--out` is empty");
}

#[test]
fn explore_refuses_an_address_other_machines_reach() {
    refused(
        &["explore", "leadership", "--addr", "0.0.0.0:0"],
        "add `--public`",
    );
    refused(
        &["explore", "leadership", "--addr", "nowhere"],
        "`--addr` must be",
    );
}

#[test]
fn a_name_with_a_line_break_stays_on_one_line() {
    refused(
        &["check", "lead\nership\x1b[31m"],
        "lead\\nership\\u{1b}[31m",
    );
}

#[test]
fn a_replay_error_names_the_file_once() {
    let dir = std::env::temp_dir().join(format!("steadfast-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("broken.json");
    std::fs::write(&file, "{\"model\": \"leadership\"").unwrap();
    let name = file.to_str().unwrap();
    let out = steadfast(&["replay", name]);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.matches(name).count(), 1, "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn traces_leave_no_partial_file_behind() {
    let dir = std::env::temp_dir().join(format!("steadfast-traces-{}", std::process::id()));
    let out = steadfast(&[
        "traces",
        "leadership",
        "--out",
        dir.to_str().unwrap(),
        "--limit",
        "5",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    assert_eq!(names.len(), 5, "{names:?}");
    assert!(names.iter().all(|n| !n.contains("partial")), "{names:?}");
    std::fs::remove_dir_all(&dir).ok();
}

#[cfg(unix)]
#[test]
fn an_endless_file_is_refused_at_once() {
    refused(&["replay", "/dev/zero"], "not a trace file");
}

#[test]
fn a_large_file_is_read_as_a_stream_and_a_huge_step_refused() {
    let dir = std::env::temp_dir().join(format!("steadfast-big-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A sparse file of 1 GiB of zero bytes: refused at its first byte, nothing kept.
    let zeros = dir.join("zeros.json");
    std::fs::File::create(&zeros)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let started = std::time::Instant::now();
    refused(&["replay", zeros.to_str().unwrap()], "not a trace file");
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
    // A trace whose one step is larger than the cap on a step.
    let huge = dir.join("huge.json");
    let filler = "x".repeat(17 << 20);
    std::fs::write(
        &huge,
        format!(
            r#"{{"format":"steadfast-trace/1","model":"leadership","design":"fixed","settings":{{}},"steps":[{{"action":null,"state":"{filler}"}}]}}"#
        ),
    )
    .unwrap();
    refused(
        &["replay", huge.to_str().unwrap()],
        "a single step is larger than the 16777216 bytes",
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A check past its memory budget ends with one line, its progress so far, and exit 3
/// (a run-time failure, not a usage error), instead of exhausting the machine.
#[test]
fn a_check_past_its_memory_budget_stops_with_exit_3() {
    let out = steadfast(&[
        "check",
        "durable",
        "--keys",
        "3",
        "--inputs",
        "3",
        "--max-memory",
        "200",
        "--no-traces",
    ]);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(3), "{err}");
    let last = err.lines().last().unwrap();
    assert!(
        last.starts_with("steadfast: check stopped: memory budget of 200 MiB exceeded"),
        "{err}"
    );
    assert!(last.contains("unique states"), "{err}");
}

/// `traces` estimates the disk a set takes before writing any and refuses past its budget.
#[test]
fn traces_over_the_disk_budget_are_refused_with_the_estimate() {
    let dir = std::env::temp_dir().join(format!("steadfast-budget-{}", std::process::id()));
    refused(
        &[
            "traces",
            "durable",
            "--inputs",
            "1",
            "--format",
            "itf",
            "--max-bytes-mib",
            "1",
            "--out",
            dir.to_str().unwrap(),
        ],
        "over the budget of 1 MiB",
    );
    let written = std::fs::read_dir(&dir).map(|d| d.count()).unwrap_or(0);
    assert_eq!(written, 0, "nothing written");
    std::fs::remove_dir_all(&dir).ok();
}

/// A name read from a trace file with a line break and a terminal escape is written
/// escaped, on one line.
#[test]
fn a_name_from_a_file_stays_on_one_line() {
    let dir = std::env::temp_dir().join(format!("steadfast-name-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("odd.json");
    std::fs::write(
        &file,
        r#"{"format":"steadfast-trace/1","model":"lead\nership\u001b[2J","design":"fixed","settings":{},"steps":[{}]}"#,
    )
    .unwrap();
    refused(
        &["replay", file.to_str().unwrap()],
        "lead\\nership\\u{1b}[2J",
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// `explore --addr 127.0.0.1:0` announces the port it got, and serves there.
#[test]
fn explore_on_port_0_announces_the_port_it_serves() {
    use std::io::{BufRead, BufReader};
    let mut child = Command::new(env!("CARGO_BIN_EXE_steadfast"))
        .args(["explore", "leadership", "--addr", "127.0.0.1:0"])
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    stderr.read_line(&mut line).unwrap();
    // Keep reading what follows (the verdicts), as a terminal would.
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    let port: u16 = line
        .split("http://127.0.0.1:")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no address announced: {line}"));
    assert_ne!(port, 0, "{line}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let served = loop {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break true;
        }
        if std::time::Instant::now() > deadline {
            break false;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    child.kill().ok();
    child.wait().ok();
    assert!(served, "nothing listens on the announced port {port}");
}

#[test]
fn simulate_refuses_an_empty_out_as_traces_does() {
    for model in ["leadership", "durable"] {
        refused(&["simulate", model, "--out", ""], "`--out` is empty");
    }
}

/// An unreadable log is a refusal: on stderr, in the one format, with `--json` too.
#[test]
fn an_unreadable_log_is_refused_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.ndjson");
    let missing = missing.to_str().unwrap();
    refused(
        &["validate", missing],
        "missing.ndjson: unreadable: cannot open",
    );
    refused(
        &["validate", "--json", missing],
        "missing.ndjson: unreadable: cannot open",
    );
    refused(
        &["validate", "--cluster", missing],
        "missing.ndjson: cannot open",
    );
}

/// `validate DIR` validates every `*.ndjson` of DIR, in name order; a directory without
/// one is refused.
#[test]
fn validate_takes_a_directory_as_its_logs_in_name_order() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    accepted(&steadfast(&[
        "simulate",
        "leadership",
        "--out",
        d,
        "--runs",
        "3",
    ]));
    std::fs::write(dir.path().join("notes.txt"), "not a log").unwrap();
    let report = accepted(&steadfast(&["validate", d]));
    let lines: Vec<&str> = report.lines().collect();
    assert_eq!(lines.len(), 4, "{report}");
    for (line, seed) in lines.iter().zip(0..3) {
        assert!(
            line.contains(&format!("leadership-{seed}.ndjson: valid")),
            "{report}"
        );
    }
    assert!(
        lines[3].starts_with("3 valid, 0 invalid, 0 unreadable"),
        "{report}"
    );
    let empty = tempfile::tempdir().unwrap();
    refused(
        &["validate", empty.path().to_str().unwrap()],
        "holds no *.ndjson logs",
    );
}

/// `conform` past its memory budget says how far the replay got, not "0 states".
#[test]
fn conform_past_its_memory_budget_names_the_states_reached() {
    let out = steadfast(&[
        "conform",
        "durable",
        "--keys",
        "3",
        "--inputs",
        "3",
        "--walks",
        "0",
        "--max-memory",
        "100",
    ]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    let last = err.lines().last().unwrap();
    assert!(
        last.starts_with("steadfast: conform stopped: memory budget of 100 MiB exceeded"),
        "{err}"
    );
    let states: u64 = last
        .split(" after ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count of states: {last}"));
    assert!(states > 0, "{last}");
    assert!(last.contains("unique states"), "{last}");
}

/// Runs of `traces` writing into one directory at once all succeed: no two writes share
/// a temporary name.
#[test]
fn concurrent_traces_runs_into_one_directory_all_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap().to_string();
    let runs: Vec<_> = (0..3)
        .map(|_| {
            let d = d.clone();
            std::thread::spawn(move || {
                steadfast(&["traces", "leadership", "--out", &d, "--limit", "3000"])
            })
        })
        .collect();
    for run in runs {
        let out = run.join().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    let names: Vec<String> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    assert_eq!(names.len(), 3000);
    assert!(names.iter().all(|n| !n.contains("partial")));
}

/// The first trace of `traces leadership`, in `format` (json or itf), as JSON.
fn a_trace(dir: &std::path::Path, format: &str) -> serde_json::Value {
    let out = dir.join(format!("set-{format}"));
    let o = steadfast(&[
        "traces",
        "leadership",
        "--out",
        out.to_str().unwrap(),
        "--limit",
        "1",
        "--format",
        format,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let file = std::fs::read_dir(&out).unwrap().next().unwrap().unwrap();
    serde_json::from_slice(&std::fs::read(file.path()).unwrap()).unwrap()
}

/// `replay` of the trace file `name` in `dir` holding `bytes`.
fn replay_bytes(dir: &std::path::Path, name: &str, bytes: &[u8]) -> Output {
    let file = dir.join(name);
    std::fs::write(&file, bytes).unwrap();
    steadfast(&["replay", file.to_str().unwrap()])
}

fn replayed(out: &Output) {
    let report = accepted(out);
    assert!(
        report.contains("the runtime agrees with the model"),
        "{report}"
    );
}

/// A refusal quotes at most 200 characters of a value, with its length.
#[test]
fn a_huge_value_is_quoted_capped_with_its_length() {
    let dir = tempfile::tempdir().unwrap();
    let mut trace = a_trace(dir.path(), "json");
    trace["steps"][1]["action"] = serde_json::Value::String("A".repeat(15 << 20));
    let out = replay_bytes(dir.path(), "huge.json", trace.to_string().as_bytes());
    refused_output(&out, &format!("`{}…` (15728640 bytes)", "A".repeat(200)));
    assert!(out.stderr.len() < 2000, "{} bytes", out.stderr.len());
    let name = "x".repeat(100_000);
    let out = steadfast(&["check", &name]);
    refused_output(&out, "(100000 bytes)");
    assert!(out.stderr.len() < 1000, "{} bytes", out.stderr.len());
}

/// Whitespace after a trace is not a step, however much of it there is.
#[test]
fn whitespace_after_a_trace_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = a_trace(dir.path(), "json").to_string().into_bytes();
    bytes.extend(std::iter::repeat_n(b' ', 20 << 20));
    bytes.extend(b"\n\t\r\n");
    let started = Instant::now();
    replayed(&replay_bytes(dir.path(), "spaced.json", &bytes));
    assert!(started.elapsed() < Duration::from_secs(30));
    bytes.extend(b"x");
    refused_output(
        &replay_bytes(dir.path(), "trailing.json", &bytes),
        "not a trace file: trailing characters",
    );
}

/// A key given twice is refused, at the top and within a step, rather than read in a
/// way other JSON readers would not.
#[test]
fn a_duplicated_key_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let trace = a_trace(dir.path(), "json");
    let text = trace.to_string();
    let steps = trace["steps"].to_string();
    let twice = format!("{},\"steps\":{steps}}}", &text[..text.len() - 1]);
    refused_output(
        &replay_bytes(dir.path(), "twice.json", twice.as_bytes()),
        "duplicate key `steps`",
    );
    let inner = text.replacen("\"action\":null", "\"action\":null,\"action\":null", 1);
    assert_ne!(inner, text);
    refused_output(
        &replay_bytes(dir.path(), "inner.json", inner.as_bytes()),
        "duplicate key `action`",
    );
}

/// `replay` reads its file once, so a pipe or a FIFO does as a file does.
#[cfg(unix)]
#[test]
fn replay_reads_a_pipe_and_a_fifo() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = a_trace(dir.path(), "json").to_string().into_bytes();
    let limit = Duration::from_secs(30);
    replayed(&bounded(
        &["replay", "/dev/stdin"],
        Some(bytes.clone()),
        limit,
    ));
    let fifo = dir.path().join("trace.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let path = fifo.clone();
    // Written once: a second open would wait for a writer forever.
    let writer = std::thread::spawn(move || std::fs::write(&path, &bytes));
    replayed(&bounded(&["replay", fifo.to_str().unwrap()], None, limit));
    writer.join().unwrap().unwrap();
}

/// An ITF file is held to the format's structure, as the reference reader holds it.
#[test]
fn itf_structure_is_checked_as_the_reference_reader_does() {
    let dir = tempfile::tempdir().unwrap();
    let trace = a_trace(dir.path(), "itf");
    replayed(&replay_bytes(
        dir.path(),
        "ok.itf.json",
        trace.to_string().as_bytes(),
    ));
    let broken = |name: &str, change: &dyn Fn(&mut serde_json::Value), want: &str| {
        let mut t = trace.clone();
        change(&mut t);
        let out = replay_bytes(dir.path(), name, t.to_string().as_bytes());
        refused_output(&out, want);
    };
    broken(
        "vars.itf.json",
        &|t| t["vars"] = serde_json::json!([1, 2]),
        "`vars` is not a list of text",
    );
    broken(
        "novars.itf.json",
        &|t| {
            t.as_object_mut().unwrap().remove("vars");
        },
        "ITF trace without `vars`",
    );
    // `vars` first, as Quint writes it: a state without one is refused as it comes.
    let mut t = trace.clone();
    let var = t["vars"][0].as_str().unwrap().to_string();
    t["states"][1].as_object_mut().unwrap().remove(&var);
    let quint = format!(
        "{{\"#meta\":{},\"vars\":{},\"states\":{}}}",
        t["#meta"], t["vars"], t["states"]
    );
    refused_output(
        &replay_bytes(dir.path(), "missing.itf.json", quint.as_bytes()),
        &format!("state 1 has no variable `{var}`"),
    );
    broken(
        "extra.itf.json",
        &|t| t["vars"].as_array_mut().unwrap().push("ghost".into()),
        "state 0 has no variable `ghost`",
    );
    broken(
        "record.itf.json",
        &|t| t["states"][0] = serde_json::json!(7),
        "state 0 is not a record",
    );
    broken(
        "meta.itf.json",
        &|t| t["#meta"] = serde_json::json!("leadership"),
        "`#meta` is not an object",
    );
    broken(
        "statemeta.itf.json",
        &|t| t["states"][0]["#meta"] = serde_json::json!(0),
        "state 0: `#meta` is not an object",
    );
}

/// A shard of `check leadership --design unpatched --simulate`, written into `dir`; its
/// JSON.
fn a_shard(dir: &std::path::Path) -> serde_json::Value {
    let o = steadfast(&[
        "check",
        "leadership",
        "--design",
        "unpatched",
        "--simulate",
        "--time",
        "1s",
        "--seed",
        "5",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let file = dir.join("shard-1-of-1.json");
    serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap()
}

/// `check --merge` of a directory holding only `shard`.
fn merge_one(shard: &serde_json::Value) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("shard-1-of-1.json");
    std::fs::write(file, shard.to_string()).unwrap();
    steadfast(&["check", "--merge", dir.path().to_str().unwrap()])
}

/// `--merge` replays every path a shard reports on the model before counting it, and
/// refuses a shard without verdicts.
#[test]
fn merge_refuses_made_up_paths_and_shards_without_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let shard = a_shard(dir.path());
    let properties = shard["properties"].as_array().unwrap();
    let found = properties
        .iter()
        .position(|p| p["found"] == "counterexample")
        .expect("a counterexample in 1 s of walks");
    let nothing = properties.iter().position(|p| p["found"] == "none-found");

    // The path cut short: a path of the model that does not violate the property.
    let mut cut = shard.clone();
    let path = &mut cut["properties"][found]["path"];
    for list in ["steps", "actions"] {
        path[list].as_array_mut().unwrap().truncate(1);
    }
    path["length"] = 1.into();
    path["explorer_path"] = serde_json::Value::Null;
    refused_output(
        &merge_one(&cut),
        "its path is not one of the model's ending in counterexample",
    );

    // A path claimed for a property the walks never violated.
    if let Some(nothing) = nothing {
        let mut claimed = shard.clone();
        let real = claimed["properties"][found]["path"].clone();
        claimed["properties"][nothing]["found"] = "counterexample".into();
        claimed["properties"][nothing]["path"] = real;
        refused_output(&merge_one(&claimed), "its path is not one of the model's");
    }

    let mut empty = shard.clone();
    empty["properties"] = serde_json::json!([]);
    refused_output(&merge_one(&empty), "no properties, so no verdicts");

    let mut renamed = shard.clone();
    renamed["properties"][0]["name"] = "made up".into();
    refused_output(&merge_one(&renamed), "its properties are not those of");

    // The shard as written merges, to the same counterexample.
    let out = merge_one(&shard);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("counterexample to"));
}

/// Names read from shard files reach the terminal escaped.
#[cfg(unix)]
#[test]
fn merge_escapes_names_from_shard_files() {
    let dir = tempfile::tempdir().unwrap();
    let mut shard = a_shard(dir.path());
    shard["model"] = "lead\u{1b}[2Jership".into();
    refused_output(&merge_one(&shard), "lead\\u{1b}[2Jership");

    // A file name with an escape, printed beside the counterexample it found.
    let named = tempfile::tempdir().unwrap();
    std::fs::copy(
        dir.path().join("shard-1-of-1.json"),
        named.path().join("shard-1-of-1\u{1b}[2J.json"),
    )
    .unwrap();
    let out = steadfast(&["check", "--merge", named.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    assert!(!report.contains('\u{1b}'), "{report:?}");
    assert!(report.contains("shard-1-of-1\\u{1b}[2J.json"), "{report}");
}

/// `traces` and `departs` run under a memory budget, as `check` and `conform` do.
#[test]
fn traces_and_departs_stop_at_their_memory_budget() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("set");
    for (what, args) in [
        (
            "traces",
            vec!["traces", "durable", "--out", out.to_str().unwrap()],
        ),
        ("departs", vec!["departs", "durable"]),
    ] {
        let mut args = args;
        args.extend(["--keys", "3", "--inputs", "3", "--max-memory", "100"]);
        let o = steadfast(&args);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(3), "{what}: {err}");
        let last = err.lines().last().unwrap();
        let want = format!("steadfast: {what} stopped: memory budget of 100 MiB exceeded");
        assert!(last.starts_with(&want), "{err}");
        assert!(o.stdout.is_empty(), "{what}: {}", text(&o.stdout));
    }
}

/// `explore` on a free port; the port it announced.
fn explore_on_a_free_port() -> (std::process::Child, u16) {
    use std::io::{BufRead, BufReader};
    let mut child = Command::new(env!("CARGO_BIN_EXE_steadfast"))
        .args(["explore", "leadership", "--addr", "127.0.0.1:0"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    let port = line
        .split("http://127.0.0.1:")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no address announced: {line}"));
    (child, port)
}

/// The status of `GET path`, if answered within `limit`.
fn get(port: u16, path: &str, limit: Duration) -> Option<u16> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(limit)).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    text(&raw).split_whitespace().nth(1)?.parse().ok()
}

/// Clients that send half a request and stall neither stop `explore` answering others
/// nor hold their connection past the time allowed for a request head.
#[test]
fn explore_answers_others_while_clients_stall() {
    let (mut child, port) = explore_on_a_free_port();
    let deadline = Instant::now() + Duration::from_secs(60);
    while get(port, "/.status", Duration::from_secs(5)) != Some(200) {
        assert!(Instant::now() < deadline, "the Explorer never answered");
        std::thread::sleep(Duration::from_millis(100));
    }
    let stalled: Vec<std::net::TcpStream> = (0..8)
        .map(|_| {
            let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
            s.write_all(b"GET /.status HTTP/1.1\r\nHost: loc").unwrap();
            s
        })
        .collect();
    let started = Instant::now();
    let answered = get(port, "/.status", Duration::from_secs(5));
    let took = started.elapsed();
    // The stalled clients are dropped once their time for a head (10 s) is up.
    let mut dropped = 0;
    for mut s in stalled {
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut byte = [0u8; 1];
        let closed = match s.read(&mut byte) {
            Ok(n) => n == 0,
            Err(e) => !matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
        };
        dropped += usize::from(closed);
    }
    let held = started.elapsed();
    child.kill().ok();
    child.wait().ok();
    assert_eq!(answered, Some(200), "after {took:?}");
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert_eq!(dropped, 8);
    assert!(held < Duration::from_secs(20), "{held:?}");
}
