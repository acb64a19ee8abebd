//! `simulate` (concurrent, seeded, faulty runs of the production machines, one NDJSON
//! log each) and `validate` (each log checked against the model).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use steadfast_conformance::validate::{self, Options, Validation, Verdict};
use steadfast_sim::leadership::{self as sim, Config, MAX_FAILOVERS, MAX_GRANTS_PER_JOB};

use crate::args::{one_line, quote, Args, Failure, Outcome, UsageError};

/// Most runs one command writes.
const MAX_RUNS: usize = 100_000;

/// The file of run `seed` in `dir`.
pub(crate) fn log_path(dir: &Path, seed: u64) -> PathBuf {
    dir.join(format!("leadership-{seed}.ndjson"))
}

/// `simulate MODEL --runs N --seed S --out DIR [--bug NAME] [--jobs J] [--grants G]
/// [--failovers F] [--late-signal] [--max-delay-ms D]`.
pub(crate) fn simulate(rest: &[String]) -> Outcome {
    let mut args = Args::parse(rest, &["late-signal", "json"])?;
    args.no_more_positionals(1)?;
    let model = args
        .positional
        .first()
        .ok_or_else(|| UsageError("`simulate` needs a model: leadership or durable".into()))?;
    match model.as_str() {
        "leadership" => {}
        "durable" => return simulate_durable(args),
        other => {
            return Err(UsageError(format!(
                "unknown model {} for simulate (known: leadership, durable)",
                quote(other)
            ))
            .into())
        }
    }
    let (runs, seed) = runs_and_seed(&mut args)?;
    let out = out_dir(&mut args)?;
    let defaults = Config::default();
    let jobs = args.take_number("jobs", defaults.jobs as usize, 1, sim::MAX_JOBS as usize)?;
    let grants = args.take_number(
        "grants",
        defaults.grants as usize,
        1,
        MAX_GRANTS_PER_JOB as usize,
    )?;
    let failovers = args.take_number(
        "failovers",
        defaults.failovers as usize,
        0,
        MAX_FAILOVERS as usize,
    )?;
    let max_delay_ms = args.take_number(
        "max-delay-ms",
        defaults.max_delay_ms as usize,
        1,
        sim::MAX_DELAY_MS as usize,
    )?;
    let mut defects = Vec::new();
    for name in args.take_all("bug") {
        let defect = sim::Defect::named(&name).ok_or_else(|| {
            let known: Vec<&str> = sim::Defect::ALL.iter().map(|d| d.name()).collect();
            UsageError(format!(
                "unknown bug {} for leadership (known: {})",
                quote(&name),
                known.join(", ")
            ))
        })?;
        defects.push(defect);
    }
    let late_signal = args.switch("late-signal");
    let json = args.switch("json");
    args.switches.retain(|s| s != "late-signal" && s != "json");
    args.no_options("simulate")?;
    let dir = Path::new(&out);
    std::fs::create_dir_all(dir).map_err(|e| UsageError(format!("cannot create `{out}`: {e}")))?;
    let started = Instant::now();
    let mut totals = sim::Summary::default();
    for i in 0..runs as u64 {
        let config = Config {
            jobs: jobs as u32,
            seed: seed + i,
            grants: grants as u8,
            failovers: failovers as u8,
            late_signal,
            max_delay_ms: max_delay_ms as u64,
            defects: defects.clone(),
        };
        let path = log_path(dir, seed + i);
        match sim::run(&config, &path) {
            Ok(s) => {
                totals.events += s.events;
                totals.steps += s.steps;
                totals.refusals += s.refusals;
                totals.jobs_done += s.jobs_done;
                totals.runners_started += s.runners_started;
                totals.virtual_ms += s.virtual_ms;
                if json {
                    let line = serde_json::json!({
                        "log": path.display().to_string(),
                        "config": config,
                        "summary": s,
                    });
                    println!("{line}");
                }
            }
            Err(e) => {
                return Err(Failure::Run(format!(
                    "simulate: run with seed {}: {e}",
                    seed + i
                )));
            }
        }
    }
    let secs = started.elapsed().as_secs_f64();
    if !json {
        let last = seed + runs as u64 - 1;
        println!(
            "wrote {runs} leadership log{} (seeds {seed}..={last}) to {}: {} events, {} steps, {} of {} jobs done, {} refusals, {:.2} s ({:.0} events/s)",
            if runs == 1 { "" } else { "s" },
            dir.display(),
            totals.events,
            totals.steps,
            totals.jobs_done,
            runs * jobs,
            totals.refusals,
            secs,
            totals.events as f64 / secs.max(1e-9)
        );
        if !defects.is_empty() {
            let names: Vec<&str> = defects.iter().map(|d| d.name()).collect();
            println!("the machines carried the seed bug {}", names.join(" and "));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `--out DIR`, which must name a directory: an empty one would write into the current
/// directory unasked (as `traces` refuses it).
fn out_dir(args: &mut Args) -> Result<String, UsageError> {
    let out = args
        .take("out")
        .ok_or_else(|| UsageError("`simulate` needs `--out DIR` for the logs".into()))?;
    if out.is_empty() {
        return Err(UsageError(
            "`--out` is empty; name a directory (`--out .` for this one)".into(),
        ));
    }
    Ok(out)
}

/// `--runs N` and `--seed S`: run *i* has seed S+i.
fn runs_and_seed(args: &mut Args) -> Result<(usize, u64), UsageError> {
    let runs = args.take_number("runs", 1, 1, MAX_RUNS)?;
    let seed = match args.take("seed") {
        None => 0,
        Some(text) if text.bytes().all(|b| b.is_ascii_digit()) && !text.is_empty() => {
            text.parse::<u64>().map_err(|_| {
                UsageError(format!(
                    "`--seed` must be a number below 2^64, got {}",
                    quote(&text)
                ))
            })?
        }
        Some(text) => {
            return Err(UsageError(format!(
                "`--seed` must be a number below 2^64, got {}",
                quote(&text)
            )))
        }
    };
    if seed.checked_add(runs as u64 - 1).is_none() {
        return Err(UsageError(format!(
            "`--seed {seed}` with `--runs {runs}` runs past the largest seed"
        )));
    }
    Ok((runs, seed))
}

/// The file of durable run `seed` in `dir`.
pub(crate) fn durable_log_path(dir: &Path, seed: u64) -> PathBuf {
    dir.join(format!("durable-{seed}.ndjson"))
}

/// Runs `config` with its log at [`durable_log_path`] in `dir` and its file log in a
/// data directory beside it, removed after the run (whether the run succeeded or not).
fn run_durable(
    dir: &Path,
    config: &steadfast_sim::durable::Config,
) -> Result<(PathBuf, steadfast_sim::durable::Outcome), String> {
    let path = durable_log_path(dir, config.seed);
    let data = dir.join(format!("durable-{}.data", config.seed));
    std::fs::create_dir(&data).map_err(|e| format!("cannot create `{}`: {e}", data.display()))?;
    let outcome = steadfast_sim::durable::run(config, &path, &data);
    std::fs::remove_dir_all(&data)
        .map_err(|e| format!("cannot remove `{}`: {e}", data.display()))?;
    Ok((path, outcome.map_err(|e| e.to_string())?))
}

/// `simulate durable --runs N --seed S --out DIR [--bug NAME] [--keys K] [--inputs I]
/// [--actions A] [--calls C] [--partitions P] [--crashes X] [--checkpoints C]
/// [--send-failures F] [--max-delay-ms D] [--zombie-sends true|false] [--json]`.
fn simulate_durable(mut args: Args) -> Outcome {
    use steadfast_sim::durable as sim;
    let (runs, seed) = runs_and_seed(&mut args)?;
    let out = out_dir(&mut args)?;
    let base = durable_config(&mut args, seed)?;
    let json = args.switch("json");
    args.switches.retain(|s| s != "json");
    args.no_options("simulate")?;
    let dir = Path::new(&out);
    std::fs::create_dir_all(dir).map_err(|e| UsageError(format!("cannot create `{out}`: {e}")))?;
    base.check().map_err(UsageError)?;
    let started = Instant::now();
    let mut totals = sim::Outcome::default();
    let mut repeated = 0usize;
    for i in 0..runs as u64 {
        let config = sim::Config {
            seed: seed + i,
            ..base.clone()
        };
        let (path, o) = run_durable(dir, &config)
            .map_err(|e| Failure::Run(format!("simulate: run with seed {}: {e}", seed + i)))?;
        add_durable_outcome(&mut totals, &o);
        repeated += o.repeated_calls().len();
        if json {
            let line = serde_json::json!({
                "log": path.display().to_string(),
                "config": config,
                "outcome": o,
            });
            println!("{line}");
        }
    }
    if !json {
        let secs = started.elapsed().as_secs_f64();
        print_durable_totals(&base, runs, dir, &totals, repeated, secs);
    }
    Ok(ExitCode::SUCCESS)
}

/// The run settings of `simulate durable`, seed `seed`, from the command line.
fn durable_config(
    args: &mut Args,
    seed: u64,
) -> Result<steadfast_sim::durable::Config, UsageError> {
    use steadfast_sim::durable as sim;
    let d = sim::Config::default();
    let mut small = |name: &str, default: u8, low: usize, high: u8| {
        args.take_number(name, usize::from(default), low, usize::from(high))
            .map(|n| n as u8)
    };
    let keys = small("keys", d.keys, 1, sim::MAX_KEYS)?;
    let inputs = small("inputs", d.inputs, 1, sim::MAX_INPUTS)?;
    let actions = small("actions", d.actions, 1, sim::MAX_ACTIONS)?;
    let calls = small("calls", d.calls, 1, sim::MAX_CALLS)?;
    let partitions = small("partitions", d.partitions, 1, sim::MAX_PARTITIONS)?;
    let crashes = small("crashes", d.crashes, 0, sim::MAX_CRASHES)?;
    let checkpoints = small("checkpoints", d.checkpoints, 0, sim::MAX_CHECKPOINTS)?;
    let send_failures = small("send-failures", d.send_failures, 0, sim::MAX_SEND_FAILURES)?;
    let max_delay_ms = args.take_number(
        "max-delay-ms",
        d.max_delay_ms as usize,
        1,
        sim::MAX_DELAY_MS as usize,
    )? as u64;
    let zombie_sends = match args.take("zombie-sends").as_deref() {
        None | Some("false") => false,
        Some("true") => true,
        Some(other) => {
            return Err(UsageError(format!(
                "`--zombie-sends` must be true or false, got {}",
                quote(other)
            )))
        }
    };
    let (defects, fencing) = durable_bugs(args)?;
    Ok(sim::Config {
        keys,
        inputs,
        actions,
        calls,
        partitions,
        seed,
        crashes,
        checkpoints,
        send_failures,
        max_delay_ms,
        defects,
        zombie_sends,
        fencing,
    })
}

/// The seed bugs of `--bug`: the operator's, and whether the restores still fence
/// (`--bug unfenced` switches fencing off).
fn durable_bugs(
    args: &mut Args,
) -> Result<(Vec<steadfast_sim::durable::Defect>, bool), UsageError> {
    use steadfast_sim::durable as sim;
    let mut defects = Vec::new();
    let mut fencing = true;
    for name in args.take_all("bug") {
        if name == sim::UNFENCED {
            fencing = false;
            continue;
        }
        let defect = sim::Defect::named(&name).ok_or_else(|| {
            UsageError(format!(
                "unknown bug {} for durable (known: {})",
                quote(&name),
                sim::bug_names().join(", ")
            ))
        })?;
        defects.push(defect);
    }
    Ok((defects, fencing))
}

/// Adds one run's counts to the totals.
fn add_durable_outcome(
    totals: &mut steadfast_sim::durable::Outcome,
    o: &steadfast_sim::durable::Outcome,
) {
    totals.events += o.events;
    totals.crashes += o.crashes;
    totals.checkpoints_completed += o.checkpoints_completed;
    totals.failures_before_landing += o.failures_before_landing;
    totals.failures_after_landing += o.failures_after_landing;
    totals.supplier_calls += o.supplier_calls;
    totals.flushes += o.flushes;
    totals.records_sent += o.records_sent;
    totals.zombies_landed += o.zombies_landed;
    totals.zombies_stale += o.zombies_stale;
}

/// The summary of `simulate durable` without `--json`.
fn print_durable_totals(
    base: &steadfast_sim::durable::Config,
    runs: usize,
    dir: &Path,
    totals: &steadfast_sim::durable::Outcome,
    repeated: usize,
    secs: f64,
) {
    let seed = base.seed;
    let last = seed + runs as u64 - 1;
    println!(
        "wrote {runs} durable log{} (seeds {seed}..={last}) to {}: {} events, {} supplier calls, {} records in {} flushes, {} crashes, {} checkpoints completed, failed puts: {} ({} before landing), repeated calls: {}, {:.2} s ({:.0} events/s)",
        if runs == 1 { "" } else { "s" },
        dir.display(),
        totals.events,
        totals.supplier_calls,
        totals.records_sent,
        totals.flushes,
        totals.crashes,
        totals.checkpoints_completed,
        totals.failures_before_landing + totals.failures_after_landing,
        totals.failures_before_landing,
        repeated,
        secs,
        totals.events as f64 / secs.max(1e-9)
    );
    if base.zombie_sends {
        println!(
            "zombie sends landed: {} ({} behind a newer fence)",
            totals.zombies_landed, totals.zombies_stale
        );
    }
    if !base.defects.is_empty() {
        let names: Vec<&str> = base.defects.iter().map(|d| d.name()).collect();
        println!("the operator carried the seed bug {}", names.join(" and "));
    }
    if !base.fencing {
        println!(
            "the restores carried the seed bug {}",
            steadfast_sim::durable::UNFENCED
        );
    }
}

/// `validate [--cluster] LOG... [--late-signal true|false] [--json]`.
pub(crate) fn validate(rest: &[String]) -> Outcome {
    let mut args = Args::parse(rest, &["json", "cluster"])?;
    let late_signal = match args.take("late-signal").as_deref() {
        None => None,
        Some("true") => Some(true),
        Some("false") => Some(false),
        Some(other) => {
            return Err(UsageError(format!(
                "`--late-signal` must be true or false, got {}",
                quote(other)
            ))
            .into())
        }
    };
    // A design of either model; the log's model must have it.
    let design = match args.take("design") {
        None => None,
        Some(name) => {
            use steadfast_model::Spec;
            let leadership = steadfast_model::leadership::Leadership::designs();
            let durable = steadfast_model::durable::Durable::designs();
            Some(
                *leadership
                    .iter()
                    .chain(durable)
                    .find(|d| **d == name)
                    .ok_or_else(|| {
                        UsageError(format!(
                            "unknown design {} (leadership: {}; durable: {})",
                            quote(&name),
                            leadership.join(", "),
                            durable.join(", ")
                        ))
                    })?,
            )
        }
    };
    let json = args.switch("json");
    let cluster = args.switch("cluster");
    args.switches.retain(|s| s != "json" && s != "cluster");
    args.no_options("validate")?;
    if args.positional.is_empty() {
        return Err(UsageError("`validate` needs at least one log file".into()).into());
    }
    let options = Options {
        late_signal,
        design,
    };
    let files = log_files(&args.positional)?;
    if cluster {
        return Ok(validate_cluster(&files, options, json));
    }
    let mut worst = 0u8;
    let started = Instant::now();
    let mut events = 0u64;
    let (mut valid, mut invalid, mut unreadable) = (0usize, 0usize, 0usize);
    for file in &files {
        let result = std::fs::File::open(file)
            .map_err(|e| validate::LogError {
                line: 0,
                why: format!("cannot open: {e}"),
            })
            .and_then(|f| validate::validate(f, options));
        match result {
            Ok(v) => {
                events += v.events;
                if !v.violations.is_empty() {
                    worst = worst.max(1);
                }
                if v.is_valid() {
                    valid += 1;
                } else {
                    invalid += 1;
                    worst = worst.max(1);
                }
                if json {
                    println!("{}", validation_json(file, &v));
                } else {
                    print_validation(file, &v);
                }
            }
            Err(e) => {
                unreadable += 1;
                worst = 2;
                refuse_log(file, &e);
            }
        }
    }
    if !json && files.len() > 1 {
        let secs = started.elapsed().as_secs_f64();
        println!(
            "{valid} valid, {invalid} invalid, {unreadable} unreadable; {events} events in {secs:.2} s ({:.0} events/s)",
            events as f64 / secs.max(1e-9)
        );
    }
    Ok(ExitCode::from(worst))
}

/// A log that cannot be read, refused on stderr as every refusal is (with `--json` too:
/// standard output carries only the verdicts).
fn refuse_log(file: &str, e: &validate::LogError) {
    eprintln!(
        "steadfast: {}",
        one_line(&format!("{file}: unreadable: {e}"))
    );
}

/// The logs named: a file as itself, a directory as every `*.ndjson` in it in name
/// order (what `simulate --out DIR` wrote); a directory without one is refused.
fn log_files(named: &[String]) -> Result<Vec<String>, UsageError> {
    let mut files = Vec::new();
    for name in named {
        if !Path::new(name).is_dir() {
            files.push(name.clone());
            continue;
        }
        let cannot = |e: std::io::Error| UsageError(format!("cannot list `{name}`: {e}"));
        let mut logs = Vec::new();
        for entry in std::fs::read_dir(name).map_err(cannot)? {
            let path = entry.map_err(cannot)?.path();
            if path.extension().is_some_and(|x| x == "ndjson") && !path.is_dir() {
                logs.push(path.display().to_string());
            }
        }
        if logs.is_empty() {
            return Err(UsageError(format!("`{name}` holds no *.ndjson logs")));
        }
        logs.sort();
        files.extend(logs);
    }
    Ok(files)
}

/// `validate --cluster`: the logs as one cluster's JobManager processes, in the order
/// they led; one verdict for them all.
fn validate_cluster(files: &[String], options: Options, json: bool) -> ExitCode {
    let name = files.join(" + ");
    let opened: Result<Vec<Box<dyn std::io::Read>>, validate::LogError> = files
        .iter()
        .map(|file| {
            std::fs::File::open(file)
                .map(|f| Box::new(f) as Box<dyn std::io::Read>)
                .map_err(|e| validate::LogError {
                    line: 0,
                    why: format!("{file}: cannot open: {e}"),
                })
        })
        .collect();
    match opened.and_then(|logs| validate::validate_cluster(logs, options)) {
        Ok(v) => {
            if json {
                println!("{}", validation_json(&name, &v));
            } else {
                print_validation(&name, &v);
            }
            ExitCode::from(u8::from(!v.is_valid() || !v.violations.is_empty()))
        }
        Err(e) => {
            refuse_log(&name, &e);
            ExitCode::from(2)
        }
    }
}

fn print_validation(file: &str, v: &Validation) {
    print_verdict(file, v);
    for x in &v.violations {
        let whose = if v.model == "durable" {
            String::new()
        } else {
            format!(" for job {}", x.job)
        };
        println!(
            "  the model's \"{}\" fails{whose} on every path explaining it, in the step at line {}: {}",
            x.property,
            x.line,
            one_line(&x.event)
        );
    }
}

fn print_verdict(file: &str, v: &Validation) {
    match &v.verdict {
        Verdict::Valid if v.model == "durable" => println!(
            "{file}: valid: {} events of one durable task, at most {} model places possible at once",
            v.events, v.widest
        ),
        Verdict::Valid => println!(
            "{file}: valid: {} events, {} jobs, at most {} model places possible at once",
            v.events, v.jobs, v.widest
        ),
        Verdict::Unexplained {
            line,
            job,
            event,
            possible,
            states,
            expected,
        } => {
            let whose = if v.model == "durable" {
                String::new()
            } else {
                format!(" (job {job})")
            };
            println!("{file}: invalid at line {line}{whose}: {}", one_line(event));
            println!(
                "  no model step explains it; {possible} model state(s) were possible just before it"
            );
            println!("  the model allowed next: {}", expected.join(" | "));
            for s in states {
                println!("  state: {s}");
            }
        }
        Verdict::Truncated { missing, .. } if v.model == "durable" => println!(
            "{file}: invalid: the log ends inside a step; next would be: {missing}"
        ),
        Verdict::Truncated { job, missing } => println!(
            "{file}: invalid: the log ends inside a step of job {job}; next would be: {missing}"
        ),
    }
}

fn validation_json(file: &str, v: &Validation) -> serde_json::Value {
    let verdict = match &v.verdict {
        Verdict::Valid => serde_json::json!("valid"),
        Verdict::Unexplained {
            line,
            job,
            event,
            possible,
            states,
            expected,
        } => serde_json::json!({
            "unexplained": {
                "line": line, "job": job, "event": event, "possible": possible,
                "states": states.iter().map(|s| serde_json::from_str::<serde_json::Value>(s).unwrap_or_default()).collect::<Vec<_>>(),
                "expected": expected,
            }
        }),
        Verdict::Truncated { job, missing } => {
            serde_json::json!({ "truncated": { "job": job, "missing": missing } })
        }
    };
    let violations: Vec<serde_json::Value> = v
        .violations
        .iter()
        .map(|x| serde_json::json!({"property": x.property, "job": x.job, "line": x.line, "event": x.event}))
        .collect();
    serde_json::json!({
        "log": file, "model": v.model, "events": v.events, "jobs": v.jobs, "widest": v.widest,
        "late_signal": v.late_signal, "verdict": verdict, "violations": violations,
    })
}

/// `bench --validation`: the async driver's throughput and the validator's, on runs of
/// 4 and of 100 jobs, each measured on one core (the driver is single-threaded, and so
/// is the validator).
pub(crate) fn bench_validation() -> Outcome {
    let dir =
        std::env::temp_dir().join(format!("steadfast-bench-validation-{}", std::process::id()));
    std::fs::create_dir_all(&dir)
        .map_err(|e| UsageError(format!("cannot create `{}`: {e}", dir.display())))?;
    let mut rows = vec![[
        "jobs",
        "runs",
        "events",
        "simulate s",
        "driver events/s",
        "runs/min",
        "validate s",
        "validated events/s",
        "all valid",
    ]
    .map(String::from)
    .to_vec()];
    for (jobs, runs) in [(4u32, 400u64), (100, 20)] {
        let started = Instant::now();
        let mut events = 0u64;
        let mut paths = Vec::new();
        for seed in 0..runs {
            let config = Config {
                jobs,
                seed,
                ..Config::default()
            };
            let path = dir.join(format!("j{jobs}-{seed}.ndjson"));
            let s = sim::run(&config, &path).map_err(|e| UsageError(e.to_string()))?;
            events += s.events;
            paths.push(path);
        }
        let simulate_s = started.elapsed().as_secs_f64();
        let started = Instant::now();
        let mut valid = 0u64;
        for path in &paths {
            let file = std::fs::File::open(path)
                .map_err(|e| UsageError(format!("cannot open {}: {e}", path.display())))?;
            let v = validate::validate_leadership(file, Options::default())
                .map_err(|e| UsageError(e.to_string()))?;
            valid += u64::from(v.is_valid());
        }
        let validate_s = started.elapsed().as_secs_f64();
        for path in &paths {
            let _ = std::fs::remove_file(path);
        }
        rows.push(vec![
            jobs.to_string(),
            runs.to_string(),
            events.to_string(),
            format!("{simulate_s:.2}"),
            format!("{:.0}", events as f64 / simulate_s),
            format!("{:.0}", runs as f64 * 60.0 / simulate_s),
            format!("{validate_s:.2}"),
            format!("{:.0}", events as f64 / validate_s),
            format!("{}", valid == runs),
        ]);
    }
    println!("simulation and trace validation, leadership (default faults, one core each)\n");
    print!("{}", crate::render::table(&rows));
    bench_durable(&dir)?;
    let _ = std::fs::remove_dir(&dir);
    Ok(ExitCode::SUCCESS)
}

/// The durable half of `bench --validation`: runs at the default bounds and at the
/// largest, each with the file log (fsync on) and group commit.
fn bench_durable(dir: &Path) -> Result<(), UsageError> {
    use steadfast_sim::durable as sim;
    let mut rows = vec![[
        "bounds",
        "runs",
        "events",
        "simulate s",
        "driver events/s",
        "supplier calls/s",
        "records per flush",
        "validate s",
        "validated events/s",
        "widest",
        "all valid",
    ]
    .map(String::from)
    .to_vec()];
    for (name, base, runs) in [
        ("default", sim::Config::default(), 200u64),
        ("largest", sim::Config::largest(), 50),
    ] {
        let started = Instant::now();
        let mut totals = sim::Outcome::default();
        let mut paths = Vec::new();
        for seed in 0..runs {
            let config = sim::Config {
                seed,
                ..base.clone()
            };
            let (path, o) = run_durable(dir, &config).map_err(UsageError)?;
            totals.events += o.events;
            totals.supplier_calls += o.supplier_calls;
            totals.records_sent += o.records_sent;
            totals.flushes += o.flushes;
            paths.push(path);
        }
        let simulate_s = started.elapsed().as_secs_f64();
        let started = Instant::now();
        let (mut valid, mut widest) = (0u64, 0usize);
        for path in &paths {
            let file = std::fs::File::open(path)
                .map_err(|e| UsageError(format!("cannot open {}: {e}", path.display())))?;
            let v = validate::validate(file, Options::default())
                .map_err(|e| UsageError(e.to_string()))?;
            valid += u64::from(v.is_valid());
            widest = widest.max(v.widest);
        }
        let validate_s = started.elapsed().as_secs_f64();
        for path in &paths {
            let _ = std::fs::remove_file(path);
        }
        rows.push(vec![
            name.to_string(),
            runs.to_string(),
            totals.events.to_string(),
            format!("{simulate_s:.2}"),
            format!("{:.0}", totals.events as f64 / simulate_s),
            format!("{:.0}", totals.supplier_calls as f64 / simulate_s),
            format!(
                "{:.2}",
                totals.records_sent as f64 / totals.flushes.max(1) as f64
            ),
            format!("{validate_s:.2}"),
            format!("{:.0}", totals.events as f64 / validate_s),
            widest.to_string(),
            format!("{}", valid == runs),
        ]);
    }
    println!(
        "\nsimulation and trace validation, durable (file log with fsync and group commit, one core each)\n"
    );
    print!("{}", crate::render::table(&rows));
    Ok(())
}
