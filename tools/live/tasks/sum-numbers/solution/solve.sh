#!/bin/bash
seq 1 10 > /app/numbers.txt
echo $(( $(seq 1 10 | paste -sd+) )) > /app/sum.txt
