//! Stateright models.
