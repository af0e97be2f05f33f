//! `warren plan --state`: plans against definitions exports, as users see
//! them in all three formats, for a table of single-change cases and for
//! every example's "before" state.

use crate::common::{codes_in, corpus, expected_codes, flat, squash, stem, warren};

/// What a case of `tests/plans` expects, its `case.toml`: the plan's exit
/// code (0 unless given) and its last line.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Expected {
    #[serde(default)]
    exit: i32,
    last_line: String,
}

fn expectation(case: &str) -> Expected {
    let file = crate::common::root().join(case).join("case.toml");
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

#[test]
fn single_change_cases_in_three_formats() {
    let cases = corpus_dirs("tests/plans");
    assert!(cases.len() >= 27);
    for case in cases {
        let (desired, state) = (format!("{case}/desired"), format!("{case}/live.json"));
        let Expected { exit: code, last_line } = expectation(&case);
        let human = warren(&["plan", &desired, "--state", &state]);
        assert_eq!(human.code, code, "{case}:\n{}{}", human.stdout, human.stderr);
        assert_eq!(human.stdout.lines().last(), Some(last_line.as_str()), "{case}:\n{}", human.stdout);
        insta::assert_snapshot!(format!("{}-human", stem(&case)), format!("{}{}", human.stdout, human.stderr));
        for format in ["json", "markdown"] {
            let run = warren(&["plan", &desired, "--state", &state, "--format", format]);
            assert_eq!(run.code, code, "{case} {format}");
            insta::assert_snapshot!(format!("{}-{format}", stem(&case)), run.stdout);
        }
    }
}

#[test]
fn every_example_against_its_before_state() {
    for example in crate::common::examples() {
        let state = format!("{example}/before.definitions.json");
        for format in ["human", "json", "markdown"] {
            let run = warren(&["plan", &example, "--state", &state, "--format", format]);
            assert_eq!(run.code, 0, "{example}: {}", run.stderr);
            insta::assert_snapshot!(format!("example-{}-{format}", stem(&example)), run.stdout);
        }
    }
}

/// examples/order-events says which queue each service consumes: the
/// permissions warren makes from that are those the example wrote by hand
/// before, each marked with its service.
#[test]
fn the_order_events_example_makes_its_permissions_from_its_services() {
    let state = "examples/order-events/before.definitions.json";
    let run = warren(&["plan", "examples/order-events", "--state", state, "--format", "json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let plan: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    for (user, read) in [("analytics", r"^orders\.analytics$"), ("fulfillment", r"^orders\.fulfillment$")] {
        let change = plan["changes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["kind"] == "permissions" && c["name"] == user)
            .unwrap_or_else(|| panic!("no permissions of {user}: {}", run.stdout));
        assert_eq!(change["after"], serde_json::json!({"configure": "^$", "read": read, "write": "^$"}), "{user}");
        assert_eq!(change["services"], serde_json::json!([user]), "{user}");
    }
    let access = std::fs::read_to_string(crate::common::root().join("examples/order-events/access.toml")).unwrap();
    assert!(!access.contains("[permissions."), "the services make them:\n{access}");
}

#[test]
fn the_readme_first_command_plans_a_migration() {
    let run = warren(&[
        "plan",
        "examples/dead-letter-migration",
        "--state",
        "examples/dead-letter-migration/before.definitions.json",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains(">> queue \"payments.v2\""), "{}", run.stdout);
    assert!(run.stdout.ends_with("Plan: 3 to add, 0 to change, 0 to destroy, 1 to migrate.\n"), "{}", run.stdout);
}

#[test]
fn detailed_exitcode_separates_changes_from_none() {
    let no = warren(&[
        "plan",
        "tests/plans/01-no-changes/desired",
        "--state",
        "tests/plans/01-no-changes/live.json",
        "--detailed-exitcode",
    ]);
    assert_eq!(no.code, 0);
    let yes = warren(&[
        "plan",
        "tests/plans/02-exchange-created/desired",
        "--state",
        "tests/plans/02-exchange-created/live.json",
        "--detailed-exitcode",
    ]);
    assert_eq!(yes.code, 2);
}

#[test]
fn the_same_inputs_give_the_same_plan_byte_for_byte() {
    let args = ["plan", "examples/shop", "--state", "examples/shop/before.definitions.json", "--format", "json"];
    let first = warren(&args).stdout;
    for _ in 0..3 {
        assert_eq!(warren(&args).stdout, first);
    }
}

#[test]
fn passwords_never_appear_in_a_plan() {
    let run = warren(&[
        "plan",
        "tests/plans/21-user-tags-changed/desired",
        "--state",
        "tests/plans/21-user-tags-changed/live.json",
        "--format",
        "json",
    ]);
    let live =
        std::fs::read_to_string(crate::common::root().join("tests/plans/21-user-tags-changed/live.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&live).unwrap();
    for user in json["users"].as_array().unwrap() {
        let hash = user["password_hash"].as_str().unwrap();
        assert!(hash.is_empty() || !run.stdout.contains(hash), "a password hash leaked into the plan");
    }
}

#[test]
fn a_missing_state_file_is_a_clear_error() {
    let run = warren(&["plan", "examples/shop", "--state", "no/such.json"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("cannot read no/such.json"), "{}", run.stderr);
}

fn corpus_dirs(dir: &str) -> Vec<String> {
    corpus(dir).into_iter().filter(|p| crate::common::root().join(p).is_dir()).collect()
}

/// Against an export, the whole-topology checks run beside the plan, which
/// must then not fail on files they refuse: every broken file gets exit 1
/// and the diagnostics `validate` gives, and no plan, against an empty
/// export and against the export of its own objects (where, say, a queue
/// that replaces itself exists live).
#[test]
fn broken_files_get_their_diagnostics_and_no_plan_against_an_export() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.json");
    std::fs::write(&empty, "{}").unwrap();
    let own = dir.path().join("own.json");
    for entry in corpus("tests/invalid") {
        let topology = warren::desired::load_unchecked(std::path::Path::new(&entry)).topology;
        std::fs::write(&own, warren::export::to_text(&warren::export::definitions(&topology))).unwrap();
        for state in [&empty, &own] {
            let run = warren(&["plan", &entry, "--state", state.to_str().unwrap()]);
            assert_eq!(run.code, 1, "{entry} against {}:\n{}{}", state.display(), run.stdout, run.stderr);
            assert_eq!(codes_in(&run.stderr), expected_codes(&entry), "{entry}:\n{}", run.stderr);
            assert!(run.stderr.contains("no plan was made"), "{entry}:\n{}", run.stderr);
        }
    }
}

/// A topology directory of these files (name, text).
fn topology(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

const ORDERS: &str = "vhosts = [\"orders\"]\n\n[exchanges.\"orders.events\"]\ntype = \"topic\"\n";
const SINGLE: &str = "tests/definitions/3.10-vhost-orders.json";

#[test]
fn a_single_vhost_export_is_read_as_the_vhost_given() {
    let dir = topology(&[("orders.toml", ORDERS), ("shop.toml", "vhosts = [\"shop\"]\n")]);
    let path = dir.path().to_str().unwrap();
    let run = warren(&["plan", path, "--state", SINGLE, "--vhost", "orders"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("+ vhost \"shop\""), "{}", run.stdout);
    assert!(!run.stdout.contains("+ exchange \"orders.events\""), "{}", run.stdout);
    assert!(run.stdout.contains("? queue \"orders.audit\" in vhost \"orders\""), "{}", run.stdout);
}

#[test]
fn a_single_vhost_export_is_read_as_the_only_vhost_the_files_declare() {
    let dir = topology(&[("orders.toml", ORDERS)]);
    let run = warren(&["plan", dir.path().to_str().unwrap(), "--state", SINGLE]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let said = flat(&run.stderr);
    assert!(said.contains("read as vhost \"orders\", the only vhost the files declare"), "{said}");
    assert!(said.contains("--vhost"), "{said}");
    assert!(run.stdout.contains("? queue \"orders.audit\" in vhost \"orders\""), "{}", run.stdout);
}

#[test]
fn a_single_vhost_export_with_several_vhosts_declared_needs_vhost() {
    let dir = topology(&[("orders.toml", ORDERS), ("shop.toml", "vhosts = [\"shop\"]\n")]);
    let run = warren(&["plan", dir.path().to_str().unwrap(), "--state", SINGLE]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let said = flat(&run.stderr);
    assert!(said.contains("export of a single vhost"), "{said}");
    assert!(said.contains("`warren plan PATH --state FILE --vhost NAME`"), "{said}");
    assert!(said.contains("\"orders\", \"shop\""), "{said}");
    assert_eq!(run.stdout, "");
}

#[test]
fn vhost_needs_state_and_is_ignored_for_a_cluster_wide_export() {
    let run = warren(&["plan", "examples/shop", "--vhost", "shop"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("--state"), "{}", run.stderr);
    let run =
        warren(&["plan", "examples/shop", "--state", "examples/shop/before.definitions.json", "--vhost", "elsewhere"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(flat(&run.stderr).contains("--vhost \"elsewhere\" is ignored"), "{}", run.stderr);
}

#[test]
fn an_export_with_items_rabbitmq_skips_plans_with_a_warning_for_each() {
    let users = "[users.app]\npassword_hash = \"ljAfhB1nIJOvSDForEpdiyGk3/fjTsHjP5loG6Bsot+hXmrC\"\n";
    let root_vhost =
        "vhosts = [\"/\"]\n\n[queues.work]\n\n[permissions.app]\nconfigure = \".*\"\nwrite = \".*\"\nread = \".*\"\n";
    let dir = topology(&[("users.toml", users), ("default.toml", root_vhost)]);
    let state = "tests/definitions/bad-password-hash.json";
    let run = warren(&["plan", dir.path().to_str().unwrap(), "--state", state]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let said = squash(&run.stderr);
    for expected in [
        format!("{state}:10:5: user \"legacy\" (`users[1]`) skipped"),
        format!("{state}:20:5: permissions of \"legacy\" in vhost \"/\" (`permissions[1]`) skipped"),
    ] {
        assert!(said.contains(&squash(&expected)), "{expected}:\n{}", run.stderr);
    }
    assert!(!run.stdout.contains("legacy"), "{}", run.stdout);
    let state = "tests/definitions/items-without-vhost.json";
    let run = warren(&["plan", dir.path().to_str().unwrap(), "--state", state]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(squash(&run.stderr).contains(&squash(&format!("{state}:20:5: queue \"stray\""))), "{}", run.stderr);
}

/// The files as warren last applied them to vhost `shop`, project `shop`.
const APPLIED: &str = "vhosts = [\"shop\"]\n\n[exchanges.\"x.audit\"]\ntype = \"fanout\"\nlint_allow = [\"unroutable-exchange\"]\n\n\
                       [queues.orders]\ntype = \"classic\"\n\n\
                       [policies.limits]\npattern = \"^orders$\"\napply_to = \"queues\"\ndefinition = { max-length = 10 }\n\n\
                       [policies.ttl]\npattern = \"^ttl$\"\napply_to = \"queues\"\ndefinition = { message-ttl = 1000 }\n";

/// An export of the broker after `APPLIED` was applied by ann@ci, then, on
/// the broker, policy `limits` raised to 30 and exchange `x.audit`
/// deleted: warren's records (the inventory with its digests, the
/// journal's last apply) are in it, as in any export.
fn changed_outside_export(dir: &std::path::Path) -> serde_json::Value {
    use serde_json::json;
    let desired = warren::desired::load(dir);
    assert!(!desired.has_errors(), "{:?}", desired.diagnostics);
    let mut inventory = warren::model::Inventory::of(&desired.topology);
    inventory.digests = warren::diff::outside::recorded(
        &Default::default(),
        &desired.topology,
        &inventory.objects,
        &Default::default(),
    );
    let records = warren::model::Ownership::single("shop", inventory).to_json();
    let journal = json!({
        "format": warren::model::RECORD_FORMAT, "generation": 1, "current": null, "migrations": {},
        "history": [{
            "id": "1", "by": "ann@ci", "version": "0.1.0", "started": "2026-12-01T10:00:00Z",
            "ended": "2026-12-01T10:00:02Z", "origin": "http://broker:15672", "plan": "0011223344556677",
            "vhosts": ["shop"], "summary": "5 to add, 0 to change, 0 to destroy, 0 to migrate",
            "steps_total": 5, "steps_done": 5, "doing": "", "steps": [], "outcome": "complete"
        }]
    });
    let policy = |name: &str, pattern: &str, definition: serde_json::Value| {
        json!({"vhost": "shop", "name": name, "pattern": pattern, "apply-to": "queues",
               "definition": definition, "priority": 0})
    };
    json!({
        "rabbit_version": "3.10.8",
        "users": [], "vhosts": [{"name": "shop"}], "permissions": [], "topic_permissions": [], "parameters": [],
        "global_parameters": [
            {"name": "warren.inventory", "value": records},
            {"name": "warren.journal", "value": journal}
        ],
        "policies": [
            policy("limits", "^orders$", json!({"max-length": 30})),
            policy("ttl", "^ttl$", json!({"message-ttl": 1000}))
        ],
        "queues": [{"name": "orders", "vhost": "shop", "durable": true, "auto_delete": false,
                    "arguments": {"x-queue-type": "classic"}}],
        "exchanges": [],
        "bindings": []
    })
}

#[test]
fn an_object_changed_outside_warren_says_so_in_its_own_reason_line() {
    // Seen: the README says a plan "tells what was changed outside warren since its last apply",
    // but the entry of such an object said only "will be updated in place".
    let dir = topology(&[("topology.toml", APPLIED), ("warren.toml", "[project]\nname = \"shop\"\n")]);
    let export = dir.path().join("live.json");
    std::fs::write(&export, serde_json::to_string_pretty(&changed_outside_export(dir.path())).unwrap()).unwrap();
    let (path, state) = (dir.path().to_str().unwrap(), export.to_str().unwrap());
    let since = "(last applied by ann@ci at 2026-12-01T10:00:02Z)";
    let policy = format!(
        "# policy \"limits\" in vhost \"shop\" will be updated in place: changed outside warren since its last apply {since}: put back as the files say"
    );
    let exchange = format!(
        "# exchange \"x.audit\" in vhost \"shop\" will be created: deleted outside warren since its last apply {since}: declared again as the files say"
    );
    let human = warren(&["plan", path, "--state", state]);
    assert_eq!(human.code, 0, "{}", human.stderr);
    for line in [&policy, &exchange] {
        assert!(human.stdout.lines().any(|l| l.trim() == line.as_str()), "{line:?} in:\n{}", human.stdout);
    }
    assert!(
        human.stdout.contains("Plan: 1 to add, 1 to change, 0 to destroy, 0 to migrate. 2 changed outside warren."),
        "{}",
        human.stdout
    );
    let markdown = warren(&["plan", path, "--state", state, "--format", "markdown"]);
    assert_eq!(markdown.code, 0, "{}", markdown.stderr);
    for line in [&policy, &exchange] {
        assert!(markdown.stdout.lines().any(|l| l.trim() == line.as_str()), "{line:?} in:\n{}", markdown.stdout);
    }
    let json = warren(&["plan", path, "--state", state, "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let reason = |address: &str| {
        doc["changes"].as_array().unwrap().iter().find(|c| c["address"] == address).unwrap()["reason"].clone()
    };
    assert_eq!(
        reason("policy \"limits\" in vhost \"shop\""),
        format!("changed outside warren since its last apply {since}: put back as the files say")
    );
    // What only the files changed says nothing of the kind.
    std::fs::write(dir.path().join("topology.toml"), APPLIED.replace("message-ttl = 1000", "message-ttl = 2000"))
        .unwrap();
    let human = warren(&["plan", path, "--state", state]);
    let line =
        human.stdout.lines().find(|l| l.contains("# policy \"ttl\"")).unwrap_or_else(|| panic!("{}", human.stdout));
    assert_eq!(line.trim(), "# policy \"ttl\" in vhost \"shop\" will be updated in place");
}

/// A pull request that changes one topic binding key of an example: the
/// plan's routing section names the keys that now go elsewhere, with an
/// example key for each, in the JSON document, the human plan and the
/// pull-request comment. Reviewed as a pull request is (`diff OLD NEW`),
/// the binding is the only change.
#[test]
fn one_topic_key_changed_in_an_example_names_the_keys_that_go_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let example = crate::common::root().join("examples/shop");
    let changed = crate::common::shop_with_key(dir.path(), "order.placed.*", "order.shipped.*");
    let desired = changed.to_str().unwrap();
    let run = |format: &str| {
        let run = warren(&["diff", "examples/shop", desired, "--format", format]);
        assert_eq!(run.code, 0, "{format}: {}{}", run.stdout, run.stderr);
        run.stdout.replace(desired, "shop")
    };
    let json: serde_json::Value = serde_json::from_str(&run("json")).unwrap();
    assert_valid_plan(&json);
    let routing = json["routing"].as_array().expect("a routing section");
    assert_eq!(routing.len(), 1, "{routing:?}");
    assert_eq!(routing[0]["exchange"], "shop.orders");
    let classes = routing[0]["classes"].as_array().unwrap();
    assert!(!classes.is_empty());
    let topology = &warren::desired::load_unchecked(std::path::Path::new(desired)).topology;
    let (before, after) = (&warren::desired::load_unchecked(&example).topology, topology);
    for class in classes {
        // The example is routed as the class says, before and after.
        let key = class["example"].as_str().unwrap();
        let reached = |t: &warren::model::Topology| -> Vec<String> {
            let router = warren::routing::Router::new(&t.vhosts["/"], warren::routing::Version::NEWEST);
            router.route(&warren::routing::Message::new("shop.orders", key)).queues.into_iter().collect()
        };
        assert_eq!(class["before"], serde_json::json!(reached(before)), "{class}");
        assert_eq!(class["after"], serde_json::json!(reached(after)), "{class}");
        let moved = [&class["start"], &class["stop"]].map(|q| q.as_array().unwrap().clone()).concat();
        assert_eq!(moved, [serde_json::json!("orders.invoicing")], "{class}");
    }
    insta::assert_snapshot!(
        "one-topic-key-changed-routing-json",
        serde_json::to_string_pretty(&json["routing"]).unwrap()
    );
    let markdown = run("markdown");
    assert!(markdown.contains("**Routing change**"), "{markdown}");
    for class in classes {
        assert!(markdown.contains(&format!("`{}`", class["example"].as_str().unwrap())), "{markdown}");
    }
    insta::assert_snapshot!("one-topic-key-changed-markdown", markdown);
    insta::assert_snapshot!("one-topic-key-changed-human", run("human"));
}

/// Checks a plan document against docs/schema/plan.schema.json.
fn assert_valid_plan(plan: &serde_json::Value) {
    crate::common::assert_schema(plan, "docs/schema/plan.schema.json");
}

/// Every example's plan, routing change and all, is what the schema says.
#[test]
fn every_example_plan_follows_the_plan_schema() {
    for example in crate::common::examples() {
        let state = format!("{example}/before.definitions.json");
        let run = warren(&["plan", &example, "--state", &state, "--format", "json"]);
        assert_eq!(run.code, 0, "{example}: {}", run.stderr);
        assert_valid_plan(&serde_json::from_str(&run.stdout).unwrap());
    }
}

/// `plan --target`: only the objects named and what they need, with the
/// warning in every format; a saved targeted plan keeps its targets.
#[test]
fn target_limits_the_plan_to_the_objects_named_and_what_they_need() {
    let state = "examples/shop/before.definitions.json";
    let nowhere = [("WARREN_URL", Some("http://guest:guest@127.0.0.1:9"))];
    let plan = |extra: &[&str]| {
        let mut args = vec!["plan", "examples/shop", "--state", state];
        args.extend_from_slice(extra);
        crate::common::warren_env(&args, &nowhere)
    };
    let run = plan(&["--target", "binding:/orders.shipping.pl"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let planned: Vec<&str> =
        run.stdout.lines().filter(|l| l.starts_with("  # ") && !l.starts_with("  # from shape")).collect();
    assert_eq!(
        planned,
        [
            "  # exchange \"shop.orders.dlx\" in vhost \"/\" will be created",
            "  # queue \"orders.shipping.pl\" in vhost \"/\" will be created",
            "  # binding shop.orders -> queue orders.shipping.pl key \"order.placed.pl\" in vhost \"/\" will be created",
        ],
        "the binding, the queue it needs and the queue's dead-letter exchange (its exchange is there already):\n{}",
        run.stdout
    );
    let said = flat(&run.stderr);
    assert!(said.contains("the plan is limited to binding:/orders.shipping.pl and what it needs"), "{said}");
    assert!(said.contains("18 other changes are left out"), "{said}");

    let json = plan(&["--target", "queue:/orders.*.dlq", "--target", "exchange:shop.parking", "--format", "json"]);
    assert_eq!(json.code, 0, "{}\n{}", json.stdout, json.stderr);
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(doc["summary"]["add"], 4, "{}", json.stdout);
    assert!(doc["warnings"].as_array().unwrap().iter().any(|w| w["code"] == "target"), "{}", json.stdout);

    let run = plan(&["--target", "queue"]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("is not KIND:VHOST/NAME"), "{}", run.stderr);
}
