//! A Redis Cluster on loopback, made of Debian's `redis-server` processes and formed by
//! `redis-cli --cluster create`: what `crawltop cluster-up` / `cluster-down` run, and what the
//! tests start for themselves.
//!
//! It owns the cluster's folder: one sub-folder a node (`node-PORT/`: its `redis.conf`, append-only
//! file, `nodes.conf` and log) and `cluster.json`, which names the ports. Nodes run in the
//! background (daemonized) so a cluster outlives the command that started it; a
//! [`LocalCluster`] value stops its nodes when dropped unless it was [`LocalCluster::detach`]ed.
//! Starting again from a folder whose nodes are down restarts the same nodes on the same ports,
//! with their data (`appendonly yes`, `appendfsync always`: a node answers a write once it is
//! on disk, so a node killed and started again has every write it acknowledged).
//!
//! It never binds anything but 127.0.0.1, and never touches a Redis it did not start: every node
//! it stops is named in its own folder's `cluster.json`.

use std::io::Read;
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// The file in the cluster's folder that names its nodes.
pub const STATE_FILE: &str = "cluster.json";
/// Redis Cluster refuses to form with fewer masters.
pub const MIN_MASTERS: usize = 3;
/// More than a loopback cluster for trying things needs.
pub const MAX_NODES: usize = 32;
/// Redis Cluster's bus port is the client port plus this.
const BUS_OFFSET: u16 = 10_000;
/// How long a node may take to answer, and the cluster to agree, before it is a failure.
const PATIENCE: Duration = Duration::from_secs(30);
/// Between two looks at a starting node or a forming cluster.
const POLL: Duration = Duration::from_millis(50);

/// Why a local cluster could not be started or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error(
        "{program} was not found: the cluster mode needs Debian's Redis \
         (apt-get install redis-server)"
    )]
    Missing { program: &'static str },
    #[error("a Redis Cluster needs at least {MIN_MASTERS} masters, not {0}")]
    TooFewMasters(usize),
    #[error("{0} nodes is more than a cluster on one machine needs (at most {MAX_NODES})")]
    TooManyNodes(usize),
    #[error(
        "a cluster started from {} is running (ports {ports}); stop it first: crawltop \
         cluster-down --dir {}",
        dir.display(),
        dir.display()
    )]
    Running { dir: PathBuf, ports: String },
    #[error(
        "{} was started with {was_masters} masters and {was_replicas} replicas per master; \
         start it with those, or use another folder",
        dir.display()
    )]
    Shape {
        dir: PathBuf,
        was_masters: usize,
        was_replicas: usize,
    },
    #[error("no cluster was started from {} (it has no {STATE_FILE})", dir.display())]
    NotStarted { dir: PathBuf },
    #[error("{} is not a cluster state crawltop wrote: {reason}", path.display())]
    State { path: PathBuf, reason: String },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("redis-server on port {port} did not start: {detail}")]
    Start { port: u16, detail: String },
    #[error("the cluster did not form: {detail}")]
    Form { detail: String },
    #[error("could not stop the nodes on ports {ports}")]
    Stop { ports: String },
}

/// What `cluster.json` holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct State {
    masters: usize,
    replicas: usize,
    ports: Vec<u16>,
}

impl State {
    /// The ports whose node answers now.
    fn running(&self) -> Vec<u16> {
        self.ports.iter().copied().filter(|p| answers(*p)).collect()
    }
}

/// The shape of a cluster to start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub masters: usize,
    /// Replicas per master.
    pub replicas: usize,
}

impl Shape {
    fn nodes(self) -> usize {
        self.masters * (1 + self.replicas)
    }

    fn check(self) -> Result<(), ClusterError> {
        if self.masters < MIN_MASTERS {
            return Err(ClusterError::TooFewMasters(self.masters));
        }
        let nodes = self.masters.saturating_mul(1 + self.replicas);
        if nodes > MAX_NODES {
            return Err(ClusterError::TooManyNodes(nodes));
        }
        Ok(())
    }
}

