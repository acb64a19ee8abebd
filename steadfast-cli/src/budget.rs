//! The memory budget of a run: a watcher thread reads the process's resident memory
//! (Linux `/proc/self/statm`) ten times a second and, past the budget, ends the process
//! with one line naming the budget, the memory in use and how far the run got (exit
//! status 3), before the machine runs out. stateright's checker cannot be stopped from
//! outside; ending the process is what keeps the machine usable.

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use crate::args::{Args, UsageError};

/// The default budget: two thirds of this project's machines (24 GiB).
pub(crate) const DEFAULT_MAX_MEMORY_MIB: usize = 16 * 1024;

/// Exit status of a run that failed while running (a budget exceeded, an I/O error).
pub(crate) const RUN_FAILURE: u8 = 3;

/// Takes `--max-memory MIB` and starts the watcher for `what` (`check`, `explore`, ...),
/// a run of the model checker, whose live counts say how far it got.
pub(crate) fn watch(args: &mut Args, what: &'static str) -> Result<(), UsageError> {
    watch_with(args, what, checker_progress)
}

/// [`watch`] for a run whose progress `progress` describes (`None` when nothing is
/// known yet), as `N unique states, ...`.
pub(crate) fn watch_with(
    args: &mut Args,
    what: &'static str,
    progress: fn() -> Option<String>,
) -> Result<(), UsageError> {
    let mib = args.take_number("max-memory", DEFAULT_MAX_MEMORY_MIB, 16, 1 << 20)?;
    let limit = (mib as u64) << 20;
    let page = page_size();
    if resident_bytes(page).is_none() {
        // Not Linux: nothing to read; the budget cannot be kept, say so once.
        eprintln!("steadfast: warning: no /proc/self/statm here; --max-memory is not enforced");
        return Ok(());
    }
    std::thread::Builder::new()
        .name("memory-budget".into())
        .spawn(move || loop {
            std::thread::sleep(Duration::from_millis(100));
            let Some(used) = resident_bytes(page) else {
                return;
            };
            if used > limit {
                let after = progress()
                    .map(|p| format!(" after {p}"))
                    .unwrap_or_default();
                eprintln!(
                    "steadfast: {what} stopped: memory budget of {mib} MiB exceeded ({} MiB in \
                     use){after}; raise --max-memory or lower the bounds",
                    used >> 20
                );
                std::process::exit(i32::from(RUN_FAILURE));
            }
        })
        .map_err(|e| UsageError(format!("cannot start the memory watcher: {e}")))?;
    Ok(())
}

/// How far the model checker's run got, once it has counted anything.
pub(crate) fn checker_progress() -> Option<String> {
    let (unique, generated, depth) = steadfast_model::check::live_counts();
    (unique > 0).then(|| format!("{unique} unique states, {generated} generated, depth {depth}"))
}

/// Counts noted by a run that is not the model checker's ([`note`]).
static NOTED: [AtomicU64; 3] = [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)];

/// Notes how far a conformance replay got: unique states, transitions, level.
pub(crate) fn note(unique: usize, transitions: usize, level: usize) {
    for (slot, n) in NOTED.iter().zip([unique, transitions, level]) {
        slot.store(n as u64, Relaxed);
    }
}

/// How far the run that [`note`]s got, once it has counted anything.
pub(crate) fn replay_progress() -> Option<String> {
    let [unique, transitions, level] = NOTED.each_ref().map(|n| n.load(Relaxed));
    (unique > 0).then(|| {
        format!("{unique} unique states, {transitions} transitions replayed, level {level}")
    })
}

fn page_size() -> u64 {
    #[cfg(unix)]
    {
        // SAFETY: sysconf with a valid name has no preconditions.
        let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if size > 0 {
            return size as u64;
        }
    }
    4096
}

/// Resident memory of this process, from the second field of `/proc/self/statm`.
fn resident_bytes(page: u64) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = text.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * page)
}
