//! Striped key locks: one mutex per stripe, chosen by a hash of (table, key). The log takes a
//! key's stripe around each write's stamp and index write (see the crate docs); a database
//! without a log uses a set of its own, so that a conditional write's check and its write are
//! one step against every other write of the key in both cases.

use parking_lot::{Mutex, MutexGuard};

/// A fixed set of mutexes, one per stripe of the (table, key) space.
pub struct KeyLocks {
    stripes: Box<[Mutex<()>]>,
}

impl std::fmt::Debug for KeyLocks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyLocks")
            .field("stripes", &self.stripes.len())
            .finish()
    }
}

impl KeyLocks {
    /// `stripes` locks, rounded up to a power of two (at least one).
    pub fn new(stripes: usize) -> Self {
        Self {
            stripes: (0..stripes.max(1).next_power_of_two())
                .map(|_| Mutex::new(()))
                .collect(),
        }
    }

    /// Locks the stripe of `key` in `table`; released when the guard drops.
    pub fn lock(&self, table: u32, key: &[u8]) -> MutexGuard<'_, ()> {
        self.stripes[self.stripe_of(table, key)].lock()
    }

    /// Locks the stripes of all `keys` together, each once, in stripe order (so that two
    /// callers never wait for each other in a cycle); released when the guards drop.
    pub fn lock_all<'k>(
        &self,
        keys: impl IntoIterator<Item = (u32, &'k [u8])>,
    ) -> Vec<MutexGuard<'_, ()>> {
        let mut stripes: Vec<usize> = keys
            .into_iter()
            .map(|(table, key)| self.stripe_of(table, key))
            .collect();
        stripes.sort_unstable();
        stripes.dedup();
        stripes
            .into_iter()
            .map(|i| self.stripes[i].lock())
            .collect()
    }

    fn stripe_of(&self, table: u32, key: &[u8]) -> usize {
        stripe_hash(table, key) as usize & (self.stripes.len() - 1)
    }

    /// Takes and releases every stripe in turn: each write that held one when the call began
    /// has released it by the time the call returns.
    pub fn wait_for_holders(&self) {
        for stripe in self.stripes.iter() {
            drop(stripe.lock());
        }
    }
}

/// A cheap hash of (table, key) choosing a stripe: multiply-rotate over 8-byte words, then a
/// finalizer (xor-shift-multiply rounds) so that the low bits, which pick the stripe, depend on
/// every input bit, the high bytes of the last word included (keys that differ only in their
/// last byte, such as `b"user-1"` and `b"user-2"`, must not share a stripe).
fn stripe_hash(table: u32, key: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut hash = (u64::from(table) ^ (key.len() as u64) << 32).wrapping_mul(K);
    let mut words = key.chunks_exact(8);
    for word in &mut words {
        let mut bytes = [0; 8];
        bytes.copy_from_slice(word);
        hash = (hash.rotate_left(23) ^ u64::from_le_bytes(bytes)).wrapping_mul(K);
    }
    let mut last = [0; 8];
    last[..words.remainder().len()].copy_from_slice(words.remainder());
    hash = (hash.rotate_left(23) ^ u64::from_le_bytes(last)).wrapping_mul(K);
    hash = (hash ^ hash >> 32).wrapping_mul(0xD6E8_FEB8_6659_FD93);
    hash ^ hash >> 32
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn stripe_hashes_spread_over_the_low_bits() {
        let mut seen = std::collections::HashSet::new();
        for key in 0..4096u64 {
            seen.insert(stripe_hash(0, &key.to_be_bytes()) & 4095);
        }
        assert!(seen.len() > 2000, "{} distinct stripes of 4096", seen.len());
        // Short byte keys that differ only in their last byte (the high byte of their only
        // word): a multiply alone carries that byte's bits only upwards, past the stripe bits.
        for len in 1..=16 {
            let stripes: std::collections::HashSet<u64> = (0..=255u8)
                .map(|last| {
                    let mut key = vec![b'k'; len];
                    key[len - 1] = last;
                    stripe_hash(0, &key) & 4095
                })
                .collect();
            assert!(
                stripes.len() > 200,
                "keys of {len} bytes: {} stripes",
                stripes.len()
            );
        }
        assert_ne!(stripe_hash(0, b"k"), stripe_hash(1, b"k"));
        assert_ne!(stripe_hash(0, b""), stripe_hash(0, b"\0"));
    }

    #[test]
    fn a_key_held_blocks_only_its_own_stripe() {
        let locks = KeyLocks::new(3);
        assert_eq!(locks.stripes.len(), 4);
        let held = locks.lock(1, b"key");
        let index = stripe_hash(1, b"key") as usize & 3;
        for (i, stripe) in locks.stripes.iter().enumerate() {
            assert_eq!(stripe.try_lock().is_none(), i == index, "stripe {i}");
        }
        drop(held);
        locks.wait_for_holders();
        assert!(locks.stripes.iter().all(|s| s.try_lock().is_some()));
    }

    #[test]
    fn keys_locked_together_hold_each_of_their_stripes_once() {
        let locks = KeyLocks::new(64);
        let keys: Vec<[u8; 1]> = (0..40u8).map(|k| [k]).collect();
        let held = locks.lock_all(keys.iter().map(|k| (0, &k[..])).chain([(0, &b"\0"[..])]));
        let mut wanted: Vec<usize> = keys.iter().map(|k| locks.stripe_of(0, k)).collect();
        wanted.sort_unstable();
        wanted.dedup();
        assert_eq!(
            held.len(),
            wanted.len(),
            "a repeated key or stripe is locked once"
        );
        for (i, stripe) in locks.stripes.iter().enumerate() {
            assert_eq!(
                stripe.try_lock().is_none(),
                wanted.contains(&i),
                "stripe {i}"
            );
        }
        drop(held);
        assert!(locks.stripes.iter().all(|s| s.try_lock().is_some()));
    }
}
