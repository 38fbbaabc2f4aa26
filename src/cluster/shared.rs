//! The Redis side of a crawl shared by many members: who created it and with which settings,
//! each site's queue, seen set, politeness state and lease, and the members' heartbeats.
//!
//! Layout (crawl `C`, site origin `S`; every key of one site under the hash tag `{C|S}`, so a
//! script touches one slot):
//!
//! | key | what |
//! | --- | --- |
//! | `ct:{C}:meta` | hash: `format` (this module's [`FORMAT`]), `settings` (JSON, named values), `started` once a URL was queued |
//! | `ct:{C}:sites` | set of every site's origin (every site the crawl ever queued for: the sweeps read it) |
//! | `ct:{C}:active` | set of the sites with work (queued or in-flight URLs): the crawl-wide list a look samples |
//! | `ct:{C}:members` | hash: member id to `ms TAB heartbeat JSON` (ms by Redis's clock) |
//! | `ct:{C}:counters` | hash: crawl-wide counters |
//! | `ct:{C}:commands` | list: commands to the whole crawl, `ms TAB who TAB command` |
//! | `ct:{C\|S}:seen` | hash: URL fingerprint (16 hex digits) to the least depth it was queued at (`3`), or `t` and the depth it was pulled at (`t3`): admission, exactly once crawl-wide |
//! | `ct:{C\|S}:q` | sorted set of the depths with queued entries (member and score the depth) |
//! | `ct:{C\|S}:q:D` | list of the entries queued at depth `D` (`fingerprint TAB depth TAB hops TAB url TAB referrer`), first come first |
//! | `ct:{C\|S}:flight` | set of entries the lease holder pulled and has not finished |
//! | `ct:{C\|S}:lower` | list of entries: shorter paths to URLs pulled and not finished, for the holder's next pull |
//! | `ct:{C\|S}:lease` | the holder's member id, `SET NX PX`: expiry is Redis's clock, never a member's |
//! | `ct:{C\|S}:pol` | hash: `state` (the site's politeness: robots.txt, delays; opaque here), `next_ms` (its next contact, Redis's clock), `admitted` (with `--max-pages-per-site`: its URLs pulled to be fetched), `holder` (the member that took its lease and has not handed it back) |
//!
//! With `--max-pages`, `ct:{C}:meta` also counts `admitted`: the URLs pulled to be fetched
//! crawl-wide. A member reserves places there before a round of pulls ([`SharedCrawl::pull_many`])
//! and gives back the places a pull did not use; a site's URLs that go back to its queue unfetched
//! (a lease taken over, a site released) give back theirs, to the site's count in the same script
//! and to the crawl's after it. A pulled URL past a limit is not in flight: the member ends it as
//! ignored, as one process does at the limit.
//!
//! A new lease first puts back what an earlier holder had pulled and not finished (it died, or
//! its lease ran out): at least once, and at most once more for what was in flight.
//!
//! A site's next contact (`next_ms`) is stored as its holder's fetches end, at a Retry-After or
//! backoff, and at a hand-back; a holder that dies (or whose lease runs out while Redis is
//! away) may have contacted the site after the last one stored. So a lease taken records its
//! holder in `pol`, a hand-back ([`SharedCrawl::release`]) clears it, and a lease taken while
//! another member's mark is still there says so ([`Previous::Lapsed`]): the taker then waits a
//! whole delay from the take, not only until the stored next contact.
//!
//! Depth (`--depth`): a pull takes a site's URLs least depth first, as one process's frontier
//! does (first come, first served within a depth), so a shallower page, whose links may be
//! shorter paths, is fetched before a deeper one queued earlier. A URL queued and then found by
//! a shorter path is queued again at the shorter depth, and the seen hash keeps the least; a
//! pull drops an entry deeper than that (the shorter one was taken before it) and marks the one
//! it takes as pulled at its depth, so no later path queues the URL again. A shorter path to a URL pulled and not fetched yet goes
//! to the site's `lower` list (and the hash): the holder's next pull takes the list along and
//! lowers its queued row, and an entry that goes back to the queue unfetched goes back at the
//! least depth. So a URL is fetched once, at the least depth known when it is fetched, as one
//! process fetches it (unless the shorter path comes after the holder's last pull).
//!
//! Finding work costs a bounded number of requests whatever the number of sites: a look reads
//! the count of `active` and a random sample of it ([`SharedCrawl::look`]). A site's scripts
//! run on its slot and `active` is on the crawl's, so the set is kept in a second call, ordered
//! so that no race forgets a site: a push that finds the site empty adds it to `active` after
//! the push (and before any end of the round); a site leaves it only through
//! [`SharedCrawl::retire`], which removes it and then looks at its queue again, adding it back if
//! anything came. A site held by a member that died stays in `active` (it has work), so its
//! expired lease is found by a look like any other. A member that dies between the two calls
//! can leave a site with work out of the set: [`SharedCrawl::sweep`] checks a few sites of
//! `sites` a second and puts such a site back, and [`SharedCrawl::finished`] checks every site
//! before it says the crawl ended.
//!
//! The depth lists' keys are the only ones a script names without being given them: each is
//! `q`'s key (given) and a suffix, under the same hash tag, so on the same slot and node.
//!
//! A round's script calls (one a site) travel as one pipeline a master: the member reads where
//! the slots are (`CLUSTER SLOTS`, again after any failed pipeline) and groups the calls by the
//! node that serves them, so a round costs a request a master, not a request a site. A call a
//! node refuses inside a pipeline (a script it does not know, a slot that moved) goes again on
//! its own through the cluster client, which loads scripts and follows redirects. It owns the
//! scripts and their atomicity; it never decides what is in scope, never fetches, and never
//! reads a member's clock for anything another member relies on.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use redis::aio::ConnectionLike;
use redis::{Cmd, Pipeline, RedisFuture, Script, Value};

/// The layout's version, stored with the crawl: a crawl of another version is refused. 2: the
/// pulls keep the crawl's page limits (`admitted` in `meta` and in each site's `pol`), so a
/// member of version 1 would not count its pulls. 3: `seen` keeps each URL's least depth and
/// entries start with their fingerprint, so that a shorter path queues a URL again. 4: a
/// site's queue is a list per depth, pulled least depth first. 5: a lease taken marks its
/// holder in the site's `pol` and a hand-back clears it, so that a member taking a lease its
/// holder did not hand back waits a whole delay: a member of version 4 neither marks nor
/// clears, so a site it held and died with would be contacted at once by the next holder.
pub const FORMAT: u32 = 5;
/// Most bytes in a crawl id.
const MAX_CRAWL_ID: usize = 64;

/// Why the shared crawl could not be reached or used.
#[derive(Debug, thiserror::Error)]
pub enum SharedError {
    #[error(
        "crawl id {0:?}: use 1 to 64 letters, digits, '.', '_' or '-' (no spaces, slashes or braces)"
    )]
    CrawlId(String),
    #[error("no Redis URL given (--cluster redis://HOST:PORT[,redis://HOST:PORT...])")]
    NoNodes,
    #[error("{url}: not a Redis URL ({reason})")]
    BadUrl { url: String, reason: String },
    #[error("the Redis at {nodes} cannot be reached: {reason}")]
    Unreachable { nodes: String, reason: String },
    #[error(
        "crawl {crawl:?} was written by a crawltop with cluster format {found}; this one uses \
         {FORMAT}. Use another --crawl-id, or the crawltop that started it"
    )]
    Format { crawl: String, found: String },
    #[error(
        "crawl {crawl:?} runs with other settings: {}; start this member with the crawl's \
         values, or use another --crawl-id",
        .differences.join(", ")
    )]
    Settings {
        crawl: String,
        differences: Vec<String>,
    },
    #[error("crawl {crawl:?}: its stored {what} does not read: {reason}")]
    Corrupt {
        crawl: String,
        what: &'static str,
        reason: String,
    },
    #[error("Redis: {0}")]
    Redis(#[from] redis::RedisError),
    #[error("cannot start the thread that talks to Redis: {0}")]
    Runtime(std::io::Error),
    #[error("no replica confirmed the last writes within {} ms", REPLICA_PATIENCE.as_millis())]
    NotReplicated,
}

impl SharedError {
    /// Whether the connection itself failed (closed, reset, refused, or silent past the
    /// patience), rather than Redis answering with an error: a new connection is worth making
    /// before the next try.
    pub fn connection_failed(&self) -> bool {
        match self {
            SharedError::Unreachable { .. } => true,
            SharedError::Redis(e) => {
                e.is_io_error()
                    || e.is_timeout()
                    || e.is_connection_dropped()
                    || e.is_connection_refusal()
                    || e.is_unrecoverable_error()
            }
            _ => false,
        }
    }
}

/// A crawl's name, safe inside a key and a hash tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrawlId(String);

impl CrawlId {
    pub fn new(id: &str) -> Result<CrawlId, SharedError> {
        let ok = !id.is_empty()
            && id.len() <= MAX_CRAWL_ID
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if ok {
            Ok(CrawlId(id.to_string()))
        } else {
            Err(SharedError::CrawlId(id.to_string()))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// One queued URL as the shared queue keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub url: String,
    pub depth: u32,
    /// Redirect hops that led here.
    pub hops: u8,
    /// The page that linked here (a URL: row ids are each member's own).
    pub referrer: Option<String>,
}

impl Entry {
    fn encode(&self) -> String {
        format!(
            "{:016x}\t{}\t{}\t{}\t{}",
            crate::frontier::fingerprint(&self.url),
            self.depth,
            self.hops,
            self.url,
            self.referrer.as_deref().unwrap_or("")
        )
    }

    fn decode(s: &str) -> Option<Entry> {
        let mut parts = s.splitn(5, '\t');
        let fp = parts.next()?;
        if fp.len() != 16 || !fp.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let depth = parts.next()?.parse().ok()?;
        let hops = parts.next()?.parse().ok()?;
        let url = parts.next()?.to_string();
        let referrer = parts.next().filter(|r| !r.is_empty()).map(str::to_string);
        (!url.is_empty()).then_some(Entry {
            url,
            depth,
            hops,
            referrer,
        })
    }
}

/// What taking a site's lease found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lease {
    /// Another member holds it.
    Held,
    /// Ours now; `requeued` entries an earlier holder left unfinished went back to the queue.
    Taken { requeued: u64, previous: Previous },
    /// Ours already; renewed.
    Renewed,
}

/// How the member that held a site before left its lease, as a new holder finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Previous {
    /// No member held it, it handed the site back, or it was this member: the stored next
    /// contact is the site's last word.
    HandedBack,
    /// Another member took the lease and never handed it back (it died, or its lease ran out
    /// while Redis was away or it was stalled): it may have contacted the site after the
    /// stored next contact was written, so the new holder waits a whole delay from the take.
    Lapsed,
}

