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
fn redis_here(test: &str) -> bool {
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
