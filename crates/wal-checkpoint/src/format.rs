//! The bytes on disk: frames, log records, segment headers and checkpoint headers/trailers.
//!
//! Every file starts with a magic number, a format version and a checksum (DESIGN.md "Files").
//! Log records and checkpoint entries are *frames*:
//!
//! ```text
//! frame   = crc32c(salt ‖ len ‖ payload): u32 LE, len: u32 LE, payload: len bytes
//!           (the salt of the segment's header, 8 bytes LE; none in version 1 segments and in
//!           checkpoints, whose frames are crc32c(len ‖ payload))
//! record  = kind: u8, ts: u64 LE, body
//!   put        (1): table u32, key_len u32, key, value (the rest)
//!   remove     (2): table u32, key_len u32, key
//!   batch      (3): count u32, then count × (kind u8 (1|2), ts u64, table u32, key_len u32, key,
//!                   [value_len u32, value] for puts); the frame's ts is the largest op ts
//!   heartbeat  (4): nothing
//!   checkpoint (5): t_begin u64, t_end u64
//!   synced     (6): through u64 (every byte of the segment below `through` was fsynced before
//!                   this record was written; stamped like the record before it in the lane)
//! segment header, version 2 (44 bytes) = "LKVWALSG", version u32, lane u32, seq u64,
//!                   prev_last_ts u64, salt u64 (random, one per lane while the log is open),
//!                   crc32c of the previous 40 bytes: u32
//!   version 1 (36 bytes): the same without the salt; its segments hold no synced records
//! checkpoint = header (32 bytes: "LKVCKPTF", version u32 (1), t_begin u64, t_end u64, crc32c u32),
//!              entry frames (payload: table u32, key_len u32, key, value),
//!              trailer (24 bytes: "LKVCKEND", count u64, crc32c of all entry frames u32,
//!              crc32c of the previous 20 trailer bytes u32)
//! cut note   = "LKVCUTNT", version u32 (1), count u32, count × (lane u32, seq u64, at u64,
//!              t_safe u64), crc32c of all the previous bytes u32
//! ```
//!
//! All integers are little-endian. Decoding never panics: every length is checked against the
//! bytes at hand, and every timestamp and segment number against 2^62 (`MAX_STAMP`).
//!
//! The salt keeps a frame's image inside a value (a copy of another log's bytes, say) from
//! passing for a frame of the segment: recovery tries every offset after a bad frame for the
//! frames that tell a torn tail from corruption, and such an image fails the checksum there.

use crate::range_crc::RangeCrc;

/// The segment format version this build writes. Version 2 added the header's salt, which
/// seeds every frame's checksum, and the synced record (kind 6); version 1 segments are read
/// too.
pub const SEGMENT_VERSION: u32 = 2;
/// The oldest segment format version this build reads.
pub const OLDEST_SEGMENT_VERSION: u32 = 1;
/// The checkpoint format version this build writes and reads.
pub const CHECKPOINT_VERSION: u32 = 1;
/// Magic number of a log segment.
pub(crate) const SEGMENT_MAGIC: &[u8; 8] = b"LKVWALSG";
/// Magic number of a checkpoint.
pub(crate) const CHECKPOINT_MAGIC: &[u8; 8] = b"LKVCKPTF";
/// Magic number of a checkpoint trailer.
pub(crate) const CHECKPOINT_END: &[u8; 8] = b"LKVCKEND";
/// The magic number of recovery's cut note.
const CUT_NOTE_MAGIC: &[u8; 8] = b"LKVCUTNT";
/// The cut note format version this build writes and reads.
const CUT_NOTE_VERSION: u32 = 1;
/// The bytes of one cut in a cut note.
const NOTED_CUT: usize = 4 + 8 + 8 + 8;
/// Bytes of a frame's checksum and length.
pub(crate) const FRAME_HEADER: usize = 8;
/// The largest payload a frame holds (keeps a corrupt length from asking for huge buffers).
pub const MAX_PAYLOAD: usize = 1 << 30;
/// The largest timestamp, and the largest segment number, that a file may name. The log's
/// clock ticks once a record and restarts above the largest stamp recovered, and a lane's
/// segments are numbered from 0: neither comes near 2^62, so a larger one is corruption (and
/// counting on from it cannot wrap around).
pub(crate) const MAX_STAMP: u64 = 1 << 62;
/// Bytes of a segment header (of the version this build writes; the largest).
pub(crate) const SEGMENT_HEADER: usize = 44;
/// Bytes of a version 1 segment header.
const SEGMENT_HEADER_V1: usize = 36;
/// Bytes of a checkpoint header.
pub(crate) const CHECKPOINT_HEADER: usize = 32;
/// Bytes of a checkpoint trailer.
pub(crate) const CHECKPOINT_TRAILER: usize = 24;

