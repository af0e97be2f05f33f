//! `warren import`: exports to topology files that validate and load back
//! to the live topology (less what files cannot declare), through the
//! library and through the real binary.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::common::{QUIRKS, Run, flat, realworld, root, squash, warren};
use warren::desired;
use warren::import::{self, Import};
use warren::live::{self, Live};
use warren::model::{ObjectKey, Topology};

fn read(path: &Path) -> Live {
    let json = std::fs::read_to_string(path).unwrap();
    live::from_definitions(&json, &path.display().to_string())
        .unwrap_or_else(|d| panic!("{}: {}", path.display(), d.message))
}

fn write(dir: &Path, imported: &Import) {
    for f in &imported.files {
        std::fs::write(dir.join(&f.name), &f.text).unwrap();
    }
}

/// The live topology of `vhosts` (all when empty), users as import picks
/// them, less the objects import reports as left out.
fn expected(live: &Topology, vhosts: &[&str], left_out: &[import::LeftOut]) -> Topology {
    let mut t = live.clone();
    // A kind that names one broker is never imported.
    t.objects.retain(|n, _| n.kind.portable);
    if !vhosts.is_empty() {
        // broker-wide: only an import of the whole broker writes them, but users
        t.objects.retain(|n, _| n.kind == &warren::model::kinds::users::KIND);
        t.vhosts.retain(|v, _| vhosts.contains(&v.as_str()));
        let users: BTreeSet<String> =
            t.vhosts.values().flat_map(|v| v.permission_users().map(str::to_string)).collect();
        t.retain_users(|u| users.contains(u));
    }
    for l in left_out {
        assert!(l.part.is_none(), "unexpected partial leave-out {l:?}");
        if let Some(u) = warren::model::kinds::users::name_of(&l.key) {
            t.remove_user(u);
            continue;
        }
        let vh = t.vhosts.get_mut(l.key.vhost().unwrap()).unwrap();
        match &l.key {
            ObjectKey::Exchange { name, .. } => {
                vh.exchanges.remove(name);
            }
            ObjectKey::Queue { name, .. } => {
                vh.queues.remove(name);
            }
            ObjectKey::Binding { binding, .. } => {
                vh.bindings.remove(binding);
            }
            ObjectKey::Object { name, .. } => {
                vh.objects.remove(name);
            }
            other => panic!("{other} left out"),
        }
    }
    t
}

/// The topology without the desired-only `external` names.
fn without_external(mut t: Topology) -> Topology {
    for v in t.vhosts.values_mut() {
        v.external = Default::default();
    }
    t
}

/// Imports `vhosts` of `path` through the library, loads the files back,
/// and checks they equal the live topology. Returns what was left out.
fn round_trip(path: &Path, vhosts: &[&str]) -> Vec<String> {
    let name = path.display().to_string();
    let live = read(path);
    let wanted: Vec<String> = vhosts.iter().map(|v| v.to_string()).collect();
    let imported = import::import(&live.topology, &wanted, "export.json").unwrap();
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), &imported);
    let loaded = desired::load(dir.path());
    let errors: Vec<_> = loaded.diagnostics.iter().filter(|d| d.is_error()).collect();
    assert!(errors.is_empty(), "{name}: {errors:#?}");
    assert_eq!(*loaded.topology, imported.topology, "{name}: files vs import");
    assert_eq!(
        without_external(loaded.topology.into_inner()),
        expected(&live.topology, vhosts, &imported.left_out),
        "{name}: files vs live"
    );
    imported.left_out.iter().map(|l| l.key.to_string()).collect()
}

#[test]
fn every_realworld_export_loads_back_equal_to_the_live_topology() {
    for path in realworld() {
        let left_out = round_trip(&path, &[]);
        let file = path.file_name().unwrap().to_string_lossy();
        let expected: &[&str] = match file.as_ref() {
            "10-rabbitmq-server-case9b-multivhost.json" => &[
                "queue \"amq.gen-7EZF7WjGIQFDoXexVF-e8w\" in vhost \"/\"",
                "queue \"amq.gen-xddEPq9wHSNZKQbPK8pi3A\" in vhost \"bunny_testbed\"",
            ],
            _ => &[],
        };
        assert_eq!(left_out, expected, "{file}");
    }
}

