//! The indexes' stress run on real threads (DESIGN.md "Testing layers" 4; the XIndex digest §8
//! "Concurrent tests"), over any map that [`StressedMap`] drives, while another thread disturbs
//! its structure (forced compactions, splits, resizes):
//!
//! - **per-key linearizability**: in rounds, [`WORKERS`] threads run gets (single, and batched:
//!   one event per key spanning the call), upserts and updates of present keys (unique values)
//!   and removes on a few hot keys; each key is a register whose history is checked by
//!   [`linearizable`](crate::linearizable());
//! - **lost updates and resurrection**: each worker owns keys that it alone writes, with
//!   strictly increasing values (inserts, and updates adding one) and removes; every result (of
//!   gets, batched gets and writes) must match its private model, and so must the contents
//!   after the run ([`Summary::check_contents`]);
//! - **stable keys**: the multiples of 4 below the key space are loaded and never written;
//!   after the run each still holds its own number. The map's own reads
//!   ([`StressedMap::check_reads`]: iterations, scans) check them while the workers run.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use crate::{Event, Kind, linearizable};

/// Worker threads of a round.
pub const WORKERS: u64 = 3;
/// Hot keys of a round, drawn from the keys below the key space that are not multiples of 4.
const HOT_KEYS: usize = 4;
/// Operations each worker runs in a round.
const OPS_PER_ROUND: u64 = 24;
/// Worker `t` owns keys `OWNED_BASE + t * 100 + 0..OWNED_PER_WORKER`, above every key space.
const OWNED_BASE: u64 = 100_000;
const OWNED_PER_WORKER: u64 = 8;
/// How long the disturbing thread may outlive the rounds: a failed check ends the rounds
/// early, and the thread must stop so that the panic is reported.
const DISTURB_GRACE: Duration = Duration::from_secs(5);

/// A key type built from a number, in an order-preserving way.
pub trait NumberedKey: Sized {
    /// The key of `n`.
    fn make(n: u64) -> Self;
    /// The number a key was made from.
    fn number(&self) -> u64;
}

impl NumberedKey for u64 {
    fn make(n: u64) -> Self {
        n
    }
    fn number(&self) -> u64 {
        *self
    }
}

impl NumberedKey for Vec<u8> {
    fn make(n: u64) -> Self {
        format!("key:{n:07}").into_bytes()
    }
    fn number(&self) -> u64 {
        std::str::from_utf8(&self[4..])
            .expect("keys are ASCII")
            .parse()
            .expect("keys hold a number")
    }
}

/// What a stress run loads: the even numbers below `key_space`, each with its own number as
/// its value (the multiples of 4 stay stable, the others are hot-key candidates).
pub fn initial_pairs<K: NumberedKey>(key_space: u64) -> Vec<(K, u64)> {
    (0..key_space)
        .filter(|n| n % 2 == 0)
        .map(|n| (K::make(n), n))
        .collect()
}

/// A concurrent map from numbered keys to one 64-bit word, as a stress run drives it.
pub trait StressedMap: Sync {
    /// The value of key `n`.
    fn get(&self, n: u64) -> Option<u64>;
    /// The values of keys `ns`, in one batched read.
    fn get_many(&self, ns: &[u64]) -> Vec<Option<u64>>;
    /// Upserts key `n`; the previous value.
    fn insert(&self, n: u64, value: u64) -> Option<u64>;
    /// Replaces the value of key `n`, if present, by `new` of it; the value replaced.
    fn update(&self, n: u64, new: impl Fn(u64) -> u64) -> Option<u64>;
    /// Removes key `n`; its value.
    fn remove(&self, n: u64) -> Option<u64>;
    /// One of the map's own reads (a fifth of a worker's operations; `op` is the operation's
    /// number in its round), checking the stable keys it meets; `owned` is the calling
    /// worker's model of its keys.
    fn check_reads(&self, rng: &mut SmallRng, op: u64, owned: &BTreeMap<u64, Option<u64>>);
    /// Waits for the background work and checks the structure's invariants.
    fn settle(&self);
}

