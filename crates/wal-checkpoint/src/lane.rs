//! Lanes: the per-thread log buffers of XIndex §5, each with its own chain of segment files.
//!
//! A lane is a buffer behind a mutex (writers append framed records to it while holding the
//! lock, so records in a lane are in timestamp order) and a [`SegmentFile`] behind a second
//! mutex. Draining takes the file lock *before* releasing the buffer lock, so bytes reach the
//! file in the order they were appended. Lock order: buffer → stripe → file (a batch holds its
//! stripes while it writes a full buffer out), buffer → file.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};

use crate::faults::{self, FaultPlan};
use crate::format::{self, Seed, SegmentHeader};
use crate::wal::MAX_LANES;

/// The file name of segment `seq` of `lane`.
pub(crate) fn segment_name(lane: u32, seq: u64) -> String {
    format!("lane-{lane:03}-{seq:016}.log")
}

/// Parses a segment file name into (lane, seq): only the name [`segment_name`] gives them, of
/// a lane below [`MAX_LANES`], so that no other file passes for a segment (or for another
/// name of one).
pub(crate) fn parse_segment_name(name: &str) -> Option<(u32, u64)> {
    let rest = name.strip_prefix("lane-")?.strip_suffix(".log")?;
    let (lane, seq) = rest.split_once('-')?;
    let (lane, seq) = (lane.parse().ok()?, seq.parse().ok()?);
    (lane < MAX_LANES as u32 && segment_name(lane, seq) == name).then_some((lane, seq))
}

/// The records appended to a lane and not yet handed to its file.
#[derive(Debug)]
pub(crate) struct LaneBuf {
    pub bytes: Vec<u8>,
    /// The timestamp of the lane's last record (buffered or written).
    pub last_ts: u64,
    /// The timestamp of the lane's last record other than a heartbeat.
    pub data_ts: u64,
    /// Whether records were appended since the lane's last fsync.
    pub dirty: bool,
    /// Where the checksums of the lane's frames start ([`Chain::seed`]).
    pub seed: Seed,
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

/// What the segments of a lane share while the log is open.
#[derive(Debug, Clone)]
pub(crate) struct Chain {
    /// The directory of the segment files.
    pub dir: PathBuf,
    pub lane: u32,
    /// The random number in every header of the chain, which seeds the checksums of the
    /// segments' frames ([`new_salt`]): one for the whole chain, so that frames buffered before
    /// a rotation stay valid in the next segment.
    pub salt: u64,
    /// The size past which a segment rotates.
    pub max_bytes: u64,
    pub faults: Option<Arc<FaultPlan>>,
}

impl Chain {
    /// Where the checksums of the chain's frames start.
    pub fn seed(&self) -> Seed {
        Seed::of(self.salt)
    }
}

/// The lane's current segment file.
#[derive(Debug)]
pub(crate) struct SegmentFile {
    chain: Chain,
    file: File,
    path: PathBuf,
    seq: u64,
    /// Bytes of the file known good (header and whole frames).
    len: u64,
    /// Bytes of the file known fsynced (a prefix of `len`).
    synced: u64,
    /// The `synced` that the file's last synced record states (0 before the first): the next
    /// chunk written carries a synced record when `synced` has moved past it.
    marked: u64,
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
}

/// Where an I/O call failed.
pub(crate) type IoFailure = (PathBuf, io::Error);

impl SegmentFile {
    /// Creates segment `seq` of `chain` holding a header and, when `first_heartbeat` gives
    /// its stamp, a heartbeat; fsyncs it and the directory.
    pub fn create(
        chain: Chain,
        seq: u64,
        prev_last_ts: u64,
        first_heartbeat: Option<u64>,
    ) -> Result<Self, IoFailure> {
        let path = chain.dir.join(segment_name(chain.lane, seq));
        let mut file = OpenOptions::new()
            .create_new(true)
            .write(true)
            .open(&path)
            .map_err(|e| (path.clone(), e))?;
        let mut bytes = SegmentHeader {
            lane: chain.lane,
            seq,
            prev_last_ts,
            salt: Some(chain.salt),
        }
        .encode();
        let mut last_ts = prev_last_ts;
        if let Some(ts) = first_heartbeat {
            format::encode_heartbeat(&mut bytes, chain.seed(), ts);
            last_ts = ts;
        }
        let plan = chain.faults.as_deref();
        faults::write_all(&mut file, &bytes, plan)
            .and_then(|()| faults::sync(&file, plan))
            .and_then(|()| faults::sync_dir(&chain.dir))
            .map_err(|e| (path.clone(), e))?;
        Ok(Self {
            chain,
            file,
            path,
            seq,
            len: bytes.len() as u64,
            synced: bytes.len() as u64,
            marked: 0,
            extended: bytes.len() as u64,
            last_ts,
            failed: false,
            closed: Vec::new(),
            spare: Vec::new(),
        })
    }

