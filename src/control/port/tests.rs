//! The command port against a live crawl of the test web: every command, and every kind of
//! bad input a client can send, judged by the answers, the crawl's state and its command log.

use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::TcpStream;

use super::*;
use crate::control::tests::{PATIENCE, PROMPTLY, commands_from, crawl, loopback, wait_snapshot};
use crate::engine::CrawlHandle;
use crate::snapshot::RunState;
use crate::testweb::{GenOptions, TestWeb};

/// A web big enough to be still crawling when a test acts on it.
fn busy_web() -> GenOptions {
    GenOptions::new(2, 200).seed(8).crawl_delay_s(0.02)
}

struct Live {
    _web: TestWeb,
    handle: CrawlHandle,
    port: ControlServer,
}

impl Live {
    async fn start(token: Option<&str>) -> Live {
        Live::with_delay(token, 20).await
    }

    async fn with_delay(token: Option<&str>, delay_ms: u64) -> Live {
        let (web, handle) = crawl(busy_web(), delay_ms, None).await;
        let opts = ControlOptions {
            addr: loopback(),
            token: token.map(str::to_string),
        };
        let port = serve_port(opts, None, handle.snapshots(), handle.commander())
            .await
            .expect("the command port starts");
        Live {
            _web: web,
            handle,
            port,
        }
    }

    async fn client(&self) -> Client {
        Client::connect(self.port.local_addr()).await
    }
}

/// A client of the line protocol.
struct Client {
    stream: BufReader<TcpStream>,
}

impl Client {
    async fn connect(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect(addr).await.expect("connect");
        Client {
            stream: BufReader::new(stream),
        }
    }

    async fn send(&mut self, bytes: &[u8]) {
        self.stream.get_mut().write_all(bytes).await.expect("write");
    }

    /// The next line without its `\n`, or None when the server closed.
    async fn line(&mut self) -> Option<String> {
        let mut line = String::new();
        let n = tokio::time::timeout(PATIENCE, self.stream.read_line(&mut line))
            .await
            .expect("an answer in time")
            .expect("read");
        (n > 0).then(|| line.trim_end_matches('\n').to_string())
    }

    async fn ask(&mut self, line: &str) -> String {
        self.send(format!("{line}\n").as_bytes()).await;
        self.line().await.expect("an answer line")
    }

    /// Reads until the server closes; true if it did within `bound`.
    async fn closed_within(&mut self, bound: Duration) -> bool {
        let mut rest = Vec::new();
        tokio::time::timeout(bound, self.stream.read_to_end(&mut rest))
            .await
            .is_ok()
    }
}

