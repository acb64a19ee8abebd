//! `steadfast-jobmanager`: one JobManager of a cluster whose leader election and HA
//! stores live on etcd. Run two or three with the same `--cluster` and `--jobs`; one
//! leads, the others take over when it dies.
//!
//! Exit status: 0 every job done, 1 the dispatcher's fatal error, 2 bad arguments,
//! 3 etcd failed this JobManager (unreachable, lease lost, writes fenced) or the host
//! did (the log cannot be written). Every error
//! is one line on stderr starting with `steadfast-jobmanager: `.

use std::path::PathBuf;
use std::process::ExitCode;

use steadfast_backends::jobmanager::{run, Config, Ended};

const USAGE: &str = "usage: steadfast-jobmanager --endpoints HOST:PORT[,HOST:PORT...] --cluster NAME --name NAME [--jobs N] [--job-ms MS] [--ttl SECONDS] [--log FILE]";

fn parse(args: &[String]) -> Result<Config, String> {
    let mut config = Config {
        endpoints: Vec::new(),
        cluster: String::new(),
        name: String::new(),
        ttl_seconds: 2,
        jobs: 3,
        job_ms: 500,
        log: None,
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        let number = |v: String| {
            v.parse::<u64>()
                .map_err(|_| format!("{flag} takes a whole number, not `{}`", v.escape_debug()))
        };
        match flag.as_str() {
            "--endpoints" => {
                config.endpoints = value()?.split(',').map(str::to_string).collect();
            }
            "--cluster" => config.cluster = value()?,
            "--name" => config.name = value()?,
            "--jobs" => {
                config.jobs = u32::try_from(number(value()?)?)
                    .ok()
                    .filter(|n| (1..=1000).contains(n))
                    .ok_or("--jobs must be 1 to 1000")?
            }
            "--job-ms" => {
                config.job_ms = Some(number(value()?)?)
                    .filter(|n| *n <= 3_600_000)
                    .ok_or("--job-ms must be at most 3600000 (an hour)")?
            }
            "--ttl" => {
                config.ttl_seconds = i64::try_from(number(value()?)?)
                    .ok()
                    .filter(|n| (1..=3600).contains(n))
                    .ok_or("--ttl must be 1 to 3600 seconds")?
            }
            "--log" => config.log = Some(PathBuf::from(value()?)),
            "--help" | "-h" => return Err(USAGE.to_string()),
            other => {
                return Err(format!(
                    "unknown argument `{}`; {USAGE}",
                    other.escape_debug()
                ))
            }
        }
    }
    for (what, missing) in [
        ("--endpoints", config.endpoints.iter().all(String::is_empty)),
        ("--cluster", config.cluster.is_empty()),
        ("--name", config.name.is_empty()),
    ] {
        if missing {
            return Err(format!("{what} is required; {USAGE}"));
        }
    }
    for text in [&config.cluster, &config.name] {
        if text.contains(['/', ' ']) || text.chars().any(char::is_control) {
            return Err(format!(
                "`{}`: cluster and JobManager names take no `/`, spaces or control characters",
                text.escape_debug()
            ));
        }
    }
    Ok(config)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let config = match parse(&args) {
        Ok(config) => config,
        Err(why) => {
            eprintln!("steadfast-jobmanager: {why}");
            return ExitCode::from(2);
        }
    };
    match run(config) {
        Ok(Ended::AllDone) => ExitCode::SUCCESS,
        Ok(Ended::Fatal(why)) => {
            eprintln!("steadfast-jobmanager: fatal: {why}");
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("steadfast-jobmanager: {e}");
            ExitCode::from(3)
        }
    }
}
