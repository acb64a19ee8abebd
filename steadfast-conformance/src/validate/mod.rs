//! Trace validation: is a production log a behaviour of the model?
//!
//! A log is the NDJSON file a run of the machines writes (`steadfast-sim`'s `log`), one
//! `tracing` event per line. The validator reads it as a stream and searches, breadth
//! first, for a path of the model that explains it, in the manner of TLA+ trace
//! validation (Cirstea, Kuppe, Loillier and Merz, "Validating Traces of Distributed
//! Programs Against TLA+ Specifications", 2024): it keeps the set of model states
//! consistent with the events read so far, and for each next event takes every model
//! step whose structured events ([`crate::leadership::expected_log`], the same mapping
//! conformance checks the runtime's log against) begin with it, after any number of the
//! model's unobservable steps (a scheduler's decision, a signal to a process whose
//! runner is gone). A step that emits several events leaves the set part-way through
//! it; the step's remaining events must come next. The log is valid when the set never
//! runs empty and ends with every step complete. A valid log may still be a bad
//! behaviour: a safety property of the model that fails in every state of a job's set
//! is reported as a [`Violation`] (the model's verdicts say where the fixed design can
//! fail: with late signals, its residual window).
//!
//! **Jobs.** The leadership model has one job; a run has many. Each job's events
//! (runner, process and election events name the job, a process through its `job`
//! span) together with the dispatcher's events that concern every job (leadership
//! gained and lost, the recovery read) form the job's projection, and each projection
//! is validated against the one-job model on its own. This checks every job's history,
//! not the joint history of all of them: an error that only shows as an impossible
//! combination of two jobs' states is not caught.
//!
//! Memory is bounded by the jobs and the sets, not by the log: lines are read one at a
//! time, at most [`MAX_LINE_BYTES`] each.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::io::{BufRead, Read};
use steadfast_model::quote::{quote, shorten};

use serde::Deserialize;
use stateright::Model;
use steadfast_model::leadership::{Action, Leadership, State};

use crate::leadership::{expected_log, settle, start_log, LogRecord};

mod search;
pub use search::MAX_PLACES;
use search::{Entry, Observed, Search, Tracker};

pub mod durable;

/// Longest line the validator reads.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// Most jobs one log may name.
pub const MAX_JOBS: u64 = 100_000;

/// Most dispatcher-wide events before a job's first own event (they are replayed to a
/// job that appears late).
const MAX_SHARED_PREFIX: usize = 64;

/// Most model states the report lists.
const REPORTED_STATES: usize = 3;

/// Why a log could not be read (as opposed to a log that the model does not explain).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogError {
    /// The line (1-based), 0 for the file as a whole.
    pub line: u64,
    /// What is wrong.
    pub why: String,
}

impl fmt::Display for LogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.why)
        } else {
            write!(f, "line {}: {}", self.line, self.why)
        }
    }
}

impl std::error::Error for LogError {}

/// The settings a log is validated under.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// The model's `late-signal`; `None` takes it from the log's run header (off when
    /// the log has none).
    pub late_signal: Option<bool>,
    /// The model's design; `None` is `fixed`, the design the machines implement. Another
    /// design says which code the log is expected to come from (`revoke-clears-leader`
    /// for machines carrying that seed bug).
    pub design: Option<&'static str>,
}

/// The verdict on one log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// A model path explains every job's events.
    Valid,
    /// No model path explains this event.
    Unexplained {
        /// Its line (1-based).
        line: u64,
        /// The job whose projection it breaks.
        job: u64,
        /// The event, as the log has it.
        event: String,
        /// How many model states were possible just before it.
        possible: usize,
        /// Some of them, as JSON, for the report.
        states: Vec<String>,
        /// What those states expected next, at most a few.
        expected: Vec<String>,
    },
    /// The log ends inside a model step of this job: events are missing.
    Truncated {
        /// The job.
        job: u64,
        /// The first event that is missing, for one possible path.
        missing: String,
    },
}

/// A safety property of the model that fails on every model path explaining a job's
/// events: the log is a behaviour of the model, and a bad one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The property's name.
    pub property: &'static str,
    /// The job.
    pub job: u64,
    /// The line of the event after which it fails on every path.
    pub line: u64,
    /// That event.
    pub event: String,
}

