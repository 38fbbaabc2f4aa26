//! Load benchmark of `crawltop serve` (not a test): 64 keep-alive connections asking for a typical
//! page for a few seconds. Prints requests per second and the server's CPU time per request,
//! read from /proc for the server process alone. Run: `cargo bench --bench serve_load`.

use std::io::BufRead as _;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

const CONNECTIONS: usize = 64;
const RUN: Duration = Duration::from_secs(5);

/// utime + stime of a process, in seconds.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("proc stat");
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')').expect("stat format") + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 =
        fields[11].parse::<f64>().expect("utime") + fields[12].parse::<f64>().expect("stime");
    ticks / 100.0 // USER_HZ is 100 on Linux
}

async fn client(
    addr: String,
    path: String,
    stop: Arc<AtomicBool>,
    count: Arc<AtomicU64>,
    bytes: Arc<AtomicU64>,
) {
    let stream = TcpStream::connect(&addr).await.expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: serve-load\r\n\r\n");
    let mut line = String::new();
    let mut body = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        write.write_all(request.as_bytes()).await.expect("write");
        let mut length = 0usize;
        loop {
            line.clear();
            reader.read_line(&mut line).await.expect("read");
            if line == "\r\n" {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().expect("length");
            }
        }
        body.resize(length, 0);
        reader.read_exact(&mut body).await.expect("body");
        count.fetch_add(1, Ordering::Relaxed);
        bytes.fetch_add(length as u64, Ordering::Relaxed);
    }
}

fn main() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let web = tmp.path().join("web");
    let manifest =
        crawltop::testweb::generate(&web, &crawltop::testweb::GenOptions::new(4, 200), false)
            .expect("generate");
    // A typical page: the median-sized HTML file of site00.
    let site = &manifest.sites[0];
    let mut pages: Vec<(u64, String)> = site
        .pages
        .iter()
        .filter(|p| p.content == crawltop::testweb::manifest::ContentKind::Html && p.path.len() > 1)
        .map(|p| {
            let len =
                std::fs::metadata(web.join("site00").join(&p.path[1..])).map_or(0, |m| m.len());
            (len, p.path.clone())
        })
        .collect();
    pages.sort();
    let (page_len, path) = pages[pages.len() / 2].clone();

    let mut server = Command::new(env!("CARGO_BIN_EXE_crawltop"))
        .arg("serve")
        .arg(&web)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("serve starts");
    let mut first = String::new();
    std::io::BufReader::new(server.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("line");
    let listening: crawltop::testweb::Listening = serde_json::from_str(&first).expect("json");
    let addr = listening.sites["site00"]
        .trim_start_matches("http://")
        .to_string();

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let bytes = Arc::new(AtomicU64::new(0));
    let cpu_before = cpu_seconds(server.id());
    let started = Instant::now();
    rt.block_on(async {
        let tasks: Vec<_> = (0..CONNECTIONS)
            .map(|_| {
                tokio::spawn(client(
                    addr.clone(),
                    path.clone(),
                    stop.clone(),
                    count.clone(),
                    bytes.clone(),
                ))
            })
            .collect();
        tokio::time::sleep(RUN).await;
        stop.store(true, Ordering::Relaxed);
        for t in tasks {
            t.await.expect("client");
        }
    });
    let elapsed = started.elapsed().as_secs_f64();
    let cpu = cpu_seconds(server.id()) - cpu_before;
    let n = count.load(Ordering::Relaxed) as f64;
    let _ = server.kill();
    let _ = server.wait();
    println!(
        "serve_load: page {path} ({page_len} bytes), {CONNECTIONS} keep-alive connections, {elapsed:.1} s"
    );
    println!("  requests/s:          {:.0}", n / elapsed);
    println!(
        "  MB/s:                {:.1}",
        bytes.load(Ordering::Relaxed) as f64 / elapsed / 1e6
    );
    println!(
        "  server CPU/request:  {:.1} us ({:.2} CPU-s over the run)",
        cpu / n * 1e6,
        cpu
    );
}
