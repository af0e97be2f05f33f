use super::{FileKind, format};

fn topology(text: &str) -> String {
    format(text, FileKind::Topology).unwrap()
}

/// The formatted text, checked to be a fixed point with the same meaning.
fn checked(text: &str) -> String {
    let once = topology(text);
    assert_eq!(topology(&once), once, "not idempotent:\n{once}");
    let before: toml::Table = toml::from_str(text).unwrap();
    let after: toml::Table = toml::from_str(&once).unwrap();
    assert_eq!(before, after, "meaning changed:\n{once}");
    once
}

#[test]
fn keys_take_imports_order_and_unknown_keys_follow() {
    let text = "[queues.\"a\"]\narguments = { x-max-length = 5 }\nzzz = 1\ndurable = false\ntype = 'quorum'\n";
    assert_eq!(
        checked(text),
        "[queues.a]\ntype = \"quorum\"\ndurable = false\narguments = { x-max-length = 5 }\nzzz = 1\n"
    );
}

#[test]
fn vhosts_come_first_and_tables_keep_their_order() {
    let text = "x = 1\nvhosts = [ \"b\",\"a\" ]\n[queues.z]\n[exchanges.y]\ntype=\"topic\"\n[[bindings]]\nqueue=\"z\"\nsource=\"y\"\n";
    assert_eq!(
        checked(text),
        "vhosts = [\"b\", \"a\"]\nx = 1\n\n[queues.z]\n\n[exchanges.y]\ntype = \"topic\"\n\n[[bindings]]\nsource = \"y\"\nqueue = \"z\"\n"
    );
}

#[test]
fn comments_stay_with_what_they_precede_and_on_their_line() {
    let text = "# the file\nvhosts = [\"/\"]   # all\n# about q\n[queues.q]\t# the queue\n  # last words\ndurable = true\n  # why classic\n  type = \"classic\"\n\n\n\n# the end\n";
    assert_eq!(
        checked(text),
        "# the file\nvhosts = [\"/\"]   # all\n\n# about q\n[queues.q] # the queue\n# why classic\ntype = \"classic\"\n# last words\ndurable = true\n\n# the end\n"
    );
}

#[test]
fn strings_and_keys_as_import_writes_them() {
    let text = "[policies.'p.1']\npattern = \"^orders\\\\.\"\ndefinition = {\"max-length\"=1}\n";
    assert_eq!(checked(text), "[policies.\"p.1\"]\npattern = '^orders\\.'\ndefinition = { max-length = 1 }\n");
    let text = "[vhost]\ndescription = \"\"\"two\nlines\"\"\"\n";
    assert_eq!(checked(text), "[vhost]\ndescription = \"two\\nlines\"\n");
}

#[test]
fn long_lists_go_one_item_a_line_and_short_ones_back() {
    let names: Vec<String> = (0..12).map(|i| format!("\"queue-number-{i}\"")).collect();
    let text = format!("[external]\nqueues = [{}]\nexchanges = [\n  \"a\",\n]\n", names.join(","));
    let out = checked(&text);
    assert!(out.starts_with("[external]\nexchanges = [\"a\"]\nqueues = [\n    \"queue-number-0\",\n"), "{out}");
    assert!(out.ends_with("    \"queue-number-11\",\n]\n"), "{out}");
}

#[test]
fn headers_get_one_blank_line_before_them() {
    let text = "\n\nvhosts = [\"/\"]\n[queues.a]\n\n\n\n[queues.b]\n# ends a\n\n[queues.c]\n";
    assert_eq!(checked(text), "vhosts = [\"/\"]\n\n[queues.a]\n\n[queues.b]\n# ends a\n\n[queues.c]\n");
}

#[test]
fn dotted_keys_and_sub_tables_are_kept() {
    let text = "[queues.a]\narguments.x-max-length = 5\ntype = \"quorum\"\n[queues.a.lint_allow]\n";
    checked(text);
    checked("[shovels.s]\nuri = \"amqp://\"\nqueues = [ # the one\n  \"q\",\n]\n");
    checked("a = [[1,2],[3]]\nb = {c={d=1}}\nc = 1_000\n");
}

#[test]
fn what_is_not_toml_is_an_error_at_its_place() {
    let e = format("vhosts = [\n[queues.a\n", FileKind::Topology).unwrap_err();
    assert!(!e.message.is_empty());
    assert!(e.span.start > 0, "{e:?}");
}

#[test]
fn crlf_and_tabs_and_empty() {
    assert_eq!(
        checked("vhosts = [\"/\"]\r\n\r\n[queues.a]\r\n\ttype = \"quorum\"\r\n"),
        "vhosts = [\"/\"]\n\n[queues.a]\ntype = \"quorum\"\n"
    );
    assert_eq!(topology(""), "");
    assert_eq!(topology("\n\n# just this\n"), "# just this\n");
}

#[test]
fn the_comments_that_open_a_file_stay_at_its_top() {
    let text = "# Prod: its own vhost.\nrename_vhosts = { a = \"b\" }\n\nvhosts = [\"a\"]\n";
    assert_eq!(checked(text), "# Prod: its own vhost.\n\nvhosts = [\"a\"]\nrename_vhosts = { a = \"b\" }\n");
}
