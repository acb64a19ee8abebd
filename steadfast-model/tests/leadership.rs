//! Tests of the FLINK-39704 leadership model (apache/flink PR 28201): every design's
//! verdicts against specs/leadership.md, pinned state counts, the seed's two
//! reproductions as shortest counterexamples, the fix's own test scenarios replayed as
//! paths, and the residual window that opens when the terminal signal may arrive late.
//!
//! Over 800 lines as a table: verdicts, pinned counts and counterexample shapes per design
//! and column, one test per finding, sharing the helpers at the top.

use std::collections::{BTreeMap, HashMap, HashSet};

use stateright::{Model, Path};
use steadfast_model::check::{self, CheckOptions, CheckReport, Traces};
use steadfast_model::leadership::{
    property, Action, Design, JobResultEntry, Leadership, Outcome, ProcessState, RunnerState,
    State, Status,
};
use steadfast_model::{Spec, Verdict};

const SCENARIOS: [&str; 18] = [
    "ordering-a",
    "ordering-b",
    "all",
    "ordering-a-late-signal",
    "ordering-b-late-signal",
    "all-late-signal",
    "ordering-a-decide-while-closing",
    "ordering-a-late-signal-decide-while-closing",
    "jobmaster-crash",
    "jobmaster-failures",
    "jobmaster-failures-before-decision",
    "dispatcher-overlap",
    "dispatcher-overlap-fenced",
    "dispatcher-overlap-jobmaster-failures",
    "jobmaster-crash-rerun-decides",
    "jobmaster-failures-rerun-decides",
    "dispatcher-overlap-rerun-decides",
    "dispatcher-overlap-fenced-rerun-decides",
];

/// The scenarios that inject a JobManager fault or a fault of the dispatcher handoff
/// (the last ten).
const FAULT_SCENARIOS: usize = 10;

/// The fault scenarios whose JobMaster failures may come after a decision: they lose a
/// decision within one epoch.
const FAILURES_AFTER_DECISION: [&str; 3] = [
    "jobmaster-failures",
    "dispatcher-overlap-jobmaster-failures",
    "jobmaster-failures-rerun-decides",
];

/// The smallest bounds at which every counterexample of the table still shows, except
/// under a handoff fault ([`SMALLEST_WITH_FAULTS`]).
const SMALLEST: [(&str, &str); 3] = [("grants", "2"), ("epochs", "2"), ("statuses", "1")];

/// The smallest bounds for the handoff faults' columns: the crash or the overlap takes
/// one failover, and a masked result after it needs another (the new runner is closed
/// by the next one).
const SMALLEST_WITH_FAULTS: [(&str, &str); 3] =
    [("grants", "2"), ("epochs", "3"), ("statuses", "1")];

fn model(design: &str, scenario: &str, overrides: &[(&str, &str)]) -> Leadership {
    Leadership::scenario(design, scenario, overrides).expect("valid settings")
}

fn run(model: &Leadership) -> CheckReport {
    check::check(
        model,
        &CheckOptions {
            traces: Traces::None,
            ..CheckOptions::default()
        },
    )
}

/// Checks every design under every scenario and compares with the table, property by
/// property; returns the unique state counts by (design, scenario).
fn assert_table(overrides: &[(&str, &str)]) -> BTreeMap<(&'static str, &'static str), usize> {
    assert_table_of(&SCENARIOS, overrides)
}

