//! What `manifest_frozen.v2` freezes beside the v1 manifest: how evidence is
//! bound to its launch (BIND-1, BIND-2, BIND-7), how `run` renders, launches
//! and gathers (the launch and evidence commands, the TrialConfig's
//! environment and task source), and who may sign (TRUST-1, TRUST-3).
//!
//! Stored layout, like `schema::manifest`: these structs are bincode-encoded
//! in declaration order inside the `manifest_frozen.v2` payload; a field
//! change needs a new kind version. `tests::the_stored_layout_is_pinned`
//! fails on any. Argv templates are lists of words; a word may hold
//! `{placeholder}`s from `PLACEHOLDERS`, filled by `fill`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The frozen plan of a v2 lineage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// Evidence binding (BIND).
    pub binding: Binding,
    /// How a case is launched (`run`).
    pub launch: Launch,
    /// How BitRouter's evidence is gathered after a group (`run`, SETTLE-8).
    pub evidence: EvidencePlan,
    /// Who may sign sign-offs and checkpoints (TRUST-1, TRUST-3).
    pub signers: Signers,
}

/// How a Harbor result is bound to the launch it claims (BIND-1, BIND-2,
/// BIND-7).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Binding {
    /// The key of the reward in Harbor's verifier output (BIND-2).
    pub reward_key: String,
    /// The smallest valid reward, canonical decimal text (BIND-2).
    pub reward_min: String,
    /// The largest valid reward, canonical decimal text (BIND-2).
    pub reward_max: String,
    /// How far a result's timestamps may lie outside the launch window, in
    /// seconds (BIND-1).
    pub clock_skew_sec: u64,
    /// The one validator of rendered TrialConfigs (GATE-7, BIND-7).
    pub validator: Validator,
}

/// The frozen GATE-7 validator (BIND-7): a validation counts only when this
/// command ran and the program's BLAKE3 matched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Validator {
    /// The argv template (`{config}` is the rendered TrialConfig's path).
    pub command: Vec<String>,
    /// The validator program (a path, as the operator's machine names it).
    pub program: String,
    /// BLAKE3 of the program's bytes, hex.
    pub program_blake3: String,
    /// The Harbor version whose models it validates with.
    pub harbor_version: String,
}

/// How `run` launches one case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Launch {
    /// The argv template of the launch (`{config}`, `{trial_name}`,
    /// `{jobs_dir}`, ...), run with the frozen AWS selector and no ambient
    /// credentials.
    pub command: Vec<String>,
    /// The longest a launched process may run, in seconds, before `run`
    /// kills it (the case then stays `started`).
    pub timeout_sec: u64,
    /// The Harbor environment the TrialConfig names: `None` is Harbor's
    /// `ec2` type with the frozen sandbox; `Some` an `import_path` class.
    pub environment_import_path: Option<String>,
    /// Extra environment kwargs of the TrialConfig, in key order.
    pub environment_kwargs: BTreeMap<String, Kwarg>,
    /// Extra agent kwargs of the TrialConfig (e.g. `max_turns`), in key
    /// order.
    pub agent_kwargs: BTreeMap<String, Kwarg>,
    /// A local directory of task folders; `None` takes tasks from the
    /// frozen dataset repository and revision.
    pub tasks_dir: Option<String>,
}

/// A plain TrialConfig kwarg value (no floats: the ledger stores none).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Kwarg {
    Text(String),
    /// An integer.
    Int(i64),
    /// A flag.
    Bool(bool),
}

/// How BitRouter's evidence of a group is gathered after its last case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvidencePlan {
    /// The argv template exporting usage rows (`{db_path}`, `{out}`), e.g.
    /// `bro workflow-state metering-usage`.
    pub usage_export: Vec<String>,
    /// The argv template fetching the receipt of one pending request
    /// (`{db_path}`, `{request_id}`), run once per pending request, e.g.
    /// `bro workflow-state reconcile-metering`; empty when the product has
    /// no receipts.
    pub reconcile: Vec<String>,
    /// Seconds between receipt polls within the settlement grace.
    pub receipt_poll_sec: u64,
}

/// The allowed signers (TRUST-3) and witnesses (TRUST-1), as C2SP note
/// verifier keys (`name+keyhash+base64`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signers {
    /// Keys that may sign off as the operator and sign checkpoints.
    pub operators: Vec<String>,
    /// Keys that may sign off as the reviewer.
    pub reviewers: Vec<String>,
    /// Witness keys whose cosignatures on checkpoints are verified.
    pub witnesses: Vec<String>,
}

/// Every placeholder an argv template may use.
pub const PLACEHOLDERS: [&str; 11] = [
    "config",
    "trial_name",
    "jobs_dir",
    "group",
    "task",
    "trial",
    "log",
    "db_path",
    "out",
    "request_id",
    "opened_at",
];

