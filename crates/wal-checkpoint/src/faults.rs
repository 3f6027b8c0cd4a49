//! Fault injection for tests: a [`FaultPlan`] in [`crate::Options`] makes the N-th log write or
//! fsync fail, or turns a write into a short write followed by "no space left on device". Every
//! write and fsync of log segments and checkpoints goes through [`write_all`] and [`sync`].

use std::fs::File;
use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};

/// Which I/O calls fail. Counting starts at 1; 0 means never. Shared through an `Arc`, so a test
/// can arm a fault after opening the log.
#[derive(Debug, Default)]
pub struct FaultPlan {
    writes: AtomicU64,
    syncs: AtomicU64,
    fail_write: AtomicU64,
    fail_sync: AtomicU64,
    enospc_write: AtomicU64,
}

impl FaultPlan {
    /// A plan that injects nothing (yet).
    pub fn new() -> Self {
        Self::default()
    }

    /// Makes the `n`-th write from now fail with an I/O error, writing nothing.
    pub fn fail_write_after(&self, n: u64) {
        let now = self.writes.load(Ordering::SeqCst);
        self.fail_write.store(now + n, Ordering::SeqCst);
    }

    /// Makes the `n`-th fsync from now fail with an I/O error.
    pub fn fail_sync_after(&self, n: u64) {
        let now = self.syncs.load(Ordering::SeqCst);
        self.fail_sync.store(now + n, Ordering::SeqCst);
    }

    /// Makes the `n`-th write from now write half its bytes and then fail with `ENOSPC`, as a
    /// full disk does.
    pub fn enospc_after(&self, n: u64) {
        let now = self.writes.load(Ordering::SeqCst);
        self.enospc_write.store(now + n, Ordering::SeqCst);
    }

    /// How many writes and fsyncs went through the plan.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.writes.load(Ordering::SeqCst),
            self.syncs.load(Ordering::SeqCst),
        )
    }
}

/// `file.write_all(bytes)`, unless `plan` says this write fails.
pub(crate) fn write_all(file: &mut File, bytes: &[u8], plan: Option<&FaultPlan>) -> io::Result<()> {
    if let Some(plan) = plan {
        let n = plan.writes.fetch_add(1, Ordering::SeqCst) + 1;
        if plan.fail_write.load(Ordering::SeqCst) == n {
            return Err(io::Error::other("injected write failure"));
        }
        if plan.enospc_write.load(Ordering::SeqCst) == n {
            file.write_all(&bytes[..bytes.len() / 2])?;
            return Err(io::Error::from_raw_os_error(28));
        }
    }
    file.write_all(bytes)
}

/// `file.sync_data()`, unless `plan` says this fsync fails.
pub(crate) fn sync(file: &File, plan: Option<&FaultPlan>) -> io::Result<()> {
    if let Some(plan) = plan {
        let n = plan.syncs.fetch_add(1, Ordering::SeqCst) + 1;
        if plan.fail_sync.load(Ordering::SeqCst) == n {
            return Err(io::Error::other("injected fsync failure"));
        }
    }
    file.sync_data()
}

/// Fsyncs a directory, so that files created, renamed or removed in it stay so.
pub(crate) fn sync_dir(dir: &std::path::Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}
