//! Federation upstreams: a vhost's runtime parameters of component
//! `federation-upstream` (the `rabbitmq_federation` plugin,
//! `rabbit_federation_parameters`). A policy's `federation-upstream` or
//! `federation-upstream-set` key makes exchanges or queues federated from them.

use super::{Attribute, Fixed, Kind, Object, Phase, Request, Scope, Type, parameter};

const COMPONENT: &str = "federation-upstream";

pub(super) static KIND: Kind = Kind {
    name: "federation upstream",
    table: "federation_upstreams",
    scope: Scope::Vhost,
    identity: &[Attribute { immutable: true, ..Attribute::required("name", Type::String, "the upstream's name") }],
    attributes: &[
        Attribute::required("uri", Type::Uris, "the upstream broker; a credential must come from the environment")
            .secret(),
        Attribute::defaulted("prefetch-count", Type::Integer, Fixed::Int(1000), "how many messages in flight at most"),
        parameter::RECONNECT_DELAY,
        Attribute::defaulted(
            "ack-mode",
            parameter::ACK_MODES,
            Fixed::Str("on-confirm"),
            "when a message is acknowledged upstream: `on-confirm` loses none",
        ),
        Attribute::defaulted(
            "trust-user-id",
            Type::Boolean,
            Fixed::Bool(false),
            "pass on a message's user id as it is",
        ),
        Attribute::optional(
            "exchange",
            Type::String,
            "exchange federation: the upstream exchange (else the same name)",
        ),
        Attribute::defaulted(
            "max-hops",
            Type::Integer,
            Fixed::Int(1),
            "exchange federation: how many links a message may cross",
        ),
        Attribute::optional(
            "expires",
            Type::Integer,
            "exchange federation: the upstream queue's expiry, in milliseconds",
        ),
        Attribute::optional(
            "message-ttl",
            Type::Integer,
            "exchange federation: the upstream queue's message TTL, in milliseconds",
        ),
        Attribute::optional("queue", Type::String, "queue federation: the upstream queue (else the same name)"),
        Attribute::optional("consumer-tag", Type::String, "queue federation: the consumer tag of the link"),
        Attribute::optional(
            "bind-nowait",
            Type::Boolean,
            "exchange federation: bind without waiting for the broker's answer",
        ),
        Attribute::optional(
            "resource-cleanup-mode",
            Type::OneOf(&["default", "never"]),
            "`never` keeps the upstream's internal queue when the link goes",
        ),
        Attribute::optional(
            "channel-use-mode",
            Type::OneOf(&["multiple", "single"]),
            "`single` uses one channel for the link's consumer and its commands",
        ),
        Attribute::optional(
            "queue-type",
            Type::OneOf(&["classic", "quorum"]),
            "exchange federation, RabbitMQ 3.13 and later: the type of the upstream's internal queue",
        ),
    ],
    about: "A federation upstream: a broker that exchanges or queues of this vhost receive messages from, \
            when a policy's `federation-upstream` or `federation-upstream-set` key names it. Keys are the \
            broker's own. A URI that carries a password is written `{ env = \"VARIABLE\" }` (or an array \
            of such), read from the environment when warren plans and applies; plans show a digest of it.",
    since: (3, 7),
    plugin: Some("rabbitmq_federation"),
    definitions: "parameters",
    listing: None,
    portable: true,
    // Messages already federated stay where they are; the link's internal
    // upstream queue is the plugin's own.
    destroy_loses: None,
    read,
    write,
    put,
    delete,
    check: None,
    phase: Phase::PutObject,
};

parameter::parameter_functions!(COMPONENT, &[]);
