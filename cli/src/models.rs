//! The registry of models the command line knows, by name.
//!
//! `with_spec!(name, M => expr)` evaluates `expr` with the type alias `M` bound to the
//! model called `name`, or returns a usage error naming the known models.

/// Model names, in the order tables list them.
pub const NAMES: &[&str] = &["leadership", "durable"];

macro_rules! with_spec {
    ($name:expr, $m:ident => $body:expr) => {{
        #[allow(unreachable_code, clippy::match_single_binding)]
        match $name {
            "leadership" => {
                type $m = steadfast_model::leadership::Leadership;
                $body
            }
            "durable" => {
                type $m = steadfast_model::durable::Durable;
                $body
            }
            other => Err($crate::args::UsageError(format!(
                "unknown model `{other}` (models: {})",
                $crate::models::NAMES.join(", ")
            ))),
        }
    }};
}

pub(crate) use with_spec;

/// Models bound to a runtime, in the order tables list them.
pub const BOUND: &[&str] = &["leadership", "durable", "durable-eager"];

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
            "durable" => {
                type $b = steadfast_conformance::durable::DurableBinding;
                $body
            }
            "durable-eager" => {
                type $b = steadfast_conformance::durable::eager::EagerBinding;
                $body
            }
            other => Err($crate::args::UsageError(format!(
                "model `{other}` is not bound to a runtime (bound: {})",
                $crate::models::BOUND.join(", ")
            ))),
        }
    }};
}

pub(crate) use with_binding;
