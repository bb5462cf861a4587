#!/usr/bin/env python3
"""A test witness for benchledger's TRUST-6 tests.

Written from the C2SP texts alone (c2sp.org/tlog-witness, tlog-cosignature,
signed-note, tlog-checkpoint) and RFC 9162's consistency-proof
verification; it shares no code with benchledger. Python 3 standard library
plus the `cryptography` package (Ed25519).

    witness.py --key W.key --origin ORIGIN --log-vkey VKEY --state FILE
               [--listen 127.0.0.1:0]
    witness.py --self-check

It serves `POST /add-checkpoint` (any path prefix) for one log (its origin
and verifier key given on the command line), keeps the latest cosigned
(size, root) per origin in the state file (written atomically before it
answers; requests are handled one at a time), and answers as the
tlog-witness text says: 404 for an unknown origin, 403 when no trusted key
signed the checkpoint, 400 for a malformed request or an old size above the
checkpoint's, 409 (with its size as text/x.tlog.size) when the old size is
not the one it cosigned last or the same size comes with another root (a
rollback or a fork), 422 when the consistency proof does not verify, and 200
with one cosignature/v1 line otherwise. It prints `listening
http://HOST:PORT` on stdout once it accepts requests.
"""

import argparse
import base64
import hashlib
import http.server
import json
import os
import struct
import sys
import time

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

EM_DASH = "\u2014"
ALG_ED25519 = 0x01
ALG_COSIGNATURE_V1 = 0x04
PROOF_LINES_MAX = 63
BODY_BYTES_MAX = 1 << 20


class Refusal(Exception):
    """An HTTP status and a message to answer with."""

    def __init__(self, status, message, size=None):
        super().__init__(message)
        self.status = status
        self.size = size


def b64d(text):
    raw = base64.b64decode(text, validate=True)
    if base64.b64encode(raw).decode() != text:
        raise ValueError("not canonical base64")
    return raw


def key_id(name, alg, public):
    """signed-note: SHA-256(name || 0x0A || type || public key)[:4]."""
    return hashlib.sha256(name.encode() + b"\n" + bytes([alg]) + public).digest()[:4]


def parse_vkey(text):
    """A verifier key `name+hex8+base64(type || key)`."""
    name, id_hex, material = text.split("+", 2)
    raw = b64d(material)
    if len(raw) != 33:
        raise ValueError("verifier key material is not a type byte and 32 bytes")
    if key_id(name, raw[0], raw[1:]).hex() != id_hex:
        raise ValueError("verifier key id does not match")
    return name, raw[0], raw[1:]


def parse_signer_key(text):
    """A signer key `PRIVATE+KEY+name+hex8+base64(type || seed)`."""
    if not text.startswith("PRIVATE+KEY+"):
        raise ValueError("signer key does not start with PRIVATE+KEY+")
    name, id_hex, material = text[len("PRIVATE+KEY+"):].split("+", 2)
    raw = b64d(material)
    if len(raw) != 33 or raw[0] != ALG_COSIGNATURE_V1:
        raise ValueError("not a cosignature/v1 (type 0x04) signer key")
    private = Ed25519PrivateKey.from_private_bytes(raw[1:])
    public = private.public_key().public_bytes_raw()
    if key_id(name, ALG_COSIGNATURE_V1, public).hex() != id_hex:
        raise ValueError("signer key id does not match")
    return name, private, public


def parse_request(body):
    """tlog-witness: `old N`, proof lines, an empty line, the checkpoint
    note. Returns (old, [hash], note text)."""
    text = body.decode("utf-8")
    head, sep, note = text.partition("\n\n")
    if not sep:
        raise Refusal(400, "no empty line after the proof")
    lines = head.split("\n")
    first = lines[0]
    if not first.startswith("old "):
        raise Refusal(400, "the first line is not `old N`")
    digits = first[4:]
    if not digits.isdigit() or (len(digits) > 1 and digits[0] == "0"):
        raise Refusal(400, "the old size is not a decimal without leading zeroes")
    proof = []
    for line in lines[1:]:
        try:
            h = b64d(line)
        except ValueError:
            raise Refusal(400, "a proof line is not base64") from None
        if len(h) != 32:
            raise Refusal(400, "a proof line is not a 32-byte hash")
        proof.append(h)
    if len(proof) > PROOF_LINES_MAX:
        raise Refusal(400, "more than 63 proof lines")
    return int(digits), proof, note


def parse_note(note):
    """signed-note: the text (ending in a newline), an empty line, then
    signature lines `— name base64(key id || signature)`."""
    text, sep, sigs = note.partition("\n\n")
    if not sep or not sigs.endswith("\n"):
        raise Refusal(400, "not a signed note")
    signatures = []
    for line in sigs[:-1].split("\n"):
        if not line.startswith(EM_DASH + " "):
            raise Refusal(400, "a signature line does not start with an em dash")
        name, _, b64 = line[2:].partition(" ")
        try:
            raw = b64d(b64)
        except ValueError:
            raise Refusal(400, "a signature is not base64") from None
        if len(raw) < 5:
            raise Refusal(400, "a signature is too short")
        signatures.append((name, raw[:4], raw[4:]))
    return text + "\n", signatures


