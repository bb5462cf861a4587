//! The secret guard: refuses text that carries a credential.
//!
//! Every append to the ledger passes each string field through [`scan`]; a
//! field that contains a credential shape is refused (design section 3:
//! "Secret values are never stored"; method rule FREEZE-2 and the `secrets`
//! verdict row). The manifest may name *where* a secret lives (an env var name
//! such as `BITROUTER_API_KEY`, a protected path such as
//! `/run/secrets/openai`); that is not a secret and passes.
//!
//! The scanner is hand-written: one left-to-right pass over the bytes, where
//! each position is tried against a fixed set of triggers (a token prefix such
//! as `ghp_`, a context keyword such as `secret_access_key`, the `://` of a
//! URL). A trigger reads ahead a bounded amount, or a run that no other
//! trigger of the same kind can re-read more than a fixed number of times, so
//! the work is linear in the text length. Only ASCII bytes ever match, so
//! non-ASCII text is scanned like any other and every reported offset is a
//! char boundary. Nothing here panics: all look-ahead goes through `get`.
//!
//! Two rules keep the guard from tripping on ordinary evidence:
//! - a bare high-entropy string is not enough (SHA-1 and SHA-256 digests, git
//!   commit ids and base64 hashes fill the fixtures); a shape needs either a
//!   vendor prefix with a realistic minimum length or an assignment context;
//! - a masked or referenced value is not a secret: Harbor writes `sk-l****ret`
//!   or `${KEY}`, manifests write env var names and file paths.

pub use crate::limits::ASSIGNMENT_SEPARATOR_BYTES_MAX;

pub use crate::limits::VALUE_SCAN_BYTES_MAX;

pub use crate::limits::PEM_LABEL_BYTES_MAX;

/// Fewest bytes of a value assigned to a named vendor credential variable
/// (`OPENAI_API_KEY=...`) for it to count as a secret.
pub const NAMED_VALUE_BYTES_MIN: usize = 8;

/// Fewest bytes of a value assigned to a generic `api_key` field for it to
/// count as a secret; the value must also mix letters and digits.
pub const GENERIC_VALUE_BYTES_MIN: usize = 16;

/// Fewest bytes of a bearer token; it must also mix letters and digits.
pub const BEARER_TOKEN_BYTES_MIN: usize = 16;

/// Exact length of an AWS secret access key.
pub const AWS_SECRET_KEY_BYTES: usize = 40;

/// Fewest bytes of an AWS session token value.
pub const AWS_SESSION_TOKEN_BYTES_MIN: usize = 100;

pub use crate::limits::SECRET_WORD_TAIL_BYTES_MAX;

/// One credential shape found in a text; never carries the matched value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretFinding {
    /// The shape's name, such as `"aws_access_key_id"`.
    pub shape: &'static str,
    /// Byte offset where the match begins: the token itself for prefixed
    /// tokens, the context keyword for assignments, the user info of a URL.
    pub offset: usize,
}

/// Returns the first credential shape in `text`, if any.
///
/// "First" is by start offset; at one offset the rule listed first wins.
pub fn scan(text: &str) -> Option<SecretFinding> {
    let bytes = text.as_bytes();
    // Prefilter: every rule starts with at least two fixed bytes, so only a
    // position whose byte pair is in `TRIGGER_PAIRS` is tried (the last byte
    // never starts a match). Same result as trying every position.
    bytes
        .windows(2)
        .enumerate()
        .filter(|(_, w)| pair_may_trigger(w[0], w[1]))
        .find_map(|(at, _)| match_at(bytes, at))
}

/// `scan` without the prefilter: every position tried (the reference the
/// prefilter is tested against).
#[cfg(test)]
fn scan_every_position(text: &str) -> Option<SecretFinding> {
    let bytes = text.as_bytes();
    (0..bytes.len()).find_map(|at| match_at(bytes, at))
}

/// A message safe to print: when `message` would echo a credential-shaped
/// value (a parser quoting the offending input), only the text before that
/// value is kept, with a note saying the rest is withheld.
pub fn withhold(message: &str) -> String {
    match scan(message) {
        None => message.to_string(),
        Some(found) => {
            let cut = message[..found.offset]
                .rfind(['\n', '"', '\'', '`', '='])
                .unwrap_or(found.offset);
            format!(
                "{}<withheld: the message would echo a value that looks like a credential ({})>",
                &message[..cut],
                found.shape
            )
        }
    }
}

/// A name the user typed, safe to echo in an error about it (an unknown
/// lineage or group): quoted when it is a plain name (letters, digits,
/// `.`, `_`, `-`, at most `ECHOED_NAME_BYTES_MAX` bytes), else described
/// by length only. A name split from a longer argument (`LINEAGE/GROUP`)
/// may hold part of a credential too short for `scan` to know (issue 29).
pub fn echo_name(name: &str) -> String {
    let plain = name.len() <= crate::limits::ECHOED_NAME_BYTES_MAX
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if plain {
        format!("{name:?}")
    } else {
        describe_redacted(name)
    }
}

/// A value's redacted echo that is safe to print in an error: length and
/// shape only, never the value.
pub fn describe_redacted(text: &str) -> String {
    let bytes = text.len();
    let chars = text.chars().count();
    match scan(text) {
        Some(found) => format!(
            "<redacted: {bytes} bytes, {chars} chars, looks like {} at byte {}>",
            found.shape, found.offset
        ),
        None => format!("<redacted: {bytes} bytes, {chars} chars>"),
    }
}

// ---------------------------------------------------------------------------
// Byte classes.

fn is_alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

fn is_upper_alnum(b: u8) -> bool {
    b.is_ascii_uppercase() || b.is_ascii_digit()
}

fn is_b64url(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

fn is_b64(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'+' || b == b'/'
}

fn is_b64_padded(b: u8) -> bool {
    is_b64(b) || b == b'='
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Bytes of an assigned value or bearer token.
fn is_value(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'~' | b'+' | b'/' | b'=' | b'-')
}

fn is_separator(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'"' | b'\'' | b'\\' | b'=' | b':' | b'>')
}

/// A byte after a value that shows the value was masked or cut short for
/// display (`sk-l****ret`, `abc…`), so what was read is not the secret.
fn is_mask(b: u8) -> bool {
    b == b'*' || !b.is_ascii()
}

// ---------------------------------------------------------------------------
// Small readers. Each takes a byte slice and an index and never panics.

fn starts_with_at(bytes: &[u8], at: usize, prefix: &[u8]) -> bool {
    bytes.get(at..at + prefix.len()) == Some(prefix)
}

fn starts_with_ci_at(bytes: &[u8], at: usize, prefix: &[u8]) -> bool {
    bytes
        .get(at..at + prefix.len())
        .is_some_and(|s| s.eq_ignore_ascii_case(prefix))
}

/// Length of the run of `class` bytes starting at `at`, reading at most `max`.
fn run_len(bytes: &[u8], at: usize, class: impl Fn(u8) -> bool, max: usize) -> usize {
    bytes
        .get(at..)
        .unwrap_or(&[])
        .iter()
        .take(max)
        .take_while(|&&b| class(b))
        .count()
}

/// Whether position `at` starts a token: the byte before is not in `class`,
/// or is the letter of a JSON escape such as `\n`.
fn left_boundary(bytes: &[u8], at: usize, class: fn(u8) -> bool) -> bool {
    if at == 0 {
        return true;
    }
    let prev = bytes[at - 1];
    if !class(prev) {
        return true;
    }
    at >= 2 && bytes[at - 2] == b'\\' && matches!(prev, b'n' | b't' | b'r')
}

/// Matches words joined by nothing or by one `_` or `-`, ignoring case
/// (`secret_access_key`, `SecretAccessKey`, `SECRET-ACCESS-KEY`). Blanks do
/// not join, so prose such as "the API key: expected ..." is no assignment.
/// Returns the index after the last word.
fn match_words(bytes: &[u8], at: usize, words: &[&str]) -> Option<usize> {
    let mut j = at;
    for (n, word) in words.iter().enumerate() {
        if n > 0 && matches!(bytes.get(j), Some(b'_' | b'-')) {
            j += 1;
        }
        if !starts_with_ci_at(bytes, j, word.as_bytes()) {
            return None;
        }
        j += word.len();
    }
    Some(j)
}

