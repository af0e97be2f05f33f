//! What the tests of `warren route` and `warren test` share: the head of
//! their topologies.

/// Vhost `shop` with a topic exchange `orders` whose alternate exchange is
/// the fanout `unrouted`: where each routing test's topology starts.
const SHOP_HEAD: &str = r#"vhosts = ["shop"]

[exchanges.orders]
type = "topic"
arguments = { alternate-exchange = "unrouted" }

[exchanges.unrouted]
type = "fanout"

"#;

/// A topology of vhost `shop`: [`SHOP_HEAD`], then `rest`.
pub(crate) fn shop(rest: &str) -> String {
    format!("{SHOP_HEAD}{rest}")
}
