//! Trace files read once, as a stream: memory bounded by the largest step, not the file.
//!
//! One pass reads the header (our JSON's `format`, `model`, `design` and `settings`, or
//! ITF's `#meta`) and hands the steps (`steps`, or ITF's `states`) to the replay one at
//! a time, each decoded only when its turn comes. The file is opened once and never
//! rewound, so a pipe or a FIFO (`/dev/stdin`) reads as a file does. JSON objects are
//! unordered: steps that come before the header is complete are kept until the object
//! ends, up to [`MAX_EARLY_BYTES`].
//!
//! A file is read as other readers would read it, or refused:
//! - a key given twice, at any depth, is refused: `serde_json::Value` keeps the last
//!   one, and a streaming reader would see both;
//! - an ITF file is held to the structure of Apalache's ADR-015 and the `itf` crate:
//!   `#meta` an object, `vars` (and `params`, if given) a list of text, `loop` a
//!   number, `states` a list of objects, each with a `#meta` object if any, and each
//!   with every variable of `vars`;
//! - whitespace after the trace is read without counting against the cap on a step.
//!
//! A single step larger than the cap ([`MAX_STEP_BYTES`] by default) is refused by name,
//! as is a file with no header; an endless file (`/dev/zero`) is refused at its first
//! bytes, which are no JSON.

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;
use std::rc::Rc;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use steadfast_model::quote::{quote, shorten};

use super::{
    itf_header, itf_step, malformed, Header, Replay, Replayer, TraceError, TraceStep, FORMAT,
};
use crate::Binding;

/// The largest single step (one state and its action) a trace may hold.
pub const MAX_STEP_BYTES: u64 = 16 << 20;

/// The most bytes of steps kept while the header is incomplete.
pub const MAX_EARLY_BYTES: u64 = 64 << 20;

/// The most keys the top level of a trace file may have: ours has five, ITF's four.
const MAX_TOP_KEYS: usize = 64;

/// The two shapes a trace file comes in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Our JSON format (`steps`).
    Json,
    /// The Informal Trace Format (`states`).
    Itf,
}

/// A replay in progress, whatever its model: what [`replay_reader`] hands the steps to.
pub trait Sink {
    /// Takes step `i` (1 for the first action); whether the replay goes on.
    fn step(&mut self, i: usize, step: &TraceStep) -> Result<bool, TraceError>;
    /// The replay's report.
    fn finish(self: Box<Self>) -> Replay;
}

impl<B: Binding> Sink for Replayer<B> {
    fn step(&mut self, i: usize, step: &TraceStep) -> Result<bool, TraceError> {
        Replayer::step(self, i, step)
    }

    fn finish(self: Box<Self>) -> Replay {
        Replayer::finish(*self)
    }
}

/// Starts the replay a header names, at the trace's first step.
pub type Start<'s> = dyn FnMut(&Header, &TraceStep) -> Result<Box<dyn Sink>, TraceError> + 's;

/// Counts the bytes read since the last [`Budget::reset`] and fails past the cap: one
/// step can take no more memory than that.
#[derive(Clone)]
struct Budget {
    used: Rc<Cell<u64>>,
    cap: Rc<Cell<u64>>,
}

impl Budget {
    fn new(cap: u64) -> Self {
        Budget {
            used: Rc::default(),
            cap: Rc::new(Cell::new(cap)),
        }
    }

    fn reset(&self) {
        self.used.set(0);
    }

    /// No cap from here on: what follows the trace is whitespace or an error.
    fn lift(&self) {
        self.cap.set(u64::MAX);
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
        let used = self.budget.used.get().saturating_add(n as u64);
        self.budget.used.set(used);
        if used > self.budget.cap.get() {
            return Err(io::Error::other(OVER_CAP));
        }
        Ok(n)
    }
}

/// Takes each step with the header; returns whether to go on.
type Each<'f> = dyn FnMut(&Header, usize, TraceStep) -> Result<bool, TraceError> + 'f;

/// The variables of an ITF file's states: those of the first state, each with the
/// first later state that lacks it. Memory: the first state's names, whatever the file.
#[derive(Default)]
struct Vars {
    first: Option<BTreeMap<String, Option<usize>>>,
}