const KIND_PUT: u8 = 1;
const KIND_REMOVE: u8 = 2;
const KIND_BATCH: u8 = 3;
const KIND_HEARTBEAT: u8 = 4;
const KIND_CHECKPOINT: u8 = 5;
const KIND_SYNCED: u8 = 6;

/// Where a frame's checksum starts: the CRC32C of its segment's salt, or 0 (plain CRC32C) in
/// version 1 segments and checkpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Seed(u32);

impl Seed {
    /// Plain CRC32C frames.
    pub const PLAIN: Seed = Seed(0);

    /// The seed of the frames of a segment whose header has `salt`.
    pub fn of(salt: u64) -> Seed {
        Seed(crc32c::crc32c(&salt.to_le_bytes()))
    }
}

/// `word` as a timestamp or segment number, unless it is above [`MAX_STAMP`].
fn stamp(word: u64) -> Result<u64, &'static str> {
    if word > MAX_STAMP {
        return Err("timestamp or segment number out of range");
    }
    Ok(word)
}

/// The timestamp of the record whose payload is `payload`.
pub(crate) fn record_stamp(payload: &[u8]) -> Result<u64, &'static str> {
    if payload.len() < 9 {
        return Err("record too short for its timestamp");
    }
    stamp(u64_at(payload, 1))
}

/// Whether a frame that [`read_frame`] reads as valid starts at `at` in `crc`'s buffer, a
/// segment whose frames are checksummed from `seed`: the same test, in time independent of
/// the frame's length (so that recovery can try every offset of a long tail).
pub(crate) fn is_valid_frame_at(crc: &RangeCrc<'_>, at: usize, seed: Seed) -> bool {
    let bytes = crc.bytes();
    if bytes.len().saturating_sub(at) < FRAME_HEADER {
        return false;
    }
    let len = u32_at(bytes, at + 4) as usize;
    len != 0
        && len <= MAX_PAYLOAD
        && len <= bytes.len() - at - FRAME_HEADER
        && crc.append(seed.0, at + 4..at + FRAME_HEADER + len) == u32_at(bytes, at)
}

/// Whether `kind` is the kind byte of a log record in a segment with `header`.
pub(crate) fn is_record_kind(kind: u8, header: &SegmentHeader) -> bool {
    let last = if header.salt.is_some() {
        KIND_SYNCED
    } else {
        KIND_CHECKPOINT
    };
    (KIND_PUT..=last).contains(&kind)
}

/// One operation of a [`crate::Wal::batch`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchOp<'a> {
    /// Insert or update `key` in `table`.
    Put {
        /// The table.
        table: u32,
        /// The key's bytes.
        key: &'a [u8],
        /// The value's bytes.
        value: &'a [u8],
    },
    /// Remove `key` from `table`.
    Remove {
        /// The table.
        table: u32,
        /// The key's bytes.
        key: &'a [u8],
    },
}

impl BatchOp<'_> {
    /// The op's table and key.
    pub fn target(&self) -> (u32, &[u8]) {
        match *self {
            BatchOp::Put { table, key, .. } | BatchOp::Remove { table, key } => (table, key),
        }
    }

    fn encoded_len(&self) -> usize {
        match self {
            BatchOp::Put { key, value, .. } => 1 + 8 + 4 + 4 + key.len() + 4 + value.len(),
            BatchOp::Remove { key, .. } => 1 + 8 + 4 + 4 + key.len(),
        }
    }
}

/// A decoded change to one key: the value to set, or `None` for a removal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Change {
    pub ts: u64,
    pub table: u32,
    pub key: Vec<u8>,
    pub value: Option<Vec<u8>>,
}

/// A decoded log record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Record {
    /// One put or remove.
    Single(Change),
    /// A batch, committed at `ts` (its largest op timestamp).
    Batch { ts: u64, ops: Vec<Change> },
    /// Nothing but a timestamp.
    Heartbeat { ts: u64 },
    /// A checkpoint was written covering `[t_begin, t_end]`.
    Checkpoint { ts: u64, t_begin: u64, t_end: u64 },
    /// The segment's first `through` bytes were fsynced before this record was written.
    Synced { ts: u64, through: u64 },
}

impl Record {
    /// The record's (commit) timestamp.
    pub fn ts(&self) -> u64 {
        match self {
            Record::Single(change) => change.ts,
            Record::Batch { ts, .. }
            | Record::Heartbeat { ts }
            | Record::Checkpoint { ts, .. }
            | Record::Synced { ts, .. } => *ts,
        }
    }
}

