//! The memory behind a pool: how each [`Mode`](crate::Mode) maps it, and the only raw-pointer
//! code of the crate.
//!
//! - `Dax`: `libc::mmap` with `MAP_SHARED_VALIDATE | MAP_SYNC` (memmap2 has no `MAP_SYNC`). The
//!   kernel refuses the flag combination with `EOPNOTSUPP` on a file system without DAX, which
//!   becomes [`Error::NotDax`](crate::Error::NotDax); `MAP_SHARED_VALIDATE` is what makes the
//!   kernel check the flag instead of silently ignoring it.
//! - `Mapped`: memmap2's `MAP_SHARED` file mapping; [`Mapping::sync`] is `msync(MS_SYNC)`.
//! - `Volatile` and `Simulated`: memmap2's anonymous mapping (page-aligned and zeroed).
//!
//! After construction the memory is reached only through [`Mapping::word`], a shared reference
//! to an `AtomicU64`: every access the crate makes to pool memory is atomic, so concurrent
//! readers, writers and the simulated backend's snapshots are never data races. Construction
//! copies a crash image in through memmap2's `&mut [u8]` while nothing else can see the mapping.

use std::fs::File;
use std::io;
use std::sync::atomic::AtomicU64;

use memmap2::{MmapMut, MmapOptions};

use crate::pptr::Persistent;

/// A mapped pool region, unmapped on drop.
pub(crate) struct Mapping {
    base: *mut u8,
    len: usize,
    kind: Kind,
}

enum Kind {
    /// Kept for its `Drop` (munmap) and its `msync`.
    Memmap(MmapMut),
    /// A `MAP_SYNC` mapping made with `libc::mmap`, unmapped by `Mapping`'s `Drop`.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    Dax,
}