/// What a member says of itself with each heartbeat.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Heartbeat {
    pub host: String,
    pub pid: u32,
    pub sites_leased: u64,
    pub pages: u64,
    pub pages_per_s: f64,
    pub busy: u32,
    pub blocked: u32,
    pub idle: u32,
    /// It left (stopped gracefully); a member that died just stops beating.
    pub gone: bool,
    /// Its `--lease-ms`: how long it may go without a beat before it counts as silent
    /// ([`Member::silent`]). 0 in a beat of a crawltop from before this field: the default
    /// lease is assumed.
    #[serde(default)]
    pub lease_ms: u64,
}

/// A member as the crawl knows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    pub id: String,
    pub beat: Heartbeat,
    /// Since its last heartbeat, by Redis's clock.
    pub age: Duration,
}

/// A member's lease when it gives none (`--lease-ms`'s default).
pub const DEFAULT_LEASE: Duration = Duration::from_secs(10);

impl Member {
    /// How long it may go without a beat before it counts as silent: its own lease. A live
    /// member beats every second and renews each lease every third of one; silent a whole
    /// lease, every lease it held has run out and the other members take its sites (and stop
    /// counting it in the fair share, which they judge by their own lease).
    pub fn silent_after(&self) -> Duration {
        match self.beat.lease_ms {
            0 => DEFAULT_LEASE,
            ms => Duration::from_millis(ms),
        }
    }

    /// It stopped beating without saying it left: killed, stalled, or cut off from Redis, for
    /// at least [`Member::silent_after`]. A member that left properly is `gone`, never silent.
    pub fn silent(&self) -> bool {
        !self.beat.gone && self.age >= self.silent_after()
    }
}

/// One command given to the whole crawl.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedCommand {
    /// Its place in the crawl's command log, from 0.
    pub number: u64,
    /// When, by Redis's clock (ms since the Unix epoch).
    pub at_ms: u64,
    /// The member (or `ctl`) that gave it.
    pub from: String,
    pub command: String,
}

impl SharedCommand {
    /// The command without how its member got it (`pause`, `delay 500 ms`): a member logs
    /// `command TAB how`, `ctl` the command alone.
    pub fn text(&self) -> &str {
        self.command.split('\t').next().unwrap_or_default().trim()
    }

    /// Who gave it, with how (`host:12 (api)`, `ctl@host:13`).
    pub fn by(&self) -> String {
        match self.command.split_once('\t') {
            Some((_, how)) if !how.is_empty() => format!("{} ({how})", self.from),
            _ => self.from.clone(),
        }
    }

    /// Who and when, for a person: `by ctl@host:13 at Fri, 27 Nov 2026 09:29:01 GMT`
    /// (Redis's clock).
    pub fn said(&self) -> String {
        let at = std::time::UNIX_EPOCH + Duration::from_millis(self.at_ms);
        format!("by {} at {}", self.by(), httpdate::fmt_http_date(at))
    }
}

/// The pause that holds the crawl now, if any: the log's last pause or resume, when it is a
/// pause. A member that joins replays the log's pauses and resumes (and delays, workers; not
/// a stop), so it starts paused then.
pub fn paused_by(commands: &[SharedCommand]) -> Option<&SharedCommand> {
    commands
        .iter()
        .rev()
        .find(|c| matches!(c.text(), "pause" | "resume"))
        .filter(|c| c.text() == "pause")
}

/// Either kind of Redis this crawl may run on: a cluster, or one plain server; with the
/// requests sent so far (a pipeline is one).
struct Conn {
    kind: ConnKind,
    trips: u64,
    /// Where a cluster's slots are: how a round's calls are grouped by node.
    slots: SlotMap,
}

impl Conn {
    fn new(kind: ConnKind) -> Conn {
        Conn {
            kind,
            trips: 0,
            slots: SlotMap {
                stale: true,
                ..SlotMap::default()
            },
        }
    }

    /// `calls` grouped by the node that serves their slot, in call order within a group: one
    /// group on a plain server; on a cluster, the map is read first when it is out of date (a
    /// map that cannot be read leaves every call a group of its own, and is read again at the next
    /// round).
    async fn group(&mut self, calls: &[Call<'_>]) -> Vec<Vec<usize>> {
        let ConnKind::Cluster(_) = self.kind else {
            return vec![(0..calls.len()).collect()];
        };
        if self.slots.stale {
            self.trips += 1;
            let answer = redis::cmd("CLUSTER")
                .arg("SLOTS")
                .query_async::<Value>(&mut self.kind)
                .await;
            // Unread (Redis away): every call alone this time, and the map asked for again.
            self.slots = answer.map_or_else(
                |_| SlotMap {
                    stale: true,
                    ..SlotMap::default()
                },
                |a| SlotMap::parse(&a),
            );
        }
        let mut by_node: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        let mut groups = Vec::new();
        for (i, call) in calls.iter().enumerate() {
            match self.slots.node(call.slot) {
                Some(node) => by_node.entry(node).or_default().push(i),
                None => groups.push(vec![i]),
            }
        }
        groups.extend(by_node.into_values());
        groups
    }
}

/// A handle on the connection: cheap to clone, and clones share it (requests sent at once
/// from clones travel together).
#[derive(Clone)]
enum ConnKind {
    Cluster(redis::cluster_async::ClusterConnection),
    Single(redis::aio::MultiplexedConnection),
}

impl ConnKind {
    /// `pipe` (`count` commands) on the node that serves `slot` (on a cluster), answered as
    /// one value a command, errors included.
    async fn pipeline_on(
        &mut self,
        pipe: Pipeline,
        count: usize,
        slot: u16,
    ) -> redis::RedisResult<Vec<Value>> {
        match self {
            ConnKind::Cluster(c) => {
                let route = redis::cluster_routing::SingleNodeRoutingInfo::SpecificNode(
                    redis::cluster_routing::Route::new(
                        slot,
                        redis::cluster_routing::SlotAddr::Master,
                    ),
                );
                c.route_pipeline(pipe, 0, count, route).await
            }
            ConnKind::Single(c) => c.req_packed_commands(&pipe, 0, count).await,
        }
    }
}

impl ConnectionLike for ConnKind {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            ConnKind::Cluster(c) => c.req_packed_command(cmd),
            ConnKind::Single(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            ConnKind::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
            ConnKind::Single(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            ConnKind::Cluster(c) => c.get_db(),
            ConnKind::Single(c) => c.get_db(),
        }
    }
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        self.trips += 1;
        self.kind.req_packed_command(cmd)
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        self.trips += 1;
        self.kind.req_packed_commands(pipeline, offset, count)
    }

    fn get_db(&self) -> i64 {
        self.kind.get_db()
    }
}

/// Lua: a site's queue is a list per depth (`q` and `:` and the depth) and `q` itself the sorted
/// set of the depths with a list (member and score the depth), so a pull takes the least depth
/// first. `enqueue(q, depth, entry)` appends to its depth's list. `admit(seen, q, lower,
/// entry)` queues an entry whose URL is new (returns 1, 0), or was queued deeper and not pulled
/// yet (0, 1: the seen hash keeps the least depth, and the pull drops the deeper entry); one
/// pulled at a greater depth goes to `lower` for the holder (0, 0); otherwise nothing (0, 0).
/// `put_back(seen, q, entry)` puts an unfinished pulled entry back at the head of its depth's
/// list, at the least depth the hash knows.
const ADMIT: &str = "
    local function enqueue(q, depth, e)
      redis.call('RPUSH', q .. ':' .. depth, e)
      redis.call('ZADD', q, tonumber(depth), depth)
    end

    local function admit(seen, q, lower, e)
      local fp, depth = string.match(e, '^(%x+)\t(%d+)\t')
      if not fp then return 0, 0 end
      local least = redis.call('HGET', seen, fp)
      if not least then
        redis.call('HSET', seen, fp, depth)
        enqueue(q, depth, e)
        return 1, 0
      end
      if string.sub(least, 1, 1) ~= 't' then
        if tonumber(depth) < tonumber(least) then
          redis.call('HSET', seen, fp, depth)
          enqueue(q, depth, e)
          return 0, 1
        end
      elseif tonumber(depth) < tonumber(string.sub(least, 2)) then
        -- Pulled already: the holder hears of it at its next pull.
        redis.call('HSET', seen, fp, 't' .. depth)
        redis.call('RPUSH', lower, e)
      end
      return 0, 0
    end

    local function put_back(seen, q, e)
      local fp, depth, rest = string.match(e, '^(%x+)\t(%d+)\t(.*)$')
      if not fp then return end
      local least = redis.call('HGET', seen, fp)
      if least and string.sub(least, 1, 1) == 't'
        and tonumber(string.sub(least, 2)) < tonumber(depth) then
        depth = string.sub(least, 2)
        e = fp .. '\t' .. depth .. '\t' .. rest
      end
      redis.call('LPUSH', q .. ':' .. depth, e)
      redis.call('ZADD', q, tonumber(depth), depth)
    end";

/// Lua: `ms`, Redis's clock in milliseconds since the Unix epoch.
const NOW_MS: &str = "
    local t = redis.call('TIME')
    local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)";

/// The scripts, each on one slot (a site's, or the crawl's).
struct Scripts {
    join: Script,
    push: Script,
    push_done: Script,
    lease: Script,
    pull: Script,
    release: Script,
    backlog: Script,
    reserve: Script,
    heartbeat: Script,
    members: Script,
    command: Script,
    save_politeness: Script,
    politeness: Script,
}

