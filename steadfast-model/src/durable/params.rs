//! The durable model's settings: each bound and environment assumption with its default
//! and limits, and the named scenarios (the columns of the verdict table).

use super::{
    MAX_ACTIONS, MAX_CALLS, MAX_CONCURRENT, MAX_INPUTS, MAX_KEYS, MAX_PARTITIONS, MAX_SUBTASKS,
};
use crate::settings::{Param, ParamKind};

/// Every setting of the model: bounds and environment assumptions, each with its
/// default and limits.
pub(super) const PARAMS: &[Param] = &[
    Param {
        name: "keys",
        help: "keys of the input stream",
        kind: ParamKind::Int {
            default: 2,
            min: 1,
            max: MAX_KEYS as u64,
        },
    },
    Param {
        name: "inputs",
        help: "inputs per key",
        kind: ParamKind::Int {
            default: 2,
            min: 1,
            max: MAX_INPUTS as u64,
        },
    },
    Param {
        name: "actions",
        help: "actions per input",
        kind: ParamKind::Int {
            default: 1,
            min: 1,
            max: MAX_ACTIONS as u64,
        },
    },
    Param {
        name: "calls",
        help: "durable calls per action",
        kind: ParamKind::Int {
            default: 2,
            min: 1,
            max: MAX_CALLS as u64,
        },
    },
    Param {
        name: "partitions",
        help: "log partitions (key k writes to partition k mod partitions)",
        kind: ParamKind::Int {
            default: 1,
            min: 1,
            max: MAX_PARTITIONS as u64,
        },
    },
    Param {
        name: "crashes",
        help: "task failures (each followed by a restore)",
        kind: ParamKind::Int {
            default: 1,
            min: 0,
            max: 3,
        },
    },
    Param {
        name: "checkpoints",
        help: "checkpoints that may be triggered",
        kind: ParamKind::Int {
            default: 2,
            min: 0,
            max: 4,
        },
    },
    Param {
        name: "concurrent-checkpoints",
        help: "checkpoints pending at once (a later one's completion subsumes older ones)",
        kind: ParamKind::Int {
            default: 1,
            min: 1,
            max: MAX_CONCURRENT as u64,
        },
    },
    Param {
        name: "send-failures",
        help: "sends that may fail before their record lands (or after, see fail-after-landing)",
        kind: ParamKind::Int {
            default: 0,
            min: 0,
            max: 2,
        },
    },
    Param {
        name: "fail-after-landing",
        help: "a failing send may have landed its record first",
        kind: ParamKind::Bool { default: false },
    },
    Param {
        name: "synchronous-puts",
        help: "no snapshot between a put's send and its acknowledgement",
        kind: ParamKind::Bool { default: true },
    },
    Param {
        name: "concurrent-puts",
        help: "puts of different keys may be in flight at once (group commit)",
        kind: ParamKind::Bool { default: false },
    },
    Param {
        name: "mid-action-checkpoints",
        help: "checkpoints may come between an action's calls (continuation executor)",
        kind: ParamKind::Bool { default: true },
    },
    Param {
        name: "restart-without-checkpoint",
        help: "a crash may come before any checkpoint completed",
        kind: ParamKind::Bool { default: false },
    },
    Param {
        name: "compact-offsets",
        help: "renumber offsets by rank after every step (exact reduction; off: real positions)",
        kind: ParamKind::Bool { default: true },
    },
    Param {
        name: "checkpoint-aborts",
        help: "the oldest pending checkpoint may be aborted without a crash",
        kind: ParamKind::Bool { default: false },
    },
    Param {
        name: "lost-completions",
        help: "a checkpoint may complete without its notification reaching the operator",
        kind: ParamKind::Bool { default: false },
    },
    Param {
        name: "handled-put-errors",
        help: "a failed put of a call's result reaches the action, which catches it and goes on (its call index not advanced)",
        kind: ParamKind::Bool { default: false },
    },
    Param {
        name: "zombie-sends",
        help: "a crash may leave its unlanded send with the producer, to land later",
        kind: ParamKind::Bool { default: false },
    },
    Param {
        name: "subtasks",
        help: "operator subtasks (key k on subtask k mod subtasks), each with its own marker",
        kind: ParamKind::Int {
            default: 1,
            min: 1,
            max: MAX_SUBTASKS as u64,
        },
    },
    Param {
        name: "rescale",
        help: "a restore may scale the job in to one subtask, which takes over every key",
        kind: ParamKind::Bool { default: false },
    },
    Param {
        name: "own-marker",
        help: "a subtask restores from its own marker only, not the minimum of all subtasks'",
        kind: ParamKind::Bool { default: false },
    },
    Param {
        name: "fenced-producer",
        help:
            "a restore fences the crashed incarnation's producer (its sends land before, or never)",
        kind: ParamKind::Bool { default: false },
    },
    Param {
        name: "epoch-fencing",
        help: "a restore fences every partition with its epoch first; older records after a fence are skipped",
        kind: ParamKind::Bool { default: false },
    },
];

