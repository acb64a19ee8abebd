//! The command line as a user meets it: exit statuses, one-line errors, JSON output, and
//! the Explorer driven headlessly over HTTP.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn steadfast(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_steadfast"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).trim().to_string()
}

#[test]
fn fixed_passes_and_unpatched_fails_with_model_checker_statuses() {
    let fixed = steadfast(&["check", "leadership", "--design", "fixed"]);
    assert_eq!(fixed.status.code(), Some(0), "{}", stderr(&fixed));
    let unpatched = steadfast(&["check", "leadership", "--design", "unpatched"]);
    assert_eq!(unpatched.status.code(), Some(1));
    let text = String::from_utf8_lossy(&unpatched.stdout);
    assert!(
        text.contains("counterexample to \"no reanimation\" [ordering B], 9 steps"),
        "{text}"
    );
    assert!(text.contains("(Explorer: #/steps/"), "{text}");
}

#[test]
fn bad_arguments_exit_2_with_one_line_naming_the_problem() {
    let cases: &[(&[&str], &str)] = &[
        (&[], "steadfast: no command given"),
        (
            &["frobnicate"],
            "steadfast: unknown command `frobnicate` (commands: check, verdicts, explore, models, conform, traces, replay, departs, simulate, validate, bench, help)",
        ),
        (&["check"], "steadfast: `check` needs a model"),
        (
            &["traces", "--out", "unused"],
            "steadfast: `traces` needs a model (models: leadership, leadership-automatic, durable, durable-eager, durable-driver)",
        ),
        (&["check", "paxos"], "steadfast: unknown model `paxos`"),
        (
            &["check", "leadership", "--design", "nope"],
            "steadfast: unknown design `nope` for model leadership",
        ),
        (
            &["check", "leadership", "--grants", "0"],
            "steadfast: `grants` must be within 1..=10, got 0",
        ),
        (
            &["check", "leadership", "--grants", "999999999999999999999"],
            "steadfast: `grants` needs a whole number",
        ),
        (
            &["check", "leadership", "--jobs", "4"],
            "steadfast: `jobs` must be within 1..=3, got 4",
        ),
        (
            &["conform", "leadership", "--jobs", "2"],
            "steadfast: jobs 2: the runtime is replayed with one job; several jobs are checked \
             by `check leadership --jobs 2`",
        ),
        (
            &["check", "leadership", "--colour", "red"],
            "steadfast: unknown setting `colour`",
        ),
        (
            &["check", "leadership", "--scenario", "z"],
            "steadfast: unknown scenario `z` for model leadership",
        ),
        (
            &["check", "leadership", "--threads", "0"],
            "steadfast: `--threads` must be a number within 1..=64",
        ),
        (
            &["check", "leadership", "--design"],
            "steadfast: `--design` needs a value",
        ),
        (
            &["verdicts", "--fast", "yes"],
            "steadfast: unknown option `--fast`",
        ),
        (
            &["check", "leadership", "--no-shortest", "--no-traces"],
            "steadfast: `--no-shortest` keeps the run's own traces and `--no-traces` drops them: give one",
        ),
        (
            &["check", "leadership", "--symmetry"],
            "steadfast: `--symmetry` needs `--dfs`: stateright ignores symmetry reduction in breadth-first runs",
        ),
        (
            &["check", "durable", "--simulate", "--time", "1s", "--por"],
            "steadfast: `--por` is an option of the exhaustive check, not of `--simulate`",
        ),
        (
            &["bench", "--reductions", "--limit", "5"],
            "steadfast: `bench --reductions` takes only `--cap SECONDS`",
        ),
        (
            &["conform", "durable", "--design", "commit-on-snapshot"],
            "steadfast: the mutant design `commit-on-snapshot` is a sink that commits when a \
             checkpoint is taken",
        ),
        (
            &["conform", "durable-eager", "--subtasks", "2"],
            "steadfast: durable-eager drives one operator, so it has one subtask",
        ),
        (
            &["check", "leadership", "--dfs", "--symmetry", "--statuses", "1"],
            "steadfast: `--symmetry`: model leadership (design fixed, decide-while-closing=false \
             dispatcher-overlap=false epochs=3 failures-before-decision=false fenced-result-store=false \
             grants=3 jobmaster-crash=false jobmaster-failures=false jobs=1 late-signal=false \
             old-runner-first=true ordering=all rerun-decides=false statuses=1) \
             has no \
             interchangeable components to reduce by symmetry",
        ),
    ];
    for (args, start) in cases {
        let o = steadfast(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(e.starts_with(start), "{args:?}: {e}");
        assert_eq!(e.lines().count(), 1, "{args:?}: {e}");
    }
}

#[test]
fn json_report_carries_counts_verdicts_and_traces() {
    // `check leadership --design runner-fix-only --json` with `extra`, which fails.
    let report = |extra: &[&str]| -> Value {
        let mut args = vec![
            "check",
            "leadership",
            "--design",
            "runner-fix-only",
            "--json",
        ];
        args.extend_from_slice(extra);
        let o = steadfast(&args);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        serde_json::from_slice(&o.stdout).expect("one JSON document")
    };
    let v = report(&[]);
    assert_eq!(v["model"], "leadership");
    assert_eq!(v["design"], "runner-fix-only");
    assert_eq!(v["unique_states"], 11418);
    let props = v["properties"].as_array().unwrap();
    let reanimation = props
        .iter()
        .find(|p| p["name"] == "no reanimation")
        .unwrap();
    assert_eq!(reanimation["verdict"], "counterexample");
    assert_eq!(reanimation["trace"]["shape"], "ordering B");
    let masking = props
        .iter()
        .find(|p| p["name"] == "one live process")
        .unwrap();
    assert_eq!(masking["verdict"], "holds");
    assert!(masking["trace"].is_null());

    // Without traces: the same counts and verdicts, no trace anywhere.
    let bare = report(&["--no-traces"]);
    assert_eq!(bare["unique_states"], 11418);
    for (p, q) in bare["properties"].as_array().unwrap().iter().zip(props) {
        assert_eq!(p["name"], q["name"]);
        assert_eq!(p["verdict"], q["verdict"]);
        assert!(p["trace"].is_null(), "{p}");
    }
}

#[test]
fn several_jobs_are_checked_and_the_counterexample_names_the_job() {
    // `--jobs 2` runs the several-jobs model: the settings say so, the counts are its.
    let o = steadfast(&[
        "check",
        "leadership",
        "--jobs",
        "2",
        "--grants",
        "2",
        "--epochs",
        "2",
        "--statuses",
        "1",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    assert_eq!(v["unique_states"], 29263);
    assert!(
        v["settings"].to_string().contains(r#"["jobs","2"]"#),
        "{}",
        v["settings"]
    );
    // A several-jobs scenario routes there too; with JobMaster failures only before a
    // decision, one job's fatal error kills the other's unrecorded decision, and the
    // trace says which job.
    let report = std::env::temp_dir().join(format!("steadfast-jobs-{}.html", std::process::id()));
    let o = steadfast(&[
        "check",
        "leadership",
        "--scenario",
        "two-jobs-jobmaster-failures",
        "--failures-before-decision",
        "true",
        "--design",
        "fixed",
        "--report",
        report.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    // The report's lane diagrams have lanes per job and the shared ones.
    let html = std::fs::read_to_string(&report).unwrap();
    std::fs::remove_file(&report).unwrap();
    for lane in [
        "job 1 process 2<",
        "job 2 runner<",
        "job 2 scheduler<",
        "HA stores<",
    ] {
        assert!(html.contains(lane), "{lane}");
    }
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("287632 unique states"), "{out}");
    assert!(
        out.contains(
            "counterexample to \"no reanimation\" [job 1: JobManager crash before the result \
             was recorded], 10 steps"
        ),
        "{out}"
    );
    assert!(
        out.contains("job 2: the dispatcher sees a JobMaster failure: a fatal error"),
        "{out}"
    );
    // With symmetry over jobs the same verdicts from fewer states.
    let count = |extra: &[&str]| {
        let mut args = vec![
            "check",
            "leadership",
            "--scenario",
            "two-jobs",
            "--dfs",
            "--json",
        ];
        args.extend_from_slice(extra);
        let o = steadfast(&args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        v["unique_states"].as_u64().unwrap()
    };
    assert_eq!((count(&[]), count(&["--symmetry"])), (29263, 14854));
}

#[test]
fn symmetry_flag_reduces_the_dfs_run_and_the_report_says_so() {
    let check = |extra: &[&str]| {
        let mut args = vec![
            "check",
            "leadership",
            "--design",
            "runner-fix-only",
            "--dfs",
        ];
        args.extend_from_slice(extra);
        args.push("--json");
        let o = steadfast(&args);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        serde_json::from_slice::<Value>(&o.stdout).expect("one JSON document")
    };
    let plain = check(&[]);
    let reduced = check(&["--symmetry"]);
    assert_eq!(plain["symmetry"], false);
    assert_eq!(reduced["symmetry"], true);
    assert_eq!(plain["unique_states"], 11418);
    assert_eq!(reduced["unique_states"], 4474);
    let verdicts = |v: &Value| -> Vec<(String, String)> {
        v["properties"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p["name"].to_string(), p["verdict"].to_string()))
            .collect()
    };
    assert_eq!(verdicts(&plain), verdicts(&reduced));
    // The shortest traces still come from unreduced BFS runs: the same as without.
    let reanimation = |v: &Value| {
        v["properties"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "no reanimation")
            .unwrap()["trace"]
            .clone()
    };
    assert_eq!(reanimation(&reduced)["shape"], "ordering B");
    assert_eq!(reanimation(&reduced)["steps"].as_array().unwrap().len(), 10);
    assert_eq!(reanimation(&reduced), reanimation(&plain));

    let text = steadfast(&["check", "leadership", "--dfs", "--symmetry"]);
    assert_eq!(text.status.code(), Some(0), "{}", stderr(&text));
    let out = String::from_utf8_lossy(&text.stdout);
    assert!(out.contains("2848 unique states"), "{out}");
    assert!(
        out.contains("symmetry reduction on (depth-first)") && out.contains("without it"),
        "{out}"
    );
    let help = steadfast(&["--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("[--dfs [--symmetry]]") && help.contains("[--por]"),
        "{help}"
    );
    assert!(
        help.contains("--symmetry      (check, with --dfs)"),
        "{help}"
    );
}

#[test]
fn bench_reports_the_symmetry_reduction_factor() {
    let o = steadfast(&["bench", "leadership"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    let (_, table) = text
        .split_once("symmetry reduction at default bounds")
        .expect("a symmetry table");
    // model, design, unique without, unique with, factor (seconds vary).
    let rows: Vec<Vec<&str>> = table
        .lines()
        .filter(|l| l.starts_with("leadership"))
        .map(|l| l.split_whitespace().take(5).collect())
        .collect();
    assert_eq!(
        rows,
        [
            ["leadership", "unpatched", "34967", "12947", "2.70"],
            ["leadership", "process-fix-only", "19494", "7612", "2.56"],
            ["leadership", "runner-fix-only", "11418", "4474", "2.55"],
            ["leadership", "fixed", "6786", "2848", "2.38"],
            [
                "leadership",
                "revoke-clears-leader",
                "11219",
                "4449",
                "2.52"
            ],
        ]
    );
}

#[test]
fn scenario_presets_restrict_the_interleavings() {
    let a = steadfast(&[
        "check",
        "leadership",
        "--design",
        "runner-fix-only",
        "--scenario",
        "ordering-a",
    ]);
    assert_eq!(
        a.status.code(),
        Some(1),
        "unreached ordering-B situations fail the run"
    );
    let text = String::from_utf8_lossy(&a.stdout);
    assert!(text.contains("ordering=a"), "{text}");
    assert!(
        !text.contains("counterexample to"),
        "runner fix holds under A: {text}"
    );
}

#[test]
fn verdicts_reproduce_every_table() {
    let o = steadfast(&["verdicts"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    let summary = text.lines().last().unwrap();
    let (matched, total) = summary
        .split_once(" of ")
        .map(|(m, rest)| (m.to_string(), rest.split(' ').next().unwrap().to_string()))
        .unwrap();
    assert_eq!(matched, total, "{summary}");
    assert!(!text.contains(" NO"), "{text}");
}

// ---- Explorer ----

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn http(port: u16, method: &str, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(20))).ok()?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut raw = String::new();
    s.read_to_string(&mut raw).ok()?;
    let (head, body) = raw.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    Some((
        status,
        if chunked {
            dechunk(body)?
        } else {
            body.to_string()
        },
    ))
}

/// The body of a chunked HTTP/1.1 response (the Explorer chunks large bodies): each
/// chunk is its size in hex on a line, then that many bytes; size 0 ends it.
fn dechunk(mut rest: &str) -> Option<String> {
    let mut body = String::new();
    loop {
        let (size, after) = rest.split_once("\r\n")?;
        let size = usize::from_str_radix(size.split(';').next()?.trim(), 16).ok()?;
        if size == 0 {
            return Some(body);
        }
        body.push_str(after.get(..size)?);
        rest = after.get(size..)?.strip_prefix("\r\n")?;
    }
}

struct Explorer(Child);

impl Drop for Explorer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn explorer_finds_and_serves_a_counterexample_headlessly() {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let _explorer = Explorer(
        Command::new(env!("CARGO_BIN_EXE_steadfast"))
            .args([
                "explore",
                "leadership",
                "--design",
                "unpatched",
                "--grants",
                "2",
            ])
            .args(["--addr", &addr])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    while http(port, "GET", "/.status").is_none() {
        assert!(Instant::now() < deadline, "the Explorer never answered");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (code, _) = http(port, "POST", "/.runtocompletion").unwrap();
    assert_eq!(code, 200);
    let status = loop {
        let (_, body) = http(port, "GET", "/.status").unwrap();
        let v: Value = serde_json::from_str(&body).unwrap();
        if v["done"] == true {
            break v;
        }
        assert!(
            Instant::now() < deadline,
            "the Explorer never finished: {v}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    // Properties are [expectation, name, discovery path or null].
    let props = status["properties"].as_array().unwrap();
    let reanimation = props
        .iter()
        .find(|p| p[1] == "no reanimation")
        .expect("the property is listed");
    let path = reanimation[2]
        .as_str()
        .expect("a counterexample was discovered");
    // The Explorer lists a path's successors; the discovery's last state is the successor
    // of its parent path at the last action index, and it must be a reanimation: a
    // terminal status decided, and a second process created.
    let (parent, last) = path.rsplit_once('/').unwrap();
    let (code, body) = http(port, "GET", &format!("/.states/{parent}")).unwrap();
    assert_eq!(code, 200, "{body}");
    let steps: Value = serde_json::from_str(&body).unwrap();
    let violating = steps
        .as_array()
        .unwrap()
        .iter()
        .find(|s| {
            s["actionIndex"].as_str() == Some(last)
                || s["actionIndex"] == last.parse::<u64>().unwrap()
        })
        .expect("the discovery's last step is served");
    let state = violating["state"].as_str().unwrap();
    assert!(state.contains("decided: Some("), "{state}");
    assert!(state.contains("process_count: 2"), "{state}");
    let (code, _) = http(port, "GET", &format!("/.states/{path}/999")).unwrap();
    assert_eq!(code, 404, "an index past the enabled actions is refused");
}

#[test]
fn explorer_on_a_taken_port_is_a_usage_error() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let o = steadfast(&["explore", "leadership", "--addr", &addr]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).starts_with(&format!("steadfast: cannot listen on `{addr}`")),
        "{}",
        stderr(&o)
    );
}

// ---- Conformance commands ----

#[test]
fn conform_replays_every_leadership_transition() {
    let o = steadfast(&["conform", "leadership"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("6786 unique states, 12106 transitions replayed"),
        "{text}"
    );
}

/// Overlapping dispatcher leaders: the old JobManager stops beside the next leader on
/// the same stores, and every transition agrees.
#[test]
fn conform_replays_overlapping_dispatcher_leaders() {
    let o = steadfast(&["conform", "leadership", "--dispatcher-overlap", "true"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}{}", stderr(&o));
    assert!(
        text.contains("37225 unique states, 93057 transitions replayed"),
        "{text}"
    );
    assert!(text.contains("OldMarkResultClean 4206"), "{text}");
}

/// Two operators on one log and a scale-in restore: every transition of the `rescale`
/// scenario agrees.
#[test]
fn conform_replays_two_subtasks_and_a_scale_in() {
    let o = steadfast(&[
        "conform",
        "durable",
        "--scenario",
        "rescale",
        "--walks",
        "0",
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}{}", stderr(&o));
    assert!(
        text.contains("140882 unique states, 357411 transitions replayed"),
        "{text}"
    );
    assert!(text.contains("RestoreScaledIn 1062"), "{text}");
}

#[test]
fn conform_on_two_threads_replays_the_same_transitions() {
    let o = steadfast(&["conform", "leadership", "--threads", "2", "--walks", "0"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(
        text.contains("6786 unique states, 12106 transitions replayed"),
        "{text}"
    );
    assert!(text.contains(", 2 threads)"), "{text}");
    let o = steadfast(&["conform", "leadership", "--threads", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("threads"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn conform_drives_the_eager_operator_one_event_at_a_time() {
    let o = steadfast(&[
        "conform",
        "durable-eager",
        "--inputs",
        "1",
        "--compact-offsets",
        "false",
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(
        text.contains("durable-eager fixed: 2429 unique states, 6119 transitions replayed"),
        "{text}"
    );
    assert!(text.contains("CallSupplier + Crash"), "{text}");
}

#[test]
fn conform_drives_the_automatic_leadership_driver_one_event_at_a_time() {
    let o = steadfast(&["conform", "leadership-automatic", "--walks", "0"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(
        text.contains("leadership-automatic fixed: 3979 unique states, 7597 transitions replayed"),
        "{text}"
    );
    assert!(text.contains("GrantLeadership + RunGrant 82"), "{text}");
    assert!(text.contains("RevokeLeadership + RunRevoke 259"), "{text}");
}

#[test]
fn conform_drives_the_blocking_driver_one_call_per_event() {
    let o = steadfast(&[
        "conform",
        "durable-driver",
        "--inputs",
        "1",
        "--compact-offsets",
        "false",
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(
        text.contains("durable-driver fixed: 3944 unique states, 8692 transitions replayed"),
        "{text}"
    );
    assert!(text.contains("CallSupplier + Crash"), "{text}");
    // A model the driver has no counterpart for is refused by name.
    let o = steadfast(&["conform", "durable-driver", "--lost-completions", "true"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("has no `lost-completions`"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn departs_names_the_step_where_the_fix_acts() {
    let o = steadfast(&["departs", "leadership"]);
    assert_eq!(o.status.code(), Some(0));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("6. [DIFFER] the runner's chain runs the revoke"),
        "{text}"
    );
    assert!(text.contains("diverge at step 6 (RunRevoke)"), "{text}");
}

#[test]
fn departs_with_a_named_property_replays_its_counterexample_and_refuses_others() {
    let o = steadfast(&["departs", "durable", "--property", "call at most once"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains(
            "shortest counterexample to \"call at most once\" in durable unpatched (11 steps)"
        ),
        "{text}"
    );
    assert!(
        text.contains("diverge at step 6 (TriggerCheckpoint)"),
        "{text}"
    );

    // A reachability property has examples, not counterexamples.
    let o = steadfast(&["departs", "leadership", "--property", "a job finishes"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("`a job finishes` is not a safety property of leadership"),
        "{}",
        stderr(&o)
    );
    // A safety property that holds even unpatched at these settings.
    let o = steadfast(&["departs", "leadership", "--property", "one live process"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("`one live process` has no counterexample in leadership unpatched"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn traces_written_as_itf_replay_and_bad_files_are_named() {
    let dir = std::env::temp_dir().join(format!("steadfast-cli-traces-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = dir.to_str().unwrap();
    let o = steadfast(&[
        "traces",
        "leadership",
        "--out",
        out,
        "--format",
        "itf",
        "--grants",
        "1",
        "--epochs",
        "1",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.starts_with("wrote 96 of 96 traces"), "{text}");
    let last = dir.join("leadership-fixed-000095.itf.json");
    let o = steadfast(&["replay", last.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("agrees with the model at every step"));

    let cut = dir.join("cut.json");
    let full = std::fs::read_to_string(&last).unwrap();
    std::fs::write(&cut, &full[..full.len() / 2]).unwrap();
    let o = steadfast(&["replay", cut.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("cut.json: not a trace file"),
        "{}",
        stderr(&o)
    );
    let o = steadfast(&["replay", dir.join("missing.json").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("missing.json: cannot read"),
        "{}",
        stderr(&o)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `traces` writes the eager-scheduling model's traces too (one per transition, as many
/// as `conform` replays), and `replay` drives the eager operator along one.
#[test]
fn eager_traces_are_written_and_replay() {
    let dir = std::env::temp_dir().join(format!("steadfast-cli-eager-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let bounds = ["--keys", "1", "--inputs", "1", "--compact-offsets", "false"];
    let mut args = vec!["traces", "durable-eager", "--out", dir.to_str().unwrap()];
    args.extend(bounds);
    let o = steadfast(&args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.starts_with("wrote 230 of 230 traces"), "{text}");
    let mut args = vec!["conform", "durable-eager", "--walks", "0"];
    args.extend(bounds);
    let o = steadfast(&args);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("230 transitions replayed"), "{text}");
    let last = dir.join("durable-eager-fixed-000229.json");
    let o = steadfast(&["replay", last.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(
        text.contains("9 steps of durable-eager fixed replayed: the runtime agrees"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A reader that stops early (`steadfast ... | head -1`) ends the output quietly: the
/// process goes as Unix tools do, on SIGPIPE, not with a panic on the failed write.
#[cfg(unix)]
#[test]
fn a_closed_pipe_ends_the_output_without_a_panic() {
    use std::os::unix::process::ExitStatusExt;
    let mut child = Command::new(env!("CARGO_BIN_EXE_steadfast"))
        .args(["check", "leadership", "--design", "unpatched"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    // Close the reading end before the first line is written.
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("the binary ends");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    // SIGPIPE is signal 13 on Linux.
    assert_eq!(out.status.signal(), Some(13), "{:?}", out.status);
}

/// `--por` checks durable with fewer states and the same verdicts, and says so; the
/// leadership model takes it too, and stores every state (its properties see every
/// step).
#[test]
fn partial_order_reduction_is_reported() {
    let json = |args: &[&str]| {
        let o = steadfast(args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        serde_json::from_slice::<Value>(&o.stdout).unwrap()
    };
    let base = ["check", "durable", "--inputs", "1", "--json", "--no-traces"];
    let plain = json(&base);
    let reduced = json(&[&base[..], &["--por"]].concat());
    assert!(reduced["unique_states"].as_u64() < plain["unique_states"].as_u64());
    let verdicts = |v: &Value| -> Vec<(String, String)> {
        let properties = v["properties"].as_array().unwrap().iter();
        properties
            .map(|p| (p["name"].to_string(), p["verdict"].to_string()))
            .collect()
    };
    assert_eq!(verdicts(&plain), verdicts(&reduced));
    assert_eq!(reduced["por"], true);
    assert!(reduced["expansions"][1].as_u64().unwrap() > 0, "{reduced}");

    let text = steadfast(&["check", "leadership", "--por", "--no-traces"]);
    assert_eq!(text.status.code(), Some(0), "{}", stderr(&text));
    let out = String::from_utf8_lossy(&text.stdout);
    assert!(out.contains("6786 unique states"), "{out}");
    assert!(
        out.contains("partial-order reduction on: 0 of ")
            && out.contains("shortest among the reduced paths"),
        "{out}"
    );
}
