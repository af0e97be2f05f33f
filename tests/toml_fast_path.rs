//! The quick TOML reader of topology files reads every document it takes
//! exactly as the toml crate does (keys, values, order and spans), and
//! leaves every document with an error to the toml crate.

mod common;

use std::path::{Path, PathBuf};

use common::strategy::topology;
use proptest::prelude::*;
use warren::testing::toml_fast_path_agrees;

fn toml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            toml_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "toml") {
            out.push(path);
        }
    }
}

#[test]
fn every_file_of_the_repository_reads_the_same() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["examples", "topology", "tests"] {
        toml_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 50, "the corpora are found: {files:?}");
    let mut taken = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        match toml_fast_path_agrees(&text) {
            Ok(took) => taken += usize::from(took),
            Err(e) => panic!("{}: {e}", file.display()),
        }
    }
    // Most files are plain: the quick reader must not leave them all.
    assert!(taken * 2 > files.len(), "the quick reader took only {taken} of {} files", files.len());
}

#[test]
fn the_benchmark_topology_reads_the_same() {
    let topology = warren::testing::large_topology(2_000, 100, 4_000);
    let files = warren::import::import(&topology, &[], "generated").unwrap();
    for f in &files.files {
        assert_eq!(toml_fast_path_agrees(&f.text), Ok(true), "{}", f.name);
    }
}

/// A key: bare, quoted with escapes, or literal, from few names so that
/// documents often repeat and redefine keys and tables.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => prop::sample::select(vec!["a", "b", "c-d", "x_1", "0", "true", "k", "l", "m", "n"]).prop_map(String::from),
        2 => prop::sample::select(vec!["\"a\"", "\"b.c\"", "\"é\"", "\"\"", "\"a\\u00e9\\n\"", "\"\\e\"", "\"\\x41\""])
            .prop_map(String::from),
        1 => prop::sample::select(vec!["'a'", "'b\"c'", "''", "'a\\n'"]).prop_map(String::from),
    ]
}

fn dotted() -> impl Strategy<Value = String> {
    prop::collection::vec(key(), 1..4).prop_map(|parts| parts.join("."))
}

/// Spaces where TOML allows them, now and then none or a tab.
fn gap() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![" ", " ", "", "\t", "  "])
}

fn scalar() -> impl Strategy<Value = String> {
    let plain = vec![
        "\"text\"",
        "\"a\\tb\\\"c\\\\\"",
        "\"\\u00e9\\U0001F600\"",
        "\"\"",
        "'lit\\'",
        "''",
        "\"tab\there\"",
        "1",
        "-7",
        "+3",
        "1_000",
        "1.5",
        "-0.0",
        "1e3",
        "1E-2",
        "true",
        "false",
    ];
    // What the quick reader leaves to the toml crate, or what is an error.
    let odd = vec![
        "\"\\ud800\"",
        "\"bad\\q\"",
        "\"\"\"multi\"\"\"",
        "'''multi'''",
        "0x1f",
        "0o7",
        "0b1",
        "01",
        "9223372036854775808",
        "3.",
        ".5",
        "inf",
        "-nan",
        "tru",
        "1979-05-27",
        "1979-05-27T07:32:00Z",
        "07:32:00",
        "1979-05-27 07:32:00",
        "x",
    ];
    prop_oneof![6 => prop::sample::select(plain), 1 => prop::sample::select(odd)].prop_map(String::from)
}

/// A value: a scalar, or an array or inline table of values, written over
/// lines, with comments and trailing commas at times.
fn value() -> impl Strategy<Value = String> {
    scalar().prop_recursive(3, 16, 4, |inner| {
        let sep = prop::sample::select(vec![", ", ",", ",\n", " ,", ", # note\n"]);
        prop_oneof![
            (prop::collection::vec((inner.clone(), sep.clone()), 0..4), any::<bool>(), gap()).prop_map(
                |(items, trailing, g)| {
                    let mut s = format!("[{g}");
                    for (i, (v, sep)) in items.iter().enumerate() {
                        if i > 0 {
                            s.push_str(sep);
                        }
                        s.push_str(v);
                    }
                    if trailing && !items.is_empty() {
                        s.push(',');
                    }
                    s + g + "]"
                }
            ),
            (prop::collection::vec((dotted(), inner, sep), 0..4), any::<bool>()).prop_map(|(items, trailing)| {
                let mut s = String::from("{ ");
                for (i, (k, v, sep)) in items.iter().enumerate() {
                    if i > 0 {
                        s.push_str(sep);
                    }
                    s.push_str(&format!("{k} = {v}"));
                }
                if trailing && !items.is_empty() {
                    s.push(',');
                }
                s + " }"
            }),
        ]
    })
}

fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => (dotted(), gap(), gap(), value()).prop_map(|(k, a, b, v)| format!("{k}{a}={b}{v}")),
        3 => (dotted(), gap()).prop_map(|(k, g)| format!("[{g}{k}{g}]")),
        3 => (dotted(), gap()).prop_map(|(k, g)| format!("[[{g}{k}{g}]]")),
        2 => prop::sample::select(vec!["", "# comment", "  # é", "a = 1 # x"]).prop_map(String::from),
        1 => prop::sample::select(vec!["#\u{7f}", "[a] b = 1", "\u{feff}", "a = 1 = 2", "[a"]).prop_map(String::from),
        1 => "[ -~]{0,12}",
    ]
}

/// Lines, ended by `\n` or `\r\n`, now and then with a stray `\r`.
fn document() -> impl Strategy<Value = String> {
    let end = prop::sample::select(vec!["\n", "\n", "\n", "\n", "\r\n", "\r\n", "\r", ""]);
    prop::collection::vec((line(), end), 0..12).prop_map(|lines| {
        lines.into_iter().map(|(l, e)| if e.is_empty() { l + "\n" } else { l + e }).collect::<String>()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    /// On any document, the quick reader either leaves it or agrees.
    #[test]
    fn documents_read_the_same(doc in document()) {
        if let Err(e) = toml_fast_path_agrees(&doc) {
            prop_assert!(false, "{doc:?}\n{e}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// What `warren import` writes, the quick reader takes, as the toml crate reads it.
    #[test]
    fn imported_topologies_read_the_same(t in topology()) {
        let files = warren::import::import(&t, &[], "generated").unwrap();
        for f in &files.files {
            prop_assert_eq!(toml_fast_path_agrees(&f.text), Ok(true), "{}\n{}", f.name, f.text);
        }
    }
}

/// Of the generated documents that are valid TOML, the quick reader takes
/// most, so that the comparison above means something.
#[test]
fn the_quick_reader_takes_most_valid_generated_documents() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let (mut valid, mut taken) = (0, 0);
    for _ in 0..2000 {
        let doc = document().new_tree(&mut runner).unwrap().current();
        valid += usize::from(toml::de::DeTable::parse(&doc).is_ok());
        taken += usize::from(toml_fast_path_agrees(&doc).unwrap_or_else(|e| panic!("{doc:?}\n{e}")));
    }
    // The rest have what only the toml crate reads: dates, TOML 1.1
    // escapes, inline tables over lines, tables defined after their own.
    assert!(taken * 2 > valid, "only {taken} of {valid} valid documents taken");
}

#[test]
fn plain_documents_are_taken_and_others_left() {
    let taken = [
        "vhosts = [\"/\", 'b']\r\n[exchanges.\"a.b\"]\ntype = \"topic\" # c\n[[bindings]]\nsource = \"a\\u00e9\\\"\"\n",
        "a.b.c = 1\na.d = { e = 1.5, f.g = true, h = [] }\n[t]\nx = [\n  1, # one\n  -2_000,\n]\n[t.u]\n[[t.v]]\n[[t.v]]\nw = {}\n",
        "[a.b]\n[a.c]\nx = 'y'\n[[arr]]\n[arr.sub]\nk = 1e3\n[[arr]]\n[arr.sub]\nk = +1\n",
        "",
        "# only a comment",
    ];
    for doc in taken {
        assert_eq!(toml_fast_path_agrees(doc), Ok(true), "{doc}");
    }
    let left = [
        "d = 1979-05-27\n",
        "s = \"\"\"x\"\"\"\n",
        "[a.b]\n[a]\n",
        "[a]\n[a]\n",
        "a = 1\na = 2\n",
        "a = {b = 1,}\n",
        "a = \"\\e\"\n",
        "a = 1\r",
        "a = [1,\n\n",
    ];
    for doc in left {
        assert_eq!(toml_fast_path_agrees(doc), Ok(false), "{doc}");
    }
}

/// Large tables are found by name through an index: a repeat is still
/// seen, however far from the first, and a name with escapes (which the
/// index cannot hold) leaves the file to the toml crate.
#[test]
fn large_tables_are_taken_and_their_repeats_left() {
    let lines = |f: &dyn Fn(usize) -> String| (0..40).map(f).collect::<String>();
    let keys = lines(&|i| format!("k{i} = {i}\n"));
    let headers = lines(&|i| format!("[t.\"n{i}\"]\nx = {i}\n"));
    let arrays = lines(&|i| format!("[[a]]\nx = {i}\n[a.sub]\ny = {i}\n"));
    for doc in [
        &keys,
        &headers,
        &arrays,
        &format!("{keys}[t]\n{keys}"),
        &format!("t = {{ {} }}\n", keys.replace('\n', ", ").trim_end_matches(", ")),
    ] {
        assert_eq!(toml_fast_path_agrees(doc), Ok(true), "{doc}");
    }
    let left = [
        format!("{keys}k7 = 1\n"),
        format!("{keys}k39 = 1\n"),
        format!("{headers}[t.\"n3\"]\n"),
        format!("{headers}[t]\nn5 = 1\n"),
        format!("{keys}\"k\\u0031\" = 1\n"),
        format!("{keys}\"k\\u0041\" = 1\n"),
    ];
    for doc in &left {
        assert_eq!(toml_fast_path_agrees(doc), Ok(false), "{doc}");
    }
}
