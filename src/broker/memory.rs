//! A broker in memory that answers every call warren makes as RabbitMQ
//! 3.13 does (its refusals, what a delete takes along, the JSON it sends),
//! so that the executor can be tested in milliseconds; tests/
//! broker_behaviour.rs runs the same cases against it and a real node.
//!
//! Beside the [`Broker`] calls, tests get message traffic (publish, get)
//! and hooks for what only clients or a failing cluster do: consumers and
//! unacknowledged messages on a queue, a quorum queue losing its leader,
//! the lock's connection cut. Clones share one state; [`Memory::as_user`]
//! views it as another user (one without the `administrator` tag reads
//! listings instead of exports, as warren does on a real broker).

mod access;
mod answers;
mod routing;
mod state;
#[cfg(test)]
mod tests;
mod traffic;
mod writes;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use serde_json::Value as Json;

pub use state::Message;

use super::lock::{LOCK_QUEUE, LocalHold, Lock};
use super::named::{self, Named, Size, Wanted};
use super::records::RecordStore;
use super::{
    Answer, Answers, Broker, BrokerError, Clients, Consumer, DeprecatedFeature, Freshness, Leadership, Listing, Reading,
};
use crate::model::kinds::{Kind, Name, Object, operator_policies, policies, users, vhosts};
use crate::model::{
    Binding, Exchange, Permission, Policy, Queue, QueueCounts, QueueType, RECORD_ARGUMENT, Table, User, Value,
    VhostSettings,
};
use access::{Need, Who, full_permission, permits, sees, who};
use state::{LockEntry, NODE, ORIGIN, State, UserState, VhostState};
use writes::Why;

/// The algorithm of the password hashes this broker makes.
const SHA256: &str = "rabbit_password_hashing_sha256";

/// A RabbitMQ broker in memory; clones share it.
#[derive(Clone)]
pub struct Memory {
    state: Arc<Mutex<State>>,
    /// The user this view logs in as.
    user: String,
}

impl Default for Memory {
    fn default() -> Self {
        Memory::new()
    }
}

impl Memory {
    /// A fresh broker as RabbitMQ starts: vhost `/`, user `guest`
    /// (password `guest`, tag `administrator`) with every permission there.
    /// This view logs in as `guest`.
    pub fn new() -> Memory {
        let mut vhosts = BTreeMap::new();
        let mut root = VhostState::new("Default virtual host".into(), None);
        root.permissions.insert("guest".into(), full_permission("guest"));
        vhosts.insert("/".to_string(), root);
        let guest = UserState {
            password_hash: hash("guest"),
            hashing_algorithm: SHA256.into(),
            tags: vec!["administrator".into()],
            limits: BTreeMap::new(),
        };
        let state = State {
            version: state::VERSION.into(),
            plugins: ["rabbitmq_management", "rabbitmq_shovel", "rabbitmq_federation"].map(String::from).into(),
            vhosts,
            users: BTreeMap::from([("guest".to_string(), guest)]),
            global_parameters: BTreeMap::from([(
                "internal_cluster_id".to_string(),
                Json::String("rabbitmq-cluster-id-memory".into()),
            )]),
            objects: Default::default(),
            locks: BTreeMap::new(),
            last_id: 0,
        };
        Memory { state: Arc::new(Mutex::new(state)), user: "guest".into() }
    }

    /// The same broker, as user `name` logs in (it must exist, with a tag
    /// that opens the management API, as on a real broker).
    pub fn as_user(&self, name: &str) -> Memory {
        Memory { state: self.state.clone(), user: name.to_string() }
    }

    /// Makes `check` report this RabbitMQ version.
    pub fn set_version(&self, version: &str) {
        self.lock_state().version = version.to_string();
    }

    /// Makes `plugins` report these enabled plugins.
    pub fn set_plugins(&self, plugins: &[&str]) {
        self.lock_state().plugins = plugins.iter().map(|p| p.to_string()).collect();
    }

