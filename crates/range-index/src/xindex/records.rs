//! A group's sorted records (§2.3 `data_array`): the keys in their stored form
//! ([`IndexKey::Stored`]), contiguous for the search, and one [`RecordCell`] per key beside
//! them, with spare capacity at the end for the sequential-insert fast path (§3.5.2; digest
//! §3.14).
//!
//! The length is an atomic that only grows: an append writes the key and the cell of slot
//! `len` under the records' append lock, then publishes them with a release store of
//! `len + 1`; readers load the length with acquire and see only initialised, never again
//! written keys. Records are shared by the nodes of one group (model split, the views of a
//! group split) through an `Arc`, so an append through either node reaches the same array.
//!
//! Beside each key sits its search hint ([`IndexKey::Hint`]: for a byte string, its eight
//! bytes past the prefix that every key of the records shares, less [`HINT_SKIP_SLACK`];
//! nothing for `u64`), so a search can narrow its window on one dense array, reading keys only
//! on ties. The hints of the first keys are written once all of them are in
//! ([`Records::index_hints`]); an append writes its key's hint with the key, published by the
//! same store of `len`, and is refused for a key outside the skipped prefix. Where many
//! neighbouring keys held out of line tie on their hints (URL-like keys), the hints' array also
//! holds each key's tie hint, the eight bytes after its hint ([`IndexKey::tie_hint`]), which a
//! search compares before it reads a key of the run.
//!
//! A node keeps the arrays' addresses beside its models ([`Bases`]), so a lookup of a trained
//! key reads no field of the shared `Records`: the models say how many leading slots they were
//! trained on, and those are initialised for good.
//!
//! Array records are removed for good (a put never revives one: index module comment), so
//! the records keep how many leading ones a scan found removed ([`Records::removed_prefix`]):
//! a later scan from below starts past them instead of reading them again, and a queue-like
//! use, which removes the smallest key over and over, finds each next smallest key in constant
//! time until a compaction drops the removed records. The bound only grows (`fetch_max`), and a
//! scan raises it only over records it read removed, each of them in a run from the bound it
//! loaded.
//!
//! The key slots are `std` cells even under loom: searches need plain slices of keys, which
//! loom's cells cannot give; the length that publishes them is a loom atomic.

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::ptr::NonNull;
use std::slice;

use concurrency::large_array::LargeArray;
use concurrency::sync::atomic::{AtomicUsize, Ordering};
use concurrency::sync::{Mutex, MutexGuard};
use concurrency::{RecordCell, RecordMeta};

use crate::xindex::key::IndexKey;

/// How many bytes at the end of the keys' shared prefix the hints still cover. Appended keys
/// must share the prefix the hints skip; with its last two bytes in the hints, keys counting
/// upwards (`ts/…0fff`, then `…1000`) append for 256 times the span the records were built
/// over before one falls outside, and the hints keep six bytes that tell keys apart.
const HINT_SKIP_SLACK: usize = 2;

/// Records keep tie hints ([`IndexKey::tie_hint`]) when the pairs of neighbouring keys with
/// equal hints whose second key is held out of line are more than one in this many keys
/// (URL-like keys that share a site, a section and a date): each such tie would otherwise cost
/// a search one miss for the key's slot and one for its heap block.
const TIE_HINT_SHARE: usize = 4;

/// A group's sorted records with spare capacity.
///
/// The three arrays are [`LargeArray`]s: a group's arrays are far smaller than a huge page, and
/// `LargeArray` takes them from a heap of huge-page regions, so that the probes of a lookup do
/// not also miss the TLB (single-threaded gets 12–15% faster, README design notes).
pub(crate) struct Records<K: IndexKey> {
    /// `len` initialised keys, then spare slots.
    keys: LargeArray<UnsafeCell<MaybeUninit<K::Stored>>>,
    /// The hint of each key, spare slots included (default there until an append); then, where
    /// [`Records::index_hints`] chose to keep them, as many tie hints (from `capacity()` on).
    hints: LargeArray<UnsafeCell<K::Hint>>,
    /// One cell per slot, spare ones included.
    cells: LargeArray<RecordCell>,
    len: AtomicUsize,
    /// How many leading records are known to be removed (module comment).
    removed_prefix: AtomicUsize,
    /// How many leading bytes, shared by every key, the hints skip ([`IndexKey::hint`]).
    hint_skip: usize,
    appending: Mutex<()>,
}

