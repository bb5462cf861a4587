//! The example manifest pair of `ledger-schema/examples/`, compiled in once
//! for every test and tool that needs a frozen lineage.

/// The commented short13 mechanism manifest.
pub const EXAMPLE_MANIFEST: &str = include_str!("../../ledger-schema/examples/manifest.toml");
/// Its private companion (account, principal, secret locations, key).
pub const EXAMPLE_PRIVATE: &str =
    include_str!("../../ledger-schema/examples/manifest.private.toml");

/// The example pair, frozen (as `manifest freeze` records it).
pub fn frozen() -> crate::schema::events::ManifestFrozenV2 {
    crate::method::freeze::freeze(
        EXAMPLE_MANIFEST,
        "manifest.toml",
        EXAMPLE_PRIVATE,
        "manifest.private.toml",
    )
    .expect("the example manifest freezes")
    .v2
}

/// An example signer key, derived from a public text: for tests, the README
/// and the example manifest only (anyone can derive it; never a real
/// lineage's key). `alice` is the example operator, `bob` the reviewer.
pub fn signer(name: &str) -> crate::log::tlog::SignerKey {
    let seed = blake3::derive_key("benchledger example signer key", name.as_bytes());
    crate::log::tlog::SignerKey::from_seed(name, crate::log::tlog::KeyKind::Ed25519, seed)
        .expect("an example key name is a valid key name")
}

/// The daemon start of `group` exactly as the example manifest freezes it
/// (what `group open` records): for harnesses whose ingests need an opened
/// group (GATE-4) without driving the lineage's order.
pub fn daemon_start(group: &str) -> crate::schema::events::GroupOpened {
    let frozen = frozen();
    let m = &frozen.manifest.public;
    let g = m
        .groups
        .iter()
        .find(|g| g.name == group)
        .unwrap_or_else(|| panic!("the example manifest has no group {group:?}"));
    crate::schema::events::GroupOpened {
        group: crate::schema::events::GroupRef {
            lineage: frozen.lineage.clone(),
            group: group.to_string(),
        },
        binary_sha256: m.software.bitrouter_binary_sha256.clone(),
        config_sha256: m.software.bitrouter_config_sha256[group].clone(),
        ports: g.ports.clone(),
        db_path: g.db_path.clone(),
        out_dir: g.out_dir.clone(),
    }
}

/// `group open GROUP ...` arguments for the example manifest's daemon start.
pub fn group_open_args(group: &str) -> Vec<String> {
    let d = daemon_start(group);
    let port = d.ports.first().map(u16::to_string).unwrap_or_default();
    [
        "group",
        "open",
        group,
        "--binary-sha256",
        &d.binary_sha256,
        "--config-sha256",
        &d.config_sha256,
        "--ports",
        &port,
        "--db",
        &d.db_path,
        "--out",
        &d.out_dir,
    ]
    .map(String::from)
    .to_vec()
}

/// Replaces the first line of `m` that starts with `starts` by `with`;
/// there must be one (test support: a fixture that no longer matches the
/// example manifest fails loudly).
pub fn replace_line(m: &str, starts: &str, with: &str) -> String {
    let mut out = String::with_capacity(m.len());
    let mut done = false;
    for line in m.lines() {
        if !done && line.starts_with(starts) {
            out.push_str(with);
            done = true;
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    assert!(done, "no line starts with {starts:?}");
    out
}

/// Manifest `m` (the example's shape) with `cases` canary-1 identities
/// (`hello-world` `c1`, `c2`, ...) and the frozen concurrency: GATE-9's
/// multi-case canary at c.
pub fn with_canaries(m: &str, cases: u32, concurrency: u32) -> String {
    let canaries: String = (1..=cases)
        .map(|i| format!("  {{ group = \"canary-1\", task = \"hello-world\", trial = \"c{i}\", content_sha256 = \"{}\" }},\n", "ab".repeat(32)))
        .collect();
    let start = m
        .find("canaries = [\n")
        .map_or(0, |i| i + "canaries = [\n".len());
    let end = start + m[start..].find("]\n").unwrap_or(0);
    let mut m = m.to_string();
    m.replace_range(start..end, &canaries);
    m.replacen(
        "concurrency = 1",
        &format!("concurrency = {concurrency}"),
        1,
    )
}

/// The example manifest made runnable by `run` over a stand-in launch under
/// `root`: `cases` canary-1 identities (`hello-world` `c1`, `c2`, ...) at
/// `concurrency`, every path under `root`, the frozen validator
/// `root/validate.sh` (written here: a config must be non-empty), the launch
/// command `sh root/launch.sh {trial_name} {jobs_dir} {config}` (the caller
/// writes the script), the frozen `timeout_sec = 7200` line replaced by
/// `launch_tail`, and a usage export that exports nothing.
pub fn run_manifest(
    root: &std::path::Path,
    cases: u32,
    concurrency: u32,
    launch_tail: &str,
) -> std::io::Result<String> {
    let r = root.display().to_string();
    let r = r.trim_end_matches('/');
    let m = with_canaries(EXAMPLE_MANIFEST, cases, concurrency)
        .replace("/srv/bench/", &format!("{r}/srv/"));
    let validator = root.join("validate.sh");
    std::fs::write(&validator, "#!/bin/sh\ntest -s \"$1\"\n")?;
    let b3 = blake3::hash(&std::fs::read(&validator)?).to_hex();
    let v = validator.display();
    let launch = root.join("launch.sh");
    let l = launch.display();
    let m = replace_line(
        &m,
        "command = [\"tools/.venv-harbor",
        &format!("command = [\"sh\", \"{v}\", \"{{config}}\"]"),
    );
    let m = replace_line(&m, "program = ", &format!("program = \"{v}\""));
    let m = replace_line(
        &m,
        "program_blake3 = ",
        &format!("program_blake3 = \"{b3}\""),
    );
    let m = replace_line(
        &m,
        "command = [\"harbor\"",
        &format!(
            "command = [\"sh\", \"{l}\", \"{{trial_name}}\", \"{{jobs_dir}}\", \"{{config}}\"]"
        ),
    );
    let m = replace_line(&m, "timeout_sec = 7200", launch_tail);
    Ok(replace_line(
        &m,
        "usage_export = ",
        "usage_export = [\"true\", \"{out}\"]",
    ))
}
