//! The pool: opening and creating it in each [`Mode`], recovery, the root object, and the
//! crash-safe allocator's persistent protocol (reserve → initialise → publish, free).
//!
//! # Allocation protocol (after PMDK's reserve/publish; APEX digest §4.4 "Allocation")
//!
//! The allocator's persistent metadata is the chunk table ([`crate::alloc`]): a header word and
//! an allocation bitmap per chunk. A block is allocated exactly when its bit is set. Every
//! change of a bit goes through the lane's one-line redo log (one lane per thread):
//!
//! 1. **reserve** ([`Pool::reserve`]) picks a free block in DRAM only; a crash forgets it;
//! 2. the caller **initialises** the block;
//! 3. **publish** ([`Pool::publish`]) persists the block's bytes (fence 0); writes the redo
//!    entry `⟨publish, block, chunk header, destination, value⟩` and fences (fence 1: the
//!    commit point); applies it: writes the chunk header, sets the bit, stores the block's
//!    offset into the destination word ([`PAtomicPtr`]), flushes those lines and fences
//!    (fence 2); clears the entry and fences (fence 3). Fence 0 cannot be merged into fence 1:
//!    a log line may reach the media before its fence (evicted early), and recovery would then
//!    publish a block whose bytes are not durable (the crash tests found exactly this);
//! 4. **free** ([`Pool::free`], [`Pool::free_at`]) does the same with
//!    `⟨free, block, chunk header, destination⟩`: clears the bit and, for `free_at`, nulls the
//!    destination; the block is reused only after fence 3.
//!
//! A crash before fence 1 completes leaves no valid entry (its tag is a checksum) and no bit or
//! destination changed, since the apply step only starts after it: the block stays free. A
//! crash after it leaves a valid entry, and recovery re-applies it (every step is an idempotent
//! store), so bit and destination end up set together. Hence after any crash: no leak (a set
//! bit without its destination cannot persist), no double allocation (a block is handed out
//! only while its bit is clear and only after its free is complete), no published object lost
//! (the object's bytes were persisted at fence 0, before the entry could be).
//!
//! Contract: the destination word belongs to the caller for the duration of the call (the
//! structure's lock, or a thread-private log slot); no other thread frees the block before
//! `publish` returns.
//!
//! # Recovery and its cost
//!
//! At every open: bump the [global version](crate::version), re-apply the valid allocator log
//! entries of every lane (at most one each) and clear them, then rebuild the volatile heap by
//! one pass over the chunk table: a chunk with no bit set is free, a small-class chunk gives its
//! clear bits to its class's free list, a large head skips its run. The work is O(lanes) +
//! O(chunk table): a 1 GiB pool with 256 KiB chunks has 4096 records of 576 B (2.3 MB of
//! metadata read), plus one push per free block of a partly used chunk. `benches/alloc.rs`
//! measured 0.57 ms per GiB for an empty pool and 4.65 ms per GiB for a fragmented one (README,
//! "Figures"). Decision: the metadata is persisted with each publish instead of being rebuilt
//! by walking the objects reachable from the root, because the allocator cannot know the
//! layout of the user's objects, and because a walk would be O(objects) where APEX and PLIN
//! promise instant recovery.

use std::cell::RefCell;
use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use concurrency::sync::Mutex;

use crate::alloc::chunk::ChunkUse;
use crate::alloc::heap::{HeapShape, VolatileHeap};
use crate::alloc::size_class::{self, Fit};
use crate::error::{Corruption, Error, Result};
use crate::flush::{self, CACHE_LINE};
use crate::header::{Geometry, HEADER_BYTES, ROOT_OFFSET};
use crate::log::{self, LogSlot, ThreadLog};
use crate::mapping::Mapping;
use crate::pptr::{PAtomicPtr, PPtr, Persistent};
use crate::simulated::{CrashImage, SimOptions, Simulator};
use crate::version;

/// How a pool's memory is provided and made durable.
///
/// | mode | memory | persist point | process crash | power loss / kernel crash |
/// |---|---|---|---|---|
/// | `Dax` | file on a DAX file system, `MAP_SHARED_VALIDATE \| MAP_SYNC` | `clwb`/`clflushopt`/`clflush` + `sfence` | every store survives | what was flushed and fenced survives (plus lines the cache evicted early) |
/// | `Mapped` | file, `MAP_SHARED` (page cache) | `msync(MS_SYNC)` of the flushed pages at each fence | every store survives (the page cache outlives the process) | what was `msync`ed survives (plus pages the kernel wrote back early) |
/// | `Volatile` | anonymous DRAM | the CPU instructions, for their cost only | nothing survives | nothing survives |
/// | `Simulated` | anonymous DRAM plus a persisted image | flush + fence copy lines to the persisted image | (test backend) | crash images: persisted lines plus random early evictions |
///
/// The allocator's protocol is correct under all of them: early write-back (cache eviction,
/// kernel write-back of dirty pages) is exactly what the simulated backend injects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Real persistent memory: `MAP_SYNC` on a DAX file system (refused elsewhere).
    Dax,
    /// A file mapped `MAP_SHARED`, made durable with `msync` at each fence.
    Mapped,
    /// Anonymous DRAM; nothing is durable.
    Volatile,
    /// The crash-testing backend ([`crate::simulated`]).
    Simulated,
}

