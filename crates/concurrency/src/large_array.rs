//! A fixed-length heap array that asks for transparent huge pages once it is large.
//!
//! An index's big arrays (XIndex-H's bucket arrays, digest §2.6) are read at random: every
//! lookup touches one line somewhere in hundreds of megabytes. With 4 KiB pages that access
//! also misses the TLB, and under virtualisation the page walk is two-dimensional, costing a
//! good part of the line's own DRAM miss. An array of at least [`HUGE_PAGE`] bytes is therefore
//! aligned to a huge page and advised with `madvise(MADV_HUGEPAGE)` before its first touch, so
//! that a kernel whose transparent huge pages are in `madvise` mode (the common default) backs
//! its whole 2 MiB extents with huge pages. A smaller array comes from
//! [`huge_heap`](crate::huge_heap), a heap of huge-page regions (session 11: XIndex-R's group
//! arrays there made single-threaded gets 12–15% faster). [`into_raw`] places a single value
//! the same way, for nodes published through atomic pointers (XIndex-R's group nodes). The
//! advice is only advice: where it is refused, or off Linux, or under loom, the array is an
//! ordinary allocation. Alignment costs no memory: the allocator's padding before an aligned
//! block is address space, never touched.
//!
//! Measured on the `hash` experiment's gets (10M linear keys, 2 threads, alternated runs):
//! glibc's `hugetlb=1` tunable, which advises every `malloc` arena, sped up xindex-h and the
//! oracle by about 6 % each; XIndex-H's bucket arrays advised here, and nothing else, in groups
//! large enough to take whole huge pages, took its gets from 6.8 to 7.4 Mops/s (median of 3).

use std::alloc::{Layout, alloc, dealloc, handle_alloc_error};
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::ptr::{self, NonNull};

/// The huge-page size advised for (x86-64 and AArch64 with 4 KiB base pages).
pub const HUGE_PAGE: usize = 2 << 20;

/// `len` values of `T` in one allocation, fixed in place until the array is dropped.
///
/// ```
/// use concurrency::large_array::LargeArray;
///
/// let squares = LargeArray::from_fn(5, |i| i * i);
/// assert_eq!(&squares[..], &[0, 1, 4, 9, 16]);
/// ```
pub struct LargeArray<T> {
    ptr: NonNull<T>,
    len: usize,
    source: Source,
    _owns: PhantomData<T>,
}

/// Where an allocation's memory came from, and so where it goes back.
#[derive(Clone, Copy)]
pub(crate) enum Source {
    /// The global allocator (or no memory at all, for an empty array).
    Global,
    /// One of the process's heaps of huge-page regions.
    #[cfg(all(target_os = "linux", not(loom)))]
    HugeHeap(&'static crate::huge_heap::HugeHeap),
}

/// Which of the process's heaps of huge-page regions an allocation below a huge page comes from
/// (see [`huge_heap`](crate::huge_heap)).
#[derive(Clone, Copy)]
pub(crate) enum Placement {
    /// Arrays and nodes that bulk loads and restructurings build.
    Arrays,
    /// Memory that operations allocate on their own path.
    Writes,
}

// SAFETY: the array owns its values like a `Box<[T]>`: sending it sends them, and sharing it
// shares `&T`s.
unsafe impl<T: Send> Send for LargeArray<T> {}
// SAFETY: as above; `&LargeArray<T>` hands out only `&T`.
unsafe impl<T: Sync> Sync for LargeArray<T> {}

impl<T> LargeArray<T> {
    /// An array of `len` values, the `i`th being `f(i)`.
    ///
    /// Panics if the array's size overflows `isize`; aborts if it cannot be allocated. If `f`
    /// panics, the values made so far are dropped and the memory freed.
    pub fn from_fn(len: usize, mut f: impl FnMut(usize) -> T) -> Self {
        let layout = layout_of::<T>(len);
        let (ptr, source) = if layout.size() == 0 {
            (NonNull::dangling(), Source::Global)
        } else {
            let (ptr, source) = allocate(layout, Placement::Arrays);
            (ptr.cast::<T>(), source)
        };
        let mut filling = Filling {
            ptr,
            filled: 0,
            layout,
            source,
        };
        while filling.filled < len {
            let value = f(filling.filled);
            // SAFETY: slot `filled` lies inside the allocation (`filled < len`), is aligned for
            // `T` (the layout is `T`'s array layout) and holds no value yet.
            unsafe { ptr.add(filling.filled).write(value) };
            filling.filled += 1;
        }
        std::mem::forget(filling);
        Self {
            ptr,
            len,
            source,
            _owns: PhantomData,
        }
    }
}

impl<T> Deref for LargeArray<T> {
    type Target = [T];

