//! The `terminal_bench_2_1` registry entry (REPORT-7): only from accepted
//! evidence of a public-reproduction lineage; metrics that cannot be
//! proven are omitted with the reason. And its YAML block.

use std::fmt::{self, Write};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::method::projections::{CaseStatus, GroupState, LineageState, State};
use crate::method::verdict::{Series, Verdict};
use crate::schema::manifest::{RunClass, Tier};
use crate::schema::named::named_enum;
use crate::schema::rule::Rule;

use super::model::{serialize_as_array, BasisKind, LedgerHead, Report};
use super::numbers::{score_pct, Ratio, MICRO};
use super::sections::{allowed_claim, evaluate, CONTROL};
use super::{build, parse_rfc3339_ns};

named_enum! {
    /// A metric of the registry entry that can be left out.
    pub enum RegistryMetric {
        /// USD per task trial on the actual series.
        CostPerTask = "cost_per_task",
        /// Minutes per task trial.
        TimePerTask = "time_per_task",
        /// Where the evidence is published.
        SourceUrl = "source_url",
    }
}

/// A metric left out of the entry, and why. JSON: `["metric", "why"]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Omitted {
    pub metric: RegistryMetric,
    /// Why it is not provable.
    pub why: String,
}
serialize_as_array!(Omitted { metric, why });

/// A `terminal_bench_2_1` registry entry, only from accepted evidence of a
/// public-reproduction lineage; metrics that cannot be proven are omitted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Registry {
    pub lineage: String,
    /// The group the entry describes.
    pub group: String,
    /// Seq of its accepted seal.
    pub sealed_seq: u64,
    /// Official score in percent (0-100) over N with skips as 0.
    pub accuracy: Ratio,
    /// Passed trials.
    pub passed: u64,
    /// N.
    pub total: u64,
    /// USD per task trial on the actual series, if provable.
    pub cost_per_task: Option<Ratio>,
    /// Minutes per task trial (mean over accepted cases), if provable.
    pub time_per_task: Option<Ratio>,
    /// Who measured it.
    pub measured_by: String,
    pub harness: String,
    /// The configuration measured.
    pub config: String,
    /// The date of the accepted seal (UTC).
    pub as_of: String,
    /// Where the evidence is published, when the caller gave it.
    pub source_url: Option<String>,
    /// Metrics left out and why.
    pub omitted: Vec<Omitted>,
    pub ledger: LedgerHead,
}

/// The registry entry of `group` (default: the last predeclared round) of
/// a public-reproduction lineage. Refused (REPORT-7, CLASS-2) for any other
/// class and for a group that is not sealed `accepted`.
pub fn registry(
    state: &State,
    lineage: Option<&str>,
    group: Option<&str>,
    head: LedgerHead,
    source_url: Option<&str>,
) -> Result<Registry> {
    let lineage = state.lineage(lineage)?;
    let manifest = &lineage.frozen.manifest.public;
    let label = &lineage.frozen.lineage;
    if manifest.run.class != RunClass::PublicReproduction {
        return Err(Error::Refused {
            rule: Rule::Report7,
            message: format!(
                "a terminal_bench_2_1 registry entry comes only from accepted evidence of a public-reproduction lineage (all 89 tasks x 5 trials); lineage {label} is {}: {}",
                manifest.run.class.as_str(),
                allowed_claim(manifest)
            ),
        });
    }
    let name = evaluation_group(lineage, group)?;
    let eval = evaluate(state, lineage, &name);
    let Some(seal) = eval.sealed.clone().filter(|_| eval.accepted()) else {
        return Err(Error::Refused {
            rule: Rule::Report7,
            message: format!(
                "{label}/{name} is {}: a registry entry is emitted only from accepted evidence",
                eval.status()
            ),
        });
    };
    let verdict = eval.verdict.as_ref().expect("a sealed group has a verdict");
    let group_state = eval.state.expect("a sealed group exists");
    let report = build(state, Some(label), head.clone())?;
    let mut omitted = Vec::new();
    let accuracy = score_pct(verdict.passed, verdict.total)
        .ok_or_else(|| Error::input("the group has no predeclared identities"))?;
    let cost_per_task = cost_per_task(&report, &name, verdict.total, &mut omitted);
    let time_per_task = time_per_task(group_state, verdict, &mut omitted);
    if source_url.is_none() {
        omitted.push(Omitted {
            metric: RegistryMetric::SourceUrl,
            why: "not given (`--source-url URL`: where the report and the ledger export are published)"
                .to_string(),
        });
    }
    let software = &manifest.software;
    Ok(Registry {
        lineage: label.clone(),
        sealed_seq: seal.at.seq,
        accuracy,
        passed: verdict.passed,
        total: verdict.total,
        cost_per_task,
        time_per_task,
        measured_by: format!(
            "benchledger {} from ledger head seq {} hash {}",
            env!("CARGO_PKG_VERSION"),
            head.head_seq,
            head.head_hash
        ),
        harness: format!(
            "harbor {} + {} {}",
            software.harbor_version, manifest.harbor.agent, software.terminus_version
        ),
        config: configuration(lineage, &name),
        as_of: crate::schema::time::rfc3339_utc_ns(seal.at.utc_ns)[..10].to_string(),
        source_url: source_url.map(String::from),
        omitted,
        ledger: head,
        group: name,
    })
}

