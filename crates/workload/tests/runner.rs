//! The runner against toy adapters over a locked `BTreeMap`: operation counts add up, the key
//! invariants of the workloads hold on a real index, and failures surface instead of hanging.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use workload::{
    Dataset, Error, IndexAdapter, KeyDistribution, KeySpace, Op, OpCounts, OpKind, Progress,
    RunConfig, Shift, Stop, Warmup, Workload, Ycsb, runner,
};

/// A locked map that counts the calls it receives per kind.
#[derive(Default)]
struct Toy<K> {
    map: Mutex<BTreeMap<K, u64>>,
    calls: [AtomicU64; 6],
}

impl<K: Ord> Toy<K> {
    fn count(&self, kind: OpKind) {
        self.calls[kind as usize].fetch_add(1, Ordering::Relaxed);
    }

    fn calls(&self) -> OpCounts {
        let mut counts = OpCounts::default();
        for kind in OpKind::ALL {
            counts[kind] = self.calls[kind as usize].load(Ordering::Relaxed);
        }
        counts
    }

    fn len(&self) -> usize {
        self.map
            .lock()
            .expect("no test panics while holding the lock")
            .len()
    }
}

/// The adapter methods, shared by the integer and the byte-string toy.
macro_rules! toy_adapter {
    ($key:ty, $owned:expr) => {
        fn name(&self) -> &str {
            "toy"
        }
        fn bulk_load(&self, pairs: &[($key, u64)]) {
            let mut map = self.map.lock().expect("unpoisoned");
            map.extend(pairs.iter().map(|&(key, value)| ($owned(key), value)));
        }
        fn get(&self, key: $key) -> Option<u64> {
            self.count(OpKind::Get);
            self.map
                .lock()
                .expect("unpoisoned")
                .get(&$owned(key))
                .copied()
        }
        fn insert(&self, key: $key, value: u64) -> Option<u64> {
            self.count(OpKind::Insert);
            self.map
                .lock()
                .expect("unpoisoned")
                .insert($owned(key), value)
        }
        fn update(&self, key: $key, value: u64) -> bool {
            self.count(OpKind::Update);
            self.map
                .lock()
                .expect("unpoisoned")
                .get_mut(&$owned(key))
                .map(|slot| *slot = value)
                .is_some()
        }
        fn remove(&self, key: $key) -> Option<u64> {
            self.count(OpKind::Remove);
            self.map.lock().expect("unpoisoned").remove(&$owned(key))
        }
        fn scan(&self, start: $key, n: usize) -> usize {
            self.count(OpKind::Scan);
            self.map
                .lock()
                .expect("unpoisoned")
                .range($owned(start)..)
                .take(n)
                .count()
        }
        fn read_modify_write(&self, key: $key, value: u64) -> bool {
            self.count(OpKind::ReadModifyWrite);
            self.map
                .lock()
                .expect("unpoisoned")
                .get_mut(&$owned(key))
                .map(|slot| *slot ^= value)
                .is_some()
        }
    };
}

impl IndexAdapter<u64> for Toy<u64> {
    toy_adapter!(u64, |key: u64| key);
}

