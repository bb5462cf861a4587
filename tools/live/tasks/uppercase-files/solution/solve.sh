#!/bin/bash
mkdir -p /app/out
for f in a b c; do echo "$f" | tr a-z A-Z > /app/out/$f.txt; done
