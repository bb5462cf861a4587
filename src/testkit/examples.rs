//! The example manifest pair of `ledger-schema/examples/`, compiled in once
//! for every test and tool that needs a frozen lineage.

/// The commented short13 mechanism manifest.
pub const EXAMPLE_MANIFEST: &str = include_str!("../../ledger-schema/examples/manifest.toml");
/// Its private companion (account, principal, secret locations, key).
pub const EXAMPLE_PRIVATE: &str =
    include_str!("../../ledger-schema/examples/manifest.private.toml");

/// The example pair, frozen (as `manifest freeze` records it).
pub fn frozen() -> crate::schema::events::ManifestFrozen {
    crate::method::freeze::freeze(
        EXAMPLE_MANIFEST,
        "manifest.toml",
        EXAMPLE_PRIVATE,
        "manifest.private.toml",
    )
    .expect("the example manifest freezes")
}
