//! The write-ahead log: lanes, the logical clock, writes and batches (conditional ones too)
//! under the striped key locks of [`crate::KeyLocks`], the group-commit thread and checkpoints
//! (XIndex §5; DESIGN.md "Durability for DRAM indexes").

use std::cell::Cell;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use concurrency::workers::Workers;
use parking_lot::Mutex;

use crate::checkpoint::{self, CheckpointWriter};
use crate::commit::{GroupCommit, Turn};
use crate::error::{Error, Result};
use crate::faults::{self, FaultPlan};
use crate::format::{self, BatchOp, MAX_PAYLOAD};
use crate::key_locks::KeyLocks;
use crate::lane::{self, Chain, Lane, LaneBuf, SegmentFile};
use crate::recovery::{self, Recovery};

/// When a write's log record is durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// No background rounds and no fsync on the write path. Records reach the segment files
    /// when a lane's buffer fills, and a group-commit round (heartbeats, write, fsync) runs only
    /// at [`Wal::sync`], checkpoints and a clean close. After a crash, recovery holds every
    /// write that returned before the last such round, and a prefix-consistent state: lanes
    /// without heartbeats hold the safe timestamp back, so later writes may be dropped even if
    /// their bytes reached a file.
    None,
    /// The committer thread writes and fsyncs every lane each interval (the paper's logger,
    /// 200 ms by default): a write is durable at most about one interval after it returns.
    Periodic(Duration),
    /// A write returns only after a group-commit round covering it has fsynced every lane;
    /// concurrent writers share the round's fsyncs.
    Immediate,
}

/// The most lanes a log has ([`Options::lanes`]). A file named for a lane beyond them is no
/// segment of the log: recovery leaves it alone, as it does every foreign file.
pub const MAX_LANES: usize = 4096;

/// How a [`Wal`] runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// When writes are durable. Default: `Periodic(200 ms)`.
    pub durability: Durability,
    /// Lanes (per-thread buffers, each with its own segment files), in `1..=4096`. Default:
    /// the machine's available parallelism. Reopening with fewer lanes keeps the extra lanes
    /// of the files (they only get heartbeats).
    pub lanes: usize,
    /// A lane starts a new segment once its current one holds this many bytes. Default 64 MiB.
    pub segment_bytes: u64,
    /// A writer writes its lane's buffer to the file itself (no fsync) past this size.
    /// Default 1 MiB.
    pub buffer_bytes: usize,
    /// Key-lock stripes, in `1..=2^20` (rounded up to a power of two). Default 65,536: a batch
    /// holds the stripes of all its keys while it applies them.
    pub stripes: usize,
    /// The period of the background checkpointer ([`Wal::start_checkpointer`]); `None`
    /// disables it. Default 30 s.
    pub checkpoint_interval: Option<Duration>,
    /// Recover past corruption: a lane is ended at its first bad frame (and reported in
    /// [`crate::RecoveryStats::tolerated`]) instead of failing with [`Error::Corrupt`].
    pub tolerate_corruption: bool,
    /// Fault injection for tests.
    pub faults: Option<Arc<FaultPlan>>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            durability: Durability::Periodic(Duration::from_millis(200)),
            lanes: std::thread::available_parallelism().map_or(2, |n| n.get()),
            segment_bytes: 64 << 20,
            buffer_bytes: 1 << 20,
            stripes: 1 << 16,
            checkpoint_interval: Some(Duration::from_secs(30)),
            tolerate_corruption: false,
            faults: None,
        }
    }
}

/// What a checkpoint wrote.
#[derive(Debug, Clone)]
pub struct CheckpointStats {
    /// The checkpoint file.
    pub path: PathBuf,
    /// Stamped before the scan.
    pub t_begin: u64,
    /// Stamped after the scan.
    pub t_end: u64,
    /// Entries written.
    pub entries: u64,
    /// The file's size.
    pub bytes: u64,
    /// Log segments deleted because the checkpoint covers them.
    pub segments_deleted: usize,
    /// Wall-clock time, scan through deletion.
    pub elapsed: Duration,
}

