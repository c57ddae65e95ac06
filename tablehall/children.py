"""Processes a command started for itself (a bench's `tablehall serve`): stopped the same way by all."""

from __future__ import annotations

import subprocess


def stop(process: subprocess.Popen[str], grace_s: float = 15.0) -> None:
    """SIGTERM (a graceful stop: its matches handed over or ended), then SIGKILL after `grace_s`."""
    process.terminate()
    try:
        process.wait(grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)
