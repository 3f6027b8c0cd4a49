//! `hash`: the hash maps on XIndex-H's point workloads (Figs. 25–27): read-only point gets of
//! random loaded keys (with the lookup oracle) and 90:10 and 50:50 read/write mixes (writes
//! insert : remove : update = 1 : 1 : 2, so the size stays stable; growth is the `grow`
//! experiment), uniform requests. Ordered indexes can join with `--index`.

use workload::{KeyDistribution, Workload};

use super::{IntegerRun, Outcome, is_oracle, oracle_remark, select};
use crate::args::{Experiment, Options};
use crate::error::Error;
use crate::measure::{Case, Timing, compare};
use crate::registry::Family;

/// The read fractions of the mixed workloads (read-heavy and write-heavy, Fig. 27).
const READS: [f64; 2] = [0.9, 0.5];

/// Runs the experiment.
pub fn run(options: &Options) -> Result<Outcome, Error> {
    let entries = select(
        options,
        |entry| entry.family != Family::Ordered,
        |_| true,
        "point operations",
    )?;
    let IntegerRun { label, spaces, .. } = IntegerRun::prepare(options)?;
    let gets = Workload::read_only(KeyDistribution::Uniform);
    let mixes = READS
        .iter()
        .map(|&read| Workload::read_write(read, KeyDistribution::Uniform).map_err(Error::failed))
        .collect::<Result<Vec<_>, _>>()?;
    spaces.check_oracle(&entries, &gets, options)?;
    let mut reported = Vec::new();
    let workloads = std::iter::once((&gets, true)).chain(mixes.iter().map(|mix| (mix, false)));
    for (workload, read_only) in workloads {
        let case = Case {
            experiment: Experiment::Hash.name(),
            workload: workload.name.clone(),
            dataset: label.clone(),
            keys: spaces.space.loaded().len() as u64,
            timing: Timing::for_run(read_only, options),
        };
        let contenders = spaces.contenders(&entries, read_only);
        if contenders.is_empty() {
            continue;
        }
        reported.extend(compare(
            options,
            &case,
            &contenders,
            |space, thread, threads, seed| workload.generator(space, thread, threads, seed),
        )?);
    }
    let mut remarks = Vec::new();
    if entries.iter().any(|entry| is_oracle(entry)) {
        let names: Vec<&str> = mixes.iter().map(|mix| mix.name.as_str()).collect();
        remarks.push(oracle_remark(&names.join(", ")));
    }
    Ok(Outcome::bars(Experiment::Hash, reported, remarks))
}
