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