/// A running cluster started from a folder. Dropping it stops its nodes, unless detached.
#[derive(Debug)]
pub struct LocalCluster {
    dir: PathBuf,
    ports: Vec<u16>,
    detached: bool,
}

impl LocalCluster {
    /// Starts the cluster of `dir`: a new one of `shape`, or, when `dir` holds one whose nodes
    /// are all down, the same nodes again with their data. Returns once every node says
    /// `cluster_state:ok`.
    pub fn up(dir: &Path, shape: Shape) -> Result<LocalCluster, ClusterError> {
        shape.check()?;
        need("redis-server")?;
        need("redis-cli")?;
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let dir = std::path::absolute(dir).map_err(io(dir))?;
        let state_path = dir.join(STATE_FILE);
        let restart = match read_state(&dir) {
            Ok(state) => Some(state),
            Err(ClusterError::NotStarted { .. }) => None,
            Err(e) => return Err(e),
        };
        if let Some(state) = restart {
            let up = state.running();
            if !up.is_empty() {
                return Err(ClusterError::Running {
                    dir,
                    ports: list(&up),
                });
            }
            if state.masters != shape.masters || state.replicas != shape.replicas {
                return Err(ClusterError::Shape {
                    dir,
                    was_masters: state.masters,
                    was_replicas: state.replicas,
                });
            }
            let mut cluster = LocalCluster {
                dir,
                ports: Vec::new(),
                detached: false,
            };
            for &port in &state.ports {
                start_node(&cluster.dir, port)?;
                cluster.ports.push(port);
            }
            cluster.wait_formed(shape.masters)?;
            return Ok(cluster);
        }
        let mut cluster = LocalCluster {
            dir,
            ports: Vec::new(),
            detached: false,
        };
        for _ in 0..shape.nodes() {
            let port = cluster.start_fresh_node()?;
            cluster.ports.push(port);
        }
        // Written before the cluster forms, so `cluster-down` can stop what a failed start
        // left running.
        let state = State {
            masters: shape.masters,
            replicas: shape.replicas,
            ports: cluster.ports.clone(),
        };
        let json = serde_json::to_vec_pretty(&state).map_err(|e| ClusterError::State {
            path: state_path.clone(),
            reason: e.to_string(),
        })?;
        std::fs::write(&state_path, json).map_err(io(&state_path))?;
        let mut create = Command::new("redis-cli");
        create.arg("--cluster").arg("create");
        for port in &cluster.ports {
            create.arg(format!("127.0.0.1:{port}"));
        }
        create
            .arg("--cluster-replicas")
            .arg(shape.replicas.to_string())
            .arg("--cluster-yes");
        // redis-cli waits for the nodes to agree without a limit of its own.
        let out = output_within(&mut create, PATIENCE)
            .map_err(io(Path::new("redis-cli")))?
            .ok_or_else(|| ClusterError::Form {
                detail: format!(
                    "redis-cli --cluster create did not finish within {} s",
                    PATIENCE.as_secs()
                ),
            })?;
        let said = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() || said.contains("[ERR]") {
            return Err(ClusterError::Form {
                detail: last_lines(&format!("{said}{}", String::from_utf8_lossy(&out.stderr))),
            });
        }
        cluster.wait_formed(shape.masters)?;
        Ok(cluster)
    }

    /// The client ports of its nodes, masters and replicas alike.
    pub fn ports(&self) -> &[u16] {
        &self.ports
    }

    /// `redis://127.0.0.1:PORT` for every node: the seed nodes a client is given.
    pub fn urls(&self) -> Vec<String> {
        self.ports
            .iter()
            .map(|p| format!("redis://127.0.0.1:{p}"))
            .collect()
    }

