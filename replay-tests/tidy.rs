//! The house rules of `src/`, checked by reading the source (in the style of
//! rust-analyzer's tidy tests; ARCHITECTURE.md draws the picture):
//!
//! - layers are folders and arrows run one way: cli -> {report, evidence,
//!   gates, method}; report -> method; method -> {schema, log}; evidence ->
//!   schema; gates -> schema; log -> schema. A layer may also use what the
//!   layers below it use (report and cli reach schema and log). Nothing
//!   imports `cli`; `testkit` is test support that production code never
//!   imports. `error` and `limits` are shared by all.
//! - no flat `src/*.rs` besides `lib.rs`, `main.rs`, `error.rs`, `limits.rs`;
//! - sled is named only in `log/store.rs`, bincode only in `log/codec.rs`;
//! - a non-test function has at most `FUNCTION_LINES_MAX` lines of code
//!   (clippy's `too_many_lines` with its default threshold, denied by
//!   tools/test-all.sh for the library and binary);
//! - no rule id is written as a string literal outside `schema/rule.rs`:
//!   rules are `Rule` values;
//! - no refusal is decided in `cli/`: its code names no `Rule::` value and
//!   builds no `Refused` error (a rule decides in `method`, or in `gates`'
//!   pure AWS rules; `cli/` gathers facts, calls, prints, and may cite a
//!   rule id in the text of a message, and every id a message cites must
//!   name a rule);
//! - every bound (`const NAME_MAX`) is defined in `limits.rs` (a module
//!   re-exports it where its users look); `log/tlog/` keeps its own format
//!   bounds, being the self-contained C2SP and RFC 6962 module that uses
//!   nothing else of the crate;
//! - every module has a `//!` and every `pub` type, trait, function, const
//!   and static a `///` (`missing_docs` is off, being the lint that asks a
//!   line of every field and variant); no one-line doc only restates the
//!   name of the item it documents (`/// The group.` on `group`).
//!
//! Test code (`#[cfg(test)]` modules, `tests.rs` and `*_tests.rs` files) is
//! not production code and is left out of every check; `src/testkit/` (test
//! support behind the `testkit` feature) keeps the arrows but not the
//! function bound or the rule-literal rule.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The most lines of code (blank lines not counted) a production function
/// may have: clippy's default `too-many-lines-threshold`, which
/// tools/test-all.sh denies for the library and binary.
pub const FUNCTION_LINES_MAX: usize = 100;

/// Which layers a layer may import.
fn allowed(layer: &str) -> &'static [&'static str] {
    match layer {
        "schema" => &["schema", "error", "limits"],
        "log" => &["log", "schema", "error", "limits"],
        "method" => &["method", "schema", "log", "error", "limits"],
        "evidence" => &["evidence", "schema", "error", "limits"],
        "gates" => &["gates", "schema", "error", "limits"],
        "report" => &[
            "report", "method", "schema", "log", "error", "limits", "rng",
        ],
        "cli" => &[
            "cli", "report", "evidence", "gates", "method", "schema", "log", "error", "limits",
        ],
        "testkit" => &[
            "testkit", "report", "evidence", "gates", "method", "schema", "log", "error", "limits",
            "rng",
        ],
        // The shared files: limits needs nothing; a refusal names its Rule.
        "limits" => &["limits"],
        // The one seeded generator needs nothing.
        "rng" => &["rng"],
        "error" => &["error", "schema"],
        // The crate root declares every module.
        _ => &[
            "cli", "report", "evidence", "gates", "method", "schema", "log", "error", "limits",
            "testkit", "rng",
        ],
    }
}

const RULE_PREFIXES: [&str; 15] = [
    "CLASS", "FREEZE", "GATE", "CASE", "LINEAGE", "SETTLE", "JOIN", "CLEAN", "VERDICT", "REPORT",
    "PLANE", "POST", "BIND", "TRUST", "LEDGER",
];

/// One production source file: its path under `src/`, its layer, the text
/// with comments and string contents blanked (same lines), and its string
/// literals with their line numbers.
pub struct Source {
    pub rel: String,
    pub layer: String,
    pub code: String,
    pub strings: Vec<(usize, String)>,
    /// The raw lines (comments kept), `#[cfg(test)]` items emptied.
    pub raw: Vec<String>,
}

/// A broken house rule, with where.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Finding(pub String);

