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
    super::same_debug(&fast, &slow, "toml crate")
}
