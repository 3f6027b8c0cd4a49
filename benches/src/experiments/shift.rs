//! `shift`: XIndex §6.3's data-distribution shift (Fig. 14: normal → linear) in three stages —
//! a 90:10 mix on the keys of the first distribution, then 100 % writes (half inserts, half
//! removes) that replace every key with keys of the second, then 90:10 again — on the ordered
//! indexes, reported as throughput over time (100 ms intervals, in the plot and in the rows'
//! `timeline_mops` note) and over the whole run.
//!
//! Sizes: `--keys` keys of each distribution (default 1M), 90 % of them loaded; stages 1 and 3
//! run as many operations as there are loaded keys, stage 2 one insert and one remove per loaded
//! key. Every stream runs to its end (no `--duration`).

use std::time::Duration;

use workload::{Dataset, KeySpace, Shift};

use super::{
    Outcome, contenders_over, integer_keys, is_oracle, loaded_count, oracle_remark, select,
};
use crate::args::{Experiment, Options};
use crate::error::Error;
use crate::measure::{Case, Timing, compare};
use crate::plot::Series;
use crate::registry::Family;

/// The timeline's interval.
const INTERVAL: Duration = Duration::from_millis(100);

/// Runs the experiment.
pub fn run(options: &Options) -> Result<Outcome, Error> {
    let entries = select(
        options,
        |entry| entry.family == Family::Ordered,
        |entry| !is_oracle(entry),
        "stage 2 only writes; the oracle takes read-only runs only",
    )?;
    let from_dataset = options.dataset.clone().unwrap_or(Dataset::Normal);
    let to_dataset = &options.shift_to;
    let from_keys = integer_keys(&from_dataset, options.keys(), options.seed)?;
    let to_keys = integer_keys(to_dataset, options.keys(), options.seed)?;
    let load = loaded_count(from_keys.len().min(to_keys.len()));
    let (from, to) =
        Shift::key_spaces(from_keys, to_keys, load, options.seed).map_err(Error::failed)?;
    let label = format!("{}->{}", from_dataset.label(), to_dataset.label());
    eprintln!(
        "dataset {label}: {} keys loaded, replaced by {} keys",
        from.loaded().len(),
        to.loaded().len()
    );
    let shift = Shift::new(load as u64, Some(load as u64));
    let contenders = contenders_over(&entries, &from);
    let case = Case {
        experiment: Experiment::Shift.name(),
        workload: format!("shift-rw-{}", (shift.read * 100.0).round()),
        dataset: label,
        keys: from.loaded().len() as u64,
        timing: Timing::Exhausted { interval: INTERVAL },
    };
    let stream = |_: &KeySpace<u64>, thread, threads, seed| {
        shift.generator(&from, &to, thread, threads, seed)
    };
    let reported = compare(options, &case, &contenders, stream)?;
    let mut records = Vec::new();
    let mut runs = Vec::new();
    let mut timelines = Vec::new();
    for reported in reported {
        let mops: Vec<String> = reported
            .timeline
            .iter()
            .map(|mops| format!("{mops:.3}"))
            .collect();
        timelines.push(Series {
            index: reported.record.index.clone(),
            threads: reported.record.threads,
            interval: reported.interval,
            mops: reported.timeline,
        });
        records.push(
            reported
                .record
                .note("interval_ms", reported.interval.as_millis())
                .note("timeline_mops", mops.join("/")),
        );
        runs.extend(reported.runs);
    }
    let remarks = if options.index.is_none() {
        vec![oracle_remark("shift: it writes")]
    } else {
        Vec::new()
    };
    let mut outcome = Outcome::bars(Experiment::Shift, Vec::new(), remarks);
    outcome.records = records;
    outcome.runs = runs;
    outcome.timelines = timelines;
    Ok(outcome)
}
