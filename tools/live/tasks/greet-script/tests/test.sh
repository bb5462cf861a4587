#!/bin/bash
# Reward 1 iff /app/greet.sh is executable and greets its first argument.
mkdir -p /logs/verifier
if [ -x /app/greet.sh ] && [ "$(timeout 10 /app/greet.sh World 2>/dev/null)" = "Hello, World!" ] \
   && [ "$(timeout 10 /app/greet.sh Ada 2>/dev/null)" = "Hello, Ada!" ]; then
  echo 1 > /logs/verifier/reward.txt; echo PASS
else
  echo 0 > /logs/verifier/reward.txt; echo FAIL
fi
