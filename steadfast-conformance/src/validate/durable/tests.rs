use super::*;

const HEADER: &str = r#"{"fields":{"component":"run","event":"start","model":"durable","keys":2,"inputs":2,"actions":1,"calls":2,"partitions":1,"crashes":2,"checkpoints":3,"concurrent_checkpoints":1,"send_failures":1,"key_names":"key0.0 key1.0","action_names":"action0"}}"#;

/// The log line the runtime writes for `e`.
fn line(e: &DurableEvent) -> String {
    let key = |k: u8| format!("key{k}.0");
    let fields = match *e {
        DurableEvent::Start { restored } => {
            serde_json::json!({"component": "durable.operator", "event": "start", "restored": restored})
        }
        DurableEvent::Input { key: k, seq } => {
            serde_json::json!({"component": "durable.operator", "event": "input", "key": key(k), "seq": seq})
        }
        DurableEvent::CallReused {
            key: k,
            seq,
            action,
            index,
        } => serde_json::json!({
            "component": "durable.operator", "event": "call_reused", "key": key(k), "seq": seq,
            "action": format!("action{action}"), "index": index}),
        DurableEvent::SupplierCall {
            key: k,
            seq,
            action,
            index,
        } => serde_json::json!({
            "component": "durable.supplier", "event": "call", "key": key(k), "seq": seq,
            "action": format!("action{action}"), "index": index}),
        DurableEvent::PutSent {
            key: k,
            seq,
            action,
            results,
            completed,
        } => serde_json::json!({
            "component": "durable.operator", "event": "put_sent", "key": key(k), "seq": seq,
            "action": format!("action{action}"), "results": results, "completed": completed, "put": 7}),
        DurableEvent::PutAcked {
            key: k,
            seq,
            action,
            results,
            completed,
        } => serde_json::json!({
            "component": "durable.store", "event": "put", "key": key(k), "seq": seq,
            "action": format!("action{action}"), "results": results, "completed": completed,
            "outcome": "acked", "offset": 3}),
        DurableEvent::PutFailed { key: k } => serde_json::json!({
            "component": "durable.store", "event": "put", "key": key(k), "outcome": "failed"}),
        DurableEvent::Failed => {
            serde_json::json!({"component": "durable.operator", "event": "failed"})
        }
        DurableEvent::Snapshot { checkpoint } => serde_json::json!({
            "component": "durable.operator", "event": "snapshot", "checkpoint": checkpoint}),
        DurableEvent::CheckpointComplete { checkpoint } => serde_json::json!({
            "component": "durable.operator", "event": "checkpoint_complete", "checkpoint": checkpoint}),
        DurableEvent::Crash => {
            serde_json::json!({"component": "durable.task", "event": "crash"})
        }
        DurableEvent::Fence { partition } => serde_json::json!({
            "component": "durable.driver", "event": "fence", "partition": partition,
            "offset": 5, "epoch": 2}),
        DurableEvent::Unknown => {
            serde_json::json!({"component": "durable.operator", "event": "bogus"})
        }
    };
    serde_json::json!({ "timestamp": "0", "level": "INFO", "fields": fields }).to_string()
}

/// [`HEADER`] with zombie sends and fencing.
fn fenced_header() -> String {
    HEADER.replace(
        "\"action_names\"",
        "\"zombie_sends\":true,\"fencing\":true,\"action_names\"",
    )
}

/// A seeded random walk of the validator's model, as log lines (the header first),
/// with an internal event between steps.
fn walk(seed: u64, steps: usize) -> Vec<String> {
    walk_under(HEADER, seed, steps)
}

/// [`walk`] of the model `header` names.
fn walk_under(header_line: &str, seed: u64, steps: usize) -> Vec<String> {
    let header: Line<'_> = serde_json::from_str(header_line).unwrap();
    let (model, _) = from_header(&header.fields, "fixed", 1).unwrap();
    let mut rng = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut s = model.init_states().remove(0);
    let mut out = vec![
        header_line.to_string(),
        line(&DurableEvent::Start { restored: false }),
    ];
    for _ in 0..steps {
        let mut enabled = Vec::new();
        model.actions(&s, &mut enabled);
        if enabled.is_empty() {
            break;
        }
        let a = enabled[(next() % enabled.len() as u64) as usize];
        out.extend(expected_log(false, &s, &a).iter().map(line));
        out.push(
            r#"{"fields":{"component":"durable.operator","event":"emit","key":"key0.0","seq":0}}"#
                .into(),
        );
        s = model.next_state(&s, a).unwrap();
    }
    out
}

fn check(lines: &[String]) -> Result<Validation, LogError> {
    validate_durable(lines.join("\n").as_bytes(), Options::default())
}

