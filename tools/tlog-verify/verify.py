#!/usr/bin/env python3
"""Independent verifier of benchledger transparency-log artifacts.

Written from the C2SP texts (signed-note, tlog-checkpoint, tlog-cosignature)
and RFC 6962 / RFC 9162 section 2.1, sharing no code with the Rust module
(src/log/tlog); `tiles` from C2SP tlog-tiles. Ed25519 comes from the `cryptography` package, SHA-256 from
hashlib.

    verify.py note NOTE --vkey VKEY [--vkey VKEY ...]
    verify.py checkpoint NOTE --vkey LOG_VKEY [--witness VKEY ...]
    verify.py inclusion PROOF.json --vkey LOG_VKEY [--witness VKEY ...]
    verify.py consistency PROOF.json OLD_NOTE NEW_NOTE --vkey LOG_VKEY [--witness VKEY ...]
    verify.py ledger EXPORT.jsonl NOTE --vkey LOG_VKEY [--witness VKEY ...]
    verify.py tiles DIR --vkey LOG_VKEY [--witness VKEY ...]
    verify.py vectors vectors.json
    verify.py chain-vectors ledger-schema/vectors/tlog.json

A VKEY argument is the key text, or @FILE to read it from a file.
Exit status: 0 verified, 1 verification failed, 2 usage or unreadable input.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import hashlib
import json
import re
import sys
import unicodedata
from dataclasses import dataclass, field

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

# Bounds of the benchledger profile (SPEC.md, "Transparency log").
TREE_SIZE_MAX = 1 << 48  # leaves
PROOF_HASHES_MAX = 64  # hashes
NOTE_BYTES_MAX = 128 * 1024  # bytes
SIGNATURES_MAX = 32  # signature lines (C2SP: at least 16)
KEY_NAME_BYTES_MAX = 256  # bytes
ORIGIN_BYTES_MAX = 256  # bytes
EXTENSION_LINES_MAX = 16  # lines
CHECKPOINT_BYTES_MAX = 8192  # bytes
PROOF_JSON_BYTES_MAX = 256 * 1024  # bytes
COSIGNATURE_TIME_SECONDS_MAX = (1 << 63) - 1  # seconds

ALG_ED25519 = 0x01  # signed-note: Ed25519 over the note text
ALG_COSIGNATURE_V1 = 0x04  # tlog-cosignature: timestamped Ed25519
EM_DASH_SPACE = "\u2014 "
INCLUSION_FORMAT = "benchledger/tlog-inclusion-proof/v1"
CONSISTENCY_FORMAT = "benchledger/tlog-consistency-proof/v1"
B64_RE = re.compile(r"^[A-Za-z0-9+/]*={0,2}$")


class VerifyError(Exception):
    """Verification or parsing failed; the message says which check."""


def fail(message: str) -> None:
    raise VerifyError(message)


# --- encodings -----------------------------------------------------------------


def b64_strict(text: str, what: str) -> bytes:
    """RFC 4648 section 4 base64, padded, canonical (re-encodes to itself)."""
    if len(text) % 4 != 0 or not B64_RE.match(text):
        fail(f"{what} is not padded standard base64")
    try:
        raw = base64.b64decode(text, validate=True)
    except binascii.Error:
        fail(f"{what} is not base64")
    if base64.b64encode(raw).decode("ascii") != text:
        fail(f"{what} is not canonical base64")
    return raw


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def hex32(text: str, what: str) -> bytes:
    if not re.fullmatch(r"[0-9a-f]{64}", text):
        fail(f"{what} is not 64 lowercase hex digits")
    return bytes.fromhex(text)


def check_name(text: str, limit: int, what: str) -> None:
    """Key names: non-empty, bounded, no Unicode white space, no plus sign
    (signed-note), no control characters."""
    if not text:
        fail(f"{what} is empty")
    if len(text.encode("utf-8")) > limit:
        fail(f"{what} is too long")
    for ch in text:
        if ch.isspace():
            fail(f"{what} contains white space")
        if ch == "+":
            fail(f"{what} contains a plus sign")
        if unicodedata.category(ch) == "Cc":
            fail(f"{what} contains a control character")


def check_origin(text: str) -> None:
    """A checkpoint's origin (tlog-checkpoint): non-empty, bounded, no control
    characters. Spaces and plus signs are allowed: C2SP only recommends an
    origin without them and says clients must not assume one (sum.golang.org's
    origin is "go.sum database tree")."""
    if not text:
        fail("origin is empty")
    if len(text.encode("utf-8")) > ORIGIN_BYTES_MAX:
        fail("origin is too long")
    if any(unicodedata.category(ch) == "Cc" for ch in text):
        fail("origin contains a control character")


def has_control(text: str) -> bool:
    """signed-note: no ASCII control characters but newline."""
    return any(ord(ch) < 0x20 and ch != "\n" for ch in text)


# --- RFC 6962 Merkle tree, RFC 9162 proof verification ---------------------------


def sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def leaf_hash(data: bytes) -> bytes:
    return sha256(b"\x00" + data)


def node_hash(left: bytes, right: bytes) -> bytes:
    return sha256(b"\x01" + left + right)


def largest_power_of_two_below(n: int) -> int:
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def mth(leaves: list[bytes]) -> bytes:
    """RFC 6962 2.1 MTH over leaf hashes."""
    if not leaves:
        return sha256(b"")
    if len(leaves) == 1:
        return leaves[0]
    k = largest_power_of_two_below(len(leaves))
    return node_hash(mth(leaves[:k]), mth(leaves[k:]))


def rfc6962_path(m: int, leaves: list[bytes]) -> list[bytes]:
    """RFC 6962 2.1.1 PATH(m, D[n]) (used to cross-check generated proofs)."""
    if len(leaves) <= 1:
        return []
    k = largest_power_of_two_below(len(leaves))
    if m < k:
        return rfc6962_path(m, leaves[:k]) + [mth(leaves[k:])]
    return rfc6962_path(m - k, leaves[k:]) + [mth(leaves[:k])]


def rfc6962_subproof(m: int, leaves: list[bytes], known: bool) -> list[bytes]:
    """RFC 6962 2.1.2 SUBPROOF(m, D[n], b)."""
    n = len(leaves)
    if m == n:
        return [] if known else [mth(leaves)]
    k = largest_power_of_two_below(n)
    if m <= k:
        return rfc6962_subproof(m, leaves[:k], known) + [mth(leaves[k:])]
    return rfc6962_subproof(m - k, leaves[k:], False) + [mth(leaves[:k])]


def check_size(size: int, what: str) -> None:
    if type(size) is not int or size < 0 or size > TREE_SIZE_MAX:
        fail(f"{what} {size!r} is not a tree size of at most 2^48")


def verify_inclusion(leaf: bytes, index: int, size: int, proof: list[bytes], root: bytes) -> None:
    """RFC 9162 2.1.3.2."""
    check_size(size, "tree size")
    if len(proof) > PROOF_HASHES_MAX:
        fail("inclusion proof is too long")
    if not 0 <= index < size:
        fail(f"leaf index {index} is not below tree size {size}")
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0:
            fail("inclusion proof has too many hashes")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        fail("inclusion proof has too few hashes")
    if r != root:
        fail("inclusion proof does not lead to the root")


def verify_consistency(old: int, new: int, proof: list[bytes], old_root: bytes, new_root: bytes) -> None:
    """RFC 9162 2.1.4.2, with equal sizes (empty proof, equal roots; at size 0
    the root SHA-256("")). A proof from size 0 to a larger size is refused:
    every tree extends the empty one, so it proves nothing, and
    transparency-dev/merkle's vectors expect an error."""
    check_size(old, "old size")
    check_size(new, "new size")
    if len(proof) > PROOF_HASHES_MAX:
        fail("consistency proof is too long")
    if old > new:
        fail(f"old size {old} exceeds new size {new}")
    if old == 0 and new > 0:
        fail(f"a consistency proof from the empty tree to size {new} proves nothing")
    if old == new:
        if proof:
            fail("consistency proof between equal sizes must be empty")
        if old == 0 and old_root != sha256(b""):
            fail("root of the empty tree is not SHA-256 of the empty string")
        if old_root != new_root:
            fail("equal sizes with different roots")
        return
    if not proof:
        fail("consistency proof is empty")
    path = ([old_root] + proof) if old & (old - 1) == 0 else list(proof)
    fn, sn = old - 1, new - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            fail("consistency proof has too many hashes")
        if fn & 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            sr = node_hash(sr, c)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        fail("consistency proof has too few hashes")
    if fr != old_root:
        fail("consistency proof does not lead to the old root")
    if sr != new_root:
        fail("consistency proof does not lead to the new root")


