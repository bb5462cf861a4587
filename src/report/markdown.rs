//! The report as markdown: one function per REPORT-6 section, each
//! rendering its part of the [`Report`] and nothing else, so every number
//! shown is a field of the JSON form.

use std::collections::BTreeMap;
use std::fmt::{self, Write};

use super::cents::CentsNotes;
use super::join_ids::ids_text;
use super::model::{
    CacheSensitivity, Claim, ControlResolution, DecisionCounts, Economics, Failures, Frozen,
    GoNoGo, GroupRow, Paired, Report, Role, RowLine, RuntimeEvidence, SensitivitySource,
    SettlementAudit, Transparency,
};
use super::numbers::{Money, Ratio};
use super::CHART_FILE;
use crate::method::verdict::TraceOutcome;

/// The report as markdown: the twelve REPORT-6 sections in order, every
/// number taken from a field of `report` (its JSON form).
pub fn render_markdown(report: &Report) -> String {
    let mut out = String::new();
    write_report(&mut out, report).expect("writing to a String cannot fail");
    out
}

fn write_report(out: &mut String, report: &Report) -> fmt::Result {
    header(out, report)?;
    claim(out, &report.claim)?;
    role(out, &report.role)?;
    frozen(out, &report.frozen)?;
    control(out, &report.control)?;
    groups(out, report)?;
    paired(out, &report.paired)?;
    decisions(out, &report.decisions)?;
    settlement(out, &report.settlement)?;
    runtime(out, &report.runtime)?;
    economics(out, &report.economics)?;
    sensitivity(out, &report.cache_sensitivity)?;
    failures(out, &report.failures)?;
    go_no_go(out, &report.go_no_go)?;
    checksums(out, report)?;
    match &report.transparency {
        Some(part) => transparency(out, part, report.checksums.ledger.head_seq),
        None => Ok(()),
    }
}

fn header(out: &mut String, report: &Report) -> fmt::Result {
    writeln!(out, "# Benchmark report: lineage `{}`", report.lineage)?;
    writeln!(out)?;
    writeln!(
        out,
        "Rendered from the ledger at head seq {} (hash `{}`) by projection v{}; the JSON form (`{}`) holds every number shown here.",
        report.checksums.ledger.head_seq,
        report.checksums.ledger.head_hash,
        report.projection_version,
        report.format
    )?;
    writeln!(out)?;
    writeln!(out, "**Go/no-go:** {}", report.go_no_go.line)?;
    writeln!(out)
}

/// Section 1.
fn claim(out: &mut String, claim: &Claim) -> fmt::Result {
    writeln!(out, "## 1. Hypothesis, class, allowed claim, tolerances")?;
    writeln!(out)?;
    writeln!(out, "- Hypothesis: {}", claim.hypothesis)?;
    writeln!(
        out,
        "- Run class: `{}` ({} tasks x {} trial identities = N {} case identities per group)",
        claim.run_class, claim.tasks, claim.trials_per_task, claim.cases_per_group
    )?;
    writeln!(out, "- Allowed claim: {}", claim.allowed_claim)?;
    writeln!(
        out,
        "- Every claim below, the go/no-go line first, is made {}",
        claim.claim_scope
    )?;
    writeln!(
        out,
        "- Tolerances (frozen): quality no more than {} percentage points below control's {} (one-sided; on a replicated run, the lower end of the 95% paired interval); cost delta at most {}%",
        claim.quality_tolerance_pp, claim.score_name, claim.cost_tolerance_pct
    )?;
    writeln!(
        out,
        "- Interval method (frozen): {} (seed {}, {} resamples)",
        claim.interval_method, claim.interval_seed, claim.interval_resamples
    )?;
    writeln!(out, "- This report refuses to claim:")?;
    for refused in &claim.refused_claims {
        writeln!(out, "  - {refused}")?;
    }
    writeln!(out)
}

/// Section 2.
fn role(out: &mut String, role: &Role) -> fmt::Result {
    let list = |tasks: &[String]| {
        if tasks.is_empty() {
            "none declared".to_string()
        } else {
            tasks.join(", ")
        }
    };
    writeln!(out, "## 2. Tuning / held-out role")?;
    writeln!(out)?;
    writeln!(out, "- Role: `{}`: {}", role.role, role.note)?;
    writeln!(out, "- Tuning tasks: {}", list(&role.tuning_tasks))?;
    writeln!(out, "- Held-out tasks: {}", list(&role.held_out_tasks))?;
    writeln!(out)
}

