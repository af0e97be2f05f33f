//! One module per command: each reads its inputs, runs the pipeline and
//! prints the outcome.

pub mod abort;
pub mod adopt;
pub mod apply;
mod confirm;
pub mod export;
pub mod import;
pub mod live_side;
pub mod plan;
pub mod planned;
mod refusal;
pub mod saved_plan;
pub mod session;
pub mod status;
pub mod validate;
