//! A member's agent: the task between one crawltop process and the shared crawl in Redis.
//!
//! It owns this member's leases: it takes sites up to its fair share (the sites with work,
//! divided by the live members), pulls their queued URLs in batches and hands them to the
//! member, renews the leases, pushes the URLs the member discovered, finishes what the member
//! reports done, gives sites back when it holds more than its share while another member has
//! room (the member drains a site first: nothing of it in flight; the share is rounded up, or,
//! while another member holds less than the rounded-down share, exact, so that every member
//! gets a site when there are at least as many as members), and at a stop hands every
//! site and its unfinished URLs back at once. When Redis stops answering it says so, waits with
//! backoff and goes on with the same request: nothing is dropped. The one exception is a member
//! that leaves while Redis does not answer ([`Agent::leaving`]): its agent gives up at once, with
//! the request under way and its retries, hands nothing back and ends with
//! [`AgentError::Unanswered`]; its leases run out by themselves (Redis's clock), and what it
//! pulled and did not finish goes back to the crawl with them. It never fetches, never decides
//! scope, and never blocks the member: all traffic is by channel.
//!
//! A look costs a bounded number of requests whatever the number of sites: the count of sites
//! with work and a random sample of them (the crawl's list of active sites), then at most
//! [`LOOK_TRIES`] leases tried (two when the members' heartbeats say every site with work is
//! held); a site whose queue ran dry here is retired from that list. Once
//! a second it also sweeps [`SWEEP_SITES`] sites of the crawl for work the list lost (a member
//! that died between a push and its listing), and only with nothing held and nothing listed
//! does it ask whether the crawl ended (a pass over every site, once at the end).

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::shared::{
    Entry, Heartbeat, Lease, Member, Previous, Pulled, SharedCommand, SharedCrawl, SharedError,
};

/// How an agent paces itself.
#[derive(Debug, Clone, Copy)]
pub struct AgentConfig {
    /// The lease's length (`--lease-ms`); leases are renewed every third of it.
    pub lease: Duration,
    /// URLs pulled from a site at once.
    pub batch: usize,
    /// Most sites held at once, whatever the fair share (each held site costs a renewal every
    /// third of the lease); the member raises it while its workers are free.
    pub max_sites: usize,
    /// How often an idle agent looks for new sites and for the crawl-wide end.
    pub idle_poll: Duration,
}

impl Default for AgentConfig {
    fn default() -> AgentConfig {
        AgentConfig {
            lease: Duration::from_secs(10),
            batch: 64,
            max_sites: 16,
            idle_poll: Duration::from_millis(200),
        }
    }
}