/// Section 3.
fn frozen(out: &mut String, frozen: &Frozen) -> fmt::Result {
    writeln!(out, "## 3. The frozen tuple, hashes and topology")?;
    writeln!(out)?;
    writeln!(
        out,
        "- Benchmark: {}; dataset {}",
        frozen.benchmark, frozen.dataset
    )?;
    writeln!(
        out,
        "- Target groups, in order: {}; trials {}",
        frozen.groups.join(", "),
        frozen.trials.join(", ")
    )?;
    if !frozen.excluded_before_run.is_empty() {
        let excluded: Vec<String> = frozen
            .excluded_before_run
            .iter()
            .map(|fact| format!("{} ({})", fact.what, fact.value))
            .collect();
        writeln!(
            out,
            "- Excluded before the run, not in the task list (CLASS-1): {}",
            excluded.join("; ")
        )?;
    }
    let sign_offs: Vec<String> = frozen
        .sign_offs
        .iter()
        .map(|sign_off| format!("{} {} (seq {})", sign_off.role, sign_off.name, sign_off.seq))
        .collect();
    writeln!(
        out,
        "- Frozen at seq {}; sign-offs: {}",
        frozen.frozen_seq,
        if sign_offs.is_empty() {
            "none".to_string()
        } else {
            sign_offs.join(", ")
        }
    )?;
    writeln!(out)?;
    frozen_routes_and_prices(out, frozen)?;
    for (title, facts) in [
        ("Software", &frozen.software),
        ("Topology", &frozen.topology),
        ("Limits", &frozen.limits),
        ("Hashes and keys", &frozen.hashes),
    ] {
        writeln!(out, "{title}:")?;
        for fact in facts {
            writeln!(out, "- {}: `{}`", fact.what, fact.value)?;
        }
        writeln!(out)?;
    }
    Ok(())
}

fn frozen_routes_and_prices(out: &mut String, frozen: &Frozen) -> fmt::Result {
    writeln!(
        out,
        "| tier | provider | model | protocol | credential class |"
    )?;
    writeln!(out, "| --- | --- | --- | --- | --- |")?;
    for route in &frozen.routes {
        writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            route.tier,
            cell(&route.provider),
            cell(&route.model),
            route.protocol,
            cell(&route.credential_class)
        )?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "| price (USD per million tokens) | class | basis | uncached input | cache read | cache write | output | source | effective |"
    )?;
    writeln!(
        out,
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    )?;
    for price in &frozen.prices {
        writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            cell(&price.route),
            cell(&price.credential_class),
            price.basis,
            price.uncached_input,
            price.cache_read.as_deref().unwrap_or("—"),
            price.cache_write.as_deref().unwrap_or("—"),
            price.output,
            cell(&price.source),
            price.effective
        )?;
    }
    writeln!(out)
}

/// Section 4.
fn control(out: &mut String, control: &ControlResolution) -> fmt::Result {
    writeln!(out, "## 4. Control resolution and case intersection")?;
    writeln!(out)?;
    writeln!(
        out,
        "- Control compared against: {} ({}), status {}",
        control.source.as_deref().unwrap_or("none"),
        if control.reused {
            format!(
                "reused at seq {}, LINEAGE-6 and LINEAGE-9",
                control.reuse_seq.map_or("?".into(), |seq| seq.to_string())
            )
        } else {
            "run by this lineage".to_string()
        },
        control.status
    )?;
    writeln!(
        out,
        "- Control key `{}`; catalog registration {}; artifact `{}`",
        control.control_key,
        control
            .registered_seq
            .map_or("none".into(), |seq| format!("at seq {seq}")),
        control.artifact_blake3.as_deref().unwrap_or("none")
    )?;
    for intersection in &control.intersections {
        writeln!(
            out,
            "- {}: exact intersection {} of {} predeclared identities; excluded {}",
            intersection.round,
            intersection.included,
            intersection.predeclared,
            intersection.excluded.len()
        )?;
        for excluded in &intersection.excluded {
            writeln!(out, "  - excluded {}: {}", excluded.case, excluded.why)?;
        }
    }
    writeln!(out)
}

/// Section 5.
fn groups(out: &mut String, report: &Report) -> fmt::Result {
    writeln!(out, "## 5. Control and every predeclared round")?;
    writeln!(out)?;
    writeln!(
        out,
        "Cost basis: {}. {}",
        report.basis.label, report.basis.note
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "| group | status | passed / N | {} | runnable-only | requests | strong-route requests | cost | cost per success | score delta | cost delta | strong-call delta |",
        report.claim.score_name
    )?;
    writeln!(
        out,
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    )?;
    let mut notes = CentsNotes::default();
    for row in &report.groups {
        group_row(out, &report.lineage, row, &mut notes)?;
    }
    writeln!(out)?;
    footnote(out, &notes)?;
    for row in report
        .groups
        .iter()
        .filter(|row| row.not_comparable.is_some())
    {
        writeln!(
            out,
            "- {} has no cost comparison: {}",
            row.group,
            row.not_comparable.as_deref().unwrap_or("")
        )?;
    }
    writeln!(
        out,
        "- {} = passed / N x 100 with skips and failures as 0 (REPORT-1); runnable-only = passed / |accepted|, never compared without its denominator. Cost delta = (C_round / C_control - 1) x 100; strong-call delta likewise on strong-route request counts; cost per success = C / passed (REPORT-2). Money is shown to the cent, rounded half away from zero; the JSON form holds exact micro-USD.",
        capitalized(&report.claim.score_name)
    )?;
    if report.basis.series.as_deref() == Some("notional") {
        writeln!(
            out,
            "- The notional costs price the observed cache split; section 10 shows each at 0 to 100% of its prompt tokens read from a cache, the zero-cache cost an imputed upper bound."
        )?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "![score vs cost per group]({CHART_FILE})  \n[{CHART_FILE}]({CHART_FILE}): {} vs cost on the basis; rejected groups are marked and their costs are diagnostics.",
        report.claim.score_name
    )?;
    writeln!(out)
}

