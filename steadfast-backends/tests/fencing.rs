//! The etcd backend's elections and fenced stores against a real etcd, one JobManager
//! connection at a time, and its refusals of bad input.

mod common;

use std::process::Command;

use common::{runtime, Etcd};
use steadfast::leadership::{JobId, JobResultEntry, JobStatus, RecoveredJob, Session};
use steadfast_backends::etcd::{BackendError, Coordination};

const JOB: JobId = JobId(7);

#[test]
fn sessions_come_from_etcd_and_a_lost_lease_fences_every_store_write() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let etcd = Etcd::start(dir.path());
    let endpoints = [etcd.endpoint.clone()];
    runtime().block_on(async {
        let a = Coordination::connect(&endpoints, "fencing", "a", 60)
            .await
            .expect("a connects");
        let b = Coordination::connect(&endpoints, "fencing", "b", 60)
            .await
            .expect("b connects");

        // The dispatcher election: one winner, epoch 1.
        let a_won = a.try_lead_dispatcher().await.unwrap().expect("a wins");
        assert_eq!(a_won.number, 1);
        assert_eq!(b.try_lead_dispatcher().await.unwrap(), None);
        assert_eq!(b.dispatcher_leader().await.unwrap().as_deref(), Some("a 1"));
        a.put_job_graph(a_won.revision, JOB).await.unwrap();

        // A job's sessions: numbered 1, 2... by etcd, one holder at a time.
        assert_eq!(
            a.try_lead_job(JOB).await.unwrap().map(|w| w.number),
            Some(1)
        );
        assert_eq!(b.try_lead_job(JOB).await.unwrap(), None);
        assert!(a.holds_job(JOB, Session(1)).await.unwrap());
        assert!(!b.holds_job(JOB, Session(1)).await.unwrap());
        a.resign_job(JOB, Session(1)).await.unwrap();
        assert!(!a.holds_job(JOB, Session(1)).await.unwrap());
        assert_eq!(
            b.try_lead_job(JOB).await.unwrap().map(|w| w.number),
            Some(2)
        );

        // a's lease goes (as when it expires): its leader keys go with it, b wins the
        // next epoch, and every write a makes on its old leadership is refused.
        a.revoke().await.unwrap();
        let b_won = b.try_lead_dispatcher().await.unwrap().expect("b wins");
        assert_eq!(b_won.number, 2);
        assert!(b_won.revision > a_won.revision);
        for refused in [
            a.write_dirty_entry(a_won.revision, JOB, JobStatus::Finished)
                .await,
            a.remove_job_graph(a_won.revision, JOB).await,
            a.put_job_graph(a_won.revision, JobId(8)).await,
        ] {
            assert!(
                matches!(refused, Err(BackendError::Fenced { .. })),
                "{refused:?}"
            );
        }
        assert_eq!(
            b.recover().await.unwrap(),
            vec![RecoveredJob {
                job: JOB,
                job_graph: true,
                entry: JobResultEntry::None
            }]
        );

        // The new leader's cleanup: an entry written once, then the graph, then clean.
        b.write_dirty_entry(b_won.revision, JOB, JobStatus::Failed)
            .await
            .unwrap();
        assert!(b.has_entry(JOB).await.unwrap());
        assert!(matches!(
            b.write_dirty_entry(b_won.revision, JOB, JobStatus::Finished)
                .await,
            Err(BackendError::EntryExists { job: JOB })
        ));
        b.remove_job_graph(b_won.revision, JOB).await.unwrap();
        assert!(matches!(
            a.mark_entry_clean(a_won.revision, JOB).await,
            Err(BackendError::Fenced { .. })
        ));
        assert_eq!(
            b.mark_entry_clean(b_won.revision, JOB).await.unwrap(),
            JobStatus::Failed
        );
        assert_eq!(
            b.results().await.unwrap(),
            vec![(JOB, JobStatus::Failed, JobResultEntry::Clean)]
        );
    });
}

/// Runs the JobManager binary with `args`; returns its exit code and stderr.
fn jobmanager(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_steadfast-jobmanager"))
        .args(args)
        .output()
        .expect("running steadfast-jobmanager");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_arguments_and_an_unreachable_etcd_are_one_line_errors() {
    // A port nobody listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let endpoint = format!("127.0.0.1:{port}");
    let (code, stderr) = jobmanager(&["--endpoints", &endpoint, "--cluster", "c", "--name", "n"]);
    assert_eq!(code, Some(3), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with(&format!("steadfast-jobmanager: etcd at {endpoint}: ")),
        "{stderr}"
    );

    // A log that cannot be created is refused before etcd is asked.
    let (code, stderr) = jobmanager(&[
        "--endpoints",
        &endpoint,
        "--cluster",
        "c",
        "--name",
        "n",
        "--log",
        "/nonexistent/dir/jm.ndjson",
    ]);
    assert_eq!(code, Some(3), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("steadfast-jobmanager: creating the log /nonexistent/dir/jm.ndjson: "),
        "{stderr}"
    );

    for (args, says) in [
        (
            &["--cluster", "c", "--name", "n"][..],
            "--endpoints is required",
        ),
        (
            &["--endpoints", "x", "--cluster", "a/b", "--name", "n"],
            "take no `/`",
        ),
        (
            &[
                "--endpoints",
                "x",
                "--cluster",
                "c",
                "--name",
                "n",
                "--jobs",
                "0",
            ],
            "--jobs must be",
        ),
        (
            &["--endpoints", "x", "--cluster", "c", "--name", "n", "--ttl"],
            "--ttl needs a value",
        ),
        (&["--bogus"], "unknown argument `--bogus`"),
        (
            &[
                "--endpoints",
                "x",
                "--cluster",
                "c",
                "--name",
                "n",
                "--job-ms",
                "-1",
            ],
            "whole number",
        ),
        (
            &[
                "--endpoints",
                "x",
                "--cluster",
                "c",
                "--name",
                "n",
                "--job-ms",
                "3600001",
            ],
            "at most",
        ),
    ] {
        let (code, stderr) = jobmanager(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.starts_with("steadfast-jobmanager: ") && stderr.contains(says),
            "{stderr}"
        );
    }
}