fn layer_of(rel: &str) -> String {
    match rel.split_once('/') {
        Some((dir, _)) => dir.to_string(),
        None => rel.trim_end_matches(".rs").to_string(),
    }
}

fn is_test_file(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    name == "tests.rs" || name.ends_with("_tests.rs") || rel.contains("/tests/")
}

/// Blanks comments and the contents of string and char literals (keeping
/// newlines, so line numbers hold) and collects the string literals.
pub fn mask(text: &str) -> (String, Vec<(usize, String)>) {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut strings = Vec::new();
    let mut line = 1;
    let mut i = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(b[i] == '\n');
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && !ident_before(&b, i) {
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            let start_line = line;
            let mut s = String::new();
            out.push_str(&" ".repeat(j + 1 - i));
            i = j + 1;
            loop {
                if i >= b.len() {
                    break;
                }
                if b[i] == '"' && (0..hashes).all(|k| b.get(i + 1 + k) == Some(&'#')) {
                    out.push_str(&" ".repeat(1 + hashes));
                    i += 1 + hashes;
                    break;
                }
                line += usize::from(b[i] == '\n');
                s.push(b[i]);
                out.push(blank(b[i]));
                i += 1;
            }
            strings.push((start_line, s));
        } else if c == '"' {
            let start_line = line;
            let mut s = String::new();
            out.push(' ');
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' && i + 1 < b.len() {
                    s.push(b[i]);
                    s.push(b[i + 1]);
                    line += usize::from(b[i + 1] == '\n');
                    out.push(' ');
                    out.push(blank(b[i + 1]));
                    i += 2;
                    continue;
                }
                line += usize::from(b[i] == '\n');
                s.push(b[i]);
                out.push(blank(b[i]));
                i += 1;
            }
            out.push(' ');
            i += 1;
            strings.push((start_line, s));
        } else if c == '\'' && is_char_literal(&b, i) {
            // '{', '\'', '\u{..}': blank to the closing quote.
            out.push(' ');
            i += 1;
            while i < b.len() && b[i] != '\'' {
                if b[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                out.push(' ');
                i += 1;
            }
            out.push(' ');
            i += 1;
        } else {
            line += usize::from(c == '\n');
            out.push(c);
            i += 1;
        }
    }
    (out, strings)
}

fn ident_before(b: &[char], i: usize) -> bool {
    i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_')
}

/// `'x'` or `'\..'` is a char literal; `'a` (a lifetime or label) is not.
fn is_char_literal(b: &[char], i: usize) -> bool {
    matches!(
        (b.get(i + 1), b.get(i + 2)),
        (Some('\\'), _) | (Some(_), Some('\''))
    )
}

/// Removes `#[cfg(test)]` items (modules and functions) from masked code,
/// keeping the line structure.
pub fn strip_test_items(code: &str) -> String {
    let test = test_item_lines(code);
    code.lines()
        .zip(test)
        .map(|(l, t)| if t { "" } else { l })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Which lines of masked code belong to a `#[cfg(test)]` item.
fn test_item_lines(code: &str) -> Vec<bool> {
    let out: Vec<&str> = code.lines().collect();
    let mut test = vec![false; out.len()];
    let mut i = 0;
    while i < out.len() {
        if out[i].trim() == "#[cfg(test)]" {
            let start = i;
            let mut depth = 0i64;
            let mut opened = false;
            let mut j = i + 1;
            while j < out.len() {
                for ch in out[j].chars() {
                    match ch {
                        '{' => {
                            depth += 1;
                            opened = true;
                        }
                        '}' => depth -= 1,
                        _ => {}
                    }
                }
                if (opened && depth == 0) || (!opened && out[j].trim_end().ends_with(';')) {
                    break;
                }
                j += 1;
            }
            let last = j.min(out.len() - 1);
            for t in test.iter_mut().take(last + 1).skip(start) {
                *t = true;
            }
            i = j + 1;
        } else {
            i += 1;
        }
    }
    test
}

/// Reads every production source file under `src_dir`.
pub fn read_sources(src_dir: &Path) -> Vec<Source> {
    let mut files = Vec::new();
    let mut stack = vec![src_dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().filter_map(|e| e.ok()) {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
        .into_iter()
        .filter_map(|p: PathBuf| {
            let rel = p
                .strip_prefix(src_dir)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            if is_test_file(&rel) {
                return None;
            }
            let text = std::fs::read_to_string(&p).unwrap();
            Some(source_of(&rel, &text))
        })
        .collect()
}

/// One file's masked production code and string literals.
pub fn source_of(rel: &str, text: &str) -> Source {
    let (masked, strings) = mask(text);
    let test = test_item_lines(&masked);
    let code = strip_test_items(&masked);
    let raw = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if test.get(i).copied().unwrap_or(false) {
                String::new()
            } else {
                l.to_string()
            }
        })
        .collect();
    // Keep only the strings on lines that survived the test strip.
    let lines: Vec<&str> = code.lines().collect();
    let strings = strings
        .into_iter()
        .filter(|(line, _)| lines.get(line - 1).is_some_and(|l| !l.trim().is_empty()))
        .collect();
    Source {
        rel: rel.to_string(),
        layer: layer_of(rel),
        code,
        strings,
        raw,
    }
}

/// Every `crate::<module>` a file names, with the first line naming it.
fn imports(code: &str) -> BTreeMap<String, usize> {
    let mut found = BTreeMap::new();
    for (n, line) in code.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("crate::") {
            let after = &rest[at + "crate::".len()..];
            let name: String = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() && !ident_char_before(rest, at) {
                found.entry(name).or_insert(n + 1);
            }
            rest = after;
        }
    }
    found
}