// SAFETY: the key and hint slots are written only under `appending`, each once, before the
// release store of `len` that makes them readable; readers read only slots below an acquired
// `len`. So sharing `Records` is sharing stored keys (and `Copy` hints) by reference and moving
// them between threads, which `IndexKey` allows: its `Stored` and `Hint` are `Send + Sync`.
unsafe impl<K: IndexKey> Sync for Records<K> {}

/// Why an append did not happen.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum AppendRefused {
    /// No spare slot left.
    Full,
    /// The key is not above the last key.
    NotAbove,
    /// The key lacks the prefix that the hints skip.
    OutsideHintedPrefix,
}

/// The first addresses of a [`Records`]' three arrays, which never move while it lives, how
/// many bytes its hints skip and where its tie hints start (two halves of one word, so that a
/// group node is no larger for them).
pub(crate) struct Bases<K: IndexKey> {
    keys: NonNull<K::Stored>,
    hints: NonNull<K::Hint>,
    cells: NonNull<RecordCell>,
    hint_skip: u32,
    /// The index of the first tie hint in the hints' array, or 0 if the records keep none.
    tie_hints_at: u32,
}

// SAFETY: `Bases` is three addresses into a `Records`, which is `Sync`; it only lends shared
// slices of them (`prefix`), under the same conditions as `Records` itself.
unsafe impl<K: IndexKey> Send for Bases<K> {}
// SAFETY: as for `Send`: sharing `Bases` shares read-only access to initialised slots.
unsafe impl<K: IndexKey> Sync for Bases<K> {}

/// The first `len` keys, hints and cells of a [`Records`], and as many tie hints if it keeps
/// them (else none).
pub(crate) struct Prefix<'a, K: IndexKey> {
    pub(crate) keys: &'a [K::Stored],
    pub(crate) hints: &'a [K::Hint],
    pub(crate) cells: &'a [RecordCell],
    pub(crate) tie_hints: &'a [K::Hint],
    /// How many leading bytes the hints skip.
    pub(crate) hint_skip: usize,
}

impl<K: IndexKey> Bases<K> {
    /// The first `len` slots of the records these bases were taken from.
    ///
    /// # Safety
    ///
    /// Those records must outlive `'a`, and `len` must be at most a length they published
    /// (a `keys().len()` read earlier): slots below it are initialised and never written again.
    #[inline]
    pub(crate) unsafe fn prefix<'a>(&self, len: usize) -> Prefix<'a, K> {
        // SAFETY: by the caller's contract the arrays are alive for `'a` and their first `len`
        // slots initialised and immutable, and so are the `len` tie hints from `tie_hints_at`
        // (the capacity, where the hints' array holds twice as many slots, `len` at most the
        // capacity); `UnsafeCell<MaybeUninit<T>>` and `UnsafeCell<T>` have the layout of `T`.
        unsafe {
            Prefix {
                keys: slice::from_raw_parts(self.keys.as_ptr(), len),
                hints: slice::from_raw_parts(self.hints.as_ptr(), len),
                cells: slice::from_raw_parts(self.cells.as_ptr(), len),
                tie_hints: match self.tie_hints_at {
                    0 => &[],
                    at => slice::from_raw_parts(self.hints.as_ptr().add(at as usize), len),
                },
                hint_skip: self.hint_skip as usize,
            }
        }
    }
}