def parse_checkpoint(body):
    """tlog-checkpoint: origin, decimal size, base64 root, extensions."""
    lines = body[:-1].split("\n")
    if len(lines) < 3:
        raise Refusal(400, "the checkpoint has fewer than three lines")
    origin, size, root = lines[0], lines[1], lines[2]
    if not size.isdigit() or (len(size) > 1 and size[0] == "0"):
        raise Refusal(400, "the checkpoint size is not a decimal")
    try:
        root_hash = b64d(root)
    except ValueError:
        raise Refusal(400, "the checkpoint root is not base64") from None
    if len(root_hash) != 32:
        raise Refusal(400, "the checkpoint root is not 32 bytes")
    return origin, int(size), root_hash


def node(left, right):
    return hashlib.sha256(b"\x01" + left + right).digest()


def verify_consistency(first, second, first_hash, second_hash, proof):
    """RFC 9162 section 2.1.4.2, as its steps are written."""
    if first > second:
        return False
    if first == second:
        return not proof and first_hash == second_hash
    if first == 0:
        return not proof
    if not proof:
        return False
    if first & (first - 1) == 0:
        proof = [first_hash] + proof
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = proof[0]
    for c in proof[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr = node(c, fr)
            sr = node(c, sr)
            if not fn & 1:
                while not (fn & 1 or fn == 0):
                    fn >>= 1
                    sn >>= 1
        else:
            sr = node(sr, c)
        fn >>= 1
        sn >>= 1
    return sn == 0 and fr == first_hash and sr == second_hash


def cosigned_message(body, timestamp):
    """tlog-cosignature, Ed25519: header, time line, checkpoint body."""
    return "cosignature/v1\ntime %d\n" % timestamp + body


def cosignature_line(name, private, public, body, timestamp):
    sig = private.sign(cosigned_message(body, timestamp).encode())
    raw = key_id(name, ALG_COSIGNATURE_V1, public) + struct.pack(">Q", timestamp) + sig
    return "%s %s %s\n" % (EM_DASH, name, base64.b64encode(raw).decode())


class Witness:
    def __init__(self, key_text, origin, log_vkey, state_path):
        self.name, self.private, self.public = parse_signer_key(key_text)
        self.origin = origin
        self.log = parse_vkey(log_vkey)
        self.state_path = state_path

    def load(self):
        try:
            with open(self.state_path, encoding="utf-8") as f:
                return json.load(f)
        except FileNotFoundError:
            return {}

    def store(self, state):
        tmp = self.state_path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(state, f, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.state_path)

    def add_checkpoint(self, body):
        old, proof, note = parse_request(body)
        text, signatures = parse_note(note)
        origin, size, root = parse_checkpoint(text)
        if origin != self.origin:
            raise Refusal(404, "unknown origin")
        name, alg, public = self.log
        verified = False
        for sig_name, sig_id, sig in signatures:
            if sig_name != name or sig_id != key_id(name, alg, public):
                continue  # signatures from unknown keys are ignored
            try:
                Ed25519PublicKey.from_public_bytes(public).verify(sig, text.encode())
                verified = True
            except InvalidSignature:
                pass
        if not verified:
            raise Refusal(403, "no trusted key signed the checkpoint")
        if old > size:
            raise Refusal(400, "the old size is above the checkpoint size")
        state = self.load()
        seen = state.get(origin, {"size": 0, "root": ""})
        if old != seen["size"]:
            raise Refusal(409, "old size mismatch", size=seen["size"])
        if old == 0 and proof:
            raise Refusal(422, "a proof from size 0 must be empty")
        if old > 0:
            seen_root = base64.b64decode(seen["root"])
            if old == size and root != seen_root:
                raise Refusal(409, "same size, another root", size=seen["size"])
            if not verify_consistency(old, size, seen_root, root, proof):
                raise Refusal(422, "the consistency proof does not verify")
        state[origin] = {"size": size, "root": base64.b64encode(root).decode()}
        self.store(state)
        return cosignature_line(self.name, self.private, self.public, text, int(time.time()))


def handler_for(witness):
    class Handler(http.server.BaseHTTPRequestHandler):
        def answer(self, status, body, content_type="text/plain; charset=utf-8"):
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):  # noqa: N802 (http.server's name)
            if not self.path.endswith("/add-checkpoint"):
                return self.answer(404, "not found\n")
            length = int(self.headers.get("Content-Length") or 0)
            if length > BODY_BYTES_MAX:
                return self.answer(400, "request too large\n")
            body = self.rfile.read(length)
            try:
                line = witness.add_checkpoint(body)
            except Refusal as r:
                if r.status == 409 and r.size is not None:
                    return self.answer(409, "%d\n" % r.size, "text/x.tlog.size")
                return self.answer(r.status, str(r) + "\n")
            except (UnicodeDecodeError, ValueError) as e:
                return self.answer(400, "malformed: %s\n" % e)
            return self.answer(200, line)

        def log_message(self, fmt, *args):
            sys.stderr.write("witness: " + fmt % args + "\n")

    return Handler


