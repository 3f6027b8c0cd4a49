//! Crash and power-loss tests of recovery's repairs and of checkpoint pruning: every state that
//! a crash at any point of their file changes leaves, or a power loss that keeps any part of
//! what was not durable yet, recovers the same keys into a log that writes again.
//!
//! # The model
//!
//! Recovery, the cut note and checkpoints change files (removals, renames, new files, cuts,
//! writes) and fsync them through `faults`, where a [`Machine`] on the test's thread tracks
//! them.
//!
//! - A **crash** (the process killed) comes before any one of those operations: the ones before
//!   it are done, and all their changes are kept, in the page cache. Those not durable yet stay
//!   pending for whatever runs next on the same machine, such as the next recovery.
//! - A **power loss** keeps any subset of the pending changes and loses the others. A change to
//!   a file's data (a cut, a write) is durable once the file is fsynced; a change to a
//!   directory's entries (a removal, a rename, a new file) once the directory is fsynced. A file
//!   then holds what it held before its first pending change, with the kept changes replayed
//!   over it in order. A rename's two sides are kept or lost apart, which a disk never does;
//!   a write is kept whole, though a disk may keep part of it (a unit test of `recovery`,
//!   `a_crash_between_a_cut_and_its_heartbeat_loses_nothing`, tears the heartbeat a cut ends
//!   with). The log's own writes (records, new segments, a checkpoint's file before its rename)
//!   are not tracked: a layout is durable as laid out, or says which of its bytes are not.
//!
//! # The checks
//!
//! Each distinct state is recovered read only (strictly: `Error::Corrupt` fails the test), then
//! with repairs. Both return the same keys, which the layout allows (its acknowledged writes and
//! a prefix of the others in stamp order), and the same as any whole recovery on the way to the
//! state returned. No checkpoint above `t_safe` is left, nor the cut note, and the clock
//! restarts above every stamp on disk. A second recovery returns the same and changes no file.
//! Then the log opens there, takes a put, closes, and reopens holding it.
//!
//! The states: one recovery stopped at each of its operations in turn, times every subset of
//! the changes then pending; two recoveries in a row, the first stopped at each of its
//! operations (a crash alone), the second explored likewise; seeded random walks (every run
//! takes the same ones) of up to four recoveries in a row, each stopped at a random operation,
//! run whole or read only, and followed by a random power loss or none; and a checkpoint
//! stopped at each of its operations, times every subset, each state explored with a recovery.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use test_support::TempDir;

use super::tests::{Laid, segment};
use super::{Recovered, Recovery, recover, segment_id};
use crate::checkpoint::{self, CheckpointWriter};
use crate::faults::{FileChange, Machine, Pending};
use crate::format::{self, Frame, SegmentHeader};
use crate::{Durability, Options, Wal, lane};

/// Files by path relative to the log's directory, with their bytes.
type Files = BTreeMap<PathBuf, Vec<u8>>;

/// Recovered keys (all in table 0), in order.
type Keys = Vec<Vec<u8>>;

/// The key the log writes once reopened.
const NEW_KEY: &[u8] = b"new";

/// Power losses of at most this many pending changes are enumerated.
const MAX_PENDING: usize = 10;

/// Random walks per layout.
const WALKS: usize = 100;

/// Writes the checkpoint `[t_begin, t_end]` of `keys` in `dir`.
fn checkpoint(dir: &Path, t_begin: u64, t_end: u64, keys: &[&str]) {
    let mut writer = CheckpointWriter::create(dir, t_begin, None).expect("a checkpoint");
    scan(&mut writer, keys).expect("the entries");
    writer.finish(dir, t_begin, t_end).expect("a checkpoint");
}

/// An index scan into a checkpoint: `keys`.
fn scan(writer: &mut CheckpointWriter, keys: &[&str]) -> crate::Result<()> {
    keys.iter()
        .try_for_each(|key| writer.put(0, key.as_bytes(), b"v"))
}