#[test]
fn model_walks_are_valid_and_their_corruptions_are_not() {
    let mut rejected = 0;
    for seed in 0..30 {
        let lines = walk(seed, 60);
        let v = check(&lines).unwrap();
        assert!(v.is_valid(), "seed {seed}: {:?}", v.verdict);
        assert_eq!(v.model, "durable");
        // Removing one model event (not the header, not an internal one) breaks it,
        // unless the walk could have gone without it; at least most removals are
        // caught, and a removal is reported at or after the removed line.
        for at in (2..lines.len()).step_by(7) {
            if lines[at].contains("\"emit\"") {
                continue;
            }
            let mut cut = lines.clone();
            cut.remove(at);
            let v = check(&cut).unwrap();
            if let Verdict::Unexplained { line, .. } = v.verdict {
                assert!(
                    line as usize > at,
                    "seed {seed}: cut {at}, reported at {line}"
                );
                rejected += 1;
            }
        }
    }
    assert!(rejected > 50, "only {rejected} removals rejected");
}

#[test]
fn fenced_walks_are_valid_and_their_fences_are_not_without_fencing() {
    let header = fenced_header();
    let fence = r#""event":"fence""#;
    let mut fenced = Vec::new();
    for seed in 0..30 {
        let lines = walk_under(&header, seed, 80);
        let v = check(&lines).unwrap();
        assert!(v.is_valid(), "seed {seed}: {:?}", v.verdict);
        if let Some(at) = lines.iter().position(|l| l.contains(fence)) {
            fenced.push((lines, at));
        }
    }
    assert!(fenced.len() >= 5, "only {} walks fenced", fenced.len());
    for (lines, at) in fenced {
        // Said off, or not said at all (a log from before the flag).
        for unfenced in [
            header.replace(r#""fencing":true"#, r#""fencing":false"#),
            header.replace(r#""fencing":true,"#, ""),
        ] {
            let mut lines = lines.clone();
            lines[0] = unfenced;
            let v = check(&lines).unwrap();
            let Verdict::Unexplained { line, event, .. } = v.verdict else {
                panic!("{:?}", v.verdict)
            };
            assert_eq!(line as usize, at + 1);
            assert_eq!(event, "durable.driver fence partition=0");
        }
    }
}

#[test]
fn a_fenced_record_is_read_past_only_inside_a_restore() {
    let skipped = r#"{"fields":{"component":"durable.store","event":"fenced_record","partition":0,"offset":4,"epoch":1,"fence":2}}"#;
    let start = line(&DurableEvent::Start { restored: false });
    let restore = vec![
        fenced_header(),
        start.clone(),
        line(&DurableEvent::Crash),
        line(&DurableEvent::Fence { partition: 0 }),
        skipped.to_string(),
        start.clone(),
    ];
    let v = check(&restore).unwrap();
    assert!(v.is_valid(), "{:?}", v.verdict);
    // A fence of a partition the log does not have is no step's.
    let mut wrong = restore.clone();
    wrong[3] = line(&DurableEvent::Fence { partition: 1 });
    let v = check(&wrong).unwrap();
    assert!(
        matches!(v.verdict, Verdict::Unexplained { line: 4, .. }),
        "{:?}",
        v.verdict
    );
    // Outside a restore a skipped record is unexplained.
    for at in [2, 6] {
        let mut lines = restore.clone();
        lines.insert(at, skipped.to_string());
        let v = check(&lines).unwrap();
        let Verdict::Unexplained { line, event, .. } = v.verdict else {
            panic!("{:?}", v.verdict)
        };
        assert_eq!(line as usize, at + 1);
        assert_eq!(event, "durable.store fenced_record partition=0");
    }
}

#[test]
fn a_repeated_supplier_call_is_named() {
    let mut lines = vec![
        HEADER.to_string(),
        line(&DurableEvent::Start { restored: false }),
    ];
    let call = DurableEvent::SupplierCall {
        key: 0,
        seq: 0,
        action: 0,
        index: 0,
    };
    for e in [
        DurableEvent::Input { key: 0, seq: 0 },
        call,
        DurableEvent::PutSent {
            key: 0,
            seq: 0,
            action: 0,
            results: 1,
            completed: false,
        },
        DurableEvent::PutAcked {
            key: 0,
            seq: 0,
            action: 0,
            results: 1,
            completed: false,
        },
        call,
    ] {
        lines.push(line(&e));
    }
    let v = check(&lines).unwrap();
    let Verdict::Unexplained {
        line,
        event,
        expected,
        ..
    } = v.verdict
    else {
        panic!("{:?}", v.verdict)
    };
    assert_eq!(line, 7);
    assert_eq!(
        event,
        "durable.supplier call key=key0.0 action=action0 seq=0 index=0"
    );
    assert!(
        expected
            .iter()
            .any(|e| e.contains("durable.supplier call key=key0.0 seq=0 action=action0 index=1")),
        "{expected:?}"
    );
}

#[test]
fn the_logs_and_the_blocking_drivers_own_events_are_read_past() {
    let start = line(&DurableEvent::Start { restored: false });
    let input = line(&DurableEvent::Input { key: 0, seq: 0 });
    let mut lines = vec![HEADER.to_string()];
    for component in ["kafka_log", "file_log", "memory_log"] {
        lines.push(format!(
            r#"{{"fields":{{"component":"durable.{component}","event":"open"}}}}"#
        ));
    }
    lines.push(start);
    lines.push(r#"{"fields":{"component":"durable.driver","event":"restore"}}"#.into());
    lines.push(input.clone());
    let v = check(&lines).unwrap();
    assert!(v.is_valid(), "{:?}", v.verdict);
    assert_eq!(v.events, 6);
    // Any other event of the driver is one no step explains.
    lines.insert(
        6,
        r#"{"fields":{"component":"durable.driver","event":"supplier_ran"}}"#.into(),
    );
    let v = check(&lines).unwrap();
    let Verdict::Unexplained { line, .. } = v.verdict else {
        panic!("{:?}", v.verdict)
    };
    assert_eq!(line, 7);
}

#[test]
fn bad_logs_get_one_line_errors() {
    let start = line(&DurableEvent::Start { restored: false });
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec![start.clone()], "starts with its run header"),
        (vec![HEADER.replace("\"keys\":2,", "")], "no `keys` field"),
        (
            vec![HEADER.replace("\"keys\":2", "\"keys\":9")],
            "run header's bounds",
        ),
        (vec![HEADER.replace("key1.0", "")], "names 1 keys for 2"),
        (
            vec![
                HEADER.into(),
                start.replace("durable.operator", "durable.elsewhere"),
            ],
            "unknown component",
        ),
        (
            vec![
                HEADER.into(),
                start.clone(),
                line(&DurableEvent::Input { key: 0, seq: 0 }).replace("key0.0", "nokey"),
            ],
            "not one the run header names",
        ),
        (
            vec![
                HEADER.into(),
                start.replace("\"restored\":false", "\"x\":1"),
            ],
            "without a `restored` field",
        ),
        (vec![HEADER.into(), HEADER.into()], "a second run header"),
        (vec![], "the log is empty"),
        (vec!["".into(), "  ".into(), "".into()], "the log is empty"),
    ];
    for (lines, named) in cases {
        let e = check(&lines).expect_err(named);
        assert!(e.to_string().contains(named), "{e} (wanted {named:?})");
        assert!(!e.to_string().contains('\n'));
    }
    let v = check(&[HEADER.into(), start, line(&DurableEvent::Unknown)]).unwrap();
    assert!(
        matches!(v.verdict, Verdict::Unexplained { line: 3, .. }),
        "{:?}",
        v.verdict
    );
}

#[test]
fn a_log_that_names_too_little_is_refused_not_followed() {
    let text = walk(3, 60).join("\n");
    let widest = check(&text.split('\n').map(str::to_owned).collect::<Vec<_>>())
        .unwrap()
        .widest;
    assert!(widest >= 2, "{widest}");
    assert!(validate_lines(
        super::super::LogLines::new(text.as_bytes()),
        Options::default(),
        widest
    )
    .is_ok());
    let e = validate_lines(
        super::super::LogLines::new(text.as_bytes()),
        Options::default(),
        widest - 1,
    )
    .unwrap_err();
    assert!(e.line > 2, "{e}");
    assert_eq!(
        e.why,
        format!(
            "more than {} model places are possible at once: the log names too little to follow",
            widest - 1
        )
    );
    let late = Options {
        late_signal: Some(true),
        ..Options::default()
    };
    let e = validate_durable(text.as_bytes(), late).unwrap_err();
    assert!(
        e.why
            .contains("`late-signal` is a setting of the leadership model"),
        "{e}"
    );
}

#[test]
fn blank_lines_before_the_header_are_counted_not_kept() {
    let mut lines = vec![
        HEADER.to_string(),
        line(&DurableEvent::Start { restored: false }),
    ];
    lines.push(line(&DurableEvent::Unknown));
    // Far more blank bytes than one line may hold.
    let blank = "\n".repeat(200_000);
    let text = format!("{blank}{}", lines.join("\n"));
    let v = super::super::validate(text.as_bytes(), Options::default()).unwrap();
    assert_eq!(v.model, "durable");
    assert!(
        matches!(v.verdict, Verdict::Unexplained { line: 200_003, .. }),
        "{:?}",
        v.verdict
    );
    let e = super::super::validate(blank.as_bytes(), Options::default()).unwrap_err();
    assert_eq!(e.to_string(), "the log is empty");
}

#[test]
fn a_log_cut_inside_a_step_is_truncated() {
    let mut lines = vec![
        HEADER.to_string(),
        line(&DurableEvent::Start { restored: false }),
    ];
    lines.push(line(&DurableEvent::Input { key: 0, seq: 0 }));
    lines.push(line(&DurableEvent::SupplierCall {
        key: 0,
        seq: 0,
        action: 0,
        index: 0,
    }));
    lines.push(line(&DurableEvent::PutSent {
        key: 0,
        seq: 0,
        action: 0,
        results: 1,
        completed: false,
    }));
    // The crash budget needs no checkpoint (restart-without-checkpoint).
    lines.push(line(&DurableEvent::PutFailed { key: 0 }));
    let v = check(&lines).unwrap();
    assert_eq!(
        v.verdict,
        Verdict::Truncated {
            job: 0,
            missing: "durable.operator failed".into()
        }
    );
}
