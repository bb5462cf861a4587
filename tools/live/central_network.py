#!/usr/bin/env python3
"""Append `[central.launch]` to a live lineage's manifest before it is frozen.

    central_network.py --endpoint URL --manifest FILE

The live lineage provisions its central host on moto (issue 30): `run`
launches it before the first group and tears it down after the last one.
moto makes its default VPC, subnets and security group with new ids on every
start, so the ids are read from the running server (DescribeSubnets with
default-for-az, DescribeSecurityGroups for `default`) once the stack is up
and before `manifest freeze`. Idempotent: a manifest that already has the
table is left as it is. Standard library only; every request has a timeout.
"""

from __future__ import annotations

import argparse
import re
import sys
import urllib.parse
import urllib.request
from pathlib import Path

TIMEOUT_S = 10
BODY_BYTES_MAX = 1 << 20
READY_TIMEOUT_SEC = 120
# moto reads the service and region from the credential scope; it does not
# check the signature.
AUTH = ("AWS4-HMAC-SHA256 Credential=moto-local-dummy/20260101/us-east-1/ec2/aws4_request, "
        "SignedHeaders=host, Signature=0")


def ec2(endpoint: str, params: dict[str, str]) -> str:
    body = urllib.parse.urlencode({"Version": "2016-11-15", **params}).encode()
    req = urllib.request.Request(endpoint.rstrip("/") + "/", data=body, method="POST", headers={
        "Authorization": AUTH, "Content-Type": "application/x-www-form-urlencoded"})
    with urllib.request.urlopen(req, timeout=TIMEOUT_S) as r:
        return r.read(BODY_BYTES_MAX).decode()


def first(xml: str, tag: str, what: str) -> str:
    m = re.search(f"<{tag}>([^<]+)</{tag}>", xml)
    if not m:
        sys.exit(f"central_network: moto answered no {what}")
    return m.group(1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--manifest", required=True, type=Path)
    a = ap.parse_args()
    text = a.manifest.read_text()
    if "[central.launch]" in text:
        return 0
    subnet = first(ec2(a.endpoint, {"Action": "DescribeSubnets", "Filter.1.Name": "default-for-az",
                                    "Filter.1.Value.1": "true"}), "subnetId", "default subnet")
    sg = first(ec2(a.endpoint, {"Action": "DescribeSecurityGroups", "Filter.1.Name": "group-name",
                                "Filter.1.Value.1": "default"}), "groupId", "default security group")
    a.manifest.write_text(text.rstrip("\n") + "\n\n[central.launch]\n"
                          f'subnet_id = "{subnet}"\nsecurity_group_ids = ["{sg}"]\n'
                          f"ready_timeout_sec = {READY_TIMEOUT_SEC}\n")
    print(f"central_network: [central.launch] subnet {subnet}, security group {sg}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