fn group_row(
    out: &mut String,
    lineage: &str,
    row: &GroupRow,
    notes: &mut CentsNotes,
) -> fmt::Result {
    let status = if row.accepted {
        row.status.clone()
    } else {
        format!("**{}** (diagnostics only)", row.status)
    };
    let source = if row.source == format!("{lineage}/{}", row.group) {
        String::new()
    } else {
        format!(" (= {})", row.source)
    };
    let runnable = format!(
        "{} (over {} accepted, {} skipped)",
        percent(row.runnable.score_pct.as_ref()),
        row.runnable.accepted_cases,
        row.runnable.skipped
    );
    writeln!(
        out,
        "| {}{} | {} | {}/{} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
        row.group,
        source,
        status,
        row.passed,
        row.total,
        percent(row.score_pct.as_ref()),
        runnable,
        row.requests,
        row.strong_requests,
        notes.maybe(&format!("{} cost", row.group), row.cost.as_ref()),
        row.cost_per_success.as_ref().map_or("—".into(), |ratio| {
            notes.per(&format!("{} cost per success", row.group), ratio)
        }),
        points(row.score_delta_pp.as_ref()),
        signed_percent(row.cost_delta_pct.as_ref()),
        signed_percent(row.strong_call_delta_pct.as_ref()),
    )
}

/// Section 6.
fn paired(out: &mut String, paired: &[Paired]) -> fmt::Result {
    writeln!(out, "## 6. Paired per-case deltas")?;
    writeln!(out)?;
    if paired.is_empty() {
        writeln!(out, "No policy round has evidence.")?;
        writeln!(out)?;
    }
    for round in paired {
        paired_round(out, round)?;
    }
    Ok(())
}

fn paired_round(out: &mut String, round: &Paired) -> fmt::Result {
    writeln!(
        out,
        "### {} vs control{}",
        round.round,
        diagnostics_only(round.diagnostics_only)
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "- {} case pairs on the exact intersection: {} improved, {} worsened, {} unchanged; mean delta {}",
        round.pairs,
        round.improved,
        round.worsened,
        round.unchanged,
        points(round.mean_delta_pp.as_ref())
    )?;
    match &round.interval {
        Some(interval) => writeln!(
            out,
            "- 95% interval of the mean delta: [{}, {}] pp ({}; seed {}, {} resamples, {} pairs)",
            interval.lower_pp.text,
            interval.upper_pp.text,
            interval.method,
            interval.seed,
            interval.resamples,
            interval.pairs
        )?,
        None => writeln!(out, "- {}", round.interval_note)?,
    }
    for excluded in &round.excluded {
        writeln!(out, "- excluded {}: {}", excluded.case, excluded.why)?;
    }
    let changed: Vec<_> = round.cases.iter().filter(|pair| pair.delta != 0).collect();
    if changed.is_empty() {
        writeln!(out, "- no case changed outcome")?;
    } else {
        writeln!(out)?;
        writeln!(
            out,
            "| case (changed only; the JSON lists all) | control q | round q | delta |"
        )?;
        writeln!(out, "| --- | --- | --- | --- |")?;
        for pair in changed {
            writeln!(
                out,
                "| {} | {} | {} | {:+} |",
                pair.case, pair.control_q, pair.round_q, pair.delta
            )?;
        }
    }
    writeln!(out)
}

