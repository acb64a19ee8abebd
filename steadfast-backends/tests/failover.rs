//! JobManager processes on one real etcd contend for the same jobs; the leader is
//! SIGKILLed mid-run, or paused past its lease's TTL (a zombie), and another takes
//! over. Every job's terminal result survives, and no JobMaster of a job starts after
//! its JobResultStore entry was written (no reanimation), read back from etcd in its
//! revision order.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{runtime, Etcd, GUARD};
use etcd_client::{Client, GetOptions};
use steadfast::leadership::{JobId, JobResultEntry};
use steadfast_backends::etcd::parse_entry;
use steadfast_backends::jobmanager::decided_status;
use steadfast_conformance::validate::{validate_cluster, Options, Verdict};

const JOBS: u32 = 6;
const CLUSTER: &str = "failover";

fn spawn_jobmanager(etcd: &Etcd, dir: &Path, name: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_steadfast-jobmanager"))
        .args(["--endpoints", &etcd.endpoint, "--cluster", CLUSTER])
        .args(["--name", name, "--jobs", &JOBS.to_string()])
        // Job j decides j x 600 ms after its JobMaster starts: the kill lands while
        // some jobs are done and others run.
        .args(["--job-ms", "600", "--ttl", "2"])
        .arg("--log")
        .arg(dir.join(format!("{name}.ndjson")))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join(format!("{name}.err"))).expect("stderr file"))
        .spawn()
        .expect("spawning steadfast-jobmanager")
}

/// Every key under the cluster's `dir`, with its value and creation revision.
async fn read(client: &mut Client, dir: &str) -> BTreeMap<String, (String, i64)> {
    let prefix = format!("/steadfast/{CLUSTER}/{dir}");
    let answer = client
        .get(prefix.clone(), Some(GetOptions::new().with_prefix()))
        .await
        .expect("reading etcd");
    answer
        .kvs()
        .iter()
        .map(|kv| {
            let key = String::from_utf8_lossy(&kv.key()[prefix.len()..]).into_owned();
            let value = String::from_utf8_lossy(kv.value()).into_owned();
            (key, (value, kv.create_revision()))
        })
        .collect()
}

