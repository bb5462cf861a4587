//! The checks of a manifest before it is frozen. Format problems are input
//! errors (exit 2); violations of the method are refusals naming the rule
//! (exit 3). They read the stored form the input converts into, so what is
//! checked is exactly what is recorded.

use std::collections::{BTreeMap, BTreeSet};

use super::{PrivateToml, GROUPS_MAX, LABEL_BYTES_MAX, MANIFEST_VERSION, TASKS_MAX, TRIALS_MAX};
use crate::error::{Error, Result};
use crate::schema::manifest::{
    commitment_key, is_non_evaluation, CentralLaunch, CentralMode, ExcludedTask, ManifestFile,
    RunClass, Tier, EC2_VCPU_QUOTA_CODE, EVALUATION_GROUPS, MECHANISM_TASKS_MAX,
    MECHANISM_TASKS_MIN, PUBLIC_TASKS, PUBLIC_TRIALS, REPLICATED_TRIALS_MIN,
};
use crate::schema::rule::Rule;

/// An input error (exit 2) naming the file and field.
pub(super) fn input_error(source: &str, field: &str, problem: impl std::fmt::Display) -> Error {
    Error::input(format!("{source}: field {field}: {problem}"))
}

/// A refusal (exit 3) citing `rule`, naming the file and field.
pub(super) fn refused(
    rule: Rule,
    source: &str,
    field: &str,
    problem: impl std::fmt::Display,
) -> Error {
    Error::Refused {
        rule,
        message: format!("{source}: field {field}: {problem}"),
    }
}

/// A label: 1 to [`LABEL_BYTES_MAX`] bytes of letters, digits, `.`, `_`, `-`.
pub(super) fn check_label(source: &str, field: &str, v: &str) -> Result<()> {
    if v.is_empty() || v.len() > LABEL_BYTES_MAX {
        return Err(input_error(
            source,
            field,
            format!("must be 1 to {LABEL_BYTES_MAX} bytes, got {}", v.len()),
        ));
    }
    if let Some(c) = v
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "._-".contains(*c)))
    {
        return Err(input_error(
            source,
            field,
            format!("{v:?} contains {c:?}; labels use letters, digits, '.', '_' and '-'"),
        ));
    }
    Ok(())
}

fn check_hex(source: &str, field: &str, v: &str, bytes: usize) -> Result<()> {
    if v.len() != bytes * 2
        || !v
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return Err(input_error(
            source,
            field,
            format!("must be {} lowercase hex digits, got {v:?}", bytes * 2),
        ));
    }
    Ok(())
}

fn check_nonempty(source: &str, field: &str, v: &str) -> Result<()> {
    if v.trim().is_empty() {
        return Err(input_error(source, field, "must not be empty"));
    }
    Ok(())
}

/// Every check of the public manifest, in the order its errors are
/// reported.
pub(super) fn validate(manifest: &ManifestFile, source: &str) -> Result<()> {
    if manifest.manifest_version == 1 {
        return Err(input_error(
            source,
            "manifest_version",
            "1 is the format before evidence binding (BIND) and signed sign-offs (TRUST-3): freeze with manifest_version = 2 and the sections [binding], [launch], [evidence] and [signers] (see ledger-schema/examples/manifest.toml)",
        ));
    }
    if manifest.manifest_version != MANIFEST_VERSION {
        return Err(input_error(
            source,
            "manifest_version",
            format!(
                "must be {MANIFEST_VERSION}, got {}",
                manifest.manifest_version
            ),
        ));
    }
    check_label(source, "lineage", &manifest.lineage)?;
    let benchmark = &manifest.benchmark;
    for (field, value) in [
        ("benchmark.name", &benchmark.name),
        ("benchmark.version", &benchmark.version),
        ("benchmark.dataset_repo", &benchmark.dataset_repo),
        ("benchmark.dataset_revision", &benchmark.dataset_revision),
        ("run.hypothesis", &manifest.run.hypothesis),
    ] {
        check_nonempty(source, field, value)?;
    }
    let task_names = validate_trials_and_tasks(manifest, source)?;
    validate_canaries(manifest, &task_names, source)?;
    check_class_shape(manifest, source)?;
    validate_group_entries(manifest, source)?;
    check_evaluation_groups(manifest, source)?;
    check_own_resources(manifest, source)?;
    validate_aws(manifest, source)?;
    validate_hosts_and_tags(manifest, source)?;
    validate_software(manifest, source)?;
    validate_harbor(manifest, source)?;
    validate_routes(manifest, source)?;
    validate_prices(manifest, source)?;
    check_every_route_priced(manifest, source)?;
    validate_limits_and_method(manifest, source)?;
    Ok(())
}

