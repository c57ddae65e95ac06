"""The deal shuffle: every order is a permutation, and all orders of a small deck come out equally often."""

from __future__ import annotations

import sys
from collections import Counter

from workers import shuffle


def test_every_shuffle_is_a_permutation() -> None:
    for n in (0, 1, 2, 3, 28, 32, 500):
        assert sorted(shuffle.shuffled(n)) == list(range(n))


def test_orders_are_uniform() -> None:
    draws = 60_000
    seen = Counter(tuple(shuffle.shuffled(3)) for _ in range(draws))
    assert len(seen) == 6
    # each of the 6 orders: 10,000 expected, σ ≈ 91; ±500 is over 5σ (a false alarm once in ~10^7 runs)
    assert all(abs(count - draws / 6) < 500 for count in seen.values()), seen


def test_rejection_keeps_a_word_above_the_limit_out() -> None:
    """For bound 3 the largest multiple below 2**32 is 2**32 − 1: the word 2**32 − 1 is drawn again."""
    words = shuffle._Words(4)
    words.words = memoryview(b"\xff\xff\xff\xff" + (5).to_bytes(4, sys.byteorder)).cast("I")
    assert words.below(3) == 5 % 3 and words.next == 2
