//! The verdicts the durable model must give: the table of `durable-actions.md` per
//! design and scenario, extended to every property.

use super::property::{
    BOUNDED_TRACKING, CACHE_HOLDS_LOG, CALL_AT_MOST_ONCE, COMMITTED_NOT_RERUN,
    FINISHED_STAYS_FINISHED, MARKER_IS_SAFE, MARKER_REWOUND, REACHABILITY, SAME_OUTPUT,
};
use super::DESIGNS;
use crate::Verdict::{self, Counterexample as Ce, Holds as H, Reached as R, Unreached as U};
use crate::{Expectation, DEFAULT_SCENARIO};

/// The rows of one property in one scenario: `verdicts` are the seed's four designs'; the
/// mutant `commit-on-snapshot` runs the fixed store, so it gets the fixed design's
/// verdict, except that its sink commits outputs ahead of completion, which "same output"
/// catches in every scenario (each has a checkpoint to take), and except the scenarios
/// of [`MUTANT_ONLY`].
fn verdict_rows(
    scenario: &'static str,
    property: &'static str,
    verdicts: [Verdict; 4],
) -> impl Iterator<Item = Expectation> {
    let mutant = if property == SAME_OUTPUT || MUTANT_ONLY.contains(&(scenario, property)) {
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

/// Where the mutant fails a property the fixed design keeps, besides "same output":
/// with zombie sends and two crashes, the sink commits an input's output when checkpoint
/// 2 is taken, the task crashes before that checkpoint completes, and the restore from
/// checkpoint 1 finds a zombie's record of the input over its completed one, so the
/// committed input's action runs again (22 steps). One crash is not enough: the zombie
/// needs the first.
const MUTANT_ONLY: [(&str, &str); 1] = [("zombie-sends-two-crashes", COMMITTED_NOT_RERUN)];

/// A safety property and its verdicts in the seed's four designs.
type Row = (&'static str, [Verdict; 4]);

/// What the table lists for one scenario at a time.
#[derive(Clone, Copy)]
enum Rows {
    /// These safety properties' verdicts.
    Safety(&'static [Row]),
    /// Every reachability property, with [`reachability`]'s verdicts.
    Reachability,
}

/// The table of durable-actions.md, extended to every safety property.
const DEFAULT: [Row; 7] = [
    (CALL_AT_MOST_ONCE, [Ce, H, H, H]),
    (FINISHED_STAYS_FINISHED, [H, H, H, H]),
    (SAME_OUTPUT, [H, H, H, H]),
    // A failed send is what shows the cache's counterexample (scenario below).
    (CACHE_HOLDS_LOG, [H, H, H, H]),
    (BOUNDED_TRACKING, [H, H, Ce, H]),
    (MARKER_IS_SAFE, [Ce, H, H, H]),
    (COMMITTED_NOT_RERUN, [H, H, H, H]),
];

/// Concurrent puts with a send that may fail after landing: the verdicts of the
/// sequential scenario.
const CONCURRENT_FAILING: [Row; 7] = [
    (CALL_AT_MOST_ONCE, [Ce, Ce, H, H]),
    (FINISHED_STAYS_FINISHED, [H, H, H, H]),
    (SAME_OUTPUT, [H, H, H, H]),
    (CACHE_HOLDS_LOG, [Ce, Ce, H, H]),
    (BOUNDED_TRACKING, [H, H, Ce, H]),
    (MARKER_IS_SAFE, [Ce, Ce, H, H]),
    (COMMITTED_NOT_RERUN, [H, H, H, H]),
];

/// A failed put of a call's result that the action catches and goes on from, failing
/// before landing: the verdicts of `failed-send`, except that the designs that see the
/// error repeat a call. The call index stays at the failed call's slot, the next call's
/// result takes it, and a restore that reads that list clears it at the gap and calls
/// the later call again (16 steps in `fixed`).
const HANDLED: [Row; 7] = [
    (CALL_AT_MOST_ONCE, [Ce, H, Ce, Ce]),
    (FINISHED_STAYS_FINISHED, [H, H, H, H]),
    (SAME_OUTPUT, [H, H, H, H]),
    (CACHE_HOLDS_LOG, [Ce, Ce, H, H]),
    (BOUNDED_TRACKING, [H, H, Ce, H]),
    (MARKER_IS_SAFE, [Ce, H, H, H]),
    (COMMITTED_NOT_RERUN, [H, H, H, H]),
];

/// A handled put error after landing: the fixed design repeats a call, since a
/// checkpoint taken before the action's next acknowledged put has no offset of that
/// state to rewind its marker to, and skips the landed record.
const HANDLED_AFTER_LANDING: [Row; 7] = [
    (CALL_AT_MOST_ONCE, [Ce, Ce, Ce, Ce]),
    (FINISHED_STAYS_FINISHED, [H, H, H, H]),
    (SAME_OUTPUT, [H, H, H, H]),
    (CACHE_HOLDS_LOG, [Ce, Ce, H, H]),
    (BOUNDED_TRACKING, [H, H, Ce, H]),
    (MARKER_IS_SAFE, [Ce, Ce, Ce, Ce]),
    (COMMITTED_NOT_RERUN, [H, H, H, H]),
];

/// A send the crash did not stop lands later, after the restore read the log or over
/// a newer record of its state key: every design repeats a call, and an action whose
/// completion lands that way starts again; a second crash changes nothing.
const ZOMBIE: [Row; 7] = [
    (CALL_AT_MOST_ONCE, [Ce, Ce, Ce, Ce]),
    (FINISHED_STAYS_FINISHED, [Ce, Ce, Ce, Ce]),
    (SAME_OUTPUT, [H, H, H, H]),
    (CACHE_HOLDS_LOG, [H, H, H, H]),
    (BOUNDED_TRACKING, [H, H, Ce, H]),
    (MARKER_IS_SAFE, [Ce, Ce, Ce, Ce]),
    (COMMITTED_NOT_RERUN, [H, H, H, H]),
];

/// Two crashes without zombies: the unpatched design also restarts a finished input.
const TWO_CRASHES: [Row; 7] = [
    (CALL_AT_MOST_ONCE, [Ce, H, H, H]),
    (FINISHED_STAYS_FINISHED, [Ce, H, H, H]),
    (SAME_OUTPUT, [H, H, H, H]),
    (CACHE_HOLDS_LOG, [H, H, H, H]),
    (BOUNDED_TRACKING, [H, H, Ce, H]),
    (MARKER_IS_SAFE, [Ce, H, H, H]),
    (COMMITTED_NOT_RERUN, [H, H, H, H]),
];

/// A subtask that restored from its own index's marker only would skip the moved
/// key's saved results: every design repeats a call.
const OWN_MARKER: [Row; 7] = [
    (CALL_AT_MOST_ONCE, [Ce, Ce, Ce, Ce]),
    (FINISHED_STAYS_FINISHED, [H, H, H, H]),
    (SAME_OUTPUT, [H, H, H, H]),
    (CACHE_HOLDS_LOG, [H, H, H, H]),
    (BOUNDED_TRACKING, [H, H, Ce, H]),
    (MARKER_IS_SAFE, [Ce, Ce, Ce, Ce]),
    (COMMITTED_NOT_RERUN, [H, H, H, H]),
];

/// The whole table, scenario by scenario in the order it is listed.
const TABLE: &[(&str, Rows)] = &[
    (DEFAULT_SCENARIO, Rows::Safety(&DEFAULT)),
    (DEFAULT_SCENARIO, Rows::Reachability),
    // The seed's synchronous executor: the bug needs two crashes.
    (
        "synchronous-executor",
        Rows::Safety(&[
            (CALL_AT_MOST_ONCE, [Ce, H, H, H]),
            (MARKER_IS_SAFE, [Ce, H, H, H]),
        ]),
    ),
    (
        "synchronous-executor-one-crash",
        Rows::Safety(&[
            (CALL_AT_MOST_ONCE, [H, H, H, H]),
            (MARKER_IS_SAFE, [Ce, H, H, H]),
        ]),
    ),
    // A send failing before its record landed: the old put order caches it.
    (
        "failed-send",
        Rows::Safety(&[
            (CALL_AT_MOST_ONCE, [Ce, H, H, H]),
            (CACHE_HOLDS_LOG, [Ce, Ce, H, H]),
            (MARKER_IS_SAFE, [Ce, H, H, H]),
        ]),
    ),
    // A send failing after its record landed defeats the old put order.
    (
        "fail-after-landing",
        Rows::Safety(&[
            (CALL_AT_MOST_ONCE, [Ce, Ce, H, H]),
            (MARKER_IS_SAFE, [Ce, Ce, H, H]),
        ]),
    ),
    // Asynchronous puts defeat every design.
    (
        "asynchronous-puts",
        Rows::Safety(&[
            (CALL_AT_MOST_ONCE, [Ce, Ce, Ce, Ce]),
            (MARKER_IS_SAFE, [Ce, Ce, Ce, Ce]),
        ]),
    ),
    // A restart with no completed checkpoint rebuilds nothing.
    (
        "restart-without-checkpoint",
        Rows::Safety(&[
            (CALL_AT_MOST_ONCE, [Ce, Ce, Ce, Ce]),
            (MARKER_IS_SAFE, [Ce, Ce, Ce, Ce]),
        ]),
    ),
    // Two checkpoints pending at once, a later one's completion subsuming an older
    // one: every verdict of the default table.
    ("concurrent-checkpoints", Rows::Safety(&DEFAULT)),
    ("concurrent-checkpoints", Rows::Reachability),
    // Puts of different keys in flight at once (the runtime's group commit), landing
    // and answered in any order: every verdict of the default table; with a send that
    // may fail after landing, those of the sequential scenario.
    ("concurrent-puts", Rows::Safety(&DEFAULT)),
    (
        "concurrent-puts-fail-after-landing",
        Rows::Safety(&CONCURRENT_FAILING),
    ),
    ("concurrent-puts", Rows::Reachability),
    ("concurrent-puts-fail-after-landing", Rows::Reachability),
    // A checkpoint aborted without a crash, and a completion whose notification never
    // reaches the operator (nothing pruned, output committed late): every verdict of
    // the default table.
    ("checkpoint-aborts", Rows::Safety(&DEFAULT)),
    ("lost-completions", Rows::Safety(&DEFAULT)),
    ("handled-put-errors", Rows::Safety(&HANDLED)),
    (
        "handled-put-errors-after-landing",
        Rows::Safety(&HANDLED_AFTER_LANDING),
    ),
    // Epoch fencing (every record carries its incarnation's epoch, a restore fences
    // every partition before it reads, a rebuild skips older records behind a newer
    // fence) gives back the table of the same bounds without zombies, one crash or two;
    // so does a broker that refuses the crashed producer's sends after the restore.
    ("zombie-sends", Rows::Safety(&ZOMBIE)),
    ("zombie-sends-two-crashes", Rows::Safety(&ZOMBIE)),
    ("zombie-sends-fenced", Rows::Safety(&DEFAULT)),
    (
        "zombie-sends-fenced-two-crashes",
        Rows::Safety(&TWO_CRASHES),
    ),
    ("zombie-sends-producer-fenced", Rows::Safety(&DEFAULT)),
    // Two subtasks sharing the partition, each marker covering its own keys, and a
    // restore that scales in to one subtask, which takes over the other's keys: every
    // subtask replays from the minimum of all subtasks' markers (Flink Agents' union
    // list state), so nothing changes.
    ("subtasks", Rows::Safety(&DEFAULT)),
    ("rescale", Rows::Safety(&DEFAULT)),
    ("rescale-own-marker", Rows::Safety(&OWN_MARKER)),
    ("checkpoint-aborts", Rows::Reachability),
    ("lost-completions", Rows::Reachability),
    ("handled-put-errors", Rows::Reachability),
    ("handled-put-errors-after-landing", Rows::Reachability),
    ("zombie-sends", Rows::Reachability),
    ("zombie-sends-two-crashes", Rows::Reachability),
    ("zombie-sends-fenced", Rows::Reachability),
    ("zombie-sends-fenced-two-crashes", Rows::Reachability),
    ("zombie-sends-producer-fenced", Rows::Reachability),
    ("subtasks", Rows::Reachability),
    ("rescale", Rows::Reachability),
    ("rescale-own-marker", Rows::Reachability),
];

/// Every witness is reached in every design, but the unpatched design's marker is
/// always the end offset.
fn reachability(property: &str) -> [Verdict; 4] {
    if property == MARKER_REWOUND {
        [U, R, R, R]
    } else {
        [R, R, R, R]
    }
}

/// Every expected verdict, [`TABLE`] in order, each row design by design in
/// [`DESIGNS`] order.
pub(super) fn table() -> Vec<Expectation> {
    let mut rows = Vec::new();
    for &(scenario, block) in TABLE {
        match block {
            Rows::Safety(verdicts) => {
                for &(p, v) in verdicts {
                    rows.extend(verdict_rows(scenario, p, v));
                }
            }
            Rows::Reachability => {
                for p in REACHABILITY {
                    rows.extend(verdict_rows(scenario, p, reachability(p)));
                }
            }
        }
    }
    rows
}
