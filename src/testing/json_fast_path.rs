//! Checks the quick reader of definitions exports against the derived one.

use crate::live::definitions::Definitions;

/// Whether the quick reader took `text` (`Ok(false)`: it left it to the
/// derived reader), or how what it read differs from what the derived
/// reader reads, or that it took a text the derived reader refuses.
pub fn json_fast_path_agrees(text: &str) -> Result<bool, String> {
    let Some(fast) = crate::live::fast_json::parse(text) else {
        return Ok(false);
    };
    let slow: Definitions = serde_json::from_str(text)
        .map_err(|e| format!("the quick reader took a document the derived reader refuses: {e}"))?;
    // Debug output shows every field of every item, in order.
    super::same_debug(&fast, &slow, "derived reader")
}