    /// The folder it runs from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Leaves the nodes running when this value goes (what `cluster-up` wants).
    pub fn detach(mut self) -> Vec<String> {
        self.detached = true;
        self.urls()
    }

    /// Stops every node now (each writes its append-only file first).
    pub fn stop(mut self) -> Result<(), ClusterError> {
        self.detached = true;
        stop_ports(&self.ports)
    }

    /// Stops the cluster started from `dir`; returns the ports that were running.
    pub fn down(dir: &Path) -> Result<Vec<u16>, ClusterError> {
        let state = read_state(dir)?;
        need("redis-cli")?;
        let up = state.running();
        stop_ports(&up)?;
        Ok(up)
    }

    /// A node on a port of the OS's choosing (and a free bus port beside it); a port taken in
    /// between by someone else is tried again with another.
    fn start_fresh_node(&self) -> Result<u16, ClusterError> {
        let mut last = None;
        for _ in 0..5 {
            let port = free_port(&self.ports)?;
            match start_node(&self.dir, port) {
                Ok(()) => return Ok(port),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or(ClusterError::Start {
            port: 0,
            detail: "no free port".into(),
        }))
    }

    /// Waits until every node says the cluster is ok, knows every other node, and sees
    /// `masters` masters (the others being their replicas: gossip takes a moment to tell), and
    /// every replica has its master's data (a replica still in its first sync would take
    /// over empty if its master died now).
    fn wait_formed(&self, masters: usize) -> Result<(), ClusterError> {
        let deadline = Instant::now() + PATIENCE;
        let want = format!("cluster_known_nodes:{}", self.ports.len());
        loop {
            let mut pending = None;
            for &port in &self.ports {
                let info = cli(port, &["cluster", "info"]).unwrap_or_default();
                let seen_masters = cli(port, &["cluster", "nodes"]).map(|nodes| {
                    nodes
                        .lines()
                        .filter(|l| {
                            l.split_whitespace()
                                .nth(2)
                                .is_some_and(|f| f.split(',').any(|x| x == "master"))
                        })
                        .count()
                });
                let replication = cli(port, &["info", "replication"]).unwrap_or_default();
                let has = |line: &str| replication.lines().any(|l| l.trim() == line);
                let synced = !has("role:slave")
                    || (has("master_link_status:up") && has("master_sync_in_progress:0"));
                let ok = info.lines().any(|l| l.trim() == "cluster_state:ok")
                    && info.lines().any(|l| l.trim() == want)
                    && seen_masters == Some(masters)
                    && synced;
                if !ok {
                    pending = Some((port, info));
                    break;
                }
            }
            let Some((port, info)) = pending else {
                return Ok(());
            };
            if Instant::now() >= deadline {
                return Err(ClusterError::Form {
                    detail: format!(
                        "node {port} still says: {}",
                        info.lines()
                            .filter(|l| l.starts_with("cluster_state")
                                || l.starts_with("cluster_known_nodes"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                });
            }
            std::thread::sleep(POLL);
        }
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        if !self.detached {
            let _ = stop_ports(&self.ports);
        }
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ClusterError + '_ {
    move |source| ClusterError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn list(ports: &[u16]) -> String {
    ports
        .iter()
        .map(u16::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The program answers `--version`, or it is missing.
fn need(program: &'static str) -> Result<(), ClusterError> {
    match Command::new(program).arg("--version").output() {
        Ok(out) if out.status.success() => Ok(()),
        _ => Err(ClusterError::Missing { program }),
    }
}

fn read_state(dir: &Path) -> Result<State, ClusterError> {
    let path = dir.join(STATE_FILE);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ClusterError::NotStarted {
                dir: dir.to_path_buf(),
            });
        }
        Err(source) => return Err(ClusterError::Io { path, source }),
    };
    let state: State = serde_json::from_slice(&bytes).map_err(|e| ClusterError::State {
        path: path.clone(),
        reason: e.to_string(),
    })?;
    let shape = Shape {
        masters: state.masters,
        replicas: state.replicas,
    };
    let fits = shape.check().is_ok()
        && state.ports.len() == shape.nodes()
        && state
            .ports
            .iter()
            .all(|p| *p != 0 && *p <= u16::MAX - BUS_OFFSET);
    if !fits {
        return Err(ClusterError::State {
            path,
            reason: format!(
                "{} ports for {} masters and {} replicas each",
                state.ports.len(),
                state.masters,
                state.replicas
            ),
        });
    }
    Ok(state)
}

/// A loopback port that is free now, whose bus port is free too, not one of `taken`.
fn free_port(taken: &[u16]) -> Result<u16, ClusterError> {
    let any = SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0);
    for _ in 0..200 {
        let probe = TcpListener::bind(any).map_err(io(Path::new("127.0.0.1")))?;
        let port = probe
            .local_addr()
            .map_err(io(Path::new("127.0.0.1")))?
            .port();
        if port > u16::MAX - BUS_OFFSET || taken.contains(&port) {
            continue;
        }
        let bus = SocketAddrV4::new(Ipv4Addr::LOCALHOST, port + BUS_OFFSET);
        if TcpListener::bind(bus).is_ok() {
            return Ok(port);
        }
    }
    Err(ClusterError::Start {
        port: 0,
        detail: "no pair of free loopback ports (PORT and PORT + 10000) found".into(),
    })
}

/// Starts one daemonized node in `dir/node-PORT/` and waits until it answers.
fn start_node(dir: &Path, port: u16) -> Result<(), ClusterError> {
    let node = dir.join(format!("node-{port}"));
    std::fs::create_dir_all(&node).map_err(io(&node))?;
    let conf = node.join("redis.conf");
    let quoted = |p: &Path| format!("\"{}\"", p.display().to_string().replace('"', "\\\""));
    let text = format!(
        "port {port}\nbind 127.0.0.1\nprotected-mode yes\ncluster-enabled yes\n\
         cluster-config-file nodes.conf\ncluster-node-timeout 5000\nappendonly yes\n\
         appendfsync always\nsave \"\"\ndir {}\ndaemonize yes\npidfile {}\nlogfile {}\n",
        quoted(&node),
        quoted(&node.join("redis.pid")),
        quoted(&node.join("redis.log")),
    );
    std::fs::write(&conf, text).map_err(io(&conf))?;
    // This start's log only, so a failure below is read from it.
    let _ = std::fs::remove_file(node.join("redis.log"));
    let out = Command::new("redis-server")
        .arg(&conf)
        .output()
        .map_err(io(Path::new("redis-server")))?;
    let log = || {
        std::fs::read_to_string(node.join("redis.log"))
            .map(|l| last_lines(&l))
            .unwrap_or_default()
    };
    if !out.status.success() {
        return Err(ClusterError::Start {
            port,
            detail: last_lines(&format!(
                "{}{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
                log()
            )),
        });
    }
    let deadline = Instant::now() + PATIENCE;
    while !answers(port) {
        let refused = log().contains("Could not create server TCP listening socket");
        if Instant::now() >= deadline || refused {
            return Err(ClusterError::Start {
                port,
                detail: log(),
            });
        }
        std::thread::sleep(POLL);
    }
    Ok(())
}

/// The node on `port` answers PING.
fn answers(port: u16) -> bool {
    TcpStream::connect_timeout(
        &SocketAddrV4::new(Ipv4Addr::LOCALHOST, port).into(),
        Duration::from_secs(1),
    )
    .is_ok()
        && cli(port, &["ping"]).is_some_and(|s| s.trim() == "PONG")
}

/// One command through `redis-cli` to the node on `port`: its reply, or None when it failed or
/// did not come within [`PATIENCE`] (a port that takes connections and never answers).
fn cli(port: u16, args: &[&str]) -> Option<String> {
    let mut command = Command::new("redis-cli");
    command
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args);
    let out = output_within(&mut command, PATIENCE).ok()??;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// What `command.output()` gives, or None once it has run for `limit`: then it is killed. Its
/// output is read as it comes, so a long one cannot stall it.
fn output_within(command: &mut Command, limit: Duration) -> std::io::Result<Option<Output>> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let (stdout, stderr) = (drain(child.stdout.take()), drain(child.stderr.take()));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let (stdout, stderr) = (
        stdout.join().unwrap_or_default(),
        stderr.join().unwrap_or_default(),
    );
    Ok(status.map(|status| Output {
        status,
        stdout,
        stderr,
    }))
}

/// Reads `pipe` to its end on a thread of its own.
fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut all = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut all);
        }
        all
    })
}

