//! Exchanges that drop what is published to them: an alternate exchange
//! that is not there, or nothing bound and no alternate exchange at all.

use super::{Context, finding};
use crate::model::ObjectKey;

pub(super) fn check(ctx: &mut Context) {
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
            if alternate.is_none() && view.bindings_from(&x.name).is_empty() {
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
