//! `steadfast`: the command line of the workspace.
//!
//! - `check MODEL`: exhaustive check of one design, a table of verdicts and the shortest
//!   trace of every discovery (`--simulate`, `--merge`: swarm mode);
//! - `verdicts`: every design of every model against the expected-verdict tables of
//!   `specs/`;
//! - `explore MODEL`: the stateright Explorer in the browser;
//! - `models`: the models, their designs, settings and scenarios;
//! - `conform [MODEL]`: every transition of the model replayed against the runtime;
//! - `traces MODEL`: the transition-covering trace set written to files;
//! - `replay FILE`: one trace file replayed against the runtime;
//! - `departs MODEL`: where the runtime leaves the unpatched design's counterexample;
//! - `simulate MODEL`: concurrent, seeded, faulty runs of the machines, one log each;
//! - `validate LOG...`: each production log checked against the model;
//! - `bench [MODEL]`: checking speed, symmetry factor and growth per bound; with
//!   `--peer` and `--validation`, a peer checker's bounds and the validator's throughput.
//!
//! Exit status follows model checkers: 0 when everything holds and is reached, 1 when a
//! counterexample is found or a reachability property is unreached (or a verdict does not
//! match its table), 2 on bad arguments, 3 when a run fails while running (a memory or
//! disk budget exceeded, a write error).

mod args;
mod bench;
mod budget;
mod commands;
mod conform;
mod explore;
mod models;
mod render;
mod report;
mod simulate;
mod swarm;

use std::process::ExitCode;

use args::{one_line, quote, Outcome, UsageError};

/// Conformance replay allocates at every step (runtime forks, projections holding
/// strings): with mimalloc it ran a sixth fewer instructions and about a fifth faster
/// at the conformance bounds; model checking ran alike with either allocator
/// (`specs/performance.md`, "Conformance replay").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const USAGE: &str = "\
steadfast: formal models of two Apache Flink bugs, and the checks that bind them to code

usage:
  steadfast check MODEL [--design D] [--SETTING VALUE]... [--threads N] [--dfs [--symmetry]]
                    [--por] [--json] [--report FILE.html]
  steadfast check MODEL [--design D] [--SETTING VALUE]... --simulate --time T
                    [--seed N] [--shard i/n] [--out DIR] [--json]
                                    swarm mode: seeded random walks, one shard
  steadfast check --merge DIR       one verdict table from a swarm's shard files
  steadfast verdicts [--json]
  steadfast explore MODEL [--design D] [--SETTING VALUE]... [--addr 127.0.0.1:3000] [--public]
  steadfast models                  list models, designs, settings and scenarios
  steadfast conform [MODEL] [--design D] [--SETTING V]... [--threads N] [--walks N] [--seed S] [--json]
                                    replay every transition against the runtime
  steadfast traces MODEL --out DIR [--format json|itf] [--limit N]
                                    write the transition-covering trace set
  steadfast replay FILE             replay one trace file against the runtime
  steadfast departs MODEL [--property P]
                                    where the runtime leaves an unpatched counterexample
  steadfast simulate MODEL --out DIR [--runs N] [--seed S] [--bug NAME]
                                    concurrent, seeded, faulty runs of the machines
                                    (leadership or durable), one NDJSON log each
  steadfast validate LOG|DIR...     check each production log against the model
  steadfast bench [MODEL] [--scaling] [--limit SECONDS] [--cap SECONDS]
                                    checking speed per design; symmetry reduction
                                    factor; growth per bound (a run longer than the
                                    limit, default 60, ends its bound; one still going
                                    at the cap, default 4 x limit, is stopped)

  --scenario S    start from a named preset of settings (a column of a verdict table)
  --no-shortest   no extra runs: each trace is the exhaustive run's own, not the
                  shortest (that run is slower: it hands the checker every property)
  --no-traces     verdicts and counts only: no traces, no extra runs
  --symmetry      (check, with --dfs) symmetry reduction: one state per class of
                  interchangeable terminal statuses or keys, where the model has them;
                  the shortest-trace runs are BFS and run without it
  --por           (check) partial-order reduction: at each state only a stubborn
                  subset of the steps, derived from each step's declared reads and
                  writes; same verdicts, fewer states where steps commute unseen
                  (durable about a tenth, leadership none: specs/partial-order.md)

  steadfast COMMAND --help          that command's options

exit status: 0 all good, 1 counterexample or unreached property, 2 bad arguments,
3 a failure while running (memory budget, --max-memory MIB; a write error; the disk
budget of traces, --max-bytes-mib MIB)";