/// Lane 1 ends at stamp 4 in a torn tail (cut off; the lane needs no heartbeat): `t_safe` is 4.
/// Lane 0 is cut in segment 0 before stamp 5 and ends with a heartbeat; its segment 1 goes, and
/// so does its segment 2, torn while it was created. Lane 2 is cut at segment 1's header, with a
/// heartbeat. The checkpoint ending at 3 is loaded; the one ending at 9, above `t_safe`, goes,
/// with a half-written one. Recovered: a, x, p, y.
fn lay_cuts(dir: &Path) {
    let wal = dir.join("wal");
    fs::create_dir_all(&wal).expect("wal dir");
    segment(&wal, 0, 0, 0, &[Laid::Put(1, b"a"), Laid::Put(5, b"b")]);
    segment(&wal, 0, 1, 5, &[Laid::Put(8, b"c")]);
    fs::write(wal.join(lane::segment_name(0, 2)), b"LKVW").expect("a torn segment");
    segment(&wal, 1, 0, 0, &[Laid::Put(2, b"x"), Laid::Put(4, b"y")]);
    let lane_1 = wal.join(lane::segment_name(1, 0));
    let mut torn = fs::read(&lane_1).expect("lane 1");
    torn.resize(torn.len() + 700, 0);
    fs::write(lane_1, torn).expect("a torn tail");
    segment(&wal, 2, 0, 0, &[Laid::Put(3, b"p")]);
    segment(&wal, 2, 1, 3, &[Laid::Put(6, b"q"), Laid::Put(7, b"r")]);
    checkpoint(dir, 0, 3, &["a", "x", "p"]);
    checkpoint(dir, 2, 9, &["a", "b", "x", "p", "y", "q"]);
    fs::write(dir.join(checkpoint::TEMP_NAME), b"partial").expect("a half-written checkpoint");
}

/// The changes `lay_cuts`' log had not fsynced when it crashed: lane 1's record at stamp 4
/// (y), which a power loss may take back, and `t_safe` down to 2 with it.
fn unsynced_in_cuts(dir: &Path) -> Vec<Pending> {
    let path = dir.join("wal").join(lane::segment_name(1, 0));
    let bytes = fs::read(&path).expect("lane 1");
    let header = SegmentHeader::decode(&bytes).expect("a header");
    let frame_len = |at: usize| match format::read_frame(&bytes[at..], header.seed()) {
        Frame::Valid(_, len) => len,
        _ => panic!("no frame at {at}"),
    };
    let y = header.len() + frame_len(header.len());
    let y_end = y + frame_len(y);
    let mut before = bytes.clone();
    before[y..y_end].fill(0);
    let change = FileChange::Written(y as u64, bytes[y..y_end].to_vec());
    vec![Pending {
        path,
        before: Some(before),
        change,
    }]
}

/// `t_safe` is 4 (lane 1), and records without writes above it stay: lane 0 is cut before its
/// put at 7, after its heartbeat at 6, where it ends; lane 2's segment 1 keeps a heartbeat, a
/// synced record and a checkpoint marker above `t_safe` and is cut before its put at 11, its
/// segment 2 deleted; lane 3 holds a lone heartbeat at 14 and is left alone. No cut needs a
/// heartbeat, so no note is written. Recovered: a, x, p, y.
fn lay_kept(dir: &Path) {
    let wal = dir.join("wal");
    fs::create_dir_all(&wal).expect("wal dir");
    let lane_0 = [
        Laid::Put(1, b"a"),
        Laid::Heartbeat(6),
        Laid::Put(7, b"b"),
        Laid::Put(9, b"c"),
    ];
    segment(&wal, 0, 0, 0, &lane_0);
    segment(&wal, 1, 0, 0, &[Laid::Put(2, b"x"), Laid::Put(4, b"y")]);
    segment(&wal, 2, 0, 0, &[Laid::Put(3, b"p")]);
    let lane_2 = [
        Laid::Heartbeat(5),
        Laid::Synced(8),
        Laid::Marker(10, 2, 8),
        Laid::Put(11, b"q"),
    ];
    segment(&wal, 2, 1, 3, &lane_2);
    segment(&wal, 2, 2, 11, &[Laid::Put(12, b"r")]);
    segment(&wal, 3, 0, 0, &[Laid::Heartbeat(14)]);
    checkpoint(dir, 0, 3, &["a", "x", "p"]);
}