/// Trial identities and tasks: bounded, labels, unique, content hashes.
/// Returns the task names.
fn validate_trials_and_tasks<'a>(
    manifest: &'a ManifestFile,
    source: &str,
) -> Result<BTreeSet<&'a str>> {
    let cases = &manifest.cases;
    if cases.tasks.len() > TASKS_MAX {
        return Err(input_error(
            source,
            "cases.tasks",
            format!("at most {TASKS_MAX} tasks, got {}", cases.tasks.len()),
        ));
    }
    if cases.trials.is_empty() || cases.trials.len() > TRIALS_MAX {
        return Err(input_error(
            source,
            "cases.trials",
            format!(
                "must list 1 to {TRIALS_MAX} trial identities, got {}",
                cases.trials.len()
            ),
        ));
    }
    let mut trials = BTreeSet::new();
    for (i, trial) in cases.trials.iter().enumerate() {
        check_label(source, &format!("cases.trials[{i}]"), trial)?;
        if !trials.insert(trial) {
            return Err(input_error(
                source,
                &format!("cases.trials[{i}]"),
                format!("trial {trial:?} is listed twice"),
            ));
        }
    }
    let mut task_names = BTreeSet::new();
    for (i, task) in cases.tasks.iter().enumerate() {
        check_label(source, &format!("cases.tasks[{i}].name"), &task.name)?;
        check_hex(
            source,
            &format!("cases.tasks[{i}].content_sha256"),
            &task.content_sha256,
            32,
        )?;
        if !task_names.insert(task.name.as_str()) {
            return Err(input_error(
                source,
                &format!("cases.tasks[{i}].name"),
                format!("task {:?} is listed twice", task.name),
            ));
        }
    }
    Ok(task_names)
}

/// Canary identities: outside the scored tasks (GATE-8), in a canary or
/// preflight group of this manifest, each listed once.
fn validate_canaries(
    manifest: &ManifestFile,
    task_names: &BTreeSet<&str>,
    source: &str,
) -> Result<()> {
    let mut canaries = BTreeSet::new();
    for (i, canary) in manifest.cases.canaries.iter().enumerate() {
        let field = |name: &str| format!("cases.canaries[{i}].{name}");
        check_label(source, &field("task"), &canary.task)?;
        check_label(source, &field("trial"), &canary.trial)?;
        check_hex(source, &field("content_sha256"), &canary.content_sha256, 32)?;
        if task_names.contains(canary.task.as_str()) {
            return Err(refused(Rule::Gate8, source, &field("task"), format!("canary task {:?} is a scored task; canaries use tasks outside the scored manifest", canary.task)));
        }
        let declared = manifest.groups.iter().any(|g| g.name == canary.group);
        if !is_non_evaluation(&canary.group) || !declared {
            return Err(input_error(
                source,
                &field("group"),
                format!(
                    "{:?} is not a canary/preflight group of this manifest",
                    canary.group
                ),
            ));
        }
        if !canaries.insert((&canary.group, &canary.task, &canary.trial)) {
            return Err(input_error(
                source,
                &field("trial"),
                "this canary identity is listed twice",
            ));
        }
    }
    Ok(())
}