/// Appends a frame whose payload `fill` writes to `buf`, checksummed from `seed`; returns the
/// frame's length.
fn frame(buf: &mut Vec<u8>, seed: Seed, fill: impl FnOnce(&mut Vec<u8>)) -> usize {
    let start = buf.len();
    buf.extend_from_slice(&[0; FRAME_HEADER]);
    fill(buf);
    let len = buf.len() - start - FRAME_HEADER;
    debug_assert!(len <= MAX_PAYLOAD, "callers check sizes before framing");
    buf[start + 4..start + 8].copy_from_slice(&(len as u32).to_le_bytes());
    // The length and the payload are contiguous: one checksum call covers both.
    let crc = crc32c::crc32c_append(seed.0, &buf[start + 4..]);
    buf[start..start + 4].copy_from_slice(&crc.to_le_bytes());
    buf.len() - start
}

fn put_key(buf: &mut Vec<u8>, table: u32, key: &[u8]) {
    buf.extend_from_slice(&table.to_le_bytes());
    buf.extend_from_slice(&(key.len() as u32).to_le_bytes());
    buf.extend_from_slice(key);
}

/// The payload size of a put or remove record, to check against [`MAX_PAYLOAD`].
pub(crate) fn single_len(key: &[u8], value: Option<&[u8]>) -> usize {
    1 + 8 + 4 + 4 + key.len() + value.map_or(0, <[u8]>::len)
}

