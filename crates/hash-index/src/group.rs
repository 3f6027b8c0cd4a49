//! A group (Algorithm 8's `group_t`; digest §2.6, §3.18): a bucket placement, the bucket
//! array, chain heads, the `tmp_group` link and live-key counters, with the point operations
//! of Algorithm 9 on one group (and `update`, a write of a present key only, which searches
//! as `remove` does).
//!
//! Lookup order, the same for every operation (invariant I3, §4.2.4): the key's home bucket, the
//! buckets near it ([`REACH`]), then its chain (see `record`), then, while the group is being
//! resized, the `tmp_group`. A group never holds two records for one key, and only the last
//! location may take a new key (I1): a group takes new keys (fills its home bucket, pushes onto a
//! chain, or revives a removed record) only while its `tmp_group` is NULL, and checks that under
//! the lock of the key's home bucket. Every insert of a key holds its home bucket's lock while it
//! looks for the key and places it, so two inserts of one key never both place it; a neighbour
//! bucket is taken with a `try_lock` (skipped if busy) and filled only if still uninitialised.
//! Reviving a removed record is the one insert that happens elsewhere: under the record's own lock,
//! with `tmp_group` read after taking it; a put that finds the group frozen locks that record too
//! before it gives up on the old group, so the same hand-off argument applies.
//! So `tmp_group ≠ NULL` *is* the paper's `frozen` flag, and there is no window in which a group
//! is frozen without a `tmp_group` to insert into: the resize allocates the new group before
//! freezing (see `resize`), and a put never waits for a resize (the paper's put retries until
//! `tmp_group` appears, digest §4.6 case 18).
//!
//! Why no key gets two records although an insert into a frozen group's `tmp_group` does not
//! hold the old group's lock: a put that finds the group frozen first locks the key's home
//! bucket in the old group and finds the key neither live there nor in the chain, then
//! unlocks and upserts into `tmp_group` (whose own home-bucket lock makes concurrent upserts
//! of one key meet). A put that would insert into the old group checks `tmp_group` under that
//! same home-bucket lock: if it locks after the frozen put, the lock hand-off makes it see
//! the non-NULL `tmp_group` (it read-happens-after the frozen put's read of it), so it goes to
//! `tmp_group` too; if it locks before, its record is in the old group when the frozen put
//! looks. Removed records in a frozen group are never revived, so a key that is not live in
//! the old group never becomes live there again.
//!
//! Lock order (no cycles): a home bucket, then a neighbour or chain node of the same group
//! (neighbours only by `try_lock`), then (for a pointer record) the target record in the old
//! group. Nothing holding an old group's lock takes a lock in the new group.

use std::marker::PhantomData;
use std::ops::Range;
use std::ptr;

use concurrency::arena::Arena;
use concurrency::large_array::LargeArray;
use concurrency::prefetch;
use concurrency::striped::StripedCounts;
use concurrency::sync::atomic::{AtomicPtr, Ordering};

use crate::key::HashKey;
use crate::model::{Placement, PlacementKind, Trained};
use crate::record::{
    self, CHAIN_SPAN, Chain, Locked, Node, Record, Seen, Written, chain_filter_bit,
};

/// How far from its home bucket a key may be placed before it goes to a chain: the buckets
/// within two on either side share the home bucket's cache line or its neighbours, so checking
/// them costs little next to following a chain node.
pub(crate) const REACH: usize = 2;

/// How many buckets ahead of the one it copies the copy phase requests a pointer record's
/// target: enough to cover a memory latency with the work of the buckets in between.
const COPY_LOOKAHEAD: usize = 16;

/// A group's count of its live keys (in [`Group`]'s striped counts).
const LIVE: usize = 0;

/// A group's count of its chain nodes.
const CHAIN_NODES: usize = 1;

/// Buckets of a group per slot of its chain arena's chunks: with chunks of `buckets / 32`
/// nodes, an arena leaves at most one byte per bucket unused (a node is 32 bytes), and a group
/// of a thousand buckets or more allocates once per 32 conflicts or more.
const BUCKETS_PER_CHAIN_NODE: usize = 32;

