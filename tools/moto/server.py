#!/usr/bin/env python3
"""moto (5.2.5) server on 127.0.0.1 with a settable EC2 vCPU Service Quota.

Usage (run with the venv made by tools/moto/setup.sh):
    server.py --port P [--quota-vcpu N] [--port-file FILE]

* Listens on 127.0.0.1 only (there is deliberately no --host option).
  --port 0 lets the OS pick a free port; the chosen port is printed
  ("moto listening on http://127.0.0.1:PORT") and written to --port-file.
* moto's Service Quotas backend only knows the `vpc` defaults
  (moto/servicequotas/models.py). This server patches ServiceQuotasBackend's
  get_service_quota / list_aws_default_service_quotas so that
  GetServiceQuota(ServiceCode="ec2", QuotaCode="L-1216C47A")
  ("Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances", in vCPUs)
  answers with Value N (default 64), in every account and region.
* The quota can be changed while the server runs, on the same port:
      GET  /_benchledger/quotas                              -> all overridden quotas
      PUT  /_benchledger/quotas/ec2/L-1216C47A  {"value": 8} -> set (any service/quota code)
      GET  /_benchledger/health                              -> {"ok": true}
      PUT  /_benchledger/holds/RunInstances {"match": "TEXT", "ms": N}
           -> hold moto's answer to every EC2 Query call of that action whose
              body contains TEXT for N ms after moto handled it (the
              instance exists, its launcher still waits: a test kills the
              launcher in that window); {"ms": 0} removes the hold
      GET  /_benchledger/holds                               -> all holds
  These paths are answered before moto sees the request. They survive
  moto's own reset (POST /moto-api/reset), which clears all other state.
* The account is moto's: set MOTO_ACCOUNT_ID in this process's environment
  (moto/core/responses.py get_current_account); default 123456789012.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import signal
import sys
import threading
import time
import urllib.parse
from typing import Any, Callable, Iterable

LOOPBACK = "127.0.0.1"
EC2_VCPU_QUOTA = ("ec2", "L-1216C47A")

# (service_code, quota_code) -> quota fields (without ARN, which depends on account/region).
_QUOTAS: dict[tuple[str, str], dict[str, Any]] = {}
_LOCK = threading.Lock()

_SERVICE_NAMES = {"ec2": "Amazon Elastic Compute Cloud (Amazon EC2)"}

# (EC2 Query action, text its body must contain) -> ms to hold the answer.
_HOLDS: dict[tuple[str, str], int] = {}
# The longest hold a test may set, in ms.
HOLD_MS_MAX = 120_000


def set_quota(service_code: str, quota_code: str, value: float) -> dict[str, Any]:
    """Create or update an overridden quota; returns its stored fields."""
    with _LOCK:
        q = _QUOTAS.get((service_code, quota_code))
        if q is None:
            q = {
                "ServiceCode": service_code,
                "ServiceName": _SERVICE_NAMES.get(service_code, service_code),
                "QuotaCode": quota_code,
                "QuotaName": quota_code,
                "Unit": "None",
                "Adjustable": True,
                "GlobalQuota": False,
            }
            if (service_code, quota_code) == EC2_VCPU_QUOTA:
                # Shape as returned by real AWS for this quota.
                q["QuotaName"] = "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances"
                q["UsageMetric"] = {
                    "MetricNamespace": "AWS/Usage",
                    "MetricName": "ResourceCount",
                    "MetricDimensions": {
                        "Class": "Standard/OnDemand",
                        "Resource": "vCPU",
                        "Service": "EC2",
                        "Type": "Resource",
                    },
                    "MetricStatisticRecommendation": "Maximum",
                }
            _QUOTAS[(service_code, quota_code)] = q
        q["Value"] = float(value)
        return dict(q)


def _render(q: dict[str, Any], region: str, account: str) -> dict[str, Any]:
    out = dict(q)
    out["QuotaArn"] = f"arn:aws:servicequotas:{region}:{account}:{q['ServiceCode']}/{q['QuotaCode']}"
    return out


def patch_servicequotas() -> None:
    """Make moto's ServiceQuotasBackend answer for the overridden quotas first."""
    from moto.servicequotas.exceptions import NoSuchResource
    from moto.servicequotas.models import ServiceQuotasBackend

    orig_get = ServiceQuotasBackend.get_service_quota
    orig_list = ServiceQuotasBackend.list_aws_default_service_quotas

    def get_service_quota(self: Any, service_code: str, quota_code: str) -> dict[str, Any]:
        with _LOCK:
            q = _QUOTAS.get((service_code, quota_code))
            if q is not None:
                return _render(q, self.region_name, self.account_id)
        return orig_get(self, service_code, quota_code)

    def list_aws_default_service_quotas(self: Any, service_code: str) -> list[dict[str, Any]]:
        with _LOCK:
            ours = [_render(q, self.region_name, self.account_id)
                    for (svc, _), q in sorted(_QUOTAS.items()) if svc == service_code]
        try:
            theirs = orig_list(self, service_code)
        except NoSuchResource:
            if not ours:
                raise
            theirs = []
        return ours + theirs

    ServiceQuotasBackend.get_service_quota = get_service_quota  # type: ignore[method-assign]
    ServiceQuotasBackend.list_aws_default_service_quotas = list_aws_default_service_quotas  # type: ignore[method-assign]


