//! XIndex-R by itself, without the database: bulk-loads the keys of a SOSD file (Marcus et al.,
//! "Benchmarking Learned Indexes", PVLDB 2020), each with its position in the file as its
//! value, prints the structure the load built, checks every key, measures random lookups from
//! every core, then inserts and removes keys while the index's background threads fold them
//! into its groups, and checks the result again.
//!
//! Run: `cargo run --release --example sosd_bulk_load -- [SOURCE] [SECONDS]`. SOURCE is a SOSD
//! file (its name ends in `_uint32` or `_uint64`, as `books_200M_uint32`; see
//! `datasets/README.md`) or a key count N, which writes N lognormal keys to a SOSD file in the
//! temporary directory and loads that (default: 1000000). SECONDS (default 2) is how long the
//! lookups run.

use std::error::Error;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::thread;
use std::time::{Duration, Instant};

use learnkv::range_index::xindex::Config;
use learnkv::range_index::{OrderedIndex, XIndex};
use workload::Dataset;
use workload::dataset::sosd;

/// The demo's key count when no source is given.
const DEMO_KEYS: usize = 1_000_000;
/// How many keys the update phase inserts at most (and then removes half of).
const MAX_NEW_KEYS: usize = 100_000;

/// Where the keys come from.
enum Source {
    /// A SOSD file.
    File(PathBuf),
    /// A demo file of this many keys, written first and removed at the end.
    Demo(usize),
}

fn main() -> ExitCode {
    match load_and_check() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

fn load_and_check() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let source = match args.first() {
        None => Source::Demo(DEMO_KEYS),
        Some(arg) => match arg.replace('_', "").parse() {
            Ok(0) => return Err("a demo needs at least one key".into()),
            Ok(count) => Source::Demo(count),
            Err(_) => Source::File(PathBuf::from(arg)),
        },
    };
    let seconds = args
        .get(1)
        .map_or(Some(2.0), |arg| arg.parse::<f64>().ok())
        .filter(|seconds| *seconds > 0.0 && seconds.is_finite())
        .ok_or("SECONDS must be a positive number")?;
    let path = match &source {
        Source::File(path) => path.clone(),
        Source::Demo(count) => {
            let path = std::env::temp_dir()
                .join(format!("learnkv-sosd-demo-{}_uint64", std::process::id()));
            sosd::write(&path, &Dataset::Lognormal.u64_keys(Some(*count), 42)?)?;
            println!("wrote {count} lognormal keys to {}", path.display());
            path
        }
    };
    let outcome = run(&path, Duration::from_secs_f64(seconds));
    if let Source::Demo(_) = source {
        std::fs::remove_file(&path)?;
    }
    outcome
}

fn run(path: &Path, lookup_time: Duration) -> Result<(), Box<dyn Error>> {
    let started = Instant::now();
    let file_keys = sosd::read(path)?;
    // SOSD files may repeat a key; an index holds each key once, with its first position.
    let mut pairs: Vec<(u64, u64)> = Vec::with_capacity(file_keys.len());
    for (position, &key) in (0u64..).zip(&file_keys) {
        if pairs.last().is_none_or(|&(last, _)| last < key) {
            pairs.push((key, position));
        }
    }
    drop(file_keys);
    if pairs.is_empty() {
        println!("{} holds no keys", path.display());
        return Ok(());
    }
    println!(
        "read {} distinct keys from {} in {:.2} s",
        pairs.len(),
        path.display(),
        started.elapsed().as_secs_f64()
    );

    let started = Instant::now();
    let index = XIndex::<u64>::bulk_load(&pairs, Config::default())?;
    let load = started.elapsed().as_secs_f64();
    println!(
        "bulk load: {load:.2} s, {:.1} M keys/s",
        pairs.len() as f64 / load / 1e6
    );
    print_structure(&index);

    let threads = thread::available_parallelism().map_or(1, |n| n.get());
    let wrong = check_all(&index, &pairs, threads);
    if wrong > 0 {
        return Err(format!("{wrong} keys read back wrong after the load").into());
    }
    println!("checked every key: each reads back its position");

    let lookups = random_lookups(&index, &pairs, threads, lookup_time);
    println!(
        "random lookups, {threads} threads: {:.2} M/s",
        lookups as f64 / lookup_time.as_secs_f64() / 1e6
    );

    check_range(&index, &pairs)?;
    update(&index, &pairs, threads)?;
    Ok(())
}

