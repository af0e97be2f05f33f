//! Where warren keeps its records (who owns what, and the journal) and
//! what writing them takes.
//!
//! An administrator's runs keep them broker-wide, as global parameters. A
//! user without the `administrator` tag may not be able to read those, and
//! where it can, so can every other team's user, who could then overwrite
//! them. Its runs keep them inside the project's vhosts instead, where only
//! users with permissions on the vhost reach them: one record per project
//! and vhost (that project's objects in that vhost), and the journal beside
//! the lock in the project's first vhost.
//!
//! A record inside a vhost is an internal exchange whose one argument holds
//! the record's JSON: exchanges are not touched by queue policies (a
//! message could expire or be dropped by one), and they come with every
//! listing warren reads anyway. Arguments cannot change in place, so each
//! write declares the next generation, `warren.records.<project>.<n>`, then
//! deletes the older ones; a reader takes the highest, so a run that dies
//! in between loses nothing. An inventory whose JSON is over
//! [`super::PART_BYTES`] goes into parts of its generation first
//! (`warren.records.<project>.<n>.part-<i>`, `record_parts`), and the
//! generation's own exchange, declared last, holds their index.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::inventory::Inventory;
use super::ownership::Ownership;

/// The global parameter of the broker-wide journal (its inventory is
/// [`super::INVENTORY_PARAMETER`]).
pub const JOURNAL_PARAMETER: &str = "warren.journal";

/// The argument of a record exchange that holds the record.
pub const RECORD_ARGUMENT: &str = "x-warren-record";

/// Where a run keeps its project's records.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Place {
    /// Broker-wide global parameters, and the lock in the AMQP address's vhost.
    Broker,
    /// Inside the project's vhosts; the journal and the lock in `home`.
    Vhosts { project: String, home: String },
}

/// The records as read from the broker: the broker-wide ones, and those
/// inside vhosts with every generation found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Records {
    pub broker: Ownership,
    /// (vhost, project) -> the newest generation's inventory of that vhost.
    pub in_vhosts: BTreeMap<(String, String), Generations<Inventory>>,
}

/// The generations of one record found in a vhost, and the newest's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generations<T> {
    pub found: BTreeSet<u64>,
    /// The part exchanges found, by generation: the highest part number.
    /// Those of the newest generation when it is split, and any a run
    /// left behind (a write that stopped before its index, a delete that
    /// stopped after it), which the next write deletes.
    pub parts: BTreeMap<u64, usize>,
    pub newest: T,
}

impl<T> Generations<T> {
    /// Generations found, `newest` the highest's content, and no parts.
    pub fn whole(found: BTreeSet<u64>, newest: T) -> Generations<T> {
        Generations { found, parts: BTreeMap::new(), newest }
    }

    pub fn newest_generation(&self) -> u64 {
        self.found.last().copied().unwrap_or(0)
    }

    /// The next write's generation: above every one found, parts included,
    /// since a name declared again keeps its first content.
    pub fn next_generation(&self) -> u64 {
        let parts = self.parts.last_key_value().map_or(0, |(g, _)| *g);
        self.newest_generation().max(parts) + 1
    }

    /// Whether parts of a generation other than the newest are left: a
    /// write that stopped before its index, or a delete after it.
    fn leftovers(&self) -> bool {
        self.parts.keys().any(|g| *g != self.newest_generation())
    }

    /// The newest content, `None` when no generation was found.
    fn content(&self) -> Option<&T> {
        self.found.last().map(|_| &self.newest)
    }

    /// What a write that replaces these deletes: every generation found,
    /// with the highest part number each has (0: kept whole), and, with
    /// `leftovers`, the parts of generations whose exchange is gone.
    fn stale(&self, leftovers: bool) -> Vec<(u64, usize)> {
        let generations: BTreeSet<u64> =
            self.found.iter().chain(self.parts.keys().filter(|_| leftovers)).copied().collect();
        generations.into_iter().map(|g| (g, self.parts.get(&g).copied().unwrap_or(0))).collect()
    }
}

/// One write of the records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordWrite {
    /// Replace the broker-wide records.
    Broker(Ownership),
    /// Declare generation `next` of (vhost, project)'s record holding
    /// `inventory` (none when it is empty), in parts when it is large, then
    /// delete the `stale` generations: each one's exchange, then its parts
    /// 1 to the number given.
    Vhost { vhost: String, project: String, next: u64, inventory: Option<Inventory>, stale: Vec<(u64, usize)> },
}

