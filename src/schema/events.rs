//! The event vocabulary: versioned, past-tense payload types, one per kind.
//!
//! A record carries its kind as a string (`ledger_created.v1`) and the
//! payload as the canonical encoding of that kind's struct. A change to a
//! payload's fields is a new kind (`..._v2`), never an edit of an old one, so
//! every recorded ledger stays decodable. `ledger-schema/SPEC.md` documents
//! each kind's fields, units and the rule ids it serves.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::schema::manifest::{
    CentralLaunch, Committed, ExcludedTask, Manifest, PriceRecord, Witnessing,
};

/// The canonical byte form of payloads. The schema names no codec: the log
/// implements this (`log::codec::Canonical`, bincode), and the vocabulary
/// dispatches each kind's payload type through it
/// ([`Event::encode_payload_with`], [`Event::decode_payload_with`]).
pub trait PayloadCodec {
    /// Why a value could not be encoded or bytes not accepted.
    type Error;
    /// The canonical bytes of a payload.
    fn encode<T: Serialize>(&self, payload: &T) -> Result<Vec<u8>, Self::Error>;
    /// The payload whose canonical encoding `bytes` must be.
    fn decode<T: Serialize + DeserializeOwned>(&self, bytes: &[u8]) -> Result<T, Self::Error>;
}

/// Why a payload could not be decoded; `E` is the codec's error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PayloadError<E> {
    /// The kind is not in this version's vocabulary.
    #[error("unknown event kind {0:?}")]
    UnknownKind(String),
    /// The payload bytes are not the canonical encoding of the kind's struct.
    #[error("payload of {kind}: {source}")]
    Codec {
        /// The kind whose payload failed.
        kind: &'static str,
        /// The codec failure.
        source: E,
    },
}

pub use crate::limits::EVENT_BYTES_MAX;

macro_rules! vocabulary {
    ($( $(#[$doc:meta])* $variant:ident($ty:ty) = $kind:literal ),* $(,)?) => {
        /// One event of the vocabulary.
        // Every decoded record is moved several times between the store's
        // scan and a fold, so the enum is kept small: variants whose payload
        // is larger than a few hundred bytes are boxed (`EVENT_BYTES_MAX`).
        #[derive(Debug, Clone, PartialEq)]
        pub enum Event {
            $( $(#[$doc])* $variant($ty), )*
        }

        impl Event {
            /// Every kind string of this vocabulary, in declaration order.
            pub const KINDS: &'static [&'static str] = &[$($kind),*];

            /// The kind string recorded for this event.
            pub fn kind(&self) -> &'static str {
                match self { $( Event::$variant(_) => $kind, )* }
            }

            /// The payload's bytes under `codec`.
            pub fn encode_payload_with<C: PayloadCodec>(&self, codec: &C) -> Result<Vec<u8>, C::Error> {
                match self { $( Event::$variant(p) => codec.encode(p), )* }
            }

            /// Decodes a payload of `kind` under `codec` as the kind's type.
            pub fn decode_payload_with<C: PayloadCodec>(
                codec: &C,
                kind: &str,
                bytes: &[u8],
            ) -> Result<Event, PayloadError<C::Error>> {
                match kind {
                    $( $kind => codec.decode::<$ty>(bytes)
                        .map(Event::$variant)
                        .map_err(|source| PayloadError::Codec { kind: $kind, source }), )*
                    other => Err(PayloadError::UnknownKind(other.to_string())),
                }
            }

            /// The payload as JSON (field order as declared; maps are ordered).
            pub fn payload_json(&self) -> serde_json::Value {
                let value = match self { $( Event::$variant(p) => serde_json::to_value(p), )* };
                // Payload types are plain structs of strings, integers, ordered
                // maps and options: serializing them to JSON cannot fail.
                value.expect("payload types serialize to json")
            }

            /// Calls `f` on every string of the payload (no field paths, no
            /// JSON) until it returns `true`; returns whether it did.
            pub fn any_string(&self, f: &mut dyn FnMut(&str) -> bool) -> bool {
                match self { $( Event::$variant(p) => crate::schema::strings::any_string(p, f), )* }
            }

            /// Every string field of the payload with its field path, for the
            /// secret guard and other whole-payload checks.
            pub fn strings(&self) -> Vec<(String, String)> {
                let mut out = Vec::new();
                collect_strings(&self.payload_json(), String::new(), &mut out);
                out
            }
        }
    };
}

fn collect_strings(v: &serde_json::Value, path: String, out: &mut Vec<(String, String)>) {
    match v {
        serde_json::Value::String(s) => out.push((path, s.clone())),
        serde_json::Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                collect_strings(item, format!("{path}[{i}]"), out);
            }
        }
        serde_json::Value::Object(map) => {
            for (k, item) in map {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                // Map keys are strings too and may carry text of their own.
                out.push((format!("{p}#key"), k.clone()));
                collect_strings(item, p, out);
            }
        }
        _ => {}
    }
}

