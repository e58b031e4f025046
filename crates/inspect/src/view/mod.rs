//! What `simpler dump view` shows: filters ([`filter`]), the summary
//! ([`mod@summary`]) and the record table printed a page at a time ([`mod@table`]).

pub mod filter;
pub mod summary;
pub mod table;

pub use filter::{parse_kind, parse_role_arg, parse_stage, parse_task, Filter, Seen};
pub use summary::{footer, summary};
pub use table::{fmt_func_ids, fmt_scalar, fmt_shape, preview, table, Table, PREVIEW_VALUES};
