"""How much one client may ask of the gateway: a token bucket per connection and per seat token for the
request rate, and a count of open watch streams (Watch, Play) per connection and per token.

Pure book-keeping with the time passed in (seconds on a monotonic clock); `gateway/guard.py` applies it
to the public services on both doors. Settings: `TABLEHALL_RATE_PER_S`, `TABLEHALL_BURST`,
`TABLEHALL_MAX_WATCHES` (README, "Limits per client").
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from workers.games.values import built_fast

DEFAULT_RATE_PER_S = 300.0
"""Sustained requests per second per connection and per token: twice what one of the 16 connections of
`tablehall bench service` carries on a gateway doing 2,400 commands/s, and far above a person's pace."""
DEFAULT_BURST = 1500.0
"""Requests a quiet connection or token may send at once: a whole bot-vs-bot match at full speed (about
450 commands per seat, two bots on one connection) fits in it."""
DEFAULT_MAX_WATCHES = 100
"""Open Watch/Play streams per connection and per token (the bench holds about 40 per connection)."""
WATCH_RETRY_MS = 1000
"""The retry hint for a refused stream: a slot frees only when another stream of the caller ends."""
KEEP_KEYS = 10_000
"""Past this many buckets, the full ones (as good as new) are forgotten; the next look is when the count
has doubled again, so a crowd of busy callers costs no sweep per request."""


@built_fast  # one is made for every request
@dataclass(frozen=True, slots=True)
class TokenBucket:
    """`burst` tokens at most, refilled at `rate` per second; each request takes one. `tokens` is the level
    at instant `at` (seconds)."""

    rate: float
    burst: float
    tokens: float
    at: float

    @staticmethod
    def full(rate: float, burst: float, now: float) -> TokenBucket:
        return TokenBucket(rate, burst, burst, now)

    def level(self, now: float) -> float:
        """The tokens at `now` (a clock that went back refills nothing)."""
        return min(self.burst, self.tokens + max(0.0, now - self.at) * self.rate)

    def take(self, now: float) -> tuple[TokenBucket, float]:
        """One token at `now`: (the bucket after, 0.0), or (the bucket unchanged but read at `now`, the
        seconds until a token will be there) when it is empty."""
        level = self.level(now)
        at = max(now, self.at)
        if level >= 1.0:
            return TokenBucket(self.rate, self.burst, level - 1.0, at), 0.0
        wait = (1.0 - level) / self.rate if self.rate > 0 else math.inf
        return TokenBucket(self.rate, self.burst, level, at), wait


@dataclass(frozen=True, slots=True)
class LimitSettings:
    rate_per_s: float = DEFAULT_RATE_PER_S
    burst: float = DEFAULT_BURST
    max_watches: int = DEFAULT_MAX_WATCHES

    @staticmethod
    def from_env(environ: Mapping[str, str] | None = None) -> LimitSettings:
        """TABLEHALL_RATE_PER_S, TABLEHALL_BURST, TABLEHALL_MAX_WATCHES; a bad value stops the process with
        a one-line reason."""
        env = os.environ if environ is None else environ
        rate = _number(env, "TABLEHALL_RATE_PER_S", DEFAULT_RATE_PER_S)
        burst = _number(env, "TABLEHALL_BURST", DEFAULT_BURST)
        watches = _number(env, "TABLEHALL_MAX_WATCHES", DEFAULT_MAX_WATCHES)
        if burst < 1 or watches < 1 or watches != int(watches):
            raise SystemExit("TABLEHALL_BURST must be at least 1 and TABLEHALL_MAX_WATCHES a whole number ≥ 1")
        return LimitSettings(rate, burst, int(watches))


def _number(env: Mapping[str, str], name: str, default: float) -> float:
    text = env.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        raise SystemExit(f"{name} must be a number, not {text[:40]!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise SystemExit(f"{name} must be a positive number, not {text[:40]!r}")
    return value


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a request was refused, in words, and when it may be tried again."""

    message: str
    retry_after_ms: int


@dataclass
class Budgets:
    """Every caller's bucket and open streams, by key ("peer …" for a connection, "token …" for the
    SHA-256 of a bearer token). Not thread-safe: one event loop owns it."""

    settings: LimitSettings = field(default_factory=LimitSettings)
    buckets: dict[str, TokenBucket] = field(default_factory=dict)
    watches: dict[str, int] = field(default_factory=dict)
    sweep_at: int = KEEP_KEYS
    """The bucket count at which full buckets are next forgotten."""

    def spend(self, keys: Sequence[str], now: float) -> Refusal | None:
        """One request of every key at `now`; refused (and nothing spent) if any key's bucket is empty."""
        taken = []
        wait = 0.0
        for key in keys:
            bucket = self.buckets.get(key) or TokenBucket.full(self.settings.rate_per_s, self.settings.burst, now)
            after, needed = bucket.take(now)
            taken.append((key, after))
            wait = max(wait, needed)
        if wait > 0:
            retry = math.ceil(wait * 1000) if math.isfinite(wait) else 60_000
            return Refusal(f"too many requests: at most {self.settings.rate_per_s:g} a second", retry)
        self.buckets.update(taken)
        if len(self.buckets) > self.sweep_at:
            self.forget(now)
        return None

    def forget(self, now: float) -> None:
        """Drop the buckets that have refilled completely: a new one would be the same."""
        for key in [k for k, b in self.buckets.items() if b.level(now) >= b.burst]:
            del self.buckets[key]
        self.sweep_at = max(KEEP_KEYS, 2 * len(self.buckets))

    def open_watch(self, keys: Sequence[str]) -> Refusal | None:
        """One more open stream for every key, or a refusal (nothing counted) if any key is at the limit."""
        limit = self.settings.max_watches
        if any(self.watches.get(key, 0) >= limit for key in keys):
            return Refusal(f"too many open streams: at most {limit} at once", WATCH_RETRY_MS)
        for key in keys:
            self.watches[key] = self.watches.get(key, 0) + 1
        return None

    def close_watch(self, keys: Sequence[str]) -> None:
        for key in keys:
            left = self.watches.get(key, 0) - 1
            if left > 0:
                self.watches[key] = left
            else:
                self.watches.pop(key, None)