fn main() -> ExitCode {
    // Output piped into `head` and the like ends quietly when the reader goes, as with
    // other Unix tools, instead of a panic on the failed write (Rust ignores SIGPIPE).
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of one signal, before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let raw = match utf8_arguments(std::env::args_os().skip(1)) {
        Ok(raw) => raw,
        Err(UsageError(message)) => {
            eprintln!("steadfast: {}", one_line(&message));
            return ExitCode::from(2);
        }
    };
    match run(&raw) {
        Ok(code) => code,
        Err(failure) => {
            let (status, message) = failure.status_and_message();
            eprintln!("steadfast: {}", one_line(message));
            ExitCode::from(status)
        }
    }
}

/// The arguments as text; one that is not UTF-8 (a file name, say) is refused by its
/// position, shown with its bytes escaped, rather than panicking.
fn utf8_arguments(
    args: impl Iterator<Item = std::ffi::OsString>,
) -> Result<Vec<String>, UsageError> {
    args.enumerate()
        .map(|(i, arg)| {
            arg.into_string().map_err(|arg| {
                UsageError(format!(
                    "argument {} is not valid UTF-8: {}",
                    i + 1,
                    quote(&arg.to_string_lossy())
                ))
            })
        })
        .collect()
}

/// Every command, in the order the usage text gives them.
const COMMANDS: [&str; 12] = [
    "check", "verdicts", "explore", "models", "conform", "traces", "replay", "departs", "simulate",
    "validate", "bench", "help",
];

/// Options of each command, for `steadfast COMMAND --help`.
fn command_help(command: &str) -> Option<&'static str> {
    Some(match command {
        "check" => {
            "\
usage: steadfast check MODEL [--design D] [--scenario S] [--SETTING VALUE]... [--threads N]
                       [--dfs [--symmetry]] [--por] [--json] [--no-shortest] [--no-traces]
                       [--max-memory MIB] [--report FILE.html]
       steadfast check MODEL [--design D] [--scenario S] [--SETTING VALUE]... --simulate
                       --time T [--seed N] [--shard i/n] [--out DIR] [--json]
       steadfast check --merge DIR
  exhaustive check of one design: verdicts, counts and the shortest trace of each
  counterexample; `--report` also writes them, with a lane diagram per trace, as one
  self-contained HTML page; `steadfast models` lists models, designs, settings and
  scenarios
  --por: partial-order reduction in every run of the check (the shortest-trace runs
  too, whose traces are then shortest among the reduced graph's paths)
  --simulate: swarm mode, for bounds beyond exhaustive reach: seeded random walks for
  T (30s, 2m, 1h), one thread; shard i of n (default 1/1) walks from the i-th output
  of SplitMix64 seeded with N (default 0); per property the shortest counterexample
  or example found, or none (walks never show that a property holds); --out writes
  DIR/shard-<i>-of-<n>.json
  --merge: every DIR/shard-*.json of one model, design and settings as one table, with
  the shortest path over all shards and the shard that found it
  exit status as the exhaustive check: 1 when a counterexample is found"
        }
        "verdicts" => {
            "\
usage: steadfast verdicts [--json]
  every design of every model against the expected-verdict tables of specs/"
        }
        "explore" => {
            "\
usage: steadfast explore MODEL [--design D] [--scenario S] [--SETTING VALUE]...
                         [--addr 127.0.0.1:3000] [--public] [--max-memory MIB]
  checks the model, prints a URL per verdict with a shortest path, then serves the
  stateright Explorer with model, design and settings shown and those paths linked;
  port 0 picks a free port; an address other machines can reach needs --public"
        }
        "models" => {
            "\
usage: steadfast models
  models, designs, settings (with defaults and limits) and scenarios"
        }
        "conform" => {
            "\
usage: steadfast conform [MODEL] [--design D] [--SETTING VALUE]... [--threads N]
                         [--walks N] [--walk-length N] [--seed S] [--json]
                         [--max-memory MIB]
  every transition of the model replayed against the runtime, then seeded walks;
  without MODEL every bound model: leadership (the stepwise driver),
  leadership-automatic (the automatic driver: one event runs until the driver waits,
  compared where it is quiescent), durable (the operator step by step), durable-eager
  (its production scheduling, one event at a time) or durable-driver (the blocking
  driver over the in-memory log, compared through its projection)"
        }
        "traces" => {
            "\
usage: steadfast traces MODEL --out DIR [--format json|itf] [--limit N] [--design D]
                        [--SETTING VALUE]... [--max-bytes-mib MIB] [--max-memory MIB]
  write the transition-covering trace set"
        }
        "replay" => {
            "\
usage: steadfast replay FILE
  replay one trace file (our JSON or ITF) against the runtime"
        }
        "departs" => {
            "\
usage: steadfast departs MODEL [--property P] [--SETTING VALUE]... [--max-memory MIB]
  where the runtime leaves the unpatched design's shortest counterexample"
        }
        "simulate" => {
            "\
usage: steadfast simulate leadership --out DIR [--runs N] [--seed S] [--jobs J] [--grants G]
                          [--failovers F] [--max-delay-ms D] [--late-signal]
                          [--bug eager-not-finished|revoke-clears-leader]... [--json]
       steadfast simulate durable --out DIR [--runs N] [--seed S] [--keys K] [--inputs I]
                          [--actions A] [--calls C] [--partitions P] [--crashes X]
                          [--checkpoints C] [--send-failures F] [--max-delay-ms D]
                          [--bug end-offset-marker|cache-before-ack]... [--json]
  runs the production machines on an async runtime with seeded faults and writes
  one NDJSON log per run, DIR/MODEL-SEED.ndjson; run i uses seed S+i, so one run
  replays with --runs 1 --seed S+i; --bug puts a seed bug back into the machines.
  leadership: delays, reordering, grant/revoke storms, dispatcher failovers;
  durable: the operator with a file log (group commit), a supplier, checkpoints,
  put failures before and after landing, crashes and restores"
        }
        "validate" => {
            "\
usage: steadfast validate LOG... [--design D] [--late-signal true|false] [--json]
       steadfast validate --cluster LOG... [--design D] [--late-signal true|false] [--json]
  a directory stands for every *.ndjson in it, in name order (as `simulate --out DIR`
  wrote them)
  checks each log against the model its run header names, leadership or durable
  (design fixed unless --design names another; every interleaving; a durable log
  under the bounds its header names):
  valid, or the first event no model path explains, with the model states possible
  just before it; a valid log whose every explanation breaks a safety property of
  the model is reported with the property; --late-signal overrides the run header's
  setting
  --cluster: the leadership logs of one cluster's JobManager processes, in the order
  they led, checked as one run in which every process but the last dies (the model's
  jobmaster-crash); lines are numbered through the logs, two lines between logs
  exit status: 0 all valid and safe, 1 one is invalid or unsafe, 2 one is unreadable"
        }
        "bench" => {
            "\
usage: steadfast bench [MODEL] [--scaling] [--limit SECONDS] [--cap SECONDS]
       steadfast bench --peer
       steadfast bench --reductions [--cap SECONDS]
       steadfast bench --validation
  checking speed per design, symmetry reduction factor, growth per bound; with --peer,
  the fixed leadership design at a peer checker's bounds (up to 10 sessions, 3
  failovers), then the reductions' table; with --reductions, that table alone: both
  models' fixed designs at the default bounds and the large rows, without reduction,
  with symmetry, with partial-order reduction and with both (states, seconds, bytes
  per state; each run stopped at the cap, default 600); with --validation, the async
  driver's and the trace validator's throughput"
        }
        _ => return None,
    })
}