/// What the member tells its agent.
#[derive(Debug)]
pub enum ToAgent {
    /// URLs discovered on a site (admitted by its seen set crawl-wide, or not).
    Push { site: String, entries: Vec<Entry> },
    /// Pulled URLs that ended (fetched, failed, forbidden): finished crawl-wide, with how long
    /// until the site may next be contacted (it travels with the lease). `waited` of them were
    /// told of before ([`ToAgent::Waiting`]). With no entries, the next contact alone: a
    /// Retry-After or backoff, stored when the member gets it.
    Done {
        site: String,
        entries: Vec<Entry>,
        waited: usize,
        next_in: Option<Duration>,
    },
    /// `n` pulled URLs of a site ended here and wait for a checkpoint of the member's folder
    /// before they are finished crawl-wide ([`ToAgent::Done`] follows): no longer the member's
    /// to fetch, so the site's next batch may come meanwhile (a checkpoint a second, or one slow
    /// fetch holding the commit order, would otherwise starve every site the member holds).
    Waiting { site: String, n: usize },
    /// A held site's politeness state and its next contact, to travel with its lease.
    Politeness {
        site: String,
        state: String,
        next_in: Duration,
    },
    /// How many sites the member can serve at once now.
    Capacity(usize),
    /// `n` URLs pulled from a site were already queued at the member (pulled twice: a pull
    /// Redis lost in a failover): they end with their first copy.
    Skipped { site: String, n: usize },
    /// A site asked back ([`FromAgent::GiveBack`]) has nothing in flight any more: its lease
    /// and its unfinished URLs go back to the crawl (its politeness was sent just before).
    Release { site: String },
    /// The member's heartbeat and what to add to the crawl-wide counters.
    Beat {
        beat: Heartbeat,
        counts: Vec<(&'static str, i64)>,
    },
    /// A command for the whole crawl (pause, resume, delay N, workers N, stop), given here.
    Command(String),
    /// Hand everything back and end.
    Stop,
}

/// What the agent tells its member.
#[derive(Debug, PartialEq)]
pub enum FromAgent {
    /// A site newly held, with the politeness state its last holder stored (none for a site
    /// no one held before), how long until it may be contacted by what was stored, and how its
    /// last holder left it (one that did not hand it back may have contacted it since: the
    /// member waits a whole delay too). Comes before its URLs.
    Leased {
        site: String,
        politeness: Option<String>,
        wait: Duration,
        previous: Previous,
    },
    /// URLs of a site this member holds, to fetch; URLs taken off its queue past the crawl's
    /// `--max-pages-per-site` or `--max-pages`, to end as ignored (they are not in flight);
    /// and shorter paths found to URLs of the site pulled before, for a row still queued.
    Pulled {
        site: String,
        entries: Vec<Entry>,
        over_site: Vec<Entry>,
        over_crawl: Vec<Entry>,
        lowered: Vec<Entry>,
    },
    /// A site's lease was lost (it ran out while Redis was away or this member was stalled,
    /// and another member may hold it now): its pulled URLs will be fetched by another member;
    /// this one should drop them unfetched.
    Lost { site: String },
    /// The lease of a held site stands at least until `until`: two thirds of a lease after the
    /// request that took or renewed it was sent (by this process's monotonic clock). The member
    /// contacts the site only before then: a member stalled past its lease (stopped, a paused
    /// machine) must not fetch from a site another member may hold now before its agent has
    /// renewed the lease or learned it is lost.
    Fresh {
        site: String,
        until: std::time::Instant,
    },
    /// The ends of `ends` pulled URLs the member sent are stored crawl-wide (on a replica too,
    /// when the masters have replicas).
    Stored { ends: usize },
    /// A held site was handed back: its queue ran dry here.
    Released { site: String },
    /// This member holds more than its share while another has room: drop the site's queued
    /// URLs (they go back to its shared queue), let what is in flight end, then
    /// [`ToAgent::Release`] it.
    GiveBack { site: String },
    /// A command from the crawl's command log (given by any member or `ctl`), in log order;
    /// `replayed` when it was given before this agent started (a joining member catches up
    /// with the crawl's pause and delay, and ignores an old stop).
    Command {
        command: SharedCommand,
        replayed: bool,
    },
    /// After the commands replayed as the agent started: the pause that holds the crawl, if
    /// one does (the log's last pause or resume is a pause), for the member to say it joined
    /// paused, by whom and when.
    JoinedPaused(SharedCommand),
    /// The crawl's members and its crawl-wide counters, read about once a second.
    Members {
        members: Vec<Member>,
        counters: BTreeMap<String, i64>,
        /// Requests this member's agent sent to Redis so far.
        round_trips: u64,
    },
    /// The crawl's seeds, every member's, when a member brought new ones (the scope widens).
    Seeds(Vec<String>),
    /// Redis does not answer: no new work until it does.
    Fault(String),
    /// Redis answers again.
    Recovered,
    /// Nothing is queued, leased or in flight anywhere: the crawl has ended for everyone.
    Finished,
}

/// Why an agent ended without handing its sites back.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Shared(#[from] SharedError),
    /// Its member left while Redis did not answer (its last error): nothing went back.
    #[error("{0}")]
    Unanswered(String),
}

/// A running agent.
#[derive(Debug)]
pub struct Agent {
    pub to: mpsc::UnboundedSender<ToAgent>,
    pub from: mpsc::UnboundedReceiver<FromAgent>,
    pub task: JoinHandle<Result<(), AgentError>>,
    /// Cancelled with the [`ToAgent::Stop`] its member sends as it leaves: read apart from the
    /// inbox, which an agent retrying Redis does not read. While Redis answers, the stop is
    /// handled in its turn (what the member sent before it first, then the hand-back); while it
    /// does not, the agent ends at once, handing nothing back ([`AgentError::Unanswered`]).
    pub leaving: CancellationToken,
    /// How long its leases last without a renewal ([`AgentConfig::lease`]).
    pub lease: Duration,
    /// Stops the agent where it is, handing nothing back, as a SIGKILL of its member would (its
    /// leases run out): how the tests kill a member inside one process. Aborting `task` cannot,
    /// as the agent runs on a thread of its own.
    pub kill: futures::future::AbortHandle,
}

