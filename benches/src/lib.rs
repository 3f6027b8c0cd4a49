//! Shared code of learnkv's benchmarks: inputs, adapters and reports used by the bench targets
//! in `benches/`. Peers (the crates learnkv is measured against) are dependencies of this
//! package only, so `cargo test` at the workspace root never compiles them.

pub mod model_inputs;
