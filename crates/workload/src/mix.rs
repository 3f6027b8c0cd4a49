//! Operation mixes and the per-thread operation streams: YCSB's core workloads and XIndex §6.3's
//! micro-benchmarks — read/write ratios whose writes are insert : remove : update = 1 : 1 : 2
//! (which keeps the index size stable), hotspots, read-only runs after a bulk load and
//! insert-only growth from an empty index.
//!
//! A stream is deterministic for (workload, key space, seed, thread, thread count). Reads,
//! updates, scans and read-modify-writes address loaded keys through the [`KeyDistribution`];
//! inserts and removes use the thread's own keys (see [`KeySpace`]), so threads never insert the
//! same key, never insert a present key and never remove an absent one. Reads of keys a remove
//! has taken out miss (the runner counts hits); since a thread's live keys are a window sliding
//! over its loaded keys and its pool slice, at least `1 − pool / loaded` of the loaded keys stay
//! live, so keep the pool small next to the loaded keys (10 % keeps 90 % of reads hitting).

use rand::{Rng, RngExt};

use crate::distribution::{Chooser, KeyDistribution, Pick, load_order_seed};
use crate::error::{Error, Result};
use crate::keyspace::{KeySpace, ThreadKeys};
use crate::op::{Op, OpKind};
use crate::seed;
use crate::ycsb::Ycsb;

/// The fraction of each operation kind; the fractions add up to 1.
///
/// ```
/// use workload::{Mix, OpKind};
/// let mix = Mix::read_write(0.9)?; // XIndex's 90:10, writes split 1:1:2
/// assert!((mix.fraction(OpKind::Insert) - 0.025).abs() < 1e-12);
/// assert!((mix.fraction(OpKind::Update) - 0.05).abs() < 1e-12);
/// # Ok::<(), workload::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mix {
    /// Point lookups.
    pub get: f64,
    /// Inserts of new keys.
    pub insert: f64,
    /// Updates of loaded keys.
    pub update: f64,
    /// Removes of present keys.
    pub remove: f64,
    /// Range scans.
    pub scan: f64,
    /// Read-modify-writes.
    pub read_modify_write: f64,
}

impl Mix {
    /// No operation at all; set the fields you need.
    pub const NONE: Self = Self {
        get: 0.0,
        insert: 0.0,
        update: 0.0,
        remove: 0.0,
        scan: 0.0,
        read_modify_write: 0.0,
    };

    /// `read` lookups and `1 − read` writes split insert : remove : update = 1 : 1 : 2.
    pub fn read_write(read: f64) -> Result<Self> {
        if !(0.0..=1.0).contains(&read) {
            return Err(Error::invalid(format!(
                "the read fraction must be in [0, 1], not {read}"
            )));
        }
        let write = 1.0 - read;
        Ok(Self {
            get: read,
            insert: write / 4.0,
            remove: write / 4.0,
            update: write / 2.0,
            ..Self::NONE
        })
    }

    /// The fraction of one kind.
    pub fn fraction(&self, kind: OpKind) -> f64 {
        match kind {
            OpKind::Get => self.get,
            OpKind::Insert => self.insert,
            OpKind::Update => self.update,
            OpKind::Remove => self.remove,
            OpKind::Scan => self.scan,
            OpKind::ReadModifyWrite => self.read_modify_write,
        }
    }

    /// Whether any operation addresses loaded keys through the request distribution.
    fn reads_loaded_keys(&self) -> bool {
        self.get + self.update + self.scan + self.read_modify_write > 0.0
    }

    /// Checks that every fraction is in `[0, 1]` and that they add up to 1.
    fn validate(&self) -> Result<()> {
        let fractions = OpKind::ALL.map(|kind| self.fraction(kind));
        if fractions.iter().any(|f| !(0.0..=1.0).contains(f))
            || (fractions.iter().sum::<f64>() - 1.0).abs() > 1e-9
        {
            return Err(Error::invalid(format!(
                "operation fractions must be in [0, 1] and add up to 1: {self:?}"
            )));
        }
        Ok(())
    }
}

