"""`tablehall bench service` on a durable log: where a write's wait goes, read from the service's own
`/metrics` before and after the load (README, "Operating tablehall").

The log's writer times each write's phases (`tablehall_event_log_wait_seconds_total`: queued behind the batch
before it, on its way to the writer, its batch's writing, its answer waiting for the serving loop), and each
match actor the whole wait of its appends (`tablehall_event_log_commit_seconds`); what the actor waited beyond
the four phases is its own turn after the answer (the loop running the answered changes before it)."""

from __future__ import annotations

import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

from workers.metrics import LOG_PHASES

SCRAPE_S = 5.0
WORDS = {
    "queued": "queued behind the batch before it",
    "to_writer": "on its way to the writer",
    "writing": "its batch written and committed",
    "answer": "the answer waiting for the serving loop",
}


@dataclass(frozen=True, slots=True)
class Waits:
    """The counters summed over the scraped processes (a gateway's and its workers' `/metrics`)."""

    writes: float = 0.0
    phases: tuple[float, ...] = (0.0,) * len(LOG_PHASES)
    """Seconds summed over the writes, in `LOG_PHASES`' order."""
    appends: float = 0.0
    appends_s: float = 0.0
    """The match actors' appends and the seconds they waited (`tablehall_event_log_commit_seconds`)."""

    @staticmethod
    def read(urls: Sequence[str]) -> Waits | None:
        """Every process's counters, summed; None when one cannot be read (blocking: run it in a thread)."""
        found = Waits()
        for url in urls:
            try:
                with urllib.request.urlopen(url, timeout=SCRAPE_S) as response:
                    text = response.read().decode()
            except OSError:
                return None
            found = found.plus(Waits.parsed(text))
        return found

    @staticmethod
    def parsed(text: str) -> Waits:
        """The counters in one exposition."""
        phases = dict.fromkeys(LOG_PHASES, 0.0)
        writes = appends = appends_s = 0.0
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == "tablehall_event_log_wait_seconds_total":
                    phases[sample.labels.get("phase", "")] = sample.value
                elif sample.name == "tablehall_event_log_writes_total":
                    writes = sample.value
                elif sample.name == "tablehall_event_log_commit_seconds_count":
                    appends = sample.value
                elif sample.name == "tablehall_event_log_commit_seconds_sum":
                    appends_s = sample.value
        return Waits(writes, tuple(phases[phase] for phase in LOG_PHASES), appends, appends_s)

    def plus(self, other: Waits, sign: float = 1.0) -> Waits:
        """Each counter of `other` added (`sign` -1: taken away, `since`)."""
        return Waits(
            self.writes + sign * other.writes,
            tuple(a + sign * b for a, b in zip(self.phases, other.phases, strict=True)),
            self.appends + sign * other.appends,
            self.appends_s + sign * other.appends_s,
        )

    def since(self, before: Waits) -> Waits:
        return self.plus(before, -1.0)

    def words(self) -> str | None:
        """A write's wait on average, phase by phase; None when nothing durable was written."""
        if self.writes <= 0:
            return None
        each = [seconds * 1000 / self.writes for seconds in self.phases]
        said = ", ".join(f"{ms:.2f} ms {WORDS[phase]}" for phase, ms in zip(LOG_PHASES, each, strict=True))
        line = f"a durable write's wait on average ({self.writes:,.0f} writes): {said}"
        if self.appends > 0:
            waited = self.appends_s * 1000 / self.appends
            line += (
                f"; a change's append waited {waited:.2f} ms in its match's actor, of which "
                f"{max(0.0, waited - sum(each)):.2f} ms its turn after the answer"
            )
        return line