/// The evaluation group the entry describes: `group`, or the last one.
fn evaluation_group(lineage: &LineageState, group: Option<&str>) -> Result<String> {
    let evaluation_groups = lineage.frozen.manifest.public.evaluation_groups();
    let name = match group {
        Some(group) => group.to_string(),
        None => evaluation_groups
            .last()
            .map(|name| name.to_string())
            .ok_or_else(|| Error::input("the lineage has no evaluation group"))?,
    };
    if !evaluation_groups.contains(&name.as_str()) {
        return Err(Error::input(format!(
            "{name:?} is not an evaluation group of lineage {} ({:?})",
            lineage.frozen.lineage, evaluation_groups
        )));
    }
    Ok(name)
}

/// USD per task trial, only on the actual series (no cash-spend claim
/// otherwise: CLASS-5, SETTLE-6).
fn cost_per_task(
    report: &Report,
    group: &str,
    total: u64,
    omitted: &mut Vec<Omitted>,
) -> Option<Ratio> {
    let row = super::sections::row_of(&report.groups, group);
    let basis = &report.basis;
    let on_actual =
        basis.kind == BasisKind::Series && basis.series.as_deref() == Some(Series::Actual.as_str());
    let why = match &row.cost {
        Some(cost) if on_actual => {
            return Ratio::new(i128::from(cost.micro_usd), i128::from(total) * MICRO, 4);
        }
        Some(_) => format!(
            "the cost basis is {}, not the actual series: no cash-spend claim (CLASS-5, SETTLE-6)",
            basis.label
        ),
        None => format!("no cost on a single basis: {}", basis.note),
    };
    omitted.push(Omitted {
        metric: RegistryMetric::CostPerTask,
        why,
    });
    None
}

/// Minutes per task trial: the mean span of the accepted cases, when every
/// one of them has both timestamps.
fn time_per_task(
    group: &GroupState,
    verdict: &Verdict,
    omitted: &mut Vec<Omitted>,
) -> Option<Ratio> {
    let mut sum_ns: i128 = 0;
    let mut count: i128 = 0;
    let mut missing = 0u64;
    let accepted = verdict
        .cases
        .iter()
        .filter(|case| case.case.replacement == 0 && case.status == CaseStatus::TerminalValid);
    for case in accepted {
        let span = group
            .cases
            .get(&case.case)
            .and_then(|recorded| recorded.result.as_ref())
            .and_then(|(_, result)| {
                let started = parse_rfc3339_ns(result.started_at.as_deref()?)?;
                let finished = parse_rfc3339_ns(result.finished_at.as_deref()?)?;
                (finished >= started).then_some(finished - started)
            });
        match span {
            Some(span) => {
                sum_ns += span;
                count += 1;
            }
            None => missing += 1,
        }
    }
    if missing == 0 && count > 0 {
        return Ratio::new(sum_ns, count * 60_000_000_000, 2);
    }
    omitted.push(Omitted {
        metric: RegistryMetric::TimePerTask,
        why: format!(
            "{missing} accepted TrialResults lack started_at/finished_at (or end before they start)"
        ),
    });
    None
}