/// Counters of a running log.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WalStats {
    /// Bytes written to segment files (headers excluded).
    pub bytes_written: u64,
    /// Group-commit rounds that wrote something.
    pub rounds: u64,
    /// Checkpoints written.
    pub checkpoints: u64,
}

/// State shared by the handle, the committer and the checkpointer.
struct Shared {
    dir: PathBuf,
    wal_dir: PathBuf,
    options: Options,
    clock: AtomicU64,
    lanes: Vec<Lane>,
    /// Lanes threads are assigned to (lanes beyond it exist only for old files' heartbeats).
    writer_lanes: usize,
    locks: KeyLocks,
    commit: GroupCommit,
    checkpointing: Mutex<()>,
    bytes_written: AtomicU64,
    rounds: AtomicU64,
    checkpoints: AtomicU64,
}

/// A write-ahead log with group commit and fuzzy checkpoints, for any index.
///
/// ```
/// use std::collections::BTreeMap;
/// use parking_lot::Mutex;
/// use wal_checkpoint::{Durability, Options, Wal};
///
/// let dir = std::env::temp_dir().join(format!("wal-doc-{}", std::process::id()));
/// # let _ = std::fs::remove_dir_all(&dir);
/// let options = Options { durability: Durability::Immediate, ..Options::default() };
/// let index = Mutex::new(BTreeMap::new());
/// {
///     let (wal, recovery) = Wal::open(&dir, options.clone())?;
///     assert_eq!(recovery.iter().count(), 0);
///     wal.put(0, b"k", b"v", || index.lock().insert(b"k".to_vec(), b"v".to_vec()))?;
/// }
/// let (_wal, recovery) = Wal::open(&dir, options)?;
/// assert_eq!(recovery.iter().collect::<Vec<_>>(), [(0, &b"k"[..], &b"v"[..])]);
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), wal_checkpoint::Error>(())
/// ```
pub struct Wal {
    shared: Arc<Shared>,
    committer: Option<JoinHandle<()>>,
    checkpointer: Mutex<Option<Workers>>,
}

impl std::fmt::Debug for Wal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wal")
            .field("dir", &self.shared.dir)
            .field("lanes", &self.shared.lanes.len())
            .finish_non_exhaustive()
    }
}

/// Recovers the state of the log in `dir` as [`Wal::open`] would, without changing any file
/// (torn tails are not cut, no segment is started): for tools, tests and benchmarks. A [`Wal`]
/// may hold the directory open but must not write meanwhile (call [`Wal::sync`] first and stop
/// its writers). It reads what the operating system returns, which may include records never
/// fsynced (a process killed before its sync leaves them in the page cache), and it fsyncs
/// nothing: a power loss before they reach the disk takes them back, so a later recovery may
/// return less. [`Wal::open`] fsyncs what it recovered before it returns.
pub fn recover_read_only(dir: impl AsRef<Path>, options: &Options) -> Result<Recovery> {
    let dir = dir.as_ref();
    Ok(recovery::recover(dir, &dir.join("wal"), options.tolerate_corruption, false)?.recovery)
}

