//! The topology model shared by the desired and the live state.

mod arguments;
mod effective;
mod grant;
mod graph;
mod inventory;
mod key;
mod key_set;
pub mod kinds;
mod ownership;
mod policy_keys;
mod progress;
mod record_format;
mod record_kind;
mod record_parts;
mod records;
pub mod scaffold;
pub mod services;
mod set_builder;
mod super_stream;
mod topology;
mod value;
pub mod views;

pub use arguments::{ArgumentRule, Expect, QUEUE_ARGUMENTS, argument_rule, check_expect, is_age};
pub use effective::{Matcher, SetBy, applied_to_queue, matching_queue, precedence, queue_setting};
pub use grant::{Narrowed, grants, narrowed};
pub use graph::{LazyGraph, Node, RoutingGraph, around};
pub use inventory::{BROKER_GLOBAL_PARAMETERS, INVENTORY_PARAMETER, Inventory, binding_json, exported_bindings};
pub use key::{ObjectKey, is_removed};
pub use key_set::KeySet;
pub use ownership::{DEFAULT_PROJECT, Ownership, is_shared};
pub use policy_keys::{
    POLICY_KEYS, PolicyKey, Resolution, definition_findings, policy_key, resolution, unsupported_by,
};
pub use progress::Progress;
pub use record_format::{RECORD_FORMAT, RecordError};
pub use record_kind::RecordKind;
pub use record_parts::{
    Layout, PART_BYTES, SPLIT_FORMAT, SplitIndex, exchange_layout, exchange_part_name, exchange_part_of,
    exchange_parts, is_part_of, join, joined_text, layout, part_name, part_slot,
};
pub use records::{Generations, JOURNAL_PARAMETER, Place, RECORD_ARGUMENT, RecordWrite, Records};
pub use set_builder::SetBuilder;
pub use super_stream::{
    DEFAULT_LEADER_LOCATOR, Expanded, PARTITION_ORDER_ARGUMENT, Partitions, SUPER_STREAM_ARGUMENT, SUPER_STREAMS_SINCE,
    SuperStream, is_super_stream_exchange, partitions_of, super_streams,
};
pub use topology::*;
pub use value::{Table, Value};

/// The closest of `candidates` to `word`, when it is close enough to be a typo.
pub fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(word, c), c))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}