impl<K: IndexKey> Records<K> {
    /// The addresses of the arrays, for [`Bases::prefix`].
    pub(crate) fn bases(&self) -> Bases<K> {
        Bases {
            keys: NonNull::from(&*self.keys).cast(),
            hints: NonNull::from(&*self.hints).cast(),
            cells: NonNull::from(&*self.cells).cast(),
            hint_skip: u32::try_from(self.hint_skip).expect("`index_hints` keeps it in a u32"),
            tie_hints_at: u32::try_from(self.tie_hints_at())
                .expect("`index_hints` keeps tie hints only where their index fits"),
        }
    }

    /// Records from strictly increasing `keys` and their cells (same length), with `spare`
    /// empty slots for appends. The keys and cells are moved into the records' arrays.
    pub(crate) fn new(keys: Vec<K::Stored>, cells: Vec<RecordCell>, spare: usize) -> Self {
        assert_eq!(keys.len(), cells.len(), "one cell per key");
        let mut records = Self::with_capacity(keys.len() + spare);
        for (key, cell) in keys.into_iter().zip(cells) {
            records.push(key, cell);
        }
        records
    }

    /// Empty records with `capacity` slots, filled in order by [`push`](Self::push) (a merge
    /// writes its array in place, without a copy), then by
    /// [`index_hints`](Self::index_hints).
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Self {
            keys: LargeArray::from_fn(capacity, |_| UnsafeCell::new(MaybeUninit::uninit())),
            hints: LargeArray::from_fn(capacity, |_| UnsafeCell::new(K::Hint::default())),
            cells: LargeArray::from_fn(capacity, |_| RecordCell::new(RecordMeta::new(), 0)),
            len: AtomicUsize::new(0),
            removed_prefix: AtomicUsize::new(0),
            hint_skip: 0,
            appending: Mutex::new(()),
        }
    }

    /// Fills the next slot of records that no one else can see yet with `key`, above every key
    /// so far, and its `cell`, leaving its hint to [`index_hints`](Self::index_hints). Panics
    /// if no slot is left.
    pub(crate) fn push(&mut self, key: K::Stored, cell: RecordCell) {
        let len = self.len.load(Ordering::Relaxed);
        assert!(len < self.capacity(), "a pushed record needs a spare slot");
        debug_assert!(
            self.keys()
                .last()
                .is_none_or(|last| K::query(last) < K::query(&key)),
            "pushed keys are strictly increasing"
        );
        self.keys[len].get_mut().write(key);
        self.cells[len] = cell;
        self.len.store(len + 1, Ordering::Relaxed);
    }

    /// Writes the hints of the records' keys, before anyone else can see the records: past
    /// the prefix every key shares, less [`HINT_SKIP_SLACK`] bytes; and their tie hints too
    /// where ties would send searches to keys out of line ([`TIE_HINT_SHARE`]).
    pub(crate) fn index_hints(&mut self) {
        if !K::HINTED {
            return;
        }
        let keys = self.keys();
        // Any skip up to the shared prefix orders the hints; a node holds it in 32 bits.
        let skip = match keys {
            [] => 0,
            [first, .., last] | [first @ last] => {
                K::shared_prefix_len(K::query(first), K::query(last))
                    .saturating_sub(HINT_SKIP_SLACK)
                    .min(u32::MAX as usize)
            }
        };
        let hints: Vec<K::Hint> = keys
            .iter()
            .map(|key| K::hint(K::query(key), skip))
            .collect();
        let costly_ties = keys
            .windows(2)
            .zip(hints.windows(2))
            .filter(|(pair, hints)| hints[0] == hints[1] && K::stored_heap_bytes(&pair[1]) > 0)
            .count();
        let capacity = self.capacity();
        if costly_ties * TIE_HINT_SHARE > keys.len() && u32::try_from(capacity).is_ok() {
            let ties: Vec<K::Hint> = keys
                .iter()
                .map(|key| K::tie_hint(K::query(key), skip))
                .collect();
            let hint_at = |i: usize| match i.checked_sub(capacity) {
                None => hints.get(i),
                Some(tie) => ties.get(tie),
            };
            self.hints = LargeArray::from_fn(2 * capacity, |i| {
                UnsafeCell::new(hint_at(i).copied().unwrap_or_default())
            });
        } else {
            for (slot, hint) in self.hints.iter_mut().zip(hints) {
                *slot.get_mut() = hint;
            }
        }
        self.hint_skip = skip;
    }

    /// The index of the first tie hint in the hints' array, or 0 if the records keep none.
    fn tie_hints_at(&self) -> usize {
        if self.hints.len() > self.capacity() {
            self.capacity()
        } else {
            0
        }
    }

    /// How many leading bytes, shared by every key, the hints skip.
    pub(crate) fn hint_skip(&self) -> usize {
        self.hint_skip
    }

    /// The hints of the keys ([`keys`](Self::keys)), for checks.
    pub(crate) fn hints(&self) -> &[K::Hint] {
        let len = self.len.load(Ordering::Acquire);
        // SAFETY: a hint below an acquired `len` was written before the release store of
        // `len` that published its slot and is never written again; `UnsafeCell<T>` has the
        // layout of `T`.
        unsafe { slice::from_raw_parts(self.hints.as_ptr().cast::<K::Hint>(), len) }
    }

    /// The tie hints of the keys if the records keep them (else none), for checks.
    pub(crate) fn tie_hints(&self) -> &[K::Hint] {
        let len = self.len.load(Ordering::Acquire);
        match self.tie_hints_at() {
            0 => &[],
            // SAFETY: as for `hints`: tie hints below an acquired `len` (from `at`) are
            // written for good, and `at + len` is within the array (`len <= capacity() = at`).
            at => unsafe {
                slice::from_raw_parts(self.hints.as_ptr().add(at).cast::<K::Hint>(), len)
            },
        }
    }

    /// The keys, strictly increasing.
    #[inline]
    pub(crate) fn keys(&self) -> &[K::Stored] {
        let len = self.len.load(Ordering::Acquire);
        // SAFETY: slots below an acquired `len` are initialised and never written again
        // (module comment); `UnsafeCell<MaybeUninit<T>>` has the layout of `T`.
        unsafe { slice::from_raw_parts(self.keys.as_ptr().cast::<K::Stored>(), len) }
    }

    /// The cells of the keys: at least `keys().len()` of any earlier `keys()` call (the length
    /// only grows).
    #[inline]
    pub(crate) fn cells(&self) -> &[RecordCell] {
        &self.cells[..self.len.load(Ordering::Acquire)]
    }

    /// How many leading records a scan has found removed: none of them is live, or will be.
    #[inline]
    pub(crate) fn removed_prefix(&self) -> usize {
        self.removed_prefix.load(Ordering::Acquire)
    }

    /// Records that the records before position `end` are all removed; the caller read each
    /// of those from the [`removed_prefix`](Self::removed_prefix) it loaded on removed.
    pub(crate) fn extend_removed_prefix(&self, end: usize) {
        debug_assert!(
            end <= self.cells().len(),
            "only read records are known removed"
        );
        self.removed_prefix.fetch_max(end, Ordering::Release);
    }

    /// The bytes of the hints' array, tie hints included.
    pub(crate) fn hint_bytes(&self) -> usize {
        self.hints.len() * size_of::<K::Hint>()
    }

    /// Slots in all, spare ones included.
    pub(crate) fn capacity(&self) -> usize {
        self.cells.len()
    }

    /// Takes the append lock (the sequential-insert path's per-group lock).
    pub(crate) fn lock_appends(&self) -> MutexGuard<'_, ()> {
        self.appending.lock()
    }

    /// Appends `key` with a live record holding `value`; the caller holds the append lock
    /// (`_appending`, from [`lock_appends`](Self::lock_appends)).
    pub(crate) fn append(
        &self,
        _appending: &MutexGuard<'_, ()>,
        key: &K::Query,
        value: u64,
    ) -> Result<(), AppendRefused> {
        let len = self.len.load(Ordering::Acquire);
        if len == self.capacity() {
            return Err(AppendRefused::Full);
        }
        let hint = match self.keys().last() {
            Some(last) if K::query(last) >= key => return Err(AppendRefused::NotAbove),
            Some(last) => K::hint_past(key, K::query(last), self.hint_skip)
                .map_err(|_| AppendRefused::OutsideHintedPrefix)?,
            None => K::hint(key, self.hint_skip),
        };
        // SAFETY: slot `len` is spare: no reader reads it before the store of `len + 1`
        // below, and appends are serialised by the append lock the caller holds.
        unsafe {
            *self.hints[len].get() = hint;
            let ties_at = self.tie_hints_at();
            if ties_at != 0 {
                *self.hints[ties_at + len].get() = K::tie_hint(key, self.hint_skip);
            }
            (*self.keys[len].get()).write(K::to_stored(key));
        }
        self.cells[len].lock().set_value(value);
        self.len.store(len + 1, Ordering::Release);
        Ok(())
    }
}