/// Starts the agent of `shared` (already joined to its crawl) on a thread of its own, with a
/// runtime of its own and a new connection made there: the Redis client's tasks hand each
/// request to one another on that one thread, not across the crawl's worker threads (about
/// 5 % less CPU a page, measured), and a crawl whose workers keep the runtime busy does not
/// hold up its lease renewals.
pub fn spawn(mut shared: SharedCrawl, cfg: AgentConfig) -> Agent {
    let (to, inbox) = mpsc::unbounded_channel();
    let (outbox, from) = mpsc::unbounded_channel();
    let (kill, killed) = futures::future::AbortHandle::new_pair();
    let leaving = CancellationToken::new();
    let left = leaving.clone();
    let (away, unanswered) = watch::channel(None);
    let task = tokio::task::spawn_blocking(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(SharedError::Runtime)?;
        let agent = async move {
            shared.reconnect().await?;
            Inner {
                shared,
                cfg,
                outbox,
                held: BTreeMap::new(),
                floor: cfg.max_sites,
                members: Vec::new(),
                scanned: None,
                swept: 0,
                share: Share::default(),
                away,
                commands_read: 0,
                caught_up: false,
                seeds_seen: 0,
                recovering: false,
                given_back: HashMap::new(),
            }
            .run(inbox)
            .await
        };
        // The agent runs until it ends, or until its member leaves while Redis does not
        // answer: then the request under way and its retries are dropped where they stand.
        let agent = async move {
            tokio::select! {
                biased;
                ended = agent => Ok(ended?),
                e = given_up(left, unanswered) => Err(AgentError::Unanswered(e)),
            }
        };
        // Killed: the agent's state and its connection are dropped with the runtime, as they
        // would be with the process.
        runtime
            .block_on(futures::future::Abortable::new(agent, killed))
            .unwrap_or(Ok(()))
    });
    Agent {
        to,
        from,
        task,
        leaving,
        lease: cfg.lease,
        kill,
    }
}

/// Resolves once the member has left while Redis does not answer (now or later), with the
/// last error; never, once the agent has ended.
async fn given_up(leaving: CancellationToken, mut away: watch::Receiver<Option<String>>) -> String {
    leaving.cancelled().await;
    match away.wait_for(Option::is_some).await {
        Ok(e) => e.clone().unwrap_or_default(),
        Err(_) => std::future::pending().await,
    }
}

/// Runs a request until Redis answers (nothing is dropped while it is away), saying once that
/// it is away and once that it is back. A member that leaves meanwhile does not wait for it:
/// [`spawn`] drops the agent where it stands ([`given_up`]).
macro_rules! retry {
    ($agent:ident, $request:expr) => {{
        let mut wait = Duration::from_millis(50);
        loop {
            match $request.await {
                Ok(v) => {
                    $agent.answered();
                    break v;
                }
                Err(e) => $agent.fault(&e, &mut wait).await,
            }
        }
    }};
}

/// How long a round waits for more of the member's messages after the first.
const GATHER: Duration = Duration::from_millis(20);

/// Longest wait between two tries while Redis is away.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

struct Inner {
    shared: SharedCrawl,
    cfg: AgentConfig,
    outbox: mpsc::UnboundedSender<FromAgent>,
    /// Sites this member holds.
    held: BTreeMap<String, Held>,
    /// The least [`AgentConfig::max_sites`] may be lowered to by the member's capacity.
    floor: usize,
    /// The crawl's members at the last read (every look).
    members: Vec<Member>,
    /// When the sites were last counted: a member that holds its share counts them once a
    /// second, not at every look.
    scanned: Option<Instant>,
    /// Where the sweep of the crawl's sites goes on from (`SSCAN`'s cursor).
    swept: u64,
    /// What this member's fair share is made of.
    share: Share,
    /// Redis does not answer: its last error, until a request is answered again. Watched
    /// beside the agent too: a member leaving meanwhile does not wait for Redis.
    away: watch::Sender<Option<String>>,
    /// Commands of the crawl's log already passed on.
    commands_read: u64,
    /// The log was read once: what comes now is new.
    caught_up: bool,
    /// How many seeds the crawl had at the last read.
    seeds_seen: u64,
    /// Redis answered after a fault: the leases are to be checked before work goes on.
    recovering: bool,
    /// Sites given back for another member's share, and when: not taken again for
    /// [`GIVEN_BACK_HOLD`] (this member has room once it gave them, and would often win them
    /// back before the member they were given for).
    given_back: HashMap<String, Instant>,
}

