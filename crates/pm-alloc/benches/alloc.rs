//! Allocator benchmarks: allocate + publish + free throughput in `Volatile` and `Mapped` modes
//! at 1 and 2 threads against the system allocator, the flush and fence cost of each
//! operation (from the pool's counters, and in nanoseconds per persist), and recovery time.
//!
//! `cargo bench -p pm-alloc --bench alloc` prints medians of 3 runs. `Mapped` runs use a file
//! in `PM_BENCH_DIR` (default: the system temporary directory) and one in `/dev/shm` (tmpfs,
//! where `msync` is a system call without I/O).

#[cfg(not(loom))]
fn main() {
    bench::main();
}

/// Under `cfg(loom)` the pool is not built; the benchmark does nothing.
#[cfg(loom)]
fn main() {}

#[cfg(not(loom))]
mod bench {

    use std::alloc::{Layout, alloc, dealloc};
    use std::hint::black_box;
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::{Duration, Instant};

    use pm_alloc::{Mode, PAtomicPtr, PPtr, Pool, PoolOptions, flush_instruction, thread_counters};

    const RUNS: usize = 3;
    type Slot = PAtomicPtr<AtomicU64>;

    fn median(mut v: Vec<f64>) -> f64 {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    }

    /// One thread's loop: reserve 64 B, write it, publish it into the thread's slot, free it.
    fn pool_ops(pool: &Pool, slot: &Slot, ops: u64) {
        for i in 0..ops {
            let r = pool.reserve(64, 64).expect("space");
            r.words()[0].store(i, Ordering::Relaxed);
            pool.publish(r, slot).expect("publish");
            pool.free_at(slot).expect("free");
        }
    }

    fn system_ops(ops: u64) {
        let layout = Layout::from_size_align(64, 64).expect("valid layout");
        for i in 0..ops {
            // SAFETY: the layout has a non-zero size; the pointer is checked, written within its
            // 64 bytes and freed with the same layout.
            unsafe {
                let p = alloc(layout);
                assert!(!p.is_null());
                p.cast::<u64>().write(black_box(i));
                dealloc(black_box(p), layout);
            }
        }
    }

    /// Ops per second over `threads` threads, each doing `ops` operations.
    fn throughput(threads: usize, ops: u64, run: impl Fn(usize) + Sync) -> f64 {
        let start = Instant::now();
        std::thread::scope(|s| {
            for t in 0..threads {
                let run = &run;
                s.spawn(move || run(t));
            }
        });
        (threads as u64 * ops) as f64 / start.elapsed().as_secs_f64()
    }

    struct Target {
        name: String,
        path: Option<PathBuf>,
        ops: u64,
    }

    fn open(target: &Target, size: u64) -> Pool {
        let options = PoolOptions::new(size).lanes(8);
        match &target.path {
            None => options.volatile().expect("volatile pool"),
            Some(path) => {
                let _ = std::fs::remove_file(path);
                options.create(path, Mode::Mapped).expect("mapped pool")
            }
        }
    }

    fn bench_throughput(targets: &[Target]) {
        println!("\n## alloc + publish + free of 64 B (median of {RUNS} runs, ops/s)\n");
        println!("| allocator | 1 thread | 2 threads |");
        println!("|---|---|---|");
        for target in targets {
            let mut cells = Vec::new();
            for threads in [1, 2] {
                let runs = (0..RUNS)
                    .map(|_| {
                        let pool = open(target, 64 << 20);
                        let root = pool.root::<[Slot; 8]>().expect("root");
                        let slots = pool.get(root).expect("root");
                        throughput(threads, target.ops, |t| {
                            pool_ops(&pool, &slots[t], target.ops)
                        })
                    })
                    .collect();
                cells.push(median(runs));
            }
            println!(
                "| pm-alloc {} | {:.0} | {:.0} |",
                target.name, cells[0], cells[1]
            );
        }
        let ops = 2_000_000;
        let cells: Vec<f64> = [1, 2]
            .iter()
            .map(|&threads| {
                median(
                    (0..RUNS)
                        .map(|_| throughput(threads, ops, |_| system_ops(ops)))
                        .collect(),
                )
            })
            .collect();
        println!(
            "| std::alloc (system) | {:.0} | {:.0} |",
            cells[0], cells[1]
        );
    }

