//! The v2 sections of the manifest (`[binding]`, `[launch]`, `[evidence]`,
//! `[signers]`): TOML input types, their conversion into the stored
//! `schema::plan::Plan`, and their checks (BIND-1, BIND-2, BIND-3, BIND-7,
//! TRUST-3).

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::error::Result;
use crate::log::tlog::{KeyKind, VerifierKey};
use crate::schema::manifest::{ManifestFile, Witness, Witnessing};
use crate::schema::money::Dec;
use crate::schema::plan::{
    placeholders_of, Binding, EvidencePlan, Kwarg, Launch, Plan, Signers, Validator,
};
use crate::schema::rule::Rule;

use super::validate::{input_error, refused};

pub use crate::limits::ARGV_WORDS_MAX;
pub use crate::limits::ARGV_WORD_BYTES_MAX;
pub use crate::limits::CLOCK_SKEW_SEC_MAX;
pub use crate::limits::KWARGS_MAX;
pub use crate::limits::LAUNCH_TIMEOUT_SEC_MAX;
pub use crate::limits::RECEIPT_POLL_SEC_MAX;
pub use crate::limits::SIGNERS_MAX;
/// The Harbor 0.25 exceptions after which the verifier scored an
/// environment that stayed reachable: the only ones that may be accepted
/// (BIND-3).
pub const ACCEPTABLE_EXCEPTIONS: [&str; 1] = ["AgentTimeoutError"];

/// `[binding]` (BIND-1, BIND-2, BIND-7).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BindingToml {
    /// The reward key of the verifier output.
    pub reward_key: String,
    /// Smallest valid reward, decimal text.
    pub reward_min: String,
    /// Largest valid reward, decimal text.
    pub reward_max: String,
    /// Launch-window slack, seconds.
    pub clock_skew_sec: u64,
    /// The frozen validator.
    pub validator: ValidatorToml,
}

/// `[binding.validator]` (BIND-7).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValidatorToml {
    /// Argv template with `{config}`.
    pub command: Vec<String>,
    /// The validator program's path.
    pub program: String,
    /// BLAKE3 of the program, hex.
    pub program_blake3: String,
    /// The Harbor version it validates with.
    pub harbor_version: String,
}

/// The manifest's `[launch]` table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaunchToml {
    /// Argv template with `{config}`.
    pub command: Vec<String>,
    /// Longest a case process may run, seconds.
    pub timeout_sec: u64,
    /// A Harbor environment class (`module:Class`); absent is `ec2`.
    #[serde(default)]
    pub environment_import_path: Option<String>,
    /// Extra environment kwargs.
    #[serde(default)]
    pub environment_kwargs: BTreeMap<String, KwargToml>,
    /// Extra agent kwargs.
    #[serde(default)]
    pub agent_kwargs: BTreeMap<String, KwargToml>,
    /// A local task directory; absent takes the frozen dataset.
    #[serde(default)]
    pub tasks_dir: Option<String>,
}

/// A kwarg value as TOML writes it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum KwargToml {
    /// A flag.
    Bool(bool),
    /// An integer.
    Int(i64),
    Text(String),
}

/// The manifest's `[evidence]` table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvidenceToml {
    /// Argv template exporting usage (`{db_path}`, `{out}`).
    pub usage_export: Vec<String>,
    /// Argv template fetching one receipt (`{request_id}`); empty when there
    /// are none.
    #[serde(default)]
    pub reconcile: Vec<String>,
    /// Seconds between receipt polls.
    pub receipt_poll_sec: u64,
}

/// `[signers]` (TRUST-1, TRUST-3).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignersToml {
    /// Operator verifier keys.
    pub operators: Vec<String>,
    /// Reviewer verifier keys.
    pub reviewers: Vec<String>,
    /// Witness (cosignature) verifier keys.
    #[serde(default)]
    pub witnesses: Vec<String>,
}

/// `[witnessing]` (TRUST-6).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WitnessingToml {
    /// k: how many distinct witnesses must cosign a covering checkpoint.
    pub quorum: u32,
    /// `[[witnessing.witnesses]]`.
    #[serde(default)]
    pub witnesses: Vec<WitnessToml>,
}

/// `[[witnessing.witnesses]]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WitnessToml {
    /// A label naming it.
    pub name: String,
    /// Its cosignature/v1 verifier key, also listed in `[signers].witnesses`.
    pub key: String,
    /// Its http:// submission prefix.
    pub url: String,
}

