//! The content of a Harbor 0.25.0 TrialConfig, as BIND-1 compares it.
//!
//! A trial's `result.json` embeds Harbor's full dump of the TrialConfig it
//! ran (every default filled in, `1800` written as `1800.0`), while `case
//! start` recorded the hash of the config file it launched (only what
//! benchledger set). Their *content* is the same when, after leaving out
//!
//! - every member equal to Harbor's default for that field (the dump of
//!   Harbor's own default TrialConfig, `tools/harbor/trial-config-defaults.json`,
//!   written by `tools/harbor/trial_trees.py defaults`; nested models are
//!   compared member by member, free-form dicts such as `kwargs` whole),
//! - every member that is `null` (Harbor's "not set"),
//! - `job_id` (Harbor's own equality of TrialConfigs leaves it out; a job's
//!   facts are recorded apart, `harbor_job_recorded.v1`),
//!
//! both are equal, numbers compared by value (`1800` = `1800.0`). This is
//! what Harbor's `exclude_defaults` dump (`<trial>/config.json`) keeps, so a
//! trial that ran another model, endpoint or agent option never has the
//! launched content. [`content_blake3`] is BLAKE3 of the content's canonical
//! text (members sorted by key bytes, no whitespace, minimal string escapes,
//! numbers as canonical decimals).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde_json::Value;

use crate::schema::money::Dec;

/// Harbor 0.25.0's default TrialConfig content (task path, trial name and
/// job id left out), as its model dumps it.
pub const HARBOR_TRIAL_CONFIG_DEFAULTS: &str =
    include_str!("../../tools/harbor/trial-config-defaults.json");

/// Members of a TrialConfig that are not its content.
const IDENTITY_FIELDS: [&str; 1] = ["job_id"];

/// A JSON value with numbers as canonical decimals and `null` members left
/// out.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    Null,
    Bool(bool),
    /// A number's canonical decimal text (or its text as written, when it is
    /// not a decimal benchledger can hold).
    Number(String),
    Text(String),
    List(Vec<Node>),
    Object(BTreeMap<String, Node>),
}

fn node(v: &Value) -> Node {
    match v {
        Value::Null => Node::Null,
        Value::Bool(b) => Node::Bool(*b),
        Value::Number(n) => {
            let text = n.to_string();
            Node::Number(
                Dec::from_json_number_text(&text)
                    .map(|d| d.canonical())
                    .unwrap_or(text),
            )
        }
        Value::String(s) => Node::Text(s.clone()),
        Value::Array(items) => Node::List(items.iter().map(node).collect()),
        Value::Object(m) => Node::Object(
            m.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), node(v)))
                .collect(),
        ),
    }
}

fn defaults() -> &'static Node {
    static DEFAULTS: OnceLock<Node> = OnceLock::new();
    DEFAULTS.get_or_init(|| {
        // Compiled in from a file the Harbor tooling writes and checks; a
        // malformed copy is a build mistake, not input.
        let v: Value = serde_json::from_str(HARBOR_TRIAL_CONFIG_DEFAULTS)
            .expect("tools/harbor/trial-config-defaults.json is json");
        node(&v)
    })
}

/// `n` without what equals `default`; `None` when nothing is left of it.
fn strip(n: Node, default: Option<&Node>) -> Option<Node> {
    if default == Some(&n) {
        return None;
    }
    match (n, default) {
        (Node::Object(members), d) => {
            let dm = match d {
                Some(Node::Object(dm)) => Some(dm),
                _ => None,
            };
            let out: BTreeMap<String, Node> = members
                .into_iter()
                .filter_map(|(k, v)| {
                    let dv = dm.and_then(|dm| dm.get(&k));
                    strip(v, dv).map(|v| (k, v))
                })
                .collect();
            if out.is_empty() && dm.is_some() {
                None
            } else {
                Some(Node::Object(out))
            }
        }
        (other, _) => Some(other),
    }
}

fn content(config: &Value) -> Node {
    let mut n = node(config);
    if let Node::Object(m) = &mut n {
        for f in IDENTITY_FIELDS {
            m.remove(f);
        }
    }
    strip(n, Some(defaults())).unwrap_or(Node::Object(BTreeMap::new()))
}

fn write(n: &Node, out: &mut String) {
    match n {
        Node::Null => out.push_str("null"),
        Node::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Node::Number(t) => out.push_str(t),
        Node::Text(s) => crate::schema::strings::push_json_string(out, s),
        Node::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        Node::Object(m) => {
            out.push('{');
            for (i, (k, v)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                crate::schema::strings::push_json_string(out, k);
                out.push(':');
                write(v, out);
            }
            out.push('}');
        }
    }
}

/// The canonical text of a TrialConfig's content.
pub fn content_text(config: &Value) -> String {
    let mut out = String::new();
    write(&content(config), &mut out);
    out
}

/// BLAKE3 of [`content_text`], hex: equal for two TrialConfigs exactly when
/// Harbor runs them alike.
pub fn content_blake3(config: &Value) -> String {
    blake3::hash(content_text(config).as_bytes())
        .to_hex()
        .to_string()
}

/// A key as it may appear in a difference's path: itself, unless it looks
/// like a credential.
fn path_key(k: &str) -> &str {
    if crate::schema::secrets::scan(k).is_some() {
        "<redacted key>"
    } else {
        k
    }
}

fn diff(a: Option<&Node>, b: Option<&Node>, path: &str, out: &mut Vec<String>) {
    match (a, b) {
        (Some(Node::Object(x)), Some(Node::Object(y))) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                let p = if path.is_empty() {
                    path_key(k).to_string()
                } else {
                    format!("{path}.{}", path_key(k))
                };
                diff(x.get(k), y.get(k), &p, out);
            }
        }
        (x, y) if x == y => {}
        _ => out.push(if path.is_empty() {
            "(the whole config)".to_string()
        } else {
            path.to_string()
        }),
    }
}

