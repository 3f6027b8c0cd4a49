//! Lanes: the per-thread log buffers of XIndex §5, each with its own chain of segment files.
//!
//! A lane is a buffer behind a mutex (writers append framed records to it while holding the
//! lock, so records in a lane are in timestamp order) and a [`SegmentFile`] behind a second
//! mutex. Draining takes the file lock *before* releasing the buffer lock, so bytes reach the
//! file in the order they were appended. Lock order: buffer → stripe → file (a batch holds its
//! stripes while it writes a full buffer out), buffer → file.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};

use crate::faults::{self, FaultPlan};
use crate::format::{self, SegmentHeader};

/// The file name of segment `seq` of `lane`.
pub(crate) fn segment_name(lane: u32, seq: u64) -> String {
    format!("lane-{lane:03}-{seq:016}.log")
}

/// Parses a segment file name into (lane, seq).
pub(crate) fn parse_segment_name(name: &str) -> Option<(u32, u64)> {
    let rest = name.strip_prefix("lane-")?.strip_suffix(".log")?;
    let (lane, seq) = rest.split_once('-')?;
    Some((lane.parse().ok()?, seq.parse().ok()?))
}

/// The records appended to a lane and not yet handed to its file.
#[derive(Debug, Default)]
pub(crate) struct LaneBuf {
    pub bytes: Vec<u8>,
    /// The timestamp of the lane's last record (buffered or written).
    pub last_ts: u64,
    /// The timestamp of the lane's last record other than a heartbeat.
    pub data_ts: u64,
    /// Whether records were appended since the lane's last fsync.
    pub dirty: bool,
}

impl LaneBuf {
    /// Notes that a data record (not a heartbeat) stamped `ts` was just appended.
    pub fn appended_data(&mut self, ts: u64) {
        self.last_ts = ts;
        self.data_ts = ts;
        self.dirty = true;
    }
}

/// A closed segment, kept until a checkpoint covers it.
#[derive(Debug, Clone)]
pub(crate) struct Closed {
    pub path: PathBuf,
    pub last_ts: u64,
}

/// The lane's current segment file.
#[derive(Debug)]
pub(crate) struct SegmentFile {
    dir: PathBuf,
    lane: u32,
    file: File,
    path: PathBuf,
    seq: u64,
    /// Bytes of the file known good (header and whole frames).
    len: u64,
    /// The file's size: `len`, or more once [`SegmentFile::write`] has extended it ahead.
    extended: u64,
    /// The timestamp of the last record written to the file.
    last_ts: u64,
    /// Whether a write or sync of the file failed: every later one is refused, so the log
    /// never holds frames written after frames that were lost (a drained chunk whose write
    /// failed holds records of writers that may already have been answered).
    failed: bool,
    pub closed: Vec<Closed>,
    /// An empty buffer with capacity, swapped into the lane on the next drain.
    spare: Vec<u8>,
    max_bytes: u64,
    faults: Option<Arc<FaultPlan>>,
}

/// Where an I/O call failed.
pub(crate) type IoFailure = (PathBuf, io::Error);

impl SegmentFile {
    /// Creates segment `seq` of `lane` in `dir` holding a header and `first` (framed records
    /// and the timestamp of the last), fsyncs it and the directory.
    pub fn create(
        dir: &Path,
        lane: u32,
        seq: u64,
        prev_last_ts: u64,
        first: Option<(&[u8], u64)>,
        max_bytes: u64,
        faults: Option<Arc<FaultPlan>>,
    ) -> Result<Self, IoFailure> {
        let path = dir.join(segment_name(lane, seq));
        let mut file = OpenOptions::new()
            .create_new(true)
            .write(true)
            .open(&path)
            .map_err(|e| (path.clone(), e))?;
        let header = SegmentHeader {
            lane,
            seq,
            prev_last_ts,
        }
        .encode();
        let mut bytes = header.to_vec();
        let mut last_ts = prev_last_ts;
        if let Some((records, ts)) = first {
            bytes.extend_from_slice(records);
            last_ts = ts;
        }
        let plan = faults.as_deref();
        faults::write_all(&mut file, &bytes, plan)
            .and_then(|()| faults::sync(&file, plan))
            .and_then(|()| faults::sync_dir(dir))
            .map_err(|e| (path.clone(), e))?;
        Ok(Self {
            dir: dir.to_owned(),
            lane,
            file,
            path,
            seq,
            len: bytes.len() as u64,
            extended: bytes.len() as u64,
            last_ts,
            failed: false,
            closed: Vec::new(),
            spare: Vec::new(),
            max_bytes,
            faults,
        })
    }

    /// Writes `chunk` (whole frames, the last stamped `last_ts`), rotating first when the
    /// segment is full, and fsyncs when `sync`. On a failed write the file is cut back to its
    /// last good length, so it never ends in half a frame that a later write would bury.
    ///
    /// The file is extended ahead of the frames (a sparse tail of zeros, `extend_ahead`
    /// bytes): an fdatasync after an append that grows the file must also commit the new
    /// size, one more journal write per round. Appending 200 bytes and syncing took 123–158
    /// µs here, within an extended file 83–96 µs. Recovery cuts the zeros as a torn tail of the
    /// lane's last segment; rotation and [`SegmentFile::trim`] cut them first.
    ///
    /// Once a write or sync has failed, every later call fails too (see `failed`).
    pub fn write(&mut self, chunk: &[u8], last_ts: u64, sync: bool) -> Result<u64, IoFailure> {
        if self.failed {
            return Err((
                self.path.clone(),
                io::Error::other("an earlier write or sync of this log segment failed"),
            ));
        }
        let written = self.write_or_fail(chunk, last_ts, sync);
        self.failed = written.is_err();
        written
    }

