//! Crash recovery (XIndex §5, with the steps the digest rebuilds in §3.19):
//!
//! 1. Scan every lane's segments. A bad or short frame in the lane's last segment is a torn
//!    tail and is cut off when no valid frame follows it, or when it runs into zeros that fill
//!    to the end of a 512-byte block (from the frame's start, or a whole block within the
//!    frame): after a power loss, a write that never reached the disk (or a block that reached
//!    it before the frame was written into it) reads as zeros while later blocks of the same
//!    round did; the frames on them were never fsynced, as an fsync would have written the
//!    earlier block too. Unless the frame lies in bytes that a valid synced record after it
//!    says were fsynced (the first chunk a lane writes after each sync ends with one): a zeroed
//!    block among fsynced frames is no torn tail. (Frames are checksummed from the salt of
//!    their segment's header, so a frame's image inside a value never counts as one.) Bytes
//!    whose sync no synced record on disk names (a lane's last round, or a round whose record
//!    was lost with the next chunk) are still cut as a torn tail when a block of them reads as
//!    zeros. Any other bad byte is [`Error::Corrupt`] naming the file and offset (or, in
//!    tolerant mode, ends that lane there). So are a gap in the lanes' numbers and checkpoints
//!    without any log. An earlier segment must end at the stamp the next segment's header
//!    names as the lane's last before it: one that ends below it lost records (cut at a frame
//!    boundary), and the lane ends there. That is corruption unless another lane, intact, ends
//!    at or below the stamp reached, so that every record lost lies above `t_safe` (step 2)
//!    and would be cut anyway: the state builds before session 22 left when a crash came
//!    between step 5's cut and its deletion of the segments after the cut.
//! 2. `t_safe` = the minimum over lanes of the timestamp of the lane's last valid record. Every
//!    record stamped at or below `t_safe` is on disk in its lane: lanes are in timestamp order,
//!    and each lane's last record is at or above `t_safe`.
//! 3. Choose the newest valid checkpoint with `t_end ≤ t_safe` whose `t_begin` the remaining
//!    segments still cover, falling back to older ones.
//! 4. Replay, in timestamp order over the checkpoint, every op stamped in `[t_begin, t_safe]`
//!    whose record is committed at or below `t_safe` (a batch commits at its largest stamp, so
//!    it is replayed whole or not at all).
//! 5. Physically cut every write (put, remove, batch) stamped above `t_safe`, with every record
//!    after it (and fsync), so that a later recovery with a larger `t_safe` cannot resurrect
//!    writes this one dropped, and delete checkpoints that end above `t_safe`. Heartbeats,
//!    synced records and checkpoint markers above `t_safe` before a lane's first such write
//!    stay: they hold no write, and a lane they end ends above `t_safe` (a clean close's round
//!    heartbeats each lane at a stamp of its own, so all but one end above the least, and the
//!    next open cuts nothing). A lane cut this way gets a heartbeat stamped `t_safe` in place of
//!    the cut records: every lane still ends at or above `t_safe`, so no later recovery computes
//!    a smaller one and drops writes this one recovered (the kill test caught that: a lane cut
//!    below `t_safe`, then another lane's newer heartbeat cut by the next recovery, and an
//!    acknowledged write was gone). The cut and its heartbeat are two changes to the file, so
//!    such cuts are written down first (`cut_note`): a lane whose last segment ends exactly
//!    where a noted cut left it ends at the noted `t_safe`, and gets its heartbeat then.
//! 6. Fsync the last segment kept in each lane, after step 5's deletions and before its cuts:
//!    a size cut back at a clean close whose sync never happened, or frames written but not
//!    yet synced, could otherwise come back changed after a power loss, once later segments
//!    follow it; and every record at or below `t_safe`, and every cut and heartbeat of an
//!    interrupted recovery, is durable before a new cut note replaces the old one.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fs;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::checkpoint;
use crate::cut_note;
use crate::error::{Error, Result};
use crate::faults;
use crate::format::{
    self, Change, FRAME_HEADER, Frame, NotedCut, Record, SEGMENT_HEADER, Seed, SegmentHeader,
};
use crate::lane::{self, Closed};
use crate::range_crc::RangeCrc;

/// Checkpoint entries or final pairs, packed: one byte buffer and a slot per entry.
#[derive(Debug, Default)]
pub(crate) struct Arena {
    bytes: Vec<u8>,
    slots: Vec<Slot>,
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    table: u32,
    at: usize,
    key_len: u32,
    value_len: u32,
}

impl Arena {
    pub fn push(&mut self, table: u32, key: &[u8], value: &[u8]) {
        self.slots.push(Slot {
            table,
            at: self.bytes.len(),
            key_len: key.len() as u32,
            value_len: value.len() as u32,
        });
        self.bytes.extend_from_slice(key);
        self.bytes.extend_from_slice(value);
    }

    fn key(&self, slot: &Slot) -> &[u8] {
        &self.bytes[slot.at..slot.at + slot.key_len as usize]
    }

    fn value(&self, slot: &Slot) -> &[u8] {
        let start = slot.at + slot.key_len as usize;
        &self.bytes[start..start + slot.value_len as usize]
    }

    fn cmp(&self, a: &Slot, b: &Slot) -> Ordering {
        a.table
            .cmp(&b.table)
            .then_with(|| self.key(a).cmp(self.key(b)))
    }

    /// Sorts by (table, key), keeping the last of equal keys.
    fn sort_dedup(&mut self) {
        let mut slots = std::mem::take(&mut self.slots);
        if !slots.is_sorted_by(|a, b| self.cmp(a, b) == Ordering::Less) {
            slots.sort_by(|a, b| self.cmp(a, b));
            let mut kept: Vec<Slot> = Vec::with_capacity(slots.len());
            for slot in slots {
                match kept.last_mut() {
                    Some(last) if self.cmp(last, &slot) == Ordering::Equal => *last = slot,
                    _ => kept.push(slot),
                }
            }
            slots = kept;
        }
        self.slots = slots;
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }
}

/// What recovery did and found.
#[derive(Debug, Clone, Default)]
pub struct RecoveryStats {
    /// The safe timestamp: every record stamped at or below it was recovered; `None` when the
    /// directory held no log.
    pub t_safe: Option<u64>,
    /// The checkpoint loaded, if any.
    pub checkpoint: Option<PathBuf>,
    /// Entries in that checkpoint.
    pub checkpoint_entries: u64,
    /// Log segments read.
    pub segments: usize,
    /// Put, remove and batch records replayed over the checkpoint.
    pub records_replayed: u64,
    /// Individual puts and removes replayed (batch ops counted one by one).
    pub ops_replayed: u64,
    /// Bytes cut from log tails (torn frames, records above `t_safe`, tolerated corruption,
    /// and the zeros a segment was extended by when the process stopped without closing it).
    pub truncated_bytes: u64,
    /// Checkpoints passed over, and why (corrupt, not safe, no longer covered by the log).
    pub skipped_checkpoints: Vec<String>,
    /// Corruption tolerated in tolerant mode (each ended a lane early).
    pub tolerated: Vec<String>,
    /// Wall-clock time of the whole recovery.
    pub elapsed: Duration,
}