/// Section 7.
fn decisions(out: &mut String, decisions: &[DecisionCounts]) -> fmt::Result {
    writeln!(out, "## 7. Decisions by tier and reason")?;
    writeln!(out)?;
    writeln!(
        out,
        "| group | requests | served tier | selected tier | by category (REPORT-5) | by reason | fallback (served model != selected) |"
    )?;
    writeln!(out, "| --- | --- | --- | --- | --- | --- | --- |")?;
    for counts in decisions {
        writeln!(
            out,
            "| {}{} | {} | {} | {} | {} | {} | {} |",
            counts.group,
            if counts.diagnostics_only {
                " (diagnostics)"
            } else {
                ""
            },
            counts.requests,
            count_list(&counts.served_tier),
            count_list(&counts.selected_tier),
            count_list(&counts.by_category),
            count_list(&counts.by_reason),
            counts.fallback_model_mismatch
        )?;
    }
    if decisions.is_empty() {
        none_row(out, 7, "no evaluation group has requests to count")?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "Categories: exploration (learning cost), learned_replacement (a learned lock), static_route (operator-authored), fallback (reliability), escalation; no_decision: a request without a policy decision (control's schema emits none)."
    )?;
    writeln!(out)
}

/// Section 8.
fn settlement(out: &mut String, audits: &[SettlementAudit]) -> fmt::Result {
    writeln!(out, "## 8. Four-bucket settlement and join audit")?;
    writeln!(out)?;
    for audit in audits {
        settlement_group(out, audit)?;
    }
    Ok(())
}

fn settlement_group(out: &mut String, audit: &SettlementAudit) -> fmt::Result {
    writeln!(
        out,
        "### {}{}",
        audit.group,
        diagnostics_only(audit.diagnostics_only)
    )?;
    writeln!(out)?;
    let mut notes = CentsNotes::default();
    let series = series_list(&audit.series, &audit.group, &mut notes);
    let frozen_total = notes.maybe(
        &format!("{} frozen-price total", audit.group),
        audit.frozen_price_total.as_ref(),
    );
    writeln!(
        out,
        "- Series (never added together): {}; incomplete requests {}; unpriced requests {}; frozen-price total {}",
        if series.is_empty() {
            "none".to_string()
        } else {
            series
        },
        audit.incomplete_requests,
        audit.unpriced_requests,
        frozen_total
    )?;
    writeln!(out, "- Settlement states: {}", count_list(&audit.states))?;
    let sets: Vec<String> = audit
        .sets
        .iter()
        .map(|set| format!("|{}| = {}", set.set, set.size))
        .collect();
    writeln!(
        out,
        "- Request-id sets (traces T, usage U, decisions D, request outcomes R): {}",
        sets.join(", ")
    )?;
    writeln!(out)?;
    settlement_routes(out, audit, &mut notes)?;
    footnote(out, &notes)?;
    for row in &audit.rows {
        writeln!(
            out,
            "- {} {}: {}",
            row.gate,
            holds_or_fails(row.holds),
            evidence_with_ids(row)
        )?;
    }
    writeln!(out)
}

fn settlement_routes(
    out: &mut String,
    audit: &SettlementAudit,
    notes: &mut CentsNotes,
) -> fmt::Result {
    writeln!(
        out,
        "| route | tier | requests | uncached input | cache read | cache write | output | reasoning | charges | incomplete |"
    )?;
    writeln!(
        out,
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    )?;
    for route in &audit.routes {
        let charges = series_list(&route.series, &route.route, notes);
        writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            cell(&route.route),
            route.tier,
            route.requests,
            route.uncached_input_tokens,
            route.cache_read_tokens,
            route.cache_write_tokens,
            route.output_tokens,
            route.reasoning_tokens,
            if charges.is_empty() {
                "—".into()
            } else {
                charges
            },
            route.incomplete
        )?;
    }
    writeln!(out)
}

/// Section 9.
fn runtime(out: &mut String, runtime: &[RuntimeEvidence]) -> fmt::Result {
    writeln!(
        out,
        "## 9. Runtime, provider, retry, concurrency and cleanup evidence"
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "| group | status | cases | replacements | skips | non-2xx traces | failed / cancelled traces | failed usage rows | retries | peak / concurrency (samples) | cleanup |"
    )?;
    writeln!(
        out,
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    )?;
    for group in runtime {
        writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} / {} | {} | {} | {} / {} ({}) | {}: {} |",
            group.group,
            group.status,
            count_list(&group.cases),
            group.replacements_started,
            group.skipped,
            count_list(&group.http_non_2xx),
            group.traces_failed,
            group.traces_cancelled,
            group.usage_failed,
            group.harbor_retries,
            group
                .monitor_peak
                .map_or("—".into(), |peak| peak.to_string()),
            group.concurrency,
            group.monitor_samples,
            holds_or_fails(group.cleanup.holds),
            cell(&group.cleanup.evidence)
        )?;
    }
    if runtime.is_empty() {
        none_row(out, 11, "no group of this lineage has recorded evidence")?;
    }
    writeln!(out)?;
    if let Some(first) = runtime.first() {
        writeln!(out, "Latency: {}.", first.latency)?;
        writeln!(out)?;
    }
    reliability_plane(out, runtime)?;
    semantic_plane(out, runtime)
}

