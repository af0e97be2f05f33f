//! Helpers for warren's tests, benchmarks and tools; not part of its API.
//! Deterministic: the same arguments always give the same output.

pub mod generate;
mod json_fast_path;
mod toml_fast_path;

pub use generate::{large_definitions, large_topology};
pub use json_fast_path::json_fast_path_agrees;
pub use toml_fast_path::toml_fast_path_agrees;

/// `Ok(true)` when a quick reader's result prints as the reference
/// reader's (named `reference` in the message), else the lines around the
/// first difference.
fn same_debug(fast: &impl std::fmt::Debug, slow: &impl std::fmt::Debug, reference: &str) -> Result<bool, String> {
    let (fast, slow) = (format!("{fast:#?}"), format!("{slow:#?}"));
    match fast.lines().zip(slow.lines()).position(|(a, b)| a != b) {
        None if fast.len() == slow.len() => Ok(true),
        at => {
            let at = at.unwrap_or(fast.lines().count().min(slow.lines().count()));
            let around = |s: &str| s.lines().skip(at.saturating_sub(8)).take(12).collect::<Vec<_>>().join("\n");
            Err(format!("line {at} differs:\nquick:\n{}\n{reference}:\n{}", around(&fast), around(&slow)))
        }
    }
}
