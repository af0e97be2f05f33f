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