/// Section 9, the reliability plane (PLANE-1): every traced request by how
/// it ended, under the provider, model, credential class and protocol that
/// served it.
fn reliability_plane(out: &mut String, runtime: &[RuntimeEvidence]) -> fmt::Result {
    writeln!(
        out,
        "Reliability plane (PLANE-1): traced requests by how they ended. A timeout or 429 counts here and never as a model's inadequacy."
    )?;
    writeln!(out)?;
    let outcomes = TraceOutcome::ALL;
    let names: Vec<&str> = outcomes.iter().map(|o| o.as_str()).collect();
    writeln!(
        out,
        "| group | provider:model | credential class | protocol | {} |",
        names.join(" | ")
    )?;
    writeln!(
        out,
        "| --- | --- | --- | --- |{}",
        " ---: |".repeat(names.len())
    )?;
    for group in runtime {
        for line in &group.planes.reliability {
            let counts: Vec<String> = outcomes
                .iter()
                .map(|o| line.counts.get(o).copied().unwrap_or(0).to_string())
                .collect();
            writeln!(
                out,
                "| {} | {}:{} | {} | {} | {} |",
                group.group,
                cell(&line.key.provider),
                cell(&line.key.model),
                cell(&line.key.credential_class),
                cell(&line.key.protocol),
                counts.join(" | ")
            )?;
        }
    }
    if runtime.iter().all(|g| g.planes.reliability.is_empty()) {
        none_row(out, 4 + names.len(), "no traced request was ingested")?;
    }
    writeln!(out)
}

/// Section 9, the semantic plane (PLANE-1, BIND-5): rewards credited only
/// to completed, exactly joined, settled requests, and what was withheld.
fn semantic_plane(out: &mut String, runtime: &[RuntimeEvidence]) -> fmt::Result {
    writeln!(
        out,
        "Semantic plane (PLANE-1, BIND-5): rewards credited only to requests that completed, joined exactly by request id and settled."
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "| group | provider:model | credential class | protocol | requests credited | reward sum |"
    )?;
    writeln!(out, "| --- | --- | --- | --- | ---: | ---: |")?;
    for group in runtime {
        for line in &group.planes.semantic {
            writeln!(
                out,
                "| {} | {}:{} | {} | {} | {} | {} |",
                group.group,
                cell(&line.key.provider),
                cell(&line.key.model),
                cell(&line.key.credential_class),
                cell(&line.key.protocol),
                line.credited,
                line.reward_sum
            )?;
        }
    }
    if runtime.iter().all(|g| g.planes.semantic.is_empty()) {
        none_row(
            out,
            6,
            "no request completed, joined exactly by request id and settled with a reward to credit (an outcome scoped to the whole task credits no single request; BIND-5); what was withheld is listed below",
        )?;
    }
    writeln!(out)?;
    for group in runtime {
        for withheld in &group.planes.withheld {
            writeln!(
                out,
                "- {}: credit withheld from `{}`: {}",
                group.group,
                cell(&withheld.request_id),
                withheld.reason
            )?;
        }
    }
    if runtime.iter().any(|g| !g.planes.withheld.is_empty()) {
        writeln!(out)?;
    }
    Ok(())
}

/// Section 10.
fn economics(out: &mut String, economics: &Economics) -> fmt::Result {
    writeln!(out, "## 10. Steady-state and cumulative economics")?;
    writeln!(out)?;
    writeln!(out, "Basis: {}.", economics.basis)?;
    writeln!(out)?;
    writeln!(
        out,
        "| steady state | round cost | control cost | cost delta | note |"
    )?;
    writeln!(out, "| --- | --- | --- | --- | --- |")?;
    let mut notes = CentsNotes::default();
    for steady in &economics.steady {
        writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            steady.round,
            notes.maybe(&format!("{} cost", steady.round), steady.cost.as_ref()),
            notes.maybe("control cost", steady.control.as_ref()),
            signed_percent(steady.delta_pct.as_ref()),
            steady.note.as_deref().map_or(String::new(), cell)
        )?;
    }
    if economics.steady.is_empty() {
        none_row(out, 5, "no predeclared policy round")?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "| cumulative through | rounds K | C_policy(1..K) | C_control(1..K) = K x C_control | cumulative delta | successes (rounds vs K x control) | cost per success (rounds vs control) | note |"
    )?;
    writeln!(out, "| --- | --- | --- | --- | --- | --- | --- | --- |")?;
    for cumulative in &economics.cumulative {
        match &cumulative.row {
            Some(row) => writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} vs {} | {} vs {} | |",
                cumulative.through,
                row.k,
                notes.money(
                    &format!("C_policy(1..{}) through {}", row.k, cumulative.through),
                    &row.policy
                ),
                notes.money(&format!("C_control(1..{})", row.k), &row.control),
                signed_percent(row.delta_pct.as_ref()),
                row.successes,
                row.control_successes,
                row.cost_per_success
                    .as_ref()
                    .map_or("—".into(), |ratio| notes.per(
                        &format!("cost per success through {}", cumulative.through),
                        ratio
                    )),
                row.control_cost_per_success
                    .as_ref()
                    .map_or("—".into(), |ratio| notes
                        .per("control cost per success", ratio))
            )?,
            None => writeln!(
                out,
                "| {} | — | — | — | — | — | — | {} |",
                cumulative.through,
                cumulative.note.as_deref().map_or(String::new(), cell)
            )?,
        }
    }
    if economics.cumulative.is_empty() {
        none_row(out, 8, "no predeclared policy round")?;
    }
    writeln!(out)?;
    footnote(out, &notes)?;
    writeln!(
        out,
        "Steady-state and cumulative rows are separate: a cheap late round does not erase the cost of earlier ones (REPORT-3)."
    )?;
    writeln!(out)
}

