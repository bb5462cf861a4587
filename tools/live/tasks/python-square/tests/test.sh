#!/bin/bash
# Reward 1 iff /app/mathutil.py defines square(n) == n * n.
mkdir -p /logs/verifier
if timeout 10 python3 -c "import sys; sys.path.insert(0, \"/app\"); import mathutil; sys.exit(0 if (mathutil.square(7), mathutil.square(-3), mathutil.square(0)) == (49, 9, 0) else 1)" 2>/dev/null; then
  echo 1 > /logs/verifier/reward.txt; echo PASS
else
  echo 0 > /logs/verifier/reward.txt; echo FAIL
fi
