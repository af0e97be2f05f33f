//! Users as the live side sees them: password hash and algorithm, tags.

use std::collections::BTreeSet;

use super::definitions::{Tags, UserDef};
use super::notes::Notes;
use crate::model::{Password, User};

/// RabbitMQ's default `password_hashing_module`. A hash made with it is read
/// with `algorithm: None`, as the model keeps the algorithm only when it is
/// not the default.
pub const DEFAULT_HASHING_ALGORITHM: &str = "rabbit_password_hashing_sha256";

/// The algorithms RabbitMQ ships, with the length of their digest in bytes.
const ALGORITHMS: [(&str, usize); 3] = [
    ("rabbit_password_hashing_sha256", 32),
    ("rabbit_password_hashing_sha512", 64),
    ("rabbit_password_hashing_md5", 16),
];

/// The salt RabbitMQ puts before the digest, in bytes.
const SALT: usize = 4;

/// The user as the model holds it; odd passwords are noted. `Err` says why
/// RabbitMQ could not use the user either: its hash is not base64.
pub fn user(def: &UserDef, notes: &mut Notes) -> Result<User, String> {
    let password = password(def, notes)?;
    Ok(User { name: def.name.clone(), password, tags: tags(def.tags.as_ref()) })
}

fn password(def: &UserDef, notes: &mut Notes) -> Result<Password, String> {
    let name = &def.name;
    if def.password.is_some() {
        let (what, help) = match def.password_hash.as_deref() {
            Some(h) if !h.is_empty() => {
                ("ignored: the `password_hash` is used", "remove the plaintext `password` from the export")
            }
            _ => (
                "read as having no password: warren never keeps a plaintext password",
                "give the user a `password_env` (or a `password_hash`) in the topology files",
            ),
        };
        notes.add(format!("users with a plaintext `password` ({what})"), help, name);
    }
    let hash = match def.password_hash.as_deref() {
        None | Some("") => return Ok(Password::None),
        Some(h) => h.to_string(),
    };
    let Some(length) = crate::password::decode(&hash).map(|b| b.len()) else {
        return Err("its `password_hash` is not base64, so RabbitMQ cannot use it either".into());
    };
    let algorithm = def.hashing_algorithm.clone();
    match algorithm.as_deref() {
        Some(a) => match ALGORITHMS.iter().find(|(n, _)| *n == a) {
            Some((_, digest)) => {
                if length != SALT + digest {
                    notes.add(
                        "users whose password hash is not a salted hash of its `hashing_algorithm` (they may be unable to log in with a password)",
                        "RabbitMQ hashes are base64 of a 4-byte salt and the digest; export the user again, or set a new password",
                        name,
                    );
                }
            }
            None => notes.add(
                format!("users whose `hashing_algorithm` \"{a}\" RabbitMQ does not ship (kept as is; `warren import` leaves them out)"),
                format!("RabbitMQ's algorithms are {}; a plugin's algorithm works only where the plugin is enabled", known_algorithms()),
                name,
            ),
        },
        None => {
            let fits = ALGORITHMS.iter().any(|(_, digest)| length == SALT + digest);
            if !fits {
                notes.add(
                    "users whose password hash is no salted hash RabbitMQ makes (they may be unable to log in with a password)",
                    "RabbitMQ hashes are base64 of a 4-byte salt and the digest; export the user again, or set a new password",
                    name,
                );
            }
        }
    }
    Ok(Password::Hash { hash, algorithm: algorithm.filter(|a| a != DEFAULT_HASHING_ALGORITHM) })
}

fn known_algorithms() -> String {
    ALGORITHMS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
}

/// Tags as a set; a string is split at commas, as RabbitMQ does.
fn tags(tags: Option<&Tags>) -> BTreeSet<String> {
    let items: Vec<&str> = match tags {
        None => Vec::new(),
        Some(Tags::List(l)) => l.iter().map(String::as_str).collect(),
        Some(Tags::Text(s)) => s.split(',').collect(),
    };
    items.into_iter().map(str::trim).filter(|t| !t.is_empty()).map(str::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(json: &str) -> (User, Vec<String>) {
        let def: UserDef = serde_json::from_str(json).unwrap();
        let mut notes = Notes::default();
        let u = user(&def, &mut notes).unwrap();
        (u, notes.into_diagnostics().into_iter().map(|d| d.message).collect())
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
        let def: UserDef = serde_json::from_str(
            r#"{"name": "a", "password_hash": "not base64!", "hashing_algorithm": "rabbit_password_hashing_sha256"}"#,
        )
        .unwrap();
        let mut notes = Notes::default();
        assert!(user(&def, &mut notes).unwrap_err().contains("not base64"));
        assert!(notes.into_diagnostics().is_empty());
    }

    #[test]
    fn odd_hashes_and_unknown_algorithms_are_noted() {
        let (_, notes) =
            read(r#"{"name": "a", "password_hash": "AAAA", "hashing_algorithm": "rabbit_password_hashing_sha256"}"#);
        assert!(notes[0].contains("not a salted hash"), "{notes:?}");
        let (u, notes) = read(&format!(
            r#"{{"name": "a", "password_hash": "{SHA256}", "hashing_algorithm": "rabbit_password_hashing_bcrypt"}}"#
        ));
        assert_eq!(
            u.password,
            Password::Hash { hash: SHA256.into(), algorithm: Some("rabbit_password_hashing_bcrypt".into()) }
        );
        assert!(notes[0].contains("\"rabbit_password_hashing_bcrypt\""), "{notes:?}");
        let (_, notes) = read(r#"{"name": "a", "password_hash": "abcd"}"#);
        assert!(notes[0].contains("no salted hash"), "{notes:?}");
    }
}
