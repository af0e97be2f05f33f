//! Helpers for warren's tests, benchmarks and tools; not part of its API.
//! Deterministic: the same arguments always give the same output.

pub mod generate;
mod json_fast_path;
mod toml_fast_path;

pub use generate::{large_definitions, large_topology};
pub use json_fast_path::json_fast_path_agrees;
pub use toml_fast_path::toml_fast_path_agrees;
