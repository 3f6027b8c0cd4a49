//! `engine`: learnkv's embedded database next to the embedded stores a user would pick instead
//! (redb, heed/LMDB, fjall, sled), in the shape of redb's own benchmark (`lmdb_benchmark`):
//! random 24-byte keys, 150-byte values, `--keys` records. The `oracle` row, pairs in a `std`
//! `HashMap` and `BTreeMap` in memory, is the limit of the same loops (DESIGN.md, Benchmarks):
//! not a peer, so not in the targets.
//!
//! Each run of each store is one pipeline in a fresh directory under `target/repro/engine-tmp/`, in
//! redb's order: bulk load of every record (random order), [`DURABLE_WRITES`] individual durable
//! writes, [`BATCHES`] durable batches of [`BATCH_LEN`] writes (new keys each), random gets of
//! loaded keys (`--keys` of them per thread count, split over the threads, after one untimed get of
//! every loaded key that warms every store's caches alike), the same gets [`GET_MANY_BATCH`] keys
//! per call (`get-many`: learnkv's batched read, the others' loops; not in redb's benchmark), range
//! reads of [`RANGE_LEN`] pairs from random loaded keys (`--keys / 2`), the same read downward
//! (`range-rev`, not in redb's benchmark), and removals of half the loaded keys in one batch or
//! transaction. Sizes on disk (allocated blocks) after the load and after the removals go into the
//! notes. Between the load and the other workloads, untimed, each store does what it would
//! otherwise do during them (`KvStore::after_load`: learnkv checkpoints and reopens, fjall waits
//! for its flushes and compactions). The whole loop of a workload is timed, as redb's benchmark
//! does; only durable writes and batches, slow enough for a clock read not to matter, are also
//! timed one by one (the latency columns; zero elsewhere). A store's runs follow each other, and
//! the stores go in `STORES` order with sled last: a store's leftovers outlive its handle (sled
//! 0.34 keeps its I/O threads and gigabytes of cache after the drop), and with runs interleaved
//! over the stores they slowed every store of the next round (learnkv's removals 6×, its batches up
//! to 10×). Each store module (`crate::stores`) says which calls it makes.

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use rand::rngs::Xoshiro256PlusPlus;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use workload::report::Record;

use super::Outcome;
use crate::args::{Experiment, GET_MANY_BATCH, KvWorkload, Options};
use crate::error::Error;
use crate::measure::run_seed;
use crate::output::target_dir;
use crate::plot::Metric;
use crate::stores::{self, KvStore, Notes, Pair, STORES, StoreEntry, disk_bytes};

/// Key length in bytes.
pub const KEY_LEN: usize = 24;
/// Value length in bytes.
pub const VALUE_LEN: usize = 150;
/// Individual durable writes.
pub const DURABLE_WRITES: usize = 1_000;
/// Durable batches.
pub const BATCHES: usize = 100;
/// Writes per batch.
pub const BATCH_LEN: usize = 1_000;
/// Pairs per range read.
pub const RANGE_LEN: usize = 10;

/// The `dataset` column.
const DATASET: &str = "random-24B-150B";

/// The store that the targets are about.
const OURS: &str = "learnkv";
/// The in-memory limit: reported like a store, left out of the targets.
const ORACLE: &str = "oracle";

/// The records: `n` random keys and values, in two flat buffers, each pair derived from the
/// seed and its index by [`Records::derive`].
struct Records {
    seed: u64,
    keys: Vec<u8>,
    values: Vec<u8>,
}

impl Records {
    /// `n` records drawn from `seed`. Random 24-byte keys are distinct in practice (a collision
    /// among 10^9 keys has probability below 10^-39).
    fn generate(n: usize, seed: u64) -> Self {
        let mut keys = vec![0; n * KEY_LEN];
        let mut values = vec![0; n * VALUE_LEN];
        for (i, (key, value)) in keys
            .chunks_exact_mut(KEY_LEN)
            .zip(values.chunks_exact_mut(VALUE_LEN))
            .enumerate()
        {
            let (k, v) = Self::derive(seed, i);
            key.copy_from_slice(&k);
            value.copy_from_slice(&v);
        }
        Self { seed, keys, values }
    }

