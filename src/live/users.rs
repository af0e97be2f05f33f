//! Users as the live side sees them: password hash and algorithm, tags,
//! limits (set only when the user has some).

use std::collections::BTreeMap;

use super::definitions::UserDef;
use super::notes::Notes;
use crate::model::kinds::users;
use crate::model::{Table, User, Value};

/// RabbitMQ's default `password_hashing_module`. A hash made with it is read
/// with `algorithm: None`, as the model keeps the algorithm only when it is
/// not the default.
pub const DEFAULT_HASHING_ALGORITHM: &str = users::DEFAULT_ALGORITHM;

/// The algorithms RabbitMQ ships, with the length of their digest in bytes.
const ALGORITHMS: [(&str, usize); 3] =
    [("rabbit_password_hashing_sha256", 32), ("rabbit_password_hashing_sha512", 64), (MD5, 16)];

const MD5: &str = "rabbit_password_hashing_md5";

/// The salt RabbitMQ puts before the digest, in bytes.
const SALT: usize = 4;

/// The versions whose exports name no algorithm and hashed with MD5.
/// RabbitMQ's import reads a hash without `hashing_algorithm` in a file of
/// these as MD5, and in any other file as made with its default: 3.6.0 brought
/// SHA-256, and exports name the algorithm from 3.6.1 on.
const MD5_VERSIONS: [&str; 6] = ["3.0.", "3.1.", "3.2.", "3.3.", "3.4.", "3.5."];

/// The algorithm of a hash without `hashing_algorithm` in a file of RabbitMQ
/// `version` (its `rabbitmq_version`, else its `rabbit_version`).
pub(super) fn default_algorithm(version: Option<&str>) -> &'static str {
    match version {
        Some(v) if MD5_VERSIONS.iter().any(|p| v.starts_with(p)) => MD5,
        _ => DEFAULT_HASHING_ALGORITHM,
    }
}

/// The user as the model holds it: the item read by the users' kind
/// (`Kind::read`), then what the kind cannot know from the item alone
/// corrected and noted. A hash without `hashing_algorithm` was made with
/// `default_algorithm` (MD5 in a file of RabbitMQ 3.0 to 3.5), odd hashes
/// and a plaintext `password` are noted, and limits that are not numbers
/// left out. `Err` says why RabbitMQ could not use the user either: its
/// hash is not base64.
pub(super) fn user(def: &UserDef, default_algorithm: &str, notes: &mut Notes) -> Result<User, String> {
    if def.password.is_some() {
        plaintext(def, notes);
    }
    let item = serde_json::to_value(def).map_err(|e| e.to_string())?;
    let mut object = (users::KIND.read)(&item).unwrap_or_else(|| Err("it is not a user".into()))?;
    if let Some(Value::Table(p)) = object.body.get_mut("password") {
        password(p, def, default_algorithm, notes)?;
    }
    let mut limits = BTreeMap::new();
    if let Some(l) = &def.limits {
        super::vhosts::add_limits(&mut limits, l, &format!("user \"{}\"", def.name), notes);
    }
    object.body.remove("limits");
    if !limits.is_empty() {
        let limits = limits.into_iter().map(|(k, v)| (k, Value::Int(v))).collect();
        object.body.insert("limits".into(), Value::Table(limits));
    }
    users::user(&def.name, &object.body).ok_or_else(|| "it is not a user".into())
}

/// The kind's password of a hash, `{ hash, algorithm }`: the algorithm a
/// hash without one was made with, and what is odd about the hash noted.
fn password(p: &mut Table, def: &UserDef, default_algorithm: &str, notes: &mut Notes) -> Result<(), String> {
    let name = &def.name;
    let hash = p.get("hash").and_then(Value::as_str).unwrap_or_default();
    let Some(length) = crate::password::decode(hash).map(|b| b.len()) else {
        return Err("its `password_hash` is not base64, so RabbitMQ cannot use it either".into());
    };
    let given = def.hashing_algorithm.as_deref();
    let algorithm = given.unwrap_or(default_algorithm);
    match ALGORITHMS.iter().find(|(n, _)| *n == algorithm) {
        Some((_, digest)) if length != SALT + digest => {
            wrong_length(notes, name, length, algorithm, SALT + digest, given.is_none());
        }
        Some(_) => {}
        None => notes.add(
            format!("users whose `hashing_algorithm` \"{algorithm}\" RabbitMQ does not ship (kept as is; `warren import` leaves them out)"),
            format!("RabbitMQ's algorithms are {}; a plugin's algorithm works only where the plugin is enabled", known_algorithms()),
            name,
        ),
    }
    if algorithm != DEFAULT_HASHING_ALGORITHM {
        p.insert("algorithm".into(), Value::String(algorithm.to_string()));
    }
    Ok(())
}

