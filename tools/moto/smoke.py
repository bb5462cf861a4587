#!/usr/bin/env python3
"""Smoke test of the running moto server (tools/moto/server.py) with boto3.

Usage (run with the venv made by tools/moto/setup.sh, server started by start.sh):
    smoke.py [--endpoint URL] [--account ID] [--expect-quota-vcpu N]

--endpoint defaults to $BENCHLEDGER_AWS_ENDPOINT_URL, --account to $MOTO_ACCOUNT_ID
(else moto's default 123456789012). Every resource is tagged with a fresh run id,
so the test can run repeatedly against the same server. Checks named "quirk:" pin
down moto 5.2.5 behaviour that differs from real AWS (see README.md).
Prints one PASS/FAIL line per check and "N passed, N failed" last; exit 1 on failure.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
import urllib.request
import uuid
from typing import Any, Callable

import boto3

REGION = "us-east-1"
VCPU_QUOTA = ("ec2", "L-1216C47A")


class Smoke:
    def __init__(self, endpoint: str, account: str, expect_quota: float | None) -> None:
        self.endpoint = endpoint.rstrip("/")
        self.account = account
        self.expect_quota = expect_quota
        # Dummy credentials: moto accepts any; nothing here talks to real AWS.
        kw = dict(endpoint_url=self.endpoint, region_name=REGION,
                  aws_access_key_id="testing", aws_secret_access_key="testing")
        self.sts = boto3.client("sts", **kw)
        self.sq = boto3.client("service-quotas", **kw)
        self.ec2 = boto3.client("ec2", **kw)
        self.run_id = f"smoke-{uuid.uuid4().hex[:8]}"
        self.tags = [{"Key": "benchledger:run", "Value": self.run_id}, {"Key": "Name", "Value": "smoke"}]
        self.state: dict[str, Any] = {}
        self.passed = self.failed = 0

    # -- helpers ------------------------------------------------------------------
    def check(self, name: str, fn: Callable[[], None]) -> None:
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - report and go on
            self.failed += 1
            print(f"FAIL {name}: {type(exc).__name__}: {exc}")
            if os.environ.get("SMOKE_DEBUG"):
                traceback.print_exc()
        else:
            self.passed += 1
            print(f"PASS {name}")

    def run_filter(self) -> dict[str, Any]:
        return {"Name": "tag:benchledger:run", "Values": [self.run_id]}

    def control_set_quota(self, value: float) -> None:
        req = urllib.request.Request(
            f"{self.endpoint}/_benchledger/quotas/{VCPU_QUOTA[0]}/{VCPU_QUOTA[1]}",
            data=json.dumps({"value": value}).encode(), method="PUT")
        urllib.request.urlopen(req, timeout=5).read()

    def quota(self) -> float:
        return self.sq.get_service_quota(ServiceCode=VCPU_QUOTA[0], QuotaCode=VCPU_QUOTA[1])["Quota"]["Value"]

    def instance(self, iid: str) -> dict[str, Any]:
        return self.ec2.describe_instances(InstanceIds=[iid])["Reservations"][0]["Instances"][0]

    def ids(self, filters: list[dict[str, Any]]) -> set[str]:
        res = self.ec2.describe_instances(Filters=filters)["Reservations"]
        return {i["InstanceId"] for r in res for i in r["Instances"]}

    # -- checks -------------------------------------------------------------------
    def sts_identity(self) -> None:
        ident = self.sts.get_caller_identity()
        assert ident["Account"] == self.account, f"account {ident['Account']} != {self.account}"

    def quota_value(self) -> None:
        q = self.sq.get_service_quota(ServiceCode="ec2", QuotaCode="L-1216C47A")["Quota"]
        assert q["QuotaCode"] == "L-1216C47A" and q["ServiceCode"] == "ec2", q
        assert q["QuotaArn"] == f"arn:aws:servicequotas:{REGION}:{self.account}:ec2/L-1216C47A", q["QuotaArn"]
        if self.expect_quota is not None:
            assert q["Value"] == self.expect_quota, f"quota {q['Value']} != {self.expect_quota}"
        self.state["quota0"] = q["Value"]

    def quota_runtime_change(self) -> None:
        original = self.state.get("quota0", self.quota())
        try:
            self.control_set_quota(7)
            assert self.quota() == 7.0, self.quota()
        finally:
            self.control_set_quota(original)
        assert self.quota() == original

    def instance_type_vcpus(self) -> None:
        types = self.ec2.describe_instance_types(InstanceTypes=["m5.large", "m5.xlarge"])["InstanceTypes"]
        vcpus = {t["InstanceType"]: t["VCpuInfo"]["DefaultVCpus"] for t in types}
        assert vcpus == {"m5.large": 2, "m5.xlarge": 4}, vcpus

    def run_instances(self) -> None:
        ami = self.ec2.describe_images(Owners=["amazon"], MaxResults=5)["Images"][0]["ImageId"]
        subnet = self.ec2.describe_subnets()["Subnets"][0]["SubnetId"]
        r = self.ec2.run_instances(
            ImageId=ami, InstanceType="m5.large", MinCount=1, MaxCount=1,
            NetworkInterfaces=[{"DeviceIndex": 0, "SubnetId": subnet, "AssociatePublicIpAddress": True}],
            BlockDeviceMappings=[{"DeviceName": "/dev/sda1",
                                  "Ebs": {"VolumeSize": 40, "VolumeType": "gp3", "DeleteOnTermination": True}}],
            TagSpecifications=[{"ResourceType": t, "Tags": self.tags}
                               for t in ("instance", "volume", "network-interface")],
        )
        inst = r["Instances"][0]
        self.state.update(ami=ami, subnet=subnet, iid=inst["InstanceId"])
        assert inst["State"]["Name"] == "pending", inst["State"]
        tags = {t["Key"]: t["Value"] for t in self.instance(inst["InstanceId"])["Tags"]}
        assert tags.get("benchledger:run") == self.run_id, tags

    def describe_filters(self) -> None:
        iid = self.state["iid"]
        running = self.ids([self.run_filter(), {"Name": "instance-state-name", "Values": ["pending", "running"]}])
        assert running == {iid}, running
        assert self.ids([self.run_filter(), {"Name": "instance-state-name", "Values": ["terminated"]}]) == set()
        assert self.ids([{"Name": "tag-key", "Values": ["benchledger:run"]}, self.run_filter()]) == {iid}

    def waiters(self) -> None:
        # Harbor's EC2 environment waits on these (environments/ec2.py).
        iid = self.state["iid"]
        for w in ("instance_running", "instance_status_ok"):
            self.ec2.get_waiter(w).wait(InstanceIds=[iid], WaiterConfig={"Delay": 1, "MaxAttempts": 5})
        inst = self.instance(iid)
        assert inst["State"]["Name"] == "running" and inst.get("PublicIpAddress"), inst["State"]

    def launch_volume_tags(self) -> None:
        vols = self.ec2.describe_volumes(Filters=[self.run_filter(),
                                                  {"Name": "attachment.instance-id", "Values": [self.state["iid"]]}])
        vols = vols["Volumes"]
        assert len(vols) == 1 and vols[0]["Size"] == 40 and vols[0]["State"] == "in-use", vols
        self.state["root_vol"] = vols[0]["VolumeId"]

    def quirk_launch_eni_untagged(self) -> None:
        enis = self.ec2.describe_network_interfaces(
            Filters=[{"Name": "attachment.instance-id", "Values": [self.state["iid"]]}])["NetworkInterfaces"]
        assert len(enis) == 1 and enis[0]["Status"] == "in-use", enis
        self.state["launch_eni"] = enis[0]["NetworkInterfaceId"]
        # Real AWS applies the network-interface TagSpecification; moto ignores it.
        assert enis[0].get("TagSet") == [], enis[0].get("TagSet")
        by_tag = self.ec2.describe_network_interfaces(Filters=[self.run_filter()])["NetworkInterfaces"]
        assert by_tag == [], by_tag

    def create_volume(self) -> None:
        v = self.ec2.create_volume(AvailabilityZone=f"{REGION}a", Size=8, VolumeType="gp3",
                                   TagSpecifications=[{"ResourceType": "volume", "Tags": self.tags}])
        assert v["State"] == "available", v["State"]
        self.state["vol"] = v["VolumeId"]
        found = self.ec2.describe_volumes(Filters=[self.run_filter(), {"Name": "status", "Values": ["available"]}])
        assert [x["VolumeId"] for x in found["Volumes"]] == [v["VolumeId"]], found["Volumes"]

    def create_eni(self) -> None:
        e = self.ec2.create_network_interface(
            SubnetId=self.state["subnet"], Description="benchledger smoke",
            TagSpecifications=[{"ResourceType": "network-interface", "Tags": self.tags}])["NetworkInterface"]
        assert e["Status"] == "available", e["Status"]
        self.state["eni"] = e["NetworkInterfaceId"]
        found = self.ec2.describe_network_interfaces(
            Filters=[self.run_filter(), {"Name": "status", "Values": ["available"]}])["NetworkInterfaces"]
        assert [x["NetworkInterfaceId"] for x in found] == [e["NetworkInterfaceId"]], found

    def terminate(self) -> None:
        iid = self.state["iid"]
        t = self.ec2.terminate_instances(InstanceIds=[iid])["TerminatingInstances"][0]
        assert t["CurrentState"]["Name"] == "shutting-down", t
        self.ec2.get_waiter("instance_terminated").wait(InstanceIds=[iid], WaiterConfig={"Delay": 1, "MaxAttempts": 5})
        # Terminated instances stay visible (as on AWS, where they linger ~1 hour).
        assert self.ids([self.run_filter(), {"Name": "instance-state-name", "Values": ["terminated"]}]) == {iid}
        assert self.ids([self.run_filter(), {"Name": "instance-state-name", "Values": ["running"]}]) == set()

    def root_volume_deleted(self) -> None:
        vols = self.ec2.describe_volumes(Filters=[self.run_filter()])["Volumes"]
        # DeleteOnTermination=True root volume is gone at once; the CreateVolume one stays.
        assert [v["VolumeId"] for v in vols] == [self.state["vol"]], vols

    def quirk_terminated_eni_in_use(self) -> None:
        e = self.ec2.describe_network_interfaces(
            NetworkInterfaceIds=[self.state["launch_eni"]])["NetworkInterfaces"][0]
        # Real AWS deletes the launch ENI with the instance; moto keeps it attached.
        assert e["Status"] == "in-use" and e["Attachment"]["Status"] == "attached", e

    def quirk_volume_without_delete_on_termination(self) -> None:
        r = self.ec2.run_instances(
            ImageId=self.state["ami"], InstanceType="m5.large", MinCount=1, MaxCount=1,
            BlockDeviceMappings=[{"DeviceName": "/dev/sda1", "Ebs": {"VolumeSize": 20, "DeleteOnTermination": False}}],
            TagSpecifications=[{"ResourceType": t, "Tags": self.tags} for t in ("instance", "volume")])
        iid = r["Instances"][0]["InstanceId"]
        self.ec2.terminate_instances(InstanceIds=[iid])
        vols = self.ec2.describe_volumes(Filters=[self.run_filter(), {"Name": "size", "Values": ["20"]}])["Volumes"]
        assert len(vols) == 1 and vols[0]["State"] == "available" and vols[0]["Attachments"] == [], vols
        self.state["kept_vol"] = vols[0]["VolumeId"]

    def quirk_client_token_not_idempotent(self) -> None:
        kw = dict(ImageId=self.state["ami"], InstanceType="m5.large", MinCount=1, MaxCount=1,
                  ClientToken=f"{self.run_id}-token",
                  TagSpecifications=[{"ResourceType": "instance", "Tags": self.tags}])
        a = self.ec2.run_instances(**kw)["Instances"][0]["InstanceId"]
        b = self.ec2.run_instances(**kw)["Instances"][0]["InstanceId"]
        self.ec2.terminate_instances(InstanceIds=[a, b])
        # Real AWS returns the same instance for a repeated ClientToken.
        assert a != b, "moto now honours ClientToken: update README"

    def quirk_quota_not_enforced(self) -> None:
        original = self.quota()
        try:
            self.control_set_quota(2)
            r = self.ec2.run_instances(ImageId=self.state["ami"], InstanceType="m5.xlarge", MinCount=2, MaxCount=2,
                                       TagSpecifications=[{"ResourceType": "instance", "Tags": self.tags}])
            ids = [i["InstanceId"] for i in r["Instances"]]
            self.ec2.terminate_instances(InstanceIds=ids)
            assert len(ids) == 2  # 8 vCPUs launched under a 2-vCPU quota
        finally:
            self.control_set_quota(original)

    def quirk_unknown_ami_accepted(self) -> None:
        r = self.ec2.run_instances(ImageId="ami-0123456789abcdef0", InstanceType="m5.large", MinCount=1, MaxCount=1,
                                   TagSpecifications=[{"ResourceType": "instance", "Tags": self.tags}])
        self.ec2.terminate_instances(InstanceIds=[r["Instances"][0]["InstanceId"]])

    def cleanup(self) -> None:
        for key in ("vol", "kept_vol"):
            if key in self.state:
                self.ec2.delete_volume(VolumeId=self.state[key])
        if "eni" in self.state:
            self.ec2.delete_network_interface(NetworkInterfaceId=self.state["eni"])
        assert self.ec2.describe_volumes(Filters=[self.run_filter()])["Volumes"] == []

    def run(self) -> int:
        steps = [
            ("sts GetCallerIdentity account", self.sts_identity),
            ("service-quotas GetServiceQuota ec2/L-1216C47A", self.quota_value),
            ("service-quotas value changed at runtime", self.quota_runtime_change),
            ("ec2 DescribeInstanceTypes vCPUs", self.instance_type_vcpus),
            ("ec2 RunInstances with TagSpecifications", self.run_instances),
            ("ec2 DescribeInstances tag + instance-state-name filters", self.describe_filters),
            ("ec2 waiters instance_running / instance_status_ok", self.waiters),
            ("ec2 launch volume carries volume tags", self.launch_volume_tags),
            ("quirk: launch ENI ignores network-interface tags", self.quirk_launch_eni_untagged),
            ("ec2 CreateVolume tags + DescribeVolumes filters", self.create_volume),
            ("ec2 CreateNetworkInterface + DescribeNetworkInterfaces filters", self.create_eni),
            ("ec2 TerminateInstances + instance_terminated waiter", self.terminate),
            ("ec2 DeleteOnTermination root volume deleted", self.root_volume_deleted),
            ("quirk: terminated instance's ENI stays in-use", self.quirk_terminated_eni_in_use),
            ("quirk: DeleteOnTermination=false volume persists", self.quirk_volume_without_delete_on_termination),
            ("quirk: RunInstances ClientToken not idempotent", self.quirk_client_token_not_idempotent),
            ("quirk: vCPU quota not enforced by RunInstances", self.quirk_quota_not_enforced),
            ("quirk: unknown AMI id accepted", self.quirk_unknown_ami_accepted),
            ("cleanup", self.cleanup),
        ]
        print(f"# moto smoke test against {self.endpoint} (run id {self.run_id})")
        for name, fn in steps:
            self.check(name, fn)
        print(f"{self.passed} passed, {self.failed} failed")
        return 0 if self.failed == 0 else 1


def main() -> int:
    ap = argparse.ArgumentParser(description="boto3 smoke test of the moto server")
    ap.add_argument("--endpoint", default=os.environ.get("BENCHLEDGER_AWS_ENDPOINT_URL"))
    ap.add_argument("--account", default=os.environ.get("MOTO_ACCOUNT_ID", "123456789012"))
    ap.add_argument("--expect-quota-vcpu", type=float, default=None,
                    help="fail unless the quota initially has this value")
    args = ap.parse_args()
    if not args.endpoint:
        ap.error("no endpoint: pass --endpoint or set BENCHLEDGER_AWS_ENDPOINT_URL (see start.sh)")
    if not args.endpoint.startswith(("http://127.", "http://localhost")):
        ap.error(f"refusing a non-loopback endpoint: {args.endpoint}")
    # Make sure nothing falls through to real AWS configuration on this machine.
    for var in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE"):
        os.environ.pop(var, None)
    return Smoke(args.endpoint, args.account, args.expect_quota_vcpu).run()


if __name__ == "__main__":
    sys.exit(main())
