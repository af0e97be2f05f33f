//! `tests/rabbitmq4.txt`, the tests scripts/test runs again on RabbitMQ 4:
//! each of its lines must name a test of this binary, so that a renamed
//! test or module is not left out, or run there, unnoticed.

use crate::common::root;

/// This binary's test names, as `--list --include-ignored` prints them.
fn test_names() -> Vec<String> {
    let me = std::env::current_exe().expect("the test binary knows its path");
    let out =
        std::process::Command::new(me).args(["--list", "--include-ignored"]).output().expect("it lists its tests");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let listed = String::from_utf8(out.stdout).unwrap();
    listed.lines().filter_map(|l| l.strip_suffix(": test")).map(str::to_string).collect()
}

#[test]
fn every_line_of_the_rabbitmq_4_list_names_a_test() {
    let list = std::fs::read_to_string(root().join("tests/rabbitmq4.txt")).unwrap();
    let names = test_names();
    assert!(names.len() > 100, "{names:?}");
    let lines: Vec<&str> = list.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect();
    assert!(!lines.is_empty());
    for line in lines {
        let filter = line.strip_prefix("--skip ").unwrap_or(line);
        assert!(!filter.contains(char::is_whitespace), "one filter a line: {line:?}");
        assert!(names.iter().any(|n| n.contains(filter)), "tests/rabbitmq4.txt: no test's name holds {filter:?}");
    }
}
