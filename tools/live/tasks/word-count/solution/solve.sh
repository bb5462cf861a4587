#!/bin/bash
echo "the quick brown fox jumps over the lazy dog" | wc -w > /app/count.txt
