#!/bin/bash
# Reward 1 iff /app/hello.txt is exactly "Hello, benchledger!\n".
mkdir -p /logs/verifier
if [ "$(cat /app/hello.txt 2>/dev/null; echo x)" = "Hello, benchledger!
x" ]; then echo 1 > /logs/verifier/reward.txt; echo PASS; else echo 0 > /logs/verifier/reward.txt; echo FAIL; fi
