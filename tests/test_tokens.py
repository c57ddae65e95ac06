"""Tokens handed to players work on a command line: `--token X` must never read X as an option."""

from __future__ import annotations

from gateway.service import new_token, token_sha256


def test_no_token_starts_with_a_dash_and_none_repeats() -> None:
    tokens = [new_token() for _ in range(20_000)]  # about one in 64 random tokens would start with "-"
    assert not [t for t in tokens if t.startswith("-")]
    assert len(set(tokens)) == len(tokens) and all(len(t) == 32 for t in tokens)
    assert len(token_sha256(tokens[0])) == 32
