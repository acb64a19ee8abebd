//! The expected-verdict table of specs/leadership.md, per design and scenario.

use super::property::{
    ALREADY_DONE, CLOSE_FLUSHES, CRASH_LOSES, DECIDED_ENDS_CLEAN, ENTRY_RECORDS_FIRST,
    FAILED_AT_START, FAILOVER_RECOVERS, FATAL_EXIT, JOB_FINISHES, JOB_SUSPENDED, NO_MASKING,
    NO_REANIMATION, ONE_LIVE_PROCESS, ONLY_A_CRASH_LOSES, REGRANT, REGRANT_FLUSHES, SET_ONCE,
    STORES_AGREE, WINDOW_A, WINDOW_B,
};
use super::Design;
use crate::Expectation;
use crate::Verdict::{self, Counterexample, Holds, Reached, Unreached};

/// A property and its safety verdicts under ordering A, ordering B and all.
type Row = (&'static str, [Verdict; 3]);

/// One cell of the table for a design: scenario, property, verdict.
type Cell = (&'static str, &'static str, Verdict);

/// Per design: the safety verdicts under ordering A, ordering B and all, signal on time.
const SAFETY: [(Design, [Row; 8]); 5] = [
    (
        Design::Unpatched,
        [
            (NO_REANIMATION, [Counterexample; 3]),
            (NO_MASKING, [Counterexample; 3]),
            (SET_ONCE, [Counterexample; 3]),
            (ONE_LIVE_PROCESS, [Holds; 3]),
            (STORES_AGREE, [Holds; 3]),
            (ONLY_A_CRASH_LOSES, [Counterexample; 3]),
            (DECIDED_ENDS_CLEAN, [Counterexample; 3]),
            (ENTRY_RECORDS_FIRST, [Holds; 3]),
        ],
    ),
    (
        Design::ProcessFixOnly,
        [
            (NO_REANIMATION, [Counterexample; 3]),
            (NO_MASKING, [Counterexample; 3]),
            (SET_ONCE, [Counterexample; 3]),
            (ONE_LIVE_PROCESS, [Holds; 3]),
            (STORES_AGREE, [Holds; 3]),
            (ONLY_A_CRASH_LOSES, [Counterexample; 3]),
            (DECIDED_ENDS_CLEAN, [Counterexample; 3]),
            (ENTRY_RECORDS_FIRST, [Holds; 3]),
        ],
    ),
    (
        Design::RunnerFixOnly,
        [
            (NO_REANIMATION, [Holds, Counterexample, Counterexample]),
            (NO_MASKING, [Holds, Counterexample, Counterexample]),
            (SET_ONCE, [Holds, Counterexample, Counterexample]),
            (ONE_LIVE_PROCESS, [Holds; 3]),
            (STORES_AGREE, [Holds; 3]),
            (ONLY_A_CRASH_LOSES, [Holds, Counterexample, Counterexample]),
            (DECIDED_ENDS_CLEAN, [Holds, Counterexample, Counterexample]),
            (ENTRY_RECORDS_FIRST, [Holds; 3]),
        ],
    ),
    (
        Design::Fixed,
        [
            (NO_REANIMATION, [Holds; 3]),
            (NO_MASKING, [Holds; 3]),
            (SET_ONCE, [Holds; 3]),
            (ONE_LIVE_PROCESS, [Holds; 3]),
            (STORES_AGREE, [Holds; 3]),
            (ONLY_A_CRASH_LOSES, [Holds; 3]),
            (DECIDED_ENDS_CLEAN, [Holds; 3]),
            (ENTRY_RECORDS_FIRST, [Holds; 3]),
        ],
    ),
    // The mutant loses a terminal result forwarded after a revoke under every
    // ordering: the runner no longer knows the process was its leader's.
    (
        Design::RevokeClearsLeader,
        [
            (NO_REANIMATION, [Counterexample; 3]),
            (NO_MASKING, [Counterexample; 3]),
            (SET_ONCE, [Counterexample; 3]),
            (ONE_LIVE_PROCESS, [Holds; 3]),
            (STORES_AGREE, [Holds; 3]),
            (ONLY_A_CRASH_LOSES, [Counterexample; 3]),
            (DECIDED_ENDS_CLEAN, [Counterexample; 3]),
            (ENTRY_RECORDS_FIRST, [Holds; 3]),
        ],
    ),
];

/// The safety properties a late signal breaks in the fixed design.
const LOST_TO_A_LATE_SIGNAL: [&str; 5] = [
    NO_REANIMATION,
    NO_MASKING,
    SET_ONCE,
    ONLY_A_CRASH_LOSES,
    DECIDED_ENDS_CLEAN,
];

/// The safety properties a JobMaster failure after the decision breaks in every design:
/// the decision is lost, and a rerun that cannot start writes FAILED for the submitted
/// job.
const LOST_TO_A_JOBMASTER_FAILURE: [&str; 6] = [
    NO_REANIMATION,
    NO_MASKING,
    SET_ONCE,
    ONLY_A_CRASH_LOSES,
    DECIDED_ENDS_CLEAN,
    ENTRY_RECORDS_FIRST,
];

/// The scenarios' names, from the one table that defines them.
struct Columns {
    /// Each ordering on time: A, B, all.
    on_time: [&'static str; 3],
    /// Each ordering with late signals: A, B, all.
    late: [&'static str; 3],
    /// Ordering A with decisions during a close, on time and late.
    decide_while_closing: [&'static str; 2],
    crash: &'static str,
    failures: &'static str,
    /// JobMaster failures only before a decision (the earlier idealisation).
    failures_before_decision: &'static str,
    overlap: &'static str,
    fenced: &'static str,
    /// Overlapping dispatchers with JobMaster failures.
    overlap_failures: &'static str,
    /// The crash, failures, overlap and fenced columns with every rerun deciding too.
    rerun_decides: [&'static str; 4],
}

impl Columns {
    fn of_scenarios() -> Columns {
        let &[(ordering_a, _), (ordering_b, _), (all, _), (late_a, _), (late_b, _), (late_all, _), (closing_a, _), (closing_late_a, _), (crash, _), (failures, _), (failures_before_decision, _), (overlap, _), (fenced, _), (overlap_failures, _), (crash_rerun, _), (failures_rerun, _), (overlap_rerun, _), (fenced_rerun, _)] =
            super::SCENARIOS
        else {
            unreachable!("the leadership model has eighteen scenarios");
        };
        Columns {
            on_time: [ordering_a, ordering_b, all],
            late: [late_a, late_b, late_all],
            decide_while_closing: [closing_a, closing_late_a],
            crash,
            failures,
            failures_before_decision,
            overlap,
            fenced,
            overlap_failures,
            rerun_decides: [crash_rerun, failures_rerun, overlap_rerun, fenced_rerun],
        }
    }

    /// Each fault's column and its column with reruns deciding.
    fn with_reruns(&self) -> [(&'static str, &'static str); 4] {
        let [crash, failures, overlap, fenced] = self.rerun_decides;
        [
            (self.crash, crash),
            (self.failures, failures),
            (self.overlap, overlap),
            (self.fenced, fenced),
        ]
    }
}

/// The expected-verdict table of specs/leadership.md: per design, each safety row over
/// every scenario, the faults' own reachability properties, then reachability per
/// scenario.
pub(super) fn table() -> Vec<Expectation> {
    let columns = Columns::of_scenarios();
    let mut table = Vec::new();
    for (design, rows) in SAFETY {
        let cells = rows
            .into_iter()
            .flat_map(|(property, verdicts)| safety_cells(design, &columns, property, verdicts))
            .chain(fault_cells(&columns))
            .chain(reachability_cells(design, &columns));
        table.extend(cells.map(|(scenario, property, expected)| Expectation {
            design: design.name(),
            scenario,
            property,
            expected,
        }));
    }
    table
}

/// One safety property of a design over every scenario, from its verdicts on time.
fn safety_cells(
    design: Design,
    c: &Columns,
    property: &'static str,
    verdicts: [Verdict; 3],
) -> Vec<Cell> {
    let mut cells: Vec<Cell> = c
        .on_time
        .into_iter()
        .zip(verdicts)
        .map(|(scenario, expected)| (scenario, property, expected))
        .collect();
    // A late signal changes one row: the fixed design loses it wherever a close may
    // start with the signal in flight (ordering B and all), as runner-fix-only does on
    // time. Ordering A never closes with a signal in flight, so nothing can be late
    // there.
    let late = |i: usize| {
        let lost = design == Design::Fixed && i > 0 && LOST_TO_A_LATE_SIGNAL.contains(&property);
        if lost {
            Counterexample
        } else {
            verdicts[i]
        }
    };
    for (i, scenario) in c.late.into_iter().enumerate() {
        cells.push((scenario, property, late(i)));
    }
    // A decision during a close puts a signal in flight there after all: ordering A
    // then has the `all` column's verdicts, on time and late (runner-fix-only loses its
    // ordering-A holds: its close completed NotFinished before the decision).
    let [closing_a, closing_late_a] = c.decide_while_closing;
    cells.push((closing_a, property, verdicts[2]));
    cells.push((closing_late_a, property, late(2)));
    // A JobManager crash (ordering all) kills a decision the JobResultStore has not
    // recorded in every design: the next leader runs the job again, and its runner ends
    // SUSPENDED. Every other row keeps its `all` verdict: the fixed design loses a
    // decision only to the crash.
    let killed = [NO_REANIMATION, NO_MASKING].contains(&property);
    cells.push((
        c.crash,
        property,
        if killed { Counterexample } else { verdicts[2] },
    ));
    // A JobMaster failure may complete the process's result before the terminal
    // signal does, in every design: the decision is lost (dropped, masked by the
    // failure, or rerun after the fatal error it causes). Failures only before a
    // decision keep the `all` verdicts of the older properties: the rerun they cause
    // reruns an undecided job.
    cells.push((
        c.failures,
        property,
        if LOST_TO_A_JOBMASTER_FAILURE.contains(&property) {
            Counterexample
        } else {
            verdicts[2]
        },
    ));
    // A reanimated run whose JobMaster cannot start writes FAILED for the submitted
    // job over the first decision: every design that reanimates under `all`.
    let reanimated_run_fails = property == ENTRY_RECORDS_FIRST && design != Design::Fixed;
    cells.push((
        c.failures_before_decision,
        property,
        if reanimated_run_fails {
            Counterexample
        } else {
            verdicts[2]
        },
    ));
    cells.extend(overlap_cells(c, property, verdicts[2]));
    let both = overlap_failures_cell(c, property, &cells);
    cells.push(both);
    cells.extend(rerun_cells(design, c, property, &cells));
    cells
}

/// Overlapping dispatchers with JobMaster failures, from the two columns' `cells`: each
/// fault keeps every counterexample it has alone.
fn overlap_failures_cell(c: &Columns, property: &'static str, cells: &[Cell]) -> Cell {
    let verdict = |column: &str| {
        cells
            .iter()
            .find(|(scenario, _, _)| *scenario == column)
            .map(|(_, _, verdict)| *verdict)
            .expect("both fault columns come first")
    };
    let expected = if [c.failures, c.overlap]
        .into_iter()
        .any(|column| verdict(column) == Counterexample)
    {
        Counterexample
    } else {
        verdict(c.failures)
    };
    (c.overlap_failures, property, expected)
}

/// The fault columns with reruns deciding, from the fault columns' `cells`: a rerun
/// that decides writes its own status where nothing fences it, so the entry records
/// the first decision only where every rerun follows a crash that killed it (the fixed
/// design under crashes); every other verdict is the fault column's.
fn rerun_cells(design: Design, c: &Columns, property: &'static str, cells: &[Cell]) -> Vec<Cell> {
    c.with_reruns()
        .into_iter()
        .map(|(fault, rerun)| {
            let (_, _, verdict) = *cells
                .iter()
                .find(|(scenario, _, _)| *scenario == fault)
                .expect("every fault column comes first");
            let only_crashes_rerun = fault == c.crash && design == Design::Fixed;
            let expected = if property == ENTRY_RECORDS_FIRST && !only_crashes_rerun {
                Counterexample
            } else {
                verdict
            };
            (rerun, property, expected)
        })
        .collect()
}

/// Overlapping dispatcher leaders (ordering all), unfenced and fenced, from the `all`
/// verdict `all`.
fn overlap_cells(c: &Columns, property: &'static str, all: Verdict) -> [Cell; 2] {
    // The next leader recovers the job before the old one recorded its end, so every
    // design runs it again and has two live processes; the old dispatcher's late entry
    // contradicts the new runner unless the store fences it out. Fenced out, the old
    // runner's decision reaches no store: the rerun job (which decides at most once per
    // run) ends without an entry.
    let overlapped = [
        NO_REANIMATION,
        NO_MASKING,
        ONE_LIVE_PROCESS,
        ONLY_A_CRASH_LOSES,
    ]
    .contains(&property);
    [(c.overlap, true), (c.fenced, false)].map(|(scenario, stores_disagree)| {
        let lost = overlapped
            || (stores_disagree && property == STORES_AGREE)
            || (!stores_disagree && property == DECIDED_ENDS_CLEAN);
        (scenario, property, if lost { Counterexample } else { all })
    })
}

/// A fault's own reachability property comes with its setting only. Only an unfenced
/// old dispatcher writes the entry a later grant finds.
fn fault_cells(c: &Columns) -> [Cell; 15] {
    let [crash_rerun, failures_rerun, overlap_rerun, fenced_rerun] = c.rerun_decides;
    [
        (c.overlap_failures, FAILED_AT_START, Reached),
        (c.overlap_failures, FATAL_EXIT, Reached),
        (c.overlap_failures, ALREADY_DONE, Reached),
        (crash_rerun, CRASH_LOSES, Reached),
        (failures_rerun, FAILED_AT_START, Reached),
        (failures_rerun, FATAL_EXIT, Reached),
        (overlap_rerun, ALREADY_DONE, Reached),
        (fenced_rerun, ALREADY_DONE, Unreached),
        (c.crash, CRASH_LOSES, Reached),
        (c.failures, FAILED_AT_START, Reached),
        (c.failures, FATAL_EXIT, Reached),
        (c.failures_before_decision, FAILED_AT_START, Reached),
        (c.failures_before_decision, FATAL_EXIT, Reached),
        (c.overlap, ALREADY_DONE, Reached),
        (c.fenced, ALREADY_DONE, Unreached),
    ]
}

/// Reachability: every scenario reaches the steps it allows. Ordering A keeps the
/// signal out of closes (window B unreachable); ordering B delivers it only to a
/// closing process (window A unreachable). Under ordering B only the fixed design and
/// its mutant let a job finish: every other design loses the terminal value on the
/// close the signal must wait for.
fn reachability_cells(design: Design, c: &Columns) -> Vec<Cell> {
    let [ordering_a, ordering_b, all] = c.on_time;
    let [late_a, late_b, late_all] = c.late;
    let [closing_a, closing_late_a] = c.decide_while_closing;
    let mut cells = Vec::new();
    for (scenario, a, b) in [
        (ordering_a, Reached, Unreached),
        (ordering_b, Unreached, Reached),
        (all, Reached, Reached),
        (late_a, Reached, Unreached),
        (late_b, Unreached, Reached),
        (late_all, Reached, Reached),
        (closing_a, Reached, Reached),
        (closing_late_a, Reached, Reached),
        (c.crash, Reached, Reached),
        (c.failures, Reached, Reached),
        (c.failures_before_decision, Reached, Reached),
        (c.overlap, Reached, Reached),
        (c.fenced, Reached, Reached),
        (c.overlap_failures, Reached, Reached),
        (c.rerun_decides[0], Reached, Reached),
        (c.rerun_decides[1], Reached, Reached),
        (c.rerun_decides[2], Reached, Reached),
        (c.rerun_decides[3], Reached, Reached),
    ] {
        let under_b = scenario == ordering_b || scenario == late_b;
        let finishes = if under_b && !(design.process_fix() && design.runner_fix()) {
            Unreached
        } else {
            Reached
        };
        // Only the runner fix caches a terminal result. Under ordering B the result
        // comes from a closing process: without the process fix it is NotFinished by
        // then, and the mutant, whose revoke forgot the leader, caches it only when a
        // dispatcher failover (no revoke) closed the process.
        let reached = |yes: bool| if yes { Reached } else { Unreached };
        let regrant_flushes = reached(
            design.runner_fix()
                && (!under_b || (design.process_fix() && !design.revoke_clears_leader())),
        );
        let close_flushes = reached(design.runner_fix() && (!under_b || design.process_fix()));
        for (property, expected) in [
            (JOB_FINISHES, finishes),
            (JOB_SUSPENDED, Reached),
            (WINDOW_A, a),
            (WINDOW_B, b),
            (REGRANT, Reached),
            (FAILOVER_RECOVERS, Reached),
            (REGRANT_FLUSHES, regrant_flushes),
            (CLOSE_FLUSHES, close_flushes),
        ] {
            cells.push((scenario, property, expected));
        }
    }
    cells
}