def control_middleware(app: Callable) -> Callable:
    """WSGI wrapper answering /_benchledger/* and passing everything else to moto."""
    prefix = "/_benchledger/"

    def reply(start_response: Callable, status: str, body: Any) -> Iterable[bytes]:
        data = json.dumps(body).encode()
        start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
        return [data]

    def held(environ: dict[str, Any], start_response: Callable) -> Iterable[bytes]:
        """moto's answer, held first when a hold matches the request."""
        with _LOCK:
            holds = dict(_HOLDS)
        if not holds or environ.get("REQUEST_METHOD") != "POST":
            return app(environ, start_response)
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length)
        environ["wsgi.input"] = io.BytesIO(body)
        text = body.decode("utf-8", "replace")
        action = urllib.parse.parse_qs(text).get("Action", [""])[0]
        ms = max((ms for (a, match), ms in holds.items() if a == action and match in text), default=0)
        answer = list(app(environ, start_response))
        time.sleep(ms / 1000)
        return answer

    def set_hold(environ: dict[str, Any], action: str) -> dict[str, Any]:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        req = json.loads(environ["wsgi.input"].read(length) or b"{}")
        match, ms = str(req["match"]), int(req["ms"])
        if not match or not 0 <= ms <= HOLD_MS_MAX:
            raise ValueError(f"match must be non-empty and ms in 0..={HOLD_MS_MAX}")
        with _LOCK:
            if ms == 0:
                _HOLDS.pop((action, match), None)
            else:
                _HOLDS[(action, match)] = ms
        return {"action": action, "match": match, "ms": ms}

    def wrapped(environ: dict[str, Any], start_response: Callable) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if not path.startswith(prefix):
            return held(environ, start_response)
        method = environ.get("REQUEST_METHOD", "GET")
        parts = path[len(prefix):].strip("/").split("/")
        if parts == ["holds"] and method == "GET":
            with _LOCK:
                return reply(start_response, "200 OK", [
                    {"action": a, "match": m, "ms": ms} for (a, m), ms in sorted(_HOLDS.items())
                ])
        if len(parts) == 2 and parts[0] == "holds" and method in ("PUT", "POST"):
            try:
                return reply(start_response, "200 OK", set_hold(environ, parts[1]))
            except (ValueError, KeyError, TypeError) as exc:
                return reply(start_response, "400 Bad Request",
                             {"error": f"expected {{\"match\": TEXT, \"ms\": N}}: {exc}"})
        if parts == ["health"]:
            return reply(start_response, "200 OK", {"ok": True})
        if parts == ["quotas"] and method == "GET":
            with _LOCK:
                return reply(start_response, "200 OK", [dict(q) for _, q in sorted(_QUOTAS.items())])
        if len(parts) == 3 and parts[0] == "quotas" and method in ("PUT", "POST"):
            try:
                length = int(environ.get("CONTENT_LENGTH") or 0)
                value = float(json.loads(environ["wsgi.input"].read(length) or b"{}")["value"])
            except (ValueError, KeyError, TypeError) as exc:
                return reply(start_response, "400 Bad Request", {"error": f"expected {{\"value\": N}}: {exc}"})
            return reply(start_response, "200 OK", set_quota(parts[1], parts[2], value))
        return reply(start_response, "404 Not Found", {"error": f"unknown control path {method} {path}"})

    return wrapped


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="moto server on 127.0.0.1 with an EC2 vCPU quota")
    ap.add_argument("--port", type=int, required=True, help="TCP port on 127.0.0.1 (0 = any free port)")
    ap.add_argument("--quota-vcpu", type=float, default=64.0,
                    help="value of Service Quota ec2/L-1216C47A (default 64)")
    ap.add_argument("--port-file", help="write the bound port to this file once listening")
    args = ap.parse_args(argv)

    from werkzeug.serving import make_server

    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )

    patch_servicequotas()
    set_quota(*EC2_VCPU_QUOTA, args.quota_vcpu)

    app = DomainDispatcherApplication(create_backend_app)
    server = make_server(LOOPBACK, args.port, control_middleware(app), threaded=True,
                         request_handler=MotoRequestHandler)
    port = server.server_address[1]
    # Some moto backends build URLs from MOTO_PORT (as moto's own server.py sets it).
    os.environ["MOTO_PORT"] = str(port)

    if args.port_file:
        tmp = f"{args.port_file}.tmp"
        with open(tmp, "w") as fh:
            fh.write(f"{port}\n")
        os.replace(tmp, args.port_file)

    def stop(signum: int, _frame: Any) -> None:
        # shutdown() waits for serve_forever to exit, so run it off the main thread.
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"moto listening on http://{LOOPBACK}:{port}", flush=True)
    server.serve_forever()
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