impl Records {
    /// Every project's inventory, wherever it is kept.
    pub fn ownership(&self) -> Ownership {
        let mut out = self.broker.clone();
        for ((_, project), g) in &self.in_vhosts {
            let merged = out.of(project).merged(&g.newest);
            out.projects.insert(project.clone(), Arc::new(merged));
        }
        out.projects.retain(|_, inv| !inv.objects.is_empty());
        out
    }

    /// The writes that turn these records into `after`, with `project`'s
    /// records kept at `place`: only what changed. Another project's
    /// records stay where they are and only lose what `after` took from
    /// them (a hand-over).
    pub fn writes(&self, after: &Ownership, project: &str, place: &Place) -> Vec<RecordWrite> {
        let mut out = Vec::new();
        let mut broker = Ownership::default();
        for (p, inv) in &self.broker.projects {
            if p != project {
                let kept = kept(inv, after.of(p));
                // The same inventory stays the same shared one.
                let kept = if kept == **inv { Arc::clone(inv) } else { Arc::new(kept) };
                broker.projects.insert(p.clone(), kept);
            }
        }
        if *place == Place::Broker
            && let Some(mine) = after.projects.get(project)
        {
            broker.projects.insert(project.to_string(), Arc::clone(mine));
        }
        broker.projects.retain(|_, inv| !inv.objects.is_empty());
        if broker != self.broker {
            out.push(RecordWrite::Broker(broker));
        }
        let mut wanted: BTreeMap<(String, String), Inventory> = BTreeMap::new();
        for ((vhost, p), g) in &self.in_vhosts {
            let inventory = if p == project { Inventory::default() } else { kept(&g.newest, after.of(p)) };
            wanted.insert((vhost.clone(), p.clone()), inventory);
        }
        if let Place::Vhosts { .. } = place {
            let mine = after.of(project);
            let vhosts: BTreeSet<&str> = mine.objects.iter().filter_map(|k| k.vhost()).collect();
            for vhost in vhosts {
                wanted.insert((vhost.to_string(), project.to_string()), within(mine, vhost));
            }
        }
        for ((vhost, p), inventory) in wanted {
            let found = self.in_vhosts.get(&(vhost.clone(), p.clone()));
            let inventory = Some(inventory).filter(|i| !i.objects.is_empty());
            // Parts without their generation's exchange are the project's
            // own to delete (its runs hold the lock); another project's may
            // be a write under way.
            let mine = p == project;
            let unchanged = match found {
                Some(g) => g.found.len() <= 1 && !(mine && g.leftovers()) && g.content() == inventory.as_ref(),
                None => inventory.is_none(),
            };
            if unchanged {
                continue;
            }
            let stale = found.map(|g| g.stale(mine)).unwrap_or_default();
            let next = found.map_or(1, Generations::next_generation);
            out.push(RecordWrite::Vhost { vhost, project: p, next, inventory, stale });
        }
        out
    }

    /// These records once `writes` are carried out, for the next write of
    /// the same run: a record exchange declared again under a name that
    /// exists keeps its first content (RabbitMQ does not compare arguments
    /// it does not know), so every write needs a generation of its own.
    pub fn written(&self, writes: &[RecordWrite]) -> Records {
        let mut out = self.clone();
        for w in writes {
            match w {
                RecordWrite::Broker(ownership) => out.broker = ownership.clone(),
                RecordWrite::Vhost { vhost, project, next, inventory, .. } => {
                    let key = (vhost.clone(), project.clone());
                    match inventory {
                        Some(i) => {
                            let mut g = Generations::whole(BTreeSet::from([*next]), i.clone());
                            let parts = super::exchange_parts(&i.to_json());
                            if parts > 0 {
                                g.parts.insert(*next, parts);
                            }
                            out.in_vhosts.insert(key, g);
                        }
                        None => {
                            out.in_vhosts.remove(&key);
                        }
                    }
                }
            }
        }
        out
    }
}

/// `inventory` without what `now` no longer holds.
fn kept(inventory: &Inventory, now: &Inventory) -> Inventory {
    inventory.retained(|k| now.contains(k))
}

