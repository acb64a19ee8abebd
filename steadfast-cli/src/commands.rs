//! The commands: argument handling and output, generic over the model.

use std::net::TcpListener;
use std::process::ExitCode;
use std::time::Duration;

use serde::Serialize;
use steadfast_model::check::{self, CheckOptions, Strategy};
use steadfast_model::{ParamKind, Settings, Spec, Verdict};

use crate::args::{quote, Args, Failure, Outcome, UsageError};
use crate::models::{with_spec, NAMES};
use crate::render;

/// The model `command` names, one of `known` (listed when none is given).
pub(crate) fn model_name(args: &Args, command: &str, known: &[&str]) -> Result<String, UsageError> {
    args.no_more_positionals(1)?;
    args.positional.first().cloned().ok_or_else(|| {
        UsageError(format!(
            "`{command}` needs a model (models: {})",
            known.join(", ")
        ))
    })
}

/// Settings from a scenario preset (if named) overridden by the remaining options.
fn settings<M>(args: &mut Args) -> Result<Settings, UsageError>
where
    M: Spec,
{
    let mut settings = Settings::defaults(M::params());
    if let Some(name) = args.take("scenario") {
        let preset = scenario::<M>(&name)?;
        for (param, value) in preset {
            settings
                .set(M::params(), param, value)
                .map_err(|e| UsageError(format!("scenario `{name}`: {e}")))?;
        }
    }
    for (name, value) in std::mem::take(&mut args.options) {
        settings
            .set(M::params(), &name, &value)
            .map_err(|e| UsageError(e.0))?;
    }
    Ok(settings)
}

fn scenario<M>(name: &str) -> Result<&'static [(&'static str, &'static str)], UsageError>
where
    M: Spec,
{
    M::preset(name).map_err(|e| UsageError(e.0))
}

pub(crate) fn build<M>(args: &mut Args) -> Result<M, UsageError>
where
    M: Spec,
{
    let design = args.take("design").unwrap_or_else(|| "fixed".to_string());
    if !M::designs().contains(&design.as_str()) {
        return Err(UsageError(format!(
            "unknown design {} for model {} (designs: {})",
            quote(&design),
            M::NAME,
            M::designs().join(", ")
        )));
    }
    let settings = settings::<M>(args)?;
    M::build(&design, &settings).map_err(|e| UsageError(e.0))
}

/// `check MODEL ...`
pub(crate) fn check(rest: &[String]) -> Outcome {
    let mut args = Args::parse(
        rest,
        &[
            "json",
            "dfs",
            "no-shortest",
            "no-traces",
            "symmetry",
            "por",
            "simulate",
        ],
    )?;
    if let Some(dir) = args.take("merge") {
        return crate::swarm::merge(&args, &dir);
    }
    let name = crate::models::entry(&model_name(&args, "check", NAMES)?, &args);
    if args.switch("simulate") {
        return with_spec!(name.as_str(), M => crate::swarm::simulate::<M>(&mut args));
    }
    // Without `--simulate` these would be taken for model settings.
    for option in ["seed", "shard", "time", "out"] {
        if args.options.iter().any(|(n, _)| n == option) {
            return Err(UsageError(format!("`--{option}` needs `--simulate`")).into());
        }
    }
    with_spec!(name.as_str(), M => check_model::<M>(&mut args))
}

