//! The text of every file read, so that any diagnostic can point into it,
//! and where in it each declared object is.

mod locations;

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use locations::{FastHash, FieldLocations, Locations, ObjectLocation};

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
}

/// Files read in this run.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    files: Vec<SourceFile>,
}

impl Sources {
    pub fn add(&mut self, path: &Path, text: String) -> FileId {
        self.files.push(SourceFile { path: path.to_path_buf(), text: text.into() });
        FileId(self.files.len() - 1)
    }

    pub fn get(&self, id: FileId) -> &SourceFile {
        &self.files[id.0]
    }

    pub fn ids(&self) -> impl Iterator<Item = FileId> + use<> {
        (0..self.files.len()).map(FileId)
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, location: &Location) -> (usize, usize) {
        let text = &self.get(location.file).text;
        let at = location.span.start.min(text.len());
        let before = &text[..at];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        (line, before[line_start..].chars().count() + 1)
    }

    /// `path:line:column`, as editors and terminals link it.
    pub fn position(&self, location: &Location) -> String {
        let (line, col) = self.line_col(location);
        format!("{}:{line}:{col}", self.get(location.file).path.display())
    }
}