/// The settings of a pool to create (and the layout id to expect when opening one).
///
/// ```
/// use pm_alloc::{Mode, PoolOptions};
///
/// let dir = std::env::temp_dir().join(format!("pm-alloc-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).expect("temporary directory");
/// let path = dir.join("options.pool");
/// # let _ = std::fs::remove_file(&path);
/// let options = PoolOptions::new(4 << 20).chunk_size(64 << 10).lanes(8).layout(0x41);
/// let pool = options.create(&path, Mode::Mapped)?;
/// assert_eq!(pool.global_version(), 1);
/// drop(pool);
/// let pool = options.open(&path, Mode::Mapped)?;
/// assert_eq!(pool.global_version(), 2);
/// # drop(pool);
/// # std::fs::remove_dir_all(&dir).expect("cleanup");
/// # Ok::<(), pm_alloc::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolOptions {
    size: u64,
    chunk_size: u64,
    lanes: u32,
    log_slots: u32,
    layout: u64,
    cache_capacity: usize,
}

impl PoolOptions {
    /// Options for a pool of `size` bytes (a multiple of 4096), with 256 KiB chunks (64 KiB
    /// when the pool is under 16 MiB), 64 lanes, 2 user log slots per lane and layout id 0.
    pub fn new(size: u64) -> Self {
        Self {
            size,
            chunk_size: if size < 16 << 20 { 64 << 10 } else { 256 << 10 },
            lanes: 64,
            log_slots: 2,
            layout: 0,
            cache_capacity: 64,
        }
    }

    /// The chunk size: a power of two from 4 KiB to 16 MiB. Small classes go up to a quarter
    /// chunk; larger blocks are runs of whole chunks.
    pub fn chunk_size(mut self, bytes: u64) -> Self {
        self.chunk_size = bytes;
        self
    }

    /// The number of lanes: how many threads may use the pool at once (1 to 1024).
    pub fn lanes(mut self, lanes: u32) -> Self {
        self.lanes = lanes;
        self
    }

    /// The number of user log lines per lane (0 to 64).
    pub fn log_slots(mut self, slots: u32) -> Self {
        self.log_slots = slots;
        self
    }

    /// The layout id: any number naming the structure stored in the pool; opening checks it.
    pub fn layout(mut self, id: u64) -> Self {
        self.layout = id;
        self
    }

    /// The free blocks of one class a thread caches (default 64, at least 2).
    pub fn cache_capacity(mut self, blocks: usize) -> Self {
        self.cache_capacity = blocks.max(2);
        self
    }

    fn geometry(&self) -> Result<Geometry> {
        Geometry::new(self.size, self.chunk_size, self.lanes, self.log_slots).map_err(|reason| {
            Error::InvalidOption {
                field: "size, chunk_size, lanes or log_slots",
                reason,
            }
        })
    }

    /// Creates a pool file at `path` (which must not exist) in `Dax` or `Mapped` mode.
    pub fn create(&self, path: impl AsRef<Path>, mode: Mode) -> Result<Pool> {
        let path = path.as_ref();
        let geo = self.geometry()?;
        file_mode(mode)?;
        let io = |op| {
            move |source| Error::Io {
                op,
                path: path.to_path_buf(),
                source,
            }
        };
        let file = File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|source| match source.kind() {
                std::io::ErrorKind::AlreadyExists => Error::AlreadyExists {
                    path: path.to_path_buf(),
                },
                _ => io("create")(source),
            })?;
        lock(&file, path)?;
        file.set_len(geo.size).map_err(io("resize"))?;
        let map = map_file(&file, path, geo.size, mode)?;
        let inner = Inner::assemble(
            self,
            mode,
            path.to_path_buf(),
            map,
            Some(file),
            geo.clone(),
            None,
        );
        inner.format(&geo, self.layout)?;
        Inner::start(inner)
    }

    /// Opens the pool file at `path` in `Dax` or `Mapped` mode and recovers it. Only the
    /// layout id and cache capacity of these options are used; the rest comes from the header.
    pub fn open(&self, path: impl AsRef<Path>, mode: Mode) -> Result<Pool> {
        use std::io::Read;

        let path = path.as_ref();
        file_mode(mode)?;
        let io = |op| {
            move |source| Error::Io {
                op,
                path: path.to_path_buf(),
                source,
            }
        };
        let mut file = File::options()
            .read(true)
            .write(true)
            .open(path)
            .map_err(io("open"))?;
        lock(&file, path)?;
        let len = file.metadata().map_err(io("stat"))?.len();
        if len < HEADER_BYTES {
            return Err(corrupt(
                path,
                Corruption::Truncated {
                    len,
                    needed: HEADER_BYTES,
                },
            ));
        }
        let mut bytes = [0_u8; 64];
        file.read_exact(&mut bytes).map_err(io("read"))?;
        let geo = self.check_header(path, &bytes, len)?;
        let map = map_file(&file, path, geo.size, mode)?;
        Inner::start(Inner::assemble(
            self,
            mode,
            path.to_path_buf(),
            map,
            Some(file),
            geo,
            None,
        ))
    }

    fn check_header(&self, path: &Path, bytes: &[u8], len: u64) -> Result<Geometry> {
        let words: [u64; 8] = std::array::from_fn(|i| {
            u64::from_le_bytes(bytes[8 * i..8 * i + 8].try_into().unwrap_or_default())
        });
        let (geo, layout) =
            Geometry::from_header(&words, len).map_err(|reason| corrupt(path, reason))?;
        if layout != self.layout {
            return Err(Error::LayoutMismatch {
                path: path.to_path_buf(),
                expected: self.layout,
                found: layout,
            });
        }
        Ok(geo)
    }

    /// Creates a `Volatile` pool in anonymous DRAM.
    pub fn volatile(&self) -> Result<Pool> {
        let geo = self.geometry()?;
        let path = PathBuf::from("<volatile>");
        let map = anonymous(&path, geo.size, None)?;
        let inner = Inner::assemble(self, Mode::Volatile, path, map, None, geo.clone(), None);
        inner.format(&geo, self.layout)?;
        Inner::start(inner)
    }

    /// Creates a `Simulated` pool: formatting it is persisted, so a crash image taken at any
    /// later fence holds a valid header.
    pub fn simulated(&self, sim: SimOptions) -> Result<Pool> {
        let geo = self.geometry()?;
        let path = PathBuf::from("<simulated>");
        let map = anonymous(&path, geo.size, None)?;
        let simulator = Simulator::new(vec![0; geo.size as usize], sim);
        let inner = Inner::assemble(
            self,
            Mode::Simulated,
            path,
            map,
            None,
            geo.clone(),
            Some(simulator),
        );
        inner.format(&geo, self.layout)?;
        Inner::start(inner)
    }

    /// Opens a crash image (or any pool bytes) as a `Simulated` pool and recovers it; the
    /// image is both its live and its persisted image.
    pub fn open_image(&self, image: &[u8], sim: SimOptions) -> Result<Pool> {
        let path = PathBuf::from("<image>");
        let len = image.len() as u64;
        if len < HEADER_BYTES {
            return Err(corrupt(
                &path,
                Corruption::Truncated {
                    len,
                    needed: HEADER_BYTES,
                },
            ));
        }
        let geo = self.check_header(&path, &image[..64], len)?;
        let map = anonymous(&path, geo.size, Some(image))?;
        let simulator = Simulator::new(image.to_vec(), sim);
        Inner::start(Inner::assemble(
            self,
            Mode::Simulated,
            path,
            map,
            None,
            geo,
            Some(simulator),
        ))
    }
}

