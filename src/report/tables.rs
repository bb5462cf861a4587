//! The dataset-publication tables: one row per request and one per case
//! identity of every group of every lineage, as typed rows (JSON Lines,
//! Parquet) and as CSV written from those rows with the `csv` crate.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::method::projections::{GroupState, State};
use crate::method::verdict::{self, RequestSettlement, Verdict};
use crate::schema::events::CaseRef;

use super::lookup::{case_passed, decision_for, request_category};
use super::model::Category;
use super::names::tier_or_unresolved;
use super::sections::{evaluate, CONTROL};
use crate::method::lineage::group_identities;
use crate::schema::manifest::is_non_evaluation;

/// One request of a group: its buckets, charge, tier, reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RequestRow {
    pub lineage: String,
    pub group: String,
    pub group_status: String,
    /// The persisted request id.
    pub request_id: String,
    /// The served route's tier.
    pub tier: String,
    /// Served provider, if a usage row exists.
    pub provider: Option<String>,
    /// Served model, if a usage row exists.
    pub model: Option<String>,
    /// The decision reason, if any.
    pub reason: Option<String>,
    /// The REPORT-5 category.
    pub category: Category,
    /// The selected tier, if a decision exists.
    pub selected_tier: Option<String>,
    pub uncached_input_tokens: Option<u64>,
    pub cache_read_tokens: Option<u64>,
    pub cache_write_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub reasoning_tokens: Option<u64>,
    pub settlement_state: String,
    /// Cost series.
    pub series: String,
    /// The charge counted, micro-USD.
    pub charge_micro_usd: Option<u64>,
    /// Usage x the frozen prices, micro-USD.
    pub recomputed_micro_usd: Option<u64>,
    /// The trace's HTTP status.
    pub http_status: Option<u16>,
}

/// One case identity of a group: reward and status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CaseRow {
    pub lineage: String,
    pub group: String,
    pub group_status: String,
    pub task: String,
    pub trial: String,
    /// 0 original, 1 replacement-01.
    pub replacement: u8,
    /// The case state.
    pub status: String,
    /// The reward as Harbor wrote it.
    pub reward: Option<String>,
    /// Passed (reward exactly 1, terminal-valid original).
    pub passed: bool,
    /// A validated security-policy skip.
    pub skipped: bool,
    /// Seq of its start.
    pub started_seq: Option<u64>,
}

/// One target group of a lineage: what a query over the tables needs to
/// compare groups (its order, kind, seal and N, and where its evidence is:
/// a reused control's rows are under the lineage that ran it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupTableRow {
    pub lineage: String,
    pub group: String,
    /// Its position in the frozen target list (0-based).
    pub group_order: u32,
    /// `canary` (non-evaluation), `control` or `round`.
    pub kind: String,
    /// Its sealed status, `unsealed (now X)`, `not_opened`, ...
    pub group_status: String,
    /// Sealed `accepted`.
    pub accepted: bool,
    /// Seq of its seal.
    pub sealed_seq: Option<u64>,
    /// N: its predeclared case identities.
    pub predeclared_cases: u64,
    /// The lineage whose rows hold its evidence (another one for a reused
    /// control, LINEAGE-6).
    pub source_lineage: Option<String>,
    /// The group name there.
    pub source_group: String,
}

/// The columns of the request table, in order.
pub const REQUEST_COLUMNS: [&str; 20] = [
    "lineage",
    "group",
    "group_status",
    "request_id",
    "tier",
    "provider",
    "model",
    "reason",
    "category",
    "selected_tier",
    "uncached_input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "output_tokens",
    "reasoning_tokens",
    "settlement_state",
    "series",
    "charge_micro_usd",
    "recomputed_micro_usd",
    "http_status",
];

/// The columns of the case table, in order.
pub const CASE_COLUMNS: [&str; 11] = [
    "lineage",
    "group",
    "group_status",
    "task",
    "trial",
    "replacement",
    "status",
    "reward",
    "passed",
    "skipped",
    "started_seq",
];

