//! Who may do what: users with every permission, the `guest` user, and
//! queues that more than one service may read (each would get part of the
//! messages: a queue hands each message to one consumer).

use std::collections::{BTreeMap, BTreeSet};

use regex::Regex;

use super::{Context, finding};
use crate::diagnostic::Diagnostic;
use crate::model::kinds::permissions;
use crate::model::{ObjectKey, Password, Permission, User, Vhost};

/// Permissions to everything, as RabbitMQ's own `.*` default grants them.
const ALL: &str = ".*";

pub(super) fn check(ctx: &mut Context) {
    let mut found = Vec::new();
    let users = ctx.topology.users();
    let is_administrator = |user: &str| users.get(user).is_some_and(|u| u.tags.contains("administrator"));
    let guest = users.get("guest").map(|u| &u.password);
    if guest.is_some() {
        let d = finding("guest-user", "the files declare the `guest` user").help(format!(
            "{}; RabbitMQ lets guest log in from localhost only: give each application a user of its own, and delete guest",
            guest_password(guest)
        ));
        found.push((crate::model::kinds::users::key("guest"), None, d));
    }
    for (vname, vhost) in &ctx.topology.vhosts {
        // Typed once per vhost: the rules below read them all.
        let permissions = vhost.permissions();
        for (user, p) in &permissions {
            let key = permissions::key(vname, user);
            if user == "guest" {
                let d = finding("guest-user", format!("the `guest` user is given permissions in vhost \"{vname}\""))
                    .help(format!("{}: give the application a user of its own", guest_password(guest)));
                found.push((key.clone(), None, d));
            }
            let declared = users.contains_key(user);
            if declared && !is_administrator(user) && [&p.configure, &p.write, &p.read].iter().all(|r| *r == ALL) {
                let d = finding(
                    "broad-permissions",
                    format!("user \"{user}\" may configure, write and read everything in vhost \"{vname}\""),
                )
                .help("give a service the least it needs: `configure` and `write` for what it declares and publishes to, `read` for its own queues (e.g. read = \"^orders\\\\.billing$\")");
                found.push((key, None, d));
            }
        }
        shared_readers(ctx, &users, vname, vhost, &permissions, &mut found);
    }
    topic_permissions(ctx, &mut found);
    for (key, field, d) in found {
        ctx.report(&key, field, d);
    }
}

/// `shared-queue` by permissions: queues that more than one user (other
/// than administrators) may read. The users of services read what their
/// services consume, looked up rather than matched: their expressions are
/// made from `consumes` (and `declares`, for queues made at run time), and
/// matching 500 services' expressions against 10,000 queues took most of
/// a `validate`. Queues that services consume together are the services'
/// rule's (`services.rs`), which prints their fix.
fn shared_readers<'a>(
    ctx: &Context<'a>,
    users: &BTreeMap<String, User>,
    vname: &str,
    vhost: &'a Vhost,
    permissions: &BTreeMap<String, Permission>,
    found: &mut Vec<(ObjectKey, Option<&'static str>, Diagnostic)>,
) {
    let is_administrator = |user: &str| users.get(user).is_some_and(|u| u.tags.contains("administrator"));
    let service_users: BTreeSet<&str> = vhost.services.values().map(|s| s.user.as_str()).collect();
    let readers: Vec<(&str, Regex)> = permissions
        .iter()
        .filter(|(user, p)| !p.read.is_empty() && users.contains_key(*user) && !is_administrator(user))
        .filter(|(user, _)| !service_users.contains(user.as_str()))
        .filter_map(|(user, p)| Some((user.as_str(), Regex::new(&p.read).ok()?)))
        .collect();
    // Hashed: looked up for each of the vhost's queues.
    let mut consumers: rustc_hash::FxHashMap<&str, Vec<&str>> = rustc_hash::FxHashMap::default();
    for s in vhost.services.values().filter(|s| !is_administrator(&s.user)) {
        for q in &s.consumes {
            consumers.entry(q.as_str()).or_default().push(&s.user);
        }
    }
    if readers.len() + service_users.len() < 2 {
        return;
    }
    let by_services = super::services::consumed_by_several(vhost);
    // One finding per set of readers: a user who may read every queue
    // would otherwise make one per queue. A queue that allows the rule
    // is left to its own (allowed) finding.
    let mut groups: BTreeMap<Vec<&str>, Vec<&str>> = BTreeMap::new();
    for q in vhost.queues.values().filter(|q| !by_services.contains_key(q.name.as_str())) {
        let mut who: Vec<&str> = readers.iter().filter(|(_, r)| r.is_match(&q.name)).map(|(u, _)| *u).collect();
        who.extend(consumers.get(q.name.as_str()).into_iter().flatten());
        who.sort_unstable();
        who.dedup();
        if who.len() < 2 {
            continue;
        }
        let key = ObjectKey::Queue { vhost: vname.to_string(), name: q.name.clone() };
        if super::allowance(ctx.locations, &key, "shared-queue").is_some() {
            found.push((key, None, shared(&[&q.name], &who, by_name(ctx, vname, &[&q.name]))));
        } else {
            groups.entry(who).or_default().push(&q.name);
        }
    }
    for (who, queues) in groups {
        let key = ObjectKey::Queue { vhost: vname.to_string(), name: queues[0].to_string() };
        found.push((key, None, shared(&queues, &who, by_name(ctx, vname, &queues))));
    }
}

