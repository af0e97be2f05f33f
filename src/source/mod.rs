//! The text of every file read, so that any diagnostic can point into it,
//! and where in it each declared object is.

mod field_paths;
mod locations;
mod sites;

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

pub use locations::{FastHash, FieldLocations, Locations, ObjectLocation};
pub use sites::Sites;

/// Index of a file in [`Sources`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FileId(pub usize);

/// A byte range in one file.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Location {
    pub file: FileId,
    pub span: Range<usize>,
}

#[derive(Debug, Clone)]
pub struct SourceFile {
    /// The path as the user named it (relative paths stay relative).
    pub path: PathBuf,
    pub text: Arc<str>,
    /// Where each line starts, made at the first position asked for: a
    /// report of thousands of findings in one large file would otherwise
    /// count its lines from the top for each.
    lines: Arc<OnceLock<Vec<usize>>>,
    /// For the objects one stamp of a shape makes: the stamp. The file is
    /// then the shape's file again, under an id of its own, so that every
    /// place in what the stamp made says which stamp made it.
    pub stamp: Option<Arc<Stamp>>,
}

/// The stamp that made the objects of a file (see [`SourceFile::stamp`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    /// The shape's name.
    pub shape: String,
    /// The stamp: its table, or its `for_each` entry.
    pub at: Location,
    /// The shape's table header.
    pub defined: Location,
}

impl SourceFile {
    fn line_starts(&self) -> &[usize] {
        self.lines.get_or_init(|| std::iter::once(0).chain(self.text.match_indices('\n').map(|(i, _)| i + 1)).collect())
    }
}

/// Files read in this run.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    files: Vec<SourceFile>,
}

impl Sources {
    pub fn add(&mut self, path: &Path, text: String) -> FileId {
        self.files.push(SourceFile { path: path.to_path_buf(), text: text.into(), lines: Arc::default(), stamp: None });
        FileId(self.files.len() - 1)
    }

    /// The file of what a stamp of a shape made: the shape's file (`of`)
    /// again, under a new id that knows the stamp.
    pub fn add_stamped(&mut self, of: FileId, stamp: Stamp) -> FileId {
        let shape = self.get(of);
        let file = SourceFile { stamp: Some(Arc::new(stamp)), ..shape.clone() };
        self.files.push(file);
        FileId(self.files.len() - 1)
    }

    /// The stamps that made what is at `location`, innermost first: none
    /// for what a user wrote out.
    pub fn stamps(&self, location: &Location) -> Vec<Arc<Stamp>> {
        let mut out = Vec::new();
        let mut file = location.file;
        while let Some(stamp) = &self.get(file).stamp {
            out.push(stamp.clone());
            file = stamp.at.file;
        }
        out
    }

    /// `in shape "dlq" (shapes.toml:3:1) stamped at topology.toml:9:1`,
    /// for each stamp that made what is at `location`; none for what a
    /// user wrote out.
    pub fn origin(&self, location: &Location) -> Option<String> {
        let parts: Vec<String> = self
            .stamps(location)
            .iter()
            .map(|s| {
                format!("in shape \"{}\" ({}) stamped at {}", s.shape, self.position(&s.defined), self.position(&s.at))
            })
            .collect();
        (!parts.is_empty()).then(|| parts.join(", "))
    }

    /// The files read, without those of stamps (see [`Sources::add_stamped`]).
    pub fn files(&self) -> impl Iterator<Item = FileId> + '_ {
        self.ids().filter(|id| self.get(*id).stamp.is_none())
    }

    pub fn get(&self, id: FileId) -> &SourceFile {
        &self.files[id.0]
    }

    pub fn ids(&self) -> impl Iterator<Item = FileId> + use<> {
        (0..self.files.len()).map(FileId)
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, location: &Location) -> (usize, usize) {
        let file = self.get(location.file);
        let at = location.span.start.min(file.text.len());
        let starts = file.line_starts();
        let line = starts.partition_point(|&s| s <= at);
        let start = starts[line - 1];
        (line, file.text[start..at].chars().count() + 1)
    }

    /// The byte range of the whole lines around `location`, `context` more
    /// on each side where the file has them, and the 0-based line it
    /// starts at.
    pub fn lines_around(&self, location: &Location, context: usize) -> (Range<usize>, usize) {
        let file = self.get(location.file);
        let starts = file.line_starts();
        let len = file.text.len();
        // 0-based lines of the span's first and last byte.
        let line_of = |at: usize| starts.partition_point(|&s| s <= at.min(len)) - 1;
        let first = line_of(location.span.start).saturating_sub(context);
        let last = line_of(location.span.end.max(location.span.start)) + context + 1;
        let end = starts.get(last).copied().unwrap_or(len);
        (starts[first]..end, first)
    }

    /// `path:line:column`, as editors and terminals link it.
    pub fn position(&self, location: &Location) -> String {
        let (line, col) = self.line_col(location);
        format!("{}:{line}:{col}", self.get(location.file).path.display())
    }
}
