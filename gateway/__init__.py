"""The stateless public front (DESIGN.md): auth, routing to the owning worker, update streams."""

import workers  # noqa: F401  (first: it sets how grpc does its I/O before grpc is imported)
