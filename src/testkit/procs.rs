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
