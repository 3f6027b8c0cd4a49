//! A concurrent append-only arena: values are placed one at a time through `&self`, never move,
//! and are all dropped together with the arena.
//!
//! Index parts that live exactly as long as their container take their memory from here: the
//! entries and nodes of an XIndex-R delta index (XIndex §3.5.1, which frees a group's buffer
//! whole) and the chain nodes of an XIndex-H group (§2.6 of the digest). One heap block per part
//! would put `malloc` on every insert and a `free` per part on every retirement; worse, glibc's
//! `malloc` occasionally consolidates every small block freed into its fastbins since the last
//! time, inside whichever allocation finds its heap top used up. After an index's small blocks
//! were freed, single 24-byte `Box::new`s of delta entries took 10–13 ms (measured in the `rw`
//! experiment; with fastbins disabled, no operation took over 0.6 ms). Chunks are few and large,
//! and nothing here frees a small block.
//!
//! Chunks grow geometrically, from `first_chunk` values to at most `max_chunk`, so a container
//! that holds few values costs little and a large one allocates rarely. A value takes a slot with
//! one `fetch_add` on the newest chunk's count; the thread that finds the chunk full allocates
//! the next one with its value in slot 0 and installs it with a CAS on the newest-chunk pointer.
//! A thread that loses that race takes its value back, frees its unpublished chunk and tries the
//! winner's. Chunks are linked newest first and unlinked only when the arena is dropped.
//!
//! Chunks come from where [`large_array`] places what writes allocate: on Linux, the writers' heap
//! of huge-page regions, whose pages a background thread populates ahead of use. A chunk's slots
//! are written one insert at a time, long after the chunk was allocated; on pages fresh from
//! `malloc`, the first write to each page faulted on that insert's path, about once in a hundred
//! inserts while an index's delta indexes grew (`rw` at write ratio 0.5 on 10M keys: p99.9 about 5
//! µs, under 2 µs from the huge-page heap; the measurement log, session 33).

use std::alloc::Layout;
use std::marker::PhantomData;
use std::mem::size_of;
use std::ptr::{self, NonNull};
use std::sync::Mutex;

use crate::large_array::{self, Placement, Source};
use crate::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

/// The fewest bytes of a chunk, its head included. glibc keeps freed blocks of up to 128 bytes
/// (160 at most, by its `mxfast` tunable) in the fastbins whose consolidation stalls `malloc`;
/// an arena never frees one.
const MIN_CHUNK_BYTES: usize = 256;

/// Values of type `T`, each at a fixed address until the arena is dropped.
///
/// ```
/// use concurrency::arena::Arena;
///
/// let arena = Arena::new(2, 8);
/// let a = arena.alloc(String::from("a"));
/// let b = arena.alloc(String::from("b"));
/// let c = arena.alloc(String::from("c"));
/// assert_eq!((a.as_str(), b.as_str(), c.as_str()), ("a", "b", "c"));
/// assert_eq!(arena.len(), 3);
/// ```
pub struct Arena<T> {
    /// The newest chunk; null before the first value.
    newest: AtomicPtr<Chunk<T>>,
    /// Slots of the first chunk.
    first_chunk: usize,
    /// The most slots of a chunk.
    max_chunk: usize,
    /// The arena owns `T`s: sending it sends them (`T: Send`), and sharing it lets any thread
    /// place a value that another thread may drop and every thread may read (`T: Send + Sync`).
    /// A `Mutex<T>` is `Sync` exactly when `T` is `Send`.
    _owns: PhantomData<(T, Mutex<T>)>,
}

/// The head of a chunk: one allocation holds the head and, after it, `len` slots of `T`,
/// filled in order.
struct Chunk<T> {
    /// Slots handed out; it passes `len` once the chunk is full (failed takers count).
    taken: AtomicUsize,
    /// Slots of the chunk.
    len: usize,
    /// The chunk installed before this one, owned by this one.
    older: *mut Chunk<T>,
    /// Where the chunk's memory came from.
    source: Source,
    _slots: PhantomData<T>,
}

