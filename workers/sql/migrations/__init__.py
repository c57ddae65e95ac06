"""Alembic migrations of the tablehall database (run through `workers.sql.migrate`)."""