fn corrupt(path: &Path, reason: Corruption) -> Error {
    Error::Corrupt {
        path: path.to_path_buf(),
        reason,
    }
}

fn file_mode(mode: Mode) -> Result<()> {
    match mode {
        Mode::Dax | Mode::Mapped => Ok(()),
        Mode::Volatile | Mode::Simulated => Err(Error::InvalidOption {
            field: "mode",
            reason: format!(
                "{mode:?} pools have no file: use PoolOptions::volatile or ::simulated"
            ),
        }),
    }
}

fn lock(file: &File, path: &Path) -> Result<()> {
    file.try_lock().map_err(|e| match e {
        TryLockError::WouldBlock => Error::Locked {
            path: path.to_path_buf(),
        },
        TryLockError::Error(source) => Error::Io {
            op: "lock",
            path: path.to_path_buf(),
            source,
        },
    })
}

fn anonymous(path: &Path, size: u64, image: Option<&[u8]>) -> Result<Mapping> {
    Mapping::anonymous(size as usize, image).map_err(|source| Error::Io {
        op: "map",
        path: path.to_path_buf(),
        source,
    })
}

fn map_file(file: &File, path: &Path, size: u64, mode: Mode) -> Result<Mapping> {
    let map = match mode {
        Mode::Dax => {
            #[cfg(target_os = "linux")]
            {
                Mapping::dax(file, size as usize).map_err(|source| {
                    if source.raw_os_error() == Some(libc::EOPNOTSUPP)
                        || source.raw_os_error() == Some(libc::EINVAL)
                    {
                        Error::NotDax {
                            path: path.to_path_buf(),
                            source,
                        }
                    } else {
                        Error::Io {
                            op: "map",
                            path: path.to_path_buf(),
                            source,
                        }
                    }
                })
            }
            #[cfg(not(target_os = "linux"))]
            {
                let _ = (file, size);
                Err(Error::Unsupported("Mode::Dax (MAP_SYNC)"))
            }
        }
        _ => Mapping::shared(file, size as usize).map_err(|source| Error::Io {
            op: "map",
            path: path.to_path_buf(),
            source,
        }),
    }?;
    Ok(map)
}

/// How flushes and fences reach durability.
enum Backend {
    /// Cache-line write-back instructions and `sfence` (`Dax`, `Volatile`).
    Hardware,
    /// `msync` of the flushed pages at each fence (`Mapped`).
    Msync,
    /// The simulator (`Simulated`).
    Simulated(Simulator),
}

const OP_PUBLISH: u64 = 1;
const OP_FREE: u64 = 2;

/// A block chosen by the heap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    Small { class: usize },
    Large { chunks: u64 },
}

/// The shared state of a pool.
pub(crate) struct Inner {
    id: u64,
    mode: Mode,
    path: PathBuf,
    pub(crate) map: Mapping,
    _file: Option<File>,
    pub(crate) geo: Geometry,
    classes: Vec<u64>,
    heap: VolatileHeap,
    backend: Backend,
    version: u64,
    root_lock: Mutex<()>,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("mode", &self.mode)
            .field("path", &self.path)
            .field("size", &self.geo.size)
            .field("chunks", &self.geo.chunks)
            .field("global_version", &self.version)
            .finish_non_exhaustive()
    }
}

thread_local! {
    /// The lanes this thread holds, one per pool it used.
    static LANES: RefCell<Vec<LaneHandle>> = const { RefCell::new(Vec::new()) };
    /// `Mapped` pools: page ranges flushed by this thread since its last fence.
    static MSYNC_PENDING: RefCell<Vec<(u64, u64, u64)>> = const { RefCell::new(Vec::new()) };
}

/// A thread's claim on a lane of one pool, given back when the thread exits.
struct LaneHandle {
    pool: u64,
    lane: usize,
    inner: Weak<Inner>,
}

impl Drop for LaneHandle {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.upgrade() {
            inner.heap.release_lane(self.lane);
        }
    }
}