/// The options of the pruning test's log: two lanes in segments of at most 200 bytes.
fn small_segments() -> Options {
    Options {
        lanes: 2,
        durability: Durability::Immediate,
        segment_bytes: 200,
        checkpoint_interval: None,
        ..Options::default()
    }
}

/// Writes `keys` to a log in `dir` with small segments, a checkpoint after the first half, and
/// closes it: each lane keeps several segments, which the next checkpoint covers, and the first
/// checkpoint is older than that one.
fn lay_pruning(dir: &Path, keys: &[&str]) {
    let (log, _) = Wal::open(dir, small_segments()).expect("open");
    let (first, second) = keys.split_at(keys.len() / 2);
    for key in first {
        log.put(0, key.as_bytes(), b"v", || ()).expect("a put");
    }
    log.checkpoint(|writer| scan(writer, first))
        .expect("a checkpoint");
    for key in second {
        log.put(0, key.as_bytes(), b"v", || ()).expect("a put");
    }
    log.close().expect("close");
}

/// What recovery may return: a prefix, in stamp order, of `keys` holding at least the first
/// `acknowledged` (all of them where the layout is durable).
struct Expected {
    keys: Vec<&'static str>,
    acknowledged: usize,
}

impl Expected {
    fn exactly(keys: &[&'static str]) -> Self {
        Self {
            keys: keys.to_vec(),
            acknowledged: keys.len(),
        }
    }

    /// Whether recovery may return `recovered`, or what it may return.
    fn allows(&self, recovered: &Keys) -> Result<(), String> {
        let prefix = |n: usize| {
            let mut prefix: Keys = self.keys[..n]
                .iter()
                .map(|key| key.as_bytes().to_vec())
                .collect();
            prefix.sort();
            prefix
        };
        if (self.acknowledged..=self.keys.len()).any(|n| &prefix(n) == recovered) {
            Ok(())
        } else if self.acknowledged == self.keys.len() {
            Err(format!(
                "recovered {}, expected {}",
                show(recovered),
                show(&prefix(self.keys.len()))
            ))
        } else {
            Err(format!(
                "recovered {}, not a prefix in stamp order of {:?} holding its first {}",
                show(recovered),
                self.keys,
                self.acknowledged
            ))
        }
    }
}

/// A log's files as a crashed process left them, and its changes not durable yet.
struct Layout {
    files: Files,
    pending: Vec<Pending>,
}

/// What a recovery or checkpoint stopped by a crash (or run whole) leaves.
struct Stopped {
    after: Layout,
    crashed: bool,
    /// The keys a whole recovery returned.
    returned: Option<Keys>,
    /// What happened, for the messages.
    how: String,
}

/// Explores the states that crashes and power losses leave of one log, in one directory, and
/// checks each distinct state once (many power losses leave the same files); it reopens the log
/// in each distinct state that recovery repairs them to.
struct Checker {
    name: &'static str,
    dir: TempDir,
    expected: Expected,
    /// The keys recovered from each state checked, by the hash of its files.
    checked: HashMap<u64, Keys>,
    /// The hashes of the repaired states the log was reopened in.
    reopened: HashSet<u64>,
}

impl Checker {
    fn new(name: &'static str, expected: Expected) -> Self {
        Self {
            name,
            dir: TempDir::new(name),
            expected,
            checked: HashMap::new(),
            reopened: HashSet::new(),
        }
    }

    fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Lays out a log with `lay`, every byte durable.
    fn layout(&self, lay: impl FnOnce(&Path)) -> Layout {
        lay(self.dir());
        Layout {
            files: files(self.dir()),
            pending: Vec::new(),
        }
    }

    fn fail(&self, how: &str, problem: &str) -> ! {
        panic!("{}: {how}:\n{problem}", self.name)
    }

    /// Explores `layout`: one recovery, two in a row, random walks from `seed`.
    fn explore_all(&mut self, layout: &Layout, seed: u64) {
        let ops = self.explore(layout, "");
        self.explore_twice(layout, ops);
        self.walk(layout, ops, seed);
        eprintln!("{}: {} states checked", self.name, self.checked.len());
    }

    /// Runs a recovery of `layout`, after `before` (for the messages), stopped before its
    /// operation `ops` unless it makes fewer.
    fn recover_until(&self, layout: &Layout, ops: usize, before: &str) -> Stopped {
        let dir = self.dir();
        restore(dir, &layout.files);
        let mut machine = Machine {
            pending: layout.pending.clone(),
            ..Machine::crashing_after(ops)
        };
        let outcome = machine.run(|| recover(dir, &dir.join("wal"), false, true));
        let how = if machine.crashed {
            format!("{before}a recovery stopped before its operation {ops}")
        } else {
            format!("{before}a whole recovery ({ops} operations)")
        };
        let returned = match outcome {
            Ok(recovered) => Some(keys_of(&recovered.recovery)),
            Err(_) if machine.crashed => None,
            Err(e) => self.fail(&how, &format!("recovery failed: {e}")),
        };
        Stopped {
            after: Layout {
                files: files(dir),
                pending: machine.pending,
            },
            crashed: machine.crashed,
            returned,
            how,
        }
    }

    /// Stops a recovery of `layout` (after `before`) at each of its operations in turn, and
    /// checks every state a power loss then leaves, until a recovery runs whole. Returns how
    /// many operations that one makes.
    fn explore(&mut self, layout: &Layout, before: &str) -> usize {
        for ops in 0.. {
            let stopped = self.recover_until(layout, ops, before);
            self.after_power_losses(&stopped);
            if !stopped.crashed {
                return ops;
            }
        }
        unreachable!("a recovery makes finitely many operations")
    }

    /// Two recoveries of `layout`, whose whole recovery makes `ops` operations: the first
    /// stopped at each of them in turn, without a power loss (its changes stay pending), the
    /// second explored.
    fn explore_twice(&mut self, layout: &Layout, ops: usize) {
        for first in 0..ops {
            let stopped = self.recover_until(layout, first, "");
            self.explore(&stopped.after, &format!("{}, ", stopped.how));
        }
    }

    /// Checks each state that a power loss keeping some of the pending changes (all of them:
    /// no power loss) leaves after `stopped`.
    fn after_power_losses(&mut self, stopped: &Stopped) {
        let pending = &stopped.after.pending;
        if pending.len() > MAX_PENDING {
            self.fail(&stopped.how, &format!("{} changes pending", pending.len()));
        }
        for kept in 0..1u64 << pending.len() {
            restore(self.dir(), &stopped.after.files);
            lose_power(pending, kept);
            let how = format!(
                "{}, then {}",
                stopped.how,
                power_loss(self.dir(), pending, kept)
            );
            self.check(&how, stopped.returned.as_ref());
        }
    }