/// `[witnessing]` checked against the frozen plan (TRUST-6): 1 to
/// `WITNESSES_MAX` witnesses, 1 <= quorum <= their number, names unique
/// labels, each key a cosignature/v1 verifier key that `[signers].witnesses`
/// lists (once), each url an http:// URL.
pub fn witnessing(
    input: Option<WitnessingToml>,
    plan: &Plan,
    source: &str,
) -> Result<Option<Witnessing>> {
    use crate::limits::WITNESSES_MAX;
    let Some(WitnessingToml { quorum, witnesses }) = input else {
        return Ok(None);
    };
    if witnesses.is_empty() || witnesses.len() > WITNESSES_MAX {
        return Err(input_error(
            source,
            "witnessing.witnesses",
            format!("{} witnesses; give 1 to {WITNESSES_MAX}", witnesses.len()),
        ));
    }
    if quorum == 0 || quorum as usize > witnesses.len() {
        return Err(input_error(
            source,
            "witnessing.quorum",
            format!(
                "must be 1 to the number of witnesses ({}), got {quorum}",
                witnesses.len()
            ),
        ));
    }
    let mut out: Vec<Witness> = Vec::with_capacity(witnesses.len());
    for (i, w) in witnesses.into_iter().enumerate() {
        let field = |f: &str| format!("witnessing.witnesses[{i}].{f}");
        super::validate::check_label(source, &field("name"), &w.name)?;
        if out.iter().any(|o| o.name == w.name) {
            return Err(input_error(
                source,
                &field("name"),
                format!("{:?} names two witnesses; names are unique", w.name),
            ));
        }
        let key = VerifierKey::parse(&w.key)
            .map_err(|e| input_error(source, &field("key"), format!("not a verifier key: {e}")))?;
        if key.kind() != KeyKind::CosignatureV1 {
            return Err(input_error(
                source,
                &field("key"),
                format!(
                    "must be a cosignature/v1 key, got {} key",
                    crate::schema::strings::with_article(key.kind().label())
                ),
            ));
        }
        if !plan.signers.witnesses.contains(&w.key) {
            return Err(input_error(
                source,
                &field("key"),
                "is not listed in [signers].witnesses; a witness's key is listed there too",
            ));
        }
        if out.iter().any(|o| o.key == w.key) {
            return Err(input_error(
                source,
                &field("key"),
                "is the key of another witness; each witness has its own key",
            ));
        }
        crate::method::witness::check_url(&w.url)
            .map_err(|e| input_error(source, &field("url"), e))?;
        out.push(Witness {
            name: w.name,
            key: w.key,
            url: w.url,
        });
    }
    Ok(Some(Witnessing {
        quorum,
        witnesses: out,
    }))
}

/// The four v2 sections as read, each field the manifest table of its name.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PlanToml {
    pub binding: Option<BindingToml>,
    pub launch: Option<LaunchToml>,
    pub evidence: Option<EvidenceToml>,
    pub signers: Option<SignersToml>,
}

impl From<KwargToml> for Kwarg {
    fn from(k: KwargToml) -> Kwarg {
        match k {
            KwargToml::Bool(b) => Kwarg::Bool(b),
            KwargToml::Int(i) => Kwarg::Int(i),
            KwargToml::Text(t) => Kwarg::Text(t),
        }
    }
}

fn kwargs(map: BTreeMap<String, KwargToml>) -> BTreeMap<String, Kwarg> {
    map.into_iter().map(|(k, v)| (k, Kwarg::from(v))).collect()
}

/// Checks the v2 sections against the manifest and converts them into the
/// stored plan.
pub fn plan(toml: PlanToml, m: &ManifestFile, source: &str) -> Result<Plan> {
    let missing = |section: &str| {
        input_error(
            source,
            section,
            "manifest_version 2 needs this section (see ledger-schema/examples/manifest.toml)",
        )
    };
    let binding = toml.binding.ok_or_else(|| missing("binding"))?;
    let launch = toml.launch.ok_or_else(|| missing("launch"))?;
    let evidence = toml.evidence.ok_or_else(|| missing("evidence"))?;
    let signers = toml.signers.ok_or_else(|| missing("signers"))?;
    let plan = Plan {
        binding: binding_of(binding, m, source)?,
        launch: launch_of(launch, source)?,
        evidence: evidence_of(evidence, source)?,
        signers: signers_of(signers, source)?,
    };
    check_accepted_exceptions(m, source)?;
    Ok(plan)
}