/// The configuration measured: control's fixed strong route, or a
/// round's BitRouter binary, config and routes.
fn configuration(lineage: &LineageState, name: &str) -> String {
    let manifest = &lineage.frozen.manifest.public;
    let label = &lineage.frozen.lineage;
    if name == CONTROL {
        return format!(
            "{label}/{name}: fixed strong route {}",
            manifest
                .route(Tier::Strong)
                .map_or("?".to_string(), |route| format!(
                    "{}:{}",
                    route.provider, route.model
                ))
        );
    }
    let software = &manifest.software;
    let routes: Vec<String> = manifest
        .routes
        .iter()
        .map(|route| format!("{}={}:{}", route.tier.as_str(), route.provider, route.model))
        .collect();
    format!(
        "{label}/{name}: BitRouter binary sha256 {}, config sha256 {}; routes {}",
        software.bitrouter_binary_sha256,
        software
            .bitrouter_config_sha256
            .get(name)
            .map_or("?", |sha256| sha256.as_str()),
        routes.join(", ")
    )
}

/// A YAML double-quoted scalar.
fn yaml_str(text: &str) -> String {
    let mut out = String::from("\"");
    for character in text.chars() {
        match character {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            control if control.is_control() => out.push_str(&format!("\\u{:04x}", control as u32)),
            other => out.push(other),
        }
    }
    out.push('"');
    out
}

/// The registry entry as a YAML block; omitted metrics are listed in
/// comments with the reason.
pub fn render_registry_yaml(registry: &Registry) -> String {
    let mut out = String::new();
    write_yaml(&mut out, registry).expect("writing to a String cannot fail");
    out
}

fn write_yaml(out: &mut String, registry: &Registry) -> fmt::Result {
    writeln!(
        out,
        "# terminal_bench_2_1 registry entry (REPORT-7), from accepted evidence only"
    )?;
    writeln!(
        out,
        "# {}/{} sealed accepted at seq {}; accuracy = {} passed / N {} x 100, skips as 0 (REPORT-1)",
        registry.lineage, registry.group, registry.sealed_seq, registry.passed, registry.total
    )?;
    writeln!(out, "terminal_bench_2_1:")?;
    writeln!(out, "  accuracy: {}", registry.accuracy.text)?;
    if let Some(cost) = &registry.cost_per_task {
        writeln!(out, "  cost_per_task: {}", cost.text)?;
    }
    if let Some(time) = &registry.time_per_task {
        writeln!(out, "  time_per_task: {}", time.text)?;
    }
    writeln!(out, "  measured_by: {}", yaml_str(&registry.measured_by))?;
    writeln!(out, "  harness: {}", yaml_str(&registry.harness))?;
    writeln!(out, "  config: {}", yaml_str(&registry.config))?;
    writeln!(out, "  as_of: {}", yaml_str(&registry.as_of))?;
    if let Some(url) = &registry.source_url {
        writeln!(out, "  source_url: {}", yaml_str(url))?;
    }
    if !registry.omitted.is_empty() {
        writeln!(out, "# omitted (not provable from this ledger):")?;
        for omitted in &registry.omitted {
            writeln!(
                out,
                "#   {}: {}",
                omitted.metric,
                omitted.why.replace('\n', " ")
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::named::assert_serde_names;

    #[test]
    fn registry_metrics_are_named_by_their_serde_names() {
        assert_serde_names(RegistryMetric::ALL, RegistryMetric::as_str);
        let omitted = Omitted {
            metric: RegistryMetric::TimePerTask,
            why: "no timestamps".into(),
        };
        assert_eq!(
            serde_json::to_string(&omitted).unwrap(),
            r#"["time_per_task","no timestamps"]"#
        );
    }
}