    /// `WALKS` random walks (module docs) from `layout`, whose whole recovery makes `ops`
    /// operations, with the random numbers of `seed`.
    fn walk(&mut self, layout: &Layout, ops: usize, seed: u64) {
        let dir = self.dir().to_owned();
        let wal = dir.join("wal");
        let mut rng = SmallRng::seed_from_u64(seed);
        for walk in 0..WALKS {
            restore(&dir, &layout.files);
            let mut machine = Machine {
                pending: layout.pending.clone(),
                ..Machine::default()
            };
            let mut returned: Option<Keys> = None;
            let mut steps = vec![format!("walk {walk} of seed {seed:#x}")];
            for _ in 0..rng.random_range(1..=4) {
                let read_only = rng.random_bool(0.1);
                let crash = if read_only || rng.random_bool(0.1) {
                    None
                } else {
                    Some(rng.random_range(0..ops))
                };
                machine.ops_before_crash = crash;
                machine.crashed = false;
                let outcome = machine.run(|| recover(&dir, &wal, false, !read_only));
                steps.push(match crash {
                    _ if read_only => "a read-only recovery".to_owned(),
                    Some(ops) if machine.crashed => {
                        format!("a recovery stopped before its operation {ops}")
                    }
                    _ => "a whole recovery".to_owned(),
                });
                match outcome {
                    Err(_) if machine.crashed => {}
                    Err(e) => self.fail(&steps.join(", "), &format!("recovery failed: {e}")),
                    Ok(recovered) => {
                        let keys = keys_of(&recovered.recovery);
                        let earlier = returned.as_ref().filter(|earlier| *earlier != &keys);
                        let problem = match earlier {
                            Some(earlier) => Err(format!(
                                "recovered {}, where an earlier recovery returned {}",
                                show(&keys),
                                show(earlier)
                            )),
                            None => self.expected.allows(&keys),
                        };
                        if let Err(problem) = problem {
                            self.fail(&steps.join(", "), &problem);
                        }
                        if !read_only {
                            returned = Some(keys);
                        }
                    }
                }
                if rng.random_bool(0.5) {
                    let kept = rng.random_range(0..1u64 << machine.pending.len());
                    steps.push(power_loss(&dir, &machine.pending, kept));
                    lose_power(&machine.pending, kept);
                    machine.pending.clear();
                }
            }
            self.check(&steps.join(", "), returned.as_ref());
        }
    }

    /// Reopens the log laid out as `base` (holding `keys`) and runs a checkpoint, stopped at
    /// each of its operations in turn (the last run is whole), the log then stopped as by a
    /// crash: the checkpoint's rename and directory fsync, the older checkpoint's removal,
    /// each covered segment's removal and the directory fsync after it, the final fsyncs.
    /// Checks every state a power loss then leaves, and explores a recovery of each.
    fn prune(&mut self, base: &Files, keys: &[&str]) {
        let dir = self.dir().to_owned();
        for ops in 0.. {
            restore(&dir, base);
            let (log, _) = Wal::open(&dir, small_segments()).expect("open");
            let mut machine = Machine::crashing_after(ops);
            let outcome = machine.run(|| log.checkpoint(|writer| scan(writer, keys)));
            log.simulate_crash();
            let how = if machine.crashed {
                format!("a checkpoint stopped before its operation {ops}")
            } else {
                format!("a whole checkpoint ({ops} operations)")
            };
            match outcome {
                Err(_) if machine.crashed => {}
                Err(e) => self.fail(&how, &format!("checkpoint failed: {e}")),
                Ok(stats) if stats.segments_deleted < 4 => {
                    let deleted = stats.segments_deleted;
                    self.fail(
                        &how,
                        &format!("only {deleted} segments deleted: nothing to test"),
                    );
                }
                Ok(_) => {}
            }
            let stopped = Stopped {
                after: Layout {
                    files: files(&dir),
                    pending: machine.pending,
                },
                crashed: machine.crashed,
                returned: None,
                how,
            };
            self.after_power_losses(&stopped);
            self.explore(&stopped.after, &format!("{}, ", stopped.how));
            if !stopped.crashed {
                eprintln!("{}: {} states checked", self.name, self.checked.len());
                return;
            }
        }
    }

