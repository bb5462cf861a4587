//! Gate observations that need no AWS: the daemon's health (GATE-3), one
//! provider sentinel per exact route target (GATE-3, PLANE-2), the BitRouter
//! binary's SHA-256 and ELF architecture (GATE-4), and a config validated by
//! the pinned software's own command (GATE-7). The residue observation and
//! the other AWS judgements are in `crate::gates::rules`; the exchange is in
//! `crate::gates::http`.
//!
//! Each check has two halves: a measurement (an HTTP exchange, a file read,
//! a child process), bounded in time and size, and a pure function that
//! turns the measurement into the `CheckRecorded` observation the CLI
//! appends, pass or fail alike.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sha2::Digest;

use crate::gates::http::{exchange, parse_http_url, HttpFailure, HttpResponse, HttpUrl, Method};
use crate::schema::events::{CheckKind, CheckRecorded, Status};
use crate::schema::manifest::{Route, RouteProtocol, Software};
use crate::schema::plan::Validator;
use crate::schema::rule::Rule;

/// Bound of a whole daemon health exchange (connect, request, answer), in
/// milliseconds.
pub const HEALTH_TIMEOUT_MS: u64 = 10_000;
/// Bound of a whole sentinel exchange, in milliseconds: the daemon forwards
/// a one-token completion to the provider.
pub const SENTINEL_TIMEOUT_MS: u64 = 60_000;
pub use crate::limits::REQUEST_ID_BYTES_MAX;
/// Output tokens a sentinel asks for: the smallest real completion.
pub const SENTINEL_MAX_TOKENS: u32 = 1;
pub use crate::limits::CONFIG_FILE_BYTES_MAX;
/// Bound of the validation command's run, in milliseconds; past it the
/// command's process group is killed and the check fails.
pub const CONFIG_VALIDATE_TIMEOUT_MS: u64 = 300_000;
/// After the validation command ended (or was killed), how long to wait for
/// its output pipe to close, in milliseconds (a grandchild may hold it).
pub const CHILD_OUTPUT_GRACE_MS: u64 = 2_000;
/// The Anthropic messages API version the sentinel sends.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
/// The response header BitRouter puts its request id in.
pub const REQUEST_ID_HEADER: &str = "x-bitrouter-request-id";

// ---------------------------------------------------------------------------
// Daemon health (GATE-3)
// ---------------------------------------------------------------------------

/// `GET URL` with the health bound.
pub fn probe_health(url: &HttpUrl, timeout: Duration) -> Result<HttpResponse, HttpFailure> {
    exchange(Method::Get, url, &[], &[], timeout)
}

/// The daemon health observation: pass on a 2xx answer. Details:
/// `http_status` (when answered), `latency_ms`, `error` (when not 2xx).
pub fn health_observation(
    lineage: &str,
    group: &str,
    target_url: &str,
    outcome: &Result<HttpResponse, HttpFailure>,
) -> CheckRecorded {
    let mut details = BTreeMap::new();
    let status = match outcome {
        Ok(r) => {
            details.insert("http_status".into(), r.status.to_string());
            details.insert("latency_ms".into(), r.latency_ms.to_string());
            if (200..300).contains(&r.status) {
                Status::Pass
            } else {
                details.insert("error".into(), format!("http status {}", r.status));
                Status::Fail
            }
        }
        Err(f) => {
            details.insert("latency_ms".into(), f.latency_ms.to_string());
            details.insert("error".into(), f.error.clone());
            Status::Fail
        }
    };
    CheckRecorded {
        lineage: lineage.to_string(),
        group: Some(group.to_string()),
        check: CheckKind::DaemonHealth,
        target: target_url.to_string(),
        status,
        details,
    }
}

// ---------------------------------------------------------------------------
// Provider sentinels (GATE-3, PLANE-2)
// ---------------------------------------------------------------------------

/// One minimal request through the daemon to a route's frozen model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentinelRequest {
    /// Where it goes.
    pub url: HttpUrl,
    /// Headers (the daemon's non-secret local key included).
    pub headers: Vec<(String, String)>,
    /// The JSON body.
    pub body: Vec<u8>,
}

/// The daemon URL of a group: the manifest's daemon host and the group's
/// first port.
pub fn daemon_base_url(daemon_host: &str, port: u16) -> String {
    if daemon_host.contains(':') && !daemon_host.starts_with('[') {
        format!("http://[{daemon_host}]:{port}")
    } else {
        format!("http://{daemon_host}:{port}")
    }
}

