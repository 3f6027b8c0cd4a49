//! The command line of `cargo bench --bench repro -- EXPERIMENT [options]`: the experiments'
//! names, the options, and the usage text. Parsing is pure — strings in, a [`Command`] or an
//! [`Error::Usage`] out — so every mistake becomes a message and exit code 2, never a panic.

use std::time::Duration;

use workload::{Dataset, KeyKind, Ycsb};

use crate::error::Error;
use crate::{registry, stores};

/// The experiments, each reproducing a paper experiment (see [`Experiment::summary`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Experiment {
    /// Read-only point gets of random loaded keys.
    Lookup,
    /// YCSB core workloads A–F.
    Ycsb,
    /// Read/write mixes, writes insert : remove : update = 1 : 1 : 2.
    Rw,
    /// XIndex's three-stage distribution shift.
    Shift,
    /// Byte-string keys, read-only and 90:10.
    Strings,
    /// Point gets and a 90:10 mix on the hash maps.
    Hash,
    /// Inserts from empty: resize stalls.
    Grow,
    /// XIndex-R with and without its write-ahead log.
    Wal,
    /// learnkv's embedded database next to the embedded stores, in redb's benchmark's shape.
    Engine,
    /// The platform's own pauses: threads that only read the clock.
    Pause,
}

impl Experiment {
    /// Every experiment, in usage order.
    pub const ALL: [Self; 10] = [
        Self::Lookup,
        Self::Ycsb,
        Self::Rw,
        Self::Shift,
        Self::Strings,
        Self::Hash,
        Self::Grow,
        Self::Wal,
        Self::Engine,
        Self::Pause,
    ];

    /// The name on the command line and in the report files.
    pub fn name(self) -> &'static str {
        match self {
            Self::Lookup => "lookup",
            Self::Ycsb => "ycsb",
            Self::Rw => "rw",
            Self::Shift => "shift",
            Self::Strings => "strings",
            Self::Hash => "hash",
            Self::Grow => "grow",
            Self::Wal => "wal",
            Self::Engine => "engine",
            Self::Pause => "pause",
        }
    }

    /// One line for the usage text: what it runs and which paper experiment it reproduces.
    pub fn summary(self) -> &'static str {
        match self {
            Self::Lookup => {
                "read-only gets of random loaded keys, uniform (XIndex Table 1 / Fig. 24 setting)"
            }
            Self::Ycsb => "YCSB A-F, scrambled Zipfian 0.99, latest for D (XIndex Fig. 9)",
            Self::Rw => {
                "read/write mixes, writes insert:remove:update = 1:1:2 (XIndex Figs. 10-11)"
            }
            Self::Shift => "3-stage distribution shift, throughput over time (XIndex Fig. 14)",
            Self::Strings => "byte-string keys, read-only and 90:10 (XIndex Figs. 16, 18)",
            Self::Hash => "point gets and a 90:10 mix on the hash maps (XIndex-H Figs. 25-27)",
            Self::Grow => "inserts from empty; max latency = resize stall (XIndex-H Fig. 26)",
            Self::Wal => "XIndex-R 50:50 with no log, Periodic and Immediate logging (XIndex §5)",
            Self::Engine => {
                "learnkv vs redb, heed, fjall, sled in redb's benchmark's shape (issue 8)"
            }
            Self::Pause => "the platform's pauses: threads that only read the clock (max floor)",
        }
    }

    /// The key count when `--keys` is not given (`pause` reads no keys).
    pub fn default_keys(self) -> usize {
        match self {
            Self::Pause => 0,
            Self::Shift | Self::Strings | Self::Engine => 1_000_000,
            Self::Lookup | Self::Ycsb | Self::Rw | Self::Hash | Self::Grow => 2_000_000,
            Self::Wal => 10_000_000,
        }
    }

    /// Whether the experiment measures for `--duration` (the others run their streams to the
    /// end).
    pub fn is_timed(self) -> bool {
        !matches!(self, Self::Shift | Self::Grow | Self::Engine)
    }

    fn parse(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|experiment| experiment.name() == name)
    }
}

