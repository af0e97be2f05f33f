//! Reading and writing warren's records where `model::records` says they
//! live: broker-wide global parameters, or record exchanges inside vhosts.
//! Written once over the [`Broker`] calls, for every broker.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;

use serde_json::Value as Json;

use super::lock::Lock;
use super::{Answer, Broker, BrokerError, vhost_names};
use crate::model::{INVENTORY_PARAMETER, JOURNAL_PARAMETER, Place, RecordKind, RecordWrite};
use crate::model::{Progress, RecordError, SplitIndex, exchange_layout, exchange_part_name, layout};

/// The generations of a project's journal exchange found in its home
/// vhost, and of its migrations' progress records, so that each write can
/// delete the ones it replaces.
#[derive(Debug, Clone, Default)]
pub struct JournalSlot {
    found: BTreeSet<u64>,
    /// (vhost, migration id) -> the generations of its progress record.
    pub progress: BTreeMap<(String, String), BTreeSet<u64>>,
}

/// A journal read from its place, as status and abort find it, with the
/// progress records of its migrations.
#[derive(Debug, Clone)]
pub struct FoundJournal {
    pub place: Place,
    pub value: Json,
    pub progress: Vec<Progress>,
}

/// warren's records and lock on any [`Broker`].
pub trait RecordStore: Broker {
    /// Where this run keeps `project`'s records: broker-wide for a user
    /// with the `administrator` tag, else inside the vhosts the files
    /// declare, with the journal and lock in the first by name.
    fn place_of(&self, project: &str, vhosts: &[String]) -> impl Future<Output = Answer<Place>> + Send {
        async move {
            let Some(home) = vhosts.iter().min() else { return Ok(Place::Broker) };
            if self.is_administrator().await? {
                return Ok(Place::Broker);
            }
            // Its lock is taken there first: a vhost this user cannot reach
            // is said as the live read would say it.
            if !vhost_names(&self.vhosts().await?)?.contains(home) {
                return Err(BrokerError::Forbidden {
                    user: self.user(),
                    action: format!(
                        "create vhost \"{home}\" (it does not exist, or this user has no permissions on it)"
                    ),
                    needs: None,
                });
            }
            Ok(Place::Vhosts { project: project.to_string(), home: home.clone() })
        }
    }

    /// Carries out the writes of the records, in order. Within a vhost the
    /// next generation is declared before the older ones are deleted, each
    /// one's exchange before its parts.
    fn write_records(&self, writes: &[RecordWrite]) -> impl Future<Output = Answer<()>> + Send {
        async move {
            for w in writes {
                match w {
                    RecordWrite::Broker(ownership) => {
                        self.put_split(INVENTORY_PARAMETER, &ownership.to_json()).await?;
                    }
                    RecordWrite::Vhost { vhost, project, next, inventory, stale } => {
                        let kind = RecordKind::Inventory;
                        if let Some(inventory) = inventory {
                            self.put_split_record(vhost, &kind.exchange(project, *next), &inventory.to_json()).await?;
                        }
                        for (g, parts) in stale {
                            let name = kind.exchange(project, *g);
                            self.delete_record(vhost, &name).await?;
                            for i in 1..=*parts {
                                self.delete_record(vhost, &exchange_part_name(&name, i)).await?;
                            }
                        }
                    }
                }
            }
            Ok(())
        }
    }

    /// Declares the record exchange `name` in `vhost` holding `value`, a
    /// generation of its own, in parts when it is large
    /// (`model::record_parts`): the parts at once, then `name` with their
    /// index. A small record is one request, as before parts.
    fn put_split_record(&self, vhost: &str, name: &str, value: &Json) -> impl Future<Output = Answer<()>> + Send {
        async move {
            let puts = exchange_layout(name, value);
            let ((record, index), parts) = puts.split_last().expect("the record's own exchange is always declared");
            let declared = parts.iter().map(|(n, v)| self.put_record(vhost, n, v));
            for put in futures_util::future::join_all(declared).await {
                put?;
            }
            self.put_record(vhost, record, index).await
        }
    }

    /// Stores `value` as the broker-wide record `name`, in parts when it
    /// is large (`model::record_parts`): the parts at once, then the
    /// record's own parameter (its index), then the parts no index names
    /// any more. What the parameter holds now says which slot to write.
    fn put_split(&self, name: &str, value: &Json) -> impl Future<Output = Answer<()>> + Send {
        async move {
            let now = self.global_parameter(name).await?.and_then(|v| SplitIndex::of(&v)).and_then(Result::ok);
            let l = layout(name, value, now.as_ref());
            let ((record, index), parts) = l.puts.split_last().expect("the record's own parameter is always put");
            let puts = parts.iter().map(|(n, v)| self.put_global_parameter(n, v));
            for put in futures_util::future::join_all(puts).await {
                put?;
            }
            self.put_global_parameter(record, index).await?;
            for n in &l.deletes {
                self.delete_global_parameter(n).await?;
            }
            Ok(())
        }
    }

