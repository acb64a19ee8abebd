//! Trace files read as a stream: memory bounded by the largest state, not the file.
//!
//! A file is read twice. The first pass reads the header (our JSON's `format`, `model`,
//! `design` and `settings`, or ITF's `#meta`) and skips the steps without keeping them;
//! the second hands the steps (`steps`, or ITF's `states`) to the replay one at a time,
//! each decoded only when its turn comes. A single step larger than the cap
//! ([`MAX_STEP_BYTES`] by default) is refused by name, as is a file with no header; an
//! endless file (`/dev/zero`) is refused at its first bytes, which are no JSON.

use std::cell::RefCell;
use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;
use std::rc::Rc;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::{
    itf_header, itf_step, malformed, Header, Replay, Replayer, TraceError, TraceStep, FORMAT,
};
use crate::Binding;

/// The largest single step (one state and its action) a trace may hold.
pub const MAX_STEP_BYTES: u64 = 16 << 20;

/// The two shapes a trace file comes in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Our JSON format (`steps`).
    Json,
    /// The Informal Trace Format (`states`).
    Itf,
}

/// Counts the bytes read since the last [`Budget::reset`] and fails past the cap: one
/// step can take no more memory than that.
#[derive(Clone)]
struct Budget {
    used: Rc<RefCell<u64>>,
    cap: u64,
}

impl Budget {
    fn reset(&self) {
        *self.used.borrow_mut() = 0;
    }
}

struct Capped<R> {
    inner: R,
    budget: Budget,
}

/// The text of the error a step past the cap ends the read with.
const OVER_CAP: &str = "a single step is larger than the cap";

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        let mut used = self.budget.used.borrow_mut();
        *used += n as u64;
        if *used > self.budget.cap {
            return Err(io::Error::other(OVER_CAP));
        }
        Ok(n)
    }
}

/// Where a pass over the file stands, shared with the visitors.
struct Pass<'f> {
    file: &'f str,
    budget: Budget,
    /// The header fields met so far.
    format: Option<String>,
    model: Option<String>,
    design: Option<String>,
    settings: Option<Value>,
    meta: Option<Value>,
    shape: Option<Shape>,
    /// Second pass: takes each step; `Ok(false)` stops the read.
    each: Option<&'f mut dyn FnMut(usize, Value) -> Result<bool, TraceError>>,
    steps: usize,
    /// Why the read stopped early: an error from `each`, or none when `each` said stop.
    stopped: Option<Option<TraceError>>,
}

impl<'f> Pass<'f> {
    /// A pass over `file` with a cap of `cap` bytes a step; `each` takes the steps (the
    /// second pass), or none skips them (the first).
    fn new(
        file: &'f str,
        cap: u64,
        each: Option<&'f mut dyn FnMut(usize, Value) -> Result<bool, TraceError>>,
    ) -> Self {
        Pass {
            file,
            budget: Budget {
                used: Rc::default(),
                cap,
            },
            format: None,
            model: None,
            design: None,
            settings: None,
            meta: None,
            shape: None,
            each,
            steps: 0,
            stopped: None,
        }
    }
}

struct Top<'p, 'f>(&'p mut Pass<'f>);

