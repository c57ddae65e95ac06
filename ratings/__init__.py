"""The Celery side (DESIGN.md): rating updates, timeout sweeps, scheduled tournament starts."""
