//! Reading and writing warren's records where `model::records` says they
//! live: broker-wide global parameters, or record exchanges inside vhosts.

use std::collections::{BTreeMap, BTreeSet};

use reqwest::Method;
use serde_json::{Value as Json, json};

use super::lock::{LOCK_QUEUE, Lock};
use super::{Broker, BrokerError, segment};
use crate::model::{INVENTORY_PARAMETER, JOURNAL_PARAMETER, Place, RECORD_ARGUMENT, RecordKind, RecordWrite};

/// The generations of a project's journal exchange found in its home
/// vhost, so that each write can delete the ones it replaces.
#[derive(Debug, Clone, Default)]
pub struct JournalSlot {
    found: BTreeSet<u64>,
}

/// A journal read from its place, as status and abort find it.
#[derive(Debug, Clone)]
pub struct FoundJournal {
    pub place: Place,
    pub value: Json,
}

impl Broker {
    /// Where this run keeps `project`'s records: broker-wide for a user
    /// with the `administrator` tag, else inside the vhosts the files
    /// declare, with the journal and lock in the first by name.
    pub async fn place_of(&self, project: &str, vhosts: &[String]) -> Result<Place, BrokerError> {
        let Some(home) = vhosts.iter().min() else { return Ok(Place::Broker) };
        if self.is_administrator().await? {
            return Ok(Place::Broker);
        }
        // Its lock is taken there first: a vhost this user cannot reach
        // is said as the live read would say it.
        let listing = self.http.get_json("vhosts?columns=name", "list the vhosts").await?;
        if !listing.as_array().into_iter().flatten().any(|v| v["name"].as_str() == Some(home)) {
            return Err(BrokerError::Forbidden {
                user: self.endpoint().user.clone(),
                action: format!("create vhost \"{home}\" (it does not exist, or this user has no permissions on it)"),
            });
        }
        Ok(Place::Vhosts { project: project.to_string(), home: home.clone() })
    }

    /// The broker-wide records (inventory and journal) as global
    /// parameters, as an export carries them: both at once, those that
    /// exist. None for a user who may not read global parameters: its
    /// records are inside its vhosts.
    pub(super) async fn broker_records(&self) -> Result<Vec<String>, BrokerError> {
        let inventory_path = format!("global-parameters/{}", segment(INVENTORY_PARAMETER));
        let journal_path = format!("global-parameters/{}", segment(JOURNAL_PARAMETER));
        let (inventory, journal) = tokio::join!(
            self.get_text(&inventory_path, "read warren's inventory"),
            self.get_text(&journal_path, "read warren's journal"),
        );
        let mut records = Vec::new();
        for parameter in [inventory, journal] {
            match parameter {
                Err(BrokerError::NotFound { .. } | BrokerError::Forbidden { .. }) => {}
                other => records.push(other?),
            }
        }
        Ok(records)
    }

    /// Carries out the writes of the records, in order. Within a vhost the
    /// next generation is declared before the older ones are deleted.
    pub async fn write_records(&self, writes: &[RecordWrite]) -> Result<(), BrokerError> {
        for w in writes {
            match w {
                RecordWrite::Broker(ownership) => {
                    let body = json!({ "name": INVENTORY_PARAMETER, "value": ownership.to_json() });
                    let path = format!("global-parameters/{}", segment(INVENTORY_PARAMETER));
                    self.http.send(Method::PUT, &path, Some(&body), "record warren's inventory").await?;
                }
                RecordWrite::Vhost { vhost, project, next, inventory, stale } => {
                    let kind = RecordKind::Inventory;
                    if let Some(inventory) = inventory {
                        self.declare_record(vhost, &kind.exchange(project, *next), &inventory.to_json()).await?;
                    }
                    for g in stale {
                        self.delete_record(vhost, &kind.exchange(project, *g)).await?;
                    }
                }
            }
        }
        Ok(())
    }

    async fn declare_record(&self, vhost: &str, name: &str, value: &Json) -> Result<(), BrokerError> {
        let body = json!({
            "type": "fanout", "durable": true, "auto_delete": false, "internal": true,
            "arguments": { RECORD_ARGUMENT: value.to_string() },
        });
        let path = format!("exchanges/{}/{}", segment(vhost), segment(name));
        let action = format!("record warren's records in vhost \"{vhost}\" (exchange \"{name}\")");
        self.http.send(Method::PUT, &path, Some(&body), &action).await.map(|_| ())
    }