fn ident_char_before(s: &str, at: usize) -> bool {
    s[..at]
        .chars()
        .last()
        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Broken arrows.
pub fn check_arrows(sources: &[Source]) -> Vec<Finding> {
    let mut out = Vec::new();
    for s in sources {
        let ok = allowed(&s.layer);
        for (module, line) in imports(&s.code) {
            if module == "Error" || module == "Result" || module == "ExitClass" {
                continue; // the crate root's re-exports of `error`
            }
            if !ok.contains(&module.as_str()) {
                out.push(Finding(format!(
                    "src/{}:{line}: {} -> {module} is not an allowed arrow (allowed: {})",
                    s.rel,
                    s.layer,
                    ok.join(", ")
                )));
            }
        }
    }
    out
}

/// Flat files and the sled/bincode boundary.
pub fn check_files(sources: &[Source]) -> Vec<Finding> {
    let flat_ok = ["lib.rs", "main.rs", "error.rs", "limits.rs", "rng.rs"];
    let mut out = Vec::new();
    for s in sources {
        if !s.rel.contains('/') && !flat_ok.contains(&s.rel.as_str()) {
            out.push(Finding(format!(
                "src/{}: a flat file outside the layer folders",
                s.rel
            )));
        }
        for (krate, home) in [("sled::", "log/store.rs"), ("bincode::", "log/codec.rs")] {
            if s.rel != home {
                if let Some(n) = s.code.lines().position(|l| l.contains(krate)) {
                    out.push(Finding(format!(
                        "src/{}:{}: names {} (only {home} may)",
                        s.rel,
                        n + 1,
                        krate.trim_end_matches(':')
                    )));
                }
            }
        }
    }
    out
}

/// Production functions longer than `FUNCTION_LINES_MAX` lines of code.
pub fn check_function_lengths(sources: &[Source]) -> Vec<Finding> {
    let mut out = Vec::new();
    for s in sources.iter().filter(|s| s.layer != "testkit") {
        for (name, line, lines) in functions(&s.code) {
            if lines > FUNCTION_LINES_MAX {
                out.push(Finding(format!(
                    "src/{}:{line}: fn {name} has {lines} lines of code (at most {FUNCTION_LINES_MAX})",
                    s.rel
                )));
            }
        }
    }
    out
}

/// `(name, first line, lines of code)` of every function with a body.
pub fn functions(code: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = code.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let Some(name) = fn_name(l) else { continue };
        // Find the body's opening brace (or a `;`: no body).
        let mut depth = 0i64;
        let mut opened = None;
        let mut end = None;
        'scan: for (j, line) in lines.iter().enumerate().skip(i) {
            let from = if j == i {
                l.find("fn ").unwrap_or(0)
            } else {
                0
            };
            for ch in line[from..].chars() {
                match ch {
                    '{' => {
                        depth += 1;
                        opened.get_or_insert(j);
                    }
                    '}' => {
                        depth -= 1;
                        if opened.is_some() && depth == 0 {
                            end = Some(j);
                            break 'scan;
                        }
                    }
                    ';' if opened.is_none() && depth == 0 => break 'scan,
                    _ => {}
                }
            }
        }
        if let (Some(open), Some(end)) = (opened, end) {
            let body = lines[open..=end]
                .iter()
                .filter(|x| !x.trim().is_empty())
                .count();
            out.push((name, i + 1, body));
        }
    }
    out
}