/// The prefix of a recorded difference found in the trial's own
/// `config.json` rather than in the TrialConfig embedded in its result
/// (BIND-11: the file is compared like the embedded config).
pub const OWN_CONFIG_FILE_PREFIX: &str = "config.json: ";

/// The differences of a trial's own `config.json` (its bytes, or why they
/// do not parse) from the launched config, each prefixed with
/// [`OWN_CONFIG_FILE_PREFIX`]; names only, never values.
pub fn own_config_differences(launched: &Value, file: Result<&Value, &str>) -> Vec<String> {
    match file {
        Ok(v) => differences(launched, v)
            .into_iter()
            .map(|d| format!("{OWN_CONFIG_FILE_PREFIX}{d}"))
            .collect(),
        Err(why) => vec![format!(
            "{OWN_CONFIG_FILE_PREFIX}(not a TrialConfig: {why})"
        )],
    }
}

/// The field paths (`agent.model_name`, `agent.kwargs.api_base`) where the
/// contents of two TrialConfigs differ; names only, never values.
pub fn differences(a: &Value, b: &Value) -> Vec<String> {
    let mut out = Vec::new();
    diff(Some(&content(a)), Some(&content(b)), "", &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_trial_config_file_is_compared_like_the_embedded_one() {
        // rule BIND-11
        let launched = json!({"agent": {"name": "terminus-2", "model_name": "bitrouter/@auto"}});
        let edited = json!({"agent": {"name": "terminus-2", "model_name": "openai/gpt-5"}});
        assert_eq!(
            own_config_differences(&launched, Ok(&edited)),
            vec![format!("{OWN_CONFIG_FILE_PREFIX}agent.model_name")],
            "BIND-11: the file's difference is named under config.json"
        );
        assert!(own_config_differences(&launched, Ok(&launched)).is_empty());
        let broken = own_config_differences(&launched, Err("line 1: duplicate key"));
        assert!(
            broken.len() == 1 && broken[0].starts_with(OWN_CONFIG_FILE_PREFIX),
            "BIND-11: a config.json that does not parse is a difference, never skipped: {broken:?}"
        );
    }

    const SHARED: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/fixtures/harbor-0.25.0"
    );
    const REAL: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/replay-tests/fixtures/bitrouter/real-1.0.0-alpha.35/harbor"
    );

    fn read(path: &str) -> Value {
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    // rule BIND-1: Harbor's full dump and the config it was given have one
    // content; Harbor's own sparse dump (exclude_defaults) has it too.
    #[test]
    fn harbors_dumps_and_the_launched_config_have_one_content() {
        for trial in [
            "fizzbuzz-script__round2",
            "hello-file__control1",
            "json-config__hosted1",
            "sorted-words__round1",
        ] {
            let input = read(&format!("{REAL}/{trial}/trial-config.input.json"));
            let sparse = read(&format!("{REAL}/{trial}/config.json"));
            let result = read(&format!("{REAL}/{trial}/result.json"));
            let embedded = &result["config"];
            assert_eq!(
                content_blake3(&input),
                content_blake3(embedded),
                "BIND-1: {trial}"
            );
            assert_eq!(content_blake3(&sparse), content_blake3(embedded), "{trial}");
            assert!(differences(&input, embedded).is_empty(), "{trial}");
        }
        if std::path::Path::new(SHARED).exists() {
            let full = read(&format!("{SHARED}/trial-config.terminus2.full.json"));
            let sparse = read(&format!("{SHARED}/trial-config.terminus2.json"));
            assert_eq!(content_text(&full), content_text(&sparse));
        }
    }

    // rule BIND-1: another model, another endpoint, another agent option.
    #[test]
    fn another_model_endpoint_or_option_is_other_content() {
        let launched = json!({
            "task": {"path": "fix-git"},
            "trial_name": "fix-git__r1-t1",
            "agent": {"name": "terminus-2", "model_name": "openai/@auto",
                      "override_timeout_sec": 1800,
                      "kwargs": {"api_base": "http://10.0.0.1:1/v1", "llm_kwargs": {"api_key": "k"}}},
            "environment": {"type": "ec2", "delete": true, "kwargs": {"region": "us-east-1"}},
        });
        let mut ran = launched.clone();
        ran["agent"]["override_timeout_sec"] = json!(1800.0);
        ran["environment"]["force_build"] = json!(false);
        ran["job_id"] = json!("3f1c2b9e-8d4a-4e57-9a41-0c6f2d7b5e10");
        ran["agent"]["base_url"] = Value::Null;
        assert_eq!(content_blake3(&launched), content_blake3(&ran));
        let mut other = ran.clone();
        other["agent"]["model_name"] = json!("openai/gpt-4o");
        other["agent"]["kwargs"]
            .as_object_mut()
            .unwrap()
            .remove("api_base");
        other["agent"]["kwargs"]["temperature"] = json!(0.9);
        other["agent"]["base_url"] = json!("https://api.openai.com/v1");
        assert_ne!(content_blake3(&launched), content_blake3(&other));
        assert_eq!(
            differences(&launched, &other),
            [
                "agent.base_url",
                "agent.kwargs.api_base",
                "agent.kwargs.temperature",
                "agent.model_name"
            ]
        );
        // A default spelled out is no difference; a non-default is.
        let mut docker = launched.clone();
        docker["environment"]["delete"] = json!(false);
        assert_eq!(differences(&launched, &docker), ["environment.delete"]);
        assert_eq!(
            content_text(&json!({"timeout_multiplier": 1, "verifier": {"disable": false}})),
            "{}"
        );
    }
}
