//! Processes seen from `/proc`, for tests of process-group kills (RUN-4).

/// The live (not zombie or dead) processes of process group `pgid` on this
/// machine: fields 3 (state) and 5 (process group) of each
/// `/proc/PID/stat`, counted after the command name's last `)`.
pub fn group_members(pgid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            let Some(i) = stat.rfind(')') else {
                return false;
            };
            let f: Vec<&str> = stat[i + 1..].split_whitespace().collect();
            f.len() > 2 && f[2] == pgid.to_string() && f[0] != "Z" && f[0] != "X"
        })
        .collect()
}

/// The argv of a gated launch as `run` spawns it (RUN-3): `/bin/sh` waiting
/// on its stdin, then on the gate file `PREFIX.PID.go` for `wait_ms` once
/// its stdin is closed, then `command`.
pub fn gate_argv(prefix: &std::path::Path, wait_ms: u64, command: &[String]) -> Vec<String> {
    crate::method::run_plan::launch_gate::GateSpec {
        prefix: prefix.to_path_buf(),
        wait: std::time::Duration::from_millis(wait_ms),
    }
    .argv(command)
}

/// Process `pid` as a launch record names it: this machine's host name and
/// boot id, the pid and its start time (`/proc/PID/stat` field 22).
pub fn process_ref(pid: u32) -> Option<crate::schema::events::ProcessRef> {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
    };
    let stat = read(&format!("/proc/{pid}/stat"))?;
    let fields: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
    Some(crate::schema::events::ProcessRef {
        host: read("/proc/sys/kernel/hostname").unwrap_or_default(),
        boot_id: read("/proc/sys/kernel/random/boot_id").unwrap_or_default(),
        pid,
        start_ticks: fields.get(19)?.parse().ok()?,
    })
}
