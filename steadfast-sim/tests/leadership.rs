//! Concurrent runs of the leadership machines, their production logs, and the logs
//! checked against the model: valid for the fixed machines, rejected at the first event
//! a seed bug changes, rejected when a log is tampered with.

use std::fs;
use std::path::{Path, PathBuf};

use steadfast::leadership::Defect;
use steadfast_conformance::validate::{self, validate_leadership, Options, Validation, Verdict};
use steadfast_sim::leadership::{run, Config, Summary, MAX_GRANTS_PER_JOB};

fn simulate(dir: &Path, config: &Config) -> (PathBuf, Summary) {
    let path = dir.join(format!("run-{}.ndjson", config.seed));
    let summary = run(config, &path).expect("the run completes");
    (path, summary)
}

fn check(path: &Path, options: Options) -> Validation {
    validate_leadership(fs::File::open(path).unwrap(), options).expect("the log is readable")
}

fn check_text(text: &str) -> Result<Validation, validate::LogError> {
    validate_leadership(text.as_bytes(), Options::default())
}

fn config(seed: u64) -> Config {
    Config {
        seed,
        ..Config::default()
    }
}

/// Every run's sessions per job stay within what the model can explain.
#[test]
fn the_simulations_bound_is_within_the_models() {
    assert!(usize::from(MAX_GRANTS_PER_JOB) <= steadfast_model::leadership::MAX_GRANTS);
}

#[test]
fn a_seed_replays_its_run_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.ndjson");
    let b = dir.path().join("b.ndjson");
    let c = dir.path().join("c.ndjson");
    let sa = run(&config(42), &a).unwrap();
    let sb = run(&config(42), &b).unwrap();
    run(&config(43), &c).unwrap();
    assert_eq!(sa, sb);
    assert_eq!(fs::read(&a).unwrap(), fs::read(&b).unwrap());
    assert_ne!(fs::read(&a).unwrap(), fs::read(&c).unwrap());
    assert_eq!(
        sa.events,
        fs::read_to_string(&a).unwrap().lines().count() as u64
    );
}

/// Two hundred runs of four jobs each, with every fault the driver injects: every log
/// is valid, and the runs between them exercise what the faults are for.
#[test]
fn two_hundred_faulty_runs_are_all_explained_by_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let (mut failed_over, mut recovered, mut done, mut stormed, mut decided) = (0, 0, 0, 0, 0);
    let mut events = 0;
    for seed in 0..200 {
        let (path, s) = simulate(dir.path(), &config(seed));
        let v = check(&path, Options::default());
        assert_eq!(v.verdict, Verdict::Valid, "seed {seed}: {v:?}");
        assert_eq!(
            v.violations,
            vec![],
            "seed {seed}: the fixed design breaks a property"
        );
        assert_eq!(v.jobs, 4);
        assert_eq!(s.refusals, 0, "seed {seed}: a machine refused an event");
        let text = fs::read_to_string(&path).unwrap();
        failed_over += usize::from(s.epochs > 1);
        recovered += usize::from(s.runners_started > 4);
        done += s.jobs_done;
        events += s.events;
        decided += usize::from(text.contains("\"event\":\"terminal_signal\""));
        // A storm: a grant and its revoke at the same instant, before the runner saw it.
        stormed += usize::from(text.lines().collect::<Vec<_>>().windows(2).any(|w| {
            w[0].contains("\"event\":\"issue\"") && w[1].contains("\"event\":\"revoke\"")
        }));
    }
    assert!(failed_over >= 100, "only {failed_over} runs failed over");
    assert!(recovered >= 50, "only {recovered} runs recovered a job");
    assert!(done >= 400, "only {done} of 800 jobs finished");
    assert!(stormed >= 50, "only {stormed} runs had a storm");
    assert!(
        decided >= 190,
        "only {decided} runs decided a terminal status"
    );
    assert!(events > 15_000, "{events} events");
}