/// Notes a user whose hash is `length` bytes where `algorithm` makes
/// `expected`: the broker keeps it, and no password matches it.
fn wrong_length(notes: &mut Notes, name: &str, length: usize, algorithm: &str, expected: usize, assumed: bool) {
    let why = match (assumed, algorithm) {
        (false, _) => "",
        (true, MD5) => " (no `hashing_algorithm`: in a file of RabbitMQ 3.0 to 3.5, that means MD5)",
        (true, _) => " (no `hashing_algorithm`: in a file of RabbitMQ 3.6 or later, that means the broker's default)",
    };
    let fits = ALGORITHMS.iter().find(|(_, digest)| length == SALT + digest).map(|(n, _)| *n);
    let help = match fits {
        Some(other) => format!(
            "set the user's password again (`rabbitmqctl change_password NAME PASSWORD`, or a `password_env` in the topology files); or, if the hash was made with {other}, give the user `hashing_algorithm = \"{other}\"`"
        ),
        None => "set the user's password again (`rabbitmqctl change_password NAME PASSWORD`, or a `password_env` in the topology files)".to_string(),
    };
    notes.add(
        format!(
            "users whose password hash is {length} bytes, but {algorithm} hashes are {expected}{why}: logging in with their password will fail"
        ),
        help,
        name,
    );
}

/// Notes a plaintext `password`, which warren never keeps.
fn plaintext(def: &UserDef, notes: &mut Notes) {
    let (what, help) = match def.password_hash.as_deref() {
        Some(h) if !h.is_empty() => {
            ("ignored: the `password_hash` is used", "remove the plaintext `password` from the export")
        }
        _ => (
            "read as having no password: warren never keeps a plaintext password",
            "give the user a `password_env` (or a `password_hash`) in the topology files",
        ),
    };
    notes.add(format!("users with a plaintext `password` ({what})"), help, &def.name);
}

