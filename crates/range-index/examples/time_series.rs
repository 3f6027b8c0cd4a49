//! XIndex-R under a time series (README design notes, "Multi-way group split"): loads `WINDOW`
//! ascending keys, then for `SECONDS` removes the oldest key and inserts a new one above all
//! the others, pair after pair, on one thread, with the default configuration (one background
//! thread, a pass a second). Every second it prints the pairs done, the records and delta keys
//! the index holds per live key, its groups, its models' mean error, its own estimate of its
//! bytes and the process's resident memory; at the end, the medians of the second half.
//!
//! Keys are `u64`s at uneven gaps (1 to 1,999), or (`bytes`) strings `ts/` + 16 hex digits,
//! whose models' errors are far larger, since the hex digits skip from `9` to `a`.
//!
//! Run: `cargo run --release -p range-index --example time_series -- [WINDOW] [SECONDS]
//! [u64|bytes]` (defaults 1000000, 60 and u64).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::error::Error;

use range_index::OrderedIndex;
use range_index::xindex::{Config, IndexKey, XIndex};
use test_support::{calls_per_second, median, resident_mib};

/// One second's figures.
struct Sample {
    pairs_per_s: f64,
    records_per_key: f64,
    groups: usize,
    mean_error: f64,
    index_mib: f64,
    rss_mib: f64,
}

impl Sample {
    fn print(&self, second: usize) {
        println!(
            "{second:>4} {:>10.0} {:>12.2} {:>7} {:>10.1} {:>10.1} {:>8.1}",
            self.pairs_per_s,
            self.records_per_key,
            self.groups,
            self.mean_error,
            self.index_mib,
            self.rss_mib
        );
    }
}

/// Slides a window of `window` keys made by `key(i)` for `seconds`, printing each second.
fn slide<K: IndexKey>(window: u64, seconds: usize, key: impl Fn(u64) -> K) -> Vec<Sample> {
    let index = XIndex::<K>::new(Config::default()).expect("the default configuration");
    let mut live: VecDeque<K> = VecDeque::new();
    for i in 0..window {
        let new = key(i);
        index.insert(new.clone(), i);
        live.push_back(new);
    }
    println!("second   pairs/s  records/key  groups  mean err  index MiB  RSS MiB");
    let mut samples = Vec::with_capacity(seconds);
    let mut next = window;
    for second in 1..=seconds {
        let Ok(pairs_per_s) = calls_per_second(|| {
            let oldest = live.pop_front().expect("a full window");
            assert!(index.remove(oldest.borrow()).is_some(), "a live key");
            let new = key(next);
            index.insert(new.clone(), next);
            live.push_back(new);
            next += 1;
            Ok::<(), Infallible>(())
        });
        let stats = index.stats();
        let sample = Sample {
            pairs_per_s,
            records_per_key: (stats.records + stats.delta_keys) as f64 / window as f64,
            groups: stats.groups,
            mean_error: stats.mean_error,
            index_mib: stats.bytes as f64 / (1 << 20) as f64,
            rss_mib: resident_mib(),
        };
        sample.print(second);
        samples.push(sample);
    }
    samples
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let window: u64 = args.first().map_or(Ok(1_000_000), |arg| arg.parse())?;
    let seconds: usize = args.get(1).map_or(Ok(60), |arg| arg.parse())?;
    let kind = args.get(2).map_or("u64", String::as_str);
    if window == 0 || seconds == 0 {
        return Err("WINDOW and SECONDS must be at least 1".into());
    }
    // Key `i` sits at `i * 1_001` plus 1 to 1,000 from a fixed xorshift sequence: ascending,
    // not evenly spaced.
    let gap = |i: u64| {
        let mut x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        1 + x % 1_000
    };
    let samples = match kind {
        "u64" => slide(window, seconds, |i| (1u64 << 40) + i * 1_001 + gap(i)),
        "bytes" => slide(window, seconds, |i| format!("ts/{i:016x}").into_bytes()),
        other => return Err(format!("unknown key kind {other}: u64 or bytes").into()),
    };
    let half = &samples[samples.len() / 2..];
    let of = |field: fn(&Sample) -> f64| median(half.iter().map(field).collect());
    println!(
        "median of the last {} s: {:.0} pairs/s, {:.2} records/key, {:.0} groups, mean error {:.1}, index {:.1} MiB, RSS {:.1} MiB",
        half.len(),
        of(|s| s.pairs_per_s),
        of(|s| s.records_per_key),
        of(|s| s.groups as f64),
        of(|s| s.mean_error),
        of(|s| s.index_mib),
        of(|s| s.rss_mib),
    );
    Ok(())
}
