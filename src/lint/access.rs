//! Who may do what: users with every permission, the `guest` user, and
//! queues that more than one service may read (each would get part of the
//! messages: a queue hands each message to one consumer).

use std::collections::BTreeMap;

use regex::Regex;

use super::{Context, finding};
use crate::diagnostic::Diagnostic;
use crate::model::ObjectKey;

/// Permissions to everything, as RabbitMQ's own `.*` default grants them.
const ALL: &str = ".*";

pub(super) fn check(ctx: &mut Context) {
    let mut found = Vec::new();
    let is_administrator = |user: &str| ctx.topology.users.get(user).is_some_and(|u| u.tags.contains("administrator"));
    if ctx.topology.users.contains_key("guest") {
        let d = finding("guest-user", "the files declare the `guest` user")
            .help("guest's password is known to everyone, and RabbitMQ lets it log in from localhost only: give each application a user of its own, and delete guest");
        found.push((ObjectKey::User("guest".into()), None, d));
    }
    for (vname, vhost) in &ctx.topology.vhosts {
        for (user, p) in &vhost.permissions {
            let key = ObjectKey::Permission { vhost: vname.clone(), user: user.clone() };
            if user == "guest" {
                let d = finding("guest-user", format!("the `guest` user is given permissions in vhost \"{vname}\""))
                    .help("guest's password is known to everyone: give the application a user of its own");
                found.push((key.clone(), None, d));
            }
            let declared = ctx.topology.users.contains_key(user);
            if declared && !is_administrator(user) && [&p.configure, &p.write, &p.read].iter().all(|r| *r == ALL) {
                let d = finding(
                    "broad-permissions",
                    format!("user \"{user}\" may configure, write and read everything in vhost \"{vname}\""),
                )
                .help("give a service the least it needs: `configure` and `write` for what it declares and publishes to, `read` for its own queues (e.g. read = \"^orders\\\\.billing$\")");
                found.push((key, None, d));
            }
        }
        // Services (users other than administrators) that may read each queue.
        let readers: Vec<(&str, Regex)> = vhost
            .permissions
            .iter()
            .filter(|(user, p)| !p.read.is_empty() && ctx.topology.users.contains_key(*user) && !is_administrator(user))
            .filter_map(|(user, p)| Some((user.as_str(), Regex::new(&p.read).ok()?)))
            .collect();
        if readers.len() < 2 {
            continue;
        }
        // One finding per set of readers: a user who may read every queue
        // would otherwise make one per queue. A queue that allows the rule
        // is left to its own (allowed) finding.
        let mut groups: BTreeMap<Vec<&str>, Vec<&str>> = BTreeMap::new();
        for q in vhost.queues.values() {
            let who: Vec<&str> = readers.iter().filter(|(_, r)| r.is_match(&q.name)).map(|(u, _)| *u).collect();
            if who.len() < 2 {
                continue;
            }
            let key = ObjectKey::Queue { vhost: vname.clone(), name: q.name.clone() };
            if super::allowance(ctx.locations, &key, "shared-queue").is_some() {
                found.push((key, None, shared(&[&q.name], &who)));
            } else {
                groups.entry(who).or_default().push(&q.name);
            }
        }
        for (who, queues) in groups {
            let key = ObjectKey::Queue { vhost: vname.clone(), name: queues[0].to_string() };
            found.push((key, None, shared(&queues, &who)));
        }
    }
    for (key, field, d) in found {
        ctx.report(&key, field, d);
    }
}

/// The finding for `queues`, each of which every user of `who` may read.
fn shared(queues: &[&str], who: &[&str]) -> Diagnostic {
    const LISTED: usize = 3;
    let names = |list: &[&str]| list.iter().map(|n| format!("\"{n}\"")).collect::<Vec<_>>().join(", ");
    let users = names(who);
    let what = match queues {
        [q] => format!("queue \"{q}\" may be read by {} users, {users}", who.len()),
        _ => {
            let mut listed = names(&queues[..queues.len().min(LISTED)]);
            if queues.len() > LISTED {
                listed += &format!(" and {} more", queues.len() - LISTED);
            }
            format!("{} queues ({listed}) may each be read by {} users, {users}", queues.len(), who.len())
        }
    };
    finding("shared-queue", format!("{what}: each of their consumers would get only part of the messages"))
        .help("a queue hands each message to one consumer: give each service a queue of its own, bound like this one (a fanout or topic exchange copies every message to each), and narrow each user's `read` to its own queue")
}
