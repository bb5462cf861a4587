#!/bin/bash
# Reward 1 iff /app/config.json parses to {"name": "benchledger", "retries": 3}.
mkdir -p /logs/verifier
if python3 -c 'import json,sys; d=json.load(open("/app/config.json")); sys.exit(0 if d=={"name":"benchledger","retries":3} and type(d["retries"]) is int else 1)' 2>/dev/null; then
  echo 1 > /logs/verifier/reward.txt; echo PASS
else
  echo 0 > /logs/verifier/reward.txt; echo FAIL
fi
