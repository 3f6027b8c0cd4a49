//! Torn and corrupted files: truncation at every byte of the last records, bit flips, corrupt
//! checkpoints, foreign files. Recovery gives a prefix of the writes or a clear error, never a
//! panic.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::{Model, TempDir, checkpoints, options, segments, state};
use wal_checkpoint::{Durability, Error, Options, Wal, recover_read_only};

const HEARTBEAT_FRAME: u64 = 17;
/// A put's frame: an 8-byte key and a 3-byte value.
const PUT_FRAME: u64 = 36;
/// A synced record's frame: the log ends each chunk written after a sync with one.
const SYNCED_FRAME: u64 = 25;
/// What follows a put in its round's chunk: the round's heartbeat, then the synced record
/// stating the previous round's sync.
const ROUND_TAIL: u64 = HEARTBEAT_FRAME + SYNCED_FRAME;

/// Writes `n` puts with Immediate durability on one lane; returns the single segment's bytes and
/// the length of its frames after each put (each put is followed by its round's tail).
fn history(dir: &Path, n: u64) -> (Vec<u8>, Vec<u64>) {
    let (wal, seg, offsets) = put_logged(dir, n, options(1, Durability::Immediate));
    wal.close().expect("close");
    let bytes = fs::read(&seg).expect("read");
    assert_eq!(bytes.len() as u64, *offsets.last().expect("n > 0"));
    (bytes, offsets)
}

/// Writes `n` puts that reach the segment one by one and are never fsynced (no durability,
/// a buffer of one byte), as a process leaves them when it dies before its next sync; returns
/// the segment's frames (without the zeros the segment was extended by) and the end of each
/// put's frame.
fn unsynced_history(dir: &Path, n: u64) -> (Vec<u8>, Vec<u64>) {
    let opts = Options {
        buffer_bytes: 1,
        ..options(1, Durability::None)
    };
    let (wal, seg, offsets) = put_logged(dir, n, opts);
    wal.simulate_crash();
    let mut bytes = fs::read(&seg).expect("read");
    bytes.truncate(*offsets.last().expect("n > 0") as usize);
    (bytes, offsets)
}

/// Writes `n` puts on one lane with `opts`; returns the open log, its single segment and the
/// length of the segment's frames after each put. The segment is extended ahead of its frames:
/// they end where a read-only recovery finds the zeros after them.
fn put_logged(dir: &Path, n: u64, opts: Options) -> (Wal, PathBuf, Vec<u64>) {
    let (wal, _) = Wal::open(dir, opts).expect("open");
    let seg = segments(dir)[0].clone();
    let mut offsets = Vec::new();
    for i in 0..n {
        wal.put(0, &i.to_be_bytes(), &[i as u8; 3], || ())
            .expect("put");
        let size = fs::metadata(&seg).expect("segment").len();
        let zeros = recover_read_only(dir, &options(1, Durability::None))
            .expect("read-only recovery")
            .stats
            .truncated_bytes;
        offsets.push(size - zeros);
    }
    (wal, seg, offsets)
}

fn model(k: u64) -> Model {
    (0..k)
        .map(|i| ((0, i.to_be_bytes().to_vec()), vec![i as u8; 3]))
        .collect()
}

/// A fresh log directory holding only `bytes` as lane 0's first segment.
fn with_segment(name: &str, bytes: &[u8]) -> (TempDir, PathBuf) {
    let dir = TempDir::new(name);
    fs::create_dir_all(dir.path().join("wal")).expect("wal dir");
    let path = dir.path().join("wal").join("lane-000-0000000000000000.log");
    fs::write(&path, bytes).expect("write segment");
    (dir, path)
}

#[test]
fn truncation_at_every_byte_of_the_last_records_recovers_a_prefix() {
    let src = TempDir::new("torn-src");
    let n = 12;
    let (bytes, offsets) = history(src.path(), n);
    let from = offsets[(n - 5) as usize];
    for cut in from..=bytes.len() as u64 {
        let (dir, _) = with_segment("torn", &bytes[..cut as usize]);
        let (wal, recovery) = Wal::open(dir.path(), options(1, Durability::Immediate))
            .unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
        let k = offsets
            .iter()
            .filter(|&&end| end - ROUND_TAIL <= cut)
            .count() as u64;
        assert_eq!(state(&recovery), model(k), "cut at {cut}");
        // The torn tail was cut for good: new writes after it survive the next recovery.
        wal.put(0, b"after", b"!", || ())
            .expect("put after recovery");
        drop(wal);
        let (_, again) = Wal::open(dir.path(), options(1, Durability::None)).expect("reopen");
        let mut expected = model(k);
        expected.insert((0, b"after".to_vec()), b"!".to_vec());
        assert_eq!(
            state(&again),
            expected,
            "second recovery after a cut at {cut}"
        );
    }
}