/// [`assert_table`] for some scenarios only.
fn assert_table_of(
    scenarios: &[&'static str],
    overrides: &[(&str, &str)],
) -> BTreeMap<(&'static str, &'static str), usize> {
    let table = Leadership::expectations();
    let mut counts = BTreeMap::new();
    for design in Leadership::designs() {
        for &scenario in scenarios {
            let report = run(&model(design, scenario, overrides));
            let found = report.verdicts();
            let expected: BTreeMap<_, _> = table
                .iter()
                .filter(|e| e.design == *design && e.scenario == scenario)
                .map(|e| (e.property, e.expected))
                .collect();
            assert_eq!(
                found, expected,
                "{design} under {scenario} with {overrides:?}"
            );
            counts.insert((*design, scenario), report.unique_states);
        }
    }
    counts
}

#[test]
fn table_covers_every_design_scenario_and_property() {
    let table = Leadership::expectations();
    // Every property in every cell, but a fault's own reachability property only with
    // its fault.
    assert_eq!(table.len(), 5 * 18 * 16 + 5 * 15);
    for design in Leadership::designs() {
        for scenario in SCENARIOS {
            for name in property::SAFETY.iter().chain(property::REACHABILITY.iter()) {
                // Every scenario with a fault names it.
                let with_fault = property::needs(name).is_none_or(|s| scenario.contains(s));
                if !with_fault {
                    continue;
                }
                let n = table
                    .iter()
                    .filter(|e| {
                        e.design == *design && e.scenario == scenario && e.property == *name
                    })
                    .count();
                assert_eq!(n, 1, "{design} {scenario} {name}");
            }
        }
    }
}

#[test]
fn verdicts_and_state_counts_at_default_bounds() {
    let counts = assert_table(&[]);
    let pinned: BTreeMap<(&str, &str), usize> = [
        (("unpatched", "ordering-a"), 20120),
        (("process-fix-only", "ordering-a"), 18696),
        (("runner-fix-only", "ordering-a"), 6540),
        (("fixed", "ordering-a"), 6417),
        (("revoke-clears-leader", "ordering-a"), 10739),
        (("unpatched", "ordering-b"), 17240),
        (("process-fix-only", "ordering-b"), 15567),
        (("runner-fix-only", "ordering-b"), 6192),
        (("fixed", "ordering-b"), 4707),
        (("revoke-clears-leader", "ordering-b"), 7523),
        (("unpatched", "all"), 34967),
        (("process-fix-only", "all"), 19494),
        (("runner-fix-only", "all"), 11418),
        (("fixed", "all"), 6786),
        (("revoke-clears-leader", "all"), 11219),
        (("unpatched", "ordering-a-late-signal"), 20120),
        (("process-fix-only", "ordering-a-late-signal"), 18696),
        (("runner-fix-only", "ordering-a-late-signal"), 6540),
        (("fixed", "ordering-a-late-signal"), 6417),
        (("revoke-clears-leader", "ordering-a-late-signal"), 10739),
        (("unpatched", "ordering-b-late-signal"), 28229),
        (("process-fix-only", "ordering-b-late-signal"), 35430),
        (("runner-fix-only", "ordering-b-late-signal"), 11388),
        (("fixed", "ordering-b-late-signal"), 12645),
        (("revoke-clears-leader", "ordering-b-late-signal"), 17471),
        (("unpatched", "all-late-signal"), 45956),
        (("process-fix-only", "all-late-signal"), 39357),
        (("runner-fix-only", "all-late-signal"), 16614),
        (("fixed", "all-late-signal"), 14724),
        (("revoke-clears-leader", "all-late-signal"), 21167),
        (("unpatched", "ordering-a-decide-while-closing"), 34967),
        (
            ("process-fix-only", "ordering-a-decide-while-closing"),
            19494,
        ),
        (
            ("runner-fix-only", "ordering-a-decide-while-closing"),
            11418,
        ),
        (("fixed", "ordering-a-decide-while-closing"), 6786),
        (
            ("revoke-clears-leader", "ordering-a-decide-while-closing"),
            11219,
        ),
        (
            ("unpatched", "ordering-a-late-signal-decide-while-closing"),
            38390,
        ),
        (
            (
                "process-fix-only",
                "ordering-a-late-signal-decide-while-closing",
            ),
            32991,
        ),
        (
            (
                "runner-fix-only",
                "ordering-a-late-signal-decide-while-closing",
            ),
            14379,
        ),
        (
            ("fixed", "ordering-a-late-signal-decide-while-closing"),
            12774,
        ),
        (
            (
                "revoke-clears-leader",
                "ordering-a-late-signal-decide-while-closing",
            ),
            18767,
        ),
        (("unpatched", "jobmaster-crash"), 59376),
        (("process-fix-only", "jobmaster-crash"), 34362),
        (("runner-fix-only", "jobmaster-crash"), 25645),
        (("fixed", "jobmaster-crash"), 15194),
        (("revoke-clears-leader", "jobmaster-crash"), 23531),
        (("unpatched", "jobmaster-failures"), 326808),
        (("process-fix-only", "jobmaster-failures"), 244786),
        (("runner-fix-only", "jobmaster-failures"), 101167),
        (("fixed", "jobmaster-failures"), 77038),
        (("revoke-clears-leader", "jobmaster-failures"), 107081),
        (("unpatched", "jobmaster-failures-before-decision"), 211116),
        (
            ("process-fix-only", "jobmaster-failures-before-decision"),
            131665,
        ),
        (
            ("runner-fix-only", "jobmaster-failures-before-decision"),
            57493,
        ),
        (("fixed", "jobmaster-failures-before-decision"), 34267),
        (
            ("revoke-clears-leader", "jobmaster-failures-before-decision"),
            58457,
        ),
        (("unpatched", "dispatcher-overlap"), 234337),
        (("process-fix-only", "dispatcher-overlap"), 126137),
        (("runner-fix-only", "dispatcher-overlap"), 57545),
        (("fixed", "dispatcher-overlap"), 37225),
        (("revoke-clears-leader", "dispatcher-overlap"), 70183),
        (("unpatched", "dispatcher-overlap-fenced"), 216844),
        (("process-fix-only", "dispatcher-overlap-fenced"), 109757),
        (("runner-fix-only", "dispatcher-overlap-fenced"), 48233),
        (("fixed", "dispatcher-overlap-fenced"), 28294),
        (("revoke-clears-leader", "dispatcher-overlap-fenced"), 57118),
        (
            ("unpatched", "dispatcher-overlap-jobmaster-failures"),
            2644074,
        ),
        (
            ("process-fix-only", "dispatcher-overlap-jobmaster-failures"),
            1938184,
        ),
        (
            ("runner-fix-only", "dispatcher-overlap-jobmaster-failures"),
            598827,
        ),
        (("fixed", "dispatcher-overlap-jobmaster-failures"), 467229),
        (
            (
                "revoke-clears-leader",
                "dispatcher-overlap-jobmaster-failures",
            ),
            806145,
        ),
        (("unpatched", "jobmaster-crash-rerun-decides"), 646959),
        (
            ("process-fix-only", "jobmaster-crash-rerun-decides"),
            222075,
        ),
        (("runner-fix-only", "jobmaster-crash-rerun-decides"), 143932),
        (("fixed", "jobmaster-crash-rerun-decides"), 30692),
        (
            ("revoke-clears-leader", "jobmaster-crash-rerun-decides"),
            111038,
        ),
        (("unpatched", "jobmaster-failures-rerun-decides"), 2635452),
        (
            ("process-fix-only", "jobmaster-failures-rerun-decides"),
            1492168,
        ),
        (
            ("runner-fix-only", "jobmaster-failures-rerun-decides"),
            553867,
        ),
        (("fixed", "jobmaster-failures-rerun-decides"), 279547),
        (
            ("revoke-clears-leader", "jobmaster-failures-rerun-decides"),
            575207,
        ),
        (("unpatched", "dispatcher-overlap-rerun-decides"), 3381997),
        (
            ("process-fix-only", "dispatcher-overlap-rerun-decides"),
            1122410,
        ),
        (
            ("runner-fix-only", "dispatcher-overlap-rerun-decides"),
            423350,
        ),
        (("fixed", "dispatcher-overlap-rerun-decides"), 115759),
        (
            ("revoke-clears-leader", "dispatcher-overlap-rerun-decides"),
            493543,
        ),
        (
            ("unpatched", "dispatcher-overlap-fenced-rerun-decides"),
            2804695,
        ),
        (
            (
                "process-fix-only",
                "dispatcher-overlap-fenced-rerun-decides",
            ),
            831512,
        ),
        (
            ("runner-fix-only", "dispatcher-overlap-fenced-rerun-decides"),
            320438,
        ),
        (("fixed", "dispatcher-overlap-fenced-rerun-decides"), 77794),
        (
            (
                "revoke-clears-leader",
                "dispatcher-overlap-fenced-rerun-decides",
            ),
            336298,
        ),
    ]
    .into_iter()
    .collect();
    assert_eq!(counts, pinned);
    // Ordering A never closes a process with a signal in flight, so a late signal
    // changes nothing there: the same states, design by design.
    for design in Leadership::designs() {
        assert_eq!(
            counts[&(*design, "ordering-a")],
            counts[&(*design, "ordering-a-late-signal")],
            "{design}"
        );
    }
}

#[test]
fn verdicts_and_state_counts_at_smallest_bounds() {
    let (others, faults) = SCENARIOS.split_at(SCENARIOS.len() - FAULT_SCENARIOS);
    // A rerun's decision differs from the first only with two statuses: the columns
    // with reruns deciding are checked at default bounds only.
    let faults = &faults[..faults.len() - 4];
    let mut counts = assert_table_of(others, &SMALLEST);
    counts.extend(assert_table_of(faults, &SMALLEST_WITH_FAULTS));
    // With two epochs the fault spends the only failover: the fixed design's rerun
    // runner is never closed, so nothing masks the decision (but a JobMaster failure
    // after the decision, which masks it in the first epoch).
    for fault in faults
        .iter()
        .filter(|f| !FAILURES_AFTER_DECISION.contains(f))
    {
        let two_epochs = run(&model("fixed", fault, &SMALLEST));
        assert_eq!(
            two_epochs.verdict(property::NO_MASKING),
            Some(Verdict::Holds),
            "{fault}"
        );
    }
    let pinned: BTreeMap<(&str, &str), usize> = [
        (("unpatched", "ordering-a"), 799),
        (("process-fix-only", "ordering-a"), 748),
        (("runner-fix-only", "ordering-a"), 445),
        (("fixed", "ordering-a"), 426),
        (("revoke-clears-leader", "ordering-a"), 575),
        (("unpatched", "ordering-b"), 694),
        (("process-fix-only", "ordering-b"), 599),
        (("runner-fix-only", "ordering-b"), 352),
        (("fixed", "ordering-b"), 322),
        (("revoke-clears-leader", "ordering-b"), 402),
        (("unpatched", "all"), 1216),
        (("process-fix-only", "all"), 781),
        (("runner-fix-only", "all"), 617),
        (("fixed", "all"), 445),
        (("revoke-clears-leader", "all"), 599),
        (("unpatched", "ordering-a-late-signal"), 799),
        (("process-fix-only", "ordering-a-late-signal"), 748),
        (("runner-fix-only", "ordering-a-late-signal"), 445),
        (("fixed", "ordering-a-late-signal"), 426),
        (("revoke-clears-leader", "ordering-a-late-signal"), 575),
        (("unpatched", "ordering-b-late-signal"), 943),
        (("process-fix-only", "ordering-b-late-signal"), 1074),
        (("runner-fix-only", "ordering-b-late-signal"), 482),
        (("fixed", "ordering-b-late-signal"), 537),
        (("revoke-clears-leader", "ordering-b-late-signal"), 679),
        (("unpatched", "all-late-signal"), 1465),
        (("process-fix-only", "all-late-signal"), 1256),
        (("runner-fix-only", "all-late-signal"), 747),
        (("fixed", "all-late-signal"), 660),
        (("revoke-clears-leader", "all-late-signal"), 876),
        (("unpatched", "ordering-a-decide-while-closing"), 1216),
        (("process-fix-only", "ordering-a-decide-while-closing"), 781),
        (("runner-fix-only", "ordering-a-decide-while-closing"), 617),
        (("fixed", "ordering-a-decide-while-closing"), 445),
        (
            ("revoke-clears-leader", "ordering-a-decide-while-closing"),
            599,
        ),
        (
            ("unpatched", "ordering-a-late-signal-decide-while-closing"),
            1347,
        ),
        (
            (
                "process-fix-only",
                "ordering-a-late-signal-decide-while-closing",
            ),
            1159,
        ),
        (
            (
                "runner-fix-only",
                "ordering-a-late-signal-decide-while-closing",
            ),
            717,
        ),
        (
            ("fixed", "ordering-a-late-signal-decide-while-closing"),
            635,
        ),
        (
            (
                "revoke-clears-leader",
                "ordering-a-late-signal-decide-while-closing",
            ),
            844,
        ),
        (("unpatched", "jobmaster-crash"), 3993),
        (("process-fix-only", "jobmaster-crash"), 2567),
        (("runner-fix-only", "jobmaster-crash"), 2193),
        (("fixed", "jobmaster-crash"), 1520),
        (("revoke-clears-leader", "jobmaster-crash"), 2068),
        (("unpatched", "jobmaster-failures"), 11786),
        (("process-fix-only", "jobmaster-failures"), 9479),
        (("runner-fix-only", "jobmaster-failures"), 5393),
        (("fixed", "jobmaster-failures"), 4527),
        (("revoke-clears-leader", "jobmaster-failures"), 5787),
        (("unpatched", "jobmaster-failures-before-decision"), 8352),
        (
            ("process-fix-only", "jobmaster-failures-before-decision"),
            6095,
        ),
        (
            ("runner-fix-only", "jobmaster-failures-before-decision"),
            3777,
        ),
        (("fixed", "jobmaster-failures-before-decision"), 2933),
        (
            ("revoke-clears-leader", "jobmaster-failures-before-decision"),
            3964,
        ),
        (("unpatched", "dispatcher-overlap"), 13756),
        (("process-fix-only", "dispatcher-overlap"), 8280),
        (("runner-fix-only", "dispatcher-overlap"), 4962),
        (("fixed", "dispatcher-overlap"), 3565),
        (("revoke-clears-leader", "dispatcher-overlap"), 5756),
        (("unpatched", "dispatcher-overlap-fenced"), 12750),
        (("process-fix-only", "dispatcher-overlap-fenced"), 7318),
        (("runner-fix-only", "dispatcher-overlap-fenced"), 4244),
        (("fixed", "dispatcher-overlap-fenced"), 2868),
        (("revoke-clears-leader", "dispatcher-overlap-fenced"), 4787),
        (
            ("unpatched", "dispatcher-overlap-jobmaster-failures"),
            69563,
        ),
        (
            ("process-fix-only", "dispatcher-overlap-jobmaster-failures"),
            54700,
        ),
        (
            ("runner-fix-only", "dispatcher-overlap-jobmaster-failures"),
            25427,
        ),
        (("fixed", "dispatcher-overlap-jobmaster-failures"), 21473),
        (
            (
                "revoke-clears-leader",
                "dispatcher-overlap-jobmaster-failures",
            ),
            33086,
        ),
    ]
    .into_iter()
    .collect();
    assert_eq!(counts, pinned);
}

#[test]
fn bounds_below_the_smallest_lose_counterexamples() {
    // One grant: no second process can ever be created, so no reanimation.
    let one_grant = run(&model(
        "unpatched",
        "all",
        &[("grants", "1"), ("epochs", "2")],
    ));
    assert_eq!(
        one_grant.verdict(property::NO_REANIMATION),
        Some(Verdict::Holds)
    );
    assert_eq!(
        one_grant.verdict(property::REGRANT),
        Some(Verdict::Unreached)
    );
    // One epoch: no runner close, so the eager SUSPENDED never masks anything and the
    // only masking path left is gone.
    let one_epoch = run(&model(
        "unpatched",
        "all",
        &[("grants", "2"), ("epochs", "1")],
    ));
    assert_eq!(
        one_epoch.verdict(property::NO_MASKING),
        Some(Verdict::Holds)
    );
    assert_eq!(
        one_epoch.verdict(property::NO_REANIMATION),
        Some(Verdict::Counterexample)
    );
    assert_eq!(
        one_epoch.verdict(property::FAILOVER_RECOVERS),
        Some(Verdict::Unreached)
    );
}

#[test]
fn statuses_are_interchangeable() {
    // FINISHED, FAILED and CANCELED take the same paths: the verdicts do not depend on
    // how many of them the scheduler may decide.
    for design in Leadership::designs() {
        let one = run(&model(design, "all", &[("statuses", "1")]));
        let three = run(&model(design, "all", &[("statuses", "3")]));
        assert_eq!(one.verdicts(), three.verdicts(), "{design}");
        assert!(three.unique_states > one.unique_states, "{design}");
    }
}

fn shortest_actions(model: &Leadership, name: &'static str) -> (Vec<Action>, Path<State, Action>) {
    let path = check::shortest(model, name).expect("a counterexample exists");
    (path.clone().into_actions(), path)
}

#[test]
fn unpatched_ordering_a_reanimates_the_job() {
    // The seed's ordering A: the result reached the process, the forward callback is
    // still to run when the session is revoked; the regrant creates a new process.
    let m = model("unpatched", "ordering-a", &[]);
    let (actions, path) = shortest_actions(&m, property::NO_REANIMATION);
    assert_eq!(
        actions,
        vec![
            Action::GrantLeadership(1),
            Action::RunGrant(1),
            Action::RevokeLeadership(1),
            Action::GrantLeadership(2),
            Action::DecideTerminal(Status::Finished),
            Action::DeliverTerminalSignal(1),
            Action::RunRevoke,
            Action::TerminateService(1),
            Action::RunGrant(2),
        ]
    );
    let trace = check::trace_of(&m, path);
    assert_eq!(trace.shape.as_deref(), Some("ordering A2"));
    let words: Vec<&str> = trace.steps.iter().map(|s| s.description.as_str()).collect();
    assert_eq!(words[2], "the election revokes session 1");
    assert_eq!(
        words[5],
        "the scheduler's FINISHED signal reaches process 1: its result becomes FINISHED"
    );
    assert_eq!(
        words[6],
        "the runner's chain runs the revoke: it closes process 1"
    );
    assert_eq!(
        words[8],
        "the runner's chain runs the grant of session 2: it creates process 2 although the job already reached a terminal state"
    );
    // The FINISHED result is still waiting for its forward check, which can only fail:
    // session 2 is the issued one now.
    let last = trace.last_state;
    assert!(last.contains("forward_pending: true"), "{last}");
}

#[test]
fn unpatched_ordering_b_reanimates_the_job() {
    // The seed's ordering B: the scheduler decided, the revoke closes the process
    // first, the eager NotFinished wins and the signal becomes a no-op.
    let m = model("unpatched", "ordering-b", &[]);
    let (actions, path) = shortest_actions(&m, property::NO_REANIMATION);
    assert_eq!(
        actions,
        vec![
            Action::GrantLeadership(1),
            Action::RunGrant(1),
            Action::RevokeLeadership(1),
            Action::GrantLeadership(2),
            Action::DecideTerminal(Status::Finished),
            Action::RunRevoke,
            Action::DeliverTerminalSignal(1),
            Action::TerminateService(1),
            Action::RunGrant(2),
        ]
    );
    let trace = check::trace_of(&m, path);
    assert_eq!(trace.shape.as_deref(), Some("ordering B"));
    assert_eq!(
        trace.steps[5].description,
        "the runner's chain runs the revoke: it closes process 1, its result becomes NotFinished at once"
    );
    assert_eq!(
        trace.steps[6].description,
        "the scheduler's FINISHED signal reaches process 1 while it closes: no effect, its result is already NotFinished"
    );
}

#[test]
fn unpatched_masks_without_a_revoke() {
    // A dispatcher failover with the signal in flight: the eager SUSPENDED is enough.
    let m = model("unpatched", "all", &[]);
    let (actions, path) = shortest_actions(&m, property::NO_MASKING);
    assert_eq!(
        actions,
        vec![
            Action::GrantLeadership(1),
            Action::RunGrant(1),
            Action::DecideTerminal(Status::Finished),
            Action::DispatcherFailover,
        ]
    );
    let trace = check::trace_of(&m, path);
    assert_eq!(
        trace.shape.as_deref(),
        Some("runner close with signal in flight")
    );
    assert_eq!(
        trace.steps[3].description,
        "the dispatcher of epoch 1 loses leadership and closes the runner; the runner completes SUSPENDED at once"
    );
}

#[test]
fn unpatched_reanimates_through_dispatcher_failover() {
    // The second way in: the masked job is recovered into a new runner.
    let m = model("unpatched", "all", &[("grants", "1")])
        .focus(None)
        .unwrap();
    let path = replay(
        &m,
        &[
            Action::GrantLeadership(1),
            Action::RunGrant(1),
            Action::DecideTerminal(Status::Failed),
            Action::DispatcherFailover,
            Action::DeliverTerminalSignal(1),
            Action::TerminateService(1),
            Action::CloseRunner,
            Action::HandleRunnerResult,
            Action::RecoverJob,
        ],
    );
    let last = path.last_state();
    assert_eq!(last.epoch, 2);
    assert!(last.has_runner && last.job_graph);
    let grants_left = model("unpatched", "all", &[]).focus(None).unwrap();
    let path = replay(
        &grants_left,
        &[
            Action::GrantLeadership(1),
            Action::RunGrant(1),
            Action::DecideTerminal(Status::Failed),
            Action::DispatcherFailover,
            Action::DeliverTerminalSignal(1),
            Action::TerminateService(1),
            Action::CloseRunner,
            Action::HandleRunnerResult,
            Action::RecoverJob,
            Action::GrantLeadership(2),
            Action::RunGrant(2),
        ],
    );
    assert_eq!(path.last_state().process_count, 2);
    assert_eq!(path.last_state().decider, 1);
}

fn replay(model: &Leadership, actions: &[Action]) -> Path<State, Action> {
    let init = model.init_states()[0];
    Path::from_actions(model, init, actions).expect("every action is enabled in turn")
}

fn design_model(design: Design) -> Leadership {
    model(design.name(), "all", &[])
}

/// Runs the same actions in two designs and returns both last states.
fn in_both(design_a: Design, design_b: Design, actions: &[Action]) -> (State, State) {
    let a = *replay(&design_model(design_a), actions).last_state();
    let b = *replay(&design_model(design_b), actions).last_state();
    (a, b)
}

#[test]
fn terminal_result_published_during_process_close_wins_over_not_finished() {
    // DefaultJobMasterServiceProcessTest#testTerminalResultPublishedDuringCloseWinsOverJobNotFinished
    let actions = [
        Action::GrantLeadership(1),
        Action::RunGrant(1),
        Action::DecideTerminal(Status::Failed),
        Action::RevokeLeadership(1),
        Action::RunRevoke,
        Action::DeliverTerminalSignal(1),
        Action::TerminateService(1),
    ];
    let (process_fix, unpatched) = in_both(Design::ProcessFixOnly, Design::Unpatched, &actions);
    assert_eq!(
        process_fix.processes[0].result,
        Outcome::Terminal(Status::Failed)
    );
    assert_eq!(unpatched.processes[0].result, Outcome::NotFinished);
}

#[test]
fn runner_close_flushes_a_terminal_result_cached_after_revoke() {
    // JobMasterServiceLeadershipRunnerTest#testCloseAsyncFlushesCachedGloballyTerminalResultAfterRevoke
    let actions = [
        Action::GrantLeadership(1),
        Action::RunGrant(1),
        Action::DecideTerminal(Status::Failed),
        Action::RevokeLeadership(1),
        Action::DeliverTerminalSignal(1),
        Action::CheckLeadershipInForward(1),
        Action::DispatcherFailover,
        Action::TerminateService(1),
        Action::CloseRunner,
    ];
    let (fixed, unpatched) = in_both(Design::Fixed, Design::Unpatched, &actions);
    assert_eq!(fixed.runner_result, Outcome::Terminal(Status::Failed));
    assert_eq!(fixed.runner, RunnerState::Stopped);
    assert_eq!(unpatched.runner_result, Outcome::Suspended);
}

#[test]
fn regrant_flushes_a_terminal_result_observed_after_revoke() {
    // JobMasterServiceLeadershipRunnerTest#testGrantLeadershipFlushesCachedTerminalResultObservedAfterRevoke
    let actions = [
        Action::GrantLeadership(1),
        Action::RunGrant(1),
        Action::DecideTerminal(Status::Canceled),
        Action::RevokeLeadership(1),
        Action::DeliverTerminalSignal(1),
        Action::RunRevoke,
        Action::TerminateService(1),
        Action::CheckLeadershipInForward(1),
        Action::GrantLeadership(2),
        Action::RunGrant(2),
    ];
    let (fixed, unpatched) = in_both(Design::Fixed, Design::Unpatched, &actions);
    assert_eq!(fixed.runner_result, Outcome::Terminal(Status::Canceled));
    assert_eq!(fixed.runner, RunnerState::JobCompleted);
    assert_eq!(fixed.process_count, 1, "no new process");
    assert_eq!(
        unpatched.process_count, 2,
        "the unpatched runner reanimates"
    );
    assert_eq!(unpatched.runner_result, Outcome::Unset);
}

#[test]
fn terminal_observed_before_revoke_then_close_reports_that_status() {
    // JobMasterServiceLeadershipRunnerTest#testCloseAsyncCompletesWithGloballyTerminalResultObservedBeforeLeadershipRevoke
    for status in Status::ALL {
        let actions = [
            Action::GrantLeadership(1),
            Action::RunGrant(1),
            Action::DecideTerminal(status),
            Action::DeliverTerminalSignal(1),
            Action::RevokeLeadership(1),
            Action::CheckLeadershipInForward(1),
            Action::DispatcherFailover,
            Action::TerminateService(1),
            Action::CloseRunner,
        ];
        let (fixed, unpatched) = in_both(Design::Fixed, Design::Unpatched, &actions);
        assert_eq!(fixed.runner_result, Outcome::Terminal(status));
        assert_eq!(unpatched.runner_result, Outcome::Suspended);
    }
}

#[test]
fn close_without_a_terminal_result_is_suspended() {
    let actions = [
        Action::GrantLeadership(1),
        Action::RunGrant(1),
        Action::DispatcherFailover,
        Action::TerminateService(1),
        Action::CheckLeadershipInForward(1),
        Action::CloseRunner,
        Action::HandleRunnerResult,
    ];
    for design in Design::ALL {
        let last = *replay(&design_model(design), &actions).last_state();
        assert_eq!(last.runner_result, Outcome::Suspended, "{design:?}");
        assert!(last.job_graph, "local cleanup keeps the JobGraph");
    }
}

#[test]
fn the_fixed_chain_waits_for_forwarding_to_settle() {
    // Without this wait the regrant would create process 2 before process 1's cached
    // result exists: RunGrant(2) is not enabled while the forward callback is pending.
    let m = design_model(Design::Fixed).focus(None).unwrap();
    let prefix = [
        Action::GrantLeadership(1),
        Action::RunGrant(1),
        Action::DecideTerminal(Status::Finished),
        Action::DeliverTerminalSignal(1),
        Action::RevokeLeadership(1),
        Action::RunRevoke,
        Action::TerminateService(1),
        Action::GrantLeadership(2),
    ];
    let state = *replay(&m, &prefix).last_state();
    let mut enabled = Vec::new();
    m.actions(&state, &mut enabled);
    assert!(!enabled.contains(&Action::RunGrant(2)), "{enabled:?}");
    assert!(enabled.contains(&Action::CheckLeadershipInForward(1)));
    let unpatched = design_model(Design::Unpatched);
    let state = *replay(&unpatched, &prefix).last_state();
    let mut enabled = Vec::new();
    unpatched.actions(&state, &mut enabled);
    assert!(enabled.contains(&Action::RunGrant(2)), "{enabled:?}");
}

#[test]
fn classify_names_ordering_a1() {
    let m = model("unpatched", "ordering-a", &[]);
    let path = replay(
        &m,
        &[
            Action::GrantLeadership(1),
            Action::RunGrant(1),
            Action::DecideTerminal(Status::Finished),
            Action::DeliverTerminalSignal(1),
            Action::RevokeLeadership(1),
            Action::CheckLeadershipInForward(1),
        ],
    );
    let trace = check::trace_of(&m, path);
    assert_eq!(trace.shape.as_deref(), Some("ordering A1"));
    assert_eq!(
        trace.steps[5].description,
        "the runner forwards the FINISHED result of process 1 (session 1): the leadership check fails, the result is dropped"
    );
    assert!(trace.last_state.contains("lost_terminal: true"));

    // A1 reanimates as fast as A2 (nine steps); BFS just meets A2 first.
    let path = replay(
        &m,
        &[
            Action::GrantLeadership(1),
            Action::RunGrant(1),
            Action::DecideTerminal(Status::Finished),
            Action::DeliverTerminalSignal(1),
            Action::RevokeLeadership(1),
            Action::GrantLeadership(2),
            Action::RunRevoke,
            Action::TerminateService(1),
            Action::RunGrant(2),
        ],
    );
    assert_eq!(path.last_state().process_count, 2);
    assert_eq!(
        check::trace_of(&m, path).shape.as_deref(),
        Some("ordering A1")
    );
}

/// The runner fix keeps its current process leader across a revoke; the mutant that
/// clears it drops the terminal result forwarded after the revoke, under ordering A as
/// under B, and the next grant runs the job again.
#[test]
fn a_revoke_that_clears_the_process_leader_reanimates_the_job() {
    for scenario in ["ordering-a", "ordering-b"] {
        let m = model("revoke-clears-leader", scenario, &[]);
        let (actions, path) = shortest_actions(&m, property::NO_REANIMATION);
        // The signal reaches process 1 before (A) or after (B) the revoke closes it.
        let (sixth, seventh) = if scenario == "ordering-a" {
            (Action::DeliverTerminalSignal(1), Action::RunRevoke)
        } else {
            (Action::RunRevoke, Action::DeliverTerminalSignal(1))
        };
        assert_eq!(
            actions,
            vec![
                Action::GrantLeadership(1),
                Action::RunGrant(1),
                Action::RevokeLeadership(1),
                Action::GrantLeadership(2),
                Action::DecideTerminal(Status::Finished),
                sixth,
                seventh,
                Action::CheckLeadershipInForward(1),
                Action::TerminateService(1),
                Action::RunGrant(2),
            ],
            "{scenario}"
        );
        // The forward found no current leader to cache for, so it only checked
        // leadership, which the revoke had taken: nothing cached, the job ran again.
        let words: Vec<String> = check::trace_of(&m, path.clone())
            .steps
            .into_iter()
            .map(|s| s.description)
            .collect();
        assert_eq!(
            words[7],
            "the runner forwards the FINISHED result of process 1 (session 1): the leadership check fails, the result is dropped",
            "{scenario}"
        );
        let last = path.last_state();
        assert_eq!(last.pending_terminal, None, "{scenario}");
        assert_eq!(last.process_count, 2, "{scenario}");
    }
    // The fixed design, at the same bounds, holds: the bookkeeping is what differs.
    let fixed = run(&model("fixed", "all", &[]));
    assert_eq!(
        fixed.verdict(property::NO_REANIMATION),
        Some(Verdict::Holds)
    );
}

/// A scheduler that decides after its process's close started (the job finishes while
/// the JobMaster drains; Flink's scheduler never reads the process's result future, so
/// it decides whatever that future holds) adds no behaviour under ordering B or all:
/// deciding commutes with the close, so those columns keep their states. Ordering A,
/// which kept the signal out of closes, becomes the `all` column exactly: the same
/// states and verdicts in every design, so runner-fix-only loses its ordering-A holds.
#[test]
fn deciding_while_closing_makes_ordering_a_the_all_column() {
    for design in Leadership::designs() {
        for scenario in [
            "ordering-b",
            "all",
            "ordering-b-late-signal",
            "all-late-signal",
            "jobmaster-crash",
            "jobmaster-failures",
            "dispatcher-overlap",
            "dispatcher-overlap-fenced",
        ] {
            let off = run(&model(design, scenario, &[]));
            let on = run(&model(
                design,
                scenario,
                &[("decide-while-closing", "true")],
            ));
            assert_eq!(on.unique_states, off.unique_states, "{design} {scenario}");
            assert_eq!(on.verdicts(), off.verdicts(), "{design} {scenario}");
        }
        let closing_a = run(&model(design, "ordering-a-decide-while-closing", &[]));
        let all = run(&model(design, "all", &[]));
        assert_eq!(closing_a.unique_states, all.unique_states, "{design}");
        assert_eq!(closing_a.verdicts(), all.verdicts(), "{design}");
    }
    // Runner-fix-only held under ordering A only because its close completed
    // NotFinished before any decision could follow.
    let a = run(&model("runner-fix-only", "ordering-a", &[]));
    assert_eq!(a.verdict(property::NO_MASKING), Some(Verdict::Holds));
    let m = model("runner-fix-only", "ordering-a-decide-while-closing", &[]);
    let (actions, _) = shortest_actions(&m, property::SET_ONCE);
    assert_eq!(
        actions,
        [
            Action::GrantLeadership(1),
            Action::RunGrant(1),
            Action::DispatcherFailover,
            Action::DecideTerminal(Status::Finished),
            Action::DeliverTerminalSignal(1),
        ]
    );
}

#[test]
fn fixed_with_late_signal_has_a_residual_window() {
    // Part 1 of the fix defers NotFinished only until the service terminated; a signal
    // that arrives later still loses, and part 2 has nothing to cache.
    let expected_unsafe = [
        property::NO_REANIMATION,
        property::NO_MASKING,
        property::SET_ONCE,
        property::ONLY_A_CRASH_LOSES,
        property::DECIDED_ENDS_CLEAN,
    ];
    for scenario in &SCENARIOS[..3] {
        let m = model("fixed", scenario, &[("late-signal", "true")]);
        let report = run(&m);
        for name in property::SAFETY {
            let expected = if *scenario != "ordering-a" && expected_unsafe.contains(&name) {
                Verdict::Counterexample
            } else {
                Verdict::Holds
            };
            assert_eq!(report.verdict(name), Some(expected), "{scenario} {name}");
        }
    }
    let m = model("fixed", "all", &[("late-signal", "true")]);
    let (actions, path) = shortest_actions(&m, property::NO_REANIMATION);
    assert_eq!(
        actions,
        vec![
            Action::GrantLeadership(1),
            Action::RunGrant(1),
            Action::RevokeLeadership(1),
            Action::GrantLeadership(2),
            Action::DecideTerminal(Status::Finished),
            Action::RunRevoke,
            Action::TerminateService(1),
            Action::CheckLeadershipInForward(1),
            Action::RunGrant(2),
        ]
    );
    assert_eq!(
        check::trace_of(&m, path).shape.as_deref(),
        Some("late signal after service termination")
    );
    let (actions, _) = shortest_actions(&m, property::NO_MASKING);
    assert_eq!(
        actions,
        vec![
            Action::GrantLeadership(1),
            Action::RunGrant(1),
            Action::DecideTerminal(Status::Finished),
            Action::DispatcherFailover,
            Action::TerminateService(1),
            Action::CheckLeadershipInForward(1),
            Action::CloseRunner,
        ]
    );
}

/// Every reachable state and its successors, by plain breadth-first search.
fn state_graph(model: &Leadership) -> HashMap<State, Vec<State>> {
    let mut graph = HashMap::new();
    let mut todo: Vec<State> = model.init_states();
    let mut seen: HashSet<State> = todo.iter().copied().collect();
    while let Some(state) = todo.pop() {
        let mut actions = Vec::new();
        model.actions(&state, &mut actions);
        let mut successors = Vec::new();
        for action in actions {
            let next = model
                .next_state(&state, action)
                .expect("every emitted action is enabled");
            if seen.insert(next) {
                todo.push(next);
            }
            successors.push(next);
        }
        graph.insert(state, successors);
    }
    graph
}

fn assert_acyclic(graph: &HashMap<State, Vec<State>>) {
    // Iterative depth-first search with colours: grey on the stack, black done.
    #[derive(Clone, Copy, PartialEq)]
    enum Colour {
        Grey,
        Black,
    }
    let mut colour: HashMap<State, Colour> = HashMap::new();
    for root in graph.keys() {
        if colour.contains_key(root) {
            continue;
        }
        let mut stack = vec![(*root, 0usize)];
        colour.insert(*root, Colour::Grey);
        while let Some((state, i)) = stack.pop() {
            let successors = &graph[&state];
            if i < successors.len() {
                stack.push((state, i + 1));
                let next = successors[i];
                match colour.get(&next) {
                    Some(Colour::Grey) => panic!("cycle through {next:?}"),
                    Some(Colour::Black) => {}
                    None => {
                        colour.insert(next, Colour::Grey);
                        stack.push((next, 0));
                    }
                }
            } else {
                colour.insert(state, Colour::Black);
            }
        }
    }
}

#[test]
fn state_graph_is_acyclic_and_matches_the_checker() {
    for late in ["false", "true"] {
        for design in Leadership::designs() {
            let m = model(design, "all", &[("late-signal", late)]);
            let graph = state_graph(&m);
            assert_acyclic(&graph);
            assert_eq!(graph.len(), run(&m).unique_states, "{design} late={late}");
        }
    }
}

#[test]
fn no_runner_ever_finds_a_job_result_entry_at_grant() {
    // The dispatcher recovers only JobGraphs without an entry, and a completed runner
    // ignores grants, so without overlapping dispatchers (and with a crash, which
    // writes nothing) the "job already done" branch of the grant is never taken.
    for design in Leadership::designs() {
        for scenario in ["all-late-signal", "jobmaster-crash"] {
            let graph = state_graph(&model(design, scenario, &[]));
            assert!(
                graph
                    .keys()
                    .all(|s| s.runner_result != Outcome::AlreadyDone),
                "{design} {scenario}"
            );
        }
    }
}

#[test]
fn bad_input_is_an_error_naming_the_problem() {
    let defaults = steadfast_model::Settings::defaults(Leadership::params());
    let e = Leadership::build("patched", &defaults).unwrap_err();
    assert_eq!(
        e.0,
        "unknown design `patched` for leadership (known: unpatched, process-fix-only, runner-fix-only, fixed, revoke-clears-leader)"
    );
    let e = Leadership::scenario("fixed", "ordering-c", &[]).unwrap_err();
    assert!(e.0.starts_with("unknown scenario `ordering-c`"), "{e}");
    let e = Leadership::scenario("fixed", "all", &[("grants", "11")]).unwrap_err();
    assert_eq!(e.0, "`grants` must be within 1..=10, got 11");
    let e = Leadership::scenario("fixed", "all", &[("epochs", "5")]).unwrap_err();
    assert_eq!(e.0, "`epochs` must be within 1..=4, got 5");
    let e = Leadership::scenario("fixed", "all", &[("ordering", "c")]).unwrap_err();
    assert!(e.0.contains("one of a, b, all"), "{e}");
    let e = Leadership::new(Design::Fixed)
        .focus(Some("no reanimations"))
        .unwrap_err();
    assert!(e.0.starts_with("unknown property `no reanimations`"), "{e}");
}

#[test]
fn designs_params_and_scenarios_are_declared() {
    assert_eq!(
        Leadership::designs(),
        [
            "unpatched",
            "process-fix-only",
            "runner-fix-only",
            "fixed",
            "revoke-clears-leader"
        ]
    );
    let names: Vec<_> = Leadership::params().iter().map(|p| p.name).collect();
    assert_eq!(
        names,
        [
            "grants",
            "epochs",
            "jobs",
            "statuses",
            "ordering",
            "late-signal",
            "decide-while-closing",
            "jobmaster-crash",
            "jobmaster-failures",
            "failures-before-decision",
            "rerun-decides",
            "dispatcher-overlap",
            "fenced-result-store",
            "old-runner-first"
        ]
    );
    let scenarios: Vec<_> = Leadership::scenarios().iter().map(|(n, _)| *n).collect();
    assert_eq!(scenarios, SCENARIOS);
    let m = Leadership::new(Design::Fixed);
    assert_eq!((m.grants, m.epochs, m.statuses), (3, 3, 3));
    assert!(!m.late_signal);
    let focused = m.focus(Some(property::NO_MASKING)).unwrap();
    let names: Vec<_> = focused.properties().iter().map(|p| p.name).collect();
    assert_eq!(names, [property::NO_MASKING]);
    let all: Vec<_> = m
        .focus(None)
        .unwrap()
        .properties()
        .iter()
        .map(|p| p.name)
        .collect();
    assert_eq!(all.len(), 17);
    assert_eq!(all[16], check::SENTINEL);
    let e = m.focus(Some(property::CRASH_LOSES)).unwrap_err();
    assert_eq!(
        e.0,
        "property `a crash loses a decision` needs `--jobmaster-crash true`"
    );
}

#[test]
fn actions_round_trip_through_json_and_states_serialise() {
    let actions = [
        Action::GrantLeadership(2),
        Action::DecideTerminal(Status::Canceled),
        Action::DeliverTerminalSignal(1),
        Action::RunRevoke,
    ];
    for action in actions {
        let json = serde_json::to_string(&action).unwrap();
        let back: Action = serde_json::from_str(&json).unwrap();
        assert_eq!(back, action);
    }
    assert_eq!(
        serde_json::to_string(&Action::GrantLeadership(2)).unwrap(),
        r#"{"GrantLeadership":2}"#
    );
    let m = Leadership::new(Design::Fixed);
    let json = serde_json::to_value(m.init_states()[0]).unwrap();
    assert_eq!(json["runner"], "Running");
    assert_eq!(json["job_graph"], true);
    assert_eq!(json["job_result"], "Absent");
}

#[test]
fn without_old_runner_first_the_unpatched_runner_overlaps_processes() {
    // The eager SUSPENDED lets the dispatcher handle the result while the old process
    // still closes; a next leader that does not wait for the old runner then starts a
    // second live process. The fixed runner completes only after its process
    // terminated, so it needs no such assumption.
    let expected = [
        ("unpatched", Verdict::Counterexample, 49_211),
        ("process-fix-only", Verdict::Counterexample, 35_210),
        ("runner-fix-only", Verdict::Holds, 11_715),
        ("fixed", Verdict::Holds, 7_083),
    ];
    for (design, verdict, states) in expected {
        let report = run(&model(design, "all", &[("old-runner-first", "false")]));
        assert_eq!(report.unique_states, states, "{design}");
        assert_eq!(
            report.verdict(property::ONE_LIVE_PROCESS),
            Some(verdict),
            "{design}"
        );
        let safe = design == "fixed";
        assert_eq!(
            report.verdict(property::NO_REANIMATION) == Some(Verdict::Holds),
            safe,
            "{design}"
        );
    }
    let m = model("unpatched", "all", &[("old-runner-first", "false")]);
    let (actions, _) = shortest_actions(&m, property::ONE_LIVE_PROCESS);
    assert_eq!(
        actions,
        vec![
            Action::GrantLeadership(1),
            Action::RunGrant(1),
            Action::DispatcherFailover,
            Action::HandleRunnerResult,
            Action::RecoverJob,
            Action::GrantLeadership(2),
            Action::RunGrant(2),
        ]
    );
}

/// The Explorer's text of each step of the shortest unpatched counterexample names the
/// verdict on the state it leads to: "no reanimation" holds until the last step, which
/// violates it, as the check reported.
#[test]
fn explorer_steps_carry_the_verdict_of_the_state_they_lead_to() {
    use stateright::Model;
    let m = Leadership::build(
        "unpatched",
        &steadfast_model::Settings::parse(Leadership::params(), &[]).unwrap(),
    )
    .unwrap();
    let full = m.focus(None).unwrap();
    let path = steadfast_model::check::shortest(&m, property::NO_REANIMATION).unwrap();
    let pairs = path.into_vec();
    let last = pairs.len() - 1;
    for (i, (state, action)) in pairs.iter().enumerate() {
        let Some(action) = action else { break };
        let text = full.format_step(state, *action).unwrap();
        let first = text.lines().next().unwrap();
        // Other properties may fail earlier on the way (unpatched also loses the
        // terminal status it set); the one the check names fails at the last step only.
        assert_eq!(
            first.contains(property::NO_REANIMATION),
            i + 1 == last,
            "step {i}: {first}"
        );
        if i + 1 == last {
            assert!(first.starts_with("VIOLATES "), "{first}");
        }
        if i == 0 {
            assert!(
                first.starts_with("all ") && first.ends_with("hold in this state"),
                "{first}"
            );
        }
        assert!(
            text.lines().nth(1).unwrap().starts_with("step: ")
                || text.lines().nth(2).unwrap().starts_with("step: ")
        );
    }
}

/// The lane picture of every design's shortest counterexample of every safety property
/// it violates: well-formed XML, one row per step, the violation marked on the last row
/// and named there, no row red before the first state that violates something.
#[test]
fn lane_pictures_of_every_counterexample_have_one_row_per_step_and_mark_the_violation() {
    use stateright::{Expectation, Model};
    let mut pictured = 0;
    for design in Leadership::designs() {
        let m = Leadership::build(
            design,
            &steadfast_model::Settings::parse(Leadership::params(), &[]).unwrap(),
        )
        .unwrap();
        let full = m.focus(None).unwrap();
        for p in full.properties() {
            if p.expectation != Expectation::Always || p.name == steadfast_model::check::SENTINEL {
                continue;
            }
            let Some(path) = steadfast_model::check::shortest(&m, p.name) else {
                continue;
            };
            let steps = path.clone().into_vec().len() - 1;
            let svg = full.as_svg(path).expect("every path has a picture");
            let doc = roxmltree::Document::parse(&svg).unwrap_or_else(|e| panic!("{design}: {e}"));
            let rows: Vec<_> = doc.descendants().filter(|n| n.has_tag_name("g")).collect();
            assert_eq!(rows.len(), steps, "{design} / {}", p.name);
            let last = rows.last().unwrap();
            assert_eq!(
                last.attribute("class"),
                Some("step violation"),
                "{design} / {}",
                p.name
            );
            let text: String = last.descendants().filter_map(|n| n.text()).collect();
            assert!(text.contains(p.name), "{design} / {}: {text}", p.name);
            let first_red = rows
                .iter()
                .position(|r| r.attribute("class") == Some("step violation"))
                .unwrap();
            assert!(first_red < steps);
            pictured += 1;
        }
    }
    // unpatched, process-fix-only and runner-fix-only violate something; fixed nothing.
    assert!(pictured >= 3, "{pictured}");
}

#[test]
fn a_jobmanager_crash_reruns_an_unrecorded_decision_and_nothing_else_loses_it_when_fixed() {
    // Flink's HA recovers every JobGraph without a JobResultStore entry: a job whose
    // JobManager dies between the decision and the entry runs again, fix or not.
    let m = model("fixed", "jobmaster-crash", &[]);
    let (actions, path) = shortest_actions(&m, property::NO_REANIMATION);
    assert_eq!(
        actions,
        vec![
            Action::GrantLeadership(1),
            Action::RunGrant(1),
            Action::DecideTerminal(Status::Finished),
            Action::CrashJobManager,
            Action::RecoverJob,
            Action::GrantLeadership(2),
            Action::RunGrant(2),
        ]
    );
    assert_eq!(
        check::trace_of(&m, path).shape.as_deref(),
        Some("JobManager crash before the result was recorded")
    );
    // The fixed design loses a decision to nothing but such a crash, and never loses a
    // completion attempt: the crash kills the process, it does not drop its result.
    let report = run(&m);
    assert_eq!(
        report.verdict(property::ONLY_A_CRASH_LOSES),
        Some(Verdict::Holds)
    );
    assert_eq!(report.verdict(property::SET_ONCE), Some(Verdict::Holds));
    assert_eq!(
        report.verdict(property::CRASH_LOSES),
        Some(Verdict::Reached)
    );

    // A crash after the dirty entry was written loses nothing: the next leader finishes
    // the cleanup and starts no runner.
    let recorded = replay(
        &m,
        &[
            Action::GrantLeadership(1),
            Action::RunGrant(1),
            Action::DecideTerminal(Status::Failed),
            Action::DeliverTerminalSignal(1),
            Action::CheckLeadershipInForward(1),
            Action::HandleRunnerResult,
            Action::CrashJobManager,
            Action::RecoverJob,
            Action::RemoveJobGraph,
            Action::MarkResultClean,
        ],
    );
    let last = recorded.last_state();
    assert!(!last.crash_lost && !last.has_runner);
    assert_eq!(
        last.job_result,
        steadfast_model::leadership::JobResultEntry::Clean
    );
    assert_eq!(last.process_count, 1);
    assert_eq!(last.processes[0].state, ProcessState::Killed);

    // The unpatched design's first loss needs no crash at all.
    let unpatched = model("unpatched", "jobmaster-crash", &[]);
    let (actions, _) = shortest_actions(&unpatched, property::ONLY_A_CRASH_LOSES);
    assert!(!actions.contains(&Action::CrashJobManager), "{actions:?}");
    assert_eq!(
        actions,
        vec![
            Action::GrantLeadership(1),
            Action::RunGrant(1),
            Action::DecideTerminal(Status::Finished),
            Action::DispatcherFailover,
        ]
    );
}

#[test]
fn overlapping_dispatchers_run_the_job_twice_and_a_late_entry_meets_the_next_grant() {
    use Action::*;
    // Across hosts the next dispatcher leader recovers the job while the old one is
    // still stopping: no runner fix helps, the job runs again.
    let m = model("fixed", "dispatcher-overlap", &[]);
    let (actions, path) = shortest_actions(&m, property::NO_REANIMATION);
    assert_eq!(
        actions,
        [
            GrantLeadership(1),
            RunGrant(1),
            DecideTerminal(Status::Finished),
            DispatcherFailover,
            RecoverJob,
            GrantLeadership(2),
            RunGrant(2),
        ]
    );
    assert_eq!(
        check::trace_of(&m, path).shape.as_deref(),
        Some("dispatcher leaders overlap")
    );
    // Two processes live at once, before anything is decided.
    let (actions, _) = shortest_actions(&m, property::ONE_LIVE_PROCESS);
    assert_eq!(
        actions,
        [
            GrantLeadership(1),
            RunGrant(1),
            DispatcherFailover,
            RecoverJob,
            GrantLeadership(2),
            RunGrant(2),
        ]
    );
    // The old dispatcher, no longer leader, writes the entry after the new leader
    // recovered the job: the stores say the job is done while a newer runner runs it.
    let (actions, _) = shortest_actions(&m, property::STORES_AGREE);
    assert_eq!(
        actions,
        [
            GrantLeadership(1),
            RunGrant(1),
            DecideTerminal(Status::Finished),
            DeliverTerminalSignal(1),
            CheckLeadershipInForward(1),
            DispatcherFailover,
            RecoverJob,
            OldDispatcherHandlesResult,
        ]
    );
    // ...and the new runner's grant then finds it: the "job already done" branch.
    let (actions, path) = shortest_actions(&m, property::ALREADY_DONE);
    assert_eq!(
        actions,
        [
            GrantLeadership(1),
            RunGrant(1),
            DecideTerminal(Status::Finished),
            DeliverTerminalSignal(1),
            CheckLeadershipInForward(1),
            DispatcherFailover,
            RecoverJob,
            GrantLeadership(2),
            OldDispatcherHandlesResult,
            RunGrant(2),
        ]
    );
    let last = path.last_state();
    assert_eq!(last.runner_result, Outcome::AlreadyDone);
    assert_eq!(last.process_count, 1);
    let report = run(&m);
    assert_eq!(report.verdict(property::SET_ONCE), Some(Verdict::Holds));

    // A store that fences the old dispatcher out keeps the stores in agreement, and no
    // grant ever finds an entry; the job still runs twice.
    let fenced = run(&model("fixed", "dispatcher-overlap-fenced", &[]));
    assert_eq!(fenced.verdict(property::STORES_AGREE), Some(Verdict::Holds));
    assert_eq!(
        fenced.verdict(property::ALREADY_DONE),
        Some(Verdict::Unreached)
    );
    assert_eq!(
        fenced.verdict(property::NO_REANIMATION),
        Some(Verdict::Counterexample)
    );
}

#[test]
fn a_failing_jobmaster_ends_a_submitted_job_or_stops_its_jobmanager() {
    use Action::*;
    let m = model("fixed", "jobmaster-failures", &[]);
    // A submitted job whose JobMaster cannot start is FAILED for good.
    let (actions, path) = shortest_actions(&m, property::FAILED_AT_START);
    assert_eq!(
        actions,
        [
            GrantLeadership(1),
            RunGrant(1),
            FailInitialization,
            CheckLeadershipInForward(1),
            HandleRunnerResult,
        ]
    );
    assert_eq!(
        path.last_state().job_result,
        steadfast_model::leadership::JobResultEntry::Dirty
    );
    // A failed JobMaster is a fatal error: the JobManager process exits with it.
    let (actions, path) = shortest_actions(&m, property::FATAL_EXIT);
    assert_eq!(
        actions,
        [
            GrantLeadership(1),
            RunGrant(1),
            FailJobMaster,
            CheckLeadershipInForward(1),
            HandleRunnerResult,
        ]
    );
    let last = path.last_state();
    assert_eq!(
        last.dispatcher,
        steadfast_model::leadership::DispatcherState::Crashed
    );
    assert_eq!(last.processes[0].state, ProcessState::Killed);
    // So is a recovered job that cannot start: the next leader tries again.
    let recovered = replay(
        &m,
        &[
            GrantLeadership(1),
            RunGrant(1),
            DispatcherFailover,
            TerminateService(1),
            CheckLeadershipInForward(1),
            CloseRunner,
            HandleRunnerResult,
            RecoverJob,
            GrantLeadership(2),
            RunGrant(2),
            FailInitialization,
            CheckLeadershipInForward(2),
            HandleRunnerResult,
            RecoverJob,
        ],
    );
    let last = recovered.last_state();
    assert!(last.fatal_exit && last.has_runner && last.epoch == 3);
    assert_eq!(
        last.job_result,
        steadfast_model::leadership::JobResultEntry::Absent
    );
    // A failure forwarded after its session was revoked is dropped, and the fixed
    // runner caches only a terminal status: the regrant starts a new process.
    let regrant = replay(
        &m,
        &[
            GrantLeadership(1),
            RunGrant(1),
            RevokeLeadership(1),
            FailJobMaster,
            CheckLeadershipInForward(1),
            RunRevoke,
            TerminateService(1),
            GrantLeadership(2),
            RunGrant(2),
        ],
    );
    let last = regrant.last_state();
    assert_eq!(last.process_count, 2);
    assert_eq!(last.runner_result, Outcome::Unset);
    assert_eq!(last.pending_terminal, None);
    // Failures only before a decision keep the table's `all` column, but for the
    // entry a reanimated run's initialisation failure writes in the designs that
    // reanimate.
    for design in Leadership::designs() {
        let with = run(&model(design, "jobmaster-failures-before-decision", &[])).verdicts();
        let without = run(&model(design, "all", &[])).verdicts();
        for (name, verdict) in without {
            if name == property::ENTRY_RECORDS_FIRST && *design != "fixed" {
                assert_eq!(with[name], Verdict::Counterexample, "{design}");
                continue;
            }
            assert_eq!(with[name], verdict, "{design} {name}");
        }
    }
}

/// A JobMaster failure after the scheduler decided (Flink's `jobMasterFailed`
/// completes the process's result with no check of a decision, and the terminal signal
/// waits on the JobMaster's executor) loses the decision in the fixed design: the
/// runner forwards the failure, the dispatcher's fatal error ends the JobManager and the
/// next leader runs the job again. A JobMaster failure is not a crash: "only a crash
/// loses a decision" fails too.
#[test]
fn a_jobmaster_failure_after_the_decision_loses_it_in_the_fixed_design() {
    use Action::*;
    let m = model("fixed", "jobmaster-failures", &[]);
    let masked = [
        GrantLeadership(1),
        RunGrant(1),
        DecideTerminal(Status::Finished),
        FailJobMaster,
        CheckLeadershipInForward(1),
    ];
    for name in [property::NO_MASKING, property::ONLY_A_CRASH_LOSES] {
        let (actions, path) = shortest_actions(&m, name);
        assert_eq!(actions, masked, "{name}");
        assert_eq!(path.last_state().runner_result, Outcome::JobMasterFailed);
    }
    let (actions, path) = shortest_actions(&m, property::NO_REANIMATION);
    assert_eq!(
        actions,
        [
            GrantLeadership(1),
            RunGrant(1),
            DecideTerminal(Status::Finished),
            FailJobMaster,
            CheckLeadershipInForward(1),
            HandleRunnerResult,
            RecoverJob,
            GrantLeadership(2),
            RunGrant(2),
        ]
    );
    assert!(path.last_state().fatal_exit);
    // The signal that arrives after the failure is a no-op.
    let (actions, _) = shortest_actions(&m, property::SET_ONCE);
    assert_eq!(actions[3..], [FailJobMaster, DeliverTerminalSignal(1)]);
}

/// With every run's scheduler deciding, a rerun after a lost decision writes its own
/// status where the first decision's never reached the store: the fixed design keeps
/// the first decision only where every rerun follows a crash (which the property
/// excuses).
#[test]
fn a_rerun_that_decides_again_may_own_the_job_result_store_entry() {
    use Action::*;
    let crash = run(&model("fixed", "jobmaster-crash-rerun-decides", &[]));
    assert_eq!(
        crash.verdict(property::ENTRY_RECORDS_FIRST),
        Some(Verdict::Holds)
    );
    assert_eq!(crash.unique_states, 30692);
    let m = model("fixed", "dispatcher-overlap-fenced-rerun-decides", &[]);
    let (actions, path) = shortest_actions(&m, property::ENTRY_RECORDS_FIRST);
    assert_eq!(
        actions,
        [
            GrantLeadership(1),
            RunGrant(1),
            DecideTerminal(Status::Finished),
            DeliverTerminalSignal(1),
            DispatcherFailover,
            RecoverJob,
            GrantLeadership(2),
            RunGrant(2),
            DecideTerminal(Status::Failed),
            DeliverTerminalSignal(2),
            CheckLeadershipInForward(2),
            HandleRunnerResult,
        ]
    );
    let last = path.last_state();
    assert_eq!(last.decided, Some(Status::Finished));
    assert_eq!(last.runner_result, Outcome::Terminal(Status::Failed));
    assert!(last.entry_not_first);
}

/// The runner's fencing is its guard, not a property: "fenced sessions" held in every
/// design, mutant and fault, because the forward callback's own checks rule the
/// violation out. What it said is checked here, on every transition of every design
/// under every fault: a forward whose session is neither the issued one nor the
/// runner's current process leader changes neither the runner's result nor its cache.
#[test]
fn a_forward_changes_the_runner_only_for_the_issued_session_or_its_leader() {
    let mut forwards = 0;
    for design in Leadership::designs() {
        for scenario in ["all-late-signal", "jobmaster-crash", "jobmaster-failures"] {
            let m = model(design, scenario, &[]);
            for (s, _) in state_graph(&m) {
                let mut enabled = Vec::new();
                m.actions(&s, &mut enabled);
                for action in enabled {
                    let Action::CheckLeadershipInForward(id) = action else {
                        continue;
                    };
                    let session = s.processes[usize::from(id) - 1].session;
                    if session == s.issued || session == s.current_leader {
                        continue;
                    }
                    let next = m.next_state(&s, action).unwrap();
                    assert_eq!(
                        (next.runner_result, next.pending_terminal),
                        (s.runner_result, s.pending_terminal),
                        "{design} {scenario}: {s:?}"
                    );
                    forwards += 1;
                }
            }
        }
    }
    // Unfenced forwards are common; every one of them changed nothing.
    assert!(forwards > 10_000, "{forwards}");
}

/// Each half of the fix alone, at its shortest: the process fix does nothing for a
/// result that already reached the process before the revoke (ordering A, the same
/// path as unpatched), and the runner fix has nothing to cache once a close completed
/// NotFinished before the terminal signal arrived (ordering B).
#[test]
fn each_half_of_the_fix_alone_fails_where_only_the_other_acts() {
    use Action::*;
    let process_fix_only = model("process-fix-only", "ordering-a", &[]);
    let unpatched = model("unpatched", "ordering-a", &[]);
    let (actions, path) = shortest_actions(&process_fix_only, property::NO_REANIMATION);
    assert_eq!(
        actions,
        shortest_actions(&unpatched, property::NO_REANIMATION).0
    );
    assert_eq!(
        check::trace_of(&process_fix_only, path).shape.as_deref(),
        Some("ordering A2")
    );

    let runner_fix_only = model("runner-fix-only", "ordering-b", &[]);
    let (actions, path) = shortest_actions(&runner_fix_only, property::NO_REANIMATION);
    assert_eq!(
        actions,
        [
            GrantLeadership(1),
            RunGrant(1),
            RevokeLeadership(1),
            GrantLeadership(2),
            DecideTerminal(Status::Finished),
            RunRevoke,
            DeliverTerminalSignal(1),
            CheckLeadershipInForward(1),
            TerminateService(1),
            RunGrant(2),
        ]
    );
    let trace = check::trace_of(&runner_fix_only, path);
    assert_eq!(trace.shape.as_deref(), Some("ordering B"));
    // The revoke's close completed NotFinished at once; the signal is a no-op.
    assert_eq!(
        trace.steps[6].description,
        "the scheduler's FINISHED signal reaches process 1 while it closes: no effect, its result is already NotFinished"
    );
    let (actions, path) = shortest_actions(&runner_fix_only, property::NO_MASKING);
    assert_eq!(
        actions,
        [
            GrantLeadership(1),
            RunGrant(1),
            DecideTerminal(Status::Finished),
            DispatcherFailover,
            DeliverTerminalSignal(1),
            CheckLeadershipInForward(1),
            TerminateService(1),
            CloseRunner,
        ]
    );
    assert_eq!(
        check::trace_of(&runner_fix_only, path).shape.as_deref(),
        Some("runner close with signal in flight")
    );
}

/// The runner fix's two deliveries of a cached terminal result, at their shortest: the
/// witnesses hold in the state before the step, and the step delivers FINISHED.
#[test]
fn a_cached_terminal_result_is_delivered_by_the_regrant_and_by_the_close() {
    use Action::*;
    let m = model("fixed", "all", &[]);
    let (actions, path) = shortest_actions(&m, property::REGRANT_FLUSHES);
    assert_eq!(
        actions,
        [
            GrantLeadership(1),
            RunGrant(1),
            RevokeLeadership(1),
            GrantLeadership(2),
            DecideTerminal(Status::Finished),
            RunRevoke,
            DeliverTerminalSignal(1),
            CheckLeadershipInForward(1),
            TerminateService(1),
        ]
    );
    let flushed = m.next_state(path.last_state(), RunGrant(2)).unwrap();
    assert_eq!(flushed.runner_result, Outcome::Terminal(Status::Finished));
    assert_eq!(flushed.process_count, 1, "the grant creates no process");

    let (actions, path) = shortest_actions(&m, property::CLOSE_FLUSHES);
    assert_eq!(
        actions,
        [
            GrantLeadership(1),
            RunGrant(1),
            DecideTerminal(Status::Finished),
            DeliverTerminalSignal(1),
            DispatcherFailover,
            CheckLeadershipInForward(1),
            TerminateService(1),
        ]
    );
    let closed = m.next_state(path.last_state(), CloseRunner).unwrap();
    assert_eq!(closed.runner_result, Outcome::Terminal(Status::Finished));
    // Without the runner fix nothing is cached, so neither is ever reached.
    let unpatched = run(&model("unpatched", "all", &[]));
    for p in [property::REGRANT_FLUSHES, property::CLOSE_FLUSHES] {
        assert_eq!(unpatched.verdict(p), Some(Verdict::Unreached), "{p}");
    }
}

/// "A decided job ends with a clean entry" against the mutant whose revoke forgets the
/// process leader: the forward after the revoke caches nothing, the close completes
/// SUSPENDED, and the recovered job ends with no entry once the bounds run out.
#[test]
fn a_decision_the_mutant_drops_never_reaches_a_clean_entry() {
    use Action::*;
    let m = model("revoke-clears-leader", "all", &[]);
    let (actions, path) = shortest_actions(&m, property::DECIDED_ENDS_CLEAN);
    assert_eq!(
        actions,
        [
            GrantLeadership(1),
            RunGrant(1),
            RevokeLeadership(1),
            GrantLeadership(2),
            DecideTerminal(Status::Finished),
            RunRevoke,
            DeliverTerminalSignal(1),
            CheckLeadershipInForward(1),
            TerminateService(1),
            DispatcherFailover,
            CloseRunner,
            HandleRunnerResult,
            RecoverJob,
            GrantLeadership(3),
            DispatcherFailover,
            CloseRunner,
            HandleRunnerResult,
            RecoverJob,
        ]
    );
    let end = path.last_state();
    let mut enabled = Vec::new();
    m.actions(end, &mut enabled);
    assert!(enabled.is_empty(), "{enabled:?}");
    assert_eq!(end.job_result, JobResultEntry::Absent);
    assert!(end.job_graph);
}