/// What validating one log found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Validation {
    /// The model the log was checked against: `leadership` or `durable`.
    pub model: &'static str,
    /// Lines read.
    pub lines: u64,
    /// Machine events checked (the run header and blank lines are not).
    pub events: u64,
    /// Jobs the log names (a durable log is one task's: 1).
    pub jobs: usize,
    /// The most model states possible at once for one job.
    pub widest: usize,
    /// The model's `late-signal` the log was checked under.
    pub late_signal: bool,
    /// The verdict.
    pub verdict: Verdict,
    /// Safety properties the explained behaviour breaks, first failure per job and
    /// property, in log order.
    pub violations: Vec<Violation>,
}

impl Validation {
    /// Whether the model explains the log.
    pub fn is_valid(&self) -> bool {
        self.verdict == Verdict::Valid
    }
}

/// One line of the log, as the JSON formatter writes it.
#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow)]
    fields: Fields<'a>,
    #[serde(default)]
    span: Option<SpanFields>,
}

#[derive(Deserialize)]
struct Fields<'a> {
    #[serde(borrow, default)]
    component: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    event: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    outcome: Option<Cow<'a, str>>,
    #[serde(default)]
    session: Option<u64>,
    #[serde(default)]
    job: Option<u64>,
    #[serde(default)]
    epoch: Option<u64>,
    #[serde(borrow, default)]
    status: Option<Cow<'a, str>>,
    #[serde(default)]
    late_signal: Option<bool>,
    #[serde(borrow, default)]
    model: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct SpanFields {
    #[serde(default)]
    job: Option<u64>,
}

/// The leadership model seen through its log.
struct LeadershipLog {
    model: Leadership,
}

impl Observed for LeadershipLog {
    type State = State;
    type Action = Action;
    type Record = LogRecord;
    const MEMO_LIMIT: usize = 200_000;

    fn actions(&self, state: &State, out: &mut Vec<Action>) {
        self.model.actions(state, out);
    }

    fn next(&self, state: &State, action: &Action) -> Option<State> {
        self.model
            .next_state(state, *action)
            .map(|next| settle(&self.model, &next))
    }

    fn records(&self, state: &State, action: &Action) -> Vec<LogRecord> {
        expected_log(&self.model, state, action, false)
    }
}

fn leadership_search(design: &str, late_signal: bool, cluster: bool) -> Search<LeadershipLog> {
    let late = if late_signal { "true" } else { "false" };
    // A cluster's JobManager processes end by dying: the model's `jobmaster-crash`.
    let crash = if cluster { "true" } else { "false" };
    let model = Leadership::scenario(
        design,
        "all",
        &[
            ("grants", "4"),
            ("epochs", "3"),
            ("late-signal", late),
            ("jobmaster-crash", crash),
        ],
    )
    .expect("the validator's settings are valid for every design");
    Search::new(LeadershipLog { model })
}

fn leadership_start(search: &Search<LeadershipLog>) -> Tracker<State, LogRecord> {
    let model = &search.observed.model;
    let init = model.init_states()[0];
    Tracker::new(Entry::new(settle(model, &init), start_log(&init)))
}

/// A record's place in the log: which jobs it concerns, and the record as the one-job
/// model names it (its job is the model's job).
enum Route {
    Shared(LogRecord),
    Job(u64, LogRecord),
}

