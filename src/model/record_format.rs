//! The format every record warren keeps on the broker carries (the
//! inventories, the journal, the migrations' progress records), and the
//! refusal of a record of another format.

use std::fmt;

use serde_json::Value as Json;

use super::record_kind::RecordKind;

/// The format of every record warren writes, in the record's `"format"`.
/// One number for all the kinds, not one each: a project's records are
/// written together, by one warren under one lock, and a plan reads them
/// together (what the project owns, and the migrations in flight), so a
/// warren that cannot read one of them can use none; and one number is
/// what a user needs to know of a warren. Bumped on any change that a
/// warren of the previous format would misread. A record of another format
/// is refused, never converted. 3: above every number an earlier record
/// carried (inventories 1, the broker-wide records 2, journals 1), so that
/// none of those passes for this format. A record too large for one
/// parameter is kept in parts whose index says format 4
/// ([`super::record_parts`]): the parts joined are a record of this format.
pub const RECORD_FORMAT: u64 = 3;

/// Why a record cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordError {
    /// It carries another format than [`RECORD_FORMAT`]: `found` is the
    /// value it carries, `None` when it carries none.
    OtherFormat { kind: RecordKind, found: Option<String> },
    /// Of this format, but not as this warren writes it.
    Malformed(String),
}

impl RecordError {
    /// Refuses `value`, a record of `kind`, unless it carries this warren's
    /// format. Checked before anything else in it is read: a record of
    /// another format may hold anything.
    pub fn check_format(kind: RecordKind, value: &Json) -> Result<(), RecordError> {
        Self::check_found_format(kind, value.get("format"))
    }

    /// [`Self::check_format`] of the `format` found, read apart from the
    /// rest of the record (`None`: it has none).
    pub fn check_found_format(kind: RecordKind, found: Option<&Json>) -> Result<(), RecordError> {
        match found {
            Some(f) if f.as_u64() == Some(RECORD_FORMAT) => Ok(()),
            found => Err(RecordError::OtherFormat { kind, found: found.map(Json::to_string) }),
        }
    }

    /// Whether the record was refused for carrying the format `format`.
    pub fn found_format(&self, format: u64) -> bool {
        matches!(self, RecordError::OtherFormat { found: Some(f), .. } if *f == format.to_string())
    }
}

/// The helpers that read a record's parts say what is malformed in words.
impl From<String> for RecordError {
    fn from(what: String) -> RecordError {
        RecordError::Malformed(what)
    }
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordError::Malformed(what) => f.write_str(what),
            RecordError::OtherFormat { kind, found } => {
                match found {
                    Some(found) => write!(f, "it was written in record format {found}")?,
                    None => write!(f, "it carries no record format")?,
                }
                write!(f, ", and this warren reads format {RECORD_FORMAT}: ")?;
                f.write_str(match kind {
                    RecordKind::Inventory => {
                        "go on with the warren that wrote it, or delete it to start afresh (the next apply records what the files declare; objects removed from the files meanwhile show as unmanaged, and are never destroyed)"
                    }
                    RecordKind::Journal => {
                        "finish or abort its migrations in flight with the warren that wrote it, then delete it to start afresh (the history of runs goes with it)"
                    }
                    RecordKind::Progress => {
                        "finish or abort its migration with the warren that wrote it, then delete it and the journal to start afresh"
                    }
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_record_of_another_format_is_refused_naming_both_formats_and_what_to_do() {
        assert_eq!(RecordError::check_format(RecordKind::Journal, &json!({"format": RECORD_FORMAT})), Ok(()));
        let e = RecordError::check_format(RecordKind::Journal, &json!({"format": 1})).unwrap_err();
        assert_eq!(e, RecordError::OtherFormat { kind: RecordKind::Journal, found: Some("1".into()) });
        assert_eq!(
            e.to_string(),
            "it was written in record format 1, and this warren reads format 3: finish or abort its migrations in flight with the warren that wrote it, then delete it to start afresh (the history of runs goes with it)"
        );
        for other in [json!({}), json!({"format": "3"}), json!({"format": 3.5}), json!([3])] {
            let e = RecordError::check_format(RecordKind::Inventory, &other).unwrap_err();
            assert!(e.to_string().contains("this warren reads format 3: go on with the warren that wrote it"), "{e}");
        }
        let none = RecordError::check_format(RecordKind::Progress, &json!({"started": "t"})).unwrap_err();
        assert!(none.to_string().starts_with("it carries no record format, and this warren reads format 3"), "{none}");
    }
}