impl Scripts {
    // One table of scripts, each a few lines: splitting it would only scatter them.
    #[allow(clippy::too_many_lines)]
    fn new() -> Scripts {
        Scripts {
            // KEYS: meta. ARGV: format, settings. Creates the crawl, or says what it holds.
            join: Script::new(
                r"
                if redis.call('HSETNX', KEYS[1], 'format', ARGV[1]) == 1 then
                  redis.call('HSET', KEYS[1], 'settings', ARGV[2])
                  return {1, ARGV[1], ARGV[2]}
                end
                return {0, redis.call('HGET', KEYS[1], 'format') or '',
                        redis.call('HGET', KEYS[1], 'settings') or ''}
                ",
            ),
            // KEYS: seen, q, flight, lower. ARGV: entries. Returns {added (new URLs), 1 when the
            // site had no work before and has now}.
            push: Script::new(&format!(
                r"{ADMIT}
                local idle = redis.call('EXISTS', KEYS[2]) == 0 and redis.call('SCARD', KEYS[3]) == 0
                local added, queued = 0, 0
                for i = 1, #ARGV do
                  local new, again = admit(KEYS[1], KEYS[2], KEYS[4], ARGV[i])
                  added = added + new
                  queued = queued + new + again
                end
                if idle and queued > 0 then return {{added, 1}} end
                return {{added, 0}}
                "
            )),
            // KEYS: seen, q, lease, flight, pol, lower. ARGV: member, ms to the next contact (or
            // -1), the number of pushed entries n, then n entries, then the ended entries. `push`
            // then `done` in one atomic call: a site's own links are queued before the pages
            // that led to them are finished, and on a replica in that order.
            // Returns {added, ended (-1: the lease is not ours), 1 when the site had no work
            // before and has now, the `lower` list (emptied) when there were ends and the lease
            // is ours: the holder hears of shorter paths at each round, not only at its pulls}.
            push_done: Script::new(&format!(
                r"{NOW_MS}{ADMIT}
                local idle = redis.call('EXISTS', KEYS[2]) == 0 and redis.call('SCARD', KEYS[4]) == 0
                local added, queued = 0, 0
                local last = 3 + tonumber(ARGV[3])
                for i = 4, last do
                  local new, again = admit(KEYS[1], KEYS[2], KEYS[6], ARGV[i])
                  added = added + new
                  queued = queued + new + again
                end
                local woke = 0
                if idle and queued > 0 then woke = 1 end
                if redis.call('GET', KEYS[3]) ~= ARGV[1] then return {{added, -1, woke, {{}}}} end
                local next_in = tonumber(ARGV[2])
                if next_in >= 0 then redis.call('HSET', KEYS[5], 'next_ms', ms + next_in) end
                local n = 0
                for i = last + 1, #ARGV do n = n + redis.call('SREM', KEYS[4], ARGV[i]) end
                local lowered = {{}}
                if #ARGV > last then
                  lowered = redis.call('LRANGE', KEYS[6], 0, -1)
                  if #lowered > 0 then redis.call('DEL', KEYS[6]) end
                end
                return {{added, n, woke, lowered}}
                "
            )),
            // KEYS: lease, flight, q, pol, seen, lower. ARGV: member, ms. Returns {0} held, {1, n,
            // lapsed} taken (lapsed 1: another member's mark as holder was still in `pol`, it
            // never handed the site back), {2} renewed. What goes back to the queue (at the least
            // depth known) is no longer counted as admitted.
            lease: Script::new(&format!(
                r"{ADMIT}
                if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
                  local back = redis.call('SMEMBERS', KEYS[2])
                  for _, e in ipairs(back) do put_back(KEYS[5], KEYS[3], e) end
                  redis.call('DEL', KEYS[2], KEYS[6])
                  local admitted = tonumber(redis.call('HGET', KEYS[4], 'admitted') or '0')
                  if #back > 0 and admitted > 0 then
                    redis.call('HSET', KEYS[4], 'admitted', math.max(0, admitted - #back))
                  end
                  local before = redis.call('HGET', KEYS[4], 'holder')
                  redis.call('HSET', KEYS[4], 'holder', ARGV[1])
                  local lapsed = 0
                  if before and before ~= ARGV[1] then lapsed = 1 end
                  return {{1, #back, lapsed}}
                end
                if redis.call('GET', KEYS[1]) == ARGV[1] then
                  redis.call('PEXPIRE', KEYS[1], ARGV[2])
                  return {{2}}
                end
                return {{0}}
                "
            )),
            // KEYS: lease, q, flight, pol, seen, lower. ARGV: member, n, the site's limit (0:
            // none), the crawl's places this pull may take (-1: no limit). Only the holder pulls.
            // Takes up to n entries, the least depth first, dropping those a shorter entry of
            // the same URL came before, and marks each taken as pulled at its depth. Returns {in flight, over the site's limit,
            // over the crawl's, shorter paths}: only the first are pulled to be fetched (and
            // counted); the next two are ended by the member, as ignored; the last are shorter
            // paths to URLs pulled before (the `lower` list, emptied).
            pull: Script::new(
                r"
                if redis.call('GET', KEYS[1]) ~= ARGV[1] then return false end
                local want = tonumber(ARGV[2])
                local site_max = tonumber(ARGV[3])
                local places = tonumber(ARGV[4])
                local admitted = tonumber(redis.call('HGET', KEYS[4], 'admitted') or '0')
                local ok, over_site, over_crawl = {}, {}, {}
                while want > 0 do
                  local top = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
                  if not top then break end
                  local list = KEYS[2] .. ':' .. top
                  local got = redis.call('LPOP', list, want) or {}
                  if redis.call('EXISTS', list) == 0 then redis.call('ZREM', KEYS[2], top) end
                  for _, e in ipairs(got) do
                    local fp, depth = string.match(e, '^(%x+)\t(%d+)\t')
                    local least = fp and redis.call('HGET', KEYS[5], fp)
                    local current = true
                    if least then
                      if string.sub(least, 1, 1) == 't' then
                        current = string.sub(least, 2) == depth
                      else
                        current = tonumber(depth) <= tonumber(least)
                      end
                    end
                    if current then
                      if fp then redis.call('HSET', KEYS[5], fp, 't' .. depth) end
                      want = want - 1
                      if site_max > 0 and admitted >= site_max then
                        table.insert(over_site, e)
                      elseif places == 0 then
                        table.insert(over_crawl, e)
                      else
                        redis.call('SADD', KEYS[3], e)
                        admitted = admitted + 1
                        places = places - 1
                        table.insert(ok, e)
                      end
                    end
                  end
                end
                if site_max > 0 then redis.call('HSET', KEYS[4], 'admitted', admitted) end
                local lowered = redis.call('LRANGE', KEYS[6], 0, -1)
                if #lowered > 0 then redis.call('DEL', KEYS[6]) end
                return {ok, over_site, over_crawl, lowered}
                ",
            ),
            // KEYS: lease, flight, q, pol, seen, lower. ARGV: member. Hands back what was pulled
            // (at the least depth known, no longer counted as admitted), then the lease, and
            // clears the holder's mark: the stored next contact is the site's last word.
            release: Script::new(&format!(
                r"{ADMIT}
                if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
                local back = redis.call('SMEMBERS', KEYS[2])
                for _, e in ipairs(back) do put_back(KEYS[5], KEYS[3], e) end
                redis.call('DEL', KEYS[2], KEYS[1], KEYS[6])
                redis.call('HDEL', KEYS[4], 'holder')
                local admitted = tonumber(redis.call('HGET', KEYS[4], 'admitted') or '0')
                if #back > 0 and admitted > 0 then
                  redis.call('HSET', KEYS[4], 'admitted', math.max(0, admitted - #back))
                end
                return #back
                "
            )),
            // KEYS: q, flight. Returns {entries queued (every depth's list), in flight}.
            backlog: Script::new(
                r"
                local queued = 0
                for _, depth in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
                  queued = queued + redis.call('LLEN', KEYS[1] .. ':' .. depth)
                end
                return {queued, redis.call('SCARD', KEYS[2])}
                ",
            ),
            // KEYS: meta. ARGV: places wanted, the crawl's limit. Returns the places taken.
            reserve: Script::new(
                r"
                local admitted = tonumber(redis.call('HGET', KEYS[1], 'admitted') or '0')
                local give = math.min(tonumber(ARGV[1]), tonumber(ARGV[2]) - admitted)
                if give <= 0 then return 0 end
                redis.call('HINCRBY', KEYS[1], 'admitted', give)
                return give
                ",
            ),
            // KEYS: lease, pol. ARGV: member, state, ms to the next contact. Only the holder.
            save_politeness: Script::new(&format!(
                r"{NOW_MS}
                if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
                redis.call('HSET', KEYS[2], 'state', ARGV[2], 'next_ms', ms + tonumber(ARGV[3]))
                return 1
                "
            )),
            // KEYS: pol. Returns {state, ms until the next contact} or false.
            politeness: Script::new(&format!(
                r"{NOW_MS}
                local got = redis.call('HMGET', KEYS[1], 'state', 'next_ms')
                if not got[1] and not got[2] then return false end
                local wait = (tonumber(got[2]) or 0) - ms
                if wait < 0 then wait = 0 end
                return {{got[1] or '', wait}}
                "
            )),
            // KEYS: members. ARGV: member, beat. The row is `ms TAB beat`, ms by Redis's clock.
            heartbeat: Script::new(&format!(
                r"{NOW_MS}
                redis.call('HSET', KEYS[1], ARGV[1], ms .. '\t' .. ARGV[2])
                "
            )),
            // KEYS: members. Returns {now ms, {id, row}, ...}.
            members: Script::new(&format!(
                r"{NOW_MS}
                local all = redis.call('HGETALL', KEYS[1])
                local rows = {{}}
                for i = 1, #all, 2 do rows[#rows + 1] = {{all[i], all[i + 1]}} end
                return {{ms, rows}}
                "
            )),
            // KEYS: commands. ARGV: member, command. Appends `ms TAB member TAB command`.
            command: Script::new(&format!(
                r"{NOW_MS}
                return redis.call('RPUSH', KEYS[1], ms .. '\t' .. ARGV[1] .. '\t' .. ARGV[2])
                "
            )),
        }
    }
}

/// One member's connection to a shared crawl.
pub struct SharedCrawl {
    conn: Conn,
    /// The seed nodes given (for [`SharedCrawl::reconnect`]).
    nodes: Vec<String>,
    crawl: CrawlId,
    member: String,
    lease_for: Duration,
    scripts: Scripts,
    /// This member has seen the crawl's first URL queued.
    started: bool,
    /// Sites this member knows are in the crawl's set of sites.
    known_sites: std::collections::HashSet<String>,
    /// Replicas of the master with the fewest (0: none, or one plain server). With at least
    /// one, [`SharedCrawl::replicated`] waits for a copy of this member's writes, so that a
    /// failover to a replica keeps what a member was told is stored.
    replicas: usize,
    /// The crawl's page limits (every member has the same: they are shared settings).
    limits: Limits,
}

/// A shared crawl's page limits, crawl-wide: `--max-pages` and `--max-pages-per-site`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    pub pages: Option<u64>,
    pub per_site: Option<u64>,
}

/// A pull script's answer: none (the lease is not ours), or its three lists of entries.
type PullAnswer = Option<(Vec<String>, Vec<String>, Vec<String>, Vec<String>)>;

/// What one pull of a site got.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pulled {
    /// Pulled to be fetched (in flight until finished).
    pub entries: Vec<Entry>,
    /// Past `--max-pages-per-site` crawl-wide: taken off the queue, to be ended as ignored.
    pub over_site: Vec<Entry>,
    /// Past `--max-pages` crawl-wide: the same.
    pub over_crawl: Vec<Entry>,
    /// Shorter paths found to URLs of the site pulled before and not finished (by any member):
    /// a row still queued takes the shorter depth.
    pub lowered: Vec<Entry>,
}

impl std::fmt::Debug for SharedCrawl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedCrawl")
            .field("crawl", &self.crawl)
            .field("member", &self.member)
            .finish_non_exhaustive()
    }
}

/// How long connecting and each answer may take before Redis counts as unreachable.
const PATIENCE: Duration = Duration::from_secs(5);

/// How long a write waits for a replica's copy before the replicas are counted again.
const REPLICA_PATIENCE: Duration = Duration::from_secs(1);

impl SharedCrawl {
    /// Connects to the Redis of `nodes` (seed nodes of a cluster, or one plain server) as
    /// `member`.
    pub async fn connect(
        nodes: &[String],
        crawl: CrawlId,
        member: &str,
        lease_for: Duration,
    ) -> Result<SharedCrawl, SharedError> {
        if nodes.is_empty() {
            return Err(SharedError::NoNodes);
        }
        for url in nodes {
            redis::IntoConnectionInfo::into_connection_info(url.as_str()).map_err(|e| {
                SharedError::BadUrl {
                    url: without_password(url),
                    reason: e.to_string(),
                }
            })?;
        }
        let conn = open(nodes).await?;
        let mut shared = SharedCrawl {
            conn: Conn::new(conn),
            nodes: nodes.to_vec(),
            crawl,
            member: member.to_string(),
            lease_for,
            scripts: Scripts::new(),
            started: false,
            known_sites: std::collections::HashSet::new(),
            replicas: 0,
            limits: Limits::default(),
        };
        shared.replicas = shared
            .count_replicas()
            .await
            .map_err(|e| SharedError::Unreachable {
                nodes: shown_nodes(nodes),
                reason: e.to_string(),
            })?;
        Ok(shared)
    }

    /// A new connection to the same Redis, whose tasks run on the current runtime (the
    /// agent's own thread): what was sent on the old one is answered or dropped with it.
    pub async fn reconnect(&mut self) -> Result<(), SharedError> {
        self.conn.kind = open(&self.nodes).await?;
        self.conn.slots.stale = true;
        Ok(())
    }

    /// A new connection to a plain server in place of one that failed, if it can be made in
    /// time; the old is kept otherwise. A cluster client makes its nodes' connections again
    /// by itself.
    pub async fn mend_connection(&mut self) {
        if matches!(self.conn.kind, ConnKind::Single(_))
            && let Ok(Ok(kind)) = tokio::time::timeout(PATIENCE, open(&self.nodes)).await
        {
            self.conn.kind = kind;
        }
    }

    /// Replicas of the master with the fewest: `CLUSTER NODES` on a cluster, `INFO
    /// replication` on one server.
    async fn count_replicas(&mut self) -> Result<usize, SharedError> {
        let text: String = match self.conn.kind {
            ConnKind::Cluster(_) => {
                redis::cmd("CLUSTER")
                    .arg("NODES")
                    .query_async(&mut self.conn)
                    .await?
            }
            ConnKind::Single(_) => {
                let info: String = redis::cmd("INFO")
                    .arg("replication")
                    .query_async(&mut self.conn)
                    .await?;
                return Ok(info
                    .lines()
                    .find_map(|l| l.trim().strip_prefix("connected_slaves:"))
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0));
            }
        };
        Ok(fewest_replicas(&text))
    }

    /// Replicas the writes wait for (0: none).
    pub fn replicas(&self) -> usize {
        self.replicas
    }

    /// Waits until a replica holds every write this member sent so far, when the masters have
    /// replicas (`WAIT`, sent to every master). When none confirms in time the replicas are
    /// counted again: a master without one now (its replica took over, say) means there is
    /// nothing to wait for; otherwise the writes are not known to be safe and the caller
    /// sends them again (every write of a shared crawl may be repeated).
    pub async fn replicated(&mut self) -> Result<(), SharedError> {
        if self.replicas == 0 {
            return Ok(());
        }
        let acked: i64 = redis::cmd("WAIT")
            .arg(1)
            .arg(REPLICA_PATIENCE.as_millis() as u64)
            .query_async(&mut self.conn)
            .await?;
        if acked >= 1 {
            return Ok(());
        }
        self.replicas = self.count_replicas().await?;
        if self.replicas == 0 {
            Ok(())
        } else {
            Err(SharedError::NotReplicated)
        }
    }

    pub fn member(&self) -> &str {
        &self.member
    }

    /// Requests sent to Redis so far (a pipeline or a script call is one; a script Redis did
    /// not know yet is two, counted once; calls sent at once count one a node: they travel as
    /// one pipeline, and a call a node refused there counts again when it goes alone).
    pub fn round_trips(&self) -> u64 {
        self.conn.trips
    }

    fn crawl_key(&self, what: &str) -> String {
        format!("ct:{{{}}}:{what}", self.crawl.0)
    }

    fn site_key(&self, site: &str, what: &str) -> String {
        format!("ct:{{{}|{site}}}:{what}", self.crawl.0)
    }

    /// Joins the crawl: the first member stores its settings; a later one must bring the same
    /// (every differing name is listed). Returns whether this member created it.
    pub async fn join(&mut self, settings: &BTreeMap<String, String>) -> Result<bool, SharedError> {
        let ours = serde_json::to_string(settings).map_err(|e| SharedError::Corrupt {
            crawl: self.crawl.0.clone(),
            what: "settings",
            reason: e.to_string(),
        })?;
        let (created, format, stored): (i64, String, String) = self
            .scripts
            .join
            .key(self.crawl_key("meta"))
            .arg(FORMAT)
            .arg(&ours)
            .invoke_async(&mut self.conn)
            .await?;
        if format != FORMAT.to_string() {
            return Err(SharedError::Format {
                crawl: self.crawl.0.clone(),
                found: format,
            });
        }
        if created == 1 {
            return Ok(true);
        }
        let theirs: BTreeMap<String, String> =
            serde_json::from_str(&stored).map_err(|e| SharedError::Corrupt {
                crawl: self.crawl.0.clone(),
                what: "settings",
                reason: e.to_string(),
            })?;
        let names: std::collections::BTreeSet<&String> =
            settings.keys().chain(theirs.keys()).collect();
        let differences: Vec<String> = names
            .into_iter()
            .filter(|n| settings.get(*n) != theirs.get(*n))
            .map(|n| {
                fn shown(v: Option<&String>) -> &str {
                    match v.map(String::as_str) {
                        None => "unset",
                        Some("") => "(none)",
                        Some(v) => v,
                    }
                }
                format!(
                    "{n} is {} there, {} here",
                    shown(theirs.get(n)),
                    shown(settings.get(n))
                )
            })
            .collect();
        if differences.is_empty() {
            Ok(false)
        } else {
            Err(SharedError::Settings {
                crawl: self.crawl.0.clone(),
                differences,
            })
        }
    }

    /// Whether the crawl exists (a member created it).
    pub async fn exists(&mut self) -> Result<bool, SharedError> {
        let n: i64 = redis::cmd("HEXISTS")
            .arg(self.crawl_key("meta"))
            .arg("format")
            .query_async(&mut self.conn)
            .await?;
        Ok(n == 1)
    }

    /// Queues the entries of `site` that its seen set admits (exactly once crawl-wide); returns
    /// how many were new.
    pub async fn push(&mut self, site: &str, entries: &[Entry]) -> Result<u64, SharedError> {
        self.push_many(&[(site.to_string(), entries.to_vec())])
            .await
    }

    /// [`SharedCrawl::push`] for several sites in one round trip (plus one the first time this
    /// member pushes to a site: the crawl's set of sites has it before its queue does).
    pub async fn push_many(&mut self, batch: &[(String, Vec<Entry>)]) -> Result<u64, SharedError> {
        let (added, _) = self.push_and_finish(batch, &[]).await?;
        Ok(added)
    }

    /// A round's pushes and ends in as few round trips as their order allows: in effect
    /// [`SharedCrawl::push_many`], then [`SharedCrawl::done`] for each site, so a page is never finished
    /// while a URL it led to could be lost. A site's own links (entries whose referrer is a page
    /// of that site, or that have none) go in one atomic script call with its ends: queued
    /// first, on the master and on its replica alike. Links to another site go first, in calls
    /// of their own (and, with replicas, to a replica) before any end. Returns how many pushed
    /// entries were new, and for each end's site whether it was still this member's, with the
    /// shorter paths found to its pulled URLs.
    pub async fn push_and_finish(
        &mut self,
        pushes: &[(String, Vec<Entry>)],
        dones: &[(String, Vec<Entry>, Option<Duration>)],
    ) -> Result<(u64, Vec<Ended>), SharedError> {
        let pushes: Vec<&(String, Vec<Entry>)> =
            pushes.iter().filter(|b| !b.1.is_empty()).collect();
        self.note_sites(pushes.iter().map(|(site, _)| site.as_str()))
            .await?;
        // Sites some of whose links come from other sites' pages: alone, first.
        let (first, own): (Vec<_>, Vec<_>) = pushes.into_iter().partition(|(site, entries)| {
            entries
                .iter()
                .any(|e| e.referrer.as_deref().is_some_and(|r| !of_site(r, site)))
        });
        let mut added = self.push_across(&first).await?;
        // Then each site's own links with its ends (or alone, as a site with no ends here).
        let mut jobs: Vec<SiteRound<'_>> = dones
            .iter()
            .map(|(site, ended, next_in)| SiteRound {
                site,
                pushed: &[],
                ended,
                next_in: *next_in,
            })
            .collect();
        let mut by_site: HashMap<&str, usize> = jobs
            .iter()
            .enumerate()
            .map(|(i, job)| (job.site, i))
            .collect();
        for (site, entries) in own {
            if let Some(&i) = by_site.get(site.as_str()) {
                jobs[i].pushed = entries;
            } else {
                by_site.insert(site, jobs.len());
                jobs.push(SiteRound {
                    site,
                    pushed: entries,
                    ended: &[],
                    next_in: None,
                });
            }
        }
        let keys: Vec<[String; 6]> = jobs
            .iter()
            .map(|job| {
                ["seen", "q", "lease", "flight", "pol", "lower"]
                    .map(|what| self.site_key(job.site, what))
            })
            .collect();
        let (scripts, conn, member) = (&self.scripts, &mut self.conn, &self.member);
        let calls: Vec<_> = jobs
            .iter()
            .zip(keys)
            .map(|(job, keys)| {
                let mut call = Call::new(&scripts.push_done, keys.into());
                let next_in = job
                    .next_in
                    .map_or(-1, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
                call.arg(member).arg(next_in).arg(job.pushed.len());
                push_args(&mut call, job.pushed);
                for e in job.ended {
                    call.arg(e.encode());
                }
                call
            })
            .collect();
        let answers: Vec<(u64, i64, i64, Vec<String>)> = invoke_all(conn, &calls).await?;
        added += answers.iter().map(|(n, ..)| n).sum::<u64>();
        // Sites that had no work before this round: listed as active after their queue has
        // something (and before the crawl counts as started).
        let woke: Vec<&str> = jobs
            .iter()
            .zip(&answers)
            .filter(|(_, (_, _, woke, _))| *woke == 1)
            .map(|(job, _)| job.site)
            .collect();
        self.activate(&woke).await?;
        if added > 0 && !self.started {
            // After the queue has it: a crawl is never seen started with nothing queued.
            let _: i64 = redis::cmd("HSETNX")
                .arg(self.crawl_key("meta"))
                .arg("started")
                .arg(1)
                .query_async(&mut self.conn)
                .await?;
            self.started = true;
        }
        let ends = answers[..dones.len()]
            .iter()
            .map(|(_, n, _, lowered)| Ended {
                ours: *n >= 0,
                lowered: lowered.iter().filter_map(|e| Entry::decode(e)).collect(),
            })
            .collect();
        Ok((added, ends))
    }

    /// Pushes of sites some of whose links come from other sites' pages, before any end of the
    /// round (and the sites they woke listed as active before it too): with replicas, on one of
    /// them too. Returns how many entries were new.
    async fn push_across(&mut self, first: &[&(String, Vec<Entry>)]) -> Result<u64, SharedError> {
        if first.is_empty() {
            return Ok(0);
        }
        let keys: Vec<[String; 4]> = first
            .iter()
            .map(|(site, _)| ["seen", "q", "flight", "lower"].map(|what| self.site_key(site, what)))
            .collect();
        let (scripts, conn) = (&self.scripts, &mut self.conn);
        let calls: Vec<_> = first
            .iter()
            .zip(keys)
            .map(|((_, entries), keys)| {
                let mut call = Call::new(&scripts.push, keys.into());
                push_args(&mut call, entries);
                call
            })
            .collect();
        let got: Vec<(u64, i64)> = invoke_all(conn, &calls).await?;
        let woke: Vec<&str> = first
            .iter()
            .zip(&got)
            .filter(|(_, (_, woke))| *woke == 1)
            .map(|((site, _), _)| site.as_str())
            .collect();
        self.activate(&woke).await?;
        self.replicated().await?;
        Ok(got.iter().map(|(n, _)| n).sum())
    }

    /// Adds the sites this member had not pushed to yet to the crawl's set of sites.
    async fn note_sites<'a>(
        &mut self,
        sites: impl Iterator<Item = &'a str>,
    ) -> Result<(), SharedError> {
        let new: Vec<&str> = sites
            .filter(|site| !self.known_sites.contains(*site))
            .collect();
        if !new.is_empty() {
            let _: i64 = redis::cmd("SADD")
                .arg(self.crawl_key("sites"))
                .arg(&new)
                .query_async(&mut self.conn)
                .await?;
            self.known_sites
                .extend(new.iter().map(|s| (*s).to_string()));
        }
        Ok(())
    }

    /// Lists `sites` as having work (one request; none when there are none).
    async fn activate(&mut self, sites: &[&str]) -> Result<(), SharedError> {
        if !sites.is_empty() {
            let _: i64 = redis::cmd("SADD")
                .arg(self.crawl_key("active"))
                .arg(sites)
                .query_async(&mut self.conn)
                .await?;
        }
        Ok(())
    }

    /// How many sites have work crawl-wide, and up to `n` of them at random (one round trip
    /// of two requests, whatever the number of sites). The count and the sample may include a
    /// site whose work just ended (its holder retires it) and sites held by other members.
    pub async fn look(&mut self, n: usize) -> Result<(u64, Vec<String>), SharedError> {
        let key = self.crawl_key("active");
        let mut pipe = redis::pipe();
        pipe.cmd("SCARD")
            .arg(&key)
            .cmd("SRANDMEMBER")
            .arg(&key)
            .arg(n.max(1));
        let (count, sample): (u64, Vec<String>) = pipe.query_async(&mut self.conn).await?;
        Ok((count, sample))
    }

    /// Takes `site` off the list of sites with work after its holder found its queue empty
    /// with nothing in flight: off the list first, then its backlog read again, and back on
    /// the list if a push came in between (whose own listing may have come before the removal).
    /// Returns whether it stayed off.
    pub async fn retire(&mut self, site: &str) -> Result<bool, SharedError> {
        let _: i64 = redis::cmd("SREM")
            .arg(self.crawl_key("active"))
            .arg(site)
            .query_async(&mut self.conn)
            .await?;
        if self.backlog(site).await? == (0, 0) {
            return Ok(true);
        }
        self.activate(&[site]).await?;
        Ok(false)
    }

    /// The safety net for a member that died between a push and its listing: the backlog of
    /// up to about `count` sites of the crawl's set of sites from `cursor` on (`SSCAN`), those
    /// with work listed as active again. Returns the cursor to go on from (0: a full pass
    /// ended) and how many sites with work it found (listed already, or not).
    pub async fn sweep(&mut self, cursor: u64, count: usize) -> Result<(u64, usize), SharedError> {
        let (next, sites): (u64, Vec<String>) = redis::cmd("SSCAN")
            .arg(self.crawl_key("sites"))
            .arg(cursor)
            .arg("COUNT")
            .arg(count.max(1))
            .query_async(&mut self.conn)
            .await?;
        let busy = self.busy(&sites).await?;
        let refs: Vec<&str> = busy.iter().map(String::as_str).collect();
        self.activate(&refs).await?;
        Ok((next, busy.len()))
    }

    /// Those of `sites` with anything queued or in flight, their backlogs read a few hundred at
    /// a time (sent at once, one request each).
    async fn busy(&mut self, sites: &[String]) -> Result<Vec<String>, SharedError> {
        let mut busy = Vec::new();
        for chunk in sites.chunks(256) {
            let keys: Vec<[String; 2]> = chunk
                .iter()
                .map(|site| [self.site_key(site, "q"), self.site_key(site, "flight")])
                .collect();
            self.conn.trips += keys.len() as u64;
            let sent = keys.iter().map(|[q, flight]| {
                let mut handle = self.conn.kind.clone();
                async move {
                    let mut pipe = redis::pipe();
                    pipe.cmd("ZCARD").arg(q).cmd("SCARD").arg(flight);
                    pipe.query_async::<(u64, u64)>(&mut handle).await
                }
            });
            let got = futures::future::try_join_all(sent).await?;
            busy.extend(
                chunk
                    .iter()
                    .zip(got)
                    .filter(|(_, backlog)| *backlog != (0, 0))
                    .map(|(site, _)| site.clone()),
            );
        }
        Ok(busy)
    }

    /// Takes (or renews) the lease of `site` for `--lease-ms`.
    pub async fn lease(&mut self, site: &str) -> Result<Lease, SharedError> {
        let answer: Vec<i64> = self
            .scripts
            .lease
            .key(self.site_key(site, "lease"))
            .key(self.site_key(site, "flight"))
            .key(self.site_key(site, "q"))
            .key(self.site_key(site, "pol"))
            .key(self.site_key(site, "seen"))
            .key(self.site_key(site, "lower"))
            .arg(&self.member)
            .arg(self.lease_for.as_millis() as u64)
            .invoke_async(&mut self.conn)
            .await?;
        Ok(match answer.as_slice() {
            [1, n, lapsed] => {
                let requeued = u64::try_from(*n).unwrap_or(0);
                // An earlier holder's URLs back in the queue: pulled again, counted again.
                self.unreserve(requeued).await?;
                let previous = if *lapsed == 1 {
                    Previous::Lapsed
                } else {
                    Previous::HandedBack
                };
                Lease::Taken { requeued, previous }
            }
            [2] => Lease::Renewed,
            _ => Lease::Held,
        })
    }

    /// Sets the crawl's page limits (its shared settings), which pulls keep crawl-wide.
    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    /// Gives `n` of the crawl's places back (`--max-pages`): URLs that went back to a queue
    /// unfetched, or places a pull did not use.
    async fn unreserve(&mut self, n: u64) -> Result<(), SharedError> {
        if n == 0 || self.limits.pages.is_none() {
            return Ok(());
        }
        let _: i64 = redis::cmd("HINCRBY")
            .arg(self.crawl_key("meta"))
            .arg("admitted")
            .arg(-i64::try_from(n).unwrap_or(i64::MAX))
            .query_async(&mut self.conn)
            .await?;
        Ok(())
    }

    /// Up to `n` queued entries of a site this member holds, now in flight (and those past the
    /// crawl's limits, taken off the queue); None when the lease is not ours (any more).
    pub async fn pull(&mut self, site: &str, n: usize) -> Result<Option<Pulled>, SharedError> {
        let got = self.pull_many(&[site.to_string()], n).await?;
        Ok(got.into_iter().next().flatten())
    }

    /// [`SharedCrawl::pull`] for several sites at once (one request a master); answers in the
    /// order of `sites`. With `--max-pages`, the places for them are reserved first (one more
    /// request), and those the pulls did not use given back.
    pub async fn pull_many(
        &mut self,
        sites: &[String],
        n: usize,
    ) -> Result<Vec<Option<Pulled>>, SharedError> {
        let n = n.max(1);
        let keys: Vec<Vec<String>> = sites
            .iter()
            .map(|site| {
                ["lease", "q", "flight", "pol", "seen", "lower"]
                    .map(|what| self.site_key(site, what))
                    .into()
            })
            .collect();
        // The crawl's places, handed to the sites in order (-1: no limit).
        let mut reserved = 0u64;
        let places: Vec<i64> = match self.limits.pages {
            None => vec![-1; sites.len()],
            Some(max) => {
                let want = (n * sites.len()) as u64;
                reserved = self
                    .scripts
                    .reserve
                    .key(self.crawl_key("meta"))
                    .arg(want)
                    .arg(max)
                    .invoke_async(&mut self.conn)
                    .await?;
                let mut left = reserved;
                (0..sites.len())
                    .map(|_| {
                        let take = left.min(n as u64);
                        left -= take;
                        i64::try_from(take).unwrap_or(i64::MAX)
                    })
                    .collect()
            }
        };
        let site_max = self.limits.per_site.unwrap_or(0);
        let (scripts, conn, member) = (&self.scripts, &mut self.conn, &self.member);
        let calls: Vec<_> = keys
            .into_iter()
            .zip(&places)
            .map(|(keys, places)| {
                let mut call = Call::new(&scripts.pull, keys);
                call.arg(member).arg(n).arg(site_max).arg(*places);
                call
            })
            .collect();
        let got: Vec<PullAnswer> = invoke_all(conn, &calls).await?;
        let decode = |items: Vec<String>| -> Vec<Entry> {
            items.iter().filter_map(|s| Entry::decode(s)).collect()
        };
        let pulled: Vec<Option<Pulled>> = got
            .into_iter()
            .map(|answer| {
                answer.map(|(ok, over_site, over_crawl, lowered)| Pulled {
                    entries: decode(ok),
                    lowered: decode(lowered),
                    over_site: decode(over_site),
                    over_crawl: decode(over_crawl),
                })
            })
            .collect();
        let used: u64 = pulled
            .iter()
            .flatten()
            .map(|p| p.entries.len() as u64)
            .sum();
        self.unreserve(reserved.saturating_sub(used)).await?;
        Ok(pulled)
    }

    /// Finishes pulled entries (fetched, or ended otherwise) and, when given, stores when the
    /// site may next be contacted (a wait from now on Redis's clock); false when the lease is
    /// not ours.
    pub async fn done(
        &mut self,
        site: &str,
        entries: &[Entry],
        next_in: Option<Duration>,
    ) -> Result<bool, SharedError> {
        let (_, ends) = self
            .push_and_finish(&[], &[(site.to_string(), entries.to_vec(), next_in)])
            .await?;
        Ok(ends.first().is_some_and(|e| e.ours))
    }

    /// Hands a site back at once: its unfinished entries to the head of its queue, then the
    /// lease, and clears this member's mark as its holder (the next holder then trusts the
    /// stored next contact). Returns how many went back; None when the lease was not ours.
    pub async fn release(&mut self, site: &str) -> Result<Option<u64>, SharedError> {
        let n: i64 = self
            .scripts
            .release
            .key(self.site_key(site, "lease"))
            .key(self.site_key(site, "flight"))
            .key(self.site_key(site, "q"))
            .key(self.site_key(site, "pol"))
            .key(self.site_key(site, "seen"))
            .key(self.site_key(site, "lower"))
            .arg(&self.member)
            .invoke_async(&mut self.conn)
            .await?;
        let back = u64::try_from(n).ok();
        self.unreserve(back.unwrap_or(0)).await?;
        Ok(back)
    }

    /// Adds this member's seeds to the crawl's (its scope is every member's seeds) and returns
    /// them all.
    pub async fn add_seeds(&mut self, seeds: &[String]) -> Result<Vec<String>, SharedError> {
        let key = self.crawl_key("seeds");
        if !seeds.is_empty() {
            let _: i64 = redis::cmd("SADD")
                .arg(&key)
                .arg(seeds)
                .query_async(&mut self.conn)
                .await?;
        }
        self.seeds().await
    }

    /// The seeds every member brought.
    pub async fn seeds(&mut self) -> Result<Vec<String>, SharedError> {
        let mut seeds: Vec<String> = redis::cmd("SMEMBERS")
            .arg(self.crawl_key("seeds"))
            .query_async(&mut self.conn)
            .await?;
        seeds.sort();
        Ok(seeds)
    }

    /// How many seeds the crawl has (one round trip: whether to read them again).
    pub async fn seed_count(&mut self) -> Result<u64, SharedError> {
        let n: u64 = redis::cmd("SCARD")
            .arg(self.crawl_key("seeds"))
            .query_async(&mut self.conn)
            .await?;
        Ok(n)
    }

    /// Every site the crawl has queued anything for (one request, but an answer as long as the
    /// crawl's sites: the agent never asks it).
    pub async fn sites(&mut self) -> Result<Vec<String>, SharedError> {
        let mut sites: Vec<String> = redis::cmd("SMEMBERS")
            .arg(self.crawl_key("sites"))
            .query_async(&mut self.conn)
            .await?;
        sites.sort();
        Ok(sites)
    }

    /// Entries queued and in flight at `site`.
    pub async fn backlog(&mut self, site: &str) -> Result<(u64, u64), SharedError> {
        let (queued, flight): (u64, u64) = self
            .scripts
            .backlog
            .key(self.site_key(site, "q"))
            .key(self.site_key(site, "flight"))
            .invoke_async(&mut self.conn)
            .await?;
        Ok((queued, flight))
    }

    /// The crawl-wide end: something was queued once, and now no site has anything queued or
    /// in flight, whoever holds it. (Before the first URL is queued, a crawl has not ended: a
    /// member without seeds waits for one that has them.) It reads every site's backlog (a
    /// request a site, sent a few hundred at once: the agent asks only when no site is listed
    /// as active), puts any site found with work back on the list, then empties the list of
    /// what is left on it (sites whose holder did not retire them) the way
    /// [`SharedCrawl::retire`] does. A push that lands during the pass cannot slip through: it
    /// lists its site before the page that led to it is finished, so either the pass sees that
    /// page still in flight or the list has the site when it is read after the pass.
    pub async fn finished(&mut self) -> Result<bool, SharedError> {
        let started: Option<String> = redis::cmd("HGET")
            .arg(self.crawl_key("meta"))
            .arg("started")
            .query_async(&mut self.conn)
            .await?;
        if started.is_none() {
            return Ok(false);
        }
        let mut cursor = 0;
        loop {
            let (next, found) = self.sweep(cursor, 1000).await?;
            if found > 0 {
                return Ok(false);
            }
            if next == 0 {
                break;
            }
            cursor = next;
        }
        let listed: Vec<String> = redis::cmd("SMEMBERS")
            .arg(self.crawl_key("active"))
            .query_async(&mut self.conn)
            .await?;
        if !listed.is_empty() {
            let _: i64 = redis::cmd("SREM")
                .arg(self.crawl_key("active"))
                .arg(&listed)
                .query_async(&mut self.conn)
                .await?;
            let busy = self.busy(&listed).await?;
            if !busy.is_empty() {
                let refs: Vec<&str> = busy.iter().map(String::as_str).collect();
                self.activate(&refs).await?;
                return Ok(false);
            }
        }
        let left: u64 = redis::cmd("SCARD")
            .arg(self.crawl_key("active"))
            .query_async(&mut self.conn)
            .await?;
        Ok(left == 0)
    }

    /// Stores a held site's politeness state (robots.txt, delays: opaque here) and when it may
    /// next be contacted, as a wait from now on Redis's clock, so it travels with the lease.
    /// False when the lease is not ours.
    pub async fn save_politeness(
        &mut self,
        site: &str,
        state: &str,
        next_in: Duration,
    ) -> Result<bool, SharedError> {
        let saved: i64 = self
            .scripts
            .save_politeness
            .key(self.site_key(site, "lease"))
            .key(self.site_key(site, "pol"))
            .arg(&self.member)
            .arg(state)
            .arg(next_in.as_millis() as u64)
            .invoke_async(&mut self.conn)
            .await?;
        Ok(saved == 1)
    }

    /// A site's stored politeness state (empty when only its next contact was stored) and how
    /// long until it may be contacted, if any member stored either.
    pub async fn politeness(
        &mut self,
        site: &str,
    ) -> Result<Option<(String, Duration)>, SharedError> {
        let got: Option<(String, u64)> = self
            .scripts
            .politeness
            .key(self.site_key(site, "pol"))
            .invoke_async(&mut self.conn)
            .await?;
        Ok(got.map(|(state, wait)| (state, Duration::from_millis(wait))))
    }

    /// Says this member is alive, with what it is doing; stamped with Redis's clock.
    pub async fn heartbeat(&mut self, beat: &Heartbeat) -> Result<(), SharedError> {
        let json = serde_json::to_string(beat).map_err(|e| self.corrupt("heartbeat", &e))?;
        let () = self
            .scripts
            .heartbeat
            .key(self.crawl_key("members"))
            .arg(&self.member)
            .arg(json)
            .invoke_async(&mut self.conn)
            .await?;
        Ok(())
    }

    /// Every member that ever beat, with how long ago by Redis's clock, by id.
    pub async fn members(&mut self) -> Result<Vec<Member>, SharedError> {
        let (now, rows): (u64, Vec<(String, String)>) = self
            .scripts
            .members
            .key(self.crawl_key("members"))
            .invoke_async(&mut self.conn)
            .await?;
        let mut members = Vec::with_capacity(rows.len());
        for (id, row) in rows {
            let (at, json) = row.split_once('\t').unwrap_or(("0", ""));
            let beat: Heartbeat =
                serde_json::from_str(json).map_err(|e| self.corrupt("member row", &e))?;
            let at: u64 = at.parse().unwrap_or(0);
            members.push(Member {
                id,
                beat,
                age: Duration::from_millis(now.saturating_sub(at)),
            });
        }
        members.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(members)
    }

    /// Adds to crawl-wide counters (one round trip for all of them).
    pub async fn count(&mut self, deltas: &[(&str, i64)]) -> Result<(), SharedError> {
        if deltas.is_empty() {
            return Ok(());
        }
        let key = self.crawl_key("counters");
        let mut pipe = redis::pipe();
        for (name, n) in deltas {
            pipe.cmd("HINCRBY").arg(&key).arg(*name).arg(*n).ignore();
        }
        let () = pipe.query_async(&mut self.conn).await?;
        Ok(())
    }

    /// The crawl-wide counters.
    pub async fn counters(&mut self) -> Result<BTreeMap<String, i64>, SharedError> {
        let all: BTreeMap<String, i64> = redis::cmd("HGETALL")
            .arg(self.crawl_key("counters"))
            .query_async(&mut self.conn)
            .await?;
        Ok(all)
    }

    /// Gives a command to the whole crawl (pause, resume, delay, workers, stop): appended to the
    /// crawl's command log with who gave it and when (Redis's clock).
    pub async fn command(&mut self, command: &str) -> Result<u64, SharedError> {
        let n: u64 = self
            .scripts
            .command
            .key(self.crawl_key("commands"))
            .arg(&self.member)
            .arg(command)
            .invoke_async(&mut self.conn)
            .await?;
        Ok(n - 1)
    }

    /// The crawl's commands from number `from` on, oldest first.
    pub async fn commands_since(&mut self, from: u64) -> Result<Vec<SharedCommand>, SharedError> {
        let rows: Vec<String> = redis::cmd("LRANGE")
            .arg(self.crawl_key("commands"))
            .arg(from)
            .arg(-1)
            .query_async(&mut self.conn)
            .await?;
        rows.iter()
            .zip(from..)
            .map(|(row, number)| {
                let mut parts = row.splitn(3, '\t');
                match (parts.next(), parts.next(), parts.next()) {
                    (Some(at), Some(from), Some(command)) => Ok(SharedCommand {
                        number,
                        at_ms: at.parse().unwrap_or(0),
                        from: from.to_string(),
                        command: command.to_string(),
                    }),
                    _ => Err(SharedError::Corrupt {
                        crawl: self.crawl.0.clone(),
                        what: "command log",
                        reason: format!("entry {number} is {row:?}"),
                    }),
                }
            })
            .collect()
    }

    fn corrupt(&self, what: &'static str, e: &serde_json::Error) -> SharedError {
        SharedError::Corrupt {
            crawl: self.crawl.0.clone(),
            what,
            reason: e.to_string(),
        }
    }
}

/// What finishing a site's ended entries found: whether its lease was still this member's, and
/// the shorter paths found meanwhile to URLs it pulled (its `lower` list).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ended {
    pub ours: bool,
    pub lowered: Vec<Entry>,
}