/// Skips an assignment separator (`=`, `: `, `": "`, `\": \"`, `=>`) of at
/// most [`ASSIGNMENT_SEPARATOR_BYTES_MAX`] bytes containing `=` or `:`.
/// Returns the index of the value's first byte.
fn skip_separator(bytes: &[u8], at: usize) -> Option<usize> {
    let gap = run_len(bytes, at, is_separator, ASSIGNMENT_SEPARATOR_BYTES_MAX);
    let end = at + gap;
    if bytes.get(end).copied().is_some_and(is_separator) {
        return None; // the gap is longer than the bound
    }
    bytes[at..end]
        .iter()
        .any(|&b| b == b'=' || b == b':')
        .then_some(end)
}

// ---------------------------------------------------------------------------
// Prefixed tokens.

/// A token recognised by its vendor prefix and a body of realistic length.
struct TokenRule {
    prefix: &'static str,
    shape: &'static str,
    body: fn(u8) -> bool,
    /// Fewest body bytes; with `exact`, the only allowed body length.
    body_bytes_min: usize,
    /// The body has exactly `body_bytes_min` bytes and no letter, digit or
    /// body byte follows.
    exact: bool,
    /// The body must contain an ASCII digit.
    needs_digit: bool,
}

const fn token(
    prefix: &'static str,
    shape: &'static str,
    body: fn(u8) -> bool,
    min: usize,
) -> TokenRule {
    TokenRule {
        prefix,
        shape,
        body,
        body_bytes_min: min,
        exact: false,
        needs_digit: false,
    }
}

impl TokenRule {
    /// The body has exactly `body_bytes_min` bytes.
    const fn exact_length(mut self) -> Self {
        self.exact = true;
        self
    }

    /// The body must contain a digit.
    const fn with_digit(mut self) -> Self {
        self.needs_digit = true;
        self
    }
}

/// Longer prefixes come before the shorter ones they start with.
const TOKEN_RULES: &[TokenRule] = &[
    // AWS access key ids. AKIA: long-term IAM user key; ASIA: temporary STS
    // key; ABIA: STS service bearer token key; ACCA: context-specific
    // credential. Other unique-id prefixes (AROA role, AIDA user, ANPA policy,
    // APKA public key) identify, they do not authenticate, and pass.
    token("AKIA", "aws_access_key_id", is_upper_alnum, 16).exact_length(),
    token("ASIA", "aws_access_key_id", is_upper_alnum, 16).exact_length(),
    token("ABIA", "aws_access_key_id", is_upper_alnum, 16).exact_length(),
    token("ACCA", "aws_access_key_id", is_upper_alnum, 16).exact_length(),
    token("sk-ant-oat", "anthropic_oauth_token", is_b64url, 40),
    token("sk-ant-admin", "anthropic_admin_key", is_b64url, 40),
    token("sk-ant-", "anthropic_api_key", is_b64url, 40),
    token("sk-proj-", "openai_project_key", is_b64url, 40),
    token("sk-svcacct-", "openai_service_account_key", is_b64url, 40),
    token("sk-admin-", "openai_admin_key", is_b64url, 40),
    token("sk-or-", "openrouter_api_key", is_b64url, 40),
    // Legacy OpenAI and the many OpenAI-compatible vendors (DeepSeek,
    // Moonshot, ...): `sk-` and at least 32 letters and digits, no dashes,
    // so hyphenated words such as `sk-learn-...` never reach the length.
    token("sk-", "openai_style_api_key", is_alnum, 32).with_digit(),
    token("brvk_", "bitrouter_virtual_key", is_b64url, 40),
    token("ghp_", "github_token", is_alnum, 36),
    token("gho_", "github_token", is_alnum, 36),
    token("ghu_", "github_token", is_alnum, 36),
    token("ghs_", "github_token", is_alnum, 36),
    token("ghr_", "github_token", is_alnum, 36),
    token("github_pat_", "github_fine_grained_token", is_word, 60),
    token("glpat-", "gitlab_token", is_b64url, 20),
    token("xoxb-", "slack_token", is_b64url, 20).with_digit(),
    token("xoxp-", "slack_token", is_b64url, 20).with_digit(),
    token("xoxa-", "slack_token", is_b64url, 20).with_digit(),
    token("xoxr-", "slack_token", is_b64url, 20).with_digit(),
    token("xoxs-", "slack_token", is_b64url, 20).with_digit(),
    token("xoxe-", "slack_token", is_b64url, 20).with_digit(),
    token("xapp-", "slack_app_token", is_b64url, 20).with_digit(),
    token("hooks.slack.com/services/", "slack_webhook_url", is_b64, 20),
    token("AIza", "google_api_key", is_b64url, 35).exact_length(),
    token("sk_live_", "stripe_secret_key", is_alnum, 24),
    token("sk_test_", "stripe_secret_key", is_alnum, 24),
    token("rk_live_", "stripe_restricted_key", is_alnum, 24),
    token("rk_test_", "stripe_restricted_key", is_alnum, 24),
    token("whsec_", "stripe_webhook_secret", is_alnum, 32),
    token("hf_", "huggingface_token", is_alnum, 30),
    token("npm_", "npm_token", is_alnum, 36),
];

fn match_token_rule(bytes: &[u8], at: usize, rule: &TokenRule) -> bool {
    if !starts_with_at(bytes, at, rule.prefix.as_bytes()) {
        return false;
    }
    let body = at + rule.prefix.len();
    let read_max = if rule.exact {
        rule.body_bytes_min + 1
    } else {
        rule.body_bytes_min
    };
    let len = run_len(bytes, body, rule.body, read_max);
    let long_enough = if rule.exact {
        len == rule.body_bytes_min
            && !bytes
                .get(body + len)
                .is_some_and(|&b| is_alnum(b) || (rule.body)(b))
    } else {
        len >= rule.body_bytes_min
    };
    long_enough && (!rule.needs_digit || bytes[body..body + len].iter().any(u8::is_ascii_digit))
}

/// BitRouter API key: `brk_<token_id>.<secret>` (parts of letters, digits,
/// `_`, `-`), or a long undotted `brk_` token.
fn match_bitrouter_key(bytes: &[u8], at: usize) -> bool {
    const PART_BYTES_MIN: usize = 8;
    const UNDOTTED_BYTES_MIN: usize = 32;
    if !starts_with_at(bytes, at, b"brk_") {
        return false;
    }
    let id = at + 4;
    let id_len = run_len(bytes, id, is_b64url, UNDOTTED_BYTES_MIN);
    if id_len >= UNDOTTED_BYTES_MIN {
        return true;
    }
    id_len >= PART_BYTES_MIN
        && bytes.get(id + id_len) == Some(&b'.')
        && run_len(bytes, id + id_len + 1, is_b64url, PART_BYTES_MIN) >= PART_BYTES_MIN
}

/// JSON Web Token: three base64url segments, the first starting `eyJ`
/// (`{"`). A trigger sits at the start of a run (or one byte in, after a
/// JSON escape) and reads that run and the next two, so each run is read a
/// bounded number of times and this stays linear.
fn match_jwt(bytes: &[u8], at: usize) -> bool {
    const HEADER_BYTES_MIN: usize = 10;
    const PAYLOAD_BYTES_MIN: usize = 10;
    const SIGNATURE_BYTES_MIN: usize = 16;
    if !starts_with_at(bytes, at, b"eyJ") || !left_boundary(bytes, at, is_b64url) {
        return false;
    }
    let header = run_len(bytes, at, is_b64url, usize::MAX);
    let payload_at = at + header + 1;
    if header < HEADER_BYTES_MIN || bytes.get(at + header) != Some(&b'.') {
        return false;
    }
    let payload = run_len(bytes, payload_at, is_b64url, usize::MAX);
    let signature_at = payload_at + payload + 1;
    payload >= PAYLOAD_BYTES_MIN
        && bytes.get(payload_at + payload) == Some(&b'.')
        && run_len(bytes, signature_at, is_b64url, SIGNATURE_BYTES_MIN) >= SIGNATURE_BYTES_MIN
}