// SAFETY: the mapping is plain memory owned by this value; every access through it after
// construction is an atomic load or store (see the module docs), so sharing it between threads
// is sound, and moving it moves only the owner of the mapping.
unsafe impl Send for Mapping {}
// SAFETY: as for `Send`.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// An anonymous zeroed mapping of `len` bytes, holding `image` at its start if given.
    pub(crate) fn anonymous(len: usize, image: Option<&[u8]>) -> io::Result<Self> {
        let mut map = MmapOptions::new().len(len).map_anon()?;
        if let Some(image) = image {
            map[..image.len()].copy_from_slice(image);
        }
        Ok(Self::from_memmap(map))
    }

    /// A `MAP_SHARED` mapping of the first `len` bytes of `file`.
    pub(crate) fn shared(file: &File, len: usize) -> io::Result<Self> {
        // SAFETY: memmap2 requires that the file is not truncated or modified behind the
        // mapping's back. The pool holds the file's exclusive `flock` for the mapping's whole
        // life, so cooperating processes stay away; a foreign process that ignores the lock and
        // truncates the file can fault this one (documented in the crate docs).
        let map = unsafe { MmapOptions::new().len(len).map_mut(file)? };
        Ok(Self::from_memmap(map))
    }

    fn from_memmap(mut map: MmapMut) -> Self {
        Self {
            base: map.as_mut_ptr(),
            len: map.len(),
            kind: Kind::Memmap(map),
        }
    }

    /// A `MAP_SHARED_VALIDATE | MAP_SYNC` mapping of the first `len` bytes of `file`.
    ///
    /// Fails with `EOPNOTSUPP` where the file system is not DAX.
    #[cfg(target_os = "linux")]
    pub(crate) fn dax(file: &File, len: usize) -> io::Result<Self> {
        use std::os::fd::AsRawFd;

        // SAFETY: a fresh mapping (null hint) of a file descriptor we own, for a length the
        // caller checked against the file's length; no existing memory is affected.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED_VALIDATE | libc::MAP_SYNC,
                file.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Self {
            base: base.cast(),
            len,
            kind: Kind::Dax,
        })
    }

    /// The word at byte `offset`.
    ///
    /// # Panics
    ///
    /// If `offset` is not 8-aligned or the word is not inside the mapping: callers check
    /// offsets that come from outside the crate first, so this is an internal invariant.
    #[inline]
    pub(crate) fn word(&self, offset: u64) -> &AtomicU64 {
        assert!(
            offset.is_multiple_of(8)
                && offset
                    .checked_add(8)
                    .is_some_and(|end| end <= self.len as u64),
            "pool word {offset:#x} out of bounds: callers validate offsets"
        );
        // SAFETY: the word is inside the live mapping (checked above) and 8-aligned (the base
        // is page-aligned and the offset a multiple of 8); the mapping lives as long as `&self`;
        // an `AtomicU64` is valid for every bit pattern, and all accesses to pool memory are
        // atomic (module docs), so the shared reference never aliases a non-atomic access.
        unsafe { &*self.base.add(offset as usize).cast::<AtomicU64>() }
    }

    /// The `T` at byte `offset`.
    ///
    /// # Panics
    ///
    /// If the value is not inside the mapping or `offset` is not aligned for `T` (an internal
    /// invariant, as for [`Mapping::word`]).
    pub(crate) fn get<T: Persistent>(&self, offset: u64) -> &T {
        let size = std::mem::size_of::<T>() as u64;
        assert!(
            self.is_aligned_for::<T>(offset)
                && offset
                    .checked_add(size)
                    .is_some_and(|end| end <= self.len as u64),
            "pool value {offset:#x} out of bounds: callers validate offsets"
        );
        // SAFETY: inside the live mapping and aligned for `T` (both checked above); the mapping
        // lives as long as `&self`; `T: Persistent` is valid for every bit pattern and mutable
        // only through atomics, so a shared reference never aliases a non-atomic access.
        unsafe { &*self.base.add(offset as usize).cast::<T>() }
    }

    /// Whether the address of byte `offset` is aligned for a `T`.
    pub(crate) fn is_aligned_for<T>(&self, offset: u64) -> bool {
        (self.base as usize)
            .wrapping_add(offset as usize)
            .is_multiple_of(std::mem::align_of::<T>())
    }

    /// The `n` words starting at byte `offset` (same checks as [`Mapping::word`]).
    pub(crate) fn words(&self, offset: u64, n: usize) -> &[AtomicU64] {
        assert!(
            offset.is_multiple_of(8)
                && (n as u64)
                    .checked_mul(8)
                    .and_then(|bytes| bytes.checked_add(offset))
                    .is_some_and(|end| end <= self.len as u64),
            "pool words {offset:#x}+{n} out of bounds: callers validate offsets"
        );
        // SAFETY: as for `word`, for each of the `n` contiguous words, all inside the mapping.
        unsafe { std::slice::from_raw_parts(self.base.add(offset as usize).cast::<AtomicU64>(), n) }
    }

    /// The address of byte `offset` (for callers that manage their own accesses).
    pub(crate) fn address(&self, offset: u64) -> *mut u8 {
        self.base.wrapping_add(offset as usize)
    }

    /// The offset of `address` if `len` bytes from it lie inside the mapping.
    pub(crate) fn offset_of(&self, address: *const u8, len: usize) -> Option<u64> {
        let start = address as usize;
        let base = self.base as usize;
        let offset = start.checked_sub(base)?;
        (offset.checked_add(len)? <= self.len).then_some(offset as u64)
    }

    /// `msync(MS_SYNC)` of the pages holding `[offset, offset + len)` (a no-op for mappings
    /// that are not file-backed through memmap2).
    pub(crate) fn sync(&self, offset: u64, len: u64) -> io::Result<()> {
        match &self.kind {
            Kind::Memmap(map) => map.flush_range(offset as usize, len as usize),
            Kind::Dax => Ok(()),
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        if matches!(self.kind, Kind::Dax) {
            // SAFETY: `base` and `len` are exactly the region `libc::mmap` returned in `dax`,
            // and this value owns it; nothing can use it after drop.
            unsafe {
                libc::munmap(self.base.cast(), self.len);
            }
        }
    }
}
