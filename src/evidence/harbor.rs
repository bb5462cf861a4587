//! Harbor 0.25.0's on-disk results (`spec/harbor-formats.md` sections 3-4).
//!
//! - [`parse_trial_result`]: one `<trial>/result.json` (a full `TrialResult`
//!   dump) into a [`ParsedTrial`], which becomes a
//!   [`TrialResultRecorded`] once the caller binds the group and case.
//! - [`parse_job_result`]: a job-level `result.json` (`JobResult`).
//! - [`walk_jobs`]: a jobs directory or one job directory, listed
//!   deterministically: trial directories with their `result.json` (or
//!   reported incomplete, never invented) and the job-level files as
//!   artifacts (path, size, BLAKE3).
//!
//! A trial directory maps back to its case through the trial names of
//! `crate::schema::names`.

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::json::{canonical_json, found, load_object, raw_members, raw_values_at, Obj};
use super::{
    blake3_hex, check_timestamp, echo, is_lower_hex, FieldError, FieldResult, TimeForm,
    HARBOR_JOB_DIRS_MAX, HARBOR_RESULT_BYTES_MAX, HARBOR_REWARD_KEYS_MAX, HARBOR_TRIAL_DIRS_MAX,
    INGEST_FIELD_BYTES_MAX,
};
use crate::error::{Error, Result};
use crate::schema::events::{
    ArtifactRecorded, CaseRef, GroupRef, HarborJobRecorded, HarborTaskId, NumberText, RewardFile,
    TrialResultRecorded, TrialResultRecordedV2,
};
use crate::schema::names::{parse_trial_name, MappedCase};

/// The required fields of Harbor 0.25.0's `TrialResult`, in its model's
/// order (`required-fields.json`).
pub const TRIAL_RESULT_REQUIRED: [&str; 7] = [
    "task_name",
    "trial_name",
    "trial_uri",
    "task_id",
    "task_checksum",
    "config",
    "agent_info",
];

/// Artifact role of a job-level `result.json`.
pub const ROLE_JOB_RESULT: &str = "harbor_job_result";
/// Artifact role of a job-level `lock.json`.
pub const ROLE_JOB_LOCK: &str = "harbor_job_lock";
/// Artifact role of a job-level `config.json`.
pub const ROLE_JOB_CONFIG: &str = "harbor_job_config";
/// Artifact role of a trial's `result.json`.
pub const ROLE_TRIAL_RESULT: &str = "harbor_trial_result";
/// Artifact role of a trial's `config.json`.
pub const ROLE_TRIAL_CONFIG: &str = "harbor_trial_config";
/// Artifact role of a trial's `lock.json`.
pub const ROLE_TRIAL_LOCK: &str = "harbor_trial_lock";

/// Files whose presence marks a directory as one job directory.
const JOB_MARKER_FILES: [&str; 4] = ["config.json", "result.json", "lock.json", "job.log"];

const STREAM_CHUNK_BYTES: usize = 64 * 1024;

// ---------------------------------------------------------------------------
// Trial results
// ---------------------------------------------------------------------------

/// Everything a [`TrialResultRecorded`] carries except the group and case,
/// plus what the payload has no field for (`verifier_ran`, the agent's name
/// and version apart, the model provider, `trial_uri`). A field named like
/// a `result.json` key holds that key's value unless its doc says otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedTrial {
    /// `trial_name` (Harbor names the trial directory after it).
    pub trial_name: String,
    /// `id`: Harbor's uuid of this attempt (new on every retry).
    pub attempt_id: String,
    pub task_name: String,
    /// `task_id`, in whichever of the three union shapes it came.
    pub task_id: HarborTaskId,
    /// `source` (the dataset name), if any.
    pub source: Option<String>,
    /// `task_checksum`: 64 lowercase hex digits.
    pub task_checksum: String,
    pub trial_uri: String,
    /// `agent_info.name`.
    pub agent_name: String,
    /// `agent_info.version`.
    pub agent_version: String,
    /// `<agent_info.name>@<agent_info.version>` (`terminus-2@2.0.0`), the
    /// payload's `agent`.
    pub agent: String,
    /// `agent_info.model_info.name` (provider stripped by Harbor).
    pub model: Option<String>,
    /// `agent_info.model_info.provider`.
    pub model_provider: Option<String>,
    /// True when `verifier_result` is present and not null.
    pub verifier_ran: bool,
    /// `verifier_result.rewards`, each value's JSON text exactly as written
    /// (`1` or `1.0`; `null` for a non-finite reward Harbor dumped as null,
    /// which is no reward, BIND-2); `None` when the verifier never ran or
    /// wrote no rewards.
    pub rewards: Option<BTreeMap<String, NumberText>>,
    /// `exception_info.exception_type`.
    pub exception_type: Option<String>,
    /// BLAKE3 of `exception_info.exception_message` (UTF-8), hex.
    pub exception_message_blake3: Option<String>,
    /// `started_at` (UTC, `Z`).
    pub started_at: Option<String>,
    /// `finished_at` (UTC, `Z`).
    pub finished_at: Option<String>,
    /// `agent_result.n_input_tokens` (cache included).
    pub n_input_tokens: Option<u64>,
    /// `agent_result.n_cache_tokens`.
    pub n_cache_tokens: Option<u64>,
    /// `agent_result.n_output_tokens`.
    pub n_output_tokens: Option<u64>,
    /// BLAKE3 of [`canonical_json`] of the embedded `config`, hex.
    pub config_blake3: String,
    /// The embedded `config` (the TrialConfig Harbor ran).
    pub config: serde_json::Value,
    /// BLAKE3 of the embedded config's content
    /// ([`crate::schema::trial_content`], BIND-1), hex.
    pub config_content_blake3: String,
    /// The path given to the parser.
    pub result_path: String,
    /// BLAKE3 of the result file's bytes, hex.
    pub result_blake3: String,
}

impl ParsedTrial {
    /// The `trial_result_recorded.v2` payload, with the group and case the
    /// caller bound it to, the field paths where the embedded config's
    /// content differs from the case's launched config, and the verifier's
    /// reward files ([`read_reward_files`]).
    pub fn into_event_v2(
        self,
        group: GroupRef,
        case: CaseRef,
        config_differences: Vec<String>,
        reward_files: Vec<RewardFile>,
    ) -> TrialResultRecordedV2 {
        TrialResultRecordedV2 {
            group,
            case,
            trial_name: self.trial_name,
            attempt_id: self.attempt_id,
            task_name: self.task_name,
            task_id: self.task_id,
            source: self.source,
            task_checksum: self.task_checksum,
            agent: self.agent,
            model: self.model,
            rewards: self.rewards,
            exception_type: self.exception_type,
            exception_message_blake3: self.exception_message_blake3,
            started_at: self.started_at,
            finished_at: self.finished_at,
            n_input_tokens: self.n_input_tokens,
            n_cache_tokens: self.n_cache_tokens,
            n_output_tokens: self.n_output_tokens,
            config_blake3: self.config_blake3,
            config_content_blake3: self.config_content_blake3,
            config_differences,
            reward_files,
            result_path: self.result_path,
            result_blake3: self.result_blake3,
        }
    }

    /// The `trial_result_recorded.v1` payload (what ingest recorded before
    /// v2), with the group and case the caller bound it to.
    pub fn into_event(self, group: GroupRef, case: CaseRef) -> TrialResultRecorded {
        TrialResultRecorded {
            group,
            case,
            trial_name: self.trial_name,
            attempt_id: self.attempt_id,
            task_name: self.task_name,
            task_id: self.task_id,
            source: self.source,
            task_checksum: self.task_checksum,
            agent: self.agent,
            model: self.model,
            rewards: self.rewards,
            exception_type: self.exception_type,
            exception_message_blake3: self.exception_message_blake3,
            started_at: self.started_at,
            finished_at: self.finished_at,
            n_input_tokens: self.n_input_tokens,
            n_cache_tokens: self.n_cache_tokens,
            n_output_tokens: self.n_output_tokens,
            config_blake3: self.config_blake3,
            result_path: self.result_path,
            result_blake3: self.result_blake3,
        }
    }
}

/// Parses a Harbor 0.25.0 trial `result.json` (at most
/// [`HARBOR_RESULT_BYTES_MAX`] bytes). Errors read
/// `<path>: field <field>: <problem>`.
///
/// Required: the seven fields of [`TRIAL_RESULT_REQUIRED`] and `id` (Harbor
/// always dumps it; it is a uuid). `task_id` must be exactly one of the
/// union's shapes: git `{git_url, git_commit_id?, path}`, package
/// `{org, name, ref?}`, local `{path}`; mixed shapes are refused.
/// `task_checksum` is 64 lowercase hex digits; `agent_info.name` must not
/// contain `@` (it joins name and version in `agent`).
///
/// Checked when present: rewards are JSON numbers (at most
/// [`HARBOR_REWARD_KEYS_MAX`] keys), `exception_info` has all four fields,
/// trial timestamps are UTC with `Z`, token counts are non-negative
/// integers. `config_blake3` is the BLAKE3 of [`canonical_json`] of the
/// embedded `config` (keys sorted recursively, no whitespace, numbers as
/// written).
pub fn parse_trial_result(bytes: &[u8], path: &str) -> Result<ParsedTrial> {
    if bytes.len() > HARBOR_RESULT_BYTES_MAX {
        return Err(FieldError::line(format!(
            "file is {} bytes, longer than the limit of {HARBOR_RESULT_BYTES_MAX} bytes",
            bytes.len()
        ))
        .in_document(path));
    }
    trial(bytes, path).map_err(|e| e.in_document(path))
}