fn check_model<M>(args: &mut Args) -> Outcome
where
    M: Spec,
{
    let threads = args.take_number("threads", 1, 1, 64)?;
    crate::budget::watch(args, "check")?;
    let options = CheckOptions {
        threads,
        strategy: if args.switch("dfs") {
            Strategy::Dfs
        } else {
            Strategy::Bfs
        },
        traces: match (args.switch("no-shortest"), args.switch("no-traces")) {
            (false, false) => check::Traces::Shortest,
            (true, false) => check::Traces::OfTheRun,
            (false, true) => check::Traces::None,
            (true, true) => {
                return Err(UsageError(
                    "`--no-shortest` keeps the run's own traces and `--no-traces` drops them: \
                     give one"
                        .into(),
                )
                .into())
            }
        },
        progress_after: Some(Duration::from_secs(2)),
        symmetry: args.switch("symmetry"),
        por: args.switch("por"),
    };
    let report_file = args.take("report");
    if report_file.as_deref() == Some("") {
        return Err(UsageError("`--report` needs a file name".into()).into());
    }
    let model: M = build(args)?;
    let report = check::try_check(&model, &options).map_err(|e| match e {
        check::CheckError::SymmetryNeedsDfs => UsageError(
            "`--symmetry` needs `--dfs`: stateright ignores symmetry reduction in \
             breadth-first runs"
                .into(),
        ),
        check::CheckError::NoReduction(e) => UsageError(format!("`--por`: {e}")),
        other => UsageError(format!("`--symmetry`: {other}")),
    })?;
    if args.switch("json") {
        #[derive(Serialize)]
        struct Json<'a> {
            #[serde(flatten)]
            report: &'a check::CheckReport,
            /// High-water mark of this process's resident memory.
            peak_memory_kib: Option<u64>,
        }
        let json = Json {
            report: &report,
            peak_memory_kib: peak_memory_kib(),
        };
        println!(
            "{}",
            serde_json::to_string_pretty(&json).expect("reports serialise")
        );
    } else {
        print!("{}", render::report(&report));
    }
    if let Some(file) = report_file {
        let file = std::path::PathBuf::from(file);
        let page = crate::report::html(&model, &report);
        if let Err(e) = crate::write_atomically(&file, page.as_bytes()) {
            return Err(Failure::Run(format!(
                "cannot write `{}`: {e}",
                file.display()
            )));
        }
    }
    Ok(if report.all_good() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The process's peak resident memory (`VmHWM`), where the system tells it.
fn peak_memory_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// One cell of a verdict table as found by the checker.
#[derive(Serialize)]
pub(crate) struct VerdictRow {
    design: &'static str,
    scenario: &'static str,
    property: &'static str,
    expected: Verdict,
    found: Verdict,
}

impl VerdictRow {
    fn reproduced(&self) -> bool {
        self.expected == self.found
    }
}

#[derive(Serialize)]
struct VerdictTable {
    model: &'static str,
    unique_states: Vec<(String, String, usize)>,
    rows: Vec<VerdictRow>,
}

fn verdict_table<M>() -> Result<VerdictTable, UsageError>
where
    M: Spec,
{
    let expectations = M::expectations();
    let mut runs: Vec<(&'static str, &'static str)> = Vec::new();
    for e in &expectations {
        if !runs.contains(&(e.design, e.scenario)) {
            runs.push((e.design, e.scenario));
        }
    }
    let options = CheckOptions {
        threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        strategy: Strategy::Bfs,
        traces: check::Traces::None,
        progress_after: Some(Duration::from_secs(2)),
        symmetry: false,
        por: false,
    };
    let mut table = VerdictTable {
        model: M::NAME,
        unique_states: Vec::new(),
        rows: Vec::new(),
    };
    for (design, scenario_name) in runs {
        let mut settings = Settings::defaults(M::params());
        for (param, value) in scenario::<M>(scenario_name)? {
            settings
                .set(M::params(), param, value)
                .map_err(|e| UsageError(format!("scenario `{scenario_name}`: {e}")))?;
        }
        let model = M::build(design, &settings).map_err(|e| UsageError(e.0))?;
        let report = check::check(&model, &options);
        table.unique_states.push((
            design.to_string(),
            scenario_name.to_string(),
            report.unique_states,
        ));
        for e in expectations
            .iter()
            .filter(|e| e.design == design && e.scenario == scenario_name)
        {
            let found = report.verdict(e.property).ok_or_else(|| {
                UsageError(format!(
                    "{} expects property `{}`, which the model does not have",
                    M::NAME,
                    e.property
                ))
            })?;
            table.rows.push(VerdictRow {
                design,
                scenario: scenario_name,
                property: e.property,
                expected: e.expected,
                found,
            });
        }
    }
    Ok(table)
}

fn cell(row: &VerdictRow) -> String {
    if row.reproduced() {
        row.found.word().to_string()
    } else {
        format!("{} (expected {})", row.found.word(), row.expected.word())
    }
}

/// Distinct values of a column, in first-seen order.
fn distinct(rows: &[VerdictRow], f: impl Fn(&VerdictRow) -> &'static str) -> Vec<&str> {
    let mut seen = Vec::new();
    for r in rows {
        let v = f(r);
        if !seen.contains(&v) {
            seen.push(v);
        }
    }
    seen
}

/// Rows: designs; columns: scenarios when there are several (one table per property),
/// else properties; last column: whether every cell of the row was reproduced.
fn render_verdicts(t: &VerdictTable) -> String {
    let designs = distinct(&t.rows, |r| r.design);
    let scenarios = distinct(&t.rows, |r| r.scenario);
    let properties = distinct(&t.rows, |r| r.property);
    let mut out = String::new();
    let by_scenario = scenarios.len() > 1;
    let groups: Vec<Option<&str>> = if by_scenario {
        properties.iter().map(|p| Some(*p)).collect()
    } else {
        vec![None]
    };
    for group in groups {
        let columns = if by_scenario { &scenarios } else { &properties };
        let title = match group {
            Some(p) => format!("{}: \"{p}\" per scenario", t.model),
            None => format!("{} (scenario {})", t.model, scenarios.join(", ")),
        };
        out.push_str(&format!("\n{title}\n"));
        let mut rows = vec![std::iter::once("design".to_string())
            .chain(columns.iter().map(|c| c.to_string()))
            .chain(std::iter::once("reproduced".to_string()))
            .collect::<Vec<_>>()];
        for d in &designs {
            let mut line = vec![d.to_string()];
            let mut all = true;
            for c in columns.iter() {
                let found = t.rows.iter().find(|r| {
                    r.design == *d
                        && if by_scenario {
                            Some(r.property) == group && r.scenario == *c
                        } else {
                            r.property == *c
                        }
                });
                match found {
                    Some(r) => {
                        all &= r.reproduced();
                        line.push(cell(r));
                    }
                    None => line.push("-".into()),
                }
            }
            line.push(if all { "yes" } else { "NO" }.into());
            rows.push(line);
        }
        out.push_str(&render::table(&rows));
    }
    out
}

/// `verdicts`
pub(crate) fn verdicts(rest: &[String]) -> Outcome {
    let args = Args::parse(rest, &["json"])?;
    args.no_more_positionals(0)?;
    if let Some((name, _)) = args.options.first() {
        return Err(UsageError(format!("unknown option `--{name}` for verdicts")).into());
    }
    let mut tables: Vec<VerdictTable> = Vec::new();
    for name in crate::models::ENTRIES {
        tables.push(with_spec!(*name, M => verdict_table::<M>())?);
    }
    let all = tables
        .iter()
        .all(|t| t.rows.iter().all(VerdictRow::reproduced));
    if args.switch("json") {
        println!(
            "{}",
            serde_json::to_string_pretty(&tables).expect("tables serialise")
        );
    } else {
        for t in &tables {
            print!("{}", render_verdicts(t));
        }
        let cells: usize = tables.iter().map(|t| t.rows.len()).sum();
        let matched: usize = tables
            .iter()
            .map(|t| t.rows.iter().filter(|r| r.reproduced()).count())
            .sum();
        println!("\n{matched} of {cells} expected verdicts reproduced");
    }
    Ok(if all {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `explore MODEL ...`
pub(crate) fn explore(rest: &[String]) -> Outcome {
    let mut args = Args::parse(rest, &["public"])?;
    let name = crate::models::entry(&model_name(&args, "explore", NAMES)?, &args);
    with_spec!(name.as_str(), M => explore_model::<M>(&mut args))
}

fn explore_model<M>(args: &mut Args) -> Outcome
where
    M: Spec,
{
    let addr = args
        .take("addr")
        .unwrap_or_else(|| "127.0.0.1:3000".to_string());
    let public = args.switch("public");
    // The check before serving, and the Explorer's own search, run under the budget.
    crate::budget::watch(args, "explore")?;
    let model: M = build(args)?;
    let parsed: std::net::SocketAddr = addr.parse().map_err(|_| {
        UsageError(format!(
            "`--addr` must be an IP address and port such as 127.0.0.1:3000, got {}",
            quote(&addr)
        ))
    })?;
    if !parsed.ip().is_loopback() && !public {
        return Err(UsageError(format!(
            "`--addr {addr}` is reachable from other machines; add `--public` to serve there"
        ))
        .into());
    }
    // The Explorer panics on a taken port; find out first and say so plainly. Port 0 asks
    // the system for a free one: it is the one announced and served.
    let listener = TcpListener::bind(parsed)
        .map_err(|e| UsageError(format!("cannot listen on `{addr}`: {e}")))?;
    let bound = listener
        .local_addr()
        .map_err(|e| UsageError(format!("cannot listen on `{addr}`: {e}")))?;
    drop(listener);
    if public {
        eprintln!("steadfast: warning: the Explorer on {bound} is reachable from other machines");
    }
    crate::explore::serve(model, bound).map_err(UsageError)?;
    Ok(ExitCode::SUCCESS)
}

/// `models`
pub(crate) fn models(rest: &[String]) -> Outcome {
    let args = Args::parse(rest, &[])?;
    args.no_more_positionals(0)?;
    args.no_options("models")?;
    for name in NAMES {
        with_spec!(*name, M => {
            describe::<M>();
            Ok::<(), UsageError>(())
        })?;
    }
    Ok(ExitCode::SUCCESS)
}

fn describe<M>()
where
    M: Spec,
{
    println!("{}: {}", M::NAME, M::SUMMARY);
    println!("  designs: {}", M::designs().join(", "));
    // A scenario as `name (setting=value ...)`.
    let named = |(n, preset): (&str, &[(&str, &str)])| {
        let sets: Vec<String> = preset.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{n} ({})", sets.join(" "))
    };
    let mut scenarios = vec![steadfast_model::DEFAULT_SCENARIO.to_string()];
    scenarios.extend(M::scenarios().iter().copied().map(named));
    println!("  scenarios: {}", scenarios.join(", "));
    if M::NAME == "leadership" {
        let columns: Vec<String> = steadfast_model::leadership::jobs::columns()
            .map(named)
            .collect();
        println!("  several-jobs scenarios: {}", columns.join(", "));
    }
    println!("  settings:");
    for p in M::params() {
        let range = match p.kind {
            ParamKind::Int { default, min, max } => format!("{default} (within {min}..={max})"),
            ParamKind::Bool { default } => format!("{default}"),
            ParamKind::Choice { default, options } => {
                format!("{default} (one of {})", options.join(", "))
            }
        };
        println!("    --{:<22} {}; default {range}", p.name, p.help);
    }
}