#[test]
fn lines_split_into_a_command_word_and_its_arguments() {
    assert_eq!(split_command("  delay   300 \t"), ("delay", "300"));
    assert_eq!(split_command("STATS"), ("STATS", ""));
    assert_eq!(split_command(""), ("", ""));
    assert_eq!(
        split_command("search \"white rabbit\" tea"),
        ("search", "\"white rabbit\" tea")
    );
    assert!(authenticate("AUTH s3cret", "s3cret"));
    assert!(authenticate("auth   s3cret ", "s3cret"));
    for wrong in [
        "AUTH s3cre",
        "AUTH",
        "s3cret",
        "AUTHs3cret",
        "AUTH s3cret x",
        "STATS",
    ] {
        assert!(!authenticate(wrong, "s3cret"), "{wrong:?}");
    }
    assert_eq!(
        query_argument(IndexQuery::Search, "a b", &["a", "b"]),
        Ok("a b".to_string())
    );
    assert!(query_argument(IndexQuery::MaxCount, "", &[]).is_err());
    assert!(query_argument(IndexQuery::MinCount, "a b", &["a", "b"]).is_err());
    assert!(query_argument(IndexQuery::WordCount, "x", &["x"]).is_err());
    assert_eq!(
        block(serde_json::json!([1, {"a": "x\ny"}])),
        ["1", r#"{"a":"x\ny"}"#]
    );
    assert_eq!(block(serde_json::Value::Null), ["null"]);
}

#[tokio::test]
async fn commands_act_on_the_crawl_and_are_logged_as_the_port() {
    let live = Live::start(None).await;
    let mut c = live.client().await;
    let stats: Snapshot = serde_json::from_str(&c.ask("STATS").await).expect("one JSON line");
    assert!(stats.workers.total > 0);
    // Without a token, a script that always authenticates is welcome.
    assert_eq!(c.ask("AUTH anything").await, "OK auth");
    assert_eq!(c.ask("pause").await, "OK pause");
    wait_snapshot(&live.handle, |s| s.state == RunState::Paused).await;
    assert_eq!(c.ask("Resume").await, "OK resume");
    assert_eq!(c.ask("DELAY 150").await, "OK delay 150 ms");
    assert_eq!(c.ask("WORKERS 3").await, "OK workers 3");
    let snap = wait_snapshot(&live.handle, |s| {
        s.state == RunState::Running && s.politeness.delay_ms == 150 && s.workers.total == 3
    })
    .await;
    assert_eq!(
        commands_from(&snap, CommandSource::Port),
        ["pause", "resume", "delay 150 ms", "workers 3"]
    );
    assert!(commands_from(&snap, CommandSource::Api).is_empty());
    // Queries need an index, which this crawl (no --out) does not keep.
    for query in [
        "SEARCH rabbit",
        "MAXCOUNT rabbit",
        "MINCOUNT rabbit",
        "WORDCOUNT",
    ] {
        let answer = c.ask(query).await;
        assert!(
            answer.starts_with("ERR ") && answer.contains("--out"),
            "{query}: {answer}"
        );
    }
    // One line each, STATS as SITES, no empty line after either (audit 33 F9: SITES was
    // followed by one, which the next command's reader took for its answer).
    c.send(b"STATS\nSITES limit=1 sort=origin\nSTATS\n").await;
    for word in ["STATS", "SITES", "STATS"] {
        let line = c.line().await.expect("an answer");
        let value: serde_json::Value = serde_json::from_str(&line).expect("one JSON line");
        assert_eq!(
            value.get("rows").is_some(),
            word == "SITES",
            "{word}: {line}"
        );
    }
    // Nothing to export without --stats-out, --sites-out or --urls-out: said, not an OK that
    // wrote nothing (audit 33 F7); the command never reaches the crawl.
    let export = c.ask("EXPORT").await;
    assert!(
        export.starts_with("ERR nothing to export") && export.contains("--stats-out"),
        "{export}"
    );
    assert_eq!(c.ask("SHUTDOWN").await, "OK stop");
    let summary = tokio::time::timeout(PATIENCE, live.handle.finished())
        .await
        .expect("the crawl stops")
        .expect("no engine error");
    assert_eq!(
        commands_from(&summary.snapshot, CommandSource::Port),
        ["pause", "resume", "delay 150 ms", "workers 3", "stop"]
    );
    // The port still answers, and says the crawl is over.
    assert_eq!(c.ask("PAUSE").await, "ERR the crawl is over");
    assert_eq!(c.ask("QUIT").await, "OK bye");
    assert!(c.closed_within(PATIENCE).await);
}

#[tokio::test]
async fn bad_lines_get_a_clear_err_and_the_connection_stays_usable() {
    let live = Live::start(None).await;
    let mut c = live.client().await;
    for (line, says) in [
        ("FROBNICATE", "unknown command"),
        ("", "no command"),
        ("   ", "no command"),
        ("DELAY", "missing argument: use DELAY MS"),
        ("DELAY 1 2", "too many arguments: use DELAY MS"),
        (
            "DELAY abc",
            "parameter ms must be a whole number of milliseconds",
        ),
        ("DELAY -5", "parameter ms"),
        ("DELAY 3600001", "0..=3600000"),
        ("WORKERS", "missing argument: use WORKERS N"),
        (
            "WORKERS 0",
            "parameter n must be a whole number of workers in 1..=4096",
        ),
        ("WORKERS 4097", "parameter n"),
        ("WORKERS two", "parameter n"),
        ("PAUSE now", "PAUSE takes no argument"),
        ("STATS all", "STATS takes no argument"),
        ("SEARCH", "missing words"),
        ("MAXCOUNT", "missing argument: use MAXCOUNT WORD"),
        ("MINCOUNT a b", "too many arguments: use MINCOUNT WORD"),
        ("WORDCOUNT x", "WORDCOUNT takes no argument"),
    ] {
        let answer = c.ask(line).await;
        assert!(answer.starts_with("ERR "), "{line:?}: {answer}");
        assert!(answer.contains(says), "{line:?}: {answer}");
    }
    c.send(b"PAU\xffSE\r\n").await;
    assert_eq!(
        c.line().await.as_deref(),
        Some("ERR the line is not UTF-8 text")
    );
    // Still usable, and none of the above reached the engine.
    assert_eq!(c.ask("delay 7").await, "OK delay 7 ms");
    let snap = wait_snapshot(&live.handle, |s| s.politeness.delay_ms == 7).await;
    assert_eq!(commands_from(&snap, CommandSource::Port), ["delay 7 ms"]);
    live.handle.abort();
}

#[tokio::test]
async fn a_line_of_a_megabyte_is_refused_and_the_connection_closed() {
    let live = Live::start(None).await;
    let mut c = live.client().await;
    let mut huge = vec![b'A'; 1 << 20];
    huge.push(b'\n');
    // Written while the answer is read: the server stops reading after 8 KiB.
    let (mut read, mut write) = c.stream.into_inner().into_split();
    let writer = tokio::spawn(async move {
        let _ = write.write_all(&huge).await;
        write
    });
    let mut answer = Vec::new();
    tokio::time::timeout(PATIENCE, read.read_to_end(&mut answer))
        .await
        .expect("the server closes")
        .expect("read");
    let _ = writer.await;
    assert_eq!(
        String::from_utf8_lossy(&answer),
        format!("ERR the line is longer than {MAX_LINE} bytes; closing\n")
    );
    // Other clients are served as before.
    c = live.client().await;
    assert_eq!(c.ask("RESUME").await, "OK resume");
    live.handle.abort();
}

#[tokio::test]
async fn silent_and_many_clients_hold_up_neither_the_crawl_nor_each_other() {
    // Slow enough to be still crawling after the silent clients' timeout.
    let live = Live::with_delay(None, 200).await;
    let addr = live.port.local_addr();
    // Clients that connect and say nothing, more than the port serves at once.
    let mut silent = Vec::new();
    for _ in 0..(MAX_CLIENTS + 16) {
        silent.push(TcpStream::connect(addr).await.expect("connect"));
    }
    // The crawl goes on meanwhile.
    let before = live.handle.snapshots().borrow().resources.fetched;
    wait_snapshot(&live.handle, |s| s.resources.fetched >= before + 5).await;
    // A newcomer is served at once: the longest silent makes room, and is told why.
    let mut c = live.client().await;
    let paused = tokio::time::timeout(PROMPTLY, c.ask("PAUSE")).await;
    assert_eq!(paused.expect("a newcomer is served at once"), "OK pause");
    let mut first = BufReader::new(silent.remove(0));
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(PATIENCE, first.read_to_end(&mut rest)).await;
    assert!(
        closed.is_ok(),
        "the longest silent client is still connected"
    );
    assert_eq!(
        String::from_utf8_lossy(&rest),
        "ERR the port is full; closing this idle session\n"
    );
    // The silent ones that no newcomer needed are let go after the idle timeout.
    let mut last = BufReader::new(silent.pop().expect("a silent client"));
    rest.clear();
    let closed = tokio::time::timeout(IDLE_TIMEOUT + PATIENCE, last.read_to_end(&mut rest)).await;
    assert!(closed.is_ok(), "a silent client is still connected");
    assert_eq!(
        String::from_utf8_lossy(&rest),
        "ERR idle for 10 s (no command line); closing\n",
        "a silent client is told why it is let go"
    );
    // Many clients at once, each with its own answer.
    let mut clients = Vec::new();
    for i in 0..40 {
        clients.push(tokio::spawn(async move {
            let mut c = Client::connect(addr).await;
            let answer = c.ask(&format!("DELAY {}", 100 + i)).await;
            (i, answer)
        }));
    }
    for task in clients {
        let (i, answer) = task.await.expect("client task");
        assert_eq!(answer, format!("OK delay {} ms", 100 + i));
    }
    drop(silent);
    live.handle.abort();
}

/// `MAX_CLIENTS - 1` clients that each had one answer, one after the other, so that they fell
/// idle in that order: the first is the longest idle.
async fn idle_clients(live: &Live) -> Vec<Client> {
    let mut idle = Vec::new();
    for _ in 1..MAX_CLIENTS {
        let mut c = live.client().await;
        assert!(c.ask("STATS").await.starts_with('{'));
        idle.push(c);
    }
    idle
}

#[tokio::test]
async fn a_full_port_lets_a_newcomer_in_by_closing_the_longest_idle_client() {
    let live = Live::start(None).await;
    // In first, so the longest idle were it idle: a client in the middle of a line. The start
    // of the line comes with a whole one, so the server holds it once the answer is out.
    let mut partial = live.client().await;
    partial.send(b"STATS\nDELAY 3").await;
    assert!(partial.line().await.expect("an answer").starts_with('{'));
    let mut idle = idle_clients(&live).await;

    let mut newcomer = live.client().await;
    let stats = tokio::time::timeout(PROMPTLY, newcomer.ask("STATS"))
        .await
        .expect("a newcomer to a full port is answered at once");
    assert!(stats.starts_with('{'), "{stats}");
    // The longest idle is told why, and let go.
    let mut first = idle.remove(0);
    assert_eq!(
        first.line().await.as_deref(),
        Some("ERR the port is full; closing this idle session")
    );
    assert!(first.closed_within(PATIENCE).await);
    // The one mid-line was not: it finishes its command.
    partial.send(b"0\n").await;
    assert_eq!(partial.line().await.as_deref(), Some("OK delay 30 ms"));
    // Nor any other.
    for c in &mut idle {
        assert!(c.ask("STATS").await.starts_with('{'));
    }
    assert!(newcomer.ask("STATS").await.starts_with('{'));
    live.handle.abort();
}

#[tokio::test]
async fn a_newcomer_waits_while_every_client_is_mid_command_then_takes_the_first_idle_place() {
    let live = Live::start(None).await;
    let mut busy = Vec::new();
    for _ in 0..MAX_CLIENTS {
        let mut c = live.client().await;
        c.send(b"STATS\nSTA").await;
        assert!(c.line().await.expect("an answer").starts_with('{'));
        busy.push(c);
    }
    let mut newcomer = live.client().await;
    newcomer.send(b"STATS\n").await;
    // An observation window: nobody is idle, so nobody is closed to make room.
    let early = tokio::time::timeout(Duration::from_millis(500), newcomer.line()).await;
    assert!(
        early.is_err(),
        "answered while every place was busy: {early:?}"
    );
    // The first to finish its command falls idle, and makes room.
    let first = &mut busy[0];
    first.send(b"TS\n").await;
    assert!(first.line().await.expect("an answer").starts_with('{'));
    assert_eq!(
        first.line().await.as_deref(),
        Some("ERR the port is full; closing this idle session")
    );
    assert!(first.closed_within(PATIENCE).await);
    let stats = tokio::time::timeout(PROMPTLY, newcomer.line())
        .await
        .expect("the newcomer is served once a place falls idle");
    assert!(stats.expect("an answer").starts_with('{'));
    // The others were left alone.
    for c in &mut busy[1..] {
        c.send(b"TS\n").await;
        assert!(c.line().await.expect("an answer").starts_with('{'));
    }
    live.handle.abort();
}

#[tokio::test]
async fn a_token_must_come_first_as_auth() {
    let live = Live::start(Some("s3cret")).await;
    let mut c = live.client().await;
    assert_eq!(
        c.ask("PAUSE").await,
        "ERR missing or wrong token: the first line must be AUTH TOKEN"
    );
    assert!(c.closed_within(PATIENCE).await);
    let mut c = live.client().await;
    assert!(
        c.ask("AUTH wrong")
            .await
            .starts_with("ERR missing or wrong token")
    );
    assert!(c.closed_within(PATIENCE).await);
    let mut c = live.client().await;
    assert_eq!(c.ask("auth s3cret").await, "OK auth");
    assert_eq!(c.ask("PAUSE").await, "OK pause");
    // A wrong token later is refused, and the connection stays as it was.
    assert_eq!(c.ask("AUTH s3crex").await, "ERR wrong token");
    let snap = wait_snapshot(&live.handle, |s| s.state == RunState::Paused).await;
    // Only the authenticated PAUSE reached the engine.
    assert_eq!(commands_from(&snap, CommandSource::Port), ["pause"]);
    // Off loopback the port needs a token before it binds anything (TEST-NET-1, on no
    // interface here: a bind would fail with another error, and send nothing).
    let got = serve_port(
        ControlOptions {
            addr: "192.0.2.1:7071".parse().expect("addr"),
            token: None,
        },
        None,
        live.handle.snapshots(),
        live.handle.commander(),
    )
    .await;
    assert!(matches!(got, Err(ControlError::PortNeedsToken(_))));
    live.handle.abort();
}

/// A burst of clients beyond the limit, each sending `STATS` as soon as it is connected: none
/// pushes another out (a newcomer's grace keeps the place of one that has not spoken yet), all
/// are answered.
#[tokio::test]
async fn a_burst_of_clients_beyond_the_limit_is_answered_whole() {
    let live = Live::start(None).await;
    let addr = live.port.local_addr();
    let clients = (0..MAX_CLIENTS + 36).map(|_| {
        tokio::spawn(async move {
            let mut c = Client::connect(addr).await;
            c.ask("STATS").await
        })
    });
    let answers = futures::future::join_all(clients).await;
    let refused: Vec<String> = answers
        .into_iter()
        .map(|a| a.expect("the client ran"))
        .filter(|a| !a.starts_with('{'))
        .collect();
    assert!(
        refused.is_empty(),
        "{} refused: {:?}",
        refused.len(),
        refused.first()
    );
    live.handle.abort();
}
