//! The EC2 side: paginated Describe* queries (never truncated), the exact
//! run-tag residue audit (CLEAN-1), the live sandbox count, and the
//! terminate and delete calls (CLEAN-3).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use aws_sdk_ec2::types::Filter;

use super::session::Session;
use super::{
    filter, sdk_code, DESCRIBE_PAGES_MAX, FILTER_VALUES_MAX, INSTANCES_PER_PAGE, TERMINATE_POLL_MS,
    VOLUMES_PER_PAGE,
};
use crate::error::Result;
use crate::gates::rules::{
    clean, AwsError, LiveInstance, RunTags, Termination, LIVE_INSTANCE_STATES,
};
use crate::schema::events::FoundResource;
use crate::schema::manifest::ManifestFile;

/// A volume or network interface: id, state/status, attached instances.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachable {
    pub id: String,
    /// Its state (volumes) or status (interfaces).
    pub state: String,
    /// Instance ids it is attached to.
    pub attached_to: Vec<String>,
}

impl Session {
    /// Every page of a paginated Describe call, at most `DESCRIBE_PAGES_MAX`:
    /// `page` fetches one page from a token and returns its items and the
    /// next token. A longer answer is refused, never truncated.
    fn all_pages<T>(
        op: &str,
        mut page: impl FnMut(Option<String>) -> Result<(Vec<T>, Option<String>), AwsError>,
    ) -> Result<Vec<T>, AwsError> {
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        for _ in 0..DESCRIBE_PAGES_MAX {
            let (items, next) = page(token.take())?;
            out.extend(items);
            match next.filter(|t| !t.is_empty()) {
                Some(t) => token = Some(t),
                None => return Ok(out),
            }
        }
        Err(AwsError(format!(
            "{op}: more than {DESCRIBE_PAGES_MAX} pages; refusing a truncated answer"
        )))
    }

    /// DescribeInstances with these filters, every page.
    pub fn instances(&self, filters: &[Filter]) -> Result<Vec<LiveInstance>, AwsError> {
        const OP: &str = "ec2 DescribeInstances";
        Self::all_pages(OP, |token| {
            let page = self
                .rt
                .block_on(
                    self.ec2
                        .describe_instances()
                        .set_filters(Some(filters.to_vec()))
                        .max_results(INSTANCES_PER_PAGE)
                        .set_next_token(token)
                        .send(),
                )
                .map_err(|e| AwsError::of(OP, e))?;
            let items = page
                .reservations()
                .iter()
                .flat_map(|r| r.instances())
                .filter_map(|i| {
                    Some(LiveInstance {
                        id: i.instance_id()?.to_string(),
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
                    })
                })
                .collect();
            Ok((items, page.next_token().map(str::to_string)))
        })
    }

    /// DescribeVolumes with these filters: (id, state, attached instance ids).
    pub fn volumes(&self, filters: &[Filter]) -> Result<Vec<Attachable>, AwsError> {
        const OP: &str = "ec2 DescribeVolumes";
        Self::all_pages(OP, |token| {
            let page = self
                .rt
                .block_on(
                    self.ec2
                        .describe_volumes()
                        .set_filters(Some(filters.to_vec()))
                        .max_results(VOLUMES_PER_PAGE)
                        .set_next_token(token)
                        .send(),
                )
                .map_err(|e| AwsError::of(OP, e))?;
            let items = page
                .volumes()
                .iter()
                .filter_map(|v| {
                    Some(Attachable {
                        id: v.volume_id()?.to_string(),
                        state: v
                            .state()
                            .map(|s| s.as_str().to_string())
                            .unwrap_or_default(),
                        attached_to: v
                            .attachments()
                            .iter()
                            .filter_map(|a| a.instance_id().map(str::to_string))
                            .collect(),
                    })
                })
                .collect();
            Ok((items, page.next_token().map(str::to_string)))
        })
    }