fn fn_name(line: &str) -> Option<String> {
    let t = line.trim_start();
    let mut words = t.split_whitespace().peekable();
    while let Some(w) = words.peek() {
        if w.starts_with("pub") || ["const", "async", "unsafe", "extern"].contains(w) {
            words.next();
        } else {
            break;
        }
    }
    if words.next()? != "fn" {
        return None;
    }
    let name: String = words
        .next()?
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// Rule ids written as string literals outside the `Rule` type.
pub fn check_rule_literals(sources: &[Source]) -> Vec<Finding> {
    let mut out = Vec::new();
    let exempt = |s: &&Source| s.rel == "schema/rule.rs" || s.layer == "testkit";
    for s in sources.iter().filter(|s| !exempt(s)) {
        for (line, text) in &s.strings {
            if is_rule_id(text) {
                out.push(Finding(format!(
                    "src/{}:{line}: the rule id {text:?} as a string; use Rule::{}",
                    s.rel,
                    variant_of(text)
                )));
            }
        }
    }
    out
}

fn is_rule_id(text: &str) -> bool {
    text.split_once('-').is_some_and(|(p, n)| {
        RULE_PREFIXES.contains(&p) && !n.is_empty() && n.chars().all(|c| c.is_ascii_digit())
    })
}

fn variant_of(id: &str) -> String {
    let (p, n) = id.split_once('-').unwrap();
    format!("{}{}{n}", &p[..1], p[1..].to_lowercase())
}

/// A refusal decided in `cli/`: a `Rule::` value named (not a longer path
/// ending in `Rule::`, such as `TrailerRule::`) or a `Refused` error built
/// or matched by its fields.
pub fn check_cli_refusals(sources: &[Source]) -> Vec<Finding> {
    let mut out = Vec::new();
    for s in sources.iter().filter(|s| s.layer == "cli") {
        for (i, line) in s.code.lines().enumerate() {
            let named_rule = line
                .match_indices("Rule::")
                .any(|(at, _)| !ident_char_before(line, at));
            if named_rule || line.contains("Refused {") {
                out.push(Finding(format!(
                    "src/{}:{}: a refusal decided in cli/ ({}); decide it in method and return its error",
                    s.rel,
                    i + 1,
                    line.trim()
                )));
            }
        }
    }
    out
}

/// A rule id cited inside a message (`"... (BIND-8)"`) that names no rule:
/// every `PREFIX-N` in a string literal must parse as a `Rule`.
pub fn check_rule_ids_in_text(sources: &[Source]) -> Vec<Finding> {
    let mut out = Vec::new();
    for s in sources.iter().filter(|s| s.layer != "testkit") {
        for (line, text) in &s.strings {
            for id in rule_ids_in(text) {
                if id.parse::<benchledger::schema::rule::Rule>().is_err() {
                    out.push(Finding(format!(
                        "src/{}:{line}: {id:?} in a message names no rule of method.md",
                        s.rel
                    )));
                }
            }
        }
    }
    out
}

/// Every `PREFIX-N` in `text` whose prefix is a rule family's.
fn rule_ids_in(text: &str) -> Vec<String> {
    let words = text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'));
    words
        .map(|w| w.trim_matches('-'))
        .filter(|w| is_rule_id(w))
        .map(str::to_string)
        .collect()
}

/// A `const NAME_MAX` (a bound) defined outside `limits.rs` and `log/tlog/`.
pub fn check_bounds(sources: &[Source]) -> Vec<Finding> {
    let mut out = Vec::new();
    let exempt = |s: &&Source| {
        s.rel == "limits.rs" || s.rel.starts_with("log/tlog/") || s.layer == "testkit"
    };
    for s in sources.iter().filter(|s| !exempt(s)) {
        for (i, line) in s.code.lines().enumerate() {
            let words: Vec<&str> = line
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter(|w| !w.is_empty())
                .collect();
            if let Some(at) = words.iter().position(|w| *w == "const") {
                if let Some(name) = words.get(at + 1).filter(|n| n.ends_with("_MAX")) {
                    out.push(Finding(format!(
                        "src/{}:{}: the bound {name} is defined outside limits.rs",
                        s.rel,
                        i + 1
                    )));
                }
            }
        }
    }
    out
}

/// Words that, beside the item's own name and type, add nothing to a doc
/// line of at most `FILLER_WORDS_MAX` words ("The group name.").
const EMPTY_WORDS: [&str; 10] = [
    "name",
    "value",
    "identity",
    "id",
    "identifier",
    "field",
    "variant",
    "its",
    "label",
    "itself",
];

/// The longest doc line (in words, "the"/"a"/"an" not counted) judged as
/// possible filler.
pub const FILLER_WORDS_MAX: usize = 3;

/// `SomeName`, `some_name`, `HTTPCheck` -> `["some", "name"]`, ...,
/// `["http", "check"]`.
pub fn ident_words(ident: &str) -> Vec<String> {
    let mut words = Vec::new();
    for part in ident.split(|c: char| !c.is_ascii_alphanumeric()) {
        let chars: Vec<char> = part.chars().collect();
        let mut word = String::new();
        for (k, &c) in chars.iter().enumerate() {
            let prev = k.checked_sub(1).map(|p| chars[p]);
            let next = chars.get(k + 1);
            let boundary = c.is_ascii_uppercase()
                && prev.is_some_and(|p| {
                    p.is_ascii_lowercase()
                        || p.is_ascii_digit()
                        || (p.is_ascii_uppercase() && next.is_some_and(|n| n.is_ascii_lowercase()))
                });
            if boundary && !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            word.push(c.to_ascii_lowercase());
        }
        if !word.is_empty() {
            words.push(word);
        }
    }
    words
}

/// The item a doc comment sits on: its name and the text of its type (for
/// a field or tuple variant; empty otherwise).
pub fn documented_item(line: &str) -> Option<(String, String)> {
    let mut t = line.trim();
    if let Some(rest) = t
        .strip_prefix("pub ")
        .or(t.strip_prefix("pub(").map(|_| &t[3..]))
    {
        t = rest.trim_start();
        if t.starts_with('(') {
            t = t[t.find(')')? + 1..].trim_start();
        }
    }
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    loop {
        let before = t;
        for q in ["async ", "unsafe ", "extern \"C\" ", "static mut "] {
            t = t.strip_prefix(q).unwrap_or(t).trim_start();
        }
        if before.starts_with("static mut ") {
            return Some((ident(t), String::new()));
        }
        if t.starts_with("const fn ") {
            t = &t["const ".len()..];
        }
        if t == before {
            break;
        }
    }
    for kw in [
        "fn ",
        "struct ",
        "enum ",
        "trait ",
        "type ",
        "mod ",
        "const ",
        "static ",
        "union ",
        "macro_rules! ",
    ] {
        if let Some(rest) = t.strip_prefix(kw) {
            let name = ident(rest);
            return (!name.is_empty()).then_some((name, String::new()));
        }
    }
    let name = ident(t);
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let rest = t[name.len()..].trim_start();
    if let Some(ty) = rest.strip_prefix(':').filter(|r| !r.starts_with(':')) {
        return Some((name, ty.to_string())); // a field
    }
    let variant = name.starts_with(|c: char| c.is_ascii_uppercase())
        && (rest.is_empty() || rest.starts_with(['(', '{', ',', '=']));
    let fields = rest
        .strip_prefix('(')
        .map_or("", |r| r.split(')').next().unwrap_or(""));
    variant.then(|| (name, fields.to_string()))
}

/// The words of a one-line doc comment, lowercased, without "the", "a",
/// "an" and punctuation (`` `request_id` `` is "request id").
fn doc_words(doc: &str) -> Vec<String> {
    doc.to_lowercase()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty() && !["the", "a", "an"].contains(w))
        .map(str::to_string)
        .collect()
}