/// The point operations of [`StressedMap`] for a newtype over an index (`self.0`) whose
/// `get`, `get_many`, `insert`, `update` and `remove` take keys `K: NumberedKey` and their
/// borrowed queries `K::Query`, as XIndex-R's and XIndex-H's do.
#[macro_export]
macro_rules! stressed_point_ops {
    () => {
        fn get(&self, n: u64) -> Option<u64> {
            self.0.get(K::make(n).borrow())
        }

        fn get_many(&self, ns: &[u64]) -> Vec<Option<u64>> {
            let keys: Vec<K> = ns.iter().map(|&n| K::make(n)).collect();
            let queries: Vec<&K::Query> = keys.iter().map(|key| key.borrow()).collect();
            self.0.get_many(&queries)
        }

        fn insert(&self, n: u64, value: u64) -> Option<u64> {
            self.0.insert(K::make(n), value)
        }

        fn update(&self, n: u64, new: impl Fn(u64) -> u64) -> Option<u64> {
            self.0.update(K::make(n).borrow(), new)
        }

        fn remove(&self, n: u64) -> Option<u64> {
            self.0.remove(K::make(n).borrow())
        }
    };
}

/// What a stress run did, and what the map must hold after it.
#[derive(Debug)]
#[must_use = "the map's contents are checked by `Summary::check_contents`"]
pub struct Summary {
    /// Rounds run.
    pub rounds: u64,
    /// Hot-key operations whose histories were checked.
    pub checked: usize,
    /// Each worker's model of its owned keys.
    owned: Vec<BTreeMap<u64, Option<u64>>>,
    key_space: u64,
}

impl Summary {
    /// Settles `map` ([`StressedMap::settle`]), then checks that every owned key holds what its
    /// worker's model says and every stable key its own number.
    ///
    /// # Panics
    ///
    /// If a key holds anything else.
    pub fn check_contents(&self, map: &impl StressedMap) {
        map.settle();
        for mine in &self.owned {
            for (&n, &value) in mine {
                assert_eq!(map.get(n), value, "owned key {n}");
            }
        }
        for n in (0..self.key_space).step_by(4) {
            assert_eq!(map.get(n), Some(n), "stable key {n}");
        }
    }
}

/// Runs rounds on `map`, loaded with [`initial_pairs`] of `key_space`, for `budget`, while
/// `disturb` is called over and over on another thread. The caller may read what the map did
/// meanwhile (its statistics) before [`Summary::check_contents`] settles it.
///
/// # Panics
///
/// If a worker's check or a key's history fails.
pub fn run<M: StressedMap>(
    map: &M,
    key_space: u64,
    budget: Duration,
    disturb: impl Fn(&mut SmallRng) + Sync,
) -> Summary {
    let epoch = Instant::now();
    let now = || epoch.elapsed().as_nanos() as u64;
    let owned = (0..WORKERS)
        .map(|t| {
            (0..OWNED_PER_WORKER)
                .map(|j| (OWNED_BASE + t * 100 + j, None))
                .collect()
        })
        .collect();
    let mut rng = SmallRng::seed_from_u64(0x5eed);
    let mut summary = Summary {
        rounds: 0,
        checked: 0,
        owned,
        key_space,
    };
    let stop = AtomicBool::new(false);
    thread::scope(|outer| {
        outer.spawn(|| {
            let mut rng = SmallRng::seed_from_u64(0xc4);
            let deadline = epoch + budget + DISTURB_GRACE;
            while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
                disturb(&mut rng);
            }
        });
        while epoch.elapsed() < budget {
            summary.rounds += 1;
            let round = summary.rounds;
            let hot: Vec<u64> = (0..HOT_KEYS)
                .map(|_| {
                    loop {
                        let n = rng.random_range(0..key_space);
                        if !n.is_multiple_of(4) {
                            break n;
                        }
                    }
                })
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            let initial: Vec<Option<u64>> = hot.iter().map(|&n| map.get(n)).collect();
            let barrier = Barrier::new(WORKERS as usize);
            let histories: Vec<Vec<Event>> = thread::scope(|scope| {
                let workers: Vec<_> = summary
                    .owned
                    .iter_mut()
                    .enumerate()
                    .map(|(t, mine)| {
                        let worker = Worker {
                            hot: &hot,
                            thread: t as u64,
                            round,
                            now: &now,
                        };
                        let barrier = &barrier;
                        scope.spawn(move || worker.run(map, mine, barrier))
                    })
                    .collect();
                workers
                    .into_iter()
                    .map(|w| w.join().expect("worker checks passed"))
                    .collect()
            });
            for (k, &n) in hot.iter().enumerate() {
                let ops: Vec<Event> = histories
                    .iter()
                    .flatten()
                    .filter(|e| e.key == k)
                    .copied()
                    .collect();
                summary.checked += ops.len();
                assert!(
                    linearizable(initial[k], &ops),
                    "round {round}: history of key {n} (initially {:?}) is not linearizable: {ops:#?}",
                    initial[k]
                );
            }
        }
        stop.store(true, Ordering::Relaxed);
    });
    summary
}