impl<K: IndexKey> Drop for Records<K> {
    fn drop(&mut self) {
        let len = self.len.load(Ordering::Acquire);
        for slot in &self.keys[..len] {
            // SAFETY: slots below `len` are initialised and dropped once, here; `&mut self`
            // excludes any other access to them.
            unsafe { (*slot.get()).assume_init_drop() };
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::xindex::byte_key::ByteKey;

    #[test]
    fn appends_grow_the_keys_in_order_until_full() {
        let cells = [10, 50]
            .map(|value| RecordCell::new(RecordMeta::new(), value))
            .into();
        let records = Records::<u64>::new(vec![1u64, 5], cells, 2);
        let lock = records.lock_appends();
        assert_eq!(records.append(&lock, &5, 0), Err(AppendRefused::NotAbove));
        assert_eq!(records.append(&lock, &7, 70), Ok(()));
        assert_eq!(records.append(&lock, &9, 90), Ok(()));
        assert_eq!(records.append(&lock, &11, 0), Err(AppendRefused::Full));
        drop(lock);
        assert_eq!(records.keys(), &[1, 5, 7, 9]);
        assert_eq!(records.cells()[3].read().1, 90);
        assert_eq!((records.keys().len(), records.cells().len()), (4, 4));
    }

    #[test]
    fn hints_skip_the_shared_prefix_and_appends_keep_it() {
        let keys: Vec<ByteKey> = ["ts/00a0", "ts/00a5"]
            .map(|key| Vec::<u8>::to_stored(key.as_bytes()))
            .into();
        let cells = vec![RecordCell::default(), RecordCell::default()];
        let mut records = Records::<Vec<u8>>::new(keys, cells, 4);
        records.index_hints();
        // Six bytes shared, less the slack of two.
        assert_eq!(records.hint_skip(), 4);
        let lock = records.lock_appends();
        assert_eq!(records.append(&lock, b"ts/00b1", 1), Ok(()));
        assert_eq!(records.append(&lock, b"ts/0z", 2), Ok(()));
        for refused in [&b"ts/1"[..], b"tu", b"z"] {
            assert_eq!(
                records.append(&lock, refused, 3),
                Err(AppendRefused::OutsideHintedPrefix),
                "{refused:?}"
            );
        }
        drop(lock);
        let past = |tail: &[u8]| learned_model::prefix_word(tail);
        assert_eq!(
            records.hints(),
            [past(b"0a0"), past(b"0a5"), past(b"0b1"), past(b"z")]
        );
    }

    /// Records of `keys` (strictly increasing) with their hints indexed and `spare` slots.
    fn hinted(keys: &[String], spare: usize) -> Records<Vec<u8>> {
        let stored: Vec<ByteKey> = keys
            .iter()
            .map(|k| Vec::<u8>::to_stored(k.as_bytes()))
            .collect();
        let cells = keys.iter().map(|_| RecordCell::default()).collect();
        let mut records = Records::new(stored, cells, spare);
        records.index_hints();
        records
    }

    #[test]
    fn tie_hints_are_kept_where_ties_reach_keys_out_of_line() {
        // Out-of-line keys whose hints tie in pairs: tie hints, for appends too.
        let site = "https://example.com/news/";
        let long: Vec<String> = (0..8)
            .map(|i| format!("{site}2008/{:02}/{:02}/slug-{i}", i / 4, i / 2))
            .collect();
        let records = hinted(&long, 2);
        assert!(records.keys().iter().all(|k| k.heap_bytes() > 0));
        // `2008/0` shared, less the slack: the hints hold `8/MM/DD/`.
        assert_eq!(records.hint_skip(), site.len() + 4);
        let lock = records.lock_appends();
        let appended = format!("{site}2008/09/01/slug");
        assert_eq!(records.append(&lock, appended.as_bytes(), 1), Ok(()));
        drop(lock);
        let skip = records.hint_skip();
        let all: Vec<&[u8]> = long
            .iter()
            .chain([&appended])
            .map(|k| k.as_bytes())
            .collect();
        let hints: Vec<u64> = all.iter().map(|k| Vec::<u8>::hint(k, skip)).collect();
        let ties: Vec<u64> = all.iter().map(|k| Vec::<u8>::tie_hint(k, skip)).collect();
        assert_eq!(
            (records.hints(), records.tie_hints()),
            (&hints[..], &ties[..])
        );
        assert_eq!(records.hint_bytes(), 2 * 10 * size_of::<u64>());
        // The same ties among keys held inline, and long keys whose hints differ: none.
        let short: Vec<String> = (0..8).map(|i| format!("k{}-padding-{i}", i / 2)).collect();
        let distinct: Vec<String> = (0..8).map(|i| format!("{site}{i}/2008/slug")).collect();
        for keys in [short, distinct] {
            let records = hinted(&keys, 2);
            assert!(records.tie_hints().is_empty(), "{keys:?}");
            assert_eq!(records.hint_bytes(), 10 * size_of::<u64>());
        }
    }

    #[test]
    fn pushed_records_fill_slots_in_order_and_leave_the_rest_spare() {
        let mut records = Records::<u64>::with_capacity(4);
        records.push(3, RecordCell::new(RecordMeta::new(), 30));
        records.push(8, RecordCell::new(RecordMeta::new().with_ptr(true), 80));
        assert_eq!(records.keys(), &[3, 8]);
        assert_eq!(records.capacity(), 4);
        let (meta, value) = records.cells()[1].read();
        assert!(meta.is_ptr() && value == 80);
        let lock = records.lock_appends();
        assert_eq!(records.append(&lock, &9, 90), Ok(()));
        assert_eq!(records.append(&lock, &10, 100), Ok(()));
        assert_eq!(records.append(&lock, &11, 0), Err(AppendRefused::Full));
    }

    #[test]
    #[should_panic(expected = "a pushed record needs a spare slot")]
    fn pushing_beyond_the_capacity_panics() {
        let mut records = Records::<u64>::with_capacity(1);
        records.push(1, RecordCell::new(RecordMeta::new(), 0));
        records.push(2, RecordCell::new(RecordMeta::new(), 0));
    }

    #[test]
    fn owned_keys_are_dropped_once() {
        let long = vec![b'b'; 40];
        let keys: Vec<Vec<u8>> = vec![b"a".to_vec(), long.clone()];
        let cells = keys
            .iter()
            .map(|_| RecordCell::new(RecordMeta::new(), 0))
            .collect();
        let stored = keys.iter().map(|key| Vec::<u8>::to_stored(key)).collect();
        let records = Records::<Vec<u8>>::new(stored, cells, 3);
        let lock = records.lock_appends();
        records.append(&lock, b"c", 3).expect("spare and above");
        drop(lock);
        let mut pushed = Records::<Vec<u8>>::with_capacity(2);
        pushed.push(Vec::<u8>::to_stored(&long), RecordCell::default());
        let bytes = |records: &Records<Vec<u8>>| -> Vec<Vec<u8>> {
            records.keys().iter().map(Vec::<u8>::from_stored).collect()
        };
        assert_eq!(
            bytes(&records),
            [b"a".to_vec(), long.clone(), b"c".to_vec()]
        );
        assert_eq!(bytes(&pushed), [long]);
    }
}
