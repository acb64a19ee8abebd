//! The user code an operator runs: an action's body ([`ActionBody`]), the step it asks
//! for next ([`ActionStep`]), a named action ([`ActionDef`]), and a body that calls a
//! fixed list of functions ([`CallChain`]).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::durable::{CallOutcome, Datum};

/// What an action body asks for next.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ActionStep {
    /// Make a durable call to `function` with `args`.
    Call {
        /// Function identifier (saved with the result and compared on reuse).
        function: String,
        /// Call arguments (their digest is saved and compared on reuse).
        args: Datum,
    },
    /// The action is done with this output.
    Finish {
        /// The action's output.
        output: Datum,
    },
}

/// User code of an action: deterministic given the input and earlier call results.
pub trait ActionBody: Send + Sync {
    /// The next step after the calls whose outcomes are in `results` (call order).
    fn step(&self, input: &Datum, results: &[CallOutcome]) -> ActionStep;
}

/// A named action.
#[derive(Clone)]
pub struct ActionDef {
    /// Action name (part of every state key).
    pub name: String,
    /// The action's code.
    pub body: Arc<dyn ActionBody>,
}

/// The same name and the same body (the same code object, by address: bodies are code,
/// not values).
impl PartialEq for ActionDef {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && Arc::ptr_eq(&self.body, &other.body)
    }
}

impl Eq for ActionDef {}

impl std::fmt::Debug for ActionDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActionDef")
            .field("name", &self.name)
            .finish()
    }
}

impl ActionDef {
    /// An action named `name` running `body`.
    pub fn new(name: impl Into<String>, body: impl ActionBody + 'static) -> Self {
        ActionDef {
            name: name.into(),
            body: Arc::new(body),
        }
    }
}

/// A body that calls each function of a fixed list in turn. Call `i` gets the
/// arguments `[input, i]`; the output is the last call's value (an error outcome
/// becomes `{"error": message}`), or the input when the list is empty.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallChain {
    /// Functions called, in order.
    pub functions: Vec<String>,
}

impl CallChain {
    /// A chain over `functions`.
    pub fn new<S: Into<String>>(functions: impl IntoIterator<Item = S>) -> Self {
        CallChain {
            functions: functions.into_iter().map(Into::into).collect(),
        }
    }
}

impl ActionBody for CallChain {
    fn step(&self, input: &Datum, results: &[CallOutcome]) -> ActionStep {
        match self.functions.get(results.len()) {
            Some(function) => ActionStep::Call {
                function: function.clone(),
                args: serde_json::json!([input, results.len()]),
            },
            None => ActionStep::Finish {
                output: match results.last() {
                    None => input.clone(),
                    Some(CallOutcome::Value(v)) => v.clone(),
                    Some(CallOutcome::Error(m)) => serde_json::json!({ "error": m }),
                },
            },
        }
    }
}
