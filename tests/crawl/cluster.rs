//! The local Redis Cluster (`cluster-up`, `cluster-down`) that the cluster mode's tests and
//! users start: judged by what the Redis nodes themselves answer.
//!
//! These tests need Debian's `redis-server`; `scripts/test` installs it. Without it they say so
//! loudly and pass, except under CI, where a missing Redis fails them.

use std::io::Write as _;
use std::process::{Command, Output};

use crawltop::cluster::local::{LocalCluster, Shape};

use crate::util::bin;

/// Redis is installed, or the test says how to run it (and fails when `CI` is set).
pub(crate) fn redis_here(test: &str) -> bool {
    let here = Command::new("redis-server")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !here {
        let how = "it needs Debian's redis-server: run scripts/test (which installs it with apt), \
                   or apt-get install redis-server, then cargo test";
        assert!(
            std::env::var_os("CI").is_none(),
            "{test}: redis-server is missing and CI is set: {how}"
        );
        // Past the test harness's capture, so it shows even though the test passes.
        let _ = writeln!(
            std::io::stderr().lock(),
            "\n******** {test} DID NOT RUN: {how} ********\n"
        );
    }
    here
}

/// A cluster of three masters in `dir`, stopped when dropped.
pub(crate) fn three_masters(dir: &std::path::Path) -> LocalCluster {
    LocalCluster::up(
        dir,
        Shape {
            masters: 3,
            replicas: 0,
        },
    )
    .expect("a local cluster")
}

/// `redis-cli` against one node; `-c` follows the cluster's redirections.
fn redis_cli(port: u16, args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .args(["-c", "-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .output()
        .expect("redis-cli runs");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn crawltop(args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .output()
        .expect("crawltop runs")
}

fn ports_of(stdout: &[u8]) -> Vec<u16> {
    String::from_utf8_lossy(stdout)
        .trim()
        .split(',')
        .map(|u| {
            u.strip_prefix("redis://127.0.0.1:")
                .and_then(|p| p.parse().ok())
                .unwrap_or_else(|| panic!("a node URL on loopback, not {u:?}"))
        })
        .collect()
}

fn refuses(port: u16) -> bool {
    std::net::TcpStream::connect(("127.0.0.1", port)).is_err()
}

#[test]
fn cluster_up_forms_a_cluster_that_cluster_down_stops_and_cluster_up_brings_back_with_its_data() {
    if !redis_here("cluster_up_forms_a_cluster...") {
        return;
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("redis");
    let dir_arg = dir.to_str().expect("utf-8 path");
    let up = crawltop(&["cluster-up", "--dir", dir_arg, "--masters", "3"]);
    assert!(
        up.status.success(),
        "{}",
        String::from_utf8_lossy(&up.stderr)
    );
    let ports = ports_of(&up.stdout);
    assert_eq!(ports.len(), 3);
    for &port in &ports {
        let info = redis_cli(port, &["cluster", "info"]);
        assert!(info.contains("cluster_state:ok"), "{port}: {info}");
        assert!(info.contains("cluster_size:3"), "{port}: {info}");
        assert!(info.contains("cluster_known_nodes:3"), "{port}: {info}");
    }
    // Keys land on different masters and every node finds them.
    for i in 0..20 {
        assert_eq!(
            redis_cli(ports[0], &["set", &format!("key{i}"), &i.to_string()]),
            "OK"
        );
    }
    let owners: std::collections::BTreeSet<String> = (0..20)
        .map(|i| redis_cli(ports[0], &["cluster", "keyslot", &format!("key{i}")]))
        .map(|slot| slot.parse::<u16>().expect("a slot").to_string())
        .collect();
    assert!(owners.len() > 1);
    assert_eq!(redis_cli(ports[2], &["get", "key7"]), "7");

    let down = crawltop(&["cluster-down", "--dir", dir_arg]);
    assert!(
        down.status.success(),
        "{}",
        String::from_utf8_lossy(&down.stderr)
    );
    for &port in &ports {
        assert!(
            refuses(port),
            "node {port} still listens after cluster-down"
        );
    }

    // Up again from the same folder: the same nodes, with what they held.
    let again = crawltop(&["cluster-up", "--dir", dir_arg, "--masters", "3"]);
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert_eq!(ports_of(&again.stdout), ports);
    for i in 0..20 {
        assert_eq!(
            redis_cli(ports[1], &["get", &format!("key{i}")]),
            i.to_string()
        );
    }
    let down = crawltop(&["cluster-down", "--dir", dir_arg]);
    assert!(down.status.success());
    assert!(ports.iter().all(|p| refuses(*p)));
}

#[test]
fn a_running_cluster_is_not_started_twice_and_replicas_follow_their_masters() {
    if !redis_here("a_running_cluster_is_not_started_twice...") {
        return;
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    let cluster = LocalCluster::up(
        tmp.path(),
        Shape {
            masters: 3,
            replicas: 1,
        },
    )
    .expect("a cluster of 3 masters and 3 replicas");
    let ports = cluster.ports().to_vec();
    assert_eq!(ports.len(), 6);
    let nodes = redis_cli(ports[0], &["cluster", "nodes"]);
    // The third field holds a node's flags: "master", "slave", "myself,master", ...
    let with_flag = |flag: &str| {
        nodes
            .lines()
            .filter(|l| {
                l.split_whitespace()
                    .nth(2)
                    .is_some_and(|f| f.split(',').any(|x| x == flag))
            })
            .count()
    };
    assert_eq!(with_flag("master"), 3, "{nodes}");
    assert_eq!(with_flag("slave"), 3, "{nodes}");

    let twice = crawltop(&[
        "cluster-up",
        "--dir",
        tmp.path().to_str().expect("utf-8 path"),
        "--replicas",
        "1",
    ]);
    assert_eq!(twice.status.code(), Some(2));
    let said = String::from_utf8_lossy(&twice.stderr);
    assert!(said.contains("is running"), "{said}");
    assert!(said.contains(&ports[0].to_string()), "{said}");

    // Dropping the handle stops every node it started.
    drop(cluster);
    assert!(ports.iter().all(|p| refuses(*p)));
}

#[test]
fn bad_cluster_requests_exit_2_with_a_reason_and_start_nothing() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("c");
    let dir_arg = dir.to_str().expect("utf-8 path");

    let two = crawltop(&["cluster-up", "--dir", dir_arg, "--masters", "2"]);
    assert_eq!(two.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&two.stderr).contains("at least 3 masters"));
    assert!(!dir.join("cluster.json").exists());

    let down = crawltop(&["cluster-down", "--dir", dir_arg]);
    assert_eq!(down.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&down.stderr).contains("no cluster was started"));

    // No Redis on PATH: named, with how to get it.
    let empty = tmp.path().join("empty-path");
    std::fs::create_dir_all(&empty).expect("mkdir");
    let missing = Command::new(bin())
        .args(["cluster-up", "--dir", dir_arg])
        .env("PATH", &empty)
        .output()
        .expect("crawltop runs");
    assert_eq!(missing.status.code(), Some(2));
    let said = String::from_utf8_lossy(&missing.stderr);
    assert!(said.contains("redis-server was not found"), "{said}");
    assert!(said.contains("apt-get install redis-server"), "{said}");

    // A state file that is not ours is refused, not trusted.
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("cluster.json"), "{\"ports\": \"all of them\"}").expect("write");
    let garbled = crawltop(&["cluster-down", "--dir", dir_arg]);
    assert_eq!(garbled.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&garbled.stderr).contains("is not a cluster state"));
}