/// Whether a one-line doc on `item` (name, type) only restates it: at most
/// `FILLER_WORDS_MAX` words, each a word of the name or type (or of
/// `EMPTY_WORDS`), and the name's words all there or the line a name of
/// its own.
pub fn is_filler(doc: &str, item: &(String, String)) -> bool {
    let words = doc_words(doc);
    let name = ident_words(&item.0);
    let ty = ident_words(&item.1);
    let known = |w: &String| {
        let stem = w.strip_suffix('s').unwrap_or(w);
        [w.as_str(), stem]
            .iter()
            .any(|x| name.iter().chain(&ty).any(|n| n == x) || EMPTY_WORDS.contains(x))
    };
    !words.is_empty() && words.len() <= FILLER_WORDS_MAX && words.iter().all(known)
}

/// Where a `///` block of `raw` starting at `i` ends (exclusive).
fn doc_block_end(raw: &[String], i: usize) -> usize {
    let mut j = i;
    while raw.get(j).is_some_and(|l| is_doc_line(l)) {
        j += 1;
    }
    j
}

fn is_doc_line(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("///") && !t.starts_with("////")
}

/// The line of the item after the attributes that follow line `j`.
fn item_line_after(raw: &[String], mut j: usize) -> Option<usize> {
    let mut depth = 0i64;
    while let Some(l) = raw.get(j) {
        let t = l.trim();
        if depth > 0 || t.starts_with("#[") {
            depth += t.matches('[').count() as i64 - t.matches(']').count() as i64;
            j += 1;
        } else if t.is_empty() || t.starts_with("//") {
            return None;
        } else {
            return Some(j);
        }
    }
    None
}

