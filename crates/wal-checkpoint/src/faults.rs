//! Fault injection for tests: a [`FaultPlan`] in [`crate::Options`] makes the N-th log write or
//! fsync fail, or turns a write into a short write followed by "no space left on device". Every
//! write and fsync of log segments and checkpoints goes through [`write_all`] and [`sync`].
//!
//! The changes that repair or prune the log (recovery's deletions, cuts and heartbeats, the cut
//! note, a checkpoint's rename and the deletions after it) and their fsyncs go through
//! [`remove_file`], [`rename`], [`write_new`], [`set_len`], [`write_at`], [`sync_file`] and
//! [`sync_dir`]. In tests, a `Machine` on the calling thread tracks which of those changes are
//! durable yet, and stops them where a crash would (the `recovery::power_loss` tests).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

#[cfg(test)]
pub(crate) use machine::{FileChange, Machine, Pending};

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

/// Removes the file at `path`: a change to its directory, durable once that is fsynced.
pub(crate) fn remove_file(path: &Path) -> io::Result<()> {
    #[cfg(test)]
    let before = machine::before_change(path)?;
    fs::remove_file(path)?;
    #[cfg(test)]
    machine::changed(path, before, FileChange::Removed);
    Ok(())
}

/// Renames `from`, whose data is fsynced, to `to`: a change to their directory.
pub(crate) fn rename(from: &Path, to: &Path) -> io::Result<()> {
    #[cfg(test)]
    let (source, target) = (machine::before_change(from)?, machine::read(to));
    fs::rename(from, to)?;
    #[cfg(test)]
    machine::renamed(from, to, source, target);
    Ok(())
}

/// Creates (or truncates) the file at `path`, writes `bytes` and fsyncs it: its data is
/// durable on return, its directory entry once the directory is fsynced.
pub(crate) fn write_new(path: &Path, bytes: &[u8]) -> io::Result<()> {
    #[cfg(test)]
    let before = machine::before_change(path)?;
    let mut file = File::create(path)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    #[cfg(test)]
    machine::changed(path, before, FileChange::Replaced(bytes.to_vec()));
    Ok(())
}

/// Cuts or extends the file at `path` to `len` bytes: durable once the file is fsynced.
pub(crate) fn set_len(path: &Path, len: u64) -> io::Result<()> {
    #[cfg(test)]
    let before = machine::before_change(path)?;
    OpenOptions::new().write(true).open(path)?.set_len(len)?;
    #[cfg(test)]
    machine::changed(path, before, FileChange::SetLen(len));
    Ok(())
}

/// Writes `bytes` at offset `at` of the file at `path`: durable once the file is fsynced.
pub(crate) fn write_at(path: &Path, at: u64, bytes: &[u8]) -> io::Result<()> {
    #[cfg(test)]
    let before = machine::before_change(path)?;
    let mut file = OpenOptions::new().write(true).open(path)?;
    file.seek(SeekFrom::Start(at))?;
    file.write_all(bytes)?;
    #[cfg(test)]
    machine::changed(path, before, FileChange::Written(at, bytes.to_vec()));
    Ok(())
}

/// Fsyncs the file at `path` (`fsync`: its data and its size).
pub(crate) fn sync_file(path: &Path) -> io::Result<()> {
    #[cfg(test)]
    machine::crash_point()?;
    OpenOptions::new().write(true).open(path)?.sync_all()?;
    #[cfg(test)]
    machine::file_synced(path);
    Ok(())
}

/// Fsyncs a directory, so that files created, renamed or removed in it stay so.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(test)]
    machine::crash_point()?;
    File::open(dir)?.sync_all()?;
    #[cfg(test)]
    machine::dir_synced(dir);
    Ok(())
}

/// The simulated machine of the crash and power-loss tests.
#[cfg(test)]
mod machine {
    use std::cell::RefCell;
    use std::fs;
    use std::io;
    use std::path::{Path, PathBuf};

    /// What a file holds: `None` when it does not exist.
    pub(crate) type Content = Option<Vec<u8>>;

    /// A change to a file, as the power-loss tests replay it.
    #[derive(Debug, Clone)]
    pub(crate) enum FileChange {
        /// The file was removed (unlinked, or renamed away): a change to its directory.
        Removed,
        /// The file now holds these bytes, fsynced (created, or renamed over): a change to its
        /// directory.
        Replaced(Vec<u8>),
        /// The file was cut or extended to this length: a change to its data.
        SetLen(u64),
        /// These bytes were written at this offset: a change to its data.
        Written(u64, Vec<u8>),
    }

    impl FileChange {
        /// Whether an fsync of the file's directory (rather than of the file) makes it durable.
        fn in_directory(&self) -> bool {
            matches!(self, FileChange::Removed | FileChange::Replaced(_))
        }
    }

