//! Renders the one-case Harbor 0.25.0 TrialConfig for Terminus 2 from a
//! frozen manifest (harbor-formats.md sections 1 and 6). Pure.
//!
//! The config runs the `terminus-2` agent against the group's daemon:
//! `agent.kwargs.api_base` is the daemon URL (with `/v1` for OpenAI-protocol
//! routes, without for Anthropic ones), `agent.kwargs.llm_kwargs.api_key` is
//! the daemon's non-secret local key, `agent.kwargs.session_id` a
//! deterministic id of the case, and the EC2 environment is one-use
//! (`delete = true`) and tagged with the run, role, case and trial tags.

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::schema::events::CaseRef;
use crate::schema::manifest::{is_non_evaluation, ManifestFile, RouteProtocol, Tier};
use crate::schema::names::trial_name;

/// A deterministic session id for a case, shaped like a UUID.
pub fn session_id(lineage: &str, group: &str, case: &CaseRef) -> String {
    let h = blake3::derive_key(
        "benchledger v1 session id",
        format!(
            "{lineage}\0{group}\0{}\0{}\0{}",
            case.task, case.trial, case.replacement
        )
        .as_bytes(),
    );
    let x = hex::encode(&h[..16]);
    format!(
        "{}-{}-{}-{}-{}",
        &x[..8],
        &x[8..12],
        &x[12..16],
        &x[16..20],
        &x[20..32]
    )
}

/// The rendered config and the hash recorded for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    /// The TrialConfig document.
    pub config: Value,
    /// Its bytes as written (pretty JSON with a trailing newline).
    pub bytes: Vec<u8>,
    /// BLAKE3 of `bytes`, hex: what GATE-7 compares.
    pub blake3: String,
}