/// The named scenarios of the verdict table: each a set of overrides of the defaults.
pub(super) const SCENARIOS: &[(&str, &[(&str, &str)])] = &[
    (
        "synchronous-executor",
        &[
            ("mid-action-checkpoints", "false"),
            ("crashes", "2"),
            ("inputs", "1"),
        ],
    ),
    (
        "synchronous-executor-one-crash",
        &[("mid-action-checkpoints", "false"), ("inputs", "1")],
    ),
    ("failed-send", &[("send-failures", "1"), ("inputs", "1")]),
    (
        "fail-after-landing",
        &[
            ("send-failures", "1"),
            ("fail-after-landing", "true"),
            ("inputs", "1"),
        ],
    ),
    (
        "asynchronous-puts",
        &[("synchronous-puts", "false"), ("inputs", "1")],
    ),
    (
        "concurrent-puts",
        &[("concurrent-puts", "true"), ("inputs", "1")],
    ),
    (
        "concurrent-puts-fail-after-landing",
        &[
            ("concurrent-puts", "true"),
            ("send-failures", "1"),
            ("fail-after-landing", "true"),
            ("inputs", "1"),
        ],
    ),
    (
        "restart-without-checkpoint",
        &[("restart-without-checkpoint", "true"), ("inputs", "1")],
    ),
    (
        "concurrent-checkpoints",
        &[
            ("concurrent-checkpoints", "2"),
            ("checkpoints", "3"),
            ("inputs", "1"),
        ],
    ),
    (
        "checkpoint-aborts",
        &[
            ("checkpoint-aborts", "true"),
            ("checkpoints", "3"),
            ("inputs", "1"),
        ],
    ),
    (
        "lost-completions",
        &[
            ("lost-completions", "true"),
            ("checkpoints", "3"),
            ("inputs", "1"),
        ],
    ),
    (
        "handled-put-errors",
        &[
            ("handled-put-errors", "true"),
            ("send-failures", "1"),
            ("inputs", "1"),
        ],
    ),
    (
        "handled-put-errors-after-landing",
        &[
            ("handled-put-errors", "true"),
            ("send-failures", "1"),
            ("fail-after-landing", "true"),
            ("inputs", "1"),
        ],
    ),
    ("zombie-sends", &[("zombie-sends", "true"), ("inputs", "1")]),
    (
        "zombie-sends-fenced",
        &[
            ("zombie-sends", "true"),
            ("epoch-fencing", "true"),
            ("inputs", "1"),
        ],
    ),
    (
        "zombie-sends-fenced-two-crashes",
        &[
            ("zombie-sends", "true"),
            ("epoch-fencing", "true"),
            ("crashes", "2"),
            ("inputs", "1"),
        ],
    ),
    (
        "zombie-sends-two-crashes",
        &[("zombie-sends", "true"), ("crashes", "2"), ("inputs", "1")],
    ),
    (
        "zombie-sends-producer-fenced",
        &[
            ("zombie-sends", "true"),
            ("fenced-producer", "true"),
            ("inputs", "1"),
        ],
    ),
    ("subtasks", &[("subtasks", "2"), ("inputs", "1")]),
    (
        "rescale",
        &[("subtasks", "2"), ("rescale", "true"), ("inputs", "1")],
    ),
    (
        "rescale-own-marker",
        &[
            ("subtasks", "2"),
            ("rescale", "true"),
            ("own-marker", "true"),
            ("inputs", "1"),
        ],
    ),
];