impl Inner {
    fn assemble(
        options: &PoolOptions,
        mode: Mode,
        path: PathBuf,
        map: Mapping,
        file: Option<File>,
        geo: Geometry,
        simulator: Option<Simulator>,
    ) -> Self {
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        let classes = size_class::class_sizes(geo.chunk_size);
        let heap = VolatileHeap::new(HeapShape {
            heap_offset: geo.heap,
            chunk_size: geo.chunk_size,
            chunks: geo.chunks,
            class_sizes: classes.clone(),
            lanes: geo.lanes as usize,
            cache_capacity: options.cache_capacity,
        });
        let backend = match (mode, simulator) {
            (_, Some(sim)) => Backend::Simulated(sim),
            (Mode::Mapped, None) => Backend::Msync,
            _ => Backend::Hardware,
        };
        Self {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            mode,
            path,
            map,
            _file: file,
            geo,
            classes,
            heap,
            backend,
            version: 0,
            root_lock: Mutex::new(()),
        }
    }

    /// Writes and persists the header of a new pool (the rest of a new pool is zero).
    fn format(&self, geo: &Geometry, layout: u64) -> Result<()> {
        for (i, word) in geo.header_words(layout).iter().enumerate() {
            self.map.word(8 * i as u64).store(*word, Ordering::Relaxed);
        }
        self.flush_range(0, 64);
        self.fence()
    }

    /// Recovery (module docs), then the pool is ready.
    fn start(mut self) -> Result<Pool> {
        self.version = version::bump(&self)?;
        self.replay_logs()?;
        self.rebuild_heap()?;
        Ok(Pool {
            inner: Arc::new(self),
        })
    }

    fn replay_logs(&self) -> Result<()> {
        let mut replayed = Vec::new();
        for lane in 0..self.geo.lanes as usize {
            let offset = self.geo.alloc_log(lane);
            if let Some(entry) = log::read(self, offset) {
                let check = self
                    .check_entry(&entry)
                    .ok_or_else(|| corrupt(&self.path, Corruption::BadLog { lane }))?;
                self.apply(&entry, check);
                replayed.push(offset);
            }
        }
        if !replayed.is_empty() {
            self.fence()?;
            for offset in replayed {
                log::stage_clear(self, offset);
            }
            self.fence()?;
        }
        Ok(())
    }

    fn rebuild_heap(&self) -> Result<()> {
        let words = self.geo.bitmap_words() as usize;
        let mut free: Vec<Vec<u64>> = vec![Vec::new(); self.classes.len()];
        let mut chunk = 0;
        while chunk < self.geo.chunks {
            let record = self.geo.record(chunk);
            let bitmap = self.map.words(record + 8, words);
            let bits: Vec<u64> = bitmap.iter().map(|w| w.load(Ordering::Relaxed)).collect();
            if bits.iter().all(|&w| w == 0) {
                chunk += 1;
                continue;
            }
            let header = self.map.word(record).load(Ordering::Relaxed);
            let bad = || corrupt(&self.path, Corruption::BadChunk { chunk, header });
            match ChunkUse::decode(header) {
                Some(ChunkUse::Small { class }) if class < self.classes.len() => {
                    let size = self.classes[class];
                    let blocks = self.geo.chunk_size / size;
                    let is_set = |i: u64| bits[(i / 64) as usize] >> (i % 64) & 1 == 1;
                    let beyond = (blocks..self.geo.chunk_size / 64).any(is_set);
                    if beyond {
                        return Err(bad());
                    }
                    self.heap.mark_chunk_used(chunk);
                    let start = self.geo.chunk_offset(chunk);
                    free[class].extend(
                        (0..blocks)
                            .filter(|&i| !is_set(i))
                            .map(|i| start + i * size),
                    );
                    chunk += 1;
                }
                Some(ChunkUse::Large { chunks }) => {
                    let only_head = bits[0] == 1 && bits[1..].iter().all(|&w| w == 0);
                    if !only_head || chunks > self.geo.chunks - chunk {
                        return Err(bad());
                    }
                    // The run's other chunks belong to the block: a set bit there is a block
                    // inside it that no allocation can explain.
                    let tail_empty = (chunk + 1..chunk + chunks).all(|c| {
                        let tail = self.map.words(self.geo.record(c) + 8, words);
                        tail.iter().all(|w| w.load(Ordering::Relaxed) == 0)
                    });
                    if !tail_empty {
                        return Err(bad());
                    }
                    for c in chunk..chunk + chunks {
                        self.heap.mark_chunk_used(c);
                    }
                    chunk += chunks;
                }
                _ => return Err(bad()),
            }
        }
        for (class, blocks) in free.into_iter().enumerate() {
            for offset in blocks.into_iter().rev() {
                self.heap.add_free_block(class, offset);
            }
        }
        Ok(())
    }

    /// Flushes the lines of `[offset, offset + len)` (callers check the range).
    pub(crate) fn flush_range(&self, offset: u64, len: u64) {
        if len == 0 {
            return;
        }
        let first = offset & !(CACHE_LINE as u64 - 1);
        let lines = (offset + len - first).div_ceil(CACHE_LINE as u64);
        match &self.backend {
            Backend::Hardware => {
                for line in 0..lines {
                    flush::write_back(self.map.word(first + line * CACHE_LINE as u64));
                }
            }
            Backend::Msync => MSYNC_PENDING.with(|pending| {
                let end = first + lines * CACHE_LINE as u64;
                let mut pending = pending.borrow_mut();
                match pending.last_mut() {
                    Some((pool, _, last_end)) if *pool == self.id && *last_end == first => {
                        *last_end = end;
                    }
                    _ => pending.push((self.id, first, end)),
                }
            }),
            Backend::Simulated(sim) => {
                for line in 0..lines {
                    sim.flush_line(&self.map, first + line * CACHE_LINE as u64);
                }
            }
        }
        flush::count_flushes(lines);
    }