/// Starts a new segment in every lane of the recovered log, and in the lanes `options` adds,
/// each with a heartbeat stamped from `clock`. If one cannot be created, the segments this
/// call created are removed again (as far as that succeeds: the error returned is the one that
/// stopped the creation), so that a failed open (too many open files, say) does not leave
/// lanes that every later open must open too.
fn open_lanes(
    wal_dir: &Path,
    options: &Options,
    recovered: &recovery::Recovered,
    clock: &AtomicU64,
) -> Result<Vec<Lane>> {
    let count = options.lanes.max(
        recovered
            .lanes
            .iter()
            .map(|l| l.lane as usize + 1)
            .max()
            .unwrap_or(0),
    );
    let mut lanes: Vec<Lane> = Vec::with_capacity(count);
    let mut created = Vec::with_capacity(count);
    for id in 0..count as u32 {
        let old = recovered.lanes.iter().find(|l| l.lane == id);
        let (seq, prev_last_ts, closed) = match old {
            Some(state) => (state.next_seq, state.last_ts, state.segments.clone()),
            None => (0, recovered.clock - 1, Vec::new()),
        };
        let ts = clock.fetch_add(1, Ordering::SeqCst) + 1;
        let chain = Chain {
            dir: wal_dir.to_path_buf(),
            lane: id,
            salt: lane::new_salt(id),
            max_bytes: options.segment_bytes.max(1),
            faults: options.faults.clone(),
        };
        let seed = chain.seed();
        created.push(wal_dir.join(lane::segment_name(id, seq)));
        let mut file = match SegmentFile::create(chain, seq, prev_last_ts, Some(ts)) {
            Ok(file) => file,
            Err((path, error)) => {
                if error.kind() == io::ErrorKind::AlreadyExists {
                    created.pop();
                }
                drop(lanes);
                // The highest lane first, each removal durable before the next, so that no
                // crash or failure in between leaves a gap in the lanes' numbers. The failed
                // segment may never have been created (out of file descriptors, say).
                for made in created.iter().rev() {
                    let removed = match fs::remove_file(made) {
                        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
                        removed => removed.and_then(|()| faults::sync_dir(wal_dir)),
                    };
                    if removed.is_err() {
                        break;
                    }
                }
                return Err(Error::io(path, error));
            }
        };
        file.closed = closed;
        lanes.push(Lane {
            buf: Mutex::new(LaneBuf {
                bytes: Vec::new(),
                last_ts: ts,
                data_ts: 0,
                dirty: false,
                seed,
            }),
            file: Mutex::new(file),
        });
    }
    Ok(lanes)
}

std::thread_local! {
    /// This thread's number, assigned on first use; its lane is the number modulo the lanes.
    static THREAD_NO: Cell<usize> = const { Cell::new(usize::MAX) };
}
static NEXT_THREAD_NO: AtomicUsize = AtomicUsize::new(0);

fn thread_no() -> usize {
    THREAD_NO.with(|no| {
        if no.get() == usize::MAX {
            no.set(NEXT_THREAD_NO.fetch_add(1, Ordering::Relaxed));
        }
        no.get()
    })
}

impl Wal {
    /// Opens (creating if needed) the log in `dir`, recovers its state, and starts the
    /// committer. The caller loads the returned [`Recovery`] into its index before writing.
    pub fn open(dir: impl AsRef<Path>, options: Options) -> Result<(Self, Recovery)> {
        let dir = dir.as_ref().to_owned();
        if options.lanes == 0 || options.lanes > MAX_LANES {
            return Err(Error::InvalidOptions(format!(
                "lanes must be in 1..={MAX_LANES}"
            )));
        }
        if options.stripes == 0 || options.stripes > 1 << 20 {
            return Err(Error::InvalidOptions("stripes must be in 1..=2^20".into()));
        }
        if let Durability::Periodic(period) = options.durability
            && period.is_zero()
        {
            return Err(Error::InvalidOptions("a zero flush interval".into()));
        }
        let wal_dir = dir.join("wal");
        fs::create_dir_all(&wal_dir).map_err(|e| Error::io(&wal_dir, e))?;
        let recovered = recovery::recover(&dir, &wal_dir, options.tolerate_corruption, true)?;
        let clock = AtomicU64::new(recovered.clock);
        let lanes = open_lanes(&wal_dir, &options, &recovered, &clock)?;
        let locks = KeyLocks::new(options.stripes);
        let shared = Arc::new(Shared {
            dir,
            wal_dir,
            writer_lanes: options.lanes,
            options,
            clock,
            lanes,
            locks,
            commit: GroupCommit::new(),
            checkpointing: Mutex::new(()),
            bytes_written: AtomicU64::new(0),
            rounds: AtomicU64::new(0),
            checkpoints: AtomicU64::new(0),
        });
        let period = match shared.options.durability {
            Durability::Periodic(period) => Some(period),
            Durability::None | Durability::Immediate => None,
        };
        let committer = {
            let wal_dir = shared.wal_dir.clone();
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("wal-commit".into())
                .spawn(move || {
                    while let Some(round) = shared.commit.next_round(period) {
                        shared.run_round(round);
                    }
                })
                .map_err(|e| Error::io(wal_dir, e))?
        };
        Ok((
            Self {
                shared,
                committer: Some(committer),
                checkpointer: Mutex::new(None),
            },
            recovered.recovery,
        ))
    }