#[test]
fn an_export_with_real_world_quirks_loads_back_equal_to_the_live_topology() {
    let left_out = round_trip(&root().join(QUIRKS), &[]);
    assert_eq!(
        left_out,
        [
            "queue \"amq.gen-Fx1ServerNamedInRoot\" in vhost \"/\"",
            "queue \"amq.gen-Fx2ServerNamedInTestbed\" in vhost \"bunny_testbed\""
        ]
    );
}

#[test]
fn a_vhost_filter_imports_that_vhost_and_its_users() {
    let path = root().join(QUIRKS);
    round_trip(&path, &["bunny_testbed"]);
    round_trip(&path, &["/", "vhost3"]);
}

#[test]
fn a_4_x_export_with_every_kind_of_object_loads_back_equal() {
    let left_out = round_trip(&root().join("tests/definitions/4.x-cluster.json"), &[]);
    assert_eq!(left_out, ["queue \"amq.gen-Xz1\" in vhost \"/\""]);
}

#[test]
fn the_written_files_read_well() {
    let live = read(&root().join("tests/definitions/4.x-cluster.json"));
    let imported = import::import(&live.topology, &[], "4.x-cluster.json").unwrap();
    for f in &imported.files {
        insta::assert_snapshot!(format!("4.x-cluster-{}", f.name), f.text);
    }
}

#[test]
fn an_unknown_vhost_is_an_error_naming_the_known_ones() {
    let live = read(&root().join("tests/definitions/4.x-cluster.json"));
    let e = import::import(&live.topology, &["nope".into()], "x.json").unwrap_err();
    assert_eq!(e.message, "x.json has no vhost \"nope\"");
    assert!(e.help.unwrap().contains("\"orders\""));
}

#[test]
fn a_vhost_of_many_queues_is_split_and_loads_back_equal() {
    let live = warren::testing::large_topology(25, 4, 60);
    let known = import::Known { queues_per_file: 10, ..import::Known::default() };
    let imported = import::import_knowing(&live, &[], "generated", &known).unwrap();
    let names: Vec<&str> = imported.files.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["bench.toml", "bench.queues-1.toml", "bench.queues-2.toml", "bench.queues-3.toml"]);
    let queues: Vec<usize> = imported.files.iter().map(|f| f.counts.queues).collect();
    assert_eq!(queues, [0, 10, 10, 5]);
    let bindings: usize = imported.files.iter().map(|f| f.counts.bindings).sum();
    assert_eq!(bindings, 60);
    insta::assert_snapshot!("split-bench.toml", imported.files[0].text);
    insta::assert_snapshot!("split-bench.queues-3.toml", imported.files[3].text);
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), &imported);
    let loaded = desired::load(dir.path());
    // What the checks say of the topology, and nothing of its split.
    let whole = tempfile::tempdir().unwrap();
    write(whole.path(), &import::import(&live, &[], "generated").unwrap());
    let said = |d: &desired::Desired| d.diagnostics.iter().map(|d| d.message.clone()).collect::<Vec<_>>();
    assert_eq!(said(&loaded), said(&desired::load(whole.path())));
    assert!(!loaded.has_errors());
    assert_eq!(*loaded.topology, imported.topology);
    assert_eq!(without_external(loaded.topology.into_inner()), expected(&live, &[], &imported.left_out));
}

// --- through the binary ---