/// A site this member holds.
#[derive(Debug, Clone, Copy, Default)]
struct Held {
    /// Pulled URLs not finished crawl-wide yet.
    left: usize,
    /// Of `left`, those ended at the member and waiting for its checkpoint
    /// ([`ToAgent::Waiting`]).
    waiting: usize,
    /// Its queue was found empty with URLs still out: not asked again until the member has
    /// ended them.
    dry: bool,
    /// Asked back ([`FromAgent::GiveBack`]): no more pulls; released when the member says.
    leaving: bool,
}

/// What a member's fair share of the sites is made of, at the last look.
#[derive(Debug, Clone, Copy, Default)]
struct Share {
    /// Live members, this one included.
    live: usize,
    /// Sites with work (queued or pulled URLs) anywhere.
    active: usize,
    /// Another live member holds fewer sites than the fair share.
    others_room: bool,
    /// Sites the other live members hold, by their last heartbeats.
    others_hold: usize,
    /// The fewest sites another live member holds (`usize::MAX` with none).
    others_least: usize,
    /// This member's place among the live members, by id: every member ranks them the same.
    rank: usize,
}

impl Share {
    /// The members (this one holding `held`) hold at least as many sites as have work: none
    /// is left to take.
    fn all_held(&self, held: usize) -> bool {
        self.others_hold + held >= self.active
    }

    /// The least share: the sites with work divided by the live members, rounded down.
    fn least(&self) -> usize {
        self.active / self.live.max(1)
    }

    /// This member's exact share: the least, plus one for the first `active % live` members
    /// by id, so that the members' shares add up to the sites with work.
    fn exact(&self) -> usize {
        self.least() + usize::from(self.rank < self.active % self.live.max(1))
    }
}

/// How long a site this member gave back is left to the others before it may take it again:
/// the member it was given back for has room and looks every `idle_poll`, and within a second
/// sees in the heartbeats that a site is free (then it tries every free site it samples).
const GIVEN_BACK_HOLD: Duration = Duration::from_secs(3);

/// How often the counters are read and the members passed on (the members are read at every
/// look).
const MEMBERS_EVERY: Duration = Duration::from_secs(1);

/// Most sites a look samples from the crawl's sites with work, and most leases it tries: a
/// look's cost does not grow with the crawl. (The sample may hold sites other members hold;
/// with more sites with work than that, each look samples others.)
pub const LOOK_TRIES: usize = 16;

/// Leases a look tries when the live members' heartbeats say they hold every site with work:
/// a few, as a heartbeat may be a second old (a site given back since), and a member that
/// died is not counted.
const LOOK_TRIES_ALL_HELD: usize = 2;

/// Sites of the crawl whose backlog the sweep reads each [`MEMBERS_EVERY`] (about; `SSCAN`'s
/// count is a hint): a pass over S sites takes about S / (16 x members) seconds.
pub const SWEEP_SITES: usize = 16;

impl Inner {
    async fn run(mut self, mut inbox: mpsc::UnboundedReceiver<ToAgent>) -> Result<(), SharedError> {
        let mut renew = tokio::time::interval(self.cfg.lease / 3);
        let mut look = tokio::time::interval(self.cfg.idle_poll);
        let mut members = tokio::time::interval(MEMBERS_EVERY);
        renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        look.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        members.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // What was given before this member joined, before anything else.
        self.read_commands().await;
        // Who else is crawling, so that the first look takes a fair share, not every site.
        let known = retry!(self, self.shared.members());
        self.count_members(&known);
        self.members = known;
        loop {
            tokio::select! {
                msg = inbox.recv() => {
                    // Everything waiting goes in one round: pushes and ends merged by site. A
                    // moment's wait first lets a busy member's messages gather: fewer, fuller
                    // rounds (round trips, wake-ups) for a few milliseconds of delay.
                    if msg.is_some() {
                        tokio::time::sleep(GATHER).await;
                    }
                    let mut batch: Vec<ToAgent> = msg.into_iter().collect();
                    while let Ok(more) = inbox.try_recv() {
                        batch.push(more);
                    }
                    if self.handle(batch).await {
                        return self.hand_back().await;
                    }
                }
                _ = renew.tick() => self.renew().await,
                _ = look.tick() => {
                    self.read_commands().await;
                    self.read_seeds().await;
                    let known = retry!(self, self.shared.members());
                    self.count_members(&known);
                    self.members = known;
                    self.look().await;
                    self.rebalance();
                }
                _ = members.tick() => {
                    let (next, _) = retry!(self, self.shared.sweep(self.swept, SWEEP_SITES));
                    self.swept = next;
                    let counters = retry!(self, self.shared.counters());
                    let round_trips = self.shared.round_trips();
                    let _ = self.outbox.send(FromAgent::Members {
                        members: self.members.clone(),
                        counters,
                        round_trips,
                    });
                }
            }
            if self.recovering {
                self.recover().await;
            }
        }
    }

