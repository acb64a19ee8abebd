//! The production log: one NDJSON file per run, one line per `tracing` event, written by
//! `tracing-subscriber`'s JSON formatter. The timestamp is the run's virtual clock in
//! milliseconds, so a seed replays the file byte for byte; the `job` span that the driver
//! opens around a job's machines names the job of events (a process's) that do not
//! carry it themselves.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};

use tracing::Dispatch;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::FormatTime;
use tracing_subscriber::fmt::MakeWriter;

/// The virtual clock of a run: milliseconds since it started.
#[derive(Clone, Copy, Debug)]
struct VirtualClock(tokio::time::Instant);

impl FormatTime for VirtualClock {
    fn format_time(&self, w: &mut Writer<'_>) -> std::fmt::Result {
        write!(w, "{}", self.0.elapsed().as_millis())
    }
}

/// A file the formatter writes to; the first write error is kept, because the formatter
/// itself drops errors, and a log with a hole must not pass for a whole one.
#[derive(Clone)]
pub struct LogFile {
    inner: Arc<Mutex<Sink>>,
}

struct Sink {
    out: BufWriter<File>,
    error: Option<io::Error>,
    lines: u64,
}

/// A writer for one event.
pub struct LineWriter<'a> {
    file: &'a LogFile,
}

impl Write for LineWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut sink = self.file.inner.lock().unwrap_or_else(|e| e.into_inner());
        if sink.error.is_some() {
            return Ok(buf.len());
        }
        if let Err(e) = sink.out.write_all(buf) {
            sink.error = Some(e);
        }
        sink.lines += buf.iter().filter(|b| **b == b'\n').count() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for LogFile {
    type Writer = LineWriter<'a>;
    fn make_writer(&'a self) -> Self::Writer {
        LineWriter { file: self }
    }
}

impl LogFile {
    /// Creates (truncates) the log file at `path`.
    pub fn create(path: &Path) -> io::Result<LogFile> {
        let file = File::create(path)?;
        Ok(LogFile {
            inner: Arc::new(Mutex::new(Sink {
                out: BufWriter::new(file),
                error: None,
                lines: 0,
            })),
        })
    }

    /// A subscriber that writes every event at debug level and above to this file, with
    /// the run's virtual clock; it must be created inside the run's runtime.
    pub fn dispatch(&self) -> Dispatch {
        let subscriber = tracing_subscriber::fmt()
            .json()
            .with_max_level(tracing::Level::DEBUG)
            .with_current_span(true)
            .with_span_list(false)
            .with_timer(VirtualClock(tokio::time::Instant::now()))
            .with_writer(self.clone())
            .finish();
        Dispatch::new(subscriber)
    }

    /// Flushes the file and returns how many lines it holds, or the first error any
    /// write met.
    pub fn finish(&self) -> io::Result<u64> {
        let mut sink = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = sink.error.take() {
            return Err(e);
        }
        sink.out.flush()?;
        sink.out.get_ref().sync_data()?;
        Ok(sink.lines)
    }
}
