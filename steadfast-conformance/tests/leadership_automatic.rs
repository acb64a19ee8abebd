//! Conformance of the automatic leadership driver (`Harness::new(job, true)`: queries
//! answered, store requests executed and runner results handed to the dispatcher as
//! they arise; `grant()` and `revoke()` issue and deliver at once) with the leadership
//! model seen at its quiescent points: every event of that graph replayed, with
//! stateright's own counts of it, under the scenarios the stepwise binding covers; the
//! unpatched design caught at its first revoke; the order in which the driver logs a
//! run, which no concatenation of the model's steps gives.

use std::collections::{BTreeMap, HashSet, VecDeque};

use stateright::{Checker, Model};
use steadfast::leadership::LeadershipError;
use steadfast_conformance::cover::{cover, Coverage};
use steadfast_conformance::leadership::automatic::{
    automatic_runtime, check_event_log, Automatic, AutomaticBinding, AutomaticLeadership,
    AutomaticStep,
};
use steadfast_conformance::leadership::{collect, expected_log, LogRecord, Rejection};
use steadfast_conformance::trace;
use steadfast_conformance::walk::walk;
use steadfast_conformance::{Binding, Problem};
use steadfast_model::leadership::{Action, Leadership, State};

/// The event kinds of the fixed design at the defaults: every external step of the
/// model, and the driver's `grant()` and `revoke()`.
const KINDS: [&str; 12] = [
    "CheckLeadershipInForward",
    "DecideTerminal",
    "DeliverTerminalSignal",
    "DispatcherFailover",
    "GrantLeadership",
    "GrantLeadership + RunGrant",
    "RecoverJob",
    "RevokeLeadership",
    "RevokeLeadership + RunRevoke",
    "RunGrant",
    "RunRevoke",
    "TerminateService",
];

/// The stepwise binding's largest bounds that cover in full in a second or two.
const LARGEST: [(&str, &str); 3] = [("grants", "4"), ("epochs", "3"), ("statuses", "3")];

fn automatic(design: &str, overrides: &[(&str, &str)]) -> AutomaticLeadership {
    AutomaticLeadership::new(
        Leadership::scenario(design, "default", overrides).expect("valid settings"),
    )
}

fn report(what: &str, c: &Coverage) {
    println!(
        "{what}: {} events over {} quiescent states, {} runtime steps ({} probes refused), {:.3} s, {:.0} steps/s",
        c.transitions,
        c.unique_states,
        c.steps,
        c.probes,
        c.seconds,
        c.steps_per_second()
    );
    println!("  per kind: {:?}", c.kinds);
}

/// Covers the automatic graph of `m` and checks it against stateright's own counts of
/// that graph (every state quiescent, every event replayed, every external kind taken).
fn full_coverage(what: &str, m: &AutomaticLeadership) -> Coverage {
    let c = cover::<AutomaticBinding>(m).unwrap_or_else(|d| panic!("{what}: {d}"));
    report(what, &c);
    let checker = m.clone().checker().spawn_bfs().join();
    assert!(
        checker.discoveries().is_empty(),
        "{what}: a run ends with an internal step left"
    );
    assert_eq!(c.unique_states, checker.unique_state_count(), "{what}");
    assert_eq!(c.transitions, checker.state_count() - 1, "{what}");
    let mut want = KINDS.to_vec();
    if m.model.jobmaster_crash {
        want.push("CrashJobManager");
    }
    if m.model.jobmaster_failures {
        want.extend(["FailInitialization", "FailJobMaster"]);
    }
    want.sort();
    let kinds: Vec<&str> = c.kinds.keys().map(String::as_str).collect();
    assert_eq!(kinds, want, "{what}: every external kind is taken");
    assert_eq!(c.steps, c.transitions + c.probes, "{what}");
    c
}