    /// A round of messages from the member, in one go: every push and every end (merged by
    /// site, pushes before ends), then the rest in order. Pushes before ends keeps the
    /// crawl-wide end true: a page is never finished before the links it led to are queued.
    /// Returns true when the member said stop (or is gone): the caller hands back.
    async fn handle(&mut self, batch: Vec<ToAgent>) -> bool {
        let mut stop = batch.is_empty();
        let mut pushes: BTreeMap<String, Vec<Entry>> = BTreeMap::new();
        let mut dones: BTreeMap<String, (Vec<Entry>, Option<Duration>)> = BTreeMap::new();
        let mut waited: BTreeMap<String, usize> = BTreeMap::new();
        let mut waits: BTreeMap<String, usize> = BTreeMap::new();
        let mut rest = Vec::new();
        for msg in batch {
            match msg {
                ToAgent::Push { site, entries } => pushes.entry(site).or_default().extend(entries),
                ToAgent::Done {
                    site,
                    entries,
                    waited: w,
                    next_in,
                } => {
                    *waited.entry(site.clone()).or_default() += w;
                    let d = dones.entry(site).or_default();
                    d.0.extend(entries);
                    d.1 = next_in.or(d.1);
                }
                // Counted before the round's ends, which may name some of the same URLs.
                ToAgent::Waiting { site, n } => *waits.entry(site).or_default() += n,
                ToAgent::Stop => stop = true,
                other => rest.push(other),
            }
        }
        let pushes: Vec<(String, Vec<Entry>)> = pushes.into_iter().collect();
        let dones: Vec<(String, Vec<Entry>, Option<Duration>)> = dones
            .into_iter()
            .map(|(site, (entries, next_in))| (site, entries, next_in))
            .collect();
        // Pushes before ends, in as few round trips as that order allows (a site's own links
        // and its ends in one atomic call; links across sites first and, with replicas, on one
        // of them before any end: a failover must not lose a queued URL whose referrer is done).
        let (_, ends) = retry!(self, self.shared.push_and_finish(&pushes, &dones));
        // Shorter paths to URLs pulled here, before the member fetches them.
        for ((site, ..), ended) in dones.iter().zip(&ends) {
            if ended.ours && !ended.lowered.is_empty() {
                let _ = self.outbox.send(FromAgent::Pulled {
                    site: site.clone(),
                    entries: Vec::new(),
                    over_site: Vec::new(),
                    over_crawl: Vec::new(),
                    lowered: ended.lowered.clone(),
                });
            }
        }
        let ours = ends.iter().map(|e| e.ours);
        // The held sites running low, pulled together after the round's other messages.
        let mut low = Vec::new();
        for (site, n) in waits {
            if self.waiting(&site, n) {
                low.push(site);
            }
        }
        for ((site, entries, _), ours) in dones.iter().zip(ours) {
            let w = waited.get(site).copied().unwrap_or(0);
            if self.after_done(site, entries.len(), w, ours) && !low.contains(site) {
                low.push(site.clone());
            }
        }
        for msg in rest {
            match msg {
                ToAgent::Capacity(n) => self.cfg.max_sites = n.max(self.floor).max(1),
                ToAgent::Skipped { site, n } => {
                    if self.after_done(&site, n, 0, true) && !low.contains(&site) {
                        low.push(site);
                    }
                }
                ToAgent::Release { site } => self.release(site).await,
                ToAgent::Beat { beat, counts } => {
                    retry!(self, self.shared.heartbeat(&beat));
                    retry!(self, self.shared.count(&counts));
                }
                ToAgent::Command(command) => {
                    retry!(self, self.shared.command(&command));
                    self.read_commands().await;
                }
                ToAgent::Politeness {
                    site,
                    state,
                    next_in,
                } => {
                    if !retry!(self, self.shared.save_politeness(&site, &state, next_in)) {
                        self.lost(&site);
                    }
                }
                ToAgent::Push { .. }
                | ToAgent::Done { .. }
                | ToAgent::Waiting { .. }
                | ToAgent::Stop => {}
            }
        }
        self.pull_all(low).await;
        // Ends, pulls, politeness, leases: copied before the next round builds on them.
        retry!(self, self.shared.replicated());
        let ends: usize = dones.iter().map(|(_, entries, _)| entries.len()).sum();
        if ends > 0 {
            let _ = self.outbox.send(FromAgent::Stored { ends });
        }
        stop
    }