/// Topic permissions on an exchange of another type: RabbitMQ checks them
/// on topic exchanges only (`rabbit_channel:check_topic_authorisation`),
/// so such a permission restricts nothing.
fn topic_permissions(ctx: &Context, found: &mut Vec<(ObjectKey, Option<&'static str>, Diagnostic)>) {
    for (vname, vhost) in &ctx.topology.vhosts {
        let Some(view) = ctx.views.get(vname.as_str()) else { continue };
        for name in vhost.objects.keys().filter(|n| n.kind.table == "topic_permissions") {
            let (user, exchange) = (&name.id[0], &name.id[1]);
            let Some(kind) = view.router.kind_of(exchange).filter(|k| *k != "topic") else { continue };
            let d = finding(
                "topic-permission-not-topic",
                format!("the topic permission of user \"{user}\" is on {kind} exchange \"{exchange}\""),
            )
            .help("RabbitMQ checks topic permissions on topic exchanges only, so this one restricts nothing: name a topic exchange, or restrict the user with its `permissions`");
            found.push((ObjectKey::Object { vhost: Some(vname.clone()), name: name.clone() }, Some("exchange"), d));
        }
    }
}

/// Whether nothing is bound to any of `queues`: publishers reach them by
/// name only, through the default exchange.
fn by_name(ctx: &Context, vname: &str, queues: &[&str]) -> bool {
    let router = &ctx.views[vname].router;
    queues.iter().all(|q| router.bindings_into(q).is_empty())
}

/// The finding for `queues`, each of which every user of `who` may read;
/// `by_name`: nothing is bound to them.
fn shared(queues: &[&str], who: &[&str], by_name: bool) -> Diagnostic {
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
    let d = finding("shared-queue", format!("{what}: each of their consumers would get only part of the messages"));
    if by_name {
        d.help("a queue hands each message to one consumer, and publishers reach this one by its name (the default exchange hands a message to the one queue its key names): publish to an exchange with each service's queue bound to it, and narrow each user's `read` to its own queue")
    } else {
        d.help("a queue hands each message to one consumer: give each service a queue of its own, bound like this one (an exchange copies a message to each queue whose binding takes it), and narrow each user's `read` to its own queue")
    }
}

/// What the files say of guest's password (`None`: they do not declare
/// guest), and why that is a concern.
fn guest_password(declared: Option<&Password>) -> String {
    let default = "guest is the user every broker starts with, the first name anyone tries";
    match declared {
        None => format!("{default}, and its password is `guest` unless it was changed"),
        Some(Password::Hash { hash, algorithm }) if crate::password::verify("guest", hash, algorithm.as_deref()) => {
            "guest's password is `guest` (its `password_hash` is of `guest`), known to everyone".into()
        }
        Some(Password::Env(var)) => format!("guest's password here is its own (${var}), but {default}"),
        Some(Password::Hash { .. }) => format!("guest's password here is its own (`password_hash`), but {default}"),
        Some(Password::None) => {
            format!("guest has no password here (it logs in by certificate, if at all), but {default}")
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// The help of each `guest-user` finding of `toml`, in file order.
    fn guest_helps(toml: &str) -> Vec<String> {
        let root = Path::new("/t");
        let desired = crate::desired::load_texts(root, vec![(root.join("t.toml"), toml.to_string())]);
        assert!(!desired.has_errors(), "{:?}", desired.diagnostics);
        let mut found: Vec<_> = crate::desired::lint(&desired).into_iter().filter(|d| d.code == "guest-user").collect();
        found.sort_by_key(|d| d.location.as_ref().map(|l| l.span.start));
        found.into_iter().map(|d| d.help.unwrap_or_default()).collect()
    }

    const PERMISSIONS: &str = "\n[permissions.guest]\nconfigure = \".*\"\nwrite = \".*\"\nread = \".*\"\n";

    #[test]
    fn guest_with_a_password_of_the_files_own_is_not_said_to_have_a_known_one() {
        // Seen: "guest's password is known to everyone" although the file sets password_env.
        let toml = format!("vhosts = [\"v\"]\n\n[users.guest]\npassword_env = \"GUEST_PASSWORD\"\n{PERMISSIONS}");
        let helps = guest_helps(&toml);
        assert_eq!(helps.len(), 2, "{helps:?}");
        for help in &helps {
            assert!(!help.contains("known to everyone"), "{help}");
            assert!(help.contains("$GUEST_PASSWORD"), "{help}");
            assert!(help.contains("give"), "it still says what to do: {help}");
        }
        let other = crate::password::hash_with_salt("not-guest", [1, 2, 3, 4]);
        let toml = format!("vhosts = [\"v\"]\n\n[users.guest]\npassword_hash = \"{other}\"\n");
        let help = &guest_helps(&toml)[0];
        assert!(!help.contains("known to everyone") && help.contains("password_hash"), "{help}");
    }

    #[test]
    fn guest_whose_hash_is_of_the_password_guest_is_said_to_have_the_known_one() {
        let known = crate::password::hash_with_salt("guest", [9, 8, 7, 6]);
        let toml = format!("vhosts = [\"v\"]\n\n[users.guest]\npassword_hash = \"{known}\"\n{PERMISSIONS}");
        for help in guest_helps(&toml) {
            assert!(help.contains("is `guest`") && help.contains("known to everyone"), "{help}");
        }
    }

    #[test]
    fn guest_without_a_password_is_said_to_have_none() {
        let toml = format!("vhosts = [\"v\"]\n\n[users.guest]\ntags = []\n{PERMISSIONS}");
        for help in guest_helps(&toml) {
            assert!(help.contains("no password") && !help.contains("known to everyone"), "{help}");
        }
        assert!(super::guest_password(None).contains("unless it was changed"));
    }
}