impl<'a> IndexAdapter<&'a [u8]> for Toy<Vec<u8>> {
    toy_adapter!(&'a [u8], <[u8]>::to_vec);
}

fn hidden(threads: usize, stop: Stop) -> RunConfig {
    RunConfig::new(threads, stop).with_progress(Progress::Hidden)
}

fn space(keys: usize, load: usize) -> KeySpace<u64> {
    let keys = Dataset::Uniform
        .u64_keys(Some(keys), 1)
        .expect("uniform keys");
    KeySpace::split(keys, load, 1).expect("valid split")
}

#[test]
fn counts_add_up_and_match_the_generated_mix() {
    let space = space(60_000, 50_000);
    let index = Toy::default();
    runner::bulk_load(&index, &space);
    let workload = Workload::read_write(0.5, KeyDistribution::YCSB).expect("valid");
    let (threads, ops) = (2, 100_001);
    let result = runner::run(&hidden(threads, Stop::Ops(ops)), &index, |t| {
        workload.generator(&space, t, threads, 9)
    })
    .expect("valid run");

    assert_eq!(result.ops, ops);
    assert_eq!(result.counts.total(), ops);
    assert_eq!(
        index.calls(),
        result.counts,
        "every recorded op reached the index"
    );
    assert_eq!(result.histogram.len(), ops, "every op was timed");
    assert_eq!(
        result.timeline.iter().map(OpCounts::total).sum::<u64>(),
        ops
    );
    assert_eq!(result.exhausted_threads, 0);

    let mut generated = OpCounts::default();
    for t in 0..threads {
        let share = ops / 2 + u64::from(t == 0);
        for op in workload
            .generator(&space, t, threads, 9)
            .expect("valid")
            .take(share as usize)
        {
            generated.add(&op);
        }
    }
    assert_eq!(
        result.counts, generated,
        "per-kind counts are those of the generated streams"
    );

    let outcomes = result.outcomes;
    assert_eq!(
        outcomes.insert_overwrites, 0,
        "inserts only use absent keys"
    );
    assert_eq!(
        outcomes.remove_hits,
        result.counts[OpKind::Remove],
        "removes only use present keys"
    );
    let expected_len = 50_000 + result.counts[OpKind::Insert] - result.counts[OpKind::Remove];
    assert_eq!(index.len() as u64, expected_len);

    let latency = result.latency;
    assert!(latency.p50_ns <= latency.p99_ns && latency.p99_ns <= latency.p999_ns);
    assert!(latency.p999_ns <= latency.p9999_ns);
    // The histogram rounds up within 0.1 %; the maximum is exact.
    assert!(latency.p9999_ns as f64 <= latency.max_ns as f64 * 1.001);
    assert_eq!(
        latency.max_ns,
        result
            .max_ns_by_kind
            .iter()
            .copied()
            .max()
            .expect("six kinds")
    );
    assert!(result.mops > 0.0 && result.seconds > 0.0);
}

#[test]
fn warm_up_is_run_but_not_recorded() {
    let space = space(20_000, 20_000);
    let index = Toy::default();
    runner::bulk_load(&index, &space);
    let workload = Workload::ycsb(Ycsb::C);
    let config = hidden(2, Stop::Ops(5_000)).with_warmup(Warmup::Ops(3_000));
    let result =
        runner::run(&config, &index, |t| workload.generator(&space, t, 2, 1)).expect("valid run");
    assert_eq!((result.ops, result.warmup_ops), (5_000, 3_000));
    assert_eq!(index.calls()[OpKind::Get], 8_000);
    assert_eq!(
        result.outcomes.get_hits, 5_000,
        "a read-only run always hits"
    );
}

#[test]
fn pregenerated_runs_execute_the_same_operations() {
    let space = space(20_000, 18_000);
    let workload = Workload::ycsb(Ycsb::E);
    let mut counts = Vec::new();
    for pregenerate in [false, true] {
        let index = Toy::default();
        runner::bulk_load(&index, &space);
        let config = hidden(2, Stop::Ops(10_000)).with_pregenerate(pregenerate);
        let result = runner::run(&config, &index, |t| workload.generator(&space, t, 2, 5))
            .expect("valid run");
        assert_eq!(result.ops, 10_000);
        // Scanned-key totals depend on how the two threads interleave; the streams do not.
        counts.push((result.counts, index.len()));
    }
    assert_eq!(counts[0], counts[1]);
    let timed = hidden(1, Stop::Duration(Duration::from_millis(1))).with_pregenerate(true);
    let index = Toy::default();
    assert!(runner::run(&timed, &index, |t| workload.generator(&space, t, 1, 5)).is_err());
}

/// Throughput counts the time the index spent on the operations, not the time the stream took to
/// draw them: a stream that spends 10 µs on each operation it generates (about a hundred times
/// the toy's operation) leaves the wall-clock rate far below the reported one. The margin
/// allows for a thread preempted for milliseconds while it executes (a loaded machine).
#[test]
fn throughput_leaves_out_the_streams_own_time() {
    let space = space(20_000, 20_000);
    let workload = Workload::ycsb(Ycsb::C);
    let index = Toy::default();
    runner::bulk_load(&index, &space);
    let result = runner::run(&hidden(2, Stop::Ops(20_000)), &index, |t| {
        let ops = workload.generator(&space, t, 2, 3)?;
        Ok(ops.inspect(|_| {
            let drawn = std::time::Instant::now();
            while drawn.elapsed() < Duration::from_micros(10) {
                std::hint::spin_loop();
            }
        }))
    })
    .expect("valid run");
    let wall_mops = result.ops as f64 / result.seconds / 1e6;
    assert!(
        result.mops > 3.0 * wall_mops,
        "{} against {wall_mops}",
        result.mops
    );
}

/// A run that times one operation in 16 records one latency in 16 and still counts, and
/// places on its timeline, every operation; 0 is refused.
#[test]
fn sampled_latencies_time_one_operation_in_n() {
    let space = space(20_000, 20_000);
    let workload = Workload::ycsb(Ycsb::C);
    for (sample, recorded) in [(1, 8_000), (16, 500)] {
        let index = Toy::default();
        runner::bulk_load(&index, &space);
        let config = hidden(2, Stop::Ops(8_000))
            .with_pregenerate(true)
            .with_latency_sample(sample);
        let result = runner::run(&config, &index, |t| workload.generator(&space, t, 2, 9))
            .expect("valid run");
        assert_eq!(result.ops, 8_000);
        assert_eq!(result.histogram.len(), recorded, "one in {sample}");
        let placed: u64 = result.timeline.iter().map(OpCounts::total).sum();
        assert_eq!(placed, 8_000, "the timeline holds every operation");
        assert!(result.mops > 0.0 && result.latency.max_ns > 0);
    }
    let index = Toy::default();
    let config = hidden(1, Stop::Ops(10)).with_latency_sample(0);
    assert!(runner::run(&config, &index, |t| workload.generator(&space, t, 1, 9)).is_err());
}

#[test]
fn duration_runs_stop_on_time_and_fill_the_timeline() {
    let space = space(20_000, 20_000);
    let index = Toy::default();
    runner::bulk_load(&index, &space);
    let workload = Workload::ycsb(Ycsb::B);
    let config = hidden(2, Stop::Duration(Duration::from_millis(300)))
        .with_warmup(Warmup::Duration(Duration::from_millis(50)))
        .with_interval(Duration::from_millis(100));
    let result =
        runner::run(&config, &index, |t| workload.generator(&space, t, 2, 1)).expect("valid run");
    assert!(
        result.seconds >= 0.3 && result.seconds < 2.0,
        "{} s",
        result.seconds
    );
    assert!(result.warmup_ops > 0);
    assert!(
        (3..=5).contains(&result.timeline.len()),
        "{} intervals",
        result.timeline.len()
    );
    assert_eq!(
        result.timeline.iter().map(OpCounts::total).sum::<u64>(),
        result.ops
    );
    assert_eq!(index.calls().total(), result.ops + result.warmup_ops);
    assert_eq!(result.mops_timeline().len(), result.timeline.len());
}

#[test]
fn insert_only_growth_from_empty_loads_every_key() {
    let space = space(30_000, 0);
    let index = Toy::default();
    let result = runner::run(&hidden(3, Stop::Exhausted), &index, |t| {
        Workload::insert_only().generator(&space, t, 3, 1)
    })
    .expect("valid run");
    assert_eq!(result.ops, 30_000);
    assert_eq!(result.exhausted_threads, 0);
    assert_eq!(index.len(), 30_000);
}

#[test]
fn a_pool_too_small_for_the_run_is_reported() {
    let space = space(10_100, 10_000);
    let index = Toy::default();
    runner::bulk_load(&index, &space);
    let workload = Workload::ycsb(Ycsb::D);
    let result = runner::run(&hidden(2, Stop::Ops(1_000_000)), &index, |t| {
        workload.generator(&space, t, 2, 1)
    })
    .expect("valid run");
    assert_eq!(result.exhausted_threads, 2);
    assert_eq!(result.counts[OpKind::Insert], 100);
    assert!(result.ops < 1_000_000);
}

#[test]
fn string_keys_run_through_the_same_runner() {
    let owned = Dataset::Email
        .byte_keys(Some(5_000), 3)
        .expect("e-mail keys");
    let keys: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
    let space = KeySpace::split(keys, 4_500, 3).expect("valid split");
    let index = Toy::<Vec<u8>>::default();
    runner::bulk_load(&index, &space);
    let workload = Workload::ycsb(Ycsb::E);
    let result = runner::run(&hidden(2, Stop::Ops(10_000)), &index, |t| {
        workload.generator(&space, t, 2, 3)
    })
    .expect("valid run");
    assert_eq!(result.ops, 10_000);
    assert!(
        result.outcomes.scanned > result.counts[OpKind::Scan],
        "scans visit several keys"
    );
    assert_eq!(index.len() as u64, 4_500 + result.counts[OpKind::Insert]);
}

#[test]
fn distribution_shift_replaces_the_keys() {
    let normal = Dataset::Normal
        .u64_keys(Some(11_000), 1)
        .expect("normal keys");
    let linear = Dataset::Linear
        .u64_keys(Some(11_000), 1)
        .expect("linear keys");
    let (from, to) = Shift::key_spaces(normal, linear, 10_000, 1).expect("valid");
    let index = Toy::default();
    runner::bulk_load(&index, &from);
    let shift = Shift::new(5_000, Some(0));
    let config = hidden(2, Stop::Exhausted).with_interval(Duration::from_millis(10));
    let result =
        runner::run(&config, &index, |t| shift.generator(&from, &to, t, 2, 1)).expect("valid run");
    let held: Vec<u64> = index
        .map
        .lock()
        .expect("unpoisoned")
        .keys()
        .copied()
        .collect();
    assert_eq!(held, to.loaded(), "the index holds exactly distribution 2");
    assert!(result.counts[OpKind::Remove] >= 10_000);
}

#[test]
fn stream_errors_come_before_any_thread_starts() {
    let space = space(1_000, 1_000);
    let index = Toy::default();
    let result = runner::run(&hidden(2, Stop::Ops(10)), &index, |t| {
        if t == 1 {
            Err(Error::InvalidParameter("no stream".into()))
        } else {
            Workload::ycsb(Ycsb::C).generator(&space, t, 2, 1)
        }
    });
    assert!(matches!(result, Err(Error::InvalidParameter(_))));
    assert_eq!(index.calls().total(), 0);
    let zero_threads = runner::run(&hidden(0, Stop::Ops(10)), &index, |t| {
        Workload::ycsb(Ycsb::C).generator(&space, t, 1, 1)
    });
    assert!(zero_threads.is_err());
}

/// An adapter that panics on its first insert.
struct Faulty;

impl IndexAdapter<u64> for Faulty {
    fn name(&self) -> &str {
        "faulty"
    }
    fn bulk_load(&self, _: &[(u64, u64)]) {}
    fn get(&self, _: u64) -> Option<u64> {
        None
    }
    fn insert(&self, _: u64, _: u64) -> Option<u64> {
        panic!("the faulty adapter fails every insert")
    }
    fn update(&self, _: u64, _: u64) -> bool {
        false
    }
    fn remove(&self, _: u64) -> Option<u64> {
        None
    }
    fn scan(&self, _: u64, _: usize) -> usize {
        0
    }
}

#[test]
fn adapter_panics_propagate_instead_of_hanging() {
    for warmup in [Warmup::None, Warmup::Ops(100)] {
        let config = hidden(2, Stop::Ops(1_000)).with_warmup(warmup);
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            runner::run(&config, &Faulty, |t| {
                Ok((0..).map(move |i| {
                    if t == 0 && i == 10 {
                        Op::Insert(i, 0)
                    } else {
                        Op::Get(i)
                    }
                }))
            })
        }));
        assert!(outcome.is_err(), "the panic reached the caller");
    }
}