/// The task and trial counts of the run class (CLASS-1).
fn check_class_shape(manifest: &ManifestFile, source: &str) -> Result<()> {
    let cases = &manifest.cases;
    let (tasks, trials) = (cases.tasks.len(), cases.trials.len());
    let class_problem = match manifest.run.class {
        RunClass::Canary if tasks != 0 || cases.canaries.is_empty() => {
            Some(format!("a canary lineage has no scored tasks and at least one canary identity; got {tasks} tasks and {} canaries", cases.canaries.len()))
        }
        RunClass::MechanismIteration if !(MECHANISM_TASKS_MIN..=MECHANISM_TASKS_MAX).contains(&tasks) || trials != 1 => Some(format!(
            "a mechanism iteration has {MECHANISM_TASKS_MIN} to {MECHANISM_TASKS_MAX} tasks with exactly 1 trial each; got {tasks} tasks x {trials} trials"
        )),
        RunClass::ReplicatedExperiment if tasks == 0 || trials < REPLICATED_TRIALS_MIN => Some(format!(
            "a replicated experiment has at least {REPLICATED_TRIALS_MIN} trials per case; got {tasks} tasks x {trials} trials"
        )),
        RunClass::PublicReproduction if tasks != PUBLIC_TASKS || trials != PUBLIC_TRIALS => Some(format!(
            "a public reproduction needs all {PUBLIC_TASKS} tasks x exactly {PUBLIC_TRIALS} trials; got {tasks} tasks x {trials} trials"
        )),
        _ => None,
    };
    if let Some(problem) = class_problem {
        let problem = match legal_alternatives(manifest.run.class, tasks, trials) {
            Some(instead) => format!("{problem}; instead: {instead}"),
            None => problem,
        };
        return Err(refused(Rule::Class1, source, "run.class", problem));
    }
    Ok(())
}

/// What the operator can run instead of a `tasks` x `trials` shape its
/// class refuses (CLASS-1): each legal shape within reach of this task
/// list. `None` without tasks (no scored class fits).
fn legal_alternatives(class: RunClass, tasks: usize, trials: usize) -> Option<String> {
    if tasks == 0 {
        return None;
    }
    let mut instead = Vec::new();
    if tasks <= PUBLIC_TASKS {
        let missing = PUBLIC_TASKS - tasks;
        let skip = if missing > 0 {
            format!(" ({missing} more; a task refused by security policy stays listed and becomes a validated skip, CASE-6, counting 0 of N)")
        } else {
            String::new()
        };
        instead.push(format!(
            "a public reproduction of all {PUBLIC_TASKS} tasks{skip} x exactly {PUBLIC_TRIALS} trials"
        ));
    }
    if !(class == RunClass::ReplicatedExperiment && trials >= REPLICATED_TRIALS_MIN) {
        instead.push(format!(
            "a replicated experiment of these {tasks} tasks x at least {REPLICATED_TRIALS_MIN} trials"
        ));
    }
    if (MECHANISM_TASKS_MIN..=MECHANISM_TASKS_MAX).contains(&tasks) {
        instead.push(format!(
            "a mechanism iteration of these {tasks} tasks x exactly 1 trial"
        ));
    } else if tasks > MECHANISM_TASKS_MAX {
        instead.push(format!(
            "a mechanism iteration of {MECHANISM_TASKS_MIN} to {MECHANISM_TASKS_MAX} of them x exactly 1 trial"
        ));
    }
    Some(format!(
        "{} (each a different experiment, frozen anew: CLASS-3)",
        instead.join("; or ")
    ))
}

/// Each group on its own: bounded count, label, unique name, an
/// evaluation or canary/preflight name (LINEAGE-1), ports and paths.
fn validate_group_entries(manifest: &ManifestFile, source: &str) -> Result<()> {
    let groups = &manifest.groups;
    if groups.is_empty() || groups.len() > GROUPS_MAX {
        return Err(input_error(
            source,
            "groups",
            format!("must list 1 to {GROUPS_MAX} groups, got {}", groups.len()),
        ));
    }
    let mut names = BTreeSet::new();
    for (i, group) in groups.iter().enumerate() {
        let field = |name: &str| format!("groups[{i}].{name}");
        check_label(source, &field("name"), &group.name)?;
        if !names.insert(group.name.as_str()) {
            return Err(input_error(
                source,
                &field("name"),
                format!("group {:?} is listed twice", group.name),
            ));
        }
        if !is_non_evaluation(&group.name) && !EVALUATION_GROUPS.contains(&group.name.as_str()) {
            return Err(refused(Rule::Lineage1, source, &field("name"), format!(
                "{:?} is neither an evaluation group (control, r1, r2, r3) nor a canary-*/preflight-* group", group.name)));
        }
        if group.ports.is_empty() || group.ports.contains(&0) {
            return Err(input_error(
                source,
                &field("ports"),
                "must list at least one non-zero port",
            ));
        }
        for (name, value) in [
            ("db_path", &group.db_path),
            ("out_dir", &group.out_dir),
            ("daemon_log", &group.daemon_log),
            ("trace_path", &group.trace_path),
            ("decision_path", &group.decision_path),
            ("outcome_path", &group.outcome_path),
        ] {
            check_nonempty(source, &field(name), value)?;
        }
        check_label(source, &field("job_name"), &group.job_name)?;
    }
    Ok(())
}