    /// Writes `chunk` (whole frames, the last stamped `last_ts`), rotating first when the
    /// segment is full, and fsyncs when `sync`. On a failed write the file is cut back to its
    /// last good length, so it never ends in half a frame that a later write would bury.
    ///
    /// A chunk written after a sync that the segment's synced records do not state yet ends
    /// with a synced record of how far the segment was fsynced (appended to `chunk`): recovery
    /// then tells a zeroed block among fsynced frames (corruption) from one that never reached
    /// the disk before a power loss (a torn tail). A round heartbeats every lane, so in
    /// `Immediate` mode nearly every round's chunk of every lane carries one (25 bytes), and so
    /// does each segment's first chunk (naming the bytes the segment was created with); no
    /// write call is added.
    ///
    /// The file is extended ahead of the frames (a sparse tail of zeros, `extend_ahead`
    /// bytes): an fdatasync after an append that grows the file must also commit the new
    /// size, one more journal write per round. Appending 200 bytes and syncing took 123–158
    /// µs here, within an extended file 83–96 µs. Recovery cuts the zeros as a torn tail of the
    /// lane's last segment; rotation and [`SegmentFile::trim`] cut them first.
    ///
    /// Once a write or sync has failed, every later call fails too (see `failed`).
    pub fn write(
        &mut self,
        chunk: &mut Vec<u8>,
        last_ts: u64,
        sync: bool,
    ) -> Result<u64, IoFailure> {
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
    fn write_or_fail(
        &mut self,
        chunk: &mut Vec<u8>,
        last_ts: u64,
        sync: bool,
    ) -> Result<u64, IoFailure> {
        if !chunk.is_empty() {
            if self.len >= self.chain.max_bytes {
                self.rotate()?;
            }
            let marked = self.synced > self.marked;
            if marked {
                format::encode_synced(chunk, self.chain.seed(), last_ts, self.synced);
            }
            let end = self.len + chunk.len() as u64;
            let plan = self.chain.faults.as_deref();
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
            if marked {
                self.marked = self.synced;
            }
        }
        if sync {
            faults::sync(&self.file, self.chain.faults.as_deref())
                .map_err(|e| (self.path.clone(), e))?;
            self.synced = self.len;
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
        faults::sync(&self.file, self.chain.faults.as_deref())
            .map_err(|e| (self.path.clone(), e))?;
        self.synced = self.len;
        Ok(())
    }

    /// Closes the current segment (trimmed and fsynced) and starts the next one.
    fn rotate(&mut self) -> Result<(), IoFailure> {
        self.trim()?;
        let next = Self::create(self.chain.clone(), self.seq + 1, self.last_ts, None)?;
        let old = std::mem::replace(self, next);
        self.closed = old.closed;
        self.closed.push(Closed {
            path: old.path,
            last_ts: old.last_ts,
        });
        self.spare = old.spare;
        Ok(())
    }

    /// Deletes the closed segments whose records all precede `t_begin`, oldest first, each
    /// deletion made durable before the next: whatever part of them a power loss keeps, the
    /// lane's files stay one chain without a gap (which recovery would report as corruption).
    /// Returns how many.
    pub fn delete_covered(&mut self, t_begin: u64) -> Result<usize, IoFailure> {
        let mut deleted = 0;
        while let Some(first) = self.closed.first() {
            if first.last_ts >= t_begin {
                break;
            }
            match faults::remove_file(&first.path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err((first.path.clone(), e)),
            }
            faults::sync_dir(&self.chain.dir).map_err(|e| (self.chain.dir.clone(), e))?;
            self.closed.remove(0);
            deleted += 1;
        }
        Ok(deleted)
    }
}

/// A salt for the segments a lane writes while the log is open: it seeds their frames'
/// checksums, so that a frame's image inside a value (a copy of another log's bytes) never
/// passes for one of their frames. Random: the standard library's randomly keyed hasher over
/// the lane and the time.
pub(crate) fn new_salt(lane: u32) -> u64 {
    use std::hash::BuildHasher;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    std::hash::RandomState::new().hash_one((lane, nanos))
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
    format::encode_heartbeat(&mut buf.bytes, buf.seed, ts);
    buf.last_ts = ts;
    buf.dirty = true;
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::fs;
    use std::path::Path;

    use super::*;

    /// A chain of lane 0 in `dir`.
    fn chain(dir: &Path, faults: Option<Arc<FaultPlan>>) -> Chain {
        Chain {
            dir: dir.to_owned(),
            lane: 0,
            salt: new_salt(0),
            max_bytes: 1 << 20,
            faults,
        }
    }

    #[test]
    fn a_segment_refuses_every_write_after_a_failed_one() {
        let temp = test_support::TempDir::new("lane-failed-write");
        let dir = temp.path();
        let plan = Arc::new(FaultPlan::new());
        let mut file =
            SegmentFile::create(chain(dir, Some(Arc::clone(&plan))), 0, 0, None).expect("create");
        file.write(&mut b"first chunk".to_vec(), 1, false)
            .expect("first write");
        plan.fail_write_after(1);
        assert!(file.write(&mut b"lost chunk".to_vec(), 2, false).is_err());
        let writes = plan.counts().0;
        let refused = file
            .write(&mut b"later chunk".to_vec(), 3, true)
            .expect_err("refused");
        assert!(
            refused.1.to_string().contains("earlier write"),
            "{}",
            refused.1
        );
        assert_eq!(plan.counts().0, writes, "nothing reached the file");
        let on_disk = fs::read(&file.path).expect("read");
        let (first, mark) = on_disk.split_at(on_disk.len() - format::SYNCED_FRAME);
        assert!(
            first.ends_with(b"first chunk"),
            "cut back to the last good chunk"
        );
        let header = format::SEGMENT_HEADER as u64;
        assert_eq!(
            format::synced_at(mark, file.chain.seed()),
            Some(header),
            "the header was synced"
        );
    }

    #[test]
    fn a_chunk_after_a_sync_states_how_far_the_segment_was_synced() {
        let temp = test_support::TempDir::new("lane-synced-record");
        let dir = temp.path();
        let mut file = SegmentFile::create(chain(dir, None), 0, 0, None).expect("create");
        let seed = file.chain.seed();
        let header = format::SEGMENT_HEADER as u64;
        let mut first = b"unsynced".to_vec();
        file.write(&mut first, 1, false).expect("write");
        assert_eq!(format::synced_at(&first[8..], seed), Some(header));
        let mut second = b"synced".to_vec();
        file.write(&mut second, 2, true).expect("write and sync");
        assert_eq!(second, b"synced", "no sync since the last record");
        let synced = header + (first.len() + second.len()) as u64;
        let mut third = b"after".to_vec();
        file.write(&mut third, 3, false).expect("write");
        assert_eq!(format::synced_at(&third[5..], seed), Some(synced));
        let mut idle = Vec::new();
        file.write(&mut idle, 3, true)
            .expect("an empty round syncs");
        assert!(idle.is_empty(), "an empty chunk gets no record");
        assert_ne!(new_salt(0), new_salt(0), "every chain draws its own salt");
    }
}
