//! Password hashes in RabbitMQ's own format, so that an exported user can log
//! in with the password that was in the environment at export time.
//!
//! `rabbit_password_hashing_sha256` stores `base64(salt ++ sha256(salt ++
//! password))` with a random 4-byte salt; the broker reads the salt back from
//! the first four bytes of the decoded hash when a user logs in.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use sha2::{Digest, Sha256};

use crate::model::{Password, Topology};

/// The algorithm [`hash`] implements, as the broker names it.
pub const SHA256: &str = "rabbit_password_hashing_sha256";

/// The bytes of a password hash (base64 of the salt and the digest), or
/// `None` if it is not base64: the broker refuses such a hash.
pub fn decode(hash: &str) -> Option<Vec<u8>> {
    STANDARD.decode(hash).ok()
}

/// A RabbitMQ SHA-256 password hash of `password` with this salt.
pub fn hash_with_salt(password: &str, salt: [u8; 4]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(salt);
    hasher.update(password.as_bytes());
    let mut bytes = salt.to_vec();
    bytes.extend_from_slice(&hasher.finalize());
    STANDARD.encode(bytes)
}

/// A RabbitMQ SHA-256 password hash of `password` with a fresh random salt
/// from the operating system.
pub fn hash(password: &str) -> Result<String, getrandom::Error> {
    let mut salt = [0u8; 4];
    getrandom::fill(&mut salt)?;
    Ok(hash_with_salt(password, salt))
}

/// Whether `password` is the one `hash` was made from (SHA-256 hashes;
/// other algorithms cannot be checked here and count as different).
pub fn verify(password: &str, hash: &str, algorithm: Option<&str>) -> bool {
    if algorithm.is_some_and(|a| a != SHA256) {
        return false;
    }
    let Ok(bytes) = STANDARD.decode(hash) else { return false };
    let Some(salt) = bytes.get(..4).and_then(|s| <[u8; 4]>::try_from(s).ok()) else { return false };
    hash_with_salt(password, salt) == hash
}

/// Why a user's password could not be read from its variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    Unset,
    Empty,
    NotUnicode,
    /// The operating system gave no random bytes for the salt.
    NoRandomness(String),
}

/// A user whose `password_env` gave no password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unresolved {
    pub user: String,
    pub variable: String,
    pub problem: Problem,
}

/// The topology with every `Password::Env` replaced by the SHA-256 hash of
/// the variable's value. `lookup` reads a variable (the process environment
/// in the CLI). Every user whose variable is unset, empty or not Unicode is
/// reported; the value itself never appears in an error.
pub fn resolve(
    topology: &Topology,
    lookup: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> Result<Topology, Vec<Unresolved>> {
    let mut resolved = topology.clone();
    let mut problems = Vec::new();
    for mut user in topology.users().into_values() {
        let Password::Env(variable) = &user.password else {
            continue;
        };
        let problem = match lookup(variable).map(|v| v.into_string()) {
            None => Problem::Unset,
            Some(Err(_)) => Problem::NotUnicode,
            Some(Ok(v)) if v.is_empty() => Problem::Empty,
            Some(Ok(v)) => match hash(&v) {
                Ok(hash) => {
                    user.password = Password::Hash { hash, algorithm: Some(SHA256.to_string()) };
                    resolved.set_user(&user);
                    continue;
                }
                Err(e) => Problem::NoRandomness(e.to_string()),
            },
        };
        problems.push(Unresolved { user: user.name.clone(), variable: variable.clone(), problem });
    }
    if problems.is_empty() { Ok(resolved) } else { Err(problems) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::User;

    /// Made by RabbitMQ 3.10.8: `PUT /api/users/hashprobe` with
    /// `{"password":"s3cret-Pässword"}`, then `GET /api/users/hashprobe`.
    const BROKER_HASH: &str = "vjH3RrYelb3XfGcR3QW1pCD6hz5S1Ff3K3pdLh+L4Kg++irc";
    const BROKER_PASSWORD: &str = "s3cret-Pässword";

    #[test]
    fn reproduces_a_hash_made_by_the_broker() {
        let decoded = STANDARD.decode(BROKER_HASH).unwrap();
        let salt: [u8; 4] = decoded[..4].try_into().unwrap();
        assert_eq!(hash_with_salt(BROKER_PASSWORD, salt), BROKER_HASH);
        assert_ne!(hash_with_salt("s3cret-Password", salt), BROKER_HASH);
    }

    #[test]
    fn fresh_hashes_differ_by_salt_and_verify() {
        let (a, b) = (hash("pw").unwrap(), hash("pw").unwrap());
        assert_ne!(a, b, "two salts of four random bytes collided");
        for h in [a, b] {
            let decoded = STANDARD.decode(&h).unwrap();
            assert_eq!(decoded.len(), 4 + 32);
            let salt: [u8; 4] = decoded[..4].try_into().unwrap();
            assert_eq!(hash_with_salt("pw", salt), h);
        }
    }

    fn with_env_user(var: &str) -> Topology {
        let mut t = Topology::default();
        t.set_user(&User {
            name: "app".into(),
            password: Password::Env(var.into()),
            tags: Default::default(),
            limits: None,
        });
        t
    }

    #[test]
    fn resolves_a_variable_to_a_sha256_hash() {
        let t = with_env_user("APP_PW");
        let r = resolve(&t, |v| (v == "APP_PW").then(|| "hunter2".into())).unwrap();
        let Password::Hash { hash, algorithm } = &r.user("app").unwrap().password else {
            panic!("not hashed: {:?}", r.user("app"));
        };
        assert_eq!(algorithm.as_deref(), Some(SHA256));
        let salt: [u8; 4] = STANDARD.decode(hash).unwrap()[..4].try_into().unwrap();
        assert_eq!(hash_with_salt("hunter2", salt), *hash);
    }

    #[test]
    fn reports_unset_and_empty_variables() {
        let t = with_env_user("APP_PW");
        let unset = resolve(&t, |_| None).unwrap_err();
        assert_eq!(unset, vec![Unresolved { user: "app".into(), variable: "APP_PW".into(), problem: Problem::Unset }]);
        let empty = resolve(&t, |_| Some("".into())).unwrap_err();
        assert_eq!(empty[0].problem, Problem::Empty);
    }
}