    /// A change that is not durable yet.
    #[derive(Debug, Clone)]
    pub(crate) struct Pending {
        /// The file changed.
        pub path: PathBuf,
        /// What it held just before.
        pub before: Content,
        /// The change.
        pub change: FileChange,
    }

    /// The machine that the crash and power-loss tests simulate: the changes that the tracked
    /// operations made and that are not durable yet (a crash keeps them all, in the page cache;
    /// a power loss may keep any of them), and when the crash comes.
    #[derive(Debug, Default)]
    pub(crate) struct Machine {
        /// Changes not durable yet, oldest first.
        pub pending: Vec<Pending>,
        /// How many more tracked operations run before the crash; `None`: no crash.
        pub ops_before_crash: Option<usize>,
        /// Whether the crash came: the operation it stopped failed, and so does every later one.
        pub crashed: bool,
    }

    thread_local! {
        /// The machine that this thread's tracked operations run on, while [`Machine::run`]
        /// runs; without one, they are only the operations.
        static MACHINE: RefCell<Option<Machine>> = const { RefCell::new(None) };
    }

    impl Machine {
        /// A machine that crashes before its tracked operation number `ops` (from 0).
        pub fn crashing_after(ops: usize) -> Self {
            Self {
                ops_before_crash: Some(ops),
                ..Self::default()
            }
        }

        /// Runs `f` with this machine under the tracked operations of this thread.
        pub fn run<R>(&mut self, f: impl FnOnce() -> R) -> R {
            MACHINE.set(Some(std::mem::take(self)));
            let result = f();
            *self = MACHINE.take().expect("the machine is still installed");
            result
        }
    }

    /// Comes before each tracked operation: fails, as a crash stops the process, once the
    /// machine's operations before its crash are spent.
    pub(super) fn crash_point() -> io::Result<()> {
        MACHINE.with_borrow_mut(|machine| {
            let Some(machine) = machine else {
                return Ok(());
            };
            match machine.ops_before_crash {
                Some(0) => {
                    machine.crashed = true;
                    Err(io::Error::other("simulated crash"))
                }
                Some(left) => {
                    machine.ops_before_crash = Some(left - 1);
                    Ok(())
                }
                None => Ok(()),
            }
        })
    }

    /// What the file at `path` holds, when a machine runs (`None` otherwise).
    pub(super) fn read(path: &Path) -> Option<Content> {
        MACHINE
            .with_borrow(Option::is_some)
            .then(|| fs::read(path).ok())
    }

    /// The crash point before a change to the file at `path`, then what the file holds.
    pub(super) fn before_change(path: &Path) -> io::Result<Option<Content>> {
        crash_point()?;
        Ok(read(path))
    }

    /// Records `change` to the file at `path`, which held `before`, as pending.
    pub(super) fn changed(path: &Path, before: Option<Content>, change: FileChange) {
        MACHINE.with_borrow_mut(|machine| {
            if let (Some(machine), Some(before)) = (machine, before) {
                machine.pending.push(Pending {
                    path: path.to_owned(),
                    before,
                    change,
                });
            }
        });
    }

    /// Records the rename of `from`, which held `source`, over `to`, which held `target`.
    pub(super) fn renamed(
        from: &Path,
        to: &Path,
        source: Option<Content>,
        target: Option<Content>,
    ) {
        if let (Some(source), Some(target)) = (source, target) {
            let moved = FileChange::Replaced(source.clone().unwrap_or_default());
            changed(to, Some(target), moved);
            changed(from, Some(source), FileChange::Removed);
        }
    }

    /// The changes to the data of the file at `path` are durable.
    pub(super) fn file_synced(path: &Path) {
        durable(|pending| pending.path == path && !pending.change.in_directory());
    }

    /// The changes to the entries of `dir` are durable, and with a removal, the file's data.
    pub(super) fn dir_synced(dir: &Path) {
        let in_dir = |pending: &Pending| pending.path.parent() == Some(dir);
        let removed: Vec<PathBuf> = MACHINE.with_borrow(|machine| {
            let pending = machine.iter().flat_map(|machine| &machine.pending);
            pending
                .filter(|pending| in_dir(pending) && matches!(pending.change, FileChange::Removed))
                .map(|pending| pending.path.clone())
                .collect()
        });
        durable(|pending| {
            in_dir(pending) && (pending.change.in_directory() || removed.contains(&pending.path))
        });
    }

    /// Drops the pending changes that `is_durable` says are durable now.
    fn durable(is_durable: impl Fn(&Pending) -> bool) {
        MACHINE.with_borrow_mut(|machine| {
            if let Some(machine) = machine {
                machine.pending.retain(|pending| !is_durable(pending));
            }
        });
    }
}
