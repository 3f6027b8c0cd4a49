//! Buckets, chain nodes and their record operations (Algorithm 8's `bucket_t` and `chain_t`;
//! digest §2.6, §3.18, §4.1).
//!
//! A [`Record`] is 24 bytes: XIndex's 8-byte meta word ([`RecordLock`]: `is_ptr`, `removed`,
//! `uninitialized`, lock, version), a key word (see `key`) and a value word. Buckets are records
//! inline in the group's bucket array, so a lookup that hits its bucket touches one cache line
//! (two when the record straddles lines). A key whose home bucket is taken first tries the
//! buckets up to two away (the same or the adjacent cache lines; a learned model's conflicts
//! are mostly a key pushed into its neighbour's bucket by noise, leaving its own empty), then
//! goes to a chain of [`Node`]s (a record plus a `next` pointer): every chain node a lookup
//! follows is a cache miss, which is what the probing saves. Chain heads live in a separate
//! array, one head per [`CHAIN_SPAN`] buckets: the paper's `bucket_t` carries its own chain
//! pointer, which would make every bucket 32 bytes; with probing chains are short, and sharing a
//! head between two buckets keeps a group at 28 bytes per bucket.
//!
//! While `is_ptr` is set (between a resize's migration and its copy phase) a record's value
//! word holds the address of the authoritative record in the old group, which stays allocated
//! until barrier B3; readers validate the pointer record around their read of the target, and
//! writers lock the pointer record, then the target.
//!
//! Keys never change once a record is initialised and records are never unlinked from a live
//! group, so finding a key's record needs no validation; at most one record per group holds a
//! key (see `group`). This module holds the `unsafe` code that follows chain links and record
//! pointers.

use std::marker::PhantomData;
use std::ptr;

use concurrency::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use concurrency::{RecordGuard, RecordLock, RecordMeta, prefetch};

use crate::key::HashKey;

/// Buckets per chain head.
pub(crate) const CHAIN_SPAN: usize = 2;

/// One record: meta word, key word, value word.
pub(crate) struct Record {
    lock: RecordLock,
    key: AtomicU64,
    value: AtomicU64,
}

/// A chain node: a record and the next node. Nodes live in their group's arena
/// ([`concurrency::arena`]).
/// Aligned to their size, 32 bytes, so that following a node touches one cache line, not two.
#[repr(align(32))]
pub(crate) struct Node {
    record: Record,
    next: AtomicPtr<Node>,
}

impl Node {
    /// A node in no chain yet, holding `key_word` live with `value` (or, with `is_ptr`, a
    /// pointer to `value`'s record). Built whole before [`push`] publishes it, so filling it
    /// takes plain stores, not a lock on a line that was just allocated.
    pub(crate) fn new(key_word: u64, value: u64, is_ptr: bool) -> Self {
        Self {
            record: Record {
                lock: RecordLock::new(RecordMeta::new().with_ptr(is_ptr)),
                key: AtomicU64::new(key_word),
                value: AtomicU64::new(value),
            },
            next: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// The node's record.
    pub(crate) fn record(&self) -> &Record {
        &self.record
    }
}

/// What a consistent read of a record found for its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Seen {
    /// The key is live with this value.
    Live(u64),
    /// The key's record is removed (directly or through its pointer target).
    Removed,
}

impl Record {
    /// An uninitialised bucket.
    pub(crate) fn empty() -> Self {
        Self {
            lock: RecordLock::new(RecordMeta::new().with_uninitialized(true)),
            key: AtomicU64::new(0),
            value: AtomicU64::new(0),
        }
    }

    /// The current meta word (`Acquire`).
    #[inline]
    pub(crate) fn meta(&self) -> RecordMeta {
        self.lock.load()
    }

    /// The key word; meaningful once an `Acquire` load saw the record initialised.
    #[inline]
    pub(crate) fn key_word(&self) -> u64 {
        self.key.load(Ordering::Relaxed)
    }

    /// Whether this record is initialised and holds `key`. Keys never change once set.
    #[inline]
    pub(crate) fn holds<K: HashKey>(&self, key: &K::Query) -> bool {
        !self.meta().is_uninitialized()
            // SAFETY: the record is initialised (seen with `Acquire`), so its key word is a
            // live word of its group, which outlives `&self`.
            && unsafe { K::word_eq(self.key_word(), key) }
    }