fn out_dir(tmp: &tempfile::TempDir, name: &str) -> PathBuf {
    tmp.path().join(name)
}

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn importing_each_realworld_file_gives_files_that_validate() {
    let tmp = tempfile::tempdir().unwrap();
    for path in std::iter::once(root().join(QUIRKS)).chain(realworld()) {
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let out = out_dir(&tmp, &stem);
        let run = warren(&["import", "--state", path_str(&path), "--out", path_str(&out)]);
        assert_eq!(run.code, 0, "{stem}:\n{}{}", run.stdout, run.stderr);
        assert!(run.stdout.contains("Wrote "), "{stem}: {}", run.stdout);
        assert!(run.stdout.contains("users.toml: "), "{stem}: {}", run.stdout);
        assert!(!run.stderr.contains("error"), "{stem}: {}", run.stderr);
        let check = warren(&["validate", path_str(&out)]);
        assert_eq!(check.code, 0, "{stem}:\n{}", check.stderr);
        assert!(check.stdout.contains("is valid"), "{stem}: {}", check.stdout);
    }
}

#[test]
fn import_prints_what_it_wrote_and_the_notes() {
    let tmp = tempfile::tempdir().unwrap();
    let out = out_dir(&tmp, "out");
    let run = warren(&["import", "--state", "tests/definitions/4.x-cluster.json", "--out", path_str(&out)]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let stdout = run.stdout.replace(path_str(&out), "OUT");
    insta::assert_snapshot!("cli-4.x-cluster", format!("{stdout}\n---\n{}", run.stderr));
    let mut files: Vec<String> =
        std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    files.sort();
    assert_eq!(files, ["default.toml", "orders.toml", "team_odd_name.toml", "users.toml"]);
}

#[test]
fn a_project_named_with_project_is_written_into_the_project_file() {
    let tmp = tempfile::tempdir().unwrap();
    let out = out_dir(&tmp, "out");
    let state = "tests/definitions/4.x-cluster.json";
    let run = warren(&["import", "--state", state, "--project", "shop", "--out", path_str(&out)]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("warren.toml: project \"shop\""), "{}", run.stdout);
    assert!(!run.stdout.contains("Name the project"), "{}", run.stdout);
    let file = std::fs::read_to_string(out.join("warren.toml")).unwrap();
    assert!(file.contains("name = \"shop\""), "{file}");
    assert_eq!(warren(&["validate", path_str(&out)]).code, 0);

    // A name the project file would refuse is refused before anything is written.
    let bad = out_dir(&tmp, "bad");
    let run = warren(&["import", "--state", state, "--project", "no spaces", "--out", path_str(&bad)]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stderr.contains("project name \"no spaces\""), "{}", run.stderr);
    assert!(!bad.exists());
}

#[test]
fn a_large_vhost_imports_into_several_files_and_plans_no_change() {
    let queues = import::QUEUES_PER_FILE * 2 + 1;
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("definitions.json");
    std::fs::write(&state, warren::testing::large_definitions(queues, 10, queues * 2)).unwrap();
    let out = out_dir(&tmp, "out");
    let run = warren(&["import", "--state", path_str(&state), "--out", path_str(&out)]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let wrote: Vec<&str> = run.stdout.lines().filter(|l| l.starts_with("Wrote ")).collect();
    let out_name = path_str(&out);
    assert_eq!(
        wrote,
        [
            format!("Wrote {out_name}/bench.toml: vhost \"bench\", 10 exchanges, 160 bindings, 4 policies"),
            format!("Wrote {out_name}/bench.queues-1.toml: vhost \"bench\", 1000 queues, 1920 bindings"),
            format!("Wrote {out_name}/bench.queues-2.toml: vhost \"bench\", 1000 queues, 1920 bindings"),
            format!("Wrote {out_name}/bench.queues-3.toml: vhost \"bench\", 1 queue, 2 bindings"),
        ],
        "{}",
        run.stdout
    );
    let plan = warren(&["plan", out_name, "--state", path_str(&state)]);
    assert_eq!(plan.code, 0, "{}{}", plan.stdout, plan.stderr);
    assert!(plan.stdout.contains("No changes. The broker matches the topology."), "{}", plan.stdout);
    // The further files of a split vhost are in the canonical layout too.
    let fmt = warren(&["fmt", "--check", out_name]);
    assert_eq!(fmt.code, 0, "{}{}", fmt.stdout, fmt.stderr);
}

#[test]
fn import_refuses_a_directory_with_topology_files_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = out_dir(&tmp, "out");
    std::fs::create_dir_all(out.join("team")).unwrap();
    std::fs::write(out.join("team/mine.toml"), "vhosts = [\"/\"]\n").unwrap();
    std::fs::write(out.join("notes.txt"), "").unwrap();
    let run = warren(&["import", "--state", "tests/definitions/4.x-cluster.json", "--out", path_str(&out)]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stderr.contains("already holds topology files"), "{}", run.stderr);
    assert!(run.stderr.contains("mine.toml"), "{}", run.stderr);
    assert!(!out.join("default.toml").exists());
    assert_eq!(run.stdout, "");
}

#[test]
fn import_into_a_directory_without_toml_files_is_fine() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("README.md"), "").unwrap();
    let run = warren(&[
        "-q",
        "import",
        "--state",
        "tests/definitions/4.x-cluster.json",
        "--out",
        path_str(tmp.path()),
        "--vhost",
        "orders",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stderr, "", "quiet shows no notes");
    assert!(tmp.path().join("orders.toml").exists());
    assert!(!tmp.path().join("default.toml").exists());
}

