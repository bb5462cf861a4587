#!/bin/bash
printf 'pear\napple\nfig\ncherry\n' | sort > /app/words.txt