impl<T> Chunk<T> {
    /// Where the slots start, from the head's address.
    const SLOTS_OFFSET: usize = size_of::<Self>().next_multiple_of(align_of::<T>());

    /// The slots a chunk needs to hold at least `len` and to span [`MIN_CHUNK_BYTES`] (a
    /// zero-sized type's chunks are padded to that size by [`layout`](Self::layout)).
    fn slots_for(len: usize) -> usize {
        match size_of::<T>() {
            0 => len,
            size => len.max(
                MIN_CHUNK_BYTES
                    .saturating_sub(Self::SLOTS_OFFSET)
                    .div_ceil(size),
            ),
        }
    }

    /// The allocation of a chunk of `len` slots, at least [`MIN_CHUNK_BYTES`] long.
    fn layout(len: usize) -> Layout {
        Layout::array::<T>(len)
            .and_then(|slots| Layout::new::<Self>().extend(slots))
            .and_then(|(layout, offset)| {
                debug_assert_eq!(offset, Self::SLOTS_OFFSET);
                Layout::from_size_align(layout.size().max(MIN_CHUNK_BYTES), layout.align())
            })
            .expect("an arena chunk fits the address space")
    }

    /// A chunk of `len >= 1` slots holding `value` in slot 0, unpublished.
    fn with_first(len: usize, value: T, older: *mut Self) -> *mut Self {
        let (memory, source) = large_array::allocate(Self::layout(len), Placement::Writes);
        let chunk = memory.as_ptr().cast::<Self>();
        let head = Self {
            taken: AtomicUsize::new(1),
            len,
            older,
            source,
            _slots: PhantomData,
        };
        // SAFETY: `chunk` is a fresh allocation of the layout of `len` slots, aligned for the head
        // and the slots, with room for the head and `len >= 1` slots; nobody else knows of it yet.
        unsafe {
            chunk.write(head);
            Self::slot(chunk, 0).write(value);
        }
        chunk
    }

    /// Slot `i` of `chunk` (`i < len`; the pointer is computed, not read). It derives from the
    /// raw pointer to the whole allocation, never from a `&Chunk`, whose permission would cover
    /// the head alone.
    fn slot(chunk: *mut Self, i: usize) -> *mut T {
        chunk
            .cast::<u8>()
            .wrapping_add(Self::SLOTS_OFFSET)
            .cast::<T>()
            .wrapping_add(i)
    }

    /// How many slots hold values.
    fn filled(&self) -> usize {
        self.taken.load(Ordering::Relaxed).min(self.len)
    }

    /// Frees `chunk`, dropping the values in its first `filled` slots; if one of their drops
    /// panics, the others are still dropped and the chunk's memory still freed.
    ///
    /// # Safety
    ///
    /// `chunk` came from [`with_first`](Self::with_first), is freed once, and nobody else
    /// accesses it; its first `filled` slots hold values, each dropped here once.
    unsafe fn free(chunk: *mut Self, filled: usize) {
        /// Frees the memory of a chunk whose values are dropped (or being dropped).
        struct Release<T>(*mut Chunk<T>);
        impl<T> Drop for Release<T> {
            fn drop(&mut self) {
                // SAFETY: `free`'s contract: the head is initialised and dropped once, here;
                // the allocation was made by `allocate` with the layout of `len` slots, which
                // returned `source`, and is freed once.
                unsafe {
                    let (len, source) = ((*self.0).len, (*self.0).source);
                    ptr::drop_in_place(self.0);
                    let memory = NonNull::new_unchecked(self.0.cast());
                    source.release(memory, Chunk::<T>::layout(len));
                }
            }
        }
        let release = Release(chunk);
        // SAFETY: the first `filled` slots hold values (the caller's contract), contiguous and
        // dropped once, here, as one slice, which keeps dropping after a panicking drop.
        unsafe {
            ptr::drop_in_place(ptr::slice_from_raw_parts_mut(Self::slot(chunk, 0), filled));
        }
        drop(release);
    }
}