/// The evaluation groups a lineage targets, in order (LINEAGE-1): none for
/// a canary lineage, else control, r1, r2 [, r3].
fn check_evaluation_groups(manifest: &ManifestFile, source: &str) -> Result<()> {
    let evaluation = manifest.evaluation_groups();
    let ok = match manifest.run.class {
        RunClass::Canary => evaluation.is_empty(),
        _ => evaluation == EVALUATION_GROUPS[..3] || evaluation == EVALUATION_GROUPS[..],
    };
    if !ok {
        let want = if manifest.run.class == RunClass::Canary {
            "no evaluation groups"
        } else {
            "control, r1, r2 or control, r1, r2, r3, in that order"
        };
        return Err(refused(
            Rule::Lineage1,
            source,
            "groups",
            format!("the evaluation groups are {evaluation:?}; a lineage targets {want}"),
        ));
    }
    Ok(())
}

/// FREEZE-4 inside the lineage: every group's resources are its own; only
/// r1..r3 share the policy database (LINEAGE-8).
fn check_own_resources(manifest: &ManifestFile, source: &str) -> Result<()> {
    let policy_dbs: BTreeSet<&str> = manifest
        .groups
        .iter()
        .filter(|g| g.name.starts_with('r'))
        .map(|g| g.db_path.as_str())
        .collect();
    if policy_dbs.len() > 1 {
        return Err(refused(
            Rule::Lineage8,
            source,
            "groups",
            "r1..r3 must share one policy database path (db_path)",
        ));
    }
    let mut claims: BTreeMap<String, String> = BTreeMap::new();
    for (resource, field) in group_resources(manifest) {
        if let Some(first) = claims.insert(resource.clone(), field.clone()) {
            return Err(refused(
                Rule::Freeze4,
                source,
                &field,
                format!("{resource} is already used by {first}; every group needs its own"),
            ));
        }
    }
    Ok(())
}

/// Every resource a group claims as (resource, field path), in manifest
/// order; the rounds' shared policy database is claimed once, last.
fn group_resources(manifest: &ManifestFile) -> Vec<(String, String)> {
    let is_round = |name: &str| name.starts_with('r') && EVALUATION_GROUPS.contains(&name);
    let mut own: Vec<(String, String)> = Vec::new();
    for (i, group) in manifest.groups.iter().enumerate() {
        own.extend(
            group
                .ports
                .iter()
                .enumerate()
                .map(|(j, port)| (format!("port {port}"), format!("groups[{i}].ports[{j}]"))),
        );
        for (name, value) in [
            ("out_dir", &group.out_dir),
            ("daemon_log", &group.daemon_log),
            ("trace_path", &group.trace_path),
            ("decision_path", &group.decision_path),
            ("outcome_path", &group.outcome_path),
            ("db_path", &group.db_path),
        ] {
            // The one shared thing: r1..r3's policy database, claimed once below.
            if !(name == "db_path" && is_round(&group.name)) {
                own.push((format!("path {value}"), format!("groups[{i}].{name}")));
            }
        }
        own.push((
            format!("job name {}", group.job_name),
            format!("groups[{i}].job_name"),
        ));
    }
    let first_round = manifest
        .groups
        .iter()
        .enumerate()
        .find(|(_, g)| is_round(&g.name));
    if let Some((i, group)) = first_round {
        own.push((
            format!("path {}", group.db_path),
            format!("groups[{i}].db_path"),
        ));
    }
    own
}