/// Builds the sentinel of `route`: OpenAI protocol `POST /v1/chat/completions`
/// or Anthropic protocol `POST /v1/messages`, asking the route's frozen model
/// for `SENTINEL_MAX_TOKENS` token(s). `base` is the daemon's URL, with or
/// without a trailing `/v1`.
pub fn sentinel_request(
    route: &Route,
    base: &str,
    local_api_key: &str,
) -> Result<SentinelRequest, String> {
    let base = base.trim_end_matches('/');
    let base = base.strip_suffix("/v1").unwrap_or(base);
    let prompt = serde_json::json!([{ "role": "user", "content": "Reply with OK." }]);
    let (path, headers, body) = match route.protocol {
        RouteProtocol::Openai => (
            "/v1/chat/completions",
            vec![
                ("Content-Type".to_string(), "application/json".to_string()),
                (
                    "Authorization".to_string(),
                    format!("Bearer {local_api_key}"),
                ),
            ],
            serde_json::json!({
                "model": route.model,
                "max_tokens": SENTINEL_MAX_TOKENS,
                "stream": false,
                "messages": prompt,
            }),
        ),
        RouteProtocol::Anthropic => (
            "/v1/messages",
            vec![
                ("Content-Type".to_string(), "application/json".to_string()),
                ("x-api-key".to_string(), local_api_key.to_string()),
                (
                    "anthropic-version".to_string(),
                    ANTHROPIC_VERSION.to_string(),
                ),
            ],
            serde_json::json!({
                "model": route.model,
                "max_tokens": SENTINEL_MAX_TOKENS,
                "messages": prompt,
            }),
        ),
    };
    let url = parse_http_url(&format!("{base}{path}"))?;
    Ok(SentinelRequest {
        url,
        headers,
        body: body.to_string().into_bytes(),
    })
}

/// POSTs the sentinel request, bounded by `timeout` (`SENTINEL_TIMEOUT_MS` for GATE-3); a
/// non-answer is the `HttpFailure`.
pub fn send_sentinel(
    req: &SentinelRequest,
    timeout: Duration,
) -> Result<HttpResponse, HttpFailure> {
    exchange(Method::Post, &req.url, &req.headers, &req.body, timeout)
}

/// The request id of an answer: the `x-bitrouter-request-id` header, else
/// the JSON body's `id`. Returns (id, where it came from) or why none is
/// kept.
pub fn request_id(r: &HttpResponse) -> Result<(String, &'static str), String> {
    let (id, source) = match r.header(REQUEST_ID_HEADER) {
        Some(h) => (h.to_string(), "header"),
        None => {
            let id = serde_json::from_slice::<serde_json::Value>(&r.body)
                .ok()
                .and_then(|v| v.get("id").and_then(|i| i.as_str()).map(str::to_string));
            match id {
                Some(id) => (id, "body"),
                None => return Err("no request id in the answer".into()),
            }
        }
    };
    if id.is_empty() || id.len() > REQUEST_ID_BYTES_MAX {
        return Err(format!(
            "request id of {} bytes is outside 1..={REQUEST_ID_BYTES_MAX}",
            id.len()
        ));
    }
    if id.chars().any(char::is_control) {
        return Err("request id contains a control character".into());
    }
    Ok((id, source))
}

/// The class of a non-2xx answer (PLANE-1 reliability evidence).
pub fn error_class(status: u16) -> &'static str {
    match status {
        429 => "rate_limited",
        500..=599 => "server_error",
        400..=499 => "client_error",
        _ => "unexpected_status",
    }
}

/// The sentinel observation of one exact target (`route.gate_target`):
/// pass on a 2xx answer. Only this target's gate moves; a 429 here never
/// marks a sibling model (PLANE-2). Details: `tier`, `protocol`, `model`,
/// `url`, `http_status`, `latency_ms`, `request_id` (+ `request_id_source`)
/// or `request_id_problem`, and `error_class`/`error` when it fails.
pub fn sentinel_observation(
    lineage: &str,
    group: Option<&str>,
    route: &Route,
    url: &HttpUrl,
    outcome: &Result<HttpResponse, HttpFailure>,
) -> CheckRecorded {
    let mut d = BTreeMap::new();
    d.insert("tier".into(), tier_name(route));
    d.insert(
        "protocol".into(),
        match route.protocol {
            RouteProtocol::Openai => "openai",
            RouteProtocol::Anthropic => "anthropic",
        }
        .into(),
    );
    d.insert("model".into(), route.model.clone());
    d.insert("url".into(), url.text());
    let status = match outcome {
        Ok(r) => {
            d.insert("http_status".into(), r.status.to_string());
            d.insert("latency_ms".into(), r.latency_ms.to_string());
            match request_id(r) {
                Ok((id, source)) => {
                    d.insert("request_id".into(), id);
                    d.insert("request_id_source".into(), source.into());
                }
                Err(why) => {
                    d.insert("request_id_problem".into(), why);
                }
            }
            if (200..300).contains(&r.status) {
                Status::Pass
            } else {
                d.insert("error_class".into(), error_class(r.status).into());
                Status::Fail
            }
        }
        Err(f) => {
            d.insert("latency_ms".into(), f.latency_ms.to_string());
            d.insert("error_class".into(), "transport".into());
            d.insert("error".into(), f.error.clone());
            Status::Fail
        }
    };
    CheckRecorded {
        lineage: lineage.to_string(),
        group: group.map(str::to_string),
        check: CheckKind::ProviderSentinel,
        target: route.gate_target.clone(),
        status,
        details: d,
    }
}