/// The state recovered by [`crate::Wal::open`]: every (table, key, value) live at `t_safe`,
/// in (table, key) order, plus what recovery did.
#[derive(Debug, Default)]
pub struct Recovery {
    /// What recovery did and found.
    pub stats: RecoveryStats,
    base: Arena,
    /// Replayed changes, sorted by (table, key), one per key (the last).
    overrides: Vec<Change>,
}

impl Recovery {
    /// The recovered pairs `(table, key, value)` in (table, key) order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &[u8], &[u8])> + '_ {
        Merge {
            recovery: self,
            base: 0,
            over: 0,
        }
    }

    /// The recovered pairs as a map (convenient for tests and small states).
    pub fn to_map(&self) -> BTreeMap<(u32, Vec<u8>), Vec<u8>> {
        self.iter()
            .map(|(table, key, value)| ((table, key.to_vec()), value.to_vec()))
            .collect()
    }
}

struct Merge<'a> {
    recovery: &'a Recovery,
    base: usize,
    over: usize,
}

impl<'a> Iterator for Merge<'a> {
    type Item = (u32, &'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        let arena = &self.recovery.base;
        loop {
            let base = arena.slots.get(self.base);
            let over = self.recovery.overrides.get(self.over);
            let order = match (base, over) {
                (None, None) => return None,
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (Some(b), Some(o)) => b.table.cmp(&o.table).then_with(|| arena.key(b).cmp(&o.key)),
            };
            match (order, base, over) {
                (Ordering::Less, Some(b), _) => {
                    self.base += 1;
                    return Some((b.table, arena.key(b), arena.value(b)));
                }
                (_, _, Some(o)) => {
                    if order == Ordering::Equal {
                        self.base += 1;
                    }
                    self.over += 1;
                    if let Some(value) = &o.value {
                        return Some((o.table, &o.key, value));
                    }
                }
                _ => return None,
            }
        }
    }
}

/// A segment found on disk.
#[derive(Debug)]
struct Segment {
    path: PathBuf,
    seq: u64,
    header: SegmentHeader,
    /// Where the valid frames end.
    valid_end: u64,
    /// The timestamp of the last valid record (the header's `prev_last_ts` if none).
    last_ts: u64,
}

/// A lane's chain as recovered.
#[derive(Debug)]
pub(crate) struct LaneState {
    pub lane: u32,
    /// The segments kept, oldest first, with their last timestamps.
    pub segments: Vec<Closed>,
    /// The sequence number of the lane's next segment.
    pub next_seq: u64,
    /// The timestamp of the lane's last kept record.
    pub last_ts: u64,
}

/// What [`recover`] hands to [`crate::Wal::open`].
#[derive(Debug)]
pub(crate) struct Recovered {
    pub recovery: Recovery,
    pub lanes: Vec<LaneState>,
    /// Larger than every timestamp seen on disk.
    pub clock: u64,
}

/// A segment cut back to its first `at` bytes by a repair.
#[derive(Debug)]
struct Cut {
    path: PathBuf,
    at: u64,
    /// The stamp of a heartbeat to append after the cut, and the seed of the file's frames.
    heartbeat: Option<(u64, Seed)>,
}

/// File changes recovery makes once it knows it succeeds.
#[derive(Debug, Default)]
struct Repairs {
    cuts: Vec<Cut>,
    deletes: Vec<PathBuf>,
}

/// The unit a disk writes whole, as far as recovery assumes: a 512-byte sector (a 4 KiB page
/// of the page cache can reach the disk in part when power fails mid-write).
const BLOCK: usize = 512;

/// Whether the bad frame at `at` runs into what a write that never reached the disk leaves
/// (step 1 of the module docs): zeros from `at` to the end of its block (the block reached the
/// disk before the frame was written into it), or zeros filling a block that starts within
/// the frame's extent, as its header gives it (the block never reached the disk), with no
/// valid frame starting before that block. The first such block decides, so a length word
/// damaged upward that reaches the zeros of the segment's extension past later frames is
/// corruption.
fn runs_into_unwritten_block(bytes: &[u8], at: usize, header: &SegmentHeader) -> bool {
    let zeros_to_block_end = |from: usize| {
        let end = ((from / BLOCK + 1) * BLOCK).min(bytes.len());
        from < end && bytes[from..end].iter().all(|&b| b == 0)
    };
    if zeros_to_block_end(at) {
        return true;
    }
    let len = if at + FRAME_HEADER <= bytes.len() {
        format::u32_at(bytes, at + 4) as usize
    } else {
        0
    };
    let end = (at + FRAME_HEADER + len).min(bytes.len());
    (at / BLOCK + 1..)
        .map(|block| block * BLOCK)
        .take_while(|&boundary| boundary < end)
        .find(|&boundary| zeros_to_block_end(boundary))
        .is_some_and(|boundary| !valid_frame_starts(bytes, at + 1..boundary, header))
}

/// Whether some valid frame starts at a position of `starts` in `bytes`, a segment with
/// `header` (after a bad frame: then that frame is corruption, not a torn tail). Each position
/// costs the same whatever length its frame claims ([`RangeCrc`], sampled on the first
/// position whose length and kind could be a frame's).
fn valid_frame_starts(bytes: &[u8], starts: Range<usize>, header: &SegmentHeader) -> bool {
    let seed = header.seed();
    let end = starts.end.min(bytes.len().saturating_sub(FRAME_HEADER));
    let mut crc = None;
    (starts.start..end).any(|at| {
        let rest = &bytes[at..];
        let len = format::u32_at(rest, 4) as usize;
        len >= 9
            && len <= rest.len() - FRAME_HEADER
            && format::is_record_kind(rest[FRAME_HEADER], header)
            && format::is_valid_frame_at(crc.get_or_insert_with(|| RangeCrc::new(bytes)), at, seed)
    })
}

/// How far the segment in `bytes`, with `header`, was fsynced, as the valid synced records
/// after offset `from` state (0 if none does, as in a version 1 segment). A record stating
/// more than its own offset cannot be one the log wrote (it writes them after the bytes they
/// cover) and is ignored.
fn synced_after(bytes: &[u8], from: usize, header: &SegmentHeader) -> u64 {
    if header.salt.is_none() {
        return 0;
    }
    let seed = header.seed();
    (from + 1..bytes.len())
        .filter_map(|at| {
            format::synced_at(&bytes[at..], seed).filter(|&through| through <= at as u64)
        })
        .max()
        .unwrap_or(0)
}

