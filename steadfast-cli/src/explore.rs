//! `explore`: the stateright Explorer behind a thin front that makes it honest.
//!
//! stateright's Explorer page marks a property "holds" until its own search finds a
//! counterexample, names the model by its Rust type only, lists our checker's sentinel
//! as a property, and shows a blank page for a path its model does not have. The front
//! fixes what a user meets first, without touching the page's code:
//! - before serving, the model is checked exhaustively (as `check` does) and one URL per
//!   property with a counterexample or example is printed; those shortest paths replace
//!   the Explorer's own discoveries in what the page reads, and the page reads the run
//!   as done, since the verdicts are known;
//! - the status names the model, design and settings; the sentinel is left out;
//! - a banner on the page repeats model, design and settings, links every verdict's
//!   path, and says in words when the path in the address is not a path of this model.
//!
//! Everything else is passed through to the Explorer, which listens on a loopback port
//! of its own.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use steadfast_model::check::{self, BadPath, CheckOptions, CheckReport, SENTINEL};
use steadfast_model::quote::quote;
use steadfast_model::{Spec, Verdict};

/// A line to stderr; a closed stderr (the user's pipe went away) does not stop the
/// server.
macro_rules! say {
    ($($arg:tt)*) => {{
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// A response: status, content type, body.
type Reply = (u16, &'static str, Vec<u8>);

/// Checks `model`, prints a URL per verdict with a path, then serves the Explorer's
/// front on `addr` (already known to be free) until the process ends.
pub(crate) fn serve<M>(model: M, addr: SocketAddr) -> Result<(), String>
where
    M: Spec + Send + Sync + Clone + 'static,
    M::State: Send + Sync,
    M::Action: Send + Sync,
{
    let base = format!("http://{addr}/");
    say!(
        "Explorer for {} (design {}) on {base} ; checking the model first",
        M::NAME,
        model.design_name()
    );
    let report = check::check(
        &model,
        &CheckOptions {
            progress_after: Some(Duration::from_secs(2)),
            ..CheckOptions::default()
        },
    );
    say!("{}", title(&report));
    for p in &report.properties {
        if let Some(path) = &p.explorer_path {
            say!(
                "  {}: {base}#/steps/{path}",
                verdict_words(p.verdict, p.name)
            );
        } else {
            say!("  {}", verdict_words(p.verdict, p.name));
        }
    }

    // The Explorer itself, on a loopback port of its own.
    let inner = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| format!("cannot find a port for the Explorer: {e}"))?;
    let explorer = model.focus(None).map_err(|e| e.0)?;
    std::thread::spawn(move || {
        explorer.checker().serve(inner);
    });
    wait_for(inner)?;

    let listener = TcpListener::bind(addr).map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    say!("serving on {base}; the page links the same paths; press ctrl-c to stop");
    let shared = Arc::new((model, report));
    let live = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        // Past the limit a connection is closed at once: the machine's threads are
        // not spent on clients that hold connections open.
        if live.fetch_add(1, Relaxed) >= MAX_CONNECTIONS {
            live.fetch_sub(1, Relaxed);
            continue;
        }
        let (shared, done) = (Arc::clone(&shared), Arc::clone(&live));
        let spawned = std::thread::Builder::new()
            .name("explore-client".into())
            .spawn(move || {
                serve_one(&shared.0, &shared.1, inner, stream);
                done.fetch_sub(1, Relaxed);
            });
        if spawned.is_err() {
            live.fetch_sub(1, Relaxed);
        }
    }
    Ok(())
}

/// The longest a client may take to send a request head, or to take the answer.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest request head read; the Explorer's are a few hundred bytes.
const MAX_HEAD_BYTES: usize = 16 << 10;

/// Connections served at once, each on its own thread.
const MAX_CONNECTIONS: usize = 64;

/// Answers one connection's request (one per connection: the answer closes it). A
/// client that sends its request head slowly, or not at all, is dropped after
/// [`CLIENT_TIMEOUT`] and holds up no one else.
fn serve_one<M: Spec>(model: &M, report: &CheckReport, inner: SocketAddr, mut stream: TcpStream) {
    let reply = match read_head(&mut stream) {
        Head::Request(method, url) => answer(model, report, inner, &method, &url),
        Head::Bad => (
            400,
            "text/plain; charset=utf-8",
            b"not an HTTP request".to_vec(),
        ),
        Head::Gone => return,
    };
    let _ = stream.set_write_timeout(Some(CLIENT_TIMEOUT));
    let _ = write_reply(&mut stream, &reply);
}

/// What a connection sent.
enum Head {
    /// Method and URL of a request.
    Request(String, String),
    /// A head that is no HTTP request, or too large.
    Bad,
    /// Nothing within the time allowed, or the client went.
    Gone,
}

/// Reads a request head within [`CLIENT_TIMEOUT`], whatever pace the client sends at.
fn read_head(stream: &mut TcpStream) -> Head {
    let deadline = Instant::now() + CLIENT_TIMEOUT;
    let mut head = Vec::new();
    let mut buf = [0u8; 2048];
    while !ends_head(&head) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            return Head::Gone;
        }
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return Head::Gone,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
        if head.len() > MAX_HEAD_BYTES {
            return Head::Bad;
        }
    }
    request_line(&head).map_or(Head::Bad, |(m, u)| Head::Request(m, u))
}