/// The most nodes of a chain arena's chunk (32 KiB): the insert that finds a chunk used up
/// allocates the next one, which must stay a matter of microseconds however large the group.
const MAX_CHAIN_CHUNK: usize = 1024;

/// One group of the index.
///
/// `repr(C)` keeps what every operation reads first (the placement, the bucket array and the
/// `tmp_group` link: 64 bytes) on the first cache line; the default layout put the cache-padded
/// counters first and spread these over two lines after them.
#[repr(C)]
pub(crate) struct Group<K: HashKey> {
    placement: Placement,
    buckets: LargeArray<Record>,
    /// The group being built by a resize (inserts go there); NULL when not resizing.
    tmp: AtomicPtr<Group<K>>,
    /// One chain head per `CHAIN_SPAN` buckets.
    chains: Box<[AtomicPtr<Node>]>,
    /// The chain nodes, freed in one piece with the group: an insert that conflicts takes a
    /// node with one `fetch_add` (no `malloc`), and a resize frees a few chunks, not a block per
    /// node (a `free` per node once took about a tenth of the `grow` experiment's time).
    arena: Arena<Node>,
    /// The conflict rate the placement had on the keys it was trained on.
    trained_conflict_rate: f64,
    /// [`LIVE`] keys (records of this group, pointer records counted while their target is
    /// live) and [`CHAIN_NODES`].
    counts: StripedCounts<2>,
    _key: PhantomData<fn() -> K>,
}

/// The outcome of an upsert on one group.
pub(crate) enum Upsert<'g, K: HashKey> {
    /// The put took effect; the previous value if the key was live.
    Done(Option<u64>),
    /// The group is frozen and does not hold the key live: continue in its `tmp_group`.
    Frozen(&'g Group<K>),
}

impl<K: HashKey> Group<K> {
    /// An empty group with the trained placement's buckets, all uninitialised.
    pub(crate) fn new(trained: Trained) -> Self {
        let slots = trained.placement.slots();
        Self {
            tmp: AtomicPtr::new(ptr::null_mut()),
            placement: trained.placement,
            trained_conflict_rate: trained.conflict_rate,
            buckets: LargeArray::from_fn(slots, |_| Record::empty()),
            chains: (0..slots.div_ceil(CHAIN_SPAN))
                .map(|_| AtomicPtr::new(ptr::null_mut()))
                .collect(),
            arena: {
                let chunk = (slots / BUCKETS_PER_CHAIN_NODE).clamp(1, MAX_CHAIN_CHUNK);
                Arena::new(chunk, chunk)
            },
            counts: StripedCounts::new(),
            _key: PhantomData,
        }
    }

    /// The bucket count.
    pub(crate) fn bucket_count(&self) -> usize {
        self.buckets.len()
    }

    /// Live keys (approximate while writers run).
    pub(crate) fn live(&self) -> i64 {
        self.counts.sum(LIVE)
    }

    /// Chain nodes (approximate while writers run).
    pub(crate) fn chain_nodes(&self) -> i64 {
        self.counts.sum(CHAIN_NODES)
    }

    /// The placement's kind.
    pub(crate) fn placement_kind(&self) -> PlacementKind {
        self.placement.kind()
    }

    /// The conflict rate the placement had when it was trained.
    pub(crate) fn trained_conflict_rate(&self) -> f64 {
        self.trained_conflict_rate
    }

    /// The `tmp_group` pointer (non-NULL while frozen).
    pub(crate) fn tmp_link(&self) -> &AtomicPtr<Group<K>> {
        &self.tmp
    }

    /// The `tmp_group`, if frozen.
    #[inline]
    pub(crate) fn tmp(&self) -> Option<&Group<K>> {
        let tmp = self.tmp.load(Ordering::Acquire);
        // SAFETY: a `tmp_group` becomes the group's successor in its root slot and is freed
        // only a grace period after it is unlinked in turn, which is after this group is
        // freed; the caller reached `self` while online, so both outlive `&self`.
        unsafe { tmp.as_ref() }
    }