/// Polls `probe` until it returns something, within the guard.
fn wait_for<T>(what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let started = Instant::now();
    loop {
        if let Some(found) = probe() {
            return found;
        }
        assert!(started.elapsed() < GUARD, "{what}: not within {GUARD:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_killed_leader_is_replaced_and_every_result_survives_without_reanimation() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let etcd = Etcd::start(dir.path());
    let rt = runtime();
    let mut client = rt
        .block_on(Client::connect([etcd.endpoint.as_str()], None))
        .expect("connecting to the test's etcd");

    let names = ["jm-a", "jm-b", "jm-c"];
    let mut children: BTreeMap<&str, Child> = names
        .iter()
        .map(|name| (*name, spawn_jobmanager(&etcd, dir.path(), name)))
        .collect();

    // The leader is whoever holds the dispatcher leader key; it is killed once some job
    // has its result and some has not.
    let leader = wait_for("a dispatcher leader", || {
        let held = rt.block_on(read(&mut client, "dispatcher/leader"));
        held.values().next().map(|(value, _)| value.clone())
    });
    let leader = names
        .into_iter()
        .find(|name| leader.starts_with(&format!("{name} ")))
        .unwrap_or_else(|| panic!("the leader key names no JobManager of the test: {leader}"));
    let before = wait_for("a first result while jobs still run", || {
        let results = rt.block_on(read(&mut client, "results/"));
        (!results.is_empty() && results.len() < JOBS as usize).then_some(results)
    });
    // The kill lands where the leader's log and the stores agree: stopped, the leader
    // has no store write outstanding (one whose answer its log lacks, which could land
    // after the kill) and its log ends between model steps. The model's crash takes no
    // store write with it (a finding: `validate --cluster` rejects the successor's log
    // when a write lands whose answer died with its process), so the kill waits for
    // such a point rather than betting on timing.
    let mut killed = children.remove(leader).expect("the leader is a child");
    let log_path = dir.path().join(format!("{leader}.ndjson"));
    let started = Instant::now();
    loop {
        signal(&killed, "-STOP");
        let log = std::fs::read_to_string(&log_path).expect("the leader's log");
        if no_store_write_outstanding(&log) && between_steps(&log) {
            break;
        }
        signal(&killed, "-CONT");
        assert!(
            started.elapsed() < GUARD,
            "the leader never paused between store writes"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    killed.kill().expect("SIGKILL the leader");
    let status = killed.wait().expect("reaping the leader");
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9),
        "the leader ended before the kill: {status}"
    );
    // Results written after the snapshot and before the kill are the dead leader's too.
    let at_kill = rt.block_on(read(&mut client, "results/"));

    for (name, child) in &mut children {
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().expect("polling a JobManager") {
                break status;
            }
            assert!(
                started.elapsed() < GUARD,
                "{name} did not finish within {GUARD:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let stderr = std::fs::read_to_string(dir.path().join(format!("{name}.err")));
        assert!(status.success(), "{name} ended {status}: {stderr:?}");
    }

    let results = rt.block_on(read(&mut client, "results/"));
    let graphs = rt.block_on(read(&mut client, "graphs/"));
    let audit = rt.block_on(read(&mut client, "audit/"));
    let term = rt.block_on(read(&mut client, "dispatcher/term"));

    // Every job ends with a clean entry holding the status its scheduler decided, and
    // its JobGraph removed.
    for job in 1..=JOBS {
        let (value, _) = results
            .get(&job.to_string())
            .unwrap_or_else(|| panic!("job {job} has no JobResultStore entry: {results:?}"));
        assert_eq!(
            parse_entry(value.as_bytes()),
            Some((decided_status(JobId(job)), JobResultEntry::Clean)),
            "job {job}"
        );
    }
    assert_eq!(results.len(), JOBS as usize);
    assert!(graphs.is_empty(), "JobGraphs left behind: {graphs:?}");
    // What the dead leader wrote survives as it wrote it (the same creation revision).
    for (job, (_, revision)) in &at_kill {
        assert_eq!(results[job].1, *revision, "job {job}'s entry was rewritten");
    }
    assert!(before.len() <= at_kill.len());

    // No reanimation: every JobMaster start of a job precedes its entry in etcd's order.
    let mut takeovers = 0;
    for (key, (starter, revision)) in &audit {
        let job = key
            .split('/')
            .next()
            .expect("audit/<job>/started/<session>");
        let entry = results[job].1;
        assert!(
            *revision < entry,
            "job {job}: a JobMaster ({key}, by {starter}) started at revision {revision}, after its entry at {entry}"
        );
        if starter != leader {
            takeovers += 1;
        }
    }
    // Someone else ran the jobs the dead leader left unfinished, in a later epoch.
    assert!(at_kill.len() < JOBS as usize);
    assert!(
        takeovers > 0,
        "no JobMaster started after the kill: {audit:?}"
    );
    let epochs: u32 = term
        .values()
        .next()
        .expect("a dispatcher term")
        .0
        .parse()
        .expect("a number");
    assert!(epochs >= 2, "one dispatcher epoch only: nobody took over");
    // Every survivor left, giving its leases back: no leader key remains.
    let leaders = rt.block_on(read(&mut client, "dispatcher/leader"));
    assert!(
        leaders.is_empty(),
        "a leader key outlived its JobManager: {leaders:?}"
    );

    // The production logs, checked against the model (design `fixed`, with the model's
    // JobManager crash): the logs of every JobManager that led, in the order of the
    // epochs etcd issued them, starting with the dead leader's up to the kill.
    let mut led: Vec<(u32, String)> = names
        .iter()
        .filter_map(|name| {
            let path = dir.path().join(format!("{name}.ndjson"));
            let log = std::fs::read_to_string(path).expect("a JobManager's log");
            let term = log.lines().find_map(|line| {
                let line: serde_json::Value = serde_json::from_str(line).ok()?;
                let fields = &line["fields"];
                (fields["event"] == "dispatcher_leader").then(|| fields["term"].as_u64())?
            })?;
            Some((u32::try_from(term).expect("a small term"), log))
        })
        .collect();
    led.sort_by_key(|(term, _)| *term);
    let terms: Vec<u32> = led.iter().map(|(term, _)| *term).collect();
    assert_eq!(terms, (1..=epochs).collect::<Vec<_>>(), "every epoch's log");
    assert!(led[0].1.contains(&format!(r#""name":"{leader}""#)));
    let readers = |logs: &[(u32, String)]| -> Vec<Box<dyn std::io::Read>> {
        logs.iter()
            .map(|(_, log)| Box::new(std::io::Cursor::new(log.clone())) as Box<dyn std::io::Read>)
            .collect()
    };
    let validation = validate_cluster(readers(&led), Options::default()).expect("readable logs");
    assert_eq!(validation.verdict, Verdict::Valid, "{validation:?}");
    assert_eq!(validation.jobs, JOBS as usize);
    // The check has teeth: the same logs in the wrong order are no behaviour of the model.
    led.reverse();
    let reversed = validate_cluster(readers(&led), Options::default()).expect("readable logs");
    assert!(
        matches!(reversed.verdict, Verdict::Unexplained { .. }),
        "{reversed:?}"
    );
    // The model lets a crash lose a decision that no entry recorded yet (the
    // `jobmaster-crash` scenario); the job then runs again, which is "no reanimation"
    // failing for a job without an entry at the kill. Nothing else may fail.
    for violation in &validation.violations {
        assert!(
            violation.property == "no reanimation"
                && !at_kill.contains_key(&violation.job.to_string()),
            "{violation:?}"
        );
    }
}

/// Whether every store request in the dispatcher's effects has its answer in the log.
fn no_store_write_outstanding(log: &str) -> bool {
    let pairs = [
        ("RecoverJobs {", "jobs_recovered"),
        ("PutJobGraph {", "job_graph_stored"),
        ("WriteDirtyEntry {", "dirty_entry_written"),
        ("RemoveJobGraph {", "job_graph_removed"),
        ("MarkEntryClean {", "entry_marked_clean"),
    ];
    let (mut asked, mut answered) = (0, 0);
    for line in log.lines() {
        let Ok(line) = serde_json::from_str::<serde_json::Value>(line) else {
            return false;
        };
        let fields = &line["fields"];
        if fields["component"] != "dispatcher" {
            continue;
        }
        let effects = fields["effects"].as_str().unwrap_or("");
        for (request, answer) in pairs {
            asked += effects.matches(request).count();
            answered += usize::from(fields["event"] == answer);
        }
    }
    asked == answered
}

/// Whether the log, as it is, is a whole behaviour of the model: no step cut short.
fn between_steps(log: &str) -> bool {
    steadfast_conformance::validate::validate(log.as_bytes(), Options::default())
        .is_ok_and(|v| v.verdict == Verdict::Valid)
}

/// Waits for `child` to exit, within the guard.
fn wait_exit(name: &str, child: &mut Child) -> std::process::ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("polling a JobManager") {
            return status;
        }
        assert!(
            started.elapsed() < GUARD,
            "{name} did not finish within {GUARD:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal(child: &Child, which: &str) {
    let status = Command::new("kill")
        .args([which, &child.id().to_string()])
        .status()
        .expect("running kill");
    assert!(status.success(), "kill {which} failed");
}

#[test]
fn a_leader_paused_past_its_lease_is_fenced_out_and_exits_when_it_wakes() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let etcd = Etcd::start(dir.path());
    let rt = runtime();
    let mut client = rt
        .block_on(Client::connect([etcd.endpoint.as_str()], None))
        .expect("connecting to the test's etcd");
    let names = ["jm-a", "jm-b"];
    let mut children: BTreeMap<&str, Child> = names
        .iter()
        .map(|name| (*name, spawn_jobmanager(&etcd, dir.path(), name)))
        .collect();
    let holder = |client: &mut Client| {
        let held = rt.block_on(read(client, "dispatcher/leader"));
        held.values().next().map(|(value, _)| value.clone())
    };
    let first = wait_for("a dispatcher leader", || holder(&mut client));
    let zombie = names
        .into_iter()
        .find(|name| first.starts_with(&format!("{name} ")))
        .expect("the leader is a child");
    wait_for("a first result while jobs still run", || {
        let results = rt.block_on(read(&mut client, "results/"));
        (!results.is_empty() && results.len() < JOBS as usize).then_some(())
    });

    // Paused, the leader renews nothing: its lease expires and the other takes over;
    // woken while the other leads, it finds its lease gone and its writes fenced.
    signal(&children[zombie], "-STOP");
    let next = wait_for("a new dispatcher leader", || {
        holder(&mut client).filter(|held| !held.starts_with(&format!("{zombie} ")))
    });
    signal(&children[zombie], "-CONT");
    let mut woken = children.remove(zombie).expect("the zombie is a child");
    let status = wait_exit(zombie, &mut woken);
    let stderr = std::fs::read_to_string(dir.path().join(format!("{zombie}.err"))).unwrap();
    assert_eq!(status.code(), Some(3), "{zombie} ended {status}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("steadfast-jobmanager: ")
            && (stderr.contains("lost") || stderr.contains("fenced")),
        "{stderr}"
    );
    let (name, child) = children.iter_mut().next().expect("the other JobManager");
    assert!(next.starts_with(&format!("{name} ")), "{next}");
    let status = wait_exit(name, child);
    assert!(status.success(), "{name} ended {status}");

    let results = rt.block_on(read(&mut client, "results/"));
    let audit = rt.block_on(read(&mut client, "audit/"));
    for job in 1..=JOBS {
        let (value, _) = &results[&job.to_string()];
        assert_eq!(
            parse_entry(value.as_bytes()),
            Some((decided_status(JobId(job)), JobResultEntry::Clean)),
            "job {job}"
        );
    }
    for (key, (starter, revision)) in &audit {
        let job = key
            .split('/')
            .next()
            .expect("audit/<job>/started/<session>");
        assert!(
            *revision < results[job].1,
            "job {job}: a JobMaster ({key}, by {starter}) started after its entry"
        );
    }
}