/// The columns of the group table, in order.
pub const GROUP_COLUMNS: [&str; 10] = [
    "lineage",
    "group",
    "group_order",
    "kind",
    "group_status",
    "accepted",
    "sealed_seq",
    "predeclared_cases",
    "source_lineage",
    "source_group",
];

/// A row of a published table: its serde field names are its columns.
pub trait TableRow: Serialize {
    /// The columns, in order: the row's serde field names (a test checks
    /// it), used as the header of a table without rows.
    const COLUMNS: &'static [&'static str];
}

impl TableRow for RequestRow {
    const COLUMNS: &'static [&'static str] = &REQUEST_COLUMNS;
}

impl TableRow for CaseRow {
    const COLUMNS: &'static [&'static str] = &CASE_COLUMNS;
}

impl TableRow for GroupTableRow {
    const COLUMNS: &'static [&'static str] = &GROUP_COLUMNS;
}

/// Every target group of every lineage of the state, in target order: the
/// third table of the Parquet dataset (a query joins rounds to their
/// control through it). Pure.
pub fn group_table(state: &State) -> Vec<GroupTableRow> {
    let mut rows = Vec::new();
    for lineage in state.lineages.values() {
        let manifest = &lineage.frozen.manifest.public;
        for (order, name) in manifest.group_names().into_iter().enumerate() {
            let eval = evaluate(state, lineage, name);
            let kind = if is_non_evaluation(name) {
                "canary"
            } else if name == CONTROL {
                "control"
            } else {
                "round"
            };
            rows.push(GroupTableRow {
                lineage: lineage.frozen.lineage.clone(),
                group: name.to_string(),
                group_order: order as u32,
                kind: kind.to_string(),
                group_status: eval.status(),
                accepted: eval.accepted(),
                sealed_seq: eval.sealed.as_ref().map(|seal| seal.at.seq),
                predeclared_cases: group_identities(lineage, name).len() as u64,
                source_lineage: eval
                    .source_lineage
                    .map(|source| source.frozen.lineage.clone()),
                source_group: eval.source_group.clone(),
            });
        }
    }
    rows
}

/// One group of a lineage with its verdict, as the tables read it.
struct TableGroup<'a> {
    lineage: &'a str,
    name: &'a str,
    status: String,
    state: &'a GroupState,
    verdict: Verdict,
}

/// Every request and case of every lineage of the state (the
/// dataset-publication tables). Pure.
pub fn tables(state: &State) -> (Vec<RequestRow>, Vec<CaseRow>) {
    let mut requests = Vec::new();
    let mut cases = Vec::new();
    for lineage in state.lineages.values() {
        for name in lineage.frozen.manifest.public.group_names() {
            let Some(group_state) = lineage.groups.get(name) else {
                continue;
            };
            let verdict = verdict::group_verdict(state, lineage, name);
            let status = group_state.sealed.as_ref().map_or(
                format!("unsealed (now {})", verdict.status),
                |(_, sealed)| sealed.status.clone(),
            );
            let group = TableGroup {
                lineage: &lineage.frozen.lineage,
                name,
                status,
                state: group_state,
                verdict,
            };
            requests.extend(
                group
                    .verdict
                    .settlement
                    .requests
                    .iter()
                    .map(|request| request_row(&group, request)),
            );
            cases.extend(case_rows(&group));
        }
    }
    (requests, cases)
}