/// PEM private key header: `-----BEGIN <label>-----` whose label contains
/// `PRIVATE KEY` (PKCS#8, RSA, EC, DSA, OPENSSH, ENCRYPTED, PGP ... BLOCK).
fn match_pem_private_key(bytes: &[u8], at: usize) -> bool {
    const BEGIN: &[u8] = b"-----BEGIN ";
    if !starts_with_at(bytes, at, BEGIN) {
        return false;
    }
    let label_at = at + BEGIN.len();
    let is_label = |b: u8| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b' ';
    let len = run_len(bytes, label_at, is_label, PEM_LABEL_BYTES_MAX + 1);
    if len > PEM_LABEL_BYTES_MAX || !starts_with_at(bytes, label_at + len, b"-----") {
        return false;
    }
    bytes[label_at..label_at + len]
        .windows(b"PRIVATE KEY".len())
        .any(|w| w == b"PRIVATE KEY")
}

/// Password in a URL: `scheme://<user>:<password>@<host>`. Triggered at the `:` of
/// `://`; the user info ends at the first `/`, so two triggers never read the
/// same bytes and the work stays linear. Reported at the user info.
fn match_url_password(bytes: &[u8], at: usize) -> Option<usize> {
    if !starts_with_at(bytes, at, b"://") || at == 0 || !is_alnum(bytes[at - 1]) {
        return None;
    }
    let info = at + 3;
    let stop = |b: u8| {
        b.is_ascii_whitespace()
            || matches!(
                b,
                b'/' | b'?' | b'#' | b'@' | b'"' | b'\'' | b'<' | b'>' | b'\\' | b'`'
            )
    };
    let len = run_len(bytes, info, |b| !stop(b), usize::MAX);
    if bytes.get(info + len) != Some(&b'@') {
        return None;
    }
    let host_ok = bytes
        .get(info + len + 1)
        .is_some_and(|&b| is_alnum(b) || b == b'[');
    let userinfo = &bytes[info..info + len];
    let colon = userinfo.iter().position(|&b| b == b':')?;
    let password = &userinfo[colon + 1..];
    let referenced = matches!(password.first(), None | Some(b'$' | b'{' | b'<' | b'%'));
    let masked = password.contains(&b'*') || password.iter().all(|&b| b == b'x' || b == b'X');
    (host_ok && !referenced && !masked).then_some(info)
}

/// `Bearer <token>` (any case), as in `Authorization: Bearer ...` or
/// `"authorization":"Bearer ..."`.
fn match_bearer(bytes: &[u8], at: usize) -> bool {
    if !starts_with_ci_at(bytes, at, b"bearer") || (at > 0 && bytes[at - 1].is_ascii_alphabetic()) {
        return false;
    }
    let gap_at = at + b"bearer".len();
    let gap = run_len(
        bytes,
        gap_at,
        |b| b == b' ' || b == b'\t',
        ASSIGNMENT_SEPARATOR_BYTES_MAX,
    );
    gap > 0 && value_is_secret(bytes, gap_at + gap, BEARER_TOKEN_BYTES_MIN, true)
}

/// `Authorization: Basic <base64 user:password>`.
fn match_basic_auth(bytes: &[u8], at: usize) -> bool {
    const CREDENTIALS_BYTES_MIN: usize = 8;
    let Some(end) = match_words(bytes, at, &["authorization"]) else {
        return false;
    };
    let Some(value) = skip_separator(bytes, end) else {
        return false;
    };
    if !starts_with_ci_at(bytes, value, b"basic ") {
        return false;
    }
    let creds = value + b"basic ".len();
    let len = run_len(bytes, creds, is_b64_padded, VALUE_SCAN_BYTES_MAX);
    len >= CREDENTIALS_BYTES_MIN && !bytes.get(creds + len).copied().is_some_and(is_mask)
}

// ---------------------------------------------------------------------------
// Assignments: a context keyword, a separator, a value.

/// Values that stand in for a credential without being one, compared
/// ignoring case. The local-server entries are documented defaults:
/// BitRouter's harness (`bitrouter-local`), llama.cpp (`sk-no-key-required`)
/// and LM Studio (`lm-studio`).
const PLACEHOLDER_VALUES: &[&str] = &[
    "redacted",
    "changeme",
    "placeholder",
    "undefined",
    "not-needed",
    "not_needed",
    "your-api-key",
    "your_api_key",
    "your-token",
    "your_token",
    "bitrouter-local",
    "sk-no-key-required",
    "lm-studio",
];

/// Whether the value starting at `at` is a secret rather than a reference
/// (env var name, path), a mask (`sk-l****ret`), an elision (`sk-ant-...`)
/// or a placeholder. With `mixed`, it must hold letters and digits.
fn value_is_secret(bytes: &[u8], at: usize, min: usize, mixed: bool) -> bool {
    let len = run_len(bytes, at, is_value, VALUE_SCAN_BYTES_MAX);
    if len >= VALUE_SCAN_BYTES_MAX {
        return true; // no end in sight, so no mask in sight either: fail closed
    }
    let value = &bytes[at..at + len];
    if len < min || bytes.get(at + len).copied().is_some_and(is_mask) {
        return false;
    }
    let path = matches!(value[0], b'/' | b'.' | b'~');
    let elided = value.windows(3).any(|w| w == b"...");
    let env_name = value[0].is_ascii_uppercase()
        && value.contains(&b'_')
        && value.iter().all(|&b| is_upper_alnum(b) || b == b'_');
    let repeated = value.iter().all(|&b| b == value[0]);
    let placeholder = PLACEHOLDER_VALUES
        .iter()
        .any(|p| value.eq_ignore_ascii_case(p.as_bytes()));
    let mixed_ok = !mixed
        || (value.iter().any(u8::is_ascii_digit) && value.iter().any(u8::is_ascii_alphabetic));
    !path && !elided && !env_name && !repeated && !placeholder && mixed_ok
}

/// What an assignment's value must look like.
enum ValueRule {
    /// Any unmasked, unreferenced value of at least this many bytes.
    Named(usize),
    /// As `Named`, and mixing letters and digits.
    Generic(usize),
    /// Exactly this many base64 bytes, nothing base64 after.
    Base64Exact(usize),
    /// At least this many base64 bytes.
    Base64Min(usize),
}

struct AssignmentRule {
    words: &'static [&'static str],
    shape: &'static str,
    value: ValueRule,
}

const ASSIGNMENT_RULES: &[AssignmentRule] = &[
    AssignmentRule {
        words: &["secret", "access", "key"],
        shape: "aws_secret_access_key",
        value: ValueRule::Base64Exact(AWS_SECRET_KEY_BYTES),
    },
    AssignmentRule {
        words: &["aws", "secret", "key"],
        shape: "aws_secret_access_key",
        value: ValueRule::Base64Exact(AWS_SECRET_KEY_BYTES),
    },
    AssignmentRule {
        words: &["session", "token"],
        shape: "aws_session_token",
        value: ValueRule::Base64Min(AWS_SESSION_TOKEN_BYTES_MIN),
    },
    AssignmentRule {
        words: &["security", "token"],
        shape: "aws_session_token",
        value: ValueRule::Base64Min(AWS_SESSION_TOKEN_BYTES_MIN),
    },
    AssignmentRule {
        words: &["claude", "code", "oauth", "token"],
        shape: "claude_code_oauth_token",
        value: ValueRule::Named(NAMED_VALUE_BYTES_MIN),
    },
    AssignmentRule {
        words: &["anthropic", "auth", "token"],
        shape: "auth_token_assignment",
        value: ValueRule::Named(NAMED_VALUE_BYTES_MIN),
    },
    AssignmentRule {
        words: &["anthropic", "api", "key"],
        shape: "api_key_assignment",
        value: ValueRule::Named(NAMED_VALUE_BYTES_MIN),
    },
    AssignmentRule {
        words: &["openai", "api", "key"],
        shape: "api_key_assignment",
        value: ValueRule::Named(NAMED_VALUE_BYTES_MIN),
    },
    AssignmentRule {
        words: &["bitrouter", "api", "key"],
        shape: "api_key_assignment",
        value: ValueRule::Named(NAMED_VALUE_BYTES_MIN),
    },
    // Any other `api_key` / `x-api-key` / `apiKey` field (Harbor writes
    // `llm_kwargs.api_key` in plain text).
    AssignmentRule {
        words: &["api", "key"],
        shape: "api_key_assignment",
        value: ValueRule::Generic(GENERIC_VALUE_BYTES_MIN),
    },
];