/// The workloads of the `engine` experiment (redb's benchmark's phases).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KvWorkload {
    /// Bulk load of every record.
    Bulk,
    /// Individual durable writes.
    Durable,
    /// Batches of writes, each durable at commit.
    Batch,
    /// Random gets of loaded keys.
    Get,
    /// The same gets, [`GET_MANY_BATCH`] keys per call (learnkv's `get_many`; the peers,
    /// which have no batched read, loop over their gets).
    GetMany,
    /// Range reads from random loaded keys.
    Range,
    /// Range reads downward from random loaded keys.
    RangeRev,
    /// Removals of half the loaded keys.
    Remove,
}

impl KvWorkload {
    /// Every workload, in the order a run executes them.
    pub const ALL: [Self; 8] = [
        Self::Bulk,
        Self::Durable,
        Self::Batch,
        Self::Get,
        Self::GetMany,
        Self::Range,
        Self::RangeRev,
        Self::Remove,
    ];

    /// The name on the command line and in the `workload` column.
    pub fn name(self) -> &'static str {
        match self {
            Self::Bulk => "bulk",
            Self::Durable => "durable",
            Self::Batch => "batch",
            Self::Get => "get",
            Self::GetMany => "get-many",
            Self::Range => "range",
            Self::RangeRev => "range-rev",
            Self::Remove => "remove",
        }
    }
}

/// Keys per call in the engine experiment's `get-many` workload.
pub const GET_MANY_BATCH: usize = 16;

/// The measured time per run when `--duration` is not given.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(2);

/// The seed when `--seed` is not given.
pub const DEFAULT_SEED: u64 = 42;

/// The smallest `--keys`.
pub const MIN_KEYS: usize = 100;

/// The largest `--keys`.
pub const MAX_KEYS: usize = 1_000_000_000;

/// The largest thread count.
pub const MAX_THREADS: usize = 256;

/// The largest `--runs`.
pub const MAX_RUNS: usize = 100;

/// The longest `--duration`, in seconds.
pub const MAX_DURATION_SECS: f64 = 3_600.0;

/// A parsed command line.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// `--help`: print the usage.
    Help,
    /// No experiment named (plain `cargo bench` runs every bench target this way).
    Nothing,
    /// Run an experiment.
    Run(Box<Options>),
}

/// The options of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// The experiment.
    pub experiment: Experiment,
    /// `--keys`: keys in the data set (`None`: the experiment's default).
    pub keys: Option<usize>,
    /// `--threads`: the worker thread counts, in order.
    pub threads: Vec<usize>,
    /// `--dataset`: the data set (`None`: the experiment's default).
    pub dataset: Option<Dataset>,
    /// `--duration`: measured time per run.
    pub duration: Duration,
    /// `--runs`: runs per configuration; the median by throughput is reported.
    pub runs: usize,
    /// `--index`: the indexes to measure (`None`: every one that fits the experiment).
    pub index: Option<Vec<&'static str>>,
    /// `--workload`: the YCSB workloads.
    pub workloads: Vec<Ycsb>,
    /// `--workload` of `engine`: its workloads, in execution order.
    pub kv_workloads: Vec<KvWorkload>,
    /// `--write-ratio`: the write fractions of `rw`.
    pub write_ratios: Vec<f64>,
    /// `--seed`: the seed of data sets and streams.
    pub seed: u64,
    /// `--latency-sample`: runs with writes time one operation in this many (1: every one).
    pub latency_sample: u32,
    /// `--shift-to`: the distribution `shift` moves to.
    pub shift_to: Dataset,
}

impl Options {
    /// The key count to use.
    pub fn keys(&self) -> usize {
        self.keys.unwrap_or_else(|| self.experiment.default_keys())
    }
}