vocabulary! {
    /// Seq 0 of every ledger.
    LedgerCreated(LedgerCreated) = "ledger_created.v1",
    /// A free-text note by an operator; changes no projection.
    OperatorNoted(OperatorNoted) = "operator_noted.v1",
    /// A lineage's manifest, validated and frozen (FREEZE-1..8).
    ManifestFrozen(Box<ManifestFrozen>) = "manifest_frozen.v1",
    /// An operator or reviewer signed off a frozen manifest (FREEZE-7).
    ManifestSignedOff(ManifestSignedOff) = "manifest_signed_off.v1",
    /// An STS GetCallerIdentity proof against the frozen selector (GATE-1).
    IdentityChecked(IdentityChecked) = "identity_checked.v1",
    /// The vCPU quota gate (GATE-2).
    QuotaChecked(QuotaChecked) = "quota_checked.v1",
    /// Any other gate observation, pass or fail (GATE-3, GATE-4, GATE-7).
    CheckRecorded(CheckRecorded) = "check_recorded.v1",
    /// A group's daemon started with these binaries, config, ports and paths.
    GroupOpened(GroupOpened) = "group_opened.v1",
    /// A case identity consumed: appended only when every gate held (CASE-2).
    CaseStarted(CaseStarted) = "case_started.v1",
    /// The launched command of a case ended.
    CaseProcessExited(CaseProcessExited) = "case_process_exited.v1",
    /// A Harbor TrialResult, as written by Harbor (CASE-3).
    TrialResultRecorded(Box<TrialResultRecorded>) = "trial_result_recorded.v1",
    /// A file kept as evidence: path, size and BLAKE3.
    ArtifactRecorded(ArtifactRecorded) = "artifact_recorded.v1",
    /// One BitRouter ingress trace row (JOIN-1: set T).
    RequestTraced(RequestTraced) = "request_traced.v1",
    /// One BitRouter policy decision row (JOIN-1: set D).
    PolicyDecisionRecorded(PolicyDecisionRecorded) = "policy_decision_recorded.v1",
    /// One BitRouter usage row with its four buckets and charge (SETTLE-1, set U).
    UsageRecorded(Box<UsageRecorded>) = "usage_recorded.v1",
    /// One authoritative settlement receipt (SETTLE-4, SETTLE-5).
    ReceiptRecorded(ReceiptRecorded) = "receipt_recorded.v1",
    /// One benchmark outcome row (JOIN-1: set R; JOIN-3).
    OutcomeRecorded(OutcomeRecorded) = "outcome_recorded.v1",
    /// Sanitized HTTP 403 evidence of a security-policy refusal (CASE-6).
    SecurityRefusalRecorded(SecurityRefusalRecorded) = "security_refusal_recorded.v1",
    /// An exact-tag EC2 residue query and everything it found (CLEAN-1..3).
    CleanupAudited(CleanupAudited) = "cleanup_audited.v1",
    /// One sample of the run-tagged sandbox count (CLEAN-2 peak and tail).
    MonitorSampled(MonitorSampled) = "monitor_sampled.v1",
    /// One terminate/delete call on a resource proven to belong to the run.
    ResidueTerminated(ResidueTerminated) = "residue_terminated.v1",
    /// No more launches for a group.
    GroupClosed(GroupClosed) = "group_closed.v1",
    /// The group's verdict, attested and final (VERDICT-1..4).
    GroupSealed(GroupSealed) = "group_sealed.v1",
    /// Reward feedback applied to the policy database (LINEAGE-3).
    FeedbackApplied(FeedbackApplied) = "feedback_applied.v1",
    /// An accepted control entered the control catalog (LINEAGE-6).
    ControlRegistered(ControlRegistered) = "control_registered.v1",
    /// A lineage reuses an accepted control with an equal key (LINEAGE-6, LINEAGE-9).
    ControlReused(ControlReused) = "control_reused.v1",
    /// A postprocessing price snapshot for repricing (FREEZE-3, SETTLE-7).
    PriceSnapshotRecorded(PriceSnapshotRecorded) = "price_snapshot_recorded.v1",
    /// A hard stop of a lineage (VERDICT-3, LINEAGE-5).
    LineageStopped(LineageStopped) = "lineage_stopped.v1",
    /// A started case ended without a valid TrialResult, on Harbor or process
    /// evidence other than a result file (CASE-3, CASE-8): e.g. the
    /// controller crashed and Harbor left a trial directory without a result.
    CaseInvalidated(CaseInvalidated) = "case_invalidated.v1",
    /// A lineage's manifest with its plan, validated and frozen (FREEZE-1..8,
    /// BIND-1..3, BIND-7, TRUST-3): the form every new lineage is frozen in.
    ManifestFrozenV2(Box<ManifestFrozenV2>) = "manifest_frozen.v2",
    /// A Harbor TrialResult with what binds it to its launch (BIND-1,
    /// BIND-2): the embedded TrialConfig's content and the verifier's reward
    /// files. The form `ingest harbor` records from this version on.
    TrialResultRecordedV2(Box<TrialResultRecordedV2>) = "trial_result_recorded.v2",
    /// A Harbor job directory's own files: its retry settings and counts and
    /// the Harbor version of its lock (BIND-1, CASE-5, BIND-7).
    HarborJobRecorded(HarborJobRecorded) = "harbor_job_recorded.v1",
    /// A credential shape found in an ingested file, where and which shape,
    /// never the value (BIND-8).
    CredentialFound(CredentialFound) = "credential_found.v1",
    /// An operator's or reviewer's sign-off signed with a key the frozen
    /// manifest lists for that role (FREEZE-7, TRUST-3).
    ManifestSignedOffV2(ManifestSignedOffV2) = "manifest_signed_off.v2",
    /// A checkpoint of the log before this record: origin, tree size and
    /// Merkle root, signed or not (TRUST-1, TRUST-4).
    CheckpointRecorded(CheckpointRecorded) = "checkpoint_recorded.v1",
    /// The process a started case was launched as, as the kernel names it
    /// (RUN-3): a rerun adopts it while it lives and marks the case a
    /// controller crash as soon as it is gone.
    CaseLaunched(CaseLaunched) = "case_launched.v1",
    /// An external command killed at its deadline with its whole process
    /// group (RUN-4).
    CommandKilled(CommandKilled) = "command_killed.v1",
    /// A driver's lease on a group, taken, renewed or released (RUN-2).
    RunLeased(RunLeased) = "run_leased.v1",
    /// What a Harbor TrialResult says besides what its record keeps, in the
    /// same batch: every timestamp it carries and the job's attempt counts
    /// (BIND-11).
    TrialFactsRecorded(TrialFactsRecorded) = "trial_facts_recorded.v1",
    /// An evidence file an ingest refused by a rule of the method: its path,
    /// size, BLAKE3 and the refusal, never its content (BIND-12).
    EvidenceRefused(EvidenceRefused) = "evidence_refused.v1",
    /// A v2 lineage whose manifest also freezes how its central host is
    /// launched (FREEZE-1, FREEZE-8) or tasks left out before the freeze
    /// (CLASS-1): the form a lineage with `[central.launch]` or
    /// `[[cases.excluded]]` is frozen in.
    ManifestFrozenV3(Box<ManifestFrozenV3>) = "manifest_frozen.v3",
    /// A frozen witness's cosignature of a signed checkpoint of this log,
    /// verified with its frozen key (TRUST-6): what a seal's quorum counts.
    CheckpointCosigned(CheckpointCosigned) = "checkpoint_cosigned.v1",
    /// A frozen witness that did not cosign a checkpoint sent to it: down,
    /// timed out, refused (its HTTP status) or answered no valid
    /// cosignature (TRUST-6). Never counted.
    CheckpointWitnessFailed(CheckpointWitnessFailed) = "checkpoint_witness_failed.v1",
}

// ---------------------------------------------------------------------------
// Shared parts. Enums encode as a u32 variant index: variants are only ever
// appended, never reordered or removed.
// ---------------------------------------------------------------------------

/// A group of a lineage: `lineage` label and group name (`control`, `r1`,
/// `canary-1`, ...).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct GroupRef {
    /// The lineage label of the frozen manifest.
    pub lineage: String,
    pub group: String,
}

/// A case identity: task x trial, and which replacement of it (0 = the
/// original, 1 = `replacement-01`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CaseRef {
    /// The Terminal-Bench task name.
    pub task: String,
    /// The trial identity (`t1`..`t5`, `c1` for a canary).
    pub trial: String,
    /// 0 for the original identity, 1 for `replacement-01`.
    pub replacement: u8,
}

impl CaseRef {
    /// `TASK/TRIAL`, or `TASK/TRIAL/replacement-NN`: how the CLI names a case.
    pub fn label(&self) -> String {
        match self.replacement {
            0 => format!("{}/{}", self.task, self.trial),
            n => format!("{}/{}/replacement-{n:02}", self.task, self.trial),
        }
    }
}

crate::schema::named::named_enum! {
    /// Pass or fail of an observation.
    pub enum Status {
        /// The check holds.
        Pass = "pass",
        /// The check does not hold.
        Fail = "fail",
    }
}

/// A JSON number kept exactly as the source wrote it (`1`, `1.0`, `0.5`).
pub type NumberText = String;

// ---------------------------------------------------------------------------
// Genesis and notes
// ---------------------------------------------------------------------------