    /// A consistent read of an initialised record, following a pointer record to its target.
    #[inline]
    pub(crate) fn read(&self) -> Seen {
        loop {
            let meta = self.lock.read_begin();
            let value = self.value.load(Ordering::Relaxed);
            let seen = if meta.is_ptr() {
                // The value word is the target's address only if no copy phase replaced it
                // meanwhile: validate before following it (found by the loom model of a get
                // during the copy phase), and again after, so that the target's state is the
                // key's state at a point where this record still pointed to it.
                if !self.lock.validate(meta) {
                    continue;
                }
                // SAFETY: validated above: `value` is the address stored with `is_ptr`, whose
                // target lives until barrier B3 of its resize, and the reader is online.
                let target = unsafe { target(value) };
                target.read_plain()
            } else if meta.is_removed() {
                Seen::Removed
            } else {
                Seen::Live(value)
            };
            if self.lock.validate(meta) {
                return seen;
            }
        }
    }

    /// Requests the cache line of this record's target if it looks like a pointer record. A
    /// hint only: the words are read without validation and the address is never followed.
    #[inline]
    pub(crate) fn prefetch_target(&self) {
        if self.meta().is_ptr() {
            prefetch::line(self.value.load(Ordering::Relaxed) as usize as *const Record);
        }
    }

    /// A consistent read of a record that is not a pointer record.
    fn read_plain(&self) -> Seen {
        loop {
            let meta = self.lock.read_begin();
            let value = self.value.load(Ordering::Relaxed);
            if self.lock.validate(meta) {
                return if meta.is_removed() {
                    Seen::Removed
                } else {
                    Seen::Live(value)
                };
            }
        }
    }

    /// Locks the record.
    pub(crate) fn lock(&self) -> Locked<'_> {
        Locked {
            record: self,
            guard: self.lock.lock(),
        }
    }

    /// Locks the record if no one holds it.
    pub(crate) fn try_lock(&self) -> Option<Locked<'_>> {
        Some(Locked {
            record: self,
            guard: self.lock.try_lock()?,
        })
    }
}

/// The record a pointer record's value word designates.
///
/// # Safety
/// `value` is the value word of a pointer record, read while its target is allocated and not
/// yet freed for the lifetime `'a`.
unsafe fn target<'a>(value: u64) -> &'a Record {
    // SAFETY: by the caller's contract, a live `Record` address stored by `set_pointer`.
    unsafe { &*(value as usize as *const Record) }
}

/// What a write found through a locked record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Written {
    /// The key was live: the old value; the write took effect.
    Updated(u64),
    /// The key was removed and the write did nothing.
    WasRemoved,
    /// This was a pointer record whose target had been removed through the old group: the
    /// record is now plainly removed, and the group's live count, which counted it, must
    /// drop by one.
    PointerToRemoved,
}

/// A locked record (a pointer record's target is locked on demand, after it).
pub(crate) struct Locked<'a> {
    record: &'a Record,
    guard: RecordGuard<'a>,
}

impl Locked<'_> {
    /// The meta word as locked.
    pub(crate) fn meta(&self) -> RecordMeta {
        self.guard.meta()
    }

    /// Records in this home bucket's chain filter that a key with filter bit `bit`
    /// ([`chain_filter_bit`]) went to the chain.
    pub(crate) fn mark_chained(&mut self, bit: u8) {
        self.guard.add_tag(bit);
    }

    /// Initialises an uninitialised bucket with `key_word` and `value` (or, with `is_ptr`, a
    /// pointer to `value`'s record).
    pub(crate) fn fill(&mut self, key_word: u64, value: u64, is_ptr: bool) {
        self.record.key.store(key_word, Ordering::Relaxed);
        self.record.value.store(value, Ordering::Relaxed);
        self.guard.set_uninitialized(false);
        self.guard.set_ptr(is_ptr);
    }

    /// Writes a live key in place, through the pointer if this is a pointer record: `new` of
    /// the old value, called under the lock, is the new value (`Some`) or removes the key
    /// (`None`). A removed key is left alone and `new` is not called. Removing through a
    /// pointer also marks this record removed and plain: the target is then removed for good
    /// (a frozen group never revives), so this record becomes the key's only state.
    pub(crate) fn write(&mut self, new: &mut impl FnMut(u64) -> Option<u64>) -> Written {
        let meta = self.guard.meta();
        if meta.is_ptr() {
            // SAFETY: the target of a pointer record lives until barrier B3, after the copy
            // phase that clears the pointer, which needs this record's lock, held here.
            let target = unsafe { target(self.record.value.load(Ordering::Relaxed)) };
            let mut target = target.lock();
            let written = target.write(new);
            if target.meta().is_removed() {
                self.guard.set_ptr(false);
                self.guard.set_removed(true);
            }
            return match written {
                Written::Updated(old) => Written::Updated(old),
                _ => Written::PointerToRemoved,
            };
        }
        if meta.is_removed() {
            return Written::WasRemoved;
        }
        let old = self.record.value.load(Ordering::Relaxed);
        match new(old) {
            Some(value) => self.record.value.store(value, Ordering::Relaxed),
            None => self.guard.set_removed(true),
        }
        Written::Updated(old)
    }

    /// Makes a removed record live with `value`: only in the group that currently takes
    /// inserts. Call after [`write`](Self::write) found the key removed.
    pub(crate) fn revive(&mut self, value: u64) {
        self.record.value.store(value, Ordering::Relaxed);
        self.guard.set_ptr(false);
        self.guard.set_removed(false);
    }

    /// The copy phase's `replace_pointer`: copies the target's state into a pointer record.
    /// Returns whether the target was removed (the record is then removed too).
    pub(crate) fn replace_pointer(&mut self) -> bool {
        if !self.guard.meta().is_ptr() {
            return false;
        }
        // SAFETY: as in `write`: the target lives until B3, which follows the copy phase.
        let target = unsafe { target(self.record.value.load(Ordering::Relaxed)) };
        let seen = target.read_plain();
        self.guard.set_ptr(false);
        match seen {
            Seen::Live(value) => {
                self.record.value.store(value, Ordering::Relaxed);
                false
            }
            Seen::Removed => {
                self.guard.set_removed(true);
                true
            }
        }
    }
}

