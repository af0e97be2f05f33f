//! Messages that reach an exchange from inside the broker rather than from
//! a client: what lint asks of an exchange as such, whoever publishes to it.

use super::{Message, Route, Router};

impl Router<'_> {
    /// Where `message` goes when the broker hands it to its exchange (a
    /// binding from another exchange, an alternate exchange, a dead letter):
    /// unlike a client's publish, an internal exchange takes it.
    pub fn route_inside(&self, message: &Message) -> Route {
        self.route_from(message, false, true)
    }
}
