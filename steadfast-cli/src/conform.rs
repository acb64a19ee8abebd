//! Commands that bind the models to the runtimes: `conform`, `traces`, `replay` and
//! `departs`.

use std::path::PathBuf;
use std::process::ExitCode;

use stateright::Model;
use steadfast_conformance::trace::stream::Sink;
use steadfast_conformance::trace::{self, Header, Replay, Replayer, TraceError, TraceStep};
use steadfast_conformance::{cover, walk, Binding};
use steadfast_model::check;
use steadfast_model::Spec;

use crate::args::{quote, Args, Failure, Outcome, UsageError};
use crate::commands::{build, model_name};
use crate::models::{with_binding, BOUND};

/// `conform [MODEL] [--design D] [--SETTING V]... [--threads N] [--walks N] [--walk-length N]
/// [--seed S] [--json]`
pub(crate) fn conform(rest: &[String]) -> Outcome {
    let args = Args::parse(rest, &["json"])?;
    args.no_more_positionals(1)?;
    let names: Vec<String> = match args.positional.first() {
        Some(n) => vec![n.clone()],
        None => BOUND.iter().map(|s| s.to_string()).collect(),
    };
    if names.len() > 1 && !args.options.is_empty() {
        return Err(
            UsageError("settings need a model: `conform MODEL --SETTING VALUE`".into()).into(),
        );
    }
    let json = args.switch("json");
    let mut all = true;
    let mut reports = Vec::new();
    for name in names {
        let mut args = Args {
            options: args.options.clone(),
            ..Args::default()
        };
        let (agreed, report): (bool, serde_json::Value) =
            with_binding!(name.as_str(), B => conform_one::<B>(&mut args, json))?;
        all &= agreed;
        reports.push(report);
    }
    if json {
        let value = match reports.len() {
            1 => reports.pop().expect("one report"),
            _ => serde_json::Value::Array(reports),
        };
        println!(
            "{}",
            serde_json::to_string_pretty(&value).expect("reports serialise")
        );
    }
    Ok(if all {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// One model's conformance run; whether runtime and model agreed, and the run as a JSON
/// value (printed instead of the text when `json`).
fn conform_one<B: Binding>(
    args: &mut Args,
    json: bool,
) -> Result<(bool, serde_json::Value), UsageError> {
    let walks = args.take_number("walks", 200, 0, 1_000_000)?;
    let walk_len = args.take_number("walk-length", 200, 1, 1_000_000)?;
    let seed = args.take_number("seed", 1, 0, usize::MAX)? as u64;
    let threads = args.take_number("threads", 1, 1, 64)?;
    crate::budget::watch_with(args, "conform", crate::budget::replay_progress)?;
    let model: B::Model = build(args)?;
    B::supports(&model).map_err(UsageError)?;
    let mut report = serde_json::json!({
        "model": <B::Model as Spec>::NAME,
        "design": model.design_name(),
        "threads": threads,
    });
    // Runs longer than two seconds print progress on stderr, once a second at most.
    let mut next_line = 2.0;
    let label = format!("{} {}", <B::Model as Spec>::NAME, model.design_name());
    let mut progress = |p: &cover::Progress| {
        crate::budget::note(p.unique_states, p.transitions, p.level);
        if p.seconds >= next_line {
            next_line = p.seconds + 1.0;
            eprintln!(
                "{label}: level {}, {} unique states, {} transitions, {} runtime steps, \
                 {:.0} steps/s, {:.0}s",
                p.level,
                p.unique_states,
                p.transitions,
                p.steps,
                p.steps as f64 / p.seconds.max(1e-9),
                p.seconds
            );
        }
    };
    let c = match cover::cover_with_progress::<B>(&model, threads, &mut progress) {
        Ok(c) => c,
        Err(d) => {
            if json {
                report["agreed"] = false.into();
                report["divergence"] = d.to_string().into();
            } else {
                println!("{d}");
            }
            return Ok((false, report));
        }
    };
    if !json {
        println!(
            "{} {}: {} unique states, {} transitions replayed (one trace each, 100% of the \
             reachable transitions), {} forbidden events refused, {} runtime steps in \
             {:.2} s ({:.0} steps/s, {} thread{})",
            c.model,
            c.design,
            c.unique_states,
            c.transitions,
            c.probes,
            c.steps,
            c.seconds,
            c.steps_per_second(),
            threads,
            if threads == 1 { "" } else { "s" }
        );
        let kinds: Vec<String> = c.kinds.iter().map(|(k, n)| format!("{k} {n}")).collect();
        println!("  action kinds covered: {}", kinds.join(", "));
    }
    let actions: serde_json::Map<String, serde_json::Value> = c
        .kinds
        .iter()
        .map(|(kind, n)| {
            (
                kind.clone(),
                serde_json::json!({
                    "transitions": n,
                    "checked_against": B::counterpart(kind),
                }),
            )
        })
        .collect();
    report["unique_states"] = c.unique_states.into();
    report["transitions"] = c.transitions.into();
    report["probes"] = c.probes.into();
    report["steps"] = c.steps.into();
    report["seconds"] = c.seconds.into();
    report["steps_per_second"] = c.steps_per_second().into();
    report["actions"] = actions.into();
    match walk::walk::<B>(&model, seed, walks, walk_len) {
        Ok(w) => {
            if !json {
                println!(
                    "  random walks (seed {seed}): {} walks, {} steps, {} refusals, longest {}, {:.2} s",
                    w.walks, w.steps, w.probes, w.longest, w.seconds
                );
            }
            report["walks"] = serde_json::json!({
                "seed": seed,
                "walks": w.walks,
                "steps": w.steps,
                "refusals": w.probes,
                "longest": w.longest,
                "seconds": w.seconds,
            });
            report["agreed"] = true.into();
            Ok((true, report))
        }
        Err(d) => {
            if json {
                report["agreed"] = false.into();
                report["divergence"] = d.to_string().into();
            } else {
                println!("{d}");
            }
            Ok((false, report))
        }
    }
}

/// `traces MODEL --out DIR [--format json|itf] [--design D] [--SETTING V]... [--limit N]`, for
/// every model bound to a runtime ([`BOUND`])
pub(crate) fn traces(rest: &[String]) -> Outcome {
    let mut args = Args::parse(rest, &[])?;
    let name = model_name(&args, "traces", BOUND)?;
    // Every model with a runtime, so that `replay` can take each trace written
    // (`durable-eager` and `durable-driver` included).
    with_binding!(name.as_str(), B => traces_of::<<B as Binding>::Model>(&mut args))
}

fn traces_of<M: Spec>(args: &mut Args) -> Outcome {
    let out = args
        .take("out")
        .ok_or_else(|| UsageError("`traces` needs `--out DIR`".into()))?;
    if out.is_empty() {
        return Err(UsageError(
            "`--out` is empty; name a directory (`--out .` for this one)".into(),
        )
        .into());
    }
    let out = PathBuf::from(out);
    let format = args.take("format").unwrap_or_else(|| "json".into());
    if format != "json" && format != "itf" {
        return Err(UsageError(format!(
            "`--format` must be json or itf, got {}",
            quote(&format)
        ))
        .into());
    }
    let limit = args.take_number("limit", usize::MAX, 1, usize::MAX)?;
    let max_mib = args.take_number("max-bytes-mib", DEFAULT_MAX_TRACES_MIB, 1, 1 << 30)?;
    let max_bytes = (max_mib as u64) << 20;
    crate::budget::watch_with(args, "traces", traces_progress)?;
    let model: M = build(args)?;
    std::fs::create_dir_all(&out)
        .map_err(|e| UsageError(format!("cannot create `{}`: {e}", out.display())))?;
    let set = trace::trace_set(&model);
    let total = set.len();
    let wanted = total.min(limit);
    // The disk the set will take, estimated from its first traces before any is written.
    let sample = wanted.min(64);
    let mut sampled = 0u64;
    for (init, actions) in set.iter().take(sample) {
        sampled += encode_trace(&model, *init, actions, &format)?.0.len() as u64;
    }
    let estimate = sampled / sample.max(1) as u64 * wanted as u64;
    if estimate > max_bytes {
        return Err(UsageError(format!(
            "{wanted} traces would take about {} MiB, over the budget of {max_mib} MiB; \
             pass --limit N or --max-bytes-mib M",
            estimate >> 20
        ))
        .into());
    }
    let mut written = 0;
    let mut bytes = 0u64;
    let started = std::time::Instant::now();
    let mut next_progress = std::time::Duration::from_secs(2);
    for (i, (init, actions)) in set.into_iter().take(limit).enumerate() {
        let (text, ext) = encode_trace(&model, init, &actions, &format)?;
        bytes += text.len() as u64;
        if bytes > max_bytes {
            return Err(Failure::Run(format!(
                "traces stopped: the disk budget of {max_mib} MiB is spent after {written} \
                 of {wanted} traces"
            )));
        }
        let name = format!("{}-{}-{i:06}.{ext}", M::NAME, model.design_name());
        let file = out.join(&name);
        if let Err(e) = crate::write_atomically(&file, text.as_ref()) {
            return Err(Failure::Run(format!(
                "cannot write `{}`: {e}",
                file.display()
            )));
        }
        written += 1;
        if started.elapsed() > next_progress {
            next_progress = started.elapsed() + std::time::Duration::from_secs(1);
            eprintln!(
                "traces: {written} of {wanted} written, {} MiB, {:.0}s",
                bytes >> 20,
                started.elapsed().as_secs_f64()
            );
        }
    }
    println!(
        "wrote {written} of {total} traces ({} {}, format {format}) to {}",
        M::NAME,
        model.design_name(),
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// How far the enumeration of a trace set got, once it has visited a state.
fn traces_progress() -> Option<String> {
    let visited = trace::states_visited();
    (visited > 0).then(|| format!("{visited} states visited for the trace set"))
}

/// The default disk budget of `traces`, MiB.
const DEFAULT_MAX_TRACES_MIB: usize = 2048;

/// One trace as file text in `format`, with its file extension.
fn encode_trace<M: Spec>(
    model: &M,
    init: usize,
    actions: &[M::Action],
    format: &str,
) -> Result<(String, &'static str), UsageError> {
    let (value, ext) = if format == "itf" {
        let v =
            trace::to_itf(model, init, actions).map_err(|e| UsageError(format!("trace: {e}")))?;
        (v, "itf.json")
    } else {
        let t = trace::to_json(model, init, actions)
            .ok_or_else(|| UsageError("a trace is not a path of the model".into()))?;
        (serde_json::to_value(t).expect("traces serialise"), "json")
    };
    Ok((serde_json::to_string_pretty(&value).expect("json"), ext))
}

fn print_replay(r: &Replay) -> bool {
    for s in &r.steps {
        let mark = if s.agreed { "agree" } else { "DIFFER" };
        println!("  {:>3}. [{mark}] {}", s.step, s.description);
    }
    match &r.divergence {
        None => {
            println!(
                "{} steps of {} {} replayed: the runtime agrees with the model at every step",
                r.steps.len(),
                r.model,
                r.design
            );
            true
        }
        Some(d) => {
            print!("{d}");
            false
        }
    }
}

/// `replay FILE`
pub(crate) fn replay(rest: &[String]) -> Outcome {
    let args = Args::parse(rest, &[])?;
    args.no_more_positionals(1)?;
    if let Some((name, _)) = args.options.first() {
        return Err(UsageError(format!("unknown option `--{name}` for replay")).into());
    }
    let file = args
        .positional
        .first()
        .ok_or_else(|| UsageError("`replay` needs a trace file".into()))?;
    // Read once, as a stream: memory bounded by the largest step, not the file, and a
    // pipe reads as a file does. A trace error names the file already.
    let path = std::path::Path::new(file);
    let replayed = trace::stream::replay_path(path, trace::stream::MAX_STEP_BYTES, &mut start)
        .map_err(|e| UsageError(e.to_string()))?;
    Ok(if print_replay(&replayed) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The replay of the model a trace's header names, at its first step.
fn start(header: &Header, first: &TraceStep) -> Result<Box<dyn Sink>, TraceError> {
    let started: Result<Result<Box<dyn Sink>, TraceError>, UsageError> = with_binding!(header.model.as_str(), B => {
        Ok(Replayer::<B>::start(header, first).map(|r| Box::new(r) as Box<dyn Sink>))
    });
    started.map_err(|UsageError(problem)| TraceError::Settings {
        file: header.file.clone(),
        problem,
    })?
}

/// `departs MODEL [--design D] [--property P] [--SETTING V]...`: the shortest
/// counterexample of a design (by default `unpatched`) replayed against the runtime,
/// which implements the fixed design; the step where they part is where the fix acts.
pub(crate) fn departs(rest: &[String]) -> Outcome {
    let mut args = Args::parse(rest, &[])?;
    let name = model_name(&args, "departs", BOUND)?;
    with_binding!(name.as_str(), B => departs_of::<B>(&mut args))
}

fn departs_of<B: Binding>(args: &mut Args) -> Outcome {
    if args.take("design").is_none() {
        args.options.push(("design".into(), "unpatched".into()));
    } else {
        return Err(UsageError(
            "`departs` replays the unpatched design; use `replay` for others".into(),
        )
        .into());
    }
    let property = args.take("property");
    crate::budget::watch(args, "departs")?;
    let model: B::Model = build(args)?;
    B::supports(&model).map_err(UsageError)?;
    let (chosen, path) = match property {
        // A named property goes straight to its focused run: no full check first.
        Some(p) => {
            let properties = model.properties();
            let safety: Vec<&'static str> = properties
                .iter()
                .filter(|q| q.expectation == stateright::Expectation::Always)
                .map(|q| q.name)
                .collect();
            let chosen = *safety.iter().find(|q| **q == p).ok_or_else(|| {
                UsageError(format!(
                    "{} is not a safety property of {} (safety properties: {})",
                    quote(&p),
                    <B::Model as Spec>::NAME,
                    safety.join(", ")
                ))
            })?;
            let path = check::shortest(&model, chosen).ok_or_else(|| {
                UsageError(format!(
                    "{} has no counterexample in {} unpatched at these settings",
                    quote(&p),
                    <B::Model as Spec>::NAME
                ))
            })?;
            (chosen, path)
        }
        None => {
            let report = check::check(
                &model,
                &check::CheckOptions {
                    traces: check::Traces::None,
                    // Progress also keeps the counts the memory budget reports.
                    progress_after: Some(std::time::Duration::from_secs(2)),
                    ..check::CheckOptions::default()
                },
            );
            let chosen = report
                .properties
                .iter()
                .find(|p| p.verdict == steadfast_model::Verdict::Counterexample)
                .map(|p| p.name)
                .ok_or_else(|| {
                    UsageError("the unpatched design has no counterexample here".into())
                })?;
            let path =
                check::shortest(&model, chosen).expect("a counterexample the full run found");
            (chosen, path)
        }
    };
    let pairs = path.into_vec();
    let init = model
        .init_states()
        .iter()
        .position(|s| *s == pairs[0].0)
        .expect("paths start at initial states");
    let actions: Vec<_> = pairs.iter().filter_map(|(_, a)| a.clone()).collect();
    let file = trace::to_json(&model, init, &actions).expect("a path of the model");
    let loaded = trace::Loaded {
        file: format!("(shortest counterexample to \"{chosen}\")"),
        model: file.model,
        design: file.design,
        settings: file.settings,
        steps: file.steps,
    };
    println!(
        "shortest counterexample to \"{chosen}\" in {} unpatched ({} steps), replayed against the runtime:",
        <B::Model as Spec>::NAME,
        actions.len()
    );
    let replayed = trace::replay::<B>(&loaded).map_err(|e| UsageError(e.to_string()))?;
    let agreed = print_replay(&replayed);
    if agreed {
        println!(
            "the runtime followed the unpatched counterexample to its end: the fix is not visible"
        );
        Ok(ExitCode::from(1))
    } else {
        println!("the runtime departs from the unpatched behaviour at the step marked DIFFER: that is the fix");
        Ok(ExitCode::SUCCESS)
    }
}
