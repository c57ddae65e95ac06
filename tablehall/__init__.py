"""The `tablehall` command line: demo, replay, benchmarks (and later the SDK and terminal client)."""
