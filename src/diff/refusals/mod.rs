//! Every change the diff refuses, in one place, and the one list of their
//! codes. A refusal is a `Problem`: an error at the object at fault, which
//! keeps the plan from being carried out.
//!
//! Two kinds, told apart by the exit code. Refused for safety (exit 4, the
//! codes in [`REFUSALS`]): another project's object, a migration in flight
//! changed, a migration that cannot start safely; the files may be right,
//! the broker or the moment is not. Not possible on this broker (exit 1,
//! like any error): a change the live RabbitMQ version would ignore or
//! refuse, a queue property that never changes in place.

mod broker_version;
mod external_user;
mod immutable_change;
mod in_flight;
mod other_project;
mod preflight;
mod routes_moved;

pub(super) use immutable_change::immutable_change;
pub(super) use in_flight::in_flight;
pub(super) use preflight::preflight;
pub use routes_moved::routes_moved;

/// The files declare, or `replaces`, an object another project owns.
pub(super) const OTHER_PROJECT: &str = "other-project";
/// The files change a migration in flight other than by finishing it or
/// going back to the files from before it.
pub(super) const IN_FLIGHT: &str = "migration-in-flight";
/// The queue a migration replaces can vanish, messages and all, mid-way.
const EXPIRING_QUEUE: &str = "preflight-expiring-queue";
/// The queue a migration replaces is a stream, which never drains.
const STREAM_QUEUE: &str = "preflight-stream-queue";
/// A source exchange holds messages itself and routes them later.
const DELAYED_EXCHANGE: &str = "preflight-delayed-exchange";
/// An exchange the migration needs exists and is not warren's.
const NAME_TAKEN: &str = "preflight-name-taken";
/// An exchange the migration needs sends elsewhere what nothing routes.
const ALTERNATE_ARGUMENT: &str = "preflight-alternate-argument";
/// An interposed exchange has bindings the migration did not make.
const EXTRA_BINDING: &str = "preflight-extra-binding";
/// The new queue dead-letters into a source of the migration.
const DEAD_LETTER_LOOP: &str = "preflight-dead-letter-loop";

/// A compiled migration would route some keys to other queues than before.
const ROUTES_MOVED: &str = "migration-routes-moved";

/// A change the live broker's version would ignore or refuse (exit 1).
const BROKER_VERSION: &str = "broker-version";
/// Objects of a kind whose plugin the live broker has not enabled (exit 1).
const PLUGIN_MISSING: &str = "plugin-missing";
/// Permissions for a user the files list as external, which the broker
/// lacks (exit 1).
const EXTERNAL_USER_MISSING: &str = "external-user-missing";
/// A queue property that never changes in place, changed with no way
/// chosen to carry it out (exit 1).
const IMMUTABLE_CHANGE: &str = "immutable-change";

/// The codes of refusals that are not for safety: what is not possible on
/// this broker (exit 1).
const NOT_POSSIBLE: [&str; 4] = [BROKER_VERSION, PLUGIN_MISSING, EXTERNAL_USER_MISSING, IMMUTABLE_CHANGE];

/// Whether `code` is a refusal's: what only a plan against the broker
/// finds, so that `warren lint` never lists it.
pub fn is_refusal(code: &str) -> bool {
    REFUSALS.contains(&code) || NOT_POSSIBLE.contains(&code)
}

/// Codes of refusals for safety: a plan with only these errors exits 4, not 1.
pub const REFUSALS: [&str; 10] = [
    OTHER_PROJECT,
    IN_FLIGHT,
    EXPIRING_QUEUE,
    STREAM_QUEUE,
    DELAYED_EXCHANGE,
    NAME_TAKEN,
    ALTERNATE_ARGUMENT,
    EXTRA_BINDING,
    DEAD_LETTER_LOOP,
    ROUTES_MOVED,
];
