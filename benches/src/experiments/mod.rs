//! The reproduction experiments, one module each, and what they share: picking the indexes
//! (`--index`, filtered by what fits the experiment), the data sets, the key spaces (with the
//! oracle's space of positions) and the outcome handed to the reports.
//!
//! Adding an experiment: a module with a `run(&Options) -> Result<Outcome, Error>`, a variant of
//! [`Experiment`] and its arm in [`run`]. Adding an index: an entry in [`crate::registry`].

pub mod engine;
pub mod grow;
pub mod hash;
pub mod lookup;
pub mod pause;
pub mod rw;
pub mod shift;
pub mod strings;
pub mod wal;
pub mod ycsb;

use std::sync::Arc;

use workload::report::Record;
use workload::{Dataset, IndexAdapter, KeySpace, Workload, dataset};

use crate::args::{Experiment, MIN_KEYS, Options};
use crate::error::Error;
use crate::measure::{Contender, Reported, run_seed};
use crate::oracle;
use crate::plot::{Metric, Series};
use crate::registry::{ENTRIES, Entry, Family};

/// What an experiment hands to the reports.
pub struct Outcome {
    /// The experiment.
    pub experiment: Experiment,
    /// One row per (configuration, index, thread count): the median run.
    pub records: Vec<Record>,
    /// Every run's row, for the table (which takes medians over an index's runs).
    pub runs: Vec<Record>,
    /// Lines printed under the table (which indexes were left out of which runs, and why).
    pub remarks: Vec<String>,
    /// Throughput over time per index and thread count (the distribution shift).
    pub timelines: Vec<Series>,
    /// The metrics of the bar plot (when there are no timelines).
    pub metrics: Vec<Metric>,
}

impl Outcome {
    /// An outcome plotted as bars of throughput.
    fn bars(experiment: Experiment, reported: Vec<Reported>, remarks: Vec<String>) -> Self {
        let runs = reported
            .iter()
            .flat_map(|r| r.runs.iter().cloned())
            .collect();
        Self {
            experiment,
            records: reported.into_iter().map(|r| r.record).collect(),
            runs,
            remarks,
            timelines: Vec::new(),
            metrics: vec![Metric::Mops],
        }
    }
}

/// Runs the experiment `options` names. Errors when no index fits any of its runs.
pub fn run(options: &Options) -> Result<Outcome, Error> {
    let outcome = match options.experiment {
        Experiment::Lookup => lookup::run(options),
        Experiment::Ycsb => ycsb::run(options),
        Experiment::Rw => rw::run(options),
        Experiment::Shift => shift::run(options),
        Experiment::Strings => strings::run(options),
        Experiment::Hash => hash::run(options),
        Experiment::Grow => grow::run(options),
        Experiment::Wal => wal::run(options),
        Experiment::Engine => engine::run(options),
        Experiment::Pause => pause::run(options),
    }?;
    if outcome.records.is_empty() {
        return Err(Error::usage(format!(
            "nothing to measure: no index given with --index takes part in a run of {}",
            options.experiment.name()
        )));
    }
    Ok(outcome)
}

/// The indexes to measure: those `--index` names, each of which must be `allowed`, or by
/// default every entry that is `default`, in registry order.
fn select(
    options: &Options,
    default: impl Fn(&Entry) -> bool,
    allowed: impl Fn(&Entry) -> bool,
    fits: &str,
) -> Result<Vec<&'static Entry>, Error> {
    let Some(names) = &options.index else {
        return Ok(ENTRIES.iter().filter(|entry| default(entry)).collect());
    };
    let mut chosen = Vec::new();
    for name in names {
        let entry = crate::registry::find(name).ok_or_else(|| {
            Error::usage(format!(
                "--index: `{name}` is no index of {} (embedded stores run in engine only)",
                options.experiment.name()
            ))
        })?;
        if !allowed(entry) {
            let fitting: Vec<&str> = ENTRIES
                .iter()
                .filter(|entry| allowed(entry))
                .map(|entry| entry.name)
                .collect();
            return Err(Error::usage(format!(
                "--index: {name} does not fit {} ({fits}); it takes {}",
                options.experiment.name(),
                fitting.join(", ")
            )));
        }
        chosen.push(entry);
    }
    Ok(chosen)
}

/// Whether an entry is the oracle.
fn is_oracle(entry: &Entry) -> bool {
    entry.family == Family::Oracle
}

/// The remark for runs the oracle sits out.
fn oracle_remark(left_out_of: &str) -> String {
    format!("oracle: read-only runs only (not in {left_out_of})")
}

/// How many of `n` keys are bulk-loaded: 90 %, the other 10 % (rounded down) being the insert
/// pool (workload's `mix` module: a 10 % pool keeps at least 90 % of the loaded keys live under
/// remove-heavy mixes).
fn loaded_count(n: usize) -> usize {
    n - n / 10
}

/// Whether a data set is a real one with a natural size (it cannot grow on request).
fn is_real(dataset: &Dataset) -> bool {
    matches!(
        dataset,
        Dataset::Sosd(_) | Dataset::Words | Dataset::Lines(_)
    )
}

