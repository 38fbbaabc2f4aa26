//! Many machines, one crawl: what crawltop needs of a Redis Cluster.
//!
//! Today this holds [`local`]: starting and stopping a small Redis Cluster on loopback from
//! Debian's `redis-server`, for a user trying the cluster mode on one machine
//! (`crawltop cluster-up` / `cluster-down`) and for the tests, which start their own; and
//! [`shared`]: the Redis side of a crawl shared by many members (its settings, each site's
//! queue, seen set, lease and politeness state), which the engine will reach through its frontier
//! boundary (`frontier::Schedule`).
//!
//! It never crawls, and never starts anything that listens beyond loopback.

pub mod agent;
pub mod local;
pub mod shared;
