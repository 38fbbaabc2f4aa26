//! TEMPORARY stand-in for the fetch module (being written separately); same API.
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;

#[derive(Debug, Clone)]
pub struct FetchConfig {
    pub user_agent: String,
    pub connect_timeout: Duration,
    pub timeout: Duration,
    pub max_body_bytes: u64,
    pub cookies: bool,
    pub proxy: Option<url::Url>,
    pub max_idle_per_host: usize,
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct FetchError(String);

#[derive(Debug, Clone)]
pub struct Fetcher {
    client: reqwest::Client,
    max_body: u64,
    timeout: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[repr(u8)]
pub enum Phase {
    Idle = 0,
    Connecting = 1,
    WaitingFirstByte = 2,
    Receiving = 3,
    Parsing = 4,
}

#[derive(Debug, Default)]
pub struct PhaseCell(AtomicU8);
impl PhaseCell {
    pub fn new() -> Self {
        PhaseCell(AtomicU8::new(0))
    }
    pub fn set(&self, p: Phase) {
        self.0.store(p as u8, Ordering::Relaxed);
    }
    pub fn get(&self) -> Phase {
        match self.0.load(Ordering::Relaxed) {
            1 => Phase::Connecting,
            2 => Phase::WaitingFirstByte,
            3 => Phase::Receiving,
            4 => Phase::Parsing,
            _ => Phase::Idle,
        }
    }
}

#[derive(Debug)]
pub struct Fetched {
    pub final_url: url::Url,
    pub status: u16,
    pub content_type: Option<String>,
    pub location: Option<String>,
    pub retry_after: Option<String>,
    pub content_encoding: Option<String>,
    pub body: Bytes,
    pub truncated: bool,
    pub ttfb: Duration,
    pub elapsed: Duration,
}

#[derive(Debug)]
pub enum FetchOutcome {
    Response(Fetched),
    Timeout { during: Phase },
    Connect(String),
    Other(String),
}

#[derive(Debug)]
pub enum RobotsFetch {
    Response {
        status: u16,
        body: Bytes,
        retry_after: Option<String>,
    },
    Unreachable(String),
    TooManyRedirects,
}

fn header(r: &reqwest::Response, name: reqwest::header::HeaderName) -> Option<String> {
    r.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

impl Fetcher {
    pub fn new(cfg: &FetchConfig) -> Result<Fetcher, FetchError> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(cfg.user_agent.clone())
            .no_proxy()
            .connect_timeout(cfg.connect_timeout)
            .build()
            .map_err(|e| FetchError(e.to_string()))?;
        Ok(Fetcher {
            client,
            max_body: cfg.max_body_bytes,
            timeout: cfg.timeout,
        })
    }

    pub async fn get(&self, url: &url::Url, phase: &PhaseCell) -> FetchOutcome {
        let start = Instant::now();
        let deadline = tokio::time::Instant::now() + self.timeout;
        phase.set(Phase::WaitingFirstByte);
        let resp =
            match tokio::time::timeout_at(deadline, self.client.get(url.clone()).send()).await {
                Err(_) => {
                    return FetchOutcome::Timeout {
                        during: Phase::WaitingFirstByte,
                    };
                }
                Ok(Err(e)) if e.is_connect() => return FetchOutcome::Connect(e.to_string()),
                Ok(Err(e)) => return FetchOutcome::Other(e.to_string()),
                Ok(Ok(r)) => r,
            };
        let ttfb = start.elapsed();
        phase.set(Phase::Receiving);
        let status = resp.status().as_u16();
        let content_type = header(&resp, reqwest::header::CONTENT_TYPE);
        let location = header(&resp, reqwest::header::LOCATION);
        let retry_after = header(&resp, reqwest::header::RETRY_AFTER);
        let content_encoding = header(&resp, reqwest::header::CONTENT_ENCODING);
        let final_url = resp.url().clone();
        let mut resp = resp;
        let mut body = Vec::new();
        let mut truncated = false;
        loop {
            match tokio::time::timeout_at(deadline, resp.chunk()).await {
                Err(_) => {
                    return FetchOutcome::Timeout {
                        during: Phase::Receiving,
                    };
                }
                Ok(Err(e)) => return FetchOutcome::Other(e.to_string()),
                Ok(Ok(None)) => break,
                Ok(Ok(Some(c))) => {
                    let room = (self.max_body as usize).saturating_sub(body.len());
                    if c.len() > room {
                        body.extend_from_slice(&c[..room]);
                        truncated = true;
                        break;
                    }
                    body.extend_from_slice(&c);
                }
            }
        }
        phase.set(Phase::Idle);
        FetchOutcome::Response(Fetched {
            final_url,
            status,
            content_type,
            location,
            retry_after,
            content_encoding,
            body: Bytes::from(body),
            truncated,
            ttfb,
            elapsed: start.elapsed(),
        })
    }

    pub async fn robots(&self, origin: &url::Url, phase: &PhaseCell) -> RobotsFetch {
        let Ok(mut url) = origin.join("/robots.txt") else {
            return RobotsFetch::Unreachable("bad origin".into());
        };
        for _ in 0..=5 {
            match self.get(&url, phase).await {
                FetchOutcome::Response(f) if (300..400).contains(&f.status) => {
                    match f.location.as_deref().and_then(|l| url.join(l).ok()) {
                        Some(next) => url = next,
                        None => {
                            return RobotsFetch::Response {
                                status: f.status,
                                body: f.body,
                                retry_after: f.retry_after,
                            };
                        }
                    }
                }
                FetchOutcome::Response(f) => {
                    return RobotsFetch::Response {
                        status: f.status,
                        body: f.body.slice(..f.body.len().min(512_000)),
                        retry_after: f.retry_after,
                    };
                }
                FetchOutcome::Timeout { .. } => return RobotsFetch::Unreachable("timeout".into()),
                FetchOutcome::Connect(e) | FetchOutcome::Other(e) => {
                    return RobotsFetch::Unreachable(e);
                }
            }
        }
        RobotsFetch::TooManyRedirects
    }
}