/// How often each internal step is taken over the automatic graph of `m`, and the
/// states where one external step has runs ending in different states.
fn internal_steps(m: &AutomaticLeadership) -> (BTreeMap<String, usize>, usize) {
    let mut seen = HashSet::new();
    let mut queue: VecDeque<State> = m.init_states().into();
    let mut kinds = BTreeMap::new();
    let mut branching = 0;
    while let Some(s) = queue.pop_front() {
        if !seen.insert(s) {
            continue;
        }
        let events = m.events(&s);
        let mut heads = HashSet::new();
        let mut branches = false;
        for (e, next) in events {
            let head = AutomaticBinding::kind(&e) + &format!("{:?}", e.steps[0]);
            branches |= !heads.insert(head);
            for a in e.steps.iter().filter(|a| Automatic::internal(a)) {
                *kinds.entry(format!("{a:?}")).or_default() += 1;
            }
            queue.push_back(next);
        }
        branching += usize::from(branches);
    }
    (kinds, branching)
}

#[test]
fn automatic_events_out_of_the_first_states() {
    let m = automatic("fixed", &[]);
    let shown =
        |s: &State| -> Vec<String> { m.events(s).iter().map(|(e, _)| format!("{e:?}")).collect() };
    let init = m.init_states()[0];
    assert_eq!(
        shown(&init),
        [
            "GrantLeadership(1)",
            "GrantLeadership(1) + RunGrant(1)",
            "DispatcherFailover [CloseRunner, HandleRunnerResult]"
        ]
    );
    // Granted and started: a terminal decision, forwarded, completes the runner; the
    // driver hands the result over, the dispatcher writes the entry, closes the runner
    // and cleans up, and the runner's close completes, all in the forward's call.
    let path = [
        Action::GrantLeadership(1),
        Action::RunGrant(1),
        Action::DecideTerminal(steadfast_model::leadership::Status::Finished),
        Action::DeliverTerminalSignal(1),
    ];
    let s = trace::states_of(&m.model, 0, &path)
        .unwrap()
        .last()
        .unwrap()
        .0;
    assert_eq!(
        shown(&s),
        [
            "RevokeLeadership(1)",
            "RevokeLeadership(1) + RunRevoke",
            "CheckLeadershipInForward(1) [HandleRunnerResult, RemoveJobGraph, MarkResultClean]",
            "DispatcherFailover"
        ]
    );
}

#[test]
fn every_automatic_event_of_the_fixed_design_conforms_at_default_bounds() {
    let m = automatic("fixed", &[]);
    let c = full_coverage("fixed, automatic, default bounds", &m);
    assert_eq!((c.unique_states, c.transitions), (3_979, 7_597));
    assert_eq!(c.probes, 42_166);
    assert_eq!(c.kinds["GrantLeadership + RunGrant"], 82);
    assert_eq!(c.kinds["RevokeLeadership + RunRevoke"], 259);
    // Every internal step is taken, and the internal steps of a run end in one state
    // whatever their order.
    let (steps, branching) = internal_steps(&m);
    println!("fixed, automatic: internal steps in the runs: {steps:?}");
    assert_eq!(
        steps,
        BTreeMap::from(
            [
                ("CloseRunner", 979),
                ("HandleRunnerResult", 922),
                ("MarkResultClean", 726),
                ("RemoveJobGraph", 726),
            ]
            .map(|(k, n)| (k.to_string(), n))
        )
    );
    assert_eq!(branching, 0);
    // Stateright's trace set of the automatic graph is its transitions.
    assert_eq!(c.transitions, trace::trace_set(&m).len());
}

#[test]
fn every_automatic_event_conforms_under_each_ordering_and_the_late_signal() {
    for (settings, counts) in [
        (vec![("ordering", "a")], (3_610, 6_547, 38_491)),
        (vec![("ordering", "b")], (3_187, 5_608, 33_448)),
        (vec![("late-signal", "true")], (10_039, 18_736, 113_131)),
    ] {
        let what = format!("fixed, automatic, {settings:?}");
        let c = full_coverage(&what, &automatic("fixed", &settings));
        assert_eq!((c.unique_states, c.transitions, c.probes), counts, "{what}");
    }
}

