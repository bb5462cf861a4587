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

// Bounds of `evidence::harbor` (re-exported there).
/// Longest reward file read (`verifier/reward.txt`, `verifier/reward.json`),
/// in bytes; Harbor's verifier writes a number or a small object.
pub const HARBOR_REWARD_FILE_BYTES_MAX: usize = 64 * 1024;

// Bounds of `evidence` (re-exported there).
/// Most credential findings recorded for one file (or one JSON Lines row);
/// one leak is enough to fail the group's `secrets` row.
pub const CREDENTIAL_FINDINGS_PER_FILE_MAX: usize = 16;
/// Most job directories one [`walk_jobs`](crate::evidence::harbor::walk_jobs)
/// lists in a jobs directory.
pub const HARBOR_JOB_DIRS_MAX: usize = 1_000;
/// Largest Harbor `result.json` (trial or job) read, in bytes. A Terminus 2
/// result is a few KiB; rollout details with token ids and logprobs can
/// reach megabytes.
pub const HARBOR_RESULT_BYTES_MAX: usize = 32 * 1024 * 1024;
/// Most keys of a Harbor `verifier_result.rewards` object.
pub const HARBOR_REWARD_KEYS_MAX: usize = 256;
/// Most trial directories one
/// [`walk_jobs`](crate::evidence::harbor::walk_jobs) lists, over all jobs.
pub const HARBOR_TRIAL_DIRS_MAX: usize = 10_000;
/// Longest echo of an offending value in an error message, in bytes; longer
/// values are cut at a character boundary and their length is given.
pub const INGEST_ECHO_BYTES_MAX: usize = 96;
/// Longest string value copied from an input file into a payload, in bytes.
pub const INGEST_FIELD_BYTES_MAX: usize = 4096;
/// Longest JSON Lines row read, in bytes (without its newline). BitRouter
/// captures request bodies of up to 16 MiB into trace rows, and a JSON
/// string can need more bytes than the body it quotes, so twice that.
pub const INGEST_LINE_BYTES_MAX: usize = 32 * 1024 * 1024;
/// Most rows read from one JSON Lines file. A public run is 445 cases of a
/// few hundred requests each per group; a million rows is far beyond that.
pub const INGEST_ROWS_PER_FILE_MAX: u64 = 1_000_000;
/// Deepest nesting of JSON arrays and objects read (serde_json's own
/// recursion limit is the same).
pub const JSON_NESTING_LEVELS_MAX: usize = 128;

// Bounds of `gates::aws::central` (re-exported there).
/// Most central hosts one exact-tag query may answer with (more is refused,
/// never truncated; exactly one may exist).
pub const CENTRAL_ANSWER_MAX: usize = 16;

// Bounds of `gates::aws` (re-exported there).
/// Attempts per API call (1 = no retry).
pub const AWS_ATTEMPTS_MAX: u32 = 3;
/// Pages one paginated Describe* query may read; more is an error (the
/// query is never silently truncated).
pub const DESCRIBE_PAGES_MAX: usize = 100;
/// Values one EC2 filter may carry (AWS allows 200).
pub const FILTER_VALUES_MAX: usize = 200;
/// Longest `role_arn` -> `source_profile` chain followed.
pub const PROFILE_CHAIN_MAX: usize = 4;
/// Largest AWS config or credentials file read, in bytes.
pub const PROFILE_FILE_BYTES_MAX: usize = 1024 * 1024;

// Bounds of `gates::checks` (re-exported there).
/// Largest config file `check config` hashes, in bytes.
pub const CONFIG_FILE_BYTES_MAX: usize = 16 * 1024 * 1024;
/// Longest request id kept from an answer, in bytes; a longer one is not
/// recorded (`request_id_problem` says why).
pub const REQUEST_ID_BYTES_MAX: usize = 256;

// Bounds of `gates::http` (re-exported there).
/// Largest response status line plus headers, in bytes.
pub const HTTP_HEADER_BYTES_MAX: usize = 64 * 1024;
/// Largest response body read, in bytes; a longer answer is an error.
pub const HTTP_RESPONSE_BYTES_MAX: usize = 1024 * 1024;
/// Longest URL accepted, in bytes.
pub const URL_BYTES_MAX: usize = 2048;

// Bounds of `gates::rules` (re-exported there).
/// Longest error text kept in an observation, in bytes.
pub const AWS_ERROR_BYTES_MAX: usize = 512;
/// Longest endpoint override accepted, in bytes.
pub const ENDPOINT_URL_BYTES_MAX: usize = 2048;
/// Longest STS role session name, in bytes (an AWS limit).
pub const ROLE_SESSION_NAME_BYTES_MAX: usize = 64;

