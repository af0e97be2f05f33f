//! Checks the quick TOML reader of topology files against the toml crate.

use toml::de::DeTable;

use crate::desired::tree::Table;

/// Whether the quick reader took `text` (`Ok(false)`: it left it to the
/// toml crate), or how what it read differs from what the toml crate reads.
pub fn toml_fast_path_agrees(text: &str) -> Result<bool, String> {
    let Some(fast) = crate::desired::fast_toml::parse(text) else {
        return Ok(false);
    };
    let (slow, errors) = DeTable::parse_recoverable(text);
    if !errors.is_empty() {
        return Err(format!("the quick reader took a document the toml crate refuses: {errors:?}"));
    }
    let slow = Table::from_toml(slow.into_inner());
    // Debug output shows every key, value and range, in order.
    let (fast, slow) = (format!("{fast:#?}"), format!("{slow:#?}"));
    match fast.lines().zip(slow.lines()).position(|(a, b)| a != b) {
        None if fast.len() == slow.len() => Ok(true),
        at => {
            let at = at.unwrap_or(fast.lines().count().min(slow.lines().count()));
            let around = |s: &str| s.lines().skip(at.saturating_sub(8)).take(12).collect::<Vec<_>>().join("\n");
            Err(format!("line {at} differs:\nquick:\n{}\ntoml crate:\n{}", around(&fast), around(&slow)))
        }
    }
}
