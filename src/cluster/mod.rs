//! Many machines, one crawl: what crawltop needs of a Redis Cluster.
//!
//! Today this holds [`local`]: starting and stopping a small Redis Cluster on loopback from
//! Debian's `redis-server`, for a user trying the cluster mode on one machine
//! (`crawltop cluster-up` / `cluster-down`) and for the tests, which start their own. The shared
//! frontier on top of it (leases per site, a seen set per site, crawl-wide counters) will live
//! here too, behind the engine's frontier boundary (`frontier::Schedule`).
//!
//! It never crawls, and never starts anything that listens beyond loopback.

pub mod local;