impl Vars {
    fn note(&mut self, i: usize, state: &Map<String, Value>) {
        let names = state.keys().filter(|k| *k != "#meta");
        match &mut self.first {
            None => self.first = Some(names.map(|k| (k.clone(), None)).collect()),
            Some(first) => {
                for (name, lacking) in first.iter_mut() {
                    if lacking.is_none() && !state.contains_key(name) {
                        *lacking = Some(i);
                    }
                }
            }
        }
    }

    /// The first state without `var`, if any.
    fn lacking(&self, var: &str) -> Option<usize> {
        let first = self.first.as_ref()?;
        match first.get(var) {
            None => Some(0),
            Some(lacking) => *lacking,
        }
    }
}

/// Where the pass over the file stands, shared with the visitors.
struct Pass<'f> {
    file: &'f str,
    budget: Budget,
    /// The header fields met so far, by key.
    fields: BTreeMap<String, Value>,
    /// Every top-level key met, to refuse one given twice.
    keys: BTreeSet<String>,
    shape: Option<Shape>,
    /// The header, once complete.
    header: Option<Header>,
    /// Steps read before the header was complete, and their bytes.
    early: Vec<TraceStep>,
    early_bytes: u64,
    vars: Vars,
    each: &'f mut Each<'f>,
    steps: usize,
    /// The taker said stop: the remaining steps are read, not decoded.
    done: bool,
    /// Why the read stopped: the error is the file's, not the JSON reader's.
    failed: Option<TraceError>,
}

impl<'f> Pass<'f> {
    fn malformed(&self, problem: impl Into<String>) -> TraceError {
        malformed(self.file, problem)
    }

    /// Keeps `e` as the reason the read stops, for an error of the JSON reader's type.
    fn fail<E: de::Error>(&mut self, e: TraceError) -> E {
        self.failed = Some(e);
        E::custom("stopped")
    }

    /// A top-level key, refused when given twice or past [`MAX_TOP_KEYS`].
    fn key(&mut self, key: &str) -> Result<(), TraceError> {
        if self.keys.contains(key) {
            return Err(self.malformed(format!("duplicate key {}", quote(key))));
        }
        if self.keys.len() == MAX_TOP_KEYS {
            return Err(self.malformed(format!("more than {MAX_TOP_KEYS} top-level keys")));
        }
        self.keys.insert(key.to_string());
        Ok(())
    }

    /// A header field, checked for its shape where ITF prescribes one.
    fn field(&mut self, key: &str, value: Value) -> Result<(), TraceError> {
        let list_of_text = |v: &Value| v.as_array().is_some_and(|a| a.iter().all(Value::is_string));
        let fits = match key {
            "#meta" => value.is_object(),
            "vars" | "params" => list_of_text(&value),
            "loop" => value.is_u64(),
            _ => true,
        };
        if !fits {
            let shape = match key {
                "#meta" => "an object",
                "loop" => "a state number",
                _ => "a list of text",
            };
            return Err(self.malformed(format!("`{key}` is not {shape}")));
        }
        self.fields.insert(key.to_string(), value);
        Ok(())
    }

    /// Whether every header field the shape has can be read: the steps may be replayed
    /// as they come.
    fn header_complete(&self) -> bool {
        let has = |k: &str| self.fields.contains_key(k);
        match self.shape {
            Some(Shape::Itf) => has("#meta"),
            Some(Shape::Json) => ["format", "model", "design", "settings"]
                .iter()
                .all(|k| has(k)),
            None => false,
        }
    }

    /// The header of the fields read, checked.
    fn header(&self) -> Result<Header, TraceError> {
        let file = self.file;
        if self.shape == Some(Shape::Itf) {
            let meta = self
                .fields
                .get("#meta")
                .ok_or_else(|| self.malformed("ITF trace without #meta (model and design)"))?;
            return itf_header(file, meta);
        }
        let text = |key: &str| match self.fields.get(key) {
            None => Err(self.malformed(format!("missing field `{key}`"))),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(self.malformed(format!("`{key}` is not text"))),
        };
        let format = text("format").unwrap_or_default();
        if format != FORMAT {
            return Err(self.malformed(format!("format {}, expected `{FORMAT}`", quote(&format))));
        }
        Ok(Header {
            file: file.to_string(),
            model: text("model")?,
            design: text("design")?,
            settings: match self.fields.get("settings") {
                None => Default::default(),
                Some(v) => serde_json::from_value(v.clone()).map_err(|e| {
                    self.malformed(format!("settings: {}", shorten(&e.to_string())))
                })?,
            },
        })
    }

