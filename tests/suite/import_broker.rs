//! `warren import` from the private test broker (`scripts/broker start`;
//! WARREN_TEST_URL, WARREN_TEST_NODE): what it says when it cannot import.
//! The round trip of real topologies is `tests/realworld_broker.rs`.

use std::path::Path;

use crate::common::{TestBroker, seg, squash, warren};

/// A vhost, or a user, made for one test and deleted when it ends.
struct Made<'a> {
    broker: &'a TestBroker,
    path: String,
}

impl Drop for Made<'_> {
    fn drop(&mut self) {
        self.broker.delete(&self.path);
    }
}

fn vhost<'a>(broker: &'a TestBroker, name: &str) -> Made<'a> {
    let out = broker.ctl(&["add_vhost", name]);
    assert!(out.status.success(), "add_vhost {name}: {}", String::from_utf8_lossy(&out.stderr));
    Made { broker, path: format!("vhosts/{}", seg(name)) }
}

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn an_unknown_vhost_names_the_vhosts_the_broker_has() {
    let _turn = crate::common::alone();
    let broker = TestBroker::from_env();
    let _known = vhost(&broker, "t-import-cli-known");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let run = warren(&[
        "--url",
        &broker.url,
        "import",
        "--vhost",
        "t-import-cli-known",
        "--vhost",
        "t-import-cli-nope",
        "--out",
        path_str(&out),
    ]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let err = squash(&run.stderr);
    let message = format!("× the broker at {} has no vhost \"t-import-cli-nope\"", broker.shown_url());
    assert!(err.contains(&squash(&message)), "{}", run.stderr);
    assert!(err.contains(&squash("help: its vhosts are \"/\",")), "{}", run.stderr);
    assert!(err.contains("\"t-import-cli-known\""), "{}", run.stderr);
    assert_eq!(run.stdout, "");
    assert!(!out.exists());
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn refused_credentials_are_an_error_that_never_shows_the_password() {
    let _turn = crate::common::alone();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let shown = TestBroker::from_env().shown_url();
    let url = shown.replacen("://", "://guest:t-import-wrong-pw@", 1);
    let run = warren(&["--url", &url, "import", "--out", path_str(&out)]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let expected = format!("× {shown} refused the credentials of user \"guest\" (wrong user name or password)");
    assert!(squash(&run.stderr).contains(&squash(&expected)), "{}", run.stderr);
    assert!(!run.stderr.contains("t-import-wrong-pw"), "{}", run.stderr);
    assert_eq!(run.stdout, "");
    assert!(!out.exists());
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn a_user_who_may_not_read_the_definitions_is_told_so() {
    let _turn = crate::common::alone();
    let broker = TestBroker::from_env();
    let user = "t-import-cli-monitor";
    let made = broker.ctl(&["add_user", user, "t-import-pw"]);
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let _user = Made { broker: &broker, path: format!("users/{user}") };
    let tagged = broker.ctl(&["set_user_tags", user, "monitoring"]);
    assert!(tagged.status.success(), "{}", String::from_utf8_lossy(&tagged.stderr));

    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let url = broker.shown_url().replacen("://", &format!("://{user}:t-import-pw@"), 1);
    let run = warren(&["--url", &url, "import", "--out", path_str(&out)]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let expected = format!("× user \"{user}\" is not allowed to read the broker's definitions");
    assert!(squash(&run.stderr).contains(&squash(&expected)), "{}", run.stderr);
    assert!(!out.exists());
}

/// Seen on the broker: a user with `read` on every queue, consuming one,
/// is proposed a service consuming that one.
#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn import_from_a_broker_proposes_the_queues_each_user_consumes() {
    use lapin::options::{BasicConsumeOptions, QueueDeclareOptions};
    use lapin::types::FieldTable;
    let _turn = crate::common::alone();
    let broker = TestBroker::from_env();
    let v = "t-import-consumed";
    let _vhost = vhost(&broker, v);
    let user = "t-import-consumer";
    broker.put(&format!("users/{user}"), serde_json::json!({"password": "consumer-pw-3", "tags": ""}));
    let _user = Made { broker: &broker, path: format!("users/{user}") };
    let all = serde_json::json!({"configure": ".*", "write": "^$", "read": ".*"});
    broker.put(&format!("permissions/{}/{user}", seg(v)), all);
    let base =
        broker.amqp().expect("WARREN_TEST_AMQP_URL").replacen("guest:guest@", &format!("{user}:consumer-pw-3@"), 1);
    let url = crate::common::traffic::amqp_url_on(&base, v);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let _connection = runtime.block_on(async {
        let c = lapin::Connection::connect(&url, lapin::ConnectionProperties::default()).await.unwrap();
        let ch = c.create_channel().await.unwrap();
        let durable = QueueDeclareOptions { durable: true, ..Default::default() };
        for q in ["work.one", "work.two"] {
            ch.queue_declare(q.into(), durable, FieldTable::default()).await.unwrap();
        }
        ch.basic_consume("work.one".into(), "t".into(), BasicConsumeOptions::default(), FieldTable::default())
            .await
            .unwrap();
        (c, ch)
    });
    // The management API lists a consumer once its statistics are in, and
    // its channel's user once the channel's are (they come apart).
    let listed = (0..100).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(200));
        let listing = broker.request("GET", &format!("consumers/{}", seg(v)), None).json();
        listing
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["queue"]["name"] == "work.one" && c["channel_details"]["user"] == user)
    });
    assert!(listed, "the consumer is listed");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let run = warren(&["--url", &broker.url, "import", "--vhost", v, "--out", path_str(&out)]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let text = std::fs::read_to_string(out.join(format!("{v}.toml"))).unwrap();
    let expected = format!(
        "# # consumes: the queues it consumed when imported (its `read` matches 2 of the vhost's)\n# [services.{user}]\n# user = \"{user}\"\n# consumes = [\"work.one\"]\n# declares = {{ server_named = true }}\n"
    );
    assert!(text.contains(&expected), "{expected}\nis not in\n{text}");
}
