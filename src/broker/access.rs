//! What access a management API request needs, said when the broker
//! refuses it: RabbitMQ answers every such refusal with the same "Access
//! refused", and a generic "needs the administrator tag" sends users the
//! wrong way when what is missing is one permission in one vhost.
//! Sources: RabbitMQ's access control guide (which operation needs which
//! of configure, write and read) and the management plugin's
//! per-resource authorisation (`rabbit_mgmt_util:is_authorized_*`).

use reqwest::Method;

/// The access `method` on API `path` (relative to `/api/`, its segments
/// percent-encoded) needs, in words; `None` when it is not one warren
/// can name.
pub(super) fn needed(method: &Method, path: &str) -> Option<String> {
    let path = path.split('?').next().unwrap_or(path);
    let parts: Vec<String> =
        path.split('/').map(|s| percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned()).collect();
    let part = |i: usize| parts.get(i).map(String::as_str);
    let writes = *method != Method::GET;
    let admin = || Some("the `administrator` tag".to_string());
    let expression = |kind: &str, name: &str, vhost: &str| {
        format!("a {kind} permission whose expression matches \"{name}\" in vhost \"{vhost}\"")
    };
    match (part(0)?, part(1), part(2), part(3)) {
        ("users" | "permissions" | "topic-permissions" | "global-parameters" | "user-limits", ..) => admin(),
        ("vhosts" | "vhost-limits", ..) if writes => admin(),
        ("definitions", None, ..) => admin(),
        ("policies" | "operator-policies" | "parameters", Some(_), ..) => {
            let vhost = if part(0) == Some("parameters") { part(2) } else { part(1) };
            let tag = if part(0) == Some("operator-policies") { "administrator" } else { "policymaker" };
            Some(format!(
                "the `{tag}` tag (or `administrator`) and permissions in vhost \"{}\"",
                vhost.unwrap_or_default()
            ))
        }
        ("exchanges" | "queues", Some(vhost), Some(name), None) if writes => Some(expression("configure", name, vhost)),
        ("bindings", Some(vhost), Some("e"), Some(source)) if writes => {
            let destination = part(5).unwrap_or_default();
            Some(format!("{} and {}", expression("write", destination, vhost), expression("read", source, vhost)))
        }
        (_, Some(vhost), ..) => Some(format!("permissions in vhost \"{vhost}\" (any of configure, write, read)")),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_request_names_the_access_it_needs() {
        let says = |m: Method, p: &str| needed(&m, p).unwrap_or_default();
        assert_eq!(says(Method::DELETE, "permissions/%2F/guest"), "the `administrator` tag");
        assert_eq!(says(Method::PUT, "users/app"), "the `administrator` tag");
        assert_eq!(
            says(Method::PUT, "queues/%2F/orders%2Fin"),
            "a configure permission whose expression matches \"orders/in\" in vhost \"/\""
        );
        assert_eq!(
            says(Method::POST, "bindings/shop/e/x.in/q/q.out"),
            "a write permission whose expression matches \"q.out\" in vhost \"shop\" and a read permission whose expression matches \"x.in\" in vhost \"shop\""
        );
        assert!(says(Method::PUT, "policies/shop/p").starts_with("the `policymaker` tag"));
        assert!(says(Method::GET, "definitions/shop").contains("permissions in vhost \"shop\""));
        assert_eq!(needed(&Method::GET, "overview"), None);
    }
}
