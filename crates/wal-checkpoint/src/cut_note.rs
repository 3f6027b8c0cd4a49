//! Recovery's cut note (step 5 of the `recovery` module docs; XIndex §5 with digest §3.19).
//!
//! A lane that recovery cuts below `t_safe` must end with a heartbeat stamped `t_safe`, or the
//! next recovery computes a smaller `t_safe` and drops writes this one recovered. The cut
//! (a truncation) and the heartbeat (a write after it) are two changes to the file: a crash
//! between them, or a power loss that keeps the truncation alone, leaves the lane ending below
//! `t_safe`. So before it cuts, recovery writes down each such cut (lane, segment, offset,
//! `t_safe`) in `wal/recovery-cuts`, whole or not at all (a temporary file, fsynced, renamed,
//! the directory fsynced), and removes the note once every cut and heartbeat is fsynced. A
//! recovery that finds a lane's last segment ending exactly where the note says counts the
//! lane as ending at the noted `t_safe` (and its clock restarts above it), and writes the
//! heartbeat. A lane that still holds its records above `t_safe` was not cut yet, and one that
//! ends with the heartbeat was cut whole: neither matches. The latter's heartbeat is durable
//! before a new note replaces the old one, which leaves it out, as recovery fsyncs every lane's
//! last segment before it writes a note; and each cut is fsynced before its heartbeat is
//! written, so no power loss keeps the heartbeat without the cut.

use std::fs;
use std::io::ErrorKind;
use std::path::Path;

use crate::error::{Error, Result};
use crate::faults;
use crate::format::{self, NotedCut};

/// The note's name in the log's directory.
const NAME: &str = "recovery-cuts";
/// The note while it is written.
const TEMP_NAME: &str = "recovery-cuts.tmp";

/// The cuts the note in `wal_dir` names: none when there is no note. (A note half written is
/// still the temporary file, which this ignores.)
pub(crate) fn read(wal_dir: &Path) -> Result<Vec<NotedCut>> {
    let path = wal_dir.join(NAME);
    match fs::read(&path) {
        Ok(bytes) => {
            format::decode_cut_note(&bytes).map_err(|reason| Error::corrupt(&path, 0, reason))
        }
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(Error::io(&path, e)),
    }
}

/// Writes the note naming `cuts` in `wal_dir`, replacing any older one, durably.
pub(crate) fn write(wal_dir: &Path, cuts: &[NotedCut]) -> Result<()> {
    let temp = wal_dir.join(TEMP_NAME);
    faults::write_new(&temp, &format::encode_cut_note(cuts)).map_err(|e| Error::io(&temp, e))?;
    let path = wal_dir.join(NAME);
    faults::rename(&temp, &path).map_err(|e| Error::io(&path, e))?;
    faults::sync_dir(wal_dir).map_err(|e| Error::io(wal_dir, e))
}

/// Removes the note and any half-written one from `wal_dir`, durably.
pub(crate) fn remove(wal_dir: &Path) -> Result<()> {
    let mut removed = false;
    for name in [TEMP_NAME, NAME] {
        let path = wal_dir.join(name);
        match faults::remove_file(&path) {
            Ok(()) => removed = true,
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(&path, e)),
        }
    }
    if removed {
        faults::sync_dir(wal_dir).map_err(|e| Error::io(wal_dir, e))?;
    }
    Ok(())
}