fn print_structure(index: &XIndex<u64>) {
    let stats = index.stats();
    println!(
        "  {} groups, {} models ({} with corrected predictions), mean model error {:.1} \
         positions, {:.1} bytes per key",
        stats.groups,
        stats.models,
        stats.corrected_models,
        stats.mean_error,
        stats.bytes as f64 / stats.keys.max(1) as f64
    );
}

/// How many of `pairs` do not read back their value, checked by `threads` threads.
fn check_all(index: &XIndex<u64>, pairs: &[(u64, u64)], threads: usize) -> usize {
    let share = pairs.len().div_ceil(threads).max(1);
    thread::scope(|scope| {
        let checkers: Vec<_> = pairs
            .chunks(share)
            .map(|chunk| {
                scope.spawn(move || {
                    chunk
                        .iter()
                        .filter(|&&(key, value)| index.get(&key) != Some(value))
                        .count()
                })
            })
            .collect();
        checkers
            .into_iter()
            .map(|checker| checker.join().expect("a checker thread panicked"))
            .sum()
    })
}

/// Gets of keys drawn uniformly from `pairs` by `threads` threads for `time`; the number done.
fn random_lookups(
    index: &XIndex<u64>,
    pairs: &[(u64, u64)],
    threads: usize,
    time: Duration,
) -> u64 {
    thread::scope(|scope| {
        let workers: Vec<_> = (0..threads as u64)
            .map(|seed| {
                scope.spawn(move || {
                    let mut state = 0x9E37_79B9_7F4A_7C15 ^ (seed + 1);
                    let started = Instant::now();
                    let mut done = 0u64;
                    while started.elapsed() < time {
                        for _ in 0..1024 {
                            state ^= state << 13;
                            state ^= state >> 7;
                            state ^= state << 17;
                            let (key, _) = pairs[(state % pairs.len() as u64) as usize];
                            black_box(index.get(&key));
                        }
                        done += 1024;
                    }
                    done
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| worker.join().expect("a lookup thread panicked"))
            .sum()
    })
}

/// A range of up to 1,000 keys from the middle of the set, against the sorted pairs.
fn check_range(index: &XIndex<u64>, pairs: &[(u64, u64)]) -> Result<(), Box<dyn Error>> {
    let from = pairs.len() / 2;
    let expected = &pairs[from..pairs.len().min(from + 1_000)];
    let (Some(&(start, _)), Some(&(end, _))) = (expected.first(), expected.last()) else {
        return Ok(());
    };
    let found: Vec<(u64, u64)> = index.range(start..=end).collect();
    if found != expected {
        return Err(format!("the range {start}..={end} differs from the file's keys").into());
    }
    println!(
        "range {start}..={end}: {} pairs, as in the file",
        found.len()
    );
    Ok(())
}

/// Inserts keys in the gaps between loaded keys, removes every other one, waits for the
/// background threads to fold the rest into the groups, then checks the new and the loaded
/// keys.
fn update(index: &XIndex<u64>, pairs: &[(u64, u64)], threads: usize) -> Result<(), Box<dyn Error>> {
    let new_keys: Vec<u64> = pairs
        .windows(2)
        .filter(|pair| pair[1].0 - pair[0].0 > 1)
        .map(|pair| pair[0].0 + 1)
        .take(MAX_NEW_KEYS)
        .collect();
    let started = Instant::now();
    for (value, &key) in (0u64..).zip(&new_keys) {
        if index.insert(key, u64::MAX - value).is_some() {
            return Err(format!("new key {key} was already present").into());
        }
    }
    for &key in new_keys.iter().step_by(2) {
        if index.remove(&key).is_none() {
            return Err(format!("new key {key} was not found for removal").into());
        }
    }
    let written = started.elapsed().as_secs_f64();
    let started = Instant::now();
    index.quiesce();
    println!(
        "inserted {} keys and removed {} in {written:.2} s; the background work caught up in \
         {:.2} s",
        new_keys.len(),
        new_keys.len().div_ceil(2),
        started.elapsed().as_secs_f64()
    );
    print_structure(index);
    for (i, (value, &key)) in (0u64..).zip(&new_keys).enumerate() {
        let expected = (i % 2 == 1).then_some(u64::MAX - value);
        if index.get(&key) != expected {
            return Err(format!("new key {key} reads {:?}", index.get(&key)).into());
        }
    }
    let wrong = check_all(index, pairs, threads);
    if wrong > 0 {
        return Err(format!("{wrong} loaded keys read back wrong after the updates").into());
    }
    let expected_len = pairs.len() + new_keys.len() / 2;
    if index.len() != expected_len {
        return Err(format!("{} keys counted, {expected_len} expected", index.len()).into());
    }
    println!("checked every key again: {expected_len} in all");
    Ok(())
}