/// A run that lets terminal signals arrive after the service terminated is explained
/// only by the model with `late-signal`: its header says so, and forcing the setting off
/// rejects some run at a signal to a terminated process. Explained, such runs show the
/// fixed design's residual window in the production machines: a signal lost after the
/// service ended, and the job run again.
#[test]
fn late_signals_need_the_models_late_signal_setting_and_reanimate_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let mut rejected_without = None;
    let mut reanimated = Vec::new();
    for seed in 0..100 {
        let c = Config {
            late_signal: true,
            ..config(seed)
        };
        let (path, _) = simulate(dir.path(), &c);
        let v = check(&path, Options::default());
        assert!(v.late_signal);
        assert_eq!(v.verdict, Verdict::Valid, "seed {seed}: {v:?}");
        // Where a job is run again, its terminal signal was lost first: it met a
        // result completed already, while the runner result was unset ("set once") or
        // after it was set otherwise ("no masking").
        if let Some(x) = v.violations.iter().find(|x| x.property == "no reanimation") {
            let lost = v
                .violations
                .iter()
                .find(|y| y.job == x.job && ["set once", "no masking"].contains(&y.property))
                .unwrap_or_else(|| panic!("seed {seed}: reanimated without a lost signal"));
            assert!(lost.line < x.line);
            assert!(
                lost.event.starts_with("process terminal_signal"),
                "{}",
                lost.event
            );
            assert!(
                x.event.starts_with("runner leadership_granted"),
                "{}",
                x.event
            );
            reanimated.push(seed);
        }
        let forced = check(
            &path,
            Options {
                late_signal: Some(false),
                ..Options::default()
            },
        );
        if let Verdict::Unexplained { event, .. } = forced.verdict {
            rejected_without.get_or_insert((seed, event));
        }
    }
    assert_eq!(
        reanimated,
        [
            0, 1, 4, 9, 13, 16, 21, 22, 25, 30, 31, 38, 39, 41, 43, 45, 47, 55, 61, 68, 69, 70, 74,
            83, 86, 88, 93, 94
        ]
    );
    let (seed, event) = rejected_without.expect("some run delivers a signal late");
    assert!(
        event.starts_with("process service_terminated")
            || event.starts_with("process terminal_signal"),
        "seed {seed}: {event}"
    );
}

/// The first seeded run whose log the model rejects, with the rejected event and what
/// the model allowed instead.
fn first_rejection(defect: Defect, runs: u64) -> (u64, String, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    for seed in 0..runs {
        let c = Config {
            defects: vec![defect],
            ..config(seed)
        };
        let (path, _) = simulate(dir.path(), &c);
        if let Verdict::Unexplained {
            event, expected, ..
        } = check(&path, Options::default()).verdict
        {
            return (seed, event, expected);
        }
    }
    panic!("no run of {runs} with {defect:?} was rejected");
}

/// Part 1 of the fix undone: a process completes NotFinished when it is closed. The
/// first event the bug changes is one of the closed process's own, or the forward of
/// the result it should not have yet.
#[test]
fn validation_catches_an_eager_not_finished() {
    let (seed, event, expected) = first_rejection(Defect::EagerNotFinished, 20);
    assert_eq!(seed, 0);
    // The signal meets a result already completed; the fixed process completes it.
    assert_eq!(
        event,
        "process terminal_signal job=3 session=2 status=CANCELED -> already_completed"
    );
    // The decision is unobservable until its signal arrives: any status could come.
    for status in ["FINISHED", "FAILED", "CANCELED"] {
        let completes = format!("process terminal_signal session=2 status={status} -> completed");
        assert!(expected.contains(&completes), "{expected:?}");
    }
    assert!(expected
        .contains(&"process service_terminated session=2 -> terminated_not_finished".to_string()));
}

/// The runner fix's bookkeeping undone: a revoke clears the current process leader, so
/// the terminal result forwarded after it is not cached.
#[test]
fn validation_catches_a_revoke_that_clears_the_process_leader() {
    let (seed, event, expected) = first_rejection(Defect::RevokeClearsLeader, 20);
    assert_eq!(seed, 0);
    assert_eq!(
        event,
        "runner forward_callback job=4 session=1 -> checking_leadership"
    );
    assert!(expected.contains(
        &"runner forward_callback session=1 job=4 -> cached_checking_leadership".to_string()
    ));
}