fn run(raw: &[String]) -> Outcome {
    let Some((command, rest)) = raw.split_first() else {
        println!("{USAGE}");
        return Err(UsageError("no command given".into()).into());
    };
    if rest.iter().any(|a| a == "--help" || a == "-h") {
        if let Some(help) = command_help(command) {
            println!("{help}");
            return Ok(ExitCode::SUCCESS);
        }
    }
    match command.as_str() {
        "check" => commands::check(rest),
        "verdicts" => commands::verdicts(rest),
        "explore" => commands::explore(rest),
        "models" => commands::models(rest),
        "bench" => bench::bench(rest),
        "conform" => conform::conform(rest),
        "traces" => conform::traces(rest),
        "replay" => conform::replay(rest),
        "departs" => conform::departs(rest),
        "simulate" => simulate::simulate(rest),
        "validate" => simulate::validate(rest),
        "help" | "--help" | "-h" => {
            println!("{USAGE}");
            Ok(ExitCode::SUCCESS)
        }
        other => Err(UsageError(format!(
            "unknown command {} (commands: {})",
            quote(other),
            COMMANDS.join(", ")
        ))
        .into()),
    }
}

/// Writes `bytes` to `file` under a temporary name in the same directory, then renames
/// it: an interrupted run or a full disk leaves no truncated file under the real name.
pub(crate) fn write_atomically(file: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    let partial = partial_name(file);
    let written = std::fs::write(&partial, bytes).and_then(|()| std::fs::rename(&partial, file));
    if written.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    written
}

/// A temporary name beside `file` that no other write uses: two runs writing into one
/// directory (or two writes of one run) never share one, so neither renames or removes
/// the other's half-written file.
fn partial_name(file: &std::path::Path) -> std::path::PathBuf {
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    file.with_file_name(format!(".{name}.{}-{n}.partial", std::process::id()))
}
