//! Large deterministic definitions for scale tests and benchmarks. The
//! generator lives in the library (`warren::testing`) so that benches, tests
//! and tools share one copy; this module is where tests find it.

#![allow(unused_imports)]

pub(crate) use warren::testing::generate::{VHOST, exchange_name, queue_name};
pub(crate) use warren::testing::{large_definitions, large_topology};