/// The AWS identity selector (GATE-1), the region and the quota code.
fn validate_aws(manifest: &ManifestFile, source: &str) -> Result<()> {
    let aws = &manifest.aws;
    let selectors = usize::from(aws.profile.is_some())
        + usize::from(aws.assume_role)
        + usize::from(aws.instance_profile);
    if selectors != 1 {
        return Err(refused(Rule::Gate1, source, "aws", format!(
            "exactly one explicit identity selector (profile, assume_role or instance_profile) is required, got {selectors}")));
    }
    if let Some(profile) = &aws.profile {
        if profile.is_empty() || profile == "default" {
            return Err(refused(Rule::Gate1, source, "aws.profile", "a named profile other than \"default\" is required; the ambient default is never used"));
        }
        check_label(source, "aws.profile", profile)?;
    }
    check_label(source, "aws.region", &aws.region)?;
    if aws.quota_code != EC2_VCPU_QUOTA_CODE {
        return Err(input_error(
            source,
            "aws.quota_code",
            format!(
                "must be {EC2_VCPU_QUOTA_CODE} (Standard On-Demand vCPUs), got {:?}",
                aws.quota_code
            ),
        ));
    }
    Ok(())
}

/// `[central.launch]`: only for a provisioned host; a subnet, 1 to
/// `CENTRAL_SECURITY_GROUPS_MAX` security groups, a ready timeout of 1 s to
/// `CENTRAL_READY_TIMEOUT_SEC_MAX`.
pub(super) fn central_launch(
    manifest: &ManifestFile,
    launch: Option<super::CentralLaunchToml>,
    source: &str,
) -> Result<Option<CentralLaunch>> {
    use crate::limits::{CENTRAL_READY_TIMEOUT_SEC_MAX, CENTRAL_SECURITY_GROUPS_MAX};
    let Some(launch) = launch else {
        return Ok(None);
    };
    if manifest.central.mode != CentralMode::Provision {
        return Err(input_error(
            source,
            "central.launch",
            "only a provisioned central host is launched; a reused one is checked, never launched",
        ));
    }
    check_label(source, "central.launch.subnet_id", &launch.subnet_id)?;
    let groups = &launch.security_group_ids;
    if groups.is_empty() || groups.len() > CENTRAL_SECURITY_GROUPS_MAX {
        return Err(input_error(
            source,
            "central.launch.security_group_ids",
            format!(
                "{} security groups; give 1 to {CENTRAL_SECURITY_GROUPS_MAX}",
                groups.len()
            ),
        ));
    }
    for g in groups {
        check_label(source, "central.launch.security_group_ids", g)?;
    }
    if !(1..=CENTRAL_READY_TIMEOUT_SEC_MAX).contains(&launch.ready_timeout_sec) {
        return Err(input_error(
            source,
            "central.launch.ready_timeout_sec",
            format!(
                "{} s; give 1 to {CENTRAL_READY_TIMEOUT_SEC_MAX}",
                launch.ready_timeout_sec
            ),
        ));
    }
    Ok(Some(CentralLaunch::from(launch)))
}