/// The usage text.
pub fn usage() -> String {
    let mut text = String::from(
        "Reproduction runs of learnkv's experiments, every index next to the others and to the\n\
         lookup oracle, measured in the same run.\n\n\
         usage: cargo bench --bench repro -- EXPERIMENT [options]\n\nexperiments:\n",
    );
    for experiment in Experiment::ALL {
        text.push_str(&format!(
            "  {:<8} {}\n",
            experiment.name(),
            experiment.summary()
        ));
    }
    text.push_str(&format!(
        "\noptions:\n\
         \x20 --keys N            keys in the data set: 2000000, 2_000_000, 500K, 2M (default\n\
         \x20                     2M; shift and strings 1M; a real data set: at most its size);\n\
         \x20                     90% are bulk-loaded, 10% kept to insert (grow: none loaded)\n\
         \x20 --threads LIST      worker thread counts (default 1,2)\n\
         \x20 --dataset NAME      uniform (default), linear, normal (shift's default),\n\
         \x20                     lognormal, sequential, clustered, osm, sosd:PATH;\n\
         \x20                     strings: words and email (default both), r{{LEN}}, url,\n\
         \x20                     lines:PATH\n\
         \x20 --duration SECS     measured seconds per run (default {}; not for shift and\n\
         \x20                     grow, which run their streams to the end)\n\
         \x20 --runs R            runs per configuration; the median by throughput is\n\
         \x20                     reported (default 1)\n\
         \x20 --index LIST        indexes to measure (default: all that fit the experiment):\n",
        DEFAULT_DURATION.as_secs(),
    ));
    let mut line = String::from("                     ");
    for (i, entry) in registry::ENTRIES.iter().enumerate() {
        let item = if i + 1 < registry::ENTRIES.len() {
            format!(" {},", entry.name)
        } else {
            format!(" {}", entry.name)
        };
        if line.len() + item.len() > 78 {
            text.push_str(&line);
            text.push('\n');
            line = String::from("                     ");
        }
        line.push_str(&item);
    }
    text.push_str(&line);
    text.push_str(&format!(
        "\n\
         \x20                     engine: {} (embedded stores)\n\
         \x20 --workload LIST     ycsb: a,b,c,d,e,f; engine: bulk,durable,batch,get,\n\
         \x20                     get-many,range,range-rev,remove (default all; engine\n\
         \x20                     always loads)\n\
         \x20 --write-ratio LIST  rw only: write fractions in (0, 1] (default 0.1,0.5)\n\
         \x20 --shift-to NAME     shift only: the distribution after the shift (default linear)\n\
         \x20 --seed N            seed of the data sets and operation streams (default {})\n\
         \x20 --latency-sample N  runs with writes time one operation in N (default 1, every\n\
         \x20                     one, as the worst-operation bounds need; read-only runs\n\
         \x20                     always time one in 16)\n\
         \x20 --help              this text\n\n\
         Output: a table on stdout, target/repro/EXPERIMENT.csv and target/repro/EXPERIMENT.svg.\n",
        stores::STORES
            .iter()
            .map(|store| store.name)
            .collect::<Vec<_>>()
            .join(", "),
        DEFAULT_SEED,
    ));
    text
}

