//! `warren graph`: the routing graph of the examples as mermaid and DOT.
//! Each line is checked against the grammar warren writes, a subset of
//! mermaid's flowchart; and every flowchart is parsed by mermaid itself
//! (tests/mermaid, which scripts/test installs with npm).

use crate::common::{examples, stem, warren};

/// Checks each line of a flowchart against the grammar warren writes.
fn assert_mermaid(what: &str, text: &str) {
    // Exchanges (hexagons), queues (cylinders), services (stadiums).
    let node = regex::Regex::new(r#"^    v\d+[xqs]\d+(\{\{"[^"]*"\}\}|\[\("[^"]*"\)\]|\(\["[^"]*"\]\))$"#).unwrap();
    // Bindings: added (thick), removed (ending in a cross), or neither;
    // and what services publish to and consume.
    let edge = regex::Regex::new(r#"^    v\d+[xqs]\d+ (-->|==>|--x)(\|"[^"]*"\|)? v\d+[xqs]\d+$"#).unwrap();
    // The marks of a change, after the last subgraph.
    let style = regex::Regex::new(
        r#"^  (classDef (added|removed|changed) [-a-z:#0-9, ]+|class v\d+[xqs]\d+(,v\d+[xqs]\d+)* (added|removed|changed)|linkStyle \d+(,\d+)* [-a-z:#0-9, ]+)$"#,
    )
    .unwrap();
    // Dead letters (from a queue) and alternate exchanges: dashed.
    let dashed =
        regex::Regex::new(r#"^    v\d+[xq]\d+ -\.->\|"(dead letters|alternate)[^"]*"\| v\d+[xq]\d+$"#).unwrap();
    let subgraph = regex::Regex::new(r#"^  subgraph v\d+\["[^"]*"\]$"#).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("flowchart LR"), "{what}");
    let mut depth = 0;
    for line in lines {
        if subgraph.is_match(line) {
            depth += 1;
        } else if line == "  end" {
            depth -= 1;
        } else if depth == 0 {
            assert!(style.is_match(line), "{what}: not a mark as warren writes it: {line:?}");
        } else {
            assert!(
                node.is_match(line) || edge.is_match(line) || dashed.is_match(line),
                "{what}: not mermaid as warren writes it: {line:?}"
            );
        }
    }
    assert_eq!(depth, 0, "{what}: every subgraph ends");
    // `linkStyle` numbers the arrows in order: each added one is styled
    // green, each removed one red, no other.
    let arrows: Vec<&str> = text.lines().filter(|l| edge.is_match(l) || dashed.is_match(l)).collect();
    for (arrow, colour) in [("==>", "#2da44e"), ("--x", "#cf222e")] {
        let drawn: Vec<usize> = (0..arrows.len()).filter(|i| arrows[*i].contains(&format!(" {arrow}"))).collect();
        let styled: Vec<usize> = text
            .lines()
            .filter_map(|l| l.strip_prefix("  linkStyle ").filter(|l| l.contains(colour)))
            .flat_map(|l| l.split(' ').next().unwrap().split(',').map(|n| n.parse::<usize>().unwrap()))
            .collect();
        assert_eq!(drawn, styled, "{what}: the arrows {arrow} and their style");
    }
}

#[test]
fn every_example_draws_as_mermaid_and_dot() {
    for example in examples() {
        let run = warren(&["graph", &example]);
        assert_eq!(run.code, 0, "{example}: {}", run.stderr);
        assert_mermaid(&example, &run.stdout);
        let dot = warren(&["graph", &example, "--format", "dot"]);
        assert_eq!(dot.code, 0);
        assert!(dot.stdout.starts_with("digraph warren {") && dot.stdout.ends_with("}\n"), "{}", dot.stdout);
        assert_eq!(dot.stdout.matches('{').count(), dot.stdout.matches('}').count(), "{example}");
        insta::assert_snapshot!(format!("graph-{}", stem(&example)), run.stdout);
    }
}

#[test]
fn a_plans_comment_draws_the_routing_around_the_change() {
    let run = warren(&["diff", "tests/diff/shop-v1", "examples/shop", "--format", "markdown"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let block = mermaid_block(&run.stdout);
    assert_mermaid("the shop diff", block);
    // What changes is drawn; what does not, and touches nothing that does, is not.
    assert!(block.contains("shop.parking"), "{block}");
}

const ODD_NAMES: &str = r##"vhosts = ["odd \"v\" %% end"]

[exchanges."x\"quoted\" #1 <b>end</b> ;"]
type = "topic"
lint_allow = ["unroutable-exchange"]

[queues."q|pipe & (paren) {brace} [sq] -->"]
type = "classic"

[[bindings]]
source = "x\"quoted\" #1 <b>end</b> ;"
queue = "q|pipe & (paren) {brace} [sq] -->"
routing_key = "a|b.\"c\".# end"
"##;

/// Dead letters by argument and by policy, to an exchange and through the
/// default exchange; alternate exchanges by argument and by policy.
const SIDE_ROUTES: &str = r#"vhosts = ["v"]

[exchanges.orders]
type = "topic"
arguments = { alternate-exchange = "orders.unrouted" }

[exchanges."orders.unrouted"]
type = "fanout"

[exchanges.payments]
type = "direct"
lint_allow = ["unroutable-exchange"]

[exchanges."payments.unrouted"]
type = "fanout"

[exchanges.dlx]
type = "fanout"

[queues.work]
type = "quorum"
arguments = { x-dead-letter-exchange = "dlx" }

[queues."billing.work"]
type = "quorum"

[queues.retry]
type = "classic"
arguments = { x-dead-letter-exchange = "", x-dead-letter-routing-key = "work" }

[queues.parked]
type = "classic"

[queues.unrouted]
type = "classic"

[[bindings]]
source = "orders"
queue = "work"
routing_key = "order.*"

[[bindings]]
source = "dlx"
queue = "parked"

[[bindings]]
source = "orders.unrouted"
queue = "unrouted"

[[bindings]]
source = "payments.unrouted"
queue = "unrouted"

[policies.billing]
pattern = "^billing\\."
apply_to = "queues"
definition = { dead-letter-exchange = "dlx" }

[policies.payments]
pattern = "^payments$"
apply_to = "exchanges"
definition = { alternate-exchange = "payments.unrouted" }
"#;

/// The edges of a mermaid flowchart by the names of their ends:
/// `FROM ARROW LABEL TO`.
fn named_edges(text: &str) -> Vec<String> {
    let node = regex::Regex::new(r#"^    (v\d+[xqs]\d+)(?:\{\{"|\[\("|\(\[")([^"]*) \("#).unwrap();
    let names: std::collections::HashMap<String, String> =
        text.lines().filter_map(|l| node.captures(l)).map(|c| (c[1].to_string(), c[2].to_string())).collect();
    let edge = regex::Regex::new(r#"^    (\S+) (-->|-\.->|==>|--x)(?:\|"([^"]*)"\|)? (\S+)$"#).unwrap();
    text.lines()
        .filter_map(|l| edge.captures(l))
        .map(|c| {
            let label = c.get(3).map_or("", |m| m.as_str());
            format!("{} {} {label} {}", names[&c[1]], &c[2], names[&c[4]])
        })
        .collect()
}

#[test]
fn dead_letters_and_alternate_exchanges_are_drawn_dashed() {
    // Seen: the graph drew bindings only.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("routes.toml"), SIDE_ROUTES).unwrap();
    let path = dir.path().to_str().unwrap();
    let run = warren(&["graph", path]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_mermaid("side routes", &run.stdout);
    let edges = named_edges(&run.stdout);
    for expected in [
        "work -.-> dead letters dlx",
        "billing.work -.-> dead letters dlx",
        "retry -.-> dead letters, key work work",
        "orders -.-> alternate orders.unrouted",
        "payments -.-> alternate payments.unrouted",
        "orders --> order.* work",
    ] {
        assert!(
            edges.iter().any(|e| e == expected),
            "{expected:?} is not in {edges:#?}
{}",
            run.stdout
        );
    }
    assert_eq!(edges.iter().filter(|e| e.contains(" -.-> ")).count(), 5, "{edges:#?}");

    let dot = warren(&["graph", path, "--format", "dot"]);
    assert_eq!(dot.code, 0, "{}", dot.stderr);
    assert_eq!(dot.stdout.matches("style=dashed, label=\"dead letters").count(), 3, "{}", dot.stdout);
    assert_eq!(dot.stdout.matches("style=dashed, label=\"alternate\"").count(), 2, "{}", dot.stdout);
}

/// The mermaid block of a markdown comment.
fn mermaid_block(markdown: &str) -> &str {
    let start = markdown.find("```mermaid\n").expect("a mermaid block") + "```mermaid\n".len();
    &markdown[start..start + markdown[start..].find("```").unwrap()]
}

#[test]
#[ignore = "needs mermaid's parser: scripts/test installs it (npm ci in tests/mermaid)"]
fn mermaid_parses_every_flowchart_warren_draws() {
    let dir = crate::common::root().join("tests/mermaid");
    assert!(
        dir.join("node_modules/mermaid").is_dir(),
        "mermaid is not installed: run scripts/test, or `npm ci` in {}",
        dir.display()
    );
    let mut diagrams = Vec::new();
    for example in examples() {
        let run = warren(&["graph", &example]);
        diagrams.push(serde_json::json!({"name": example, "text": run.stdout}));
    }
    let run = warren(&["diff", "tests/diff/shop-v1", "examples/shop", "--format", "markdown"]);
    diagrams.push(serde_json::json!({"name": "the shop diff's comment", "text": mermaid_block(&run.stdout)}));
    let keyed = tempfile::tempdir().unwrap();
    let changed = crate::common::shop_with_key(keyed.path(), "order.placed.*", "order.shipped.*");
    let run = warren(&["diff", "examples/shop", changed.to_str().unwrap(), "--format", "markdown"]);
    diagrams.push(serde_json::json!({"name": "a changed key's marks", "text": mermaid_block(&run.stdout)}));
    // Names with every character mermaid gives a meaning to.
    let odd = tempfile::tempdir().unwrap();
    std::fs::write(odd.path().join("odd.toml"), ODD_NAMES).unwrap();
    let run = warren(&["graph", odd.path().to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_mermaid("odd names", &run.stdout);
    diagrams.push(serde_json::json!({"name": "odd names", "text": run.stdout}));
    let side = tempfile::tempdir().unwrap();
    std::fs::write(side.path().join("routes.toml"), SIDE_ROUTES).unwrap();
    let run = warren(&["graph", side.path().to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    diagrams.push(serde_json::json!({"name": "dead letters and alternate exchanges", "text": run.stdout}));
    let services = tempfile::tempdir().unwrap();
    std::fs::write(services.path().join("services.toml"), SERVICES).unwrap();
    let run = warren(&["graph", services.path().to_str().unwrap(), "--services"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    diagrams.push(serde_json::json!({"name": "services", "text": run.stdout}));
    std::fs::write(services.path().join("services.toml"), HEADERS_SERVICE).unwrap();
    let run = warren(&["graph", services.path().to_str().unwrap(), "--services"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    diagrams.push(serde_json::json!({"name": "services with headers", "text": run.stdout}));
    let mut node = std::process::Command::new("node")
        .arg("check.mjs")
        .current_dir(&dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("node runs (Node.js is needed for this test)");
    let input = serde_json::to_vec(&diagrams).unwrap();
    std::io::Write::write_all(&mut node.stdin.take().unwrap(), &input).unwrap();
    let out = node.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "mermaid refuses a flowchart warren drew:\n{said}");
    assert!(said.contains(&format!("{0} of {0} diagrams parse", diagrams.len())), "{said}");
}

/// Seen: the comment's picture drew the binding a change adds like any
/// other, and not the one it removes at all.
#[test]
fn a_plans_picture_marks_what_the_change_does() {
    let dir = tempfile::tempdir().unwrap();
    let changed = crate::common::shop_with_key(dir.path(), "order.placed.*", "order.shipped.*");
    let run = warren(&["diff", "examples/shop", changed.to_str().unwrap(), "--format", "markdown"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let block = mermaid_block(&run.stdout);
    assert_mermaid("a changed key", block);
    let edges = named_edges(block);
    assert_eq!(
        edges,
        ["shop.orders --x order.placed.* orders.invoicing", "shop.orders ==> order.shipped.* orders.invoicing"],
        "{block}"
    );
    // The exchange some of whose keys go elsewhere, and the queue that
    // starts and stops receiving some.
    assert!(block.contains("  class v0x0,v0q0 changed\n"), "{block}");
    let legend = "Thick green arrows are bindings added; red dashed arrows ending in a cross are bindings removed";
    assert!(run.stdout.contains(legend), "{}", run.stdout);
    insta::assert_snapshot!("picture-one-topic-key-changed", block);
    // `warren graph` marks nothing.
    let run = warren(&["graph", changed.to_str().unwrap()]);
    assert!(!run.stdout.contains("classDef") && !run.stdout.contains("linkStyle"), "{}", run.stdout);
}

#[test]
fn one_vhost_and_the_errors_of_the_files() {
    let run = warren(&["graph", "examples/shop", "--vhost", "/", "--format", "dot"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("label=\"vhost /\""), "{}", run.stdout);
    let run = warren(&["graph", "examples/shop", "--vhost", "nope"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("declare no vhost \"nope\""), "{}", run.stderr);
    let run = warren(&["graph", "tests/invalid/16-exchange-type-topc.toml"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("no graph was drawn"), "{}", run.stderr);
}

/// A shop of services: one publishing with keys to a topic exchange and
/// to a fanout one, one consuming, one sending through the default
/// exchange to a queue it names.
const SERVICES: &str = r##"vhosts = ["svc"]

[exchanges."shop.orders"]
type = "topic"

[exchanges."shop.audit"]
type = "fanout"

[queues."billing.orders"]
[queues."audit.all"]
[queues."replies"]

[[bindings]]
source = "shop.orders"
queue = "billing.orders"
routing_key = "order.placed"

[[bindings]]
source = "shop.audit"
queue = "audit.all"

[users.shop]
password_env = "SHOP_PW"
[users.billing]
password_env = "BILLING_PW"

[services.storefront]
user = "shop"
publishes = [{ exchange = "shop.orders", keys = ["order.placed"] }, { exchange = "shop.audit" }]
consumes = ["replies"]

[services.billing]
user = "billing"
consumes = ["billing.orders", "audit.all"]
publishes = [{ exchange = "", keys = ["replies"] }]
declares = { server_named = true }
"##;

#[test]
fn services_are_drawn_from_what_they_publish_to_what_they_consume() {
    // Seen: `graph` drew no services at all; `--services` asks for them.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("services.toml"), SERVICES).unwrap();
    let path = dir.path().to_str().unwrap();
    let run = warren(&["graph", path]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stdout.contains("service"), "no services unless asked: {}", run.stdout);

    let run = warren(&["graph", path, "--services"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_mermaid("services", &run.stdout);
    let edges = named_edges(&run.stdout);
    for expected in [
        "storefront --> order.placed shop.orders",
        "storefront -->  shop.audit",
        "shop.orders --> order.placed billing.orders",
        "billing.orders -->  billing",
        "billing --> replies (default exchange) replies",
        "replies -->  storefront",
    ] {
        assert!(edges.iter().any(|e| e == expected), "{expected:?} is not in {edges:#?}\n{}", run.stdout);
    }
    insta::assert_snapshot!("graph-services", run.stdout);

    let dot = warren(&["graph", path, "--services", "--format", "dot"]);
    assert_eq!(dot.code, 0, "{}", dot.stderr);
    assert_eq!(dot.stdout.matches("shape=box, style=rounded").count(), 2, "{}", dot.stdout);
    insta::assert_snapshot!("graph-services-dot", dot.stdout);
}

/// A service publishing two kinds of message to a headers exchange.
const HEADERS_SERVICE: &str = r#"vhosts = ["svc"]
[exchanges."shop.match"]
type = "headers"
[queues."fraud.checks"]
[[bindings]]
source = "shop.match"
queue = "fraud.checks"
arguments = { x-match = "any", risk = "high" }
[users.shop]
password_env = "SHOP_PW"
[services.storefront]
user = "shop"
publishes = [{ exchange = "shop.match", headers = [{ risk = "high", region = "eu" }, { risk = "high" }] }]
"#;

#[test]
fn a_service_publishing_to_a_headers_exchange_is_drawn_with_its_headers() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("services.toml"), HEADERS_SERVICE).unwrap();
    let path = dir.path().to_str().unwrap();
    let run = warren(&["graph", path, "--services"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_mermaid("headers", &run.stdout);
    let edges = named_edges(&run.stdout);
    let expected =
        "storefront --> { region = #quot;eu#quot;, risk = #quot;high#quot; }, { risk = #quot;high#quot; } shop.match";
    assert!(edges.iter().any(|e| e == expected), "{expected:?} is not in {edges:#?}");
    let dot = warren(&["graph", path, "--services", "--format", "dot"]);
    assert_eq!(dot.code, 0, "{}", dot.stderr);
    assert!(
        dot.stdout.contains(r#"label="{ region = \"eu\", risk = \"high\" }, { risk = \"high\" }""#),
        "{}",
        dot.stdout
    );
}

/// Seen: a change to a service's permissions drew no picture, since no
/// exchange, queue or binding changed.
#[test]
fn a_plans_picture_marks_the_services_whose_permissions_change() {
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = (dir.path().join("old"), dir.path().join("new"));
    std::fs::create_dir_all(&old).unwrap();
    std::fs::create_dir_all(&new).unwrap();
    std::fs::write(old.join("services.toml"), SERVICES).unwrap();
    // The storefront no longer publishes to the audit exchange.
    let changed = SERVICES.replace(", { exchange = \"shop.audit\" }]", "]");
    assert_ne!(changed, SERVICES);
    std::fs::write(new.join("services.toml"), changed).unwrap();
    let run = warren(&["diff", old.to_str().unwrap(), new.to_str().unwrap(), "--format", "markdown"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let block = mermaid_block(&run.stdout);
    assert_mermaid("a service's permissions changed", block);
    let edges = named_edges(block);
    // What it stops publishing to is drawn crossed out: `diff OLD NEW`
    // has the old services (a broker has none).
    assert_eq!(
        edges,
        ["storefront --> order.placed shop.orders", "storefront --x  shop.audit", "replies -->  storefront"],
        "{block}"
    );
    assert!(block.contains("  class v0s0 changed\n"), "{block}");
    let legend = "Thick amber outlines are services whose permissions change; \
                  an arrow from or to a service is thick and green where it starts publishing to or consuming, \
                  red and dashed ending in a cross where it stops.";
    assert!(run.stdout.contains(legend), "{}", run.stdout);
    insta::assert_snapshot!("picture-service-permissions-changed", block);
}
