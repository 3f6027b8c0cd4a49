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

/// Faults `range` in for writing, if the kernel takes the advice.
pub(crate) fn populate_now(range: Range<usize>) {
    // SAFETY: the caller of `populate` vouches that the range lies in a mapping that is never
    // unmapped. The advice only installs page-table entries for it (as a write would, without
    // writing), so no byte another thread reads or writes changes; a refusal changes nothing.
    unsafe {
        libc::madvise(
            range.start as *mut libc::c_void,
            range.len(),
            libc::MADV_POPULATE_WRITE,
        );
    }
}
