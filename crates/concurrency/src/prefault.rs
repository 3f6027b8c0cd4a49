//! Page faults taken ahead of use, on a thread of their own (not in the papers).
//!
//! The first write to a page of a fresh [`huge_heap`](crate::huge_heap) region faults: the
//! kernel zeroes a 2 MiB huge page on the writer's time. A store that grows (a bulk load, batches
//! of new keys) keeps writing fresh pages, and a profile of the engine's batches of 1,000 puts a
//! sixth of the writing thread's time in that zeroing. The heap asks this module to populate the
//! part of a region just beyond what it has handed out; one background thread, started on the
//! first request, does it with `madvise(MADV_POPULATE_WRITE)` (Linux 5.14), which faults the
//! pages in as a write would without touching their contents, so it may run while the owners of
//! neighbouring extents write them. Where the kernel refuses the advice, or the thread cannot
//! start, the writers take the faults as before.
//!
//! The thread runs under `SCHED_BATCH`, whose threads the kernel does not let preempt the
//! thread that wakes them: a request comes from an allocation, which had otherwise often lost
//! its core on the spot to the population of the next huge pages, a few milliseconds (in the
//! `rw` mix at write ratio 0.5 on 10M keys at 2 threads, 42–48 arena chunk allocations a
//! 2-second run took over 20 µs, 63–92 ms in all; 23–34 and 19–47 ms under `SCHED_BATCH`,
//! alternated; the measurement log, session 34). It keeps its fair share of the cores.

use std::ops::Range;
use std::sync::OnceLock;
use std::sync::mpsc::{Sender, channel};

/// Asks the background thread to populate `range` (page-aligned start) of a mapping that is
/// never unmapped; returns at once.
pub(crate) fn populate(range: Range<usize>) {
    static REQUESTS: OnceLock<Option<Sender<Range<usize>>>> = OnceLock::new();
    let requests = REQUESTS.get_or_init(|| {
        let (sender, receiver) = channel::<Range<usize>>();
        std::thread::Builder::new()
            .name("learnkv-prefault".into())
            .spawn(move || {
                run_as_batch();
                for range in receiver {
                    populate_now(range);
                }
            })
            .ok()
            .map(|_| sender)
    });
    if let Some(requests) = requests {
        // The receiver lives as long as the process: a send cannot fail.
        let _ = requests.send(range);
    }
}

/// Moves the calling thread to `SCHED_BATCH` (see the module comment); where the kernel refuses,
/// it stays as it was.
fn run_as_batch() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is a valid `sched_param` for the call's duration, and pid 0 names the
    // calling thread; the call changes only how the scheduler treats this thread, and a
    // refusal changes nothing.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &param) };
}

/// Faults `range` in for writing, if the kernel takes the advice.
pub(crate) fn populate_now(range: Range<usize>) {
    // SAFETY: whatever the range holds, the advice changes no byte of it: it only installs
    // page-table entries (as a write would, without writing), so no byte any thread reads or
    // writes changes; on a part of the range that is not mapped the call fails, without
    // effect there (its error is of no use: pages it did not populate fault on first use).
    unsafe {
        libc::madvise(
            range.start as *mut libc::c_void,
            range.len(),
            libc::MADV_POPULATE_WRITE,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_thread_runs_as_batch() {
        let policy = std::thread::spawn(|| {
            run_as_batch();
            // SAFETY: pid 0 names the calling thread; the call only reads its policy.
            unsafe { libc::sched_getscheduler(0) }
        })
        .join()
        .expect("the thread finishes");
        assert_eq!(policy, libc::SCHED_BATCH);
    }
}