    /// The chain head of bucket `b`.
    #[inline]
    fn chain(&self, b: usize) -> &AtomicPtr<Node> {
        &self.chains[b / CHAIN_SPAN]
    }

    /// The neighbours of bucket `b` a key placed at `b` may occupy, in lookup order: the
    /// buckets up to [`REACH`] away, nearest first.
    #[inline]
    fn neighbours(&self, b: usize) -> impl Iterator<Item = &Record> {
        (1..=REACH).flat_map(move |d| {
            let after = self.buckets.get(b + d);
            let before = b.checked_sub(d).map(|i| &self.buckets[i]);
            after.into_iter().chain(before)
        })
    }

    /// Requests the cache lines a placement at bucket `b` may touch after the home bucket's
    /// (its neighbours' and its chain head's), so that their misses overlap the home's instead
    /// of following it one by one.
    #[inline]
    fn prefetch_neighbourhood(&self, b: usize) {
        prefetch::around(&self.buckets, b, REACH);
        prefetch::line(self.chain(b));
    }

    /// Requests the lines a `get` of `key` in this group reads first (its home bucket, the
    /// neighbours and the chain head), without reading them, and returns the home bucket for
    /// [`Group::get_at`]: a batch of lookups requests every key's lines before the first
    /// search, so that their misses overlap.
    #[inline]
    pub(crate) fn request(&self, key: &K::Query) -> usize {
        let b = self.placement.slot::<K>(key);
        self.prefetch_neighbourhood(b);
        b
    }

    /// The record holding `key` in this group, if any: its home bucket `b`, a neighbour of it,
    /// or a node of its chain. An uninitialised home bucket means none of these holds it: a
    /// key goes elsewhere only when its home bucket is taken, and buckets are never emptied.
    /// The chain is followed only if the home's chain filter, in the meta word read first, has
    /// the key's bit: a key pushed onto the chain after that read is published by the home's
    /// unlock, after it, so this lookup may order itself before that insert.
    #[inline]
    fn find(&self, b: usize, key: &K::Query) -> Option<&Record> {
        let home = &self.buckets[b];
        let meta = home.meta();
        if meta.is_uninitialized() {
            return None;
        }
        // SAFETY: initialised (seen with Acquire), so the key word is live for `&self`.
        if unsafe { K::word_eq(home.key_word(), key) } {
            return Some(home);
        }
        if let Some(record) = self.neighbours(b).find(|r| r.holds::<K>(key)) {
            return Some(record);
        }
        self.chained(b, meta.tag(), key)
    }

    /// The node of bucket `b`'s chain holding `key`, if `filter` (the chain filter of `key`'s
    /// home bucket `b`) says the chain may hold it.
    #[inline]
    fn chained(&self, b: usize, filter: u8, key: &K::Query) -> Option<&Record> {
        if filter & chain_filter_bit::<K>(key) == 0 {
            return None;
        }
        Chain::new(self.chain(b)).find(|r| r.holds::<K>(key))
    }

    /// Pushes a record for `key` onto the chain of its home bucket `b`, whose lock is `home`,
    /// and adds the key to the home's chain filter.
    fn push_chained(
        &self,
        b: usize,
        home: &mut Locked<'_>,
        key: &K::Query,
        value: u64,
        is_ptr: bool,
    ) {
        let node = self.arena.alloc(Node::new(K::new_word(key), value, is_ptr));
        record::push(self.chain(b), node);
        home.mark_chained(chain_filter_bit::<K>(key));
        self.counts.add(CHAIN_NODES, 1);
    }

    /// Takes a free neighbour of bucket `b` for a new record, if one is free and not locked
    /// (a held lock is skipped rather than waited for, so two inserts probing towards each
    /// other's home bucket never deadlock). The caller holds `b`'s lock.
    fn claim_neighbour(&self, b: usize, key: &K::Query, value: u64, is_ptr: bool) -> bool {
        for record in self.neighbours(b) {
            if record.meta().is_uninitialized()
                && let Some(mut locked) = record.try_lock()
                && locked.meta().is_uninitialized()
            {
                locked.fill(K::new_word(key), value, is_ptr);
                return true;
            }
        }
        false
    }

