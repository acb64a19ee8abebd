//! Swarm mode's command line: `check MODEL ... --simulate --seed N --shard i/n --time T
//! [--out DIR]` walks the model for `T` and writes `DIR/shard-<i>-of-<n>.json`;
//! `check --merge DIR` checks every shard file of a directory against the model it names
//! and combines them into one verdict table. The walks, the shard file and its check are
//! the model crate's ([`steadfast_model::swarm`], where the seeds are documented).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path as FsPath, PathBuf};
use std::process::ExitCode;

use steadfast_model::quote::shorten;
use steadfast_model::swarm::{self, Found, FoundPath, PropertyResult, ShardFile, ShardRun, FORMAT};
use steadfast_model::Spec;

use crate::args::{one_line, quote, Args, Failure, Outcome, UsageError};
use crate::models::with_spec;
use crate::render;

/// Shard files larger than this are refused by `--merge`: a file of this program holds a
/// few paths of tens of steps, far below it.
pub(crate) const MAX_SHARD_FILE_BYTES: u64 = 16 << 20;

/// The longest time budget: a week.
const MAX_SECONDS: u64 = 7 * 24 * 3600;

/// The most shards of one swarm.
const MAX_SHARDS: u64 = 1_000_000;

/// `--time`: whole seconds, minutes or hours (`30s`, `2m`, `1h`), at least a second.
/// stateright's simulation looks at its timeout once a second, so a finer budget could
/// not be kept.
pub(crate) fn parse_time(text: &str) -> Result<u64, UsageError> {
    let bad = || {
        UsageError(format!(
            "`--time` must be a whole number of seconds, minutes or hours such as 30s, 2m \
             or 1h, got {}",
            quote(text)
        ))
    };
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (digits, unit) = text.split_at(split);
    let scale = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        _ => return Err(bad()),
    };
    let n: u64 = digits.parse().map_err(|_| bad())?;
    match n.checked_mul(scale) {
        Some(0) => Err(UsageError(format!(
            "`--time` must be at least 1s, got {}",
            quote(text)
        ))),
        Some(s) if s <= MAX_SECONDS => Ok(s),
        _ => Err(UsageError(format!(
            "`--time` must be at most a week (168h), got {}",
            quote(text)
        ))),
    }
}

