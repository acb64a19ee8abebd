//! `conform --json`: per model action kind, how many transitions were replayed and the
//! runtime event, effect or call each was checked against.

use std::process::Command;

use serde_json::Value;

fn conform_json(args: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_steadfast"))
        .arg("conform")
        .args(args)
        .arg("--json")
        .output()
        .expect("the binary runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON document")
}

#[test]
fn every_durable_action_names_its_runtime_counterpart() {
    let v = conform_json(&[
        "durable",
        "--inputs",
        "1",
        "--compact-offsets",
        "false",
        "--walks",
        "3",
    ]);
    assert_eq!(v["model"], "durable");
    assert_eq!(v["agreed"], true);
    assert_eq!(v["unique_states"], 34_531);
    assert_eq!(v["transitions"], 83_437);
    let steps = v["steps"].as_u64().unwrap();
    assert_eq!(steps, 83_437 + v["probes"].as_u64().unwrap());
    assert!(v["seconds"].as_f64().unwrap() > 0.0);
    let actions = v["actions"].as_object().unwrap();
    let total: u64 = actions
        .values()
        .map(|a| a["transitions"].as_u64().unwrap())
        .sum();
    assert_eq!(total, 83_437);
    for (kind, a) in actions {
        let against = a["checked_against"].as_str().unwrap();
        assert!(!against.starts_with('('), "{kind}: {against}");
    }
    // The put protocol, one to one.
    assert!(actions["SendPut"]["checked_against"]
        .as_str()
        .unwrap()
        .contains("Effect::Append"));
    assert!(actions["AckPut"]["checked_against"]
        .as_str()
        .unwrap()
        .contains("Event::PutAcked"));
    assert_eq!(v["walks"]["walks"], 3);
}

#[test]
fn every_leadership_action_names_its_runtime_counterpart() {
    let v = conform_json(&["leadership", "--walks", "0"]);
    assert_eq!(v["agreed"], true);
    let actions = v["actions"].as_object().unwrap();
    assert!(actions.len() >= 10, "{actions:?}");
    for (kind, a) in actions {
        let against = a["checked_against"].as_str().unwrap();
        assert!(!against.starts_with('('), "{kind}: {against}");
    }
}

#[test]
fn failed_send_runs_name_the_failure_event() {
    let v = conform_json(&[
        "durable",
        "--inputs",
        "1",
        "--send-failures",
        "1",
        "--walks",
        "0",
    ]);
    assert_eq!(v["agreed"], true);
    assert!(v["actions"]["FailPut"]["checked_against"]
        .as_str()
        .unwrap()
        .contains("Event::PutFailed"));
}