/// One site's part of a round: its own links to queue, then its ends.
struct SiteRound<'a> {
    site: &'a str,
    pushed: &'a [Entry],
    ended: &'a [Entry],
    next_in: Option<Duration>,
}

/// A push's arguments: the entries (each starts with its URL's fingerprint, the seen hash's
/// field).
fn push_args(call: &mut Call<'_>, entries: &[Entry]) {
    for e in entries {
        call.arg(e.encode());
    }
}

/// Whether `url` is on `site` (an origin, as the sites' keys have it): a different origin
/// that merely starts the same (`http://a.test:8080` against `http://a.test`) is not.
fn of_site(url: &str, site: &str) -> bool {
    url.strip_prefix(site)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// One script call on one site's slot (every key under the site's hash tag), kept as its
/// parts so that it can travel in a pipeline with others and, when a node refuses it there,
/// go again on its own.
struct Call<'a> {
    script: &'a Script,
    slot: u16,
    keys: Vec<String>,
    args: Vec<Vec<u8>>,
}

impl<'a> Call<'a> {
    fn new(script: &'a Script, keys: Vec<String>) -> Call<'a> {
        let slot = keys.first().map_or(0, |k| key_slot(k.as_bytes()));
        Call {
            script,
            slot,
            keys,
            args: Vec::new(),
        }
    }

    fn arg(&mut self, arg: impl redis::ToRedisArgs) -> &mut Self {
        arg.write_redis_args(&mut self.args);
        self
    }

    /// `EVALSHA`: what a pipeline carries (a node that does not know the script says so).
    fn eval(&self) -> Cmd {
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(self.script.get_hash()).arg(self.keys.len());
        for key in &self.keys {
            cmd.arg(key);
        }
        for arg in &self.args {
            cmd.arg(arg.as_slice());
        }
        cmd
    }

    /// The call alone, routed by the client and loading the script where it is missing.
    fn invocation(&self) -> redis::ScriptInvocation<'a> {
        let mut call = self.script.prepare_invoke();
        for key in &self.keys {
            call.key(key);
        }
        for arg in &self.args {
            call.arg(arg.as_slice());
        }
        call
    }
}