#[test]
fn every_automatic_event_conforms_at_the_largest_bounds() {
    let c = full_coverage(
        "fixed, automatic, largest bounds",
        &automatic("fixed", &LARGEST),
    );
    assert_eq!(
        (c.unique_states, c.transitions, c.probes),
        (11_677, 22_670, 137_132)
    );
    let mut late = LARGEST.to_vec();
    late.extend([("late-signal", "true"), ("jobmaster-crash", "true")]);
    let c = full_coverage(
        "fixed, automatic, largest bounds, late-signal, jobmaster-crash",
        &automatic("fixed", &late),
    );
    assert_eq!(
        (c.unique_states, c.transitions, c.probes),
        (90_732, 185_205, 1_163_339)
    );
}

#[test]
fn every_automatic_event_conforms_when_a_jobmanager_crashes_or_a_jobmaster_fails() {
    for (settings, counts) in [
        (vec![("jobmaster-crash", "true")], (9_531, 19_879, 106_985)),
        (
            vec![("jobmaster-failures", "true")],
            (54_026, 99_277, 663_151),
        ),
        (
            vec![("jobmaster-failures", "true"), ("jobmaster-crash", "true")],
            (106_382, 224_385, 1_319_310),
        ),
    ] {
        let what = format!("fixed, automatic, {settings:?}");
        let c = full_coverage(&what, &automatic("fixed", &settings));
        assert_eq!((c.unique_states, c.transitions, c.probes), counts, "{what}");
    }
}

/// The old JobManager stops beside the next leader: its result handling, cleanup and
/// close are internal steps too, taken in the call that enables them.
#[test]
fn every_automatic_event_conforms_when_dispatcher_leaders_overlap() {
    let overlap = ("dispatcher-overlap", "true");
    let fenced = ("fenced-result-store", "true");
    let crash = ("jobmaster-crash", "true");
    for (settings, counts) in [
        (vec![overlap], (8_815, 20_200, 91_586)),
        (vec![overlap, fenced], (8_992, 20_542, 93_548)),
        (vec![overlap, crash], (15_918, 38_059, 174_294)),
        (vec![overlap, fenced, crash], (16_152, 38_593, 176_757)),
    ] {
        let what = format!("fixed, automatic, {settings:?}");
        let m = automatic("fixed", &settings);
        let c = full_coverage(&what, &m);
        assert_eq!((c.unique_states, c.transitions, c.probes), counts, "{what}");
        let (steps, branching) = internal_steps(&m);
        assert_eq!(branching, 0, "{what}");
        for old in ["CloseOldRunner", "OldDispatcherHandlesResult"] {
            assert!(steps.contains_key(old), "{what}: {steps:?}");
        }
        // Fenced stores refuse the old dispatcher's cleanup.
        let cleans = steps.contains_key("OldRemoveJobGraph");
        assert_eq!(cleans, !settings.contains(&fenced), "{what}: {steps:?}");
    }
}

#[test]
fn seeded_automatic_walks_repeat() {
    let mut late = LARGEST.to_vec();
    late.push(("late-signal", "true"));
    let m = automatic("fixed", &late);
    let first = walk::<AutomaticBinding>(&m, 1158, 2_000, 64).unwrap_or_else(|d| panic!("{d}"));
    let again = walk::<AutomaticBinding>(&m, 1158, 2_000, 64).unwrap();
    assert_eq!(
        (first.walks, first.steps, first.probes, first.longest),
        (again.walks, again.steps, again.probes, again.longest)
    );
    println!(
        "automatic walks: {} walks, {} events, {} probes, longest {}",
        first.walks, first.steps, first.probes, first.longest
    );
    assert_eq!(
        (first.steps, first.probes, first.longest),
        (34_421, 36_421, 28)
    );
}