fn request_row(group: &TableGroup<'_>, request: &RequestSettlement) -> RequestRow {
    let decision = decision_for(&group.verdict, group.state, request);
    let buckets = request.buckets.as_ref();
    RequestRow {
        lineage: group.lineage.to_string(),
        group: group.name.to_string(),
        group_status: group.status.clone(),
        request_id: request.request_id.clone(),
        tier: tier_or_unresolved(request.tier),
        provider: request
            .provider_model
            .as_ref()
            .map(|(provider, _)| provider.clone()),
        model: request
            .provider_model
            .as_ref()
            .map(|(_, model)| model.clone()),
        reason: decision.map(|decision| decision.reason.to_string()),
        category: request_category(decision, request),
        selected_tier: decision
            .and_then(|decision| decision.selected_tier.as_deref().map(String::from)),
        uncached_input_tokens: buckets.map(|buckets| buckets.uncached_input_tokens),
        cache_read_tokens: buckets.map(|buckets| buckets.cache_read_tokens),
        cache_write_tokens: buckets.map(|buckets| buckets.cache_write_tokens),
        output_tokens: buckets.map(|buckets| buckets.output_tokens),
        reasoning_tokens: buckets.map(|buckets| buckets.reasoning_tokens),
        settlement_state: request.state.as_str().to_string(),
        series: request.series.as_str().to_string(),
        charge_micro_usd: request.charge_micro_usd,
        recomputed_micro_usd: request.recomputed_micro_usd,
        http_status: group
            .state
            .requests
            .get(request.request_id.as_str())
            .and_then(|observed| observed.traces.first())
            .map(|(_, trace)| trace.http_status),
    }
}

fn case_rows(group: &TableGroup<'_>) -> Vec<CaseRow> {
    let skipped: BTreeSet<CaseRef> = group.verdict.skipped_cases().into_iter().collect();
    group
        .verdict
        .cases
        .iter()
        .map(|case| CaseRow {
            lineage: group.lineage.to_string(),
            group: group.name.to_string(),
            group_status: group.status.clone(),
            task: case.case.task.clone(),
            trial: case.case.trial.clone(),
            replacement: case.case.replacement,
            status: case.status.as_str().to_string(),
            reward: case.reward.clone(),
            passed: case_passed(case),
            skipped: skipped.contains(&CaseRef {
                replacement: 0,
                ..case.case.clone()
            }),
            started_seq: case.started_seq,
        })
        .collect()
}

