"""The stateless public front (DESIGN.md): auth, routing to the owning worker, update streams."""
