//! The report of every recorded lineage (issue 8): every ledger of
//! `replay-tests/ledgers/` imports, and each of its lineages renders to its
//! reviewed markdown snapshot (`replay-tests/snapshots/replay__report__*`);
//! the numbers of the table are fields of the JSON form, and a rejected
//! group never carries a cost claim (VERDICT-2).

use benchledger::method::projections::replay_scanning;
use benchledger::report::{self, LedgerHead};

use super::corpus::{import, ledgers};

/// Every recorded lineage's report equals its reviewed snapshot; the
/// table's numbers come from the JSON form; rejected groups are
/// diagnostics without a cost claim.
#[test]
fn every_recorded_lineage_reports_to_its_snapshot() {
    // rule REPORT-6, VERDICT-2, REPORT-2
    let all = ledgers();
    assert!(all.len() >= 14, "only {} recorded ledgers", all.len());
    let mut reports = 0;
    for (name, _) in all {
        let (_t, ledger) = import(&name);
        let state = replay_scanning(&ledger).unwrap();
        let h = ledger.head().unwrap();
        let several = state.lineages.len() > 1;
        for lineage in state.lineages.keys() {
            let head = LedgerHead {
                head_seq: h.seq,
                head_hash: hex::encode(h.hash),
            };
            let r = report::build(&state, Some(lineage), head).unwrap();
            let md = report::render_markdown(&r);
            for g in &r.groups {
                let row = md
                    .lines()
                    .find(|l| l.starts_with(&format!("| {} ", g.group)) && l.contains(" | "))
                    .unwrap_or_else(|| panic!("{name}/{lineage}: no table row for {}", g.group));
                assert!(
                    row.contains(&format!("| {}/{} |", g.passed, g.total)),
                    "{row}"
                );
                if let Some(s) = &g.score_pct {
                    assert!(row.contains(&format!("{}%", s.text)), "{row}");
                }
                if let Some(c) = &g.cost {
                    assert!(row.contains(&format!("${}", c.usd_cents)), "{row}");
                }
                if !g.accepted {
                    assert!(row.contains("(diagnostics only)"), "{row}");
                    assert!(
                        g.cost.is_none() && g.cost_delta_pct.is_none(),
                        "VERDICT-2: {name}: {g:?}"
                    );
                    assert!(!g.comparable);
                }
            }
            let svg = report::render_svg(&r);
            assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
            let snap = if several {
                format!("{name}__{lineage}")
            } else {
                name.clone()
            };
            insta::assert_snapshot!(snap, md);
            reports += 1;
        }
    }
    assert!(reports >= 16, "only {reports} reports");
}

/// The control-reuse lineage compares its round with the reused control's
/// own numbers and names the control it reuses (LINEAGE-6, LINEAGE-9).
#[test]
fn a_reusing_lineage_reports_against_the_reused_control() {
    // rule LINEAGE-9, REPORT-4
    let (name, _) = ledgers()
        .into_iter()
        .find(|(n, _)| n == "control-reuse")
        .unwrap();
    let (_t, ledger) = import(&name);
    let state = replay_scanning(&ledger).unwrap();
    let head = LedgerHead {
        head_seq: 0,
        head_hash: String::new(),
    };
    let r = report::build(&state, Some("short13-kimi-2026-12"), head).unwrap();
    assert!(r.control.reused);
    assert_eq!(
        r.control.source.as_deref(),
        Some("short13-kimi-2026-11/control")
    );
    let c = &r.groups[0];
    assert_eq!(
        (c.group.as_str(), c.source.as_str()),
        ("control", "short13-kimi-2026-11/control")
    );
    assert!(c.accepted);
    let r1 = &r.groups[1];
    assert_eq!(r.control.intersections[0].included, 13);
    assert!(r1.comparable, "{r1:?}");
    assert!(r1.cost_delta_pct.is_some());
}

/// The report shows both planes of PLANE-1 per group, from the verdict's
/// projection: the weak model's 429 is a reliability count, and the
/// outcome joined to it is withheld from the semantic plane with its reason.
#[test]
fn the_report_shows_the_reliability_and_semantic_planes() {
    // rule PLANE-1, BIND-5, REPORT-6
    let (_t, ledger) = import("rejected-bind-outcome-429");
    let state = replay_scanning(&ledger).unwrap();
    let head = LedgerHead {
        head_seq: 0,
        head_hash: String::new(),
    };
    let r = report::build(&state, None, head).unwrap();
    let r1 = r.runtime.iter().find(|g| g.group == "r1").unwrap();
    let weak = r1
        .planes
        .reliability
        .iter()
        .find(|l| l.key.model == "qwen/qwen3-coder-30b")
        .unwrap();
    let rate_limited = benchledger::method::verdict::TraceOutcome::RateLimited;
    assert_eq!(weak.counts[&rate_limited], 1);
    assert_eq!(
        r1.planes.withheld[0].request_id,
        "r1-fix-git-t1-fallback-429"
    );
    let md = report::render_markdown(&r);
    assert!(md.contains("Reliability plane (PLANE-1)"), "{md}");
    assert!(
        md.contains("| r1 | ambient:qwen/qwen3-coder-30b | api_key | chat_completions | 13 | 0 | 1 | 0 | 0 |"),
        "{md}"
    );
    assert!(
        md.contains("- r1: credit withheld from `r1-fix-git-t1-fallback-429`: did not complete (HTTP 429, rate_limited)"),
        "BIND-5: {md}"
    );
    let json = serde_json::to_value(&r).unwrap();
    let groups = json["runtime"].as_array().unwrap();
    assert!(groups.iter().all(|g| g["planes"]["reliability"].is_array()));
}

/// The charts the README shows are the renderer's output for the recorded
/// lineages, byte for byte (`UPDATE_CHARTS=1` rewrites them for review).
#[test]
fn the_readme_charts_are_the_rendered_charts() {
    // rule REPORT-6
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("replay-tests/snapshots/charts");
    for name in ["short13-accepted", "replicated-accepted"] {
        let (_t, ledger) = import(name);
        let state = replay_scanning(&ledger).unwrap();
        let h = ledger.head().unwrap();
        let head = LedgerHead {
            head_seq: h.seq,
            head_hash: hex::encode(h.hash),
        };
        let r = report::build(&state, None, head).unwrap();
        let svg = report::render_svg(&r);
        let path = dir.join(format!("{name}.svg"));
        if std::env::var_os("UPDATE_CHARTS").is_some() {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &svg).unwrap();
        }
        let committed = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_CHARTS=1 writes it)", path.display()));
        assert_eq!(
            committed,
            svg,
            "{} differs from the rendered chart",
            path.display()
        );
    }
}
