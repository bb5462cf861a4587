"""Harbor 0.25.0 environment for benchledger's live loopback run (see tools/live/README.md)."""