/// The stamp of the record whose payload is `payload`, or why it is no record: read from its
/// header, or, when `whole`, from the record decoded whole.
fn stamp_of(payload: &[u8], whole: bool) -> std::result::Result<u64, &'static str> {
    if whole {
        format::decode_record(payload).map(|record| record.ts())
    } else {
        format::record_stamp(payload)
    }
}

/// Scans one lane's segments (pass 1): validates headers and frames, finds torn tails. In
/// tolerant mode a problem ends the lane: at the bad frame, or before the segment whose header
/// or place in the chain is wrong; the caller deletes the segments left out.
///
/// A segment that ends below the stamp the next one's header names ends the lane too, in
/// either mode: the error comes back beside the segments kept, for the caller to weigh against
/// the other lanes (module docs, step 1).
fn scan_lane(
    lane: u32,
    mut files: Vec<(u64, PathBuf)>,
    tolerant: bool,
    stats: &mut RecoveryStats,
    repairs: &mut Repairs,
    max_ts: &mut u64,
) -> Result<(Vec<Segment>, Option<Error>)> {
    files.sort();
    let mut segments: Vec<Segment> = Vec::new();
    let mut ended_short = None;
    let count = files.len();
    for (i, (seq, path)) in files.into_iter().enumerate() {
        let is_last = i + 1 == count;
        if let Some(prev) = segments.last()
            && prev.seq + 1 != seq
        {
            let error = Error::corrupt(
                &path,
                0,
                format!("segment {} of lane {lane} is missing", prev.seq + 1),
            );
            refuse_unless_tolerant(error, tolerant, stats)?;
            break;
        }
        let bytes = fs::read(&path).map_err(|e| Error::io(&path, e))?;
        stats.segments += 1;
        let header = match SegmentHeader::decode(&bytes) {
            Ok(header) if header.lane == lane && header.seq == seq => header,
            Ok(_) => {
                let error = Error::corrupt(&path, 0, "segment header names another lane or seq");
                refuse_unless_tolerant(error, tolerant, stats)?;
                break;
            }
            Err(reason) => {
                if is_last && bytes.len() < SEGMENT_HEADER {
                    // Torn while being created: it never held a record.
                    stats.truncated_bytes += bytes.len() as u64;
                    repairs.deletes.push(path);
                    continue;
                }
                let error = Error::corrupt(&path, 0, reason);
                refuse_unless_tolerant(error, tolerant, stats)?;
                break;
            }
        };
        // A segment's header names the stamp of the lane's last record before it. A previous
        // segment ending elsewhere lost records that no frame check sees: it was cut at a
        // frame boundary (down to its header, even). The log's writes never do that (a segment
        // is trimmed and fsynced before the next one is created), but an older build's
        // interrupted step 5 did (see `recover`).
        if let Some(prev) = segments.last()
            && prev.last_ts != header.prev_last_ts
        {
            let error = Error::corrupt(
                &prev.path,
                prev.valid_end,
                format!(
                    "the segment ends at a record stamped {}, but segment {seq} of lane {lane} \
                     says the lane's last record before it was stamped {}: records are missing",
                    prev.last_ts, header.prev_last_ts
                ),
            );
            if prev.last_ts > header.prev_last_ts {
                refuse_unless_tolerant(error, tolerant, stats)?;
            } else {
                ended_short = Some(error);
            }
            break;
        }
        *max_ts = (*max_ts).max(header.prev_last_ts);
        let mut at = header.len();
        let seed = header.seed();
        let mut last_ts = segments.last().map_or(header.prev_last_ts, |s| s.last_ts);
        let mut stop = false;
        while at < bytes.len() {
            let problem = match format::read_frame(&bytes[at..], seed) {
                // In tolerant mode a record must also decode, or the lane ends before it here,
                // where t_safe is still to be computed: ended in pass 2 instead, it would lose
                // records at or below t_safe that other lanes' later ones are replayed beside.
                Frame::Valid(payload, len) => match stamp_of(payload, tolerant) {
                    Err(reason) => Some(reason),
                    Ok(ts) if ts < last_ts => {
                        Some("record timestamp goes backwards within its lane")
                    }
                    Ok(ts) => {
                        last_ts = ts;
                        *max_ts = (*max_ts).max(ts);
                        at += len;
                        None
                    }
                },
                Frame::Short => Some("frame truncated"),
                Frame::Bad(reason) => Some(reason),
            };
            if let Some(reason) = problem {
                let synced = if is_last {
                    synced_after(&bytes, at, &header)
                } else {
                    0
                };
                let torn = is_last
                    && synced <= at as u64
                    && (runs_into_unwritten_block(&bytes, at, &header)
                        || !valid_frame_starts(&bytes, at + 1..bytes.len(), &header));
                if !torn {
                    let reason = if synced > at as u64 {
                        format!(
                            "{reason}, in the first {synced} bytes, which a later record says \
                             were fsynced"
                        )
                    } else {
                        reason.to_owned()
                    };
                    let error = Error::corrupt(&path, at as u64, reason);
                    if !tolerant {
                        return Err(error);
                    }
                    stats.tolerated.push(error.to_string());
                    stop = true;
                }
                stats.truncated_bytes += (bytes.len() - at) as u64;
                repairs.cuts.push(Cut {
                    path: path.clone(),
                    at: at as u64,
                    heartbeat: None,
                });
                break;
            }
        }
        segments.push(Segment {
            path,
            seq,
            header,
            valid_end: at as u64,
            last_ts,
        });
        if stop {
            // Tolerant mode: the lane ends at the corruption; the caller deletes later files.
            break;
        }
    }
    Ok((segments, ended_short))
}

/// Ends the lane at the `t_safe` of a noted cut when its last segment ends exactly where the
/// cut left it, and queues the cut's heartbeat again (see `cut_note`): an earlier recovery cut
/// the lane there and stopped before the heartbeat reached the disk. The heartbeat's stamp
/// counts as seen, so the clock restarts above it even when no record on disk reaches it.
fn finish_noted_cut(
    lane: u32,
    segments: &mut [Segment],
    noted: &[NotedCut],
    repairs: &mut Repairs,
    max_ts: &mut u64,
) {
    let Some(last) = segments.last_mut() else {
        return;
    };
    let matches = |cut: &&NotedCut| cut.lane == lane && cut.seq == last.seq;
    let Some(cut) = noted.iter().find(matches) else {
        return;
    };
    if cut.at != last.valid_end || last.last_ts >= cut.t_safe {
        return;
    }
    last.last_ts = cut.t_safe;
    *max_ts = (*max_ts).max(cut.t_safe);
    repairs.cuts.retain(|queued| queued.path != last.path);
    repairs.cuts.push(Cut {
        path: last.path.clone(),
        at: cut.at,
        heartbeat: Some((cut.t_safe, last.header.seed())),
    });
}