impl<'de> Visitor<'de> for Top<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a trace file (a JSON object)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let pass = self.0;
        while let Some(key) = map.next_key::<String>()? {
            pass.budget.reset();
            match key.as_str() {
                "format" => pass.format = Some(map.next_value()?),
                "model" => pass.model = Some(map.next_value()?),
                "design" => pass.design = Some(map.next_value()?),
                "settings" => pass.settings = Some(map.next_value()?),
                "#meta" => pass.meta = Some(map.next_value()?),
                "steps" | "states" => {
                    pass.shape = Some(if key == "steps" {
                        Shape::Json
                    } else {
                        Shape::Itf
                    });
                    map.next_value_seed(Steps(&mut *pass))?;
                    if pass.stopped.is_some() {
                        return Err(de::Error::custom("stopped"));
                    }
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for Top<'_, '_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

struct Steps<'p, 'f>(&'p mut Pass<'f>);

impl<'de> Visitor<'de> for Steps<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of steps")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let pass = self.0;
        loop {
            pass.budget.reset();
            match &mut pass.each {
                // First pass: skip, keeping nothing.
                None => {
                    if seq.next_element::<IgnoredAny>()?.is_none() {
                        return Ok(());
                    }
                }
                Some(each) => {
                    let Some(value) = seq.next_element::<Value>()? else {
                        return Ok(());
                    };
                    match each(pass.steps, value) {
                        Ok(true) => {}
                        Ok(false) => {
                            pass.stopped = Some(None);
                            return Ok(());
                        }
                        Err(e) => {
                            pass.stopped = Some(Some(e));
                            return Ok(());
                        }
                    }
                }
            }
            pass.steps += 1;
        }
    }
}

impl<'de> DeserializeSeed<'de> for Steps<'_, '_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

fn run_pass(path: &Path, pass: &mut Pass) -> Result<(), TraceError> {
    let file = pass.file;
    let f = File::open(path).map_err(|e| TraceError::Io {
        file: file.to_string(),
        message: e.to_string(),
    })?;
    let reader = Capped {
        inner: BufReader::new(f),
        budget: pass.budget.clone(),
    };
    let mut de = serde_json::Deserializer::from_reader(reader);
    let result = Top(&mut *pass).deserialize(&mut de);
    match (result, pass.stopped.take()) {
        (_, Some(None)) => Ok(()),
        (_, Some(Some(e))) => Err(e),
        (Ok(()), None) => de.end().map_err(|e| malformed(file, e.to_string())),
        (Err(e), None) => {
            let text = e.to_string();
            Err(if text.contains(OVER_CAP) {
                malformed(
                    file,
                    format!(
                        "a single step is larger than the {} bytes a step may have",
                        pass.budget.cap
                    ),
                )
            } else {
                malformed(file, text)
            })
        }
    }
}

/// Reads the header of the trace file at `path` (the first pass).
pub fn read_header(path: &Path, max_step_bytes: u64) -> Result<(Header, Shape), TraceError> {
    let file = path.display().to_string();
    let mut pass = Pass::new(&file, max_step_bytes, None);
    run_pass(path, &mut pass)?;
    let shape = pass
        .shape
        .ok_or_else(|| malformed(&file, "no `steps` (our format) or `states` (ITF)"))?;
    if pass.steps == 0 {
        return Err(malformed(&file, "no steps"));
    }
    let header = match shape {
        Shape::Itf => {
            let meta = pass
                .meta
                .ok_or_else(|| malformed(&file, "ITF trace without #meta (model and design)"))?;
            itf_header(&file, &meta)?
        }
        Shape::Json => {
            let format = pass.format.unwrap_or_default();
            if format != FORMAT {
                return Err(malformed(
                    &file,
                    format!("format `{format}`, expected `{FORMAT}`"),
                ));
            }
            let missing = |what: &str| malformed(&file, format!("missing field `{what}`"));
            Header {
                file: file.clone(),
                model: pass.model.ok_or_else(|| missing("model"))?,
                design: pass.design.ok_or_else(|| missing("design"))?,
                settings: match pass.settings {
                    None => Default::default(),
                    Some(v) => serde_json::from_value(v)
                        .map_err(|e| malformed(&file, format!("settings: {e}")))?,
                },
            }
        }
    };
    Ok((header, shape))
}

/// Hands the steps of the trace file at `path` to `each` one at a time (the second
/// pass), each decoded into our shapes; `each` returns whether to go on.
pub fn for_each_step(
    path: &Path,
    shape: Shape,
    max_step_bytes: u64,
    each: &mut dyn FnMut(usize, TraceStep) -> Result<bool, TraceError>,
) -> Result<(), TraceError> {
    let file = path.display().to_string();
    let mut decode = |i: usize, value: Value| -> Result<bool, TraceError> {
        let step = match shape {
            Shape::Itf => itf_step(&file, i, &value)?,
            Shape::Json => serde_json::from_value(value).map_err(|e| TraceError::Step {
                file: file.clone(),
                step: i,
                problem: e.to_string(),
            })?,
        };
        each(i, step)
    };
    let mut pass = Pass::new(&file, max_step_bytes, Some(&mut decode));
    run_pass(path, &mut pass)
}

/// The model a trace file is of, from its header.
pub fn model_of(path: &Path) -> Result<String, TraceError> {
    Ok(read_header(path, MAX_STEP_BYTES)?.0.model)
}

/// Replays the trace file at `path` against the runtime of `B`, reading it as a stream.
pub fn replay_file<B: Binding>(path: &Path) -> Result<Replay, TraceError> {
    replay_file_capped::<B>(path, MAX_STEP_BYTES)
}

/// [`replay_file`] with a cap of `max_step_bytes` on a single step.
pub fn replay_file_capped<B: Binding>(
    path: &Path,
    max_step_bytes: u64,
) -> Result<Replay, TraceError> {
    let (header, shape) = read_header(path, max_step_bytes)?;
    let mut replayer: Option<Replayer<B>> = None;
    for_each_step(
        path,
        shape,
        max_step_bytes,
        &mut |i, step| match &mut replayer {
            None => {
                replayer = Some(Replayer::start(&header, &step)?);
                Ok(true)
            }
            Some(r) => r.step(i, &step),
        },
    )?;
    let replayer = replayer.ok_or_else(|| malformed(&header.file, "no steps"))?;
    Ok(replayer.finish())
}
