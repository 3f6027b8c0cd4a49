//! `grow`: inserts from empty until every key is in, on the hash maps (ordered indexes on
//! request) — XIndex-H Fig. 26's growth, where a blocking resize stalls every writer (LH+Block:
//! up to 160 s). The maximum latency is the worst resize stall; the rows also carry p99.99
//! (`p9999_ns`). Each thread inserts its share of the keys once; `bytes_per_key` is what the grown
//! index holds per key.

use std::time::Duration;

use workload::{Dataset, KeySpace, Workload};

use super::{Outcome, contenders_over, describe, integer_keys, is_oracle, oracle_remark, select};
use crate::args::{Experiment, Options};
use crate::error::Error;
use crate::measure::{Case, Timing, compare};
use crate::plot::Metric;
use crate::registry::Family;

/// Runs the experiment.
pub fn run(options: &Options) -> Result<Outcome, Error> {
    let entries = select(
        options,
        |entry| entry.family == Family::Hash,
        |entry| !is_oracle(entry),
        "the index grows; the oracle is a static array",
    )?;
    let dataset = options.dataset.clone().unwrap_or(Dataset::Uniform);
    let label = dataset.label();
    let keys = integer_keys(&dataset, options.keys(), options.seed)?;
    let total = keys.len() as u64;
    let space = KeySpace::split(keys, 0, options.seed).map_err(Error::failed)?;
    describe(&label, &space);
    let contenders = contenders_over(&entries, &space);
    let workload = Workload::insert_only();
    let case = Case {
        experiment: Experiment::Grow.name(),
        workload: workload.name.clone(),
        dataset: label,
        keys: total,
        timing: Timing::Exhausted {
            interval: Duration::from_secs(1),
        },
    };
    let reported = compare(
        options,
        &case,
        &contenders,
        |space, thread, threads, seed| workload.generator(space, thread, threads, seed),
    )?;
    let remarks = if options.index.is_none() {
        vec![oracle_remark("grow: every operation inserts")]
    } else {
        Vec::new()
    };
    let mut outcome = Outcome::bars(Experiment::Grow, reported, remarks);
    outcome.metrics.push(Metric::MaxLatencyMs);
    Ok(outcome)
}