    #[inline]
    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` holds `len` initialised values (or is dangling and aligned with no
        // bytes to read), alive until `self` drops.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T> DerefMut for LargeArray<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as for `deref`; `&mut self` makes this the only access to the values.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T> Drop for LargeArray<T> {
    fn drop(&mut self) {
        // The values and the memory go as a partly filled array would.
        drop(Filling {
            ptr: self.ptr,
            filled: self.len,
            layout: layout_of::<T>(self.len),
            source: self.source,
        });
    }
}

/// Moves `value` into memory placed as a one-value [`LargeArray`]'s is (on the huge heap where
/// it serves, on Linux) and returns it as a raw pointer, for structures that publish their
/// nodes through atomic pointers and read them at random (XIndex-R's group nodes). Release it
/// with [`drop_raw`].
///
/// ```
/// use concurrency::large_array::{drop_raw, into_raw};
///
/// let node = into_raw(String::from("group"));
/// // SAFETY: `node` came from `into_raw` and is released once, here.
/// unsafe {
///     assert_eq!(*node, "group");
///     drop_raw(node);
/// }
/// ```
pub fn into_raw<T>(value: T) -> *mut T {
    let mut value = Some(value);
    let array = LargeArray::from_fn(1, |_| value.take().expect("one value for one slot"));
    std::mem::ManuallyDrop::new(array).ptr.as_ptr()
}

/// Drops the value at `ptr` and frees its memory.
///
/// # Safety
///
/// `ptr` came from [`into_raw`] with this `T` and is released once; nothing reads or writes it
/// afterwards.
pub unsafe fn drop_raw<T>(ptr: *mut T) {
    let ptr = NonNull::new(ptr).expect("`into_raw` never returns null");
    drop(LargeArray {
        ptr,
        len: 1,
        source: source_of(ptr.cast()),
        _owns: PhantomData,
    });
}

/// The allocation of an array whose first `filled` values are initialised: dropping it drops
/// them and frees the memory (an array under construction whose `f` panicked, or a whole one).
struct Filling<T> {
    ptr: NonNull<T>,
    filled: usize,
    layout: Layout,
    source: Source,
}

impl<T> Drop for Filling<T> {
    fn drop(&mut self) {
        // SAFETY: the first `filled` slots hold values nothing else drops.
        unsafe {
            ptr::drop_in_place(ptr::slice_from_raw_parts_mut(
                self.ptr.as_ptr(),
                self.filled,
            ))
        };
        if self.layout.size() == 0 {
            return;
        }
        // SAFETY: `ptr` came from `allocate` with this layout and this source, and is freed
        // once, here.
        unsafe { self.source.release(self.ptr.cast(), self.layout) }
    }
}

/// Memory for `layout`: from the process's heap of huge-page regions for `placement` where that
/// serves it (below a huge page, on Linux), else from the global allocator, advised for huge
/// pages when it is aligned to one. Panics if the layout's size is zero; aborts if it cannot be
/// allocated. Free it with [`Source::release`].
pub(crate) fn allocate(layout: Layout, placement: Placement) -> (NonNull<u8>, Source) {
    assert!(layout.size() > 0, "an allocation holds at least one byte");
    if let Some(served) = from_huge_heap(layout, placement) {
        return served;
    }
    // SAFETY: the layout's size is not zero (asserted above).
    let raw = unsafe { alloc(layout) };
    let Some(ptr) = NonNull::new(raw) else {
        handle_alloc_error(layout)
    };
    advise_huge_pages(raw, layout);
    (ptr, Source::Global)
}

impl Source {
    /// Frees memory that [`allocate`] returned with this source.
    ///
    /// # Safety
    ///
    /// `ptr` came from [`allocate`] with `layout`, which returned this source; it is freed
    /// once, and nothing reads or writes it afterwards.
    pub(crate) unsafe fn release(self, ptr: NonNull<u8>, layout: Layout) {
        match self {
            // SAFETY: by the function's contract, `ptr` came from `alloc` with this layout.
            Source::Global => unsafe { dealloc(ptr.as_ptr(), layout) },
            #[cfg(all(target_os = "linux", not(loom)))]
            // SAFETY: by the function's contract, `ptr` came from this heap with this layout.
            Source::HugeHeap(heap) => unsafe { heap.dealloc(ptr, layout) },
        }
    }
}

/// The layout of `len` values of `T`: aligned to a huge page once it spans one.
fn layout_of<T>(len: usize) -> Layout {
    let layout = Layout::array::<T>(len).expect("a large array's size fits isize");
    if layout.size() >= HUGE_PAGE {
        layout
            .align_to(HUGE_PAGE)
            .expect("a huge-page alignment is a valid alignment")
    } else {
        layout
    }
}

/// Memory for an array smaller than a huge page from the process's heap of huge-page regions
/// for `placement` ([`HugeHeap`](crate::huge_heap::HugeHeap)); `None` for a larger array (it
/// gets pages of its own) or where the heap cannot serve it.
#[cfg(all(target_os = "linux", not(loom)))]
fn from_huge_heap(layout: Layout, placement: Placement) -> Option<(NonNull<u8>, Source)> {
    use crate::huge_heap::HugeHeap;
    if layout.size() >= HUGE_PAGE {
        return None;
    }
    let heap = match placement {
        Placement::Arrays => HugeHeap::global(),
        Placement::Writes => HugeHeap::writers(),
    };
    let ptr = heap.alloc(layout)?;
    Some((ptr, Source::HugeHeap(heap)))
}

/// Off Linux and under loom every array comes from the global allocator.
#[cfg(not(all(target_os = "linux", not(loom))))]
fn from_huge_heap(_layout: Layout, _placement: Placement) -> Option<(NonNull<u8>, Source)> {
    None
}

/// Where the allocation holding `ptr` came from (a zero-sized one: nowhere, freed as global).
#[cfg(all(target_os = "linux", not(loom)))]
fn source_of(ptr: NonNull<u8>) -> Source {
    use crate::huge_heap::HugeHeap;
    [HugeHeap::global(), HugeHeap::writers()]
        .into_iter()
        .find(|heap| heap.contains(ptr.as_ptr()))
        .map_or(Source::Global, Source::HugeHeap)
}

/// Off Linux and under loom every allocation comes from the global allocator.
#[cfg(not(all(target_os = "linux", not(loom))))]
fn source_of(_ptr: NonNull<u8>) -> Source {
    Source::Global
}

/// Advises the huge pages of a fresh, untouched allocation at `raw` of `layout`.
#[cfg(all(target_os = "linux", not(loom)))]
fn advise_huge_pages(raw: *mut u8, layout: Layout) {
    if layout.align() == HUGE_PAGE {
        // SAFETY: the range is the caller's own fresh allocation, page-aligned (its alignment
        // is a huge page); the advice changes how its pages are backed, never their contents.
        // A refusal (THP off, an old kernel) leaves ordinary pages, so the result is ignored.
        unsafe { libc::madvise(raw.cast(), layout.size(), libc::MADV_HUGEPAGE) };
    }
}

/// Off Linux and under loom the array is an ordinary allocation.
#[cfg(not(all(target_os = "linux", not(loom))))]
fn advise_huge_pages(_raw: *mut u8, _layout: Layout) {}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::panic::{AssertUnwindSafe, catch_unwind};
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn small_and_large_arrays_hold_their_values() {
        for len in [0, 1, 7, HUGE_PAGE / 8 + 3] {
            let array = LargeArray::from_fn(len, |i| i as u64 * 3);
            assert_eq!(array.len(), len);
            assert!(array.iter().enumerate().all(|(i, &v)| v == i as u64 * 3));
        }
    }

