//! Exchanges that drop what is published to them: an alternate exchange
//! that is not there, or nothing bound and no alternate exchange at all.

use super::view::View;
use super::{Context, finding};
use crate::model::{Exchange, ObjectKey};
use crate::routing::{Keys, Message, Why};

pub(super) fn check(ctx: &mut Context) {
    if !ctx.routing {
        return;
    }
    let mut found = Vec::new();
    for (vname, vhost) in &ctx.topology.vhosts {
        let view = &ctx.views[vname.as_str()];
        for x in vhost.exchanges.values() {
            let key = ObjectKey::Exchange { vhost: vname.clone(), name: x.name.clone() };
            let alternate = view.alternate(&x.name);
            if let Some((ae, from)) = alternate
                && !view.exchange_known(ae)
            {
                let d = finding(
                    "ae-missing",
                    format!("exchange \"{}\" has alternate exchange \"{ae}\", which is declared nowhere in vhost \"{vname}\"", x.name),
                )
                .label("no exchange of this name")
                .help(format!(
                    "messages the exchange cannot route are dropped while \"{ae}\" is missing: declare [exchanges.\"{ae}\"], or list it in `[external] exchanges` if another project declares it"
                ));
                let (key, field) = from.place_of(key.clone(), "alternate-exchange", "alternate-exchange");
                found.push((key, Some(field), d));
            }
            // Only an exchange with nothing bound and no alternate exchange
            // can drop every message: the model is asked of those alone.
            if alternate.is_none() && view.router.bindings_from(&x.name).is_empty() && drops_everything(view, x) {
                let d = finding(
                    "unroutable-exchange",
                    format!("exchange \"{}\" has no binding and no alternate exchange: what is published to it is dropped", x.name),
                )
                .help("bind a queue or an exchange to it, or give it an alternate exchange; if another project binds to it, say so with `lint_allow = [\"unroutable-exchange\"]` on the exchange");
                found.push((key, None, d));
            }
        }
    }
    for (key, field, d) in found {
        ctx.report(&key, field.as_deref(), d);
    }
}

/// Whether the model says exchange `x` itself drops every message, whatever
/// its key and headers, for want of a binding and of an alternate exchange.
/// Where it cannot tell (a plugin's type) it says nothing. Routed as the
/// broker routes what reaches the exchange from inside (an internal one
/// takes it too); where the message goes on from there is the rule of the
/// exchanges it goes to.
fn drops_everything(view: &View, x: &Exchange) -> bool {
    let message = Message { exchange: x.name.clone(), keys: Keys::Any, headers: None };
    let route = view.router.route_inside(&message);
    route.queues.is_empty()
        && route.cannot_tell.is_empty()
        && route.dropped.iter().any(|d| d.exchange == x.name && d.why == Why::NoBindingMatched)
}
