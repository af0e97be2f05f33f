//! File names for imported vhosts: a safe slug of the vhost name.
//!
//! The rule (also in docs/guide.md, "Import"): `/` is `default.toml`. Otherwise ASCII
//! letters, digits, `-`, `_` and `.` are kept and every other character
//! becomes `_`; a leading `.` becomes `_` too, and the slug is cut at 100
//! characters. A vhost whose queues are split over further files (see
//! [`super::QUEUES_PER_FILE`]) gets `STEM.queues-1.toml`, `-2`, ... for
//! them, numbered with as many digits as the last one needs, so that they
//! sort in order. When two files get the same name (ignoring case, for macOS
//! and Windows), or a vhost would get `users.toml`, the later one in vhost
//! name order gets `-2`, `-3`, ... before `.toml`.

use std::collections::BTreeSet;

/// The file that holds the users.
pub const USERS_FILE: &str = "users.toml";

/// The longest slug, well below any file system's limit on a name.
const MAX_SLUG: usize = 100;

/// Each vhost (in the given order) with the names of its files: its own,
/// then one for each of its `parts` of queues (none for a vhost in one file).
pub(super) fn vhost_files<'a>(vhosts: impl IntoIterator<Item = (&'a String, usize)>) -> Vec<(&'a String, Vec<String>)> {
    let mut taken: BTreeSet<String> = BTreeSet::from([USERS_FILE.to_lowercase()]);
    let mut out = Vec::new();
    for (v, parts) in vhosts {
        let own = free(&mut taken, &slug(v));
        // The parts are named after the file they belong to, `-2` and all.
        let stem = own.strip_suffix(".toml").unwrap_or(&own).to_string();
        let width = parts.to_string().len();
        let mut names = vec![own];
        names.extend((1..=parts).map(|i| free(&mut taken, &format!("{stem}.queues-{i:0width$}"))));
        out.push((v, names));
    }
    out
}

/// `stem.toml`, or `stem-2.toml`, `-3`, ... if taken; now taken.
fn free(taken: &mut BTreeSet<String>, stem: &str) -> String {
    let mut name = format!("{stem}.toml");
    let mut n = 2;
    while taken.contains(&name.to_lowercase()) {
        name = format!("{stem}-{n}.toml");
        n += 1;
    }
    taken.insert(name.to_lowercase());
    name
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
        let files: Vec<String> = vhost_files(vhosts.iter().map(|v| (v, 0))).into_iter().flat_map(|(_, f)| f).collect();
        assert_eq!(files, ["default.toml", "Default-2.toml", "a_b.toml", "a_b-2.toml", "users-2.toml"]);
    }

    #[test]
    fn parts_are_named_after_their_vhost_file_and_sort_in_order() {
        let vhosts: Vec<String> = ["a/b", "a_b", "a_b.queues-2", "c"].map(String::from).to_vec();
        let files: Vec<Vec<String>> =
            vhost_files(vhosts.iter().zip([2, 10, 0, 1])).into_iter().map(|(_, f)| f).collect();
        assert_eq!(files[0], ["a_b.toml", "a_b.queues-1.toml", "a_b.queues-2.toml"]);
        assert_eq!(files[1][..3], ["a_b-2.toml", "a_b-2.queues-01.toml", "a_b-2.queues-02.toml"]);
        assert_eq!(files[1][10], "a_b-2.queues-10.toml");
        // The vhost named like a part of another comes later in name order.
        assert_eq!(files[2], ["a_b.queues-2-2.toml"]);
        assert_eq!(files[3], ["c.toml", "c.queues-1.toml"]);
    }
}