/// A workload: a name for reports, a mix, a request distribution and a scan length range.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    /// The name in reports, e.g. `ycsb-a` or `rw-90`.
    pub name: String,
    /// The operation mix.
    pub mix: Mix,
    /// Which loaded keys reads, updates, scans and read-modify-writes address.
    pub distribution: KeyDistribution,
    /// The scan length, drawn uniformly from `scan_len.0..=scan_len.1` (YCSB: 1 to 100).
    pub scan_len: (usize, usize),
}

/// The standard deviations of a thread's insert − remove walk that [`Workload::pool_needed`]
/// leaves room for.
const WALK_MARGIN: f64 = 6.0;

/// YCSB's default scan lengths: uniform in 1–100.
pub const YCSB_SCAN_LEN: (usize, usize) = (1, 100);

impl Workload {
    /// One of YCSB's core workloads, with its standard mix and request distribution.
    pub fn ycsb(workload: Ycsb) -> Self {
        Self {
            name: workload.name().to_owned(),
            mix: workload.mix(),
            distribution: workload.distribution(),
            scan_len: YCSB_SCAN_LEN,
        }
    }

    /// XIndex's read/write micro-benchmark: `read` lookups, writes split insert : remove : update =
    /// 1 : 1 : 2. Named `rw-{read %}`.
    pub fn read_write(read: f64, distribution: KeyDistribution) -> Result<Self> {
        Ok(Self {
            name: format!("rw-{}", percent(read)),
            mix: Mix::read_write(read)?,
            distribution,
            scan_len: YCSB_SCAN_LEN,
        })
    }

    /// XIndex Fig. 13: a read/write mix with 90 % of the requests on the first `size` fraction of
    /// the keys. Named `hotspot-{size}-rw-{read %}`.
    pub fn hotspot(read: f64, size: f64) -> Result<Self> {
        let mut workload = Self::read_write(read, KeyDistribution::hotspot(size))?;
        workload.name = format!("hotspot-{size}-rw-{}", percent(read));
        Ok(workload)
    }

    /// Lookups only (after a bulk load).
    pub fn read_only(distribution: KeyDistribution) -> Self {
        Self {
            name: "read-only".into(),
            mix: Mix {
                get: 1.0,
                ..Mix::NONE
            },
            distribution,
            scan_len: YCSB_SCAN_LEN,
        }
    }

    /// Inserts only: each thread inserts its slice of the pool once, then its stream ends (use
    /// [`KeySpace::split`] with `load = 0` to grow from an empty index).
    pub fn insert_only() -> Self {
        Self {
            name: "insert-only".into(),
            mix: Mix {
                insert: 1.0,
                ..Mix::NONE
            },
            distribution: KeyDistribution::Uniform,
            scan_len: YCSB_SCAN_LEN,
        }
    }

    /// The pool size that lets `ops` operations, shared by `threads` threads as the runner shares
    /// them, run to the end without a stream running dry (0 for no threads).
    ///
    /// A thread's stream ends for good the first time an insert finds every key it owns live, that
    /// is when its inserts minus removes exceed its pool slice. That difference is a random walk:
    /// over `m` operations it drifts by `(insert − remove) · m` with a standard deviation under
    /// `σ = √(m · (insert + remove))`, so each thread gets its expected net inserts plus `6σ`
    /// (the walk's maximum passes `6σ` with probability about `2·10⁻⁹`), for its share of at most
    /// `⌈ops / threads⌉` operations, times `threads` since [`KeySpace::pool_slice`] splits the pool
    /// evenly. A balanced mix (insert = remove, as in [`Workload::read_write`]) needs a pool too.
    /// Removes need live keys in the same way: keep the loaded keys well above the pool.
    ///
    /// ```
    /// use workload::{KeyDistribution, Workload};
    /// let rw = Workload::read_write(0.9, KeyDistribution::Uniform)?;
    /// // No net inserts, but 6 · √(500,000 · 0.05) = 948.7 per thread for the walk.
    /// assert_eq!(rw.pool_needed(1_000_000, 2), 2 * 949);
    /// # Ok::<(), workload::Error>(())
    /// ```
    pub fn pool_needed(&self, ops: u64, threads: usize) -> u64 {
        if threads == 0 {
            return 0;
        }
        let per_thread = ops.div_ceil(threads as u64) as f64;
        let (insert, remove) = (self.mix.insert, self.mix.remove);
        let drift = (insert - remove).max(0.0) * per_thread;
        let spread = WALK_MARGIN * (per_thread * (insert + remove)).sqrt();
        ((drift + spread).ceil() as u64).saturating_mul(threads as u64)
    }

