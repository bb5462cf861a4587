#!/bin/bash
# Reward 1 iff /app/out/{a,b,c}.txt hold A, B, C (one line each) and nothing else is there.
mkdir -p /logs/verifier
ok=1
for f in a b c; do
  [ "$(cat /app/out/$f.txt 2>/dev/null; echo x)" = "$(echo "$f" | tr a-z A-Z)
x" ] || ok=0
done
[ "$(ls /app/out 2>/dev/null | tr "\n" " ")" = "a.txt b.txt c.txt " ] || ok=0
if [ $ok = 1 ]; then echo 1 > /logs/verifier/reward.txt; echo PASS; else echo 0 > /logs/verifier/reward.txt; echo FAIL; fi
