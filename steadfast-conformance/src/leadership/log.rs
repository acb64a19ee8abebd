//! The structured log. Every transition of the runner, a process and the dispatcher,
//! and every election notice, emits one `tracing` event naming its component, the event,
//! the session or job where one applies, and the outcome; FLINK-39704 was diagnosed from
//! such logs, so they are an output the model's steps must explain too.

use super::*;

mod expected;
pub use expected::*;

/// One structured event of the leadership runtime, with the fields conformance reads
/// (strings are empty and numbers `None` when the event lacks the field).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct LogRecord {
    /// `runner`, `process`, `dispatcher` or `election`.
    pub component: Cow<'static, str>,
    /// The event the component handled.
    pub event: Cow<'static, str>,
    /// The session the event names.
    pub session: Option<u64>,
    /// The job (runner and dispatcher events).
    pub job: Option<u64>,
    /// The dispatcher's epoch after the event (dispatcher events).
    pub epoch: Option<u64>,
    /// The terminal status a signal carries (`FINISHED`, `FAILED`, `CANCELED`).
    pub status: Option<Cow<'static, str>>,
    /// What the component did; `rejected` when it refused the event.
    pub outcome: Cow<'static, str>,
}

impl fmt::Display for LogRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.component, self.event)?;
        for (name, value) in [
            ("session", self.session),
            ("job", self.job),
            ("epoch", self.epoch),
        ] {
            if let Some(v) = value {
                write!(f, " {name}={v}")?;
            }
        }
        if let Some(status) = &self.status {
            write!(f, " status={status}")?;
        }
        write!(f, " -> {}", self.outcome)
    }
}

/// The outcome of an event a component refused.
pub(super) const REJECTED: &str = "rejected";

/// The log's words, so that a record of them borrows instead of allocating; a word
/// outside this list is kept as an owned string, so the list is a cache, not a
/// vocabulary: expected records name runner outcomes by [`RunnerOutcome`], and a test
/// checks that every one of them is borrowed here. A `match`, so that the compiler tells
/// the words apart by length before it compares bytes.
pub(crate) fn word(text: &str) -> Cow<'static, str> {
    macro_rules! words {
        ($($w:literal),* $(,)?) => {
            match text {
                $($w => Cow::Borrowed($w),)*
                _ => Cow::Owned(text.to_owned()),
            }
        };
    }
    words!(
        "rejected",
        "applied",
        "runner",
        "process",
        "dispatcher",
        "election",
        "jobmanager",
        "crash",
        "crashed",
        "leadership_granted",
        "leadership_revoked",
        "terminal_signal_delivered",
        "process_service_terminated",
        "forward_callback",
        "close_requested",
        "job_result_store_answered",
        "leadership_confirmed",
        "process_result_completed",
        "terminal_signal",
        "service_terminated",
        "close",
        "completed",
        "leadership_gained",
        "leadership_lost",
        "job_submitted",
        "runner_completed",
        "runner_terminated",
        "jobs_recovered",
        "job_graph_stored",
        "dirty_entry_written",
        "job_graph_removed",
        "entry_marked_clean",
        "discarded",
        "issue",
        "revoke",
        "issued",
        "revoked",
        "queued",
        "checking_leadership",
        "grant_skipped_not_running",
        "grant_skipped_not_leader",
        "job_already_done",
        "flushed_on_grant",
        "process_started",
        "forwarded",
        "dropped_not_leader",
        "forward_scheduled",
        "process_terminated",
        "ignored",
        "cached",
        "cached_checking_leadership",
        "dropped_not_running",
        "stopping",
        "terminated",
        "terminated_not_finished",
        "already_completed",
        "closing",
        "FINISHED",
        "FAILED",
        "CANCELED",
    )
}