/// Section 10: the cache-read sensitivity of every notional amount.
fn sensitivity(out: &mut String, sensitivity: &CacheSensitivity) -> fmt::Result {
    writeln!(out, "### Cache-read sensitivity of the notional amounts")?;
    writeln!(out)?;
    if sensitivity.rows.is_empty() {
        writeln!(out, "No notional amount: nothing depends on a cache split.")?;
        return writeln!(out);
    }
    writeln!(out, "Method: {}.", sensitivity.method)?;
    writeln!(out)?;
    let shares: Vec<String> = sensitivity
        .shares_pct
        .iter()
        .map(|share| match share {
            0 => "0% cache reads (imputed upper bound)".to_string(),
            share => format!("{share}%"),
        })
        .collect();
    writeln!(
        out,
        "| group | notional amount | requests | prompt tokens | observed cache reads | observed cost | {} |",
        shares.join(" | ")
    )?;
    writeln!(out, "|{}", " --- |".repeat(6 + shares.len()))?;
    let mut notes = CentsNotes::default();
    for row in &sensitivity.rows {
        let costs: Vec<String> = row
            .costs
            .iter()
            .map(|share| {
                notes.maybe(
                    &format!("{} at {}%", row.group, share.share_pct),
                    share.cost.as_ref(),
                )
            })
            .collect();
        writeln!(
            out,
            "| {}{} | {} | {} | {} | {} ({}) | {} | {} |",
            row.group,
            if row.diagnostics_only {
                " (diagnostics)"
            } else {
                ""
            },
            match row.source {
                SensitivitySource::FrozenPriceBasis => "cost on the frozen-price basis",
                SensitivitySource::NotionalSeries => "notional series",
            },
            row.requests,
            row.prompt_tokens,
            row.cache_read_tokens,
            percent(row.observed_share_pct.as_ref()),
            notes.money(&format!("{} observed", row.group), &row.observed),
            costs.join(" | ")
        )?;
    }
    writeln!(out)?;
    footnote(out, &notes)?;
    equal_share_deltas(out, sensitivity)?;
    for row in &sensitivity.rows {
        for note in &row.notes {
            writeln!(out, "- {}: {note}", row.group)?;
        }
    }
    if sensitivity.rows.iter().any(|row| !row.notes.is_empty()) {
        writeln!(out)?;
    }
    Ok(())
}

/// Section 10: each round against control at the same cache-read share.
fn equal_share_deltas(out: &mut String, sensitivity: &CacheSensitivity) -> fmt::Result {
    writeln!(
        out,
        "Each round against control at equal cache-read shares (both repriced on the frozen-price basis): cost delta, round cost vs control cost."
    )?;
    writeln!(out)?;
    let shares: Vec<String> = sensitivity
        .shares_pct
        .iter()
        .map(|share| format!("{share}%"))
        .collect();
    writeln!(out, "| round vs control | {} |", shares.join(" | "))?;
    writeln!(out, "|{}", " --- |".repeat(1 + shares.len()))?;
    let mut notes = CentsNotes::default();
    for round in &sensitivity.equal_share_deltas {
        let cells: Vec<String> = round
            .at
            .iter()
            .map(|at| {
                let label = format!("{} at {}%", round.round, at.share_pct);
                format!(
                    "{} ({} vs {})",
                    signed_percent(at.delta_pct.as_ref()),
                    notes.maybe(&label, at.round.as_ref()),
                    notes.maybe(
                        &format!("control at {}%", at.share_pct),
                        at.control.as_ref()
                    )
                )
            })
            .collect();
        writeln!(out, "| {} | {} |", round.round, cells.join(" | "))?;
    }
    if sensitivity.equal_share_deltas.is_empty() {
        none_row(
            out,
            1 + shares.len(),
            "no accepted round and accepted control both on the frozen-price basis",
        )?;
    }
    writeln!(out)?;
    footnote(out, &notes)
}

