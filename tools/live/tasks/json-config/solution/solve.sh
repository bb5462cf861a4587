#!/bin/bash
printf '{"name": "benchledger", "retries": 3}\n' > /app/config.json
