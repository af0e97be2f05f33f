//! Reads a large file as two halves at once, on two threads. The second half
//! starts at a `[[bindings]]` header: bindings are most of a large topology,
//! and a run of them cut in two parses as the whole does. Anything else (a
//! syntax error, a table in both halves) gives `None`, and the caller reads
//! the file whole, with the diagnostics it always gave.

use super::decl::FileDecl;
use super::parse::parse_part;
use crate::diagnostic::Diagnostic;
use crate::source::FileId;

/// Smaller files are read whole: a thread would cost more than it saves.
const LARGE: usize = 512 * 1024;

const HEADER: &str = "[[bindings]]";

/// The top-level keys the second half may have: `vhosts` and `[vhost]`
/// belong to the start of the file.
const REST_KEYS: &[&str] =
    &["exchanges", "queues", "bindings", "policies", "operator_policies", "users", "permissions", "external"];

/// The declarations of `text`, read in two halves, when it can be cut.
pub fn parse(file: FileId, text: &str, diagnostics: &mut Vec<Diagnostic>) -> Option<FileDecl> {
    let at = cut(text)?;
    let (front, back) = text.split_at(at);
    let ((first, mut first_found), (rest, rest_found)) = std::thread::scope(|s| {
        let later = s.spawn(move || {
            let mut found = Vec::new();
            (parse_part(file, back, at, true, &mut found), found)
        });
        let mut found = Vec::new();
        let first = parse_part(file, front, 0, false, &mut found);
        ((first, found), later.join().expect("parsing does not panic"))
    });
    let ((mut decl, keys), (more, more_keys)) = (first?, rest?);
    // `[[bindings]]` goes on across the cut; any other table of the second
    // half must be new, else the halves would not say what the whole says.
    let new = |k: &String| REST_KEYS.contains(&k.as_str()) && (k == "bindings" || !keys.contains(k));
    if !keys.iter().any(|k| k == "bindings") || !more_keys.iter().all(new) {
        return None;
    }
    append(&mut decl, more);
    diagnostics.append(&mut first_found);
    diagnostics.extend(rest_found);
    Some(decl)
}

/// Adds what the second half declares, after what the first does.
fn append(decl: &mut FileDecl, more: FileDecl) {
    decl.exchanges.extend(more.exchanges);
    decl.queues.extend(more.queues);
    decl.bindings.extend(more.bindings);
    decl.policies.extend(more.policies);
    decl.operator_policies.extend(more.operator_policies);
    decl.users.extend(more.users);
    decl.permissions.extend(more.permissions);
    decl.external.exchanges.extend(more.external.exchanges);
    decl.external.queues.extend(more.external.queues);
    decl.failed.exchanges.extend(more.failed.exchanges);
    decl.failed.queues.extend(more.failed.queues);
}

/// Where the second half starts: a `[[bindings]]` line from the middle on,
/// with another before it. None for a small file. A multi-line string needs
/// no look: were the cut inside one, the first half would end in an
/// unterminated string, an error, and the file would be read whole.
fn cut(text: &str) -> Option<usize> {
    if text.len() < LARGE {
        return None;
    }
    let middle = (text.len() / 2..).find(|&i| text.is_char_boundary(i))?;
    let at = header_from(text, middle)?;
    header_before(text, at)?;
    Some(at)
}

/// Whether the header found at `at` is a line of its own.
fn is_header(text: &str, at: usize) -> bool {
    let line_start = at == 0 || text.as_bytes()[at - 1] == b'\n';
    let after = &text[at + HEADER.len()..];
    line_start && (after.starts_with('\n') || after.starts_with("\r\n"))
}

/// The start of the first line from `from` on that is exactly the header.
fn header_from(text: &str, from: usize) -> Option<usize> {
    let mut i = from;
    loop {
        let found = i + text[i..].find(HEADER)?;
        if is_header(text, found) {
            return Some(found);
        }
        i = found + HEADER.len();
    }
}

/// The start of the last header line before `end`, searched backwards: the
/// first half of a large file is long.
fn header_before(text: &str, end: usize) -> Option<usize> {
    let mut i = end;
    loop {
        let found = text[..i].rfind(HEADER)?;
        if is_header(text, found) {
            return Some(found);
        }
        i = found;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn big(bindings: usize) -> String {
        let mut t = String::from("vhosts = [\"/\"]\n\n[exchanges.x]\ntype = \"topic\"\n\n[queues.q]\n\n");
        for i in 0..bindings {
            t.push_str(&format!("[[bindings]]\nsource = \"x\"\nqueue = \"q\"\nrouting_key = \"k{i}\"\n\n"));
        }
        t
    }

    fn read(text: &str) -> (Option<FileDecl>, Vec<Diagnostic>) {
        let mut found = Vec::new();
        (parse(FileId(0), text, &mut found), found)
    }

    #[test]
    fn cuts_a_large_file_at_a_bindings_header() {
        let text = big(20_000);
        let at = cut(&text).expect("a cut");
        assert!(at >= text.len() / 2 && text[at..].starts_with("[[bindings]]\n"));
        let (decl, found) = read(&text);
        let decl = decl.expect("read in halves");
        assert!(found.is_empty(), "{found:?}");
        assert_eq!(decl.bindings.len(), 20_000);
        let mut whole_found = Vec::new();
        let (whole, _) = parse_part(FileId(0), &text, 0, false, &mut whole_found).expect("read whole");
        // The same declarations, at the same places in the whole file.
        assert_eq!(format!("{decl:?}"), format!("{whole:?}"));
    }

    #[test]
    fn small_files_are_read_whole() {
        assert_eq!(cut(&big(10)), None);
    }

    #[test]
    fn a_cut_inside_a_multi_line_string_reads_the_file_whole() {
        let mut text = String::from("vhosts = [\"/\"]\n[[bindings]]\nsource = \"x\"\nqueue = \"q\"\n");
        text.push_str("[users.u]\npassword_env = \"P\"\nhashing_algorithm = \"\"\"\n");
        for _ in 0..60_000 {
            text.push_str("[[bindings]]\n");
        }
        text.push_str("\"\"\"\n");
        let at = cut(&text).expect("a cut");
        assert!(text[..at].contains("\"\"\"") && text[at..].contains("\"\"\""), "the cut is inside the string");
        assert!(read(&text).0.is_none());
    }

    #[test]
    fn multi_line_strings_away_from_the_cut_read_as_the_whole_does() {
        let mut text = big(20_000);
        text.push_str("[policies.p]\npattern = '''x'''\ndefinition = { max-length = 1 }\n");
        let (decl, found) = read(&text);
        let decl = decl.expect("read in halves");
        let mut whole_found = Vec::new();
        let (whole, _) = parse_part(FileId(0), &text, 0, false, &mut whole_found).expect("read whole");
        assert_eq!(format!("{decl:?} {found:?}"), format!("{whole:?} {whole_found:?}"));
    }

    #[test]
    fn a_table_in_both_halves_is_read_whole() {
        let mut text = big(20_000);
        text.push_str("[queues.r]\n");
        assert!(read(&text).0.is_none());
    }

    #[test]
    fn errors_in_either_half_are_read_whole() {
        let mut text = big(20_000);
        text.push_str("[[bindings]]\nsource = \n");
        assert!(read(&text).0.is_none());
    }
}
