#!/bin/bash
printf 'def square(n):\n    return n * n\n' > /app/mathutil.py