    fn lock_state(&self) -> MutexGuard<'_, State> {
        // A test that panicked holding it left nothing half-written.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn forbidden(&self, action: String) -> BrokerError {
        BrokerError::Forbidden { user: self.user.clone(), action, needs: None }
    }

    /// The view's user, refused unless it has the `administrator` tag.
    fn admin(&self, s: &State, action: impl FnOnce() -> String) -> Answer<Who> {
        let who = who(&self.user, s)?;
        if !who.admin {
            return Err(self.forbidden(action()));
        }
        Ok(who)
    }

    /// Runs `write` on vhost `vhost` once the user may do `need` there.
    /// A missing vhost is `NotFound`, as the management API answers.
    fn in_vhost<T>(
        &self,
        vhost: &str,
        need: Need,
        action: impl FnOnce() -> String,
        write: impl FnOnce(&mut VhostState) -> Result<T, Why>,
    ) -> Answer<T> {
        let mut s = self.lock_state();
        let who = who(&self.user, &s)?;
        let Some(v) = s.vhosts.get_mut(vhost) else { return Err(BrokerError::NotFound { action: action() }) };
        if !who.admin && !permits(v, &who.name, need) {
            return Err(self.forbidden(action()));
        }
        write(v).map_err(|why| self.said(why, action()))
    }

    /// A refusal in the words `ops` gives it for a real broker.
    fn said(&self, why: Why, action: String) -> BrokerError {
        match why {
            Why::Refused(reason) => BrokerError::Refused { action, status: 400, reason },
            Why::NotFound => BrokerError::NotFound { action },
            Why::Forbidden => self.forbidden(action),
            Why::Unsafe(reason) => BrokerError::Unsafe { action, reason },
        }
    }

    /// Declares exchange `x` for the call `action` describes.
    fn declare(&self, vhost: &str, x: &Exchange, action: impl FnOnce() -> String) -> Answer<()> {
        self.in_vhost(vhost, Need::Configure(&x.name), action, |v| writes::declare_exchange(v, vhost, x))
    }

    /// Deletes exchange `name`; in a vhost that is gone, nothing to do.
    fn delete_x(&self, vhost: &str, name: &str, action: impl FnOnce() -> String) -> Answer<()> {
        gone_is_done(self.in_vhost(vhost, Need::Configure(name), action, |v| writes::delete_exchange(v, name)))
    }

    /// The policy or operator policy set of a vhost, for a policymaker.
    fn policies<T>(
        &self,
        vhost: &str,
        operator: bool,
        action: impl FnOnce() -> String,
        change: impl FnOnce(&mut BTreeMap<String, state::PolicyState>) -> Result<T, Why>,
    ) -> Answer<T> {
        let who = who(&self.user, &self.lock_state())?;
        // Operator policies are the administrators' alone.
        if !who.policymaker || (operator && !who.admin) {
            return Err(self.forbidden(action()));
        }
        self.in_vhost(vhost, Need::Access, action, |v| {
            change(if operator { &mut v.operator_policies } else { &mut v.policies })
        })
    }
}

/// Whether `kind` is the policies' (`Some(false)`) or the operator
/// policies' (`Some(true)`), which the broker keeps apart.
fn policy_kind(kind: &Kind) -> Option<bool> {
    [&policies::KIND, &operator_policies::KIND].iter().position(|k| *k == kind).map(|i| i == 1)
}

/// A delete in a vhost that does not exist has nothing to delete.
fn gone_is_done(result: Answer<()>) -> Answer<()> {
    match result {
        Err(BrokerError::NotFound { .. }) => Ok(()),
        other => other,
    }
}

