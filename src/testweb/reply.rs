//! The reply a route produces: status, headers and what the body is made of.
//!
//! It owns only these plain values, shared by the static routes ([`super::serve`]) and the
//! hostile ones ([`super::hostile`]), so the hostile routes never import the server. It never
//! touches sockets, files or the request log: turning a [`Reply`] into bytes on the wire is the
//! server's job.

use bytes::Bytes;
use hyper::StatusCode;
use hyper::header::{self, HeaderValue};

/// What a response body is made of.
pub(super) enum Payload {
    Empty,
    Full(Bytes),
    /// `chunk` repeated until `remaining` bytes are sent: big bodies without big memory.
    Repeat {
        chunk: Bytes,
        remaining: u64,
    },
    /// Frames produced by a task (the trickle); ends when the task drops its sender.
    Channel(tokio::sync::mpsc::Receiver<Bytes>),
}

/// A response under construction: status, headers, payload.
pub(super) struct Reply {
    pub(super) status: StatusCode,
    pub(super) headers: Vec<(header::HeaderName, HeaderValue)>,
    pub(super) payload: Payload,
}

impl Reply {
    pub(super) fn new(
        status: StatusCode,
        content_type: &'static str,
        body: impl Into<Bytes>,
    ) -> Reply {
        Reply {
            status,
            headers: vec![(header::CONTENT_TYPE, HeaderValue::from_static(content_type))],
            payload: Payload::Full(body.into()),
        }
    }

    pub(super) fn text(status: StatusCode, text: &str) -> Reply {
        Reply::new(status, "text/plain; charset=utf-8", format!("{text}\n"))
    }

    pub(super) fn redirect(status: StatusCode, location: &str) -> Reply {
        let mut r = Reply::text(status, &format!("moved to {location}"));
        if let Ok(v) = HeaderValue::from_str(location) {
            r.headers.push((header::LOCATION, v));
        }
        r
    }

    pub(super) fn header(mut self, name: header::HeaderName, value: HeaderValue) -> Reply {
        self.headers.push((name, value));
        self
    }
}