    /// Logs a put of `value` at `key` in `table`, running `apply` (the index write) while the
    /// key's lock is held, after the record's timestamp is taken. Returns what `apply` returns
    /// once the record is as durable as [`Options::durability`] says.
    ///
    /// On an error returned after `apply` ran (an I/O failure), the index holds the write but
    /// the log may not: the log is failed and every later call errors until reopened.
    pub fn put<R>(
        &self,
        table: u32,
        key: &[u8],
        value: &[u8],
        apply: impl FnOnce() -> R,
    ) -> Result<R> {
        self.shared.write(table, key, Some(value), apply)
    }

    /// Logs a removal of `key` from `table` (a tombstone), running `apply` as [`Wal::put`] does.
    pub fn remove<R>(&self, table: u32, key: &[u8], apply: impl FnOnce() -> R) -> Result<R> {
        self.shared.write(table, key, None, apply)
    }

    /// A conditional put (`value`) or removal (`None`) of `key` in `table`: `check` runs first
    /// under the key's lock, which every write of the key holds around its index write, so
    /// nothing changes the key between `check` and `apply`. When `check` returns `false`,
    /// nothing is stamped, applied or logged, and the call returns `Ok(None)`; otherwise it is
    /// [`Wal::put`] or [`Wal::remove`] returning `Some` of what `apply` returns.
    ///
    /// `check` runs while the writer's lane is locked too: keep it short, and never call
    /// back into the log from it or from `apply` (the locks are not re-entrant).
    pub fn write_if<R>(
        &self,
        table: u32,
        key: &[u8],
        value: Option<&[u8]>,
        check: impl FnOnce() -> bool,
        apply: impl FnOnce() -> R,
    ) -> Result<Option<R>> {
        self.shared.write_if(table, key, value, check, apply)
    }

