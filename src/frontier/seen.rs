//! The seen-URL set: a 64-bit fingerprint per canonical URL, in a table made to cost little
//! more than the 8 bytes of the fingerprint itself.
//!
//! Measured at 5 million URLs (`benches/frontier_spill.rs`): `HashSet<u64>` grows by
//! doubling to 2^23 buckets of 9 bytes (fingerprint plus control byte), about 15 bytes an
//! entry, and 3 times that while it rehashes. This table grows by half instead, with linear
//! probing and no control bytes: 10 to 15 bytes an entry, 8 / 0.8 = 10 right after
//! [`SeenSet::with_capacity`].

/// The 64-bit xxh3 fingerprint of a canonical URL: what [`SeenSet`] keeps, and what a
/// checkpoint stores. xxh3 is stable across runs and platforms (unlike `ahash`).
pub fn fingerprint(canonical_url: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(canonical_url.as_bytes())
}

/// Exactly-once: the fingerprints of every canonical URL ever admitted.
///
/// Two URLs with the same 64-bit fingerprint count as one, so the second is skipped: at 100
/// million URLs that happens with odds of about 3 in 10,000 for the whole crawl, cheaper than
/// keeping the strings.
///
/// An open-addressing table of fingerprints with linear probing. The fingerprints are xxh3
/// outputs, already uniform, so a slot is chosen by scaling the fingerprint to the table's
/// size (no hashing again, any size works, so the table grows by half rather than doubling).
/// 0 marks an empty slot; the fingerprint 0 itself is kept in a flag.
#[derive(Default)]
pub struct SeenSet {
    slots: Vec<u64>,
    /// Fingerprints in `slots` (the flag's is not counted here).
    in_slots: usize,
    has_zero: bool,
}

impl SeenSet {
    /// Most filled share of the slots, as a fraction: linear probing stays short below it
    /// (about 3 probes for a hit and 13 for a miss at the limit, mostly in one cache line).
    const MAX_LOAD: (usize, usize) = (4, 5);

    pub fn new() -> Self {
        Self::default()
    }

    /// Room for `capacity` fingerprints before the table grows.
    pub fn with_capacity(capacity: usize) -> Self {
        let (num, den) = Self::MAX_LOAD;
        Self {
            slots: vec![0; capacity.saturating_mul(den) / num + 1],
            in_slots: 0,
            has_zero: false,
        }
    }

    /// Admits a canonical URL: `true` the first time it is seen, `false` ever after.
    pub fn insert(&mut self, canonical_url: &str) -> bool {
        self.insert_fingerprint(fingerprint(canonical_url))
    }

    pub fn contains(&self, canonical_url: &str) -> bool {
        self.contains_fingerprint(fingerprint(canonical_url))
    }

    /// Re-admits a fingerprint read back from a checkpoint; `true` if it was not there.
    pub fn insert_fingerprint(&mut self, fingerprint: u64) -> bool {
        if fingerprint == 0 {
            return !std::mem::replace(&mut self.has_zero, true);
        }
        let (num, den) = Self::MAX_LOAD;
        if (self.in_slots + 1) * den > self.slots.len() * num {
            self.grow();
        }
        match self.probe(fingerprint) {
            Ok(_) => false,
            Err(empty) => {
                self.slots[empty] = fingerprint;
                self.in_slots += 1;
                true
            }
        }
    }

    pub fn contains_fingerprint(&self, fingerprint: u64) -> bool {
        if fingerprint == 0 {
            return self.has_zero;
        }
        !self.slots.is_empty() && self.probe(fingerprint).is_ok()
    }

    /// Every fingerprint, in no particular order, for a checkpoint.
    pub fn fingerprints(&self) -> impl Iterator<Item = u64> + '_ {
        let zero = self.has_zero.then_some(0);
        zero.into_iter()
            .chain(self.slots.iter().copied().filter(|&fp| fp != 0))
    }

    pub fn len(&self) -> usize {
        self.in_slots + usize::from(self.has_zero)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes the table holds, for measurements.
    pub fn table_bytes(&self) -> usize {
        self.slots.capacity() * size_of::<u64>()
    }

    fn probe(&self, fingerprint: u64) -> Result<usize, usize> {
        probe(&self.slots, fingerprint)
    }

    fn grow(&mut self) {
        let size = (self.slots.len() + self.slots.len() / 2).max(64);
        let old = std::mem::replace(&mut self.slots, vec![0; size]);
        // Slots are in fingerprint order (but for runs that wrapped): reinsertion walks the
        // new table front to back.
        for fp in old.into_iter().filter(|&fp| fp != 0) {
            let empty = self
                .probe(fp)
                .expect_err("the old table held each fingerprint once");
            self.slots[empty] = fp;
        }
    }
}

/// Linear probing over a table of fingerprints where 0 marks an empty slot: `Ok(slot)` holding
/// a non-zero `fingerprint`, or `Err(slot)`, the empty slot where it belongs. Needs a non-empty
/// table with at least one empty slot (the load limit's job).
fn probe(slots: &[u64], fingerprint: u64) -> Result<usize, usize> {
    let len = slots.len();
    let mut i = home(len, fingerprint);
    loop {
        match slots[i] {
            0 => return Err(i),
            fp if fp == fingerprint => return Ok(i),
            _ => i = if i + 1 == len { 0 } else { i + 1 },
        }
    }
}