/// Makes recovery's file changes (steps 5 and 6 of the module docs), each change and fsync
/// through `faults`. A crash may stop them anywhere, and a power loss may keep any part of what
/// was not fsynced: every state either leaves recovers the same (the `power_loss` tests).
fn apply(mut repairs: Repairs, dir: &Path, wal_dir: &Path, states: &[LaneState]) -> Result<()> {
    // The deletions go first, each synced, and each lane's newest segment first: a crash
    // between two leaves every lane's segments without a gap, and one before a cut leaves no
    // cut segment followed by one whose header names the stamps cut (which pass 1 would
    // weigh as records lost).
    sort_for_deletion(&mut repairs.deletes);
    // An earlier recovery killed between a deletion and its directory fsync left that deletion
    // pending: made durable first, it cannot be lost while a later one here is kept.
    faults::sync_dir(wal_dir).map_err(|e| Error::io(wal_dir, e))?;
    for path in &repairs.deletes {
        match faults::remove_file(path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::io(path, e)),
        }
        if segment_id(path).is_some() {
            faults::sync_dir(wal_dir).map_err(|e| Error::io(wal_dir, e))?;
        }
    }
    repairs
        .cuts
        .retain(|cut| !repairs.deletes.contains(&cut.path));
    // Step 6 comes before the note: every record at or below t_safe is durable before a cut
    // changes what t_safe a later recovery computes, and so is every cut and heartbeat an
    // interrupted recovery made (a lane ending with its heartbeat is left out of the new note,
    // which replaces the old one).
    for last in states.iter().filter_map(|state| state.segments.last()) {
        faults::sync_file(&last.path).map_err(|e| Error::io(&last.path, e))?;
    }
    let noted: Vec<NotedCut> = repairs
        .cuts
        .iter()
        .filter_map(|cut| {
            let (lane, seq) = segment_id(&cut.path)?;
            let (t_safe, _) = cut.heartbeat?;
            Some(NotedCut {
                lane,
                seq,
                at: cut.at,
                t_safe,
            })
        })
        .collect();
    if !noted.is_empty() {
        cut_note::write(wal_dir, &noted)?;
    }
    for Cut {
        path,
        at,
        heartbeat,
    } in &repairs.cuts
    {
        // The cut is durable before the heartbeat is written in the bytes it freed: a power
        // loss that kept the heartbeat but not the cut would leave it over the first cut
        // record, before the cut records' valid frames (corruption, to pass 1).
        faults::set_len(path, *at).map_err(|e| Error::io(path, e))?;
        faults::sync_file(path).map_err(|e| Error::io(path, e))?;
        if let Some((ts, seed)) = heartbeat {
            let mut tail = Vec::new();
            format::encode_heartbeat(&mut tail, *seed, *ts);
            faults::write_at(path, *at, &tail).map_err(|e| Error::io(path, e))?;
            faults::sync_file(path).map_err(|e| Error::io(path, e))?;
        }
    }
    faults::sync_dir(wal_dir).map_err(|e| Error::io(wal_dir, e))?;
    faults::sync_dir(dir).map_err(|e| Error::io(dir, e))?;
    // Every cut and heartbeat is on disk: the note has done its work.
    cut_note::remove(wal_dir)
}

/// The lane and sequence number of the log segment at `path`; `None` for other files.
fn segment_id(path: &Path) -> Option<(u32, u64)> {
    path.file_name()?
        .to_str()
        .and_then(lane::parse_segment_name)
}

/// Orders files to delete: log segments first, the newest of each lane first, then the rest.
fn sort_for_deletion(paths: &mut [PathBuf]) {
    paths.sort_by_cached_key(|path| std::cmp::Reverse(segment_id(path)));
}

/// `error`, unless `tolerant`: then it is noted in `stats` and recovery goes on.
fn refuse_unless_tolerant(error: Error, tolerant: bool, stats: &mut RecoveryStats) -> Result<()> {
    if !tolerant {
        return Err(error);
    }
    stats.tolerated.push(error.to_string());
    Ok(())
}

