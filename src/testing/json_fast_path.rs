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
    let (fast, slow) = (format!("{fast:#?}"), format!("{slow:#?}"));
    match fast.lines().zip(slow.lines()).position(|(a, b)| a != b) {
        None if fast.len() == slow.len() => Ok(true),
        at => {
            let at = at.unwrap_or(fast.lines().count().min(slow.lines().count()));
            let around = |s: &str| s.lines().skip(at.saturating_sub(8)).take(12).collect::<Vec<_>>().join("\n");
            Err(format!("line {at} differs:\nquick:\n{}\nderived:\n{}", around(&fast), around(&slow)))
        }
    }
}