/// What a Harbor TrialResult says besides what `trial_result_recorded.v2`
/// keeps (BIND-11): every timestamp it carries, by field path, and the
/// attempt counts of the job it ran in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrialFactsRecorded {
    pub group: GroupRef,
    /// The ledger case the result belongs to.
    pub case: CaseRef,
    /// Harbor's trial name (the directory name).
    pub trial_name: String,
    /// BLAKE3 of the result file the facts were read from, hex.
    pub result_blake3: String,
    /// Every timestamp of the result outside its embedded TrialConfig, by
    /// field path (`started_at`, `agent_execution.started_at`,
    /// `exception_info.occurred_at`), as written.
    pub times: BTreeMap<String, String>,
    /// The job configuration's `n_attempts`, when the job's `config.json`
    /// says it.
    pub n_attempts: Option<u64>,
    /// How many trial directories of the job map to this case identity.
    pub trials_for_case: u64,
}

/// An evidence file refused by a rule of the method (BIND-12): what was
/// offered and why it did not count. Nothing of its content is kept; the
/// reason is the refusal's own text, which names fields, shapes and
/// redacted forms, never a value of the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvidenceRefused {
    /// The group it was offered to.
    pub group: GroupRef,
    /// The case it was offered for, when the file is a trial's.
    pub case: Option<CaseRef>,
    /// What it was offered as (`harbor_trial_result`, `bitrouter_traces`,
    /// ...; the roles of `artifact_recorded.v1`).
    pub role: String,
    /// Its path as given.
    pub path: String,
    pub bytes: u64,
    /// BLAKE3 of its bytes, hex.
    pub blake3: String,
    /// The rule that refused it (`CASE-8`, `FREEZE-2`, ...).
    pub rule: String,
    /// Why, as the refusal said it (bounded; no value of the file).
    pub reason: String,
}

/// The genesis payload: which ledger this is and what created it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerCreated {
    /// 128 random bits, lowercase hex (32 characters).
    pub ledger_id: String,
    /// The record format version the ledger was created with.
    pub format_version: u16,
    /// `benchledger <semver>` of the creating tool.
    pub tool_version: String,
}

/// A free-text operator note.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperatorNoted {
    /// The lineage the note is about, if any.
    pub lineage: Option<String>,
    /// The note, at most `NOTE_TEXT_BYTES_MAX` bytes.
    pub text: String,
}

// ---------------------------------------------------------------------------
// Freezing
// ---------------------------------------------------------------------------

/// The frozen manifest of one lineage ([`Manifest`] is the public,
/// redacted-with-commitments form of the operator's TOML).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestFrozen {
    pub lineage: String,
    /// BLAKE3 of the canonical encoding of `manifest`, hex.
    pub manifest_blake3: String,
    /// BLAKE3 of the operator's public TOML file as read, hex.
    pub source_file_blake3: String,
    /// BLAKE3 over the ordered task list with content hashes and the trial
    /// identities, hex (FREEZE-1, CLASS-3).
    pub task_manifest_blake3: String,
    /// The lineage key (FREEZE-5), hex.
    pub lineage_key: String,
    /// The control key (FREEZE-6), hex.
    pub control_key: String,
    pub manifest: Manifest,
}

/// `manifest_frozen.v2`: a lineage's manifest with its plan (evidence
/// binding, launch, evidence gathering, allowed signers). Its
/// `manifest_blake3` covers the manifest and the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestFrozenV2 {
    pub lineage: String,
    /// BLAKE3 of the canonical encoding of `(manifest, plan)`, hex.
    pub manifest_blake3: String,
    /// BLAKE3 of the operator's public TOML file as read, hex.
    pub source_file_blake3: String,
    /// BLAKE3 over the ordered task list with content hashes and the trial
    /// identities, hex (FREEZE-1, CLASS-3).
    pub task_manifest_blake3: String,
    /// The lineage key (FREEZE-5), hex.
    pub lineage_key: String,
    /// The control key (FREEZE-6), hex.
    pub control_key: String,
    pub manifest: Manifest,
    /// What v2 adds (`schema::plan`).
    pub plan: crate::schema::plan::Plan,
}

/// `manifest_frozen.v3`: a v2 lineage with how its central host is
/// launched (`central up`) and the tasks left out before the freeze. Its
/// `manifest_blake3` covers the manifest, the plan and both.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestFrozenV3 {
    pub lineage: String,
    /// BLAKE3 of the canonical encoding of `(manifest, plan, central_launch,
    /// excluded_tasks)`, hex.
    pub manifest_blake3: String,
    /// BLAKE3 of the operator's public TOML file as read, hex.
    pub source_file_blake3: String,
    /// BLAKE3 over the ordered task list with content hashes and the trial
    /// identities, hex (FREEZE-1, CLASS-3).
    pub task_manifest_blake3: String,
    /// The lineage key (FREEZE-5), hex.
    pub lineage_key: String,
    /// The control key (FREEZE-6), hex.
    pub control_key: String,
    pub manifest: Manifest,
    /// What v2 adds (`schema::plan`).
    pub plan: crate::schema::plan::Plan,
    /// How the central host is launched, if it is benchledger's to launch.
    pub central_launch: Option<CentralLaunch>,
    /// Tasks left out before the freeze (CLASS-1), in the order given.
    pub excluded_tasks: Vec<ExcludedTask>,
    /// The frozen witnesses and quorum (TRUST-6), if any.
    pub witnessing: Option<Witnessing>,
}

impl ManifestFrozenV3 {
    /// The lineage as a v2 record, its launch and its excluded tasks (the
    /// witnessing is `self.witnessing`).
    pub fn split(&self) -> (ManifestFrozenV2, Option<CentralLaunch>, Vec<ExcludedTask>) {
        (
            ManifestFrozenV2 {
                lineage: self.lineage.clone(),
                manifest_blake3: self.manifest_blake3.clone(),
                source_file_blake3: self.source_file_blake3.clone(),
                task_manifest_blake3: self.task_manifest_blake3.clone(),
                lineage_key: self.lineage_key.clone(),
                control_key: self.control_key.clone(),
                manifest: self.manifest.clone(),
                plan: self.plan.clone(),
            },
            self.central_launch.clone(),
            self.excluded_tasks.clone(),
        )
    }

    /// A v2 record with its launch, its excluded tasks and its witnessing.
    pub fn join(
        v2: ManifestFrozenV2,
        central_launch: Option<CentralLaunch>,
        excluded_tasks: Vec<ExcludedTask>,
        witnessing: Option<Witnessing>,
    ) -> ManifestFrozenV3 {
        let ManifestFrozenV2 {
            lineage,
            manifest_blake3,
            source_file_blake3,
            task_manifest_blake3,
            lineage_key,
            control_key,
            manifest,
            plan,
        } = v2;
        ManifestFrozenV3 {
            lineage,
            manifest_blake3,
            source_file_blake3,
            task_manifest_blake3,
            lineage_key,
            control_key,
            manifest,
            plan,
            central_launch,
            excluded_tasks,
            witnessing,
        }
    }
}

impl ManifestFrozenV2 {
    /// The v1 fields (what every projection of a lineage reads).
    pub fn v1_view(&self) -> ManifestFrozen {
        ManifestFrozen {
            lineage: self.lineage.clone(),
            manifest_blake3: self.manifest_blake3.clone(),
            source_file_blake3: self.source_file_blake3.clone(),
            task_manifest_blake3: self.task_manifest_blake3.clone(),
            lineage_key: self.lineage_key.clone(),
            control_key: self.control_key.clone(),
            manifest: self.manifest.clone(),
        }
    }
}