/// `grant()` and `revoke()` need an empty channel: after the election's grant alone,
/// both are probes, refused with the message still undelivered and nothing changed.
#[test]
fn grant_and_revoke_are_refused_while_a_message_is_undelivered() {
    let m = automatic("fixed", &[]);
    let init = m.init_states()[0];
    let mut rt = AutomaticBinding::start(&m, &init);
    let grant = AutomaticStep {
        steps: vec![Action::GrantLeadership(1)],
    };
    AutomaticBinding::step(&m, &mut rt, &init, &grant).unwrap();
    let s = m.next_state(&init, grant).unwrap();
    let probes: Vec<String> = AutomaticBinding::probes(&m, &s)
        .iter()
        .map(|p| format!("{p:?}"))
        .collect();
    assert!(
        probes.contains(&"GrantLeadership(2) + RunGrant(2)".to_string()),
        "{probes:?}"
    );
    assert!(
        probes.contains(&"RevokeLeadership(1) + RunRevoke".to_string()),
        "{probes:?}"
    );
    let undelivered = LeadershipError::Election("earlier messages are undelivered");
    for steps in [
        vec![Action::GrantLeadership(2), Action::RunGrant(2)],
        vec![Action::RevokeLeadership(1), Action::RunRevoke],
    ] {
        let mut probe = rt.clone();
        let e = AutomaticBinding::step(&m, &mut probe, &s, &AutomaticStep { steps });
        assert_eq!(e, Err(Rejection::Runtime(undelivered.clone())));
        assert_eq!(
            AutomaticBinding::runtime_view(&probe),
            AutomaticBinding::model_view(&m, &s)
        );
        assert_eq!(probe.driver.pending_election().len(), 1);
    }
}

/// The unpatched process completes NotFinished as its close starts; the fixed one the
/// driver runs waits for its service: the first `revoke()` departs.
#[test]
fn the_unpatched_design_departs_at_the_first_revoke() {
    let d = cover::<AutomaticBinding>(&automatic("unpatched", &[])).unwrap_err();
    println!("{d}");
    assert_eq!(d.step, 2);
    assert_eq!(d.action, "RevokeLeadership(1) + RunRevoke");
    assert_eq!(
        d.trace,
        [
            "GrantLeadership(1) + RunGrant(1)",
            "RevokeLeadership(1) + RunRevoke"
        ]
    );
    assert_eq!(
        d.problem,
        Problem::Projection(vec![
            "processes[0].forward_pending: true | false".into(),
            "processes[0].result: \"NotFinished\" | null".into(),
        ])
    );
    assert!(
        d.runtime.contains("auto_answer: true, stepwise: false"),
        "{}",
        d.runtime
    );
}

/// The runtime's log of one event, the event driven with the log check off.
fn runtime_log(m: &AutomaticLeadership, s: &State, e: &AutomaticStep) -> Vec<String> {
    let mut rt = automatic_runtime(&m.model);
    rt.check_log = false;
    let (result, seen) = collect(|| AutomaticBinding::step(m, &mut rt, s, e));
    result.unwrap();
    seen.iter().map(LogRecord::to_string).collect()
}

/// The log the model's steps of `e` imply, each step's after the one before.
fn concatenated(m: &AutomaticLeadership, s: &State, e: &AutomaticStep) -> Vec<String> {
    let mut s = *s;
    let mut out = Vec::new();
    for a in &e.steps {
        out.extend(
            expected_log(&m.model, &s, a, false)
                .iter()
                .map(LogRecord::to_string),
        );
        s = m.model.next_state(&s, *a).unwrap();
    }
    out
}