    /// Checks the state in the directory, which `how` describes, given the keys that a whole
    /// recovery of an earlier state on the way there `returned`.
    fn check(&mut self, how: &str, returned: Option<&Keys>) {
        let state = files(self.dir());
        let hash = hash_of(&state);
        let keys = match self.checked.get(&hash) {
            Some(keys) => keys.clone(),
            None => {
                let keys = self
                    .recover_and_reopen(&state)
                    .unwrap_or_else(|problem| self.fail(how, &problem));
                self.checked.insert(hash, keys.clone());
                keys
            }
        };
        if let Some(returned) = returned
            && returned != &keys
        {
            let problem = format!(
                "recovered {}, where an earlier recovery returned {}",
                show(&keys),
                show(returned)
            );
            self.fail(how, &problem);
        }
    }

    /// Recovers `state`, the one in the directory, read only, then twice with repairs, then
    /// opens the log, writes and reopens it: the checks of the module docs.
    fn recover_and_reopen(&mut self, state: &Files) -> Result<Keys, String> {
        let dir = self.dir().to_owned();
        let wal = dir.join("wal");
        let mut changing_nothing = Machine::crashing_after(0);
        let read_only = changing_nothing
            .run(|| recover(&dir, &wal, false, false))
            .map_err(|e| format!("read-only recovery failed: {e}"))?;
        let keys = keys_of(&read_only.recovery);
        let repaired =
            recover(&dir, &wal, false, true).map_err(|e| format!("recovery failed: {e}"))?;
        if keys_of(&repaired.recovery) != keys {
            return Err(format!(
                "recovery returned {}, read-only recovery {}",
                show(&keys_of(&repaired.recovery)),
                show(&keys)
            ));
        }
        self.expected.allows(&keys)?;
        let after = files(&dir);
        check_repaired(&repaired, state, &after)?;
        let again = recover(&dir, &wal, false, true)
            .map_err(|e| format!("a second recovery failed: {e}"))?;
        if keys_of(&again.recovery) != keys {
            let again = show(&keys_of(&again.recovery));
            return Err(format!(
                "a second recovery returned {again}, the first {}",
                show(&keys)
            ));
        }
        let changed = changed_files(&after, &files(&dir));
        if !changed.is_empty() {
            return Err(format!("a second recovery changed {changed:?}"));
        }
        if self.reopened.insert(hash_of(&after)) {
            reopen_and_write(&dir, &keys)?;
        }
        Ok(keys)
    }
}

/// The checks of `after`, a state that `repaired` repaired from `state`: no checkpoint above
/// `t_safe`, no cut note, and the clock above every stamp in either.
fn check_repaired(repaired: &Recovered, state: &Files, after: &Files) -> Result<(), String> {
    let t_safe = repaired.recovery.stats.t_safe.unwrap_or(u64::MAX);
    for path in after.keys() {
        let name = path
            .file_name()
            .map_or_else(String::new, |name| name.to_string_lossy().into_owned());
        if checkpoint::parse_checkpoint_name(&name).is_some_and(|t_end| t_end > t_safe) {
            return Err(format!("{} is left, above t_safe {t_safe}", path.display()));
        }
        if name.starts_with("recovery-cuts") {
            return Err(format!("{} outlives a whole recovery", path.display()));
        }
    }
    let highest = highest_stamp(state).max(highest_stamp(after));
    if repaired.clock <= highest {
        return Err(format!(
            "the clock restarts at {}, not above stamp {highest}",
            repaired.clock
        ));
    }
    Ok(())
}

/// Opens the log in `dir`, whose recovery gives `keys`, puts a key, closes it and reopens it.
fn reopen_and_write(dir: &Path, keys: &Keys) -> Result<(), String> {
    let options = Options {
        lanes: 1,
        durability: Durability::Immediate,
        checkpoint_interval: None,
        ..Options::default()
    };
    let (log, recovery) =
        Wal::open(dir, options.clone()).map_err(|e| format!("open failed: {e}"))?;
    if &keys_of(&recovery) != keys {
        return Err(format!("the log opened with {}", show(&keys_of(&recovery))));
    }
    log.put(0, NEW_KEY, b"v", || ())
        .map_err(|e| format!("a put failed: {e}"))?;
    log.close().map_err(|e| format!("close failed: {e}"))?;
    let (log, recovery) = Wal::open(dir, options).map_err(|e| format!("reopening failed: {e}"))?;
    let mut expected = keys.clone();
    expected.push(NEW_KEY.to_vec());
    expected.sort();
    if keys_of(&recovery) != expected {
        return Err(format!(
            "the log reopened with {}",
            show(&keys_of(&recovery))
        ));
    }
    log.close()
        .map_err(|e| format!("closing again failed: {e}"))
}

/// The highest stamp in `files`: of a segment header, of a valid record before its segment's
/// first bad frame, or of a checkpoint's end.
fn highest_stamp(files: &Files) -> u64 {
    let mut highest = 0;
    for (path, bytes) in files {
        let name = path
            .file_name()
            .and_then(|name| name.to_str())
            .unwrap_or_default();
        if let Some(t_end) = checkpoint::parse_checkpoint_name(name) {
            highest = highest.max(t_end);
        }
        if segment_id(path).is_none() {
            continue;
        }
        let Ok(header) = SegmentHeader::decode(bytes) else {
            continue;
        };
        highest = highest.max(header.prev_last_ts);
        let mut at = header.len();
        while let Frame::Valid(payload, len) = format::read_frame(&bytes[at..], header.seed()) {
            let record = format::decode_record(payload).expect("a valid frame holds a record");
            highest = highest.max(record.ts());
            at += len;
        }
    }
    highest
}

fn keys_of(recovery: &Recovery) -> Keys {
    recovery.iter().map(|(_, key, _)| key.to_vec()).collect()
}

fn show(keys: &Keys) -> String {
    let keys: Vec<_> = keys
        .iter()
        .map(|key| String::from_utf8_lossy(key))
        .collect();
    format!("[{}]", keys.join(", "))
}

/// The files under `dir`.
fn files(dir: &Path) -> Files {
    let mut files = Files::new();
    let mut dirs = vec![dir.to_owned()];
    while let Some(at) = dirs.pop() {
        for entry in fs::read_dir(&at).expect("a directory") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                let bytes = fs::read(&path).expect("a file");
                files.insert(path.strip_prefix(dir).expect("under dir").to_owned(), bytes);
            }
        }
    }
    files
}