/// Lists `dir/wal` and `dir`, then recovers (see the module docs).
/// With `repair` false, no file is changed (the cuts and deletions are only computed).
pub(crate) fn recover(
    dir: &Path,
    wal_dir: &Path,
    tolerant: bool,
    repair: bool,
) -> Result<Recovered> {
    let started = Instant::now();
    let mut stats = RecoveryStats::default();
    let mut repairs = Repairs::default();
    let mut by_lane: BTreeMap<u32, Vec<(u64, PathBuf)>> = BTreeMap::new();
    for entry in fs::read_dir(wal_dir).map_err(|e| Error::io(wal_dir, e))? {
        let path = entry.map_err(|e| Error::io(wal_dir, e))?.path();
        if let Some((lane, seq)) = segment_id(&path) {
            by_lane.entry(lane).or_default().push((seq, path));
        }
    }
    // The log opens its lanes from 0 up and never deletes a lane's last segment, so the lanes
    // on disk are numbered from 0 without a gap: one missing lost every record it held. (One
    // missing above the others leaves no such trace.)
    let gap = (0..)
        .zip(by_lane.keys())
        .find(|&(expected, &lane)| lane != expected);
    if let Some((missing, _)) = gap {
        let error = Error::corrupt(wal_dir, 0, format!("lane {missing} of the log is missing"));
        refuse_unless_tolerant(error, tolerant, &mut stats)?;
    }
    let noted = match cut_note::read(wal_dir) {
        Ok(noted) => noted,
        Err(error @ Error::Corrupt { .. }) => {
            refuse_unless_tolerant(error, tolerant, &mut stats)?;
            Vec::new()
        }
        Err(error) => return Err(error),
    };
    let any_segment = !by_lane.is_empty();
    let mut max_ts = 0;
    let mut lanes: Vec<(u32, Vec<Segment>)> = Vec::new();
    // The lanes that ended short of a segment's header: the stamp each reached, and the error.
    let mut short: Vec<(u64, Error)> = Vec::new();
    let mut intact_end: Option<u64> = None;
    for (lane, files) in by_lane {
        let all: Vec<PathBuf> = files.iter().map(|(_, p)| p.clone()).collect();
        let (mut segments, ended_short) =
            scan_lane(lane, files, tolerant, &mut stats, &mut repairs, &mut max_ts)?;
        if ended_short.is_none() {
            finish_noted_cut(lane, &mut segments, &noted, &mut repairs, &mut max_ts);
        }
        // A lane may end early: files after its last kept segment go.
        for path in all {
            if !segments.iter().any(|s| s.path == path) && !repairs.deletes.contains(&path) {
                repairs.deletes.push(path);
            }
        }
        let end = segments.last().map(|s| s.last_ts);
        match (ended_short, end) {
            (Some(error), Some(end)) => short.push((end, error)),
            (None, Some(end)) => intact_end = Some(intact_end.map_or(end, |e| e.min(end))),
            _ => {}
        }
        if !segments.is_empty() {
            lanes.push((lane, segments));
        }
    }
    // A lane that ended short lost records above the stamp it reached. When an intact lane ends
    // at or below that stamp, so does t_safe, and step 5 cuts every record the lane lost (and
    // those of the segments after it) anyway: the state is one a cut of step 5 leaves when a
    // crash interrupts it (a build before session 22 cut before it deleted the segments after
    // the cut). Otherwise records at or below t_safe are gone: corruption.
    for (end, error) in short {
        if intact_end.is_none_or(|intact| intact > end) {
            refuse_unless_tolerant(error, tolerant, &mut stats)?;
        }
    }
    let t_safe = lanes
        .iter()
        .filter_map(|(_, segments)| segments.last().map(|s| s.last_ts))
        .min();
    stats.t_safe = t_safe;
    let safe = t_safe.unwrap_or(u64::MAX);

    // Checkpoints, newest first.
    let mut checkpoints: Vec<(u64, PathBuf)> = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(t_end) = checkpoint::parse_checkpoint_name(name) {
            checkpoints.push((t_end, entry.path()));
        } else if name == checkpoint::TEMP_NAME {
            repairs.deletes.push(entry.path());
        }
    }
    checkpoints.sort_by(|a, b| b.cmp(a));
    // A checkpoint is written by an open log, whose lanes always keep a segment each.
    if !any_segment && !checkpoints.is_empty() {
        let error = Error::corrupt(
            wal_dir,
            0,
            "the log is missing: checkpoints exist, but no log segment does",
        );
        refuse_unless_tolerant(error, tolerant, &mut stats)?;
    }
    let covered = |t_begin: u64| {
        lanes
            .iter()
            .all(|(_, segments)| segments[0].seq == 0 || segments[0].header.prev_last_ts < t_begin)
    };
    let mut chosen = None;
    let mut first_problem: Option<Error> = None;
    for (_, path) in &checkpoints {
        let header = match checkpoint::read_header(path) {
            Ok(header) => header,
            Err(error) => {
                stats.skipped_checkpoints.push(error.to_string());
                first_problem.get_or_insert(error);
                continue;
            }
        };
        max_ts = max_ts.max(header.t_end);
        if header.t_end > safe {
            stats.skipped_checkpoints.push(format!(
                "{}: ends at {} after t_safe {safe}; deleted",
                path.display(),
                header.t_end
            ));
            repairs.deletes.push(path.clone());
            continue;
        }
        if chosen.is_some() {
            continue;
        }
        if !covered(header.t_begin) {
            let error = Error::corrupt(
                path,
                0,
                "the log segments this checkpoint needs were deleted",
            );
            stats.skipped_checkpoints.push(error.to_string());
            first_problem.get_or_insert(error);
            continue;
        }
        match checkpoint::read(path) {
            Ok((header, arena)) => chosen = Some((path.clone(), header, arena)),
            Err(error) => {
                stats.skipped_checkpoints.push(error.to_string());
                first_problem.get_or_insert(error);
            }
        }
    }
    let (t_begin, mut base) = match chosen {
        Some((path, header, arena)) => {
            stats.checkpoint = Some(path);
            stats.checkpoint_entries = arena.len() as u64;
            (header.t_begin, arena)
        }
        None => {
            if !lanes.iter().all(|(_, segments)| segments[0].seq == 0) {
                return Err(first_problem.unwrap_or_else(|| {
                    Error::corrupt(
                        wal_dir,
                        0,
                        "log segments were deleted, but no checkpoint covers them",
                    )
                }));
            }
            (0, Arena::default())
        }
    };
    base.sort_dedup();

    // Pass 2: collect the ops to replay and cut records above t_safe.
    let mut changes: Vec<Change> = Vec::new();
    let mut states = Vec::new();
    for (lane, segments) in lanes {
        let mut kept: Vec<Closed> = Vec::new();
        let mut lane_last = 0;
        let mut cut = false;
        let mut next_seq = 0;
        for segment in segments {
            // Bytes past a segment's valid frames (a torn tail) were counted by pass 1.
            if cut {
                stats.truncated_bytes += segment.valid_end;
                repairs.deletes.push(segment.path);
                continue;
            }
            let mut seg_last = segment.last_ts;
            if segment.last_ts >= t_begin {
                let bytes = fs::read(&segment.path).map_err(|e| Error::io(&segment.path, e))?;
                let end = (segment.valid_end as usize).min(bytes.len());
                let mut at = segment.header.len();
                let seed = segment.header.seed();
                seg_last = segment.header.prev_last_ts.max(lane_last);
                while at < end {
                    let Frame::Valid(payload, len) = format::read_frame(&bytes[at..end], seed)
                    else {
                        return Err(Error::corrupt(
                            &segment.path,
                            at as u64,
                            "frame changed while recovering",
                        ));
                    };
                    let record = format::decode_record(payload)
                        .map_err(|reason| Error::corrupt(&segment.path, at as u64, reason))?;
                    let holds_writes = matches!(record, Record::Single(_) | Record::Batch { .. });
                    if holds_writes && record.ts() > safe {
                        cut = true;
                        stats.truncated_bytes += (end - at) as u64;
                        // The lane must still end at or above t_safe after the cut, or a later
                        // recovery could compute a smaller t_safe and drop writes this one
                        // recovered: a heartbeat stamped t_safe replaces the cut records.
                        let heartbeat = (seg_last < safe).then_some((safe, seed));
                        repairs.cuts.retain(|cut| cut.path != segment.path);
                        repairs.cuts.push(Cut {
                            path: segment.path.clone(),
                            at: at as u64,
                            heartbeat,
                        });
                        seg_last = seg_last.max(safe);
                        break;
                    }
                    seg_last = record.ts();
                    match record {
                        Record::Single(change) => {
                            if change.ts >= t_begin {
                                stats.records_replayed += 1;
                                changes.push(change);
                            }
                        }
                        Record::Batch { ops, .. } => {
                            stats.records_replayed += 1;
                            changes.extend(ops.into_iter().filter(|op| op.ts >= t_begin));
                        }
                        Record::Heartbeat { .. }
                        | Record::Checkpoint { .. }
                        | Record::Synced { .. } => {}
                    }
                    at += len;
                }
                if !cut {
                    // A noted cut's lane ends at its heartbeat's stamp, which pass 1 set.
                    seg_last = seg_last.max(segment.last_ts);
                }
            }
            lane_last = seg_last;
            next_seq = segment.seq + 1;
            kept.push(Closed {
                path: segment.path,
                last_ts: seg_last,
            });
        }
        states.push(LaneState {
            lane,
            segments: kept,
            next_seq,
            last_ts: lane_last,
        });
    }
    stats.ops_replayed = changes.len() as u64;
    // Timestamps are unique, so one unstable sort by (table, key, ts) puts each key's changes
    // in replay order.
    changes.sort_unstable_by(|a, b| (a.table, &a.key, a.ts).cmp(&(b.table, &b.key, b.ts)));
    let mut overrides: Vec<Change> = Vec::with_capacity(changes.len());
    for change in changes {
        match overrides.last_mut() {
            Some(last) if last.table == change.table && last.key == change.key => *last = change,
            _ => overrides.push(change),
        }
    }

    // Repairs: only now that recovery is known to succeed.
    if repair {
        apply(repairs, dir, wal_dir, &states)?;
    }
    stats.elapsed = started.elapsed();
    Ok(Recovered {
        recovery: Recovery {
            stats,
            base,
            overrides,
        },
        lanes: states,
        clock: max_ts + 1,
    })
}

