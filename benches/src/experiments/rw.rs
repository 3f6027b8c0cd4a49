//! `rw`: XIndex's read/write micro-benchmark (Figs. 10–11): uniform requests, a write fraction
//! per `--write-ratio`, writes split insert : remove : update = 1 : 1 : 2 so the index keeps its
//! size. Ordered indexes by default; hash maps on request (no scans here).

use workload::{KeyDistribution, Workload};

use super::{IntegerRun, Outcome, is_oracle, oracle_remark, select};
use crate::args::{Experiment, Options};
use crate::error::Error;
use crate::measure::{Case, Timing, compare};
use crate::registry::Family;

/// Runs the experiment.
pub fn run(options: &Options) -> Result<Outcome, Error> {
    let entries = select(
        options,
        |entry| entry.family == Family::Ordered,
        |entry| !is_oracle(entry),
        "every run writes; the oracle takes read-only runs only",
    )?;
    let IntegerRun { label, spaces, .. } = IntegerRun::prepare(options)?;
    let mut reported = Vec::new();
    for &writes in &options.write_ratios {
        let workload =
            Workload::read_write(1.0 - writes, KeyDistribution::Uniform).map_err(Error::failed)?;
        let case = Case {
            experiment: Experiment::Rw.name(),
            workload: workload.name.clone(),
            dataset: label.clone(),
            keys: spaces.space.loaded().len() as u64,
            timing: Timing::timed(options),
        };
        reported.extend(compare(
            options,
            &case,
            &spaces.contenders(&entries, false),
            |space, thread, threads, seed| workload.generator(space, thread, threads, seed),
        )?);
    }
    let remarks = if options.index.is_none() {
        vec![oracle_remark("rw: every run writes")]
    } else {
        Vec::new()
    };
    Ok(Outcome::bars(Experiment::Rw, reported, remarks))
}