/// `[[cases.excluded]]` (CLASS-1): each a label, not a task of the list,
/// named once, with a reason of 1 to `EXCLUSION_REASON_BYTES_MAX` bytes; at
/// most `TASKS_MAX`.
pub(super) fn excluded_tasks(
    manifest: &ManifestFile,
    excluded: Vec<super::ExcludedTaskToml>,
    source: &str,
) -> Result<Vec<ExcludedTask>> {
    use crate::limits::EXCLUSION_REASON_BYTES_MAX;
    if excluded.len() > TASKS_MAX {
        return Err(input_error(
            source,
            "cases.excluded",
            format!("{} tasks; at most {TASKS_MAX}", excluded.len()),
        ));
    }
    let mut seen = BTreeSet::new();
    let mut out = Vec::with_capacity(excluded.len());
    for (i, e) in excluded.into_iter().enumerate() {
        let field = format!("cases.excluded[{i}]");
        check_label(source, &format!("{field}.task"), &e.task)?;
        if manifest.cases.tasks.iter().any(|t| t.name == e.task) {
            return Err(input_error(
                source,
                &format!("{field}.task"),
                format!(
                    "{:?} is in cases.tasks; a task is either run or excluded before the run",
                    e.task
                ),
            ));
        }
        if !seen.insert(e.task.clone()) {
            return Err(input_error(
                source,
                &format!("{field}.task"),
                format!("{:?} is excluded twice", e.task),
            ));
        }
        if e.reason.trim().is_empty() || e.reason.len() > EXCLUSION_REASON_BYTES_MAX {
            return Err(input_error(
                source,
                &format!("{field}.reason"),
                format!(
                    "must be 1 to {EXCLUSION_REASON_BYTES_MAX} bytes, got {}",
                    e.reason.len()
                ),
            ));
        }
        out.push(ExcludedTask {
            task: e.task,
            reason: e.reason,
        });
    }
    Ok(out)
}

/// The central host, the sandbox shape and the resource tags.
fn validate_hosts_and_tags(manifest: &ManifestFile, source: &str) -> Result<()> {
    let central = &manifest.central;
    let sandbox = &manifest.sandbox;
    if central.mode == CentralMode::Reuse && central.instance_id.is_none() {
        return Err(input_error(
            source,
            "central.instance_id",
            "a reused central host needs its instance id",
        ));
    }
    for (field, value) in [
        ("central.ami", &central.ami),
        ("central.instance_type", &central.instance_type),
        ("central.role_tag_value", &central.role_tag_value),
        ("central.daemon_host", &central.daemon_host),
        ("sandbox.ami", &sandbox.ami),
        ("sandbox.instance_type", &sandbox.instance_type),
        ("sandbox.network", &sandbox.network),
    ] {
        check_nonempty(source, field, value)?;
    }
    if central.vcpu == 0 || sandbox.vcpu == 0 {
        return Err(input_error(
            source,
            "sandbox.vcpu",
            "vcpu counts must be at least 1",
        ));
    }
    let tags = &manifest.tags;
    for (field, value) in [
        ("tags.run_key", &tags.run_key),
        ("tags.run_value", &tags.run_value),
        ("tags.role_key", &tags.role_key),
        ("tags.sandbox_role_value", &tags.sandbox_role_value),
        ("tags.case_key", &tags.case_key),
        ("tags.trial_key", &tags.trial_key),
    ] {
        check_nonempty(source, field, value)?;
    }
    Ok(())
}

/// The pinned BitRouter binary, its config per group and the source trees.
fn validate_software(manifest: &ManifestFile, source: &str) -> Result<()> {
    let software = &manifest.software;
    check_hex(
        source,
        "software.bitrouter_binary_sha256",
        &software.bitrouter_binary_sha256,
        32,
    )?;
    if !["x86_64", "aarch64"].contains(&software.bitrouter_arch.as_str()) {
        return Err(input_error(
            source,
            "software.bitrouter_arch",
            format!(
                "must be x86_64 or aarch64, got {:?}",
                software.bitrouter_arch
            ),
        ));
    }
    for group in &manifest.groups {
        let Some(hash) = software.bitrouter_config_sha256.get(&group.name) else {
            return Err(input_error(
                source,
                "software.bitrouter_config_sha256",
                format!("no config hash for group {:?}", group.name),
            ));
        };
        check_hex(
            source,
            &format!("software.bitrouter_config_sha256.{}", group.name),
            hash,
            32,
        )?;
    }
    for (i, tree) in software.sources.iter().enumerate() {
        let field = |name: &str| format!("software.sources[{i}].{name}");
        check_label(source, &field("name"), &tree.name)?;
        check_nonempty(source, &field("repo"), &tree.repo)?;
        if tree.commit.len() < 7 || !tree.commit.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(input_error(
                source,
                &field("commit"),
                format!("must be a git commit (hex), got {:?}", tree.commit),
            ));
        }
        if let Some(patch) = &tree.patch_sha256 {
            check_hex(source, &field("patch_sha256"), patch, 32)?;
        }
    }
    Ok(())
}

