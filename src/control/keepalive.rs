//! When an HTTP connection is idle, for `places`: hyper does not say, so its socket and its
//! answers do. A connection is busy from the first byte of a request until the answer to it
//! is out, and idle from then until its next byte (and from its accept to its first byte).
//!
//! [`WatchedIo`] wraps the socket: a read that brings bytes makes the place busy, and a flush
//! that completes after an answer's end makes it idle (hyper flushes the socket only once its
//! own buffer is written out). [`WatchedBody`] wraps each answer's body: hyper drops it once
//! the last of it is in that buffer.
//!
//! What it cannot see: a pipelined request whose bytes came before the answer to the one
//! ahead of it was out. The connection counts as idle from that answer until hyper has parsed
//! the request; evicted in that moment with the request's head not yet whole, it is closed
//! without an answer, which RFC 9112 (9.3.2) lets a pipelining client retry.

use std::convert::Infallible;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::{Body, Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use super::places::Place;

/// What one connection's socket and answers share.
#[derive(Debug)]
pub(super) struct Watch {
    pub(super) place: Place,
    /// The end of an answer is in hyper's buffer, not yet flushed. Only the connection's own
    /// task touches it, so `Relaxed` is enough.
    answered: AtomicBool,
}

impl Watch {
    pub(super) fn new(place: Place) -> Watch {
        Watch {
            place,
            answered: AtomicBool::new(false),
        }
    }
}

/// The socket, telling the place when bytes come and when an answer is out.
#[derive(Debug)]
pub(super) struct WatchedIo {
    stream: TcpStream,
    watch: Arc<Watch>,
}

impl WatchedIo {
    pub(super) fn new(stream: TcpStream, watch: Arc<Watch>) -> WatchedIo {
        WatchedIo { stream, watch }
    }
}

impl AsyncRead for WatchedIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let read = Pin::new(&mut this.stream).poll_read(cx, buf);
        if buf.filled().len() > before {
            this.watch.answered.store(false, Ordering::Relaxed);
            // Evicted first, the connection's task has been told and closes it: nothing to
            // do here.
            let _ = this.watch.place.busy();
        }
        read
    }
}

impl AsyncWrite for WatchedIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let flushed = Pin::new(&mut this.stream).poll_flush(cx);
        if matches!(flushed, Poll::Ready(Ok(())))
            && this.watch.answered.swap(false, Ordering::Relaxed)
        {
            this.watch.place.idle();
        }
        flushed
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

/// An answer's body, telling the connection when hyper is done with it.
#[derive(Debug)]
pub(super) struct WatchedBody {
    body: Full<Bytes>,
    watch: Arc<Watch>,
}

impl WatchedBody {
    pub(super) fn new(body: Full<Bytes>, watch: Arc<Watch>) -> WatchedBody {
        WatchedBody { body, watch }
    }
}

impl Body for WatchedBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

impl Drop for WatchedBody {
    fn drop(&mut self) {
        self.watch.answered.store(true, Ordering::Relaxed);
    }
}
