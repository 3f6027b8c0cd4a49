//! `wal`: the cost of durability (XIndex §5 / §6.6): XIndex-R without a log (`xindex`), with
//! `Periodic(200 ms)` logging (`xindex-wal-periodic`) and with `Immediate` logging
//! (`xindex-wal-immediate`), 50:50 reads and writes (insert : remove : update = 1 : 1 : 2, the
//! `rw` mix) over lognormal keys by default. The paper's target: `Periodic` keeps at least 90 %
//! of the unlogged throughput (it measured 92 %). The logged adapters' notes give the checkpoint
//! and recovery times per million records and the log bytes written.

use workload::{Dataset, KeyDistribution, Workload};

use super::{IntegerRun, Outcome, select};
use crate::args::{Experiment, Options};
use crate::error::Error;
use crate::measure::{Case, Timing, compare};
use crate::registry::Family;

/// The write fraction of the run.
const WRITES: f64 = 0.5;

/// Runs the experiment.
pub fn run(options: &Options) -> Result<Outcome, Error> {
    let fits =
        |entry: &crate::registry::Entry| entry.name == "xindex" || entry.family == Family::Logged;
    let entries = select(options, fits, fits, "XIndex-R with and without its log")?;
    let mut options = options.clone();
    options.dataset.get_or_insert(Dataset::Lognormal);
    let IntegerRun { label, spaces, .. } = IntegerRun::prepare(&options)?;
    let workload =
        Workload::read_write(1.0 - WRITES, KeyDistribution::Uniform).map_err(Error::failed)?;
    let case = Case {
        experiment: Experiment::Wal.name(),
        workload: workload.name.clone(),
        dataset: label,
        keys: spaces.space.loaded().len() as u64,
        timing: Timing::timed(&options),
    };
    let reported = compare(
        &options,
        &case,
        &spaces.contenders(&entries, false),
        |space, thread, threads, seed| workload.generator(space, thread, threads, seed),
    )?;
    let remarks = vec![
        "xindex-wal-*: checkpoint = one checkpoint of the loaded index; recovery = checkpoint \
         plus the run's log into a fresh XIndex (read-only recovery + bulk load), per 1M records"
            .to_string(),
    ];
    Ok(Outcome::bars(Experiment::Wal, reported, remarks))
}
