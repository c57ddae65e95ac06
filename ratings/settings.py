"""The jobs' settings, from the environment (the same variables feed the workers and the gateway);
the database is opened by `workers.sql.migrate.engine_for`."""

from __future__ import annotations

import os

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"


def redis_url() -> str:
    """The Celery broker (and redbeat's lock store): `TABLEHALL_REDIS_URL`."""
    return os.environ.get("TABLEHALL_REDIS_URL") or DEFAULT_REDIS_URL


def _seconds(name: str, default: float) -> float:
    return float(os.environ.get(name, str(default)))


def sweep_s() -> float:
    """How often beat (or the embedded loop) sweeps: `TABLEHALL_SWEEP_S`, default 5 s."""
    return _seconds("TABLEHALL_SWEEP_S", 5.0)


def grace_ms() -> int:
    """A deadline is the sweep's business only this long after it passed (`TABLEHALL_SWEEP_GRACE_S`, 2 s):
    until then the owner's own timer is expected to settle it."""
    return int(_seconds("TABLEHALL_SWEEP_GRACE_S", 2.0) * 1000)


def continue_ms() -> int:
    """A Spectacular Bid table where no seat ever acted (Continue never pressed) is abandoned after this
    long (`TABLEHALL_ABANDON_S`, 90 s: past the 60 s ready timeout, before a first bank can run out)."""
    return int(_seconds("TABLEHALL_ABANDON_S", 90.0) * 1000)


def idle_ms() -> int:
    """A clockless 501♠ table with no change for this long is abandoned (`TABLEHALL_IDLE_S`, 1 hour)."""
    return int(_seconds("TABLEHALL_IDLE_S", 3600.0) * 1000)
