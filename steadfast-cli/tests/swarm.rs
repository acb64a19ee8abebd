//! Swarm mode as a user runs it: shards as separate processes of the binary, their
//! result files, the merge, and the refusals of bad input.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn steadfast(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_steadfast"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).to_string()
}

/// Runs `check leadership --design unpatched --simulate` for each shard, all at once.
fn shards(dir: &Path, seed: &str, shards: &[&str]) -> Vec<Output> {
    let children: Vec<_> = shards
        .iter()
        .map(|shard| {
            Command::new(env!("CARGO_BIN_EXE_steadfast"))
                .args(["check", "leadership", "--design", "unpatched", "--simulate"])
                .args(["--seed", seed, "--shard", shard, "--time", "1s", "--out"])
                .arg(dir)
                .output()
        })
        .collect();
    children
        .into_iter()
        .map(|c| c.expect("the binary runs"))
        .collect()
}

fn json(file: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(file).expect("a shard file")).expect("JSON")
}

/// The exhaustive check's verdicts and shortest trace lengths, by property.
fn exhaustive() -> Vec<(String, String, Option<usize>)> {
    let out = steadfast(&["check", "leadership", "--design", "unpatched", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    report["properties"]
        .as_array()
        .expect("properties")
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_string(),
                p["verdict"].as_str().unwrap().to_string(),
                p["trace"]["steps"].as_array().map(Vec::len),
            )
        })
        .collect()
}

/// Whether a table has a cell saying "holds", which walks can never show.
fn says_holds(table: &str) -> bool {
    table
        .lines()
        .any(|l| l.split("  ").any(|cell| cell.trim() == "holds"))
}

/// SplitMix64's `i`-th output for `seed`, as the shard seeds are documented.
fn splitmix(seed: u64, i: u64) -> u64 {
    let mut z = seed.wrapping_add(i.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[test]
fn four_shards_merge_to_the_known_counterexample() {
    let dir = tempfile::tempdir().unwrap();
    let outs = shards(dir.path(), "7", &["1/4", "2/4", "3/4", "4/4"]);
    for out in &outs {
        // Each shard finds the bug on its own and exits as the exhaustive check does.
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        assert!(!says_holds(&text(&out.stdout)), "{}", text(&out.stdout));
    }
    let mut seeds = Vec::new();
    for i in 1..=4u64 {
        let file = json(&dir.path().join(format!("shard-{i}-of-4.json")));
        assert_eq!(file["seed"], 7);
        assert_eq!(file["shard"], i);
        assert_eq!(file["shards"], 4);
        assert_eq!(file["design"], "unpatched");
        assert_eq!(file["time_budget_seconds"], 1);
        assert!(file["walks"].as_u64().unwrap() > 0);
        assert!(file["states"].as_u64().unwrap() >= file["walks"].as_u64().unwrap());
        let seed = file["shard_seed"].as_u64().unwrap();
        assert_eq!(seed, splitmix(7, i), "shard {i}");
        seeds.push(seed);
    }
    seeds.sort_unstable();
    seeds.dedup();
    assert_eq!(seeds.len(), 4, "every shard walks from its own seed");

    let truth = exhaustive();
    let shortest = truth
        .iter()
        .find(|(name, _, _)| name == "no reanimation")
        .and_then(|(_, verdict, len)| (verdict == "counterexample").then_some(*len)?)
        .expect("the exhaustive check's counterexample to no reanimation");

    let merged = steadfast(&["check", "--merge", dir.path().to_str().unwrap()]);
    assert_eq!(merged.status.code(), Some(1), "{}", text(&merged.stderr));
    let table = text(&merged.stdout);
    assert!(table.contains("swarm of 4 shards"), "{table}");
    assert!(!says_holds(&table), "{table}");
    let row = |name: &str| {
        table
            .lines()
            .find(|l| l.starts_with(&format!("{name}  ")))
            .unwrap_or_else(|| panic!("a row for {name}: {table}"))
            .to_string()
    };
    assert!(row("no reanimation").contains("counterexample"), "{table}");
    let heading = table
        .lines()
        .find(|l| l.starts_with("counterexample to \"no reanimation\""))
        .expect("the merged counterexample");
    let steps: usize = heading
        .split(", ")
        .find_map(|part| part.strip_suffix(" steps")?.parse().ok())
        .expect("its length");
    assert!(steps >= shortest, "{steps} < {shortest}: {heading}");
    assert!(
        heading.contains("shard ") && heading.contains("/4"),
        "{heading}"
    );
    // Walks cannot find what the exhaustive check shows absent.
    for (name, verdict, _) in &truth {
        match verdict.as_str() {
            "holds" | "unreached" => assert!(row(name).contains("none found"), "{table}"),
            _ => {}
        }
    }
}

#[test]
fn a_rerun_repeats_the_same_walks() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for dir in [&a, &b] {
        for out in shards(dir.path(), "11", &["2/3"]) {
            assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        }
    }
    let (a, b) = (
        json(&a.path().join("shard-2-of-3.json")),
        json(&b.path().join("shard-2-of-3.json")),
    );
    assert_eq!(a["shard_seed"], b["shard_seed"]);
    // How many walks fit in the budget varies; the walk that first reached a given
    // length, its seed and its actions do not.
    let mut compared = 0;
    for (p, q) in a["properties"]
        .as_array()
        .unwrap()
        .iter()
        .zip(b["properties"].as_array().unwrap())
    {
        let (Some(x), Some(y)) = (p["path"].as_object(), q["path"].as_object()) else {
            continue;
        };
        if x["length"] == y["length"] {
            compared += 1;
            for field in ["walk", "walk_seed", "actions"] {
                assert_eq!(x[field], y[field], "{}: {field}", p["name"]);
            }
        }
    }
    assert!(compared > 0, "no property found at the same length twice");
}

/// Exit 2 and one line of stderr containing `want`.
fn refused(args: &[&str], want: &str) {
    let out = steadfast(args);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "one line: {err:?}");
    assert!(
        err.starts_with("steadfast: ") && err.contains(want),
        "{want} in {err}"
    );
}