// Bounds of `method::decide::freeze` (re-exported there).
/// Longest sign-off name, in bytes.
pub const SIGN_OFF_NAME_BYTES_MAX: usize = 128;

// Bounds of `method::freeze` (re-exported there).
/// Most groups one lineage may declare (evaluation and non-evaluation).
pub const GROUPS_MAX: usize = 16;
/// Longest label (lineage, group, task, trial, tag value), in bytes.
pub const LABEL_BYTES_MAX: usize = 128;
/// Largest manifest file (public or private), in bytes.
pub const MANIFEST_FILE_BYTES_MAX: usize = 1024 * 1024;
/// Most tasks one lineage may declare.
pub const TASKS_MAX: usize = 1_000;
/// Most trial identities per task.
pub const TRIALS_MAX: usize = 100;

// Bounds of `method::freeze::plan` (re-exported there).
/// Most words of an argv template.
pub const ARGV_WORDS_MAX: usize = 64;
/// Longest word of an argv template, in bytes.
pub const ARGV_WORD_BYTES_MAX: usize = 4096;
/// Largest clock-skew bound of the launch window, in seconds (BIND-1).
pub const CLOCK_SKEW_SEC_MAX: u64 = 3_600;
/// Most extra kwargs of one TrialConfig section.
pub const KWARGS_MAX: usize = 32;
/// Longest a launched case process may run, in seconds (two days).
pub const LAUNCH_TIMEOUT_SEC_MAX: u64 = 172_800;
/// Longest pause between two receipt polls, in seconds.
pub const RECEIPT_POLL_SEC_MAX: u64 = 3_600;
/// Most keys in one signer list.
pub const SIGNERS_MAX: usize = 16;

// Bounds of `method::verdict` (re-exported there).
/// At most this many ids are named in one row's evidence text; the count of
/// the rest follows. The JSON forms (`gate --json`) list them all.
pub const EVIDENCE_IDS_MAX: usize = 12;

// Bounds of `schema::events` (re-exported there).
/// The most bytes a `schema::events::Event` may take in place. A decoded record is moved
/// from the store's scan through the verifying reader into a fold, so a
/// variant whose payload is larger than this is boxed.
pub const EVENT_BYTES_MAX: usize = 320;

// Bounds of `schema::manifest` (re-exported there).
/// Upper bound of a mechanism iteration's tasks: the whole set.
pub const MECHANISM_TASKS_MAX: usize = 89;

// Bounds of `schema::names` (re-exported there).
/// Longest group part of a benchledger trial name, in bytes.
pub const TRIAL_NAME_GROUP_BYTES_MAX: usize = 64;
/// Highest replacement number a trial name can carry (`-r99`).
pub const TRIAL_NAME_REPLACEMENT_MAX: u8 = 99;
/// Longest task part of a benchledger trial name, in bytes.
pub const TRIAL_NAME_TASK_BYTES_MAX: usize = 128;
/// Longest trial-identity part of a benchledger trial name, in bytes.
pub const TRIAL_NAME_TRIAL_BYTES_MAX: usize = 32;

// Bounds of `schema::secrets` (re-exported there).
/// Most bytes between a context keyword and its value (quotes, blanks, `=`,
/// `:`, `=>`, JSON escapes), and most blanks after `Bearer`. A longer gap is
/// not read as an assignment.
pub const ASSIGNMENT_SEPARATOR_BYTES_MAX: usize = 16;
/// Most bytes of the label between `-----BEGIN ` and `-----` in a PEM header
/// (`ENCRYPTED PRIVATE KEY` is 21, `PGP PRIVATE KEY BLOCK` is 21).
pub const PEM_LABEL_BYTES_MAX: usize = 48;
/// Most letters, `_` or `-` read after the word `secret` before its value
/// (`secret_key`, `SecretValue`, `secret-access-key`).
pub const SECRET_WORD_TAIL_BYTES_MAX: usize = 16;
/// Most bytes of an assigned value or bearer token read to find where it
/// ends. A value that reaches this length without ending is treated as a
/// credential (fail closed), since its mask, if any, was not seen.
pub const VALUE_SCAN_BYTES_MAX: usize = 512;

// Bounds of `schema::time` (re-exported there).
/// Most fractional-second digits a strict form accepts (nanoseconds).
pub const FRACTION_DIGITS_MAX: usize = 9;
