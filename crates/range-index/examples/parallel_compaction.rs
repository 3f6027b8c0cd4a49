//! How several background threads share XIndex-R's compactions (digest §3.13): loads `LOADED`
//! keys, buffers `INSERTED` new keys in the groups' delta indexes, then times one compaction
//! pass over every group run by 1, 2, … threads, each compacting its own share of the root
//! slots at the same time (what `Config::background_threads` above 1 does every period). Each
//! pass starts from a fresh index, and the contents are checked afterwards.
//!
//! Run: `cargo run --release -p range-index --example parallel_compaction -- [LOADED]
//! [INSERTED] [MAX_THREADS]` (defaults 4000000, 2000000 and the available parallelism).

use std::error::Error;
use std::thread;
use std::time::Instant;

use range_index::OrderedIndex;
use range_index::xindex::{Config, XIndex};

/// A fresh index of `loaded` even keys with `inserted` odd keys waiting in its delta indexes.
fn buffered_index(loaded: u64, inserted: u64) -> Result<XIndex<u64>, Box<dyn Error>> {
    let config = Config {
        background_threads: 0,
        ..Config::default()
    };
    let pairs: Vec<(u64, u64)> = (0..loaded).map(|i| (i * 2, i)).collect();
    let index = XIndex::bulk_load(&pairs, config)?;
    let stride = (loaded / inserted.max(1)).max(1);
    for i in (0..inserted).map(|i| i * stride) {
        index.insert(i * 2 + 1, i);
    }
    Ok(index)
}

/// Rounds per thread count; the thread counts alternate within a round, so that the machine's
/// drift and the first touches of fresh memory fall on all of them.
const ROUNDS: usize = 3;

/// One pass by `threads` threads over a fresh index: the seconds it took and the groups.
fn timed_pass(loaded: u64, inserted: u64, threads: usize) -> Result<(f64, usize), Box<dyn Error>> {
    let index = buffered_index(loaded, inserted)?;
    let start = Instant::now();
    thread::scope(|scope| {
        for part in 0..threads {
            let index = &index;
            scope.spawn(move || index.compact_share(part, threads));
        }
    });
    let seconds = start.elapsed().as_secs_f64();
    let stats = index.stats();
    if stats.delta_keys != 0 || stats.keys as u64 != loaded + inserted {
        return Err(format!("the pass left {} keys buffered", stats.delta_keys).into());
    }
    Ok((seconds, stats.groups))
}

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1).map(|arg| arg.parse::<u64>());
    let loaded = args.next().transpose()?.unwrap_or(4_000_000);
    let inserted = args.next().transpose()?.unwrap_or(2_000_000).min(loaded);
    let most = match args.next().transpose()? {
        Some(threads) => usize::try_from(threads)?.max(1),
        None => thread::available_parallelism()?.get(),
    };
    println!("{loaded} keys loaded, {inserted} buffered in the delta indexes; {ROUNDS} rounds");
    let mut seconds = vec![Vec::new(); most];
    let mut groups = 0;
    for _ in 0..ROUNDS {
        for (threads, runs) in (1..=most).zip(&mut seconds) {
            let (run, run_groups) = timed_pass(loaded, inserted, threads)?;
            runs.push(run);
            groups = run_groups;
        }
    }
    let median = |runs: &mut Vec<f64>| {
        runs.sort_by(f64::total_cmp);
        runs[runs.len() / 2]
    };
    let base = median(&mut seconds[0]);
    for (threads, runs) in (1..=most).zip(&mut seconds) {
        let listed: Vec<String> = runs.iter().map(|run| format!("{run:.3}")).collect();
        let median = median(runs);
        println!(
            "{threads} thread(s): the pass over {groups} groups took {median:.3} s (median of \
             {}), {:.2}x one thread",
            listed.join(" / "),
            base / median
        );
    }
    Ok(())
}
