//! `bench`: checking speed per model, design, search order and thread count, the factor
//! by which symmetry reduction shrinks each state space, and how the state space grows
//! with each bound.
//!
//! Every measured run is a child process (`steadfast check ... --json`), so that its peak
//! memory is its own (read from `/proc/self/status` by the child) and runs cannot warm
//! each other's allocators.

use std::io::Read;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use steadfast_model::{ParamKind, Settings, Spec};

use crate::args::{Args, Outcome, UsageError};
use crate::models::{with_spec, NAMES};
use crate::render;

/// What one child run reported.
struct Run {
    unique: u64,
    generated: u64,
    depth: u64,
    seconds: f64,
    peak_kib: Option<u64>,
}

/// How a capped child run ended.
enum Ended {
    /// It finished and reported.
    Done(Run),
    /// It was stopped at the cap; its last progress line gives the unique states it had
    /// found by then, a lower bound of the whole count.
    Stopped { unique_at_least: Option<u64> },
}

/// The unique-state count of the last progress line on a check's stderr
/// (`label: N unique states, ...`).
fn last_progress(stderr: &str) -> Option<u64> {
    stderr.lines().rev().find_map(|l| {
        l.split_once(": ")?
            .1
            .split_once(" unique states")?
            .0
            .parse()
            .ok()
    })
}