/// `--shard i/n` as `(i, n)`, with `1 <= i <= n`.
pub(crate) fn parse_shard(text: &str) -> Result<(u64, u64), UsageError> {
    let number = |s: &str| -> Option<u64> {
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    let Some((i, n)) = text
        .split_once('/')
        .and_then(|(i, n)| Some((number(i)?, number(n)?)))
    else {
        return Err(UsageError(format!(
            "`--shard` must be i/n such as 1/4 (shard i of n, 1 <= i <= n), got {}",
            quote(text)
        )));
    };
    if n == 0 || n > MAX_SHARDS {
        return Err(UsageError(format!(
            "`--shard {text}`: the number of shards must be within 1..={MAX_SHARDS}"
        )));
    }
    if i == 0 || i > n {
        return Err(UsageError(format!(
            "`--shard {text}`: shard {i} of {n} does not exist (shards count 1..={n})"
        )));
    }
    Ok((i, n))
}

/// `check MODEL ... --simulate ...`
pub(crate) fn simulate<M: Spec>(args: &mut Args) -> Outcome {
    for switch in ["dfs", "symmetry", "por", "no-shortest", "no-traces"] {
        if args.switch(switch) {
            return Err(UsageError(format!(
                "`--{switch}` is an option of the exhaustive check, not of `--simulate`"
            ))
            .into());
        }
    }
    for option in ["threads", "report"] {
        if args.take(option).is_some() {
            return Err(UsageError(format!(
                "`--{option}` is an option of the exhaustive check, not of `--simulate` \
                 (one thread per shard; run shards side by side)"
            ))
            .into());
        }
    }
    let seed = args.take_number("seed", 0, 0, usize::MAX)? as u64;
    let shard = match args.take("shard") {
        Some(text) => parse_shard(&text)?,
        None => (1, 1),
    };
    let seconds = match args.take("time") {
        Some(text) => parse_time(&text)?,
        None => {
            return Err(UsageError(
                "`--simulate` needs a time budget, `--time T` such as 30s or 2m".into(),
            )
            .into())
        }
    };
    let out = args.take("out").map(PathBuf::from);
    if out.as_ref().is_some_and(|o| o.as_os_str().is_empty()) {
        return Err(UsageError("`--out` needs a directory".into()).into());
    }
    crate::budget::watch(args, "check --simulate")?;
    let model: M = crate::commands::build(args)?;
    let run = ShardRun {
        seed,
        shard,
        seconds,
    };
    let file = swarm::walk(&model, &run).map_err(|e| UsageError(e.to_string()))?;
    if args.switch("json") {
        println!(
            "{}",
            serde_json::to_string_pretty(&file).expect("shard files serialise")
        );
    } else {
        print!("{}", render_shard(&file));
    }
    if let Some(dir) = out {
        let target = dir.join(file.file_name());
        let bytes = serde_json::to_vec_pretty(&file).expect("shard files serialise");
        let written =
            std::fs::create_dir_all(&dir).and_then(|()| crate::write_atomically(&target, &bytes));
        if let Err(e) = written {
            return Err(Failure::Run(format!(
                "cannot write `{}`: {e}",
                target.display()
            )));
        }
    }
    Ok(exit_status(file.properties.iter().map(|p| p.found)))
}

/// As the exhaustive check: 1 when a safety property has a counterexample. A
/// reachability property without an example is no finding of a walk, so it exits 0.
fn exit_status(found: impl IntoIterator<Item = Found>) -> ExitCode {
    if found.into_iter().any(|f| f == Found::Counterexample) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

const CANNOT_HOLD: &str = "random walks cannot show that a property holds: \"none found\" \
                           means none within the walks taken\n";

fn settings_words(settings: &BTreeMap<String, String>) -> String {
    settings
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The steps of a path, numbered.
fn steps(path: &FoundPath) -> String {
    let mut out = String::new();
    for (i, step) in path.steps.iter().enumerate() {
        out.push_str(&format!("  {:>2}. {}\n", i + 1, step.description));
    }
    out.push_str(&format!("      final state: {}\n", path.last_state));
    out
}

fn path_heading(p: &PropertyResult, path: &FoundPath, by: &str) -> String {
    let shape = path
        .shape
        .as_ref()
        .map(|s| format!(" [{s}]"))
        .unwrap_or_default();
    let mut out = format!(
        "\ncounterexample to \"{}\"{shape}, {} steps, {by}",
        p.name, path.length
    );
    if let Some(explorer) = &path.explorer_path {
        out.push_str(&format!(" (Explorer: #/steps/{explorer})"));
    }
    out.push('\n');
    out
}

/// One shard's result as text.
pub(crate) fn render_shard(f: &ShardFile) -> String {
    let mut out = format!(
        "model {}, design {} ({})\nswarm shard {} of {}, seed {} (shard seed {}): {} walks, \
         {} states, max depth {}, {:.2} s, {:.0} walks/s, {:.0} states/s\n{CANNOT_HOLD}\n",
        f.model,
        f.design,
        settings_words(&f.settings),
        f.shard,
        f.shards,
        f.seed,
        f.shard_seed,
        f.walks,
        f.states,
        f.max_depth,
        f.seconds,
        f.walks as f64 / f.seconds.max(1e-9),
        f.states as f64 / f.seconds.max(1e-9),
    );
    let mut rows = vec![vec![
        "property".to_string(),
        "kind".to_string(),
        "found".to_string(),
        "shortest".to_string(),
        "walk".to_string(),
    ]];
    for p in &f.properties {
        let (len, walk) = p.path.as_ref().map_or((String::new(), String::new()), |x| {
            (format!("{} steps", x.length), x.walk.to_string())
        });
        rows.push(vec![
            p.name.clone(),
            p.kind.clone(),
            p.found.words().to_string(),
            len,
            walk,
        ]);
    }
    out.push_str(&render::table(&rows));
    for p in &f.properties {
        if let (Found::Counterexample, Some(path)) = (p.found, &p.path) {
            out.push_str(&path_heading(p, path, &format!("walk {}", path.walk)));
            out.push_str(&steps(path));
        }
    }
    out
}

/// Reads one shard file, refusing anything that is not one.
fn read_shard(file: &FsPath) -> Result<ShardFile, UsageError> {
    let name = shown(file);
    let fail = |problem: String| UsageError(format!("`{name}`: {problem}"));
    let opened = std::fs::File::open(file).map_err(|e| fail(format!("cannot read it: {e}")))?;
    let mut bytes = Vec::new();
    opened
        .take(MAX_SHARD_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| fail(format!("cannot read it: {e}")))?;
    if bytes.len() as u64 > MAX_SHARD_FILE_BYTES {
        return Err(fail(format!(
            "larger than {} MiB, not a shard file",
            MAX_SHARD_FILE_BYTES >> 20
        )));
    }
    let shard: ShardFile = serde_json::from_slice(&bytes).map_err(|e| {
        fail(format!(
            "not a shard result file: {}",
            shorten(&e.to_string())
        ))
    })?;
    if shard.format != FORMAT {
        return Err(fail(format!(
            "format {}, expected `{FORMAT}`",
            quote(&shard.format)
        )));
    }
    if shard.shard == 0 || shard.shard > shard.shards {
        return Err(fail(format!(
            "shard {} of {} does not exist",
            shard.shard, shard.shards
        )));
    }
    for p in &shard.properties {
        let consistent = match (&p.path, p.found) {
            (None, Found::Nothing) => true,
            (Some(path), Found::Counterexample | Found::Example) => {
                path.length == path.steps.len() && path.length == path.actions.len()
            }
            _ => false,
        };
        if !consistent {
            return Err(fail(format!(
                "property {}: its verdict and its path disagree",
                quote(&p.name)
            )));
        }
    }
    Ok(shard)
}

/// The shard files of `dir`, `shard-*.json`, by name.
fn shard_files(dir: &FsPath) -> Result<Vec<PathBuf>, UsageError> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| UsageError(format!("`--merge {}`: {e}", dir.display())))?;
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| UsageError(format!("`--merge {}`: {e}", dir.display())))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("shard-") && name.ends_with(".json") {
            files.push(entry.path());
        }
    }
    if files.is_empty() {
        return Err(UsageError(format!(
            "`--merge {}`: no shard-*.json files there",
            dir.display()
        )));
    }
    files.sort();
    Ok(files)
}

