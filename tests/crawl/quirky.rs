//! Small servers written here for what the test web serves none of on purpose: a site that
//! answers each path as a test says (odd statuses, headers, codings, bodies cut or stalled), and
//! logs every request it got, in order, for tests to judge from the outside.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use crawltop::store::committer::StoreKind;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

use crate::engine::{config, crawl};

/// One answer: its status line's version and code, its headers (Content-Length is added) and
/// its body.
#[derive(Debug, Clone)]
pub(crate) struct Answer {
    /// How long the server waits before it answers.
    pub(crate) after: std::time::Duration,
    pub(crate) version: &'static str,
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
    /// The Content-Length said, when it is not the body's (a body cut short by the server).
    pub(crate) claimed_length: Option<usize>,
    /// The answer to every later request of the path, when it differs from the first.
    pub(crate) then: Option<Box<Answer>>,
    /// Sends only this many bytes of the body, then nothing more, holding the connection open
    /// until the client leaves (a body that stalls).
    pub(crate) stall_after: Option<usize>,
}

impl Answer {
    pub(crate) fn new(headers: &[(&str, &str)], body: impl Into<Vec<u8>>) -> Answer {
        Answer {
            after: std::time::Duration::ZERO,
            version: "HTTP/1.1",
            status: 200,
            headers: headers
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            body: body.into(),
            claimed_length: None,
            then: None,
            stall_after: None,
        }
    }

    pub(crate) fn html(body: impl Into<Vec<u8>>) -> Answer {
        Answer::new(&[("Content-Type", "text/html")], body)
    }

    /// A 301 to `to`.
    pub(crate) fn moved(to: &str) -> Answer {
        Answer {
            status: 301,
            ..Answer::new(&[("Location", to)], "")
        }
    }
}

/// Every request a quirky site got: its path, and when it came, in order; and a bell rung at
/// each, for a test that waits on them.
#[derive(Clone, Default)]
pub(crate) struct Log(
    pub(crate) Arc<Mutex<Vec<(String, std::time::Instant)>>>,
    pub(crate) Arc<tokio::sync::Notify>,
);

impl Log {
    /// Waits (at most `PATIENCE`) until the paths asked so far satisfy `done`.
    pub(crate) async fn wait_until(&self, done: impl Fn(&[String]) -> bool) {
        let waited = tokio::time::timeout(crate::util::PATIENCE, async {
            loop {
                let rung = self.1.notified();
                if done(&self.paths()) {
                    return;
                }
                rung.await;
            }
        });
        waited
            .await
            .expect("the site was asked what the test waits for");
    }

    pub(crate) fn timed(&self) -> Vec<(String, std::time::Instant)> {
        self.0.lock().expect("no test thread panicked").clone()
    }

    pub(crate) fn paths(&self) -> Vec<String> {
        self.timed().into_iter().map(|(p, _)| p).collect()
    }
}

/// A site on 127.0.0.1 (port chosen by the OS) that answers each request path from `answers`
/// as it is spelled on the request line, 404 for any other (robots.txt too: everything is
/// allowed). One request per connection. Returns the origin and every path asked, in order.
pub(crate) async fn quirky_site(answers: BTreeMap<String, Answer>) -> (String, Log) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let origin = format!("http://{}", listener.local_addr().expect("bound"));
    let asked = Log::default();
    let log = asked.clone();
    let answers = Arc::new(answers);
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let (log, answers) = (log.clone(), answers.clone());
            tokio::spawn(async move {
                let Some(path) = crate::util::request_path(&mut stream).await else {
                    return;
                };
                let answer = answers.get(&path).cloned().unwrap_or(Answer {
                    status: 404,
                    ..Answer::new(&[("Content-Type", "text/plain")], "not here")
                });
                let again = {
                    let mut asked = log.0.lock().expect("no test thread panicked");
                    let again = asked.iter().any(|(p, _)| *p == path);
                    asked.push((path, std::time::Instant::now()));
                    again
                };
                log.1.notify_waiters();
                let answer = match answer.then {
                    Some(later) if again => *later,
                    _ => answer,
                };
                let mut reply = format!(
                    "{} {} X\r\nConnection: close\r\n",
                    answer.version, answer.status
                );
                for (k, v) in &answer.headers {
                    let _ = write!(reply, "{k}: {v}\r\n");
                }
                let length = answer.claimed_length.unwrap_or(answer.body.len());
                let _ = write!(reply, "Content-Length: {length}\r\n\r\n");
                let mut reply = reply.into_bytes();
                let sent = answer.stall_after.map_or(usize::MAX, |n| reply.len() + n);
                reply.extend_from_slice(&answer.body);
                tokio::time::sleep(answer.after).await;
                let _ = stream.write_all(&reply[..sent.min(reply.len())]).await;
                if answer.stall_after.is_some() {
                    let mut buf = [0u8; 512];
                    while matches!(stream.read(&mut buf).await, Ok(n) if n > 0) {}
                }
                let _ = stream.shutdown().await;
            });
        }
    });
    (origin, asked)
}