fn trial(bytes: &[u8], path: &str) -> FieldResult<ParsedTrial> {
    let loaded = load_object(bytes, &[])?;
    let o = Obj::root(&loaded.map);
    check_a_trial_dump(&o)?;
    let attempt_id = o.id("id")?;
    if !is_uuid(attempt_id) {
        return Err(FieldError::new(
            "id",
            format!("expected a lowercase uuid, found {}", echo(attempt_id)),
        ));
    }
    let task_name = o.id("task_name")?;
    let trial_name = o.id("trial_name")?;
    let trial_uri = o.id("trial_uri")?;
    let task_id = task_id(&o)?;
    let source = o.id_opt("source")?;
    let task_checksum = o.id("task_checksum")?;
    if !is_lower_hex(task_checksum, 64) {
        return Err(FieldError::new(
            "task_checksum",
            format!(
                "expected 64 lowercase hex digits (a sha256 dirhash), found {}",
                echo(task_checksum)
            ),
        ));
    }
    o.obj("config")?;
    let config = o
        .get("config")
        .filter(|c| c.is_object())
        .cloned()
        .ok_or_else(|| FieldError::new("config", "expected an object"))?;
    let agent = agent_fields(&o)?;
    let raw = raw_values_at(loaded.text, &[&["config"], &["verifier_result", "rewards"]])?;
    let config_text = raw
        .first()
        .copied()
        .flatten()
        .ok_or_else(|| FieldError::new("config", "missing"))?;
    let config_blake3 = blake3_hex(canonical_json(config_text)?.as_bytes());
    let verifier = verifier_fields(&o, raw.get(1).copied().flatten())?;
    let exception = exception_fields(&o)?;
    let [started_at, finished_at] = trial_times(&o)?;
    let tokens = token_counts(&o)?;
    Ok(ParsedTrial {
        trial_name: trial_name.to_string(),
        attempt_id: attempt_id.to_string(),
        task_name: task_name.to_string(),
        task_id,
        source: source.map(str::to_string),
        task_checksum: task_checksum.to_string(),
        trial_uri: trial_uri.to_string(),
        agent: format!("{}@{}", agent.name, agent.version),
        agent_name: agent.name.to_string(),
        agent_version: agent.version.to_string(),
        model: agent.model.map(str::to_string),
        model_provider: agent.model_provider.map(str::to_string),
        verifier_ran: verifier.ran,
        rewards: verifier.rewards,
        exception_type: exception.exception_type,
        exception_message_blake3: exception.message_blake3,
        started_at,
        finished_at,
        n_input_tokens: tokens.input,
        n_cache_tokens: tokens.cache,
        n_output_tokens: tokens.output,
        config_blake3,
        config_content_blake3: crate::schema::trial_content::content_blake3(&config),
        config,
        result_path: path.to_string(),
        result_blake3: blake3_hex(bytes),
    })
}

/// Refuses a document missing three or more of the fields every Harbor
/// 0.25.0 trial dump has (a partial result, not a trial result); fewer
/// missing fields are named one at a time by the field reads.
fn check_a_trial_dump(o: &Obj<'_>) -> FieldResult<()> {
    let missing: Vec<&str> = TRIAL_RESULT_REQUIRED
        .iter()
        .copied()
        .filter(|k| o.present(k).is_none())
        .collect();
    if let (Some(first), true) = (missing.first(), missing.len() >= 3) {
        return Err(FieldError::new(
            *first,
            format!(
                "missing; not a harbor 0.25.0 trial result dump, which always has {}: {} of \
                 them are missing ({}), as in the partial results bitrouter's old \
                 harbor-outcomes read",
                TRIAL_RESULT_REQUIRED.join(", "),
                missing.len(),
                missing.join(", ")
            ),
        ));
    }
    Ok(())
}

/// `agent_info` of a trial result.
struct AgentFields<'a> {
    name: &'a str,
    version: &'a str,
    model: Option<&'a str>,
    model_provider: Option<&'a str>,
}

fn agent_fields<'a>(o: &Obj<'a>) -> FieldResult<AgentFields<'a>> {
    let agent_info = o.obj("agent_info")?;
    let name = agent_info.id("name")?;
    if name.contains('@') {
        return Err(FieldError::new(
            "agent_info.name",
            format!(
                "{} contains @, which joins agent name and version in the ledger",
                echo(name)
            ),
        ));
    }
    let version = agent_info.id("version")?;
    let (model, model_provider) = match agent_info.obj_opt("model_info")? {
        None => (None, None),
        Some(mi) => (Some(mi.id("name")?), mi.id_opt("provider")?),
    };
    Ok(AgentFields {
        name,
        version,
        model,
        model_provider,
    })
}

/// `verifier_result` of a trial result: whether it ran, and its rewards.
struct VerifierFields {
    ran: bool,
    rewards: Option<BTreeMap<String, NumberText>>,
}

/// `rewards_text` is the raw text of `verifier_result.rewards`, if present.
fn verifier_fields(o: &Obj<'_>, rewards_text: Option<&str>) -> FieldResult<VerifierFields> {
    let (ran, rewards) = match o.obj_opt("verifier_result")? {
        None => (false, None),
        Some(vr) => match vr.obj_opt("rewards")? {
            None => (true, None),
            Some(rw) => {
                let text = rewards_text
                    .ok_or_else(|| FieldError::new("verifier_result.rewards", "missing"))?;
                (true, Some(rewards(&rw, text)?))
            }
        },
    };
    Ok(VerifierFields { ran, rewards })
}

/// `exception_info` of a trial result: its type and the BLAKE3 of its
/// message (the message and traceback are checked, never copied).
struct ExceptionFields {
    exception_type: Option<String>,
    message_blake3: Option<String>,
}

fn exception_fields(o: &Obj<'_>) -> FieldResult<ExceptionFields> {
    let Some(ex) = o.obj_opt("exception_info")? else {
        return Ok(ExceptionFields {
            exception_type: None,
            message_blake3: None,
        });
    };
    let kind = ex.id("exception_type")?;
    let message = ex.long_text("exception_message")?;
    ex.long_text("exception_traceback")?;
    let at = ex.id("occurred_at")?;
    check_timestamp(at, TimeForm::UtcZ)
        .map_err(|p| FieldError::new("exception_info.occurred_at", p))?;
    Ok(ExceptionFields {
        exception_type: Some(kind.to_string()),
        message_blake3: Some(blake3_hex(message.as_bytes())),
    })
}

/// `started_at` and `finished_at`, each UTC with `Z` when present.
fn trial_times(o: &Obj<'_>) -> FieldResult<[Option<String>; 2]> {
    let mut times: [Option<String>; 2] = [None, None];
    for (slot, key) in times.iter_mut().zip(["started_at", "finished_at"]) {
        if let Some(t) = o.id_opt(key)? {
            check_timestamp(t, TimeForm::UtcZ).map_err(|p| FieldError::new(key, p))?;
            *slot = Some(t.to_string());
        }
    }
    Ok(times)
}

/// The token counts of `agent_result`, when present.
struct TokenCounts {
    input: Option<u64>,
    cache: Option<u64>,
    output: Option<u64>,
}

fn token_counts(o: &Obj<'_>) -> FieldResult<TokenCounts> {
    Ok(match o.obj_opt("agent_result")? {
        None => TokenCounts {
            input: None,
            cache: None,
            output: None,
        },
        Some(ar) => TokenCounts {
            input: ar.u64_opt("n_input_tokens")?,
            cache: ar.u64_opt("n_cache_tokens")?,
            output: ar.u64_opt("n_output_tokens")?,
        },
    })
}

/// The rewards object: every value a JSON scalar, kept as written. A number
/// is a reward; `null` (a non-finite reward, as Harbor's model dumps it), a
/// string or a boolean is kept as evidence and is no reward (BIND-2).
fn rewards(rw: &Obj<'_>, raw_text: &str) -> FieldResult<BTreeMap<String, NumberText>> {
    let members = raw_members(raw_text)?;
    if members.len() > HARBOR_REWARD_KEYS_MAX {
        return Err(FieldError::new(
            "verifier_result.rewards",
            format!(
                "{} keys, more than the limit of {HARBOR_REWARD_KEYS_MAX}",
                members.len()
            ),
        ));
    }
    let mut out = BTreeMap::new();
    for (key, raw) in members {
        let field = rw.path(&super::path_key(&key));
        if key.len() > INGEST_FIELD_BYTES_MAX || raw.len() > INGEST_FIELD_BYTES_MAX {
            return Err(FieldError::new(
                field,
                format!("longer than the limit of {INGEST_FIELD_BYTES_MAX} bytes"),
            ));
        }
        match rw.get(&key) {
            Some(
                serde_json::Value::Number(_)
                | serde_json::Value::Null
                | serde_json::Value::Bool(_)
                | serde_json::Value::String(_),
            ) => {
                out.insert(key, raw.to_string());
            }
            Some(other) => {
                return Err(FieldError::new(
                    field,
                    format!("expected a json number, {}", found(other)),
                ))
            }
            None => return Err(FieldError::new(field, "missing")),
        }
    }
    Ok(out)
}

/// `task_id` in exactly one of its three shapes.
fn task_id(o: &Obj<'_>) -> FieldResult<HarborTaskId> {
    let t = o.obj("task_id")?;
    let git = t.present("git_url").is_some();
    let package = t.present("org").is_some() || t.present("name").is_some();
    let empty = HarborTaskId {
        git_url: None,
        git_commit_id: None,
        path: None,
        org: None,
        name: None,
        git_ref: None,
    };
    let own = |s: Option<&str>| s.map(str::to_string);
    match (git, package) {
        (true, true) => Err(FieldError::new(
            "task_id",
            "mixes the git shape (git_url) with the package shape (org, name)",
        )),
        (true, false) => Ok(HarborTaskId {
            git_url: Some(t.id("git_url")?.to_string()),
            git_commit_id: own(t.id_opt("git_commit_id")?),
            path: Some(t.id("path")?.to_string()),
            ..empty
        }),
        (false, true) => {
            if t.present("path").is_some() {
                return Err(FieldError::new(
                    "task_id",
                    "mixes the package shape (org, name) with a path",
                ));
            }
            Ok(HarborTaskId {
                org: Some(t.id("org")?.to_string()),
                name: Some(t.id("name")?.to_string()),
                git_ref: own(t.id_opt("ref")?),
                ..empty
            })
        }
        (false, false) => {
            if t.present("path").is_none() {
                return Err(FieldError::new(
                    "task_id",
                    "matches none of harbor's shapes: git {git_url, git_commit_id?, path}, \
                     package {org, name, ref?}, local {path}",
                ));
            }
            Ok(HarborTaskId {
                path: Some(t.id("path")?.to_string()),
                ..empty
            })
        }
    }
}