/// The `{placeholder}` names a word uses, or the first malformed one.
pub fn placeholders_of(word: &str) -> Result<Vec<&str>, String> {
    let mut names = Vec::new();
    let mut rest = word;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let close = after
            .find('}')
            .ok_or_else(|| format!("an unclosed '{{' in {word:?}"))?;
        let name = &after[..close];
        if !PLACEHOLDERS.contains(&name) {
            return Err(format!(
                "unknown placeholder {{{name}}} in {word:?} (known: {})",
                PLACEHOLDERS.join(", ")
            ));
        }
        names.push(name);
        rest = &after[close + 1..];
    }
    if rest.contains('}') {
        return Err(format!("a '}}' without '{{' in {word:?}"));
    }
    Ok(names)
}

/// Fills an argv template: every `{name}` is replaced by `values[name]`;
/// a placeholder without a value is an error naming it.
pub fn fill(template: &[String], values: &BTreeMap<&str, String>) -> Result<Vec<String>, String> {
    template
        .iter()
        .map(|word| {
            let mut out = String::with_capacity(word.len());
            let mut rest = word.as_str();
            while let Some(open) = rest.find('{') {
                out.push_str(&rest[..open]);
                let after = &rest[open + 1..];
                let close = after
                    .find('}')
                    .ok_or_else(|| format!("an unclosed '{{' in {word:?}"))?;
                let name = &after[..close];
                let value = values
                    .get(name)
                    .ok_or_else(|| format!("no value for {{{name}}} in {word:?}"))?;
                out.push_str(value);
                rest = &after[close + 1..];
            }
            out.push_str(rest);
            Ok(out)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_name_known_placeholders_only() {
        assert_eq!(placeholders_of("--config={config}").unwrap(), ["config"]);
        assert_eq!(
            placeholders_of("{jobs_dir}/{trial_name}").unwrap(),
            ["jobs_dir", "trial_name"]
        );
        assert!(placeholders_of("{nope}")
            .unwrap_err()
            .contains("unknown placeholder {nope}"));
        assert!(placeholders_of("{config").unwrap_err().contains("unclosed"));
        assert!(placeholders_of("config}").unwrap_err().contains("without"));
        let values = BTreeMap::from([("config", "/c.json".to_string())]);
        assert_eq!(
            fill(&["-c".into(), "{config}".into()], &values).unwrap(),
            ["-c", "/c.json"]
        );
        assert!(fill(&["{log}".into()], &values)
            .unwrap_err()
            .contains("no value for {log}"));
    }

    /// The stored layout of a fully populated plan is pinned: a change of
    /// these types changes the bytes of every v2 ledger and needs a new kind
    /// version (`manifest_frozen.v3`).
    #[test]
    fn the_stored_layout_is_pinned() {
        let plan = Plan {
            binding: Binding {
                reward_key: "reward".into(),
                reward_min: "0".into(),
                reward_max: "1".into(),
                clock_skew_sec: 300,
                validator: Validator {
                    command: vec!["python".into(), "v.py".into(), "{config}".into()],
                    program: "v.py".into(),
                    program_blake3: "ab".repeat(32),
                    harbor_version: "0.25.0".into(),
                },
            },
            launch: Launch {
                command: vec!["harbor".into(), "trial".into(), "start".into()],
                timeout_sec: 3600,
                environment_import_path: Some("m:C".into()),
                environment_kwargs: BTreeMap::from([("a".into(), Kwarg::Text("b".into()))]),
                agent_kwargs: BTreeMap::from([
                    ("max_turns".into(), Kwarg::Int(12)),
                    ("record".into(), Kwarg::Bool(false)),
                ]),
                tasks_dir: Some("tasks".into()),
            },
            evidence: EvidencePlan {
                usage_export: vec!["bro".into()],
                reconcile: vec![],
                receipt_poll_sec: 30,
            },
            signers: Signers {
                operators: vec!["alice+01020304+AQ".into()],
                reviewers: vec!["bob+01020304+AQ".into()],
                witnesses: vec![],
            },
        };
        // The stored bytes (test code may name the codec) and the JSON with
        // every field name (a rename keeps bincode's bytes but not the
        // meaning).
        let bytes = crate::log::codec::encode(&plan).unwrap();
        let json = serde_json::to_vec(&plan).unwrap();
        assert_eq!(
            (
                bytes.len(),
                hex::encode(blake3::hash(&bytes).as_bytes()),
                hex::encode(blake3::hash(&json).as_bytes())
            ),
            (
                PINNED_LEN,
                PINNED_BYTES_BLAKE3.to_string(),
                PINNED_JSON_BLAKE3.to_string()
            ),
            "the stored layout of schema::plan changed: a field change needs a new kind version"
        );
    }

    const PINNED_LEN: usize = 463;
    const PINNED_BYTES_BLAKE3: &str =
        "e3e1be5659b9fad817887e59db75de519ebcf8c6bcf543d64bd3c2e98e711a62";
    const PINNED_JSON_BLAKE3: &str =
        "39d5007b0ebaa1889ed51d64a355a47ec9eae3bf7324aa3eec960129db5c1798";
}