/// `crawltop index --replace DIR`: the crawl folder's index built again from its WARC files.
pub(crate) fn index_again(dir: &std::path::Path) {
    let index = std::process::Command::new(crate::util::bin())
        .args(["index", "--replace"])
        .arg(dir)
        .output()
        .expect("index runs");
    assert!(
        index.status.success(),
        "{}",
        String::from_utf8_lossy(&index.stderr)
    );
}

/// A page linking every path of `links`.
pub(crate) fn linking(links: &[&str]) -> Answer {
    let mut anchors = String::new();
    for l in links {
        let _ = writeln!(anchors, "<a href=\"{l}\">{l}</a>");
    }
    Answer::html(format!("<html><body>{anchors}</body></html>"))
}

pub(crate) fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).expect("in memory");
    e.finish().expect("in memory")
}

/// A crawl of `origin` storing WARC files and the index in a new folder.
pub(crate) async fn crawl_into_warc(origin: &str) -> (crate::engine::Crawled, tempfile::TempDir) {
    let out = tempfile::tempdir().expect("tempdir");
    let mut cfg = config(vec![format!("{origin}/")]);
    cfg.delay_ms = 0;
    cfg.out = Some(out.path().to_path_buf());
    cfg.store = StoreKind::Warc;
    (crawl(cfg).await, out)
}

/// A site of `pages` pages (`/p0.html`, ...) linked from its index, whose robots.txt allows
/// all, with `extra` answers besides.
pub(crate) fn site_of_pages(pages: usize, extra: &[(&str, Answer)]) -> BTreeMap<String, Answer> {
    site_of_slow_pages(pages, std::time::Duration::ZERO, extra)
}

/// [`site_of_pages`] whose pages each take `after` to answer.
pub(crate) fn site_of_slow_pages(
    pages: usize,
    after: std::time::Duration,
    extra: &[(&str, Answer)],
) -> BTreeMap<String, Answer> {
    let paths: Vec<String> = (0..pages).map(|i| format!("/p{i}.html")).collect();
    let mut answers = BTreeMap::new();
    let links: Vec<&str> = paths.iter().map(String::as_str).collect();
    answers.insert("/".to_owned(), linking(&links));
    for p in &paths {
        let page = Answer::html("<p>a page</p>");
        answers.insert(p.clone(), Answer { after, ..page });
    }
    answers.insert(
        "/robots.txt".to_owned(),
        Answer::new(&[], "User-agent: *\nDisallow:\n"),
    );
    for (path, answer) in extra {
        answers.insert((*path).to_owned(), answer.clone());
    }
    answers
}

/// `crawltop crawl ORIGIN/ --headless` with `args`, its stderr kept: for what a crawl says.
pub(crate) async fn crawl_by_cli(origin: &str, args: &[&str]) -> std::process::Output {
    let output = tokio::process::Command::new(crate::util::bin())
        .args(["crawl", &format!("{origin}/"), "--headless"])
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .output();
    tokio::time::timeout(crate::util::PATIENCE, output)
        .await
        .expect("the crawl ends")
        .expect("it runs")
}