/// One worker's part of a round.
struct Worker<'a> {
    hot: &'a [u64],
    thread: u64,
    round: u64,
    now: &'a (dyn Fn() -> u64 + Sync),
}

impl Worker<'_> {
    /// Hot-key operations (recorded), owned-key operations (checked against `mine`) and the
    /// map's own reads.
    fn run(
        self,
        map: &impl StressedMap,
        mine: &mut BTreeMap<u64, Option<u64>>,
        barrier: &Barrier,
    ) -> Vec<Event> {
        let mut rng = SmallRng::seed_from_u64(self.round * 31 + self.thread);
        let mut events = Vec::new();
        barrier.wait();
        for i in 0..OPS_PER_ROUND {
            let unique = (self.thread + 1) << 48 | self.round << 16 | i;
            match rng.random_range(0..20) {
                0..=7 => self.hot_key(map, &mut rng, unique, &mut events),
                8..=15 => owned_key(map, &mut rng, unique, mine),
                _ => map.check_reads(&mut rng, i, mine),
            }
        }
        events
    }

    /// One operation on a random hot key, or a batched read of up to four: each key's read is
    /// one event spanning the whole call.
    fn hot_key(
        &self,
        map: &impl StressedMap,
        rng: &mut SmallRng,
        unique: u64,
        events: &mut Vec<Event>,
    ) {
        let k = rng.random_range(0..self.hot.len());
        let n = self.hot[k];
        let kind = match rng.random_range(0..10) {
            0..=3 => Kind::Get,
            4..=6 => Kind::Insert(unique),
            7..=8 => Kind::Update(unique),
            _ => Kind::Remove,
        };
        if kind == Kind::Get && rng.random_bool(0.5) {
            let more = rng.random_range(0..4);
            let picked: Vec<usize> = std::iter::once(k)
                .chain((0..more).map(|_| rng.random_range(0..self.hot.len())))
                .collect();
            let numbers: Vec<u64> = picked.iter().map(|&p| self.hot[p]).collect();
            events.extend(Event::batched_gets(&picked, self.now, || {
                map.get_many(&numbers)
            }));
            return;
        }
        let invoke = (self.now)();
        let result = match kind {
            Kind::Get => map.get(n),
            Kind::Insert(v) => map.insert(n, v),
            Kind::Update(v) => map.update(n, |_| v),
            Kind::Remove => map.remove(n),
        };
        let response = (self.now)();
        events.push(Event {
            key: k,
            invoke,
            response,
            kind,
            result,
        });
    }
}

/// A random owned key of `mine`.
pub fn pick_owned(rng: &mut SmallRng, mine: &BTreeMap<u64, Option<u64>>) -> u64 {
    *mine
        .keys()
        .nth(rng.random_range(0..mine.len()))
        .expect("in range")
}

/// One operation on owned keys, which no other thread writes: its result must match `mine`.
fn owned_key(
    map: &impl StressedMap,
    rng: &mut SmallRng,
    unique: u64,
    mine: &mut BTreeMap<u64, Option<u64>>,
) {
    let n = pick_owned(rng, mine);
    let expected = mine[&n];
    match rng.random_range(0..6) {
        0 => assert_eq!(map.get(n), expected, "get of owned {n}"),
        1 => {
            let picked: Vec<u64> = (0..rng.random_range(1..8))
                .map(|_| pick_owned(rng, mine))
                .collect();
            let want: Vec<Option<u64>> = picked.iter().map(|p| mine[p]).collect();
            assert_eq!(map.get_many(&picked), want, "get_many of owned {picked:?}");
        }
        2 => {
            assert_eq!(map.remove(n), expected, "remove of owned {n}");
            mine.insert(n, None);
        }
        3 => {
            let old = map.update(n, |old| old + 1);
            assert_eq!(old, expected, "update of owned {n}");
            mine.insert(n, expected.map(|v| v + 1));
        }
        _ => {
            let value = expected.map_or(1, |v| v + 1).max(unique);
            assert_eq!(map.insert(n, value), expected, "insert of owned {n}");
            mine.insert(n, Some(value));
        }
    }
}