/// `n` sorted unique keys of `dataset`, or all of a real set's keys when it holds fewer.
fn integer_keys(dataset: &Dataset, n: usize, seed: u64) -> Result<Vec<u64>, Error> {
    let keys = if is_real(dataset) {
        let all = dataset.u64_keys(None, seed).map_err(Error::Input)?;
        if all.len() > n {
            dataset::sample_sorted(&all, n, seed)
        } else {
            all
        }
    } else {
        dataset.u64_keys(Some(n), seed).map_err(Error::Input)?
    };
    enough(dataset, keys.len())?;
    Ok(keys)
}

/// `n` sorted unique byte-string keys of `dataset` (integers as 8-byte big-endian strings), or
/// all of a real set's keys when it holds fewer.
fn byte_keys(dataset: &Dataset, n: usize, seed: u64) -> Result<Vec<Vec<u8>>, Error> {
    let keys = if is_real(dataset) {
        let all = dataset.byte_keys(None, seed).map_err(Error::Input)?;
        if all.len() > n {
            dataset::sample_sorted(&all, n, seed)
        } else {
            all
        }
    } else {
        dataset.byte_keys(Some(n), seed).map_err(Error::Input)?
    };
    enough(dataset, keys.len())?;
    Ok(keys)
}

/// Refuses data sets smaller than [`MIN_KEYS`].
fn enough(dataset: &Dataset, keys: usize) -> Result<(), Error> {
    if keys < MIN_KEYS {
        return Err(Error::usage(format!(
            "data set {} holds {keys} distinct keys; the runs need at least {MIN_KEYS}",
            dataset.label()
        )));
    }
    Ok(())
}

/// Prints what a run's key space holds.
fn describe<K: Copy>(dataset: &str, space: &KeySpace<K>) {
    eprintln!(
        "dataset {dataset}: {} keys loaded, {} kept to insert",
        space.loaded().len(),
        space.pool().len()
    );
}

/// The contenders among `entries` over one key space, for runs that never include the oracle
/// (its array is made from loaded keys, which these runs do not bulk-load).
fn contenders_over<'s>(
    entries: &[&'static Entry],
    space: &'s KeySpace<u64>,
) -> Vec<Contender<'s, u64, dyn IndexAdapter<u64>>> {
    entries
        .iter()
        .map(|&entry| Contender {
            name: entry.name,
            make: Box::new(move || (entry.integer)(&Arc::from(Vec::new()))),
            space,
        })
        .collect()
}

/// What every bulk-loaded `u64` experiment starts from: the data set (`--dataset`, uniform by
/// default), its label, how many keys are loaded, and the key spaces.
struct IntegerRun {
    dataset: Dataset,
    label: String,
    load: usize,
    spaces: IntegerSpaces,
}

impl IntegerRun {
    /// Generates or reads the keys of `--dataset`, splits them into loaded keys and the insert
    /// pool, and says so.
    fn prepare(options: &Options) -> Result<Self, Error> {
        let dataset = options.dataset.clone().unwrap_or(Dataset::Uniform);
        let label = dataset.label();
        let keys = integer_keys(&dataset, options.keys(), options.seed)?;
        let load = loaded_count(keys.len());
        let spaces = IntegerSpaces::split(keys, load, options.seed)?;
        describe(&label, &spaces.space);
        Ok(Self {
            dataset,
            label,
            load,
            spaces,
        })
    }
}

/// The key spaces of a `u64` run: the keys, and the positions the oracle runs on.
struct IntegerSpaces {
    space: KeySpace<u64>,
    positions: KeySpace<u64>,
    loaded: Arc<[u64]>,
}

impl IntegerSpaces {
    /// Splits `keys` into `load` loaded keys and the pool.
    fn split(keys: Vec<u64>, load: usize, seed: u64) -> Result<Self, Error> {
        let total = keys.len();
        let space = KeySpace::split(keys, load, seed).map_err(Error::failed)?;
        let positions =
            oracle::position_space(space.loaded().len(), total).map_err(Error::failed)?;
        let loaded = Arc::from(space.loaded());
        Ok(Self {
            space,
            positions,
            loaded,
        })
    }

    /// The contenders among `entries`; the oracle only if `with_oracle`, on the positions.
    fn contenders<'s>(
        &'s self,
        entries: &[&'static Entry],
        with_oracle: bool,
    ) -> Vec<Contender<'s, u64, dyn IndexAdapter<u64>>> {
        entries
            .iter()
            .filter(|entry| with_oracle || !is_oracle(entry))
            .map(|&entry| Contender {
                name: entry.name,
                make: Box::new(move || (entry.integer)(&self.loaded)),
                space: if is_oracle(entry) {
                    &self.positions
                } else {
                    &self.space
                },
            })
            .collect()
    }

    /// Checks, when the oracle is among `entries`, that `workload` draws the same ranks over the
    /// positions as over the keys at every thread count, in every run.
    fn check_oracle(
        &self,
        entries: &[&'static Entry],
        workload: &Workload,
        options: &Options,
    ) -> Result<(), Error> {
        if entries.iter().any(|entry| is_oracle(entry)) {
            for &threads in &options.threads {
                for run in 0..options.runs {
                    oracle::check_same_draws(
                        workload,
                        &self.space,
                        &self.positions,
                        threads,
                        run_seed(options.seed, run),
                    )
                    .map_err(Error::Failed)?;
                }
            }
        }
        Ok(())
    }
}
