//! `warren test`: routing tests (`*.test.toml`) beside the topology, run
//! through the real binary: each kind of expectation passing and failing,
//! a failure's place, every CI format carrying failures, `validate`
//! checking the test files, environments, and `--live` on a broker.

use serde_json::Value as Json;

use crate::common::routing::shop;
use crate::common::{Run, assert_schema, warren, warren_in};

/// One vhost: a topic exchange with an alternate exchange, a headers
/// exchange, an exchange-to-exchange binding, queues with dead-letter
/// exchanges; after the head all routing tests share ([`shop`]).
const TOPOLOGY: &str = r#"[exchanges.regions]
type = "headers"

[exchanges.dlx]
type = "direct"

[queues."orders.eu"]
arguments = { x-dead-letter-exchange = "dlx", x-dead-letter-routing-key = "dead" }

[queues."orders.us"]
arguments = { x-message-ttl = 60000, x-dead-letter-exchange = "dlx" }

[queues.audit]

[queues.parking]

[queues.dead]

[[bindings]]
source = "orders"
queue = "audit"
routing_key = "order.#"

[[bindings]]
source = "orders"
exchange = "regions"
routing_key = "order.placed.*"

[[bindings]]
source = "regions"
queue = "orders.eu"
arguments = { x-match = "all", region = "eu" }

[[bindings]]
source = "regions"
queue = "orders.us"
arguments = { x-match = "all", region = "us" }

[[bindings]]
source = "unrouted"
queue = "parking"

[[bindings]]
source = "dlx"
queue = "dead"
routing_key = "dead"
"#;

/// Every kind of expectation, each holding.
const PASSING: &str = r#"vhost = "shop"

[[route]]
name = "an order placed in the EU"
exchange = "orders"
key = "order.placed.fr"
headers = { region = "eu" }
reaches = ["audit", "orders.eu"]

[[route]]
exchange = "orders"
key = "order.placed.fr"
reaches_at_least = ["audit"]
reaches_none_of = ["orders.eu", "orders.us"]

[[route]]
exchange = "orders"
key = "invoice.sent"
reaches = ["parking"]

[[route]]
exchange = "regions"
key = "anything"
headers = { region = "asia" }
reaches_none = true

[[route]]
exchange = ""
key = "audit"
cc = ["parking"]
reaches = ["audit", "parking"]

[[dead_letters]]
queue = "orders.eu"
reason = "rejected"
reaches = ["dead"]

[[dead_letters]]
queue = "orders.us"
reason = "expired"
key = "dead"
reaches = ["dead"]

[[dead_letters]]
queue = "orders.us"
reason = "expired"
key = "order.placed.us"
reaches_none = true

[[dead_letters]]
queue = "audit"
reason = "rejected"
reaches_none = true
"#;

/// Each kind of expectation, failing; the line of each stated outcome is
/// in the comment above it.
const FAILING: &str = r#"vhost = "shop"

[[route]]
exchange = "orders"
key = "order.placed.fr"
headers = { region = "eu" }
reaches = ["audit", "orders.us"]
# line 7 above

[[route]]
exchange = "orders"
key = "invoice.sent"
reaches_at_least = ["audit"]
# line 13 above

[[route]]
exchange = "orders"
key = "order.placed.fr"
headers = { region = "us" }
reaches_none_of = ["orders.us"]
# line 20 above

[[route]]
exchange = "orders"
key = "nothing.here"
reaches_none = true
# line 26 above

[[dead_letters]]
queue = "audit"
reason = "rejected"
reaches = ["dead"]
# line 32 above
"#;