/// Parses the arguments after the program name. `--bench`, which `cargo bench` appends, is
/// ignored.
///
/// Errors are [`Error::Usage`] with a message that names the option and the bad value.
pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Command, Error> {
    let mut experiment = None;
    let mut raw = RawOptions::default();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        if arg == "--bench" {
            continue;
        }
        if arg == "--help" || arg == "-h" {
            return Ok(Command::Help);
        }
        if let Some(option) = arg.strip_prefix("--") {
            let (name, inline) = match option.split_once('=') {
                Some((name, value)) => (name, Some(value.to_owned())),
                None => (option, None),
            };
            let slot = raw
                .slot(name)
                .ok_or_else(|| Error::usage(format!("unknown option `--{name}` (see --help)")))?;
            if slot.is_some() {
                return Err(Error::usage(format!("--{name} is given twice")));
            }
            let value = match inline {
                Some(value) => value,
                None => args
                    .next()
                    .filter(|value| !value.starts_with("--"))
                    .ok_or_else(|| Error::usage(format!("--{name} needs a value")))?,
            };
            *slot = Some(value);
        } else if arg.starts_with('-') {
            return Err(Error::usage(format!("unknown option `{arg}` (see --help)")));
        } else if experiment.is_some() {
            return Err(Error::usage(format!(
                "unexpected argument `{arg}`: give one experiment"
            )));
        } else {
            experiment = Some(Experiment::parse(&arg).ok_or_else(|| {
                Error::usage(format!(
                    "unknown experiment `{arg}`; expected one of {}",
                    Experiment::ALL.map(Experiment::name).join(", ")
                ))
            })?);
        }
    }
    match experiment {
        None if raw.is_empty() => Ok(Command::Nothing),
        None => Err(Error::usage("options given but no experiment (see --help)")),
        Some(experiment) => raw
            .resolve(experiment)
            .map(|options| Command::Run(Box::new(options))),
    }
}

/// The options as given, before their values are checked.
#[derive(Default)]
struct RawOptions {
    keys: Option<String>,
    threads: Option<String>,
    dataset: Option<String>,
    duration: Option<String>,
    runs: Option<String>,
    index: Option<String>,
    workload: Option<String>,
    write_ratio: Option<String>,
    seed: Option<String>,
    shift_to: Option<String>,
    latency_sample: Option<String>,
}

impl RawOptions {
    /// The value slot of the option `--name`.
    fn slot(&mut self, name: &str) -> Option<&mut Option<String>> {
        Some(match name {
            "keys" => &mut self.keys,
            "threads" => &mut self.threads,
            "dataset" => &mut self.dataset,
            "duration" => &mut self.duration,
            "runs" => &mut self.runs,
            "index" => &mut self.index,
            "workload" => &mut self.workload,
            "write-ratio" => &mut self.write_ratio,
            "seed" => &mut self.seed,
            "shift-to" => &mut self.shift_to,
            "latency-sample" => &mut self.latency_sample,
            _ => return None,
        })
    }

    fn is_empty(&self) -> bool {
        [
            &self.keys,
            &self.threads,
            &self.dataset,
            &self.duration,
            &self.runs,
            &self.index,
            &self.workload,
            &self.write_ratio,
            &self.seed,
            &self.shift_to,
            &self.latency_sample,
        ]
        .iter()
        .all(|slot| slot.is_none())
    }