    /// Record `i` of the records drawn from `seed`: a SplitMix64 stream started from the seed
    /// and the index, its first words the key's bytes, the next the value's. The read loops
    /// derive each pair again, as redb's benchmark regenerates its pairs from its random
    /// generator, instead of reading it from the buffers: a get then costs the loop a few
    /// nanoseconds of arithmetic, not cache misses of its own on top of the store's.
    #[inline]
    fn derive(seed: u64, i: usize) -> ([u8; KEY_LEN], [u8; VALUE_LEN]) {
        const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;
        let start = seed ^ (i as u64).wrapping_mul(0xd1b5_4a32_d192_ed03);
        let word = |n: usize| {
            let mut z = start.wrapping_add(GAMMA.wrapping_mul(n as u64 + 1));
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (z ^ (z >> 31)).to_le_bytes()
        };
        let mut key = [0; KEY_LEN];
        for (n, chunk) in key.chunks_mut(8).enumerate() {
            chunk.copy_from_slice(&word(n)[..chunk.len()]);
        }
        let mut value = [0; VALUE_LEN];
        for (n, chunk) in value.chunks_mut(8).enumerate() {
            chunk.copy_from_slice(&word(KEY_LEN.div_ceil(8) + n)[..chunk.len()]);
        }
        (key, value)
    }

    /// Record `i`, derived again (see [`Records::derive`]).
    #[inline]
    fn derived(&self, i: usize) -> ([u8; KEY_LEN], [u8; VALUE_LEN]) {
        Self::derive(self.seed, i)
    }

    fn key(&self, i: usize) -> &[u8] {
        &self.keys[i * KEY_LEN..(i + 1) * KEY_LEN]
    }

    fn value(&self, i: usize) -> &[u8] {
        &self.values[i * VALUE_LEN..(i + 1) * VALUE_LEN]
    }

    fn pairs(&self, range: std::ops::Range<usize>) -> Vec<Pair<'_>> {
        range.map(|i| (self.key(i), self.value(i))).collect()
    }
}

/// What one run of a workload measured.
struct Measured {
    threads: usize,
    ops: u64,
    elapsed: Duration,
    /// Per-operation (or per-batch) latencies in ns, when timed one by one.
    latencies: Vec<u64>,
    notes: Notes,
}

impl Measured {
    fn whole(threads: usize, ops: usize, elapsed: Duration, notes: Notes) -> Self {
        Self {
            threads,
            ops: ops as u64,
            elapsed,
            latencies: Vec::new(),
            notes,
        }
    }
}

/// The inputs every pipeline shares.
struct Plan<'a> {
    records: &'a Records,
    loaded: usize,
    workloads: &'a [KvWorkload],
    threads: &'a [usize],
    seed: u64,
}

/// Runs the experiment.
pub fn run(options: &Options) -> Result<Outcome, Error> {
    let stores = select(options)?;
    let loaded = options.keys();
    let total = loaded + DURABLE_WRITES + BATCHES * BATCH_LEN;
    eprintln!(
        "engine: {loaded} records loaded ({KEY_LEN}-byte keys, {VALUE_LEN}-byte values), \
         {DURABLE_WRITES} durable writes, {BATCHES} batches of {BATCH_LEN}"
    );
    let records = Records::generate(total, options.seed);
    let plan = Plan {
        records: &records,
        loaded,
        workloads: &options.kv_workloads,
        threads: &options.threads,
        seed: options.seed,
    };
    let mut runs: Vec<Record> = Vec::new();
    for store in &stores {
        for run in 0..options.runs {
            for (workload, measured) in pipeline(&plan, store, run)? {
                let record = record(workload, store.name, loaded, measured);
                eprintln!(
                    "  engine | {} | {} threads | run {}/{} | {:<8} {:>12.1} Kops/s  {:.3} s",
                    record.workload,
                    record.threads,
                    run + 1,
                    options.runs,
                    record.index,
                    record.mops * 1e3,
                    record.seconds,
                );
                runs.push(record);
            }
        }
    }
    let records = medians(&runs);
    let remarks = remarks(&records);
    Ok(Outcome {
        experiment: Experiment::Engine,
        records,
        runs,
        remarks,
        timelines: Vec::new(),
        metrics: vec![Metric::Mops],
    })
}

