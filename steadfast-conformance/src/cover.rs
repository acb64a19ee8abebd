//! Transition coverage: every transition of the reachable state graph, replayed against
//! the runtime.
//!
//! The trace set "one path to every unique state, extended by every enabled action"
//! covers every transition; replaying its traces one by one repeats their shared
//! prefixes. Here the same set is replayed as a prefix tree: a breadth-first walk of the
//! state graph keeps the runtime of each frontier state beside it, and each transition
//! runs once, on a clone of the runtime at its source state (the last transition out of
//! a state takes that runtime itself, which nothing needs afterwards). At every visited
//! state the converse is checked too: each probe (an event the model forbids there) must
//! be refused by the runtime without a change to its projection.
//!
//! The walk goes level by level, so a divergence is reported on a shortest trace; on
//! several threads ([`cover_threads`]) each level is shared out and merged back in its
//! order, so the result is what one thread finds.
//!
//! A model's `Hash` says which states are one (the durable model leaves a ghost counter
//! out of it, as stateright's fingerprints do). Visited states are therefore keyed by the
//! exact bytes their `Hash` writes ([`HashBytes`]): the same identity as a fingerprint,
//! without the chance of two states sharing one.

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::time::Instant;

use serde::Serialize;
use stateright::Model;
use steadfast_model::Spec;

use crate::{compare, Binding, Divergence, Problem, Scratch};

/// What a coverage run did.
#[derive(Clone, Debug, Serialize)]
pub struct Coverage {
    /// Model name.
    pub model: &'static str,
    /// Design name.
    pub design: &'static str,
    /// Unique states visited.
    pub unique_states: usize,
    /// Transitions replayed against the runtime: one trace of the trace set each.
    pub transitions: usize,
    /// Runtime steps executed (transitions plus refused probes).
    pub steps: usize,
    /// Forbidden events offered to the runtime and refused.
    pub probes: usize,
    /// Transitions per action kind.
    pub kinds: BTreeMap<String, usize>,
    /// Wall time, seconds.
    pub seconds: f64,
}

impl Coverage {
    /// Runtime steps per second.
    pub fn steps_per_second(&self) -> f64 {
        self.steps as f64 / self.seconds.max(1e-9)
    }
}

/// A multiply-rotate hasher for in-process tables keyed by model states and actions:
/// far cheaper than SipHash, with a final mix so that the high bits (which the table
/// uses to pick buckets) depend on every input word.
#[derive(Default, Clone, Copy)]
pub struct FastHasher(u64);

const SEED: u64 = 0x9e37_79b9_7f4a_7c15;

impl FastHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FastHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().expect("eight bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(last) ^ ((rest.len() as u64) << 59));
        }
    }
    #[inline]
    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }
    #[inline]
    fn write_u16(&mut self, n: u16) {
        self.add(u64::from(n));
    }
    #[inline]
    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }
    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }
    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        // The MurmurHash3 64-bit finaliser.
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}

/// A hash map with [`FastHasher`].
pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

/// A "hasher" that keeps every byte a value's `Hash` writes: two values write the same
/// bytes exactly when every hasher must treat them alike.
#[derive(Default)]
pub struct HashBytes(Vec<u8>);

impl HashBytes {
    /// The bytes `value`'s `Hash` writes, in `self` (cleared first).
    pub fn of<T: Hash>(&mut self, value: &T) -> &[u8] {
        self.0.clear();
        value.hash(self);
        &self.0
    }
}

impl Hasher for HashBytes {
    fn write(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }
    fn finish(&self) -> u64 {
        let mut h = FastHasher::default();
        h.write(&self.0);
        h.finish()
    }
}

/// How each visited state was first reached, by index: its parent's index and the
/// action taken (`None` for an initial state). Rebuilds a failing trace.
type Reached<A> = Vec<Option<(u32, A)>>;

fn path_to<A: std::fmt::Debug>(reached: &Reached<A>, mut at: u32) -> Vec<String> {
    let mut path = Vec::new();
    while let Some((parent, action)) = &reached[at as usize] {
        path.push(format!("{action:?}"));
        at = *parent;
    }
    path.reverse();
    path
}