#[test]
fn bad_shards_and_budgets_are_refused() {
    let check = ["check", "leadership", "--simulate"];
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        check.iter().chain(extra).copied().collect()
    };
    refused(
        &with(&["--shard", "0/4", "--time", "1s"]),
        "shard 0 of 4 does not exist",
    );
    refused(
        &with(&["--shard", "5/4", "--time", "1s"]),
        "shard 5 of 4 does not exist",
    );
    refused(
        &with(&["--shard", "x", "--time", "1s"]),
        "`--shard` must be i/n",
    );
    refused(
        &with(&["--shard", "1/0", "--time", "1s"]),
        "number of shards",
    );
    refused(&with(&["--time", "0"]), "`--time` must be");
    refused(&with(&["--time", "0s"]), "at least 1s");
    refused(&with(&["--time", "5parsecs"]), "got `5parsecs`");
    refused(&with(&[]), "needs a time budget");
    refused(&with(&["--time", "1s", "--seed", "-1"]), "`--seed`");
    refused(
        &with(&["--time", "1s", "--dfs"]),
        "`--dfs` is an option of the exhaustive",
    );
    refused(
        &["check", "leadership", "--seed", "3"],
        "`--seed` needs `--simulate`",
    );
}

#[test]
fn merging_refuses_what_is_not_one_swarm() {
    let empty = tempfile::tempdir().unwrap();
    let path = empty.path().to_str().unwrap();
    refused(&["check", "--merge", path], "no shard-*.json files");
    refused(
        &["check", "--merge", "/nonexistent/swarm"],
        "`--merge /nonexistent/swarm`",
    );

    let corrupt = tempfile::tempdir().unwrap();
    std::fs::write(corrupt.path().join("shard-1-of-2.json"), b"{\"format\": \n").unwrap();
    refused(
        &["check", "--merge", corrupt.path().to_str().unwrap()],
        "shard-1-of-2.json`: not a shard result file",
    );

    let big = tempfile::tempdir().unwrap();
    let file = std::fs::File::create(big.path().join("shard-1-of-1.json")).unwrap();
    file.set_len(17 << 20).unwrap();
    refused(
        &["check", "--merge", big.path().to_str().unwrap()],
        "larger than 16 MiB",
    );

    // A real shard, then a copy of it claiming another design or another seed.
    let mixed = tempfile::tempdir().unwrap();
    for out in shards(mixed.path(), "5", &["1/2"]) {
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    }
    let mut other = json(&mixed.path().join("shard-1-of-2.json"));
    other["shard"] = 2.into();
    std::fs::write(
        mixed.path().join("shard-2-of-2.json"),
        serde_json::to_vec(&other).unwrap(),
    )
    .unwrap();
    let dir = mixed.path().to_str().unwrap();
    refused(&["check", "--merge", dir], "same shard seed");
    other["shard_seed"] = 1.into();
    other["design"] = "fixed".into();
    std::fs::write(
        mixed.path().join("shard-2-of-2.json"),
        serde_json::to_vec(&other).unwrap(),
    )
    .unwrap();
    refused(&["check", "--merge", dir], "its design differs");
    other["design"] = "unpatched".into();
    other["settings"]["grants"] = "4".into();
    std::fs::write(
        mixed.path().join("shard-2-of-2.json"),
        serde_json::to_vec(&other).unwrap(),
    )
    .unwrap();
    refused(&["check", "--merge", dir], "its settings differ");
    refused(
        &["check", "leadership", "--merge", dir],
        "unexpected argument",
    );
}