impl Visit for LogRecord {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "component" => self.component = word(value),
            "event" => self.event = word(value),
            "outcome" => self.outcome = word(value),
            "status" => self.status = Some(word(value)),
            _ => {}
        }
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        match field.name() {
            "session" => self.session = Some(value),
            "job" => self.job = Some(value),
            "epoch" => self.epoch = Some(value),
            _ => {}
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        // Numbers are unsigned in the log; a negative one is kept as a value no model
        // expects.
        self.record_u64(field, u64::try_from(value).unwrap_or(u64::MAX));
    }

    // State, effects and errors are recorded with `Debug`; they are not compared, so
    // they are not formatted either.
    fn record_debug(&mut self, _: &Field, _: &dyn fmt::Debug) {}
}

/// The subscriber that keeps every event of the thread's current collection.
pub(super) struct Collector;

thread_local! {
    static RECORDS: RefCell<Vec<LogRecord>> = const { RefCell::new(Vec::new()) };
    static COLLECTOR: Dispatch = Dispatch::new(Collector);
    pub(super) static BUFFERS: RefCell<Buffers> = RefCell::new(Buffers::default());
}

/// The expected and the collected log of the binding's current step, kept from step to
/// step so that their room is reused.
#[derive(Default)]
pub(super) struct Buffers {
    pub(super) want: Vec<LogRecord>,
    pub(super) seen: Vec<LogRecord>,
}

impl Subscriber for Collector {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.is_event()
    }
    fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
        span::Id::from_u64(1)
    }
    fn record(&self, _: &span::Id, _: &span::Record<'_>) {}
    fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut record = LogRecord::default();
        event.record(&mut record);
        RECORDS.with_borrow_mut(|records| records.push(record));
    }
    fn enter(&self, _: &span::Id) {}
    fn exit(&self, _: &span::Id) {}
}

/// Runs `f` with a collector as this thread's subscriber and leaves in `out` (cleared
/// first) every event emitted meanwhile, in order. The events go to `out`'s own room,
/// and a collection around this one gets its records back afterwards, so collections
/// nest (an event belongs to the innermost one).
pub(super) fn collect_into<T>(out: &mut Vec<LogRecord>, f: impl FnOnce() -> T) -> T {
    out.clear();
    let outer = RECORDS.replace(std::mem::take(out));
    let value = COLLECTOR.with(|dispatch| tracing::dispatcher::with_default(dispatch, f));
    *out = RECORDS.replace(outer);
    value
}

/// Runs `f` and returns its value with the structured events emitted meanwhile, in
/// order.
pub fn collect<T>(f: impl FnOnce() -> T) -> (T, Vec<LogRecord>) {
    let mut out = Vec::new();
    let value = collect_into(&mut out, f);
    (value, out)
}

/// Realises `action` at `before` on the runtime as the binding's step does, without the
/// log check.
pub fn realise(
    model: &Leadership,
    rt: &mut Runtime,
    before: &State,
    action: &Action,
) -> Result<(), Rejection> {
    apply(rt, before, action, enables(model, before, action))
}

/// [`realise`], returning as well the structured events the runtime emitted meanwhile.
pub fn logged_step(
    model: &Leadership,
    rt: &mut Runtime,
    before: &State,
    action: &Action,
) -> (Result<(), Rejection>, Vec<LogRecord>) {
    collect(|| realise(model, rt, before, action))
}

/// The log check of one step: where `seen`, the structured events the runtime emitted
/// while it realised `action` at `before` and answered `result`, differs from what the
/// model's step implies ([`expected_log`]); empty when they agree. A refusal of an
/// enabled action, or the acceptance of a forbidden one, is a disagreement of its own and
/// is not checked here.
pub fn check_log(
    model: &Leadership,
    before: &State,
    action: &Action,
    result: &Result<(), Rejection>,
    seen: &[LogRecord],
) -> String {
    let enabled = enables(model, before, action);
    if enabled != result.is_ok() {
        return String::new();
    }
    let want = expected_log(model, before, action, !enabled);
    if want == seen {
        String::new()
    } else {
        disagreements(&want, seen)
    }
}

