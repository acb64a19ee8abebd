//! The Explorer in a real browser: `explore` on a free loopback port, the printed
//! counterexample URLs opened in headless Chromium (Debian's `chromium`, installed by
//! `.ci/run`), and the rendered page read back. A missing browser fails the test.
//!
//! Screenshots are kept under `target/tmp/` (`explorer-*.png`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const CHROMIUM: &str = "/usr/bin/chromium";

/// A running `explore` and the URLs it printed, by property.
struct Explorer {
    child: Child,
    port: u16,
    urls: Vec<(String, String)>,
}

impl Drop for Explorer {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

impl Explorer {
    fn start(model: &str, design: &str) -> Explorer {
        let mut child = Command::new(env!("CARGO_BIN_EXE_steadfast"))
            .args([
                "explore",
                model,
                "--design",
                design,
                "--addr",
                "127.0.0.1:0",
            ])
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let first = lines.next().unwrap().unwrap();
        let port: u16 = first
            .split("http://127.0.0.1:")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no address announced: {first}"));
        let mut urls = Vec::new();
        // Progress of the check, the settings, one indented line per property, then
        // the line that says the page is served.
        for line in lines.by_ref() {
            let line = line.unwrap();
            if line.starts_with("serving on ") {
                break;
            }
            let Some(rest) = line.strip_prefix("  ") else {
                continue;
            };
            if let Some((verdict, url)) = rest.split_once(": http://") {
                urls.push((verdict.to_string(), format!("http://{url}")));
            }
        }
        // Keep reading stderr so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        let explorer = Explorer { child, port, urls };
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "nothing listens on {port}");
            std::thread::sleep(Duration::from_millis(50));
        }
        explorer
    }

    fn url_of(&self, verdict: &str) -> &str {
        &self
            .urls
            .iter()
            .find(|(v, _)| v == verdict)
            .unwrap_or_else(|| panic!("no URL printed for `{verdict}`: {:?}", self.urls))
            .1
    }

    /// GET `path` from the front, body as text.
    fn get(&self, path: &str) -> (u16, String) {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        write!(s, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").unwrap();
        let mut raw = String::new();
        s.read_to_string(&mut raw).unwrap();
        let (head, body) = raw.split_once("\r\n\r\n").unwrap();
        let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
        (status, body.to_string())
    }
}

fn chromium(args: &[&str], url: &str, profile: &str) -> String {
    assert!(
        std::path::Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: install Debian's `chromium` (`.ci/run` does)"
    );
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("chromium-{profile}"));
    std::fs::remove_dir_all(&dir).ok();
    let out = Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--virtual-time-budget=15000",
            &format!("--user-data-dir={}", dir.display()),
        ])
        .args(args)
        .arg(url)
        .output()
        .expect("chromium runs");
    assert!(out.status.success(), "chromium failed: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn rendered(url: &str, name: &str) -> String {
    let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("explorer-{name}.png"));
    chromium(
        &[
            "--window-size=1600,1400",
            &format!("--screenshot={}", shot.display()),
        ],
        url,
        &format!("{name}-shot"),
    );
    assert!(shot.exists(), "no screenshot at {}", shot.display());
    chromium(&["--dump-dom"], url, name)
}

#[test]
fn the_unpatched_leadership_counterexample_reads_as_a_violation_with_its_picture() {
    let ex = Explorer::start("leadership", "unpatched");
    let url = ex.url_of("VIOLATED: no reanimation").to_string();
    let dom = rendered(&url, "leadership");
    // The selected (last) step's text opens with the verdict on its state.
    assert!(dom.contains("VIOLATES no reanimation"), "{dom}");
    assert!(
        dom.contains("<svg") && dom.contains("step violation"),
        "no lane picture"
    );
    assert!(dom.contains("design unpatched"), "design not shown");
    assert!(
        !dom.contains("every state visited"),
        "the sentinel is listed"
    );
    assert!(
        dom.contains("runner runs the grant of session 2"),
        "actions not in words"
    );
    assert!(!dom.contains("RunGrant("), "actions shown as Rust values");

    // The Explorer's JSON for the last step carries the verdict and the picture.
    let path = url.split("#/steps").nth(1).unwrap();
    let (prefix, last) = path.rsplit_once('/').unwrap();
    let (status, body) = ex.get(&format!("/.states{prefix}"));
    assert_eq!(status, 200, "{body}");
    let steps: serde_json::Value = serde_json::from_str(&body).unwrap();
    let step = steps
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["actionIndex"].as_u64() == last.parse::<u64>().ok())
        .unwrap();
    assert!(step["outcome"]
        .as_str()
        .unwrap()
        .starts_with("VIOLATES no reanimation"));
    assert!(step["svg"].as_str().unwrap().starts_with("<svg"));
    assert!(!step["properties"]
        .to_string()
        .contains("every state visited"));

    // A path this design does not have gets a message, not a blank page.
    let base = url.split('#').next().unwrap();
    let dom = chromium(&["--dump-dom"], &format!("{base}#/steps/0/9/9"), "bad-path");
    assert!(dom.contains("is not a path of leadership"), "{dom}");
    let (status, body) = ex.get("/.states/0/9/9");
    assert_eq!(status, 404);
    assert!(body.contains("step 1 offers"), "{body}");
}

#[test]
fn the_unpatched_durable_counterexample_reads_as_a_violation_with_its_picture() {
    let ex = Explorer::start("durable", "unpatched");
    let url = ex.url_of("VIOLATED: call at most once").to_string();
    let dom = rendered(&url, "durable");
    assert!(dom.contains("VIOLATES"), "{dom}");
    assert!(dom.contains("call at most once"));
    assert!(
        dom.contains("<svg") && dom.contains("step violation"),
        "no lane picture"
    );
    assert!(
        dom.contains("crash: any in-flight put is lost"),
        "actions not in words"
    );
    // The state below the step is in words, not the checker's packed bytes.
    assert!(
        dom.contains("supplier runs: key 0 input 0 call 0: 2"),
        "{dom}"
    );
    assert!(
        !dom.contains("supplier_runs") && !dom.contains("phase: ["),
        "raw state shown"
    );
    assert!(
        !dom.contains("every state visited"),
        "the sentinel is listed"
    );
}

/// `check --report` writes one page that opens offline, from a file, and shows the
/// verdict table and a lane diagram per trace.
#[test]
fn the_check_report_opens_offline_with_a_picture_per_trace() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let file = dir.join("report-leadership-unpatched.html");
    std::fs::remove_file(&file).ok();
    let out = Command::new(env!("CARGO_BIN_EXE_steadfast"))
        .args(["check", "leadership", "--design", "unpatched", "--report"])
        .arg(&file)
        .output()
        .unwrap();
    // Unpatched violates properties: exit 1, the report written all the same.
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let page = std::fs::read_to_string(&file).unwrap();
    assert!(!page.contains("<script"), "the report runs no script");
    assert!(!page.contains("src="), "the report loads nothing");
    let traces = page.matches("<h2 ").count();
    assert_eq!(traces, 11, "5 counterexamples and 6 examples");
    assert_eq!(page.matches("<svg ").count(), traces);
    let url = format!("file://{}", file.display());
    let dom = rendered(&url, "report");
    assert!(dom.contains("counterexample to “no reanimation”"), "{dom}");
    assert!(dom.contains("VIOLATED"));
    assert!(dom.contains("step violation"));
}
