//! Every transition of the leadership machines (FLINK-39704, apache/flink PR 28201)
//! emits exactly one structured debug event naming the component, the event, the
//! session where one applies, and the outcome.

use std::sync::{Arc, Mutex};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event as TraceEvent, Metadata, Subscriber};

use steadfast::leadership::{Event, JobId, JobStatus, Runner, Session};

type Fields = Vec<(String, String)>;

/// Collects the fields of every event.
#[derive(Clone, Default)]
struct Collector(Arc<Mutex<Vec<Fields>>>);

struct FieldVisitor<'a>(&'a mut Fields);

impl Visit for FieldVisitor<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0
            .push((field.name().to_string(), format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push((field.name().to_string(), value.to_string()));
    }
}

impl Subscriber for Collector {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &TraceEvent<'_>) {
        let mut fields = Vec::new();
        event.record(&mut FieldVisitor(&mut fields));
        fields.push(("level".into(), event.metadata().level().to_string()));
        self.0.lock().unwrap().push(fields);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

fn get<'a>(fields: &'a Fields, name: &str) -> Option<&'a str> {
    fields
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

#[test]
fn each_runner_transition_emits_one_structured_debug_event() {
    let collector = Collector::default();
    let seen = collector.0.clone();
    let s = Session(1);
    let events = [
        Event::LeadershipGranted { session: s },
        Event::JobResultStoreAnswered { has_entry: false },
        Event::LeadershipConfirmed {
            session: s,
            held: true,
        },
        Event::LeadershipRevoked,
        Event::TerminalSignalDelivered {
            session: s,
            status: JobStatus::Failed,
        },
        Event::ProcessServiceTerminated { session: s },
        Event::ForwardCallback { session: s },
        Event::LeadershipConfirmed {
            session: s,
            held: false,
        },
        Event::CloseRequested,
        Event::CloseRequested, // refused: also traced
    ];
    tracing::subscriber::with_default(collector, || {
        let mut r = Runner::new(JobId(1));
        for event in events {
            let _ = r.handle(event);
        }
    });
    let seen = seen.lock().unwrap();
    let runner: Vec<&Fields> = seen
        .iter()
        .filter(|f| get(f, "component") == Some("runner"))
        .collect();
    assert_eq!(runner.len(), events.len());
    for (fields, event) in runner.iter().zip(events) {
        assert_eq!(get(fields, "event"), Some(event.name()));
        assert_eq!(get(fields, "level"), Some("DEBUG"));
        assert_eq!(
            get(fields, "session"),
            event.session().map(|s| s.0.to_string()).as_deref()
        );
        assert!(get(fields, "outcome").is_some(), "{fields:?}");
    }
    let outcomes: Vec<&str> = runner.iter().map(|f| get(f, "outcome").unwrap()).collect();
    assert_eq!(
        outcomes,
        vec![
            "queued",
            "checking_leadership",
            "process_started",
            "queued",
            "forward_scheduled",
            "process_terminated",
            "cached_checking_leadership",
            "dropped_not_leader",
            "terminated",
            "rejected",
        ]
    );
    // The process machine traces its own transitions: close, signal, termination.
    let process = seen
        .iter()
        .filter(|f| get(f, "component") == Some("process"))
        .count();
    assert_eq!(process, 3);
}