    #[test]
    fn large_arrays_start_on_a_huge_page() {
        let array = LargeArray::from_fn(HUGE_PAGE / 8, |i| i as u64);
        assert_eq!(array.as_ptr() as usize % HUGE_PAGE, 0);
        let small = LargeArray::from_fn(16, |i| i as u64);
        assert_eq!(small.as_ptr() as usize % std::mem::align_of::<u64>(), 0);
    }

    #[test]
    fn zero_sized_values_take_no_memory() {
        let array = LargeArray::from_fn(1000, |_| ());
        assert_eq!(array.len(), 1000);
    }

    /// Counts its drops.
    struct Counted<'a>(&'a AtomicUsize);

    impl Drop for Counted<'_> {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn every_value_is_dropped_once() {
        let drops = AtomicUsize::new(0);
        drop(LargeArray::from_fn(100, |_| Counted(&drops)));
        assert_eq!(drops.load(Ordering::Relaxed), 100);
    }

    #[test]
    fn raw_values_are_dropped_once_and_small_ones_live_on_the_huge_heap() {
        let drops = AtomicUsize::new(0);
        let node = into_raw((Counted(&drops), [7u64; 40]));
        #[cfg(target_os = "linux")]
        assert!(crate::huge_heap::HugeHeap::global().contains(node.cast::<u8>()));
        // SAFETY: `node` came from `into_raw`; it is read, then released once.
        unsafe {
            assert_eq!((*node).1, [7; 40]);
            drop_raw(node);
        }
        assert_eq!(drops.load(Ordering::Relaxed), 1);
        let unit = into_raw(());
        // SAFETY: as above.
        unsafe { drop_raw(unit) };
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn arrays_and_writes_come_from_their_own_heaps() {
        use crate::huge_heap::HugeHeap;
        let layout = Layout::from_size_align(4096, 64).expect("a valid layout");
        for (placement, home, other) in [
            (Placement::Arrays, HugeHeap::global(), HugeHeap::writers()),
            (Placement::Writes, HugeHeap::writers(), HugeHeap::global()),
        ] {
            let (ptr, source) = allocate(layout, placement);
            assert!(home.contains(ptr.as_ptr()) && !other.contains(ptr.as_ptr()));
            assert!(matches!(source, Source::HugeHeap(heap) if std::ptr::eq(heap, home)));
            // SAFETY: `ptr` came from `allocate` with this layout and source; freed once.
            unsafe { source.release(ptr, layout) };
        }
    }

    #[test]
    fn a_panicking_constructor_drops_what_it_made() {
        let drops = AtomicUsize::new(0);
        let result = catch_unwind(AssertUnwindSafe(|| {
            LargeArray::from_fn(100, |i| {
                assert!(i < 40, "constructor fails at 40");
                Counted(&drops)
            })
        }));
        assert!(result.is_err());
        assert_eq!(drops.load(Ordering::Relaxed), 40);
    }
}
