//! Benchmarks of model checking, conformance replay and the runtimes.
