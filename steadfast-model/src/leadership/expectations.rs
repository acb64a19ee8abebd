//! The expected-verdict table of specs/leadership.md, per design and scenario.

use super::property::{
    ALREADY_DONE, CLOSE_FLUSHES, CRASH_LOSES, DECIDED_ENDS_CLEAN, FAILED_AT_START,
    FAILOVER_RECOVERS, FATAL_EXIT, JOB_FINISHES, JOB_SUSPENDED, NO_MASKING, NO_REANIMATION,
    ONE_LIVE_PROCESS, ONLY_A_CRASH_LOSES, REGRANT, REGRANT_FLUSHES, SET_ONCE, STORES_AGREE,
    WINDOW_A, WINDOW_B,
};
use super::Design;
use crate::Expectation;
use crate::Verdict::{self, Counterexample, Holds, Reached, Unreached};

/// A property and its safety verdicts under ordering A, ordering B and all.
type Row = (&'static str, [Verdict; 3]);

/// One cell of the table for a design: scenario, property, verdict.
type Cell = (&'static str, &'static str, Verdict);

/// Per design: the safety verdicts under ordering A, ordering B and all, signal on time.
const SAFETY: [(Design, [Row; 7]); 5] = [
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

/// The scenarios' names, from the one table that defines them.
struct Columns {
    /// Each ordering on time: A, B, all.
    on_time: [&'static str; 3],
    /// Each ordering with late signals: A, B, all.
    late: [&'static str; 3],
    crash: &'static str,
    failures: &'static str,
    overlap: &'static str,
    fenced: &'static str,
}

impl Columns {
    fn of_scenarios() -> Columns {
        let &[(ordering_a, _), (ordering_b, _), (all, _), (late_a, _), (late_b, _), (late_all, _), (crash, _), (failures, _), (overlap, _), (fenced, _)] =
            super::SCENARIOS
        else {
            unreachable!("the leadership model has ten scenarios");
        };
        Columns {
            on_time: [ordering_a, ordering_b, all],
            late: [late_a, late_b, late_all],
            crash,
            failures,
            overlap,
            fenced,
        }
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
    for (i, scenario) in c.late.into_iter().enumerate() {
        let lost = design == Design::Fixed && i > 0 && LOST_TO_A_LATE_SIGNAL.contains(&property);
        cells.push((
            scenario,
            property,
            if lost { Counterexample } else { verdicts[i] },
        ));
    }
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
    // JobMaster failures (before a decision) change no verdict: a failure that passes
    // the leadership check is a fatal error, and the rerun it causes reruns an
    // undecided job.
    cells.push((c.failures, property, verdicts[2]));
    cells.extend(overlap_cells(c, property, verdicts[2]));
    cells
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
fn fault_cells(c: &Columns) -> [Cell; 5] {
    [
        (c.crash, CRASH_LOSES, Reached),
        (c.failures, FAILED_AT_START, Reached),
        (c.failures, FATAL_EXIT, Reached),
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
    let mut cells = Vec::new();
    for (scenario, a, b) in [
        (ordering_a, Reached, Unreached),
        (ordering_b, Unreached, Reached),
        (all, Reached, Reached),
        (late_a, Reached, Unreached),
        (late_b, Unreached, Reached),
        (late_all, Reached, Reached),
        (c.crash, Reached, Reached),
        (c.failures, Reached, Reached),
        (c.overlap, Reached, Reached),
        (c.fenced, Reached, Reached),
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