#[test]
fn bit_flips_in_the_last_frame_are_a_torn_tail() {
    let src = TempDir::new("flip-last-src");
    let n = 6;
    let (bytes, offsets) = history(src.path(), n);
    // The log as a crash leaves it after the last put's frame reached the file and before
    // its round's tail did: the put is the last frame.
    let start = offsets[n as usize - 2] as usize;
    let end = (offsets[n as usize - 1] - ROUND_TAIL) as usize;
    let bytes = &bytes[..end];
    for bit in start * 8..end * 8 {
        let mut flipped = bytes.to_vec();
        flipped[bit / 8] ^= 1 << (bit % 8);
        let (dir, _) = with_segment("flip-last", &flipped);
        let (_, recovery) = Wal::open(dir.path(), options(1, Durability::None))
            .unwrap_or_else(|e| panic!("bit {bit}: {e}"));
        assert_eq!(state(&recovery), model(n - 1), "bit {bit}");
        assert_eq!(recovery.stats.truncated_bytes, (end - start) as u64);
    }
}

#[test]
fn a_torn_round_after_the_synced_record_naming_its_start_is_a_torn_tail() {
    const BLOCK: u64 = 512;
    let src = TempDir::new("torn-round-src");
    let (bytes, offsets) = history(src.path(), 60);
    // A round whose put and heartbeat start within the last 53 bytes of a block, so that its
    // synced record (naming the round's start, where the previous round's sync ended) lies
    // wholly in the next block. A power loss during the round kept the first block from the
    // disk: zeros from the put to the block's end, the synced record after them.
    let k = (1..offsets.len())
        .find(|&k| offsets[k - 1] % BLOCK >= BLOCK - (PUT_FRAME + HEARTBEAT_FRAME))
        .expect("a round starting near a block's end");
    let start = offsets[k - 1] as usize;
    let record = offsets[k] as usize - SYNCED_FRAME as usize;
    let named = u64::from_le_bytes(bytes[record + 17..record + 25].try_into().expect("8 bytes"));
    assert_eq!(
        named, start as u64,
        "the round's synced record names its start"
    );
    let block_end = (offsets[k - 1] / BLOCK + 1) * BLOCK;
    assert!(
        offsets[k] - SYNCED_FRAME >= block_end,
        "the record lies after the block"
    );
    let mut torn = bytes[..offsets[k] as usize].to_vec();
    torn[start..block_end as usize].fill(0);
    let (dir, _) = with_segment("torn-round", &torn);
    let (_, recovery) = Wal::open(dir.path(), options(1, Durability::None)).expect("torn tail");
    assert_eq!(state(&recovery), model(k as u64));
    assert_eq!(recovery.stats.truncated_bytes, offsets[k] - offsets[k - 1]);
}