fn fail<A: std::fmt::Debug>(
    mut trace: Vec<String>,
    action: &A,
    problem: Problem,
    runtime: String,
) -> Box<Divergence> {
    trace.push(format!("{action:?}"));
    Box::new(Divergence {
        step: trace.len(),
        action: format!("{action:?}"),
        trace,
        problem,
        runtime,
    })
}

/// Replays every transition reachable in `model` against the runtime of binding `B`,
/// on one thread.
pub fn cover<B: Binding>(model: &B::Model) -> Result<Coverage, Box<Divergence>> {
    cover_threads::<B>(model, 1)
}

/// [`cover`] on `threads` threads. The walk goes level by level (every state at one
/// distance from the initial states, then the next); each level's states are split
/// into contiguous runs, one per thread, and the successors are merged in the level's
/// order. States are therefore numbered, first reached and reported exactly as on one
/// thread: the same counts, and on a divergence the same (shortest, first) trace.
pub fn cover_threads<B: Binding>(
    model: &B::Model,
    threads: usize,
) -> Result<Coverage, Box<Divergence>> {
    cover_with_progress::<B>(model, threads, &mut |_: &Progress| {})
}

/// How far a [`cover_with_progress`] run got, reported after each level of the walk.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// Distance from the initial states of the level just finished.
    pub level: usize,
    /// Unique states reached so far.
    pub unique_states: usize,
    /// Transitions replayed so far.
    pub transitions: usize,
    /// Runtime steps so far (transitions and refused probes).
    pub steps: usize,
    /// Seconds since the run started.
    pub seconds: f64,
}

