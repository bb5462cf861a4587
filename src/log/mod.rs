//! The log: records, their canonical bytes, the hash chain, the sled store,
//! the ledger directory, the projection-checkpoint cache, export/import and
//! the append guard. The only layer that names sled (`store`) or bincode
//! (`codec`). It never decodes payloads for decisions and never rewrites or
//! deletes a record.

pub mod chain;
pub mod checkpoint;
pub mod codec;
pub mod export;
pub mod guard;
pub mod ledger;
pub mod read_copy;
pub mod record;
pub(crate) mod scan;
pub mod segment;
pub mod staging;
pub mod store;
pub mod tiles;
pub mod tlog;
pub mod tree;
