//! Criterion benchmarks of the learned models (issue: foundation; XIndex Fig. 1's premise that
//! a learned model finds a key faster than a binary search).
//!
//! Group `lookup`: the lower bound of random existing keys among 10M sorted unique `u64` keys
//! (`lognormal_10M`, `uniform_10M`), by full binary search, by the optimal piecewise-linear
//! model with ε = 32 (`pla`) and by a two-stage RMI (`rmi`, one leaf per 64 keys).
//! Group `build`: the time to build each model over the same keys.
//!
//! Run: `cargo bench --bench learned_model`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use learned_model::{LearningProbe, PiecewiseRoot, Rmi, probe_segments, search};
use learnkv_bench::model_inputs::{Input, inputs};

/// The maximum error of the piecewise-linear model, as in FINEdex and PGM.
const PLA_EPSILON: u64 = 32;

/// Keys per RMI leaf.
const KEYS_PER_LEAF: usize = 64;

fn lookup(c: &mut Criterion) {
    let mut group = c.benchmark_group("lookup");
    group.throughput(Throughput::Elements(1));
    for Input {
        name,
        keys,
        queries,
    } in inputs()
    {
        let pla = PiecewiseRoot::build_optimal(keys, PLA_EPSILON).expect("sorted unique keys");
        let rmi = Rmi::build(keys, keys.len() / KEYS_PER_LEAF).expect("sorted unique keys");
        let mask = queries.len() - 1;
        group.bench_function(BenchmarkId::new("binary_search", name), |b| {
            let mut i = 0;
            b.iter(|| {
                i += 1;
                search::lower_bound(keys, black_box(&queries[i & mask]))
            })
        });
        group.bench_function(BenchmarkId::new("pla", name), |b| {
            let mut i = 0;
            b.iter(|| {
                i += 1;
                pla.lower_bound(keys, black_box(&queries[i & mask]))
            })
        });
        group.bench_function(BenchmarkId::new("rmi", name), |b| {
            let mut i = 0;
            b.iter(|| {
                i += 1;
                rmi.lower_bound(keys, black_box(queries[i & mask]))
            })
        });
    }
    group.finish();
}

fn build(c: &mut Criterion) {
    let mut group = c.benchmark_group("build");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    for Input { name, keys, .. } in inputs() {
        group.bench_function(BenchmarkId::new("pla", name), |b| {
            b.iter(|| PiecewiseRoot::build_optimal(black_box(keys), PLA_EPSILON))
        });
        group.bench_function(BenchmarkId::new("rmi", name), |b| {
            b.iter(|| Rmi::build(black_box(keys), keys.len() / KEYS_PER_LEAF))
        });
        group.bench_function(BenchmarkId::new("learning_probe", name), |b| {
            b.iter(|| probe_segments(black_box(keys), &LearningProbe::default()))
        });
    }
    group.finish();
}

criterion_group!(benches, lookup, build);
criterion_main!(benches);