/// The machines with the revoke bug behave as the model's mutant design
/// `revoke-clears-leader` says: every log the fixed design rejects, the mutant explains,
/// and its safety properties fail where the bug loses a result.
#[test]
fn the_revoke_bug_is_the_models_mutant_design() {
    let dir = tempfile::tempdir().unwrap();
    let mutant = Options {
        design: Some("revoke-clears-leader"),
        ..Options::default()
    };
    let (mut rejected_by_fixed, mut unsafe_runs) = (0, 0);
    for seed in 0..100 {
        let c = Config {
            defects: vec![Defect::RevokeClearsLeader],
            ..config(seed)
        };
        let (path, _) = simulate(dir.path(), &c);
        let v = check(&path, mutant);
        assert_eq!(v.verdict, Verdict::Valid, "seed {seed}: {v:?}");
        rejected_by_fixed += usize::from(!check(&path, Options::default()).is_valid());
        unsafe_runs += usize::from(!v.violations.is_empty());
    }
    // The bug acts in 78 of the 100 runs, and wherever it acts it loses a result.
    assert_eq!(rejected_by_fixed, 78);
    assert_eq!(unsafe_runs, 78);
    // And the fixed machines' logs are explained by the mutant only where the two
    // designs agree: some are not.
    let mut fixed_rejected_by_mutant = 0;
    for seed in 0..100 {
        let (path, _) = simulate(dir.path(), &config(seed));
        fixed_rejected_by_mutant += usize::from(!check(&path, mutant).is_valid());
    }
    // The same seeds run alike until the bug would act: there the two logs part.
    assert_eq!(fixed_rejected_by_mutant, 78);
}

/// Of many runs with a bug, most are rejected, and none of the fixed machines' are.
#[test]
fn most_runs_with_a_seed_bug_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    for defect in [Defect::EagerNotFinished, Defect::RevokeClearsLeader] {
        let mut rejected = 0;
        for seed in 0..50 {
            let c = Config {
                defects: vec![defect],
                ..config(seed)
            };
            let (path, _) = simulate(dir.path(), &c);
            rejected += usize::from(!check(&path, Options::default()).is_valid());
        }
        assert!(rejected >= 25, "{defect:?}: {rejected} of 50 rejected");
    }
}

fn valid_log() -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = simulate(dir.path(), &config(5));
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

fn rejected_line(lines: &[String]) -> (u64, String) {
    let text = lines.join("\n") + "\n";
    match check_text(&text).expect("readable").verdict {
        Verdict::Unexplained { line, event, .. } => (line, event),
        other => panic!("not rejected at an event: {other:?}"),
    }
}

/// The index of the first line with all of `parts`.
fn find(lines: &[String], parts: &[&str]) -> usize {
    lines
        .iter()
        .position(|l| parts.iter().all(|p| l.contains(p)))
        .unwrap_or_else(|| panic!("no line has {parts:?}"))
}

#[test]
fn a_log_missing_an_event_is_rejected_at_the_event_after_the_gap() {
    let mut lines = valid_log();
    assert!(check_text(&(lines.join("\n") + "\n")).unwrap().is_valid());
    // Job 1's first leadership question answered: remove it, and its confirmation
    // follows a grant whose store question was never answered.
    let at = find(&lines, &["\"job_result_store_answered\"", "\"job\":1"]);
    lines.remove(at);
    let (line, event) = rejected_line(&lines);
    assert_eq!(line, at as u64 + 1);
    assert!(
        event.starts_with("runner leadership_confirmed job=1 session=1"),
        "{event}"
    );
}

#[test]
fn a_log_with_two_events_swapped_is_rejected_at_the_first_of_them() {
    let mut lines = valid_log();
    let at = find(&lines, &["\"event\":\"leadership_confirmed\"", "\"job\":1"]);
    lines.swap(at - 1, at);
    let (line, event) = rejected_line(&lines);
    assert_eq!(line, at as u64);
    assert!(
        event.starts_with("runner leadership_confirmed job=1"),
        "{event}"
    );
}

