//! Shared code of learnkv's benchmarks: inputs, adapters and reports used by the bench targets
//! in `benches/`. Peers (the crates learnkv is measured against) are dependencies of this
//! package only, so `cargo test` at the workspace root never compiles them.
//!
//! The reproduction entry point `cargo bench --bench repro -- EXPERIMENT [options]` (see
//! `benches/README.md`) is built from: [`args`] (the command line), [`registry`] (every index by
//! name: [`adapters`] for the peers, [`oracle`]), [`stores`] (the embedded key-value stores of the
//! `engine` experiment), [`experiments`] (one module per paper experiment), [`measure`] (how each
//! index is measured), [`output`] and [`plot`] (table, CSV, SVG) and [`alloc_counter`] (memory per
//! key).

pub mod adapters;
pub mod alloc_counter;
pub mod args;
pub mod error;
pub mod experiments;
pub mod measure;
pub mod model_inputs;
pub mod oracle;
pub mod output;
pub mod plot;
pub mod registry;
pub mod stores;