    /// The steps begin: their shape, and the header if it is complete.
    fn begin_steps(&mut self, shape: Shape) -> Result<(), TraceError> {
        if self.shape.is_some() {
            return Err(self.malformed("both `steps` (our format) and `states` (ITF)"));
        }
        self.shape = Some(shape);
        if self.header_complete() {
            self.header = Some(self.header()?);
        }
        Ok(())
    }

    /// Step `i` in our shapes, its ITF structure checked.
    fn decode(&mut self, i: usize, value: Value) -> Result<TraceStep, TraceError> {
        if self.shape == Some(Shape::Json) {
            return serde_json::from_value(value).map_err(|e| TraceError::Step {
                file: self.file.to_string(),
                step: i,
                problem: shorten(&e.to_string()),
            });
        }
        let Some(state) = value.as_object() else {
            return Err(self.malformed(format!("state {i} is not a record")));
        };
        if state.get("#meta").is_some_and(|m| !m.is_object()) {
            return Err(self.malformed(format!("state {i}: `#meta` is not an object")));
        }
        // With `vars` read (Quint writes it first) each state is checked as it comes;
        // else what the states have is noted and checked against `vars` at the end.
        if let Some(Value::Array(vars)) = self.fields.get("vars") {
            let names = vars.iter().filter_map(Value::as_str);
            if let Some(var) = names.into_iter().find(|v| !state.contains_key(*v)) {
                return Err(self.malformed(format!("state {i} has no variable {}", quote(var))));
            }
        }
        self.vars.note(i, state);
        itf_step(self.file, i, &value)
    }

    /// Takes the next step: to the taker once the header is known, else kept.
    fn take(&mut self, value: Value) -> Result<(), TraceError> {
        let i = self.steps;
        self.steps += 1;
        let step = self.decode(i, value)?;
        match &self.header {
            Some(header) => self.done = !(self.each)(header, i, step)?,
            None => {
                self.early_bytes += self.budget.used.get();
                if self.early_bytes > MAX_EARLY_BYTES {
                    return Err(self.malformed(format!(
                        "more than {MAX_EARLY_BYTES} bytes of steps before the header \
                         (model, design, settings) is complete; put the header first"
                    )));
                }
                self.early.push(step);
            }
        }
        Ok(())
    }

    /// The checks only the whole file allows, and the steps kept for the header.
    fn end(&mut self) -> Result<(), TraceError> {
        let shape = self
            .shape
            .ok_or_else(|| self.malformed("no `steps` (our format) or `states` (ITF)"))?;
        if self.steps == 0 {
            return Err(self.malformed("no steps"));
        }
        if shape == Shape::Itf {
            self.itf_vars()?;
        }
        if self.header.is_none() {
            let header = self.header()?;
            for (i, step) in std::mem::take(&mut self.early).into_iter().enumerate() {
                if !(self.each)(&header, i, step)? {
                    break;
                }
            }
        }
        Ok(())
    }

    /// Every state has every variable `vars` names.
    fn itf_vars(&self) -> Result<(), TraceError> {
        let Some(Value::Array(vars)) = self.fields.get("vars") else {
            return Err(self.malformed("ITF trace without `vars`"));
        };
        for var in vars.iter().filter_map(Value::as_str) {
            if let Some(i) = self.vars.lacking(var) {
                return Err(self.malformed(format!("state {i} has no variable {}", quote(var))));
            }
        }
        Ok(())
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
        loop {
            pass.budget.reset();
            let Some(key) = map.next_key::<String>()? else {
                return Ok(());
            };
            pass.key(&key).map_err(|e| pass.fail(e))?;
            pass.budget.reset();
            match key.as_str() {
                "steps" | "states" => {
                    let shape = if key == "steps" {
                        Shape::Json
                    } else {
                        Shape::Itf
                    };
                    pass.begin_steps(shape).map_err(|e| pass.fail(e))?;
                    map.next_value_seed(Steps(&mut *pass))?;
                }
                "format" | "model" | "design" | "settings" | "#meta" | "vars" | "params"
                | "loop" => {
                    let value = map.next_value_seed(Strict)?;
                    pass.field(&key, value).map_err(|e| pass.fail(e))?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
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
            if pass.done {
                // The replay has stopped; the rest is read for its syntax only.
                if seq.next_element::<IgnoredAny>()?.is_none() {
                    return Ok(());
                }
                continue;
            }
            let Some(value) = seq.next_element_seed(Strict)? else {
                return Ok(());
            };
            pass.take(value).map_err(|e| pass.fail(e))?;
        }
    }
}

impl<'de> DeserializeSeed<'de> for Steps<'_, '_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

/// A JSON value as `serde_json::Value` reads it, but with a key given twice in an
/// object refused instead of the last one kept.
struct Strict;

impl<'de> DeserializeSeed<'de> for Strict {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(v.into())
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(v.into())
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(Strict)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Strict)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut fields = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if fields.contains_key(&key) {
                return Err(de::Error::custom(format!("duplicate key {}", quote(&key))));
            }
            let value = map.next_value_seed(Strict)?;
            fields.insert(key, value);
        }
        Ok(Value::Object(fields))
    }
}