#[test]
fn a_vhost_filter_shows_only_the_notes_about_those_vhosts() {
    let tmp = tempfile::tempdir().unwrap();
    let state = QUIRKS;
    let all = warren(&["import", "--state", state, "--out", path_str(&out_dir(&tmp, "all"))]);
    assert!(all.stderr.contains("vhost \"/\": bindings from the broker's own exchanges"), "{}", all.stderr);
    let one = warren(&["import", "--state", state, "--vhost", "vhost3", "--out", path_str(&out_dir(&tmp, "one"))]);
    assert_eq!(one.code, 0, "{}", one.stderr);
    assert_eq!(one.stderr, "", "nothing in vhost3 calls for a note");
    // A vhost the export lacks is still told apart from those not asked for.
    let none = warren(&["import", "--state", state, "--vhost", "vhost4", "--out", path_str(&out_dir(&tmp, "none"))]);
    assert_eq!(none.code, 1);
    let help = none.stderr.lines().find(|l| l.contains("help:")).unwrap_or_default();
    assert!(help.contains("its vhosts are \"/\", \"bunny_testbed\""), "{}", none.stderr);
}

#[test]
fn a_single_vhost_export_needs_its_vhost_named() {
    let tmp = tempfile::tempdir().unwrap();
    let out = out_dir(&tmp, "out");
    let state = "tests/definitions/3.10-vhost-orders.json";
    let run = warren(&["import", "--state", state, "--out", path_str(&out)]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("export of a single vhost"), "{}", run.stderr);
    assert!(!out.exists());
    let run = warren(&["import", "--state", state, "--vhost", "orders", "--out", path_str(&out)]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let text = std::fs::read_to_string(out.join("orders.toml")).unwrap();
    assert!(text.contains("vhosts = [\"orders\"]"), "{text}");
    assert!(text.contains("[queues.\"orders.audit\"]\ntype = \"quorum\""), "{text}");
    assert!(!out.join("users.toml").exists());
}

#[test]
fn broken_input_fails_with_a_clear_message() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.json");
    std::fs::write(&bad, "{\n  \"queues\": [\n    {\"name\": \"q\", \"durable\": \"yes\"}\n  ]\n}\n").unwrap();
    let out = out_dir(&tmp, "out");
    let run = warren(&["import", "--state", path_str(&bad), "--out", path_str(&out)]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("warren::definitions"), "{}", run.stderr);
    assert!(run.stderr.contains("bad.json:3:"), "{}", run.stderr);
    assert!(run.stderr.contains("queues[0].durable"), "{}", run.stderr);

    let run = warren(&["import", "--state", "no/such.json", "--out", path_str(&out)]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("cannot read no/such.json"), "{}", run.stderr);

    let run = warren(&[
        "import",
        "--state",
        "tests/definitions/4.x-cluster.json",
        "--vhost",
        "nope",
        "--out",
        path_str(&out),
    ]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("has no vhost \"nope\""), "{}", run.stderr);
    assert!(!out.exists());
}