crate::schema::named::named_enum! {
    /// Who signs off.
    pub enum SignOffRole {
        /// The operator who will run the lineage.
        Operator = "operator",
        /// A second person who reviewed the frozen manifest.
        Reviewer = "reviewer",
    }
}

/// A sign-off of a frozen manifest (FREEZE-7).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestSignedOff {
    pub lineage: String,
    /// The manifest hash signed off (must equal the frozen one).
    pub manifest_blake3: String,
    /// Operator or reviewer.
    pub role: SignOffRole,
    /// The person's name.
    pub name: String,
}

/// `manifest_signed_off.v2`: a sign-off signed with a key that the frozen
/// plan lists for the role (FREEZE-7, TRUST-3). The signature is Ed25519
/// over the sign-off text of `method::trust::sign_off_text` (SPEC section
/// 11), a C2SP signed note's text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestSignedOffV2 {
    pub lineage: String,
    /// The manifest hash signed off (must equal the frozen one).
    pub manifest_blake3: String,
    /// Operator or reviewer.
    pub role: SignOffRole,
    /// The C2SP key name of the signing key.
    pub key_name: String,
    /// The C2SP key id of the signing key, 8 lowercase hex digits.
    pub key_id: String,
    /// The 64-byte Ed25519 signature, standard padded base64.
    pub signature: String,
}

// ---------------------------------------------------------------------------
// Transparency log
// ---------------------------------------------------------------------------

/// `checkpoint_recorded.v1`: a checkpoint of every record before this one
/// (TRUST-1): the C2SP checkpoint body (origin, tree size, RFC 6962 root over
/// the leaves `u64_be(seq) || link hash`), and the signed note when a key
/// signed it. Appended by `checkpoint sign` and after every `group seal`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointRecorded {
    /// The log's origin line, `benchledger/ledger/<ledger_id>`.
    pub origin: String,
    /// The tree size, in records: always this record's own seq.
    pub tree_size: u64,
    /// The Merkle root of the first `tree_size` records, 64 lowercase hex.
    pub root: String,
    /// The checkpoint as a C2SP signed note; `None` when unsigned.
    pub note: Option<String>,
    /// The C2SP verifier key that signed `note`; `None` when unsigned.
    pub signer: Option<String>,
    /// The group whose seal this checkpoint follows; `None` for
    /// `checkpoint sign`.
    pub sealed: Option<GroupRef>,
}

/// `checkpoint_cosigned.v1` (TRUST-6): a frozen witness's C2SP
/// cosignature/v1 of a signed checkpoint of this log, as the witness
/// answered it to `checkpoint witness` and verified with its frozen key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointCosigned {
    /// The lineage whose frozen witness set names the witness.
    pub lineage: String,
    /// The witness's name in that manifest.
    pub witness: String,
    /// The cosigned checkpoint's tree size, in records.
    pub tree_size: u64,
    /// The cosigned checkpoint's Merkle root, 64 lowercase hex.
    pub root: String,
    /// The cosignature as a C2SP note signature line (with its newline).
    pub signature: String,
    /// The cosignature's own timestamp, POSIX seconds.
    pub cosigned_at: u64,
}

/// `checkpoint_witness_failed.v1` (TRUST-6): a frozen witness that did not
/// cosign the checkpoint sent to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointWitnessFailed {
    /// The lineage whose frozen witness set names the witness.
    pub lineage: String,
    /// The witness's name in that manifest.
    pub witness: String,
    /// The checkpoint's tree size, in records.
    pub tree_size: u64,
    /// The checkpoint's Merkle root, 64 lowercase hex.
    pub root: String,
    /// The witness's HTTP status, when it answered.
    pub http_status: Option<u16>,
    /// What happened, in one line.
    pub message: String,
}

// ---------------------------------------------------------------------------
// Gates
// ---------------------------------------------------------------------------

/// An STS identity proof (GATE-1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdentityChecked {
    pub lineage: String,
    /// The selector used, as frozen (`profile:NAME`, `role:ARN-redacted`, `instance_profile`).
    pub selector: String,
    /// The region of the call.
    pub region: String,
    /// The endpoint override in force (`BENCHLEDGER_AWS_ENDPOINT_URL`), if any.
    pub endpoint_override: Option<String>,
    /// Names (never values) of ambient AWS variables that were present and ignored.
    pub ambient_variables_ignored: Vec<String>,
    /// The account STS answered, committed and redacted; none when the call failed.
    pub account: Option<Committed>,
    /// The principal ARN STS answered, committed and redacted.
    pub principal: Option<Committed>,
    /// Pass when account and principal equal the private manifest's.
    pub status: Status,
    /// Why it failed, if it did (never a credential).
    pub error: Option<String>,
}

/// The vCPU quota gate (GATE-2). All counts are vCPUs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuotaChecked {
    pub lineage: String,
    pub region: String,
    /// The quota code (`L-1216C47A`).
    pub quota_code: String,
    pub quota_vcpu: u64,
    /// Current regional use (running + pending instances).
    pub used_vcpu: u64,
    /// quota - used (0 when used exceeds quota).
    pub available_vcpu: u64,
    /// concurrency x sandbox vCPU + headroom (+ central vCPU if to be provisioned).
    pub required_vcpu: u64,
    /// Pass when available >= required.
    pub status: Status,
    /// Why it failed, if the call failed.
    pub error: Option<String>,
}

crate::schema::named::named_enum! {
    /// The kinds of generic gate observation.
    pub enum CheckKind {
        /// Daemon health endpoint (GATE-3).
        DaemonHealth = "daemon_health",
        /// One minimal request per exact route target (GATE-3, PLANE-2).
        ProviderSentinel = "provider_sentinel",
        /// A canary result marker (GATE-5, GATE-8).
        Canary = "canary",
        /// A config validated by the pinned software (GATE-7).
        ConfigValidated = "config_validated",
        /// Sandbox-to-daemon network reachability (GATE-3).
        NetworkReachability = "network_reachability",
        /// A source tree's commit or hash (GATE-4).
        SourceHash = "source_hash",
        /// A binary's SHA-256 and architecture (GATE-4).
        BinaryHash = "binary_hash",
        /// No live sandboxes with this run's tag before a batch (GATE-3).
        Residue = "residue",
        /// The central host as EC2 describes it, against the frozen one
        /// (FREEZE-8, GATE-3): launched, adopted or checked; the target is its
        /// instance id (or `none`), the details its AMI, type, state, tags,
        /// address and launch time.
        CentralHost = "central_host",
        /// The provisioned central host terminated and the exact-tag query
        /// for it answering empty (CLEAN-1, CLEAN-3).
        CentralTeardown = "central_teardown",
    }
}

/// A gate observation, pass or fail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckRecorded {
    pub lineage: String,
    /// The group it was taken for, if any.
    pub group: Option<String>,
    /// What was checked.
    pub check: CheckKind,
    /// The exact target: a route tier, a URL, a path, a config hash.
    pub target: String,
    /// Pass or fail.
    pub status: Status,
    /// Measured details with documented keys per kind (`http_status`,
    /// `latency_ms`, `request_id`, `sha256`, `arch`, `exit_code`, ...).
    pub details: BTreeMap<String, String>,
}