    /// Makes the calling thread's flushed lines durable.
    pub(crate) fn fence(&self) -> Result<()> {
        flush::count_fence();
        match &self.backend {
            Backend::Hardware => flush::store_fence(),
            Backend::Msync => {
                let mine: Vec<(u64, u64, u64)> = MSYNC_PENDING.with(|pending| {
                    let mut pending = pending.borrow_mut();
                    let (mine, others) =
                        pending.drain(..).partition(|(pool, _, _)| *pool == self.id);
                    *pending = others;
                    mine
                });
                for (_, start, end) in mine {
                    self.map
                        .sync(start, end - start)
                        .map_err(|source| Error::Io {
                            op: "msync",
                            path: self.path.clone(),
                            source,
                        })?;
                }
            }
            Backend::Simulated(sim) => sim.fence(&self.map),
        }
        Ok(())
    }

    /// The calling thread's lane, claimed on first use.
    fn lane(this: &Arc<Inner>) -> Result<usize> {
        let no_lane = Error::NoFreeLane {
            lanes: this.geo.lanes,
        };
        LANES
            .try_with(|lanes| {
                if let Some(handle) = lanes.borrow().iter().find(|h| h.pool == this.id) {
                    return Ok(handle.lane);
                }
                let lane = this.heap.claim_lane().ok_or(Error::NoFreeLane {
                    lanes: this.geo.lanes,
                })?;
                let mut lanes = lanes.borrow_mut();
                lanes.retain(|h| h.inner.strong_count() > 0);
                lanes.push(LaneHandle {
                    pool: this.id,
                    lane,
                    inner: Arc::downgrade(this),
                });
                Ok(lane)
            })
            .unwrap_or(Err(no_lane))
    }

    /// Where the allocation bit of the block at `offset` of use `chunk_use` is: the bitmap
    /// word's offset and the mask. `None` if no such block can exist.
    fn bit_of(&self, offset: u64, chunk_use: ChunkUse) -> Option<(u64, u64)> {
        let chunk = self.geo.chunk_of(offset)?;
        let relative = offset - self.geo.chunk_offset(chunk);
        let bit = match chunk_use {
            ChunkUse::Small { class } => {
                let size = *self.classes.get(class)?;
                (relative.is_multiple_of(size) && relative / size < self.geo.chunk_size / size)
                    .then_some(relative / size)?
            }
            ChunkUse::Large { chunks } => {
                (relative == 0 && chunks <= self.geo.chunks - chunk).then_some(0)?
            }
            ChunkUse::Free => return None,
        };
        Some((self.geo.record(chunk) + 8 + bit / 64 * 8, 1 << (bit % 64)))
    }

    /// The block at `offset` if it is the start of an allocated block.
    fn allocated(&self, offset: u64) -> Option<(ChunkUse, u64, u64)> {
        let chunk = self.geo.chunk_of(offset)?;
        let header = self
            .map
            .word(self.geo.record(chunk))
            .load(Ordering::Acquire);
        let chunk_use = ChunkUse::decode(header)?;
        let (word, mask) = self.bit_of(offset, chunk_use)?;
        (self.map.word(word).load(Ordering::Acquire) & mask != 0).then_some((chunk_use, word, mask))
    }

    fn block_bytes(&self, chunk_use: ChunkUse) -> u64 {
        match chunk_use {
            ChunkUse::Small { class } => self.classes[class],
            ChunkUse::Large { chunks } => chunks * self.geo.chunk_size,
            ChunkUse::Free => 0,
        }
    }

    /// Validates an allocator log entry; returns the bit it changes.
    fn check_entry(&self, entry: &[u64; log::LOG_PAYLOAD_WORDS]) -> Option<(u64, u64)> {
        let [op, offset, header, dest, _, _] = *entry;
        if op != OP_PUBLISH && op != OP_FREE {
            return None;
        }
        let dest_ok = dest == 0
            || (dest.is_multiple_of(8) && dest >= ROOT_OFFSET && dest <= self.geo.size - 8);
        if !dest_ok {
            return None;
        }
        self.bit_of(offset, ChunkUse::decode(header)?)
    }

    /// Applies a checked allocator log entry (without the fence); true if the bit changed.
    fn apply(&self, entry: &[u64; log::LOG_PAYLOAD_WORDS], (word, mask): (u64, u64)) -> bool {
        let [op, offset, header, dest, value, _] = *entry;
        let changed = if op == OP_PUBLISH {
            let record = self
                .geo
                .record(self.geo.chunk_of(offset).unwrap_or_default());
            let header_word = self.map.word(record);
            if header_word.load(Ordering::Relaxed) != header {
                header_word.store(header, Ordering::Release);
            }
            // Flushed even when unchanged: the thread that wrote it may not have fenced yet,
            // and this entry is cleared once *this* thread's fence has made the bit durable.
            self.flush_range(record, 8);
            self.map.word(word).fetch_or(mask, Ordering::AcqRel) & mask == 0
        } else {
            self.map.word(word).fetch_and(!mask, Ordering::AcqRel) & mask != 0
        };
        self.flush_range(word, 8);
        if dest != 0 {
            let stored = if op == OP_PUBLISH { value } else { 0 };
            self.map.word(dest).store(stored, Ordering::Release);
            self.flush_range(dest, 8);
        }
        changed
    }

    /// Runs one logged allocator operation: log + fence, apply + fence, clear + fence.
    fn logged(
        this: &Arc<Inner>,
        entry: [u64; log::LOG_PAYLOAD_WORDS],
        check: (u64, u64),
    ) -> Result<bool> {
        let lane = Inner::lane(this)?;
        let log = this.geo.alloc_log(lane);
        log::stage(this, log, &entry);
        this.fence()?;
        let changed = this.apply(&entry, check);
        this.fence()?;
        log::stage_clear(this, log);
        this.fence()?;
        Ok(changed)
    }