    /// Checks every value and the options' fit with the experiment.
    fn resolve(self, experiment: Experiment) -> Result<Options, Error> {
        let refuse = |given: &Option<String>, option: &str, allowed: bool, why: &str| {
            if given.is_some() && !allowed {
                Err(Error::usage(format!(
                    "--{option} does not apply to {}: {why}",
                    experiment.name()
                )))
            } else {
                Ok(())
            }
        };
        refuse(
            &self.workload,
            "workload",
            matches!(experiment, Experiment::Ycsb | Experiment::Engine),
            "it picks the workloads of ycsb and engine",
        )?;
        refuse(
            &self.dataset,
            "dataset",
            experiment != Experiment::Engine,
            "its records are random 24-byte keys with 150-byte values",
        )?;
        for (given, option) in [
            (&self.keys, "keys"),
            (&self.dataset, "dataset"),
            (&self.index, "index"),
            (&self.seed, "seed"),
        ] {
            refuse(
                given,
                option,
                experiment != Experiment::Pause,
                "it measures threads that only read the clock",
            )?;
        }
        refuse(
            &self.write_ratio,
            "write-ratio",
            experiment == Experiment::Rw,
            "it sets the write fractions of rw",
        )?;
        refuse(
            &self.shift_to,
            "shift-to",
            experiment == Experiment::Shift,
            "it sets shift's second distribution",
        )?;
        refuse(
            &self.duration,
            "duration",
            experiment.is_timed(),
            "it runs its streams to the end (sizes come from --keys)",
        )?;
        refuse(
            &self.latency_sample,
            "latency-sample",
            experiment.is_timed() && experiment != Experiment::Pause,
            "it times no index's operations through the runner's timed runs",
        )?;
        let integer_dataset = |option: &str, value: &str| -> Result<Dataset, Error> {
            let dataset = parse_dataset(option, value)?;
            if dataset.key_kind() == KeyKind::U64 || experiment == Experiment::Strings {
                Ok(dataset)
            } else {
                Err(Error::usage(format!(
                    "--{option}: `{value}` has string keys; {} needs integer keys \
                     (use the strings experiment)",
                    experiment.name()
                )))
            }
        };
        Ok(Options {
            experiment,
            keys: self.keys.as_deref().map(parse_keys).transpose()?,
            threads: match &self.threads {
                Some(list) => parse_list("threads", list, parse_threads)?,
                None if experiment == Experiment::Wal => vec![2],
                None => vec![1, 2],
            },
            dataset: self
                .dataset
                .as_deref()
                .map(|value| integer_dataset("dataset", value))
                .transpose()?,
            duration: self
                .duration
                .as_deref()
                .map(parse_duration)
                .transpose()?
                .unwrap_or(DEFAULT_DURATION),
            runs: self
                .runs
                .as_deref()
                .map(parse_runs)
                .transpose()?
                .unwrap_or(1),
            index: self
                .index
                .as_deref()
                .map(|list| parse_list("index", list, parse_index))
                .transpose()?,
            workloads: match &self.workload {
                Some(list) if experiment == Experiment::Ycsb => {
                    parse_list("workload", list, parse_ycsb)?
                }
                _ => Ycsb::ALL.to_vec(),
            },
            kv_workloads: match &self.workload {
                Some(list) if experiment == Experiment::Engine => {
                    let chosen = parse_list("workload", list, parse_kv_workload)?;
                    KvWorkload::ALL
                        .into_iter()
                        .filter(|workload| chosen.contains(workload))
                        .collect()
                }
                _ => KvWorkload::ALL.to_vec(),
            },
            write_ratios: match &self.write_ratio {
                Some(list) => parse_list("write-ratio", list, parse_write_ratio)?,
                None => vec![0.1, 0.5],
            },
            seed: self
                .seed
                .as_deref()
                .map(|value| {
                    parse_number::<u64>(value).ok_or_else(|| {
                        Error::usage(format!("--seed: `{value}` is not an unsigned integer"))
                    })
                })
                .transpose()?
                .unwrap_or(DEFAULT_SEED),
            latency_sample: self
                .latency_sample
                .as_deref()
                .map(|value| {
                    parse_number::<u32>(value)
                        .filter(|&n| n >= 1)
                        .ok_or_else(|| {
                            Error::usage(format!(
                                "--latency-sample: `{value}` is not a positive integer"
                            ))
                        })
                })
                .transpose()?
                .unwrap_or(1),
            shift_to: match &self.shift_to {
                Some(value) => integer_dataset("shift-to", value)?,
                None => Dataset::Linear,
            },
        })
    }
}

/// Parses a comma-separated list, refusing empty items and repeated values.
fn parse_list<T: PartialEq>(
    option: &str,
    list: &str,
    item: impl Fn(&str) -> Result<T, String>,
) -> Result<Vec<T>, Error> {
    let mut values = Vec::new();
    for text in list.split(',') {
        let text = text.trim();
        if text.is_empty() {
            return Err(Error::usage(format!(
                "--{option}: `{list}` has an empty item"
            )));
        }
        let value = item(text).map_err(|reason| Error::usage(format!("--{option}: {reason}")))?;
        if values.contains(&value) {
            return Err(Error::usage(format!("--{option}: `{text}` is given twice")));
        }
        values.push(value);
    }
    Ok(values)
}

