//! Our ITF files as the reference reader sees them: every trace of a trace set, written as
//! ITF, parses with Informal Systems' `itf` crate both as raw JSON values (its `Trace`
//! and `#meta` shapes, state values as JSON) and as a typed trace
//! of Quint's model-based-testing shape (the action's name in `mbt::actionTaken` in every
//! state, its arguments in `mbt::nondetPicks`), and replays against the runtime.

use serde::Deserialize;
use steadfast_conformance::durable::DurableBinding;
use steadfast_conformance::leadership::LeadershipBinding;
use steadfast_conformance::{trace, Binding};
use steadfast_model::{Settings, Spec};

/// The model-based-testing variables of one state, typed; the model's own variables are
/// left to the raw read.
#[derive(Deserialize)]
struct Mbt {
    #[serde(rename = "mbt::actionTaken")]
    action: String,
    #[serde(rename = "mbt::nondetPicks")]
    picks: Picks,
}

/// The picks as Quint writes them: each a Quint option (`{"tag": "Some" | "None"}`).
#[derive(Deserialize)]
struct Picks {
    #[serde(with = "itf::de::As::<itf::de::Option::<_>>")]
    args: Option<serde_json::Value>,
}

/// Exports every trace of `model`'s trace set as ITF text, reads each with the `itf`
/// crate (raw and typed) and replays every `stride`-th against the runtime; the number
/// of files read. The traces are shared out over the machine's cores.
fn every_trace_reads<B: Binding>(model: &B::Model, stride: usize) -> usize
where
    B::Model: Sync,
    <B::Model as stateright::Model>::State: serde::Serialize + Sync,
    <B::Model as stateright::Model>::Action: Sync,
{
    let set = trace::trace_set(model);
    assert!(!set.is_empty());
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|scope| {
        for worker in 0..workers {
            let set = &set;
            scope.spawn(move || {
                for i in (worker..set.len()).step_by(workers) {
                    let (init, actions) = &set[i];
                    read_one::<B>(model, i, *init, actions, i % stride == 0);
                }
            });
        }
    });
    set.len()
}

/// Trace `i` of a trace set, from state `init` along `actions`, written as ITF and read
/// back with the `itf` crate; replayed on the runtime if `replay`.
fn read_one<B: Binding>(
    model: &B::Model,
    i: usize,
    init: usize,
    actions: &[<B::Model as stateright::Model>::Action],
    replay: bool,
) where
    <B::Model as stateright::Model>::State: serde::Serialize,
{
    let value = trace::to_itf(model, init, actions).expect("an ITF trace");
    let text = serde_json::to_string(&value).unwrap();
    let raw: itf::Trace<serde_json::Value> =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("trace {i}: raw read: {e}"));
    assert_eq!(raw.states.len(), actions.len() + 1);
    assert_eq!(raw.meta.other["model"], <B::Model as Spec>::NAME);
    let typed: itf::Trace<Mbt> =
        itf::trace_from_str(&text).unwrap_or_else(|e| panic!("trace {i}: typed read: {e}"));
    assert_eq!(typed.states[0].value.action, "init");
    assert!(typed.states[0].value.picks.args.is_none());
    for (state, action) in typed.states[1..].iter().zip(actions) {
        let name = B::kind(action);
        assert_eq!(state.value.action, name, "trace {i}");
        assert!(state.value.picks.args.is_some(), "trace {i}");
    }
    if replay {
        let loaded = trace::parse("itf", &text).unwrap();
        let replay = trace::replay::<B>(&loaded).unwrap();
        assert!(replay.divergence.is_none(), "trace {i}");
    }
}

#[test]
fn every_leadership_trace_reads_with_the_reference_reader() {
    let m = steadfast_model::leadership::Leadership::build(
        "fixed",
        &Settings::parse(steadfast_model::leadership::Leadership::params(), &[]).unwrap(),
    )
    .unwrap();
    let n = every_trace_reads::<LeadershipBinding>(&m, 97);
    assert_eq!(n, 12_106);
}

#[test]
fn every_durable_trace_reads_with_the_reference_reader() {
    let params = steadfast_model::durable::Durable::params();
    let settings = Settings::parse(
        params,
        &[("keys", "1"), ("inputs", "1"), ("compact-offsets", "false")],
    )
    .unwrap();
    let m = steadfast_model::durable::Durable::build("fixed", &settings).unwrap();
    let n = every_trace_reads::<DurableBinding>(&m, 13);
    assert!(n > 100, "{n}");
}

/// A file of the earlier shape (the action as a variant, settings as a record) still
/// replays.
#[test]
fn the_earlier_itf_shape_still_replays() {
    let text = r##"{"#meta":{"model":"leadership","design":"fixed","settings":{"grants":"3"}},
      "vars":["x"],
      "states":[
        {"#meta":{"index":0},"mbt::actionTaken":"init"},
        {"#meta":{"index":1},"mbt::actionTaken":{"tag":"DispatcherFailover","value":{"#tup":[]}}}
      ]}"##;
    let loaded = trace::parse("old.itf.json", text).unwrap();
    assert_eq!(loaded.settings["grants"], "3");
    assert_eq!(loaded.steps.len(), 2);
    assert!(loaded.steps[1].action.is_some());
}

/// Streaming replay agrees with the whole-file replay, for both formats, on traces of the
/// unpatched design (which diverge) and the fixed one (which agree).
#[test]
fn a_streamed_replay_agrees_with_the_whole_file_replay() {
    let dir = std::env::temp_dir().join(format!("steadfast-stream-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let params = steadfast_model::durable::Durable::params();
    let settings =
        Settings::parse(params, &[("inputs", "1"), ("compact-offsets", "false")]).unwrap();
    let mut diverged = 0;
    for design in ["unpatched", "fixed"] {
        let m = steadfast_model::durable::Durable::build(design, &settings).unwrap();
        for (n, (init, actions)) in trace::trace_set(&m).iter().step_by(4001).enumerate() {
            let json = serde_json::to_value(trace::to_json(&m, *init, actions).unwrap()).unwrap();
            let itf = trace::to_itf(&m, *init, actions).unwrap();
            for (ext, value) in [("json", json), ("itf.json", itf)] {
                let path = dir.join(format!("{design}-{n}.{ext}"));
                std::fs::write(&path, serde_json::to_string(&value).unwrap()).unwrap();
                let whole = trace::replay::<DurableBinding>(&trace::load(&path).unwrap()).unwrap();
                let streamed = trace::stream::replay_file::<DurableBinding>(&path).unwrap();
                assert_eq!(
                    whole.steps.len(),
                    streamed.steps.len(),
                    "{}",
                    path.display()
                );
                assert_eq!(
                    whole
                        .divergence
                        .as_ref()
                        .map(|d| (d.step, d.problem.clone())),
                    streamed
                        .divergence
                        .as_ref()
                        .map(|d| (d.step, d.problem.clone())),
                    "{}",
                    path.display()
                );
                diverged += usize::from(streamed.divergence.is_some());
            }
        }
    }
    assert!(
        diverged > 0,
        "some unpatched traces depart from the fixed runtime"
    );
    std::fs::remove_dir_all(&dir).ok();
}
