//! A migration's progress record (`RecordKind::Progress`): how many of its
//! steps are done, written after each step in the migration's vhost (see
//! `journal`).

use serde::{Deserialize, Serialize};

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
    started: String,
    fingerprint: String,
    updated: String,
}

impl Progress {
    /// What the record holds besides its name.
    pub fn to_json(&self) -> serde_json::Value {
        let body = ProgressBody {
            started: self.started.clone(),
            fingerprint: self.fingerprint.clone(),
            updated: self.updated.clone(),
        };
        serde_json::to_value(body).expect("a progress record always serialises")
    }

    /// The record of migration `id` in `vhost`, of generation `done`.
    pub fn from_json(vhost: &str, id: &str, done: u64, value: serde_json::Value) -> Result<Progress, String> {
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