/// The driver runs effects breadth first: a runner that closes at once publishes its
/// result before it reports its termination, and the dispatcher handles them in that
/// order; the model completes both in one step (`CloseRunner`), before the dispatcher
/// may handle the result. The binding therefore compares an event's log as a multiset.
#[test]
fn the_automatic_driver_logs_a_closing_runner_in_an_order_no_model_path_has() {
    let m = automatic("fixed", &[]);
    let init = m.init_states()[0];
    let failover = m
        .events(&init)
        .into_iter()
        .map(|(e, _)| e)
        .find(|e| e.steps[0] == Action::DispatcherFailover)
        .unwrap();
    assert_eq!(
        failover.steps,
        [
            Action::DispatcherFailover,
            Action::CloseRunner,
            Action::HandleRunnerResult
        ]
    );
    let want = concatenated(&m, &init, &failover);
    let seen = runtime_log(&m, &init, &failover);
    assert_eq!(
        want,
        [
            "dispatcher leadership_lost epoch=1 -> applied",
            "runner close_requested job=1 -> terminated",
            "dispatcher runner_terminated job=1 epoch=1 -> applied",
            "dispatcher runner_completed job=1 epoch=1 -> applied",
        ]
    );
    assert_eq!(
        seen,
        [
            "dispatcher leadership_lost epoch=1 -> applied",
            "runner close_requested job=1 -> terminated",
            "dispatcher runner_completed job=1 epoch=1 -> applied",
            "dispatcher runner_terminated job=1 epoch=1 -> applied",
        ]
    );
    // A terminal result: the dirty entry is written before the runner is asked to close.
    let path = [
        Action::GrantLeadership(1),
        Action::RunGrant(1),
        Action::DecideTerminal(steadfast_model::leadership::Status::Finished),
        Action::DeliverTerminalSignal(1),
    ];
    let states = trace::states_of(&m.model, 0, &path).unwrap();
    let s = states.last().unwrap().0;
    let forward = m
        .events(&s)
        .into_iter()
        .map(|(e, _)| e)
        .find(|e| e.steps[0] == Action::CheckLeadershipInForward(1))
        .unwrap();
    let mut rt = automatic_runtime(&m.model);
    rt.check_log = false;
    rt.driver.grant().unwrap();
    for (state, action) in &states[2..] {
        if let Some(a) = action {
            let e = AutomaticStep { steps: vec![*a] };
            AutomaticBinding::step(&m, &mut rt, state, &e).unwrap();
        }
    }
    let (result, seen) = collect(|| AutomaticBinding::step(&m, &mut rt, &s, &forward));
    result.unwrap();
    let seen: Vec<String> = seen.iter().map(LogRecord::to_string).collect();
    let want = concatenated(&m, &s, &forward);
    let at = |log: &[String], what: &str| log.iter().position(|r| r.contains(what)).unwrap();
    assert!(
        at(&want, "close_requested") < at(&want, "dirty_entry_written"),
        "{want:?}"
    );
    assert!(
        at(&seen, "dirty_entry_written") < at(&seen, "close_requested"),
        "{seen:?}"
    );
    let (mut a, mut b) = (want.clone(), seen.clone());
    a.sort();
    b.sort();
    assert_eq!(a, b);
}

#[test]
fn automatic_trace_files_replay() {
    let m = automatic("fixed", &[]);
    let (init, events) = trace::trace_set(&m).pop().expect("a longest trace");
    let file = trace::to_json(&m, init, &events).unwrap();
    assert_eq!(file.model, "leadership-automatic");
    let text = serde_json::to_string(&file).unwrap();
    let loaded = trace::parse("a.json", &text).unwrap();
    let r = trace::replay::<AutomaticBinding>(&loaded).unwrap();
    assert!(r.divergence.is_none());
    assert_eq!(r.steps.len(), events.len());
}

/// The log check of an event takes the runtime's records in any order, but not a record
/// changed, missing or added.
#[test]
fn an_events_log_is_checked_record_by_record_in_any_order() {
    let m = automatic("fixed", &[]);
    let init = m.init_states()[0];
    let failover = m
        .events(&init)
        .into_iter()
        .map(|(e, _)| e)
        .find(|e| e.steps[0] == Action::DispatcherFailover)
        .unwrap();
    let mut rt = automatic_runtime(&m.model);
    rt.check_log = false;
    let (result, seen) = collect(|| AutomaticBinding::step(&m, &mut rt, &init, &failover));
    assert_eq!(check_event_log(&m, &init, &failover, &result, &seen), "");
    let mut reversed = seen.clone();
    reversed.reverse();
    assert_eq!(
        check_event_log(&m, &init, &failover, &result, &reversed),
        ""
    );
    let mut changed = seen.clone();
    changed[2].outcome = "discarded".into();
    assert_eq!(
        check_event_log(&m, &init, &failover, &result, &changed),
        "log missing: dispatcher runner_completed job=1 epoch=1 -> applied; \
         log unexpected: dispatcher runner_completed job=1 epoch=1 -> discarded"
    );
    assert_eq!(
        check_event_log(&m, &init, &failover, &result, &seen[1..]),
        "log missing: dispatcher leadership_lost epoch=1 -> applied"
    );
    let mut added = seen.clone();
    added.push(seen[0].clone());
    assert_eq!(
        check_event_log(&m, &init, &failover, &result, &added),
        "log unexpected: dispatcher leadership_lost epoch=1 -> applied"
    );
}