/// The cluster slot of `key`: CRC16 (XMODEM) of its hash tag (the part between the first `{`
/// and the next `}`, when not empty) or of the whole key, modulo 16,384 (Redis's rule).
fn key_slot(key: &[u8]) -> u16 {
    let tag = key
        .iter()
        .position(|&b| b == b'{')
        .and_then(|open| {
            let rest = &key[open + 1..];
            rest.iter()
                .position(|&b| b == b'}')
                .map(|close| &rest[..close])
        })
        .filter(|tag| !tag.is_empty())
        .unwrap_or(key);
    crc16::State::<crc16::XMODEM>::calculate(tag) % 16_384
}

/// Which master serves which slots, as `CLUSTER SLOTS` said at the last read: only how a
/// round's calls are grouped into one pipeline per node. A map out of date costs a call a
/// redirect (the client follows it) and a read of the map, never a wrong answer.
#[derive(Debug, Default)]
struct SlotMap {
    /// Slot ranges (first, last, inclusive) and the index of their node in `nodes`.
    ranges: Vec<(u16, u16, usize)>,
    nodes: Vec<String>,
    /// To be read again before the next grouping.
    stale: bool,
}

impl SlotMap {
    /// The map from a `CLUSTER SLOTS` answer (`[[first, last, [ip, port, ...], replicas...]]`);
    /// an answer of another shape gives an empty map (every call its own group).
    fn parse(answer: &Value) -> SlotMap {
        let mut map = SlotMap::default();
        let Value::Array(rows) = answer else {
            return map;
        };
        for row in rows {
            let Value::Array(row) = row else { continue };
            let (Some(Value::Int(first)), Some(Value::Int(last)), Some(Value::Array(master))) =
                (row.first(), row.get(1), row.get(2))
            else {
                continue;
            };
            let host = match master.first() {
                Some(Value::BulkString(b)) => String::from_utf8_lossy(b).into_owned(),
                Some(Value::SimpleString(s)) => s.clone(),
                _ => continue,
            };
            let Some(Value::Int(port)) = master.get(1) else {
                continue;
            };
            let (Ok(first), Ok(last)) = (u16::try_from(*first), u16::try_from(*last)) else {
                continue;
            };
            let node = format!("{host}:{port}");
            let i = map
                .nodes
                .iter()
                .position(|n| *n == node)
                .unwrap_or_else(|| {
                    map.nodes.push(node);
                    map.nodes.len() - 1
                });
            map.ranges.push((first, last, i));
        }
        map
    }

