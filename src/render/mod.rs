//! Plan -> text. Rendering computes nothing: every view is drawn from the
//! [`PlanDocument`].

pub mod ci;
mod document;
pub mod fleet;
pub mod graph;
pub mod human;
pub mod lint;
pub mod markdown;
pub mod route;
pub mod routing;
pub mod service_routes;
pub mod test_report;

pub use document::{
    ChangeDoc, DiagnosticDoc, FORMAT_VERSION, MigrationDoc, MigrationStepDoc, NotReadDoc, Origin, PlanDocument,
    ShapeDoc, SummaryDoc,
};
pub use fleet::FleetDocument;

/// `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Human,
    Json,
    Markdown,
    /// The human plan, with an annotation per error and warning, for GitHub
    /// Actions; the markdown plan goes to $GITHUB_STEP_SUMMARY.
    Github,
}

/// The document in the chosen format.
pub fn render(doc: &PlanDocument, format: Format, color: bool) -> String {
    match format {
        Format::Human => human::render(doc, color),
        Format::Json => serde_json::to_string_pretty(doc).expect("a plan document always serialises") + "\n",
        Format::Markdown => markdown::render(doc),
        Format::Github => ci::plan_github(doc) + &human::render(doc, false),
    }
}