/// `check --merge DIR`. Shard files are input like any other: each is checked against
/// the model it names (its properties are the model's, and each path it reports is
/// replayed through the model and must end where its property fires) before it is
/// counted, and what is printed comes from the model, not the file.
pub(crate) fn merge(args: &Args, dir: &str) -> Outcome {
    args.no_more_positionals(0)?;
    args.no_options("check --merge")?;
    let files = shard_files(FsPath::new(dir))?;
    let first = read_shard(&files[0])?;
    // The registry entry of the shard's model: `leadership` with several jobs is its own.
    let settings = Args {
        options: first.settings.clone().into_iter().collect(),
        ..Args::default()
    };
    let entry = crate::models::entry(&first.model, &settings);
    with_spec!(entry.as_str(), M => merge_of::<M>(&files, first))
}

/// The model `shard` (read from `file`) was walked on.
fn model_of<M: Spec>(file: &FsPath, shard: &ShardFile) -> Result<M, UsageError> {
    let pairs: Vec<(&str, &str)> = shard
        .settings
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let fail = |e: steadfast_model::SettingsError| UsageError(format!("`{}`: {e}", shown(file)));
    let settings = steadfast_model::Settings::parse(M::params(), &pairs).map_err(fail)?;
    M::build(&shard.design, &settings).map_err(fail)
}

/// A file name as printed: escaped, so that a name cannot drive the terminal.
fn shown(file: &FsPath) -> String {
    one_line(&file.display().to_string())
}

/// `shard` (read from `file`) checked against `model` ([`swarm::verify`]).
fn verified<M: Spec>(model: &M, file: &FsPath, shard: ShardFile) -> Result<ShardFile, UsageError> {
    swarm::verify(model, shard).map_err(|e| UsageError(format!("`{}`: {e}", shown(file))))
}

/// The best a swarm found for one property.
struct MergedProperty {
    result: PropertyResult,
    /// `(shard, shards, file)` of the shard that found the path.
    by: Option<(u64, u64, PathBuf)>,
}

/// The totals of a swarm's shards.
#[derive(Default)]
struct Totals {
    walks: u64,
    states: u64,
    seconds: f64,
    longest: f64,
}

/// The merge of `files`, whose first, `first`, names the model `M`.
fn merge_of<M: Spec>(files: &[PathBuf], first: ShardFile) -> Outcome {
    let model: M = model_of(&files[0], &first)?;
    let first = verified(&model, &files[0], first)?;
    let mut merged: Vec<MergedProperty> = first
        .properties
        .iter()
        .map(|p| MergedProperty {
            result: PropertyResult {
                found: Found::Nothing,
                path: None,
                ..p.clone()
            },
            by: None,
        })
        .collect();
    let mut seeds: BTreeMap<u64, PathBuf> = BTreeMap::new();
    let mut totals = Totals::default();
    for (i, file) in files.iter().enumerate() {
        let shard = if i == 0 {
            first.clone()
        } else {
            let shard = read_shard(file)?;
            same_swarm(&first, &files[0], &shard, file)?;
            verified(&model, file, shard)?
        };
        if let Some(other) = seeds.insert(shard.shard_seed, file.clone()) {
            return Err(UsageError(format!(
                "`{}`: same shard seed as `{}`; it repeats the same walks",
                shown(file),
                shown(&other)
            ))
            .into());
        }
        keep_shortest(&mut merged, &shard, file);
        totals.walks = totals.walks.saturating_add(shard.walks);
        totals.states = totals.states.saturating_add(shard.states);
        totals.seconds += shard.seconds;
        totals.longest = totals.longest.max(shard.seconds);
    }
    print!("{}", render_merge(&model, files.len(), &totals, &merged));
    Ok(exit_status(merged.iter().map(|m| m.result.found)))
}

