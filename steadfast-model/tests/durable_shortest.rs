//! The shortest counterexample, or the shortest witness, of each durable scenario's
//! finding, pinned as the actions breadth-first search finds first: a change of the
//! model that lengthens, shortens or reshapes one shows here. (The seed's own regression
//! is pinned with its step sentences in `durable.rs`.)

use steadfast_model::check;
use steadfast_model::durable::{property, Action, Design, Durable};

#[test]
fn shortest_paths_of_every_scenario_finding() {
    use property::*;
    use Action::*;
    use Design::*;
    let cases: Vec<(Design, &str, &'static str, Vec<Action>)> = vec![
        (
            // The seed's regression: a failed-send budget changes nothing about the shortest path.
            Unpatched,
            "failed-send",
            CALL_AT_MOST_ONCE,
            vec![
                DeliverInput(0),
                StartAction(0),
                CallSupplier(0),
                SendPut(0),
                AckPut(0),
                TriggerCheckpoint,
                CompleteCheckpoint(1),
                Crash { landed: false },
                Restore,
                StartAction(0),
                CallSupplier(0),
            ],
        ),
        (
            // The old put order caches a state whose send then fails before landing.
            OldPutOrder,
            "failed-send",
            CACHE_HOLDS_LOG,
            vec![
                DeliverInput(0),
                StartAction(0),
                CallSupplier(0),
                SendPut(0),
                FailPut {
                    key: 0,
                    landed: false,
                },
            ],
        ),
        (
            // A send that failed after landing is neither cached with an offset nor tracked: the marker passes its record.
            OldPutOrder,
            "fail-after-landing",
            CALL_AT_MOST_ONCE,
            vec![
                DeliverInput(0),
                StartAction(0),
                CallSupplier(0),
                SendPut(0),
                FailPut {
                    key: 0,
                    landed: true,
                },
                TriggerCheckpoint,
                CompleteCheckpoint(1),
                Crash { landed: false },
                Restore,
                StartAction(0),
                CallSupplier(0),
            ],
        ),
        (
            // The snapshot between landing and acknowledgement: no offset to rewind to yet.
            Fixed,
            "asynchronous-puts",
            CALL_AT_MOST_ONCE,
            vec![
                DeliverInput(0),
                StartAction(0),
                CallSupplier(0),
                SendPut(0),
                LandPut(0),
                TriggerCheckpoint,
                CompleteCheckpoint(1),
                Crash { landed: false },
                Restore,
                StartAction(0),
                CallSupplier(0),
            ],
        ),
        (
            // A restart with no completed checkpoint rebuilds nothing, though the record landed.
            Fixed,
            "restart-without-checkpoint",
            CALL_AT_MOST_ONCE,
            vec![
                DeliverInput(0),
                StartAction(0),
                CallSupplier(0),
                SendPut(0),
                Crash { landed: true },
                Restore,
                DeliverInput(0),
                StartAction(0),
                CallSupplier(0),
            ],
        ),
        (
            // The synchronous executor needs two crashes: the first lands the record after the checkpoint, the second restores a checkpoint taken over it.
            Unpatched,
            "synchronous-executor",
            CALL_AT_MOST_ONCE,
            vec![
                DeliverInput(0),
                TriggerCheckpoint,
                CompleteCheckpoint(1),
                StartAction(0),
                CallSupplier(0),
                SendPut(0),
                Crash { landed: true },
                Restore,
                TriggerCheckpoint,
                CompleteCheckpoint(2),
                Crash { landed: false },
                Restore,
                StartAction(0),
                CallSupplier(0),
            ],
        ),
        (
            // The per-key map keeps the finished key after the prune.
            UnprunedTracking,
            "default",
            BOUNDED_TRACKING,
            vec![
                DeliverInput(0),
                StartAction(0),
                CallSupplier(0),
                SendPut(0),
                AckPut(0),
                CallSupplier(0),
                SendPut(0),
                AckPut(0),
                CompleteAction(0),
                AckPut(0),
                TriggerCheckpoint,
                CompleteCheckpoint(1),
            ],
        ),
        (
            // The end-offset marker passes the unfinished input's saved result at once.
            Unpatched,
            "default",
            MARKER_IS_SAFE,
            vec![
                DeliverInput(0),
                StartAction(0),
                CallSupplier(0),
                SendPut(0),
                AckPut(0),
                TriggerCheckpoint,
                CompleteCheckpoint(1),
            ],
        ),
        (
            // The mutant commits the finished input's output when the checkpoint is taken.
            CommitOnSnapshot,
            "default",
            SAME_OUTPUT,
            vec![
                DeliverInput(0),
                StartAction(0),
                CallSupplier(0),
                SendPut(0),
                AckPut(0),
                CallSupplier(0),
                SendPut(0),
                AckPut(0),
                CompleteAction(0),
                AckPut(0),
                TriggerCheckpoint,
            ],
        ),
        (
            // The mutant commits input 0's output when checkpoint 2 is taken; a crash before its completion restores checkpoint 1, whose replay finds a zombie's record over the completed state: the committed input's action runs again.
            CommitOnSnapshot,
            "zombie-sends-two-crashes",
            COMMITTED_NOT_RERUN,
            vec![
                DeliverInput(0),
                StartAction(0),
                CallSupplier(0),
                TriggerCheckpoint,
                SendPut(0),
                CompleteCheckpoint(1),
                Crash { landed: false },
                Restore,
                StartAction(0),
                CallSupplier(0),
                SendPut(0),
                AckPut(0),
                CallSupplier(0),
                SendPut(0),
                AckPut(0),
                CompleteAction(0),
                AckPut(0),
                LandZombie,
                TriggerCheckpoint,
                Crash { landed: false },
                Restore,
                StartAction(0),
            ],
        ),
        (
            // The completion's send outlives the crash and lands after the restore read the log: the action starts again.
            Fixed,
            "zombie-sends",
            FINISHED_STAYS_FINISHED,
            vec![
                DeliverInput(0),
                StartAction(0),
                CallSupplier(0),
                SendPut(0),
                AckPut(0),
                CallSupplier(0),
                SendPut(0),
                AckPut(0),
                TriggerCheckpoint,
                CompleteAction(0),
                CompleteCheckpoint(1),
                Crash { landed: false },
                Restore,
                LandZombie,
                StartAction(0),
            ],
        ),
        (
            // The first call's send outlives the crash and lands after the restore: the supplier runs again.
            Fixed,
            "zombie-sends",
            CALL_AT_MOST_ONCE,
            vec![
                DeliverInput(0),
                StartAction(0),
                CallSupplier(0),
                TriggerCheckpoint,
                SendPut(0),
                CompleteCheckpoint(1),
                Crash { landed: false },
                Restore,
                LandZombie,
                StartAction(0),
                CallSupplier(0),
            ],
        ),
        (
            // The caught error's record landed; nothing tracks it, so the checkpoint's marker passes it.
            Fixed,
            "handled-put-errors-after-landing",
            CALL_AT_MOST_ONCE,
            vec![
                DeliverInput(0),
                StartAction(0),
                CallSupplier(0),
                SendPut(0),
                FailPut {
                    key: 0,
                    landed: true,
                },
                TriggerCheckpoint,
                CompleteCheckpoint(1),
                Crash { landed: false },
                Restore,
                StartAction(0),
                CallSupplier(0),
            ],
        ),
        (
            // The caught error's record never landed; call 1's result took call 0's slot, and the restored action clears it there and calls call 1 again.
            Fixed,
            "handled-put-errors",
            CALL_AT_MOST_ONCE,
            vec![
                DeliverInput(0),
                StartAction(0),
                CallSupplier(0),
                SendPut(0),
                FailPut {
                    key: 0,
                    landed: false,
                },
                CallSupplier(0),
                TriggerCheckpoint,
                SendPut(0),
                CompleteCheckpoint(1),
                Crash { landed: true },
                Restore,
                StartAction(0),
                CallSupplier(0),
                SendPut(0),
                AckPut(0),
                CallSupplier(0),
            ],
        ),
        (
            // Input 1's put lands with the crash after a checkpoint past input 0's records; the restore replays it.
            Fixed,
            "default",
            REUSED_AFTER_RESTORE,
            vec![
                DeliverInput(0),
                DeliverInput(0),
                StartAction(0),
                CallSupplier(0),
                SendPut(0),
                AckPut(0),
                CallSupplier(0),
                SendPut(0),
                AckPut(0),
                CompleteAction(0),
                AckPut(0),
                StartAction(0),
                CallSupplier(0),
                TriggerCheckpoint,
                SendPut(0),
                CompleteCheckpoint(1),
                Crash { landed: true },
                Restore,
                StartAction(0),
                ReuseResult(0),
            ],
        ),
        (
            // The fix's marker rewinds to the queued action's saved result.
            Fixed,
            "default",
            MARKER_REWOUND,
            vec![
                DeliverInput(0),
                StartAction(0),
                CallSupplier(0),
                SendPut(0),
                AckPut(0),
                TriggerCheckpoint,
            ],
        ),
        (
            // The situation of issue 1158, six steps in.
            Fixed,
            "default",
            CHECKPOINT_WITH_QUEUED,
            vec![
                DeliverInput(0),
                StartAction(0),
                CallSupplier(0),
                SendPut(0),
                AckPut(0),
                TriggerCheckpoint,
            ],
        ),
        (
            // Input 0 finishes after checkpoint 1, and checkpoint 2 commits it after the restore.
            Fixed,
            "default",
            OUTPUT_AFTER_RESTORE,
            vec![
                DeliverInput(0),
                StartAction(0),
                CallSupplier(0),
                SendPut(0),
                AckPut(0),
                CallSupplier(0),
                SendPut(0),
                AckPut(0),
                TriggerCheckpoint,
                CompleteAction(0),
                CompleteCheckpoint(1),
                Crash { landed: true },
                Restore,
                StartAction(0),
                TriggerCheckpoint,
                CompleteCheckpoint(2),
            ],
        ),
        (
            // Subtask 0 takes its part of the checkpoint with nothing unfinished (its
            // marker at the end), subtask 1 its own at key 1's saved result; scaled in,
            // subtask 0 takes over key 1 but restores from its own marker: the seed's
            // regression, one subtask over.
            Fixed,
            "rescale-own-marker",
            CALL_AT_MOST_ONCE,
            vec![
                DeliverInput(1),
                StartAction(1),
                CallSupplier(1),
                SendPut(1),
                AckPut(1),
                TriggerCheckpoint,
                SnapshotSubtask,
                CompleteCheckpoint(1),
                Crash { landed: false },
                RestoreScaledIn,
                StartAction(1),
                CallSupplier(1),
            ],
        ),
    ];
    for (design, scenario, property, expected) in cases {
        let model = Durable::scenario(design, scenario).unwrap();
        let path = check::shortest(&model, property)
            .unwrap_or_else(|| panic!("{scenario} / {} / {property}: no path", design.name()));
        assert_eq!(
            path.into_actions(),
            expected,
            "{scenario} / {} / {property}",
            design.name()
        );
    }
}