/// Where a probe for `fingerprint` starts in a table of `len` slots: the uniform fingerprint
/// scaled to `0..len` (the high 64 bits of fingerprint * len).
fn home(len: usize, fingerprint: u64) -> usize {
    ((u128::from(fingerprint) * len as u128) >> 64) as usize
}

/// The engine's exactly-once table: each fingerprint with the id of its URL's row, in the
/// layout of [`SeenSet`] plus a parallel column of ids: 12 bytes a slot, 12 to 18 an entry
/// (a `HashMap<u64, u32>` takes 17 a bucket and doubles).
#[derive(Default)]
pub struct SeenMap {
    keys: Vec<u64>,
    ids: Vec<u32>,
    in_slots: usize,
    /// The id of the URL whose fingerprint is 0, which cannot mark a slot.
    zero: Option<u32>,
}

impl SeenMap {
    pub fn new() -> Self {
        Self::default()
    }

    /// Room for `capacity` fingerprints before the table grows: a resume knows how many rows
    /// it will insert.
    pub fn with_capacity(capacity: usize) -> Self {
        let mut map = Self::new();
        map.reserve(capacity);
        map
    }

    /// Room for `additional` more fingerprints before the table grows: one move of what it
    /// holds instead of one per growth by half on the way.
    pub fn reserve(&mut self, additional: usize) {
        let (num, den) = SeenSet::MAX_LOAD;
        let wanted = self.in_slots.saturating_add(additional).saturating_mul(den) / num + 1;
        if wanted > self.keys.len() {
            self.resize(wanted);
        }
    }

    /// Slots the table has, for measurements and tests.
    pub fn slots(&self) -> usize {
        self.keys.len()
    }

    /// The id stored for `fingerprint`, if it was seen.
    pub fn get(&self, fingerprint: u64) -> Option<u32> {
        if fingerprint == 0 {
            return self.zero;
        }
        if self.keys.is_empty() {
            return None;
        }
        self.probe(fingerprint).ok().map(|slot| self.ids[slot])
    }

    /// Reads the slots where lookups of `fingerprints` start, so that the lookups that follow
    /// find them in the cache: reads that do not depend on each other, which the processor
    /// overlaps, where lookups one after another (each followed by an insert) wait for memory
    /// one at a time. Changes nothing; a lookup's answer is the same without it.
    pub fn warm(&self, fingerprints: impl IntoIterator<Item = u64>) {
        let len = self.keys.len();
        if len == 0 {
            return;
        }
        let mut sum = 0u64;
        for fp in fingerprints {
            let i = home(len, fp);
            sum ^= self.keys[i] ^ u64::from(self.ids[i]);
        }
        std::hint::black_box(sum);
    }

    /// Stores `id` for a new `fingerprint` and returns `None`; a fingerprint already seen
    /// keeps its id, which is returned.
    pub fn insert(&mut self, fingerprint: u64, id: u32) -> Option<u32> {
        if fingerprint == 0 {
            if self.zero.is_none() {
                self.zero = Some(id);
                return None;
            }
            return self.zero;
        }
        let (num, den) = SeenSet::MAX_LOAD;
        if (self.in_slots + 1) * den > self.keys.len() * num {
            self.grow();
        }
        match self.probe(fingerprint) {
            Ok(slot) => Some(self.ids[slot]),
            Err(empty) => {
                self.keys[empty] = fingerprint;
                self.ids[empty] = id;
                self.in_slots += 1;
                None
            }
        }
    }

    /// Stores `id` for `fingerprint`, seen or not; returns the id it replaced.
    pub fn set(&mut self, fingerprint: u64, id: u32) -> Option<u32> {
        if fingerprint == 0 {
            return self.zero.replace(id);
        }
        let (num, den) = SeenSet::MAX_LOAD;
        if (self.in_slots + 1) * den > self.keys.len() * num {
            self.grow();
        }
        match self.probe(fingerprint) {
            Ok(slot) => Some(std::mem::replace(&mut self.ids[slot], id)),
            Err(empty) => {
                self.keys[empty] = fingerprint;
                self.ids[empty] = id;
                self.in_slots += 1;
                None
            }
        }
    }

    pub fn len(&self) -> usize {
        self.in_slots + usize::from(self.zero.is_some())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn probe(&self, fingerprint: u64) -> Result<usize, usize> {
        probe(&self.keys, fingerprint)
    }

    fn grow(&mut self) {
        self.resize((self.keys.len() + self.keys.len() / 2).max(64));
    }

    fn resize(&mut self, size: usize) {
        let keys = std::mem::replace(&mut self.keys, vec![0; size]);
        let ids = std::mem::replace(&mut self.ids, vec![0; size]);
        for (fp, id) in keys.into_iter().zip(ids).filter(|(fp, _)| *fp != 0) {
            let empty = self
                .probe(fp)
                .expect_err("the old table held each fingerprint once");
            self.keys[empty] = fp;
            self.ids[empty] = id;
        }
    }
}