    /// Logs `ops` as one record, replayed all or nothing by recovery. The keys of all ops are
    /// locked together (as [`Wal::batch_if`] does), the ops stamped in order and their record
    /// appended; then each op is applied (`apply(op)`) in order, the locks still held, while
    /// the group commit writes and syncs the record (under [`Durability::Immediate`]); the
    /// call returns once both are done. The batch commits at its last stamp. Concurrent
    /// readers may see a batch half applied; a crash never leaves it so. An error from the
    /// append (an I/O failure) returns before any op is applied; one from the round after all
    /// are (as for [`Wal::put`]). `apply` must not panic: the record is already logged, and
    /// recovery would restore ops the index never took.
    pub fn batch<R>(
        &self,
        ops: &[BatchOp<'_>],
        apply: impl FnMut(&BatchOp<'_>) -> R,
    ) -> Result<Vec<R>> {
        self.shared.batch(ops, apply)
    }

    /// A conditional batch: the key locks of every op and of every key in `guarded` are taken
    /// together first, then `check` runs; when it returns `false`, nothing is stamped, applied
    /// or logged, and the call returns `Ok(None)`. Otherwise the ops are stamped, logged and
    /// applied as [`Wal::batch`] does, every lock held until the last op is applied (nothing
    /// is logged for an empty `ops`). So nothing writes any of those keys between
    /// `check` and the last op. `check` and `apply` must not call back into the log, as for
    /// [`Wal::write_if`].
    pub fn batch_if<R>(
        &self,
        ops: &[BatchOp<'_>],
        guarded: &[(u32, &[u8])],
        check: impl FnOnce() -> bool,
        apply: impl FnMut(&BatchOp<'_>) -> R,
    ) -> Result<Option<Vec<R>>> {
        self.shared.batch_if(ops, guarded, check, apply)
    }

    /// Makes every write that returned before this call durable (one group-commit round).
    pub fn sync(&self) -> Result<()> {
        self.shared.sync()
    }

    /// Writes a fuzzy checkpoint: `source` feeds every live (table, key, value) of the index
    /// to the writer (an index scan, concurrent with writers). Then deletes older checkpoints
    /// and the log segments the new one covers.
    pub fn checkpoint(
        &self,
        source: impl FnOnce(&mut CheckpointWriter) -> Result<()>,
    ) -> Result<CheckpointStats> {
        self.shared.checkpoint(source)
    }

    /// Starts the background checkpointer: every [`Options::checkpoint_interval`] it runs
    /// [`Wal::checkpoint`] with `source`. Does nothing when the interval is `None`. Errors of
    /// background checkpoints are not returned (the next one retries); a failed log fails
    /// later writes anyway.
    pub fn start_checkpointer(
        &self,
        source: impl Fn(&mut CheckpointWriter) -> Result<()> + Send + Sync + 'static,
    ) -> Result<()> {
        let Some(interval) = self.shared.options.checkpoint_interval else {
            return Ok(());
        };
        let shared = Arc::clone(&self.shared);
        let workers = Workers::start("wal-checkpoint", 1, interval, move |_| {
            let _ = shared.checkpoint(&source);
        })
        .map_err(|e| Error::io(&self.shared.dir, e))?;
        *self.checkpointer.lock() = Some(workers);
        Ok(())
    }

    /// The lanes the log runs: those its options ask for, and those its files held beyond them.
    pub fn lanes(&self) -> usize {
        self.shared.lanes.len()
    }

    /// Counters of this log.
    pub fn stats(&self) -> WalStats {
        WalStats {
            bytes_written: self.shared.bytes_written.load(Ordering::Relaxed),
            rounds: self.shared.rounds.load(Ordering::Relaxed),
            checkpoints: self.shared.checkpoints.load(Ordering::Relaxed),
        }
    }

    /// The directory the log lives in.
    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }

    /// Syncs and stops the log, reporting a failure of the final sync.
    pub fn close(mut self) -> Result<()> {
        self.stop()
    }

    /// Stops the background threads *without* the final sync, leaving the files as a killed
    /// process would (buffered records are lost, written ones stay). For crash tests.
    #[doc(hidden)]
    pub fn simulate_crash(mut self) {
        drop(self.checkpointer.lock().take());
        if let Some(committer) = self.committer.take() {
            self.shared.commit.shutdown();
            let _ = committer.join();
        }
    }

    fn stop(&mut self) -> Result<()> {
        drop(self.checkpointer.lock().take());
        let Some(committer) = self.committer.take() else {
            return Ok(());
        };
        let synced = self.shared.sync();
        self.shared.commit.shutdown();
        let joined = committer.join();
        if joined.is_err() && !std::thread::panicking() {
            panic!("the wal-commit thread panicked");
        }
        synced?;
        // Best effort: zeros left after a failed cut are the next recovery's torn tail.
        for lane in &self.shared.lanes {
            let _ = lane.file.lock().trim();
        }
        Ok(())
    }
}

impl Drop for Wal {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// Whether a group-commit round has anything to do, given every lane's (has unsynced records,
/// last record's stamp, last non-heartbeat record's stamp): some lane is dirty, or some lane
/// ends below another lane's last data record (which a round's heartbeats would lift).
fn round_needed(lanes: impl Iterator<Item = (bool, u64, u64)>) -> bool {
    let (mut dirty, mut min_last, mut max_data) = (false, u64::MAX, 0);
    for (lane_dirty, last_ts, data_ts) in lanes {
        dirty |= lane_dirty;
        min_last = min_last.min(last_ts);
        max_data = max_data.max(data_ts);
    }
    dirty || min_last < max_data
}

/// Refuses a record whose frame would exceed [`MAX_PAYLOAD`] or whose `count` (key length, or
/// ops of a batch) does not fit the format's `u32`.
fn check_frame(size: usize, count: usize) -> Result<()> {
    if size > MAX_PAYLOAD || count > u32::MAX as usize {
        return Err(Error::TooLarge {
            size: size as u64,
            limit: MAX_PAYLOAD as u64,
        });
    }
    Ok(())
}

/// Refuses a batch too large for one log record ([`Error::TooLarge`]), as [`Wal::batch`]
/// does before it stamps or writes anything; a store without a log can hold its batches to the
/// same limit.
pub fn check_batch(ops: &[BatchOp<'_>]) -> Result<()> {
    check_frame(format::batch_len(ops), ops.len())
}

impl Shared {
    fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::SeqCst) + 1
    }

    fn check(&self) -> Result<()> {
        match self.commit.failure() {
            Some(message) => Err(Error::Failed(message)),
            None => Ok(()),
        }
    }

    fn lane(&self) -> &Lane {
        let no = thread_no();
        let index = if self.writer_lanes.is_power_of_two() {
            no & (self.writer_lanes - 1)
        } else {
            no % self.writer_lanes
        };
        &self.lanes[index]
    }

    fn write<R>(
        &self,
        table: u32,
        key: &[u8],
        value: Option<&[u8]>,
        apply: impl FnOnce() -> R,
    ) -> Result<R> {
        self.write_if(table, key, value, || true, apply)
            .map(|applied| applied.expect("an unconditional write is applied"))
    }

    fn write_if<R>(
        &self,
        table: u32,
        key: &[u8],
        value: Option<&[u8]>,
        check: impl FnOnce() -> bool,
        apply: impl FnOnce() -> R,
    ) -> Result<Option<R>> {
        self.check()?;
        check_frame(format::single_len(key, value), key.len())?;
        let lane = self.lane();
        let mut buf = lane.buf.lock();
        let stripe = self.locks.lock(table, key);
        if !check() {
            return Ok(None);
        }
        let ts = self.tick();
        let result = apply();
        drop(stripe);
        let seed = buf.seed;
        format::encode_single(&mut buf.bytes, seed, ts, table, key, value);
        buf.appended_data(ts);
        let turn = self.after_append(lane, buf, true)?;
        self.wait_for(turn)?;
        Ok(Some(result))
    }

    fn batch<R>(
        &self,
        ops: &[BatchOp<'_>],
        apply: impl FnMut(&BatchOp<'_>) -> R,
    ) -> Result<Vec<R>> {
        self.batch_if(ops, &[], || true, apply)
            .map(|applied| applied.expect("an unconditional batch is applied"))
    }

    /// A batch locks every key it writes or guards, stamps its ops, appends its record and
    /// has a commit round requested before it applies a single op: the committer writes and
    /// syncs the record while this thread applies the ops. Each key stays locked from its
    /// stamp to its index write, as checkpoints and replay need (crate docs), and nothing is
    /// applied when the append fails.
    fn batch_if<R>(
        &self,
        ops: &[BatchOp<'_>],
        guarded: &[(u32, &[u8])],
        check: impl FnOnce() -> bool,
        apply: impl FnMut(&BatchOp<'_>) -> R,
    ) -> Result<Option<Vec<R>>> {
        self.check()?;
        check_batch(ops)?;
        let lane = self.lane();
        let mut buf = lane.buf.lock();
        let keys = self.locks.lock_all(
            ops.iter()
                .map(BatchOp::target)
                .chain(guarded.iter().copied()),
        );
        if !check() {
            return Ok(None);
        }
        if ops.is_empty() {
            return Ok(Some(Vec::new()));
        }
        let first = self.clock.fetch_add(ops.len() as u64, Ordering::SeqCst) + 1;
        let seed = buf.seed;
        format::encode_batch(&mut buf.bytes, seed, ops, first);
        buf.appended_data(first + ops.len() as u64 - 1);
        let turn = self.after_append(lane, buf, false)?;
        let results = ops.iter().map(apply).collect();
        drop(keys);
        self.wait_for(turn)?;
        Ok(Some(results))
    }

    /// After a record is appended (lane still locked): write a full buffer out, then, when
    /// writes are durable at once, request a commit round and return it for
    /// [`Shared::wait_for`]; with `lead`, a round the writer runs itself when none is running
    /// (a batch does not: the committer's round overlaps its index writes). A writer does not
    /// wait for a file the committer holds (it may be in an fsync): the buffer grows instead,
    /// up to eight times its size.
    fn after_append(
        &self,
        lane: &Lane,
        buf: parking_lot::MutexGuard<'_, LaneBuf>,
        lead: bool,
    ) -> Result<Option<Turn>> {
        let len = buf.bytes.len();
        let file = if len < self.options.buffer_bytes {
            None
        } else if len < self.options.buffer_bytes.saturating_mul(8) {
            lane.file.try_lock()
        } else {
            Some(lane.file.lock())
        };
        if let Some(file) = file {
            let (mut bytes, last_ts, mut file) = Lane::drain(buf, file);
            let written = file.write(&mut bytes, last_ts, false);
            Lane::recycle(&mut file, bytes);
            drop(file);
            match written {
                Ok(n) => {
                    self.bytes_written.fetch_add(n, Ordering::Relaxed);
                }
                Err((path, e)) => {
                    let error = Error::io(path, e);
                    self.commit.fail(error.to_string());
                    return Err(error);
                }
            }
        } else {
            drop(buf);
        }
        if self.options.durability != Durability::Immediate {
            return Ok(None);
        }
        Ok(Some(if lead {
            self.commit.request_or_lead()
        } else {
            Turn::Wait(self.commit.request())
        }))
    }

    /// Runs the round the caller leads, or waits for the committer's, if there is one.
    fn wait_for(&self, turn: Option<Turn>) -> Result<()> {
        let round = match turn {
            None => return Ok(()),
            Some(Turn::Lead(round)) => {
                self.run_round(round);
                round
            }
            Some(Turn::Wait(round)) => round,
        };
        self.commit.wait(round).map_err(Error::Failed)
    }

    /// Runs commit round `round` (on the committer or a writer leading it) and reports it. A
    /// round that unwinds is reported failed, so that no writer waits for it forever.
    fn run_round(&self, round: u64) {
        struct Unwinding<'a>(&'a GroupCommit, u64);
        impl Drop for Unwinding<'_> {
            fn drop(&mut self) {
                self.0
                    .finish_round(self.1, Err("a commit round panicked".into()));
            }
        }
        let unwinding = Unwinding(&self.commit, round);
        let outcome = self.round().map_err(|e| e.to_string());
        std::mem::forget(unwinding);
        self.commit.finish_round(round, outcome);
    }

    fn sync(&self) -> Result<()> {
        self.wait_for(Some(self.commit.request_or_lead()))
    }

    /// One group-commit round: heartbeats so every lane ends at or above the round's stamp,
    /// then write and fsync every lane.
    ///
    /// Skipped when nothing is left to cover: no lane holds unsynced records and every lane's
    /// (durable) last record is at or above every lane's last non-heartbeat record. "No lane is
    /// dirty" alone is not enough: an earlier round may have written a record appended after
    /// that round began, after it had already heartbeated the other lanes below it.
    fn round(&self) -> Result<()> {
        if let Some(message) = self.commit.failure() {
            return Err(Error::Failed(message));
        }
        let needed = round_needed(self.lanes.iter().map(|lane| {
            let buf = lane.buf.lock();
            (buf.dirty, buf.last_ts, buf.data_ts)
        }));
        if !needed {
            return Ok(());
        }
        let round_ts = self.tick();
        for lane in &self.lanes {
            let mut buf = lane.buf.lock();
            if buf.last_ts < round_ts {
                let ts = self.tick();
                lane::heartbeat(&mut buf, ts);
            }
            buf.dirty = false;
            let file = lane.file.lock();
            let (mut bytes, last_ts, mut file) = Lane::drain(buf, file);
            let written = file.write(&mut bytes, last_ts, true);
            Lane::recycle(&mut file, bytes);
            let n = written.map_err(|(path, e)| Error::io(path, e))?;
            self.bytes_written.fetch_add(n, Ordering::Relaxed);
        }
        self.rounds.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn checkpoint(
        &self,
        source: impl FnOnce(&mut CheckpointWriter) -> Result<()>,
    ) -> Result<CheckpointStats> {
        self.check()?;
        let started = Instant::now();
        let _one_at_a_time = self.checkpointing.lock();
        let t_begin = self.tick();
        // Every write stamped before t_begin holds its key lock until it is applied: once each
        // stripe was free after t_begin, the scan sees all of them.
        self.locks.wait_for_holders();
        let mut writer = CheckpointWriter::create(&self.dir, t_begin, self.options.faults.clone())?;
        source(&mut writer)?;
        // Every write is stamped before it is applied (a batch stamps all its ops before it
        // applies any), so every value the scan saw is stamped below t_end.
        let t_end = self.tick();
        let entries = writer.count();
        let (path, bytes) = writer.finish(&self.dir, t_begin, t_end)?;
        {
            let lane = self.lane();
            let mut buf = lane.buf.lock();
            let ts = self.tick();
            let seed = buf.seed;
            format::encode_checkpoint_marker(&mut buf.bytes, seed, ts, t_begin, t_end);
            buf.appended_data(ts);
        }
        // Every lane durable above t_end, so the new checkpoint is safe for recovery, before
        // anything older is deleted.
        self.sync()?;
        for entry in fs::read_dir(&self.dir).map_err(|e| Error::io(&self.dir, e))? {
            let entry = entry.map_err(|e| Error::io(&self.dir, e))?;
            let older = entry
                .file_name()
                .to_str()
                .and_then(checkpoint::parse_checkpoint_name)
                .is_some_and(|end| end < t_end);
            if older {
                faults::remove_file(&entry.path()).map_err(|e| Error::io(entry.path(), e))?;
            }
        }
        let mut segments_deleted = 0;
        for lane in &self.lanes {
            segments_deleted += lane
                .file
                .lock()
                .delete_covered(t_begin)
                .map_err(|(path, e)| Error::io(path, e))?;
        }
        faults::sync_dir(&self.dir).map_err(|e| Error::io(&self.dir, e))?;
        faults::sync_dir(&self.wal_dir).map_err(|e| Error::io(&self.wal_dir, e))?;
        self.checkpoints.fetch_add(1, Ordering::Relaxed);
        Ok(CheckpointStats {
            path,
            t_begin,
            t_end,
            entries,
            bytes,
            segments_deleted,
            elapsed: started.elapsed(),
        })
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_round_is_needed_while_a_lane_ends_below_another_lanes_data() {
        // Idle: every lane ends with a heartbeat above every data record.
        assert!(!round_needed([(false, 10, 4), (false, 11, 0)].into_iter()));
        // Unsynced records.
        assert!(round_needed([(true, 10, 10), (false, 11, 0)].into_iter()));
        // The regression the kill test caught: nothing dirty, but an earlier round wrote a
        // record (stamp 12) appended after it had heartbeated lane 1 at 11.
        assert!(round_needed([(false, 12, 12), (false, 11, 0)].into_iter()));
    }
}
