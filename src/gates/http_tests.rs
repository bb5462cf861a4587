use std::io::{Read, Write};
use std::net::TcpListener;

use super::*;
use crate::testkit::http_server::{response, Server};

fn url(s: &str) -> HttpUrl {
    parse_http_url(s).unwrap()
}

fn get(url: &HttpUrl, timeout: Duration) -> Result<HttpResponse, HttpFailure> {
    exchange(Method::Get, url, &[], &[], timeout)
}

/// A one-connection server that reads the request head, writes `first`,
/// waits `pause`, writes `then` and closes: answers that stall or arrive
/// in pieces.
fn raw_server(first: &'static [u8], pause: Duration, then: &'static [u8]) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let Ok((mut conn, _)) = listener.accept() else {
            return;
        };
        let mut head = Vec::new();
        let mut buf = [0u8; 4096];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            match conn.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
        let _ = conn.write_all(first);
        std::thread::sleep(pause);
        let _ = conn.write_all(then);
    });
    format!("http://127.0.0.1:{port}/")
}

#[test]
fn urls_parse_and_refuse_what_they_must() {
    assert_eq!(
        url("http://10.20.0.10:18711/health"),
        HttpUrl {
            host: "10.20.0.10".into(),
            port: 18711,
            path: "/health".into()
        }
    );
    assert_eq!(url("http://h").port, 80);
    assert_eq!(url("http://h").path, "/");
    assert_eq!(url("http://h?x=1").path, "/?x=1");
    assert_eq!(url("http://[::1]:9/x").host, "::1");
    assert_eq!(url("http://[::1]:9/x").text(), "http://[::1]:9/x");
    for bad in [
        "https://h/x",
        "ftp://h",
        "h:80",
        "http://user:pw@h/",
        "http://h:0/",
        "http://h:65536/",
        "http://h:x/",
        "http:///x",
        "http://h/a b",
        "http://h/#frag",
        "http://[::1/",
        "http://::1/",
    ] {
        assert!(parse_http_url(bad).is_err(), "{bad}");
    }
    assert!(parse_http_url("https://h").unwrap_err().contains("https"));
    assert!(parse_http_url("http://u:p@h")
        .unwrap_err()
        .contains("user info"));
}

#[test]
fn url_length_bound_is_exact() {
    let at = format!("http://h/{}", "a".repeat(URL_BYTES_MAX - 9));
    assert_eq!(at.len(), URL_BYTES_MAX);
    assert!(parse_http_url(&at).is_ok());
    let past = format!("{at}a");
    assert!(parse_http_url(&past)
        .unwrap_err()
        .contains("over the limit"));
}

#[test]
fn a_silent_server_hits_the_exchange_bound() {
    let s = Server::start(|_| {
        std::thread::sleep(Duration::from_millis(800));
        response(200, &[], b"late")
    });
    let u = url(&s.url());
    let t0 = Instant::now();
    let r = get(&u, Duration::from_millis(200));
    let e = r.unwrap_err();
    assert!(
        e.error.contains("no complete answer within 200 ms"),
        "{e:?}"
    );
    assert!(t0.elapsed() < Duration::from_millis(700));
    // Within the bound the same server answers.
    let r = get(&u, Duration::from_millis(5_000)).unwrap();
    assert_eq!(r.body, b"late");
}

#[test]
fn body_bound_is_exact() {
    let s = Server::start(|r| {
        let n = if r.path == "/at" {
            HTTP_RESPONSE_BYTES_MAX
        } else {
            HTTP_RESPONSE_BYTES_MAX + 1
        };
        response(200, &[], &vec![b'x'; n])
    });
    let at = get(&url(&format!("{}/at", s.url())), Duration::from_secs(10)).unwrap();
    assert_eq!(at.body.len(), HTTP_RESPONSE_BYTES_MAX);
    let past = get(&url(&format!("{}/past", s.url())), Duration::from_secs(10)).unwrap_err();
    assert!(past.error.contains("over the limit"), "{past:?}");
}

#[test]
fn chunked_and_close_delimited_bodies_decode() {
    let s = Server::start(|r| {
        if r.path == "/chunked" {
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n3;x=y\r\nefg\r\n0\r\n\r\n".to_vec()
        } else {
            b"HTTP/1.0 200 OK\r\n\r\nuntil-close".to_vec()
        }
    });
    let c = get(
        &url(&format!("{}/chunked", s.url())),
        Duration::from_secs(5),
    )
    .unwrap();
    assert_eq!(c.body, b"abcdefg");
    let e = get(&url(&format!("{}/eof", s.url())), Duration::from_secs(5)).unwrap();
    assert_eq!(e.body, b"until-close");
}

#[test]
fn malformed_answers_are_errors_not_panics() {
    let malformed: [(&'static [u8], &str); 6] = [
        (b"garbage\r\n\r\n", "invalid HTTP version"),
        (b"HTTP/1.1 abc OK\r\n\r\n", "invalid response status"),
        (
            b"HTTP/1.1 200 OK\r\nno-colon\r\n\r\n",
            "invalid header name",
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: nope\r\n\r\n",
            "content-length header not a number",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            "chunk length cannot be read as a number",
        ),
        // The CRLF after a chunk's data is checked.
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcdXX0\r\n\r\n",
            "chunk expected crlf as next character",
        ),
    ];
    for (raw, why) in malformed {
        let base = raw_server(raw, Duration::ZERO, b"");
        let u = url(&base);
        let e = get(&u, Duration::from_secs(5)).unwrap_err();
        let prefix = format!("malformed answer from 127.0.0.1:{}: ", u.port);
        assert!(
            e.error.starts_with(&prefix) && e.error.ends_with(why),
            "{:?}: {e:?}",
            String::from_utf8_lossy(raw)
        );
    }
    // Closed before a complete answer: nothing, an informational answer
    // only, or less body than announced.
    let cut_short: [&'static [u8]; 3] = [
        b"",
        b"HTTP/1.1 100 Continue\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab",
    ];
    for raw in cut_short {
        let base = raw_server(raw, Duration::ZERO, b"");
        let u = url(&base);
        let e = get(&u, Duration::from_secs(5)).unwrap_err();
        assert_eq!(
            e.error,
            format!(
                "the connection to 127.0.0.1:{} closed before a complete answer",
                u.port
            ),
            "{:?}",
            String::from_utf8_lossy(raw)
        );
    }
}

