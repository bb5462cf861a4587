#!/usr/bin/env python3
"""Stand-in model provider and settlement API for the live loopback run.

One process, 127.0.0.1 only, Python standard library only:

  POST /v1/chat/completions                 OpenAI Chat Completions, non-streaming.
                                            Answers in Terminus 2's JSON format
                                            from a script (tasks x model class x turn).
  GET  /v1/models                           the scripted models
  GET  /v1/requests/{id}/settlement         the stand-in BitRouter Cloud settlement
                                            API that `bro workflow-state
                                            reconcile-metering` polls (x-api-key).
  GET  /health                              liveness
  GET  /_live/state                         counters, faults, receipts (debug)
  POST /_live/faults                        replace the fault list at run time
  POST /_live/reset                         zero the per-model request counters

Every upstream hop from bro carries `x-bitrouter-request-id`; the usage this
stand-in reported is remembered under that id, so a receipt is exactly what
was served. Every chat request is logged to <log-dir>/provider-requests.jsonl
and every settlement answer to <log-dir>/receipts.jsonl.

    python3 provider.py --script script.json --log-dir DIR [--port 0] [--port-file F]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import signal
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlparse

HOST = "127.0.0.1"
MAX_BODY = 32 * 1024 * 1024


def now_rfc3339() -> str:
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"


def approx_tokens(text: str) -> int:
    """A deterministic stand-in tokenizer: about four characters a token."""
    return max(1, math.ceil(len(text.encode("utf-8")) / 4))


def message_text(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def round_half_away(x: float) -> int:
    """f64::round for a non-negative finite value (half away from zero)."""
    whole = int(x)
    return whole + (1 if x - whole >= 0.5 else 0)


def grouped_charge(buckets: list[tuple[int, float | None]]) -> int | None:
    """The charge of [(tokens, rate)] with buckets of identical rates summed first.

    Mirrors the published rule (bitrouter-formats.md section 4): skip zero
    buckets, a missing rate makes the charge unknown, group equal rates in
    first-seen order, multiply once per group, add, round half away from zero.
    """
    groups: list[list] = []
    for tokens, rate in buckets:
        if tokens == 0:
            continue
        if rate is None:
            return None
        tokens = min(tokens, 10_000_000)
        for g in groups:
            if g[1] == rate:
                g[0] += tokens
                break
        else:
            groups.append([tokens, rate])
    total = 0.0
    for tokens, rate in groups:
        total += float(tokens) * rate
    return max(0, round_half_away(total))


class Script:
    """The JSON script: models, tasks, faults, receipt behaviour."""

    def __init__(self, path: str):
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        self.path = path
        self.models: dict = data["models"]
        self.tasks: list = data["tasks"]
        self.faults: list = list(data.get("faults", []))
        self.receipts: dict = data.get("receipts", {})
        self.settlement_api_key_env: str = data.get("settlement_api_key_env", "LIVE_SETTLEMENT_API_KEY")

    def model(self, name: str) -> dict | None:
        return self.models.get(name)

    def task_for(self, first_user_text: str) -> dict | None:
        for task in self.tasks:
            if task["match"] in first_user_text:
                return task
        return None


class State:
    def __init__(self, script: Script, log_dir: str):
        self.script = script
        self.lock = threading.Lock()
        self.counters: dict[str, int] = {}
        self.auth_counters: dict[str, int] = {}
        self.total = 0
        self.served: dict[str, dict] = {}  # request id -> what was served (for receipts)
        self.polls: dict[str, int] = {}
        self.log_dir = log_dir
        os.makedirs(log_dir, exist_ok=True)
        self.req_log = open(os.path.join(log_dir, "provider-requests.jsonl"), "a", encoding="utf-8")
        self.rcpt_log = open(os.path.join(log_dir, "receipts.jsonl"), "a", encoding="utf-8")

    def log(self, f, record: dict) -> None:
        with self.lock:
            f.write(json.dumps(record, sort_keys=True) + "\n")
            f.flush()

    def next_count(self, model: str, auth: str) -> tuple[int, int, int]:
        """(nth request for this model, nth for this model under this upstream key, total)."""
        with self.lock:
            self.counters[model] = self.counters.get(model, 0) + 1
            key = f"{auth}|{model}"
            self.auth_counters[key] = self.auth_counters.get(key, 0) + 1
            self.total += 1
            return self.counters[model], self.auth_counters[key], self.total

    def fault_for(self, model: str, nth: int, auth: str, nth_auth: int) -> dict | None:
        """A fault naming `auth` (the upstream key bro sends: one per group's daemon) counts
        that key's requests for the model; one without counts every request for the model."""
        with self.lock:
            for fault in self.script.faults:
                if fault.get("model") not in (model, "*"):
                    continue
                if "auth" in fault:
                    if fault["auth"] == auth and int(fault.get("nth", -1)) == nth_auth:
                        return dict(fault)
                elif int(fault.get("nth", -1)) == nth:
                    return dict(fault)
        return None


def terminus_answer(task: dict | None, klass: str, turn: int) -> str:
    """The assistant content for this turn, in Terminus 2's JSON format."""
    if task is None:
        steps = [{"analysis": "I do not recognise this task.", "plan": "Stop.", "commands": [], "task_complete": True}]
    else:
        steps = task.get(klass) or task["strong"]
    if turn < len(steps):
        step = dict(steps[turn])
    else:  # past the script (e.g. the completion confirmation): confirm.
        step = {"analysis": "The task is done.", "plan": "Confirm completion.", "commands": [], "task_complete": True}
    step.setdefault("commands", [])
    body = {
        "analysis": step["analysis"],
        "plan": step["plan"],
        "commands": [{"keystrokes": c["keystrokes"], "duration": c.get("duration", 0.1)} for c in step["commands"]],
        "task_complete": bool(step.get("task_complete", False)),
    }
    return json.dumps(body, indent=2)


def usage_for(messages: list[dict], completion: str, mconf: dict, turn: int) -> dict:
    """Realistic Chat Completions usage: prompt, cached (read), cache write, reasoning."""
    texts = [message_text(m) for m in messages]
    per_message_overhead = 4
    prompt_tokens = sum(approx_tokens(t) + per_message_overhead for t in texts) + 3
    # Everything but the newest user message was sent before: a prompt cache
    # serves it in 64-token blocks; the first turn writes the prefix instead.
    prefix = sum(approx_tokens(t) + per_message_overhead for t in texts[:-1])
    cache_read = (prefix // 64) * 64 if (mconf.get("report_cache_read") and turn > 0) else 0
    cache_write = 0
    if mconf.get("report_cache_write"):
        newest = approx_tokens(texts[-1]) + per_message_overhead if texts else 0
        cache_write = min(prompt_tokens - cache_read, (newest // 64) * 64)
    reasoning = int(mconf.get("reasoning_base", 0)) + int(mconf.get("reasoning_per_turn", 0)) * turn
    content_tokens = approx_tokens(completion)
    usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": content_tokens + reasoning,
        "total_tokens": prompt_tokens + content_tokens + reasoning,
    }
    details = {}
    if cache_read or mconf.get("report_cache_read"):
        details["cached_tokens"] = cache_read
    if cache_write:
        details["cache_write_tokens"] = cache_write
    if details:
        usage["prompt_tokens_details"] = details
    if reasoning or mconf.get("reasoning_base") is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    return usage


def receipt_buckets(usage: dict) -> dict:
    details = usage.get("prompt_tokens_details") or {}
    cache_read = int(details.get("cached_tokens", 0))
    cache_write = int(details.get("cache_write_tokens", 0))
    reasoning = int((usage.get("completion_tokens_details") or {}).get("reasoning_tokens", 0))
    return {
        "uncached_input_tokens": int(usage["prompt_tokens"]) - cache_read - cache_write,
        "cache_read_tokens": cache_read,
        "cache_write_tokens": cache_write,
        "output_tokens": int(usage["completion_tokens"]) - reasoning,
        "reasoning_tokens": reasoning,
    }


class Handler(BaseHTTPRequestHandler):
    server_version = "benchledger-live-provider/1"
    protocol_version = "HTTP/1.1"
    state: State  # set on the class by main()

    def log_message(self, fmt, *args):  # quiet; the JSONL logs are the record
        pass

    # -- helpers -----------------------------------------------------------
    def send_json(self, status: int, body: dict, headers: dict | None = None) -> None:
        data = json.dumps(body).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def read_body(self) -> bytes:
        n = int(self.headers.get("content-length") or 0)
        if n > MAX_BODY:
            raise ValueError("body too large")
        return self.rfile.read(n) if n else b""

    # -- routes ------------------------------------------------------------
    def do_GET(self):
        path = urlparse(self.path).path
        st = self.state
        if path == "/health":
            return self.send_json(200, {"ok": True})
        if path == "/v1/models":
            data = [{"id": m, "object": "model", "owned_by": "benchledger-live"} for m in st.script.models]
            return self.send_json(200, {"object": "list", "data": data})
        if path == "/_live/state":
            with st.lock:
                body = {
                    "counters": dict(st.counters),
                    "counters_by_key": {k.split("|", 1)[1] + " @" + hashlib.sha256(k.split("|", 1)[0].encode()).hexdigest()[:8]: v
                                        for k, v in st.auth_counters.items()},
                    "total": st.total,
                    "faults": st.script.faults,
                    "served": len(st.served),
                    "polls": dict(st.polls),
                }
            return self.send_json(200, body)
        m = re.fullmatch(r"/v1/requests/([^/]+)/settlement", path)
        if m:
            return self.settlement(unquote(m.group(1)))
        return self.send_json(404, {"error": "not_found", "error_description": f"no route {path}"})

    def do_POST(self):
        path = urlparse(self.path).path
        st = self.state
        try:
            raw = self.read_body()
        except ValueError as e:
            return self.send_json(413, {"error": {"message": str(e)}})
        if path == "/_live/faults":
            faults = json.loads(raw or b"[]")
            with st.lock:
                st.script.faults = list(faults)
            return self.send_json(200, {"faults": faults})
        if path == "/_live/reset":
            with st.lock:
                st.counters.clear()
                st.auth_counters.clear()
            return self.send_json(200, {"ok": True})
        if path in ("/v1/chat/completions", "/chat/completions"):
            return self.chat(raw)
        return self.send_json(404, {"error": {"message": f"no route {path}"}})

    # -- chat --------------------------------------------------------------
    def chat(self, raw: bytes) -> None:
        st = self.state
        started = now_rfc3339()
        try:
            req = json.loads(raw)
        except json.JSONDecodeError:
            return self.send_json(400, {"error": {"message": "invalid JSON body", "type": "invalid_request_error"}})
        model = req.get("model", "")
        request_id = self.headers.get("x-bitrouter-request-id") or f"direct-{uuid.uuid4().hex}"
        mconf = st.script.model(model)
        record = {
            "received_at": started,
            "request_id": request_id,
            "model": model,
            "auth_sha256": hashlib.sha256((self.headers.get("authorization") or "").encode()).hexdigest()[:16],
        }
        if mconf is None:
            record.update(status=404, error="unknown_model")
            st.log(st.req_log, record)
            return self.send_json(404, {"error": {"message": f"model {model!r} not found", "type": "invalid_request_error", "code": "model_not_found"}})
        if req.get("stream"):
            record.update(status=400, error="stream_unsupported")
            st.log(st.req_log, record)
            return self.send_json(400, {"error": {"message": "streaming is not supported by the stand-in", "type": "invalid_request_error"}})
        auth = (self.headers.get("authorization") or "").removeprefix("Bearer ").strip()
        nth, nth_auth, total = st.next_count(model, auth)
        record.update(nth=nth, nth_for_key=nth_auth, total=total, klass=mconf["class"])
        messages = req.get("messages") or []
        users = [message_text(m) for m in messages if m.get("role") == "user"]
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        task = st.script.task_for(users[0] if users else "")
        record.update(task=task["name"] if task else None, turn=turn, n_messages=len(messages))

        fault = st.fault_for(model, nth, auth, nth_auth)
        if fault:
            record["fault"] = fault
            kind = fault.get("kind")
            if kind == "http_429":
                record["status"] = 429
                st.log(st.req_log, record)
                return self.send_json(
                    429,
                    {"error": {"message": "Rate limit reached for requests (stand-in fault)", "type": "rate_limit_error", "code": "rate_limit_exceeded"}},
                    {"retry-after": str(fault.get("retry_after", 1))},
                )
            if kind == "http_500":
                record["status"] = 500
                st.log(st.req_log, record)
                return self.send_json(500, {"error": {"message": "upstream exploded (stand-in fault)", "type": "server_error"}})
            if kind == "timeout":
                # Hold the connection past the caller's read timeout, then answer
                # (usually to a closed socket). Nothing is billable.
                record["status"] = "timeout"
                st.log(st.req_log, record)
                time.sleep(float(fault.get("sleep_sec", 30)))
                return self.send_json(504, {"error": {"message": "stand-in timeout elapsed", "type": "timeout"}})

        content = terminus_answer(task, mconf["class"], turn)
        usage = usage_for(messages, content, mconf, turn)
        delay = float(mconf.get("latency_sec", 0.05))
        if delay:
            time.sleep(delay)
        body = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "system_fingerprint": "fp_benchledger_live",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop", "logprobs": None}],
            "usage": usage,
        }
        with st.lock:
            seq = st.served.get(request_id, {}).get("seq") or len(st.served) + 1
            st.served[request_id] = {"model": model, "usage": usage, "served_at": now_rfc3339(), "seq": seq}
        record.update(status=200, usage=usage)
        st.log(st.req_log, record)
        self.send_json(200, body)

    # -- settlement --------------------------------------------------------
    def settlement(self, request_id: str) -> None:
        st = self.state
        want = os.environ.get(st.script.settlement_api_key_env, "")
        got = self.headers.get("x-api-key", "")
        if not want or got != want:
            return self.send_json(401, {"error": "unauthorized", "error_description": "missing or wrong x-api-key"})
        cfg = st.script.receipts
        with st.lock:
            polls = st.polls.get(request_id, 0) + 1
            st.polls[request_id] = polls
            served = st.served.get(request_id)
        base = {"request_id": request_id}
        if served is None:
            # bro metered a hop that never reached a billable answer here (a
            # 429, a timeout, an unknown id): not charged, if the id was seen.
            receipt = {
                **base,
                "state": "not_charged",
                "model_id": None,
                "provider_id": None,
                "usage": {k: 0 for k in ("uncached_input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens", "reasoning_tokens")},
                "final_charge_micro_usd": None,
            }
            st.log(st.rcpt_log, {"polled_at": now_rfc3339(), "poll": polls, "http_status": 200, "receipt": receipt})
            return self.send_json(200, receipt)
        mconf = st.script.model(served["model"]) or {}
        # Delayed receipts: every k-th served request id (in serving order) stays pending for
        # `pending_polls` polls (inside the grace), the rest are final at once.
        every = int(cfg.get("delay_every", 2))
        pending_polls = int(cfg.get("pending_polls", 2))
        ordinal = int(served.get("seq", 1))
        delayed = every > 0 and ordinal % every == 0
        buckets = receipt_buckets(served["usage"])
        receipt = {
            **base,
            "model_id": mconf.get("receipt_model", served["model"]),
            "provider_id": mconf.get("receipt_provider"),
            "usage": buckets,
        }
        if delayed and polls <= pending_polls:
            receipt.update(state="pending", final_charge_micro_usd=None)
        else:
            rates = mconf.get("receipt_rates") or {}
            charge = grouped_charge([
                (buckets["uncached_input_tokens"], rates.get("uncached_input")),
                (buckets["cache_read_tokens"], rates.get("cache_read")),
                (buckets["cache_write_tokens"], rates.get("cache_write")),
                (buckets["output_tokens"], rates.get("output")),
                (buckets["reasoning_tokens"], rates.get("output")),
            ])
            if charge is None:
                receipt.update(state="unknown", final_charge_micro_usd=None)
            else:
                receipt.update(state="computed", final_charge_micro_usd=charge)
        st.log(st.rcpt_log, {"polled_at": now_rfc3339(), "poll": polls, "http_status": 200, "delayed": delayed, "receipt": receipt})
        self.send_json(200, receipt)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--script", required=True, help="JSON script (models, tasks, faults, receipts)")
    ap.add_argument("--log-dir", required=True)
    ap.add_argument("--port", type=int, default=0, help="0 = a free port")
    ap.add_argument("--port-file", help="write the bound port here once listening")
    args = ap.parse_args()

    script = Script(args.script)
    Handler.state = State(script, args.log_dir)
    server = ThreadingHTTPServer((HOST, args.port), Handler)
    server.daemon_threads = True
    port = server.server_address[1]
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(f"{port}\n")
        os.replace(tmp, args.port_file)
    print(f"provider listening on http://{HOST}:{port}", file=sys.stderr, flush=True)

    def stop(signum, frame):
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    server.serve_forever(poll_interval=0.2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
