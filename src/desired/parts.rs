//! Reads a large file in parts at once, on threads of their own. Each part
//! after the first starts at a `[[bindings]]` header: bindings are most of a
//! large topology, and a run of them cut in parts parses as the whole does.
//! Anything else (a syntax error, a table in two parts) gives `None`, and the
//! caller reads the file whole, with the diagnostics it always gave.

use super::decl::FileDecl;
use super::parse::parse_part;
use crate::diagnostic::Diagnostic;
use crate::source::FileId;

/// Smaller files are read whole: a thread would cost more than it saves.
const LARGE: usize = 512 * 1024;

/// More parts than the two cores a plan often has: the parts and the
/// export's reading then share them evenly.
const PARTS: usize = 3;

const HEADER: &str = "[[bindings]]";

/// The top-level keys a later part may have: `vhosts` and `[vhost]` belong
/// to the start of the file.
const REST_KEYS: &[&str] =
    &["exchanges", "queues", "bindings", "policies", "operator_policies", "users", "permissions", "external"];

/// The declarations of `text`, read in parts, when it can be cut.
pub fn parse(file: FileId, text: &str, diagnostics: &mut Vec<Diagnostic>) -> Option<FileDecl> {
    let cuts = cuts(text)?;
    let ends: Vec<usize> = cuts.iter().copied().chain([text.len()]).collect();
    let parts: Vec<_> = std::thread::scope(|s| {
        let later: Vec<_> = (cuts.iter().zip(&ends[1..]))
            .map(|(&start, &end)| {
                s.spawn(move || {
                    let mut found = Vec::new();
                    (parse_part(file, &text[start..end], start, true, &mut found), found)
                })
            })
            .collect();
        let mut found = Vec::new();
        let first = (parse_part(file, &text[..ends[0]], 0, false, &mut found), found);
        std::iter::once(first).chain(later.into_iter().map(|p| p.join().expect("parsing does not panic"))).collect()
    });
    let mut parts = parts.into_iter();
    let (first, mut found) = parts.next()?;
    let (mut decl, mut keys) = first?;
    if !keys.iter().any(|k| k == "bindings") {
        return None;
    }
    for (part, part_found) in parts {
        let (more, more_keys) = part?;
        // `[[bindings]]` goes on across a cut; any other table of a later
        // part must be new, else the parts would not say what the whole says.
        let new = |k: &String| REST_KEYS.contains(&k.as_str()) && (k == "bindings" || !keys.contains(k));
        if !more_keys.iter().all(new) {
            return None;
        }
        keys.extend(more_keys);
        append(&mut decl, more);
        found.extend(part_found);
    }
    diagnostics.append(&mut found);
    Some(decl)
}

/// Adds what a later part declares, after what the earlier ones do.
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
    decl.failed.users.extend(more.failed.users);
}

/// Where the parts after the first start: at `[[bindings]]` lines from each
/// `PARTS`th of the file on, with another before the first. None for a
/// small file. A multi-line string needs no look: were a cut inside one, the
/// part before would end in an unterminated string, an error, and the file
/// would be read whole.
fn cuts(text: &str) -> Option<Vec<usize>> {
    if text.len() < LARGE {
        return None;
    }
    let mut cuts: Vec<usize> = Vec::new();
    for i in 1..PARTS {
        let share = (text.len() * i / PARTS..).find(|&at| text.is_char_boundary(at))?;
        let from = cuts.last().map_or(share, |&last| share.max(last + HEADER.len()));
        match header_from(text, from) {
            Some(at) => cuts.push(at),
            None => break,
        }
    }
    header_before(text, *cuts.first()?)?;
    Some(cuts)
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
/// first part of a large file is long.
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
    fn cuts_a_large_file_in_parts_at_bindings_headers() {
        let text = big(20_000);
        let cuts = cuts(&text).expect("cuts");
        assert_eq!(cuts.len(), PARTS - 1);
        for (i, &at) in cuts.iter().enumerate() {
            assert!(at >= text.len() * (i + 1) / PARTS && text[at..].starts_with("[[bindings]]\n"), "{cuts:?}");
        }
        let (decl, found) = read(&text);
        let decl = decl.expect("read in parts");
        assert!(found.is_empty(), "{found:?}");
        assert_eq!(decl.bindings.len(), 20_000);
        let mut whole_found = Vec::new();
        let (whole, _) = parse_part(FileId(0), &text, 0, false, &mut whole_found).expect("read whole");
        // The same declarations, at the same places in the whole file.
        assert_eq!(format!("{decl:?}"), format!("{whole:?}"));
    }

    #[test]
    fn small_files_are_read_whole() {
        assert_eq!(cuts(&big(10)), None);
    }

    #[test]
    fn a_cut_inside_a_multi_line_string_reads_the_file_whole() {
        let mut text = String::from("vhosts = [\"/\"]\n[[bindings]]\nsource = \"x\"\nqueue = \"q\"\n");
        text.push_str("[users.u]\npassword_env = \"P\"\nhashing_algorithm = \"\"\"\n");
        for _ in 0..60_000 {
            text.push_str("[[bindings]]\n");
        }
        text.push_str("\"\"\"\n");
        let at = cuts(&text).expect("cuts")[0];
        assert!(text[..at].contains("\"\"\"") && text[at..].contains("\"\"\""), "the cut is inside the string");
        assert!(read(&text).0.is_none());
    }

    #[test]
    fn multi_line_strings_away_from_the_cut_read_as_the_whole_does() {
        let mut text = big(20_000);
        text.push_str("[policies.p]\npattern = '''x'''\ndefinition = { max-length = 1 }\n");
        let (decl, found) = read(&text);
        let decl = decl.expect("read in parts");
        let mut whole_found = Vec::new();
        let (whole, _) = parse_part(FileId(0), &text, 0, false, &mut whole_found).expect("read whole");
        assert_eq!(format!("{decl:?} {found:?}"), format!("{whole:?} {whole_found:?}"));
    }

    #[test]
    fn a_table_in_two_parts_is_read_whole() {
        let mut text = big(20_000);
        text.push_str("[queues.r]\n");
        assert!(read(&text).0.is_none());
    }

    #[test]
    fn errors_in_any_part_are_read_whole() {
        let mut text = big(20_000);
        text.push_str("[[bindings]]\nsource = \n");
        assert!(read(&text).0.is_none());
    }
}
