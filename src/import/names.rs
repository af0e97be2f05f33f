//! File names for imported vhosts: a safe slug of the vhost name.
//!
//! The rule (also in the README): `/` is `default.toml`. Otherwise ASCII
//! letters, digits, `-`, `_` and `.` are kept and every other character
//! becomes `_`; a leading `.` becomes `_` too, and the slug is cut at 100
//! characters. When two vhosts get the same name (ignoring case, for macOS
//! and Windows), or a vhost would get `users.toml`, the later vhost in name
//! order gets `-2`, `-3`, ... before `.toml`.

use std::collections::BTreeSet;

/// The file that holds the users.
pub const USERS_FILE: &str = "users.toml";

/// The longest slug, well below any file system's limit on a name.
const MAX_SLUG: usize = 100;

/// Each vhost (in the given order) with the name of its file.
pub fn vhost_files<'a>(vhosts: impl IntoIterator<Item = &'a String>) -> Vec<(&'a String, String)> {
    let mut taken: BTreeSet<String> = BTreeSet::from([USERS_FILE.to_lowercase()]);
    let mut out = Vec::new();
    for v in vhosts {
        let stem = slug(v);
        let mut name = format!("{stem}.toml");
        let mut n = 2;
        while taken.contains(&name.to_lowercase()) {
            name = format!("{stem}-{n}.toml");
            n += 1;
        }
        taken.insert(name.to_lowercase());
        out.push((v, name));
    }
    out
}

/// The file name stem of a vhost.
pub fn slug(vhost: &str) -> String {
    if vhost == "/" {
        return "default".into();
    }
    let mut s: String = vhost
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '_' })
        .take(MAX_SLUG)
        .collect();
    if s.starts_with('.') {
        s.replace_range(0..1, "_");
    }
    if s.is_empty() { "vhost".into() } else { s }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs() {
        assert_eq!(slug("/"), "default");
        assert_eq!(slug("orders"), "orders");
        assert_eq!(slug("team/orders"), "team_orders");
        assert_eq!(slug("..hidden"), "_.hidden");
        assert_eq!(slug("ünï côde"), "_n__c_de");
        assert_eq!(slug(""), "vhost");
        assert_eq!(slug(&"a".repeat(300)).len(), 100);
    }

    #[test]
    fn collisions_get_numbers_in_name_order() {
        let vhosts: Vec<String> = ["/", "Default", "a/b", "a_b", "users"].map(String::from).to_vec();
        let files: Vec<String> = vhost_files(&vhosts).into_iter().map(|(_, f)| f).collect();
        assert_eq!(files, ["default.toml", "Default-2.toml", "a_b.toml", "a_b-2.toml", "users-2.toml"]);
    }
}