    fn release(this: &Arc<Inner>, offset: u64, block: Block) {
        match block {
            Block::Small { class } => match Inner::lane(this) {
                Ok(lane) => this.heap.release_small(lane, class, offset),
                Err(_) => this.heap.add_free_block(class, offset),
            },
            Block::Large { chunks } => this.heap.release_large(offset, chunks),
        }
    }

    /// The offset of a word given by reference, if it is a valid publish destination: inside
    /// the pool, 8-aligned, and in the heap or a user log slot (never allocator metadata).
    fn destination(&self, word: &AtomicU64) -> Result<u64> {
        let address = std::ptr::from_ref(word).cast::<u8>();
        let offset = self.map.offset_of(address, 8).unwrap_or(u64::MAX);
        let lane_part = offset
            .checked_sub(HEADER_BYTES)
            .map(|o| o % self.geo.lane_bytes);
        let in_user_log = offset < self.geo.chunk_table && lane_part.is_some_and(|p| p >= 64);
        let ok = offset != u64::MAX
            && offset.is_multiple_of(8)
            && (offset >= self.geo.heap || in_user_log);
        if ok {
            Ok(offset)
        } else {
            Err(Error::InvalidPointer {
                offset: address as u64,
                len: 8,
            })
        }
    }
}

/// A persistent-memory pool (see the crate docs for the modes and guarantees).
///
/// `Pool` is a cheap handle (`Clone` shares the pool); the pool is unmapped and its file
/// unlocked when the last handle is dropped. Every method takes `&self` and may be called from
/// any number of threads (up to the pool's lane count at once).
#[derive(Debug, Clone)]
pub struct Pool {
    inner: Arc<Inner>,
}

/// A block picked by [`Pool::reserve`] and not yet published: free in the persistent image,
/// so a crash forgets it. Dropping it gives the block back.
#[derive(Debug)]
pub struct Reservation<'p> {
    pool: &'p Pool,
    offset: u64,
    size: u64,
    block: Block,
    done: bool,
}

impl Reservation<'_> {
    /// The reserved block, to initialise before publishing.
    pub fn ptr<T>(&self) -> PPtr<T> {
        PPtr::from_offset(self.offset)
    }

    /// The size asked for (the bytes [`Pool::publish`] persists).
    pub fn size(&self) -> usize {
        self.size as usize
    }

    /// The size of the block (at least [`size`](Self::size)).
    pub fn usable_size(&self) -> usize {
        match self.block {
            Block::Small { class } => self.pool.inner.classes[class] as usize,
            Block::Large { chunks } => (chunks * self.pool.inner.geo.chunk_size) as usize,
        }
    }

    /// The block's words (the block is 64-aligned and a multiple of 64 bytes).
    pub fn words(&self) -> &[AtomicU64] {
        self.pool
            .inner
            .map
            .words(self.offset, self.usable_size() / 8)
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if !self.done {
            Inner::release(&self.pool.inner, self.offset, self.block);
        }
    }
}

/// Counts describing a pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolStats {
    /// The pool's size in bytes.
    pub size: u64,
    /// The number of heap chunks.
    pub chunks: u64,
    /// The chunk size in bytes.
    pub chunk_size: u64,
    /// Chunks neither cut into blocks nor part of a large block.
    pub free_chunks: u64,
}

impl Pool {
    /// The pool's mode.
    pub fn mode(&self) -> Mode {
        self.inner.mode
    }

    /// The global version: 1 after creation, bumped at every open ([`crate::version`]).
    pub fn global_version(&self) -> u64 {
        self.inner.version
    }

    /// Sizes and free chunks.
    pub fn stats(&self) -> PoolStats {
        PoolStats {
            size: self.inner.geo.size,
            chunks: self.inner.geo.chunks,
            chunk_size: self.inner.geo.chunk_size,
            free_chunks: self.inner.heap.free_chunk_count(),
        }
    }