/// An iterator over a chain's nodes, newest first.
pub(crate) struct Chain<'a> {
    next: *const Node,
    _group: PhantomData<&'a Node>,
}

impl<'a> Chain<'a> {
    /// The chain whose head is `head`; nodes live as long as the head's group.
    pub(crate) fn new(head: &'a AtomicPtr<Node>) -> Self {
        Self {
            next: head.load(Ordering::Acquire),
            _group: PhantomData,
        }
    }
}

impl<'a> Iterator for Chain<'a> {
    type Item = &'a Record;

    #[inline]
    fn next(&mut self) -> Option<&'a Record> {
        // SAFETY: nodes are published fully built (Release CAS, Acquire loads) and live in
        // their group's arena, freed only with the group, which outlives `'a`.
        let node = unsafe { self.next.as_ref() }?;
        self.next = node.next.load(Ordering::Acquire);
        Some(&node.record)
    }
}

/// Pushes `node` onto the chain at `head`. `node` was built by [`Node::new`] in the arena of
/// `head`'s group (so that it lives as long as the chain) and given to no one else; the
/// `Release` CAS publishes its record. The caller holds the lock of the key's home bucket, so no
/// other record for the key can be pushed meanwhile; pushes for other buckets sharing the head
/// race on the CAS only.
pub(crate) fn push(head: &AtomicPtr<Node>, node: &Node) {
    let published = ptr::from_ref(node).cast_mut();
    let mut current = head.load(Ordering::Relaxed);
    loop {
        node.next.store(current, Ordering::Relaxed);
        match head.compare_exchange_weak(current, published, Ordering::Release, Ordering::Relaxed) {
            Ok(_) => return,
            Err(seen) => current = seen,
        }
    }
}

/// The bit standing for `key` in its home bucket's chain filter: the tag of the home's meta word
/// ([`RecordMeta::tag`]) has a bit set for every key of that home pushed onto the chain, added
/// under the home's lock and published with its unlock, so a lookup whose bit is clear knows
/// the chain does not hold its key without following it. An insert of a new key into a full
/// neighbourhood walked the whole chain to find it absent: a miss per node, about a tenth of the
/// `grow` experiment's time. The bit comes from the low bits of the key's hash, which no
/// placement uses.
#[inline]
pub(crate) fn chain_filter_bit<K: HashKey>(key: &K::Query) -> u8 {
    1 << (K::hash(key) & 7)
}

/// Heap bytes of a chain node.
pub(crate) const NODE_BYTES: usize = std::mem::size_of::<Node>();

/// Heap bytes per bucket: the record and its share of a chain head.
pub(crate) const BUCKET_BYTES: usize =
    std::mem::size_of::<Record>() + std::mem::size_of::<AtomicPtr<Node>>() / CHAIN_SPAN;

/// The address of a record, as a pointer record's value word.
pub(crate) fn address(record: &Record) -> u64 {
    ptr::from_ref(record) as usize as u64
}
