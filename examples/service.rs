//! One `Db` shared by the threads of a service: each worker serves a mix of requests
//! (lookups, updates, new keys, short range reads) against a table of user profiles and counts
//! visits per region in a hash table with `fetch_and_update`; then the service checks that no
//! visit was lost and prints its throughput and the database's statistics.
//!
//! `cargo run --release --example service [THREADS] [SECONDS]`

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use learnkv::{Db, Durability, Options};

const USERS: u64 = 200_000;
/// Visit counters, one per region (users fall in regions by number).
const REGIONS: u64 = 64;

fn profile(user: u64, version: u64) -> Vec<u8> {
    format!("{{\"user\":{user},\"version\":{version},\"plan\":\"basic\"}}").into_bytes()
}

/// A visit counter's value (absent: no visit yet).
fn decode_count(count: Option<&[u8]>) -> u64 {
    count.map_or(0, |c| {
        u64::from_le_bytes(c.try_into().expect("an 8-byte count"))
    })
}

fn main() -> Result<(), learnkv::Error> {
    let mut args = std::env::args().skip(1);
    let threads: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(2);
    let seconds: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(3);
    let dir = std::env::temp_dir().join(format!("learnkv-service-{}", std::process::id()));
    let options = Options::new().durability(Durability::Periodic(Duration::from_millis(200)));
    let db = Arc::new(Db::open(&dir, options)?);

    let profiles = db.ordered_table::<u64>("profiles")?;
    for user in 0..USERS {
        profiles.insert(&(user * 2), profile(user * 2, 0))?;
    }
    println!("loaded {USERS} profiles; serving with {threads} threads for {seconds} s");

    let stop = Arc::new(AtomicBool::new(false));
    let served = Arc::new(AtomicU64::new(0));
    let visits = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..threads as u64)
        .map(|worker| {
            let (db, stop) = (Arc::clone(&db), Arc::clone(&stop));
            let (served, visits) = (Arc::clone(&served), Arc::clone(&visits));
            std::thread::spawn(move || -> Result<(), learnkv::Error> {
                let profiles = db.ordered_table::<u64>("profiles")?;
                let regions = db.hash_table::<u64>("visits")?;
                let mut state = worker.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
                let (mut requests, mut visited) = (0u64, 0u64);
                while !stop.load(Ordering::Relaxed) {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    let user = state % (USERS * 2);
                    match state >> 60 {
                        0..=9 => {
                            profiles.get(&user);
                        }
                        10 => {
                            regions.fetch_and_update(&(user % REGIONS), |count| {
                                Some((decode_count(count) + 1).to_le_bytes())
                            })?;
                            visited += 1;
                        }
                        11..=13 => {
                            profiles.insert(&user, profile(user, requests))?;
                        }
                        14 => {
                            let _ = profiles.range(user..).take(10).count();
                        }
                        _ => {
                            profiles.remove(&user)?;
                        }
                    }
                    requests += 1;
                }
                served.fetch_add(requests, Ordering::Relaxed);
                visits.fetch_add(visited, Ordering::Relaxed);
                Ok(())
            })
        })
        .collect();
    let start = Instant::now();
    std::thread::sleep(Duration::from_secs(seconds));
    stop.store(true, Ordering::Relaxed);
    for worker in workers {
        worker.join().expect("a worker panicked")?;
    }
    let elapsed = start.elapsed().as_secs_f64();
    let total = served.load(Ordering::Relaxed);
    println!(
        "{total} requests in {elapsed:.1} s: {:.2} M requests/s",
        total as f64 / elapsed / 1e6
    );
    let counted: u64 = db
        .hash_table::<u64>("visits")?
        .iter()
        .map(|(_, count)| decode_count(Some(&count)))
        .sum();
    let visited = visits.load(Ordering::Relaxed);
    assert_eq!(counted, visited, "a visit count was lost");
    println!("{visited} visits counted in {REGIONS} regions, none lost");
    db.flush()?;
    let stats = db.stats();
    println!(
        "{} keys, {:.1} MiB in memory, {:.1} MiB of log written",
        stats.keys,
        stats.memory_bytes as f64 / (1 << 20) as f64,
        stats.log_bytes as f64 / (1 << 20) as f64
    );
    drop((profiles, db));
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