    /// Picks a free block of at least `size` bytes aligned to `align` (a power of two of at
    /// most 4 KiB; blocks are at least 64 B-aligned, classes that are multiples of 256 B are
    /// 256 B-aligned, and large blocks start at chunk boundaries, 4 KiB-aligned). Touches
    /// nothing persistent.
    pub fn reserve(&self, size: usize, align: usize) -> Result<Reservation<'_>> {
        let inner = &self.inner;
        let bad = |reason| Error::BadRequest {
            size,
            align,
            reason,
        };
        let fit = size_class::fit(
            &inner.classes,
            inner.geo.chunk_size,
            size as u64,
            align as u64,
        )
        .ok_or_else(|| {
            bad("the size is 0, or the alignment is not a power of two of at most 4 KiB")
        })?;
        let (offset, block) = match fit {
            Fit::Small(class) => {
                let lane = Inner::lane(inner)?;
                (
                    inner.heap.reserve_small(lane, class),
                    Block::Small { class },
                )
            }
            Fit::Large(chunks) => {
                if chunks > inner.geo.chunks {
                    return Err(bad("larger than the pool's heap"));
                }
                (inner.heap.reserve_large(chunks), Block::Large { chunks })
            }
        };
        let offset = offset.ok_or(Error::OutOfSpace { size, align })?;
        Ok(Reservation {
            pool: self,
            offset,
            size: size as u64,
            block,
            done: false,
        })
    }

    /// Publishes a reserved block into `dest`, a word of this pool in the heap or a user log
    /// slot: persists the block's first `reservation.size()` bytes, marks the block allocated
    /// and stores its offset into `dest`, atomically with respect to crashes (module docs).
    /// Costs four fences.
    pub fn publish<T>(
        &self,
        mut reservation: Reservation<'_>,
        dest: &PAtomicPtr<T>,
    ) -> Result<PPtr<T>> {
        let dest = self.inner.destination(dest.as_word())?;
        self.publish_to(&mut reservation, dest)
    }

    fn publish_to<T>(&self, reservation: &mut Reservation<'_>, dest: u64) -> Result<PPtr<T>> {
        let inner = &self.inner;
        let offset = reservation.offset;
        let chunk_use = match reservation.block {
            Block::Small { class } => ChunkUse::Small { class },
            Block::Large { chunks } => ChunkUse::Large { chunks },
        };
        let entry = [OP_PUBLISH, offset, chunk_use.encode(), dest, offset, 0];
        let check = inner
            .check_entry(&entry)
            .ok_or(Error::InvalidPointer { offset, len: 8 })?;
        // The contents must be durable before the log entry can be: a log line may reach the
        // media early (evicted before its fence), and recovery would then publish the block.
        inner.flush_range(offset, reservation.size);
        inner.fence()?;
        // Until the entry is staged a failure (no free lane, a failed fence) leaves the block
        // unlogged, and the reservation gives it back; from then on the log may name it.
        Inner::lane(inner)?;
        reservation.done = true;
        Inner::logged(inner, entry, check)?;
        Ok(PPtr::from_offset(offset))
    }

    /// Reserves a zeroed `T` and publishes it into `dest` (64 B-aligned, or `T`'s alignment).
    pub fn alloc<T: Persistent>(&self, dest: &PAtomicPtr<T>) -> Result<PPtr<T>> {
        let reservation = self.reserve(size_of::<T>().max(1), align_of::<T>())?;
        zero(&reservation);
        self.publish(reservation, dest)
    }

    /// Frees the allocated block `ptr` (nothing else is changed: unlinking it is the caller's
    /// business). Errors with [`Error::NotAllocated`] if `ptr` is not an allocated block's
    /// start (a double free). Costs three fences.
    pub fn free<T>(&self, ptr: PPtr<T>) -> Result<()> {
        self.free_inner(ptr.offset(), 0)
    }

    /// Frees the block `cell` points to and nulls `cell`, atomically with respect to crashes.
    /// A null cell is left alone.
    pub fn free_at<T>(&self, cell: &PAtomicPtr<T>) -> Result<()> {
        let dest = self.inner.destination(cell.as_word())?;
        let ptr = cell.load(Ordering::Acquire);
        if ptr.is_null() {
            return Ok(());
        }
        self.free_inner(ptr.offset(), dest)
    }

    fn free_inner(&self, offset: u64, dest: u64) -> Result<()> {
        let inner = &self.inner;
        let not_allocated = Error::NotAllocated { offset };
        let (chunk_use, word, mask) = inner.allocated(offset).ok_or(not_allocated)?;
        let entry = [OP_FREE, offset, chunk_use.encode(), dest, 0, 0];
        if !Inner::logged(inner, entry, (word, mask))? {
            return Err(Error::NotAllocated { offset });
        }
        let block = match chunk_use {
            ChunkUse::Small { class } => Block::Small { class },
            ChunkUse::Large { chunks } => Block::Large { chunks },
            ChunkUse::Free => return Err(Error::NotAllocated { offset }),
        };
        Inner::release(inner, offset, block);
        Ok(())
    }

    /// The size of the allocated block `ptr`, or [`Error::NotAllocated`].
    pub fn usable_size<T>(&self, ptr: PPtr<T>) -> Result<usize> {
        let (chunk_use, _, _) = self
            .inner
            .allocated(ptr.offset())
            .ok_or(Error::NotAllocated {
                offset: ptr.offset(),
            })?;
        Ok(self.inner.block_bytes(chunk_use) as usize)
    }

    /// Every allocated block (offset and size), by one pass over the persistent chunk table.
    pub fn allocated_blocks(&self) -> Vec<(PPtr<u8>, usize)> {
        let inner = &self.inner;
        let geo = &inner.geo;
        let mut blocks = Vec::new();
        let mut chunk = 0;
        while chunk < geo.chunks {
            let record = geo.record(chunk);
            let header = inner.map.word(record).load(Ordering::Acquire);
            let bits: Vec<u64> = inner
                .map
                .words(record + 8, geo.bitmap_words() as usize)
                .iter()
                .map(|w| w.load(Ordering::Acquire))
                .collect();
            let start = geo.chunk_offset(chunk);
            match ChunkUse::decode(header) {
                Some(ChunkUse::Small { class }) if class < inner.classes.len() => {
                    let size = inner.classes[class];
                    for i in 0..geo.chunk_size / size {
                        if bits[(i / 64) as usize] >> (i % 64) & 1 == 1 {
                            blocks.push((PPtr::from_offset(start + i * size), size as usize));
                        }
                    }
                }
                Some(ChunkUse::Large { chunks }) if bits[0] & 1 == 1 => {
                    blocks.push((PPtr::from_offset(start), (chunks * geo.chunk_size) as usize));
                    chunk += chunks;
                    continue;
                }
                _ => {}
            }
            chunk += 1;
        }
        blocks
    }

    /// The root object: a zeroed `T` allocated and published into the header on first call,
    /// the same block on every later call and after every reopen.
    pub fn root<T: Persistent>(&self) -> Result<PPtr<T>> {
        let size = size_of::<T>().max(1);
        let cell = PAtomicPtr::<T>::from_word(self.inner.map.word(ROOT_OFFSET));
        let _guard = self.inner.root_lock.lock();
        let current = cell.load(Ordering::Acquire);
        if !current.is_null() {
            let found = self.usable_size(current)?;
            if found < size {
                return Err(Error::RootSize {
                    requested: size,
                    found,
                });
            }
            return Ok(current);
        }
        let mut reservation = self.reserve(size, align_of::<T>())?;
        zero(&reservation);
        self.publish_to(&mut reservation, ROOT_OFFSET)
    }

    /// A shared reference to the `T` at `ptr`, which must lie in the heap, aligned for `T`.
    pub fn get<T: Persistent>(&self, ptr: PPtr<T>) -> Result<&T> {
        let offset = ptr.offset();
        let len = size_of::<T>() as u64;
        let ok = offset >= self.inner.geo.heap
            && offset
                .checked_add(len)
                .is_some_and(|end| end <= self.inner.geo.size)
            && self.inner.map.is_aligned_for::<T>(offset);
        if !ok {
            return Err(Error::InvalidPointer { offset, len });
        }
        Ok(self.inner.map.get(offset))
    }

    /// The `n` words starting at `ptr` (heap only, 8-aligned).
    pub fn words<T>(&self, ptr: PPtr<T>, n: usize) -> Result<&[AtomicU64]> {
        let offset = ptr.offset();
        let len = (n as u64).saturating_mul(8);
        let ok = offset >= self.inner.geo.heap
            && offset.is_multiple_of(8)
            && offset
                .checked_add(len)
                .is_some_and(|end| end <= self.inner.geo.size);
        if !ok {
            return Err(Error::InvalidPointer { offset, len });
        }
        Ok(self.inner.map.words(offset, n))
    }

    /// The address `ptr` resolves to in this mapping (for structures that manage their own
    /// accesses; dereferencing it is the caller's `unsafe`).
    pub fn as_ptr<T>(&self, ptr: PPtr<T>) -> *mut T {
        self.inner.map.address(ptr.offset()).cast()
    }

    fn check_range(&self, offset: u64, len: u64) -> Result<()> {
        if offset
            .checked_add(len)
            .is_some_and(|end| end <= self.inner.geo.size)
        {
            Ok(())
        } else {
            Err(Error::InvalidPointer { offset, len })
        }
    }

    /// Flushes the cache lines of `len` bytes at `ptr` (durable after the next
    /// [`fence`](Self::fence)).
    pub fn flush<T>(&self, ptr: PPtr<T>, len: usize) -> Result<()> {
        self.check_range(ptr.offset(), len as u64)?;
        self.inner.flush_range(ptr.offset(), len as u64);
        Ok(())
    }

    /// Makes every line this thread flushed durable (`sfence`, `msync`, or the simulator's).
    pub fn fence(&self) -> Result<()> {
        self.inner.fence()
    }

    /// Flush and fence: makes `len` bytes at `ptr` durable.
    pub fn persist<T>(&self, ptr: PPtr<T>, len: usize) -> Result<()> {
        self.flush(ptr, len)?;
        self.fence()
    }

    /// Flushes the value `value` refers to, which must lie in this pool.
    pub fn flush_ref<T>(&self, value: &T) -> Result<()> {
        let address = std::ptr::from_ref(value).cast::<u8>();
        let len = size_of::<T>();
        let offset = self
            .inner
            .map
            .offset_of(address, len)
            .ok_or(Error::InvalidPointer {
                offset: address as u64,
                len: len as u64,
            })?;
        self.inner.flush_range(offset, len as u64);
        Ok(())
    }

    /// Flushes and fences the value `value` refers to, which must lie in this pool.
    pub fn persist_ref<T>(&self, value: &T) -> Result<()> {
        self.flush_ref(value)?;
        self.fence()
    }

    /// The calling thread's user log slots ([`crate::log`]).
    pub fn thread_log(&self) -> Result<ThreadLog<'_>> {
        Ok(ThreadLog::new(&self.inner, Inner::lane(&self.inner)?))
    }

    /// Every user log slot of every lane, for recovery before threads start.
    pub fn log_slots(&self) -> impl Iterator<Item = LogSlot<'_>> {
        let inner = &*self.inner;
        (0..inner.geo.lanes as usize).flat_map(move |lane| {
            (0..inner.geo.log_slots as usize)
                .map(move |slot| LogSlot::new(inner, lane, inner.geo.user_log(lane, slot)))
        })
    }

    fn simulator(&self) -> Option<&Simulator> {
        match &self.inner.backend {
            Backend::Simulated(sim) => Some(sim),
            _ => None,
        }
    }

    /// `Simulated` pools: the fences issued so far (the next fence has this index).
    pub fn fence_count(&self) -> Option<u64> {
        self.simulator().map(Simulator::fences)
    }

    /// `Simulated` pools: the crash images the crash plan has taken since the last call.
    pub fn take_crash_images(&self) -> Vec<CrashImage> {
        self.simulator()
            .map(Simulator::take_images)
            .unwrap_or_default()
    }

    /// `Simulated` pools: a crash image now, evictions drawn from `seed`.
    pub fn crash_image(&self, seed: u64) -> Option<Vec<u8>> {
        self.simulator()
            .map(|sim| sim.crash_image(&self.inner.map, seed))
    }

    /// `Simulated` pools: the persisted image (what a crash with no early eviction leaves).
    pub fn persisted_image(&self) -> Option<Vec<u8>> {
        self.simulator().map(Simulator::persisted)
    }
}

/// Zeroes a reservation's requested bytes (rounded up to whole words).
fn zero(reservation: &Reservation<'_>) {
    let words = reservation.size().div_ceil(8);
    for word in &reservation.words()[..words] {
        word.store(0, Ordering::Relaxed);
    }
}
