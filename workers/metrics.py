"""Operator metrics (prometheus-client): every `tablehall_*` series the processes export, in one place.

Base units (seconds), counters end in `_total`, labels are low-cardinality only (game, action kind,
error code, reason; never a match id or a player). Each process serves its own `/metrics`
(`--metrics-port` / `TABLEHALL_METRICS_PORT`, 0 = off): `tablehall serve`, `tablehall gateway`,
`tablehall worker`, and the Celery worker (prefork: multiprocess mode, see `ratings/celery.py`).

`tablehall_matches_active` and `tablehall_watchers_connected` are read from the live match hosts when
scraped (a collector, not a gauge kept in step by hand), so they cannot drift from the actors. A host
counts itself (`Census`): this module knows nothing of hosts, so the host can import it.
"""

from __future__ import annotations

import logging
import os
import weakref
from collections import Counter as Tally
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from workers.errors import ERRORS
from workers.games.catalog import games
from workers.voids import VoidReason

log = logging.getLogger("tablehall.metrics")

# Latency buckets (seconds): sub-millisecond group commits up to multi-second stalls.
FAST = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
# Timer lateness: the tolerance is 1 s by default; buckets around it.
LATE = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.5, 5.0, 10.0, 30.0)
# Rating lag after the match end: seconds to minutes (a Celery backlog).
LAG = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0, 3600.0)

FAULT_KINDS = ("worker_down", "timer_late", "owner_unreachable", "storage_error")

TIMER_LATENESS = Histogram(
    "tablehall_timer_lateness_seconds",
    "How late a match's deadline timer fired: now minus the deadline it was armed for.",
    ["game"],
    buckets=LATE,
)
LATENESS_TAPS: list[Callable[[str, float], None]] = []
"""Listeners of each timer's lateness besides the histogram (`tablehall bench clocks` keeps every sample)."""


def timer_lateness(game: str, late_s: float) -> None:
    """A deadline timer ran `late_s` after its deadline (the mailbox's wait included)."""
    TIMER_LATENESS.labels(game).observe(late_s)
    for tap in LATENESS_TAPS:
        tap(game, late_s)


HOP = Histogram(
    "tablehall_gateway_worker_hop_seconds",
    "From the gateway stamping a command's arrival to its worker starting on it (wall clocks).",
    buckets=FAST,
)
COMMAND = Histogram(
    "tablehall_command_duration_seconds",
    "A command at its worker, from receipt to acknowledgement (lock wait, rules, log commit), accepted or not.",
    ["game", "action"],
    buckets=FAST,
)
REJECTED = Counter(
    "tablehall_commands_rejected_total",
    "Commands (Act, Play) refused at the gateway's edge, by error code.",
    ["code"],
)
_COMMAND_BY: dict[tuple[str, str], Any] = {}
_REJECTED_BY: dict[str, Any] = {}


def command_duration(game: str, action: str) -> Any:
    """`COMMAND`'s series for a game and an action kind, bound once per process (`labels` takes a lock and
    checks its arguments: on the command path it is a dictionary lookup instead)."""
    series = _COMMAND_BY.get((game, action))
    if series is None:
        series = _COMMAND_BY[game, action] = COMMAND.labels(game, action)
    return series


def rejected(code: str) -> Any:
    """`REJECTED`'s series for an error code, bound once per process (see `command_duration`)."""
    series = _REJECTED_BY.get(code)
    if series is None:
        series = _REJECTED_BY[code] = REJECTED.labels(code)
    return series
FINISHED = Counter(
    "tablehall_matches_finished_total",
    "Matches that ended with a result, by game and how they ended (points, time, resign, score, ...).",
    ["game", "reason"],
)
VOIDED = Counter(
    "tablehall_matches_voided_total",
    "Matches that ended without a result (a void step in the log), by reason.",
    ["reason"],
)
FAULTS = Counter(
    "tablehall_service_faults_total",
    "Service faults by kind: worker_down, timer_late, owner_unreachable, storage_error.",
    ["kind"],
)
RATED = Counter(
    "tablehall_rating_updates_total",
    "Rating task outcomes by result: rated, skipped, held, already, not_finished, voided, unknown.",
    ["result"],
)
RATING_LAG = Histogram(
    "tablehall_rating_lag_seconds",
    "From when a match could first be rated (its end, a delayed table's result made public, its players' "
    "tournaments' hidden results made public, its players' previous rating) to its ratings being committed.",
    ["game"],
    buckets=LAG,
)
SWEEPS = Counter("tablehall_sweep_runs_total", "Timeout sweeps run (each finds what is overdue or abandoned).")
SWEPT = Counter(
    "tablehall_sweep_matches_total",
    "Matches a sweep handled, by outcome: settled (by the live owner), or voided by the sweep with its reason.",
    ["outcome"],
)
HANDOFF_KINDS = ("drain", "rebalance", "crash")
HANDOFFS = Counter(
    "tablehall_handoffs_total",
    "Partitions that changed owner, by kind: drain (a worker stopping), rebalance (one joining), crash (its "
    "owner's lease ran out and another worker took it over).",
    ["kind"],
)
HANDOFF_SECONDS = Histogram(
    "tablehall_handoff_seconds",
    "How long a partition was not served in a hand-off: from its old owner refusing commands to its new owner "
    "serving them (drain, rebalance); from its old owner's last heartbeat to the new owner serving (crash).",
    ["kind"],
    buckets=LATE,
)
HELD = Histogram(
    "tablehall_gateway_held_seconds",
    "Calls the gateway held because their match's partition was between workers (a hand-off, a takeover): "
    "from the call's arrival to its answer. What players felt of a deploy or a crash.",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0),
)
LEASE_LOSS_REASONS = ("expired", "fenced", "down")
LEASE_LOSSES = Counter(
    "tablehall_lease_losses_total",
    "Times this worker stopped serving partitions because it lost their leases: expired (no heartbeat got "
    "through), fenced (another worker holds them now), down (a gateway marked it unreachable).",
    ["reason"],
)
LOG_COMMIT = Histogram(
    "tablehall_event_log_commit_seconds",
    "One durable append of a change's steps to the event log, until committed.",
    buckets=FAST,
)
LOG_PHASES = ("queued", "to_writer", "writing", "answer")
LOG_WAIT = Counter(
    "tablehall_event_log_wait_seconds",
    "Time durable writes spent before their callers heard of them, summed over the writes, by phase: queued "
    "(gathered behind the batch before theirs), to_writer (handed to the log's writer, their batch not begun), "
    "writing (their batch's transaction and commit), answer (committed, the answer waiting for this process's "
    "event loop to read it). Divided by tablehall_event_log_writes_total: where a write's wait goes.",
    ["phase"],
)
LOG_WRITES = Counter(
    "tablehall_event_log_writes",
    "Durable writes answered by the log's writer (appends, new matches, snapshots, leases' claims), whose "
    "phases tablehall_event_log_wait_seconds_total sums.",
)
WAIT_BY_PHASE = tuple(LOG_WAIT.labels(phase) for phase in LOG_PHASES)
"""Pre-bound, in `LOG_PHASES`' order (each at 0 from the start)."""



