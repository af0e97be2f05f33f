//! `warren graph`: the routing graph of the examples as mermaid and DOT.
//! No mermaid parser runs here (it needs a browser); each line is checked
//! against the grammar warren writes, a subset of mermaid's flowchart.

use crate::common::{examples, stem, warren};

/// Checks each line of a flowchart against the grammar warren writes.
fn assert_mermaid(what: &str, text: &str) {
    let node = regex::Regex::new(r#"^    v\d+[xq]\d+(\{\{"[^"]*"\}\}|\[\("[^"]*"\)\])$"#).unwrap();
    let edge = regex::Regex::new(r#"^    v\d+x\d+ -->(\|"[^"]*"\|)? v\d+[xq]\d+$"#).unwrap();
    let subgraph = regex::Regex::new(r#"^  subgraph v\d+\["[^"]*"\]$"#).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("flowchart LR"), "{what}");
    let mut depth = 0;
    for line in lines {
        if subgraph.is_match(line) {
            depth += 1;
        } else if line == "  end" {
            depth -= 1;
        } else {
            assert!(node.is_match(line) || edge.is_match(line), "{what}: not mermaid as warren writes it: {line:?}");
        }
    }
    assert_eq!(depth, 0, "{what}: every subgraph ends");
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
    let start = run.stdout.find("```mermaid\n").expect("a mermaid block") + "```mermaid\n".len();
    let block = &run.stdout[start..start + run.stdout[start..].find("```").unwrap()];
    assert_mermaid("the shop diff", block);
    // What changes is drawn; what does not, and touches nothing that does, is not.
    assert!(block.contains("shop.parking"), "{block}");
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