/// Section 11.
fn failures(out: &mut String, failures: &Failures) -> fmt::Result {
    writeln!(
        out,
        "## 11. Failures, limitations and the control-to-policy time gap"
    )?;
    writeln!(out)?;
    if let Some(stop) = &failures.stopped {
        writeln!(
            out,
            "- **Lineage stopped** at seq {} ({}): {}",
            stop.seq, stop.rule, stop.reason
        )?;
    }
    if failures.diagnostics.is_empty() {
        writeln!(out, "- No rejected or unsealed group.")?;
    }
    if !failures.not_opened.is_empty() {
        writeln!(
            out,
            "- Never opened (each counts 0 of N, never dropped): {}",
            failures.not_opened.join(", ")
        )?;
    }
    for diagnostic in &failures.diagnostics {
        writeln!(
            out,
            "- **{}: {}** (diagnostics only, VERDICT-2)",
            diagnostic.group, diagnostic.status
        )?;
        for row in &diagnostic.failing {
            writeln!(out, "  - {} FAILS: {}", row.gate, evidence_with_ids(row))?;
        }
    }
    failed_cases_and_skips(out, failures)?;
    for gap in &failures.time_gaps {
        writeln!(
            out,
            "- Time gap control -> {}: {} (control sealed at seq {}, {} opened at seq {})",
            gap.round, gap.text, gap.control_sealed_seq, gap.round, gap.round_opened_seq
        )?;
    }
    for limitation in &failures.limitations {
        writeln!(out, "- Limitation: {limitation}")?;
    }
    if !failures.refused_files.is_empty() {
        writeln!(
            out,
            "- Evidence files refused by a rule (kept without their content, BIND-12):"
        )?;
        for refused in &failures.refused_files {
            writeln!(
                out,
                "  - {}: {}",
                refused.group,
                crate::schema::strings::inert(&refused.file.line())
            )?;
        }
    }
    writeln!(out)
}

fn failed_cases_and_skips(out: &mut String, failures: &Failures) -> fmt::Result {
    if failures.failed_cases.is_empty() {
        writeln!(out, "- No failed, invalid or unfinished case attempt.")?;
    } else {
        writeln!(
            out,
            "- Failed, invalid or unfinished case attempts (kept in every denominator):"
        )?;
        for failed in &failures.failed_cases {
            writeln!(
                out,
                "  - {} {}: {} ({})",
                failed.group,
                crate::schema::strings::inert(&failed.case),
                failed.status,
                crate::schema::strings::inert(&failed.why)
            )?;
        }
    }
    for skip in &failures.skips {
        writeln!(
            out,
            "- Skipped {} {} ({}): evidence `{}`; cost of both failed attempts: {}",
            skip.group,
            crate::schema::strings::inert(&skip.case),
            skip.class,
            skip.evidence_blake3.join("`, `"),
            skip.failed_attempts_cost
        )?;
    }
    Ok(())
}

/// Section 12: the go/no-go line and the per-round checks.
fn go_no_go(out: &mut String, go_no_go: &GoNoGo) -> fmt::Result {
    writeln!(out, "## 12. Go/no-go and artifact checksums")?;
    writeln!(out)?;
    writeln!(out, "**{}**", go_no_go.line)?;
    writeln!(out)?;
    writeln!(out, "Rule: {}.", go_no_go.rule)?;
    writeln!(out)?;
    if go_no_go.rounds.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "| round | comparable | quality not below the tolerance | quality on | cost within | cumulative cost within |"
    )?;
    writeln!(out, "| --- | --- | --- | --- | --- | --- |")?;
    for check in &go_no_go.rounds {
        writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            check.round,
            if check.comparable { "yes" } else { "no" },
            yes_no(check.quality_within),
            check.quality_on.as_deref().unwrap_or("-"),
            yes_no(check.cost_within),
            yes_no(check.cumulative_cost_within)
        )?;
    }
    writeln!(out)
}

/// Section 12: the ledger head, the hashes and the sealed verdicts.
fn checksums(out: &mut String, report: &Report) -> fmt::Result {
    let checksums = &report.checksums;
    writeln!(
        out,
        "- Ledger head: seq {} hash `{}`",
        checksums.ledger.head_seq, checksums.ledger.head_hash
    )?;
    for hash in &checksums.hashes {
        writeln!(out, "- {}: `{}`", hash.what, hash.value)?;
    }
    for sealed in &checksums.sealed {
        writeln!(
            out,
            "- sealed {}: {} at seq {}",
            sealed.group, sealed.status, sealed.seq
        )?;
    }
    Ok(())
}

