//! `ycsb`: YCSB's core workloads A–F (XIndex Fig. 9) as the workload crate defines them —
//! scrambled Zipfian requests with θ = 0.99 (latest for D), scans of 1–100 keys — on the ordered
//! indexes, with the lookup oracle on the read-only workload C.
//!
//! D and E insert without removing, so their pool of keys to insert must outlast the run: for a
//! synthetic data set it is sized for [`POOL_RATE_PER_THREAD`] operations per second per thread
//! over the warm-up and `--duration`, at most 4 × `--keys` (extra keys of the same distribution;
//! the loaded keys are still 90 % of `--keys`). A real data set keeps its 10 % pool, and a fast
//! index may insert all of it before the run is over (its streams then end early: the row's
//! `exhausted_threads` note; its throughput is over the time it ran).

use workload::{Workload, Ycsb};

use super::{
    IntegerRun, IntegerSpaces, Outcome, describe, integer_keys, is_oracle, is_real, oracle_remark,
    select,
};
use crate::args::{Experiment, Options};
use crate::error::Error;
use crate::measure::{Case, Timing, compare, warmup};
use crate::registry::Family;

/// The throughput per thread that the insert pool of D and E is sized for (well above what any
/// peer reaches on this kind of machine).
pub const POOL_RATE_PER_THREAD: f64 = 5e6;

/// The largest pool of D and E, as a multiple of `--keys`.
const MAX_POOL_FACTOR: usize = 4;

/// Runs the experiment.
pub fn run(options: &Options) -> Result<Outcome, Error> {
    let entries = select(
        options,
        |entry| entry.family != Family::Hash,
        |entry| entry.family != Family::Hash,
        "workload E scans, which hash maps cannot",
    )?;
    let IntegerRun {
        dataset,
        label,
        load,
        spaces: base,
    } = IntegerRun::prepare(options)?;
    let mut growing: Option<IntegerSpaces> = None;
    let mut reported = Vec::new();
    for &ycsb in &options.workloads {
        let workload = Workload::ycsb(ycsb);
        let spaces = match pool_needed(&workload, options) {
            Some(pool) if pool > base.space.pool().len() && !is_real(&dataset) => {
                if growing.is_none() {
                    let keys = integer_keys(&dataset, load + pool, options.seed)?;
                    let spaces = IntegerSpaces::split(keys, load, options.seed)?;
                    describe(&format!("{label} (D, E)"), &spaces.space);
                    growing = Some(spaces);
                }
                growing
                    .as_ref()
                    .expect("the growing key spaces were made just above")
            }
            _ => &base,
        };
        let read_only = ycsb == Ycsb::C;
        if read_only {
            spaces.check_oracle(&entries, &workload, options)?;
        }
        let contenders = spaces.contenders(&entries, read_only);
        if contenders.is_empty() {
            continue;
        }
        let case = Case {
            experiment: Experiment::Ycsb.name(),
            workload: workload.name.clone(),
            dataset: label.clone(),
            keys: spaces.space.loaded().len() as u64,
            timing: Timing::for_run(read_only, options),
        };
        reported.extend(compare(
            options,
            &case,
            &contenders,
            |space, thread, threads, seed| workload.generator(space, thread, threads, seed),
        )?);
    }
    let mut remarks = Vec::new();
    if entries.iter().any(|entry| is_oracle(entry))
        && options.workloads.iter().any(|&ycsb| ycsb != Ycsb::C)
    {
        remarks.push(oracle_remark("ycsb-a, -b, -d, -e, -f: they write"));
    }
    Ok(Outcome::bars(Experiment::Ycsb, reported, remarks))
}

/// The pool a workload that grows the index needs to last the warm-up and the measurement at
/// [`POOL_RATE_PER_THREAD`]; `None` for a workload that does not grow it.
fn pool_needed(workload: &Workload, options: &Options) -> Option<usize> {
    let threads = options.threads.iter().copied().max().unwrap_or(1);
    let seconds = (options.duration + warmup(options.duration)).as_secs_f64();
    let ops = POOL_RATE_PER_THREAD * threads as f64 * seconds;
    let needed = usize::try_from(workload.pool_needed(ops as u64, threads)).unwrap_or(usize::MAX);
    (needed > 0).then(|| needed.min(MAX_POOL_FACTOR * options.keys()))
}
