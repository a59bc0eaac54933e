//! The hash tables of this crate: std's maps with foldhash's per-process
//! seeded hasher. SipHash cost over half of a cold build's instructions here;
//! foldhash is several times cheaper and still seeded, so paths from an
//! untrusted tree cannot be chosen to collide in advance.

/// A `HashMap` with the crate's hasher.
pub(crate) type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// A `HashSet` with the crate's hasher.
pub(crate) type HashSet<T> = std::collections::HashSet<T, foldhash::fast::RandomState>;