    /// The journal kept at `place`, `None` when there is none yet, the
    /// progress records of its migrations, and the generations found for
    /// the writes to come.
    fn read_journal(
        &self,
        place: &Place,
    ) -> impl Future<Output = Answer<(Option<Json>, Vec<Progress>, JournalSlot)>> + Send {
        async move {
            let mut slot = JournalSlot::default();
            let newest = match place {
                Place::Broker => self.global_parameter(JOURNAL_PARAMETER).await?,
                Place::Vhosts { project, home } => {
                    let mut newest = None;
                    for (_, name, value) in records(self, Some(home)).await? {
                        if let Some((RecordKind::Journal, p, g)) = RecordKind::parse(&name)
                            && p == project
                        {
                            slot.found.insert(g);
                            if slot.found.last() == Some(&g) {
                                newest = Some(value);
                            }
                        }
                    }
                    newest
                }
            };
            // Only the vhosts of migrations in flight, usually none.
            let vhosts: BTreeSet<&str> = newest
                .iter()
                .flat_map(|j| j["migrations"].as_object().into_iter().flatten())
                .filter_map(|(_, m)| m["vhost"].as_str())
                .collect();
            let mut progress = Vec::new();
            for vhost in vhosts {
                // A vhost this user cannot read holds no migration it runs.
                let found = match records(self, Some(vhost)).await {
                    Err(BrokerError::Forbidden { .. }) => continue,
                    other => other?,
                };
                for (at, name, value) in found {
                    if let Some(p) = progress_record(&at, &name, value)? {
                        slot.progress.entry((at, p.id.clone())).or_default().insert(p.done as u64);
                        progress.push(p);
                    }
                }
            }
            Ok((newest, progress, slot))
        }
    }

    /// Records migration progress `p` in its vhost and, at once, deletes
    /// the generations of its record in `found` but the one before it:
    /// that one stays until a later one exists, so a reader always finds
    /// the count, and a step's record costs one round trip.
    fn write_progress(&self, p: &Progress, found: &mut BTreeSet<u64>) -> impl Future<Output = Answer<()>> + Send {
        async move {
            let next = p.done as u64;
            // The count before this step: what a reader needs until `next` exists.
            let before = found.range(..next).next_back().copied();
            let older: Vec<u64> = found.iter().copied().filter(|g| Some(*g) != before && *g != next).collect();
            let (name, value) = (RecordKind::Progress.exchange(&p.id, next), p.to_json());
            let put = self.put_record(&p.vhost, &name, &value);
            let delete = async {
                for g in &older {
                    self.delete_record(&p.vhost, &RecordKind::Progress.exchange(&p.id, *g)).await?;
                }
                Ok(())
            };
            let (put, deleted) = tokio::join!(put, delete);
            put?;
            deleted?;
            found.retain(|g| !older.contains(g));
            found.insert(next);
            Ok(())
        }
    }

    /// Deletes the generations `found` of the progress record of migration
    /// `id` in `vhost`: the journal holds what they said.
    fn delete_progress(&self, vhost: &str, id: &str, found: &BTreeSet<u64>) -> impl Future<Output = Answer<()>> + Send {
        async move {
            for g in found {
                self.delete_record(vhost, &RecordKind::Progress.exchange(id, *g)).await?;
            }
            Ok(())
        }
    }

    /// Replaces the journal at `place`. Last write wins: only the lock
    /// holder writes.
    fn write_journal(
        &self,
        place: &Place,
        value: &Json,
        slot: &mut JournalSlot,
    ) -> impl Future<Output = Answer<()>> + Send {
        async move {
            match place {
                Place::Broker => self.put_global_parameter(JOURNAL_PARAMETER, value).await,
                Place::Vhosts { project, home } => {
                    let next = slot.found.last().map_or(1, |g| g + 1);
                    self.put_record(home, &RecordKind::Journal.exchange(project, next), value).await?;
                    for g in std::mem::take(&mut slot.found) {
                        self.delete_record(home, &RecordKind::Journal.exchange(project, g)).await?;
                    }
                    slot.found.insert(next);
                    Ok(())
                }
            }
        }
    }