# --- keys (signed-note "Verifier keys"; signer keys as Go's sumdb/note) -----------


def key_id(name: str, alg: int, public: bytes) -> int:
    """SHA-256(name || 0x0A || type || public key)[:4], big-endian."""
    digest = sha256(name.encode("utf-8") + b"\n" + bytes([alg]) + public)
    return int.from_bytes(digest[:4], "big")


@dataclass(frozen=True)
class Key:
    name: str
    alg: int
    key_id: int
    public: bytes

    def encode(self) -> str:
        return f"{self.name}+{self.key_id:08x}+{b64(bytes([self.alg]) + self.public)}"


def split_key(text: str) -> tuple[str, int, int, bytes]:
    parts = text.split("+", 2)
    if len(parts) != 3:
        fail("key is not name+keyid+material")
    name, id_hex, material = parts
    check_name(name, KEY_NAME_BYTES_MAX, "key name")
    if not re.fullmatch(r"[0-9a-f]{8}", id_hex):
        fail("key id is not 8 lowercase hex digits")
    raw = b64_strict(material, "key material")
    if len(raw) != 33:
        fail("key material is not a type byte and 32 bytes")
    if raw[0] not in (ALG_ED25519, ALG_COSIGNATURE_V1):
        fail(f"unsupported signature type 0x{raw[0]:02x}")
    return name, int(id_hex, 16), raw[0], raw[1:]


# RFC 8032 section 5.1: the curve, for the one check `cryptography` does not
# offer (a key of small order would accept forged signatures).
ED_P = (1 << 255) - 19
ED_D = (-121665 * pow(121666, ED_P - 2, ED_P)) % ED_P