// ---------------------------------------------------------------------------
// Groups and cases
// ---------------------------------------------------------------------------

/// A group's daemon start (GATE-4, FREEZE-4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupOpened {
    pub group: GroupRef,
    /// SHA-256 of the daemon binary, hex.
    pub binary_sha256: String,
    /// SHA-256 of the daemon config, hex.
    pub config_sha256: String,
    /// The daemon's ports.
    pub ports: Vec<u16>,
    /// The policy/metering database path.
    pub db_path: String,
    /// The group's output directory.
    pub out_dir: String,
}

/// A case identity consumed (CASE-1, CASE-2). Appended only after every
/// gate held; Harbor is called only after this is durable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaseStarted {
    pub group: GroupRef,
    pub case: CaseRef,
    /// The Harbor trial name the rendered config uses.
    pub trial_name: String,
    /// BLAKE3 of the TrialConfig launched (equal to the validated one, GATE-7), hex.
    pub trial_config_blake3: String,
    /// The seqs of the gate observations the start relied on.
    pub gate_seqs: Vec<u64>,
    /// The command launched (program and arguments), if any.
    pub command: Vec<String>,
}

/// The end of a case's launched command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaseProcessExited {
    pub group: GroupRef,
    pub case: CaseRef,
    /// The exit code, if it exited.
    pub exit_code: Option<i32>,
    /// The signal, if it was killed.
    pub signal: Option<i32>,
    /// Wall time, ms.
    pub duration_ms: u64,
    /// The run-scoped log file.
    pub log_path: String,
    /// BLAKE3 of the log file, hex.
    pub log_blake3: String,
}

/// Harbor's `task_id` union, kept in whichever shape it came.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HarborTaskId {
    /// Git task: repository URL.
    pub git_url: Option<String>,
    /// Git task: commit.
    pub git_commit_id: Option<String>,
    /// Git or local task: path.
    pub path: Option<String>,
    /// Package task: organization.
    pub org: Option<String>,
    /// Package task: name.
    pub name: Option<String>,
    /// Package task: ref.
    #[serde(rename = "ref")]
    pub git_ref: Option<String>,
}

/// A Harbor TrialResult (harbor-formats.md section 3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrialResultRecorded {
    pub group: GroupRef,
    /// The ledger case it belongs to.
    pub case: CaseRef,
    /// Harbor's trial name (the directory name).
    pub trial_name: String,
    /// Harbor's per-attempt uuid (`id`).
    pub attempt_id: String,
    /// Harbor's task name.
    pub task_name: String,
    /// Harbor's task id, as written.
    pub task_id: HarborTaskId,
    /// The dataset name, if any.
    pub source: Option<String>,
    /// Harbor's task checksum (sha256 dirhash), hex.
    pub task_checksum: String,
    /// Agent name and version (`terminus-2`, `2.0.0`).
    pub agent: String,
    /// The model name Harbor reported.
    pub model: Option<String>,
    /// `verifier_result.rewards`, numbers exactly as written; none when the
    /// verifier never ran.
    pub rewards: Option<BTreeMap<String, NumberText>>,
    /// `exception_info.exception_type`, if any.
    pub exception_type: Option<String>,
    /// BLAKE3 of `exception_info.exception_message`, hex (the text itself
    /// stays in the artifact).
    pub exception_message_blake3: Option<String>,
    /// Trial start and end, as written (UTC, `Z`).
    pub started_at: Option<String>,
    /// Trial end.
    pub finished_at: Option<String>,
    /// Agent token counts as Harbor reported them (input includes cache).
    pub n_input_tokens: Option<u64>,
    pub n_cache_tokens: Option<u64>,
    pub n_output_tokens: Option<u64>,
    /// BLAKE3 of the canonical JSON of the embedded TrialConfig, hex.
    pub config_blake3: String,
    /// The result file's path as ingested.
    pub result_path: String,
    /// BLAKE3 of the result file bytes, hex.
    pub result_blake3: String,
}

/// A file kept as evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactRecorded {
    /// The group, if it belongs to one.
    pub group: Option<GroupRef>,
    /// What it is (`harbor_job_result`, `harbor_job_lock`, `traces_jsonl`, ...).
    pub role: String,
    /// Its path as given.
    pub path: String,
    pub bytes: u64,
    /// BLAKE3 of its bytes, hex.
    pub blake3: String,
}

// ---------------------------------------------------------------------------
// BitRouter evidence (bitrouter-formats.md section 2)
// ---------------------------------------------------------------------------

crate::schema::named::named_enum! {
    /// Trace `harness`.
    pub enum Harness {
        Generic = "generic",
        Hermes = "hermes",
        ClaudeCode = "claude_code",
        Codex = "codex",
        Smithers = "smithers",
        Terminus2 = "terminus_2",
        OpenClaw = "open_claw",
        Unknown = "unknown",
    }
}

crate::schema::named::named_enum! {
    /// Trace `protocol`.
    pub enum Protocol {
        ChatCompletions = "chat_completions",
        Messages = "messages",
        Responses = "responses",
        OpenClawRuntime = "open_claw_runtime",
        Unknown = "unknown",
    }
}

crate::schema::named::named_enum! {
    /// Trace `outcome.status`.
    pub enum TraceStatus {
        Completed = "completed",
        Failed = "failed",
        ClientCancelled = "client_cancelled",
    }
}

/// One ingress trace row. A field named like a trace key holds that key's
/// value unless its doc says otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestTraced {
    pub group: GroupRef,
    /// The persisted request id (trace `id`).
    pub request_id: String,
    /// `captured_at`, as written.
    pub captured_at: String,
    pub harness: Harness,
    pub protocol: Protocol,
    pub method: String,
    pub path: String,
    /// `outcome.http_status`.
    pub http_status: u16,
    /// `outcome.status`.
    pub status: TraceStatus,
    /// BLAKE3 of the source line, hex.
    pub line_blake3: String,
}

/// One policy decision row. A field named like a row key holds that key's
/// value unless its doc says otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyDecisionRecorded {
    pub group: GroupRef,
    /// `request_id`, when it is the ingress id.
    pub request_id: Option<String>,
    /// `ingress_request_id_sha256` (`sha256:<hex>`), when present.
    pub ingress_request_id_sha256: Option<String>,
    /// `captured_at`, as written.
    pub captured_at: Option<String>,
    pub input_model: String,
    /// `policy`, if present.
    pub policy: Option<String>,
    /// `reason` (a known value of one period of the formats doc).
    pub reason: String,
    /// `baseline_tier`, if present.
    pub baseline_tier: Option<String>,
    /// `selected_tier`, if present.
    pub selected_tier: Option<String>,
    /// `selected_model`, if present.
    pub selected_model: Option<String>,
    pub pinned: bool,
    pub locked: bool,
    pub trialed: bool,
    /// BLAKE3 of the source line, hex.
    pub line_blake3: String,
}

crate::schema::named::named_enum! {
    /// Values of a usage row's `usage_origin` (text to value:
    /// `evidence::bitrouter::USAGE_ORIGINS`).
    pub enum UsageOrigin {
        ProviderReported = "provider_reported",
        AuthoritativeReceipt = "authoritative_receipt",
        Estimated = "estimated",
        Unknown = "unknown",
    }
}