/// One item per difference, by position: the differing fields of records both logs have
/// (`model | runtime`), then records only one of them has.
pub(super) fn disagreements(want: &[LogRecord], seen: &[LogRecord]) -> String {
    let mut out = String::new();
    let item = |out: &mut String, text: fmt::Arguments<'_>| {
        if !out.is_empty() {
            out.push_str("; ");
        }
        let _ = out.write_fmt(text);
    };
    for (i, (w, s)) in want.iter().zip(seen).enumerate() {
        let strings = [
            ("component", &w.component, &s.component),
            ("event", &w.event, &s.event),
            ("outcome", &w.outcome, &s.outcome),
        ];
        for (name, a, b) in strings {
            if a != b {
                item(&mut out, format_args!("log[{i}].{name}: {a} | {b}"));
            }
        }
        if w.status != s.status {
            let show = |v: &Option<Cow<'static, str>>| v.as_deref().unwrap_or("none").to_string();
            item(
                &mut out,
                format_args!("log[{i}].status: {} | {}", show(&w.status), show(&s.status)),
            );
        }
        let numbers = [
            ("session", w.session, s.session),
            ("job", w.job, s.job),
            ("epoch", w.epoch, s.epoch),
        ];
        for (name, a, b) in numbers {
            if a != b {
                let show = |v: Option<u64>| v.map_or("none".to_string(), |v| v.to_string());
                item(
                    &mut out,
                    format_args!("log[{i}].{name}: {} | {}", show(a), show(b)),
                );
            }
        }
    }
    for (i, w) in want.iter().enumerate().skip(seen.len()) {
        item(&mut out, format_args!("log[{i}] missing: {w}"));
    }
    for (i, s) in seen.iter().enumerate().skip(want.len()) {
        item(&mut out, format_args!("log[{i}] unexpected: {s}"));
    }
    out
}

// The names below are the log's vocabulary as conformance states it, from the event
// values the binding builds; the runtime's own naming helpers are what they check.

pub(super) fn runner_event(event: &Event) -> &'static str {
    match event {
        Event::LeadershipGranted { .. } => "leadership_granted",
        Event::LeadershipRevoked => "leadership_revoked",
        Event::ProcessResultCompleted { .. } => "process_result_completed",
        Event::TerminalSignalDelivered { .. } => "terminal_signal_delivered",
        Event::ProcessServiceTerminated { .. } => "process_service_terminated",
        Event::ForwardCallback { .. } => "forward_callback",
        Event::CloseRequested => "close_requested",
        Event::JobResultStoreAnswered { .. } => "job_result_store_answered",
        Event::LeadershipConfirmed { .. } => "leadership_confirmed",
    }
}

pub(super) fn runner_event_session(event: &Event) -> Option<Session> {
    match *event {
        Event::LeadershipGranted { session }
        | Event::ProcessResultCompleted { session, .. }
        | Event::TerminalSignalDelivered { session, .. }
        | Event::ProcessServiceTerminated { session }
        | Event::ForwardCallback { session }
        | Event::LeadershipConfirmed { session, .. } => Some(session),
        Event::LeadershipRevoked | Event::CloseRequested | Event::JobResultStoreAnswered { .. } => {
            None
        }
    }
}

/// A terminal status as the log names it, written out here rather than taken from the
/// runtime's `JobStatus::name`, which is what the check checks.
pub(super) fn status_word(status: JobStatus) -> &'static str {
    match status {
        JobStatus::Finished => "FINISHED",
        JobStatus::Failed => "FAILED",
        JobStatus::Canceled => "CANCELED",
    }
}

pub(super) fn process_event(event: ProcessEvent) -> &'static str {
    match event {
        ProcessEvent::TerminalSignal(_) => "terminal_signal",
        ProcessEvent::Completed(_) => "completed",
        ProcessEvent::Close => "close",
        ProcessEvent::ServiceTerminated => "service_terminated",
    }
}