    /// The node serving `slot`, if the map knows it.
    fn node(&self, slot: u16) -> Option<usize> {
        self.ranges
            .iter()
            .find(|(first, last, _)| (*first..=*last).contains(&slot))
            .map(|(_, _, node)| *node)
    }
}

/// Sends script calls together, one pipeline per node (a call on a slot the map does not
/// place goes alone), and returns the answers in order. A call a node refused in its pipeline
/// (a script it does not know yet, after a restart or a failover) goes again on its own, where
/// the client loads the script. Every call may run twice when a round is retried (each script
/// is written so that it may), which is why a pipeline needs no transaction.
async fn invoke_all<T: redis::FromRedisValue + Send>(
    conn: &mut Conn,
    calls: &[Call<'_>],
) -> Result<Vec<T>, SharedError> {
    if calls.is_empty() {
        return Ok(Vec::new());
    }
    let groups = conn.group(calls).await;
    conn.trips += groups.len() as u64;
    let sent = groups.iter().map(|group| {
        let mut pipe = Pipeline::with_capacity(group.len());
        for &i in group {
            pipe.add_command(calls[i].eval());
        }
        let slot = calls[group[0]].slot;
        let mut handle = conn.kind.clone();
        async move { handle.pipeline_on(pipe, group.len(), slot).await }
    });
    let replies = match futures::future::try_join_all(sent).await {
        Ok(replies) => replies,
        Err(e) => {
            // A slot that moved makes the client fail the whole pipeline: read the map again
            // before the round is retried.
            conn.slots.stale = true;
            return Err(e.into());
        }
    };
    let mut answers: Vec<Option<Value>> = vec![None; calls.len()];
    let mut again = Vec::new();
    for (group, values) in groups.iter().zip(replies) {
        for (&i, value) in group.iter().zip(values) {
            match value {
                Value::ServerError(_) => again.push(i),
                value => answers[i] = Some(value),
            }
        }
    }
    if !again.is_empty() {
        conn.trips += again.len() as u64;
        let alone = again.iter().map(|&i| {
            let call = calls[i].invocation();
            let mut handle = conn.kind.clone();
            async move { call.invoke_async::<Value>(&mut handle).await }
        });
        let values = futures::future::try_join_all(alone).await?;
        for (&i, value) in again.iter().zip(values) {
            answers[i] = Some(value);
        }
    }
    answers
        .into_iter()
        .map(|value| {
            T::from_redis_value(value.unwrap_or(Value::Nil))
                .map_err(|e| SharedError::from(redis::RedisError::from(e)))
        })
        .collect()
}

/// `nodes` as an error shows them: passwords left out (they would land in terminals and logs).
fn shown_nodes(nodes: &[String]) -> String {
    nodes
        .iter()
        .map(|n| without_password(n))
        .collect::<Vec<_>>()
        .join(",")
}

/// `nodes` with `password` in each URL that carries none (a URL's own wins): how a password
/// given outside the command line reaches the client. Error messages show the URLs through
/// [`without_password`], so it is never echoed.
pub fn with_password(nodes: &[String], password: &str) -> Result<Vec<String>, SharedError> {
    nodes
        .iter()
        .map(|node| {
            let bad = |reason: &str| SharedError::BadUrl {
                url: without_password(node),
                reason: reason.to_string(),
            };
            let mut url = url::Url::parse(node).map_err(|e| bad(&e.to_string()))?;
            if url.password().is_some() {
                return Ok(node.clone());
            }
            url.set_password(Some(password))
                .map_err(|()| bad("a password cannot be given to it"))?;
            Ok(url.to_string())
        })
        .collect()
}

/// A Redis URL with its password, if any, replaced by `***`.
fn without_password(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            // A URL with a password has a host: setting another cannot fail.
            let _ = parsed.set_password(Some("***"));
            parsed.to_string()
        }
        _ => url.to_string(),
    }
}

