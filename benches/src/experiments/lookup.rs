//! `lookup`: read-only point gets of random loaded keys, drawn uniformly — the read-only setting
//! of XIndex Table 1 (uniform column) and Fig. 24 (vary `--dataset` and `--keys`), every ordered
//! index next to the lookup oracle.

use workload::{KeyDistribution, Workload};

use super::{IntegerRun, Outcome, select};
use crate::args::{Experiment, Options};
use crate::error::Error;
use crate::measure::{Case, Timing, compare};
use crate::registry::Family;

/// Runs the experiment.
pub fn run(options: &Options) -> Result<Outcome, Error> {
    let entries = select(
        options,
        |entry| entry.family != Family::Hash,
        |_| true,
        "point gets",
    )?;
    let IntegerRun { label, spaces, .. } = IntegerRun::prepare(options)?;
    let workload = Workload::read_only(KeyDistribution::Uniform);
    spaces.check_oracle(&entries, &workload, options)?;
    let case = Case {
        experiment: Experiment::Lookup.name(),
        workload: workload.name.clone(),
        dataset: label,
        keys: spaces.space.loaded().len() as u64,
        timing: Timing::read_only(options),
    };
    let reported = compare(
        options,
        &case,
        &spaces.contenders(&entries, true),
        |space, thread, threads, seed| workload.generator(space, thread, threads, seed),
    )?;
    Ok(Outcome::bars(Experiment::Lookup, reported, Vec::new()))
}