    async fn delete_record(&self, vhost: &str, name: &str) -> Result<(), BrokerError> {
        let path = format!("exchanges/{}/{}", segment(vhost), segment(name));
        let action = format!("delete warren's older record \"{name}\" in vhost \"{vhost}\"");
        match self.http.send(Method::DELETE, &path, None, &action).await {
            Ok(_) | Err(BrokerError::NotFound { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// The journal kept at `place`, `None` when there is none yet, and the
    /// generations found there for the writes to come.
    pub async fn read_journal(&self, place: &Place) -> Result<(Option<Json>, JournalSlot), BrokerError> {
        match place {
            Place::Broker => {
                let path = format!("global-parameters/{}", segment(JOURNAL_PARAMETER));
                match self.http.get_json(&path, "read warren's journal").await {
                    Ok(p) => Ok((Some(p["value"].clone()), JournalSlot::default())),
                    Err(BrokerError::NotFound { .. }) => Ok((None, JournalSlot::default())),
                    Err(e) => Err(e),
                }
            }
            Place::Vhosts { project, home } => {
                let mut slot = JournalSlot::default();
                let mut newest = None;
                for (_, name, value) in self.record_exchanges(Some(home)).await? {
                    if let Some((RecordKind::Journal, p, g)) = RecordKind::parse(&name)
                        && p == project
                    {
                        slot.found.insert(g);
                        if slot.found.last() == Some(&g) {
                            newest = Some(value);
                        }
                    }
                }
                Ok((newest, slot))
            }
        }
    }

    /// Replaces the journal at `place`. Last write wins: only the lock
    /// holder writes.
    pub async fn write_journal(&self, place: &Place, value: &Json, slot: &mut JournalSlot) -> Result<(), BrokerError> {
        match place {
            Place::Broker => {
                let body = json!({ "name": JOURNAL_PARAMETER, "value": value });
                let path = format!("global-parameters/{}", segment(JOURNAL_PARAMETER));
                self.http.send(Method::PUT, &path, Some(&body), "record warren's journal").await.map(|_| ())
            }
            Place::Vhosts { project, home } => {
                let next = slot.found.last().map_or(1, |g| g + 1);
                self.declare_record(home, &RecordKind::Journal.exchange(project, next), value).await?;
                for g in std::mem::take(&mut slot.found) {
                    self.delete_record(home, &RecordKind::Journal.exchange(project, g)).await?;
                }
                slot.found.insert(next);
                Ok(())
            }
        }
    }

    /// Every journal this user can read: the broker-wide one, and those
    /// inside vhosts, from one listing of the exchanges with their records.
    pub async fn journals(&self) -> Result<Vec<FoundJournal>, BrokerError> {
        let mut out = Vec::new();
        match self.read_journal(&Place::Broker).await {
            Ok((Some(value), _)) => out.push(FoundJournal { place: Place::Broker, value }),
            Ok((None, _)) | Err(BrokerError::Forbidden { .. }) => {}
            Err(e) => return Err(e),
        }
        // The newest generation of each project's journal, by place.
        let mut newest: BTreeMap<Place, (u64, Json)> = BTreeMap::new();
        for (vhost, name, value) in self.record_exchanges(None).await? {
            if let Some((RecordKind::Journal, project, g)) = RecordKind::parse(&name) {
                let place = Place::Vhosts { project: project.to_string(), home: vhost };
                if newest.get(&place).is_none_or(|(seen, _)| g > *seen) {
                    newest.insert(place, (g, value));
                }
            }
        }
        out.extend(newest.into_iter().map(|(place, (_, value))| FoundJournal { place, value }));
        Ok(out)
    }

    /// The record exchanges of one vhost, or of every vhost this user can
    /// see: (vhost, name, the record's JSON).
    async fn record_exchanges(&self, vhost: Option<&str>) -> Result<Vec<(String, String, Json)>, BrokerError> {
        let (path, action) = match vhost {
            Some(v) => (
                format!("exchanges/{}?columns=name,vhost,arguments", segment(v)),
                format!("read warren's records in vhost \"{v}\""),
            ),
            None => ("exchanges?columns=name,vhost,arguments".to_string(), "read warren's records".to_string()),
        };
        let listing = match self.http.get_json(&path, &action).await {
            Err(BrokerError::NotFound { .. }) => return Ok(Vec::new()),
            other => other?,
        };
        let mut out = Vec::new();
        for x in listing.as_array().into_iter().flatten() {
            let (Some(name), Some(text)) = (x["name"].as_str(), x["arguments"][RECORD_ARGUMENT].as_str()) else {
                continue;
            };
            let Some(at) = vhost.or(x["vhost"].as_str()) else { continue };
            if RecordKind::parse(name).is_some() {
                let value = serde_json::from_str(text).map_err(|e| BrokerError::Unreadable {
                    action: action.clone(),
                    reason: format!("record \"{name}\" is not JSON: {e}"),
                })?;
                out.push((at.to_string(), name.to_string(), value));
            }
        }
        Ok(out)
    }

    /// Tries once to take the lock of the records at `place`; `None` while
    /// another holds it.
    pub async fn try_lock(&self, place: &Place, holder: &str) -> Result<Option<Lock>, BrokerError> {
        self.amqp.try_lock(self.lock_vhost(place), holder).await
    }

    /// Whether some run holds the lock of the records at `place` now: its
    /// exclusive queue exists.
    pub async fn lock_held(&self, place: &Place) -> Result<bool, BrokerError> {
        let path = format!("queues/{}/{}?columns=name", segment(self.lock_vhost(place)), segment(LOCK_QUEUE));
        match self.http.get_json(&path, "look for the apply lock").await {
            Ok(_) => Ok(true),
            Err(BrokerError::NotFound { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn lock_vhost<'a>(&'a self, place: &'a Place) -> &'a str {
        match place {
            Place::Broker => self.amqp.lock_vhost(),
            Place::Vhosts { home, .. } => home,
        }
    }
}