#[test]
fn an_empty_export_imports_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty.json");
    std::fs::write(&empty, "{}").unwrap();
    let out = out_dir(&tmp, "out");
    let run = warren(&["import", "--state", path_str(&empty), "--out", path_str(&out)]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("nothing to import"), "{}", run.stderr);
    assert!(!out.exists());
}

#[test]
fn quiet_prints_only_the_summary() {
    let tmp = tempfile::tempdir().unwrap();
    let run = warren(&["-q", "import", "--state", QUIRKS, "--out", path_str(tmp.path())]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stderr, "");
    assert_eq!(run.stdout.lines().count(), 1, "{}", run.stdout);
    assert!(run.stdout.starts_with("Imported "), "{}", run.stdout);
}

#[test]
fn out_is_required_and_state_is_not() {
    let run = warren(&["import", "--state", "tests/definitions/4.x-cluster.json"]);
    // A usage error is exit 1: 2 means "changes" in warren's contract.
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("--out <DIR>"), "{}", run.stderr);
    let help = warren(&["import", "--help"]);
    assert!(help.stdout.contains("for what the broker holds, or a definitions export"), "{}", help.stdout);
    assert!(
        help.stdout.contains("Read this definitions export instead of the broker (no broker needed)"),
        "{}",
        help.stdout
    );
}

#[test]
fn without_state_an_unreachable_broker_is_an_error_and_nothing_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let out = out_dir(&tmp, "out");
    // Port 1 on the loopback: nothing listens there.
    let url = "http://ops:s3cret-pw@127.0.0.1:1";
    let run = warren(&["--url", url, "import", "--out", path_str(&out)]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("warren::broker"), "{}", run.stderr);
    assert!(run.stderr.contains("cannot reach the RabbitMQ management API at http://127.0.0.1:1:"), "{}", run.stderr);
    assert!(!run.stderr.contains("s3cret-pw") && !run.stdout.contains("s3cret-pw"));
    assert_eq!(run.stdout, "");
    assert!(!out.exists());
}

// --- what RabbitMQ itself skips, or loads and cannot use ---

/// Imports `state` into a new directory: the run, and the directory.
fn import_state(state: &str) -> (Run, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let run = warren(&["import", "--state", state, "--out", path_str(&tmp.path().join("out"))]);
    (run, tmp)
}

