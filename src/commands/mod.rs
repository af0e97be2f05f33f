//! One module per command: each reads its inputs, runs the pipeline and
//! hands its report to the [`Writer`]; none prints.

pub mod abort;
pub mod adopt;
pub mod apply;
pub mod destroy;
pub mod export;
pub mod findings;
pub mod fleet;
pub mod fmt;
pub mod graph;
pub mod import;
pub mod import_object;
pub mod init;
pub mod lint;
pub mod live_side;
mod picture;
pub mod plan;
pub mod planned;
mod refusal;
pub mod rollout;
pub mod route;
pub mod saved_plan;
pub mod session;
pub mod show;
pub mod status;
pub mod test;
pub mod validate;

use std::future::Future;

use crate::broker::BrokerError;
use crate::error::Error;
use crate::render::Format;
use crate::writer::Writer;

/// How a plan is shown (`plan`, `diff`).
#[derive(Debug, Clone)]
pub struct Show {
    pub format: Format,
    pub detailed_exitcode: bool,
    pub replace: Vec<String>,
    /// `plan --target`.
    pub targets: Vec<crate::diff::target::Target>,
}

/// A broker error met before the first write, and what to do about it.
fn unchanged(e: BrokerError) -> Error {
    Error::broker(e).line("Nothing was changed.")
}

/// Waits for broker calls on the run's one runtime (made in `run`).
pub(crate) fn block_on<F: Future>(calls: F) -> F::Output {
    tokio::runtime::Handle::current().block_on(calls)
}

/// Runs `work` on each of `items`, at most `at_once` at a time, each on a
/// thread of its own that waits on the run's runtime; `each` takes every
/// result on the calling thread, with the item's index, in the order they
/// end. The items are given away: a rollout's environments each hold
/// their lock, which only its own apply gives back. An environment's
/// broker calls mostly wait, but parsing its answers and planning are CPU:
/// polled together on one thread, a fleet's environments took their turns
/// at it (62% of a twelve-broker plan's CPU on one thread, by `perf`).
pub(crate) fn each_on_threads<T: Send, R: Send>(
    items: Vec<T>,
    at_once: usize,
    work: impl Fn(T) -> R + Sync,
    mut each: impl FnMut(usize, R),
) {
    let runtime = tokio::runtime::Handle::current();
    let threads = at_once.clamp(1, items.len().max(1));
    let next = std::sync::Mutex::new(items.into_iter().enumerate());
    let (done, ended) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        for _ in 0..threads {
            let (done, next, work, runtime) = (done.clone(), &next, &work, &runtime);
            s.spawn(move || {
                // `block_on` and the broker's own tasks find the runtime.
                let _entered = runtime.enter();
                loop {
                    let taken = next.lock().unwrap_or_else(std::sync::PoisonError::into_inner).next();
                    let Some((i, item)) = taken else { break };
                    if done.send((i, work(item))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(done);
        for (i, r) in ended {
            each(i, r);
        }
    });
}

/// With -v, how long each stage took, on stderr.
pub(crate) struct Clock<'w> {
    last: Option<std::time::Instant>,
    out: &'w Writer,
}

impl<'w> Clock<'w> {
    pub(crate) fn new(out: &'w Writer) -> Self {
        Clock { last: out.verbose().then(std::time::Instant::now), out }
    }

    pub(crate) fn lap(&mut self, what: &str) {
        if let Some(t) = self.last {
            self.out.errln(format!("warren: {what}: {:.1} ms", t.elapsed().as_secs_f64() * 1e3));
            self.last = Some(std::time::Instant::now());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// Every item's result reaches `each` with its index, at most
    /// `at_once` items are worked on at a time, and the work finds the
    /// runtime for its broker calls.
    #[test]
    fn each_item_is_worked_on_a_thread_at_most_at_once_at_a_time() {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let _entered = runtime.enter();
        let items: Vec<usize> = (0..12).collect();
        let (now, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let mut seen = vec![None; items.len()];
        super::each_on_threads(
            items.clone(),
            4,
            |n| {
                most.fetch_max(now.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                let doubled = super::block_on(async {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    n * 2
                });
                now.fetch_sub(1, Ordering::SeqCst);
                doubled
            },
            |i, r| seen[i] = Some(r),
        );
        assert_eq!(seen, items.iter().map(|n| Some(n * 2)).collect::<Vec<_>>());
        assert!(most.load(Ordering::SeqCst) <= 4, "{} at once", most.load(Ordering::SeqCst));
        assert!(most.load(Ordering::SeqCst) > 1, "one at a time");
    }
}
