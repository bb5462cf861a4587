#!/bin/bash
# Reward 1 iff /app/fizzbuzz.sh is executable and prints FizzBuzz 1..15.
mkdir -p /logs/verifier
want="$(python3 -c 'print("\n".join("FizzBuzz" if i%15==0 else "Fizz" if i%3==0 else "Buzz" if i%5==0 else str(i) for i in range(1,16)))')"
if [ -x /app/fizzbuzz.sh ] && [ "$(timeout 10 /app/fizzbuzz.sh 2>/dev/null)" = "$want" ]; then
  echo 1 > /logs/verifier/reward.txt; echo PASS
else
  echo 0 > /logs/verifier/reward.txt; echo FAIL
fi