fn ends_head(head: &[u8]) -> bool {
    head.windows(4).any(|w| w == b"\r\n\r\n") || head.windows(2).any(|w| w == b"\n\n")
}

/// Method and URL of a request line, when they are what a browser sends: a method in
/// capitals and a path, neither with control characters (they are passed on).
fn request_line(head: &[u8]) -> Option<(String, String)> {
    let line = std::str::from_utf8(head).ok()?.lines().next()?;
    let mut words = line.split(' ');
    let (method, url) = (words.next()?, words.next()?);
    let fits = !method.is_empty()
        && method.bytes().all(|b| b.is_ascii_uppercase())
        && url.starts_with('/')
        && !url.chars().any(char::is_control);
    fits.then(|| (method.to_string(), url.to_string()))
}

fn write_reply(stream: &mut TcpStream, (status, kind, body): &Reply) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        502 => "Bad Gateway",
        _ => "Status",
    };
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    stream.flush()
}

fn answer<M: Spec>(
    model: &M,
    report: &CheckReport,
    inner: SocketAddr,
    method: &str,
    url: &str,
) -> Reply {
    // Request bodies are never read: the Explorer's one POST carries none.
    if method != "GET" {
        return forward(inner, method, url);
    }
    if let Some(path) = url.strip_prefix("/.steadfast/check") {
        let problem = path_problem(model, report, path);
        let body = serde_json::json!({ "problem": problem });
        return (200, "application/json", body.to_string().into_bytes());
    }
    if let Some(path) = url.strip_prefix("/.states") {
        if let Some(problem) = path_problem(model, report, path) {
            return (404, "text/plain; charset=utf-8", problem.into_bytes());
        }
    }
    let (status, kind, data) = forward(inner, "GET", url);
    if status != 200 {
        return (status, kind, data);
    }
    match url {
        "/" => (200, "text/html; charset=utf-8", with_banner(report, &data)),
        "/.status" => rewrite_json(report, &data, true).unwrap_or((status, kind, data)),
        u if u.starts_with("/.states") => {
            rewrite_json(report, &data, false).unwrap_or((status, kind, data))
        }
        _ => (status, kind, data),
    }
}

/// Model, design and settings in one line.
fn title(report: &CheckReport) -> String {
    let settings = crate::render::settings(report);
    format!(
        "{} · design {} · {}",
        report.model,
        report.design,
        settings.join(", ")
    )
}

fn verdict_words(verdict: Verdict, name: &str) -> String {
    format!("{}: {name}", crate::render::verdict(verdict))
}

/// Why `path` (`/0/1/2`, action indices from an initial state) is not a path of the
/// model; `None` when it is.
fn path_problem<M: Spec>(model: &M, report: &CheckReport, path: &str) -> Option<String> {
    let path = path.split('?').next().unwrap_or("").trim_matches('/');
    if path.is_empty() {
        return None;
    }
    let whose = || format!("{} ({})", report.model, title(report));
    let problem = check::decode_explorer_path(model, path).err()?;
    Some(match problem {
        BadPath::NotANumber(part) => format!(
            "{} is not a path: {} is not an action number",
            quote(&path.escape_debug().to_string()),
            quote(&part.escape_debug().to_string())
        ),
        BadPath::NoInitialState { index, count } => format!(
            "path {} starts at initial state {index}, but {} has {count}",
            quote(path),
            whose()
        ),
        BadPath::NoAction {
            step,
            index,
            offered,
        } => format!(
            "path {} is not a path of {}: step {step} offers {offered} action(s), not a \
             number {index}; was it printed for another design or other settings?",
            quote(path),
            whose()
        ),
    })
}

