//! The log lines of epoch fencing: one `durable.driver fence` per fenced partition, at
//! its epoch and offset, and one `durable.store fenced_record` warning per zombie a
//! rebuild skips. Alone in its binary (see `support/zombie.rs`).

#[path = "support/zombie.rs"]
mod zombie;
use zombie::*;

/// Collects the fields of every event, as `name=value` text.
#[derive(Clone, Default)]
struct Collector(std::sync::Arc<std::sync::Mutex<Vec<Vec<String>>>>);

struct Fields<'a>(&'a mut Vec<String>);

impl tracing::field::Visit for Fields<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.push(format!("{}={value:?}", field.name()));
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.push(format!("{}={value}", field.name()));
    }
}

impl tracing::Subscriber for Collector {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut fields = vec![format!("level={}", event.metadata().level())];
        event.record(&mut Fields(&mut fields));
        self.0.lock().unwrap().push(fields);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[test]
fn each_fence_and_each_skipped_zombie_is_logged() {
    let collector = Collector::default();
    let seen = collector.0.clone();
    tracing::subscriber::with_default(collector, || zombie_run(true));
    let events = seen.lock().unwrap().clone();
    let having = |wanted: &[&str]| -> Vec<Vec<String>> {
        events
            .iter()
            .filter(|e| wanted.iter().all(|w| e.iter().any(|f| f == w)))
            .cloned()
            .collect()
    };
    // One fence per restore (one partition), at its epoch and offset.
    for (epoch, offset) in [(2, 0), (3, 4)] {
        let fence = having(&[
            "component=durable.driver",
            "event=fence",
            "partition=0",
            &format!("offset={offset}"),
            &format!("epoch={epoch}"),
        ]);
        assert_eq!(fence.len(), 1, "fence of epoch {epoch}: {events:?}");
    }
    let skipped = having(&[
        "level=WARN",
        "component=durable.store",
        "event=fenced_record",
        "partition=0",
        "offset=3",
        "epoch=1",
        "fence=2",
    ]);
    assert_eq!(skipped.len(), 1, "{events:?}");
    let starts = having(&["component=durable.operator", "event=start", "epoch=3"]);
    assert_eq!(starts.len(), 1, "{events:?}");
}