/// Makes `dir` hold `files`, a `wal` directory, and nothing else.
fn restore(dir: &Path, files: &Files) {
    for entry in fs::read_dir(dir).expect("a directory") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            fs::remove_dir_all(&path).expect("clear");
        } else {
            fs::remove_file(&path).expect("clear");
        }
    }
    fs::create_dir_all(dir.join("wal")).expect("wal dir");
    for (path, bytes) in files {
        fs::write(dir.join(path), bytes).expect("restore");
    }
}

fn hash_of(files: &Files) -> u64 {
    let mut hasher = DefaultHasher::new();
    files.hash(&mut hasher);
    hasher.finish()
}

/// The paths whose files differ between `before` and `after`.
fn changed_files(before: &Files, after: &Files) -> Vec<PathBuf> {
    let paths: HashSet<&PathBuf> = before.keys().chain(after.keys()).collect();
    let mut changed: Vec<PathBuf> = paths
        .into_iter()
        .filter(|path| before.get(*path) != after.get(*path))
        .cloned()
        .collect();
    changed.sort();
    changed
}

/// Leaves the files as a power loss does that keeps the `pending` changes whose bits are set in
/// `kept` and loses the others (module docs).
fn lose_power(pending: &[Pending], kept: u64) {
    let mut paths: Vec<&Path> = Vec::new();
    for change in pending {
        if !paths.contains(&change.path.as_path()) {
            paths.push(&change.path);
        }
    }
    for path in paths {
        let mut changes = pending
            .iter()
            .enumerate()
            .filter(|(_, change)| change.path == path)
            .peekable();
        let mut content = changes.peek().and_then(|(_, first)| first.before.clone());
        for (i, change) in changes {
            if kept >> i & 1 == 1 {
                replay(&mut content, &change.change);
            }
        }
        match content {
            Some(bytes) => fs::write(path, bytes).expect("a file kept"),
            None => {
                if let Err(e) = fs::remove_file(path) {
                    assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "a file lost: {e}");
                }
            }
        }
    }
}

