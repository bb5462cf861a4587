#!/bin/bash
# Reward 1 iff /app/numbers.txt is 1..10, one per line, and /app/sum.txt holds 55.
mkdir -p /logs/verifier
if [ "$(cat /app/numbers.txt 2>/dev/null)" = "$(seq 1 10)" ] && [ "$(tr -d "[:space:]" < /app/sum.txt 2>/dev/null)" = "55" ]; then
  echo 1 > /logs/verifier/reward.txt; echo PASS
else
  echo 0 > /logs/verifier/reward.txt; echo FAIL
fi