/// Harbor and Terminus 2: no Harbor retries (CASE-5), names, versions and
/// timeouts.
fn validate_harbor(manifest: &ManifestFile, source: &str) -> Result<()> {
    let harbor = &manifest.harbor;
    let software = &manifest.software;
    if harbor.retries != 0 {
        return Err(refused(Rule::Case5, source, "harbor.retries", format!(
            "Harbor's own retries must stay 0 (a Harbor retry reruns a started identity), got {}", harbor.retries)));
    }
    for (field, value) in [
        ("harbor.agent", &harbor.agent),
        ("harbor.local_api_key", &harbor.local_api_key),
        ("harbor.jobs_dir", &harbor.jobs_dir),
        ("software.harbor_version", &software.harbor_version),
        ("software.terminus_version", &software.terminus_version),
    ] {
        check_nonempty(source, field, value)?;
    }
    if harbor.agent_timeout_sec == 0 || harbor.verifier_timeout_sec == 0 {
        return Err(input_error(
            source,
            "harbor.agent_timeout_sec",
            "timeouts must be at least 1 second",
        ));
    }
    Ok(())
}

/// One route per tier, each named in full, and a strong route.
fn validate_routes(manifest: &ManifestFile, source: &str) -> Result<()> {
    let mut tiers = BTreeSet::new();
    for (i, route) in manifest.routes.iter().enumerate() {
        if !tiers.insert(route.tier) {
            return Err(input_error(
                source,
                &format!("routes[{i}].tier"),
                format!("tier {:?} has two routes", route.tier),
            ));
        }
        for (name, value) in [
            ("provider", &route.provider),
            ("model", &route.model),
            ("credential_class", &route.credential_class),
            ("gate_target", &route.gate_target),
        ] {
            check_nonempty(source, &format!("routes[{i}].{name}"), value)?;
        }
    }
    if manifest.route(Tier::Strong).is_none() {
        return Err(input_error(
            source,
            "routes",
            "a strong route is required (control resolves every request to it)",
        ));
    }
    Ok(())
}

/// Price records: USD, no negative rate (SETTLE-3), a source and an
/// effective period.
fn validate_prices(manifest: &ManifestFile, source: &str) -> Result<()> {
    for (i, price) in manifest.prices.iter().enumerate() {
        let field = |name: &str| format!("prices[{i}].{name}");
        if price.currency != "USD" {
            return Err(input_error(
                source,
                &field("currency"),
                format!("must be USD, got {:?}", price.currency),
            ));
        }
        for (name, rate) in [
            ("uncached_input", Some(price.uncached_input)),
            ("cache_read", price.cache_read),
            ("cache_write", price.cache_write),
            ("output", Some(price.output)),
        ] {
            if rate.is_some_and(|d| d.is_negative()) {
                return Err(refused(
                    Rule::Settle3,
                    source,
                    &field(name),
                    "a rate is never negative",
                ));
            }
        }
        check_nonempty(source, &field("source"), &price.source)?;
        crate::schema::time::check_date(source, &field("effective_from"), &price.effective_from)?;
        if let Some(to) = &price.effective_to {
            crate::schema::time::check_date(source, &field("effective_to"), to)?;
            if to <= &price.effective_from {
                return Err(input_error(
                    source,
                    &field("effective_to"),
                    "must be after effective_from",
                ));
            }
        }
    }
    Ok(())
}

/// Every route has a price record of its provider, model and credential
/// class (FREEZE-8).
fn check_every_route_priced(manifest: &ManifestFile, source: &str) -> Result<()> {
    for (i, route) in manifest.routes.iter().enumerate() {
        let covered = manifest.prices.iter().any(|price| {
            price.provider == route.provider
                && price.model == route.model
                && price.credential_class == route.credential_class
        });
        if !covered {
            return Err(refused(
                Rule::Freeze8,
                source,
                &format!("routes[{i}]"),
                format!(
                    "no price record for {}/{} ({}); every route needs one",
                    route.provider, route.model, route.credential_class
                ),
            ));
        }
    }
    Ok(())
}

