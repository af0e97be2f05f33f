//! warren's tests, one binary: each module is one part of the product, and
//! `common` holds what they share (the real binary, the test broker, the
//! test traffic).
//!
//! The tests that need a RabbitMQ node are `#[ignore]`d with the reason
//! "needs a broker": plain `cargo test` runs the others anywhere, and
//! `scripts/test` starts the private nodes and runs them all
//! (`-- --include-ignored`).

mod common;

mod amqp_broker;
mod apply;
mod apply_settings;
mod architecture;
mod broker_behaviour;
mod ci;
mod diff;
mod docs;
mod docs_walk;
mod environments;
mod environments_broker;
mod export;
mod findings;
mod fmt;
mod graph;
mod history;
mod import;
mod import_broker;
mod import_services;
mod init;
mod lint;
mod lint_broker;
mod live;
mod live_broker;
mod migrate;
mod narrow;
mod plan;
mod properties;
mod rabbitmq4;
mod realworld_broker;
mod records;
mod route;
mod routing_conformance;
mod routing_tests;
mod saved_plan;
mod services;
mod services_live;
mod shapes;
mod shovels;
mod super_streams;
mod traffic;
mod trust;
mod validate;
