//! Helpers for warren's tests, benchmarks and tools; not part of its API.
//! Deterministic: the same arguments always give the same output.

pub mod generate;
mod toml_fast_path;

pub use generate::{large_definitions, large_topology};
pub use toml_fast_path::toml_fast_path_agrees;
