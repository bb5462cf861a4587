//! The gate a launch is spawned behind (RUN-3): the shell `run` spawns,
//! its arguments and the file that opens it. Pure: `cli::proc` spawns it,
//! the tests and the simulator build the same argv.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// The name a gated launch's shell runs under (its `$0`).
pub const GATE_NAME: &str = "benchledger-gate";

/// The shell a gated launch waits in (RUN-3), run as `/bin/sh -c
/// GATE_SCRIPT benchledger-gate PREFIX POLLS POLL_SEC COMMAND...`. It reads
/// one line from its stdin, the driver's pipe, and on `go` becomes the
/// command (`exec`: the same pid, process group and start time; stdin from
/// /dev/null). On end of file (the driver died, or closed the gate) it
/// waits up to POLLS x POLL_SEC for the file `PREFIX.PID.go`, which a
/// rerun that adopts the recorded launch creates, and otherwise exits 125
/// having run nothing.
pub const GATE_SCRIPT: &str = r#"p=$1; n=$2; t=$3; shift 3; g="$p.$$.go"
read -r w || w=
if [ "$w" != go ]; then
  i=0
  while [ ! -e "$g" ]; do
    i=$((i + 1)); [ "$i" -gt "$n" ] && exit 125; sleep "$t"
  done
fi
rm -f -- "$g"; exec "$@" </dev/null"#;

/// Where a gated launch waits and for how long.
pub struct GateSpec {
    /// The gate file's prefix: `PREFIX.PID.go` opens it.
    pub prefix: PathBuf,
    /// How long a gate whose driver died waits to be opened.
    pub wait: Duration,
}

impl GateSpec {
    /// The shell's arguments before the command: its name, the prefix, the
    /// number of polls and the seconds between them.
    pub fn argv(&self, command: &[String]) -> Vec<String> {
        let poll = Duration::from_millis(crate::limits::LAUNCH_GATE_POLL_MS);
        let polls = self.wait.as_millis() / poll.as_millis().max(1);
        ["/bin/sh", "-c", GATE_SCRIPT, GATE_NAME]
            .into_iter()
            .map(String::from)
            .chain([
                self.prefix.display().to_string(),
                polls.to_string(),
                format!("{:.3}", poll.as_secs_f64()),
            ])
            .chain(command.iter().cloned())
            .collect()
    }
}

/// The file that opens the gate of launch `pid`.
pub fn gate_file(prefix: &Path, pid: u32) -> PathBuf {
    let mut name = prefix.as_os_str().to_owned();
    name.push(format!(".{pid}.go"));
    PathBuf::from(name)
}