/// The fewest live replicas any master with slots has, from `CLUSTER NODES`' lines (`id addr
/// flags master-id ping pong epoch link slot...`).
fn fewest_replicas(nodes: &str) -> usize {
    let rows: Vec<Vec<&str>> = nodes
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|f| f.len() >= 8)
        .collect();
    let has = |f: &[&str], flag: &str| f[2].split(',').any(|x| x == flag);
    let live = |f: &[&str]| !has(f, "fail") && !has(f, "fail?") && !has(f, "handshake");
    rows.iter()
        .filter(|f| has(f, "master") && live(f) && f.len() > 8)
        .map(|m| {
            rows.iter()
                .filter(|r| has(r, "slave") && live(r) && r[3] == m[0])
                .count()
        })
        .min()
        .unwrap_or(0)
}

/// A connection to the Redis at `nodes`: a cluster client when the first node runs in
/// cluster mode, a plain connection to it otherwise.
async fn open(nodes: &[String]) -> Result<ConnKind, SharedError> {
    let unreachable = |reason: String| SharedError::Unreachable {
        nodes: shown_nodes(nodes),
        reason,
    };
    let Some(first) = nodes.first() else {
        return Err(SharedError::NoNodes);
    };
    Ok(match cluster_enabled(first).await {
        Ok(true) => {
            let client = redis::cluster::ClusterClient::builder(nodes.iter().map(String::as_str))
                .connection_timeout(PATIENCE)
                .response_timeout(PATIENCE)
                .build()?;
            ConnKind::Cluster(
                client
                    .get_async_connection()
                    .await
                    .map_err(|e| unreachable(e.to_string()))?,
            )
        }
        Ok(false) => {
            let client = redis::Client::open(first.as_str())?;
            ConnKind::Single(
                client
                    .get_multiplexed_async_connection()
                    .await
                    .map_err(|e| unreachable(e.to_string()))?,
            )
        }
        // Something answered, but not as Redis does (an HTTP port, say): said so, not as
        // the parser's "Unexpected `84`" lines.
        Err(e) if e.kind() == redis::ErrorKind::Parse => {
            return Err(unreachable(
                "what answers there is not a Redis server (its reply does not parse as Redis's)"
                    .to_string(),
            ));
        }
        Err(e) => return Err(unreachable(e.to_string())),
    })
}

