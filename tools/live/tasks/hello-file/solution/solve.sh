#!/bin/bash
printf 'Hello, benchledger!\n' > /app/hello.txt