/// One `check ... --json --no-traces` child, stopped after `cap` when one is given.
fn child_capped(args: &[String], cap: Option<Duration>) -> Result<Ended, UsageError> {
    let exe = std::env::current_exe()
        .map_err(|e| UsageError(format!("cannot find own executable: {e}")))?;
    let mut proc = Command::new(exe)
        .arg("check")
        .args(args)
        .args(["--json", "--no-traces"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| UsageError(format!("cannot run a check: {e}")))?;
    // Drained on their own threads so that progress lines cannot fill a pipe and stall
    // the child.
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(
        proc.stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        proc.stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let started = Instant::now();
    let mut stopped = false;
    let status = loop {
        match proc.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if cap.is_some_and(|cap| started.elapsed() > cap) => {
                let _ = proc.kill();
                stopped = true;
                break proc
                    .wait()
                    .map_err(|e| UsageError(format!("cannot stop a check: {e}")))?;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(UsageError(format!("cannot wait for a check: {e}"))),
        }
    };
    let stdout = stdout.join().unwrap_or_default();
    let stderr = String::from_utf8_lossy(&stderr.join().unwrap_or_default()).to_string();
    if stopped {
        return Ok(Ended::Stopped {
            unique_at_least: last_progress(&stderr),
        });
    }
    // Status 1 only means a property failed; the figures are still good.
    if !matches!(status.code(), Some(0 | 1)) {
        return Err(UsageError(format!(
            "check {} failed: {}",
            args.join(" "),
            stderr.trim()
        )));
    }
    let v: Value = serde_json::from_slice(&stdout)
        .map_err(|e| UsageError(format!("check {} printed no report: {e}", args.join(" "))))?;
    let num = |k: &str| v[k].as_u64().unwrap_or(0);
    Ok(Ended::Done(Run {
        unique: num("unique_states"),
        generated: num("generated_states"),
        depth: num("max_depth"),
        seconds: v["seconds"].as_f64().unwrap_or(0.0),
        peak_kib: v["peak_memory_kib"].as_u64(),
    }))
}

/// One child run without a cap.
fn child(args: &[String]) -> Result<Run, UsageError> {
    match child_capped(args, None)? {
        Ended::Done(run) => Ok(run),
        Ended::Stopped { .. } => Err(UsageError(format!(
            "check {} stopped without a cap",
            args.join(" ")
        ))),
    }
}

/// A lower bound of a stopped run's state count, for a table cell.
fn at_least(unique: Option<u64>) -> String {
    match unique {
        Some(n) => format!(">= {n} (stopped)"),
        None => "? (stopped)".into(),
    }
}

fn mib(kib: Option<u64>) -> String {
    kib.map(|k| format!("{:.0}", k as f64 / 1024.0))
        .unwrap_or_else(|| "?".into())
}

/// Unique states and seconds of the single-threaded DFS run of one design at default
/// bounds, kept from the speed table for the symmetry table.
struct PlainDfs {
    model: &'static str,
    design: &'static str,
    unique: u64,
    seconds: f64,
}

/// Speed of every design at default bounds: BFS and DFS, one and two threads.
fn speed<M: Spec>(
    rows: &mut Vec<Vec<String>>,
    plain: &mut Vec<PlainDfs>,
) -> Result<(), UsageError> {
    for design in M::designs() {
        for (order, threads) in [("bfs", 1), ("bfs", 2), ("dfs", 1), ("dfs", 2)] {
            let mut args = vec![
                M::NAME.to_string(),
                "--design".into(),
                design.to_string(),
                "--threads".into(),
                threads.to_string(),
            ];
            if order == "dfs" {
                args.push("--dfs".into());
            }
            let r = child(&args)?;
            if (order, threads) == ("dfs", 1) {
                plain.push(PlainDfs {
                    model: M::NAME,
                    design,
                    unique: r.unique,
                    seconds: r.seconds,
                });
            }
            rows.push(vec![
                M::NAME.into(),
                design.to_string(),
                order.into(),
                threads.to_string(),
                r.unique.to_string(),
                r.generated.to_string(),
                r.depth.to_string(),
                format!("{:.2}", r.seconds),
                format!("{:.0}", r.unique as f64 / r.seconds.max(1e-9)),
                mib(r.peak_kib),
            ]);
        }
    }
    Ok(())
}

/// Builds the model for a design at the defaults with one setting overridden, to ask it
/// whether it has a representative there.
fn model_at<M: Spec>(design: &str, setting: Option<(&str, String)>) -> Result<M, UsageError> {
    let mut settings = Settings::defaults(M::params());
    if let Some((name, value)) = setting {
        settings
            .set(M::params(), name, &value)
            .map_err(|e| UsageError(e.0))?;
    }
    M::build(design, &settings).map_err(|e| UsageError(e.0))
}

/// The reduction factor: unique states without symmetry over unique states with it.
fn factor(without: u64, with: u64) -> String {
    format!("{:.2}", without as f64 / with.max(1) as f64)
}

/// Symmetry reduction at default bounds: for every design whose model has a
/// representative, a DFS run with symmetry beside the plain DFS run of the speed table.
fn symmetry<M: Spec>(plain: &[PlainDfs], rows: &mut Vec<Vec<String>>) -> Result<(), UsageError> {
    for design in M::designs() {
        let Some(p) = plain
            .iter()
            .find(|p| p.model == M::NAME && p.design == *design)
        else {
            continue;
        };
        let model: M = model_at(design, None)?;
        let mut row = vec![
            M::NAME.to_string(),
            design.to_string(),
            p.unique.to_string(),
        ];
        if model.representative().is_none() {
            row.extend(["none at these settings", "-", "-", "-"].map(String::from));
        } else {
            let r = child(&[
                M::NAME.to_string(),
                "--design".into(),
                design.to_string(),
                "--dfs".into(),
                "--symmetry".into(),
            ])?;
            row.extend([
                r.unique.to_string(),
                factor(p.unique, r.unique),
                format!("{:.2}", p.seconds),
                format!("{:.2}", r.seconds),
            ]);
        }
        rows.push(row);
    }
    Ok(())
}

/// Names the growth of a series of (bound, unique states): constant ratios between
/// successive points mean exponential growth, falling ratios polynomial growth (its
/// degree from the log-log slope of the last two points), unless they level off well
/// above 1 (the last two within 2 %, above 1.5): a polynomial's ratios keep falling
/// towards 1, so that is exponential growth with the last ratio as its base.
pub(crate) fn growth(points: &[(u64, u64)]) -> String {
    if points.len() < 3 {
        return "too few points".into();
    }
    let ratios: Vec<f64> = points
        .windows(2)
        .map(|w| w[1].1 as f64 / w[0].1.max(1) as f64)
        .collect();
    let (first, last) = (ratios[0], ratios[ratios.len() - 1]);
    let n = points.len();
    let (x0, y0) = (points[n - 2].0 as f64, points[n - 2].1.max(1) as f64);
    let (x1, y1) = (points[n - 1].0 as f64, points[n - 1].1.max(1) as f64);
    let before_last = ratios[ratios.len() - 2];
    let levels_off = last > 1.5 && (before_last - last).abs() < 0.02 * last;
    if last <= 0.85 * first && levels_off {
        return format!("exponential once the ratios level off, base {last:.1}");
    }
    if last > 0.85 * first {
        let base = ratios
            .iter()
            .product::<f64>()
            .powf(1.0 / ratios.len() as f64);
        format!("exponential, base {base:.1}")
    } else {
        let degree = (y1 / y0).ln() / (x1 / x0).ln();
        format!("polynomial, degree {degree:.1}")
    }
}

/// Each integer bound of the fixed design grown from its smallest value (the others at
/// their defaults) until a run takes more than `limit` seconds or the bound's maximum is
/// reached; a run still going after `cap` is stopped, which also ends that bound. Where
/// the model has a representative at a point, a DFS run with symmetry gives that
/// point's reduction factor.
fn scaling<M: Spec>(limit: f64, cap: Duration) -> Result<(), UsageError> {
    for p in M::params() {
        let ParamKind::Int { min, max, .. } = p.kind else {
            continue;
        };
        let mut rows = vec![vec![
            format!("--{}", p.name),
            "unique states".into(),
            "seconds".into(),
            "ratio".into(),
            "peak MiB".into(),
            "with symmetry".into(),
            "factor".into(),
        ]];
        let mut points = Vec::new();
        for value in min..=max {
            let args = [
                M::NAME.to_string(),
                "--design".into(),
                "fixed".into(),
                format!("--{}", p.name),
                value.to_string(),
            ];
            let ended = child_capped(&args, Some(cap))?;
            let r = match ended {
                Ended::Done(r) => r,
                Ended::Stopped { unique_at_least } => {
                    rows.push(vec![
                        value.to_string(),
                        at_least(unique_at_least),
                        format!("> {:.0}", cap.as_secs_f64()),
                        String::new(),
                        "?".into(),
                        "-".into(),
                        "-".into(),
                    ]);
                    break;
                }
            };
            let ratio = points
                .last()
                .map(|(_, prev): &(u64, u64)| {
                    format!("{:.2}", r.unique as f64 / (*prev).max(1) as f64)
                })
                .unwrap_or_default();
            points.push((value, r.unique));
            // The model the child ran: `leadership` with several jobs is another entry.
            let entry = crate::models::entry(
                M::NAME,
                &Args {
                    options: vec![(p.name.to_string(), value.to_string())],
                    ..Args::default()
                },
            );
            let symmetric = with_spec!(entry.as_str(), E => {
                model_at::<E>("fixed", Some((p.name, value.to_string())))
                    .map(|m| m.representative().is_some())
            })?;
            let reduced = match symmetric {
                false => ["-".to_string(), "-".to_string()],
                true => {
                    let symmetric = [&args[..], &["--dfs".into(), "--symmetry".into()]].concat();
                    let ended = child_capped(&symmetric, Some(cap))?;
                    match ended {
                        Ended::Done(s) => [s.unique.to_string(), factor(r.unique, s.unique)],
                        Ended::Stopped { unique_at_least } => {
                            [at_least(unique_at_least), "-".into()]
                        }
                    }
                }
            };
            rows.push(vec![
                value.to_string(),
                r.unique.to_string(),
                format!("{:.2}", r.seconds),
                ratio,
                mib(r.peak_kib),
                reduced[0].clone(),
                reduced[1].clone(),
            ]);
            if r.seconds > limit {
                break;
            }
        }
        // Each bound's table is printed when it is done: a long run shows its figures
        // as it goes.
        println!(
            "\n{} fixed, growing --{} ({}): {}",
            M::NAME,
            p.name,
            p.help,
            growth(&points)
        );
        print!("{}", render::table(&rows));
    }
    Ok(())
}

/// The bounds of an independent model of the leadership protocol in a peer model checker
/// (Spin 6.5.2, exhaustive safety search, one core of this machine kind, fixed design):
/// sessions issued in total, dispatcher failovers, jobs, its states and its seconds to a
/// verdict (the slower end where it gave a range). Source: the leadership-at-scale
/// issue's yardstick table.
const PEER: [(u8, u8, u8, f64, f64); 5] = [
    (8, 1, 1, 1.10e6, 1.4),
    (10, 1, 1, 9.92e6, 23.0),
    (10, 3, 1, 27.1e6, 100.0),
    (4, 1, 2, 26.3e6, 68.0),
    (2, 0, 3, 2.74e6, 4.7),
];

/// The fixed leadership design at the peer checker's bounds (`grants` = sessions,
/// `epochs` = failovers + 1), BFS and DFS on two threads and BFS on one, each a fresh
/// process: seconds to the verdict beside the peer's, unique states per second, and
/// peak memory per unique state; DFS with symmetry reduction too (over statuses, and
/// over jobs with several), whose unique count is of classes.
fn peer() -> Outcome {
    let mut rows = vec![[
        "sessions",
        "failovers",
        "jobs",
        "peer states",
        "peer s",
        "order",
        "threads",
        "unique",
        "seconds",
        "vs peer",
        "unique/s",
        "peak MiB",
        "bytes/state",
    ]
    .map(String::from)
    .to_vec()];
    for (sessions, failovers, jobs, peer_states, peer_seconds) in PEER {
        let bounds = [
            sessions.to_string(),
            failovers.to_string(),
            jobs.to_string(),
            format!("{:.2} M", peer_states / 1e6),
            format!("{peer_seconds}"),
        ];
        for (order, threads) in [("bfs", 1), ("bfs", 2), ("dfs", 2), ("dfs+symmetry", 2)] {
            let mut args = vec![
                "leadership".to_string(),
                "--grants".into(),
                sessions.to_string(),
                "--epochs".into(),
                (failovers + 1).to_string(),
                "--jobs".into(),
                jobs.to_string(),
                "--threads".into(),
                threads.to_string(),
            ];
            if order != "bfs" {
                args.push("--dfs".into());
            }
            if order == "dfs+symmetry" {
                args.push("--symmetry".into());
            }
            let r = child(&args)?;
            let mut row = bounds.to_vec();
            row.extend([
                order.to_string(),
                threads.to_string(),
                r.unique.to_string(),
                format!("{:.2}", r.seconds),
                format!("{:.2}x", r.seconds / peer_seconds),
                format!("{:.0}", r.unique as f64 / r.seconds.max(1e-9)),
                mib(r.peak_kib),
                r.peak_kib
                    .map(|k| format!("{:.0}", k as f64 * 1024.0 / r.unique.max(1) as f64))
                    .unwrap_or_else(|| "?".into()),
            ]);
            rows.push(row);
        }
    }
    println!("fixed leadership design at the peer checker's bounds (each run a fresh process; peak memory is the whole process's)\n");
    print!("{}", render::table(&rows));
    reductions(REDUCTION_CAP)
}

/// The settings of the reductions' table: the default bounds and the large rows.
const REDUCTION_POINTS: [(&str, &str, &[&str]); 6] = [
    ("leadership", "default", &[]),
    (
        "leadership",
        "ten sessions",
        &["--grants", "10", "--epochs", "2"],
    ),
    (
        "leadership",
        "three jobs",
        &["--jobs", "3", "--grants", "2", "--epochs", "1"],
    ),
    ("durable", "default", &[]),
    (
        "durable",
        "three keys, one input",
        &["--keys", "3", "--inputs", "1"],
    ),
    (
        "durable",
        "three keys, two inputs",
        &["--keys", "3", "--inputs", "2"],
    ),
];

/// Longest run of the reductions' table under `--peer`: a run still going is stopped
/// and shown as a lower bound.
const REDUCTION_CAP: Duration = Duration::from_secs(600);

/// The fixed designs at the default bounds and the large rows, DFS on two threads,
/// without reduction, with symmetry, with partial-order reduction and with both: unique
/// states, seconds, peak memory and bytes per unique state (each run a fresh process).
/// `bench --reductions [--cap SECONDS]` prints this table alone; `--peer` ends with it.
fn reductions(cap: Duration) -> Outcome {
    let mut rows = vec![[
        "model",
        "bounds",
        "reduction",
        "unique",
        "seconds",
        "peak MiB",
        "bytes/state",
    ]
    .map(String::from)
    .to_vec()];
    let modes: [(&str, &[&str]); 4] = [
        ("none", &[]),
        ("symmetry", &["--symmetry"]),
        ("partial-order", &["--por"]),
        ("both", &["--symmetry", "--por"]),
    ];
    for (model, label, settings) in REDUCTION_POINTS {
        for (mode, flags) in modes {
            let mut args = vec![model.to_string(), "--design".into(), "fixed".into()];
            args.extend(settings.iter().chain(flags).map(|a| a.to_string()));
            args.extend(["--dfs", "--threads", "2"].map(String::from));
            let mut row = vec![model.to_string(), label.to_string(), mode.to_string()];
            row.extend(match child_capped(&args, Some(cap)) {
                Ok(Ended::Done(r)) => [
                    r.unique.to_string(),
                    format!("{:.2}", r.seconds),
                    mib(r.peak_kib),
                    r.peak_kib
                        .map(|k| format!("{:.0}", k as f64 * 1024.0 / r.unique.max(1) as f64))
                        .unwrap_or_else(|| "?".into()),
                ],
                Ok(Ended::Stopped { unique_at_least }) => [
                    at_least(unique_at_least),
                    format!("> {}", cap.as_secs()),
                    "?".into(),
                    "?".into(),
                ],
                Err(UsageError(e)) => [e, String::new(), String::new(), String::new()],
            });
            rows.push(row);
        }
    }
    println!("\nreductions of the fixed designs (DFS, two threads, each run a fresh process, stopped after {} s)\n", cap.as_secs());
    print!("{}", render::table(&rows));
    Ok(ExitCode::SUCCESS)
}

/// `bench [MODEL] [--scaling] [--limit SECONDS] [--cap SECONDS]`, `bench --peer`,
/// `bench --validation`
pub(crate) fn bench(rest: &[String]) -> Outcome {
    let mut args = Args::parse(rest, &["scaling", "validation", "peer", "reductions"])?;
    if args.switch("reductions") {
        let cap = args.take_number("cap", REDUCTION_CAP.as_secs() as usize, 1, 36_000)?;
        if args.switches.len() > 1 || !args.options.is_empty() || !args.positional.is_empty() {
            return Err(
                UsageError("`bench --reductions` takes only `--cap SECONDS`".into()).into(),
            );
        }
        return reductions(Duration::from_secs(cap as u64));
    }
    if args.switch("peer") {
        if args.switches.len() > 1 || !args.options.is_empty() || !args.positional.is_empty() {
            return Err(UsageError("`bench --peer` takes no other arguments".into()).into());
        }
        return peer();
    }
    if args.switch("validation") {
        if args.switches.len() > 1 || !args.options.is_empty() || !args.positional.is_empty() {
            return Err(UsageError("`bench --validation` takes no other arguments".into()).into());
        }
        return crate::simulate::bench_validation();
    }
    args.no_more_positionals(1)?;
    let limit = args.take_number("limit", 60, 1, 3600)?;
    // A run that the limit would end anyway is stopped at four times the limit, so one
    // step too far cannot hold the machine for hours.
    let cap = args.take_number("cap", 4 * limit, 1, 36_000)?;
    if cap < limit {
        return Err(UsageError(format!(
            "`--cap` ({cap} s) must not be below `--limit` ({limit} s)"
        ))
        .into());
    }
    let (limit, cap) = (limit as f64, Duration::from_secs(cap as u64));
    if let Some((name, _)) = args.options.first() {
        return Err(UsageError(format!("unknown option `--{name}` for bench")).into());
    }
    let names: Vec<String> = match args.positional.first() {
        Some(n) => vec![n.clone()],
        None => NAMES.iter().map(|s| s.to_string()).collect(),
    };
    let mut rows = vec![[
        "model",
        "design",
        "order",
        "threads",
        "unique",
        "generated",
        "depth",
        "seconds",
        "unique/s",
        "peak MiB",
    ]
    .map(String::from)
    .to_vec()];
    let mut plain = Vec::new();
    for name in &names {
        with_spec!(name.as_str(), M => speed::<M>(&mut rows, &mut plain))?;
    }
    println!("checking at default bounds (each run a fresh process)\n");
    print!("{}", render::table(&rows));
    let mut rows = vec![[
        "model",
        "design",
        "unique (dfs)",
        "with symmetry",
        "factor",
        "seconds",
        "with symmetry",
    ]
    .map(String::from)
    .to_vec()];
    for name in &names {
        with_spec!(name.as_str(), M => symmetry::<M>(&plain, &mut rows))?;
    }
    println!("\nsymmetry reduction at default bounds (DFS, one thread; factor = unique without / with)\n");
    print!("{}", render::table(&rows));
    if args.switch("scaling") {
        for name in &names {
            with_spec!(name.as_str(), M => scaling::<M>(limit, cap))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::{growth, last_progress};

    #[test]
    fn reads_the_count_of_the_last_progress_line() {
        let stderr = "durable fixed: 120 unique states, 300 generated, depth 9, 60 states/s, 2s\n\
                      durable fixed: 250 unique states, 700 generated, depth 12, 83 states/s, 3s\n";
        assert_eq!(last_progress(stderr), Some(250));
        assert_eq!(last_progress(""), None);
        assert_eq!(last_progress("steadfast: unknown setting `x`"), None);
    }

    #[test]
    fn names_exponential_and_polynomial_growth() {
        let exp: Vec<(u64, u64)> = (1..6).map(|n| (n, 3u64.pow(n as u32))).collect();
        assert_eq!(growth(&exp), "exponential, base 3.0");
        let cubic: Vec<(u64, u64)> = (2..7).map(|n| (n, n * n * n)).collect();
        assert_eq!(growth(&cubic), "polynomial, degree 3.0");
        assert_eq!(growth(&exp[..2]), "too few points");
        // Falling ratios that settle at 2.33 (the leadership model's grants), and a
        // degree-8 polynomial whose ratios keep falling at the same bounds.
        let settling = [
            (1, 446),
            (2, 2_062),
            (3, 6_786),
            (4, 19_380),
            (5, 51_342),
            (6, 129_948),
            (7, 318_974),
            (8, 765_748),
            (9, 1_807_134),
            (10, 4_206_588),
        ];
        assert_eq!(
            growth(&settling),
            "exponential once the ratios level off, base 2.3"
        );
        let octic: Vec<(u64, u64)> = (7u64..11).map(|n| (n, n.pow(8))).collect();
        assert_eq!(growth(&octic), "polynomial, degree 8.0");
    }
}