    fn bench_costs(targets: &[Target]) {
        println!(
            "\n## persistence cost (flush instruction: {:?})\n",
            flush_instruction()
        );
        let pool = PoolOptions::new(16 << 20).volatile().expect("pool");
        let root = pool.root::<[Slot; 8]>().expect("root");
        let slot = &pool.get(root).expect("root")[0];
        let before = thread_counters();
        pool_ops(&pool, slot, 1000);
        let cost = thread_counters() - before;
        println!(
            "per alloc + publish + free: {:.1} flushes, {:.1} fences, {:.0} bytes flushed",
            cost.flushes as f64 / 1000.0,
            cost.fences as f64 / 1000.0,
            cost.flushed_bytes as f64 / 1000.0
        );
        println!("\n| mode | persist(64 B) ns | persist(256 B) ns | fence alone ns |");
        println!("|---|---|---|---|");
        for target in targets {
            let pool = open(target, 16 << 20);
            let root = pool.root::<[AtomicU64; 64]>().expect("root");
            let words = pool.get(root).expect("root");
            let n = target.ops * 4;
            let time = |f: &dyn Fn(u64)| {
                median(
                    (0..RUNS)
                        .map(|_| {
                            let start = Instant::now();
                            for i in 0..n {
                                f(i);
                            }
                            start.elapsed().as_nanos() as f64 / n as f64
                        })
                        .collect(),
                )
            };
            let p64 = time(&|i| {
                words[0].store(i, Ordering::Relaxed);
                pool.persist(root, 64).expect("persist");
            });
            let p256 = time(&|i| {
                words[0].store(i, Ordering::Relaxed);
                pool.persist(root, 256).expect("persist");
            });
            let fence = time(&|_| pool.fence().expect("fence"));
            println!("| {} | {p64:.0} | {p256:.0} | {fence:.0} |", target.name);
        }
    }

    fn bench_recovery(dir: &Path) {
        println!("\n## recovery (reopen of a 1 GiB Mapped pool, median of {RUNS})\n");
        let path = dir.join("pm-alloc-bench-recovery.pool");
        let size = 1_u64 << 30;
        let _ = std::fs::remove_file(&path);
        let options = PoolOptions::new(size).lanes(8);
        let reopen = |label: &str| {
            let times: Vec<f64> = (0..RUNS)
                .map(|_| {
                    let start = Instant::now();
                    let pool = options.open(&path, Mode::Mapped).expect("reopen");
                    let t = start.elapsed();
                    drop(pool);
                    t.as_secs_f64() * 1e3
                })
                .collect();
            println!("{label}: {:.2} ms per GiB", median(times));
        };
        {
            let pool = options.create(&path, Mode::Mapped).expect("create");
            pool.root::<[Slot; 8]>().expect("root");
        }
        reopen("empty pool (chunk-table scan only)");
        let (live, freed) = {
            let pool = options.open(&path, Mode::Mapped).expect("open");
            let root = pool.root::<[PAtomicPtr<PPtr<u8>>; 8]>().expect("root");
            // A directory block of pointers per 4096 objects keeps every object reachable.
            let sizes = [64, 64, 64, 128, 256, 512, 1024, 4096, 16384];
            let mut held = Vec::new();
            let mut state = 1_u64;
            for i in 0..60_000_u64 {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1);
                let size = sizes[(state >> 33) as usize % sizes.len()];
                let r = pool.reserve(size, 64).expect("space");
                let cell = &pool.get(root).expect("root")[(i % 8) as usize];
                let p = pool.publish(r, cell).expect("publish");
                // Keep it by pointer only (the slot is reused): this is a recovery-cost fixture.
                held.push(p);
                cell.store(PPtr::null(), Ordering::Relaxed);
            }
            let mut freed = 0;
            for (i, p) in held.iter().enumerate() {
                if i % 2 == 0 {
                    pool.free(*p).expect("free");
                    freed += 1;
                }
            }
            (held.len() - freed, freed)
        };
        reopen(&format!(
            "fragmented pool ({live} live blocks, {freed} freed among them)"
        ));
        let _ = std::fs::remove_file(&path);
    }

    pub fn main() {
        // `cargo bench` passes `--bench`; `cargo test --benches` runs a quick smoke pass instead.
        let quick = !std::env::args().any(|a| a == "--bench");
        let dir = std::env::var_os("PM_BENCH_DIR").map_or_else(std::env::temp_dir, PathBuf::from);
        let shm = Path::new("/dev/shm");
        let scale = |ops: u64| if quick { (ops / 1000).max(10) } else { ops };
        let mut targets = vec![Target {
            name: "Volatile".into(),
            path: None,
            ops: scale(200_000),
        }];
        if shm.is_dir() {
            targets.push(Target {
                name: "Mapped (/dev/shm)".into(),
                path: Some(shm.join(format!("pm-alloc-bench-{}.pool", std::process::id()))),
                ops: scale(50_000),
            });
        }
        targets.push(Target {
            name: format!("Mapped ({})", dir.display()),
            path: Some(dir.join(format!("pm-alloc-bench-{}.pool", std::process::id()))),
            ops: scale(300),
        });
        let start = Instant::now();
        bench_throughput(&targets);
        bench_costs(&targets);
        if !quick {
            bench_recovery(if shm.is_dir() { shm } else { &dir });
        }
        for target in &targets {
            if let Some(path) = &target.path {
                let _ = std::fs::remove_file(path);
            }
        }
        println!("\n(total {:.1} s)", Duration::as_secs_f64(&start.elapsed()));
    }
}