fn tier_name(route: &Route) -> String {
    serde_json::to_value(route.tier)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------
// Binary hash and architecture (GATE-4)
// ---------------------------------------------------------------------------

/// What `check binary` measures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BinaryFacts {
    /// SHA-256 of the file, lowercase hex.
    pub sha256: String,
    pub bytes: u64,
    /// Its ELF architecture (`x86_64`, `aarch64`, ...), `not_elf`, or
    /// `em_<n>` for a machine this build does not name.
    pub arch: String,
}

/// The architecture named by an ELF header's `e_machine` (offset 18, in the
/// byte order of `EI_DATA`); `not_elf` when the magic or class is wrong.
pub fn elf_arch(header: &[u8]) -> String {
    if header.len() < 20 || &header[..4] != b"\x7fELF" || !matches!(header[4], 1 | 2) {
        return "not_elf".into();
    }
    let raw = [header[18], header[19]];
    let machine = match header[5] {
        1 => u16::from_le_bytes(raw),
        2 => u16::from_be_bytes(raw),
        _ => return "not_elf".into(),
    };
    let is64 = header[4] == 2;
    match machine {
        62 => "x86_64".into(),
        183 => "aarch64".into(),
        3 => "x86".into(),
        40 => "arm".into(),
        243 if is64 => "riscv64".into(),
        243 => "riscv32".into(),
        21 => "ppc64".into(),
        22 => "s390x".into(),
        n => format!("em_{n}"),
    }
}

/// Streams `path` through SHA-256 and reads its ELF header: a regular file
/// of at most `HASHED_FILE_BYTES_MAX` bytes (a FIFO or a device is refused
/// at once, a file that grows past the bound while read is refused).
pub fn binary_facts(path: &Path) -> Result<BinaryFacts, String> {
    let max = crate::limits::HASHED_FILE_BYTES_MAX;
    let (file, _) = crate::error::open_regular(path, max).map_err(|e| e.to_string())?;
    let mut f = file.take(max + 1);
    let mut hasher = sha2::Sha256::new();
    let mut header = Vec::with_capacity(64);
    let mut bytes = 0u64;
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = match f.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        if n == 0 {
            break;
        }
        if header.len() < 64 {
            let take = (64 - header.len()).min(n);
            header.extend_from_slice(&buf[..take]);
        }
        hasher.update(&buf[..n]);
        bytes += n as u64;
    }
    if bytes > max {
        return Err(format!(
            "{}: grew past the limit of {max} bytes while being read",
            path.display()
        ));
    }
    Ok(BinaryFacts {
        sha256: hex::encode(hasher.finalize()),
        bytes,
        arch: elf_arch(&header),
    })
}

/// The binary observation (GATE-4): pass when both the SHA-256 and the ELF
/// architecture equal the frozen `software.bitrouter_binary_sha256` and
/// `software.bitrouter_arch`. Target: the path as given.
pub fn binary_observation(
    lineage: &str,
    path: &str,
    facts: &BinaryFacts,
    software: &Software,
) -> CheckRecorded {
    let sha_ok = facts.sha256 == software.bitrouter_binary_sha256;
    let arch_ok = facts.arch == software.bitrouter_arch;
    let mut d = BTreeMap::new();
    d.insert("sha256".into(), facts.sha256.clone());
    d.insert("arch".into(), facts.arch.clone());
    d.insert("bytes".into(), facts.bytes.to_string());
    d.insert(
        "expected_sha256".into(),
        software.bitrouter_binary_sha256.clone(),
    );
    d.insert("expected_arch".into(), software.bitrouter_arch.clone());
    let mut problems = Vec::new();
    if !sha_ok {
        problems.push("sha256 differs from software.bitrouter_binary_sha256");
    }
    if !arch_ok {
        problems.push("elf architecture differs from software.bitrouter_arch");
    }
    if !problems.is_empty() {
        d.insert("error".into(), problems.join("; "));
    }
    CheckRecorded {
        lineage: lineage.to_string(),
        group: None,
        check: CheckKind::BinaryHash,
        target: path.to_string(),
        status: if sha_ok && arch_ok {
            Status::Pass
        } else {
            Status::Fail
        },
        details: d,
    }
}