#[test]
fn pages_never_written_back_are_a_torn_tail_even_with_frames_after_them() {
    const PAGE: u64 = 4096;
    const BLOCK: u64 = 512;
    let src = TempDir::new("hole-src");
    let n = 300;
    let (bytes, offsets) = unsynced_history(src.path(), n);
    // A put whose frame ends well inside the second page (and early in a 512-byte block):
    // zeros from there to the page's end are what a power loss leaves when the page reached
    // the disk before the next frames were written into it and the later pages got there too;
    // the frames on the later pages were never fsynced.
    let k = offsets
        .iter()
        .position(|&end| {
            end > PAGE && (200..PAGE - 400).contains(&(end % PAGE)) && end % BLOCK < BLOCK - 100
        })
        .expect("a put ending inside the second page");
    let hole = offsets[k] as usize;
    let page_end = (hole / PAGE as usize + 1) * PAGE as usize;
    assert!(bytes.len() > page_end + 100, "frames follow the page");
    let mut holed = bytes.clone();
    holed[hole..page_end].fill(0);
    let (dir, _) = with_segment("hole", &holed);
    let (_, recovery) = Wal::open(dir.path(), options(1, Durability::None)).expect("torn tail");
    assert_eq!(state(&recovery), model(k as u64 + 1));
    assert_eq!(recovery.stats.truncated_bytes, (bytes.len() - hole) as u64);
    // A whole page of zeros that a frame runs into: the page never reached the disk.
    lose_second_page("lost-page", &bytes, &offsets);
    let page = PAGE as usize;
    // A length word damaged upward, in the last page before the extension's zeros, with a
    // whole frame after it: corruption, although the frame now claims the zeros.
    let damaged_at = offsets[offsets.len() - 3] as usize;
    assert_eq!(
        damaged_at / page,
        (bytes.len() - 1) / page,
        "in the last page"
    );
    let mut damaged = bytes.clone();
    damaged[damaged_at + 4..damaged_at + 8].copy_from_slice(&0xff00u32.to_le_bytes());
    damaged.resize(bytes.len().next_multiple_of(page) + page, 0);
    let (dir, path) = with_segment("damaged", &damaged);
    match Wal::open(dir.path(), options(1, Durability::None)) {
        Err(Error::Corrupt { file, offset, .. }) => {
            assert_eq!((file, offset), (path, damaged_at as u64));
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    // Zeros that stop short of their 512-byte block's end are no lost write: corruption.
    let block_end = (hole / BLOCK as usize + 1) * BLOCK as usize;
    let mut zeroed = bytes.clone();
    zeroed[hole..hole + 64].fill(0);
    assert!(zeroed[hole + 64..block_end].iter().any(|&b| b != 0));
    let (dir, path) = with_segment("zeros", &zeroed);
    match Wal::open(dir.path(), options(1, Durability::None)) {
        Err(Error::Corrupt { file, offset, .. }) => {
            assert_eq!((file, offset), (path, hole as u64));
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

/// Zeros the second page of `bytes`, a crashed segment whose frames are puts ending at `ends`,
/// as a page that never reached the disk, and checks that recovery keeps the puts wholly
/// before it and cuts the rest as a torn tail (the frame that runs into the page is torn).
fn lose_second_page(name: &str, bytes: &[u8], ends: &[u64]) {
    const PAGE: usize = 4096;
    let torn_from = last_end_before(ends, PAGE);
    let mut lost = bytes.to_vec();
    lost[PAGE..2 * PAGE].fill(0);
    let (dir, _) = with_segment(name, &lost);
    let (_, recovery) = Wal::open(dir.path(), options(1, Durability::None)).expect("torn tail");
    let puts = ends
        .iter()
        .filter(|&&end| end as usize <= torn_from)
        .count();
    assert_eq!(state(&recovery), model(puts as u64));
    assert_eq!(
        recovery.stats.truncated_bytes,
        (bytes.len() - torn_from) as u64
    );
}

/// The largest of `ends` (frame ends) below `page`, asserting that a frame runs into `page`
/// (none ends exactly there).
fn last_end_before(ends: &[u64], page: usize) -> usize {
    assert!(
        ends.iter().all(|&end| end as usize != page),
        "a frame runs into the page"
    );
    ends.iter()
        .map(|&end| end as usize)
        .filter(|&end| end < page)
        .max()
        .expect("frames end before the page")
}

#[test]
fn a_zeroed_page_among_fsynced_frames_is_corruption() {
    const PAGE: usize = 4096;
    let src = TempDir::new("synced-hole-src");
    let (bytes, offsets) = history(src.path(), 160);
    assert!(bytes.len() > 2 * PAGE + 200, "rounds follow the page");
    // Every frame of a round ends: the put, its heartbeat, the synced record.
    let ends: Vec<u64> = offsets
        .iter()
        .flat_map(|&end| [end - ROUND_TAIL, end - SYNCED_FRAME, end])
        .collect();
    let torn_from = last_end_before(&ends, PAGE);
    let mut lost_page = bytes.clone();
    lost_page[PAGE..2 * PAGE].fill(0);
    let (dir, path) = with_segment("synced-hole", &lost_page);
    match Wal::open(dir.path(), options(1, Durability::None)) {
        Err(Error::Corrupt {
            file,
            offset,
            reason,
        }) => {
            assert_eq!((file, offset), (path, torn_from as u64));
            assert!(reason.contains("fsynced"), "{reason}");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    let tolerant = Options {
        tolerate_corruption: true,
        ..options(1, Durability::None)
    };
    let (_, recovery) = Wal::open(dir.path(), tolerant).expect("tolerant recovery");
    let puts = offsets
        .iter()
        .filter(|&&end| (end - ROUND_TAIL) as usize <= torn_from)
        .count();
    assert_eq!(state(&recovery), model(puts as u64));
    assert_eq!(recovery.stats.tolerated.len(), 1);
}

#[test]
fn frames_of_another_log_inside_a_value_do_not_count() {
    const PAGE: usize = 4096;
    const BLOCK: usize = 512;
    let other = TempDir::new("foreign-frames");
    let (other_bytes, _) = history(other.path(), 100);
    // The unsynced puts of `unsynced_history`, then one more whose value is `value`; the
    // segment as a crash leaves it (without the extension's zeros) and each put's end.
    let crashed = |name: &str, value: &[u8]| {
        let dir = TempDir::new(name);
        let opts = Options {
            buffer_bytes: 1,
            ..options(1, Durability::None)
        };
        let (wal, seg, mut offsets) = put_logged(dir.path(), 300, opts);
        wal.put(0, b"copied", value, || ()).expect("put");
        wal.simulate_crash();
        let mut bytes = fs::read(&seg).expect("read");
        let end = offsets.last().expect("puts") + 8 + 1 + 8 + 4 + 4 + 6 + value.len() as u64;
        bytes.truncate(end as usize);
        offsets.push(end);
        (bytes, offsets)
    };
    // A synced record of the other log (stating more bytes than the hole below starts at),
    // as the last put's value; the second page of the unsynced round never reached the disk.
    let record = &other_bytes[other_bytes.len() - SYNCED_FRAME as usize..];
    let named = u64::from_le_bytes(record[17..25].try_into().expect("8 bytes"));
    let (bytes, offsets) = crashed("copied-record", record);
    assert!(
        named > PAGE as u64 && named < bytes.len() as u64,
        "it names bytes past the hole"
    );
    lose_second_page("copied-record", &bytes, &offsets);
    // Three kilobytes of the other log's frames as the last put's value, and a block of that
    // put's own frame, after a kilobyte of them, that never reached the disk.
    let frames = &other_bytes[100..3172];
    let (mut bytes, offsets) = crashed("copied-frames", frames);
    let start = offsets[offsets.len() - 2] as usize;
    let block = (start + 1100).next_multiple_of(BLOCK);
    assert!(
        block + BLOCK <= bytes.len(),
        "the block lies within the put's frame"
    );
    bytes[block..block + BLOCK].fill(0);
    let (dir, _) = with_segment("copied-frames", &bytes);
    let (_, recovery) = Wal::open(dir.path(), options(1, Durability::None)).expect("torn tail");
    assert_eq!(state(&recovery), model(300));
    assert_eq!(recovery.stats.truncated_bytes, (bytes.len() - start) as u64);
}

#[test]
fn bit_flips_before_the_tail_are_corruption_naming_file_and_offset() {
    let src = TempDir::new("flip-mid-src");
    let n = 6;
    let (bytes, offsets) = history(src.path(), n);
    // The last put's frame: it ends where the final round's tail starts.
    let end = (offsets[n as usize - 1] - ROUND_TAIL) as usize;
    let start = (offsets[n as usize - 2]) as usize;
    for bit in start * 8..end * 8 {
        let mut flipped = bytes.clone();
        flipped[bit / 8] ^= 1 << (bit % 8);
        let (dir, path) = with_segment("flip-mid", &flipped);
        match Wal::open(dir.path(), options(1, Durability::None)) {
            Err(Error::Corrupt { file, offset, .. }) => {
                assert_eq!(file, path, "bit {bit}");
                assert_eq!(offset, start as u64, "bit {bit}");
            }
            other => panic!("bit {bit}: expected Corrupt, got {other:?}"),
        }
        // Untouched by the failed recovery; tolerant mode recovers the prefix.
        assert_eq!(fs::read(&path).expect("read"), flipped);
        let tolerant = Options {
            tolerate_corruption: true,
            ..options(1, Durability::None)
        };
        let (_, recovery) = Wal::open(dir.path(), tolerant).expect("tolerant recovery");
        assert_eq!(state(&recovery), model(n - 1), "bit {bit}");
        assert_eq!(recovery.stats.tolerated.len(), 1);
    }
}

#[test]
fn a_long_tail_of_frame_lengths_is_cut_in_bounded_time() {
    let src = TempDir::new("long-tail-src");
    let n = 4;
    let (mut bytes, _) = history(src.path(), n);
    let frames = bytes.len();
    // A torn value's binary data: every eighth byte starts what reads as a put's frame with a
    // length of 4 MiB, which the tail holds, and a wrong checksum. Checksumming each of those
    // afresh, to learn whether a valid frame follows the bad one, reads 4 MiB per position:
    // terabytes in all.
    let pattern = [1, 0xaa, 0xbb, 0xcc, 0, 0, 0x40, 0];
    bytes.extend(pattern.iter().cycle().take(8 << 20));
    let (dir, _) = with_segment("long-tail", &bytes);
    let (done, finished) = std::sync::mpsc::channel();
    let path = dir.path().to_path_buf();
    std::thread::spawn(move || {
        let opened = Wal::open(&path, options(1, Durability::None)).map(|(_, r)| r);
        done.send(opened).expect("the test waits");
    });
    let recovery = finished
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("recovery finishes within a minute")
        .expect("a torn tail");
    assert_eq!(state(&recovery), model(n));
    assert_eq!(
        recovery.stats.truncated_bytes,
        (bytes.len() - frames) as u64
    );
}

#[test]
fn stamps_and_segment_numbers_above_2_to_the_62_are_corruption() {
    let src = TempDir::new("stamp-src");
    let (bytes, _) = history(src.path(), 3);
    // The header's fields, resealed with a valid checksum: seq at 16, prev_last_ts at 24.
    let reseal = |at: usize, word: u64| {
        let mut forged = bytes.clone();
        forged[at..at + 8].copy_from_slice(&word.to_le_bytes());
        let crc = crc32c::crc32c(&forged[..40]);
        forged[40..44].copy_from_slice(&crc.to_le_bytes());
        forged
    };
    for (at, word) in [(24, u64::MAX), (24, (1 << 62) + 1), (16, u64::MAX)] {
        let forged = reseal(at, word);
        let (dir, _) = with_segment("stamp", &forged);
        if at == 16 {
            let name = format!("lane-000-{word:016}.log");
            fs::rename(
                dir.path().join("wal/lane-000-0000000000000000.log"),
                dir.path().join("wal").join(name),
            )
            .expect("rename");
        }
        match Wal::open(dir.path(), options(1, Durability::None)) {
            Err(Error::Corrupt { reason, .. }) => {
                assert!(reason.contains("out of range"), "{at} {word}: {reason}");
            }
            other => panic!("{at} {word}: expected Corrupt, got {other:?}"),
        }
    }
}

#[test]
fn only_canonical_segment_names_count() {
    let src = TempDir::new("alias-src");
    let (bytes, _) = history(src.path(), 3);
    let (dir, _) = with_segment("alias", &bytes);
    // Names that parse to lane 0's segment 0, and a lane no log has: none is a segment.
    for alias in [
        "lane-0-0000000000000000.log",
        "lane-+00-0000000000000000.log",
        "lane-000-0.log",
        "lane-4096-0000000000000000.log",
        "lane-4294967295-0000000000000000.log",
    ] {
        fs::write(dir.path().join("wal").join(alias), &bytes).expect("alias");
    }
    let (_, recovery) = Wal::open(dir.path(), options(1, Durability::None)).expect("open");
    assert_eq!(state(&recovery), model(3));
    assert_eq!(recovery.stats.segments, 1);
}

#[test]
fn a_checksummed_record_that_does_not_decode_is_corruption_or_tolerated() {
    let src = TempDir::new("undecodable-src");
    let n = 6;
    let (mut bytes, offsets) = history(src.path(), n);
    // The last put's key length, forged past the record's end and resealed with the
    // segment's seed: the frame checks out, its record does not decode.
    let start = offsets[n as usize - 2] as usize;
    let end = (offsets[n as usize - 1] - ROUND_TAIL) as usize;
    bytes[start + 21..start + 25].copy_from_slice(&100u32.to_le_bytes());
    let seed = crc32c::crc32c(&bytes[32..40]);
    let crc = crc32c::crc32c_append(seed, &bytes[start + 4..end]);
    bytes[start..start + 4].copy_from_slice(&crc.to_le_bytes());
    let (dir, path) = with_segment("undecodable", &bytes);
    match Wal::open(dir.path(), options(1, Durability::None)) {
        Err(Error::Corrupt { file, offset, .. }) => {
            assert_eq!((file, offset), (path, start as u64));
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    let tolerant = Options {
        tolerate_corruption: true,
        ..options(1, Durability::None)
    };
    let (wal, recovery) = Wal::open(dir.path(), tolerant).expect("tolerant recovery");
    assert_eq!(state(&recovery), model(n - 1));
    assert_eq!(recovery.stats.tolerated.len(), 1);
    drop(wal);
    // The lane was cut there for good: a strict reopen finds nothing wrong.
    let (_, again) = Wal::open(dir.path(), options(1, Durability::None)).expect("reopen");
    assert_eq!(state(&again), model(n - 1));
}

#[test]
fn a_corrupt_segment_header_is_an_error_and_a_torn_new_segment_is_dropped() {
    let src = TempDir::new("header-src");
    let (bytes, _) = history(src.path(), 3);
    let mut bad = bytes.clone();
    bad[3] ^= 0xff;
    let (dir, path) = with_segment("bad-magic", &bad);
    // A second segment (the one a reopen starts), so the bad one is not the last.
    let (intact, _) = with_segment("intact", &bytes);
    drop(Wal::open(intact.path(), options(1, Durability::None)).expect("open"));
    let second = segments(intact.path())[1].clone();
    fs::copy(
        &second,
        dir.path()
            .join("wal")
            .join(second.file_name().expect("name")),
    )
    .expect("copy");
    match Wal::open(dir.path(), options(1, Durability::None)) {
        Err(Error::Corrupt {
            file, offset: 0, ..
        }) => assert_eq!(file, path),
        other => panic!("expected Corrupt, got {other:?}"),
    }
    // A last segment shorter than its header was torn while being created: dropped, whether
    // it stops within a version 1 header's length or within version 2's (44 bytes). Each
    // recovery starts the lane's next segment, after which the test places the torn one.
    let (dir, _) = with_segment("short-new", &bytes);
    for (seq, len) in [(1, 20), (2, 40)] {
        let torn = dir
            .path()
            .join("wal")
            .join(format!("lane-000-{seq:016}.log"));
        fs::write(torn, &bytes[..len]).expect("write");
        let (_, recovery) = Wal::open(dir.path(), options(1, Durability::None)).expect("open");
        assert_eq!(state(&recovery), model(3));
    }
}

#[test]
fn foreign_files_are_ignored_and_missing_segments_are_an_error() {
    let src = TempDir::new("foreign-src");
    let (bytes, _) = history(src.path(), 4);
    let (dir, _) = with_segment("foreign", &bytes);
    fs::write(dir.path().join("notes.txt"), b"hello").expect("write");
    fs::write(dir.path().join("wal").join("notes.log"), b"hello").expect("write");
    fs::write(dir.path().join("checkpoint-x.ckpt"), b"hello").expect("write");
    let (wal, recovery) = Wal::open(dir.path(), options(1, Durability::None)).expect("open");
    assert_eq!(state(&recovery), model(4));
    drop(wal);
    // A gap in lane 0's sequence numbers: a segment went missing.
    fs::write(
        dir.path().join("wal").join("lane-000-0000000000000009.log"),
        b"garbage",
    )
    .expect("write");
    assert!(matches!(
        Wal::open(dir.path(), options(1, Durability::None)),
        Err(Error::Corrupt { .. })
    ));
}

/// Every cut of a segment that another follows is corruption naming it, a cut at a frame
/// boundary (down to the header) too, though only whole frames are left: the next segment's
/// header names the stamp the lane's records reached before it. In tolerant mode the lane ends
/// at the cut, and recovery gives a prefix of the writes.
#[test]
fn every_cut_of_an_earlier_segment_is_corruption() {
    let dir = TempDir::new("cut-earlier");
    let opts = Options {
        segment_bytes: 256,
        ..options(1, Durability::Immediate)
    };
    let puts = 40u64;
    let (wal, _) = Wal::open(dir.path(), opts.clone()).expect("open");
    for i in 0..puts {
        wal.put(0, &i.to_be_bytes(), &[i as u8; 3], || ())
            .expect("put");
    }
    wal.close().expect("close");
    let tolerant = Options {
        tolerate_corruption: true,
        ..opts.clone()
    };
    let files = segments(dir.path());
    assert!(files.len() >= 4, "{} segments", files.len());
    for path in [&files[0], &files[files.len() / 2]] {
        let original = fs::read(path).expect("read");
        for len in 0..original.len() {
            fs::write(path, &original[..len]).expect("cut");
            // A cut may take only a synced record, stamped as the heartbeat before it: then
            // nothing is lost.
            match recover_read_only(dir.path(), &opts) {
                Err(Error::Corrupt { file, .. }) => assert_eq!(&file, path, "cut to {len}"),
                Ok(recovery) => assert_eq!(state(&recovery), model(puts), "cut to {len}"),
                Err(other) => panic!("{} cut to {len}: {other}", path.display()),
            }
            let recovery = recover_read_only(dir.path(), &tolerant).expect("tolerant recovery");
            let recovered = state(&recovery);
            assert_eq!(recovered, model(recovered.len() as u64), "cut to {len}");
        }
        fs::write(path, &original).expect("restore");
    }
    let (_, recovery) = Wal::open(dir.path(), opts).expect("intact");
    assert_eq!(state(&recovery), model(puts));
}

/// A lane whose files are all gone (below the highest lane), or a log gone whole beside its
/// checkpoints, is corruption; tolerant mode recovers what is left.
#[test]
fn a_missing_lane_or_a_missing_log_is_corruption() {
    let src = TempDir::new("missing-src");
    let opts = options(3, Durability::Periodic(std::time::Duration::from_millis(5)));
    let expected = checkpointed(src.path(), &opts);
    let tolerant = Options {
        tolerate_corruption: true,
        ..opts.clone()
    };
    let damaged = |name: &str, damage: &dyn Fn(&Path)| {
        let dir = TempDir::new(name);
        copy_dir(src.path(), dir.path());
        damage(dir.path());
        dir
    };
    let lane_gone = damaged("lane-gone", &|dir| {
        for path in segments(dir) {
            if path.to_string_lossy().contains("lane-001-") {
                fs::remove_file(path).expect("remove");
            }
        }
    });
    let log_gone = damaged("log-gone", &|dir| {
        fs::remove_dir_all(dir.join("wal")).expect("remove");
        fs::create_dir(dir.join("wal")).expect("an empty log");
    });
    for (dir, problem) in [
        (&lane_gone, "lane 1 of the log is missing"),
        (&log_gone, "the log is missing"),
    ] {
        match recover_read_only(dir.path(), &opts) {
            Err(Error::Corrupt { reason, .. }) => assert!(reason.contains(problem), "{reason}"),
            other => panic!("{problem}: {other:?}"),
        }
        let recovery = recover_read_only(dir.path(), &tolerant).expect("tolerant recovery");
        assert_eq!(recovery.stats.tolerated.len(), 1, "{problem}");
        assert!(recovery.stats.checkpoint.is_some(), "{problem}");
    }
    let (_, recovery) = Wal::open(src.path(), opts).expect("intact");
    assert_eq!(state(&recovery), expected);
}

/// Writes, checkpoints, writes more; returns the final model.
fn checkpointed(dir: &Path, opts: &Options) -> Model {
    let (wal, _) = Wal::open(dir, opts.clone()).expect("open");
    let mut map = Model::new();
    for i in 0..200u64 {
        let key = (i % 64).to_be_bytes().to_vec();
        wal.put(0, &key, &i.to_le_bytes(), || {
            map.insert((0, key.clone()), i.to_le_bytes().to_vec())
        })
        .expect("put");
    }
    wal.sync().expect("sync");
    let snapshot = map.clone();
    wal.checkpoint(|w| {
        for ((table, key), value) in &snapshot {
            w.put(*table, key, value)?;
        }
        Ok(())
    })
    .expect("checkpoint");
    for i in 200..260u64 {
        let key = (i % 80).to_be_bytes().to_vec();
        wal.put(0, &key, &i.to_le_bytes(), || {
            map.insert((0, key.clone()), i.to_le_bytes().to_vec())
        })
        .expect("put");
    }
    wal.close().expect("close");
    map
}

/// A named way to damage a file's bytes.
type Damage = (String, Box<dyn Fn(&mut Vec<u8>)>);

/// The ways a checkpoint file is damaged in the tests.
fn damages(len: usize) -> Vec<Damage> {
    let mut out: Vec<Damage> = Vec::new();
    for cut in [0, 10, 31, 32, 40, len / 2, len - 24, len - 1] {
        out.push((
            format!("truncated to {cut}"),
            Box::new(move |b| b.truncate(cut)),
        ));
    }
    for at in [0, 9, 15, 30, 33, 45, len / 2, len - 20, len - 10, len - 2] {
        out.push((
            format!("byte {at} flipped"),
            Box::new(move |b| b[at] ^= 0x40),
        ));
    }
    out.push((
        "garbage".into(),
        Box::new(|b| b.iter_mut().for_each(|x| *x = 0xa5)),
    ));
    out
}

#[test]
fn a_corrupt_checkpoint_falls_back_to_the_log_when_it_still_covers_everything() {
    let src = TempDir::new("ckpt-src");
    let opts = options(1, Durability::Periodic(std::time::Duration::from_millis(5)));
    let expected = checkpointed(src.path(), &opts);
    let ckpt = checkpoints(src.path())[0].clone();
    let original = fs::read(&ckpt).expect("read");
    for (what, damage) in damages(original.len()) {
        let dir = TempDir::new("ckpt");
        copy_dir(src.path(), dir.path());
        let mut bytes = original.clone();
        damage(&mut bytes);
        fs::write(dir.path().join(ckpt.file_name().expect("name")), &bytes).expect("write");
        let (_, recovery) =
            Wal::open(dir.path(), opts.clone()).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(state(&recovery), expected, "{what}");
        assert_eq!(recovery.stats.checkpoint, None, "{what}");
        assert_eq!(recovery.stats.skipped_checkpoints.len(), 1, "{what}");
    }
}

#[test]
fn a_corrupt_checkpoint_whose_log_is_gone_is_a_clear_error() {
    let src = TempDir::new("ckpt-gone-src");
    let opts = Options {
        segment_bytes: 256,
        ..options(1, Durability::Periodic(std::time::Duration::from_millis(5)))
    };
    let expected = checkpointed(src.path(), &opts);
    let (_, recovery) = Wal::open(src.path(), opts.clone()).expect("intact");
    assert_eq!(state(&recovery), expected);
    assert!(recovery.stats.checkpoint.is_some());
    let ckpt = checkpoints(src.path())[0].clone();
    let original = fs::read(&ckpt).expect("read");
    for (what, damage) in damages(original.len()) {
        let dir = TempDir::new("ckpt-gone");
        copy_dir(src.path(), dir.path());
        let mut bytes = original.clone();
        damage(&mut bytes);
        let target = dir.path().join(ckpt.file_name().expect("name"));
        fs::write(&target, &bytes).expect("write");
        match Wal::open(dir.path(), opts.clone()) {
            Err(Error::Corrupt { file, .. }) => assert_eq!(file, target, "{what}"),
            other => panic!("{what}: expected Corrupt, got {other:?}"),
        }
    }
}

#[test]
fn an_older_valid_checkpoint_is_used_when_the_newest_is_corrupt() {
    let dir = TempDir::new("ckpt-older");
    let opts = options(1, Durability::Periodic(std::time::Duration::from_millis(5)));
    let (wal, _) = Wal::open(dir.path(), opts.clone()).expect("open");
    let mut map = Model::new();
    let ckpt = |wal: &Wal, map: &Model| {
        wal.checkpoint(|w| {
            for ((table, key), value) in map {
                w.put(*table, key, value)?;
            }
            Ok(())
        })
        .expect("checkpoint")
        .path
    };
    for i in 0..50u64 {
        wal.put(1, &i.to_be_bytes(), b"a", || {
            map.insert((1, i.to_be_bytes().to_vec()), b"a".to_vec())
        })
        .expect("put");
    }
    let older = ckpt(&wal, &map);
    let saved = fs::read(&older).expect("read");
    for i in 25..75u64 {
        wal.put(1, &i.to_be_bytes(), b"b", || {
            map.insert((1, i.to_be_bytes().to_vec()), b"b".to_vec())
        })
        .expect("put");
    }
    let newest = ckpt(&wal, &map);
    wal.close().expect("close");
    fs::write(&older, saved).expect("restore the older checkpoint");
    let mut bytes = fs::read(&newest).expect("read");
    let mid = bytes.len() / 2;
    bytes[mid] ^= 1;
    fs::write(&newest, bytes).expect("corrupt the newest");
    let (_, recovery) = Wal::open(dir.path(), opts).expect("recover");
    assert_eq!(recovery.stats.checkpoint.as_deref(), Some(older.as_path()));
    assert_eq!(state(&recovery), map);
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            fs::create_dir_all(&target).expect("mkdir");
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), target).expect("copy");
        }
    }
}

#[test]
fn extended_segments_end_with_their_last_frame_once_closed_and_recover_after_a_crash() {
    let dir = TempDir::new("extended");
    let opts = Options {
        segment_bytes: 2048,
        ..options(1, Durability::Immediate)
    };
    let (wal, _) = Wal::open(dir.path(), opts.clone()).expect("open");
    for i in 0..200u64 {
        wal.put(0, &i.to_be_bytes(), &[i as u8; 3], || ())
            .expect("put");
    }
    let files = segments(dir.path());
    assert!(files.len() > 3, "tiny segments rotate ({})", files.len());
    let zeros = recover_read_only(dir.path(), &opts)
        .expect("read-only recovery")
        .stats
        .truncated_bytes;
    assert!(
        zeros > 0,
        "the open segment is extended ahead of its frames"
    );
    let open = fs::read(files.last().expect("a segment")).expect("read");
    assert!(open.ends_with(&vec![0; zeros as usize]));
    // Rotation cut the closed segments' extensions (a closed segment ending in zeros would
    // be corrupt); the crashed segment's zeros are a torn tail.
    wal.simulate_crash();
    let (wal, recovery) = Wal::open(dir.path(), opts.clone()).expect("recover");
    assert_eq!(state(&recovery), model(200));
    wal.put(0, &200u64.to_be_bytes(), &[200; 3], || ())
        .expect("put");
    wal.close().expect("close");
    let closed = recover_read_only(dir.path(), &opts).expect("read-only recovery");
    assert_eq!(
        closed.stats.truncated_bytes, 0,
        "a clean close cuts the zeros"
    );
    assert_eq!(state(&closed), model(201));
}

#[test]
fn a_clean_close_of_several_lanes_reopens_without_a_cut() {
    // The close's round heartbeats each lane at a stamp of its own: every lane but one ends
    // above t_safe, with nothing but heartbeats (and synced records) there.
    let dir = TempDir::new("clean-lanes");
    let opts = options(3, Durability::Immediate);
    for round in 0..3u64 {
        let (wal, recovery) = Wal::open(dir.path(), opts.clone()).expect("open");
        assert_eq!(
            recovery.stats.truncated_bytes, 0,
            "reopen {round} cut bytes"
        );
        assert_eq!(state(&recovery), model(round));
        wal.put(0, &round.to_be_bytes(), &[round as u8; 3], || ())
            .expect("put");
        wal.close().expect("close");
    }
    let closed = recover_read_only(dir.path(), &opts).expect("read-only recovery");
    assert_eq!(closed.stats.truncated_bytes, 0);
    assert_eq!(state(&closed), model(3));
}

#[test]
fn a_log_of_format_version_1_recovers_and_grows() {
    // Written by the build before synced records (format version 1): four puts, a checkpoint,
    // a remove, a batch and a put, all with Immediate durability, then a simulated crash (the
    // segment ends in the zeros it was extended by).
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v1");
    let dir = TempDir::new("v1-log");
    copy_dir(&fixture, dir.path());
    let mut expected: Model = [(0u64, "v0"), (3, "v3"), (9, "last")]
        .into_iter()
        .map(|(k, v)| ((0, k.to_be_bytes().to_vec()), v.as_bytes().to_vec()))
        .collect();
    expected.insert((1, b"a".to_vec()), b"batch".to_vec());
    let (wal, recovery) =
        Wal::open(dir.path(), options(1, Durability::Immediate)).expect("open a version 1 log");
    assert_eq!(state(&recovery), expected);
    assert!(
        recovery.stats.checkpoint.is_some(),
        "its checkpoint was loaded"
    );
    assert!(
        recovery.stats.truncated_bytes > 0,
        "the crash's zeros were cut"
    );
    wal.put(0, &10u64.to_be_bytes(), b"new", || ())
        .expect("put");
    wal.close().expect("close");
    expected.insert((0, 10u64.to_be_bytes().to_vec()), b"new".to_vec());
    let (_, again) = Wal::open(dir.path(), options(1, Durability::None)).expect("reopen");
    assert_eq!(state(&again), expected);
    assert_eq!(
        segments(dir.path()).len(),
        3,
        "the version 1 segment and two new ones"
    );
}
