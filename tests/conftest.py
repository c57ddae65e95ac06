from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RECORDS = REPO / "tests" / "records"
"""Crafted records, each with its golden output (`X.out.json`) or the error it must give (`X.err.txt`)."""
EXAMPLES = REPO / "tests" / "examples"
"""The worked examples of docs/RECORDS.md, with the exact output `tablehall replay` prints for them."""

ONE_AT_A_TIME = frozenset(
    {
        "test_leases_cluster.py", "test_dev_cluster.py", "test_clocks_first.py", "test_pairing_off_the_clocks.py",
        "test_durability_crash.py", "test_durability_fencing.py", "test_durability_outage.py",
        "test_durability_timer.py", "test_ended_reads.py", "test_web_e2e.py", "test_web_tournament.py",
        "test_web_lobby_e2e.py", "test_web_screens.py", "test_metrics_monitoring.py", "test_metrics_scrape.py",
    }
)  # fmt: skip
"""Test files whose real clocks (SB-11's 1 s tolerance, a browser's bank) must not share the cores with
each other: under pytest-xdist (`-n 2 --dist loadgroup`) they run one after another on one worker, while
the other worker takes the rest of the suite."""


ONE_REDIS_DATABASE = frozenset(
    {"test_ratings_jobs.py", "test_ratings_delayed.py", "test_tournament_celery.py", "test_metrics_celery.py"}
)
"""Test files whose tests share a Redis database of the file's own (each test empties it before and after):
their tests run one after another on one worker, never beside each other."""


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the groups on each worker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name in ONE_AT_A_TIME:
            item.add_marker(pytest.mark.xdist_group("one_at_a_time"))
        elif item.path.name in ONE_REDIS_DATABASE:
            item.add_marker(pytest.mark.xdist_group(f"redis:{item.path.name}"))
