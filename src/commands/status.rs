//! `warren status` and `warren history`: the journal, read-only and
//! without the lock, so that they answer while an apply runs.

use std::fmt::Write;

use super::{block_on, live_side};
use crate::broker::{Broker, BrokerError, FoundJournal, RecordStore};
use crate::cli::Connection;
use crate::error::{self, Done, Error, Kind};
#[cfg(test)]
use crate::journal::RunOutcome;
use crate::journal::{Journal, Migration, Run};
use crate::model::Place;
use crate::writer::Writer;

pub fn status(connection: &Connection, out: &Writer) -> error::Result {
    status_of(&live_side::open(connection)?, out)
}

/// The lock and the migrations in flight of every journal on `broker`.
pub fn status_of(broker: &impl Broker, out: &Writer) -> error::Result {
    let found = read(block_on(broker.journals()))?;
    for (i, (place, journal)) in found.iter().enumerate() {
        let held = match block_on(broker.lock_taken(place)) {
            Ok(h) => h,
            // A user who may not look into the broker-wide lock's vhost.
            Err(BrokerError::Forbidden { .. }) if found.len() == 1 && *place == Place::Broker => false,
            Err(e) => return Err(Error::broker(e)),
        };
        if i > 0 {
            out.outln("");
        }
        out.out(format!("{}{}", heading(place), status_text(journal, held)));
    }
    Ok(Done::Ok)
}

pub fn history(vhosts: &[String], connection: &Connection, out: &Writer) -> error::Result {
    history_of(&live_side::open(connection)?, vhosts, out)
}

/// The runs of every journal on `broker`, of `vhosts` only when given.
pub fn history_of(broker: &impl Broker, vhosts: &[String], out: &Writer) -> error::Result {
    let found = read(block_on(broker.journals()))?;
    for (i, (place, journal)) in found.iter().enumerate() {
        if i > 0 {
            out.outln("");
        }
        out.out(format!("{}{}", heading(place), history_text(journal, vhosts)));
    }
    Ok(Done::Ok)
}

/// Which journal follows: none for the broker-wide one.
fn heading(place: &Place) -> String {
    match place {
        Place::Broker => String::new(),
        Place::Vhosts { project, home } => format!("Project \"{project}\" (records in vhost \"{home}\"):\n"),
    }
}

/// Every journal found, read; the broker-wide one, empty, when there is
/// none at all, so that status and history always say something.
fn read(found: Result<Vec<FoundJournal>, BrokerError>) -> Result<Vec<(Place, Journal)>, Error> {
    let found = found.map_err(Error::broker)?;
    let mut read = Vec::new();
    for f in found {
        let journal = Journal::from_json(Some(f.value)).map(|mut j| {
            crate::journal::add_progress(&mut j.migrations, &f.progress);
            j
        });
        match journal {
            Ok(j) => read.push((f.place, j)),
            Err(e) => {
                let place = super::session::describe(&f.place);
                return Err(
                    Error::new(Kind::Records).line(format!("error: warren's journal ({place}) is unreadable: {e}"))
                );
            }
        }
    }
    if read.is_empty() {
        read.push((Place::Broker, Journal::default()));
    }
    Ok(read)
}

/// The lock, the run holding it and every migration in flight.
pub fn status_text(j: &Journal, held: bool) -> String {
    let mut s = String::new();
    match (&j.current, held) {
        (Some(r), true) => {
            let _ =
                writeln!(s, "An apply is running: run {} by {} since {}, doing: {}.", r.id, r.by, r.started, r.doing);
            let _ = writeln!(s, "  {} of {} steps done; plan {}: {}.", r.steps_done, r.steps_total, r.plan, r.summary);
        }
        (_, true) => {
            let _ = writeln!(s, "An apply holds the lock and has not recorded itself yet.");
        }
        (Some(r), false) => {
            let _ = writeln!(
                s,
                "No apply is running. Run {} by {} (started {}) stopped without finishing, while doing: {}; the next apply takes over.",
                r.id, r.by, r.started, r.doing
            );
        }
        (None, false) => {
            let _ = writeln!(s, "No apply is running.");
        }
    }
    if j.migrations.is_empty() {
        let _ = writeln!(s, "No migration is in flight.");
        return s;
    }
    let _ = writeln!(s, "\nIn-flight migrations ({}):", j.migrations.len());
    for m in j.migrations.values() {
        s.push_str(&migration_text(m));
    }
    s
}

