//! Double-ended iteration over a key range read in chunks: the iterator behind XIndex-R's
//! [`Range`](crate::xindex::Range) and the engine's ordered-table ranges.
//!
//! Each end fetches, from a [`ChunkSource`], only the pairs strictly between the last keys the
//! two ends have fetched (the range's bounds before that), ascending at the front and
//! descending at the back, and moves its own bound to the last key of its chunk. Once a fetch
//! finds fewer pairs than it asked for, every pair between the bounds is in hand: each end
//! then takes what is left of its own chunk and, after it, of the other's from the far side.
//! So no pair comes out twice and none between the two ends is skipped. Each fetch is the
//! source's business (one short protected section per chunk, for the indexes); the iterator
//! holds no protection between fetches.

use std::iter::FusedIterator;
use std::ops::Bound;
use std::vec;

/// Where a [`Chunked`] iterator reads its chunks.
pub trait ChunkSource<K> {
    /// What comes with each key.
    type Value;

    /// Up to `n` pairs with keys within `(lower, upper)`: the smallest ascending, or the
    /// largest descending when `from_back` is set.
    fn fetch(
        &self,
        lower: Bound<&K>,
        upper: Bound<&K>,
        n: usize,
        from_back: bool,
    ) -> Vec<(K, Self::Value)>;
}

/// A double-ended iterator over the pairs of a key range, fetched in chunks from a
/// [`ChunkSource`] (see the module docs).
pub struct Chunked<K, S: ChunkSource<K>> {
    source: S,
    /// Above the last key the front fetched (the range's start before that).
    lower: Bound<K>,
    /// Below the last key the back fetched (the range's end before that).
    upper: Bound<K>,
    /// The front's chunk, ascending.
    front: vec::IntoIter<(K, S::Value)>,
    /// The back's chunk, descending.
    back: vec::IntoIter<(K, S::Value)>,
    /// The size of the next fetch, doubled after each up to `max_chunk`.
    chunk: usize,
    max_chunk: usize,
    /// Every pair between `lower` and `upper` was fetched.
    drained: bool,
}

impl<K: Clone, S: ChunkSource<K>> Chunked<K, S> {
    /// The pairs of `source` within `(lower, upper)`, fetched `first_chunk` at a time at first,
    /// twice as many each time after, up to `max_chunk` (both at least 1).
    pub fn new(
        source: S,
        (lower, upper): (Bound<K>, Bound<K>),
        first_chunk: usize,
        max_chunk: usize,
    ) -> Self {
        Self {
            source,
            lower,
            upper,
            front: Vec::new().into_iter(),
            back: Vec::new().into_iter(),
            chunk: first_chunk.max(1),
            max_chunk: max_chunk.max(first_chunk).max(1),
            drained: false,
        }
    }

    /// Fetches the next chunk at one end.
    fn fetch(&mut self, from_back: bool) -> vec::IntoIter<(K, S::Value)> {
        let batch = self.source.fetch(
            self.lower.as_ref(),
            self.upper.as_ref(),
            self.chunk,
            from_back,
        );
        self.drained = batch.len() < self.chunk;
        self.chunk = (self.chunk * 2).min(self.max_chunk);
        if let Some((key, _)) = batch.last() {
            let fetched = Bound::Excluded(key.clone());
            if from_back {
                self.upper = fetched;
            } else {
                self.lower = fetched;
            }
        }
        batch.into_iter()
    }
}

impl<K: Clone, S: ChunkSource<K>> Iterator for Chunked<K, S> {
    type Item = (K, S::Value);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(pair) = self.front.next() {
                return Some(pair);
            }
            if self.drained {
                return self.back.next_back();
            }
            self.front = self.fetch(false);
        }
    }

    /// The range's largest pair, read from the back.
    fn last(mut self) -> Option<Self::Item> {
        self.next_back()
    }
}

impl<K: Clone, S: ChunkSource<K>> DoubleEndedIterator for Chunked<K, S> {
    fn next_back(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(pair) = self.back.next() {
                return Some(pair);
            }
            if self.drained {
                return self.front.next_back();
            }
            self.back = self.fetch(true);
        }
    }
}

impl<K: Clone, S: ChunkSource<K>> FusedIterator for Chunked<K, S> {}

impl<K: std::fmt::Debug, S: ChunkSource<K>> std::fmt::Debug for Chunked<K, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chunked")
            .field("lower", &self.lower)
            .field("upper", &self.upper)
            .field("drained", &self.drained)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A map read through the trait, counting its fetches.
    struct Map(BTreeMap<u32, u32>, std::cell::Cell<usize>);

    impl ChunkSource<u32> for &Map {
        type Value = u32;

        fn fetch(
            &self,
            lower: Bound<&u32>,
            upper: Bound<&u32>,
            n: usize,
            from_back: bool,
        ) -> Vec<(u32, u32)> {
            self.1.set(self.1.get() + 1);
            let bounds = (lower.cloned(), upper.cloned());
            let valid = match bounds {
                (
                    Bound::Included(l) | Bound::Excluded(l),
                    Bound::Included(u) | Bound::Excluded(u),
                ) => {
                    l < u || (l == u && matches!(bounds, (Bound::Included(_), Bound::Included(_))))
                }
                _ => true,
            };
            if !valid {
                return Vec::new();
            }
            let pairs = self.0.range(bounds).map(|(&k, &v)| (k, v));
            if from_back {
                pairs.rev().take(n).collect()
            } else {
                pairs.take(n).collect()
            }
        }
    }

    #[test]
    fn both_ends_meet_without_repeating_or_skipping_a_pair() {
        let map = Map((0..100).map(|k| (k * 2, k)).collect(), Default::default());
        for pattern in [0u64, u64::MAX, 0b1011, 0x5555_5555, 1 << 40] {
            for (first, max) in [(1, 1), (1, 4), (3, 64), (200, 200)] {
                let range = (Bound::Excluded(10), Bound::Included(150));
                let mut got = Chunked::new(&map, range, first, max);
                let mut want = map.0.range(range).map(|(&k, &v)| (k, v));
                for step in 0usize.. {
                    let back = pattern >> (step % 64) & 1 == 1;
                    let (item, expected) = if back {
                        (got.next_back(), want.next_back())
                    } else {
                        (got.next(), want.next())
                    };
                    assert_eq!(
                        item, expected,
                        "pattern {pattern:#x}, chunks {first}..{max}"
                    );
                    if expected.is_none() {
                        assert_eq!((got.next(), got.next_back()), (None, None));
                        break;
                    }
                }
            }
        }
    }

    #[test]
    fn chunks_grow_to_their_limit() {
        let map = Map((0..1_000).map(|k| (k, k)).collect(), Default::default());
        let all = Chunked::new(&map, (Bound::Unbounded, Bound::Unbounded), 16, 128);
        assert_eq!(all.count(), 1_000);
        // 16 + 32 + 64 + 128 × 6 = 880, then one short fetch of 120.
        assert_eq!(map.1.get(), 10);
        assert_eq!(
            Chunked::new(&map, (Bound::Unbounded, Bound::Excluded(500)), 1, 8).last(),
            Some((499, 499))
        );
    }
}
