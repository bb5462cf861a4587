#!/bin/bash
# Reward 1 iff /app/count.txt holds 9.
mkdir -p /logs/verifier
if [ "$(tr -d "[:space:]" < /app/count.txt 2>/dev/null)" = "9" ]; then
  echo 1 > /logs/verifier/reward.txt; echo PASS
else
  echo 0 > /logs/verifier/reward.txt; echo FAIL
fi