/// An unsigned integer, with `_` allowed between digits.
fn parse_number<T: std::str::FromStr>(text: &str) -> Option<T> {
    if text.starts_with('_') || text.ends_with('_') {
        return None;
    }
    text.replace('_', "").parse().ok()
}

/// A key count: digits (with `_`), optionally followed by `K` or `M`.
fn parse_keys(text: &str) -> Result<usize, Error> {
    let (digits, scale) = match text.as_bytes().last() {
        Some(b'K' | b'k') => (&text[..text.len() - 1], 1_000),
        Some(b'M' | b'm') => (&text[..text.len() - 1], 1_000_000),
        _ => (text, 1),
    };
    let keys = parse_number::<usize>(digits)
        .and_then(|count| count.checked_mul(scale))
        .ok_or_else(|| {
            Error::usage(format!(
                "--keys: `{text}` is not a key count (e.g. 2000000, 2_000_000, 500K, 2M)"
            ))
        })?;
    if (MIN_KEYS..=MAX_KEYS).contains(&keys) {
        Ok(keys)
    } else {
        Err(Error::usage(format!(
            "--keys: {keys} is out of range ({MIN_KEYS} to {MAX_KEYS})"
        )))
    }
}

fn parse_threads(text: &str) -> Result<usize, String> {
    match parse_number::<usize>(text) {
        Some(threads) if (1..=MAX_THREADS).contains(&threads) => Ok(threads),
        _ => Err(format!(
            "`{text}` is not a thread count (1 to {MAX_THREADS})"
        )),
    }
}

fn parse_duration(text: &str) -> Result<Duration, Error> {
    match text.parse::<f64>() {
        Ok(seconds) if seconds.is_finite() && seconds > 0.0 && seconds <= MAX_DURATION_SECS => {
            Ok(Duration::from_secs_f64(seconds))
        }
        _ => Err(Error::usage(format!(
            "--duration: `{text}` is not a number of seconds in (0, {MAX_DURATION_SECS}]"
        ))),
    }
}

fn parse_runs(text: &str) -> Result<usize, Error> {
    match parse_number::<usize>(text) {
        Some(runs) if (1..=MAX_RUNS).contains(&runs) => Ok(runs),
        _ => Err(Error::usage(format!(
            "--runs: `{text}` is not a run count (1 to {MAX_RUNS})"
        ))),
    }
}

fn parse_index(text: &str) -> Result<&'static str, String> {
    registry::find(text)
        .map(|entry| entry.name)
        .or_else(|| stores::find(text).map(|store| store.name))
        .ok_or_else(|| {
            format!(
                "unknown index `{text}`; expected some of {}, or for engine {}",
                registry::names(),
                stores::STORES
                    .iter()
                    .map(|store| store.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
}

fn parse_kv_workload(text: &str) -> Result<KvWorkload, String> {
    KvWorkload::ALL
        .into_iter()
        .find(|workload| workload.name() == text)
        .ok_or_else(|| {
            format!("unknown engine workload `{text}` (bulk, durable, batch, get, range, range-rev, remove)")
        })
}

fn parse_ycsb(text: &str) -> Result<Ycsb, String> {
    text.parse::<Ycsb>()
        .map_err(|_| format!("unknown YCSB workload `{text}` (expected a to f)"))
}

fn parse_write_ratio(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(ratio) if ratio > 0.0 && ratio <= 1.0 => Ok(ratio),
        _ => Err(format!("`{text}` is not a write fraction in (0, 1]")),
    }
}

fn parse_dataset(option: &str, value: &str) -> Result<Dataset, Error> {
    value
        .parse::<Dataset>()
        .map_err(|error| Error::usage(format!("--{option}: {error}")))
}
