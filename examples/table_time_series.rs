//! An ordered table under a time series (README design notes, "Multi-way group split"): loads
//! `WINDOW` keys `ts/` + 16 hex digits + `/` + a random suffix (16 to 40 bytes in all) with
//! 16-byte values, in memory, then for `SECONDS` removes the oldest key and inserts a new one
//! above all the others, pair after pair, on one thread. Every second it prints the pairs done,
//! the table's memory (`Db::stats`), its index's records and delta keys per live key, groups
//! and mean model error, and the process's resident memory; at the end, the medians of the
//! second half.
//!
//! Run: `cargo run --release --example table_time_series -- [WINDOW] [SECONDS]` (defaults
//! 1000000 and 60).

use std::collections::VecDeque;

use learnkv::{Db, IndexStats};
use test_support::{calls_per_second, median, resident_mib};

/// The `i`th key: ascending in `i`, with a suffix drawn from `state` (xorshift).
fn key(i: u64, state: &mut u64) -> Vec<u8> {
    let mut next = || {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    };
    let len = 16 + (next() % 25) as usize;
    let mut key = format!("ts/{i:016x}/").into_bytes();
    while key.len() < len {
        key.push(b'a' + (next() % 26) as u8);
    }
    key
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let window: u64 = args.first().map_or(Ok(1_000_000), |arg| arg.parse())?;
    let seconds: usize = args.get(1).map_or(Ok(60), |arg| arg.parse())?;
    if window == 0 || seconds == 0 {
        return Err("WINDOW and SECONDS must be at least 1".into());
    }
    let db = Db::open_in_memory()?;
    let table = db.ordered_table::<Vec<u8>>("series")?;
    let value = [0x5a_u8; 16];
    let mut state = 7u64;
    let mut live = VecDeque::new();
    for i in 0..window {
        let new = key(i, &mut state);
        table.insert(&new, value)?;
        live.push_back(new);
    }
    println!("second   pairs/s  table MiB  records/key  groups  mean err  RSS MiB");
    let mut samples: Vec<[f64; 6]> = Vec::with_capacity(seconds);
    let mut next = window;
    for second in 1..=seconds {
        let pairs_per_s = calls_per_second(|| -> Result<(), Box<dyn std::error::Error>> {
            let oldest = live.pop_front().expect("a full window");
            table.remove(&oldest)?.ok_or("a live key was missing")?;
            let new = key(next, &mut state);
            table.insert(&new, value)?;
            live.push_back(new);
            next += 1;
            Ok(())
        })?;
        let stats = db.stats();
        let IndexStats::Ordered(index) = &stats.tables[0].index else {
            return Err("an ordered table has an ordered index".into());
        };
        let sample = [
            pairs_per_s,
            stats.memory_bytes as f64 / (1 << 20) as f64,
            (index.records + index.delta_keys) as f64 / window as f64,
            index.groups as f64,
            index.mean_error,
            resident_mib(),
        ];
        println!(
            "{second:>6} {:>9.0} {:>10.1} {:>12.2} {:>7} {:>9.1} {:>8.1}",
            sample[0], sample[1], sample[2], sample[3], sample[4], sample[5]
        );
        samples.push(sample);
    }
    let half = &samples[samples.len() / 2..];
    let of = |field: usize| median(half.iter().map(|sample| sample[field]).collect());
    println!(
        "median of the last {} s: {:.0} pairs/s, table {:.1} MiB, {:.2} records/key, {:.0} groups, mean error {:.1}, RSS {:.1} MiB",
        half.len(),
        of(0),
        of(1),
        of(2),
        of(3),
        of(4),
        of(5)
    );
    Ok(())
}