    /// The live members (beating within a lease, not gone) and whether another has room.
    fn count_members(&mut self, members: &[Member]) {
        let me = self.shared.member().to_string();
        let live: Vec<&Member> = members
            .iter()
            .filter(|m| m.id != me && !m.beat.gone && m.age < self.cfg.lease)
            .collect();
        self.share.live = live.len() + 1;
        let fair = self.fair_share();
        self.share.others_room = live.iter().any(|m| (m.beat.sites_leased as usize) < fair);
        self.share.others_hold = live.iter().map(|m| m.beat.sites_leased as usize).sum();
        self.share.others_least = live
            .iter()
            .map(|m| m.beat.sites_leased as usize)
            .min()
            .unwrap_or(usize::MAX);
        self.share.rank = live.iter().filter(|m| m.id < me).count();
    }

    /// The sites with work divided by the live members, rounded up: what each should hold.
    fn fair_share(&self) -> usize {
        self.share.active.div_ceil(self.share.live.max(1)).max(1)
    }

    /// Most sites this member takes now: its fair share, within its limit.
    fn target(&self) -> usize {
        self.fair_share().min(self.cfg.max_sites.max(1))
    }

    /// None hoards: holding more than the fair share while another member has room and no
    /// site is left to take, this member gives the surplus back (after it drained them).
    /// Rounded up, the fair shares can add up to more than the sites: with 6 sites and 4
    /// members, three holding 2 each left the fourth none for the whole crawl (audit 30). So
    /// while another live member holds less than the least share, each member keeps its exact
    /// share only ([`Share::exact`]: 2, 2, 1, 1), and the one below gets its due.
    fn rebalance(&mut self) {
        if !self.share.others_room || !self.share.all_held(self.held.len()) {
            return;
        }
        let keep = if self.share.others_least < self.share.least() {
            self.share.exact()
        } else {
            self.fair_share()
        };
        let staying = self.held.values().filter(|h| !h.leaving).count();
        let surplus = staying.saturating_sub(keep);
        let give: Vec<String> = self
            .held
            .iter()
            .rev()
            .filter(|(_, h)| !h.leaving)
            .take(surplus)
            .map(|(site, _)| site.clone())
            .collect();
        for site in give {
            if let Some(h) = self.held.get_mut(&site) {
                h.leaving = true;
            }
            let _ = self.outbox.send(FromAgent::GiveBack { site });
        }
    }

    /// Redis failed: say so once, then wait before the next try (doubling, up to a cap). When
    /// the connection itself failed, the next try goes on a new one: a Redis restarted closes
    /// every connection, and a closed one never answers again (before, the member then waited
    /// forever on a Redis that answered).
    async fn fault(&mut self, e: &SharedError, wait: &mut Duration) {
        if self.away.send_replace(Some(e.to_string())).is_none() {
            let _ = self
                .outbox
                .send(FromAgent::Fault(format!("{e}; retrying with backoff")));
        }
        tokio::time::sleep(*wait).await;
        *wait = (*wait * 2).min(MAX_BACKOFF);
        if e.connection_failed() {
            // One that cannot be made leaves the old: the next try fails as this one did and
            // comes back here.
            self.shared.mend_connection().await;
        }
    }

    /// Redis answered: the fault is over, said once the leases are checked.
    fn answered(&mut self) {
        if self.away.send_replace(None).is_some() {
            self.recovering = true;
        }
    }

    /// After a fault: every held lease is renewed (a lease that ran out meanwhile is reported
    /// lost) before the member hears that Redis answers again and takes up new work.
    async fn recover(&mut self) {
        while self.recovering {
            self.recovering = false;
            self.renew().await;
        }
        let _ = self.outbox.send(FromAgent::Recovered);
    }

    /// Passes on the crawl's seeds when their number changed since the last read.
    async fn read_seeds(&mut self) {
        let n = retry!(self, self.shared.seed_count());
        if n != self.seeds_seen {
            let seeds = retry!(self, self.shared.seeds());
            self.seeds_seen = seeds.len() as u64;
            let _ = self.outbox.send(FromAgent::Seeds(seeds));
        }
    }

