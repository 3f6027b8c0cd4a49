//! Asymmetric fences: a cheap fence for the frequent side of a Dekker handshake and an
//! expensive one for the rare side (liburcu's `smp_mb_slave`/`smp_mb_master`, folly's
//! `asymmetricLightBarrier`/`asymmetricHeavyBarrier`). The grace-period barrier uses them:
//! every operation's online entry takes the light side, every `synchronize` the heavy side.
//!
//! On Linux the heavy fence is the `membarrier` system call with
//! `MEMBARRIER_CMD_PRIVATE_EXPEDITED`: it returns only after every other thread of the process
//! that is running on a CPU has executed a full memory barrier (the kernel interrupts those
//! CPUs), and a thread that is not running executes one when it is scheduled in again. So for
//! each program point `L` of another thread where it issued a light fence, either everything
//! that thread did before `L` is visible to the caller once the call returns, or everything it
//! reads after `L` sees what the caller wrote before the call: what a pair of `SeqCst` fences
//! gives, with the light side reduced to a compiler fence (which only keeps the compiler from
//! moving memory accesses across it; the CPU does not reorder across the interrupt).
//!
//! The command needs a one-time registration per process (`MEMBARRIER_CMD_REGISTER_PRIVATE_
//! EXPEDITED`, Linux 4.14). [`Fences::new`] tries it once per process and remembers the outcome;
//! where it fails (another operating system, an old kernel, a seccomp filter) both sides are
//! `fence(SeqCst)`. A [`Fences`] value is chosen once and never changes, so both sides of one
//! handshake always agree on the kind. Under loom both sides are always `fence(SeqCst)`, which
//! loom model-checks (loom cannot model the system call).
//!
//! This module holds the `unsafe` system calls.

use crate::sync::atomic::{Ordering, fence};

/// The fence pair of one handshake: membarrier-backed where the kernel has it, else `SeqCst`
/// fences on both sides.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fences {
    expedited: bool,
}

impl Fences {
    /// The best pair this process supports (registration is attempted once per process).
    pub(crate) fn new() -> Self {
        Self {
            expedited: sys::registered(),
        }
    }

    /// The pair of plain `SeqCst` fences (the fallback), for tests.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn symmetric() -> Self {
        Self { expedited: false }
    }

    /// Whether the heavy side is the `membarrier` system call.
    pub(crate) fn is_expedited(self) -> bool {
        self.expedited
    }

    /// The frequent side: orders this thread's earlier stores before its later loads, as seen
    /// by a thread that issues [`heavy`](Self::heavy).
    #[inline]
    pub(crate) fn light(self) {
        if self.expedited {
            std::sync::atomic::compiler_fence(Ordering::SeqCst);
        } else {
            fence(Ordering::SeqCst);
        }
    }

    /// The rare side: a `SeqCst` fence on this thread that every other thread's
    /// [`light`](Self::light) fence pairs with.
    pub(crate) fn heavy(self) {
        if self.expedited {
            sys::barrier();
        } else {
            fence(Ordering::SeqCst);
        }
    }
}

#[cfg(all(target_os = "linux", not(loom)))]
mod sys {
    use std::sync::OnceLock;

    /// `MEMBARRIER_CMD_PRIVATE_EXPEDITED` (linux/membarrier.h).
    const PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
    /// `MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED`.
    const REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

    /// Whether this process is registered for expedited private barriers (tried once).
    pub(super) fn registered() -> bool {
        static REGISTERED: OnceLock<bool> = OnceLock::new();
        *REGISTERED.get_or_init(|| membarrier(REGISTER_PRIVATE_EXPEDITED) == 0)
    }

    /// A full memory barrier on every running thread of this process. Only called after
    /// [`registered`] returned true.
    pub(super) fn barrier() {
        let result = membarrier(PRIVATE_EXPEDITED);
        // Registered commands fail only on invalid arguments, which these are not.
        assert_eq!(
            result,
            0,
            "membarrier(PRIVATE_EXPEDITED) failed after a successful registration: {}",
            std::io::Error::last_os_error()
        );
    }

    fn membarrier(cmd: libc::c_int) -> libc::c_long {
        let (flags, cpu_id): (libc::c_uint, libc::c_int) = (0, 0);
        // SAFETY: `membarrier(cmd, flags, cpu_id)` takes no pointers and touches no memory of
        // this process; an unsupported command returns -1 (EINVAL or ENOSYS).
        unsafe { libc::syscall(libc::SYS_membarrier, cmd, flags, cpu_id) }
    }
}

#[cfg(not(all(target_os = "linux", not(loom))))]
mod sys {
    /// No expedited barriers: both sides use `SeqCst` fences.
    pub(super) fn registered() -> bool {
        false
    }

    pub(super) fn barrier() {
        unreachable!("never called: `registered` is false")
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn both_kinds_run_both_sides() {
        for fences in [Fences::new(), Fences::symmetric()] {
            fences.light();
            fences.heavy();
        }
        assert!(!Fences::symmetric().is_expedited());
    }
}
