//! `warren import` proposes services: each user with permissions in a
//! vhost, consuming the queues its `read` lets it and publishing to the
//! exchanges its `write` lets it. Written commented out, below the
//! permissions it would replace: accepting a proposal (uncommenting it and
//! removing the user's hand-written permissions) gives files that
//! validate, whose users may still read and write every declared queue and
//! exchange they could before.

use std::path::Path;

use crate::common::{QUIRKS, realworld, root};
use warren::desired;
use warren::diagnostic::Diagnostic;
use warren::import;
use warren::live;
use warren::model::Topology;

/// The marker that opens the proposal of a vhost's file.
const MARKER: &str = "# Proposed services";

const EXPORT: &str = r#"{
  "rabbit_version": "3.10.8",
  "users": [
    {"name": "shop", "password_hash": "", "hashing_algorithm": "rabbit_password_hashing_sha256", "tags": []},
    {"name": "billing", "password_hash": "", "hashing_algorithm": "rabbit_password_hashing_sha256", "tags": []},
    {"name": "nobody", "password_hash": "", "hashing_algorithm": "rabbit_password_hashing_sha256", "tags": []}
  ],
  "vhosts": [{"name": "svc"}],
  "permissions": [
    {"user": "shop", "vhost": "svc", "configure": "^$", "write": "^shop\\.(orders|audit)$", "read": "^$"},
    {"user": "billing", "vhost": "svc", "configure": "^amq\\.gen-.*", "write": "^amq\\.default$", "read": "^billing\\."},
    {"user": "nobody", "vhost": "svc", "configure": "^$", "write": "^$", "read": "^$"}
  ],
  "exchanges": [
    {"name": "shop.orders", "vhost": "svc", "type": "topic", "durable": true, "auto_delete": false, "internal": false, "arguments": {}},
    {"name": "shop.audit", "vhost": "svc", "type": "fanout", "durable": true, "auto_delete": false, "internal": false, "arguments": {}},
    {"name": "shop.other", "vhost": "svc", "type": "fanout", "durable": true, "auto_delete": false, "internal": false, "arguments": {}}
  ],
  "queues": [
    {"name": "billing.orders", "vhost": "svc", "durable": true, "auto_delete": false, "arguments": {}},
    {"name": "billing.refunds", "vhost": "svc", "durable": true, "auto_delete": false, "arguments": {}},
    {"name": "audit.all", "vhost": "svc", "durable": true, "auto_delete": false, "arguments": {}}
  ],
  "bindings": [],
  "policies": []
}"#;

/// Imports `json` into `dir` through the library.
fn import_into(json: &str, origin: &str, dir: &Path) -> Topology {
    let live = live::from_definitions(json, origin).unwrap_or_else(|d| panic!("{origin}: {}", d.message));
    let imported = import::import(&live.topology, &[], origin).unwrap();
    for f in &imported.files {
        std::fs::write(dir.join(&f.name), &f.text).unwrap();
    }
    live.topology
}

/// Accepts every proposal below `dir`, as a user would: uncomments each
/// file's proposed services and removes the hand-written permissions of
/// their users in that file. The users whose services were accepted, by
/// vhost file.
fn accept(dir: &Path) -> usize {
    let mut accepted = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let Some(at) = text.find(MARKER) else { continue };
        let (before, proposal) = text.split_at(at);
        let start = proposal.find("\n# [services.").expect("a proposal proposes a service") + 1;
        let mut users = Vec::new();
        let mut out = String::new();
        for line in proposal[start..].lines() {
            let line = line.strip_prefix("# ").or_else(|| line.strip_prefix('#')).unwrap_or_else(|| {
                panic!("{}: the proposal ends the file, all commented out: {line:?}", path.display())
            });
            if let Some(user) = line.strip_prefix("user = ") {
                users.push(user.trim_matches('"').to_string());
            }
            out += line;
            out += "\n";
        }
        accepted += users.len();
        // Each user's `[permissions.USER]` table, up to the next blank line.
        let mut kept = String::new();
        let mut skipping = false;
        for line in before.lines() {
            if let Some(user) = line.strip_prefix("[permissions.").and_then(|l| l.strip_suffix(']')) {
                skipping = users.iter().any(|u| u == user.trim_matches('"'));
            } else if line.starts_with('[') || line.is_empty() {
                skipping = false;
            }
            if !skipping {
                kept += line;
                kept += "\n";
            }
        }
        std::fs::write(&path, format!("{kept}\n{out}")).unwrap();
    }
    accepted
}

/// Every declared queue each user could read, and exchange it could
/// write, before, it still may with the permissions its services make.
fn assert_nothing_lost(before: &Topology, after: &Topology, what: &str) {
    for (name, v) in &before.vhosts {
        let now = &after.vhosts[name];
        for (user, p) in &v.permissions() {
            let (Ok(read), Ok(write)) = (regex::Regex::new(&p.read), regex::Regex::new(&p.write)) else { continue };
            let q = now.permission(user).unwrap();
            let (read_now, write_now) = (regex::Regex::new(&q.read).unwrap(), regex::Regex::new(&q.write).unwrap());
            for queue in now.queues.keys().filter(|n| read.is_match(n)) {
                assert!(read_now.is_match(queue), "{what}: {user} in {name} may no longer read {queue}: {}", q.read);
            }
            for x in now.exchanges.keys().filter(|n| write.is_match(n)) {
                assert!(write_now.is_match(x), "{what}: {user} in {name} may no longer write {x}: {}", q.write);
            }
        }
    }
}

