//! The report CLI (issue 8): `report` to a directory and to stdout, the
//! registry refusal for a mechanism lineage, and `export --redacted` for
//! every recorded ledger: the bundle's secret scan is clean, its checksums
//! hold, and its ledger export re-imports and verifies.

use super::Harness;
use serde_json::Value;
use sha2::Digest;
use std::path::{Path, PathBuf};

fn ledgers() -> Vec<(String, PathBuf)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("replay-tests/ledgers");
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .map(|p| (p.file_stem().unwrap().to_string_lossy().to_string(), p))
        .collect();
    v.sort();
    v
}

fn ledger(name: &str) -> PathBuf {
    ledgers()
        .into_iter()
        .find(|(n, _)| n == name)
        .map(|(_, p)| p)
        .unwrap_or_else(|| panic!("no recorded ledger {name}"))
}

fn imported(name: &str) -> Harness {
    let h = Harness::new();
    h.ok(&["import", "--jsonl", ledger(name).to_str().unwrap()]);
    h
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn report_writes_markdown_json_and_chart_whose_numbers_agree() {
    // rule REPORT-6
    let h = imported("short13-accepted");
    let out = h.path("rep");
    let r = h.ok(&["report", "short13-kimi-2026-11", "--out", s(&out)]);
    for f in ["report.md", "report.json", "chart.svg"] {
        assert!(out.join(f).is_file(), "{f} missing: {}", r.stdout);
        assert!(r.stdout.contains(f));
    }
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let j: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert!(md.contains("](chart.svg)"), "the markdown links the chart");
    let head = h.ok(&["head", "--json"]).json();
    assert_eq!(j["checksums"]["ledger"]["head_seq"], head["head_seq"]);
    assert_eq!(j["checksums"]["ledger"]["head_hash"], head["head_hash"]);
    assert!(md.contains(head["head_hash"].as_str().unwrap()));
    let groups = j["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 3);
    for g in groups {
        let name = g["group"].as_str().unwrap();
        let row = md
            .lines()
            .find(|l| l.starts_with(&format!("| {name} |")))
            .unwrap_or_else(|| panic!("no row for {name}"));
        assert!(
            row.contains(&format!("| {}/{} |", g["passed"], g["total"])),
            "{row}"
        );
        assert!(
            row.contains(&format!(
                "| {}% |",
                g["score_pct"]["text"].as_str().unwrap()
            )),
            "{row}"
        );
        assert!(
            row.contains(&format!("${}", g["cost"]["usd_cents"].as_str().unwrap())),
            "{row}"
        );
        if let Some(d) = g["cost_delta_pct"]["text"].as_str() {
            assert!(row.contains(&format!("{d}%")), "{row}");
        }
        if let Some(c) = g["cost_per_success"]["text"].as_str() {
            assert!(row.contains(&format!("${c}")), "{row}");
        }
    }
    for c in j["economics"]["cumulative"].as_array().unwrap() {
        let t = c["row"]["delta_pct"]["text"].as_str().unwrap();
        assert!(md.contains(&format!("{t}%")), "{t}");
    }
    assert!(md.contains(j["go_no_go"]["line"].as_str().unwrap()));
    // Printed forms equal the written ones.
    assert_eq!(h.ok(&["report"]).stdout, md);
    let printed: Value =
        serde_json::from_str(h.ok(&["report", "show", "--format", "json"]).stdout.trim()).unwrap();
    assert_eq!(printed, j);
    let svg = std::fs::read_to_string(out.join("chart.svg")).unwrap();
    assert!(svg.contains("control 76.92%"));
}

#[test]
fn a_rejected_group_is_marked_and_makes_no_cost_claim() {
    // rule VERDICT-2
    let h = imported("rejected-runtime-stops-lineage");
    let j = h.run(&["report", "--format", "json"]).json();
    let r1 = j["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["group"] == "r1")
        .unwrap();
    assert_eq!(r1["accepted"], false);
    assert_eq!(r1["diagnostics_only"], true);
    assert!(r1["cost"].is_null() && r1["cost_delta_pct"].is_null());
    assert_eq!(j["go_no_go"]["decision"], "NO-GO");
    let md = h.ok(&["report"]).stdout;
    assert!(
        md.contains("| r1 | **rejected_runtime** (diagnostics only) |"),
        "{md}"
    );
}

#[test]
fn the_registry_entry_is_refused_for_a_mechanism_lineage() {
    // rule REPORT-7, CLASS-2
    let h = imported("short13-accepted");
    let r = h.run(&["report", "registry", "short13-kimi-2026-11"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stderr.contains("REPORT-7"), "{}", r.stderr);
    assert!(r.stderr.contains("mechanism_iteration"), "{}", r.stderr);
    assert!(r.stdout.is_empty());
}

#[test]
fn export_redacted_of_every_recorded_ledger_scans_clean_and_reimports() {
    // rule FREEZE-2
    for (name, _) in ledgers() {
        let h = imported(&name);
        let out = h.path("bundle");
        h.ok(&["export", "--redacted", "-o", s(&out)]);
        let scan: Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("secret-scan.json")).unwrap())
                .unwrap();
        assert_eq!(scan["result"], "clean", "{name}");
        let scanned: Vec<&str> = scan["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["path"].as_str().unwrap())
            .collect();
        for f in ["ledger.jsonl", "tables/requests.csv", "tables/cases.csv"] {
            assert!(scanned.contains(&f), "{name}: {f} not scanned");
        }
        let sums: Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("checksums.json")).unwrap())
                .unwrap();
        let files = sums["files"].as_array().unwrap();
        for f in files {
            let bytes = std::fs::read(out.join(f["path"].as_str().unwrap())).unwrap();
            assert_eq!(
                f["sha256"].as_str().unwrap(),
                hex::encode(sha2::Sha256::digest(&bytes)),
                "{name}"
            );
            assert_eq!(
                f["blake3"].as_str().unwrap(),
                hex::encode(blake3::hash(&bytes).as_bytes()),
                "{name}"
            );
        }
        let listed: Vec<&str> = files.iter().map(|f| f["path"].as_str().unwrap()).collect();
        assert!(listed.contains(&"secret-scan.json"), "{name}");
        assert!(
            listed
                .iter()
                .any(|p| p.starts_with("manifests/") && p.ends_with(".redacted.json")),
            "{name}"
        );
        assert!(
            listed
                .iter()
                .any(|p| p.starts_with("reports/") && p.ends_with("/report.md")),
            "{name}"
        );
        // The ledger export re-imports and verifies to the same head.
        let copy = Harness::new();
        let imported = copy
            .ok(&["import", "--jsonl", s(&out.join("ledger.jsonl")), "--json"])
            .json();
        let v = copy.ok(&["verify", "--json"]).json();
        assert_eq!(v["ok"], true, "{name}");
        assert_eq!(imported["head_hash"], sums["ledger"]["head_hash"], "{name}");
        // The redacted manifest carries no commitment.
        let m = std::fs::read_to_string(
            out.join(listed.iter().find(|p| p.starts_with("manifests/")).unwrap()),
        )
        .unwrap();
        assert!(!m.contains("commitment"), "{name}");
    }
}

#[test]
fn export_redacted_refuses_a_non_empty_target_and_parquet_needs_its_feature() {
    let h = imported("short13-accepted");
    let out = h.path("full");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("x"), "x").unwrap();
    let r = h.run(&["export", "--redacted", "-o", s(&out)]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(
        std::fs::read_dir(&out).unwrap().count(),
        1,
        "nothing written"
    );
    let r = h.run(&["export"]);
    assert_eq!(r.code, 2, "a format is required");
    let p = h.path("pq");
    let r = h.run(&["export", "--parquet", "-o", s(&p)]);
    if cfg!(feature = "parquet") {
        assert_eq!(r.code, 0, "{}", r.stderr);
        let files: Vec<&str> = r.stdout.lines().collect();
        assert_eq!(files.len(), 3, "{}", r.stdout);
        for table in ["requests", "cases", "lineage_groups"] {
            let partition = p
                .join(table)
                .join("lineage_key=lineage-short13-kimi-2026-11");
            let file = std::fs::read_dir(&partition)
                .unwrap()
                .next()
                .unwrap()
                .unwrap();
            let b = std::fs::read(file.path()).unwrap();
            assert!(b.starts_with(b"PAR1") && b.ends_with(b"PAR1"), "{table}");
        }
        // A second ledger's lineages join the dataset with --append; a
        // lineage already in it is refused (its rows would count twice).
        let again = h.run(&["export", "--parquet", "-o", s(&p), "--append"]);
        assert_eq!(again.code, 2, "{}", again.stderr);
        assert!(
            again.stderr.contains("already in the dataset"),
            "{}",
            again.stderr
        );
        let other = imported("replicated-accepted");
        let added = other.run(&["export", "--parquet", "-o", s(&p), "--append"]);
        assert_eq!(added.code, 0, "{}", added.stderr);
        assert!(p
            .join("cases/lineage_key=lineage-rep13x3-kimi-2026-11")
            .is_dir());
        let without = other.run(&["export", "--parquet", "-o", s(&p)]);
        assert_eq!(without.code, 2, "a non-empty target needs --append");
    } else {
        // a missing feature is exit 4 on every verb (issue 29 item 17)
        assert_eq!(r.code, 4, "{}", r.stderr);
        assert!(r.stderr.contains("parquet"), "{}", r.stderr);
        assert!(!p.exists());
    }
}

/// `gate` and `replay` name the request id behind a failing join row's
/// counts (issue 21); `gate --json` already lists every id.
#[test]
fn gate_and_replay_name_the_offending_request_ids() {
    // rule JOIN-1
    let h = imported("rejected-join-extra-usage");
    let gate = h.run(&["gate", "short13-kimi-2026-11/control"]);
    assert_eq!(gate.code, 1, "{}", gate.stderr);
    let rows: Vec<&str> = gate.stdout.lines().collect();
    let at = rows
        .iter()
        .position(|line| line.starts_with("  requests      FAILS  T != U"))
        .unwrap_or_else(|| panic!("{}", gate.stdout));
    assert_eq!(
        rows[at + 1],
        format!("{:23}extra usage: control-fix-git-t1-0-1-extra", "")
    );
    let replay = h.ok(&["replay"]);
    assert!(
        replay
            .stdout
            .contains("                       extra usage: control-fix-git-t1-0-1-extra"),
        "{}",
        replay.stdout
    );
}

/// An open group reads as what a seal would attest now and why, never
/// like a verdict; a sealed one as its verdict (issue 21).
#[test]
fn replay_words_an_open_group_as_if_sealed_now() {
    // rule VERDICT-4
    let h = imported("short13-accepted");
    let replay = h.ok(&["replay", "--at", "100"]);
    let control = replay
        .stdout
        .lines()
        .find(|line| line.starts_with("  control "))
        .unwrap();
    assert!(
        control.starts_with("  control    open: if sealed now, rejected_runtime because attempts fails: never started: "),
        "{control}"
    );
    assert!(
        replay
            .stdout
            .contains("  canary-1   sealed accepted at seq 25\n"),
        "{}",
        replay.stdout
    );
    assert!(
        replay.stdout.contains("  r1         not opened\n"),
        "{}",
        replay.stdout
    );
    assert!(
        replay.stdout.contains(
            "short13-kimi-2026-11/control: open: if sealed now, rejected_runtime  (passed "
        ),
        "{}",
        replay.stdout
    );
    assert!(!replay.stdout.contains("unsealed"), "{}", replay.stdout);
}

/// `lineage show` words groups as `replay` does: an open group as what a
/// seal would attest now, a group never opened as not opened (issue 21).
#[test]
fn lineage_show_words_an_open_group_as_if_sealed_now() {
    // rule VERDICT-4
    let h = Harness::new();
    let prefix: String = std::fs::read_to_string(ledger("short13-accepted"))
        .unwrap()
        .lines()
        .take(101)
        .map(|line| format!("{line}\n"))
        .collect();
    let file = h.path("prefix.jsonl");
    std::fs::write(&file, prefix).unwrap();
    // a prefix of the recorded export, so without its trailer
    h.ok(&["import", "--jsonl", s(&file), "--untrailed"]);
    let shown = h.ok(&["lineage", "show"]).stdout;
    let line = |name: &str| {
        shown
            .lines()
            .find(|l| l.starts_with(&format!("  {name:<10} ")))
            .unwrap_or_else(|| panic!("{shown}"))
            .to_string()
    };
    assert!(
        line("canary-1").contains("sealed accepted at seq 25"),
        "{shown}"
    );
    let control = line("control");
    assert!(control.contains("open since seq "), "{control}");
    assert!(
        control.contains("if sealed now, rejected_runtime"),
        "{control}"
    );
    assert!(line("r1").contains("not opened"), "{shown}");
    assert!(!shown.contains("unsealed"), "{shown}");
}

/// Progress is drawn only on a terminal: with stderr piped (as here) the
/// long verbs write no progress at all, and stdout carries only data.
#[test]
fn long_verbs_draw_no_progress_when_stderr_is_piped() {
    let h = imported("short13-accepted");
    for args in [
        &["verify"][..],
        &["replay"][..],
        &["report", "show", "--format", "json"][..],
        &["export", "--jsonl"][..],
    ] {
        let r = h.ok(args);
        for stream in [&r.stdout, &r.stderr] {
            assert!(!stream.contains('\u{1b}'), "{args:?}: an escape sequence");
            assert!(!stream.contains(" records ("), "{args:?}: a progress line");
        }
    }
}