    /// DescribeNetworkInterfaces with these filters.
    pub fn network_interfaces(&self, filters: &[Filter]) -> Result<Vec<Attachable>, AwsError> {
        const OP: &str = "ec2 DescribeNetworkInterfaces";
        Self::all_pages(OP, |token| {
            let page = self
                .rt
                .block_on(
                    self.ec2
                        .describe_network_interfaces()
                        .set_filters(Some(filters.to_vec()))
                        .max_results(VOLUMES_PER_PAGE)
                        .set_next_token(token)
                        .send(),
                )
                .map_err(|e| AwsError::of(OP, e))?;
            let items = page
                .network_interfaces()
                .iter()
                .filter_map(|n| {
                    Some(Attachable {
                        id: n.network_interface_id()?.to_string(),
                        state: n
                            .status()
                            .map(|s| s.as_str().to_string())
                            .unwrap_or_default(),
                        attached_to: n
                            .attachment()
                            .and_then(|a| a.instance_id())
                            .map(str::to_string)
                            .into_iter()
                            .collect(),
                    })
                })
                .collect();
            Ok((items, page.next_token().map(str::to_string)))
        })
    }

    /// TerminateInstances of one instance: its new state.
    pub fn terminate_instance(&self, id: &str) -> Result<String, AwsError> {
        let out = self
            .rt
            .block_on(self.ec2.terminate_instances().instance_ids(id).send())
            .map_err(|e| AwsError(clean(&format!("ec2 TerminateInstances: {}", sdk_code(&e)))))?;
        Ok(out
            .terminating_instances()
            .iter()
            .find(|c| c.instance_id() == Some(id))
            .and_then(|c| c.current_state())
            .and_then(|s| s.name())
            .map_or("unknown".into(), |n| n.as_str().to_string()))
    }

    /// DeleteVolume.
    pub fn delete_volume(&self, id: &str) -> Result<(), AwsError> {
        self.rt
            .block_on(self.ec2.delete_volume().volume_id(id).send())
            .map(|_| ())
            .map_err(|e| AwsError(clean(&format!("ec2 DeleteVolume: {}", sdk_code(&e)))))
    }

    /// DeleteNetworkInterface.
    pub fn delete_network_interface(&self, id: &str) -> Result<(), AwsError> {
        self.rt
            .block_on(
                self.ec2
                    .delete_network_interface()
                    .network_interface_id(id)
                    .send(),
            )
            .map(|_| ())
            .map_err(|e| {
                AwsError(clean(&format!(
                    "ec2 DeleteNetworkInterface: {}",
                    sdk_code(&e)
                )))
            })
    }
}

impl RunTags {
    fn filters(&self) -> Vec<Filter> {
        vec![
            filter(&format!("tag:{}", self.run_key), [self.run_value.clone()]),
            filter(&format!("tag:{}", self.role_key), self.role_values.clone()),
        ]
    }
}

/// Live run-tagged sandboxes (the monitor's and the residue gate's count):
/// (id, state), sorted.
pub fn live_sandboxes(
    session: &Session,
    m: &ManifestFile,
) -> Result<Vec<(String, String)>, AwsError> {
    let mut out: Vec<(String, String)> = live_sandbox_instances(session, m)?
        .into_iter()
        .map(|i| (i.id, i.state))
        .collect();
    out.sort();
    out.dedup();
    Ok(out)
}

/// Live run-tagged sandboxes with their tags (the residue gate splits off
/// the running cases' own, RUN-1).
pub fn live_sandbox_instances(
    session: &Session,
    m: &ManifestFile,
) -> Result<Vec<LiveInstance>, AwsError> {
    let mut f = RunTags::sandboxes(m).filters();
    f.push(filter("instance-state-name", LIVE_INSTANCE_STATES));
    session.instances(&f)
}

fn add_found(
    found: &mut BTreeMap<(String, String), (String, BTreeSet<String>)>,
    resource: &str,
    id: &str,
    state: &str,
    how: String,
) {
    found
        .entry((resource.to_string(), id.to_string()))
        .or_insert_with(|| (state.to_string(), BTreeSet::new()))
        .1
        .insert(how);
}