    /// Every journal this user can read: the broker-wide one, and those
    /// inside vhosts, from one listing of the exchanges with their records.
    fn journals(&self) -> impl Future<Output = Answer<Vec<FoundJournal>>> + Send {
        async move {
            let mut out = Vec::new();
            match self.global_parameter(JOURNAL_PARAMETER).await {
                Ok(Some(value)) => out.push(FoundJournal { place: Place::Broker, value, progress: Vec::new() }),
                Ok(None) | Err(BrokerError::Forbidden { .. }) => {}
                Err(e) => return Err(e),
            }
            // The newest generation of each project's journal, by place.
            let mut newest: BTreeMap<Place, (u64, Json)> = BTreeMap::new();
            let mut progress = Vec::new();
            for (vhost, name, value) in records(self, None).await? {
                if let Some((RecordKind::Journal, project, g)) = RecordKind::parse(&name) {
                    let place = Place::Vhosts { project: project.to_string(), home: vhost };
                    if newest.get(&place).is_none_or(|(seen, _)| g > *seen) {
                        newest.insert(place, (g, value));
                    }
                } else if let Some(p) = progress_record(&vhost, &name, value)? {
                    progress.push(p);
                }
            }
            out.extend(newest.into_iter().map(|(place, (_, value))| FoundJournal {
                place,
                value,
                progress: Vec::new(),
            }));
            // Each journal counts only the records of its own migrations.
            for f in &mut out {
                f.progress.clone_from(&progress);
            }
            Ok(out)
        }
    }

    /// Tries once to take the lock of the records at `place`; `None` while
    /// another holds it.
    fn take_lock(&self, place: &Place, holder: &str) -> impl Future<Output = Answer<Option<Lock>>> + Send {
        self.try_lock(lock_vhost(place), holder)
    }

    /// Whether some run holds the lock of the records at `place` now.
    fn lock_taken(&self, place: &Place) -> impl Future<Output = Answer<bool>> + Send {
        self.lock_held(lock_vhost(place))
    }

    /// The broker-wide records (inventory and journal) as an export carries
    /// them: global parameters, those that exist, as text. None for a user
    /// who may not read global parameters: its records are inside its vhosts.
    fn broker_records(&self) -> impl Future<Output = Answer<Vec<String>>> + Send {
        async move {
            let (inventory, journal) =
                tokio::join!(self.global_parameter(INVENTORY_PARAMETER), self.global_parameter(JOURNAL_PARAMETER));
            let mut out = Vec::new();
            for (name, value) in [(INVENTORY_PARAMETER, inventory), (JOURNAL_PARAMETER, journal)] {
                match value {
                    Ok(None) | Err(BrokerError::Forbidden { .. }) => {}
                    Ok(Some(value)) => {
                        // A record in parts comes with its parts, asked at
                        // once as they are written (twenty at 100,000 queues).
                        if let Some(Ok(index)) = SplitIndex::of(&value) {
                            let names: Vec<String> = (1..=index.parts).map(|i| index.part_name(name, i)).collect();
                            let parts =
                                futures_util::future::try_join_all(names.iter().map(|n| self.global_parameter(n)));
                            for (part, v) in names.iter().zip(parts.await?) {
                                if let Some(v) = v {
                                    out.push(serde_json::json!({ "name": part, "value": v }).to_string());
                                }
                            }
                        }
                        out.push(serde_json::json!({ "name": name, "value": value }).to_string())
                    }
                    Err(e) => return Err(e),
                }
            }
            Ok(out)
        }
    }
}

impl<B: Broker> RecordStore for B {}

/// The lock's vhost: `None` for broker-wide records, whose lock lives where
/// the broker says.
fn lock_vhost(place: &Place) -> Option<&str> {
    match place {
        Place::Broker => None,
        Place::Vhosts { home, .. } => Some(home),
    }
}

/// The progress record `name` in `vhost` holding `value`; `None` for any
/// other record.
fn progress_record(vhost: &str, name: &str, value: Json) -> Answer<Option<Progress>> {
    let Some((RecordKind::Progress, id, done)) = RecordKind::parse(name) else { return Ok(None) };
    Progress::from_json(vhost, id, done, value).map(Some).map_err(|e| match e {
        RecordError::Malformed(e) => BrokerError::Unreadable {
            action: format!("read warren's records in vhost \"{vhost}\""),
            reason: format!("record \"{name}\" is malformed: {e}"),
        },
        other => BrokerError::Records {
            reason: format!("warren's record \"{name}\" in vhost \"{vhost}\" is of another format: {other}"),
            help: format!(
                "to delete it: delete the exchange \"{name}\" (and its other generations) in vhost \"{vhost}\""
            ),
        },
    })
}

/// The records of one vhost, or of every vhost this user can see, read:
/// (vhost, name, value).
async fn records<B: Broker>(broker: &B, vhost: Option<&str>) -> Answer<Vec<(String, String, Json)>> {
    let mut out = Vec::new();
    for (at, name, text) in broker.record_exchanges(vhost).await? {
        if RecordKind::parse(&name).is_some() {
            let value = serde_json::from_str(&text).map_err(|e| BrokerError::Unreadable {
                action: format!("read warren's records in vhost \"{at}\""),
                reason: format!("record \"{name}\" is not JSON: {e}"),
            })?;
            out.push((at, name, value));
        }
    }
    Ok(out)
}
