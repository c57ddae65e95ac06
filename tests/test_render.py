"""The terminal client's clock text: rounded before it is split, so it never reads 0:60.0."""

from __future__ import annotations

import pytest

from tablehall.render import _mmss


@pytest.mark.parametrize(
    ("ms", "text"),
    [(0, "0:00.0"), (-5, "0:00.0"), (59_940, "0:59.9"), (59_960, "1:00.0"), (61_234, "1:01.2"), (600_000, "10:00.0")],
)
def test_clock_text(ms: float, text: str) -> None:
    assert _mmss(ms) == text
