//! A tiny HTTP/1.1 server on 127.0.0.1 for tests: one thread, one
//! connection at a time, `Connection: close`, a handler per request that
//! returns the raw answer bytes (so a test can send malformed answers).
//! The daemon health and sentinel tests and the fake instance metadata
//! service of the AWS tests use it.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// A request as the server read it.
#[derive(Debug, Clone)]
pub struct Received {
    /// The method (`GET`, `POST`, ...).
    pub method: String,
    /// The request target (path and query).
    pub path: String,
    /// Header names (lowercase) and values, in order.
    pub headers: Vec<(String, String)>,
    /// The body (by `Content-Length`).
    pub body: Vec<u8>,
}

impl Received {
    /// The first value of header `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

type Handler = dyn Fn(&Received) -> Vec<u8> + Send + Sync;

/// A running server; dropping it stops the thread.
pub struct Server {
    /// The port it listens on (127.0.0.1).
    pub port: u16,
    /// Every request read, in order.
    pub requests: Arc<Mutex<Vec<Received>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Starts a server answering each request with `handler`'s bytes.
    pub fn start(handler: impl Fn(&Received) -> Vec<u8> + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let (s, r) = (stop.clone(), requests.clone());
        let thread = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(mut conn) = conn else { continue };
                let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
                if let Some(req) = read_request(&mut conn) {
                    r.lock().unwrap().push(req.clone());
                    let answer = handler(&req);
                    let _ = conn.write_all(&answer);
                    let _ = conn.flush();
                }
            }
        });
        Server {
            port,
            requests,
            stop,
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn read_request(conn: &mut TcpStream) -> Option<Received> {
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    let end = loop {
        if let Some(p) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break p;
        }
        let n = conn.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        raw.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&raw[..end]).to_string();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split_whitespace();
    let method = first.next()?.to_string();
    let path = first.next()?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = raw[end + 4..].to_vec();
    while body.len() < len {
        let n = conn.read(&mut buf).ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&buf[..n]);
    }
    Some(Received {
        method,
        path,
        headers,
        body,
    })
}

/// A complete answer with `Content-Length` and `Connection: close`.
pub fn response(status: u16, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status} X\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}

/// A BitRouter daemon stand-in on 127.0.0.1 for the life of this process:
/// 200 with a JSON body and a request id to every request (health and
/// sentinels), for `run`'s daemon gates in tests and the bench. Its URL.
pub fn daemon_stand_in() -> String {
    let server = Server::start(|_| {
        response(
            200,
            &[
                ("content-type", "application/json"),
                ("x-bitrouter-request-id", "sentinel-1"),
            ],
            b"{\"id\":\"x\",\"ok\":true}",
        )
    });
    let url = server.url();
    // The stand-in serves every later test of the process.
    std::mem::forget(server);
    url
}
