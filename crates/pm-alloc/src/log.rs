//! Small per-thread persistent logs: one cache line per entry, committed with one flush and one
//! fence.
//!
//! Every lane (one per thread using the pool, see [`crate::pool`]) owns one line for the
//! allocator's own redo log and `log_slots` lines for the structure built on the pool:
//!
//! - APEX keeps one in-flight SMO per thread in a one-cache-line log `⟨old, new, key, stage⟩`
//!   (APEX digest §3.7, §4.3); `new` is filled by the allocator, which publishes the new node
//!   into the log so a crash cannot leak it;
//! - PLIN keeps 16 REDO split-log entries (PLIN digest §3.6, §3.10): with `log_slots = 1` and 16
//!   lanes, or more slots per lane, the same facility holds them.
//!
//! A line is `[tag | six payload words | target word]`. [`LogSlot::write`] stores the payload,
//! then the tag (a checksum of the payload, never 0), then flushes the line and fences: one
//! flush and one fence, and the fence is the commit point. A crash that leaves part of the line
//! unpersisted (or torn at 8-byte granularity) leaves a tag that does not match, so
//! [`LogSlot::read`] reports the slot empty: an entry is either fully there or absent. The
//! *target* word is outside the checksum: it is the place the allocator publishes a block into
//! ([`LogSlot::target`], APEX's `log.new`), and it may change while the entry stays valid.
//!
//! At recovery, before threads start, [`Pool::log_slots`](crate::Pool::log_slots) lists every
//! lane's slots; a structure replays or rolls back what it finds and clears the slots.

use std::sync::atomic::Ordering;

use crate::error::Result;
use crate::header::checksum;
use crate::pool::Inner;
use crate::pptr::{PAtomicPtr, PPtr};

/// The payload words of a log line.
pub const LOG_PAYLOAD_WORDS: usize = 6;

/// The tag of a payload: its checksum, never 0 (0 marks an empty slot).
fn tag(payload: &[u64; LOG_PAYLOAD_WORDS]) -> u64 {
    checksum(payload) | 1
}

/// Stores `payload` and its tag into the line at `offset` and flushes it (no fence).
pub(crate) fn stage(inner: &Inner, offset: u64, payload: &[u64; LOG_PAYLOAD_WORDS]) {
    let words = inner.map.words(offset, 8);
    for (word, value) in words[1..=LOG_PAYLOAD_WORDS].iter().zip(payload) {
        word.store(*value, Ordering::Relaxed);
    }
    words[0].store(tag(payload), Ordering::Release);
    inner.flush_range(offset, 64);
}

/// The payload of the line at `offset` if its tag matches.
pub(crate) fn read(inner: &Inner, offset: u64) -> Option<[u64; LOG_PAYLOAD_WORDS]> {
    let words = inner.map.words(offset, 8);
    let stored = words[0].load(Ordering::Acquire);
    let payload = std::array::from_fn(|i| words[1 + i].load(Ordering::Relaxed));
    (stored != 0 && stored == tag(&payload)).then_some(payload)
}

/// Empties the line at `offset` and flushes it (no fence).
pub(crate) fn stage_clear(inner: &Inner, offset: u64) {
    inner.map.word(offset).store(0, Ordering::Release);
    inner.flush_range(offset, 64);
}

/// One persistent log line of a lane.
///
/// ```
/// use pm_alloc::{PoolOptions, thread_counters};
///
/// let pool = PoolOptions::new(1 << 20).log_slots(2).volatile()?;
/// let log = pool.thread_log()?;
/// let slot = log.slot(0).expect("two slots per lane");
/// assert_eq!(slot.read(), None);
/// let before = thread_counters();
/// slot.write([1, 2, 3, 4, 5, 6])?;
/// let cost = thread_counters() - before;
/// assert_eq!((cost.flushes, cost.fences), (1, 1));
/// assert_eq!(slot.read(), Some([1, 2, 3, 4, 5, 6]));
/// slot.clear()?;
/// assert_eq!(slot.read(), None);
/// # Ok::<(), pm_alloc::Error>(())
/// ```
#[derive(Clone, Copy)]
pub struct LogSlot<'p> {
    inner: &'p Inner,
    offset: u64,
    lane: usize,
}

impl std::fmt::Debug for LogSlot<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogSlot")
            .field("lane", &self.lane)
            .field("offset", &self.offset)
            .field("entry", &self.read())
            .finish()
    }
}

impl<'p> LogSlot<'p> {
    pub(crate) fn new(inner: &'p Inner, lane: usize, offset: u64) -> Self {
        Self {
            inner,
            offset,
            lane,
        }
    }

    /// The lane this slot belongs to.
    pub fn lane(&self) -> usize {
        self.lane
    }

    /// The slot's place in the pool.
    pub fn as_pptr(&self) -> PPtr<u8> {
        PPtr::from_offset(self.offset)
    }

    /// Writes and persists an entry: one flush and one fence, the fence being the commit.
    pub fn write(&self, payload: [u64; LOG_PAYLOAD_WORDS]) -> Result<()> {
        stage(self.inner, self.offset, &payload);
        self.inner.fence()
    }

    /// The entry, if the slot holds a complete one.
    pub fn read(&self) -> Option<[u64; LOG_PAYLOAD_WORDS]> {
        read(self.inner, self.offset)
    }

    /// Empties the slot and persists that: one flush and one fence.
    pub fn clear(&self) -> Result<()> {
        stage_clear(self.inner, self.offset);
        self.inner.fence()
    }

    /// The slot's target word, outside the checksum: a place to publish a block into.
    pub fn target<T>(&self) -> &'p PAtomicPtr<T> {
        PAtomicPtr::from_word(self.inner.map.word(self.offset + 56))
    }
}

/// The log slots of the calling thread's lane ([`Pool::thread_log`](crate::Pool::thread_log)).
#[derive(Debug, Clone, Copy)]
pub struct ThreadLog<'p> {
    inner: &'p Inner,
    lane: usize,
}

impl<'p> ThreadLog<'p> {
    pub(crate) fn new(inner: &'p Inner, lane: usize) -> Self {
        Self { inner, lane }
    }

    /// The lane's index.
    pub fn lane(&self) -> usize {
        self.lane
    }

    /// The number of slots.
    pub fn len(&self) -> usize {
        self.inner.geo.log_slots as usize
    }

    /// Whether the pool has no user log slots.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Slot `i`, if `i < len()`.
    pub fn slot(&self, i: usize) -> Option<LogSlot<'p>> {
        (i < self.len())
            .then(|| LogSlot::new(self.inner, self.lane, self.inner.geo.user_log(self.lane, i)))
    }
}