/// The text of one written file.
fn written(tmp: &tempfile::TempDir, name: &str) -> String {
    std::fs::read_to_string(tmp.path().join("out").join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// `warren validate` of the written files passes.
fn assert_validates(tmp: &tempfile::TempDir) {
    let check = warren(&["validate", path_str(&tmp.path().join("out"))]);
    assert_eq!(check.code, 0, "{}{}", check.stdout, check.stderr);
}

#[test]
fn a_user_whose_hash_is_not_base64_is_skipped_with_its_permissions() {
    let state = "tests/definitions/bad-password-hash.json";
    let (run, tmp) = import_state(state);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let said = squash(&run.stderr);
    for expected in [
        format!("{state}:10:5: user \"legacy\" (`users[1]`) skipped: its `password_hash` is not base64"),
        format!(
            "{state}:20:5: permissions of \"legacy\" in vhost \"/\" (`permissions[1]`) skipped: user \"legacy\" is skipped"
        ),
        format!("{state}:21:5: permissions of \"legacy\" in vhost \"orders\" (`permissions[2]`) skipped"),
    ] {
        assert!(said.contains(&squash(&expected)), "{expected}:\n{}", run.stderr);
    }
    assert!(!run.stderr.contains("declared nowhere") && !run.stderr.contains("bug in warren"), "{}", run.stderr);
    let users = written(&tmp, "users.toml");
    assert!(!users.contains("[users.legacy]"), "{users}");
    assert!(users.contains("[users.app]"), "{users}");
    assert!(
        users.contains("# - user \"legacy\" (bad-password-hash.json:10:5): its `password_hash` is not base64"),
        "{users}"
    );
    let root_file = written(&tmp, "default.toml");
    assert!(!root_file.contains("[permissions.legacy]"), "{root_file}");
    assert!(
        root_file.contains("# - permissions of \"legacy\" in vhost \"/\" (bad-password-hash.json:20:5)"),
        "{root_file}"
    );
    let orders = written(&tmp, "orders.toml");
    assert!(
        orders.contains("# - permissions of \"legacy\" in vhost \"orders\" (bad-password-hash.json:21:5)"),
        "{orders}"
    );
    assert!(!orders.contains("[permissions.legacy]"), "{orders}");
    assert_validates(&tmp);
}

#[test]
fn items_without_a_vhost_are_skipped_at_their_line_and_column() {
    let state = "tests/definitions/items-without-vhost.json";
    let (run, tmp) = import_state(state);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let said = squash(&run.stderr);
    for (at, what) in [
        ("9:5", "permissions of \"app\" (`permissions[1]`)"),
        ("12:5", "vhost-limits parameter \"limits\" (`parameters[0]`)"),
        ("16:5", "policy \"cap\" (`policies[1]`)"),
        ("20:5", "queue \"stray\" (`queues[1]`)"),
        ("24:5", "exchange \"loose\" (`exchanges[1]`)"),
        ("28:5", "binding from \"events\" to queue \"stray\" (`bindings[1]`)"),
    ] {
        let expected = format!("{state}:{at}: {what} skipped: it names no vhost");
        assert!(said.contains(&squash(&expected)), "{expected}:\n{}", run.stderr);
    }
    let root_file = written(&tmp, "default.toml");
    for listed in [
        "# - queue \"stray\" (items-without-vhost.json:20:5): it names no vhost",
        "# - exchange \"loose\" (items-without-vhost.json:24:5)",
        "# - policy \"cap\" (items-without-vhost.json:16:5)",
    ] {
        assert!(root_file.contains(listed), "{listed}:\n{root_file}");
    }
    assert!(root_file.contains("[queues.work]") && !root_file.contains("stray]"), "{root_file}");
    assert!(root_file.contains("[policies.ttl]") && !root_file.contains("[policies.cap]"), "{root_file}");
    assert_validates(&tmp);
}

#[test]
fn a_pre_3_6_export_without_hashing_algorithm_is_md5() {
    let (run, tmp) = import_state("tests/definitions/3.5-md5-hashes.json");
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let users = written(&tmp, "users.toml");
    let md5 = "hashing_algorithm = \"rabbit_password_hashing_md5\"";
    assert!(users.contains(&format!("password_hash = \"AAECAwQFBgcICQoLDA0ODxAREhM=\"\n{md5}")), "{users}");
    // A 36-byte hash read as MD5 cannot be a password's: said, by name.
    let said = flat(&run.stderr);
    assert!(said.contains("\"rehashed\""), "{said}");
    assert!(!said.contains("\"old\""), "{said}");
    assert!(said.contains("36 bytes") && said.contains("rabbit_password_hashing_md5"), "{said}");
    assert!(said.contains("will fail") && said.contains("set the user's password again"), "{said}");
    assert_validates(&tmp);
}

#[test]
fn a_hash_length_that_does_not_fit_its_algorithm_is_a_warning_naming_the_user() {
    let (run, tmp) = import_state("tests/definitions/odd-hash-lengths.json");
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let said = flat(&run.stderr);
    for user in ["md5-era", "truncated"] {
        assert!(said.contains(&format!("\"{user}\"")), "{user}: {said}");
    }
    for user in ["sha512", "fine"] {
        assert!(!said.contains(&format!("\"{user}\"")), "{user}: {said}");
    }
    assert!(said.contains("will fail") && said.contains("set the user's password again"), "{said}");
    let users = written(&tmp, "users.toml");
    // A 3.6+ file without an algorithm means the broker's default: written as such.
    assert!(!users.contains("rabbit_password_hashing_md5"), "{users}");
    assert_validates(&tmp);
}

/// Objects of kinds (`src/model/kinds`) are written in the form the files
/// take, and read back as they were.
#[test]
fn topic_permissions_import_as_files_take_them_and_load_back_equal() {
    let text = r#"vhosts = ["/", "orders"]
[users.app]
password_env = "APP_PASSWORD"
[permissions.app]
configure = "^$"
write = ".*"
read = ".*"
[[topic_permissions]]
user = "app"
exchange = "amq.topic"
write = "^order\\."
read = "^order\\."
[[topic_permissions]]
user = "app"
exchange = "events \"v2\""
write = "^$"
read = "it's"
"#;
    let source = desired::load_texts(Path::new("."), vec![(PathBuf::from("t.toml"), text.to_string())]);
    assert!(!source.has_errors(), "{:?}", source.diagnostics);
    // Two topic permissions, and the permissions of app, each its kind's object.
    assert_eq!(source.topology.vhosts["orders"].objects.len(), 3);
    assert!(source.topology.vhosts["orders"].has_permission("app"));
    let imported = import::import(&source.topology, &[], "test").unwrap();
    let orders = imported.files.iter().find(|f| f.vhost.as_deref() == Some("orders")).unwrap();
    assert!(
        orders.text.contains(
            "\n[[topic_permissions]]\nuser = \"app\"\nexchange = \"amq.topic\"\nwrite = '^order\\.'\nread = '^order\\.'\n"
        ),
        "{}",
        orders.text
    );
    assert_eq!(orders.counts.kinds, [("topic permission", 2)]);
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), &imported);
    let loaded = desired::load(dir.path());
    assert!(!loaded.has_errors(), "{:?}", loaded.diagnostics);
    assert_eq!(loaded.topology, source.topology);
    let run = warren(&["validate", path_str(dir.path())]);
    assert!(run.stdout.contains(", 1 user, 4 topic permissions"), "{}", run.stdout);
    assert_eq!(imported.topology, *source.topology);
}