#[cfg(all(test, not(loom)))]
mod power_loss;

#[cfg(all(test, not(loom)))]
mod tests {
    use std::fs::OpenOptions;
    use std::io::Write;

    use super::*;
    use crate::faults::Machine;

    const SALT: u64 = 0x5a17;
    /// The header of the segments the tests lay out.
    const HEADER: SegmentHeader = SegmentHeader {
        lane: 0,
        seq: 0,
        prev_last_ts: 0,
        salt: Some(SALT),
    };

    /// `size` bytes of 0x5a (no valid frame starts anywhere in them) with a bad frame header
    /// (checksum 0, length `len`) at `at`.
    fn bytes_with_bad_frame(size: usize, at: usize, len: u32) -> Vec<u8> {
        let mut bytes = vec![0x5a; size];
        bytes[at..at + 4].fill(0);
        bytes[at + 4..at + 8].copy_from_slice(&len.to_le_bytes());
        bytes
    }

    #[test]
    fn a_frame_running_into_a_zero_block_is_torn() {
        // A frame starting on a page boundary, whose second page never reached the disk.
        let mut aligned = bytes_with_bad_frame(20_000, 8192, 5000);
        aligned[12_288..16_384].fill(0);
        assert!(runs_into_unwritten_block(&aligned, 8192, &HEADER));
        // A frame over three pages, the hole two pages into it.
        let mut long = bytes_with_bad_frame(20_000, 4000, 10_000);
        long[8192..12_288].fill(0);
        assert!(runs_into_unwritten_block(&long, 4000, &HEADER));
        // A page torn between its sectors.
        let mut torn_page = bytes_with_bad_frame(4096, 1000, 600);
        torn_page[1024..1536].fill(0);
        assert!(runs_into_unwritten_block(&torn_page, 1000, &HEADER));
        // A block that reached the disk before the frame was written into it.
        let mut stale = bytes_with_bad_frame(4096, 100, 30);
        stale[100..512].fill(0);
        assert!(runs_into_unwritten_block(&stale, 100, &HEADER));
    }

    #[test]
    fn other_damage_is_not_a_torn_write() {
        // Zeros that stop short of their block's end.
        let mut short = bytes_with_bad_frame(4096, 100, 0);
        short[108..200].fill(0);
        assert!(!runs_into_unwritten_block(&short, 100, &HEADER));
        // A length word damaged upward, reaching zeros past a valid frame that follows.
        let mut damaged = bytes_with_bad_frame(8192, 100, 0xff00);
        let mut heartbeat = Vec::new();
        format::encode_heartbeat(&mut heartbeat, HEADER.seed(), 7);
        damaged[200..200 + heartbeat.len()].copy_from_slice(&heartbeat);
        damaged[4096..].fill(0);
        assert!(!runs_into_unwritten_block(&damaged, 100, &HEADER));
        // A zero block beyond the frame's extent.
        let mut beyond = bytes_with_bad_frame(8192, 100, 50);
        beyond[4096..4608].fill(0);
        assert!(!runs_into_unwritten_block(&beyond, 100, &HEADER));
    }

    /// A record of a laid-out segment (here and in the `power_loss` tests).
    #[derive(Clone, Copy)]
    pub(super) enum Laid {
        /// A put of a key, at a stamp.
        Put(u64, &'static [u8]),
        /// A heartbeat.
        Heartbeat(u64),
        /// A synced record, naming the segment's bytes before it.
        Synced(u64),
        /// A checkpoint marker: stamp, `t_begin`, `t_end`.
        Marker(u64, u64, u64),
        /// A record that does not decode, in a frame whose checksum holds, at a stamp.
        Undecodable(u64),
    }

    /// Lays out segment `seq` of `lane` in `wal`, holding `records`.
    pub(super) fn segment(wal: &Path, lane: u32, seq: u64, prev_last_ts: u64, records: &[Laid]) {
        let header = SegmentHeader {
            lane,
            seq,
            prev_last_ts,
            ..HEADER
        };
        let seed = header.seed();
        let mut bytes = header.encode();
        for record in records {
            match *record {
                Laid::Put(ts, key) => {
                    format::encode_single(&mut bytes, seed, ts, 0, key, Some(b"v"))
                }
                Laid::Heartbeat(ts) => format::encode_heartbeat(&mut bytes, seed, ts),
                Laid::Synced(ts) => {
                    let through = bytes.len() as u64;
                    format::encode_synced(&mut bytes, seed, ts, through)
                }
                Laid::Marker(ts, t_begin, t_end) => {
                    format::encode_checkpoint_marker(&mut bytes, seed, ts, t_begin, t_end)
                }
                Laid::Undecodable(ts) => format::encode_undecodable(&mut bytes, seed, ts),
            };
        }
        fs::write(wal.join(lane::segment_name(lane, seq)), bytes).expect("a segment");
    }

    /// A log in a fresh directory whose lane 0 runs to stamp 7 over three segments, the last
    /// followed by a fourth torn while it was created (empty), and whose lane 1 ends at stamp
    /// 2: t_safe is 2, so recovery deletes lane 0's segments 3, 2 and 1 and cuts segment 0
    /// before stamp 3.
    fn laid_out(name: &str) -> test_support::TempDir {
        let dir = test_support::TempDir::new(name);
        let wal = dir.path().join("wal");
        fs::create_dir_all(&wal).expect("wal dir");
        segment(&wal, 0, 0, 0, &[Laid::Put(1, b"a"), Laid::Put(3, b"b")]);
        segment(&wal, 0, 1, 3, &[Laid::Put(5, b"c")]);
        segment(&wal, 0, 2, 5, &[Laid::Put(7, b"d")]);
        fs::write(wal.join(lane::segment_name(0, 3)), b"").expect("a torn segment");
        segment(&wal, 1, 0, 0, &[Laid::Put(2, b"x")]);
        dir
    }

