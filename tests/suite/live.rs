//! The repository's own export with real-world quirks, and the files of the
//! optional real-world corpus (`WARREN_REALWORLD_DIR`), read into the model:
//! no errors, and a note for each quirk they have.

use crate::common::{QUIRKS, realworld, root};
use warren::live::from_definitions;

/// The quirks each file is known to have, as words its notes must contain.
fn expected_quirks(file: &str) -> &'static [&'static str] {
    match file {
        "01-sda-biobanklab.json" => &["plaintext `password`"],
        "02-yoko-broker-service.json" => &[
            "bindings to queues that the file does not declare",
            "bindings from exchanges that the file does not declare",
        ],
        "07-census-rm-ons.json" => &["no `vhosts` list", "bindings to queues that the file does not declare"],
        "10-rabbitmq-server-case9b-multivhost.json" | "3.x-multivhost-quirks.json" => {
            &["bindings from the broker's own exchanges"]
        }
        _ => &[],
    }
}

#[test]
fn every_realworld_file_reads_with_a_note_for_each_quirk() {
    for path in std::iter::once(root().join(QUIRKS)).chain(realworld()) {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let json = std::fs::read_to_string(&path).unwrap();
        let live = from_definitions(&json, &name).unwrap_or_else(|d| panic!("{name}: {}", d.message));
        let notes: Vec<String> = live
            .notes
            .iter()
            .map(|d| {
                assert_eq!(d.code, "live-quirk");
                assert!(!d.is_error() && d.location.is_none());
                format!("warning[{}]: {}\n  help: {}", d.code, d.message, d.help.as_deref().unwrap_or(""))
            })
            .collect();
        for quirk in expected_quirks(&name) {
            assert!(
                notes.iter().any(|n| n.contains(quirk)),
                "{name}: no note mentions {quirk:?}:\n{}",
                notes.join("\n")
            );
        }
        let mut summary = Vec::new();
        for (v, vh) in &live.topology.vhosts {
            summary.push(format!(
                "vhost {v:?}: {} exchanges, {} queues, {} bindings, {} policies, {} operator policies, {} permissions, settings {:?}",
                vh.exchanges.len(),
                vh.queues.len(),
                vh.bindings.len(),
                vh.policies().len(),
                warren::model::kinds::operator_policies::typed(&vh.objects).len(),
                vh.permissions().len(),
                vh.settings,
            ));
        }
        summary.push(format!("users: {:?}", live.topology.users().keys()));
        insta::assert_snapshot!(
            format!("realworld-{}", name.trim_end_matches(".json")),
            format!("{}\n\n{}", summary.join("\n"), notes.join("\n"))
        );
    }
}