/// BIND-3: only exceptions after which Harbor's verifier scored a
/// reachable environment may be accepted.
fn check_accepted_exceptions(m: &ManifestFile, source: &str) -> Result<()> {
    for (i, e) in m.harbor.accepted_exceptions.iter().enumerate() {
        if !ACCEPTABLE_EXCEPTIONS.contains(&e.as_str()) {
            return Err(refused(
                Rule::Bind3,
                source,
                &format!("harbor.accepted_exceptions[{i}]"),
                format!(
                    "{e:?} can never be accepted: a cancelled, crashed or disconnected trial is not scored (allowed: {})",
                    ACCEPTABLE_EXCEPTIONS.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

fn binding_of(b: BindingToml, m: &ManifestFile, source: &str) -> Result<Binding> {
    let BindingToml {
        reward_key,
        reward_min,
        reward_max,
        clock_skew_sec,
        validator,
    } = b;
    if reward_key.trim().is_empty() || reward_key.len() > 128 {
        return Err(input_error(
            source,
            "binding.reward_key",
            "must be 1 to 128 bytes",
        ));
    }
    let min = canonical_dec(&reward_min, source, "binding.reward_min")?;
    let max = canonical_dec(&reward_max, source, "binding.reward_max")?;
    if min >= max {
        return Err(input_error(
            source,
            "binding.reward_max",
            format!("must be above reward_min {reward_min}, got {reward_max}"),
        ));
    }
    if clock_skew_sec > CLOCK_SKEW_SEC_MAX {
        return Err(input_error(
            source,
            "binding.clock_skew_sec",
            format!("must be at most {CLOCK_SKEW_SEC_MAX}, got {clock_skew_sec}"),
        ));
    }
    Ok(Binding {
        reward_key,
        reward_min,
        reward_max,
        clock_skew_sec,
        validator: validator_of(validator, m, source)?,
    })
}

fn canonical_dec(text: &str, source: &str, field: &str) -> Result<Dec> {
    let d = Dec::parse(text).map_err(|e| input_error(source, field, e))?;
    if d.to_string() != text {
        return Err(input_error(
            source,
            field,
            format!(
                "write the decimal canonically as {:?}, got {text:?}",
                d.to_string()
            ),
        ));
    }
    Ok(d)
}

fn validator_of(v: ValidatorToml, m: &ManifestFile, source: &str) -> Result<Validator> {
    let ValidatorToml {
        command,
        program,
        program_blake3,
        harbor_version,
    } = v;
    check_argv(
        &command,
        source,
        "binding.validator.command",
        Some("config"),
    )?;
    if program.trim().is_empty() {
        return Err(input_error(
            source,
            "binding.validator.program",
            "must not be empty",
        ));
    }
    let hex_ok = program_blake3.len() == 64
        && program_blake3
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if !hex_ok {
        return Err(input_error(
            source,
            "binding.validator.program_blake3",
            format!("must be 64 lowercase hex digits, got {program_blake3:?}"),
        ));
    }
    if harbor_version != m.software.harbor_version {
        return Err(refused(
            Rule::Bind7,
            source,
            "binding.validator.harbor_version",
            format!(
                "the validator runs Harbor {harbor_version}, the lineage runs Harbor {}",
                m.software.harbor_version
            ),
        ));
    }
    Ok(Validator {
        command,
        program,
        program_blake3,
        harbor_version,
    })
}

fn launch_of(l: LaunchToml, source: &str) -> Result<Launch> {
    let LaunchToml {
        command,
        timeout_sec,
        environment_import_path,
        environment_kwargs,
        agent_kwargs,
        tasks_dir,
    } = l;
    check_argv(&command, source, "launch.command", Some("config"))?;
    if !(1..=LAUNCH_TIMEOUT_SEC_MAX).contains(&timeout_sec) {
        return Err(input_error(
            source,
            "launch.timeout_sec",
            format!("must be 1 to {LAUNCH_TIMEOUT_SEC_MAX}, got {timeout_sec}"),
        ));
    }
    if let Some(path) = &environment_import_path {
        let ok = path
            .split_once(':')
            .is_some_and(|(module, class)| !module.is_empty() && !class.is_empty());
        if !ok {
            return Err(input_error(
                source,
                "launch.environment_import_path",
                format!("must be module.path:ClassName, got {path:?}"),
            ));
        }
    }
    for (field, map) in [
        ("launch.environment_kwargs", &environment_kwargs),
        ("launch.agent_kwargs", &agent_kwargs),
    ] {
        if map.len() > KWARGS_MAX {
            return Err(input_error(
                source,
                field,
                format!("at most {KWARGS_MAX} keys"),
            ));
        }
    }
    if tasks_dir.as_ref().is_some_and(|d| d.trim().is_empty()) {
        return Err(input_error(source, "launch.tasks_dir", "must not be empty"));
    }
    Ok(Launch {
        command,
        timeout_sec,
        environment_import_path,
        environment_kwargs: kwargs(environment_kwargs),
        agent_kwargs: kwargs(agent_kwargs),
        tasks_dir,
    })
}

fn evidence_of(e: EvidenceToml, source: &str) -> Result<EvidencePlan> {
    let EvidenceToml {
        usage_export,
        reconcile,
        receipt_poll_sec,
    } = e;
    check_argv(&usage_export, source, "evidence.usage_export", Some("out"))?;
    if !reconcile.is_empty() {
        check_argv(&reconcile, source, "evidence.reconcile", Some("request_id"))?;
    }
    if !(1..=RECEIPT_POLL_SEC_MAX).contains(&receipt_poll_sec) {
        return Err(input_error(
            source,
            "evidence.receipt_poll_sec",
            format!("must be 1 to {RECEIPT_POLL_SEC_MAX}, got {receipt_poll_sec}"),
        ));
    }
    Ok(EvidencePlan {
        usage_export,
        reconcile,
        receipt_poll_sec,
    })
}

/// TRUST-3: every key parses as a C2SP verifier key of its kind, no list
/// is too long, and no key may sign in both roles.
fn signers_of(s: SignersToml, source: &str) -> Result<Signers> {
    let SignersToml {
        operators,
        reviewers,
        witnesses,
    } = s;
    for (field, keys, kind, required) in [
        ("signers.operators", &operators, KeyKind::Ed25519, true),
        ("signers.reviewers", &reviewers, KeyKind::Ed25519, true),
        (
            "signers.witnesses",
            &witnesses,
            KeyKind::CosignatureV1,
            false,
        ),
    ] {
        if required && keys.is_empty() {
            return Err(input_error(
                source,
                field,
                "needs at least one verifier key",
            ));
        }
        if keys.len() > SIGNERS_MAX {
            return Err(input_error(
                source,
                field,
                format!("at most {SIGNERS_MAX} keys"),
            ));
        }
        for (i, key) in keys.iter().enumerate() {
            let parsed = VerifierKey::parse(key).map_err(|e| {
                input_error(
                    source,
                    &format!("{field}[{i}]"),
                    format!("not a verifier key: {e}"),
                )
            })?;
            if parsed.kind() != kind {
                return Err(input_error(
                    source,
                    &format!("{field}[{i}]"),
                    format!(
                        "must be {} key, got {} key",
                        crate::schema::strings::with_article(kind.label()),
                        crate::schema::strings::with_article(parsed.kind().label())
                    ),
                ));
            }
        }
    }
    if let Some(both) = operators.iter().find(|k| reviewers.contains(k)) {
        let name = both.split('+').next().unwrap_or("");
        return Err(refused(
            Rule::Trust3,
            source,
            "signers",
            format!(
                "key {name:?} is listed as operator and reviewer: the two sign-offs need two keys"
            ),
        ));
    }
    Ok(Signers {
        operators,
        reviewers,
        witnesses,
    })
}

/// An argv template: 1 to `ARGV_WORDS_MAX` words of at most
/// `ARGV_WORD_BYTES_MAX` bytes, known placeholders only, and `needs` among
/// them when given.
fn check_argv(words: &[String], source: &str, field: &str, needs: Option<&str>) -> Result<()> {
    if words.is_empty() || words.len() > ARGV_WORDS_MAX {
        return Err(input_error(
            source,
            field,
            format!("must have 1 to {ARGV_WORDS_MAX} words, got {}", words.len()),
        ));
    }
    let mut seen = Vec::new();
    for (i, word) in words.iter().enumerate() {
        if word.is_empty() || word.len() > ARGV_WORD_BYTES_MAX {
            return Err(input_error(
                source,
                &format!("{field}[{i}]"),
                format!("must be 1 to {ARGV_WORD_BYTES_MAX} bytes"),
            ));
        }
        let names =
            placeholders_of(word).map_err(|e| input_error(source, &format!("{field}[{i}]"), e))?;
        seen.extend(names);
    }
    if let Some(need) = needs {
        if !seen.contains(&need) {
            return Err(input_error(source, field, format!("must use {{{need}}}")));
        }
    }
    Ok(())
}
