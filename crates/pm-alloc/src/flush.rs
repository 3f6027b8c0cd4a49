//! Cache-line flush and store fence, chosen once by CPUID, and the per-thread persist counters.
//!
//! The instruction is picked at first use from CPUID leaf 7 (DESIGN.md, "Persistent memory";
//! PLIN digest §5.3 "Flush primitives"): `clwb` (EBX bit 24: writes the line back and keeps it
//! cached), else `clflushopt` (EBX bit 23: writes back and evicts, weakly ordered), else
//! `clflush` (always present on x86_64, but ordered with every other store and evicting). Both
//! weakly ordered instructions need an `sfence` before later stores can rely on the line being in
//! the persistence domain; `clflush` is ordered already, but the fence is issued anyway, so every
//! persist point costs exactly one fence whatever the machine. `std::arch` has no intrinsic for
//! the first two, so they are emitted with inline `asm!`.
//!
//! On other architectures [`FlushInstruction::Portable`] issues a sequentially consistent
//! compiler-and-CPU fence only: the pool still works (`Mapped` mode reaches durability through
//! `msync`), but `Dax` mode is refused there.
//!
//! Every flush and fence issued through a pool is counted in thread-local counters
//! ([`thread_counters`]), whatever the mode, so tests and benchmarks can assert the papers'
//! write costs (APEX and PLIN: one flush and one fence per insert in the common case) by taking
//! the difference of two readings around an operation.

use std::cell::Cell;
use std::ops::Sub;
use std::sync::OnceLock;

/// The size of a cache line, the unit of every flush, in bytes.
pub const CACHE_LINE: usize = 64;

/// The flush instruction this process uses, chosen once by CPUID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushInstruction {
    /// `clwb`: write back, keep the line cached.
    Clwb,
    /// `clflushopt`: write back and evict, weakly ordered.
    Clflushopt,
    /// `clflush`: write back and evict, strongly ordered.
    Clflush,
    /// Not x86_64: no cache-line write-back instruction; fences only.
    Portable,
}

/// The flush instruction chosen for this machine (detected on the first call).
///
/// ```
/// let instruction = pm_alloc::flush_instruction();
/// if cfg!(target_arch = "x86_64") {
///     assert_ne!(instruction, pm_alloc::FlushInstruction::Portable);
/// }
/// ```
pub fn flush_instruction() -> FlushInstruction {
    static CHOSEN: OnceLock<FlushInstruction> = OnceLock::new();
    *CHOSEN.get_or_init(detect)
}

#[cfg(target_arch = "x86_64")]
fn detect() -> FlushInstruction {
    let leaf0 = std::arch::x86_64::__cpuid(0);
    if leaf0.eax >= 7 {
        let leaf7 = std::arch::x86_64::__cpuid_count(7, 0);
        if leaf7.ebx & (1 << 24) != 0 {
            return FlushInstruction::Clwb;
        }
        if leaf7.ebx & (1 << 23) != 0 {
            return FlushInstruction::Clflushopt;
        }
    }
    FlushInstruction::Clflush
}

#[cfg(not(target_arch = "x86_64"))]
fn detect() -> FlushInstruction {
    FlushInstruction::Portable
}

/// Writes back the cache line holding `*line` with the chosen instruction (not counted).
#[cfg(not(loom))]
#[inline]
pub(crate) fn write_back<T>(line: &T) {
    let addr = std::ptr::from_ref(line).cast::<u8>();
    #[cfg(target_arch = "x86_64")]
    match flush_instruction() {
        // SAFETY: `addr` comes from a reference, so it points to mapped, readable memory; the
        // instruction only writes the line back (and maybe evicts it) without changing its
        // contents, touches no register but its address operand, and does not use the stack.
        FlushInstruction::Clwb => unsafe {
            std::arch::asm!("clwb [{0}]", in(reg) addr, options(nostack, preserves_flags));
        },
        // SAFETY: as for `clwb`.
        FlushInstruction::Clflushopt => unsafe {
            std::arch::asm!("clflushopt [{0}]", in(reg) addr, options(nostack, preserves_flags));
        },
        // SAFETY: as for `clwb`.
        FlushInstruction::Clflush | FlushInstruction::Portable => unsafe {
            std::arch::asm!("clflush [{0}]", in(reg) addr, options(nostack, preserves_flags));
        },
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = addr;
        std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
    }
}

/// Issues the store fence that orders earlier write-backs before later stores (not counted).
#[cfg(not(loom))]
#[inline]
pub(crate) fn store_fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `sfence` has no operands and no effect but ordering stores.
    unsafe {
        std::arch::asm!("sfence", options(nostack, preserves_flags));
    }
    #[cfg(not(target_arch = "x86_64"))]
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}

thread_local! {
    static FLUSHES: Cell<u64> = const { Cell::new(0) };
    static FENCES: Cell<u64> = const { Cell::new(0) };
    static FLUSHED_BYTES: Cell<u64> = const { Cell::new(0) };
}

/// Counts of the persistence work the calling thread asked any pool for.
///
/// ```
/// use pm_alloc::{PoolOptions, thread_counters};
///
/// let pool = PoolOptions::new(1 << 20).volatile()?;
/// let root = pool.root::<[std::sync::atomic::AtomicU64; 8]>()?;
/// let before = thread_counters();
/// pool.persist(root, 64)?;
/// let cost = thread_counters() - before;
/// assert_eq!((cost.flushes, cost.fences, cost.flushed_bytes), (1, 1, 64));
/// # Ok::<(), pm_alloc::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PersistCounters {
    /// Cache lines flushed.
    pub flushes: u64,
    /// Fences issued.
    pub fences: u64,
    /// Bytes flushed (64 per line).
    pub flushed_bytes: u64,
}

impl Sub for PersistCounters {
    type Output = PersistCounters;

    fn sub(self, earlier: PersistCounters) -> PersistCounters {
        PersistCounters {
            flushes: self.flushes - earlier.flushes,
            fences: self.fences - earlier.fences,
            flushed_bytes: self.flushed_bytes - earlier.flushed_bytes,
        }
    }
}

/// The calling thread's counters since it started (they only grow).
pub fn thread_counters() -> PersistCounters {
    PersistCounters {
        flushes: FLUSHES.with(Cell::get),
        fences: FENCES.with(Cell::get),
        flushed_bytes: FLUSHED_BYTES.with(Cell::get),
    }
}

/// Adds `lines` flushed lines to the calling thread's counters.
#[cfg(not(loom))]
#[inline]
pub(crate) fn count_flushes(lines: u64) {
    FLUSHES.with(|c| c.set(c.get() + lines));
    FLUSHED_BYTES.with(|c| c.set(c.get() + lines * CACHE_LINE as u64));
}

/// Adds one fence to the calling thread's counters.
#[cfg(not(loom))]
#[inline]
pub(crate) fn count_fence() {
    FENCES.with(|c| c.set(c.get() + 1));
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn flush_and_fence_run_on_this_machine() {
        let word = std::sync::atomic::AtomicU64::new(7);
        write_back(&word);
        store_fence();
        assert_eq!(word.load(std::sync::atomic::Ordering::Relaxed), 7);
    }

    #[test]
    fn detection_is_stable() {
        assert_eq!(flush_instruction(), flush_instruction());
    }

    #[test]
    fn counters_subtract() {
        let before = thread_counters();
        count_flushes(3);
        count_fence();
        let d = thread_counters() - before;
        assert_eq!(
            d,
            PersistCounters {
                flushes: 3,
                fences: 1,
                flushed_bytes: 192
            }
        );
    }
}
