//! Gate observations: daemon health, provider sentinels, binary and config
//! checks, and the AWS calls (feature `aws`). Facts out; never called from
//! `method`, never the SDK's default credential chain.

#[cfg(feature = "aws")]
pub mod aws;
pub mod checks;