// ---------------------------------------------------------------------------
// Config validation by the pinned software (GATE-7)
// ---------------------------------------------------------------------------

/// How the validation command ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationRun {
    /// Its exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended it, if one did.
    pub signal: Option<i32>,
    /// True when it was killed at the timeout.
    pub timed_out: bool,
    /// BLAKE3 of its output (stdout and stderr share one pipe, as `2>&1`), hex.
    pub output_blake3: String,
    /// Bytes of output hashed.
    pub output_bytes: u64,
    /// False when the output pipe stayed open past `CHILD_OUTPUT_GRACE_MS`
    /// after the command ended (a grandchild held it).
    pub output_complete: bool,
    /// Wall time, ms.
    pub duration_ms: u64,
    /// The bound it ran under, ms.
    pub timeout_ms: u64,
}

/// BLAKE3 of a config file's bytes, hex: a regular file bounded by
/// `CONFIG_FILE_BYTES_MAX` (a FIFO or a device is refused at once).
pub fn config_blake3(path: &Path) -> Result<String, String> {
    let bytes = crate::error::read_regular(path, CONFIG_FILE_BYTES_MAX as u64)
        .map_err(|e| e.to_string())?;
    Ok(hex::encode(blake3::hash(&bytes).as_bytes()))
}

/// Runs `command` (program and arguments, no shell) with stdin closed and
/// stdout and stderr on one pipe that is hashed as it streams. Past
/// `timeout` the command's whole process group is killed. `Err` only when
/// the command cannot be started.
pub fn run_validation(command: &[String], timeout: Duration) -> Result<ValidationRun, String> {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    let Some((program, args)) = command.split_first() else {
        return Err("no validation command given (after --)".into());
    };
    let (mut reader, writer) =
        std::io::pipe().map_err(|e| format!("cannot create the output pipe: {e}"))?;
    let writer2 = writer
        .try_clone()
        .map_err(|e| format!("cannot create the output pipe: {e}"))?;
    let start = Instant::now();
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(writer2)
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot run {program:?}: {e}"))?;
    // The parent's copies of the write end went into `Command` and are
    // dropped with it: the pipe closes when the child's side closes.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut h = blake3::Hasher::new();
        let mut n = 0u64;
        let mut buf = [0u8; 16 * 1024];
        loop {
            match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(k) => {
                    h.update(&buf[..k]);
                    n += k as u64;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        let _ = tx.send((hex::encode(h.finalize().as_bytes()), n));
    });
    let deadline = start + timeout;
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if Instant::now() >= deadline => {
                timed_out = true;
                // The child is not reaped yet, so its pid (= its process
                // group id) cannot have been reused: kill the whole group.
                let _ = Command::new("kill")
                    .args(["-KILL", "--", &format!("-{}", child.id())])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
                let _ = child.kill();
                break child.wait().ok();
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(_) => break None,
        }
    };
    let duration_ms = start.elapsed().as_millis() as u64;
    let (output_blake3, output_bytes, output_complete) =
        match rx.recv_timeout(Duration::from_millis(CHILD_OUTPUT_GRACE_MS)) {
            Ok((h, n)) => (h, n, true),
            Err(_) => (String::new(), 0, false),
        };
    Ok(ValidationRun {
        exit_code: status.and_then(|s| s.code()),
        signal: status.and_then(|s| s.signal()),
        timed_out,
        output_blake3,
        output_bytes,
        output_complete,
        duration_ms,
        timeout_ms: timeout.as_millis() as u64,
    })
}

/// Why a validation by the frozen validator did not run (BIND-7), or its
/// input could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValidationRefused {
    /// The config or the validator cannot be read (bad input).
    Input(String),
    /// A rule refuses it: the program is not the frozen one (BIND-7), the
    /// config changed while it was validated (GATE-7).
    Rule(Rule, String),
}

