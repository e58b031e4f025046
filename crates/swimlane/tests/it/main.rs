//! Integration tests of `simpler-swimlane`, one binary, modules by topic.

mod analysis;
mod checker;
mod deps_file;
mod predict_props;
mod predicted_files;
mod queues;
mod recording;
mod synth;