fn route(
    line: u64,
    fields: Fields<'_>,
    span: Option<SpanFields>,
    cluster: bool,
) -> Result<Route, LogError> {
    let err = |why: String| LogError { line, why };
    let component = fields
        .component
        .ok_or_else(|| err("an event without a `component` field".into()))?;
    let event = fields
        .event
        .ok_or_else(|| err(format!("a {component} event without an `event` field")))?;
    let outcome = fields.outcome.ok_or_else(|| {
        err(format!(
            "a {component} {event} event without an `outcome` field"
        ))
    })?;
    match &*component {
        "runner" | "process" | "election" | "dispatcher" => {}
        // The end of a JobManager process in a cluster log (`validate_cluster`).
        "jobmanager" if cluster => {}
        other => {
            return Err(err(format!(
                "an event of an unknown component {}",
                quote(other)
            )))
        }
    }
    let job = fields.job.or(span.and_then(|s| s.job));
    // A JobManager's end concerns every job, and the model names its job in it.
    if component == "jobmanager" {
        let record = LogRecord {
            component: crate::leadership::word(&component),
            event: crate::leadership::word(&event),
            session: None,
            job: Some(u64::from(crate::leadership::JOB.0)),
            epoch: fields.epoch,
            status: None,
            outcome: crate::leadership::word(&outcome),
        };
        return Ok(Route::Shared(record));
    }
    let own_job = matches!(&*component, "runner" | "dispatcher");
    let record = LogRecord {
        component: crate::leadership::word(&component),
        event: crate::leadership::word(&event),
        session: fields.session,
        job: if own_job {
            fields.job.map(|_| u64::from(crate::leadership::JOB.0))
        } else {
            None
        },
        epoch: fields.epoch,
        status: fields.status.as_deref().map(crate::leadership::word),
        outcome: crate::leadership::word(&outcome),
    };
    match job {
        None if component == "dispatcher" => Ok(Route::Shared(record)),
        None => Err(err(format!(
            "a {component} {event} event names no job (no `job` field or span)"
        ))),
        Some(0) => Err(err("job 0: jobs are numbered from 1".into())),
        Some(j) if j > MAX_JOBS => Err(err(format!("job {j}: more than {MAX_JOBS} jobs"))),
        Some(j) => Ok(Route::Job(j, record)),
    }
}

/// A log read one line at a time, at most [`MAX_LINE_BYTES`] each, as UTF-8; blank lines
/// are skipped (but counted).
struct LogLines<R> {
    input: std::io::BufReader<R>,
    buf: Vec<u8>,
    line: u64,
}

impl<R: Read> LogLines<R> {
    fn new(input: R) -> Self {
        LogLines::after(input, 0)
    }

    /// The lines of `input`, the first of which is line `skipped + 1` of the log.
    fn after(input: R, skipped: u64) -> Self {
        LogLines {
            input: std::io::BufReader::with_capacity(1 << 16, input),
            buf: Vec::with_capacity(1024),
            line: skipped,
        }
    }

    /// The next non-blank line with its number (1-based), or `None` at the end.
    fn next_line(&mut self) -> Result<Option<(u64, &str)>, LogError> {
        loop {
            self.buf.clear();
            let read = (&mut self.input)
                .take(MAX_LINE_BYTES as u64 + 1)
                .read_until(b'\n', &mut self.buf)
                .map_err(|e| LogError {
                    line: self.line + 1,
                    why: format!("reading: {e}"),
                })?;
            if read == 0 {
                return Ok(None);
            }
            self.line += 1;
            if self.buf.last() != Some(&b'\n') && self.buf.len() > MAX_LINE_BYTES {
                return Err(LogError {
                    line: self.line,
                    why: format!("longer than {MAX_LINE_BYTES} bytes"),
                });
            }
            if self.buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let text = std::str::from_utf8(&self.buf).map_err(|e| LogError {
                line: self.line,
                why: format!("not UTF-8 (byte {})", e.valid_up_to()),
            })?;
            return Ok(Some((self.line, text)));
        }
    }

    /// Lines read so far, blank ones included.
    fn read(&self) -> u64 {
        self.line
    }
}

/// Validates the log read from `input` against the model its run header names
/// (`model=durable` for [`durable::validate_durable`]; leadership otherwise, which
/// also takes logs without a header).
pub fn validate(input: impl Read, options: Options) -> Result<Validation, LogError> {
    let mut input = std::io::BufReader::with_capacity(1 << 16, input);
    // The first non-blank line says which model; it is read again by the validator,
    // which is told how many blank lines came before it (they are not kept).
    let mut head: Vec<u8> = Vec::new();
    let mut blank = 0u64;
    loop {
        head.clear();
        let read = (&mut input)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut head)
            .map_err(|e| LogError {
                line: blank + 1,
                why: format!("reading: {e}"),
            })?;
        if read == 0 || head.len() > MAX_LINE_BYTES || !head.iter().all(u8::is_ascii_whitespace) {
            break;
        }
        blank += 1;
    }
    #[derive(Deserialize)]
    struct Header<'a> {
        #[serde(borrow, default)]
        fields: Option<HeaderFields<'a>>,
    }
    #[derive(Deserialize)]
    struct HeaderFields<'a> {
        #[serde(borrow, default)]
        component: Option<Cow<'a, str>>,
        #[serde(borrow, default)]
        model: Option<Cow<'a, str>>,
    }
    let durable = serde_json::from_slice::<Header<'_>>(&head)
        .ok()
        .and_then(|h| h.fields)
        .is_some_and(|f| {
            f.component.as_deref() == Some("run") && f.model.as_deref() == Some("durable")
        });
    let rest = LogLines::after(std::io::Cursor::new(head).chain(input), blank);
    if durable {
        durable::validate_lines(rest, options, MAX_PLACES)
    } else {
        leadership_lines(rest, options, false)
    }
}