fn migration_text(m: &Migration) -> String {
    let mut s = String::new();
    let total = m.steps.len();
    let _ = writeln!(s, "  {}  vhost \"{}\": queue \"{}\" >> \"{}\"  ({})", m.id, m.vhost, m.old, m.new, m.state);
    let next = match m.steps.get(m.done) {
        Some(step) => format!("next: step {} of {total}, {step}", m.done + 1),
        None => format!("all {total} steps done"),
    };
    let _ = writeln!(s, "      {} of {total} steps done; {next}", m.done);
    if let Some(d) = &m.detail {
        let _ = writeln!(s, "      why: {d}");
    }
    let _ = writeln!(s, "      started {}, last step {}", m.started, m.updated);
    if m.done <= m.point_of_no_return {
        let _ = writeln!(
            s,
            "      point of no return: step {} (deleting \"{}\"), not reached: `warren abort {}` rolls it back; `warren apply` finishes it",
            m.point_of_no_return + 1,
            m.old,
            m.id
        );
    } else {
        let _ = writeln!(s, "      past the point of no return: \"{}\" is deleted; `warren apply` finishes it", m.old);
    }
    s
}

/// Runs per vhost, newest first; `only` picks vhosts (all when empty).
pub fn history_text(j: &Journal, only: &[String]) -> String {
    let mut vhosts: Vec<&str> = j.history.iter().flat_map(|r| r.vhosts.iter().map(String::as_str)).collect();
    vhosts.sort();
    vhosts.dedup();
    vhosts.retain(|v| only.is_empty() || only.iter().any(|o| o == v));
    let mut s = String::new();
    if vhosts.is_empty() && j.history.iter().all(|r| !r.vhosts.is_empty() || !only.is_empty()) {
        let _ = writeln!(s, "No run is recorded{}.", if only.is_empty() { "" } else { " for these vhosts" });
        return s;
    }
    // One journal numbers its runs one after another, whatever vhosts each
    // touched: a vhost's list skips the numbers of runs elsewhere.
    let numbers =
        |runs: &mut dyn Iterator<Item = &Run>| -> Vec<u64> { runs.filter_map(|r| r.id.parse().ok()).collect() };
    let recorded = numbers(&mut j.history.iter());
    let skips = vhosts.iter().any(|v| {
        let listed = numbers(&mut j.history.iter().filter(|r| r.vhosts.iter().any(|x| x == v)));
        listed.windows(2).any(|w| recorded.iter().any(|n| w[0] < *n && *n < w[1]))
    });
    if skips {
        let _ = writeln!(
            s,
            "Runs are numbered in the order they ran, across the vhosts they touched: a vhost's list leaves out the runs that did not touch it."
        );
    }
    for v in &vhosts {
        let _ = writeln!(s, "vhost \"{v}\":");
        for r in j.history.iter().rev().filter(|r| r.vhosts.iter().any(|x| x == v)) {
            s.push_str(&run_text(r));
        }
    }
    let unplaced: Vec<&Run> = j.history.iter().rev().filter(|r| r.vhosts.is_empty()).collect();
    if only.is_empty() && !unplaced.is_empty() {
        let _ = writeln!(s, "runs that stopped before they planned:");
        for r in unplaced {
            s.push_str(&run_text(r));
        }
    }
    s
}

