"""The per-client limits' pure core (gateway/limits.py): the token bucket with injected time (hypothesis),
the budgets of connections and tokens (a refusal spends nothing; forgetting full buckets changes no
decision), the open-stream counts, and the settings from the environment."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.limits import (
    DEFAULT_BURST,
    DEFAULT_MAX_WATCHES,
    DEFAULT_RATE_PER_S,
    KEEP_KEYS,
    Budgets,
    LimitSettings,
    TokenBucket,
)

rates = st.floats(0.5, 1000, allow_nan=False)
bursts = st.integers(1, 50).map(float)
gaps = st.lists(st.floats(0, 2, allow_nan=False), min_size=1, max_size=200)


def times(start: float, steps: list[float]) -> list[float]:
    out, now = [], start
    for step in steps:
        now += step
        out.append(now)
    return out


def run(bucket: TokenBucket, instants: list[float]) -> tuple[TokenBucket, list[bool]]:
    admitted = []
    for now in instants:
        bucket, wait = bucket.take(now)
        admitted.append(wait == 0)
    return bucket, admitted


@given(rates, bursts, gaps, st.floats(0, 1e6, allow_nan=False))
def test_no_window_admits_more_than_the_burst_plus_the_rate_times_its_length(
    rate: float, burst: float, steps: list[float], start: float
) -> None:
    instants = times(start, steps)
    _, admitted = run(TokenBucket.full(rate, burst, start), instants)
    taken = [t for t, ok in zip(instants, admitted, strict=True) if ok]
    for i in range(len(taken)):
        for j in range(i, len(taken)):
            assert j - i + 1 <= burst + rate * (taken[j] - taken[i]) + 1e-6


@given(rates, bursts, st.integers(1, 100))
def test_requests_at_the_rate_are_always_admitted(rate: float, burst: float, count: int) -> None:
    spacing = 1 / rate
    _, admitted = run(TokenBucket.full(rate, burst, 0.0), [k * spacing * 1.000001 for k in range(count)])
    assert all(admitted)


@given(rates, bursts)
def test_a_full_bucket_admits_its_burst_at_once_and_no_more(rate: float, burst: float) -> None:
    _, admitted = run(TokenBucket.full(rate, burst, 5.0), [5.0] * (int(burst) + 3))
    assert admitted == [True] * int(burst) + [False] * 3


@given(rates, bursts, st.integers(0, 20), st.floats(0, 1, allow_nan=False))
def test_the_wait_it_names_is_exactly_when_a_token_is_back(rate: float, burst: float, extra: int, late: float) -> None:
    bucket, _ = run(TokenBucket.full(rate, burst, 0.0), [0.0] * (int(burst) + extra))
    after, wait = bucket.take(late / rate)
    if wait == 0:
        return
    assert after.level(late / rate) < 1
    assert after.take(late / rate + wait * (1 + 1e-9) + 1e-12)[1] == 0  # back then
    if wait > 1e-6:
        assert after.take(late / rate + wait * 0.99)[1] > 0  # not before


@given(rates, bursts, st.floats(0, 100, allow_nan=False))
def test_a_clock_that_goes_back_mints_nothing(rate: float, burst: float, back: float) -> None:
    bucket, _ = run(TokenBucket.full(rate, burst, 100.0), [100.0] * int(burst))
    assert bucket.level(100.0 - back) == pytest.approx(bucket.tokens)
    assert bucket.take(100.0 - back)[1] > 0


def test_a_refused_request_spends_nothing_and_the_emptiest_key_names_the_wait() -> None:
    budgets = Budgets(LimitSettings(rate_per_s=2, burst=3, max_watches=5))
    for _ in range(3):
        assert budgets.spend(["peer a", "token t"], 0.0) is None
    assert budgets.spend(["peer b"], 0.0) is None  # another connection is untouched
    before = dict(budgets.buckets)
    refusal = budgets.spend(["peer b", "token t"], 0.0)  # b has budget, the token has none
    assert refusal is not None and refusal.retry_after_ms == 500
    assert "2 a second" in refusal.message
    assert budgets.buckets == before
    assert budgets.spend(["peer b", "token t"], 0.5) is None  # one token back for t after 1/rate


keys = st.sampled_from(["peer a", "peer b", "token t", "token u"])


@settings(max_examples=200)
@given(st.lists(st.tuples(st.lists(keys, min_size=1, max_size=2, unique=True), st.floats(0, 3)), max_size=120))
def test_forgetting_full_buckets_changes_no_decision(calls: list[tuple[list[str], float]]) -> None:
    """Budgets that forget after every call decide exactly as budgets that never forget."""
    keeping, forgetting = Budgets(LimitSettings(4, 3, 1)), Budgets(LimitSettings(4, 3, 1))
    now = 0.0
    for chosen, step in calls:
        now += step
        kept = keeping.spend(chosen, now)
        forgot = forgetting.spend(chosen, now)
        assert (kept is None) == (forgot is None)
        if kept is not None and forgot is not None:
            assert kept.retry_after_ms == forgot.retry_after_ms
        forgetting.forget(now)


def test_many_callers_are_remembered_while_busy_and_forgotten_once_full() -> None:
    budgets = Budgets(LimitSettings(rate_per_s=1, burst=2, max_watches=1))
    for k in range(KEEP_KEYS + 5):  # all at once: none is full again, none may be forgotten
        assert budgets.spend([f"peer {k}"], 0.0) is None
    assert len(budgets.buckets) == KEEP_KEYS + 5
    assert budgets.sweep_at == 2 * (KEEP_KEYS + 1)  # one sweep found none full: the next at twice as many
    budgets.forget(10.0)  # later they have all refilled
    assert budgets.buckets == {} and budgets.sweep_at == KEEP_KEYS
    assert budgets.spend(["peer 0"], 10.0) is None and budgets.spend(["peer 0"], 10.0) is None
    assert budgets.spend(["peer 0"], 10.0) is not None  # a forgotten caller starts full, not empty


def test_open_streams_are_counted_per_key_and_released() -> None:
    budgets = Budgets(LimitSettings(max_watches=2))
    assert budgets.open_watch(["peer a", "token t"]) is None
    assert budgets.open_watch(["peer a"]) is None
    refused = budgets.open_watch(["peer a", "token u"])  # the connection is full
    assert refused is not None and refused.retry_after_ms > 0 and "at most 2" in refused.message
    assert budgets.watches == {"peer a": 2, "token t": 1}  # the refusal counted nothing
    assert budgets.open_watch(["peer b", "token t"]) is None  # the token has one slot left
    assert budgets.open_watch(["peer c", "token t"]) is not None
    budgets.close_watch(["peer a", "token t"])
    assert budgets.open_watch(["peer c", "token t"]) is None
    for held in (["peer a"], ["peer b", "token t"], ["peer c", "token t"]):
        budgets.close_watch(held)
    assert budgets.watches == {}


def test_settings_from_the_environment() -> None:
    assert LimitSettings.from_env({}) == LimitSettings(DEFAULT_RATE_PER_S, DEFAULT_BURST, DEFAULT_MAX_WATCHES)
    env = {"TABLEHALL_RATE_PER_S": "2.5", "TABLEHALL_BURST": "10", "TABLEHALL_MAX_WATCHES": "4"}
    assert LimitSettings.from_env(env) == LimitSettings(2.5, 10, 4)
    for env, said in [
        ({"TABLEHALL_RATE_PER_S": "fast"}, "TABLEHALL_RATE_PER_S must be a number"),
        ({"TABLEHALL_RATE_PER_S": "0"}, "positive"),
        ({"TABLEHALL_BURST": "nan"}, "positive"),
        ({"TABLEHALL_BURST": "0.5"}, "at least 1"),
        ({"TABLEHALL_MAX_WATCHES": "2.5"}, "whole number"),
        ({"TABLEHALL_RATE_PER_S": "x" * 10_000}, "must be a number"),
    ]:
        with pytest.raises(SystemExit, match=said) as stopped:
            LimitSettings.from_env(env)
        assert len(str(stopped.value)) < 120  # never echoes a huge value


def test_the_defaults_leave_room_for_the_service_benchmark() -> None:
    """`tablehall bench service` (200 matches at a time by default, on `channels(200)` connections; 501♠ has
    3 seats) holds every Play stream open at once; a whole bot match (about 450 commands a seat, two seats
    on one connection) fits in one burst; the matches of one connection at full speed (~90 commands/s each,
    measured in memory at 50 and 200 in flight) stay within its sustained rate."""
    from tablehall.bench_connections import MATCHES_PER_CHANNEL, channels

    for concurrency in (1, 50, 200, 1000):
        assert math.ceil(concurrency / channels(concurrency)) <= MATCHES_PER_CHANNEL
    streams_per_connection = math.ceil(200 * 3 / channels(200))
    assert streams_per_connection <= DEFAULT_MAX_WATCHES
    assert MATCHES_PER_CHANNEL * 90 <= DEFAULT_RATE_PER_S
    whole_match = 2 * 450
    assert whole_match <= DEFAULT_BURST


@given(st.integers(1, 400), st.randoms(use_true_random=False))
def test_the_benchmark_never_puts_more_matches_on_a_connection_than_its_rate_allows(
    concurrency: int, rng: random.Random
) -> None:
    """Matches end in any order; each new one goes where fewest play, so a connection never carries more
    than `MATCHES_PER_CHANNEL` at once (by match number, ended matches left some with 4 or 5)."""
    from tablehall.bench_connections import MATCHES_PER_CHANNEL, Spread, channels

    spread = Spread(channels(concurrency))
    playing = [spread.take() for _ in range(concurrency)]
    for _ in range(3 * concurrency):
        spread.give_back(playing.pop(rng.randrange(len(playing))))
        playing.append(spread.take())
        assert max(spread.playing) <= MATCHES_PER_CHANNEL
    assert sum(spread.playing) == concurrency