/// Asks every node to shut down (writing its append-only file) and waits until its port
/// refuses connections.
fn stop_ports(ports: &[u16]) -> Result<(), ClusterError> {
    for &port in ports {
        if cli(port, &["shutdown"]).is_none() {
            let _ = cli(port, &["shutdown", "nosave", "now", "force"]);
        }
    }
    let deadline = Instant::now() + PATIENCE;
    loop {
        let up: Vec<u16> = ports
            .iter()
            .copied()
            .filter(|p| {
                TcpStream::connect_timeout(
                    &SocketAddrV4::new(Ipv4Addr::LOCALHOST, *p).into(),
                    Duration::from_secs(1),
                )
                .is_ok()
            })
            .collect();
        if up.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(ClusterError::Stop { ports: list(&up) });
        }
        std::thread::sleep(POLL);
    }
}

/// The end of a program's output, for an error message.
fn last_lines(text: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(4)..].join(" / ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_that_runs_over_its_limit_is_killed_and_a_long_output_is_read_whole() {
        let started = Instant::now();
        let mut sleeper = Command::new("sleep");
        sleeper.arg("60");
        let out = output_within(&mut sleeper, Duration::from_millis(200)).expect("runs");
        assert!(out.is_none(), "{out:?}");
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "killed, not waited for"
        );
        // Far more than a pipe holds (64 KiB): read as it comes, or the command never ends.
        let mut big = Command::new("head");
        big.args(["-c", "1000000", "/dev/zero"]);
        let out = output_within(&mut big, Duration::from_secs(60))
            .expect("runs")
            .expect("ends");
        assert!(out.status.success());
        assert_eq!(out.stdout.len(), 1_000_000);
    }

    #[test]
    fn a_shape_needs_three_masters_and_stays_small() {
        let check = |masters, replicas| Shape { masters, replicas }.check();
        assert!(matches!(check(2, 0), Err(ClusterError::TooFewMasters(2))));
        assert!(matches!(check(3, 20), Err(ClusterError::TooManyNodes(63))));
        assert!(check(3, 1).is_ok());
    }

    #[test]
    fn a_state_file_that_does_not_fit_its_shape_is_refused() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join(STATE_FILE);
        std::fs::write(&path, br#"{"masters":3,"replicas":0,"ports":[7000,7001]}"#).expect("write");
        let e = read_state(dir.path()).expect_err("two ports for three masters");
        assert!(e.to_string().contains("2 ports for 3 masters"), "{e}");
        std::fs::write(&path, b"not json").expect("write");
        assert!(matches!(
            read_state(dir.path()),
            Err(ClusterError::State { .. })
        ));
        std::fs::remove_file(&path).expect("remove");
        assert!(matches!(
            read_state(dir.path()),
            Err(ClusterError::NotStarted { .. })
        ));
    }

    #[test]
    fn free_ports_leave_room_for_the_bus() {
        let p = free_port(&[]).expect("a free port");
        assert!(p <= u16::MAX - BUS_OFFSET);
        assert_ne!(free_port(&[p]).expect("another"), p);
    }
}