/// A lowercase 8-4-4-4-12 hex uuid.
fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.bytes().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_digit() || (b'a'..=b'f').contains(&b),
        })
}

// ---------------------------------------------------------------------------
// Job results
// ---------------------------------------------------------------------------

/// What a job-level `result.json` (`JobResult`, without trial results) says;
/// a field named like a key holds that key's value unless its doc says
/// otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedJobResult {
    /// `id`: the job uuid (reused on resume).
    pub job_id: String,
    /// `started_at`: local time without offset.
    pub started_at: String,
    /// `finished_at`: null until the job is done.
    pub finished_at: Option<String>,
    pub n_total_trials: u64,
    /// `stats.n_completed_trials`.
    pub n_completed_trials: Option<u64>,
    /// `stats.n_errored_trials`.
    pub n_errored_trials: Option<u64>,
    /// `stats.n_retries`: Harbor retries, which must stay 0 (rule CASE-5).
    pub n_retries: Option<u64>,
    /// BLAKE3 of the file's bytes, hex.
    pub result_blake3: String,
}

/// Parses a Harbor 0.25.0 job-level `result.json` (at most
/// [`HARBOR_RESULT_BYTES_MAX`] bytes). Required: `id`, `started_at`,
/// `n_total_trials`, `stats`; job timestamps are local times without an
/// offset.
pub fn parse_job_result(bytes: &[u8], path: &str) -> Result<ParsedJobResult> {
    if bytes.len() > HARBOR_RESULT_BYTES_MAX {
        return Err(FieldError::line(format!(
            "file is {} bytes, longer than the limit of {HARBOR_RESULT_BYTES_MAX} bytes",
            bytes.len()
        ))
        .in_document(path));
    }
    job(bytes).map_err(|e| e.in_document(path))
}

fn job(bytes: &[u8]) -> FieldResult<ParsedJobResult> {
    let loaded = load_object(bytes, &[])?;
    let o = Obj::root(&loaded.map);
    if o.has("trial_name") {
        return Err(FieldError::line(
            "this is a trial result (it has trial_name), not a job result",
        ));
    }
    let job_id = o.id("id")?;
    let started_at = o.id("started_at")?;
    check_timestamp(started_at, TimeForm::Naive).map_err(|p| FieldError::new("started_at", p))?;
    for key in ["updated_at", "finished_at"] {
        if let Some(t) = o.id_opt(key)? {
            check_timestamp(t, TimeForm::Naive).map_err(|p| FieldError::new(key, p))?;
        }
    }
    let n_total_trials = o.u64("n_total_trials")?;
    let stats = o.obj("stats")?;
    for key in ["n_running_trials", "n_pending_trials", "n_cancelled_trials"] {
        stats.u64_opt(key)?;
    }
    Ok(ParsedJobResult {
        job_id: job_id.to_string(),
        started_at: started_at.to_string(),
        finished_at: o.id_opt("finished_at")?.map(str::to_string),
        n_total_trials,
        n_completed_trials: stats.u64_opt("n_completed_trials")?,
        n_errored_trials: stats.u64_opt("n_errored_trials")?,
        n_retries: stats.u64_opt("n_retries")?,
        result_blake3: blake3_hex(bytes),
    })
}

// ---------------------------------------------------------------------------
// Job trees
// ---------------------------------------------------------------------------

/// A file kept as evidence: its role, path, size and BLAKE3.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileArtifact {
    /// What it is ([`ROLE_JOB_RESULT`], [`ROLE_TRIAL_RESULT`], ...).
    pub role: &'static str,
    /// Its path, as the walk reached it.
    pub path: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// BLAKE3 of its bytes, hex.
    pub blake3: String,
}

impl FileArtifact {
    /// The payload recording this file.
    pub fn to_event(&self, group: Option<GroupRef>) -> ArtifactRecorded {
        ArtifactRecorded {
            group,
            role: self.role.to_string(),
            path: self.path.clone(),
            bytes: self.bytes,
            blake3: self.blake3.clone(),
        }
    }
}

/// One trial directory of a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrialDir {
    /// The directory name (Harbor's trial name).
    pub name: String,
    pub path: String,
    /// Its `result.json`; `None` means the trial is incomplete (Harbor
    /// writes the file only when a trial ends).
    pub result: Option<FileArtifact>,
    /// Its `config.json` (sparse TrialConfig), if present.
    pub config: Option<FileArtifact>,
    /// Its `lock.json` (TrialLock), if present.
    pub lock: Option<FileArtifact>,
    /// The benchledger case its name maps to; `None` for names outside the
    /// scheme, such as Harbor's default `<task>__<7 chars>` (unmapped).
    pub case: Option<MappedCase>,
}

impl TrialDir {
    /// True when the trial has no `result.json` yet (or never will).
    pub fn is_incomplete(&self) -> bool {
        self.result.is_none()
    }
}

/// One job directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HarborJob {
    /// The directory name (Harbor's job name).
    pub name: String,
    pub path: String,
    /// Job-level `result.json`, `lock.json` and `config.json` that exist, in
    /// that order.
    pub artifacts: Vec<FileArtifact>,
    /// Trial directories, sorted by name.
    pub trials: Vec<TrialDir>,
}

/// What [`walk_jobs`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HarborTree {
    /// The directory walked, as given.
    pub root: String,
    /// What it is (BIND-9).
    pub level: Level,
    /// Job directories, sorted by name (one when the root is a job directory).
    pub jobs: Vec<HarborJob>,
    /// Paths of files directly in a jobs directory, which hold no evidence
    /// and are listed rather than skipped silently.
    pub ignored: Vec<String>,
}

impl HarborTree {
    /// Every trial directory, in job then name order.
    pub fn trials(&self) -> impl Iterator<Item = &TrialDir> {
        self.jobs.iter().flat_map(|j| j.trials.iter())
    }

    /// Trial directories without `result.json`.
    pub fn incomplete(&self) -> Vec<&TrialDir> {
        self.trials().filter(|t| t.is_incomplete()).collect()
    }

    /// Trial directories whose names do not follow benchledger's scheme.
    pub fn unmapped(&self) -> Vec<&TrialDir> {
        self.trials().filter(|t| t.case.is_none()).collect()
    }
}

/// Lists a Harbor jobs directory (holding job directories) or one job
/// directory. A directory is one job when it directly holds `config.json`,
/// `result.json`, `lock.json` or `job.log`; otherwise every subdirectory is a
/// job. In a job, every subdirectory is a trial directory; its
/// `result.json`, `config.json` and `lock.json` are hashed when present, and
/// a trial without `result.json` is reported incomplete. Job-level
/// `result.json`, `lock.json` and `config.json` are artifacts; other job
/// files (`job.log`) are not evidence and are not listed.
///
/// Bounded: at most [`HARBOR_JOB_DIRS_MAX`] jobs and
/// [`HARBOR_TRIAL_DIRS_MAX`] trials over the walk; a trial `result.json`
/// larger than [`HARBOR_RESULT_BYTES_MAX`] is refused. Deterministic: every
/// listing is sorted by name. Refused: a missing root, non-UTF-8 names,
/// symbolic links inside the tree, a `result.json` that is not a file.
pub fn walk_jobs(dir: &Path) -> Result<HarborTree> {
    let root = utf8_path(dir)?;
    match fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(Error::input(format!("{root}: not a directory"))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::input(format!("{root}: no such directory")))
        }
        Err(e) => return Err(Error::io(format!("read {root}"), e)),
    }
    let mut trial_budget = HARBOR_TRIAL_DIRS_MAX;
    let mut jobs = Vec::new();
    let mut ignored = Vec::new();
    let level = level_of(dir)?;
    match level {
        Level::TrialDir => jobs.push(trial_alone(dir)?),
        Level::JobDir => jobs.push(walk_job(dir, &mut trial_budget)?),
        Level::JobsRoot | Level::Empty | Level::Unknown => {
            let over = || {
                Error::input(format!(
                    "{root}: more than {HARBOR_JOB_DIRS_MAX} job directories"
                ))
            };
            for entry in sorted_entries(dir, HARBOR_JOB_DIRS_MAX, &over)? {
                match entry.kind {
                    Kind::Dir if is_job_dir(&entry.path)? => {
                        jobs.push(walk_job(&entry.path, &mut trial_budget)?)
                    }
                    _ => ignored.push(utf8_path(&entry.path)?),
                }
            }
        }
    }
    Ok(HarborTree {
        root,
        level,
        jobs,
        ignored,
    })
}

/// A trial directory given alone: one job (its parent directory, whose own
/// files are not read) with that one trial.
fn trial_alone(dir: &Path) -> Result<HarborJob> {
    let parent = dir.parent().unwrap_or(dir);
    let path = utf8_path(parent)?;
    let name = parent
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(path.as_str())
        .to_string();
    let entry = Entry {
        name: dir
            .file_name()
            .and_then(|n| n.to_str())
            .map(str::to_string)
            .ok_or_else(|| Error::input(format!("{}: no directory name", dir.display())))?,
        path: dir.to_path_buf(),
        kind: Kind::Dir,
    };
    Ok(HarborJob {
        name,
        path,
        artifacts: Vec::new(),
        trials: vec![walk_trial(&entry)?],
    })
}

/// Reads and parses a listed trial's `result.json`, and checks that it is
/// the file the walk hashed and that its `trial_name` is the directory's
/// name.
pub fn read_trial_result(trial: &TrialDir) -> Result<ParsedTrial> {
    let Some(result) = &trial.result else {
        return Err(Error::input(format!(
            "{}: trial {} has no result.json (incomplete)",
            trial.path,
            echo(&trial.name)
        )));
    };
    let bytes = read_bounded(Path::new(&result.path), HARBOR_RESULT_BYTES_MAX)?;
    let parsed = parse_trial_result(&bytes, &result.path)?;
    if parsed.result_blake3 != result.blake3 {
        return Err(Error::input(format!(
            "{}: changed since it was listed (blake3 {} then, {} now)",
            result.path, result.blake3, parsed.result_blake3
        )));
    }
    if parsed.trial_name != trial.name {
        return Err(FieldError::new(
            "trial_name",
            format!(
                "{} differs from its directory name {}; harbor names the directory after the trial",
                echo(&parsed.trial_name),
                echo(&trial.name)
            ),
        )
        .in_document(&result.path));
    }
    Ok(parsed)
}