    /// Passes on the commands given since the last read, in log order.
    async fn read_commands(&mut self) {
        let from = self.commands_read;
        let commands = retry!(self, self.shared.commands_since(from));
        self.commands_read += commands.len() as u64;
        let replayed = !self.caught_up;
        self.caught_up = true;
        let paused = replayed
            .then(|| super::shared::paused_by(&commands).cloned())
            .flatten();
        for command in commands {
            let _ = self.outbox.send(FromAgent::Command { command, replayed });
        }
        if let Some(pause) = paused {
            let _ = self.outbox.send(FromAgent::JoinedPaused(pause));
        }
    }

    /// `n` pulled URLs of `site` were finished, `waited` of them told of as waiting before
    /// (`ours`: the lease was still this member's). Returns whether the site wants its next
    /// batch now.
    fn after_done(&mut self, site: &str, n: usize, waited: usize, ours: bool) -> bool {
        if !ours {
            self.lost(site);
            return false;
        }
        let Some(held) = self.held.get_mut(site) else {
            return false;
        };
        held.left = held.left.saturating_sub(n);
        held.waiting = held.waiting.saturating_sub(waited).min(held.left);
        self.wants_more(site)
    }

    /// `n` pulled URLs of `site` ended at the member and wait for its checkpoint. Returns
    /// whether the site wants its next batch now.
    fn waiting(&mut self, site: &str, n: usize) -> bool {
        let Some(held) = self.held.get_mut(site) else {
            return false;
        };
        held.waiting = (held.waiting + n).min(held.left);
        self.wants_more(site)
    }

    /// The next batch before the member's runs out (the URLs it has not ended), so its queue
    /// of the site never waits on a round trip, nor on its checkpoints; a site found dry is
    /// asked again only once the member has ended all it pulled (the links those pages led to
    /// were pushed first), and released once everything pulled is finished crawl-wide.
    fn wants_more(&self, site: &str) -> bool {
        let Some(held) = self.held.get(site) else {
            return false;
        };
        let here = held.left - held.waiting;
        !held.leaving && (here == 0 || (here <= self.cfg.batch / 2 && !held.dry))
    }

    /// The next batch of each of `sites` (held), in one request a master.
    async fn pull_all(&mut self, mut sites: Vec<String>) {
        // Still held and staying (the round's other messages may have released or lost one).
        sites.retain(|site| self.held.get(site).is_some_and(|h| !h.leaving));
        if sites.is_empty() {
            return;
        }
        let batch = self.cfg.batch;
        let got = retry!(self, self.shared.pull_many(&sites, batch));
        for (site, got) in sites.into_iter().zip(got) {
            self.pulled(site, got).await;
        }
    }

    /// The next batch of a held site, or the site handed back when it has none.
    async fn pull(&mut self, site: String) {
        let batch = self.cfg.batch;
        let got = retry!(self, self.shared.pull(&site, batch));
        self.pulled(site, got).await;
    }

    /// What a pull of a held site got: its URLs go to the member; none at all (and none out)
    /// hands the site back; `None` (the lease was not ours) loses it.
    async fn pulled(&mut self, site: String, got: Option<Pulled>) {
        let left = self.held.get(&site).map_or(0, |h| h.left);
        // URLs past a limit are ended by the member at once; they are not in flight. Shorter
        // paths go before anything is released.
        let got = got.map(|p| {
            if !(p.over_site.is_empty() && p.over_crawl.is_empty() && p.lowered.is_empty()) {
                let _ = self.outbox.send(FromAgent::Pulled {
                    site: site.clone(),
                    entries: Vec::new(),
                    over_site: p.over_site,
                    over_crawl: p.over_crawl,
                    lowered: p.lowered,
                });
            }
            p.entries
        });
        match got {
            None => self.lost(&site),
            Some(entries) if entries.is_empty() && left == 0 => {
                self.held.remove(&site);
                // Off the crawl's list of sites with work first (it comes back on if a push
                // lands meanwhile), so that no one leases it for nothing.
                retry!(self, self.shared.retire(&site));
                let _ = retry!(self, self.shared.release(&site));
                let _ = self.outbox.send(FromAgent::Released { site });
            }
            Some(entries) if entries.is_empty() => {
                if let Some(h) = self.held.get_mut(&site) {
                    h.dry = true;
                }
            }
            Some(entries) => {
                let waiting = self.held.get(&site).map_or(0, |h| h.waiting);
                self.held.insert(
                    site.clone(),
                    Held {
                        left: left + entries.len(),
                        waiting,
                        dry: false,
                        leaving: false,
                    },
                );
                let _ = self.outbox.send(FromAgent::Pulled {
                    site,
                    entries,
                    over_site: Vec::new(),
                    over_crawl: Vec::new(),
                    lowered: Vec::new(),
                });
            }
        }
    }