/// Reads the trace of `reader` once, handing each step to `each` with the header; `file`
/// names it in errors.
fn read(
    file: &str,
    reader: impl Read,
    max_step_bytes: u64,
    each: &mut Each,
) -> Result<(), TraceError> {
    let budget = Budget::new(max_step_bytes);
    let reader = Capped {
        inner: BufReader::new(reader),
        budget: budget.clone(),
    };
    let mut de = serde_json::Deserializer::from_reader(reader);
    let mut pass = Pass {
        file,
        budget: budget.clone(),
        fields: BTreeMap::new(),
        keys: BTreeSet::new(),
        shape: None,
        header: None,
        early: Vec::new(),
        early_bytes: 0,
        vars: Vars::default(),
        each,
        steps: 0,
        done: false,
        failed: None,
    };
    let result = Top(&mut pass).deserialize(&mut de);
    if let Some(e) = pass.failed.take() {
        return Err(e);
    }
    let problem = |e: serde_json::Error| {
        let text = e.to_string();
        if text.contains(OVER_CAP) {
            format!("a single step is larger than the {max_step_bytes} bytes a step may have")
        } else {
            shorten(&text)
        }
    };
    result.map_err(|e| malformed(file, problem(e)))?;
    // Whitespace after the trace is no step: read it without the cap.
    budget.lift();
    de.end().map_err(|e| malformed(file, problem(e)))?;
    pass.end()
}

/// Replays the trace `reader` holds, read once; `start` starts the replay the header
/// names, at the first step; `file` names the trace in errors.
pub fn replay_reader(
    file: &str,
    reader: impl Read,
    max_step_bytes: u64,
    start: &mut Start,
) -> Result<Replay, TraceError> {
    let mut sink: Option<Box<dyn Sink>> = None;
    read(
        file,
        reader,
        max_step_bytes,
        &mut |header, i, step| match &mut sink {
            None => {
                sink = Some(start(header, &step)?);
                Ok(true)
            }
            Some(s) => s.step(i, &step),
        },
    )?;
    let sink = sink.ok_or_else(|| malformed(file, "no steps"))?;
    Ok(sink.finish())
}

/// Replays the trace file at `path`, opened once (a pipe or FIFO does as well as a
/// file), with a cap of `max_step_bytes` on a single step.
pub fn replay_path(
    path: &Path,
    max_step_bytes: u64,
    start: &mut Start,
) -> Result<Replay, TraceError> {
    let file = path.display().to_string();
    let f = File::open(path).map_err(|e| TraceError::Io {
        file: file.clone(),
        message: e.to_string(),
    })?;
    replay_reader(&file, f, max_step_bytes, start)
}

/// Replays the trace file at `path` against the runtime of `B`, reading it as a stream.
pub fn replay_file<B: Binding + 'static>(path: &Path) -> Result<Replay, TraceError> {
    replay_file_capped::<B>(path, MAX_STEP_BYTES)
}

/// [`replay_file`] with a cap of `max_step_bytes` on a single step.
pub fn replay_file_capped<B: Binding + 'static>(
    path: &Path,
    max_step_bytes: u64,
) -> Result<Replay, TraceError> {
    replay_path(path, max_step_bytes, &mut |header, first| {
        Ok(Box::new(Replayer::<B>::start(header, first)?))
    })
}
