//! The kinds of record warren keeps, and the names of their exchanges
//! inside a vhost (see `records`).

/// What a record holds. Inside a vhost the record exchange's name says
/// it; broker-wide, the inventories of every project and the journal are
/// global parameters of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RecordKind {
    /// A project's inventory of the vhost.
    Inventory,
    /// A project's journal.
    Journal,
    /// How many steps of one migration are done, in the migration's vhost:
    /// `warren.progress.<migration id>.<steps done>`. Each step writes one
    /// of these instead of the whole journal, so that a step's record costs
    /// the same however many migrations are in flight.
    Progress,
}

impl RecordKind {
    fn prefix(self) -> &'static str {
        match self {
            RecordKind::Inventory => "warren.records.",
            RecordKind::Journal => "warren.journal.",
            RecordKind::Progress => "warren.progress.",
        }
    }

    /// `warren.records.<project>.<generation>` (a progress record's
    /// "project" is its migration's id).
    pub fn exchange(self, project: &str, generation: u64) -> String {
        format!("{}{project}.{generation}", self.prefix())
    }

    /// What a record exchange's name says: its kind, project and generation.
    pub fn parse(name: &str) -> Option<(RecordKind, &str, u64)> {
        [RecordKind::Inventory, RecordKind::Journal, RecordKind::Progress].into_iter().find_map(|kind| {
            let (project, generation) = name.strip_prefix(kind.prefix())?.rsplit_once('.')?;
            let valid = !project.is_empty() && !generation.is_empty() && generation.bytes().all(|b| b.is_ascii_digit());
            Some((kind, project, generation.parse().ok().filter(|_| valid)?))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_kind_project_and_generation() {
        let name = RecordKind::Inventory.exchange("team.a", 7);
        assert_eq!(name, "warren.records.team.a.7");
        assert_eq!(RecordKind::parse(&name), Some((RecordKind::Inventory, "team.a", 7)));
        assert_eq!(RecordKind::parse("warren.journal.b.12"), Some((RecordKind::Journal, "b", 12)));
        assert_eq!(RecordKind::parse("warren.progress.ab12cd34.3"), Some((RecordKind::Progress, "ab12cd34", 3)));
        for other in ["warren.records.x", "warren.records..3", "warren.records.x.-1", "warren.lock", "orders"] {
            assert_eq!(RecordKind::parse(other), None, "{other}");
        }
    }
}