    /// The operation stream of thread `thread` of `threads` over `space`.
    ///
    /// Errors: an invalid mix or distribution, `thread >= threads`, or a mix that reads loaded
    /// keys over a key space with none.
    pub fn generator<'a, K: Copy>(
        &self,
        space: &'a KeySpace<K>,
        thread: usize,
        threads: usize,
        seed: u64,
    ) -> Result<OpGenerator<'a, K>> {
        check_thread(thread, threads)?;
        OpGenerator::new(
            self,
            space,
            ThreadKeys::new(space, thread, threads, seed),
            thread,
            seed,
        )
    }
}

/// Checks that thread `thread` of `threads` exists.
pub(crate) fn check_thread(thread: usize, threads: usize) -> Result<()> {
    if thread < threads {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "thread {thread} of {threads} does not exist"
        )))
    }
}

/// A read fraction as a whole percentage for names.
fn percent(read: f64) -> String {
    format!("{}", (read * 100.0 * 1e6).round() / 1e6)
}

/// One thread's endless (or, when its keys run out, finite) stream of operations.
///
/// The stream ends — `next` returns `None` from then on — when the mix asks for an insert and
/// every key the thread owns is already live, or for a remove and none is; size the pool with
/// [`Workload::pool_needed`] to avoid it.
#[derive(Debug, Clone)]
pub struct OpGenerator<'a, K> {
    loaded: &'a [K],
    keys: ThreadKeys<'a, K>,
    /// Upper bounds of each kind's share of `[0, 1)`, in [`OpKind::ALL`] order.
    thresholds: [f64; 6],
    chooser: Option<Chooser>,
    scan_len: (usize, usize),
    rng: seed::Rng,
    ended: bool,
}

impl<'a, K: Copy> OpGenerator<'a, K> {
    /// A stream over `keys` (thread `thread`'s owned keys of `space`).
    pub(crate) fn new(
        workload: &Workload,
        space: &'a KeySpace<K>,
        keys: ThreadKeys<'a, K>,
        thread: usize,
        seed: u64,
    ) -> Result<Self> {
        workload.mix.validate()?;
        let (min, max) = workload.scan_len;
        if workload.mix.scan > 0.0 && (min == 0 || min > max) {
            return Err(Error::invalid(format!(
                "scan lengths must satisfy 1 <= min <= max, not {min}..={max}"
            )));
        }
        let chooser = if workload.mix.reads_loaded_keys() {
            Some(Chooser::new(
                &workload.distribution,
                space.loaded().len(),
                load_order_seed(seed),
            )?)
        } else {
            None
        };
        let mut total = 0.0;
        let thresholds = OpKind::ALL.map(|kind| {
            total += workload.mix.fraction(kind);
            total
        });
        Ok(Self {
            loaded: space.loaded(),
            keys,
            thresholds,
            chooser,
            scan_len: workload.scan_len,
            rng: seed::rng(seed, seed::stream::THREADS + thread as u64),
            ended: false,
        })
    }