pub use crate::limits::HARBOR_REWARD_FILE_BYTES_MAX;

/// The reward files of a trial's `verifier/` directory, in name order
/// (BIND-2): each file's path, BLAKE3 and rewards as Harbor's verifier reads
/// them (`reward.txt`: its trimmed text under `reward`; `reward.json`: each
/// member's JSON text), or why it gives none.
pub fn read_reward_files(trial: &TrialDir) -> Result<Vec<RewardFile>> {
    let mut out = Vec::new();
    for name in ["reward.json", "reward.txt"] {
        let path = Path::new(&trial.path).join("verifier").join(name);
        match fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_file() => {}
            Ok(m) => return Err(not_regular(&path, &m)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::io(format!("read {}", path.display()), e)),
        }
        let shown = utf8_path(&path)?;
        let bytes = read_bounded(&path, HARBOR_REWARD_FILE_BYTES_MAX)?;
        let (rewards, problem) = match reward_file_values(name, &bytes) {
            Ok(m) => (Some(m), None),
            Err(why) => (None, Some(why)),
        };
        out.push(RewardFile {
            path: shown,
            blake3: blake3_hex(&bytes),
            rewards,
            problem,
        });
    }
    Ok(out)
}

/// The rewards a reward file gives, each value's JSON text (a text file's
/// whole trimmed content under `reward`), or why it gives none.
fn reward_file_values(
    name: &str,
    bytes: &[u8],
) -> std::result::Result<BTreeMap<String, String>, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "not utf-8".to_string())?;
    if name == "reward.txt" {
        let t = text.trim();
        if t.is_empty() {
            return Err("empty".into());
        }
        if t.len() > INGEST_FIELD_BYTES_MAX {
            return Err(format!("longer than {INGEST_FIELD_BYTES_MAX} bytes"));
        }
        return Ok(BTreeMap::from([("reward".to_string(), t.to_string())]));
    }
    let loaded = load_object(bytes, &[]).map_err(|e| e.to_string())?;
    let members = raw_members(loaded.text).map_err(|e| e.to_string())?;
    if members.len() > HARBOR_REWARD_KEYS_MAX {
        return Err(format!("more than {HARBOR_REWARD_KEYS_MAX} keys"));
    }
    let mut out = BTreeMap::new();
    for (k, raw) in members {
        if k.len() > INGEST_FIELD_BYTES_MAX || raw.len() > INGEST_FIELD_BYTES_MAX {
            return Err(format!(
                "a member longer than {INGEST_FIELD_BYTES_MAX} bytes"
            ));
        }
        out.insert(k, raw.to_string());
    }
    Ok(out)
}

/// What a job directory's own files say about how its trials ran (BIND-1,
/// CASE-5, BIND-7): `harbor_job_recorded.v1` without the group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobFacts {
    pub job_name: String,
    pub path: String,
    /// Its trial directories, by name.
    pub trial_names: Vec<String>,
    /// BLAKE3 of `config.json`, if present.
    pub config_blake3: Option<String>,
    /// `retry.max_retries` of `config.json` (0 when left out as a default).
    pub config_max_retries: Option<u64>,
    /// BLAKE3 of `lock.json`, if present.
    pub lock_blake3: Option<String>,
    /// `retry.max_retries` of `lock.json`.
    pub lock_max_retries: Option<u64>,
    /// `harbor.version` of `lock.json`.
    pub harbor_version: Option<String>,
    /// BLAKE3 of `result.json`, if present.
    pub result_blake3: Option<String>,
    /// `stats.n_retries` of `result.json`.
    pub n_retries: Option<u64>,
}

impl JobFacts {
    /// The payload, with the group it was ingested into.
    pub fn to_event(&self, group: GroupRef) -> HarborJobRecorded {
        HarborJobRecorded {
            group,
            job_name: self.job_name.clone(),
            path: self.path.clone(),
            trial_names: self.trial_names.clone(),
            config_blake3: self.config_blake3.clone(),
            config_max_retries: self.config_max_retries,
            lock_blake3: self.lock_blake3.clone(),
            lock_max_retries: self.lock_max_retries,
            harbor_version: self.harbor_version.clone(),
            result_blake3: self.result_blake3.clone(),
            n_retries: self.n_retries,
        }
    }
}

/// `retry.max_retries` of a job `config.json` or `lock.json` document;
/// `absent_is_zero` for the sparse config (Harbor leaves defaults out).
fn max_retries(o: &Obj<'_>, absent_is_zero: bool) -> FieldResult<Option<u64>> {
    match o.obj_opt("retry")? {
        Some(r) => Ok(Some(r.u64_opt("max_retries")?.unwrap_or(0))),
        None => Ok(absent_is_zero.then_some(0)),
    }
}

/// The facts of a listed job's own files; `None` when it has none (a job
/// directory that `harbor trial start` filled: no job, no retries).
pub fn job_facts(job: &HarborJob) -> Result<Option<JobFacts>> {
    if job.artifacts.is_empty() {
        return Ok(None);
    }
    let mut f = JobFacts {
        job_name: job.name.clone(),
        path: job.path.clone(),
        trial_names: job.trials.iter().map(|t| t.name.clone()).collect(),
        config_blake3: None,
        config_max_retries: None,
        lock_blake3: None,
        lock_max_retries: None,
        harbor_version: None,
        result_blake3: None,
        n_retries: None,
    };
    for art in &job.artifacts {
        let bytes = read_bounded(Path::new(&art.path), HARBOR_RESULT_BYTES_MAX)?;
        if blake3_hex(&bytes) != art.blake3 {
            return Err(Error::input(format!(
                "{}: changed since it was listed",
                art.path
            )));
        }
        match art.role {
            ROLE_JOB_RESULT => {
                f.n_retries = parse_job_result(&bytes, &art.path)?.n_retries;
                f.result_blake3 = Some(art.blake3.clone());
            }
            ROLE_JOB_CONFIG | ROLE_JOB_LOCK => {
                let loaded = load_object(&bytes, &[]).map_err(|e| e.in_document(&art.path))?;
                let o = Obj::root(&loaded.map);
                let config = art.role == ROLE_JOB_CONFIG;
                let retries = max_retries(&o, config).map_err(|e| e.in_document(&art.path))?;
                if config {
                    f.config_max_retries = retries;
                    f.config_blake3 = Some(art.blake3.clone());
                } else {
                    f.lock_max_retries = retries;
                    f.lock_blake3 = Some(art.blake3.clone());
                    f.harbor_version =
                        match o.obj_opt("harbor").map_err(|e| e.in_document(&art.path))? {
                            Some(h) => h
                                .id_opt("version")
                                .map_err(|e| e.in_document(&art.path))?
                                .map(str::to_string),
                            None => None,
                        };
                }
            }
            _ => {}
        }
    }
    Ok(Some(f))
}

crate::schema::named::named_enum! {
    /// What a directory given to `ingest harbor` or `resume` is (BIND-9).
    pub enum Level {
        /// A trial directory: Harbor's files of one trial (`result.json`
        /// with a `trial_name`, `trial.log`, `agent/`, `verifier/`), or a
        /// directory named with a benchledger trial name.
        TrialDir = "trial directory",
        /// A job directory: trial directories, and the job's own files.
        JobDir = "job directory",
        /// A jobs directory: job directories.
        JobsRoot = "jobs directory",
        /// An empty directory.
        Empty = "empty directory",
        /// None of those within two levels.
        Unknown = "directory holding no harbor trial",
    }
}

/// Whether `dir` is one trial's directory: its `result.json` names a
/// trial; or it holds a trial's files (`trial.log`, `agent/`, `verifier/`,
/// `exception.txt`) and no `job.log`; or it is a childless directory named
/// with a benchledger trial name (a trial that has not written anything).
fn is_trial_dir(dir: &Path) -> Result<bool> {
    let result = dir.join("result.json");
    if fs::metadata(&result).is_ok_and(|m| m.is_file()) {
        let bytes = read_bounded(&result, HARBOR_RESULT_BYTES_MAX)?;
        // A result.json that does not parse (a BOM, duplicate keys, deep
        // nesting) is named as such, never taken for a missing result.
        let loaded = load_object(&bytes, &[]).map_err(|e| {
            Error::input(format!(
                "{}: not a result.json Harbor writes: {e}",
                result.display()
            ))
        })?;
        if loaded.map.contains_key("trial_name") {
            return Ok(true);
        }
        if loaded.map.contains_key("n_total_trials") {
            return Ok(false);
        }
    }
    if fs::symlink_metadata(dir.join("job.log")).is_ok() {
        return Ok(false);
    }
    for marker in ["trial.log", "agent", "verifier", "exception.txt"] {
        if fs::symlink_metadata(dir.join(marker)).is_ok() {
            return Ok(true);
        }
    }
    let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
    Ok(parse_trial_name(name).is_some() && subdirs(dir)?.is_empty())
}

/// The subdirectories of `dir`, sorted, bounded by the job limit.
fn subdirs(dir: &Path) -> Result<Vec<PathBuf>> {
    let over = || {
        Error::input(format!(
            "{}: more than {HARBOR_TRIAL_DIRS_MAX} directories",
            dir.display()
        ))
    };
    Ok(sorted_entries(dir, HARBOR_TRIAL_DIRS_MAX, &over)?
        .into_iter()
        .filter(|e| e.kind == Kind::Dir)
        .map(|e| e.path)
        .collect())
}