crate::schema::named::named_enum! {
    /// Usage `charge_status`.
    pub enum ChargeStatus {
        Computed = "computed",
        NotCharged = "not_charged",
        Unknown = "unknown",
        LegacyUnknown = "legacy_unknown",
    }
}

crate::schema::named::named_enum! {
    /// Usage `reconciliation_status`.
    pub enum ReconciliationStatus {
        NotApplicable = "not_applicable",
        Pending = "pending",
        Computed = "computed",
        NotCharged = "not_charged",
        Unknown = "unknown",
    }
}

crate::schema::named::named_enum! {
    /// Usage `charge_evidence.pricing_source`.
    pub enum PricingSource {
        Configured = "configured",
        Override = "override",
        AuthoritativeReceipt = "authoritative_receipt",
        Unknown = "unknown",
    }
}

/// The four buckets plus reasoning, all observed (SETTLE-1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TokenBuckets {
    pub uncached_input_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    /// Output tokens (without reasoning).
    pub output_tokens: u64,
    /// Separately reported reasoning tokens.
    pub reasoning_tokens: u64,
}

/// One usage row. A field named like a row key holds that key's value
/// unless its doc says otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageRecorded {
    pub group: GroupRef,
    pub request_id: String,
    pub provider_id: String,
    pub model_id: String,
    /// `prompt_tokens` (= uncached + cache read + cache write).
    pub prompt_tokens: u64,
    /// `completion_tokens` (= output + reasoning).
    pub completion_tokens: u64,
    pub buckets: TokenBuckets,
    /// `final_charge_micro_usd`, if present.
    pub final_charge_micro_usd: Option<u64>,
    pub charge_status: ChargeStatus,
    pub reconciliation_status: ReconciliationStatus,
    pub usage_origin: UsageOrigin,
    /// `status` (`completed|failed`).
    pub status: Option<String>,
    /// `error_code`, if any.
    pub error_code: Option<String>,
    /// `charge_evidence.effective_rates` (micro-USD per token), if present.
    pub rates: Option<crate::schema::money::Rates>,
    /// `charge_evidence.pricing_source`, if present.
    pub pricing_source: Option<PricingSource>,
    /// `charge_evidence.pricing_version`, if present.
    pub pricing_version: Option<String>,
    /// The charge recomputed from `rates` with BitRouter's rule, if rates were present.
    pub recomputed_charge_micro_usd: Option<u64>,
    /// Whether the recomputed charge equals `final_charge_micro_usd`.
    pub recompute_matches: Option<bool>,
    /// BLAKE3 of the source line, hex.
    pub line_blake3: String,
}

crate::schema::named::named_enum! {
    /// A receipt's `state`; the latest receipt decides the settlement (SETTLE-5).
    pub enum ReceiptState {
        Pending = "pending",
        Computed = "computed",
        NotCharged = "not_charged",
        Unknown = "unknown",
    }
}

/// One settlement receipt row. A field named like a row key holds that
/// key's value unless its doc says otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReceiptRecorded {
    pub group: GroupRef,
    pub request_id: String,
    pub state: ReceiptState,
    /// `provider_id`, if present.
    pub provider_id: Option<String>,
    /// `model_id`, if present.
    pub model_id: Option<String>,
    /// `usage`.
    pub buckets: TokenBuckets,
    /// `final_charge_micro_usd`: present iff `computed`.
    pub final_charge_micro_usd: Option<u64>,
    /// BLAKE3 of the source bytes, hex.
    pub source_blake3: String,
}

/// One benchmark outcome row. A field named like a row key holds that
/// key's value unless its doc says otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutcomeRecorded {
    pub group: GroupRef,
    /// `request_id`; rows without it are analytical only (JOIN-4).
    pub request_id: Option<String>,
    pub session_key: String,
    pub task_id: String,
    /// `reward`, exactly as written.
    pub reward: NumberText,
    /// `failed_reason`, if any.
    pub failed_reason: Option<String>,
    /// `trial_name`, if any (diagnostic, JOIN-4).
    pub trial_name: Option<String>,
    /// BLAKE3 of the source line, hex.
    pub line_blake3: String,
}

crate::schema::named::named_enum! {
    /// The two classes of the security-policy skip (CASE-6).
    pub enum RefusalClass {
        /// The provider refused on policy grounds (HTTP 403).
        ProviderPolicyRefusal = "provider_policy_refusal",
        /// A network security policy denied the call (HTTP 403).
        NetworkSecurityPolicyDenied = "network_security_policy_denied",
    }
}

/// Sanitized 403 evidence for one case attempt (CASE-6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecurityRefusalRecorded {
    pub group: GroupRef,
    /// The case attempt.
    pub case: CaseRef,
    /// The normalized class.
    pub class: RefusalClass,
    /// The HTTP status observed (must be 403 for the skip).
    pub http_status: u16,
    /// The request id of the refused call, if known.
    pub request_id: Option<String>,
    /// BLAKE3 of the sanitized evidence file, hex.
    pub evidence_blake3: String,
}

// ---------------------------------------------------------------------------
// Cleanup
// ---------------------------------------------------------------------------

/// One EC2 resource found by a query.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct FoundResource {
    /// `instance`, `volume` or `network_interface`.
    pub resource: String,
    /// The resource id.
    pub id: String,
    /// Its state or status as answered.
    pub state: String,
    /// How it was found (`run_tag`, `attachment_of:i-...`).
    pub found_by: String,
}

impl FoundResource {
    /// Whether it is the retained central host `central` (CLEAN-2): the
    /// instance itself, or a volume or interface found attached to it.
    pub fn is_central(&self, central: Option<&str>) -> bool {
        let Some(c) = central else {
            return false;
        };
        if self.resource == "instance" {
            return self.id == c;
        }
        let attached = format!("attachment_of:{c}");
        self.found_by.split(',').any(|h| h == attached)
    }
}

/// An exact-tag residue audit (CLEAN-1..3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CleanupAudited {
    pub group: GroupRef,
    /// The region queried.
    pub region: String,
    /// The redacted identity the queries ran as.
    pub identity: String,
    /// The exact tag filters used (`key=value`).
    pub filters: Vec<String>,
    /// Instance ids the ledger tracked for the group and followed.
    pub tracked_instance_ids: Vec<String>,
    /// Every resource found, excluded ones included.
    pub found: Vec<FoundResource>,
    /// The central host instance id excluded by the manifest, if any.
    pub excluded_central_instance_id: Option<String>,
    /// Pass when nothing but the excluded host was found.
    pub status: Status,
    /// Why the audit could not run, if it could not.
    pub error: Option<String>,
}

/// One sample of the run-tagged sandbox count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MonitorSampled {
    pub group: GroupRef,
    /// Live run-tagged sandboxes (pending, running, shutting-down, stopping, stopped).
    pub sandbox_count: u64,
    pub instance_ids: Vec<String>,
}

/// One terminate or delete call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResidueTerminated {
    pub group: GroupRef,
    /// The resource acted on (proven the run's by the audit at `audit_seq`).
    pub resource: FoundResource,
    /// The audit that proved it belongs to the run.
    pub audit_seq: u64,
    /// The API call made.
    pub action: String,
    /// What the API answered.
    pub answer: String,
}