pub(super) fn dispatcher_event(event: &DispatcherEvent) -> (&'static str, Option<JobId>) {
    match *event {
        DispatcherEvent::LeadershipGained => ("leadership_gained", None),
        DispatcherEvent::JobsRecovered { .. } => ("jobs_recovered", None),
        DispatcherEvent::LeadershipLost => ("leadership_lost", None),
        DispatcherEvent::JobSubmitted { job } => ("job_submitted", Some(job)),
        DispatcherEvent::JobGraphStored { job } => ("job_graph_stored", Some(job)),
        DispatcherEvent::RunnerCompleted { job, .. } => ("runner_completed", Some(job)),
        DispatcherEvent::RunnerTerminated { job } => ("runner_terminated", Some(job)),
        DispatcherEvent::DirtyEntryWritten { job } => ("dirty_entry_written", Some(job)),
        DispatcherEvent::JobGraphRemoved { job } => ("job_graph_removed", Some(job)),
        DispatcherEvent::EntryMarkedClean { job, .. } => ("entry_marked_clean", Some(job)),
    }
}

pub(super) fn runner_record(event: Event, outcome: RunnerOutcome) -> LogRecord {
    runner_log(event, outcome.name())
}

pub(super) fn runner_refusal(event: Event) -> LogRecord {
    runner_log(event, REJECTED)
}

pub(super) fn runner_log(event: Event, outcome: &'static str) -> LogRecord {
    LogRecord {
        component: Cow::Borrowed("runner"),
        event: Cow::Borrowed(runner_event(&event)),
        session: runner_event_session(&event).map(|s| u64::from(s.0)),
        job: Some(u64::from(JOB.0)),
        epoch: None,
        status: match event {
            Event::TerminalSignalDelivered { status, .. } => {
                Some(Cow::Borrowed(status_word(status)))
            }
            _ => None,
        },
        outcome: Cow::Borrowed(outcome),
    }
}

pub(super) fn process_record(
    event: ProcessEvent,
    session: Session,
    outcome: &'static str,
) -> LogRecord {
    LogRecord {
        component: Cow::Borrowed("process"),
        event: Cow::Borrowed(process_event(event)),
        session: Some(u64::from(session.0)),
        job: None,
        epoch: None,
        status: match event {
            ProcessEvent::TerminalSignal(status) => Some(Cow::Borrowed(status_word(status))),
            _ => None,
        },
        outcome: Cow::Borrowed(outcome),
    }
}

pub(super) fn dispatcher_record(
    event: &DispatcherEvent,
    epoch: u8,
    outcome: &'static str,
) -> LogRecord {
    let (name, job) = dispatcher_event(event);
    LogRecord {
        component: Cow::Borrowed("dispatcher"),
        event: Cow::Borrowed(name),
        session: None,
        job: job.map(|j| u64::from(j.0)),
        epoch: Some(u64::from(epoch)),
        status: None,
        outcome: Cow::Borrowed(outcome),
    }
}

pub(super) fn election_record(
    event: &'static str,
    session: u8,
    outcome: &'static str,
) -> LogRecord {
    LogRecord {
        component: Cow::Borrowed("election"),
        event: Cow::Borrowed(event),
        session: Some(u64::from(session)),
        job: None,
        epoch: None,
        status: None,
        outcome: Cow::Borrowed(outcome),
    }
}

/// The stores refuse `request` of the old dispatcher of `epoch`, which gives up on it.
pub(super) fn refused_record(request: DispatcherEffect, epoch: u8) -> LogRecord {
    LogRecord {
        component: Cow::Borrowed("store"),
        event: Cow::Borrowed(
            request
                .request_name()
                .expect("the stores refuse requests only"),
        ),
        session: None,
        job: Some(u64::from(JOB.0)),
        epoch: Some(u64::from(epoch)),
        status: None,
        outcome: Cow::Borrowed("refused"),
    }
}

/// The JobManager process of `epoch` dies ([`Harness::crash_jobmanager`]).
pub(super) fn crash_record(epoch: u8) -> LogRecord {
    LogRecord {
        component: Cow::Borrowed("jobmanager"),
        event: Cow::Borrowed("crash"),
        session: None,
        job: Some(u64::from(JOB.0)),
        epoch: Some(u64::from(epoch)),
        status: None,
        outcome: Cow::Borrowed("crashed"),
    }
}