/// One-line doc comments that only restate the name of the item they
/// document ("/// The group." on `group: GroupRef`).
pub fn check_filler_docs(sources: &[Source]) -> Vec<Finding> {
    let mut out = Vec::new();
    for s in sources {
        let mut i = 0;
        while i < s.raw.len() {
            if !is_doc_line(&s.raw[i]) {
                i += 1;
                continue;
            }
            let end = doc_block_end(&s.raw, i);
            let item = item_line_after(&s.raw, end).and_then(|k| documented_item(&s.raw[k]));
            let doc = s.raw[i].trim_start().trim_start_matches('/');
            if let Some(item) = item.filter(|it| end == i + 1 && is_filler(doc, it)) {
                out.push(Finding(format!(
                    "src/{}:{}: the doc comment {:?} only restates `{}`; say what the name and \
                     type do not (unit, source, rule, invariant, format) or delete it",
                    s.rel,
                    i + 1,
                    doc.trim(),
                    item.0
                )));
            }
            i = end;
        }
    }
    out
}

/// A `pub` (not `pub(crate)`) module, type, trait, function, const or
/// static without a doc comment: `missing_docs` is off (ARCHITECTURE.md),
/// so this keeps the public surface documented; fields and variants are
/// left to judgement.
pub fn check_public_docs(sources: &[Source]) -> Vec<Finding> {
    let kinds = [
        "fn", "struct", "enum", "trait", "type", "mod", "const", "static", "union",
    ];
    let mut out = Vec::new();
    for s in sources {
        if !s.raw.iter().any(|l| l.starts_with("//!")) {
            out.push(Finding(format!(
                "src/{}:1: the module has no `//!` doc comment",
                s.rel
            )));
        }
        let hidden = private_mod_lines(&s.code);
        for (k, line) in s.raw.iter().enumerate() {
            let Some(rest) = line.trim_start().strip_prefix("pub ") else {
                continue;
            };
            if hidden.get(k).copied().unwrap_or(false) {
                continue; // inside a private inline `mod x { .. }`
            }
            let kind = rest
                .split_whitespace()
                .find(|w| !["const", "async", "unsafe", "extern", "\"C\""].contains(w))
                .unwrap_or("");
            let kind = if rest.starts_with("const ") && kind != "fn" {
                "const"
            } else {
                kind
            };
            if !kinds.contains(&kind) || has_doc_above(&s.raw, k) {
                continue;
            }
            if kind == "mod" && rest.trim_end().ends_with(';') {
                continue; // its file's `//!` documents it (checked below)
            }
            out.push(Finding(format!(
                "src/{}:{}: the public {kind} has no doc comment",
                s.rel,
                k + 1
            )));
        }
    }
    out
}

