//! Every bound of the ledger as a named constant (design.md section 5).
//!
//! Each constant is tested at the bound and one past it. Units are last in
//! the name.

/// Largest encoded record (header + payload), in bytes.
pub const RECORD_BYTES_MAX: usize = 1024 * 1024;
/// Most records one atomic append may carry.
pub const APPEND_BATCH_RECORDS_MAX: usize = 250_000;
/// Most encoded bytes one atomic append may carry.
pub const APPEND_BATCH_BYTES_MAX: usize = 128 * 1024 * 1024;
/// Most records one sealed segment of the store holds (SPEC.md section 5).
pub const SEGMENT_RECORDS_MAX: usize = 1024;
/// Most encoded bytes one segment of the store holds, unless it holds a
/// single record larger than this (SPEC.md section 5). sled 0.34 splits a
/// leaf past 16 items whatever their size and writes a node larger than a
/// quarter of its 512 KiB log segment as a file of its own (a blob); 17
/// segments of 7 KiB stay below that, so no leaf becomes a blob: blobs are
/// read again by every open (sled re-reads its whole active log segment)
/// and kept in memory by every scan (tools/BENCHMARKS.md).
pub const SEGMENT_BYTES_MAX: usize = 7 * 1024;
/// Longest actor name (`operator:alice`, `ci`), in bytes.
pub const ACTOR_BYTES_MAX: usize = 64;
/// Longest client idempotency key, in bytes.
pub const IDEMPOTENCY_KEY_BYTES_MAX: usize = 256;
/// Longest operator note text, in bytes.
pub const NOTE_TEXT_BYTES_MAX: usize = 16 * 1024;
/// Default wait for the writer lock, in milliseconds (`--lock-timeout`).
pub const LOCK_WAIT_MS_DEFAULT: u64 = 30_000;
/// Longest wait the CLI accepts for the writer lock, in milliseconds.
pub const LOCK_WAIT_MS_MAX: u64 = 3_600_000;
/// Longest wait for sled's own file lock once the ledger lock is held (a
/// process that just dropped its ledger may hold it for a few ms), in ms.
pub const SLED_LOCK_WAIT_MS_MAX: u64 = 2_000;
/// Longest wait, when a store is dropped, for sled's worker threads to
/// release its file locks, in ms.
pub const SLED_RELEASE_WAIT_MS_MAX: u64 = 5_000;
/// Poll interval while waiting for the writer lock, in milliseconds.
pub const LOCK_POLL_MS: u64 = 20;
/// Longest line of an `export --jsonl` file that `import` reads, in bytes.
/// A record's hex doubles its size and the decoded payload adds at most as
/// much again, escaped.
pub const EXPORT_LINE_BYTES_MAX: usize = 8 * RECORD_BYTES_MAX;
/// Largest projection checkpoint (`checkpoint.rs`) written or read, in
/// bytes; a state that encodes larger is simply not checkpointed.
pub const CHECKPOINT_BYTES_MAX: usize = 1024 * 1024 * 1024;
/// Fewest events a ledger holds before a deciding verb writes a projection
/// checkpoint (below it a full replay is cheap).
pub const CHECKPOINT_EVENTS_MIN: u64 = 4096;
/// Most events a deciding verb folds past a valid checkpoint before it
/// writes a fresh one.
pub const CHECKPOINT_TAIL_EVENTS_MAX: u64 = 4096;

/// Default pause between two monitor samples, in milliseconds.
pub const MONITOR_INTERVAL_MS_DEFAULT: u64 = 10_000;

/// Shortest pause between two monitor samples, in milliseconds.
pub const MONITOR_INTERVAL_MS_MIN: u64 = 100;

/// Longest pause between two monitor samples, in milliseconds.
pub const MONITOR_INTERVAL_MS_MAX: u64 = 3_600_000;

/// Default sample count of one monitor run.
pub const MONITOR_SAMPLES_DEFAULT: u64 = 360;

/// Most samples one monitor run takes.
pub const MONITOR_SAMPLES_MAX: u64 = 100_000;

// ---------------------------------------------------------------------------
// The driver (RUN, issue 27)
// ---------------------------------------------------------------------------

/// Bytes read of a `/proc` file (`stat`, `boot_id`, `hostname`): each is a
/// line of at most a few hundred bytes.
pub const PROC_FILE_BYTES_MAX: usize = 4096;
/// How long a driver's lease on a group lasts unless renewed, in seconds
/// (RUN-2). A driver whose process is gone loses it at once on its own
/// machine; elsewhere a second driver waits this long.
pub const RUN_LEASE_SEC: u64 = 120;
/// How often `run` renews its lease, in seconds: a third of its life.
pub const RUN_LEASE_RENEW_SEC: u64 = RUN_LEASE_SEC / 3;
/// Longest a `case run` command may run when its lineage has no frozen
/// launch timeout (a v1 manifest), in seconds (RUN-4).
pub const CASE_COMMAND_TIMEOUT_SEC_DEFAULT: u64 = 7200;
/// Longest a launch's gate waits to be opened once the driver that spawned
/// it died, in seconds (RUN-3): a rerun within it adopts the recorded
/// launch and opens its gate; past it the gate exits having run nothing.
/// Never longer than the frozen launch timeout.
pub const LAUNCH_GATE_WAIT_SEC: u64 = 600;
/// How often a gate whose driver died looks for its file, in milliseconds.
pub const LAUNCH_GATE_POLL_MS: u64 = 100;
/// How often a bounded wait looks at its command, in milliseconds.
pub const COMMAND_POLL_MS: u64 = 10;
/// How often `run` looks at its processes, the ledger's head witness and
/// its cases' result files while it waits, in milliseconds (the default of
/// `run --poll-ms`).
pub const RUN_POLL_MS_DEFAULT: u64 = 200;
/// How often `run` takes a cleanup monitor sample while its cases run, in
/// milliseconds (besides one after every wave and one after every case's
/// end): often enough that the sandboxes of a wave launched together are
/// seen together (the observed peak of GATE-9, CLEAN-2).
pub const RUN_MONITOR_INTERVAL_MS: u64 = 3_000;
// Issue 29