/// Whether the server at `url` runs in cluster mode (`INFO cluster`).
async fn cluster_enabled(url: &str) -> redis::RedisResult<bool> {
    let client = redis::Client::open(url)?;
    let mut conn = tokio::time::timeout(PATIENCE, client.get_multiplexed_async_connection())
        .await
        .map_err(|_| {
            redis::RedisError::from(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "no answer in time",
            ))
        })??;
    let info: String = redis::cmd("INFO")
        .arg("cluster")
        .query_async(&mut conn)
        .await?;
    Ok(info.lines().any(|l| l.trim() == "cluster_enabled:1"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fewest_replicas_of_a_master_with_slots_count_live_replicas_only() {
        let nodes = "\
a1 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5460
a2 127.0.0.1:7001@17001 master - 0 0 2 connected 5461-10922
a3 127.0.0.1:7002@17002 master - 0 0 3 connected 10923-16383
r1 127.0.0.1:7003@17003 slave a1 0 0 1 connected
r2 127.0.0.1:7004@17004 slave a2 0 0 2 connected
r3 127.0.0.1:7005@17005 slave a3 0 0 3 connected
";
        assert_eq!(fewest_replicas(nodes), 1);
        // a3 died and r3 took over: r3 is a master with no replica now.
        let after = nodes
            .replace(
                "a3 127.0.0.1:7002@17002 master",
                "a3 127.0.0.1:7002@17002 master,fail",
            )
            .replace(
                "r3 127.0.0.1:7005@17005 slave a3 0 0 3 connected",
                "r3 127.0.0.1:7005@17005 master - 0 0 4 connected 10923-16383",
            );
        assert_eq!(fewest_replicas(&after), 0);
        // A failed replica does not count; masters without slots are not asked.
        let failed = nodes.replace("slave a2", "slave,fail a2");
        assert_eq!(fewest_replicas(&failed), 0);
        assert_eq!(fewest_replicas("x 1:1@1 master - 0 0 1 connected\n"), 0);
        assert_eq!(fewest_replicas(""), 0);
    }

    #[test]
    fn the_crawl_is_paused_by_the_logs_last_pause_or_resume_when_it_is_a_pause() {
        let log = |commands: &[&str]| -> Vec<SharedCommand> {
            commands
                .iter()
                .zip(0..)
                .map(|(c, number)| SharedCommand {
                    number,
                    at_ms: 1_000 * number,
                    from: format!("m{number}"),
                    command: (*c).to_string(),
                })
                .collect()
        };
        let paused = |commands: &[&str]| paused_by(&log(commands)).map(SharedCommand::said);
        assert_eq!(paused(&[]), None);
        assert_eq!(paused(&["pause\tapi", "resume\tkey"]), None);
        assert_eq!(
            paused(&["pause\tapi", "delay 300 ms\tport", "stop"]).as_deref(),
            Some("by m0 (api) at Thu, 01 Jan 1970 00:00:00 GMT")
        );
        assert_eq!(
            paused(&["resume", "pause"]).as_deref(),
            Some("by m1 at Thu, 01 Jan 1970 00:00:01 GMT")
        );
    }

    #[test]
    fn a_password_given_apart_goes_into_urls_without_one_and_is_never_shown() {
        let nodes = [
            "redis://127.0.0.1:7000".to_string(),
            "redis://:own@127.0.0.1:7001".to_string(),
        ];
        let with = with_password(&nodes, "p@ss word").expect("URLs");
        let info = redis::IntoConnectionInfo::into_connection_info(with[0].as_str()).expect("info");
        assert_eq!(info.redis_settings().password(), Some("p@ss word"));
        assert_eq!(with[1], nodes[1], "a URL's own password wins");
        assert_eq!(
            shown_nodes(&with),
            "redis://:***@127.0.0.1:7000,redis://:***@127.0.0.1:7001"
        );
        let e = with_password(&["unix:///tmp/r.sock".into()], "secret").expect_err("no host");
        assert!(!e.to_string().contains("secret"), "{e}");
    }

    #[test]
    fn a_referrer_is_of_a_site_only_on_its_very_origin() {
        let site = "http://127.0.0.1:8080";
        for on in [
            "http://127.0.0.1:8080",
            "http://127.0.0.1:8080/",
            "http://127.0.0.1:8080/a?b",
        ] {
            assert!(of_site(on, site), "{on}");
        }
        for off in [
            "http://127.0.0.1:80801/",
            "http://127.0.0.1:8080.evil/",
            "https://127.0.0.1:8080/",
            "http://127.0.0.1/",
            "http://user@127.0.0.1:8080/",
        ] {
            assert!(!of_site(off, site), "{off}");
        }
    }

    #[test]
    fn crawl_ids_are_safe_in_a_key() {
        for good in ["docs", "crawl-2026.11_a", &"x".repeat(64)] {
            assert!(CrawlId::new(good).is_ok(), "{good}");
        }
        for bad in ["", "a b", "a/b", "a{b}", "a|b", "é", &"x".repeat(65)] {
            let e = CrawlId::new(bad).expect_err(bad);
            assert!(e.to_string().contains("letters, digits"), "{e}");
        }
    }

    #[test]
    fn an_entry_reads_back_as_written() {
        let e = Entry {
            url: "http://127.0.0.1:8080/a?b=c".into(),
            depth: 3,
            hops: 1,
            referrer: Some("http://127.0.0.1:8080/".into()),
        };
        assert_eq!(Entry::decode(&e.encode()), Some(e.clone()));
        let seed = Entry {
            referrer: None,
            ..e
        };
        assert_eq!(Entry::decode(&seed.encode()), Some(seed.clone()));
        assert!(seed.encode().starts_with(&format!(
            "{:016x}\t3\t1\thttp://127.0.0.1:8080/a?b=c\t",
            crate::frontier::fingerprint(&seed.url)
        )));
        assert_eq!(Entry::decode("x\t1\thttp://a/\t"), None);
        assert_eq!(Entry::decode("0123456789abcdef\tx\t1\thttp://a/\t"), None);
        assert_eq!(Entry::decode("0123456789abcdef\t1\t1\t\t"), None);
        assert_eq!(Entry::decode("1\t1\thttp://a/\t"), None, "no fingerprint");
    }

    #[test]
    fn a_key_lands_on_the_slot_redis_computes() {
        // Each figure is what `CLUSTER KEYSLOT` answered on redis-server 7.
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"somekey"), 11058);
        assert_eq!(key_slot(b"{ct:x:http://127.0.0.1:8080}:q"), 156);
        // An empty tag is no tag: the whole key counts; only the first tag counts.
        assert_eq!(key_slot(b"a{}b"), 13694);
        assert_eq!(key_slot(b"{}{x}"), 3257);
        // A site's keys share one slot, whatever follows the tag.
        assert_eq!(
            key_slot(b"ct:{c|http://a.test}:q"),
            key_slot(b"ct:{c|http://a.test}:seen")
        );
    }

    #[test]
    fn the_slot_map_reads_cluster_slots_and_places_every_slot_it_names() {
        let node = |host: &str, port: i64| {
            Value::Array(vec![
                Value::BulkString(host.as_bytes().to_vec()),
                Value::Int(port),
                Value::BulkString(b"id".to_vec()),
            ])
        };
        let answer = Value::Array(vec![
            Value::Array(vec![
                Value::Int(0),
                Value::Int(5460),
                node("127.0.0.1", 7000),
            ]),
            Value::Array(vec![
                Value::Int(5461),
                Value::Int(10922),
                node("127.0.0.1", 7001),
                node("127.0.0.1", 7004),
            ]),
            Value::Array(vec![
                Value::Int(10923),
                Value::Int(16383),
                node("127.0.0.1", 7000),
            ]),
            // Not a row: skipped.
            Value::Int(3),
        ]);
        let map = SlotMap::parse(&answer);
        assert_eq!(map.nodes, ["127.0.0.1:7000", "127.0.0.1:7001"]);
        assert_eq!(map.node(0), Some(0));
        assert_eq!(map.node(5461), Some(1));
        assert_eq!(map.node(10922), Some(1));
        assert_eq!(map.node(16383), Some(0));
        assert_eq!(SlotMap::parse(&Value::Nil).node(0), None);
    }
}
