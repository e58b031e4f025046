//! Integration tests of `simpler-swimlane`.