/// The payload size of a batch record.
pub(crate) fn batch_len(ops: &[BatchOp<'_>]) -> usize {
    1 + 8 + 4 + ops.iter().map(BatchOp::encoded_len).sum::<usize>()
}

/// Appends a put (`value` is `Some`) or remove record.
pub(crate) fn encode_single(
    buf: &mut Vec<u8>,
    seed: Seed,
    ts: u64,
    table: u32,
    key: &[u8],
    value: Option<&[u8]>,
) -> usize {
    frame(buf, seed, |b| {
        b.push(if value.is_some() {
            KIND_PUT
        } else {
            KIND_REMOVE
        });
        b.extend_from_slice(&ts.to_le_bytes());
        put_key(b, table, key);
        if let Some(value) = value {
            b.extend_from_slice(value);
        }
    })
}

/// Appends a batch record of non-empty `ops`, stamped `first`, `first + 1`, … in order (the
/// record commits at the last).
pub(crate) fn encode_batch(
    buf: &mut Vec<u8>,
    seed: Seed,
    ops: &[BatchOp<'_>],
    first: u64,
) -> usize {
    let ts = first + ops.len() as u64 - 1;
    frame(buf, seed, |b| {
        b.push(KIND_BATCH);
        b.extend_from_slice(&ts.to_le_bytes());
        b.extend_from_slice(&(ops.len() as u32).to_le_bytes());
        for (op, stamp) in ops.iter().zip(first..) {
            match *op {
                BatchOp::Put { table, key, value } => {
                    b.push(KIND_PUT);
                    b.extend_from_slice(&stamp.to_le_bytes());
                    put_key(b, table, key);
                    b.extend_from_slice(&(value.len() as u32).to_le_bytes());
                    b.extend_from_slice(value);
                }
                BatchOp::Remove { table, key } => {
                    b.push(KIND_REMOVE);
                    b.extend_from_slice(&stamp.to_le_bytes());
                    put_key(b, table, key);
                }
            }
        }
    })
}

/// Appends a heartbeat record.
pub(crate) fn encode_heartbeat(buf: &mut Vec<u8>, seed: Seed, ts: u64) -> usize {
    frame(buf, seed, |b| {
        b.push(KIND_HEARTBEAT);
        b.extend_from_slice(&ts.to_le_bytes());
    })
}

/// Appends a checkpoint-marker record.
pub(crate) fn encode_checkpoint_marker(
    buf: &mut Vec<u8>,
    seed: Seed,
    ts: u64,
    t_begin: u64,
    t_end: u64,
) -> usize {
    frame(buf, seed, |b| {
        b.push(KIND_CHECKPOINT);
        b.extend_from_slice(&ts.to_le_bytes());
        b.extend_from_slice(&t_begin.to_le_bytes());
        b.extend_from_slice(&t_end.to_le_bytes());
    })
}

/// Bytes of a synced record's frame.
pub(crate) const SYNCED_FRAME: usize = FRAME_HEADER + 1 + 8 + 8;

/// Appends a synced record: the segment's first `through` bytes are fsynced.
pub(crate) fn encode_synced(buf: &mut Vec<u8>, seed: Seed, ts: u64, through: u64) -> usize {
    frame(buf, seed, |b| {
        b.push(KIND_SYNCED);
        b.extend_from_slice(&ts.to_le_bytes());
        b.extend_from_slice(&through.to_le_bytes());
    })
}

/// The `through` of the valid synced record (checksummed from `seed`) starting at `bytes[0]`,
/// if one does (a cheap test of its length and kind first: recovery tries every offset after
/// a bad frame).
pub(crate) fn synced_at(bytes: &[u8], seed: Seed) -> Option<u64> {
    if bytes.len() < SYNCED_FRAME
        || u32_at(bytes, 4) as usize != SYNCED_FRAME - FRAME_HEADER
        || bytes[FRAME_HEADER] != KIND_SYNCED
    {
        return None;
    }
    match read_frame(bytes, seed) {
        Frame::Valid(payload, _) => Some(u64_at(payload, 9)),
        _ => None,
    }
}

/// Appends a frame whose checksum holds around a put record too short for the key it
/// announces, as only damage resealed with the segment's seed leaves one.
#[cfg(test)]
pub(crate) fn encode_undecodable(buf: &mut Vec<u8>, seed: Seed, ts: u64) -> usize {
    frame(buf, seed, |b| {
        b.push(KIND_PUT);
        b.extend_from_slice(&ts.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&100u32.to_le_bytes());
    })
}

/// Appends a checkpoint entry frame.
pub(crate) fn encode_entry(buf: &mut Vec<u8>, table: u32, key: &[u8], value: &[u8]) -> usize {
    frame(buf, Seed::PLAIN, |b| {
        put_key(b, table, key);
        b.extend_from_slice(value);
    })
}

/// What [`read_frame`] found at an offset.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Frame<'a> {
    /// A frame whose checksum holds; its payload and total length.
    Valid(&'a [u8], usize),
    /// Fewer bytes than the frame's header or its stated length.
    Short,
    /// The bytes are no valid frame.
    Bad(&'static str),
}

/// Reads the frame at the start of `bytes`, checksummed from `seed`.
pub(crate) fn read_frame(bytes: &[u8], seed: Seed) -> Frame<'_> {
    if bytes.len() < FRAME_HEADER {
        return Frame::Short;
    }
    let crc = u32_at(bytes, 0);
    let len = u32_at(bytes, 4) as usize;
    if len == 0 || len > MAX_PAYLOAD {
        return Frame::Bad("frame length out of range");
    }
    if bytes.len() - FRAME_HEADER < len {
        return Frame::Short;
    }
    let payload = &bytes[FRAME_HEADER..FRAME_HEADER + len];
    if crc32c::crc32c_append(seed.0, &bytes[4..FRAME_HEADER + len]) != crc {
        return Frame::Bad("frame checksum mismatch");
    }
    Frame::Valid(payload, FRAME_HEADER + len)
}

/// The little-endian `u32` at `at` in `bytes` (which holds it whole).
pub(crate) fn u32_at(bytes: &[u8], at: usize) -> u32 {
    let mut word = [0; 4];
    word.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(word)
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}

/// A bounds-checked reader over a payload.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let slice = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(slice)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn u32(&mut self) -> Option<u32> {
        self.take(4).map(|b| u32_at(b, 0))
    }
    fn u64(&mut self) -> Option<u64> {
        self.take(8).map(|b| u64_at(b, 0))
    }
    fn rest(&mut self) -> &'a [u8] {
        let rest = &self.bytes[self.at..];
        self.at = self.bytes.len();
        rest
    }
    fn done(&self) -> bool {
        self.at == self.bytes.len()
    }
    fn key(&mut self) -> Option<(u32, &'a [u8])> {
        let table = self.u32()?;
        let len = self.u32()? as usize;
        Some((table, self.take(len)?))
    }
}

