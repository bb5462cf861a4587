"""The run-tagged EC2 instance that lives exactly as long as a trial.

`Ec2TrialInstance.launch()` calls RunInstances with the exact tags it is given
(run, role, case, trial, ...) on the instance and its volume, waits until it
is running, and `terminate()` terminates it and waits until it is gone. The
same code talks to moto on loopback (endpoint_url) or to AWS (an explicit
named profile; the SDK's default chain is never used).
"""

from __future__ import annotations

import asyncio
import ipaddress
from dataclasses import dataclass, field
from urllib.parse import urlparse

LOOPBACK_HOSTS = {"localhost"}


def _is_loopback(url: str) -> bool:
    host = urlparse(url).hostname or ""
    if host in LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass
class Ec2Settings:
    region: str
    ami_id: str
    instance_type: str
    tags: dict[str, str]
    endpoint_url: str | None = None     # moto on loopback; None = AWS
    aws_profile: str | None = None      # required when endpoint_url is None
    subnet_id: str | None = None
    security_group_ids: list[str] = field(default_factory=list)
    client_token: str | None = None
    wait_timeout_sec: float = 300.0


class Ec2TrialInstance:
    def __init__(self, settings: Ec2Settings):
        self.s = settings
        self.instance_id: str | None = None
        self._client = None

    def client(self):
        if self._client is None:
            import boto3  # Harbor's venv ships boto3

            s = self.s
            if s.endpoint_url is not None:
                if not _is_loopback(s.endpoint_url):
                    raise ValueError(f"endpoint_url must be loopback (moto): {s.endpoint_url}")
                # moto accepts any static credentials; never read the ambient chain.
                session = boto3.Session(aws_access_key_id="benchledger-live", aws_secret_access_key="benchledger-live",
                                        region_name=s.region)
                self._client = session.client("ec2", endpoint_url=s.endpoint_url)
            else:
                if not s.aws_profile:
                    raise ValueError("a real EC2 launch needs an explicit aws_profile")
                session = boto3.Session(profile_name=s.aws_profile, region_name=s.region)
                self._client = session.client("ec2")
        return self._client

    def _launch_sync(self) -> str:
        s = self.s
        tags = [{"Key": k, "Value": v} for k, v in sorted(s.tags.items())]
        params = {
            "ImageId": s.ami_id,
            "InstanceType": s.instance_type,
            "MinCount": 1,
            "MaxCount": 1,
            "TagSpecifications": [
                {"ResourceType": "instance", "Tags": tags},
                {"ResourceType": "volume", "Tags": tags},
            ],
        }
        if s.client_token:
            params["ClientToken"] = s.client_token
        # The primary network interface, stated: deleted with the instance
        # (AWS's default for a launch-created ENI; moto creates it with
        # DeleteOnTermination false unless told, and the exact-tag cleanup
        # audit then finds it attached to the terminated instance). With
        # NetworkInterfaces, the subnet and security groups go inside it.
        nic = {"DeviceIndex": 0, "DeleteOnTermination": True}
        if s.subnet_id:
            nic["SubnetId"] = s.subnet_id
        if s.security_group_ids:
            nic["Groups"] = list(s.security_group_ids)
        params["NetworkInterfaces"] = [nic]
        ec2 = self.client()
        resp = ec2.run_instances(**params)
        self.instance_id = resp["Instances"][0]["InstanceId"]
        ec2.get_waiter("instance_running").wait(
            InstanceIds=[self.instance_id],
            WaiterConfig={"Delay": 2, "MaxAttempts": max(1, int(s.wait_timeout_sec // 2))},
        )
        return self.instance_id

    def _terminate_sync(self) -> None:
        if not self.instance_id:
            return
        ec2 = self.client()
        ec2.terminate_instances(InstanceIds=[self.instance_id])
        ec2.get_waiter("instance_terminated").wait(
            InstanceIds=[self.instance_id],
            WaiterConfig={"Delay": 2, "MaxAttempts": max(1, int(self.s.wait_timeout_sec // 2))},
        )

    def describe_sync(self) -> dict:
        if not self.instance_id:
            return {}
        r = self.client().describe_instances(InstanceIds=[self.instance_id])
        inst = r["Reservations"][0]["Instances"][0]
        return {
            "instance_id": inst["InstanceId"],
            "state": inst["State"]["Name"],
            "instance_type": inst["InstanceType"],
            "tags": {t["Key"]: t["Value"] for t in inst.get("Tags", [])},
        }

    async def launch(self) -> str:
        return await asyncio.to_thread(self._launch_sync)

    async def terminate(self) -> None:
        await asyncio.to_thread(self._terminate_sync)
