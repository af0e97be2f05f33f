//! Shapes (docs/shapes.md): the shop example, rewritten with one, makes
//! exactly the objects it wrote out before; an error in a stamped object
//! is at the shape's line and names the stamp's; a project whose shapes
//! are in a shared directory applies and then plans no changes.

use crate::common::{Case, files_dir, warren};

const SHAPES: &str = include_str!("../fixtures/shapes/common/shapes.toml");

#[test]
fn the_shop_example_with_a_shape_makes_the_objects_it_wrote_out() {
    let run = warren(&["diff", "tests/fixtures/shapes/shop-written-out", "examples/shop", "--detailed-exitcode"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("No changes."), "{}", run.stdout);
    let state = "examples/shop/before.definitions.json";
    let json = |path: &str| {
        let run = warren(&["plan", path, "--state", state, "--format", "json"]);
        let mut doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        doc["desired"] = serde_json::Value::Null;
        doc
    };
    let (written, shaped) = (json("tests/fixtures/shapes/shop-written-out"), json("examples/shop"));
    let mut stamped = 0;
    let mut without = shaped.clone();
    for c in without["changes"].as_array_mut().unwrap() {
        if let Some(shape) = c.as_object_mut().unwrap().remove("shape") {
            assert_eq!(shape["name"], "consumer", "{shape}");
            assert!(shape["stamped_at"].as_str().unwrap().starts_with("examples/shop/topology.toml:5"), "{shape}");
            stamped += 1;
        }
    }
    assert_eq!(without["changes"], written["changes"], "the same plan but for the shape's origin");
    assert_eq!(stamped, 10, "{shaped}");
}

#[test]
fn an_error_in_a_stamped_object_is_at_the_shape_and_at_the_stamp() {
    let dir = files_dir(&[(
        "t.toml",
        "vhosts = [\"/\"]\n\n[shapes.work]\nparameters = [\"name\"]\n\n[shapes.work.queues.\"${name}\"]\ntype = \"quorom\"\n\n[[stamps]]\nshape = \"work\"\nfor_each = { name = [\"a\", \"b\"] }\n",
    )]);
    let path = dir.path().join("t.toml").display().to_string();
    let run = warren(&["validate", &path, "--format", "json"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let found = doc["findings"].as_array().unwrap();
    assert_eq!(found.len(), 2, "one for each stamp: {doc}");
    for (f, col) in found.iter().zip([22, 27]) {
        assert_eq!(
            (f["code"].as_str(), f["line"].as_u64(), f["column"].as_u64()),
            (Some("bad-value"), Some(7), Some(8))
        );
        assert_eq!(f["shape"]["name"], "work");
        assert_eq!(f["shape"]["defined_at"], format!("{path}:3:9"));
        assert_eq!(f["shape"]["stamped_at"], format!("{path}:11:{col}"));
    }
    // In SARIF, the stamp and the shape are the result's related locations.
    let sarif: serde_json::Value =
        serde_json::from_str(&warren(&["validate", &path, "--format", "sarif"]).stdout).unwrap();
    let related = &sarif["runs"][0]["results"][0]["relatedLocations"];
    let place = |i: usize| {
        let p = &related[i]["physicalLocation"];
        (p["artifactLocation"]["uri"].as_str(), p["region"]["startLine"].as_u64(), p["region"]["startColumn"].as_u64())
    };
    assert_eq!(place(0), (Some(path.as_str()), Some(11), Some(22)), "the stamp: {related}");
    assert_eq!(place(1), (Some(path.as_str()), Some(3), Some(9)), "the shape: {related}");
    let run = warren(&["validate", &path]);
    let text = crate::common::flat(&run.stderr);
    assert!(text.contains(&format!("stamped at {path}:11:22")), "{text}");
    assert!(text.contains(&format!("{path}:7:8")), "{text}");
}

/// The project and its shared shapes directory, beside it.
fn shared_project(case: &Case) {
    case.file("team-shapes/shapes.toml", SHAPES);
    case.file("project/warren.toml", "[project]\nname = \"t-shapes\"\nshapes = [\"../team-shapes\"]\n");
    case.file(
        "project/topology.toml",
        r#"vhosts = ["{V}"]

[exchanges.orders]
type = "topic"

[[stamps]]
shape = "dead-lettered"
name = "payments"

[[stamps]]
shape = "service-queue"
exchange = "orders"
for_each = { service = ["billing", "shipping"] }

[[stamps]]
shape = "retried-work"
name = "emails"

[[stamps]]
shape = "regional"
for_each = { region = ["eu", "us"] }
"#,
    );
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn apply_a_project_of_shared_shapes_and_plan_no_changes() {
    let case = Case::admin("t-shapes");
    shared_project(&case);
    let project = case.path_of("project");
    let run = case.warren(&["apply", &project, "--auto-approve"], &[]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    // The vhost and the 27 objects the stamps make.
    assert!(run.stdout.contains("28 to add"), "{}", run.stdout);
    let emails = case.get("queues/{V}/emails.retry.30s");
    assert_eq!(emails["arguments"]["x-message-ttl"], 30000, "{emails}");
    assert_eq!(emails["arguments"]["x-dead-letter-routing-key"], "emails", "{emails}");
    assert!(case.exists("queues/{V}/events.us.audit"));
    let plan = case.warren(&["plan", &project, "--detailed-exitcode"], &[]);
    assert_eq!(plan.code, 0, "{}\n{}", plan.stdout, plan.stderr);
    assert!(plan.stdout.contains("No changes."), "{}", plan.stdout);
}
