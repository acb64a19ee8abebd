//! The verdicts the durable model must give: the table of `durable-actions.md` per
//! design and scenario, extended to every property.

use super::{property, DESIGNS};
use crate::{Expectation, Verdict, DEFAULT_SCENARIO};

/// The rows of one property in one scenario: `verdicts` are the seed's four designs'; the
/// mutant `commit-on-snapshot` runs the fixed store, so it gets the fixed design's
/// verdict, except that its sink commits outputs ahead of completion, which "same output"
/// catches in every scenario (each has a checkpoint to take).
fn verdict_rows(
    scenario: &'static str,
    property: &'static str,
    verdicts: [Verdict; 4],
) -> impl Iterator<Item = Expectation> {
    let mutant = if property == property::SAME_OUTPUT {
        Verdict::Counterexample
    } else {
        verdicts[3]
    };
    let verdicts = [verdicts[0], verdicts[1], verdicts[2], verdicts[3], mutant];
    DESIGNS
        .into_iter()
        .zip(verdicts)
        .map(move |(design, expected)| Expectation {
            design: design.name(),
            scenario,
            property,
            expected,
        })
}

/// Every expected verdict, design by design in [`DESIGNS`] order.
pub(super) fn table() -> Vec<Expectation> {
    use property::*;
    use Verdict::{Counterexample as Ce, Holds as H, Reached as R, Unreached as U};
    // Every witness is reached in every design, but the unpatched design's marker is
    // always the end offset.
    let reach = |p: &str| {
        if p == MARKER_REWOUND {
            [U, R, R, R]
        } else {
            [R, R, R, R]
        }
    };
    let mut rows = Vec::new();
    // The table of durable-actions.md, extended to every safety property.
    let default: [(&str, [Verdict; 4]); 6] = [
        (CALL_AT_MOST_ONCE, [Ce, H, H, H]),
        (FINISHED_STAYS_FINISHED, [H, H, H, H]),
        (SAME_OUTPUT, [H, H, H, H]),
        // A failed send is what shows the cache's counterexample (scenario below).
        (CACHE_HOLDS_LOG, [H, H, H, H]),
        (BOUNDED_TRACKING, [H, H, Ce, H]),
        (MARKER_IS_SAFE, [Ce, H, H, H]),
    ];
    for (p, v) in default {
        rows.extend(verdict_rows(DEFAULT_SCENARIO, p, v));
    }
    for p in REACHABILITY {
        rows.extend(verdict_rows(DEFAULT_SCENARIO, p, reach(p)));
    }
    let scenarios: [(&str, &str, [Verdict; 4]); 13] = [
        // The seed's synchronous executor: the bug needs two crashes.
        ("synchronous-executor", CALL_AT_MOST_ONCE, [Ce, H, H, H]),
        ("synchronous-executor", MARKER_IS_SAFE, [Ce, H, H, H]),
        (
            "synchronous-executor-one-crash",
            CALL_AT_MOST_ONCE,
            [H, H, H, H],
        ),
        (
            "synchronous-executor-one-crash",
            MARKER_IS_SAFE,
            [Ce, H, H, H],
        ),
        // A send failing before its record landed: the old put order caches it.
        ("failed-send", CALL_AT_MOST_ONCE, [Ce, H, H, H]),
        ("failed-send", CACHE_HOLDS_LOG, [Ce, Ce, H, H]),
        ("failed-send", MARKER_IS_SAFE, [Ce, H, H, H]),
        // A send failing after its record landed defeats the old put order.
        ("fail-after-landing", CALL_AT_MOST_ONCE, [Ce, Ce, H, H]),
        ("fail-after-landing", MARKER_IS_SAFE, [Ce, Ce, H, H]),
        // Asynchronous puts defeat every design.
        ("asynchronous-puts", CALL_AT_MOST_ONCE, [Ce, Ce, Ce, Ce]),
        ("asynchronous-puts", MARKER_IS_SAFE, [Ce, Ce, Ce, Ce]),
        // A restart with no completed checkpoint rebuilds nothing.
        (
            "restart-without-checkpoint",
            CALL_AT_MOST_ONCE,
            [Ce, Ce, Ce, Ce],
        ),
        (
            "restart-without-checkpoint",
            MARKER_IS_SAFE,
            [Ce, Ce, Ce, Ce],
        ),
    ];
    for (scenario, p, v) in scenarios {
        rows.extend(verdict_rows(scenario, p, v));
    }
    // Two checkpoints pending at once, a later one's completion subsuming an older
    // one: every verdict of the default table.
    for (p, v) in default {
        rows.extend(verdict_rows("concurrent-checkpoints", p, v));
    }
    for p in REACHABILITY {
        rows.extend(verdict_rows("concurrent-checkpoints", p, reach(p)));
    }
    // Puts of different keys in flight at once (the runtime's group commit), landing
    // and answered in any order: every verdict of the default table; with a send that
    // may fail after landing, those of the sequential scenario.
    for (p, v) in default {
        rows.extend(verdict_rows("concurrent-puts", p, v));
    }
    let concurrent_failing: [(&str, [Verdict; 4]); 6] = [
        (CALL_AT_MOST_ONCE, [Ce, Ce, H, H]),
        (FINISHED_STAYS_FINISHED, [H, H, H, H]),
        (SAME_OUTPUT, [H, H, H, H]),
        (CACHE_HOLDS_LOG, [Ce, Ce, H, H]),
        (BOUNDED_TRACKING, [H, H, Ce, H]),
        (MARKER_IS_SAFE, [Ce, Ce, H, H]),
    ];
    for (p, v) in concurrent_failing {
        rows.extend(verdict_rows("concurrent-puts-fail-after-landing", p, v));
    }
    for scenario in ["concurrent-puts", "concurrent-puts-fail-after-landing"] {
        for p in REACHABILITY {
            rows.extend(verdict_rows(scenario, p, reach(p)));
        }
    }
    // A checkpoint aborted without a crash, and a completion whose notification never
    // reaches the operator (nothing pruned, output committed late): every verdict of
    // the default table.
    for scenario in ["checkpoint-aborts", "lost-completions"] {
        for (p, v) in default {
            rows.extend(verdict_rows(scenario, p, v));
        }
    }
    // A failed put of a call's result that the action catches and goes on from. Failing
    // before landing, the verdicts of `failed-send`; after landing, the fixed design
    // repeats a call: a checkpoint taken before the action's next acknowledged put
    // has no offset of that state to rewind its marker to, and skips the landed record.
    let handled: [(&str, [Verdict; 4]); 6] = [
        (CALL_AT_MOST_ONCE, [Ce, H, H, H]),
        (FINISHED_STAYS_FINISHED, [H, H, H, H]),
        (SAME_OUTPUT, [H, H, H, H]),
        (CACHE_HOLDS_LOG, [Ce, Ce, H, H]),
        (BOUNDED_TRACKING, [H, H, Ce, H]),
        (MARKER_IS_SAFE, [Ce, H, H, H]),
    ];
    let handled_after_landing: [(&str, [Verdict; 4]); 6] = [
        (CALL_AT_MOST_ONCE, [Ce, Ce, Ce, Ce]),
        (FINISHED_STAYS_FINISHED, [H, H, H, H]),
        (SAME_OUTPUT, [H, H, H, H]),
        (CACHE_HOLDS_LOG, [Ce, Ce, H, H]),
        (BOUNDED_TRACKING, [H, H, Ce, H]),
        (MARKER_IS_SAFE, [Ce, Ce, Ce, Ce]),
    ];
    for (scenario, table) in [
        ("handled-put-errors", handled),
        ("handled-put-errors-after-landing", handled_after_landing),
    ] {
        for (p, v) in table {
            rows.extend(verdict_rows(scenario, p, v));
        }
    }
    // A send the crash did not stop lands later, after the restore read the log or over
    // a newer record of its state key: every design repeats a call, and an action whose
    // completion lands that way starts again; a second crash changes nothing. Epoch
    // fencing (every record carries its incarnation's epoch, a restore fences every
    // partition before it reads, a rebuild skips older records behind a newer fence)
    // gives back the table of the same bounds without zombies, one crash or two; so does
    // a broker that refuses the crashed producer's sends after the restore.
    let zombie: [(&str, [Verdict; 4]); 6] = [
        (CALL_AT_MOST_ONCE, [Ce, Ce, Ce, Ce]),
        (FINISHED_STAYS_FINISHED, [Ce, Ce, Ce, Ce]),
        (SAME_OUTPUT, [H, H, H, H]),
        (CACHE_HOLDS_LOG, [H, H, H, H]),
        (BOUNDED_TRACKING, [H, H, Ce, H]),
        (MARKER_IS_SAFE, [Ce, Ce, Ce, Ce]),
    ];
    // Two crashes without zombies: the unpatched design also restarts a finished input.
    let two_crashes: [(&str, [Verdict; 4]); 6] = [
        (CALL_AT_MOST_ONCE, [Ce, H, H, H]),
        (FINISHED_STAYS_FINISHED, [Ce, H, H, H]),
        (SAME_OUTPUT, [H, H, H, H]),
        (CACHE_HOLDS_LOG, [H, H, H, H]),
        (BOUNDED_TRACKING, [H, H, Ce, H]),
        (MARKER_IS_SAFE, [Ce, H, H, H]),
    ];
    for (scenario, table) in [
        ("zombie-sends", zombie),
        ("zombie-sends-two-crashes", zombie),
        ("zombie-sends-fenced", default),
        ("zombie-sends-fenced-two-crashes", two_crashes),
        ("zombie-sends-producer-fenced", default),
    ] {
        for (p, v) in table {
            rows.extend(verdict_rows(scenario, p, v));
        }
    }
    // Two subtasks sharing the partition, each marker covering its own keys, and a
    // restore that scales in to one subtask, which takes over the other's keys: every
    // subtask replays from the minimum of all subtasks' markers (Flink Agents' union list
    // state), so nothing changes. A subtask that restored from its own index's marker
    // only would skip the moved key's saved results: every design repeats a call.
    for scenario in ["subtasks", "rescale"] {
        for (p, v) in default {
            rows.extend(verdict_rows(scenario, p, v));
        }
    }
    let own_marker: [(&str, [Verdict; 4]); 6] = [
        (CALL_AT_MOST_ONCE, [Ce, Ce, Ce, Ce]),
        (FINISHED_STAYS_FINISHED, [H, H, H, H]),
        (SAME_OUTPUT, [H, H, H, H]),
        (CACHE_HOLDS_LOG, [H, H, H, H]),
        (BOUNDED_TRACKING, [H, H, Ce, H]),
        (MARKER_IS_SAFE, [Ce, Ce, Ce, Ce]),
    ];
    for (p, v) in own_marker {
        rows.extend(verdict_rows("rescale-own-marker", p, v));
    }
    for scenario in [
        "checkpoint-aborts",
        "lost-completions",
        "handled-put-errors",
        "handled-put-errors-after-landing",
        "zombie-sends",
        "zombie-sends-two-crashes",
        "zombie-sends-fenced",
        "zombie-sends-fenced-two-crashes",
        "zombie-sends-producer-fenced",
        "subtasks",
        "rescale",
        "rescale-own-marker",
    ] {
        for p in REACHABILITY {
            rows.extend(verdict_rows(scenario, p, reach(p)));
        }
    }
    rows
}