/// The stores `--index` names (each must be a store), or all of them, in `STORES` order.
fn select(options: &Options) -> Result<Vec<&'static StoreEntry>, Error> {
    let Some(names) = &options.index else {
        return Ok(STORES.iter().collect());
    };
    let mut stores = names
        .iter()
        .map(|name| {
            stores::find(name).ok_or_else(|| {
                Error::usage(format!(
                    "--index: {name} does not fit engine (embedded stores); it takes {}",
                    STORES
                        .iter()
                        .map(|store| store.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    stores.sort_by_key(|store| STORES.iter().position(|entry| entry.name == store.name));
    Ok(stores)
}

/// A fresh directory for one pipeline.
fn fresh_dir(store: &str, run: usize) -> Result<PathBuf, Error> {
    let dir = target_dir()
        .join("repro")
        .join("engine-tmp")
        .join(format!("{}-{run}-{store}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)
        .map_err(|e| Error::failed(format!("creating {}: {e}", dir.display())))?;
    Ok(dir)
}

/// One store's run: every selected workload in order, in a fresh directory removed afterwards.
fn pipeline(
    plan: &Plan<'_>,
    entry: &StoreEntry,
    run: usize,
) -> Result<Vec<(KvWorkload, Measured)>, Error> {
    let dir = fresh_dir(entry.name, run)?;
    let fail = |error: String| Error::failed(format!("{}: {error}", entry.name));
    let mut store = (entry.open)(&dir).map_err(fail)?;
    let measured = workloads(plan, &mut *store, &dir, run).map_err(fail);
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
    measured
}

/// Megabytes, for the notes.
fn mib(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / (1 << 20) as f64)
}

/// The random order in which the bulk load writes the loaded records and removals pick them.
fn shuffled(n: usize, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut Xoshiro256PlusPlus::seed_from_u64(seed));
    order
}

fn workloads(
    plan: &Plan<'_>,
    store: &mut dyn KvStore,
    dir: &std::path::Path,
    run: usize,
) -> Result<Vec<(KvWorkload, Measured)>, String> {
    let records = plan.records;
    let loaded = plan.loaded;
    let seed = run_seed(plan.seed, run);
    let wants = |workload| plan.workloads.contains(&workload);
    let mut out = Vec::new();

    let order = shuffled(loaded, seed);
    let load: Vec<Pair<'_>> = order
        .iter()
        .map(|&i| (records.key(i), records.value(i)))
        .collect();
    let start = Instant::now();
    store.bulk_load(&load)?;
    let elapsed = start.elapsed();
    drop(load);
    let mut notes = store.notes();
    notes.extend(store.after_load()?);
    notes.push(("disk_mib_loaded".into(), mib(disk_bytes(dir)?)));
    if wants(KvWorkload::Bulk) {
        out.push((KvWorkload::Bulk, Measured::whole(1, loaded, elapsed, notes)));
    }

    if wants(KvWorkload::Durable) {
        let mut latencies = Vec::with_capacity(DURABLE_WRITES);
        let start = Instant::now();
        for i in loaded..loaded + DURABLE_WRITES {
            let began = Instant::now();
            store.put_durable(records.key(i), records.value(i))?;
            latencies.push(began.elapsed().as_nanos() as u64);
        }
        out.push((
            KvWorkload::Durable,
            Measured {
                threads: 1,
                ops: DURABLE_WRITES as u64,
                elapsed: start.elapsed(),
                latencies,
                notes: Notes::new(),
            },
        ));
    }

    if wants(KvWorkload::Batch) {
        let first = loaded + DURABLE_WRITES;
        let batches: Vec<Vec<Pair<'_>>> = (0..BATCHES)
            .map(|b| records.pairs(first + b * BATCH_LEN..first + (b + 1) * BATCH_LEN))
            .collect();
        let mut latencies = Vec::with_capacity(BATCHES);
        let start = Instant::now();
        for batch in &batches {
            let began = Instant::now();
            store.put_batch_durable(batch)?;
            latencies.push(began.elapsed().as_nanos() as u64);
        }
        out.push((
            KvWorkload::Batch,
            Measured {
                threads: 1,
                ops: (BATCHES * BATCH_LEN) as u64,
                elapsed: start.elapsed(),
                latencies,
                notes: vec![("latency".into(), format!("per batch of {BATCH_LEN} writes"))],
            },
        ));
    }

    let reads = [
        KvWorkload::Get,
        KvWorkload::GetMany,
        KvWorkload::Range,
        KvWorkload::RangeRev,
    ];
    if reads.into_iter().any(wants) {
        warm_up(store, plan)?;
    }

    for (workload, batch) in [(KvWorkload::Get, 1), (KvWorkload::GetMany, GET_MANY_BATCH)] {
        if wants(workload) {
            for &threads in plan.threads {
                out.push((workload, gets(store, plan, threads, batch, seed)?));
            }
        }
    }

    for (workload, descending) in [(KvWorkload::Range, false), (KvWorkload::RangeRev, true)] {
        if wants(workload) {
            for &threads in plan.threads {
                out.push((workload, ranges(store, plan, threads, descending, seed)?));
            }
        }
    }

    if wants(KvWorkload::Remove) {
        let removed: Vec<&[u8]> = order[..loaded / 2]
            .iter()
            .map(|&i| records.key(i))
            .collect();
        let start = Instant::now();
        store.remove_all(&removed)?;
        let elapsed = start.elapsed();
        let notes = vec![("disk_mib_removed".into(), mib(disk_bytes(dir)?))];
        out.push((
            KvWorkload::Remove,
            Measured::whole(1, removed.len(), elapsed, notes),
        ));
    }
    Ok(out)
}

/// Per thread, `count / threads` random indices below `below`, from the thread's own stream.
fn draws(count: usize, below: usize, threads: usize, seed: u64) -> Vec<Vec<usize>> {
    (0..threads)
        .map(|thread| {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ (thread as u64 + 1) << 40);
            (0..count / threads)
                .map(|_| rng.random_range(0..below))
                .collect()
        })
        .collect()
}

/// Runs `work` on `threads` threads, each with its own reader and its own draws, all starting
/// together; the wall-clock time from the first thread's start to the last thread's end, and
/// each thread's result.
fn timed_threads<T: Send>(
    store: &dyn KvStore,
    draws: &[Vec<usize>],
    work: impl Fn(&mut dyn stores::KvReader, &[usize]) -> Result<T, String> + Sync,
) -> Result<(Duration, Vec<T>), String> {
    let barrier = Barrier::new(draws.len());
    std::thread::scope(|scope| {
        let handles: Vec<_> = draws
            .iter()
            .map(|mine| {
                let (barrier, work) = (&barrier, &work);
                scope.spawn(move || {
                    let reader = store.reader();
                    barrier.wait();
                    // Each thread clocks its own loop: a clock read by the spawning thread
                    // after the barrier could come late (two readers on two cores leave it
                    // waiting for one), and the loop would look faster than it ran.
                    let began = Instant::now();
                    let mut reader = reader?;
                    let result = work(&mut *reader, mine)?;
                    Ok((result, began, Instant::now()))
                })
            })
            .collect();
        let results = handles
            .into_iter()
            .map(|handle| handle.join().expect("a reading thread panicked"))
            .collect::<Result<Vec<(T, Instant, Instant)>, String>>()?;
        let began = results.iter().map(|&(_, began, _)| began).min();
        let ended = results.iter().map(|&(_, _, ended)| ended).max();
        let elapsed = match (began, ended) {
            (Some(began), Some(ended)) => ended - began,
            _ => Duration::ZERO,
        };
        Ok((
            elapsed,
            results.into_iter().map(|(result, ..)| result).collect(),
        ))
    })
}

/// Untimed, before the first timed read: one get of every loaded record, in order, on one
/// thread, so that no store's first timed pass pays for a cold cache, unmapped pages or pages
/// its writes left to the page cache that the next pass finds warm.
fn warm_up(store: &dyn KvStore, plan: &Plan<'_>) -> Result<(), String> {
    let mut reader = store.reader()?;
    for i in 0..plan.loaded {
        let (key, value) = plan.records.derived(i);
        if !reader.get(&key, &value)? {
            return Err(format!("record {i} did not read back before the gets"));
        }
    }
    Ok(())
}

/// Random gets of loaded keys, each value compared with the one loaded.
fn gets(
    store: &dyn KvStore,
    plan: &Plan<'_>,
    threads: usize,
    batch: usize,
    seed: u64,
) -> Result<Measured, String> {
    let records = plan.records;
    let draws = draws(plan.loaded, plan.loaded, threads, seed ^ 0x6e75);
    let (elapsed, found) = timed_threads(store, &draws, |reader, mine| {
        let mut found = 0usize;
        if batch == 1 {
            for &i in mine {
                let (key, value) = records.derived(i);
                found += usize::from(reader.get(&key, &value)?);
            }
            return Ok(found);
        }
        for chunk in mine.chunks(batch) {
            let pairs: Vec<_> = chunk.iter().map(|&i| records.derived(i)).collect();
            let keys: Vec<&[u8]> = pairs.iter().map(|(key, _)| &key[..]).collect();
            let values: Vec<&[u8]> = pairs.iter().map(|(_, value)| &value[..]).collect();
            found += reader.get_many(&keys, &values)?;
        }
        Ok(found)
    })?;
    let ops: usize = draws.iter().map(Vec::len).sum();
    let found: usize = found.into_iter().sum();
    if found != ops {
        return Err(format!(
            "{} of {ops} gets did not return the loaded value",
            ops - found
        ));
    }
    Ok(Measured::whole(threads, ops, elapsed, Notes::new()))
}

/// Range reads of [`RANGE_LEN`] pairs from random loaded keys, upward or `descending`.
fn ranges(
    store: &dyn KvStore,
    plan: &Plan<'_>,
    threads: usize,
    descending: bool,
    seed: u64,
) -> Result<Measured, String> {
    let records = plan.records;
    let draws = draws(plan.loaded / 2, plan.loaded, threads, seed ^ 0x7261);
    let (elapsed, read) = timed_threads(store, &draws, |reader, mine| {
        let (mut read, mut checksum) = (0usize, 0u64);
        for &i in mine {
            let start = records.derived(i).0;
            read += reader.range(&start, RANGE_LEN, descending, &mut checksum)?;
        }
        black_box(checksum);
        Ok(read)
    })?;
    let ops: usize = draws.iter().map(Vec::len).sum();
    let read: usize = read.into_iter().sum();
    Ok(Measured::whole(
        threads,
        ops,
        elapsed,
        vec![("scanned".into(), read.to_string())],
    ))
}

/// The value at quantile `q` of sorted `values` (0 when empty).
fn quantile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// The report row of one run of one workload.
fn record(workload: KvWorkload, store: &str, loaded: usize, measured: Measured) -> Record {
    let seconds = measured.elapsed.as_secs_f64();
    let mut latencies = measured.latencies;
    latencies.sort_unstable();
    let mops = measured.ops as f64 / seconds.max(1e-9) / 1e6;
    let mut record = Record {
        experiment: Experiment::Engine.name().to_owned(),
        workload: workload.name().to_owned(),
        dataset: DATASET.to_owned(),
        index: store.to_owned(),
        threads: measured.threads,
        keys: loaded as u64,
        ops: measured.ops,
        seconds,
        mops,
        p50_ns: quantile(&latencies, 0.5),
        p99_ns: quantile(&latencies, 0.99),
        p999_ns: quantile(&latencies, 0.999),
        max_ns: latencies.last().copied().unwrap_or(0),
        notes: Vec::new(),
    }
    .note("kops_s", format!("{:.1}", mops * 1e3));
    for (key, value) in measured.notes {
        record = record.note(key, value);
    }
    record
}

/// The median run of every (workload, store, threads), by throughput, with every run's
/// throughput in its notes, in the order the runs first produced them.
fn medians(runs: &[Record]) -> Vec<Record> {
    let mut keys: Vec<(&str, &str, usize)> = Vec::new();
    for record in runs {
        let key = (
            record.workload.as_str(),
            record.index.as_str(),
            record.threads,
        );
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys.into_iter()
        .map(|(workload, index, threads)| {
            let mut mine: Vec<&Record> = runs
                .iter()
                .filter(|r| r.workload == workload && r.index == index && r.threads == threads)
                .collect();
            let all: Vec<String> = mine
                .iter()
                .map(|r| format!("{:.1}", r.mops * 1e3))
                .collect();
            mine.sort_by(|a, b| a.mops.total_cmp(&b.mops));
            let median = (*mine[(mine.len() - 1) / 2]).clone();
            if mine.len() > 1 {
                median
                    .note("runs", mine.len())
                    .note("kops_runs", all.join("/"))
            } else {
                median
            }
        })
        .collect()
}

/// One line per (workload, threads): every store's Kops/s and learnkv's ratio to each peer; then
/// whether issue 8's targets hold.
fn remarks(records: &[Record]) -> Vec<String> {
    let mut lines = vec![
        "engine: whole loops timed; latency columns only for durable (per write) and batch \
         (per batch of 1,000); Kops/s below are the median runs'"
            .to_owned(),
    ];
    let mut groups: Vec<(&str, usize)> = Vec::new();
    for record in records {
        let group = (record.workload.as_str(), record.threads);
        if !groups.contains(&group) {
            groups.push(group);
        }
    }
    let mut get_target = Vec::new();
    let mut batch_target = Vec::new();
    for (workload, threads) in groups {
        let group: Vec<&Record> = records
            .iter()
            .filter(|r| r.workload == workload && r.threads == threads)
            .collect();
        let ours = group.iter().find(|r| r.index == OURS).map(|r| r.mops);
        let cells: Vec<String> = group
            .iter()
            .map(|r| match ours {
                Some(ours) if r.index != OURS => format!(
                    "{} {:.1} ({OURS} {:.2}x)",
                    r.index,
                    r.mops * 1e3,
                    ours / r.mops
                ),
                _ => format!("{} {:.1}", r.index, r.mops * 1e3),
            })
            .collect();
        lines.push(format!(
            "{workload} @{threads}: Kops/s {}",
            cells.join(", ")
        ));
        if let Some(ours) = ours {
            let ratios = group
                .iter()
                .filter(|r| r.index != OURS && r.index != ORACLE)
                .map(|r| ours / r.mops);
            match workload {
                "get" => get_target.extend(ratios),
                "batch" => batch_target.extend(ratios),
                _ => {}
            }
        }
    }
    let verdict = |ratios: &[f64], floor: f64| {
        let lowest = ratios.iter().copied().fold(f64::INFINITY, f64::min);
        if lowest >= floor {
            format!("holds (lowest ratio {lowest:.2})")
        } else {
            format!("missed (lowest ratio {lowest:.2})")
        }
    };
    if !get_target.is_empty() {
        lines.push(format!(
            "target: gets >= 3x every peer: {}",
            verdict(&get_target, 3.0)
        ));
    }
    if !batch_target.is_empty() {
        lines.push(format!(
            "target: batch writes >= every peer: {}",
            verdict(&batch_target, 1.0)
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn derived_pairs_are_the_buffered_ones_and_keys_are_distinct() {
        let records = Records::generate(10_000, 7);
        let mut keys = HashSet::new();
        for i in 0..10_000 {
            let (key, value) = records.derived(i);
            assert_eq!(&key[..], records.key(i));
            assert_eq!(&value[..], records.value(i));
            assert!(keys.insert(key), "record {i} repeats a key");
        }
        assert_ne!(Records::derive(8, 0), records.derived(0));
    }
}
