//! Renders the one-case Harbor 0.25.0 TrialConfig for Terminus 2 from a
//! frozen manifest (harbor-formats.md sections 1 and 6). Pure.
//!
//! The config runs the `terminus-2` agent against the group's daemon:
//! `agent.kwargs.api_base` is the daemon URL (with `/v1` for OpenAI-protocol
//! routes, without for Anthropic ones), `agent.kwargs.llm_kwargs.api_key` is
//! the daemon's non-secret local key, `agent.kwargs.session_id` a
//! deterministic id of the case, and the EC2 environment is one-use
//! (`delete = true`) and tagged with the run, role, case and trial tags.
//!
//! A v2 lineage's frozen plan (`schema::plan::Launch`) adds three things:
//! the environment (an `import_path` class with the plan's kwargs instead
//! of Harbor's `ec2` type with the frozen sandbox), extra agent kwargs, and
//! a local task directory instead of the dataset repository. The rendered
//! keys (the daemon `api_base`, `session_id`, `llm_kwargs`, the tags) are
//! never overridden by a plan kwarg: a collision is an input error. A v1
//! lineage (no plan) renders exactly as before.

use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::method::projections::LineageState;
use crate::schema::events::CaseRef;
use crate::schema::manifest::{is_non_evaluation, Group, ManifestFile, RouteProtocol, Tier};
use crate::schema::names::trial_name;
use crate::schema::plan::{Kwarg, Launch, Plan};

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

/// Renders the TrialConfig of `case` in `group` of a v1 lineage (no plan).
pub fn render(m: &ManifestFile, group: &str, case: &CaseRef) -> Result<Rendered> {
    render_planned(m, None, group, case)
}

/// The frozen rendering of `case` in `group` of lineage `l`: with its plan
/// when it was frozen as v2. Everything that compares a launched config
/// with "the frozen rendering" (GATE-4's manifest row, BIND-1) and
/// everything that renders one to launch goes through here, so the two can
/// never render differently.
pub fn render_frozen(l: &LineageState, group: &str, case: &CaseRef) -> Result<Rendered> {
    render_planned(&l.frozen.manifest.public, l.plan.as_ref(), group, case)
}

/// The `trials_dir` of every TrialConfig of group `g`: its Harbor job
/// directory, `{jobs_dir}/{job_name}`, which holds its trials and no
/// other group's.
pub fn trials_dir(m: &ManifestFile, g: &Group) -> String {
    format!("{}/{}", m.harbor.jobs_dir, g.job_name)
}

/// Renders the TrialConfig of `case` in `group`: with the frozen plan of a
/// v2 lineage when `plan` is given (its launch section decides the
/// environment, extra agent kwargs and the task source), else as v1.
pub fn render_planned(
    m: &ManifestFile,
    plan: Option<&Plan>,
    group: &str,
    case: &CaseRef,
) -> Result<Rendered> {
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
        "trials_dir": trials_dir(m, g),
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
    let config = match plan {
        Some(p) => apply_launch(config, &p.launch, &task)?,
        None => config,
    };
    let mut bytes = serde_json::to_vec_pretty(&config).map_err(|e| Error::input(e.to_string()))?;
    bytes.push(b'\n');
    let blake3 = hex::encode(blake3::hash(&bytes).as_bytes());
    Ok(Rendered {
        config,
        bytes,
        blake3,
    })
}

/// A plan kwarg as JSON.
fn kwarg_json(k: &Kwarg) -> Value {
    match k {
        Kwarg::Text(t) => Value::String(t.clone()),
        Kwarg::Int(i) => Value::from(*i),
        Kwarg::Bool(b) => Value::Bool(*b),
    }
}

/// Adds the plan's kwargs to a rendered kwargs object; a key the rendering
/// already set is an input error naming the plan field.
fn merge_kwargs(
    into: &mut Map<String, Value>,
    extra: &std::collections::BTreeMap<String, Kwarg>,
    field: &str,
) -> Result<()> {
    for (key, value) in extra {
        if into.contains_key(key) {
            return Err(Error::input(format!(
                "{field}.{key}: the rendered TrialConfig sets this key itself; a plan kwarg may not override it"
            )));
        }
        into.insert(key.clone(), kwarg_json(value));
    }
    Ok(())
}