fn match_assignment(bytes: &[u8], at: usize, rule: &AssignmentRule) -> bool {
    let Some(end) = match_words(bytes, at, rule.words) else {
        return false;
    };
    let Some(value) = skip_separator(bytes, end) else {
        return false;
    };
    match rule.value {
        ValueRule::Named(min) => value_is_secret(bytes, value, min, false),
        ValueRule::Generic(min) => value_is_secret(bytes, value, min, true),
        ValueRule::Base64Exact(n) => {
            run_len(bytes, value, is_b64, n + 1) == n
                && !bytes
                    .get(value + n)
                    .is_some_and(|&b| is_b64_padded(b) || is_b64url(b) || is_mask(b))
        }
        ValueRule::Base64Min(n) => run_len(bytes, value, is_b64_padded, n) >= n,
    }
}

/// An AWS secret access key named by the word `secret` alone, without its
/// key id: a traceback's "signing with secret <key>", a note's
/// `secret=<key>`, a `client_secret: <key>` (BIND-8). The word (any case,
/// then at most [`SECRET_WORD_TAIL_BYTES_MAX`] letters, `_` or `-`), a
/// separator (blanks, quotes, `=`, `:`), then exactly
/// [`AWS_SECRET_KEY_BYTES`] base64 bytes that mix upper and lower case with a
/// digit, `+` or `/` (so a hex digest or a word is not one), nothing base64 or
/// masked after.
fn match_lone_aws_secret(bytes: &[u8], at: usize) -> bool {
    if !starts_with_ci_at(bytes, at, b"secret") {
        return false;
    }
    let word_end = at + 6;
    let tail = run_len(
        bytes,
        word_end,
        |b| b.is_ascii_alphabetic() || b == b'_' || b == b'-',
        SECRET_WORD_TAIL_BYTES_MAX + 1,
    );
    if tail > SECRET_WORD_TAIL_BYTES_MAX {
        return false;
    }
    let gap_at = word_end + tail;
    let gap = run_len(
        bytes,
        gap_at,
        is_separator,
        ASSIGNMENT_SEPARATOR_BYTES_MAX + 1,
    );
    if gap == 0 || gap > ASSIGNMENT_SEPARATOR_BYTES_MAX {
        return false;
    }
    let value = gap_at + gap;
    let n = AWS_SECRET_KEY_BYTES;
    if run_len(bytes, value, is_b64, n + 1) != n
        || bytes
            .get(value + n)
            .is_some_and(|&b| is_b64_padded(b) || is_b64url(b) || is_mask(b))
    {
        return false;
    }
    let key = &bytes[value..value + n];
    key.iter().any(u8::is_ascii_uppercase)
        && key.iter().any(u8::is_ascii_lowercase)
        && key
            .iter()
            .any(|&b| b.is_ascii_digit() || b == b'+' || b == b'/')
}

// ---------------------------------------------------------------------------
// Dispatch.

/// The credential whose trigger starts at byte `at`, if any. Each check
/// reads a bounded number of bytes, except the JWT and URL runs noted above.
fn match_at(bytes: &[u8], at: usize) -> Option<SecretFinding> {
    let first = bytes[at];
    if first == b':' {
        return match_url_password(bytes, at).map(|offset| SecretFinding {
            shape: "url_embedded_password",
            offset,
        });
    }
    match_shape_at(bytes, at).map(|shape| SecretFinding { shape, offset: at })
}

/// Whether some rule can start at a byte, so most bytes are passed over
/// with one table look-up.
const TRIGGER_BYTES: [bool; 256] = trigger_bytes();

const fn trigger_bytes() -> [bool; 256] {
    let mut table = [false; 256];
    let mut i = 0;
    while i < TOKEN_RULES.len() {
        table[TOKEN_RULES[i].prefix.as_bytes()[0] as usize] = true;
        i += 1;
    }
    let mut i = 0;
    while i < ASSIGNMENT_RULES.len() {
        let first = ASSIGNMENT_RULES[i].words[0].as_bytes()[0];
        table[first.to_ascii_lowercase() as usize] = true;
        table[first.to_ascii_uppercase() as usize] = true;
        i += 1;
    }
    // brk_, eyJ (JWT), Bearer, Authorization, -----BEGIN, ://
    let others = b"beEBaA-:";
    let mut i = 0;
    while i < others.len() {
        table[others[i] as usize] = true;
        i += 1;
    }
    table
}

/// The first two bytes any rule can start with, as a bitset over
/// `first << 8 | second`: token prefixes as written, keywords in any case,
/// and the fixed starts `brk_`, `eyJ`, `-----BEGIN`, `://`.
const TRIGGER_PAIRS: [u64; 1024] = trigger_pairs();

fn pair_may_trigger(first: u8, second: u8) -> bool {
    let i = (first as usize) << 8 | second as usize;
    TRIGGER_PAIRS[i >> 6] & (1 << (i & 63)) != 0
}

const fn set_pair(table: &mut [u64; 1024], first: u8, second: u8) {
    let i = (first as usize) << 8 | second as usize;
    table[i >> 6] |= 1 << (i & 63);
}

/// Sets the pair in every combination of ASCII case.
const fn set_pair_any_case(table: &mut [u64; 1024], first: u8, second: u8) {
    let firsts = [first.to_ascii_lowercase(), first.to_ascii_uppercase()];
    let seconds = [second.to_ascii_lowercase(), second.to_ascii_uppercase()];
    let mut i = 0;
    while i < 2 {
        let mut j = 0;
        while j < 2 {
            set_pair(table, firsts[i], seconds[j]);
            j += 1;
        }
        i += 1;
    }
}

const fn trigger_pairs() -> [u64; 1024] {
    let mut table = [0u64; 1024];
    // prefixed tokens: `starts_with_at`, case as written
    let mut i = 0;
    while i < TOKEN_RULES.len() {
        let p = TOKEN_RULES[i].prefix.as_bytes();
        assert!(p.len() >= 2);
        set_pair(&mut table, p[0], p[1]);
        i += 1;
    }
    // assignments: the first keyword, any case (`match_words`)
    let mut i = 0;
    while i < ASSIGNMENT_RULES.len() {
        let w = ASSIGNMENT_RULES[i].words[0].as_bytes();
        assert!(w.len() >= 2);
        set_pair_any_case(&mut table, w[0], w[1]);
        i += 1;
    }
    set_pair(&mut table, b'b', b'r'); // brk_ (match_bitrouter_key)
    set_pair(&mut table, b'e', b'y'); // eyJ (match_jwt)
    set_pair(&mut table, b'-', b'-'); // -----BEGIN (match_pem_private_key)
    set_pair(&mut table, b':', b'/'); // :// (match_url_password)
    set_pair_any_case(&mut table, b'b', b'e'); // bearer, any case (match_bearer)
    set_pair_any_case(&mut table, b'a', b'u'); // authorization, any case (match_basic_auth)
    table
}

