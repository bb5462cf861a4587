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
