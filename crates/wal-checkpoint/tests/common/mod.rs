//! Helpers shared by the wal-checkpoint integration tests.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use test_support::TempDir;
use wal_checkpoint::{Durability, Options, Recovery};

/// The model of a recovered state.
pub type Model = BTreeMap<(u32, Vec<u8>), Vec<u8>>;

/// Options for tests: `lanes` lanes, the given durability, no background checkpoints.
pub fn options(lanes: usize, durability: Durability) -> Options {
    Options {
        durability,
        lanes,
        checkpoint_interval: None,
        ..Options::default()
    }
}

/// The recovered state as a map.
pub fn state(recovery: &Recovery) -> Model {
    recovery.to_map()
}

/// The segment files of the log in `dir`, sorted by name.
pub fn segments(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join("wal"))
        .expect("wal dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    files.sort();
    files
}

/// The checkpoint files in `dir`, sorted by name.
pub fn checkpoints(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "ckpt"))
        .collect();
    files.sort();
    files
}