/// Whether `dir` is a job directory: a job's own files, or a trial
/// directory inside.
fn is_job_dir(dir: &Path) -> Result<bool> {
    if has_job_files(dir)? && !is_trial_dir(dir)? {
        return Ok(true);
    }
    for sub in subdirs(dir)? {
        if is_trial_dir(&sub)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// What `dir` is (BIND-9): a trial directory, a job directory, a jobs
/// directory, an empty directory, or none of those within two levels.
pub fn level_of(dir: &Path) -> Result<Level> {
    let shown = utf8_path(dir)?;
    match fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(Error::input(format!("{shown}: not a directory"))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::input(format!("{shown}: no such directory")))
        }
        Err(e) => return Err(Error::io(format!("read {shown}"), e)),
    }
    if is_trial_dir(dir)? {
        return Ok(Level::TrialDir);
    }
    if is_job_dir(dir)? {
        return Ok(Level::JobDir);
    }
    let subs = subdirs(dir)?;
    for sub in &subs {
        if is_job_dir(sub)? {
            return Ok(Level::JobsRoot);
        }
    }
    let empty = fs::read_dir(dir)
        .map_err(|e| Error::io(format!("read {shown}"), e))?
        .next()
        .is_none();
    Ok(if empty { Level::Empty } else { Level::Unknown })
}

/// The jobs directory one level below `dir`, when `dir` is one level too
/// high (BIND-9 names it in the refusal).
pub fn jobs_root_below(dir: &Path) -> Result<Option<String>> {
    for sub in subdirs(dir)? {
        if level_of(&sub)? == Level::JobsRoot {
            return Ok(Some(utf8_path(&sub)?));
        }
    }
    Ok(None)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Dir,
    File,
}

struct Entry {
    name: String,
    path: PathBuf,
    kind: Kind,
}

/// The refusal of a path in a harbor tree that is not a regular file,
/// saying what it is (a symbolic link, a directory, ...).
fn not_regular(p: &Path, m: &fs::Metadata) -> Error {
    let t = m.file_type();
    let what = if t.is_symlink() {
        "a symbolic link (a harbor tree is read only through real files and directories)"
    } else if t.is_dir() {
        "a directory"
    } else {
        "a FIFO, device or socket"
    };
    Error::input(format!(
        "{}: not a regular file: {what}",
        p.to_string_lossy()
    ))
}

fn utf8_path(p: &Path) -> Result<String> {
    p.to_str()
        .map(str::to_string)
        .ok_or_else(|| Error::input(format!("{}: path is not utf-8", p.to_string_lossy())))
}

/// The entries of `dir`, sorted by name; more than `max_dirs` directories
/// give the error `over()`.
fn sorted_entries(dir: &Path, max_dirs: usize, over: &dyn Fn() -> Error) -> Result<Vec<Entry>> {
    let shown = utf8_path(dir)?;
    let rd = fs::read_dir(dir).map_err(|e| Error::io(format!("read {shown}"), e))?;
    let mut out = Vec::new();
    let mut dirs = 0usize;
    for entry in rd {
        let entry = entry.map_err(|e| Error::io(format!("read {shown}"), e))?;
        let path = entry.path();
        let name = entry
            .file_name()
            .to_str()
            .map(str::to_string)
            .ok_or_else(|| {
                Error::input(format!(
                    "{shown}: entry {} has a name that is not utf-8",
                    entry.file_name().to_string_lossy()
                ))
            })?;
        let ft = entry
            .file_type()
            .map_err(|e| Error::io(format!("read {}", path.display()), e))?;
        let kind = if ft.is_symlink() {
            return Err(Error::input(format!(
                "{shown}/{name}: is a symbolic link; a harbor tree is read only through real \
                 files and directories"
            )));
        } else if ft.is_dir() {
            dirs += 1;
            if dirs > max_dirs {
                return Err(over());
            }
            Kind::Dir
        } else {
            Kind::File
        };
        out.push(Entry { name, path, kind });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Whether `dir` directly holds one of a job's own files.
fn has_job_files(dir: &Path) -> Result<bool> {
    for name in JOB_MARKER_FILES {
        match fs::symlink_metadata(dir.join(name)) {
            Ok(_) => return Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(format!("read {}", dir.join(name).display()), e)),
        }
    }
    Ok(false)
}

fn walk_job(dir: &Path, trial_budget: &mut usize) -> Result<HarborJob> {
    let path = utf8_path(dir)?;
    let name = dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(path.as_str())
        .to_string();
    let over = || {
        Error::input(format!(
            "{path}: more than {HARBOR_TRIAL_DIRS_MAX} trial directories in all"
        ))
    };
    let entries = sorted_entries(dir, *trial_budget, &over)?;
    let mut artifacts = Vec::new();
    for (file, role) in [
        ("result.json", ROLE_JOB_RESULT),
        ("lock.json", ROLE_JOB_LOCK),
        ("config.json", ROLE_JOB_CONFIG),
    ] {
        if let Some(e) = entries.iter().find(|e| e.name == file) {
            if e.kind != Kind::File {
                return Err(Error::input(format!("{path}/{file}: not a regular file")));
            }
            artifacts.push(hash_file(&e.path, role, None)?);
        }
    }
    let mut trials = Vec::new();
    for e in entries.iter().filter(|e| e.kind == Kind::Dir) {
        *trial_budget = trial_budget.checked_sub(1).ok_or_else(over)?;
        trials.push(walk_trial(e)?);
    }
    Ok(HarborJob {
        name,
        path,
        artifacts,
        trials,
    })
}

fn walk_trial(e: &Entry) -> Result<TrialDir> {
    let path = utf8_path(&e.path)?;
    let file =
        |name: &str, role: &'static str, max: Option<usize>| -> Result<Option<FileArtifact>> {
            let p = e.path.join(name);
            match fs::symlink_metadata(&p) {
                Ok(m) if m.file_type().is_file() => hash_file(&p, role, max).map(Some),
                Ok(m) => Err(not_regular(&p, &m)),
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(err) => Err(Error::io(format!("read {}", p.display()), err)),
            }
        };
    Ok(TrialDir {
        name: e.name.clone(),
        path: path.clone(),
        result: file(
            "result.json",
            ROLE_TRIAL_RESULT,
            Some(HARBOR_RESULT_BYTES_MAX),
        )?,
        config: file(
            "config.json",
            ROLE_TRIAL_CONFIG,
            Some(HARBOR_RESULT_BYTES_MAX),
        )?,
        lock: file("lock.json", ROLE_TRIAL_LOCK, Some(HARBOR_RESULT_BYTES_MAX))?,
        case: parse_trial_name(&e.name),
    })
}

/// Streams `path` through BLAKE3; refuses files over `max` bytes.
fn hash_file(path: &Path, role: &'static str, max: Option<usize>) -> Result<FileArtifact> {
    let shown = utf8_path(path)?;
    let (mut f, _) = crate::error::open_regular(path, max.map_or(u64::MAX, |m| m as u64))?;
    let mut hasher = blake3::Hasher::new();
    let mut buf = vec![0u8; STREAM_CHUNK_BYTES];
    let mut total: u64 = 0;
    loop {
        let n = f
            .read(&mut buf)
            .map_err(|e| Error::io(format!("read {shown}"), e))?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if let Some(max) = max {
            if total > max as u64 {
                return Err(Error::input(format!(
                    "{shown}: longer than the limit of {max} bytes"
                )));
            }
        }
        hasher.update(buf.get(..n).unwrap_or(&[]));
    }
    Ok(FileArtifact {
        role,
        path: shown,
        bytes: total,
        blake3: hasher.finalize().to_hex().to_string(),
    })
}

/// Reads at most `max` bytes of `path`; a longer file is refused.
/// Every timestamp a TrialResult carries outside its embedded TrialConfig
/// (BIND-11): each string member named `*_at` (`started_at`,
/// `agent_execution.started_at`, `exception_info.occurred_at`, ...), by
/// field path, as written. The nesting is the parser's (bounded).
pub fn result_times(bytes: &[u8], shown: &str) -> Result<BTreeMap<String, String>> {
    let loaded = load_object(bytes, &[]).map_err(|e| e.in_document(shown))?;
    let mut out = BTreeMap::new();
    let mut stack: Vec<(String, &serde_json::Map<String, serde_json::Value>)> =
        vec![(String::new(), &loaded.map)];
    while let Some((prefix, map)) = stack.pop() {
        for (k, v) in map {
            let path = if prefix.is_empty() {
                k.clone()
            } else {
                format!("{prefix}.{k}")
            };
            match v {
                serde_json::Value::Object(inner) if !(prefix.is_empty() && k == "config") => {
                    stack.push((path, inner));
                }
                serde_json::Value::String(s) if k.ends_with("_at") => {
                    out.insert(path, s.clone());
                }
                _ => {}
            }
        }
    }
    Ok(out)
}

/// The `n_attempts` of a listed job's own `config.json`, when it has one
/// that says it (BIND-11).
pub fn job_n_attempts(job: &HarborJob) -> Result<Option<u64>> {
    let Some(art) = job.artifacts.iter().find(|a| a.role == ROLE_JOB_CONFIG) else {
        return Ok(None);
    };
    let bytes = read_bounded(Path::new(&art.path), HARBOR_RESULT_BYTES_MAX)?;
    let loaded = load_object(&bytes, &[]).map_err(|e| e.in_document(&art.path))?;
    Obj::root(&loaded.map)
        .u64_opt("n_attempts")
        .map_err(|e| e.in_document(&art.path))
}

/// The trial's own `config.json` as JSON (BIND-11), when the directory has
/// one: `Ok(value)`, or `Err(why)` when it is not one JSON object (it is
/// then a difference, never skipped).
pub fn read_trial_config_file(
    t: &TrialDir,
) -> Result<Option<std::result::Result<serde_json::Value, String>>> {
    let Some(config) = &t.config else {
        return Ok(None);
    };
    let bytes = read_bounded(Path::new(&config.path), HARBOR_RESULT_BYTES_MAX)?;
    Ok(Some(match load_object(&bytes, &[]) {
        Ok(_) => serde_json::from_slice::<serde_json::Value>(&bytes).map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    }))
}

