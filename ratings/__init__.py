"""The Celery side (DESIGN.md): rating updates, timeout sweeps, scheduled tournament starts."""

import workers  # noqa: F401  (first: it sets how grpc does its I/O before grpc is imported)
