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
//!   rule id in the text of a message);
//! - every bound (`const NAME_MAX`) is defined in `limits.rs` (a module
//!   re-exports it where its users look); `log/tlog/` keeps its own format
//!   bounds, being the self-contained C2SP and RFC 6962 module that uses
//!   nothing else of the crate.
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
    let mut out: Vec<String> = code.lines().map(str::to_string).collect();
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
            for line in out.iter_mut().take(last + 1).skip(start) {
                line.clear();
            }
            i = j + 1;
        } else {
            i += 1;
        }
    }
    out.join("\n")
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
    let code = strip_test_items(&masked);
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
    assert!(found[0].0.starts_with("src/cli/ingest.rs:3: a refusal decided in cli/"), "{found:?}");
    assert!(found[1].0.starts_with("src/cli/ingest.rs:4:"), "{found:?}");
    let elsewhere = source_of("method/decide/case.rs", "fn f() { let _ = Rule::Case8; }\n");
    assert!(check_cli_refusals(&[elsewhere]).is_empty(), "method decides refusals");
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