/// [`cover_threads`], calling `progress` after each level of the walk.
pub fn cover_with_progress<B: Binding>(
    model: &B::Model,
    threads: usize,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Coverage, Box<Divergence>> {
    let started = Instant::now();
    let mut depth = 0;
    let mut coverage = Coverage {
        model: <B::Model as Spec>::NAME,
        design: model.design_name(),
        unique_states: 0,
        transitions: 0,
        steps: 0,
        probes: 0,
        kinds: BTreeMap::new(),
        seconds: 0.0,
    };
    let mut index: FastMap<Box<[u8]>, u32> = FastMap::default();
    let mut reached: Reached<B::Action> = Vec::new();
    let mut level = Vec::new();
    admit_initial::<B>(model, &mut index, &mut reached, &mut level)?;
    let threads = threads.max(1);
    let mut kinds: Vec<(String, usize)> = Vec::new();
    while !level.is_empty() {
        if depth > 0 {
            progress(&Progress {
                level: depth,
                unique_states: reached.len(),
                transitions: coverage.transitions,
                steps: coverage.steps,
                seconds: started.elapsed().as_secs_f64(),
            });
        }
        depth += 1;
        if threads == 1 || level.len() < 2 * threads {
            // One thread numbers each new state as it meets it, as a plain breadth-first
            // walk does, so a level's duplicate successors are dropped at once.
            let mut next = Vec::new();
            let mut sink = Inline::<B> {
                index: &mut index,
                reached: &mut reached,
                next: &mut next,
            };
            let run = Visits::of::<B>(model, level, &mut sink);
            level = next;
            run.add_to(&mut coverage, &mut kinds);
            if let Some(divergence) = run.divergence {
                return Err(divergence);
            }
            continue;
        }
        let runs = visit_in_parallel::<B>(model, level, threads, &index, &reached);
        level = Vec::new();
        let mut queue = Inline::<B> {
            index: &mut index,
            reached: &mut reached,
            next: &mut level,
        };
        for (run, found) in runs {
            run.add_to(&mut coverage, &mut kinds);
            // Successors in the order one thread would have reached them.
            for (from, action, next, runtime, key) in found {
                queue.admit(Some((from, action)), next, runtime, key);
            }
            // A run stops at its first divergence; the runs before it found none.
            if let Some(divergence) = run.divergence {
                return Err(divergence);
            }
        }
    }
    coverage.kinds = kinds.into_iter().collect();
    coverage.unique_states = reached.len();
    coverage.seconds = started.elapsed().as_secs_f64();
    Ok(coverage)
}

/// Compares each initial state of `model` with its runtime as started, and queues it in
/// `level`, numbered in `index` and `reached`.
fn admit_initial<B: Binding>(
    model: &B::Model,
    index: &mut FastMap<Box<[u8]>, u32>,
    reached: &mut Reached<B::Action>,
    level: &mut Vec<(B::State, B::Runtime, u32)>,
) -> Result<(), Box<Divergence>> {
    let mut bytes = HashBytes::default();
    for init in model.init_states() {
        let runtime = B::start(model, &init);
        compare::<B>(model, &init, &runtime).map_err(|lines| {
            Box::new(Divergence {
                trace: Vec::new(),
                step: 0,
                action: "(initial state)".into(),
                problem: Problem::Projection(lines),
                runtime: B::describe(&runtime),
            })
        })?;
        let key = bytes.of(&init);
        Inline::<B> {
            index: &mut *index,
            reached: &mut *reached,
            next: &mut *level,
        }
        .admit(None, init, runtime, key);
    }
    Ok(())
}

/// Visits `level`'s states on `threads` threads, each a contiguous run of them; per run,
/// in the level's order, its visits and the successors it found.
fn visit_in_parallel<B: Binding>(
    model: &B::Model,
    level: Vec<(B::State, B::Runtime, u32)>,
    threads: usize,
    index: &FastMap<Box<[u8]>, u32>,
    reached: &Reached<B::Action>,
) -> Vec<(Visits, Vec<Found<B>>)> {
    let per = level.len().div_ceil(threads);
    let mut parts = Vec::new();
    let mut rest = level;
    while rest.len() > per {
        let tail = rest.split_off(per);
        parts.push(rest);
        rest = tail;
    }
    parts.push(rest);
    std::thread::scope(|scope| {
        let handles: Vec<_> = parts
            .into_iter()
            .map(|part| {
                scope.spawn(move || {
                    let mut sink = Collect::<B> {
                        index,
                        reached,
                        found: Vec::new(),
                        seen: FastMap::default(),
                    };
                    let run = Visits::of::<B>(model, part, &mut sink);
                    (run, sink.found)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    })
}

/// A successor found in a level: its source's number, the action, the state, the
/// runtime after the action, and the state's identity ([`HashBytes`]).
type Found<B> = (
    u32,
    <B as Binding>::Action,
    <B as Binding>::State,
    <B as Binding>::Runtime,
    Box<[u8]>,
);

/// Where a run of a level's states puts the successors it reaches.
trait Sink<B: Binding> {
    /// `next`, reached from state number `from` by `action`, with its runtime and
    /// identity ([`HashBytes`]).
    fn reached(
        &mut self,
        from: u32,
        action: B::Action,
        next: B::State,
        runtime: B::Runtime,
        key: &[u8],
    );
    /// The actions from an initial state to state number `at`.
    fn path(&self, at: u32) -> Vec<String>;
}

/// One thread: new states are numbered and queued for the next level at once.
struct Inline<'a, B: Binding> {
    index: &'a mut FastMap<Box<[u8]>, u32>,
    reached: &'a mut Reached<B::Action>,
    next: &'a mut Vec<(B::State, B::Runtime, u32)>,
}

impl<B: Binding> Inline<'_, B> {
    /// Numbers `state` and queues it with its runtime, unless a state with the same
    /// identity `key` was numbered before. `how` is how it was first reached: its
    /// source's number and the action (`None` for an initial state).
    fn admit(
        &mut self,
        how: Option<(u32, B::Action)>,
        state: B::State,
        runtime: B::Runtime,
        key: impl AsRef<[u8]> + Into<Box<[u8]>>,
    ) {
        if !self.index.contains_key(key.as_ref()) {
            let at = self.reached.len() as u32;
            self.reached.push(how);
            self.index.insert(key.into(), at);
            self.next.push((state, runtime, at));
        }
    }
}

impl<B: Binding> Sink<B> for Inline<'_, B> {
    fn reached(
        &mut self,
        from: u32,
        action: B::Action,
        next: B::State,
        runtime: B::Runtime,
        key: &[u8],
    ) {
        self.admit(Some((from, action)), next, runtime, key);
    }
    fn path(&self, at: u32) -> Vec<String> {
        path_to(self.reached, at)
    }
}

/// One of several threads: successors not known before the level are kept, in order,
/// for the merge; states are numbered there. A successor this run already found is
/// dropped here, in parallel: its first finding comes before it in the merge, which
/// would drop it anyway.
struct Collect<'a, B: Binding> {
    index: &'a FastMap<Box<[u8]>, u32>,
    reached: &'a Reached<B::Action>,
    found: Vec<Found<B>>,
    seen: FastMap<Box<[u8]>, ()>,
}

impl<B: Binding> Sink<B> for Collect<'_, B> {
    fn reached(
        &mut self,
        from: u32,
        action: B::Action,
        next: B::State,
        runtime: B::Runtime,
        key: &[u8],
    ) {
        if !self.index.contains_key(key) && !self.seen.contains_key(key) {
            self.seen.insert(key.into(), ());
            self.found.push((from, action, next, runtime, key.into()));
        }
    }
    fn path(&self, at: u32) -> Vec<String> {
        path_to(self.reached, at)
    }
}