/// The exact-tag residue audit (CLEAN-1): instances in every non-terminated
/// state, volumes and network interfaces carrying the run tag AND a role
/// tag of the run; the tracked instance ids; and the volumes and interfaces
/// attached to every tracked or found instance (tag propagation differs by
/// resource type). `found_by` lists every way a resource was found, joined
/// by `,`: `run_tag`, `tracked_id`, `attachment_of:<instance id>`.
pub fn audit(
    session: &Session,
    tags: &RunTags,
    tracked: &BTreeSet<String>,
) -> Result<Vec<FoundResource>, AwsError> {
    let mut found = BTreeMap::new();
    let states = filter("instance-state-name", LIVE_INSTANCE_STATES);
    let mut by_tag = tags.filters();
    by_tag.push(states.clone());
    let mut instances: BTreeSet<String> = tracked.clone();
    for i in session.instances(&by_tag)? {
        add_found(&mut found, "instance", &i.id, &i.state, "run_tag".into());
        instances.insert(i.id);
    }
    let tracked_list: Vec<&String> = tracked.iter().collect();
    for chunk in tracked_list.chunks(FILTER_VALUES_MAX) {
        let f = [
            filter("instance-id", chunk.iter().map(|s| s.to_string())),
            states.clone(),
        ];
        for i in session.instances(&f)? {
            add_found(&mut found, "instance", &i.id, &i.state, "tracked_id".into());
        }
    }
    for v in session.volumes(&tags.filters())? {
        if v.state != "deleted" {
            add_found(&mut found, "volume", &v.id, &v.state, "run_tag".into());
        }
    }
    for n in session.network_interfaces(&tags.filters())? {
        add_found(
            &mut found,
            "network_interface",
            &n.id,
            &n.state,
            "run_tag".into(),
        );
    }
    let followed: Vec<&String> = instances.iter().collect();
    for chunk in followed.chunks(FILTER_VALUES_MAX) {
        let ids: Vec<String> = chunk.iter().map(|s| s.to_string()).collect();
        let f = [filter("attachment.instance-id", ids.clone())];
        for v in session.volumes(&f)? {
            for i in v.attached_to.iter().filter(|i| ids.contains(i)) {
                add_found(
                    &mut found,
                    "volume",
                    &v.id,
                    &v.state,
                    format!("attachment_of:{i}"),
                );
            }
        }
        for n in session.network_interfaces(&f)? {
            for i in n.attached_to.iter().filter(|i| ids.contains(i)) {
                add_found(
                    &mut found,
                    "network_interface",
                    &n.id,
                    &n.state,
                    format!("attachment_of:{i}"),
                );
            }
        }
    }
    Ok(found
        .into_iter()
        .map(|((resource, id), (state, how))| FoundResource {
            resource,
            id,
            state,
            found_by: how.into_iter().collect::<Vec<_>>().join(","),
        })
        .collect())
}

/// Terminates or deletes each planned resource, calling `record` after each
/// call with its answer (so every call is recorded as it happens). Between
/// instances and the rest it waits (bounded by `wait`) until the
/// terminated instances are gone, so their volumes and interfaces detach.
pub fn terminate(
    session: &Session,
    plan: &[FoundResource],
    wait: Duration,
    record: &mut dyn FnMut(&Termination) -> Result<()>,
) -> Result<Vec<Termination>> {
    let mut done = Vec::new();
    let mut instances = Vec::new();
    for r in plan.iter().filter(|r| r.resource == "instance") {
        let t = Termination {
            resource: r.clone(),
            action: "TerminateInstances".into(),
            answer: match session.terminate_instance(&r.id) {
                Ok(state) => format!("ok: {state}"),
                Err(e) => format!("error: {}", e.0),
            },
        };
        record(&t)?;
        instances.push(r.id.clone());
        done.push(t);
    }
    if !instances.is_empty() && plan.iter().any(|r| r.resource != "instance") {
        let deadline = Instant::now() + wait;
        loop {
            // Live instances left; a failed query ends the wait (the deletes
            // below then answer for themselves, and the audit that follows
            // is the truth).
            let left: Result<usize, AwsError> = instances
                .chunks(FILTER_VALUES_MAX)
                .map(|chunk| {
                    session
                        .instances(&[
                            filter("instance-id", chunk.to_vec()),
                            filter("instance-state-name", LIVE_INSTANCE_STATES),
                        ])
                        .map(|l| l.len())
                })
                .sum();
            if !matches!(left, Ok(n) if n > 0) || Instant::now() >= deadline {
                break;
            }
            let poll = Duration::from_millis(TERMINATE_POLL_MS)
                .min(deadline.saturating_duration_since(Instant::now()));
            std::thread::sleep(poll);
        }
    }
    for r in plan.iter().filter(|r| r.resource != "instance") {
        let (action, result) = match r.resource.as_str() {
            "volume" => ("DeleteVolume", session.delete_volume(&r.id)),
            _ => (
                "DeleteNetworkInterface",
                session.delete_network_interface(&r.id),
            ),
        };
        let t = Termination {
            resource: r.clone(),
            action: action.into(),
            answer: match result {
                Ok(()) => "ok: deleted".into(),
                Err(e) => format!("error: {}", e.0),
            },
        };
        record(&t)?;
        done.push(t);
    }
    Ok(done)
}