/// Reads at most `max` bytes of `path`, a regular file; a longer file, a
/// FIFO or a device is refused.
fn read_bounded(path: &Path, max: usize) -> Result<Vec<u8>> {
    utf8_path(path)?;
    crate::error::read_regular(path, max as u64)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;
    use serde_json::{json, Map, Value};

    use super::*;

    const SHARED: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/fixtures/harbor-0.25.0"
    );

    fn read(rel: &str) -> Vec<u8> {
        let path = format!("{SHARED}/{rel}");
        std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn parse(rel: &str) -> ParsedTrial {
        parse_trial_result(&read(rel), rel).unwrap_or_else(|e| panic!("{e}"))
    }

    fn pass() -> Value {
        serde_json::from_slice(&read("trial-result.pass.json")).unwrap()
    }

    /// The refusal of `value` as `r.json`.
    fn refusal(value: &Value) -> String {
        let bytes = serde_json::to_vec_pretty(value).unwrap();
        let err = parse_trial_result(&bytes, "r.json").unwrap_err();
        assert_eq!(err.class(), crate::error::ExitClass::BadInput, "{err}");
        err.to_string()
    }

    fn edited(base: &Value, edit: impl FnOnce(&mut Map<String, Value>)) -> Value {
        let mut v = base.clone();
        if let Value::Object(m) = &mut v {
            edit(m);
        }
        v
    }

    fn obj<'a>(m: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
        m.get_mut(key).and_then(Value::as_object_mut).unwrap()
    }

    fn at(field: &str, problem: &str) -> String {
        format!("r.json: field {field}: {problem}")
    }

    fn case(task: &str, trial: &str, replacement: u8) -> CaseRef {
        CaseRef {
            task: task.into(),
            trial: trial.into(),
            replacement,
        }
    }

    // ---- the shared fixtures ----

    #[test]
    fn trial_results_of_harbor_parse() {
        // rule CASE-3 inputs: verifier ran, reward, exception
        let p = parse("trial-result.pass.json");
        assert_eq!(p.trial_name, "fix-git__Xk3pQ9a");
        assert_eq!(p.attempt_id, "0b6f1a52-4c1e-4f0e-9d7b-2a8c5e3f9b11");
        assert_eq!(p.task_name, "fix-git");
        assert_eq!(
            p.task_id.git_url.as_deref(),
            Some("https://github.com/laude-institute/terminal-bench-2.git")
        );
        assert_eq!(
            p.task_id.git_commit_id.as_deref(),
            Some("69671fbaac6d67a7ef0dfec016cc38a64ef7a77c")
        );
        assert_eq!(p.task_id.path.as_deref(), Some("fix-git"));
        assert_eq!(
            (
                p.task_id.org.as_ref(),
                p.task_id.name.as_ref(),
                p.task_id.git_ref.as_ref()
            ),
            (None, None, None)
        );
        assert_eq!(p.source.as_deref(), Some("terminal-bench"));
        assert_eq!(p.agent, "terminus-2@2.0.0");
        assert_eq!(p.model.as_deref(), Some("qwen3-coder-30b"));
        assert_eq!(p.model_provider.as_deref(), Some("openai"));
        assert!(p.verifier_ran);
        assert_eq!(
            p.rewards,
            Some(BTreeMap::from([("reward".to_string(), "1.0".to_string())]))
        );
        assert_eq!(
            (
                p.exception_type.as_ref(),
                p.exception_message_blake3.as_ref()
            ),
            (None, None)
        );
        assert_eq!(p.started_at.as_deref(), Some("2026-03-01T12:00:05Z"));
        assert_eq!(p.finished_at.as_deref(), Some("2026-03-01T12:05:05Z"));
        assert_eq!(
            (p.n_input_tokens, p.n_cache_tokens, p.n_output_tokens),
            (Some(48213), Some(30112), Some(3921))
        );
        assert_eq!(p.result_blake3, blake3_hex(&read("trial-result.pass.json")));
        assert_eq!(p.result_path, "trial-result.pass.json");

        let fail = parse("trial-result.fail.json");
        assert_eq!(
            fail.rewards,
            Some(BTreeMap::from([("reward".to_string(), "0.0".to_string())]))
        );

        // AgentTimeoutError still runs the verifier: exception and reward together
        let timeout = parse("trial-result.agent-timeout-with-reward.json");
        assert!(timeout.verifier_ran);
        assert_eq!(timeout.exception_type.as_deref(), Some("AgentTimeoutError"));
        assert_eq!(
            timeout.exception_message_blake3.as_deref(),
            Some(blake3_hex(b"Agent execution timed out after 1800.0 seconds").as_str())
        );
        assert_eq!(
            timeout.rewards.as_ref().map(|r| r["reward"].as_str()),
            Some("0.0")
        );

        // any other exception: no verifier
        let crashed = parse("trial-result.exception-no-verifier.json");
        assert!(!crashed.verifier_ran);
        assert_eq!(crashed.rewards, None);
        assert_eq!(
            crashed.exception_type.as_deref(),
            Some("APIConnectionError")
        );

        // configs differ only by task: their canonical hashes differ; equal configs hash alike
        assert_ne!(p.config_blake3, fail.config_blake3);
        let tree = parse("jobs-tree/2026-03-01__12-00-00/fix-git__Xk3pQ9a/result.json");
        assert_eq!(tree.config_blake3, p.config_blake3);
        let config = serde_json::to_string(&pass()["config"]).unwrap();
        assert_eq!(
            p.config_blake3,
            blake3_hex(canonical_json(&config).unwrap().as_bytes())
        );

        // and the payload binds group and case
        let group = GroupRef {
            lineage: "l".into(),
            group: "control".into(),
        };
        let event = p
            .clone()
            .into_event(group.clone(), case("fix-git", "t1", 0));
        assert_eq!(event.group, group);
        assert_eq!(event.rewards, p.rewards);
        assert_eq!(event.config_blake3, p.config_blake3);
        // No string of the payload looks like a credential (the append
        // guard's check, from schema).
        for (field, value) in
            crate::schema::events::Event::TrialResultRecorded(Box::new(event)).strings()
        {
            assert_eq!(crate::schema::secrets::scan(&value), None, "{field}");
        }
    }

    #[test]
    fn job_results_and_trial_results_embedded_in_them_parse() {
        let job = parse_job_result(&read("job-result.json"), "job-result.json").unwrap();
        assert_eq!(job.job_id, "3f1c2b9e-8d4a-4e57-9a41-0c6f2d7b5e10");
        assert_eq!(
            (
                job.n_total_trials,
                job.n_completed_trials,
                job.n_errored_trials
            ),
            (3, Some(3), Some(1))
        );
        assert_eq!(job.n_retries, Some(1)); // CASE-5 wants 0: a verdict will see this
        assert_eq!(job.finished_at.as_deref(), Some("2026-03-01T12:05:30"));
        let bytes = read("job-result.in-memory-with-trials.json");
        parse_job_result(&bytes, "in-memory").unwrap();
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        let trials = v["trial_results"].as_array().unwrap();
        assert_eq!(trials.len(), 3);
        for t in trials {
            let text = serde_json::to_vec(t).unwrap();
            let p = parse_trial_result(&text, "embedded").unwrap();
            assert_eq!(p.verifier_ran, !t["verifier_result"].is_null());
        }
        // a trial result is not a job result
        assert_eq!(
            parse_job_result(&read("trial-result.pass.json"), "t.json")
                .unwrap_err()
                .to_string(),
            "t.json: field (line): this is a trial result (it has trial_name), not a job result"
        );
    }

    #[test]
    fn every_shared_harbor_fixture_is_accounted_for() {
        let root = Path::new(SHARED);
        let mut files = Vec::new();
        fn under(dir: &Path, out: &mut Vec<PathBuf>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    under(&path, out);
                } else {
                    out.push(path);
                }
            }
        }
        under(root, &mut files);
        let mut seen: BTreeSet<String> = files
            .iter()
            .map(|p| p.strip_prefix(root).unwrap().to_string_lossy().into_owned())
            .collect();
        let mut check = |rel: &str| assert!(seen.remove(rel), "no fixture {rel}");

        results_and_configs(&mut check);
        the_models_required_fields(&mut check);
        the_job_tree(root, &mut check);
        assert!(seen.is_empty(), "fixtures without an expectation: {seen:?}");
    }

    /// Trial and job results parse; configs are hashed canonically and are
    /// not trial results.
    fn results_and_configs(check: &mut dyn FnMut(&str)) {
        for rel in [
            "trial-result.pass.json",
            "trial-result.fail.json",
            "trial-result.agent-timeout-with-reward.json",
            "trial-result.exception-no-verifier.json",
        ] {
            check(rel);
            parse(rel);
        }
        for rel in ["job-result.json", "job-result.in-memory-with-trials.json"] {
            check(rel);
            parse_job_result(&read(rel), rel).unwrap();
        }
        // configs: hashed canonically; not trial results
        for rel in [
            "trial-config.terminus2.json",
            "trial-config.terminus2.full.json",
            "job-config.json",
            "job-config.full.json",
        ] {
            check(rel);
            let text = String::from_utf8(read(rel)).unwrap();
            let canon = canonical_json(&text).unwrap();
            assert!(!canon.contains('\n'));
            assert!(parse_trial_result(&read(rel), rel)
                .unwrap_err()
                .to_string()
                .contains("not a harbor 0.25.0 trial result dump"));
        }
    }

    fn the_models_required_fields(check: &mut dyn FnMut(&str)) {
        // the model's required fields equal ours
        check("required-fields.json");
        let req: Value = serde_json::from_slice(&read("required-fields.json")).unwrap();
        let ours: Vec<Value> = TRIAL_RESULT_REQUIRED.iter().map(|s| json!(s)).collect();
        assert_eq!(req["TrialResult"], Value::Array(ours.clone()));
        check("json-schemas.json");
        let schemas: Value = serde_json::from_slice(&read("json-schemas.json")).unwrap();
        assert_eq!(schemas["TrialResult"]["required"], Value::Array(ours));
        let defs = &schemas["TrialResult"]["$defs"];
        assert_eq!(defs["GitTaskId"]["required"], json!(["git_url", "path"]));
        assert_eq!(defs["PackageTaskId"]["required"], json!(["org", "name"]));
        assert_eq!(defs["LocalTaskId"]["required"], json!(["path"]));
        assert_eq!(
            defs["ExceptionInfo"]["required"],
            json!([
                "exception_type",
                "exception_message",
                "exception_traceback",
                "occurred_at"
            ])
        );
    }

    fn the_job_tree(root: &Path, check: &mut dyn FnMut(&str)) {
        // the job tree
        let job = "jobs-tree/2026-03-01__12-00-00";
        for rel in [
            "config.json",
            "result.json",
            "job.log",
            "fix-git__Xk3pQ9a/result.json",
            "fix-git__Xk3pQ9a/config.json",
            "fix-git__Xk3pQ9a/trial.log",
            "fix-git__Xk3pQ9a/verifier/reward.txt",
            "regex-log__M2vR8sT/result.json",
            "regex-log__M2vR8sT/config.json",
            "regex-log__M2vR8sT/trial.log",
            "regex-log__M2vR8sT/verifier/reward.txt",
            "cancel-async-tasks__Jq7wL4e/result.json",
            "cancel-async-tasks__Jq7wL4e/config.json",
            "cancel-async-tasks__Jq7wL4e/trial.log",
            "cancel-async-tasks__Jq7wL4e/exception.txt",
        ] {
            check(&format!("{job}/{rel}"));
        }
        let tree = walk_jobs(&root.join("jobs-tree")).unwrap();
        assert_eq!(tree.jobs.len(), 1);
        let j = &tree.jobs[0];
        assert_eq!(j.name, "2026-03-01__12-00-00");
        assert_eq!(
            j.artifacts.iter().map(|a| a.role).collect::<Vec<_>>(),
            [ROLE_JOB_RESULT, ROLE_JOB_CONFIG]
        );
        let result = &j.artifacts[0];
        assert_eq!(
            result.bytes,
            read(&format!("{job}/result.json")).len() as u64
        );
        assert_eq!(
            result.blake3,
            blake3_hex(&read(&format!("{job}/result.json")))
        );
        parse_job_result(&read(&format!("{job}/result.json")), "r").unwrap();
        assert_eq!(
            j.trials.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
            [
                "cancel-async-tasks__Jq7wL4e",
                "fix-git__Xk3pQ9a",
                "regex-log__M2vR8sT"
            ]
        );
        assert!(tree.incomplete().is_empty());
        // Harbor's default names do not map to ledger cases
        assert_eq!(tree.unmapped().len(), 3);
        for t in &j.trials {
            let parsed = read_trial_result(t).unwrap();
            assert_eq!(parsed.trial_name, t.name);
            assert!(t.config.is_some() && t.lock.is_none());
        }
        let same = walk_jobs(&root.join(job)).unwrap();
        assert_eq!(same.jobs, tree.jobs);
    }

    // ---- malformed results ----

    #[test]
    fn trial_result_refusals_name_the_field() {
        let p = pass();
        let cases: Vec<(Value, String)> = vec![
            (edited(&p, |m| { m.remove("task_id"); }), at("task_id", "missing")),
            (edited(&p, |m| { m.insert("task_checksum".into(), Value::Null); }), at("task_checksum", "is null")),
            (edited(&p, |m| { m.remove("id"); }), at("id", "missing")),
            (edited(&p, |m| { m.insert("id".into(), json!("job-1")); }), at("id", "expected a lowercase uuid, found \"job-1\"")),
            (edited(&p, |m| { obj(m, "verifier_result").insert("rewards".into(), json!([1])); }),
             at("verifier_result.rewards", "expected an object, found an array [1]")),
            (edited(&p, |m| { obj(m, "task_id").insert("org".into(), json!("laude")); }),
             at("task_id", "mixes the git shape (git_url) with the package shape (org, name)")),
            (edited(&p, |m| { m.insert("task_id".into(), json!({"org": "laude", "name": "fix-git", "path": "x"})); }),
             at("task_id", "mixes the package shape (org, name) with a path")),
            (edited(&p, |m| { m.insert("task_id".into(), json!({"ref": "main"})); }),
             at("task_id", "matches none of harbor's shapes: git {git_url, git_commit_id?, path}, package {org, name, ref?}, local {path}")),
            (edited(&p, |m| { m.insert("task_id".into(), json!({"org": "laude"})); }), at("task_id.name", "missing")),
            (edited(&p, |m| { obj(m, "task_id").remove("path"); }), at("task_id.path", "missing")),
            (edited(&p, |m| { m.insert("task_checksum".into(), json!("task-pass")); }),
             at("task_checksum", "expected 64 lowercase hex digits (a sha256 dirhash), found \"task-pass\"")),
            (edited(&p, |m| { m.insert("config".into(), json!("{}")); }), at("config", "expected an object, found a string \"{}\"")),
            (edited(&p, |m| { obj(m, "agent_info").remove("version"); }), at("agent_info.version", "missing")),
            (edited(&p, |m| { obj(m, "agent_info").insert("name".into(), json!("a@b")); }),
             at("agent_info.name", "\"a@b\" contains @, which joins agent name and version in the ledger")),
            (edited(&p, |m| { obj(obj(m, "agent_info"), "model_info").remove("name"); }), at("agent_info.model_info.name", "missing")),
            (edited(&p, |m| { m.insert("exception_info".into(), json!({"exception_type": "RuntimeError", "exception_message": "boom"})); }),
             at("exception_info.exception_traceback", "missing")),
            (edited(&p, |m| { m.insert("started_at".into(), json!("2026-03-01T12:00:05+00:00")); }),
             at("started_at", "expected a utc timestamp YYYY-MM-DDTHH:MM:SS[.f]Z, found \"2026-03-01T12:00:05+00:00\"")),
            (edited(&p, |m| { obj(m, "agent_result").insert("n_input_tokens".into(), json!(-1)); }),
             at("agent_result.n_input_tokens", "negative number -1; expected a non-negative integer")),
            (edited(&p, |m| { obj(m, "agent_result").insert("n_output_tokens".into(), json!(3921.0)); }),
             at("agent_result.n_output_tokens", "expected a non-negative integer, found the non-integer number 3921.0")),
        ];
        for (value, expected) in &cases {
            assert_eq!(&refusal(value), expected);
        }
        // long exception texts are hashed, not copied: no field limit applies
        let long = edited(&p, |m| {
            m.insert(
                "exception_info".into(),
                json!({"exception_type": "RuntimeError", "exception_message": "m".repeat(100_000),
                "exception_traceback": "t".repeat(100_000), "occurred_at": "2026-03-01T12:01:44Z"}),
            );
        });
        let t = parse_trial_result(&serde_json::to_vec(&long).unwrap(), "r").unwrap();
        assert_eq!(
            t.exception_message_blake3,
            Some(blake3_hex("m".repeat(100_000).as_bytes()))
        );
        assert_eq!(
            refusal(&edited(&p, |m| {
                m.insert("exception_info".into(), json!({"exception_type": "E", "exception_message": 5, "exception_traceback": "", "occurred_at": "2026-03-01T12:01:44Z"}));
            })),
            at(
                "exception_info.exception_message",
                "expected a string, found a number 5"
            )
        );
        // the partial results BitRouter's old harbor-outcomes read
        let partial = json!({"task_name": "terminal-bench/regex-log", "trial_name": "regex-log__abc123", "verifier_result": {"rewards": {"reward": 1.0}}});
        assert_eq!(
            refusal(&partial),
            at("trial_uri", "missing; not a harbor 0.25.0 trial result dump, which always has task_name, trial_name, trial_uri, task_id, task_checksum, config, agent_info: 5 of them are missing (trial_uri, task_id, task_checksum, config, agent_info), as in the partial results bitrouter's old harbor-outcomes read")
        );
        // truncated, not utf-8, duplicate keys
        let bytes = read("trial-result.pass.json");
        let err = parse_trial_result(&bytes[..bytes.len() - 3], "r.json")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("r.json: field (line): truncated json: the text ends inside a value"),
            "{err}"
        );
        let mut bad = bytes.clone();
        bad[20] = 0xfe;
        assert_eq!(
            parse_trial_result(&bad, "r.json").unwrap_err().to_string(),
            "r.json: field (line): not utf-8: invalid byte at offset 20"
        );
        let dup = String::from_utf8(bytes).unwrap().replacen(
            "\"reward\": 1.0",
            "\"reward\": 1.0, \"reward\": 0.0",
            1,
        );
        assert_eq!(
            parse_trial_result(dup.as_bytes(), "r.json")
                .unwrap_err()
                .to_string(),
            at(
                "verifier_result.rewards.reward",
                "duplicate key; a json object must not repeat a key"
            )
        );
    }

    #[test]
    fn task_id_shapes_and_reward_literals() {
        let p = pass();
        let package = edited(&p, |m| {
            m.insert(
                "task_id".into(),
                json!({"org": "laude-institute", "name": "fix-git", "ref": "v2"}),
            );
        });
        let t = parse_trial_result(&serde_json::to_vec(&package).unwrap(), "r")
            .unwrap()
            .task_id;
        assert_eq!(
            (
                t.org.as_deref(),
                t.name.as_deref(),
                t.git_ref.as_deref(),
                t.path.as_deref()
            ),
            (Some("laude-institute"), Some("fix-git"), Some("v2"), None)
        );
        let local = edited(&p, |m| {
            m.insert("task_id".into(), json!({"path": "tasks/fix-git"}));
        });
        let t = parse_trial_result(&serde_json::to_vec(&local).unwrap(), "r")
            .unwrap()
            .task_id;
        assert_eq!(
            (t.path.as_deref(), t.git_url.as_ref(), t.org.as_ref()),
            (Some("tasks/fix-git"), None, None)
        );
        // reward.json keeps ints as ints; rewards keep the literal written
        let text = String::from_utf8(read("trial-result.pass.json")).unwrap();
        for literal in ["1", "1.0", "0.50", "2e0"] {
            let edited = text.replacen(
                "\"reward\": 1.0",
                &format!("\"reward\": {literal}, \"tests_passed\": 7"),
                1,
            );
            let r = parse_trial_result(edited.as_bytes(), "r")
                .unwrap()
                .rewards
                .unwrap();
            assert_eq!(r["reward"], literal);
            assert_eq!(r["tests_passed"], "7");
        }
        // a verifier that ran but wrote no rewards
        let none = edited(&p, |m| {
            m.insert("verifier_result".into(), json!({"rewards": null}));
        });
        let t = parse_trial_result(&serde_json::to_vec(&none).unwrap(), "r").unwrap();
        assert!(t.verifier_ran && t.rewards.is_none());
    }

    #[test]
    fn result_bytes_at_the_bound_and_one_past() {
        // HARBOR_RESULT_BYTES_MAX (a valid result padded with trailing blanks)
        let mut bytes = read("trial-result.pass.json");
        bytes.resize(HARBOR_RESULT_BYTES_MAX, b' ');
        assert!(parse_trial_result(&bytes, "r.json").is_ok());
        assert!(parse_job_result(
            &{
                let mut j = read("job-result.json");
                j.resize(HARBOR_RESULT_BYTES_MAX, b' ');
                j
            },
            "j"
        )
        .is_ok());
        bytes.push(b' ');
        assert_eq!(
            parse_trial_result(&bytes, "r.json").unwrap_err().to_string(),
            format!("r.json: field (line): file is {} bytes, longer than the limit of {HARBOR_RESULT_BYTES_MAX} bytes", HARBOR_RESULT_BYTES_MAX + 1)
        );
        // and through a walk: a trial result.json one byte past the bound is refused
        let tmp = tempfile::tempdir().unwrap();
        let trial = tmp.path().join("job/t__control-t1");
        std::fs::create_dir_all(&trial).unwrap();
        std::fs::write(tmp.path().join("job/config.json"), "{}").unwrap();
        std::fs::write(trial.join("result.json"), &bytes).unwrap();
        let err = walk_jobs(&tmp.path().join("job")).unwrap_err().to_string();
        assert!(
            err.contains("t__control-t1/result.json: ")
                && err.contains(&format!(
                    "longer than the limit of {HARBOR_RESULT_BYTES_MAX} bytes"
                )),
            "{err}"
        );
        bytes.pop();
        std::fs::write(trial.join("result.json"), &bytes).unwrap();
        assert_eq!(
            walk_jobs(&tmp.path().join("job")).unwrap().jobs[0].trials[0]
                .result
                .as_ref()
                .unwrap()
                .bytes,
            HARBOR_RESULT_BYTES_MAX as u64
        );
    }

    // ---- walks ----

    #[test]
    fn incomplete_trials_are_reported_never_invented() {
        // rule CASE-4: a missing result never means "not started"
        let tmp = tempfile::tempdir().unwrap();
        let job = tmp.path().join("jobs/2026-08-20__14-00-00");
        for t in [
            "fix-git__r1-t1",
            "regex-log__r1-t1-r01",
            "regex-log__Ab3dE9x",
        ] {
            std::fs::create_dir_all(job.join(t)).unwrap();
        }
        std::fs::write(job.join("config.json"), "{}").unwrap();
        std::fs::write(job.join("lock.json"), "{\"schema_version\":3}").unwrap();
        std::fs::write(job.join("job.log"), "").unwrap();
        std::fs::write(
            job.join("fix-git__r1-t1/result.json"),
            read("trial-result.pass.json"),
        )
        .unwrap();
        std::fs::write(tmp.path().join("jobs/.DS_Store"), "").unwrap();
        let tree = walk_jobs(&tmp.path().join("jobs")).unwrap();
        assert_eq!(tree.ignored.len(), 1);
        assert!(tree.ignored[0].ends_with("jobs/.DS_Store"));
        let j = &tree.jobs[0];
        assert_eq!(
            j.artifacts.iter().map(|a| a.role).collect::<Vec<_>>(),
            [ROLE_JOB_LOCK, ROLE_JOB_CONFIG]
        );
        assert_eq!(j.trials.len(), 3);
        let incomplete: Vec<&str> = tree.incomplete().iter().map(|t| t.name.as_str()).collect();
        assert_eq!(incomplete, ["regex-log__Ab3dE9x", "regex-log__r1-t1-r01"]);
        let unmapped: Vec<&str> = tree.unmapped().iter().map(|t| t.name.as_str()).collect();
        assert_eq!(unmapped, ["regex-log__Ab3dE9x"]);
        assert_eq!(
            j.trials[2].case,
            Some(("regex-log".into(), "r1".into(), case("regex-log", "t1", 1)))
        );
        // reading an incomplete trial is refused; a trial whose result names another trial too
        let err = read_trial_result(&j.trials[1]).unwrap_err().to_string();
        assert!(
            err.ends_with("trial \"regex-log__Ab3dE9x\" has no result.json (incomplete)"),
            "{err}"
        );
        let err = read_trial_result(&j.trials[0]).unwrap_err().to_string();
        assert!(err.ends_with("result.json: field trial_name: \"fix-git__Xk3pQ9a\" differs from its directory name \"fix-git__r1-t1\"; harbor names the directory after the trial"), "{err}");
        // a file changed after the walk is refused
        std::fs::write(
            job.join("fix-git__r1-t1/result.json"),
            read("trial-result.fail.json"),
        )
        .unwrap();
        let err = read_trial_result(&j.trials[0]).unwrap_err().to_string();
        assert!(err.contains("changed since it was listed"), "{err}");
        // artifacts become payloads
        let a = j.artifacts[0].to_event(None);
        assert_eq!((a.role.as_str(), a.bytes), (ROLE_JOB_LOCK, 20));
        assert_eq!(a.blake3, blake3_hex(b"{\"schema_version\":3}"));
    }

    #[test]
    fn walk_refusals() {
        let tmp = tempfile::tempdir().unwrap();
        let missing = tmp.path().join("nope");
        assert_eq!(
            walk_jobs(&missing).unwrap_err().to_string(),
            format!("{}: no such directory", missing.display())
        );
        let file = tmp.path().join("f");
        std::fs::write(&file, "").unwrap();
        assert_eq!(
            walk_jobs(&file).unwrap_err().to_string(),
            format!("{}: not a directory", file.display())
        );
        let job = tmp.path().join("job");
        std::fs::create_dir_all(job.join("t__g-t1/result.json")).unwrap();
        std::fs::write(job.join("config.json"), "{}").unwrap();
        let err = walk_jobs(&job).unwrap_err().to_string();
        assert!(
            err.ends_with("t__g-t1/result.json: not a regular file: a directory"),
            "{err}"
        );
        std::fs::remove_dir(job.join("t__g-t1/result.json")).unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(&file, job.join("link")).unwrap();
            let err = walk_jobs(&job).unwrap_err().to_string();
            assert!(err.ends_with("/link: is a symbolic link; a harbor tree is read only through real files and directories"), "{err}");
        }
    }

    #[test]
    fn a_reward_that_is_not_a_number_is_kept_as_evidence_bind_2() {
        // BIND-2: a string or boolean reward is no reward, but the result is
        // still evidence (kept as its JSON text), not a refused file.
        let p = pass();
        for (value, text) in [(json!("1"), "\"1\""), (json!(true), "true")] {
            let v = edited(&p, |m| {
                obj(obj(m, "verifier_result"), "rewards").insert("reward".into(), value);
            });
            let bytes = serde_json::to_vec_pretty(&v).unwrap();
            let parsed = parse_trial_result(&bytes, "r.json").unwrap();
            assert_eq!(parsed.rewards.unwrap()["reward"], text);
        }
    }

    #[test]
    fn trial_dirs_at_the_bound_and_one_past() {
        // HARBOR_TRIAL_DIRS_MAX, over all jobs of a walk
        let tmp = tempfile::tempdir().unwrap();
        let jobs = tmp.path().join("jobs");
        let half = HARBOR_TRIAL_DIRS_MAX / 2;
        for (job, n) in [("a", half), ("b", HARBOR_TRIAL_DIRS_MAX - half)] {
            // a job's own file makes it a job directory (BIND-9)
            std::fs::create_dir_all(jobs.join(job)).unwrap();
            std::fs::write(jobs.join(job).join("job.log"), "").unwrap();
            for i in 0..n {
                std::fs::create_dir_all(jobs.join(job).join(format!("t{i}"))).unwrap();
            }
        }
        let tree = walk_jobs(&jobs).unwrap();
        assert_eq!(tree.trials().count(), HARBOR_TRIAL_DIRS_MAX);
        assert_eq!(tree.incomplete().len(), HARBOR_TRIAL_DIRS_MAX);
        std::fs::create_dir(jobs.join("b").join("one-more")).unwrap();
        let err = walk_jobs(&jobs).unwrap_err().to_string();
        assert!(
            err.ends_with(&format!(
                "b: more than {HARBOR_TRIAL_DIRS_MAX} trial directories in all"
            )),
            "{err}"
        );
    }

    #[test]
    fn job_dirs_at_the_bound_and_one_past() {
        let tmp = tempfile::tempdir().unwrap();
        let jobs = tmp.path().join("jobs");
        for i in 0..HARBOR_JOB_DIRS_MAX {
            // a job's own file makes it a job directory (BIND-9)
            std::fs::create_dir_all(jobs.join(format!("j{i:04}"))).unwrap();
            std::fs::write(jobs.join(format!("j{i:04}")).join("job.log"), "").unwrap();
        }
        let tree = walk_jobs(&jobs).unwrap();
        assert_eq!(tree.jobs.len(), HARBOR_JOB_DIRS_MAX);
        assert_eq!(tree.jobs[0].name, "j0000"); // sorted
        std::fs::create_dir(jobs.join("zz")).unwrap();
        assert_eq!(
            walk_jobs(&jobs).unwrap_err().to_string(),
            format!(
                "{}: more than {HARBOR_JOB_DIRS_MAX} job directories",
                jobs.display()
            )
        );
    }

    proptest! {
        #[test]
        fn parsers_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = parse_trial_result(&bytes, "p");
            let _ = parse_job_result(&bytes, "p");
            let _ = canonical_json(&String::from_utf8_lossy(&bytes));
        }

        #[test]
        fn parsers_never_panic_on_edited_results(cut in 0usize..5078, byte in any::<u8>()) {
            let mut bytes = read("trial-result.pass.json");
            if let Some(b) = bytes.get_mut(cut) {
                *b = byte;
            }
            let _ = parse_trial_result(&bytes, "p");
            let _ = parse_trial_result(bytes.get(..cut).unwrap_or(&[]), "p");
        }
    }
}
