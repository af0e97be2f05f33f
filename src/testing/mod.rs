//! Helpers for warren's tests, benchmarks and tools; not part of its API.
//! Deterministic: the same arguments always give the same output.

pub mod generate;
pub mod objects;

pub use generate::{large_definitions, large_topology};