/// The part of `inventory` inside `vhost`: its objects there, and the vhost.
fn within(inventory: &Inventory, vhost: &str) -> Inventory {
    inventory.retained(|k| k.vhost() == Some(vhost))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ObjectKey;

    fn queue(vhost: &str, name: &str) -> ObjectKey {
        ObjectKey::Queue { vhost: vhost.into(), name: name.into() }
    }

    fn inventory(keys: &[ObjectKey]) -> Inventory {
        Inventory { objects: keys.iter().cloned().collect(), ..Inventory::default() }
    }

    fn in_vhost(found: &[u64], keys: &[ObjectKey]) -> Generations<Inventory> {
        Generations::whole(found.iter().copied().collect(), inventory(keys))
    }

    fn vhosts_of(project: &str) -> Place {
        Place::Vhosts { project: project.into(), home: "a".into() }
    }

    #[test]
    fn records_in_vhosts_join_the_broker_wide_ones() {
        let records = Records {
            broker: Ownership::single("p", inventory(&[queue("a", "q1")])),
            in_vhosts: BTreeMap::from([
                (("a".into(), "p".into()), in_vhost(&[3], &[queue("a", "q2")])),
                (("b".into(), "r".into()), in_vhost(&[1], &[queue("b", "q3")])),
            ]),
        };
        let o = records.ownership();
        assert_eq!(*o.of("p"), inventory(&[queue("a", "q1"), queue("a", "q2")]));
        assert_eq!(*o.of("r"), inventory(&[queue("b", "q3")]));
    }

    #[test]
    fn a_vhost_scoped_run_writes_one_record_per_vhost_and_leaves_the_broker_wide_ones() {
        let records = Records { broker: Ownership::single("p", inventory(&[queue("a", "old")])), ..Records::default() };
        let after = Ownership::single("p", inventory(&[queue("a", "q"), queue("b", "r")]));
        let writes = records.writes(&after, "p", &vhosts_of("p"));
        assert_eq!(
            writes,
            vec![
                RecordWrite::Broker(Ownership::default()),
                RecordWrite::Vhost {
                    vhost: "a".into(),
                    project: "p".into(),
                    next: 1,
                    inventory: Some(inventory(&[queue("a", "q")])),
                    stale: vec![]
                },
                RecordWrite::Vhost {
                    vhost: "b".into(),
                    project: "p".into(),
                    next: 1,
                    inventory: Some(inventory(&[queue("b", "r")])),
                    stale: vec![]
                },
            ]
        );
    }

    #[test]
    fn a_second_write_of_one_run_takes_the_next_generation() {
        let records = Records {
            in_vhosts: BTreeMap::from([(("a".into(), "p".into()), in_vhost(&[1], &[queue("a", "old")]))]),
            ..Records::default()
        };
        let claimed = Ownership::single("p", inventory(&[queue("a", "old"), queue("a", "new")]));
        let first = records.writes(&claimed, "p", &vhosts_of("p"));
        let written = records.written(&first);
        assert_eq!(
            written.in_vhosts[&("a".into(), "p".into())],
            in_vhost(&[2], &[queue("a", "old"), queue("a", "new")])
        );
        let after = Ownership::single("p", inventory(&[queue("a", "new")]));
        let second = written.writes(&after, "p", &vhosts_of("p"));
        assert_eq!(
            second,
            vec![RecordWrite::Vhost {
                vhost: "a".into(),
                project: "p".into(),
                next: 3,
                inventory: Some(inventory(&[queue("a", "new")])),
                stale: vec![(2, 0)]
            }]
        );
        assert!(
            records
                .written(&[RecordWrite::Vhost {
                    vhost: "a".into(),
                    project: "p".into(),
                    next: 2,
                    inventory: None,
                    stale: vec![(1, 0)]
                }])
                .in_vhosts
                .is_empty()
        );
    }

    #[test]
    fn only_changed_records_are_written_and_stale_generations_go() {
        let records = Records {
            in_vhosts: BTreeMap::from([
                (("a".into(), "p".into()), in_vhost(&[4], &[queue("a", "q")])),
                (("b".into(), "p".into()), in_vhost(&[2, 3], &[queue("b", "r")])),
                (("c".into(), "p".into()), in_vhost(&[9], &[queue("c", "gone")])),
            ]),
            ..Records::default()
        };
        let after = Ownership::single("p", inventory(&[queue("a", "q"), queue("b", "r")]));
        let writes = records.writes(&after, "p", &vhosts_of("p"));
        assert_eq!(
            writes,
            vec![
                RecordWrite::Vhost {
                    vhost: "b".into(),
                    project: "p".into(),
                    next: 4,
                    inventory: Some(inventory(&[queue("b", "r")])),
                    stale: vec![(2, 0), (3, 0)]
                },
                RecordWrite::Vhost {
                    vhost: "c".into(),
                    project: "p".into(),
                    next: 10,
                    inventory: None,
                    stale: vec![(9, 0)]
                },
            ]
        );
    }

    #[test]
    fn parts_go_with_their_generation_and_the_next_is_above_every_part_found() {
        // Generation 4 in 3 parts, and 2 parts of generation 5 that a run
        // left without their index.
        let mut g = in_vhost(&[4], &[queue("a", "q")]);
        g.parts = BTreeMap::from([(4, 3), (5, 2)]);
        let records = Records { in_vhosts: BTreeMap::from([(("a".into(), "p".into()), g)]), ..Records::default() };
        let vhost = |next: u64, keys: &[ObjectKey], stale: Vec<(u64, usize)>| RecordWrite::Vhost {
            vhost: "a".into(),
            project: "p".into(),
            next,
            inventory: Some(inventory(keys)),
            stale,
        };
        // The same content is written again, once, to delete what was left.
        let same = Ownership::single("p", inventory(&[queue("a", "q")]));
        assert_eq!(records.writes(&same, "p", &vhosts_of("p")), [vhost(6, &[queue("a", "q")], vec![(4, 3), (5, 2)])]);

        // A large inventory's parts are known to the run's next write.
        let large: Vec<ObjectKey> =
            (0..40_000).map(|i| queue("a", &format!("a.queue.with.a.long.name.{i:06}"))).collect();
        let claim = records.writes(&Ownership::single("p", inventory(&large)), "p", &vhosts_of("p"));
        let written = records.written(&claim);
        assert_eq!(written.in_vhosts[&("a".into(), "p".into())].parts, BTreeMap::from([(6, 2)]));
        assert_eq!(written.writes(&same, "p", &vhosts_of("p")), [vhost(7, &[queue("a", "q")], vec![(6, 2)])]);
        assert!(written.writes(&Ownership::single("p", inventory(&large)), "p", &vhosts_of("p")).is_empty());

        // Another project's parts without their exchange may be its write
        // under way: left alone, but never named again.
        let mut r = in_vhost(&[2], &[queue("a", "x"), queue("a", "y")]);
        r.parts = BTreeMap::from([(3, 1)]);
        let records = Records { in_vhosts: BTreeMap::from([(("a".into(), "r".into()), r)]), ..Records::default() };
        assert_eq!(records.writes(&records.ownership(), "p", &vhosts_of("p")), []);
        let taken = records.ownership().with("r", inventory(&[queue("a", "y")]));
        let writes = records.writes(&taken, "p", &vhosts_of("p"));
        assert_eq!(
            writes,
            [RecordWrite::Vhost {
                vhost: "a".into(),
                project: "r".into(),
                next: 4,
                inventory: Some(inventory(&[queue("a", "y")])),
                stale: vec![(2, 0)]
            }]
        );
    }

    #[test]
    fn an_administrators_run_moves_the_projects_records_broker_wide_and_hand_overs_reach_other_places() {
        let records = Records {
            broker: Ownership::default(),
            in_vhosts: BTreeMap::from([
                (("a".into(), "p".into()), in_vhost(&[1], &[queue("a", "q")])),
                (("a".into(), "r".into()), in_vhost(&[5], &[queue("a", "x"), queue("a", "y")])),
            ]),
        };
        // p takes "x" over from r (warren adopt) and keeps its records broker-wide.
        let after = records.ownership().with("p", inventory(&[queue("a", "q"), queue("a", "x")]));
        let writes = records.writes(&after, "p", &Place::Broker);
        assert_eq!(
            writes,
            vec![
                RecordWrite::Broker(Ownership::single("p", inventory(&[queue("a", "q"), queue("a", "x")]))),
                RecordWrite::Vhost {
                    vhost: "a".into(),
                    project: "p".into(),
                    next: 2,
                    inventory: None,
                    stale: vec![(1, 0)]
                },
                RecordWrite::Vhost {
                    vhost: "a".into(),
                    project: "r".into(),
                    next: 6,
                    inventory: Some(inventory(&[queue("a", "y")])),
                    stale: vec![(5, 0)]
                },
            ]
        );
        assert_eq!(records.writes(&records.ownership(), "r", &vhosts_of("r")), vec![], "nothing changed");
    }
}
