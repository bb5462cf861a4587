//! The GATE-2 measurements: the vCPU quota (Service Quotas) and the vCPUs
//! of the region's pending and running instances (EC2).

use std::collections::{BTreeMap, BTreeSet};

use super::session::Session;
use super::{filter, INSTANCE_TYPES_PER_CALL};
use crate::gates::rules::{quota_numbers, AwsError, QuotaNumbers, QUOTA_INSTANCE_STATES};
use crate::schema::manifest::ManifestFile;

impl Session {
    /// Service Quotas GetServiceQuota(ec2, `code`), floored to whole vCPUs.
    pub fn vcpu_quota(&self, code: &str) -> Result<u64, AwsError> {
        let out = self
            .rt
            .block_on(
                self.quotas
                    .get_service_quota()
                    .service_code("ec2")
                    .quota_code(code)
                    .send(),
            )
            .map_err(|e| AwsError::of(&format!("service-quotas GetServiceQuota ec2 {code}"), e))?;
        let v = out.quota().and_then(|q| q.value()).ok_or_else(|| {
            AwsError(format!(
                "service-quotas GetServiceQuota ec2 {code} answered no value"
            ))
        })?;
        if !v.is_finite() || v < 0.0 || v > u64::MAX as f64 {
            return Err(AwsError(format!(
                "service-quotas GetServiceQuota ec2 {code} answered {v}, not a vcpu count"
            )));
        }
        Ok(v.floor() as u64)
    }

    /// vCPUs of each instance type (DescribeInstanceTypes `DefaultVCpus`).
    pub fn vcpus_by_type(
        &self,
        types: &BTreeSet<String>,
    ) -> Result<BTreeMap<String, u64>, AwsError> {
        let mut out = BTreeMap::new();
        let all: Vec<&String> = types.iter().collect();
        for chunk in all.chunks(INSTANCE_TYPES_PER_CALL) {
            let page = self
                .rt
                .block_on(
                    self.ec2
                        .describe_instance_types()
                        .set_instance_types(Some(
                            chunk
                                .iter()
                                .map(|t| aws_sdk_ec2::types::InstanceType::from(t.as_str()))
                                .collect(),
                        ))
                        .send(),
                )
                .map_err(|e| AwsError::of("ec2 DescribeInstanceTypes", e))?;
            for t in page.instance_types() {
                if let (Some(name), Some(v)) = (
                    t.instance_type(),
                    t.v_cpu_info().and_then(|v| v.default_v_cpus()),
                ) {
                    out.insert(name.as_str().to_string(), u64::try_from(v).unwrap_or(0));
                }
            }
        }
        Ok(out)
    }
}

/// Measures GATE-2 in the session's region for a wave of `slots`
/// sandboxes (RUN-1), the central host's vCPUs added when
/// `central_to_come` (GATE-2).
pub fn measure_quota(
    session: &Session,
    m: &ManifestFile,
    slots: u32,
    central_to_come: bool,
) -> Result<QuotaNumbers, AwsError> {
    let quota = session.vcpu_quota(&m.aws.quota_code)?;
    let live = session.instances(&[filter("instance-state-name", QUOTA_INSTANCE_STATES)])?;
    let types: BTreeSet<String> = live.iter().map(|i| i.instance_type.clone()).collect();
    let vcpus = session.vcpus_by_type(&types)?;
    quota_numbers(m, quota, &live, &vcpus, slots, central_to_come)
}