/// Renders the TrialConfig of `case` in `group`.
pub fn render(m: &ManifestFile, group: &str, case: &CaseRef) -> Result<Rendered> {
    let g =
        m.groups.iter().find(|g| g.name == group).ok_or_else(|| {
            Error::input(format!("group {group:?} is not in the frozen manifest"))
        })?;
    let (protocol, model) = if group == "control" {
        let strong = m
            .route(Tier::Strong)
            .ok_or_else(|| Error::input("the manifest has no strong route"))?;
        (strong.protocol, strong.model.clone())
    } else {
        (m.harbor.policy_protocol, m.harbor.policy_model.clone())
    };
    let port = g.ports[0];
    let (litellm_provider, api_base) = match protocol {
        RouteProtocol::Openai => (
            "openai",
            format!("http://{}:{port}/v1", m.central.daemon_host),
        ),
        RouteProtocol::Anthropic => (
            "anthropic",
            format!("http://{}:{port}", m.central.daemon_host),
        ),
    };
    let task = if is_non_evaluation(group) {
        m.cases
            .canaries
            .iter()
            .find(|k| k.group == group && k.task == case.task)
            .map(|k| k.task.clone())
    } else {
        m.cases
            .tasks
            .iter()
            .find(|t| t.name == case.task)
            .map(|t| t.name.clone())
    }
    .ok_or_else(|| Error::input(format!("{} is not a task of group {group:?}", case.task)))?;
    let t = &m.tags;
    let config = json!({
        "task": {
            "path": task,
            "git_url": m.benchmark.dataset_repo,
            "git_commit_id": m.benchmark.dataset_revision,
            "source": m.benchmark.name,
        },
        "trial_name": trial_name(&case.task, group, case),
        "trials_dir": format!("{}/{}", m.harbor.jobs_dir, g.job_name),
        "agent": {
            "name": m.harbor.agent,
            "model_name": format!("{litellm_provider}/{model}"),
            "override_timeout_sec": m.harbor.agent_timeout_sec,
            "extra_allowed_hosts": [m.central.daemon_host],
            "kwargs": {
                "api_base": api_base,
                "session_id": session_id(&m.lineage, group, case),
                "llm_kwargs": { "api_key": m.harbor.local_api_key },
            },
        },
        "environment": {
            "type": "ec2",
            "delete": true,
            "kwargs": {
                "region": m.aws.region,
                "ami_id": m.sandbox.ami,
                "instance_type": m.sandbox.instance_type,
                "tags": {
                    t.run_key.clone(): t.run_value,
                    t.role_key.clone(): t.sandbox_role_value,
                    t.case_key.clone(): case.task,
                    t.trial_key.clone(): trial_name(&case.task, group, case),
                },
            },
        },
        "verifier": { "override_timeout_sec": m.harbor.verifier_timeout_sec },
    });
    let mut bytes = serde_json::to_vec_pretty(&config).map_err(|e| Error::input(e.to_string()))?;
    bytes.push(b'\n');
    let blake3 = hex::encode(blake3::hash(&bytes).as_bytes());
    Ok(Rendered {
        config,
        bytes,
        blake3,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m() -> ManifestFile {
        crate::testkit::examples::frozen().manifest.public
    }

    fn c(task: &str, trial: &str, r: u8) -> CaseRef {
        CaseRef {
            task: task.into(),
            trial: trial.into(),
            replacement: r,
        }
    }

    #[test]
    fn control_talks_anthropic_to_the_daemon_without_v1() {
        let r = render(&m(), "control", &c("fix-git", "t1", 0)).unwrap();
        let a = &r.config["agent"];
        assert_eq!(a["name"], "terminus-2");
        assert_eq!(a["model_name"], "anthropic/claude-sonnet-4-5");
        assert_eq!(a["kwargs"]["api_base"], "http://10.20.0.10:18711");
        assert_eq!(a["kwargs"]["llm_kwargs"]["api_key"], "bitrouter-local");
        assert_eq!(a["extra_allowed_hosts"][0], "10.20.0.10");
        assert_eq!(r.config["trial_name"], "fix-git__control-t1");
        assert_eq!(r.config["environment"]["delete"], true);
        assert_eq!(
            r.config["environment"]["kwargs"]["tags"]["benchledger:run"],
            "short13-kimi-2026-11"
        );
    }

    #[test]
    fn rounds_talk_openai_with_v1() {
        let r = render(&m(), "r1", &c("fix-git", "t1", 0)).unwrap();
        assert_eq!(r.config["agent"]["model_name"], "openai/@auto");
        assert_eq!(
            r.config["agent"]["kwargs"]["api_base"],
            "http://10.20.0.10:18721/v1"
        );
    }

    #[test]
    fn rendering_is_deterministic_and_hashes_its_bytes() {
        let a = render(&m(), "r1", &c("fix-git", "t1", 0)).unwrap();
        let b = render(&m(), "r1", &c("fix-git", "t1", 0)).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.blake3, hex::encode(blake3::hash(&a.bytes).as_bytes()));
        let other = render(&m(), "r1", &c("fix-git", "t1", 1)).unwrap();
        assert_ne!(a.blake3, other.blake3);
        assert_eq!(other.config["trial_name"], "fix-git__r1-t1-r01");
    }

    #[test]
    fn session_ids_are_uuid_shaped_and_distinct_per_case() {
        let a = session_id("l", "r1", &c("x", "t1", 0));
        assert_eq!(a.len(), 36);
        assert_eq!(a.matches('-').count(), 4);
        assert_ne!(a, session_id("l", "r1", &c("x", "t1", 1)));
        assert_ne!(a, session_id("l", "r2", &c("x", "t1", 0)));
    }

    #[test]
    fn unknown_tasks_and_groups_are_input_errors() {
        assert!(render(&m(), "r9", &c("fix-git", "t1", 0)).is_err());
        assert!(render(&m(), "r1", &c("hello-world", "c1", 0)).is_err());
        assert!(render(&m(), "canary-1", &c("hello-world", "c1", 0)).is_ok());
    }
}
