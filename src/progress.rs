//! An apply's progress on stderr, drawn from the events it sends
//! (`apply::Event`): each step as it starts and ends (`-v`), where a
//! migration resumes, and a live line per drain wait, rewritten in place on
//! a terminal and printed every 10 s otherwise (CI logs). Nothing with `-q`.
//! It prints what apply computed and nothing more.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

use crate::apply::event::{DrainReading, Event, Events};
use crate::writer::Writer;

/// Between two lines of a drain wait when stderr is not a terminal.
const EVERY: Duration = Duration::from_secs(10);

pub struct Progress {
    out: Writer,
    every: Duration,
    live: Mutex<Live>,
}

/// What is on the screen now.
#[derive(Default)]
struct Live {
    /// On a terminal: the drain lines being rewritten, by vhost and queue.
    multi: Option<MultiProgress>,
    bars: BTreeMap<(String, String), ProgressBar>,
    /// Otherwise: per drain wait, the last interval a line was printed in.
    printed: BTreeMap<(String, String), u64>,
}

impl Progress {
    pub fn new(out: &Writer) -> Progress {
        Progress { out: out.clone(), every: interval(), live: Mutex::default() }
    }

    /// Where apply sends its events, for this renderer to print.
    pub fn events(self) -> Events {
        let me = Arc::new(self);
        Events::new(move |e| me.show(e))
    }

    pub fn show(&self, event: &Event) {
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        if let Event::Said(why) = event {
            // Said even with -q: it tells why the broker is left as it is.
            return self.print(&live, why);
        }
        if self.out.quiet() {
            return;
        }
        match event {
            Event::Said(_) => {}
            Event::Started { step } if self.out.verbose() => self.print(&live, &format!("  start: {step}")),
            Event::Ended { step, outcome, took: t } if self.out.verbose() => {
                self.print(&live, &format!("  {outcome}: {step} ({})", took(*t)))
            }
            Event::PhaseEnded { phase, steps, took: t } if self.out.verbose() => {
                let steps = if *steps == 1 { "1 step".to_string() } else { format!("{steps} steps") };
                self.print(&live, &format!("  phase {phase}: {steps} in {}", took(*t)))
            }
            Event::Started { .. } | Event::Ended { .. } | Event::PhaseEnded { .. } => {}
            Event::Resuming { vhost, old, new, at, total, step } => self.print(
                &live,
                &format!("Resuming migration {old} -> {new} in vhost \"{vhost}\" at step {at} of {total} ({step})"),
            ),
            Event::Draining(r) => {
                let key = (r.vhost.clone(), r.old.clone());
                if self.out.redraws() {
                    let Live { multi, bars, .. } = &mut *live;
                    let multi = multi.get_or_insert_with(MultiProgress::new);
                    let bar = bars.entry(key).or_insert_with(|| {
                        let style = ProgressStyle::with_template("{msg}").expect("a valid template");
                        multi.add(ProgressBar::new_spinner().with_style(style))
                    });
                    bar.set_message(drain_line(r));
                } else if let Some(n) = due(live.printed.get(&key).copied(), r.elapsed, self.every) {
                    live.printed.insert(key, n);
                    self.out.errln(drain_line(r));
                }
            }
            Event::DrainOver { vhost, old } => {
                let key = (vhost.clone(), old.clone());
                live.printed.remove(&key);
                // The last reading stays on the screen as a plain line.
                if let Some(bar) = live.bars.remove(&key) {
                    let last = bar.message();
                    bar.finish_and_clear();
                    if let Some(multi) = &live.multi {
                        multi.remove(&bar);
                    }
                    self.print(&live, &last);
                }
            }
        }
    }

    /// A line that stays, above any live drain lines.
    fn print(&self, live: &Live, line: &str) {
        match &live.multi {
            Some(multi) if !live.bars.is_empty() => {
                let _ = multi.println(line);
            }
            _ => self.out.errln(line),
        }
    }
}