fn run_text(r: &Run) -> String {
    let mut s = String::new();
    let outcome = r.outcome.as_ref().map_or("unknown", |o| o.as_str());
    let _ = writeln!(
        s,
        "  run {}: {} by {} with warren {}, {} to {}",
        r.id,
        outcome,
        r.by,
        r.version,
        r.started,
        r.ended.as_deref().unwrap_or("?")
    );
    if r.plan.is_empty() && !r.summary.is_empty() {
        // A run without a plan (an abort, an adopt): what it did, in words.
        match r.steps_total {
            0 => writeln!(s, "    {}", r.summary),
            n => writeln!(s, "    {}; {} of {n} steps done", r.summary, r.steps_done),
        }
        .expect("writing to a string cannot fail");
    } else if !r.summary.is_empty() {
        let _ = writeln!(s, "    plan {}: {}; {} of {} steps done", r.plan, r.summary, r.steps_done, r.steps_total);
    }
    if let Some(d) = &r.detail {
        let _ = writeln!(s, "    why: {d}");
    }
    for step in &r.steps {
        let _ = writeln!(s, "    {:<7} {}", step.outcome, step.what);
    }
    let shown = r.steps.len();
    if r.steps_total > shown {
        let _ = writeln!(s, "    … {} more step(s) not listed", r.steps_total - shown);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_groups_runs_by_vhost_newest_first() {
        let run = |id: &str, vhosts: &[&str], outcome: &str| Run {
            id: id.into(),
            vhosts: vhosts.iter().map(|v| v.to_string()).collect(),
            outcome: Some(outcome.to_string().try_into().unwrap()),
            ..Run::default()
        };
        let j = Journal {
            history: vec![run("1", &["a"], "complete"), run("2", &["a", "b"], "paused"), run("3", &[], "interrupted")],
            ..Journal::default()
        };
        let all = history_text(&j, &[]);
        let a = all.find("vhost \"a\"").unwrap();
        let b = all.find("vhost \"b\"").unwrap();
        assert!(a < b);
        assert!(all[a..b].find("run 2").unwrap() < all[a..b].find("run 1").unwrap(), "{all}");
        assert!(all.contains("run 3: interrupted"), "{all}");
        let only_b = history_text(&j, &["b".into()]);
        assert!(only_b.contains("run 2") && !only_b.contains("run 1") && !only_b.contains("run 3"), "{only_b}");
    }

    #[test]
    fn a_vhost_whose_list_skips_runs_of_other_vhosts_says_why() {
        let run = |id: &str, vhosts: &[&str]| Run {
            id: id.into(),
            vhosts: vhosts.iter().map(|v| v.to_string()).collect(),
            outcome: Some(RunOutcome::Complete),
            ..Run::default()
        };
        let note = "Runs are numbered in the order they ran, across the vhosts they touched";
        let j =
            Journal { history: vec![run("1", &["a"]), run("2", &["a", "b"]), run("3", &["a"])], ..Journal::default() };
        assert!(!history_text(&j, &[]).contains(note), "{}", history_text(&j, &[]));
        let j = Journal { history: vec![run("1", &["a"]), run("2", &["b"]), run("3", &["a"])], ..Journal::default() };
        let all = history_text(&j, &[]);
        assert!(all.starts_with(note), "{all}");
        assert!(history_text(&j, &["a".into()]).starts_with(note));
        assert!(!history_text(&j, &["b".into()]).contains(note));
    }

    #[test]
    fn a_run_without_a_plan_says_what_it_did() {
        let adopt = Run {
            id: "4".into(),
            vhosts: vec!["a".into()],
            summary: "2 object(s) from project old".into(),
            outcome: Some(RunOutcome::Adopted),
            ..Run::default()
        };
        let abort = Run {
            id: "5".into(),
            vhosts: vec!["a".into()],
            summary: "abort migration m1 (\"p\" >> \"q\")".into(),
            steps_total: 4,
            steps_done: 4,
            outcome: Some(RunOutcome::Aborted),
            ..Run::default()
        };
        let text = history_text(&Journal { history: vec![adopt, abort], ..Journal::default() }, &[]);
        assert!(text.contains("  run 4: adopted by "), "{text}");
        assert!(text.contains("\n    2 object(s) from project old\n"), "{text}");
        assert!(text.contains("\n    abort migration m1 (\"p\" >> \"q\"); 4 of 4 steps done\n"), "{text}");
        assert!(!text.contains("plan :"), "{text}");
    }
}
