//! The management API's listings of a vhost's clients (consumers,
//! connections, channels) read into who each is and what it published.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value as Json;

use super::{Client, Consumer};

fn str_of(v: &Json) -> Option<String> {
    v.as_str().filter(|s| !s.is_empty()).map(str::to_string)
}

fn items(listing: &Json) -> impl Iterator<Item = &Json> {
    listing.as_array().into_iter().flatten()
}

/// The name each client gave its connection, by the broker's name of it:
/// 3.10 to 4.x list it as `user_provided_name`, and among the client's
/// properties.
pub(super) fn client_names(connections: &Json) -> BTreeMap<String, String> {
    items(connections)
        .filter_map(|c| {
            let given = str_of(&c["user_provided_name"]).or_else(|| str_of(&c["client_properties"]["connection_name"]));
            Some((str_of(&c["name"])?, given?))
        })
        .collect()
}

/// The consumers listed, each with its channel's user and connection.
pub(super) fn consumers(listing: &Json, names: &BTreeMap<String, String>) -> Vec<Consumer> {
    let mut out: Vec<Consumer> = items(listing)
        .filter_map(|c| {
            let channel = &c["channel_details"];
            let connection = str_of(&channel["connection_name"]).unwrap_or_default();
            Some(Consumer {
                queue: str_of(&c["queue"]["name"])?,
                user: str_of(&channel["user"]).unwrap_or_default(),
                client_name: names.get(&connection).cloned(),
                connection,
            })
        })
        .collect();
    out.sort();
    out
}

/// The connections listed, each with what its channels published (the
/// channels' `message_stats.publish`, which both statistics modes keep).
pub(super) fn connections(connections: &Json, channels: &Json, names: &BTreeMap<String, String>) -> Vec<Client> {
    let mut by_name: BTreeMap<String, Client> = items(connections)
        .filter_map(|c| {
            let connection = str_of(&c["name"])?;
            let client = Client {
                user: str_of(&c["user"]).unwrap_or_default(),
                client_name: names.get(&connection).cloned(),
                connection: connection.clone(),
                ..Client::default()
            };
            Some((connection, client))
        })
        .collect();
    for ch in items(channels) {
        let published = ch["message_stats"]["publish"].as_u64().unwrap_or(0);
        let (Some(connection), Some(name)) = (str_of(&ch["connection_details"]["name"]), str_of(&ch["name"])) else {
            continue;
        };
        // A channel of a connection opened since the connections were listed.
        let Some(client) = by_name.get_mut(&connection) else { continue };
        if published > 0 {
            client.published += published;
            client.publishing_channels.push(name);
        }
    }
    by_name.into_values().collect()
}

/// The exchanges a channel's details say it published to (`publishes`,
/// kept with `management.rates_mode = detailed` only); the default
/// exchange is `""`.
pub(super) fn exchanges(channel: &Json) -> BTreeSet<String> {
    items(&channel["publishes"])
        .filter_map(|p| p["exchange"]["name"].as_str())
        .map(|x| if x == "amq.default" { String::new() } else { x.to_string() })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// As RabbitMQ 3.10.8 with `rates_mode = detailed` answers (checked on
    /// a test node); with `basic`, 3.10.8 and 4.0.5 list `publishes: []`.
    #[test]
    fn a_connections_publishing_channels_and_their_exchanges() {
        let connections = json!([
            {"name": "127.0.0.1:5 -> 127.0.0.1:5672", "user": "shop", "user_provided_name": "storefront-1"},
            {"name": "127.0.0.1:6 -> 127.0.0.1:5672", "user": "billing", "client_properties": {}},
        ]);
        let channels = json!([
            {"name": "127.0.0.1:5 -> 127.0.0.1:5672 (1)", "connection_details": {"name": "127.0.0.1:5 -> 127.0.0.1:5672"},
             "message_stats": {"publish": 89}},
            {"name": "127.0.0.1:5 -> 127.0.0.1:5672 (2)", "connection_details": {"name": "127.0.0.1:5 -> 127.0.0.1:5672"}},
            {"name": "127.0.0.1:6 -> 127.0.0.1:5672 (1)", "connection_details": {"name": "127.0.0.1:6 -> 127.0.0.1:5672"},
             "message_stats": {"publish": 0}},
        ]);
        let names = client_names(&connections);
        let listed = super::connections(&connections, &channels, &names);
        assert_eq!(listed.len(), 2);
        let billing = &listed[1];
        assert_eq!((billing.user.as_str(), billing.published, billing.client_name.as_deref()), ("billing", 0, None));
        let shop = &listed[0];
        assert_eq!(shop.client_name.as_deref(), Some("storefront-1"));
        assert_eq!((shop.published, shop.publishing_channels.len()), (89, 1));
        let detail = json!({"publishes": [
            {"exchange": {"name": "probe.x", "vhost": "v"}, "stats": {"publish": 109}},
            {"exchange": {"name": "amq.default", "vhost": "v"}, "stats": {"publish": 1}},
        ]});
        assert_eq!(exchanges(&detail), BTreeSet::from(["".to_string(), "probe.x".to_string()]));
        assert!(exchanges(&json!({"publishes": []})).is_empty());
    }
}