/// Decodes a record payload; `Err` says what is wrong with it.
pub(crate) fn decode_record(payload: &[u8]) -> Result<Record, &'static str> {
    let mut c = Cursor {
        bytes: payload,
        at: 0,
    };
    let kind = c.u8().ok_or("empty record")?;
    let ts = stamp(c.u64().ok_or("record too short for its timestamp")?)?;
    let record = match kind {
        KIND_PUT | KIND_REMOVE => {
            let (table, key) = c.key().ok_or("record too short for its key")?;
            let value = (kind == KIND_PUT).then(|| c.rest().to_vec());
            Record::Single(Change {
                ts,
                table,
                key: key.to_vec(),
                value,
            })
        }
        KIND_BATCH => {
            let count = c.u32().ok_or("batch too short for its count")? as usize;
            let mut ops = Vec::with_capacity(count.min(payload.len() / 17));
            for _ in 0..count {
                let op_kind = c.u8().ok_or("batch op truncated")?;
                let op_ts = c.u64().ok_or("batch op truncated")?;
                let (table, key) = c.key().ok_or("batch op truncated")?;
                let value = match op_kind {
                    KIND_PUT => {
                        let len = c.u32().ok_or("batch op truncated")? as usize;
                        Some(c.take(len).ok_or("batch op truncated")?.to_vec())
                    }
                    KIND_REMOVE => None,
                    _ => return Err("unknown batch op kind"),
                };
                if op_ts > ts {
                    return Err("batch op stamped after its batch");
                }
                ops.push(Change {
                    ts: op_ts,
                    table,
                    key: key.to_vec(),
                    value,
                });
            }
            Record::Batch { ts, ops }
        }
        KIND_HEARTBEAT => Record::Heartbeat { ts },
        KIND_CHECKPOINT => {
            let t_begin = stamp(c.u64().ok_or("checkpoint marker truncated")?)?;
            let t_end = stamp(c.u64().ok_or("checkpoint marker truncated")?)?;
            Record::Checkpoint { ts, t_begin, t_end }
        }
        KIND_SYNCED => {
            let through = c.u64().ok_or("synced record truncated")?;
            Record::Synced { ts, through }
        }
        _ => return Err("unknown record kind"),
    };
    if !c.done() {
        return Err("trailing bytes after the record");
    }
    Ok(record)
}

/// Decodes a checkpoint entry payload into (table, key, value).
pub(crate) fn decode_entry(payload: &[u8]) -> Result<(u32, &[u8], &[u8]), &'static str> {
    let mut c = Cursor {
        bytes: payload,
        at: 0,
    };
    let (table, key) = c.key().ok_or("checkpoint entry truncated")?;
    Ok((table, key, c.rest()))
}

/// A segment file's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SegmentHeader {
    pub lane: u32,
    pub seq: u64,
    /// The timestamp of the last record of the lane's previous segment (0 for the first).
    pub prev_last_ts: u64,
    /// The random number that seeds the checksums of the segment's frames; `None` in a
    /// version 1 segment (plain checksums, no synced records).
    pub salt: Option<u64>,
}

impl SegmentHeader {
    /// The header's bytes: version 2, or version 1 without a salt (for tests of old logs).
    pub fn encode(&self) -> Vec<u8> {
        let (version, len) = match self.salt {
            Some(_) => (SEGMENT_VERSION, SEGMENT_HEADER),
            None => (OLDEST_SEGMENT_VERSION, SEGMENT_HEADER_V1),
        };
        let mut out = Vec::with_capacity(len);
        out.extend_from_slice(SEGMENT_MAGIC);
        out.extend_from_slice(&version.to_le_bytes());
        out.extend_from_slice(&self.lane.to_le_bytes());
        out.extend_from_slice(&self.seq.to_le_bytes());
        out.extend_from_slice(&self.prev_last_ts.to_le_bytes());
        if let Some(salt) = self.salt {
            out.extend_from_slice(&salt.to_le_bytes());
        }
        let crc = crc32c::crc32c(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// Where the checksums of the segment's frames start.
    pub fn seed(&self) -> Seed {
        self.salt.map_or(Seed::PLAIN, Seed::of)
    }

    /// The header's length in bytes (where the segment's first frame starts).
    pub fn len(&self) -> usize {
        if self.salt.is_some() {
            SEGMENT_HEADER
        } else {
            SEGMENT_HEADER_V1
        }
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, &'static str> {
        if bytes.len() < SEGMENT_HEADER_V1 {
            return Err("file shorter than a segment header");
        }
        if &bytes[..8] != SEGMENT_MAGIC {
            return Err("not a learnkv log segment (bad magic)");
        }
        let version = u32_at(bytes, 8);
        let len = match version {
            OLDEST_SEGMENT_VERSION => SEGMENT_HEADER_V1,
            SEGMENT_VERSION => SEGMENT_HEADER,
            _ => return Err("unsupported segment format version"),
        };
        if bytes.len() < len {
            return Err("file shorter than a segment header");
        }
        if crc32c::crc32c(&bytes[..len - 4]) != u32_at(bytes, len - 4) {
            return Err("segment header checksum mismatch");
        }
        Ok(Self {
            lane: u32_at(bytes, 12),
            seq: stamp(u64_at(bytes, 16))?,
            prev_last_ts: stamp(u64_at(bytes, 24))?,
            salt: (version == SEGMENT_VERSION).then(|| u64_at(bytes, 32)),
        })
    }
}

/// A checkpoint file's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CheckpointHeader {
    pub t_begin: u64,
    pub t_end: u64,
}

impl CheckpointHeader {
    pub fn encode(&self) -> [u8; CHECKPOINT_HEADER] {
        let mut out = [0; CHECKPOINT_HEADER];
        out[..8].copy_from_slice(CHECKPOINT_MAGIC);
        out[8..12].copy_from_slice(&CHECKPOINT_VERSION.to_le_bytes());
        out[12..20].copy_from_slice(&self.t_begin.to_le_bytes());
        out[20..28].copy_from_slice(&self.t_end.to_le_bytes());
        let crc = crc32c::crc32c(&out[..28]);
        out[28..].copy_from_slice(&crc.to_le_bytes());
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, &'static str> {
        if bytes.len() < CHECKPOINT_HEADER {
            return Err("file shorter than a checkpoint header");
        }
        if &bytes[..8] != CHECKPOINT_MAGIC {
            return Err("not a learnkv checkpoint (bad magic)");
        }
        if crc32c::crc32c(&bytes[..28]) != u32_at(bytes, 28) {
            return Err("checkpoint header checksum mismatch");
        }
        if u32_at(bytes, 8) != CHECKPOINT_VERSION {
            return Err("unsupported checkpoint format version");
        }
        let header = Self {
            t_begin: stamp(u64_at(bytes, 12))?,
            t_end: stamp(u64_at(bytes, 20))?,
        };
        if header.t_begin > header.t_end {
            return Err("checkpoint begins after it ends");
        }
        Ok(header)
    }
}

/// A checkpoint's trailer: how many entries and the checksum of their frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CheckpointTrailer {
    pub count: u64,
    pub crc: u32,
}