/// Makes `change` to a file that holds `content` (`None`: it does not exist).
fn replay(content: &mut Option<Vec<u8>>, change: &FileChange) {
    match change {
        FileChange::Removed => *content = None,
        FileChange::Replaced(bytes) => *content = Some(bytes.clone()),
        FileChange::SetLen(len) => {
            if let Some(bytes) = content {
                bytes.resize(*len as usize, 0);
            }
        }
        FileChange::Written(at, data) => {
            if let Some(bytes) = content {
                let (at, end) = (*at as usize, *at as usize + data.len());
                bytes.resize(bytes.len().max(end), 0);
                bytes[at..end].copy_from_slice(data);
            }
        }
    }
}

/// Describes the power loss that keeps the `pending` changes whose bits are set in `kept`.
fn power_loss(dir: &Path, pending: &[Pending], kept: u64) -> String {
    if pending.is_empty() {
        return "nothing pending".to_owned();
    }
    let describe = |keep: bool| -> Vec<String> {
        let chosen = pending
            .iter()
            .enumerate()
            .filter(|(i, _)| (kept >> i & 1 == 1) == keep);
        chosen.map(|(_, change)| describe(dir, change)).collect()
    };
    format!(
        "a power loss that kept {:?} and lost {:?}",
        describe(true),
        describe(false)
    )
}

fn describe(dir: &Path, pending: &Pending) -> String {
    let file = pending
        .path
        .strip_prefix(dir)
        .unwrap_or(&pending.path)
        .display();
    match &pending.change {
        FileChange::Removed => format!("{file} removed"),
        FileChange::Replaced(bytes) => format!("{file} created ({} bytes)", bytes.len()),
        FileChange::SetLen(len) => format!("{file} cut to {len} bytes"),
        FileChange::Written(at, bytes) => {
            format!("{} bytes written to {file} at {at}", bytes.len())
        }
    }
}

#[test]
fn cuts_with_heartbeats_survive_crashes_and_power_losses() {
    let mut checker = Checker::new("power-loss-cuts", Expected::exactly(&["a", "x", "p", "y"]));
    let layout = checker.layout(lay_cuts);
    checker.explore_all(&layout, 0x9e37_79b9);
}

#[test]
fn an_unsynced_record_is_lost_only_with_the_writes_after_it() {
    let expected = Expected {
        keys: vec!["a", "x", "p", "y"],
        acknowledged: 2,
    };
    let mut checker = Checker::new("power-loss-unsynced", expected);
    let mut layout = checker.layout(lay_cuts);
    layout.pending = unsynced_in_cuts(checker.dir());
    checker.explore_all(&layout, 0xabcd_ef01);
}

#[test]
fn heartbeats_above_t_safe_stay_through_crashes_and_power_losses() {
    let mut checker = Checker::new("power-loss-kept", Expected::exactly(&["a", "x", "p", "y"]));
    let layout = checker.layout(lay_kept);
    checker.explore_all(&layout, 0x51);
}

#[test]
fn checkpoint_pruning_survives_crashes_and_power_losses() {
    const KEYS: [&str; 12] = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"];
    let mut checker = Checker::new("power-loss-pruning", Expected::exactly(&KEYS));
    let base = checker.layout(|dir| lay_pruning(dir, &KEYS));
    checker.prune(&base.files, &KEYS);
}
