//! One module per command: each reads its inputs, runs the pipeline and
//! prints the outcome.

pub mod import;
pub mod validate;