/// A project directory: `topology/shop.toml` and the test files given.
fn project(tests: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let topology = dir.path().join("topology");
    std::fs::create_dir_all(&topology).unwrap();
    std::fs::write(topology.join("shop.toml"), shop(TOPOLOGY)).unwrap();
    for (name, text) in tests {
        let path = topology.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

fn test_in(dir: &tempfile::TempDir, args: &[&str]) -> Run {
    let mut all = vec!["test", "topology"];
    all.extend_from_slice(args);
    warren_in(dir.path(), &all, &[("GITHUB_STEP_SUMMARY", None)])
}

fn json(run: &Run) -> Json {
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}{}", run.stdout, run.stderr))
}

#[test]
fn every_kind_of_expectation_passes_when_it_holds() {
    let dir = project(&[("shop.test.toml", PASSING)]);
    let run = test_in(&dir, &[]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.stdout.lines().last(), Some("Tests: 9 passed, 0 failed."), "{}", run.stdout);
    // The test file is no topology file: the files are valid, and count
    // what shop.toml declares alone.
    let valid = warren_in(dir.path(), &["validate", "topology"], &[]);
    assert_eq!(valid.code, 0, "{}{}", valid.stdout, valid.stderr);
    assert!(valid.stdout.contains("4 exchanges, 5 queues, 6 bindings"), "{}", valid.stdout);
    let doc = json(&test_in(&dir, &["--format", "json"]));
    assert_eq!(doc["summary"], serde_json::json!({"passed": 9, "failed": 0, "errors": 0}));
    assert_eq!(doc["against"], "files");
    let first = &doc["tests"][0];
    assert_eq!(first["name"], "an order placed in the EU");
    assert_eq!((first["file"].as_str(), first["line"].as_u64()), (Some("topology/shop.test.toml"), Some(3)));
    assert_eq!(first["route"]["queues"], serde_json::json!(["audit", "orders.eu"]));
    assert_eq!(first["actual"], "reaches \"audit\", \"orders.eu\"");
}

#[test]
fn every_kind_of_expectation_fails_at_the_line_that_states_it_with_the_route_taken() {
    let dir = project(&[("shop.test.toml", FAILING)]);
    let run = test_in(&dir, &[]);
    assert_eq!(run.code, 1, "a failed test fails the run as a lint error does");
    assert_eq!(run.stdout.lines().last(), Some("Tests: 0 passed, 5 failed."), "{}", run.stdout);
    let text = crate::common::flat(&run.stdout);
    for place in ["shop.test.toml:7:11", "shop.test.toml:13:20", "shop.test.toml:20:19", "shop.test.toml:26:16"] {
        assert!(text.contains(place), "{place}: {text}");
    }
    assert!(text.contains("reaches \"audit\", \"orders.eu\""), "the actual route: {text}");
    assert!(text.contains("not reached: \"orders.us\""), "{text}");
    assert!(text.contains("reached, and not expected: \"orders.eu\""), "{text}");
    assert!(text.contains("\"orders\" -(alternate)-> \"unrouted\""), "the path: {text}");
    assert!(text.contains("queue \"audit\" has no dead-letter exchange"), "why nowhere: {text}");

    let doc = json(&test_in(&dir, &["--format", "json"]));
    assert_eq!(doc["summary"], serde_json::json!({"passed": 0, "failed": 5, "errors": 0}));
    let places: Vec<(u64, u64, &str)> = doc["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let f = &t["failures"][0];
            (f["line"].as_u64().unwrap(), f["column"].as_u64().unwrap(), f["expected"].as_str().unwrap())
        })
        .collect();
    assert_eq!(
        places,
        [(7, 11, "exactly"), (13, 20, "at_least"), (20, 19, "none_of"), (26, 16, "nothing"), (32, 11, "exactly")]
    );
    assert_eq!(doc["tests"][3]["actual"], "reaches \"parking\"");
}

#[test]
fn every_ci_format_carries_the_failures_at_their_place() {
    let dir = project(&[("shop.test.toml", FAILING)]);
    // GitHub: one annotation per failure, and the report in the step summary.
    let summary = dir.path().join("summary.md");
    let github = warren_in(
        dir.path(),
        &["test", "topology", "--format", "github"],
        &[("GITHUB_STEP_SUMMARY", Some(summary.to_str().unwrap()))],
    );
    assert_eq!(github.code, 1);
    let annotations: Vec<&str> = github.stdout.lines().filter(|l| l.starts_with("::error ")).collect();
    assert_eq!(annotations.len(), 5, "{}", github.stdout);
    assert!(
        annotations[0].starts_with("::error file=topology/shop.test.toml,line=7,col=11,title=warren route-test::"),
        "{}",
        annotations[0]
    );
    let markdown = std::fs::read_to_string(&summary).unwrap();
    assert!(markdown.starts_with("### warren test topology\n\nTests: 0 passed, 5 failed.\n"), "{markdown}");
    assert!(
        markdown.contains("| error | `route-test` | `topology/shop.test.toml:13` | routing test failed: "),
        "{markdown}"
    );
    // Markdown on stdout: the same report.
    let md = test_in(&dir, &["--format", "markdown"]);
    assert_eq!(md.code, 1);
    assert_eq!(md.stdout.trim_end(), markdown.trim_end());
    // GitLab: a code quality report.
    let gitlab = json(&test_in(&dir, &["--format", "gitlab"]));
    let issues = gitlab.as_array().unwrap();
    assert_eq!(issues.len(), 5);
    assert_eq!(issues[1]["check_name"], "route-test");
    assert_eq!(issues[1]["location"], serde_json::json!({"path": "topology/shop.test.toml", "lines": {"begin": 13}}));
    // SARIF: valid SARIF 2.1.0, a result per failure at its line and column.
    let sarif = json(&test_in(&dir, &["--format", "sarif"]));
    assert_schema(&sarif, "tests/fixtures/sarif-schema-2.1.0.json");
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 5);
    let region = &results[2]["locations"][0]["physicalLocation"]["region"];
    assert_eq!((region["startLine"].as_u64(), region["startColumn"].as_u64()), (Some(20), Some(19)));
    // JSON: the report, valid against its schema, passing or not.
    assert_schema(&json(&test_in(&dir, &["--format", "json"])), "docs/schema/test-report.schema.json");
    let passing = project(&[("shop.test.toml", PASSING)]);
    assert_schema(&json(&test_in(&passing, &["--format", "json"])), "docs/schema/test-report.schema.json");
}