/// A password hash as RabbitMQ makes it: base64 of a random 4-byte salt
/// and the SHA-256 of the salt and the password.
fn hash(password: &str) -> String {
    use base64::Engine;
    use sha2::{Digest, Sha256};
    let mut salt = [0u8; 4];
    // Without randomness a fixed salt still makes a valid hash.
    let _ = getrandom::fill(&mut salt);
    let mut bytes = salt.to_vec();
    bytes.extend_from_slice(&Sha256::new().chain_update(salt).chain_update(password.as_bytes()).finalize());
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The lock as its holder has it: freed when dropped.
struct Hold {
    state: Arc<Mutex<State>>,
    vhost: String,
    id: u64,
    connected: Arc<AtomicBool>,
}

impl LocalHold for Hold {
    fn held(&self) -> bool {
        self.connected.load(Ordering::SeqCst)
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        self.connected.store(false, Ordering::SeqCst);
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if s.locks.get(&self.vhost).is_some_and(|e| e.id == self.id) {
            s.locks.remove(&self.vhost);
        }
    }
}

impl Broker for Memory {
    fn origin(&self) -> String {
        ORIGIN.into()
    }

    fn user(&self) -> String {
        self.user.clone()
    }

    async fn check(&self) -> Answer<String> {
        let s = self.lock_state();
        who(&self.user, &s)?;
        Ok(s.version.clone())
    }

    async fn object_totals(&self) -> Answer<Option<Size>> {
        let s = self.lock_state();
        let who = who(&self.user, &s)?;
        let seen = s.vhosts.iter().filter(|(name, _)| sees(&s, &who, name)).map(|(_, v)| v);
        Ok(Some(seen.fold(Size::default(), |t, v| Size {
            queues: t.queues + v.queues.len() as u64,
            exchanges: t.exchanges + v.exchanges.len() as u64,
        })))
    }

    async fn is_administrator(&self) -> Answer<bool> {
        Ok(who(&self.user, &self.lock_state())?.admin)
    }

    async fn definitions(&self) -> Answer<String> {
        let s = self.lock_state();
        self.admin(&s, || "read the broker's definitions".into())?;
        Ok(answers::definitions(&s))
    }

    async fn vhosts(&self) -> Answer<String> {
        let s = self.lock_state();
        let who = who(&self.user, &s)?;
        Ok(answers::vhosts(&s, |name| sees(&s, &who, name)))
    }

    /// As `Rabbit::answers_of`: exports, users and permissions for an
    /// administrator; each vhost's listings for anyone else.
    async fn answers_of(&self, vhosts: &[String]) -> Answer<Answers> {
        // An administrator's listing of global parameters holds them.
        let admin = who(&self.user, &self.lock_state())?.admin;
        let records = if admin { Vec::new() } else { self.broker_records().await? };
        let s = self.lock_state();
        let who = who(&self.user, &s)?;
        let listing = answers::vhosts(&s, |name| sees(&s, &who, name));
        let present = vhosts.iter().filter(|v| sees(&s, &who, v) && s.vhosts.contains_key(*v));
        let mut answers = Answers { vhosts: listing, records, ..Answers::default() };
        if who.admin {
            answers.users = Some(answers::users(&s));
            answers.permissions = Some(answers::permissions(&s));
            answers.objects = answers::kind_listings(&s);
            for name in present {
                answers.exports.push((name.clone(), answers::vhost_export(&s, name, &s.vhosts[name])));
            }
            return Ok(answers);
        }
        let present: Vec<&String> = present.collect();
        answers.parameters = Some(answers::parameter_listing(&s, &present));
        for name in present {
            let v = &s.vhosts[name];
            for listing in Listing::ALL {
                let text = match listing {
                    Listing::Exchanges => answers::exchange_listing(name, v),
                    Listing::Queues => answers::queue_listing(name, v, s.locks.contains_key(name)),
                    Listing::Bindings => answers::binding_listing(name, v),
                    Listing::Policies => answers::policy_listing(name, v, false),
                    Listing::OperatorPolicies => answers::policy_listing(name, v, true),
                };
                answers.listings.push((name.clone(), listing, text));
            }
        }
        Ok(answers)
    }

    /// As `Rabbit::read_named`, from this broker's own listings.
    async fn read_named(&self, vhost: &str, wanted: &Wanted) -> Answer<Named> {
        let s = self.lock_state();
        let who = who(&self.user, &s)?;
        let Some(v) = s.vhosts.get(vhost).filter(|_| sees(&s, &who, vhost)) else { return Ok(Named::default()) };
        let parse = |text: String| serde_json::from_str::<Vec<Json>>(&text).expect("the in-memory broker's own JSON");
        let bindings: Vec<Json> =
            parse(answers::binding_listing(vhost, v)).into_iter().filter(|b| named::touches(b, wanted)).collect();
        let bindings = named::distinct_bindings([Json::Array(bindings)]);
        let (mut more_q, mut more_x) = named::missing_ends(&bindings, &wanted.queues, &wanted.exchanges);
        more_q.extend(wanted.referenced_queues.iter().cloned());
        more_x.extend(wanted.referenced_exchanges.iter().cloned());
        let queues: Vec<Json> = parse(answers::queue_listing(vhost, v, s.locks.contains_key(vhost)))
            .into_iter()
            .filter(|q| q["name"].as_str().is_some_and(|n| wanted.queues.contains(n) || more_q.contains(n)))
            .collect();
        let exchanges: Vec<Json> = parse(answers::exchange_listing(vhost, v))
            .into_iter()
            .filter(|x| {
                x["name"]
                    .as_str()
                    .is_some_and(|n| wanted.exchanges.contains(n) || more_x.contains(n) || n.starts_with("warren."))
            })
            .collect();
        let read = Size { queues: queues.len() as u64, exchanges: exchanges.len() as u64 };
        let mut listings = vec![
            (Listing::Exchanges, Json::Array(exchanges).to_string()),
            (Listing::Queues, Json::Array(queues).to_string()),
            (Listing::Bindings, Json::Array(bindings).to_string()),
            (Listing::Policies, answers::policy_listing(vhost, v, false)),
        ];
        let parameters = match who.admin {
            true => Some(answers::vhost_parameters(&s, vhost, v)),
            false => {
                listings.push((Listing::OperatorPolicies, answers::policy_listing(vhost, v, true)));
                None
            }
        };
        Ok(Named { listings, parameters, read })
    }

    /// The in-memory broker counts consumers but knows no connections.
    async fn consumers(&self, _vhost: &str) -> Answer<Vec<Consumer>> {
        Ok(Vec::new())
    }

    async fn clients(&self, _vhost: &str) -> Answer<Clients> {
        Ok(Clients::default())
    }

    async fn sees_every_client(&self) -> Answer<bool> {
        Ok(true)
    }

    async fn channel_details_kept(&self) -> Answer<bool> {
        Ok(false)
    }

    async fn published_to(&self, _channel: &str) -> Answer<BTreeSet<String>> {
        Ok(BTreeSet::new())
    }

    async fn plugins(&self) -> Answer<Option<BTreeSet<String>>> {
        let s = self.lock_state();
        who(&self.user, &s)?;
        Ok(Some(s.plugins.clone()))
    }

    async fn deprecated_features_used(&self) -> Answer<Option<Vec<DeprecatedFeature>>> {
        Ok(Some(Vec::new()))
    }

    /// As `Rabbit::queue_counts`, with every count known at once.
    async fn queue_counts(
        &self,
        vhost: &str,
        only: Option<&BTreeSet<String>>,
    ) -> Answer<BTreeMap<String, QueueCounts>> {
        let s = self.lock_state();
        who(&self.user, &s)?;
        let Some(v) = s.vhosts.get(vhost) else { return Ok(BTreeMap::new()) };
        Ok(v.queues
            .iter()
            .filter(|(name, _)| only.is_none_or(|o| o.contains(*name)))
            .map(|(name, q)| {
                let messages = Some(q.ready.len() as u64 + q.unacked);
                (name.clone(), QueueCounts { messages, consumers: Some(q.consumers) })
            })
            .collect())
    }

    /// A replicated queue without a leader reads 0 and 0 consumers, as a
    /// passive declare answers then.
    /// Totals that a test made lag ([`Memory::lag_totals`]) count for the
    /// readings it said.
    async fn read_queue(&self, vhost: &str, queue: &str, _: Freshness) -> Answer<Option<(Instant, Reading)>> {
        let mut s = self.lock_state();
        who(&self.user, &s)?;
        let Some(q) = s.vhosts.get_mut(vhost).and_then(|v| v.queues.get_mut(queue)) else { return Ok(None) };
        let reading = if q.kind.is_replicated() && !q.leader {
            Reading { ready: 0, unacked: 0, consumers: 0, own_ready: 0 }
        } else {
            let own_ready = q.ready.len() as u64;
            let (listed_ready, unacked) = match &mut q.lagging {
                Some((listed, readings)) if *readings > 0 => {
                    *readings -= 1;
                    *listed
                }
                _ => (own_ready, q.unacked),
            };
            Reading { ready: own_ready.max(listed_ready), unacked, consumers: q.consumers, own_ready }
        };
        Ok(Some((Instant::now(), reading)))
    }

    /// As 3.13 reports it: a replicated queue's leader and members (one
    /// node here), `down` once its leader is taken away.
    async fn queue_leadership(&self, vhost: &str, queue: &str) -> Answer<Option<Leadership>> {
        let s = self.lock_state();
        who(&self.user, &s)?;
        let Some(q) = s.vhosts.get(vhost).and_then(|v| v.queues.get(queue)) else { return Ok(None) };
        if !q.kind.is_replicated() {
            return Ok(Some(Leadership { state: Some("running".into()), ..Leadership::default() }));
        }
        let nodes = Some(vec![NODE.to_string()]);
        Ok(Some(if q.leader {
            Leadership {
                leader: Some(NODE.into()),
                members: nodes.clone(),
                online: nodes,
                state: Some("running".into()),
            }
        } else {
            Leadership { leader: None, members: nodes, online: Some(Vec::new()), state: Some("down".into()) }
        }))
    }

    /// Policies apply at once here; the real broker is a few seconds late.
    async fn exchange_policy(&self, vhost: &str, exchange: &str) -> Answer<Option<String>> {
        let s = self.lock_state();
        who(&self.user, &s)?;
        let x = s.vhosts.get(vhost).filter(|v| v.exchanges.contains_key(exchange));
        let v = x.ok_or_else(|| BrokerError::NotFound { action: format!("read exchange \"{exchange}\"") })?;
        Ok(v.exchange_policy(exchange).map(|p| p.name.clone()))
    }

    /// A new vhost gives its creator every permission in it, as the
    /// management API does; an update replaces the description and tags
    /// (3.13). As 3.13's, it has no deletion protection: it ignores
    /// `protected_from_deletion`.
    async fn put_vhost(&self, name: &str, settings: &VhostSettings, remove_limits: &[String]) -> Answer<()> {
        let mut s = self.lock_state();
        let who = self.admin(&s, || format!("create or update vhost \"{name}\""))?;
        // What the broker makes of the requests that `ops::put_vhost`
        // sends: the vhost's PUT, then one per limit.
        let requests = (vhosts::KIND.put)(None, &vhosts::object(name, settings));
        let Some((request, set_limits)) = requests.split_first() else { return Ok(()) };
        let text = |key: &str| request.body.get(key).and_then(Json::as_str);
        let description = text("description").unwrap_or_default().to_string();
        let default_queue_type = text("default_queue_type").and_then(QueueType::parse);
        match s.vhosts.get_mut(name) {
            Some(v) => {
                v.description = description;
                if default_queue_type.is_some() {
                    v.default_queue_type = default_queue_type;
                }
            }
            None => {
                let mut v = VhostState::new(description, default_queue_type);
                v.permissions.insert(who.name.clone(), full_permission(&who.name));
                s.vhosts.insert(name.to_string(), v);
            }
        }
        let v = s.vhosts.get_mut(name).expect("made above");
        let tags = request.body.get("tags").and_then(Json::as_array).into_iter().flatten();
        v.tags = tags.filter_map(Json::as_str).map(str::to_string).collect();
        for r in set_limits {
            let (limit, value) = (&r.path[2], r.body["value"].as_i64().unwrap_or_default());
            writes::set_limit(v, limit, value)
                .map_err(|why| self.said(why, format!("set limit {limit} of vhost \"{name}\"")))?;
        }
        for limit in remove_limits {
            v.limits.remove(limit);
        }
        Ok(())
    }

    /// Everything in the vhost goes with it, its permissions and lock too.
    async fn delete_vhost(&self, name: &str) -> Answer<()> {
        let mut s = self.lock_state();
        self.admin(&s, || format!("delete vhost \"{name}\""))?;
        s.vhosts.remove(name);
        if let Some(lock) = s.locks.remove(name) {
            lock.connected.store(false, Ordering::SeqCst);
        }
        Ok(())
    }

    async fn put_user(&self, user: &User, password: Option<&str>, remove_limits: &[String]) -> Answer<()> {
        let mut s = self.lock_state();
        self.admin(&s, || format!("create or update user \"{}\"", user.name))?;
        // What the broker makes of the requests that `ops::put_user` sends:
        // the user's PUT, then one per limit.
        let requests = (users::KIND.put)(None, &super::ops::user_object(user, password)?);
        let Some((request, set_limits)) = requests.split_first() else { return Ok(()) };
        let text = |key: &str| request.body.get(key).and_then(Json::as_str);
        let (password_hash, hashing_algorithm) = match text("password") {
            Some(p) => (hash(p), SHA256.to_string()),
            None => (
                text("password_hash").unwrap_or_default().to_string(),
                text("hashing_algorithm").unwrap_or(SHA256).to_string(),
            ),
        };
        let tags = user.tags.iter().cloned().collect();
        // A user's PUT keeps its limits, as RabbitMQ's does.
        let limits = s.users.get(&user.name).map(|u| u.limits.clone()).unwrap_or_default();
        s.users.insert(user.name.clone(), UserState { password_hash, hashing_algorithm, tags, limits });
        let u = s.users.get_mut(&user.name).expect("inserted above");
        for r in set_limits {
            let (limit, value) = (&r.path[2], r.body["value"].as_i64().unwrap_or_default());
            writes::set_user_limit(u, limit, value)
                .map_err(|why| self.said(why, format!("set limit {limit} of user \"{}\"", user.name)))?;
        }
        for limit in remove_limits {
            u.limits.remove(limit);
        }
        Ok(())
    }

    /// The user's permissions go with it.
    async fn delete_user(&self, name: &str) -> Answer<()> {
        let mut s = self.lock_state();
        self.admin(&s, || format!("delete user \"{name}\""))?;
        s.users.remove(name);
        for v in s.vhosts.values_mut() {
            v.permissions.remove(name);
        }
        Ok(())
    }

    async fn declare_exchange(&self, vhost: &str, exchange: &Exchange) -> Answer<()> {
        self.declare(vhost, exchange, || format!("declare exchange \"{}\" in vhost \"{vhost}\"", exchange.name))
    }

    async fn delete_exchange(&self, vhost: &str, name: &str) -> Answer<()> {
        self.delete_x(vhost, name, || format!("delete exchange \"{name}\" in vhost \"{vhost}\""))
    }

    async fn declare_queue(&self, vhost: &str, queue: &Queue) -> Answer<()> {
        // As `ops::declare_queue` sends it: the type as an argument.
        let mut arguments = queue.arguments.clone();
        arguments.insert("x-queue-type".into(), Value::String(queue.kind.as_str().into()));
        let action = || format!("declare queue \"{}\" in vhost \"{vhost}\"", queue.name);
        self.in_vhost(vhost, Need::Configure(&queue.name), action, |v| {
            writes::declare_queue(v, vhost, &queue.name, (queue.durable, queue.auto_delete), &arguments)
        })
    }

    /// The guard goes with the request only for a queue said to be classic,
    /// as `ops::delete_queue` sends it; the broker then honours it or not
    /// by the queue's real type.
    async fn delete_queue(&self, vhost: &str, name: &str, kind: QueueType, guarded: bool) -> Answer<()> {
        let flags = guarded && kind == QueueType::Classic;
        let action = || format!("delete queue \"{name}\" in vhost \"{vhost}\"");
        gone_is_done(
            self.in_vhost(vhost, Need::Configure(name), action, |v| writes::delete_queue(v, vhost, name, flags)),
        )
    }

    async fn bind(&self, vhost: &str, binding: &Binding) -> Answer<()> {
        let action = || format!("create binding {binding} in vhost \"{vhost}\"");
        self.in_vhost(vhost, Need::Bind(binding), action, |v| writes::bind(v, binding))
    }

    async fn unbind(&self, vhost: &str, binding: &Binding) -> Answer<()> {
        let action = || format!("delete binding {binding} in vhost \"{vhost}\"");
        gone_is_done(self.in_vhost(vhost, Need::Bind(binding), action, |v| {
            writes::unbind(v, binding);
            Ok(())
        }))
    }

    async fn put_policy(&self, vhost: &str, policy: &Policy) -> Answer<()> {
        self.put_object(Some(vhost), &policies::KIND, &policies::object(policy)).await
    }

    async fn delete_policy(&self, vhost: &str, name: &str) -> Answer<()> {
        self.delete_object(Some(vhost), &Name { kind: &policies::KIND, id: vec![name.to_string()] }).await
    }

    async fn put_permission(&self, vhost: &str, permission: &Permission) -> Answer<()> {
        let mut s = self.lock_state();
        let action = || format!("set permissions of \"{}\" in vhost \"{vhost}\"", permission.user);
        self.admin(&s, action)?;
        if !s.users.contains_key(&permission.user) || !s.vhosts.contains_key(vhost) {
            return Err(self.said(Why::Refused("vhost_or_user_not_found".into()), action()));
        }
        let v = s.vhosts.get_mut(vhost).expect("checked above");
        v.permissions.insert(permission.user.clone(), permission.clone());
        Ok(())
    }

    async fn delete_permission(&self, vhost: &str, user: &str) -> Answer<()> {
        let mut s = self.lock_state();
        self.admin(&s, || format!("delete permissions of \"{user}\" in vhost \"{vhost}\""))?;
        if let Some(v) = s.vhosts.get_mut(vhost) {
            v.permissions.remove(user);
        }
        Ok(())
    }

    async fn put_object(&self, vhost: Option<&str>, kind: &'static Kind, object: &Object) -> Answer<()> {
        let name = Name { kind, id: object.id.clone() };
        let action = || format!("set {}", name.at(vhost));
        // Policies and operator policies are kept apart, validated as the broker does.
        if let (Some(operator), Some(v)) = (policy_kind(kind), vhost) {
            let Some(policy) = policies::policy(&object.id[0], &object.body) else {
                let not = if operator { "not an operator policy" } else { "not a policy" };
                return Err(self.said(Why::Refused(not.into()), action()));
            };
            return self.policies(v, operator, action, |set| writes::put_policy(set, &policy, operator));
        }
        let mut s = self.lock_state();
        self.admin(&s, action)?;
        if let Some(plugin) = kind.plugin.filter(|p| !s.plugins.contains(*p)) {
            // RabbitMQ: 400 "Validation failed\n\ncomponent shovel not found".
            return Err(self.said(Why::Refused(format!("the {plugin} plugin is not enabled")), action()));
        }
        let objects = match vhost {
            None => &mut s.objects,
            Some(v) => match s.vhosts.get_mut(v) {
                Some(v) => &mut v.objects,
                None => return Err(self.said(Why::Refused("vhost_not_found".into()), action())),
            },
        };
        objects.insert(name, object.body.clone());
        Ok(())
    }

    async fn delete_object(&self, vhost: Option<&str>, name: &Name) -> Answer<()> {
        if let (Some(operator), Some(v)) = (policy_kind(name.kind), vhost) {
            let action = || format!("delete {}", name.at(vhost));
            return gone_is_done(self.policies(v, operator, action, |set| {
                set.remove(&name.id[0]);
                Ok(())
            }));
        }
        let mut s = self.lock_state();
        self.admin(&s, || format!("delete {}", name.at(vhost)))?;
        match vhost {
            None => _ = s.objects.remove(name),
            Some(v) => _ = s.vhosts.get_mut(v).map(|v| v.objects.remove(name)),
        }
        Ok(())
    }

    /// Global parameters need the `policymaker` or `administrator` tag.
    async fn global_parameter(&self, name: &str) -> Answer<Option<Json>> {
        let s = self.lock_state();
        if !who(&self.user, &s)?.policymaker {
            return Err(self.forbidden(format!("read global parameter \"{name}\"")));
        }
        Ok(s.global_parameters.get(name).cloned())
    }

    async fn put_global_parameter(&self, name: &str, value: &Json) -> Answer<()> {
        let mut s = self.lock_state();
        if !who(&self.user, &s)?.policymaker {
            return Err(self.forbidden(format!("record warren's records (global parameter \"{name}\")")));
        }
        s.global_parameters.insert(name.to_string(), value.clone());
        Ok(())
    }

    async fn delete_global_parameter(&self, name: &str) -> Answer<()> {
        let mut s = self.lock_state();
        if !who(&self.user, &s)?.policymaker {
            return Err(self.forbidden(format!("delete warren's older record part (global parameter \"{name}\")")));
        }
        s.global_parameters.remove(name);
        Ok(())
    }

    /// As `Rabbit::put_record`: an internal fanout exchange whose argument
    /// holds the record. Arguments cannot change on a redeclare.
    async fn put_record(&self, vhost: &str, name: &str, value: &Json) -> Answer<()> {
        let exchange = Exchange {
            name: name.to_string(),
            kind: "fanout".into(),
            durable: true,
            auto_delete: false,
            internal: true,
            arguments: Table::from_iter([(RECORD_ARGUMENT.to_string(), Value::String(value.to_string()))]),
        };
        self.declare(vhost, &exchange, || format!("record warren's records in vhost \"{vhost}\" (exchange \"{name}\")"))
    }

    async fn delete_record(&self, vhost: &str, name: &str) -> Answer<()> {
        self.delete_x(vhost, name, || format!("delete warren's older record \"{name}\" in vhost \"{vhost}\""))
    }

    async fn record_exchanges(&self, vhost: Option<&str>) -> Answer<Vec<(String, String, String)>> {
        let s = self.lock_state();
        let who = who(&self.user, &s)?;
        if let Some(v) = vhost
            && s.vhosts.contains_key(v)
            && !sees(&s, &who, v)
        {
            return Err(self.forbidden(format!("read warren's records in vhost \"{v}\"")));
        }
        let mut out = Vec::new();
        for (name, v) in &s.vhosts {
            if vhost.is_some_and(|wanted| wanted != name) || !sees(&s, &who, name) {
                continue;
            }
            for x in v.exchanges.values() {
                if let Some(Value::String(text)) = x.arguments.get(RECORD_ARGUMENT) {
                    out.push((name.clone(), x.name.clone(), text.clone()));
                }
            }
        }
        Ok(out)
    }

    /// The lock is an AMQP connection's exclusive queue: it needs the
    /// vhost, access to it (administrators too) and configure permission
    /// on the queue.
    async fn try_lock(&self, vhost: Option<&str>, _holder: &str) -> Answer<Option<Lock>> {
        let vhost = vhost.unwrap_or("/");
        let mut s = self.lock_state();
        let who = who(&self.user, &s)?;
        let unreachable =
            |detail: &str| BrokerError::AmqpUnreachable { endpoint: ORIGIN.into(), detail: detail.into() };
        let Some(v) = s.vhosts.get(vhost) else { return Err(unreachable(&format!("vhost {vhost} not found"))) };
        if !v.permissions.contains_key(&who.name) {
            return Err(unreachable(&format!("access to vhost '{vhost}' refused for user '{}'", who.name)));
        }
        if !permits(v, &who.name, Need::Configure(LOCK_QUEUE)) {
            return Err(BrokerError::Refused {
                action: format!("take the apply lock (exclusive queue \"{LOCK_QUEUE}\" in vhost \"{vhost}\")"),
                status: 0,
                reason: format!(
                    "ACCESS_REFUSED - access to queue '{LOCK_QUEUE}' in vhost '{vhost}' refused for user '{}'",
                    who.name
                ),
            });
        }
        if s.locks.contains_key(vhost) {
            return Ok(None);
        }
        let (id, connected) = (s.next_id(), Arc::new(AtomicBool::new(true)));
        let entry = LockEntry { id, connected: connected.clone() };
        s.locks.insert(vhost.to_string(), entry);
        let hold = Hold { state: self.state.clone(), vhost: vhost.to_string(), id, connected };
        Ok(Some(Lock::local(hold)))
    }

    async fn lock_held(&self, vhost: Option<&str>) -> Answer<bool> {
        let s = self.lock_state();
        who(&self.user, &s)?;
        Ok(s.locks.contains_key(vhost.unwrap_or("/")))
    }

    async fn close(&self) {}
}