    /// `get` (Algorithm 9): this group, then the `tmp_group`s.
    #[inline]
    pub(crate) fn get(&self, key: &K::Query) -> Option<u64> {
        self.get_at(self.placement.slot::<K>(key), key)
    }

    /// `get` of `key`, whose home bucket in this group is `b`.
    #[inline]
    pub(crate) fn get_at(&self, mut b: usize, key: &K::Query) -> Option<u64> {
        let mut group = self;
        loop {
            if let Some(record) = group.find(b, key)
                && let Seen::Live(value) = record.read()
            {
                return Some(value);
            }
            group = group.tmp()?;
            b = group.placement.slot::<K>(key);
        }
    }

    /// `put` on this group (Algorithm 9): update a live record, or take the key if this group
    /// takes inserts, or report the `tmp_group` to continue in.
    pub(crate) fn upsert(&self, key: &K::Query, value: u64) -> Upsert<'_, K> {
        let b = self.placement.slot::<K>(key);
        self.prefetch_neighbourhood(b);
        let home = &self.buckets[b];
        let mut locked = home.lock();
        // Read under the home bucket's lock: see the module comment.
        let tmp = self.tmp();
        if locked.meta().is_uninitialized() {
            if let Some(tmp) = tmp {
                return Upsert::Frozen(tmp);
            }
            locked.fill(K::new_word(key), value, false);
            self.counts.add(LIVE, 1);
            return Upsert::Done(None);
        }
        if home.holds::<K>(key) {
            return self.write_or_revive(&mut locked, value, tmp);
        }
        if let Some(record) = self
            .neighbours(b)
            .find(|r| r.holds::<K>(key))
            .or_else(|| self.chained(b, locked.meta().tag(), key))
        {
            // The key's record is permanent, so every put of the key meets on its lock; the
            // home lock is released first (two homes' puts must not wait on each other's
            // neighbour), and `tmp_group` is read again under the record's lock.
            drop(locked);
            let mut other = record.lock();
            let tmp = self.tmp();
            return self.write_or_revive(&mut other, value, tmp);
        }
        if let Some(tmp) = tmp {
            return Upsert::Frozen(tmp);
        }
        if self.claim_neighbour(b, key, value, false) {
            self.counts.add(LIVE, 1);
            return Upsert::Done(None);
        }
        self.push_chained(b, &mut locked, key, value, false);
        self.counts.add(LIVE, 1);
        Upsert::Done(None)
    }

    /// Writes `value` into the key's locked record, reviving it if it is removed and this
    /// group takes inserts.
    fn write_or_revive<'g>(
        &'g self,
        locked: &mut Locked<'_>,
        value: u64,
        tmp: Option<&'g Group<K>>,
    ) -> Upsert<'g, K> {
        match locked.write(&mut |_| Some(value)) {
            Written::Updated(old) => return Upsert::Done(Some(old)),
            Written::PointerToRemoved => self.counts.add(LIVE, -1),
            Written::WasRemoved => {}
        }
        match tmp {
            Some(tmp) => Upsert::Frozen(tmp),
            None => {
                locked.revive(value);
                self.counts.add(LIVE, 1);
                Upsert::Done(None)
            }
        }
    }

    /// `remove` on this group and then its `tmp_group`s; never inserts.
    pub(crate) fn remove(&self, key: &K::Query) -> Option<u64> {
        self.write_live(key, |_| None)
    }

    /// Replaces the value of a live `key` by `new` of it, on this group and then its
    /// `tmp_group`s; never inserts.
    pub(crate) fn update(&self, key: &K::Query, mut new: impl FnMut(u64) -> u64) -> Option<u64> {
        self.write_live(key, |old| Some(new(old)))
    }

    /// Writes a live `key` (see [`Locked::write`]) on this group and then its `tmp_group`s,
    /// and returns its old value; `None`, having written nothing, if no group holds it live.
    fn write_live(&self, key: &K::Query, mut new: impl FnMut(u64) -> Option<u64>) -> Option<u64> {
        let mut group = self;
        loop {
            let b = group.placement.slot::<K>(key);
            if let Some(record) = group.find(b, key) {
                let mut locked = record.lock();
                match locked.write(&mut new) {
                    Written::Updated(old) => {
                        if locked.meta().is_removed() {
                            group.counts.add(LIVE, -1);
                        }
                        return Some(old);
                    }
                    Written::PointerToRemoved => group.counts.add(LIVE, -1),
                    Written::WasRemoved => {}
                }
            }
            group = group.tmp()?;
        }
    }

    /// Resize migration (Algorithm 10 line 11): adds a pointer record to `target` for `key`,
    /// placed as an insert places a key (home bucket, a free nearby bucket, the chain), unless
    /// this (new) group already holds the key, inserted by a worker after the key stopped being
    /// live in the old group. Every insert of the key holds the home bucket's lock, as this
    /// does, so the check and the placement see all of the group's records for the key.
    pub(crate) fn place_pointer(&self, key: &K::Query, target: &Record) {
        let b = self.placement.slot::<K>(key);
        self.prefetch_neighbourhood(b);
        let home = &self.buckets[b];
        let mut locked = home.lock();
        let address = record::address(target);
        if locked.meta().is_uninitialized() {
            locked.fill(K::new_word(key), address, true);
            self.counts.add(LIVE, 1);
            return;
        }
        if home.holds::<K>(key)
            || self.neighbours(b).any(|r| r.holds::<K>(key))
            || self.chained(b, locked.meta().tag(), key).is_some()
        {
            return;
        }
        if !self.claim_neighbour(b, key, address, true) {
            self.push_chained(b, &mut locked, key, address, true);
        }
        self.counts.add(LIVE, 1);
    }

    /// The number of chain heads (the unit of [`visit`](Self::visit) ranges).
    pub(crate) fn chain_count(&self) -> usize {
        self.chains.len()
    }

    /// Calls `f` on every initialised record of the buckets and chains under the chain heads
    /// in `heads`.
    pub(crate) fn visit<'a>(&'a self, heads: Range<usize>, mut f: impl FnMut(&'a Record)) {
        for h in heads {
            let buckets = h * CHAIN_SPAN..((h + 1) * CHAIN_SPAN).min(self.buckets.len());
            for record in &self.buckets[buckets] {
                if !record.meta().is_uninitialized() {
                    f(record);
                }
            }
            Chain::new(&self.chains[h]).for_each(&mut f);
        }
    }

    /// Calls `f` on every initialised record: the buckets in order, then the chain nodes in
    /// the order the arena holds them, so that a resize's migration streams through the old
    /// group instead of missing the cache on each chain link.
    ///
    /// # Safety
    ///
    /// No record is placed in this group any more, and every placement happened before this
    /// call: the group is frozen and barrier B1 has passed (see `resize`).
    pub(crate) unsafe fn visit_settled<'a>(&'a self, mut f: impl FnMut(&'a Record)) {
        for record in self.buckets.iter() {
            if !record.meta().is_uninitialized() {
                f(record);
            }
        }
        // SAFETY: every chain node is allocated by a placement, all of which happened before
        // this call and none runs during it (the caller's contract).
        unsafe { self.arena.for_each_settled(|node| f(node.record())) };
    }

    /// The copy phase (Algorithm 10 line 16) over the chain heads in `heads`. The buckets are
    /// read in order, and the target of the pointer record [`COPY_LOOKAHEAD`] buckets ahead is
    /// requested meanwhile: the targets that were chain nodes of the old group lie anywhere.
    pub(crate) fn replace_pointers(&self, heads: Range<usize>) {
        let replace = |record: &Record| {
            if record.meta().is_ptr() && record.lock().replace_pointer() {
                self.counts.add(LIVE, -1);
            }
        };
        let end = (heads.end * CHAIN_SPAN).min(self.buckets.len());
        for b in heads.start * CHAIN_SPAN..end {
            if let Some(ahead) = self.buckets.get(b + COPY_LOOKAHEAD) {
                ahead.prefetch_target();
            }
            replace(&self.buckets[b]);
        }
        for head in &self.chains[heads] {
            Chain::new(head).for_each(replace);
        }
    }

    /// The live keys and values of this group, the `tmp_group` left out; pointer records are
    /// skipped with `skip_pointers` (their targets are read where they live).
    pub(crate) fn collect(&self, skip_pointers: bool, out: &mut Vec<(K, u64)>) {
        self.visit(0..self.chain_count(), |record| {
            if skip_pointers && record.meta().is_ptr() {
                return;
            }
            if let Seen::Live(value) = record.read() {
                // SAFETY: the record is initialised, so its key word is live for `&self`.
                out.push((unsafe { K::word_key(record.key_word()) }, value));
            }
        });
    }

    /// Heap bytes held by this group (the `tmp_group` left out).
    pub(crate) fn bytes(&self) -> usize {
        let mut keys = 0;
        self.visit(0..self.chain_count(), |record| {
            // SAFETY: the record is initialised, so its key word is live for `&self`.
            keys += unsafe { K::word_heap_bytes(record.key_word()) };
        });
        std::mem::size_of::<Self>()
            + std::mem::size_of_val(&*self.buckets)
            + std::mem::size_of_val(&*self.chains)
            + self.arena.bytes()
            + keys
    }
}

