//! Dynamic shovels: a vhost's runtime parameters of component `shovel`
//! (the `rabbitmq_shovel` plugin, `rabbit_shovel_parameters`), each moving
//! messages from a source (a queue, an exchange, an AMQP 1.0 address) to a
//! destination, on this broker or another.

use super::{Attribute, Fixed, Kind, Object, Phase, Request, Scope, Type, parameter};

const COMPONENT: &str = "shovel";
const PROTOCOLS: &[&str] = &["amqp091", "amqp10"];

pub(super) static KIND: Kind = Kind {
    name: "shovel",
    table: "shovels",
    scope: Scope::Vhost,
    identity: &[Attribute { immutable: true, ..Attribute::required("name", Type::String, "the shovel's name") }],
    attributes: &[
        Attribute::defaulted("src-protocol", Type::OneOf(PROTOCOLS), Fixed::Str("amqp091"), "the source's protocol"),
        Attribute::required(
            "src-uri",
            Type::Uris,
            "the source broker: `amqp:///` for this one; a credential must come from the environment",
        )
        .secret(),
        Attribute::optional("src-queue", Type::String, "AMQP 0-9-1: the queue to consume from"),
        Attribute::optional(
            "src-exchange",
            Type::String,
            "AMQP 0-9-1: the exchange to bind a queue of the shovel's own to",
        ),
        Attribute::optional("src-exchange-key", Type::String, "AMQP 0-9-1: that binding's key"),
        Attribute::optional("src-address", Type::String, "AMQP 1.0: the address to consume from"),
        Attribute::defaulted(
            "src-prefetch-count",
            Type::Integer,
            Fixed::Int(1000),
            "how many messages in flight at most",
        ),
        Attribute::defaulted(
            "src-delete-after",
            Type::OneOfOrInteger(&["never", "queue-length"]),
            Fixed::Str("never"),
            "when the shovel deletes itself: never, after the messages the queue held when it started, or after this many",
        ),
        Attribute::optional("src-consumer-args", Type::Any, "AMQP 0-9-1: the arguments of the shovel's consumer"),
        Attribute::optional(
            "src-predeclared",
            Type::Boolean,
            "AMQP 0-9-1: use the source queue as it is, never declare it",
        ),
        Attribute::defaulted(
            "dest-protocol",
            Type::OneOf(PROTOCOLS),
            Fixed::Str("amqp091"),
            "the destination's protocol",
        ),
        Attribute::required(
            "dest-uri",
            Type::Uris,
            "the destination broker; a credential must come from the environment",
        )
        .secret(),
        Attribute::optional("dest-queue", Type::String, "AMQP 0-9-1: the queue to publish to"),
        Attribute::optional("dest-exchange", Type::String, "AMQP 0-9-1: the exchange to publish to"),
        Attribute::optional(
            "dest-exchange-key",
            Type::String,
            "AMQP 0-9-1: the routing key to publish with (else the message's own)",
        ),
        Attribute::optional("dest-address", Type::String, "AMQP 1.0: the address to publish to"),
        Attribute::optional(
            "dest-predeclared",
            Type::Boolean,
            "AMQP 0-9-1: use the destination queue as it is, never declare it",
        ),
        Attribute::optional(
            "dest-queue-args",
            Type::Any,
            "AMQP 0-9-1: the arguments the destination queue is declared with",
        ),
        Attribute::defaulted(
            "dest-add-forward-headers",
            Type::Boolean,
            Fixed::Bool(false),
            "add headers that say where the message was shovelled from",
        ),
        Attribute::defaulted(
            "dest-add-timestamp-header",
            Type::Boolean,
            Fixed::Bool(false),
            "add a header with the time it was shovelled",
        ),
        Attribute::optional("dest-publish-properties", Type::Any, "AMQP 0-9-1: message properties to set"),
        Attribute::optional("dest-properties", Type::Any, "AMQP 1.0: message properties to set"),
        Attribute::optional("dest-application-properties", Type::Any, "AMQP 1.0: application properties to set"),
        Attribute::optional("dest-message-annotations", Type::Any, "AMQP 1.0: message annotations to set"),
        Attribute::defaulted(
            "ack-mode",
            parameter::ACK_MODES,
            Fixed::Str("on-confirm"),
            "when a message is acknowledged at the source: `on-confirm` loses none",
        ),
        parameter::RECONNECT_DELAY,
    ],
    about: "A dynamic shovel: it consumes from a source (a queue, an exchange, an AMQP 1.0 address) and \
            publishes to a destination, on this broker or another. Keys are the broker's own. A URI that \
            carries a password is written `{ env = \"VARIABLE\" }` (or an array of such), read from the \
            environment when warren plans and applies; plans show a digest of it. A change restarts the \
            shovel; with `ack-mode = \"on-confirm\"` no message is lost.",
    since: (3, 7),
    plugin: Some("rabbitmq_shovel"),
    definitions: "parameters",
    listing: None,
    portable: true,
    // With on-confirm (the default) a message the shovel holds unconfirmed
    // goes back to its source queue when the shovel stops.
    destroy_loses: None,
    read,
    write,
    put,
    delete,
    check: None,
    phase: Phase::PutObject,
};

/// Keys RabbitMQ before 3.8 wrote, as they are called now.
const RENAMED: &[(&str, &str)] = &[
    ("prefetch-count", "src-prefetch-count"),
    ("delete-after", "src-delete-after"),
    ("add-forward-headers", "dest-add-forward-headers"),
    ("add-timestamp-header", "dest-add-timestamp-header"),
    ("publish-properties", "dest-publish-properties"),
];

parameter::parameter_functions!(COMPONENT, RENAMED);
