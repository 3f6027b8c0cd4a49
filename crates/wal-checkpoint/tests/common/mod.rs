//! Helpers shared by the wal-checkpoint integration tests.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use wal_checkpoint::{Durability, Options, Recovery};

/// The model of a recovered state.
pub type Model = BTreeMap<(u32, Vec<u8>), Vec<u8>>;

/// A fresh directory under the target directory's `tmp/` (cargo's `CARGO_TARGET_TMPDIR`),
/// removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let base = option_env!("CARGO_TARGET_TMPDIR")
            .map(PathBuf::from)
            .unwrap_or_else(std::env::temp_dir);
        let dir = base.join(format!(
            "wal-{name}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create the test directory");
        Self(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

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