impl From<ValidationRefused> for crate::error::Error {
    fn from(e: ValidationRefused) -> Self {
        match e {
            ValidationRefused::Input(m) => crate::error::Error::Input(m),
            ValidationRefused::Rule(rule, message) => (rule, message).into(),
        }
    }
}

/// The frozen validator's argv for `config`: its template with `{config}`
/// filled, once the program's BLAKE3 is the frozen one (BIND-7).
pub fn frozen_validator_argv(
    v: &Validator,
    config: &Path,
) -> Result<Vec<String>, ValidationRefused> {
    let program = Path::new(&v.program);
    let got = crate::error::blake3_regular(program, crate::limits::HASHED_FILE_BYTES_MAX)
        .map_err(|e| {
            ValidationRefused::Rule(
                Rule::Bind7,
                format!(
                    "cannot read the frozen validator program {}: {e}",
                    v.program
                ),
            )
        })?
        .1;
    if got != v.program_blake3 {
        return Err(ValidationRefused::Rule(
            Rule::Bind7,
            format!(
                "the validator program {} has BLAKE3 {got}, not the frozen {}; only the frozen validator's validation counts",
                v.program, v.program_blake3
            ),
        ));
    }
    let values = std::collections::BTreeMap::from([("config", config.display().to_string())]);
    crate::schema::plan::fill(&v.command, &values).map_err(|e| {
        ValidationRefused::Rule(Rule::Bind7, format!("the frozen validator command: {e}"))
    })
}

/// Validates `config` with the frozen validator (GATE-7, BIND-7): checks the
/// program's BLAKE3, runs exactly the frozen command within `timeout`, and
/// returns the observation to append, pass or fail. Refused when the
/// program is not the frozen one or the config changed while it ran.
/// `check config` and `run` both validate through this.
pub fn validate_config(
    lineage: &str,
    v: &Validator,
    config: &Path,
    timeout: Duration,
) -> Result<CheckRecorded, ValidationRefused> {
    let before = config_blake3(config).map_err(ValidationRefused::Input)?;
    let argv = frozen_validator_argv(v, config)?;
    let run = run_validation(&argv, timeout).map_err(ValidationRefused::Input)?;
    // The file validated must be the file hashed: a config changed while
    // the command ran is refused (GATE-7: byte-identical).
    let after = config_blake3(config).map_err(ValidationRefused::Input)?;
    if after != before {
        return Err(ValidationRefused::Rule(
            Rule::Gate7,
            format!(
                "{} changed while it was validated; nothing recorded",
                config.display()
            ),
        ));
    }
    let mut obs = config_observation(lineage, &before, &config.display().to_string(), &argv, &run);
    obs.details
        .insert("program_blake3".into(), v.program_blake3.clone());
    obs.details.insert("validator".into(), v.program.clone());
    obs.details
        .insert("harbor_version".into(), v.harbor_version.clone());
    Ok(obs)
}

