#!/bin/bash
# Reward 1 iff /app/words.txt holds apple, cherry, fig, pear in that order.
mkdir -p /logs/verifier
if [ "$(cat /app/words.txt 2>/dev/null)" = "$(printf 'apple\ncherry\nfig\npear')" ]; then
  echo 1 > /logs/verifier/reward.txt; echo PASS
else
  echo 0 > /logs/verifier/reward.txt; echo FAIL
fi