#[test]
fn a_stalled_body_hits_the_exchange_bound_too() {
    // Headers and part of the body arrive; the rest never does in time.
    let base = raw_server(
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
        Duration::from_millis(1_500),
        b"defghij",
    );
    let t0 = Instant::now();
    let e = get(&url(&base), Duration::from_millis(300)).unwrap_err();
    assert_eq!(
        e.error,
        "no complete answer within 300 ms (timed out in phase: global)"
    );
    assert!(t0.elapsed() < Duration::from_millis(1_200), "{e:?}");
}

#[test]
fn the_name_lookup_is_inside_the_deadline() {
    // `.invalid` never resolves (RFC 6761): however the resolver fails
    // (at once, or by hanging without a network), the exchange ends within
    // its bound and says which host.
    let u = url("http://benchledger-gate-test.invalid:9/health");
    let t0 = Instant::now();
    let e = get(&u, Duration::from_millis(500)).unwrap_err();
    assert!(t0.elapsed() < Duration::from_millis(2_000), "{e:?}");
    // Refused at once by the resolver, or still resolving at the bound.
    assert!(
        e.error
            .starts_with("cannot resolve benchledger-gate-test.invalid")
            || e.error.starts_with("no complete answer within 500 ms"),
        "{e:?}"
    );
}

#[test]
fn a_closed_port_is_a_connect_error() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let e = get(
        &url(&format!("http://127.0.0.1:{port}/")),
        Duration::from_secs(5),
    )
    .unwrap_err();
    assert!(
        e.error
            .starts_with(&format!("cannot connect to 127.0.0.1:{port}: ")),
        "{e:?}"
    );
}

#[test]
fn header_bound() {
    let s = Server::start(|r| {
        let n = if r.path == "/under" {
            HTTP_HEADER_BYTES_MAX / 2
        } else {
            HTTP_HEADER_BYTES_MAX + 1
        };
        let value = "v".repeat(n);
        response(200, &[("x-big", value.as_str())], b"ok")
    });
    let under = get(&url(&format!("{}/under", s.url())), Duration::from_secs(5)).unwrap();
    assert_eq!(
        under.header("x-big").map(str::len),
        Some(HTTP_HEADER_BYTES_MAX / 2)
    );
    let over = get(&url(&format!("{}/over", s.url())), Duration::from_secs(5)).unwrap_err();
    assert_eq!(
        over.error,
        format!("response headers over {HTTP_HEADER_BYTES_MAX} bytes")
    );
}

#[test]
fn bodies_without_a_length_are_bounded_too() {
    static CHUNKED_PAST: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    let chunked = CHUNKED_PAST.get_or_init(|| {
        let chunk = vec![b'x'; 64 * 1024];
        let mut out = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        for _ in 0..=(HTTP_RESPONSE_BYTES_MAX / chunk.len()) {
            out.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
            out.extend_from_slice(&chunk);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"0\r\n\r\n");
        out
    });
    let base = raw_server(chunked, Duration::ZERO, b"");
    let e = get(&url(&base), Duration::from_secs(10)).unwrap_err();
    assert_eq!(
        e.error,
        format!("response body over the limit of {HTTP_RESPONSE_BYTES_MAX} bytes")
    );
}

#[test]
fn redirects_are_answers_not_followed() {
    let s = Server::start(|r| {
        if r.path == "/moved" {
            response(302, &[("location", "/elsewhere")], b"")
        } else {
            response(200, &[], b"followed")
        }
    });
    let r = get(&url(&format!("{}/moved", s.url())), Duration::from_secs(5)).unwrap();
    assert_eq!(r.status, 302);
    assert_eq!(r.header("location"), Some("/elsewhere"));
    assert_eq!(s.requests.lock().unwrap().len(), 1);
}

#[test]
fn posts_carry_headers_and_body_and_refuse_line_breaks() {
    let s = Server::start(|r| {
        assert_eq!(r.method, "PUT");
        assert_eq!(r.header("x-test"), Some("1"));
        assert_eq!(r.header("content-length"), Some("4"));
        assert!(r
            .header("user-agent")
            .is_some_and(|ua| ua.starts_with("benchledger/")));
        response(200, &[], &r.body)
    });
    let u = url(&s.url());
    let headers = [("x-test".to_string(), "1".to_string())];
    let r = exchange(Method::Put, &u, &headers, b"data", Duration::from_secs(5)).unwrap();
    assert_eq!(r.body, b"data");
    let bad = [("x-test".to_string(), "a\r\nInjected: 1".to_string())];
    let e = exchange(Method::Post, &u, &bad, b"", Duration::from_secs(5)).unwrap_err();
    assert_eq!(e.error, "header x-test contains a line break");
}