/// Rows as CSV (RFC 4180 as the `csv` crate writes it: `\n` line ends,
/// fields quoted only when they hold a comma, a quote, `\r` or `\n`, quotes
/// doubled; absent values empty). The header is the rows' serde field
/// names, so every column is a field and no field is left out; a table
/// without rows is its header alone.
///
/// Panics only on a programmer error: a row type that is not a flat record
/// of scalars (the rows of this module all are; a test writes both).
pub fn to_csv<T: TableRow>(rows: &[T]) -> String {
    const FLAT: &str = "a table row is a flat record of scalars and writes as CSV";
    let mut writer = csv::WriterBuilder::new()
        .has_headers(true)
        .from_writer(Vec::new());
    if rows.is_empty() {
        writer.write_record(T::COLUMNS).expect(FLAT);
    }
    for row in rows {
        writer.serialize(row).expect(FLAT);
    }
    let bytes = writer
        .into_inner()
        .expect("writing into memory cannot fail");
    String::from_utf8(bytes).expect("CSV of UTF-8 fields is UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The hand-written writer the `csv` crate replaced, kept as the
    /// oracle: header from `header`, each field looked up in the row's JSON
    /// by name (absent or null empty), quoted when it holds a comma, quote,
    /// `\r` or `\n`, quotes doubled, `\n` after every record.
    fn reference_csv<T: Serialize>(rows: &[T], header: &[&str]) -> String {
        let quoted = |text: &str| {
            if text.contains([',', '"', '\n', '\r']) {
                format!("\"{}\"", text.replace('"', "\"\""))
            } else {
                text.to_string()
            }
        };
        let mut out = header.join(",") + "\n";
        for row in rows {
            let value = serde_json::to_value(row).unwrap();
            let fields: Vec<String> = header
                .iter()
                .map(|column| match value.get(*column) {
                    None | Some(serde_json::Value::Null) => String::new(),
                    Some(serde_json::Value::String(text)) => quoted(text),
                    Some(other) => quoted(&other.to_string()),
                })
                .collect();
            out.push_str(&fields.join(","));
            out.push('\n');
        }
        out
    }

    fn text() -> impl Strategy<Value = String> {
        let alphabet = vec![
            'a', 'Z', '0', ',', '"', '\r', '\n', ' ', '\t', '#', ';', 'é', '|',
        ];
        prop::collection::vec(prop::sample::select(alphabet), 0..6)
            .prop_map(|characters| characters.into_iter().collect())
    }

    fn request_row() -> impl Strategy<Value = RequestRow> {
        let names = (text(), text(), text(), text(), text());
        let decision = (
            prop::option::of(text()),
            prop::option::of(text()),
            prop::option::of(text()),
            prop::sample::select(Category::ALL.to_vec()),
            prop::option::of(text()),
        );
        let tokens = prop::collection::vec(prop::option::of(any::<u64>()), 5);
        let settlement = (
            text(),
            text(),
            prop::option::of(any::<u64>()),
            prop::option::of(any::<u64>()),
            prop::option::of(any::<u16>()),
        );
        (names, decision, tokens, settlement).prop_map(|(names, decision, tokens, settlement)| {
            RequestRow {
                lineage: names.0,
                group: names.1,
                group_status: names.2,
                request_id: names.3,
                tier: names.4,
                provider: decision.0,
                model: decision.1,
                reason: decision.2,
                category: decision.3,
                selected_tier: decision.4,
                uncached_input_tokens: tokens[0],
                cache_read_tokens: tokens[1],
                cache_write_tokens: tokens[2],
                output_tokens: tokens[3],
                reasoning_tokens: tokens[4],
                settlement_state: settlement.0,
                series: settlement.1,
                charge_micro_usd: settlement.2,
                recomputed_micro_usd: settlement.3,
                http_status: settlement.4,
            }
        })
    }

    fn case_row() -> impl Strategy<Value = CaseRow> {
        let names = (text(), text(), text(), text(), text(), any::<u8>());
        let outcome = (
            text(),
            prop::option::of(text()),
            any::<bool>(),
            any::<bool>(),
            prop::option::of(any::<u64>()),
        );
        (names, outcome).prop_map(|(names, outcome)| CaseRow {
            lineage: names.0,
            group: names.1,
            group_status: names.2,
            task: names.3,
            trial: names.4,
            replacement: names.5,
            status: outcome.0,
            reward: outcome.1,
            passed: outcome.2,
            skipped: outcome.3,
            started_seq: outcome.4,
        })
    }

    proptest! {
        /// The `csv` crate writes the bytes the hand-written writer did,
        /// for any text (commas, quotes, CR, LF, tabs, non-ASCII, empty).
        #[test]
        fn csv_equals_the_hand_written_writer(
            requests in prop::collection::vec(request_row(), 0..4),
            cases in prop::collection::vec(case_row(), 0..4),
        ) {
            prop_assert_eq!(to_csv(&requests), reference_csv(&requests, &REQUEST_COLUMNS));
            prop_assert_eq!(to_csv(&cases), reference_csv(&cases, &CASE_COLUMNS));
        }
    }

    /// The columns are the rows' serde field names, in order: a column
    /// cannot be misspelt into an empty one.
    #[test]
    fn the_columns_are_the_serde_field_names() {
        fn field_names<T: Serialize>(row: &T) -> Vec<String> {
            match serde_json::to_value(row).unwrap() {
                serde_json::Value::Object(fields) => fields.keys().cloned().collect(),
                other => panic!("a row is an object: {other}"),
            }
        }
        let request = RequestRow {
            lineage: "l".into(),
            group: "g".into(),
            group_status: "accepted".into(),
            request_id: "id".into(),
            tier: "strong".into(),
            provider: None,
            model: None,
            reason: None,
            category: Category::NoDecision,
            selected_tier: None,
            uncached_input_tokens: None,
            cache_read_tokens: None,
            cache_write_tokens: None,
            output_tokens: None,
            reasoning_tokens: None,
            settlement_state: "computed".into(),
            series: "actual".into(),
            charge_micro_usd: None,
            recomputed_micro_usd: None,
            http_status: None,
        };
        let case = CaseRow {
            lineage: "l".into(),
            group: "g".into(),
            group_status: "accepted".into(),
            task: "t".into(),
            trial: "t1".into(),
            replacement: 0,
            status: "terminal_valid".into(),
            reward: None,
            passed: false,
            skipped: false,
            started_seq: None,
        };
        // serde_json's map is sorted: compare as sets, then the order
        // through the CSV header.
        let sorted = |columns: &[&str]| {
            let mut columns: Vec<String> = columns.iter().map(|c| c.to_string()).collect();
            columns.sort();
            columns
        };
        assert_eq!(field_names(&request), sorted(&REQUEST_COLUMNS));
        assert_eq!(field_names(&case), sorted(&CASE_COLUMNS));
        let header = |csv: String| csv.lines().next().unwrap().to_string();
        assert_eq!(header(to_csv(&[request])), REQUEST_COLUMNS.join(","));
        assert_eq!(header(to_csv(&[case])), CASE_COLUMNS.join(","));
    }

    /// The group table: its columns are its serde field names, one row
    /// per target group in target order, a reused control pointing at the
    /// lineage that ran it (LINEAGE-6).
    #[test]
    fn the_group_table_has_a_row_per_target_group() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/replay-tests/scenarios/control-reuse.toml"
        ))
        .unwrap();
        let spec: crate::testkit::scenario::Scenario = toml::from_str(&text).unwrap();
        let state = crate::testkit::scenario::run(&spec).unwrap().0.state;
        let rows = group_table(&state);
        assert_eq!(
            to_csv(&rows[..1]).lines().next().unwrap(),
            GROUP_COLUMNS.join(",")
        );
        let reused = rows
            .iter()
            .find(|row| row.lineage == "short13-kimi-2026-12" && row.group == "control")
            .unwrap();
        assert_eq!(
            (
                reused.kind.as_str(),
                reused.source_lineage.as_deref(),
                reused.accepted
            ),
            ("control", Some("short13-kimi-2026-11"), true)
        );
        let orders: Vec<(&str, u32, &str)> = rows
            .iter()
            .filter(|row| row.lineage == "short13-kimi-2026-11")
            .map(|row| (row.group.as_str(), row.group_order, row.kind.as_str()))
            .collect();
        assert_eq!(
            orders,
            [
                ("canary-1", 0, "canary"),
                ("control", 1, "control"),
                ("r1", 2, "round"),
                ("r2", 3, "round")
            ]
        );
        assert!(rows.iter().all(|row| row.predeclared_cases > 0));
    }

    #[test]
    fn a_table_without_rows_is_its_header() {
        assert_eq!(
            to_csv::<CaseRow>(&[]),
            format!("{}\n", CASE_COLUMNS.join(","))
        );
        assert_eq!(
            to_csv::<RequestRow>(&[]),
            format!("{}\n", REQUEST_COLUMNS.join(","))
        );
    }

    #[test]
    fn fields_are_quoted_as_rfc_4180_says() {
        let mut row = CaseRow {
            lineage: "a,b".into(),
            group: "say \"x\"".into(),
            group_status: "line\nbreak".into(),
            task: "cr\r".into(),
            trial: String::new(),
            replacement: 1,
            status: " spaced ".into(),
            reward: Some("#1".into()),
            passed: true,
            skipped: false,
            started_seq: Some(7),
        };
        let csv = to_csv(std::slice::from_ref(&row));
        let record = csv.split_once('\n').unwrap().1;
        assert_eq!(
            record,
            "\"a,b\",\"say \"\"x\"\"\",\"line\nbreak\",\"cr\r\",,1, spaced ,#1,true,false,7\n"
        );
        row.reward = None;
        row.started_seq = None;
        assert!(to_csv(&[row]).ends_with(",1, spaced ,,true,false,\n"));
    }
}