/// Which lines of masked code lie inside a private inline `mod x { .. }`,
/// whose `pub` items are not public.
fn private_mod_lines(code: &str) -> Vec<bool> {
    let mut hidden = Vec::new();
    let mut depth = 0i64;
    let mut open_at: Vec<i64> = Vec::new();
    for line in code.lines() {
        let t = line.trim();
        if t.starts_with("mod ") && t.ends_with('{') {
            open_at.push(depth);
        }
        hidden.push(!open_at.is_empty());
        for ch in t.chars() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if open_at.last() == Some(&depth) {
                        open_at.pop();
                    }
                }
                _ => {}
            }
        }
    }
    hidden
}

/// Whether the attributes above line `k` sit under a doc comment.
fn has_doc_above(raw: &[String], k: usize) -> bool {
    let mut j = k;
    while j > 0 {
        j -= 1;
        let t = raw[j].trim();
        if is_doc_line(t) || t.starts_with("#[doc") {
            return true;
        }
        let attr_tail = t.ends_with(']') || t.ends_with(")]") || t.ends_with(',');
        if !(t.starts_with("#[") || attr_tail || t.starts_with("//")) || t.is_empty() {
            return false;
        }
    }
    false
}

/// Every finding over the tree.
pub fn check_all(src_dir: &Path) -> Vec<Finding> {
    let sources = read_sources(src_dir);
    let mut all: BTreeSet<Finding> = BTreeSet::new();
    all.extend(check_arrows(&sources));
    all.extend(check_files(&sources));
    all.extend(check_function_lengths(&sources));
    all.extend(check_rule_literals(&sources));
    all.extend(check_bounds(&sources));
    all.extend(check_cli_refusals(&sources));
    all.extend(check_rule_ids_in_text(&sources));
    all.extend(check_filler_docs(&sources));
    all.extend(check_public_docs(&sources));
    all.into_iter().collect()
}

#[test]
fn the_source_tree_keeps_the_house_rules() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let findings = check_all(&src);
    assert!(
        findings.is_empty(),
        "{} house rule(s) broken:\n{}",
        findings.len(),
        findings
            .iter()
            .map(|f| f.0.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn a_bound_outside_limits_is_found() {
    let planted = [
        source_of(
            "gates/x.rs",
            "/// A bound.\npub const ANSWER_BYTES_MAX: usize = 9;\n",
        ),
        source_of(
            "method/y.rs",
            "const INNER_MAX: u8 = 1;\nconst NOT_A_BOUND: u8 = 2;\n",
        ),
        source_of("gates/z.rs", "pub use crate::limits::URL_BYTES_MAX;\n"),
        source_of("log/tlog/w.rs", "pub const NOTE_BYTES_MAX: usize = 1;\n"),
        source_of("limits.rs", "pub const A_MAX: u8 = 1;\n"),
    ];
    let found = check_bounds(&planted);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0]
        .0
        .contains("src/gates/x.rs:2: the bound ANSWER_BYTES_MAX"));
    assert!(found[1]
        .0
        .contains("src/method/y.rs:1: the bound INNER_MAX"));
}

#[test]
fn a_refusal_decided_in_cli_is_found() {
    let planted = source_of(
        "cli/ingest.rs",
        "fn f() -> Result<(), Error> {\n    let _ = TrailerRule::Optional;\n    Err(Error::Refused {\n        rule: Rule::Case8,\n        message: String::new(),\n    })\n}\n#[cfg(test)]\nmod tests {\n    fn t() { let _ = Rule::Case8; }\n}\n",
    );
    let found = check_cli_refusals(&[planted]);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found[0]
            .0
            .starts_with("src/cli/ingest.rs:3: a refusal decided in cli/"),
        "{found:?}"
    );
    assert!(found[1].0.starts_with("src/cli/ingest.rs:4:"), "{found:?}");
    let elsewhere = source_of("method/decide/case.rs", "fn f() { let _ = Rule::Case8; }\n");
    assert!(
        check_cli_refusals(&[elsewhere]).is_empty(),
        "method decides refusals"
    );
}

#[test]
fn a_rule_id_in_a_message_that_names_no_rule_is_found() {
    let planted = source_of(
        "cli/ingest.rs",
        "fn f() { eprintln!(\"leaked ({})\", 1); eprintln!(\"kept (BIND-12), see BIND-99 and CASE-8\"); }\n",
    );
    let found = check_rule_ids_in_text(&[planted]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0]
            .0
            .contains("\"BIND-99\" in a message names no rule"),
        "{found:?}"
    );
}