/// `import` proposes, commented out, a shape for queues that each come
/// with the same objects named after them; used as proposed (uncommented,
/// in place of the objects its stamps make), the files plan no change
/// against the export they came from.
#[test]
fn the_shapes_import_proposes_plan_no_change_once_used() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("imported");
    let state = "tests/definitions/repeated-shapes.json";
    let run = warren(&["import", "--state", state, "--out", path_str(&out)]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let text = std::fs::read_to_string(out.join("default.toml")).unwrap();
    let (files, proposal) = text.split_once("# Proposed shapes").expect("a proposal");
    assert!(proposal.contains("for_each = { name = [\"orders\", \"payments\", \"refunds\"] }"), "{proposal}");
    assert!(proposal.contains("{ name = \"case.rh.uac\", key = \"event.uac.update\" }"), "{proposal}");
    let check = warren(&["validate", path_str(&out)]);
    assert_eq!(check.code, 0, "the proposal is commented out:\n{}", check.stderr);

    let uncommented: Vec<&str> = proposal
        .lines()
        .skip_while(|l| !l.starts_with("# # Shape"))
        .map(|l| l.strip_prefix("# ").or_else(|| l.strip_prefix('#')).unwrap_or(l))
        .collect();
    let stamped = ["orders", "payments", "refunds", "case.rh.case", "case.rh.uac"];
    let made = |n: &str| stamped.iter().any(|s| n == *s || n.starts_with(&format!("{s}.")));
    let mut doc: toml_edit::DocumentMut = files.parse().unwrap();
    for table in ["queues", "exchanges"] {
        doc[table].as_table_mut().unwrap().retain(|name, _| !made(name));
    }
    let bindings = doc["bindings"].as_array_of_tables_mut().unwrap();
    bindings.retain(|b| !made(b.get("queue").and_then(|q| q.as_str()).unwrap_or_default()));
    std::fs::write(out.join("default.toml"), format!("{doc}\n{}\n", uncommented.join("\n"))).unwrap();
    let plan = warren(&["plan", path_str(&out), "--state", state]);
    assert_eq!(plan.code, 0, "{}{}", plan.stdout, plan.stderr);
    assert!(plan.stdout.contains("No changes"), "{}", plan.stdout);
    assert!(!plan.stdout.contains("Unmanaged"), "the stamps make every object they replace:\n{}", plan.stdout);
}