/// The errors of the files with the proposal accepted that the files as
/// imported do not already imply: a queue two users may read is already a
/// `shared-queue` finding, and an exchange that routes nowhere an
/// `unroutable-exchange` one; the proposal only repeats them as the
/// services' contract (`shared-queue`, `publish-unroutable`), for the same
/// queue or exchange (or its missing alternate exchange, `ae-missing`).
fn not_implied<'a>(imported: &[Diagnostic], accepted: &'a [Diagnostic]) -> Vec<&'a Diagnostic> {
    let named = |d: &Diagnostic| d.message.split('"').nth(1).map(str::to_string);
    let already = |code: &str, name: &Option<String>| {
        imported.iter().any(|i| i.code == code && named(i) == *name && name.is_some())
    };
    let implied = |d: &Diagnostic| match d.code {
        // Proposed services are named after their users: two of them
        // could read the queue before, in one finding of a group of queues
        "shared-queue" => {
            let services = d.message.split(" services, ").nth(1).unwrap_or_default();
            let users: Vec<&str> = services.split('"').skip(1).step_by(2).collect();
            already("shared-queue", &named(d))
                || imported.iter().any(|i| {
                    // (administrators' reads are not a finding of their own)
                    i.code == "shared-queue"
                        && users.iter().filter(|u| i.message.contains(&format!("\"{u}\""))).count() >= 2
                })
        }
        "publish-unroutable" => {
            let exchange =
                d.message.split("to exchange \"").nth(1).and_then(|r| r.split('"').next()).map(str::to_string);
            // Already found of that exchange: it routes nowhere, or its
            // alternate exchange does not exist.
            exchange.is_some_and(|x| {
                imported.iter().any(|i| {
                    ["unroutable-exchange", "ae-missing"].contains(&i.code) && i.message.contains(&format!("\"{x}\""))
                })
            })
        }
        _ => false,
    };
    accepted.iter().filter(|d| d.is_error() && !implied(d)).collect()
}

#[test]
fn import_proposes_a_service_per_user_commented_out() {
    let dir = tempfile::tempdir().unwrap();
    let live = import_into(EXPORT, "defs.json", dir.path());
    let text = std::fs::read_to_string(dir.path().join("svc.toml")).unwrap();
    // Proposed, not declared: the files as written read as the broker is.
    let check = desired::load(dir.path());
    assert!(!check.has_errors(), "{:?}", check.diagnostics);
    assert!(check.topology.vhosts["svc"].services.is_empty());
    let proposal = &text[text.find(MARKER).expect("a proposal")..];
    insta::assert_snapshot!("import-proposed-services", proposal);
    for expected in [
        "# [services.shop]\n# user = \"shop\"\n# publishes = [{ exchange = \"shop.audit\" }, { exchange = \"shop.orders\" }]\n",
        "# [services.billing]\n# user = \"billing\"\n# publishes = [{ exchange = \"\" }]\n# consumes = [\"billing.orders\", \"billing.refunds\"]\n# declares = { server_named = true }\n",
    ] {
        assert!(proposal.contains(expected), "{expected}\nis not in\n{proposal}");
    }
    assert!(!proposal.contains("nobody"), "a user that may do nothing is proposed no service: {proposal}");

    assert_eq!(accept(dir.path()), 2);
    let accepted = desired::load(dir.path());
    let errors = not_implied(&check.diagnostics, &accepted.diagnostics);
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(accepted.topology.vhosts["svc"].services.len(), 2);
    assert_nothing_lost(&live, &accepted.topology, "svc");
}

#[test]
fn every_realworld_proposal_accepted_validates_and_loses_nothing() {
    for path in std::iter::once(root().join(QUIRKS)).chain(realworld()) {
        let what = path.file_name().unwrap().to_string_lossy().into_owned();
        let dir = tempfile::tempdir().unwrap();
        let json = std::fs::read_to_string(&path).unwrap();
        let live = import_into(&json, &what, dir.path());
        let check = desired::load(dir.path());
        assert!(!check.has_errors(), "{what}: as imported: {:#?}", check.diagnostics);
        let accepted = accept(dir.path());
        let loaded = desired::load(dir.path());
        let errors = not_implied(&check.diagnostics, &loaded.diagnostics);
        assert!(errors.is_empty(), "{what}: accepted: {errors:#?}");
        let services: usize = loaded.topology.vhosts.values().map(|v| v.services.len()).sum();
        assert_eq!(services, accepted, "{what}");
        eprintln!("{what}: {accepted} services proposed");
        assert_nothing_lost(&live, &loaded.topology, &what);
    }
}