/// Limits at least 1, and the tuning and held-out task lists (LINEAGE-7).
fn validate_limits_and_method(manifest: &ManifestFile, source: &str) -> Result<()> {
    let limits = &manifest.limits;
    if limits.concurrency == 0 {
        return Err(input_error(
            source,
            "limits.concurrency",
            "must be at least 1",
        ));
    }
    if limits.gate_freshness_sec == 0 {
        return Err(input_error(
            source,
            "limits.gate_freshness_sec",
            "must be at least 1 second",
        ));
    }
    if limits.reconciliation_attempts == 0 {
        return Err(input_error(
            source,
            "limits.reconciliation_attempts",
            "must be at least 1",
        ));
    }
    let tasks: BTreeSet<&str> = manifest
        .cases
        .tasks
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    let method = &manifest.method;
    for (field, list) in [
        ("method.tuning_tasks", &method.tuning_tasks),
        ("method.held_out_tasks", &method.held_out_tasks),
    ] {
        for (i, task) in list.iter().enumerate() {
            if !tasks.contains(task.as_str()) {
                return Err(input_error(
                    source,
                    &format!("{field}[{i}]"),
                    format!("{task:?} is not a task of cases.tasks"),
                ));
            }
        }
    }
    if let Some(task) = method
        .tuning_tasks
        .iter()
        .find(|t| method.held_out_tasks.contains(t))
    {
        return Err(refused(
            Rule::Lineage7,
            source,
            "method.held_out_tasks",
            format!("{task:?} is both a tuning and a held-out task"),
        ));
    }
    check_nonempty(source, "method.interval_method", &method.interval_method)?;
    Ok(())
}

/// The private file's own checks and its agreement with the public one
/// (lineage, account, ARNs, the role of `assume_role`, a location for every
/// route's secret that is never the secret itself, FREEZE-2). Returns its
/// commitment key.
pub(super) fn validate_private(
    public: &ManifestFile,
    private: &PrivateToml,
    source: &str,
) -> Result<[u8; 32]> {
    if private.lineage != public.lineage {
        return Err(input_error(
            source,
            "lineage",
            crate::schema::secrets::withhold(&format!(
                "{:?} is not the public manifest's lineage {:?}",
                private.lineage, public.lineage
            )),
        ));
    }
    let key = commitment_key(&private.commitment_key, source)?;
    let aws = &private.aws;
    if aws.account.len() != 12 || !aws.account.bytes().all(|b| b.is_ascii_digit()) {
        return Err(input_error(
            source,
            "aws.account",
            "must be a 12-digit AWS account id",
        ));
    }
    for (field, arn) in [
        ("aws.principal_arn", Some(&aws.principal_arn)),
        ("aws.role_arn", aws.role_arn.as_ref()),
    ] {
        if let Some(arn) = arn {
            if !arn.starts_with("arn:aws") || arn.split(':').nth(4) != Some(aws.account.as_str()) {
                return Err(input_error(
                    source,
                    field,
                    "must be an ARN in the manifest's account",
                ));
            }
        }
    }
    if public.aws.assume_role != aws.role_arn.is_some() {
        return Err(input_error(
            source,
            "aws.role_arn",
            "is required exactly when the public manifest selects assume_role",
        ));
    }
    for route in &public.routes {
        let Some(location) = private.secret_locations.get(&route.tier) else {
            return Err(input_error(
                source,
                "secret_locations",
                format!("no location for the {:?} route's secret", route.tier),
            ));
        };
        if !is_secret_location(location) || crate::schema::secrets::scan(location).is_some() {
            return Err(refused(
                Rule::Freeze2,
                source,
                &format!("secret_locations.{:?}", route.tier),
                "must say where the secret lives (env:NAME or file:/absolute/path), never the secret itself",
            ));
        }
    }
    Ok(key)
}

/// `env:NAME` (upper-case letters, digits, `_`) or `file:/absolute/path`.
fn is_secret_location(location: &str) -> bool {
    let env = location.strip_prefix("env:").is_some_and(|name| {
        !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
    });
    let file = location
        .strip_prefix("file:")
        .is_some_and(|path| path.starts_with('/'));
    env || file
}