def self_check():
    """Checks against the examples of the C2SP texts themselves."""
    # tlog-witness: the example add-checkpoint request body.
    example = (
        "old 20852014\n"
        "PlRNCrwHpqhGrupue0L7gxbjbMiKA9temvuZZDDpkaw=\n"
        "jrJZDmY8Y7SyJE0MWLpLozkIVMSMZcD5kvuKxPC3swk=\n"
        "5+pKlUdi2LeF/BcMHBn+Ku6yhPGNCswZZD1X/6QgPd8=\n"
        "/6WVhPs2CwSsb5rYBH5cjHV/wSmA79abXAwhXw3Kj/0=\n"
        "\n"
        "example.com/behind-the-sofa\n"
        "20852163\n"
        "CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"
        "\n"
        "\u2014 example.com/behind-the-sofa Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URYN7u5/Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=\n"
        "\u2014 example.com/behind-the-sofa opLqBQsREYCgu6xQkYQwJr9fo45a62DN9EdmHXnZdXNqlcVGlCum2Wks+49/V6267UEjw6QUXTS5Rovnzv++qbSzm9Q=\n"
    )
    old, proof, note = parse_request(example.encode())
    assert old == 20852014 and len(proof) == 4, "tlog-witness example: old size and 4 proof lines"
    text, sigs = parse_note(note)
    assert parse_checkpoint(text)[:2] == ("example.com/behind-the-sofa", 20852163)
    assert len(sigs) == 2 and all(s[0] == "example.com/behind-the-sofa" for s in sigs)
    # tlog-cosignature: the example signed message.
    body = "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"
    assert cosigned_message(body, 1679315147) == (
        "cosignature/v1\ntime 1679315147\n" + body
    ), "tlog-cosignature example message"
    # tlog-cosignature: the example cosignature line carries time 1679315147.
    raw = b64d("jWbPPwAAAABkGFDLEZMHwSRaJNiIDoe9DYn/zXcrtPHeolMI5OWXEhZCB9dlrDJsX3b2oyin1nPZqhf5nNo0xUe+mbIUBkBIfZ+qnA==")
    assert len(raw) == 4 + 8 + 64 and struct.unpack(">Q", raw[4:12])[0] == 1679315147
    # tlog-witness: a response is note signature lines; ours verifies.
    private = Ed25519PrivateKey.from_private_bytes(bytes(32))
    public = private.public_key().public_bytes_raw()
    line = cosignature_line("witness.example/w1", private, public, body, 1679315147)
    _, sigs = parse_note("x\n\n" + line)
    name, kid, sig = sigs[0]
    assert kid == key_id(name, ALG_COSIGNATURE_V1, public)
    assert struct.unpack(">Q", sig[:8])[0] == 1679315147
    Ed25519PublicKey.from_public_bytes(public).verify(
        sig[8:], cosigned_message(body, 1679315147).encode()
    )
    # RFC 9162: a consistency proof between two small trees (RFC 6962 MTH).
    leaves = [hashlib.sha256(b"\x00" + bytes([i])).digest() for i in range(7)]

    def mth(hs):
        if len(hs) == 1:
            return hs[0]
        k = 1 << ((len(hs) - 1).bit_length() - 1)
        return node(mth(hs[:k]), mth(hs[k:]))

    # PROOF(3, D[7]) by RFC 6962 2.1.2's SUBPROOF: [c, d, g, h] in its
    # figure's naming = [leaf 2, leaf 3 (hash of (2,3) split), ...].
    proof = [leaves[2], leaves[3], mth(leaves[0:2]), mth(leaves[4:7])]
    assert verify_consistency(3, 7, mth(leaves[:3]), mth(leaves), proof)
    assert not verify_consistency(3, 7, mth(leaves[:3]), mth(leaves[:6] + [leaves[0]]), proof)
    assert verify_consistency(4, 7, mth(leaves[:4]), mth(leaves), [mth(leaves[4:7])])
    print("self-check: ok")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--key")
    p.add_argument("--origin")
    p.add_argument("--log-vkey")
    p.add_argument("--state")
    p.add_argument("--listen", default="127.0.0.1:0")
    p.add_argument("--self-check", action="store_true")
    a = p.parse_args()
    if a.self_check:
        return self_check()
    if not (a.key and a.origin and a.log_vkey and a.state):
        p.error("--key, --origin, --log-vkey and --state are required")
    with open(a.key, encoding="utf-8") as f:
        witness = Witness(f.read().strip(), a.origin, a.log_vkey, a.state)
    host, port = a.listen.rsplit(":", 1)
    server = http.server.HTTPServer((host, int(port)), handler_for(witness))
    print("listening http://%s:%d" % server.server_address[:2], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