// ---------------------------------------------------------------------------
// Verdicts, lineage, control
// ---------------------------------------------------------------------------

/// No more launches for a group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupClosed {
    pub group: GroupRef,
}

/// One row of the verdict table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateRow {
    /// The gate (`manifest`, `attempts`, `trial_result`, ...).
    pub gate: String,
    /// Whether it holds.
    pub holds: bool,
    /// The evidence behind it: seqs, ids, counts.
    pub evidence: String,
}

/// A group's attested verdict (VERDICT-1..4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupSealed {
    pub group: GroupRef,
    /// The terminal status (`accepted`, `rejected_runtime`, ...).
    pub status: String,
    /// Every gate row.
    pub rows: Vec<GateRow>,
    /// Case identities skipped under the security-policy rule.
    pub skipped_security_policy: Vec<CaseRef>,
    /// The version of the projection code that computed it.
    pub projection_version: u32,
}

/// Reward feedback applied after an accepted round (LINEAGE-3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeedbackApplied {
    /// The accepted round the feedback comes from.
    pub group: GroupRef,
    /// BLAKE3 of the policy snapshot before, hex.
    pub policy_snapshot_before: String,
    /// BLAKE3 of the policy snapshot after, hex.
    pub policy_snapshot_after: String,
}

/// An accepted control in the catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ControlRegistered {
    /// The control group.
    pub group: GroupRef,
    /// Its control key (FREEZE-6), hex.
    pub control_key: String,
    /// BLAKE3 of its evidence artifact, hex.
    pub artifact_blake3: String,
}

/// A lineage reusing an accepted control.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ControlReused {
    /// The lineage that reuses.
    pub lineage: String,
    /// The control group reused.
    pub control: GroupRef,
    /// The matching control key, hex.
    pub control_key: String,
    /// The verified artifact checksum, hex.
    pub artifact_blake3: String,
}

/// A postprocessing-only price snapshot (FREEZE-3, SETTLE-7).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PriceSnapshotRecorded {
    pub lineage: String,
    /// Why (repricing, a corrected source).
    pub reason: String,
    pub prices: Vec<PriceRecord>,
}

/// A hard stop (VERDICT-3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineageStopped {
    pub lineage: String,
    /// The rule id that stopped it.
    pub rule: String,
    /// What happened.
    pub reason: String,
    /// The seq of the evidence, if one.
    pub evidence_seq: Option<u64>,
}

crate::schema::named::named_enum! {
    /// Why a started case ended `terminal_invalid` without a valid TrialResult
    /// (CASE-3).
    pub enum InvalidReason {
        /// The sandbox environment disconnected.
        EnvironmentDisconnect = "environment_disconnect",
        /// The verifier never produced a result.
        MissingVerifierResult = "missing_verifier_result",
        /// Harbor's output is corrupt or incomplete.
        CorruptOutput = "corrupt_output",
        /// The agent raised a generic exception.
        AgentException = "agent_exception",
        /// The controller crashed after `started`; Harbor left no result.
        ControllerCrash = "controller_crash",
    }
}

/// A started case made terminal-invalid on cited evidence (CASE-3, CASE-8).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaseInvalidated {
    pub group: GroupRef,
    pub case: CaseRef,
    /// The typed reason.
    pub reason: InvalidReason,
    /// Where the evidence file was (a Harbor trial directory listing, the
    /// process log): a lost session or an exit code alone is not evidence.
    pub evidence_path: String,
    /// BLAKE3 of the evidence file's bytes, hex.
    pub evidence_blake3: String,
}

// ---------------------------------------------------------------------------
// Evidence binding (BIND)
// ---------------------------------------------------------------------------

/// One reward file of a trial's verifier directory (`verifier/reward.txt`,
/// `verifier/reward.json`), as Harbor's verifier left it (BIND-2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RewardFile {
    /// The file's path as ingested.
    pub path: String,
    /// BLAKE3 of its bytes, hex.
    pub blake3: String,
    /// Its rewards, each value's JSON text as written (`reward.txt` gives
    /// `{"reward": <its trimmed text>}`); none when the file could not be
    /// read as rewards (`problem` says why).
    pub rewards: Option<BTreeMap<String, String>>,
    /// Why the file gives no rewards, if it does not.
    pub problem: Option<String>,
}

/// `trial_result_recorded.v2`: a Harbor TrialResult (harbor-formats.md
/// section 3) with what binds it to its launch (BIND-1, BIND-2). The v1
/// fields keep their meaning, except that a reward value that is not a JSON
/// number is kept (as its JSON text) rather than refused: it is no reward.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrialResultRecordedV2 {
    pub group: GroupRef,
    /// The ledger case it belongs to.
    pub case: CaseRef,
    /// Harbor's trial name (the directory name).
    pub trial_name: String,
    /// Harbor's per-attempt uuid (`id`).
    pub attempt_id: String,
    /// Harbor's task name.
    pub task_name: String,
    /// Harbor's task id, as written.
    pub task_id: HarborTaskId,
    /// The dataset name, if any.
    pub source: Option<String>,
    /// Harbor's task checksum (sha256 dirhash), hex; compared with the
    /// task's frozen `content_sha256` (BIND-1).
    pub task_checksum: String,
    /// Agent name and version (`terminus-2@2.0.0`).
    pub agent: String,
    /// The model name Harbor reported.
    pub model: Option<String>,
    /// `verifier_result.rewards`, each value's JSON text as written (numbers
    /// exactly as written); none when the verifier never ran.
    pub rewards: Option<BTreeMap<String, String>>,
    /// `exception_info.exception_type`, if any.
    pub exception_type: Option<String>,
    /// BLAKE3 of `exception_info.exception_message`, hex.
    pub exception_message_blake3: Option<String>,
    /// Trial start, as written (UTC, `Z`).
    pub started_at: Option<String>,
    /// Trial end.
    pub finished_at: Option<String>,
    /// Agent token counts as Harbor reported them (input includes cache).
    pub n_input_tokens: Option<u64>,
    pub n_cache_tokens: Option<u64>,
    pub n_output_tokens: Option<u64>,
    /// BLAKE3 of the canonical JSON of the embedded TrialConfig, hex (as v1).
    pub config_blake3: String,
    /// BLAKE3 of the canonical JSON of the embedded TrialConfig's content:
    /// members equal to Harbor 0.25.0's defaults and nulls left out, numbers
    /// by value (BIND-1); the same digest of the launched config must equal it.
    pub config_content_blake3: String,
    /// Field paths where the embedded TrialConfig's content differs from the
    /// case's frozen rendering, as found at ingest (names only, never values);
    /// those prefixed `config.json: ` are where the trial's own config.json
    /// differs from it (BIND-11).
    pub config_differences: Vec<String>,
    /// The verifier's reward files, in name order (BIND-2).
    pub reward_files: Vec<RewardFile>,
    /// The result file's path as ingested.
    pub result_path: String,
    /// BLAKE3 of the result file bytes, hex.
    pub result_blake3: String,
}