#[test]
fn a_log_with_a_field_changed_is_rejected_at_that_event() {
    let mut lines = valid_log();
    let at = find(&lines, &["\"outcome\":\"process_started\"", "\"job\":2"]);
    lines[at] = lines[at].replace("process_started", "job_already_done");
    let (line, event) = rejected_line(&lines);
    assert_eq!(line, at as u64 + 1);
    assert!(event.ends_with("-> job_already_done"), "{event}");
    // The process and the runner must name the same status.
    let mut lines = valid_log();
    let at = find(&lines, &["\"event\":\"terminal_signal_delivered\""]);
    let status = ["FINISHED", "FAILED", "CANCELED"]
        .into_iter()
        .find(|s| lines[at].contains(&format!("\"status\":\"{s}\"")))
        .expect("the runner's event names the status");
    let other = if status == "FAILED" {
        "FINISHED"
    } else {
        "FAILED"
    };
    lines[at] = lines[at].replace(status, other);
    let (line, event) = rejected_line(&lines);
    assert_eq!(line, at as u64 + 1);
    assert!(event.contains(&format!("status={other}")), "{event}");
    let mut lines = valid_log();
    let at = find(&lines, &["\"event\":\"issue\"", "\"job\":3"]);
    lines[at] = lines[at].replace("\"session\":1", "\"session\":2");
    let (line, event) = rejected_line(&lines);
    assert_eq!(line, at as u64 + 1);
    assert_eq!(event, "election issue job=3 session=2 -> issued");
}

#[test]
fn a_log_that_stops_inside_a_step_is_truncated() {
    let mut lines = valid_log();
    // Cut after a grant reached job 2's runner, before its questions were answered.
    let at = find(&lines, &["\"event\":\"leadership_granted\"", "\"job\":2"]);
    lines.truncate(at + 1);
    let v = check_text(&(lines.join("\n") + "\n")).unwrap();
    assert_eq!(
        v.verdict,
        Verdict::Truncated {
            job: 2,
            missing: "runner job_result_store_answered job=2 -> checking_leadership".into()
        }
    );
}

#[test]
fn unreadable_logs_are_refused_with_their_line() {
    let ok = valid_log();
    let header = &ok[0];
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (Vec::new(), "the log is empty"),
        (
            format!("{header}\nnot json\n").into_bytes(),
            "line 2: not a log event",
        ),
        (
            [header.as_bytes(), b"\n{\"fields\":{\"event\":\"x\xff\"}}\n"].concat(),
            "line 2: not UTF-8",
        ),
        (
            format!("{header}\n{{\"fields\":{{\"event\":\"issue\"}}}}\n").into_bytes(),
            "line 2: an event without a `component` field",
        ),
        (
            format!("{header}\n{{\"fields\":{{\"component\":\"scheduler\",\"event\":\"decide\",\"outcome\":\"x\"}}}}\n")
                .into_bytes(),
            "line 2: an event of an unknown component `scheduler`",
        ),
        (
            format!("{header}\n{{\"fields\":{{\"component\":\"process\",\"event\":\"close\",\"outcome\":\"closing\",\"session\":1}}}}\n")
                .into_bytes(),
            "line 2: a process close event names no job",
        ),
        (
            "{\"fields\":{\"component\":\"run\",\"model\":\"durable\"}}\n".as_bytes().to_vec(),
            "line 1: a log of the `durable` model, not of leadership",
        ),
        (
            [header.as_bytes(), b"\n", &vec![b' '; validate::MAX_LINE_BYTES + 10]].concat(),
            "line 2: longer than 65536 bytes",
        ),
    ];
    for (bytes, want) in cases {
        let err = validate_leadership(&bytes[..], Options::default())
            .expect_err("an unreadable log is refused");
        assert!(
            err.to_string().starts_with(want),
            "{want:?}: got {:?}",
            err.to_string()
        );
        assert!(!err.to_string().contains('\n'));
    }
}

/// `validate_cluster` reads a log of one JobManager process as `validate_leadership`
/// does; the line standing for a process's death between two logs is refused in the log
/// of one process.
#[test]
fn a_cluster_of_one_log_validates_as_that_log_and_a_death_belongs_between_logs() {
    let text = valid_log().join("\n") + "\n";
    let alone = check_text(&text).expect("readable");
    let cluster = validate::validate_cluster(vec![Box::new(text.as_bytes())], Options::default())
        .expect("readable");
    assert_eq!(alone.verdict, Verdict::Valid);
    assert_eq!(
        (cluster.verdict, cluster.events, cluster.jobs),
        (alone.verdict, alone.events, alone.jobs)
    );
    let death = r#"{"fields":{"component":"jobmanager","event":"crash","outcome":"crashed"}}"#;
    let e = check_text(&format!("{text}{death}\n")).unwrap_err();
    assert!(e.why.contains("unknown component `jobmanager`"), "{e}");
}