/// Refuses `shard` unless it walked the model, design and settings of `first`.
fn same_swarm(
    first: &ShardFile,
    first_file: &FsPath,
    shard: &ShardFile,
    file: &FsPath,
) -> Result<(), UsageError> {
    let differs = |what: &str| {
        Err(UsageError(format!(
            "`{}`: {what} from that of `{}`",
            shown(file),
            shown(first_file)
        )))
    };
    if shard.model != first.model {
        return differs("its model differs");
    }
    if shard.design != first.design {
        return differs("its design differs");
    }
    if shard.settings != first.settings {
        return differs("its settings differ");
    }
    Ok(())
}

/// Keeps, per property, the shortest path of `merged` and `shard`.
fn keep_shortest(merged: &mut [MergedProperty], shard: &ShardFile, file: &FsPath) {
    for (m, p) in merged.iter_mut().zip(&shard.properties) {
        let Some(path) = &p.path else { continue };
        let shorter = m
            .result
            .path
            .as_ref()
            .is_none_or(|best| path.length < best.length);
        if shorter {
            m.result.found = p.found;
            m.result.path = Some(path.clone());
            m.by = Some((shard.shard, shard.shards, file.to_path_buf()));
        }
    }
}

/// The merged table and the shortest counterexamples, every name from the model.
fn render_merge<M: Spec>(
    model: &M,
    shards: usize,
    t: &Totals,
    merged: &[MergedProperty],
) -> String {
    let settings = model
        .settings()
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ");
    let mut out = format!(
        "model {}, design {} ({settings})\nswarm of {shards} shards: {} walks, {} states, \
         {:.2} s of walking (longest shard {:.2} s)\n{CANNOT_HOLD}\n",
        M::NAME,
        model.design_name(),
        t.walks,
        t.states,
        t.seconds,
        t.longest,
    );
    let mut rows = vec![vec![
        "property".to_string(),
        "kind".to_string(),
        "found".to_string(),
        "shortest".to_string(),
        "by shard".to_string(),
    ]];
    for m in merged {
        let (len, by) = match (&m.result.path, &m.by) {
            (Some(path), Some((i, n, _))) => (format!("{} steps", path.length), format!("{i}/{n}")),
            _ => (String::new(), String::new()),
        };
        rows.push(vec![
            m.result.name.clone(),
            m.result.kind.clone(),
            m.result.found.words().to_string(),
            len,
            by,
        ]);
    }
    out.push_str(&render::table(&rows));
    for m in merged {
        if let (Found::Counterexample, Some(path), Some((i, n, file))) =
            (m.result.found, &m.result.path, &m.by)
        {
            let by = format!("shard {i}/{n}, walk {} ({})", path.walk, shown(file));
            out.push_str(&path_heading(&m.result, path, &by));
            out.push_str(&steps(path));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_budgets_are_whole_units_within_a_week() {
        assert_eq!(parse_time("30s"), Ok(30));
        assert_eq!(parse_time("2m"), Ok(120));
        assert_eq!(parse_time("1h"), Ok(3600));
        assert_eq!(parse_time("168h"), Ok(MAX_SECONDS));
        for bad in [
            "", "0", "30", "0s", "1.5s", "-1s", "+1s", "5parsecs", "1 s", "s", "169h",
        ] {
            assert!(parse_time(bad).is_err(), "{bad}");
        }
        assert!(parse_time("99999999999999999999h").is_err());
    }

    #[test]
    fn shards_count_from_one_to_n() {
        assert_eq!(parse_shard("1/1"), Ok((1, 1)));
        assert_eq!(parse_shard("4/4"), Ok((4, 4)));
        for bad in [
            "0/4", "5/4", "x", "1/0", "1/", "/4", "+1/4", "1/4/4", "-1/4",
        ] {
            assert!(parse_shard(bad).is_err(), "{bad}");
        }
    }
}
