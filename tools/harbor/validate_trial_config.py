#!/usr/bin/env python3
"""Validate Harbor 0.25.0 config files with Harbor's own pydantic models.

Usage (run with the venv made by tools/harbor/setup.sh):
    validate_trial_config.py [--kind trial|job] [--agent-options] [--strict] FILE...

For each FILE one JSON line is printed on stdout:
    {"file": "...", "ok": true|false, "errors": [{"loc": "...", "type": "...", "msg": "..."}]}

Exit status: 0 if every file is valid, 1 if any is invalid (including unreadable
or non-JSON files), 2 on a usage error.

--kind trial (default) uses harbor.models.trial.config:TrialConfig, the model that
`harbor trial start -c FILE` validates; --kind job uses
harbor.models.job.config:JobConfig (`harbor job start -c FILE`).
Like the CLI, the file is parsed as JSON and passed to `model_validate`.

--agent-options additionally checks each agent's `kwargs` the way the agent
constructor does (`BaseAgent.parse_options`, e.g. Terminus2Options with
extra="forbid"), which TrialConfig alone does not: an unknown kwarg such as a
typo in `api_base` is otherwise only caught when the trial starts.

--strict reports keys that no Harbor model declares (type "unknown_key"). Harbor's
models ignore unknown keys, so without it a misspelt field (or a TrialConfig
checked with --kind job) silently validates. Free-form dicts (kwargs, env,
llm_kwargs, ...) are not inspected.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from typing import Any

# Importing an agent class imports LiteLLM, which otherwise tries to download its
# model cost map from the internet at import time (slow retries when offline).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def _loc(parts: Any) -> str:
    return ".".join(str(p) for p in parts)


def _pydantic_errors(exc: Any, prefix: str = "") -> list[dict[str, str]]:
    out = []
    for e in exc.errors(include_url=False, include_input=False):
        loc = _loc(e["loc"])
        out.append({"loc": f"{prefix}{loc}" if prefix else loc, "type": e["type"], "msg": e["msg"]})
    return out


def _unknown_keys(data: Any, value: Any, loc: str) -> list[dict[str, str]]:
    """Keys of the input dict `data` that the validated model `value` does not declare."""
    from pydantic import BaseModel

    out: list[dict[str, str]] = []
    if isinstance(value, BaseModel) and isinstance(data, dict):
        fields = type(value).model_fields
        names: dict[str, str] = {}
        for name, info in fields.items():
            names[name] = name
            if isinstance(info.alias, str):
                names[info.alias] = name
        for key, sub in data.items():
            sub_loc = f"{loc}.{key}" if loc else str(key)
            if key not in names:
                out.append({"loc": sub_loc, "type": "unknown_key",
                            "msg": f"{type(value).__name__} has no field {key!r} (Harbor ignores it)"})
            else:
                out.extend(_unknown_keys(sub, getattr(value, names[key], None), sub_loc))
    elif isinstance(value, (list, tuple)) and isinstance(data, list) and len(value) == len(data):
        for i, (d, v) in enumerate(zip(data, value)):
            out.extend(_unknown_keys(d, v, f"{loc}.{i}"))
    return out


def _agent_option_errors(agent_cfg: Any, loc: str) -> list[dict[str, str]]:
    """Check agent kwargs against the agent class's options model."""
    from pydantic import ValidationError

    from harbor.agents.factory import AgentFactory

    try:
        cls = AgentFactory.get_agent_class_from_config(agent_cfg)
    except Exception as exc:  # unknown agent name / import path that fails to import
        return [{"loc": loc, "type": "agent_unknown", "msg": f"{type(exc).__name__}: {exc}"}]
    if cls.options_model is None:
        return []
    try:
        # Same call the constructor makes; env fallbacks only come from agent.env,
        # never from this process's environment, so the result is reproducible.
        cls.options_model.model_validate(dict(agent_cfg.kwargs))
    except ValidationError as exc:
        return _pydantic_errors(exc, prefix=f"{loc}.kwargs.")
    return []


def validate_file(path: str, kind: str, agent_options: bool, strict: bool = False) -> dict[str, Any]:
    from pydantic import ValidationError

    if kind == "job":
        from harbor.models.job.config import JobConfig as Model
    else:
        from harbor.models.trial.config import TrialConfig as Model

    result: dict[str, Any] = {"file": path, "ok": False, "errors": []}
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except OSError as exc:
        result["errors"].append({"loc": "", "type": "file_error", "msg": str(exc)})
        return result
    except json.JSONDecodeError as exc:
        result["errors"].append({"loc": "", "type": "json_invalid", "msg": str(exc)})
        return result
    if not isinstance(data, dict):
        result["errors"].append({"loc": "", "type": "dict_type", "msg": "top level must be a JSON object"})
        return result

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            model = Model.model_validate(data)
    except ValidationError as exc:
        result["errors"] = _pydantic_errors(exc)
        return result

    if strict:
        result["errors"].extend(_unknown_keys(data, model, ""))

    if agent_options:
        if kind == "job":
            agents = [(f"agents.{i}", a) for i, a in enumerate(model.agents)]
        else:
            agents = [("agent", model.agent)]
            if model.user_agent is not None:
                agents.append(("user_agent", model.user_agent))
        for loc, agent_cfg in agents:
            result["errors"].extend(_agent_option_errors(agent_cfg, loc))

    result["ok"] = not result["errors"]
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kind", choices=["trial", "job"], default="trial")
    parser.add_argument("--agent-options", action="store_true",
                        help="also validate agent kwargs with the agent's options model")
    parser.add_argument("--strict", action="store_true",
                        help="report keys that no Harbor model declares")
    parser.add_argument("files", nargs="+", metavar="FILE")
    args = parser.parse_args(argv)  # exits 2 on usage errors

    all_ok = True
    for path in args.files:
        res = validate_file(path, args.kind, args.agent_options, args.strict)
        all_ok &= res["ok"]
        print(json.dumps(res), flush=True)
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