    /// The keys recovering `dir` with repairs gives, twice in a row (the second finding
    /// nothing to change).
    fn recovered_twice(dir: &Path) -> Result<Vec<Vec<u8>>> {
        let keys = |recovered: Recovered| -> Vec<Vec<u8>> {
            let map = recovered.recovery.to_map();
            map.into_keys().map(|(_, key)| key).collect()
        };
        let first = keys(recover(dir, &dir.join("wal"), false, true)?);
        let second = keys(recover(dir, &dir.join("wal"), false, true)?);
        assert_eq!(first, second, "a second recovery changes nothing");
        Ok(first)
    }

    #[test]
    fn a_crash_within_recoverys_repairs_leaves_a_log_that_recovers() {
        let expected = vec![b"a".to_vec(), b"x".to_vec()];
        let whole = laid_out("repair-whole");
        assert_eq!(recovered_twice(whole.path()).expect("recovery"), expected);
        // A crash after each deletion, in the order recovery deletes (pass 1 queues the torn
        // segment, pass 2 the segments after the cut): each lane's remaining segments have no
        // gap, and the cut has not begun.
        let name = |seq| PathBuf::from(lane::segment_name(0, seq));
        let mut deletes = vec![name(3), name(1), name(2)];
        sort_for_deletion(&mut deletes);
        assert_eq!(deletes, [name(3), name(2), name(1)]);
        for done in 1..=deletes.len() {
            let dir = laid_out("repair-deleted");
            for file in &deletes[..done] {
                fs::remove_file(dir.path().join("wal").join(file)).expect("rm");
            }
            let recovered = recovered_twice(dir.path());
            assert_eq!(recovered.expect("recovery"), expected, "{done} deleted");
        }
        // In the order they were queued, a crash could leave segment 3 after segment 0 alone.
        let dir = laid_out("repair-queued");
        for seq in [2, 1] {
            fs::remove_file(dir.path().join("wal").join(name(seq))).expect("rm");
        }
        assert!(matches!(
            recovered_twice(dir.path()),
            Err(Error::Corrupt { .. })
        ));
        // A build before session 22 cut first: segment 0 ends at t_safe's heartbeat, and
        // segment 1 still names stamp 3. Every record lost lies above t_safe (lane 1, intact,
        // ends there), so the state is the one recovery makes anyway.
        let cut = laid_out("repair-cut-first");
        let wal = cut.path().join("wal");
        segment(&wal, 0, 0, 0, &[Laid::Put(1, b"a"), Laid::Heartbeat(2)]);
        assert_eq!(recovered_twice(cut.path()).expect("recovery"), expected);
    }

    #[test]
    fn a_crash_between_a_cut_and_its_heartbeat_loses_nothing() {
        // Lane 1 ends at 3, so t_safe is 3: recovery deletes lane 0's segment 1, then cuts
        // segment 0 before stamp 4, below t_safe, so the cut ends with a heartbeat.
        let laid_out = || {
            let dir = test_support::TempDir::new("cut-crash");
            let wal = dir.path().join("wal");
            fs::create_dir_all(&wal).expect("wal dir");
            segment(&wal, 0, 0, 0, &[Laid::Put(1, b"a"), Laid::Put(4, b"b")]);
            segment(&wal, 0, 1, 4, &[Laid::Put(5, b"c")]);
            segment(&wal, 1, 0, 0, &[Laid::Put(2, b"x"), Laid::Put(3, b"y")]);
            dir
        };
        let read_only = |dir: &Path| {
            let recovered = recover(dir, &dir.join("wal"), false, false).expect("recovery");
            let map = recovered.recovery.to_map();
            map.into_keys().map(|(_, key)| key).collect::<Vec<_>>()
        };
        let expected = vec![b"a".to_vec(), b"x".to_vec(), b"y".to_vec()];
        let crash_after = |ops: usize| {
            let dir = laid_out();
            let mut machine = Machine::crashing_after(ops);
            let outcome = machine.run(|| recover(dir.path(), &dir.path().join("wal"), false, true));
            (dir, outcome.map(|_| ()))
        };
        // The operations: the directory's fsync, the deletion and the directory's fsync, the
        // fsyncs of both lanes' last segments, the note (written, renamed, the directory
        // fsynced), the cut and its fsync, the heartbeat and its fsync, the fsyncs of both
        // directories, the note's removal (its temporary file, long gone, then the note) and
        // the directory's fsync.
        const OPS: usize = 17;
        // The cut and its fsync made, the heartbeat not written.
        const AFTER_THE_CUT: usize = 10;
        for ops in 0..OPS {
            let (dir, outcome) = crash_after(ops);
            assert!(
                outcome.is_err(),
                "a crash before operation {ops} stops recovery"
            );
            assert_eq!(
                read_only(dir.path()),
                expected,
                "{ops} operations, read only"
            );
            let recovered = recovered_twice(dir.path()).expect("recovery after the crash");
            assert_eq!(recovered, expected, "a crash after {ops} operations");
            let note = dir.path().join("wal").join("recovery-cuts");
            assert!(!note.exists(), "the note outlives a whole recovery");
        }
        let (dir, outcome) = crash_after(OPS);
        outcome.expect("17 operations are all the repairs");
        assert_eq!(recovered_twice(dir.path()).expect("recovery"), expected);
        // A power loss that keeps part of the heartbeat: a torn tail, cut where the note says.
        let (dir, _) = crash_after(AFTER_THE_CUT);
        let cut = dir.path().join("wal").join(lane::segment_name(0, 0));
        let mut heartbeat = Vec::new();
        format::encode_heartbeat(&mut heartbeat, HEADER.seed(), 3);
        let mut file = OpenOptions::new().append(true).open(&cut).expect("open");
        file.write_all(&heartbeat[..heartbeat.len() - 3])
            .expect("append");
        assert_eq!(recovered_twice(dir.path()).expect("recovery"), expected);
        // Without the note, the state a crash after the cut leaves ends lane 0 at stamp 1, and
        // t_safe with it: y and x, recovered before, would be lost.
        let (dir, _) = crash_after(AFTER_THE_CUT);
        fs::remove_file(dir.path().join("wal").join("recovery-cuts")).expect("rm note");
        assert_eq!(read_only(dir.path()), vec![b"a".to_vec()]);
    }

