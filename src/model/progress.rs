//! A migration's progress record (`RecordKind::Progress`): how many of its
//! steps are done, written after each step in the migration's vhost (see
//! `journal`).

use serde::{Deserialize, Serialize};

use super::record_format::{RECORD_FORMAT, RecordError};
use super::record_kind::RecordKind;

/// A migration's progress record: its steps done (the record's
/// generation), and what tells it from a record that an earlier migration
/// with the same id left behind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    pub vhost: String,
    pub id: String,
    pub done: usize,
    /// The migration's `started` and `fingerprint`.
    pub started: String,
    pub fingerprint: String,
    pub updated: String,
}

#[derive(Serialize, Deserialize)]
struct ProgressBody {
    format: u64,
    started: String,
    fingerprint: String,
    updated: String,
}

impl Progress {
    /// What the record holds besides its name.
    pub fn to_json(&self) -> serde_json::Value {
        let body = ProgressBody {
            format: RECORD_FORMAT,
            started: self.started.clone(),
            fingerprint: self.fingerprint.clone(),
            updated: self.updated.clone(),
        };
        serde_json::to_value(body).expect("a progress record always serialises")
    }

    /// The record of migration `id` in `vhost`, of generation `done`.
    pub fn from_json(vhost: &str, id: &str, done: u64, value: serde_json::Value) -> Result<Progress, RecordError> {
        RecordError::check_format(RecordKind::Progress, &value)?;
        let body: ProgressBody = serde_json::from_value(value).map_err(|e| e.to_string())?;
        Ok(Progress {
            vhost: vhost.to_string(),
            id: id.to_string(),
            done: usize::try_from(done).map_err(|e| e.to_string())?,
            started: body.started,
            fingerprint: body.fingerprint,
            updated: body.updated,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_progress_record_carries_the_record_format() {
        let p = Progress {
            vhost: "v".into(),
            id: "m".into(),
            done: 3,
            started: "t0".into(),
            fingerprint: "f".into(),
            updated: "t1".into(),
        };
        let written = p.to_json();
        assert_eq!(written["format"], RECORD_FORMAT);
        assert_eq!(Progress::from_json("v", "m", 3, written), Ok(p));
        // As warren wrote them before records carried a format.
        let bare = serde_json::json!({"started": "t0", "fingerprint": "f", "updated": "t1"});
        let e = Progress::from_json("v", "m", 3, bare).unwrap_err();
        assert_eq!(e, RecordError::OtherFormat { kind: RecordKind::Progress, found: None });
    }
}