impl TrialResultRecorded {
    /// The v2 form of a v1 record: no content digest (empty), no
    /// differences found, no reward files seen.
    pub fn to_v2(&self) -> TrialResultRecordedV2 {
        TrialResultRecordedV2 {
            group: self.group.clone(),
            case: self.case.clone(),
            trial_name: self.trial_name.clone(),
            attempt_id: self.attempt_id.clone(),
            task_name: self.task_name.clone(),
            task_id: self.task_id.clone(),
            source: self.source.clone(),
            task_checksum: self.task_checksum.clone(),
            agent: self.agent.clone(),
            model: self.model.clone(),
            rewards: self.rewards.clone(),
            exception_type: self.exception_type.clone(),
            exception_message_blake3: self.exception_message_blake3.clone(),
            started_at: self.started_at.clone(),
            finished_at: self.finished_at.clone(),
            n_input_tokens: self.n_input_tokens,
            n_cache_tokens: self.n_cache_tokens,
            n_output_tokens: self.n_output_tokens,
            config_blake3: self.config_blake3.clone(),
            config_content_blake3: String::new(),
            config_differences: Vec::new(),
            reward_files: Vec::new(),
            result_path: self.result_path.clone(),
            result_blake3: self.result_blake3.clone(),
        }
    }
}

/// `harbor_job_recorded.v1`: what a Harbor job directory's own files say
/// about how its trials ran (BIND-1: Harbor retries stay 0, CASE-5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HarborJobRecorded {
    pub group: GroupRef,
    /// The job directory's name (Harbor's job name).
    pub job_name: String,
    /// The job directory's path as ingested.
    pub path: String,
    /// The trial directories of the job, by name.
    pub trial_names: Vec<String>,
    /// BLAKE3 of the job's `config.json`, if present.
    pub config_blake3: Option<String>,
    /// `retry.max_retries` of `config.json` (0 when the sparse file leaves
    /// the default out); none without the file.
    pub config_max_retries: Option<u64>,
    /// BLAKE3 of the job's `lock.json`, if present.
    pub lock_blake3: Option<String>,
    /// `retry.max_retries` of `lock.json`; none without the file or field.
    pub lock_max_retries: Option<u64>,
    /// `harbor.version` of `lock.json`, if present.
    pub harbor_version: Option<String>,
    /// BLAKE3 of the job's `result.json`, if present.
    pub result_blake3: Option<String>,
    /// `stats.n_retries` of `result.json`; none without the file or field.
    pub n_retries: Option<u64>,
}

/// `credential_found.v1`: a credential shape in an ingested file (BIND-8).
/// The run leaked it: the group's `secrets` row fails. The value is never
/// recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CredentialFound {
    /// The group the file was ingested into.
    pub group: GroupRef,
    /// The file's path as ingested.
    pub file: String,
    /// BLAKE3 of the file's bytes, hex.
    pub file_blake3: String,
    /// Where in the file: a JSON field path (`exception_info.exception_message`),
    /// prefixed `line N: ` in a JSON Lines file, or `(text)` for text outside
    /// any one field.
    pub field: String,
    /// The credential shape's name (`openai_project_key`, ...).
    pub shape: String,
    /// The value's redacted form: its length and shape, never a character of it.
    pub redacted: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_fits_its_bound_because_the_large_payloads_are_boxed() {
        assert!(std::mem::size_of::<Event>() <= EVENT_BYTES_MAX);
        // Each boxed payload would break the bound in place.
        for (name, bytes) in [
            ("ManifestFrozen", std::mem::size_of::<ManifestFrozen>()),
            ("ManifestFrozenV2", std::mem::size_of::<ManifestFrozenV2>()),
            (
                "TrialResultRecorded",
                std::mem::size_of::<TrialResultRecorded>(),
            ),
            (
                "TrialResultRecordedV2",
                std::mem::size_of::<TrialResultRecordedV2>(),
            ),
            ("UsageRecorded", std::mem::size_of::<UsageRecorded>()),
        ] {
            assert!(bytes > EVENT_BYTES_MAX, "{name} is {bytes} bytes: unbox it");
        }
    }

    #[test]
    fn kinds_are_unique_and_versioned() {
        let mut seen = std::collections::BTreeSet::new();
        for k in Event::KINDS {
            assert!(seen.insert(*k), "duplicate kind {k}");
            assert!(
                k.rsplit_once(".v")
                    .is_some_and(|(_, v)| v.parse::<u32>().is_ok()),
                "{k}"
            );
        }
    }

    #[test]
    fn strings_lists_every_string_with_its_path() {
        let e = Event::LedgerCreated(LedgerCreated {
            ledger_id: "ab".into(),
            format_version: 1,
            tool_version: "benchledger 0.1.0".into(),
        });
        let s = e.strings();
        assert!(s.contains(&("ledger_id".into(), "ab".into())));
        assert!(s.contains(&("tool_version".into(), "benchledger 0.1.0".into())));
    }
}

// ---------------------------------------------------------------------------
// The driver (RUN)
// ---------------------------------------------------------------------------

/// A process as the kernel names it: a pid is reused, so it is matched with
/// its start time and the machine's boot (RUN-2, RUN-3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessRef {
    /// The host name of the machine.
    pub host: String,
    /// The kernel's boot id (`/proc/sys/kernel/random/boot_id`).
    pub boot_id: String,
    /// The process id.
    pub pid: u32,
    /// The process's start time, clock ticks after boot (`/proc/PID/stat`
    /// field 22).
    pub start_ticks: u64,
}

/// The process a started case was launched as (RUN-3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaseLaunched {
    pub group: GroupRef,
    pub case: CaseRef,
    /// The launched process; its process group id is its pid.
    pub process: ProcessRef,
    /// The launch deadline, ns since the epoch (the case's start plus the
    /// frozen `launch.timeout_sec`).
    pub deadline_utc_ns: u64,
}

crate::schema::named::named_enum! {
    /// Which external command a driver ran (RUN-4).
    pub enum CommandRole {
        /// A case's frozen launch command.
        Launch = "launch",
        /// The frozen usage export.
        UsageExport = "usage_export",
        /// One receipt poll (the frozen `evidence.reconcile`).
        ReceiptPoll = "receipt_poll",
        /// `case run`'s command.
        CaseCommand = "case_command",
    }
}

/// An external command killed at its deadline (RUN-4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandKilled {
    /// The group it ran for.
    pub group: GroupRef,
    /// The case, for a launch or a case command.
    pub case: Option<CaseRef>,
    /// Which command.
    pub role: CommandRole,
    pub argv: Vec<String>,
    /// Its process group, killed whole.
    pub pgid: u32,
    /// The signal sent to the group.
    pub signal: i32,
    /// The deadline it ran under, ms.
    pub deadline_ms: u64,
    /// How long it had run when killed, ms.
    pub ran_ms: u64,
}

/// A driver's lease on a group (RUN-2): taken, renewed, or released (an
/// expiry at or before the record's own time).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunLeased {
    pub group: GroupRef,
    /// The driver's random id, fixed for one `run` process.
    pub holder: String,
    /// The driver's process.
    pub process: ProcessRef,
    /// When the lease ends unless renewed, ns since the epoch.
    pub expires_utc_ns: u64,
    /// The holder this lease was taken over from, if any.
    pub taken_from: Option<String>,
}