/// Largest text file the CLI reads whole: a manifest, its private file, a
/// signer or verifier key, a signed note, a sign-off note, an AWS private
/// file, in bytes.
pub const TEXT_INPUT_FILE_BYTES_MAX: u64 = 4 * 1024 * 1024;
/// Largest BitRouter evidence file (traces, decisions, usage, receipts,
/// outcomes) `ingest` reads, in bytes: `INGEST_ROWS_PER_FILE_MAX` rows of a
/// few KiB each, with room.
pub const INGEST_FILE_BYTES_MAX: u64 = 64 * 1024 * 1024 * 1024;
/// Largest file the CLI streams through BLAKE3 without keeping it (a
/// launch's log, a TrialConfig given to `case start`), in bytes.
pub const HASHED_FILE_BYTES_MAX: u64 = 4 * 1024 * 1024 * 1024;
/// Largest evidence file the CLI reads whole to hash and scan for
/// credentials (`case refusal`, `case invalidate`), in bytes.
pub const SCANNED_FILE_BYTES_MAX: u64 = 256 * 1024 * 1024;
/// Largest `export --jsonl` file `import` reads, in bytes: at most
/// `APPEND_BATCH_RECORDS_MAX`-sized chunks of lines of at most
/// `EXPORT_LINE_BYTES_MAX`, bounded as a whole.
pub const IMPORT_FILE_BYTES_MAX: u64 = 256 * 1024 * 1024 * 1024;
/// Longest refusal reason an `evidence_refused.v1` keeps (BIND-12), in
/// bytes; a longer one is cut at a character boundary and marked.
pub const EVIDENCE_REFUSAL_REASON_BYTES_MAX: usize = 2048;
/// Largest ledger directory a read verb copies when it cannot open the
/// ledger in place (a read-only mount; `log::read_copy`), in bytes.
pub const READ_COPY_BYTES_MAX: u64 = 64 * 1024 * 1024 * 1024;
/// Deepest directory level a read copy walks below the ledger directory
/// (`sled/blobs/` is level 2).
pub const READ_COPY_DEPTH_MAX: usize = 4;

/// Longest unknown lineage or group name an error message echoes, in
/// bytes: a longer one (or one with other than letters, digits, `.`, `_`,
/// `-`) is described by its length only (`schema::secrets::echo_name`).
pub const ECHOED_NAME_BYTES_MAX: usize = 64;

/// Most security groups a provisioned central host is launched with
/// (`[central.launch]`; EC2 allows 5 per interface).
pub const CENTRAL_SECURITY_GROUPS_MAX: usize = 5;
/// Longest `[central.launch] ready_timeout_sec` a manifest may freeze, in
/// seconds.
pub const CENTRAL_READY_TIMEOUT_SEC_MAX: u64 = 3_600;
/// Poll interval while `central up` waits for the launched host to be
/// `running`, in milliseconds.
pub const CENTRAL_READY_POLL_MS: u64 = 2_000;
/// Longest wait for `central down`'s terminated host to leave every live
/// state, in milliseconds.
pub const CENTRAL_TEARDOWN_WAIT_MS: u64 = 600_000;
/// Largest auditor state file (TRUST-7) `verify --against` and `checkpoint
/// verify` read, in bytes: one entry per origin (its size, root and signed
/// note, a few hundred bytes to some KiB with cosignatures), room for
/// thousands of origins.
pub const AUDITOR_STATE_BYTES_MAX: u64 = 1024 * 1024;

/// Most records a tiles export holds and `verify --tiles` reads (TRUST-8):
/// the reader keeps the root of every full level-0 tile while it walks,
/// 32 bytes per 256 records (128 MiB at this bound).
pub const TILES_LEAVES_MAX: u64 = 1 << 30;
/// Largest record bundle (`records/<N>`) of a tiles export, in bytes: 256
/// records of at most `RECORD_BYTES_MAX`, each with its 4-byte length.
pub const TILES_RECORD_BUNDLE_BYTES_MAX: u64 = 256 * (4 + RECORD_BYTES_MAX as u64);
/// Longest wait for one file of a tiles log served over HTTP (`verify
/// --tiles URL`), from the name lookup to the last byte, in milliseconds.
pub const TILES_FETCH_MS_MAX: u64 = 60_000;
/// Longest reason a `[[cases.excluded]]` task may give, in bytes.
pub const EXCLUSION_REASON_BYTES_MAX: usize = 1024;
/// Most witnesses a `[witnessing]` table may freeze (TRUST-6).
pub const WITNESSES_MAX: usize = 16;
/// Longest wait for one witness's `add-checkpoint` answer (`checkpoint
/// witness`, TRUST-6), from the name lookup to the last byte, in
/// milliseconds.
pub const WITNESS_EXCHANGE_MS_MAX: u64 = 10_000;
/// Most consistency proof lines an `add-checkpoint` request may carry
/// (C2SP tlog-witness: a client must not send more than 63).
pub const WITNESS_PROOF_LINES_MAX: usize = 63;
/// Longest witness url a `[witnessing]` table may freeze, in bytes.
pub const WITNESS_URL_BYTES_MAX: usize = 2048;