    /// The kind of the next operation.
    fn next_kind(&mut self) -> OpKind {
        let draw: f64 = self.rng.random();
        let index = self.thresholds.iter().position(|&bound| draw < bound);
        // Rounding can leave the last bound a hair under 1: the draw then belongs to the last
        // kind with a non-zero share.
        let index =
            index.unwrap_or_else(|| self.thresholds.iter().rposition(|&b| b > 0.0).unwrap_or(0));
        OpKind::ALL[index]
    }

    /// A loaded (or, under "latest", recently inserted) key from the request distribution.
    fn chosen_key(&mut self) -> K {
        let chooser = self
            .chooser
            .as_mut()
            .expect("a chooser exists whenever the mix reads loaded keys");
        match chooser.pick(&mut self.rng, self.keys.inserted()) {
            Pick::Loaded(rank) => self.loaded[rank],
            Pick::Inserted(j) => self.keys.nth(self.keys.owned_loaded() + j),
        }
    }

    /// The thread's owned keys, for a stage that continues where this stream stops.
    pub(crate) fn into_keys(self) -> ThreadKeys<'a, K> {
        self.keys
    }
}

impl<K: Copy> Iterator for OpGenerator<'_, K> {
    type Item = Op<K>;

    fn next(&mut self) -> Option<Op<K>> {
        if self.ended {
            return None;
        }
        let op = match self.next_kind() {
            OpKind::Get => Some(Op::Get(self.chosen_key())),
            OpKind::Update => Some(Op::Update(self.chosen_key(), self.rng.next_u64())),
            OpKind::ReadModifyWrite => {
                Some(Op::ReadModifyWrite(self.chosen_key(), self.rng.next_u64()))
            }
            OpKind::Scan => {
                let start = self.chosen_key();
                Some(Op::Scan(
                    start,
                    self.rng.random_range(self.scan_len.0..=self.scan_len.1),
                ))
            }
            OpKind::Insert => self
                .keys
                .next_insert()
                .map(|key| Op::Insert(key, self.rng.next_u64())),
            OpKind::Remove => self.keys.next_remove().map(Op::Remove),
        };
        self.ended = op.is_none();
        op
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::OpCounts;
    use std::collections::BTreeSet;

    fn space(n: u64, load: usize) -> KeySpace<u64> {
        KeySpace::split((0..n).map(|i| i * 2).collect(), load, 1).expect("valid split")
    }

    #[test]
    fn read_write_mix_keeps_the_size_stable_and_the_keys_consistent() {
        let space = space(20_000, 15_000);
        let workload = Workload::read_write(0.5, KeyDistribution::Uniform).expect("valid");
        let mut live: BTreeSet<u64> = space.loaded().iter().copied().collect();
        let threads = 2;
        let mut generators: Vec<_> = (0..threads)
            .map(|t| workload.generator(&space, t, threads, 3).expect("valid"))
            .collect();
        let mut counts = OpCounts::default();
        for step in 0..200_000 {
            let op = generators[step % threads]
                .next()
                .expect("the pool never runs dry at 1:1");
            counts.add(&op);
            match op {
                Op::Insert(key, _) => assert!(live.insert(key), "insert of a present key"),
                Op::Remove(key) => assert!(live.remove(&key), "remove of an absent key"),
                _ => {}
            }
        }
        assert!(
            live.len().abs_diff(15_000) < 1_000,
            "size drifted to {}",
            live.len()
        );
        let total = counts.total() as f64;
        assert!((counts[OpKind::Get] as f64 / total - 0.5).abs() < 0.01);
        assert!((counts[OpKind::Update] as f64 / total - 0.25).abs() < 0.01);
    }

    #[test]
    fn streams_are_deterministic_per_seed_and_thread() {
        let space = space(10_000, 9_000);
        let workload = Workload::ycsb(Ycsb::A);
        let take = |thread, seed| -> Vec<Op<u64>> {
            workload
                .generator(&space, thread, 2, seed)
                .expect("valid")
                .take(1_000)
                .collect()
        };
        assert_eq!(take(0, 1), take(0, 1));
        assert_ne!(take(0, 1), take(1, 1));
        assert_ne!(take(0, 1), take(0, 2));
    }

    #[test]
    fn insert_only_inserts_the_whole_pool_once() {
        let space = space(10_000, 0);
        let workload = Workload::insert_only();
        let mut inserted: Vec<u64> = (0..3)
            .flat_map(|t| {
                workload
                    .generator(&space, t, 3, 5)
                    .expect("valid")
                    .map(|op| *op.key())
                    .collect::<Vec<_>>()
            })
            .collect();
        inserted.sort_unstable();
        assert_eq!(inserted, (0..10_000).map(|i| i * 2).collect::<Vec<_>>());
    }

    #[test]
    fn streams_end_when_the_pool_runs_dry() {
        let space = space(1_000, 990);
        let ops: Vec<_> = Workload::ycsb(Ycsb::D)
            .generator(&space, 0, 1, 1)
            .expect("valid")
            .collect();
        assert_eq!(
            ops.iter().filter(|op| op.kind() == OpKind::Insert).count(),
            10
        );
        assert!(ops.len() > 100);
    }

    #[test]
    fn bad_workloads_are_errors() {
        let loaded = space(100, 100);
        let empty = space(100, 0);
        assert!(
            Workload::ycsb(Ycsb::C).generator(&empty, 0, 1, 1).is_err(),
            "reads need loaded keys"
        );
        assert!(
            Workload::ycsb(Ycsb::C).generator(&loaded, 1, 1, 1).is_err(),
            "no such thread"
        );
        assert!(Workload::read_write(1.5, KeyDistribution::Uniform).is_err());
        let mut bad = Workload::ycsb(Ycsb::E);
        bad.scan_len = (0, 10);
        assert!(bad.generator(&loaded, 0, 1, 1).is_err());
        bad.mix.get = 0.5;
        assert!(
            bad.generator(&loaded, 0, 1, 1).is_err(),
            "fractions must add up to 1"
        );
    }

    #[test]
    fn pool_needed_counts_net_inserts_and_the_walk() {
        // 5 % of 1,000 plus 6 · √(1,000 · 0.05) = 42.4; per thread of 2, 25 + 6 · √25.
        assert_eq!(Workload::ycsb(Ycsb::D).pool_needed(1_000, 1), 93);
        assert_eq!(Workload::ycsb(Ycsb::D).pool_needed(1_000, 2), 2 * 55);
        let rw = Workload::read_write(0.9, KeyDistribution::Uniform).expect("valid");
        assert_eq!(rw.pool_needed(1_000, 1), 43);
        assert_eq!(rw.pool_needed(1_000, 0), 0);
        assert_eq!(Workload::ycsb(Ycsb::A).pool_needed(1_000, 4), 0);
        assert_eq!(
            Workload::ycsb(Ycsb::D).pool_needed(u64::MAX, usize::MAX),
            u64::MAX,
            "saturates"
        );
    }

    #[test]
    fn balanced_mixes_with_the_pool_they_ask_for_run_their_full_length() {
        let (ops, threads) = (20_000, 2);
        for read in [0.9, 0.0] {
            let workload = Workload::read_write(read, KeyDistribution::Uniform).expect("valid");
            let pool = workload.pool_needed(ops, threads) as usize;
            let space = space(10_000 + pool as u64, 10_000);
            for seed in 0..64 {
                for thread in 0..threads {
                    let share = crate::runner::share(ops, thread, threads) as usize;
                    let ran = workload
                        .generator(&space, thread, threads, seed)
                        .expect("valid")
                        .take(share)
                        .count();
                    assert_eq!(ran, share, "rw-{read}, seed {seed}, thread {thread}");
                }
            }
        }
    }
}