    /// The member let go of a site (its queue ran dry, or it was given back and drained).
    async fn release(&mut self, site: String) {
        if let Some(held) = self.held.remove(&site) {
            let _ = retry!(self, self.shared.release(&site));
            if held.leaving {
                self.given_back.insert(site, Instant::now());
            }
        }
    }

    fn lost(&mut self, site: &str) {
        if self.held.remove(site).is_some() {
            let _ = self.outbox.send(FromAgent::Lost {
                site: site.to_string(),
            });
        }
    }

    async fn renew(&mut self) {
        let sites: Vec<String> = self.held.keys().cloned().collect();
        for site in sites {
            let sent = Instant::now();
            let lease = retry!(self, self.shared.lease(&site));
            if lease == Lease::Held {
                self.lost(&site);
            } else {
                self.fresh(&site, sent);
            }
        }
    }

    /// Tells the member until when a lease taken or renewed by a request sent at `sent`
    /// stands, with a third of a lease to spare (renewals come every third).
    fn fresh(&self, site: &str, sent: Instant) {
        let _ = self.outbox.send(FromAgent::Fresh {
            site: site.to_string(),
            until: sent + self.cfg.lease * 2 / 3,
        });
    }

    /// Counts the sites with work and takes some of them (a bounded sample) while this member
    /// holds less than its fair share; with none held and none listed, asks whether the whole
    /// crawl has ended.
    async fn look(&mut self) {
        let room = self.held.len() < self.target();
        if !room && self.scanned.is_some_and(|t| t.elapsed() < MEMBERS_EVERY) {
            return;
        }
        self.scanned = Some(Instant::now());
        // Sampled past the sites held here, which the list has too.
        let (active, sampled) = retry!(
            self,
            self.shared
                .look(LOOK_TRIES + self.held.len().min(LOOK_TRIES))
        );
        let active = usize::try_from(active).unwrap_or(usize::MAX);
        self.share.active = active.max(self.held.len());
        let tries = if self.share.all_held(self.held.len()) {
            LOOK_TRIES_ALL_HELD
        } else {
            LOOK_TRIES
        };
        let target = self.target();
        self.given_back
            .retain(|_, at| at.elapsed() < GIVEN_BACK_HOLD);
        let waiting: Vec<String> = sampled
            .into_iter()
            .filter(|site| !self.held.contains_key(site) && !self.given_back.contains_key(site))
            .take(tries)
            .collect();
        let mut took = false;
        for site in waiting {
            if self.held.len() >= target {
                break;
            }
            let sent = Instant::now();
            let lease = retry!(self, self.shared.lease(&site));
            let previous = match lease {
                Lease::Taken { previous, .. } => previous,
                Lease::Renewed => Previous::HandedBack,
                Lease::Held => continue,
            };
            let stored = retry!(self, self.shared.politeness(&site));
            let (politeness, wait) = match stored {
                Some((state, wait)) => (Some(state), wait),
                None => (None, Duration::ZERO),
            };
            let _ = self.outbox.send(FromAgent::Leased {
                site: site.clone(),
                politeness,
                wait,
                previous,
            });
            self.fresh(&site, sent);
            self.held.insert(site.clone(), Held::default());
            took = true;
            self.pull(site).await;
        }
        if took {
            retry!(self, self.shared.replicated());
        }
        if self.held.is_empty() && active == 0 {
            let ended = retry!(self, self.shared.finished());
            if ended {
                let _ = self.outbox.send(FromAgent::Finished);
            }
        }
    }

    /// A graceful stop: every held site and its unfinished URLs go back now.
    async fn hand_back(mut self) -> Result<(), SharedError> {
        for site in std::mem::take(&mut self.held).into_keys() {
            self.shared.release(&site).await?;
        }
        // The member's last word on the crawl, for its stats.
        let members = self.shared.members().await?;
        let counters = self.shared.counters().await?;
        let round_trips = self.shared.round_trips();
        let _ = self.outbox.send(FromAgent::Members {
            members,
            counters,
            round_trips,
        });
        Ok(())
    }
}