mod shared {
    //! The shared crawl's Redis side, judged by what two members get from a real cluster.

    use std::collections::BTreeMap;
    use std::time::Duration;

    use crawltop::cluster::local::LocalCluster;
    use crawltop::cluster::shared::{
        CrawlId, Entry, Lease, Limits, Previous, SharedCrawl, SharedError,
    };

    use super::{redis_here, three_masters};

    fn settings(depth: &str) -> BTreeMap<String, String> {
        [("depth", depth), ("delay_ms", "100"), ("scope", "site")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn entry(url: &str) -> Entry {
        Entry {
            url: url.to_string(),
            depth: 1,
            hops: 0,
            referrer: Some("http://127.0.0.1:1/".into()),
        }
    }

    async fn member(urls: &[String], crawl: &str, id: &str, lease_ms: u64) -> SharedCrawl {
        SharedCrawl::connect(
            urls,
            CrawlId::new(crawl).expect("crawl id"),
            id,
            Duration::from_millis(lease_ms),
        )
        .await
        .expect("connects")
    }

    /// Members `a` and `b` of `crawl`, joined with `--depth 3`.
    async fn two_joined(cluster: &LocalCluster, crawl: &str) -> (SharedCrawl, SharedCrawl) {
        let mut a = member(&cluster.urls(), crawl, "a", 10_000).await;
        let mut b = member(&cluster.urls(), crawl, "b", 10_000).await;
        for m in [&mut a, &mut b] {
            m.join(&settings("3")).await.expect("join");
        }
        (a, b)
    }

    /// `site`'s `path` at `depth`, found from the site's root.
    fn entry_at(site: &str, path: &str, depth: u32) -> Entry {
        Entry {
            url: format!("{site}{path}"),
            depth,
            hops: 0,
            referrer: Some(format!("{site}/")),
        }
    }

    /// The entries of `site` as (path, depth).
    fn paths_of(site: &str, entries: &[Entry]) -> Vec<(String, u32)> {
        entries
            .iter()
            .map(|e| (e.url[site.len()..].to_string(), e.depth))
            .collect()
    }

    async fn push_all(m: &mut SharedCrawl, sites: &[String], batches: Vec<Vec<Entry>>) -> u64 {
        let mut n = 0;
        for (s, es) in sites.iter().zip(batches) {
            n += m.push(s, &es).await.expect("push");
        }
        n
    }

    #[tokio::test]
    async fn two_members_admit_each_url_once_and_hold_a_site_one_at_a_time() {
        if !redis_here("two_members_admit_each_url_once...") {
            return;
        }
        let tmp = tempfile::tempdir().expect("temp dir");
        let cluster = three_masters(tmp.path());
        let mut a = member(&cluster.urls(), "t1", "a", 10_000).await;
        let mut b = member(&cluster.urls(), "t1", "b", 10_000).await;
        assert!(
            a.join(&settings("3")).await.expect("a joins"),
            "a creates it"
        );
        assert!(
            !b.join(&settings("3")).await.expect("b joins"),
            "b finds it"
        );

        // Both discover overlapping URLs of 6 sites, at the same time.
        let sites: Vec<String> = (0..6)
            .map(|i| format!("http://127.0.0.1:{}", 2000 + i))
            .collect();
        let batch = |from: usize| -> Vec<Vec<Entry>> {
            sites
                .iter()
                .map(|s| {
                    (from..from + 40)
                        .map(|p| entry(&format!("{s}/p{p}")))
                        .collect()
                })
                .collect()
        };
        let (ba, bb) = (batch(0), batch(20));
        let (na, nb) = tokio::join!(push_all(&mut a, &sites, ba), push_all(&mut b, &sites, bb));
        assert_eq!(na + nb, 6 * 60, "every distinct URL admitted exactly once");
        assert_eq!(a.sites().await.expect("sites"), {
            let mut s = sites.clone();
            s.sort();
            s
        });

        let site = &sites[0];
        assert_eq!(
            a.lease(site).await.expect("lease"),
            Lease::Taken {
                requeued: 0,
                previous: Previous::HandedBack
            }
        );
        assert_eq!(b.lease(site).await.expect("lease"), Lease::Held);
        assert_eq!(a.lease(site).await.expect("renew"), Lease::Renewed);
        assert_eq!(
            b.pull(site, 5).await.expect("pull"),
            None,
            "only the holder pulls"
        );
        let got = a.pull(site, 3).await.expect("pull").expect("ours").entries;
        let urls: Vec<&str> = got.iter().map(|e| e.url.as_str()).collect();
        assert_eq!(urls.len(), 3);
        assert!(
            !b.done(site, &got, None).await.expect("done"),
            "only the holder finishes"
        );
        assert!(a.done(site, &got[..1], None).await.expect("done"));
        assert_eq!(a.backlog(site).await.expect("backlog"), (57, 2));
        assert!(!a.finished().await.expect("finished?"));

        // A graceful hand-back: the two unfinished URLs go first for the next holder.
        assert_eq!(a.release(site).await.expect("release"), Some(2));
        assert_eq!(
            b.lease(site).await.expect("lease"),
            Lease::Taken {
                requeued: 0,
                previous: Previous::HandedBack
            }
        );
        let next = b.pull(site, 2).await.expect("pull").expect("ours").entries;
        let mut back: Vec<&str> = next.iter().map(|e| e.url.as_str()).collect();
        back.sort_unstable();
        let mut want = urls[1..].to_vec();
        want.sort_unstable();
        assert_eq!(back, want);

        // Everything pulled and finished everywhere: the crawl has ended, for both.
        for s in &sites {
            let _ = b.lease(s).await.expect("lease");
            while let Some(es) = b
                .pull(s, 100)
                .await
                .expect("pull")
                .map(|p| p.entries)
                .filter(|e| !e.is_empty())
            {
                assert!(b.done(s, &es, None).await.expect("done"));
            }
        }
        b.done(site, &next, None).await.expect("done");
        assert!(a.finished().await.expect("finished?"));
        drop(cluster);
    }

    /// The crawl's page limits hold crawl-wide at the pulls: past `--max-pages-per-site` or
    /// `--max-pages`, URLs come off the queue as over the limit (not in flight, to be ignored);
    /// URLs that go back to a queue unfetched (a release) give their places back.
    #[tokio::test]
    async fn pulls_keep_the_crawls_page_limits_and_urls_sent_back_give_their_places_back() {
        if !redis_here("pulls_keep_the_crawls_page_limits...") {
            return;
        }
        let tmp = tempfile::tempdir().expect("temp dir");
        let cluster = three_masters(tmp.path());
        let limits = Limits {
            pages: Some(5),
            per_site: Some(3),
        };
        let mut a = member(&cluster.urls(), "limits", "a", 10_000).await;
        let mut b = member(&cluster.urls(), "limits", "b", 10_000).await;
        for m in [&mut a, &mut b] {
            m.join(&settings("1")).await.expect("join");
            m.set_limits(limits);
        }
        let (s1, s2) = ("http://127.0.0.1:3001", "http://127.0.0.1:3002");
        for site in [s1, s2] {
            let es: Vec<Entry> = (0..6).map(|i| entry(&format!("{site}/{i}"))).collect();
            assert_eq!(a.push(site, &es).await.expect("push"), 6);
        }
        let counts = |p: &crawltop::cluster::shared::Pulled| {
            (p.entries.len(), p.over_site.len(), p.over_crawl.len())
        };
        assert!(matches!(a.lease(s1).await, Ok(Lease::Taken { .. })));
        let first = a.pull(s1, 10).await.expect("pull").expect("ours");
        assert_eq!(
            counts(&first),
            (3, 3, 0),
            "the site's three, then over its limit"
        );
        assert!(matches!(b.lease(s2).await, Ok(Lease::Taken { .. })));
        let second = b.pull(s2, 10).await.expect("pull").expect("ours");
        assert_eq!(counts(&second), (2, 0, 4), "the crawl's last two places");
        // a hands s1 back unfetched: its three places come back, to the site and the crawl.
        assert_eq!(a.release(s1).await.expect("release"), Some(3));
        assert!(matches!(b.lease(s1).await, Ok(Lease::Taken { .. })));
        let again = b.pull(s1, 10).await.expect("pull").expect("ours");
        assert_eq!(counts(&again), (3, 0, 0), "{again:?}");
        let mut urls: Vec<&str> = again.entries.iter().map(|e| e.url.as_str()).collect();
        urls.sort_unstable();
        let mut want: Vec<&str> = first.entries.iter().map(|e| e.url.as_str()).collect();
        want.sort_unstable();
        assert_eq!(urls, want, "the same three, none over a limit");
        drop(cluster);
    }

    /// `--depth`: a URL queued deep and then found by a shorter path is queued again and
    /// pulled once, at the shorter depth; once pulled, no path queues it again, a shorter one
    /// reaches the holder at its next pull, and what goes back unfetched comes back at the
    /// least depth known.
    #[tokio::test]
    async fn a_shorter_path_queues_a_url_again_and_it_is_pulled_once_at_the_least_depth() {
        if !redis_here("a_shorter_path_queues_a_url_again...") {
            return;
        }
        let tmp = tempfile::tempdir().expect("temp dir");
        let cluster = three_masters(tmp.path());
        let (mut a, mut b) = two_joined(&cluster, "least").await;
        let site = "http://127.0.0.1:3100";
        let at = |path: &str, depth: u32| entry_at(site, path, depth);
        let paths = |entries: &[Entry]| paths_of(site, entries);
        let pushed = a.push(site, &[at("/x", 3), at("/y", 3), at("/z", 2)]).await;
        assert_eq!(pushed.expect("push"), 3);
        // b finds /y by a shorter path, /z by a longer one, /x by one as long.
        let again = b.push(site, &[at("/y", 1), at("/z", 3), at("/x", 3)]).await;
        assert_eq!(again.expect("push"), 0, "no new URL");
        assert_eq!(
            a.backlog(site).await.expect("backlog"),
            (4, 0),
            "/y queued again, nothing else"
        );
        assert!(matches!(a.lease(site).await, Ok(Lease::Taken { .. })));
        let got = a.pull(site, 10).await.expect("pull").expect("ours").entries;
        assert_eq!(
            paths(&got),
            [("/y".into(), 1), ("/z".into(), 2), ("/x".into(), 3)],
            "each once, least depth first, /y at its least depth"
        );
        assert_eq!(a.backlog(site).await.expect("backlog"), (0, 3));
        // Pulled: a shorter path queues nothing again, but the holder hears of it at its next
        // pull (audit 26: a URL waiting in the holder's queue was fetched at the old depth).
        let late = b.push(site, &[at("/x", 1), at("/z", 4)]).await;
        assert_eq!(late.expect("push"), 0);
        assert_eq!(a.backlog(site).await.expect("backlog"), (0, 3));
        let next = a.pull(site, 10).await.expect("pull").expect("ours");
        assert!(next.entries.is_empty());
        assert_eq!(paths(&next.lowered), [("/x".into(), 1)], "the shorter path");
        let again = a.pull(site, 10).await.expect("pull").expect("ours");
        assert!(again.lowered.is_empty(), "told once");
        // ... or at its next round of ends, whichever comes first.
        assert_eq!(b.push(site, &[at("/y", 0)]).await.expect("push"), 0);
        let z = got
            .iter()
            .find(|e| e.url.ends_with("/z"))
            .expect("z")
            .clone();
        let (_, ends) = a
            .push_and_finish(&[], &[(site.to_string(), vec![z], None)])
            .await
            .expect("done");
        assert!(ends[0].ours);
        assert_eq!(paths(&ends[0].lowered), [("/y".into(), 0)]);
        // Handed back unfetched, they come back once each, at the least depth known.
        assert_eq!(a.release(site).await.expect("release"), Some(2));
        assert!(matches!(b.lease(site).await, Ok(Lease::Taken { .. })));
        let back = b.pull(site, 10).await.expect("pull").expect("ours");
        let mut paths_back = paths(&back.entries);
        paths_back.sort();
        assert_eq!(paths_back, [("/x".into(), 1), ("/y".into(), 0)]);
        assert!(back.lowered.is_empty());
        assert!(b.done(site, &back.entries, None).await.expect("done"));
        assert!(b.finished().await.expect("finished?"));
        drop(cluster);
    }

    #[tokio::test]
    async fn a_sites_urls_are_pulled_least_depth_first_and_handed_back_to_the_head_of_their_depth()
    {
        if !redis_here("a_sites_urls_are_pulled_least_depth_first...") {
            return;
        }
        let tmp = tempfile::tempdir().expect("temp dir");
        let cluster = three_masters(tmp.path());
        let (mut a, mut b) = two_joined(&cluster, "order").await;
        let site = "http://127.0.0.1:3200";
        let at = |path: &str, depth: u32| entry_at(site, path, depth);
        let paths = |entries: &[Entry]| paths_of(site, entries);
        // Audit 26: a deep URL queued early was fetched before a shallow one queued later,
        // whose page would have given it a shorter path. Pushed deepest first here.
        let pushed = [
            at("/a", 3),
            at("/b", 3),
            at("/c", 2),
            at("/d", 0),
            at("/e", 2),
        ];
        assert_eq!(a.push(site, &pushed).await.expect("push"), 5);
        assert_eq!(a.backlog(site).await.expect("backlog"), (5, 0));
        assert!(matches!(a.lease(site).await, Ok(Lease::Taken { .. })));
        let first = a.pull(site, 2).await.expect("pull").expect("ours").entries;
        assert_eq!(paths(&first), [("/d".into(), 0), ("/c".into(), 2)]);
        assert_eq!(a.backlog(site).await.expect("backlog"), (3, 2));
        // Queued after /e at its depth, before /a and /b, which are deeper.
        assert_eq!(b.push(site, &[at("/f", 2)]).await.expect("push"), 1);
        // Handed back unfetched: each to the head of its depth's list, before what was queued
        // at that depth, after what is shallower.
        assert_eq!(a.release(site).await.expect("release"), Some(2));
        assert_eq!(a.backlog(site).await.expect("backlog"), (6, 0));
        assert!(matches!(b.lease(site).await, Ok(Lease::Taken { .. })));
        let all = b.pull(site, 10).await.expect("pull").expect("ours").entries;
        assert_eq!(
            paths(&all),
            [
                ("/d".into(), 0),
                ("/c".into(), 2),
                ("/e".into(), 2),
                ("/f".into(), 2),
                ("/a".into(), 3),
                ("/b".into(), 3),
            ]
        );
        assert_eq!(b.backlog(site).await.expect("backlog"), (0, 6));
        assert!(b.done(site, &all, None).await.expect("done"));
        assert_eq!(b.backlog(site).await.expect("backlog"), (0, 0));
        assert!(b.finished().await.expect("finished?"));
        drop(cluster);
    }

    /// Takes `site` for `m` once Redis has expired the lease another member let run out.
    async fn take_when_free(m: &mut SharedCrawl, site: &str) -> Lease {
        for _ in 0..600 {
            match m.lease(site).await.expect("lease") {
                Lease::Held => tokio::time::sleep(Duration::from_millis(10)).await,
                taken => return taken,
            }
        }
        panic!("the lease never ran out");
    }

    /// A new holder learns whether the last one handed the site back (its stored next contact
    /// is then the site's last word) or let its lease run out (it died, or Redis was away): it
    /// may have contacted the site since, so the member waits a whole delay (audit 28 #2).
    #[tokio::test]
    async fn a_lease_taken_after_its_holder_died_says_so_and_one_handed_back_does_not() {
        if !redis_here("a_lease_taken_after_its_holder_died_says_so...") {
            return;
        }
        let tmp = tempfile::tempdir().expect("temp dir");
        let cluster = three_masters(tmp.path());
        let site = "http://127.0.0.1:3100";
        let mut a = member(&cluster.urls(), "lapse", "a", 300).await;
        let mut b = member(&cluster.urls(), "lapse", "b", 300).await;
        for m in [&mut a, &mut b] {
            m.join(&settings("1")).await.expect("join");
        }
        let handed_back = Lease::Taken {
            requeued: 0,
            previous: Previous::HandedBack,
        };
        // The first holder ever, and one after a hand-back: nothing to make up for.
        assert_eq!(a.lease(site).await.expect("lease"), handed_back);
        assert_eq!(a.lease(site).await.expect("renew"), Lease::Renewed);
        assert_eq!(a.release(site).await.expect("release"), Some(0));
        assert_eq!(b.lease(site).await.expect("lease"), handed_back);
        // b dies holding it: whoever takes it next hears so.
        let lapsed = Lease::Taken {
            requeued: 0,
            previous: Previous::Lapsed,
        };
        assert_eq!(take_when_free(&mut a, site).await, lapsed);
        // a's own lease running out and taken again by a: a knows its own last contact.
        let lease_key = format!("ct:{{lapse|{site}}}:lease");
        let port = cluster.ports()[0];
        for _ in 0..600 {
            if super::redis_cli(port, &["EXISTS", &lease_key]) == "0" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(a.lease(site).await.expect("lease"), handed_back);
        // A hand-back after a lapsed take clears the mark again.
        assert_eq!(a.release(site).await.expect("release"), Some(0));
        assert_eq!(b.lease(site).await.expect("lease"), handed_back);
        drop(cluster);
    }

    #[tokio::test]
    async fn a_dead_members_lease_runs_out_on_redis_time_and_its_unfinished_urls_come_back() {
        if !redis_here("a_dead_members_lease_runs_out...") {
            return;
        }
        let tmp = tempfile::tempdir().expect("temp dir");
        let cluster = three_masters(tmp.path());
        let site = "http://127.0.0.1:3000";
        let mut dead = member(&cluster.urls(), "t2", "dead", 300).await;
        dead.join(&settings("1")).await.expect("join");
        let es: Vec<Entry> = (0..5).map(|i| entry(&format!("{site}/{i}"))).collect();
        assert_eq!(dead.push(site, &es).await.expect("push"), 5);
        assert!(matches!(dead.lease(site).await, Ok(Lease::Taken { .. })));
        let pulled = dead
            .pull(site, 2)
            .await
            .expect("pull")
            .expect("ours")
            .entries;
        drop(dead); // killed: no release

        let mut heir = member(&cluster.urls(), "t2", "heir", 10_000).await;
        heir.join(&settings("1")).await.expect("join");
        // Held until Redis expires the lease (its clock, not ours); then taken with the two back.
        let mut tries = 0;
        let requeued = loop {
            match heir.lease(site).await.expect("lease") {
                Lease::Held => {
                    tries += 1;
                    assert!(tries < 600, "the lease never ran out");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                Lease::Taken { requeued, .. } => break requeued,
                Lease::Renewed => panic!("heir never held it"),
            }
        };
        assert_eq!(requeued, 2);
        let all = heir
            .pull(site, 10)
            .await
            .expect("pull")
            .expect("ours")
            .entries;
        assert_eq!(all.len(), 5, "nothing lost: {all:?}");
        for e in &pulled {
            assert!(all.contains(e), "{e:?} came back");
        }
        drop(cluster);
    }

    #[tokio::test]
    async fn a_member_with_other_settings_or_another_format_is_refused_with_the_names() {
        if !redis_here("a_member_with_other_settings...") {
            return;
        }
        let tmp = tempfile::tempdir().expect("temp dir");
        let cluster = three_masters(tmp.path());
        let mut first = member(&cluster.urls(), "t3", "first", 10_000).await;
        first.join(&settings("3")).await.expect("join");
        let mut other = member(&cluster.urls(), "t3", "other", 10_000).await;
        let e = other.join(&settings("5")).await.expect_err("other depth");
        let said = e.to_string();
        assert!(said.contains("depth is 3 there, 5 here"), "{said}");
        assert!(!said.contains("delay_ms"), "only what differs: {said}");

        // A crawl id written by another format.
        let port = cluster.ports()[0];
        let hset = std::process::Command::new("redis-cli")
            .args([
                "-c",
                "-p",
                &port.to_string(),
                "hset",
                "ct:{t4}:meta",
                "format",
                "99",
            ])
            .output()
            .expect("redis-cli");
        assert!(hset.status.success());
        let mut late = member(&cluster.urls(), "t4", "late", 10_000).await;
        let e = late.join(&settings("3")).await.expect_err("format 99");
        assert!(matches!(e, SharedError::Format { .. }), "{e}");
        assert!(e.to_string().contains("cluster format 99"), "{e}");
        drop(cluster);
    }

    #[tokio::test]
    async fn members_beat_count_and_command_the_whole_crawl_on_redis_time() {
        use crawltop::cluster::shared::Heartbeat;
        if !redis_here("members_beat_count_and_command...") {
            return;
        }
        let tmp = tempfile::tempdir().expect("temp dir");
        let cluster = three_masters(tmp.path());
        let mut a = member(&cluster.urls(), "t5", "a", 10_000).await;
        let mut b = member(&cluster.urls(), "t5", "b", 10_000).await;
        let beat = Heartbeat {
            host: "h1".into(),
            pid: 42,
            sites_leased: 3,
            pages: 100,
            pages_per_s: 12.5,
            busy: 2,
            blocked: 1,
            idle: 1,
            gone: false,
            lease_ms: 3_000,
        };
        a.heartbeat(&beat).await.expect("beat");
        b.heartbeat(&Heartbeat {
            gone: true,
            ..Heartbeat::default()
        })
        .await
        .expect("beat");
        let members = b.members().await.expect("members");
        assert_eq!(
            members.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert_eq!(members[0].beat, beat);
        assert!(members[1].beat.gone);
        // Silent only past its own lease without a beat; one that left is gone, not silent.
        assert_eq!(members[0].silent_after(), Duration::from_secs(3));
        assert_eq!(
            members[1].silent_after(),
            Duration::from_secs(10),
            "the default"
        );
        assert!(!members[0].silent() && !members[1].silent());
        assert!(
            members[0].age < Duration::from_secs(60),
            "{:?}",
            members[0].age
        );

        a.count(&[("pages", 10), ("bytes", 1000)])
            .await
            .expect("count");
        b.count(&[("pages", 5)]).await.expect("count");
        let c = a.counters().await.expect("counters");
        assert_eq!((c["pages"], c["bytes"]), (15, 1000));

        assert_eq!(a.command("pause").await.expect("command"), 0);
        assert_eq!(b.command("delay 300").await.expect("command"), 1);
        let all = b.commands_since(0).await.expect("log");
        let said: Vec<(&str, &str)> = all
            .iter()
            .map(|c| (c.from.as_str(), c.command.as_str()))
            .collect();
        assert_eq!(said, [("a", "pause"), ("b", "delay 300")]);
        assert!(all[0].at_ms <= all[1].at_ms && all[0].at_ms > 1_700_000_000_000);
        let later = a.commands_since(1).await.expect("log");
        assert_eq!((later.len(), later[0].number), (1, 1));
        drop(cluster);
    }

    #[tokio::test]
    async fn one_plain_redis_server_serves_a_shared_crawl_too() {
        if !redis_here("one_plain_redis_server...") {
            return;
        }
        let tmp = tempfile::tempdir().expect("temp dir");
        let (mut server, nodes) = crate::util::plain_redis(tmp.path()).await;
        let url = nodes[0].clone();
        let mut m = None;
        for _ in 0..500 {
            match SharedCrawl::connect(
                std::slice::from_ref(&url),
                CrawlId::new("plain").expect("id"),
                "m",
                Duration::from_secs(10),
            )
            .await
            {
                Ok(c) => {
                    m = Some(c);
                    break;
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
        let mut m = m.expect("connects to the plain server");
        m.join(&settings("1")).await.expect("join");
        let site = "http://127.0.0.1:4000";
        assert_eq!(
            m.push(site, &[entry("http://127.0.0.1:4000/a")])
                .await
                .expect("push"),
            1
        );
        assert_eq!(
            m.push(site, &[entry("http://127.0.0.1:4000/a")])
                .await
                .expect("push"),
            0
        );
        assert_eq!(
            m.lease(site).await.expect("lease"),
            Lease::Taken {
                requeued: 0,
                previous: Previous::HandedBack
            }
        );
        assert_eq!(
            m.pull(site, 10)
                .await
                .expect("pull")
                .map(|p| p.entries.len()),
            Some(1)
        );
        let _ = server.kill();
        let _ = server.wait();
    }

    #[tokio::test]
    async fn a_rounds_calls_to_many_sites_travel_as_one_pipeline_a_master() {
        if !redis_here("a_rounds_calls_to_many_sites_travel_as_one_pipeline_a_master") {
            return;
        }
        let tmp = tempfile::tempdir().expect("temp dir");
        let cluster = three_masters(tmp.path());
        let mut m = member(&cluster.urls(), "t-pipe", "m", 10_000).await;
        assert!(m.join(&settings("3")).await.expect("joins"));
        // 40 sites, spread over the 3 masters' slots; each round brings every site a link
        // found on its own pages, and every other site one found on another site's (those go
        // first, in calls of their own).
        let sites: Vec<String> = (0..40)
            .map(|i| format!("http://127.0.0.1:{}", 5000 + i))
            .collect();
        let round = |n: usize| -> Vec<(String, Vec<Entry>)> {
            sites
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    let other = &sites[(i + 1) % sites.len()];
                    let own = Entry {
                        referrer: Some(format!("{s}/")),
                        ..entry(&format!("{s}/own{n}"))
                    };
                    let across = Entry {
                        referrer: Some(format!("{other}/")),
                        ..entry(&format!("{s}/across{n}"))
                    };
                    let entries = if i % 2 == 0 {
                        vec![own]
                    } else {
                        vec![own, across]
                    };
                    (s.clone(), entries)
                })
                .collect()
        };
        // The first round also lists the sites, loads the scripts on each master and reads
        // where the slots are.
        assert_eq!(m.push_many(&round(0)).await.expect("first round"), 60);
        let before = m.round_trips();
        assert_eq!(m.push_many(&round(1)).await.expect("second round"), 60);
        let trips = m.round_trips() - before;
        // One pipeline a master for the links across sites, one a master for the rest: 6 at
        // most (a call a site would be 40).
        assert!(
            trips <= 6,
            "40 sites' calls took {trips} requests, not one a master and kind"
        );
        // And every call did its work: each site has its URLs queued, once.
        assert_eq!(m.push_many(&round(1)).await.expect("again"), 0);
        for (i, s) in sites.iter().enumerate() {
            let want = if i % 2 == 0 { 2 } else { 4 };
            assert_eq!(m.backlog(s).await.expect("backlog"), (want, 0), "{s}");
        }
    }
}

#[tokio::test]
async fn an_unreachable_redis_or_a_bad_url_is_a_clear_error() {
    use crawltop::cluster::shared::{CrawlId, SharedCrawl, SharedError};
    let id = || CrawlId::new("x").expect("id");
    let lease = std::time::Duration::from_secs(1);
    // A loopback port where nothing listens.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let e = SharedCrawl::connect(&[format!("redis://127.0.0.1:{port}")], id(), "m", lease)
        .await
        .expect_err("nothing listens");
    assert!(matches!(e, SharedError::Unreachable { .. }), "{e}");
    assert!(e.to_string().contains("cannot be reached"), "{e}");
    let e = SharedCrawl::connect(&["http://127.0.0.1:1".into()], id(), "m", lease)
        .await
        .expect_err("not a Redis URL");
    assert!(matches!(e, SharedError::BadUrl { .. }), "{e}");
    let e = SharedCrawl::connect(&[], id(), "m", lease)
        .await
        .expect_err("no nodes");
    assert!(matches!(e, SharedError::NoNodes), "{e}");
}

mod agents {
    //! Members' agents against a real cluster: a driver stands in for the engine, "fetching"
    //! every pulled URL by reporting it done.

    use std::collections::BTreeMap;
    use std::time::Duration;

    use crawltop::cluster::agent::{self, Agent, AgentConfig, FromAgent, ToAgent};
    use crawltop::cluster::shared::{CrawlId, Entry, Heartbeat, Lease, Previous, SharedCrawl};

    use super::{redis_here, three_masters};

    /// How long a test waits for an agent to say something or to stop.
    const MINUTE: Duration = Duration::from_secs(60);

    /// A running agent, killed when dropped. The test's runtime waits for the agent's thread
    /// when the test ends, and an agent retrying a cluster the test has stopped never ends by
    /// itself: without this, a failing test (or one that stops its cluster while the agent is
    /// in the middle of a request) hangs instead of failing (session 19's CI did).
    struct Running(Agent);

    impl std::ops::Deref for Running {
        type Target = Agent;
        fn deref(&self) -> &Agent {
            &self.0
        }
    }

    impl std::ops::DerefMut for Running {
        fn deref_mut(&mut self) -> &mut Agent {
            &mut self.0
        }
    }

    impl Drop for Running {
        fn drop(&mut self) {
            self.0.kill.abort();
        }
    }

    fn start(shared: SharedCrawl, cfg: AgentConfig) -> Running {
        Running(agent::spawn(shared, cfg))
    }

    /// Stops `agent` as its member does (`Stop`: it hands its sites back), waiting for it.
    async fn stop(mut agent: Running) -> Result<(), crawltop::cluster::agent::AgentError> {
        agent.to.send(ToAgent::Stop).expect("agent runs");
        tokio::time::timeout(MINUTE, &mut agent.0.task)
            .await
            .expect("the agent stops within a minute")
            .expect("joins")
    }

    /// Kills `agent` where it is, handing nothing back (its leases run out), as a SIGKILL of
    /// its member would.
    async fn kill(mut agent: Running) {
        agent.kill.abort();
        let _ = tokio::time::timeout(MINUTE, &mut agent.0.task)
            .await
            .expect("the agent ends within a minute");
    }

    async fn joined(urls: &[String], crawl: &str, id: &str, lease_ms: u64) -> SharedCrawl {
        let mut m = SharedCrawl::connect(
            urls,
            CrawlId::new(crawl).expect("id"),
            id,
            Duration::from_millis(lease_ms),
        )
        .await
        .expect("connects");
        m.join(&BTreeMap::new()).await.expect("joins");
        m
    }

    /// The agent's next message about work (leases, URLs, the end), past its reports on the
    /// members, the seeds, the command log and how long leases stand.
    async fn work(agent: &mut Agent) -> Option<FromAgent> {
        let next = async {
            loop {
                match agent.from.recv().await? {
                    FromAgent::Members { .. }
                    | FromAgent::Seeds(_)
                    | FromAgent::Command { .. }
                    | FromAgent::JoinedPaused(_)
                    | FromAgent::Stored { .. }
                    | FromAgent::Released { .. }
                    | FromAgent::Fresh { .. } => {}
                    other => return Some(other),
                }
            }
        };
        tokio::time::timeout(MINUTE, next)
            .await
            .expect("the agent has work to tell within a minute")
    }

    fn config(lease_ms: u64) -> AgentConfig {
        AgentConfig {
            lease: Duration::from_millis(lease_ms),
            batch: 5,
            max_sites: 2,
            idle_poll: Duration::from_millis(20),
        }
    }

    fn urls_of(sites: usize, per_site: usize) -> Vec<(String, Vec<Entry>)> {
        (0..sites)
            .map(|s| {
                let site = format!("http://127.0.0.1:{}", 5000 + s);
                let entries = (0..per_site)
                    .map(|p| Entry {
                        url: format!("{site}/p{p}"),
                        depth: 1,
                        hops: 0,
                        referrer: None,
                    })
                    .collect();
                (site, entries)
            })
            .collect()
    }

    /// Reports every pulled URL done until the crawl-wide end; returns the URLs it got.
    async fn fetch_all(agent: &mut Agent) -> Vec<String> {
        let mut got = Vec::new();
        while let Some(msg) = work(agent).await {
            match msg {
                FromAgent::Pulled { site, entries, .. } => {
                    got.extend(entries.iter().map(|e| e.url.clone()));
                    agent
                        .to
                        .send(ToAgent::Done {
                            site,
                            entries,
                            waited: 0,
                            next_in: None,
                        })
                        .expect("agent runs");
                }
                FromAgent::Finished => break,
                FromAgent::Leased { .. } => {}
                // Nothing is in flight here: every pulled URL is reported done at once.
                FromAgent::GiveBack { site } => {
                    agent
                        .to
                        .send(ToAgent::Release { site })
                        .expect("agent runs");
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        got
    }

    /// A member's agent that queued one site of `n` URLs and pulled its first batch.
    async fn first_batch(
        urls: &[String],
        crawl: &str,
        id: &str,
        lease_ms: u64,
        n: usize,
    ) -> (Running, String, Vec<Entry>, Vec<Entry>) {
        let (site, entries) = urls_of(1, n).remove(0);
        let mut agent = start(joined(urls, crawl, id, lease_ms).await, config(lease_ms));
        agent
            .to
            .send(ToAgent::Push {
                site: site.clone(),
                entries: entries.clone(),
            })
            .expect("agent runs");
        let Some(FromAgent::Leased { .. }) = work(&mut agent).await else {
            panic!("the lease first");
        };
        let Some(FromAgent::Pulled { entries: batch, .. }) = work(&mut agent).await else {
            panic!("then a batch");
        };
        (agent, site, entries, batch)
    }

    #[tokio::test]
    async fn two_members_agents_fetch_every_url_exactly_once_between_them() {
        if !redis_here("two_members_agents_fetch_every_url...") {
            return;
        }
        let tmp = tempfile::tempdir().expect("temp dir");
        let cluster = three_masters(tmp.path());
        let urls = cluster.urls();
        let mut a = start(joined(&urls, "g1", "a", 5_000).await, config(5_000));
        let mut b = start(joined(&urls, "g1", "b", 5_000).await, config(5_000));
        let work = urls_of(6, 23);
        for (site, entries) in &work {
            a.to.send(ToAgent::Push {
                site: site.clone(),
                entries: entries.clone(),
            })
            .expect("agent runs");
            // The same URLs again from the other member: admitted once.
            b.to.send(ToAgent::Push {
                site: site.clone(),
                entries: entries.clone(),
            })
            .expect("agent runs");
        }
        let (got_a, got_b) = tokio::join!(fetch_all(&mut a), fetch_all(&mut b));
        let mut all: Vec<String> = got_a.iter().chain(&got_b).cloned().collect();
        all.sort();
        let mut want: Vec<String> = work
            .iter()
            .flat_map(|(_, es)| es.iter().map(|e| e.url.clone()))
            .collect();
        want.sort();
        assert_eq!(all, want, "each URL once, between the two members");
        for agent in [a, b] {
            stop(agent).await.expect("hands back cleanly");
        }
        drop(cluster);
    }

    #[tokio::test]
    async fn a_killed_members_sites_go_to_another_with_what_it_had_in_flight() {
        if !redis_here("a_killed_members_sites_go_to_another...") {
            return;
        }
        let tmp = tempfile::tempdir().expect("temp dir");
        let cluster = three_masters(tmp.path());
        let urls = cluster.urls();
        // A lease long enough that no stall of a loaded machine lets it run out before the
        // kill (the agent's next renewal would take it anew, sending its URLs in flight back to
        // the queue before the test looks), short enough that the heir soon takes it after.
        let (dead, site, entries, batch) = first_batch(&urls, "g2", "dead", 1_500, 12).await;
        let (site, entries) = (&site, &entries);
        assert_eq!(batch.len(), 5);
        dead.to
            .send(ToAgent::Done {
                site: site.clone(),
                entries: batch[..2].to_vec(),
                waited: 0,
                next_in: None,
            })
            .expect("agent runs");
        // Wait until Redis has the two done: three in flight.
        let mut probe = joined(&urls, "g2", "probe", 1_500).await;
        let deadline = tokio::time::Instant::now() + MINUTE;
        loop {
            let (_, flight) = probe.backlog(site).await.expect("backlog");
            if flight == 3 {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline && flight == 5,
                "{flight} URLs in flight: the dead member's 5, then 3 once it ended 2"
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        kill(dead).await;

        let mut heir = start(joined(&urls, "g2", "heir", 5_000).await, config(5_000));
        let got = fetch_all(&mut heir).await;
        let mut fetched: Vec<String> = batch[..2].iter().map(|e| e.url.clone()).collect();
        fetched.extend(got.iter().cloned());
        fetched.sort();
        let mut want: Vec<String> = entries.iter().map(|e| e.url.clone()).collect();
        want.sort();
        assert_eq!(
            fetched, want,
            "every URL once: the 3 in flight at the kill came back"
        );
        stop(heir).await.expect("hands back cleanly");
        drop(cluster);
    }

    #[tokio::test]
    async fn a_sites_next_contact_and_politeness_travel_with_its_lease() {
        if !redis_here("a_sites_next_contact_and_politeness_travel...") {
            return;
        }
        let tmp = tempfile::tempdir().expect("temp dir");
        let cluster = three_masters(tmp.path());
        let urls = cluster.urls();
        let (first, site, _, _) = first_batch(&urls, "g4", "first", 600_000, 3).await;
        // Robots.txt said Crawl-delay 90: no contact for a minute and a half.
        first
            .to
            .send(ToAgent::Politeness {
                site: site.clone(),
                state: "robots: handled; crawl-delay 90 s".into(),
                next_in: Duration::from_secs(90),
            })
            .expect("agent runs");
        stop(first).await.expect("hands back");

        let mut second = start(
            joined(&urls, "g4", "second", 600_000).await,
            config(600_000),
        );
        let Some(FromAgent::Leased {
            site: leased,
            politeness,
            wait,
            previous,
        }) = work(&mut second).await
        else {
            panic!("the lease first");
        };
        assert_eq!(leased, site);
        assert_eq!(
            previous,
            Previous::HandedBack,
            "the first member handed it back"
        );
        assert_eq!(
            politeness.as_deref(),
            Some("robots: handled; crawl-delay 90 s")
        );
        // Counted on Redis's clock from when it was stored: well over a minute still to wait.
        assert!(
            wait > Duration::from_secs(60) && wait <= Duration::from_secs(90),
            "{wait:?}"
        );
        stop(second).await.expect("hands back cleanly");
        drop(cluster);
    }

    #[tokio::test]
    async fn a_stopped_member_hands_its_sites_back_at_once() {
        if !redis_here("a_stopped_member_hands_its_sites_back...") {
            return;
        }
        let tmp = tempfile::tempdir().expect("temp dir");
        let cluster = three_masters(tmp.path());
        let urls = cluster.urls();
        // A lease of ten minutes: only a hand-back lets the other member in during this test.
        let (first, _, _, batch) = first_batch(&urls, "g3", "first", 600_000, 8).await;
        stop(first).await.expect("hands back");

        let mut second = start(
            joined(&urls, "g3", "second", 600_000).await,
            config(600_000),
        );
        let got = fetch_all(&mut second).await;
        assert_eq!(got.len(), 8, "{got:?}");
        for e in &batch {
            assert!(got.contains(&e.url), "{} handed back", e.url);
        }
        stop(second).await.expect("hands back cleanly");
        drop(cluster);
    }

    #[tokio::test]
    async fn a_site_left_off_the_list_of_sites_with_work_is_still_crawled_before_the_end() {
        if !redis_here("a_site_left_off_the_list...") {
            return;
        }
        let tmp = tempfile::tempdir().expect("temp dir");
        let cluster = three_masters(tmp.path());
        let urls = cluster.urls();
        // A member queued two sites and died before it listed the second as having work (the
        // list is on the crawl's slot, a request of its own after the site's push).
        let mut dead = joined(&urls, "g6", "dead", 5_000).await;
        let work = urls_of(2, 3);
        dead.push_many(&work).await.expect("pushes");
        let client = redis::cluster::ClusterClient::new(urls.clone()).expect("client");
        let mut raw = client.get_async_connection().await.expect("connects");
        let removed: i64 = redis::cmd("SREM")
            .arg("ct:{g6}:active")
            .arg(&work[1].0)
            .query_async(&mut raw)
            .await
            .expect("SREM");
        assert_eq!(removed, 1, "the site was listed");
        drop(dead);

        let mut heir = start(joined(&urls, "g6", "heir", 5_000).await, config(5_000));
        let mut got = fetch_all(&mut heir).await;
        got.sort();
        let mut want: Vec<String> = work
            .iter()
            .flat_map(|(_, es)| es.iter().map(|e| e.url.clone()))
            .collect();
        want.sort();
        assert_eq!(got, want, "the unlisted site's URLs too, before the end");
        stop(heir).await.expect("stops cleanly");
        drop(cluster);
    }

    /// Requests the Redis nodes at `ports` served so far, by their own count (`INFO
    /// commandstats`), the `INFO` requests that ask not counted.
    async fn served(ports: &[u16]) -> u64 {
        let mut total = 0;
        for port in ports {
            let client = redis::Client::open(format!("redis://127.0.0.1:{port}")).expect("url");
            let mut conn = client
                .get_multiplexed_async_connection()
                .await
                .expect("node answers");
            let info: String = redis::cmd("INFO")
                .arg("commandstats")
                .query_async(&mut conn)
                .await
                .expect("INFO");
            // cmdstat_llen:calls=4000,usec=...
            for line in info.lines() {
                let Some((name, rest)) = line.split_once(':') else {
                    continue;
                };
                if !name.starts_with("cmdstat_") || name == "cmdstat_info" {
                    continue;
                }
                let calls = rest
                    .split(',')
                    .find_map(|kv| kv.strip_prefix("calls="))
                    .and_then(|n| n.parse::<u64>().ok())
                    .expect("calls=N");
                total += calls;
                if std::env::var_os("LOOK_DEBUG").is_some() {
                    eprintln!("{port} {name} {calls}");
                }
            }
        }
        total
    }

    #[tokio::test]
    async fn an_idle_members_looks_cost_redis_a_few_requests_however_many_sites_have_work() {
        if !redis_here("an_idle_members_looks_cost_redis...") {
            return;
        }
        // LOOK_SITES=10000 for the README's measurement.
        let sites: usize = std::env::var("LOOK_SITES")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(2_000);
        let tmp = tempfile::tempdir().expect("temp dir");
        let cluster = three_masters(tmp.path());
        let urls = cluster.urls();
        // Another member holds the sites, each with work, for ten minutes, and says so.
        let mut holder = joined(&urls, "g5", "holder", 600_000).await;
        let work = urls_of(sites, 1);
        for chunk in work.chunks(1_000) {
            let added = holder.push_many(chunk).await.expect("pushes");
            assert_eq!(added, chunk.len() as u64);
        }
        for (site, _) in &work {
            let lease = holder.lease(site).await.expect("lease");
            assert_eq!(
                lease,
                Lease::Taken {
                    requeued: 0,
                    previous: Previous::HandedBack
                },
                "{site}"
            );
        }
        holder
            .heartbeat(&Heartbeat {
                sites_leased: sites as u64,
                ..Heartbeat::default()
            })
            .await
            .expect("beats");
        // A member with room looks every 200 ms (the default) and finds nothing free to take.
        let cfg = AgentConfig {
            idle_poll: Duration::from_millis(200),
            ..config(600_000)
        };
        let mut idle = start(joined(&urls, "g5", "idle", 600_000).await, cfg);
        // Judged by Redis's count over three of the agent's seconds (it reports once a second).
        let mut seconds = 0;
        let mut start = None;
        loop {
            let msg = tokio::time::timeout(MINUTE, idle.from.recv())
                .await
                .expect("the agent says something within a minute")
                .expect("agent runs");
            match msg {
                FromAgent::Members { .. } => {}
                FromAgent::Seeds(_) | FromAgent::Command { .. } => continue,
                other => panic!("nothing to take, yet {other:?}"),
            }
            match start {
                None => start = Some((std::time::Instant::now(), served(cluster.ports()).await)),
                Some(_) => seconds += 1,
            }
            if seconds == 3 {
                break;
            }
        }
        let Some((at, before)) = start else {
            unreachable!("set at the first report")
        };
        let per_s = (served(cluster.ports()).await - before) as f64 / at.elapsed().as_secs_f64();
        eprintln!("an idle member among {sites} sites: {per_s:.0} requests a second to Redis");
        // A look: the command log, the seeds' count, the members, the sites with work (count
        // and sample), two leases tried (the heartbeats say every site is held); five a second.
        // Once a second: the counters and a sweep of about 16 sites. About 100 a second in all
        // (Redis counts the calls inside scripts too); one request a site would be thousands a
        // look.
        assert!(
            per_s < 200.0,
            "{per_s:.0} requests a second to Redis from an idle member among {sites} sites"
        );
        stop(idle).await.expect("stops cleanly");
        drop(cluster);
    }
}