impl CheckpointTrailer {
    pub fn encode(&self) -> [u8; CHECKPOINT_TRAILER] {
        let mut out = [0; CHECKPOINT_TRAILER];
        out[..8].copy_from_slice(CHECKPOINT_END);
        out[8..16].copy_from_slice(&self.count.to_le_bytes());
        out[16..20].copy_from_slice(&self.crc.to_le_bytes());
        let crc = crc32c::crc32c(&out[..20]);
        out[20..].copy_from_slice(&crc.to_le_bytes());
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, &'static str> {
        if bytes.len() < CHECKPOINT_TRAILER || &bytes[..8] != CHECKPOINT_END {
            return Err("checkpoint trailer missing (truncated checkpoint)");
        }
        if crc32c::crc32c(&bytes[..20]) != u32_at(bytes, 20) {
            return Err("checkpoint trailer checksum mismatch");
        }
        Ok(Self {
            count: u64_at(bytes, 8),
            crc: u32_at(bytes, 16),
        })
    }
}

/// A cut that recovery is about to make: segment `seq` of `lane` cut back to `at` bytes and
/// then given a heartbeat stamped `t_safe`, which the segment's records below `at` do not reach
/// (the `cut_note` module says why it is written down first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NotedCut {
    pub lane: u32,
    pub seq: u64,
    pub at: u64,
    pub t_safe: u64,
}