/// Validates the log read from `input` against the leadership model (design `fixed`
/// unless `options` names another, every interleaving, the largest bounds the model
/// has: 4 grants per job, 3 dispatcher epochs).
pub fn validate_leadership(input: impl Read, options: Options) -> Result<Validation, LogError> {
    leadership_lines(LogLines::new(input), options, false)
}

/// The line that stands for a JobManager process's end between two logs of a cluster.
const PROCESS_END: &[u8] =
    b"\n{\"fields\":{\"component\":\"jobmanager\",\"event\":\"crash\",\"outcome\":\"crashed\"}}\n";

/// Validates the production logs of a cluster's JobManager processes, each a process
/// that led the cluster in turn (each dispatcher leadership ends before the next one
/// starts, as leases on a coordination service give it), in the order they led, against
/// the leadership model with `jobmaster-crash`: every log but the last ends with its
/// process's death, the model's crash, and the next process's events follow it.
///
/// Two things differ from one process's log: each process numbers its dispatcher epochs
/// from 1 (a new process starts a new `Dispatcher`), so the epochs of a log count on from
/// those of the logs before it; and a line stands between two logs for the death, so the
/// lines of the verdict are numbered through the logs as if concatenated, with two lines
/// (a blank one and the death) between one log and the next.
pub fn validate_cluster<'a>(
    logs: Vec<Box<dyn Read + 'a>>,
    options: Options,
) -> Result<Validation, LogError> {
    let mut chained: Box<dyn Read + 'a> = Box::new(std::io::empty());
    for (i, log) in logs.into_iter().enumerate() {
        if i > 0 {
            chained = Box::new(chained.chain(PROCESS_END));
        }
        chained = Box::new(chained.chain(log));
    }
    leadership_lines(LogLines::new(chained), options, true)
}

fn leadership_lines<R: Read>(
    mut lines: LogLines<R>,
    options: Options,
    cluster: bool,
) -> Result<Validation, LogError> {
    use steadfast_model::Spec;
    let design = options.design.unwrap_or("fixed");
    if !Leadership::designs().contains(&design) {
        return Err(LogError {
            line: 0,
            why: format!(
                "unknown design `{design}` for leadership (known: {})",
                Leadership::designs().join(", ")
            ),
        });
    }
    let mut reader = LeadershipReader::new(design, options, cluster);
    let mut line_no = 0u64;
    while let Some((line_no_now, text)) = lines.next_line()? {
        line_no = line_no_now;
        if reader.line(line_no, text)? {
            return Ok(reader.out);
        }
    }
    if line_no == 0 {
        return Err(LogError {
            line: 0,
            why: "the log is empty".into(),
        });
    }
    Ok(reader.finish(lines.read()))
}

/// What the leadership validation holds while it reads a log: the search, one tracker
/// per job, the dispatcher events read before any job's, and the validation filled in as
/// the log is read (its verdict set where the reading ends).
struct LeadershipReader {
    design: &'static str,
    /// The log is a cluster's, its processes' logs one after the other.
    cluster: bool,
    /// The `late-signal` the options fix, if they do.
    late_signal: Option<bool>,
    /// Built at the first event, once the run header has been read.
    search: Option<Search<LeadershipLog>>,
    /// The model's safety properties.
    safety: Vec<stateright::Property<Leadership>>,
    out: Validation,
    trackers: HashMap<u64, Tracker<State, LogRecord>>,
    /// The jobs in the order of their first events.
    order: Vec<u64>,
    /// Dispatcher events read before any job's, replayed to each job that appears.
    shared_prefix: Vec<LogRecord>,
    /// In a cluster log: the epochs of the processes before this one.
    epoch_offset: u64,
    /// In a cluster log: the latest epoch seen (the one a process's death ends).
    last_epoch: u64,
}