/// What one thread did with its run of a level's states.
struct Visits {
    transitions: usize,
    probes: usize,
    kinds: Vec<(String, usize)>,
    /// The first divergence; the run stops there.
    divergence: Option<Box<Divergence>>,
}

impl Visits {
    /// Adds this run's counts to `coverage` and `kinds`.
    fn add_to(&self, coverage: &mut Coverage, kinds: &mut Vec<(String, usize)>) {
        coverage.transitions += self.transitions;
        coverage.probes += self.probes;
        coverage.steps += self.transitions + self.probes;
        for (name, n) in &self.kinds {
            match kinds.iter_mut().find(|(k, _)| k == name) {
                Some((_, total)) => *total += n,
                None => kinds.push((name.clone(), *n)),
            }
        }
    }

    /// Checks every probe and transition of `states` (each with its runtime and
    /// number), handing each successor to `sink`.
    fn of<B: Binding>(
        model: &B::Model,
        states: Vec<(B::State, B::Runtime, u32)>,
        sink: &mut impl Sink<B>,
    ) -> Self {
        let mut visits = Visits {
            transitions: 0,
            probes: 0,
            kinds: Vec::new(),
            divergence: None,
        };
        // The kind of each distinct action, computed once: a few dozen actions recur
        // over every state.
        let mut kind_of: FastMap<B::Action, usize> = FastMap::default();
        let mut bytes = HashBytes::default();
        let mut actions = Vec::new();
        let mut steps = Vec::new();
        let mut views = Scratch::<B>::new();
        for (state, runtime, at) in states {
            let probes = B::probes(model, &state);
            if !probes.is_empty() {
                // Every probe must leave the projection the model gives this state.
                views.want(model, &state);
                for probe in &probes {
                    if let Err(p) = views.checked_refusal(model, &runtime, &state, probe) {
                        let runtime = B::describe(&runtime);
                        visits.divergence = Some(fail(sink.path(at), probe, p, runtime));
                        return visits;
                    }
                }
                visits.probes += probes.len();
            }
            model.actions(&state, &mut actions);
            for action in actions.drain(..) {
                let Some(next) = model.next_state(&state, action.clone()) else {
                    continue;
                };
                if model.within_boundary(&next) {
                    steps.push((action, next));
                }
            }
            let last = steps.len();
            let mut runtime = Some(runtime);
            for (i, (action, next)) in steps.drain(..).enumerate() {
                let mut next_runtime = if i + 1 == last {
                    runtime.take().expect("the source runtime is taken once")
                } else {
                    runtime.as_ref().expect("the source runtime").clone()
                };
                if let Err(p) = views.checked_step(model, &mut next_runtime, &state, &action, &next)
                {
                    let runtime = B::describe(&next_runtime);
                    visits.divergence = Some(fail(sink.path(at), &action, p, runtime));
                    return visits;
                }
                visits.transitions += 1;
                let kind = match kind_of.get(&action) {
                    Some(&k) => k,
                    None => {
                        let name = B::kind(&action);
                        let k = match visits.kinds.iter().position(|(n, _)| *n == name) {
                            Some(k) => k,
                            None => {
                                visits.kinds.push((name, 0));
                                visits.kinds.len() - 1
                            }
                        };
                        kind_of.insert(action.clone(), k);
                        k
                    }
                };
                visits.kinds[kind].1 += 1;
                let key = bytes.of(&next);
                sink.reached(at, action, next, next_runtime, key);
            }
        }
        visits
    }
}
