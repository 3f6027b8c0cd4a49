//! The global version: a persistent counter bumped at every open.
//!
//! APEX (digest §2.1, §4.3) and PLIN (digest §3.10, §4.6) recover instantly by *not* rebuilding
//! volatile helpers and stale lock words at restart. Instead each node or block records the
//! global version it was last touched under (APEX's local version `L`, PLIN's `version_g` in
//! every block header); when a thread finds a stamp that differs from the current global
//! version `G`, the stamp predates the last restart, so locks held under it are dead and DRAM
//! helpers must be rebuilt (lazily, per node, on first touch).
//!
//! The pool bumps the version and persists it first thing at every open, before the allocator
//! replays its logs, so every operation of a session sees one value that no earlier session
//! used. Decision: 64 bits, so it never wraps (APEX's and PLIN's 31/32-bit fields must
//! handle wrap-around; a structure storing a truncated stamp compares the truncated values and
//! handles the wrap as its paper says).

use std::sync::atomic::Ordering;

use crate::error::Result;
use crate::header::VERSION_OFFSET;
use crate::pool::Inner;

/// Increments and persists the global version; returns the new value (creation makes it 1).
pub(crate) fn bump(inner: &Inner) -> Result<u64> {
    let word = inner.map.word(VERSION_OFFSET);
    let version = word.load(Ordering::Acquire).wrapping_add(1);
    word.store(version, Ordering::Release);
    inner.flush_range(VERSION_OFFSET, 8);
    inner.fence()?;
    Ok(version)
}