/// The interval between drain lines without a terminal: 10 s, or what the
/// test hook `WARREN_TEST_PROGRESS_INTERVAL` says (`1s`, `500ms`).
fn interval() -> Duration {
    std::env::var("WARREN_TEST_PROGRESS_INTERVAL")
        .ok()
        .and_then(|v| crate::cli::parse_duration(&v).ok())
        .filter(|d| !d.is_zero())
        .unwrap_or(EVERY)
}

/// The interval a reading `elapsed` into its wait falls in, when no line
/// was printed in it yet (`last` is the interval of the last line).
fn due(last: Option<u64>, elapsed: Duration, every: Duration) -> Option<u64> {
    let n = (elapsed.as_millis() / every.as_millis().max(1)) as u64;
    last.is_none_or(|l| n > l).then_some(n)
}

fn drain_line(r: &DrainReading) -> String {
    let counts = match &r.leaderless {
        Some(why) => format!("no leader ({why})"),
        None => format!(
            "{} ready, {} unacknowledged, {} consumer{}, {:.1} msg/s",
            r.ready,
            r.unacked,
            r.consumers,
            if r.consumers == 1 { "" } else { "s" },
            r.rate
        ),
    };
    format!(
        "  draining \"{}\" in vhost \"{}\": {counts}; waited {} of {}",
        r.old,
        r.vhost,
        span(r.elapsed),
        span(r.timeout)
    )
}

/// Whole seconds as --drain-timeout takes them: 0s, 45s, 1m05s, 10m, 1h30m.
fn span(d: Duration) -> String {
    let t = d.as_secs();
    match (t / 3600, t % 3600 / 60, t % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, 0) => format!("{m}m"),
        (0, m, s) => format!("{m}m{s:02}s"),
        (h, 0, 0) => format!("{h}h"),
        (h, m, 0) => format!("{h}h{m:02}m"),
        (h, m, s) => format!("{h}h{m:02}m{s:02}s"),
    }
}

/// A step's duration: milliseconds under a second, else tenths of seconds.
fn took(d: Duration) -> String {
    if d < Duration::from_secs(1) { format!("{} ms", d.as_millis()) } else { format!("{:.1} s", d.as_secs_f64()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading() -> DrainReading {
        DrainReading {
            vhost: "shop".into(),
            old: "orders.v1".into(),
            ready: 5,
            unacked: 2,
            consumers: 1,
            rate: 12.34,
            leaderless: None,
            elapsed: Duration::from_millis(65_400),
            timeout: Duration::from_secs(600),
        }
    }

    #[test]
    fn a_drain_line_gives_the_counts_the_elapsed_time_and_the_timeout() {
        assert_eq!(
            drain_line(&reading()),
            "  draining \"orders.v1\" in vhost \"shop\": 5 ready, 2 unacknowledged, 1 consumer, 12.3 msg/s; waited 1m05s of 10m"
        );
        let leaderless = DrainReading { leaderless: Some("its state is \"down\"".into()), ..reading() };
        assert_eq!(
            drain_line(&leaderless),
            "  draining \"orders.v1\" in vhost \"shop\": no leader (its state is \"down\"); waited 1m05s of 10m"
        );
    }

    #[test]
    fn without_a_terminal_a_line_comes_at_once_then_once_per_interval() {
        let every = Duration::from_secs(10);
        let at = |ms: u64| Duration::from_millis(ms);
        assert_eq!(due(None, at(30), every), Some(0), "the first reading");
        assert_eq!(due(Some(0), at(9_900), every), None);
        assert_eq!(due(Some(0), at(10_020), every), Some(1));
        assert_eq!(due(Some(1), at(31_000), every), Some(3), "a late reading still prints");
        assert_eq!(due(Some(3), at(31_500), every), None);
    }

    #[test]
    fn durations_read_as_the_options_are_written() {
        let s = Duration::from_secs;
        assert_eq!(span(s(0)), "0s");
        assert_eq!(span(s(59)), "59s");
        assert_eq!(span(s(65)), "1m05s");
        assert_eq!(span(s(600)), "10m");
        assert_eq!(span(s(5400)), "1h30m");
        assert_eq!(span(s(3601)), "1h00m01s");
        assert_eq!(took(Duration::from_millis(12)), "12 ms");
        assert_eq!(took(Duration::from_millis(3_040)), "3.0 s");
    }
}