impl LeadershipReader {
    /// A reader for `design`, before any line.
    fn new(design: &'static str, options: Options, cluster: bool) -> LeadershipReader {
        LeadershipReader {
            design,
            cluster,
            late_signal: options.late_signal,
            search: None,
            safety: Vec::new(),
            out: Validation {
                model: "leadership",
                lines: 0,
                events: 0,
                jobs: 0,
                widest: 0,
                late_signal: options.late_signal.unwrap_or(false),
                verdict: Verdict::Valid,
                violations: Vec::new(),
            },
            trackers: HashMap::new(),
            order: Vec::new(),
            shared_prefix: Vec::new(),
            epoch_offset: 0,
            last_epoch: 0,
        }
    }

    /// Reads line `line_no`; whether it ends the reading with a verdict.
    fn line(&mut self, line_no: u64, text: &str) -> Result<bool, LogError> {
        let parsed: Line<'_> = serde_json::from_str(text).map_err(|e| LogError {
            line: line_no,
            why: format!("not a log event: {}", shorten(&e.to_string())),
        })?;
        // The run header of a simulated run says which faults it injected.
        if parsed.fields.component.as_deref() == Some("run") {
            return self.header(line_no, &parsed.fields).map(|()| false);
        }
        self.start_search();
        self.out.events += 1;
        let mut route = route(line_no, parsed.fields, parsed.span, self.cluster)?;
        if self.cluster {
            self.renumber(&mut route);
        }
        let Some((targets, record)) = self.targets(line_no, route)? else {
            return Ok(false);
        };
        for job in targets {
            if self.take(line_no, job, &record, text)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// A run header: the model it names, and the `late-signal` it ran with.
    fn header(&mut self, line_no: u64, fields: &Fields<'_>) -> Result<(), LogError> {
        if let Some(model) = fields.model.as_deref() {
            if model != "leadership" {
                return Err(LogError {
                    line: line_no,
                    why: format!("a log of the {} model, not of leadership", quote(model)),
                });
            }
        }
        if let (Some(late), None) = (fields.late_signal, self.late_signal) {
            // Each process of a cluster has its header; they must agree.
            if self.cluster && self.search.is_some() && late == self.out.late_signal {
                return Ok(());
            }
            if self.search.is_some() {
                return Err(LogError {
                    line: line_no,
                    why: "a run header after the run's first event".into(),
                });
            }
            self.out.late_signal = late;
        }
        Ok(())
    }

    /// The search, built at the first event under the settings read so far.
    fn start_search(&mut self) {
        if self.search.is_some() {
            return;
        }
        let search = leadership_search(self.design, self.out.late_signal, self.cluster);
        self.safety = search
            .observed
            .model
            .properties()
            .into_iter()
            .filter(|p| p.expectation == stateright::Expectation::Always)
            .collect();
        self.search = Some(search);
    }

    /// In a cluster log, a record's epoch counted on from the processes before; a
    /// process's death ends the latest epoch, and the next process's count on from it.
    fn renumber(&mut self, route: &mut Route) {
        let (Route::Shared(record) | Route::Job(_, record)) = route;
        if record.component == "jobmanager" && record.epoch.is_none() {
            record.epoch = Some(self.last_epoch);
            self.epoch_offset = self.last_epoch;
        } else if let Some(epoch) = record.epoch.as_mut() {
            *epoch += self.epoch_offset;
            self.last_epoch = self.last_epoch.max(*epoch);
        }
    }

    /// The jobs a record concerns, and the record; `None` for a dispatcher event read
    /// before any job's, kept to replay. A job's first record starts its tracker.
    fn targets(
        &mut self,
        line_no: u64,
        route: Route,
    ) -> Result<Option<(Vec<u64>, LogRecord)>, LogError> {
        match route {
            Route::Shared(record) if self.trackers.is_empty() => {
                if self.shared_prefix.len() >= MAX_SHARED_PREFIX {
                    return Err(LogError {
                        line: line_no,
                        why: format!(
                            "more than {MAX_SHARED_PREFIX} dispatcher events before any job's"
                        ),
                    });
                }
                self.shared_prefix.push(record);
                Ok(None)
            }
            Route::Shared(record) => Ok(Some((self.order.clone(), record))),
            Route::Job(job, record) => {
                if !self.trackers.contains_key(&job) {
                    let tracker = self.start_job(line_no, job)?;
                    self.trackers.insert(job, tracker);
                    self.order.push(job);
                }
                Ok(Some((vec![job], record)))
            }
        }
    }

    /// Job `job`'s tracker, from the model's start through the dispatcher events read
    /// before it appeared.
    fn start_job(&mut self, line_no: u64, job: u64) -> Result<Tracker<State, LogRecord>, LogError> {
        let search = self.search.as_mut().expect("started at the first event");
        let mut tracker = leadership_start(search);
        for (i, shared) in self.shared_prefix.iter().enumerate() {
            let taken = tracker.take(search, shared).map_err(|w| LogError {
                line: line_no,
                why: w.why(),
            })?;
            if !taken {
                return Err(LogError {
                    line: line_no,
                    why: format!(
                        "job {job} first appears after dispatcher event {} ({shared}), which its start cannot follow",
                        i + 1
                    ),
                });
            }
        }
        Ok(tracker)
    }

    /// Job `job`'s tracker takes `record`; whether the model cannot explain it (the
    /// verdict is then set). Safety properties it newly breaks are reported.
    fn take(
        &mut self,
        line_no: u64,
        job: u64,
        record: &LogRecord,
        text: &str,
    ) -> Result<bool, LogError> {
        let search = self.search.as_mut().expect("started at the first event");
        let out = &mut self.out;
        let tracker = self
            .trackers
            .get_mut(&job)
            .expect("every target is tracked");
        let taken = tracker.take(search, record).map_err(|w| LogError {
            line: line_no,
            why: w.why(),
        })?;
        if !taken {
            let (possible, states) = tracker.states(REPORTED_STATES);
            let expected = tracker.expected(search, |r| {
                let mut r = r.clone();
                if r.job.is_some() {
                    r.job = Some(job);
                }
                r.to_string()
            });
            out.lines = line_no;
            out.jobs = self.trackers.len();
            out.verdict = Verdict::Unexplained {
                line: line_no,
                job,
                event: shown(text),
                possible,
                states,
                expected,
            };
            return Ok(true);
        }
        out.widest = out.widest.max(tracker.frontier.len());
        for property in tracker.newly_broken(&search.observed.model, &self.safety) {
            out.violations.push(Violation {
                property,
                job,
                line: line_no,
                event: shown(text),
            });
        }
        Ok(false)
    }

    /// The validation at the log's end, after `lines` lines: truncated if a job's
    /// events stop inside a model step.
    fn finish(mut self, lines: u64) -> Validation {
        self.out.lines = lines;
        self.out.jobs = self.trackers.len();
        for job in &self.order {
            let tracker = &self.trackers[job];
            if !tracker.complete() {
                let mut missing = tracker.frontier[0].owed()[0].clone();
                if missing.job.is_some() {
                    missing.job = Some(*job);
                }
                self.out.verdict = Verdict::Truncated {
                    job: *job,
                    missing: missing.to_string(),
                };
                return self.out;
            }
        }
        self.out
    }
}

/// An event line as a short phrase: component, event, job, session, epoch, status,
/// outcome.
fn shown(text: &str) -> String {
    let Ok(line) = serde_json::from_str::<Line<'_>>(text) else {
        return text.trim().to_string();
    };
    let f = line.fields;
    let mut out = format!(
        "{} {}",
        f.component.as_deref().unwrap_or("?"),
        f.event.as_deref().unwrap_or("?")
    );
    let job = f.job.or(line.span.and_then(|s| s.job));
    for (name, value) in [("job", job), ("session", f.session), ("epoch", f.epoch)] {
        if let Some(v) = value {
            out.push_str(&format!(" {name}={v}"));
        }
    }
    if let Some(status) = f.status.as_deref() {
        out.push_str(&format!(" status={status}"));
    }
    out.push_str(&format!(" -> {}", f.outcome.as_deref().unwrap_or("?")));
    out
}