fn known_algorithms() -> String {
    ALGORITHMS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::model::Password;

    /// The user of a file of RabbitMQ `version`, and the notes.
    fn read_of(version: Option<&str>, json: &str) -> (Result<User, String>, Vec<String>) {
        let def: UserDef = serde_json::from_str(json).unwrap();
        let mut notes = Notes::default();
        let u = user(&def, default_algorithm(version), &mut notes);
        (u, notes.into_diagnostics().into_iter().map(|d| d.message).collect())
    }

    fn read(json: &str) -> (User, Vec<String>) {
        let (u, notes) = read_of(Some("3.12.13"), json);
        (u.unwrap(), notes)
    }

    const SHA256: &str = "ljAfhB1nIJOvSDForEpdiyGk3/fjTsHjP5loG6Bsot+hXmrC";

    #[test]
    fn a_default_hash_has_no_algorithm() {
        let (u, notes) = read(&format!(
            r#"{{"name": "a", "password_hash": "{SHA256}", "hashing_algorithm": "rabbit_password_hashing_sha256", "tags": ["administrator"], "limits": {{}}}}"#
        ));
        assert_eq!(u.password, Password::Hash { hash: SHA256.into(), algorithm: None });
        assert_eq!(u.tags, BTreeSet::from(["administrator".to_string()]));
        assert!(notes.is_empty(), "{notes:?}");
    }

    #[test]
    fn another_algorithm_is_kept() {
        let md5 = "AAAAAAAAAAAAAAAAAAAAAAAAAAA="; // 20 bytes: salt and an MD5 digest
        let (u, notes) = read(&format!(
            r#"{{"name": "a", "password_hash": "{md5}", "hashing_algorithm": "rabbit_password_hashing_md5"}}"#
        ));
        assert_eq!(
            u.password,
            Password::Hash { hash: md5.into(), algorithm: Some("rabbit_password_hashing_md5".into()) }
        );
        assert!(notes.is_empty(), "{notes:?}");
    }

    #[test]
    fn an_empty_hash_is_no_password() {
        let (u, notes) = read(r#"{"name": "a", "password_hash": "", "tags": ""}"#);
        assert_eq!(u.password, Password::None);
        assert!(u.tags.is_empty());
        assert!(notes.is_empty());
    }

    #[test]
    fn comma_separated_tags_of_old_versions() {
        let (u, _) = read(r#"{"name": "a", "tags": "administrator, monitoring,,"}"#);
        assert_eq!(u.tags.len(), 2);
        assert!(u.tags.contains("monitoring"));
    }

    #[test]
    fn a_plaintext_password_is_never_kept() {
        let (u, notes) = read(r#"{"name": "a", "password": "s3cret", "tags": "administrator"}"#);
        assert_eq!(u.password, Password::None);
        assert!(notes[0].contains("plaintext"), "{notes:?}");
        assert!(!notes[0].contains("s3cret"));
    }

    #[test]
    fn a_hash_that_is_not_base64_is_unusable() {
        let (u, notes) = read_of(
            None,
            r#"{"name": "a", "password_hash": "not base64!", "hashing_algorithm": "rabbit_password_hashing_sha256"}"#,
        );
        assert!(u.unwrap_err().contains("not base64"));
        assert!(notes.is_empty(), "{notes:?}");
    }

    #[test]
    fn unknown_algorithms_are_noted() {
        let (u, notes) = read(&format!(
            r#"{{"name": "a", "password_hash": "{SHA256}", "hashing_algorithm": "rabbit_password_hashing_bcrypt"}}"#
        ));
        assert_eq!(
            u.password,
            Password::Hash { hash: SHA256.into(), algorithm: Some("rabbit_password_hashing_bcrypt".into()) }
        );
        assert!(notes[0].contains("\"rabbit_password_hashing_bcrypt\""), "{notes:?}");
    }

    #[test]
    fn a_hash_of_the_wrong_length_for_its_algorithm_is_noted() {
        let (_, notes) = read(&format!(
            r#"{{"name": "a", "password_hash": "{SHA256}", "hashing_algorithm": "rabbit_password_hashing_sha512"}}"#
        ));
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].starts_with("users whose password hash is 36 bytes, but rabbit_password_hashing_sha512 hashes are 68: logging in with their password will fail"), "{notes:?}");
        assert!(notes[0].ends_with(": \"a\""), "{notes:?}");
        let (_, notes) = read(r#"{"name": "b", "password_hash": "abcd"}"#);
        assert!(notes[0].contains("3 bytes, but rabbit_password_hashing_sha256 hashes are 36"), "{notes:?}");
    }

    #[test]
    fn without_an_algorithm_a_file_before_3_6_means_md5() {
        let json = format!(r#"{{"name": "a", "password_hash": "{MD5_HASH}"}}"#);
        for version in ["3.5.7", "3.0.0", "3.3.5"] {
            let (u, notes) = read_of(Some(version), &json);
            assert_eq!(u.unwrap().password, Password::Hash { hash: MD5_HASH.into(), algorithm: Some(MD5.into()) });
            assert!(notes.is_empty(), "{version}: {notes:?}");
        }
        // 3.6.0 brought SHA-256; older, newer and unknown versions mean the default.
        for version in [Some("3.6.0"), Some("3.6.16"), Some("2.8.7"), Some("3.10.8"), Some("4.1.0"), None] {
            let (u, notes) = read_of(version, &json);
            assert_eq!(u.unwrap().password, Password::Hash { hash: MD5_HASH.into(), algorithm: None }, "{version:?}");
            assert!(notes[0].contains("20 bytes, but rabbit_password_hashing_sha256 hashes are 36"), "{notes:?}");
            assert!(notes[0].contains("will fail"), "{notes:?}");
        }
        let (_, notes) = read_of(Some("3.5.7"), &format!(r#"{{"name": "a", "password_hash": "{SHA256}"}}"#));
        assert!(notes[0].contains("36 bytes, but rabbit_password_hashing_md5 hashes are 20"), "{notes:?}");
        assert!(notes[0].contains("RabbitMQ 3.0 to 3.5"), "{notes:?}");
    }

    /// A salt and an MD5 digest: 20 bytes.
    const MD5_HASH: &str = "AAECAwQFBgcICQoLDA0ODxAREhM=";
}