impl<T> Arena<T> {
    /// An empty arena whose chunks grow from `first_chunk` slots to at most `max_chunk` (a
    /// fixed size when the two are equal). A chunk is never under 256 bytes, whatever these
    /// say: no block it frees is small enough for glibc's fastbins.
    ///
    /// # Panics
    ///
    /// If `first_chunk` is 0 or above `max_chunk`.
    pub fn new(first_chunk: usize, max_chunk: usize) -> Self {
        assert!(
            (1..=max_chunk).contains(&first_chunk),
            "an arena's first chunk has between 1 and max_chunk slots"
        );
        // The largest chunk must be allocatable: fail here, not inside an `alloc` that may run
        // under its caller's locks.
        Chunk::<T>::layout(Chunk::<T>::slots_for(max_chunk));
        Self {
            newest: AtomicPtr::new(ptr::null_mut()),
            first_chunk: Chunk::<T>::slots_for(first_chunk),
            max_chunk: Chunk::<T>::slots_for(max_chunk),
            _owns: PhantomData,
        }
    }

    /// Places `value` in a slot of its own and returns it; it stays there, at this address,
    /// until the arena is dropped.
    pub fn alloc(&self, value: T) -> &T {
        let mut value = value;
        let mut newest = self.newest.load(Ordering::Acquire);
        loop {
            // SAFETY: a chunk is published fully built (the CAS below with `Release`, loads
            // with `Acquire`) and freed only when the arena is dropped, which `&self` excludes.
            let len = match unsafe { newest.as_ref() } {
                Some(chunk) => {
                    // Distinct `fetch_add` results give distinct slots.
                    let i = chunk.taken.fetch_add(1, Ordering::Relaxed);
                    if i < chunk.len {
                        let slot = Chunk::slot(newest, i);
                        // SAFETY: slot `i` exists, was handed to this call alone and is written
                        // once; it lives as long as the arena.
                        return unsafe {
                            slot.write(value);
                            &*slot
                        };
                    }
                    chunk.len.saturating_mul(2).min(self.max_chunk)
                }
                None => self.first_chunk,
            };
            // Another thread may have installed the next chunk meanwhile: take a slot there
            // rather than allocate a chunk only to free it when the CAS fails.
            let seen = self.newest.load(Ordering::Acquire);
            if seen != newest {
                newest = seen;
                continue;
            }
            let fresh = Chunk::with_first(len, value, newest);
            match self
                .newest
                .compare_exchange(newest, fresh, Ordering::AcqRel, Ordering::Acquire)
            {
                // SAFETY: `fresh` is now owned by the arena, which outlives `&self`, and its slot 0
                // was kept for this call by `taken: 1`.
                Ok(_) => return unsafe { &*Chunk::slot(fresh, 0) },
                Err(seen) => {
                    // SAFETY: the CAS failed, so `fresh` was never published: this thread owns
                    // it, takes back the value in slot 0 (which is then empty) and frees it once.
                    value = unsafe {
                        let value = Chunk::slot(fresh, 0).read();
                        Chunk::free(fresh, 0);
                        value
                    };
                    newest = seen;
                }
            }
        }
    }

    /// The chunks, newest first.
    fn chunks(&self) -> impl Iterator<Item = &Chunk<T>> {
        let mut next = self.newest.load(Ordering::Acquire);
        std::iter::from_fn(move || {
            // SAFETY: as in `alloc`: chunks live until the arena is dropped.
            let chunk = unsafe { next.as_ref() }?;
            next = chunk.older;
            Some(chunk)
        })
    }

    /// Requests the cache line the next [`alloc`](Self::alloc) takes its slot number from (the
    /// newest chunk's head), for a caller that knows an `alloc` will follow its other misses.
    #[inline]
    pub fn request_alloc(&self) {
        crate::prefetch::line(self.newest.load(Ordering::Acquire));
    }

    /// Values placed so far (exact when no `alloc` runs concurrently).
    pub fn len(&self) -> usize {
        self.chunks().map(Chunk::filled).sum()
    }

    /// Whether no value was placed yet.
    pub fn is_empty(&self) -> bool {
        self.newest.load(Ordering::Acquire).is_null()
    }