/// TRUST-4: the signed checkpoint the report was derived from and the
/// inclusion proof of each sealed verdict in it.
fn transparency(out: &mut String, part: &Transparency, head_seq: u64) -> fmt::Result {
    writeln!(out)?;
    writeln!(out, "## Transparency (TRUST-4)")?;
    writeln!(out)?;
    let Some(cp) = &part.checkpoint else {
        return writeln!(out, "no signed checkpoint: run `checkpoint sign`");
    };
    writeln!(
        out,
        "- Signed checkpoint: `{}` size {} root `{}`, signed by {}+{} (record seq {}, note SHA-256 `{}`)",
        cp.origin, cp.tree_size, cp.root, cp.signer, cp.key_id, cp.seq, cp.note_sha256
    )?;
    if cp.tree_size <= head_seq {
        writeln!(
            out,
            "- It covers seqs 0..={}; seqs {}..={} of the head come after it",
            cp.tree_size - 1,
            cp.tree_size,
            head_seq
        )?;
    }
    for seal in &part.seals {
        if let Some(w) = &seal.witnessing {
            writeln!(
                out,
                "- {}: seal at seq {}: {} (TRUST-6)",
                seal.group, seal.seq, w.line
            )?;
        }
        match &seal.proof {
            Some(proof) => writeln!(
                out,
                "- {}: seal at seq {}: inclusion proof ({} hashes) in the checkpoint of size {} verified",
                seal.group,
                seal.seq,
                proof.hashes.len(),
                cp.tree_size
            )?,
            None => writeln!(
                out,
                "- {}: seal at seq {}: after the checkpoint of size {}, no proof: run `checkpoint sign`",
                seal.group, seal.seq, cp.tree_size
            )?,
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Cells
// ---------------------------------------------------------------------------

/// `12.34%`, or `—`.
fn percent(ratio: Option<&Ratio>) -> String {
    ratio.map_or("—".into(), |ratio| format!("{}%", ratio.text))
}

/// `+7.69 pp` (a sign on positive values), or `—`.
fn points(ratio: Option<&Ratio>) -> String {
    ratio.map_or("—".into(), |ratio| {
        format!("{}{} pp", plus_sign(ratio), ratio.text)
    })
}

/// `+10.00%` (a sign on positive values), or `—`.
fn signed_percent(ratio: Option<&Ratio>) -> String {
    ratio.map_or("—".into(), |ratio| {
        format!("{}{}%", plus_sign(ratio), ratio.text)
    })
}

fn plus_sign(ratio: &Ratio) -> &'static str {
    if ratio.num > 0 {
        "+"
    } else {
        ""
    }
}

/// A row's evidence text, then the request ids behind a failing join
/// row's counts, inert (BIND-10).
fn evidence_with_ids(row: &RowLine) -> String {
    let text = if row.ids.is_empty() {
        row.evidence.clone()
    } else {
        format!("{}; {}", row.evidence, ids_text(&row.ids))
    };
    crate::schema::strings::inert(&text).into_owned()
}

/// The footnote of a table whose rounding to the cent hides a difference,
/// as its own paragraph.
fn footnote(out: &mut String, notes: &CentsNotes) -> fmt::Result {
    match notes.footnote() {
        Some(text) => {
            writeln!(out, "{text}")?;
            writeln!(out)
        }
        None => Ok(()),
    }
}

/// `Score over N` from `score over N`.
fn capitalized(text: &str) -> String {
    let mut characters = text.chars();
    characters.next().map_or(String::new(), |first| {
        first.to_uppercase().chain(characters).collect()
    })
}

/// Text safe inside a table cell.
fn cell(text: &str) -> String {
    crate::schema::strings::inert(text).replace('|', "\\|")
}

/// `a 1, b 2`, or `none`.
fn count_list(counts: &BTreeMap<String, u64>) -> String {
    if counts.is_empty() {
        return "none".into();
    }
    counts
        .iter()
        .map(|(name, count)| format!("{name} {count}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `actual $1.20, notional $0.30` (empty for none), each amount
/// remembered as `owner series`.
fn series_list(series: &BTreeMap<String, Money>, owner: &str, notes: &mut CentsNotes) -> String {
    series
        .iter()
        .map(|(name, amount)| format!("{name} {}", notes.money(&format!("{owner} {name}"), amount)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The one row of a table that has none: "none" and why, so that an empty
/// table never reads as a header someone forgot to fill.
fn none_row(out: &mut String, columns: usize, why: &str) -> fmt::Result {
    assert!(columns >= 1, "a table has a column");
    writeln!(out, "| none: {} |{}", cell(why), " |".repeat(columns - 1))
}

fn yes_no(answer: Option<bool>) -> &'static str {
    match answer {
        Some(true) => "yes",
        Some(false) => "no",
        None => "—",
    }
}

fn holds_or_fails(holds: bool) -> &'static str {
    if holds {
        "holds"
    } else {
        "FAILS"
    }
}

fn diagnostics_only(diagnostics_only: bool) -> &'static str {
    if diagnostics_only {
        " (diagnostics only)"
    } else {
        ""
    }
}