/// The v2 changes of a v1 rendering: the plan's environment, agent kwargs
/// and task directory.
fn apply_launch(mut config: Value, launch: &Launch, task: &str) -> Result<Value> {
    if let Some(dir) = &launch.tasks_dir {
        let source = config["task"]["source"].clone();
        config["task"] = json!({
            "path": format!("{}/{task}", dir.trim_end_matches('/')),
            "source": source,
        });
    }
    if let Some(kwargs) = config["agent"]["kwargs"].as_object_mut() {
        merge_kwargs(kwargs, &launch.agent_kwargs, "launch.agent_kwargs")?;
    }
    if let Some(import_path) = &launch.environment_import_path {
        // An import_path class gets the plan's kwargs and the tags; the
        // frozen EC2 sandbox fields are Harbor's `ec2` type's own.
        let tags = config["environment"]["kwargs"]["tags"].take();
        config["environment"] = json!({
            "import_path": import_path,
            "delete": true,
            "kwargs": { "tags": tags },
        });
    }
    if let Some(kwargs) = config["environment"]["kwargs"].as_object_mut() {
        merge_kwargs(
            kwargs,
            &launch.environment_kwargs,
            "launch.environment_kwargs",
        )?;
    }
    Ok(config)
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

    fn live_plan() -> Plan {
        let mut plan = crate::testkit::examples::frozen().plan;
        plan.launch.environment_import_path =
            Some("benchledger_live.environment:LiveSandboxEnvironment".into());
        plan.launch.environment_kwargs = std::collections::BTreeMap::from([
            (
                "sandbox_root".into(),
                Kwarg::Text("/runs/l/sandboxes".into()),
            ),
            ("region".into(), Kwarg::Text("us-east-1".into())),
            ("launch_instance".into(), Kwarg::Bool(true)),
        ]);
        plan.launch.agent_kwargs = std::collections::BTreeMap::from([
            ("max_turns".into(), Kwarg::Int(12)),
            ("record_terminal_session".into(), Kwarg::Bool(false)),
        ]);
        plan.launch.tasks_dir = Some("/repo/tools/live/tasks/".into());
        plan
    }

    #[test]
    fn the_example_plan_renders_exactly_as_v1() {
        // The example's [launch] names no environment, kwargs or tasks_dir:
        // its v2 rendering is the v1 bytes (every recorded ledger keeps its
        // TrialConfig hashes).
        let plan = crate::testkit::examples::frozen().plan;
        for (group, case) in [
            ("canary-1", c("hello-world", "c1", 0)),
            ("control", c("fix-git", "t1", 0)),
            ("r2", c("regex-log", "t1", 1)),
        ] {
            assert_eq!(
                render_planned(&m(), Some(&plan), group, &case).unwrap(),
                render(&m(), group, &case).unwrap()
            );
        }
    }

    #[test]
    fn a_v2_plan_renders_its_environment_agent_kwargs_and_task_directory() {
        let plan = live_plan();
        let r = render_planned(&m(), Some(&plan), "r1", &c("fix-git", "t1", 0)).unwrap();
        let e = &r.config["environment"];
        assert_eq!(
            e["import_path"],
            "benchledger_live.environment:LiveSandboxEnvironment"
        );
        assert!(e.get("type").is_none(), "{e}");
        assert_eq!(e["delete"], true);
        let kwargs = e["kwargs"].as_object().unwrap();
        assert_eq!(
            kwargs.keys().collect::<Vec<_>>(),
            ["launch_instance", "region", "sandbox_root", "tags"],
            "the plan's kwargs and the tags, not the frozen EC2 sandbox's fields"
        );
        assert_eq!(kwargs["launch_instance"], true);
        assert_eq!(kwargs["sandbox_root"], "/runs/l/sandboxes");
        let tags = &kwargs["tags"];
        assert_eq!(tags["benchledger:run"], "short13-kimi-2026-11");
        assert_eq!(tags["benchledger:role"], "sandbox");
        assert_eq!(tags["benchledger:case"], "fix-git");
        assert_eq!(tags["benchledger:trial"], "fix-git__r1-t1");
        let a = &r.config["agent"]["kwargs"];
        assert_eq!(a["max_turns"], 12);
        assert_eq!(a["record_terminal_session"], false);
        assert_eq!(a["api_base"], "http://10.20.0.10:18721/v1");
        assert_eq!(a["llm_kwargs"]["api_key"], "bitrouter-local");
        assert_eq!(
            r.config["task"],
            json!({"path": "/repo/tools/live/tasks/fix-git", "source": "terminal-bench"}),
            "a local task directory, no git_url"
        );
        // Deterministic, and a different hash from v1's.
        let again = render_planned(&m(), Some(&plan), "r1", &c("fix-git", "t1", 0)).unwrap();
        assert_eq!(r, again);
        assert_ne!(
            r.blake3,
            render(&m(), "r1", &c("fix-git", "t1", 0)).unwrap().blake3
        );
        // The canary renders its own task from the same directory.
        let k = render_planned(&m(), Some(&plan), "canary-1", &c("hello-world", "c1", 0)).unwrap();
        assert_eq!(
            k.config["task"]["path"],
            "/repo/tools/live/tasks/hello-world"
        );
    }

    #[test]
    fn a_v2_plan_without_an_import_path_keeps_the_ec2_sandbox_and_adds_its_kwargs() {
        let mut plan = live_plan();
        plan.launch.environment_import_path = None;
        plan.launch.environment_kwargs = std::collections::BTreeMap::from([(
            "subnet_id".into(),
            Kwarg::Text("subnet-1".into()),
        )]);
        plan.launch.tasks_dir = None;
        let r = render_planned(&m(), Some(&plan), "control", &c("fix-git", "t1", 0)).unwrap();
        let e = &r.config["environment"];
        assert_eq!(e["type"], "ec2");
        assert_eq!(e["kwargs"]["ami_id"], "ami-0fedcba9876543210");
        assert_eq!(e["kwargs"]["subnet_id"], "subnet-1");
        assert_eq!(
            r.config["task"]["git_url"],
            "https://github.com/laude-institute/terminal-bench-2.git"
        );
    }

    #[test]
    fn a_plan_kwarg_never_overrides_a_rendered_key() {
        let mut plan = live_plan();
        plan.launch
            .agent_kwargs
            .insert("api_base".into(), Kwarg::Text("http://elsewhere".into()));
        let e = render_planned(&m(), Some(&plan), "r1", &c("fix-git", "t1", 0)).unwrap_err();
        assert!(
            e.to_string().contains("launch.agent_kwargs.api_base"),
            "{e}"
        );
        let mut plan = live_plan();
        plan.launch
            .environment_kwargs
            .insert("tags".into(), Kwarg::Text("none".into()));
        let e = render_planned(&m(), Some(&plan), "r1", &c("fix-git", "t1", 0)).unwrap_err();
        assert!(
            e.to_string().contains("launch.environment_kwargs.tags"),
            "{e}"
        );
    }
}
