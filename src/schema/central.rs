//! The central host as EC2 describes it, and how a `central_host` /
//! `central_teardown` check stores it in its details (FREEZE-8, GATE-2,
//! CLEAN-2). The detail keys are the stored format: `ledger-schema/EVENTS.md`
//! lists them.

use std::collections::BTreeMap;

crate::schema::named::named_enum! {
    /// What `central up` (or a pre-batch gate) did with the host it checked.
    pub enum CentralAction {
        /// Launched by this lineage (RunInstances), then observed running.
        Launched = "launched",
        /// Found by its exact run and role tags (a launch whose observation
        /// was never recorded: a killed `run`), then observed.
        Adopted = "adopted",
        /// The recorded (provision) or frozen (reuse) host, observed again.
        Checked = "checked",
    }
}

/// One instance as DescribeInstances answers for it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CentralInstance {
    pub id: String,
    pub ami: String,
    pub instance_type: String,
    /// Its state name (`pending`, `running`, ...).
    pub state: String,
    pub tags: BTreeMap<String, String>,
    /// Its private address, once it has one.
    pub private_ip: Option<String>,
    /// Its launch time (RFC 3339), as EC2 gives it.
    pub launch_time: Option<String>,
    /// The subnet it runs in.
    pub subnet_id: Option<String>,
}

/// Detail keys of a `central_host` check.
pub mod keys {
    /// `launched`, `adopted` or `checked`.
    pub const ACTION: &str = "action";
    /// The region queried.
    pub const REGION: &str = "region";
    /// The AMI observed.
    pub const AMI: &str = "ami";
    /// The instance type observed.
    pub const INSTANCE_TYPE: &str = "instance_type";
    /// The state observed.
    pub const STATE: &str = "state";
    /// The value of the frozen role tag key on the host.
    pub const ROLE_TAG: &str = "role_tag";
    /// The value of the frozen run tag key on the host.
    pub const RUN_TAG: &str = "run_tag";
    /// The private address.
    pub const PRIVATE_IP: &str = "private_ip";
    /// The launch time observed (RFC 3339, as EC2 gives it).
    pub const LAUNCH_TIME: &str = "launch_time";
    /// The subnet id observed.
    pub const SUBNET_ID: &str = "subnet_id";
    /// Each difference from the frozen host, `; `-separated (absent: none).
    pub const MISMATCHES: &str = "mismatches";
    /// Why the query could not answer.
    pub const ERROR: &str = "error";
    /// `central_teardown`: run- and role-tagged central hosts still live.
    pub const LIVE_COUNT: &str = "live_count";
    /// `central_teardown`: TerminateInstances' answer.
    pub const TERMINATE: &str = "terminate";
}

impl CentralInstance {
    /// Its details as a `central_host` check stores them: the frozen run
    /// and role tag keys' values only (other tags are not the ledger's).
    pub fn details(&self, run_key: &str, role_key: &str) -> BTreeMap<String, String> {
        let mut d = BTreeMap::from([
            (keys::AMI.to_string(), self.ami.clone()),
            (keys::INSTANCE_TYPE.to_string(), self.instance_type.clone()),
            (keys::STATE.to_string(), self.state.clone()),
        ]);
        for (key, tag) in [(keys::RUN_TAG, run_key), (keys::ROLE_TAG, role_key)] {
            if let Some(v) = self.tags.get(tag) {
                d.insert(key.to_string(), v.clone());
            }
        }
        for (key, v) in [
            (keys::PRIVATE_IP, &self.private_ip),
            (keys::LAUNCH_TIME, &self.launch_time),
            (keys::SUBNET_ID, &self.subnet_id),
        ] {
            if let Some(v) = v {
                d.insert(key.to_string(), v.clone());
            }
        }
        d
    }
}

/// The address every sandbox is given for the daemon (the frozen
/// `daemon_host` its TrialConfig renders) when it is an IP address a
/// sandbox can reach another host at: not loopback, not unspecified.
/// `method::central` requires the central host to hold it as its private
/// address (GATE-3); a provisioned host is launched with it. A DNS name, or the loopback
/// topology of a test lineage whose sandboxes run beside the daemon, is
/// not checked here.
pub fn sandbox_address(daemon_host: &str) -> Option<std::net::IpAddr> {
    let host = daemon_host.trim_start_matches('[').trim_end_matches(']');
    let ip: std::net::IpAddr = host.parse().ok()?;
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}