    #[test]
    fn records_without_writes_above_t_safe_stay_and_the_first_write_above_it_is_cut() {
        let dir = test_support::TempDir::new("keep-heartbeats");
        let wal = dir.path().join("wal");
        fs::create_dir_all(&wal).expect("wal dir");
        segment(&wal, 0, 0, 0, &[Laid::Put(1, b"a"), Laid::Put(3, b"b")]);
        segment(&wal, 1, 0, 0, &[Laid::Put(2, b"x"), Laid::Heartbeat(4)]);
        let kept = fs::metadata(wal.join(lane::segment_name(1, 0)))
            .expect("stat")
            .len();
        let records = [Laid::Put(2, b"x"), Laid::Heartbeat(4), Laid::Put(5, b"y")];
        segment(&wal, 1, 0, 0, &records);
        let recovered = recover(dir.path(), &wal, false, true).expect("recovery");
        assert_eq!(recovered.recovery.stats.t_safe, Some(3));
        let lane_1 = recovered.lanes.iter().find(|lane| lane.lane == 1);
        assert_eq!(
            lane_1.map(|lane| lane.last_ts),
            Some(4),
            "ends at its heartbeat"
        );
        let cut = fs::metadata(wal.join(lane::segment_name(1, 0)))
            .expect("stat")
            .len();
        assert_eq!(cut, kept, "the put at 5 is cut, the heartbeat at 4 kept");
        assert_eq!(
            recovered_twice(dir.path()).expect("recovery"),
            [b"a", b"b", b"x"]
        );
    }

    #[test]
    fn the_clock_restarts_above_a_noted_heartbeat() {
        // t_safe is 100: recovery notes lane 0's cut before 101 with a heartbeat stamped 100,
        // cuts, and stops. Then lane 1's record at 100 is gone (as if never synced): no record
        // on disk reaches 100, but the heartbeat the next recovery writes does.
        let dir = test_support::TempDir::new("noted-clock");
        let wal = dir.path().join("wal");
        fs::create_dir_all(&wal).expect("wal dir");
        segment(&wal, 0, 0, 0, &[Laid::Put(1, b"a"), Laid::Put(101, b"b")]);
        segment(&wal, 1, 0, 0, &[Laid::Put(2, b"x")]);
        let x_end = fs::metadata(wal.join(lane::segment_name(1, 0)))
            .expect("stat")
            .len();
        segment(&wal, 1, 0, 0, &[Laid::Put(2, b"x"), Laid::Put(100, b"y")]);
        // The directory's fsync, both lanes' last segments', the note (written, renamed, the
        // directory fsynced), the cut and its fsync: then the crash.
        let mut machine = Machine::crashing_after(8);
        let outcome = machine.run(|| recover(dir.path(), &wal, false, true));
        assert!(machine.crashed && outcome.is_err());
        OpenOptions::new()
            .write(true)
            .open(wal.join(lane::segment_name(1, 0)))
            .and_then(|file| file.set_len(x_end))
            .expect("lose the record at 100");
        let recovered = recover(dir.path(), &wal, false, true).expect("recovery");
        assert_eq!(recovered.recovery.stats.t_safe, Some(2));
        assert!(recovered.clock > 100, "clock {}", recovered.clock);
        assert_eq!(recovered_twice(dir.path()).expect("recovery"), [b"a", b"x"]);
    }

    /// Asserts that strict recovery of `dir` refuses lane 0's first segment, for `reason`.
    fn assert_lane_0_corrupt(dir: &Path, reason: &str) {
        match recover(dir, &dir.join("wal"), false, false) {
            Err(Error::Corrupt {
                file, reason: why, ..
            }) => {
                assert_eq!(file, dir.join("wal").join(lane::segment_name(0, 0)));
                assert!(why.contains(reason), "{why}");
            }
            other => panic!("expected corruption, got {other:?}"),
        }
    }

    #[test]
    fn a_record_that_does_not_decode_ends_its_lane_before_t_safe_is_taken() {
        // Lane 0's record at 2 checks out but does not decode; lane 1 runs to 7. Tolerant
        // recovery ends lane 0 at 1, so t_safe is 1 and lane 1's put at 4 goes too: keeping
        // it while lane 0's put at 3 is lost would be no prefix of the writes.
        let dir = test_support::TempDir::new("undecodable");
        let wal = dir.path().join("wal");
        fs::create_dir_all(&wal).expect("wal dir");
        let lane_0 = [
            Laid::Put(1, b"a"),
            Laid::Undecodable(2),
            Laid::Put(3, b"b"),
            Laid::Heartbeat(6),
        ];
        segment(&wal, 0, 0, 0, &lane_0);
        segment(&wal, 1, 0, 0, &[Laid::Put(4, b"c"), Laid::Heartbeat(7)]);
        assert_lane_0_corrupt(dir.path(), "too short for its key");
        let tolerated = recover(dir.path(), &wal, true, true).expect("tolerant recovery");
        assert_eq!(tolerated.recovery.stats.t_safe, Some(1));
        assert_eq!(tolerated.recovery.stats.tolerated.len(), 1);
        assert_eq!(recovered_twice(dir.path()).expect("recovery"), [b"a"]);
    }

    #[test]
    fn a_lane_that_ends_short_of_the_next_header_below_t_safe_is_corruption() {
        // Lane 0 ends at stamp 1 though its next segment names 3: the record at 3 is lost.
        // Lane 1 ends at 4, so t_safe would be 3 without the loss, and that record kept.
        let dir = test_support::TempDir::new("short-below-safe");
        let wal = dir.path().join("wal");
        fs::create_dir_all(&wal).expect("wal dir");
        segment(&wal, 0, 0, 0, &[Laid::Put(1, b"a")]);
        segment(&wal, 0, 1, 3, &[Laid::Put(5, b"c")]);
        segment(&wal, 1, 0, 0, &[Laid::Put(4, b"x")]);
        assert_lane_0_corrupt(dir.path(), "records are missing");
        let tolerated = recover(dir.path(), &wal, true, false).expect("tolerant recovery");
        assert_eq!(tolerated.recovery.stats.tolerated.len(), 1);
    }

    #[test]
    fn synced_records_after_a_frame_say_how_far_the_segment_was_synced() {
        let mut bytes = bytes_with_bad_frame(8192, 100, 50);
        let mut put = |at: usize, through: u64, salt: u64| {
            let mut record = Vec::new();
            format::encode_synced(&mut record, Seed::of(salt), 7, through);
            bytes[at..at + record.len()].copy_from_slice(&record);
        };
        put(50, 40, SALT);
        put(1000, 900, SALT);
        put(2000, 1500, SALT);
        // A record stating more than its own offset is none the log wrote, nor is one with
        // another segment's salt (a value holding a copy of another log's bytes).
        put(3000, 5000, SALT);
        put(4000, 3500, SALT + 1);
        assert_eq!(synced_after(&bytes, 100, &HEADER), 1500);
        assert_eq!(synced_after(&bytes, 2500, &HEADER), 0, "none it can trust");
        assert_eq!(synced_after(&bytes[..1100], 0, &HEADER), 900);
        assert_eq!(synced_after(&bytes[..1000], 0, &HEADER), 40);
        let v1 = SegmentHeader {
            salt: None,
            ..HEADER
        };
        assert_eq!(
            synced_after(&bytes, 100, &v1),
            0,
            "version 1 has no synced records"
        );
    }
}
