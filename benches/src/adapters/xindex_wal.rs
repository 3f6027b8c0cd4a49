//! `xindex-wal-periodic` and `xindex-wal-immediate`: XIndex-R (`range_index::XIndex<u64>`)
//! with every write logged through `wal_checkpoint::Wal` (XIndex §5), with `Periodic(200 ms)` or
//! `Immediate` durability. A write is
//! `wal.put(0, &key.to_be_bytes(), &value.to_le_bytes(), || index.insert(key, value))`; an
//! update is the same put made conditional (`Wal::write_if`): the key's presence is checked and
//! its record updated in place under the key's log lock, so a remove in between can neither be
//! undone by the update nor leave a logged put of a key the index no longer holds.
//!
//! The log lives in a fresh directory under `target/repro/wal-tmp/`, removed on drop. The bulk
//! load also writes one checkpoint of the loaded index (timed, reported in the notes, and not
//! part of the load time); after the run, [`IndexAdapter::notes`] recovers the directory
//! (checkpoint plus the run's log, read-only) into a fresh XIndex and reports both times per
//! million records, the log bytes written and the group-commit rounds. The background
//! checkpointer is off (the paper's 30 s period exceeds a run).

use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use range_index::OrderedIndex;
use range_index::xindex::{Config, XIndex};
use wal_checkpoint::{Durability, Options, Wal};
use workload::IndexAdapter;

use super::visit;

/// XIndex-R behind a write-ahead log.
pub struct XIndexWal {
    name: &'static str,
    index: OnceLock<XIndex<u64>>,
    wal: Option<Wal>,
    dir: PathBuf,
    checkpoint: Mutex<Option<(Duration, u64)>>,
}

fn fresh_dir() -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = crate::output::target_dir()
        .join("repro")
        .join("wal-tmp")
        .join(format!(
            "{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn options(durability: Durability) -> Options {
    Options {
        durability,
        checkpoint_interval: None,
        ..Options::default()
    }
}

impl XIndexWal {
    /// XIndex-R logging with `Periodic(200 ms)` durability.
    pub fn periodic() -> Self {
        Self::new(
            "xindex-wal-periodic",
            Durability::Periodic(Duration::from_millis(200)),
        )
    }

    /// XIndex-R logging with `Immediate` durability.
    pub fn immediate() -> Self {
        Self::new("xindex-wal-immediate", Durability::Immediate)
    }

    fn new(name: &'static str, durability: Durability) -> Self {
        let dir = fresh_dir();
        let (wal, _) = Wal::open(&dir, options(durability))
            .unwrap_or_else(|e| panic!("the log opens in {}: {e}", dir.display()));
        Self {
            name,
            index: OnceLock::new(),
            wal: Some(wal),
            dir,
            checkpoint: Mutex::new(None),
        }
    }

    fn index(&self) -> &XIndex<u64> {
        self.index.get_or_init(|| {
            XIndex::new(Config::default()).expect("the default configuration is valid")
        })
    }

    fn wal(&self) -> &Wal {
        self.wal.as_ref().expect("the log lives until drop")
    }
}

impl Drop for XIndexWal {
    fn drop(&mut self) {
        drop(self.wal.take());
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn per_million(time: Duration, records: u64) -> String {
    format!(
        "{:.3} s/1M",
        time.as_secs_f64() * 1e6 / records.max(1) as f64
    )
}

impl IndexAdapter<u64> for XIndexWal {
    fn name(&self) -> &str {
        self.name
    }

    fn bulk_load(&self, pairs: &[(u64, u64)]) {
        if self.index.get().is_none() {
            let built = XIndex::bulk_load(pairs, Config::default())
                .expect("the harness loads sorted unique keys");
            if self.index.set(built).is_err() {
                panic!("bulk load into a used index");
            }
        } else {
            for &(key, value) in pairs {
                self.insert(key, value);
            }
        }
        // The loaded state becomes durable through a checkpoint (not through the log).
        let started = Instant::now();
        let index = self.index();
        let stats = self
            .wal()
            .checkpoint(|writer| {
                for (key, value) in index.range(..) {
                    writer.put(0, &key.to_be_bytes(), &value.to_le_bytes())?;
                }
                Ok(())
            })
            .expect("the checkpoint of the loaded index is written");
        *self.checkpoint.lock() = Some((started.elapsed(), stats.entries));
    }

    fn get(&self, key: u64) -> Option<u64> {
        self.index().get(&key)
    }

    fn insert(&self, key: u64, value: u64) -> Option<u64> {
        let index = self.index();
        self.wal()
            .put(0, &key.to_be_bytes(), &value.to_le_bytes(), || {
                index.insert(key, value)
            })
            .expect("the log write succeeds")
    }

    fn update(&self, key: u64, value: u64) -> bool {
        let index = self.index();
        self.wal()
            .write_if(
                0,
                &key.to_be_bytes(),
                Some(&value.to_le_bytes()),
                || index.get(&key).is_some(),
                || index.update(&key, |_| value),
            )
            .expect("the log write succeeds")
            .is_some()
    }

    fn remove(&self, key: u64) -> Option<u64> {
        let index = self.index();
        self.wal()
            .remove(0, &key.to_be_bytes(), || index.remove(&key))
            .expect("the log write succeeds")
    }

    fn scan(&self, start: u64, n: usize) -> usize {
        visit(
            self.index()
                .scan(&start, n)
                .into_iter()
                .map(|(_, value)| value),
        )
    }

    fn notes(&self) -> Vec<(String, String)> {
        let mut notes = Vec::new();
        let wal = self.wal();
        if wal.sync().is_err() {
            return notes;
        }
        let stats = wal.stats();
        notes.push(("log_bytes".into(), stats.bytes_written.to_string()));
        notes.push(("commit_rounds".into(), stats.rounds.to_string()));
        if let Some((time, entries)) = *self.checkpoint.lock() {
            notes.push(("checkpoint".into(), per_million(time, entries)));
        }
        let started = Instant::now();
        let Ok(recovery) = wal_checkpoint::recover_read_only(&self.dir, &options(Durability::None))
        else {
            return notes;
        };
        let pairs: Vec<(u64, u64)> = recovery
            .iter()
            .filter_map(|(_, key, value)| {
                Some((
                    u64::from_be_bytes(key.try_into().ok()?),
                    u64::from_le_bytes(value.try_into().ok()?),
                ))
            })
            .collect();
        let rebuilt = XIndex::bulk_load(&pairs, Config::default());
        let elapsed = started.elapsed();
        if rebuilt.is_ok() {
            let records = recovery.stats.checkpoint_entries + recovery.stats.records_replayed;
            notes.push(("recovery".into(), per_million(elapsed, records)));
            notes.push((
                "replayed".into(),
                recovery.stats.records_replayed.to_string(),
            ));
        }
        notes
    }
}