def initialise() -> None:
    """Every known label set of the counters at 0 from the process start. Prometheus' `increase()` takes
    a series' first sample as its baseline, so a series born at 6 counts 0; born at 0, the 6 count.
    One source each: the fault kinds above, the void reasons (`workers.voids`), each catalog game's
    endings, the service's error codes (`workers.errors.ERRORS`, plus `internal`)."""
    for kind in FAULT_KINDS:
        FAULTS.labels(kind)
    for reason in VoidReason:
        VOIDED.labels(reason.value)
    for name, game in games().items():
        for ending in game.endings:
            FINISHED.labels(name, ending)
    for code in (*ERRORS, "internal"):
        rejected(code)
    for kind in HANDOFF_KINDS:
        HANDOFFS.labels(kind)
        HANDOFF_SECONDS.labels(kind)
    for loss in LEASE_LOSS_REASONS:
        LEASE_LOSSES.labels(loss)


initialise()


@dataclass(frozen=True, slots=True)
class Census:
    """What one live match host holds when scraped (workers/host.py `census`)."""

    active: Mapping[str, int]
    """Matches in progress, by game."""
    watching: Mapping[str, int]
    """Open watch streams (Watch, Play), by game."""
    partitions: int
    """Partitions served."""


class Counted(Protocol):
    """A live match host as the gauges see it."""

    def census(self) -> Census: ...


_hosts: weakref.WeakSet[Counted] = weakref.WeakSet()


def track(host: Counted) -> None:
    """Count this host's matches and watchers in the scrape-time gauges."""
    _hosts.add(host)


def untrack(host: Counted) -> None:
    _hosts.discard(host)


class LiveMatches(Collector):
    """`tablehall_matches_active{game}` and `tablehall_watchers_connected{game}` from the live actors."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        active: Tally[str] = Tally()
        watching: Tally[str] = Tally()
        owned = 0
        for host in list(_hosts):
            census = host.census()
            active.update(census.active)
            watching.update(census.watching)
            owned += census.partitions
        matches = GaugeMetricFamily(
            "tablehall_matches_active", "Matches in progress on this worker, by game.", labels=["game"]
        )
        watchers = GaugeMetricFamily(
            "tablehall_watchers_connected", "Open watch streams (Watch, Play) on this worker, by game.", labels=["game"]
        )
        for game in sorted(set(active) | set(watching) | set(games())):
            matches.add_metric([game], active[game])
            watchers.add_metric([game], watching[game])
        yield matches
        yield watchers
        partitions = GaugeMetricFamily(
            "tablehall_partitions_owned", "Partitions this worker serves now (of 256 in all).", labels=[]
        )
        partitions.add_metric([], owned)
        yield partitions

    def describe(self) -> Iterator[GaugeMetricFamily]:
        return iter(())


_live = LiveMatches()
REGISTRY.register(_live)


def metrics_port(flag: int | None) -> int:
    """The flag, else TABLEHALL_METRICS_PORT, else 0 (off)."""
    if flag is not None:
        return flag
    return int(os.environ.get("TABLEHALL_METRICS_PORT", "0") or 0)


def metrics_host(default: str) -> str:
    """TABLEHALL_METRICS_HOST, else the role's own listen address (`default`)."""
    return os.environ.get("TABLEHALL_METRICS_HOST") or default


class MetricsUnavailable(Exception):
    """`/metrics` cannot listen where asked (a port taken, an address not this machine's): the command line
    says it in one line (tablehall/startup.py)."""


def serve_metrics(port: int, host: str = "127.0.0.1", registry: CollectorRegistry = REGISTRY) -> Any:
    """Serve `/metrics` on `host:port` in a daemon thread; None when port is 0 (off). Returns the server."""
    if port <= 0:
        return None
    try:
        server, _thread = start_http_server(port, addr=host, registry=registry)
    except OSError as error:
        raise MetricsUnavailable(
            f"cannot serve /metrics on {host}:{port} ({error.strerror or error}): choose another with "
            "--metrics-port or TABLEHALL_METRICS_PORT (0: off)"
        ) from None
    bound = server.server_address[1]
    print(f"tablehall metrics on http://{host}:{bound}/metrics", flush=True)
    return server