def ed_decode(public: bytes) -> tuple[int, int] | None:
    """RFC 8032 5.1.3 point decoding; None when not a curve point."""
    y = int.from_bytes(public, "little") & ((1 << 255) - 1)
    sign = public[31] >> 7
    if y >= ED_P:
        return None
    u, v = (y * y - 1) % ED_P, (ED_D * y * y + 1) % ED_P
    x = (u * pow(v, 3, ED_P) * pow(u * pow(v, 7, ED_P), (ED_P - 5) // 8, ED_P)) % ED_P
    if (v * x * x - u) % ED_P != 0:
        x = (x * pow(2, (ED_P - 1) // 4, ED_P)) % ED_P
    if (v * x * x - u) % ED_P != 0:
        return None
    if x == 0 and sign == 1:
        return None
    if x & 1 != sign:
        x = ED_P - x
    return x, y


def ed_double(point: tuple[int, int]) -> tuple[int, int]:
    """Affine twisted Edwards addition of a point to itself (a = -1)."""
    x, y = point
    dxy = ED_D * x * x * y * y
    x3 = (2 * x * y) * pow(1 + dxy, ED_P - 2, ED_P)
    y3 = (y * y + x * x) * pow(1 - dxy, ED_P - 2, ED_P)
    return x3 % ED_P, y3 % ED_P


def is_small_order(public: bytes) -> bool:
    point = ed_decode(public)
    if point is None:
        return False
    for _ in range(3):
        point = ed_double(point)
    return point == (0, 1)


def parse_vkey(text: str) -> Key:
    name, kid, alg, public = split_key(text)
    if ed_decode(public) is None:
        fail("public key is not an Ed25519 point")
    if is_small_order(public):
        fail("public key is a small-order point")
    if kid != key_id(name, alg, public):
        fail("key id does not match the key")
    return Key(name, alg, kid, public)


def parse_skey(text: str) -> tuple[Key, Ed25519PrivateKey]:
    if not text.startswith("PRIVATE+KEY+"):
        fail("signer key does not start with PRIVATE+KEY+")
    name, kid, alg, seed = split_key(text[len("PRIVATE+KEY+") :])
    private = Ed25519PrivateKey.from_private_bytes(seed)
    public = private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    if kid != key_id(name, alg, public):
        fail("key id does not match the key")
    return Key(name, alg, kid, public), private


# --- signed notes ---------------------------------------------------------------


@dataclass
class NoteSig:
    name: str
    key_id: int
    sig: bytes

    def line(self) -> str:
        return f"{EM_DASH_SPACE}{self.name} {b64(self.key_id.to_bytes(4, 'big') + self.sig)}\n"


def parse_note(note: str) -> tuple[str, list[NoteSig]]:
    """signed-note "Format": text, blank line, signature lines."""
    if len(note.encode("utf-8")) > NOTE_BYTES_MAX:
        fail("note is too long")
    if has_control(note):
        fail("note holds a control character")
    if not note.endswith("\n"):
        fail("note does not end in a newline")
    split = note.rfind("\n\n")
    if split < 0:
        fail("note has no blank line before its signatures")
    text, block = note[: split + 1], note[split + 2 :]
    if not block:
        fail("note has no signature lines")
    lines = block[:-1].split("\n")
    if len(lines) > SIGNATURES_MAX:
        fail("note has too many signatures")
    return text, [parse_sig_line(line) for line in lines]


def parse_sig_line(line: str) -> NoteSig:
    if not line.startswith(EM_DASH_SPACE):
        fail("signature line does not start with an em dash and a space")
    name, sep, encoded = line[len(EM_DASH_SPACE) :].partition(" ")
    if not sep:
        fail("signature line has no space after the key name")
    check_name(name, KEY_NAME_BYTES_MAX, "key name")
    raw = b64_strict(encoded, "signature")
    if len(raw) < 5:
        fail("signature is shorter than five bytes")
    return NoteSig(name, int.from_bytes(raw[:4], "big"), raw[4:])


def cosigned_message(body: str, timestamp: int) -> bytes:
    """tlog-cosignature "Ed25519 signed message"."""
    return f"cosignature/v1\ntime {timestamp}\n{body}".encode("utf-8")


def ed25519_verify(key: Key, message: bytes, sig: bytes) -> bool:
    if len(sig) != 64:
        return False
    try:
        Ed25519PublicKey.from_public_bytes(key.public).verify(sig, message)
        return True
    except InvalidSignature:
        return False


def verify_sig(key: Key, text: str, sig: bytes) -> int | None:
    """Verify one known signature; returns the cosignature time if any."""
    if key.alg == ALG_ED25519:
        if not ed25519_verify(key, text.encode("utf-8"), sig):
            fail(f"signature by known key {key.name} does not verify")
        return None
    if len(sig) != 72:
        fail(f"cosignature by {key.name} is not 72 bytes")
    timestamp = int.from_bytes(sig[:8], "big")
    if timestamp > COSIGNATURE_TIME_SECONDS_MAX:
        fail(f"cosignature by {key.name} has a timestamp above 2^63-1")
    if not ed25519_verify(key, cosigned_message(text, timestamp), sig[8:]):
        fail(f"cosignature by known key {key.name} does not verify")
    return timestamp


@dataclass
class Opened:
    text: str
    verified: dict[tuple[str, int], int | None] = field(default_factory=dict)
    unknown: int = 0


def open_note(note: str, keys: list[Key]) -> Opened:
    """signed-note "Signatures": unknown keys ignored, every known key's
    signature must verify, at least one must."""
    table: dict[tuple[str, int], Key] = {}
    for key in keys:
        if (key.name, key.key_id) in table:
            fail(f"two verifier keys share name {key.name} and key id")
        table[(key.name, key.key_id)] = key
    text, sigs = parse_note(note)
    opened = Opened(text)
    for sig in sigs:
        key = table.get((sig.name, sig.key_id))
        if key is None:
            opened.unknown += 1
            continue
        timestamp = verify_sig(key, text, sig.sig)
        opened.verified.setdefault((key.name, key.key_id), timestamp)
    if not opened.verified:
        fail("no signature from a known key")
    return opened


# --- checkpoints ----------------------------------------------------------------


@dataclass(frozen=True)
class Checkpoint:
    origin: str
    size: int
    root: bytes
    extensions: tuple[str, ...]


def parse_checkpoint(body: str) -> Checkpoint:
    """tlog-checkpoint "Note text", strictly."""
    if len(body.encode("utf-8")) > CHECKPOINT_BYTES_MAX:
        fail("checkpoint is too long")
    if not body.endswith("\n"):
        fail("checkpoint does not end in a newline")
    if has_control(body):
        fail("checkpoint holds a control character")
    lines = body[:-1].split("\n")
    if len(lines) < 3:
        fail("checkpoint has fewer than three lines")
    if any(line == "" for line in lines):
        fail("checkpoint has an empty line")
    check_origin(lines[0])
    if not re.fullmatch(r"0|[1-9][0-9]{0,19}", lines[1]):
        fail("tree size is not decimal without leading zeros, at most 20 digits")
    size = int(lines[1])
    check_size(size, "tree size")
    if len(lines[2]) != 44:
        fail("root hash is not 44 characters")
    root = b64_strict(lines[2], "root hash")
    if len(root) != 32:
        fail("root hash is not 32 bytes")
    if len(lines) - 3 > EXTENSION_LINES_MAX:
        fail("too many extension lines")
    return Checkpoint(lines[0], size, root, tuple(lines[3:]))


def verify_checkpoint_note(note: str, log_key: Key, witnesses: list[Key]) -> tuple[Checkpoint, Opened]:
    if log_key.alg != ALG_ED25519:
        fail("the log key is not an Ed25519 note key")
    if any(w.alg != ALG_COSIGNATURE_V1 for w in witnesses):
        fail("a witness key is not a cosignature/v1 key")
    opened = open_note(note, [log_key, *witnesses])
    if (log_key.name, log_key.key_id) not in opened.verified:
        fail(f"checkpoint is not signed by the log key {log_key.name}")
    return parse_checkpoint(opened.text), opened


# --- proof JSON -----------------------------------------------------------------


def load_json_strict(text: str, fields: list[str]) -> dict:
    if len(text.encode("utf-8")) > PROOF_JSON_BYTES_MAX:
        fail("proof json is too long")

    def no_duplicates(pairs: list[tuple[str, object]]) -> dict:
        keys = [k for k, _ in pairs]
        if len(set(keys)) != len(keys):
            fail("proof json repeats a field")
        return dict(pairs)

    def no_constants(name: str) -> None:
        fail(f"proof json holds {name}")

    try:
        doc = json.loads(text, object_pairs_hook=no_duplicates, parse_constant=no_constants)
    except (ValueError, RecursionError) as e:  # JSONDecodeError is a ValueError
        fail(f"proof json does not parse: {e}")
    if not isinstance(doc, dict) or sorted(doc) != sorted(fields):
        fail(f"proof json fields are not exactly {', '.join(fields)}")
    return doc


def json_int(doc: dict, name: str) -> int:
    value = doc[name]
    if type(value) is not int:
        fail(f"{name} is not an integer")
    check_size(value, name)
    return value


def json_hashes(doc: dict) -> list[bytes]:
    hashes = doc["hashes"]
    if not isinstance(hashes, list) or len(hashes) > PROOF_HASHES_MAX:
        fail("hashes is not a list of at most 64 hashes")
    out = []
    for h in hashes:
        if not isinstance(h, str) or len(h) != 44:
            fail("a proof hash is not 44 characters of base64")
        out.append(b64_strict(h, "proof hash"))
    return out


def verify_inclusion_json(text: str, log_key: Key, witnesses: list[Key]) -> Checkpoint:
    fields = ["format", "origin", "tree_size", "leaf_index", "link_hash", "hashes", "checkpoint"]
    doc = load_json_strict(text, fields)
    if doc["format"] != INCLUSION_FORMAT:
        fail("format is not " + INCLUSION_FORMAT)
    size, index = json_int(doc, "tree_size"), json_int(doc, "leaf_index")
    if not isinstance(doc["link_hash"], str) or not isinstance(doc["checkpoint"], str):
        fail("link_hash and checkpoint must be strings")
    link = hex32(doc["link_hash"], "link_hash")
    hashes = json_hashes(doc)
    checkpoint, _ = verify_checkpoint_note(doc["checkpoint"], log_key, witnesses)
    if checkpoint.origin != doc["origin"] or checkpoint.size != size:
        fail("origin or tree_size differs from the checkpoint")
    leaf = leaf_hash(index.to_bytes(8, "big") + link)
    verify_inclusion(leaf, index, size, hashes, checkpoint.root)
    return checkpoint


def verify_consistency_json(
    text: str, old_note: str, new_note: str, log_key: Key, witnesses: list[Key]
) -> tuple[Checkpoint, Checkpoint]:
    doc = load_json_strict(text, ["format", "origin", "old_size", "new_size", "hashes"])
    if doc["format"] != CONSISTENCY_FORMAT:
        fail("format is not " + CONSISTENCY_FORMAT)
    old_size, new_size = json_int(doc, "old_size"), json_int(doc, "new_size")
    hashes = json_hashes(doc)
    old, _ = verify_checkpoint_note(old_note, log_key, witnesses)
    new, _ = verify_checkpoint_note(new_note, log_key, witnesses)
    for cp, size in ((old, old_size), (new, new_size)):
        if cp.origin != doc["origin"] or cp.size != size:
            fail("origin or size differs from a checkpoint")
    verify_consistency(old_size, new_size, hashes, old.root, new.root)
    return old, new


# --- the vectors file -------------------------------------------------------------


class Tally:
    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0

    def check(self, name: str, thunk) -> None:
        try:
            ok = thunk()
        except VerifyError as e:
            ok, why = False, str(e)
        else:
            why = "" if ok else "check returned false"
        if ok:
            self.passed += 1
            print(f"PASS {name}")
        else:
            self.failed += 1
            print(f"FAIL {name}: {why}")

    def must_fail(self, name: str, thunk) -> None:
        def inverted() -> bool:
            try:
                thunk()
            except VerifyError:
                return True
            return False

        self.check(f"rejects: {name}", inverted)


def check_leaves_and_roots(v: dict, t: Tally) -> list[bytes]:
    leaves = []
    for leaf in v["leaves"]:
        seq = leaf["seq"]
        link = sha256(seq.to_bytes(8, "big"))
        data = seq.to_bytes(8, "big") + link
        t.check(f"leaf {seq} link hash, data and hash", lambda: (
            hex32(leaf["link_hash"], "link") == link
            and bytes.fromhex(leaf["leaf_data"]) == data
            and hex32(leaf["leaf_hash"], "leaf") == leaf_hash(data)))
        leaves.append(leaf_hash(data))
    for r in v["roots"]:
        t.check(f"root of size {r['size']}", lambda: mth(leaves[: r["size"]]) == hex32(r["root"], "root"))
    return leaves


def check_keys_and_notes(v: dict, t: Tally) -> tuple[Key, Key]:
    log, log_private = parse_skey(v["keys"]["log"]["signer_key_test_only"])
    wit, wit_private = parse_skey(v["keys"]["witness"]["signer_key_test_only"])
    t.check("log verifier key parses and matches its signer key",
            lambda: parse_vkey(v["keys"]["log"]["verifier_key"]) == log and log.alg == ALG_ED25519)
    t.check("witness verifier key parses and matches its signer key",
            lambda: parse_vkey(v["keys"]["witness"]["verifier_key"]) == wit and wit.alg == ALG_COSIGNATURE_V1)
    body = v["checkpoint"]
    t.check("checkpoint parses with origin, size 7 and the size-7 root", lambda: parse_checkpoint(body) == Checkpoint(
        v["origin"], 7, hex32(v["roots"][6]["root"], "root"), ()))
    signed = body + "\n" + NoteSig(log.name, log.key_id, log_private.sign(body.encode())).line()
    t.check("signed note re-signs byte for byte", lambda: signed == v["signed_note"])
    t.check("signed note opens with the log key", lambda: open_note(v["signed_note"], [log]).text == body)
    c = v["cosignature"]
    sig = c["timestamp"].to_bytes(8, "big") + wit_private.sign(cosigned_message(body, c["timestamp"]))
    t.check("cosignature re-signs byte for byte", lambda: NoteSig(wit.name, wit.key_id, sig).line() == c["line"])
    t.check("cosigned note verifies with log and witness keys", lambda: verify_checkpoint_note(
        c["cosigned_note"], log, [wit])[1].verified == {(log.name, log.key_id): None,
                                                       (wit.name, wit.key_id): c["timestamp"]})
    return log, wit


def check_proofs(v: dict, t: Tally, leaves: list[bytes], log: Key, wit: Key) -> None:
    proof = json.loads(v["inclusion_proof_json"])
    t.check("inclusion proof verifies against the cosigned checkpoint",
            lambda: verify_inclusion_json(v["inclusion_proof_json"], log, [wit]).size == 7)
    t.check("inclusion proof hashes equal RFC 6962 PATH", lambda: [
        b64_strict(h, "hash") for h in proof["hashes"]] == rfc6962_path(proof["leaf_index"], leaves[:7]))
    c = v["consistency"]
    t.check("consistency proof verifies between the two notes",
            lambda: verify_consistency_json(c["proof_json"], c["old_note"], c["new_note"], log, [wit])[0].size == 3)
    cons = json.loads(c["proof_json"])
    t.check("consistency proof hashes equal RFC 6962 PROOF", lambda: [
        b64_strict(h, "hash") for h in cons["hashes"]] == rfc6962_subproof(3, leaves[:7], True))
    for m in range(1, 9):
        for n in range(m, 9):
            t.check(f"consistency {m} -> {n} from SUBPROOF verifies", lambda: verify_consistency(
                m, n, rfc6962_subproof(m, leaves[:n], True) if m < n else [],
                mth(leaves[:m]), mth(leaves[:n])) is None)
    t.check("consistency 0 -> 0 (empty roots, no hashes) verifies",
            lambda: verify_consistency(0, 0, [], mth([]), mth([])) is None)
    # transparency-dev/merkle: a proof from size 0 and a proof in the empty
    # tree are errors, whatever hashes they carry.
    for n in range(1, 9):
        for proof in ([], [leaves[0]], rfc6962_path(0, leaves[:n])):
            t.must_fail(f"consistency 0 -> {n} with {len(proof)} hashes", lambda: verify_consistency(
                0, n, proof, mth([]), mth(leaves[:n])))
    for proof in ([], [leaves[0]]):
        t.must_fail(f"inclusion of index 0 in the empty tree with {len(proof)} hashes",
                    lambda: verify_inclusion(leaves[0], 0, 0, proof, mth([])))
    for n in range(1, 9):
        for i in range(n):
            t.check(f"inclusion {i} in {n} from PATH verifies", lambda: verify_inclusion(
                leaves[i], i, n, rfc6962_path(i, leaves[:n]), mth(leaves[:n])) is None)


def check_external(v: dict, t: Tally) -> None:
    for e in v["external"]:
        key = parse_vkey(e["verifier_key"])
        t.check(f"external: {e['source']}", lambda: open_note(e["note"], [key]).verified != {})
        if e["signer_key"]:
            skey, private = parse_skey(e["signer_key"])
            text = open_note(e["note"], [key]).text
            line = NoteSig(skey.name, skey.key_id, private.sign(text.encode())).line()
            t.check(f"external re-signs: {e['source']}", lambda: skey == key and text + "\n" + line == e["note"])
    for e in v["external_checkpoints"]:
        key = parse_vkey(e["verifier_key"])
        t.check(f"external checkpoint: {e['source']}", lambda: verify_checkpoint_note(e["note"], key, [])[0] == Checkpoint(
            e["origin"], e["tree_size"], hex32(e["root"], "root"), ()))


def check_must_fail(v: dict, t: Tally, log: Key, wit: Key) -> None:
    for case in v["must_fail"]:
        kind = case["kind"]
        if kind == "note":
            thunk = lambda c=case: open_note(c["note"], [parse_vkey(k) for k in c["verifier_keys"]])
        elif kind == "checkpoint":
            thunk = lambda c=case: parse_checkpoint(c["text"])
        elif kind == "verifier_key":
            thunk = lambda c=case: parse_vkey(c["text"])
        elif kind == "inclusion":
            thunk = lambda c=case: verify_inclusion_json(c["proof_json"], log, [wit])
        elif kind == "consistency":
            thunk = lambda c=case: verify_consistency_json(
                c["proof_json"], c["old_note"], c["new_note"], log, [wit])
        else:
            t.check(f"known must_fail kind {kind}", lambda: False)
            continue
        t.must_fail(f"{kind}: {case['name']}", thunk)


def cmd_vectors(path: str) -> int:
    with open(path, encoding="utf-8") as f:
        v = json.load(f)
    t = Tally()
    leaves = check_leaves_and_roots(v, t)
    log, wit = check_keys_and_notes(v, t)
    check_proofs(v, t, leaves, log, wit)
    check_external(v, t)
    check_must_fail(v, t, log, wit)
    print(f"{t.passed} passed, {t.failed} failed")
    return 0 if t.failed == 0 and t.passed > 0 else 1


# --- a ledger export and the vectors over the vector chain ------------------------


def export_leaves(text: str) -> list[bytes]:
    """The leaf hashes of an `export --jsonl` file (ledger SPEC sections 9 and
    11): leaf i is u64_be(seq) || the line's `hash`, seqs 0, 1, 2, ... with
    each `prev_hash` the previous line's `hash` (the record hashes themselves
    are SPEC section 9's check, not this tool's)."""
    leaves, prev = [], bytes(32)
    lines = text.splitlines()
    for i, line in enumerate(lines):
        try:
            doc = json.loads(line)
        except ValueError as e:
            fail(f"export line {i + 1} does not parse: {e}")
        if isinstance(doc, dict) and "trailer" in doc:
            # The trailer (SPEC section 9): the last line, naming how many
            # records precede it and the head they end at.
            if i != len(lines) - 1:
                fail(f"export line {i + 1}: a line after the trailer")
            if doc.get("records") != i or doc.get("head_seq") != i - 1 or hex32(
                str(doc.get("head_hash")), "head_hash"
            ) != prev:
                fail(f"export line {i + 1}: the trailer does not name the {i} records before it")
            break
        if not isinstance(doc, dict) or doc.get("seq") != i:
            fail(f"export line {i + 1} is not seq {i}")
        if hex32(str(doc.get("prev_hash")), "prev_hash") != prev:
            fail(f"export line {i + 1}: prev_hash is not the previous line's hash")
        prev = hex32(str(doc.get("hash")), "hash")
        leaves.append(leaf_hash(i.to_bytes(8, "big") + prev))
    return leaves


def verify_ledger(export: str, note: str, log_key: Key, witnesses: list[Key]) -> Checkpoint:
    """The signed checkpoint `note` is the RFC 6962 root of the export's
    first tree-size records."""
    cp, _ = verify_checkpoint_note(note, log_key, witnesses)
    leaves = export_leaves(export)
    if cp.size > len(leaves):
        fail(f"the checkpoint covers {cp.size} records, the export has {len(leaves)}")
    if mth(leaves[: cp.size]) != cp.root:
        fail(f"the export's root at size {cp.size} differs from the checkpoint's")
    return cp


# --- a C2SP tlog-tiles directory (TRUST-8) ---------------------------------------

TILE_WIDTH = 256  # hashes in a full tile (C2SP tlog-tiles)
TILES_LEAVES_MAX = 1 << 30  # leaves this tool reads from a tiles directory
TILE_FILE_BYTES_MAX = 256 * 42  # an entry bundle of 256 benchledger entries


def tile_index_path(n: int, width: int) -> str:
    """C2SP: N in zero-padded 3-digit path elements, all but the last
    beginning with x; `.p/W` for a partial tile."""
    groups = [f"{n % 1000:03d}"]
    n //= 1000
    while n > 0:
        groups.append(f"x{n % 1000:03d}")
        n //= 1000
    path = "/".join(reversed(groups))
    return path if width == TILE_WIDTH else f"{path}.p/{width}"


def read_tile_file(root: str, rel: str) -> bytes:
    import os

    path = os.path.join(root, rel)
    try:
        with open(path, "rb") as f:
            raw = f.read(TILE_FILE_BYTES_MAX + 1)
    except FileNotFoundError:
        fail(f"{rel} is missing")
    if len(raw) > TILE_FILE_BYTES_MAX:
        fail(f"{rel} is longer than {TILE_FILE_BYTES_MAX} bytes")
    return raw


def bundle_entries(raw: bytes, width: int, rel: str) -> list[bytes]:
    """An entry bundle: big-endian uint16 length-prefixed entries."""
    out, pos = [], 0
    while pos < len(raw):
        if pos + 2 > len(raw):
            fail(f"{rel}: a cut length prefix")
        n = int.from_bytes(raw[pos : pos + 2], "big")
        if pos + 2 + n > len(raw):
            fail(f"{rel}: entry {len(out)} is cut")
        out.append(raw[pos + 2 : pos + 2 + n])
        pos += 2 + n
    if len(out) != width:
        fail(f"{rel}: {len(out)} entries, the bundle has width {width}")
    return out


def verify_tiles(root: str, log_key: Key, witnesses: list[Key]) -> Checkpoint:
    """Every leaf from the entry bundles (benchledger's entry i is
    u64_be(i) || a 32-byte link hash), every tile recomputed from them by the
    C2SP definition and compared with its file, and the root of all leaves
    against the signed checkpoint."""
    import os

    with open(os.path.join(root, "checkpoint"), "rb") as f:
        note = f.read(NOTE_BYTES_MAX + 1).decode("utf-8")
    cp, _ = verify_checkpoint_note(note, log_key, witnesses)
    if cp.size > TILES_LEAVES_MAX:
        fail(f"the checkpoint covers {cp.size} leaves, more than {TILES_LEAVES_MAX}")
    leaves: list[bytes] = []
    for start in range(0, cp.size, TILE_WIDTH):
        width = min(TILE_WIDTH, cp.size - start)
        rel = "tile/entries/" + tile_index_path(start // TILE_WIDTH, width)
        for i, entry in enumerate(bundle_entries(read_tile_file(root, rel), width, rel)):
            if len(entry) != 40 or int.from_bytes(entry[:8], "big") != start + i:
                fail(f"{rel}: entry {i} is not the leaf data of seq {start + i}")
            leaves.append(leaf_hash(entry))
    if mth(leaves) != cp.root:
        fail("the root of the entry bundles' leaves differs from the checkpoint's"
             + first_tile_mismatch(root, leaves, 0))
    level, hashes = 0, leaves
    while hashes:
        mismatch = first_tile_mismatch(root, hashes, level)
        if mismatch:
            fail(mismatch.removeprefix(": "))
        hashes = [mth(hashes[i : i + TILE_WIDTH]) for i in range(0, len(hashes) - TILE_WIDTH + 1, TILE_WIDTH)]
        level += 1
    return cp


def first_tile_mismatch(root: str, hashes: list[bytes], level: int) -> str:
    """The first tile at `level` whose file differs from `hashes` (the
    tile's definition), as a message suffix; "" when every one matches."""
    for start in range(0, len(hashes), TILE_WIDTH):
        chunk = hashes[start : start + TILE_WIDTH]
        rel = f"tile/{level}/" + tile_index_path(start // TILE_WIDTH, len(chunk))
        if read_tile_file(root, rel) != b"".join(chunk):
            return f": {rel} differs from the tile its entries define"
    return ""


def cmd_chain_vectors(path: str) -> int:
    """ledger-schema/vectors/tlog.json against the chain file next to it."""
    import os

    with open(path, encoding="utf-8") as f:
        v = json.load(f)
    chain = read_text_all(os.path.join(os.path.dirname(path), v["chain"]))
    t = Tally()
    leaves = export_leaves(chain)
    log = parse_vkey(v["log_vkey"])
    t.check("every root of the chain's prefixes", lambda: [r["size"] for r in v["roots"]] == list(
        range(1, len(leaves) + 1)) and all(mth(leaves[: r["size"]]) == hex32(r["root"], "root") for r in v["roots"]))
    rec = v["recorded_checkpoint"]
    recorded_line = json.loads(chain.splitlines()[rec["seq"]])
    t.check("the chain's checkpoint record holds the note", lambda: recorded_line["kind"] == "checkpoint_recorded.v1"
            and recorded_line["payload"]["note"] == rec["note"])
    t.check("the recorded checkpoint verifies against the chain",
            lambda: verify_ledger(chain, rec["note"], log, []).size == rec["seq"])
    t.check("the head checkpoint verifies against the chain",
            lambda: verify_ledger(chain, v["head_note"], log, []).size == len(leaves))
    for text in v["inclusion_proofs"]:
        doc = json.loads(text)
        i = doc["leaf_index"]
        t.check(f"inclusion of seq {i} verifies with the note alone",
                lambda: verify_inclusion_json(text, log, []).size == len(leaves))
        t.check(f"inclusion of seq {i}: the chain's link hash and RFC 6962 PATH", lambda: hex32(
            doc["link_hash"], "link") == hex32(json.loads(chain.splitlines()[i])["hash"], "hash") and [
            b64_strict(h, "hash") for h in doc["hashes"]] == rfc6962_path(i, leaves))
        moved = dict(doc, leaf_index=i ^ 1)
        t.must_fail(f"inclusion of seq {i} at a moved index", lambda: verify_inclusion_json(
            json.dumps(moved), log, []))
    for c in v["consistency_proofs"]:
        doc = json.loads(c["proof_json"])
        m, n = doc["old_size"], doc["new_size"]
        t.check(f"consistency {m} -> {n} verifies with the notes alone", lambda: verify_consistency_json(
            c["proof_json"], c["old_note"], c["new_note"], log, [])[1].size == n)
        t.check(f"consistency {m} -> {n} equals RFC 6962 PROOF", lambda: [
            b64_strict(h, "hash") for h in doc["hashes"]] == rfc6962_subproof(m, leaves[:n], True))
        t.must_fail(f"consistency {m} -> {n} with swapped notes", lambda: verify_consistency_json(
            c["proof_json"], c["new_note"], c["old_note"], log, []))
    print(f"{t.passed} passed, {t.failed} failed")
    return 0 if t.failed == 0 and t.passed > 0 else 1


def read_text_all(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


# --- command line ---------------------------------------------------------------


def read_text(path: str) -> str:
    with open(path, "rb") as f:
        raw = f.read(max(NOTE_BYTES_MAX, PROOF_JSON_BYTES_MAX) + 1)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        fail(f"{path} is not UTF-8")


def key_arg(text: str) -> Key:
    if text.startswith("@"):
        text = read_text(text[1:]).strip("\n")
    return parse_vkey(text)


def run(args: argparse.Namespace) -> int:
    if args.cmd == "vectors":
        return cmd_vectors(args.file)
    if args.cmd == "chain-vectors":
        return cmd_chain_vectors(args.file)
    keys = [key_arg(k) for k in args.vkey]
    witnesses = [key_arg(k) for k in args.witness]
    if args.cmd == "note":
        opened = open_note(read_text(args.file), keys + witnesses)
        names = ", ".join(f"{n}+{i:08x}" for n, i in opened.verified)
        print(f"verified by {names}; {opened.unknown} unknown signature(s) ignored")
        return 0
    if len(keys) != 1:
        fail("give exactly one --vkey: the log's key")
    if args.cmd == "checkpoint":
        cp, _ = verify_checkpoint_note(read_text(args.file), keys[0], witnesses)
        print(f"origin {cp.origin} size {cp.size} root {b64(cp.root)}")
    elif args.cmd == "ledger":
        cp = verify_ledger(read_text_all(args.file), read_text(args.note), keys[0], witnesses)
        print(f"the export has the root of {cp.origin} at size {cp.size}")
    elif args.cmd == "tiles":
        cp = verify_tiles(args.file, keys[0], witnesses)
        print(f"the tiles give the root of {cp.origin} at size {cp.size}")
    elif args.cmd == "inclusion":
        cp = verify_inclusion_json(read_text(args.file), keys[0], witnesses)
        print(f"inclusion verified in {cp.origin} at size {cp.size}")
    else:
        old, new = verify_consistency_json(
            read_text(args.file), read_text(args.old_note), read_text(args.new_note), keys[0], witnesses)
        print(f"consistent: {old.origin} size {old.size} -> {new.size}")
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    for name in ("note", "checkpoint", "inclusion", "consistency", "ledger", "tiles"):
        p = sub.add_parser(name)
        p.add_argument("file")
        if name == "consistency":
            p.add_argument("old_note")
            p.add_argument("new_note")
        if name == "ledger":
            p.add_argument("note")
        p.add_argument("--vkey", action="append", required=True, help="verifier key, or @FILE")
        p.add_argument("--witness", action="append", default=[], help="witness cosignature/v1 key, or @FILE")
    sub.add_parser("vectors").add_argument("file")
    sub.add_parser("chain-vectors").add_argument("file")
    args = parser.parse_args(argv)
    try:
        return run(args)
    except VerifyError as e:
        print(f"verification failed: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"cannot read input: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