    /// [`SegmentFile::write`] on a segment with no failure behind it.
    fn write_or_fail(&mut self, chunk: &[u8], last_ts: u64, sync: bool) -> Result<u64, IoFailure> {
        if !chunk.is_empty() {
            if self.len >= self.max_bytes {
                self.rotate()?;
            }
            let end = self.len + chunk.len() as u64;
            let plan = self.faults.as_deref();
            let written = if end > self.extended {
                let size = end + extend_ahead(end);
                self.file.set_len(size).map(|()| self.extended = size)
            } else {
                Ok(())
            }
            .and_then(|()| faults::write_all(&mut self.file, chunk, plan));
            if let Err(e) = written {
                // Best effort: if the cut fails too, recovery truncates the torn frame.
                let _ = self.file.set_len(self.len);
                self.extended = self.len;
                let _ = io::Seek::seek(&mut self.file, io::SeekFrom::Start(self.len));
                return Err((self.path.clone(), e));
            }
            self.len += chunk.len() as u64;
            self.last_ts = last_ts;
        }
        if sync {
            faults::sync(&self.file, self.faults.as_deref()).map_err(|e| (self.path.clone(), e))?;
        }
        Ok(chunk.len() as u64)
    }

    /// Cuts the file's extension ahead of its frames, if it has one, and fsyncs the file (its
    /// frames and its size: an fdatasync commits a size change too): a segment that is not a
    /// lane's last must end with its last frame.
    pub fn trim(&mut self) -> Result<(), IoFailure> {
        if self.extended > self.len {
            self.file
                .set_len(self.len)
                .map_err(|e| (self.path.clone(), e))?;
            self.extended = self.len;
        }
        faults::sync(&self.file, self.faults.as_deref()).map_err(|e| (self.path.clone(), e))
    }

    /// Closes the current segment (trimmed and fsynced) and starts the next one.
    fn rotate(&mut self) -> Result<(), IoFailure> {
        self.trim()?;
        let next = Self::create(
            &self.dir,
            self.lane,
            self.seq + 1,
            self.last_ts,
            None,
            self.max_bytes,
            self.faults.clone(),
        )?;
        let old = std::mem::replace(self, next);
        self.closed = old.closed;
        self.closed.push(Closed {
            path: old.path,
            last_ts: old.last_ts,
        });
        self.spare = old.spare;
        Ok(())
    }

    /// Deletes the closed segments whose records all precede `t_begin`; returns how many.
    pub fn delete_covered(&mut self, t_begin: u64) -> Result<usize, IoFailure> {
        let mut deleted = 0;
        while let Some(first) = self.closed.first() {
            if first.last_ts >= t_begin {
                break;
            }
            match fs::remove_file(&first.path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err((first.path.clone(), e)),
            }
            self.closed.remove(0);
            deleted += 1;
        }
        Ok(deleted)
    }
}

/// How far a segment of `len` bytes is extended beyond its frames: as much again, from 64 KiB
/// up to 1 MiB (a lane that only takes heartbeats stays small).
fn extend_ahead(len: u64) -> u64 {
    len.clamp(64 << 10, 1 << 20)
}

/// One lane: its buffer and its file.
#[derive(Debug)]
pub(crate) struct Lane {
    pub buf: Mutex<LaneBuf>,
    pub file: Mutex<SegmentFile>,
}

impl Lane {
    /// Hands the buffered bytes to the file, locked by the caller while it held the buffer:
    /// returns them with the file still locked, after releasing the buffer lock (the caller
    /// writes them, then calls [`Lane::recycle`]).
    pub fn drain<'a>(
        mut buf: MutexGuard<'a, LaneBuf>,
        mut file: MutexGuard<'a, SegmentFile>,
    ) -> (Vec<u8>, u64, MutexGuard<'a, SegmentFile>) {
        let spare = std::mem::take(&mut file.spare);
        let bytes = std::mem::replace(&mut buf.bytes, spare);
        let last_ts = buf.last_ts;
        drop(buf);
        (bytes, last_ts, file)
    }

    /// Gives a written buffer back for reuse.
    pub fn recycle(file: &mut SegmentFile, mut bytes: Vec<u8>) {
        bytes.clear();
        if bytes.capacity() <= 8 << 20 {
            file.spare = bytes;
        }
    }
}

/// Appends a heartbeat to a lane buffer.
pub(crate) fn heartbeat(buf: &mut LaneBuf, ts: u64) {
    format::encode_heartbeat(&mut buf.bytes, ts);
    buf.last_ts = ts;
    buf.dirty = true;
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_segment_refuses_every_write_after_a_failed_one() {
        let temp = test_support::TempDir::new("lane-failed-write");
        let dir = temp.path();
        let plan = Arc::new(FaultPlan::new());
        let mut file = SegmentFile::create(dir, 0, 0, 0, None, 1 << 20, Some(Arc::clone(&plan)))
            .expect("create");
        file.write(b"first chunk", 1, false).expect("first write");
        plan.fail_write_after(1);
        assert!(file.write(b"lost chunk", 2, false).is_err());
        let writes = plan.counts().0;
        let refused = file.write(b"later chunk", 3, true).expect_err("refused");
        assert!(
            refused.1.to_string().contains("earlier write"),
            "{}",
            refused.1
        );
        assert_eq!(plan.counts().0, writes, "nothing reached the file");
        let on_disk = fs::read(&file.path).expect("read");
        assert!(
            on_disk.ends_with(b"first chunk"),
            "cut back to the last good chunk"
        );
    }
}
