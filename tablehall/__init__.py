"""The top layer, for people at the service: the `tablehall` command line (serve and the separate roles,
play, bots, tournaments and organizers, records, replay and verify, demo, dev-cluster, benchmarks), the
async Python SDK (`client.py`) and the terminal client (`play.py`)."""

import workers  # noqa: F401  (first: it sets how grpc does its I/O before grpc is imported)