    /// Calls `f` on every value placed so far, chunk by chunk (newest first), each chunk's
    /// values in the order they were placed: a pass over memory in address order, where
    /// following links between the values would miss the cache on each one.
    ///
    /// # Safety
    ///
    /// Every `alloc` on this arena returned before this call (happens-before it), and none
    /// runs until it returns: a slot being written while it is read here would be a data race.
    pub unsafe fn for_each_settled<'a>(&'a self, mut f: impl FnMut(&'a T)) {
        let mut next = self.newest.load(Ordering::Acquire);
        // SAFETY: chunks live until the arena is dropped, which `&self` excludes; by the
        // caller's contract the first `filled` slots of each were written by `alloc`s that
        // happened before this call and none is written during it.
        while let Some(chunk) = unsafe { next.as_ref() } {
            for i in 0..chunk.filled() {
                // SAFETY: as above: slot `i` holds a value, only read from here on.
                f(unsafe { &*Chunk::slot(next, i) });
            }
            next = chunk.older;
        }
    }

    /// Heap bytes of the chunks, their unused slots included (not memory the values own).
    pub fn bytes(&self) -> usize {
        self.chunks()
            .map(|chunk| Chunk::<T>::layout(chunk.len).size())
            .sum()
    }
}

impl<T> Drop for Arena<T> {
    /// Drops the values chunk by chunk, the newest chunk first and each chunk's values in the
    /// order they were placed. If a drop panics, that chunk is still freed whole and the older
    /// chunks are leaked, never freed twice.
    fn drop(&mut self) {
        let mut next = self.newest.load(Ordering::Acquire);
        while !next.is_null() {
            // SAFETY: exclusive access; every chunk was published once and is reachable once,
            // from the newest chunk or its successor. Its first `filled` slots were each written
            // once by the `alloc` that took them, and every such call returned before `&mut self`.
            unsafe {
                let (older, filled) = ((*next).older, (*next).filled());
                Chunk::free(next, filled);
                next = older;
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize as StdAtomicUsize;

    use super::*;

    /// Counts its drops.
    struct Counted(Arc<StdAtomicUsize>, usize);

    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn values_keep_their_addresses_and_are_dropped_once() {
        let drops = Arc::new(StdAtomicUsize::new(0));
        // 16-byte values after a 32-byte head: 15 of them make a chunk of 272 bytes.
        let arena = Arena::new(15, 60);
        let placed: Vec<&Counted> = (0..200)
            .map(|i| arena.alloc(Counted(Arc::clone(&drops), i)))
            .collect();
        for (i, value) in placed.iter().enumerate() {
            assert_eq!(value.1, i);
        }
        assert_eq!(arena.len(), 200);
        // Chunks of 15, 30, 60, 60 and 60 slots (225, 25 unused).
        assert_eq!(arena.chunks().count(), 5);
        assert_eq!(arena.bytes(), 5 * 32 + 225 * 16);
        assert_eq!(drops.load(Ordering::Relaxed), 0);
        drop(arena);
        assert_eq!(drops.load(Ordering::Relaxed), 200);
    }

    #[test]
    fn a_settled_pass_visits_every_value_once_newest_chunk_first() {
        // 8-byte values, 32-byte head: chunks of 28 slots (the 256-byte minimum), then 56 and 58.
        let arena = Arena::<u64>::new(1, 58);
        // SAFETY: no value was placed, and none is placed during the pass.
        unsafe { arena.for_each_settled(|_| panic!("an empty arena holds no value")) };
        for i in 0..100 {
            arena.alloc(i);
        }
        let mut seen = Vec::new();
        // SAFETY: every `alloc` above returned before the pass, and none runs during it.
        unsafe { arena.for_each_settled(|&v| seen.push(v)) };
        // Chunks of 28, 56 and 58 slots: the newest holds 16 values, the others are full.
        let expected: Vec<u64> = (84..100).chain(28..84).chain(0..28).collect();
        assert_eq!(seen, expected);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn chunks_come_from_the_writers_heap() {
        use crate::huge_heap::HugeHeap;
        let arena = Arena::<u64>::new(4, 4);
        let value: *const u64 = arena.alloc(9);
        assert!(HugeHeap::writers().contains(value.cast()));
        assert!(!HugeHeap::global().contains(value.cast()));
    }

    #[test]
    fn small_chunks_are_rounded_up_past_the_fastbins() {
        let arena = Arena::<u64>::new(1, 4);
        arena.alloc(7);
        assert_eq!(arena.bytes(), MIN_CHUNK_BYTES);
        let arena = Arena::<[u8; 3]>::new(1, 1);
        arena.alloc([1, 2, 3]);
        assert!(arena.bytes() >= MIN_CHUNK_BYTES);
        let arena = Arena::<()>::new(1, 2);
        for _ in 0..5 {
            arena.alloc(());
        }
        assert_eq!(arena.len(), 5);
        // Chunks of 1, 2 and 2 values of no size, each padded to the minimum.
        assert_eq!(arena.bytes(), 3 * MIN_CHUNK_BYTES);
    }

    #[test]
    fn over_aligned_values_are_aligned() {
        #[repr(align(64))]
        struct Line(u8);
        let arena = Arena::new(1, 4);
        for i in 0..10 {
            let value = arena.alloc(Line(i));
            assert_eq!(ptr::from_ref(value) as usize % 64, 0);
            assert_eq!(value.0, i);
        }
    }

    #[test]
    fn a_panicking_drop_does_not_stop_the_others_of_its_chunk() {
        /// Counts its drops; the one marked `panics` panics after counting.
        struct Fragile {
            drops: Arc<StdAtomicUsize>,
            panics: bool,
        }
        impl Drop for Fragile {
            fn drop(&mut self) {
                self.drops.fetch_add(1, Ordering::Relaxed);
                assert!(!self.panics, "this drop panics");
            }
        }
        let drops = Arc::new(StdAtomicUsize::new(0));
        // One chunk of 15 slots (16-byte values); the third value panics.
        let arena = Arena::new(15, 15);
        for i in 0..10 {
            arena.alloc(Fragile {
                drops: Arc::clone(&drops),
                panics: i == 2,
            });
        }
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(arena)));
        assert!(outcome.is_err());
        assert_eq!(drops.load(Ordering::Relaxed), 10);
    }

    #[test]
    #[should_panic(expected = "fits the address space")]
    fn an_impossible_largest_chunk_is_refused_at_once() {
        Arena::<[u64; 1024]>::new(1, usize::MAX / 1024);
    }

    #[test]
    fn an_empty_arena_allocates_nothing() {
        let arena = Arena::<u64>::new(8, 8);
        assert!(arena.is_empty());
        assert_eq!((arena.len(), arena.bytes()), (0, 0));
        arena.alloc(1);
        assert!(!arena.is_empty());
    }

    #[test]
    fn threads_get_distinct_slots() {
        let arena = Arena::new(1, 64);
        let per_thread = 10_000;
        let addresses: Vec<Vec<(usize, usize)>> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..4)
                .map(|t| {
                    let arena = &arena;
                    scope.spawn(move || {
                        (0..per_thread)
                            .map(|i| {
                                let value = arena.alloc(t * per_thread + i);
                                (ptr::from_ref(value) as usize, *value)
                            })
                            .collect()
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|w| w.join().expect("no panic"))
                .collect()
        });
        let mut all: Vec<(usize, usize)> = addresses.into_iter().flatten().collect();
        assert_eq!(arena.len(), all.len());
        all.sort_unstable();
        all.dedup_by_key(|(address, _)| *address);
        assert_eq!(all.len(), 4 * per_thread, "two values shared a slot");
        let mut values: Vec<usize> = all.iter().map(|&(_, v)| v).collect();
        values.sort_unstable();
        assert!(values.iter().copied().eq(0..4 * per_thread));
    }

    #[test]
    #[should_panic(expected = "first chunk")]
    fn a_zero_first_chunk_is_refused() {
        Arena::<u64>::new(0, 4);
    }
}
