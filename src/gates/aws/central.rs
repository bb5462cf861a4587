//! The central host on EC2 (FREEZE-8, CLEAN-1): its exact-tag and by-id
//! queries, its one launch (RunInstances with the frozen AMI, type, subnet,
//! security groups and tags, and an idempotency token), the bounded wait for
//! `running`, and the exact-tag count after its termination. What the
//! answers mean is judged in `crate::method::central`.

use std::time::{Duration, Instant};

use aws_sdk_ec2::types::{Filter, InstanceType, ResourceType, Tag, TagSpecification};

use super::session::Session;
use super::{filter, sdk_code};
use crate::gates::rules::{clean, AwsError, LIVE_INSTANCE_STATES};
use crate::schema::central::CentralInstance;
use crate::schema::manifest::{CentralLaunch, ManifestFile};

use crate::limits::CENTRAL_ANSWER_MAX;

impl Session {
    /// DescribeInstances with these filters, as central-host observations
    /// (one page; more than `CENTRAL_ANSWER_MAX` is refused).
    pub fn central_instances(&self, filters: &[Filter]) -> Result<Vec<CentralInstance>, AwsError> {
        const OP: &str = "ec2 DescribeInstances";
        let page = self
            .rt
            .block_on(
                self.ec2
                    .describe_instances()
                    .set_filters(Some(filters.to_vec()))
                    .send(),
            )
            .map_err(|e| AwsError(clean(&format!("{OP}: {}", sdk_code(&e)))))?;
        if page.next_token().is_some_and(|t| !t.is_empty()) {
            return Err(AwsError(format!(
                "{OP}: a central-host query answered more than one page"
            )));
        }
        let out: Vec<CentralInstance> = page
            .reservations()
            .iter()
            .flat_map(|r| r.instances())
            .filter_map(|i| {
                Some(CentralInstance {
                    id: i.instance_id()?.to_string(),
                    ami: i.image_id().unwrap_or_default().to_string(),
                    instance_type: i
                        .instance_type()
                        .map(|t| t.as_str().to_string())
                        .unwrap_or_default(),
                    state: i
                        .state()
                        .and_then(|s| s.name())
                        .map(|n| n.as_str().to_string())
                        .unwrap_or_default(),
                    tags: i
                        .tags()
                        .iter()
                        .filter_map(|t| Some((t.key()?.to_string(), t.value()?.to_string())))
                        .collect(),
                    private_ip: i.private_ip_address().map(str::to_string),
                    launch_time: i.launch_time().and_then(|t| {
                        t.fmt(aws_sdk_ec2::primitives::DateTimeFormat::DateTime)
                            .ok()
                    }),
                    subnet_id: i.subnet_id().map(str::to_string),
                })
            })
            .collect();
        if out.len() > CENTRAL_ANSWER_MAX {
            return Err(AwsError(format!(
                "{OP}: {} instances answered a central-host query; at most {CENTRAL_ANSWER_MAX} are read",
                out.len()
            )));
        }
        Ok(out)
    }

    /// RunInstances of the central host: one instance of the frozen AMI and
    /// type in the frozen subnet and security groups, tagged (instance and
    /// volume) with the run tag and the central role tag. `token` makes the
    /// call idempotent: EC2 answers a repeated token with the first launch.
    pub fn launch_central(
        &self,
        m: &ManifestFile,
        launch: &CentralLaunch,
        token: &str,
    ) -> Result<String, AwsError> {
        let tags: Vec<Tag> = [
            (&m.tags.run_key, &m.tags.run_value),
            (&m.tags.role_key, &m.central.role_tag_value),
        ]
        .into_iter()
        .map(|(k, v)| Tag::builder().key(k).value(v).build())
        .collect();
        let spec = |kind: ResourceType| {
            TagSpecification::builder()
                .resource_type(kind)
                .set_tags(Some(tags.clone()))
                .build()
        };
        let out = self
            .rt
            .block_on(
                self.ec2
                    .run_instances()
                    .image_id(&m.central.ami)
                    .instance_type(InstanceType::from(m.central.instance_type.as_str()))
                    .subnet_id(&launch.subnet_id)
                    .set_private_ip_address(
                        crate::schema::central::sandbox_address(&m.central.daemon_host)
                            .map(|a| a.to_string()),
                    )
                    .set_security_group_ids(Some(launch.security_group_ids.clone()))
                    .min_count(1)
                    .max_count(1)
                    .client_token(token)
                    .tag_specifications(spec(ResourceType::Instance))
                    .tag_specifications(spec(ResourceType::Volume))
                    .send(),
            )
            .map_err(|e| AwsError(clean(&format!("ec2 RunInstances: {}", sdk_code(&e)))))?;
        match out.instances() {
            [one] => one.instance_id().map(str::to_string).ok_or_else(|| {
                AwsError("ec2 RunInstances answered an instance without an id".into())
            }),
            other => Err(AwsError(format!(
                "ec2 RunInstances answered {} instances for a launch of one",
                other.len()
            ))),
        }
    }
}

/// The live (not terminated) instances carrying the run tag and the central
/// role tag.
pub fn tagged_central(
    session: &Session,
    m: &ManifestFile,
) -> Result<Vec<CentralInstance>, AwsError> {
    session.central_instances(&[
        filter(
            &format!("tag:{}", m.tags.run_key),
            [m.tags.run_value.clone()],
        ),
        filter(
            &format!("tag:{}", m.tags.role_key),
            [m.central.role_tag_value.clone()],
        ),
        filter("instance-state-name", LIVE_INSTANCE_STATES),
    ])
}

/// The instance `id`, if EC2 knows it (any state).
pub fn central_by_id(session: &Session, id: &str) -> Result<Option<CentralInstance>, AwsError> {
    Ok(session
        .central_instances(&[filter("instance-id", [id.to_string()])])?
        .into_iter()
        .find(|i| i.id == id))
}

/// Polls `id` every `poll` until it leaves `pending`, or `wait` passes: its
/// last observation (`None`: EC2 stopped knowing it).
pub fn wait_running(
    session: &Session,
    id: &str,
    wait: Duration,
    poll: Duration,
) -> Result<Option<CentralInstance>, AwsError> {
    let deadline = Instant::now() + wait;
    loop {
        let seen = central_by_id(session, id)?;
        let pending = seen.as_ref().is_some_and(|i| i.state == "pending");
        if !pending || Instant::now() >= deadline {
            return Ok(seen);
        }
        std::thread::sleep(poll.min(deadline.saturating_duration_since(Instant::now())));
    }
}

/// Polls the exact-tag query until it finds no live central host or `wait`
/// passes: how many it found last.
pub fn wait_gone(
    session: &Session,
    m: &ManifestFile,
    wait: Duration,
    poll: Duration,
) -> Result<usize, AwsError> {
    let deadline = Instant::now() + wait;
    loop {
        let n = tagged_central(session, m)?.len();
        if n == 0 || Instant::now() >= deadline {
            return Ok(n);
        }
        std::thread::sleep(poll.min(deadline.saturating_duration_since(Instant::now())));
    }
}