/// The Explorer's status or states JSON with the sentinel left out and the check's
/// shortest paths as discoveries; the status also names model, design and settings.
fn rewrite_json(report: &CheckReport, data: &[u8], status: bool) -> Option<Reply> {
    let mut json: Value = serde_json::from_slice(data).ok()?;
    let fix = |props: &mut Value| {
        if let Some(list) = props.as_array_mut() {
            list.retain(|p| p.get(1).and_then(Value::as_str) != Some(SENTINEL));
            for p in list.iter_mut() {
                let name = p.get(1).and_then(Value::as_str).unwrap_or("").to_string();
                let ours = report
                    .properties
                    .iter()
                    .find(|r| r.name == name)
                    .and_then(|r| r.explorer_path.clone());
                if let (Some(slot), Some(path)) = (p.get_mut(2), ours) {
                    *slot = Value::String(path);
                }
            }
        }
    };
    if status {
        fix(json.get_mut("properties")?);
        json["model"] = Value::String(title(report));
        // The check before serving visited every state: its counts, not the page's
        // own search's.
        json["done"] = Value::Bool(true);
        json["state_count"] = Value::from(report.generated_states);
        json["unique_state_count"] = Value::from(report.unique_states);
        json["max_depth"] = Value::from(report.max_depth);
    } else {
        for step in json.as_array_mut()? {
            if let Some(props) = step.get_mut("properties") {
                fix(props);
            }
        }
    }
    Some((200, "application/json", json.to_string().into_bytes()))
}

/// The page with a banner after its `<body>` tag: model, design, settings, a link per
/// verdict with a path, and a line that says when the address's path is invalid.
fn with_banner(report: &CheckReport, page: &[u8]) -> Vec<u8> {
    let page = String::from_utf8_lossy(page);
    let mut links = String::new();
    for p in &report.properties {
        if let Some(path) = &p.explorer_path {
            links.push_str(&format!(
                " · <a style='color:#2a5db0' href='#/steps/{path}'>{}</a>",
                html(&verdict_words(p.verdict, p.name))
            ));
        }
    }
    let banner = format!(
        "<div id='steadfast-banner' style='padding:6px 12px;background:#f3f5fa;color:#111;\
         border-bottom:1px solid #ccd;font-family:sans-serif;font-size:14px'>\
         <b id='steadfast-title'>{}</b> — shortest paths:{links}\
         <div id='steadfast-problem' style='color:#c00;font-weight:bold'></div></div>\
         <script>async function steadfastCheck(){{\
         const h=(location.hash||'#/steps').split('?')[0].replace(/^#\\/steps/,'');\
         const r=await fetch('/.steadfast/check'+h);const j=await r.json();\
         document.getElementById('steadfast-problem').textContent=j.problem||'';}}\
         window.addEventListener('hashchange',steadfastCheck);steadfastCheck();</script>",
        html(&title(report))
    );
    let at = page
        .find("<body")
        .and_then(|i| page[i..].find('>').map(|j| i + j + 1))
        .unwrap_or(0);
    let mut out = String::with_capacity(page.len() + banner.len());
    out.push_str(&page[..at]);
    out.push_str(&banner);
    out.push_str(&page[at..]);
    out.into_bytes()
}

fn html(text: &str) -> String {
    steadfast_model::picture::escape(text)
}

/// Asks the Explorer at `inner` and returns its answer.
fn forward(inner: SocketAddr, method: &str, url: &str) -> Reply {
    let failed = |e: std::io::Error| {
        (
            502,
            "text/plain; charset=utf-8",
            format!("the Explorer did not answer: {e}").into_bytes(),
        )
    };
    let mut stream = match TcpStream::connect(inner) {
        Ok(s) => s,
        Err(e) => return failed(e),
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(60)));
    let request = format!("{method} {url} HTTP/1.0\r\nHost: {inner}\r\nContent-Length: 0\r\n\r\n");
    if let Err(e) = stream.write_all(request.as_bytes()) {
        return failed(e);
    }
    let mut raw = Vec::new();
    if let Err(e) = stream.read_to_end(&mut raw) {
        return failed(e);
    }
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(raw.len());
    let head = String::from_utf8_lossy(&raw[..split]);
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(502);
    let kind = if url == "/" {
        "text/html; charset=utf-8"
    } else if url.ends_with(".js") {
        "application/javascript"
    } else if url.ends_with(".css") {
        "text/css"
    } else {
        "application/json"
    };
    let body = raw.get(split + 4..).unwrap_or_default().to_vec();
    (status, kind, body)
}

/// Waits until the Explorer at `inner` accepts connections.
fn wait_for(inner: SocketAddr) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if TcpStream::connect(inner).is_ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(format!("the Explorer did not start on {inner}"))
}
