//! Conformance between the stateright models (`steadfast-model`) and the production
//! state machines (`steadfast`): model traces drive the machines step by step.