/// The config observation (GATE-7): pass when the pinned software's own
/// validation command exited 0 within the bound. Target: the config's
/// BLAKE3, the key `case start` looks it up by. Details: `config_path`,
/// `command`, `exit_code` or `signal`, `timed_out`, `output_blake3`,
/// `output_bytes`, `duration_ms` ([`validate_config`] adds the frozen
/// validator's `program_blake3`, `validator` and `harbor_version`).
pub fn config_observation(
    lineage: &str,
    config_blake3: &str,
    config_path: &str,
    command: &[String],
    run: &ValidationRun,
) -> CheckRecorded {
    let mut d = BTreeMap::new();
    d.insert("config_path".into(), config_path.to_string());
    d.insert("command".into(), command.join(" "));
    if let Some(c) = run.exit_code {
        d.insert("exit_code".into(), c.to_string());
    }
    if let Some(s) = run.signal {
        d.insert("signal".into(), s.to_string());
    }
    d.insert("timed_out".into(), run.timed_out.to_string());
    if run.output_complete {
        d.insert("output_blake3".into(), run.output_blake3.clone());
        d.insert("output_bytes".into(), run.output_bytes.to_string());
    } else {
        d.insert(
            "output_problem".into(),
            "the output pipe stayed open after the command ended".into(),
        );
    }
    d.insert("duration_ms".into(), run.duration_ms.to_string());
    let pass = run.exit_code == Some(0) && !run.timed_out;
    if run.timed_out {
        d.insert(
            "error".into(),
            format!("killed at its {} ms bound", run.timeout_ms),
        );
    }
    CheckRecorded {
        lineage: lineage.to_string(),
        group: None,
        check: CheckKind::ConfigValidated,
        target: config_blake3.to_string(),
        status: if pass { Status::Pass } else { Status::Fail },
        details: d,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::manifest::Tier;
    use crate::testkit::http_server::{response, Server};

    fn route(tier: Tier, protocol: RouteProtocol, model: &str) -> Route {
        Route {
            tier,
            provider: "p".into(),
            model: model.into(),
            protocol,
            credential_class: "api_key".into(),
            gate_target: format!("p:{model}"),
        }
    }

    fn url(s: &str) -> HttpUrl {
        parse_http_url(s).unwrap()
    }

    #[test]
    fn health_passes_on_2xx_and_records_status_and_latency() {
        let s = Server::start(|r| {
            assert_eq!(r.method, "GET");
            if r.path == "/health" {
                response(200, &[], b"{\"status\":\"ok\"}")
            } else {
                response(503, &[], b"down")
            }
        });
        let u = url(&format!("{}/health", s.url()));
        let ok = probe_health(&u, Duration::from_millis(HEALTH_TIMEOUT_MS));
        let obs = health_observation("l", "control", &u.text(), &ok);
        assert_eq!(obs.status, Status::Pass);
        assert_eq!(obs.check, CheckKind::DaemonHealth);
        assert_eq!(obs.group.as_deref(), Some("control"));
        assert_eq!(obs.details["http_status"], "200");
        assert!(obs.details["latency_ms"].parse::<u64>().is_ok());
        let bad = url(&format!("{}/other", s.url()));
        let r = probe_health(&bad, Duration::from_millis(HEALTH_TIMEOUT_MS));
        let obs = health_observation("l", "control", &bad.text(), &r);
        assert_eq!(obs.status, Status::Fail);
        assert_eq!(obs.details["http_status"], "503");
    }

    #[test]
    fn health_of_a_closed_port_fails_with_the_error_recorded() {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let u = url(&format!("http://127.0.0.1:{port}/health"));
        let r = probe_health(&u, Duration::from_millis(HEALTH_TIMEOUT_MS));
        let obs = health_observation("l", "g", &u.text(), &r);
        assert_eq!(obs.status, Status::Fail);
        assert!(
            obs.details["error"].contains("cannot connect"),
            "{:?}",
            obs.details
        );
        assert!(!obs.details.contains_key("http_status"));
    }

    #[test]
    fn sentinels_speak_both_protocols_and_record_the_request_id() {
        let s = Server::start(|r| {
            let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
            assert_eq!(body["max_tokens"], SENTINEL_MAX_TOKENS);
            match r.path.as_str() {
                "/v1/chat/completions" => {
                    assert_eq!(r.header("authorization"), Some("Bearer local-key"));
                    assert_eq!(body["model"], "kimi");
                    response(200, &[], br#"{"id":"chatcmpl-123","choices":[]}"#)
                }
                "/v1/messages" => {
                    assert_eq!(r.header("x-api-key"), Some("local-key"));
                    assert_eq!(r.header("anthropic-version"), Some(ANTHROPIC_VERSION));
                    assert_eq!(body["model"], "sonnet");
                    response(
                        200,
                        &[(REQUEST_ID_HEADER, "br-req-9")],
                        br#"{"id":"msg_1"}"#,
                    )
                }
                _ => response(404, &[], b""),
            }
        });
        let openai = route(Tier::Balanced, RouteProtocol::Openai, "kimi");
        // A base with /v1 (as TrialConfigs write it) reaches the same path.
        let req = sentinel_request(&openai, &format!("{}/v1/", s.url()), "local-key").unwrap();
        assert_eq!(req.url.path, "/v1/chat/completions");
        let r = send_sentinel(&req, Duration::from_secs(5));
        let obs = sentinel_observation("l", Some("r1"), &openai, &req.url, &r);
        assert_eq!(obs.status, Status::Pass);
        assert_eq!(obs.check, CheckKind::ProviderSentinel);
        assert_eq!(obs.target, "p:kimi");
        assert_eq!(obs.details["request_id"], "chatcmpl-123");
        assert_eq!(obs.details["request_id_source"], "body");
        assert_eq!(obs.details["tier"], "balanced");
        let anthropic = route(Tier::Strong, RouteProtocol::Anthropic, "sonnet");
        let req = sentinel_request(&anthropic, &s.url(), "local-key").unwrap();
        let r = send_sentinel(&req, Duration::from_secs(5));
        let obs = sentinel_observation("l", None, &anthropic, &req.url, &r);
        assert_eq!(obs.status, Status::Pass);
        assert_eq!(obs.details["request_id"], "br-req-9");
        assert_eq!(obs.details["request_id_source"], "header");
        assert_eq!(obs.details["protocol"], "anthropic");
        assert_eq!(
            s.requests.lock().unwrap().len(),
            2,
            "one request per sentinel"
        );
    }

    // rule PLANE-2: a 429 on one exact target fails that target's gate only.
    #[test]
    fn a_429_fails_only_its_own_target_and_5xx_is_classed() {
        let s = Server::start(|r| {
            let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
            match body["model"].as_str().unwrap() {
                "limited" => response(
                    429,
                    &[(REQUEST_ID_HEADER, "br-429")],
                    br#"{"error":"rate"}"#,
                ),
                "broken" => response(502, &[], b"bad gateway"),
                _ => response(200, &[], br#"{"id":"ok-1"}"#),
            }
        });
        let limited = route(Tier::Balanced, RouteProtocol::Openai, "limited");
        let sibling = route(Tier::Economy, RouteProtocol::Openai, "sibling");
        let broken = route(Tier::Strong, RouteProtocol::Anthropic, "broken");
        let mut observations = Vec::new();
        for r in [&limited, &sibling, &broken] {
            let req = sentinel_request(r, &s.url(), "k").unwrap();
            let out = send_sentinel(&req, Duration::from_secs(5));
            observations.push(sentinel_observation("l", None, r, &req.url, &out));
        }
        assert_eq!(observations[0].status, Status::Fail);
        assert_eq!(observations[0].details["error_class"], "rate_limited");
        assert_eq!(observations[0].details["http_status"], "429");
        assert_eq!(observations[0].details["request_id"], "br-429");
        assert_eq!(observations[1].status, Status::Pass);
        assert_eq!(observations[1].target, "p:sibling");
        assert_eq!(observations[2].status, Status::Fail);
        assert_eq!(observations[2].details["error_class"], "server_error");
        assert!(observations[2].details.contains_key("request_id_problem"));
        // That only the limited target's gate fails once folded into the
        // replayed state is tested beside the CLI (src/cli/check.rs).
    }

    #[test]
    fn request_id_bounds() {
        let mk = |id: &str| HttpResponse {
            status: 200,
            headers: vec![(REQUEST_ID_HEADER.into(), id.into())],
            body: vec![],
            latency_ms: 1,
        };
        assert!(request_id(&mk(&"a".repeat(REQUEST_ID_BYTES_MAX))).is_ok());
        assert!(request_id(&mk(&"a".repeat(REQUEST_ID_BYTES_MAX + 1))).is_err());
        assert!(request_id(&mk("")).is_err());
        let none = HttpResponse {
            status: 200,
            headers: vec![],
            body: b"not json".to_vec(),
            latency_ms: 1,
        };
        assert_eq!(
            request_id(&none).unwrap_err(),
            "no request id in the answer"
        );
    }

    fn elf(class: u8, data: u8, machine: u16) -> Vec<u8> {
        let mut h = vec![0u8; 64];
        h[..4].copy_from_slice(b"\x7fELF");
        h[4] = class;
        h[5] = data;
        let m = if data == 2 {
            machine.to_be_bytes()
        } else {
            machine.to_le_bytes()
        };
        h[18..20].copy_from_slice(&m);
        h
    }

    #[test]
    fn elf_machine_names() {
        assert_eq!(elf_arch(&elf(2, 1, 62)), "x86_64");
        assert_eq!(elf_arch(&elf(2, 1, 183)), "aarch64");
        assert_eq!(elf_arch(&elf(2, 2, 22)), "s390x");
        assert_eq!(elf_arch(&elf(1, 1, 3)), "x86");
        assert_eq!(elf_arch(&elf(2, 1, 9999)), "em_9999");
        assert_eq!(elf_arch(b"#!/bin/sh\n"), "not_elf");
        assert_eq!(elf_arch(&elf(2, 1, 62)[..19]), "not_elf");
        assert_eq!(elf_arch(&elf(3, 1, 62)), "not_elf");
    }

    // rule GATE-4: the binary's SHA-256 and ELF architecture must both equal the frozen ones.
    #[test]
    fn binary_check_compares_sha256_and_arch() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bitrouter");
        let mut bytes = elf(2, 1, 62);
        bytes.extend_from_slice(b"rest of the binary");
        std::fs::write(&path, &bytes).unwrap();
        let facts = binary_facts(&path).unwrap();
        assert_eq!(facts.arch, "x86_64");
        assert_eq!(facts.bytes, bytes.len() as u64);
        assert_eq!(facts.sha256, hex::encode(sha2::Sha256::digest(&bytes)));
        let mut sw = crate::testkit::examples::frozen().manifest.public.software;
        sw.bitrouter_binary_sha256 = facts.sha256.clone();
        let ok = binary_observation("l", "/opt/bitrouter", &facts, &sw);
        assert_eq!(ok.status, Status::Pass);
        assert_eq!(ok.check, CheckKind::BinaryHash);
        assert_eq!(ok.details["sha256"], facts.sha256);
        sw.bitrouter_arch = "aarch64".into();
        let bad = binary_observation("l", "/opt/bitrouter", &facts, &sw);
        assert_eq!(bad.status, Status::Fail);
        assert!(bad.details["error"].contains("bitrouter_arch"));
        sw.bitrouter_arch = "x86_64".into();
        sw.bitrouter_binary_sha256 = "0".repeat(64);
        let bad = binary_observation("l", "/opt/bitrouter", &facts, &sw);
        assert_eq!(bad.status, Status::Fail);
        assert!(bad.details["error"].contains("bitrouter_binary_sha256"));
        assert!(binary_facts(&dir.path().join("missing"))
            .unwrap_err()
            .contains("cannot read"));
    }

    // rule GATE-7: the validated config is keyed by its BLAKE3; a non-zero exit fails.
    #[test]
    fn config_validation_records_exit_code_and_output_hash() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("trial.json");
        std::fs::write(&cfg, b"{\"a\":1}\n").unwrap();
        let b3 = config_blake3(&cfg).unwrap();
        assert_eq!(b3, hex::encode(blake3::hash(b"{\"a\":1}\n").as_bytes()));
        let cmd: Vec<String> = ["sh", "-c", "echo out; echo err >&2; exit 0"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let run = run_validation(&cmd, Duration::from_secs(10)).unwrap();
        assert_eq!(run.exit_code, Some(0));
        assert!(run.output_complete);
        assert_eq!(run.output_bytes, 8);
        assert_eq!(
            run.output_blake3,
            hex::encode(blake3::hash(b"out\nerr\n").as_bytes())
        );
        let obs = config_observation("l", &b3, "trial.json", &cmd, &run);
        assert_eq!(obs.status, Status::Pass);
        assert_eq!(obs.target, b3);
        assert_eq!(obs.check, CheckKind::ConfigValidated);
        assert_eq!(obs.group, None);
        let failing: Vec<String> = ["sh", "-c", "exit 3"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let run = run_validation(&failing, Duration::from_secs(10)).unwrap();
        let obs = config_observation("l", &b3, "trial.json", &failing, &run);
        assert_eq!(obs.status, Status::Fail);
        assert_eq!(obs.details["exit_code"], "3");
        assert!(run_validation(
            &["/nonexistent/validator".to_string()],
            Duration::from_secs(1)
        )
        .unwrap_err()
        .contains("cannot run"));
        assert!(run_validation(&[], Duration::from_secs(1)).is_err());
    }

    #[test]
    fn a_validation_past_its_bound_is_killed_with_its_children() {
        // The grandchild `sleep` holds the pipe too: the group kill ends it.
        let cmd: Vec<String> = ["sh", "-c", "sleep 30 & sleep 30; exit 0"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let t0 = Instant::now();
        let run = run_validation(&cmd, Duration::from_millis(300)).unwrap();
        assert!(run.timed_out);
        assert_eq!(run.exit_code, None);
        assert_eq!(run.signal, Some(9));
        assert!(run.output_complete, "the group kill closed the pipe");
        assert!(t0.elapsed() < Duration::from_secs(5));
        let obs = config_observation("l", "b3", "c", &cmd, &run);
        assert_eq!(obs.status, Status::Fail);
        assert_eq!(obs.details["timed_out"], "true");
    }

    #[test]
    fn config_file_bound_is_exact() {
        let dir = tempfile::tempdir().unwrap();
        let at = dir.path().join("at");
        std::fs::write(&at, vec![b'a'; CONFIG_FILE_BYTES_MAX]).unwrap();
        assert!(config_blake3(&at).is_ok());
        let past = dir.path().join("past");
        std::fs::write(&past, vec![b'a'; CONFIG_FILE_BYTES_MAX + 1]).unwrap();
        assert!(config_blake3(&past).unwrap_err().contains(&format!(
            "longer than the limit of {CONFIG_FILE_BYTES_MAX} bytes"
        )));
    }
}