/// The bytes of a cut note naming `cuts`.
pub(crate) fn encode_cut_note(cuts: &[NotedCut]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + cuts.len() * NOTED_CUT + 4);
    out.extend_from_slice(CUT_NOTE_MAGIC);
    out.extend_from_slice(&CUT_NOTE_VERSION.to_le_bytes());
    out.extend_from_slice(&(cuts.len() as u32).to_le_bytes());
    for cut in cuts {
        out.extend_from_slice(&cut.lane.to_le_bytes());
        out.extend_from_slice(&cut.seq.to_le_bytes());
        out.extend_from_slice(&cut.at.to_le_bytes());
        out.extend_from_slice(&cut.t_safe.to_le_bytes());
    }
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// The cuts a cut note's bytes name, or why they are no cut note this build reads.
pub(crate) fn decode_cut_note(bytes: &[u8]) -> Result<Vec<NotedCut>, &'static str> {
    if bytes.len() < 20 || &bytes[..8] != CUT_NOTE_MAGIC {
        return Err("not a learnkv cut note (bad magic or too short)");
    }
    let body = bytes.len() - 4;
    if crc32c::crc32c(&bytes[..body]) != u32_at(bytes, body) {
        return Err("cut note checksum mismatch");
    }
    if u32_at(bytes, 8) != CUT_NOTE_VERSION {
        return Err("unsupported cut note format version");
    }
    let count = u32_at(bytes, 12) as usize;
    if body - 16 != count * NOTED_CUT {
        return Err("cut note length does not match its count");
    }
    bytes[16..body]
        .chunks_exact(NOTED_CUT)
        .map(|cut| {
            Ok(NotedCut {
                lane: u32_at(cut, 0),
                seq: stamp(u64_at(cut, 4))?,
                at: u64_at(cut, 12),
                t_safe: stamp(u64_at(cut, 20))?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_notes_round_trip_and_damage_is_refused() {
        let cuts = [
            NotedCut {
                lane: 3,
                seq: 9,
                at: 44,
                t_safe: 1 << 40,
            },
            NotedCut {
                lane: 0,
                seq: 0,
                at: 1234,
                t_safe: 7,
            },
        ];
        let bytes = encode_cut_note(&cuts);
        assert_eq!(decode_cut_note(&bytes), Ok(cuts.to_vec()));
        assert_eq!(decode_cut_note(&encode_cut_note(&[])), Ok(Vec::new()));
        for len in 0..bytes.len() {
            assert!(
                decode_cut_note(&bytes[..len]).is_err(),
                "cut to {len} bytes"
            );
        }
        for at in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x10;
            assert!(decode_cut_note(&damaged).is_err(), "byte {at} flipped");
        }
    }

    #[test]
    fn records_round_trip() {
        let seed = Seed::of(0x5a17);
        let mut buf = Vec::new();
        encode_single(&mut buf, seed, 7, 3, b"key", Some(b"value"));
        encode_single(&mut buf, seed, 8, 3, b"key", None);
        let ops = [
            BatchOp::Put {
                table: 1,
                key: b"a",
                value: b"1",
            },
            BatchOp::Remove { table: 2, key: b"" },
        ];
        encode_batch(&mut buf, seed, &ops, 9);
        encode_heartbeat(&mut buf, seed, 11);
        encode_checkpoint_marker(&mut buf, seed, 12, 4, 6);
        let synced_from = buf.len();
        encode_synced(&mut buf, seed, 12, 99);
        assert_eq!(buf.len() - synced_from, SYNCED_FRAME);
        assert_eq!(synced_at(&buf[synced_from..], seed), Some(99));
        assert_eq!(synced_at(&buf[synced_from..buf.len() - 1], seed), None);
        assert_eq!(synced_at(&buf, seed), None, "a put is no synced record");
        let mut at = 0;
        let mut records = Vec::new();
        while at < buf.len() {
            let Frame::Valid(payload, len) = read_frame(&buf[at..], seed) else {
                panic!("frame at {at} is valid");
            };
            // Another segment's frames are checksummed from another seed.
            let other = read_frame(&buf[at..], Seed::of(0x5a18));
            assert!(!matches!(other, Frame::Valid(..)));
            assert!(!matches!(
                read_frame(&buf[at..], Seed::PLAIN),
                Frame::Valid(..)
            ));
            records.push(decode_record(payload).expect("record decodes"));
            at += len;
        }
        let ts: Vec<u64> = records.iter().map(Record::ts).collect();
        assert_eq!(ts, [7, 8, 10, 11, 12, 12]);
        assert_eq!(
            records[5],
            Record::Synced {
                ts: 12,
                through: 99
            }
        );
        assert_eq!(
            records[2],
            Record::Batch {
                ts: 10,
                ops: vec![
                    Change {
                        ts: 9,
                        table: 1,
                        key: b"a".to_vec(),
                        value: Some(b"1".to_vec())
                    },
                    Change {
                        ts: 10,
                        table: 2,
                        key: Vec::new(),
                        value: None
                    },
                ]
            }
        );
    }

    #[test]
    fn every_truncation_and_bit_flip_is_detected() {
        for seed in [Seed::PLAIN, Seed::of(1)] {
            let mut buf = Vec::new();
            encode_single(&mut buf, seed, 7, 3, b"key", Some(b"value"));
            assert!(matches!(read_frame(&buf, seed), Frame::Valid(..)));
            for cut in 0..buf.len() {
                assert!(!matches!(read_frame(&buf[..cut], seed), Frame::Valid(..)));
            }
            for bit in 0..buf.len() * 8 {
                let mut flipped = buf.clone();
                flipped[bit / 8] ^= 1 << (bit % 8);
                assert!(
                    !matches!(read_frame(&flipped, seed), Frame::Valid(..)),
                    "bit {bit}"
                );
            }
        }
        // Plain frames are plain CRC32C (version 1 segments, checkpoints).
        let mut plain = Vec::new();
        encode_heartbeat(&mut plain, Seed::PLAIN, 5);
        assert_eq!(u32_at(&plain, 0), crc32c::crc32c(&plain[4..]));
    }

    #[test]
    fn headers_round_trip_and_reject_garbage() {
        let h = SegmentHeader {
            lane: 3,
            seq: 9,
            prev_last_ts: 77,
            salt: Some(0xfeed),
        };
        assert_eq!(h.encode().len(), h.len());
        assert_eq!(SegmentHeader::decode(&h.encode()), Ok(h));
        let v1 = SegmentHeader { salt: None, ..h };
        assert_eq!((v1.encode().len(), v1.len()), (36, 36));
        assert_eq!(
            SegmentHeader::decode(&v1.encode()),
            Ok(v1),
            "version 1 is read"
        );
        let c = CheckpointHeader {
            t_begin: 1,
            t_end: 5,
        };
        assert_eq!(CheckpointHeader::decode(&c.encode()), Ok(c));
        let t = CheckpointTrailer { count: 4, crc: 99 };
        assert_eq!(CheckpointTrailer::decode(&t.encode()), Ok(t));
        assert!(SegmentHeader::decode(&[0; 10]).is_err());
        assert!(SegmentHeader::decode(&c.encode()).is_err());
        assert!(SegmentHeader::decode(&h.encode()[..40]).is_err());
        for header in [h, v1] {
            let mut bad = header.encode();
            bad[20] ^= 1;
            assert!(SegmentHeader::decode(&bad).is_err());
        }
        let mut newer = h.encode();
        newer[8..12].copy_from_slice(&(SEGMENT_VERSION + 1).to_le_bytes());
        let crc = crc32c::crc32c(&newer[..40]);
        newer[40..].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(
            SegmentHeader::decode(&newer),
            Err("unsupported segment format version")
        );
        assert!(is_record_kind(KIND_SYNCED, &h) && !is_record_kind(KIND_SYNCED, &v1));
        assert!(is_record_kind(KIND_PUT, &v1) && !is_record_kind(0, &h));
        assert!(decode_record(&[1, 2, 3]).is_err());
        assert!(decode_record(&[KIND_SYNCED, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2]).is_err());
        assert!(decode_record(&[KIND_BATCH, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 255, 255]).is_err());
    }

    #[test]
    fn stamps_above_the_limit_are_refused_in_every_file() {
        let too_late = MAX_STAMP + 1;
        let out_of_range = "timestamp or segment number out of range";
        let header = SegmentHeader {
            lane: 0,
            seq: MAX_STAMP,
            prev_last_ts: MAX_STAMP,
            salt: Some(1),
        };
        assert_eq!(SegmentHeader::decode(&header.encode()), Ok(header));
        for forged in [
            SegmentHeader {
                seq: too_late,
                ..header
            },
            SegmentHeader {
                prev_last_ts: too_late,
                ..header
            },
        ] {
            assert_eq!(SegmentHeader::decode(&forged.encode()), Err(out_of_range));
        }
        let checkpoint = CheckpointHeader {
            t_begin: 1,
            t_end: too_late,
        };
        assert_eq!(
            CheckpointHeader::decode(&checkpoint.encode()),
            Err(out_of_range)
        );
        let cut = NotedCut {
            lane: 0,
            seq: 0,
            at: 44,
            t_safe: too_late,
        };
        assert_eq!(decode_cut_note(&encode_cut_note(&[cut])), Err(out_of_range));
        let mut heartbeat = Vec::new();
        encode_heartbeat(&mut heartbeat, Seed::PLAIN, too_late);
        let payload = &heartbeat[FRAME_HEADER..];
        assert_eq!(record_stamp(payload), Err(out_of_range));
        assert!(decode_record(payload).is_err());
        assert_eq!(
            record_stamp(&payload[..8]),
            Err("record too short for its timestamp")
        );
    }

    #[test]
    fn frames_are_found_valid_as_read_frame_finds_them() {
        let seed = Seed::of(0xfeed);
        let mut bytes = Vec::new();
        encode_heartbeat(&mut bytes, seed, 3);
        encode_heartbeat(&mut bytes, seed, 4);
        bytes.extend_from_slice(&[7; 40]);
        for cut in [bytes.len(), 30, 17, 5] {
            let bytes = &bytes[..cut];
            let crc = RangeCrc::new(bytes);
            for at in 0..bytes.len() + 2 {
                let valid =
                    at <= bytes.len() && matches!(read_frame(&bytes[at..], seed), Frame::Valid(..));
                assert_eq!(is_valid_frame_at(&crc, at, seed), valid, "{at} of {cut}");
                assert!(!is_valid_frame_at(&crc, at, Seed::PLAIN), "{at} of {cut}");
            }
        }
    }
}