/// The shape of a credential whose trigger starts at byte `at`, if any.
fn match_shape_at(bytes: &[u8], at: usize) -> Option<&'static str> {
    let first = bytes[at];
    if !TRIGGER_BYTES[first as usize] {
        return None;
    }
    if first == b'-' {
        return match_pem_private_key(bytes, at).then_some("pem_private_key");
    }
    if match_jwt(bytes, at) {
        return Some("jwt");
    }
    if match_bearer(bytes, at) {
        return Some("oauth_bearer_token");
    }
    if match_basic_auth(bytes, at) {
        return Some("http_basic_credentials");
    }
    let lower = first.to_ascii_lowercase();
    let assignment = ASSIGNMENT_RULES
        .iter()
        .filter(|r| r.words[0].as_bytes()[0] == lower)
        .find(|r| match_assignment(bytes, at, r));
    if let Some(rule) = assignment {
        return Some(rule.shape);
    }
    if match_lone_aws_secret(bytes, at) {
        return Some("aws_secret_access_key");
    }
    if !left_boundary(bytes, at, is_alnum) {
        return None;
    }
    if match_bitrouter_key(bytes, at) {
        return Some("bitrouter_api_key");
    }
    TOKEN_RULES
        .iter()
        .filter(|r| r.prefix.as_bytes()[0] == first)
        .find(|r| match_token_rule(bytes, at, r))
        .map(|r| r.shape)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Every credential-shaped value below is fabricated at test time from a
    // seeded generator and split prefixes, so this file holds no literal that
    // a secret scanner would flag.

    const UPPER_BASE32: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    const B64URL: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const HEX: &[u8] = b"0123456789abcdef";
    const LOWER: &[u8] = b"abcdefghijklmnopqrstuvwxyz";

    /// Deterministic xorshift generator for fake key bodies.
    struct Fake(u64);

    impl Fake {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        /// `len` bytes of `alphabet`; the second byte is a digit when the
        /// alphabet has digits, so digit-requiring shapes always qualify.
        fn body(&mut self, alphabet: &[u8], len: usize) -> String {
            let mut out: Vec<u8> = (0..len)
                .map(|_| alphabet[(self.next() % alphabet.len() as u64) as usize])
                .collect();
            if len > 1 && alphabet.contains(&b'7') {
                out[1] = b'7';
            }
            String::from_utf8(out).unwrap()
        }
    }

    /// Joins prefix pieces so no full vendor prefix appears in the source.
    fn p(parts: &[&str]) -> String {
        parts.concat()
    }

    struct Sample {
        shape: &'static str,
        text: String,
        value: String,
    }

    fn sample(shape: &'static str, before: &str, value: String, after: &str) -> Sample {
        Sample {
            shape,
            text: format!("{before}{value}{after}"),
            value,
        }
    }

    /// The positive corpus: one realistic shape per row.
    fn positive_corpus() -> Vec<Sample> {
        let mut f = Fake(0x5eed_cafe_f00d_0001);
        let mut v = Vec::new();
        for prefix in [["AK", "IA"], ["AS", "IA"], ["AB", "IA"], ["AC", "CA"]] {
            let id = p(&[prefix[0], prefix[1], &f.body(UPPER_BASE32, 16)]);
            v.push(sample(
                "aws_access_key_id",
                "aws_access_key_id = ",
                id,
                "\n",
            ));
        }
        let id = p(&["AK", "IA", &f.body(UPPER_BASE32, 16)]);
        v.push(sample(
            "aws_access_key_id",
            "{\"k\":\"line one\\n",
            id,
            "\"}",
        ));
        for (before, after) in [
            ("aws_secret_access_key=", "\n"),
            ("AWS_SECRET_ACCESS_KEY: ", ""),
            ("{\"SecretAccessKey\": \"", "\"}"),
            ("aws_secret_key = '", "'"),
            ("export AWS_SECRET_ACCESS_KEY=\"", "\""),
        ] {
            v.push(sample(
                "aws_secret_access_key",
                before,
                f.body(B64, 40),
                after,
            ));
        }
        // BIND-8: a secret access key without its key id, named by the word
        // `secret` alone (a traceback, a note, an OAuth-style field).
        for (before, after) in [
            ("botocore: signing with secret ", " for s3"),
            ("secret=", ""),
            ("{\"client_secret\": \"", "\"}"),
            ("SecretKey: ", "\n"),
        ] {
            v.push(sample(
                "aws_secret_access_key",
                before,
                p(&["Ab1", &f.body(B64, 37)]),
                after,
            ));
        }
        let token = p(&["IQoJb3JpZ2luX2Vj", &f.body(B64, 340), "=="]);
        v.push(sample(
            "aws_session_token",
            "aws_session_token = ",
            token,
            "\n",
        ));
        let token = p(&["FwoGZXIvYXdzE", &f.body(B64, 200)]);
        v.push(sample(
            "aws_session_token",
            "{\"SessionToken\": \"",
            token,
            "\"}",
        ));
        let token = p(&["IQoJb3JpZ2luX2Vj", &f.body(B64, 300)]);
        v.push(sample(
            "aws_session_token",
            "X-Amz-Security-Token: ",
            token,
            "",
        ));
        let ant = p(&["sk", "-ant-", "api03-", &f.body(B64URL, 93), "AA"]);
        v.push(sample("anthropic_api_key", "key ", ant, " end"));
        let oat = p(&["sk", "-ant-", "oat01-", &f.body(B64URL, 95)]);
        v.push(sample("anthropic_oauth_token", "", oat, ""));
        let admin = p(&["sk", "-ant-", "admin01-", &f.body(B64URL, 93)]);
        v.push(sample("anthropic_admin_key", "", admin, ""));
        let proj = p(&["sk", "-proj-", &f.body(B64URL, 156)]);
        v.push(sample("openai_project_key", "\"", proj, "\""));
        let svc = p(&["sk", "-svcacct-", &f.body(B64URL, 120)]);
        v.push(sample("openai_service_account_key", "", svc, ""));
        let adm = p(&["sk", "-admin-", &f.body(B64URL, 120)]);
        v.push(sample("openai_admin_key", "", adm, ""));
        let legacy = p(&[
            "sk",
            "-",
            &f.body(ALNUM, 20),
            "T3Blbk",
            "FJ",
            &f.body(ALNUM, 20),
        ]);
        v.push(sample("openai_style_api_key", "using ", legacy, "."));
        let compat = p(&["sk", "-", &f.body(HEX, 32)]);
        v.push(sample("openai_style_api_key", "deepseek: ", compat, ""));
        let or = p(&["sk", "-or-", "v1-", &f.body(HEX, 64)]);
        v.push(sample("openrouter_api_key", "", or, ""));
        let brk = p(&["br", "k_", &f.body(ALNUM, 16), ".", &f.body(B64URL, 43)]);
        v.push(sample("bitrouter_api_key", "Bearer-less: ", brk, ""));
        let brk = p(&["br", "k_", &f.body(HEX, 48)]);
        v.push(sample("bitrouter_api_key", "", brk, ""));
        let brvk = p(&["br", "vk_", &f.body(B64URL, 43)]);
        v.push(sample("bitrouter_virtual_key", "", brvk, ""));
        for prefix in ["ghp", "gho", "ghu", "ghs", "ghr"] {
            let gh = p(&[prefix, "_", &f.body(ALNUM, 36)]);
            v.push(sample("github_token", "token=", gh, ""));
        }
        let pat = p(&[
            "github",
            "_pat_",
            &f.body(ALNUM, 22),
            "_",
            &f.body(ALNUM, 59),
        ]);
        v.push(sample("github_fine_grained_token", "", pat, ""));
        let glpat = p(&["gl", "pat-", &f.body(B64URL, 20)]);
        v.push(sample("gitlab_token", "", glpat, ""));
        let slack = p(&[
            "xo",
            "xb-",
            &f.body(b"0123456789", 12),
            "-",
            &f.body(b"0123456789", 13),
            "-",
            &f.body(ALNUM, 24),
        ]);
        v.push(sample("slack_token", "", slack, ""));
        let slack = p(&[
            "xo",
            "xp-",
            &f.body(b"0123456789", 12),
            "-",
            &f.body(b"0123456789", 12),
            "-",
            &f.body(HEX, 32),
        ]);
        v.push(sample("slack_token", "", slack, ""));
        let xapp = p(&[
            "xa",
            "pp-1-A",
            &f.body(UPPER_BASE32, 10),
            "-",
            &f.body(b"0123456789", 13),
            "-",
            &f.body(HEX, 64),
        ]);
        v.push(sample("slack_app_token", "", xapp, ""));
        let hook = p(&[
            "hooks.",
            "slack.com/services/T",
            &f.body(UPPER_BASE32, 8),
            "/B",
            &f.body(UPPER_BASE32, 10),
            "/",
            &f.body(ALNUM, 24),
        ]);
        v.push(sample("slack_webhook_url", "https://", hook, ""));
        let google = p(&["AI", "za", &f.body(B64URL, 35)]);
        v.push(sample("google_api_key", "key=", google, "&q=1"));
        let stripe = p(&["sk", "_live_", &f.body(ALNUM, 99)]);
        v.push(sample("stripe_secret_key", "", stripe, ""));
        let stripe = p(&["rk", "_live_", &f.body(ALNUM, 99)]);
        v.push(sample("stripe_restricted_key", "", stripe, ""));
        let whsec = p(&["wh", "sec_", &f.body(ALNUM, 32)]);
        v.push(sample("stripe_webhook_secret", "", whsec, ""));
        let opaque = f.body(B64URL, 40);
        v.push(sample(
            "oauth_bearer_token",
            "Authorization: Bearer ",
            opaque,
            "\r\n",
        ));
        let opaque = f.body(ALNUM, 32);
        v.push(sample(
            "oauth_bearer_token",
            "{\"authorization\":\"Bearer ",
            opaque,
            "\"}",
        ));
        let basic = f.body(B64, 24);
        v.push(sample(
            "http_basic_credentials",
            "Authorization: Basic ",
            basic,
            "",
        ));
        for label in [
            "PRIVATE KEY",
            "RSA PRIVATE KEY",
            "EC PRIVATE KEY",
            "DSA PRIVATE KEY",
            "OPENSSH PRIVATE KEY",
            "ENCRYPTED PRIVATE KEY",
            "PGP PRIVATE KEY BLOCK",
        ] {
            let pem = format!("-----BEGIN {label}-----\n{}\n", f.body(B64, 64));
            v.push(sample("pem_private_key", "key:\n", pem, "-----END-----"));
        }
        let jwt = p(&[
            "ey",
            "JhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9",
            ".",
            "ey",
            "J",
            &f.body(B64URL, 60),
            ".",
            &f.body(B64URL, 43),
        ]);
        v.push(sample("jwt", "id_token=", jwt, ""));
        let oat = p(&["sk", "-ant-", "oat01-", &f.body(B64URL, 95)]);
        v.push(sample(
            "claude_code_oauth_token",
            "CLAUDE_CODE_OAUTH_TOKEN=",
            oat,
            "",
        ));
        let auth = f.body(B64URL, 24);
        v.push(sample(
            "auth_token_assignment",
            "ANTHROPIC_AUTH_TOKEN=",
            auth,
            "",
        ));
        for name in [
            "ANTHROPIC_API_KEY=",
            "OPENAI_API_KEY: ",
            "BITROUTER_API_KEY='",
        ] {
            v.push(sample("api_key_assignment", name, f.body(B64URL, 24), "'"));
        }
        v.push(sample(
            "api_key_assignment",
            "{\"llm_kwargs\": {\"api_key\": \"",
            f.body(ALNUM, 32),
            "\"}}",
        ));
        v.push(sample(
            "api_key_assignment",
            "x-api-key: ",
            f.body(HEX, 32),
            "",
        ));
        v.push(sample(
            "api_key_assignment",
            "{apiKey: \"",
            f.body(ALNUM, 20),
            "\"}",
        ));
        let hf = p(&["h", "f_", &f.body(LOWER, 4), &f.body(ALNUM, 30)]);
        v.push(sample("huggingface_token", "", hf, ""));
        let npm = p(&["np", "m_", &f.body(ALNUM, 36)]);
        v.push(sample(
            "npm_token",
            "//registry.npmjs.org/:_authToken=",
            npm,
            "",
        ));
        let pw = format!("bench:{}", f.body(ALNUM, 20));
        v.push(sample(
            "url_embedded_password",
            "postgres://",
            pw,
            "@db.internal:5432/ledger",
        ));
        let pw = format!("oauth2:{}", f.body(B64URL, 20));
        v.push(sample(
            "url_embedded_password",
            "git clone https://",
            pw,
            "@gitlab.example.com/x.git",
        ));
        v
    }

    // rule FREEZE-2: the manifest records where a secret lives, never its value.
    // verdict row: secrets — no credential or private key material anywhere.
    #[test]
    fn every_positive_sample_is_found_with_its_shape() {
        let corpus = positive_corpus();
        assert!(
            corpus.len() >= 30,
            "positive corpus has {} samples",
            corpus.len()
        );
        let shapes: std::collections::BTreeSet<_> = corpus.iter().map(|s| s.shape).collect();
        assert!(
            shapes.len() >= 30,
            "positive corpus covers {} shapes",
            shapes.len()
        );
        for s in &corpus {
            let found = scan(&s.text);
            assert_eq!(
                found.as_ref().map(|f| f.shape),
                Some(s.shape),
                "wanted {} in a {}-byte sample, got {found:?}",
                s.shape,
                s.text.len()
            );
            let offset = found.map(|f| f.offset).unwrap_or_default();
            assert!(s.text.is_char_boundary(offset));
            // The bare value is a credential too (context rules aside).
            let bare_needs_context = matches!(
                s.shape,
                "aws_secret_access_key"
                    | "aws_session_token"
                    | "claude_code_oauth_token"
                    | "auth_token_assignment"
                    | "api_key_assignment"
                    | "oauth_bearer_token"
                    | "http_basic_credentials"
                    | "url_embedded_password"
            );
            if !bare_needs_context {
                assert!(scan(&s.value).is_some(), "bare {} value not found", s.shape);
            }
        }
        println!(
            "positive corpus: {} samples, {} shapes",
            corpus.len(),
            shapes.len()
        );
    }

    // verdict row: secrets — errors may echo a value only as length and shape.
    /// The byte-pair prefilter of `scan` finds exactly what trying every
    /// position finds: on every sample, every tail of it, each also in
    /// upper and lower case (keywords match in any case).
    #[test]
    fn the_prefilter_changes_no_result() {
        let mut texts: Vec<String> = positive_corpus().into_iter().map(|s| s.text).collect();
        texts.extend(negative_corpus());
        let (mut checked, mut found) = (0, 0);
        for t in &texts {
            for variant in [t.clone(), t.to_ascii_uppercase(), t.to_ascii_lowercase()] {
                for start in (0..=variant.len()).filter(|&i| variant.is_char_boundary(i)) {
                    let tail = &variant[start..];
                    let expected = scan_every_position(tail);
                    found += usize::from(expected.is_some());
                    assert_eq!(scan(tail), expected, "{}", describe_redacted(tail));
                    checked += 1;
                }
            }
        }
        assert!(checked > 10_000 && found > 1_000, "{checked} {found}");
    }

    #[test]
    fn describe_redacted_never_echoes_the_value() {
        for s in positive_corpus() {
            let echo = describe_redacted(&s.text);
            assert!(!echo.contains(&s.value), "echo leaks a {} value", s.shape);
            assert!(echo.contains(s.shape), "echo {echo:?} misses the shape");
            assert!(echo.contains(&format!("{} bytes", s.text.len())));
        }
        assert_eq!(describe_redacted("héllo"), "<redacted: 6 bytes, 5 chars>");
        assert_eq!(describe_redacted(""), "<redacted: 0 bytes, 0 chars>");
    }

    #[test]
    fn offsets_point_at_the_match_in_non_ascii_text() {
        let mut f = Fake(7);
        let id = p(&["AK", "IA", &f.body(UPPER_BASE32, 16)]);
        let text = format!("naïve — 日本語 {id} tail");
        let found = scan(&text).unwrap();
        assert_eq!(
            found,
            SecretFinding {
                shape: "aws_access_key_id",
                offset: text.find(&id).unwrap()
            }
        );
        let pw = format!("postgres://u:{}@h/db", f.body(ALNUM, 12));
        assert_eq!(scan(&pw).unwrap().offset, "postgres://".len());
        let assigned = format!("x OPENAI_API_KEY={}", f.body(ALNUM, 24));
        assert_eq!(scan(&assigned).unwrap().offset, 2);
    }

    /// Near misses: things that look a bit like credentials and are not.
    fn negative_corpus() -> Vec<String> {
        let mut f = Fake(0xdead_beef_0000_0002);
        let mut v: Vec<String> = [
            // digests, ids, versions
            "sha256:6f1ed002ab5595859014ebf0951522d9f7bd0a5a0f4f4e3c7d6e8b4c1b3a2f90",
            "pricing_version: \"sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"",
            "git_commit_id: 69671fbaac6d67a7ef0dfec016cc38a64ef7a77c",
            "3f1c2b9e-8d4a-4e57-9a41-0c6f2d7b5e10",
            "x-bitrouter-request-id: real-agent-trace-3f1c2b9e-8d4a-4e57-9a41-0c6f2d7b5e10-0001",
            "version 1.2.3, build 2026.03.01",
            // words that contain prefixes
            "scikit-learn is imported as sk-learn; see sk-learn-model-selection-cross-validation",
            "the sk- prefix marks a key in prose",
            "task-pass task-provider__trial desk-lamp risk-free",
            "brake_pad brk_ci brk_test.fixture brk_AAAAAAAAAAAAAAAA.secret",
            "brvk_id_0123456789abcdef",
            "hf_hub_download npm_config_cache ghp_short xoxb- AIzaShort sk_live_short",
            "n_input_tokens authoritative_receipt credentials-file api_key_env",
            "\"model_api_key_name\": null",
            // references to where a secret lives (rule FREEZE-2)
            "BITROUTER_API_KEY",
            "api_key_env: BITROUTER_API_KEY",
            "{\"api_key\": \"BITROUTER_API_KEY\"}",
            "--api-key-env BITROUTER_API_KEY --credentials-file /run/secrets/bitrouter",
            "OPENAI_API_KEY_FILE=/run/secrets/openai",
            "OPENAI_API_KEY=/run/secrets/openai",
            "OPENAI_API_KEY=${OPENAI_API_KEY}",
            "ANTHROPIC_API_KEY=$ANTHROPIC_API_KEY",
            "ANTHROPIC_API_KEY=",
            "OPENAI_API_KEY=EMPTY",
            "OPENAI_API_KEY: null",
            "CLAUDE_CODE_OAUTH_TOKEN=<redacted>",
            "BITROUTER_API_KEY=REDACTED",
            "OPENAI_API_KEY=bitrouter-local",
            "OPENAI_API_KEY=sk-no-key-required",
            "export ANTHROPIC_API_KEY=sk-ant-...   # your key",
            "invalid BitRouter API key: expected brk_<token_id>.<secret>",
            "Authorization: Bearer sk-proj-...",
            "{\"SecretAccessKey\": \"...\"}",
            "\"api_key\": \"your-api-key\"",
            // masks as Harbor and BitRouter write them
            "\"OPENAI_API_KEY\": \"sk-l****ret\"",
            "{\"env\": {\"OPENAI_API_KEY\": \"sk-l****ret\"}}",
            "OPENAI_API_KEY=sk-proj-abcdefghij1234567890****",
            "aws_secret_access_key = ****************************************",
            "postgres://bench:****@db.internal/ledger",
            "postgres://bench:${PGPASSWORD}@db.internal/ledger",
            // ARNs and account ids are private, not credentials
            "arn:aws:iam::123456789012:role/benchledger-runner",
            "arn:aws:iam::****9012:role/benchledger-runner",
            "aws_account_id: 123456789012",
            // bearer and auth words in prose
            "Bearer tokens are sent in the Authorization header.",
            "Authorization: Bearer $TOKEN",
            "Authorization: Bearer <token>",
            "Authorization: Bearer ${BITROUTER_API_KEY}",
            "authorization: Basic realm",
            "the bearer-token flow",
            // URLs without passwords
            "http://10.0.0.5:8080/v1",
            "https://github.com/laude-institute/terminal-bench-2.git",
            "ssh://git@github.com/org/repo.git",
            "postgres://bench@localhost/ledger",
            "mailto:someone@example.com",
            // PEM material that is public
            "-----BEGIN PUBLIC KEY-----",
            "-----BEGIN CERTIFICATE-----",
            "-----BEGIN RSA PUBLIC KEY-----",
            // non-ASCII prose
            "Ключ API хранится в /run/secrets/openai — 秘密は保存しない",
            "session_token: null",
            "session_token: abc123",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        // A bare AWS-secret-like string, with and without unrelated context.
        v.push(f.body(B64, 40));
        v.push(format!("checksum: {}", f.body(B64, 40)));
        v.push(format!("git sha {}", f.body(HEX, 40)));
        // The word `secret` before what is not an AWS secret access key: a
        // hex digest, a word, a mask, one byte short or long, a path.
        v.push(format!("secret: {}", f.body(HEX, 40)));
        v.push(format!("secret {}", f.body(LOWER, 40)));
        v.push(format!("secret={}", "*".repeat(40)));
        v.push(format!("secret {}", p(&["Ab1", &f.body(B64, 36)])));
        v.push(format!("secret {}", p(&["Ab1", &f.body(B64, 38)])));
        v.push("the secret is kept in /run/secrets/aws".to_string());
        // Base64 blobs, including base64 JSON (starts `eyJ`) without dots.
        v.push(p(&["ey", "J", &f.body(B64, 120), "=="]));
        v.push(p(&[
            "ey",
            "JhbGciOiJub25lIn0",
            ".",
            "ey",
            "J",
            &f.body(B64URL, 30),
            ".",
        ]));
        v.push(f.body(B64, 200));
        // AWS unique ids that identify but do not authenticate.
        for prefix in [["AR", "OA"], ["AI", "DA"], ["AN", "PA"], ["AP", "KA"]] {
            v.push(p(&[prefix[0], prefix[1], &f.body(UPPER_BASE32, 16)]));
        }
        // Access key id one byte too short and too long.
        v.push(p(&["AK", "IA", &f.body(UPPER_BASE32, 15)]));
        v.push(p(&["AK", "IA", &f.body(UPPER_BASE32, 17)]));
        // Secret access key one byte too short and too long.
        v.push(format!("aws_secret_access_key={}", f.body(B64, 39)));
        v.push(format!("aws_secret_access_key={}", f.body(B64, 41)));
        // Prefixes glued to a word.
        v.push(p(&["mask", "-", &f.body(ALNUM, 40)]));
        v.push(p(&["X", "AK", "IA", &f.body(UPPER_BASE32, 16)]));
        v
    }

    // verdict row: secrets — and no false alarm on ordinary evidence.
    #[test]
    fn no_negative_sample_is_flagged() {
        let corpus = negative_corpus();
        for text in &corpus {
            assert_eq!(scan(text), None, "false positive in {text:?}");
        }
        println!("negative corpus: {} samples", corpus.len());
    }

    #[test]
    fn separator_bound_at_and_past() {
        let value = Fake(11).body(B64URL, 24);
        let gap = |n: usize| format!("={}", " ".repeat(n - 1));
        let at = format!(
            "OPENAI_API_KEY{}{value}",
            gap(ASSIGNMENT_SEPARATOR_BYTES_MAX)
        );
        let past = format!(
            "OPENAI_API_KEY{}{value}",
            gap(ASSIGNMENT_SEPARATOR_BYTES_MAX + 1)
        );
        assert_eq!(scan(&at).map(|f| f.shape), Some("api_key_assignment"));
        assert_eq!(scan(&past), None);
    }

    #[test]
    fn value_scan_bound_at_and_past() {
        // A value whose mask shows up within the bound is a mask; one that
        // reaches the bound is refused, since no mask was seen (fail closed).
        let value = |n: usize| Fake(13).body(ALNUM, n);
        let masked = |n: usize| format!("OPENAI_API_KEY={}****", value(n));
        assert_eq!(scan(&masked(VALUE_SCAN_BYTES_MAX - 1)), None);
        assert!(scan(&masked(VALUE_SCAN_BYTES_MAX)).is_some());
        assert!(scan(&masked(VALUE_SCAN_BYTES_MAX + 1)).is_some());
        let bearer = |n: usize| format!("Bearer {}", value(n));
        assert!(scan(&bearer(VALUE_SCAN_BYTES_MAX)).is_some());
        assert!(scan(&bearer(VALUE_SCAN_BYTES_MAX + 1)).is_some());
    }

    #[test]
    fn pem_label_bound_at_and_past() {
        let label = |n: usize| format!("{}PRIVATE KEY", "X".repeat(n - "PRIVATE KEY".len()));
        let at = format!("-----BEGIN {}-----", label(PEM_LABEL_BYTES_MAX));
        let past = format!("-----BEGIN {}-----", label(PEM_LABEL_BYTES_MAX + 1));
        assert_eq!(scan(&at).map(|f| f.shape), Some("pem_private_key"));
        assert_eq!(scan(&past), None);
    }

    #[test]
    fn minimum_lengths_at_and_below() {
        let mut f = Fake(17);
        let named = |v: String| format!("OPENAI_API_KEY={v}");
        assert!(scan(&named(f.body(ALNUM, NAMED_VALUE_BYTES_MIN))).is_some());
        assert_eq!(scan(&named(f.body(ALNUM, NAMED_VALUE_BYTES_MIN - 1))), None);
        let generic = |v: String| format!("api_key: {v}");
        assert!(scan(&generic(f.body(ALNUM, GENERIC_VALUE_BYTES_MIN))).is_some());
        assert_eq!(
            scan(&generic(f.body(ALNUM, GENERIC_VALUE_BYTES_MIN - 1))),
            None
        );
        assert_eq!(
            scan(&generic(f.body(LOWER, 40))),
            None,
            "letters only is not a key"
        );
        let bearer = |v: String| format!("Authorization: Bearer {v}");
        assert!(scan(&bearer(f.body(ALNUM, BEARER_TOKEN_BYTES_MIN))).is_some());
        assert_eq!(
            scan(&bearer(f.body(ALNUM, BEARER_TOKEN_BYTES_MIN - 1))),
            None
        );
        let aws = |n: usize| format!("aws_secret_access_key={}", Fake(19).body(B64, n));
        assert!(scan(&aws(AWS_SECRET_KEY_BYTES)).is_some());
        assert_eq!(scan(&aws(AWS_SECRET_KEY_BYTES - 1)), None);
        assert_eq!(scan(&aws(AWS_SECRET_KEY_BYTES + 1)), None);
        let session = |n: usize| format!("aws_session_token={}", Fake(23).body(B64, n));
        assert!(scan(&session(AWS_SESSION_TOKEN_BYTES_MIN)).is_some());
        assert_eq!(scan(&session(AWS_SESSION_TOKEN_BYTES_MIN - 1)), None);
    }

    #[test]
    fn a_lone_aws_secret_needs_only_the_word_secret() {
        let key = p(&["Ab1", &Fake(29).body(B64, 37)]);
        for text in [
            format!("botocore.exceptions: signing with secret {key} failed"),
            format!("secret={key}"),
        ] {
            assert_eq!(
                scan(&text).map(|f| f.shape),
                Some("aws_secret_access_key"),
                "BIND-8: a 40-byte AWS secret without its key id is a credential"
            );
        }
        let tail = |n: usize| format!("secret{}={key}", "_".repeat(n));
        assert!(
            scan(&tail(SECRET_WORD_TAIL_BYTES_MAX)).is_some(),
            "BIND-8: the word tail at its bound"
        );
        assert_eq!(scan(&tail(SECRET_WORD_TAIL_BYTES_MAX + 1)), None);
    }

    #[test]
    fn no_panic_on_any_prefix_or_odd_input() {
        for s in positive_corpus() {
            for end in (0..=s.text.len()).filter(|&i| s.text.is_char_boundary(i)) {
                let _ = scan(&s.text[..end]);
                let _ = scan(&s.text[end..]);
            }
        }
        let fragments = [
            "sk-",
            "ant-",
            "eyJ",
            ".",
            "://",
            ":",
            "@",
            "=",
            "\"",
            "*",
            "-----BEGIN ",
            "PRIVATE KEY",
            "-----",
            "Bearer ",
            "api_key",
            "brk_",
            "AKIA",
            "é",
            "日",
            "\u{1F600}",
            "\\n",
            " ",
            "a1",
            "Z9",
            "/",
            "_",
        ];
        let mut f = Fake(29);
        for _ in 0..3000 {
            let n = (f.next() % 40) as usize;
            let text: String = (0..n)
                .map(|_| fragments[(f.next() % fragments.len() as u64) as usize])
                .collect();
            if let Some(found) = scan(&text) {
                assert!(text.is_char_boundary(found.offset));
            }
            let _ = describe_redacted(&text);
        }
    }

    #[test]
    fn long_adversarial_inputs_finish() {
        // Each input repeats a trigger so that a non-linear scanner would
        // re-read the tail from every occurrence.
        const INPUT_BYTES: usize = 256 * 1024;
        let units = [
            "sk-ant-",
            "eyJaaaaaaaaaaaa.",
            "a://a:",
            "api_key=api_key=",
            "bearer ",
            "-----BEGIN ",
            "brk_aaaaaaa",
            "secret_access_key=",
            "a",
            "=",
            "AKIA",
            "Ω",
            "/api_key=",
            "OPENAI_API_KEY=/",
            "\\neyJaaaaaaaaaaa.",
        ];
        for unit in units {
            let text = unit.repeat(INPUT_BYTES / unit.len());
            let started = std::time::Instant::now();
            let _ = scan(&text);
            // Generous: linear scans take milliseconds; quadratic ones minutes.
            assert!(
                started.elapsed().as_secs() < 20,
                "{unit:?} took {:?}",
                started.elapsed()
            );
        }
    }

    /// The string literals of a JSON or JSON Lines text, decoded. A small
    /// lexer: it only needs well-formed input, which the fixtures are.
    fn json_strings(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut chars = text.chars();
        while let Some(c) = chars.next() {
            if c != '"' {
                continue;
            }
            // UTF-16 units, so `\uXXXX` surrogate pairs decode as one char.
            let mut units: Vec<u16> = Vec::new();
            let push = |c: char, units: &mut Vec<u16>| {
                let mut buf = [0u16; 2];
                units.extend_from_slice(c.encode_utf16(&mut buf));
            };
            while let Some(c) = chars.next() {
                match c {
                    '"' => break,
                    '\\' => match chars.next() {
                        Some('u') => {
                            let hex: String = chars.by_ref().take(4).collect();
                            units.push(u16::from_str_radix(&hex, 16).expect("json \\u escape"));
                        }
                        Some('n') => push('\n', &mut units),
                        Some('t') => push('\t', &mut units),
                        Some('r') => push('\r', &mut units),
                        Some('b') => push('\u{8}', &mut units),
                        Some('f') => push('\u{c}', &mut units),
                        Some(other) => push(other, &mut units),
                        None => break,
                    },
                    other => push(other, &mut units),
                }
            }
            out.push(String::from_utf16_lossy(&units));
        }
        out
    }

    #[test]
    fn json_strings_decodes_escapes() {
        let got = json_strings(r#"{"a\"b": "x\ny", "u": "\u00e9\ud83d\ude00", "n": 1}"#);
        assert_eq!(got, ["a\"b", "x\ny", "u", "é\u{1F600}", "n"]);
    }

    fn files_under(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        let entries =
            std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files_under(&path, out);
            } else {
                out.push(path);
            }
        }
    }

    // verdict row: secrets — zero false positives on the shared fixtures.
    #[test]
    fn no_finding_in_any_shared_fixture() {
        let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/fixtures"));
        let mut files = Vec::new();
        files_under(root, &mut files);
        files.sort();
        assert!(
            files.len() >= 40,
            "expected the shared fixtures, found {} files",
            files.len()
        );
        let (mut strings, mut lines) = (0usize, 0usize);
        let mut findings = Vec::new();
        for path in &files {
            let bytes = std::fs::read(path).unwrap();
            let text = String::from_utf8(bytes)
                .unwrap_or_else(|_| panic!("{} is not utf-8", path.display()));
            let name = path.to_string_lossy();
            let mut texts: Vec<String> = text.lines().map(str::to_owned).collect();
            lines += texts.len();
            if name.ends_with(".json") || name.ends_with(".jsonl") {
                let decoded = json_strings(&text);
                strings += decoded.len();
                texts.extend(decoded);
            }
            for t in &texts {
                if let Some(found) = scan(t) {
                    findings.push(format!(
                        "{}: {} at byte {}",
                        path.display(),
                        found.shape,
                        found.offset
                    ));
                }
            }
        }
        println!(
            "fixtures: {} files, {} json strings, {} lines, {} findings",
            files.len(),
            strings,
            lines,
            findings.len()
        );
        assert!(
            findings.is_empty(),
            "credential shapes in fixtures:\n{}",
            findings.join("\n")
        );
    }
}
