//! The registry of models the command line knows, by name.
//!
//! `with_spec!(name, M => expr)` evaluates `expr` with the type alias `M` bound to the
//! model called `name`, or returns a usage error naming the known models.

use crate::args::Args;

/// Model names, in the order tables list them.
pub(crate) const NAMES: &[&str] = &["leadership", "durable"];

/// Every registry entry, in the order verdict tables list them: `leadership-jobs` is
/// the leadership model with several jobs (`steadfast_model::leadership::Jobs`).
pub(crate) const ENTRIES: &[&str] = &["leadership", "leadership-jobs", "durable"];

/// The registry entry for the model a command names, given its options: `leadership`
/// with `--jobs` above 1, or with a several-jobs scenario, is `leadership-jobs`. A
/// `--jobs` value that is not a number stays with `leadership`, whose settings say
/// what is wrong with it.
pub(crate) fn entry(name: &str, args: &Args) -> String {
    let several = args
        .peek("jobs")
        .and_then(|v| v.parse::<u64>().ok())
        .is_some_and(|n| n > 1)
        || args
            .peek("scenario")
            .is_some_and(steadfast_model::leadership::jobs::is_jobs_scenario);
    if name == "leadership" && several {
        "leadership-jobs".to_string()
    } else {
        name.to_string()
    }
}

macro_rules! with_spec {
    ($name:expr, $m:ident => $body:expr) => {{
        #[allow(unreachable_code, clippy::match_single_binding)]
        match $name {
            "leadership" => {
                type $m = steadfast_model::leadership::Leadership;
                $body
            }
            "leadership-jobs" => {
                type $m = steadfast_model::leadership::Jobs;
                $body
            }
            "durable" => {
                type $m = steadfast_model::durable::Durable;
                $body
            }
            other => Err($crate::args::UsageError(format!(
                "unknown model {} (models: {})",
                steadfast_model::quote::quote(other),
                $crate::models::NAMES.join(", ")
            ))
            .into()),
        }
    }};
}

pub(crate) use with_spec;

/// Models bound to a runtime, in the order tables list them.
pub(crate) const BOUND: &[&str] = &[
    "leadership",
    "leadership-automatic",
    "durable",
    "durable-eager",
    "durable-driver",
];

/// `with_binding!(name, B => expr)`: like [`with_spec!`], with `B` bound to the
/// conformance binding of the model called `name`.
macro_rules! with_binding {
    ($name:expr, $b:ident => $body:expr) => {{
        #[allow(unreachable_code, clippy::match_single_binding)]
        match $name {
            "leadership" => {
                type $b = steadfast_conformance::leadership::LeadershipBinding;
                $body
            }
            "leadership-automatic" => {
                type $b = steadfast_conformance::leadership::automatic::AutomaticBinding;
                $body
            }
            "durable" => {
                type $b = steadfast_conformance::durable::DurableBinding;
                $body
            }
            "durable-eager" => {
                type $b = steadfast_conformance::durable::eager::EagerBinding;
                $body
            }
            "durable-driver" => {
                type $b = steadfast_conformance::durable::driver::DriverBinding;
                $body
            }
            other => Err($crate::args::UsageError(format!(
                "model {} is not bound to a runtime (bound: {})",
                steadfast_model::quote::quote(other),
                $crate::models::BOUND.join(", ")
            ))
            .into()),
        }
    }};
}

pub(crate) use with_binding;
