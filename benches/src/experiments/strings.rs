//! `strings`: byte-string keys (XIndex Figs. 16 and 18, string keys read-only and 90:10) on the
//! peers that take them. Default data sets: the real `words` list (its natural size, about 650K)
//! and e-mail-like strings (1M); `--dataset` runs one set instead (integer sets become 8-byte
//! big-endian strings). Workloads: read-only point gets and 90:10 (writes insert : remove :
//! update = 1 : 1 : 2), uniform requests.

use workload::{Dataset, KeyDistribution, KeySpace, Workload};

use super::{Outcome, byte_keys, describe, loaded_count, select};
use crate::args::{Experiment, Options};
use crate::error::Error;
use crate::measure::{Case, Contender, Timing, compare};
use crate::registry::ByteAdapter;

/// The read fraction of the mixed workload.
const READ: f64 = 0.9;

/// Runs the experiment.
pub fn run(options: &Options) -> Result<Outcome, Error> {
    let entries = select(
        options,
        |entry| entry.bytes.is_some(),
        |entry| entry.bytes.is_some(),
        "byte-string keys",
    )?;
    let datasets = match &options.dataset {
        Some(dataset) => vec![dataset.clone()],
        None => vec![Dataset::Words, Dataset::Email],
    };
    let gets = Workload::read_only(KeyDistribution::Uniform);
    let mixed = Workload::read_write(READ, KeyDistribution::Uniform).map_err(Error::failed)?;
    let mut reported = Vec::new();
    for dataset in &datasets {
        let label = dataset.label();
        let keys = byte_keys(dataset, options.keys(), options.seed)?;
        let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        let load = loaded_count(refs.len());
        let space = KeySpace::split(refs, load, options.seed).map_err(Error::failed)?;
        describe(&label, &space);
        let contenders: Vec<Contender<'_, &[u8], ByteAdapter>> = entries
            .iter()
            .filter_map(|entry| {
                entry.bytes.map(|make| Contender {
                    name: entry.name,
                    make: Box::new(make),
                    space: &space,
                })
            })
            .collect();
        for (workload, read_only) in [(&gets, true), (&mixed, false)] {
            let case = Case {
                experiment: Experiment::Strings.name(),
                workload: workload.name.clone(),
                dataset: label.clone(),
                keys: space.loaded().len() as u64,
                timing: if read_only {
                    Timing::read_only(options)
                } else {
                    Timing::timed(options)
                },
            };
            reported.extend(compare(
                options,
                &case,
                &contenders,
                |space, thread, threads, seed| workload.generator(space, thread, threads, seed),
            )?);
        }
    }
    let remarks = vec!["oracle: integer keys only (not in strings)".to_owned()];
    Ok(Outcome::bars(Experiment::Strings, reported, remarks))
}