/// Names the topology lacks, unknown keys, wrong types, a bad reason.
const BAD: &str = r#"vhost = "shop"

[[route]]
exchange = "order"
reaches = ["audti"]

[[route]]
vhost = "shoop"
exchange = "orders"
reaches_none = true

[[route]]
exchange = "orders"
keys = "order.placed"
reaches_none = true

[[dead_letters]]
queue = "audit"
reason = "expird"
reaches_none = true

[[dead_letters]]
queue = "audit"
reason = "expired"
reaches = "dead"
"#;

#[test]
fn validate_finds_every_problem_of_a_test_file_at_its_place() {
    let dir = project(&[("bad.test.toml", BAD)]);
    let run = warren_in(dir.path(), &["validate", "topology", "--format", "json"], &[]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let doc = json(&run);
    let found: Vec<(&str, u64, u64)> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["code"].as_str().unwrap(), f["line"].as_u64().unwrap(), f["column"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        found,
        [
            ("unknown-name", 4, 12),
            ("unknown-name", 5, 12),
            ("unknown-name", 8, 9),
            ("unknown-key", 14, 1),
            ("bad-value", 19, 10),
            ("wrong-type", 25, 11),
        ],
        "{doc:#}"
    );
    let messages: Vec<&str> = doc["findings"].as_array().unwrap().iter().map(|f| f["help"].as_str().unwrap()).collect();
    assert_eq!(messages[0], "did you mean \"orders\"?");
    assert_eq!(messages[1], "did you mean \"audit\"?");
    assert_eq!(messages[3], "did you mean `key`?");
    // Drawn for people, and the same errors stop `warren test`.
    let human = warren_in(dir.path(), &["validate", "topology"], &[]);
    assert!(human.stderr.contains("topology/bad.test.toml:4:12"), "{}", human.stderr);
    assert!(human.stderr.ends_with("topology is not valid: 6 errors.\n"), "{}", human.stderr);
    let test = test_in(&dir, &["--format", "json"]);
    assert_eq!(test.code, 1);
    assert_eq!(json(&test)["summary"], serde_json::json!({"passed": 0, "failed": 0, "errors": 6}));
    // Syntax: the file is not TOML.
    let broken = project(&[("broken.test.toml", "[[route]\n")]);
    let run = warren_in(broken.path(), &["validate", "topology"], &[]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("warren::syntax"), "{}", run.stderr);
}

#[test]
fn the_tests_below_an_environments_overlay_run_on_its_topology_alone() {
    let dir = project(&[(
        "shop.test.toml",
        "[[route]]\nexchange = \"orders\"\nkey = \"order.x\"\nreaches_at_least = [\"audit\"]\n",
    )]);
    let topology = dir.path().join("topology");
    std::fs::write(
        topology.join("warren.toml"),
        "[project]\nname = \"shop\"\n\n[environments.prod]\nurl_env = \"PROD_URL\"\noverlays = [\"prod\"]\n",
    )
    .unwrap();
    std::fs::create_dir_all(topology.join("prod")).unwrap();
    // prod also copies every order to a queue of its own.
    std::fs::write(
        topology.join("prod/extra.toml"),
        "vhosts = [\"shop\"]\n\n[queues.\"orders.copy\"]\n\n[[bindings]]\nsource = \"orders\"\nqueue = \"orders.copy\"\nrouting_key = \"#\"\n",
    )
    .unwrap();
    std::fs::write(
        topology.join("prod/copy.test.toml"),
        "[[route]]\nexchange = \"orders\"\nkey = \"order.x\"\nreaches = [\"audit\", \"orders.copy\"]\n",
    )
    .unwrap();
    let base = test_in(&dir, &[]);
    assert_eq!(base.code, 0, "{}{}", base.stdout, base.stderr);
    assert_eq!(base.stdout.lines().last(), Some("Tests: 1 passed, 0 failed."), "the overlay's test is prod's");
    let prod = test_in(&dir, &["--env", "prod", "--format", "json"]);
    assert_eq!(prod.code, 0, "{}{}", prod.stdout, prod.stderr);
    let doc = json(&prod);
    assert_eq!(doc["summary"]["passed"], 2, "{doc:#}");
    assert_eq!(doc["tests"][1]["environment"], "prod");
    // The base's files know no `orders.copy`: validate says so for prod's test only with prod.
    assert_eq!(warren_in(dir.path(), &["validate", "topology", "--env", "prod"], &[]).code, 0);
}

#[test]
fn the_examples_routing_tests_pass() {
    for example in ["examples/shop", "examples/order-events"] {
        let run = warren(&["test", example]);
        assert_eq!(run.code, 0, "{example}: {}{}", run.stdout, run.stderr);
        assert!(run.stdout.ends_with(" 0 failed.\n") && !run.stdout.contains("Tests: 0 passed"), "{}", run.stdout);
    }
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn live_tests_route_over_the_brokers_topology_and_never_publish() {
    let case = crate::common::case::Case::policymaker("routing-tests-live");
    case.topology(
        "vhosts = [\"{V}\"]\n\n[exchanges.orders]\ntype = \"topic\"\narguments = { alternate-exchange = \"unrouted\" }\n\n[exchanges.unrouted]\ntype = \"fanout\"\n\n[queues.billing]\n\n[queues.parking]\n\n[[bindings]]\nsource = \"orders\"\nqueue = \"billing\"\nrouting_key = \"order.*\"\n\n[[bindings]]\nsource = \"unrouted\"\nqueue = \"parking\"\n",
    );
    case.apply_ok(&[], &[]);
    case.file(
        "orders.test.toml",
        "[[route]]\nexchange = \"orders\"\nkey = \"order.placed\"\nreaches = [\"billing\"]\n\n[[route]]\nexchange = \"orders\"\nkey = \"invoice.sent\"\nreaches = [\"parking\"]\n",
    );
    let path = case.path();
    let live = case.warren(&["test", &path, "--live"], &[]);
    assert_eq!(live.code, 0, "{}{}", live.stdout, live.stderr);
    assert_eq!(live.stdout.lines().last(), Some("Tests: 2 passed, 0 failed."), "{}", live.stdout);

    // The files gain a queue for shipping, not applied yet: the files'
    // tests pass, the broker's fail with the route it takes there.
    let more = "\n[queues.shipping]\n\n[[bindings]]\nsource = \"orders\"\nqueue = \"shipping\"\nrouting_key = \"order.placed\"\n";
    let text = std::fs::read_to_string(case.path_of("topology.toml")).unwrap();
    std::fs::write(case.path_of("topology.toml"), text + more).unwrap();
    case.file(
        "orders.test.toml",
        "[[route]]\nexchange = \"orders\"\nkey = \"order.placed\"\nreaches = [\"billing\", \"shipping\"]\n",
    );
    assert_eq!(case.warren(&["test", &path], &[]).code, 0);
    let live = case.warren(&["test", &path, "--live", "--format", "json"], &[]);
    assert_eq!(live.code, 1, "{}{}", live.stdout, live.stderr);
    let doc: Json = serde_json::from_str(&live.stdout).unwrap();
    assert_eq!(doc["against"], "broker");
    assert_eq!(doc["tests"][0]["actual"], "reaches \"billing\"");
    assert_eq!(doc["tests"][0]["failures"][0]["not_reached"], serde_json::json!(["shipping"]));

    // Nothing was published: every queue is empty, the parking lot (which
    // takes whatever no binding does) included.
    for queue in ["billing", "parking"] {
        assert_eq!(case.messages(queue), Some(0), "{queue}");
    }
    let stats = case.get("vhosts/{V}");
    let published = stats["message_stats"]["publish"].as_u64().unwrap_or(0);
    assert_eq!(published, 0, "{stats:#}");
}