#[test]
fn a_planted_bad_arrow_is_found() {
    // method may not import cli, gates may not import method.
    let bad = [
        source_of(
            "method/x.rs",
            "use crate::cli::common::print_json;\nfn f() {}\n",
        ),
        source_of(
            "gates/y.rs",
            "fn g() { let _ = crate::method::projections::State::default(); }\n",
        ),
        source_of(
            "method/z.rs",
            "#[cfg(test)]\nmod tests {\n    use crate::cli::x;\n}\n",
        ),
    ];
    let found = check_arrows(&bad);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].0.contains("src/method/x.rs:1: method -> cli"));
    assert!(found[1].0.contains("src/gates/y.rs:1: gates -> method"));
}

#[test]
fn long_functions_rule_literals_and_flat_files_are_found() {
    let long = format!(
        "pub fn long() {{\n{}}}\nfn short() {{\n    let s = \"}}\";\n}}\n",
        "    x();\n".repeat(FUNCTION_LINES_MAX)
    );
    let found = check_function_lengths(&[source_of("report/a.rs", &long)]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].0.contains("fn long has 102 lines"), "{found:?}");
    let at_bound = format!(
        "fn ok() {{\n{}}}\n",
        "    x();\n".repeat(FUNCTION_LINES_MAX - 2)
    );
    assert!(check_function_lengths(&[source_of("report/a.rs", &at_bound)]).is_empty());
    let rules = check_rule_literals(&[source_of(
        "method/d.rs",
        "fn f() { refuse(\"CASE-2\"); let _ = \"CASE-2 is in a sentence\"; } // \"GATE-1\"\n",
    )]);
    assert_eq!(rules.len(), 1, "{rules:?}");
    assert!(rules[0].0.contains("use Rule::Case2"));
    let files = check_files(&[
        source_of("flat.rs", "fn f() {}\n"),
        source_of("report/s.rs", "use sled::Db;\n"),
    ]);
    assert_eq!(files.len(), 2, "{files:?}");
}

#[test]
fn filler_doc_comments_and_undocumented_public_items_are_found() {
    let text = "\
//! A module.

/// A sealed group.
pub struct Sealed {
    /// The group.
    pub group: GroupRef,
    /// The case identity.
    #[serde(default)]
    pub case: CaseRef,
    /// `request_id`.
    pub request_id: String,
    /// Wall time, ms.
    pub duration_ms: u64,
    /// The group it was offered to.
    pub offered: GroupRef,
    /// The seq.
    ///
    /// Counted from 0: genesis is seq 0.
    pub seq: u64,
}

/// What a check found.
pub enum Kind {
    /// Pass.
    Pass,
    /// The check holds.
    Holds = \"holds\",
}

/// Runs.
pub fn run() {}

pub fn undocumented() {}

#[cfg(test)]
mod tests {
    /// The group.
    pub group: u8,
}
";
    let s = [source_of("method/x.rs", text)];
    let found: Vec<String> = check_filler_docs(&s).into_iter().map(|f| f.0).collect();
    // Line 5 "The group." (group), 7 "The case identity." (case: CaseRef),
    // 10 `request_id`, 24 "Pass."; 30 "Runs." restates `run`. Units, a
    // relation, a multi-line doc and test items are kept.
    let lines: Vec<&str> = found
        .iter()
        .map(|f| f.split(": the doc").next().unwrap())
        .collect();
    assert_eq!(
        lines,
        [
            "src/method/x.rs:5",
            "src/method/x.rs:7",
            "src/method/x.rs:10",
            "src/method/x.rs:24",
            "src/method/x.rs:30"
        ],
        "{found:#?}"
    );
    assert!(found[0].contains("only restates `group`"), "{found:?}");
    let public = check_public_docs(&s);
    assert_eq!(public.len(), 1, "{public:?}");
    assert!(public[0]
        .0
        .contains("src/method/x.rs:33: the public fn has no doc comment"));
    let no_module_doc = check_public_docs(&[source_of("log/y.rs", "/// A.\npub fn a() {}\n")]);
    assert_eq!(no_module_doc.len(), 1, "{no_module_doc:?}");
    assert!(no_module_doc[0]
        .0
        .contains("src/log/y.rs:1: the module has no"));
    assert_eq!(
        ident_words("HTTPCheckKind_v2"),
        ["http", "check", "kind", "v2"]
    );
}