impl<K: HashKey> Group<K> {
    /// Checks the group's records (for `validate`, with no operation running): not frozen;
    /// no record locked or a pointer; each in (or next to) the bucket or in the chain its key
    /// is placed in, and
    /// routed to this group by `routed_here`. Calls `each` with every record's key and
    /// returns the live records.
    pub(crate) fn check(
        &self,
        routed_here: impl Fn(&K::Query) -> bool,
        mut each: impl FnMut(K),
    ) -> usize {
        assert!(self.tmp().is_none(), "a group is left frozen");
        let mut live = 0;
        let mut check = |record: &Record, home: &dyn Fn(usize) -> bool| {
            let meta = record.meta();
            assert!(!meta.is_locked(), "a record is left locked");
            assert!(!meta.is_ptr(), "a record is left a pointer");
            // SAFETY: the record is initialised, so its key word is live for `&self`.
            let key = unsafe { K::word_key(record.key_word()) };
            assert!(routed_here(key.borrow()), "a key in the wrong group");
            assert!(
                home(self.placement.slot::<K>(key.borrow())),
                "a key in the wrong bucket"
            );
            if !meta.is_removed() {
                live += 1;
            }
            each(key);
        };
        for (b, record) in self.buckets.iter().enumerate() {
            if !record.meta().is_uninitialized() {
                check(record, &|slot| slot.abs_diff(b) <= REACH);
            }
        }
        for (h, head) in self.chains.iter().enumerate() {
            for record in Chain::new(head) {
                check(record, &|slot| slot / CHAIN_SPAN == h);
                // SAFETY: as in `check`.
                let key = unsafe { K::word_key(record.key_word()) };
                let home = &self.buckets[self.placement.slot::<K>(key.borrow())];
                assert!(
                    home.meta().tag() & chain_filter_bit::<K>(key.borrow()) != 0,
                    "a chained key is missing from its home bucket's chain filter"
                );
            }
        }
        live
    }
}

impl<K: HashKey> Drop for Group<K> {
    fn drop(&mut self) {
        // Key words own heap memory only where the key type does (byte strings); the buckets
        // and the arena are freed with the group.
        if std::mem::needs_drop::<K>() {
            self.visit(0..self.chain_count(), |record| {
                // SAFETY: exclusive access; an initialised record's key word is live and
                // released once, here.
                unsafe { K::release_word(record.key_word()) };
            });
        }
    }
}
